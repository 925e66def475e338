//! `v1` Binding at the top level (`POST /api/v1/namespaces/<ns>/bindings`, kube's
//! `LegacyBindingREST`): what `pods/binding` does, with the pod named by the Binding's own
//! name. Nothing is stored; the gateway answers it.

use k8s_openapi::api::core::v1::Binding;

use apimachinery::catalogue::{DefaultStrategy, ResourceDef};

pub(super) fn definition() -> ResourceDef {
    ResourceDef::new("", "v1", "bindings", "Binding", DefaultStrategy).by_gateway(&["create"]).schema::<Binding>()
}
