//! `storage.k8s.io/v1` StorageClass (kube: `pkg/registry/storage/storageclass`).

use k8s_openapi::api::storage::v1::StorageClass;

use serde_json::Value;

use crate::printers;
use apimachinery::catalogue::{ResourceDef, Strategy};
use apimachinery::error::Cause;
use apimachinery::table::Printer;
use validation::cluster;

pub(super) fn definition() -> ResourceDef {
    ResourceDef::new("storage.k8s.io", "v1", "storageclasses", "StorageClass", StorageClasses)
        .cluster_scoped()
        .short_names(&["sc"])
        .schema::<StorageClass>()
}

struct StorageClasses;

impl Strategy for StorageClasses {
    fn validate_kind(&self, obj: &Value) -> Vec<Cause> {
        cluster::storage_class(obj)
    }

    fn validate_kind_update(&self, new: &Value, old: &Value) -> Vec<Cause> {
        cluster::storage_class_update(new, old)
    }

    fn defaults(&self, obj: &mut Value) {
        crate::defaults::default_storage_class(obj);
    }

    fn printer(&self) -> Option<&dyn Printer> {
        Some(&printers::STORAGE_CLASSES)
    }
}
