//! The interpreter: evaluates a plan with cel-go's semantics, counting cost as cel-go's
//! `CostObserver` does and stopping when the count passes the limit.
//!
//! Errors are values until something needs them: `&&` and `||` absorb an error when the other
//! side decides (`false && error` is false), `@not_strictly_false` reads one as true, and
//! comprehensions keep iterating past a condition that errs. Cancellation (the cost limit, an
//! authorization decision the caller must fetch) is not a value and stops everything.

use std::sync::Arc;

use crate::authorization::Authorizer;
use crate::cost::runtime::call_cost;
use crate::error::{EvalError, EvalResult};
use crate::functions;
use crate::plan::{Attr, Base, Call, Fold, Node, Qual, QualKind};
use crate::value::{Key, List, ListType, Map, Value};

/// The variables of one evaluation, and the authorizer kube's authz library asks.
#[derive(Default)]
pub struct Activation<'a> {
    vars: Vec<(&'a str, Value)>,
    /// Answers `authorizer...check(verb)` (admission policies only).
    pub authorizer: Option<&'a dyn Authorizer>,
}

impl<'a> Activation<'a> {
    /// No variables.
    pub fn new() -> Activation<'a> {
        Activation { vars: Vec::new(), authorizer: None }
    }

    /// With variable `name` bound to `value`.
    pub fn bind(mut self, name: &'a str, value: Value) -> Activation<'a> {
        self.vars.push((name, value));
        self
    }

    /// With an authorizer.
    pub fn with_authorizer(mut self, authorizer: &'a dyn Authorizer) -> Activation<'a> {
        self.authorizer = Some(authorizer);
        self
    }

    fn get(&self, name: &str) -> Option<&Value> {
        self.vars.iter().rev().find(|(n, _)| *n == name).map(|(_, v)| v)
    }
}

/// A comprehension's variables.
struct Frame {
    accu_var: Arc<str>,
    /// The accumulator, or its initial value's plan until first read.
    accu: Accu,
    iter_var: Arc<str>,
    iter_value: Value,
    iter_var2: Option<Arc<str>>,
    iter_value2: Value,
    /// Set while the result is computed: the iteration variables are out of scope.
    computing_result: bool,
}

enum Accu {
    Pending,
    Ready(EvalResult),
}

/// Counts cost and carries the variables while one expression evaluates.
pub struct Evaluator<'a> {
    activation: &'a Activation<'a>,
    frames: Vec<(Frame, &'a Fold)>,
    /// The cost so far.
    pub cost: u64,
    limit: Option<u64>,
}

impl<'a> Evaluator<'a> {
    /// An evaluator over `activation`, stopping once the cost passes `limit`.
    pub fn new(activation: &'a Activation<'a>, limit: Option<u64>) -> Evaluator<'a> {
        Evaluator { activation, frames: Vec::new(), cost: 0, limit }
    }

    /// Adds `n` to the cost; cel-go checks the limit after every step.
    fn charge(&mut self, n: u64) -> Result<(), EvalError> {
        self.cost = self.cost.saturating_add(n);
        match self.limit {
            Some(limit) if self.cost > limit => Err(EvalError::CostLimitExceeded),
            _ => Ok(()),
        }
    }

    /// Evaluates `node`: a value, a CEL error, or a cancellation.
    pub fn eval(&mut self, node: &'a Node) -> EvalResult {
        match node {
            Node::Const(v) => Ok(v.clone()),
            Node::Attr(attr) => {
                let v = self.resolve(attr);
                if let Err(e) = &v
                    && e.is_cancellation()
                {
                    return v;
                }
                if !matches!(attr.base, Base::Cond(..)) {
                    self.charge(1)?;
                }
                v
            }
            Node::TestOnly(attr) => self.resolve(attr),
            Node::And(a, b) => self.logical(a, b, false),
            Node::Or(a, b) => self.logical(a, b, true),
            Node::Equals(a, b, negate) => {
                let (l, r) = (self.eval(a), self.eval(b));
                let (l, r) = (cancel(l)?, cancel(r)?);
                let result = match (&l, &r) {
                    (Err(e), _) | (_, Err(e)) => Err(e.clone()),
                    // cel-go: `!=` is "not true", so an equality error reads as unequal there.
                    (Ok(x), Ok(y)) => match (x.equality(y), negate) {
                        (equal, true) => Ok(Value::Bool(equal != Some(true))),
                        (Some(equal), false) => Ok(Value::Bool(equal)),
                        (None, false) => Err(EvalError::NoSuchOverload),
                    },
                };
                let function = if *negate { "_!=_" } else { "_==_" };
                let overload = if *negate { "not_equals" } else { "equals" };
                let args = [l.unwrap_or_else(error_value), r.unwrap_or_else(error_value)];
                self.charge(call_cost(function, Some(overload), &args, &result))?;
                result
            }
            Node::Call(call) => self.call(call),
            Node::SetMembership(arg, set) => {
                let v = self.eval(arg)?;
                Ok(Value::Bool(set.iter().any(|x| x.equals(&v))))
            }
            Node::OptionalOr(a, b) => match self.eval(a)? {
                Value::Optional(Some(v)) => Ok(Value::Optional(Some(v))),
                Value::Optional(None) => self.eval(b),
                other => Ok(other),
            },
            Node::OptionalOrValue(a, b) => match self.eval(a)? {
                Value::Optional(Some(v)) => Ok((*v).clone()),
                Value::Optional(None) => self.eval(b),
                other => Ok(other),
            },
            Node::List(elems, optionals) => {
                let result = self.list(elems, optionals);
                if let Err(e) = &result
                    && e.is_cancellation()
                {
                    return result;
                }
                self.charge(10)?;
                result
            }
            Node::Map(entries) => {
                let result = self.map(entries);
                if let Err(e) = &result
                    && e.is_cancellation()
                {
                    return result;
                }
                self.charge(30)?;
                result
            }
            Node::Fold(fold) => self.fold(fold),
            Node::AccuAppend(elem) => self.accu_append(elem),
        }
    }

    fn logical(&mut self, a: &'a Node, b: &'a Node, or: bool) -> EvalResult {
        let mut error: Option<EvalError> = None;
        for term in [a, b] {
            match self.eval(term) {
                Ok(Value::Bool(v)) if v == or => return Ok(Value::Bool(or)),
                Ok(Value::Bool(_)) => {}
                Ok(_) => {
                    error.get_or_insert(EvalError::NoSuchOverload);
                }
                Err(e) if e.is_cancellation() => return Err(e),
                Err(e) => {
                    error.get_or_insert(e);
                }
            }
        }
        match error {
            Some(e) => Err(e),
            None => Ok(Value::Bool(!or)),
        }
    }

    fn list(&mut self, elems: &'a [Node], optionals: &[bool]) -> EvalResult {
        let mut out = Vec::with_capacity(elems.len());
        for (i, e) in elems.iter().enumerate() {
            let v = self.eval(e)?;
            if optionals[i] {
                match v {
                    Value::Optional(Some(v)) => out.push((*v).clone()),
                    Value::Optional(None) => {}
                    other => {
                        return Err(EvalError::msg(format!(
                            "cannot initialize optional list element from non-optional value {other}"
                        )));
                    }
                }
            } else {
                out.push(v);
            }
        }
        Ok(Value::list(out))
    }

    fn map(&mut self, entries: &'a [(Node, Node, bool)]) -> EvalResult {
        let mut out = std::collections::BTreeMap::new();
        for (k, v, optional) in entries {
            let key = self.eval(k)?;
            let value = self.eval(v)?;
            let Some(key) = Key::from_value(&key) else {
                return Err(EvalError::msg(format!("unsupported key type: {}", key.type_name())));
            };
            if *optional {
                match value {
                    Value::Optional(Some(v)) => {
                        out.insert(key, (*v).clone());
                    }
                    Value::Optional(None) => {
                        out.remove(&key);
                    }
                    other => {
                        return Err(EvalError::msg(format!(
                            "cannot initialize optional entry '{}' from non-optional value {other}",
                            key.to_value()
                        )));
                    }
                }
            } else {
                out.insert(key, value);
            }
        }
        Ok(Value::Map(Map::new(out)))
    }

    fn call(&mut self, call: &'a Call) -> EvalResult {
        let mut args = Vec::with_capacity(call.args.len());
        let mut first_error: Option<EvalError> = None;
        for a in &call.args {
            match self.eval(a) {
                Ok(v) => args.push(v),
                Err(e) if e.is_cancellation() => return Err(e),
                Err(e) => {
                    if call.early_exit {
                        // cel-go stops evaluating and, missing an argument, charges nothing.
                        return Err(e);
                    }
                    args.push(error_value(e.clone()));
                    first_error.get_or_insert(e);
                }
            }
        }
        let result = match first_error {
            Some(e) if &*call.function != "@not_strictly_false" => Err(e),
            Some(_) => Ok(Value::Bool(true)),
            None => functions::call_with(
                &call.function,
                call.overload,
                &args,
                call.regex.as_ref(),
                self.activation.authorizer,
            ),
        };
        if let Err(e) = &result
            && e.is_cancellation()
        {
            return result;
        }
        self.charge(call_cost(&call.function, call.overload, &args, &result))?;
        result
    }

    fn lookup(&mut self, name: &str) -> EvalResult {
        for i in (0..self.frames.len()).rev() {
            let (frame, fold) = &self.frames[i];
            if &*frame.accu_var == name {
                if let Accu::Ready(v) = &frame.accu {
                    return v.clone();
                }
                let fold: &'a Fold = fold;
                // The initial value is computed when first read, in the comprehension's
                // enclosing scope.
                let saved: Vec<_> = self.frames.drain(i..).collect();
                let init = self.eval(&fold.init);
                self.frames.extend(saved);
                let init = cancel(init)?;
                self.frames[i].0.accu = Accu::Ready(init.clone());
                return init;
            }
            if !frame.computing_result {
                if &*frame.iter_var == name {
                    return Ok(frame.iter_value.clone());
                }
                if frame.iter_var2.as_deref() == Some(name) {
                    return Ok(frame.iter_value2.clone());
                }
            }
        }
        match self.activation.get(name) {
            Some(v) => Ok(v.clone()),
            None => Err(EvalError::msg(format!("no such attribute(s): {name}"))),
        }
    }

    /// Resolves an attribute: its base, then its qualifiers.
    fn resolve(&mut self, attr: &'a Attr) -> EvalResult {
        let base = match &attr.base {
            Base::Var(name) => self.lookup(name)?,
            Base::Relative(node) => self.eval(node)?,
            Base::Cond(cond, t, f) => {
                return match self.eval(cond)? {
                    Value::Bool(true) => self.resolve(t),
                    Value::Bool(false) => self.resolve(f),
                    _ => Err(EvalError::NoSuchOverload),
                };
            }
        };
        self.apply(base, &attr.quals)
    }

    /// cel-go's `applyQualifiers`.
    fn apply(&mut self, mut obj: Value, quals: &'a [Qual]) -> EvalResult {
        if quals.is_empty() {
            return Ok(obj);
        }
        let mut optional = false;
        if let Value::Optional(o) = &obj {
            match o {
                None => return Ok(obj),
                Some(v) => {
                    optional = true;
                    obj = (**v).clone();
                }
            }
        }
        for q in quals {
            optional = optional || q.optional;
            let key = match &q.kind {
                QualKind::Const(v, k) => KeyRef::Const(v, k.as_ref()),
                QualKind::Attr(a) => match self.resolve(a) {
                    Ok(v) => KeyRef::Owned(v),
                    Err(e) if e.is_cancellation() || optional => return Err(e),
                    Err(e) => {
                        self.charge(1)?;
                        return Err(e);
                    }
                },
            };
            if q.presence_only {
                let present = presence(&obj, &key);
                self.charge(1)?;
                obj = Value::Bool(present?);
                continue;
            }
            if optional {
                match qualify(&obj, &key, true)? {
                    Some(v) => {
                        self.charge(1)?;
                        obj = v;
                    }
                    None => return Ok(Value::Optional(None)),
                }
            } else {
                let r = qualify(&obj, &key, false);
                self.charge(1)?;
                obj = r?.expect("a qualification that is not a presence test finds a value or fails");
            }
        }
        Ok(if optional { Value::some(obj) } else { obj })
    }

    fn fold(&mut self, fold: &'a Fold) -> EvalResult {
        let range = self.eval(&fold.range)?;
        let frame = Frame {
            accu_var: fold.accu_var.clone(),
            accu: Accu::Pending,
            iter_var: fold.iter_var.clone(),
            iter_value: Value::Null,
            iter_var2: fold.iter_var2.clone(),
            iter_value2: Value::Null,
            computing_result: false,
        };
        let items: Vec<(Value, Value)> = match (&range, fold.iter_var2.is_some()) {
            (Value::List(l), false) => l.items.iter().map(|v| (v.clone(), Value::Null)).collect(),
            (Value::List(l), true) => {
                l.items.iter().enumerate().map(|(i, v)| (Value::Int(i as i64), v.clone())).collect()
            }
            (Value::Map(m), _) => m.entries.iter().map(|(k, v)| (k.to_value(), v.clone())).collect(),
            (other, true) => {
                return Err(EvalError::msg(format!("unsupported comprehension range type: {}", other.type_name())));
            }
            (other, false) => {
                return Err(EvalError::msg(format!("got '{}', expected iterable type", other.type_name())));
            }
        };
        self.frames.push((frame, fold));
        let depth = self.frames.len() - 1;
        let outcome = self.iterate(fold, depth, items);
        let result = match outcome {
            Ok(()) => {
                self.frames[depth].0.computing_result = true;
                self.eval(&fold.result)
            }
            Err(e) => Err(e),
        };
        self.frames.truncate(depth);
        result
    }

    fn iterate(&mut self, fold: &'a Fold, depth: usize, items: Vec<(Value, Value)>) -> Result<(), EvalError> {
        for (v1, v2) in items {
            {
                let frame = &mut self.frames[depth].0;
                frame.iter_value = v1;
                frame.iter_value2 = v2;
            }
            match self.eval(&fold.cond) {
                Ok(Value::Bool(true)) => {}
                Ok(Value::Bool(false)) => return Ok(()),
                Err(e) if e.is_cancellation() => return Err(e),
                _ => {}
            }
            let step = self.eval(&fold.step);
            let step = cancel(step)?;
            self.frames[depth].0.accu = Accu::Ready(step);
        }
        Ok(())
    }

    fn accu_append(&mut self, elem: &'a Node) -> EvalResult {
        // `__result__` (1), the list literal (10 plus its element), `_+_` (1).
        let depth = self.frames.len() - 1;
        let accu = self.lookup(&self.frames[depth].0.accu_var.clone());
        let accu = cancel(accu)?;
        self.charge(1)?;
        let item = self.eval(elem);
        let item = cancel(item)?;
        self.charge(10)?;
        let result = match (accu, item) {
            (Err(e), _) | (_, Err(e)) => Err(e),
            (Ok(Value::List(_)), Ok(item)) => {
                // Appended in place: the frame holds the only other reference.
                let frame = &mut self.frames[depth].0;
                let Accu::Ready(Ok(Value::List(list))) = &mut frame.accu else { unreachable!("read above") };
                Arc::make_mut(&mut list.items).push(item);
                Ok(Value::List(List { items: list.items.clone(), list_type: ListType::Atomic }))
            }
            (Ok(_), Ok(_)) => Err(EvalError::NoSuchOverload),
        };
        self.charge(1)?;
        result
    }
}

/// Separates a cancellation (returned) from a CEL result (kept as a value).
fn cancel(r: EvalResult) -> Result<EvalResult, EvalError> {
    match r {
        Err(e) if e.is_cancellation() => Err(e),
        other => Ok(other),
    }
}

/// An error standing where an argument value would be, for costing: cel-go sizes it 1.
fn error_value(_: EvalError) -> Value {
    Value::Null
}

/// A qualifier's key, borrowed when constant.
enum KeyRef<'k> {
    Const(&'k Value, Option<&'k Key>),
    Owned(Value),
}

impl KeyRef<'_> {
    fn value(&self) -> &Value {
        match self {
            KeyRef::Const(v, _) => v,
            KeyRef::Owned(v) => v,
        }
    }
}

/// Applies a qualifier: `Ok(None)` when `if_present` and the key or index is absent.
fn qualify(obj: &Value, key: &KeyRef<'_>, if_present: bool) -> Result<Option<Value>, EvalError> {
    let k = key.value();
    match obj {
        Value::Map(m) => {
            let found = match key {
                KeyRef::Const(v, Some(k)) => m.get(k).or_else(|| match k {
                    Key::String(_) => None,
                    _ => m.find(v),
                }),
                _ => m.find(k),
            };
            match found {
                Some(v) => Ok(Some(v.clone())),
                None if if_present => Ok(None),
                None => Err(EvalError::msg(format!("no such key: {k}"))),
            }
        }
        Value::List(l) => {
            let index = list_index(k)?;
            match usize::try_from(index).ok().and_then(|i| l.items.get(i)) {
                Some(v) => Ok(Some(v.clone())),
                None if if_present => Ok(None),
                None => Err(EvalError::msg(format!("index out of bounds: {k}"))),
            }
        }
        _ if if_present => Ok(None),
        _ => Err(EvalError::msg(format!("no such key: {k}"))),
    }
}

/// Whether `key` is present on `obj` (`has()`).
fn presence(obj: &Value, key: &KeyRef<'_>) -> Result<bool, EvalError> {
    match obj {
        Value::Optional(o) => Ok(o.is_some()),
        other => qualify(other, key, true).map(|v| v.is_some()),
    }
}

/// cel-go's `IndexOrError`.
fn list_index(v: &Value) -> Result<i64, EvalError> {
    match v {
        Value::Int(i) => Ok(*i),
        Value::Uint(u) => i64::try_from(*u).map_err(|_| EvalError::msg(format!("unsupported index value {u} in list"))),
        Value::Double(d) => {
            if d.fract() == 0.0 && *d >= -9.223_372_036_854_776e18 && *d < 9.223_372_036_854_776e18 {
                Ok(*d as i64)
            } else {
                Err(EvalError::msg(format!("unsupported index value {v} in list")))
            }
        }
        other => Err(EvalError::msg(format!("unsupported index type '{}' in list", other.type_name()))),
    }
}
