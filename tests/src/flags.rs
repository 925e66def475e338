//! Duration flags of the load generator and the robustness runner. Each takes Go's syntax, as
//! the apiserver's flags do (`1m30s`, `500ms`; [`apimachinery::gofmt::parse_flag_duration`]),
//! or a bare number in the unit the flag is named for (`loadgen 5`, `--minutes 30`,
//! `--down-for 5`), which is how these flags have always been written, in the docs too.

use std::time::Duration;

/// A duration whose bare numbers are seconds.
pub fn seconds(s: &str) -> Result<Duration, String> {
    in_unit(s, 1.0)
}

/// A duration whose bare numbers are minutes.
pub fn minutes(s: &str) -> Result<Duration, String> {
    in_unit(s, 60.0)
}

/// A duration of whole seconds whose bare numbers are seconds, as a count of seconds.
pub fn whole_seconds(s: &str) -> Result<u64, String> {
    let d = seconds(s)?;
    if d.subsec_nanos() != 0 {
        return Err(format!("{s:?} is not a whole number of seconds"));
    }
    Ok(d.as_secs())
}

/// `s` as a bare number of `unit_secs` seconds (digits, at most one point), else as Go's
/// duration.
fn in_unit(s: &str, unit_secs: f64) -> Result<Duration, String> {
    let bare = !s.is_empty() && s.bytes().all(|c| c.is_ascii_digit() || c == b'.');
    if !bare {
        return apimachinery::gofmt::parse_flag_duration(s);
    }
    let n: f64 = s.parse().map_err(|_| format!("invalid number {s:?}"))?;
    Duration::try_from_secs_f64(n * unit_secs).map_err(|e| format!("{s:?}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bare_numbers_are_in_the_flags_unit_and_anything_else_is_a_go_duration() {
        assert_eq!(seconds("5"), Ok(Duration::from_secs(5)));
        assert_eq!(seconds("2.5"), Ok(Duration::from_millis(2_500)));
        assert_eq!(seconds("1m30s"), Ok(Duration::from_secs(90)));
        assert_eq!(seconds("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(minutes("30"), Ok(Duration::from_secs(1_800)));
        assert_eq!(minutes("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(whole_seconds("1m"), Ok(60));
        assert_eq!(whole_seconds("1.5s"), Err("\"1.5s\" is not a whole number of seconds".into()));
        assert_eq!(seconds("5x"), Err("time: unknown unit \"x\" in duration \"5x\"".into()));
        assert!(seconds("1.2.3").is_err());
        assert!(seconds("").is_err());
        assert!(seconds("-5s").is_err());
        assert!(seconds("watch").is_err());
    }
}
