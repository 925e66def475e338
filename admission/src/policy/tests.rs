//! The plugin over objects held in memory: what a client sees (the refusal's message, reason
//! and code, warnings, audit annotations) for each way a policy applies.

use std::collections::BTreeMap;
use std::sync::Mutex;

use apimachinery::lookup::KindResource;
use apimachinery::messages::{AdmissionPhase, Target};
use apimachinery::request::UserInfo;
use serde_json::json;

use super::*;

/// Objects by (resource, namespace, name); a resourceVersion bumped on every change, which is
/// also the change count the source watches, and the lists the source made.
#[derive(Default)]
struct Objects {
    objects: Mutex<BTreeMap<(String, String, String), Value>>,
    version: std::sync::atomic::AtomicU64,
    lists: std::sync::atomic::AtomicUsize,
}

impl Objects {
    fn put(&self, resource: &str, mut object: Value) {
        let v = self.version.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
        object["metadata"]["resourceVersion"] = json!(v.to_string());
        let key = (resource.to_string(), object.namespace().to_string(), object.name().to_string());
        self.objects.lock().unwrap().insert(key, object);
    }
}

#[async_trait]
impl ObjectLookup for Objects {
    async fn get(&self, _: &str, resource: &str, namespace: &str, name: &str) -> Result<Option<Value>, ApiError> {
        let key = (resource.to_string(), namespace.to_string(), name.to_string());
        Ok(self.objects.lock().unwrap().get(&key).cloned())
    }

    async fn list(&self, _: &str, resource: &str, namespace: &str, _: &str) -> Result<Vec<Value>, ApiError> {
        self.lists.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let objects = self.objects.lock().unwrap();
        Ok(objects
            .iter()
            .filter(|((r, ns, _), _)| r == resource && (namespace.is_empty() || ns == namespace))
            .map(|(_, o)| o.clone())
            .collect())
    }

    fn changes(&self, _: &str, _: &str) -> Option<u64> {
        Some(self.version.load(std::sync::atomic::Ordering::Relaxed))
    }

    fn resource_for_kind(&self, group: &str, version: &str, kind: &str) -> Option<KindResource> {
        (group.is_empty() && version == "v1" && kind == "ConfigMap")
            .then(|| KindResource { resource: "configmaps".into(), namespaced: true })
    }
}

struct Fixture {
    objects: Arc<Objects>,
    plugin: ValidatingAdmissionPolicy,
}

fn fixture() -> Fixture {
    let objects = Arc::new(Objects::default());
    objects.put("namespaces", json!({"metadata": {"name": "team", "labels": {"env": "prod"}}}));
    let plugin = ValidatingAdmissionPolicy::new(
        objects.clone(),
        Arc::new(kinds::catalogue()),
        Arc::new(crate::testing::Grants { allowed: vec!["alice get /healthz".into()], ..Default::default() }),
    );
    Fixture { objects, plugin }
}

const DEPLOYMENTS: &str = r#"{"operations": ["CREATE", "UPDATE"], "apiGroups": ["apps"], "apiVersions": ["v1"], "resources": ["deployments"]}"#;

impl Fixture {
    /// A policy on deployments with `spec` merged over the defaults.
    fn policy(&self, name: &str, spec: Value) {
        let mut s = json!({"failurePolicy": "Fail",
            "matchConstraints": {"resourceRules": [serde_json::from_str::<Value>(DEPLOYMENTS).unwrap()],
                "namespaceSelector": {}, "objectSelector": {}, "matchPolicy": "Equivalent"}});
        for (k, v) in spec.as_object().unwrap() {
            s[k] = v.clone();
        }
        self.objects.put("validatingadmissionpolicies", json!({"metadata": {"name": name}, "spec": s}));
    }

    fn binding(&self, name: &str, policy: &str, spec: Value) {
        let mut s = json!({"policyName": policy, "validationActions": ["Deny"]});
        for (k, v) in spec.as_object().unwrap() {
            s[k] = v.clone();
        }
        self.objects.put("validatingadmissionpolicybindings", json!({"metadata": {"name": name}, "spec": s}));
    }

    fn limits(&self, name: &str, max: &str, labels: Value) {
        self.objects.put(
            "configmaps",
            json!({"metadata": {"name": name, "namespace": "team", "labels": labels}, "data": {"maxReplicas": max}}),
        );
    }

    async fn admit(&self, request: &Admit) -> (Result<(), ApiError>, Review) {
        let mut review = Review::default();
        let result = self.plugin.validate(request, &request.object, &mut review).await;
        (result, review)
    }
}

fn deployment(name: &str, replicas: i64) -> Admit {
    Admit {
        phase: AdmissionPhase::Validating,
        operation: Operation::Create,
        target: Target {
            group: "apps".into(),
            version: "v1".into(),
            resource: "deployments".into(),
            namespace: "team".into(),
            name: name.into(),
            ..Target::default()
        },
        user: UserInfo { name: "alice".into(), groups: vec!["dev".into()], ..Default::default() },
        object: json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": "team", "labels": {"app": name}},
            "spec": {"replicas": replicas}}),
        old_object: None,
        dry_run: false,
        options: json!({"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1"}),
    }
}

fn max_replicas_policy(f: &Fixture) {
    f.policy(
        "max-replicas",
        json!({"paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
            "validations": [{"expression": "object.spec.replicas <= int(params.data.maxReplicas)",
                "messageExpression": "'replicas must be at most ' + params.data.maxReplicas"}]}),
    );
}

#[tokio::test]
async fn a_validation_over_its_param_denies_with_kubes_message_and_code() {
    let f = fixture();
    max_replicas_policy(&f);
    f.limits("limits", "3", json!({}));
    f.binding(
        "max-replicas-binding",
        "max-replicas",
        json!({"paramRef": {"name": "limits", "parameterNotFoundAction": "Deny"}}),
    );
    assert!(f.admit(&deployment("small", 2)).await.0.is_ok());
    let e = f.admit(&deployment("big", 5)).await.0.unwrap_err();
    assert_eq!(
        (e.code, e.reason, e.message.as_str()),
        (
            422,
            Reason::Invalid,
            "deployments.apps \"big\" is forbidden: ValidatingAdmissionPolicy 'max-replicas' with binding \
             'max-replicas-binding' denied request: replicas must be at most 3"
        )
    );
    assert_eq!(
        (e.group.as_deref(), e.kind.as_deref(), e.name.as_deref()),
        (Some("apps"), Some("deployments"), Some("big"))
    );
    assert_eq!(e.causes.len(), 1);
}

#[tokio::test]
async fn policies_are_listed_again_only_after_a_change() {
    let f = fixture();
    let lists = || f.objects.lists.load(std::sync::atomic::Ordering::Relaxed);
    max_replicas_policy(&f);
    f.limits("limits", "3", json!({}));
    f.binding("b", "max-replicas", json!({"paramRef": {"name": "limits"}}));
    assert!(f.admit(&deployment("big", 5)).await.0.is_err());
    let after_first = lists();
    assert!(f.admit(&deployment("big", 5)).await.0.is_err());
    assert!(f.admit(&deployment("small", 2)).await.0.is_ok());
    assert_eq!(lists(), after_first, "nothing changed, so no policy or binding was listed again");
    // The binding now warns instead of denying: the next request sees it.
    f.binding("b", "max-replicas", json!({"paramRef": {"name": "limits"}, "validationActions": ["Warn"]}));
    let (result, review) = f.admit(&deployment("big", 5)).await;
    assert!(result.is_ok(), "{result:?}");
    assert_eq!(review.warnings.len(), 1);
    assert!(lists() > after_first);
}

#[tokio::test]
async fn messages_fall_back_to_the_message_then_the_expression_and_reasons_set_the_code() {
    let f = fixture();
    f.policy(
        "p",
        json!({"validations": [
            {"expression": "object.spec.replicas < 10", "message": "  too many  ", "reason": "Forbidden",
                "messageExpression": "object.spec.replicas > 100 ? 'way too many' : ''"},
            {"expression": "  object.metadata.name != 'x'  ", "reason": "RequestEntityTooLarge"}]}),
    );
    f.binding("b", "p", json!({}));
    let e = f.admit(&deployment("d", 20)).await.0.unwrap_err();
    assert_eq!((e.code, e.reason), (403, Reason::Forbidden));
    assert!(e.message.ends_with("denied request: too many"), "blank messageExpression falls back: {}", e.message);
    let e = f.admit(&deployment("d", 200)).await.0.unwrap_err();
    assert!(e.message.ends_with("denied request: way too many"), "{}", e.message);
    let e = f.admit(&deployment("x", 1)).await.0.unwrap_err();
    assert_eq!((e.code, e.reason), (413, Reason::RequestEntityTooLarge));
    assert!(e.message.ends_with("denied request: failed expression: object.metadata.name != 'x'"), "{}", e.message);
}

#[tokio::test]
async fn warn_and_audit_let_the_request_through_and_say_so() {
    let f = fixture();
    f.policy(
        "p",
        json!({"validations": [{"expression": "true"}, {"expression": "object.spec.replicas < 3",
        "message": "too many"}]}),
    );
    f.binding("b", "p", json!({"validationActions": ["Warn", "Audit"]}));
    let (result, review) = f.admit(&deployment("d", 5)).await;
    assert!(result.is_ok());
    assert_eq!(review.warnings, ["Validation failed for ValidatingAdmissionPolicy 'p' with binding 'b': too many"]);
    let (key, value) = &review.audit_annotations[0];
    assert_eq!(key, VALIDATION_FAILURE_ANNOTATION);
    let value: Value = serde_json::from_str(value).unwrap();
    assert_eq!(
        value,
        json!([{"message": "too many", "policy": "p", "binding": "b", "expressionIndex": 1,
            "validationActions": ["Warn", "Audit"]}])
    );
}

#[tokio::test]
async fn a_binding_without_its_param_denies_or_allows_as_its_action_says() {
    let f = fixture();
    max_replicas_policy(&f);
    f.binding(
        "deny-missing",
        "max-replicas",
        json!({"paramRef": {"name": "absent", "parameterNotFoundAction": "Deny"}}),
    );
    let e = f.admit(&deployment("d", 1)).await.0.unwrap_err();
    assert_eq!(e.code, 422);
    assert!(
        e.message.ends_with(
            "ValidatingAdmissionPolicy 'max-replicas' with binding 'deny-missing' denied request: failed to \
             configure binding: no params found for policy binding with `Deny` parameterNotFoundAction"
        ),
        "{}",
        e.message
    );
    f.binding(
        "deny-missing",
        "max-replicas",
        json!({"paramRef": {"name": "absent", "parameterNotFoundAction": "Allow"}}),
    );
    assert!(f.admit(&deployment("d", 1)).await.0.is_ok());
}

#[tokio::test]
async fn a_selector_evaluates_the_policy_once_per_param() {
    let f = fixture();
    max_replicas_policy(&f);
    f.limits("generous", "10", json!({"tier": "limits"}));
    f.limits("strict", "2", json!({"tier": "limits"}));
    f.limits("other", "0", json!({"tier": "other"}));
    f.binding(
        "b",
        "max-replicas",
        json!({"validationActions": ["Warn"],
        "paramRef": {"selector": {"matchLabels": {"tier": "limits"}}, "parameterNotFoundAction": "Deny"}}),
    );
    let (result, review) = f.admit(&deployment("d", 5)).await;
    assert!(result.is_ok());
    assert_eq!(
        review.warnings,
        ["Validation failed for ValidatingAdmissionPolicy 'max-replicas' with binding 'b': replicas must be at most 2"]
    );
}

#[tokio::test]
async fn bindings_and_match_conditions_narrow_what_a_policy_applies_to() {
    let f = fixture();
    f.policy(
        "p",
        json!({"matchConditions": [{"name": "not-system", "expression": "!object.metadata.name.startsWith('system-')"}],
            "validations": [{"expression": "false", "message": "no"}]}),
    );
    f.binding(
        "b",
        "p",
        json!({"matchResources": {"namespaceSelector": {"matchLabels": {"env": "prod"}},
        "excludeResourceRules": [{"operations": ["*"], "apiGroups": ["apps"], "apiVersions": ["v1"],
            "resources": ["deployments"], "resourceNames": ["excluded"]}]}}),
    );
    assert!(f.admit(&deployment("d", 1)).await.0.is_err());
    assert!(f.admit(&deployment("system-d", 1)).await.0.is_ok(), "a false match condition");
    assert!(f.admit(&deployment("excluded", 1)).await.0.is_ok(), "an excluded name");
    f.objects.put("namespaces", json!({"metadata": {"name": "team", "labels": {"env": "dev"}}}));
    assert!(f.admit(&deployment("d", 1)).await.0.is_ok(), "the namespace no longer selected");
    let mut pod = deployment("d", 1);
    pod.target.group = String::new();
    pod.target.resource = "pods".into();
    assert!(f.admit(&pod).await.0.is_ok(), "outside the policy's constraints");
}

#[tokio::test]
async fn errors_follow_the_failure_policy() {
    let f = fixture();
    f.policy("p", json!({"validations": [{"expression": "object.spec.nope > 1"}]}));
    f.binding("b", "p", json!({}));
    let e = f.admit(&deployment("d", 1)).await.0.unwrap_err();
    assert_eq!(e.code, 422);
    assert!(
        e.message.contains("denied request: expression 'object.spec.nope > 1' resulted in error: "),
        "{}",
        e.message
    );
    f.policy("p", json!({"failurePolicy": "Ignore", "validations": [{"expression": "object.spec.nope > 1"}]}));
    assert!(f.admit(&deployment("d", 1)).await.0.is_ok());
}

#[tokio::test]
async fn an_unserved_param_kind_is_a_policy_configuration_error() {
    let f = fixture();
    f.policy(
        "p",
        json!({"paramKind": {"apiVersion": "example.com/v1", "kind": "Limits"},
        "validations": [{"expression": "true"}]}),
    );
    f.binding("b", "p", json!({"paramRef": {"name": "x", "parameterNotFoundAction": "Deny"}}));
    let e = f.admit(&deployment("d", 1)).await.0.unwrap_err();
    assert!(
        e.message.ends_with(
            "ValidatingAdmissionPolicy 'p' denied request: failed to configure policy: failed to find resource \
             referenced by paramKind: 'example.com/v1, Kind=Limits'"
        ),
        "{}",
        e.message
    );
}

#[tokio::test]
async fn variables_namespace_and_request_are_visible() {
    let f = fixture();
    f.policy(
        "p",
        json!({"variables": [{"name": "env", "expression": "namespaceObject.metadata.labels.env"},
            {"name": "prod", "expression": "variables.env == 'prod'"},
            {"name": "broken", "expression": "object.spec.nope"}],
            "validations": [
                {"expression": "!variables.prod || object.spec.replicas >= 2", "message": "prod needs two"},
                {"expression": "request.userInfo.username == 'alice' && request.operation == 'CREATE' && \
                    request.kind.kind == 'Deployment' && oldObject == null", "message": "request"}]}),
    );
    f.binding("b", "p", json!({}));
    let e = f.admit(&deployment("d", 1)).await.0.unwrap_err();
    assert!(e.message.ends_with("denied request: prod needs two"), "{}", e.message);
    assert!(f.admit(&deployment("d", 2)).await.0.is_ok(), "an unread variable's error does not matter");
    f.policy(
        "p",
        json!({"variables": [{"name": "broken", "expression": "object.spec.nope"}],
        "validations": [{"expression": "variables.broken == 1"}]}),
    );
    let e = f.admit(&deployment("d", 2)).await.0.unwrap_err();
    assert!(
        e.message.contains(
            "denied request: expression 'variables.broken == 1' resulted in error: composited variable \"broken\" \
             fails to evaluate: "
        ),
        "{}",
        e.message
    );
}

#[tokio::test]
async fn audit_annotations_are_published_under_the_policy_name() {
    let f = fixture();
    f.policy(
        "p",
        json!({"auditAnnotations": [
        {"key": "replicas", "valueExpression": "'replicas: ' + string(object.spec.replicas)"},
        {"key": "none", "valueExpression": "null"}]}),
    );
    f.binding("b", "p", json!({}));
    let (result, review) = f.admit(&deployment("d", 4)).await;
    assert!(result.is_ok());
    assert_eq!(review.audit_annotations, [("p/replicas".to_string(), "replicas: 4".to_string())]);
    // A value of another type does not compile (validation refuses it); stored anyway, it
    // fails as kube's runtime compile fails.
    f.policy("p", json!({"auditAnnotations": [{"key": "n", "valueExpression": "object.spec.replicas"}]}));
    let e = f.admit(&deployment("d", 4)).await.0.unwrap_err();
    assert!(
        e.message
            .ends_with("denied request: compilation error: must evaluate to one of [string null_type] but got dyn"),
        "{}",
        e.message
    );
}

#[tokio::test]
async fn a_delete_sees_the_old_object_and_no_object() {
    let f = fixture();
    f.policy(
        "p",
        json!({"matchConstraints": {"resourceRules": [{"operations": ["DELETE"], "apiGroups": ["apps"],
            "apiVersions": ["v1"], "resources": ["deployments"]}]},
            "validations": [{"expression": "object == null && oldObject.metadata.name != 'keep'", "message": "kept"}]}),
    );
    f.binding("b", "p", json!({}));
    let mut delete = deployment("keep", 1);
    delete.operation = Operation::Delete;
    delete.old_object = Some(delete.object.clone().into());
    let e = f.admit(&delete).await.0.unwrap_err();
    assert!(e.message.starts_with("deployments.apps \"keep\" is forbidden: "), "{}", e.message);
    let mut other = deployment("gone", 1);
    other.operation = Operation::Delete;
    other.old_object = Some(other.object.clone().into());
    assert!(f.admit(&other).await.0.is_ok());
}

#[tokio::test]
async fn a_binding_to_a_missing_policy_does_nothing() {
    let f = fixture();
    f.binding("b", "absent", json!({}));
    assert!(f.admit(&deployment("d", 1)).await.0.is_ok());
}

#[tokio::test]
async fn a_failed_match_condition_follows_the_failure_policy_unless_another_is_false() {
    let f = fixture();
    let conditions = json!([
        {"name": "broken", "expression": "object.spec.nope == 1"},
        {"name": "also-broken", "expression": "object.spec.gone == 1"}]);
    f.policy("p", json!({"matchConditions": conditions, "validations": [{"expression": "true"}]}));
    f.binding("b", "p", json!({}));
    let e = f.admit(&deployment("d", 1)).await.0.unwrap_err();
    assert_eq!(e.code, 422);
    let message = e.message.split_once("denied request: ").unwrap().1;
    assert!(message.starts_with("[expression 'object.spec.nope == 1' resulted in error: "), "{message}");
    assert!(message.contains(", expression 'object.spec.gone == 1' resulted in error: "), "{message}");
    // A false condition wins: the policy does not apply.
    let mut with_false = conditions.as_array().unwrap().clone();
    with_false.push(json!({"name": "never", "expression": "false"}));
    f.policy("p", json!({"matchConditions": with_false, "validations": [{"expression": "false"}]}));
    assert!(f.admit(&deployment("d", 1)).await.0.is_ok());
    // Under Ignore, an error skips the policy.
    f.policy(
        "p",
        json!({"failurePolicy": "Ignore", "matchConditions": conditions,
        "validations": [{"expression": "false"}]}),
    );
    assert!(f.admit(&deployment("d", 1)).await.0.is_ok());
}

#[tokio::test]
async fn audit_annotation_values_of_several_params_are_joined_once_each() {
    let f = fixture();
    f.policy(
        "p",
        json!({"paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
        "auditAnnotations": [{"key": "max", "valueExpression": "string(params.data.maxReplicas)"}]}),
    );
    f.limits("a", "3", json!({"audit": "yes"}));
    f.limits("b", "5", json!({"audit": "yes"}));
    f.limits("c", "3", json!({"audit": "yes"}));
    f.binding(
        "b",
        "p",
        json!({"paramRef": {"selector": {"matchLabels": {"audit": "yes"}},
        "parameterNotFoundAction": "Deny"}}),
    );
    let (result, review) = f.admit(&deployment("d", 1)).await;
    assert!(result.is_ok());
    assert_eq!(review.audit_annotations, [("p/max".to_string(), "3, 5".to_string())]);
}

/// An `autoscaling/v1` create of an HPA in `team`, its object in the stored (v2) form.
fn v1_autoscaler(max: i64) -> Admit {
    let catalogue = kinds::catalogue();
    let v1 = catalogue.find("autoscaling", "v1", "horizontalpodautoscalers").unwrap();
    let body = json!({"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "web", "namespace": "team"}, "spec": {"maxReplicas": max,
        "scaleTargetRef": {"kind": "Deployment", "name": "web"}, "targetCPUUtilizationPercentage": 70}});
    let stored = v1.strategy.to_storage(body).unwrap();
    let mut request = crate::testing::admit(Operation::Create, "autoscaling", "horizontalpodautoscalers", stored);
    request.phase = AdmissionPhase::Validating;
    request.target.version = "v2".into();
    request.target.requested = Some(("autoscaling".into(), "v1".into()));
    request.target.namespace = "team".into();
    request
}

#[tokio::test]
async fn an_equivalent_version_is_matched_and_seen_as_that_version() {
    let f = fixture();
    let hpa_rule = |version: &str| {
        json!({"resourceRules": [{"operations": ["CREATE"], "apiGroups": ["autoscaling"], "apiVersions": [version],
            "resources": ["horizontalpodautoscalers"]}]})
    };
    // A v2 field, and the versions CEL is told of.
    f.policy(
        "v2-view",
        json!({"matchConstraints": hpa_rule("v2"),
            "validations": [{"expression": "object.spec.metrics[0].resource.target.averageUtilization > 80",
                "messageExpression": "request.kind.version + ' from ' + request.requestKind.version + ': ' + object.apiVersion"}]}),
    );
    f.binding("v2-view", "v2-view", json!({}));
    let e = f.admit(&v1_autoscaler(5)).await.0.unwrap_err();
    assert!(
        e.message.ends_with("denied request: v2 from v1: autoscaling/v2"),
        "seen as autoscaling/v2, asked as v1: {}",
        e.message
    );
    // Exact: the v1 request is not matched by a v2 rule, and a v1 rule sees v1.
    let mut exact = hpa_rule("v2");
    exact["matchPolicy"] = json!("Exact");
    f.policy("v2-view", json!({"matchConstraints": exact, "validations": [{"expression": "false"}]}));
    assert!(f.admit(&v1_autoscaler(5)).await.0.is_ok());
    f.policy(
        "v2-view",
        json!({"matchConstraints": hpa_rule("v1"),
            "validations": [{"expression": "object.spec.targetCPUUtilizationPercentage == 70 && object.spec.maxReplicas < 4",
                "messageExpression": "string(object.apiVersion)"}]}),
    );
    let e = f.admit(&v1_autoscaler(5)).await.0.unwrap_err();
    assert!(e.message.ends_with("denied request: autoscaling/v1"), "{}", e.message);
    assert!(f.admit(&v1_autoscaler(3)).await.0.is_ok());
}

/// A deployment whose spec holds a list of `items` numbers, for costly expressions.
fn listed(items: usize) -> Admit {
    let mut d = deployment("d", 1);
    d.object["spec"]["list"] = json!((0..items).collect::<Vec<_>>());
    d
}

/// What `expression` costs over `request`'s object, as this crate counts it.
fn cost_of(expression: &str, request: &Admit) -> u64 {
    use kube_cel::{Activation, Env, Program, Type, Version};
    let env = Env::new(Version::STORED).declare("object", Type::Dyn);
    let program = Program::compile(&env, expression).unwrap();
    let activation = Activation::new().bind("object", crate::cel::value(&request.object));
    program.evaluate(&activation, None).cost
}

#[tokio::test]
async fn validations_share_kubes_runtime_budget_and_each_has_the_per_call_limit() {
    let f = fixture();
    let expression = "object.spec.list.all(a, object.spec.list.all(b, b >= 0))";
    let request = listed(400);
    let cost = cost_of(expression, &request);
    assert!(cost < crate::cel::PER_CALL_LIMIT && cost > crate::cel::RUNTIME_COST_BUDGET / 20, "{cost}");
    let fits = (crate::cel::RUNTIME_COST_BUDGET / cost) as usize;
    let validations = |n: usize| Value::Array(vec![json!({"expression": expression}); n]);
    f.policy("p", json!({"validations": validations(fits)}));
    f.binding("b", "p", json!({}));
    assert!(f.admit(&request).await.0.is_ok());
    f.policy("p", json!({"validations": validations(fits + 1)}));
    let e = f.admit(&request).await.0.unwrap_err();
    assert!(e.message.ends_with(&format!("denied request: {}", crate::cel::OUT_OF_BUDGET)), "{}", e.message);
    // Under Ignore the exhausted budget lets the request through.
    f.policy("p", json!({"failurePolicy": "Ignore", "validations": validations(fits + 1)}));
    assert!(f.admit(&request).await.0.is_ok());
    // One expression over the per-call limit fails alone.
    f.policy("p", json!({"validations": [{"expression": expression}]}));
    let e = f.admit(&listed(1000)).await.0.unwrap_err();
    assert!(
        e.message.ends_with(&format!(
            "denied request: expression '{expression}' resulted in error: operation cancelled: actual cost limit \
             exceeded"
        )),
        "{}",
        e.message
    );
}

#[tokio::test]
async fn validations_and_variables_ask_the_authorizer_for_the_requesting_user() {
    let f = fixture();
    f.policy(
        "p",
        json!({"variables": [{"name": "healthy", "expression": "authorizer.path('/healthz').check('get').allowed()"}],
            "validations": [
                {"expression": "variables.healthy"},
                {"expression": "authorizer.group('').resource('pods').check('delete').allowed()",
                 "message": "may not delete pods"}]}),
    );
    f.binding("b", "p", json!({}));
    let e = f.admit(&deployment("d", 1)).await.0.unwrap_err();
    assert!(e.message.ends_with("denied request: may not delete pods"), "{}", e.message);
}

#[tokio::test]
async fn variables_are_evaluated_once_when_named_and_their_errors_are_the_namers() {
    let f = fixture();
    f.policy(
        "p",
        json!({"variables": [
                {"name": "bad", "expression": "object.spec.nope == 1"},
                {"name": "replicas", "expression": "object.spec.replicas"},
                {"name": "twice", "expression": "variables.replicas * 2"}],
            "validations": [
                {"expression": "variables.twice == 2"},
                {"expression": "variables.bad"}]}),
    );
    f.binding("b", "p", json!({}));
    let e = f.admit(&deployment("d", 1)).await.0.unwrap_err();
    assert!(
        e.message.ends_with(
            "denied request: expression 'variables.bad' resulted in error: composited variable \"bad\" fails to \
             evaluate: no such key: nope"
        ),
        "{}",
        e.message
    );
}
