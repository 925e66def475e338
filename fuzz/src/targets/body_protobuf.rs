//! A request body as Kubernetes protobuf (`k8s\0` + runtime.Unknown), decoded as the gateway
//! decodes it. Never a panic; an accepted body is an object within the nesting bound, and it
//! encodes back to protobuf and decodes to the same object (the server answers protobuf
//! clients with what it stored), times at the Unix epoch aside.
use gateway::negotiate::{Input, decode_body};
use serde_json::Value;

/// The target: never a panic, and the properties above.
pub fn check(data: &[u8]) {
    // Bodies of any kind: the fuzzer rarely finds a kind's name, so half the inputs are given
    // a fixed envelope (a Pod, an Event) around their bytes as the raw message.
    let mut body = Vec::new();
    let input: &[u8] = match data.split_first() {
        Some((&k, rest)) if k % 3 != 0 => {
            let (api_version, kind) = if k % 3 == 1 { ("v1", "Pod") } else { ("v1", "Event") };
            body = protobuf::unknown_head(api_version, kind, rest.len());
            body.extend_from_slice(rest);
            &body
        }
        _ => data,
    };
    let Ok(value) = decode_body(Input::Protobuf, input) else { return };
    assert!(value.is_object());
    crate::assert_storable(&value);
    let encoded =
        protobuf::encode_object(&value).unwrap_or_else(|e| panic!("a decoded body does not encode: {e}: {value}"));
    let back = protobuf::decode_object(&encoded).unwrap_or_else(|e| panic!("a re-encoded body does not decode: {e}"));
    assert_eq!(without_epoch(&back), without_epoch(&value), "protobuf round trip changed the object");
    drop(body);
}

/// `v` without the times at the Unix epoch: kube's `Time.Unmarshal` reads a zero Timestamp as
/// the zero Time (no time), so the epoch does not survive a protobuf round trip in kube either.
fn without_epoch(v: &Value) -> Value {
    let epoch = |v: &Value| matches!(v.as_str(), Some("1970-01-01T00:00:00Z" | "1970-01-01T00:00:00.000000Z"));
    match v {
        Value::Object(m) => {
            Value::Object(m.iter().filter(|(_, x)| !epoch(x)).map(|(k, x)| (k.clone(), without_epoch(x))).collect())
        }
        Value::Array(a) => Value::Array(a.iter().map(without_epoch).collect()),
        other => other.clone(),
    }
}
