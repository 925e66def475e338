//! kube-openapi's `strfmt` checks that both CEL's `format` library and CRD schemas' `format`
//! keyword use: one implementation for the server.

use std::sync::LazyLock;

use regex::Regex;

static UUID: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$").expect("static regex")
});
static BASE64: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=|[A-Za-z0-9+/]{4})$")
        .expect("static regex")
});
/// strfmt's `DateTimePattern`, applied to the part after the `t` (its `.` is unescaped).
static TIME_PART: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))$").expect("static regex")
});

/// strfmt's `IsUUID`: 32 hex digits, dashes optional.
pub fn is_uuid(s: &str) -> bool {
    UUID.is_match(s)
}

/// strfmt's base64 (`byte`) check.
pub fn is_base64(s: &str) -> bool {
    BASE64.is_match(s)
}

/// Go's `time.Parse("2006-01-02", s)`: exactly `YYYY-MM-DD`, a real calendar day.
pub fn is_date(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 10
        && b[4] == b'-'
        && b[7] == b'-'
        && s[..4].bytes().chain(s[5..7].bytes()).chain(s[8..].bytes()).all(|c| c.is_ascii_digit())
        && chrono::NaiveDate::from_ymd_opt(
            s[..4].parse().unwrap_or(0),
            s[5..7].parse().unwrap_or(0),
            s[8..].parse().unwrap_or(0),
        )
        .is_some()
}

/// strfmt's `IsDateTime`: split at `t` (case-insensitive), a date before it and
/// `hh:mm:ss[.frac](z|±hh:mm)` after it, with hours, minutes and seconds compared as strings.
pub fn is_date_time(s: &str) -> bool {
    if s.len() < 4 {
        return false;
    }
    let lower = s.to_lowercase();
    let parts: Vec<&str> = lower.split('t').collect();
    if parts.len() < 2 || !is_date(parts[0]) {
        return false;
    }
    let Some(m) = TIME_PART.captures(parts[1]) else { return false };
    &m[1] <= "23" && &m[2] <= "59" && &m[3] <= "59"
}
