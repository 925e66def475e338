//! The PodSecurity admission plugin through kubectl: namespace labels choose what is refused
//! (enforce), what is warned about (warn), and a namespace labelled over violating pods says
//! which ones.

use serde_json::{Value, json};
use tests::{TestServer, command_outcome as out};

/// A pod with one privileged container `c`.
fn privileged_pod(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
        "spec": {"containers": [{"name": "c", "image": "nginx", "securityContext": {"privileged": true}}]}})
}

/// A pod that meets the restricted level.
fn restricted_pod(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
        "spec": {"securityContext": {"runAsNonRoot": true, "seccompProfile": {"type": "RuntimeDefault"}},
            "containers": [{"name": "c", "image": "nginx",
                "securityContext": {"allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]}}}]}})
}

/// What the restricted level finds in [`privileged_pod`], as kube words it (baseline checks
/// first, then the restricted ones).
const RESTRICTED_FINDINGS: &str = "privileged (container \"c\" must not set securityContext.privileged=true), \
    allowPrivilegeEscalation != false (container \"c\" must set securityContext.allowPrivilegeEscalation=false), \
    unrestricted capabilities (container \"c\" must set securityContext.capabilities.drop=[\"ALL\"]), \
    runAsNonRoot != true (pod or container \"c\" must set securityContext.runAsNonRoot=true), \
    seccompProfile (pod or container \"c\" must set securityContext.seccompProfile.type to \"RuntimeDefault\" or \
    \"Localhost\")";

fn namespace(s: &TestServer, name: &str, labels: &[&str]) {
    s.kubectl_ok(&["create", "namespace", name]);
    if !labels.is_empty() {
        let mut args = vec!["label", "namespace", name];
        args.extend_from_slice(labels);
        s.kubectl_ok(&args);
    }
}

/// `kubectl create -f -` of `object` in `ns`: (succeeded, stdout, stderr).
fn create(s: &TestServer, ns: &str, object: &Value) -> (bool, String, String) {
    out(&s.kubectl_stdin(&["create", "-n", ns, "-f", "-"], &object.to_string()))
}

#[actix_web::test]
async fn an_enforce_restricted_namespace_refuses_a_privileged_pod_with_kubes_message() {
    let s = TestServer::start_with(&["--allow-privileged=true"]);
    namespace(&s, "strict", &["pod-security.kubernetes.io/enforce=restricted"]);

    let (ok, _, stderr) = create(&s, "strict", &privileged_pod("p"));
    assert!(!ok);
    assert_eq!(
        stderr.trim(),
        format!(
            "Error from server (Forbidden): error when creating \"STDIN\": pods \"p\" is forbidden: violates \
             PodSecurity \"restricted:latest\": {RESTRICTED_FINDINGS}"
        )
    );
    assert!(!s.kubectl(&["get", "pod", "p", "-n", "strict"]).status.success(), "nothing is stored");

    // Over REST: 403 Forbidden naming the pod.
    let client = s.client(true);
    let mut resp = client
        .post(s.url("/api/v1/namespaces/strict/pods"))
        .insert_header(("Content-Type", "application/json"))
        .send_body(privileged_pod("p").to_string())
        .await
        .unwrap();
    let status: Value = serde_json::from_slice(&resp.body().await.unwrap()).unwrap();
    assert_eq!(resp.status().as_u16(), 403, "{status}");
    assert_eq!(status["reason"], "Forbidden");
    assert_eq!(status["details"], json!({"name": "p", "kind": "pods"}));
    assert_eq!(
        status["message"].as_str().unwrap(),
        format!("pods \"p\" is forbidden: violates PodSecurity \"restricted:latest\": {RESTRICTED_FINDINGS}")
    );

    // A pod that meets the level is created, without a warning.
    let (ok, stdout, stderr) = create(&s, "strict", &restricted_pod("fine"));
    assert!(ok, "{stderr}");
    assert_eq!((stdout.trim(), stderr.trim()), ("pod/fine created", ""));
}

#[actix_web::test]
async fn a_warn_baseline_namespace_lets_a_privileged_pod_in_with_a_warning() {
    let s = TestServer::start_with(&["--allow-privileged=true"]);
    namespace(&s, "lenient", &["pod-security.kubernetes.io/warn=baseline"]);

    let (ok, stdout, stderr) = create(&s, "lenient", &privileged_pod("p"));
    assert!(ok, "{stderr}");
    assert_eq!(stdout.trim(), "pod/p created");
    assert_eq!(
        stderr.trim(),
        "Warning: would violate PodSecurity \"baseline:latest\": privileged (container \"c\" must not set \
         securityContext.privileged=true)"
    );
    s.kubectl_ok(&["get", "pod", "p", "-n", "lenient"]);

    // The same pod in an unlabelled namespace (privileged by default) gets no warning.
    namespace(&s, "open", &[]);
    let (ok, _, stderr) = create(&s, "open", &privileged_pod("p"));
    assert!(ok && stderr.trim().is_empty(), "{stderr}");
}

#[actix_web::test]
async fn a_deployment_with_a_violating_template_is_created_and_warned_about_by_the_warn_level_only() {
    let s = TestServer::start_with(&["--allow-privileged=true"]);
    let template = privileged_pod("ignored");
    let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": template["spec"]}}});

    // kube evaluates a pod template at the warn and audit levels only: enforce refuses the
    // pods, never their controller, and says nothing about it.
    namespace(&s, "enforcing", &["pod-security.kubernetes.io/enforce=restricted"]);
    let (ok, stdout, stderr) = create(&s, "enforcing", &deployment);
    assert!(ok, "a pod controller is not refused: {stderr}");
    assert_eq!((stdout.trim(), stderr.trim()), ("deployment.apps/web created", ""));

    namespace(
        &s,
        "strict",
        &["pod-security.kubernetes.io/enforce=restricted", "pod-security.kubernetes.io/warn=restricted"],
    );
    let (ok, stdout, stderr) = create(&s, "strict", &deployment);
    assert!(ok, "a pod controller is not refused: {stderr}");
    assert_eq!(stdout.trim(), "deployment.apps/web created");
    assert_eq!(
        stderr.trim(),
        format!("Warning: would violate PodSecurity \"restricted:latest\": {RESTRICTED_FINDINGS}")
    );
    s.kubectl_ok(&["get", "deployment", "web", "-n", "strict"]);
}

#[actix_web::test]
async fn labelling_a_namespace_over_violating_pods_warns_about_them() {
    let s = TestServer::start_with(&["--allow-privileged=true"]);
    namespace(&s, "existing", &[]);
    let (ok, _, stderr) = create(&s, "existing", &privileged_pod("p"));
    assert!(ok, "{stderr}");
    let (ok, _, stderr) = create(&s, "existing", &restricted_pod("fine"));
    assert!(ok, "{stderr}");

    let (ok, stdout, stderr) =
        out(&s.kubectl(&["label", "namespace", "existing", "pod-security.kubernetes.io/enforce=restricted"]));
    assert!(ok, "the label is set whatever the pods: {stderr}");
    assert_eq!(stdout.trim(), "namespace/existing labeled");
    assert_eq!(
        stderr.trim(),
        "Warning: existing pods in namespace \"existing\" violate the new PodSecurity enforce level \
         \"restricted:latest\"\nWarning: p: privileged, allowPrivilegeEscalation != false, unrestricted capabilities, \
         runAsNonRoot != true, seccompProfile"
    );
    // The label is in effect: the same pod is now refused.
    let (ok, _, stderr) = create(&s, "existing", &privileged_pod("q"));
    assert!(!ok && stderr.contains("pods \"q\" is forbidden: violates PodSecurity \"restricted:latest\""), "{stderr}");

    // A bad level is refused with kube's message.
    let (ok, _, stderr) = out(&s.kubectl(&[
        "label",
        "--overwrite",
        "namespace",
        "existing",
        "pod-security.kubernetes.io/enforce=strictest",
    ]));
    assert!(!ok);
    assert_eq!(
        stderr.trim(),
        "The Namespace \"existing\" is invalid: \
         metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: \"strictest\": must be one of \
         privileged, baseline, restricted"
    );
}

#[actix_web::test]
async fn an_admission_configuration_file_sets_the_default_level_and_exempt_namespaces() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("admission.yaml");
    std::fs::write(
        &file,
        "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n- name: PodSecurity\n  \
         configuration:\n    apiVersion: pod-security.admission.config.k8s.io/v1\n    kind: PodSecurityConfiguration\n    \
         defaults:\n      enforce: baseline\n    exemptions:\n      namespaces: [exempt]\n",
    )
    .unwrap();
    let s =
        TestServer::start_with(&["--allow-privileged=true", "--admission-control-config-file", file.to_str().unwrap()]);
    namespace(&s, "plain", &[]);
    namespace(&s, "exempt", &[]);

    // No label: the configured default refuses.
    let (ok, _, stderr) = create(&s, "plain", &privileged_pod("p"));
    assert!(!ok);
    assert_eq!(
        stderr.trim(),
        "Error from server (Forbidden): error when creating \"STDIN\": pods \"p\" is forbidden: violates PodSecurity \
         \"baseline:latest\": privileged (container \"c\" must not set securityContext.privileged=true)"
    );
    // A label still decides over the default.
    s.kubectl_ok(&["label", "namespace", "plain", "pod-security.kubernetes.io/enforce=privileged"]);
    let (ok, _, stderr) = create(&s, "plain", &privileged_pod("p"));
    assert!(ok, "{stderr}");
    // An exempt namespace is not evaluated.
    let (ok, _, stderr) = create(&s, "exempt", &privileged_pod("p"));
    assert!(ok, "{stderr}");
}

#[test]
fn a_bad_pod_security_configuration_stops_the_server_with_the_field_named() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("admission.yaml");
    std::fs::write(
        &file,
        r#"{"apiVersion": "apiserver.config.k8s.io/v1", "kind": "AdmissionConfiguration", "plugins": [{"name": "PodSecurity",
            "configuration": {"apiVersion": "pod-security.admission.config.k8s.io/v1", "kind": "PodSecurityConfiguration",
            "defaults": {"enforce": "strict"}}}]}"#,
    )
    .unwrap();
    let out = std::process::Command::new(tests::apiserver_bin())
        .args(["serve", "--data-dir", dir.path().join("data").to_str().unwrap()])
        .args(["--secure-port", &tests::free_port().to_string(), "--admin-port", &tests::free_port().to_string()])
        .args(["--admission-control-config-file", file.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(
            "PodSecurity configuration: defaults.enforce: Invalid value: \"strict\": must be one of privileged, baseline, restricted"
        ),
        "{stderr}"
    );
}

#[actix_web::test]
async fn privileged_containers_need_allow_privileged_as_in_kube() {
    // kube's default: refused by validation, before any Pod Security level.
    let s = TestServer::start();
    let (ok, _, stderr) = create(&s, "default", &privileged_pod("p"));
    assert!(!ok);
    assert_eq!(
        stderr.trim(),
        "The Pod \"p\" is invalid: spec.containers[0].securityContext.privileged: Forbidden: disallowed by cluster policy"
    );
    let template = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
        "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {"metadata": {"labels": {"a": "b"}},
        "spec": privileged_pod("p")["spec"]}}});
    let (ok, _, stderr) = create(&s, "default", &template);
    assert!(
        !ok && stderr.contains("spec.template.spec.containers[0].securityContext.privileged: Forbidden"),
        "{stderr}"
    );
}
