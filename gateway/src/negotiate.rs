//! Content negotiation: which representation a client accepts, how request bodies decode, how
//! responses encode, and the version an object is served in.

use actix_web::HttpResponse;
use actix_web::http::StatusCode;
use apimachinery::error::ApiError;
use apimachinery::kinds::ResourceDef;
use apimachinery::table::{self, IncludeObject, TableOptions};
use serde_json::Value;

use crate::context::RequestContext;

/// A response representation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Output {
    /// `application/json`.
    Json,
    /// `application/yaml`.
    Yaml,
    /// `application/json;as=Table;g=meta.k8s.io;v=v1`.
    Table,
}

/// Media types we encode, for 406 messages.
const SUPPORTED: &str = "application/json, application/yaml";

/// One media range of an Accept header.
struct MediaRange<'a> {
    essence: &'a str,
    params: Vec<(&'a str, &'a str)>,
}

fn parse_ranges(accept: &str) -> Vec<MediaRange<'_>> {
    accept
        .split(',')
        .filter_map(|part| {
            let mut it = part.split(';').map(str::trim);
            let essence = it.next().filter(|e| !e.is_empty())?;
            let params: Vec<(&str, &str)> =
                it.filter_map(|p| p.split_once('=')).map(|(k, v)| (k.trim(), v.trim())).collect();
            // q=0 means "not acceptable".
            if params.iter().any(|(k, v)| *k == "q" && v.parse::<f32>().is_ok_and(|q| q == 0.0)) {
                return None;
            }
            Some(MediaRange { essence, params })
        })
        .collect()
}

/// Picks the first representation we can produce from `accept`. `tables` says whether the
/// request may be answered with a Table (reads of resources).
pub fn negotiate(accept: Option<&str>, tables: bool) -> Result<Output, ApiError> {
    let Some(accept) = accept.filter(|a| !a.trim().is_empty()) else { return Ok(Output::Json) };
    for range in parse_ranges(accept) {
        let param = |k: &str| range.params.iter().find(|(pk, _)| *pk == k).map(|(_, v)| *v);
        match (range.essence, param("as")) {
            ("application/json", Some("Table"))
                if tables && param("g") == Some("meta.k8s.io") && matches!(param("v"), Some("v1" | "v1beta1")) =>
            {
                return Ok(Output::Table);
            }
            ("application/json" | "*/*" | "application/*", None) => return Ok(Output::Json),
            ("application/yaml", None) => return Ok(Output::Yaml),
            _ => {}
        }
    }
    Err(ApiError::new(
        apimachinery::Reason::NotAcceptable,
        format!("only the following media types are accepted: {SUPPORTED}"),
    ))
}

/// How a request body is encoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Input {
    /// JSON.
    Json,
    /// YAML.
    Yaml,
}

/// The body encoding named by a Content-Type (JSON when absent, as kube assumes).
pub fn input_format(content_type: Option<&str>) -> Result<Input, ApiError> {
    let essence = content_type.map(|c| c.split(';').next().unwrap_or("").trim()).unwrap_or("");
    match essence {
        "" | "application/json" => Ok(Input::Json),
        "application/yaml" | "application/x-yaml" | "text/yaml" => Ok(Input::Yaml),
        _ => Err(ApiError::new(
            apimachinery::Reason::UnsupportedMediaType,
            format!("the body of the request was in an unknown format - accepted media types include: {SUPPORTED}"),
        )),
    }
}

/// Decodes a request body into an object.
pub fn decode_body(format: Input, body: &[u8]) -> Result<Value, ApiError> {
    let value: Value = match format {
        Input::Json => serde_json::from_slice(body)
            .map_err(|e| ApiError::bad_request(format!("couldn't get version/kind; json parse error: {e}")))?,
        Input::Yaml => serde_yaml_ng::from_slice(body)
            .map_err(|e| ApiError::bad_request(format!("couldn't get version/kind; yaml parse error: {e}")))?,
    };
    if !value.is_object() {
        return Err(ApiError::bad_request(
            "couldn't get version/kind; json parse error: json: cannot unmarshal into Go value of type struct { APIVersion string \"json:\\\"apiVersion,omitempty\\\"\"; Kind string \"json:\\\"kind,omitempty\\\"\" }",
        ));
    }
    Ok(value)
}

/// Encodes `value` as `output` (Table is JSON on the wire).
pub fn respond(status: StatusCode, output: Output, value: &Value, pretty: bool) -> HttpResponse {
    let (content_type, body) = match output {
        Output::Yaml => {
            ("application/yaml", serde_yaml_ng::to_string(value).map(String::into_bytes).unwrap_or_default())
        }
        Output::Json | Output::Table => {
            let body = if pretty { serde_json::to_vec_pretty(value) } else { serde_json::to_vec(value) };
            ("application/json", body.unwrap_or_default())
        }
    };
    HttpResponse::build(status).content_type(content_type).body(body)
}

/// The Status response for an error.
pub fn error_response(e: &ApiError) -> HttpResponse {
    let status = StatusCode::from_u16(e.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut builder = HttpResponse::build(status);
    builder.content_type("application/json");
    if let Some(after) = e.retry_after_seconds {
        builder.insert_header(("Retry-After", after.to_string()));
    }
    builder.body(serde_json::to_vec(&e.to_status()).unwrap_or_default())
}

/// A stored object in `def`'s served form.
pub fn served(def: &ResourceDef, stored: Value) -> Value {
    def.strategy.to_served(&stored).unwrap_or(stored)
}

/// `?includeObject=` and the negotiated Table version.
pub fn table_options(ctx: &RequestContext<'_>) -> Result<TableOptions, ApiError> {
    let include_object = IncludeObject::parse(ctx.query.get("includeObject"))?;
    let version =
        if ctx.header("Accept").is_some_and(|a| a.split(',').next().is_some_and(|first| first.contains("v=v1beta1"))) {
            table::MetaVersion::V1Beta1
        } else {
            table::MetaVersion::V1
        };
    Ok(TableOptions { include_object, no_headers: false, version })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kubectl_get_asks_for_table() {
        let a = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";
        assert_eq!(negotiate(Some(a), true).unwrap(), Output::Table);
        assert_eq!(negotiate(Some(a), false).unwrap(), Output::Json);
    }

    #[test]
    fn protobuf_only_is_not_acceptable() {
        let e = negotiate(Some("application/vnd.kubernetes.protobuf"), true).unwrap_err();
        assert_eq!(e.code, 406);
        assert_eq!(negotiate(Some("application/vnd.kubernetes.protobuf, */*"), true).unwrap(), Output::Json);
    }

    #[test]
    fn unsupported_body_is_415() {
        assert_eq!(input_format(Some("application/vnd.kubernetes.protobuf")).unwrap_err().code, 415);
        assert_eq!(input_format(None).unwrap(), Input::Json);
        assert_eq!(input_format(Some("application/yaml; charset=utf-8")).unwrap(), Input::Yaml);
    }

    #[test]
    fn malformed_json_is_400() {
        let e = decode_body(Input::Json, b"{\"kind\": ").unwrap_err();
        assert_eq!(e.code, 400);
        assert!(e.message.starts_with("couldn't get version/kind; json parse error"));
    }
}
