//! `v1` Binding: what a scheduler posts to put a pod on a node, kube's `BindingREST`. Two
//! forms reach the same action: `pods/binding` (the URL names the pod) and the top-level
//! `POST /api/v1/namespaces/<ns>/bindings` (kube's `LegacyBindingREST`, the pod named by the
//! Binding's own name). Nothing is stored for a Binding: the pod is updated through its
//! `binding` subresource, whose strategy hooks (`pod.rs`) take the node once.

use async_trait::async_trait;
use k8s_openapi::api::core::v1::Binding;
use serde_json::Value;

use apimachinery::action::{Action, ActionContext, created};
use apimachinery::catalogue::{DefaultStrategy, ResourceDef, Subresource};
use apimachinery::error::ApiError;
use apimachinery::messages::Target;
use apimachinery::object::ObjectExt;
use apimachinery::options::WriteOptions;

pub(super) fn definition() -> ResourceDef {
    ResourceDef::new("", "v1", "bindings", "Binding", DefaultStrategy).by_gateway(&["create"]).schema::<Binding>()
}

/// `POST .../bindings`: the pod is the one the Binding is named after.
pub(super) struct BindByName;

#[async_trait(?Send)]
impl Action for BindByName {
    async fn create(&self, ctx: &dyn ActionContext, target: Target, binding: Value) -> Result<Value, ApiError> {
        let pods = ctx.catalogue().find("", "v1", "pods").ok_or_else(ApiError::resource_not_found)?;
        bind_pod(ctx, Target::object(&pods, &target.namespace, binding.name()), &binding).await
    }
}

/// `POST pods/<name>/binding`: the pod is the one the URL names, which the Binding must name too.
pub(super) struct Bind;

#[async_trait(?Send)]
impl Action for Bind {
    async fn create(&self, ctx: &dyn ActionContext, target: Target, binding: Value) -> Result<Value, ApiError> {
        if binding.name() != target.name {
            return Err(ApiError::bad_request("name in URL does not match name in Binding object"));
        }
        bind_pod(ctx, target, &binding).await
    }
}

/// Binds the pod `target` names as `binding` says (kube's `BindingREST.Create`): the Binding is
/// validated, then the pod is written through `pods/binding` with the Binding's node and
/// annotations; the registry keeps the rest of the pod and refuses a pod already bound.
async fn bind_pod(ctx: &dyn ActionContext, mut target: Target, binding: &Value) -> Result<Value, ApiError> {
    target.subresource = Some(Subresource::Binding);
    let ns = binding.namespace();
    if !ns.is_empty() && ns != target.namespace {
        return Err(ApiError::bad_request(
            "the namespace of the provided object does not match the namespace sent on the request",
        ));
    }
    let errors = validation::pod::validate_pod_binding(binding);
    if !errors.is_empty() {
        return Err(ApiError::from_field_errors(&errors));
    }
    if target.name.is_empty() {
        return Err(ApiError::bad_request("Name parameter required."));
    }
    let mut pod = ctx.get(&target.main()).await?;
    pod["spec"]["nodeName"] = binding.pointer("/target/name").cloned().unwrap_or(Value::Null);
    if let Some(md) = pod.get_mut("metadata").and_then(Value::as_object_mut) {
        md.remove("resourceVersion");
        if let Some(annotations) = binding.pointer("/metadata/annotations").filter(|a| a.is_object()) {
            md.insert("annotations".into(), annotations.clone());
        }
    }
    ctx.update(target, pod, WriteOptions::default()).await?;
    Ok(created())
}
