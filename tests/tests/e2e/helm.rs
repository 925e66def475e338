//! helm 3 against the server: the chart `helm create` makes, installed, upgraded, rolled back
//! and uninstalled, with its Secret release store (written in protobuf) and its ConfigMap one.

use tests::{TestServer, assert_success};

fn helm_ok(s: &TestServer, args: &[&str], env: &[(&str, &str)]) -> String {
    let out = s.helm(args, env);
    assert!(
        out.status.success(),
        "helm {args:?} failed:\nstdout: {}\nstderr: {}\nserver log:\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
        s.log_tail()
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn replicas(s: &TestServer, deployment: &str) -> String {
    s.kubectl_ok(&["get", "deployment", deployment, "-o", "jsonpath={.spec.replicas}"])
}

#[test]
fn the_created_chart_installs_upgrades_rolls_back_and_uninstalls() {
    let s = TestServer::start();
    let dir = tempfile::tempdir().unwrap();
    let chart = dir.path().join("web");
    let chart = chart.to_str().unwrap();
    helm_ok(&s, &["create", chart], &[]);

    let out = helm_ok(&s, &["install", "shop", chart, "--wait=false"], &[]);
    assert!(out.contains("STATUS: deployed"), "{out}");
    // The release record: a Secret helm wrote in protobuf, typed as helm types it.
    let ty = s.kubectl_ok(&["get", "secret", "sh.helm.release.v1.shop.v1", "-o", "jsonpath={.type}"]);
    assert_eq!(ty, "helm.sh/release.v1");
    assert_eq!(replicas(&s, "shop-web"), "1");
    let svc = s.kubectl_ok(&["get", "service", "shop-web", "-o", "jsonpath={.spec.ports[0].port}"]);
    assert_eq!(svc, "80");
    s.kubectl_ok(&["get", "serviceaccount", "shop-web"]);

    helm_ok(&s, &["upgrade", "shop", chart, "--set", "replicaCount=3"], &[]);
    assert_eq!(replicas(&s, "shop-web"), "3");
    helm_ok(&s, &["rollback", "shop", "1"], &[]);
    assert_eq!(replicas(&s, "shop-web"), "1");
    let history = helm_ok(&s, &["history", "shop", "-o", "json"], &[]);
    let history: serde_json::Value = serde_json::from_str(&history).unwrap();
    let seen: Vec<(i64, &str, &str)> = history
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["revision"].as_i64().unwrap(), r["status"].as_str().unwrap(), r["description"].as_str().unwrap()))
        .collect();
    assert_eq!(
        seen,
        [
            (1, "superseded", "Install complete"),
            (2, "superseded", "Upgrade complete"),
            (3, "deployed", "Rollback to 1")
        ]
    );
    let list = helm_ok(&s, &["list", "-o", "json"], &[]);
    assert!(list.contains("\"name\":\"shop\"") && list.contains("\"status\":\"deployed\""), "{list}");

    helm_ok(&s, &["uninstall", "shop"], &[]);
    let left = s.kubectl(&["get", "deployment", "shop-web"]);
    assert!(!left.status.success());
    let secrets = s.kubectl_ok(&["get", "secrets", "-l", "owner=helm", "-o", "name"]);
    assert_eq!(secrets.trim(), "");

    // The ConfigMap release store.
    let driver = [("HELM_DRIVER", "configmap")];
    helm_ok(&s, &["install", "cm", chart], &driver);
    let owner =
        s.kubectl_ok(&["get", "configmap", "sh.helm.release.v1.cm.v1", "-o", "jsonpath={.metadata.labels.owner}"]);
    assert_eq!(owner, "helm");
    let status = helm_ok(&s, &["status", "cm", "-o", "json"], &driver);
    assert!(status.contains("\"status\":\"deployed\""), "{status}");
    helm_ok(&s, &["uninstall", "cm"], &driver);
    assert_success("kubectl get configmaps", &s.kubectl(&["get", "configmaps"]));
}
