//! `v1` ComponentStatus (deprecated since kube 1.19): read-only and stored nowhere; the
//! gateway probes the components on each request.

use k8s_openapi::api::core::v1::ComponentStatus;

use apimachinery::catalogue::{DefaultStrategy, ResourceDef};

pub(super) fn definition() -> ResourceDef {
    ResourceDef::new("", "v1", "componentstatuses", "ComponentStatus", DefaultStrategy)
        .cluster_scoped()
        .short_names(&["cs"])
        .by_gateway(&["get", "list"])
        .deprecated("v1 ComponentStatus is deprecated in v1.19+")
        .schema::<ComponentStatus>()
}
