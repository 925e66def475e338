//! `scheduling.k8s.io/v1` PriorityClass (kube: `pkg/registry/scheduling/priorityclass`).

use k8s_openapi::api::scheduling::v1::PriorityClass;

use crate::kinds::{ResourceDef, Strategy};
use crate::table::{Printer, printers};

pub(super) fn definition() -> ResourceDef {
    ResourceDef::new("scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", PriorityClasses)
        .cluster_scoped()
        .short_names(&["pc"])
        .schema::<PriorityClass>()
}

struct PriorityClasses;

impl Strategy for PriorityClasses {
    fn printer(&self) -> Option<&dyn Printer> {
        Some(&printers::PRIORITY_CLASSES)
    }
}
