//! `flowcontrol.apiserver.k8s.io/v1` validation (`pkg/apis/flowcontrol/validation`):
//! FlowSchema and PriorityLevelConfiguration, their statuses, and the mandatory `exempt` and
//! `catch-all` objects whose specs are fixed (kube's `internalbootstrap`).
//!
//! kube compares a mandatory object's spec with the fixed one as internal Go structs, where an
//! absent list equals an empty one and an absent number or flag equals zero; [`go_equal`]
//! compares the (defaulted) JSON the same way.

use serde_json::{Map, Value, json};

use super::field::{self, Bad, Path};
use super::{arr, names, s};
use apimachinery::error::Cause;

/// `flowcontrol.FlowSchemaMaxMatchingPrecedence`.
const MAX_MATCHING_PRECEDENCE: i64 = 10_000;
/// `priorityLevelConfigurationQueuingMaxQueues`: 10^7.
const MAX_QUEUES: i64 = 10_000_000;
/// `shufflesharding.MaxHashBits`.
const MAX_HASH_BITS: i64 = 60;
const VERBS: [&str; 9] = ["create", "delete", "deletecollection", "get", "list", "patch", "proxy", "update", "watch"];
const SUBJECT_KINDS: [&str; 3] = ["Group", "ServiceAccount", "User"];
const DISTINGUISHER_METHODS: [&str; 2] = ["ByNamespace", "ByUser"];
const PRIORITY_LEVEL_TYPES: [&str; 2] = ["Exempt", "Limited"];
const LIMIT_RESPONSE_TYPES: [&str; 2] = ["Queue", "Reject"];
/// The annotation v1beta3 uses to carry an explicit zero `nominalConcurrencyShares`; it must
/// never reach a stored object.
pub const PRESERVE_ZERO_SHARES_ANNOTATION: &str = "flowcontrol.k8s.io/v1beta3-preserve-zero-concurrency-shares";
const NS_ERR_INTRO: &str = "each member of this list must be '*' or a DNS-1123 label; ";

/// The spec kube fixes for the mandatory FlowSchema `name`, in v1 form.
pub fn mandatory_flow_schema_spec(name: &str) -> Option<Value> {
    let all_rules = |subjects: Value| {
        json!([{
            "subjects": subjects,
            "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"], "clusterScope": true, "namespaces": ["*"]}],
            "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
        }])
    };
    let group = |name: &str| json!({"kind": "Group", "group": {"name": name}});
    match name {
        "exempt" => Some(json!({
            "priorityLevelConfiguration": {"name": "exempt"},
            "matchingPrecedence": 1,
            "rules": all_rules(json!([group("system:masters")])),
        })),
        "catch-all" => Some(json!({
            "priorityLevelConfiguration": {"name": "catch-all"},
            "matchingPrecedence": 10000,
            "distinguisherMethod": {"type": "ByUser"},
            "rules": all_rules(json!([group("system:unauthenticated"), group("system:authenticated")])),
        })),
        _ => None,
    }
}

/// The spec kube fixes for the mandatory PriorityLevelConfiguration `name`, in v1 form.
pub fn mandatory_priority_level_spec(name: &str) -> Option<Value> {
    match name {
        "exempt" => Some(json!({"type": "Exempt", "exempt": {"nominalConcurrencyShares": 0, "lendablePercent": 0}})),
        "catch-all" => Some(json!({
            "type": "Limited",
            "limited": {"nominalConcurrencyShares": 5, "lendablePercent": 0, "limitResponse": {"type": "Reject"}},
        })),
        _ => None,
    }
}

/// Drops what a Go struct cannot tell from absent: `null`, `false`, `0`, `""` and empty lists.
/// `borrowingLimitPercent` is the one pointer of these specs no default sets, so its zero is
/// kept (a nil pointer and a pointer to 0 differ).
fn go_zeroless(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, x)| match x {
                    Value::Null | Value::Bool(false) => false,
                    Value::Number(n) => *k == "borrowingLimitPercent" || n.as_f64() != Some(0.0),
                    Value::String(s) => !s.is_empty(),
                    Value::Array(a) => !a.is_empty(),
                    Value::Object(_) => true,
                    Value::Bool(true) => true,
                })
                .map(|(k, x)| (k.clone(), go_zeroless(x)))
                .collect::<Map<String, Value>>(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(go_zeroless).collect()),
        other => other.clone(),
    }
}

/// `apiequality.Semantic.DeepEqual` of two specs as the internal structs they decode into
/// (pointers are defaulted, so a zero number is as good as an absent one).
fn go_equal(a: Option<&Value>, b: &Value) -> bool {
    a.map_or_else(|| Value::Object(Map::new()), go_zeroless) == go_zeroless(b)
}

fn has_wildcard(items: &[&str]) -> bool {
    items.contains(&"*")
}

fn strings<'a>(v: &'a Value, key: &str) -> Vec<&'a str> {
    arr(v, key).iter().map(|x| x.as_str().unwrap_or("")).collect()
}

fn go_string_slice(items: &[&str]) -> Bad {
    let quoted: Vec<String> = items.iter().map(|i| field::go_quote(i)).collect();
    Bad::Raw(format!("[]string{{{}}}", quoted.join(", ")))
}

fn set<'a>(v: &'a Value, key: &str) -> Option<&'a Value> {
    v.get(key).filter(|v| !v.is_null())
}

fn int(v: &Value, key: &str) -> i64 {
    v.get(key).and_then(Value::as_i64).unwrap_or(0)
}

// ---------------------------------------------------------------------------------------------
// FlowSchema.

/// Verbs of a rule: required, `*` alone, else known verbs.
fn validate_verbs(rule: &Value, path: &Path) -> Vec<Cause> {
    let verbs = strings(rule, "verbs");
    let vp = path.child("verbs");
    if verbs.is_empty() {
        vec![field::required(&vp, "verbs must contain at least one value")]
    } else if has_wildcard(&verbs) {
        if verbs.len() > 1 {
            vec![field::invalid(&vp, go_string_slice(&verbs), "if '*' is present, must not specify other verbs")]
        } else {
            Vec::new()
        }
    } else if !verbs.iter().all(|v| VERBS.contains(v)) {
        vec![field::not_supported(&vp, go_string_slice(&verbs), &VERBS)]
    } else {
        Vec::new()
    }
}

/// `ValidateFlowSchemaResourcePolicyRule`.
fn validate_resource_rule(rule: &Value, path: &Path) -> Vec<Cause> {
    let mut out = validate_verbs(rule, path);
    let groups = strings(rule, "apiGroups");
    if groups.is_empty() {
        out.push(field::required(&path.child("apiGroups"), "resource rules must supply at least one api group"));
    } else if groups.len() > 1 && has_wildcard(&groups) {
        out.push(field::invalid(
            &path.child("apiGroups"),
            go_string_slice(&groups),
            "if '*' is present, must not specify other api groups",
        ));
    }
    let resources = strings(rule, "resources");
    if resources.is_empty() {
        out.push(field::required(&path.child("resources"), "resource rules must supply at least one resource"));
    } else if resources.len() > 1 && has_wildcard(&resources) {
        out.push(field::invalid(
            &path.child("resources"),
            go_string_slice(&resources),
            "if '*' is present, must not specify other resources",
        ));
    }
    let namespaces = strings(rule, "namespaces");
    let np = path.child("namespaces");
    let cluster_scope = rule.get("clusterScope").and_then(Value::as_bool).unwrap_or(false);
    if namespaces.is_empty() && !cluster_scope {
        out.push(field::required(&np, "resource rules that are not cluster scoped must supply at least one namespace"));
    } else if has_wildcard(&namespaces) {
        if namespaces.len() > 1 {
            out.push(field::invalid(
                &np,
                go_string_slice(&namespaces),
                "if '*' is present, must not specify other namespaces",
            ));
        }
    } else {
        for (i, ns) in namespaces.iter().enumerate() {
            for m in names::name_is_dns_label(ns, false) {
                out.push(field::invalid(&np.index(i), Bad::s(*ns), &format!("{NS_ERR_INTRO}{m}")));
            }
        }
    }
    out
}

/// `ValidateNonResourceURLPath`: `/`-rooted, no blanks or `//`, `*` only as a `/*` suffix.
fn validate_non_resource_url(url: &str, path: &Path) -> Option<Cause> {
    let bad = |m: &str| Some(field::invalid(path, Bad::s(url), m));
    if url.is_empty() {
        return bad("must not be empty");
    }
    if url == "/" {
        return None;
    }
    if !url.starts_with('/') {
        return bad("must start with slash");
    }
    if url.contains(' ') {
        return bad("must not contain white-space");
    }
    if url.contains("//") {
        return bad("must not contain double slash");
    }
    let wildcards = url.matches('*').count();
    if wildcards > 1 || (wildcards == 1 && !url.ends_with("/*")) {
        return bad("wildcard can only do suffix matching");
    }
    None
}

/// `ValidateFlowSchemaNonResourcePolicyRule`.
fn validate_non_resource_rule(rule: &Value, path: &Path) -> Vec<Cause> {
    let mut out = validate_verbs(rule, path);
    let urls = strings(rule, "nonResourceURLs");
    let up = path.child("nonResourceURLs");
    if urls.is_empty() {
        out.push(field::required(&up, "nonResourceURLs must contain at least one value"));
    } else if has_wildcard(&urls) {
        if urls.len() > 1 {
            out.push(field::invalid(
                &up,
                go_string_slice(&urls),
                "if '*' is present, must not specify other non-resource URLs",
            ));
        }
    } else {
        for (i, url) in urls.iter().enumerate() {
            out.extend(validate_non_resource_url(url, &up.index(i)));
        }
    }
    out
}

/// `ValidateFlowSchemaSubject`: the member the kind names is required (and checked first), the
/// others forbidden, in field order.
fn validate_subject(subject: &Value, path: &Path) -> Vec<Cause> {
    const MEMBERS: [(&str, &str); 3] = [("ServiceAccount", "serviceAccount"), ("User", "user"), ("Group", "group")];
    let kind = s(subject, "kind");
    let Some(&(own_kind, own)) = MEMBERS.iter().find(|(k, _)| *k == kind) else {
        return vec![field::not_supported(&path.child("kind"), Bad::s(kind), &SUBJECT_KINDS)];
    };
    let mut out = Vec::new();
    let mp = path.child(own);
    match set(subject, own) {
        None => out.push(field::required(&mp, &format!("{own} is required when subject kind is '{own_kind}'"))),
        Some(m) => {
            let name = s(m, "name");
            if name.is_empty() {
                out.push(field::required(&mp.child("name"), ""));
            } else if own_kind == "ServiceAccount" && name != "*" {
                out.extend(
                    names::name_is_dns_subdomain(name, false)
                        .into_iter()
                        .map(|e| field::invalid(&mp.child("name"), Bad::s(name), &e)),
                );
            }
            if own_kind == "ServiceAccount" {
                let ns = s(m, "namespace");
                if ns.is_empty() {
                    out.push(field::required(&mp.child("namespace"), "must specify namespace for service account"));
                } else {
                    out.extend(
                        names::name_is_dns_label(ns, false)
                            .into_iter()
                            .map(|e| field::invalid(&mp.child("namespace"), Bad::s(ns), &e)),
                    );
                }
            }
        }
    }
    for (k, member) in MEMBERS {
        if member != own && set(subject, member).is_some() {
            out.push(field::forbidden(
                &path.child(member),
                &format!("{member} is forbidden when subject kind is not '{k}'"),
            ));
        }
    }
    out
}

/// `ValidateFlowSchemaPolicyRulesWithSubjects`.
fn validate_rules_with_subjects(rule: &Value, path: &Path) -> Vec<Cause> {
    let mut out = Vec::new();
    let subjects = arr(rule, "subjects");
    if subjects.is_empty() {
        out.push(field::required(&path.child("subjects"), "subjects must contain at least one value"));
    }
    for (i, subject) in subjects.iter().enumerate() {
        out.extend(validate_subject(subject, &path.child("subjects").index(i)));
    }
    let resource_rules = arr(rule, "resourceRules");
    let non_resource_rules = arr(rule, "nonResourceRules");
    if resource_rules.is_empty() && non_resource_rules.is_empty() {
        out.push(field::required(path, "at least one of resourceRules and nonResourceRules has to be non-empty"));
    }
    for (i, r) in resource_rules.iter().enumerate() {
        out.extend(validate_resource_rule(r, &path.child("resourceRules").index(i)));
    }
    for (i, r) in non_resource_rules.iter().enumerate() {
        out.extend(validate_non_resource_rule(r, &path.child("nonResourceRules").index(i)));
    }
    out
}

/// `ValidateFlowSchemaSpec`.
fn validate_flow_schema_spec(name: &str, spec: &Value, path: &Path) -> Vec<Cause> {
    let mut out = Vec::new();
    let precedence = int(spec, "matchingPrecedence");
    let pp = path.child("matchingPrecedence");
    if precedence <= 0 {
        out.push(field::invalid(&pp, Bad::Int(precedence), "must be a positive value"));
    }
    if precedence > MAX_MATCHING_PRECEDENCE {
        out.push(field::invalid(
            &pp,
            Bad::Int(precedence),
            &format!("must not be greater than {MAX_MATCHING_PRECEDENCE}"),
        ));
    }
    if precedence == 1 && name != "exempt" {
        out.push(field::invalid(
            &pp,
            Bad::Int(precedence),
            "only the schema named 'exempt' may have matchingPrecedence 1",
        ));
    }
    if let Some(dm) = set(spec, "distinguisherMethod") {
        let ty = s(dm, "type");
        if !DISTINGUISHER_METHODS.contains(&ty) {
            out.push(field::not_supported(
                &path.child("distinguisherMethod").child("type"),
                Bad::Raw(format!("flowcontrol.FlowDistinguisherMethod{{Type:{}}}", field::go_quote(ty))),
                &DISTINGUISHER_METHODS,
            ));
        }
    }
    let plc = spec.get("priorityLevelConfiguration").map_or("", |p| s(p, "name"));
    let np = path.child("priorityLevelConfiguration").child("name");
    if plc.is_empty() {
        out.push(field::required(&np, "must reference a priority level"));
    } else {
        out.extend(names::name_is_dns_subdomain(plc, false).into_iter().map(|m| field::invalid(&np, Bad::s(plc), &m)));
    }
    for (i, rule) in arr(spec, "rules").iter().enumerate() {
        out.extend(validate_rules_with_subjects(rule, &path.child("rules").index(i)));
    }
    out
}

/// `ValidateFlowSchemaStatus` / `ValidatePriorityLevelConfigurationStatus`: condition types
/// set and unique.
fn validate_conditions(obj: &Value) -> Vec<Cause> {
    let mut out = Vec::new();
    let empty = Value::Null;
    let cp = Path::new("status").child("conditions");
    let mut seen: Vec<&str> = Vec::new();
    for (i, c) in arr(obj.get("status").unwrap_or(&empty), "conditions").iter().enumerate() {
        let ty = s(c, "type");
        if seen.contains(&ty) {
            out.push(field::duplicate(&cp.index(i).child("type"), Bad::s(ty)));
        }
        seen.push(ty);
        if ty.is_empty() {
            out.push(field::required(&cp.index(i).child("type"), "must not be empty"));
        }
    }
    out
}

fn object_name(obj: &Value) -> &str {
    obj.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("")
}

/// `ValidateFlowSchema` less `ValidateObjectMeta` (create and update alike): the spec, the
/// fixed spec of a mandatory schema, the status.
pub fn flow_schema(obj: &Value) -> Vec<Cause> {
    let name = object_name(obj);
    let sp = Path::new("spec");
    let empty = Value::Object(Map::new());
    let spec = obj.get("spec").unwrap_or(&empty);
    let mut out = validate_flow_schema_spec(name, spec, &sp);
    if let Some(fixed) = mandatory_flow_schema_spec(name)
        && !go_equal(obj.get("spec"), &fixed)
    {
        out.push(field::invalid(
            &sp,
            Bad::Raw(field::go_struct(obj.get("spec"))),
            &format!("spec of '{name}' must equal the fixed value"),
        ));
    }
    out.extend(validate_conditions(obj));
    out
}

/// `ValidateFlowSchemaStatusUpdate`.
pub fn flow_schema_status(obj: &Value) -> Vec<Cause> {
    validate_conditions(obj)
}

// ---------------------------------------------------------------------------------------------
// PriorityLevelConfiguration.

/// `ValidatePriorityLevelQueuingConfiguration`: positive limits and kube's shuffle-sharding
/// bounds.
fn validate_queuing(q: &Value, path: &Path) -> Vec<Cause> {
    let mut out = Vec::new();
    let limit = int(q, "queueLengthLimit");
    if limit <= 0 {
        out.push(field::invalid(&path.child("queueLengthLimit"), Bad::Int(limit), "must be positive"));
    }
    let queues = int(q, "queues");
    if queues <= 0 {
        out.push(field::invalid(&path.child("queues"), Bad::Int(queues), "must be positive"));
    } else if queues > MAX_QUEUES {
        out.push(field::invalid(
            &path.child("queues"),
            Bad::Int(queues),
            &format!("must not be greater than {MAX_QUEUES}"),
        ));
    }
    let hand = int(q, "handSize");
    let hp = path.child("handSize");
    if hand <= 0 {
        out.push(field::invalid(&hp, Bad::Int(hand), "must be positive"));
    } else if hand > queues {
        out.push(field::invalid(&hp, Bad::Int(hand), &format!("should not be greater than queues ({queues})")));
    } else if required_entropy_bits(queues, hand) > MAX_HASH_BITS {
        out.push(field::invalid(
            &hp,
            Bad::Int(hand),
            &format!(
                "required entropy bits of deckSize {queues} and handSize {hand} should not be greater than {MAX_HASH_BITS}"
            ),
        ));
    }
    out
}

/// `shufflesharding.RequiredEntropyBits`: `ceil(log2(deck) * hand)`.
fn required_entropy_bits(deck: i64, hand: i64) -> i64 {
    ((deck as f64).log2() * hand as f64).ceil() as i64
}

/// `ValidateLimitResponse`.
fn validate_limit_response(lr: &Value, path: &Path) -> Vec<Cause> {
    let ty = s(lr, "type");
    let qp = path.child("queuing");
    match (ty, set(lr, "queuing")) {
        ("Reject", Some(_)) => vec![field::forbidden(&qp, "must be nil if limited.limitResponse.type is not Limited")],
        ("Reject", None) => Vec::new(),
        ("Queue", None) => vec![field::required(&qp, "must not be empty if limited.limitResponse.type is Limited")],
        ("Queue", Some(q)) => validate_queuing(q, &qp),
        _ => vec![field::not_supported(&path.child("type"), Bad::s(ty), &LIMIT_RESPONSE_TYPES)],
    }
}

/// `ValidateLimitedPriorityLevelConfiguration`, with 1.30's zero shares allowed (a "jail").
fn validate_limited(l: &Value, path: &Path) -> Vec<Cause> {
    let mut out = Vec::new();
    let shares = int(l, "nominalConcurrencyShares");
    if shares < 0 {
        out.push(field::invalid(
            &path.child("nominalConcurrencyShares"),
            Bad::Int(shares),
            "must be a non-negative integer",
        ));
    }
    let empty = Value::Object(Map::new());
    out.extend(validate_limit_response(l.get("limitResponse").unwrap_or(&empty), &path.child("limitResponse")));
    if let Some(p) = set(l, "lendablePercent").and_then(Value::as_i64).filter(|p| !(0..=100).contains(p)) {
        out.push(field::invalid(&path.child("lendablePercent"), Bad::Int(p), "must be between 0 and 100, inclusive"));
    }
    if let Some(p) = set(l, "borrowingLimitPercent").and_then(Value::as_i64).filter(|p| *p < 0) {
        out.push(field::invalid(
            &path.child("borrowingLimitPercent"),
            Bad::Int(p),
            "if specified, must be a non-negative integer",
        ));
    }
    out
}

/// `ValidateExemptPriorityLevelConfiguration`.
fn validate_exempt(e: &Value, path: &Path) -> Vec<Cause> {
    let mut out = Vec::new();
    if let Some(n) = set(e, "nominalConcurrencyShares").and_then(Value::as_i64).filter(|n| *n < 0) {
        out.push(field::invalid(
            &path.child("nominalConcurrencyShares"),
            Bad::Int(n),
            "must be a non-negative integer",
        ));
    }
    if let Some(p) = set(e, "lendablePercent").and_then(Value::as_i64).filter(|p| !(0..=100).contains(p)) {
        out.push(field::invalid(&path.child("lendablePercent"), Bad::Int(p), "must be between 0 and 100, inclusive"));
    }
    out
}

/// `ValidatePriorityLevelConfigurationSpec`: the type and the member it needs.
fn validate_priority_level_spec(name: &str, spec: &Value, path: &Path) -> Vec<Cause> {
    let mut out = Vec::new();
    let ty = s(spec, "type");
    if (name == "exempt") != (ty == "Exempt") {
        out.push(field::invalid(
            &path.child("type"),
            Bad::s(ty),
            "type must be 'Exempt' if and only if name is 'exempt'",
        ));
    }
    match ty {
        "Exempt" => {
            if set(spec, "limited").is_some() {
                out.push(field::forbidden(&path.child("limited"), "must be nil if the type is not Limited"));
            }
            if let Some(e) = set(spec, "exempt") {
                out.extend(validate_exempt(e, &path.child("exempt")));
            }
        }
        "Limited" => {
            if set(spec, "exempt").is_some() {
                out.push(field::forbidden(&path.child("exempt"), "must be nil if the type is Limited"));
            }
            match set(spec, "limited") {
                None => out.push(field::required(&path.child("limited"), "must not be empty when type is Limited")),
                Some(l) => out.extend(validate_limited(l, &path.child("limited"))),
            }
        }
        _ => out.push(field::not_supported(&path.child("type"), Bad::s(ty), &PRIORITY_LEVEL_TYPES)),
    }
    out
}

/// `ValidateIfMandatoryPriorityLevelConfigurationObject`: `exempt` may change only its
/// `spec.exempt`; `catch-all` nothing.
fn validate_mandatory_priority_level(name: &str, spec: Option<&Value>, path: &Path) -> Vec<Cause> {
    let Some(fixed) = mandatory_priority_level_spec(name) else { return Vec::new() };
    let bad = |detail: String| vec![field::invalid(path, Bad::Raw(field::go_struct(spec)), &detail)];
    if name == "exempt" {
        let mut have = spec.cloned().unwrap_or_else(|| json!({}));
        if let Some(m) = have.as_object_mut() {
            m.insert("exempt".into(), fixed["exempt"].clone());
        }
        if !go_equal(Some(&have), &fixed) {
            return bad(format!("spec of '{name}' except the 'spec.exempt' field must equal the fixed value"));
        }
        return Vec::new();
    }
    if !go_equal(spec, &fixed) {
        return bad(format!("spec of '{name}' must equal the fixed value"));
    }
    Vec::new()
}

/// `ValidatePriorityLevelConfiguration` less `ValidateObjectMeta` (create and update alike):
/// the v1beta3 round-trip annotation is refused, then the spec, the mandatory levels' fixed
/// specs and the status.
pub fn priority_level_configuration(obj: &Value) -> Vec<Cause> {
    let mut out = Vec::new();
    if obj.pointer("/metadata/annotations").and_then(|a| a.get(PRESERVE_ZERO_SHARES_ANNOTATION)).is_some() {
        out.push(field::forbidden(
            &Path::new("metadata").child("annotations"),
            &format!("annotation '{PRESERVE_ZERO_SHARES_ANNOTATION}' is forbidden"),
        ));
    }
    let name = object_name(obj);
    let sp = Path::new("spec");
    let empty = Value::Object(Map::new());
    out.extend(validate_priority_level_spec(name, obj.get("spec").unwrap_or(&empty), &sp));
    out.extend(validate_mandatory_priority_level(name, obj.get("spec"), &sp));
    out.extend(validate_conditions(obj));
    out
}

/// `ValidatePriorityLevelConfigurationStatusUpdate`.
pub fn priority_level_configuration_status(obj: &Value) -> Vec<Cause> {
    validate_conditions(obj)
}

#[cfg(test)]
mod tests;
