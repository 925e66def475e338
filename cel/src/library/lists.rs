//! kube's Lists library (`library.Lists`): `isSorted`, `sum`, `min`, `max`, `indexOf` and
//! `lastIndexOf` on lists.

use std::cmp::Ordering;

use crate::error::{EvalError, EvalResult};
use crate::stdlib::ops;
use crate::value::Value;

/// The list functions; `overload` is the one the checker chose, when it chose one.
pub fn call(name: &str, overload: Option<&str>, args: &[Value]) -> Option<EvalResult> {
    let Some(Value::List(list)) = args.first() else { return None };
    let items = &list.items;
    Some(match (name, &args[1..]) {
        ("isSorted", []) => {
            for w in items.windows(2) {
                match w[0].compare(&w[1]) {
                    Some(Ordering::Greater) => return Some(Ok(Value::Bool(false))),
                    Some(_) => {}
                    None => return Some(Err(EvalError::NoSuchOverload)),
                }
            }
            Ok(Value::Bool(true))
        }
        ("sum", []) => {
            // An empty list sums to the zero of the element type the checker chose; unchosen,
            // to cel-go's first overload's (int).
            let mut acc: Option<Value> = None;
            for v in items.iter() {
                acc = Some(match acc {
                    None => v.clone(),
                    Some(a) => match ops::add(&a, v) {
                        Ok(s) => s,
                        Err(e) => return Some(Err(e)),
                    },
                });
            }
            Ok(acc.or_else(|| overload.and_then(zero_for)).unwrap_or(Value::Int(0)))
        }
        ("min" | "max", []) => {
            let prefer = if name == "min" { Ordering::Greater } else { Ordering::Less };
            let mut best: Option<&Value> = None;
            for v in items.iter() {
                best = Some(match best {
                    None => v,
                    Some(b) => match b.compare(v) {
                        Some(o) if o == prefer => v,
                        Some(_) => b,
                        None => return Some(Err(EvalError::NoSuchOverload)),
                    },
                });
            }
            best.cloned().ok_or_else(|| EvalError::msg(format!("{name} called on empty list")))
        }
        ("indexOf", [x]) => Ok(Value::Int(items.iter().position(|v| v.equals(x)).map_or(-1, |i| i as i64))),
        ("lastIndexOf", [x]) => Ok(Value::Int(items.iter().rposition(|v| v.equals(x)).map_or(-1, |i| i as i64))),
        _ => return None,
    })
}

/// The zero of a summable list's element type, when the list is empty.
pub fn zero_for(overload: &str) -> Option<Value> {
    Some(match overload {
        "list_int_sum_int" => Value::Int(0),
        "list_uint_sum_uint" => Value::Uint(0),
        "list_double_sum_double" => Value::Double(0.0),
        "list_duration_sum_duration" => Value::Duration(0),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ints(v: &[i64]) -> Value {
        Value::list(v.iter().map(|i| Value::Int(*i)).collect())
    }

    #[test]
    fn lists_follow_kubes_documented_examples() {
        let eval = |name: &str, args: &[Value]| call(name, None, args).unwrap();
        assert_eq!(eval("isSorted", &[ints(&[1, 2, 3])]), Ok(Value::Bool(true)));
        let abbc = Value::list(["a", "b", "b", "c"].iter().map(|s| Value::string(*s)).collect());
        assert_eq!(eval("isSorted", std::slice::from_ref(&abbc)), Ok(Value::Bool(true)));
        assert_eq!(
            eval("isSorted", &[Value::list(vec![Value::Double(2.0), Value::Double(1.0)])]),
            Ok(Value::Bool(false))
        );
        assert_eq!(eval("isSorted", &[ints(&[])]), Ok(Value::Bool(true)));
        assert_eq!(eval("sum", &[ints(&[1, 3])]), Ok(Value::Int(4)));
        assert_eq!(eval("sum", &[Value::list(vec![Value::Double(1.0), Value::Double(3.0)])]), Ok(Value::Double(4.0)));
        assert_eq!(eval("sum", &[ints(&[])]), Ok(Value::Int(0)));
        let empty_doubles = call("sum", Some("list_double_sum_double"), &[ints(&[])]).unwrap();
        assert_eq!(empty_doubles, Ok(Value::Double(0.0)));
        assert_eq!(eval("min", &[ints(&[1, 3])]), Ok(Value::Int(1)));
        assert_eq!(eval("max", &[ints(&[1, 3])]), Ok(Value::Int(3)));
        assert_eq!(eval("min", &[ints(&[])]), Err(EvalError::msg("min called on empty list")));
        assert_eq!(eval("indexOf", &[ints(&[1, 2, 2, 3]), Value::Int(2)]), Ok(Value::Int(1)));
        assert_eq!(eval("lastIndexOf", &[abbc, Value::string("b")]), Ok(Value::Int(2)));
        assert_eq!(eval("indexOf", &[Value::list(vec![Value::Double(1.0)]), Value::Double(1.1)]), Ok(Value::Int(-1)));
    }
}
