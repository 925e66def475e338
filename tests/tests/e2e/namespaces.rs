//! Namespace lifecycle as kubectl users meet it.

use tests::TestServer;

#[test]
fn terminating_namespace_refuses_new_content_then_goes_when_emptied() {
    let s = TestServer::start();
    s.kubectl_ok(&["create", "namespace", "doomed"]);
    s.kubectl_ok(&["create", "configmap", "plain", "-n", "doomed"]);
    // An object with its own finalizer keeps the namespace Terminating until it is released.
    let held = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"held","namespace":"doomed","finalizers":["example.com/hold"]}}"#;
    tests::assert_success("create held", &s.kubectl_stdin(&["create", "-f", "-"], held));
    s.kubectl_ok(&["delete", "namespace", "doomed", "--wait=false"]);
    let ns = s.kubectl_ok(&[
        "get",
        "namespace",
        "doomed",
        "-o",
        "jsonpath={.status.phase} {.spec.finalizers[0]} {.metadata.deletionTimestamp}",
    ]);
    let parts: Vec<&str> = ns.split_whitespace().collect();
    assert_eq!(&parts[..2], ["Terminating", "kubernetes"], "{ns}");
    assert_eq!(parts.len(), 3, "deletionTimestamp set: {ns}");

    let out = s.kubectl(&["create", "configmap", "late", "-n", "doomed", "--from-literal=a=b"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("configmaps \"late\" is forbidden: unable to create new content in namespace doomed because it is being terminated"),
        "{err}"
    );

    // The finalizer deleted the rest of the content; releasing the last object lets it all go.
    s.kubectl_ok(&["wait", "--for=delete", "configmap/plain", "-n", "doomed", "--timeout=20s"]);
    s.kubectl_ok(&[
        "patch",
        "configmap",
        "held",
        "-n",
        "doomed",
        "--type=merge",
        "-p",
        r#"{"metadata":{"finalizers":null}}"#,
    ]);
    s.kubectl_ok(&["wait", "--for=delete", "namespace/doomed", "--timeout=30s"]);

    // Deleting an empty namespace completes, as kubectl waits for it to.
    s.kubectl_ok(&["create", "namespace", "short-lived"]);
    s.kubectl_ok(&["delete", "namespace", "short-lived", "--timeout=30s"]);

    let out = s.kubectl(&["create", "configmap", "lost", "-n", "nowhere", "--from-literal=a=b"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("namespaces \"nowhere\" not found"), "{err}");

    let out = s.kubectl(&["delete", "namespace", "kube-system", "--wait=false"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("this namespace may not be deleted"));
}
