//! `/healthz`, `/livez` and `/readyz`, answered as kube-apiserver answers them: `ok`, or with
//! `?verbose` one `[+]name ok` line per check; a failing check makes the endpoint 500.

use std::time::Duration;

use actix_web::HttpResponse;
use apimachinery::messages::{ListObjects, Target};
use apimachinery::options::{ListOptions, ReadAt};

use crate::context::RequestContext;

/// Runs the checks of `endpoint` (or only `only`) and renders the answer.
pub async fn report(ctx: &RequestContext<'_>, endpoint: &str, only: Option<&str>) -> HttpResponse {
    let mut checks: Vec<(&str, Result<(), String>)> = vec![("ping", Ok(())), ("log", Ok(()))];
    if endpoint != "livez" {
        let etcd = storage_reachable(ctx).await;
        checks.push(("etcd", etcd.clone()));
        if endpoint == "readyz" {
            checks.push(("etcd-readiness", etcd));
            checks.push(("informer-sync", cachers_synced(ctx).await));
            checks.push(("shutdown", shutdown(ctx)));
        }
    }
    let excluded: Vec<&str> = ctx.query.get("exclude").map(|e| e.split(',').collect()).unwrap_or_default();
    if let Some(name) = only {
        return match checks.iter().find(|(n, _)| *n == name) {
            Some((_, Ok(()))) => HttpResponse::Ok().content_type("text/plain; charset=utf-8").body("ok"),
            Some((n, Err(why))) => {
                tracing::warn!(check = n, "health check failed: {why}");
                HttpResponse::InternalServerError()
                    .content_type("text/plain; charset=utf-8")
                    .body(format!("internal server error: {n} check failed: {why}"))
            }
            None => HttpResponse::NotFound().content_type("text/plain; charset=utf-8").body("404 page not found\n"),
        };
    }
    let mut body = String::new();
    let mut failed = false;
    for (name, result) in &checks {
        if excluded.contains(name) {
            body.push_str(&format!("[+]{name} excluded: ok\n"));
            continue;
        }
        match result {
            Ok(()) => body.push_str(&format!("[+]{name} ok\n")),
            Err(why) => {
                failed = true;
                tracing::warn!(check = name, "health check failed: {why}");
                body.push_str(&format!("[-]{name} failed: reason withheld\n"));
            }
        }
    }
    let verbose = ctx.query.get("verbose").is_some();
    if failed {
        body.push_str(&format!("{endpoint} check failed\n"));
        return HttpResponse::InternalServerError().content_type("text/plain; charset=utf-8").body(body);
    }
    if verbose {
        body.push_str(&format!("{endpoint} check passed\n"));
        HttpResponse::Ok().content_type("text/plain; charset=utf-8").body(body)
    } else {
        HttpResponse::Ok().content_type("text/plain; charset=utf-8").body("ok")
    }
}

/// kube's `shutdown` readiness check: failing from `ShutdownInitiated` on, so load balancers
/// stop sending requests while the server still serves them (`--shutdown-delay-duration`).
fn shutdown(ctx: &RequestContext<'_>) -> Result<(), String> {
    if ctx.server.lifecycle.signals.shutdown_initiated.signaled() {
        Err("process is shutting down".into())
    } else {
        Ok(())
    }
}

/// Whether every cacher has listed its resource and follows the storage watch: a read at
/// `resourceVersion=0` answers only then. The caches of resources another
/// process stores are left out: a shard that is down makes its own resources answer 503, and
/// must not take every gateway out of its balancer with it.
async fn cachers_synced(ctx: &RequestContext<'_>) -> Result<(), String> {
    for (path, reads) in ctx.server.stages.caches.all() {
        if ctx.server.remotes.storage(&path).is_some() {
            continue;
        }
        let probe = ListObjects {
            target: Target { namespace: "readyz-probe".into(), ..Default::default() },
            options: ListOptions::everything(ReadAt::Any),
        };
        match tokio::time::timeout(Duration::from_secs(2), reads.reader.list(probe)).await {
            Ok(Ok(_)) => {}
            Ok(Err(e)) => return Err(format!("cacher of {path}: {}", e.message)),
            Err(_) => return Err(format!("cacher of {path} has not synced")),
        }
    }
    Ok(())
}

/// Whether every storage backend answers; the error names the one that does not.
async fn storage_reachable(ctx: &RequestContext<'_>) -> Result<(), String> {
    for storage in ctx.server.router.backends() {
        match tokio::time::timeout(Duration::from_secs(2), storage.current_revision()).await {
            Ok(Ok(_)) => {}
            Ok(Err(e)) => return Err(e.to_string()),
            Err(_) => return Err(format!("{} did not answer within 2s", storage.describe())),
        }
    }
    Ok(())
}
