//! `storage.k8s.io/v1` CSINode (kube: `pkg/registry/storage/csinode`).

use k8s_openapi::api::storage::v1::CSINode;

use serde_json::Value;

use crate::printers;
use apimachinery::catalogue::{ResourceDef, Strategy};
use apimachinery::error::Cause;
use apimachinery::table::Printer;
use validation::storage;

pub(super) fn definition() -> ResourceDef {
    ResourceDef::new("storage.k8s.io", "v1", "csinodes", "CSINode", CsiNodes).cluster_scoped().schema::<CSINode>()
}

struct CsiNodes;

impl Strategy for CsiNodes {
    fn validate_kind(&self, obj: &Value) -> Vec<Cause> {
        storage::csi_node(obj)
    }

    fn printer(&self) -> Option<&dyn Printer> {
        Some(&printers::CSI_NODES)
    }
}
