//! `storage.k8s.io/v1` CSINode (kube: `pkg/registry/storage/csinode`).

use k8s_openapi::api::storage::v1::CSINode;

use serde_json::Value;

use crate::error::Cause;
use crate::kinds::{ResourceDef, Strategy};
use crate::table::{Printer, printers};
use crate::validation::storage;

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
