//! `v1` Secret (kube: `pkg/registry/core/secret`).

use k8s_openapi::api::core::v1::Secret;
use serde_json::Value;

use crate::printers;
use apimachinery::catalogue::{ResourceDef, Strategy};
use apimachinery::error::Cause;
use apimachinery::selector::FieldLabels;
use apimachinery::selector::selectable::text;
use apimachinery::table::Printer;
use validation::core;

pub(super) fn definition() -> ResourceDef {
    ResourceDef::new("", "v1", "secrets", "Secret", Secrets).schema::<Secret>()
}

struct Secrets;

impl Strategy for Secrets {
    fn defaults(&self, obj: &mut Value) {
        crate::defaults::default_secret(obj);
    }

    fn validate(&self, _: &ResourceDef, obj: &Value) -> Vec<Cause> {
        core::validate_secret(obj)
    }

    fn validate_update(&self, _: &ResourceDef, new: &Value, old: &Value) -> Vec<Cause> {
        core::validate_secret_update(new, old)
    }

    fn field_labels(&self) -> &'static FieldLabels {
        &FieldLabels::SECRETS
    }

    fn selectable_fields(&self, obj: &Value, out: &mut Vec<(&'static str, String)>) {
        out.push(("type", text(obj, "type")));
    }

    fn printer(&self) -> Option<&dyn Printer> {
        Some(&printers::SECRETS)
    }
}
