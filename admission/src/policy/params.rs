//! The params a binding evaluates its policy with (kube's `CollectParams`): none without a
//! `paramKind` or a `paramRef` (the policy runs once with `params` null), the object
//! `paramRef.name` names, or every object `paramRef.selector` selects (the policy runs once
//! per object). An error is a configuration error of the binding.

use apimachinery::lookup::ObjectLookup;
use apimachinery::object::ObjectExt;
use serde_json::Value;

use super::source::{ParamKind, ParamRef};

/// The params to evaluate with: `Value::Null` for "no params".
pub async fn collect(
    objects: &dyn ObjectLookup,
    kind: Option<&ParamKind>,
    param_ref: Option<&ParamRef>,
    request_namespace: &str,
) -> Result<Vec<Value>, String> {
    let (Some(kind), Some(param_ref)) = (kind, param_ref) else { return Ok(vec![Value::Null]) };
    // A policy whose paramKind is not served is refused before its bindings are looked at.
    let Some(served) = &kind.served else { return Err(format!("paramKind kind `{}` not known", kind.gvk())) };
    let namespace = if served.namespaced {
        if !param_ref.namespace.is_empty() {
            param_ref.namespace.as_str()
        } else if !request_namespace.is_empty() {
            request_namespace
        } else {
            return Err("cannot use namespaced paramRef in policy binding that matches cluster-scoped resources".into());
        }
    } else {
        if !param_ref.namespace.is_empty() {
            return Err("paramRef.namespace must not be provided for a cluster-scoped `paramKind`".into());
        }
        ""
    };
    let mut params = if !param_ref.name.is_empty() {
        let found =
            objects.get(&kind.group, &served.resource, namespace, &param_ref.name).await.map_err(|e| e.message)?;
        found.into_iter().collect::<Vec<_>>()
    } else if let Some(selector) = &param_ref.selector {
        let mut all = objects.list(&kind.group, &served.resource, namespace, "").await.map_err(|e| e.message)?;
        all.retain(|p| selector.matches(p.labels()));
        all.sort_by(|a, b| (a.namespace(), a.name()).cmp(&(b.namespace(), b.name())));
        all
    } else {
        return Err("one of name or selector must be provided".into());
    };
    if params.is_empty() && param_ref.deny_when_missing {
        return Err("no params found for policy binding with `Deny` parameterNotFoundAction".into());
    }
    // Params carry their apiVersion and kind, as kube sets them for CEL.
    for p in &mut params {
        if let Some(o) = p.as_object_mut() {
            o.entry("apiVersion").or_insert_with(|| kind.api_version.clone().into());
            o.entry("kind").or_insert_with(|| kind.kind.clone().into());
        }
    }
    Ok(params)
}
