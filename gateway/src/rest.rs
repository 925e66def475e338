//! Generic REST for every served resource: parse the verb's options, decode, hand to the
//! storage stage (writes) or the resource's cacher (reads), encode the answer as JSON, YAML or a
//! Table. Resources served in another version than they are stored in are converted here, by
//! their strategy.

use std::sync::Arc;

use actix_web::http::StatusCode;
use actix_web::{HttpResponse, web};
use apimachinery::catalogue::{ResourceDef, Served, Subresource};
use apimachinery::encoded::EncodedObject;
use apimachinery::error::{ApiError, qualified_resource};
use apimachinery::messages::{
    CreateObject, DeleteCollection, DeleteObject, GetObject, ListObjects, ObjectList, PatchObject, Target,
    UpdateObject, WriteResult, Written,
};
use apimachinery::options::{DeleteOptions, GetOptions, ListOptions, ReadAt, WriteOptions, WriteVerb};
use apimachinery::patch::{PatchType, accepted_content_types, apply_patch, unsupported_patch_type_of};
use apimachinery::table;
use serde_json::{Value, json};

use crate::context::RequestContext;
use crate::negotiate::{
    Encoding, Input, Offer, View, decode_body, decode_body_keys, has_protobuf, input_format, negotiate,
    partial_metadata, respond, served, table_options, wrong_metadata_view,
};

fn resource_not_found() -> ApiError {
    ApiError::resource_not_found()
}

/// Serves a resource request.
pub async fn serve(ctx: &RequestContext<'_>, payload: web::Payload) -> Result<HttpResponse, ApiError> {
    let info = ctx.info;
    let def =
        ctx.server.catalogue.find(&info.api_group, &info.api_version, &info.resource).ok_or_else(resource_not_found)?;
    if (def.namespaced && !info.name.is_empty() && info.namespace.is_empty())
        || (!def.namespaced && !info.namespace.is_empty())
    {
        return Err(resource_not_found());
    }
    if let Served::ByGateway(verbs) = def.served {
        return crate::unstored::serve(ctx, &def, verbs, payload).await;
    }
    let subresource = match info.subresource.as_str() {
        "" => None,
        s => {
            let sub = Subresource::parse(s).filter(|sub| def.has(*sub)).ok_or_else(resource_not_found)?;
            if !sub.verbs().contains(&info.verb.as_str()) {
                return Err(ApiError::method_not_allowed());
            }
            Some(sub)
        }
    };
    // A proxy's path goes on after `proxy`: the backend's.
    let longest = if info.namespace.is_empty() || info.resource == "namespaces" { 3 } else { 5 };
    if info.parts.len() > longest && subresource != Some(Subresource::Proxy) {
        return Err(resource_not_found());
    }
    let mut target = Target::object(&def, &info.namespace, &info.name);
    target.subresource = subresource;
    // Served in another version than stored: the stages see the stored resource.
    if let Some((group, version)) = &def.stored_as {
        target.requested = Some((def.group.clone(), def.version.clone()));
        target.group = group.clone();
        target.version = version.clone();
    }
    serve_target(ctx, &def, target, payload).await.map_err(|e| as_requested(e, &def))
}

/// An error the stages worded for the stored resource, worded for the one requested when
/// that is another group's (`events.events.k8s.io "x" not found`, as kube names it). Errors
/// naming a kind (Invalid) keep the stored group: kube's name the internal type's.
fn as_requested(mut e: ApiError, def: &ResourceDef) -> ApiError {
    let Some((stored_group, _)) = def.stored_as.as_ref().filter(|(g, _)| *g != def.group) else { return e };
    if e.group.as_deref().unwrap_or("") != stored_group || e.kind.as_deref() != Some(def.resource.as_str()) {
        return e;
    }
    let (was, is) = (qualified_resource(stored_group, &def.resource), qualified_resource(&def.group, &def.resource));
    e.message = e.message.replacen(&format!("{was} \""), &format!("{is} \""), 1);
    e.group = (!def.group.is_empty()).then(|| def.group.clone());
    e
}

/// A request of `def` once its target is known.
async fn serve_target(
    ctx: &RequestContext<'_>,
    def: &Arc<ResourceDef>,
    target: Target,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let (info, subresource) = (ctx.info, target.subresource);
    if let Some(sub) = subresource.filter(|s| !s.is_view()) {
        return crate::subresources::serve(ctx, def, target, sub, payload).await;
    }
    match info.verb.as_str() {
        "get" => get(ctx, def, target).await,
        "list" => list(ctx, def, target).await,
        "watch" => crate::watch::serve(ctx, def, target).await,
        "create" => {
            if subresource.is_some() || (def.namespaced && info.namespace.is_empty()) {
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

async fn get(ctx: &RequestContext<'_>, def: &Arc<ResourceDef>, target: Target) -> Result<HttpResponse, ApiError> {
    let output = negotiate(ctx.header("Accept"), Offer::reads(def, target.subresource.is_none()))?;
    if output.view == View::MetadataList {
        return Err(wrong_metadata_view(def, View::MetadataList));
    }
    let options = GetOptions::parse(&ctx.query)?;
    let subresource = target.subresource;
    let reads = ctx.server.stages.reads(def)?;
    let encoded = reads.reader.get(GetObject { target, options }).await?;
    let cached = output.view == View::Object && subresource.is_none() && def.stored_as.is_none();
    if cached && output.encoding == Encoding::Json && !ctx.pretty() {
        // The cached bytes, as encoded once when the object entered the cache.
        return Ok(HttpResponse::Ok().content_type("application/json").body(encoded.json().clone()));
    }
    if cached
        && output.encoding == Encoding::Protobuf
        && let Some(raw) = encoded.protobuf()
    {
        let body = protobuf::enveloped(&def.api_version(), &def.kind, &raw);
        return Ok(HttpResponse::Ok().content_type(protobuf::CONTENT_TYPE).body(body));
    }
    let obj = served_one(def, encoded.value()).await?;
    if subresource == Some(Subresource::Scale) {
        return Ok(respond(StatusCode::OK, output, &def.to_scale(&obj), ctx.pretty()));
    }
    match output.view {
        View::Table => {
            let t = table::object_to_table(def.printer(), &obj, &table_options(ctx)?, chrono::Utc::now());
            Ok(respond(StatusCode::OK, output, &t, ctx.pretty()))
        }
        View::Metadata => Ok(respond(StatusCode::OK, output, &partial_metadata(&obj), ctx.pretty())),
        _ => Ok(respond(StatusCode::OK, output, &obj, ctx.pretty())),
    }
}

async fn list(ctx: &RequestContext<'_>, def: &Arc<ResourceDef>, target: Target) -> Result<HttpResponse, ApiError> {
    let output = negotiate(ctx.header("Accept"), Offer::reads(def, true))?;
    if output.view == View::Metadata {
        return Err(wrong_metadata_view(def, View::Metadata));
    }
    let options = ListOptions::parse(&ctx.query, def)?;
    let list = ctx.server.stages.reads(def)?.reader.list(ListObjects { target, options }).await?;
    let cached = output.view == View::Object && def.stored_as.is_none();
    if cached && output.encoding == Encoding::Json && !ctx.pretty() {
        let body = futures_util::stream::iter(ListChunks::new(def, list).map(Ok::<_, actix_web::Error>));
        return Ok(HttpResponse::Ok().content_type("application/json").streaming(body));
    }
    let list = if cached && output.encoding == Encoding::Protobuf {
        match ProtobufListChunks::new(def, list) {
            Ok(chunks) => {
                let body = futures_util::stream::iter(chunks.map(Ok::<_, actix_web::Error>));
                return Ok(HttpResponse::Ok().content_type(protobuf::CONTENT_TYPE).streaming(body));
            }
            // An item without a protobuf form: encoded below from its value.
            Err(list) => list,
        }
    } else {
        list
    };
    let items = def.served_objects(list.items.iter().map(|o| o.value()).collect()).await?;
    match output.view {
        View::Table => {
            let refs: Vec<&Value> = items.iter().collect();
            let meta = table::ListMetaInfo {
                resource_version: list.resource_version.clone(),
                continue_token: list.continue_token.clone().unwrap_or_default(),
                remaining_item_count: list.remaining_item_count.map(|n| n as i64),
            };
            let t = table::to_table(def.printer(), &refs, &table_options(ctx)?, meta, chrono::Utc::now());
            Ok(respond(StatusCode::OK, output, &t, ctx.pretty()))
        }
        View::MetadataList => {
            let partial = json!({
                "apiVersion": "meta.k8s.io/v1",
                "kind": "PartialObjectMetadataList",
                "metadata": list_metadata(&list),
                "items": items.iter().map(partial_metadata).collect::<Vec<_>>(),
            });
            Ok(respond(StatusCode::OK, output, &partial, ctx.pretty()))
        }
        _ => Ok(respond(StatusCode::OK, output, &list_value(def, &list, &items), ctx.pretty())),
    }
}

/// A protobuf list response from the cached messages, in chunks as [`ListChunks`]: the
/// envelope and ListMeta first (the total length is known from the items' sizes), then the
/// items, each copied once into a chunk, then the envelope's tail.
struct ProtobufListChunks {
    head: Option<Vec<u8>>,
    /// Each item's message, taken once (sized for the head, then written).
    items: std::vec::IntoIter<bytes::Bytes>,
    done: bool,
}

impl ProtobufListChunks {
    /// The chunks, or the list back when an item has no protobuf form.
    fn new(def: &ResourceDef, list: ObjectList) -> Result<Self, ObjectList> {
        let Ok(list_meta) = protobuf::encode_list_raw(&list_metadata(&list), []) else { return Err(list) };
        let Some(raws) = list.items.iter().map(EncodedObject::protobuf).collect::<Option<Vec<_>>>() else {
            return Err(list);
        };
        let raw_len = list_meta.len() + raws.iter().map(|raw| 1 + varint_len(raw.len()) + raw.len()).sum::<usize>();
        let mut head = protobuf::unknown_head(&def.api_version(), &format!("{}List", def.kind), raw_len);
        head.extend_from_slice(&list_meta);
        Ok(ProtobufListChunks { head: Some(head), items: raws.into_iter(), done: false })
    }
}

fn varint_len(n: usize) -> usize {
    prost::encoding::encoded_len_varint(n as u64)
}

impl Iterator for ProtobufListChunks {
    type Item = bytes::Bytes;

    fn next(&mut self) -> Option<bytes::Bytes> {
        if self.done {
            return None;
        }
        let mut out = self.head.take().unwrap_or_else(|| Vec::with_capacity(ListChunks::CHUNK + 4096));
        while out.len() < ListChunks::CHUNK {
            let Some(raw) = self.items.next() else {
                out.extend_from_slice(protobuf::UNKNOWN_TAIL);
                self.done = true;
                break;
            };
            out.push(0x12); // field 2 (items), length-delimited
            prost::encoding::encode_varint(raw.len() as u64, &mut out);
            out.extend_from_slice(&raw);
        }
        Some(bytes::Bytes::from(out))
    }
}

/// A JSON list response in chunks of about [`ListChunks::CHUNK`] bytes, copied from the
/// cached encodings as the client reads: the whole document never exists at once.
struct ListChunks {
    head: Option<Vec<u8>>,
    items: std::vec::IntoIter<EncodedObject>,
    /// Items written whole, `apiVersion` and `kind` included (custom resources).
    keep_type: bool,
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
        let keep_type = def.strategy.list_items_keep_type();
        ListChunks { head: Some(head), items: list.items.into_iter(), keep_type, first: true, done: false }
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
                    if self.keep_type {
                        out.extend_from_slice(item.json());
                    } else {
                        item.write_item(&mut out);
                    }
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
        "items": if def.strategy.list_items_keep_type() {
            items.to_vec()
        } else {
            items.iter().map(strip_type_meta).collect::<Vec<_>>()
        },
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

/// Adds a `Warning: 299 - "<text>"` header, as kube's warning recorder writes them.
pub fn add_warning(response: &mut HttpResponse, text: &str) {
    let value = format!("299 - \"{}\"", text.replace('\\', "\\\\").replace('"', "\\\""));
    if let Ok(v) = value.parse() {
        response.headers_mut().append("warning".parse().expect("header name"), v);
    }
}

/// A stored object in `def`'s served form, through its conversion webhook if it has one.
async fn served_one(def: &ResourceDef, stored: Value) -> Result<Value, ApiError> {
    if def.strategy.converter().is_none() {
        return Ok(served(def, stored));
    }
    def.served_objects(vec![stored]).await?.pop().ok_or_else(|| ApiError::internal("conversion returned no object"))
}

async fn write_response(
    ctx: &RequestContext<'_>,
    def: &ResourceDef,
    status: StatusCode,
    result: WriteResult,
) -> Result<HttpResponse, ApiError> {
    let output = negotiate(ctx.header("Accept"), Offer::writes(def))?;
    let object = match result.object {
        Written::Object(o) => served_one(def, o).await?,
        Written::Status(mut v) => {
            // A delete's Status names the group the request was made to, as kube's does.
            if def.stored_as.is_some() && !def.group.is_empty() && v["details"].is_object() {
                v["details"]["group"] = def.group.clone().into();
            }
            v
        }
        Written::Scale(v) => v,
    };
    let mut response = respond(status, output, &object, ctx.pretty());
    if !result.audit_annotations.is_empty() {
        response.extensions_mut().insert(crate::auditing::AuditAnnotations(result.audit_annotations));
    }
    for w in &result.warnings {
        add_warning(&mut response, w);
    }
    Ok(response)
}

async fn create(
    ctx: &RequestContext<'_>,
    def: &ResourceDef,
    target: Target,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let mut options = write_options(ctx, WriteVerb::Create)?;
    let format = input_format(ctx.header("Content-Type"), has_protobuf(def))?;
    let body = ctx.read_body(payload).await?;
    let (object, keys) = decode_body_keys(format, &body)?;
    keys.record(&mut options);
    let object = def.storage_object(object).await?;
    let msg = CreateObject { target, object, user: ctx.user.clone(), options };
    let result = ctx.server.stages.create.ask(msg, ctx.deadline).await?;
    write_response(ctx, def, StatusCode::CREATED, result).await
}

async fn update(
    ctx: &RequestContext<'_>,
    def: &ResourceDef,
    target: Target,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let mut options = write_options(ctx, WriteVerb::Update)?;
    let format = input_format(ctx.header("Content-Type"), has_protobuf(def))?;
    let body = ctx.read_body(payload).await?;
    let (object, keys) = decode_body_keys(format, &body)?;
    keys.record(&mut options);
    let object =
        if target.subresource == Some(Subresource::Scale) { object } else { def.storage_object(object).await? };
    options.cache_revision = cache_revision(ctx, def, &target);
    let msg = UpdateObject { target, object, user: ctx.user.clone(), options };
    let result = ctx.server.stages.update.ask(msg, ctx.deadline).await?;
    let status = if result.created { StatusCode::CREATED } else { StatusCode::OK };
    write_response(ctx, def, status, result).await
}

async fn patch(
    ctx: &RequestContext<'_>,
    def: &ResourceDef,
    target: Target,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let converted = def.strategy.converter().is_some() && def.stored_as.is_some();
    // Applies are not built for kinds served in another version than stored.
    let accepted: Vec<&str> = accepted_content_types(def.strategy.takes_strategic_merge_patch())
        .iter()
        .copied()
        .filter(|t| !converted || *t != PatchType::Apply.content_type())
        .collect();
    let patch_type = PatchType::from_content_type(ctx.header("Content-Type").unwrap_or(""))
        .filter(|t| accepted.contains(&t.content_type()))
        .ok_or_else(|| unsupported_patch_type_of(&accepted))?;
    let apply = patch_type == PatchType::Apply;
    let mut options = write_options(ctx, if apply { WriteVerb::Apply } else { WriteVerb::Patch })?;
    let body = ctx.read_body(payload).await?;
    if converted && target.subresource.is_none() {
        return patch_through_conversion(ctx, def, target, patch_type, &body, options).await;
    }
    let patch = if apply {
        // kube decodes an apply body as YAML (JSON being YAML), into an object.
        let (config, keys) = decode_body_keys(Input::Yaml, &body).map_err(|e| {
            let detail = e.message.split_once("error: ").map_or(e.message.as_str(), |(_, d)| d);
            ApiError::bad_request(format!("error decoding YAML: {detail}"))
        })?;
        keys.record(&mut options);
        serde_json::to_vec(&config).map_err(|e| ApiError::internal(e.to_string()))?
    } else {
        body.to_vec()
    };
    options.cache_revision = cache_revision(ctx, def, &target);
    let msg = PatchObject { target, patch_type, patch, user: ctx.user.clone(), options };
    let result = ctx.server.stages.patch.ask(msg, ctx.deadline).await?;
    // An apply that created the object answers 201, as kube does.
    let status = if result.created { StatusCode::CREATED } else { StatusCode::OK };
    write_response(ctx, def, status, result).await
}

/// The revision this gateway's watch cache holds of the object an update names (see
/// [`WriteOptions::cache_revision`]).
fn cache_revision(ctx: &RequestContext<'_>, def: &ResourceDef, target: &Target) -> Option<u64> {
    ctx.server.stages.reads(def).ok()?.reader.cached_revision(target)
}

/// A write's options, with the manager its User-Agent names for when it names none.
fn write_options(ctx: &RequestContext<'_>, verb: WriteVerb) -> Result<WriteOptions, ApiError> {
    let mut options = WriteOptions::parse(&ctx.query, verb)?;
    options.agent_manager =
        apimachinery::managedfields::manager_from_user_agent(ctx.header("User-Agent").unwrap_or_default());
    Ok(options)
}

/// A patch of a custom resource served in another version than stored, through its conversion
/// webhook: kube applies a patch to the object in the request's version, so the stored object
/// is converted, patched, converted back and written as an update guarded by the revision it
/// was read at, again from a fresh read when another write got there first.
async fn patch_through_conversion(
    ctx: &RequestContext<'_>,
    def: &ResourceDef,
    target: Target,
    patch_type: PatchType,
    body: &[u8],
    options: WriteOptions,
) -> Result<HttpResponse, ApiError> {
    let reads = ctx.server.stages.reads(def)?;
    let gvk = (def.group.as_str(), def.version.as_str(), def.kind.as_str());
    let mut attempts = 0;
    loop {
        attempts += 1;
        let get = GetObject { target: target.clone(), options: GetOptions { read_at: ReadAt::Latest } };
        let current = served_one(def, reads.reader.get(get).await?.value()).await?;
        let mut patched = apply_patch(patch_type, &current, body, gvk)?;
        if !patched.is_object() {
            return Err(ApiError::bad_request("the patched object must be an object"));
        }
        let guarded = patched.pointer("/metadata/resourceVersion") != current.pointer("/metadata/resourceVersion");
        if !guarded {
            patched["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"].clone();
        }
        let object = def.storage_object(patched).await?;
        let msg = UpdateObject { target: target.clone(), object, user: ctx.user.clone(), options: options.clone() };
        match ctx.server.stages.update.ask(msg, ctx.deadline).await {
            Err(e) if e.reason == apimachinery::Reason::Conflict && !guarded && attempts < 5 => continue,
            Err(e) => return Err(e),
            Ok(result) => return write_response(ctx, def, StatusCode::OK, result).await,
        }
    }
}

/// `DeleteOptions` from the body when there is one, else from the query, as kube reads them.
async fn delete_options(ctx: &RequestContext<'_>, payload: web::Payload) -> Result<DeleteOptions, ApiError> {
    let body = ctx.read_body(payload).await?;
    let decoded = if body.iter().all(u8::is_ascii_whitespace) {
        None
    } else {
        Some(decode_body(input_format(ctx.header("Content-Type"), true)?, &body)?)
    };
    DeleteOptions::parse(&ctx.query, decoded.as_ref())
}

async fn delete(
    ctx: &RequestContext<'_>,
    def: &ResourceDef,
    target: Target,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    if target.subresource.is_some() {
        return Err(ApiError::method_not_allowed());
    }
    let options = delete_options(ctx, payload).await?;
    let foreground = options.propagation == Some(apimachinery::options::Propagation::Foreground);
    let msg = DeleteObject { target, user: ctx.user.clone(), options };
    let result = ctx.server.stages.delete.ask(msg, ctx.deadline).await?;
    // kube answers 202 only when the object stays and the client asked for cascading deletion.
    let status = if !result.deleted && foreground { StatusCode::ACCEPTED } else { StatusCode::OK };
    write_response(ctx, def, status, result).await
}

async fn delete_collection(
    ctx: &RequestContext<'_>,
    def: &ResourceDef,
    target: Target,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let list = ListOptions::parse(&ctx.query, def)?;
    let options = delete_options(ctx, payload).await?;
    let msg = DeleteCollection { target, list, user: ctx.user.clone(), options };
    let deleted = ctx.server.stages.delete_collection.ask(msg, ctx.deadline).await?;
    let items = def.served_objects(deleted).await?;
    let list = ObjectList {
        items: Vec::new(),
        resource_version: String::new(),
        continue_token: None,
        remaining_item_count: None,
    };
    let output = negotiate(ctx.header("Accept"), Offer::writes(def))?;
    Ok(respond(StatusCode::OK, output, &list_value(def, &list, &items), ctx.pretty()))
}
