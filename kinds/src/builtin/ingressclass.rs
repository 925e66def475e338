//! `networking.k8s.io/v1` IngressClass (kube: `pkg/registry/networking/ingressclass`).

use k8s_openapi::api::networking::v1::IngressClass;

use serde_json::Value;

use crate::printers;
use apimachinery::catalogue::{ResourceDef, Strategy};
use apimachinery::error::Cause;
use apimachinery::table::Printer;
use validation::cluster;

pub(super) fn definition() -> ResourceDef {
    ResourceDef::new("networking.k8s.io", "v1", "ingressclasses", "IngressClass", IngressClasses)
        .cluster_scoped()
        .schema::<IngressClass>()
}

struct IngressClasses;

impl Strategy for IngressClasses {
    fn validate_kind(&self, obj: &Value) -> Vec<Cause> {
        cluster::ingress_class(obj)
    }

    fn validate_kind_update(&self, new: &Value, old: &Value) -> Vec<Cause> {
        cluster::ingress_class_update(new, old)
    }

    fn defaults(&self, obj: &mut Value) {
        crate::defaults::default_ingress_class(obj);
    }

    fn tracks_generation(&self) -> bool {
        true
    }

    fn printer(&self) -> Option<&dyn Printer> {
        Some(&printers::INGRESS_CLASSES)
    }
}
