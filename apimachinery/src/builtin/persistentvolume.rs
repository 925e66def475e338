//! `v1` PersistentVolume (kube: `pkg/registry/core/persistentvolume`).

use k8s_openapi::api::core::v1::PersistentVolume;
use serde_json::{Value, json};

use crate::kinds::{ResourceDef, Strategy, Subresource};
use crate::table::{Printer, printers};

pub(super) fn definition() -> ResourceDef {
    ResourceDef::new("", "v1", "persistentvolumes", "PersistentVolume", PersistentVolumes)
        .cluster_scoped()
        .short_names(&["pv"])
        .subresources(&[Subresource::Status])
        .schema::<PersistentVolume>()
}

struct PersistentVolumes;

impl Strategy for PersistentVolumes {
    fn prepare_for_create(&self, obj: &mut Value) {
        crate::defaults::reset_status(obj, json!({"phase": "Pending"}));
    }

    fn printer(&self) -> Option<&dyn Printer> {
        Some(&printers::PERSISTENT_VOLUMES)
    }
}
