//! `apps/v1` ReplicaSet (kube: `pkg/registry/apps/replicaset`).

use k8s_openapi::api::apps::v1::ReplicaSet;
use serde_json::{Value, json};

use crate::printers;
use apimachinery::catalogue::{ResourceDef, Strategy, Subresource};
use apimachinery::error::Cause;
use apimachinery::table::Printer;
use validation::apps;

pub(super) fn definition() -> ResourceDef {
    ResourceDef::new("apps", "v1", "replicasets", "ReplicaSet", ReplicaSets)
        .short_names(&["rs"])
        .categories(&["all"])
        .subresources(&[Subresource::Status, Subresource::Scale])
        .schema::<ReplicaSet>()
}

struct ReplicaSets;

impl Strategy for ReplicaSets {
    fn defaults(&self, obj: &mut Value) {
        crate::defaults::default_replicaset(obj);
    }

    /// Go serialises the non-omitempty `replicas` even when zero.
    fn prepare_for_create(&self, obj: &mut Value) {
        crate::defaults::reset_status(obj, json!({"replicas": 0}));
    }

    fn validate(&self, _: &ResourceDef, obj: &Value) -> Vec<Cause> {
        apps::validate_replicaset(obj)
    }

    fn validate_update(&self, _: &ResourceDef, new: &Value, old: &Value) -> Vec<Cause> {
        apps::validate_replicaset_update(new, old)
    }

    fn validate_status_update(&self, _: &ResourceDef, new: &Value, old: &Value) -> Vec<Cause> {
        apps::validate_workload_status_update(new, old)
    }

    fn tracks_generation(&self) -> bool {
        true
    }

    fn printer(&self) -> Option<&dyn Printer> {
        Some(&printers::REPLICA_SETS)
    }
}
