//! Watch responses: one JSON document per line (`{"type":"ADDED","object":{...}}`), or in
//! protobuf length-prefixed `WatchEvent` frames whose objects are the cached messages, streamed
//! until `timeoutSeconds` (or the server's randomised minimum request timeout) passes, the client
//! goes away, the cacher cuts the watcher off, or the server's shutdown ends it.

use std::sync::Arc;
use std::time::Duration;

use actix_web::HttpResponse;
use apimachinery::catalogue::{Converter, ResourceDef};
use apimachinery::encoded::EncodedObject;
use apimachinery::error::ApiError;
use apimachinery::messages::{Target, WatchEvent, WatchEventType, WatchObjects};
use apimachinery::options::{Params, WatchOptions};
use apimachinery::selector::fields::escape_value;
use apimachinery::table::WatchTableEncoder;
use bytes::Bytes;
use futures_util::StreamExt;
use serde_json::json;

use crate::context::RequestContext;
use crate::metrics::WATCH_DELIVERY_LATENCY_SECONDS;
use crate::negotiate::{Encoding, Offer, View, negotiate, partial_metadata, served, table_options};
use apimachinery::metrics::LONGRUNNING_REQUESTS;
use cacher::metrics::WATCH_EVENTS_SIZES;

/// Decrements the long-running gauge when the stream ends, however it ends.
struct LongRunning(metrics::Gauge);

impl Drop for LongRunning {
    fn drop(&mut self) {
        self.0.decrement(1.0);
    }
}

/// The watch's duration: the client's `timeoutSeconds`, else a random one in [min, 2*min) of
/// `--min-request-timeout`, spreading re-watches of many clients over time, as kube does.
fn duration(ctx: &RequestContext<'_>, options: &WatchOptions) -> Duration {
    if let Some(secs) = options.timeout_seconds {
        return Duration::from_secs(secs);
    }
    let min = ctx.server.options.min_request_timeout;
    let jitter = uuid::Uuid::new_v4().as_u128() as u64 % min.max(1);
    Duration::from_secs(min + jitter)
}

/// The query of a watch of one object (`.../configmaps/name?watch=1`): a collection watch
/// selecting the name.
fn name_selected(query: &Params, name: &str) -> Params {
    let by_name = format!("metadata.name={}", escape_value(name));
    let fields = match query.non_empty("fieldSelector") {
        Some(f) => format!("{f},{by_name}"),
        None => by_name,
    };
    let mut query = query.clone();
    query.set("fieldSelector", &fields);
    query
}

/// Serves a watch request.
pub async fn serve(
    ctx: &RequestContext<'_>,
    def: &Arc<ResourceDef>,
    mut target: Target,
) -> Result<HttpResponse, ApiError> {
    let output = negotiate(ctx.header("Accept"), Offer::reads(def, true))?;
    let mut options = if target.name.is_empty() {
        WatchOptions::parse(&ctx.query, def)?
    } else {
        let options = WatchOptions::parse(&name_selected(&ctx.query, &target.name), def)?;
        target.name.clear();
        options
    };
    let duration = duration(ctx, &options);
    options.timeout_seconds = Some(duration.as_secs());
    let receiver = ctx.server.stages.reads(def)?.watch.ask(WatchObjects { target, options }, ctx.deadline).await?;

    let (group, version, resource, kind) =
        (def.group.clone(), def.version.clone(), def.resource.clone(), def.kind.clone());
    let gauge = metrics::gauge!(LONGRUNNING_REQUESTS, "verb" => "WATCH", "group" => group.clone(), "version" => version.clone(), "resource" => resource, "scope" => "cluster", "component" => "apiserver");
    gauge.increment(1.0);
    let guard = LongRunning(gauge);
    let sizes = metrics::histogram!(WATCH_EVENTS_SIZES, "group" => group.clone(), "version" => version.clone(), "kind" => kind.clone());
    let latency =
        metrics::histogram!(WATCH_DELIVERY_LATENCY_SECONDS, "group" => group, "version" => version, "kind" => kind);
    let mut tables = if output.view == View::Table { Some(WatchTableEncoder::new(table_options(ctx)?)) } else { None };
    let plain = output.view == View::Object && def.stored_as.is_none();
    let shared_lines = plain && output.encoding == Encoding::Json;
    let cached_frames = plain && output.encoding == Encoding::Protobuf;
    let metadata = matches!(output.view, View::Metadata | View::MetadataList);
    let api_version = def.api_version();
    let deadline = tokio::time::sleep(duration);
    let def = def.clone();
    // Ended at its timeout, or when the server's shutdown ends every watch: the stream closes
    // cleanly and the client re-watches (elsewhere) from its last resourceVersion.
    let events = tokio_stream::wrappers::ReceiverStream::new(receiver.0)
        .take_until(deadline)
        .take_until(ctx.server.lifecycle.watches_end());
    let events = match def.strategy.converter().filter(|_| def.stored_as.is_some()) {
        Some(converter) => converted(events, converter, api_version.clone()).boxed_local(),
        None => events.boxed_local(),
    };
    let stream = events
        .map(move |event: WatchEvent| {
            let _keep = &guard;
            if let Some(received) = event.received {
                latency.record(received.elapsed().as_secs_f64());
            }
            let chunks = if shared_lines {
                // The line the cacher encoded once for every watcher of this event (and whose
                // size it recorded once for all of them), or, for initial events, built now.
                vec![event.into_line()]
            } else if let (true, Some(raw)) = (cached_frames, event.object.protobuf()) {
                // The object's message as encoded once, behind this event's frame head.
                let (api_version, kind) = match event.kind {
                    WatchEventType::Error => ("v1", "Status"),
                    _ => (api_version.as_str(), def.kind.as_str()),
                };
                let head = protobuf::watch_frame_head(event_name(event.kind), api_version, kind, raw.len());
                sizes.record((head.len() + raw.len() + protobuf::UNKNOWN_TAIL.len()) as f64);
                vec![Bytes::from(head), raw.clone(), Bytes::from_static(protobuf::UNKNOWN_TAIL)]
            } else {
                let object = served(&def, event.object.value());
                let object = match (&mut tables, event.kind) {
                    (
                        Some(enc),
                        WatchEventType::Added
                        | WatchEventType::Modified
                        | WatchEventType::Deleted
                        | WatchEventType::Error,
                    ) => enc.encode(def.printer(), &object, chrono::Utc::now()),
                    (
                        None,
                        WatchEventType::Added
                        | WatchEventType::Modified
                        | WatchEventType::Deleted
                        | WatchEventType::Bookmark,
                    ) if metadata => partial_metadata(&object),
                    _ => object,
                };
                let frame = if output.encoding == Encoding::Protobuf {
                    protobuf_frame(event.kind, &object, &api_version, &def.kind)
                } else {
                    let mut line = apimachinery::encoded::to_json(&json!({ "type": event.kind, "object": object }));
                    line.push(b'\n');
                    line
                };
                sizes.record(frame.len() as f64);
                vec![Bytes::from(frame)]
            };
            futures_util::stream::iter(chunks.into_iter().map(Ok::<Bytes, actix_web::Error>))
        })
        .flatten();
    Ok(HttpResponse::Ok()
        .content_type(output.content_type(true))
        .insert_header(("Transfer-Encoding", "chunked"))
        .streaming(stream))
}

/// Events whose objects went through the kind's conversion webhook (bookmarks and errors need
/// none). A failed conversion ends the watch with an ERROR event carrying its Status, as kube's
/// watcher sends the decode error and closes.
fn converted(
    events: impl futures_util::Stream<Item = WatchEvent> + 'static,
    converter: Arc<dyn Converter>,
    api_version: String,
) -> impl futures_util::Stream<Item = WatchEvent> + 'static {
    events
        .then(move |event| {
            let (converter, api_version) = (converter.clone(), api_version.clone());
            async move {
                if matches!(event.kind, WatchEventType::Bookmark | WatchEventType::Error) {
                    return (event, false);
                }
                match converter.convert(vec![event.object.value()], &api_version).await {
                    Ok(mut objects) => {
                        let object = objects.pop().unwrap_or_default();
                        (WatchEvent::new(event.kind, EncodedObject::encode(&object)), false)
                    }
                    Err(e) => (WatchEvent::new(WatchEventType::Error, EncodedObject::encode(&e.to_status())), true),
                }
            }
        })
        .scan(false, |ended, (event, failed)| {
            let next = (!*ended).then_some(event);
            *ended |= failed;
            futures_util::future::ready(next)
        })
}

fn event_name(kind: WatchEventType) -> &'static str {
    match kind {
        WatchEventType::Added => "ADDED",
        WatchEventType::Modified => "MODIFIED",
        WatchEventType::Deleted => "DELETED",
        WatchEventType::Bookmark => "BOOKMARK",
        WatchEventType::Error => "ERROR",
    }
}

/// A protobuf frame of an object encoded now; objects without their type (bookmarks) are of
/// the watched kind.
fn protobuf_frame(kind: WatchEventType, object: &serde_json::Value, api_version: &str, def_kind: &str) -> Vec<u8> {
    let own = |k: &str| object.get(k).and_then(serde_json::Value::as_str).filter(|s| !s.is_empty());
    let (api_version, def_kind) = (own("apiVersion").unwrap_or(api_version), own("kind").unwrap_or(def_kind));
    let raw = protobuf::encode_as(object, api_version, def_kind).unwrap_or_default();
    let mut frame = protobuf::watch_frame_head(event_name(kind), api_version, def_kind, raw.len());
    frame.extend_from_slice(&raw);
    frame.extend_from_slice(protobuf::UNKNOWN_TAIL);
    frame
}
