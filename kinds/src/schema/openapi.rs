//! The `/openapi/v2` and `/openapi/v3` documents, generated from the definitions and
//! the built-in kinds.
//!
//! What clients read from them (kubectl 1.30, client-go):
//! - `kubectl create/apply/replace --validate=strict` (the default) fetches `/openapi/v3`,
//!   then the group-version document, and looks for every PATCH operation whose
//!   `x-kubernetes-group-version-kind` (an object on operations) is the object's kind: the
//!   first one found must list a `fieldValidation` query parameter, or kubectl falls back to
//!   client-side validation against `/openapi/v2` fetched as protobuf. So every PATCH
//!   operation (main resource and subresources) carries `fieldValidation`.
//! - client-side `kubectl apply` picks the PATCH operation of the kind, requires
//!   `application/strategic-merge-patch+json` in its request body content, then walks
//!   `components.schemas` from the schema whose `x-kubernetes-group-version-kind` (an array on
//!   schemas) holds the kind, reading `x-kubernetes-patch-*` on property schemas and resolving
//!   `allOf[0]` / `$ref` (`#/components/schemas/` only).
//! - `kubectl explain` finds the kind from the GET/POST/... operation of
//!   `/apis/<g>/<v>/<resource>` (or the namespaced path), then the schema as above; it prints
//!   property-level `description`s and guesses types from `type`, `items`,
//!   `additionalProperties`, single `allOf` and `$ref` names.
//! - a `kind: List` file (`kubectl get -o yaml` output) is never checked against v3: kubectl
//!   validates its items client-side against `/openapi/v2`, which it only reads as protobuf
//!   ([`openapi_v2_protobuf`]); v2 is otherwise only a fallback.
//!
//! Documents are built once, at first request, and kept as bytes.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::LazyLock;

use serde_json::{Map, Value, json};

use super::build::{self, store};
use crate::builtin;
use apimachinery::catalogue::{ResourceDef, Subresource};
use apimachinery::schema::{DEFINITIONS, kind_definition_name};

/// The version string in the documents' `info`.
const INFO_VERSION: &str = "v1.30.0";
/// Where v3 documents keep their schemas.
const COMPONENTS: &str = "#/components/schemas/";
/// The PATCH request body media types kube accepts for built-in kinds.
const PATCH_TYPES: [&str; 4] = [
    "application/apply-patch+yaml",
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
];
/// The PATCH request body media types kube accepts for custom resources.
const CUSTOM_PATCH_TYPES: [&str; 3] =
    ["application/apply-patch+yaml", "application/json-patch+json", "application/merge-patch+json"];
/// What every operation produces (JSON and YAML; no protobuf here).
const PRODUCES: [&str; 2] = ["application/json", "application/yaml"];
/// What a list operation produces besides: watch streams.
const PRODUCES_WATCH: [&str; 1] = ["application/json;stream=watch"];

/// The OpenAPI parameter kinds we use.
#[derive(Clone, Copy)]
enum Ty {
    Str,
    Bool,
    Int,
}

impl Ty {
    fn name(self) -> &'static str {
        match self {
            Ty::Str => "string",
            Ty::Bool => "boolean",
            Ty::Int => "integer",
        }
    }
}

/// A non-body parameter.
#[derive(Clone, Copy)]
struct Param {
    name: &'static str,
    location: &'static str,
    ty: Ty,
    description: &'static str,
}

const fn query(name: &'static str, ty: Ty, description: &'static str) -> Param {
    Param { name, location: "query", ty, description }
}

const PRETTY: Param = query("pretty", Ty::Str, "If 'true', then the output is pretty printed.");
const DRY_RUN: Param =
    query("dryRun", Ty::Str, "When present, indicates that modifications should not be persisted. Valid value: All.");
const FIELD_MANAGER: Param =
    query("fieldManager", Ty::Str, "The name of the actor or entity making these changes (managedFields).");
const FIELD_VALIDATION: Param = query(
    "fieldValidation",
    Ty::Str,
    "How the server treats unknown and duplicate fields in the request body: Ignore, Warn (the default) or Strict.",
);
const FORCE: Param =
    query("force", Ty::Bool, "Force an apply request to take conflicting fields (apply patches only).");
const ALLOW_WATCH_BOOKMARKS: Param =
    query("allowWatchBookmarks", Ty::Bool, "Ask for BOOKMARK events on a watch; the server may ignore it.");
const CONTINUE: Param = query("continue", Ty::Str, "The continue token of the previous page of a chunked list.");
const FIELD_SELECTOR: Param = query("fieldSelector", Ty::Str, "Restrict the returned objects by their fields.");
const LABEL_SELECTOR: Param = query("labelSelector", Ty::Str, "Restrict the returned objects by their labels.");
const LIMIT: Param = query("limit", Ty::Int, "The maximum number of objects to return in one page of a list.");
const RESOURCE_VERSION: Param = query(
    "resourceVersion",
    Ty::Str,
    "What revision the list or watch must be served from (see resourceVersionMatch).",
);
const RESOURCE_VERSION_MATCH: Param =
    query("resourceVersionMatch", Ty::Str, "How resourceVersion applies to a list: NotOlderThan or Exact.");
const SEND_INITIAL_EVENTS: Param =
    query("sendInitialEvents", Ty::Bool, "Start a watch with synthetic ADDED events for the current state.");
const TIMEOUT_SECONDS: Param = query("timeoutSeconds", Ty::Int, "How long a list or watch call may last.");
const WATCH: Param = query("watch", Ty::Bool, "Watch for changes instead of listing.");
const GRACE_PERIOD_SECONDS: Param =
    query("gracePeriodSeconds", Ty::Int, "Seconds before the object is deleted; 0 deletes at once.");
const ORPHAN_DEPENDENTS: Param =
    query("orphanDependents", Ty::Bool, "Deprecated: use propagationPolicy. Whether dependents are orphaned.");
const PROPAGATION_POLICY: Param = query(
    "propagationPolicy",
    Ty::Str,
    "Whether and how garbage collection deletes dependents: Orphan, Background or Foreground.",
);

const LIST_PARAMS: &[Param] = &[
    ALLOW_WATCH_BOOKMARKS,
    CONTINUE,
    FIELD_SELECTOR,
    LABEL_SELECTOR,
    LIMIT,
    RESOURCE_VERSION,
    RESOURCE_VERSION_MATCH,
    SEND_INITIAL_EVENTS,
    TIMEOUT_SECONDS,
    WATCH,
];
const WRITE_PARAMS: &[Param] = &[DRY_RUN, FIELD_MANAGER, FIELD_VALIDATION];
const PATCH_PARAMS: &[Param] = &[DRY_RUN, FIELD_MANAGER, FIELD_VALIDATION, FORCE];
const DELETE_PARAMS: &[Param] = &[DRY_RUN, GRACE_PERIOD_SECONDS, ORPHAN_DEPENDENTS, PROPAGATION_POLICY];
const DELETE_COLLECTION_PARAMS: &[Param] = &[
    CONTINUE,
    DRY_RUN,
    FIELD_SELECTOR,
    GRACE_PERIOD_SECONDS,
    LABEL_SELECTOR,
    LIMIT,
    ORPHAN_DEPENDENTS,
    PROPAGATION_POLICY,
    RESOURCE_VERSION,
    RESOURCE_VERSION_MATCH,
    SEND_INITIAL_EVENTS,
    TIMEOUT_SECONDS,
];

/// What a request body holds.
#[derive(Clone)]
enum Body {
    None,
    /// The named definition, any media type.
    Object(String),
    /// A `Patch`, in one of these media types.
    Patch(&'static [&'static str]),
}

/// One operation, rendered as Swagger 2.0 or OpenAPI 3.0.
struct Op {
    method: &'static str,
    operation_id: String,
    description: String,
    action: &'static str,
    gvk: Option<(String, String, String)>,
    params: &'static [Param],
    body: Body,
    /// (status code, definition of the response body).
    responses: Vec<(&'static str, String)>,
    watchable: bool,
}

/// One path with its shared parameters and operations.
struct PathItem {
    path: String,
    params: Vec<Param>,
    ops: Vec<Op>,
    tag: String,
}

/// `apps` → `Apps`, `rbac.authorization.k8s.io` → `RbacAuthorization`, `""` → `Core`: the
/// group token of kube's operation ids.
fn group_token(group: &str) -> String {
    if group.is_empty() {
        return "Core".into();
    }
    let trimmed = group.strip_suffix(".k8s.io").unwrap_or(group);
    trimmed.split('.').map(capitalize).collect()
}

/// `apps` → `apps`, `rbac.authorization.k8s.io` → `rbacAuthorization`, `""` → `core`: kube's
/// operation tags start with it.
fn group_tag(group: &str) -> String {
    let t = group_token(group);
    let mut c = t.chars();
    match c.next() {
        Some(f) => f.to_lowercase().chain(c).collect(),
        None => t,
    }
}

fn capitalize(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

/// `/api/v1` or `/apis/apps/v1`.
fn gv_prefix(group: &str, version: &str) -> String {
    if group.is_empty() { format!("/api/{version}") } else { format!("/apis/{group}/{version}") }
}

/// `api/v1` or `apis/apps/v1`: the key of a v3 document.
fn gv_key(group: &str, version: &str) -> String {
    gv_prefix(group, version).trim_start_matches('/').to_string()
}

fn path_param(name: &'static str, description: &'static str) -> Param {
    Param { name, location: "path", ty: Ty::Str, description }
}

/// The schemas one resource's operations name, and how kube documents the resource.
struct Documented<'a> {
    def: &'a ResourceDef,
    /// The definition of its kind and of its list.
    kind_def: String,
    list_def: String,
    /// Served from a CustomResourceDefinition: kube's CRD builder words and shapes a few
    /// operations differently (no watch in the list description, a body-less deletecollection
    /// with list options, no strategic merge patch).
    custom: bool,
}

impl Documented<'static> {
    /// A built-in resource, with the definitions of the built-in store.
    fn builtin(d: &'static ResourceDef) -> Self {
        let kind_def = kind_definition_name(&d.group, &d.version, &d.kind).expect("served kind has a schema");
        let list_kind = format!("{}List", d.kind);
        // Unstored resources (`bindings`) have no list kind, and no list operation to name one.
        let list_def = kind_definition_name(&d.group, &d.version, &list_kind).unwrap_or(kind_def);
        Documented { def: d, kind_def: kind_def.to_string(), list_def: list_def.to_string(), custom: false }
    }
}

/// The paths of one resource: collection, item, all-namespaces list, subresources.
fn resource_paths(doc: &Documented<'_>) -> Vec<PathItem> {
    let d = doc.def;
    let (kind_def, list_def) = (doc.kind_def.as_str(), doc.list_def.as_str());
    let object = || Body::Object(kind_def.to_string());
    let patch = Body::Patch(if doc.custom { &CUSTOM_PATCH_TYPES } else { &PATCH_TYPES });
    let gvk = Some((d.group.clone(), d.version.clone(), d.kind.clone()));
    let prefix = gv_prefix(&d.group, &d.version);
    let ns_seg = if d.namespaced { "/namespaces/{namespace}" } else { "" };
    let gv_token = format!("{}{}", group_token(&d.group), capitalize(&d.version));
    let scope = if d.namespaced { "Namespaced" } else { "" };
    let tag = format!("{}_{}", group_tag(&d.group), d.version);
    let id = |verb: &str, suffix: &str| format!("{verb}{gv_token}{scope}{}{suffix}", d.kind);
    let list_description = if doc.custom { "list objects of kind" } else { "list or watch objects of kind" };
    let mut base_params = Vec::new();
    if d.namespaced {
        base_params.push(path_param("namespace", "object name and auth scope, such as for teams and projects"));
    }
    base_params.push(PRETTY);
    let mut item_params = vec![path_param("name", "name of the object")];
    item_params.extend(base_params.iter().copied());
    let mut out = Vec::new();

    let mut collection = vec![
        Op {
            method: "get",
            operation_id: id("list", ""),
            description: format!("{list_description} {}", d.kind),
            action: "list",
            gvk: gvk.clone(),
            params: LIST_PARAMS,
            body: Body::None,
            responses: vec![("200", list_def.to_string())],
            watchable: true,
        },
        Op {
            method: "post",
            operation_id: id("create", ""),
            description: format!("create a {}", d.kind),
            action: "post",
            gvk: gvk.clone(),
            params: WRITE_PARAMS,
            body: object(),
            responses: vec![("200", kind_def.into()), ("201", kind_def.into()), ("202", kind_def.into())],
            watchable: false,
        },
    ];
    if d.deletecollection {
        let (params, body) = if doc.custom {
            (LIST_PARAMS, Body::None)
        } else {
            (DELETE_COLLECTION_PARAMS, Body::Object(build::DELETE_OPTIONS.into()))
        };
        collection.push(Op {
            method: "delete",
            operation_id: format!("delete{gv_token}Collection{scope}{}", d.kind),
            description: format!("delete collection of {}", d.kind),
            action: "deletecollection",
            gvk: gvk.clone(),
            params,
            body,
            responses: vec![("200", build::STATUS.into())],
            watchable: false,
        });
    }
    out.push(PathItem {
        path: format!("{prefix}{ns_seg}/{}", d.resource),
        params: base_params.clone(),
        ops: collection,
        tag: tag.clone(),
    });

    out.push(PathItem {
        path: format!("{prefix}{ns_seg}/{}/{{name}}", d.resource),
        params: item_params.clone(),
        ops: vec![
            Op {
                method: "get",
                operation_id: id("read", ""),
                description: format!("read the specified {}", d.kind),
                action: "get",
                gvk: gvk.clone(),
                params: &[],
                body: Body::None,
                responses: vec![("200", kind_def.into())],
                watchable: false,
            },
            Op {
                method: "put",
                operation_id: id("replace", ""),
                description: format!("replace the specified {}", d.kind),
                action: "put",
                gvk: gvk.clone(),
                params: WRITE_PARAMS,
                body: object(),
                responses: vec![("200", kind_def.into()), ("201", kind_def.into())],
                watchable: false,
            },
            Op {
                method: "delete",
                operation_id: id("delete", ""),
                description: format!("delete a {}", d.kind),
                action: "delete",
                gvk: gvk.clone(),
                params: DELETE_PARAMS,
                body: Body::Object(build::DELETE_OPTIONS.into()),
                responses: vec![("200", build::STATUS.into()), ("202", build::STATUS.into())],
                watchable: false,
            },
            Op {
                method: "patch",
                operation_id: id("patch", ""),
                description: format!("partially update the specified {}", d.kind),
                action: "patch",
                gvk: gvk.clone(),
                params: PATCH_PARAMS,
                body: patch.clone(),
                responses: vec![("200", kind_def.into()), ("201", kind_def.into())],
                watchable: false,
            },
        ],
        tag: tag.clone(),
    });

    if d.namespaced {
        out.push(PathItem {
            path: format!("{prefix}/{}", d.resource),
            params: vec![PRETTY],
            ops: vec![Op {
                method: "get",
                operation_id: format!("list{gv_token}{}ForAllNamespaces", d.kind),
                description: format!("{list_description} {}", d.kind),
                action: "list",
                gvk: gvk.clone(),
                params: LIST_PARAMS,
                body: Body::None,
                responses: vec![("200", list_def.into())],
                watchable: true,
            }],
            tag: tag.clone(),
        });
    }

    // Only the verbs the resource serves.
    let verbs = d.verbs();
    for item in &mut out {
        item.ops.retain(|op| verbs.contains(&verb_of(op.action)));
    }
    out.retain(|item| !item.ops.is_empty());

    // Only the views of the object are documented; the actions (eviction, binding) and the
    // kubelet's subresources are not described here yet. kube's CRD builder names the custom
    // kind on a `/scale` operation too.
    let scale_gvk = if doc.custom { gvk.clone() } else { Some(("autoscaling".into(), "v1".into(), "Scale".into())) };
    for sub in d.subresources.iter().copied().filter(|s| s.is_view()) {
        let (suffix, def, sub_gvk, what) = match sub {
            Subresource::Status => ("Status", kind_def, gvk.clone(), "status"),
            Subresource::Scale => ("Scale", build::SCALE, scale_gvk.clone(), "scale"),
            Subresource::Finalize => ("Finalize", kind_def, gvk.clone(), "finalize"),
            Subresource::Approval => ("Approval", kind_def, gvk.clone(), "approval"),
            Subresource::EphemeralContainers => ("EphemeralContainers", kind_def, gvk.clone(), "ephemeralcontainers"),
            _ => continue,
        };
        let mut ops = vec![
            Op {
                method: "get",
                operation_id: id("read", suffix),
                description: format!("read {what} of the specified {}", d.kind),
                action: "get",
                gvk: sub_gvk.clone(),
                params: &[],
                body: Body::None,
                responses: vec![("200", def.into())],
                watchable: false,
            },
            Op {
                method: "put",
                operation_id: id("replace", suffix),
                description: format!("replace {what} of the specified {}", d.kind),
                action: "put",
                gvk: sub_gvk.clone(),
                params: WRITE_PARAMS,
                body: Body::Object(def.into()),
                responses: vec![("200", def.into()), ("201", def.into())],
                watchable: false,
            },
            Op {
                method: "patch",
                operation_id: id("patch", suffix),
                description: format!("partially update {what} of the specified {}", d.kind),
                action: "patch",
                gvk: sub_gvk,
                params: PATCH_PARAMS,
                body: patch.clone(),
                responses: vec![("200", def.into()), ("201", def.into())],
                watchable: false,
            },
        ];
        ops.retain(|op| sub.verbs().contains(&if op.method == "put" { "update" } else { op.method }));
        out.push(PathItem {
            path: format!("{prefix}{ns_seg}/{}/{{name}}/{}", d.resource, sub.name()),
            params: item_params.clone(),
            ops,
            tag: tag.clone(),
        });
    }
    out
}

/// The verb an operation's `x-kubernetes-action` serves.
fn verb_of(action: &str) -> &str {
    match action {
        "post" => "create",
        "put" => "update",
        other => other,
    }
}

/// The `/<prefix>/` resource-list path of a group version.
fn resources_path(group: &str, version: &str) -> PathItem {
    PathItem {
        path: format!("{}/", gv_prefix(group, version)),
        params: Vec::new(),
        ops: vec![Op {
            method: "get",
            operation_id: format!("get{}{}APIResources", group_token(group), capitalize(version)),
            description: "get available resources".into(),
            action: "",
            gvk: None,
            params: &[],
            body: Body::None,
            responses: vec![("200", build::API_RESOURCE_LIST.into())],
            watchable: false,
        }],
        tag: format!("{}_{}", group_tag(group), version),
    }
}

/// Every path of one group version.
fn gv_paths(group: &str, version: &str) -> Vec<PathItem> {
    let mut out = vec![resources_path(group, version)];
    for d in builtin::resources().iter().filter(|d| d.group == group && d.version == version) {
        out.extend(resource_paths(&Documented::builtin(d)));
    }
    out
}

/// The served group versions, in discovery order.
fn group_versions() -> Vec<(&'static str, &'static str)> {
    let mut out: Vec<(&'static str, &'static str)> = Vec::new();
    for d in builtin::resources() {
        if !out.contains(&(d.group.as_str(), d.version.as_str())) {
            out.push((&d.group, &d.version));
        }
    }
    out
}

fn gvk_object((group, version, kind): (&str, &str, &str)) -> Value {
    json!({"group": group, "kind": kind, "version": version})
}

fn v2_param(p: &Param) -> Value {
    let mut o = json!({"name": p.name, "in": p.location, "type": p.ty.name(), "uniqueItems": true});
    if !p.description.is_empty() {
        o["description"] = p.description.into();
    }
    if p.location == "path" {
        o["required"] = true.into();
    }
    o
}

fn v3_param(p: &Param) -> Value {
    let mut o = json!({"name": p.name, "in": p.location, "schema": {"type": p.ty.name(), "uniqueItems": true}});
    if !p.description.is_empty() {
        o["description"] = p.description.into();
    }
    if p.location == "path" {
        o["required"] = true.into();
    }
    o
}

fn code_description(code: &str) -> &'static str {
    match code {
        "200" => "OK",
        "201" => "Created",
        "202" => "Accepted",
        _ => "Unauthorized",
    }
}

fn render_v2(item: &PathItem) -> Value {
    let mut path = Map::new();
    for op in &item.ops {
        let mut params: Vec<Value> = Vec::new();
        match &op.body {
            Body::None => {}
            Body::Object(def) => params.push(json!({
                "name": "body", "in": "body", "required": true,
                "schema": {"$ref": format!("{DEFINITIONS}{def}")},
            })),
            Body::Patch(_) => params.push(json!({
                "name": "body", "in": "body", "required": true,
                "schema": {"$ref": format!("{DEFINITIONS}{}", build::PATCH)},
            })),
        }
        params.extend(op.params.iter().map(v2_param));
        let mut responses = Map::new();
        for (code, def) in &op.responses {
            responses.insert(
                (*code).into(),
                json!({"description": code_description(code), "schema": {"$ref": format!("{DEFINITIONS}{def}")}}),
            );
        }
        responses.insert("401".into(), json!({"description": "Unauthorized"}));
        let mut produces: Vec<&str> = PRODUCES.to_vec();
        if op.watchable {
            produces.extend(PRODUCES_WATCH);
        }
        let consumes: Vec<&str> = match op.body {
            Body::Patch(types) => types.to_vec(),
            _ => vec!["*/*"],
        };
        let mut o = json!({
            "description": op.description,
            "operationId": op.operation_id,
            "consumes": consumes,
            "produces": produces,
            "schemes": ["https"],
            "tags": [item.tag],
            "responses": responses,
        });
        if !params.is_empty() {
            o["parameters"] = Value::Array(params);
        }
        mark_kube_extensions(&mut o, op);
        path.insert(op.method.into(), o);
    }
    if !item.params.is_empty() {
        path.insert("parameters".into(), item.params.iter().map(v2_param).collect());
    }
    Value::Object(path)
}

/// kube's operation extensions, the same in v2 and v3: the verb's action and the kind it returns.
fn mark_kube_extensions(o: &mut Value, op: &Op) {
    if !op.action.is_empty() {
        o["x-kubernetes-action"] = op.action.into();
    }
    if let Some((g, v, k)) = &op.gvk {
        o["x-kubernetes-group-version-kind"] = gvk_object((g, v, k));
    }
}

fn media(types: &[&str], schema: &Value) -> Value {
    types.iter().map(|t| ((*t).to_string(), json!({"schema": schema}))).collect::<Map<_, _>>().into()
}

fn render_v3(item: &PathItem) -> Value {
    let mut path = Map::new();
    for op in &item.ops {
        let mut responses = Map::new();
        let mut produces: Vec<&str> = PRODUCES.to_vec();
        if op.watchable {
            produces.extend(PRODUCES_WATCH);
        }
        for (code, def) in &op.responses {
            let schema = json!({"$ref": format!("{COMPONENTS}{def}")});
            responses.insert(
                (*code).into(),
                json!({"description": code_description(code), "content": media(&produces, &schema)}),
            );
        }
        responses.insert("401".into(), json!({"description": "Unauthorized"}));
        let mut o = json!({
            "description": op.description,
            "operationId": op.operation_id,
            "tags": [item.tag],
            "responses": responses,
        });
        if !op.params.is_empty() {
            o["parameters"] = op.params.iter().map(v3_param).collect();
        }
        match &op.body {
            Body::None => {}
            Body::Object(def) => {
                let schema = json!({"$ref": format!("{COMPONENTS}{def}")});
                o["requestBody"] = json!({"content": media(&["*/*"], &schema), "required": true});
            }
            Body::Patch(types) => {
                let schema = json!({"$ref": format!("{COMPONENTS}{}", build::PATCH)});
                o["requestBody"] = json!({"content": media(types, &schema), "required": true});
            }
        }
        mark_kube_extensions(&mut o, op);
        path.insert(op.method.into(), o);
    }
    if !item.params.is_empty() {
        path.insert("parameters".into(), item.params.iter().map(v3_param).collect());
    }
    Value::Object(path)
}

/// A definition as `/openapi/v2` serves it: the canonical store plus kube's v2 spelling of the
/// two string-or-number types.
fn v2_definition(name: &str, schema: &Value) -> Value {
    let mut s = schema.clone();
    if let Value::Object(o) = &mut s {
        match name {
            INT_OR_STRING => {
                o.insert("type".into(), "string".into());
                o.insert("format".into(), "int-or-string".into());
            }
            QUANTITY => {
                o.insert("type".into(), "string".into());
            }
            _ => {}
        }
    }
    s
}

const INT_OR_STRING: &str = "io.k8s.apimachinery.pkg.util.intstr.IntOrString";
const QUANTITY: &str = "io.k8s.apimachinery.pkg.api.resource.Quantity";

/// A definition as `/openapi/v3` serves it: refs under `#/components/schemas/`, a `$ref`
/// with siblings wrapped as `allOf: [{$ref}]` (OpenAPI 3.0 ignores `$ref` siblings, kube wraps
/// them so descriptions and patch extensions survive), `oneOf` for the string-or-number types.
fn v3_definition(name: &str, schema: &Value) -> Value {
    let mut s = to_v3(schema);
    if let Value::Object(o) = &mut s {
        match name {
            INT_OR_STRING => {
                o.insert("oneOf".into(), json!([{"type": "integer"}, {"type": "string"}]));
                o.insert("format".into(), "int-or-string".into());
            }
            QUANTITY => {
                o.insert("oneOf".into(), json!([{"type": "string"}, {"type": "number"}]));
            }
            _ => {}
        }
    }
    s
}

fn to_v3(v: &Value) -> Value {
    match v {
        Value::Object(o) => {
            let mut out = Map::new();
            let mut reference = None;
            for (k, v) in o {
                if k == "$ref" {
                    let r = v.as_str().unwrap_or_default();
                    reference =
                        Some(r.strip_prefix(DEFINITIONS).map(|n| format!("{COMPONENTS}{n}")).unwrap_or(r.into()));
                } else if k == "properties" || k == "definitions" {
                    // Keys of these maps are names, not keywords: convert their values only.
                    let m: Map<String, Value> = match v {
                        Value::Object(m) => m.iter().map(|(k, v)| (k.clone(), to_v3(v))).collect(),
                        _ => Map::new(),
                    };
                    out.insert(k.clone(), Value::Object(m));
                } else {
                    out.insert(k.clone(), to_v3(v));
                }
            }
            match reference {
                Some(r) if out.is_empty() => {
                    out.insert("$ref".into(), r.into());
                }
                Some(r) => {
                    out.insert("allOf".into(), json!([{"$ref": r}]));
                }
                None => {}
            }
            Value::Object(out)
        }
        Value::Array(a) => Value::Array(a.iter().map(to_v3).collect()),
        other => other.clone(),
    }
}

/// The definition names a value refers to (either ref style).
fn collect_refs(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(o) => {
            for (k, v) in o {
                if k == "$ref" {
                    if let Some(r) = v.as_str() {
                        let name = r.strip_prefix(DEFINITIONS).or_else(|| r.strip_prefix(COMPONENTS)).unwrap_or(r);
                        out.push(name.to_string());
                    }
                } else {
                    collect_refs(v, out);
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|v| collect_refs(v, out)),
        _ => {}
    }
}

/// Every definition reachable from `roots`, sorted.
fn closure(roots: Vec<String>) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut stack = roots;
    while let Some(name) = stack.pop() {
        if !seen.insert(name.clone()) {
            continue;
        }
        if let Some(d) = store().defs.get(&name) {
            collect_refs(d, &mut stack);
        }
    }
    seen
}

/// One custom resource's served version as its documents name it.
pub struct CustomResourceDoc<'a> {
    /// The served resource.
    pub def: &'a ResourceDef,
    /// The definition name of its kind (`com.example.v1.Widget`) and of its list.
    pub kind_definition: String,
    /// The definition name of its list (`com.example.v1.WidgetList`).
    pub list_definition: String,
}

/// What one group version of custom resources adds to the OpenAPI documents.
#[derive(Clone, Debug, Default)]
pub struct CustomDocuments {
    /// Its key in the `/openapi/v3` index: `apis/<group>/<version>`.
    pub v3_key: String,
    /// `/openapi/v3/apis/<group>/<version>` (shared bytes: each response clones a handle).
    pub v3: bytes::Bytes,
    /// Its [`digest`], the `hash` of its index entry.
    pub v3_hash: String,
    /// Paths added to `/openapi/v2`, each as JSON text.
    pub v2_paths: Vec<(String, String)>,
    /// Definitions added to `/openapi/v2`, each as JSON text.
    pub v2_definitions: Vec<(String, String)>,
}

impl CustomDocuments {
    /// The documents of `resources`, all of `group`/`version`. Definitions are given in the
    /// canonical form (`$ref: "#/definitions/<name>"`), once as v3 keeps them and once as v2
    /// does (kube drops defaults, `anyOf` and friends from v2); the meta definitions they and
    /// the operations refer to are added from the built-in store.
    pub fn build(
        group: &str,
        version: &str,
        resources: &[CustomResourceDoc<'_>],
        v3_definitions: &[(String, Value)],
        v2_definitions: &[(String, Value)],
    ) -> CustomDocuments {
        let mut items = Vec::new();
        for r in resources {
            let doc = Documented {
                def: r.def,
                kind_def: r.kind_definition.clone(),
                list_def: r.list_definition.clone(),
                custom: true,
            };
            items.extend(resource_paths(&doc));
        }
        let mut v3_paths = Map::new();
        let mut roots = Vec::new();
        for item in &items {
            let rendered = render_v3(item);
            collect_refs(&rendered, &mut roots);
            v3_paths.insert(item.path.clone(), rendered);
        }
        let mut schemas = Map::new();
        for (name, def) in v3_definitions {
            collect_refs(def, &mut roots);
            schemas.insert(name.clone(), to_v3(def));
        }
        for name in closure(roots) {
            if !schemas.contains_key(&name)
                && let Some(def) = store().defs.get(&name)
            {
                schemas.insert(name.clone(), v3_definition(&name, def));
            }
        }
        let v3 = serde_json::to_vec(&json!({
            "components": {"schemas": schemas},
            "info": {"title": "Kubernetes CRD Swagger", "version": "v0.1.0"},
            "openapi": "3.0.0",
            "paths": v3_paths,
        }))
        .expect("a Value serializes");
        CustomDocuments {
            v3_key: gv_key(group, version),
            v3_hash: digest(&v3),
            v3: v3.into(),
            v2_paths: items.iter().map(|i| (i.path.clone(), render_v2(i).to_string())).collect(),
            v2_definitions: v2_definitions.iter().map(|(n, d)| (n.clone(), d.to_string())).collect(),
        }
    }

    /// The bytes it adds to `/openapi/v2`, roughly.
    fn v2_size(&self) -> usize {
        self.v2_paths.iter().chain(&self.v2_definitions).map(|(k, v)| k.len() + v.len() + 4).sum()
    }
}

/// The Swagger 2.0 document as a `Value`, for both encodings.
fn build_v2_value() -> Value {
    store();
    let mut paths = Map::new();
    for (g, v) in group_versions() {
        for item in gv_paths(g, v) {
            paths.insert(item.path.clone(), render_v2(&item));
        }
    }
    let definitions: Map<String, Value> =
        store().defs.iter().map(|(name, schema)| (name.clone(), v2_definition(name, schema))).collect();
    json!({
        "swagger": "2.0",
        "info": {"title": "Kubernetes", "version": INFO_VERSION},
        "paths": paths,
        "definitions": definitions,
        "securityDefinitions": {
            "BearerToken": {"description": "Bearer Token authentication", "type": "apiKey", "name": "authorization", "in": "header"},
        },
        "security": [{"BearerToken": []}],
    })
}

/// The `/openapi/v3` documents and their index, built together since the index names each
/// document's hash.
struct V3 {
    index: Vec<u8>,
    /// `api/v1` → (document, hash).
    docs: BTreeMap<String, (Vec<u8>, String)>,
}

/// One group version's document. The definitions come pre-serialized (`v3_defs`): most are
/// shared by several documents, and converting and serializing each once halves the work.
fn build_v3_document(group: &str, version: &str, v3_defs: &BTreeMap<&str, String>) -> Vec<u8> {
    let items = gv_paths(group, version);
    let mut paths = Map::new();
    let mut roots = Vec::new();
    for item in &items {
        let rendered = render_v3(item);
        collect_refs(&rendered, &mut roots);
        paths.insert(item.path.clone(), rendered);
    }
    let security_schemes = json!({
        "BearerToken": {"description": "Bearer Token authentication", "type": "apiKey", "name": "authorization", "in": "header"},
    });
    let json = |v: &Value| serde_json::to_vec(v).expect("a Value serializes");
    // Keys in sorted order, as serde_json writes its maps, so the bytes stay stable.
    let mut out = Vec::with_capacity(512 * 1024);
    out.extend_from_slice(b"{\"components\":{\"schemas\":{");
    let mut first = true;
    for name in closure(roots) {
        let Some(def) = v3_defs.get(name.as_str()) else { continue };
        if !first {
            out.push(b',');
        }
        first = false;
        out.extend_from_slice(&json(&Value::String(name)));
        out.push(b':');
        out.extend_from_slice(def.as_bytes());
    }
    out.extend_from_slice(b"},\"securitySchemes\":");
    out.extend_from_slice(&json(&security_schemes));
    out.extend_from_slice(b"},\"info\":");
    out.extend_from_slice(&json(&json!({"title": "Kubernetes", "version": INFO_VERSION})));
    out.extend_from_slice(b",\"openapi\":\"3.0.0\",\"paths\":");
    out.extend_from_slice(&json(&Value::Object(paths)));
    out.extend_from_slice(b",\"security\":[{\"BearerToken\":[]}]}");
    // Kept for the server's life: most documents are a few KiB of the capacity reserved above.
    out.shrink_to_fit();
    out
}

fn build_v3() -> V3 {
    store();
    let v3_defs: BTreeMap<&str, String> = store()
        .defs
        .iter()
        .map(|(name, schema)| {
            let text = serde_json::to_string(&v3_definition(name, schema)).expect("a Value serializes");
            (name.as_str(), text)
        })
        .collect();
    let mut docs = BTreeMap::new();
    let mut index = Map::new();
    for (g, v) in group_versions() {
        let key = gv_key(g, v);
        let bytes = build_v3_document(g, v, &v3_defs);
        let hash = digest(&bytes);
        index.insert(key.clone(), json!({"serverRelativeURL": format!("/openapi/v3/{key}?hash={hash}")}));
        docs.insert(key, (bytes, hash));
    }
    let index = serde_json::to_vec(&json!({"paths": index})).expect("a Value serializes");
    V3 { index, docs }
}

/// A stable 128-bit FNV-1a digest in upper-case hex: the document's version in its URL, so
/// clients may cache a document by URL for as long as it is listed in the index.
pub fn digest(bytes: &[u8]) -> String {
    const OFFSET: u128 = 0x6c62272e07bb014262b821756295c58d;
    const PRIME: u128 = 0x0000000001000000000000000000013B;
    let mut h = OFFSET;
    for b in bytes {
        h ^= u128::from(*b);
        h = h.wrapping_mul(PRIME);
    }
    format!("{h:032X}")
}

/// The built-in Swagger 2.0 document, built at the first `/openapi/v2` request: few clients
/// ask for it, and it is the largest document.
static V2_VALUE: LazyLock<Value> = LazyLock::new(build_v2_value);
/// Its paths and definitions serialized one by one, so a document with custom resources merged
/// in is spliced together rather than serialized whole.
static V2_PARTS: LazyLock<V2Parts> = LazyLock::new(|| {
    store();
    let serialize = |key: &str| -> BTreeMap<String, String> {
        V2_VALUE[key]
            .as_object()
            .map(|m| m.iter().map(|(k, v)| (k.clone(), v.to_string())).collect())
            .unwrap_or_default()
    };
    V2Parts { paths: serialize("paths"), definitions: serialize("definitions") }
});
/// The built-in document alone, as served while no custom resource adds to it.
static V2: LazyLock<Vec<u8>> = LazyLock::new(|| openapi_v2_with(&[]));
/// Built at the first protobuf `/openapi/v2` request (kubectl's fallbacks).
static V2_PROTOBUF: LazyLock<Vec<u8>> = LazyLock::new(|| super::proto::encode_document(&V2_VALUE));

/// The built-in `/openapi/v2` paths and definitions, each as JSON text.
struct V2Parts {
    paths: BTreeMap<String, String>,
    definitions: BTreeMap<String, String>,
}

/// The `Content-Type` to serve [`openapi_v2_protobuf`] with. kube answers with this spelling
/// whichever of [`OPENAPI_V2_PROTOBUF_ACCEPT`] was asked for: client-go parses the response's
/// media type, and Go's `mime` package rejects the `@` of the older spelling.
pub const OPENAPI_V2_PROTOBUF: &str = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";

/// The `Accept` media types that select [`openapi_v2_protobuf`] (client-go 1.30's
/// `OpenAPISchema()` sends the first, alone). Anything else (`application/json`, `*/*`, none)
/// gets the JSON document, as kube does.
pub const OPENAPI_V2_PROTOBUF_ACCEPT: [&str; 2] = [
    "application/com.github.proto-openapi.spec.v2@v1.0+protobuf",
    "application/com.github.proto-openapi.spec.v2.v1.0+protobuf",
];
/// Built at the first `/openapi/v3*` request.
static V3_DOCS: LazyLock<V3> = LazyLock::new(build_v3);

/// Forces the v3 documents (see [`super::prepare`]).
pub(crate) fn prepare() {
    LazyLock::force(&V3_DOCS);
}

/// `GET /openapi/v2`: the Swagger 2.0 document (JSON) of every served path and definition.
///
/// Serve it as `application/json`. client-go's `OpenAPISchema()` (kubectl) asks for protobuf
/// only and cannot parse JSON: answer [`OPENAPI_V2_PROTOBUF_ACCEPT`] with
/// [`openapi_v2_protobuf`].
pub fn openapi_v2() -> &'static [u8] {
    &V2
}

/// `/openapi/v2` with custom group versions merged in. Entries are keyed by path and by
/// definition name; a built-in entry wins a clash, as kube's merge keeps the static spec's.
/// Keys come out sorted (as serde_json writes maps), so the same inputs give the same bytes.
pub fn openapi_v2_with(custom: &[&CustomDocuments]) -> Vec<u8> {
    fn splice<'a>(
        out: &mut Vec<u8>,
        builtin: &'a BTreeMap<String, String>,
        custom: impl Iterator<Item = &'a (String, String)>,
    ) {
        let mut all: BTreeMap<&str, &str> = custom.map(|(k, v)| (k.as_str(), v.as_str())).collect();
        all.extend(builtin.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        out.push(b'{');
        for (i, (k, v)) in all.into_iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            out.extend_from_slice(Value::String(k.to_string()).to_string().as_bytes());
            out.push(b':');
            out.extend_from_slice(v.as_bytes());
        }
        out.push(b'}');
    }
    let parts = &*V2_PARTS;
    let size: usize = custom.iter().map(|c| c.v2_size()).sum();
    let mut out = Vec::with_capacity((4 << 20) + size);
    out.extend_from_slice(b"{\"definitions\":");
    splice(&mut out, &parts.definitions, custom.iter().flat_map(|c| &c.v2_definitions));
    out.extend_from_slice(b",\"info\":");
    out.extend_from_slice(V2_VALUE["info"].to_string().as_bytes());
    out.extend_from_slice(b",\"paths\":");
    splice(&mut out, &parts.paths, custom.iter().flat_map(|c| &c.v2_paths));
    out.extend_from_slice(b",\"security\":");
    out.extend_from_slice(V2_VALUE["security"].to_string().as_bytes());
    out.extend_from_slice(b",\"securityDefinitions\":");
    out.extend_from_slice(V2_VALUE["securityDefinitions"].to_string().as_bytes());
    out.extend_from_slice(b",\"swagger\":\"2.0\"}");
    out
}

/// [`openapi_v2_with`] as protobuf (kubectl asks for it to validate `kind: List` files).
pub fn openapi_v2_protobuf_with(custom: &[&CustomDocuments]) -> Vec<u8> {
    if custom.is_empty() {
        return V2_PROTOBUF.clone();
    }
    let mut doc = V2_VALUE.clone();
    for (key, entries) in [
        ("paths", custom.iter().flat_map(|c| &c.v2_paths).collect::<Vec<_>>()),
        ("definitions", custom.iter().flat_map(|c| &c.v2_definitions).collect()),
    ] {
        let Some(map) = doc[key].as_object_mut() else { continue };
        for (name, text) in entries {
            if !map.contains_key(name)
                && let Ok(v) = serde_json::from_str(text)
            {
                map.insert(name.clone(), v);
            }
        }
    }
    super::proto::encode_document(&doc)
}

/// `GET /openapi/v2` with an `Accept` of [`OPENAPI_V2_PROTOBUF_ACCEPT`]: the same document as
/// gnostic's `openapi.v2.Document` protobuf, served as [`OPENAPI_V2_PROTOBUF`].
/// kubectl needs it to validate `kind: List` files under the default `--validate=strict`.
pub fn openapi_v2_protobuf() -> &'static [u8] {
    &V2_PROTOBUF
}

/// The `/openapi/v3` index with custom group versions added: `(key, hash)` pairs such as
/// `("apis/example.com/v1", "<HASH>")`. A built-in group version keeps its own entry.
pub fn openapi_v3_index_with<'a>(custom: impl Iterator<Item = (&'a str, &'a str)>) -> Vec<u8> {
    let mut index: Map<String, Value> = Map::new();
    for (key, hash) in custom {
        index.insert(key.to_string(), json!({"serverRelativeURL": format!("/openapi/v3/{key}?hash={hash}")}));
    }
    for (key, (_, hash)) in &V3_DOCS.docs {
        index.insert(key.clone(), json!({"serverRelativeURL": format!("/openapi/v3/{key}?hash={hash}")}));
    }
    serde_json::to_vec(&json!({"paths": index})).expect("a Value serializes")
}

/// `GET /openapi/v3`: the index, `{"paths": {"api/v1": {"serverRelativeURL":
/// "/openapi/v3/api/v1?hash=<HASH>"}, "apis/apps/v1": {...}}}`, one entry per served group
/// version.
pub fn openapi_v3_index() -> &'static [u8] {
    &V3_DOCS.index
}

/// `GET /openapi/v3/<path>` for `path` = `api/v1` or `apis/<group>/<version>` (no leading
/// slash, no query): the OpenAPI 3.0 document of that group version, `None` for an unknown
/// one (404). The `hash` query parameter may be ignored: it only versions the URL for caches
/// (kube answers a matching hash with `Cache-Control: public, immutable`).
pub fn openapi_v3_document(path: &str) -> Option<&'static [u8]> {
    let path = path.trim_matches('/');
    V3_DOCS.docs.get(path).map(|(bytes, _)| bytes.as_slice())
}

/// The hash of a v3 document (as in its index URL), for an `ETag` and to decide whether a
/// request's `hash` parameter names the current document.
pub fn openapi_v3_hash(path: &str) -> Option<&'static str> {
    let path = path.trim_matches('/');
    V3_DOCS.docs.get(path).map(|(_, hash)| hash.as_str())
}
