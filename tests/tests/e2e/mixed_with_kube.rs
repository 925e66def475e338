//! A reference kube-apiserver and this server on one etcd, both running:
//! - the bootstrap objects both keep (RBAC roles, PriorityClasses, FlowSchemas, priority
//!   levels) are left as kube bootstrapped them when this server starts beside it, but for the
//!   rules kube-apiserver 1.30 would add back (as this server does), and stay put while both run;
//! - the Python client writes through one and reads through the other;
//! - a service-account token either one issues is accepted by the other, both signing with the
//!   same key file as kubeadm writes it (PKCS#1).
//!
//! Skipped when no kube-apiserver is built (`KUBE_APISERVER`, else the path
//! `../shared/tools/build-kube.sh` builds to); `deploy/mixed-with-kube.sh` has more checks.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use storage::etcd::testing::EtcdProcess;
use tests::TestServer;

fn kube_apiserver() -> Option<PathBuf> {
    let path = std::env::var_os("KUBE_APISERVER")
        .map_or_else(|| PathBuf::from("/tmp/kube-ref/bin/kube-apiserver"), PathBuf::from);
    path.exists().then_some(path)
}

/// kube-apiserver, killed when dropped.
struct Kube(Child);

impl Drop for Kube {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// kubectl against `server` with `token`, no kubeconfig.
fn kubectl_as(server: &str, token: &str, args: &[&str]) -> std::process::Output {
    Command::new(tests::kubectl_bin())
        .args(["--server", server, "--token", token, "--insecure-skip-tls-verify=true"])
        .args(args)
        .env("KUBECONFIG", "/dev/null")
        .output()
        .expect("run kubectl")
}

fn ok(out: std::process::Output, what: &str) -> String {
    assert!(out.status.success(), "{what}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// Every bootstrap object's `kind/name` and resourceVersion, as `server` lists them.
fn bootstrap_versions(server: &str) -> Vec<String> {
    let mut out = Vec::new();
    for resource in [
        "clusterroles",
        "clusterrolebindings",
        "roles",
        "rolebindings",
        "priorityclasses",
        "flowschemas",
        "prioritylevelconfigurations",
    ] {
        let listed = ok(
            kubectl_as(
                server,
                ADMIN_TOKEN,
                &[
                    "get",
                    resource,
                    "-A",
                    "-o",
                    r#"jsonpath={range .items[*]}{.metadata.namespace}/{.metadata.name}={.metadata.resourceVersion}{"\n"}{end}"#,
                ],
            ),
            resource,
        );
        out.extend(listed.lines().map(|l| format!("{resource} {l}")));
    }
    out
}

const ADMIN_TOKEN: &str = "mixed-admin";

/// The Python client through both servers: what one writes the other reads and patches.
const PYTHON: &str = r#"
import sys
from kubernetes import client, config
ours = client.CoreV1Api(config.new_client_from_config(sys.argv[1]))
kube = client.CoreV1Api(config.new_client_from_config(sys.argv[2]))
ours.create_namespaced_config_map("default", client.V1ConfigMap(metadata=client.V1ObjectMeta(name="py"), data={"a": "1"}))
got = kube.read_namespaced_config_map("py", "default")
kube.patch_namespaced_config_map("py", "default", {"data": {"b": "2"}})
again = ours.read_namespaced_config_map("py", "default")
print(got.data["a"], sorted(again.data.items()), again.metadata.resource_version != got.metadata.resource_version)
"#;

/// A kubeconfig for `server` with the admin token.
fn kubeconfig(dir: &Path, server: &str) -> PathBuf {
    let path = dir.join("kube.kubeconfig");
    let text = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {{server: '{server}', insecure-skip-tls-verify: true}}\n\
         users:\n- name: a\n  user: {{token: {ADMIN_TOKEN}}}\ncontexts:\n- name: c\n  context: {{cluster: c, user: a}}\n\
         current-context: c\n"
    );
    std::fs::write(&path, text).unwrap();
    path
}

/// Every ClusterRole's rules, by name, as `server` lists them.
fn cluster_roles(server: &str) -> std::collections::HashMap<String, Vec<serde_json::Value>> {
    let listed = ok(kubectl_as(server, ADMIN_TOKEN, &["get", "clusterroles", "-o", "json"]), "clusterroles");
    let listed: serde_json::Value = serde_json::from_str(&listed).unwrap();
    let items = listed["items"].as_array().unwrap().iter();
    items
        .map(|r| {
            let rules = r["rules"].as_array().cloned().unwrap_or_default();
            (r["metadata"]["name"].as_str().unwrap().to_string(), rules)
        })
        .collect()
}

fn start_kube(bin: &Path, dir: &Path, common: &[String], port: u16) -> Kube {
    let log = std::fs::File::create(dir.join("kube.log")).unwrap();
    let child = Command::new(bin)
        .args(common)
        .args(["--secure-port", &port.to_string(), "--cert-dir"])
        .arg(dir.join("certs"))
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .expect("start kube-apiserver");
    Kube(child)
}

#[test]
fn bootstrap_converges_and_tokens_cross_with_kube_apiserver_on_one_etcd() {
    let Some(kube_bin) = kube_apiserver() else {
        eprintln!("skipped: no kube-apiserver (KUBE_APISERVER, or ../shared/tools/build-kube.sh)");
        return;
    };
    let etcd = EtcdProcess::start();
    let dir = tempfile::tempdir().unwrap();
    let key = dir.path().join("sa.key");
    // kubeadm's sa.key: PKCS#1 (`RSA PRIVATE KEY`).
    let made = Command::new("openssl").args(["genrsa", "-traditional", "-out"]).arg(&key).arg("2048").output();
    assert!(made.is_ok_and(|o| o.status.success()), "openssl genrsa -traditional");
    assert!(std::fs::read_to_string(&key).unwrap().starts_with("-----BEGIN RSA PRIVATE KEY-----"));
    let tokens = dir.path().join("tokens.csv");
    std::fs::write(&tokens, format!("{ADMIN_TOKEN},admin,uid-admin,\"system:masters\"\n")).unwrap();
    let key_path = key.display().to_string();
    let common: Vec<String> = [
        "--etcd-servers",
        etcd.endpoint(),
        "--bind-address",
        "127.0.0.1",
        "--authorization-mode",
        "RBAC",
        "--service-account-issuer",
        "https://kubernetes.default.svc",
        "--service-account-key-file",
        &key_path,
        "--service-account-signing-key-file",
        &key_path,
        "--service-cluster-ip-range",
        "10.0.0.0/20",
    ]
    .iter()
    .map(|s| s.to_string())
    .chain(["--token-auth-file".to_string(), tokens.display().to_string()])
    .collect();

    // kube first, as in a cluster being adopted; then this server beside it.
    let kube_port = tests::free_port();
    let _kube = start_kube(&kube_bin, dir.path(), &common, kube_port);
    let kube = format!("https://127.0.0.1:{kube_port}");
    let ready = |server: &str| kubectl_as(server, ADMIN_TOKEN, &["get", "--raw", "/readyz"]).status.success();
    assert!(
        tests::poll_until(Duration::from_secs(90), || ready(&kube).then_some(())).is_some(),
        "kube-apiserver is not ready:\n{}",
        std::fs::read_to_string(dir.path().join("kube.log")).unwrap_or_default()
    );
    // What kube bootstrapped, once it has settled.
    std::thread::sleep(Duration::from_secs(5));
    let kubes = bootstrap_versions(&kube);
    let kubes_roles = cluster_roles(&kube);
    // As in a kubeadm cluster, kube-controller-manager aggregates the ClusterRoles (here none
    // runs, so this server's copy is off rather than standing aside for it).
    let mut flags: Vec<&str> =
        common.iter().map(String::as_str).filter(|f| *f != "--bind-address" && *f != "127.0.0.1").collect();
    flags.push("--enable-clusterrole-aggregation=false");
    let s = TestServer::start_with(&flags);
    let ours = s.url("");
    let ours = ours.trim_end_matches('/');
    assert!(tests::poll_until(Duration::from_secs(60), || ready(ours).then_some(())).is_some());

    // Both have bootstrapped: give both their periodic upkeep (this server's APF upkeep runs
    // every 10 s) and then see that nothing is rewritten across two more rounds of it.
    std::thread::sleep(Duration::from_secs(12));
    // (On a loaded machine a round may come late: wait for two looks 6 s apart to agree.)
    let mut before = bootstrap_versions(&kube);
    for _ in 0..15 {
        std::thread::sleep(Duration::from_secs(6));
        let again = bootstrap_versions(&kube);
        if again == before {
            break;
        }
        before = again;
    }
    // This server reconciles the bootstrap roles as kube-apiserver 1.30 does, beside a newer
    // kube as much as alone: rules its version grants that the role lacks are added, none
    // removed. So kube 1.32's roles that dropped a 1.30 rule get it back, and nothing else of
    // what kube bootstrapped is touched.
    let now_roles = cluster_roles(&kube);
    // (Against the 1.32 reference build: `expand-controller` and `persistent-volume-binder`.)
    for line in kubes.iter().filter(|l| !before.contains(l)) {
        let name = line.strip_prefix("clusterroles /").and_then(|l| l.split('=').next());
        let name = name.unwrap_or_else(|| panic!("this server rewrote what kube bootstrapped: {line}"));
        let (was, is) = (&kubes_roles[name], &now_roles[name]);
        let kept = was.iter().all(|rule| is.contains(rule));
        assert!(kept && is.len() > was.len(), "{name}: only rules added, from {was:?} to {is:?}");
        eprintln!("{name}: rules added");
    }
    assert!(before.iter().any(|l| l.starts_with("flowschemas /exempt=")), "{before:?}");
    std::thread::sleep(Duration::from_secs(25));
    let after = bootstrap_versions(&kube);
    let changed: Vec<_> = after.iter().filter(|l| !before.contains(l)).collect();
    assert!(changed.is_empty(), "rewritten while both ran: {changed:?}");
    assert_eq!(bootstrap_versions(ours), after, "both list the same objects at the same versions");

    // The Python client through the pair.
    let out = s.python_code(&s.kubeconfig, PYTHON, &[kubeconfig(dir.path(), &kube).to_str().unwrap()]);
    assert!(out.status.success(), "python: {}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "1 [('a', '1'), ('b', '2')] True");

    // A token from either one is accepted by the other.
    ok(kubectl_as(&kube, ADMIN_TOKEN, &["create", "serviceaccount", "crosser"]), "account");
    let role = ["create", "role", "sa-reader", "--verb=get,list", "--resource=serviceaccounts"];
    ok(kubectl_as(&kube, ADMIN_TOKEN, &role), "role");
    let binding = ["create", "rolebinding", "crosser-reads", "--role=sa-reader", "--serviceaccount=default:crosser"];
    ok(kubectl_as(&kube, ADMIN_TOKEN, &binding), "binding");
    let expected = "system:serviceaccount:default:crosser";
    for (issuer, verifier) in [(&kube[..], ours), (ours, &kube[..])] {
        let token = ok(kubectl_as(issuer, ADMIN_TOKEN, &["create", "token", "crosser"]), "TokenRequest");
        let who = ok(
            kubectl_as(verifier, &token, &["auth", "whoami", "-o", "jsonpath={.status.userInfo.username}"]),
            "whoami",
        );
        assert_eq!(who, expected, "a token of {issuer} at {verifier}");
        ok(kubectl_as(verifier, &token, &["get", "serviceaccounts"]), "a read its Role grants");
        let refused = kubectl_as(verifier, &token, &["create", "configmap", "nope"]);
        let said = String::from_utf8_lossy(&refused.stderr);
        let words = format!(r#"configmaps is forbidden: User "{expected}" cannot create resource "configmaps""#);
        assert!(said.contains(&words), "nothing more, at {verifier}: {said}");
    }
}
