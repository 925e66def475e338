//! `networking.k8s.io/v1` NetworkPolicy (kube: `pkg/registry/networking/networkpolicy`).

use k8s_openapi::api::networking::v1::NetworkPolicy;

use serde_json::Value;

use crate::printers;
use apimachinery::catalogue::{ResourceDef, Strategy};
use apimachinery::error::Cause;
use apimachinery::table::Printer;
use validation::networking;

pub(super) fn definition() -> ResourceDef {
    ResourceDef::new("networking.k8s.io", "v1", "networkpolicies", "NetworkPolicy", NetworkPolicies)
        .short_names(&["netpol"])
        .schema::<NetworkPolicy>()
}

struct NetworkPolicies;

impl Strategy for NetworkPolicies {
    fn validate_kind(&self, obj: &Value) -> Vec<Cause> {
        networking::network_policy(obj)
    }

    fn defaults(&self, obj: &mut Value) {
        crate::defaults::default_network_policy(obj);
    }

    fn tracks_generation(&self) -> bool {
        true
    }

    fn printer(&self) -> Option<&dyn Printer> {
        Some(&printers::NETWORK_POLICIES)
    }
}
