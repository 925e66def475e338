//! `v1` Pod (kube: `pkg/registry/core/pod`): a pod bound to a node is deleted gracefully, the
//! kubelet confirming with grace 0.

use k8s_openapi::api::core::v1::Pod;
use serde_json::{Value, json};

use crate::printers;
use apimachinery::catalogue::{ResetFields, ResourceDef, StatusMetadata, Strategy, Subresource};
use apimachinery::error::{ApiError, Cause};
use apimachinery::object::ObjectExt;
use apimachinery::selector::FieldLabels;
use apimachinery::selector::selectable::{flag, text};
use apimachinery::table::Printer;
use validation::pod;

pub(super) fn definition() -> ResourceDef {
    ResourceDef::new("", "v1", "pods", "Pod", Pods)
        .short_names(&["po"])
        .categories(&["all"])
        .subresources(&[
            Subresource::Attach,
            Subresource::Binding,
            Subresource::EphemeralContainers,
            Subresource::Eviction,
            Subresource::Exec,
            Subresource::Log,
            Subresource::PortForward,
            Subresource::Proxy,
            Subresource::Status,
        ])
        .schema::<Pod>()
}

struct Pods;

impl Strategy for Pods {
    /// A status writer owns neither the spec nor the deletion time and owners (kube's reset fields).
    fn reset_fields(&self, subresource: Option<Subresource>) -> Option<ResetFields> {
        (subresource == Some(Subresource::Status)).then_some(&[
            &["spec"],
            &["metadata", "deletionTimestamp"],
            &["metadata", "ownerReferences"],
        ])
    }

    /// A status writer may not change the owners: old kubelets corrupted them, which broke
    /// garbage collection (kube's pod status strategy).
    fn status_metadata(&self) -> StatusMetadata {
        StatusMetadata::Kept(&["deletionTimestamp", "ownerReferences"])
    }

    fn defaults(&self, obj: &mut Value) {
        crate::defaults::default_pod(obj);
    }

    fn prepare_for_create(&self, obj: &mut Value) {
        crate::defaults::prepare_pod_for_create(obj);
    }

    fn validate(&self, _: &ResourceDef, obj: &Value) -> Vec<Cause> {
        pod::validate_pod(obj)
    }

    fn validate_update(&self, _: &ResourceDef, new: &Value, old: &Value) -> Vec<Cause> {
        pod::validate_pod_update(new, old)
    }

    fn delete_returns_object(&self) -> bool {
        true
    }

    fn check_subresource_update(&self, subresource: Subresource, name: &str, old: &Value) -> Result<(), ApiError> {
        match subresource {
            Subresource::Binding => binding_allowed(name, old),
            _ => Ok(()),
        }
    }

    fn prepare_for_subresource_update(&self, subresource: Subresource, new: &mut Value, old: &Value) {
        match subresource {
            Subresource::Binding => bind(new, old),
            Subresource::EphemeralContainers => {
                // kube's ephemeral containers strategy: only that list changes.
                let containers = new.pointer("/spec/ephemeralContainers").cloned();
                let rv = new.resource_version().to_string();
                *new = old.clone();
                if let Some(spec) = new.get_mut("spec").and_then(Value::as_object_mut) {
                    match containers {
                        Some(c) => spec.insert("ephemeralContainers".into(), c),
                        None => spec.remove("ephemeralContainers"),
                    };
                }
                new.set_meta_str("resourceVersion", &rv);
            }
            _ => *new = old.clone(),
        }
    }

    /// The requested grace (else the pod's `terminationGracePeriodSeconds`, else 30) for a pod
    /// bound to a node and still running; 0 otherwise, since no kubelet would confirm.
    fn deletion_grace_seconds(&self, obj: &Value, requested: Option<i64>) -> i64 {
        let bound = obj.pointer("/spec/nodeName").and_then(Value::as_str).is_some_and(|n| !n.is_empty());
        let terminal = matches!(obj.pointer("/status/phase").and_then(Value::as_str), Some("Failed" | "Succeeded"));
        let default = obj.pointer("/spec/terminationGracePeriodSeconds").and_then(Value::as_i64).unwrap_or(30);
        if bound && !terminal { requested.unwrap_or(default).max(0) } else { 0 }
    }

    fn field_labels(&self) -> &'static FieldLabels {
        &FieldLabels::PODS
    }

    /// Every kubelet lists and watches its node's pods, and the Node authorizer lists them for
    /// each kubelet request it checks.
    fn indexed_field(&self) -> Option<&'static str> {
        Some("spec.nodeName")
    }

    fn selectable_fields(&self, obj: &Value, out: &mut Vec<(&'static str, String)>) {
        let pod_ip = obj
            .pointer("/status/podIPs/0/ip")
            .and_then(Value::as_str)
            .map(String::from)
            .unwrap_or_else(|| text(obj, "status.podIP"));
        out.extend([
            ("spec.nodeName", text(obj, "spec.nodeName")),
            ("spec.restartPolicy", text(obj, "spec.restartPolicy")),
            ("spec.schedulerName", text(obj, "spec.schedulerName")),
            ("spec.serviceAccountName", text(obj, "spec.serviceAccountName")),
            ("spec.hostNetwork", flag(obj, "spec.hostNetwork")),
            ("status.phase", text(obj, "status.phase")),
            ("status.podIP", pod_ip),
            ("status.nominatedNodeName", text(obj, "status.nominatedNodeName")),
        ]);
    }

    fn printer(&self) -> Option<&dyn Printer> {
        Some(&printers::PODS)
    }
}

/// What kube's `BindingREST` refuses, as a 409 on `pods/binding`: a pod being deleted, one
/// with scheduling gates, one already on a node.
fn binding_allowed(name: &str, pod: &Value) -> Result<(), ApiError> {
    let refuse = |why: String| Err(ApiError::conflict("", "pods/binding", name, &why));
    if pod.pointer("/metadata/deletionTimestamp").is_some_and(|t| !t.is_null()) {
        return refuse(format!("pod {name} is being deleted, cannot be assigned to a host"));
    }
    if pod.pointer("/spec/schedulingGates").and_then(Value::as_array).is_some_and(|g| !g.is_empty()) {
        return refuse(format!("pod {name} has non-empty .spec.schedulingGates"));
    }
    let node = pod.pointer("/spec/nodeName").and_then(Value::as_str).unwrap_or("");
    if !node.is_empty() {
        return refuse(format!("pod {name} is already assigned to node {node:?}"));
    }
    Ok(())
}

/// The stored pod `old` as a binding leaves it: `new` is the pod as the binding would have it,
/// and only its node and the binding's annotations are taken; then `PodScheduled` is set.
fn bind(new: &mut Value, old: &Value) {
    let node = new.pointer("/spec/nodeName").cloned().unwrap_or(Value::Null);
    let annotations = new.pointer("/metadata/annotations").and_then(Value::as_object).cloned();
    *new = old.clone();
    new["spec"]["nodeName"] = node;
    for (k, v) in annotations.into_iter().flatten() {
        new.meta_mut().entry("annotations").or_insert_with(|| json!({})).as_object_mut().map(|a| a.insert(k, v));
    }
    set_scheduled(new);
}

/// `UpdatePodCondition(PodScheduled=True)` as binding does: the condition replaced by a bare
/// one, its transition time kept when it was True already.
fn set_scheduled(pod: &mut Value) {
    let now = apimachinery::object::now_rfc3339();
    let Some(status) = pod.as_object_mut().map(|o| o.entry("status").or_insert_with(|| json!({}))) else { return };
    let Some(status) = status.as_object_mut() else { return };
    let conditions = status.entry("conditions").or_insert_with(|| json!([]));
    let Some(conditions) = conditions.as_array_mut() else { return };
    let scheduled = |c: &Value| c.get("type").and_then(Value::as_str) == Some("PodScheduled");
    let mut condition =
        json!({"type": "PodScheduled", "status": "True", "lastProbeTime": null, "lastTransitionTime": now});
    match conditions.iter_mut().find(|c| scheduled(c)) {
        Some(old) => {
            if old.get("status").and_then(Value::as_str) == Some("True") {
                condition["lastTransitionTime"] = old.get("lastTransitionTime").cloned().unwrap_or(Value::Null);
            }
            *old = condition;
        }
        None => conditions.push(condition),
    }
}
