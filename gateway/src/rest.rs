//! Generic REST for every served resource: decode, hand to the storage stage (writes) or the
//! resource's cacher (reads), encode the answer as JSON, YAML or a Table.

use actix_web::http::StatusCode;
use actix_web::{HttpResponse, web};
use actors::error::ApiError;
use actors::kinds::{self, ResourceDef, Subresource};
use actors::messages::{
    CreateObject, DeleteCollection, DeleteObject, DeleteOptions, FieldValidation, GetObject, ListObjects, ObjectList,
    PatchObject, ReadConsistency, Selection, Target, UpdateObject, WriteOptions, WriteResult,
};
use actors::table::{self, IncludeObject, TableOptions};
use bytes::BytesMut;
use futures_util::StreamExt;

use serde_json::{Value, json};

use crate::convert;
use crate::http::RequestContext;
use crate::negotiate::{Output, decode_body, input_format, negotiate, respond};

fn resource_not_found() -> ApiError {
    ApiError::new(actors::Reason::NotFound, "the server could not find the requested resource")
}

/// Serves a resource request.
pub async fn serve(ctx: &RequestContext<'_>, payload: web::Payload) -> Result<HttpResponse, ApiError> {
    let info = ctx.info;
    let def = kinds::find(&info.api_group, &info.api_version, &info.resource).ok_or_else(resource_not_found)?;
    if (def.namespaced && !info.name.is_empty() && info.namespace.is_empty())
        || (!def.namespaced && !info.namespace.is_empty())
    {
        return Err(resource_not_found());
    }
    if !info.subresource.is_empty() {
        let sub = def.subresources.iter().find(|s| s.name() == info.subresource).ok_or_else(resource_not_found)?;
        if !sub.verbs().contains(&info.verb.as_str()) {
            return Err(ApiError::method_not_allowed());
        }
    }
    if info.parts.len() > if info.namespace.is_empty() || info.resource == "namespaces" { 3 } else { 5 } {
        return Err(resource_not_found());
    }
    let target = convert::storage_target(def, Target::from_request(info));
    match info.verb.as_str() {
        "get" => get(ctx, def, target).await,
        "list" => list(ctx, def, target).await,
        "watch" => crate::watch::serve(ctx, def, target).await,
        "create" => {
            if !info.subresource.is_empty() || (def.namespaced && info.namespace.is_empty()) {
                return Err(ApiError::method_not_allowed());
            }
            create(ctx, def, target, payload).await
        }
        "update" | "patch" if info.name.is_empty() => Err(ApiError::method_not_allowed()),
        "update" => update(ctx, def, target, payload).await,
        "patch" => patch(ctx, def, target, payload).await,
        "delete" => delete(ctx, def, target, payload).await,
        "deletecollection" => {
            if !def.deletecollection {
                return Err(ApiError::method_not_allowed());
            }
            delete_collection(ctx, def, target, payload).await
        }
        _ => Err(ApiError::method_not_allowed()),
    }
}

/// Reads the body, refusing more than the configured limit with 413 as kube does.
async fn read_body(ctx: &RequestContext<'_>, mut payload: web::Payload) -> Result<bytes::Bytes, ApiError> {
    let limit = ctx.server.options.max_request_body_bytes;
    let too_large =
        || ApiError::new(actors::Reason::RequestEntityTooLarge, format!("Request entity too large: limit is {limit}"));
    if ctx.header("Content-Length").and_then(|l| l.parse::<usize>().ok()).is_some_and(|l| l > limit) {
        return Err(too_large());
    }
    let mut body = BytesMut::new();
    while let Some(chunk) = payload.next().await {
        let chunk = chunk.map_err(|e| ApiError::bad_request(format!("error reading request body: {e}")))?;
        if body.len() + chunk.len() > limit {
            return Err(too_large());
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body.freeze())
}

fn consistency(ctx: &RequestContext<'_>) -> Result<ReadConsistency, ApiError> {
    let rv = ctx.query.get("resourceVersion").filter(|s| !s.is_empty()).map(String::from);
    let rv_match = ctx.query.get("resourceVersionMatch").filter(|s| !s.is_empty()).map(String::from);
    match (&rv, rv_match.as_deref()) {
        (_, Some(m)) if m != "NotOlderThan" && m != "Exact" => {
            return Err(ApiError::bad_request(format!(
                "resourceVersionMatch: Unsupported value: \"{m}\": supported values: \"Exact\", \"NotOlderThan\", \"\""
            )));
        }
        (None, Some(_)) => {
            return Err(ApiError::bad_request(
                "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided",
            ));
        }
        (Some(v), Some("Exact")) if v == "0" => {
            return Err(ApiError::bad_request(
                "resourceVersionMatch: Forbidden: resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
            ));
        }
        _ => {}
    }
    if let Some(v) = &rv
        && v.parse::<u64>().is_err()
    {
        return Err(ApiError::bad_request(format!(
            "resourceVersion: Invalid value: \"{v}\": must be a non-negative integer"
        )));
    }
    Ok(ReadConsistency { resource_version: rv, resource_version_match: rv_match })
}

fn selection(ctx: &RequestContext<'_>) -> Selection {
    Selection {
        label_selector: ctx.query.get("labelSelector").unwrap_or("").to_string(),
        field_selector: ctx.query.get("fieldSelector").unwrap_or("").to_string(),
    }
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

async fn get(ctx: &RequestContext<'_>, def: &'static ResourceDef, target: Target) -> Result<HttpResponse, ApiError> {
    let output = negotiate(ctx.header("Accept"), target.subresource.is_empty())?;
    let consistency = consistency(ctx)?;
    let reads = ctx.server.stages.reads(def);
    let encoded = reads.reader.get(GetObject { target: target.clone(), consistency }).await?;
    if output == Output::Json && target.subresource.is_empty() && !ctx.pretty() && !convert::converts(def) {
        // The cached bytes, as encoded once when the object entered the cache.
        return Ok(HttpResponse::Ok().content_type("application/json").body(encoded.json().clone()));
    }
    let obj = convert::from_storage(def, &encoded.value());
    if target.subresource == Subresource::Scale.name() {
        return Ok(respond(StatusCode::OK, output, &storage::registry::to_scale(def, &obj), ctx.pretty()));
    }
    if output == Output::Table {
        let t = table::object_to_table(def, &obj, &table_options(ctx)?, chrono::Utc::now());
        return Ok(respond(StatusCode::OK, output, &t, ctx.pretty()));
    }
    Ok(respond(StatusCode::OK, output, &obj, ctx.pretty()))
}

fn parse_limit(ctx: &RequestContext<'_>) -> Result<usize, ApiError> {
    match ctx.query.get("limit") {
        None | Some("") => Ok(0),
        Some(l) => l
            .parse::<i64>()
            .map(|n| n.max(0) as usize)
            .map_err(|_| ApiError::bad_request(format!("limit: Invalid value: \"{l}\""))),
    }
}

async fn list(ctx: &RequestContext<'_>, def: &'static ResourceDef, target: Target) -> Result<HttpResponse, ApiError> {
    let output = negotiate(ctx.header("Accept"), true)?;
    let msg = ListObjects {
        target,
        selection: selection(ctx),
        consistency: consistency(ctx)?,
        limit: parse_limit(ctx)?,
        continue_token: ctx.query.get("continue").filter(|c| !c.is_empty()).map(String::from),
    };
    if msg.continue_token.is_some() && msg.consistency.resource_version.is_some() {
        return Err(ApiError::bad_request(
            "resourceVersion: Forbidden: specifying resource version is not allowed when using continue",
        ));
    }
    let list = ctx.server.stages.reads(def).reader.list(msg).await?;
    if output == Output::Json && !ctx.pretty() && !convert::converts(def) {
        let body = futures_util::stream::iter(ListChunks::new(def, list).map(Ok::<_, actix_web::Error>));
        return Ok(HttpResponse::Ok().content_type("application/json").streaming(body));
    }
    let items: Vec<Value> = list.items.iter().map(|o| convert::from_storage(def, &o.value())).collect();
    match output {
        Output::Table => {
            let refs: Vec<&Value> = items.iter().collect();
            let meta = table::ListMetaInfo {
                resource_version: list.resource_version.clone(),
                continue_token: list.continue_token.clone().unwrap_or_default(),
                remaining_item_count: list.remaining_item_count.map(|n| n as i64),
            };
            let t = table::to_table(def, &refs, &table_options(ctx)?, meta, chrono::Utc::now());
            Ok(respond(StatusCode::OK, output, &t, ctx.pretty()))
        }
        Output::Yaml | Output::Json => {
            Ok(respond(StatusCode::OK, output, &list_value(def, &list, &items), ctx.pretty()))
        }
    }
}

/// A JSON list response in chunks of about [`ListChunks::CHUNK`] bytes, copied from the
/// cached encodings as the client reads: the whole document never exists at once.
struct ListChunks {
    head: Option<Vec<u8>>,
    items: std::vec::IntoIter<actors::encoded::EncodedObject>,
    first: bool,
    done: bool,
}

impl ListChunks {
    const CHUNK: usize = 64 * 1024;

    fn new(def: &ResourceDef, list: ObjectList) -> Self {
        let mut head = Vec::with_capacity(256);
        head.extend_from_slice(b"{\"kind\":");
        serde_json::to_writer(&mut head, &format!("{}List", def.kind)).expect("vec write");
        head.extend_from_slice(b",\"apiVersion\":");
        serde_json::to_writer(&mut head, &def.api_version()).expect("vec write");
        head.extend_from_slice(b",\"metadata\":");
        serde_json::to_writer(&mut head, &list_metadata(&list)).expect("vec write");
        head.extend_from_slice(b",\"items\":[");
        ListChunks { head: Some(head), items: list.items.into_iter(), first: true, done: false }
    }
}

impl Iterator for ListChunks {
    type Item = bytes::Bytes;

    fn next(&mut self) -> Option<bytes::Bytes> {
        if self.done {
            return None;
        }
        let mut out = self.head.take().unwrap_or_else(|| Vec::with_capacity(Self::CHUNK + 4096));
        while out.len() < Self::CHUNK {
            match self.items.next() {
                Some(item) => {
                    if !self.first {
                        out.push(b',');
                    }
                    self.first = false;
                    item.write_item(&mut out);
                }
                None => {
                    out.extend_from_slice(b"]}");
                    self.done = true;
                    break;
                }
            }
        }
        Some(bytes::Bytes::from(out))
    }
}

fn list_metadata(list: &ObjectList) -> Value {
    let mut meta = json!({ "resourceVersion": list.resource_version });
    if let Some(c) = &list.continue_token {
        meta["continue"] = c.clone().into();
    }
    if let Some(r) = list.remaining_item_count {
        meta["remainingItemCount"] = r.into();
    }
    meta
}

fn list_value(def: &ResourceDef, list: &ObjectList, items: &[Value]) -> Value {
    json!({
        "kind": format!("{}List", def.kind),
        "apiVersion": def.api_version(),
        "metadata": list_metadata(list),
        "items": items.iter().map(strip_type_meta).collect::<Vec<_>>(),
    })
}

fn strip_type_meta(obj: &Value) -> Value {
    let mut o = obj.clone();
    if let Some(m) = o.as_object_mut() {
        m.remove("kind");
        m.remove("apiVersion");
    }
    o
}

fn write_options(ctx: &RequestContext<'_>, body_dry_run: bool) -> Result<WriteOptions, ApiError> {
    let dry_run = match ctx.query.get("dryRun") {
        None | Some("") => body_dry_run,
        Some("All") => true,
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "dryRun: Unsupported value: \"{other}\": supported values: \"All\""
            )));
        }
    };
    let field_validation = match ctx.query.get("fieldValidation") {
        None | Some("") => FieldValidation::Warn,
        Some("Ignore") => FieldValidation::Ignore,
        Some("Warn") => FieldValidation::Warn,
        Some("Strict") => FieldValidation::Strict,
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "fieldValidation: Unsupported value: \"{other}\": supported values: \"Ignore\", \"Strict\", \"Warn\""
            )));
        }
    };
    Ok(WriteOptions {
        user: ctx.user.clone(),
        dry_run,
        field_validation,
        field_manager: ctx.query.get("fieldManager").map(String::from),
    })
}

fn write_response(
    ctx: &RequestContext<'_>,
    def: &ResourceDef,
    status: StatusCode,
    result: WriteResult,
) -> Result<HttpResponse, ApiError> {
    let output = negotiate(ctx.header("Accept"), false)?;
    let object =
        if result.object.get("kind") == Some(&json!("Status")) || result.object.get("kind") == Some(&json!("Scale")) {
            result.object
        } else {
            convert::from_storage(def, &result.object)
        };
    let mut response = respond(status, output, &object, ctx.pretty());
    for w in &result.warnings {
        let value = format!("299 - \"{}\"", w.replace('\\', "\\\\").replace('"', "\\\""));
        if let Ok(v) = value.parse() {
            response.headers_mut().append("warning".parse().expect("header name"), v);
        }
    }
    Ok(response)
}

async fn create(
    ctx: &RequestContext<'_>,
    def: &'static ResourceDef,
    target: Target,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let format = input_format(ctx.header("Content-Type"))?;
    let body = read_body(ctx, payload).await?;
    let object = convert::to_storage(def, decode_body(format, &body)?)?;
    let options = write_options(ctx, false)?;
    let result = ctx.server.stages.create.ask(CreateObject { target, object, options }).await?;
    write_response(ctx, def, StatusCode::CREATED, result)
}

async fn update(
    ctx: &RequestContext<'_>,
    def: &'static ResourceDef,
    target: Target,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let format = input_format(ctx.header("Content-Type"))?;
    let body = read_body(ctx, payload).await?;
    let object = decode_body(format, &body)?;
    let object = if target.subresource == "scale" { object } else { convert::to_storage(def, object)? };
    let options = write_options(ctx, false)?;
    let result = ctx.server.stages.update.ask(UpdateObject { target, object, options }).await?;
    let status = if result.created { StatusCode::CREATED } else { StatusCode::OK };
    write_response(ctx, def, status, result)
}

async fn patch(
    ctx: &RequestContext<'_>,
    def: &'static ResourceDef,
    target: Target,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let content_type = ctx.header("Content-Type").unwrap_or("").split(';').next().unwrap_or("").trim().to_string();
    let body = read_body(ctx, payload).await?;
    let options = write_options(ctx, false)?;
    let msg = PatchObject { target, content_type, patch: body.to_vec(), options };
    let result = ctx.server.stages.patch.ask(msg).await?;
    write_response(ctx, def, StatusCode::OK, result)
}

/// `DeleteOptions` from the body (if any) and the query, the query winning as in kube.
fn delete_options(ctx: &RequestContext<'_>, body: &[u8]) -> Result<(DeleteOptions, bool), ApiError> {
    let mut opts = DeleteOptions::default();
    let mut dry_run = false;
    if !body.iter().all(u8::is_ascii_whitespace) {
        let v = decode_body(input_format(ctx.header("Content-Type"))?, body)?;
        opts.grace_period_seconds = v.get("gracePeriodSeconds").and_then(Value::as_i64);
        opts.propagation_policy = v.get("propagationPolicy").and_then(Value::as_str).map(String::from);
        opts.precondition_uid = v.pointer("/preconditions/uid").and_then(Value::as_str).map(String::from);
        opts.precondition_resource_version =
            v.pointer("/preconditions/resourceVersion").and_then(Value::as_str).map(String::from);
        if let Some(orphan) = v.get("orphanDependents").and_then(Value::as_bool) {
            opts.propagation_policy.get_or_insert_with(|| if orphan { "Orphan" } else { "Background" }.into());
        }
        dry_run = v.get("dryRun").and_then(Value::as_array).is_some_and(|a| a.iter().any(|d| d == "All"));
    }
    if let Some(g) = ctx.query.get("gracePeriodSeconds") {
        opts.grace_period_seconds =
            Some(g.parse().map_err(|_| ApiError::bad_request(format!("gracePeriodSeconds: Invalid value: \"{g}\"")))?);
    }
    if let Some(p) = ctx.query.get("propagationPolicy") {
        opts.propagation_policy = Some(p.to_string());
    }
    if let Some(o) = ctx.query.get("orphanDependents") {
        opts.propagation_policy = Some(if o == "true" { "Orphan" } else { "Background" }.into());
    }
    if let Some(p) = &opts.propagation_policy
        && !matches!(p.as_str(), "Orphan" | "Background" | "Foreground")
    {
        return Err(ApiError::bad_request(format!(
            "propagationPolicy: Unsupported value: \"{p}\": supported values: \"Foreground\", \"Background\", \"Orphan\", \"nil\""
        )));
    }
    Ok((opts, dry_run))
}

async fn delete(
    ctx: &RequestContext<'_>,
    def: &'static ResourceDef,
    target: Target,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    if !target.subresource.is_empty() {
        return Err(ApiError::method_not_allowed());
    }
    let body = read_body(ctx, payload).await?;
    let (delete, body_dry_run) = delete_options(ctx, &body)?;
    let cascading_foreground = delete.propagation_policy.as_deref() == Some("Foreground");
    let options = write_options(ctx, body_dry_run)?;
    let result = ctx.server.stages.delete.ask(DeleteObject { target, delete, options }).await?;
    // kube answers 202 only when the object stays and the client asked for cascading deletion.
    let status = if !result.deleted && cascading_foreground { StatusCode::ACCEPTED } else { StatusCode::OK };
    write_response(ctx, def, status, result)
}

async fn delete_collection(
    ctx: &RequestContext<'_>,
    def: &'static ResourceDef,
    target: Target,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let body = read_body(ctx, payload).await?;
    let (delete, body_dry_run) = delete_options(ctx, &body)?;
    let options = write_options(ctx, body_dry_run)?;
    let msg = DeleteCollection { target, selection: selection(ctx), delete, options };
    let deleted = ctx.server.stages.delete_collection.ask(msg).await?;
    let items: Vec<Value> = deleted.iter().map(|o| convert::from_storage(def, o)).collect();
    let list = ObjectList {
        items: Vec::new(),
        resource_version: String::new(),
        continue_token: None,
        remaining_item_count: None,
    };
    let output = negotiate(ctx.header("Accept"), false)?;
    Ok(respond(StatusCode::OK, output, &list_value(def, &list, &items), ctx.pretty()))
}
