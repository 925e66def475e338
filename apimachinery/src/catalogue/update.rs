//! The generic steps of an update every kind shares (kube's `rest.BeforeUpdate` and the
//! status strategies' `PrepareForUpdate`): identity carried over, status kept, generation bumped.

use serde_json::{Map, Value, json};

use crate::object::ObjectExt;

/// An update keeps the stored status (kinds with a status subresource change it only there).
pub fn keep_status(new: &mut Value, old: &Value) {
    match old.get("status") {
        Some(s) => new["status"] = s.clone(),
        None => {
            new.as_object_mut().expect("object").remove("status");
        }
    }
}

/// Bumps `metadata.generation` past the stored one.
pub fn bump_generation(new: &mut Value, old: &Value) {
    let generation = old.pointer("/metadata/generation").and_then(Value::as_i64).unwrap_or(0) + 1;
    new.meta_mut().insert("generation".into(), json!(generation));
}

/// The status-subresource `PrepareForUpdate`: identity and the spec come from `old`, only
/// `status` and metadata changes are taken from `new`.
pub fn prepare_for_status_update(new: &mut Value, old: &Value) {
    carry_identity(new, old);
    match old.get("spec") {
        // A status write rarely sends another spec: compared, not copied over itself.
        Some(s) if new.get("spec") == Some(s) => {}
        Some(s) => new["spec"] = s.clone(),
        None => {
            new.as_object_mut().expect("object").remove("spec");
        }
    }
}

/// `BeforeUpdate`'s identity carry-over: uid, creationTimestamp, deletion fields and
/// generation come from the stored object.
pub fn carry_identity(new: &mut Value, old: &Value) {
    let empty = Map::new();
    let old_meta = old.meta().unwrap_or(&empty);
    let meta = new.meta_mut();
    if let Some(g) = old_meta.get("generation") {
        meta.insert("generation".into(), g.clone());
    } else {
        meta.remove("generation");
    }
    if meta.get("uid").and_then(Value::as_str).unwrap_or("").is_empty()
        && let Some(uid) = old_meta.get("uid")
    {
        meta.insert("uid".into(), uid.clone());
    }
    if let Some(ts) = old_meta.get("creationTimestamp").filter(|v| !v.is_null()) {
        meta.insert("creationTimestamp".into(), ts.clone());
    }
    match old_meta.get("deletionTimestamp").filter(|v| !v.is_null()) {
        Some(ts) => {
            meta.insert("deletionTimestamp".into(), ts.clone());
        }
        None => {
            meta.remove("deletionTimestamp");
        }
    }
    if let Some(g) = old_meta.get("deletionGracePeriodSeconds").filter(|v| !v.is_null())
        && meta.get("deletionGracePeriodSeconds").is_none_or(Value::is_null)
    {
        meta.insert("deletionGracePeriodSeconds".into(), g.clone());
    }
}
