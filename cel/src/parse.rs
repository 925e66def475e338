//! Parsing: the `cel` crate's parser (cel-go's grammar, so cel-go's syntax errors) with the
//! macros of kube's environment expanded as cel-go expands them.
//!
//! The expansions matter beyond their meaning: run-time cost is counted over the expanded
//! tree, so `all` must become cel-go's comprehension (`@not_strictly_false(__result__)` as
//! the loop condition, `__result__ && p` as the step) for costs to agree. The macros are the
//! standard ones (`has`, `all`, `exists`, `exists_one`, `map`, `filter`), the optional types'
//! `optMap` and `optFlatMap`, and, from kube 1.32, the two-variable comprehensions (`all`,
//! `exists`, `existsOne` with two variables, `transformList`, `transformMap`,
//! `transformMapEntry`). kube has no `cel.bind`.

use std::sync::LazyLock;

use cel::common::ast::{
    CallExpr, ComprehensionExpr, EntryExpr, Expr, IdedExpr, ListExpr, LiteralValue, MapEntryExpr, MapExpr, SelectExpr,
    SourceInfo, operators,
};
use cel::parser::{Macro, MacroExprHelper, ParseError};

use crate::env::Version;

/// The accumulator variable of macro comprehensions (cel-go's `parser.AccumulatorName`).
pub const ACCUMULATOR: &str = "__result__";
/// The iteration variable `optMap` leaves unused.
const UNUSED: &str = "#unused";

/// A parsed expression with where each node is in the source.
pub struct Parsed {
    /// The tree, macros expanded.
    pub expr: IdedExpr,
    /// Node offsets.
    pub source_info: SourceInfo,
}

/// A syntax error, where it is.
#[derive(Clone, Debug)]
pub struct SyntaxError {
    /// 1-based line.
    pub line: usize,
    /// 1-based column.
    pub column: usize,
    /// cel-go's message.
    pub message: String,
}

/// Parses `source` with the macros of `version`.
pub fn parse(source: &str, version: Version) -> Result<Parsed, Vec<SyntaxError>> {
    let env = match version {
        Version::V1_31 => &*ENV_1_31,
        Version::V1_32 => &*ENV_1_32,
    };
    match env.parser().parse_with_source_info(source) {
        Ok((expr, source_info)) => Ok(Parsed { expr, source_info }),
        Err(errors) => Err(errors
            .errors
            .iter()
            .map(|e| SyntaxError {
                line: e.pos.0.max(1) as usize,
                column: e.pos.1.max(1) as usize,
                message: e.msg.clone(),
            })
            .collect()),
    }
}

/// The parser of kube 1.31's environment: standard and optional-types macros.
static ENV_1_31: LazyLock<cel::Env> = LazyLock::new(|| {
    let mut env = cel::Env::default();
    for m in base_macros() {
        env.add_macro(m).expect("macros are distinct");
    }
    env
});

/// The parser of kube 1.32's: with the two-variable comprehensions.
static ENV_1_32: LazyLock<cel::Env> = LazyLock::new(|| {
    let mut env = cel::Env::default();
    for m in base_macros().into_iter().chain(two_variable_macros()) {
        env.add_macro(m).expect("macros are distinct");
    }
    env
});

type Expansion = Result<Option<IdedExpr>, ParseError>;

fn base_macros() -> Vec<Macro> {
    vec![
        Macro::global(operators::HAS, 1, |h, _, args| has(h, args)),
        Macro::receiver(operators::ALL, 2, |h, t, args| quantifier(h, t, args, Quantifier::All)),
        Macro::receiver(operators::EXISTS, 2, |h, t, args| quantifier(h, t, args, Quantifier::Exists)),
        Macro::receiver(operators::EXISTS_ONE, 2, |h, t, args| quantifier(h, t, args, Quantifier::ExistsOne)),
        Macro::receiver(operators::MAP, 2, map),
        Macro::receiver(operators::MAP, 3, map),
        Macro::receiver(operators::FILTER, 2, filter),
        Macro::receiver("optMap", 2, |h, t, args| opt_map(h, t, args, true)),
        Macro::receiver("optFlatMap", 2, |h, t, args| opt_map(h, t, args, false)),
    ]
}

fn two_variable_macros() -> Vec<Macro> {
    vec![
        Macro::receiver(operators::ALL, 3, |h, t, args| quantifier2(h, t, args, Quantifier::All)),
        Macro::receiver(operators::EXISTS, 3, |h, t, args| quantifier2(h, t, args, Quantifier::Exists)),
        Macro::receiver("existsOne", 3, |h, t, args| quantifier2(h, t, args, Quantifier::ExistsOne)),
        Macro::receiver(operators::EXISTS_ONE, 3, |h, t, args| quantifier2(h, t, args, Quantifier::ExistsOne)),
        Macro::receiver("transformList", 3, |h, t, args| transform(h, t, args, Transform::List)),
        Macro::receiver("transformList", 4, |h, t, args| transform(h, t, args, Transform::List)),
        Macro::receiver("transformMap", 3, |h, t, args| transform(h, t, args, Transform::Map)),
        Macro::receiver("transformMap", 4, |h, t, args| transform(h, t, args, Transform::Map)),
        Macro::receiver("transformMapEntry", 3, |h, t, args| transform(h, t, args, Transform::MapEntry)),
        Macro::receiver("transformMapEntry", 4, |h, t, args| transform(h, t, args, Transform::MapEntry)),
    ]
}

fn call(h: &mut MacroExprHelper<'_>, name: &str, args: Vec<IdedExpr>) -> IdedExpr {
    h.next_expr(Expr::Call(CallExpr { func_name: name.to_string(), target: None, args }))
}

fn member(h: &mut MacroExprHelper<'_>, target: IdedExpr, name: &str) -> IdedExpr {
    h.next_expr(Expr::Call(CallExpr { func_name: name.to_string(), target: Some(Box::new(target)), args: Vec::new() }))
}

fn ident(h: &mut MacroExprHelper<'_>, name: &str) -> IdedExpr {
    h.next_expr(Expr::Ident(name.to_string()))
}

fn accu(h: &mut MacroExprHelper<'_>) -> IdedExpr {
    ident(h, ACCUMULATOR)
}

fn literal(h: &mut MacroExprHelper<'_>, v: LiteralValue) -> IdedExpr {
    h.next_expr(Expr::Literal(v))
}

fn boolean(h: &mut MacroExprHelper<'_>, b: bool) -> IdedExpr {
    literal(h, LiteralValue::Boolean(b.into()))
}

fn int(h: &mut MacroExprHelper<'_>, i: i64) -> IdedExpr {
    literal(h, LiteralValue::Int(i.into()))
}

fn list(h: &mut MacroExprHelper<'_>, elements: Vec<IdedExpr>) -> IdedExpr {
    h.next_expr(Expr::List(ListExpr::new(elements)))
}

fn empty_map(h: &mut MacroExprHelper<'_>) -> IdedExpr {
    h.next_expr(Expr::Map(MapExpr { entries: Vec::new() }))
}

/// A comprehension node.
#[allow(clippy::too_many_arguments)]
fn comprehension(
    h: &mut MacroExprHelper<'_>,
    range: IdedExpr,
    iter_var: String,
    iter_var2: Option<String>,
    accu_var: &str,
    init: IdedExpr,
    cond: IdedExpr,
    step: IdedExpr,
    result: IdedExpr,
) -> IdedExpr {
    h.next_expr(Expr::Comprehension(Box::new(ComprehensionExpr {
        iter_range: range,
        iter_var,
        iter_var2,
        accu_var: accu_var.to_string(),
        accu_init: init,
        loop_cond: cond,
        loop_step: step,
        result,
    })))
}

/// The name an argument spells, or the macro's error.
fn simple_name(h: &MacroExprHelper<'_>, e: &IdedExpr, message: &str) -> Result<String, ParseError> {
    match &e.expr {
        Expr::Ident(name) => Ok(name.clone()),
        _ => Err(h.new_error(e.id, message)),
    }
}

fn has(h: &mut MacroExprHelper<'_>, args: &mut Vec<IdedExpr>) -> Expansion {
    let arg = &args[0];
    let Expr::Select(s) = &arg.expr else {
        return Err(h.new_error(arg.id, "invalid argument to has() macro"));
    };
    let select = SelectExpr { operand: s.operand.clone(), field: s.field.clone(), test: true };
    args.clear();
    Ok(Some(h.next_expr(Expr::Select(select))))
}

#[derive(Clone, Copy)]
enum Quantifier {
    All,
    Exists,
    ExistsOne,
}

/// `init`, `condition`, `step` and `result` of a quantifier over `predicate`.
fn quantifier_parts(
    h: &mut MacroExprHelper<'_>,
    kind: Quantifier,
    predicate: IdedExpr,
) -> (IdedExpr, IdedExpr, IdedExpr, IdedExpr) {
    match kind {
        Quantifier::All => {
            let init = boolean(h, true);
            let a = accu(h);
            let cond = call(h, operators::NOT_STRICTLY_FALSE, vec![a]);
            let a = accu(h);
            let step = call(h, operators::LOGICAL_AND, vec![a, predicate]);
            (init, cond, step, accu(h))
        }
        Quantifier::Exists => {
            let init = boolean(h, false);
            let a = accu(h);
            let not = call(h, operators::LOGICAL_NOT, vec![a]);
            let cond = call(h, operators::NOT_STRICTLY_FALSE, vec![not]);
            let a = accu(h);
            let step = call(h, operators::LOGICAL_OR, vec![a, predicate]);
            (init, cond, step, accu(h))
        }
        Quantifier::ExistsOne => {
            let init = int(h, 0);
            let cond = boolean(h, true);
            let (a, one) = (accu(h), int(h, 1));
            let add = call(h, operators::ADD, vec![a, one]);
            let a = accu(h);
            let step = call(h, operators::CONDITIONAL, vec![predicate, add, a]);
            let (a, one) = (accu(h), int(h, 1));
            let result = call(h, operators::EQUALS, vec![a, one]);
            (init, cond, step, result)
        }
    }
}

fn quantifier(
    h: &mut MacroExprHelper<'_>,
    target: &mut Option<IdedExpr>,
    args: &mut Vec<IdedExpr>,
    kind: Quantifier,
) -> Expansion {
    let var = simple_name(h, &args[0], "argument must be a simple name")?;
    let predicate = args.remove(1);
    args.clear();
    let (init, cond, step, result) = quantifier_parts(h, kind, predicate);
    let range = target.take().expect("a receiver macro has a target");
    Ok(Some(comprehension(h, range, var, None, ACCUMULATOR, init, cond, step, result)))
}

/// The two iteration variables of a two-variable comprehension, checked as cel-go checks
/// them.
fn iter_vars(h: &MacroExprHelper<'_>, args: &[IdedExpr]) -> Result<(String, String), ParseError> {
    let v1 = simple_name(h, &args[0], "argument must be a simple name")?;
    let v2 = simple_name(h, &args[1], "argument must be a simple name")?;
    if v1 == v2 {
        return Err(h.new_error(args[1].id, format!("duplicate variable name: {v1}")));
    }
    if v1 == ACCUMULATOR {
        return Err(h.new_error(args[0].id, "iteration variable overwrites accumulator variable"));
    }
    if v2 == ACCUMULATOR {
        return Err(h.new_error(args[1].id, "iteration variable overwrites accumulator variable"));
    }
    Ok((v1, v2))
}

fn quantifier2(
    h: &mut MacroExprHelper<'_>,
    target: &mut Option<IdedExpr>,
    args: &mut Vec<IdedExpr>,
    kind: Quantifier,
) -> Expansion {
    let (v1, v2) = iter_vars(h, args)?;
    let predicate = args.remove(2);
    args.clear();
    let (init, cond, step, result) = quantifier_parts(h, kind, predicate);
    let range = target.take().expect("a receiver macro has a target");
    Ok(Some(comprehension(h, range, v1, Some(v2), ACCUMULATOR, init, cond, step, result)))
}

fn map(h: &mut MacroExprHelper<'_>, target: &mut Option<IdedExpr>, args: &mut Vec<IdedExpr>) -> Expansion {
    let var = simple_name(h, &args[0], "argument is not an identifier")?;
    let transform = args.pop().expect("a transform");
    let filter = (args.len() == 2).then(|| args.pop().expect("a filter"));
    args.clear();
    let init = list(h, Vec::new());
    let cond = boolean(h, true);
    let (a, l) = (accu(h), list(h, vec![transform]));
    let mut step = call(h, operators::ADD, vec![a, l]);
    if let Some(filter) = filter {
        let a = accu(h);
        step = call(h, operators::CONDITIONAL, vec![filter, step, a]);
    }
    let result = accu(h);
    let range = target.take().expect("a receiver macro has a target");
    Ok(Some(comprehension(h, range, var, None, ACCUMULATOR, init, cond, step, result)))
}

fn filter(h: &mut MacroExprHelper<'_>, target: &mut Option<IdedExpr>, args: &mut Vec<IdedExpr>) -> Expansion {
    let var = simple_name(h, &args[0], "argument is not an identifier")?;
    let predicate = args.pop().expect("a predicate");
    let element = args.pop().expect("the variable");
    args.clear();
    let init = list(h, Vec::new());
    let cond = boolean(h, true);
    let (a, l) = (accu(h), list(h, vec![element]));
    let add = call(h, operators::ADD, vec![a, l]);
    let a = accu(h);
    let step = call(h, operators::CONDITIONAL, vec![predicate, add, a]);
    let result = accu(h);
    let range = target.take().expect("a receiver macro has a target");
    Ok(Some(comprehension(h, range, var, None, ACCUMULATOR, init, cond, step, result)))
}

#[derive(Clone, Copy)]
enum Transform {
    List,
    Map,
    MapEntry,
}

fn transform(
    h: &mut MacroExprHelper<'_>,
    target: &mut Option<IdedExpr>,
    args: &mut Vec<IdedExpr>,
    kind: Transform,
) -> Expansion {
    let (v1, v2) = iter_vars(h, args)?;
    let transform = args.pop().expect("a transform");
    let filter = (args.len() == 3).then(|| args.pop().expect("a filter"));
    args.clear();
    let a = accu(h);
    let mut step = match kind {
        Transform::List => {
            let l = list(h, vec![transform]);
            call(h, operators::ADD, vec![a, l])
        }
        Transform::Map => {
            let key = ident(h, &v1);
            call(h, "cel.@mapInsert", vec![a, key, transform])
        }
        Transform::MapEntry => call(h, "cel.@mapInsert", vec![a, transform]),
    };
    if let Some(filter) = filter {
        let a = accu(h);
        step = call(h, operators::CONDITIONAL, vec![filter, step, a]);
    }
    let init = match kind {
        Transform::List => list(h, Vec::new()),
        Transform::Map | Transform::MapEntry => empty_map(h),
    };
    let cond = boolean(h, true);
    let result = accu(h);
    let range = target.take().expect("a receiver macro has a target");
    Ok(Some(comprehension(h, range, v1, Some(v2), ACCUMULATOR, init, cond, step, result)))
}

/// A copy of `e` with fresh ids (cel-go's `Copy`), for expressions a macro uses twice.
fn copy(h: &mut MacroExprHelper<'_>, e: &IdedExpr) -> IdedExpr {
    let expr = match &e.expr {
        Expr::Call(c) => Expr::Call(CallExpr {
            func_name: c.func_name.clone(),
            target: c.target.as_ref().map(|t| Box::new(copy(h, t))),
            args: c.args.iter().map(|a| copy(h, a)).collect(),
        }),
        Expr::Select(s) => {
            Expr::Select(SelectExpr { operand: Box::new(copy(h, &s.operand)), field: s.field.clone(), test: s.test })
        }
        Expr::List(l) => Expr::List(ListExpr {
            elements: l.elements.iter().map(|x| copy(h, x)).collect(),
            optional_indices: l.optional_indices.clone(),
        }),
        Expr::Map(m) => Expr::Map(MapExpr {
            entries: m
                .entries
                .iter()
                .map(|entry| {
                    let expr = match &entry.expr {
                        EntryExpr::MapEntry(me) => EntryExpr::MapEntry(MapEntryExpr {
                            key: copy(h, &me.key),
                            value: copy(h, &me.value),
                            optional: me.optional,
                        }),
                        other => other.clone(),
                    };
                    cel::common::ast::IdedEntryExpr { id: entry.id, expr }
                })
                .collect(),
        }),
        Expr::Comprehension(c) => Expr::Comprehension(Box::new(ComprehensionExpr {
            iter_range: copy(h, &c.iter_range),
            iter_var: c.iter_var.clone(),
            iter_var2: c.iter_var2.clone(),
            accu_var: c.accu_var.clone(),
            accu_init: copy(h, &c.accu_init),
            loop_cond: copy(h, &c.loop_cond),
            loop_step: copy(h, &c.loop_step),
            result: copy(h, &c.result),
        })),
        other => other.clone(),
    };
    h.next_expr(expr)
}

/// `optMap` (`wrap`) and `optFlatMap`: `t.hasValue() ? [optional.of](v binding) : optional.none()`.
fn opt_map(
    h: &mut MacroExprHelper<'_>,
    target: &mut Option<IdedExpr>,
    args: &mut Vec<IdedExpr>,
    wrap: bool,
) -> Expansion {
    let name = if wrap { "optMap" } else { "optFlatMap" };
    let var = simple_name(h, &args[0], &format!("{name}() variable name must be a simple identifier"))?;
    let body = args.pop().expect("an expression");
    args.clear();
    let target = target.take().expect("a receiver macro has a target");
    let copied = copy(h, &target);
    let has_value = member(h, target, "hasValue");
    let range = list(h, Vec::new());
    let value = member(h, copied, "value");
    let cond = boolean(h, false);
    let step = ident(h, &var);
    let mut mapped = comprehension(h, range, UNUSED.to_string(), None, &var, value, cond, step, body);
    if wrap {
        mapped = call(h, "optional.of", vec![mapped]);
    }
    let none = call(h, "optional.none", Vec::new());
    Ok(Some(call(h, operators::CONDITIONAL, vec![has_value, mapped, none])))
}

/// The names of the variables an expression reads at top level.
pub fn root_idents(e: &IdedExpr, out: &mut Vec<String>) {
    walk(e, &mut |e| {
        if let Expr::Ident(name) = &e.expr
            && !out.contains(name)
        {
            out.push(name.clone());
        }
    });
}

/// Calls `f` on every node of `e`, parents first.
pub fn walk(e: &IdedExpr, f: &mut dyn FnMut(&IdedExpr)) {
    f(e);
    match &e.expr {
        Expr::Select(s) => walk(&s.operand, f),
        Expr::Call(c) => {
            if let Some(t) = &c.target {
                walk(t, f);
            }
            c.args.iter().for_each(|a| walk(a, f));
        }
        Expr::Comprehension(c) => {
            for part in [&c.iter_range, &c.accu_init, &c.loop_cond, &c.loop_step, &c.result] {
                walk(part, f);
            }
        }
        Expr::List(l) => l.elements.iter().for_each(|x| walk(x, f)),
        Expr::Map(m) => m.entries.iter().for_each(|entry| match &entry.expr {
            EntryExpr::MapEntry(me) => {
                walk(&me.key, f);
                walk(&me.value, f);
            }
            EntryExpr::StructField(sf) => walk(&sf.value, f),
        }),
        Expr::Struct(s) => s.entries.iter().for_each(|entry| {
            if let EntryExpr::StructField(sf) = &entry.expr {
                walk(&sf.value, f);
            }
        }),
        Expr::Ident(_) | Expr::Literal(_) | Expr::Unspecified => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(source: &str, version: Version) -> String {
        match parse(source, version) {
            Ok(p) => format!("{:?}", p.expr.expr).chars().take(40).collect(),
            Err(e) => {
                e.iter().map(|e| format!("{}:{}: {}", e.line, e.column, e.message)).collect::<Vec<_>>().join("; ")
            }
        }
    }

    #[test]
    fn quantifiers_expand_to_cel_go_comprehensions() {
        let p = parse("[1].all(x, x > 0)", Version::V1_31).unwrap();
        let Expr::Comprehension(c) = &p.expr.expr else { panic!("{:?}", p.expr) };
        assert_eq!((c.iter_var.as_str(), c.accu_var.as_str()), ("x", ACCUMULATOR));
        let Expr::Call(cond) = &c.loop_cond.expr else { panic!() };
        assert_eq!(cond.func_name, operators::NOT_STRICTLY_FALSE);
        assert!(shape("[1].all(1, true)", Version::V1_31).contains("argument must be a simple name"));
        assert!(shape("[1].map(1, 2)", Version::V1_31).contains("argument is not an identifier"));
    }

    #[test]
    fn two_variable_comprehensions_are_1_32s() {
        assert!(shape("[1].all(i, v, v > i)", Version::V1_32).starts_with("Comprehension"));
        assert!(shape("[1].all(i, v, v > i)", Version::V1_31).starts_with("Call"), "a plain call in 1.31");
        assert!(shape("[1].all(i, i, true)", Version::V1_32).contains("duplicate variable name: i"));
        assert!(shape("cel.bind(x, 1, x)", Version::V1_32).starts_with("Call"), "kube has no bindings");
    }

    #[test]
    fn has_needs_a_selection() {
        assert!(shape("has(a)", Version::V1_31).contains("invalid argument to has() macro"));
        assert!(shape("has(a.b)", Version::V1_31).starts_with("Select"));
    }
}
