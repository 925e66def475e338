//! The `autoscaling/v1` `Scale` view of a scalable object (its `/scale` subresource):
//! `spec.replicas`, `status.replicas` and the canonical string form of `spec.selector`.

use serde_json::{Value, json};

use crate::object::ObjectExt;
use crate::selector::LabelSelector;

/// The Scale of `obj`.
pub fn to_scale(obj: &Value) -> Value {
    let meta = obj.meta().cloned().unwrap_or_default();
    let mut scale_meta = serde_json::Map::new();
    for f in ["name", "namespace", "uid", "resourceVersion", "creationTimestamp"] {
        if let Some(v) = meta.get(f) {
            scale_meta.insert(f.into(), v.clone());
        }
    }
    let selector = obj
        .pointer("/spec/selector")
        .and_then(|s| LabelSelector::from_label_selector(Some(s)).ok())
        .map(|s| s.to_string())
        .unwrap_or_default();
    json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": scale_meta,
        "spec": { "replicas": obj.pointer("/spec/replicas").cloned().unwrap_or(json!(0)) },
        "status": {
            "replicas": obj.pointer("/status/replicas").cloned().unwrap_or(json!(0)),
            "selector": selector,
        },
    })
}

/// `obj` with the replicas `scale` asks for: what a `/scale` write changes.
pub fn with_replicas(mut obj: Value, scale: &Value) -> Value {
    let replicas = scale.pointer("/spec/replicas").cloned().unwrap_or(json!(0));
    obj["spec"]["replicas"] = replicas;
    obj
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scale_shows_replicas_and_the_canonical_selector() {
        let d = json!({"metadata": {"name": "web", "namespace": "a", "resourceVersion": "7", "labels": {"x": "y"}},
                       "spec": {"replicas": 3, "selector": {"matchLabels": {"b": "2", "a": "1"}}},
                       "status": {"replicas": 2}});
        let s = to_scale(&d);
        assert_eq!(s["metadata"], json!({"name": "web", "namespace": "a", "resourceVersion": "7"}));
        assert_eq!((&s["spec"]["replicas"], &s["status"]["replicas"]), (&json!(3), &json!(2)));
        assert_eq!(s["status"]["selector"], "a=1,b=2");
    }
}
