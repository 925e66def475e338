//! `v1` PersistentVolume (kube: `pkg/registry/core/persistentvolume`).

use k8s_openapi::api::core::v1::PersistentVolume;
use serde_json::{Value, json};

use crate::printers;
use apimachinery::catalogue::{ResourceDef, Strategy, Subresource};
use apimachinery::error::Cause;
use apimachinery::table::Printer;
use validation::cluster;

pub(super) fn definition() -> ResourceDef {
    ResourceDef::new("", "v1", "persistentvolumes", "PersistentVolume", PersistentVolumes)
        .cluster_scoped()
        .short_names(&["pv"])
        .subresources(&[Subresource::Status])
        .schema::<PersistentVolume>()
}

struct PersistentVolumes;

impl Strategy for PersistentVolumes {
    fn validate_kind(&self, obj: &Value) -> Vec<Cause> {
        cluster::persistent_volume(obj)
    }

    fn validate_kind_update(&self, new: &Value, old: &Value) -> Vec<Cause> {
        let mut out = cluster::persistent_volume(new);
        out.extend(cluster::persistent_volume_update(new, old));
        out
    }

    fn defaults(&self, obj: &mut Value) {
        crate::defaults::default_persistent_volume(obj);
    }

    fn prepare_for_create(&self, obj: &mut Value) {
        crate::defaults::reset_status(obj, json!({"phase": "Pending"}));
    }

    fn printer(&self) -> Option<&dyn Printer> {
        Some(&printers::PERSISTENT_VOLUMES)
    }
}
