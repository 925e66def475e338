//! `apps/v1` Deployment (kube: `pkg/registry/apps/deployment`): generation counts spec and
//! annotation changes.

use k8s_openapi::api::apps::v1::Deployment;
use serde_json::{Value, json};

use crate::printers;
use apimachinery::catalogue::{ResetFields, ResourceDef, StatusMetadata, Strategy, Subresource};
use apimachinery::error::Cause;
use apimachinery::table::Printer;
use validation::apps;

pub(super) fn definition() -> ResourceDef {
    ResourceDef::new("apps", "v1", "deployments", "Deployment", Deployments)
        .short_names(&["deploy"])
        .categories(&["all"])
        .subresources(&[Subresource::Status, Subresource::Scale])
        .schema::<Deployment>()
}

struct Deployments;

impl Strategy for Deployments {
    /// A status writer owns neither the spec nor the labels (kube's reset fields).
    fn reset_fields(&self, subresource: Option<Subresource>) -> Option<ResetFields> {
        (subresource == Some(Subresource::Status)).then_some(&[&["spec"], &["metadata", "labels"]])
    }

    /// A status writer may not change the labels (kube's deployment status strategy).
    fn status_metadata(&self) -> StatusMetadata {
        StatusMetadata::Kept(&["labels"])
    }

    fn defaults(&self, obj: &mut Value) {
        crate::defaults::default_deployment(obj);
    }

    fn prepare_for_create(&self, obj: &mut Value) {
        crate::defaults::reset_status(obj, json!({}));
    }

    fn validate(&self, _: &ResourceDef, obj: &Value) -> Vec<Cause> {
        apps::validate_deployment(obj)
    }

    fn validate_update(&self, _: &ResourceDef, new: &Value, old: &Value) -> Vec<Cause> {
        apps::validate_deployment_update(new, old)
    }

    fn validate_status_update(&self, _: &ResourceDef, new: &Value, old: &Value) -> Vec<Cause> {
        apps::validate_workload_status_update(new, old)
    }

    fn tracks_generation(&self) -> bool {
        true
    }

    fn generation_changes(&self, new: &Value, old: &Value) -> bool {
        crate::defaults::deployment_generation_changes(new, old)
    }

    fn printer(&self) -> Option<&dyn Printer> {
        Some(&printers::DEPLOYMENTS)
    }
}
