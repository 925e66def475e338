//! kube's built-in admission plugins as clients meet them: what they fill in (tolerations,
//! priorities, default classes, finalizers, taints, overheads) and what they refuse, with
//! kube's messages; and the flags that turn them off.

use serde_json::{Value, json};
use tests::{TestServer, command_outcome as out};

use crate::kinds::call;

fn apply(s: &TestServer, object: Value) -> (bool, String, String) {
    out(&s.kubectl_stdin(&["create", "-f", "-"], &object.to_string()))
}

fn get(s: &TestServer, args: &[&str]) -> Value {
    let mut all = vec!["get", "-o", "json"];
    all.extend_from_slice(args);
    serde_json::from_str(&s.kubectl_ok(&all)).unwrap()
}

fn pod(name: &str, spec: Value) -> Value {
    let mut spec = spec;
    spec["containers"] = json!([{"name": "c", "image": "nginx"}]);
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"}, "spec": spec})
}

#[actix_web::test]
async fn pods_get_tolerations_and_priorities_and_a_missing_class_is_refused() {
    let s = TestServer::start();
    let (ok, _, stderr) = apply(&s, pod("plain", json!({})));
    assert!(ok, "{stderr}");
    let plain = get(&s, &["pod", "plain"]);
    assert_eq!(
        plain["spec"]["tolerations"],
        json!([
            {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
            {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
        ])
    );
    assert_eq!(
        (plain["spec"]["priority"].clone(), plain["spec"]["preemptionPolicy"].clone()),
        (json!(0), json!("PreemptLowerPriority"))
    );

    let (ok, _, stderr) = apply(&s, pod("critical", json!({"priorityClassName": "system-node-critical"})));
    assert!(ok, "{stderr}");
    assert_eq!(get(&s, &["pod", "critical"])["spec"]["priority"], 2_000_001_000, "the bootstrapped system class");

    let (ok, _, stderr) = apply(&s, pod("lost", json!({"priorityClassName": "nope"})));
    assert!(!ok);
    assert_eq!(
        stderr.trim(),
        "Error from server (Forbidden): error when creating \"STDIN\": pods \"lost\" is forbidden: no PriorityClass with name nope was found"
    );

    // A second global default is refused.
    let class = |name: &str| json!({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name}, "value": 10, "globalDefault": true});
    assert!(apply(&s, class("first")).0);
    let (ok, _, stderr) = apply(&s, class("second"));
    assert!(!ok);
    assert!(stderr.contains("priorityclasses.scheduling.k8s.io \"second\" is forbidden: PriorityClass first is already marked as default. Only one default can exist"), "{stderr}");
    let (ok, _, stderr) = apply(&s, pod("defaulted", json!({})));
    assert!(ok, "{stderr}");
    let defaulted = get(&s, &["pod", "defaulted"]);
    assert_eq!(
        (defaulted["spec"]["priorityClassName"].clone(), defaulted["spec"]["priority"].clone()),
        (json!("first"), json!(10))
    );
}

#[actix_web::test]
async fn claims_and_ingresses_get_default_classes_and_a_claim_grows_only_where_allowed() {
    let s = TestServer::start();
    let default = json!({"storageclass.kubernetes.io/is-default-class": "true"});
    assert!(apply(&s, json!({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "standard", "annotations": default}, "provisioner": "example.com/disk"})).0);
    let claim = json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data", "namespace": "default"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}});
    let (ok, _, stderr) = apply(&s, claim);
    assert!(ok, "{stderr}");
    let stored = get(&s, &["pvc", "data"]);
    assert_eq!(stored["spec"]["storageClassName"], "standard");
    assert_eq!(stored["metadata"]["finalizers"], json!(["kubernetes.io/pvc-protection"]));

    // Bound, then grown: the class does not allow expansion.
    let mut bound = stored.clone();
    bound["status"] = json!({"phase": "Bound"});
    let (code, st) = call(
        &s,
        "PUT",
        "/api/v1/namespaces/default/persistentvolumeclaims/data/status",
        "application/json",
        Some(bound),
    )
    .await;
    assert_eq!(code, 200, "{st}");
    let (ok, _, stderr) =
        out(&s.kubectl(&["patch", "pvc", "data", "-p", r#"{"spec":{"resources":{"requests":{"storage":"2Gi"}}}}"#]));
    assert!(!ok);
    assert_eq!(
        stderr.trim(),
        "Error from server (Forbidden): persistentvolumeclaims \"data\" is forbidden: only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must support resize"
    );

    let volume = json!({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pv1"},
        "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "hostPath": {"path": "/tmp/pv1"}}});
    assert!(apply(&s, volume).0);
    assert_eq!(get(&s, &["pv", "pv1"])["metadata"]["finalizers"], json!(["kubernetes.io/pv-protection"]));

    let marked = json!({"ingressclass.kubernetes.io/is-default-class": "true"});
    assert!(apply(&s, json!({"apiVersion": "networking.k8s.io/v1", "kind": "IngressClass", "metadata": {"name": "nginx", "annotations": marked}, "spec": {"controller": "k8s.io/ingress-nginx"}})).0);
    let ingress = json!({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": "web", "namespace": "default"},
        "spec": {"defaultBackend": {"service": {"name": "web", "port": {"number": 80}}}}});
    let (ok, _, stderr) = apply(&s, ingress);
    assert!(ok, "{stderr}");
    assert_eq!(get(&s, &["ingress", "web"])["spec"]["ingressClassName"], "nginx");
}

#[actix_web::test]
async fn nodes_are_tainted_and_runtime_classes_bring_their_overhead() {
    let s = TestServer::start();
    assert!(apply(&s, json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}})).0);
    assert_eq!(
        get(&s, &["node", "n1"])["spec"]["taints"],
        json!([{"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}])
    );

    let class = json!({"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": "gvisor"}, "handler": "runsc",
        "overhead": {"podFixed": {"cpu": "250m", "memory": "64Mi"}}, "scheduling": {"nodeSelector": {"sandbox": "gvisor"}}});
    assert!(apply(&s, class).0);
    let (ok, _, stderr) = apply(&s, pod("sandboxed", json!({"runtimeClassName": "gvisor"})));
    assert!(ok, "{stderr}");
    let sandboxed = get(&s, &["pod", "sandboxed"]);
    assert_eq!(sandboxed["spec"]["overhead"], json!({"cpu": "250m", "memory": "64Mi"}));
    assert_eq!(sandboxed["spec"]["nodeSelector"], json!({"sandbox": "gvisor"}));
    let (ok, _, stderr) = apply(&s, pod("nowhere", json!({"runtimeClassName": "kata"})));
    assert!(!ok);
    assert!(
        stderr.contains("pods \"nowhere\" is forbidden: pod rejected: RuntimeClass \"kata\" not found"),
        "{stderr}"
    );
}

/// A base64 PEM certificate request for `organization`.
fn certificate_request(organization: &str) -> String {
    use base64::Engine;
    let key = rcgen::KeyPair::generate().unwrap();
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    params.distinguished_name.push(rcgen::DnType::CommonName, "someone");
    params.distinguished_name.push(rcgen::DnType::OrganizationName, organization);
    let pem = params.serialize_request(&key).unwrap().pem().unwrap();
    base64::engine::general_purpose::STANDARD.encode(pem)
}

fn csr(name: &str, signer: &str, organization: &str) -> Value {
    json!({"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest", "metadata": {"name": name},
        "spec": {"request": certificate_request(organization), "signerName": signer, "usages": ["client auth"]}})
}

#[actix_web::test]
async fn approving_needs_the_signer_and_masters_certificates_cannot_be_asked_for() {
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("tokens.csv");
    std::fs::write(&tokens, "carol-token,carol,1003\n").unwrap();
    let s = TestServer::start_with(&["--token-auth-file", tokens.to_str().unwrap()]);

    let (ok, _, stderr) = apply(&s, csr("masters", "kubernetes.io/kube-apiserver-client", "system:masters"));
    assert!(!ok);
    assert!(
        stderr.contains("certificatesigningrequests.certificates.k8s.io \"masters\" is forbidden: use of kubernetes.io/kube-apiserver-client signer with system:masters group is not allowed"),
        "{stderr}"
    );

    assert!(apply(&s, csr("team", "example.com/team", "devs")).0);
    let role = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "csr-approver"},
        "rules": [{"apiGroups": ["certificates.k8s.io"], "resources": ["certificatesigningrequests", "certificatesigningrequests/approval"], "verbs": ["get", "list", "update"]}]});
    assert!(apply(&s, role).0);
    s.kubectl_ok(&["create", "clusterrolebinding", "carol-csr", "--clusterrole=csr-approver", "--user=carol"]);
    let carol = |args: &[&str]| out(&s.kubectl_with_token("carol-token", args));
    let approve = || {
        tests::poll_until(std::time::Duration::from_secs(5), || {
            let (ok, stdout, stderr) = carol(&["certificate", "approve", "team"]);
            (ok || stderr.contains("signerName")).then_some((ok, stdout, stderr))
        })
        .expect("RBAC took effect")
    };
    let (ok, _, stderr) = approve();
    assert!(!ok);
    assert!(
        stderr.contains("certificatesigningrequests.certificates.k8s.io \"team\" is forbidden: user not permitted to approve requests with signerName \"example.com/team\""),
        "{stderr}"
    );

    // `approve` on the signer's domain is enough.
    let signers = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "team-signer"},
        "rules": [{"apiGroups": ["certificates.k8s.io"], "resources": ["signers"], "resourceNames": ["example.com/*"], "verbs": ["approve"]}]});
    assert!(apply(&s, signers).0);
    s.kubectl_ok(&["create", "clusterrolebinding", "carol-signer", "--clusterrole=team-signer", "--user=carol"]);
    let approved = tests::poll_until(std::time::Duration::from_secs(5), || {
        carol(&["certificate", "approve", "team"]).0.then_some(())
    });
    assert!(approved.is_some(), "approved once carol may approve for the signer");
    let conditions = get(&s, &["csr", "team"])["status"]["conditions"].clone();
    assert_eq!(conditions[0]["type"], "Approved");
}

#[actix_web::test]
async fn disabled_plugins_leave_objects_as_sent() {
    let s = TestServer::start_with(&["--disable-admission-plugins=DefaultTolerationSeconds,Priority"]);
    let (ok, _, stderr) = apply(&s, pod("bare", json!({})));
    assert!(ok, "{stderr}");
    let bare = get(&s, &["pod", "bare"]);
    assert!(bare["spec"].get("tolerations").is_none(), "{}", bare["spec"]);
    assert!(bare["spec"].get("priority").is_none(), "{}", bare["spec"]);
}
