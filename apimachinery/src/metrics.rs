//! The names of kube's request metrics (`k8s.io/apiserver/pkg/endpoints/metrics`), beside the
//! request info they are labelled from. The gateway's handler chain and watch writer record
//! them; they are named here, below every crate, so that `diagnosis`, which reads
//! `apiserver_request_total`, takes the name from the same constant without depending on the
//! composition root.

/// Requests answered, by `verb`, `dry_run`, `group`, `version`, `resource`, `subresource`,
/// `scope`, `component` and `code` (counter).
pub const REQUEST_TOTAL: &str = "apiserver_request_total";
/// Response latency in seconds, by the labels of [`REQUEST_TOTAL`] but `code` (histogram).
pub const REQUEST_DURATION_SECONDS: &str = "apiserver_request_duration_seconds";
/// Requests the server terminated in self-defense (timed out), by the labels of [`REQUEST_TOTAL`] (counter).
pub const REQUEST_TERMINATIONS_TOTAL: &str = "apiserver_request_terminations_total";
/// Requests in flight, by `request_kind` (`readOnly` or `mutating`) (gauge).
pub const CURRENT_INFLIGHT_REQUESTS: &str = "apiserver_current_inflight_requests";
/// Long-running requests (watches) open, by `verb`, `group`, `version`, `resource`, `scope` and `component` (gauge).
pub const LONGRUNNING_REQUESTS: &str = "apiserver_longrunning_requests";
