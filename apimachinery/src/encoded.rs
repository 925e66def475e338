//! Objects and watch events encoded once and shared.
//!
//! The read path serves the same bytes to every client: an object is encoded to JSON when it
//! enters the cache, lists copy those bytes into the response, and a watch event's line is
//! built once and handed to every watcher that receives it. The protobuf form is made the
//! first time a protobuf client reads the object, and shared the same way until a newer version
//! of the object supersedes it. Only clients asking for another form (YAML, Table, a converted
//! version) decode.

use std::sync::{Arc, Mutex, PoisonError};

use bytes::Bytes;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

/// The type of a watch event on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum WatchEventType {
    /// `ADDED`.
    Added,
    /// `MODIFIED`.
    Modified,
    /// `DELETED`.
    Deleted,
    /// `BOOKMARK`.
    Bookmark,
    /// `ERROR`.
    Error,
}

/// An API object as JSON, `apiVersion` and `kind` first so that the item form a list uses
/// (kube omits both in a typed list's items) is a suffix of the same bytes.
#[derive(Clone)]
pub struct EncodedObject(Arc<Encodings>);

struct Encodings {
    json: Bytes,
    /// Where the fields after `apiVersion` and `kind` start (the byte after their comma), or
    /// the closing brace's offset when there are none.
    body_at: usize,
    /// The protobuf message, once a protobuf client asked.
    protobuf: Mutex<Protobuf>,
}

/// What an object holds of its protobuf form.
enum Protobuf {
    /// No protobuf client asked yet.
    NotMade,
    /// Made and kept; `None` for kinds without one.
    Made(Option<Bytes>),
    /// A newer version replaced this one: only watch events of the window still hold it, and a
    /// watcher that has not read it yet makes it again without keeping it.
    Superseded,
}

impl PartialEq for EncodedObject {
    fn eq(&self, other: &Self) -> bool {
        self.0.json == other.0.json
    }
}

impl Eq for EncodedObject {}

impl EncodedObject {
    /// Encodes `obj`.
    pub fn encode(obj: &Value) -> Self {
        let Some(map) = obj.as_object() else {
            let json = to_json(obj);
            return EncodedObject::new(Bytes::from(json), 0);
        };
        let mut out = Vec::with_capacity(256);
        out.push(b'{');
        let mut first = true;
        for key in ["apiVersion", "kind"] {
            if let Some(v) = map.get(key) {
                if !first {
                    out.push(b',');
                }
                first = false;
                write_entry(&mut out, key, v);
            }
        }
        let head = out.len();
        for (k, v) in map.iter().filter(|(k, _)| *k != "apiVersion" && *k != "kind") {
            if !first {
                out.push(b',');
            }
            first = false;
            write_entry(&mut out, k, v);
        }
        out.push(b'}');
        // After the type fields comes their comma (skip it) unless the object ends there.
        let body_at = if head == 1 || out[head] == b'}' { head } else { head + 1 };
        out.shrink_to_fit();
        EncodedObject::new(Bytes::from(out), body_at)
    }

    fn new(json: Bytes, body_at: usize) -> Self {
        EncodedObject(Arc::new(Encodings { json, body_at, protobuf: Mutex::new(Protobuf::NotMade) }))
    }

    /// The whole object.
    pub fn json(&self) -> &Bytes {
        &self.0.json
    }

    /// The object's protobuf message (without envelope), encoded at the first call and shared
    /// by every holder of this object while it is current; `None` when its kind has no
    /// protobuf form.
    pub fn protobuf(&self) -> Option<Bytes> {
        if let Protobuf::Made(made) = &*self.slot() {
            return made.clone();
        }
        self.made_from(&self.value())
    }

    /// The protobuf form of `value` (the object these bytes encode), kept unless a newer
    /// version superseded this one. Copied out of the encoder's buffer, so the cache holds no
    /// spare capacity; made outside the lock: two first readers may both encode, and the bytes
    /// are the same.
    fn made_from(&self, value: &Value) -> Option<Bytes> {
        let made = protobuf::encode_raw(value).ok().map(|b| Bytes::copy_from_slice(&b));
        let mut slot = self.slot();
        if let Protobuf::NotMade = *slot {
            *slot = Protobuf::Made(made.clone());
        }
        made
    }

    /// Whether a protobuf client read this version (its protobuf form is kept).
    pub fn read_in_protobuf(&self) -> bool {
        matches!(*self.slot(), Protobuf::Made(_))
    }

    /// Makes the protobuf form now from `value`, the object these bytes encode: a cacher that
    /// has just decoded a new version its clients read in protobuf makes it here, instead of
    /// the first reader decoding the JSON again to make it.
    pub fn make_protobuf_of(&self, value: &Value) {
        self.made_from(value);
    }

    /// Drops the protobuf form and keeps none made later: the cacher calls it when a newer
    /// version of the object arrives. The window keeps old versions for watchers that resume
    /// (about 75 s), and they are read in protobuf at most by the watchers of their own event.
    pub fn supersede(&self) {
        *self.slot() = Protobuf::Superseded;
    }

    fn slot(&self) -> std::sync::MutexGuard<'_, Protobuf> {
        self.0.protobuf.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The protobuf form's length while it is kept, for memory accounting.
    pub fn protobuf_len(&self) -> usize {
        match &*self.slot() {
            Protobuf::Made(Some(p)) => p.len(),
            _ => 0,
        }
    }

    /// Writes the object as a typed list's item: without `apiVersion` and `kind`.
    pub fn write_item(&self, out: &mut Vec<u8>) {
        let Encodings { json, body_at, .. } = &*self.0;
        if *body_at == 0 {
            out.extend_from_slice(json);
        } else {
            out.push(b'{');
            out.extend_from_slice(&json[*body_at..]);
        }
    }

    /// The object decoded, for callers that change or reshape it.
    pub fn value(&self) -> Value {
        serde_json::from_slice(&self.0.json).expect("an encoded object is valid JSON")
    }

    /// Bytes held, for memory accounting.
    pub fn len(&self) -> usize {
        self.0.json.len()
    }

    /// Never true for an API object; present for completeness of `len`.
    pub fn is_empty(&self) -> bool {
        self.0.json.is_empty()
    }
}

fn write_entry(out: &mut Vec<u8>, key: &str, value: &Value) {
    serde_json::to_writer(&mut *out, key).expect("writing to a Vec cannot fail");
    out.push(b':');
    serde_json::to_writer(&mut *out, &KubeJson::at(value, Place::of_key(Place::Other, key)))
        .expect("writing to a Vec cannot fail");
}

/// JSON as kube writes it: a value serialized as serde_json does, except that the keys of
/// every `metadata.managedFields[].fieldsV1` come in structured-merge-diff's order
/// ([`protobuf::fields_v1`]), which differs from a map's byte order for numeric keys.
pub struct KubeJson<'a> {
    value: &'a Value,
    place: Place,
}

impl<'a> KubeJson<'a> {
    /// `value`, an object, a list or a watch event.
    pub fn new(value: &'a Value) -> Self {
        KubeJson { value, place: Place::Other }
    }

    fn at(value: &'a Value, place: Place) -> Self {
        KubeJson { value, place }
    }
}

/// Where a value sits on the way to a `fieldsV1`.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Place {
    Other,
    Metadata,
    ManagedFields,
    Entry,
    FieldsV1,
}

impl Place {
    fn of_key(self, key: &str) -> Place {
        match (self, key) {
            (Place::FieldsV1, _) => Place::FieldsV1,
            (Place::Metadata, "managedFields") => Place::ManagedFields,
            (Place::Entry, "fieldsV1") => Place::FieldsV1,
            (_, "metadata") => Place::Metadata,
            _ => Place::Other,
        }
    }

    fn of_item(self) -> Place {
        if self == Place::ManagedFields { Place::Entry } else { Place::Other }
    }
}

impl Serialize for KubeJson<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{SerializeMap, SerializeSeq};
        match self.value {
            Value::Object(map) => {
                let mut m = s.serialize_map(Some(map.len()))?;
                if self.place == Place::FieldsV1 && protobuf::fields_v1::needs_sorting(map.keys()) {
                    let mut entries: Vec<(&String, &Value)> = map.iter().collect();
                    entries.sort_by(|a, b| protobuf::fields_v1::compare_keys(a.0, b.0));
                    for (k, v) in entries {
                        m.serialize_entry(k, &KubeJson::at(v, Place::FieldsV1))?;
                    }
                } else {
                    for (k, v) in map {
                        m.serialize_entry(k, &KubeJson::at(v, self.place.of_key(k)))?;
                    }
                }
                m.end()
            }
            Value::Array(items) => {
                let mut seq = s.serialize_seq(Some(items.len()))?;
                for item in items {
                    seq.serialize_element(&KubeJson::at(item, self.place.of_item()))?;
                }
                seq.end()
            }
            scalar => scalar.serialize(s),
        }
    }
}

/// `value` as JSON bytes, as kube writes it ([`KubeJson`]).
pub fn to_json(value: &Value) -> Vec<u8> {
    serde_json::to_vec(&KubeJson::new(value)).expect("a Value serializes")
}

/// `value` as indented JSON bytes, as kube writes it ([`KubeJson`]).
pub fn to_json_pretty(value: &Value) -> Vec<u8> {
    serde_json::to_vec_pretty(&KubeJson::new(value)).expect("a Value serializes")
}

impl std::fmt::Debug for EncodedObject {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&String::from_utf8_lossy(&self.0.json))
    }
}

impl From<&Value> for EncodedObject {
    fn from(v: &Value) -> Self {
        EncodedObject::encode(v)
    }
}

/// Crosses processes as the object it encodes.
impl Serialize for EncodedObject {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.value().serialize(s)
    }
}

impl<'de> Deserialize<'de> for EncodedObject {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Value::deserialize(d).map(|v| EncodedObject::encode(&v))
    }
}

/// One watch event as delivered: its type, its object, and its wire line
/// (`{"type":"ADDED","object":{...}}\n`). A change's line is built once and shared by every
/// watcher that gets it; a watch's initial state is queued without lines (only the shared
/// object), and each line is built as the client reads, so a backlog holds no copies.
#[derive(Clone, Debug)]
pub struct WatchEvent {
    /// Event type.
    pub kind: WatchEventType,
    /// The object (for `ERROR`, a Status; for `BOOKMARK`, an object with only
    /// `metadata.resourceVersion`).
    pub object: EncodedObject,
    /// The JSON line, when built ahead.
    line: Option<Bytes>,
    /// When the cacher received the change from storage, for delivery latency.
    pub received: Option<std::time::Instant>,
}

impl WatchEvent {
    /// An event with its line built now, to be shared.
    pub fn new(kind: WatchEventType, object: EncodedObject) -> Self {
        let line = Some(build_line(kind, &object));
        WatchEvent { kind, object, line, received: None }
    }

    /// An event whose line is built when it is written.
    pub fn deferred(kind: WatchEventType, object: EncodedObject) -> Self {
        WatchEvent { kind, object, line: None, received: None }
    }

    /// The JSON line.
    pub fn line(&self) -> Bytes {
        self.line.clone().unwrap_or_else(|| build_line(self.kind, &self.object))
    }

    /// The JSON line, taking the shared one without touching its reference count.
    pub fn into_line(self) -> Bytes {
        self.line.unwrap_or_else(|| build_line(self.kind, &self.object))
    }
}

fn build_line(kind: WatchEventType, object: &EncodedObject) -> Bytes {
    let name = match kind {
        WatchEventType::Added => "ADDED",
        WatchEventType::Modified => "MODIFIED",
        WatchEventType::Deleted => "DELETED",
        WatchEventType::Bookmark => "BOOKMARK",
        WatchEventType::Error => "ERROR",
    };
    let mut line = Vec::with_capacity(object.len() + 32);
    line.extend_from_slice(b"{\"type\":\"");
    line.extend_from_slice(name.as_bytes());
    line.extend_from_slice(b"\",\"object\":");
    line.extend_from_slice(object.json());
    line.extend_from_slice(b"}\n");
    Bytes::from(line)
}

#[cfg(test)]
mod tests {
    #[test]
    fn managed_fields_keys_are_written_in_kube_order_and_nothing_else_moves() {
        let obj = serde_json::json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "managedFields": [{"manager": "m", "fieldsV1": {"f:spec": {"f:ports": {
                "k:{\"port\":443}": {}, "k:{\"port\":80}": {}}}}}]},
            "spec": {"k:{\"port\":443}": 1, "k:{\"port\":80}": 2}});
        let text = String::from_utf8(EncodedObject::encode(&obj).json().to_vec()).unwrap();
        assert!(text.contains(r#"{"k:{\"port\":80}":{},"k:{\"port\":443}":{}}"#), "{text}");
        assert!(text.contains(r#""spec":{"k:{\"port\":443}":1,"k:{\"port\":80}":2}"#), "{text}");
        let list = serde_json::json!({"items": [obj]});
        assert!(String::from_utf8(to_json(&list)).unwrap().contains(r#"{"k:{\"port\":80}":{},"#));
    }

    use super::*;
    use serde_json::json;

    #[test]
    fn a_superseded_object_still_answers_in_protobuf_but_keeps_no_copy() {
        let obj = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"k": "v"}});
        let enc = EncodedObject::encode(&obj);
        assert_eq!(enc.protobuf_len(), 0, "made at the first protobuf read");
        let made = enc.protobuf().expect("a ConfigMap has a protobuf form");
        assert_eq!(enc.protobuf_len(), made.len());
        // Shared: the second read hands out the same bytes, not a new encoding.
        assert_eq!(enc.protobuf().map(|b| b.as_ptr()), Some(made.as_ptr()));
        let holder = enc.clone();
        enc.supersede();
        assert_eq!(holder.protobuf_len(), 0, "every holder lets it go");
        assert_eq!(holder.protobuf().as_ref(), Some(&made), "the same message, made again");
        assert_eq!(holder.protobuf_len(), 0, "and not kept");
    }

    #[test]
    fn a_protobuf_form_made_from_the_value_is_the_one_made_from_the_json() {
        let obj = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "resourceVersion": "9"},
            "spec": {"containers": [{"name": "c", "image": "i"}]}, "status": {"phase": "Running"}});
        let later = EncodedObject::encode(&obj);
        assert!(!later.read_in_protobuf());
        let expected = later.protobuf().expect("a Pod has a protobuf form");
        assert!(later.read_in_protobuf());
        let primed = EncodedObject::encode(&obj);
        primed.make_protobuf_of(&obj);
        assert_eq!(primed.protobuf_len(), expected.len(), "kept once made");
        assert_eq!(primed.protobuf(), Some(expected));
    }

    #[test]
    fn the_item_form_drops_type_fields_and_keeps_the_rest() {
        let obj = json!({"metadata": {"name": "a"}, "kind": "ConfigMap", "data": {"k": "v"}, "apiVersion": "v1"});
        let enc = EncodedObject::encode(&obj);
        assert!(enc.json().starts_with(br#"{"apiVersion":"v1","kind":"ConfigMap","#));
        assert_eq!(enc.value(), obj);
        let mut item = Vec::new();
        enc.write_item(&mut item);
        assert_eq!(
            serde_json::from_slice::<Value>(&item).unwrap(),
            json!({"metadata": {"name": "a"}, "data": {"k": "v"}})
        );
    }

    #[test]
    fn objects_with_only_type_fields_or_none_encode_to_valid_items() {
        for obj in [json!({"kind": "X", "apiVersion": "v1"}), json!({"metadata": {}}), json!({})] {
            let enc = EncodedObject::encode(&obj);
            assert_eq!(enc.value(), obj);
            let mut item = Vec::new();
            enc.write_item(&mut item);
            let mut expected = obj.clone();
            expected.as_object_mut().unwrap().retain(|k, _| k != "kind" && k != "apiVersion");
            assert_eq!(serde_json::from_slice::<Value>(&item).unwrap(), expected, "{obj}");
        }
    }

    #[test]
    fn an_event_line_is_one_json_document_per_line() {
        let object = EncodedObject::encode(&json!({"kind": "Pod"}));
        for ev in [
            WatchEvent::new(WatchEventType::Modified, object.clone()),
            WatchEvent::deferred(WatchEventType::Modified, object),
        ] {
            let line = ev.line();
            assert!(line.ends_with(b"\n"));
            let v: Value = serde_json::from_slice(&line).unwrap();
            assert_eq!(v, json!({"type": "MODIFIED", "object": {"kind": "Pod"}}));
        }
    }

    #[test]
    fn crosses_processes_as_the_object() {
        let enc = EncodedObject::encode(&json!({"kind": "Pod", "metadata": {"name": "p"}}));
        let back: EncodedObject = rmp_serde::from_slice(&rmp_serde::to_vec_named(&enc).unwrap()).unwrap();
        assert_eq!(back, enc);
    }
}
