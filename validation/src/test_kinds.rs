//! The kinds as the registry reaches them, through their definitions: shared by the
//! validation tests (the kinds crate is a dev-dependency of this one).

use serde_json::Value;

use apimachinery::catalogue::ResourceDef;
use apimachinery::error::Cause;

pub(crate) fn find(group: &str, version: &str, resource: &str) -> Option<&'static ResourceDef> {
    kinds::find(group, version, resource).map(|d| d.as_ref())
}

pub(crate) fn def(group: &str, resource: &str) -> &'static ResourceDef {
    kinds::find(group, "v1", resource).unwrap().as_ref()
}

pub(crate) fn apply_defaults(def: &ResourceDef, obj: &mut Value) {
    def.apply_defaults(obj);
}
pub(crate) fn prepare_for_create(def: &ResourceDef, obj: &mut Value) {
    def.prepare_for_create(obj);
}
pub(crate) fn prepare_for_update(def: &ResourceDef, new: &mut Value, old: &Value) {
    def.prepare_for_update(new, old);
}
pub(crate) fn validate(def: &ResourceDef, obj: &Value) -> Vec<Cause> {
    def.validate(obj)
}
pub(crate) fn validate_update(def: &ResourceDef, new: &Value, old: &Value) -> Vec<Cause> {
    def.validate_update(new, old)
}
pub(crate) fn validate_status_update(def: &ResourceDef, new: &Value, old: &Value) -> Vec<Cause> {
    def.validate_status_update(new, old)
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
    apply_defaults(d, &mut obj);
    validate(d, &obj).into_iter().map(|c| (c.field, c.message)).collect()
}

/// Owned (field, message) pairs, to compare with [`create_causes`].
pub(crate) fn pairs(v: &[(&str, &str)]) -> Vec<(String, String)> {
    v.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect()
}
