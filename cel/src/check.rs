//! cel-go's type checker (`checker/checker.go`) over the `cel` crate's syntax tree: every node
//! typed, every call resolved against the declared overloads with type parameters unified as
//! cel-go unifies them, and cel-go's findings in cel-go's words (`undeclared reference to 'x'
//! (in container '')`, `undefined field 'x'`, `found no matching overload for '_+_' applied to
//! '(int, string)'`).
//!
//! Besides its findings the checker records what the planner and the cost model read from
//! cel-go's checked AST: the type of every node and the overloads a call resolved to.

use std::collections::HashMap;
use std::sync::Arc;

use cel::common::ast::{CallExpr, ComprehensionExpr, EntryExpr, Expr, IdedExpr, LiteralValue, SelectExpr, operators};

use crate::decls::{Overload, type_identifiers};
use crate::env::Env;
use crate::types::{Mapping, Type, most_general};

/// What a node refers to.
#[derive(Clone, Debug)]
pub enum Reference {
    /// A variable (or a qualified variable name spelled as selections).
    Variable(String),
    /// A type identifier: a constant `type(T)` value.
    TypeName(String),
    /// A call of function `name` (the qualified name for `optional.of(x)`), resolved to these
    /// overloads.
    Function {
        /// The function's name.
        name: String,
        /// The ids of the overloads the argument types allow.
        overloads: Vec<&'static str>,
    },
}

/// What checking found: types, references and issues.
#[derive(Clone, Debug, Default)]
pub struct Checked {
    /// The type of every node, by id.
    pub types: HashMap<u64, Type>,
    /// What identifiers, qualified names and calls refer to, by id.
    pub references: HashMap<u64, Reference>,
    /// What is wrong: (node id, message).
    pub issues: Vec<(u64, String)>,
}

impl Checked {
    /// The type of node `id` (`dyn` if it has none).
    pub fn type_of(&self, id: u64) -> Type {
        self.types.get(&id).cloned().unwrap_or(Type::Dyn)
    }

    /// The overload ids of call `id`.
    pub fn overloads(&self, id: u64) -> &[&'static str] {
        match self.references.get(&id) {
            Some(Reference::Function { overloads, .. }) => overloads,
            _ => &[],
        }
    }
}

/// Checks `expr` in `env`.
pub fn check(expr: &IdedExpr, env: &Env) -> Checked {
    let mut c = Checker { env, scopes: Vec::new(), mapping: Mapping::default(), vars: 0, out: Checked::default() };
    c.check(expr);
    let mapping = c.mapping.clone();
    for t in c.out.types.values_mut() {
        *t = mapping.substitute(t, true);
    }
    c.out
}

struct Checker<'a> {
    env: &'a Env,
    /// Comprehension variables, innermost last.
    scopes: Vec<(String, Type)>,
    mapping: Mapping,
    /// Fresh type variables made so far.
    vars: usize,
    out: Checked,
}

/// A qualified name spelled by identifiers and selections (`a.b.c`), as cel-go's
/// `ToQualifiedName`.
pub fn qualified_name(e: &IdedExpr) -> Option<String> {
    match &e.expr {
        Expr::Ident(name) => Some(name.clone()),
        Expr::Select(s) if !s.test => Some(format!("{}.{}", qualified_name(&s.operand)?, s.field)),
        _ => None,
    }
}

impl Checker<'_> {
    fn report(&mut self, id: u64, message: String) {
        self.out.issues.push((id, message));
    }

    fn set_type(&mut self, e: &IdedExpr, t: Type) {
        self.out.types.entry(e.id).or_insert(t);
    }

    fn get_type(&self, e: &IdedExpr) -> Type {
        self.out.types.get(&e.id).cloned().unwrap_or(Type::Error)
    }

    fn new_type_var(&mut self) -> Type {
        let t = Type::param(&format!("_var{}", self.vars));
        self.vars += 1;
        t
    }

    /// cel-go's `LookupIdent`: comprehension variables, declared variables, type names.
    fn lookup_ident(&self, name: &str) -> Option<(Type, Reference)> {
        if let Some((_, t)) = self.scopes.iter().rev().find(|(n, _)| n == name) {
            return Some((t.clone(), Reference::Variable(name.to_string())));
        }
        if let Some(t) = self.env.variable(name) {
            return Some((t.clone(), Reference::Variable(name.to_string())));
        }
        type_identifiers()
            .into_iter()
            .find(|(n, _)| *n == name)
            .map(|(n, t)| (Type::Type(Some(Arc::new(t))), Reference::TypeName(n.to_string())))
    }

    fn undeclared(&mut self, e: &IdedExpr, name: &str) {
        self.report(e.id, format!("undeclared reference to '{name}' (in container '')"));
    }

    fn check(&mut self, e: &IdedExpr) {
        match &e.expr {
            Expr::Literal(l) => {
                let t = match l {
                    LiteralValue::Boolean(_) => Type::Bool,
                    LiteralValue::Bytes(_) => Type::Bytes,
                    LiteralValue::Double(_) => Type::Double,
                    LiteralValue::Int(_) => Type::Int,
                    LiteralValue::Null => Type::Null,
                    LiteralValue::String(_) => Type::String,
                    LiteralValue::UInt(_) => Type::Uint,
                };
                self.set_type(e, t);
            }
            Expr::Ident(name) => match self.lookup_ident(name) {
                Some((t, r)) => {
                    self.set_type(e, t);
                    self.out.references.insert(e.id, r);
                }
                None => {
                    self.set_type(e, Type::Error);
                    self.undeclared(e, name);
                }
            },
            Expr::Select(s) => self.check_select(e, s),
            Expr::Call(c) => self.check_call(e, c),
            Expr::List(l) => {
                let mut elems: Option<Type> = None;
                for (i, x) in l.elements.iter().enumerate() {
                    self.check(x);
                    let mut t = self.get_type(x);
                    if l.optional_indices.contains(&i) {
                        let (inner, optional) = t.unwrap_optional();
                        if !optional && !inner.is_dyn() {
                            self.report(
                                x.id,
                                format!("expected type '{}' but found '{inner}'", Type::optional(inner.clone())),
                            );
                        }
                        t = inner;
                    }
                    elems = Some(self.join(elems, t));
                }
                let elem = elems.unwrap_or_else(|| self.new_type_var());
                self.set_type(e, Type::list(elem));
            }
            Expr::Map(m) => {
                let (mut key, mut value): (Option<Type>, Option<Type>) = (None, None);
                for entry in &m.entries {
                    let EntryExpr::MapEntry(me) = &entry.expr else { continue };
                    self.check(&me.key);
                    let kt = self.get_type(&me.key);
                    key = Some(self.join(key, kt));
                    self.check(&me.value);
                    let mut vt = self.get_type(&me.value);
                    if me.optional {
                        let (inner, optional) = vt.unwrap_optional();
                        if !optional && !inner.is_dyn() {
                            self.report(
                                me.value.id,
                                format!("expected type '{}' but found '{inner}'", Type::optional(inner.clone())),
                            );
                        }
                        vt = inner;
                    }
                    value = Some(self.join(value, vt));
                }
                let key = key.unwrap_or_else(|| self.new_type_var());
                let value = value.unwrap_or_else(|| self.new_type_var());
                self.set_type(e, Type::map(key, value));
            }
            Expr::Struct(s) => {
                // kube declares no message types: every struct literal names an unknown type.
                self.report(e.id, format!("undeclared reference to '{}' (in container '')", s.type_name));
                self.set_type(e, Type::Error);
                for entry in &s.entries {
                    if let EntryExpr::StructField(f) = &entry.expr {
                        self.check(&f.value);
                    }
                }
            }
            Expr::Comprehension(c) => self.check_comprehension(e, c),
            Expr::Unspecified => self.set_type(e, Type::Error),
        }
    }

    /// cel-go's `joinTypes` with dynamic aggregate element types (kube's homogeneity is a
    /// validator's, run after checking).
    fn join(&mut self, previous: Option<Type>, current: Type) -> Type {
        let Some(previous) = previous else { return current };
        if self.mapping.is_assignable(&previous, &current) {
            return most_general(&previous, &current);
        }
        Type::Dyn
    }

    fn check_select(&mut self, e: &IdedExpr, s: &SelectExpr) {
        if let Some(name) = qualified_name(e)
            && let Some((t, r)) = self.lookup_ident(&name)
        {
            self.set_type(e, t);
            self.out.references.insert(e.id, r);
            return;
        }
        let mut result = self.check_select_field(e, &s.operand, &s.field, false);
        if s.test {
            result = Type::Bool;
        }
        let t = self.mapping.substitute(&result, false);
        self.set_type(e, t);
    }

    fn check_select_field(&mut self, e: &IdedExpr, operand: &IdedExpr, field: &str, optional: bool) -> Type {
        self.check(operand);
        let operand_type = self.mapping.substitute(&self.get_type(operand), false);
        let (target, was_optional) = operand_type.unwrap_optional();
        let result = match &target {
            Type::Map(_, v) => (**v).clone(),
            Type::Object(o) => match o.field(field) {
                Some(t) => t,
                None => {
                    self.report(e.id, format!("undefined field '{field}'"));
                    Type::Error
                }
            },
            Type::Param(_) => {
                self.mapping.is_assignable(&Type::Dyn, &target);
                Type::Dyn
            }
            t => {
                if !t.is_dyn_or_error() {
                    self.report(e.id, format!("type '{t}' does not support field selection"));
                }
                Type::Dyn
            }
        };
        if was_optional || optional { Type::optional(result) } else { result }
    }

    fn check_call(&mut self, e: &IdedExpr, c: &CallExpr) {
        if c.func_name == operators::OPT_SELECT {
            let [operand, field] = &c.args[..] else { return };
            let name = match &field.expr {
                Expr::Literal(LiteralValue::String(s)) => s.inner().to_string(),
                _ => {
                    self.report(field.id, "unsupported optional field selection".to_string());
                    return;
                }
            };
            let result = self.check_select_field(e, operand, &name, true);
            let t = self.mapping.substitute(&result, false);
            self.set_type(e, t);
            self.out.references.insert(
                e.id,
                Reference::Function { name: c.func_name.clone(), overloads: vec!["select_optional_field"] },
            );
            return;
        }
        for a in &c.args {
            self.check(a);
        }
        let Some(target) = &c.target else {
            match self.env.function(&c.func_name) {
                Some(overloads) => {
                    let overloads = overloads.to_vec();
                    self.resolve(e, &c.func_name, &overloads, None, &c.args);
                }
                None => {
                    self.undeclared(e, &c.func_name);
                    self.set_type(e, Type::Error);
                }
            }
            return;
        };
        if let Some(prefix) = qualified_name(target) {
            let qualified = format!("{prefix}.{}", c.func_name);
            if let Some(overloads) = self.env.function(&qualified) {
                let overloads = overloads.to_vec();
                self.resolve(e, &qualified, &overloads, None, &c.args);
                return;
            }
        }
        self.check(target);
        match self.env.function(&c.func_name) {
            Some(overloads) => {
                let overloads = overloads.to_vec();
                self.resolve(e, &c.func_name, &overloads, Some(target), &c.args);
            }
            None => {
                self.set_type(e, Type::Error);
                self.undeclared(e, &c.func_name);
            }
        }
    }

    /// cel-go's `resolveOverload`.
    fn resolve(
        &mut self,
        e: &IdedExpr,
        name: &str,
        overloads: &[Overload],
        target: Option<&IdedExpr>,
        args: &[IdedExpr],
    ) {
        let mut arg_types: Vec<Type> = Vec::new();
        if let Some(t) = target {
            arg_types.push(self.get_type(t));
        }
        arg_types.extend(args.iter().map(|a| self.get_type(a)));
        let mut result: Option<Type> = None;
        let mut ids: Vec<&'static str> = Vec::new();
        for o in overloads {
            if o.member != target.is_some() {
                continue;
            }
            if name == operators::LOGICAL_AND || name == operators::LOGICAL_OR {
                let mut failed = false;
                for (i, t) in arg_types.iter().enumerate() {
                    if !self.mapping.is_assignable(t, &Type::Bool) {
                        self.report(args[i].id, format!("expected type 'bool' but found '{t}'"));
                        failed = true;
                    }
                }
                if failed {
                    self.set_type(e, Type::Error);
                    return;
                }
                self.set_type(e, Type::Bool);
                self.out.references.insert(e.id, Reference::Function { name: name.to_string(), overloads: vec![o.id] });
                return;
            }
            let mut fresh = HashMap::new();
            for p in &o.type_params {
                fresh.insert(p.clone(), self.new_type_var());
            }
            let params: Vec<Type> = o.params.iter().map(|t| instantiate(t, &fresh)).collect();
            let ret = instantiate(&o.result, &fresh);
            if params.len() == arg_types.len() && self.mapping.is_assignable_list(&arg_types, &params) {
                ids.push(o.id);
                let fn_result = self.mapping.substitute(&ret, false);
                result = Some(match result {
                    None => fn_result,
                    Some(r) if !r.is_dyn() && !fn_result.is_exact(&r) => Type::Dyn,
                    Some(r) => r,
                });
            }
        }
        match result {
            Some(t) => {
                self.set_type(e, t);
                self.out.references.insert(e.id, Reference::Function { name: name.to_string(), overloads: ids });
            }
            None => {
                let shown: Vec<String> =
                    arg_types.iter().map(|t| self.mapping.substitute(t, true).to_string()).collect();
                let signature = match target {
                    Some(_) => format!("{}.({})", shown[0], shown[1..].join(", ")),
                    None => format!("({})", shown.join(", ")),
                };
                self.report(e.id, format!("found no matching overload for '{name}' applied to '{signature}'"));
                self.set_type(e, Type::Error);
            }
        }
    }

    fn check_comprehension(&mut self, e: &IdedExpr, c: &ComprehensionExpr) {
        self.check(&c.iter_range);
        self.check(&c.accu_init);
        let range = self.mapping.substitute(&self.get_type(&c.iter_range), false);
        let accu_type = self.get_type(&c.accu_init);
        let depth = self.scopes.len();
        self.scopes.push((c.accu_var.clone(), accu_type.clone()));
        let (var, var2) = match &range {
            Type::List(elem) => {
                if c.iter_var2.is_some() {
                    (Type::Int, (**elem).clone())
                } else {
                    ((**elem).clone(), Type::Dyn)
                }
            }
            Type::Map(k, v) => ((**k).clone(), (**v).clone()),
            Type::Dyn | Type::Error | Type::Param(_) => {
                self.mapping.is_assignable(&Type::Dyn, &range);
                (Type::Dyn, Type::Dyn)
            }
            other => {
                self.report(
                    c.iter_range.id,
                    format!(
                        "expression of type '{other}' cannot be range of a comprehension (must be list, map, or dynamic)"
                    ),
                );
                (Type::Error, Type::Error)
            }
        };
        self.scopes.push((c.iter_var.clone(), var));
        if let Some(v2) = &c.iter_var2 {
            self.scopes.push((v2.clone(), var2));
        }
        self.check(&c.loop_cond);
        self.assert_type(&c.loop_cond, &Type::Bool);
        self.check(&c.loop_step);
        self.assert_type(&c.loop_step, &accu_type);
        self.scopes.truncate(depth + 1);
        self.check(&c.result);
        self.scopes.truncate(depth);
        let t = self.mapping.substitute(&self.get_type(&c.result), false);
        self.set_type(e, t);
    }

    fn assert_type(&mut self, e: &IdedExpr, t: &Type) {
        let actual = self.get_type(e);
        if !self.mapping.is_assignable(t, &actual) {
            self.report(e.id, format!("expected type '{t}' but found '{actual}'"));
        }
    }
}

/// `t` with its declared type parameters replaced by the fresh variables of one resolution.
fn instantiate(t: &Type, fresh: &HashMap<String, Type>) -> Type {
    match t {
        Type::Param(name) => fresh.get(&**name).cloned().unwrap_or_else(|| t.clone()),
        Type::List(e) => Type::list(instantiate(e, fresh)),
        Type::Map(k, v) => Type::map(instantiate(k, fresh), instantiate(v, fresh)),
        Type::Type(Some(p)) => Type::Type(Some(Arc::new(instantiate(p, fresh)))),
        Type::Opaque(n, params) => {
            Type::Opaque(n.clone(), params.iter().map(|p| instantiate(p, fresh)).collect::<Vec<_>>().into())
        }
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::env::Version;
    use crate::parse::parse;
    use crate::types::{namespace_type, request_type};

    fn env() -> Env {
        Env::new(Version::V1_32)
            .declare("object", Type::Dyn)
            .declare("request", request_type())
            .declare("namespaceObject", namespace_type())
            .declare("n", Type::Int)
            .declare("s", Type::String)
    }

    fn checked(source: &str) -> Checked {
        check(&parse(source, Version::V1_32).unwrap().expr, &env())
    }

    fn issues(source: &str) -> Vec<String> {
        checked(source).issues.into_iter().map(|(_, m)| m).collect()
    }

    fn output(source: &str) -> String {
        let p = parse(source, Version::V1_32).unwrap();
        check(&p.expr, &env()).type_of(p.expr.id).to_string()
    }

    #[test]
    fn operators_resolve_by_their_operands() {
        assert_eq!(output("n + 1"), "int");
        assert_eq!(issues("n + 's'"), ["found no matching overload for '_+_' applied to '(int, string)'"]);
        assert_eq!(issues("n == null"), ["found no matching overload for '_==_' applied to '(int, null)'"]);
        assert!(issues("n < 1.5 && n > 1u").is_empty(), "cross-type numeric comparisons");
        assert_eq!(output("[1, 2] + [3]"), "list(int)");
        assert_eq!(output("{'a': 1}['a']"), "int");
        assert_eq!(output("object.x + 1"), "int", "dyn takes the overload the other operand picks");
    }

    #[test]
    fn names_must_be_declared() {
        assert_eq!(issues("foo == 1"), ["undeclared reference to 'foo' (in container '')"]);
        assert_eq!(issues("s.reverse() == ''"), ["undeclared reference to 'reverse' (in container '')"]);
        let mut math = issues("math.abs(-1) == 1");
        math.sort();
        assert_eq!(
            math,
            ["undeclared reference to 'abs' (in container '')", "undeclared reference to 'math' (in container '')"]
        );
        assert_eq!(output("type(n) == int"), "bool");
        assert_eq!(output("google.protobuf.Timestamp"), "type(timestamp)");
    }

    #[test]
    fn library_functions_are_typed() {
        assert_eq!(output("quantity('1Gi').isGreaterThan(quantity('1G'))"), "bool");
        assert_eq!(output("cidr('10.0.0.0/8').ip()"), "net.IP");
        assert_eq!(issues("isIP(1)"), ["found no matching overload for 'isIP' applied to '(int)'"]);
        assert_eq!(output("format.dns1123Label().validate(s)"), "optional_type(list(string))");
        assert_eq!(output("optional.of(1).orValue(2)"), "int");
        assert_eq!(output("[1, 2].sum()"), "int");
        assert_eq!(output("url(s).getQuery()"), "map(string, list(string))");
        assert_eq!(output("sets.contains([1], [1])"), "bool");
    }

    #[test]
    fn fields_are_checked_on_declared_objects() {
        assert_eq!(issues("request.foo == 'x'"), ["undefined field 'foo'"]);
        assert_eq!(output("request.userInfo.groups"), "list(string)");
        assert_eq!(issues("s.x"), ["type 'string' does not support field selection"]);
        assert_eq!(output("request.?name"), "optional_type(string)");
    }

    #[test]
    fn comprehensions_type_their_variables() {
        assert_eq!(output("[1, 2].map(x, x * 2)"), "list(int)");
        assert_eq!(output("[1, 2].all(x, x > 0)"), "bool");
        assert_eq!(output("{'a': 1}.transformMap(k, v, v + 1)"), "map(string, int)");
        assert_eq!(
            issues("1.all(x, x > 0)"),
            ["expression of type 'int' cannot be range of a comprehension (must be list, map, or dynamic)"]
        );
        assert_eq!(output("[1].exists(x, object.y == x)"), "bool");
    }

    #[test]
    fn mixed_literals_are_dyn_for_the_validator_to_judge() {
        assert_eq!(output("[1, 'a']"), "list(dyn)");
    }
}
