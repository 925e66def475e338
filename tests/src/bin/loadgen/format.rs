//! kube's etcd format beside MessagePack, in one run.
//!
//! - In process, the codec alone, for a ConfigMap of about 1 KiB, a Pod as a kubelet reports it
//!   and a Deployment: bytes stored, and CPU per encode and per decode, MessagePack (what this
//!   server stored before) beside kube's protobuf envelope (with and without the defaults every
//!   read now applies).
//! - Through the server on etcd: this build (kube's format) and, with `--baseline PATH`, another
//!   build (the release that stored MessagePack), each on a fresh etcd, alternated twice:
//!   creates and cached GETs at c=64, a LIST of every ConfigMap from the cache, and watch
//!   fan-out (100 watchers, 100 writes/s), each with the server's CPU per request (per listed
//!   object, per delivered event).
//!
//! `loadgen 5 format --baseline PATH`.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use storage::KeyValue;
use storage::etcd::testing::EtcdProcess;
use storage_codec::codec::{decode, decode_object, encode_object};
use tests::TestServer;
use tests::load::cpu_time;

use crate::{answered, report_cpu, run};

/// Encodes and decodes per object and format.
const ROUNDS: usize = 20_000;

/// Times `op` over [`ROUNDS`], in µs per call.
fn per_call(mut op: impl FnMut()) -> f64 {
    let start = Instant::now();
    for _ in 0..ROUNDS {
        op();
    }
    start.elapsed().as_secs_f64() * 1e6 / ROUNDS as f64
}

/// The codec rows: for each object, MessagePack beside kube's format.
fn codec_rows() {
    let catalogue = kinds::catalogue();
    let objects: [(&str, &str, &str, &str, Value); 3] = [
        ("ConfigMap of ~1 KiB", "", "v1", "configmaps", crate::cache::object("/registry/configmaps/", 1).1),
        ("Pod (kubelet-reported)", "", "v1", "pods", crate::protobuf::pod("/registry/pods/", 1).1),
        ("Deployment", "apps", "v1", "deployments", crate::noop::deployment(1)),
    ];
    println!("== the codec alone, in process ({ROUNDS} rounds each; µs of one core per call)");
    for (label, group, version, resource, obj) in objects {
        let def = catalogue.find(group, version, resource).expect("served");
        let mut obj = obj;
        obj["metadata"]["creationTimestamp"] = json!("2026-01-01T00:00:00Z");
        let msgpack = rmp_serde::to_vec_named(&obj).expect("encodes");
        let kube = encode_object(&def, &obj).expect("encodes");
        let kv = KeyValue { key: "/k".into(), value: kube.clone(), create_revision: 1, mod_revision: 1, stale: false };
        let mp_encode = per_call(|| drop(std::hint::black_box(rmp_serde::to_vec_named(&obj).unwrap())));
        let mp_decode = per_call(|| drop(std::hint::black_box(rmp_serde::from_slice::<Value>(&msgpack).unwrap())));
        let kube_encode = per_call(|| drop(std::hint::black_box(encode_object(&def, &obj).unwrap())));
        let kube_decode = per_call(|| drop(std::hint::black_box(decode("/k", &kube).unwrap())));
        let kube_read = per_call(|| drop(std::hint::black_box(decode_object(&def, &kv).unwrap())));
        println!(
            "{label:<24} messagepack {:>5} B, encode {mp_encode:>6.2}, decode {mp_decode:>6.2} | kube {:>5} B, encode {kube_encode:>6.2}, decode {kube_decode:>6.2}, decode+defaults {kube_read:>6.2}",
            msgpack.len(),
            kube.len()
        );
    }
}

/// One build's rows on a fresh etcd: (label, µs of server CPU per request).
async fn server_rows(label: &str, bin: &Path, seconds: Duration) -> Vec<(&'static str, f64)> {
    let etcd = actix_web::rt::task::spawn_blocking(EtcdProcess::start).await.expect("etcd");
    let server = TestServer::start_binary(bin, &["--storage-backend", "etcd3", "--etcd-servers", etcd.endpoint()]);
    println!("-- {label} ({})", bin.display());
    let client = server.client(true);
    let url = server.url("/api/v1/namespaces/default/configmaps");
    let hot = client.post(&url).send_json(&json!({"metadata": {"name": "hot"}, "data": {"k": "v"}})).await;
    assert_eq!(hot.expect("seed").status().as_u16(), 201);
    let pid = server.pid();
    let per = |used: Duration, n: usize| used.as_secs_f64() * 1e6 / n.max(1) as f64;
    let mut rows = Vec::new();

    let (cl, u) = (client.clone(), url.clone());
    let cpu = cpu_time(pid);
    let create = run(64, seconds, move |w, i| {
        let (cl, u) = (cl.clone(), u.clone());
        async move {
            let body = json!({"metadata": {"name": format!("c-{w}-{i}")}, "data": {"payload": "x".repeat(900)}});
            answered(cl.post(&u).send_json(&body).await, 201).await
        }
    })
    .await;
    let used = cpu_time(pid).saturating_sub(cpu);
    report_cpu("create configmap", 64, &create, None, Some(used));
    rows.push(("create", per(used, create.ops)));

    // Updates: each worker replaces its own object (a read-modify-write in the storage
    // stage, where the stored bytes are decoded, compared and written over).
    for w in 0..64 {
        let body = json!({"metadata": {"name": format!("u-{w}")}, "data": {"k": "0"}});
        assert!(answered(client.post(&url).send_json(&body).await, 201).await, "seed u-{w}");
    }
    let (cl, u) = (client.clone(), url.clone());
    let cpu = cpu_time(pid);
    let update = run(64, seconds, move |w, i| {
        let (cl, u) = (cl.clone(), u.clone());
        async move {
            let body = json!({"metadata": {"name": format!("u-{w}")}, "data": {"k": i.to_string(), "payload": "x".repeat(900)}});
            answered(cl.put(format!("{u}/u-{w}")).send_json(&body).await, 200).await
        }
    })
    .await;
    let used = cpu_time(pid).saturating_sub(cpu);
    report_cpu("update configmap", 64, &update, None, Some(used));
    rows.push(("update", per(used, update.ops)));

    let (cl, u) = (client.clone(), format!("{url}/hot"));
    let cpu = cpu_time(pid);
    let get = run(64, seconds, move |_, _| {
        let (cl, u) = (cl.clone(), u.clone());
        async move { answered(cl.get(&u).send().await, 200).await }
    })
    .await;
    let used = cpu_time(pid).saturating_sub(cpu);
    report_cpu("get configmap (cache)", 64, &get, None, Some(used));
    rows.push(("get", per(used, get.ops)));

    let (mut listed, started, cpu) = (0usize, Instant::now(), cpu_time(pid));
    for _ in 0..5 {
        let mut r = client.get(format!("{url}?resourceVersion=0")).send().await.expect("list");
        let list: Value = r.json().limit(1 << 30).await.expect("list body");
        listed += list["items"].as_array().map_or(0, Vec::len);
    }
    let used = cpu_time(pid).saturating_sub(cpu);
    println!(
        "list from the cache: {} objects each, {:.1} ms per list, server CPU {:.2} µs per object",
        listed / 5,
        started.elapsed().as_secs_f64() * 1000.0 / 5.0,
        per(used, listed)
    );
    rows.push(("list, per object", per(used, listed)));
    crate::watch::run_on(&server, seconds, &[(100, 100)]).await;
    rows
}

/// Runs the codec rows, then the server rows of this build and of `--baseline PATH` (from
/// `rest`), alternated twice.
pub async fn run_all(seconds: Duration, rest: Vec<String>) {
    let baseline = crate::baseline_build("format", &rest);
    codec_rows();
    let mut builds = vec![("kube's format (this build)", tests::apiserver_bin())];
    if let Some(b) = baseline {
        builds.push(("baseline build", b));
    }
    println!("== through the server on etcd, c=64, {} s per phase", seconds.as_secs_f64());
    let mut all: Vec<(usize, &str, f64)> = Vec::new();
    for _round in 0..2 {
        for (b, (label, bin)) in builds.iter().enumerate() {
            for (op, us) in server_rows(label, bin, seconds).await {
                all.push((b, op, us));
            }
        }
    }
    if builds.len() == 2 {
        for op in ["create", "update", "get", "list, per object"] {
            let mean = |b: usize| {
                let v: Vec<f64> = all.iter().filter(|r| r.0 == b && r.1 == op).map(|r| r.2).collect();
                v.iter().sum::<f64>() / v.len().max(1) as f64
            };
            println!(
                "== {op}: server CPU {:.1} µs (kube's format) vs {:.1} µs (baseline): {:.0}%",
                mean(0),
                mean(1),
                100.0 * mean(0) / mean(1)
            );
        }
    }
}
