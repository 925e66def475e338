//! The `autoscaling/v1` `Scale` view of a scalable object (its `/scale` subresource):
//! `spec.replicas`, `status.replicas` and the canonical string form of `spec.selector`.

use serde_json::{Value, json};

use crate::object::ObjectExt;
use crate::selector::LabelSelector;

/// Where a kind keeps what its Scale shows, as JSON pointers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScalePaths {
    /// `spec.replicas` of the Scale.
    pub spec_replicas: String,
    /// `status.replicas` of the Scale.
    pub status_replicas: String,
    /// `status.selector` of the Scale.
    pub selector: Selector,
}

/// Where a Scale's selector comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Selector {
    /// A `LabelSelector` object, shown in its canonical string form (built-in workloads).
    Object(String),
    /// A string already in selector form (a CRD's `labelSelectorPath`).
    Text(String),
    /// None: the Scale's selector is empty.
    None,
}

impl Default for ScalePaths {
    /// The built-in workloads' layout.
    fn default() -> Self {
        ScalePaths {
            spec_replicas: "/spec/replicas".into(),
            status_replicas: "/status/replicas".into(),
            selector: Selector::Object("/spec/selector".into()),
        }
    }
}

/// A CRD's simple JSON path (`.spec.replicas`) as a JSON pointer (`/spec/replicas`).
pub fn pointer_of(json_path: &str) -> String {
    json_path.split('.').filter(|s| !s.is_empty()).fold(String::new(), |p, s| format!("{p}/{s}"))
}

/// The Scale of `obj` laid out as `paths` says.
pub fn to_scale_at(obj: &Value, paths: &ScalePaths) -> Value {
    let meta = obj.meta().cloned().unwrap_or_default();
    let mut scale_meta = serde_json::Map::new();
    for f in ["name", "namespace", "uid", "resourceVersion", "creationTimestamp"] {
        if let Some(v) = meta.get(f) {
            scale_meta.insert(f.into(), v.clone());
        }
    }
    let selector = match &paths.selector {
        Selector::Object(p) => obj
            .pointer(p)
            .and_then(|s| LabelSelector::from_label_selector(Some(s)).ok())
            .map(|s| s.to_string())
            .unwrap_or_default(),
        Selector::Text(p) => obj.pointer(p).and_then(Value::as_str).unwrap_or_default().to_string(),
        Selector::None => String::new(),
    };
    json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": scale_meta,
        "spec": { "replicas": obj.pointer(&paths.spec_replicas).cloned().unwrap_or(json!(0)) },
        "status": {
            "replicas": obj.pointer(&paths.status_replicas).cloned().unwrap_or(json!(0)),
            "selector": selector,
        },
    })
}

/// The Scale of a built-in workload.
pub fn to_scale(obj: &Value) -> Value {
    to_scale_at(obj, &ScalePaths::default())
}

/// `obj` with the replicas `scale` asks for at `paths.spec_replicas`: what a `/scale` write
/// changes (missing parents are created).
pub fn with_replicas_at(mut obj: Value, scale: &Value, paths: &ScalePaths) -> Value {
    let replicas = scale.pointer("/spec/replicas").cloned().unwrap_or(json!(0));
    let mut at = &mut obj;
    let segments: Vec<&str> = paths.spec_replicas.split('/').skip(1).collect();
    for (i, seg) in segments.iter().enumerate() {
        if !at.is_object() {
            *at = json!({});
        }
        let map = at.as_object_mut().expect("an object");
        if i + 1 == segments.len() {
            map.insert(seg.to_string(), replicas);
            break;
        }
        at = map.entry(seg.to_string()).or_insert_with(|| json!({}));
    }
    obj
}

/// `obj` with the replicas `scale` asks for: what a `/scale` write changes.
pub fn with_replicas(obj: Value, scale: &Value) -> Value {
    with_replicas_at(obj, scale, &ScalePaths::default())
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

    #[test]
    fn a_custom_layout_reads_and_writes_its_own_paths() {
        let paths = ScalePaths {
            spec_replicas: pointer_of(".spec.size"),
            status_replicas: pointer_of(".status.count"),
            selector: Selector::Text(pointer_of(".status.selector")),
        };
        let w = json!({"metadata": {"name": "w"}, "spec": {"size": 2}, "status": {"count": 1, "selector": "app=w"}});
        let s = to_scale_at(&w, &paths);
        assert_eq!((&s["spec"]["replicas"], &s["status"]["replicas"]), (&json!(2), &json!(1)));
        assert_eq!(s["status"]["selector"], "app=w");
        let scaled = with_replicas_at(json!({"metadata": {}}), &json!({"spec": {"replicas": 4}}), &paths);
        assert_eq!(scaled["spec"]["size"], 4);
    }
}
