//! `v1` PodTemplate (kube: `pkg/registry/core/podtemplate`).

use k8s_openapi::api::core::v1::PodTemplate;

use serde_json::Value;

use crate::printers;
use apimachinery::catalogue::{ResourceDef, Strategy};
use apimachinery::table::Printer;

pub(super) fn definition() -> ResourceDef {
    ResourceDef::new("", "v1", "podtemplates", "PodTemplate", PodTemplates).schema::<PodTemplate>()
}

struct PodTemplates;

impl Strategy for PodTemplates {
    fn defaults(&self, obj: &mut Value) {
        crate::defaults::default_pod_template(obj);
    }

    fn printer(&self) -> Option<&dyn Printer> {
        Some(&printers::POD_TEMPLATES)
    }
}
