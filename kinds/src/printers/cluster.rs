//! Printers of the workload, policy and cluster kinds this server serves beside the common
//! ones: PodTemplate, ReplicationController, ControllerRevision, PodDisruptionBudget,
//! ResourceQuota, HorizontalPodAutoscaler, PriorityClass, RuntimeClass,
//! CertificateSigningRequest, ComponentStatus.

use chrono::{DateTime, TimeDelta, Utc};
use serde_json::Value;

use super::volumes::quantity;
use super::{AGE, CONTAINERS, IMAGES, NAME, StaticPrinter, age, arr, at, containers, int, name, replicas_row, s};
use apimachinery::selector::labels::format_labels;
use apimachinery::table::{Column, Row, human_duration};

pub(super) const POD_TEMPLATE_COLUMNS: &[Column] = &[
    NAME,
    Column {
        name: "Containers",
        kind: "string",
        format: "",
        description: "Names of each container in the template.",
        priority: 0,
    },
    Column {
        name: "Images",
        kind: "string",
        format: "",
        description: "Images referenced by each container in the template.",
        priority: 0,
    },
    Column {
        name: "Pod Labels",
        kind: "string",
        format: "",
        description: "The labels for the pod template.",
        priority: 0,
    },
];

pub(super) const PDB_COLUMNS: &[Column] = &[
    NAME,
    Column {
        name: "Min Available",
        kind: "string",
        format: "",
        description: "The minimum number of pods that must be available.",
        priority: 0,
    },
    Column {
        name: "Max Unavailable",
        kind: "string",
        format: "",
        description: "The maximum number of pods that may be unavailable.",
        priority: 0,
    },
    Column {
        name: "Allowed Disruptions",
        kind: "integer",
        format: "",
        description: "Calculated number of pods that may be disrupted at this time.",
        priority: 0,
    },
    AGE,
];

pub(super) const RC_COLUMNS: &[Column] = &[
    NAME,
    Column {
        name: "Desired",
        kind: "integer",
        format: "",
        description: "Replicas is the number of desired replicas. This is a pointer to distinguish between explicit zero and unspecified. Defaults to 1. More info: https://kubernetes.io/docs/concepts/workloads/controllers/replicationcontroller#what-is-a-replicationcontroller",
        priority: 0,
    },
    Column {
        name: "Current",
        kind: "integer",
        format: "",
        description: "Replicas is the most recently observed number of replicas. More info: https://kubernetes.io/docs/concepts/workloads/controllers/replicationcontroller#what-is-a-replicationcontroller",
        priority: 0,
    },
    Column {
        name: "Ready",
        kind: "integer",
        format: "",
        description: "The number of ready replicas for this replication controller.",
        priority: 0,
    },
    AGE,
    CONTAINERS,
    IMAGES,
    Column {
        name: "Selector",
        kind: "string",
        format: "",
        description: "Selector is a label query over pods that should match the Replicas count. If Selector is empty, it is defaulted to the labels present on the Pod template. Label keys and values that must match in order to be controlled by this replication controller, if empty defaulted to labels on Pod template. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors",
        priority: 1,
    },
];

pub(super) const RESOURCE_QUOTA_COLUMNS: &[Column] = &[
    NAME,
    AGE,
    Column {
        name: "Request",
        kind: "string",
        format: "",
        description: "Request represents a minimum amount of cpu/memory that a container may consume.",
        priority: 0,
    },
    Column {
        name: "Limit",
        kind: "string",
        format: "",
        description: "Limits control the maximum amount of cpu/memory that a container may use independent of contention on the node.",
        priority: 0,
    },
];

pub(super) const HPA_COLUMNS: &[Column] = &[
    NAME,
    Column {
        name: "Reference",
        kind: "string",
        format: "",
        description: "scaleTargetRef points to the target resource to scale, and is used to the pods for which metrics should be collected, as well as to actually change the replica count.",
        priority: 0,
    },
    Column {
        name: "Targets",
        kind: "string",
        format: "",
        description: "metrics contains the specifications for which to use to calculate the desired replica count (the maximum replica count across all metrics will be used).  The desired replica count is calculated multiplying the ratio between the target value and the current value by the current number of pods.  Ergo, metrics used must decrease as the pod count is increased, and vice-versa.  See the individual metric source types for more information about how each type of metric must respond.",
        priority: 0,
    },
    Column {
        name: "MinPods",
        kind: "string",
        format: "",
        description: "minReplicas is the lower limit for the number of replicas to which the autoscaler can scale down.  It defaults to 1 pod.  minReplicas is allowed to be 0 if the alpha feature gate HPAScaleToZero is enabled and at least one Object or External metric is configured.  Scaling is active as long as at least one metric value is available.",
        priority: 0,
    },
    Column {
        name: "MaxPods",
        kind: "string",
        format: "",
        description: "maxReplicas is the upper limit for the number of replicas to which the autoscaler can scale up. It cannot be less that minReplicas.",
        priority: 0,
    },
    Column {
        name: "Replicas",
        kind: "string",
        format: "",
        description: "currentReplicas is current number of replicas of pods managed by this autoscaler, as last seen by the autoscaler.",
        priority: 0,
    },
    AGE,
];

pub(super) const PRIORITY_CLASS_COLUMNS: &[Column] = &[
    NAME,
    Column {
        name: "Value",
        kind: "integer",
        format: "",
        description: "value represents the integer value of this priority class. This is the actual priority that pods receive when they have the name of this class in their pod spec.",
        priority: 0,
    },
    Column {
        name: "Global-Default",
        kind: "boolean",
        format: "",
        description: "globalDefault specifies whether this PriorityClass should be considered as the default priority for pods that do not have any priority class. Only one PriorityClass can be marked as `globalDefault`. However, if more than one PriorityClasses exists with their `globalDefault` field set to true, the smallest value of such global default PriorityClasses will be used as the default priority.",
        priority: 0,
    },
    AGE,
];

pub(super) const RUNTIME_CLASS_COLUMNS: &[Column] =
    &[NAME, Column { name: "Handler", kind: "string", format: "", description: "", priority: 0 }, AGE];

pub(super) const CSR_COLUMNS: &[Column] = &[
    NAME,
    AGE,
    Column {
        name: "SignerName",
        kind: "string",
        format: "",
        description: "Requested signer for the request. It is a qualified name in the form: `scope-hostname.io/name`. If empty, it will be defaulted:\n 1. If it's a kubelet client certificate, it is assigned\n    \"kubernetes.io/kube-apiserver-client-kubelet\".\n 2. If it's a kubelet serving certificate, it is assigned\n    \"kubernetes.io/kubelet-serving\".\n 3. Otherwise, it is assigned \"kubernetes.io/legacy-unknown\".\nDistribution of trust for signers happens out of band. You can select on this field using `spec.signerName`.",
        priority: 0,
    },
    Column {
        name: "Requestor",
        kind: "string",
        format: "",
        description: "Base64-encoded PKCS#10 CSR data",
        priority: 0,
    },
    Column {
        name: "RequestedDuration",
        kind: "string",
        format: "",
        description: "expirationSeconds is the requested duration of validity of the issued certificate. The certificate signer may issue a certificate with a different validity duration so a client must check the delta between the notBefore and and notAfter fields in the issued certificate to determine the actual duration.\n\nThe v1.22+ in-tree implementations of the well-known Kubernetes signers will honor this field as long as the requested duration is not greater than the maximum duration they will honor per the --cluster-signing-duration CLI flag to the Kubernetes controller manager.\n\nCertificate signers may not honor this field for various reasons:\n\n  1. Old signer that is unaware of the field (such as the in-tree\n     implementations prior to v1.22)\n  2. Signer whose configured maximum is shorter than the requested duration\n  3. Signer whose configured minimum is longer than the requested duration\n\nThe minimum valid value for expirationSeconds is 600, i.e. 10 minutes.",
        priority: 0,
    },
    Column {
        name: "Condition",
        kind: "string",
        format: "",
        description: "Conditions applied to the request, such as approval or denial.",
        priority: 0,
    },
];

pub(super) const CONTROLLER_REVISION_COLUMNS: &[Column] = &[
    NAME,
    Column { name: "Controller", kind: "string", format: "", description: "Controller of the object", priority: 0 },
    Column {
        name: "Revision",
        kind: "string",
        format: "",
        description: "revision indicates the revision of the state represented by Data.",
        priority: 0,
    },
    AGE,
];

pub(super) const COMPONENT_STATUS_COLUMNS: &[Column] = &[
    NAME,
    Column {
        name: "Status",
        kind: "string",
        format: "",
        description: "Status of the component conditions",
        priority: 0,
    },
    Column {
        name: "Message",
        kind: "string",
        format: "",
        description: "Message of the component conditions",
        priority: 0,
    },
    Column { name: "Error", kind: "string", format: "", description: "Error of the component conditions", priority: 0 },
];

/// `printPodTemplate`: no age column.
pub static POD_TEMPLATES: StaticPrinter = StaticPrinter {
    columns: POD_TEMPLATE_COLUMNS,
    row: |obj, _| {
        let (names, images) = containers(at(obj, "template.spec"));
        let labels = at(obj, "template.metadata.labels").and_then(Value::as_object);
        Row::cells(vec![name(obj), names, images, format_labels(labels).into()])
    },
};

/// `printReplicationController`.
pub static REPLICATION_CONTROLLERS: StaticPrinter = StaticPrinter {
    columns: RC_COLUMNS,
    // A ReplicaSet's row, with the map selector of the older kind.
    row: |obj, now| replicas_row(obj, now, format_labels(at(obj, "spec.selector").and_then(Value::as_object))),
};

/// An IntOrString as Go's `String()`.
fn int_or_string(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// `printPodDisruptionBudget`.
pub static POD_DISRUPTION_BUDGETS: StaticPrinter = StaticPrinter {
    columns: PDB_COLUMNS,
    row: |obj, now| {
        let or_na = |p: &str| at(obj, p).map_or_else(|| "N/A".to_string(), int_or_string);
        Row::cells(vec![
            name(obj),
            or_na("spec.minAvailable").into(),
            or_na("spec.maxUnavailable").into(),
            int(obj, "status.disruptionsAllowed").into(),
            age(obj, now),
        ])
    },
};

/// `printResourceQuota`: `used/hard` per resource of `status.hard`, limits apart.
pub static RESOURCE_QUOTAS: StaticPrinter = StaticPrinter {
    columns: RESOURCE_QUOTA_COLUMNS,
    row: |obj, now| {
        let mut names: Vec<&String> =
            at(obj, "status.hard").and_then(Value::as_object).into_iter().flatten().map(|(k, _)| k).collect();
        names.sort();
        let (mut requests, mut limits) = (Vec::new(), Vec::new());
        for r in names {
            let entry = format!("{r}: {}/{}", quantity_in(obj, "used", r), quantity_in(obj, "hard", r));
            let pieces: Vec<&str> = r.split('.').collect();
            if pieces.len() > 1 && pieces[0] == "limits" { limits.push(entry) } else { requests.push(entry) }
        }
        Row::cells(vec![name(obj), age(obj, now), requests.join(", ").into(), limits.join(", ").into()])
    },
};

fn quantity_in(obj: &Value, map: &str, key: &str) -> String {
    obj.pointer(&format!("/status/{map}"))
        .and_then(|m| m.get(key))
        .and_then(|q| kube_cel::quantity::from_json(q).ok())
        .map_or_else(|| "0".into(), |q| q.canonical())
}

/// `printHorizontalPodAutoscaler`, over the v2 form.
pub static HORIZONTAL_POD_AUTOSCALERS: StaticPrinter = StaticPrinter {
    columns: HPA_COLUMNS,
    row: |obj, now| {
        let reference = format!("{}/{}", s(obj, "spec.scaleTargetRef.kind"), s(obj, "spec.scaleTargetRef.name"));
        let min = at(obj, "spec.minReplicas")
            .and_then(Value::as_i64)
            .map_or_else(|| "<unset>".to_string(), |m| m.to_string());
        Row::cells(vec![
            name(obj),
            reference.into(),
            hpa_metrics(arr(obj, "spec.metrics"), arr(obj, "status.currentMetrics")).into(),
            min.into(),
            int(obj, "spec.maxReplicas").into(),
            int(obj, "status.currentReplicas").into(),
            age(obj, now),
        ])
    },
};

/// A quantity at `path` of `v`, `<nil>` when unset (Go's nil pointer).
fn q(v: Option<&Value>, path: &str) -> String {
    match v.and_then(|v| at(v, path)) {
        Some(_) => quantity(v.unwrap_or(&Value::Null), path),
        None => "<nil>".to_string(),
    }
}

/// `formatHPAMetrics`: each spec beside the status of the same index.
fn hpa_metrics(specs: &[Value], statuses: &[Value]) -> String {
    if specs.is_empty() {
        return "<none>".to_string();
    }
    let mut list = Vec::new();
    for (i, spec) in specs.iter().enumerate() {
        let status = statuses.get(i);
        let source = |key: &str| status.and_then(|st| at(st, key));
        let kind = spec["type"].as_str().unwrap_or("");
        let entry = match kind {
            "External" | "Object" => {
                let key = if kind == "External" { "external" } else { "object" };
                let target = &spec[key]["target"];
                if at(target, "averageValue").is_some() {
                    let cur = source(key)
                        .filter(|s| at(s, "current.averageValue").is_some())
                        .map_or_else(|| "<unknown>".into(), |s| q(Some(s), "current.averageValue"));
                    format!("{cur}/{} (avg)", q(Some(target), "averageValue"))
                } else {
                    let cur = source(key).map_or_else(|| "<unknown>".into(), |s| q(Some(s), "current.value"));
                    format!("{cur}/{}", q(Some(target), "value"))
                }
            }
            "Pods" => {
                let cur = source("pods").map_or_else(|| "<unknown>".into(), |s| q(Some(s), "current.averageValue"));
                format!("{cur}/{}", q(Some(&spec["pods"]["target"]), "averageValue"))
            }
            "Resource" | "ContainerResource" => {
                let key = if kind == "Resource" { "resource" } else { "containerResource" };
                let (source_spec, target) = (&spec[key], &spec[key]["target"]);
                let label = source_spec["name"].as_str().unwrap_or("");
                if at(target, "averageValue").is_some() {
                    let cur = source(key).map_or_else(|| "<unknown>".into(), |s| q(Some(s), "current.averageValue"));
                    format!("{label}: {cur}/{}", q(Some(target), "averageValue"))
                } else {
                    let cur = source(key)
                        .and_then(|s| at(s, "current.averageUtilization"))
                        .map_or_else(|| "<unknown>".to_string(), |u| format!("{u}%"));
                    let tgt =
                        at(target, "averageUtilization").map_or_else(|| "<auto>".to_string(), |u| format!("{u}%"));
                    format!("{label}: {cur}/{tgt}")
                }
            }
            _ => "<unknown type>".to_string(),
        };
        list.push(entry);
    }
    if specs.len() > 2 {
        return format!("{} + {} more...", list[..2].join(", "), specs.len() - 2);
    }
    list.join(", ")
}

/// `printPriorityClass`.
pub static PRIORITY_CLASSES: StaticPrinter = StaticPrinter {
    columns: PRIORITY_CLASS_COLUMNS,
    row: |obj, now| {
        Row::cells(vec![
            name(obj),
            int(obj, "value").into(),
            at(obj, "globalDefault").and_then(Value::as_bool).unwrap_or(false).into(),
            age(obj, now),
        ])
    },
};

/// `printRuntimeClass`.
pub static RUNTIME_CLASSES: StaticPrinter = StaticPrinter {
    columns: RUNTIME_CLASS_COLUMNS,
    row: |obj, now| Row::cells(vec![name(obj), s(obj, "handler").into(), age(obj, now)]),
};

/// `printCertificateSigningRequest`.
pub static CERTIFICATE_SIGNING_REQUESTS: StaticPrinter = StaticPrinter {
    columns: CSR_COLUMNS,
    row: |obj, now| {
        let signer = super::or(s(obj, "spec.signerName"), "<none>");
        let duration = at(obj, "spec.expirationSeconds")
            .and_then(Value::as_i64)
            .map_or_else(|| "<none>".to_string(), |secs| human_duration(TimeDelta::seconds(secs)));
        Row::cells(vec![
            name(obj),
            age(obj, now),
            signer.into(),
            s(obj, "spec.username").into(),
            duration.into(),
            csr_condition(obj).into(),
        ])
    },
};

fn csr_condition(obj: &Value) -> String {
    let has = |t: &str| arr(obj, "status.conditions").iter().any(|c| c["type"].as_str() == Some(t));
    let mut out = if has("Denied") {
        "Denied"
    } else if has("Approved") {
        "Approved"
    } else {
        "Pending"
    }
    .to_string();
    if has("Failed") {
        out.push_str(",Failed");
    }
    if !s(obj, "status.certificate").is_empty() {
        out.push_str(",Issued");
    }
    out
}

/// `printControllerRevision`: the controller as `kind.group/name`, lower-cased.
pub static CONTROLLER_REVISIONS: StaticPrinter = StaticPrinter {
    columns: CONTROLLER_REVISION_COLUMNS,
    row: |obj, now| {
        let owner = arr(obj, "metadata.ownerReferences").iter().find(|r| r["controller"].as_bool() == Some(true));
        let controller = match owner {
            None => "<none>".to_string(),
            Some(r) => {
                let group = r["apiVersion"].as_str().and_then(|v| v.split_once('/')).map_or("", |(g, _)| g);
                let kind = r["kind"].as_str().unwrap_or("");
                let name = r["name"].as_str().unwrap_or("");
                match (group, kind) {
                    ("", "") => name.to_string(),
                    ("", k) => format!("{}/{name}", k.to_lowercase()),
                    (g, k) => format!("{}/{name}", format!("{k}.{g}").to_lowercase()),
                }
            }
        };
        Row::cells(vec![name(obj), controller.into(), int(obj, "revision").into(), age(obj, now)])
    },
};

/// `printComponentStatus`: the first Healthy condition.
pub static COMPONENT_STATUSES: StaticPrinter =
    StaticPrinter { columns: COMPONENT_STATUS_COLUMNS, row: component_status_row };

fn component_status_row(obj: &Value, _: DateTime<Utc>) -> Row {
    let healthy = arr(obj, "conditions").iter().find(|c| c["type"].as_str() == Some("Healthy"));
    let (status, message, error) = match healthy {
        Some(c) => (
            if c["status"].as_str() == Some("True") { "Healthy" } else { "Unhealthy" },
            c["message"].as_str().unwrap_or(""),
            c["error"].as_str().unwrap_or(""),
        ),
        None => ("Unknown", "", ""),
    };
    Row::cells(vec![name(obj), status.into(), message.into(), error.into()])
}
