//! The etcd3 backend driven through the real binary: kubectl against etcd, per-resource
//! overrides, encryption visible with etcdctl, and an etcd outage named by the server and
//! recovered from without a restart.

use std::process::Command;
use std::time::{Duration, Instant};

use base64::Engine;
use storage::Storage;
use storage::etcd::testing::EtcdProcess;
use tests::TestServer;

fn etcdctl(endpoint: &str, args: &[&str]) -> String {
    let bin = ["/usr/bin/etcdctl", "/opt/realtools/bin/etcdctl"]
        .into_iter()
        .find(|p| std::path::Path::new(p).exists())
        .expect("etcdctl: run deploy/install-tools.sh (Debian etcd-client)");
    let out = Command::new(bin).env("ETCDCTL_API", "3").arg("--endpoints").arg(endpoint).args(args).output().unwrap();
    assert!(out.status.success(), "etcdctl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn keys(endpoint: &str, prefix: &str) -> Vec<String> {
    etcdctl(endpoint, &["get", prefix, "--prefix", "--keys-only"])
        .lines()
        .filter(|l| !l.is_empty())
        .map(String::from)
        .collect()
}

#[test]
fn kubectl_works_on_etcd_with_kube_key_layout_and_survives_restart() {
    let etcd = EtcdProcess::start();
    let mut s = TestServer::start_with(&["--storage-backend", "etcd3", "--etcd-servers", etcd.endpoint()]);
    s.kubectl_ok(&["create", "namespace", "team"]);
    s.kubectl_ok(&["create", "configmap", "cfg", "-n", "team", "--from-literal=a=1"]);
    s.kubectl_ok(&["create", "deployment", "web", "-n", "team", "--image=nginx:1.25"]);
    let all = keys(etcd.endpoint(), "/registry/");
    for k in [
        "/registry/namespaces/team",
        "/registry/configmaps/team/cfg",
        "/registry/deployments/team/web",
        "/registry/services/specs/default/kubernetes",
    ] {
        assert!(all.iter().any(|x| x == k), "{k} not in etcd: {all:?}");
    }
    let rv = s.kubectl_ok(&["get", "configmap", "cfg", "-n", "team", "-o", "jsonpath={.metadata.resourceVersion}"]);
    let revision = etcdctl(etcd.endpoint(), &["get", "/registry/configmaps/team/cfg", "-w", "json"]);
    let doc: serde_json::Value = serde_json::from_str(&revision).unwrap();
    assert_eq!(
        doc["kvs"][0]["mod_revision"].as_u64().unwrap().to_string(),
        rv,
        "resourceVersion is etcd's mod revision"
    );
    s.restart();
    assert_eq!(
        s.kubectl_ok(&["get", "configmap", "cfg", "-n", "team", "-o", "jsonpath={.metadata.resourceVersion}"]),
        rv
    );
    s.kubectl_ok(&["scale", "deployment", "web", "-n", "team", "--replicas=3"]);
    assert_eq!(s.kubectl_ok(&["get", "deployment", "web", "-n", "team", "-o", "jsonpath={.spec.replicas}"]), "3");
}

#[test]
fn overrides_keep_events_in_their_own_etcd() {
    let events_etcd = EtcdProcess::start();
    let flag = format!("/events#{}", events_etcd.endpoint());
    let s = TestServer::start_with(&["--etcd-servers-overrides", &flag]);
    let event = r#"{"apiVersion":"v1","kind":"Event","metadata":{"name":"e1","namespace":"default"},
        "involvedObject":{"kind":"Pod","name":"p","namespace":"default"},"reason":"Tested","message":"hello","type":"Normal"}"#;
    tests::assert_success("create event", &s.kubectl_stdin(&["create", "-f", "-"], event));
    s.kubectl_ok(&["create", "configmap", "local"]);
    assert_eq!(
        keys(events_etcd.endpoint(), "/registry/"),
        ["/registry/events/default/e1"],
        "only events go to the override"
    );
    let listed = s.kubectl_ok(&["get", "events", "-o", "jsonpath={.items[*].metadata.name}"]);
    assert_eq!(listed, "e1");
    let v1 = s.kubectl_ok(&["get", "events.v1.events.k8s.io", "e1", "-o", "jsonpath={.note}"]);
    assert_eq!(v1, "hello", "both groups read the overridden store");
}

#[test]
fn secrets_in_etcd_are_unreadable_with_etcdctl() {
    let etcd = EtcdProcess::start();
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("enc.yaml");
    let key = base64::engine::general_purpose::STANDARD.encode([7u8; 32]);
    std::fs::write(&cfg, format!("apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: [secrets]\n  providers:\n  - aesgcm:\n      keys:\n      - name: k1\n        secret: {key}\n  - identity: {{}}\n")).unwrap();
    let s = TestServer::start_with(&[
        "--storage-backend",
        "etcd3",
        "--etcd-servers",
        etcd.endpoint(),
        "--encryption-provider-config",
        cfg.to_str().unwrap(),
    ]);
    s.kubectl_ok(&["create", "secret", "generic", "db", "--from-literal=password=s3cr3t-value"]);
    let raw = etcdctl(etcd.endpoint(), &["get", "/registry/secrets/default/db", "--print-value-only"]);
    assert!(raw.starts_with("k8s:enc:aesgcm:v1:k1:"), "{raw:?}");
    assert!(!raw.contains("s3cr3t-value"));
    let value = s.kubectl_ok(&["get", "secret", "db", "-o", "jsonpath={.data.password}"]);
    assert_eq!(base64::engine::general_purpose::STANDARD.decode(value.trim()).unwrap(), b"s3cr3t-value");
}

#[test]
fn an_etcd_outage_is_named_and_the_server_recovers_without_restart() {
    let mut etcd = EtcdProcess::start();
    let s = TestServer::start_with(&["--storage-backend", "etcd3", "--etcd-servers", etcd.endpoint()]);
    s.kubectl_ok(&["create", "configmap", "before"]);
    // A watch open across the outage: the server keeps it and delivers what follows.
    let rv = s.kubectl_ok(&["get", "configmap", "before", "-o", "jsonpath={.metadata.resourceVersion}"]);
    let mut watch = Command::new(tests::kubectl_bin())
        .args(["get", "--raw", &format!("/api/v1/namespaces/default/configmaps?watch=1&resourceVersion={rv}")])
        .env("KUBECONFIG", &s.kubeconfig)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = watch.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    std::thread::sleep(Duration::from_millis(500));
    etcd.stop();

    let out = s.kubectl(&["get", "configmaps", "--request-timeout=20s"]);
    assert!(!out.status.success(), "reads fail while etcd is down");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("etcd3 (") && err.contains(etcd.endpoint()),
        "the error names the backend and endpoint: {err}"
    );
    let out = s.kubectl(&["create", "configmap", "during", "--request-timeout=20s"]);
    assert!(!out.status.success());
    // The failed requests are counted as kube counts them (the cache's re-lists fail while
    // etcd is down), beside every request.
    let metrics = s.kubectl_ok(&["get", "--raw", "/metrics"]);
    let count = |name: &str, operation: &str| -> u64 {
        let prefix = format!("{name}{{operation=\"{operation}\",type=\"configmaps\"}} ");
        metrics.lines().find_map(|l| l.strip_prefix(prefix.as_str())?.trim().parse().ok()).unwrap_or(0)
    };
    assert!(count("etcd_request_errors_total", "list") >= 1, "failed lists are counted");
    assert!(count("etcd_requests_total", "list") > count("etcd_request_errors_total", "list"));
    assert!(count("etcd_requests_total", "create") >= 1, "the create before the outage is counted");
    assert_eq!(count("etcd_request_errors_total", "create"), 0, "it did not fail");
    let ready = s.kubectl(&["get", "--raw", "/readyz?verbose"]);
    assert!(!ready.status.success(), "readyz fails while etcd is down");
    let text = format!("{}{}", String::from_utf8_lossy(&ready.stdout), String::from_utf8_lossy(&ready.stderr));
    assert!(text.contains("[-]etcd failed"), "{text}");

    etcd.restart();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if s.kubectl(&["create", "configmap", "after"]).status.success() {
            break;
        }
        assert!(Instant::now() < deadline, "the server did not recover after etcd came back\n{}", s.log_tail());
        std::thread::sleep(Duration::from_millis(500));
    }
    let names = s.kubectl_ok(&["get", "configmaps", "-o", "jsonpath={.items[*].metadata.name}"]);
    assert!(names.contains("before") && names.contains("after") && !names.contains("during"), "{names}");
    s.kubectl_ok(&["get", "--raw", "/readyz"]);

    let deadline = Instant::now() + Duration::from_secs(20);
    let mut seen = Vec::new();
    while !seen.iter().any(|l: &String| l.contains("\"ADDED\"") && l.contains("\"name\":\"after\"")) {
        assert!(Instant::now() < deadline, "the watch opened before the outage never saw the new object: {seen:?}");
        if let Ok(line) = rx.recv_timeout(Duration::from_millis(200)) {
            seen.push(line);
        }
    }
    assert!(watch.try_wait().unwrap().is_none(), "the watch stayed open through the outage");
    assert!(!seen.iter().any(|l| l.contains("\"name\":\"before\"")), "no event repeated: {seen:?}");
    let _ = watch.kill();
    let _ = watch.wait();
}

const EVENT: &str = r#"{"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e1", "namespace": "default"},
  "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"}, "reason": "Tried", "message": "once",
  "type": "Normal", "source": {"component": "test"}}"#;

/// Whether `kind/name` is gone (NotFound), failing on any other error.
fn gone(s: &TestServer, what: &str) -> bool {
    let out = s.kubectl(&["get", what]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() || stderr.contains("NotFound"), "get {what}: {stderr}");
    !out.status.success()
}

#[test]
fn events_expire_after_event_ttl_by_an_etcd_lease() {
    let etcd = EtcdProcess::start();
    let s = TestServer::start_with(&["--etcd-servers", etcd.endpoint(), "--event-ttl", "3s"]);
    tests::assert_success("create event", &s.kubectl_stdin(&["create", "-f", "-"], EVENT));
    s.kubectl_ok(&["create", "configmap", "kept"]);
    let lease = |key: &str| {
        let doc: serde_json::Value =
            serde_json::from_str(&etcdctl(etcd.endpoint(), &["get", key, "-w", "json"])).unwrap();
        doc["kvs"][0]["lease"].as_i64().unwrap_or(0)
    };
    assert_ne!(lease("/registry/events/default/e1"), 0, "the Event is on a lease, as kube writes it");
    assert_eq!(lease("/registry/configmaps/default/kept"), 0, "other objects are not");
    // etcd checks leases twice a second; a busy machine may take longer.
    let expired = tests::within(Duration::from_secs(60), || gone(&s, "event/e1"));
    assert!(expired.is_some(), "the Event outlived --event-ttl by a minute");
    assert!(keys(etcd.endpoint(), "/registry/events/").is_empty());
    assert!(!gone(&s, "configmap/kept"));
}

#[test]
fn events_expire_after_event_ttl_on_the_embedded_store_and_across_a_restart() {
    let mut s = TestServer::start_with(&["--event-ttl", "4s"]);
    tests::assert_success("create event", &s.kubectl_stdin(&["create", "-f", "-"], EVENT));
    // An update is written with the TTL too (kube attaches a lease on every write): the Event
    // still expires, here after a restart.
    s.kubectl_ok(&["patch", "event", "e1", "--type=merge", "-p", r#"{"count": 2}"#]);
    s.restart();
    let expired = tests::within(Duration::from_secs(60), || gone(&s, "event/e1"));
    assert!(expired.is_some(), "the Event outlived --event-ttl by a minute");
    // With no TTL, Events stay.
    s.stop();
    let s = TestServer::start_with(&["--event-ttl", "0s"]);
    tests::assert_success("create event", &s.kubectl_stdin(&["create", "-f", "-"], EVENT));
    std::thread::sleep(Duration::from_secs(2));
    assert!(!gone(&s, "event/e1"));
}

/// With `--endpoint-reconciler-type=master-count`, no lease: the server adds itself to the
/// addresses listed, keeps `--apiserver-count` of them by dropping those after its own as kube
/// does, and takes only itself out when it stops.
#[test]
fn the_master_count_reconciler_keeps_the_count_as_kube_does() {
    let etcd = EtcdProcess::start();
    let mut s = TestServer::start_with(&[
        "--etcd-servers",
        etcd.endpoint(),
        "--advertise-address",
        "192.0.2.10",
        "--endpoint-reconciler-type",
        "master-count",
        "--apiserver-count",
        "2",
    ]);
    let listed = |s: &TestServer| {
        let ips = s.kubectl_ok(&["get", "endpoints", "kubernetes", "-o", "jsonpath={.subsets[*].addresses[*].ip}"]);
        let slice =
            s.kubectl_ok(&["get", "endpointslice", "kubernetes", "-o", "jsonpath={.endpoints[*].addresses[0]}"]);
        (ips, slice)
    };
    let want = |ips: &str| (ips.to_string(), ips.to_string());
    let seen = tests::poll_until(Duration::from_secs(50), || Some(listed(&s)).filter(|l| *l == want("192.0.2.10")));
    assert!(seen.is_some(), "the server lists itself: {:?}", listed(&s));
    // Two peers wrote themselves meanwhile: this server comes back, and of the three the one
    // sorted after it goes (10 < 11 < 12).
    let peers = r#"{"subsets": [{"addresses": [{"ip": "192.0.2.11"}, {"ip": "192.0.2.12"}],
        "ports": [{"name": "https", "port": 6443, "protocol": "TCP"}]}]}"#;
    s.kubectl_ok(&["patch", "endpoints", "kubernetes", "--type=merge", "-p", peers]);
    let kept =
        tests::poll_until(Duration::from_secs(50), || Some(listed(&s)).filter(|l| *l == want("192.0.2.10 192.0.2.12")));
    assert!(kept.is_some(), "two addresses, this server's among them: {:?}", listed(&s));
    assert!(keys(etcd.endpoint(), "/registry/masterleases/").is_empty(), "no lease is written");
    s.terminate();
    assert!(s.wait_exit(Duration::from_secs(60)).is_some(), "the server stopped");
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let stored = rt.block_on(async {
        let store = etcd.connect().await.unwrap();
        store.get("/registry/services/endpoints/default/kubernetes").await.unwrap().0.expect("the Endpoints")
    });
    let endpoints = storage_codec::codec::decode("endpoints", &stored.value).unwrap();
    assert_eq!(endpoints.pointer("/subsets/0/addresses"), Some(&serde_json::json!([{"ip": "192.0.2.12"}])));
}

/// The `kubernetes` Service's endpoints from every apiserver's lease, in kube's keys and
/// values: a kube-apiserver's recorded lease counts until it expires, this server's own is on
/// an etcd lease, and a graceful stop takes this server out.
#[test]
fn the_kubernetes_service_lists_every_apiserver_holding_a_lease() {
    let etcd = EtcdProcess::start();
    let recorded: serde_json::Value =
        serde_json::from_str(include_str!("../../fixtures/kube-etcd/recorded.json")).unwrap();
    let key = "/registry/masterleases/192.0.2.2";
    let raw = recorded["raw"].as_array().unwrap().iter().find(|r| r["key"] == key).expect("kube's lease recorded");
    let bytes = base64::engine::general_purpose::STANDARD.decode(raw["value"].as_str().unwrap()).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let store = etcd.connect().await.expect("etcd");
        store.put_with_ttl(key, bytes.into(), storage::Expect::Absent, Duration::from_secs(60)).await.unwrap();
    });
    let mut s = TestServer::start_with(&["--etcd-servers", etcd.endpoint(), "--advertise-address", "192.0.2.10"]);
    let listed = |s: &TestServer| {
        let ips = s.kubectl_ok(&["get", "endpoints", "kubernetes", "-o", "jsonpath={.subsets[*].addresses[*].ip}"]);
        let slice =
            s.kubectl_ok(&["get", "endpointslice", "kubernetes", "-o", "jsonpath={.endpoints[*].addresses[0]}"]);
        (ips, slice)
    };
    let both = ("192.0.2.10 192.0.2.2".to_string(), "192.0.2.10 192.0.2.2".to_string());
    let ours = ("192.0.2.10".to_string(), "192.0.2.10".to_string());
    // Renewed every 10 s: a busy machine may take a few rounds.
    let seen = tests::poll_until(Duration::from_secs(50), || Some(listed(&s)).filter(|l| *l == both));
    assert!(seen.is_some(), "the apiservers' addresses: {:?}", listed(&s));
    let port = s.kubectl_ok(&["get", "endpoints", "kubernetes", "-o", "jsonpath={.subsets[0].ports[0].port}"]);
    assert_eq!(port, s.port.to_string());
    let lease = etcdctl(etcd.endpoint(), &["get", "/registry/masterleases/192.0.2.10", "-w", "json"]);
    let lease: serde_json::Value = serde_json::from_str(&lease).unwrap();
    assert_ne!(lease["kvs"][0]["lease"].as_i64().unwrap_or(0), 0, "this server's lease expires unless renewed");
    // kube's lease expires unrenewed: its address goes.
    let gone = tests::poll_until(Duration::from_secs(120), || Some(listed(&s)).filter(|l| *l == ours));
    assert!(gone.is_some(), "the expired lease's address stayed: {:?}", listed(&s));
    // A graceful stop takes this server out before it exits.
    s.terminate();
    assert!(s.wait_exit(Duration::from_secs(60)).is_some(), "the server stopped");
    assert!(keys(etcd.endpoint(), "/registry/masterleases/").is_empty());
    let stored = rt.block_on(async {
        let store = etcd.connect().await.unwrap();
        store.get("/registry/services/endpoints/default/kubernetes").await.unwrap().0.expect("the Endpoints")
    });
    let endpoints = storage_codec::codec::decode("endpoints", &stored.value).unwrap();
    assert!(endpoints.get("subsets").and_then(|s| s.as_array()).is_none_or(|s| s.is_empty()), "{endpoints}");
}
