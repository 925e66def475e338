//! The admin endpoint, on its own loopback listener: `GET /` is a live page drawing the pipeline
//! of actors with their depth, throughput and p99, refreshed every second from `GET /actors`,
//! which lists every actor with its
//! mailbox meters (queued and in progress apart, the arbiter it runs on, what it does when
//! full). It reads the shared counters only, so it answers even while a stage is saturated.
//! `POST /compact` compacts storage now; `POST /faults` sets injected storage faults when the
//! server allows them (`--enable-fault-injection`).

use actix_web::{HttpResponse, web};
use apimachinery::options::Params;
use serde_json::json;

use crate::state::ServerState;

/// Registers the admin routes.
pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/", web::get().to(page))
        .route("/actors", web::get().to(actors))
        .route("/compact", web::post().to(compact))
        .route("/faults", web::post().to(faults));
}

/// The live page: static, drawing what `GET /actors` answers.
async fn page() -> HttpResponse {
    HttpResponse::Ok().content_type("text/html; charset=utf-8").body(include_str!("admin_page.html"))
}

async fn actors(server: web::Data<ServerState>) -> HttpResponse {
    let actors: Vec<_> = server
        .directory
        .snapshot()
        .into_iter()
        .map(|m| {
            let name = if m.resource.is_empty() { m.stage.clone() } else { format!("{}/{}", m.stage, m.resource) };
            let mut v = serde_json::to_value(&m).unwrap_or_default();
            v["name"] = name.into();
            v
        })
        .collect();
    let peers: Vec<_> = server.remotes.peers().iter().map(|p| p.health()).collect();
    HttpResponse::Ok().json(json!({
        "uptimeSeconds": server.started.elapsed().as_secs(),
        "actors": actors,
        "stageProcesses": peers,
    }))
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
