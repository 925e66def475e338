//! `admissionregistration.k8s.io/v1` ValidatingAdmissionPolicy (kube:
//! `pkg/registry/admissionregistration/validatingadmissionpolicy`): cluster-scoped, with a
//! status the type-checking controller writes through `/status`.
//!
//! kube also refuses a policy whose `paramKind` its author may not read (the registry asks the
//! authorizer); that check needs the requesting user's authorization and is not made here.

use k8s_openapi::api::admissionregistration::v1::ValidatingAdmissionPolicy;
use serde_json::{Value, json};

use crate::printers;
use apimachinery::catalogue::{RESET_FOR_STATUS, ResetFields, ResourceDef, StatusMetadata, Strategy, Subresource};
use apimachinery::error::Cause;
use apimachinery::table::Printer;
use validation::admissionregistration as validation;

pub(super) fn definition() -> ResourceDef {
    ResourceDef::new(
        "admissionregistration.k8s.io",
        "v1",
        "validatingadmissionpolicies",
        "ValidatingAdmissionPolicy",
        ValidatingAdmissionPolicies,
    )
    .cluster_scoped()
    .categories(&["api-extensions"])
    .subresources(&[Subresource::Status])
    .schema::<ValidatingAdmissionPolicy>()
}

struct ValidatingAdmissionPolicies;

impl Strategy for ValidatingAdmissionPolicies {
    /// A status writer owns no metadata (kube's reset fields).
    fn reset_fields(&self, subresource: Option<Subresource>) -> Option<ResetFields> {
        (subresource == Some(Subresource::Status)).then_some(&[&["metadata"], &["spec"]])
    }

    /// kube's status strategy resets metadata for status (`ResetObjectMetaForStatus`).
    fn status_metadata(&self) -> StatusMetadata {
        StatusMetadata::Kept(RESET_FOR_STATUS)
    }

    fn defaults(&self, obj: &mut Value) {
        crate::defaults::admissionregistration::default_validating_admission_policy(obj);
    }

    fn prepare_for_create(&self, obj: &mut Value) {
        crate::defaults::reset_status(obj, json!({}));
    }

    fn validate(&self, _: &ResourceDef, obj: &Value) -> Vec<Cause> {
        validation::validating_admission_policy(obj)
    }

    fn validate_update(&self, _: &ResourceDef, new: &Value, old: &Value) -> Vec<Cause> {
        let mut out = validation::meta_update(new, old);
        out.extend(validation::validating_admission_policy_update(new, old));
        out
    }

    fn validate_status_update(&self, _: &ResourceDef, new: &Value, old: &Value) -> Vec<Cause> {
        let mut out = validation::meta_update(new, old);
        out.extend(validation::validating_admission_policy_status(new));
        out
    }

    fn tracks_generation(&self) -> bool {
        true
    }

    fn printer(&self) -> Option<&dyn Printer> {
        Some(&printers::VALIDATING_ADMISSION_POLICIES)
    }
}
