//! API objects are `serde_json::Value`s: one representation for built-in kinds and, later,
//! custom resources, so every stage handles unknown kinds the same way. These helpers read and
//! write the parts of `metadata` the server cares about.

use serde_json::{Map, Value};

/// Reads and writes the fields of `metadata` the machinery needs.
pub trait ObjectExt {
    /// `metadata`, if present and an object.
    fn meta(&self) -> Option<&Map<String, Value>>;
    /// `metadata`, created if missing.
    fn meta_mut(&mut self) -> &mut Map<String, Value>;
    /// A string field of `metadata`, `""` if absent.
    fn meta_str(&self, field: &str) -> &str;
    /// `metadata.name`.
    fn name(&self) -> &str {
        self.meta_str("name")
    }
    /// `metadata.namespace`.
    fn namespace(&self) -> &str {
        self.meta_str("namespace")
    }
    /// `metadata.resourceVersion`.
    fn resource_version(&self) -> &str {
        self.meta_str("resourceVersion")
    }
    /// `metadata.uid`.
    fn uid(&self) -> &str {
        self.meta_str("uid")
    }
    /// Sets a string field of `metadata`.
    fn set_meta_str(&mut self, field: &str, value: &str) {
        self.meta_mut().insert(field.to_string(), Value::String(value.to_string()));
    }
    /// `metadata.labels` as pairs.
    fn labels(&self) -> Option<&Map<String, Value>> {
        self.meta().and_then(|m| m.get("labels")).and_then(Value::as_object)
    }
    /// `metadata.finalizers`.
    fn finalizers(&self) -> Vec<&str> {
        self.meta()
            .and_then(|m| m.get("finalizers"))
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default()
    }
    /// Whether `metadata.deletionTimestamp` is set.
    fn is_being_deleted(&self) -> bool {
        self.meta().is_some_and(|m| m.get("deletionTimestamp").is_some_and(|v| !v.is_null()))
    }
}

impl ObjectExt for Value {
    fn meta(&self) -> Option<&Map<String, Value>> {
        self.get("metadata").and_then(Value::as_object)
    }

    fn meta_mut(&mut self) -> &mut Map<String, Value> {
        if !self.is_object() {
            *self = Value::Object(Map::new());
        }
        let obj = self.as_object_mut().expect("object");
        let meta = obj.entry("metadata").or_insert_with(|| Value::Object(Map::new()));
        if !meta.is_object() {
            *meta = Value::Object(Map::new());
        }
        meta.as_object_mut().expect("metadata object")
    }

    fn meta_str(&self, field: &str) -> &str {
        self.meta().and_then(|m| m.get(field)).and_then(Value::as_str).unwrap_or("")
    }
}

/// The strings of a JSON string array (`verbs`, `apiGroups`, ...); non-strings and a missing or
/// non-array value give nothing.
pub fn string_list(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).map(String::from).collect())
        .unwrap_or_default()
}

/// Follows a dotted path (`spec.nodeName`) through nested objects.
pub fn field<'a>(obj: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.').try_fold(obj, |v, part| v.get(part))
}

/// Whether `a` and `b` are the same but for `metadata.resourceVersion`, without copying either:
/// a write whose result differs from the stored object in nothing else is not written.
pub fn same_but_resource_version(a: &Value, b: &Value) -> bool {
    let (Some(a), Some(b)) = (a.as_object(), b.as_object()) else { return a == b };
    // From the last member: a write that changes anything most often changes `status` or
    // `spec`, found before the whole `metadata` is compared.
    a.len() == b.len()
        && a.iter().rev().all(|(k, va)| match (b.get(k), va.as_object()) {
            (Some(Value::Object(mb)), Some(ma)) if k == "metadata" => same_without(ma, mb, "resourceVersion"),
            (Some(vb), _) => va == vb,
            (None, _) => false,
        })
}

/// Whether two maps are equal once `key` is left out of both.
fn same_without(a: &serde_json::Map<String, Value>, b: &serde_json::Map<String, Value>, key: &str) -> bool {
    let len = |m: &serde_json::Map<String, Value>| m.len() - usize::from(m.contains_key(key));
    len(a) == len(b) && a.iter().filter(|(k, _)| *k != key).all(|(k, v)| b.get(k) == Some(v))
}

/// Now, as kube formats `creationTimestamp` (RFC 3339, seconds, `Z`).
pub fn now_rfc3339() -> String {
    chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// Now with microseconds, as kube formats `MicroTime` fields (events, leases).
pub fn now_rfc3339_micros() -> String {
    chrono::Utc::now().format("%Y-%m-%dT%H:%M:%S%.6fZ").to_string()
}

/// Removes `null` members of `metadata` and empty maps kube omits, so stored objects look like
/// kube's (`labels: {}` is dropped, as Go's `omitempty` would).
pub fn normalize_metadata(obj: &mut Value) {
    let meta = obj.meta_mut();
    meta.retain(|_, v| !v.is_null());
    for key in ["labels", "annotations"] {
        if meta.get(key).and_then(Value::as_object).is_some_and(Map::is_empty) {
            meta.remove(key);
        }
    }
    for key in ["finalizers", "ownerReferences", "managedFields"] {
        if meta.get(key).and_then(Value::as_array).is_some_and(Vec::is_empty) {
            meta.remove(key);
        }
    }
}

/// Five random characters as kube appends them to a `generateName` (and to the names it
/// generates itself, such as `kube-api-access-xxxxx`): no vowels, so no words, and no
/// confusable characters.
pub fn random_suffix() -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let bytes = uuid::Uuid::new_v4().into_bytes();
    bytes[..5].iter().map(|b| ALPHABET[*b as usize % ALPHABET.len()] as char).collect()
}

/// The deepest nesting of arrays and objects an API object may have: what the server's JSON
/// decoder reads back (serde_json stops at 128 levels), so everything stored can be decoded
/// again. A request body deeper than this fails to decode; a patch whose result is deeper is
/// refused (kube's decoder allows 10,000 levels, so kube has no such bound).
pub const MAX_NESTING: usize = 127;

/// How deeply `v`'s arrays and objects nest (a scalar is 0, `{}` is 1), counted without
/// recursion so any value can be measured.
pub fn nesting(v: &Value) -> usize {
    let mut deepest = 0;
    let mut stack = vec![(v, 1usize)];
    while let Some((v, depth)) = stack.pop() {
        let children: Box<dyn Iterator<Item = &Value>> = match v {
            Value::Array(a) => Box::new(a.iter()),
            Value::Object(m) => Box::new(m.values()),
            _ => continue,
        };
        deepest = deepest.max(depth);
        stack.extend(children.filter(|c| c.is_array() || c.is_object()).map(|c| (c, depth + 1)));
    }
    deepest
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn objects_differing_only_in_resource_version_are_the_same() {
        let a = json!({"kind": "ConfigMap", "metadata": {"name": "a", "resourceVersion": "1"}, "data": {"k": "v"}});
        let same = [
            json!({"kind": "ConfigMap", "metadata": {"name": "a", "resourceVersion": "2"}, "data": {"k": "v"}}),
            json!({"kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"k": "v"}}),
        ];
        for b in &same {
            assert!(same_but_resource_version(&a, b) && same_but_resource_version(b, &a), "{b}");
        }
        let other = [
            json!({"kind": "ConfigMap", "metadata": {"name": "a", "resourceVersion": "1"}, "data": {"k": "w"}}),
            json!({"kind": "ConfigMap", "metadata": {"name": "b", "resourceVersion": "1"}, "data": {"k": "v"}}),
            json!({"kind": "ConfigMap", "metadata": {"name": "a", "uid": "u"}, "data": {"k": "v"}}),
            json!({"kind": "ConfigMap", "metadata": {"name": "a", "resourceVersion": "1"}}),
            json!({"kind": "ConfigMap", "metadata": "a", "data": {"k": "v"}}),
        ];
        for b in &other {
            assert!(!same_but_resource_version(&a, b) && !same_but_resource_version(b, &a), "{b}");
        }
    }

    #[test]
    fn meta_mut_creates_metadata() {
        let mut v = json!({"kind": "ConfigMap"});
        v.set_meta_str("name", "a");
        assert_eq!(v.name(), "a");
        assert_eq!(v.namespace(), "");
    }

    #[test]
    fn field_follows_dotted_path() {
        let v = json!({"spec": {"nodeName": "n1"}});
        assert_eq!(field(&v, "spec.nodeName"), Some(&json!("n1")));
        assert_eq!(field(&v, "status.phase"), None);
    }

    #[test]
    fn normalize_drops_empty_labels_and_nulls() {
        let mut v = json!({"metadata": {"name": "a", "labels": {}, "uid": null, "finalizers": []}});
        normalize_metadata(&mut v);
        assert_eq!(v, json!({"metadata": {"name": "a"}}));
    }

    #[test]
    fn nesting_counts_containers_to_the_deepest() {
        assert_eq!(super::nesting(&json!(1)), 0);
        assert_eq!(super::nesting(&json!({})), 1);
        assert_eq!(super::nesting(&json!({"a": [1, {"b": []}], "c": {}})), 4);
        let mut deep = json!(1);
        for _ in 0..1_000 {
            deep = json!([deep]);
        }
        assert_eq!(super::nesting(&deep), 1_000);
    }
}
