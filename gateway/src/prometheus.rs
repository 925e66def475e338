//! What `/metrics` serves besides the recorded values: kube's help text for each of kube's
//! metric names (with kube's stability prefix, `[STABLE] `, `[BETA] `, `[ALPHA] `), a help text
//! for each of this server's own, and the process metrics Go's Prometheus client adds to every
//! Go binary (`process_cpu_seconds_total`, `process_resident_memory_bytes`, ...), which
//! dashboards and alerts built for kube-apiserver read.
//!
//! The help texts are given to the recorder once, when it is installed ([`describe_all`]);
//! metrics-exporter-prometheus prints a `# HELP` line for each described metric that has a
//! value. Process metrics are read from `/proc/self` at each scrape ([`render`]), as Go's
//! collector reads them; where there is no `/proc`, there are none.

use std::fmt::Write;

use metrics_exporter_prometheus::PrometheusHandle;

/// The kind of a metric, which decides how it is described.
#[derive(Clone, Copy)]
enum Kind {
    Counter,
    Gauge,
    Histogram,
}

use Kind::{Counter, Gauge, Histogram};

/// Every metric the server records: its kind, its name, and its help text (kube's, word for
/// word and with its stability prefix, for kube's names).
const HELP: &[(Kind, &str, &str)] = &[
    // k8s.io/apiserver/pkg/endpoints/metrics
    (
        Counter,
        apimachinery::metrics::REQUEST_TOTAL,
        "[STABLE] Counter of apiserver requests broken out for each verb, dry run value, group, version, resource, \
         scope, component, and HTTP response code.",
    ),
    (
        Histogram,
        apimachinery::metrics::REQUEST_DURATION_SECONDS,
        "[STABLE] Response latency distribution in seconds for each verb, dry run value, group, version, resource, \
         subresource, scope and component.",
    ),
    (
        Gauge,
        apimachinery::metrics::CURRENT_INFLIGHT_REQUESTS,
        "[STABLE] Maximal number of currently used inflight request limit of this apiserver per request kind in \
         last second.",
    ),
    (
        Gauge,
        apimachinery::metrics::LONGRUNNING_REQUESTS,
        "[STABLE] Gauge of all active long-running apiserver requests broken out by verb, group, version, resource, \
         scope and component. Not all requests are tracked this way.",
    ),
    (
        Counter,
        apimachinery::metrics::REQUEST_TERMINATIONS_TOTAL,
        "[ALPHA] Number of requests which apiserver terminated in self-defense.",
    ),
    (Counter, cacher::metrics::WATCH_EVENTS_TOTAL, "[ALPHA] Number of events sent in watch clients"),
    (Histogram, cacher::metrics::WATCH_EVENTS_SIZES, "[ALPHA] Watch event size distribution in bytes"),
    // k8s.io/apiserver/pkg/endpoints/filters
    (Counter, auth::metrics::AUTHENTICATION_ATTEMPTS, "[ALPHA] Counter of authenticated attempts."),
    (
        Histogram,
        auth::metrics::AUTHENTICATION_DURATION_SECONDS,
        "[ALPHA] Authentication duration in seconds broken out by result.",
    ),
    // k8s.io/apiserver/pkg/authorization/metrics and the authorization webhook's
    (
        Counter,
        auth::metrics::AUTHORIZATION_DECISIONS_TOTAL,
        "[ALPHA] Total number of terminal decisions made by an authorizer split by authorizer type, name, and \
         decision.",
    ),
    (Histogram, auth::metrics::AUTHORIZATION_WEBHOOK_DURATION_SECONDS, "[ALPHA] Request latency in seconds."),
    (Counter, auth::metrics::AUTHORIZATION_WEBHOOK_EVALUATIONS_TOTAL, "[ALPHA] Round-trips to authorization webhooks."),
    (
        Counter,
        auth::metrics::AUTHORIZATION_WEBHOOK_EVALUATIONS_FAIL_OPEN_TOTAL,
        "[ALPHA] NoOpinion results due to webhook timeout or error.",
    ),
    // k8s.io/apiserver/pkg/admission/metrics and the policy plugin's
    (
        Histogram,
        admission::metrics::ADMISSION_CONTROLLER_ADMISSION_DURATION_SECONDS,
        "[STABLE] Admission controller latency histogram in seconds, identified by name and broken out for each \
         operation and API resource and type (validate or admit).",
    ),
    (
        Histogram,
        admission::metrics::ADMISSION_STEP_ADMISSION_DURATION_SECONDS,
        "[STABLE] Admission sub-step latency histogram in seconds, broken out for each operation and API resource \
         and step type (validate or admit).",
    ),
    (
        Histogram,
        admission::metrics::ADMISSION_WEBHOOK_ADMISSION_DURATION_SECONDS,
        "[STABLE] Admission webhook latency histogram in seconds, identified by name and broken out for each \
         operation and API resource and type (validate or admit).",
    ),
    (
        Counter,
        admission::metrics::ADMISSION_WEBHOOK_REJECTION_COUNT,
        "[ALPHA] Admission webhook rejection count, identified by name and broken out for each admission type \
         (validating or admit) and operation. Additional labels specify an error type (calling_webhook_error or \
         apiserver_internal_error if an error occurred; no_error otherwise) and optionally a non-zero rejection \
         code if the webhook rejects the request with an HTTP status code (honored by the apiserver when the code \
         is greater or equal to 400). Codes greater than 600 are truncated to 600, to keep the metrics cardinality \
         bounded.",
    ),
    (
        Counter,
        admission::metrics::ADMISSION_WEBHOOK_REQUEST_TOTAL,
        "[ALPHA] Admission webhook request total, identified by name and broken out for each admission type \
         (validating or admit) and operation. Additional labels specify whether the request was rejected or not \
         and an HTTP status code. Codes greater than 600 are truncated to 600, to keep the metrics cardinality \
         bounded.",
    ),
    (
        Histogram,
        admission::metrics::VALIDATING_ADMISSION_POLICY_CHECK_DURATION_SECONDS,
        "[BETA] Validation admission latency for individual validation expressions in seconds, labeled by policy \
         and further including binding and enforcement action taken.",
    ),
    (
        Counter,
        admission::metrics::VALIDATING_ADMISSION_POLICY_CHECK_TOTAL,
        "[BETA] Validation admission policy check total, labeled by policy and further identified by binding and \
         enforcement action taken.",
    ),
    // k8s.io/apiserver/pkg/audit
    (
        Counter,
        auth::metrics::AUDIT_EVENT_TOTAL,
        "[ALPHA] Counter of audit events generated and sent to the audit backend.",
    ),
    (
        Counter,
        auth::metrics::AUDIT_ERROR_TOTAL,
        "[ALPHA] Counter of audit events that failed to be audited properly. Plugin identifies the plugin affected \
         by the error.",
    ),
    (Counter, auth::metrics::AUDIT_LEVEL_TOTAL, "[ALPHA] Counter of policy levels for audit events (1 per request)."),
    (
        Counter,
        auth::metrics::AUDIT_REQUESTS_REJECTED_TOTAL,
        "[ALPHA] Counter of apiserver requests rejected due to an error in audit logging backend.",
    ),
    // k8s.io/apiserver/pkg/util/flowcontrol/metrics
    (
        Gauge,
        flowcontrol::metrics::CURRENT_EXECUTING_REQUESTS,
        "[BETA] Number of requests in initial (for a WATCH) or any (for a non-WATCH) execution stage in the API \
         Priority and Fairness subsystem",
    ),
    (
        Gauge,
        flowcontrol::metrics::CURRENT_EXECUTING_SEATS,
        "[BETA] Concurrency (number of seats) occupied by the currently executing (initial stage for a WATCH, any \
         stage otherwise) requests in the API Priority and Fairness subsystem",
    ),
    (
        Gauge,
        flowcontrol::metrics::CURRENT_INQUEUE_REQUESTS,
        "[BETA] Number of requests currently pending in queues of the API Priority and Fairness subsystem",
    ),
    (
        Gauge,
        flowcontrol::metrics::CURRENT_INQUEUE_SEATS,
        "[ALPHA] Number of seats currently pending in queues of the API Priority and Fairness subsystem",
    ),
    (
        Gauge,
        flowcontrol::metrics::CURRENT_LIMIT_SEATS,
        "[ALPHA] current derived number of execution seats available to each priority level",
    ),
    (
        Counter,
        flowcontrol::metrics::DISPATCHED_REQUESTS_TOTAL,
        "[BETA] Number of requests executed by API Priority and Fairness subsystem",
    ),
    (
        Counter,
        flowcontrol::metrics::REJECTED_REQUESTS_TOTAL,
        "[BETA] Number of requests rejected by API Priority and Fairness subsystem",
    ),
    (
        Gauge,
        flowcontrol::metrics::NOMINAL_LIMIT_SEATS,
        "[BETA] Nominal number of execution seats configured for each priority level",
    ),
    (
        Gauge,
        flowcontrol::metrics::LOWER_LIMIT_SEATS,
        "[ALPHA] Configured lower bound on number of execution seats available to each priority level",
    ),
    (
        Gauge,
        flowcontrol::metrics::UPPER_LIMIT_SEATS,
        "[ALPHA] Configured upper bound on number of execution seats available to each priority level",
    ),
    (
        Gauge,
        flowcontrol::metrics::REQUEST_CONCURRENCY_LIMIT,
        "[ALPHA] Nominal number of execution seats configured for each priority level",
    ),
    (
        Histogram,
        flowcontrol::metrics::REQUEST_EXECUTION_SECONDS,
        "[ALPHA] Duration of initial stage (for a WATCH) or any (for a non-WATCH) stage of request execution in the \
         API Priority and Fairness subsystem",
    ),
    (
        Histogram,
        flowcontrol::metrics::REQUEST_WAIT_DURATION_SECONDS,
        "[BETA] Length of time a request spent waiting in its queue",
    ),
    // k8s.io/apiserver/pkg/storage/etcd3/metrics
    (
        Histogram,
        storage::metrics::ETCD_REQUEST_DURATION_SECONDS,
        "[ALPHA] Etcd request latency in seconds for each operation and object type.",
    ),
    (Counter, storage::metrics::ETCD_REQUESTS_TOTAL, "[ALPHA] Etcd request counts for each operation and object type."),
    (
        Counter,
        storage::metrics::ETCD_REQUEST_ERRORS_TOTAL,
        "[ALPHA] Etcd failed request counts for each operation and object type.",
    ),
    (
        Gauge,
        crate::metrics::STORAGE_OBJECTS,
        "[STABLE] Number of stored objects at the time of last check split by kind. In case of a fetching error, \
         the value will be -1.",
    ),
    (
        Gauge,
        storage::metrics::STORAGE_DB_TOTAL_SIZE_IN_BYTES,
        "[ALPHA] Total size of the storage database file physically allocated in bytes.",
    ),
    // k8s.io/apiserver/pkg/storage/cacher/metrics
    (
        Counter,
        cacher::metrics::WATCH_CACHE_EVENTS_RECEIVED_TOTAL,
        "[ALPHA] Counter of events received in watch cache broken by resource type.",
    ),
    (
        Gauge,
        cacher::metrics::WATCH_CACHE_RESOURCE_VERSION,
        "[ALPHA] Current resource version of watch cache broken by resource type.",
    ),
    (Gauge, cacher::metrics::WATCH_CACHE_CAPACITY, "[ALPHA] Total capacity of watch cache broken by resource type."),
    (
        Counter,
        storage::metrics::TERMINATED_WATCHERS_TOTAL,
        "[ALPHA] Counter of watchers closed due to unresponsiveness broken by resource type.",
    ),
    // kube-aggregator, kube-controller-manager's leader election, pkg/serviceaccount
    (
        Gauge,
        crate::metrics::AGGREGATOR_UNAVAILABLE_APISERVICE,
        "[ALPHA] Gauge of APIServices which are marked as unavailable broken down by APIService name.",
    ),
    (
        Counter,
        crate::metrics::AGGREGATOR_UNAVAILABLE_APISERVICE_TOTAL,
        "[ALPHA] Counter of APIServices which are marked as unavailable broken down by APIService name and reason.",
    ),
    (
        Gauge,
        controllers::metrics::LEADER_ELECTION_MASTER_STATUS,
        "[ALPHA] Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates \
         master. 'name' is the string used to identify the lease. Please make sure to group by name.",
    ),
    (
        Counter,
        auth::metrics::SERVICEACCOUNT_LEGACY_TOKENS_TOTAL,
        "[ALPHA] Cumulative legacy service account tokens used",
    ),
    (
        Counter,
        auth::metrics::SERVICEACCOUNT_STALE_TOKENS_TOTAL,
        "[ALPHA] Cumulative stale projected service account tokens used",
    ),
    (
        Counter,
        auth::metrics::SERVICEACCOUNT_VALID_TOKENS_TOTAL,
        "[ALPHA] Cumulative valid projected service account tokens used",
    ),
    // This server's own.
    (
        Gauge,
        cacher::metrics::WATCH_CACHE_WINDOW_OLDEST_EVENT_TIMESTAMP_SECONDS,
        "When the oldest event in the watch cache window arrived (Unix seconds), by resource: a watcher away for \
         less than now minus this resumes from the window.",
    ),
    (
        Counter,
        cacher::metrics::WATCH_CACHE_TOO_OLD_TOTAL,
        "Watches refused 410 Expired because they start before the watch cache window, by resource.",
    ),
    (
        Counter,
        cacher::metrics::CACHE_LIST_FALLTHROUGH_TOTAL,
        "Reads the watch cache passed on to storage instead of answering from memory, by resource.",
    ),
    (
        Histogram,
        crate::metrics::WATCH_DELIVERY_LATENCY_SECONDS,
        "Time from a change being stored to its watch event being written to a client, by group, version and kind.",
    ),
    (
        Histogram,
        storage::metrics::STORAGE_EMBEDDED_BATCH_SIZE,
        "Writes committed together by one fsync of the embedded store.",
    ),
    (Gauge, crate::metrics::AXIS_HEALTH, "Health of each diagnosis axis: 0 healthy, 1 degraded, 2 failing."),
    (
        Counter,
        actors::metrics::STAGE_MAILBOX_ENQUEUED_TOTAL,
        "Messages put in a stage's mailbox, by stage and resource.",
    ),
    (Counter, actors::metrics::STAGE_MAILBOX_DEQUEUED_TOTAL, "Messages a stage opened, by stage and resource."),
    (Counter, actors::metrics::STAGE_COMPLETED_TOTAL, "Messages a stage answered or gave up, by stage and resource."),
    (
        Counter,
        actors::metrics::STAGE_ERRORS_TOTAL,
        "Replies of a stage that were errors, plus requests refused for a full mailbox, by stage and resource.",
    ),
    (
        Counter,
        actors::metrics::STAGE_REFUSED_TOTAL,
        "Requests refused because a stage's mailbox stayed full, by stage and resource.",
    ),
    (
        Counter,
        actors::metrics::STAGE_EXPIRED_TOTAL,
        "Messages a stage dropped because their deadline passed, by stage and resource.",
    ),
    (
        Counter,
        actors::metrics::STAGE_CANCELLED_TOTAL,
        "Messages whose caller went away while a stage handled them, by stage and resource.",
    ),
    (Gauge, actors::metrics::STAGE_MAILBOX_QUEUED, "Messages waiting in a stage's mailbox, by stage and resource."),
    (
        Gauge,
        actors::metrics::STAGE_IN_PROGRESS,
        "Messages a stage opened and has not answered yet, by stage and resource.",
    ),
    (
        Gauge,
        actors::metrics::STAGE_MAILBOX_DEPTH,
        "Messages queued plus in progress in a stage, which its mailbox capacity bounds, by stage and resource.",
    ),
    (Gauge, actors::metrics::STAGE_MAILBOX_CAPACITY, "Capacity of a stage's mailbox, by stage and resource."),
    (
        Histogram,
        actors::metrics::STAGE_LATENCY_SECONDS,
        "Time from a message entering a stage's mailbox to its reply, by stage and resource.",
    ),
];

/// Gives the installed recorder the help text of every metric the server records.
pub fn describe_all() {
    for &(kind, name, help) in HELP {
        match kind {
            Counter => metrics::describe_counter!(name, help),
            Gauge => metrics::describe_gauge!(name, help),
            Histogram => metrics::describe_histogram!(name, help),
        }
    }
}

/// `/metrics`: the recorded metrics, then the process metrics.
pub fn render(handle: &PrometheusHandle) -> String {
    let mut text = handle.render();
    if let Some(process) = ProcessStats::read() {
        process.write(&mut text);
    }
    text
}

/// Clock ticks per second of `/proc`'s times, as Go's procfs assumes them (`USER_HZ`, 100 on
/// every Linux architecture Go runs on).
const TICKS_PER_SECOND: f64 = 100.0;

/// What Go's process collector reports, read from `/proc`.
#[derive(Debug, PartialEq)]
struct ProcessStats {
    cpu_seconds: f64,
    resident_bytes: f64,
    virtual_bytes: f64,
    start_time_seconds: f64,
    open_fds: f64,
    max_fds: f64,
    max_virtual_bytes: f64,
}

impl ProcessStats {
    /// This process's, or `None` without a readable `/proc`.
    fn read() -> Option<ProcessStats> {
        let read = |path: &str| std::fs::read_to_string(path).ok();
        let boot_time = boot_time(&read("/proc/stat")?)?;
        let mut stats =
            from_proc(&read("/proc/self/stat")?, &read("/proc/self/status")?, &read("/proc/self/limits")?, boot_time)?;
        stats.open_fds = std::fs::read_dir("/proc/self/fd").ok()?.count() as f64;
        Some(stats)
    }

    /// The metrics in the exposition format, with the help texts of Go's client.
    fn write(&self, out: &mut String) {
        let metrics = [
            (
                crate::metrics::PROCESS_CPU_SECONDS_TOTAL,
                "counter",
                "Total user and system CPU time spent in seconds.",
                self.cpu_seconds,
            ),
            (crate::metrics::PROCESS_OPEN_FDS, "gauge", "Number of open file descriptors.", self.open_fds),
            (crate::metrics::PROCESS_MAX_FDS, "gauge", "Maximum number of open file descriptors.", self.max_fds),
            (
                crate::metrics::PROCESS_VIRTUAL_MEMORY_BYTES,
                "gauge",
                "Virtual memory size in bytes.",
                self.virtual_bytes,
            ),
            (
                crate::metrics::PROCESS_VIRTUAL_MEMORY_MAX_BYTES,
                "gauge",
                "Maximum amount of virtual memory available in bytes.",
                self.max_virtual_bytes,
            ),
            (
                crate::metrics::PROCESS_RESIDENT_MEMORY_BYTES,
                "gauge",
                "Resident memory size in bytes.",
                self.resident_bytes,
            ),
            (
                crate::metrics::PROCESS_START_TIME_SECONDS,
                "gauge",
                "Start time of the process since unix epoch in seconds.",
                self.start_time_seconds,
            ),
        ];
        for (name, kind, help, value) in metrics {
            // Writing to a String cannot fail.
            let _ = write!(out, "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {value}\n");
        }
    }
}

/// The boot time (Unix seconds) from `/proc/stat`'s `btime` line.
fn boot_time(proc_stat: &str) -> Option<f64> {
    proc_stat.lines().find_map(|l| l.strip_prefix("btime ")).and_then(|t| t.trim().parse().ok())
}

/// The stats from `/proc/self/stat`, `/proc/self/status` and `/proc/self/limits`, with open
/// descriptors left at 0.
fn from_proc(stat: &str, status: &str, limits: &str, boot_time: f64) -> Option<ProcessStats> {
    // The command name, in parentheses, may hold spaces and parentheses: fields start after
    // the last `)`, with the state (field 3) first.
    let fields: Vec<&str> = stat.get(stat.rfind(')')? + 1..)?.split_whitespace().collect();
    let field = |n: usize| fields.get(n - 3).and_then(|f| f.parse::<f64>().ok());
    let kib = |key: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
    };
    Some(ProcessStats {
        cpu_seconds: (field(14)? + field(15)?) / TICKS_PER_SECOND,
        start_time_seconds: boot_time + field(22)? / TICKS_PER_SECOND,
        virtual_bytes: field(23)?,
        resident_bytes: kib("VmRSS:")? * 1024.0,
        open_fds: 0.0,
        max_fds: soft_limit(limits, "Max open files")?,
        max_virtual_bytes: soft_limit(limits, "Max address space")?,
    })
}

/// A soft limit from `/proc/self/limits`; `unlimited` reads as Go's procfs reads it, the
/// largest uint64.
fn soft_limit(limits: &str, name: &str) -> Option<f64> {
    let value = limits.lines().find_map(|l| l.strip_prefix(name))?.split_whitespace().next()?;
    if value == "unlimited" { Some(u64::MAX as f64) } else { value.parse().ok() }
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::time::{SystemTime, UNIX_EPOCH};

    use super::*;

    fn now_seconds() -> f64 {
        SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs_f64()
    }

    const STAT: &str = "4242 (api server (x)) S 1 4242 4242 0 -1 4194560 5000 0 0 0 250 130 0 0 20 0 9 0 \
                        12000 2147483648 7000 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0";
    const STATUS: &str = "Name:\tapiserver\nVmSize:\t 2097152 kB\nVmRSS:\t   28000 kB\nThreads:\t9\n";
    const LIMITS: &str = "Limit                     Soft Limit           Hard Limit           Units     \n\
                          Max open files            20000                524288               files     \n\
                          Max address space         unlimited            unlimited            bytes     \n";

    #[test]
    fn process_stats_are_read_as_gos_collector_reads_them() {
        let stats = from_proc(STAT, STATUS, LIMITS, 1_700_000_000.0).unwrap();
        assert_eq!(
            stats,
            ProcessStats {
                cpu_seconds: 3.8,
                resident_bytes: 28_672_000.0,
                virtual_bytes: 2_147_483_648.0,
                start_time_seconds: 1_700_000_120.0,
                open_fds: 0.0,
                max_fds: 20_000.0,
                max_virtual_bytes: 18_446_744_073_709_551_615.0,
            }
        );
        assert_eq!(boot_time("cpu  1 2 3\nbtime 1700000000\nprocesses 9\n"), Some(1_700_000_000.0));
        assert_eq!(from_proc("4242 (truncated", STATUS, LIMITS, 0.0), None);
    }

    #[test]
    fn this_process_is_described_with_gos_names_and_help() {
        let stats = ProcessStats::read().expect("/proc is readable");
        assert!(stats.open_fds >= 3.0 && stats.open_fds <= stats.max_fds, "{stats:?}");
        assert!(stats.resident_bytes > 0.0 && stats.virtual_bytes >= stats.resident_bytes, "{stats:?}");
        let age = now_seconds() - stats.start_time_seconds;
        assert!((-1.0..3_600.0).contains(&age), "started {age} s ago: {stats:?}");
        let mut text = String::new();
        stats.write(&mut text);
        assert!(text.starts_with(
            "# HELP process_cpu_seconds_total Total user and system CPU time spent in seconds.\n\
             # TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total "
        ));
        assert_eq!(text.lines().filter(|l| l.starts_with("# TYPE process_")).count(), 7);
    }

    #[test]
    fn every_metric_is_described_once() {
        let mut names: Vec<&str> = HELP.iter().map(|(_, name, _)| *name).collect();
        names.sort_unstable();
        let count = names.len();
        names.dedup();
        assert_eq!(names.len(), count, "a metric described twice");
    }

    /// The metric names a crate's `metrics` module defines (`pub const NAME: &str = "…";`).
    fn defined_names(code: &str, out: &mut Vec<String>) {
        for (at, _) in code.match_indices(": &str =") {
            let rest = code[at..].split_once('"').map(|(_, r)| r);
            if let Some((name, _)) = rest.and_then(|r| r.split_once('"')) {
                out.push(name.to_string());
            }
        }
    }

    #[test]
    fn every_metric_the_workspace_records_has_a_help_text() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
        let mut names = Vec::new();
        let crates = ["actors", "admission", "apiextensions", "apimachinery", "auth", "cacher", "diagnosis"];
        let more = ["flowcontrol", "gateway", "registry", "storage", "webhook-client"];
        for krate in crates.into_iter().chain(more) {
            if let Ok(code) = std::fs::read_to_string(root.join(krate).join("src/metrics.rs")) {
                defined_names(&code, &mut names);
            }
        }
        assert!(names.len() > 50, "the scan finds the metrics modules' names: {names:?}");
        // Go's process metrics are written with their help text at each scrape.
        names.retain(|n| !n.starts_with("process_"));
        let described: Vec<&str> = HELP.iter().map(|(_, name, _)| *name).collect();
        let missing: Vec<&String> = names.iter().filter(|n| !described.contains(&n.as_str())).collect();
        assert!(missing.is_empty(), "named without a help text in prometheus::HELP: {missing:?}");
    }
}
