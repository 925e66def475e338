//! The evaluation plan: a checked expression turned into the steps cel-go's planner makes of
//! it, because cel-go counts run-time cost per step.
//!
//! cel-go evaluates variables, field selections and indexes as *attributes*: `self.spec.x` is
//! one step that resolves `self` and applies the qualifiers `spec` and `x`, costing one for the
//! attribute and one per qualifier applied. An attribute used as an index (`a[i]`), as a
//! branch of a conditional, or under `has()` is resolved without being counted as a step of
//! its own; its qualifiers still are. Calls cost what [`crate::cost::runtime`] says. `&&`,
//! `||`, `?:`, comprehensions, `optional.or`/`orValue` and constants cost nothing themselves.
//! List and map literals of constants, and conversions of constants (`duration('1h')`), are
//! computed once here, as cel-go's optimizer does, and cost nothing at run time; so does `x in
//! [constant list]`.

use std::sync::Arc;

use cel::common::ast::{CallExpr, EntryExpr, Expr, IdedExpr, LiteralValue, operators};
use regex::Regex;

use crate::check::{Checked, Reference};
use crate::error::EvalError;
use crate::functions;
use crate::stdlib;
use crate::value::{Key, List, Map, TypeValue, Value};

/// A step of evaluation.
#[derive(Debug)]
pub enum Node {
    /// A constant.
    Const(Value),
    /// An attribute evaluated as a value: one step.
    Attr(Box<Attr>),
    /// `has(a.b)`: the attribute resolved with its last qualifier a presence test.
    TestOnly(Box<Attr>),
    /// `a && b`.
    And(Box<Node>, Box<Node>),
    /// `a || b`.
    Or(Box<Node>, Box<Node>),
    /// `a == b` (`negate`: `a != b`).
    Equals(Box<Node>, Box<Node>, bool),
    /// A function call.
    Call(Box<Call>),
    /// `x in [constants]`, optimized into a set lookup that costs nothing.
    SetMembership(Box<Node>, Vec<Value>),
    /// `a.or(b)`: `b` only if `a` is none.
    OptionalOr(Box<Node>, Box<Node>),
    /// `a.orValue(b)`.
    OptionalOrValue(Box<Node>, Box<Node>),
    /// A list literal; `optionals` marks `[?x]` elements.
    List(Vec<Node>, Vec<bool>),
    /// A map literal: key, value, and whether the entry is optional (`{?k: v}`).
    Map(Vec<(Node, Node, bool)>),
    /// A comprehension.
    Fold(Box<Fold>),
    /// `__result__ + [x]` in a comprehension whose accumulator is a fresh list: appends in
    /// place, costing what the call would.
    AccuAppend(Box<Node>),
}

/// An attribute: a base and qualifiers applied in order.
#[derive(Debug)]
pub struct Attr {
    /// Where the value comes from.
    pub base: Base,
    /// Field selections and indexes.
    pub quals: Vec<Qual>,
}

/// The base of an attribute.
#[derive(Debug)]
pub enum Base {
    /// A variable.
    Var(Arc<str>),
    /// A computed value (`f(x).y`).
    Relative(Node),
    /// `c ? a : b`; qualifiers go to both branches.
    Cond(Node, Box<Attr>, Box<Attr>),
}

/// A qualifier of an attribute.
#[derive(Debug)]
pub struct Qual {
    /// What it selects by.
    pub kind: QualKind,
    /// `a.?b`, `a[?b]`.
    pub optional: bool,
    /// The last qualifier of `has()`: only tests presence.
    pub presence_only: bool,
}

/// What a qualifier selects by.
#[derive(Debug)]
pub enum QualKind {
    /// A constant: a field name or a literal index.
    Const(Value, Option<Key>),
    /// A value computed by resolving an attribute (`a[i]`, `a[i + 1]`).
    Attr(Box<Attr>),
}

/// A function call.
#[derive(Debug)]
pub struct Call {
    /// The function's name.
    pub function: Arc<str>,
    /// The overload, when the checker resolved exactly one.
    pub overload: Option<&'static str>,
    /// The arguments, the receiver first.
    pub args: Vec<Node>,
    /// Whether arguments after an error are left unevaluated (cel-go's variadic calls), in
    /// which case the call itself is not charged.
    pub early_exit: bool,
    /// A constant regular expression compiled once (`matches`, `find`, `findAll`).
    pub regex: Option<Regex>,
}

/// A comprehension.
#[derive(Debug)]
pub struct Fold {
    /// The first iteration variable.
    pub iter_var: Arc<str>,
    /// The second one (two-variable comprehensions).
    pub iter_var2: Option<Arc<str>>,
    /// The accumulator.
    pub accu_var: Arc<str>,
    /// The range.
    pub range: Node,
    /// The accumulator's initial value (evaluated when first read).
    pub init: Node,
    /// Iterate while true.
    pub cond: Node,
    /// The accumulator's next value.
    pub step: Node,
    /// The result.
    pub result: Node,
}

/// Functions cel-go computes at plan time when their argument is a constant.
const CONVERSIONS: [&str; 10] =
    ["bool", "bytes", "double", "duration", "dyn", "int", "string", "timestamp", "type", "uint"];

/// Plans `expr`, checked as `checked`. Fails as cel-go's program creation fails (a conversion
/// or a regular expression that cannot work): `program instantiation failed: ...`.
pub fn plan(expr: &IdedExpr, checked: &Checked, optimize: bool) -> Result<Node, String> {
    Planner { checked, optimize, accumulators: Vec::new() }.plan(expr)
}

struct Planner<'a> {
    checked: &'a Checked,
    /// cel-go's `OptOptimize`, which kube's environment sets: constants computed once, `in`
    /// over a constant list a set lookup.
    optimize: bool,
    /// Comprehension accumulators in scope whose initial value is an empty list.
    accumulators: Vec<(String, bool)>,
}

/// The value of a literal.
pub fn literal(l: &LiteralValue) -> Value {
    match l {
        LiteralValue::Boolean(b) => Value::Bool(*b.inner()),
        LiteralValue::Bytes(b) => Value::Bytes(Arc::from(b.inner())),
        LiteralValue::Double(d) => Value::Double(*d.inner()),
        LiteralValue::Int(i) => Value::Int(*i.inner()),
        LiteralValue::Null => Value::Null,
        LiteralValue::String(s) => Value::string(s.inner()),
        LiteralValue::UInt(u) => Value::Uint(*u.inner()),
    }
}

impl Planner<'_> {
    fn plan(&mut self, e: &IdedExpr) -> Result<Node, String> {
        match &e.expr {
            Expr::Literal(l) => Ok(Node::Const(literal(l))),
            Expr::Ident(name) => Ok(self.ident(e, name)),
            Expr::Select(s) => {
                match self.checked.references.get(&e.id) {
                    Some(Reference::Variable(name)) => {
                        return Ok(Node::Attr(Box::new(Attr {
                            base: Base::Var(name.as_str().into()),
                            quals: Vec::new(),
                        })));
                    }
                    Some(Reference::TypeName(name)) => return Ok(Node::Const(Value::Type(TypeValue::named(name)))),
                    _ => {}
                }
                let operand = self.plan(&s.operand)?;
                let field = Value::string(s.field.as_str());
                let qual = Qual {
                    kind: QualKind::Const(field.clone(), Key::from_value(&field)),
                    optional: false,
                    presence_only: s.test,
                };
                let attr = add_qualifier(operand, qual);
                Ok(if s.test { Node::TestOnly(attr) } else { Node::Attr(attr) })
            }
            Expr::Call(c) => self.call(e, c),
            Expr::List(l) => {
                let elems = l.elements.iter().map(|x| self.plan(x)).collect::<Result<Vec<_>, _>>()?;
                let optionals: Vec<bool> = (0..elems.len()).map(|i| l.optional_indices.contains(&i)).collect();
                if self.optimize && !optionals.iter().any(|o| *o) && elems.iter().all(|n| matches!(n, Node::Const(_))) {
                    let values = elems.into_iter().map(|n| match n {
                        Node::Const(v) => v,
                        _ => unreachable!("every element is constant"),
                    });
                    return Ok(Node::Const(Value::List(List::new(values.collect()))));
                }
                Ok(Node::List(elems, optionals))
            }
            Expr::Map(m) => {
                let mut entries = Vec::new();
                for entry in &m.entries {
                    if let EntryExpr::MapEntry(me) = &entry.expr {
                        entries.push((self.plan(&me.key)?, self.plan(&me.value)?, me.optional));
                    }
                }
                let constant = self.optimize
                    && entries.iter().all(|(k, v, o)| !o && matches!(k, Node::Const(_)) && matches!(v, Node::Const(_)));
                if constant {
                    let mut out = std::collections::BTreeMap::new();
                    for (k, v, _) in entries {
                        if let (Node::Const(k), Node::Const(v)) = (k, v) {
                            let Some(key) = Key::from_value(&k) else {
                                return Err(format!("unsupported key type: {}", k.type_name()));
                            };
                            out.insert(key, v);
                        }
                    }
                    return Ok(Node::Const(Value::Map(Map::new(out))));
                }
                Ok(Node::Map(entries))
            }
            Expr::Comprehension(c) => {
                let range = self.plan(&c.iter_range)?;
                let init = self.plan(&c.accu_init)?;
                let fresh_list = matches!(&init, Node::Const(Value::List(l)) if l.is_empty());
                self.accumulators.push((c.accu_var.clone(), fresh_list));
                let cond = self.plan(&c.loop_cond)?;
                let step = self.plan(&c.loop_step)?;
                let result = self.plan(&c.result)?;
                self.accumulators.pop();
                Ok(Node::Fold(Box::new(Fold {
                    iter_var: c.iter_var.as_str().into(),
                    iter_var2: c.iter_var2.as_deref().map(Arc::from),
                    accu_var: c.accu_var.as_str().into(),
                    range,
                    init,
                    cond,
                    step,
                    result,
                })))
            }
            Expr::Struct(s) => Err(format!("unknown type: {}", s.type_name)),
            Expr::Unspecified => Err("unsupported expr".to_string()),
        }
    }

    fn ident(&self, e: &IdedExpr, name: &str) -> Node {
        match self.checked.references.get(&e.id) {
            Some(Reference::TypeName(t)) => Node::Const(Value::Type(TypeValue::named(t))),
            Some(Reference::Variable(v)) => {
                Node::Attr(Box::new(Attr { base: Base::Var(v.as_str().into()), quals: Vec::new() }))
            }
            _ => Node::Attr(Box::new(Attr { base: Base::Var(name.into()), quals: Vec::new() })),
        }
    }

    fn call(&mut self, e: &IdedExpr, c: &CallExpr) -> Result<Node, String> {
        let (name, overloads): (String, Vec<&'static str>) = match self.checked.references.get(&e.id) {
            Some(Reference::Function { name, overloads }) => (name.clone(), overloads.clone()),
            _ => (c.func_name.clone(), Vec::new()),
        };
        // A namespaced function (`optional.of(x)`) is called without its "receiver".
        let qualified = name != c.func_name;
        let mut args = Vec::with_capacity(c.args.len() + 1);
        if let Some(t) = &c.target
            && !qualified
        {
            args.push(self.plan(t)?);
        }
        for a in &c.args {
            args.push(self.plan(a)?);
        }
        let overload = if overloads.len() == 1 { Some(overloads[0]) } else { None };
        fn two(args: &mut Vec<Node>) -> (Box<Node>, Box<Node>) {
            let b = args.pop().expect("two arguments");
            let a = args.pop().expect("two arguments");
            (Box::new(a), Box::new(b))
        }
        match name.as_str() {
            operators::LOGICAL_AND => {
                let (a, b) = two(&mut args);
                return Ok(Node::And(a, b));
            }
            operators::LOGICAL_OR => {
                let (a, b) = two(&mut args);
                return Ok(Node::Or(a, b));
            }
            operators::EQUALS | operators::NOT_EQUALS => {
                let (a, b) = two(&mut args);
                return Ok(Node::Equals(a, b, name == operators::NOT_EQUALS));
            }
            operators::CONDITIONAL => {
                let f = args.pop().expect("three arguments");
                let t = args.pop().expect("three arguments");
                let cond = args.pop().expect("three arguments");
                return Ok(Node::Attr(Box::new(Attr {
                    base: Base::Cond(cond, Box::new(branch(t)), Box::new(branch(f))),
                    quals: Vec::new(),
                })));
            }
            operators::INDEX | operators::OPT_INDEX | operators::OPT_SELECT => {
                let (operand, index) = two(&mut args);
                let optional = name != operators::INDEX;
                let kind = match *index {
                    Node::Const(v) => {
                        let key = Key::from_value(&v);
                        QualKind::Const(v, key)
                    }
                    Node::Attr(attr) => QualKind::Attr(attr),
                    other => QualKind::Attr(Box::new(Attr { base: Base::Relative(other), quals: Vec::new() })),
                };
                let attr = add_qualifier(*operand, Qual { kind, optional, presence_only: false });
                return Ok(Node::Attr(attr));
            }
            "or" | "orValue"
                if args.len() == 2
                    && overload.is_none_or(|o| o == "optional_or_optional" || o == "optional_orValue_value") =>
            {
                let (a, b) = two(&mut args);
                return Ok(if name == "or" { Node::OptionalOr(a, b) } else { Node::OptionalOrValue(a, b) });
            }
            _ => {}
        }
        if self.optimize
            && CONVERSIONS.contains(&name.as_str())
            && args.len() == 1
            && let Node::Const(v) = &args[0]
        {
            return match functions::call(&name, overload, std::slice::from_ref(v), None) {
                Ok(v) => Ok(Node::Const(v)),
                Err(EvalError::NoSuchOverload) => Err("no such overload".to_string()),
                Err(e) => Err(e.to_string()),
            };
        }
        if self.optimize
            && name == operators::IN
            && overload == Some("in_list")
            && let Some(Node::Const(Value::List(l))) = args.get(1)
        {
            if l.is_empty() {
                return Ok(Node::Const(Value::Bool(false)));
            }
            let primitive = l.items.iter().all(|v| {
                matches!(v, Value::Bool(_) | Value::Double(_) | Value::Int(_) | Value::String(_) | Value::Uint(_))
            });
            if primitive {
                let set = l.items.to_vec();
                let arg = args.swap_remove(0);
                return Ok(Node::SetMembership(Box::new(arg), set));
            }
        }
        if name == operators::ADD
            && overload == Some("add_list")
            && let [Node::Attr(a), Node::List(elems, optionals)] = &args[..]
            && elems.len() == 1
            && !optionals[0]
            && a.quals.is_empty()
            && let Base::Var(v) = &a.base
            && self.accumulators.last().is_some_and(|(accu, fresh)| *fresh && accu.as_str() == &**v)
        {
            let Some(Node::List(mut elems, _)) = args.pop() else { unreachable!("matched above") };
            return Ok(Node::AccuAppend(Box::new(elems.remove(0))));
        }
        // Constant patterns are compiled once, as cel-go's regex optimizations do; those
        // calls become variadic.
        let mut regex = None;
        let mut early_exit = args.len() >= 3 || overload == Some("string_format");
        if self.optimize
            && matches!(name.as_str(), "matches" | "find" | "findAll")
            && let Some(Node::Const(Value::String(p))) = args.get(1)
        {
            regex = Some(stdlib::regex::compile(p).map_err(|e| e.to_string())?);
            early_exit = true;
        }
        Ok(Node::Call(Box::new(Call { function: name.as_str().into(), overload, args, early_exit, regex })))
    }
}

/// A conditional's branch as an attribute (resolved, not counted as a step).
fn branch(n: Node) -> Attr {
    match n {
        Node::Attr(a) => *a,
        other => Attr { base: Base::Relative(other), quals: Vec::new() },
    }
}

/// Adds `qual` to the attribute `operand` evaluates, wrapping a computed operand.
fn add_qualifier(operand: Node, qual: Qual) -> Box<Attr> {
    let mut attr = match operand {
        Node::Attr(a) => a,
        other => Box::new(Attr { base: Base::Relative(other), quals: Vec::new() }),
    };
    push_qualifier(&mut attr, qual);
    attr
}

/// Appends `qual`, to both branches of a conditional.
fn push_qualifier(attr: &mut Attr, qual: Qual) {
    if let Base::Cond(_, t, f) = &mut attr.base {
        let copy = qual.duplicate();
        push_qualifier(t, qual);
        push_qualifier(f, copy);
        return;
    }
    attr.quals.push(qual);
}

impl Qual {
    /// A copy for the other branch of a conditional. Only constant qualifiers and attributes
    /// built from them can occur twice; anything else is planned again by the caller's tree,
    /// so a computed qualifier is shared by evaluation order, not by copying.
    fn duplicate(&self) -> Qual {
        Qual { kind: self.kind.duplicate(), optional: self.optional, presence_only: self.presence_only }
    }
}

impl QualKind {
    fn duplicate(&self) -> QualKind {
        match self {
            QualKind::Const(v, k) => QualKind::Const(v.clone(), k.clone()),
            QualKind::Attr(a) => QualKind::Attr(Box::new(a.duplicate())),
        }
    }
}

impl Attr {
    fn duplicate(&self) -> Attr {
        Attr { base: self.base.duplicate(), quals: self.quals.iter().map(Qual::duplicate).collect() }
    }
}

impl Base {
    fn duplicate(&self) -> Base {
        match self {
            Base::Var(v) => Base::Var(v.clone()),
            Base::Relative(n) => Base::Relative(n.duplicate()),
            Base::Cond(c, t, f) => Base::Cond(c.duplicate(), Box::new(t.duplicate()), Box::new(f.duplicate())),
        }
    }
}

impl Node {
    /// A deep copy (conditional branches each get a qualifier that is computed).
    fn duplicate(&self) -> Node {
        match self {
            Node::Const(v) => Node::Const(v.clone()),
            Node::Attr(a) => Node::Attr(Box::new(a.duplicate())),
            Node::TestOnly(a) => Node::TestOnly(Box::new(a.duplicate())),
            Node::And(a, b) => Node::And(Box::new(a.duplicate()), Box::new(b.duplicate())),
            Node::Or(a, b) => Node::Or(Box::new(a.duplicate()), Box::new(b.duplicate())),
            Node::Equals(a, b, n) => Node::Equals(Box::new(a.duplicate()), Box::new(b.duplicate()), *n),
            Node::Call(c) => Node::Call(Box::new(Call {
                function: c.function.clone(),
                overload: c.overload,
                args: c.args.iter().map(Node::duplicate).collect(),
                early_exit: c.early_exit,
                regex: c.regex.clone(),
            })),
            Node::SetMembership(a, s) => Node::SetMembership(Box::new(a.duplicate()), s.clone()),
            Node::OptionalOr(a, b) => Node::OptionalOr(Box::new(a.duplicate()), Box::new(b.duplicate())),
            Node::OptionalOrValue(a, b) => Node::OptionalOrValue(Box::new(a.duplicate()), Box::new(b.duplicate())),
            Node::List(e, o) => Node::List(e.iter().map(Node::duplicate).collect(), o.clone()),
            Node::Map(m) => Node::Map(m.iter().map(|(k, v, o)| (k.duplicate(), v.duplicate(), *o)).collect()),
            Node::Fold(f) => Node::Fold(Box::new(Fold {
                iter_var: f.iter_var.clone(),
                iter_var2: f.iter_var2.clone(),
                accu_var: f.accu_var.clone(),
                range: f.range.duplicate(),
                init: f.init.duplicate(),
                cond: f.cond.duplicate(),
                step: f.step.duplicate(),
                result: f.result.duplicate(),
            })),
            Node::AccuAppend(n) => Node::AccuAppend(Box::new(n.duplicate())),
        }
    }
}
