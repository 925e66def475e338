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

/// `time.ParseDuration`: `[-+]?([0-9]*(\.[0-9]*)?[a-z]+)+` in nanoseconds, with Go's error
/// messages (`time: invalid duration "x"`, `time: missing unit in duration "5"`).
pub fn parse_duration(orig: &str) -> Result<i128, String> {
    const LIMIT: i128 = 1 << 63;
    let invalid = || format!("time: invalid duration {}", quote(orig));
    let mut s = orig;
    let mut neg = false;
    if let Some(c) = s.chars().next()
        && (c == '-' || c == '+')
    {
        neg = c == '-';
        s = &s[1..];
    }
    if s == "0" {
        return Ok(0);
    }
    if s.is_empty() {
        return Err(invalid());
    }
    let mut total: i128 = 0;
    while !s.is_empty() {
        let b = s.as_bytes();
        if !(b[0] == b'.' || b[0].is_ascii_digit()) {
            return Err(invalid());
        }
        let digits = b.iter().take_while(|c| c.is_ascii_digit()).count();
        let whole: i128 = if digits == 0 { 0 } else { s[..digits].parse().map_err(|_| invalid())? };
        s = &s[digits..];
        let mut fraction = (0i128, 1i128);
        let mut post = false;
        if s.starts_with('.') {
            s = &s[1..];
            let n = s.bytes().take_while(|c| c.is_ascii_digit()).count();
            for c in s[..n].bytes().take(18) {
                fraction = (fraction.0 * 10 + i128::from(c - b'0'), fraction.1 * 10);
            }
            post = n > 0;
            s = &s[n..];
        }
        if digits == 0 && !post {
            return Err(invalid());
        }
        let unit_len = s.find(|c: char| c == '.' || c.is_ascii_digit()).unwrap_or(s.len());
        if unit_len == 0 {
            return Err(format!("time: missing unit in duration {}", quote(orig)));
        }
        let unit = &s[..unit_len];
        s = &s[unit_len..];
        let scale: i128 = match unit {
            "ns" => 1,
            "us" | "\u{b5}s" | "\u{3bc}s" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "m" => 60_000_000_000,
            "h" => 3_600_000_000_000,
            _ => return Err(format!("time: unknown unit {} in duration {}", quote(unit), quote(orig))),
        };
        // Go's overflow checks: a component, and the sum, may reach 2^63 (the magnitude of
        // the most negative duration) and no further.
        if whole > LIMIT / scale {
            return Err(invalid());
        }
        total += whole * scale + fraction.0 * scale / fraction.1;
        if total > LIMIT {
            return Err(invalid());
        }
    }
    if !neg && total > i128::from(i64::MAX) {
        return Err(invalid());
    }
    Ok(if neg { -total } else { total })
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
    fn durations_past_int64_are_invalid_not_an_overflow() {
        // 39 digits of hours once overflowed the i128 multiplication.
        let huge = "999999999999999999999999999999999999999h";
        assert_eq!(parse_duration(huge), Err(format!("time: invalid duration \"{huge}\"")));
        assert!(parse_duration("2562048h").is_err());
        assert_eq!(parse_duration("2562047h"), Ok(2_562_047 * 3_600_000_000_000));
        assert_eq!(parse_duration("9223372036854775807ns"), Ok(i128::from(i64::MAX)));
        assert!(parse_duration("9223372036854775808ns").is_err());
        assert_eq!(parse_duration("-9223372036854775808ns"), Ok(i128::from(i64::MIN)));
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
