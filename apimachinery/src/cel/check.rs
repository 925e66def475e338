//! A type checker over the `cel` crate's syntax tree, reporting what cel-go's checker reports
//! for the mistakes people make: names that are not declared, fields a typed object does not
//! have, operators and functions applied to the wrong types, and ranges that are not lists or
//! maps.
//!
//! It infers a type for every node bottom-up. Where cel-go would know more (a type parameter,
//! a loosely typed extension function), the node is [`Type::Unknown`] and nothing downstream
//! is reported: a finding here is one cel-go would make too, worded as cel-go words it.

use std::collections::{BTreeMap, HashMap};

use cel::common::ast::{CallExpr, ComprehensionExpr, EntryExpr, Expr, IdedExpr, LiteralValue, SelectExpr};

use super::functions::{self, Resolution};
use super::types::Type;
use super::{Issue, Program};

/// The variables an expression may name, with their types.
#[derive(Clone, Debug, Default)]
pub struct Declarations {
    vars: BTreeMap<String, Type>,
    /// Whether names the environment does not declare are let through: kube compiles
    /// expressions already stored in a more permissive environment, so an update never fails
    /// on what an earlier version accepted.
    pub lenient_references: bool,
}

impl Declarations {
    /// No variables.
    pub fn new() -> Self {
        Declarations::default()
    }

    /// With variable `name` of type `t`.
    pub fn declare(mut self, name: &str, t: Type) -> Self {
        self.vars.insert(name.to_string(), t);
        self
    }

    /// The type of variable `name`, if declared.
    pub fn get(&self, name: &str) -> Option<&Type> {
        self.vars.get(name)
    }
}

/// What checking found.
#[derive(Clone, Debug)]
pub struct Checked {
    /// The expression's type.
    pub output: Type,
    /// What is wrong, in cel-go's words.
    pub issues: Vec<Issue>,
    /// The type of every node, by id: the cost estimator picks overloads and sizes by them, as
    /// cel-go's estimator reads its checked AST's type map.
    pub types: HashMap<u64, Type>,
}

/// Checks `program` against `decls`.
pub fn check(program: &Program, decls: &Declarations) -> Checked {
    let mut checker = Checker { program, decls, scopes: Vec::new(), issues: Vec::new(), types: HashMap::new() };
    let output = checker.expr(program.expression());
    Checked { output, issues: checker.issues, types: checker.types }
}

/// Type names an identifier may be (`type(x) == string`).
const TYPE_NAMES: [&str; 12] = [
    "bool",
    "bytes",
    "double",
    "int",
    "list",
    "map",
    "null_type",
    "string",
    "type",
    "uint",
    "google.protobuf.Duration",
    "google.protobuf.Timestamp",
];

struct Checker<'a> {
    program: &'a Program,
    decls: &'a Declarations,
    /// Comprehension variables in scope, innermost last.
    scopes: Vec<(String, Type)>,
    issues: Vec<Issue>,
    types: HashMap<u64, Type>,
}

impl Checker<'_> {
    fn report(&mut self, e: &IdedExpr, message: String) {
        let offset = self.program.offset_of(e.id).unwrap_or(0);
        self.issues.push(Issue::at(self.program.source(), offset, message));
    }

    fn lookup(&self, name: &str) -> Option<Type> {
        if let Some((_, t)) = self.scopes.iter().rev().find(|(n, _)| n == name) {
            return Some(t.clone());
        }
        self.decls.get(name).cloned()
    }

    fn undeclared(&mut self, e: &IdedExpr, name: &str) -> Type {
        if !self.decls.lenient_references {
            self.report(e, format!("undeclared reference to '{name}' (in container '')"));
        }
        Type::Unknown
    }

    fn expr(&mut self, e: &IdedExpr) -> Type {
        let t = self.infer(e);
        self.types.insert(e.id, t.clone());
        t
    }

    fn infer(&mut self, e: &IdedExpr) -> Type {
        match &e.expr {
            Expr::Literal(l) => match l {
                LiteralValue::Boolean(_) => Type::Bool,
                LiteralValue::Bytes(_) => Type::Bytes,
                LiteralValue::Double(_) => Type::Double,
                LiteralValue::Int(_) => Type::Int,
                LiteralValue::Null => Type::Null,
                LiteralValue::String(_) => Type::String,
                LiteralValue::UInt(_) => Type::Uint,
            },
            Expr::Ident(name) => match self.lookup(name) {
                Some(t) => t,
                None if TYPE_NAMES.contains(&name.as_str()) => Type::Type,
                None => self.undeclared(e, name),
            },
            Expr::Select(s) => self.select(e, s),
            Expr::Call(c) => self.call(e, c),
            Expr::List(l) => {
                let mut elem = Type::Unknown;
                for (i, x) in l.elements.iter().enumerate() {
                    let t = self.expr(x);
                    // An optional element (`[?x]`) is unwrapped: its type is not known here.
                    let t = if l.optional_indices.contains(&i) { Type::Unknown } else { t };
                    elem = if i == 0 { t } else { elem.join(&t) };
                }
                Type::list(elem)
            }
            Expr::Map(m) => {
                let (mut key, mut value) = (Type::Unknown, Type::Unknown);
                for (i, entry) in m.entries.iter().enumerate() {
                    if let EntryExpr::MapEntry(me) = &entry.expr {
                        let (k, v) = (self.expr(&me.key), self.expr(&me.value));
                        let v = if me.optional { Type::Unknown } else { v };
                        (key, value) = if i == 0 { (k, v) } else { (key.join(&k), value.join(&v)) };
                    }
                }
                Type::map(key, value)
            }
            Expr::Struct(s) => {
                for entry in &s.entries {
                    if let EntryExpr::StructField(f) = &entry.expr {
                        self.expr(&f.value);
                    }
                }
                Type::Unknown
            }
            Expr::Comprehension(c) => self.comprehension(c),
            Expr::Unspecified => Type::Unknown,
        }
    }

    /// `a.b.c` spelled with identifiers only, when `a` is no variable: a qualified type name.
    fn qualified_name(&self, e: &IdedExpr) -> Option<String> {
        let mut parts = Vec::new();
        let mut cur = e;
        loop {
            match &cur.expr {
                Expr::Select(s) if !s.test => {
                    parts.push(s.field.as_str());
                    cur = &s.operand;
                }
                Expr::Ident(root) => {
                    if self.lookup(root).is_some() {
                        return None;
                    }
                    parts.push(root);
                    parts.reverse();
                    return Some(parts.join("."));
                }
                _ => return None,
            }
        }
    }

    fn select(&mut self, e: &IdedExpr, s: &SelectExpr) -> Type {
        if !s.test && self.qualified_name(e).is_some_and(|n| TYPE_NAMES.contains(&n.as_str())) {
            return Type::Type;
        }
        let operand = self.expr(&s.operand);
        let field = self.field_of(e, &operand, &s.field);
        if s.test { Type::Bool } else { field }
    }

    /// The type of `field` on a value of type `operand`, reporting cel-go's errors at `e`.
    fn field_of(&mut self, e: &IdedExpr, operand: &Type, field: &str) -> Type {
        match operand {
            Type::Unknown => Type::Unknown,
            Type::Dyn => Type::Dyn,
            Type::Map(_, v) => (**v).clone(),
            Type::Object(o) => match o.field(field) {
                Some(t) => t,
                None => {
                    self.report(e, format!("undefined field '{field}'"));
                    Type::Unknown
                }
            },
            other => {
                self.report(e, format!("type '{other}' does not support field selection"));
                Type::Unknown
            }
        }
    }

    fn comprehension(&mut self, c: &ComprehensionExpr) -> Type {
        let range = self.expr(&c.iter_range);
        let (first, second) = match &range {
            Type::List(elem) => (if c.iter_var2.is_some() { Type::Int } else { (**elem).clone() }, (**elem).clone()),
            Type::Map(k, v) => ((**k).clone(), (**v).clone()),
            Type::Dyn => (Type::Dyn, Type::Dyn),
            Type::Unknown => (Type::Unknown, Type::Unknown),
            other => {
                let message = format!(
                    "expression of type '{other}' cannot be range of a comprehension (must be list, map, or dynamic)"
                );
                self.report(&c.iter_range, message);
                (Type::Unknown, Type::Unknown)
            }
        };
        let accu_init = self.expr(&c.accu_init);
        let depth = self.scopes.len();
        self.scopes.push((c.accu_var.clone(), accu_init.clone()));
        self.scopes.push((c.iter_var.clone(), first));
        if let Some(v2) = &c.iter_var2 {
            self.scopes.push((v2.clone(), second));
        }
        let step = self.expr(&c.loop_step);
        // The accumulator is what the step makes of it (`[]` grows into `list(T)`).
        self.scopes[depth].1 = accu_init.join(&step);
        let _ = self.expr(&c.loop_cond);
        self.scopes.truncate(depth + 1);
        let result = self.expr(&c.result);
        self.scopes.truncate(depth);
        result
    }

    fn no_overload(&mut self, e: &IdedExpr, name: &str, args: &[Type], member: bool) {
        let list = |ts: &[Type]| ts.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ");
        let signature = match (member, args.split_first()) {
            (true, Some((recv, rest))) => format!("{recv}.({})", list(rest)),
            _ => format!("({})", list(args)),
        };
        self.report(e, format!("found no matching overload for '{name}' applied to '{signature}'"));
    }

    fn call(&mut self, e: &IdedExpr, c: &CallExpr) -> Type {
        // `math.abs(x)`: a namespaced global function, not a method of a variable `math`.
        if let Some(target) = &c.target
            && let Some(namespace) = self.qualified_name(target)
        {
            let qualified = format!("{namespace}.{}", c.func_name);
            if functions::is_global(&qualified) {
                let args: Vec<Type> = c.args.iter().map(|a| self.expr(a)).collect();
                return self.resolve(e, &qualified, false, args);
            }
        }
        let mut args: Vec<Type> = Vec::with_capacity(c.args.len() + 1);
        if let Some(target) = &c.target {
            args.push(self.expr(target));
        }
        args.extend(c.args.iter().map(|a| self.expr(a)));
        let name = c.func_name.as_str();
        match operator(name) {
            Some(op) => self.operator(e, name, op, &args),
            None => self.resolve(e, name, c.target.is_some(), args),
        }
    }

    fn resolve(&mut self, e: &IdedExpr, name: &str, member: bool, args: Vec<Type>) -> Type {
        match functions::resolve(name, member, &args) {
            Resolution::Resolved(t) => t,
            Resolution::Undeclared => self.undeclared(e, name),
            Resolution::NoOverload => {
                self.no_overload(e, name, &args, member);
                Type::Unknown
            }
        }
    }

    fn operator(&mut self, e: &IdedExpr, name: &str, op: Operator, args: &[Type]) -> Type {
        let refuse = |checker: &mut Self| {
            checker.no_overload(e, name, args, false);
            Type::Unknown
        };
        let boolish = |t: &Type| t.is_open() || matches!(t, Type::Bool);
        match (op, args) {
            (Operator::Logical, _) => {
                if !args.iter().all(boolish) {
                    refuse(self);
                }
                Type::Bool
            }
            (Operator::NotStrictlyFalse, _) => Type::Bool,
            (Operator::Conditional, [cond, a, b]) => {
                if !boolish(cond) {
                    return refuse(self);
                }
                if matches!(a, Type::Null) {
                    b.clone()
                } else if matches!(b, Type::Null) {
                    a.clone()
                } else {
                    a.join(b)
                }
            }
            (Operator::Equality, [a, b]) => {
                if !a.comparable_with(b) {
                    refuse(self);
                }
                Type::Bool
            }
            (Operator::Ordering, [a, b]) => {
                let ordered =
                    |t: &Type| matches!(t, Type::Bool | Type::String | Type::Bytes | Type::Timestamp | Type::Duration);
                let fine = a.is_open() && (b.is_open() || b.is_numeric() || ordered(b))
                    || b.is_open() && (a.is_numeric() || ordered(a))
                    || a.is_numeric() && b.is_numeric()
                    || ordered(a) && a.same_kind(b);
                if !fine {
                    refuse(self);
                }
                Type::Bool
            }
            (Operator::Arithmetic(kind), [a, b]) => match arithmetic(kind, a, b) {
                Some(t) => t,
                None => refuse(self),
            },
            (Operator::Negate, [a]) => match a {
                Type::Int | Type::Double | Type::Unknown | Type::Dyn => a.clone(),
                _ => refuse(self),
            },
            (Operator::In, [x, container]) => {
                let fine = match container {
                    Type::List(elem) => x.comparable_with(elem),
                    Type::Map(key, _) => x.comparable_with(key),
                    Type::Object(_) => x.is_open() || matches!(x, Type::String),
                    t => t.is_open(),
                };
                if !fine {
                    refuse(self);
                }
                Type::Bool
            }
            (Operator::Index, [container, index]) => match container {
                Type::List(elem) => {
                    if !(index.is_open() || matches!(index, Type::Int | Type::Uint)) {
                        return refuse(self);
                    }
                    (**elem).clone()
                }
                Type::Map(key, value) => {
                    if !index.comparable_with(key) {
                        return refuse(self);
                    }
                    (**value).clone()
                }
                Type::Dyn => Type::Dyn,
                Type::Unknown | Type::Object(_) => Type::Unknown,
                _ => refuse(self),
            },
            (Operator::OptionalIndex, _) => Type::Unknown,
            (Operator::OptionalSelect, [operand, _]) => {
                if let (Type::Object(o), Some(field)) = (operand, optional_field(e))
                    && o.field(&field).is_none()
                {
                    self.report(e, format!("undefined field '{field}'"));
                }
                Type::Unknown
            }
            _ => Type::Unknown,
        }
    }
}

/// The field name of `a.?b` (its second argument is the name as a string literal).
fn optional_field(e: &IdedExpr) -> Option<String> {
    let Expr::Call(c) = &e.expr else { return None };
    match &c.args.get(1)?.expr {
        Expr::Literal(LiteralValue::String(s)) => Some(s.inner().to_string()),
        _ => None,
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Arith {
    Add,
    Sub,
    Mul,
    Div,
    Mod,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Operator {
    Logical,
    NotStrictlyFalse,
    Conditional,
    Equality,
    Ordering,
    Arithmetic(Arith),
    Negate,
    In,
    Index,
    OptionalIndex,
    OptionalSelect,
}

fn operator(name: &str) -> Option<Operator> {
    use cel::common::ast::operators as ops;
    Some(match name {
        ops::LOGICAL_AND | ops::LOGICAL_OR | ops::LOGICAL_NOT => Operator::Logical,
        ops::NOT_STRICTLY_FALSE => Operator::NotStrictlyFalse,
        ops::CONDITIONAL => Operator::Conditional,
        ops::EQUALS | ops::NOT_EQUALS => Operator::Equality,
        ops::LESS | ops::LESS_EQUALS | ops::GREATER | ops::GREATER_EQUALS => Operator::Ordering,
        ops::ADD => Operator::Arithmetic(Arith::Add),
        ops::SUBSTRACT => Operator::Arithmetic(Arith::Sub),
        ops::MULTIPLY => Operator::Arithmetic(Arith::Mul),
        ops::DIVIDE => Operator::Arithmetic(Arith::Div),
        ops::MODULO => Operator::Arithmetic(Arith::Mod),
        ops::NEGATE => Operator::Negate,
        ops::IN => Operator::In,
        ops::INDEX => Operator::Index,
        ops::OPT_INDEX => Operator::OptionalIndex,
        ops::OPT_SELECT => Operator::OptionalSelect,
        _ => return None,
    })
}

/// The result of `a <op> b`, or `None` when cel-go has no overload for the pair.
fn arithmetic(kind: Arith, a: &Type, b: &Type) -> Option<Type> {
    if matches!(a, Type::Unknown) || matches!(b, Type::Unknown) {
        return Some(Type::Unknown);
    }
    // The types the operator maps to themselves.
    let closed = |t: &Type| match kind {
        Arith::Add => t.is_numeric() || matches!(t, Type::String | Type::Bytes | Type::List(_) | Type::Duration),
        Arith::Sub => t.is_numeric() || matches!(t, Type::Duration),
        Arith::Mul | Arith::Div => t.is_numeric(),
        Arith::Mod => matches!(t, Type::Int | Type::Uint),
    };
    match (a, b) {
        (Type::Dyn, Type::Dyn) => Some(Type::Dyn),
        // A dynamic operand takes whichever overload fits the other one.
        (Type::Dyn, t) | (t, Type::Dyn) => match t {
            Type::Timestamp | Type::Duration => Some(Type::Unknown),
            t if closed(t) => Some(t.clone()),
            _ => None,
        },
        (Type::Timestamp, Type::Duration) | (Type::Duration, Type::Timestamp) if kind == Arith::Add => {
            Some(Type::Timestamp)
        }
        (Type::Timestamp, Type::Duration) if kind == Arith::Sub => Some(Type::Timestamp),
        (Type::Timestamp, Type::Timestamp) if kind == Arith::Sub => Some(Type::Duration),
        (Type::List(x), Type::List(y)) if kind == Arith::Add => Some(Type::list(x.join(y))),
        (x, y) if x.same_kind(y) && closed(x) => Some(x.clone()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cel::types::{namespace_type, request_type};

    fn deployment() -> Type {
        crate::schema::cel_type(crate::schema::kind_node("apps", "v1", "Deployment").unwrap(), "Deployment")
    }

    fn typed() -> Declarations {
        Declarations::new().declare("object", deployment()).declare("oldObject", deployment())
    }

    fn dynamic() -> Declarations {
        Declarations::new()
            .declare("object", Type::Dyn)
            .declare("request", request_type())
            .declare("namespaceObject", namespace_type())
    }

    fn issues(source: &str, decls: &Declarations) -> Vec<String> {
        let p = Program::compile(source).unwrap();
        let checked = check(&p, decls);
        checked.issues.iter().map(|i| format!("{}:{}: {}", i.line, i.column, i.message)).collect()
    }

    fn output(source: &str, decls: &Declarations) -> String {
        check(&Program::compile(source).unwrap(), decls).output.to_string()
    }

    #[test]
    fn a_field_the_schema_does_not_have_is_an_undefined_field_at_its_dot() {
        assert_eq!(issues("object.spec.foo == 1", &typed()), ["1:12: undefined field 'foo'"]);
        // cel-go places a macro's nodes at the macro's call.
        assert_eq!(issues("has(object.spec.nope)", &typed()), ["1:4: undefined field 'nope'"]);
        assert_eq!(
            issues("object.spec.template.spec.containers.all(c, c.imagee != '')", &typed()),
            ["1:46: undefined field 'imagee'"]
        );
        assert!(issues("object.metadata.labels.app == 'x' && object.spec.replicas > 1", &typed()).is_empty());
        assert!(issues("object.foo == 1", &dynamic()).is_empty(), "nothing is known of a dyn object");
    }

    #[test]
    fn mismatched_operands_have_no_overload() {
        assert_eq!(
            issues("object.spec.replicas > 'three'", &typed()),
            ["1:22: found no matching overload for '_>_' applied to '(int, string)'"]
        );
        assert_eq!(
            issues("object.metadata.name + 1 == 'x'", &typed()),
            ["1:22: found no matching overload for '_+_' applied to '(string, int)'"]
        );
        assert_eq!(
            issues("object.spec.replicas == 'x'", &typed()),
            ["1:22: found no matching overload for '_==_' applied to '(int, string)'"]
        );
        assert_eq!(
            issues("object.spec.paused && 1", &typed()),
            ["1:20: found no matching overload for '_&&_' applied to '(bool, int)'"]
        );
        assert!(issues("object.spec.replicas < 2.5 && object.spec.replicas + 1 > 0", &typed()).is_empty());
        assert!(issues("object.foo + 1 > 0 && object.foo + 'a' == 'b'", &dynamic()).is_empty());
        assert_eq!(
            issues("1 + 'a' == 2", &dynamic()),
            ["1:3: found no matching overload for '_+_' applied to '(int, string)'"]
        );
    }

    #[test]
    fn functions_are_checked_against_their_signatures() {
        assert_eq!(
            issues("object.spec.replicas.startsWith('a')", &typed()),
            ["1:32: found no matching overload for 'startsWith' applied to 'int.(string)'"]
        );
        assert_eq!(
            issues("quantity('1Gi') > 1", &dynamic()),
            ["1:9: undeclared reference to 'quantity' (in container '')"]
        );
        assert!(issues("math.greatest(1, 2) == 2 && 'a'.upperAscii() == 'A'", &dynamic()).is_empty());
        assert!(issues("size(object.spec.template.spec.containers) > 0", &typed()).is_empty());
        assert_eq!(
            issues("size(1) > 0", &dynamic()),
            ["1:5: found no matching overload for 'size' applied to '(int)'"]
        );
    }

    #[test]
    fn names_must_be_declared() {
        assert_eq!(issues("foo.bar == 1", &dynamic()), ["1:1: undeclared reference to 'foo' (in container '')"]);
        assert_eq!(issues("params.x == 1", &dynamic()), ["1:1: undeclared reference to 'params' (in container '')"]);
        assert!(issues("type(object) == map && [1, 2].exists(x, x == 2)", &dynamic()).is_empty());
        let lenient = Declarations { lenient_references: true, ..dynamic() };
        assert!(issues("authorizer.group('').resource('pods').check('get').allowed()", &lenient).is_empty());
    }

    #[test]
    fn declared_types_are_checked_too() {
        assert_eq!(issues("request.foo == 'x'", &dynamic()), ["1:8: undefined field 'foo'"]);
        assert!(issues("request.userInfo.groups.exists(g, g == 'system:masters')", &dynamic()).is_empty());
        assert_eq!(
            issues("namespaceObject.metadata.labels.x > 1", &dynamic()),
            ["1:35: found no matching overload for '_>_' applied to '(string, int)'"]
        );
    }

    #[test]
    fn comprehensions_type_their_variables_and_results() {
        assert_eq!(output("[1, 2].map(x, x * 2)", &dynamic()), "list(int)");
        assert_eq!(output("[1, 2].all(x, x > 0)", &dynamic()), "bool");
        assert_eq!(output("object.spec.template.spec.containers.map(c, c.name)", &typed()), "list(string)");
        assert_eq!(
            issues("1.all(x, x > 0)", &dynamic()),
            ["1:1: expression of type 'int' cannot be range of a comprehension (must be list, map, or dynamic)"]
        );
    }

    #[test]
    fn outputs_tell_dyn_from_unknown() {
        assert_eq!(output("object.spec.replicas", &dynamic()), "dyn");
        assert!(matches!(check(&Program::compile("object.spec").unwrap(), &dynamic()).output, Type::Dyn));
        assert!(matches!(check(&Program::compile("math.abs(object.x)").unwrap(), &dynamic()).output, Type::Unknown));
        assert_eq!(output("object.spec.replicas > 1", &dynamic()), "bool");
        assert_eq!(output("request.name", &dynamic()), "string");
    }
}
