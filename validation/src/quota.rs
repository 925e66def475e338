//! ResourceQuota and LimitRange: resource names, quantities and their ordering, with kube
//! 1.30's field paths and messages (kube: `pkg/apis/core/validation`, `ValidateResourceQuota`
//! and `ValidateLimitRange`).
//!
//! Where kube prints a `resource.Quantity` struct as the bad value (`%#v`), the canonical
//! string is printed instead, as for the other quantity checks here.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

use super::field::{self, Bad, Path};
use super::pod::{validate_container_resource_name, validate_quantity_value, validate_resource_name};
use super::{arr, names, s};
use apimachinery::error::Cause;
use kube_cel::quantity::{self, Quantity};

/// `standardQuotaResources`.
const QUOTA_RESOURCES: &[&str] = &[
    "cpu",
    "memory",
    "ephemeral-storage",
    "requests.cpu",
    "requests.memory",
    "requests.storage",
    "requests.ephemeral-storage",
    "limits.cpu",
    "limits.memory",
    "limits.ephemeral-storage",
    "pods",
    "services",
    "replicationcontrollers",
    "resourcequotas",
    "secrets",
    "persistentvolumeclaims",
    "configmaps",
    "services.nodeports",
    "services.loadbalancers",
];

/// `integerResources`: counted objects, never fractional.
const INTEGER_RESOURCES: &[&str] = &[
    "pods",
    "services",
    "replicationcontrollers",
    "resourcequotas",
    "secrets",
    "configmaps",
    "persistentvolumeclaims",
    "services.nodeports",
    "services.loadbalancers",
];

const SCOPES: &[&str] =
    &["Terminating", "NotTerminating", "BestEffort", "NotBestEffort", "PriorityClass", "CrossNamespacePodAffinity"];

fn is_quota_hugepages(name: &str) -> bool {
    name.starts_with("hugepages-") || name.starts_with("requests.hugepages-")
}

fn is_standard_quota_resource(name: &str) -> bool {
    QUOTA_RESOURCES.contains(&name) || is_quota_hugepages(name)
}

fn is_integer_resource(name: &str) -> bool {
    INTEGER_RESOURCES.contains(&name) || name.starts_with("count/") || is_extended(name)
}

/// An extended resource (`example.com/gpu`, or `requests.example.com/gpu` in a quota).
fn is_extended(name: &str) -> bool {
    let bare = name.strip_prefix("requests.").unwrap_or(name);
    bare.contains('/') && !bare.contains("kubernetes.io/") && !name.starts_with("count/")
}

/// `IsResourceQuotaScopeValidForResource`.
fn scope_fits(scope: &str, resource: &str) -> bool {
    let compute = ["cpu", "limits.cpu", "limits.memory", "memory", "requests.cpu", "requests.memory"];
    match scope {
        "BestEffort" => resource == "pods",
        "Terminating" | "NotTerminating" | "NotBestEffort" | "PriorityClass" | "CrossNamespacePodAffinity" => {
            resource == "pods" || compute.contains(&resource)
        }
        _ => true,
    }
}

fn sorted(map: Option<&Value>) -> Vec<(&String, &Value)> {
    let mut v: Vec<(&String, &Value)> = map.and_then(Value::as_object).map(Map::iter).into_iter().flatten().collect();
    v.sort_by(|a, b| a.0.cmp(b.0));
    v
}

/// `ValidateResourceQuotaResourceName` and `ValidateResourceQuantityValue` over one list.
fn quota_list(list: Option<&Value>, path: &Path, out: &mut Vec<Cause>) {
    for (name, v) in sorted(list) {
        let p = path.key(name);
        out.extend(validate_resource_name(name, &p));
        if !name.contains('/') && !is_standard_quota_resource(name) {
            out.push(field::invalid(&p, Bad::s(name.as_str()), "must be a standard resource for quota"));
        }
        out.extend(validate_quantity_value(v, &p));
        if is_integer_resource(name) && quantity::from_json(v).is_ok_and(|q| !q.is_integer()) {
            let q = quantity::from_json(v).map(|q| q.canonical()).unwrap_or_default();
            out.push(field::invalid(&p, Bad::Str(q), "must be an integer"));
        }
    }
}

fn go_scopes(scopes: &[Value]) -> String {
    let listed: Vec<String> = scopes.iter().map(|s| field::go_quote(s.as_str().unwrap_or(""))).collect();
    format!("[]core.ResourceQuotaScope{{{}}}", listed.join(", "))
}

/// `ValidateResourceQuotaSpec`: spec.hard and spec.scopes.
pub fn resource_quota(obj: &Value) -> Vec<Cause> {
    let mut out = Vec::new();
    let sp = Path::new("spec");
    let spec = &obj["spec"];
    quota_list(spec.get("hard"), &sp.child("hard"), &mut out);
    let scopes = arr(spec, "scopes");
    let scopes_path = sp.child("scopes");
    let hard: Vec<&String> = sorted(spec.get("hard")).into_iter().map(|(k, _)| k).collect();
    let mut seen = BTreeSet::new();
    for scope in scopes {
        let scope = scope.as_str().unwrap_or("");
        if !SCOPES.contains(&scope) {
            out.push(field::invalid(&scopes_path, Bad::Raw(go_scopes(scopes)), "unsupported scope"));
        }
        for k in &hard {
            if is_standard_quota_resource(k) && !scope_fits(scope, k) {
                out.push(field::invalid(
                    &scopes_path,
                    Bad::Raw(go_scopes(scopes)),
                    "unsupported scope applied to resource",
                ));
            }
        }
        seen.insert(scope);
    }
    for (a, b) in [("BestEffort", "NotBestEffort"), ("Terminating", "NotTerminating")] {
        if seen.contains(a) && seen.contains(b) {
            out.push(field::invalid(&scopes_path, Bad::Raw(go_scopes(scopes)), "conflicting scopes"));
        }
    }
    out
}

/// `ValidateResourceQuotaUpdate`: the spec rules, and scopes that do not change.
pub fn resource_quota_update(new: &Value, old: &Value) -> Vec<Cause> {
    let mut out = resource_quota(new);
    let set = |obj: &Value| -> BTreeSet<String> {
        arr(&obj["spec"], "scopes").iter().filter_map(Value::as_str).map(str::to_string).collect()
    };
    if set(new) != set(old) {
        let scopes = arr(&new["spec"], "scopes");
        out.push(field::invalid(&Path::new("spec").child("scopes"), Bad::Raw(go_scopes(scopes)), super::IMMUTABLE));
    }
    out
}

/// `ValidateResourceQuotaStatus`: status.hard and status.used.
pub fn resource_quota_status(obj: &Value) -> Vec<Cause> {
    let mut out = Vec::new();
    let st = Path::new("status");
    quota_list(obj.pointer("/status/hard"), &st.child("hard"), &mut out);
    quota_list(obj.pointer("/status/used"), &st.child("used"), &mut out);
    out
}

/// `validateLimitRangeTypeName`.
fn limit_type(t: &str, path: &Path, out: &mut Vec<Cause>) {
    let errs = names::qualified_name(t);
    if !errs.is_empty() {
        out.extend(errs.iter().map(|m| field::invalid(path, Bad::s(t), m)));
        return;
    }
    if !t.contains('/') && !["Pod", "Container", "PersistentVolumeClaim"].contains(&t) {
        out.push(field::invalid(path, Bad::s(t), "must be a standard limit type or fully qualified"));
    }
}

fn limit_resource_name(t: &str, name: &str, path: &Path) -> Vec<Cause> {
    match t {
        "Pod" | "Container" => validate_container_resource_name(name, path),
        _ => validate_resource_name(name, path),
    }
}

/// `ValidateLimitRange`: known types once each, resource names, and
/// min ≤ defaultRequest ≤ default ≤ max per resource.
pub fn limit_range(obj: &Value) -> Vec<Cause> {
    let mut out = Vec::new();
    let limits_path = Path::new("spec").child("limits");
    let mut types = BTreeSet::new();
    for (i, limit) in obj.pointer("/spec/limits").and_then(Value::as_array).into_iter().flatten().enumerate() {
        let idx = limits_path.index(i);
        let t = s(limit, "type");
        limit_type(t, &idx.child("type"), &mut out);
        if !types.insert(t) {
            out.push(field::duplicate(&idx.child("type"), Bad::s(t)));
        }
        let mut keys = BTreeSet::new();
        let mut read = |key: &str, out: &mut Vec<Cause>| -> BTreeMap<String, Quantity> {
            let mut m = BTreeMap::new();
            for (name, v) in sorted(limit.get(key)) {
                out.extend(limit_resource_name(t, name, &idx.child(key).key(name)));
                keys.insert(name.clone());
                if let Ok(q) = quantity::from_json(v) {
                    m.insert(name.clone(), q);
                }
            }
            m
        };
        let max = read("max", &mut out);
        let min = read("min", &mut out);
        let (mut defaults, mut default_requests) = (BTreeMap::new(), BTreeMap::new());
        if t == "Pod" {
            for key in ["default", "defaultRequest"] {
                if limit.get(key).and_then(Value::as_object).is_some_and(|m| !m.is_empty()) {
                    out.push(field::forbidden(&idx.child(key), "may not be specified when `type` is 'Pod'"));
                }
            }
        } else {
            defaults = read("default", &mut out);
            default_requests = read("defaultRequest", &mut out);
        }
        if t == "PersistentVolumeClaim" && !min.contains_key("storage") && !max.contains_key("storage") {
            out.push(field::required(
                &idx.child("limits"),
                "either minimum or maximum storage value is required, but neither was provided",
            ));
        }
        let ratios = read("maxLimitRequestRatio", &mut out);
        for k in &keys {
            let (lo, hi, def, req, ratio) =
                (min.get(k), max.get(k), defaults.get(k), default_requests.get(k), ratios.get(k));
            let c = |q: &Quantity| q.canonical();
            let mut bad = |key: &str, value: &Quantity, detail: String| {
                out.push(field::invalid(&idx.child(key).key(k), Bad::Str(c(value)), &detail));
            };
            if let (Some(lo), Some(hi)) = (lo, hi)
                && lo > hi
            {
                bad("min", lo, format!("min value {} is greater than max value {}", c(lo), c(hi)));
            }
            if let (Some(req), Some(lo)) = (req, lo)
                && lo > req
            {
                bad(
                    "defaultRequest",
                    req,
                    format!("min value {} is greater than default request value {}", c(lo), c(req)),
                );
            }
            if let (Some(req), Some(hi)) = (req, hi)
                && req > hi
            {
                bad(
                    "defaultRequest",
                    req,
                    format!("default request value {} is greater than max value {}", c(req), c(hi)),
                );
            }
            if let (Some(req), Some(def)) = (req, def)
                && req > def
            {
                let detail = format!("default request value {} is greater than default limit value {}", c(req), c(def));
                bad("defaultRequest", req, detail);
            }
            if let (Some(def), Some(lo)) = (def, lo)
                && lo > def
            {
                bad("default", lo, format!("min value {} is greater than default value {}", c(lo), c(def)));
            }
            if let (Some(def), Some(hi)) = (def, hi)
                && def > hi
            {
                bad("default", hi, format!("default value {} is greater than max value {}", c(def), c(hi)));
            }
            if let Some(r) = ratio
                && r.nanos < 1_000_000_000
            {
                bad("maxLimitRequestRatio", r, format!("ratio {} is less than 1", c(r)));
            }
            if let (Some(r), Some(lo), Some(hi)) = (ratio, lo, hi) {
                let limit = hi.nanos as f64 / lo.nanos as f64;
                if r.nanos as f64 / 1e9 > limit {
                    bad("maxLimitRequestRatio", r, format!("ratio {} is greater than max/min = {limit:.6}", c(r)));
                }
            }
            let overcommit = !k.contains('/') && !k.starts_with("hugepages-");
            if let (Some(def), Some(req)) = (def, req)
                && !overcommit
                && def != req
            {
                let detail = format!("default value {} must equal to defaultRequest value {} in {k}", c(def), c(req));
                bad("defaultRequest", req, detail);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use crate::test_kinds::{create_causes, def, pairs};

    fn causes(resource: &str, obj: Value) -> Vec<(String, String)> {
        create_causes("", resource, obj)
    }

    #[test]
    fn resource_quota_names_values_and_scopes() {
        let q = json!({"spec": {
            "hard": {"pods": "1500m", "requests.cpu": "-1", "widgets": "1", "count/deployments.apps": "3", "requests.example.com/gpu": "2"},
            "scopes": ["BestEffort", "NotBestEffort"]
        }});
        let got = causes("resourcequotas", q);
        let scopes = "[]core.ResourceQuotaScope{\"BestEffort\", \"NotBestEffort\"}";
        assert_eq!(
            got,
            pairs(&[
                ("spec.hard[pods]", "Invalid value: \"1500m\": must be an integer"),
                ("spec.hard[requests.cpu]", "Invalid value: \"-1\": must be greater than or equal to 0"),
                (
                    "spec.hard[widgets]",
                    "Invalid value: \"widgets\": must be a standard resource type or fully qualified"
                ),
                ("spec.hard[widgets]", "Invalid value: \"widgets\": must be a standard resource for quota"),
                // BestEffort does not apply to requests.cpu (NotBestEffort does).
                ("spec.scopes", &format!("Invalid value: {scopes}: unsupported scope applied to resource")),
                ("spec.scopes", &format!("Invalid value: {scopes}: conflicting scopes")),
            ])
        );
        // Scopes are fixed once set.
        let d = def("", "resourcequotas");
        let old = json!({"metadata": {"name": "x", "namespace": "default", "resourceVersion": "1"}, "spec": {"hard": {"pods": "2"}, "scopes": ["Terminating"]}});
        let mut new = old.clone();
        new["spec"]["scopes"] = json!(["NotTerminating"]);
        let got: Vec<String> = d.validate_update(&new, &old).into_iter().map(|c| c.message).collect();
        assert_eq!(got, ["Invalid value: []core.ResourceQuotaScope{\"NotTerminating\"}: field is immutable"]);
    }

    #[test]
    fn limit_range_types_and_ordering() {
        let lr = json!({"spec": {"limits": [
            {"type": "Container", "min": {"cpu": "2"}, "max": {"cpu": "1"}, "default": {"cpu": "500m"}, "defaultRequest": {"cpu": "600m"},
             "maxLimitRequestRatio": {"cpu": "500m"}},
            {"type": "Container"},
            {"type": "Pod", "default": {"memory": "1Gi"}},
            {"type": "PersistentVolumeClaim", "max": {"cpu": "1"}},
            {"type": "Node"},
        ]}});
        let got = causes("limitranges", lr);
        assert_eq!(
            got,
            pairs(&[
                ("spec.limits[0].min[cpu]", "Invalid value: \"2\": min value 2 is greater than max value 1"),
                (
                    "spec.limits[0].defaultRequest[cpu]",
                    "Invalid value: \"600m\": min value 2 is greater than default request value 600m"
                ),
                (
                    "spec.limits[0].defaultRequest[cpu]",
                    "Invalid value: \"600m\": default request value 600m is greater than default limit value 500m"
                ),
                ("spec.limits[0].default[cpu]", "Invalid value: \"2\": min value 2 is greater than default value 500m"),
                ("spec.limits[0].maxLimitRequestRatio[cpu]", "Invalid value: \"500m\": ratio 500m is less than 1"),
                ("spec.limits[1].type", "Duplicate value: \"Container\""),
                ("spec.limits[2].default", "Forbidden: may not be specified when `type` is 'Pod'"),
                (
                    "spec.limits[3].limits",
                    "Required value: either minimum or maximum storage value is required, but neither was provided"
                ),
                ("spec.limits[4].type", "Invalid value: \"Node\": must be a standard limit type or fully qualified"),
            ])
        );
        let ok = json!({"spec": {"limits": [{"type": "Container", "max": {"cpu": "2", "memory": "1Gi"}, "min": {"cpu": "100m"}},
                                            {"type": "PersistentVolumeClaim", "max": {"storage": "10Gi"}}]}});
        assert_eq!(causes("limitranges", ok), vec![]);
    }
}
