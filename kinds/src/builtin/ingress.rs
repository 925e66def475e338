//! `networking.k8s.io/v1` Ingress (kube: `pkg/registry/networking/ingress`).

use k8s_openapi::api::networking::v1::Ingress;
use serde_json::{Value, json};

use crate::printers;
use apimachinery::catalogue::{ResourceDef, Strategy, Subresource};
use apimachinery::error::Cause;
use apimachinery::table::Printer;
use validation::cluster;

pub(super) fn definition() -> ResourceDef {
    ResourceDef::new("networking.k8s.io", "v1", "ingresses", "Ingress", Ingresses)
        .storage_path("ingress")
        .short_names(&["ing"])
        .subresources(&[Subresource::Status])
        .schema::<Ingress>()
}

struct Ingresses;

impl Strategy for Ingresses {
    fn validate_kind(&self, obj: &Value) -> Vec<Cause> {
        cluster::ingress(obj)
    }

    fn prepare_for_create(&self, obj: &mut Value) {
        crate::defaults::reset_status(obj, json!({}));
    }

    fn tracks_generation(&self) -> bool {
        true
    }

    fn printer(&self) -> Option<&dyn Printer> {
        Some(&printers::INGRESSES)
    }
}
