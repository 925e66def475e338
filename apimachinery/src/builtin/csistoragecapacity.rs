//! `storage.k8s.io/v1` CSIStorageCapacity (kube: `pkg/registry/storage/csistoragecapacity`).

use k8s_openapi::api::storage::v1::CSIStorageCapacity;

use crate::kinds::{ResourceDef, Strategy};
use crate::table::{Printer, printers};

pub(super) fn definition() -> ResourceDef {
    ResourceDef::new("storage.k8s.io", "v1", "csistoragecapacities", "CSIStorageCapacity", CsiStorageCapacities)
        .schema::<CSIStorageCapacity>()
}

struct CsiStorageCapacities;

impl Strategy for CsiStorageCapacities {
    fn printer(&self) -> Option<&dyn Printer> {
        Some(&printers::CSI_STORAGE_CAPACITIES)
    }
}
