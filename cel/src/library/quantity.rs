//! kube's Quantity library (`library.Quantity`): `quantity(s)`, `isQuantity(s)` and the
//! comparisons and arithmetic of `resource.Quantity`, over [`crate::quantity`].

use crate::error::{EvalError, EvalResult};
use crate::library::Ext;
use crate::quantity::{self, Format, Quantity};
use crate::value::Value;

const NANO: i128 = 1_000_000_000;

fn q(v: &Value) -> Option<&Quantity> {
    match v {
        Value::Ext(Ext::Quantity(q, _)) => Some(q),
        _ => None,
    }
}

/// A result of `add` and `sub`, which kube returns as a pointer.
fn computed(nanos: Option<i128>, format: Format) -> EvalResult {
    match nanos {
        Some(nanos) => Ok(Value::Ext(Ext::Quantity(Quantity { nanos, format }, true))),
        None => Err(EvalError::msg("quantity overflow")),
    }
}

/// The Quantity functions.
pub fn call(name: &str, args: &[Value]) -> Option<EvalResult> {
    use Value as V;
    Some(match (name, args) {
        ("quantity", [V::String(s)]) => {
            quantity::parse(s).map(|q| V::Ext(Ext::Quantity(q, false))).map_err(EvalError::msg)
        }
        ("isQuantity", [V::String(s)]) => Ok(V::Bool(quantity::parse(s).is_ok())),
        ("sign", [a]) => Ok(V::Int(q(a)?.nanos.signum() as i64)),
        ("isGreaterThan", [a, b]) => Ok(V::Bool(q(a)? > q(b)?)),
        ("isLessThan", [a, b]) => Ok(V::Bool(q(a)? < q(b)?)),
        ("compareTo", [a, b]) => Ok(V::Int(q(a)?.cmp(q(b)?) as i64)),
        ("asApproximateFloat", [a]) => Ok(V::Double(q(a)?.nanos as f64 / 1e9)),
        ("isInteger", [a]) => {
            let n = q(a)?.nanos;
            Ok(V::Bool(n % NANO == 0 && i64::try_from(n / NANO).is_ok()))
        }
        ("asInteger", [a]) => {
            let n = q(a)?.nanos;
            match (n % NANO == 0).then(|| i64::try_from(n / NANO).ok()).flatten() {
                Some(i) => Ok(V::Int(i)),
                None => Err(EvalError::msg("cannot convert value to integer")),
            }
        }
        ("add", [a, b]) => {
            let a = q(a)?;
            match b {
                V::Int(i) => computed(a.nanos.checked_add(i128::from(*i) * NANO), a.format),
                b => computed(a.nanos.checked_add(q(b)?.nanos), a.format),
            }
        }
        ("sub", [a, b]) => {
            let a = q(a)?;
            match b {
                V::Int(i) => computed(a.nanos.checked_sub(i128::from(*i) * NANO), a.format),
                b => computed(a.nanos.checked_sub(q(b)?.nanos), a.format),
            }
        }
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn eval(name: &str, args: &[Value]) -> Value {
        call(name, args).expect("a quantity function").expect("no error")
    }

    fn quantity(s: &str) -> Value {
        eval("quantity", &[Value::string(s)])
    }

    #[test]
    fn quantities_follow_kubes_documented_examples() {
        assert_eq!(eval("isQuantity", &[Value::string("1.3G")]), Value::Bool(true));
        assert_eq!(eval("isQuantity", &[Value::string("1.3Gi")]), Value::Bool(true));
        assert_eq!(eval("isQuantity", &[Value::string("1,3G")]), Value::Bool(false));
        assert_eq!(eval("isQuantity", &[Value::string("10000k")]), Value::Bool(true));
        assert_eq!(eval("isQuantity", &[Value::string("200K")]), Value::Bool(false));
        assert_eq!(eval("isQuantity", &[Value::string("Three")]), Value::Bool(false));
        assert_eq!(eval("isQuantity", &[Value::string("Mi")]), Value::Bool(false));
        assert_eq!(eval("sign", &[quantity("-50M")]), Value::Int(-1));
        assert_eq!(eval("sign", &[quantity("0")]), Value::Int(0));
        assert_eq!(eval("isGreaterThan", &[quantity("50M"), quantity("100M")]), Value::Bool(false));
        assert_eq!(eval("isLessThan", &[quantity("50M"), quantity("100M")]), Value::Bool(true));
        assert_eq!(eval("compareTo", &[quantity("200M"), quantity("100M")]), Value::Int(1));
        assert_eq!(eval("compareTo", &[quantity("100M"), quantity("100M")]), Value::Int(0));
        assert_eq!(eval("asApproximateFloat", &[quantity("50.703k")]), Value::Double(50703.0));
        assert_eq!(eval("asInteger", &[quantity("50k")]), Value::Int(50000));
        assert_eq!(call("asInteger", &[quantity("10E")]), Some(Err(EvalError::msg("cannot convert value to integer"))));
        assert_eq!(eval("isInteger", &[quantity("50.5")]), Value::Bool(false));
        assert_eq!(eval("isInteger", &[quantity("50000000G")]), Value::Bool(true));
        assert_eq!(eval("compareTo", &[quantity("200M"), quantity("0.2G")]), Value::Int(0));
        assert_eq!(eval("compareTo", &[quantity("50M"), quantity("50Mi")]), Value::Int(-1));
        assert_eq!(eval("add", &[quantity("50k"), Value::Int(20)]).to_string(), "50020");
        assert_eq!(eval("sub", &[quantity("50k"), quantity("20k")]).to_string(), "30k");
    }
}
