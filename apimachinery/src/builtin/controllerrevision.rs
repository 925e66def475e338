//! `apps/v1` ControllerRevision (kube: `pkg/registry/apps/controllerrevision`).

use k8s_openapi::api::apps::v1::ControllerRevision;

use crate::kinds::{ResourceDef, Strategy};
use crate::table::{Printer, printers};

pub(super) fn definition() -> ResourceDef {
    ResourceDef::new("apps", "v1", "controllerrevisions", "ControllerRevision", ControllerRevisions)
        .schema::<ControllerRevision>()
}

struct ControllerRevisions;

impl Strategy for ControllerRevisions {
    fn printer(&self) -> Option<&dyn Printer> {
        Some(&printers::CONTROLLER_REVISIONS)
    }
}
