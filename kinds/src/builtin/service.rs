//! `v1` Service (kube: `pkg/registry/core/service`), stored under `services/specs`, named as
//! RFC 1035 labels. The registry allocates its cluster IP and node ports; the strategy says
//! which it needs.

use k8s_openapi::api::core::v1::Service;
use serde_json::Value;

use crate::defaults;
use crate::printers;
use apimachinery::catalogue::{Claim, NameRule, Pool, ResourceDef, Strategy, Subresource};
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

/// Where a Service's claims go (see [`Services::claims`]).
const SLOT_CLUSTER_IP: usize = 0;
const SLOT_HEALTH_CHECK: usize = 1;
const SLOT_FIRST_PORT: usize = 2;

impl Strategy for Services {
    fn defaults(&self, obj: &mut Value) {
        defaults::default_service(obj);
    }

    fn prepare_for_create(&self, obj: &mut Value) {
        defaults::prepare_service_for_create(obj);
        defaults::share_requested_node_ports(obj);
    }

    fn prepare_for_update(&self, new: &mut Value, old: &Value) {
        defaults::patch_allocated_values(new, old);
        defaults::drop_type_dependent_fields(new, old);
        defaults::share_requested_node_ports(new);
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

    /// Slot 0 is the cluster IP, 1 the `healthCheckNodePort`, `2 + i` the node port of
    /// `spec.ports[i]`. Ports of one number share a node port (one per number is asked for, and
    /// its allocation fills the others), as kube's allocator gives them one.
    fn claims(&self, obj: &Value) -> Vec<Claim> {
        let mut out = Vec::new();
        let ip_field = "spec.clusterIPs".to_string();
        if defaults::needs_cluster_ip(obj) {
            out.push(Claim { pool: Pool::ClusterIps, slot: SLOT_CLUSTER_IP, value: None, field: ip_field });
        } else if let Some(ip) = defaults::requested_cluster_ip(obj) {
            let value = Some(ip.to_string());
            out.push(Claim { pool: Pool::ClusterIps, slot: SLOT_CLUSTER_IP, value, field: ip_field });
        }
        let wanted = defaults::node_ports_to_allocate(obj);
        let ports = obj.pointer("/spec/ports").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
        let mut numbers = Vec::new();
        for (i, port) in ports.iter().enumerate() {
            let field = format!("spec.ports[{i}].nodePort");
            let number = port.get("port").and_then(Value::as_i64);
            let node_port = port.get("nodePort").and_then(Value::as_u64).filter(|n| *n != 0);
            let slot = SLOT_FIRST_PORT + i;
            // Ports of one number share theirs; two numbers asking for one port do not.
            let shared = |p: &Value| {
                p.get("port").and_then(Value::as_i64) == number && p.get("nodePort") == port.get("nodePort")
            };
            match node_port {
                Some(n) if !ports[..i].iter().any(shared) => {
                    out.push(Claim { pool: Pool::NodePorts, slot, value: Some(n.to_string()), field });
                }
                Some(_) => {}
                None if wanted.contains(&i) && !numbers.contains(&number) => {
                    out.push(Claim { pool: Pool::NodePorts, slot, value: None, field });
                }
                None => {}
            }
            numbers.push(number);
        }
        let health = obj.pointer("/spec/healthCheckNodePort").and_then(Value::as_u64).filter(|n| *n != 0);
        let field = "spec.healthCheckNodePort".to_string();
        if let Some(n) = health {
            out.push(Claim { pool: Pool::NodePorts, slot: SLOT_HEALTH_CHECK, value: Some(n.to_string()), field });
        } else if defaults::needs_health_check_node_port(obj) {
            out.push(Claim { pool: Pool::NodePorts, slot: SLOT_HEALTH_CHECK, value: None, field });
        }
        out
    }

    fn set_claim(&self, obj: &mut Value, slot: usize, value: &str) {
        match slot {
            SLOT_CLUSTER_IP => defaults::set_cluster_ip(obj, value),
            SLOT_HEALTH_CHECK => {
                if let Ok(port) = value.parse() {
                    defaults::set_health_check_node_port(obj, port);
                }
            }
            slot => {
                let Ok(port) = value.parse() else { return };
                let index = slot - SLOT_FIRST_PORT;
                let number = obj.pointer(&format!("/spec/ports/{index}/port")).cloned();
                for i in defaults::node_ports_to_allocate(obj) {
                    let same = i == index || obj.pointer(&format!("/spec/ports/{i}/port")) == number.as_ref();
                    if same {
                        defaults::set_node_port(obj, i, port);
                    }
                }
            }
        }
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
