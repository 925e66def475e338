//! Protobuf beside JSON in one run: GET of one object and LIST of 10,000 from the cache in
//! each encoding, and resident memory per cached object before and after the cache holds the
//! protobuf forms (which a protobuf watcher and a protobuf list make it encode).
//!
//! Two shapes: ConfigMaps of about 1 KiB (mostly one string, the same bytes in both encodings)
//! and Pods as a Deployment makes them (many short fields, where protobuf is smaller).
//! On etcd, where the cache is the only copy of the objects inside the apiserver: the memory
//! of a server on an empty prefix is the baseline.

use std::sync::Arc;
use std::time::{Duration, Instant};

use storage::Storage;
use storage::etcd::testing::EtcdProcess;
use tests::TestServer;

use serde_json::json;

use crate::cache::{fill, fill_with};
use crate::{Phase, answered, cpu_time, report_cpu, rss_mib, run};

const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";
const JSON: &str = "application/json";

/// A Pod as a Deployment's ReplicaSet makes it and a kubelet reports it.
pub(crate) fn pod(prefix: &str, i: usize) -> (String, serde_json::Value) {
    let name = format!("web-7d4b9c8f6-{i:05}");
    let obj = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {
            "name": name, "namespace": "default", "uid": format!("00000000-0000-4000-8000-{i:012}"),
            "creationTimestamp": "2026-01-01T00:00:00Z", "generateName": "web-7d4b9c8f6-",
            "labels": {"app": "web", "pod-template-hash": "7d4b9c8f6"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-7d4b9c8f6",
                "uid": "00000000-0000-4000-8000-000000000001", "controller": true, "blockOwnerDeletion": true}]
        },
        "spec": {
            "containers": [{
                "name": "app", "image": "registry.example.com/shop/web:1.25.3", "imagePullPolicy": "IfNotPresent",
                "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}],
                "env": [{"name": "MODE", "value": "production"}, {"name": "POD_IP", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "status.podIP"}}}],
                "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"cpu": "500m", "memory": "256Mi"}},
                "readinessProbe": {"httpGet": {"path": "/ready", "port": "http", "scheme": "HTTP"}, "periodSeconds": 10, "timeoutSeconds": 1, "successThreshold": 1, "failureThreshold": 3},
                "volumeMounts": [{"name": "kube-api-access", "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount", "readOnly": true}],
                "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File"
            }],
            "volumes": [{"name": "kube-api-access", "projected": {"defaultMode": 420, "sources": [{"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}}]}}],
            "restartPolicy": "Always", "terminationGracePeriodSeconds": 30, "dnsPolicy": "ClusterFirst",
            "serviceAccountName": "default", "nodeName": format!("node-{}", i % 50), "schedulerName": "default-scheduler",
            "securityContext": {}, "enableServiceLinks": true, "preemptionPolicy": "PreemptLowerPriority", "priority": 0
        },
        "status": {
            "phase": "Running", "hostIP": "10.0.0.7", "podIP": format!("10.244.{}.{}", i / 250, i % 250), "qosClass": "Burstable",
            "startTime": "2026-01-01T00:00:01Z",
            "conditions": [
                {"type": "Initialized", "status": "True", "lastTransitionTime": "2026-01-01T00:00:01Z"},
                {"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-01T00:00:05Z"},
                {"type": "ContainersReady", "status": "True", "lastTransitionTime": "2026-01-01T00:00:05Z"},
                {"type": "PodScheduled", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"}
            ],
            "containerStatuses": [{"name": "app", "ready": true, "restartCount": 0, "started": true,
                "image": "registry.example.com/shop/web:1.25.3", "imageID": "registry.example.com/shop/web@sha256:0123456789abcdef",
                "containerID": format!("containerd://{i:064}"), "state": {"running": {"startedAt": "2026-01-01T00:00:02Z"}}}]
        }
    });
    (format!("{prefix}/pods/default/{name}"), obj)
}

async fn get_phase(
    server: &TestServer,
    path: &str,
    accept: &'static str,
    c: usize,
    seconds: Duration,
) -> (Phase, Duration) {
    let client = server.client(true);
    let url = server.url(path);
    let cpu = cpu_time(server.pid());
    let phase = run(c, seconds, move |_, _| {
        let (cl, u) = (client.clone(), url.clone());
        async move { answered(cl.get(&u).insert_header(("Accept", accept)).send().await, 200).await }
    })
    .await;
    (phase, cpu_time(server.pid()).saturating_sub(cpu))
}

/// Latencies of one encoding's lists, and its response size.
#[derive(Default)]
struct Lists {
    latencies: Vec<f64>,
    size: usize,
}

impl Lists {
    fn p50(&self) -> f64 {
        self.latencies[self.latencies.len() / 2]
    }

    fn min(&self) -> f64 {
        self.latencies[0]
    }
}

/// `rounds` lists in each of JSON and protobuf, alternating so both see the same machine.
/// The first round of each is unmeasured: connection set-up, buffers' first growth, and for
/// protobuf the encoding of every cached object.
async fn list_both(server: &TestServer, resource: &str, rounds: usize) -> (Lists, Lists) {
    let client = server.client(true);
    let url = server.url(&format!("/api/v1/namespaces/default/{resource}?resourceVersion=0"));
    let (mut json, mut pb) = (Lists::default(), Lists::default());
    for round in 0..=rounds {
        for (accept, lists) in [(JSON, &mut json), (PROTOBUF, &mut pb)] {
            let started = Instant::now();
            let mut r = client.get(&url).insert_header(("Accept", accept)).send().await.expect("list");
            let body = r.body().limit(1 << 30).await.expect("list body");
            assert!(r.status().is_success());
            if round > 0 {
                lists.latencies.push(started.elapsed().as_secs_f64() * 1000.0);
            }
            lists.size = body.len();
        }
    }
    for lists in [&mut json, &mut pb] {
        lists.latencies.sort_by(f64::total_cmp);
    }
    (json, pb)
}

pub async fn run_all(seconds: Duration) {
    let n = 10_000;
    let etcd = actix_web::rt::task::spawn_blocking(EtcdProcess::start).await.expect("etcd");
    let store: Arc<dyn Storage> = etcd.connect().await.expect("connect etcd");
    let empty_args = etcd_args(etcd.endpoint(), "/pb-empty");
    let empty = TestServer::start_with(&empty_args.iter().map(String::as_str).collect::<Vec<_>>());
    for resource in ["configmaps", "pods"] {
        let prefix = format!("/pb-{resource}");
        println!("== protobuf beside JSON: {n} {resource} on etcd {}", etcd.endpoint());
        let one = if resource == "pods" {
            fill_with(&store, &prefix, n, pod).await;
            "/api/v1/namespaces/default/pods/web-7d4b9c8f6-00001"
        } else {
            fill(&store, &prefix, n).await;
            "/api/v1/namespaces/default/configmaps/cm-1"
        };
        let args = etcd_args(etcd.endpoint(), &prefix);
        let full = TestServer::start_with(&args.iter().map(String::as_str).collect::<Vec<_>>());
        actix_web::rt::time::sleep(Duration::from_secs(2)).await;
        phases(&empty, &full, resource, one, n, seconds).await;
    }
}

fn etcd_args(endpoint: &str, prefix: &str) -> Vec<String> {
    ["--storage-backend", "etcd3", "--etcd-servers", endpoint, "--etcd-prefix", prefix].map(str::to_string).to_vec()
}

async fn phases(empty: &TestServer, full: &TestServer, resource: &str, one: &str, n: usize, seconds: Duration) {
    // GET: JSON first, then protobuf (whose first read encodes the object once).
    for c in [1usize, 16] {
        let (json, json_cpu) = get_phase(full, one, JSON, c, seconds).await;
        report_cpu(&format!("get {resource} JSON"), c, &json, None, Some(json_cpu));
        let (pb, pb_cpu) = get_phase(full, one, PROTOBUF, c, seconds).await;
        report_cpu(&format!("get {resource} protobuf"), c, &pb, Some(&json), Some(pb_cpu));
    }

    // Memory with JSON only (the GETs above encoded one object in protobuf).
    let base = rss_mib(empty.pid());
    let json_only = rss_mib(full.pid());
    // LIST: JSON and protobuf alternating (the first protobuf list encodes every object once).
    let (json, pb) = list_both(full, resource, 20).await;
    let (json_p50, json_min, json_size) = (json.p50(), json.min(), json.size);
    let (pb_p50, pb_min, pb_size) = (pb.p50(), pb.min(), pb.size);
    println!(
        "list {n} {resource} JSON      p50 {json_p50:>7.1} ms  min {json_min:>7.1} ms  {:>5.1} MB",
        json_size as f64 / 1e6
    );
    println!(
        "list {n} {resource} protobuf  p50 {pb_p50:>7.1} ms  min {pb_min:>7.1} ms  {:>5.1} MB   {:.2}x JSON's speed (p50), {:.2}x its bytes",
        pb_size as f64 / 1e6,
        json_p50 / pb_p50,
        pb_size as f64 / json_size as f64
    );

    // A protobuf watcher, held open while memory is read again.
    let client = full.client(true);
    let watch_url = full.url(&format!("/api/v1/namespaces/default/{resource}?watch=1&resourceVersion=0"));
    let watch = client.get(&watch_url).insert_header(("Accept", PROTOBUF)).send().await.expect("watch");
    assert_eq!(watch.status().as_u16(), 200);
    actix_web::rt::time::sleep(Duration::from_secs(2)).await;
    let with_protobuf = rss_mib(full.pid());
    let per = |mib: f64| (mib - base) * (1 << 20) as f64 / n as f64;
    println!(
        "memory per cached {resource}: {:.0} bytes JSON only, {:.0} bytes with protobuf forms and a protobuf watcher: {:.2}x",
        per(json_only),
        per(with_protobuf),
        per(with_protobuf) / per(json_only)
    );
    drop(watch);
}
