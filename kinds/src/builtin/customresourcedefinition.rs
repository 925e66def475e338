//! `apiextensions.k8s.io/v1` CustomResourceDefinition (kube: `apiextensions-apiserver/pkg/
//! registry/customresourcedefinition`): cluster-scoped, with a status the CRD controllers
//! write through `/status`, and kube's default table (name, creation time).
//!
//! kube's REST also turns the first DELETE into an update adding the
//! `customresourcecleanup.apiextensions.k8s.io` finalizer and a `Terminating` condition, for
//! the controller that deletes the custom resources; without that controller here, a DELETE
//! deletes at once.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use serde_json::Value;

use crate::defaults::apiextensions as defaults;
use apimachinery::catalogue::{ResetFields, ResourceDef, Strategy, Subresource};
use apimachinery::error::Cause;
use validation::apiextensions as validation;

pub(super) fn definition() -> ResourceDef {
    ResourceDef::new(
        "apiextensions.k8s.io",
        "v1",
        "customresourcedefinitions",
        "CustomResourceDefinition",
        CustomResourceDefinitions,
    )
    .cluster_scoped()
    // kube writes CRDs under their group, as v1beta1 JSON.
    .storage_path("apiextensions.k8s.io/customresourcedefinitions")
    .stored_as_json()
    .short_names(&["crd", "crds"])
    .categories(&["api-extensions"])
    .subresources(&[Subresource::Status])
    .schema::<CustomResourceDefinition>()
}

struct CustomResourceDefinitions;

/// The finalizer the CRD controller removes once the CRD's objects are deleted.
const CLEANUP_FINALIZER: &str = "customresourcecleanup.apiextensions.k8s.io";

impl Strategy for CustomResourceDefinitions {
    fn etcd_version(&self) -> Option<&'static str> {
        Some(super::crd_v1beta1::V1BETA1)
    }

    fn to_etcd_version(&self, obj: &Value) -> Option<Value> {
        Some(super::crd_v1beta1::to_v1beta1(obj))
    }

    fn read_etcd_version(&self, obj: Value) -> Value {
        super::crd_v1beta1::to_v1(obj)
    }

    /// kube's CRD status strategy means to reset metadata but resets the new object to itself,
    /// so status writes change it; its reset fields still name all of `metadata`, so no
    /// status writer owns what it changed there.
    fn reset_fields(&self, subresource: Option<Subresource>) -> Option<ResetFields> {
        (subresource == Some(Subresource::Status)).then_some(&[&["metadata"], &["spec"]])
    }

    /// kube's CRD delete: the first DELETE only marks the CRD, so its objects are deleted
    /// before it goes.
    fn awaits_finalization(&self, obj: &Value) -> bool {
        obj.pointer("/metadata/deletionTimestamp").is_none()
    }

    /// The cleanup finalizer and the `Terminating` condition, as kube's first DELETE sets them.
    fn mark_terminating(&self, obj: &mut Value) {
        let meta = &mut obj["metadata"];
        if !meta["finalizers"].is_array() {
            meta["finalizers"] = serde_json::json!([]);
        }
        let finalizers = meta["finalizers"].as_array_mut().expect("an array");
        if !finalizers.iter().any(|f| f == CLEANUP_FINALIZER) {
            finalizers.push(CLEANUP_FINALIZER.into());
        }
        if !obj["status"].is_object() {
            obj["status"] = serde_json::json!({});
        }
        if !obj["status"]["conditions"].is_array() {
            obj["status"]["conditions"] = serde_json::json!([]);
        }
        let conditions = obj["status"]["conditions"].as_array_mut().expect("an array");
        conditions.retain(|c| c["type"] != "Terminating");
        conditions.push(serde_json::json!({"type": "Terminating", "status": "True",
            "lastTransitionTime": apimachinery::object::now_rfc3339(), "reason": "InstanceDeletionPending",
            "message": "CustomResourceDefinition marked for deletion; CustomResource deletion will begin soon"}));
    }

    fn defaults(&self, obj: &mut Value) {
        defaults::default_custom_resource_definition(obj);
    }

    fn prepare_for_create(&self, obj: &mut Value) {
        defaults::prepare_custom_resource_definition_for_create(obj);
    }

    fn prepare_for_update(&self, new: &mut Value, _old: &Value) {
        defaults::prepare_custom_resource_definition_for_update(new);
    }

    fn validate(&self, _: &ResourceDef, obj: &Value) -> Vec<Cause> {
        validation::custom_resource_definition(obj)
    }

    fn validate_update(&self, _: &ResourceDef, new: &Value, old: &Value) -> Vec<Cause> {
        validation::custom_resource_definition_update(new, old)
    }

    fn validate_status_update(&self, _: &ResourceDef, new: &Value, old: &Value) -> Vec<Cause> {
        validation::custom_resource_definition_status_update(new, old)
    }

    fn tracks_generation(&self) -> bool {
        true
    }
}
