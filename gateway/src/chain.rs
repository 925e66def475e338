//! The handler chain: every HTTPS request enters [`dispatch`], which runs it through kube's
//! filters in kube's order and records kube's request metrics.
//!
//! 0. while the server shuts down, new requests are turned away (429 or 503, probes excepted)
//!    and the others are counted until answered, so the shutdown can wait for them
//!    (`lifecycle`);
//! 1. request info and the request's deadline (`--request-timeout`, `?timeout=`; for a watch
//!    it bounds only the setup, until its stream starts): past it the request gets kube's 504
//!    and every stage call it has in flight is dropped, which cancels the stage's work;
//! 2. authentication (a stage whose mailbox waits rather than refuses: nothing may turn a
//!    request away before flow control has classified it);
//! 3. audit: the policy's level for the request, events at kube's stages (`auditing`);
//! 4. impersonation: each `Impersonate-*` header authorized, then the user replaced;
//! 5. API Priority and Fairness: classified here, on the worker's task; requests APF exempts
//!    skip its stage, the rest ask it for a seat;
//! 6. authorization;
//! 7. the handler: REST and watch for resources, or a non-resource endpoint; a remote group
//!    version's requests are passed on to its extension server instead (`aggregator`).

use std::any::Any;
use std::time::Instant;

use actix_web::dev::Extensions;
use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, web};
use actors::Deadline;
use apimachinery::error::ApiError;
use apimachinery::messages::{Authenticate, Authorize, Classification, Credentials, StartRequest};
use apimachinery::options::{self, Params};
use apimachinery::request::{RequestInfo, UserInfo, parse_request_info};
use auth::impersonation::ImpersonationRequest;
use serde_json::{Value, json};

use crate::auditing::{self, BodySlot, RequestAudit};
use crate::context::RequestContext;
use crate::lifecycle::RequestKind;
use crate::negotiate::{Output, error_response, respond};
use crate::state::ServerState;
use crate::{discovery, health, openapi, rest};
use apimachinery::metrics::{
    CURRENT_INFLIGHT_REQUESTS, REQUEST_DURATION_SECONDS, REQUEST_TERMINATIONS_TOTAL, REQUEST_TOTAL,
};

/// The verified client certificate of a TLS connection.
#[derive(Clone)]
pub struct PeerIdentity(pub Option<UserInfo>);

/// Records the client certificate's identity once per connection.
pub fn on_connect(conn: &dyn Any, ext: &mut Extensions) {
    if let Some(tls) = conn.downcast_ref::<Tls>() {
        note_peer(tls, ext);
    }
}

type Tls = actix_tls::accept::rustls_0_23::TlsStream<actix_web::rt::net::TcpStream>;

/// Notes the client certificate a TLS connection presented in its connection data.
pub fn note_peer(tls: &Tls, ext: &mut Extensions) {
    let (_, session) = tls.get_ref();
    let identity = session.peer_certificates().and_then(|c| c.first()).and_then(|c| crate::tls::identity_of(c));
    ext.insert(PeerIdentity(identity));
}

fn query(s: &str) -> Params {
    Params::new(web::Query::<Vec<(String, String)>>::from_query(s).map(|q| q.into_inner()).unwrap_or_default())
}

/// The credentials a request carries: a bearer token and the connection's client certificate.
pub(crate) fn credentials(req: &HttpRequest) -> Credentials {
    let bearer_token = req
        .headers()
        .get("Authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split_once(' '))
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
        .map(|(_, t)| t.trim().to_string())
        .filter(|t| !t.is_empty());
    let client_certificate = req.conn_data::<PeerIdentity>().and_then(|p| p.0.clone());
    Credentials { bearer_token, client_certificate, audiences: Vec::new() }
}

fn impersonation(req: &HttpRequest) -> ImpersonationRequest {
    let values = |name: &str| -> Vec<String> {
        req.headers().get_all(name).filter_map(|v| v.to_str().ok()).map(String::from).collect()
    };
    let mut extra: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    for (name, value) in req.headers() {
        if let Some(key) = name.as_str().strip_prefix("impersonate-extra-")
            && let Ok(v) = value.to_str()
        {
            extra.entry(auth::impersonation::extra_key(key)).or_default().push(v.to_string());
        }
    }
    ImpersonationRequest {
        user: values("Impersonate-User").into_iter().next(),
        groups: values("Impersonate-Group"),
        uid: values("Impersonate-Uid").into_iter().next(),
        extra,
    }
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

/// kube's `CleanScope`: a named request (by its path or a list's field selector) or a create is
/// about one object.
fn scope(info: &RequestInfo) -> &'static str {
    if !info.is_resource_request {
        ""
    } else if !info.authorized_name().is_empty() || info.verb == "create" {
        "resource"
    } else if !info.namespace.is_empty() {
        "namespace"
    } else {
        "cluster"
    }
}

/// The deadline of a request: the client's `?timeout=` capped by `--request-timeout`, from when
/// the request arrived. A long-running request (a watch) ignores `?timeout=`, as kube does, and
/// the deadline bounds only its setup: the stream that follows ends on its own timeout.
fn deadline(info: &RequestInfo, q: &Params, server: &ServerState) -> Result<Deadline, ApiError> {
    let max = server.options.request_timeout;
    if info.is_long_running() {
        return Ok(Deadline::after(max));
    }
    let timeout = options::request_timeout(q)?.map_or(max, |t| t.min(max));
    Ok(Deadline::after(timeout))
}

/// Counts a request in `apiserver_current_inflight_requests` until dropped, however the
/// request ends (its client may go away mid-way, which drops the handler).
struct InFlight(Option<metrics::Gauge>);

impl InFlight {
    fn new(gauge: metrics::Gauge, counted: bool) -> Self {
        if counted {
            gauge.increment(1.0);
        }
        InFlight(counted.then_some(gauge))
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        if let Some(g) = &self.0 {
            g.decrement(1.0);
        }
    }
}

/// The single entry point of the serving port.
pub async fn dispatch(req: HttpRequest, payload: web::Payload, server: web::Data<ServerState>) -> HttpResponse {
    let started = Instant::now();
    let query = query(req.query_string());
    let info = parse_request_info(req.method().as_str(), req.path(), query.flag("watch"))
        .with_selected_name(query.get("fieldSelector"));
    // Outermost, as kube's `WithRetryAfter` and `WithWaitGroup`: while the server shuts down,
    // requests are turned away before anything else is done for them.
    let request_kind = if info.is_long_running() { RequestKind::Watch } else { RequestKind::Short };
    let counted = match server.lifecycle.admit(&req, request_kind) {
        Ok(counted) => counted,
        Err(refusal) => return refusal.response(),
    };
    let response = run_chain(req, payload, server, started, query, info).await;
    match counted {
        Some(request) => crate::lifecycle::counted_until_sent(response, request),
        None => response,
    }
}

/// The chain past the shutdown filters, with kube's request metrics.
async fn run_chain(
    req: HttpRequest,
    payload: web::Payload,
    server: web::Data<ServerState>,
    started: Instant,
    query: Params,
    info: RequestInfo,
) -> HttpResponse {
    let kind = if info.is_mutating() { "mutating" } else { "readOnly" };
    let long_running = info.is_long_running();
    let inflight = InFlight::new(metrics::gauge!(CURRENT_INFLIGHT_REQUESTS, "request_kind" => kind), !long_running);
    let audit_id = uuid::Uuid::new_v4().to_string();
    let received = chrono::Utc::now();
    let dry_run = query.get("dryRun") == Some("All");
    let (mut audit, body) = (None, BodySlot::default());
    let (outcome, classification, timed_out) = match deadline(&info, &query, &server) {
        Err(e) => (Err(e), None, false),
        Ok(deadline) => {
            let mut classification = None;
            let request =
                Request { req: &req, server: &server, info: &info, audit_id: &audit_id, received, body: &body };
            let work = serve(&request, payload, query, deadline, &mut classification, &mut audit);
            let finished = deadline.run(work).await;
            match finished {
                // A stage call that gave up at the deadline answers first, with the stage named.
                Ok(Err(e)) if e.reason == apimachinery::Reason::Timeout && deadline.expired() => {
                    (Err(e), classification, true)
                }
                Ok(outcome) => (outcome, classification, false),
                // Dropping the work dropped every stage call in flight: the stages cancel it.
                Err(_) => (Err(ApiError::request_timeout()), classification, true),
            }
        }
    };
    let outcome = match audit {
        Some(audit) => audit.finish(body.take(), outcome, long_running),
        None => outcome,
    };
    let accept = req.headers().get("Accept").and_then(|a| a.to_str().ok());
    let mut response = outcome.unwrap_or_else(|e| error_response(&e, accept));
    drop(inflight);
    // A deprecated version warns on every request that got past authentication, as kube's
    // CRD handler does.
    if classification.is_some()
        && info.is_resource_request
        && let Some(warning) = server
            .catalogue
            .find(&info.api_group, &info.api_version, &info.resource)
            .and_then(|d| d.deprecation.clone())
    {
        crate::rest::add_warning(&mut response, &warning);
    }
    let headers = response.headers_mut();
    headers.insert("audit-id".parse().expect("header name"), audit_id.parse().expect("uuid is a header value"));
    headers.insert("cache-control".parse().expect("header name"), "no-cache, private".parse().expect("value"));
    if let Some(c) = classification {
        if let Ok(v) = c.flow_schema_uid.parse() {
            headers.insert("x-kubernetes-pf-flowschema-uid".parse().expect("header name"), v);
        }
        if let Ok(v) = c.priority_level_uid.parse() {
            headers.insert("x-kubernetes-pf-prioritylevel-uid".parse().expect("header name"), v);
        }
    }

    let code = response.status().as_u16().to_string();
    let labels = [
        ("verb", metric_verb(&info, req.method().as_str()).to_string()),
        ("dry_run", if dry_run { "All" } else { "" }.to_string()),
        ("group", info.api_group.clone()),
        ("version", info.api_version.clone()),
        ("resource", info.resource.clone()),
        ("subresource", info.subresource.clone()),
        ("scope", scope(&info).to_string()),
        ("component", "apiserver".to_string()),
    ];
    metrics::histogram!(REQUEST_DURATION_SECONDS, &labels).record(started.elapsed().as_secs_f64());
    let mut with_code = labels.to_vec();
    with_code.push(("code", code));
    if timed_out {
        metrics::counter!(REQUEST_TERMINATIONS_TOTAL, &with_code).increment(1);
    }
    metrics::counter!(REQUEST_TOTAL, &with_code).increment(1);
    response
}

/// What the chain knows of a request before it is authenticated.
struct Request<'a> {
    req: &'a HttpRequest,
    server: &'a ServerState,
    info: &'a RequestInfo,
    audit_id: &'a str,
    received: chrono::DateTime<chrono::Utc>,
    /// Where the handlers leave the body they read, for the audit event.
    body: &'a BodySlot,
}

/// Steps 2 to 7 of the chain. `classification` is filled in as soon as APF has classified the
/// request, so even an error answered after it carries the APF headers, as in kube; `audit`
/// as soon as the request is authenticated, so that the caller completes it whatever happens.
async fn serve(
    request: &Request<'_>,
    payload: web::Payload,
    query: Params,
    deadline: Deadline,
    classification: &mut Option<Classification>,
    audit: &mut Option<RequestAudit>,
) -> Result<HttpResponse, ApiError> {
    let Request { req, server, info, .. } = *request;
    let stages = &server.stages;
    let creds = credentials(req);
    let tried = [(creds.bearer_token.is_some(), "bearer"), (creds.client_certificate.is_some(), "x509")];
    let user = match stages.authenticate.ask(Authenticate(creds), deadline).await {
        Ok(found) => found.user,
        Err(e) => {
            if e.reason == apimachinery::Reason::Unauthorized {
                let attempted: Vec<&str> = tried.iter().filter(|(t, _)| *t).map(|(_, m)| *m).collect();
                let (id, at) = (request.audit_id, request.received);
                auditing::failed_authentication(server.auditor.as_ref(), req, info, id, at, &attempted);
            }
            return Err(e);
        }
    };
    *audit =
        auditing::begin_authenticated(server.auditor.as_ref(), req, info, &user, request.audit_id, request.received);
    let asked = impersonation(req);
    let user = if asked.is_empty() {
        user
    } else {
        // Each impersonated attribute is authorized for the requester first, as kube does.
        for check in asked.checks()? {
            let decision =
                stages.authorize.ask(Authorize { user: user.clone(), request: check.clone() }, deadline).await?;
            if !decision.allowed {
                if let Some(a) = audit.as_mut() {
                    a.authorized(&decision);
                }
                return Err(refusal(&user, &check, &decision));
            }
        }
        let impersonated = asked.user();
        if let Some(a) = audit.as_mut() {
            a.impersonated(&impersonated);
        }
        impersonated
    };
    let class = server.apf.classify(&user, info);
    let exempt = class.exempt;
    *classification = Some(class.clone());
    // Held until the handler answers: dropping the grant gives its seats back, whatever ends
    // the request (a watch gives them back once it is set up, as kube's do).
    // An exempt request is never queued, but its seat counts in the exempt level's demand.
    let (_exempt_seat, _granted_seats) = if exempt {
        (Some(server.apf_exempt.hold(&class.priority_level)), None)
    } else {
        let work = crate::work::request_work(server, info, &query);
        let start = StartRequest { user: user.clone(), request: info.clone(), classification: class, work };
        (None, Some(stages.flow_control.ask(start, deadline).await?))
    };
    let decision = stages.authorize.ask(Authorize { user: user.clone(), request: info.clone() }, deadline).await?;
    if let Some(a) = audit.as_mut() {
        a.authorized(&decision);
    }
    if !decision.allowed {
        return Err(refusal(&user, info, &decision));
    }
    // A remote group version is its extension server's to answer (admission included).
    if let Some(service) = server.aggregator.route(req.path()) {
        let forwarded = crate::aggregator::proxy::forward(
            &server.aggregator,
            &service,
            req,
            payload,
            &user,
            deadline,
            request.audit_id,
        );
        return forwarded.await.map_err(ApiError::from);
    }
    let audit_body = audit.as_ref().map(|_| request.body);
    let ctx = RequestContext { req, info, query, user, deadline, server, audit_body };
    if info.is_resource_request { rest::serve(&ctx, payload).await } else { non_resource(&ctx).await }
}

/// A request no authorizer allowed: 403, or 500 when an authorizer failed (kube's filter
/// answers an authorizer's error with an internal error).
pub(crate) fn refusal(
    user: &UserInfo,
    info: &RequestInfo,
    decision: &apimachinery::messages::AuthorizationDecision,
) -> ApiError {
    if decision.error.is_empty() {
        auth::forbidden(user, info, &decision.reason)
    } else {
        ApiError::internal(&decision.error)
    }
}

fn json_ok(ctx: &RequestContext<'_>, v: &Value) -> HttpResponse {
    respond(StatusCode::OK, Output::JSON, v, ctx.pretty())
}

fn not_found_page() -> HttpResponse {
    HttpResponse::NotFound().content_type("text/plain; charset=utf-8").body("404 page not found\n")
}

fn resource_not_found() -> ApiError {
    ApiError::resource_not_found()
}

/// Everything that is not a resource: version, health, metrics, discovery, OpenAPI.
async fn non_resource(ctx: &RequestContext<'_>) -> Result<HttpResponse, ApiError> {
    let path = ctx.req.path().trim_end_matches('/');
    let method = ctx.req.method().as_str();
    if method != "GET" && method != "HEAD" {
        return Err(ApiError::method_not_allowed());
    }
    let accept = ctx.header("Accept");
    let catalogue = &ctx.server.catalogue;
    let aggregator = &ctx.server.aggregator;
    let remote = aggregator.registry();
    Ok(match path {
        "/version" => json_ok(ctx, &version()),
        "/debug/api_priority_and_fairness/dump_priority_levels" => HttpResponse::Ok()
            .content_type("text/plain; charset=utf-8")
            .body(ctx.server.apf_view.dump_priority_levels()),
        "/debug/api_priority_and_fairness/dump_queues" => {
            HttpResponse::Ok().content_type("text/plain; charset=utf-8").body(ctx.server.apf_view.dump_queues())
        }
        "/.well-known/openid-configuration" => crate::tokens::openid_configuration(ctx),
        "/openid/v1/jwks" => crate::tokens::jwks(ctx),
        "/metrics" => HttpResponse::Ok()
            .content_type("text/plain; version=0.0.4; charset=utf-8")
            .body(crate::prometheus::render(&ctx.server.metrics)),
        "/healthz" | "/livez" | "/readyz" => health::report(ctx, path.trim_start_matches('/'), None).await,
        p if p.starts_with("/healthz/") || p.starts_with("/livez/") || p.starts_with("/readyz/") => {
            let (endpoint, check) = p.trim_start_matches('/').split_once('/').expect("has a slash");
            health::report(ctx, endpoint, Some(check)).await
        }
        "/api" => match discovery::wants_aggregated(accept) {
            Some(media) => aggregated(media, discovery::aggregated_core(catalogue, media)),
            None => json_ok(ctx, &discovery::api_versions(&ctx.server.address)),
        },
        "/apis" => match discovery::wants_aggregated(accept) {
            Some(media) => aggregated(media, discovery::aggregated(catalogue, &remote, &aggregator.discovery, media)),
            None => json_ok(ctx, &discovery::api_group_list(catalogue, &remote)),
        },
        "/api/v1" => json_ok(ctx, &discovery::api_resource_list(catalogue, "", "v1").ok_or_else(resource_not_found)?),
        p if p.starts_with("/apis/") => {
            let parts: Vec<&str> = p.trim_start_matches("/apis/").split('/').collect();
            match parts.as_slice() {
                [group] => {
                    json_ok(ctx, &discovery::api_group(catalogue, &remote, group).ok_or_else(resource_not_found)?)
                }
                [group, version] => json_ok(
                    ctx,
                    &discovery::api_resource_list(catalogue, group, version).ok_or_else(resource_not_found)?,
                ),
                _ => return Err(resource_not_found()),
            }
        }
        p if p == "/openapi/v2" || p.starts_with("/openapi/v3") => {
            let asked = openapi::Asked { accept: ctx.header("Accept").unwrap_or(""), hash: ctx.query.get("hash") };
            openapi::serve(&ctx.server.openapi, p, asked)?
        }
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
