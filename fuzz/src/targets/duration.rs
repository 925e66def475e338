//! Go-format durations (`1h2m3.5s`, `time.ParseDuration`) as the server reads them: in
//! apimachinery (`gofmt::parse_duration`, behind CRD and webhook fields) and in every binary's
//! flags (`gofmt::parse_flag_duration`). Never a panic; an accepted duration fits Go's int64
//! nanoseconds, a leading `+` changes nothing, and a flag takes exactly the durations Go
//! accepts that are not negative, at the same length.

/// The target: never a panic, and the properties above.
pub fn check(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(nanos) = apimachinery::gofmt::parse_duration(text) {
        assert!(i64::try_from(nanos).is_ok(), "{text:?} read as {nanos} ns");
        if !text.starts_with(['+', '-']) {
            assert_eq!(apimachinery::gofmt::parse_duration(&format!("+{text}")), Ok(nanos));
        }
    }
    let nanos = apimachinery::gofmt::parse_duration(text).ok();
    let flag = apimachinery::gofmt::parse_flag_duration(text).ok().map(|d| i128::try_from(d.as_nanos()).unwrap());
    assert_eq!(flag, nanos.filter(|n| *n >= 0), "{text:?} as a flag");
}
