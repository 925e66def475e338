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
pub fn html_escaped(json: String) -> String {
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
pub fn go_json(value: &serde_json::Value) -> String {
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

/// A duration flag's value as kube's flags read it (pflag's `DurationVar`, so
/// `time.ParseDuration`: `1m30s`, `1h2m3.5s`, `500ms`, `0`, and no bare number but `0`), as a
/// `std::time::Duration`. A negative duration, which Go accepts, is refused: no flag here has a
/// meaning for one.
pub fn parse_flag_duration(s: &str) -> Result<std::time::Duration, String> {
    let nanos = parse_duration(s)?;
    let nanos = u64::try_from(nanos).map_err(|_| format!("negative duration {} is not allowed", quote(s)))?;
    Ok(std::time::Duration::from_nanos(nanos))
}

/// A time Go has read, written back as kube writes a `metav1.Time` (UTC, whole seconds, `Z`)
/// or, with `micros`, a `MicroTime` (six fractional digits). `None` for a year Go cannot write
/// in four digits, which callers leave as sent.
pub fn write_time(t: chrono::DateTime<chrono::FixedOffset>, micros: bool) -> Option<String> {
    let utc = t.with_timezone(&chrono::Utc);
    let layout = if micros { "%Y-%m-%dT%H:%M:%S%.6fZ" } else { "%Y-%m-%dT%H:%M:%SZ" };
    (0..=9999).contains(&chrono::Datelike::year(&utc)).then(|| utc.format(layout).to_string())
}

/// A `metav1.Time` as kube writes it back after reading `s` (RFC 3339, any offset and
/// precision); `None` where Go would not read it or could not write it.
pub fn canonical_time(s: &str) -> Option<String> {
    let t = chrono::DateTime::parse_from_rfc3339(s).ok().filter(|t| t.timestamp_subsec_nanos() < 1_000_000_000)?;
    write_time(t, false)
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

    #[test]
    fn flag_durations_read_as_kube_flags_read_them() {
        use std::time::Duration;
        let ok = |s: &str| parse_flag_duration(s).unwrap();
        assert_eq!(ok("1m0s"), Duration::from_secs(60), "how Go prints a minute");
        assert_eq!(ok("1m30s"), Duration::from_secs(90));
        assert_eq!(ok("1h2m3.5s"), Duration::from_millis(3_723_500));
        assert_eq!(ok("500ms"), Duration::from_millis(500));
        assert_eq!(ok("1.5h"), Duration::from_secs(5_400));
        assert_eq!(ok("0"), Duration::ZERO);
        assert_eq!(ok("0s"), Duration::ZERO);
        assert_eq!(ok("+2s"), Duration::from_secs(2));
        assert_eq!(parse_flag_duration("7"), Err("time: missing unit in duration \"7\"".into()));
        assert_eq!(parse_flag_duration("5x"), Err("time: unknown unit \"x\" in duration \"5x\"".into()));
        assert_eq!(parse_flag_duration(""), Err("time: invalid duration \"\"".into()));
        assert_eq!(parse_flag_duration("-1s"), Err("negative duration \"-1s\" is not allowed".into()));
        assert_eq!(parse_flag_duration("-0s"), Ok(Duration::ZERO));
    }
}
