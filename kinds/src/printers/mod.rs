//! The printers of the built-in kinds (each kind's strategy returns its own): columns and cells computed as kube-apiserver v1.30's
//! `pkg/printers/internalversion/printers.go` computes them from the (defaulted) object. Objects
//! are read as JSON in their served version; where kube reads an internal field that the
//! served version spells differently (`status.podIPs` vs `podIP`, the `events.k8s.io` Event),
//! the conversion is reproduced here.

use std::collections::BTreeSet;

use chrono::{DateTime, Utc};
use serde_json::{Value, json};

use apimachinery::table::descriptions as d;
use apimachinery::table::{Column, Printer, Row, human_duration};
pub use apimachinery::table::{DEFAULT_COLUMNS, NAME, col, default_row, wide};

mod admission;
mod cluster;
mod flowcontrol;
mod networking;
mod volumes;

#[cfg(test)]
mod tests;

pub use admission::{VALIDATING_ADMISSION_POLICIES, VALIDATING_ADMISSION_POLICY_BINDINGS, WEBHOOK_CONFIGURATIONS};
use apimachinery::selector::LabelSelector;
use apimachinery::selector::labels::format_labels;
pub use cluster::{
    CERTIFICATE_SIGNING_REQUESTS, COMPONENT_STATUSES, CONTROLLER_REVISIONS, HORIZONTAL_POD_AUTOSCALERS,
    POD_DISRUPTION_BUDGETS, POD_TEMPLATES, PRIORITY_CLASSES, REPLICATION_CONTROLLERS, RESOURCE_QUOTAS, RUNTIME_CLASSES,
};
pub use flowcontrol::{FLOW_SCHEMAS, FlowSchemaPrinter, PRIORITY_LEVEL_CONFIGURATIONS};
pub use networking::{ENDPOINT_SLICES, INGRESS_CLASSES, INGRESSES, NETWORK_POLICIES};
pub use volumes::{
    CSI_DRIVERS, CSI_NODES, CSI_STORAGE_CAPACITIES, PERSISTENT_VOLUME_CLAIMS, PERSISTENT_VOLUMES, STORAGE_CLASSES,
    VOLUME_ATTACHMENTS,
};

/// A kind's printer as kube registers it: fixed columns and a function computing one row.
pub struct StaticPrinter {
    /// The columns, wide ones included.
    pub columns: &'static [Column],
    /// One row's cells.
    pub row: fn(&Value, DateTime<Utc>) -> Row,
}

impl Printer for StaticPrinter {
    fn columns(&self) -> &[Column] {
        self.columns
    }

    fn row(&self, obj: &Value, now: DateTime<Utc>) -> Row {
        (self.row)(obj, now)
    }
}

// ---------------------------------------------------------------------------------------------
// Column helpers, for kinds that define their printer in their own file.

/// kube's `Age` column.
pub const AGE: Column = col("Age", "string", d::CREATION_TIMESTAMP);
const CONTAINERS: Column = wide("Containers", "string", "Names of each container in the template.");
const IMAGES: Column = wide("Images", "string", "Images referenced by each container in the template.");

// ---------------------------------------------------------------------------------------------
// JSON access helpers: missing fields read as Go zero values.

fn at<'a>(v: &'a Value, path: &str) -> Option<&'a Value> {
    apimachinery::object::field(v, path).filter(|v| !v.is_null())
}

/// A string cell's value: the field at the dotted `path`, `""` when unset.
pub fn s<'a>(v: &'a Value, path: &str) -> &'a str {
    at(v, path).and_then(Value::as_str).unwrap_or("")
}

fn int(v: &Value, path: &str) -> i64 {
    at(v, path).and_then(Value::as_i64).unwrap_or(0)
}

fn boolean(v: &Value, path: &str) -> bool {
    at(v, path).and_then(Value::as_bool).unwrap_or(false)
}

fn arr<'a>(v: &'a Value, path: &str) -> &'a [Value] {
    at(v, path).and_then(Value::as_array).map_or(&[], Vec::as_slice)
}

fn len_of(v: &Value, path: &str) -> i64 {
    match at(v, path) {
        Some(Value::Array(a)) => a.len() as i64,
        Some(Value::Object(m)) => m.len() as i64,
        _ => 0,
    }
}

/// A timestamp; `None` for absent, null, unparsable or Go's zero time (what `IsZero` reports).
fn time_at(v: &Value, path: &str) -> Option<DateTime<Utc>> {
    let t = DateTime::parse_from_rfc3339(at(v, path)?.as_str()?).ok()?.with_timezone(&Utc);
    (t.timestamp() != ZERO_TIME_SECONDS).then_some(t)
}

/// A timestamp that is set: `None` only when absent or null; an unparsable value reads as Go's
/// zero time, as kube would have decoded it.
fn time_or_zero(v: &Value, path: &str) -> Option<DateTime<Utc>> {
    at(v, path)?;
    Some(time_at(v, path).unwrap_or_else(|| DateTime::from_timestamp(ZERO_TIME_SECONDS, 0).unwrap_or_default()))
}

/// Seconds of 0001-01-01T00:00:00Z since the Unix epoch.
const ZERO_TIME_SECONDS: i64 = -62_135_596_800;

/// `translateTimestampSince`: the age of a timestamp, `<unknown>` when unset.
fn since(t: Option<DateTime<Utc>>, now: DateTime<Utc>) -> String {
    t.map_or_else(|| "<unknown>".to_string(), |t| human_duration(now - t))
}

/// The `Age` cell: the object's age at `now`.
pub fn age(obj: &Value, now: DateTime<Utc>) -> Value {
    since(time_at(obj, "metadata.creationTimestamp"), now).into()
}

/// The `Name` cell.
pub fn name(obj: &Value) -> Value {
    s(obj, "metadata.name").into()
}

fn or<'a>(value: &'a str, fallback: &'a str) -> &'a str {
    if value.is_empty() { fallback } else { value }
}

/// `layoutContainerCells`: container names and images, comma-joined.
fn containers(pod_spec: Option<&Value>) -> (Value, Value) {
    let list = pod_spec.map_or(&[][..], |spec| arr(spec, "containers"));
    let names: Vec<&str> = list.iter().map(|c| s(c, "name")).collect();
    let images: Vec<&str> = list.iter().map(|c| s(c, "image")).collect();
    (names.join(",").into(), images.join(",").into())
}

/// `metav1.FormatLabelSelector`: `<none>` for an empty (or missing) selector, `<error>` for an
/// invalid one.
fn format_label_selector(selector: Option<&Value>) -> String {
    match LabelSelector::from_label_selector_message(selector) {
        Ok(sel) => {
            let text = sel.to_string();
            if text.is_empty() { "<none>".to_string() } else { text }
        }
        Err(_) => "<error>".to_string(),
    }
}

// ---------------------------------------------------------------------------------------------
// Pods.

/// Pods (kube's `printPod`).
pub static PODS: StaticPrinter = StaticPrinter {
    columns: &[
        NAME,
        col("Ready", "string", "The aggregate readiness state of this pod for accepting traffic."),
        col("Status", "string", "The aggregate status of the containers in this pod."),
        col(
            "Restarts",
            "string",
            "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted.",
        ),
        AGE,
        wide("IP", "string", d::POD_IP),
        wide("Node", "string", d::POD_NODE_NAME),
        wide("Nominated Node", "string", d::POD_NOMINATED_NODE),
        wide("Readiness Gates", "string", d::POD_READINESS_GATES),
    ],
    row: pod_row,
};

/// `node.NodeUnreachablePodReason`.
const NODE_UNREACHABLE_POD_REASON: &str = "NodeLost";

fn pod_row(pod: &Value, now: DateTime<Utc>) -> Row {
    let empty = Value::Null;
    let spec = at(pod, "spec").unwrap_or(&empty);
    let status = at(pod, "status").unwrap_or(&empty);
    let conditions = arr(status, "conditions");

    let mut restarts: i64 = 0;
    let mut restartable_restarts: i64 = 0;
    let mut total = arr(spec, "containers").len();
    let mut ready = 0usize;
    let mut last_restart: Option<DateTime<Utc>> = None;
    let mut last_restartable_restart: Option<DateTime<Utc>> = None;

    let phase = s(status, "phase");
    let mut reason = or(s(status, "reason"), phase).to_string();
    if conditions.iter().any(|c| s(c, "type") == "PodScheduled" && s(c, "reason") == "SchedulingGated") {
        reason = "SchedulingGated".to_string();
    }

    let row_conditions = match phase {
        "Succeeded" => Some(json!([{
            "type": "Completed", "status": "True", "reason": "Succeeded",
            "message": "The pod has completed successfully.",
        }])),
        "Failed" => Some(json!([{
            "type": "Completed", "status": "True", "reason": "Failed", "message": "The pod failed.",
        }])),
        _ => None,
    };

    let init_specs = arr(spec, "initContainers");
    let restartable = |name: &str| {
        init_specs.iter().find(|c| s(c, "name") == name).is_some_and(|c| s(c, "restartPolicy") == "Always")
    };
    total += init_specs.iter().filter(|c| s(c, "restartPolicy") == "Always").count();

    // Later of two restart times; a missing finishedAt is Go's zero time, never later.
    let later = |current: Option<DateTime<Utc>>, c: &Value| {
        let finished = at(c, "lastState.terminated").and_then(|_| time_at(c, "lastState.terminated.finishedAt"));
        match (current, finished) {
            (Some(a), Some(b)) if a < b => Some(b),
            (None, Some(b)) => Some(b),
            (a, _) => a,
        }
    };

    let mut initializing = false;
    for (i, c) in arr(status, "initContainerStatuses").iter().enumerate() {
        restarts += int(c, "restartCount");
        last_restart = later(last_restart, c);
        let is_restartable = restartable(s(c, "name"));
        if is_restartable {
            restartable_restarts += int(c, "restartCount");
            last_restartable_restart = later(last_restartable_restart, c);
        }
        let terminated = at(c, "state.terminated");
        let waiting = at(c, "state.waiting");
        if terminated.is_some_and(|t| int(t, "exitCode") == 0) {
            continue;
        }
        if is_restartable && boolean(c, "started") {
            if boolean(c, "ready") {
                ready += 1;
            }
            continue;
        }
        if let Some(t) = terminated {
            reason = if s(t, "reason").is_empty() {
                if int(t, "signal") != 0 {
                    format!("Init:Signal:{}", int(t, "signal"))
                } else {
                    format!("Init:ExitCode:{}", int(t, "exitCode"))
                }
            } else {
                format!("Init:{}", s(t, "reason"))
            };
        } else if let Some(w) = waiting.filter(|w| !s(w, "reason").is_empty() && s(w, "reason") != "PodInitializing") {
            reason = format!("Init:{}", s(w, "reason"));
        } else {
            reason = format!("Init:{i}/{}", init_specs.len());
        }
        initializing = true;
        break;
    }

    let initialized =
        conditions.iter().find(|c| s(c, "type") == "Initialized").is_some_and(|c| s(c, "status") == "True");
    if !initializing || initialized {
        restarts = restartable_restarts;
        last_restart = last_restartable_restart;
        let mut has_running = false;
        for c in arr(status, "containerStatuses").iter().rev() {
            restarts += int(c, "restartCount");
            last_restart = later(last_restart, c);
            let waiting = at(c, "state.waiting");
            let terminated = at(c, "state.terminated");
            if let Some(w) = waiting.filter(|w| !s(w, "reason").is_empty()) {
                reason = s(w, "reason").to_string();
            } else if let Some(t) = terminated {
                reason = if !s(t, "reason").is_empty() {
                    s(t, "reason").to_string()
                } else if int(t, "signal") != 0 {
                    format!("Signal:{}", int(t, "signal"))
                } else {
                    format!("ExitCode:{}", int(t, "exitCode"))
                };
            } else if boolean(c, "ready") && at(c, "state.running").is_some() {
                has_running = true;
                ready += 1;
            }
        }
        if reason == "Completed" && has_running {
            let pod_ready = conditions.iter().any(|c| s(c, "type") == "Ready" && s(c, "status") == "True");
            reason = if pod_ready { "Running" } else { "NotReady" }.to_string();
        }
    }

    if at(pod, "metadata.deletionTimestamp").is_some() {
        reason = if s(status, "reason") == NODE_UNREACHABLE_POD_REASON { "Unknown" } else { "Terminating" }.to_string();
    }

    let restarts_text = match last_restart {
        Some(t) if restarts != 0 => format!("{restarts} ({} ago)", human_duration(now - t)),
        _ => restarts.to_string(),
    };

    let pod_ip = arr(status, "podIPs").first().map_or_else(|| s(status, "podIP"), |ip| s(ip, "ip"));
    let gates = arr(spec, "readinessGates");
    let readiness_gates = if gates.is_empty() {
        "<none>".to_string()
    } else {
        let true_count = gates
            .iter()
            .filter(|g| {
                conditions
                    .iter()
                    .find(|c| s(c, "type") == s(g, "conditionType"))
                    .is_some_and(|c| s(c, "status") == "True")
            })
            .count();
        format!("{true_count}/{}", gates.len())
    };

    Row {
        cells: vec![
            name(pod),
            format!("{ready}/{total}").into(),
            reason.into(),
            restarts_text.into(),
            age(pod, now),
            or(pod_ip, "<none>").into(),
            or(s(spec, "nodeName"), "<none>").into(),
            or(s(status, "nominatedNodeName"), "<none>").into(),
            readiness_gates.into(),
        ],
        conditions: row_conditions,
    }
}

// ---------------------------------------------------------------------------------------------
// Workloads.

/// Deployments.
pub static DEPLOYMENTS: StaticPrinter = StaticPrinter {
    columns: &[
        NAME,
        col("Ready", "string", "Number of the pod with ready state"),
        col("Up-to-date", "string", d::DEPLOY_UPDATED),
        col("Available", "string", d::DEPLOY_AVAILABLE),
        AGE,
        CONTAINERS,
        IMAGES,
        wide("Selector", "string", d::DEPLOY_SELECTOR),
    ],
    row: deployment_row,
};

fn deployment_row(obj: &Value, now: DateTime<Utc>) -> Row {
    let (names, images) = containers(at(obj, "spec.template.spec"));
    let selector = match LabelSelector::from_label_selector_message(at(obj, "spec.selector")) {
        Ok(sel) => sel.to_string(),
        Err(_) => "<invalid>".to_string(),
    };
    Row::cells(vec![
        name(obj),
        format!("{}/{}", int(obj, "status.readyReplicas"), int(obj, "spec.replicas")).into(),
        int(obj, "status.updatedReplicas").into(),
        int(obj, "status.availableReplicas").into(),
        age(obj, now),
        names,
        images,
        selector.into(),
    ])
}

/// ReplicaSets.
pub static REPLICA_SETS: StaticPrinter = StaticPrinter {
    columns: &[
        NAME,
        col("Desired", "integer", d::RS_SPEC_REPLICAS),
        col("Current", "integer", d::RS_STATUS_REPLICAS),
        col("Ready", "integer", d::RS_READY_REPLICAS),
        AGE,
        CONTAINERS,
        IMAGES,
        wide("Selector", "string", d::RS_SELECTOR),
    ],
    row: replica_set_row,
};

fn replica_set_row(obj: &Value, now: DateTime<Utc>) -> Row {
    replicas_row(obj, now, format_label_selector(at(obj, "spec.selector")))
}

/// The row of a kind that keeps replicas of a pod template (ReplicaSet, ReplicationController):
/// desired, current, ready, age, then the template's containers and images and `selector`.
fn replicas_row(obj: &Value, now: DateTime<Utc>, selector: String) -> Row {
    let (names, images) = containers(at(obj, "spec.template.spec"));
    Row::cells(vec![
        name(obj),
        int(obj, "spec.replicas").into(),
        int(obj, "status.replicas").into(),
        int(obj, "status.readyReplicas").into(),
        age(obj, now),
        names,
        images,
        selector.into(),
    ])
}

/// StatefulSets.
pub static STATEFUL_SETS: StaticPrinter = StaticPrinter {
    columns: &[NAME, col("Ready", "string", "Number of the pod with ready state"), AGE, CONTAINERS, IMAGES],
    row: stateful_set_row,
};

fn stateful_set_row(obj: &Value, now: DateTime<Utc>) -> Row {
    let (names, images) = containers(at(obj, "spec.template.spec"));
    Row::cells(vec![
        name(obj),
        format!("{}/{}", int(obj, "status.readyReplicas"), int(obj, "spec.replicas")).into(),
        age(obj, now),
        names,
        images,
    ])
}

/// DaemonSets.
pub static DAEMON_SETS: StaticPrinter = StaticPrinter {
    columns: &[
        NAME,
        col("Desired", "integer", d::DS_DESIRED),
        col("Current", "integer", d::DS_CURRENT),
        col("Ready", "integer", d::DS_READY),
        col("Up-to-date", "integer", d::DS_UPDATED),
        col("Available", "integer", d::DS_AVAILABLE),
        col("Node Selector", "string", d::POD_NODE_SELECTOR),
        AGE,
        CONTAINERS,
        IMAGES,
        wide("Selector", "string", d::DS_SELECTOR),
    ],
    row: daemon_set_row,
};

fn daemon_set_row(obj: &Value, now: DateTime<Utc>) -> Row {
    let (names, images) = containers(at(obj, "spec.template.spec"));
    Row::cells(vec![
        name(obj),
        int(obj, "status.desiredNumberScheduled").into(),
        int(obj, "status.currentNumberScheduled").into(),
        int(obj, "status.numberReady").into(),
        int(obj, "status.updatedNumberScheduled").into(),
        int(obj, "status.numberAvailable").into(),
        format_labels(at(obj, "spec.template.spec.nodeSelector").and_then(Value::as_object)).into(),
        age(obj, now),
        names,
        images,
        format_label_selector(at(obj, "spec.selector")).into(),
    ])
}

/// Jobs.
pub static JOBS: StaticPrinter = StaticPrinter {
    columns: &[
        NAME,
        col("Status", "string", "Status of the job."),
        col("Completions", "string", d::JOB_SUCCEEDED),
        col("Duration", "string", "Time required to complete the job."),
        AGE,
        CONTAINERS,
        IMAGES,
        wide("Selector", "string", d::JOB_SELECTOR),
    ],
    row: job_row,
};

/// `hasJobCondition`: the first condition of that type decides.
fn has_job_condition(job: &Value, kind: &str) -> bool {
    arr(job, "status.conditions").iter().find(|c| s(c, "type") == kind).is_some_and(|c| s(c, "status") == "True")
}

fn job_row(obj: &Value, now: DateTime<Utc>) -> Row {
    let succeeded = int(obj, "status.succeeded");
    let completions = match at(obj, "spec.completions") {
        Some(c) => format!("{succeeded}/{}", c.as_i64().unwrap_or(0)),
        None => match int(obj, "spec.parallelism") {
            p if p > 1 => format!("{succeeded}/1 of {p}"),
            _ => format!("{succeeded}/1"),
        },
    };
    let duration = match (time_or_zero(obj, "status.startTime"), time_or_zero(obj, "status.completionTime")) {
        (None, _) => String::new(),
        (Some(start), None) => human_duration(now - start),
        (Some(start), Some(done)) => human_duration(done - start),
    };
    let status = if has_job_condition(obj, "Complete") {
        "Complete"
    } else if has_job_condition(obj, "Failed") {
        "Failed"
    } else if at(obj, "metadata.deletionTimestamp").is_some() {
        "Terminating"
    } else if has_job_condition(obj, "Suspended") {
        "Suspended"
    } else if has_job_condition(obj, "FailureTarget") {
        "FailureTarget"
    } else {
        "Running"
    };
    let (names, images) = containers(at(obj, "spec.template.spec"));
    Row::cells(vec![
        name(obj),
        status.into(),
        completions.into(),
        duration.into(),
        age(obj, now),
        names,
        images,
        format_label_selector(at(obj, "spec.selector")).into(),
    ])
}

/// CronJobs.
pub static CRON_JOBS: StaticPrinter = StaticPrinter {
    columns: &[
        NAME,
        col("Schedule", "string", d::CJ_SCHEDULE),
        col("Timezone", "string", d::CJ_TIMEZONE),
        col("Suspend", "boolean", d::CJ_SUSPEND),
        col("Active", "integer", d::CJ_ACTIVE),
        col("Last Schedule", "string", d::CJ_LAST_SCHEDULE),
        AGE,
        CONTAINERS,
        IMAGES,
        wide("Selector", "string", d::JOB_SELECTOR),
    ],
    row: cron_job_row,
};

fn cron_job_row(obj: &Value, now: DateTime<Utc>) -> Row {
    let last_schedule = match at(obj, "status.lastScheduleTime") {
        None => "<none>".to_string(),
        Some(_) => since(time_at(obj, "status.lastScheduleTime"), now),
    };
    let suspend = match at(obj, "spec.suspend").and_then(Value::as_bool) {
        Some(true) => "True",
        Some(false) => "False",
        None => "<unset>",
    };
    let (names, images) = containers(at(obj, "spec.jobTemplate.spec.template.spec"));
    Row::cells(vec![
        name(obj),
        s(obj, "spec.schedule").into(),
        or(s(obj, "spec.timeZone"), if at(obj, "spec.timeZone").is_some() { "" } else { "<none>" }).into(),
        suspend.into(),
        len_of(obj, "status.active").into(),
        last_schedule.into(),
        age(obj, now),
        names,
        images,
        format_label_selector(at(obj, "spec.jobTemplate.spec.selector")).into(),
    ])
}

// ---------------------------------------------------------------------------------------------
// Services and endpoints.

/// Services.
pub static SERVICES: StaticPrinter = StaticPrinter {
    columns: &[
        NAME,
        col("Type", "string", d::SVC_TYPE),
        col("Cluster-IP", "string", d::SVC_CLUSTER_IP),
        col("External-IP", "string", d::SVC_EXTERNAL_IPS),
        col("Port(s)", "string", d::SVC_PORTS),
        AGE,
        wide("Selector", "string", d::SVC_SELECTOR),
    ],
    row: service_row,
};

/// `loadBalancerStatusStringer` (wide, as the server always prints): distinct ingress IPs or
/// hostnames, sorted.
fn load_balancer_ingress(svc: &Value) -> String {
    let set: BTreeSet<&str> = arr(svc, "status.loadBalancer.ingress")
        .iter()
        .filter_map(|i| {
            let ip = s(i, "ip");
            let host = s(i, "hostname");
            if !ip.is_empty() {
                Some(ip)
            } else if !host.is_empty() {
                Some(host)
            } else {
                None
            }
        })
        .collect();
    set.into_iter().collect::<Vec<_>>().join(",")
}

fn service_external_ip(svc: &Value) -> String {
    let external: Vec<&str> = arr(svc, "spec.externalIPs").iter().map(|v| v.as_str().unwrap_or("")).collect();
    match s(svc, "spec.type") {
        "ClusterIP" | "NodePort" => {
            if external.is_empty() {
                "<none>".to_string()
            } else {
                external.join(",")
            }
        }
        "LoadBalancer" => {
            let lb = load_balancer_ingress(svc);
            if !external.is_empty() {
                let mut all: Vec<&str> = Vec::new();
                if !lb.is_empty() {
                    all.extend(lb.split(','));
                }
                all.extend(external);
                all.join(",")
            } else if !lb.is_empty() {
                lb
            } else {
                "<pending>".to_string()
            }
        }
        "ExternalName" => s(svc, "spec.externalName").to_string(),
        _ => "<unknown>".to_string(),
    }
}

fn service_row(obj: &Value, now: DateTime<Utc>) -> Row {
    // The internal type keeps only clusterIPs; v1 clusterIP converts into it when they are empty.
    let cluster_ip = match arr(obj, "spec.clusterIPs").first() {
        Some(ip) => ip.as_str().unwrap_or(""),
        None => or(s(obj, "spec.clusterIP"), "<none>"),
    };
    let ports: Vec<String> = arr(obj, "spec.ports")
        .iter()
        .map(|p| {
            let node_port = int(p, "nodePort");
            if node_port > 0 {
                format!("{}:{node_port}/{}", int(p, "port"), s(p, "protocol"))
            } else {
                format!("{}/{}", int(p, "port"), s(p, "protocol"))
            }
        })
        .collect();
    let ports = if ports.is_empty() { "<none>".to_string() } else { ports.join(",") };
    Row::cells(vec![
        name(obj),
        s(obj, "spec.type").into(),
        cluster_ip.into(),
        service_external_ip(obj).into(),
        ports.into(),
        age(obj, now),
        format_labels(at(obj, "spec.selector").and_then(Value::as_object)).into(),
    ])
}

/// Endpoints.
pub static ENDPOINTS: StaticPrinter =
    StaticPrinter { columns: &[NAME, col("Endpoints", "string", d::EP_SUBSETS), AGE], row: endpoints_row };

/// `net.JoinHostPort`.
fn join_host_port(host: &str, port: i64) -> String {
    if host.contains(':') { format!("[{host}]:{port}") } else { format!("{host}:{port}") }
}

/// `formatEndpoints` with all ports: at most three addresses, then `+ N more...`.
fn format_endpoints(obj: &Value) -> String {
    let subsets = arr(obj, "subsets");
    if subsets.is_empty() {
        return "<none>".to_string();
    }
    const MAX: usize = 3;
    let mut list: Vec<String> = Vec::new();
    let mut more = false;
    let mut count = 0usize;
    for ss in subsets {
        let addresses = arr(ss, "addresses");
        let ports = arr(ss, "ports");
        if ports.is_empty() {
            count += addresses.len();
            for a in addresses {
                if list.len() == MAX {
                    more = true;
                    break;
                }
                list.push(s(a, "ip").to_string());
            }
            continue;
        }
        for p in ports {
            count += addresses.len();
            for a in addresses {
                if list.len() == MAX {
                    more = true;
                    break;
                }
                list.push(join_host_port(s(a, "ip"), int(p, "port")));
            }
        }
    }
    let joined = list.join(",");
    if more { format!("{joined} + {} more...", count - MAX) } else { joined }
}

fn endpoints_row(obj: &Value, now: DateTime<Utc>) -> Row {
    Row::cells(vec![name(obj), format_endpoints(obj).into(), age(obj, now)])
}

// ---------------------------------------------------------------------------------------------
// Nodes.

/// Nodes.
pub static NODES: StaticPrinter = StaticPrinter {
    columns: &[
        NAME,
        col("Status", "string", "The status of the node"),
        col("Roles", "string", "The roles of the node"),
        AGE,
        col("Version", "string", d::NODE_KUBELET_VERSION),
        wide("Internal-IP", "string", d::NODE_ADDRESSES),
        wide("External-IP", "string", d::NODE_ADDRESSES),
        wide("OS-Image", "string", d::NODE_OS_IMAGE),
        wide("Kernel-Version", "string", d::NODE_KERNEL_VERSION),
        wide("Container-Runtime", "string", d::NODE_CONTAINER_RUNTIME),
    ],
    row: node_row,
};

fn node_address(node: &Value, kind: &str) -> String {
    arr(node, "status.addresses")
        .iter()
        .find(|a| s(a, "type") == kind)
        .map_or_else(|| "<none>".to_string(), |a| s(a, "address").to_string())
}

fn node_row(obj: &Value, now: DateTime<Utc>) -> Row {
    // The last Ready condition wins, as kube keys its condition map by type.
    let ready = arr(obj, "status.conditions").iter().rev().find(|c| s(c, "type") == "Ready");
    let mut status: Vec<&str> = vec![match ready {
        Some(c) if s(c, "status") == "True" => "Ready",
        Some(_) => "NotReady",
        None => "Unknown",
    }];
    if boolean(obj, "spec.unschedulable") {
        status.push("SchedulingDisabled");
    }
    let mut roles: BTreeSet<&str> = BTreeSet::new();
    if let Some(labels) = at(obj, "metadata.labels").and_then(Value::as_object) {
        for (k, v) in labels {
            let v = v.as_str().unwrap_or("");
            if let Some(role) = k.strip_prefix("node-role.kubernetes.io/") {
                if !role.is_empty() {
                    roles.insert(role);
                }
            } else if k == "kubernetes.io/role" && !v.is_empty() {
                roles.insert(v);
            }
        }
    }
    let roles = if roles.is_empty() { "<none>".to_string() } else { roles.into_iter().collect::<Vec<_>>().join(",") };
    Row::cells(vec![
        name(obj),
        status.join(",").into(),
        roles.into(),
        age(obj, now),
        s(obj, "status.nodeInfo.kubeletVersion").into(),
        node_address(obj, "InternalIP").into(),
        node_address(obj, "ExternalIP").into(),
        or(s(obj, "status.nodeInfo.osImage"), "<unknown>").into(),
        or(s(obj, "status.nodeInfo.kernelVersion"), "<unknown>").into(),
        or(s(obj, "status.nodeInfo.containerRuntimeVersion"), "<unknown>").into(),
    ])
}

// ---------------------------------------------------------------------------------------------
// Events (core/v1 and events.k8s.io/v1 share kube's one Event printer).

/// Events of both groups.
pub static EVENTS: StaticPrinter = StaticPrinter {
    columns: &[
        col("Last Seen", "string", d::EV_LAST_TIMESTAMP),
        col("Type", "string", d::EV_TYPE),
        col("Reason", "string", d::EV_REASON),
        col("Object", "string", d::EV_INVOLVED_OBJECT),
        wide("Subobject", "string", d::OBJREF_FIELD_PATH),
        wide("Source", "string", d::EV_SOURCE),
        col("Message", "string", d::EV_MESSAGE),
        wide("First Seen", "string", d::EV_FIRST_TIMESTAMP),
        wide("Count", "string", d::EV_COUNT),
        Column { name: "Name", kind: "string", format: "name", description: d::NAME, priority: 1 },
    ],
    row: event_row,
};

fn event_row(obj: &Value, now: DateTime<Utc>) -> Row {
    // events.k8s.io/v1 spells the internal (core-like) fields differently.
    let v1 = s(obj, "apiVersion").starts_with("events.k8s.io/")
        || ["regarding", "note", "deprecatedSource", "reportingController"].iter().any(|f| at(obj, f).is_some());
    let (involved, message, source, first, last, count, controller) = if v1 {
        (
            "regarding",
            "note",
            "deprecatedSource",
            "deprecatedFirstTimestamp",
            "deprecatedLastTimestamp",
            "deprecatedCount",
            "reportingController",
        )
    } else {
        ("involvedObject", "message", "source", "firstTimestamp", "lastTimestamp", "count", "reportingComponent")
    };
    let first_seen = match time_at(obj, first) {
        Some(t) => since(Some(t), now),
        None => since(time_at(obj, "eventTime"), now),
    };
    let mut last_seen = match time_at(obj, last) {
        Some(t) => since(Some(t), now),
        None => first_seen.clone(),
    };
    let mut count = int(obj, count);
    if let Some(series) = at(obj, "series") {
        last_seen = since(time_at(series, "lastObservedTime"), now);
        count = int(series, "count");
    } else if count == 0 {
        count = 1;
    }
    let kind = s(obj, &format!("{involved}.kind")).to_lowercase();
    let involved_name = s(obj, &format!("{involved}.name"));
    let target = if involved_name.is_empty() { kind } else { format!("{kind}/{involved_name}") };
    let component = or(s(obj, &format!("{source}.component")), s(obj, controller));
    let instance = or(s(obj, &format!("{source}.host")), s(obj, "reportingInstance"));
    let source_text = if instance.is_empty() { component.to_string() } else { format!("{component}, {instance}") };
    Row::cells(vec![
        last_seen.into(),
        s(obj, "type").into(),
        s(obj, "reason").into(),
        target.into(),
        s(obj, &format!("{involved}.fieldPath")).into(),
        source_text.into(),
        s(obj, message).trim().into(),
        first_seen.into(),
        count.into(),
        name(obj),
    ])
}

// ---------------------------------------------------------------------------------------------
// Simple kinds.

/// Namespaces.
pub static NAMESPACES: StaticPrinter = StaticPrinter {
    columns: &[NAME, col("Status", "string", "The status of the namespace"), AGE],
    row: |obj, now| Row::cells(vec![name(obj), s(obj, "status.phase").into(), age(obj, now)]),
};

/// Secrets.
pub static SECRETS: StaticPrinter = StaticPrinter {
    columns: &[NAME, col("Type", "string", d::SECRET_TYPE), col("Data", "string", d::SECRET_DATA), AGE],
    row: secret_row,
};

fn secret_row(obj: &Value, now: DateTime<Utc>) -> Row {
    // stringData merges into data when converting to the internal type.
    let mut keys: BTreeSet<&str> = BTreeSet::new();
    for field in ["data", "stringData"] {
        if let Some(m) = at(obj, field).and_then(Value::as_object) {
            keys.extend(m.keys().map(String::as_str));
        }
    }
    Row::cells(vec![name(obj), s(obj, "type").into(), (keys.len() as i64).into(), age(obj, now)])
}

/// ServiceAccounts.
pub static SERVICE_ACCOUNTS: StaticPrinter = StaticPrinter {
    columns: &[NAME, col("Secrets", "string", d::SA_SECRETS), AGE],
    row: |obj, now| Row::cells(vec![name(obj), len_of(obj, "secrets").into(), age(obj, now)]),
};

/// ConfigMaps.
pub static CONFIG_MAPS: StaticPrinter = StaticPrinter {
    columns: &[NAME, col("Data", "string", d::CM_DATA), AGE],
    row: |obj, now| {
        Row::cells(vec![name(obj), (len_of(obj, "data") + len_of(obj, "binaryData")).into(), age(obj, now)])
    },
};

/// RoleBindings.
pub static ROLE_BINDINGS: StaticPrinter = StaticPrinter {
    columns: &[
        NAME,
        col("Role", "string", d::RB_ROLE_REF),
        AGE,
        wide("Users", "string", "Users in the roleBinding"),
        wide("Groups", "string", "Groups in the roleBinding"),
        wide("ServiceAccounts", "string", "ServiceAccounts in the roleBinding"),
    ],
    row: binding_row,
};

/// ClusterRoleBindings.
pub static CLUSTER_ROLE_BINDINGS: StaticPrinter = StaticPrinter {
    columns: &[
        NAME,
        col("Role", "string", d::CRB_ROLE_REF),
        AGE,
        wide("Users", "string", "Users in the clusterRoleBinding"),
        wide("Groups", "string", "Groups in the clusterRoleBinding"),
        wide("ServiceAccounts", "string", "ServiceAccounts in the clusterRoleBinding"),
    ],
    row: binding_row,
};

fn binding_row(obj: &Value, now: DateTime<Utc>) -> Row {
    let mut users = Vec::new();
    let mut groups = Vec::new();
    let mut service_accounts = Vec::new();
    for subject in arr(obj, "subjects") {
        match s(subject, "kind") {
            "ServiceAccount" => service_accounts.push(format!("{}/{}", s(subject, "namespace"), s(subject, "name"))),
            "User" => users.push(s(subject, "name").to_string()),
            "Group" => groups.push(s(subject, "name").to_string()),
            _ => {}
        }
    }
    Row::cells(vec![
        name(obj),
        format!("{}/{}", s(obj, "roleRef.kind"), s(obj, "roleRef.name")).into(),
        age(obj, now),
        users.join(", ").into(),
        groups.join(", ").into(),
        service_accounts.join(", ").into(),
    ])
}
