//! `storage.k8s.io/v1` StorageClass (kube: `pkg/registry/storage/storageclass`).

use k8s_openapi::api::storage::v1::StorageClass;

use crate::kinds::{ResourceDef, Strategy};
use crate::table::{Printer, printers};

pub(super) fn definition() -> ResourceDef {
    ResourceDef::new("storage.k8s.io", "v1", "storageclasses", "StorageClass", StorageClasses)
        .cluster_scoped()
        .short_names(&["sc"])
        .schema::<StorageClass>()
}

struct StorageClasses;

impl Strategy for StorageClasses {
    fn printer(&self) -> Option<&dyn Printer> {
        Some(&printers::STORAGE_CLASSES)
    }
}
