//! Operators: arithmetic with cel-go's overflow checks, ordering across numeric types,
//! membership and size.

use std::cmp::Ordering;

use crate::error::{EvalError, EvalResult};
use crate::stdlib::time;
use crate::value::Value;

fn overflow() -> EvalError {
    EvalError::msg("integer overflow")
}

fn uint_overflow() -> EvalError {
    EvalError::msg("unsigned integer overflow")
}

/// `-x`.
pub fn negate(v: &Value) -> EvalResult {
    match v {
        Value::Int(i) => i.checked_neg().map(Value::Int).ok_or_else(overflow),
        Value::Double(d) => Ok(Value::Double(-d)),
        Value::Duration(d) => d.checked_neg().map(Value::Duration).ok_or_else(overflow),
        _ => Err(EvalError::NoSuchOverload),
    }
}

/// `a + b`.
pub fn add(a: &Value, b: &Value) -> EvalResult {
    use Value as V;
    match (a, b) {
        (V::Int(x), V::Int(y)) => x.checked_add(*y).map(V::Int).ok_or_else(overflow),
        (V::Uint(x), V::Uint(y)) => x.checked_add(*y).map(V::Uint).ok_or_else(uint_overflow),
        (V::Double(x), V::Double(y)) => Ok(V::Double(x + y)),
        (V::String(x), V::String(y)) => {
            let mut s = String::with_capacity(x.len() + y.len());
            s.push_str(x);
            s.push_str(y);
            Ok(V::string(s))
        }
        (V::Bytes(x), V::Bytes(y)) => Ok(V::Bytes([&x[..], &y[..]].concat().into())),
        (V::List(x), V::List(y)) => Ok(V::List(x.concat(y))),
        (V::Duration(x), V::Duration(y)) => x.checked_add(*y).map(V::Duration).ok_or_else(overflow),
        (V::Timestamp(t), V::Duration(d)) | (V::Duration(d), V::Timestamp(t)) => time::add(t, *d),
        _ => Err(EvalError::NoSuchOverload),
    }
}

/// `a - b`.
pub fn subtract(a: &Value, b: &Value) -> EvalResult {
    use Value as V;
    match (a, b) {
        (V::Int(x), V::Int(y)) => x.checked_sub(*y).map(V::Int).ok_or_else(overflow),
        (V::Uint(x), V::Uint(y)) => x.checked_sub(*y).map(V::Uint).ok_or_else(uint_overflow),
        (V::Double(x), V::Double(y)) => Ok(V::Double(x - y)),
        (V::Duration(x), V::Duration(y)) => x.checked_sub(*y).map(V::Duration).ok_or_else(overflow),
        (V::Timestamp(t), V::Duration(d)) => time::add(t, d.checked_neg().ok_or_else(overflow)?),
        (V::Timestamp(x), V::Timestamp(y)) => time::difference(x, y),
        _ => Err(EvalError::NoSuchOverload),
    }
}

/// `a * b`.
pub fn multiply(a: &Value, b: &Value) -> EvalResult {
    use Value as V;
    match (a, b) {
        (V::Int(x), V::Int(y)) => x.checked_mul(*y).map(V::Int).ok_or_else(overflow),
        (V::Uint(x), V::Uint(y)) => x.checked_mul(*y).map(V::Uint).ok_or_else(uint_overflow),
        (V::Double(x), V::Double(y)) => Ok(V::Double(x * y)),
        _ => Err(EvalError::NoSuchOverload),
    }
}

/// `a / b`.
pub fn divide(a: &Value, b: &Value) -> EvalResult {
    use Value as V;
    match (a, b) {
        (V::Int(_), V::Int(0)) | (V::Uint(_), V::Uint(0)) => Err(EvalError::msg("division by zero")),
        (V::Int(x), V::Int(y)) => x.checked_div(*y).map(V::Int).ok_or_else(overflow),
        (V::Uint(x), V::Uint(y)) => Ok(V::Uint(x / y)),
        (V::Double(x), V::Double(y)) => Ok(V::Double(x / y)),
        _ => Err(EvalError::NoSuchOverload),
    }
}

/// `a % b`.
pub fn modulo(a: &Value, b: &Value) -> EvalResult {
    use Value as V;
    match (a, b) {
        (V::Int(_), V::Int(0)) | (V::Uint(_), V::Uint(0)) => Err(EvalError::msg("modulus by zero")),
        (V::Int(x), V::Int(y)) => x.checked_rem(*y).map(V::Int).ok_or_else(overflow),
        (V::Uint(x), V::Uint(y)) => Ok(V::Uint(x % y)),
        _ => Err(EvalError::NoSuchOverload),
    }
}

/// `<`, `<=`, `>`, `>=`: numbers compare across types; NaN cannot be ordered.
pub fn compare(op: &str, a: &Value, b: &Value) -> EvalResult {
    let ordered = matches!(
        (a, b),
        (Value::Bool(_), Value::Bool(_))
            | (Value::String(_), Value::String(_))
            | (Value::Bytes(_), Value::Bytes(_))
            | (Value::Duration(_), Value::Duration(_))
            | (Value::Timestamp(_), Value::Timestamp(_))
    ) || (a.number().is_some() && b.number().is_some());
    if !ordered {
        return Err(EvalError::NoSuchOverload);
    }
    let Some(o) = a.compare(b) else { return Err(EvalError::msg("NaN values cannot be ordered")) };
    Ok(Value::Bool(match op {
        "_<_" => o == Ordering::Less,
        "_<=_" => o != Ordering::Greater,
        "_>_" => o == Ordering::Greater,
        _ => o != Ordering::Less,
    }))
}

/// `x in container`.
pub fn contains(x: &Value, container: &Value) -> EvalResult {
    match container {
        Value::List(l) => Ok(Value::Bool(l.items.iter().any(|v| v.equals(x)))),
        Value::Map(m) => Ok(Value::Bool(m.find(x).is_some())),
        _ => Err(EvalError::NoSuchOverload),
    }
}

/// `size(x)`.
pub fn size(v: &Value) -> EvalResult {
    match v {
        Value::String(_) | Value::Bytes(_) | Value::List(_) | Value::Map(_) => Ok(Value::Int(v.actual_size() as i64)),
        _ => Err(EvalError::NoSuchOverload),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_arithmetic_is_checked_as_cel_go_checks_it() {
        assert_eq!(add(&Value::Int(i64::MAX), &Value::Int(1)), Err(EvalError::msg("integer overflow")));
        assert_eq!(subtract(&Value::Uint(0), &Value::Uint(1)), Err(EvalError::msg("unsigned integer overflow")));
        assert_eq!(divide(&Value::Int(1), &Value::Int(0)), Err(EvalError::msg("division by zero")));
        assert_eq!(modulo(&Value::Int(1), &Value::Int(0)), Err(EvalError::msg("modulus by zero")));
        assert_eq!(divide(&Value::Int(i64::MIN), &Value::Int(-1)), Err(EvalError::msg("integer overflow")));
        assert_eq!(add(&Value::Int(1), &Value::string("a")), Err(EvalError::NoSuchOverload));
    }

    #[test]
    fn ordering_crosses_numeric_types() {
        assert_eq!(compare("_<_", &Value::Int(1), &Value::Double(1.5)), Ok(Value::Bool(true)));
        assert_eq!(compare("_>=_", &Value::Uint(2), &Value::Int(-1)), Ok(Value::Bool(true)));
        assert_eq!(compare("_<_", &Value::Int(1), &Value::string("a")), Err(EvalError::NoSuchOverload));
        assert!(compare("_<_", &Value::Double(f64::NAN), &Value::Int(1)).is_err());
    }
}
