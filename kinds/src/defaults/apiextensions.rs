//! `apiextensions.k8s.io/v1` CustomResourceDefinition defaults (`apis/apiextensions/v1/
//! defaults.go` and its generated `SetObjectDefaults_CustomResourceDefinition`), and what the
//! CRD strategy's `PrepareForCreate` and `PrepareForUpdate` fill in.
//!
//! v1 defaults neither `served` nor `storage` (both are required booleans), nor
//! `preserveUnknownFields`; the v1beta1 defaults (scope, a version list, `preserveUnknownFields:
//! true`, `[v1beta1]` review versions) do not apply.
//!
//! `selectableFields` are kept: this server serves them as kube 1.30 does with the
//! `CustomResourceFieldSelectors` gate on (its default from 1.31), where the gate's default
//! (off, alpha) would drop them at create.

use serde_json::{Value, json};

use super::{child_obj, set_if_unset, set_str_if_empty};

/// The name of the first version marked `storage`, as kube looks it up.
fn storage_version(obj: &Value) -> Option<String> {
    obj.pointer("/spec/versions")?
        .as_array()?
        .iter()
        .find(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
        .map(|v| v.get("name").and_then(Value::as_str).unwrap_or("").to_string())
}

/// Whether `status.storedVersions` lists `name`.
fn is_stored(obj: &Value, name: &str) -> bool {
    obj.pointer("/status/storedVersions")
        .and_then(Value::as_array)
        .is_some_and(|s| s.iter().any(|v| v.as_str() == Some(name)))
}

/// Appends `name` to `status.storedVersions`.
fn add_stored_version(obj: &mut Value, name: String) {
    let Some(o) = obj.as_object_mut() else { return };
    let status = child_obj(o, "status");
    let stored = status.entry("storedVersions").or_insert_with(|| json!([]));
    if !stored.is_array() {
        *stored = json!([]);
    }
    stored.as_array_mut().expect("array").push(json!(name));
}

/// `SetObjectDefaults_CustomResourceDefinition`: names, conversion strategy `None`, a
/// conversion webhook service's port 443, and a stored version when none is recorded.
pub fn default_custom_resource_definition(obj: &mut Value) {
    let Some(o) = obj.as_object_mut() else { return };
    let spec = child_obj(o, "spec");
    let names = child_obj(spec, "names");
    let kind = names.get("kind").and_then(Value::as_str).unwrap_or("").to_string();
    if !kind.is_empty() {
        set_str_if_empty(names, "singular", &kind.to_lowercase());
        set_str_if_empty(names, "listKind", &format!("{kind}List"));
    }
    set_if_unset(spec, "conversion", json!({"strategy": "None"}));
    if let Some(svc) = spec
        .get_mut("conversion")
        .and_then(|c| c.get_mut("webhook"))
        .and_then(|w| w.get_mut("clientConfig"))
        .and_then(|c| c.get_mut("service"))
        .and_then(Value::as_object_mut)
    {
        set_if_unset(svc, "port", json!(443));
    }
    let stored_empty = obj.pointer("/status/storedVersions").and_then(Value::as_array).is_none_or(|s| s.is_empty());
    if stored_empty && let Some(v) = storage_version(obj) {
        add_stored_version(obj, v);
    }
}

/// The CRD strategy's `PrepareForCreate`: an empty status whose `storedVersions` is the
/// storage version, generation 1. Go writes the status' members and `acceptedNames`' plural
/// and kind even when empty (`conditions: null`).
pub fn prepare_custom_resource_definition_for_create(obj: &mut Value) {
    obj["status"] = json!({"conditions": null, "acceptedNames": {"plural": "", "kind": ""}, "storedVersions": null});
    if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.insert("generation".into(), json!(1));
    }
    if let Some(v) = storage_version(obj) {
        obj["status"]["storedVersions"] = json!([v]);
    }
}

/// The CRD strategy's `PrepareForUpdate`, once the stored status is carried over: the storage
/// version joins `storedVersions` when it is not there yet.
pub fn prepare_custom_resource_definition_for_update(new: &mut Value) {
    if let Some(v) = storage_version(new)
        && !is_stored(new, &v)
    {
        add_stored_version(new, v);
    }
}
