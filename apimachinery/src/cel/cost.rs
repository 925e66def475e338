//! cel-go's static cost estimate (`checker.Cost`, cel-go 0.17) over the crate's syntax tree,
//! with kube's estimates of library functions (`library.CostEstimator`) and kube's sizes of
//! schema-typed variables (the declarations of [`super::decl`]).
//!
//! kube refuses a CRD whose `x-kubernetes-validations` rules could cost too much before they
//! ever run: every rule's worst case, times how often its node can repeat in one request, must
//! stay within a budget. The estimate is an upper bound of what evaluation would cost in
//! cel-go's units: one unit per identifier, selection and O(1) call, a tenth of a unit per
//! character a string function traverses, list and map literals 10 and 30, and a
//! comprehension's body once per element its range can have. A range whose size nothing bounds
//! (a list without `maxItems` of strings without `maxLength`) is bounded by what fits in a
//! 3 MiB request, which is what makes unbounded rules expensive.
//!
//! Nodes are typed by the checker ([`super::check::Checked::types`]); where it has less
//! information than cel-go (an unknown type), the estimate errs high for selections and
//! sizes, never low.

use std::collections::HashMap;

use cel::common::ast::{CallExpr, EntryExpr, Expr, IdedExpr, LiteralValue};

use super::check::Checked;
use super::decl::DeclType;
use super::types::Type;
use super::{Program, functions};

/// A cost or a size, as the least and the most it can be; arithmetic saturates.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Estimate {
    /// The least.
    pub min: u64,
    /// The most.
    pub max: u64,
}

/// cel-go's `common.StringTraversalCostFactor`.
const TRAVERSAL: f64 = 0.1;
/// cel-go's `common.RegexStringLengthCostFactor`.
const REGEX: f64 = 0.25;
const UNBOUNDED: Estimate = Estimate { min: 0, max: u64::MAX };

impl Estimate {
    /// Exactly `n`.
    pub const fn exact(n: u64) -> Estimate {
        Estimate { min: n, max: n }
    }

    fn add(self, o: Estimate) -> Estimate {
        Estimate { min: self.min.saturating_add(o.min), max: self.max.saturating_add(o.max) }
    }

    fn mul(self, o: Estimate) -> Estimate {
        Estimate { min: self.min.saturating_mul(o.min), max: self.max.saturating_mul(o.max) }
    }

    /// Times a cost factor, rounded up (cel-go's `MultiplyByCostFactor`).
    fn factor(self, f: f64) -> Estimate {
        let scale = |x: u64| {
            let y = (x as f64 * f).ceil();
            if y >= u64::MAX as f64 { u64::MAX } else { y as u64 }
        };
        Estimate { min: scale(self.min), max: scale(self.max) }
    }

    fn union(self, o: Estimate) -> Estimate {
        Estimate { min: self.min.min(o.min), max: self.max.max(o.max) }
    }
}

/// The estimated cost of `program`, checked as `checked`, with the variables `roots` typed by
/// their declarations (kube's `self` and `oldSelf`, whose sizes bound the estimate).
pub fn estimate(program: &Program, checked: &Checked, roots: &[(&str, &DeclType)]) -> Estimate {
    let mut c =
        Coster { types: &checked.types, roots, paths: HashMap::new(), sizes: HashMap::new(), ranges: Vec::new() };
    c.cost(program.expression())
}

/// Where a value comes from: a root variable, then fields, `@items`, `@keys` and `@values`.
type FieldPath = Vec<String>;

struct Coster<'a> {
    types: &'a HashMap<u64, Type>,
    roots: &'a [(&'a str, &'a DeclType)],
    /// The path of the value of each node that has one.
    paths: HashMap<u64, FieldPath>,
    /// Sizes of results computed from their operands (concatenations, comprehensions).
    sizes: HashMap<u64, Estimate>,
    /// Comprehension variables in scope with their range's node, innermost last.
    ranges: Vec<(String, u64)>,
}

impl Coster<'_> {
    fn ty(&self, e: &IdedExpr) -> &Type {
        self.types.get(&e.id).unwrap_or(&Type::Unknown)
    }

    fn extend_path(&mut self, e: &IdedExpr, from: u64, step: &str) {
        if let Some(mut p) = self.paths.get(&from).cloned() {
            p.push(step.to_string());
            self.paths.insert(e.id, p);
        }
    }

    fn cost(&mut self, e: &IdedExpr) -> Estimate {
        match &e.expr {
            Expr::Literal(_) | Expr::Unspecified => Estimate::default(),
            Expr::Ident(name) => {
                match self.ranges.iter().rev().find(|(v, _)| v == name).map(|(_, r)| *r) {
                    Some(range) => match self.types.get(&range) {
                        Some(Type::List(_)) => self.extend_path(e, range, "@items"),
                        Some(Type::Map(..)) => self.extend_path(e, range, "@keys"),
                        _ => {}
                    },
                    None => {
                        self.paths.insert(e.id, vec![name.clone()]);
                    }
                }
                Estimate::exact(1)
            }
            Expr::Select(s) => {
                let operand = self.cost(&s.operand);
                if s.test {
                    return operand.add(Estimate::exact(1));
                }
                let on_fields = matches!(self.ty(&s.operand), Type::Map(..) | Type::Object(_) | Type::Unknown);
                self.extend_path(e, s.operand.id, &s.field);
                operand.add(Estimate::exact(on_fields as u64))
            }
            Expr::Call(c) => self.call(e, c),
            Expr::List(l) => l.elements.iter().fold(Estimate::exact(10), |sum, x| sum.add(self.cost(x))),
            Expr::Map(m) => m.entries.iter().fold(Estimate::exact(30), |sum, entry| match &entry.expr {
                EntryExpr::MapEntry(me) => sum.add(self.cost(&me.key)).add(self.cost(&me.value)),
                EntryExpr::StructField(f) => sum.add(self.cost(&f.value)),
            }),
            Expr::Struct(s) => s.entries.iter().fold(Estimate::exact(40), |sum, entry| match &entry.expr {
                EntryExpr::StructField(f) => sum.add(self.cost(&f.value)),
                EntryExpr::MapEntry(me) => sum.add(self.cost(&me.value)),
            }),
            Expr::Comprehension(c) => {
                let mut sum = self.cost(&c.iter_range).add(self.cost(&c.accu_init));
                self.ranges.push((c.iter_var.clone(), c.iter_range.id));
                let per_element = self.cost(&c.loop_cond).add(self.cost(&c.loop_step));
                self.ranges.pop();
                sum = sum.add(self.cost(&c.result));
                let count = self.size(&c.iter_range);
                self.sizes.insert(e.id, count);
                sum.add(count.mul(per_element))
            }
        }
    }

    /// cel-go's `sizeEstimate`: computed from the expression, else from the declarations, else
    /// 1 for fixed-size scalars, else anything.
    fn size(&self, e: &IdedExpr) -> Estimate {
        if let Some(s) = self.computed_size(e) {
            return s;
        }
        if let Some(s) = self.declared_size(e) {
            return s;
        }
        match self.ty(e) {
            Type::Bool | Type::Double | Type::Duration | Type::Int | Type::Timestamp | Type::Uint => Estimate::exact(1),
            _ => UNBOUNDED,
        }
    }

    fn computed_size(&self, e: &IdedExpr) -> Option<Estimate> {
        if let Some(s) = self.sizes.get(&e.id) {
            return Some(*s);
        }
        Some(Estimate::exact(match &e.expr {
            Expr::Literal(LiteralValue::String(s)) => s.inner().chars().count() as u64,
            Expr::Literal(LiteralValue::Bytes(b)) => b.len() as u64,
            Expr::Literal(_) => 1,
            Expr::List(l) => l.elements.len() as u64,
            Expr::Map(m) => m.entries.len() as u64,
            _ => return None,
        }))
    }

    /// kube's size estimator: the declared largest size of the value the path leads to.
    fn declared_size(&self, e: &IdedExpr) -> Option<Estimate> {
        let path = self.paths.get(&e.id)?;
        let (_, root) = self.roots.iter().find(|(name, _)| *name == path[0])?;
        let mut node: &DeclType = root;
        for step in &path[1..] {
            node = match step.as_str() {
                "@items" | "@values" => node.elem()?,
                // Map keys are strings kube declares without a size.
                "@keys" => return Some(Estimate::default()),
                field => node.field(field)?,
            };
        }
        Some(Estimate { min: 0, max: node.max_elements })
    }

    fn call(&mut self, e: &IdedExpr, c: &CallExpr) -> Estimate {
        let args_cost: Vec<Estimate> = c.args.iter().map(|a| self.cost(a)).collect();
        let arg_sum = args_cost.iter().fold(Estimate::default(), |s, a| s.add(*a));
        // `math.abs(x)` is a namespaced global function, not a method of anything.
        let global_name = c.target.as_ref().and_then(|t| match &t.expr {
            Expr::Ident(ns) if !self.roots.iter().any(|(r, _)| r == ns) => {
                let q = format!("{ns}.{}", c.func_name);
                functions::is_global(&q).then_some(q)
            }
            _ => None,
        });
        let (target, name) = match (&c.target, global_name) {
            (_, Some(q)) => (None, q),
            (Some(t), None) => (Some(&**t), c.func_name.clone()),
            (None, None) => (None, c.func_name.clone()),
        };
        let target_cost = target.map(|t| self.cost(t)).unwrap_or_default();
        if name == cel::common::ast::operators::INDEX && c.args.len() == 2 {
            match self.ty(&c.args[0]) {
                Type::List(_) => self.extend_path(e, c.args[0].id, "@items"),
                Type::Map(..) => self.extend_path(e, c.args[0].id, "@values"),
                _ => {}
            }
        }
        let (cost, result_size) = self.function(&name, target, &c.args, &args_cost, arg_sum);
        if let Some(s) = result_size {
            self.sizes.insert(e.id, s);
        }
        target_cost.add(cost)
    }

    /// A function's own cost (its arguments' included, its target's not) and the size of its
    /// result where it is known: kube's library estimates first, then cel-go's.
    fn function(
        &self,
        name: &str,
        target: Option<&IdedExpr>,
        args: &[IdedExpr],
        args_cost: &[Estimate],
        arg_sum: Estimate,
    ) -> (Estimate, Option<Estimate>) {
        use cel::common::ast::operators as ops;
        let string_like = |t: &Type| matches!(t, Type::String | Type::Bytes);
        let traversal = |e: &IdedExpr| self.size(e).factor(TRAVERSAL);
        // kube's `library.CostEstimator` (the functions of this environment it knows).
        if let Some(t) = target {
            match name {
                "indexOf" | "lastIndexOf" => return (traversal(t).add(arg_sum), None),
                "lowerAscii" | "upperAscii" | "substring" | "trim" => {
                    return (traversal(t).add(arg_sum), Some(self.size(t)));
                }
                "replace" if args.len() >= 2 => {
                    let (sz, from, to) = (self.size(t), self.size(&args[0]), self.size(&args[1]));
                    let max = if from.min == 0 {
                        sz.max.saturating_add(1).saturating_mul(to.max).saturating_add(sz.max)
                    } else if to.max <= from.min {
                        sz.max
                    } else {
                        sz.max.div_ceil(from.min).saturating_mul(to.max)
                    };
                    return (sz.factor(2.0 * TRAVERSAL).add(arg_sum), Some(Estimate { min: 0, max }));
                }
                "split" => {
                    let sz = self.size(t);
                    let max = match args.get(1).map(|a| &a.expr) {
                        Some(Expr::Literal(LiteralValue::Int(n))) => (*n.inner()).max(0) as u64,
                        _ => sz.max,
                    };
                    return (sz.factor(2.0 * TRAVERSAL).add(arg_sum), Some(Estimate { min: 0, max }));
                }
                "join" => {
                    let list = self.size(t);
                    let elem = self.element_size(t).unwrap_or_default();
                    let mut sz = list.mul(elem);
                    if let Some(sep) = args.first() {
                        let separators = Estimate { min: list.min.saturating_sub(1), max: list.max.saturating_sub(1) };
                        sz = sz.add(self.size(sep).mul(separators));
                    }
                    return (sz.factor(TRAVERSAL).add(arg_sum), Some(sz));
                }
                _ => {}
            }
        }
        // cel-go's own estimates of its O(n) and O(nm) functions.
        let size = |i: usize| self.size(&args[i]);
        let ty = |i: usize| self.ty(&args[i]);
        let sizes_compared = |a: Estimate, b: Estimate| {
            let smallest = a.max.min(b.max);
            Estimate { min: (smallest > 0) as u64, max: smallest }.factor(TRAVERSAL)
        };
        match (name, target, args.len()) {
            ("format", Some(t), _) => return (traversal(t).add(arg_sum), None),
            ("bytes", None, 1) if matches!(ty(0), Type::String) => {
                let sz = size(0);
                return (
                    sz.factor(TRAVERSAL).add(arg_sum),
                    Some(Estimate { min: sz.min, max: sz.max.saturating_mul(4) }),
                );
            }
            ("string", None, 1) if matches!(ty(0), Type::Bytes) => {
                let sz = size(0);
                return (sz.factor(TRAVERSAL).add(arg_sum), Some(Estimate { min: sz.min / 4, max: sz.max }));
            }
            ("strings.quote", None, 1) => {
                let sz = size(0);
                let out = Estimate { min: sz.min.saturating_add(2), max: sz.max.saturating_mul(2).saturating_add(2) };
                return (sz.factor(TRAVERSAL).add(arg_sum), Some(out));
            }
            ("startsWith" | "endsWith", Some(_), 1) => return (size(0).factor(TRAVERSAL).add(arg_sum), None),
            (ops::IN, None, 2) if matches!(ty(1), Type::List(_)) => return (size(1).add(arg_sum), None),
            ("matches", Some(t), 1) => {
                let s = self.size(t).add(Estimate::exact(1)).factor(TRAVERSAL);
                return (s.mul(size(0).factor(REGEX)).add(arg_sum), None);
            }
            ("contains", Some(t), 1) => return (traversal(t).mul(size(0).factor(TRAVERSAL)).add(arg_sum), None),
            (ops::LOGICAL_AND | ops::LOGICAL_OR, None, 2) => {
                let (l, r) = (args_cost[0], args_cost[1]);
                return (Estimate { min: l.min, max: l.add(r).max }, None);
            }
            (ops::CONDITIONAL, None, 3) => {
                let out = size(1).union(size(2));
                return (args_cost[0].add(args_cost[1].union(args_cost[2])), Some(out));
            }
            (ops::ADD, None, 2) => {
                let (a, b) = (ty(0), ty(1));
                let sum = size(0).add(size(1));
                if matches!(a, Type::List(_)) || matches!(b, Type::List(_)) {
                    return (Estimate::exact(1).add(arg_sum), Some(sum));
                }
                if string_like(a) || string_like(b) {
                    return (sum.factor(TRAVERSAL).add(arg_sum), Some(sum));
                }
                if a.is_open() && b.is_open() {
                    // Any overload may apply: the costliest is the string one.
                    return (sum.factor(TRAVERSAL).union(Estimate::exact(1)).add(arg_sum), None);
                }
            }
            (ops::EQUALS | ops::NOT_EQUALS, None, 2) => return (sizes_compared(size(0), size(1)).add(arg_sum), None),
            (ops::LESS | ops::LESS_EQUALS | ops::GREATER | ops::GREATER_EQUALS, None, 2) => {
                let (a, b) = (ty(0), ty(1));
                if string_like(a) || string_like(b) || (a.is_open() && b.is_open()) {
                    let c = sizes_compared(size(0), size(1));
                    let c = if string_like(a) || string_like(b) { c } else { c.union(Estimate::exact(1)) };
                    return (c.add(arg_sum), None);
                }
            }
            _ => {}
        }
        (Estimate::exact(1).add(arg_sum), None)
    }

    /// The size of the elements of the list `e`, where its path leads to a declaration.
    fn element_size(&self, e: &IdedExpr) -> Option<Estimate> {
        if !matches!(self.ty(e), Type::List(_)) {
            return None;
        }
        let mut path = self.paths.get(&e.id)?.clone();
        path.push("@items".into());
        let (_, root) = self.roots.iter().find(|(name, _)| *name == path[0])?;
        let mut node: &DeclType = root;
        for step in &path[1..] {
            node = match step.as_str() {
                "@items" | "@values" => node.elem()?,
                field => node.field(field)?,
            };
        }
        Some(Estimate { min: 0, max: node.max_elements })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cel::{Declarations, check};
    use serde_json::json;

    fn max(rule: &str, schema: serde_json::Value) -> u64 {
        let decl = DeclType::of(&schema, false).unwrap();
        let p = Program::compile(rule).unwrap();
        let decls = Declarations::new().declare("self", decl.cel_type("selfType"));
        let checked = check(&p, &decls);
        assert!(checked.issues.is_empty(), "{:?}", checked.issues);
        estimate(&p, &checked, &[("self", &decl)]).max
    }

    #[test]
    fn constants_identifiers_and_selections_cost_what_cel_go_charges() {
        let s = json!({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}});
        // self (1) .a (1) > 1 (0) call (1), twice, and `&&` adds nothing.
        assert_eq!(max("self.a > 1 && self.b > 1", s.clone()), 6);
        assert_eq!(max("has(self.a)", s), 2);
    }

    #[test]
    fn comprehensions_cost_their_body_once_per_declared_element() {
        let bounded = json!({"type": "object", "properties": {"items": {"type": "array", "maxItems": 10,
            "items": {"type": "string", "maxLength": 10}}}});
        let unbounded = json!({"type": "object", "properties": {"items": {"type": "array",
            "items": {"type": "string"}}}});
        let rule = "self.items.all(x, x.startsWith('a'))";
        let small = max(rule, bounded.clone());
        let large = max(rule, unbounded.clone());
        assert!(small < 100, "{small}");
        assert!(large > 1_000_000, "unbounded lists are bounded by the request size: {large}");
        let quadratic = "self.items.all(x, self.items.all(y, x == y))";
        assert!(max(quadratic, unbounded) > 10_000_000_000);
        assert!(max(quadratic, bounded) < 10_000);
    }

    #[test]
    fn string_functions_traverse_their_declared_length() {
        let s = json!({"type": "object", "properties": {"s": {"type": "string", "maxLength": 100}}});
        // 400 bytes at a tenth of a unit each (times the two characters', rounded up to 1),
        // plus self.s (2).
        assert_eq!(max("self.s.contains('ab')", s.clone()), 2 + 40);
        // The result is as long as the input; compared with one character, it costs one more.
        assert_eq!(max("self.s.lowerAscii() == 'x'", s), 2 + 40 + 1);
    }
}
