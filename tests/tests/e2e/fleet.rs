//! The local fleet of `deploy/fleet.sh`, started and stopped with one command each: a 3-member
//! etcd cluster, a churn etcd with its storage stage process, two gateway replicas and HAProxy.
//! kubectl writes and Python clients watch through the balancer while one gateway replica is
//! killed and restarted and the other is stopped gracefully and restarted; no acknowledged write
//! and no watch event is lost, compared with etcd's own record of the keys.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::Value;

/// Ports below the ephemeral range, for this test only.
const PORT_BASE: u16 = 21000;

struct Fleet {
    dir: tempfile::TempDir,
}

impl Fleet {
    fn script() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/fleet.sh")
    }

    fn run(&self, args: &[&str]) -> Output {
        Command::new(Self::script())
            .args(args)
            .env("FLEET_DIR", self.dir.path())
            .env("FLEET_GATEWAYS", "2")
            .env("FLEET_PORT_BASE", PORT_BASE.to_string())
            .env("APISERVER_BIN", tests::apiserver_bin())
            .output()
            .expect("run deploy/fleet.sh")
    }

    fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(
            out.status.success(),
            "fleet.sh {args:?}: {}\n{}\n{}",
            String::from_utf8_lossy(&out.stderr),
            String::from_utf8_lossy(&out.stdout),
            self.logs()
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn logs(&self) -> String {
        let mut all = String::new();
        for name in ["gateway-1", "gateway-2", "stage-churn", "haproxy"] {
            let text = std::fs::read_to_string(self.dir.path().join(format!("logs/{name}.log"))).unwrap_or_default();
            let lines: Vec<&str> = text.lines().collect();
            all.push_str(&format!("--- {name}\n{}\n", lines[lines.len().saturating_sub(15)..].join("\n")));
        }
        all
    }

    fn kubeconfig(&self) -> PathBuf {
        self.dir.path().join("admin.kubeconfig")
    }

    fn kubectl(&self, args: &[&str]) -> Output {
        Command::new(tests::kubectl_bin()).args(args).env("KUBECONFIG", self.kubeconfig()).output().unwrap()
    }

    fn etcd_endpoints(&self) -> String {
        (1..=3).map(|i| format!("http://127.0.0.1:{}", PORT_BASE + i)).collect::<Vec<_>>().join(",")
    }
}

impl Drop for Fleet {
    fn drop(&mut self) {
        let _ = self.run(&["down"]);
    }
}

/// Watches ConfigMaps of `ha` from a resourceVersion, re-watching from the last one it saw
/// whenever its connection ends, until it sees `stop`; one JSON line per event.
const WATCHER: &str = r#"
import json, sys, time
from kubernetes import client, config, watch
config.load_kube_config(sys.argv[1])
v1 = client.CoreV1Api()
rv = sys.argv[2]
done = False
while not done:
    try:
        for ev in watch.Watch().stream(v1.list_namespaced_config_map, "ha", resource_version=rv, timeout_seconds=120):
            if ev["type"] == "ERROR":
                print(json.dumps({"type": "ERROR", "object": str(ev["raw_object"])}), flush=True)
                sys.exit(1)
            o = ev["object"]
            rv = o.metadata.resource_version
            print(json.dumps({"type": ev["type"], "name": o.metadata.name, "rv": int(rv)}), flush=True)
            if o.metadata.name == "stop":
                done = True
                break
    except Exception as e:
        print(json.dumps({"type": "RECONNECT", "error": str(e)[:300]}), flush=True)
        time.sleep(0.2)
"#;

fn start_watcher(kubeconfig: &Path, rv: &str) -> (Child, mpsc::Receiver<Value>) {
    let mut child = Command::new(tests::python_bin())
        .args(["-u", "-c", WATCHER])
        .arg(kubeconfig)
        .arg(rv)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let rx = tests::json_lines(&mut child);
    (child, rx)
}

/// `/registry/configmaps/ha/<name>` keys with their mod revisions, as etcd has them.
fn etcd_configmaps(endpoints: &str) -> Vec<(String, u64)> {
    let out = Command::new("etcdctl")
        .env("ETCDCTL_API", "3")
        .args(["--endpoints", endpoints, "get", "/registry/configmaps/ha/", "--prefix", "-w", "json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "etcdctl: {}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let b64 = |s: &str| {
        use base64::Engine;
        String::from_utf8(base64::engine::general_purpose::STANDARD.decode(s).unwrap()).unwrap()
    };
    let mut keys: Vec<(String, u64)> = v["kvs"]
        .as_array()
        .map(|kvs| {
            kvs.iter()
                .map(|kv| {
                    let key = b64(kv["key"].as_str().unwrap());
                    (key.rsplit('/').next().unwrap().to_string(), kv["mod_revision"].as_u64().unwrap())
                })
                .collect()
        })
        .unwrap_or_default();
    keys.sort_by_key(|k| k.1);
    keys
}

#[test]
fn a_gateway_replica_dies_behind_the_balancer_and_nothing_is_lost() {
    let fleet = Fleet { dir: tempfile::tempdir().unwrap() };
    let up = fleet.ok(&["up"]);
    assert!(up.contains("2 gateways behind https://127.0.0.1:21100"), "{up}");
    let status = fleet.ok(&["status"]);
    for name in ["etcd-1", "etcd-2", "etcd-3", "etcd-churn", "stage-churn", "gateway-1", "gateway-2", "haproxy"] {
        assert!(status.contains(&format!("{name:<14} running")), "{name} in {status}");
    }

    let created = fleet.kubectl(&["create", "namespace", "ha", "-o", "jsonpath={.metadata.resourceVersion}"]);
    assert!(created.status.success(), "{}", String::from_utf8_lossy(&created.stderr));
    let rv = String::from_utf8_lossy(&created.stdout).into_owned();
    // Two watchers started one after the other: round robin puts them on different replicas, so
    // one of them is on the replica that dies.
    let watchers = [start_watcher(&fleet.kubeconfig(), &rv), start_watcher(&fleet.kubeconfig(), &rv)];
    std::thread::sleep(Duration::from_secs(2));

    let mut acknowledged = Vec::new();
    for i in 0..48 {
        if i == 12 {
            fleet.ok(&["kill", "gateway-1"]);
        }
        if i == 24 {
            fleet.ok(&["up"]);
        }
        // A graceful stop: readyz fails, the balancer moves new connections away during the
        // shutdown delay, then the replica drains and ends its watches, which re-watch elsewhere.
        if i == 32 {
            fleet.ok(&["stop", "gateway-2"]);
        }
        if i == 40 {
            fleet.ok(&["up"]);
        }
        let name = format!("cm-{i}");
        let out = fleet.kubectl(&["create", "configmap", &name, "-n", "ha", "--from-literal", &format!("i={i}")]);
        if out.status.success() {
            acknowledged.push(name);
        }
    }
    assert!(acknowledged.len() >= 46, "the balancer sends writes to the live replica: {acknowledged:?}");
    let out = fleet.kubectl(&["create", "configmap", "stop", "-n", "ha"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));

    // etcd's record: every acknowledged write is there.
    let stored = etcd_configmaps(&fleet.etcd_endpoints());
    let stored_names: Vec<&str> = stored.iter().map(|(n, _)| n.as_str()).collect();
    for name in &acknowledged {
        assert!(stored_names.contains(&name.as_str()), "acknowledged {name} is in etcd: {stored_names:?}");
    }

    // Each watcher saw exactly etcd's keys, once each, at their revisions, in order.
    let mut reconnected = 0;
    for (n, (mut child, rx)) in watchers.into_iter().enumerate() {
        let mut seen: Vec<(String, u64)> = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(60);
        while seen.last().is_none_or(|(name, _)| name != "stop") {
            let left = deadline.saturating_duration_since(Instant::now());
            let e = rx.recv_timeout(left).unwrap_or_else(|_| panic!("watcher {n} saw {seen:?}\n{}", fleet.logs()));
            match e["type"].as_str() {
                Some("ADDED") => seen.push((e["name"].as_str().unwrap().into(), e["rv"].as_u64().unwrap())),
                Some("RECONNECT") => reconnected += 1,
                other => panic!("watcher {n}: unexpected {other:?}: {e}"),
            }
        }
        let _ = child.kill();
        assert_eq!(seen, stored, "watcher {n} against etcd");
    }
    assert!(reconnected >= 1, "the watcher on the killed replica reconnected through the balancer");
    let status = fleet.ok(&["status"]);
    assert!(status.contains("gateway-1      running") && status.contains("gateway-2      running"), "{status}");
    fleet.ok(&["down"]);
    assert!(fleet.run(&["status"]).status.code() != Some(0));
}
