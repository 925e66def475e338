//! What kube-apiserver v1.30 validates for the served built-in kinds, as the causes of a 422.
//!
//! [`validate`] is a strategy's `Validate` (create), [`validate_update`] its `ValidateUpdate`,
//! [`validate_status_update`] the status strategy's. Each returns kube's `field.ErrorList` as
//! [`Cause`]s: same field paths (`spec.template.spec.containers[0].image`), same cause types
//! (`FieldValueRequired`, ...), same messages (`Required value`,
//! `Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain must ...`), in kube's order.
//! [`crate::ApiError::invalid`] turns them into the Status.
//!
//! Inputs are the versioned JSON after [`crate::defaults::apply_defaults`] and
//! [`crate::defaults::prepare_for_create`] / [`crate::defaults::prepare_for_update`], as kube
//! validates after defaulting and `PrepareFor*`. Where kube iterates a Go map, keys are taken in
//! sorted order so the result is deterministic; exact duplicate causes (kube revalidates
//! metadata on some updates) are reported once, as kube's aggregate message does.
//!
//! # Layout
//! - [`field`]: paths, cause constructors, Go-style value rendering.
//! - [`names`]: the string formats (DNS labels, qualified names, config keys, ports).
//! - [`meta`]: metadata and label selectors.
//! - `pod`, `apps`, `batch`, `core`, `rbac`: the kinds.

pub mod field;
pub mod meta;
pub mod names;

mod apps;
mod batch;
mod core;
mod pod;
mod rbac;

pub use batch::parse_standard as parse_cron_schedule;

use serde_json::Value;

use crate::error::Cause;
use crate::kinds::ResourceDef;

/// `validation.IsNegativeErrorMsg`.
pub(crate) const NEGATIVE: &str = "must be greater than or equal to 0";
/// `validation.FieldImmutableErrorMsg`.
pub(crate) const IMMUTABLE: &str = "field is immutable";

/// A string member, `""` when absent or not a string (Go's zero value).
pub(crate) fn s<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

/// An array member, empty when absent or not an array (a nil Go slice).
pub(crate) fn arr<'a>(v: &'a Value, key: &str) -> &'a [Value] {
    v.get(key).and_then(Value::as_array).map(Vec::as_slice).unwrap_or(&[])
}

fn dedup(causes: Vec<Cause>) -> Vec<Cause> {
    let mut out: Vec<Cause> = Vec::with_capacity(causes.len());
    for c in causes {
        if !out.contains(&c) {
            out.push(c);
        }
    }
    out
}

fn name_rule(def: &ResourceDef) -> meta::NameFn {
    match def.name_rule {
        crate::kinds::NameRule::Subdomain => names::name_is_dns_subdomain,
        crate::kinds::NameRule::Label => names::name_is_dns_label,
        crate::kinds::NameRule::Rfc1035Label => names::name_is_dns1035_label,
        crate::kinds::NameRule::PathSegment => names::path_segment_name,
    }
}

/// Validates an object about to be created (the strategy's `Validate`).
pub fn validate(def: &ResourceDef, obj: &Value) -> Vec<Cause> {
    let causes = match (def.group, def.kind) {
        ("", "Pod") => pod::validate_pod(obj),
        ("", "ConfigMap") => core::validate_config_map(obj),
        ("", "Secret") => core::validate_secret(obj),
        ("", "ServiceAccount") => core::validate_service_account(obj),
        ("", "Namespace") => core::validate_namespace(obj),
        ("", "Service") => core::validate_service(obj),
        ("", "Endpoints") => core::validate_endpoints(obj),
        ("", "Node") => core::validate_node(obj),
        ("", "Event") => core::validate_event(obj, false),
        ("events.k8s.io", "Event") => core::validate_event(obj, true),
        ("apps", "Deployment") => apps::validate_deployment(obj),
        ("apps", "ReplicaSet") => apps::validate_replicaset(obj),
        ("apps", "StatefulSet") => apps::validate_statefulset(obj),
        ("apps", "DaemonSet") => apps::validate_daemonset(obj),
        ("batch", "Job") => batch::validate_job(obj),
        ("batch", "CronJob") => batch::validate_cronjob(obj),
        ("coordination.k8s.io", "Lease") => core::validate_lease(obj),
        ("rbac.authorization.k8s.io", "Role") => rbac::validate_role(obj, true),
        ("rbac.authorization.k8s.io", "ClusterRole") => rbac::validate_role(obj, false),
        ("rbac.authorization.k8s.io", "RoleBinding") => rbac::validate_binding(obj, true),
        ("rbac.authorization.k8s.io", "ClusterRoleBinding") => rbac::validate_binding(obj, false),
        _ => meta::validate_object_meta(
            obj.get("metadata").and_then(Value::as_object),
            def.namespaced,
            name_rule(def),
            &field::Path::new("metadata"),
            true,
        ),
    };
    dedup(causes)
}

/// Validates an update of the main resource (the strategy's `ValidateUpdate`): metadata
/// identity, immutable fields, and the new object revalidated.
pub fn validate_update(def: &ResourceDef, new: &Value, old: &Value) -> Vec<Cause> {
    let md = |v: &Value| v.get("metadata").and_then(Value::as_object).cloned();
    let meta_update =
        || meta::validate_object_meta_update(md(new).as_ref(), md(old).as_ref(), &field::Path::new("metadata"), true);
    let causes = match (def.group, def.kind) {
        ("", "Pod") => pod::validate_pod_update(new, old),
        ("", "ConfigMap") => core::validate_config_map_update(new, old),
        ("", "Secret") => core::validate_secret_update(new, old),
        ("", "Namespace") => core::validate_namespace_update(new, old),
        ("", "Service") => core::validate_service_update(new, old),
        ("", "Node") => core::validate_node_update(new, old),
        ("", "Event") => core::validate_event_update(new, old, false),
        ("events.k8s.io", "Event") => core::validate_event_update(new, old, true),
        ("apps", "Deployment") => apps::validate_deployment_update(new, old),
        ("apps", "ReplicaSet") => apps::validate_replicaset_update(new, old),
        ("apps", "StatefulSet") => apps::validate_statefulset_update(new, old),
        ("apps", "DaemonSet") => apps::validate_daemonset_update(new, old),
        ("batch", "Job") => batch::validate_job_update(new, old),
        ("batch", "CronJob") => batch::validate_cronjob_update(new, old),
        ("coordination.k8s.io", "Lease") => core::validate_lease_update(new, old),
        ("rbac.authorization.k8s.io", "Role") => rbac::validate_role_update(new, old, true),
        ("rbac.authorization.k8s.io", "ClusterRole") => rbac::validate_role_update(new, old, false),
        ("rbac.authorization.k8s.io", "RoleBinding") => rbac::validate_binding_update(new, old, true),
        ("rbac.authorization.k8s.io", "ClusterRoleBinding") => rbac::validate_binding_update(new, old, false),
        ("", "ServiceAccount" | "Endpoints") => {
            let mut out = meta_update();
            out.extend(validate(def, new));
            out
        }
        _ => meta_update(),
    };
    dedup(causes)
}

/// Validates an update through the `/status` subresource: metadata identity and, for the
/// workload kinds, non-negative status counters.
pub fn validate_status_update(def: &ResourceDef, new: &Value, old: &Value) -> Vec<Cause> {
    let md = |v: &Value| v.get("metadata").and_then(Value::as_object).cloned();
    let mut out =
        meta::validate_object_meta_update(md(new).as_ref(), md(old).as_ref(), &field::Path::new("metadata"), true);
    if matches!((def.group, def.kind), ("apps", _) | ("batch", "Job")) {
        out.extend(apps::validate_workload_status(new));
    }
    dedup(out)
}

#[cfg(test)]
mod tests;
