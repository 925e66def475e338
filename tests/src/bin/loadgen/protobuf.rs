//! Protobuf beside JSON in one run: GET of one object and LIST of 10,000 from the cache in
//! each encoding, and resident memory per cached object before and after the cache holds the
//! protobuf forms (which a protobuf watcher and a protobuf list make it encode).
//!
//! On etcd, where the cache is the only copy of the objects inside the apiserver: the memory
//! of a server on an empty prefix is the baseline.

use std::sync::Arc;
use std::time::{Duration, Instant};

use storage::Storage;
use storage::etcd::testing::EtcdProcess;
use tests::TestServer;

use crate::cache::fill;
use crate::{Phase, answered, cpu_time, report_cpu, rss_mib, run};

const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";
const JSON: &str = "application/json";

async fn get_phase(server: &TestServer, accept: &'static str, c: usize, seconds: Duration) -> (Phase, Duration) {
    let client = server.client(true);
    let url = server.url("/api/v1/namespaces/default/configmaps/cm-1");
    let cpu = cpu_time(server.pid());
    let phase = run(c, seconds, move |_, _| {
        let (cl, u) = (client.clone(), url.clone());
        async move { answered(cl.get(&u).insert_header(("Accept", accept)).send().await, 200).await }
    })
    .await;
    (phase, cpu_time(server.pid()).saturating_sub(cpu))
}

/// p50 and minimum of `times` lists, and the response size.
async fn list_p50(server: &TestServer, accept: &str, times: usize) -> (f64, f64, usize) {
    let client = server.client(true);
    let url = server.url("/api/v1/namespaces/default/configmaps?resourceVersion=0");
    let mut latencies = Vec::new();
    let mut size = 0;
    for round in 0..=times {
        let started = Instant::now();
        let mut r = client.get(&url).insert_header(("Accept", accept)).send().await.expect("list");
        let body = r.body().limit(1 << 30).await.expect("list body");
        assert!(r.status().is_success());
        // The first round is unmeasured: connection set-up, first growth of buffers.
        if round > 0 {
            latencies.push(started.elapsed().as_secs_f64() * 1000.0);
        }
        size = body.len();
    }
    latencies.sort_by(f64::total_cmp);
    (latencies[latencies.len() / 2], latencies[0], size)
}

pub async fn run_all(seconds: Duration) {
    let n = 10_000;
    let etcd = actix_web::rt::task::spawn_blocking(EtcdProcess::start).await.expect("etcd");
    let store: Arc<dyn Storage> = etcd.connect().await.expect("connect etcd");
    println!("== protobuf beside JSON: {n} configmaps of about 1 KiB on etcd {}", etcd.endpoint());
    fill(&store, "/pb", n).await;
    let args = |p: &str| {
        ["--storage-backend", "etcd3", "--etcd-servers", etcd.endpoint(), "--etcd-prefix", p].map(str::to_string)
    };
    let empty_args = args("/pb-empty");
    let full_args = args("/pb");
    let empty = TestServer::start_with(&empty_args.iter().map(String::as_str).collect::<Vec<_>>());
    let full = TestServer::start_with(&full_args.iter().map(String::as_str).collect::<Vec<_>>());
    actix_web::rt::time::sleep(Duration::from_secs(2)).await;

    // GET: JSON first, then protobuf (whose first read encodes the object once).
    for c in [1usize, 16] {
        let (json, json_cpu) = get_phase(&full, JSON, c, seconds).await;
        report_cpu("get configmap JSON", c, &json, None, Some(json_cpu));
        let (pb, pb_cpu) = get_phase(&full, PROTOBUF, c, seconds).await;
        report_cpu("get configmap protobuf", c, &pb, Some(&json), Some(pb_cpu));
    }

    // Memory with JSON only (the GETs above encoded one object in protobuf).
    let base = rss_mib(empty.pid());
    let json_only = rss_mib(full.pid());
    // LIST: JSON, then protobuf (the first protobuf list encodes every object once).
    let (json_p50, json_min, json_size) = list_p50(&full, JSON, 10).await;
    let (pb_p50, pb_min, pb_size) = list_p50(&full, PROTOBUF, 10).await;
    println!("list {n} JSON      p50 {json_p50:>7.1} ms  min {json_min:>7.1} ms  {:>5.1} MB", json_size as f64 / 1e6);
    println!(
        "list {n} protobuf  p50 {pb_p50:>7.1} ms  min {pb_min:>7.1} ms  {:>5.1} MB   protobuf is {:.2}x faster (p50), {:.2}x the bytes",
        pb_size as f64 / 1e6,
        json_p50 / pb_p50,
        pb_size as f64 / json_size as f64
    );

    // A protobuf watcher, held open while memory is read again.
    let client = full.client(true);
    let watch_url = full.url("/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=0");
    let watch = client.get(&watch_url).insert_header(("Accept", PROTOBUF)).send().await.expect("watch");
    assert_eq!(watch.status().as_u16(), 200);
    actix_web::rt::time::sleep(Duration::from_secs(2)).await;
    let with_protobuf = rss_mib(full.pid());
    let per = |mib: f64| (mib - base) * (1 << 20) as f64 / n as f64;
    println!(
        "memory per cached object: {:.0} bytes JSON only, {:.0} bytes with protobuf forms and a protobuf watcher: {:.2}x",
        per(json_only),
        per(with_protobuf),
        per(with_protobuf) / per(json_only)
    );
    drop(watch);
}
