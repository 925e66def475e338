//! The watch cache's hit rate (open question 5.1): how often an informer that restarts can
//! resume its watch from the cache rather than relist, and how often the server then lists
//! from storage, as compaction retention, the cache window and the object count vary.
//!
//! Each cell starts a server on its own etcd with the cell's window (`--default-watch-cache-size`,
//! freshness as given) and retention (`--etcd-compaction-interval`), creates the cell's
//! objects, and updates them at a steady rate while informers cycle: watch for a while, go away
//! for a random time, come back and resume from the last resourceVersion they saw. A resume the
//! cache cannot serve (410) is a miss, and the informer relists as client-go's reflector does
//! after one: a consistent list in pages of 500. Storage lists are counted from the server's own
//! `etcd_requests_total{operation="list"}`.
//!
//! The model: the window holds the last `max(W, r·F)` events (capacity `W`, freshness `F`, update
//! rate `r`), so a resume after a downtime `d` hits when `r·d ≤ max(W, r·F)`, i.e.
//! `d ≤ max(W/r, F)`; with `d` uniform on `[0, D]` the miss rate is
//! `max(0, 1 − max(W/r, F)/D)`. The object count does not appear: it sets what a miss costs (the
//! pages of a relist), not how often one happens. Retention does not appear either: the cache
//! keeps its window whatever etcd has compacted, so retention only bounds how old a continue
//! token may be, which a relist of a few pages never approaches.

use std::cell::Cell;
use std::rc::Rc;
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use serde::Serialize;
use serde_json::{Value, json};
use storage::etcd::testing::EtcdProcess;

use crate::TestServer;

/// What every cell shares.
#[derive(Clone, Debug, Serialize)]
pub struct WindowOptions {
    /// How long each cell's informers cycle.
    pub duration: Duration,
    /// Object updates per second.
    pub update_rate: f64,
    /// Informers.
    pub informers: usize,
    /// The longest downtime; each is uniform on `[0, max_down]`.
    pub max_down: Duration,
    /// The cache window's freshness (`--watch-cache-event-freshness`).
    pub freshness: Duration,
}

/// One cell of the sweep.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct SweepCell {
    /// The window's capacity in events (`--default-watch-cache-size`).
    pub window: usize,
    /// Compaction retention in seconds (`--etcd-compaction-interval`).
    pub retention_s: u64,
    /// Objects of the watched resource.
    pub objects: usize,
}

/// What one cell measured, beside the model.
#[derive(Clone, Debug, Serialize)]
pub struct CellResult {
    /// The cell.
    pub cell: SweepCell,
    /// Resumes tried.
    pub resumes: u64,
    /// Resumes refused with 410.
    pub misses: u64,
    /// `misses / resumes`.
    pub miss_rate: f64,
    /// The model's miss rate.
    pub predicted_miss_rate: f64,
    /// Lists the server sent to storage, per second.
    pub storage_lists_per_sec: f64,
    /// The model's storage lists per second: resumes per second times the model's miss rate
    /// times the pages of a relist.
    pub predicted_storage_lists_per_sec: f64,
    /// Updates per second achieved.
    pub updates_per_sec: f64,
}

/// The model's miss rate.
pub fn predicted_miss_rate(window: usize, rate: f64, freshness: Duration, max_down: Duration) -> f64 {
    let covered = (window as f64 / rate).max(freshness.as_secs_f64());
    (1.0 - covered / max_down.as_secs_f64()).max(0.0)
}

/// A small deterministic generator (xorshift), so runs draw the same downtimes.
struct Draw(Cell<u64>);

impl Draw {
    fn unit(&self) -> f64 {
        let mut x = self.0.get();
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0.set(x);
        (x >> 11) as f64 / (1u64 << 53) as f64
    }
}

fn resource_version(v: &Value) -> Option<String> {
    v["metadata"]["resourceVersion"].as_str().map(String::from)
}

/// A consistent list in pages of 500, as a reflector relists: the list's resourceVersion.
async fn relist(client: &awc::Client, base: &str) -> Option<String> {
    let mut token = String::new();
    loop {
        let url =
            if token.is_empty() { format!("{base}?limit=500") } else { format!("{base}?limit=500&continue={token}") };
        let mut r = client.get(url).send().await.ok()?;
        let page: Value = r.json().limit(1 << 28).await.ok()?;
        token = page["metadata"]["continue"].as_str().unwrap_or("").to_string();
        if token.is_empty() {
            return resource_version(&page);
        }
    }
}

/// Sums a counter's samples in a Prometheus text exposition, over the lines that hold `needles`.
fn counter(metrics: &str, name: &str, needles: &[&str]) -> f64 {
    metrics
        .lines()
        .filter(|l| l.starts_with(name) && needles.iter().all(|n| l.contains(n)))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

async fn storage_lists(admin: &awc::Client, url: &str) -> f64 {
    let Ok(mut r) = admin.get(url).send().await else { return 0.0 };
    let text = r.body().limit(1 << 26).await.map(|b| String::from_utf8_lossy(&b).into_owned()).unwrap_or_default();
    counter(&text, storage::metrics::ETCD_REQUESTS_TOTAL, &["operation=\"list\"", "type=\"configmaps\""])
}

/// Runs one cell. Run inside an actix runtime.
pub async fn run_cell(cell: SweepCell, options: &WindowOptions) -> CellResult {
    let etcd = EtcdProcess::start();
    let window = cell.window.to_string();
    let retention = format!("{}s", cell.retention_s);
    let freshness = format!("{}ms", options.freshness.as_millis());
    let server = TestServer::start_with(&[
        "--storage-backend",
        "etcd3",
        "--etcd-servers",
        etcd.endpoint(),
        "--default-watch-cache-size",
        &window,
        "--watch-cache-event-freshness",
        &freshness,
        "--etcd-compaction-interval",
        &retention,
    ]);
    let admin = server.client(true);
    let base = server.url("/api/v1/namespaces/window/configmaps");
    let _ = admin.post(server.url("/api/v1/namespaces")).send_json(&json!({"metadata": {"name": "window"}})).await;
    let mut creating = Vec::new();
    for i in 0..cell.objects {
        let (client, base) = (admin.clone(), base.clone());
        creating.push(actix_web::rt::spawn(async move {
            let body = json!({"metadata": {"name": format!("o-{i}")}, "data": {"v": "0", "pad": "x".repeat(512)}});
            let _ = client.post(base).send_json(&body).await;
        }));
        if creating.len() == 64 {
            for t in creating.drain(..) {
                let _ = t.await;
            }
        }
    }
    for t in creating {
        let _ = t.await;
    }

    let stop = Instant::now() + options.duration;
    // The updater: merge patches on a schedule, object after object.
    let updates = Rc::new(Cell::new(0u64));
    let updater = {
        let (client, base, updates, n, rate) =
            (admin.clone(), base.clone(), updates.clone(), cell.objects, options.update_rate);
        let mut tasks = Vec::new();
        const WRITERS: usize = 8;
        for w in 0..WRITERS {
            let (client, base, updates) = (client.clone(), base.clone(), updates.clone());
            tasks.push(actix_web::rt::spawn(async move {
                let first = Instant::now();
                let every = Duration::from_secs_f64(WRITERS as f64 / rate);
                let mut i = 0u64;
                while Instant::now() < stop {
                    actix_web::rt::time::sleep_until((first + every.mul_f64(i as f64)).into()).await;
                    let name = format!("o-{}", (i as usize * WRITERS + w) % n);
                    let patch = json!({"data": {"v": i.to_string()}});
                    let sent = client
                        .patch(format!("{base}/{name}"))
                        .content_type("application/merge-patch+json")
                        .send_body(patch.to_string())
                        .await;
                    if sent.is_ok_and(|r| r.status().is_success()) {
                        updates.set(updates.get() + 1);
                    }
                    i += 1;
                }
            }));
        }
        tasks
    };
    let metrics_url = server.url("/metrics");
    let lists_before = storage_lists(&admin, &metrics_url).await;
    let started = Instant::now();
    let (resumes, misses) = (Rc::new(Cell::new(0u64)), Rc::new(Cell::new(0u64)));
    let mut informers = Vec::new();
    for k in 0..options.informers {
        let (client, base, resumes, misses) = (admin.clone(), base.clone(), resumes.clone(), misses.clone());
        let max_down = options.max_down;
        informers.push(actix_web::rt::spawn(async move {
            let draw = Draw(Cell::new(0x9E37_79B9_7F4A_7C15 ^ (k as u64 + 1).wrapping_mul(0xBF58_476D_1CE4_E5B9)));
            let mut first = true;
            let mut rv = {
                let mut r = client.get(format!("{base}?resourceVersion=0")).send().await.ok();
                match r.as_mut() {
                    Some(r) => r.json::<Value>().limit(1 << 28).await.ok().and_then(|l| resource_version(&l)),
                    None => None,
                }
            };
            while Instant::now() < stop {
                let Some(from) = rv.clone() else {
                    rv = relist(&client, &base).await;
                    first = true;
                    continue;
                };
                let Ok(mut watch) = client
                    .get(format!("{base}?watch=1&resourceVersion={from}&allowWatchBookmarks=true"))
                    .timeout(Duration::from_secs(60))
                    .send()
                    .await
                else {
                    continue;
                };
                let watch_for = Duration::from_secs_f64(0.5 + draw.unit());
                let until = (Instant::now() + watch_for).min(stop);
                let (mut buffer, mut answered) = (Vec::new(), false);
                'read: while Instant::now() < until {
                    let next = actix_web::rt::time::timeout(until - Instant::now(), watch.next()).await;
                    let Ok(Some(Ok(chunk))) = next else { break };
                    buffer.extend_from_slice(&chunk);
                    while let Some(end) = buffer.iter().position(|b| *b == b'\n') {
                        let line: Vec<u8> = buffer.drain(..=end).collect();
                        let Ok(event) = serde_json::from_slice::<Value>(&line) else { continue };
                        if !answered && !first {
                            resumes.set(resumes.get() + 1);
                        }
                        answered = true;
                        if event["type"] == "ERROR" {
                            if event["object"]["code"] == 410 {
                                misses.set(misses.get() + 1);
                            }
                            rv = None;
                            break 'read;
                        }
                        if let Some(seen) = resource_version(&event["object"]) {
                            rv = Some(seen);
                        }
                    }
                }
                first = false;
                drop(watch);
                if rv.is_some() {
                    let down = max_down.mul_f64(draw.unit()).min(stop.saturating_duration_since(Instant::now()));
                    actix_web::rt::time::sleep(down).await;
                }
            }
        }));
    }
    for i in informers {
        let _ = i.await;
    }
    for u in updater {
        let _ = u.await;
    }
    let elapsed = started.elapsed().as_secs_f64();
    let lists = storage_lists(&admin, &metrics_url).await - lists_before;
    let (resumes, misses) = (resumes.get(), misses.get());
    let miss_rate = if resumes == 0 { 0.0 } else { misses as f64 / resumes as f64 };
    // The model reads the rate the updater achieved, which a busy machine may hold below the one
    // asked for.
    let rate = updates.get() as f64 / elapsed;
    let predicted = predicted_miss_rate(cell.window, rate, options.freshness, options.max_down);
    let pages = cell.objects.div_ceil(500).max(1) as f64;
    drop(etcd);
    CellResult {
        cell,
        resumes,
        misses,
        miss_rate,
        predicted_miss_rate: predicted,
        storage_lists_per_sec: lists / elapsed,
        predicted_storage_lists_per_sec: predicted * resumes as f64 / elapsed * pages,
        updates_per_sec: rate,
    }
}

/// The results as a table.
pub fn table(results: &[CellResult]) -> String {
    let mut out = String::from(
        "| window (events) | retention | objects | updates/s | resumes | misses | miss rate | model | storage lists/s | model |\n\
         |---|---|---|---|---|---|---|---|---|---|\n",
    );
    for r in results {
        out.push_str(&format!(
            "| {} | {} s | {} | {:.0} | {} | {} | {:.2} | {:.2} | {:.2} | {:.2} |\n",
            r.cell.window,
            r.cell.retention_s,
            r.cell.objects,
            r.updates_per_sec,
            r.resumes,
            r.misses,
            r.miss_rate,
            r.predicted_miss_rate,
            r.storage_lists_per_sec,
            r.predicted_storage_lists_per_sec
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_model_misses_what_outlasts_the_window() {
        let d = Duration::from_secs(4);
        // 100 events at 200/s last half a second: a downtime above it misses.
        assert!((predicted_miss_rate(100, 200.0, Duration::ZERO, d) - 0.875).abs() < 1e-9);
        // Freshness keeps more when it covers longer than the capacity.
        assert!((predicted_miss_rate(100, 200.0, Duration::from_secs(2), d) - 0.5).abs() < 1e-9);
        assert_eq!(predicted_miss_rate(1_000, 200.0, Duration::ZERO, d), 0.0);
    }

    #[test]
    fn counters_are_summed_over_the_lines_that_match() {
        let text = "etcd_requests_total{operation=\"list\",type=\"configmaps\"} 3\n\
                    etcd_requests_total{operation=\"get\",type=\"configmaps\"} 5\n\
                    etcd_requests_total{operation=\"list\",type=\"pods\"} 7\n";
        assert_eq!(counter(text, "etcd_requests_total", &["operation=\"list\"", "type=\"configmaps\""]), 3.0);
    }
}
