//! `apps/v1` ControllerRevision (kube: `pkg/registry/apps/controllerrevision`).

use k8s_openapi::api::apps::v1::ControllerRevision;

use serde_json::Value;

use crate::printers;
use apimachinery::catalogue::{ResourceDef, Strategy};
use apimachinery::error::Cause;
use apimachinery::table::Printer;
use validation::cluster;

pub(super) fn definition() -> ResourceDef {
    ResourceDef::new("apps", "v1", "controllerrevisions", "ControllerRevision", ControllerRevisions)
        .schema::<ControllerRevision>()
}

struct ControllerRevisions;

impl Strategy for ControllerRevisions {
    fn validate_kind(&self, obj: &Value) -> Vec<Cause> {
        cluster::controller_revision(obj)
    }

    fn validate_kind_update(&self, new: &Value, old: &Value) -> Vec<Cause> {
        let mut out = cluster::controller_revision(new);
        if new.get("data") != old.get("data") {
            let path = apimachinery::validation::field::Path::new("data");
            let value =
                apimachinery::validation::field::Bad::Raw(apimachinery::validation::field::go_struct(new.get("data")));
            out.push(apimachinery::validation::field::invalid(&path, value, "field is immutable"));
        }
        out
    }

    fn printer(&self) -> Option<&dyn Printer> {
        Some(&printers::CONTROLLER_REVISIONS)
    }
}
