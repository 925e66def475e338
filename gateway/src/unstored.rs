//! The resources nothing is stored for ([`Served::ByGateway`]): the gateway answers their verbs
//! itself. A `create` the kind gives an action runs it (`bindings`, the top-level form of
//! `pods/binding`); `componentstatuses` and the review APIs, which read the server's own health
//! and its authenticators and authorizers, are answered here.

use std::sync::Arc;

use actix_web::{HttpResponse, web};
use apimachinery::catalogue::{ResourceDef, Served};
use apimachinery::error::ApiError;
use apimachinery::messages::Target;

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
    if info.verb == "create"
        && let Some(action) = ctx.server.actions.find(def, None)
    {
        let body = ctx.read_body(payload).await?;
        return crate::subresources::act(ctx, def, action, Target::collection(def, &info.namespace), &body).await;
    }
    match (def.group.as_str(), def.resource.as_str()) {
        ("", "componentstatuses") => crate::componentstatuses::serve(ctx).await,
        ("authentication.k8s.io" | "authorization.k8s.io", _) => {
            let body = ctx.read_body(payload).await?;
            crate::reviews::serve(ctx, def, &body).await
        }
        _ => Err(ApiError::resource_not_found()),
    }
}
