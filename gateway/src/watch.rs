//! Watch responses: one JSON document per line (`{"type":"ADDED","object":{...}}`), streamed
//! until `timeoutSeconds` (or the server's randomised minimum request timeout) passes, the client
//! goes away, or the cacher cuts the watcher off.

use std::time::Duration;

use actix_web::HttpResponse;
use actors::error::ApiError;
use actors::kinds::ResourceDef;
use actors::messages::{Target, WatchEvent, WatchEventType, WatchObjects};
use actors::table::WatchTableEncoder;
use bytes::Bytes;
use futures_util::StreamExt;
use serde_json::json;

use crate::convert;
use crate::http::RequestContext;
use crate::negotiate::{Output, negotiate};

/// Decrements the long-running gauge when the stream ends, however it ends.
struct LongRunning(metrics::Gauge);

impl Drop for LongRunning {
    fn drop(&mut self) {
        self.0.decrement(1.0);
    }
}

fn timeout(ctx: &RequestContext<'_>) -> Result<Duration, ApiError> {
    if let Some(t) = ctx.query.get("timeoutSeconds").filter(|t| !t.is_empty()) {
        let secs: u64 =
            t.parse().map_err(|_| ApiError::bad_request(format!("timeoutSeconds: Invalid value: \"{t}\"")))?;
        return Ok(Duration::from_secs(secs));
    }
    // Spread re-watches of many clients over time, as kube does: [min, 2*min).
    let min = ctx.server.options.min_request_timeout;
    let jitter = uuid::Uuid::new_v4().as_u128() as u64 % min.max(1);
    Ok(Duration::from_secs(min + jitter))
}

/// Serves a watch request.
pub async fn serve(
    ctx: &RequestContext<'_>,
    def: &'static ResourceDef,
    mut target: Target,
) -> Result<HttpResponse, ApiError> {
    let output = negotiate(ctx.header("Accept"), true)?;
    let duration = timeout(ctx)?;
    let mut selection = actors::messages::Selection {
        label_selector: ctx.query.get("labelSelector").unwrap_or("").to_string(),
        field_selector: ctx.query.get("fieldSelector").unwrap_or("").to_string(),
    };
    // A watch on one object (`.../configmaps/name?watch=1`) is a name-selected collection watch.
    if !target.name.is_empty() {
        let by_name = format!("metadata.name={}", target.name);
        selection.field_selector = if selection.field_selector.is_empty() {
            by_name
        } else {
            format!("{},{by_name}", selection.field_selector)
        };
        target.name.clear();
    }
    let send_initial_events = match ctx.query.get("sendInitialEvents") {
        Some("true") => Some(true),
        Some("false") => Some(false),
        _ => None,
    };
    let msg = WatchObjects {
        target,
        selection,
        consistency: actors::messages::ReadConsistency {
            resource_version: ctx.query.get("resourceVersion").filter(|s| !s.is_empty()).map(String::from),
            resource_version_match: ctx.query.get("resourceVersionMatch").filter(|s| !s.is_empty()).map(String::from),
        },
        allow_bookmarks: ctx.query.flag("allowWatchBookmarks"),
        send_initial_events,
        timeout_seconds: Some(duration.as_secs()),
    };
    let receiver = ctx.server.stages.reads(def).watch.ask(msg).await?;

    let gauge = metrics::gauge!("apiserver_longrunning_requests", "verb" => "WATCH", "group" => def.group, "version" => def.version, "resource" => def.resource, "scope" => "cluster", "component" => "apiserver");
    gauge.increment(1.0);
    let guard = LongRunning(gauge);
    let sizes = metrics::histogram!("apiserver_watch_events_sizes", "group" => def.group, "version" => def.version, "kind" => def.kind);
    let latency = metrics::histogram!("apiserver_watch_delivery_latency_seconds", "group" => def.group, "version" => def.version, "kind" => def.kind);
    let mut tables =
        if output == Output::Table { Some(WatchTableEncoder::new(crate::rest::table_options(ctx)?)) } else { None };
    let shared_lines = output == Output::Json && !convert::converts(def);
    let deadline = tokio::time::sleep(duration);
    let stream =
        tokio_stream::wrappers::ReceiverStream::new(receiver.0).take_until(deadline).map(move |event: WatchEvent| {
            let _keep = &guard;
            if let Some(received) = event.received {
                latency.record(received.elapsed().as_secs_f64());
            }
            let line = if shared_lines {
                // The line the cacher encoded once for every watcher of this event (and whose
                // size it recorded once for all of them), or, for initial events, built now.
                event.into_line()
            } else {
                let object = convert::from_storage(def, &event.object.value());
                let object = match (&mut tables, event.kind) {
                    (
                        Some(enc),
                        WatchEventType::Added
                        | WatchEventType::Modified
                        | WatchEventType::Deleted
                        | WatchEventType::Error,
                    ) => enc.encode(def, &object, chrono::Utc::now()),
                    _ => object,
                };
                let mut line = serde_json::to_vec(&json!({ "type": event.kind, "object": object })).unwrap_or_default();
                line.push(b'\n');
                sizes.record(line.len() as f64);
                Bytes::from(line)
            };
            Ok::<Bytes, actix_web::Error>(line)
        });
    Ok(HttpResponse::Ok()
        .content_type("application/json")
        .insert_header(("Transfer-Encoding", "chunked"))
        .streaming(stream))
}
