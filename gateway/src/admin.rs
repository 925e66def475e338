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
//! server allows them (`--enable-fault-injection`).

use std::time::Duration;

use actix_web::{HttpResponse, web};
use actors::Deadline;
use actors::remote::Peer;
use apimachinery::options::Params;
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
/// all). 404 unless the server was started with `--enable-fault-injection`.
async fn faults(server: web::Data<ServerState>, req: actix_web::HttpRequest) -> HttpResponse {
    let Some(faults) = &server.faults else {
        return HttpResponse::NotFound().body("fault injection is off (--enable-fault-injection)\n");
    };
    let query = Params::new(
        web::Query::<Vec<(String, String)>>::from_query(req.query_string()).map(|q| q.into_inner()).unwrap_or_default(),
    );
    if let Some(delay) = query.get("storageWriteDelay") {
        match crate::config::parse_duration(delay) {
            Ok(d) => faults.set_write_delay(d),
            Err(e) => return HttpResponse::BadRequest().body(format!("storageWriteDelay: {e}\n")),
        }
    }
    HttpResponse::Ok().json(json!({ "storageWriteDelayMillis": faults.write_delay().as_millis() as u64 }))
}
