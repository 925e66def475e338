//! Storage stages in processes of their own: events and leases served by one shard process on
//! an etcd of their own, behind two gateway replicas on the main etcd. kubectl and the Python
//! client work through either replica; killing the shard process makes its resources answer
//! 503 naming the stage while everything else keeps working, and restarting it recovers every
//! watcher without a lost event.

use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::Value;
use storage::etcd::testing::EtcdProcess;
use tests::fleet::{Deployment, ShardSpec, StageProcess};
use tests::{TestServer, assert_success};

fn etcd_keys(endpoint: &str, prefix: &str) -> Vec<String> {
    let bin = ["/usr/bin/etcdctl", "/opt/realtools/bin/etcdctl"]
        .into_iter()
        .find(|p| std::path::Path::new(p).exists())
        .expect("etcdctl: run deploy/install-tools.sh (Debian etcd-client)");
    let out = Command::new(bin)
        .env("ETCDCTL_API", "3")
        .args(["--endpoints", endpoint, "get", prefix, "--prefix", "--keys-only"])
        .output()
        .unwrap();
    assert!(out.status.success(), "etcdctl: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).lines().filter(|l| !l.is_empty()).map(String::from).collect()
}

fn event(name: &str) -> String {
    format!(
        r#"{{"apiVersion":"v1","kind":"Event","metadata":{{"name":"{name}","namespace":"default"}},
        "involvedObject":{{"kind":"Pod","name":"p","namespace":"default"}},"reason":"Tested","message":"{name}","type":"Normal"}}"#
    )
}

/// A raw watch through `server`, its lines sent to the returned receiver.
fn watch(server: &TestServer, path: &str) -> (std::process::Child, mpsc::Receiver<Value>) {
    let mut child = Command::new(tests::kubectl_bin())
        .args(["get", "--raw", path])
        .env("KUBECONFIG", &server.kubeconfig)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let rx = tests::json_lines(&mut child);
    (child, rx)
}

fn next_event(rx: &mpsc::Receiver<Value>, within: Duration) -> Value {
    rx.recv_timeout(within).unwrap_or_else(|_| panic!("no watch event within {within:?}"))
}

fn admin_actors(server: &TestServer) -> Value {
    let out = Command::new("curl").args(["-s", &server.admin_url("/actors")]).output().unwrap();
    serde_json::from_slice(&out.stdout).unwrap()
}

const PYTHON: &str = r#"
import sys
from kubernetes import client, config
config.load_kube_config(sys.argv[1])
v1 = client.CoordinationV1Api(client.ApiClient())
lease = client.V1Lease(metadata=client.V1ObjectMeta(name=sys.argv[2]), spec=client.V1LeaseSpec(holder_identity="py"))
v1.create_namespaced_lease("default", lease)
got = v1.read_namespaced_lease(sys.argv[2], "default")
events = client.CoreV1Api(client.ApiClient()).list_namespaced_event("default")
print(got.spec.holder_identity, sorted(e.metadata.name for e in events.items))
"#;

/// Creates the event `name` through `server` once its probe has found the restarted `stage`:
/// each gateway finds it on its own probe's schedule, within seconds. A retry after an answer
/// lost on the way back finds the event made (AlreadyExists), which counts.
fn create_once_back(server: &TestServer, name: &str, stage: &StageProcess) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let out = server.kubectl_stdin(&["create", "-f", "-"], &event(name));
        let err = String::from_utf8_lossy(&out.stderr);
        if out.status.success() || err.contains("AlreadyExists") {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the shard never came back for {name}: {err}\nstage log:\n{}\ngateway log:\n{}",
            stage.log_tail(),
            server.log_tail()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn events_and_leases_run_in_their_own_stage_process_behind_two_gateways() {
    let main_etcd = EtcdProcess::start();
    let churn_etcd = EtcdProcess::start();
    let shard = ShardSpec::new("churn", &["events", "leases.coordination.k8s.io"]);
    let deployment = Deployment::new(std::slice::from_ref(&shard));
    let overrides = format!("/events#{0},coordination.k8s.io/leases#{0}", churn_etcd.endpoint());
    let mut stage = StageProcess::start(
        &deployment,
        "churn",
        &["--storage-backend", "etcd3", "--etcd-servers", main_etcd.endpoint(), "--etcd-servers-overrides", &overrides],
    );
    let mut gateway_flags: Vec<String> = deployment.flags();
    gateway_flags.extend(["--storage-backend", "etcd3", "--etcd-servers", main_etcd.endpoint()].map(String::from));
    let flags: Vec<&str> = gateway_flags.iter().map(String::as_str).collect();
    // The gateways log when the stage goes and comes back, for a failure's report.
    let a = TestServer::start_logging("warn,actors::remote=info", &flags);
    let b = TestServer::start_logging("warn,actors::remote=info", &flags);

    // kubectl through one replica, read at once through the other; the event lives in the
    // shard's etcd only.
    assert_success("create e1 through a", &a.kubectl_stdin(&["create", "-f", "-"], &event("e1")));
    a.kubectl_ok(&["create", "configmap", "local"]);
    assert_eq!(b.kubectl_ok(&["get", "events", "-o", "jsonpath={.items[*].metadata.name}"]), "e1");
    assert_eq!(etcd_keys(churn_etcd.endpoint(), "/registry/events/"), ["/registry/events/default/e1"]);
    // The replicas' controller election runs through the shard too: its Lease is a lease (the
    // host's identity Lease may be there beside it).
    let leases = etcd_keys(churn_etcd.endpoint(), "/registry/leases/");
    assert!(leases.iter().any(|k| k == "/registry/leases/kube-system/apiserver-controllers"), "{leases:?}");
    assert!(etcd_keys(main_etcd.endpoint(), "/registry/leases/").is_empty());
    assert!(etcd_keys(main_etcd.endpoint(), "/registry/events/").is_empty());
    assert_eq!(etcd_keys(main_etcd.endpoint(), "/registry/configmaps/default/local").len(), 1);

    // The Python client through the other replica: a lease written, events listed.
    let out = b.python_code(&b.kubeconfig, PYTHON, &["held"]);
    assert!(out.status.success(), "python: {}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "py ['e1']");
    assert_eq!(a.kubectl_ok(&["get", "lease", "held", "-o", "jsonpath={.spec.holderIdentity}"]), "py");
    let listed = admin_actors(&a);
    assert_eq!(listed["stageProcesses"][0]["name"], "churn");
    assert_eq!(listed["stageProcesses"][0]["up"], true, "{listed}");
    assert!(
        listed["actors"]
            .as_array()
            .unwrap()
            .iter()
            .any(|x| x["stage"] == "storage@churn" && x["enqueued"].as_u64() > Some(0)),
        "the remote stage is metered by the gateway: {listed}"
    );
    // And the stage process's own actors, as it meters them: its storage mailbox admitted the
    // writes of both replicas.
    assert!(
        listed["stageProcesses"][0]["actors"]
            .as_array()
            .expect("the stage process's actors")
            .iter()
            .any(|x| x["name"] == "storage" && x["enqueued"].as_u64() >= Some(2)),
        "{listed}"
    );

    // Watchers on both replicas, from e1's resourceVersion.
    let rv = a.kubectl_ok(&["get", "event", "e1", "-o", "jsonpath={.metadata.resourceVersion}"]);
    let path = format!("/api/v1/namespaces/default/events?watch=1&resourceVersion={rv}");
    let (mut watch_a, events_a) = watch(&a, &path);
    let (mut watch_b, events_b) = watch(&b, &path);
    std::thread::sleep(Duration::from_millis(500));
    assert_success("create e2", &a.kubectl_stdin(&["create", "-f", "-"], &event("e2")));
    for rx in [&events_a, &events_b] {
        let e = next_event(rx, Duration::from_secs(10));
        assert_eq!((e["type"].as_str(), e["object"]["metadata"]["name"].as_str()), (Some("ADDED"), Some("e2")));
    }

    // The shard process dies: its resources answer 503 naming the stage, on both replicas;
    // everything else works.
    stage.kill9();
    let started = Instant::now();
    for (who, server) in [("a", &a), ("b", &b)] {
        let out = server.kubectl_stdin(&["create", "-f", "-", "--request-timeout=10s"], &event("lost"));
        assert!(!out.status.success(), "{who}: a write to the dead shard fails");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("storage@churn stage is unreachable"), "{who}: the error names the stage: {err}");
        let answer = server.kubectl(&["get", "--raw", "/apis/coordination.k8s.io/v1/namespaces/default/leases"]);
        assert!(!answer.status.success());
        let err = String::from_utf8_lossy(&answer.stderr);
        assert!(err.contains("503") || err.contains("ServiceUnavailable"), "{who}: a consistent list is 503: {err}");
        assert!(err.contains("storage@churn"), "{who}: {err}");
        server.kubectl_ok(&["create", "configmap", &format!("during-{who}")]);
        assert_eq!(server.kubectl_ok(&["get", "configmap", "local", "-o", "jsonpath={.metadata.name}"]), "local");
    }
    assert!(started.elapsed() < Duration::from_secs(15), "failures are fast: {:?}", started.elapsed());
    let listed = admin_actors(&a);
    assert_eq!(listed["stageProcesses"][0]["up"], false, "{listed}");
    assert!(listed["stageProcesses"][0]["lastError"].as_str().is_some(), "{listed}");

    // The shard returns: writes flow again as soon as the gateways' probes find it, and every
    // watcher resumes where it was, without a gap or a repeat.
    stage.start_again();
    create_once_back(&a, "e3", &stage);
    create_once_back(&b, "e4", &stage);
    for (who, rx) in [("a", &events_a), ("b", &events_b)] {
        let names: Vec<String> = (0..2)
            .map(|_| next_event(rx, Duration::from_secs(20)))
            .map(|e| format!("{} {}", e["type"].as_str().unwrap(), e["object"]["metadata"]["name"].as_str().unwrap()))
            .collect();
        assert_eq!(names, ["ADDED e3", "ADDED e4"], "watcher on {who}");
    }
    assert_eq!(a.kubectl_ok(&["get", "events", "-o", "jsonpath={.items[*].metadata.name}"]), "e1 e2 e3 e4");
    let _ = watch_a.kill();
    let _ = watch_b.kill();
}
