//! `/openapi/v2` and `/openapi/v3`: documents generated from the served kinds' schemas.

use actix_web::HttpResponse;
use apimachinery::error::ApiError;
use apimachinery::schema;

use crate::context::RequestContext;

/// Serves the OpenAPI documents.
pub fn serve(ctx: &RequestContext<'_>, path: &str) -> Result<HttpResponse, ApiError> {
    let not_found =
        || ApiError::new(apimachinery::Reason::NotFound, "the server could not find the requested resource");
    let accept = ctx.header("Accept").unwrap_or("");
    if path == "/openapi/v2" {
        // kubectl's client-go asks for protobuf only and cannot parse JSON here.
        if schema::OPENAPI_V2_PROTOBUF_ACCEPT.iter().any(|p| accept.contains(p)) {
            return Ok(HttpResponse::Ok()
                .content_type(schema::OPENAPI_V2_PROTOBUF)
                .body(schema::openapi_v2_protobuf()));
        }
        return Ok(HttpResponse::Ok().content_type("application/json").body(schema::openapi_v2()));
    }
    let rest = path.trim_start_matches("/openapi/v3").trim_start_matches('/');
    if rest.is_empty() {
        return Ok(HttpResponse::Ok().content_type("application/json").body(schema::openapi_v3_index()));
    }
    let doc = schema::openapi_v3_document(rest).ok_or_else(not_found)?;
    Ok(HttpResponse::Ok()
        .content_type("application/json")
        .insert_header(("Cache-Control", "public, immutable"))
        .body(doc))
}
