//! The names of the metrics this crate records, all kube's, from
//! `k8s.io/apiserver/pkg/util/flowcontrol/metrics`. Most are labelled by `priority_level`, the
//! request ones by `flow_schema` too.

/// Requests executing, by `priority_level` and `flow_schema` (gauge).
pub const CURRENT_EXECUTING_REQUESTS: &str = "apiserver_flowcontrol_current_executing_requests";
/// Seats occupied by executing requests, by `priority_level` (gauge).
pub const CURRENT_EXECUTING_SEATS: &str = "apiserver_flowcontrol_current_executing_seats";
/// Requests waiting in queues, by `priority_level` and `flow_schema` (gauge).
pub const CURRENT_INQUEUE_REQUESTS: &str = "apiserver_flowcontrol_current_inqueue_requests";
/// Seats of the requests waiting in queues, by `priority_level` (gauge).
pub const CURRENT_INQUEUE_SEATS: &str = "apiserver_flowcontrol_current_inqueue_seats";
/// Seats currently available to a priority level, after borrowing (gauge).
pub const CURRENT_LIMIT_SEATS: &str = "apiserver_flowcontrol_current_limit_seats";
/// Requests dispatched to execution, by `priority_level` and `flow_schema` (counter).
pub const DISPATCHED_REQUESTS_TOTAL: &str = "apiserver_flowcontrol_dispatched_requests_total";
/// Requests rejected, by `priority_level`, `flow_schema` and `reason` (counter).
pub const REJECTED_REQUESTS_TOTAL: &str = "apiserver_flowcontrol_rejected_requests_total";
/// Nominal seats configured for a priority level (gauge).
pub const NOMINAL_LIMIT_SEATS: &str = "apiserver_flowcontrol_nominal_limit_seats";
/// Lower bound on the seats a priority level may have after lending (gauge).
pub const LOWER_LIMIT_SEATS: &str = "apiserver_flowcontrol_lower_limit_seats";
/// Upper bound on the seats a priority level may have after borrowing (gauge).
pub const UPPER_LIMIT_SEATS: &str = "apiserver_flowcontrol_upper_limit_seats";
/// Nominal seats of a priority level, kube's older name for it (gauge).
pub const REQUEST_CONCURRENCY_LIMIT: &str = "apiserver_flowcontrol_request_concurrency_limit";
/// Time requests spent executing, in seconds (histogram).
pub const REQUEST_EXECUTION_SECONDS: &str = "apiserver_flowcontrol_request_execution_seconds";
/// Time requests spent waiting in their queue, in seconds (histogram).
pub const REQUEST_WAIT_DURATION_SECONDS: &str = "apiserver_flowcontrol_request_wait_duration_seconds";
