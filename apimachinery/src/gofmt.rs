//! Formatting helpers that reproduce how Go's `fmt` renders values inside kube's error messages
//! (`%q` and `%#v`), so messages built here read exactly as kube-apiserver's.

pub use kube_cel::golang::parse_duration;
pub(crate) use kube_cel::golang::quote;

/// `%#v` of a `[]string`: `[]string(nil)` when empty (kube passes nil slices there),
/// `[]string{"a", "b"}` otherwise.
pub(crate) fn string_slice(values: &[String]) -> String {
    if values.is_empty() {
        return "[]string(nil)".to_string();
    }
    let quoted: Vec<String> = values.iter().map(|v| quote(v)).collect();
    format!("[]string{{{}}}", quoted.join(", "))
}

/// JSON as Go's `encoding/json` writes it: compact, map keys sorted (serde_json's maps are
/// ordered), and `<`, `>`, `&`, U+2028 and U+2029 escaped, which can only occur inside strings.
pub(crate) fn html_escaped(json: String) -> String {
    if !json.contains(['<', '>', '&', '\u{2028}', '\u{2029}']) {
        return json;
    }
    json.replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026")
        .replace('\u{2028}', "\\u2028")
        .replace('\u{2029}', "\\u2029")
}

/// `json.Marshal` of a value: see [`html_escaped`].
pub(crate) fn go_json(value: &serde_json::Value) -> String {
    html_escaped(serde_json::to_string(value).unwrap_or_default())
}

/// `utilerrors.NewAggregate(errs).Error()`: one message as is, several deduplicated and joined
/// as `[a, b]`.
pub fn aggregate(messages: &[String]) -> String {
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
