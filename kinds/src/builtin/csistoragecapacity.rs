//! `storage.k8s.io/v1` CSIStorageCapacity (kube: `pkg/registry/storage/csistoragecapacity`).

use k8s_openapi::api::storage::v1::CSIStorageCapacity;

use serde_json::Value;

use crate::printers;
use apimachinery::catalogue::{ResourceDef, Strategy};
use apimachinery::error::Cause;
use apimachinery::table::Printer;
use validation::cluster;

pub(super) fn definition() -> ResourceDef {
    ResourceDef::new("storage.k8s.io", "v1", "csistoragecapacities", "CSIStorageCapacity", CsiStorageCapacities)
        .schema::<CSIStorageCapacity>()
}

struct CsiStorageCapacities;

impl Strategy for CsiStorageCapacities {
    fn validate_update(&self, _: &ResourceDef, new: &Value, old: &Value) -> Vec<Cause> {
        let mut out = apimachinery::catalogue::meta_update(new, old);
        out.extend(cluster::csi_storage_capacity_update(new, old));
        out
    }

    fn printer(&self) -> Option<&dyn Printer> {
        Some(&printers::CSI_STORAGE_CAPACITIES)
    }
}
