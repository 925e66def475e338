//! `node.k8s.io/v1` RuntimeClass (kube: `pkg/registry/node/runtimeclass`).

use k8s_openapi::api::node::v1::RuntimeClass;

use crate::kinds::{ResourceDef, Strategy};
use crate::table::{Printer, printers};

pub(super) fn definition() -> ResourceDef {
    ResourceDef::new("node.k8s.io", "v1", "runtimeclasses", "RuntimeClass", RuntimeClasses)
        .cluster_scoped()
        .schema::<RuntimeClass>()
}

struct RuntimeClasses;

impl Strategy for RuntimeClasses {
    fn printer(&self) -> Option<&dyn Printer> {
        Some(&printers::RUNTIME_CLASSES)
    }
}
