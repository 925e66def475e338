//! The kinds as the registry reaches them, through their definitions: shared by the
//! validation tests (the kinds crate is a dev-dependency of this one).

use serde_json::Value;

use apimachinery::catalogue::ResourceDef;

pub(crate) fn find(group: &str, version: &str, resource: &str) -> Option<&'static ResourceDef> {
    kinds::find(group, version, resource).map(|d| d.as_ref())
}

pub(crate) fn def(group: &str, resource: &str) -> &'static ResourceDef {
    kinds::find(group, "v1", resource).unwrap().as_ref()
}

/// The (field, message) pairs a create of `obj` named `x` (in `default`, for namespaced kinds)
/// is refused with, after defaulting.
pub(crate) fn create_causes(group: &str, resource: &str, mut obj: Value) -> Vec<(String, String)> {
    let d = def(group, resource);
    obj["metadata"] = if d.namespaced {
        serde_json::json!({"name": "x", "namespace": "default"})
    } else {
        serde_json::json!({"name": "x"})
    };
    d.apply_defaults(&mut obj);
    d.validate(&obj).into_iter().map(|c| (c.field, c.message)).collect()
}

/// Owned (field, message) pairs, to compare with [`create_causes`].
pub(crate) fn pairs(v: &[(&str, &str)]) -> Vec<(String, String)> {
    v.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect()
}
