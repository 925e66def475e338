//! The admin endpoint, on its own loopback listener: `GET /` is a live page drawing the pipeline
//! of actors with their depth, throughput and p99, refreshed every second from `GET /actors`,
//! which lists every actor of this process with its mailbox meters (queued and in progress
//! apart, the arbiter it runs on, what it does when full), and every stage process with its
//! health and its own actors (asked for with a short deadline, so a slow or dead one costs the
//! listing half a second at most). It reads the shared counters only, so it answers even while
//! a stage is saturated.
//! `GET /debug/axes` is the server's own diagnosis: which axis is at fault, the exclusion tree
//! walked with its evidence, and the order in which the axes degraded (the `diagnosis` crate).
//! `GET /debug/storage/revision` reads each backend's current revision directly (for etcd a
//! linearizable read), the reference that reads through the API are measured against.
//! `POST /compact` compacts storage now; `POST /faults` sets injected storage faults when the
//! server allows them (`--enable-fault-injection`): slow writes, slow or failing fsyncs, broken
//! storage watches.
//!
//! On loopback (the default) the endpoint is plain HTTP and open: whoever can reach it already
//! runs on the host. Bound to any other address it is served over TLS with the serving
//! certificate, and [`guard`] authenticates and authorizes every request as a non-resource
//! request (`get` on `/actors`, `create` on `/compact`), so only users RBAC allows (such as
//! `system:masters`) see or change it.

use std::time::Duration;

use actix_web::body::BoxBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::middleware::Next;
use actix_web::{HttpResponse, web};
use actors::Deadline;
use actors::remote::Peer;
use apimachinery::error::ApiError;
use apimachinery::messages::{Authenticate, Authorize};
use apimachinery::options::Params;
use apimachinery::request::parse_request_info;
use serde_json::{Value, json};

use crate::state::ServerState;

/// Registers the admin routes.
pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/", web::get().to(page))
        .route("/actors", web::get().to(actors))
        .route("/debug/axes", web::get().to(axes))
        .route("/debug/storage/revision", web::get().to(revision))
        .route("/compact", web::post().to(compact))
        .route("/faults", web::post().to(faults));
}

/// How long authenticating and authorizing an admin request may take.
const GUARD_DEADLINE: Duration = Duration::from_secs(5);

/// Lets a request through only when its credentials authenticate and the authorizers allow
/// its non-resource attributes (the method, lowercased, on the path): 401 or 403 otherwise,
/// as the serving port answers them.
pub async fn guard(req: ServiceRequest, next: Next<BoxBody>) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
    let Some(server) = req.app_data::<web::Data<ServerState>>().cloned() else {
        return Ok(req.into_response(HttpResponse::InternalServerError().finish()));
    };
    let checked = async {
        let deadline = Deadline::after(GUARD_DEADLINE);
        let creds = crate::chain::credentials(req.request());
        let user = server.stages.authenticate.ask(Authenticate(creds), deadline).await?.user;
        let info = parse_request_info(req.method().as_str(), req.path(), false);
        let decision =
            server.stages.authorize.ask(Authorize { user: user.clone(), request: info.clone() }, deadline).await?;
        if decision.allowed { Ok::<(), ApiError>(()) } else { Err(crate::chain::refusal(&user, &info, &decision)) }
    };
    match checked.await {
        Ok(()) => next.call(req).await.map(|r| r.map_into_boxed_body()),
        Err(e) => Ok(req.into_response(crate::negotiate::error_response(&e, None))),
    }
}

/// The live page: static, drawing what `GET /actors` answers.
async fn page() -> HttpResponse {
    HttpResponse::Ok().content_type("text/html; charset=utf-8").body(include_str!("admin_page.html"))
}

/// How long a stage process may take to list its actors.
const STAGE_ACTORS_DEADLINE: Duration = Duration::from_millis(500);

/// An actor's meters as listed, named `stage` or `stage/resource`.
fn listed(mut actor: Value) -> Value {
    let (stage, resource) =
        (actor["stage"].as_str().unwrap_or_default(), actor["resource"].as_str().unwrap_or_default());
    let name = if resource.is_empty() { stage.to_string() } else { format!("{stage}/{resource}") };
    actor["name"] = name.into();
    actor
}

/// A stage process's health, with its own actors when it answers in time.
async fn stage_process(peer: Peer) -> Value {
    let mut health = serde_json::to_value(peer.health()).unwrap_or_default();
    let answer = peer.post("/stages/actors", Vec::new(), Deadline::after(STAGE_ACTORS_DEADLINE)).await;
    let own = match answer {
        Ok((200, body)) => serde_json::from_slice::<Value>(&body).ok(),
        _ => None,
    };
    health["actors"] = match own.and_then(|o| o["actors"].as_array().cloned()) {
        Some(actors) => actors.into_iter().map(listed).collect(),
        None => Value::Null,
    };
    health
}

async fn actors(server: web::Data<ServerState>) -> HttpResponse {
    let actors: Vec<_> =
        server.directory.snapshot().into_iter().map(|m| listed(serde_json::to_value(&m).unwrap_or_default())).collect();
    let peers = futures_util::future::join_all(server.remotes.peers().iter().cloned().map(stage_process)).await;
    HttpResponse::Ok().json(json!({
        "uptimeSeconds": server.started.elapsed().as_secs(),
        "actors": actors,
        "stageProcesses": peers,
    }))
}

async fn axes(server: web::Data<ServerState>) -> HttpResponse {
    match &server.diagnosis {
        Some(d) => HttpResponse::Ok().json(d.verdict()),
        None => HttpResponse::NotFound().body("diagnosis is off (--diagnosis=false)\n"),
    }
}

async fn revision(server: web::Data<ServerState>) -> HttpResponse {
    let mut backends = Vec::new();
    for storage in server.router.backends() {
        match storage.current_revision().await {
            Ok(rev) => backends.push(json!({ "backend": storage.describe(), "revision": rev })),
            Err(e) => {
                return HttpResponse::ServiceUnavailable()
                    .json(json!({ "backend": storage.describe(), "error": e.to_string() }));
            }
        }
    }
    HttpResponse::Ok().json(json!({ "backends": backends }))
}

/// Compacts every backend's history up to its current revision now, so tests and operators can
/// force the 410 paths without waiting for the compaction interval.
async fn compact(server: web::Data<ServerState>) -> HttpResponse {
    let mut done = Vec::new();
    for storage in server.router.backends() {
        let result = async {
            let rev = storage.current_revision().await?;
            storage.compact(rev).await.map(|()| rev)
        }
        .await;
        match result {
            Ok(rev) => done.push(json!({ "backend": storage.describe(), "compactedRevision": rev })),
            Err(e) => {
                return HttpResponse::InternalServerError()
                    .json(json!({ "backend": storage.describe(), "error": e.to_string() }));
            }
        }
    }
    HttpResponse::Ok().json(json!({ "backends": done }))
}

/// `POST /faults?storageWriteDelay=3s`: every storage write waits that long first (`0s`: not at
/// all); `fsyncDelay=200ms`: the embedded store's writer waits that long before each fsync;
/// `fsyncFailures=1`: the next fsyncs fail (the store then refuses writes until restarted);
/// `breakWatches=true`: every storage watch ends with an error, so each cacher re-syncs. 404
/// unless the server was started with `--enable-fault-injection`.
async fn faults(server: web::Data<ServerState>, req: actix_web::HttpRequest) -> HttpResponse {
    let Some(faults) = &server.faults else {
        return HttpResponse::NotFound().body("fault injection is off (--enable-fault-injection)\n");
    };
    let query = Params::new(
        web::Query::<Vec<(String, String)>>::from_query(req.query_string()).map(|q| q.into_inner()).unwrap_or_default(),
    );
    let duration = |name: &str| {
        query.get(name).map(|d| apimachinery::gofmt::parse_flag_duration(d).map_err(|e| format!("{name}: {e}")))
    };
    let set = || -> Result<(), String> {
        if let Some(delay) = duration("storageWriteDelay") {
            faults.set_write_delay(delay?);
        }
        if let Some(delay) = duration("fsyncDelay") {
            faults.set_fsync_delay(delay?);
        }
        if let Some(count) = query.get("fsyncFailures") {
            faults.fail_fsyncs(count.parse().map_err(|e| format!("fsyncFailures: {e}"))?);
        }
        if query.flag("breakWatches") {
            faults.break_watches();
        }
        Ok(())
    };
    if let Err(e) = set() {
        return HttpResponse::BadRequest().body(format!("{e}\n"));
    }
    HttpResponse::Ok().json(json!({
        "storageWriteDelayMillis": faults.write_delay().as_millis() as u64,
        "fsyncDelayMillis": faults.fsync_delay().as_millis() as u64,
        "watchBreaks": faults.watch_breaks(),
    }))
}
