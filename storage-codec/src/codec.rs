//! Stored bytes, as kube-apiserver writes them to etcd, so that a kube-apiserver sharing the
//! etcd reads what this server writes and the other way round:
//! - built-in kinds as the `k8s\0` magic and a `runtime.Unknown` holding the object's protobuf
//!   message, typed by the resource's storage version;
//! - custom resources, CustomResourceDefinitions and APIServices as JSON (a CRD in
//!   `apiextensions.k8s.io/v1beta1`, through its kind's [`Strategy::to_etcd_version`]).
//!
//! Reads tell the formats apart by their first byte, and also read MessagePack, which this
//! server wrote before: such a value is rewritten in kube's form by its next write (or by
//! `apiserver migrate-storage`).
//!
//! As in kube, an object is stored without its `resourceVersion`: that is the key's mod
//! revision, set again on every read ([`decode_object`]).
//!
//! [`Strategy::to_etcd_version`]: apimachinery::catalogue::Strategy::to_etcd_version

use apimachinery::catalogue::{ResourceDef, StorageMedia};
use apimachinery::error::ApiError;
use apimachinery::object::ObjectExt;
use bytes::Bytes;
use serde_json::Value;

use storage::{KeyValue, StorageError};

/// The formats a stored value can be in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Format {
    /// kube's protobuf envelope.
    Protobuf,
    /// JSON.
    Json,
    /// MessagePack, as this server stored objects before it wrote kube's formats.
    MessagePack,
}

impl Format {
    /// The format of stored bytes, by their first bytes.
    pub fn of(bytes: &[u8]) -> Format {
        if bytes.starts_with(protobuf::MAGIC) {
            Format::Protobuf
        } else if bytes.first() == Some(&b'{') {
            // A MessagePack value starting with `{` is the integer 123, never an object.
            Format::Json
        } else {
            Format::MessagePack
        }
    }

    /// Its name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Format::Protobuf => "protobuf",
            Format::Json => "json",
            Format::MessagePack => "messagepack",
        }
    }
}

/// Decodes stored bytes of any format, as they are (no version conversion, no defaults);
/// `key` names the object in the error.
pub fn decode(key: &str, bytes: &[u8]) -> Result<Value, StorageError> {
    let corrupt = |message: String| StorageError::Corrupt { key: key.to_string(), message };
    match Format::of(bytes) {
        Format::Protobuf => protobuf::decode_object(bytes).map_err(|e| corrupt(e.to_string())),
        Format::Json => serde_json::from_slice(bytes).map_err(|e| corrupt(e.to_string())),
        Format::MessagePack => rmp_serde::from_slice(bytes).map_err(|e| corrupt(e.to_string())),
    }
}

/// Whether `bytes` are kube's protobuf envelope of a type this server has no message for (a
/// kind a newer kube-apiserver sharing the store serves), not a damaged value.
pub fn is_unknown_type(bytes: &[u8]) -> bool {
    matches!(protobuf::decode_object(bytes), Err(protobuf::Error::NoMessage { .. }))
}

/// Reads an object of `def` from a stored key: decoded, in the form this server stores it,
/// defaulted, with `metadata.resourceVersion` set from the key's mod revision.
///
/// Defaults apply on every read, as kube's decoding from etcd applies them: kube stores some
/// objects before fields its defaults fill are known (a Job's labels come from the template
/// labels its create generates), and a default added to a CRD's schema shows on objects
/// stored before it.
pub fn decode_object(def: &ResourceDef, kv: &KeyValue) -> Result<Value, StorageError> {
    let obj = decode(&kv.key, &kv.value)?;
    let mut obj = def.strategy.read_etcd_version(obj);
    if Format::of(&kv.value) == Format::Json && is_built_in(def) {
        // Fields of a newer kube's JSON (a CRD's, an APIService's) are not shown, as kube's
        // decoding into its Go types drops them; a write carries them over
        // ([`encode_replacing`]).
        apimachinery::schema::check_fields(&def.group, &def.version, &def.kind, &mut obj);
    }
    def.apply_defaults(&mut obj);
    obj.set_meta_str("resourceVersion", &kv.mod_revision.to_string());
    Ok(obj)
}

/// `obj` converted to its storage version when its kind converts it (`None`: it is stored as it
/// is), and the apiVersion it is stored under.
fn in_storage_version(def: &ResourceDef, obj: &Value) -> (Option<Value>, String) {
    let converted = def.strategy.to_etcd_version(obj);
    let stored = converted.as_ref().unwrap_or(obj);
    let api_version =
        stored.get("apiVersion").and_then(Value::as_str).map_or_else(|| def.storage_api_version(), str::to_string);
    (converted, api_version)
}

/// The bytes to store for `obj` of `def`, as kube-apiserver writes them: without
/// `resourceVersion` and `selfLink`, in the resource's storage version and media.
pub fn encode_object(def: &ResourceDef, obj: &Value) -> Result<Bytes, ApiError> {
    let (converted, api_version) = in_storage_version(def, obj);
    let stored = converted.as_ref().unwrap_or(obj);
    let unencodable = |e: protobuf::Error| {
        ApiError::internal(format!("{} {} cannot be stored as protobuf: {e}", def.kind, obj.meta_str("name")))
    };
    match def.storage_media {
        // The encoder leaves the two members out itself: no copy of the object is made.
        StorageMedia::Protobuf if protobuf::supports(&api_version, &def.kind) => {
            let raw = protobuf::encode_stored_as(stored, &api_version, &def.kind).map_err(unencodable)?;
            Ok(Bytes::from(protobuf::enveloped(&api_version, &def.kind, &raw)))
        }
        _ => {
            let meta = stored.get("metadata").and_then(Value::as_object);
            if meta.is_some_and(|m| m.contains_key("resourceVersion") || m.contains_key("selfLink")) {
                let mut trimmed = stored.clone();
                if let Some(meta) = trimmed.get_mut("metadata").and_then(Value::as_object_mut) {
                    meta.remove("resourceVersion");
                    meta.remove("selfLink");
                }
                return Ok(Bytes::from(encode_json(&trimmed)));
            }
            Ok(Bytes::from(encode_json(stored)))
        }
    }
}

/// [`encode_object`] for a write that replaces `previous`, the stored bytes it read: the fields
/// of `previous` this server's schema does not know (a newer kube-apiserver's, which decoding
/// dropped) are carried into the new bytes, so a read-modify-write here never erases them
/// (`protobuf::carry`).
pub fn encode_replacing(def: &ResourceDef, obj: &Value, previous: &[u8]) -> Result<Bytes, ApiError> {
    if Format::of(previous) == Format::Json && is_built_in(def) {
        return match unknown_json_fields(def, previous) {
            Some(unknown) if !unknown.is_empty() => {
                let mut carried = obj.clone();
                for (path, value) in unknown {
                    put_back(&mut carried, &path, value);
                }
                encode_object(def, &carried)
            }
            _ => encode_object(def, obj),
        };
    }
    let bytes = encode_object(def, obj)?;
    match protobuf::carry_unknown_fields(&bytes, previous) {
        Ok(Some(carried)) => Ok(Bytes::from(carried)),
        Ok(None) => Ok(bytes),
        // Bytes that decoded a moment ago and do not split now would be a bug here, not damage
        // the write should stop for: the new object is stored as it is.
        Err(e) => {
            tracing::warn!(kind = def.kind, name = obj.meta_str("name"), "unknown fields not carried: {e}");
            Ok(bytes)
        }
    }
}

/// Whether `def` is a kind of kube's own, whose fields its Go types define (custom resources'
/// fields are their CRD schema's, pruned by it on both sides). Asked on every JSON decode, so
/// answered from the definition (only built-in kinds carry an OpenAPI schema), not a lookup.
fn is_built_in(def: &ResourceDef) -> bool {
    def.schema.is_some()
}

/// One step into a JSON value: a member, or a list element (with the element's `name`, if it
/// has one, so that it is found again where a write moved it).
#[derive(Clone)]
enum Step {
    Member(String),
    Element(usize, Option<String>),
}

/// The fields of a stored JSON object (in this server's version) that its schema does not
/// know, each with its place and value: what pruning it removes, found by comparing it with
/// its pruned copy (nulls, which pruning also removes, are not kept).
fn unknown_json_fields(def: &ResourceDef, previous: &[u8]) -> Option<Vec<(Vec<Step>, Value)>> {
    let old = def.strategy.read_etcd_version(serde_json::from_slice(previous).ok()?);
    let mut pruned = old.clone();
    apimachinery::schema::check_fields(&def.group, &def.version, &def.kind, &mut pruned);
    let mut found = Vec::new();
    removed(&old, &pruned, &mut Vec::new(), &mut found);
    Some(found)
}

/// What `pruned` lacks of `full`, at `path`.
fn removed(full: &Value, pruned: &Value, path: &mut Vec<Step>, found: &mut Vec<(Vec<Step>, Value)>) {
    match (full, pruned) {
        (Value::Object(f), Value::Object(p)) => {
            for (key, value) in f {
                match p.get(key) {
                    None if !value.is_null() => {
                        let mut at = path.clone();
                        at.push(Step::Member(key.clone()));
                        found.push((at, value.clone()));
                    }
                    None => {}
                    Some(kept) => {
                        path.push(Step::Member(key.clone()));
                        removed(value, kept, path, found);
                        path.pop();
                    }
                }
            }
        }
        (Value::Array(f), Value::Array(p)) if f.len() == p.len() => {
            for (i, (value, kept)) in f.iter().zip(p).enumerate() {
                let name = value.get("name").and_then(Value::as_str).map(str::to_string);
                path.push(Step::Element(i, name));
                removed(value, kept, path, found);
                path.pop();
            }
        }
        _ => {}
    }
}

/// Puts `value` at `path` in `obj` if its parent is still there and the field is not. A list
/// element is found by its `name` when it had one, else at its position.
fn put_back(obj: &mut Value, path: &[Step], value: Value) {
    let Some((Step::Member(last), parents)) = path.split_last() else { return };
    let mut at = obj;
    for step in parents {
        let next = match (at, step) {
            (Value::Object(map), Step::Member(key)) => map.get_mut(key),
            (Value::Array(items), Step::Element(_, Some(name))) => {
                items.iter_mut().find(|item| item.get("name").and_then(Value::as_str) == Some(name.as_str()))
            }
            (Value::Array(items), Step::Element(i, None)) => items.get_mut(*i),
            _ => None,
        };
        let Some(next) = next else { return };
        at = next;
    }
    if let Value::Object(map) = at {
        map.entry(last.clone()).or_insert(value);
    }
}

/// `obj` of `def` as a read of it would give it back once stored: through kube's protobuf
/// and back, defaulted, with its `resourceVersion`. A write compares this form with what it
/// read, as kube compares Go structs (and bytes for a write that changes nothing): the members
/// Go leaves out (`env: []`, a zero `minReadySeconds`) and those it always writes
/// (`serviceName: ""`) are then alike on both sides. Objects stored as JSON, and objects that
/// do not encode (validation then says why), are returned as they are.
pub fn stored_form(def: &ResourceDef, obj: Value) -> Value {
    try_stored_form(def, &obj).unwrap_or(obj)
}

/// [`stored_form`] when `obj` goes through kube's protobuf and back; `None` when it is returned
/// as it is (stored as JSON, or not encodable).
pub fn try_stored_form(def: &ResourceDef, obj: &Value) -> Option<Value> {
    if def.storage_media != StorageMedia::Protobuf {
        return None;
    }
    // What `encode_object` then `decode` give, worked out without the bytes.
    let (converted, api_version) = in_storage_version(def, obj);
    let stored = converted.as_ref().unwrap_or(obj);
    if !protobuf::supports(&api_version, &def.kind) {
        return None;
    }
    let mut back = protobuf::stored_form_as(stored, &api_version, &def.kind).ok()?;
    back = def.strategy.read_etcd_version(back);
    def.apply_defaults(&mut back);
    let rv = obj.meta_str("resourceVersion");
    if !rv.is_empty() {
        back.set_meta_str("resourceVersion", rv);
    }
    Some(back)
}

/// A built-in object that is no resource's (kube's `RangeAllocation`), in kube's protobuf
/// envelope of its own `apiVersion` and `kind`.
pub fn encode_typed(obj: &Value) -> Result<Bytes, String> {
    protobuf::encode_object(obj).map(Bytes::from).map_err(|e| e.to_string())
}

/// JSON as kube's serializer writes it to etcd: the document and a newline.
pub fn encode_json(obj: &Value) -> Vec<u8> {
    let mut out = serde_json::to_vec(obj).expect("a JSON value always encodes");
    out.push(b'\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_format_is_told_apart_and_read() {
        let v = json!({"a": 1, "b": -2, "c": 1.5, "d": "s", "e": [true, null, {"x": []}], "f": {}, "g": u64::MAX});
        let msgpack = rmp_serde::to_vec_named(&v).unwrap();
        assert_eq!(Format::of(&msgpack), Format::MessagePack);
        assert_eq!(decode("k", &msgpack).unwrap(), v);
        let json = encode_json(&v);
        assert_eq!((Format::of(&json), json.last()), (Format::Json, Some(&b'\n')));
        assert_eq!(decode("k", &json).unwrap(), v);
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"k": "v"}});
        let pb = encode_typed(&cm).unwrap();
        assert_eq!(Format::of(&pb), Format::Protobuf);
        assert_eq!(decode("k", &pb).unwrap(), cm);
    }

    #[test]
    fn garbage_is_corrupt_not_a_panic() {
        for bytes in [&[0xc1][..], b"{\"a\":", b"k8s\0\x0a\xff"] {
            assert!(matches!(decode("k", bytes), Err(StorageError::Corrupt { .. })), "{bytes:?}");
        }
        let unknown = protobuf::enveloped("example.com/v9", "Gadget", b"");
        assert!(is_unknown_type(&unknown) && !is_unknown_type(b"k8s\0\x0a\xff"));
    }
}
