//! How Go prints the decoded JSON values that appear in kube's messages.
//!
//! kube decodes a custom resource into `map[string]interface{}` with integers as `int64` and
//! other numbers as `float64` (serde_json's `i64` / `f64` split matches; a `u64` beyond `i64`
//! is a `float64` in Go). Messages then print these with `fmt` (`%v`, `%#v`) or `encoding/json`.

use apimachinery::validation::field::{Bad, go_quote};
use serde_json::{Map, Number, Value};

/// A JSON number as Go holds it after decoding.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Num {
    /// `int64`.
    Int(i64),
    /// `float64`.
    Float(f64),
}

/// The Go type a decoded number has.
pub(crate) fn num(n: &Number) -> Num {
    match n.as_i64() {
        Some(i) => Num::Int(i),
        None => Num::Float(n.as_f64().unwrap_or(f64::NAN)),
    }
}

/// `%v` of a `float64`: strconv's shortest `'g'`, exponent form when the decimal exponent is
/// below -4 or at least 6 (`1e+06`, `1e-05`, `1.5`).
pub(crate) fn float_v(f: f64) -> String {
    if f.is_nan() {
        return "NaN".to_string();
    }
    if f.is_infinite() {
        return if f > 0.0 { "+Inf" } else { "-Inf" }.to_string();
    }
    let (neg, digits, exp) = shortest(f);
    let sign = if neg { "-" } else { "" };
    if !(-4..6).contains(&exp) {
        format!("{sign}{}", exp_form(&digits, exp))
    } else {
        format!("{sign}{}", fixed_form(&digits, exp))
    }
}

/// `encoding/json`'s rendering of a `float64`: fixed notation, exponent form below 1e-6 or
/// from 1e21 on (`1e+21`, `1e-7`).
pub(crate) fn float_json(f: f64) -> String {
    let (neg, digits, exp) = shortest(f);
    let sign = if neg { "-" } else { "" };
    let abs = f.abs();
    if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
        let mut s = exp_form(&digits, exp);
        // Go trims `e-07` to `e-7`.
        if let Some(at) = s.find("e-0") {
            s.remove(at + 2);
        }
        format!("{sign}{s}")
    } else {
        format!("{sign}{}", fixed_form(&digits, exp))
    }
}

/// Shortest round-trip decimal digits of `|f|` and the exponent of the first digit.
fn shortest(f: f64) -> (bool, String, i32) {
    let neg = f.is_sign_negative() && f != 0.0;
    let e = format!("{:e}", f.abs());
    let (mantissa, exp) = e.split_once('e').unwrap_or((&e, "0"));
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    (neg, digits, exp.parse().unwrap_or(0))
}

fn exp_form(digits: &str, exp: i32) -> String {
    let (first, rest) = digits.split_at(1);
    let mantissa = if rest.is_empty() { first.to_string() } else { format!("{first}.{rest}") };
    let sign = if exp < 0 { '-' } else { '+' };
    format!("{mantissa}e{sign}{:02}", exp.abs())
}

fn fixed_form(digits: &str, exp: i32) -> String {
    if digits == "0" {
        return "0".to_string();
    }
    if exp < 0 {
        return format!("0.{}{digits}", "0".repeat((-exp - 1) as usize));
    }
    let int_len = exp as usize + 1;
    if digits.len() <= int_len {
        format!("{digits}{}", "0".repeat(int_len - digits.len()))
    } else {
        format!("{}.{}", &digits[..int_len], &digits[int_len..])
    }
}

/// `%v` of a decoded number.
pub(crate) fn num_v(n: Num) -> String {
    match n {
        Num::Int(i) => i.to_string(),
        Num::Float(f) => float_v(f),
    }
}

/// A decoded value as `field.Error` prints its bad value: strings `%q`, numbers and booleans
/// `%v`, nil `null`, maps and slices `%#v`.
pub(crate) fn bad(v: &Value) -> Bad {
    match v {
        Value::Null => Bad::Null,
        Value::Bool(b) => Bad::Bool(*b),
        Value::String(s) => Bad::Str(s.clone()),
        Value::Number(n) => match num(n) {
            Num::Int(i) => Bad::Int(i),
            Num::Float(f) => Bad::Raw(float_v(f)),
        },
        other => Bad::Raw(sharp_v(other)),
    }
}

/// `%#v` of a decoded `interface{}` value: `map[string]interface {}{"a":1}`,
/// `[]interface {}{"x", true}`, `interface {}(nil)` (map keys sorted, as fmt sorts them).
pub(crate) fn sharp_v(v: &Value) -> String {
    match v {
        Value::Null => "interface {}(nil)".to_string(),
        Value::Bool(b) => b.to_string(),
        Value::String(s) => go_quote(s),
        Value::Number(n) => num_v(num(n)),
        Value::Array(a) => {
            let items: Vec<String> = a.iter().map(sharp_v).collect();
            format!("[]interface {{}}{{{}}}", items.join(", "))
        }
        Value::Object(m) => sharp_v_map(m),
    }
}

/// `%#v` of a `map[string]interface{}`.
pub(crate) fn sharp_v_map(m: &Map<String, Value>) -> String {
    let mut keys: Vec<&String> = m.keys().collect();
    keys.sort();
    let items: Vec<String> = keys.iter().map(|k| format!("{}:{}", go_quote(k), sharp_v(&m[k.as_str()]))).collect();
    format!("map[string]interface {{}}{{{}}}", items.join(", "))
}

/// `json.Marshal` of a decoded value: keys sorted, Go's number forms, and Go's HTML-safe
/// string escapes (`<` as `\u003c`).
pub(crate) fn json_marshal(v: &Value) -> String {
    let mut out = String::new();
    marshal_into(v, &mut out);
    out
}

fn marshal_into(v: &Value, out: &mut String) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => match num(n) {
            Num::Int(i) => out.push_str(&i.to_string()),
            Num::Float(f) => out.push_str(&float_json(f)),
        },
        Value::String(s) => marshal_str(s, out),
        Value::Array(a) => {
            out.push('[');
            for (i, item) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                marshal_into(item, out);
            }
            out.push(']');
        }
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                marshal_str(k, out);
                out.push(':');
                marshal_into(&m[k.as_str()], out);
            }
            out.push('}');
        }
    }
}

fn marshal_str(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => out.push_str(&format!("\\u{:04x}", c as u32)),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// How Go's JSON decoder names a value's kind in an `UnmarshalTypeError`.
pub(crate) fn json_kind(v: &Value) -> String {
    match v {
        Value::Null => "null".to_string(),
        Value::Bool(_) => "bool".to_string(),
        Value::String(_) => "string".to_string(),
        Value::Array(_) => "array".to_string(),
        Value::Object(_) => "object".to_string(),
        Value::Number(_) => "number".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn floats_print_like_go() {
        assert_eq!(float_v(1.5), "1.5");
        assert_eq!(float_v(2.0), "2");
        assert_eq!(float_v(1e6), "1e+06");
        assert_eq!(float_v(123456.0), "123456");
        assert_eq!(float_v(0.0001), "0.0001");
        assert_eq!(float_v(0.00001), "1e-05");
        assert_eq!(float_v(-2.5e-7), "-2.5e-07");
        assert_eq!(float_v(1.23456789e8), "1.23456789e+08");
        assert_eq!(float_json(1e21), "1e+21");
        assert_eq!(float_json(1e20), "100000000000000000000");
        assert_eq!(float_json(1e-7), "1e-7");
        assert_eq!(float_json(0.5), "0.5");
    }

    #[test]
    fn values_print_like_go() {
        assert_eq!(
            sharp_v(&json!({"b": [1, "x"], "a": null})),
            r#"map[string]interface {}{"a":interface {}(nil), "b":[]interface {}{1, "x"}}"#
        );
        assert_eq!(json_marshal(&json!({"b": 1.0, "a": "<"})), r#"{"a":"\u003c","b":1}"#);
        assert_eq!(bad(&json!(1.0)), Bad::Raw("1".to_string()));
    }
}
