//! `v1` ReplicationController (kube: `pkg/registry/core/replicationcontroller`).

use k8s_openapi::api::core::v1::ReplicationController;
use serde_json::{Value, json};

use crate::printers;
use apimachinery::catalogue::{ResourceDef, Strategy, Subresource};
use apimachinery::table::Printer;

pub(super) fn definition() -> ResourceDef {
    ResourceDef::new("", "v1", "replicationcontrollers", "ReplicationController", ReplicationControllers)
        .storage_path("controllers")
        .short_names(&["rc"])
        .categories(&["all"])
        .subresources(&[Subresource::Status, Subresource::Scale])
        .schema::<ReplicationController>()
}

struct ReplicationControllers;

impl Strategy for ReplicationControllers {
    fn defaults(&self, obj: &mut Value) {
        crate::defaults::default_replication_controller(obj);
    }

    fn prepare_for_create(&self, obj: &mut Value) {
        crate::defaults::reset_status(obj, json!({"replicas": 0}));
    }

    fn tracks_generation(&self) -> bool {
        true
    }

    fn printer(&self) -> Option<&dyn Printer> {
        Some(&printers::REPLICATION_CONTROLLERS)
    }
}
