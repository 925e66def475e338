//! `storage.k8s.io/v1` StorageClass (kube: `pkg/registry/storage/storageclass`).

use k8s_openapi::api::storage::v1::StorageClass;

use serde_json::Value;

use crate::error::Cause;
use crate::kinds::{ResourceDef, Strategy};
use crate::table::{Printer, printers};
use crate::validation::cluster;

pub(super) fn definition() -> ResourceDef {
    ResourceDef::new("storage.k8s.io", "v1", "storageclasses", "StorageClass", StorageClasses)
        .cluster_scoped()
        .short_names(&["sc"])
        .schema::<StorageClass>()
}

struct StorageClasses;

impl Strategy for StorageClasses {
    fn validate(&self, def: &ResourceDef, obj: &Value) -> Vec<Cause> {
        let mut out = crate::kinds::DefaultStrategy.validate(def, obj);
        out.extend(cluster::storage_class(obj));
        out
    }

    fn validate_update(&self, _: &ResourceDef, new: &Value, old: &Value) -> Vec<Cause> {
        let mut out = crate::kinds::meta_update(new, old);
        out.extend(cluster::storage_class_update(new, old));
        out
    }

    fn defaults(&self, obj: &mut Value) {
        crate::defaults::default_storage_class(obj);
    }

    fn printer(&self) -> Option<&dyn Printer> {
        Some(&printers::STORAGE_CLASSES)
    }
}
