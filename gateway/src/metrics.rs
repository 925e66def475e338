//! The names of the metrics the gateway records that no lower crate names: the aggregator's, the
//! stored object counts, watch delivery and the diagnosis axes; and the
//! process metrics Go's Prometheus client adds to every Go binary, which [`crate::prometheus`]
//! renders at each scrape. kube's request metrics, which the handler chain records, are named
//! in [`apimachinery::metrics`].

// kube-aggregator

/// APIServices marked unavailable, by `name`: 1 unavailable, 0 available (gauge).
pub const AGGREGATOR_UNAVAILABLE_APISERVICE: &str = "aggregator_unavailable_apiservice";
/// Times an APIService was marked unavailable, by `name` and `reason` (counter).
pub const AGGREGATOR_UNAVAILABLE_APISERVICE_TOTAL: &str = "aggregator_unavailable_apiservice_total";

// k8s.io/apiserver/pkg/storage/etcd3/metrics, counted here over every store

/// Objects stored, by `resource` (gauge).
pub const STORAGE_OBJECTS: &str = "apiserver_storage_objects";

// This server's own.

/// Time from a change being stored to its watch event being written to a client, in seconds,
/// by `group`, `version` and `kind` (histogram).
pub const WATCH_DELIVERY_LATENCY_SECONDS: &str = "apiserver_watch_delivery_latency_seconds";
/// Health of each diagnosis `axis`: 0 healthy, 1 degraded, 2 failing (gauge).
pub const AXIS_HEALTH: &str = "apiserver_axis_health";

// Go's process collector (prometheus/client_golang), rendered from /proc at each scrape.

/// User and system CPU time spent, in seconds (counter).
pub const PROCESS_CPU_SECONDS_TOTAL: &str = "process_cpu_seconds_total";
/// Open file descriptors (gauge).
pub const PROCESS_OPEN_FDS: &str = "process_open_fds";
/// The soft limit on open file descriptors (gauge).
pub const PROCESS_MAX_FDS: &str = "process_max_fds";
/// Virtual memory size in bytes (gauge).
pub const PROCESS_VIRTUAL_MEMORY_BYTES: &str = "process_virtual_memory_bytes";
/// The soft limit on virtual memory, in bytes (gauge).
pub const PROCESS_VIRTUAL_MEMORY_MAX_BYTES: &str = "process_virtual_memory_max_bytes";
/// Resident memory size in bytes (gauge).
pub const PROCESS_RESIDENT_MEMORY_BYTES: &str = "process_resident_memory_bytes";
/// When the process started, in seconds since the Unix epoch (gauge).
pub const PROCESS_START_TIME_SECONDS: &str = "process_start_time_seconds";
