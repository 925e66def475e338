//! The resources nothing is stored for ([`Served::ByGateway`]): their verbs run their kind's
//! action (`bindings`, the reviews, `componentstatuses`). A `create` answers what the action
//! returns; a `get` or `list` answers its objects in every view a stored resource offers
//! (tables with the kind's printer, partial metadata).

use std::sync::Arc;

use actix_web::http::StatusCode;
use actix_web::{HttpResponse, web};
use apimachinery::catalogue::{ResourceDef, Served};
use apimachinery::error::ApiError;
use apimachinery::messages::Target;
use apimachinery::table;
use serde_json::{Value, json};

use crate::context::RequestContext;
use crate::negotiate::{Offer, Output, View, negotiate, partial_metadata, respond, table_options};

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
    let Some(action) = ctx.server.actions.find(def, None) else { return Err(ApiError::resource_not_found()) };
    match info.verb.as_str() {
        "create" => {
            let body = ctx.read_body(payload).await?;
            crate::subresources::act(ctx, def, action, Target::collection(def, &info.namespace), &body).await
        }
        // The representation is settled before the action runs, so a 406 comes at once.
        "get" => {
            let output = negotiate(ctx.header("Accept"), VIEWS)?;
            let one = action.get(ctx, &Target::object(def, &info.namespace, &info.name)).await?;
            show(ctx, def, output, one)
        }
        "list" => {
            let output = negotiate(ctx.header("Accept"), VIEWS)?;
            let mut items = action.list(ctx, &Target::collection(def, &info.namespace)).await?;
            // Authorized as a read of the one object its field selector names: lists only it.
            if !info.selected_name.is_empty() {
                items.retain(|i| i.pointer("/metadata/name").and_then(Value::as_str) == Some(&info.selected_name));
            }
            show_list(ctx, def, output, items)
        }
        _ => Err(ApiError::method_not_allowed()),
    }
}

/// The views a read offers: tables, metadata, protobuf.
const VIEWS: Offer = Offer { tables: true, metadata: true, protobuf: true };

/// One object, in the view the client asked for.
fn show(ctx: &RequestContext<'_>, def: &ResourceDef, output: Output, one: Value) -> Result<HttpResponse, ApiError> {
    Ok(match output.view {
        View::Table => {
            let t = table::object_to_table(def.printer(), &one, &table_options(ctx)?, chrono::Utc::now());
            respond(StatusCode::OK, output, &t, ctx.pretty())
        }
        View::Metadata => respond(StatusCode::OK, output, &partial_metadata(&one), ctx.pretty()),
        _ => respond(StatusCode::OK, output, &one, ctx.pretty()),
    })
}

/// A list, in the view the client asked for; its items without their `kind` and `apiVersion`,
/// as in a stored list.
fn show_list(
    ctx: &RequestContext<'_>,
    def: &ResourceDef,
    output: Output,
    items: Vec<Value>,
) -> Result<HttpResponse, ApiError> {
    Ok(match output.view {
        View::Table => {
            let refs: Vec<&Value> = items.iter().collect();
            let options = table_options(ctx)?;
            let t = table::to_table(def.printer(), &refs, &options, table::ListMetaInfo::default(), chrono::Utc::now());
            respond(StatusCode::OK, output, &t, ctx.pretty())
        }
        View::MetadataList => {
            let items: Vec<Value> = items.iter().map(partial_metadata).collect();
            let list = json!({"apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadataList", "metadata": {}, "items": items});
            respond(StatusCode::OK, output, &list, ctx.pretty())
        }
        _ => {
            let items: Vec<Value> = items
                .into_iter()
                .map(|mut item| {
                    if let Some(m) = item.as_object_mut() {
                        m.remove("kind");
                        m.remove("apiVersion");
                    }
                    item
                })
                .collect();
            let list = json!({"kind": format!("{}List", def.kind), "apiVersion": def.api_version(), "metadata": {}, "items": items});
            respond(StatusCode::OK, output, &list, ctx.pretty())
        }
    })
}
