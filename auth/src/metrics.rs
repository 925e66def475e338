//! The names of the metrics this crate records, all kube's: authentication's
//! (`k8s.io/apiserver/pkg/endpoints/filters`), authorization's and its webhook's
//! (`k8s.io/apiserver/pkg/authorization/metrics`, `plugin/pkg/authorizer/webhook/metrics`),
//! ServiceAccount tokens' (`pkg/serviceaccount`) and audit's (`k8s.io/apiserver/pkg/audit`).

// k8s.io/apiserver/pkg/endpoints/filters

/// Authentication attempts, by `result` (counter).
pub const AUTHENTICATION_ATTEMPTS: &str = "authentication_attempts";
/// Authentication duration in seconds, by `result` (histogram).
pub const AUTHENTICATION_DURATION_SECONDS: &str = "authentication_duration_seconds";

// k8s.io/apiserver/pkg/authorization/metrics and the authorization webhook's

/// Terminal authorization decisions, by authorizer `type` and `decision` (counter).
pub const AUTHORIZATION_DECISIONS_TOTAL: &str = "apiserver_authorization_decisions_total";
/// Round-trips to authorization webhooks, by `name` and `result` (counter).
pub const AUTHORIZATION_WEBHOOK_EVALUATIONS_TOTAL: &str = "apiserver_authorization_webhook_evaluations_total";
/// Latency of authorization webhook calls in seconds, by `name` and `result` (histogram).
pub const AUTHORIZATION_WEBHOOK_DURATION_SECONDS: &str = "apiserver_authorization_webhook_duration_seconds";
/// No-opinion answers given because an authorization webhook timed out or failed (counter).
pub const AUTHORIZATION_WEBHOOK_EVALUATIONS_FAIL_OPEN_TOTAL: &str =
    "apiserver_authorization_webhook_evaluations_fail_open_total";

// pkg/serviceaccount

/// Legacy (Secret-based) ServiceAccount tokens used (counter).
pub const SERVICEACCOUNT_LEGACY_TOKENS_TOTAL: &str = "serviceaccount_legacy_tokens_total";
/// Projected ServiceAccount tokens used past their stale point (counter).
pub const SERVICEACCOUNT_STALE_TOKENS_TOTAL: &str = "serviceaccount_stale_tokens_total";
/// Projected ServiceAccount tokens used while valid (counter).
pub const SERVICEACCOUNT_VALID_TOKENS_TOTAL: &str = "serviceaccount_valid_tokens_total";

// k8s.io/apiserver/pkg/audit

/// Audit events generated and sent to a backend (counter).
pub const AUDIT_EVENT_TOTAL: &str = "apiserver_audit_event_total";
/// Audit events that failed to be audited, by `plugin` (counter).
pub const AUDIT_ERROR_TOTAL: &str = "apiserver_audit_error_total";
/// Audit policy levels of requests, one per request, by `level` (counter).
pub const AUDIT_LEVEL_TOTAL: &str = "apiserver_audit_level_total";
/// Requests rejected for an error of the audit backend (counter).
pub const AUDIT_REQUESTS_REJECTED_TOTAL: &str = "apiserver_audit_requests_rejected_total";
