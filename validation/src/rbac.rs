//! `rbac.authorization.k8s.io/v1` validation (`pkg/apis/rbac/validation`).

use serde_json::{Map, Value};

use super::field::{self, Bad, Path};
use super::meta;
use super::{arr, names, s};
use apimachinery::error::Cause;

const GROUP: &str = "rbac.authorization.k8s.io";

fn md(v: &Value) -> Option<&Map<String, Value>> {
    v.get("metadata").and_then(Value::as_object)
}

/// `ValidatePolicyRule`.
fn validate_policy_rule(rule: &Value, namespaced: bool, path: &Path) -> Vec<Cause> {
    let mut out = Vec::new();
    if arr(rule, "verbs").is_empty() {
        out.push(field::required(&path.child("verbs"), "verbs must contain at least one value"));
    }
    let urls = arr(rule, "nonResourceURLs");
    if !urls.is_empty() {
        let bad = || Bad::Raw(field::go_string_slice(rule.get("nonResourceURLs")));
        if namespaced {
            out.push(field::invalid(
                &path.child("nonResourceURLs"),
                bad(),
                "namespaced rules cannot apply to non-resource URLs",
            ));
        }
        if !arr(rule, "apiGroups").is_empty()
            || !arr(rule, "resources").is_empty()
            || !arr(rule, "resourceNames").is_empty()
        {
            out.push(field::invalid(
                &path.child("nonResourceURLs"),
                bad(),
                "rules cannot apply to both regular resources and non-resource URLs",
            ));
        }
        return out;
    }
    if arr(rule, "apiGroups").is_empty() {
        out.push(field::required(&path.child("apiGroups"), "resource rules must supply at least one api group"));
    }
    if arr(rule, "resources").is_empty() {
        out.push(field::required(&path.child("resources"), "resource rules must supply at least one resource"));
    }
    out
}

/// `ValidateRole` / `ValidateClusterRole`.
pub fn validate_role(obj: &Value, namespaced: bool) -> Vec<Cause> {
    let mut out =
        meta::validate_object_meta(md(obj), namespaced, names::path_segment_name, &Path::new("metadata"), true);
    for (i, rule) in arr(obj, "rules").iter().enumerate() {
        out.extend(validate_policy_rule(rule, namespaced, &Path::new("rules").index(i)));
    }
    if !namespaced && let Some(agg) = obj.get("aggregationRule").filter(|a| !a.is_null()) {
        let sp = Path::new("aggregationRule").child("clusterRoleSelectors");
        let selectors = arr(agg, "clusterRoleSelectors");
        if selectors.is_empty() {
            out.push(field::required(&sp, "at least one clusterRoleSelector required if aggregationRule is non-nil"));
        }
        for (i, sel) in selectors.iter().enumerate() {
            out.extend(meta::validate_label_selector(Some(sel), &sp.index(i)));
        }
    }
    out
}

/// `ValidateRoleUpdate` / `ValidateClusterRoleUpdate`.
pub fn validate_role_update(new: &Value, old: &Value, namespaced: bool) -> Vec<Cause> {
    let mut out = validate_role(new, namespaced);
    out.extend(meta::validate_object_meta_update(md(new), md(old), &Path::new("metadata"), true));
    out
}

fn validate_subject(subject: &Value, namespaced: bool, path: &Path) -> Vec<Cause> {
    let mut out = Vec::new();
    let name = s(subject, "name");
    if name.is_empty() {
        out.push(field::required(&path.child("name"), ""));
    }
    let api_group = s(subject, "apiGroup");
    match s(subject, "kind") {
        "ServiceAccount" => {
            if !name.is_empty() {
                out.extend(
                    names::name_is_dns_subdomain(name, false)
                        .into_iter()
                        .map(|m| field::invalid(&path.child("name"), Bad::s(name), &m)),
                );
            }
            if !api_group.is_empty() {
                out.push(field::not_supported(&path.child("apiGroup"), Bad::s(api_group), &[""]));
            }
            if !namespaced && s(subject, "namespace").is_empty() {
                out.push(field::required(&path.child("namespace"), ""));
            }
        }
        "User" | "Group" => {
            if api_group != GROUP {
                out.push(field::not_supported(&path.child("apiGroup"), Bad::s(api_group), &[GROUP]));
            }
        }
        other => {
            out.push(field::not_supported(&path.child("kind"), Bad::s(other), &["ServiceAccount", "User", "Group"]))
        }
    }
    out
}

/// `ValidateRoleBinding` / `ValidateClusterRoleBinding`.
pub fn validate_binding(obj: &Value, namespaced: bool) -> Vec<Cause> {
    let mut out =
        meta::validate_object_meta(md(obj), namespaced, names::path_segment_name, &Path::new("metadata"), true);
    let empty = Value::Object(Map::new());
    let role_ref = obj.get("roleRef").unwrap_or(&empty);
    let rp = Path::new("roleRef");
    let api_group = s(role_ref, "apiGroup");
    if api_group != GROUP {
        out.push(field::not_supported(&rp.child("apiGroup"), Bad::s(api_group), &[GROUP]));
    }
    let kind = s(role_ref, "kind");
    let kinds: &[&str] = if namespaced { &["Role", "ClusterRole"] } else { &["ClusterRole"] };
    if !kinds.contains(&kind) {
        out.push(field::not_supported(&rp.child("kind"), Bad::s(kind), kinds));
    }
    let name = s(role_ref, "name");
    if name.is_empty() {
        out.push(field::required(&rp.child("name"), ""));
    } else {
        out.extend(
            names::path_segment_name(name, false)
                .into_iter()
                .map(|m| field::invalid(&rp.child("name"), Bad::s(name), &m)),
        );
    }
    for (i, subject) in arr(obj, "subjects").iter().enumerate() {
        out.extend(validate_subject(subject, namespaced, &Path::new("subjects").index(i)));
    }
    out
}

fn role_ref_go(r: Option<&Value>) -> String {
    let g = |k: &str| field::go_quote(r.and_then(|r| r.get(k)).and_then(Value::as_str).unwrap_or(""));
    format!("rbac.RoleRef{{APIGroup:{}, Kind:{}, Name:{}}}", g("apiGroup"), g("kind"), g("name"))
}

/// `ValidateRoleBindingUpdate` / `ValidateClusterRoleBindingUpdate`: `roleRef` is immutable.
pub fn validate_binding_update(new: &Value, old: &Value, namespaced: bool) -> Vec<Cause> {
    let mut out = validate_binding(new, namespaced);
    out.extend(meta::validate_object_meta_update(md(new), md(old), &Path::new("metadata"), true));
    let key = |v: &Value| {
        let r = v.get("roleRef");
        ["apiGroup", "kind", "name"].map(|k| r.and_then(|r| r.get(k)).and_then(Value::as_str).unwrap_or("").to_string())
    };
    if key(new) != key(old) {
        out.push(field::invalid(
            &Path::new("roleRef"),
            Bad::Raw(role_ref_go(new.get("roleRef"))),
            "cannot change roleRef",
        ));
    }
    out
}
