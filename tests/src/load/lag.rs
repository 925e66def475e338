//! Revision lag (open question 5.2): how far behind storage each kind of read through the API
//! is, while clients contend on a Lease (leader election) and others create objects fast.
//!
//! Every read is bracketed by a linearizable read of storage's current revision `r0` taken just
//! before it (etcd itself, or for the embedded store the admin endpoint's direct read): a read
//! that answers at a revision below `r0` missed writes that were committed before it was sent.
//!
//! - **consistent** (`resourceVersion` unset): lag `r0 − rv`; must be 0.
//! - **RV=0** (`resourceVersion=0`, any cached state): lag `r0 − rv`.
//! - **Exact** (`resourceVersion=r0&resourceVersionMatch=Exact`): must answer at `r0` exactly;
//!   its lag is `r0 − rv` too, and refusals are counted.
//! - **watch**: sampled every few milliseconds: writes of the watched resource acknowledged to
//!   their clients at revisions up to `r0` that the watcher has not received yet.
//!
//! Lists read a namespace holding one object, so their cost is the cache's, not the objects'.

use std::cell::{Cell, RefCell};
use std::collections::BTreeSet;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use serde::Serialize;
use serde_json::{Value, json};

use crate::TestServer;

/// Where the reference revision comes from.
#[derive(Clone)]
pub enum Authority {
    /// etcd itself, read linearizably.
    Etcd(Arc<dyn storage::Storage>),
    /// The server's admin endpoint reading its embedded store directly (`/debug/storage/revision`).
    Admin(String),
}

impl Authority {
    /// etcd at `endpoint`, read directly.
    pub async fn etcd(endpoint: &str) -> Result<Authority, String> {
        let options = storage::etcd::EtcdOptions { endpoints: vec![endpoint.to_string()], ..Default::default() };
        let store = storage::etcd::EtcdStore::connect(options).await.map_err(|e| e.to_string())?;
        Ok(Authority::Etcd(store))
    }

    async fn revision(&self) -> Option<u64> {
        match self {
            Authority::Etcd(store) => store.current_revision().await.ok(),
            Authority::Admin(url) => {
                let mut r = awc::Client::default().get(url).send().await.ok()?;
                let v: Value = r.json().await.ok()?;
                v["backends"][0]["revision"].as_u64()
            }
        }
    }
}

/// How hard to push.
#[derive(Clone, Debug, Serialize)]
pub struct LagOptions {
    /// How long to measure.
    pub duration: Duration,
    /// Clients creating ConfigMaps.
    pub writers: usize,
    /// Creates per second, all writers together (0: as fast as they are answered).
    pub rate: f64,
    /// Clients contending on one Lease.
    pub lease_contenders: usize,
}

/// One kind of read's lag, in revisions.
#[derive(Clone, Debug, Default, Serialize)]
pub struct KindLag {
    /// The read kind.
    pub kind: String,
    /// Reads measured.
    pub samples: usize,
    /// Median lag.
    pub p50: u64,
    /// 99th percentile.
    pub p99: u64,
    /// Largest.
    pub max: u64,
    /// Share of reads with no lag at all.
    pub zero_share: f64,
    /// Reads refused or failed.
    pub errors: usize,
}

/// One run.
#[derive(Clone, Debug, Serialize)]
pub struct LagReport {
    /// The backend.
    pub backend: String,
    /// ConfigMaps created per second.
    pub creates_per_sec: f64,
    /// Lease updates that won, and that lost on a conflict, per second.
    pub lease_updates_per_sec: f64,
    /// Lease updates refused with 409.
    pub lease_conflicts_per_sec: f64,
    /// Every read kind's lag.
    pub kinds: Vec<KindLag>,
}

impl KindLag {
    fn of(kind: &str, mut lags: Vec<u64>, errors: usize) -> Self {
        lags.sort_unstable();
        let at = |q: f64| {
            if lags.is_empty() {
                return 0;
            }
            lags[((lags.len() as f64 * q).ceil() as usize).clamp(1, lags.len()) - 1]
        };
        KindLag {
            kind: kind.to_string(),
            samples: lags.len(),
            p50: at(0.50),
            p99: at(0.99),
            max: lags.last().copied().unwrap_or(0),
            zero_share: if lags.is_empty() {
                0.0
            } else {
                lags.iter().filter(|l| **l == 0).count() as f64 / lags.len() as f64
            },
            errors,
        }
    }
}

fn resource_version(v: &Value) -> Option<u64> {
    v["metadata"]["resourceVersion"].as_str()?.parse().ok()
}

async fn json_of(client: &awc::Client, method: &str, url: &str, body: Option<&Value>) -> (u16, Value) {
    let request = client.request(method.parse().expect("method"), url);
    let sent = match body {
        Some(b) => request.send_json(b).await,
        None => request.send().await,
    };
    match sent {
        Ok(mut r) => {
            let code = r.status().as_u16();
            (code, r.json().limit(1 << 26).await.unwrap_or(Value::Null))
        }
        Err(_) => (0, Value::Null),
    }
}

/// Measures every read kind's lag against `server` for `options.duration`. Run inside an actix
/// runtime.
pub async fn run(server: &TestServer, authority: Authority, backend: &str, options: &LagOptions) -> LagReport {
    let admin = server.client(true);
    for ns in ["lag-w", "lag-r", "lag-l"] {
        json_of(&admin, "POST", &server.url("/api/v1/namespaces"), Some(&json!({"metadata": {"name": ns}}))).await;
    }
    let anchor = json!({"metadata": {"name": "anchor"}, "data": {"a": "b"}});
    json_of(&admin, "POST", &server.url("/api/v1/namespaces/lag-r/configmaps"), Some(&anchor)).await;
    let lease = json!({"metadata": {"name": "leader"}, "spec": {"holderIdentity": "none", "leaseDurationSeconds": 15}});
    json_of(&admin, "POST", &server.url("/apis/coordination.k8s.io/v1/namespaces/lag-l/leases"), Some(&lease)).await;

    let stop = Instant::now() + options.duration;
    let acked: Rc<RefCell<BTreeSet<u64>>> = Rc::default();
    let delivered = Rc::new(Cell::new(0u64));
    let started_at = authority.revision().await.unwrap_or(0);

    // The watcher, from the revision the run starts at.
    let watch = {
        let (client, delivered) = (admin.clone(), delivered.clone());
        let url = server.url(&format!("/api/v1/namespaces/lag-w/configmaps?watch=1&resourceVersion={started_at}"));
        actix_web::rt::spawn(async move {
            let Ok(mut r) = client.get(url).timeout(Duration::from_secs(3600)).send().await else { return };
            let mut buffer = Vec::new();
            while let Some(Ok(chunk)) = r.next().await {
                buffer.extend_from_slice(&chunk);
                while let Some(end) = buffer.iter().position(|b| *b == b'\n') {
                    let line: Vec<u8> = buffer.drain(..=end).collect();
                    if let Ok(event) = serde_json::from_slice::<Value>(&line)
                        && let Some(rv) = resource_version(&event["object"])
                    {
                        delivered.set(delivered.get().max(rv));
                    }
                }
                if Instant::now() > stop {
                    break;
                }
            }
        })
    };

    let mut tasks = Vec::new();
    // Writers: creates at the rate asked for (each writer its share, on a schedule), or as fast
    // as they are answered; every acknowledged revision is kept.
    let creates = Rc::new(Cell::new(0usize));
    let interval = (options.rate > 0.0).then(|| Duration::from_secs_f64(options.writers as f64 / options.rate));
    for w in 0..options.writers {
        let (client, acked, creates) = (admin.clone(), acked.clone(), creates.clone());
        let url = server.url("/api/v1/namespaces/lag-w/configmaps");
        tasks.push(actix_web::rt::spawn(async move {
            let mut i = 0;
            let first = Instant::now();
            while Instant::now() < stop {
                if let Some(every) = interval {
                    let due = first + every.mul_f64(i as f64);
                    actix_web::rt::time::sleep_until(due.into()).await;
                }
                let body = json!({"metadata": {"name": format!("w-{w}-{i}")}, "data": {"i": i.to_string()}});
                if let (201, created) = json_of(&client, "POST", &url, Some(&body)).await
                    && let Some(rv) = resource_version(&created)
                {
                    acked.borrow_mut().insert(rv);
                    creates.set(creates.get() + 1);
                }
                i += 1;
            }
            (Vec::new(), 0)
        }));
    }
    // Lease contenders: read, then take the lease if its resourceVersion still holds.
    let (won, lost) = (Rc::new(Cell::new(0usize)), Rc::new(Cell::new(0usize)));
    for c in 0..options.lease_contenders {
        let (client, won, lost) = (admin.clone(), won.clone(), lost.clone());
        let url = server.url("/apis/coordination.k8s.io/v1/namespaces/lag-l/leases/leader");
        tasks.push(actix_web::rt::spawn(async move {
            while Instant::now() < stop {
                let (_, mut lease) = json_of(&client, "GET", &url, None).await;
                lease["spec"]["holderIdentity"] = json!(format!("contender-{c}"));
                lease["spec"]["renewTime"] =
                    json!(chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Micros, true));
                match json_of(&client, "PUT", &url, Some(&lease)).await.0 {
                    200 => won.set(won.get() + 1),
                    409 => lost.set(lost.get() + 1),
                    _ => {}
                }
                actix_web::rt::time::sleep(Duration::from_millis(10)).await;
            }
            (Vec::new(), 0)
        }));
    }
    // Readers: one per list kind, each read bracketed by the authority's revision.
    let list = server.url("/api/v1/namespaces/lag-r/configmaps");
    for kind in ["consistent", "RV=0", "Exact"] {
        let (client, authority, list) = (admin.clone(), authority.clone(), list.clone());
        tasks.push(actix_web::rt::spawn(async move {
            let (mut lags, mut errors) = (Vec::new(), 0);
            while Instant::now() < stop {
                let Some(r0) = authority.revision().await else {
                    errors += 1;
                    continue;
                };
                let url = match kind {
                    "consistent" => list.clone(),
                    "RV=0" => format!("{list}?resourceVersion=0"),
                    _ => format!("{list}?resourceVersion={r0}&resourceVersionMatch=Exact"),
                };
                match json_of(&client, "GET", &url, None).await {
                    (200, answer) => match resource_version(&answer) {
                        Some(rv) => lags.push(r0.saturating_sub(rv)),
                        None => errors += 1,
                    },
                    _ => errors += 1,
                }
            }
            (lags, errors)
        }));
    }
    // The watch sampler.
    let sampler = {
        let (authority, acked, delivered) = (authority.clone(), acked.clone(), delivered.clone());
        actix_web::rt::spawn(async move {
            let (mut lags, mut errors) = (Vec::new(), 0);
            while Instant::now() < stop {
                match authority.revision().await {
                    Some(r0) => {
                        let seen = delivered.get();
                        let missed = if seen >= r0 { 0 } else { acked.borrow().range(seen + 1..=r0).count() };
                        lags.push(missed as u64);
                    }
                    None => errors += 1,
                }
                actix_web::rt::time::sleep(Duration::from_millis(2)).await;
            }
            (lags, errors)
        })
    };

    let began = Instant::now();
    let mut results = Vec::new();
    for t in tasks {
        results.push(t.await.unwrap_or_default());
    }
    let watch_lags = sampler.await.unwrap_or_default();
    let elapsed = began.elapsed().as_secs_f64().max(options.duration.as_secs_f64());
    watch.abort();
    let readers = &results[options.writers + options.lease_contenders..];
    let mut kinds: Vec<KindLag> = ["consistent", "RV=0", "Exact"]
        .iter()
        .zip(readers)
        .map(|(kind, (lags, errors))| KindLag::of(kind, lags.clone(), *errors))
        .collect();
    kinds.push(KindLag::of("watch", watch_lags.0, watch_lags.1));
    LagReport {
        backend: backend.to_string(),
        creates_per_sec: creates.get() as f64 / elapsed,
        lease_updates_per_sec: won.get() as f64 / elapsed,
        lease_conflicts_per_sec: lost.get() as f64 / elapsed,
        kinds,
    }
}

/// The report as a table.
pub fn table(reports: &[LagReport]) -> String {
    let mut out = String::from(
        "| backend | creates/s | lease updates/s (409/s) | read | reads | lag p50 | p99 | max | no lag | errors |\n\
         |---|---|---|---|---|---|---|---|---|---|\n",
    );
    for r in reports {
        for k in &r.kinds {
            out.push_str(&format!(
                "| {} | {:.0} | {:.0} ({:.0}) | {} | {} | {} | {} | {} | {:.1}% | {} |\n",
                r.backend,
                r.creates_per_sec,
                r.lease_updates_per_sec,
                r.lease_conflicts_per_sec,
                k.kind,
                k.samples,
                k.p50,
                k.p99,
                k.max,
                k.zero_share * 100.0,
                k.errors
            ));
        }
    }
    out
}
