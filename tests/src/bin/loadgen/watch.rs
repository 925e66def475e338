//! The watch axis under load: N watchers on one resource while a writer changes objects at a
//! fixed rate. Each change carries the time its write was sent; each watcher notes when the
//! event reached it, so delivery latency is "write sent → event received" (the write's own
//! latency included, reported beside it). Watchers are plain HTTPS watch requests spread over
//! two client threads, on the same two cores as the server.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use actix_rt::Arbiter;
use futures_util::StreamExt;
use serde_json::json;
use tests::TestServer;

use crate::rss_mib;

const NAMESPACE: &str = "watchbench";
/// Objects the writer cycles through.
const OBJECTS: usize = 100;
/// The annotation carrying the write's send time, in nanoseconds since the epoch.
const SENT: &str = "loadgen-sent";
const CLIENT_THREADS: usize = 2;
/// Watches a client thread opens at once.
const WAVE: usize = 200;

/// CPU seconds (user + system) a process has used.
fn cpu_seconds(pid: &str) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command name (which may hold spaces) start after its closing parenthesis.
    let fields: Vec<&str> = stat.rsplit_once(')').map_or("", |(_, rest)| rest).split_whitespace().collect();
    let ticks: f64 = [11, 12].iter().filter_map(|&i| fields.get(i)?.parse::<f64>().ok()).sum();
    ticks / 100.0
}

fn now_nanos() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).expect("clock after 1970").as_nanos() as u64
}

/// The send time a watch event line carries, found without parsing the whole object.
fn sent_nanos(line: &[u8]) -> Option<u64> {
    const KEY: &[u8] = b"\"loadgen-sent\":\"";
    let at = memchr::memmem::find(line, KEY)? + KEY.len();
    let digits = line[at..].iter().take_while(|b| b.is_ascii_digit()).count();
    std::str::from_utf8(&line[at..at + digits]).ok()?.parse().ok()
}

/// What one client thread's watchers saw.
#[derive(Default)]
struct Seen {
    /// Delivery latencies in microseconds.
    latencies: Vec<u32>,
    /// Watches that ended before the phase did (cut off by the server).
    ended_early: usize,
    /// Watches that could not start.
    failed: usize,
}

/// One watch request, read until the server ends it.
async fn watch(client: awc::Client, url: String, seen: Rc<RefCell<Seen>>, connected: Arc<AtomicUsize>, until: Instant) {
    let mut response = match client.get(&url).send().await {
        Ok(r) if r.status().is_success() => r,
        _ => {
            seen.borrow_mut().failed += 1;
            connected.fetch_add(1, Ordering::Relaxed);
            return;
        }
    };
    connected.fetch_add(1, Ordering::Relaxed);
    let mut buf: Vec<u8> = Vec::with_capacity(4096);
    while let Some(chunk) = response.next().await {
        let Ok(chunk) = chunk else { break };
        let received = now_nanos();
        buf.extend_from_slice(&chunk);
        let mut start = 0;
        while let Some(end) = memchr::memchr(b'\n', &buf[start..]) {
            if let Some(sent) = sent_nanos(&buf[start..start + end]) {
                let micros = received.saturating_sub(sent) / 1_000;
                seen.borrow_mut().latencies.push(micros.min(u32::MAX as u64) as u32);
            }
            start += end + 1;
        }
        buf.drain(..start);
    }
    if Instant::now() + Duration::from_secs(1) < until {
        seen.borrow_mut().ended_early += 1;
    }
}

thread_local! {
    static SEEN: Rc<RefCell<Seen>> = Rc::default();
}

/// Changes objects at `rate` per second for `duration`; returns the write latencies.
async fn write(client: &awc::Client, server: &TestServer, rate: u32, duration: Duration) -> Vec<Duration> {
    let latencies: Rc<RefCell<Vec<Duration>>> = Rc::default();
    let mut tick = actix_web::rt::time::interval(Duration::from_secs_f64(1.0 / rate as f64));
    let stop = Instant::now() + duration;
    let mut tasks = Vec::new();
    let mut i = 0usize;
    while Instant::now() < stop {
        tick.tick().await;
        let url = server.url(&format!("/api/v1/namespaces/{NAMESPACE}/configmaps/obj-{}", i % OBJECTS));
        let (client, latencies) = (client.clone(), latencies.clone());
        tasks.push(actix_web::rt::spawn(async move {
            let started = Instant::now();
            let patch = json!({ "metadata": { "annotations": { SENT: now_nanos().to_string() } }, "data": { "i": i.to_string() } });
            let sent = client
                .patch(&url)
                .insert_header(("Content-Type", "application/merge-patch+json"))
                .send_body(patch.to_string())
                .await;
            if let Ok(mut r) = sent {
                let _ = r.body().await;
                if r.status().is_success() {
                    latencies.borrow_mut().push(started.elapsed());
                }
            }
        }));
        i += 1;
    }
    for t in tasks {
        let _ = t.await;
    }
    Rc::try_unwrap(latencies).map(RefCell::into_inner).unwrap_or_default()
}

fn quantile<T: Copy + Ord>(sorted: &[T], q: f64) -> Option<T> {
    if sorted.is_empty() {
        return None;
    }
    Some(sorted[((sorted.len() as f64 * q).ceil() as usize).clamp(1, sorted.len()) - 1])
}

/// One phase: `watchers` watches, `rate` changes/s for `duration`.
async fn phase(
    server: &TestServer,
    client: &awc::Client,
    arbiters: &[Arbiter],
    watchers: usize,
    rate: u32,
    duration: Duration,
) {
    let list: serde_json::Value = client
        .get(server.url(&format!("/api/v1/namespaces/{NAMESPACE}/configmaps")))
        .send()
        .await
        .expect("list")
        .json()
        .limit(64 << 20)
        .await
        .expect("list json");
    let rv = list["metadata"]["resourceVersion"].as_str().expect("list resourceVersion").to_string();
    let before = rss_mib(server.pid());
    let connect_started = Instant::now();
    // Watches last the phase plus a margin; ending earlier means the server cut them off.
    let timeout = duration.as_secs() + 8;
    let until = Instant::now() + Duration::from_secs(timeout);
    let url = server.url(&format!(
        "/api/v1/namespaces/{NAMESPACE}/configmaps?watch=1&resourceVersion={rv}&timeoutSeconds={timeout}"
    ));
    let connected = Arc::new(AtomicUsize::new(0));
    for (t, arbiter) in arbiters.iter().enumerate() {
        let share = watchers / arbiters.len() + usize::from(t < watchers % arbiters.len());
        let (url, connected, tls) = (url.clone(), connected.clone(), server.tls_config(true));
        // The client is per thread (not Send): the wave loop runs as a local task there.
        arbiter.spawn(async move {
            actix_web::rt::spawn(open_watches(tls, url, connected, share, watchers, until));
        });
    }
    while connected.load(Ordering::Relaxed) < watchers {
        actix_web::rt::time::sleep(Duration::from_millis(20)).await;
    }
    let connect = connect_started.elapsed();
    actix_web::rt::time::sleep(Duration::from_millis(500)).await;
    let with_watchers = rss_mib(server.pid());

    let (server_cpu, client_cpu, started) =
        (cpu_seconds(&server.pid().to_string()), cpu_seconds("self"), Instant::now());
    let mut writes = write(client, server, rate, duration).await;
    let busy = started.elapsed().as_secs_f64();
    let server_cpu = (cpu_seconds(&server.pid().to_string()) - server_cpu) / busy;
    let client_cpu = (cpu_seconds("self") - client_cpu) / busy;
    // Let the last events arrive, then the watches end by their timeout.
    while Instant::now() < until + Duration::from_secs(1) {
        actix_web::rt::time::sleep(Duration::from_millis(100)).await;
    }
    let mut seen = Seen::default();
    for arbiter in arbiters {
        let (tx, rx) = tokio::sync::oneshot::channel();
        arbiter.spawn(async move {
            let _ = tx.send(SEEN.with(|s| std::mem::take(&mut *s.borrow_mut())));
        });
        let part = rx.await.expect("client thread");
        seen.latencies.extend(part.latencies);
        seen.ended_early += part.ended_early;
        seen.failed += part.failed;
    }
    seen.latencies.sort_unstable();
    writes.sort_unstable();
    let expected = writes.len() * watchers;
    let ms = |us: Option<u32>| us.map_or(f64::NAN, |u| u as f64 / 1000.0);
    println!(
        "{watchers:>6} watchers @ {rate:>3}/s: delivery p50 {:>8.2} ms  p99 {:>8.2} ms  max {:>8.2} ms | {:>8.0} events/s delivered, {}/{} events ({:.2}% lost), {} watchers cut off, {} failed to start | write p50 {:.2} ms | connect {:.1} s, {:.1} KiB per watcher | CPU cores busy: server {:.2} ({:.1} µs per delivered event), clients {:.2}",
        ms(quantile(&seen.latencies, 0.50)),
        ms(quantile(&seen.latencies, 0.99)),
        ms(seen.latencies.last().copied()),
        seen.latencies.len() as f64 / duration.as_secs_f64(),
        seen.latencies.len(),
        expected,
        100.0 * (expected.saturating_sub(seen.latencies.len())) as f64 / expected.max(1) as f64,
        seen.ended_early,
        seen.failed,
        quantile(&writes, 0.5).map_or(f64::NAN, |d| d.as_secs_f64() * 1000.0),
        connect.as_secs_f64(),
        (with_watchers - before) * 1024.0 / watchers as f64,
        server_cpu,
        server_cpu * 1e6 / (seen.latencies.len() as f64 / duration.as_secs_f64()).max(1.0),
        client_cpu,
    );
}

/// Opens `share` watches from this client thread, in waves.
async fn open_watches(
    tls: rustls::ClientConfig,
    url: String,
    connected: Arc<AtomicUsize>,
    share: usize,
    watchers: usize,
    until: Instant,
) {
    let client = watch_client(tls);
    // Connect in waves, as real clients arrive over time rather than in one instant:
    // thousands of simultaneous TLS handshakes would exceed the server's handshake
    // timeout.
    let mut started = 0;
    while started < share {
        let wave = (share - started).min(WAVE);
        let target = connected.load(Ordering::Relaxed) + wave;
        for _ in 0..wave {
            let seen = SEEN.with(Rc::clone);
            actix_web::rt::spawn(watch(client.clone(), url.clone(), seen, connected.clone(), until));
        }
        started += wave;
        let deadline = Instant::now() + Duration::from_secs(10);
        while connected.load(Ordering::Relaxed) < target.min(watchers) && Instant::now() < deadline {
            actix_web::rt::time::sleep(Duration::from_millis(5)).await;
        }
    }
}

fn watch_client(mut tls: rustls::ClientConfig) -> awc::Client {
    tls.alpn_protocols = vec![b"http/1.1".to_vec()];
    awc::Client::builder()
        .connector(awc::Connector::new().rustls_0_23(Arc::new(tls)).limit(0))
        .timeout(Duration::from_secs(120))
        .finish()
}

/// Runs every phase on a fresh embedded-store server.
pub async fn run(seconds: Duration, phases: &[(usize, u32)]) {
    let server = TestServer::start();
    println!(
        "== watch delivery (embedded store; objects of ~1 KiB; latency = write sent → event received, the write included)"
    );
    run_on(&server, seconds, phases).await;
}

/// Watch delivery with the ConfigMaps' storage stage in a process of its own (`apiserver stage`),
/// the gateway's cache following its feed, beside the same server storing them itself; each on
/// a fresh etcd of its own, in the same run.
pub async fn remote(seconds: Duration, phases: &[(usize, u32)]) {
    use storage::etcd::testing::EtcdProcess;
    use tests::fleet::{Deployment, ShardSpec, StageProcess};
    println!(
        "== watch delivery, ConfigMaps stored by this server beside a storage stage process (etcd; latency = write sent → event received, the write included)"
    );
    {
        let etcd = EtcdProcess::start();
        let server = TestServer::start_with(&["--storage-backend", "etcd3", "--etcd-servers", etcd.endpoint()]);
        println!("-- in process");
        run_on(&server, seconds, phases).await;
    }
    let etcd = EtcdProcess::start();
    let deployment = Deployment::new(&[ShardSpec::new("bench", &["configmaps"])]);
    let _stage =
        StageProcess::start(&deployment, "bench", &["--storage-backend", "etcd3", "--etcd-servers", etcd.endpoint()]);
    let mut flags = deployment.flags();
    flags.extend(["--storage-backend", "etcd3", "--etcd-servers", etcd.endpoint()].map(String::from));
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let server = TestServer::start_with(&flags);
    println!("-- through a storage stage process (writes to it, the gateway's cache follows its feed)");
    run_on(&server, seconds, phases).await;
}

/// Seeds the objects on `server`, then runs every phase.
pub(crate) async fn run_on(server: &TestServer, seconds: Duration, phases: &[(usize, u32)]) {
    let client = server.client(true);
    let ns = json!({ "metadata": { "name": NAMESPACE } });
    let r = client.post(server.url("/api/v1/namespaces")).send_json(&ns).await.expect("namespace");
    assert_eq!(r.status().as_u16(), 201);
    for i in 0..OBJECTS {
        let body = json!({ "metadata": { "name": format!("obj-{i}") }, "data": { "payload": "x".repeat(900) } });
        let url = server.url(&format!("/api/v1/namespaces/{NAMESPACE}/configmaps"));
        let r = client.post(url).send_json(&body).await.expect("seed");
        assert_eq!(r.status().as_u16(), 201);
    }
    let arbiters: Vec<Arbiter> = (0..CLIENT_THREADS).map(|_| Arbiter::new()).collect();
    for &(watchers, rate) in phases {
        phase(server, &client, &arbiters, watchers, rate, seconds).await;
    }
    for a in arbiters {
        a.stop();
    }
}
