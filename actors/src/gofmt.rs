//! Formatting helpers that reproduce how Go's `fmt` renders values inside kube's error messages
//! (`%q` and `%#v`), so messages built here read exactly as kube-apiserver's.

use std::fmt::Write;

/// `strconv.Quote` / `%q` of a string: double-quoted, with Go's escapes.
pub(crate) fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if c.is_control() => {
                if (c as u32) < 0x10000 {
                    let _ = write!(out, "\\u{:04x}", c as u32);
                } else {
                    let _ = write!(out, "\\U{:08x}", c as u32);
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// `%#v` of a `[]string`: `[]string(nil)` when empty (kube passes nil slices there),
/// `[]string{"a", "b"}` otherwise.
pub(crate) fn string_slice(values: &[String]) -> String {
    if values.is_empty() {
        return "[]string(nil)".to_string();
    }
    let quoted: Vec<String> = values.iter().map(|v| quote(v)).collect();
    format!("[]string{{{}}}", quoted.join(", "))
}

/// `utilerrors.NewAggregate(errs).Error()`: one message as is, several deduplicated and joined
/// as `[a, b]`.
pub(crate) fn aggregate(messages: &[String]) -> String {
    match messages {
        [] => String::new(),
        [one] => one.clone(),
        many => {
            let mut seen: Vec<&str> = Vec::new();
            for m in many {
                if !seen.contains(&m.as_str()) {
                    seen.push(m);
                }
            }
            if seen.len() == 1 { seen[0].to_string() } else { format!("[{}]", seen.join(", ")) }
        }
    }
}

/// How Go's JSON decoder names a value's kind in an `UnmarshalTypeError` (`string`, `number`).
pub(crate) fn json_kind(value: &serde_json::Value) -> &'static str {
    use serde_json::Value;
    match value {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quote_escapes_like_go() {
        assert_eq!(quote("a\"b\\c\n"), r#""a\"b\\c\n""#);
        assert_eq!(quote("\u{1}"), r#""\x01""#);
        assert_eq!(quote("héllo"), "\"héllo\"");
    }

    #[test]
    fn string_slice_prints_go_syntax() {
        assert_eq!(string_slice(&[]), "[]string(nil)");
        assert_eq!(string_slice(&["a".into(), "b".into()]), r#"[]string{"a", "b"}"#);
    }

    #[test]
    fn aggregate_dedups_and_brackets() {
        assert_eq!(aggregate(&["x".into()]), "x");
        assert_eq!(aggregate(&["x".into(), "x".into()]), "x");
        assert_eq!(aggregate(&["x".into(), "y".into(), "x".into()]), "[x, y]");
    }
}
