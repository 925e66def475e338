//! cel-go's static cost estimate (`checker.Cost`, cel-go 0.22) over a checked expression, with
//! kube's estimates of its library functions (`library.CostEstimator.EstimateCallCost`), the
//! sets extension's, presence tests free (`PresenceTestHasCost(false)`), and sizes from a
//! [`SizeEstimator`] (for CRD rules: the schema's `maxLength`, `maxItems`, `maxProperties`).
//!
//! The estimate is an upper bound in cel-go's units: one per identifier, selection and O(1)
//! call, a tenth per character a string function traverses, 10 and 30 for list and map
//! literals, and a comprehension's body once per element its range may have.

use std::collections::HashMap;
use std::ops::{Add, Mul};

use cel::common::ast::{CallExpr, EntryExpr, Expr, IdedExpr, LiteralValue};

use crate::check::{Checked, Reference};
use crate::cost::runtime::{REGEX, TRAVERSAL};
use crate::parse::ACCUMULATOR;
use crate::types::Type;

/// A cost or a size: the least and the most it can be. Arithmetic saturates.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Estimate {
    /// The least.
    pub min: u64,
    /// The most.
    pub max: u64,
}

/// The most anything can be.
pub const UNBOUNDED: Estimate = Estimate { min: 0, max: u64::MAX };

/// The sum, saturating.
impl std::ops::Add for Estimate {
    type Output = Estimate;
    fn add(self, o: Estimate) -> Estimate {
        Estimate { min: self.min.saturating_add(o.min), max: self.max.saturating_add(o.max) }
    }
}

/// The product, saturating.
impl std::ops::Mul for Estimate {
    type Output = Estimate;
    fn mul(self, o: Estimate) -> Estimate {
        Estimate { min: self.min.saturating_mul(o.min), max: self.max.saturating_mul(o.max) }
    }
}

impl Estimate {
    /// Exactly `n`.
    pub const fn exact(n: u64) -> Estimate {
        Estimate { min: n, max: n }
    }

    /// Times a cost factor, rounded up (cel-go's `MultiplyByCostFactor`).
    pub fn factor(self, f: f64) -> Estimate {
        let scale = |x: u64| {
            let xf = x as f64;
            if xf > 0.0 && f > 0.0 && xf > u64::MAX as f64 / f {
                return u64::MAX;
            }
            let y = (xf * f).ceil();
            if y >= 18_446_744_073_709_551_616.0 { u64::MAX } else { y as u64 }
        };
        Estimate { min: scale(self.min), max: scale(self.max) }
    }

    /// The range covering both.
    pub fn union(self, o: Estimate) -> Estimate {
        Estimate { min: self.min.min(o.min), max: self.max.max(o.max) }
    }
}

/// Sizes of values an expression reads, by the path it reads them at (a variable, then field
/// names and `@items`, `@keys`, `@values`, when the value comes from a variable) and their
/// type: cel-go's `CostEstimator.EstimateSize`.
pub trait SizeEstimator {
    /// The size of a value of type `t` read at `path`, if known.
    fn estimate_size(&self, path: Option<&[String]>, t: &Type) -> Option<Estimate>;
}

/// No sizes known: what kube estimates with outside CRDs.
pub struct NoSizes;

impl SizeEstimator for NoSizes {
    fn estimate_size(&self, _: Option<&[String]>, _: &Type) -> Option<Estimate> {
        None
    }
}

/// The estimated cost of `expr`, checked as `checked`.
pub fn estimate(expr: &IdedExpr, checked: &Checked, sizes: &dyn SizeEstimator) -> Estimate {
    let mut c = Coster { checked, sizes, paths: HashMap::new(), ranges: HashMap::new(), computed: HashMap::new() };
    c.cost(expr)
}

/// What the estimator knows of a node: cel-go's `AstNode`.
struct Node<'e> {
    path: Option<Vec<String>>,
    t: Type,
    expr: &'e IdedExpr,
    derived: Option<Estimate>,
}

impl Node<'_> {
    /// cel-go's `ComputedSize`.
    fn computed_size(&self) -> Option<Estimate> {
        if let Some(d) = self.derived {
            return Some(d);
        }
        Some(Estimate::exact(match &self.expr.expr {
            Expr::Literal(LiteralValue::String(s)) => s.inner().chars().count() as u64,
            Expr::Literal(LiteralValue::Bytes(b)) => b.inner().len() as u64,
            Expr::Literal(_) => 1,
            Expr::List(l) => l.elements.len() as u64,
            Expr::Map(m) => m.entries.len() as u64,
            _ => return None,
        }))
    }
}

struct Coster<'a> {
    checked: &'a Checked,
    sizes: &'a dyn SizeEstimator,
    paths: HashMap<u64, Vec<String>>,
    /// Iteration variables in scope and their ranges' ids, innermost last.
    ranges: HashMap<String, Vec<u64>>,
    computed: HashMap<u64, Estimate>,
}

impl<'a> Coster<'a> {
    fn ty(&self, e: &IdedExpr) -> Type {
        self.checked.type_of(e.id)
    }

    fn node<'e>(&self, e: &'e IdedExpr) -> Node<'e> {
        let path = self.paths.get(&e.id).filter(|p| p.first().is_none_or(|r| r != ACCUMULATOR)).cloned();
        Node { path, t: self.ty(e), expr: e, derived: self.computed.get(&e.id).copied() }
    }

    /// cel-go's `sizeEstimate`.
    fn size(&self, n: &Node<'_>) -> Estimate {
        if let Some(s) = n.computed_size() {
            return s;
        }
        if let Some(s) = self.sizes.estimate_size(n.path.as_deref(), &n.t) {
            return s;
        }
        if n.t.is_scalar() { Estimate::exact(1) } else { UNBOUNDED }
    }

    fn cost(&mut self, e: &IdedExpr) -> Estimate {
        match &e.expr {
            Expr::Literal(_) | Expr::Unspecified => Estimate::default(),
            Expr::Ident(name) => self.ident(e, name),
            Expr::Select(s) => {
                if let Some(Reference::Variable(name) | Reference::TypeName(name)) = self.checked.references.get(&e.id)
                {
                    let name = name.clone();
                    return self.ident(e, &name);
                }
                if s.test {
                    // Presence tests are free in kube's environment.
                    return self.cost(&s.operand);
                }
                let mut sum = self.cost(&s.operand);
                if matches!(self.ty(&s.operand), Type::Map(..) | Type::Object(_) | Type::Param(_)) {
                    sum = sum.add(Estimate::exact(1));
                }
                let mut path = self.paths.get(&s.operand.id).cloned().unwrap_or_default();
                path.push(s.field.clone());
                self.paths.insert(e.id, path);
                sum
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
                self.ranges.entry(c.iter_var.clone()).or_default().push(c.iter_range.id);
                let loop_cost = self.cost(&c.loop_cond);
                let step_cost = self.cost(&c.loop_step);
                if let Some(stack) = self.ranges.get_mut(&c.iter_var) {
                    stack.pop();
                }
                sum = sum.add(self.cost(&c.result));
                let count = self.size(&self.node(&c.iter_range));
                self.computed.insert(e.id, count);
                sum.add(count.mul(step_cost.add(loop_cost)))
            }
        }
    }

    fn ident(&mut self, e: &IdedExpr, name: &str) -> Estimate {
        let range = self.ranges.get(name).and_then(|s| s.last().copied());
        match range {
            Some(range) => {
                let step = match self.checked.type_of(range) {
                    Type::List(_) => Some("@items"),
                    Type::Map(..) => Some("@keys"),
                    _ => None,
                };
                if let Some(step) = step {
                    let mut path = self.paths.get(&range).cloned().unwrap_or_default();
                    path.push(step.to_string());
                    self.paths.insert(e.id, path);
                }
            }
            None => {
                self.paths.insert(e.id, vec![name.to_string()]);
            }
        }
        Estimate::exact(1)
    }

    fn call(&mut self, e: &IdedExpr, c: &CallExpr) -> Estimate {
        let args_cost: Vec<Estimate> = c.args.iter().map(|a| self.cost(a)).collect();
        let (name, overloads) = match self.checked.references.get(&e.id) {
            Some(Reference::Function { name, overloads }) => (name.clone(), overloads.clone()),
            _ => return Estimate::default(),
        };
        if overloads.is_empty() {
            return Estimate::default();
        }
        // A namespaced function (`optional.of`) has no receiver once checked.
        let target = c.target.as_deref().filter(|_| name == c.func_name);
        let mut sum = Estimate::default();
        if let Some(t) = target {
            sum = sum.add(self.cost(t));
        }
        let mut fn_cost = Estimate { min: u64::MAX, max: 0 };
        let mut result_size: Option<Estimate> = None;
        for overload in &overloads {
            let (cost, size) = self.function_cost(&name, overload, target, &c.args, &args_cost);
            fn_cost = fn_cost.union(cost);
            if let Some(s) = size {
                result_size = Some(result_size.map_or(s, |r| r.union(s)));
            }
            let step = match *overload {
                "index_list" => Some("@items"),
                "index_map" => Some("@values"),
                _ => None,
            };
            if let (Some(step), Some(a)) = (step, c.args.first()) {
                let mut path = self.paths.get(&a.id).cloned().unwrap_or_default();
                path.push(step.to_string());
                self.paths.insert(e.id, path);
            }
        }
        if let Some(s) = result_size {
            self.computed.insert(e.id, s);
        }
        sum.add(fn_cost)
    }

    /// The node of a list's elements: its element type, at the list's path plus `@items`.
    fn list_element(&self, list: &Node<'_>) -> Option<(Option<Vec<String>>, Type)> {
        let Type::List(elem) = &list.t else { return None };
        let path = list.path.clone().map(|mut p| {
            p.push("@items".into());
            p
        });
        Some((path, (**elem).clone()))
    }

    /// kube's `sizeEstimate` of an element node: no fallback for scalars.
    fn element_size(&self, path: Option<Vec<String>>, t: &Type) -> Estimate {
        self.sizes.estimate_size(path.as_deref(), t).unwrap_or(UNBOUNDED)
    }

    /// kube's `EstimateCallCost`: `None` where kube has no estimate.
    fn kube_cost(
        &self,
        function: &str,
        overload: &str,
        target: Option<&Node<'_>>,
        args: &[Node<'_>],
    ) -> Option<(Estimate, Option<Estimate>)> {
        let one = || Some((Estimate::exact(1), None));
        match function {
            "check" => Some((Estimate::exact(350_000), None)),
            "serviceAccount" | "path" | "group" | "resource" | "subresource" | "namespace" | "name" | "allowed"
            | "reason" | "error" | "errored" => one(),
            "fieldSelector" | "labelSelector" if args.len() == 1 => {
                let len = self.size(&args[0]);
                let parse = len.factor(TRAVERSAL);
                let requirements = len.factor(0.5);
                let per = requirements.factor(50.0);
                Some((Estimate::exact(10).add(parse).add(per), None))
            }
            "isSorted" | "sum" | "max" | "min" | "indexOf" | "lastIndexOf" => {
                let target = target?;
                match self.list_element(target) {
                    Some((path, t)) => {
                        let mut elem = Estimate::exact(1);
                        if matches!(t, Type::String | Type::Bytes) {
                            elem = elem.add(self.element_size(path, &t).factor(TRAVERSAL));
                        }
                        Some((self.size(target).mul(elem), None))
                    }
                    None => Some((self.size(target).factor(TRAVERSAL), None)),
                }
            }
            "url" | "jsonpatch.escapeKey" if args.len() == 1 => {
                let sz = self.size(&args[0]);
                Some((sz.factor(TRAVERSAL), Some(sz)))
            }
            "lowerAscii" | "upperAscii" | "substring" | "trim" => {
                let sz = self.size(target?);
                Some((sz.factor(TRAVERSAL), Some(sz)))
            }
            "replace" if target.is_some() && args.len() >= 2 => {
                let sz = self.size(target?);
                let (from, to) = (self.size(&args[0]), self.size(&args[1]));
                let mut count = Estimate::default();
                let mut retained = Estimate::default();
                if from.min == 0 {
                    count.max = if sz.max < u64::MAX { sz.max + 1 } else { sz.max };
                    retained.max = sz.max;
                } else if to.max <= from.min {
                    retained.max = sz.max;
                } else {
                    count.max = (sz.max as f64 / from.min as f64).ceil() as u64;
                }
                if from.max == 0 {
                    count.min = if sz.min < u64::MAX { sz.min + 1 } else { sz.min };
                    retained.min = sz.min;
                } else if from.max <= to.min {
                    retained.min = sz.min;
                } else {
                    count.min = (sz.min as f64 / from.max as f64).ceil() as u64;
                }
                let size = count.mul(to).add(retained);
                Some((sz.factor(2.0 * TRAVERSAL), Some(size)))
            }
            "split" => {
                let sz = self.size(target?);
                let mut max = sz.max;
                if args.len() > 1
                    && let Expr::Literal(LiteralValue::Int(i)) = &args[1].expr.expr
                {
                    max = *i.inner() as u64;
                }
                Some((sz.factor(2.0 * TRAVERSAL), Some(Estimate { min: 0, max })))
            }
            "join" => {
                let target = target?;
                let list = self.size(target);
                let mut sz = Estimate::default();
                if let Some((path, t)) = self.list_element(target) {
                    sz = list.mul(self.element_size(path, &t));
                }
                if let Some(sep) = args.first() {
                    let seps = Estimate { min: list.min.saturating_sub(1), max: list.max.saturating_sub(1) };
                    sz = sz.add(self.size(sep).mul(seps));
                }
                Some((sz.factor(TRAVERSAL), Some(sz)))
            }
            "find" | "findAll" if target.is_some() && !args.is_empty() => {
                let sz = self.size(target?);
                let str_cost = sz.add(Estimate::exact(1)).factor(TRAVERSAL);
                let regex_cost = self.size(&args[0]).factor(REGEX);
                Some((str_cost.mul(regex_cost), Some(Estimate { min: 0, max: sz.max })))
            }
            // kube tests a pointer to the target, which is never nil: these hold for global
            // calls too.
            "cidr" | "isIP" | "isCIDR" if !args.is_empty() => Some((self.size(&args[0]).factor(TRAVERSAL), None)),
            "ip" => {
                if !args.is_empty() {
                    if overload == "cidr_ip" {
                        return one();
                    }
                    return Some((self.size(&args[0]).factor(TRAVERSAL), None));
                }
                one()
            }
            "ip.isCanonical" if !args.is_empty() => Some((self.size(&args[0]).factor(2.0 * TRAVERSAL), None)),
            "masked"
            | "prefixLength"
            | "family"
            | "isUnspecified"
            | "isLoopback"
            | "isLinkLocalMulticast"
            | "isLinkLocalUnicast"
            | "isGlobalUnicast" => one(),
            "containsIP" | "containsCIDR" if target.is_some() && !args.is_empty() => {
                let sz = Estimate { min: 4, max: 16 };
                let mut cost = sz.add(sz).factor(TRAVERSAL);
                if function == "containsCIDR" {
                    cost = cost.add(sz.factor(TRAVERSAL)).add(Estimate::exact(1));
                }
                if matches!(overload, "cidr_contains_ip_string" | "cidr_contains_cidr_string") {
                    cost = cost.add(self.size(&args[0]).factor(TRAVERSAL));
                }
                Some((cost, None))
            }
            "quantity" | "isQuantity" if !args.is_empty() => Some((self.size(&args[0]).factor(TRAVERSAL), None)),
            "validate" if !args.is_empty() => Some((self.size(&args[0]).factor(TRAVERSAL).factor(128.0 * REGEX), None)),
            "format.named" => one(),
            "sign" | "asInteger" | "isInteger" | "asApproximateFloat" | "isGreaterThan" | "isLessThan"
            | "compareTo" | "add" | "sub" => one(),
            "getScheme" | "getHostname" | "getHost" | "getPort" | "getEscapedPath" | "getQuery" => one(),
            "_==_" if args.len() == 2 && args[0].t.is_exact(&args[1].t) => match &args[0].t {
                Type::Opaque(n, _) if matches!(&**n, "net.IP" | "net.CIDR") => one(),
                Type::Object(o) => match o.name() {
                    "kubernetes.Quantity"
                    | "kubernetes.authorization.Authorizer"
                    | "kubernetes.authorization.PathCheck"
                    | "kubernetes.authorization.GroupCheck"
                    | "kubernetes.authorization.ResourceCheck"
                    | "kubernetes.authorization.Decision" => one(),
                    "kubernetes.NamedFormat" => Some((Estimate { min: 1, max: 64 }.factor(TRAVERSAL), None)),
                    "kubernetes.URL" => {
                        let mut size = Estimate::exact(1);
                        if let (Some(r), Some(_)) = (args[1].computed_size(), args[1].computed_size()) {
                            size = r.union(r);
                        }
                        Some((Estimate { min: 1, max: size.max }.factor(TRAVERSAL), None))
                    }
                    _ => None,
                },
                _ => None,
            },
            _ => None,
        }
    }

    /// cel-go's `functionCost`: a call's cost with its arguments', and its result's size.
    fn function_cost(
        &self,
        function: &str,
        overload: &str,
        target: Option<&IdedExpr>,
        args: &[IdedExpr],
        args_cost: &[Estimate],
    ) -> (Estimate, Option<Estimate>) {
        let arg_sum = args_cost.iter().fold(Estimate::default(), |s, a| s.add(*a));
        let target_node = target.map(|t| self.node(t));
        let arg_nodes: Vec<Node<'_>> = args.iter().map(|a| self.node(a)).collect();
        // The sets extension's estimators.
        let sets = match overload {
            "list_sets_contains_list" | "list_sets_intersects_list" => Some(1.0),
            "list_sets_equivalent_list" => Some(2.0),
            _ => None,
        };
        if let Some(f) = sets
            && arg_nodes.len() == 2
        {
            let c = self.size(&arg_nodes[0]).mul(self.size(&arg_nodes[1])).factor(f).add(Estimate::exact(1));
            return (c.add(arg_sum), None);
        }
        if let Some((c, size)) = self.kube_cost(function, overload, target_node.as_ref(), &arg_nodes) {
            return (c.add(arg_sum), size);
        }
        let size = |i: usize| self.size(&arg_nodes[i]);
        match overload {
            "string_format" => {
                if let Some(t) = &target_node {
                    return (self.size(t).factor(TRAVERSAL).add(arg_sum), None);
                }
            }
            "string_to_bytes" if args.len() == 1 => {
                let sz = size(0);
                return (
                    sz.factor(TRAVERSAL).add(arg_sum),
                    Some(Estimate { min: sz.min, max: sz.max.saturating_mul(4) }),
                );
            }
            "bytes_to_string" if args.len() == 1 => {
                let sz = size(0);
                return (sz.factor(TRAVERSAL).add(arg_sum), Some(Estimate { min: sz.min / 4, max: sz.max }));
            }
            "strings_quote" if args.len() == 1 => {
                let sz = size(0);
                let out = Estimate { min: sz.min.saturating_add(2), max: sz.max.saturating_mul(2).saturating_add(2) };
                return (sz.factor(TRAVERSAL).add(arg_sum), Some(out));
            }
            "starts_with_string" | "ends_with_string" if args.len() == 1 => {
                return (size(0).factor(TRAVERSAL).add(arg_sum), None);
            }
            "in_list" if args.len() == 2 => return (size(1).factor(1.0).add(arg_sum), None),
            "matches_string" => {
                if let (Some(t), 1) = (&target_node, args.len()) {
                    let s = self.size(t).add(Estimate::exact(1)).factor(TRAVERSAL);
                    return (s.mul(size(0).factor(REGEX)).add(arg_sum), None);
                }
            }
            "contains_string" => {
                if let (Some(t), 1) = (&target_node, args.len()) {
                    let s = self.size(t).factor(TRAVERSAL);
                    return (s.mul(size(0).factor(TRAVERSAL)).add(arg_sum), None);
                }
            }
            "logical_or" | "logical_and" => {
                let (l, r) = (args_cost[0], args_cost[1]);
                return (Estimate { min: l.min, max: l.add(r).max }, None);
            }
            "conditional" => {
                let out = size(1).union(size(2));
                return (args_cost[0].add(args_cost[1].union(args_cost[2])), Some(out));
            }
            "add_string" | "add_bytes" | "add_list" if args.len() == 2 => {
                let sum = size(0).add(size(1));
                if overload == "add_list" {
                    return (Estimate::exact(1).add(arg_sum), Some(sum));
                }
                return (sum.factor(TRAVERSAL).add(arg_sum), Some(sum));
            }
            "less_string"
            | "greater_string"
            | "less_equals_string"
            | "greater_equals_string"
            | "less_bytes"
            | "greater_bytes"
            | "less_equals_bytes"
            | "greater_equals_bytes"
            | "equals"
            | "not_equals" => {
                let (l, r) = (size(0), size(1));
                let smallest = l.max.min(r.max);
                let c = Estimate { min: (smallest > 0) as u64, max: smallest }.factor(TRAVERSAL);
                return (c.add(arg_sum), None);
            }
            _ => {}
        }
        (Estimate::exact(1).add(arg_sum), None)
    }
}
