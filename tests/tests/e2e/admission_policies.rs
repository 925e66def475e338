//! ValidatingAdmissionPolicies and their bindings against the real server: a CEL rule over a
//! ConfigMap param denying a Deployment with kube's message and code, the `Warn` action's
//! `Warning` header, the status controller's type checking, compile errors refused at
//! create, and a binding whose params are missing.

use std::time::Duration;

use serde_json::{Value, json};
use tests::{TestServer, command_outcome as out, poll_until, within};

const GROUP_PATH: &str = "/apis/admissionregistration.k8s.io/v1";

/// `method path` as the admin with an optional JSON body: the status, the JSON answer and the
/// `Warning` headers.
async fn call(s: &TestServer, method: &str, path: &str, body: Option<Value>) -> (u16, Value, Vec<String>) {
    let answer = s.admin_call(method, path, body.as_ref()).await;
    let warnings = answer.warnings();
    (answer.code, answer.body, warnings)
}

/// A policy on creating and updating Deployments, with `spec` over that.
fn policy(name: &str, spec: Value) -> Value {
    let mut full = json!({"failurePolicy": "Fail", "matchConstraints": {"resourceRules": [{
        "operations": ["CREATE", "UPDATE"], "apiGroups": ["apps"], "apiVersions": ["v1"], "resources": ["deployments"]}]}});
    for (k, v) in spec.as_object().unwrap() {
        full[k] = v.clone();
    }
    json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": name}, "spec": full})
}

/// The policy kube's documentation starts with: at most the param's `maxReplicas` replicas.
fn max_replicas_policy() -> Value {
    policy(
        "max-replicas",
        json!({"paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
            "validations": [{"expression": "object.spec.replicas <= int(params.data.maxReplicas)",
                "messageExpression": "'object.spec.replicas must be no greater than ' + params.data.maxReplicas",
                "reason": "Invalid"}]}),
    )
}

fn binding(name: &str, policy: &str, spec: Value) -> Value {
    let mut full = json!({"policyName": policy, "validationActions": ["Deny"]});
    for (k, v) in spec.as_object().unwrap() {
        full[k] = v.clone();
    }
    json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": name}, "spec": full})
}

fn deployment(name: &str, replicas: i64) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "web", "image": "nginx"}]}}}})
}

async fn create_deployment(s: &TestServer, name: &str, replicas: i64) -> (u16, Value, Vec<String>) {
    call(s, "POST", "/apis/apps/v1/namespaces/default/deployments", Some(deployment(name, replicas))).await
}

/// Creates `object` with kubectl and waits until the watch cache admission reads from has it.
fn create_and_wait(s: &TestServer, resource: &str, object: &Value) {
    let created = s.kubectl_stdin(&["create", "-f", "-"], &object.to_string());
    let (ok, stdout, stderr) = out(&created);
    assert!(ok, "creating {resource}: {stdout}{stderr}");
    let name = object["metadata"]["name"].as_str().unwrap();
    let path = format!("{GROUP_PATH}/{resource}?resourceVersion=0");
    let cached = within(Duration::from_secs(5), || {
        let list: Value = serde_json::from_str(&s.kubectl_ok(&["get", "--raw", &path])).unwrap();
        list["items"].as_array().unwrap().iter().any(|c| c["metadata"]["name"] == name)
    });
    assert!(cached.is_some(), "the cache shows {resource} {name}");
}

fn limits(s: &TestServer, max: &str) {
    s.kubectl_ok(&["create", "configmap", "limits", &format!("--from-literal=maxReplicas={max}")]);
}

fn deployment_stored(s: &TestServer, name: &str) -> bool {
    s.kubectl(&["get", "deployment", name]).status.success()
}

// ---------------------------------------------------------------------------------------------

#[actix_web::test]
async fn a_policy_over_a_configmap_param_denies_a_deployment_over_its_max_replicas() {
    let s = TestServer::start();
    limits(&s, "3");
    create_and_wait(&s, "validatingadmissionpolicies", &max_replicas_policy());
    create_and_wait(
        &s,
        "validatingadmissionpolicybindings",
        &binding(
            "max-replicas-binding",
            "max-replicas",
            json!({"paramRef": {"name": "limits", "namespace": "default", "parameterNotFoundAction": "Deny"}}),
        ),
    );

    let message = "deployments.apps \"big\" is forbidden: ValidatingAdmissionPolicy 'max-replicas' with binding \
                   'max-replicas-binding' denied request: object.spec.replicas must be no greater than 3";
    let (code, status, _) = create_deployment(&s, "big", 5).await;
    assert_eq!(code, 422, "{status}");
    assert_eq!(status["reason"], "Invalid");
    assert_eq!(status["message"], message);
    assert_eq!(status["details"]["causes"][0]["message"], message.split_once("is forbidden: ").unwrap().1);
    assert!(!deployment_stored(&s, "big"));

    let (ok, _, stderr) = out(&s.kubectl(&["create", "deployment", "big", "--image=nginx", "--replicas=4"]));
    assert!(!ok);
    assert_eq!(
        stderr.trim(),
        "error: failed to create deployment: deployments.apps \"big\" is forbidden: ValidatingAdmissionPolicy \
         'max-replicas' with binding 'max-replicas-binding' denied request: object.spec.replicas must be no greater than 3"
    );

    let (code, _, warnings) = create_deployment(&s, "small", 3).await;
    assert_eq!(code, 201);
    assert!(warnings.is_empty(), "{warnings:?}");
    // Updates are checked too: scaling past the limit through the object is refused.
    let (ok, _, stderr) = out(&s.kubectl(&["patch", "deployment", "small", "-p", r#"{"spec":{"replicas":9}}"#]));
    assert!(!ok && stderr.contains("denied request: object.spec.replicas must be no greater than 3"), "{stderr}");

    // The check is counted as kube 1.30 counts it.
    let metrics = s.kubectl_ok(&["get", "--raw", "/metrics"]);
    let line = metrics
        .lines()
        .find(|l| {
            l.starts_with("apiserver_validating_admission_policy_check_total{")
                && l.contains("enforcement_action=\"deny\"")
        })
        .unwrap_or_else(|| panic!("no deny count in the metrics"));
    assert!(
        line.contains("policy=\"max-replicas\"") && line.contains("policy_binding=\"max-replicas-binding\""),
        "{line}"
    );
}

#[actix_web::test]
async fn the_warn_action_returns_a_warning_header_and_the_object_is_created() {
    let s = TestServer::start();
    limits(&s, "2");
    create_and_wait(&s, "validatingadmissionpolicies", &max_replicas_policy());
    create_and_wait(
        &s,
        "validatingadmissionpolicybindings",
        &binding(
            "warn-only",
            "max-replicas",
            json!({"validationActions": ["Warn"],
            "paramRef": {"name": "limits", "namespace": "default", "parameterNotFoundAction": "Deny"}}),
        ),
    );

    let (code, created, warnings) = create_deployment(&s, "warned", 4).await;
    assert_eq!(code, 201, "{created}");
    assert_eq!(
        warnings,
        ["299 - \"Validation failed for ValidatingAdmissionPolicy 'max-replicas' with binding 'warn-only': \
          object.spec.replicas must be no greater than 2\""]
    );
    assert!(deployment_stored(&s, "warned"));
    // kubectl prints the warning and succeeds.
    let (ok, _, stderr) = out(&s.kubectl(&["create", "deployment", "warned-too", "--image=nginx", "--replicas=3"]));
    assert!(ok, "{stderr}");
    assert!(
        stderr.contains(
            "Warning: Validation failed for ValidatingAdmissionPolicy 'max-replicas' with binding 'warn-only'"
        ),
        "{stderr}"
    );
}

#[actix_web::test]
async fn a_type_error_shows_in_the_policys_type_checking_status() {
    let s = TestServer::start();
    let typo = policy(
        "typo",
        json!({"validations": [
        {"expression": "object.spec.replicas > 0"},
        {"expression": "object.spec.replicaz > 1"}]}),
    );
    let (code, created, _) = call(&s, "POST", &format!("{GROUP_PATH}/validatingadmissionpolicies"), Some(typo)).await;
    assert_eq!(code, 201, "{created}");

    let path = format!("{GROUP_PATH}/validatingadmissionpolicies/typo");
    let status = poll_until(Duration::from_secs(5), || {
        let policy: Value = serde_json::from_str(&s.kubectl_ok(&["get", "--raw", &path])).unwrap();
        (policy["status"]["observedGeneration"] == 1).then(|| policy["status"].clone())
    })
    .expect("the status controller observes the policy");
    assert_eq!(
        status["typeChecking"]["expressionWarnings"],
        json!([{"fieldRef": "spec.validations[1].expression",
            "warning": "apps/v1, Kind=Deployment: ERROR: <input>:1:12: undefined field 'replicaz'\n | object.spec.replicaz > 1\n | ...........^\n"}])
    );

    // Fixing the expression is a new generation, checked again.
    let fixed = json!({"spec": {"validations": [{"expression": "object.spec.replicas > 0"}]}});
    let (ok, _, stderr) =
        out(&s.kubectl(&["patch", "validatingadmissionpolicy", "typo", "--type=merge", "-p", &fixed.to_string()]));
    assert!(ok, "{stderr}");
    let status = poll_until(Duration::from_secs(5), || {
        let policy: Value = serde_json::from_str(&s.kubectl_ok(&["get", "--raw", &path])).unwrap();
        (policy["status"]["observedGeneration"] == 2).then(|| policy["status"].clone())
    })
    .expect("the new generation is observed");
    assert_eq!(status["typeChecking"], json!({}));
}

#[actix_web::test]
async fn a_syntactically_broken_expression_is_refused_at_create() {
    let s = TestServer::start();
    let broken = policy("broken", json!({"validations": [{"expression": "object.spec.replicas <"}]}));
    let (code, status, _) = call(&s, "POST", &format!("{GROUP_PATH}/validatingadmissionpolicies"), Some(broken)).await;
    assert_eq!(code, 422, "{status}");
    assert_eq!(status["reason"], "Invalid");
    let cause = &status["details"]["causes"][0];
    assert_eq!(cause["field"], "spec.validations[0].expression");
    let message = cause["message"].as_str().unwrap();
    assert!(
        message.starts_with(
            "Invalid value: \"object.spec.replicas <\": compilation failed: ERROR: <input>:1:23: Syntax error: "
        ),
        "{message}"
    );
    assert!(message.ends_with("\n | object.spec.replicas <\n | ......................^"), "{message}");

    // A name the environment does not declare is refused the same way.
    let undeclared = policy("undeclared", json!({"validations": [{"expression": "params.max > 1"}]}));
    let (code, status, _) =
        call(&s, "POST", &format!("{GROUP_PATH}/validatingadmissionpolicies"), Some(undeclared)).await;
    assert_eq!(code, 422, "{status}");
    assert!(
        status["message"].as_str().unwrap().contains("undeclared reference to 'params' (in container '')"),
        "{status}"
    );
}

#[actix_web::test]
async fn a_binding_whose_params_are_missing_denies_under_parameter_not_found_action_deny() {
    let s = TestServer::start();
    create_and_wait(&s, "validatingadmissionpolicies", &max_replicas_policy());
    create_and_wait(
        &s,
        "validatingadmissionpolicybindings",
        &binding(
            "needs-limits",
            "max-replicas",
            json!({"paramRef": {"name": "limits", "namespace": "default", "parameterNotFoundAction": "Deny"}}),
        ),
    );
    let (code, status, _) = create_deployment(&s, "any", 1).await;
    assert_eq!(code, 422, "{status}");
    assert_eq!(
        status["message"],
        "deployments.apps \"any\" is forbidden: ValidatingAdmissionPolicy 'max-replicas' with binding 'needs-limits' \
         denied request: failed to configure binding: no params found for policy binding with `Deny` \
         parameterNotFoundAction"
    );

    // Once the param exists, the policy is evaluated with it.
    limits(&s, "5");
    let admitted = poll_until(Duration::from_secs(5), || {
        let created = s.kubectl_stdin(&["create", "-f", "-"], &deployment("any", 1).to_string());
        created.status.success().then_some(())
    });
    assert!(admitted.is_some(), "admitted once the param is there");
}
