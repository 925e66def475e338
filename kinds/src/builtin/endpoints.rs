//! `v1` Endpoints (kube: `pkg/registry/core/endpoint`), stored under `services/endpoints`.

use k8s_openapi::api::core::v1::Endpoints as EndpointsType;
use serde_json::Value;

use crate::printers;
use apimachinery::catalogue::{ResourceDef, Strategy};
use apimachinery::error::Cause;
use apimachinery::table::Printer;
use validation::core;

pub(super) fn definition() -> ResourceDef {
    ResourceDef::new("", "v1", "endpoints", "Endpoints", Endpoints)
        .short_names(&["ep"])
        .storage_path("services/endpoints")
        .schema::<EndpointsType>()
}

struct Endpoints;

impl Strategy for Endpoints {
    fn defaults(&self, obj: &mut Value) {
        crate::defaults::default_endpoints(obj);
    }

    fn validate(&self, _: &ResourceDef, obj: &Value) -> Vec<Cause> {
        core::validate_endpoints(obj)
    }

    /// kube revalidates the whole object on update.
    fn validate_update(&self, def: &ResourceDef, new: &Value, old: &Value) -> Vec<Cause> {
        let mut out = apimachinery::catalogue::meta_update(new, old);
        out.extend(self.validate(def, new));
        out
    }

    fn allow_create_on_update(&self) -> bool {
        true
    }

    fn printer(&self) -> Option<&dyn Printer> {
        Some(&printers::ENDPOINTS)
    }
}
