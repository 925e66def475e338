//! The admissionregistration kinds through their definitions: defaults, then validation, as the
//! registry runs them, with kube's field paths and messages.

use serde_json::{Value, json};

use crate::test_kinds::def;
use apimachinery::catalogue::ResourceDef;
use apimachinery::error::Cause;

const GROUP: &str = "admissionregistration.k8s.io";

fn d(resource: &str) -> &'static ResourceDef {
    def(GROUP, resource)
}

/// What the registry does before validating a create.
fn create(def: &ResourceDef, mut obj: Value) -> Vec<Cause> {
    def.apply_defaults(&mut obj);
    def.prepare_for_create(&mut obj);
    def.validate(&obj)
}

/// A stored object, as a create left it (not validated: old objects may predate a rule).
fn stored(def: &ResourceDef, mut obj: Value) -> Value {
    def.apply_defaults(&mut obj);
    obj["metadata"]["uid"] = json!("uid-1");
    obj["metadata"]["resourceVersion"] = json!("5");
    obj["metadata"]["generation"] = json!(1);
    obj["metadata"]["creationTimestamp"] = json!("2024-05-01T00:00:00Z");
    def.prepare_for_create(&mut obj);
    obj
}

fn update(def: &ResourceDef, mut new: Value, old: &Value) -> (Value, Vec<Cause>) {
    def.apply_defaults(&mut new);
    def.prepare_for_update(&mut new, old);
    let causes = def.validate_update(&new, old);
    (new, causes)
}

fn pairs(causes: &[Cause]) -> Vec<(&str, &str)> {
    causes.iter().map(|c| (c.field.as_str(), c.message.as_str())).collect()
}

fn hook(name: &str) -> Value {
    json!({
        "name": name,
        "clientConfig": {"service": {"name": "svc", "namespace": "ns"}},
        "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}],
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
    })
}

fn config(kind: &str, hooks: Value) -> Value {
    json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind, "metadata": {"name": "cfg"}, "webhooks": hooks})
}

fn mutating(hooks: Value) -> Value {
    config("MutatingWebhookConfiguration", hooks)
}

/// The causes of a mutating configuration whose only webhook is `hook("a.b.c")` changed by `f`.
fn hook_causes(f: impl Fn(&mut Value)) -> Vec<(String, String)> {
    let mut h = hook("a.b.c");
    f(&mut h);
    create(d("mutatingwebhookconfigurations"), mutating(json!([h]))).into_iter().map(|c| (c.field, c.message)).collect()
}

fn one(field: &str, message: &str) -> Vec<(String, String)> {
    vec![(field.to_string(), message.to_string())]
}

fn policy(spec: Value) -> Value {
    json!({"metadata": {"name": "demo"}, "spec": spec})
}

fn policy_spec() -> Value {
    json!({
        "matchConstraints": {"resourceRules": [{"operations": ["CREATE"], "apiGroups": ["apps"], "apiVersions": ["v1"], "resources": ["deployments"]}]},
        "validations": [{"expression": "object.spec.replicas <= 5"}],
    })
}

fn policy_causes(f: impl Fn(&mut Value)) -> Vec<(String, String)> {
    let mut spec = policy_spec();
    f(&mut spec);
    create(d("validatingadmissionpolicies"), policy(spec)).into_iter().map(|c| (c.field, c.message)).collect()
}

fn binding_causes(spec: Value) -> Vec<(String, String)> {
    create(d("validatingadmissionpolicybindings"), json!({"metadata": {"name": "b"}, "spec": spec}))
        .into_iter()
        .map(|c| (c.field, c.message))
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Webhook configurations.

#[test]
fn valid_webhook_configurations_are_accepted() {
    let url_hook = json!({"name": "u.example.com", "clientConfig": {"url": "https://hooks.example.com/validate"},
                          "sideEffects": "NoneOnDryRun", "admissionReviewVersions": ["v1beta1", "v1"],
                          "matchConditions": [{"name": "not-kube-system", "expression": "request.namespace != 'kube-system'"}]});
    let c = create(d("mutatingwebhookconfigurations"), mutating(json!([hook("a.example.com"), url_hook.clone()])));
    assert!(c.is_empty(), "{c:?}");
    let v = config("ValidatingWebhookConfiguration", json!([hook("a.example.com"), url_hook]));
    let c = create(d("validatingwebhookconfigurations"), v);
    assert!(c.is_empty(), "{c:?}");
    let c = create(d("mutatingwebhookconfigurations"), mutating(json!([])));
    assert!(c.is_empty(), "no webhooks at all is fine: {c:?}");
}

#[test]
fn webhook_names_are_three_segment_subdomains_and_unique() {
    assert_eq!(
        hook_causes(|h| h["name"] = json!("a.b")),
        one(
            "webhooks[0].name",
            "Invalid value: \"a.b\": should be a domain with at least three segments separated by dots"
        )
    );
    assert_eq!(hook_causes(|h| h["name"] = json!("")), one("webhooks[0].name", "Required value"));
    let c = hook_causes(|h| h["name"] = json!("A.b.c"));
    assert_eq!(c.len(), 1);
    assert!(c[0].1.starts_with("Invalid value: \"A.b.c\": a lowercase RFC 1123 subdomain must consist of"), "{c:?}");
    let c = create(d("mutatingwebhookconfigurations"), mutating(json!([hook("a.b.c"), hook("a.b.c")])));
    assert_eq!(pairs(&c), vec![("webhooks[1].name", "Duplicate value: \"a.b.c\"")]);
    assert_eq!(c[0].reason, "FieldValueDuplicate");
}

#[test]
fn webhook_rules_follow_kubes_wildcard_rules() {
    let rule = |r: Value| move |h: &mut Value| h["rules"] = json!([r.clone()]);
    assert_eq!(
        hook_causes(rule(json!({"apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}))),
        one("webhooks[0].rules[0].operations", "Required value")
    );
    assert_eq!(
        hook_causes(rule(json!({"operations": ["*", "CREATE", "PATCH"], "apiGroups": ["*", "apps"], "apiVersions": ["*", ""],
                                "resources": ["pods"], "scope": "Everywhere"}))),
        vec![
            (
                "webhooks[0].rules[0].operations".to_string(),
                "Invalid value: []admissionregistration.OperationType{\"*\", \"CREATE\", \"PATCH\"}: if '*' is present, must not specify other operations".to_string()
            ),
            (
                "webhooks[0].rules[0].operations[2]".to_string(),
                "Unsupported value: \"PATCH\": supported values: \"*\", \"CONNECT\", \"CREATE\", \"DELETE\", \"UPDATE\"".to_string()
            ),
            (
                "webhooks[0].rules[0].apiGroups".to_string(),
                "Invalid value: []string{\"*\", \"apps\"}: if '*' is present, must not specify other API groups".to_string()
            ),
            (
                "webhooks[0].rules[0].apiVersions".to_string(),
                "Invalid value: []string{\"*\", \"\"}: if '*' is present, must not specify other API versions".to_string()
            ),
            ("webhooks[0].rules[0].apiVersions[1]".to_string(), "Required value".to_string()),
            (
                "webhooks[0].rules[0].scope".to_string(),
                "Unsupported value: \"Everywhere\": supported values: \"*\", \"Cluster\", \"Namespaced\"".to_string()
            ),
        ]
    );
    let resources = |r: Value| {
        hook_causes(move |h| h["rules"][0]["resources"] = r.clone())
            .into_iter()
            .map(|(f, m)| format!("{f}: {m}"))
            .collect::<Vec<_>>()
    };
    assert_eq!(resources(json!([])), vec!["webhooks[0].rules[0].resources: Required value"]);
    assert_eq!(
        resources(json!(["*/*", "pods"])),
        vec![
            "webhooks[0].rules[0].resources: Invalid value: []string{\"*/*\", \"pods\"}: if '*/*' is present, must not specify other resources"
        ]
    );
    assert_eq!(
        resources(json!(["*", "pods"])),
        vec![
            "webhooks[0].rules[0].resources: Invalid value: []string{\"*\", \"pods\"}: if '*' is present, must not specify other resources without subresources"
        ]
    );
    assert!(resources(json!(["pods", "*"])).is_empty(), "kube only looks at the last plain resource");
    assert!(resources(json!(["*", "pods/status"])).is_empty());
    assert_eq!(
        resources(json!(["pods/*", "pods/status", "*/scale", "deployments/scale", ""])),
        vec![
            "webhooks[0].rules[0].resources[1]: Invalid value: \"pods/status\": if 'pods/*' is present, must not specify pods/status",
            "webhooks[0].rules[0].resources[3]: Invalid value: \"deployments/scale\": if '*/scale' is present, must not specify deployments/scale",
            "webhooks[0].rules[0].resources[4]: Required value",
        ]
    );
}

#[test]
fn webhook_policies_side_effects_and_timeouts() {
    assert_eq!(
        hook_causes(|h| {
            h["failurePolicy"] = json!("Maybe");
            h["matchPolicy"] = json!("Fuzzy");
            h["timeoutSeconds"] = json!(31);
            h["reinvocationPolicy"] = json!("Always");
        }),
        vec![
            (
                "webhooks[0].failurePolicy".to_string(),
                "Unsupported value: \"Maybe\": supported values: \"Fail\", \"Ignore\"".to_string()
            ),
            (
                "webhooks[0].matchPolicy".to_string(),
                "Unsupported value: \"Fuzzy\": supported values: \"Equivalent\", \"Exact\"".to_string()
            ),
            (
                "webhooks[0].timeoutSeconds".to_string(),
                "Invalid value: 31: the timeout value must be between 1 and 30 seconds".to_string()
            ),
            (
                "webhooks[0].reinvocationPolicy".to_string(),
                "Unsupported value: \"Always\": supported values: \"IfNeeded\", \"Never\"".to_string()
            ),
        ]
    );
    assert_eq!(
        hook_causes(|h| h["timeoutSeconds"] = json!(0)),
        one("webhooks[0].timeoutSeconds", "Invalid value: 0: the timeout value must be between 1 and 30 seconds")
    );
    assert_eq!(
        hook_causes(|h| {
            h.as_object_mut().unwrap().remove("sideEffects");
        }),
        one("webhooks[0].sideEffects", "Required value: must specify one of None, NoneOnDryRun")
    );
    assert_eq!(
        hook_causes(|h| h["sideEffects"] = json!("Some")),
        one("webhooks[0].sideEffects", "Unsupported value: \"Some\": supported values: \"None\", \"NoneOnDryRun\"")
    );
}

#[test]
fn webhook_client_config_is_a_url_or_a_service() {
    let cc = |c: Value| hook_causes(move |h| h["clientConfig"] = c.clone());
    let both = json!({"url": "https://a.example.com", "service": {"name": "s", "namespace": "n"}});
    assert_eq!(cc(both), one("webhooks[0].clientConfig", "Required value: exactly one of url or service is required"));
    assert_eq!(
        cc(json!({})),
        one("webhooks[0].clientConfig", "Required value: exactly one of url or service is required")
    );
    assert_eq!(
        cc(json!({"url": "http://a.example.com/x?y=1"})),
        vec![
            (
                "webhooks[0].clientConfig.url".to_string(),
                "Invalid value: \"http\": 'https' is the only allowed URL scheme; desired format: https://host[/path]"
                    .to_string()
            ),
            (
                "webhooks[0].clientConfig.url".to_string(),
                "Invalid value: \"y=1\": query parameters are not permitted in the URL".to_string()
            ),
        ]
    );
    // kube's call swaps the service's name and namespace: a missing name reads as a missing
    // namespace.
    assert_eq!(
        cc(json!({"service": {"namespace": "n", "path": "/ok", "port": 70000}})),
        vec![
            (
                "webhooks[0].clientConfig.service.namespace".to_string(),
                "Required value: service namespace is required".to_string()
            ),
            (
                "webhooks[0].clientConfig.service.port".to_string(),
                "Invalid value: 70000: port is not valid: must be between 1 and 65535, inclusive".to_string()
            ),
        ]
    );
    assert_eq!(
        cc(json!({"service": {"name": "s"}})),
        one("webhooks[0].clientConfig.service.name", "Required value: service name is required")
    );
    assert_eq!(
        cc(json!({"service": {"name": "s", "namespace": "n", "path": "hook"}})),
        one("webhooks[0].clientConfig.service.path", "Invalid value: \"hook\": must start with a '/'")
    );
}

#[test]
fn webhook_review_versions() {
    let versions = |v: Value| hook_causes(move |h| h["admissionReviewVersions"] = v.clone());
    assert_eq!(
        versions(json!([])),
        one("webhooks[0].admissionReviewVersions", "Required value: must specify one of v1, v1beta1")
    );
    assert_eq!(
        versions(json!(["v2"])),
        one(
            "webhooks[0].admissionReviewVersions",
            "Invalid value: []string{\"v2\"}: must include at least one of v1, v1beta1"
        )
    );
    let c = versions(json!(["v1", "v1", "V1"]));
    assert_eq!(
        c[0],
        ("webhooks[0].admissionReviewVersions[1]".into(), "Invalid value: \"v1\": duplicate version".into())
    );
    assert_eq!(c[1].0, "webhooks[0].admissionReviewVersions[2]");
    assert!(c[1].1.starts_with("Invalid value: \"V1\": a DNS-1035 label must consist of"), "{c:?}");
}

#[test]
fn webhook_selectors_and_match_conditions() {
    assert_eq!(
        hook_causes(|h| h["objectSelector"] = json!({"matchExpressions": [{"key": "a", "operator": "In"}]})),
        one(
            "webhooks[0].objectSelector.matchExpressions[0].values",
            "Required value: must be specified when `operator` is 'In' or 'NotIn'"
        )
    );
    let conditions = |c: Value| hook_causes(move |h| h["matchConditions"] = c.clone());
    assert_eq!(
        conditions(json!([{"name": "a", "expression": "  "}, {"name": "", "expression": "true"},
                          {"name": "a", "expression": "true"}, {"name": "b c", "expression": "true"}])),
        vec![
            ("webhooks[0].matchConditions[0].expression".to_string(), "Required value".to_string()),
            ("webhooks[0].matchConditions[1].name".to_string(), "Required value".to_string()),
            ("webhooks[0].matchConditions[2].name".to_string(), "Duplicate value: \"a\"".to_string()),
            (
                "webhooks[0].matchConditions[3].name".to_string(),
                "Invalid value: \"b c\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')".to_string()
            ),
        ]
    );
    let many: Vec<Value> = (0..65).map(|i| json!({"name": format!("c{i}"), "expression": "true"})).collect();
    let c = conditions(Value::Array(many));
    assert_eq!(c, one("webhooks[0].matchConditions", "Too many: 65: must have at most 64 items"));
}

#[test]
fn webhook_updates_keep_what_the_stored_object_had() {
    let defs = d("validatingwebhookconfigurations");
    // Stored by an older server: duplicate names, an unknown side effect, no known review
    // version, and a label value the strict rule refuses.
    let mut legacy = hook("a.b.c");
    legacy["sideEffects"] = json!("Unknown");
    legacy["admissionReviewVersions"] = json!(["v0"]);
    legacy["namespaceSelector"] =
        json!({"matchExpressions": [{"key": "k", "operator": "In", "values": ["bad value"]}]});
    let old = stored(defs, config("ValidatingWebhookConfiguration", json!([legacy.clone(), hook("a.b.c")])));
    let mut changed = legacy;
    changed["timeoutSeconds"] = json!(5);
    let new = config("ValidatingWebhookConfiguration", json!([changed, hook("a.b.c")]));
    let (new, c) = update(defs, new, &old);
    assert!(c.is_empty(), "{c:?}");
    assert_eq!(new["metadata"]["generation"], 2, "a webhook changed");
    // The same object is refused as a create.
    let fresh =
        create(defs, config("ValidatingWebhookConfiguration", json!([old["webhooks"][0].clone(), hook("a.b.c")])));
    let fields: Vec<&str> = fresh.iter().map(|c| c.field.as_str()).collect();
    assert_eq!(
        fields,
        vec![
            "webhooks[0].sideEffects",
            "webhooks[0].namespaceSelector.matchExpressions[0].values[0]",
            "webhooks[0].admissionReviewVersions",
            "webhooks[1].name"
        ]
    );
    // Unchanged match conditions are not rechecked; new ones are.
    let old = stored(defs, config("ValidatingWebhookConfiguration", json!([hook("a.b.c")])));
    let (same, c) = update(defs, old.clone(), &old);
    assert!(c.is_empty(), "{c:?}");
    assert_eq!(same["metadata"]["generation"], 1, "nothing changed");
    let mut with_bad = hook("a.b.c");
    with_bad["matchConditions"] = json!([{"name": "x", "expression": ""}]);
    let (_, c) = update(defs, config("ValidatingWebhookConfiguration", json!([with_bad])), &old);
    assert_eq!(pairs(&c), vec![("webhooks[0].matchConditions[0].expression", "Required value")]);
}

// ---------------------------------------------------------------------------------------------
// ValidatingAdmissionPolicy.

#[test]
fn valid_policy_is_accepted_and_starts_with_an_empty_status() {
    let mut p = policy(json!({
        "paramKind": {"apiVersion": "rules.example.com/v1", "kind": "ReplicaLimit"},
        "matchConstraints": {"resourceRules": [{"operations": ["CREATE", "UPDATE"], "apiGroups": ["apps"], "apiVersions": ["v1"],
                              "resources": ["deployments"], "resourceNames": ["web"]}]},
        "matchConditions": [{"name": "exclude-leases", "expression": "!(request.resource.group == 'coordination.k8s.io')"}],
        "variables": [{"name": "replicas", "expression": "object.spec.replicas"}],
        "validations": [{"expression": "variables.replicas <= params.maxReplicas", "messageExpression": "'too many'",
                         "reason": "Invalid"}],
        "auditAnnotations": [{"key": "high-replica-count", "valueExpression": "'count: ' + string(variables.replicas)"}],
    }));
    p["status"] = json!({"observedGeneration": 3});
    let defs = d("validatingadmissionpolicies");
    let c = create(defs, p.clone());
    assert!(c.is_empty(), "{c:?}");
    defs.apply_defaults(&mut p);
    defs.prepare_for_create(&mut p);
    assert_eq!(p["status"], json!({}));
}

#[test]
fn policy_needs_rules_and_validations() {
    let c = create(d("validatingadmissionpolicies"), policy(json!({})));
    assert_eq!(
        pairs(&c),
        vec![
            ("spec.matchConstraints", "Required value"),
            ("spec.validations", "Required value: validations or auditAnnotations must contain at least one item"),
            ("spec.auditAnnotations", "Required value: validations or auditAnnotations must contain at least one item"),
        ]
    );
    assert_eq!(
        policy_causes(|s| {
            s["matchConstraints"]["resourceRules"] = json!([]);
            s["failurePolicy"] = json!("Never");
        }),
        vec![
            (
                "spec.failurePolicy".to_string(),
                "Unsupported value: \"Never\": supported values: \"Fail\", \"Ignore\"".to_string()
            ),
            ("spec.matchConstraints.resourceRules".to_string(), "Required value".to_string()),
        ]
    );
    assert_eq!(
        policy_causes(|s| s["matchConstraints"]["resourceRules"][0]["resourceNames"] = json!(["a/b", "x", "x"])),
        vec![
            (
                "spec.matchConstraints.resourceRules[0].resourceNames[0]".to_string(),
                "Invalid value: \"a/b\": may not contain '/'".to_string()
            ),
            (
                "spec.matchConstraints.resourceRules[0].resourceNames[2]".to_string(),
                "Duplicate value: \"x\"".to_string()
            ),
        ]
    );
}

#[test]
fn policy_param_kind() {
    let pk = |v: Value| policy_causes(move |s| s["paramKind"] = v.clone());
    assert_eq!(
        pk(json!({})),
        vec![
            ("spec.paramKind.apiVersion".to_string(), "Required value".to_string()),
            ("spec.paramKind.kind".to_string(), "Required value".to_string()),
        ]
    );
    assert_eq!(
        pk(json!({"apiVersion": "a/b/c", "kind": "K"})),
        one("spec.paramKind.apiVersion", "Invalid value: \"a/b/c\": unexpected GroupVersion string: a/b/c")
    );
    assert_eq!(
        pk(json!({"apiVersion": "example.com/", "kind": "K"})),
        one("spec.paramKind.apiVersion", "Invalid value: \"example.com/\": version must be specified")
    );
    let c = pk(json!({"apiVersion": "v1", "kind": "Config_Map"}));
    assert_eq!(c.len(), 1);
    assert!(
        c[0].1.starts_with(
            "Invalid value: \"Config_Map\": may have mixed case, but should otherwise match: a DNS-1035 label"
        ),
        "{c:?}"
    );
}

#[test]
fn policy_variables_validations_and_audit_annotations() {
    assert_eq!(
        policy_causes(|s| s["variables"] =
            json!([{"name": "1x", "expression": "1"}, {"name": "in", "expression": " "}, {"name": ""}])),
        vec![
            (
                "spec.variables[0].name".to_string(),
                "Invalid value: \"1x\": name is not a valid CEL identifier".to_string()
            ),
            (
                "spec.variables[1].name".to_string(),
                "Invalid value: \"in\": name is not a valid CEL identifier".to_string()
            ),
            ("spec.variables[1].expression".to_string(), "Required value: expression is not specified".to_string()),
            ("spec.variables[2].name".to_string(), "Required value: name is not specified".to_string()),
            ("spec.variables[2].expression".to_string(), "Required value: expression is not specified".to_string()),
        ]
    );
    assert_eq!(
        policy_causes(|s| s["validations"] = json!([
            {"expression": "", "messageExpression": "  ", "message": " "},
            {"expression": "true", "message": "two\nlines", "reason": "Conflict"},
        ])),
        vec![
            ("spec.validations[0].expression".to_string(), "Required value: expression is not specified".to_string()),
            (
                "spec.validations[0].messageExpression".to_string(),
                "Invalid value: \"  \": must be non-empty if specified".to_string()
            ),
            (
                "spec.validations[0].message".to_string(),
                "Invalid value: \" \": message must be non-empty if specified".to_string()
            ),
            (
                "spec.validations[1].message".to_string(),
                "Invalid value: \"two\\nlines\": message must not contain line breaks".to_string()
            ),
            (
                "spec.validations[1].reason".to_string(),
                "Unsupported value: \"Conflict\": supported values: \"Forbidden\", \"Invalid\", \"RequestEntityTooLarge\"".to_string()
            ),
        ]
    );
    assert_eq!(
        policy_causes(|s| s["auditAnnotations"] = json!([
            {"key": "ok", "valueExpression": "'x'"},
            {"key": "ok", "valueExpression": ""},
            {"key": "bad key", "valueExpression": "x".repeat(5 * 1024 + 1)},
        ])),
        vec![
            ("spec.auditAnnotations[1].valueExpression".to_string(), "Required value: valueExpression is not specified".to_string()),
            ("spec.auditAnnotations[1].key".to_string(), "Duplicate value: \"ok\"".to_string()),
            (
                "spec.auditAnnotations[2].key".to_string(),
                "Invalid value: \"demo/bad key\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')".to_string()
            ),
            (
                "spec.auditAnnotations[2].valueExpression".to_string(),
                "Required value: must not exceed 5120 bytes in length".to_string()
            ),
        ]
    );
    let many: Vec<Value> = (0..21).map(|i| json!({"key": format!("k{i}"), "valueExpression": "'v'"})).collect();
    let c = policy_causes(move |s| s["auditAnnotations"] = Value::Array(many.clone()));
    assert_eq!(c.len(), 1);
    assert_eq!(c[0].0, "spec.auditAnnotations");
    assert!(c[0].1.ends_with(": must not have more than 20 auditAnnotations"), "{c:?}");
}

#[test]
fn policy_status_has_its_own_rules_and_spec_changes_count() {
    let defs = d("validatingadmissionpolicies");
    let old = stored(defs, policy(policy_spec()));
    let mut new = old.clone();
    new["status"] = json!({
        "typeChecking": {"expressionWarnings": [{"fieldRef": " ", "warning": ""}]},
        "conditions": [{"type": "Ready", "status": "Maybe", "reason": "1bad", "lastTransitionTime": "2024-05-01T00:00:00Z"},
                       {"type": "Ready", "status": "True"}],
    });
    let c = defs.validate_status_update(&new, &old);
    assert_eq!(
        pairs(&c),
        vec![
            ("status.typeChecking.expressionWarnings[0].warning", "Required value"),
            ("status.typeChecking.expressionWarnings[0].fieldRef", "Required value"),
            (
                "status.conditions[0].status",
                "Unsupported value: \"Maybe\": supported values: \"False\", \"True\", \"Unknown\""
            ),
            (
                "status.conditions[0].reason",
                "Invalid value: \"1bad\": a condition reason must start with alphabetic character, optionally followed by a string of alphanumeric characters or '_,:', and must end with an alphanumeric character or '_' (e.g. 'my_name',  or 'MY_NAME',  or 'MyName',  or 'ReasonA,ReasonB',  or 'ReasonA:ReasonB', regex used for validation is '[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?')"
            ),
            ("status.conditions[1].type", "Duplicate value: \"Ready\""),
            ("status.conditions[1].lastTransitionTime", "Required value: must be set"),
            ("status.conditions[1].reason", "Required value: must be set"),
        ]
    );
    // The main resource keeps the status and counts spec changes.
    let mut spec_change = new.clone();
    spec_change["spec"]["failurePolicy"] = json!("Ignore");
    let (updated, c) = update(defs, spec_change, &old);
    assert!(c.is_empty(), "{c:?}");
    assert_eq!(updated["status"], json!({}));
    assert_eq!(updated["metadata"]["generation"], 2);
}

// ---------------------------------------------------------------------------------------------
// ValidatingAdmissionPolicyBinding.

#[test]
fn valid_bindings_are_accepted() {
    for param in [
        json!({"name": "limits", "namespace": "ns", "parameterNotFoundAction": "Deny"}),
        json!({"selector": {"matchLabels": {"env": "test"}}, "parameterNotFoundAction": "Allow"}),
    ] {
        let c = binding_causes(json!({"policyName": "demo", "validationActions": ["Deny", "Audit"], "paramRef": param,
                                      "matchResources": {"namespaceSelector": {"matchLabels": {"env": "test"}}}}));
        assert!(c.is_empty(), "{c:?}");
    }
}

#[test]
fn binding_rules() {
    assert_eq!(
        binding_causes(json!({})),
        vec![
            ("spec.policyName".to_string(), "Required value".to_string()),
            (
                "spec.validationActions".to_string(),
                "Required value: at least one validation action is required".to_string()
            ),
        ]
    );
    assert_eq!(
        binding_causes(json!({"policyName": "p", "validationActions": ["Deny", "Warn", "Deny", "Log"]})),
        vec![
            ("spec.validationActions[2]".to_string(), "Duplicate value: \"Deny\"".to_string()),
            (
                "spec.validationActions[3]".to_string(),
                "Unsupported value: \"Log\": supported values: \"Audit\", \"Deny\", \"Warn\"".to_string()
            ),
            (
                "spec.validationActions".to_string(),
                "Invalid value: []admissionregistration.ValidationAction{\"Deny\", \"Warn\", \"Deny\", \"Log\"}: must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)".to_string()
            ),
        ]
    );
    assert_eq!(
        binding_causes(json!({"policyName": "p", "validationActions": ["Warn"],
                              "paramRef": {"name": "x", "selector": {}, "parameterNotFoundAction": "Ignore"}})),
        vec![
            ("spec.paramRef.name".to_string(), "Forbidden: name and selector are mutually exclusive".to_string()),
            ("spec.paramRef.selector".to_string(), "Forbidden: name and selector are mutually exclusive".to_string()),
            (
                "spec.paramRef.parameterNotFoundAction".to_string(),
                "Unsupported value: \"Ignore\": supported values: \"Deny\", \"Allow\"".to_string()
            ),
        ]
    );
    assert_eq!(
        binding_causes(json!({"policyName": "p", "validationActions": ["Audit"], "paramRef": {}})),
        vec![
            ("spec.paramRef".to_string(), "Required value: one of name or selector must be specified".to_string()),
            ("spec.paramRef.parameterNotFoundAction".to_string(), "Required value".to_string()),
        ]
    );
    // kube's path for the match resources is spelled `matchResouces`.
    assert_eq!(
        binding_causes(json!({"policyName": "p", "validationActions": ["Audit"],
                              "matchResources": {"matchPolicy": "Nope", "resourceRules": [{"operations": ["*"]}]}})),
        vec![
            (
                "spec.matchResouces.matchPolicy".to_string(),
                "Unsupported value: \"Nope\": supported values: \"Equivalent\", \"Exact\"".to_string()
            ),
            ("spec.matchResouces.resourceRules[0].apiGroups".to_string(), "Required value".to_string()),
            ("spec.matchResouces.resourceRules[0].apiVersions".to_string(), "Required value".to_string()),
            ("spec.matchResouces.resourceRules[0].resources".to_string(), "Required value".to_string()),
        ]
    );
}

#[test]
fn binding_generation_counts_spec_changes() {
    let defs = d("validatingadmissionpolicybindings");
    let old =
        stored(defs, json!({"metadata": {"name": "b"}, "spec": {"policyName": "p", "validationActions": ["Deny"]}}));
    let mut new = old.clone();
    new["metadata"]["labels"] = json!({"a": "b"});
    let (same, c) = update(defs, new.clone(), &old);
    assert!(c.is_empty(), "{c:?}");
    assert_eq!(same["metadata"]["generation"], 1, "a label is not the spec");
    new["spec"]["validationActions"] = json!(["Warn"]);
    let (changed, _) = update(defs, new, &old);
    assert_eq!(changed["metadata"]["generation"], 2);
}
