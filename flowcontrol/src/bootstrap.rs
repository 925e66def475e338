//! kube 1.30's bootstrap APF configuration and the rule that keeps it.
//!
//! kube-apiserver keeps two sets of FlowSchemas and PriorityLevelConfigurations in the API:
//!
//! - **Mandatory** (`exempt` and `catch-all` of each kind): APF cannot work without them, so
//!   any change is stomped back to kube's spec. The one freedom (since 1.28) is the `exempt`
//!   level's `nominalConcurrencyShares` and `lendablePercent`, which an operator may tune.
//! - **Suggested** (the rest): created when missing and kept at kube's spec only while their
//!   `apf.kubernetes.io/autoupdate-spec` annotation says `true`. An operator who wants their
//!   own version sets it to `false`. When the annotation is missing (or not a boolean) kube
//!   updates only objects nobody has edited (`metadata.generation == 1`), and writes the
//!   annotation to record the decision.
//!
//! Objects carrying `autoupdate-spec: true` that kube no longer ships (a suggestion removed in
//! a later release) are deleted ([`should_remove`], kube's `RemoveUnwantedObjects`); with the
//! 1.30 set itself nothing is ever removed, but the rule matters when a cluster's store was
//! written by a different release.
//!
//! The objects are `serde_json::Value`s in `flowcontrol.apiserver.k8s.io/v1` wire form, exactly
//! as 1.30's `k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap/default.go` defines them; v1
//! defaulting changes none of them.

use serde_json::{Map, Value, json};

/// The API version the objects are written in.
pub const API_VERSION: &str = "flowcontrol.apiserver.k8s.io/v1";

/// The annotation that lets an operator opt a suggested object out of kube's updates.
pub const AUTO_UPDATE_ANNOTATION: &str = "apf.kubernetes.io/autoupdate-spec";

const GROUP_MASTERS: &str = "system:masters";
const GROUP_AUTHENTICATED: &str = "system:authenticated";
const GROUP_UNAUTHENTICATED: &str = "system:unauthenticated";
const GROUP_NODES: &str = "system:nodes";
const GROUP_SERVICE_ACCOUNTS: &str = "system:serviceaccounts";
const USER_KCM: &str = "system:kube-controller-manager";
const USER_SCHEDULER: &str = "system:kube-scheduler";

fn metadata(name: &str) -> Value {
    json!({"name": name, "annotations": {AUTO_UPDATE_ANNOTATION: "true"}})
}

fn priority_level(name: &str, spec: Value) -> Value {
    json!({"apiVersion": API_VERSION, "kind": "PriorityLevelConfiguration", "metadata": metadata(name), "spec": spec})
}

/// A `Limited` level that queues.
fn queuing_level(
    name: &str,
    shares: u32,
    lendable: u32,
    queues: u32,
    hand_size: u32,
    queue_length_limit: u32,
) -> Value {
    priority_level(
        name,
        json!({
            "type": "Limited",
            "limited": {
                "nominalConcurrencyShares": shares,
                "lendablePercent": lendable,
                "limitResponse": {
                    "type": "Queue",
                    "queuing": {"queues": queues, "handSize": hand_size, "queueLengthLimit": queue_length_limit},
                },
            },
        }),
    )
}

fn flow_schema(name: &str, level: &str, precedence: u32, distinguisher: Option<&str>, rule: Value) -> Value {
    let mut spec = json!({
        "priorityLevelConfiguration": {"name": level},
        "matchingPrecedence": precedence,
        "rules": [rule],
    });
    if let Some(method) = distinguisher {
        spec["distinguisherMethod"] = json!({"type": method});
    }
    json!({"apiVersion": API_VERSION, "kind": "FlowSchema", "metadata": metadata(name), "spec": spec})
}

fn groups(names: &[&str]) -> Vec<Value> {
    names.iter().map(|n| json!({"kind": "Group", "group": {"name": n}})).collect()
}

fn users(names: &[&str]) -> Vec<Value> {
    names.iter().map(|n| json!({"kind": "User", "user": {"name": n}})).collect()
}

fn kube_system_service_accounts(names: &[&str]) -> Vec<Value> {
    names
        .iter()
        .map(|n| json!({"kind": "ServiceAccount", "serviceAccount": {"namespace": "kube-system", "name": n}}))
        .collect()
}

fn resource_rule(
    verbs: &[&str],
    api_groups: &[&str],
    resources: &[&str],
    namespaces: &[&str],
    cluster_scope: bool,
) -> Value {
    let mut rule = json!({"verbs": verbs, "apiGroups": api_groups, "resources": resources, "namespaces": namespaces});
    if cluster_scope {
        // `clusterScope` is omitempty in the Go type: false is simply absent on the wire.
        rule["clusterScope"] = Value::Bool(true);
    }
    rule
}

/// Subjects allowed every verb on everything, resource or not (kube's `NewFSAll` shape).
fn everything(subjects: Vec<Value>) -> Value {
    json!({
        "subjects": subjects,
        "resourceRules": [resource_rule(&["*"], &["*"], &["*"], &["*"], true)],
        "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
    })
}

/// The leader-election verbs.
const GET_CREATE_UPDATE: &[&str] = &["get", "create", "update"];

/// `exempt` and `catch-all`, in kube's order.
pub fn mandatory_priority_levels() -> Vec<Value> {
    vec![
        priority_level(
            "catch-all",
            json!({
                "type": "Limited",
                "limited": {"nominalConcurrencyShares": 5, "lendablePercent": 0, "limitResponse": {"type": "Reject"}},
            }),
        ),
        priority_level(
            "exempt",
            json!({"type": "Exempt", "exempt": {"nominalConcurrencyShares": 0, "lendablePercent": 0}}),
        ),
    ]
}

/// `exempt` (precedence 1, `system:masters`) and `catch-all` (10000, everyone).
pub fn mandatory_flow_schemas() -> Vec<Value> {
    vec![
        flow_schema("exempt", "exempt", 1, None, everything(groups(&[GROUP_MASTERS]))),
        flow_schema(
            "catch-all",
            "catch-all",
            10000,
            Some("ByUser"),
            everything(groups(&[GROUP_UNAUTHENTICATED, GROUP_AUTHENTICATED])),
        ),
    ]
}

/// The six suggested levels, in kube's order. With the two mandatory ones their shares sum to
/// 245, which is how 600 seats become 74, 98, 25, 98, 245 and 49 (see [`crate::limits`]).
pub fn suggested_priority_levels() -> Vec<Value> {
    vec![
        queuing_level("system", 30, 33, 64, 6, 50),
        queuing_level("node-high", 40, 25, 64, 6, 50),
        queuing_level("leader-election", 10, 0, 16, 4, 50),
        queuing_level("workload-high", 40, 50, 128, 6, 50),
        queuing_level("workload-low", 100, 90, 128, 6, 50),
        queuing_level("global-default", 20, 50, 128, 6, 50),
    ]
}

/// The eleven suggested schemas, in kube's order.
pub fn suggested_flow_schemas() -> Vec<Value> {
    let leases = resource_rule(GET_CREATE_UPDATE, &["coordination.k8s.io"], &["leases"], &["*"], false);
    vec![
        flow_schema("system-nodes", "system", 500, Some("ByUser"), everything(groups(&[GROUP_NODES]))),
        flow_schema(
            "system-node-high",
            "node-high",
            400,
            Some("ByUser"),
            json!({
                "subjects": groups(&[GROUP_NODES]),
                "resourceRules": [
                    resource_rule(&["*"], &[""], &["nodes", "nodes/status"], &["*"], true),
                    resource_rule(&["*"], &["coordination.k8s.io"], &["leases"], &["*"], false),
                ],
            }),
        ),
        flow_schema(
            "probes",
            "exempt",
            2,
            None,
            json!({
                "subjects": groups(&[GROUP_UNAUTHENTICATED, GROUP_AUTHENTICATED]),
                "nonResourceRules": [{"verbs": ["get"], "nonResourceURLs": ["/healthz", "/readyz", "/livez"]}],
            }),
        ),
        flow_schema(
            "system-leader-election",
            "leader-election",
            100,
            Some("ByUser"),
            json!({
                "subjects": ([users(&[USER_KCM, USER_SCHEDULER]), kube_system_service_accounts(&["*"])].concat()),
                "resourceRules": [leases.clone()],
            }),
        ),
        flow_schema(
            "workload-leader-election",
            "leader-election",
            200,
            Some("ByUser"),
            json!({
                "subjects": kube_system_service_accounts(&["*"]),
                "resourceRules": [
                    resource_rule(GET_CREATE_UPDATE, &[""], &["endpoints", "configmaps"], &["*"], false),
                    leases,
                ],
            }),
        ),
        // Ahead of workload-leader-election, so the endpoints controllers' own writes to
        // Endpoints are not mistaken for leader election.
        flow_schema(
            "endpoint-controller",
            "workload-high",
            150,
            Some("ByUser"),
            json!({
                "subjects": ([
                    users(&[USER_KCM]),
                    kube_system_service_accounts(&["endpoint-controller", "endpointslicemirroring-controller"]),
                ].concat()),
                "resourceRules": [resource_rule(GET_CREATE_UPDATE, &[""], &["endpoints"], &["*"], false)],
            }),
        ),
        flow_schema(
            "kube-controller-manager",
            "workload-high",
            800,
            Some("ByNamespace"),
            everything(users(&[USER_KCM])),
        ),
        flow_schema("kube-scheduler", "workload-high", 800, Some("ByNamespace"), everything(users(&[USER_SCHEDULER]))),
        flow_schema(
            "kube-system-service-accounts",
            "workload-high",
            900,
            Some("ByNamespace"),
            everything(kube_system_service_accounts(&["*"])),
        ),
        flow_schema(
            "service-accounts",
            "workload-low",
            9000,
            Some("ByUser"),
            everything(groups(&[GROUP_SERVICE_ACCOUNTS])),
        ),
        flow_schema(
            "global-default",
            "global-default",
            9900,
            Some("ByUser"),
            everything(groups(&[GROUP_UNAUTHENTICATED, GROUP_AUTHENTICATED])),
        ),
    ]
}

/// Which set a bootstrap object belongs to, and so how it is kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Strategy {
    /// Always restored to kube's spec.
    Mandatory,
    /// Kept at kube's spec only while the annotation allows it.
    Suggested,
}

/// What to do about one bootstrap object.
#[derive(Clone, Debug, PartialEq)]
pub enum Ensure {
    /// It is missing: create this object (kube always re-creates a missing one, suggested
    /// ones included).
    Create(Value),
    /// Write this object: the existing one with kube's spec and/or the annotation set. It
    /// keeps the existing `metadata.resourceVersion`, so the write is a guarded update; on a
    /// conflict kube simply tries again at its next pass.
    Update(Value),
    /// Nothing to do.
    LeaveAlone,
}

/// kube's `EnsureConfiguration` decision for `wanted` (one of the objects above) given the
/// stored object of the same name, if any.
pub fn ensure(wanted: &Value, existing: Option<&Value>, strategy: Strategy) -> Ensure {
    let Some(current) = existing else { return Ensure::Create(wanted.clone()) };
    let auto_update = match strategy {
        Strategy::Mandatory => true,
        Strategy::Suggested => should_update_spec(current),
    };
    let annotation = annotation(current).and_then(parse_go_bool);
    let update_annotation = annotation != Some(auto_update);
    let spec_changed = auto_update && !spec_equalish(wanted, current);
    if !update_annotation && !spec_changed {
        return Ensure::LeaveAlone;
    }
    let mut revised = current.clone();
    if spec_changed {
        revised["spec"] = wanted.get("spec").cloned().unwrap_or(Value::Null);
    }
    if update_annotation {
        set_annotation(&mut revised, if auto_update { "true" } else { "false" });
    }
    Ensure::Update(revised)
}

/// Whether a stored object of this kind should be deleted as an abandoned bootstrap object:
/// its name is none of `wanted` (pass every mandatory and suggested object of the kind) and it
/// carries the annotation with a true value. Objects without the annotation are the operator's
/// own; a malformed or false value protects them too.
pub fn should_remove(existing: &Value, wanted: &[Value]) -> bool {
    let name = existing.pointer("/metadata/name").and_then(Value::as_str);
    if wanted.iter().any(|w| w.pointer("/metadata/name").and_then(Value::as_str) == name) {
        return false;
    }
    annotation(existing).and_then(parse_go_bool) == Some(true)
}

fn annotation(object: &Value) -> Option<&str> {
    object.pointer("/metadata/annotations")?.get(AUTO_UPDATE_ANNOTATION)?.as_str()
}

fn set_annotation(object: &mut Value, value: &str) {
    let Some(obj) = object.as_object_mut() else { return };
    let meta = obj.entry("metadata").or_insert_with(|| Value::Object(Map::new()));
    if !meta.is_object() {
        *meta = Value::Object(Map::new());
    }
    let annotations = &mut meta["annotations"];
    if !annotations.is_object() {
        *annotations = Value::Object(Map::new());
    }
    annotations[AUTO_UPDATE_ANNOTATION] = Value::String(value.to_string());
}

/// kube's `shouldUpdateSpec` for suggested objects: the annotation's value when it is a
/// boolean, otherwise "only if nobody has edited it" (generation 1). kube notes the hole: an
/// operator who deletes and re-creates the object with their own spec also has generation 1.
fn should_update_spec(current: &Value) -> bool {
    if let Some(value) = annotation(current).and_then(parse_go_bool) {
        return value;
    }
    current.pointer("/metadata/generation").and_then(Value::as_i64) == Some(1)
}

/// Go's `strconv.ParseBool`.
fn parse_go_bool(s: &str) -> Option<bool> {
    match s {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

/// kube's `SpecEqualish`: the wanted spec, defaulted as v1 defaults it, semantically equal to
/// the stored one. For the mandatory `exempt` level the stored shares and lendable percent are
/// taken as wanted, which is how an operator's tuning of those two survives.
fn spec_equalish(wanted: &Value, current: &Value) -> bool {
    let is_level = wanted.get("kind").and_then(Value::as_str) == Some("PriorityLevelConfiguration");
    let mut expected = wanted.get("spec").cloned().unwrap_or(Value::Null);
    let mut actual = current.get("spec").cloned().unwrap_or(Value::Null);
    if is_level {
        default_level_spec(&mut expected);
        default_level_spec(&mut actual);
        if wanted.pointer("/metadata/name").and_then(Value::as_str) == Some("exempt") {
            let Some(actual_exempt) = actual.get("exempt").filter(|e| e.is_object()).cloned() else {
                return false;
            };
            if let Some(exempt) = expected.get_mut("exempt").and_then(Value::as_object_mut) {
                for key in ["nominalConcurrencyShares", "lendablePercent"] {
                    match actual_exempt.get(key) {
                        Some(v) => exempt.insert(key.to_string(), v.clone()),
                        None => exempt.remove(key),
                    };
                }
            }
        }
    } else {
        default_flow_schema_spec(&mut expected);
        default_flow_schema_spec(&mut actual);
    }
    semantic(&expected) == semantic(&actual)
}

/// v1's defaults for a PriorityLevelConfiguration spec (`SetObjectDefaults_...`): on the nested
/// structs that are present only, as Go's defaulting never allocates a missing pointer struct.
fn default_level_spec(spec: &mut Value) {
    let set_if_missing = |obj: &mut Value, key: &str, value: u32| {
        if let Some(map) = obj.as_object_mut()
            && map.get(key).is_none_or(Value::is_null)
        {
            map.insert(key.to_string(), json!(value));
        }
    };
    let set_if_zero = |obj: &mut Value, key: &str, value: u32| {
        if let Some(map) = obj.as_object_mut()
            && map.get(key).and_then(Value::as_u64).unwrap_or(0) == 0
        {
            map.insert(key.to_string(), json!(value));
        }
    };
    if let Some(limited) = spec.get_mut("limited").filter(|l| l.is_object()) {
        set_if_missing(limited, "nominalConcurrencyShares", 30);
        set_if_missing(limited, "lendablePercent", 0);
        if let Some(queuing) = limited.pointer_mut("/limitResponse/queuing").filter(|q| q.is_object()) {
            set_if_zero(queuing, "handSize", 8);
            set_if_zero(queuing, "queues", 64);
            set_if_zero(queuing, "queueLengthLimit", 50);
        }
    }
    if let Some(exempt) = spec.get_mut("exempt").filter(|e| e.is_object()) {
        set_if_missing(exempt, "nominalConcurrencyShares", 0);
        set_if_missing(exempt, "lendablePercent", 0);
    }
}

/// v1's default for a FlowSchema spec: matching precedence 1000.
fn default_flow_schema_spec(spec: &mut Value) {
    if let Some(map) = spec.as_object_mut()
        && map.get("matchingPrecedence").and_then(Value::as_u64).unwrap_or(0) == 0
    {
        map.insert("matchingPrecedence".into(), json!(1000));
    }
}

/// The value as Go sees it after decoding into the typed struct, for `equality.Semantic`:
/// nulls, `false`, `""`, empty lists and empty objects are what an absent non-pointer field
/// decodes to, so they are dropped. Numbers are kept: the pointer fields where 0 and absent
/// differ (`borrowingLimitPercent`) are numbers, and every non-pointer number was defaulted
/// away from 0 above.
fn semantic(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter_map(|(k, v)| {
                    let v = semantic(v);
                    (!is_zero(&v)).then(|| (k.clone(), v))
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(semantic).collect()),
        other => other.clone(),
    }
}

fn is_zero(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(m) => m.is_empty(),
        Value::Number(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shuffle::Dealer;

    fn names(objects: &[Value]) -> Vec<&str> {
        objects.iter().map(|o| o["metadata"]["name"].as_str().unwrap_or_default()).collect()
    }

    fn find(objects: &[Value], name: &str) -> Value {
        objects.iter().find(|o| o["metadata"]["name"] == name).cloned().expect("bootstrap object")
    }

    /// As the store would hold it: server-set metadata and (for schemas) a status.
    fn stored(wanted: &Value, generation: i64) -> Value {
        let mut object = wanted.clone();
        object["metadata"]["resourceVersion"] = json!("42");
        object["metadata"]["uid"] = json!("u-1");
        object["metadata"]["generation"] = json!(generation);
        object["status"] = json!({"conditions": [{"type": "Dangling", "status": "False"}]});
        object
    }

    #[test]
    fn the_sets_are_kubes_1_30_sets_in_kubes_order() {
        assert_eq!(names(&mandatory_priority_levels()), ["catch-all", "exempt"]);
        assert_eq!(names(&mandatory_flow_schemas()), ["exempt", "catch-all"]);
        assert_eq!(
            names(&suggested_priority_levels()),
            ["system", "node-high", "leader-election", "workload-high", "workload-low", "global-default"]
        );
        assert_eq!(
            names(&suggested_flow_schemas()),
            [
                "system-nodes",
                "system-node-high",
                "probes",
                "system-leader-election",
                "workload-leader-election",
                "endpoint-controller",
                "kube-controller-manager",
                "kube-scheduler",
                "kube-system-service-accounts",
                "service-accounts",
                "global-default",
            ]
        );
        let all: Vec<Value> = [
            mandatory_priority_levels(),
            mandatory_flow_schemas(),
            suggested_priority_levels(),
            suggested_flow_schemas(),
        ]
        .concat();
        for object in &all {
            assert_eq!(object["apiVersion"], API_VERSION);
            assert_eq!(
                object["metadata"]["annotations"][AUTO_UPDATE_ANNOTATION], "true",
                "{}",
                object["metadata"]["name"]
            );
        }
    }

    #[test]
    fn mandatory_levels_in_wire_form() {
        let levels = mandatory_priority_levels();
        assert_eq!(
            find(&levels, "exempt"),
            json!({
                "apiVersion": "flowcontrol.apiserver.k8s.io/v1",
                "kind": "PriorityLevelConfiguration",
                "metadata": {"name": "exempt", "annotations": {"apf.kubernetes.io/autoupdate-spec": "true"}},
                "spec": {"type": "Exempt", "exempt": {"nominalConcurrencyShares": 0, "lendablePercent": 0}},
            })
        );
        assert_eq!(
            find(&levels, "catch-all")["spec"],
            json!({
                "type": "Limited",
                "limited": {"nominalConcurrencyShares": 5, "lendablePercent": 0, "limitResponse": {"type": "Reject"}},
            })
        );
    }

    #[test]
    fn suggested_levels_carry_kubes_shares_lending_and_queuing() {
        let rows: Vec<(String, u64, u64, u64, u64, u64)> = suggested_priority_levels()
            .iter()
            .map(|pl| {
                let l = &pl["spec"]["limited"];
                let q = &l["limitResponse"]["queuing"];
                assert_eq!(pl["spec"]["type"], "Limited");
                assert_eq!(l["limitResponse"]["type"], "Queue");
                assert!(l.get("borrowingLimitPercent").is_none());
                let n = |v: &Value| v.as_u64().unwrap_or(u64::MAX);
                let queues = n(&q["queues"]);
                let hand = n(&q["handSize"]);
                assert!(Dealer::new(queues as usize, hand as usize).is_ok());
                (
                    pl["metadata"]["name"].as_str().unwrap_or_default().to_string(),
                    n(&l["nominalConcurrencyShares"]),
                    n(&l["lendablePercent"]),
                    queues,
                    hand,
                    n(&q["queueLengthLimit"]),
                )
            })
            .collect();
        let expected = [
            ("system", 30, 33, 64, 6, 50),
            ("node-high", 40, 25, 64, 6, 50),
            ("leader-election", 10, 0, 16, 4, 50),
            ("workload-high", 40, 50, 128, 6, 50),
            ("workload-low", 100, 90, 128, 6, 50),
            ("global-default", 20, 50, 128, 6, 50),
        ];
        let expected: Vec<(String, u64, u64, u64, u64, u64)> =
            expected.iter().map(|&(n, a, b, c, d, e)| (n.to_string(), a, b, c, d, e)).collect();
        assert_eq!(rows, expected);
    }

    #[test]
    fn flow_schemas_in_wire_form() {
        let mandatory = mandatory_flow_schemas();
        assert_eq!(
            find(&mandatory, "exempt")["spec"],
            json!({
                "priorityLevelConfiguration": {"name": "exempt"},
                "matchingPrecedence": 1,
                "rules": [{
                    "subjects": [{"kind": "Group", "group": {"name": "system:masters"}}],
                    "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"], "clusterScope": true, "namespaces": ["*"]}],
                    "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
                }],
            })
        );
        let catch_all = find(&mandatory, "catch-all");
        assert_eq!(catch_all["spec"]["matchingPrecedence"], 10000);
        assert_eq!(catch_all["spec"]["distinguisherMethod"], json!({"type": "ByUser"}));
        assert_eq!(
            catch_all["spec"]["rules"][0]["subjects"],
            json!([
                {"kind": "Group", "group": {"name": "system:unauthenticated"}},
                {"kind": "Group", "group": {"name": "system:authenticated"}},
            ])
        );
        let suggested = suggested_flow_schemas();
        assert_eq!(
            find(&suggested, "probes")["spec"],
            json!({
                "priorityLevelConfiguration": {"name": "exempt"},
                "matchingPrecedence": 2,
                "rules": [{
                    "subjects": [
                        {"kind": "Group", "group": {"name": "system:unauthenticated"}},
                        {"kind": "Group", "group": {"name": "system:authenticated"}},
                    ],
                    "nonResourceRules": [{"verbs": ["get"], "nonResourceURLs": ["/healthz", "/readyz", "/livez"]}],
                }],
            })
        );
        assert_eq!(
            find(&suggested, "endpoint-controller")["spec"],
            json!({
                "priorityLevelConfiguration": {"name": "workload-high"},
                "matchingPrecedence": 150,
                "distinguisherMethod": {"type": "ByUser"},
                "rules": [{
                    "subjects": [
                        {"kind": "User", "user": {"name": "system:kube-controller-manager"}},
                        {"kind": "ServiceAccount", "serviceAccount": {"namespace": "kube-system", "name": "endpoint-controller"}},
                        {"kind": "ServiceAccount", "serviceAccount": {"namespace": "kube-system", "name": "endpointslicemirroring-controller"}},
                    ],
                    "resourceRules": [{"verbs": ["get", "create", "update"], "apiGroups": [""], "resources": ["endpoints"], "namespaces": ["*"]}],
                }],
            })
        );
        assert_eq!(
            find(&suggested, "system-leader-election")["spec"]["rules"][0],
            json!({
                "subjects": [
                    {"kind": "User", "user": {"name": "system:kube-controller-manager"}},
                    {"kind": "User", "user": {"name": "system:kube-scheduler"}},
                    {"kind": "ServiceAccount", "serviceAccount": {"namespace": "kube-system", "name": "*"}},
                ],
                "resourceRules": [{"verbs": ["get", "create", "update"], "apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "namespaces": ["*"]}],
            })
        );
        assert_eq!(
            find(&suggested, "system-node-high")["spec"]["rules"][0]["resourceRules"],
            json!([
                {"verbs": ["*"], "apiGroups": [""], "resources": ["nodes", "nodes/status"], "clusterScope": true, "namespaces": ["*"]},
                {"verbs": ["*"], "apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "namespaces": ["*"]},
            ])
        );
        let summary: Vec<(&str, &str, u64, Option<&str>)> = suggested
            .iter()
            .map(|fs| {
                let spec = &fs["spec"];
                (
                    fs["metadata"]["name"].as_str().unwrap_or_default(),
                    spec["priorityLevelConfiguration"]["name"].as_str().unwrap_or_default(),
                    spec["matchingPrecedence"].as_u64().unwrap_or_default(),
                    spec.pointer("/distinguisherMethod/type").and_then(Value::as_str),
                )
            })
            .collect();
        assert_eq!(
            summary,
            [
                ("system-nodes", "system", 500, Some("ByUser")),
                ("system-node-high", "node-high", 400, Some("ByUser")),
                ("probes", "exempt", 2, None),
                ("system-leader-election", "leader-election", 100, Some("ByUser")),
                ("workload-leader-election", "leader-election", 200, Some("ByUser")),
                ("endpoint-controller", "workload-high", 150, Some("ByUser")),
                ("kube-controller-manager", "workload-high", 800, Some("ByNamespace")),
                ("kube-scheduler", "workload-high", 800, Some("ByNamespace")),
                ("kube-system-service-accounts", "workload-high", 900, Some("ByNamespace")),
                ("service-accounts", "workload-low", 9000, Some("ByUser")),
                ("global-default", "global-default", 9900, Some("ByUser")),
            ]
        );
        // Every schema points at a bootstrap level.
        let levels = [mandatory_priority_levels(), suggested_priority_levels()].concat();
        for fs in mandatory.iter().chain(&suggested) {
            let level = fs["spec"]["priorityLevelConfiguration"]["name"].as_str().unwrap_or_default();
            assert!(names(&levels).contains(&level), "{level}");
        }
    }

    #[test]
    fn missing_objects_are_created_mandatory_or_not() {
        let wanted = find(&suggested_priority_levels(), "system");
        assert_eq!(ensure(&wanted, None, Strategy::Suggested), Ensure::Create(wanted.clone()));
        assert_eq!(ensure(&wanted, None, Strategy::Mandatory), Ensure::Create(wanted));
    }

    #[test]
    fn an_object_at_kubes_spec_is_left_alone_even_as_the_store_spells_it() {
        let wanted = find(&suggested_flow_schemas(), "endpoint-controller");
        let mut current = stored(&wanted, 1);
        // Explicit zero values and nulls decode to the same Go struct.
        current["spec"]["rules"][0]["resourceRules"][0]["clusterScope"] = json!(false);
        current["spec"]["rules"][0]["nonResourceRules"] = json!([]);
        assert_eq!(ensure(&wanted, Some(&current), Strategy::Suggested), Ensure::LeaveAlone);
        // v1 defaulting is applied before comparing: an absent lendablePercent is 0.
        let level = find(&suggested_priority_levels(), "leader-election");
        let mut current = stored(&level, 1);
        current["spec"]["limited"].as_object_mut().map(|l| l.remove("lendablePercent"));
        assert_eq!(ensure(&level, Some(&current), Strategy::Suggested), Ensure::LeaveAlone);
        // But a borrowing limit of 0 is not the absent (unlimited) one.
        current["spec"]["limited"]["borrowingLimitPercent"] = json!(0);
        let Ensure::Update(revised) = ensure(&level, Some(&current), Strategy::Suggested) else {
            panic!("update expected")
        };
        assert_eq!(revised["spec"], level["spec"]);
    }

    #[test]
    fn mandatory_objects_are_restored_keeping_metadata_and_status() {
        let wanted = find(&mandatory_priority_levels(), "catch-all");
        let mut current = stored(&wanted, 2);
        current["spec"]["limited"]["nominalConcurrencyShares"] = json!(500);
        current["metadata"]["annotations"][AUTO_UPDATE_ANNOTATION] = json!("false");
        current["metadata"]["labels"] = json!({"team": "ops"});
        let Ensure::Update(revised) = ensure(&wanted, Some(&current), Strategy::Mandatory) else {
            panic!("update expected")
        };
        assert_eq!(revised["spec"], wanted["spec"]);
        assert_eq!(revised["metadata"]["annotations"][AUTO_UPDATE_ANNOTATION], "true", "mandatory means true");
        assert_eq!(revised["metadata"]["resourceVersion"], "42", "a guarded update");
        assert_eq!(revised["metadata"]["labels"], json!({"team": "ops"}));
        assert_eq!(revised["status"], current["status"]);
        // A mandatory object whose only difference is the annotation gets just that fixed.
        let mut current = stored(&wanted, 2);
        current["metadata"]["annotations"] = json!({});
        let Ensure::Update(revised) = ensure(&wanted, Some(&current), Strategy::Mandatory) else {
            panic!("update expected")
        };
        assert_eq!(revised, stored(&wanted, 2));
    }

    #[test]
    fn the_exempt_levels_shares_and_lending_may_be_tuned_nothing_else() {
        let wanted = find(&mandatory_priority_levels(), "exempt");
        let mut tuned = stored(&wanted, 3);
        tuned["spec"]["exempt"] = json!({"nominalConcurrencyShares": 10, "lendablePercent": 20});
        assert_eq!(ensure(&wanted, Some(&tuned), Strategy::Mandatory), Ensure::LeaveAlone);
        // Anything else differing restores the whole of kube's spec, tuning included.
        let mut broken = tuned.clone();
        broken["spec"]["limited"] = json!({"nominalConcurrencyShares": 1});
        let Ensure::Update(revised) = ensure(&wanted, Some(&broken), Strategy::Mandatory) else {
            panic!("update expected")
        };
        assert_eq!(revised["spec"], wanted["spec"]);
        let mut bare = stored(&wanted, 3);
        bare["spec"] = json!({"type": "Exempt"});
        let Ensure::Update(revised) = ensure(&wanted, Some(&bare), Strategy::Mandatory) else {
            panic!("update expected")
        };
        assert_eq!(revised["spec"], wanted["spec"]);
        // The same tuning on catch-all is stomped.
        let catch_all = find(&mandatory_priority_levels(), "catch-all");
        let mut tuned = stored(&catch_all, 3);
        tuned["spec"]["limited"]["lendablePercent"] = json!(20);
        assert!(matches!(ensure(&catch_all, Some(&tuned), Strategy::Mandatory), Ensure::Update(_)));
    }

    #[test]
    fn suggested_objects_follow_their_annotation() {
        let wanted = find(&suggested_flow_schemas(), "service-accounts");
        let mut edited = stored(&wanted, 4);
        edited["spec"]["matchingPrecedence"] = json!(8000);
        // "true" (in any of Go's spellings): kube's spec comes back.
        for yes in ["true", "True", "1", "t"] {
            edited["metadata"]["annotations"][AUTO_UPDATE_ANNOTATION] = json!(yes);
            let Ensure::Update(revised) = ensure(&wanted, Some(&edited), Strategy::Suggested) else {
                panic!("update expected")
            };
            assert_eq!(revised["spec"], wanted["spec"]);
            assert_eq!(revised["metadata"]["annotations"][AUTO_UPDATE_ANNOTATION], yes, "already a true value");
        }
        // "false": the operator's version stays.
        for no in ["false", "FALSE", "0", "f"] {
            edited["metadata"]["annotations"][AUTO_UPDATE_ANNOTATION] = json!(no);
            assert_eq!(ensure(&wanted, Some(&edited), Strategy::Suggested), Ensure::LeaveAlone);
        }
    }

    #[test]
    fn without_a_usable_annotation_only_unedited_objects_are_updated() {
        let wanted = find(&suggested_flow_schemas(), "kube-scheduler");
        let mut unedited = stored(&wanted, 1);
        unedited["metadata"]["annotations"] = json!({});
        unedited["spec"]["matchingPrecedence"] = json!(700); // an older release's spec
        let Ensure::Update(revised) = ensure(&wanted, Some(&unedited), Strategy::Suggested) else {
            panic!("update expected")
        };
        assert_eq!(revised["spec"], wanted["spec"]);
        assert_eq!(revised["metadata"]["annotations"][AUTO_UPDATE_ANNOTATION], "true");
        // Edited (generation > 1): the spec stays, the decision is recorded as "false".
        let mut edited = unedited.clone();
        edited["metadata"]["generation"] = json!(2);
        edited["metadata"]["annotations"] = json!({AUTO_UPDATE_ANNOTATION: "maybe"});
        let Ensure::Update(revised) = ensure(&wanted, Some(&edited), Strategy::Suggested) else {
            panic!("update expected")
        };
        assert_eq!(revised["spec"]["matchingPrecedence"], 700);
        assert_eq!(revised["metadata"]["annotations"][AUTO_UPDATE_ANNOTATION], "false");
        // No metadata.annotations at all works the same.
        let mut bare = stored(&wanted, 2);
        bare["metadata"].as_object_mut().map(|m| m.remove("annotations"));
        let Ensure::Update(revised) = ensure(&wanted, Some(&bare), Strategy::Suggested) else {
            panic!("update expected")
        };
        assert_eq!(revised["metadata"]["annotations"], json!({AUTO_UPDATE_ANNOTATION: "false"}));
        assert_eq!(revised["spec"], wanted["spec"], "same spec, only the annotation written");
    }

    #[test]
    fn abandoned_bootstrap_objects_are_removed_operators_objects_never() {
        let wanted = [mandatory_flow_schemas(), suggested_flow_schemas()].concat();
        let object = |name: &str, annotation: Option<&str>| {
            let mut o = json!({"apiVersion": API_VERSION, "kind": "FlowSchema", "metadata": {"name": name}});
            if let Some(a) = annotation {
                o["metadata"]["annotations"] = json!({AUTO_UPDATE_ANNOTATION: a});
            }
            o
        };
        assert!(should_remove(&object("old-suggestion", Some("true")), &wanted));
        assert!(!should_remove(&object("old-suggestion", Some("false")), &wanted));
        assert!(!should_remove(&object("old-suggestion", Some("nope")), &wanted));
        assert!(!should_remove(&object("my-schema", None), &wanted));
        assert!(!should_remove(&object("global-default", Some("true")), &wanted));
        assert!(!should_remove(&object("exempt", Some("true")), &wanted));
        // With 1.30's own objects nothing is abandoned.
        assert!(wanted.iter().all(|o| !should_remove(o, &wanted)));
    }
}
