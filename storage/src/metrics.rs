//! The names of the metrics this crate records. Kube's keep kube's names: those of
//! `k8s.io/apiserver/pkg/storage/etcd3/metrics` and of the cacher's terminated watchers, which
//! both backends' watches record as the cacher would; the embedded store's batch size is this
//! server's own.

// k8s.io/apiserver/pkg/storage/etcd3/metrics

/// Storage request latency in seconds, by `operation` and `type` (histogram).
pub const ETCD_REQUEST_DURATION_SECONDS: &str = "etcd_request_duration_seconds";
/// Storage requests, by `operation` and `type` (counter).
pub const ETCD_REQUESTS_TOTAL: &str = "etcd_requests_total";
/// Storage requests that failed, by `operation` and `type` (counter).
pub const ETCD_REQUEST_ERRORS_TOTAL: &str = "etcd_request_errors_total";
/// Size of the storage database file in bytes, by `endpoint` (gauge).
pub const STORAGE_DB_TOTAL_SIZE_IN_BYTES: &str = "apiserver_storage_db_total_size_in_bytes";

// k8s.io/apiserver/pkg/storage/cacher/metrics

/// Watchers closed for being unresponsive, by `resource` (counter); the cacher records it too.
pub const TERMINATED_WATCHERS_TOTAL: &str = "apiserver_terminated_watchers_total";

// This server's own.

/// Writes committed together by one fsync of the embedded store (histogram).
pub const STORAGE_EMBEDDED_BATCH_SIZE: &str = "apiserver_storage_embedded_batch_size";
