//! `networking.k8s.io/v1` IngressClass (kube: `pkg/registry/networking/ingressclass`).

use k8s_openapi::api::networking::v1::IngressClass;

use crate::kinds::{ResourceDef, Strategy};
use crate::table::{Printer, printers};

pub(super) fn definition() -> ResourceDef {
    ResourceDef::new("networking.k8s.io", "v1", "ingressclasses", "IngressClass", IngressClasses)
        .cluster_scoped()
        .schema::<IngressClass>()
}

struct IngressClasses;

impl Strategy for IngressClasses {
    fn tracks_generation(&self) -> bool {
        true
    }

    fn printer(&self) -> Option<&dyn Printer> {
        Some(&printers::INGRESS_CLASSES)
    }
}
