//! `flowcontrol.apiserver.k8s.io/v1` PriorityLevelConfiguration (kube:
//! `pkg/registry/flowcontrol/prioritylevelconfiguration`): cluster-scoped, with a status
//! written through `/status`, generation counting spec changes. As in kube 1.30, a limited
//! level may have zero nominal concurrency shares.

use k8s_openapi::api::flowcontrol::v1::PriorityLevelConfiguration;
use serde_json::{Value, json};

use crate::printers;
use apimachinery::catalogue::{ResetFields, ResourceDef, StatusMetadata, Strategy, Subresource, meta_update};
use apimachinery::error::Cause;
use apimachinery::table::Printer;
use validation::flowcontrol;

pub(super) fn definition() -> ResourceDef {
    ResourceDef::new(
        "flowcontrol.apiserver.k8s.io",
        "v1",
        "prioritylevelconfigurations",
        "PriorityLevelConfiguration",
        PriorityLevelConfigurations,
    )
    .cluster_scoped()
    .subresources(&[Subresource::Status])
    .schema::<PriorityLevelConfiguration>()
}

struct PriorityLevelConfigurations;

impl Strategy for PriorityLevelConfigurations {
    /// A status writer owns no metadata (kube's reset fields).
    fn reset_fields(&self, subresource: Option<Subresource>) -> Option<ResetFields> {
        (subresource == Some(Subresource::Status)).then_some(&[&["metadata"], &["spec"]])
    }

    /// kube's status strategy keeps all of the stored metadata but the managed fields.
    fn status_metadata(&self) -> StatusMetadata {
        StatusMetadata::KeptAll
    }

    fn defaults(&self, obj: &mut Value) {
        crate::defaults::flowcontrol::default_priority_level_configuration(obj);
    }

    fn prepare_for_create(&self, obj: &mut Value) {
        crate::defaults::reset_status(obj, json!({}));
    }

    fn validate_kind(&self, obj: &Value) -> Vec<Cause> {
        flowcontrol::priority_level_configuration(obj)
    }

    /// `ValidatePriorityLevelConfigurationUpdate` is the create validation of the new object.
    fn validate_update(&self, def: &ResourceDef, new: &Value, old: &Value) -> Vec<Cause> {
        let mut out = meta_update(new, old);
        out.extend(self.validate(def, new));
        out
    }

    fn validate_status_update(&self, _: &ResourceDef, new: &Value, old: &Value) -> Vec<Cause> {
        let mut out = meta_update(new, old);
        out.extend(flowcontrol::priority_level_configuration_status(new));
        out
    }

    fn tracks_generation(&self) -> bool {
        true
    }

    fn printer(&self) -> Option<&dyn Printer> {
        Some(&printers::PRIORITY_LEVEL_CONFIGURATIONS)
    }
}
