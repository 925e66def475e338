//! The admin endpoint, on its own loopback listener: `GET /actors` lists every actor with its
//! mailbox meters. It reads the shared counters only, so it answers even while a stage is
//! saturated.

use actix_web::{HttpResponse, web};
use serde_json::json;

use crate::server::Server;

/// Registers the admin routes.
pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/actors", web::get().to(actors)).route("/compact", web::post().to(compact));
}

async fn actors(server: web::Data<Server>) -> HttpResponse {
    let actors: Vec<_> = server
        .registry
        .snapshot()
        .into_iter()
        .map(|m| {
            let name = if m.resource.is_empty() { m.stage.clone() } else { format!("{}/{}", m.stage, m.resource) };
            let mut v = serde_json::to_value(&m).unwrap_or_default();
            v["name"] = name.into();
            v
        })
        .collect();
    HttpResponse::Ok().json(json!({ "uptimeSeconds": server.started.elapsed().as_secs(), "actors": actors }))
}

/// Compacts every backend's history up to its current revision now, so tests and operators can
/// force the 410 paths without waiting for the compaction interval.
async fn compact(server: web::Data<Server>) -> HttpResponse {
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
