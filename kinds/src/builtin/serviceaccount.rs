//! `v1` ServiceAccount (kube: `pkg/registry/core/serviceaccount`).

use k8s_openapi::api::core::v1::ServiceAccount;
use serde_json::Value;

use crate::printers;
use apimachinery::catalogue::{ResourceDef, Strategy, Subresource};
use apimachinery::error::Cause;
use apimachinery::table::Printer;
use validation::core;

pub(super) fn definition() -> ResourceDef {
    ResourceDef::new("", "v1", "serviceaccounts", "ServiceAccount", ServiceAccounts)
        .short_names(&["sa"])
        .subresources(&[Subresource::Token])
        .schema::<ServiceAccount>()
}

struct ServiceAccounts;

impl Strategy for ServiceAccounts {
    fn validate(&self, _: &ResourceDef, obj: &Value) -> Vec<Cause> {
        core::validate_service_account(obj)
    }

    /// kube revalidates the whole object on update.
    fn validate_update(&self, def: &ResourceDef, new: &Value, old: &Value) -> Vec<Cause> {
        let mut out = apimachinery::catalogue::meta_update(new, old);
        out.extend(self.validate(def, new));
        out
    }

    fn printer(&self) -> Option<&dyn Printer> {
        Some(&printers::SERVICE_ACCOUNTS)
    }
}
