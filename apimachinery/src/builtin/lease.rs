//! `coordination.k8s.io/v1` Lease (kube: `pkg/registry/coordination/lease`).

use k8s_openapi::api::coordination::v1::Lease;
use serde_json::Value;

use crate::error::Cause;
use crate::kinds::{ResourceDef, Strategy};
use crate::table::{Printer, printers};
use crate::validation::core;

pub(super) fn definition() -> ResourceDef {
    ResourceDef::new("coordination.k8s.io", "v1", "leases", "Lease", Leases).schema::<Lease>()
}

struct Leases;

impl Strategy for Leases {
    fn validate(&self, _: &ResourceDef, obj: &Value) -> Vec<Cause> {
        core::validate_lease(obj)
    }

    fn validate_update(&self, _: &ResourceDef, new: &Value, old: &Value) -> Vec<Cause> {
        core::validate_lease_update(new, old)
    }

    fn allow_create_on_update(&self) -> bool {
        true
    }

    fn printer(&self) -> Option<&dyn Printer> {
        Some(&printers::LEASES)
    }
}
