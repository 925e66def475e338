//! Time strings: RFC 3339 `metav1.Time` (seconds) and `metav1.MicroTime` (microseconds) as a
//! JSON body carries them, encoded to protobuf and decoded back (what a protobuf client is
//! served). Never a panic; a time that encodes decodes, and reads back as the same instant at
//! its type's precision, in kube's format (UTC, `Z`, exactly 0 or 6 fraction digits).
use chrono::{DateTime, SecondsFormat, Timelike, Utc};
use serde_json::{Value, json};

/// The target: never a panic, and the properties above.
pub fn check(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let event = json!({
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"name": "e", "namespace": "default", "creationTimestamp": text},
        "involvedObject": {"kind": "Pod", "name": "p"},
        "eventTime": text,
    });
    let Ok(body) = protobuf::encode_object(&event) else { return };
    let back = protobuf::decode_object(&body).unwrap_or_else(|e| panic!("{text:?} encoded but does not decode: {e}"));
    let parsed = DateTime::parse_from_rfc3339(text).expect("an encoded time parses").with_timezone(&Utc);
    let epoch = parsed.timestamp() == 0 && parsed.nanosecond() == 0;
    let expect = |format: SecondsFormat| {
        if epoch {
            // kube's zero Timestamp: an empty message, which reads back as no time.
            Value::Null
        } else {
            let truncated = match format {
                SecondsFormat::Secs => parsed.with_nanosecond(0).unwrap(),
                _ => parsed.with_nanosecond(parsed.nanosecond() / 1000 * 1000).unwrap(),
            };
            Value::String(truncated.to_rfc3339_opts(format, true))
        }
    };
    assert_eq!(back["metadata"]["creationTimestamp"], expect(SecondsFormat::Secs), "Time {text:?}");
    assert_eq!(back["eventTime"], expect(SecondsFormat::Micros), "MicroTime {text:?}");
    for t in [&back["metadata"]["creationTimestamp"], &back["eventTime"]] {
        if let Some(s) = t.as_str() {
            assert!(DateTime::parse_from_rfc3339(s).is_ok(), "{text:?} served as {s:?}, which does not parse");
        }
    }
}
