//! `apps/v1` validation (`pkg/apis/apps/validation`): Deployment, ReplicaSet, StatefulSet,
//! DaemonSet.

use serde_json::{Map, Value};

use super::field::{self, Bad, Path};
use super::meta::{self, Selector};
use super::pod;
use super::{IMMUTABLE, NEGATIVE, names, s};
use apimachinery::error::Cause;

fn md(v: &Value) -> Option<&Map<String, Value>> {
    v.get("metadata").and_then(Value::as_object)
}

fn spec(v: &Value) -> &Value {
    static EMPTY: std::sync::LazyLock<Value> = std::sync::LazyLock::new(|| Value::Object(Map::new()));
    v.get("spec").unwrap_or(&EMPTY)
}

fn nonneg(v: &Value, key: &str, path: &Path, out: &mut Vec<Cause>) {
    if let Some(n) = v.get(key).and_then(Value::as_i64).filter(|n| *n < 0) {
        out.push(field::invalid(&path.child(key), Bad::Int(n), NEGATIVE));
    }
}

fn template_labels(spec: &Value) -> Option<&Map<String, Value>> {
    spec.pointer("/template/metadata/labels").and_then(Value::as_object)
}

fn template_labels_bad(spec: &Value) -> Bad {
    Bad::Raw(field::go_string_map(template_labels(spec)))
}

/// The selector checks shared by Deployment, ReplicaSet and StatefulSet: required, valid,
/// not empty (`what` names the kind in kube's message).
fn validate_required_selector(spec: &Value, path: &Path, what: &str, out: &mut Vec<Cause>) {
    match spec.get("selector").filter(|s| !s.is_null()) {
        None => out.push(field::required(&path.child("selector"), "")),
        Some(sel) => {
            out.extend(meta::validate_label_selector(Some(sel), &path.child("selector")));
            let n = sel.get("matchLabels").and_then(Value::as_object).map_or(0, Map::len)
                + sel.get("matchExpressions").and_then(Value::as_array).map_or(0, Vec::len);
            if n == 0 {
                out.push(field::invalid(
                    &path.child("selector"),
                    Bad::Raw(field::go_label_selector(Some(sel))),
                    &format!("empty selector is invalid for {what}"),
                ));
            }
        }
    }
}

/// `ValidatePodTemplateSpecForReplicaSet`.
fn validate_template_for_replicaset(spec: &Value, selector: &Selector<'_>, path: &Path, kind: &str) -> Vec<Cause> {
    let mut out = Vec::new();
    let Some(template) = spec.get("template").filter(|t| !t.is_null()) else {
        return vec![field::required(path, "")];
    };
    if !matches!(selector, Selector::Everything) && !meta::selector_matches(selector, template_labels(spec)) {
        out.push(field::invalid(
            &path.child("metadata").child("labels"),
            template_labels_bad(spec),
            "`selector` does not match template `labels`",
        ));
    }
    out.extend(pod::validate_pod_template_spec(template, path));
    let restart = template.pointer("/spec/restartPolicy").and_then(Value::as_str).unwrap_or("");
    if restart != "Always" {
        out.push(field::not_supported(&path.child("spec").child("restartPolicy"), Bad::s(restart), &["Always"]));
    }
    if template.pointer("/spec/activeDeadlineSeconds").is_some_and(|v| !v.is_null()) {
        out.push(field::forbidden(
            &path.child("spec").child("activeDeadlineSeconds"),
            &format!("activeDeadlineSeconds in {kind} is not Supported"),
        ));
    }
    out
}

fn int_or_percent_value(v: Option<&Value>) -> i64 {
    match v {
        Some(Value::String(s)) if names::percent(s).is_empty() => s.trim_end_matches('%').parse().unwrap_or(0),
        Some(Value::Number(n)) => n.as_i64().unwrap_or(0),
        _ => 0,
    }
}

/// `ValidatePositiveIntOrPercent`.
fn validate_positive_int_or_percent(v: Option<&Value>, path: &Path, out: &mut Vec<Cause>) {
    match v {
        Some(Value::String(s)) => {
            for m in names::percent(s) {
                out.push(field::invalid(path, Bad::Raw(field::go_int_or_string(v)), &m));
            }
        }
        Some(Value::Number(n)) => {
            let n = n.as_i64().unwrap_or(0);
            if n < 0 {
                out.push(field::invalid(path, Bad::Int(n), NEGATIVE));
            }
        }
        _ => {}
    }
}

/// `IsNotMoreThan100Percent`.
fn not_more_than_100_percent(v: Option<&Value>, path: &Path, out: &mut Vec<Cause>) {
    if let Some(Value::String(s)) = v
        && names::percent(s).is_empty()
        && s.trim_end_matches('%').parse::<i64>().unwrap_or(0) > 100
    {
        out.push(field::invalid(path, Bad::Raw(field::go_int_or_string(v)), "must not be greater than 100%"));
    }
}

/// `ValidateDeploymentSpec`.
fn validate_deployment_spec(spec: &Value, path: &Path) -> Vec<Cause> {
    let mut out = Vec::new();
    nonneg(spec, "replicas", path, &mut out);
    validate_required_selector(spec, path, "deployment", &mut out);
    let selector = meta::as_selector(spec.get("selector"));
    if selector == Selector::Invalid {
        out.push(field::invalid(
            &path.child("selector"),
            Bad::Raw(field::go_label_selector(spec.get("selector"))),
            "invalid label selector",
        ));
    } else {
        out.extend(validate_template_for_replicaset(spec, &selector, &path.child("template"), "ReplicaSet"));
    }
    let strategy = spec.get("strategy").cloned().unwrap_or(Value::Object(Map::new()));
    let sp = path.child("strategy");
    let ru = strategy.get("rollingUpdate").filter(|r| !r.is_null());
    match s(&strategy, "type") {
        "Recreate" => {
            if ru.is_some() {
                out.push(field::forbidden(
                    &sp.child("rollingUpdate"),
                    "may not be specified when strategy `type` is 'Recreate'",
                ));
            }
        }
        "RollingUpdate" => match ru {
            None => out.push(field::required(&sp.child("rollingUpdate"), "this should be defaulted and never be nil")),
            Some(ru) => {
                let rp = sp.child("rollingUpdate");
                validate_positive_int_or_percent(ru.get("maxUnavailable"), &rp.child("maxUnavailable"), &mut out);
                validate_positive_int_or_percent(ru.get("maxSurge"), &rp.child("maxSurge"), &mut out);
                if int_or_percent_value(ru.get("maxUnavailable")) == 0 && int_or_percent_value(ru.get("maxSurge")) == 0
                {
                    out.push(field::invalid(
                        &rp.child("maxUnavailable"),
                        Bad::Raw(field::go_int_or_string(ru.get("maxUnavailable"))),
                        "may not be 0 when `maxSurge` is 0",
                    ));
                }
                not_more_than_100_percent(ru.get("maxUnavailable"), &rp.child("maxUnavailable"), &mut out);
            }
        },
        _ => out.push(field::not_supported(
            &sp,
            Bad::Raw(deployment_strategy_go(&strategy)),
            &["Recreate", "RollingUpdate"],
        )),
    }
    nonneg(spec, "minReadySeconds", path, &mut out);
    nonneg(spec, "revisionHistoryLimit", path, &mut out);
    if let Some(pds) = spec.get("progressDeadlineSeconds").and_then(Value::as_i64) {
        if pds < 0 {
            out.push(field::invalid(&path.child("progressDeadlineSeconds"), Bad::Int(pds), NEGATIVE));
        }
        let min_ready = spec.get("minReadySeconds").and_then(Value::as_i64).unwrap_or(0);
        if pds <= min_ready {
            out.push(field::invalid(
                &path.child("progressDeadlineSeconds"),
                Bad::Int(pds),
                "must be greater than minReadySeconds",
            ));
        }
    }
    out
}

fn deployment_strategy_go(strategy: &Value) -> String {
    format!(
        "apps.DeploymentStrategy{{Type:{}, RollingUpdate:{}}}",
        field::go_quote(s(strategy, "type")),
        match strategy.get("rollingUpdate").filter(|r| !r.is_null()) {
            None => "(*apps.RollingUpdateDeployment)(nil)".to_string(),
            Some(r) => format!("&{}", field::go_struct(Some(r))),
        }
    )
}

/// `ValidateDeployment`.
pub fn validate_deployment(obj: &Value) -> Vec<Cause> {
    let mut out = meta::validate_object_meta(md(obj), true, names::name_is_dns_subdomain, &Path::new("metadata"), true);
    out.extend(validate_deployment_spec(spec(obj), &Path::new("spec")));
    out
}

fn selector_immutable(new: &Value, old: &Value, out: &mut Vec<Cause>) {
    let (n, o) = (spec(new).get("selector"), spec(old).get("selector"));
    if n != o {
        out.push(field::invalid(
            &Path::new("spec").child("selector"),
            Bad::Raw(field::go_label_selector(n)),
            IMMUTABLE,
        ));
    }
}

/// The Deployment strategy's `ValidateUpdate`.
pub fn validate_deployment_update(new: &Value, old: &Value) -> Vec<Cause> {
    let mut out = meta::validate_object_meta_update(md(new), md(old), &Path::new("metadata"), true);
    out.extend(validate_deployment_spec(spec(new), &Path::new("spec")));
    selector_immutable(new, old, &mut out);
    out
}

fn validate_replicaset_spec(spec: &Value, path: &Path) -> Vec<Cause> {
    let mut out = Vec::new();
    nonneg(spec, "replicas", path, &mut out);
    nonneg(spec, "minReadySeconds", path, &mut out);
    // kube's message really says "deployment" here.
    validate_required_selector(spec, path, "deployment", &mut out);
    let selector = meta::as_selector(spec.get("selector"));
    if selector == Selector::Invalid {
        out.push(field::invalid(
            &path.child("selector"),
            Bad::Raw(field::go_label_selector(spec.get("selector"))),
            "invalid label selector",
        ));
    } else {
        out.extend(validate_template_for_replicaset(spec, &selector, &path.child("template"), "ReplicaSet"));
    }
    out
}

/// `ValidateReplicaSet`.
pub fn validate_replicaset(obj: &Value) -> Vec<Cause> {
    let mut out = meta::validate_object_meta(md(obj), true, names::name_is_dns_subdomain, &Path::new("metadata"), true);
    out.extend(validate_replicaset_spec(spec(obj), &Path::new("spec")));
    out
}

/// The ReplicaSet strategy's `ValidateUpdate`.
pub fn validate_replicaset_update(new: &Value, old: &Value) -> Vec<Cause> {
    let mut out = meta::validate_object_meta_update(md(new), md(old), &Path::new("metadata"), true);
    out.extend(validate_replicaset_spec(spec(new), &Path::new("spec")));
    selector_immutable(new, old, &mut out);
    out
}

fn validate_statefulset_spec(spec: &Value, path: &Path) -> Vec<Cause> {
    let mut out = Vec::new();
    match s(spec, "podManagementPolicy") {
        "" => out.push(field::required(&path.child("podManagementPolicy"), "")),
        "OrderedReady" | "Parallel" => {}
        other => out.push(field::invalid(
            &path.child("podManagementPolicy"),
            Bad::s(other),
            "must be 'OrderedReady' or 'Parallel'",
        )),
    }
    let strategy = spec.get("updateStrategy").cloned().unwrap_or(Value::Object(Map::new()));
    let ru = strategy.get("rollingUpdate").filter(|r| !r.is_null());
    match s(&strategy, "type") {
        "" => out.push(field::required(&path.child("updateStrategy"), "")),
        "OnDelete" => {
            if let Some(ru) = ru {
                out.push(field::invalid(
                    &path.child("updateStrategy").child("rollingUpdate"),
                    Bad::Raw(field::go_struct(Some(ru))),
                    "only allowed for updateStrategy 'RollingUpdate'",
                ));
            }
        }
        "RollingUpdate" => {
            if let Some(ru) = ru {
                let rp = path.child("updateStrategy").child("rollingUpdate");
                nonneg(ru, "partition", &rp, &mut out);
                if let Some(mu) = ru.get("maxUnavailable").filter(|m| !m.is_null()) {
                    validate_positive_int_or_percent(Some(mu), &rp.child("maxUnavailable"), &mut out);
                    if int_or_percent_value(Some(mu)) == 0 {
                        out.push(field::invalid(
                            &rp.child("maxUnavailable"),
                            Bad::Raw(field::go_int_or_string(Some(mu))),
                            "cannot be 0",
                        ));
                    }
                    not_more_than_100_percent(Some(mu), &rp.child("maxUnavailable"), &mut out);
                }
            }
        }
        _ => out.push(field::invalid(
            &path.child("updateStrategy"),
            Bad::Raw(field::go_struct(Some(&strategy))),
            "must be 'RollingUpdate' or 'OnDelete'",
        )),
    }
    if let Some(policy) = spec.get("persistentVolumeClaimRetentionPolicy").filter(|p| !p.is_null()) {
        let pp = path.child("persistentVolumeClaimRetentionPolicy");
        for key in ["whenDeleted", "whenScaled"] {
            let v = s(policy, key);
            if v != "Retain" && v != "Delete" {
                out.push(field::not_supported(&pp.child(key), Bad::s(v), &["Retain", "Delete"]));
            }
        }
    }
    nonneg(spec, "replicas", path, &mut out);
    nonneg(spec, "minReadySeconds", path, &mut out);
    if let Some(start) = spec.pointer("/ordinals/start").and_then(Value::as_i64).filter(|s| *s < 0) {
        out.push(field::invalid(&path.child("ordinals.start"), Bad::Int(start), NEGATIVE));
    }
    validate_required_selector(spec, path, "statefulset", &mut out);
    let selector = meta::as_selector(spec.get("selector"));
    if selector == Selector::Invalid {
        out.push(field::invalid(&path.child("selector"), Bad::Raw(field::go_label_selector(spec.get("selector"))), ""));
    } else {
        // kube validates only the template's metadata for StatefulSets, not its pod spec.
        let tp = path.child("template");
        match spec.get("template").filter(|t| !t.is_null()) {
            None => out.push(field::required(&tp, "")),
            Some(t) => {
                if !matches!(selector, Selector::Everything)
                    && !meta::selector_matches(&selector, template_labels(spec))
                {
                    out.push(field::invalid(
                        &tp.child("metadata").child("labels"),
                        template_labels_bad(spec),
                        "`selector` does not match template `labels`",
                    ));
                }
                let tmd = t.get("metadata");
                out.extend(meta::validate_labels(tmd.and_then(|m| m.get("labels")), &tp.child("labels")));
                out.extend(meta::validate_annotations(
                    tmd.and_then(|m| m.get("annotations")),
                    &tp.child("annotations"),
                ));
            }
        }
    }
    let restart = spec.pointer("/template/spec/restartPolicy").and_then(Value::as_str).unwrap_or("");
    if restart != "Always" {
        out.push(field::not_supported(
            &path.child("template").child("spec").child("restartPolicy"),
            Bad::s(restart),
            &["Always"],
        ));
    }
    if spec.pointer("/template/spec/activeDeadlineSeconds").is_some_and(|v| !v.is_null()) {
        out.push(field::forbidden(
            &path.child("template").child("spec").child("activeDeadlineSeconds"),
            "activeDeadlineSeconds in StatefulSet is not Supported",
        ));
    }
    out
}

/// `ValidateStatefulSet` (names are DNS labels since 1.27: they become pod hostnames).
pub fn validate_statefulset(obj: &Value) -> Vec<Cause> {
    let mut out = meta::validate_object_meta(md(obj), true, names::name_is_dns_label, &Path::new("metadata"), true);
    out.extend(validate_statefulset_spec(spec(obj), &Path::new("spec")));
    out
}

/// The StatefulSet strategy's `ValidateUpdate`: only replicas, ordinals, template,
/// updateStrategy, persistentVolumeClaimRetentionPolicy, minReadySeconds (and
/// revisionHistoryLimit) may change.
pub fn validate_statefulset_update(new: &Value, old: &Value) -> Vec<Cause> {
    let mut out = validate_statefulset(new);
    out.extend(meta::validate_object_meta_update(md(new), md(old), &Path::new("metadata"), true));
    let strip = |v: &Value| {
        let mut v = spec(v).clone();
        if let Some(m) = v.as_object_mut() {
            for k in [
                "replicas",
                "template",
                "updateStrategy",
                "minReadySeconds",
                "ordinals",
                "persistentVolumeClaimRetentionPolicy",
                "revisionHistoryLimit",
            ] {
                m.remove(k);
            }
        }
        v
    };
    if strip(new) != strip(old) {
        out.push(field::forbidden(
            &Path::new("spec"),
            "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden",
        ));
    }
    out
}

fn validate_daemonset_spec(spec: &Value, path: &Path) -> Vec<Cause> {
    let mut out = meta::validate_label_selector(spec.get("selector"), &path.child("selector"));
    let selector = meta::as_selector(spec.get("selector"));
    if selector != Selector::Invalid && !meta::selector_matches(&selector, template_labels(spec)) {
        out.push(field::invalid(
            &path.child("template").child("metadata").child("labels"),
            template_labels_bad(spec),
            "`selector` does not match template `labels`",
        ));
    }
    if let Some(sel) = spec.get("selector").filter(|s| !s.is_null())
        && matches!(selector, Selector::Everything)
    {
        out.push(field::invalid(
            &path.child("selector"),
            Bad::Raw(field::go_label_selector(Some(sel))),
            "empty selector is invalid for daemonset",
        ));
    }
    let template = spec.get("template").cloned().unwrap_or(Value::Object(Map::new()));
    out.extend(pod::validate_pod_template_spec(&template, &path.child("template")));
    let restart = template.pointer("/spec/restartPolicy").and_then(Value::as_str).unwrap_or("");
    if restart != "Always" {
        out.push(field::not_supported(
            &path.child("template").child("spec").child("restartPolicy"),
            Bad::s(restart),
            &["Always"],
        ));
    }
    if template.pointer("/spec/activeDeadlineSeconds").is_some_and(|v| !v.is_null()) {
        out.push(field::forbidden(
            &path.child("template").child("spec").child("activeDeadlineSeconds"),
            "activeDeadlineSeconds in DaemonSet is not Supported",
        ));
    }
    nonneg(spec, "minReadySeconds", path, &mut out);
    let strategy = spec.get("updateStrategy").cloned().unwrap_or(Value::Object(Map::new()));
    let sp = path.child("updateStrategy");
    match s(&strategy, "type") {
        "OnDelete" => {}
        "RollingUpdate" => match strategy.get("rollingUpdate").filter(|r| !r.is_null()) {
            None => out.push(field::required(&sp.child("rollingUpdate"), "")),
            Some(ru) => {
                let rp = sp.child("rollingUpdate");
                let (mu, ms) = (ru.get("maxUnavailable"), ru.get("maxSurge"));
                validate_positive_int_or_percent(mu, &rp.child("maxUnavailable"), &mut out);
                validate_positive_int_or_percent(ms, &rp.child("maxSurge"), &mut out);
                not_more_than_100_percent(mu, &rp.child("maxUnavailable"), &mut out);
                not_more_than_100_percent(ms, &rp.child("maxSurge"), &mut out);
                let (has_u, has_s) = (int_or_percent_value(mu) != 0, int_or_percent_value(ms) != 0);
                if has_u && has_s {
                    out.push(field::invalid(
                        &rp.child("maxSurge"),
                        Bad::Raw(field::go_int_or_string(ms)),
                        "may not be set when maxUnavailable is non-zero",
                    ));
                } else if !has_u && !has_s {
                    out.push(field::required(&rp.child("maxUnavailable"), "cannot be 0 when maxSurge is 0"));
                }
            }
        },
        _ => out.push(field::not_supported(
            &sp,
            Bad::Raw(field::go_struct(Some(&strategy))),
            &["RollingUpdate", "OnDelete"],
        )),
    }
    nonneg(spec, "revisionHistoryLimit", path, &mut out);
    out
}

/// `ValidateDaemonSet`.
pub fn validate_daemonset(obj: &Value) -> Vec<Cause> {
    let mut out = meta::validate_object_meta(md(obj), true, names::name_is_dns_subdomain, &Path::new("metadata"), true);
    out.extend(validate_daemonset_spec(spec(obj), &Path::new("spec")));
    out
}

/// The DaemonSet strategy's `ValidateUpdate`.
pub fn validate_daemonset_update(new: &Value, old: &Value) -> Vec<Cause> {
    let mut out = meta::validate_object_meta_update(md(new), md(old), &Path::new("metadata"), true);
    out.extend(validate_daemonset_spec(spec(new), &Path::new("spec")));
    selector_immutable(new, old, &mut out);
    out
}

/// The `/status` validation of the workload kinds (Deployments, ReplicaSets, StatefulSets,
/// DaemonSets, Jobs): the metadata update rules, then non-negative status counters.
pub fn validate_workload_status_update(new: &Value, old: &Value) -> Vec<Cause> {
    let mut out = meta::validate_object_meta_update(md(new), md(old), &Path::new("metadata"), true);
    out.extend(validate_workload_status(new));
    out
}

/// Status checks shared by the workload kinds' `/status` validation: counters non-negative.
fn validate_workload_status(obj: &Value) -> Vec<Cause> {
    let mut out = Vec::new();
    let Some(status) = obj.get("status").filter(|s| s.is_object()) else { return out };
    let p = Path::new("status");
    let mut keys: Vec<&String> = status.as_object().map(|m| m.keys().collect()).unwrap_or_default();
    keys.sort();
    for k in keys {
        if status[k.as_str()].is_i64() {
            nonneg(status, k, &p, &mut out);
        }
    }
    out
}
