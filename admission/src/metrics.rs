//! The names of the metrics this crate records, all kube's:
//! `k8s.io/apiserver/pkg/admission/metrics` and the ValidatingAdmissionPolicy plugin's.

// k8s.io/apiserver/pkg/admission/metrics

/// Latency of each admission step (validate or admit) in seconds (histogram).
pub const ADMISSION_STEP_ADMISSION_DURATION_SECONDS: &str = "apiserver_admission_step_admission_duration_seconds";
/// Latency of each admission controller in seconds, by `name` (histogram).
pub const ADMISSION_CONTROLLER_ADMISSION_DURATION_SECONDS: &str =
    "apiserver_admission_controller_admission_duration_seconds";
/// Latency of each admission webhook call in seconds, by `name` (histogram).
pub const ADMISSION_WEBHOOK_ADMISSION_DURATION_SECONDS: &str = "apiserver_admission_webhook_admission_duration_seconds";
/// Admission webhook calls, by `name`, `rejected` and `code` (counter).
pub const ADMISSION_WEBHOOK_REQUEST_TOTAL: &str = "apiserver_admission_webhook_request_total";
/// Admission webhook rejections and failed calls, by `name` and `error_type` (counter).
pub const ADMISSION_WEBHOOK_REJECTION_COUNT: &str = "apiserver_admission_webhook_rejection_count";

// k8s.io/apiserver/pkg/admission/plugin/policy/validating/metrics

/// ValidatingAdmissionPolicy checks, by `policy`, `policy_binding` and `enforcement_action` (counter).
pub const VALIDATING_ADMISSION_POLICY_CHECK_TOTAL: &str = "apiserver_validating_admission_policy_check_total";
/// Latency of ValidatingAdmissionPolicy checks in seconds (histogram).
pub const VALIDATING_ADMISSION_POLICY_CHECK_DURATION_SECONDS: &str =
    "apiserver_validating_admission_policy_check_duration_seconds";
