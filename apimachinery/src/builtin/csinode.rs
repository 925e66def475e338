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
    fn validate(&self, def: &ResourceDef, obj: &Value) -> Vec<Cause> {
        let mut out = crate::kinds::DefaultStrategy.validate(def, obj);
        out.extend(storage::csi_node(obj));
        out
    }

    fn validate_update(&self, _: &ResourceDef, new: &Value, old: &Value) -> Vec<Cause> {
        let mut out = crate::kinds::meta_update(new, old);
        out.extend(storage::csi_node(new));
        out
    }

    fn printer(&self) -> Option<&dyn Printer> {
        Some(&printers::CSI_NODES)
    }
}
