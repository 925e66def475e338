//! The functions of CEL's standard library and of cel-go's extensions kube enables (strings,
//! sets, optional types, two-variable comprehensions), dispatched as cel-go dispatches them:
//! by function name and the run-time types of the arguments, `no such overload` when none
//! fits. kube's own libraries are in [`crate::library`]; [`crate::functions`] dispatches to
//! both.

pub mod convert;
pub mod ops;
pub mod regex;
pub mod strings;
pub mod time;

use crate::error::{EvalError, EvalResult};
use crate::value::{Key, List, Map, Value};

/// Calls standard function `name`, with a regular expression already compiled for a
/// constant pattern; `None` when it is not one of the standard library's or the extensions'.
pub fn call(name: &str, args: &[Value], regex: Option<&::regex::Regex>) -> Option<EvalResult> {
    use Value as V;
    Some(match (name, args) {
        ("!_", [V::Bool(b)]) => Ok(V::Bool(!b)),
        ("@not_strictly_false", [V::Bool(b)]) => Ok(V::Bool(*b)),
        ("@not_strictly_false", [_]) => Ok(V::Bool(true)),
        ("-_", [v]) => ops::negate(v),
        ("_+_", [a, b]) => ops::add(a, b),
        ("_-_", [a, b]) => ops::subtract(a, b),
        ("_*_", [a, b]) => ops::multiply(a, b),
        ("_/_", [a, b]) => ops::divide(a, b),
        ("_%_", [a, b]) => ops::modulo(a, b),
        ("_<_" | "_<=_" | "_>_" | "_>=_", [a, b]) => ops::compare(name, a, b),
        ("@in", [x, container]) => ops::contains(x, container),
        ("size", [v]) => ops::size(v),
        ("type", [v]) => Ok(V::Type(crate::value::TypeValue::named(v.type_name()))),
        ("dyn", [v]) => Ok(v.clone()),
        ("int" | "uint" | "double" | "string" | "bytes" | "bool" | "duration" | "timestamp", [v]) => {
            convert::convert(name, v)
        }
        ("contains", [V::String(s), V::String(sub)]) => Ok(V::Bool(s.contains(&**sub))),
        ("startsWith", [V::String(s), V::String(p)]) => Ok(V::Bool(s.starts_with(&**p))),
        ("endsWith", [V::String(s), V::String(p)]) => Ok(V::Bool(s.ends_with(&**p))),
        ("matches", [V::String(s), V::String(p)]) => regex::matches(s, p, regex),
        (
            "getFullYear" | "getMonth" | "getDayOfYear" | "getDayOfMonth" | "getDate" | "getDayOfWeek" | "getHours"
            | "getMinutes" | "getSeconds" | "getMilliseconds",
            _,
        ) => time::accessor(name, args),
        ("optional.of", [v]) => Ok(V::some(v.clone())),
        ("optional.ofNonZeroValue", [v]) => Ok(if v.is_zero() { V::Optional(None) } else { V::some(v.clone()) }),
        ("optional.none", []) => Ok(V::Optional(None)),
        ("value", [V::Optional(o)]) => match o {
            Some(v) => Ok((**v).clone()),
            None => Err(EvalError::msg("optional.none() dereference")),
        },
        ("hasValue", [V::Optional(o)]) => Ok(V::Bool(o.is_some())),
        ("sets.contains", [V::List(a), V::List(b)]) => Ok(V::Bool(b.items.iter().all(|x| list_has(a, x)))),
        ("sets.equivalent", [V::List(a), V::List(b)]) => {
            Ok(V::Bool(a.items.iter().all(|x| list_has(b, x)) && b.items.iter().all(|x| list_has(a, x))))
        }
        ("sets.intersects", [V::List(a), V::List(b)]) => Ok(V::Bool(a.items.iter().any(|x| list_has(b, x)))),
        ("cel.@mapInsert", [V::Map(m), k, v]) => map_insert(m, k, v),
        ("cel.@mapInsert", [V::Map(m), V::Map(update)]) => map_merge(m, update),
        _ => return strings::call(name, args),
    })
}

fn list_has(list: &List, x: &Value) -> bool {
    list.items.iter().any(|y| y.equals(x))
}

/// Inserts every entry of `update` into `m`, an error at the first key `m` has.
fn map_merge(m: &Map, update: &Map) -> EvalResult {
    let mut out = m.clone();
    for (k, v) in update.entries.iter() {
        let Value::Map(next) = map_insert(&out, &k.to_value(), v)? else { unreachable!("maps insert into maps") };
        out = next;
    }
    Ok(Value::Map(out))
}

/// cel-go's `InsertMapKeyValue`: a new map with `k: v`, an error if `k` is there already.
fn map_insert(m: &Map, k: &Value, v: &Value) -> EvalResult {
    if m.find(k).is_some() {
        return Err(EvalError::msg(format!("insert failed: key {k} already exists")));
    }
    let Some(key) = Key::from_value(k) else {
        return Err(EvalError::msg(format!("unsupported key type: {}", k.type_name())));
    };
    let mut entries = (*m.entries).clone();
    entries.insert(key, v.clone());
    Ok(Value::Map(Map::new(entries)))
}
