//! `v1` Pod (kube: `pkg/registry/core/pod`): a pod bound to a node is deleted gracefully, the
//! kubelet confirming with grace 0.

use k8s_openapi::api::core::v1::Pod;
use serde_json::Value;

use crate::printers;
use apimachinery::catalogue::{ResetFields, ResourceDef, StatusMetadata, Strategy, Subresource};
use apimachinery::error::Cause;
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
