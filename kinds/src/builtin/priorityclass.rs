//! `scheduling.k8s.io/v1` PriorityClass (kube: `pkg/registry/scheduling/priorityclass`).

use k8s_openapi::api::scheduling::v1::PriorityClass;

use serde_json::Value;

use crate::printers;
use apimachinery::catalogue::{ResourceDef, Strategy};
use apimachinery::error::Cause;
use apimachinery::table::Printer;
use validation::cluster;

pub(super) fn definition() -> ResourceDef {
    ResourceDef::new("scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", PriorityClasses)
        .cluster_scoped()
        .short_names(&["pc"])
        .schema::<PriorityClass>()
}

struct PriorityClasses;

impl Strategy for PriorityClasses {
    /// kube's registry refuses to delete the system classes.
    fn deletion_forbidden(&self, obj: &Value) -> Option<String> {
        let name = obj.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("");
        cluster::SYSTEM_PRIORITY_CLASSES
            .iter()
            .any(|(n, _, _)| *n == name)
            .then(|| "this is a system priority class and cannot be deleted".to_string())
    }

    fn validate_kind(&self, obj: &Value) -> Vec<Cause> {
        cluster::priority_class(obj)
    }

    fn validate_kind_update(&self, new: &Value, old: &Value) -> Vec<Cause> {
        cluster::priority_class_update(new, old)
    }

    fn defaults(&self, obj: &mut Value) {
        crate::defaults::default_priority_class(obj);
    }

    fn printer(&self) -> Option<&dyn Printer> {
        Some(&printers::PRIORITY_CLASSES)
    }
}
