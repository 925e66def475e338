//! `v1` Namespace (kube: `pkg/registry/core/namespace`): cluster-scoped, named as DNS labels,
//! no `deletecollection`; a deleted namespace stays `Terminating` until its `spec.finalizers`
//! (the content) are gone, which `/finalize` records.

use k8s_openapi::api::core::v1::Namespace;
use serde_json::Value;

use crate::printers;
use apimachinery::catalogue::{NameRule, ResourceDef, Strategy, Subresource};
use apimachinery::error::Cause;
use apimachinery::selector::FieldLabels;
use apimachinery::selector::selectable::text;
use apimachinery::table::Printer;
use validation::core;

pub(super) fn definition() -> ResourceDef {
    ResourceDef::new("", "v1", "namespaces", "Namespace", Namespaces)
        .cluster_scoped()
        .short_names(&["ns"])
        .subresources(&[Subresource::Status, Subresource::Finalize])
        .names(NameRule::Label)
        .without_deletecollection()
        .schema::<Namespace>()
}

struct Namespaces;

impl Strategy for Namespaces {
    fn defaults(&self, obj: &mut Value) {
        crate::defaults::default_namespace(obj);
    }

    fn prepare_for_create(&self, obj: &mut Value) {
        crate::defaults::prepare_namespace_for_create(obj);
    }

    fn prepare_for_update(&self, new: &mut Value, old: &Value) {
        crate::defaults::keep_namespace_finalizers(new, old);
    }

    fn validate(&self, _: &ResourceDef, obj: &Value) -> Vec<Cause> {
        core::validate_namespace(obj)
    }

    fn validate_update(&self, _: &ResourceDef, new: &Value, old: &Value) -> Vec<Cause> {
        core::validate_namespace_update(new, old)
    }

    fn delete_returns_object(&self) -> bool {
        true
    }

    /// kube's finalize strategy: the status stays as stored; the spec (its finalizers) and the
    /// metadata change as written.
    fn prepare_for_subresource_update(&self, subresource: Subresource, new: &mut Value, old: &Value) {
        if subresource != Subresource::Finalize {
            *new = old.clone();
            return;
        }
        apimachinery::catalogue::update::carry_identity(new, old);
        match old.get("status") {
            Some(status) => new["status"] = status.clone(),
            None => {
                new.as_object_mut().map(|o| o.remove("status"));
            }
        }
    }

    fn awaits_finalization(&self, obj: &Value) -> bool {
        obj.pointer("/spec/finalizers").and_then(Value::as_array).is_some_and(|f| !f.is_empty())
    }

    fn mark_terminating(&self, obj: &mut Value) {
        obj["status"]["phase"] = "Terminating".into();
    }

    fn field_labels(&self) -> &'static FieldLabels {
        &FieldLabels::NAMESPACES
    }

    fn selectable_fields(&self, obj: &Value, out: &mut Vec<(&'static str, String)>) {
        out.push(("status.phase", text(obj, "status.phase")));
    }

    fn printer(&self) -> Option<&dyn Printer> {
        Some(&printers::NAMESPACES)
    }
}
