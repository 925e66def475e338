//! `admissionregistration.k8s.io/v1` ValidatingAdmissionPolicyBinding (kube:
//! `pkg/registry/admissionregistration/validatingadmissionpolicybinding`): cluster-scoped,
//! generation counting spec changes.
//!
//! kube also refuses a binding whose `paramRef` its author may not read (the registry looks up
//! the policy and asks the authorizer); that check is not made here.

use k8s_openapi::api::admissionregistration::v1::ValidatingAdmissionPolicyBinding;
use serde_json::Value;

use crate::printers;
use apimachinery::catalogue::{ResourceDef, Strategy};
use apimachinery::error::Cause;
use apimachinery::table::Printer;
use validation::admissionregistration as validation;

pub(super) fn definition() -> ResourceDef {
    ResourceDef::new(
        "admissionregistration.k8s.io",
        "v1",
        "validatingadmissionpolicybindings",
        "ValidatingAdmissionPolicyBinding",
        ValidatingAdmissionPolicyBindings,
    )
    .cluster_scoped()
    .categories(&["api-extensions"])
    .schema::<ValidatingAdmissionPolicyBinding>()
}

struct ValidatingAdmissionPolicyBindings;

impl Strategy for ValidatingAdmissionPolicyBindings {
    fn defaults(&self, obj: &mut Value) {
        crate::defaults::admissionregistration::default_validating_admission_policy_binding(obj);
    }

    fn validate(&self, _: &ResourceDef, obj: &Value) -> Vec<Cause> {
        validation::validating_admission_policy_binding(obj)
    }

    /// kube validates an update as a create of the new object.
    fn validate_update(&self, _: &ResourceDef, new: &Value, old: &Value) -> Vec<Cause> {
        let mut out = validation::meta_update(new, old);
        out.extend(validation::validating_admission_policy_binding(new));
        out
    }

    fn tracks_generation(&self) -> bool {
        true
    }

    fn printer(&self) -> Option<&dyn Printer> {
        Some(&printers::VALIDATING_ADMISSION_POLICY_BINDINGS)
    }
}
