//! Stored bytes: objects are `serde_json::Value`s encoded with rmp-serde (MessagePack),
//! smaller and faster to decode than JSON. `to_vec_named` keeps map keys, so every value
//! round-trips (the positional encoding breaks on `skip_serializing_if`).
//!
//! As in kube, an object is stored without its `resourceVersion`: that is the key's mod
//! revision, set again on every read ([`decode_object`]).

use apimachinery::object::ObjectExt;
use bytes::Bytes;
use serde_json::Value;

use storage::{KeyValue, StorageError};

/// Encodes an object for storage.
pub fn encode(obj: &Value) -> Bytes {
    Bytes::from(rmp_serde::to_vec_named(obj).expect("a JSON value always encodes"))
}

/// Decodes stored bytes; `key` names the object in the error.
pub fn decode(key: &str, bytes: &[u8]) -> Result<Value, StorageError> {
    rmp_serde::from_slice(bytes).map_err(|e| StorageError::Corrupt { key: key.to_string(), message: e.to_string() })
}

/// Reads an object from a stored key, setting `metadata.resourceVersion` from the key's mod
/// revision.
pub fn decode_object(kv: &KeyValue) -> Result<Value, StorageError> {
    let mut obj = decode(&kv.key, &kv.value)?;
    obj.set_meta_str("resourceVersion", &kv.mod_revision.to_string());
    Ok(obj)
}

/// The bytes to store for `obj`: without `resourceVersion` and `selfLink`.
pub fn encode_object(obj: &Value) -> Bytes {
    let mut stored = obj.clone();
    if let Some(meta) = stored.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("resourceVersion");
        meta.remove("selfLink");
    }
    encode(&stored)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn round_trips_every_json_shape() {
        let v = json!({"a": 1, "b": -2, "c": 1.5, "d": "s", "e": [true, null, {"x": []}], "f": {}, "g": u64::MAX});
        assert_eq!(decode("k", &encode(&v)).unwrap(), v);
    }

    #[test]
    fn garbage_is_corrupt_not_a_panic() {
        assert!(matches!(decode("k", &[0xc1]), Err(StorageError::Corrupt { .. })));
    }
}
