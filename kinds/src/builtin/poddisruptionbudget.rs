//! `policy/v1` PodDisruptionBudget (kube: `pkg/registry/policy/poddisruptionbudget`).

use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use serde_json::{Value, json};

use crate::printers;
use apimachinery::catalogue::{ResourceDef, Strategy, Subresource};
use apimachinery::error::Cause;
use apimachinery::table::Printer;
use validation::cluster;

pub(super) fn definition() -> ResourceDef {
    ResourceDef::new("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", PodDisruptionBudgets)
        .short_names(&["pdb"])
        .subresources(&[Subresource::Status])
        .schema::<PodDisruptionBudget>()
}

struct PodDisruptionBudgets;

impl Strategy for PodDisruptionBudgets {
    fn validate_kind(&self, obj: &Value) -> Vec<Cause> {
        cluster::pod_disruption_budget(obj)
    }

    fn prepare_for_create(&self, obj: &mut Value) {
        crate::defaults::reset_status(
            obj,
            json!({"currentHealthy": 0, "desiredHealthy": 0, "disruptionsAllowed": 0, "expectedPods": 0}),
        );
    }

    fn tracks_generation(&self) -> bool {
        true
    }

    fn printer(&self) -> Option<&dyn Printer> {
        Some(&printers::POD_DISRUPTION_BUDGETS)
    }
}
