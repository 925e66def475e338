//! `storage.k8s.io/v1` CSINode (kube: `pkg/registry/storage/csinode`).

use k8s_openapi::api::storage::v1::CSINode;

use crate::kinds::{ResourceDef, Strategy};
use crate::table::{Printer, printers};

pub(super) fn definition() -> ResourceDef {
    ResourceDef::new("storage.k8s.io", "v1", "csinodes", "CSINode", CsiNodes).cluster_scoped().schema::<CSINode>()
}

struct CsiNodes;

impl Strategy for CsiNodes {
    fn printer(&self) -> Option<&dyn Printer> {
        Some(&printers::CSI_NODES)
    }
}
