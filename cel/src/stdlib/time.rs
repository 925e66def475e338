//! Timestamps and durations as cel-go has them: RFC 3339 timestamps within years 1 to 9999,
//! Go's duration syntax, getters in UTC unless a time zone is given (kube's
//! `DefaultUTCTimeZone`), and Go's string forms.

use chrono::{DateTime, Datelike, FixedOffset, NaiveDateTime, Offset, TimeZone, Timelike, Utc};

use crate::error::{EvalError, EvalResult};
pub use crate::golang::{format_duration, format_timestamp};
use crate::value::Value;

/// The earliest timestamp, 0001-01-01T00:00:00Z, in Unix seconds.
const MIN_UNIX: i64 = -62_135_596_800;
/// The latest, 9999-12-31T23:59:59Z.
const MAX_UNIX: i64 = 253_402_300_799;

fn overflow() -> EvalError {
    EvalError::msg("timestamp overflow")
}

/// `t` if it is within CEL's range.
pub fn in_range(t: DateTime<FixedOffset>) -> EvalResult {
    if (MIN_UNIX..=MAX_UNIX).contains(&t.timestamp()) { Ok(Value::Timestamp(t)) } else { Err(overflow()) }
}

/// `timestamp(int)`: Unix seconds.
pub fn from_unix(secs: i64) -> EvalResult {
    if !(MIN_UNIX..=MAX_UNIX).contains(&secs) {
        return Err(overflow());
    }
    let t = Utc.timestamp_opt(secs, 0).single().ok_or_else(overflow)?;
    Ok(Value::Timestamp(t.fixed_offset()))
}

/// Go's `time.Parse(time.RFC3339, s)`: `2006-01-02T15:04:05Z07:00`, fractional seconds
/// allowed, `T` and `Z` upper case.
pub fn parse_rfc3339(s: &str) -> Option<DateTime<FixedOffset>> {
    let b = s.as_bytes();
    if b.len() < 20 || b[10] != b'T' || b[4] != b'-' || b[7] != b'-' || b[13] != b':' || b[16] != b':' {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<u32> {
        let part = s.get(r)?;
        part.bytes().all(|c| c.is_ascii_digit()).then(|| part.parse().ok())?
    };
    let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hour, minute, second) = (num(11..13)?, num(14..16)?, num(17..19)?);
    let mut rest = &s[19..];
    let mut nanos = 0u32;
    if let Some(frac) = rest.strip_prefix('.') {
        let n = frac.bytes().take_while(u8::is_ascii_digit).count();
        if n == 0 {
            return None;
        }
        let digits = &frac[..n];
        let mut scaled: String = digits.chars().take(9).collect();
        while scaled.len() < 9 {
            scaled.push('0');
        }
        nanos = scaled.parse().ok()?;
        rest = &frac[n..];
    }
    let offset = if rest == "Z" {
        0
    } else {
        let sign = match rest.as_bytes().first()? {
            b'+' => 1,
            b'-' => -1,
            _ => return None,
        };
        let off = &rest[1..];
        if off.len() != 5 || off.as_bytes()[2] != b':' {
            return None;
        }
        let h: i32 = off[..2].parse().ok()?;
        let m: i32 = off[3..].parse().ok()?;
        if h > 23 || m > 59 {
            return None;
        }
        sign * (h * 3600 + m * 60)
    };
    if hour > 23 || minute > 59 || second > 59 {
        return None;
    }
    let date = chrono::NaiveDate::from_ymd_opt(year as i32, month, day)?;
    let naive = date.and_hms_nano_opt(hour, minute, second, nanos)?;
    let tz = FixedOffset::east_opt(offset)?;
    tz.from_local_datetime(&naive).single()
}

/// `t + d`, kept in `t`'s offset.
pub fn add(t: &DateTime<FixedOffset>, d: i64) -> EvalResult {
    let secs =
        t.timestamp().checked_add(d.div_euclid(1_000_000_000)).ok_or_else(|| EvalError::msg("integer overflow"))?;
    let mut nanos = i64::from(t.timestamp_subsec_nanos()) + d.rem_euclid(1_000_000_000);
    let mut secs = secs;
    if nanos >= 1_000_000_000 {
        nanos -= 1_000_000_000;
        secs = secs.checked_add(1).ok_or_else(|| EvalError::msg("integer overflow"))?;
    }
    if !(MIN_UNIX..=MAX_UNIX).contains(&secs) {
        return Err(overflow());
    }
    let utc = Utc.timestamp_opt(secs, nanos as u32).single().ok_or_else(overflow)?;
    Ok(Value::Timestamp(utc.with_timezone(t.offset())))
}

/// `a - b` for timestamps: a duration.
pub fn difference(a: &DateTime<FixedOffset>, b: &DateTime<FixedOffset>) -> EvalResult {
    let ns =
        |t: &DateTime<FixedOffset>| i128::from(t.timestamp()) * 1_000_000_000 + i128::from(t.timestamp_subsec_nanos());
    i64::try_from(ns(a) - ns(b)).map(Value::Duration).map_err(|_| EvalError::msg("integer overflow"))
}

/// The time zone of a getter's argument: an IANA name or a `[+-]hh:mm` offset.
fn zone(tz: &str, t: &DateTime<FixedOffset>) -> Result<NaiveDateTime, EvalError> {
    if let Some(i) = tz.find(':') {
        let (sign, hours) = match tz.as_bytes().first() {
            Some(b'-') => (-1, &tz[1..i]),
            Some(b'+') => (1, &tz[1..i]),
            _ => (1, &tz[..i]),
        };
        let h: i32 = hours.parse().map_err(|_| EvalError::msg(format!("unknown time zone {tz}")))?;
        let m: i32 = tz[i + 1..].parse().map_err(|_| EvalError::msg(format!("unknown time zone {tz}")))?;
        let offset = FixedOffset::east_opt(sign * (h * 3600 + m * 60))
            .ok_or_else(|| EvalError::msg(format!("unknown time zone {tz}")))?;
        return Ok(t.with_timezone(&offset).naive_local());
    }
    if tz == "UTC" || tz.is_empty() {
        return Ok(t.naive_utc());
    }
    let zone: chrono_tz::Tz = tz.parse().map_err(|_| EvalError::msg(format!("unknown time zone {tz}")))?;
    let local = t.with_timezone(&zone);
    Ok(local.naive_utc() + chrono::Duration::seconds(i64::from(local.offset().fix().local_minus_utc())))
}

/// The timestamp and duration getters (`getFullYear`, `getHours`, ...).
pub fn accessor(name: &str, args: &[Value]) -> EvalResult {
    let n = |v: i64| Ok(Value::Int(v));
    match args {
        [Value::Duration(d)] => match name {
            "getHours" => n(d / 3_600_000_000_000),
            "getMinutes" => n(d / 60_000_000_000),
            "getSeconds" => n(d / 1_000_000_000),
            "getMilliseconds" => n(d / 1_000_000),
            _ => Err(EvalError::NoSuchOverload),
        },
        [Value::Timestamp(t)] => timestamp_field(name, t.naive_utc()),
        [Value::Timestamp(t), Value::String(tz)] => timestamp_field(name, zone(tz, t)?),
        _ => Err(EvalError::NoSuchOverload),
    }
}

fn timestamp_field(name: &str, t: NaiveDateTime) -> EvalResult {
    let v = match name {
        "getFullYear" => i64::from(t.year()),
        "getMonth" => i64::from(t.month0()),
        "getDayOfYear" => i64::from(t.ordinal0()),
        "getDayOfMonth" => i64::from(t.day0()),
        "getDate" => i64::from(t.day()),
        "getDayOfWeek" => i64::from(t.weekday().num_days_from_sunday()),
        "getHours" => i64::from(t.hour()),
        "getMinutes" => i64::from(t.minute()),
        "getSeconds" => i64::from(t.second()),
        "getMilliseconds" => i64::from(t.nanosecond() / 1_000_000),
        _ => return Err(EvalError::NoSuchOverload),
    };
    Ok(Value::Int(v))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ts(s: &str) -> DateTime<FixedOffset> {
        parse_rfc3339(s).unwrap()
    }

    #[test]
    fn timestamps_parse_and_print_as_go_does() {
        assert_eq!(format_timestamp(&ts("2024-01-02T03:04:05Z")), "2024-01-02T03:04:05Z");
        assert_eq!(format_timestamp(&ts("2024-01-02T03:04:05.120+01:00")), "2024-01-02T03:04:05.12+01:00");
        assert!(parse_rfc3339("2024-01-02 03:04:05Z").is_none());
        assert!(parse_rfc3339("2024-01-02T03:04:05z").is_none());
        assert!(from_unix(MAX_UNIX + 1).is_err());
    }

    #[test]
    fn durations_print_in_seconds() {
        assert_eq!(format_duration(3_600_000_000_000), "3600s");
        assert_eq!(format_duration(1_500_000_000), "1.5s");
        assert_eq!(format_duration(1), "0.000000001s");
    }

    #[test]
    fn getters_take_a_time_zone() {
        let t = Value::Timestamp(ts("2024-01-02T03:04:05Z"));
        assert_eq!(accessor("getHours", std::slice::from_ref(&t)), Ok(Value::Int(3)));
        assert_eq!(accessor("getHours", &[t.clone(), Value::string("+05:30")]), Ok(Value::Int(8)));
        assert_eq!(accessor("getHours", &[t.clone(), Value::string("America/New_York")]), Ok(Value::Int(22)));
        assert_eq!(accessor("getDayOfWeek", std::slice::from_ref(&t)), Ok(Value::Int(2)));
        assert_eq!(accessor("getMonth", &[t]), Ok(Value::Int(0)));
    }
}
