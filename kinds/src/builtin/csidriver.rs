//! `storage.k8s.io/v1` CSIDriver (kube: `pkg/registry/storage/csidriver`).

use k8s_openapi::api::storage::v1::CSIDriver;

use serde_json::Value;

use crate::printers;
use apimachinery::catalogue::{ResourceDef, Strategy};
use apimachinery::error::Cause;
use apimachinery::table::Printer;
use validation::cluster;

pub(super) fn definition() -> ResourceDef {
    ResourceDef::new("storage.k8s.io", "v1", "csidrivers", "CSIDriver", CsiDrivers)
        .cluster_scoped()
        .schema::<CSIDriver>()
}

struct CsiDrivers;

impl Strategy for CsiDrivers {
    fn validate_update(&self, _: &ResourceDef, new: &Value, old: &Value) -> Vec<Cause> {
        let mut out = apimachinery::catalogue::meta_update(new, old);
        out.extend(cluster::csi_driver_update(new, old));
        out
    }

    fn defaults(&self, obj: &mut Value) {
        crate::defaults::default_csi_driver(obj);
    }

    fn printer(&self) -> Option<&dyn Printer> {
        Some(&printers::CSI_DRIVERS)
    }
}
