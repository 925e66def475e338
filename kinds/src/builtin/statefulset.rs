//! `apps/v1` StatefulSet (kube: `pkg/registry/apps/statefulset`).

use k8s_openapi::api::apps::v1::StatefulSet;
use serde_json::{Value, json};

use crate::printers;
use apimachinery::catalogue::{ResourceDef, Strategy, Subresource};
use apimachinery::error::Cause;
use apimachinery::table::Printer;
use validation::apps;

pub(super) fn definition() -> ResourceDef {
    ResourceDef::new("apps", "v1", "statefulsets", "StatefulSet", StatefulSets)
        .short_names(&["sts"])
        .categories(&["all"])
        .subresources(&[Subresource::Status, Subresource::Scale])
        .schema::<StatefulSet>()
}

struct StatefulSets;

impl Strategy for StatefulSets {
    fn defaults(&self, obj: &mut Value) {
        crate::defaults::default_statefulset(obj);
    }

    /// Go serialises the non-omitempty counters even when zero.
    fn prepare_for_create(&self, obj: &mut Value) {
        crate::defaults::reset_status(obj, json!({"replicas": 0, "availableReplicas": 0}));
    }

    fn validate(&self, _: &ResourceDef, obj: &Value) -> Vec<Cause> {
        apps::validate_statefulset(obj)
    }

    fn validate_update(&self, _: &ResourceDef, new: &Value, old: &Value) -> Vec<Cause> {
        apps::validate_statefulset_update(new, old)
    }

    fn validate_status_update(&self, _: &ResourceDef, new: &Value, old: &Value) -> Vec<Cause> {
        apps::validate_workload_status_update(new, old)
    }

    fn tracks_generation(&self) -> bool {
        true
    }

    fn printer(&self) -> Option<&dyn Printer> {
        Some(&printers::STATEFUL_SETS)
    }
}
