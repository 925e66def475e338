//! The names of the metrics this crate records: the stage meters' Prometheus series, each
//! labelled by `stage` and `resource`. They are this server's own, not kube's.

/// Messages put in a stage's mailbox (counter).
pub const STAGE_MAILBOX_ENQUEUED_TOTAL: &str = "apiserver_stage_mailbox_enqueued_total";
/// Messages a stage opened (counter).
pub const STAGE_MAILBOX_DEQUEUED_TOTAL: &str = "apiserver_stage_mailbox_dequeued_total";
/// Messages a stage answered or gave up (counter).
pub const STAGE_COMPLETED_TOTAL: &str = "apiserver_stage_completed_total";
/// Replies that were errors, plus requests refused for a full mailbox (counter).
pub const STAGE_ERRORS_TOTAL: &str = "apiserver_stage_errors_total";
/// Requests refused because the mailbox stayed full (counter).
pub const STAGE_REFUSED_TOTAL: &str = "apiserver_stage_refused_total";
/// Messages dropped because their deadline passed (counter).
pub const STAGE_EXPIRED_TOTAL: &str = "apiserver_stage_expired_total";
/// Messages whose caller went away while the stage handled them (counter).
pub const STAGE_CANCELLED_TOTAL: &str = "apiserver_stage_cancelled_total";
/// Messages waiting in a stage's mailbox (gauge).
pub const STAGE_MAILBOX_QUEUED: &str = "apiserver_stage_mailbox_queued";
/// Messages a stage opened and has not answered yet (gauge).
pub const STAGE_IN_PROGRESS: &str = "apiserver_stage_in_progress";
/// Queued and in-progress messages together: the mailbox slots taken (gauge).
pub const STAGE_MAILBOX_DEPTH: &str = "apiserver_stage_mailbox_depth";
/// Capacity of a stage's mailbox (gauge).
pub const STAGE_MAILBOX_CAPACITY: &str = "apiserver_stage_mailbox_capacity";
/// Time from a message entering a stage's mailbox to its reply, in seconds (histogram).
pub const STAGE_LATENCY_SECONDS: &str = "apiserver_stage_latency_seconds";
