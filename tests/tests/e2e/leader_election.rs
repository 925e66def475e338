//! Two replicas on one etcd: both serve, but the built-in controllers run on the one holding
//! the `kube-system/apiserver-controllers` Lease. The other takes the Lease over when the
//! holder dies (after the lease duration) or shuts down (at once: the Lease is released).

use std::time::{Duration, Instant};

use serde_json::Value;
use storage::etcd::testing::EtcdProcess;
use tests::TestServer;

/// The controllers' Lease as `s` reads it.
fn lease(s: &TestServer) -> Value {
    let out = s.kubectl_ok(&["get", "lease", "-n", "kube-system", "apiserver-controllers", "-o", "json"]);
    serde_json::from_str(&out).expect("lease JSON")
}

fn holder(lease: &Value) -> String {
    lease.pointer("/spec/holderIdentity").and_then(Value::as_str).unwrap_or("").to_string()
}

fn transitions(lease: &Value) -> i64 {
    lease.pointer("/spec/leaseTransitions").and_then(Value::as_i64).unwrap_or(0)
}

/// `leader_election_master_status{name="apiserver-controllers"}` on `s`.
fn leading(s: &TestServer) -> bool {
    let metrics = s.kubectl_ok(&["get", "--raw", "/metrics"]);
    let line = metrics
        .lines()
        .find(|l| l.starts_with("leader_election_master_status{name=\"apiserver-controllers\"}"))
        .unwrap_or_else(|| panic!("no leader_election_master_status in /metrics"));
    line.ends_with(" 1")
}

/// Polls until the Lease (read through `via`) names a holder other than `old`: the new holder,
/// the Lease, and how long it took.
fn new_holder(via: &TestServer, old: &str, within: Duration) -> (String, Value, Duration) {
    let started = Instant::now();
    let found = tests::poll_until(within, || {
        let l = lease(via);
        let h = holder(&l);
        (!h.is_empty() && h != old).then_some((h, l))
    });
    let (h, l) =
        found.unwrap_or_else(|| panic!("nobody took the lease from {old} within {within:?}:\n{}", via.log_tail()));
    (h, l, started.elapsed())
}

/// Deletes a namespace with content through `via` and waits for it to be finalized.
fn finalized_through(via: &TestServer, namespace: &str) {
    via.kubectl_ok(&["create", "namespace", namespace]);
    via.kubectl_ok(&["create", "configmap", "content", "-n", namespace]);
    via.kubectl_ok(&["delete", "namespace", namespace, "--timeout=60s"]);
    let out = via.kubectl(&["get", "namespace", namespace]);
    assert!(!out.status.success(), "{namespace} is gone");
}

#[test]
fn controllers_run_on_the_lease_holder_and_move_when_it_dies_or_shuts_down() {
    let etcd = EtcdProcess::start();
    let flags = ["--storage-backend", "etcd3", "--etcd-servers", etcd.endpoint()];
    let mut first = TestServer::start_with(&flags);
    let mut second = TestServer::start_with(&flags);

    let started = tests::poll_until(Duration::from_secs(30), || {
        let l = lease(&second);
        (!holder(&l).is_empty()).then_some(l)
    })
    .expect("someone holds the lease");
    let spec = &started["spec"];
    assert_eq!(spec["leaseDurationSeconds"], 15);
    let micro = |field: &str| {
        spec[field].as_str().is_some_and(|t| t.len() == 27 && t.ends_with('Z') && t.as_bytes()[19] == b'.')
    };
    assert!(micro("acquireTime") && micro("renewTime"), "MicroTimes: {spec}");
    let identity = holder(&started);
    let (_, uid) = identity.rsplit_once('_').expect("<hostname>_<uid>");
    assert_eq!(uid.len(), 36, "{spec}");
    assert_eq!([leading(&first), leading(&second)].iter().filter(|l| **l).count(), 1, "exactly one replica leads");
    let (leader, follower) = if leading(&first) { (&mut first, &mut second) } else { (&mut second, &mut first) };

    // Deleted through the replica that runs no controllers, finalized by the leader's.
    finalized_through(follower, "through-follower");

    // The leader dies: the follower waits out the lease duration (by its own clock), then
    // takes over and runs the controllers.
    let dead = holder(&lease(follower));
    let before = transitions(&lease(follower));
    leader.kill9();
    let (taken, after, took) = new_holder(follower, &dead, Duration::from_secs(35));
    assert!(took >= Duration::from_secs(10), "not before the lease expired: {took:?}");
    assert_eq!(transitions(&after), before + 1, "a takeover is a transition");
    assert!(leading(follower));
    finalized_through(follower, "after-takeover");

    // The old leader comes back as a candidate; the new one shuts down gracefully and releases
    // the Lease, which the other takes at its next try.
    leader.start_again();
    let (new_leader, candidate) = (follower, leader);
    assert!(!leading(candidate), "the lease is held: the restarted replica waits");
    new_leader.terminate();
    let (_, after_release, took) = new_holder(candidate, &taken, Duration::from_secs(10));
    assert!(took < Duration::from_secs(8), "released, not expired: {took:?}");
    assert_eq!(transitions(&after_release), transitions(&after) + 1);
    let status = new_leader.wait_exit(Duration::from_secs(15)).expect("exited");
    assert_eq!(status.code(), Some(0));
    assert!(leading(candidate));
    finalized_through(candidate, "after-release");
}

/// Every server keeps its identity Lease, as kube-apiserver does: named from the host, labelled
/// for `kubectl get leases -l apiserver.kubernetes.io/identity`, renewed for an hour.
#[test]
fn each_server_keeps_an_identity_lease_named_as_kube_names_it() {
    let s = TestServer::start();
    let selector = "-lapiserver.kubernetes.io/identity=kube-apiserver";
    let get = |path: &str| {
        let out = s.kubectl(&["get", "leases", "-n", "kube-system", selector, "-o", &format!("jsonpath={path}")]);
        String::from_utf8_lossy(&out.stdout).to_string()
    };
    let name =
        tests::poll_until(Duration::from_secs(30), || Some(get("{.items[*].metadata.name}")).filter(|n| !n.is_empty()))
            .expect("an identity Lease");
    assert!(name.starts_with("apiserver-") && name.len() == "apiserver-".len() + 26, "{name}");
    let host = hostname_of_this_machine();
    assert_eq!(get("{.items[0].metadata.labels.kubernetes\\.io/hostname}"), host);
    assert_eq!(get("{.items[0].spec.leaseDurationSeconds}"), "3600");
    assert!(get("{.items[0].spec.holderIdentity}").starts_with(&format!("{name}_")));
}

fn hostname_of_this_machine() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname").expect("the host name").trim().to_string()
}

/// Whether namespace `ns` has its `default` ServiceAccount, which the service-account
/// controller makes.
fn has_default_account(s: &TestServer, ns: &str) -> bool {
    s.kubectl(&["get", "serviceaccount", "default", "-n", ns]).status.success()
}

#[test]
fn controllers_stand_aside_while_kube_controller_manager_holds_its_lease() {
    let s = TestServer::start_logging("warn,controllers::standing_aside=info", &[]);
    // No kube-controller-manager: this server's controllers run.
    s.kubectl_ok(&["create", "namespace", "before"]);
    assert!(
        tests::poll_until(Duration::from_secs(30), || has_default_account(&s, "before").then_some(())).is_some(),
        "the service-account controller runs without a kube-controller-manager:\n{}",
        s.log_tail()
    );

    // kube-controller-manager takes its Lease (as held for an hour as a record seen first is
    // trusted for its duration): the controllers stand aside at their next look.
    let lease = r#"{"apiVersion":"coordination.k8s.io/v1","kind":"Lease",
        "metadata":{"name":"kube-controller-manager","namespace":"kube-system"},
        "spec":{"holderIdentity":"control-plane_5d1c","leaseDurationSeconds":3600,
                "acquireTime":"2026-01-01T00:00:00.000000Z","renewTime":"2026-01-01T00:00:00.000000Z"}}"#;
    tests::assert_success("the Lease", &s.kubectl_stdin(&["create", "-f", "-"], lease));
    let stood_aside = tests::poll_until(Duration::from_secs(30), || {
        s.log_text().contains("this server's controllers stand aside").then_some(())
    });
    assert!(stood_aside.is_some(), "no standing aside:\n{}", s.log_tail());
    assert!(s.log_text().contains("holder=\"control-plane_5d1c\""), "{}", s.log_tail());

    // While it holds the Lease, a new namespace gets no ServiceAccount from this server and a
    // deleted one stays Terminating: kube-controller-manager would do both.
    s.kubectl_ok(&["create", "namespace", "during"]);
    s.kubectl_ok(&["delete", "namespace", "before", "--wait=false"]);
    std::thread::sleep(Duration::from_secs(5));
    assert!(!has_default_account(&s, "during"), "a ServiceAccount made while standing aside");
    assert_eq!(s.kubectl_ok(&["get", "namespace", "before", "-o", "jsonpath={.status.phase}"]), "Terminating");

    // kube-controller-manager shuts down and releases its Lease (no holder): the controllers
    // run again at once and catch up.
    s.kubectl_ok(&[
        "patch",
        "lease",
        "kube-controller-manager",
        "-n",
        "kube-system",
        "--type=merge",
        "-p",
        r#"{"spec":{"holderIdentity":null,"leaseDurationSeconds":1}}"#,
    ]);
    let caught_up = tests::poll_until(Duration::from_secs(30), || {
        let finalized = !s.kubectl(&["get", "namespace", "before"]).status.success();
        (finalized && has_default_account(&s, "during")).then_some(())
    });
    assert!(caught_up.is_some(), "the controllers did not come back:\n{}", s.log_tail());
}
