//! `v1` Service (kube: `pkg/registry/core/service`), stored under `services/specs`, named as
//! RFC 1035 labels. The registry allocates its cluster IP; the strategy says which it needs.

use k8s_openapi::api::core::v1::Service;
use serde_json::Value;

use crate::defaults;
use crate::printers;
use apimachinery::catalogue::{ClusterIp, NameRule, ResourceDef, Strategy, Subresource};
use apimachinery::error::Cause;
use apimachinery::selector::FieldLabels;
use apimachinery::selector::selectable::text;
use apimachinery::table::Printer;
use validation::core;

pub(super) fn definition() -> ResourceDef {
    ResourceDef::new("", "v1", "services", "Service", Services)
        .short_names(&["svc"])
        .categories(&["all"])
        .subresources(&[Subresource::Proxy, Subresource::Status])
        .storage_path("services/specs")
        .names(NameRule::Rfc1035Label)
        .schema::<Service>()
}

struct Services;

impl Strategy for Services {
    fn defaults(&self, obj: &mut Value) {
        defaults::default_service(obj);
    }

    fn prepare_for_create(&self, obj: &mut Value) {
        defaults::prepare_service_for_create(obj);
    }

    fn prepare_for_update(&self, new: &mut Value, old: &Value) {
        defaults::patch_allocated_values(new, old);
    }

    fn validate(&self, _: &ResourceDef, obj: &Value) -> Vec<Cause> {
        core::validate_service(obj)
    }

    fn validate_update(&self, _: &ResourceDef, new: &Value, old: &Value) -> Vec<Cause> {
        core::validate_service_update(new, old)
    }

    fn delete_returns_object(&self) -> bool {
        true
    }

    fn cluster_ip(&self, obj: &Value) -> Option<ClusterIp> {
        if defaults::needs_cluster_ip(obj) {
            Some(ClusterIp::Allocate)
        } else {
            defaults::requested_cluster_ip(obj).map(|ip| ClusterIp::Static(ip.to_string()))
        }
    }

    fn set_cluster_ip(&self, obj: &mut Value, ip: &str) {
        defaults::set_cluster_ip(obj, ip);
    }

    fn field_labels(&self) -> &'static FieldLabels {
        &FieldLabels::SERVICES
    }

    fn selectable_fields(&self, obj: &Value, out: &mut Vec<(&'static str, String)>) {
        out.push(("spec.clusterIP", text(obj, "spec.clusterIP")));
    }

    fn printer(&self) -> Option<&dyn Printer> {
        Some(&printers::SERVICES)
    }
}
