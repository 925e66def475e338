//! Type conversions (`int(x)`, `string(x)`, ...) with cel-go's rules and messages: `type
//! conversion error from 'string' to 'int'` for what does not parse, `integer overflow` for
//! what does not fit.

use std::sync::Arc;

use crate::error::{EvalError, EvalResult};
pub use crate::golang::format_double;
use crate::stdlib::time;
use crate::value::Value;

/// cel-go's name of a conversion's target type in its messages.
fn target_name(function: &str) -> &'static str {
    match function {
        "int" => "int",
        "uint" => "uint",
        "double" => "double",
        "string" => "string",
        "bytes" => "bytes",
        "bool" => "bool",
        "duration" => "google.protobuf.Duration",
        _ => "google.protobuf.Timestamp",
    }
}

fn conversion_error(v: &Value, function: &str) -> EvalError {
    EvalError::msg(format!("type conversion error from '{}' to '{}'", v.type_name(), target_name(function)))
}

/// Converts `v` with the conversion function `function`.
pub fn convert(function: &str, v: &Value) -> EvalResult {
    use Value as V;
    let err = || conversion_error(v, function);
    let int_overflow = || EvalError::msg("integer overflow");
    let uint_overflow = || EvalError::msg("unsigned integer overflow");
    match (function, v) {
        ("int", V::Int(i)) => Ok(V::Int(*i)),
        ("int", V::Uint(u)) => i64::try_from(*u).map(V::Int).map_err(|_| int_overflow()),
        ("int", V::Double(d)) => {
            if d.is_nan() || *d <= -9.223_372_036_854_776e18 || *d >= 9.223_372_036_854_776e18 {
                Err(int_overflow())
            } else {
                Ok(V::Int(*d as i64))
            }
        }
        ("int", V::String(s)) => parse_go_int(s).map(V::Int).ok_or_else(err),
        ("int", V::Duration(d)) => Ok(V::Int(*d)),
        ("int", V::Timestamp(t)) => Ok(V::Int(t.timestamp())),
        ("uint", V::Uint(u)) => Ok(V::Uint(*u)),
        ("uint", V::Int(i)) => u64::try_from(*i).map(V::Uint).map_err(|_| uint_overflow()),
        ("uint", V::Double(d)) => {
            if d.is_nan() || *d < 0.0 || *d >= 1.844_674_407_370_955_2e19 {
                Err(uint_overflow())
            } else {
                Ok(V::Uint(*d as u64))
            }
        }
        ("uint", V::String(s)) => parse_go_uint(s).map(V::Uint).ok_or_else(err),
        ("double", V::Double(d)) => Ok(V::Double(*d)),
        ("double", V::Int(i)) => Ok(V::Double(*i as f64)),
        ("double", V::Uint(u)) => Ok(V::Double(*u as f64)),
        ("double", V::String(s)) => parse_go_float(s).map(V::Double).ok_or_else(err),
        ("string", V::String(s)) => Ok(V::String(s.clone())),
        ("string", V::Bool(b)) => Ok(V::string(b.to_string())),
        ("string", V::Int(i)) => Ok(V::string(i.to_string())),
        ("string", V::Uint(u)) => Ok(V::string(u.to_string())),
        ("string", V::Double(d)) => Ok(V::string(format_double(*d))),
        ("string", V::Bytes(b)) => match std::str::from_utf8(b) {
            Ok(s) => Ok(V::string(s)),
            Err(_) => Err(EvalError::msg("invalid UTF-8 in bytes, cannot convert to string")),
        },
        ("string", V::Duration(d)) => Ok(V::string(time::format_duration(*d))),
        ("string", V::Timestamp(t)) => Ok(V::string(time::format_timestamp(t))),
        ("bytes", V::Bytes(b)) => Ok(V::Bytes(b.clone())),
        ("bytes", V::String(s)) => Ok(V::Bytes(Arc::from(s.as_bytes()))),
        ("bool", V::Bool(b)) => Ok(V::Bool(*b)),
        ("bool", V::String(s)) => match &**s {
            "1" | "t" | "T" | "TRUE" | "true" | "True" => Ok(V::Bool(true)),
            "0" | "f" | "F" | "FALSE" | "false" | "False" => Ok(V::Bool(false)),
            _ => Err(err()),
        },
        ("duration", V::Duration(d)) => Ok(V::Duration(*d)),
        ("duration", V::String(s)) => match crate::golang::parse_duration(s) {
            Ok(n) => i64::try_from(n).map(V::Duration).map_err(|_| err()),
            Err(_) => Err(err()),
        },
        ("timestamp", V::Timestamp(t)) => Ok(V::Timestamp(*t)),
        ("timestamp", V::String(s)) => time::parse_rfc3339(s).ok_or_else(err).and_then(time::in_range),
        ("timestamp", V::Int(i)) => time::from_unix(*i),
        // cel-go declares `duration(int)` but has no conversion for it.
        (
            _,
            V::Int(_)
            | V::Uint(_)
            | V::Double(_)
            | V::String(_)
            | V::Bytes(_)
            | V::Bool(_)
            | V::Duration(_)
            | V::Timestamp(_),
        ) => Err(err()),
        _ => Err(EvalError::NoSuchOverload),
    }
}

/// Go's `strconv.ParseInt(s, 10, 64)`.
fn parse_go_int(s: &str) -> Option<i64> {
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// Go's `strconv.ParseUint(s, 10, 64)`: no sign.
fn parse_go_uint(s: &str) -> Option<u64> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// Go's `strconv.ParseFloat(s, 64)`: decimal and exponent forms, `inf`, `infinity`, `nan` in
/// any case, underscores only between digits of a prefixed literal (not supported here).
fn parse_go_float(s: &str) -> Option<f64> {
    let body = s.strip_prefix(['+', '-']).unwrap_or(s);
    let lower = body.to_ascii_lowercase();
    if matches!(lower.as_str(), "inf" | "infinity" | "nan") {
        return s.to_ascii_lowercase().parse().ok().or_else(|| {
            let v = if lower == "nan" { f64::NAN } else { f64::INFINITY };
            Some(if s.starts_with('-') { -v } else { v })
        });
    }
    if body.is_empty() || !body.bytes().all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'+' | b'-')) {
        return None;
    }
    s.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_print_as_go_prints_them() {
        for (d, s) in [
            (1.0, "1"),
            (1.5, "1.5"),
            (123456.0, "123456"),
            (1234567.0, "1.234567e+06"),
            (1e6, "1e+06"),
            (1e21, "1e+21"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (-2.5e-7, "-2.5e-07"),
        ] {
            assert_eq!(format_double(d), s, "{d}");
        }
    }

    #[test]
    fn strings_convert_as_go_parses_them() {
        assert_eq!(convert("int", &Value::string("-12")), Ok(Value::Int(-12)));
        assert_eq!(
            convert("int", &Value::string("1.5")),
            Err(EvalError::msg("type conversion error from 'string' to 'int'"))
        );
        assert!(convert("uint", &Value::string("+1")).is_err());
        assert_eq!(convert("bool", &Value::string("T")), Ok(Value::Bool(true)));
        assert_eq!(convert("double", &Value::string("1e3")), Ok(Value::Double(1000.0)));
        assert_eq!(convert("int", &Value::Double(1e19)), Err(EvalError::msg("integer overflow")));
        assert!(convert("duration", &Value::Int(1)).is_err(), "cel-go declares it but cannot convert");
    }
}
