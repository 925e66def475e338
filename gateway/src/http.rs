//! The request path: every HTTPS request enters [`dispatch`], which parses its request info,
//! runs it through authentication, authorization and flow control (each a stage actor), routes
//! it, and records kube's request metrics.

use std::any::Any;
use std::time::Instant;

use actix_web::dev::Extensions;
use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, web};
use actors::error::ApiError;
use actors::messages::{Authenticate, Authorize, Credentials, SeatGrant, StartRequest};
use actors::request::{RequestInfo, UserInfo, parse_request_info};
use serde_json::{Value, json};

use crate::negotiate::{Output, error_response, respond};
use crate::server::Server;
use crate::{discovery, health, rest};

/// The verified client certificate of a TLS connection.
#[derive(Clone)]
pub struct PeerIdentity(pub Option<UserInfo>);

/// Records the client certificate's identity once per connection.
pub fn on_connect(conn: &dyn Any, ext: &mut Extensions) {
    use actix_web::rt::net::TcpStream;
    type Tls = actix_tls::accept::rustls_0_23::TlsStream<TcpStream>;
    if let Some(tls) = conn.downcast_ref::<Tls>() {
        let (_, session) = tls.get_ref();
        let identity = session.peer_certificates().and_then(|c| c.first()).and_then(|c| crate::tls::identity_of(c));
        ext.insert(PeerIdentity(identity));
    }
}

/// Query parameters, first value wins.
pub struct Query(Vec<(String, String)>);

impl Query {
    fn parse(s: &str) -> Self {
        Query(web::Query::<Vec<(String, String)>>::from_query(s).map(|q| q.into_inner()).unwrap_or_default())
    }

    /// The value of `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    /// Whether `key` is true as Go's `strconv.ParseBool` reads it (`1`, `t`, `true`, `True`...):
    /// the Python client sends `watch=True`.
    pub fn flag(&self, key: &str) -> bool {
        matches!(self.get(key), Some("1" | "t" | "T" | "true" | "TRUE" | "True"))
    }
}

/// What a handler knows about its request.
pub struct RequestContext<'a> {
    /// The HTTP request.
    pub req: &'a HttpRequest,
    /// Parsed request info.
    pub info: &'a RequestInfo,
    /// Query parameters.
    pub query: Query,
    /// The authenticated user.
    pub user: UserInfo,
    /// Shared server state.
    pub server: &'a Server,
}

impl RequestContext<'_> {
    /// A request header.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.req.headers().get(name).and_then(|v| v.to_str().ok())
    }

    /// Whether responses should be indented (`?pretty=true`, or curl/wget as kube guesses).
    pub fn pretty(&self) -> bool {
        match self.query.get("pretty") {
            Some(p) => p == "true" || p == "1",
            None => self.header("User-Agent").is_some_and(|ua| ua.starts_with("curl") || ua.starts_with("Wget")),
        }
    }
}

fn credentials(req: &HttpRequest) -> Credentials {
    let bearer_token = req
        .headers()
        .get("Authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer ").or_else(|| v.strip_prefix("bearer ")))
        .map(|t| t.trim().to_string())
        .filter(|t| !t.is_empty());
    let client_certificate = req.conn_data::<PeerIdentity>().and_then(|p| p.0.clone());
    Credentials { bearer_token, client_certificate }
}

/// kube's metric verb: `LIST`, `WATCH`, `GET`, `POST`, `PUT`, `PATCH`, `DELETE`, `DELETECOLLECTION`.
fn metric_verb(info: &RequestInfo, method: &str) -> &'static str {
    match info.verb.as_str() {
        "list" => "LIST",
        "watch" => "WATCH",
        "get" => "GET",
        "create" => "POST",
        "update" => "PUT",
        "patch" => "PATCH",
        "delete" => "DELETE",
        "deletecollection" => "DELETECOLLECTION",
        _ => match method {
            "GET" => "GET",
            "POST" => "POST",
            "PUT" => "PUT",
            "DELETE" => "DELETE",
            "HEAD" => "HEAD",
            _ => "OTHER",
        },
    }
}

fn scope(info: &RequestInfo) -> &'static str {
    if !info.is_resource_request {
        ""
    } else if !info.name.is_empty() {
        "resource"
    } else if !info.namespace.is_empty() {
        "namespace"
    } else {
        "cluster"
    }
}

/// The single entry point of the serving port.
pub async fn dispatch(req: HttpRequest, payload: web::Payload, server: web::Data<Server>) -> HttpResponse {
    let started = Instant::now();
    let query = Query::parse(req.query_string());
    let info = parse_request_info(req.method().as_str(), req.path(), query.flag("watch"));
    let kind = if info.is_mutating() { "mutating" } else { "readOnly" };
    let long_running = info.is_long_running();
    let inflight = metrics::gauge!("apiserver_current_inflight_requests", "request_kind" => kind);
    if !long_running {
        inflight.increment(1.0);
    }
    let audit_id = uuid::Uuid::new_v4().to_string();
    let (mut response, grant) = match admit_and_route(&req, payload, &server, &info, query).await {
        Ok((r, g)) => (r, Some(g)),
        Err(e) => (error_response(&e), None),
    };
    if !long_running {
        inflight.decrement(1.0);
    }
    let headers = response.headers_mut();
    headers.insert("audit-id".parse().expect("header name"), audit_id.parse().expect("uuid is a header value"));
    headers.insert("cache-control".parse().expect("header name"), "no-cache, private".parse().expect("value"));
    if let Some(g) = grant {
        if let Ok(v) = g.flow_schema_uid.parse() {
            headers.insert("x-kubernetes-pf-flowschema-uid".parse().expect("header name"), v);
        }
        if let Ok(v) = g.priority_level_uid.parse() {
            headers.insert("x-kubernetes-pf-prioritylevel-uid".parse().expect("header name"), v);
        }
    }

    let code = response.status().as_u16().to_string();
    let labels = [
        ("verb", metric_verb(&info, req.method().as_str()).to_string()),
        ("dry_run", if query_dry_run(req.query_string()) { "All" } else { "" }.to_string()),
        ("group", info.api_group.clone()),
        ("version", info.api_version.clone()),
        ("resource", info.resource.clone()),
        ("subresource", info.subresource.clone()),
        ("scope", scope(&info).to_string()),
        ("component", "apiserver".to_string()),
    ];
    metrics::histogram!("apiserver_request_duration_seconds", &labels).record(started.elapsed().as_secs_f64());
    let mut with_code = labels.to_vec();
    with_code.push(("code", code));
    metrics::counter!("apiserver_request_total", &with_code).increment(1);
    response
}

fn query_dry_run(q: &str) -> bool {
    q.contains("dryRun=All")
}

async fn admit_and_route(
    req: &HttpRequest,
    payload: web::Payload,
    server: &Server,
    info: &RequestInfo,
    query: Query,
) -> Result<(HttpResponse, SeatGrant), ApiError> {
    let stages = &server.stages;
    let user = stages.authenticate.ask(Authenticate(credentials(req))).await?;
    stages.authorize.ask(Authorize { user: user.clone(), request: info.clone() }).await?;
    let grant = stages.flow_control.ask(StartRequest { user: user.clone(), request: info.clone() }).await?;
    let ctx = RequestContext { req, info, query, user, server };
    let response =
        if info.is_resource_request { rest::serve(&ctx, payload).await? } else { non_resource(&ctx).await? };
    Ok((response, grant))
}

fn json_ok(ctx: &RequestContext<'_>, v: &Value) -> HttpResponse {
    respond(StatusCode::OK, Output::Json, v, ctx.pretty())
}

fn not_found_page() -> HttpResponse {
    HttpResponse::NotFound().content_type("text/plain; charset=utf-8").body("404 page not found\n")
}

fn resource_not_found() -> ApiError {
    ApiError::new(actors::Reason::NotFound, "the server could not find the requested resource")
}

/// Everything that is not a resource: version, health, metrics, discovery, OpenAPI.
async fn non_resource(ctx: &RequestContext<'_>) -> Result<HttpResponse, ApiError> {
    let path = ctx.req.path().trim_end_matches('/');
    let method = ctx.req.method().as_str();
    if method != "GET" && method != "HEAD" {
        return Err(ApiError::method_not_allowed());
    }
    let accept = ctx.header("Accept");
    Ok(match path {
        "/version" => json_ok(ctx, &version()),
        "/metrics" => HttpResponse::Ok()
            .content_type("text/plain; version=0.0.4; charset=utf-8")
            .body(ctx.server.metrics.render()),
        "/healthz" | "/livez" | "/readyz" => health::report(ctx, path.trim_start_matches('/'), None).await,
        p if p.starts_with("/healthz/") || p.starts_with("/livez/") || p.starts_with("/readyz/") => {
            let (endpoint, check) = p.trim_start_matches('/').split_once('/').expect("has a slash");
            health::report(ctx, endpoint, Some(check)).await
        }
        "/api" => match discovery::wants_aggregated(accept) {
            Some(media) => aggregated(media, discovery::aggregated(true, media)),
            None => json_ok(ctx, &discovery::api_versions(&ctx.server.address)),
        },
        "/apis" => match discovery::wants_aggregated(accept) {
            Some(media) => aggregated(media, discovery::aggregated(false, media)),
            None => json_ok(ctx, &discovery::api_group_list()),
        },
        "/api/v1" => json_ok(ctx, &discovery::api_resource_list("", "v1").expect("core v1 is served")),
        p if p.starts_with("/apis/") => {
            let parts: Vec<&str> = p.trim_start_matches("/apis/").split('/').collect();
            match parts.as_slice() {
                [group] => json_ok(ctx, &discovery::api_group(group).ok_or_else(resource_not_found)?),
                [group, version] => {
                    json_ok(ctx, &discovery::api_resource_list(group, version).ok_or_else(resource_not_found)?)
                }
                _ => return Err(resource_not_found()),
            }
        }
        p if p == "/openapi/v2" || p.starts_with("/openapi/v3") => crate::openapi::serve(ctx, p)?,
        p if p.starts_with("/api/") => return Err(resource_not_found()),
        _ => not_found_page(),
    })
}

fn aggregated(media: &str, doc: Value) -> HttpResponse {
    HttpResponse::Ok().content_type(media).body(serde_json::to_vec(&doc).unwrap_or_default())
}

/// `GET /version`, as a v1.30 server reports it.
pub fn version() -> Value {
    json!({
        "major": "1",
        "minor": "30",
        "gitVersion": "v1.30.0",
        "gitCommit": env!("CARGO_PKG_VERSION"),
        "gitTreeState": "clean",
        "buildDate": "2026-01-01T00:00:00Z",
        "goVersion": "go1.22.2",
        "compiler": "rustc",
        "platform": format!("{}/{}", std::env::consts::OS, if cfg!(target_arch = "x86_64") { "amd64" } else { std::env::consts::ARCH }),
    })
}
