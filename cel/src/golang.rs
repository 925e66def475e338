//! What kube's CEL takes from Go's standard library and words its errors with: `strconv.Quote`,
//! `time.ParseDuration`, and how Go prints floats, times and (as cel-go does) durations. The object model uses them too (`apimachinery::gofmt` re-exports
//! them), so they live here, at the bottom.

use std::fmt::Write;

use chrono::{DateTime, FixedOffset, Timelike};

/// `strconv.Quote` / `%q` of a string: double-quoted, with Go's escapes.
pub fn quote(s: &str) -> String {
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

/// Go's `%g` of a float64 (`strconv.FormatFloat(f, 'g', -1, 64)`): the shortest digits that
/// round-trip, in exponent form (`1e+06`) when the exponent is below -4 or at least 6.
pub fn format_double(d: f64) -> String {
    if d.is_nan() {
        return "NaN".into();
    }
    if d.is_infinite() {
        return if d > 0.0 { "+Inf".into() } else { "-Inf".into() };
    }
    if d == 0.0 {
        return if d.is_sign_negative() { "-0".into() } else { "0".into() };
    }
    // Rust's `{:e}` gives the shortest round-trip digits: d.ddd e exp.
    let sci = format!("{d:e}");
    let (mantissa, exp) = sci.split_once('e').expect("exponent form");
    let exp: i32 = exp.parse().expect("exponent");
    if !(-4..6).contains(&exp) {
        let sign = if exp < 0 { '-' } else { '+' };
        return format!("{mantissa}e{sign}{:02}", exp.abs());
    }
    let (neg, mantissa) = match mantissa.strip_prefix('-') {
        Some(m) => (true, m),
        None => (false, mantissa),
    };
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let point = exp + 1;
    let body = if point <= 0 {
        format!("0.{}{digits}", "0".repeat((-point) as usize))
    } else if point as usize >= digits.len() {
        format!("{digits}{}", "0".repeat(point as usize - digits.len()))
    } else {
        format!("{}.{}", &digits[..point as usize], &digits[point as usize..])
    };
    if neg { format!("-{body}") } else { body }
}

/// Go's `time.RFC3339Nano` form: fractional seconds without trailing zeros, `Z` for UTC.
pub fn format_timestamp(t: &DateTime<FixedOffset>) -> String {
    let mut out = t.format("%Y-%m-%dT%H:%M:%S").to_string();
    let nanos = t.nanosecond() % 1_000_000_000;
    if nanos != 0 {
        let frac = format!("{nanos:09}");
        out.push('.');
        out.push_str(frac.trim_end_matches('0'));
    }
    let offset = t.offset().local_minus_utc();
    if offset == 0 {
        out.push('Z');
    } else {
        let sign = if offset < 0 { '-' } else { '+' };
        let a = offset.abs();
        out.push_str(&format!("{sign}{:02}:{:02}", a / 3600, (a % 3600) / 60));
    }
    out
}

/// cel-go's `string(duration)`: seconds, shortest form, `s` suffix (`3600s`, `1.5s`).
pub fn format_duration(nanos: i64) -> String {
    let secs = nanos as f64 / 1e9;
    let mut s = format!("{secs}");
    if s.contains('e') {
        s = format!("{secs:.9}").trim_end_matches('0').trim_end_matches('.').to_string();
    }
    format!("{s}s")
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
}
