//! The watch cache's memory and list path: resident memory per cached object against the
//! object's encoded size, and LIST of 10,000 and 100,000 objects from the cache versus from
//! storage, with latency and the server's peak extra memory while answering.
//!
//! Memory per object is measured on etcd, where the cache is the only copy inside the
//! apiserver: two servers on one etcd, one on an empty prefix and one on a prefix holding the
//! objects, differ by what their caches hold. Lists are measured on both backends.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::json;
use storage::embedded::{EmbeddedOptions, EmbeddedStore};
use storage::etcd::testing::EtcdProcess;
use storage::{Expect, Storage};
use tests::TestServer;

use crate::rss_mib;

/// A ConfigMap of about 1 KiB, as the apiserver would store it.
pub(crate) fn object(prefix: &str, i: usize) -> (String, serde_json::Value) {
    let obj = json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": format!("cm-{i}"),
            "namespace": "default",
            "uid": format!("00000000-0000-4000-8000-{i:012}"),
            "creationTimestamp": "2026-01-01T00:00:00Z",
            "labels": { "app": "bench", "shard": (i % 16).to_string() },
        },
        "data": { "payload": "x".repeat(800) },
    });
    (format!("{prefix}/configmaps/default/cm-{i}"), obj)
}

/// Writes `n` objects under `prefix` straight into the store.
pub(crate) async fn fill(store: &Arc<dyn Storage>, prefix: &str, n: usize) {
    fill_with(store, prefix, n, object).await;
}

/// Writes the `n` objects `make` shapes (key and object) straight into the store.
pub(crate) async fn fill_with(
    store: &Arc<dyn Storage>,
    prefix: &str,
    n: usize,
    make: fn(&str, usize) -> (String, serde_json::Value),
) {
    let configmaps = kinds::catalogue().find("", "v1", "configmaps").expect("configmaps are served");
    let mut batch = Vec::new();
    for i in 0..n {
        let (key, obj) = make(prefix, i);
        let store = store.clone();
        let value = storage_codec::codec::encode_object(&configmaps, &obj).expect("encodes");
        batch.push(actix_web::rt::spawn(async move { store.put(&key, value, Expect::Absent).await }));
        if batch.len() == 128 {
            for t in batch.drain(..) {
                t.await.expect("task").expect("put");
            }
        }
    }
    for t in batch {
        t.await.expect("task").expect("put");
    }
}

/// Samples a process's resident memory until stopped; returns the peak in MiB.
struct PeakRss {
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<f64>,
}

impl PeakRss {
    fn start(pid: u32) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut peak: f64 = 0.0;
            while !flag.load(Ordering::Relaxed) {
                peak = peak.max(rss_mib(pid));
                std::thread::sleep(Duration::from_millis(2));
            }
            peak.max(rss_mib(pid))
        });
        PeakRss { stop, thread }
    }

    fn stop(self) -> f64 {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().expect("sampler")
    }
}

/// Lists `query` `times` times; prints p50 latency, response size and peak extra memory.
async fn list(server: &TestServer, client: &awc::Client, label: &str, query: &str, times: usize) {
    let url = server.url(&format!("/api/v1/namespaces/default/configmaps{query}"));
    let mut latencies = Vec::new();
    let mut bytes = 0;
    let mut items = 0;
    // One unmeasured round first: connection set-up and the allocator's first growth.
    let mut warm = client.get(&url).send().await.expect("list");
    let _ = warm.body().limit(1 << 30).await;
    let before = rss_mib(server.pid());
    let peak = PeakRss::start(server.pid());
    for _ in 0..times {
        let started = Instant::now();
        let mut r = client.get(&url).send().await.expect("list");
        let body = r.body().limit(1 << 30).await.expect("list body");
        latencies.push(started.elapsed());
        assert!(r.status().is_success(), "{label}: {}", String::from_utf8_lossy(&body[..body.len().min(300)]));
        bytes = body.len();
        if items == 0 {
            let v: serde_json::Value = serde_json::from_slice(&body).expect("list json");
            items = v["items"].as_array().map_or(0, Vec::len);
        }
    }
    let peak = peak.stop();
    latencies.sort();
    println!(
        "  {label:<52} {items:>7} items {:>7.1} MB   p50 {:>8.1} ms   min {:>8.1} ms   peak extra memory {:>6.1} MiB ({:.2}x the response)",
        bytes as f64 / 1e6,
        latencies[latencies.len() / 2].as_secs_f64() * 1000.0,
        latencies[0].as_secs_f64() * 1000.0,
        (peak - before).max(0.0),
        (peak - before).max(0.0) * (1 << 20) as f64 / bytes.max(1) as f64,
    );
}

async fn current_revision(server: &TestServer, client: &awc::Client) -> String {
    let url = server.url("/api/v1/namespaces/default/configmaps?limit=1");
    let v: serde_json::Value = client.get(&url).send().await.expect("list").json().await.expect("json");
    v["metadata"]["resourceVersion"].as_str().expect("resourceVersion").to_string()
}

async fn lists(server: &TestServer, consistent_from: &str) {
    let client = server.client(true);
    let rv = current_revision(server, &client).await;
    list(server, &client, "resourceVersion=0 (cache)", "?resourceVersion=0", 10).await;
    list(server, &client, &format!("consistent, no resourceVersion ({consistent_from})"), "", 10).await;
    let exact = format!("?resourceVersion={rv}&resourceVersionMatch=Exact");
    list(server, &client, "exact revision (storage)", &exact, 5).await;
}

/// Memory per cached object and lists, on etcd.
async fn on_etcd(sizes: &[usize]) {
    let etcd = actix_web::rt::task::spawn_blocking(EtcdProcess::start).await.expect("etcd");
    let store: Arc<dyn Storage> = etcd.connect().await.expect("connect etcd");
    println!("== watch cache on etcd {}: memory per cached object and LIST from cache vs storage", etcd.endpoint());
    for &n in sizes {
        let prefix = format!("/bench{n}");
        let started = Instant::now();
        fill(&store, &prefix, n).await;
        let filled = started.elapsed();
        let args = |p: &str| {
            vec![
                "--storage-backend".to_string(),
                "etcd3".into(),
                "--etcd-servers".into(),
                etcd.endpoint().into(),
                "--etcd-prefix".into(),
                p.into(),
            ]
        };
        let empty = TestServer::start_with(&args(&format!("/empty{n}")).iter().map(String::as_str).collect::<Vec<_>>());
        let full = TestServer::start_with(&args(&prefix).iter().map(String::as_str).collect::<Vec<_>>());
        actix_web::rt::time::sleep(Duration::from_secs(2)).await;
        let (base, loaded) = (rss_mib(empty.pid()), rss_mib(full.pid()));
        drop(empty);
        let client = full.client(true);
        let mut r = client.get(full.url("/api/v1/namespaces/default/configmaps/cm-1")).send().await.expect("get");
        let encoded = r.body().await.expect("body").len();
        let per_object = (loaded - base) * (1 << 20) as f64 / n as f64;
        println!(
            "{n} configmaps (filled in {:.1} s): apiserver resident {loaded:.1} MiB vs {base:.1} MiB empty: {:.0} bytes per cached object, {encoded} bytes encoded (JSON): {:.2}x",
            filled.as_secs_f64(),
            per_object,
            per_object / encoded as f64
        );
        lists(&full, "cache, once it has caught up").await;
    }
}

/// Lists on the embedded store, whose consistent reads the cache serves.
/// Memory per cached object and LIST timings on the embedded store, for `sizes` objects.
pub async fn on_embedded(sizes: &[usize]) {
    println!("== watch cache on the embedded store: LIST from cache vs storage");
    for &n in sizes {
        let dir = tempfile::tempdir().expect("temp dir");
        {
            let store: Arc<dyn Storage> =
                EmbeddedStore::open(&dir.path().join("store"), EmbeddedOptions::default()).expect("open store");
            fill(&store, "/registry", n).await;
        }
        let server = TestServer::start_in(dir.path());
        println!("{n} configmaps:");
        lists(&server, "cache").await;
    }
}

/// Runs both.
pub async fn run() {
    on_etcd(&[10_000, 100_000]).await;
    on_embedded(&[10_000, 100_000]).await;
}
