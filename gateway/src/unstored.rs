//! The resources nothing is stored for ([`Served::ByGateway`]): the gateway answers their verbs
//! itself. `bindings` (the top-level form of `pods/binding`) and `componentstatuses`; the
//! review APIs join them.

use std::sync::Arc;

use actix_web::{HttpResponse, web};
use apimachinery::catalogue::{ResourceDef, Served};
use apimachinery::error::ApiError;
use apimachinery::messages::Target;
use apimachinery::object::ObjectExt;

use crate::context::RequestContext;

/// Serves a request for an unstored resource: only its own verbs, no subresources.
pub async fn serve(
    ctx: &RequestContext<'_>,
    def: &Arc<ResourceDef>,
    verbs: &[&str],
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    debug_assert!(matches!(def.served, Served::ByGateway(_)));
    let info = ctx.info;
    // Only the paths some verb serves exist, as kube registers routes per verb.
    let serves = |any: &[&str]| any.iter().any(|v| verbs.contains(v));
    let path_exists = if !info.name.is_empty() {
        serves(&["get", "update", "patch", "delete"])
    } else if def.namespaced && info.namespace.is_empty() {
        serves(&["list"])
    } else {
        serves(&["list", "create", "deletecollection"])
    };
    if !info.subresource.is_empty() || !path_exists {
        return Err(ApiError::resource_not_found());
    }
    if !verbs.contains(&info.verb.as_str()) {
        return Err(ApiError::method_not_allowed());
    }
    match (def.group.as_str(), def.resource.as_str()) {
        ("", "componentstatuses") => crate::componentstatuses::serve(ctx).await,
        ("authentication.k8s.io" | "authorization.k8s.io", _) => {
            let body = ctx.read_body(payload).await?;
            crate::reviews::serve(ctx, def, &body).await
        }
        ("", "bindings") => {
            let body = ctx.read_body(payload).await?;
            let binding = crate::subresources::decode(ctx, &body)?;
            let pods = ctx.server.catalogue.find("", "v1", "pods").ok_or_else(ApiError::resource_not_found)?;
            let target = Target::object(&pods, &info.namespace, binding.name());
            crate::subresources::bind_pod(ctx, &pods, target, &binding).await
        }
        _ => Err(ApiError::resource_not_found()),
    }
}
