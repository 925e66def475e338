//! `admissionregistration.k8s.io/v1` defaults (`pkg/apis/admissionregistration/v1/defaults.go`
//! and its generated `SetObjectDefaults_*`).
//!
//! v1 gives webhooks no `sideEffects` and no `admissionReviewVersions` (both are required),
//! and a 10 second timeout; the v1beta1 defaults (Unknown, `[v1beta1]`, 30 s, Ignore, Exact) do
//! not apply.

use serde_json::{Map, Value, json};

use super::{child_obj, set_if_unset};

/// `SetDefaults_Rule`: every scope.
fn default_rule(rule: &mut Value) {
    if let Some(r) = rule.as_object_mut() {
        set_if_unset(r, "scope", json!("*"));
    }
}

/// `SetDefaults_ValidatingWebhook` / `SetDefaults_MutatingWebhook`, with the rules' and the
/// service reference's defaults.
fn default_webhook(hook: &mut Map<String, Value>, mutating: bool) {
    set_if_unset(hook, "failurePolicy", json!("Fail"));
    set_if_unset(hook, "matchPolicy", json!("Equivalent"));
    set_if_unset(hook, "namespaceSelector", json!({}));
    set_if_unset(hook, "objectSelector", json!({}));
    set_if_unset(hook, "timeoutSeconds", json!(10));
    if mutating {
        set_if_unset(hook, "reinvocationPolicy", json!("Never"));
    }
    for rule in hook.get_mut("rules").and_then(Value::as_array_mut).into_iter().flatten() {
        default_rule(rule);
    }
    // `clientConfig` is a struct, so its service pointer is defaulted wherever it is set.
    let cc = child_obj(hook, "clientConfig");
    if let Some(svc) = cc.get_mut("service").and_then(Value::as_object_mut) {
        set_if_unset(svc, "port", json!(443));
    }
}

/// MutatingWebhookConfiguration (`mutating`) or ValidatingWebhookConfiguration defaults.
pub fn default_webhook_configuration(obj: &mut Value, mutating: bool) {
    for hook in obj.get_mut("webhooks").and_then(Value::as_array_mut).into_iter().flatten() {
        if let Some(h) = hook.as_object_mut() {
            default_webhook(h, mutating);
        }
    }
}

/// `SetDefaults_MatchResources`, with the rules' scopes.
fn default_match_resources(mr: &mut Map<String, Value>) {
    set_if_unset(mr, "matchPolicy", json!("Equivalent"));
    set_if_unset(mr, "namespaceSelector", json!({}));
    set_if_unset(mr, "objectSelector", json!({}));
    for key in ["resourceRules", "excludeResourceRules"] {
        for rule in mr.get_mut(key).and_then(Value::as_array_mut).into_iter().flatten() {
            default_rule(rule);
        }
    }
}

/// ValidatingAdmissionPolicy defaults: `failurePolicy: Fail` (the spec is a struct, so even a
/// policy without one gets it) and the match constraints'.
pub fn default_validating_admission_policy(obj: &mut Value) {
    let Some(o) = obj.as_object_mut() else { return };
    let spec = child_obj(o, "spec");
    set_if_unset(spec, "failurePolicy", json!("Fail"));
    if let Some(mc) = spec.get_mut("matchConstraints").and_then(Value::as_object_mut) {
        default_match_resources(mc);
    }
}

/// ValidatingAdmissionPolicyBinding defaults: the match resources'.
pub fn default_validating_admission_policy_binding(obj: &mut Value) {
    if let Some(mr) = obj.pointer_mut("/spec/matchResources").and_then(Value::as_object_mut) {
        default_match_resources(mr);
    }
}
