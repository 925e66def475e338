//! HorizontalPodAutoscaler, stored as `autoscaling/v2` and served at v2 and v1 (kube:
//! `pkg/registry/autoscaling/horizontalpodautoscaler`, `pkg/apis/autoscaling/v1/conversion.go`).
//!
//! v1 knows one metric, CPU utilization: the rest of a v2 object travels through v1 in four
//! `autoscaling.alpha.kubernetes.io/` annotations, written as kube's Go encoder writes them
//! (struct field order, compact, HTML-escaped), and taken back (and removed) when a v1 object
//! is written. The v2 defaults apply to v2 bodies and every stored object; v1 bodies get only
//! v1's `minReplicas`, as in kube.

use k8s_openapi::api::autoscaling::v1::HorizontalPodAutoscaler as V1;
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler as V2;
use serde_json::{Map, Value, json};

use crate::printers;
use apimachinery::catalogue::{ResourceDef, Strategy, Subresource};
use apimachinery::error::{ApiError, Cause};
use apimachinery::gofmt::html_escaped;
use apimachinery::table::Printer;
use apimachinery::validation::field::{self, Bad, Path};
use validation::{meta, names};

const METRICS: &str = "autoscaling.alpha.kubernetes.io/metrics";
const CURRENT_METRICS: &str = "autoscaling.alpha.kubernetes.io/current-metrics";
const CONDITIONS: &str = "autoscaling.alpha.kubernetes.io/conditions";
const BEHAVIOR: &str = "autoscaling.alpha.kubernetes.io/behavior";
const ROUND_TRIP: [&str; 4] = [METRICS, CURRENT_METRICS, CONDITIONS, BEHAVIOR];

pub(super) fn v2() -> ResourceDef {
    ResourceDef::new(
        "autoscaling",
        "v2",
        "horizontalpodautoscalers",
        "HorizontalPodAutoscaler",
        Autoscalers { v1: false },
    )
    .short_names(&["hpa"])
    .categories(&["all"])
    .subresources(&[Subresource::Status])
    .schema::<V2>()
}

pub(super) fn v1() -> ResourceDef {
    ResourceDef::new(
        "autoscaling",
        "v1",
        "horizontalpodautoscalers",
        "HorizontalPodAutoscaler",
        Autoscalers { v1: true },
    )
    .short_names(&["hpa"])
    .categories(&["all"])
    .subresources(&[Subresource::Status])
    .stored_as("autoscaling", "v2")
    .schema::<V1>()
}

struct Autoscalers {
    /// Served as `autoscaling/v1` (converted).
    v1: bool,
}

impl Strategy for Autoscalers {
    fn defaults(&self, obj: &mut Value) {
        if obj.pointer("/spec/minReplicas").is_none_or(Value::is_null)
            && let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut)
        {
            spec.insert("minReplicas".into(), json!(1));
        }
        if !self.v1 {
            v2_defaults(obj);
        }
    }

    fn prepare_for_create(&self, obj: &mut Value) {
        crate::defaults::reset_status(obj, json!({"desiredReplicas": 0}));
    }

    fn validate(&self, _: &ResourceDef, obj: &Value) -> Vec<Cause> {
        let md = obj.get("metadata").and_then(Value::as_object);
        let mut out = meta::validate_object_meta(md, true, names::name_is_dns_subdomain, &Path::new("metadata"), true);
        out.extend(validate_spec(obj, 1));
        out
    }

    fn validate_update(&self, _: &ResourceDef, new: &Value, old: &Value) -> Vec<Cause> {
        let mut out = apimachinery::catalogue::meta_update(new, old);
        let lower = if old.pointer("/spec/minReplicas").and_then(Value::as_i64) == Some(0) { 0 } else { 1 };
        out.extend(validate_spec(new, lower));
        out
    }

    fn validate_status_update(&self, _: &ResourceDef, new: &Value, old: &Value) -> Vec<Cause> {
        let mut out = apimachinery::catalogue::meta_update(new, old);
        for f in ["currentReplicas", "desiredReplicas"] {
            if let Some(n) = new.pointer(&format!("/status/{f}")).and_then(Value::as_i64).filter(|n| *n < 0) {
                let path = Path::new("status").child(f);
                out.push(field::invalid(&path, Bad::Int(n), "must be greater than or equal to 0"));
            }
        }
        out
    }

    fn printer(&self) -> Option<&dyn Printer> {
        Some(&printers::HORIZONTAL_POD_AUTOSCALERS)
    }

    fn to_storage(&self, obj: Value) -> Result<Value, ApiError> {
        Ok(if self.v1 { v1_to_v2(obj) } else { obj })
    }

    fn to_served(&self, obj: &Value) -> Option<Value> {
        self.v1.then(|| {
            let mut stored = obj.clone();
            v2_defaults(&mut stored);
            v2_to_v1(&stored)
        })
    }
}

/// The v2 defaults: one replica at least, CPU at 80% when no metric is given, and the
/// behaviour's missing rules.
fn v2_defaults(obj: &mut Value) {
    let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else { return };
    if spec.get("minReplicas").is_none_or(Value::is_null) {
        spec.insert("minReplicas".into(), json!(1));
    }
    if spec.get("metrics").and_then(Value::as_array).is_none_or(Vec::is_empty) {
        spec.insert("metrics".into(), json!([cpu_utilization(80)]));
    }
    if let Some(behavior) = spec.get_mut("behavior").and_then(Value::as_object_mut) {
        let up = json!({"stabilizationWindowSeconds": 0, "selectPolicy": "Max",
            "policies": [{"type": "Pods", "value": 4, "periodSeconds": 15}, {"type": "Percent", "value": 100, "periodSeconds": 15}]});
        let down = json!({"selectPolicy": "Max", "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}]});
        for (key, default) in [("scaleUp", up), ("scaleDown", down)] {
            let mut rules = default;
            if let Some(given) = behavior.get(key).and_then(Value::as_object) {
                for (k, v) in given.iter().filter(|(_, v)| !v.is_null()) {
                    rules[k.as_str()] = v.clone();
                }
            }
            behavior.insert(key.into(), rules);
        }
    }
}

fn cpu_utilization(percent: i64) -> Value {
    json!({"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": percent}}})
}

fn is_cpu_utilization(m: &Value, part: &str, value: &str) -> bool {
    m["type"] == "Resource" && m["resource"]["name"] == "cpu" && m["resource"][part][value].is_i64()
}

// ---------------------------------------------------------------------------------------------
// Go's encoding/json, for the annotations: struct field order, omitempty where the v1 types
// have it, HTML characters escaped.

/// A JSON object written in the given field order; `None` values are omitted.
fn go_object(fields: Vec<(&str, Option<String>)>) -> String {
    let body: Vec<String> = fields
        .into_iter()
        .filter_map(|(k, v)| v.map(|v| format!("{}:{v}", serde_json::to_string(k).unwrap_or_default())))
        .collect();
    format!("{{{}}}", body.join(","))
}

fn go(v: &Value) -> Option<String> {
    (!v.is_null()).then(|| serde_json::to_string(v).unwrap_or_default())
}

/// A Quantity that Go always writes: `"0"` when unset.
fn quantity(v: &Value) -> Option<String> {
    Some(go(v).unwrap_or_else(|| "\"0\"".into()))
}

/// Which half of an autoscaling/v1 metric an annotation holds: the spec's targets
/// (`targetValue`) or the status's current values (`currentValue`).
#[derive(Clone, Copy, PartialEq)]
enum Half {
    Spec,
    Status,
}

/// One v2 metric in autoscaling/v1's form (`MetricSpec` or `MetricStatus`), as Go encodes it:
/// non-pointer quantities are always written (`"0"`), pointers only when set.
fn v1_metric(m: &Value, half: Half) -> String {
    let word = if half == Half::Spec { "target" } else { "current" };
    let named = |field: &str| format!("{word}{field}");
    // A quantity that is a pointer in the spec's type and a value in the status's.
    let value_in_status = |v: &Value| if half == Half::Status { quantity(v) } else { go(v) };
    let t = &m["type"];
    let source = match t.as_str().unwrap_or("") {
        "Object" => {
            let (o, got) = (&m["object"], &m["object"][word]);
            Some((
                "object",
                vec![
                    ("target".to_string(), go(&o["describedObject"])),
                    ("metricName".to_string(), go(&o["metric"]["name"])),
                    (named("Value"), quantity(&got["value"])),
                    ("selector".to_string(), go(&o["metric"]["selector"])),
                    ("averageValue".to_string(), go(&got["averageValue"])),
                ],
            ))
        }
        "Pods" => {
            let p = &m["pods"];
            Some((
                "pods",
                vec![
                    ("metricName".to_string(), go(&p["metric"]["name"])),
                    (named("AverageValue"), quantity(&p[word]["averageValue"])),
                    ("selector".to_string(), go(&p["metric"]["selector"])),
                ],
            ))
        }
        kind @ ("Resource" | "ContainerResource") => {
            let key = if kind == "Resource" { "resource" } else { "containerResource" };
            let r = &m[key];
            let mut fields = vec![
                ("name".to_string(), go(&r["name"]).or(Some("\"\"".into()))),
                (named("AverageUtilization"), go(&r[word]["averageUtilization"])),
                (named("AverageValue"), value_in_status(&r[word]["averageValue"])),
            ];
            if key == "containerResource" {
                fields.push(("container".to_string(), go(&r["container"]).or(Some("\"\"".into()))));
            }
            Some((key, fields))
        }
        "External" => {
            let e = &m["external"];
            Some((
                "external",
                vec![
                    ("metricName".to_string(), go(&e["metric"]["name"])),
                    ("metricSelector".to_string(), go(&e["metric"]["selector"])),
                    (named("Value"), value_in_status(&e[word]["value"])),
                    (named("AverageValue"), go(&e[word]["averageValue"])),
                ],
            ))
        }
        _ => None,
    };
    let mut fields = vec![("type", go(t).or(Some("\"\"".into())))];
    let body = source.map(|(key, body)| (key, go_object(body.iter().map(|(k, v)| (k.as_str(), v.clone())).collect())));
    if let Some((key, body)) = body {
        fields.push((key, Some(body)));
    }
    go_object(fields)
}

fn condition(c: &Value) -> String {
    go_object(vec![
        ("type", go(&c["type"]).or(Some("\"\"".into()))),
        ("status", go(&c["status"]).or(Some("\"\"".into()))),
        ("lastTransitionTime", Some(go(&c["lastTransitionTime"]).unwrap_or_else(|| "null".into()))),
        ("reason", go(&c["reason"]).filter(|s| s != "\"\"")),
        ("message", go(&c["message"]).filter(|s| s != "\"\"")),
    ])
}

/// The behaviour as kube's internal Go type encodes it: field names capitalised, nulls kept.
fn behavior(b: &Value) -> String {
    let rules = |r: &Value| -> String {
        if r.is_null() {
            return "null".into();
        }
        let policies = match r["policies"].as_array() {
            None => "null".to_string(),
            Some(ps) => format!(
                "[{}]",
                ps.iter()
                    .map(|p| go_object(vec![
                        ("Type", Some(go(&p["type"]).unwrap_or_else(|| "\"\"".into()))),
                        ("Value", Some(go(&p["value"]).unwrap_or_else(|| "0".into()))),
                        ("PeriodSeconds", Some(go(&p["periodSeconds"]).unwrap_or_else(|| "0".into()))),
                    ]))
                    .collect::<Vec<_>>()
                    .join(",")
            ),
        };
        go_object(vec![
            ("StabilizationWindowSeconds", Some(go(&r["stabilizationWindowSeconds"]).unwrap_or_else(|| "null".into()))),
            ("SelectPolicy", Some(go(&r["selectPolicy"]).unwrap_or_else(|| "null".into()))),
            ("Policies", Some(policies)),
        ])
    };
    go_object(vec![("ScaleUp", Some(rules(&b["scaleUp"]))), ("ScaleDown", Some(rules(&b["scaleDown"])))])
}

fn json_list(items: &[Value], f: fn(&Value) -> String) -> String {
    html_escaped(format!("[{}]", items.iter().map(f).collect::<Vec<_>>().join(",")))
}

/// A stored (v2) object in its v1 form.
fn v2_to_v1(obj: &Value) -> Value {
    let mut out = obj.clone();
    out["apiVersion"] = "autoscaling/v1".into();
    let spec = &obj["spec"];
    let status = &obj["status"];
    let metrics = spec["metrics"].as_array().cloned().unwrap_or_default();
    let current = status["currentMetrics"].as_array().cloned().unwrap_or_default();
    let conditions = status["conditions"].as_array().cloned().unwrap_or_default();

    let mut v1_spec = Map::new();
    for k in ["scaleTargetRef", "minReplicas", "maxReplicas"] {
        if let Some(v) = spec.get(k).filter(|v| !v.is_null()) {
            v1_spec.insert(k.into(), v.clone());
        }
    }
    if let Some(m) = metrics.iter().find(|m| is_cpu_utilization(m, "target", "averageUtilization")) {
        v1_spec.insert("targetCPUUtilizationPercentage".into(), m["resource"]["target"]["averageUtilization"].clone());
    }
    let mut v1_status = Map::new();
    for k in ["observedGeneration", "lastScaleTime", "currentReplicas", "desiredReplicas"] {
        if let Some(v) = status.get(k).filter(|v| !v.is_null()) {
            v1_status.insert(k.into(), v.clone());
        }
    }
    v1_status.entry("currentReplicas").or_insert(json!(0));
    v1_status.entry("desiredReplicas").or_insert(json!(0));
    if let Some(m) = current.iter().rev().find(|m| is_cpu_utilization(m, "current", "averageUtilization")) {
        v1_status
            .insert("currentCPUUtilizationPercentage".into(), m["resource"]["current"]["averageUtilization"].clone());
    }
    out["spec"] = Value::Object(v1_spec);
    out["status"] = Value::Object(v1_status);

    let mut annotations = obj.pointer("/metadata/annotations").and_then(Value::as_object).cloned().unwrap_or_default();
    for k in ROUND_TRIP {
        annotations.remove(k);
    }
    let others: Vec<Value> =
        metrics.iter().filter(|m| !is_cpu_utilization(m, "target", "averageUtilization")).cloned().collect();
    if !others.is_empty() {
        annotations.insert(METRICS.into(), json_list(&others, |m| v1_metric(m, Half::Spec)).into());
    }
    if !current.is_empty() {
        annotations.insert(CURRENT_METRICS.into(), json_list(&current, |m| v1_metric(m, Half::Status)).into());
    }
    if let Some(b) = spec.get("behavior").filter(|b| !b.is_null()) {
        annotations.insert(BEHAVIOR.into(), html_escaped(behavior(b)).into());
    }
    if !conditions.is_empty() {
        annotations.insert(CONDITIONS.into(), json_list(&conditions, condition).into());
    }
    set_annotations(&mut out, annotations);
    out
}

fn set_annotations(obj: &mut Value, annotations: Map<String, Value>) {
    let Some(md) = obj.get_mut("metadata").and_then(Value::as_object_mut) else { return };
    if annotations.is_empty() {
        md.remove("annotations");
    } else {
        md.insert("annotations".into(), Value::Object(annotations));
    }
}

/// Reads an annotation as Go's decoder would: keys matched without regard to case.
fn annotation(annotations: &Map<String, Value>, key: &str) -> Option<Value> {
    let text = annotations.get(key)?.as_str()?;
    serde_json::from_str::<Value>(text).ok().map(|v| lower_keys(&v))
}

/// Object keys lower-cased, so lookups by lower-cased Go field names match any casing.
fn lower_keys(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(m.iter().map(|(k, v)| (k.to_lowercase(), lower_keys(v))).collect()),
        Value::Array(a) => Value::Array(a.iter().map(lower_keys).collect()),
        other => other.clone(),
    }
}

/// `{k: v}` without the null values.
fn object(pairs: Vec<(&str, &Value)>) -> Value {
    Value::Object(pairs.into_iter().filter(|(_, v)| !v.is_null()).map(|(k, v)| (k.to_string(), v.clone())).collect())
}

fn identifier(name: &Value, selector: &Value) -> Value {
    object(vec![("name", name), ("selector", selector)])
}

fn metric_spec_from_v1(m: &Value) -> Value {
    let t = m["type"].clone();
    let mut out = json!({"type": t});
    match t.as_str().unwrap_or("") {
        "Object" => {
            let o = &m["object"];
            let ty = if o["averagevalue"].is_null() { "Value" } else { "AverageValue" };
            let zero = json!("0");
            let value = if o["targetvalue"].is_null() { &zero } else { &o["targetvalue"] };
            out["object"] = object(vec![
                ("describedObject", &restore_ref(&o["target"])),
                ("target", &object(vec![("type", &json!(ty)), ("value", value), ("averageValue", &o["averagevalue"])])),
                ("metric", &identifier(&o["metricname"], &o["selector"])),
            ]);
        }
        "Pods" => {
            let p = &m["pods"];
            out["pods"] = object(vec![
                ("metric", &identifier(&p["metricname"], &p["selector"])),
                ("target", &object(vec![("type", &json!("AverageValue")), ("averageValue", &p["targetaveragevalue"])])),
            ]);
        }
        kind @ ("Resource" | "ContainerResource") => {
            let key = if kind == "Resource" { "resource" } else { "containerresource" };
            let r = &m[key];
            let ty = if r["targetaverageutilization"].is_null() { "AverageValue" } else { "Utilization" };
            let target = object(vec![
                ("type", &json!(ty)),
                ("averageValue", &r["targetaveragevalue"]),
                ("averageUtilization", &r["targetaverageutilization"]),
            ]);
            let mut pairs = vec![("name", &r["name"]), ("target", &target)];
            if kind == "ContainerResource" {
                pairs.push(("container", &r["container"]));
            }
            out[if kind == "Resource" { "resource" } else { "containerResource" }] = object(pairs);
        }
        "External" => {
            let e = &m["external"];
            let ty = if e["targetvalue"].is_null() { "AverageValue" } else { "Value" };
            out["external"] = object(vec![
                ("metric", &identifier(&e["metricname"], &e["metricselector"])),
                (
                    "target",
                    &object(vec![
                        ("type", &json!(ty)),
                        ("value", &e["targetvalue"]),
                        ("averageValue", &e["targetaveragevalue"]),
                    ]),
                ),
            ]);
        }
        _ => {}
    }
    out
}

fn metric_status_from_v1(m: &Value) -> Value {
    let t = m["type"].clone();
    let mut out = json!({"type": t});
    match t.as_str().unwrap_or("") {
        "Object" => {
            let o = &m["object"];
            out["object"] = object(vec![
                ("metric", &identifier(&o["metricname"], &o["selector"])),
                ("current", &object(vec![("value", &o["currentvalue"]), ("averageValue", &o["averagevalue"])])),
                ("describedObject", &restore_ref(&o["target"])),
            ]);
        }
        "Pods" => {
            let p = &m["pods"];
            out["pods"] = object(vec![
                ("metric", &identifier(&p["metricname"], &p["selector"])),
                ("current", &object(vec![("averageValue", &p["currentaveragevalue"])])),
            ]);
        }
        kind @ ("Resource" | "ContainerResource") => {
            let key = if kind == "Resource" { "resource" } else { "containerresource" };
            let r = &m[key];
            let current = object(vec![
                ("averageValue", &r["currentaveragevalue"]),
                ("averageUtilization", &r["currentaverageutilization"]),
            ]);
            let mut pairs = vec![("name", &r["name"]), ("current", &current)];
            if kind == "ContainerResource" {
                pairs.push(("container", &r["container"]));
            }
            out[if kind == "Resource" { "resource" } else { "containerResource" }] = object(pairs);
        }
        "External" => {
            let e = &m["external"];
            out["external"] = object(vec![
                ("metric", &identifier(&e["metricname"], &e["metricselector"])),
                ("current", &object(vec![("value", &e["currentvalue"]), ("averageValue", &e["currentaveragevalue"])])),
            ]);
        }
        _ => {}
    }
    out
}

/// A CrossVersionObjectReference read case-insensitively, back in its JSON names.
fn restore_ref(r: &Value) -> Value {
    object(vec![("kind", &r["kind"]), ("name", &r["name"]), ("apiVersion", &r["apiversion"])])
}

fn behavior_from_v1(b: &Value) -> Option<Value> {
    let rules = |r: &Value| -> Value {
        if r.is_null() {
            return Value::Null;
        }
        let policies = r["policies"].as_array().map(|ps| {
            Value::Array(
                ps.iter()
                    .map(|p| {
                        object(vec![
                            ("type", &p["type"]),
                            ("value", &p["value"]),
                            ("periodSeconds", &p["periodseconds"]),
                        ])
                    })
                    .collect(),
            )
        });
        object(vec![
            ("stabilizationWindowSeconds", &r["stabilizationwindowseconds"]),
            ("selectPolicy", &r["selectpolicy"]),
            ("policies", &policies.unwrap_or(Value::Null)),
        ])
    };
    let (up, down) = (rules(&b["scaleup"]), rules(&b["scaledown"]));
    (!up.is_null() || !down.is_null()).then(|| object(vec![("scaleUp", &up), ("scaleDown", &down)]))
}

fn condition_from_v1(c: &Value) -> Value {
    object(vec![
        ("type", &c["type"]),
        ("status", &c["status"]),
        ("lastTransitionTime", &c["lasttransitiontime"]),
        ("reason", &c["reason"]),
        ("message", &c["message"]),
    ])
}

/// A v1 body in its stored (v2) form.
fn v1_to_v2(obj: Value) -> Value {
    let mut out = obj.clone();
    out["apiVersion"] = "autoscaling/v2".into();
    let annotations = obj.pointer("/metadata/annotations").and_then(Value::as_object).cloned().unwrap_or_default();
    let spec = &obj["spec"];
    let status = &obj["status"];

    let mut v2_spec = Map::new();
    for k in ["scaleTargetRef", "minReplicas", "maxReplicas"] {
        if let Some(v) = spec.get(k).filter(|v| !v.is_null()) {
            v2_spec.insert(k.into(), v.clone());
        }
    }
    let cpu = spec.get("targetCPUUtilizationPercentage").and_then(Value::as_i64).map(cpu_utilization);
    let mut metrics: Vec<Value> = cpu.iter().cloned().collect();
    if let Some(Value::Array(list)) = annotation(&annotations, METRICS) {
        metrics = list.iter().map(metric_spec_from_v1).chain(cpu).collect();
    } else if annotation(&annotations, METRICS).is_some_and(|v| v.is_null()) {
        metrics = cpu.into_iter().collect();
    }
    if let Some(b) = annotation(&annotations, BEHAVIOR).and_then(|b| behavior_from_v1(&b)) {
        v2_spec.insert("behavior".into(), b);
    }
    if metrics.is_empty() {
        metrics.push(cpu_utilization(80));
    }
    v2_spec.insert("metrics".into(), Value::Array(metrics));

    let mut v2_status = Map::new();
    for k in ["observedGeneration", "lastScaleTime", "currentReplicas", "desiredReplicas"] {
        if let Some(v) = status.get(k).filter(|v| !v.is_null()) {
            v2_status.insert(k.into(), v.clone());
        }
    }
    let mut current: Vec<Value> = status
        .get("currentCPUUtilizationPercentage")
        .and_then(Value::as_i64)
        .map(|u| json!({"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": u}}}))
        .into_iter()
        .collect();
    if let Some(Value::Array(list)) = annotation(&annotations, CURRENT_METRICS) {
        current = list.iter().map(metric_status_from_v1).collect();
    }
    if !current.is_empty() {
        v2_status.insert("currentMetrics".into(), Value::Array(current));
    }
    if let Some(Value::Array(list)) = annotation(&annotations, CONDITIONS) {
        v2_status.insert("conditions".into(), Value::Array(list.iter().map(condition_from_v1).collect()));
    }
    out["spec"] = Value::Object(v2_spec);
    out["status"] = Value::Object(v2_status);
    let mut kept = annotations;
    for k in ROUND_TRIP {
        kept.remove(k);
    }
    set_annotations(&mut out, kept);
    out
}

// ---------------------------------------------------------------------------------------------
// Validation (`pkg/apis/autoscaling/validation`), over the stored (v2) form.

fn validate_path_segment(out: &mut Vec<Cause>, path: &Path, value: &str, what: &str) {
    if value.is_empty() {
        out.push(field::required(path, what));
        return;
    }
    for msg in names::path_segment_name(value, false) {
        out.push(field::invalid(path, Bad::s(value), &msg));
    }
}

fn validate_spec(obj: &Value, lower: i64) -> Vec<Cause> {
    let mut out = Vec::new();
    let sp = Path::new("spec");
    let spec = &obj["spec"];
    let min = spec["minReplicas"].as_i64();
    let max = spec["maxReplicas"].as_i64().unwrap_or(0);
    if let Some(m) = min.filter(|m| *m < lower) {
        out.push(field::invalid(
            &sp.child("minReplicas"),
            Bad::Int(m),
            &format!("must be greater than or equal to {lower}"),
        ));
    }
    if max < 1 {
        out.push(field::invalid(&sp.child("maxReplicas"), Bad::Int(max), "must be greater than 0"));
    }
    if min.is_some_and(|m| max < m) {
        out.push(field::invalid(
            &sp.child("maxReplicas"),
            Bad::Int(max),
            "must be greater than or equal to `minReplicas`",
        ));
    }
    let target = sp.child("scaleTargetRef");
    validate_path_segment(&mut out, &target.child("kind"), spec["scaleTargetRef"]["kind"].as_str().unwrap_or(""), "");
    validate_path_segment(&mut out, &target.child("name"), spec["scaleTargetRef"]["name"].as_str().unwrap_or(""), "");
    let metrics = spec["metrics"].as_array().map_or(&[][..], Vec::as_slice);
    for (i, m) in metrics.iter().enumerate() {
        validate_metric(&mut out, &sp.child("metrics").index(i), m);
    }
    if min == Some(0) && !metrics.iter().any(|m| matches!(m["type"].as_str(), Some("Object" | "External"))) {
        out.push(field::forbidden(
            &sp.child("metrics"),
            "must specify at least one Object or External metric to support scaling to zero replicas",
        ));
    }
    if let Some(b) = spec.get("behavior").filter(|b| !b.is_null()) {
        for key in ["scaleUp", "scaleDown"] {
            if let Some(r) = b.get(key).filter(|r| !r.is_null()) {
                validate_rules(&mut out, &sp.child("behavior").child(key), r);
            }
        }
    }
    out
}

const METRIC_TYPES: [&str; 5] = ["ContainerResource", "External", "Object", "Pods", "Resource"];

fn validate_metric(out: &mut Vec<Cause>, p: &Path, m: &Value) {
    let t = m["type"].as_str().unwrap_or("");
    if t.is_empty() {
        out.push(field::required(&p.child("type"), "must specify a metric source type"));
    } else if !METRIC_TYPES.contains(&t) {
        out.push(field::not_supported(&p.child("type"), Bad::s(t), &METRIC_TYPES));
    }
    let key = match t {
        "Object" => "object",
        "External" => "external",
        "Pods" => "pods",
        "Resource" => "resource",
        "ContainerResource" => "containerResource",
        _ => return,
    };
    let source = &m[key];
    if source.is_null() {
        out.push(field::required(&p.child(key), "must populate information for the given metric source"));
        return;
    }
    let q = p.child(key);
    let target = &source["target"];
    validate_target(out, &q.child("target"), target);
    match key {
        "resource" | "containerResource" => {
            if source["name"].as_str().unwrap_or("").is_empty() {
                out.push(field::required(&q.child("name"), "must specify a resource name"));
            }
            let (util, avg) = (!target["averageUtilization"].is_null(), !target["averageValue"].is_null());
            if !util && !avg {
                out.push(field::required(
                    &q.child("target").child("averageUtilization"),
                    "must set either a target raw value or a target utilization",
                ));
            } else if util && avg {
                out.push(field::forbidden(
                    &q.child("target").child("averageValue"),
                    "may not set both a target raw value and a target utilization",
                ));
            }
        }
        "pods" if target["averageValue"].is_null() => out.push(field::required(
            &q.child("target").child("averageValue"),
            "must specify a positive target averageValue",
        )),
        _ => {}
    }
}

fn validate_target(out: &mut Vec<Cause>, t: &Path, target: &Value) {
    let ty = target["type"].as_str().unwrap_or("");
    if ty.is_empty() {
        out.push(field::required(&t.child("type"), "must specify a metric target type"));
    }
    if !matches!(ty, "Utilization" | "Value" | "AverageValue") {
        out.push(field::invalid(&t.child("type"), Bad::s(ty), "must be either Utilization, Value, or AverageValue"));
    }
    if let Some(u) = target["averageUtilization"].as_i64().filter(|u| *u < 1) {
        out.push(field::invalid(&t.child("averageUtilization"), Bad::Int(u), "must be greater than 0"));
    }
}

fn validate_rules(out: &mut Vec<Cause>, p: &Path, r: &Value) {
    if let Some(w) = r["stabilizationWindowSeconds"].as_i64() {
        if w < 0 {
            out.push(field::invalid(
                &p.child("stabilizationWindowSeconds"),
                Bad::Int(w),
                "must be greater than or equal to zero",
            ));
        } else if w > 3600 {
            out.push(field::invalid(
                &p.child("stabilizationWindowSeconds"),
                Bad::Int(w),
                "must be less than or equal to 3600",
            ));
        }
    }
    if let Some(s) = r["selectPolicy"].as_str().filter(|s| !["Max", "Min", "Disabled"].contains(s)) {
        out.push(field::not_supported(&p.child("selectPolicy"), Bad::s(s), &["Disabled", "Max", "Min"]));
    }
    let policies = r["policies"].as_array().map_or(&[][..], Vec::as_slice);
    if policies.is_empty() {
        out.push(field::required(&p.child("policies"), "must specify at least one Policy"));
    }
    for (j, policy) in policies.iter().enumerate() {
        let pp = p.child("policies").index(j);
        let ty = policy["type"].as_str().unwrap_or("");
        if !["Pods", "Percent"].contains(&ty) {
            out.push(field::not_supported(&pp.child("type"), Bad::s(ty), &["Percent", "Pods"]));
        }
        let value = policy["value"].as_i64().unwrap_or(0);
        if value <= 0 {
            out.push(field::invalid(&pp.child("value"), Bad::Int(value), "must be greater than zero"));
        }
        let period = policy["periodSeconds"].as_i64().unwrap_or(0);
        if period <= 0 {
            out.push(field::invalid(&pp.child("periodSeconds"), Bad::Int(period), "must be greater than zero"));
        } else if period > 1800 {
            out.push(field::invalid(
                &pp.child("periodSeconds"),
                Bad::Int(period),
                "must be less than or equal to 1800",
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stored() -> Value {
        json!({
            "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "web", "namespace": "default", "annotations": {"team": "a"}},
            "spec": {
                "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                "minReplicas": 1, "maxReplicas": 10,
                "metrics": [
                    {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}}},
                    {"type": "Pods", "pods": {"metric": {"name": "pps"}, "target": {"type": "AverageValue", "averageValue": "1k"}}}
                ],
                "behavior": {"scaleDown": {"stabilizationWindowSeconds": 300}}
            },
            "status": {
                "currentReplicas": 2, "desiredReplicas": 2,
                "currentMetrics": [{"type": "Resource", "resource": {"name": "cpu", "current": {"averageValue": "120m", "averageUtilization": 24}}}],
                "conditions": [{"type": "AbleToScale", "status": "True", "lastTransitionTime": "2024-05-01T00:00:00Z", "reason": "ReadyForNewScale", "message": "recommended size matches current size"}]
            }
        })
    }

    #[test]
    fn v2_reads_at_v1_as_kube_writes_it() {
        let v1 = Autoscalers { v1: true }.to_served(&stored()).unwrap();
        let a = &v1["metadata"]["annotations"];
        assert_eq!(a["team"], "a");
        assert_eq!(
            a[BEHAVIOR],
            r#"{"ScaleUp":{"StabilizationWindowSeconds":0,"SelectPolicy":"Max","Policies":[{"Type":"Pods","Value":4,"PeriodSeconds":15},{"Type":"Percent","Value":100,"PeriodSeconds":15}]},"ScaleDown":{"StabilizationWindowSeconds":300,"SelectPolicy":"Max","Policies":[{"Type":"Percent","Value":100,"PeriodSeconds":15}]}}"#
        );
        assert_eq!(
            a[CONDITIONS],
            r#"[{"type":"AbleToScale","status":"True","lastTransitionTime":"2024-05-01T00:00:00Z","reason":"ReadyForNewScale","message":"recommended size matches current size"}]"#
        );
        assert_eq!(
            a[CURRENT_METRICS],
            r#"[{"type":"Resource","resource":{"name":"cpu","currentAverageUtilization":24,"currentAverageValue":"120m"}}]"#
        );
        assert_eq!(a[METRICS], r#"[{"type":"Pods","pods":{"metricName":"pps","targetAverageValue":"1k"}}]"#);
        assert_eq!(
            v1["spec"],
            json!({"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}, "minReplicas": 1, "maxReplicas": 10, "targetCPUUtilizationPercentage": 50})
        );
        assert_eq!(
            v1["status"],
            json!({"currentReplicas": 2, "desiredReplicas": 2, "currentCPUUtilizationPercentage": 24})
        );
    }

    #[test]
    fn v1_metrics_write_value_quantities_and_omit_unset_pointers() {
        let spec = json!({"type": "External", "external": {"metric": {"name": "q"}, "target": {"type": "AverageValue", "averageValue": "2"}}});
        let status =
            json!({"type": "External", "external": {"metric": {"name": "q"}, "current": {"averageValue": "3"}}});
        // The spec's targetValue is a pointer (left out); the status's currentValue is not ("0").
        assert_eq!(
            v1_metric(&spec, Half::Spec),
            r#"{"type":"External","external":{"metricName":"q","targetAverageValue":"2"}}"#
        );
        assert_eq!(
            v1_metric(&status, Half::Status),
            r#"{"type":"External","external":{"metricName":"q","currentValue":"0","currentAverageValue":"3"}}"#
        );
        let object = json!({"type": "Object", "object": {"describedObject": {"kind": "Service", "name": "s"}, "metric": {"name": "rps"},
                            "current": {"value": "7"}}});
        assert_eq!(
            v1_metric(&object, Half::Status),
            r#"{"type":"Object","object":{"target":{"kind":"Service","name":"s"},"metricName":"rps","currentValue":"7"}}"#
        );
    }

    #[test]
    fn v1_back_to_v2_loses_nothing_but_the_order_kube_changes() {
        let strategy = Autoscalers { v1: true };
        let back = strategy.to_storage(strategy.to_served(&stored()).unwrap()).unwrap();
        let mut expected = stored();
        v2_defaults(&mut expected);
        // kube puts the CPU metric last, and keeps the annotations it did not write.
        let metrics = expected["spec"]["metrics"].as_array().unwrap().clone();
        expected["spec"]["metrics"] = json!([metrics[1], metrics[0]]);
        expected["apiVersion"] = "autoscaling/v2".into();
        let mut back_defaulted = back.clone();
        v2_defaults(&mut back_defaulted);
        assert_eq!(back_defaulted, expected);
        assert_eq!(back["metadata"]["annotations"], json!({"team": "a"}));
    }

    #[test]
    fn a_v1_create_without_metrics_targets_80_percent_cpu() {
        let v1 = json!({"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "x"},
                        "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "x"}, "maxReplicas": 3}});
        let v2 = Autoscalers { v1: true }.to_storage(v1).unwrap();
        assert_eq!(v2["spec"]["metrics"], json!([cpu_utilization(80)]));
    }

    #[test]
    fn validation_reports_kube_causes() {
        let obj = json!({"metadata": {"name": "x", "namespace": "d"},
                         "spec": {"scaleTargetRef": {"kind": "", "name": "a/b"}, "minReplicas": 0, "maxReplicas": 0,
                                  "metrics": [cpu_utilization(0)]}});
        let causes: Vec<String> =
            validate_spec(&obj, 1).iter().map(|c| format!("{}: {}", c.field, c.message)).collect();
        assert_eq!(
            causes,
            [
                "spec.minReplicas: Invalid value: 0: must be greater than or equal to 1",
                "spec.maxReplicas: Invalid value: 0: must be greater than 0",
                "spec.scaleTargetRef.kind: Required value",
                "spec.scaleTargetRef.name: Invalid value: \"a/b\": may not contain '/'",
                "spec.metrics[0].resource.target.averageUtilization: Invalid value: 0: must be greater than 0",
                "spec.metrics: Forbidden: must specify at least one Object or External metric to support scaling to zero replicas",
            ]
        );
    }
}
