//! The local fleet of `deploy/fleet.sh`, started and stopped with one command each: a 3-member
//! etcd cluster, a churn etcd with its storage stage process, two gateway replicas and HAProxy.
//! kubectl writes and Python clients watch through the balancer while one gateway replica is
//! killed and restarted and the other is stopped gracefully and restarted; no acknowledged write
//! and no watch event is lost, compared with etcd's own record of the keys. And the fault run:
//! a steady load while the etcd leader, a gateway and the stage process are killed in turn.

use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::Value;
use tests::fleet::{LocalFleet, etcd_keys};
use tests::load::faults::{self, FaultOptions};

fn kubectl(fleet: &LocalFleet, args: &[&str]) -> Output {
    Command::new(tests::kubectl_bin()).args(args).env("KUBECONFIG", fleet.kubeconfig()).output().unwrap()
}

/// Ports below the ephemeral range, for this file's tests only (one fleet each).
const PORT_BASE: u16 = 21000;
const FAULT_RUN_PORT_BASE: u16 = 22000;

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

#[test]
fn a_gateway_replica_dies_behind_the_balancer_and_nothing_is_lost() {
    let fleet = LocalFleet::new(PORT_BASE, 2);
    let up = fleet.ok(&["up"]);
    assert!(up.contains("2 gateways behind https://127.0.0.1:21100"), "{up}");
    let status = fleet.ok(&["status"]);
    for name in ["etcd-1", "etcd-2", "etcd-3", "etcd-churn", "stage-churn", "gateway-1", "gateway-2", "haproxy"] {
        assert!(status.contains(&format!("{name:<14} running")), "{name} in {status}");
    }

    let created = kubectl(&fleet, &["create", "namespace", "ha", "-o", "jsonpath={.metadata.resourceVersion}"]);
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
        let out = kubectl(&fleet, &["create", "configmap", &name, "-n", "ha", "--from-literal", &format!("i={i}")]);
        if out.status.success() {
            acknowledged.push(name);
        }
    }
    assert!(acknowledged.len() >= 46, "the balancer sends writes to the live replica: {acknowledged:?}");
    let out = kubectl(&fleet, &["create", "configmap", "stop", "-n", "ha"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));

    // etcd's record: every acknowledged write is there.
    let stored = etcd_keys(&fleet.etcd_endpoints(), "/registry/configmaps/ha/").unwrap();
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

#[test]
fn the_fault_run_loses_nothing_and_recovers_from_each_kill() {
    let out = tempfile::tempdir().unwrap();
    let options = FaultOptions {
        port_base: FAULT_RUN_PORT_BASE,
        rate: 30.0,
        settle: Duration::from_secs(4),
        down_for: Duration::from_secs(3),
        ..FaultOptions::new(out.path())
    };
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let report = runtime.block_on(faults::run(&options)).expect("the fault run");
    let table = faults::table(&report);

    // Nothing acknowledged is lost, and every watcher saw exactly etcd's record.
    assert!(report.lossless(), "{table}");
    assert!(report.acknowledged.values().all(|n| *n > 100), "{table}");
    let [etcd, gateway, stage] = &report.faults[..] else { panic!("three faults: {table}") };
    let during = |f: &faults::FaultRow, r: &str| f.resources.iter().find(|x| x.resource == r).cloned().unwrap();
    let down_for = options.down_for.as_secs_f64();

    // The etcd leader: the other members elect a leader and serve. Only writes sent before the
    // election ended can fail (in flight on the lost member, or proposals it dropped, which etcd
    // leaves unanswered until the request timeout): 500 naming the backend, and none sent once
    // the cluster serves again, long before the member returns.
    assert_eq!(etcd.role, "etcd leader");
    for resource in ["configmaps", "events"] {
        let r = during(etcd, resource);
        assert!(r.errors_by_code.keys().all(|c| c == "500"), "{resource} during {}: {table}", etcd.process);
        assert!(r.errors as f64 <= options.rate * 1.5, "{resource} during {}: {table}", etcd.process);
        let before_return = down_for - 0.5;
        assert!(r.last_failure_sent_s.is_none_or(|t| t < before_return), "{resource} during {}: {table}", etcd.process);
    }
    // A gateway: the balancer sends new connections to the other; only requests in flight on
    // the lost one (or sent as it died) fail.
    for resource in ["configmaps", "events"] {
        let r = during(gateway, resource);
        assert!(r.last_failure_sent_s.is_none_or(|t| t < 0.5), "{resource} during {}: {table}", gateway.process);
        assert!(r.errors_by_code.keys().all(|c| c == "no answer"), "{resource} during {}: {table}", gateway.process);
    }
    // The stage process: its resource fails fast with 503 naming the stage until it returns;
    // the other shard does not notice.
    let events = during(stage, "events");
    assert!(events.errors_by_code.keys().all(|c| c == "503"), "{table}");
    assert!(events.error_examples["503"].contains("storage@churn"), "{table}");
    let last = events.last_failure_sent_s.expect("events fail while the stage process is down");
    assert!(last > down_for - 1.0 && last < stage.back_after_s + 2.0, "failing until it returns: {table}");
    assert!(events.latency.p99_ms < 1_000.0, "failing fast: {table}");
    assert_eq!(during(stage, "configmaps").errors, 0, "{table}");

    for file in ["faults.json", "faults-latency.svg", "faults-errors.svg"] {
        assert!(out.path().join(file).is_file(), "{file}");
    }
    println!("{table}");
}
