//! `v1` PersistentVolumeClaim (kube: `pkg/registry/core/persistentvolumeclaim`).

use k8s_openapi::api::core::v1::PersistentVolumeClaim;
use serde_json::{Value, json};

use crate::kinds::{ResourceDef, Strategy, Subresource};
use crate::table::{Printer, printers};

pub(super) fn definition() -> ResourceDef {
    ResourceDef::new("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", PersistentVolumeClaims)
        .short_names(&["pvc"])
        .subresources(&[Subresource::Status])
        .schema::<PersistentVolumeClaim>()
}

struct PersistentVolumeClaims;

impl Strategy for PersistentVolumeClaims {
    fn prepare_for_create(&self, obj: &mut Value) {
        crate::defaults::reset_status(obj, json!({"phase": "Pending"}));
    }

    fn printer(&self) -> Option<&dyn Printer> {
        Some(&printers::PERSISTENT_VOLUME_CLAIMS)
    }
}
