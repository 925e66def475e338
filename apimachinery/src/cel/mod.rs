//! CEL for the API: webhook `matchConditions` and ValidatingAdmissionPolicy expressions, checked
//! when their objects are validated and evaluated by admission; CustomResourceDefinitions'
//! `x-kubernetes-validations` rules ([`rules`]), checked and costed when a CRD is written and
//! evaluated on its objects' writes.
//!
//! Expressions are parsed and evaluated by the `cel` crate (a maintained CEL parser and
//! interpreter) in one environment: the standard library with `matches` (RE2-compatible
//! regexes), and the strings, lists and math extensions (cel-go's `ext.Strings`, `ext.Lists`
//! and `ext.Math`). kube's own libraries (quantity, url, ip/cidr, the authorizer, kube's list
//! functions) are not in it.
//!
//! The crate has no type checker, and kube refuses at create what cel-go's checker refuses, so
//! [`check`] is a small one over the crate's syntax tree: it knows the declared variables and
//! their types, the functions of [`ENV`] with their signatures, and schema-typed objects, and
//! reports in cel-go's words (`undeclared reference to 'x' (in container '')`, `undefined field
//! 'x'`, `found no matching overload for '_+_' applied to '(int, string)'`).
//!
//! Values are JSON (`serde_json::Value`) in both directions, as admission holds objects; a
//! [`Val`] is a value converted once for several evaluations, typed by a schema declaration
//! where it has one ([`decl`]).
//!
//! # Layout
//! - this module: [`Program`] (compile, evaluate) and cel-go's report format ([`Issue`]).
//! - [`types`]: the checker's types: CEL's, declared objects, objects typed on selection (a
//!   schema node: [`crate::schema::cel_type`]).
//! - `functions`: the signatures of the environment's functions.
//! - [`check`]: the checker.

pub mod check;
pub mod cost;
pub mod decl;
mod functions;
pub mod rules;
pub mod types;

use std::collections::BTreeSet;
use std::sync::{Arc, LazyLock};

use cel::common::ast::{Expr, IdedExpr};
use cel::{Context, Env};
use serde_json::Value;

pub use check::{Declarations, check};
pub use decl::DeclType;
pub use types::Type;

/// The one environment every expression compiles and runs in.
static ENV: LazyLock<Arc<Env>> = LazyLock::new(|| {
    let mut env = Env::stdlib();
    // The extensions register only new overloads on a fresh standard environment.
    let _ = env.add_extension(cel::extensions::strings);
    let _ = env.add_extension(cel::extensions::lists);
    let _ = env.add_extension(cel::extensions::math);
    Arc::new(env)
});

/// Something wrong with an expression, where it is: a syntax error or a checker's finding.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Issue {
    /// 1-based line.
    pub line: usize,
    /// 1-based column, in characters.
    pub column: usize,
    /// What is wrong (`undefined field 'foo'`).
    pub message: String,
}

impl Issue {
    /// An issue at character `offset` of `source`.
    pub fn at(source: &str, offset: usize, message: impl Into<String>) -> Issue {
        let mut line = 1;
        let mut column = 1;
        for c in source.chars().take(offset) {
            if c == '\n' {
                line += 1;
                column = 1;
            } else {
                column += 1;
            }
        }
        Issue { line, column, message: message.into() }
    }
}

/// cel-go's `Issues.String()`: each issue as `ERROR: <input>:line:col: message` with the line
/// and a caret under the column, sorted by position, one after another.
pub fn format_issues(source: &str, issues: &[Issue]) -> String {
    let mut sorted: Vec<&Issue> = issues.iter().collect();
    sorted.sort_by_key(|i| (i.line, i.column));
    let lines: Vec<&str> = source.split('\n').collect();
    sorted
        .iter()
        .map(|i| {
            let mut out = format!("ERROR: <input>:{}:{}: {}", i.line, i.column, i.message);
            if let Some(snippet) = lines.get(i.line - 1) {
                out.push_str(&format!("\n | {snippet}\n | {}^", ".".repeat(i.column.saturating_sub(1))));
            }
            out
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// A compiled expression.
pub struct Program {
    program: cel::Program,
    source: String,
}

impl std::fmt::Debug for Program {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Program({:?})", self.source)
    }
}

impl Program {
    /// Parses `source`; the error is kube's: `compilation failed: ERROR: <input>:1:3: Syntax
    /// error: ...` with cel-go's snippet and caret.
    pub fn compile(source: &str) -> Result<Program, String> {
        if source.trim().is_empty() {
            return Err("compilation failed: expression is empty".into());
        }
        Program::parse(source).map_err(|issues| format!("compilation failed: {issues}"))
    }

    /// Parses `source`; the error is cel-go's report of its issues, for callers that word the
    /// failure their own way (kube's `messageExpression compilation failed: ...`).
    pub fn parse(source: &str) -> Result<Program, String> {
        match ENV.compile(source) {
            Ok(program) => Ok(Program { program, source: source.to_string() }),
            Err(errors) => {
                let issues: Vec<Issue> = errors
                    .errors
                    .iter()
                    .map(|e| Issue {
                        line: e.pos.0.max(1) as usize,
                        column: e.pos.1.max(1) as usize,
                        message: e.msg.clone(),
                    })
                    .collect();
                Err(format_issues(source, &issues))
            }
        }
    }

    /// The text it was compiled from.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The syntax tree (macros expanded).
    pub fn expression(&self) -> &IdedExpr {
        self.program.expression()
    }

    /// Where node `id` starts in the source, in characters.
    pub fn offset_of(&self, id: u64) -> Option<usize> {
        self.program.source_info().offset_for(id).map(|(start, _)| start as usize)
    }

    /// The variables the expression names at top level (`object`, `params`, ...).
    pub fn references_variable(&self, name: &str) -> bool {
        self.program.references().has_variable(name)
    }

    /// The fields selected directly on variable `name`: for `variables`, the variables an
    /// expression reads (`variables.a + variables.b` reads `a` and `b`).
    pub fn fields_of(&self, name: &str) -> BTreeSet<String> {
        fn walk(e: &IdedExpr, name: &str, out: &mut BTreeSet<String>) {
            match &e.expr {
                Expr::Select(s) => {
                    if matches!(&s.operand.expr, Expr::Ident(i) if i == name) {
                        out.insert(s.field.clone());
                    }
                    walk(&s.operand, name, out);
                }
                Expr::Call(c) => {
                    if let Some(t) = &c.target {
                        walk(t, name, out);
                    }
                    c.args.iter().for_each(|a| walk(a, name, out));
                }
                Expr::Comprehension(c) => {
                    for part in [&c.iter_range, &c.accu_init, &c.loop_cond, &c.loop_step, &c.result] {
                        walk(part, name, out);
                    }
                }
                Expr::List(l) => l.elements.iter().for_each(|x| walk(x, name, out)),
                Expr::Map(m) => m.entries.iter().for_each(|entry| match &entry.expr {
                    cel::common::ast::EntryExpr::MapEntry(me) => {
                        walk(&me.key, name, out);
                        walk(&me.value, name, out);
                    }
                    cel::common::ast::EntryExpr::StructField(f) => walk(&f.value, name, out),
                }),
                Expr::Struct(s) => s.entries.iter().for_each(|entry| {
                    if let cel::common::ast::EntryExpr::StructField(f) = &entry.expr {
                        walk(&f.value, name, out);
                    }
                }),
                Expr::Ident(_) | Expr::Literal(_) | Expr::Unspecified => {}
            }
        }
        let mut out = BTreeSet::new();
        walk(self.expression(), name, &mut out);
        out
    }

    fn run(&self, vars: &[(&str, &Value)]) -> Result<cel::Value, String> {
        let mut context = Context::with_env(ENV.clone());
        for (name, value) in vars {
            context.add_variable_from_value(*name, json_to_cel(value));
        }
        self.program.execute(&context).map_err(|e| e.to_string())
    }

    /// Evaluates with `vars` bound (JSON values become CEL maps, lists, strings, ints, doubles,
    /// bools and null), answering JSON.
    pub fn eval(&self, vars: &[(&str, &Value)]) -> Result<Value, String> {
        let out = self.run(vars)?;
        out.json().map_err(|e| format!("{e:?}"))
    }

    /// Evaluates, answering JSON and the CEL type the value had (`int`, `string`,
    /// `null_type`, ...), for callers that must say what type they got.
    pub fn eval_typed(&self, vars: &[(&str, &Value)]) -> Result<(Value, &'static str), String> {
        let out = self.run(vars)?;
        let type_name = match &out {
            cel::Value::List(_) => "list",
            cel::Value::Map(_) => "map",
            cel::Value::Function(..) => "function",
            cel::Value::Int(_) => "int",
            cel::Value::UInt(_) => "uint",
            cel::Value::Float(_) => "double",
            cel::Value::String(_) => "string",
            cel::Value::Bytes(_) => "bytes",
            cel::Value::Bool(_) => "bool",
            cel::Value::Duration(_) => "google.protobuf.Duration",
            cel::Value::Timestamp(_) => "google.protobuf.Timestamp",
            cel::Value::Null => "null_type",
            _ => "object",
        };
        let json = out.json().unwrap_or(Value::Null);
        Ok((json, type_name))
    }

    /// Evaluates an expression that must give a bool.
    pub fn eval_bool(&self, vars: &[(&str, &Value)]) -> Result<bool, String> {
        match self.eval(vars)? {
            Value::Bool(b) => Ok(b),
            other => Err(format!("expression must evaluate to bool, got {other}")),
        }
    }
}

/// A value bound to a variable, converted once (a rule's `self` serves every rule of its node).
#[derive(Clone, Debug)]
pub struct Val(cel::Value);

impl Val {
    /// Plain JSON ([`json_to_cel`]'s typing).
    pub fn json(v: &Value) -> Val {
        Val(json_to_cel(v))
    }

    /// JSON typed by a schema node's declaration, as kube's `UnstructuredToVal`.
    pub fn typed(v: &Value, decl: &DeclType) -> Val {
        Val(decl.to_cel(v))
    }

    /// `optional.of(v)`, or `optional.none()`.
    pub fn optional(v: Option<Val>) -> Val {
        let o = match v {
            Some(Val(v)) => cel::objects::OptionalValue::of(v),
            None => cel::objects::OptionalValue::none(),
        };
        Val(cel::Value::Opaque(Arc::new(o)))
    }

    /// The bool it holds.
    pub fn as_bool(&self) -> Option<bool> {
        match self.0 {
            cel::Value::Bool(b) => Some(b),
            _ => None,
        }
    }

    /// The string it holds.
    pub fn as_str(&self) -> Option<&str> {
        match &self.0 {
            cel::Value::String(s) => Some(s),
            _ => None,
        }
    }
}

/// Why an evaluation failed, in cel-go's words (`no such key: x`, `division by zero`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum EvalError {
    /// No overload takes the values the expression met at run time: what the checker cannot
    /// see through `dyn` (an int-or-string compared with a string).
    #[error("no such overload")]
    NoSuchOverload,
    /// Any other failure.
    #[error("{0}")]
    Failed(String),
}

impl From<cel::ExecutionError> for EvalError {
    fn from(e: cel::ExecutionError) -> Self {
        use cel::ExecutionError as E;
        match e {
            E::NoSuchOverload(_)
            | E::UnsupportedBinaryOperator(..)
            | E::ValuesNotComparable(..)
            | E::UnexpectedType { .. }
            | E::UnsupportedTargetType { .. }
            | E::NotSupportedAsMethod { .. } => EvalError::NoSuchOverload,
            E::NoSuchKey(k) => EvalError::Failed(format!("no such key: {k}")),
            E::DivisionByZero(_) => EvalError::Failed("division by zero".into()),
            E::RemainderByZero(_) => EvalError::Failed("modulus by zero".into()),
            E::Overflow(..) => EvalError::Failed("integer overflow".into()),
            E::IndexOutOfBounds(i) => EvalError::Failed(format!("index out of bounds: {}", cel_go_value(&i))),
            other => EvalError::Failed(other.to_string()),
        }
    }
}

/// A scalar as cel-go prints it in errors.
fn cel_go_value(v: &cel::Value) -> String {
    match v {
        cel::Value::Int(i) => i.to_string(),
        cel::Value::UInt(u) => u.to_string(),
        other => format!("{other:?}"),
    }
}

impl Program {
    /// Evaluates with `vars` bound.
    pub fn evaluate(&self, vars: &[(&str, &Val)]) -> Result<Val, EvalError> {
        let mut context = Context::with_env(ENV.clone());
        for (name, value) in vars {
            context.add_variable_from_value(*name, value.0.clone());
        }
        self.program.execute(&context).map(Val).map_err(EvalError::from)
    }
}

/// A CEL map with string keys.
fn cel_map(entries: impl Iterator<Item = (String, cel::Value)>) -> cel::Value {
    let map: std::collections::HashMap<cel::objects::Key, cel::Value> =
        entries.map(|(k, v)| (cel::objects::Key::String(Arc::new(k)), v)).collect();
    cel::Value::Map(cel::objects::Map { map: Arc::new(map) })
}

/// JSON as CEL sees unstructured objects in kube: integers are `int` (the crate's own
/// conversion makes every non-negative one a `uint`, which `+ 1` would then refuse), other
/// numbers `double`, objects maps with string keys.
fn json_to_cel(v: &Value) -> cel::Value {
    match v {
        Value::Null => cel::Value::Null,
        Value::Bool(b) => cel::Value::Bool(*b),
        Value::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => cel::Value::Int(i),
            (None, Some(u)) => cel::Value::UInt(u),
            _ => cel::Value::Float(n.as_f64().unwrap_or(f64::NAN)),
        },
        Value::String(s) => cel::Value::String(Arc::new(s.clone())),
        Value::Array(items) => cel::Value::List(Arc::new(items.iter().map(json_to_cel).collect())),
        Value::Object(fields) => cel_map(fields.iter().map(|(k, v)| (k.clone(), json_to_cel(v)))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn json_integers_are_cel_ints() {
        let object = json!({"n": 3, "big": u64::MAX, "f": 1.5, "l": [1], "m": {"k": null}});
        let p = Program::compile("object.n + 1 == 4 && type(object.n) == int && type(object.big) == uint").unwrap();
        assert_eq!(p.eval_bool(&[("object", &object)]), Ok(true));
        let p = Program::compile("object.f * 2.0 == 3.0 && object.l[0] - 1 == 0 && object.m.k == null").unwrap();
        assert_eq!(p.eval_bool(&[("object", &object)]), Ok(true));
    }

    #[test]
    fn expressions_see_json_objects_and_the_extensions() {
        let object = json!({"metadata": {"name": "web-1", "labels": {"team": "a"}}, "spec": {"replicas": 3}});
        let p = Program::compile("object.spec.replicas <= 5 && object.metadata.name.startsWith('web')").unwrap();
        assert!(p.eval_bool(&[("object", &object)]).unwrap());
        let p = Program::compile("object.metadata.name.upperAscii() == 'WEB-1'").unwrap();
        assert!(p.eval_bool(&[("object", &object)]).unwrap(), "the strings extension");
        let p = Program::compile("object.metadata.name.matches('^web-[0-9]+$')").unwrap();
        assert!(p.eval_bool(&[("object", &object)]).unwrap(), "regexes");
        let p = Program::compile("has(object.metadata.labels.team) && !has(object.metadata.labels.env)").unwrap();
        assert!(p.eval_bool(&[("object", &object)]).unwrap());
        assert!(p.references_variable("object") && !p.references_variable("params"));
        let p = Program::compile("object.spec.replicas").unwrap();
        assert!(p.eval_bool(&[("object", &object)]).unwrap_err().contains("must evaluate to bool"));
        assert_eq!(p.eval_typed(&[("object", &object)]).unwrap(), (json!(3), "int"));
    }

    #[test]
    fn syntax_errors_read_as_cel_go_reports_them() {
        let e = Program::compile("object.spec.replicas <").unwrap_err();
        assert!(e.starts_with("compilation failed: ERROR: <input>:1:23: Syntax error: "), "{e}");
        assert!(e.ends_with("\n | object.spec.replicas <\n | ......................^"), "{e}");
        assert!(Program::compile(" ").is_err());
        let p = Program::compile("object.nope.deeper == 1").unwrap();
        assert!(p.eval_bool(&[("object", &json!({}))]).is_err(), "a missing field is an evaluation error");
    }

    #[test]
    fn the_fields_read_of_a_variable_are_found_anywhere_in_the_expression() {
        let p = Program::compile("variables.a > 1 && [1].all(x, x < variables.b) && size(variables.c.d) > 0").unwrap();
        assert_eq!(p.fields_of("variables").into_iter().collect::<Vec<_>>(), vec!["a", "b", "c"]);
    }

    #[test]
    fn issues_are_placed_by_line_and_column() {
        let src = "a &&\n  b.c";
        let i = Issue::at(src, 8, "undefined field 'c'");
        assert_eq!((i.line, i.column), (2, 4));
        assert_eq!(format_issues(src, &[i]), "ERROR: <input>:2:4: undefined field 'c'\n |   b.c\n | ...^");
    }
}
