//! What kube's `admission.NewForbidden` makes of a plugin's refusal.

use apimachinery::error::ApiError;
use apimachinery::messages::Admit;
use apimachinery::object::ObjectExt;
use serde_json::Value;

/// 403 naming the request's resource and the object as kube does: the request's name, else the
/// object's, else its `generateName` (a mutating plugin may refuse before the name is
/// generated), else `Unknown`.
pub(crate) fn forbidden(request: &Admit, object: &Value, why: &str) -> ApiError {
    let names = [request.target.name.as_str(), object.name(), object.meta_str("generateName")];
    let name = names.into_iter().find(|n| !n.is_empty()).unwrap_or("Unknown");
    ApiError::forbidden(&request.target.group, &request.target.resource, name, why)
}
