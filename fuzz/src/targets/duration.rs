//! Go-format durations (`1h2m3.5s`, `time.ParseDuration`) as the server reads them: in
//! apimachinery (`gofmt::parse_duration`, behind CRD and webhook fields) and in the gateway's
//! flags (`config::parse_duration`). Never a panic; an accepted duration fits Go's int64
//! nanoseconds, and a leading `+` changes nothing.

/// The target: never a panic, and the properties above.
pub fn check(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(nanos) = apimachinery::gofmt::parse_duration(text) {
        assert!(i64::try_from(nanos).is_ok(), "{text:?} read as {nanos} ns");
        if !text.starts_with(['+', '-']) {
            assert_eq!(apimachinery::gofmt::parse_duration(&format!("+{text}")), Ok(nanos));
        }
    }
    let _ = gateway::config::parse_duration(text);
}
