//! `v1` PersistentVolumeClaim (kube: `pkg/registry/core/persistentvolumeclaim`).

use k8s_openapi::api::core::v1::PersistentVolumeClaim;
use serde_json::{Value, json};

use crate::printers;
use apimachinery::catalogue::{ResourceDef, Strategy, Subresource};
use apimachinery::error::Cause;
use apimachinery::table::Printer;
use validation::cluster;

pub(super) fn definition() -> ResourceDef {
    ResourceDef::new("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", PersistentVolumeClaims)
        .short_names(&["pvc"])
        .subresources(&[Subresource::Status])
        .schema::<PersistentVolumeClaim>()
}

struct PersistentVolumeClaims;

impl Strategy for PersistentVolumeClaims {
    fn validate_kind(&self, obj: &Value) -> Vec<Cause> {
        cluster::persistent_volume_claim(obj)
    }

    fn validate_kind_update(&self, new: &Value, old: &Value) -> Vec<Cause> {
        let mut out = cluster::persistent_volume_claim(new);
        out.extend(cluster::persistent_volume_claim_update(new, old));
        out
    }

    fn defaults(&self, obj: &mut Value) {
        crate::defaults::default_persistent_volume_claim(obj);
    }

    fn prepare_for_create(&self, obj: &mut Value) {
        crate::defaults::reset_status(obj, json!({"phase": "Pending"}));
    }

    fn printer(&self) -> Option<&dyn Printer> {
        Some(&printers::PERSISTENT_VOLUME_CLAIMS)
    }
}
