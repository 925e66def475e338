//! A quick throughput benchmark of the embedded store, ignored by default:
//! `cargo test --release -p storage --test embedded_bench -- --ignored --nocapture`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use storage::embedded::{EmbeddedOptions, EmbeddedStore};
use storage::{Expect, ListOptions, Storage};

/// A value the size of a typical ConfigMap.
fn value() -> Bytes {
    Bytes::from(vec![b'v'; 700])
}

/// Creates as many keys as `concurrency` loops manage in `duration`; returns creates per second.
async fn creates(store: &Arc<EmbeddedStore>, concurrency: usize, duration: Duration, tag: &str) -> f64 {
    let started = Instant::now();
    let mut tasks = Vec::new();
    for t in 0..concurrency {
        let store = Arc::clone(store);
        let tag = tag.to_string();
        tasks.push(tokio::spawn(async move {
            let mut n = 0u64;
            while started.elapsed() < duration {
                let key = format!("/registry/configmaps/bench-{tag}/c{t}-{n}");
                store.put(&key, value(), Expect::Absent).await.unwrap();
                n += 1;
            }
            n
        }));
    }
    let mut total = 0;
    for t in tasks {
        total += t.await.unwrap();
    }
    total as f64 / started.elapsed().as_secs_f64()
}

/// Guaranteed updates of distinct keys from `concurrency` loops; returns updates per second.
async fn updates(store: &Arc<EmbeddedStore>, concurrency: usize, duration: Duration) -> f64 {
    let started = Instant::now();
    let mut tasks = Vec::new();
    for t in 0..concurrency {
        let store = Arc::clone(store);
        tasks.push(tokio::spawn(async move {
            let key = format!("/registry/configmaps/bench-upd/k{t}");
            let mut rev = store.put(&key, value(), Expect::Absent).await.unwrap().mod_revision;
            let mut n = 0u64;
            while started.elapsed() < duration {
                rev = store.put(&key, value(), Expect::ModRevision(rev)).await.unwrap().mod_revision;
                n += 1;
            }
            n
        }));
    }
    let mut total = 0;
    for t in tasks {
        total += t.await.unwrap();
    }
    total as f64 / started.elapsed().as_secs_f64()
}

/// Gets of existing keys from `concurrency` loops; returns gets per second.
async fn gets(store: &Arc<EmbeddedStore>, keys: usize, concurrency: usize, duration: Duration) -> f64 {
    let started = Instant::now();
    let mut tasks = Vec::new();
    for t in 0..concurrency {
        let store = Arc::clone(store);
        tasks.push(tokio::spawn(async move {
            let mut n = 0usize;
            while started.elapsed() < duration {
                for _ in 0..256 {
                    let key = format!("/registry/configmaps/bench-get/k{}", (n * 7919 + t) % keys);
                    assert!(store.get(&key).await.unwrap().0.is_some());
                    n += 1;
                }
            }
            n
        }));
    }
    let mut total = 0;
    for t in tasks {
        total += t.await.unwrap();
    }
    total as f64 / started.elapsed().as_secs_f64()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "benchmark; run with --release -- --ignored --nocapture"]
async fn bench_group_commit_linger() {
    let secs = Duration::from_secs(2);
    for linger in [0, 200, 500, 1000] {
        let dir = tempfile::tempdir().unwrap();
        let options = EmbeddedOptions { group_commit_linger: Duration::from_micros(linger), ..Default::default() };
        let store = EmbeddedStore::open(dir.path(), options).unwrap();
        let c1 = creates(&store, 1, secs, "c1").await;
        let c64 = creates(&store, 64, secs, "c64").await;
        println!("linger {linger:>4} us: creates/s at concurrency 1: {c1:>6.0}, at 64: {c64:>6.0}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "benchmark; run with --release -- --ignored --nocapture"]
async fn bench_embedded() {
    let dir = tempfile::tempdir().unwrap();
    let store = EmbeddedStore::open(dir.path(), EmbeddedOptions::default()).unwrap();
    let secs = Duration::from_secs(3);
    println!("creates/s, concurrency 1:   {:>9.0}", creates(&store, 1, secs, "c1").await);
    println!("creates/s, concurrency 64:  {:>9.0}", creates(&store, 64, secs, "c64").await);
    println!("creates/s, concurrency 256: {:>9.0}", creates(&store, 256, secs, "c256").await);
    println!("updates/s, concurrency 64:  {:>9.0}", updates(&store, 64, secs).await);

    const KEYS: usize = 10_000;
    for i in 0..KEYS {
        store.put(&format!("/registry/configmaps/bench-get/k{i}"), value(), Expect::Absent).await.unwrap();
    }
    println!("gets/s, concurrency 1:      {:>9.0}", gets(&store, KEYS, 1, secs).await);
    println!("gets/s, concurrency 2:      {:>9.0}", gets(&store, KEYS, 2, secs).await);

    let started = Instant::now();
    let mut n = 0;
    while started.elapsed() < secs {
        let page = store
            .list("/registry/configmaps/bench-get/", ListOptions { limit: 500, ..Default::default() })
            .await
            .unwrap();
        assert_eq!((page.items.len(), page.remaining), (500, KEYS as u64 - 500));
        n += 1;
    }
    println!("lists/s of 500 of {KEYS} keys: {:>6.0}", n as f64 / started.elapsed().as_secs_f64());

    let revision = store.current_revision().await.unwrap();
    let size = std::fs::metadata(dir.path().join(storage::embedded::LOG_FILE)).unwrap().len();
    let started = Instant::now();
    store.compact(revision).await.unwrap();
    let after = std::fs::metadata(dir.path().join(storage::embedded::LOG_FILE)).unwrap().len();
    println!("compact at {revision}: {:?}, log {size} -> {after} bytes", started.elapsed());
    drop(store);
    let started = Instant::now();
    let store = EmbeddedStore::open(dir.path(), EmbeddedOptions::default()).unwrap();
    println!("reopen with {} keys: {:?}", store.count("/").await.unwrap(), started.elapsed());
}
