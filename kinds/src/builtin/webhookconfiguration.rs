//! `admissionregistration.k8s.io/v1` MutatingWebhookConfiguration and
//! ValidatingWebhookConfiguration (kube: `pkg/registry/admissionregistration/
//! mutatingwebhookconfiguration`, `validatingwebhookconfiguration`): cluster-scoped, generation
//! counting changes to `webhooks`, printed with their number of webhooks.

use k8s_openapi::api::admissionregistration::v1::{MutatingWebhookConfiguration, ValidatingWebhookConfiguration};
use serde_json::Value;

use crate::printers;
use apimachinery::catalogue::{ResourceDef, Strategy};
use apimachinery::error::Cause;
use apimachinery::table::Printer;
use validation::admissionregistration as validation;

pub(super) fn mutating() -> ResourceDef {
    ResourceDef::new(
        "admissionregistration.k8s.io",
        "v1",
        "mutatingwebhookconfigurations",
        "MutatingWebhookConfiguration",
        WebhookConfigurations { mutating: true },
    )
    .cluster_scoped()
    .categories(&["api-extensions"])
    .schema::<MutatingWebhookConfiguration>()
}

pub(super) fn validating() -> ResourceDef {
    ResourceDef::new(
        "admissionregistration.k8s.io",
        "v1",
        "validatingwebhookconfigurations",
        "ValidatingWebhookConfiguration",
        WebhookConfigurations { mutating: false },
    )
    .cluster_scoped()
    .categories(&["api-extensions"])
    .schema::<ValidatingWebhookConfiguration>()
}

struct WebhookConfigurations {
    /// Mutating webhooks also have a reinvocation policy.
    mutating: bool,
}

impl Strategy for WebhookConfigurations {
    fn defaults(&self, obj: &mut Value) {
        crate::defaults::admissionregistration::default_webhook_configuration(obj, self.mutating);
    }

    fn validate(&self, _: &ResourceDef, obj: &Value) -> Vec<Cause> {
        validation::webhook_configuration(obj, self.mutating)
    }

    fn validate_update(&self, _: &ResourceDef, new: &Value, old: &Value) -> Vec<Cause> {
        let mut out = validation::meta_update(new, old);
        out.extend(validation::webhook_configuration_update(new, old, self.mutating));
        out
    }

    fn tracks_generation(&self) -> bool {
        true
    }

    /// kube's `PrepareForUpdate` bumps the generation when the webhooks change.
    fn generation_changes(&self, new: &Value, old: &Value) -> bool {
        new.get("webhooks") != old.get("webhooks")
    }

    fn printer(&self) -> Option<&dyn Printer> {
        Some(&printers::WEBHOOK_CONFIGURATIONS)
    }
}
