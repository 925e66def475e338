//! The flowcontrol kinds through their definitions: defaults, then validation, as the registry
//! runs them, with kube's field paths and messages.

use serde_json::{Value, json};

use super::{mandatory_flow_schema_spec, mandatory_priority_level_spec};
use crate::test_kinds::def;
use apimachinery::catalogue::ResourceDef;

const GROUP: &str = "flowcontrol.apiserver.k8s.io";

fn flow_schemas() -> &'static ResourceDef {
    def(GROUP, "flowschemas")
}

fn priority_levels() -> &'static ResourceDef {
    def(GROUP, "prioritylevelconfigurations")
}

fn causes(def: &ResourceDef, name: &str, spec: Value) -> Vec<(String, String)> {
    let mut obj = json!({"metadata": {"name": name}, "spec": spec});
    def.apply_defaults(&mut obj);
    def.prepare_for_create(&mut obj);
    def.validate(&obj).into_iter().map(|c| (c.field, c.message)).collect()
}

fn one(field: &str, message: &str) -> Vec<(String, String)> {
    vec![(field.to_string(), message.to_string())]
}

fn stored(def: &ResourceDef, name: &str, spec: Value) -> Value {
    let mut obj = json!({"metadata": {"name": name, "uid": "u", "resourceVersion": "3", "generation": 1,
                                      "creationTimestamp": "2024-05-01T00:00:00Z"}, "spec": spec});
    def.apply_defaults(&mut obj);
    def.prepare_for_create(&mut obj);
    obj
}

fn schema_spec() -> Value {
    json!({
        "priorityLevelConfiguration": {"name": "workload-low"},
        "distinguisherMethod": {"type": "ByNamespace"},
        "rules": [{
            "subjects": [{"kind": "ServiceAccount", "serviceAccount": {"name": "*", "namespace": "kube-system"}},
                         {"kind": "User", "user": {"name": "alice"}}, {"kind": "Group", "group": {"name": "devs"}}],
            "resourceRules": [{"verbs": ["get", "list"], "apiGroups": ["apps"], "resources": ["deployments"], "namespaces": ["*"]},
                              {"verbs": ["*"], "apiGroups": ["*"], "resources": ["nodes"], "clusterScope": true}],
            "nonResourceRules": [{"verbs": ["get"], "nonResourceURLs": ["/healthz", "/apis/*"]}],
        }],
    })
}

fn schema_causes(f: impl Fn(&mut Value)) -> Vec<(String, String)> {
    let mut spec = schema_spec();
    f(&mut spec);
    causes(flow_schemas(), "fs", spec)
}

fn limited(limited: Value) -> Vec<(String, String)> {
    causes(priority_levels(), "pl", json!({"type": "Limited", "limited": limited}))
}

// ---------------------------------------------------------------------------------------------
// FlowSchema.

#[test]
fn valid_flow_schemas_are_accepted() {
    assert_eq!(schema_causes(|_| {}), vec![]);
    for name in ["exempt", "catch-all"] {
        assert_eq!(causes(flow_schemas(), name, mandatory_flow_schema_spec(name).unwrap()), vec![], "{name}");
    }
    // Keys in any order, and zero values written out, are the same spec to kube.
    let mut spec = mandatory_flow_schema_spec("exempt").unwrap();
    spec["distinguisherMethod"] = Value::Null;
    spec["rules"][0]["resourceRules"][0]["clusterScope"] = json!(true);
    assert_eq!(causes(flow_schemas(), "exempt", spec), vec![]);
}

#[test]
fn flow_schema_precedence_and_priority_level() {
    assert_eq!(
        schema_causes(|s| s["matchingPrecedence"] = json!(10001)),
        one("spec.matchingPrecedence", "Invalid value: 10001: must not be greater than 10000")
    );
    assert_eq!(
        schema_causes(|s| s["matchingPrecedence"] = json!(-3)),
        one("spec.matchingPrecedence", "Invalid value: -3: must be a positive value")
    );
    assert_eq!(
        schema_causes(|s| s["matchingPrecedence"] = json!(1)),
        one(
            "spec.matchingPrecedence",
            "Invalid value: 1: only the schema named 'exempt' may have matchingPrecedence 1"
        )
    );
    assert_eq!(
        schema_causes(|s| s["distinguisherMethod"] = json!({"type": "ByGroup"})),
        one(
            "spec.distinguisherMethod.type",
            "Unsupported value: flowcontrol.FlowDistinguisherMethod{Type:\"ByGroup\"}: supported values: \"ByNamespace\", \"ByUser\""
        )
    );
    assert_eq!(
        schema_causes(|s| s["priorityLevelConfiguration"] = json!({})),
        one("spec.priorityLevelConfiguration.name", "Required value: must reference a priority level")
    );
    assert_eq!(
        schema_causes(|s| s["priorityLevelConfiguration"]["name"] = json!("system+++$$")),
        one(
            "spec.priorityLevelConfiguration.name",
            "Invalid value: \"system+++$$\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
        )
    );
}

#[test]
fn flow_schema_subjects() {
    let subject = |s: Value| schema_causes(move |spec| spec["rules"][0]["subjects"] = json!([s.clone()]));
    assert_eq!(
        subject(json!({"kind": "ServiceAccount", "user": {"name": "fred"}, "group": {"name": "fred"}})),
        vec![
            (
                "spec.rules[0].subjects[0].serviceAccount".to_string(),
                "Required value: serviceAccount is required when subject kind is 'ServiceAccount'".to_string()
            ),
            (
                "spec.rules[0].subjects[0].user".to_string(),
                "Forbidden: user is forbidden when subject kind is not 'User'".to_string()
            ),
            (
                "spec.rules[0].subjects[0].group".to_string(),
                "Forbidden: group is forbidden when subject kind is not 'Group'".to_string()
            ),
        ]
    );
    assert_eq!(
        subject(json!({"kind": "User", "group": {"name": "g"}, "serviceAccount": {"namespace": "s", "name": "n"}})),
        vec![
            (
                "spec.rules[0].subjects[0].user".to_string(),
                "Required value: user is required when subject kind is 'User'".to_string()
            ),
            (
                "spec.rules[0].subjects[0].serviceAccount".to_string(),
                "Forbidden: serviceAccount is forbidden when subject kind is not 'ServiceAccount'".to_string()
            ),
            (
                "spec.rules[0].subjects[0].group".to_string(),
                "Forbidden: group is forbidden when subject kind is not 'Group'".to_string()
            ),
        ]
    );
    assert_eq!(
        subject(json!({"kind": "ServiceAccount", "serviceAccount": {"name": "noxu"}})),
        one(
            "spec.rules[0].subjects[0].serviceAccount.namespace",
            "Required value: must specify namespace for service account"
        )
    );
    assert_eq!(
        subject(json!({"kind": "Group", "group": {}})),
        one("spec.rules[0].subjects[0].group.name", "Required value")
    );
    assert_eq!(
        subject(json!({"kind": ""})),
        one(
            "spec.rules[0].subjects[0].kind",
            "Unsupported value: \"\": supported values: \"Group\", \"ServiceAccount\", \"User\""
        )
    );
    assert_eq!(
        schema_causes(|s| s["rules"] = json!([{"subjects": []}])),
        vec![
            (
                "spec.rules[0].subjects".to_string(),
                "Required value: subjects must contain at least one value".to_string()
            ),
            (
                "spec.rules[0]".to_string(),
                "Required value: at least one of resourceRules and nonResourceRules has to be non-empty".to_string()
            ),
        ]
    );
}

#[test]
fn flow_schema_resource_and_non_resource_rules() {
    let rr = |r: Value| schema_causes(move |s| s["rules"][0]["resourceRules"] = json!([r.clone()]));
    assert_eq!(
        rr(
            json!({"verbs": ["*", "create"], "apiGroups": ["*", "tak"], "resources": ["*", "tok"], "namespaces": ["foo", "*"]})
        ),
        vec![
            (
                "spec.rules[0].resourceRules[0].verbs".to_string(),
                "Invalid value: []string{\"*\", \"create\"}: if '*' is present, must not specify other verbs"
                    .to_string()
            ),
            (
                "spec.rules[0].resourceRules[0].apiGroups".to_string(),
                "Invalid value: []string{\"*\", \"tak\"}: if '*' is present, must not specify other api groups"
                    .to_string()
            ),
            (
                "spec.rules[0].resourceRules[0].resources".to_string(),
                "Invalid value: []string{\"*\", \"tok\"}: if '*' is present, must not specify other resources"
                    .to_string()
            ),
            (
                "spec.rules[0].resourceRules[0].namespaces".to_string(),
                "Invalid value: []string{\"foo\", \"*\"}: if '*' is present, must not specify other namespaces"
                    .to_string()
            ),
        ]
    );
    assert_eq!(
        rr(json!({"verbs": ["feed"], "apiGroups": ["*"], "resources": ["*"], "namespaces": ["-foo"]})),
        vec![
            (
                "spec.rules[0].resourceRules[0].verbs".to_string(),
                "Unsupported value: []string{\"feed\"}: supported values: \"create\", \"delete\", \"deletecollection\", \"get\", \"list\", \"patch\", \"proxy\", \"update\", \"watch\"".to_string()
            ),
            (
                "spec.rules[0].resourceRules[0].namespaces[0]".to_string(),
                "Invalid value: \"-foo\": each member of this list must be '*' or a DNS-1123 label; a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')".to_string()
            ),
        ]
    );
    assert_eq!(
        rr(json!({"verbs": [], "apiGroups": [], "resources": []})),
        vec![
            (
                "spec.rules[0].resourceRules[0].verbs".to_string(),
                "Required value: verbs must contain at least one value".to_string()
            ),
            (
                "spec.rules[0].resourceRules[0].apiGroups".to_string(),
                "Required value: resource rules must supply at least one api group".to_string()
            ),
            (
                "spec.rules[0].resourceRules[0].resources".to_string(),
                "Required value: resource rules must supply at least one resource".to_string()
            ),
            (
                "spec.rules[0].resourceRules[0].namespaces".to_string(),
                "Required value: resource rules that are not cluster scoped must supply at least one namespace"
                    .to_string()
            ),
        ]
    );
    let urls = |u: Value| {
        schema_causes(move |s| {
            s["rules"][0]["nonResourceRules"] = json!([{"verbs": ["get"], "nonResourceURLs": u.clone()}])
        })
    };
    assert_eq!(
        urls(json!(["*", "tik"])),
        one(
            "spec.rules[0].nonResourceRules[0].nonResourceURLs",
            "Invalid value: []string{\"*\", \"tik\"}: if '*' is present, must not specify other non-resource URLs"
        )
    );
    let bad: Vec<(String, String)> = ["", "foo", "/a b", "//", "/health*", "/*/*"]
        .iter()
        .enumerate()
        .map(|(i, _)| format!("spec.rules[0].nonResourceRules[0].nonResourceURLs[{i}]"))
        .zip([
            "Invalid value: \"\": must not be empty",
            "Invalid value: \"foo\": must start with slash",
            "Invalid value: \"/a b\": must not contain white-space",
            "Invalid value: \"//\": must not contain double slash",
            "Invalid value: \"/health*\": wildcard can only do suffix matching",
            "Invalid value: \"/*/*\": wildcard can only do suffix matching",
        ])
        .map(|(f, m)| (f, m.to_string()))
        .collect();
    assert_eq!(urls(json!(["", "foo", "/a b", "//", "/health*", "/*/*"])), bad);
    assert_eq!(urls(json!(["/", "/apis/", "/healthz/*"])), vec![]);
}

#[test]
fn mandatory_flow_schemas_are_fixed() {
    let mut spec = mandatory_flow_schema_spec("exempt").unwrap();
    spec["rules"][0]["nonResourceRules"][0]["nonResourceURLs"] = json!(["/"]);
    let c = causes(flow_schemas(), "exempt", spec);
    assert_eq!(c.len(), 1);
    assert_eq!(c[0].0, "spec");
    assert!(c[0].1.ends_with(": spec of 'exempt' must equal the fixed value"), "{c:?}");
    let mut spec = mandatory_flow_schema_spec("catch-all").unwrap();
    spec["matchingPrecedence"] = json!(9999);
    let c = causes(flow_schemas(), "catch-all", spec);
    assert!(c[0].1.ends_with(": spec of 'catch-all' must equal the fixed value"), "{c:?}");
}

#[test]
fn flow_schema_status_and_generation() {
    let old = stored(flow_schemas(), "fs", schema_spec());
    assert_eq!(old["status"], json!({}));
    let mut new = old.clone();
    new["status"] =
        json!({"conditions": [{"type": "Dangling", "status": "False"}, {"type": "Dangling"}, {"type": ""}]});
    let c: Vec<(String, String)> =
        flow_schemas().validate_status_update(&new, &old).into_iter().map(|c| (c.field, c.message)).collect();
    assert_eq!(
        c,
        vec![
            ("status.conditions[1].type".to_string(), "Duplicate value: \"Dangling\"".to_string()),
            ("status.conditions[2].type".to_string(), "Required value: must not be empty".to_string()),
        ]
    );
    // The main resource keeps the stored status; a spec change bumps the generation.
    new["spec"]["matchingPrecedence"] = json!(500);
    flow_schemas().prepare_for_update(&mut new, &old);
    assert_eq!(new["status"], json!({}));
    assert_eq!(new["metadata"]["generation"], 2);
    assert_eq!(flow_schemas().validate_update(&new, &old), vec![]);
}

// ---------------------------------------------------------------------------------------------
// PriorityLevelConfiguration.

#[test]
fn valid_priority_levels_are_accepted() {
    assert_eq!(limited(json!({"limitResponse": {"type": "Reject"}})), vec![]);
    assert_eq!(limited(json!({"nominalConcurrencyShares": 0, "limitResponse": {"type": "Reject"}})), vec![], "a jail");
    assert_eq!(
        limited(json!({"lendablePercent": 100, "borrowingLimitPercent": 300,
                       "limitResponse": {"type": "Queue", "queuing": {"queues": 10000000, "handSize": 2}}})),
        vec![]
    );
    for name in ["exempt", "catch-all"] {
        assert_eq!(causes(priority_levels(), name, mandatory_priority_level_spec(name).unwrap()), vec![], "{name}");
    }
    let shares = json!({"type": "Exempt", "exempt": {"nominalConcurrencyShares": 10, "lendablePercent": 10}});
    assert_eq!(causes(priority_levels(), "exempt", shares), vec![], "exempt may change its exempt part");
}

#[test]
fn priority_level_types() {
    let spec = |s: Value| causes(priority_levels(), "pl", s);
    assert_eq!(
        spec(json!({"type": "Limited"})),
        one("spec.limited", "Required value: must not be empty when type is Limited")
    );
    assert_eq!(
        spec(json!({"type": "Limited", "exempt": {}, "limited": {"limitResponse": {"type": "Reject"}}})),
        one("spec.exempt", "Forbidden: must be nil if the type is Limited")
    );
    assert_eq!(
        spec(json!({"type": "Exempt"})),
        one("spec.type", "Invalid value: \"Exempt\": type must be 'Exempt' if and only if name is 'exempt'")
    );
    assert_eq!(
        spec(json!({"type": "Fast"})),
        vec![(
            "spec.type".to_string(),
            "Unsupported value: \"Fast\": supported values: \"Exempt\", \"Limited\"".to_string()
        ),]
    );
    assert_eq!(
        causes(
            priority_levels(),
            "exempt",
            json!({"type": "Exempt", "exempt": {"nominalConcurrencyShares": -1, "lendablePercent": 101}})
        ),
        vec![
            (
                "spec.exempt.nominalConcurrencyShares".to_string(),
                "Invalid value: -1: must be a non-negative integer".to_string()
            ),
            (
                "spec.exempt.lendablePercent".to_string(),
                "Invalid value: 101: must be between 0 and 100, inclusive".to_string()
            ),
        ]
    );
}

#[test]
fn limited_priority_levels() {
    assert_eq!(
        limited(json!({"nominalConcurrencyShares": -1, "lendablePercent": -1, "borrowingLimitPercent": -1,
                       "limitResponse": {"type": "Reject", "queuing": {}}})),
        vec![
            (
                "spec.limited.nominalConcurrencyShares".to_string(),
                "Invalid value: -1: must be a non-negative integer".to_string()
            ),
            (
                "spec.limited.limitResponse.queuing".to_string(),
                "Forbidden: must be nil if limited.limitResponse.type is not Limited".to_string()
            ),
            (
                "spec.limited.lendablePercent".to_string(),
                "Invalid value: -1: must be between 0 and 100, inclusive".to_string()
            ),
            (
                "spec.limited.borrowingLimitPercent".to_string(),
                "Invalid value: -1: if specified, must be a non-negative integer".to_string()
            ),
        ]
    );
    assert_eq!(
        limited(json!({"limitResponse": {"type": "Queue"}})),
        one(
            "spec.limited.limitResponse.queuing",
            "Required value: must not be empty if limited.limitResponse.type is Limited"
        )
    );
    assert_eq!(
        limited(json!({"limitResponse": {"type": "Drop"}})),
        one("spec.limited.limitResponse.type", "Unsupported value: \"Drop\": supported values: \"Queue\", \"Reject\"")
    );
    let queuing = |q: Value| limited(json!({"limitResponse": {"type": "Queue", "queuing": q}}));
    let q = "spec.limited.limitResponse.queuing";
    assert_eq!(
        queuing(json!({"queues": 512, "handSize": 8})),
        one(
            &format!("{q}.handSize"),
            "Invalid value: 8: required entropy bits of deckSize 512 and handSize 8 should not be greater than 60"
        )
    );
    assert_eq!(
        queuing(json!({"queues": 7, "handSize": 8})),
        one(&format!("{q}.handSize"), "Invalid value: 8: should not be greater than queues (7)")
    );
    assert_eq!(
        queuing(json!({"queues": 2147483647, "handSize": 3, "queueLengthLimit": -1})),
        vec![
            (format!("{q}.queueLengthLimit"), "Invalid value: -1: must be positive".to_string()),
            (format!("{q}.queues"), "Invalid value: 2147483647: must not be greater than 10000000".to_string()),
            (
                format!("{q}.handSize"),
                "Invalid value: 3: required entropy bits of deckSize 2147483647 and handSize 3 should not be greater than 60".to_string()
            ),
        ]
    );
    assert_eq!(
        queuing(json!({"queues": -2, "handSize": -1})),
        vec![
            (format!("{q}.queues"), "Invalid value: -2: must be positive".to_string()),
            (format!("{q}.handSize"), "Invalid value: -1: must be positive".to_string()),
        ]
    );
}

#[test]
fn mandatory_priority_levels_are_fixed() {
    let c = causes(
        priority_levels(),
        "catch-all",
        json!({"type": "Limited", "limited": {"nominalConcurrencyShares": 42, "limitResponse": {"type": "Reject"}}}),
    );
    assert_eq!(c.len(), 1);
    assert_eq!(c[0].0, "spec");
    assert!(c[0].1.ends_with(": spec of 'catch-all' must equal the fixed value"), "{c:?}");
    // A zero borrowing limit is a set pointer: not the fixed spec.
    let mut spec = mandatory_priority_level_spec("catch-all").unwrap();
    spec["limited"]["borrowingLimitPercent"] = json!(0);
    assert_eq!(causes(priority_levels(), "catch-all", spec).len(), 1);
    let c = causes(
        priority_levels(),
        "exempt",
        json!({"type": "Exempt", "exempt": {}, "limited": {"nominalConcurrencyShares": 42, "limitResponse": {"type": "Reject"}}}),
    );
    let fields: Vec<&str> = c.iter().map(|(f, _)| f.as_str()).collect();
    assert_eq!(fields, vec!["spec.limited", "spec"]);
    assert!(c[1].1.ends_with(": spec of 'exempt' except the 'spec.exempt' field must equal the fixed value"), "{c:?}");
    let c = causes(
        priority_levels(),
        "exempt",
        json!({"type": "Limited", "limited": {"limitResponse": {"type": "Reject"}}}),
    );
    assert_eq!(
        c[0],
        (
            "spec.type".to_string(),
            "Invalid value: \"Limited\": type must be 'Exempt' if and only if name is 'exempt'".to_string()
        )
    );
    assert_eq!(c.len(), 2);
}

#[test]
fn priority_level_round_trip_annotation_and_status() {
    let mut obj = json!({"metadata": {"name": "pl", "annotations": {"flowcontrol.k8s.io/v1beta3-preserve-zero-concurrency-shares": ""}},
                         "spec": {"type": "Limited", "limited": {"limitResponse": {"type": "Reject"}}}});
    priority_levels().apply_defaults(&mut obj);
    let c: Vec<(String, String)> = priority_levels().validate(&obj).into_iter().map(|c| (c.field, c.message)).collect();
    assert_eq!(
        c,
        one(
            "metadata.annotations",
            "Forbidden: annotation 'flowcontrol.k8s.io/v1beta3-preserve-zero-concurrency-shares' is forbidden"
        )
    );
    let old =
        stored(priority_levels(), "pl", json!({"type": "Limited", "limited": {"limitResponse": {"type": "Reject"}}}));
    let mut new = old.clone();
    new["status"] = json!({"conditions": [{"type": "A"}, {"type": "A"}]});
    let c: Vec<(String, String)> =
        priority_levels().validate_status_update(&new, &old).into_iter().map(|c| (c.field, c.message)).collect();
    assert_eq!(c, one("status.conditions[1].type", "Duplicate value: \"A\""));
}
