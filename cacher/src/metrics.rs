//! The names of the metrics this crate records: kube's names from
//! `k8s.io/apiserver/pkg/storage/cacher/metrics` and `k8s.io/apiserver/pkg/endpoints/metrics`
//! for the watch cache and the watch events it sends, and this server's own for its window.
//! `apiserver_terminated_watchers_total` is storage's ([`storage::metrics`]), as the storage
//! backends record it too.

// k8s.io/apiserver/pkg/storage/cacher/metrics

/// Events the watch cache received, by `resource` (counter).
pub const WATCH_CACHE_EVENTS_RECEIVED_TOTAL: &str = "apiserver_watch_cache_events_received_total";
/// The watch cache's current resource version, by `resource` (gauge).
pub const WATCH_CACHE_RESOURCE_VERSION: &str = "apiserver_watch_cache_resource_version";
/// Events in the watch cache's window, by `resource` (gauge).
pub const WATCH_CACHE_CAPACITY: &str = "apiserver_watch_cache_capacity";

// k8s.io/apiserver/pkg/endpoints/metrics

/// Watch events sent to clients, by `group`, `version` and `kind` (counter).
pub const WATCH_EVENTS_TOTAL: &str = "apiserver_watch_events_total";
/// Sizes of the watch events sent, in bytes, by `group`, `version` and `kind` (histogram);
/// the gateway's watch writer records it too.
pub const WATCH_EVENTS_SIZES: &str = "apiserver_watch_events_sizes";

// This server's own.

/// When the oldest event of the watch cache's window arrived (Unix seconds), by `resource` (gauge).
pub const WATCH_CACHE_WINDOW_OLDEST_EVENT_TIMESTAMP_SECONDS: &str =
    "apiserver_watch_cache_window_oldest_event_timestamp_seconds";
/// Watches refused as too old for the watch cache's window, by `resource` (counter).
pub const WATCH_CACHE_TOO_OLD_TOTAL: &str = "apiserver_watch_cache_too_old_total";
/// Reads the watch cache passed on to storage instead of answering from memory, by `resource` (counter).
pub const CACHE_LIST_FALLTHROUGH_TOTAL: &str = "apiserver_cache_list_fallthrough_total";
