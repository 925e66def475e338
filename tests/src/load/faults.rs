//! The fault run: a steady load through the local fleet's balancer (`deploy/fleet.sh`) while
//! three processes are killed with SIGKILL in turn and started again: the etcd cluster's
//! leader, one gateway replica, and the `churn` storage stage process (events and leases).
//!
//! Writers create ConfigMaps (stored on the etcd cluster) and Events (stored through the stage
//! process on the churn etcd) at a fixed rate, open loop (a create leaves on time even while
//! earlier ones hang, so a stall shows as slow requests rather than as requests not sent), each
//! bounded by a timeout and never retried, so every failure a client would see is counted. Watchers of each resource, each on
//! a connection of its own, re-watch from the last resourceVersion they saw whenever their
//! stream ends, as an informer does, and never relist: a watch that cannot resume (410) is a
//! failure of the run.
//!
//! Per fault and resource (a request counting in the window it ended in) it reports requests,
//! errors by code, the error rate, p99 and the longest request, how long after the kill the
//! last failed or slow request was sent (the recovery time: every later one succeeded
//! promptly; slow is five times the p99 before the first fault, at least 250 ms), how long the
//! restarted process took to be ready, and the longest pause in each watcher's delivery. Afterwards it checks etcd's own record: every acknowledged create
//! is there, and every watcher saw exactly etcd's keys created after it started, once each, in
//! revision order.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Event, Namespace};
use kube::api::{Api, ApiResource, DynamicObject, ListParams, PostParams, WatchEvent, WatchParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use serde::Serialize;
use serde_json::json;

use super::plot::{self, Series};
use super::{Quantiles, write_json};
use crate::fleet::{LocalFleet, etcd_keys};

/// The namespace the run writes in.
pub const NAMESPACE: &str = "faults";
/// How long one create may take before the writer counts it as failed (`timeout`).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// A request slower than this many times the p99 before the first fault (and at least
/// [`SLOW_FLOOR_MS`]) counts against recovery, as a failed one does.
const SLOW_FACTOR: f64 = 5.0;
const SLOW_FLOOR_MS: f64 = 250.0;
/// How long the writers go on trying the final markers, and watchers waiting for them.
const FINISH_WITHIN: Duration = Duration::from_secs(60);

/// What to run.
#[derive(Clone, Debug)]
pub struct FaultOptions {
    /// The fleet's first port (see `deploy/fleet.sh`).
    pub port_base: u16,
    /// Gateway replicas behind the balancer.
    pub gateways: usize,
    /// Creates per second of each resource.
    pub rate: f64,
    /// Creates of one resource in flight at most (creates leave at the rate whether or not
    /// earlier ones were answered, up to this many).
    pub inflight: usize,
    /// Watchers per resource.
    pub watchers: usize,
    /// Load before the first fault, and after each restart before the next fault.
    pub settle: Duration,
    /// How long a killed process stays down before it is started again.
    pub down_for: Duration,
    /// Where `faults.json` and the figures go.
    pub out: PathBuf,
}

impl FaultOptions {
    /// A run of 10 s steps at 40 creates/s of each resource, writing into `out`.
    pub fn new(out: &Path) -> Self {
        FaultOptions {
            port_base: 23000,
            gateways: 2,
            rate: 40.0,
            inflight: 64,
            watchers: 2,
            settle: Duration::from_secs(10),
            down_for: Duration::from_secs(5),
            out: out.to_path_buf(),
        }
    }
}

/// The two resources written: one on each side of the shard boundary.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Resource {
    ConfigMaps,
    Events,
}

impl Resource {
    const ALL: [Resource; 2] = [Resource::ConfigMaps, Resource::Events];

    fn name(self) -> &'static str {
        match self {
            Resource::ConfigMaps => "configmaps",
            Resource::Events => "events",
        }
    }

    fn api_resource(self) -> ApiResource {
        match self {
            Resource::ConfigMaps => ApiResource::erase::<ConfigMap>(&()),
            Resource::Events => ApiResource::erase::<Event>(&()),
        }
    }

    fn object(self, name: &str) -> serde_json::Value {
        match self {
            Resource::ConfigMaps => json!({
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": name}, "data": {"payload": "x".repeat(256)},
            }),
            Resource::Events => json!({
                "apiVersion": "v1", "kind": "Event",
                "metadata": {"name": name},
                "involvedObject": {"apiVersion": "v1", "kind": "ConfigMap", "namespace": NAMESPACE, "name": name},
                "reason": "FaultRun", "message": "written during the fault run", "type": "Normal",
                "source": {"component": "loadgen"}, "count": 1,
            }),
        }
    }
}

/// The processes killed, in order.
#[derive(Clone, Copy, Debug)]
enum Fault {
    EtcdLeader,
    Gateway,
    StageProcess,
}

/// One request.
#[derive(Clone, Debug, Serialize)]
pub struct Sample {
    /// `configmaps` or `events`.
    pub resource: &'static str,
    /// When it was sent, in seconds since the load began.
    pub start_s: f64,
    /// How long it took.
    pub latency_ms: f64,
    /// Its HTTP status when refused, `timeout`, or `no answer`; none when acknowledged.
    pub error: Option<String>,
    /// The error's message.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// One resource's requests and watches during one fault's window.
#[derive(Clone, Debug, Serialize)]
pub struct ResourceDuring {
    /// `configmaps` or `events`.
    pub resource: &'static str,
    /// Creates that ended in the window.
    pub requests: usize,
    /// Those that failed.
    pub errors: usize,
    /// Failed creates by status.
    pub errors_by_code: BTreeMap<String, usize>,
    /// The first message of each status.
    pub error_examples: BTreeMap<String, String>,
    /// Latencies of all the window's creates.
    pub latency: Quantiles,
    /// The longest create.
    pub max_ms: f64,
    /// From the kill until the last failed or slow create of the window was sent: every create
    /// sent after it succeeded promptly. 0 when none failed or was slow after the kill.
    pub recovered_after_s: f64,
    /// From the kill until the last failed create of the window was sent (negative: it was sent
    /// before, and was in flight at the kill); none when none failed.
    pub last_failure_sent_s: Option<f64>,
    /// Times its watchers re-watched in the window.
    pub rewatches: usize,
    /// The longest time any of its watchers went without an event in the window.
    pub longest_watch_pause_s: f64,
}

/// One fault.
#[derive(Clone, Debug, Serialize)]
pub struct FaultRow {
    /// The process killed, as the fleet names it.
    pub process: String,
    /// What it is.
    pub role: &'static str,
    /// When it was killed, in seconds since the load began.
    pub killed_at_s: f64,
    /// From the kill until it was started again and the fleet answered for it.
    pub back_after_s: f64,
    /// Each resource during the window from this kill to the next (or the end of the load).
    pub resources: Vec<ResourceDuring>,
}

/// What one watcher saw, checked against etcd.
#[derive(Clone, Debug, Serialize)]
pub struct WatcherCheck {
    /// Its resource.
    pub resource: &'static str,
    /// The resourceVersion it started from.
    pub from: String,
    /// Objects it saw created.
    pub added: usize,
    /// Times it re-watched.
    pub rewatches: usize,
    /// What differed from etcd's record, if anything.
    pub problem: Option<String>,
}

/// The run.
#[derive(Clone, Debug, Serialize)]
pub struct FaultReport {
    /// The balancer the clients went through.
    pub endpoint: String,
    /// Creates per second of each resource, creates in flight at most and watchers per resource.
    pub shape: BTreeMap<&'static str, f64>,
    /// Create p99 before the first fault (its second half).
    pub baseline_p99_ms: f64,
    /// A create slower than this counted against recovery.
    pub slow_ms: f64,
    /// Each fault in turn.
    pub faults: Vec<FaultRow>,
    /// Acknowledged creates of each resource.
    pub acknowledged: BTreeMap<&'static str, usize>,
    /// Acknowledged creates etcd does not hold.
    pub lost: Vec<String>,
    /// Every watcher.
    pub watchers: Vec<WatcherCheck>,
    /// Every create, in the order sent.
    pub samples: Vec<Sample>,
}

impl FaultReport {
    /// Whether nothing acknowledged was lost and every watcher saw exactly etcd's record.
    pub fn lossless(&self) -> bool {
        self.lost.is_empty() && self.watchers.iter().all(|w| w.problem.is_none())
    }
}

/// One watcher's record.
#[derive(Default)]
struct WatchLog {
    /// `(name, resourceVersion, seconds since the load began)` of each object created.
    added: Vec<(String, u64, f64)>,
    /// When each re-watch began.
    rewatches: Vec<f64>,
    /// A watch that could not resume, or an event that was not a create.
    broken: Option<String>,
}

async fn client(kubeconfig: &Path, read_timeout: Option<Duration>) -> Result<kube::Client, String> {
    let kubeconfig = Kubeconfig::read_from(kubeconfig).map_err(|e| format!("kubeconfig: {e}"))?;
    let mut config = kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .map_err(|e| format!("kubeconfig: {e}"))?;
    config.connect_timeout = Some(Duration::from_secs(2));
    config.read_timeout = read_timeout;
    kube::Client::try_from(config).map_err(|e| format!("client: {e}"))
}

fn api(client: &kube::Client, resource: Resource) -> Api<DynamicObject> {
    Api::namespaced_with(client.clone(), NAMESPACE, &resource.api_resource())
}

/// Creates `name`; the error as the report names it (a status, `no answer` or `timeout`), with
/// its message.
async fn create(api: &Api<DynamicObject>, resource: Resource, name: &str) -> Result<(), (String, String)> {
    let object: DynamicObject =
        serde_json::from_value(resource.object(name)).map_err(|e| ("invalid".to_string(), e.to_string()))?;
    match tokio::time::timeout(REQUEST_TIMEOUT, api.create(&PostParams::default(), &object)).await {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(kube::Error::Api(status))) => Err((status.code.to_string(), status.message)),
        Ok(Err(e)) => Err(("no answer".into(), e.to_string())),
        Err(_) => Err(("timeout".into(), format!("no answer within {REQUEST_TIMEOUT:?}"))),
    }
}

struct Load {
    started: Instant,
    samples: Mutex<Vec<Sample>>,
    acknowledged: Mutex<Vec<(Resource, String)>>,
    stop: AtomicBool,
}

impl Load {
    fn now_s(&self) -> f64 {
        self.started.elapsed().as_secs_f64()
    }
}

/// Creates `<prefix>-<i>` objects at `rate` per second, at most `inflight` at a time, until
/// told to stop; waits for the last ones.
async fn writer(load: Arc<Load>, api: Api<DynamicObject>, resource: Resource, rate: f64, inflight: usize) {
    let mut tick = tokio::time::interval(Duration::from_secs_f64(1.0 / rate));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let slots = Arc::new(tokio::sync::Semaphore::new(inflight));
    let mut i = 0;
    while !load.stop.load(Ordering::Relaxed) {
        tick.tick().await;
        let Ok(slot) = slots.clone().acquire_owned().await else { return };
        let name = format!("{}-{i}", &resource.name()[..2]);
        i += 1;
        let (load, api) = (load.clone(), api.clone());
        tokio::spawn(async move {
            let start_s = load.now_s();
            let sent = Instant::now();
            let result = create(&api, resource, &name).await;
            let latency_ms = sent.elapsed().as_secs_f64() * 1e3;
            if result.is_ok() {
                load.acknowledged.lock().expect("acknowledged").push((resource, name));
            }
            let (error, message) = result.err().unzip();
            let sample = Sample { resource: resource.name(), start_s, latency_ms, error, message };
            load.samples.lock().expect("samples").push(sample);
            drop(slot);
        });
    }
    // Every slot back: every create answered.
    let _ = slots.acquire_many(inflight as u32).await;
}

/// Watches from `rv`, re-watching from the last resourceVersion seen whenever the stream ends,
/// until it sees the object `stop` or `until` passes.
async fn watcher(
    load: Arc<Load>,
    api: Api<DynamicObject>,
    mut rv: String,
    log: Arc<Mutex<WatchLog>>,
    until: Arc<Mutex<Option<Instant>>>,
) {
    let params = WatchParams::default().timeout(290);
    loop {
        if let Ok(stream) = api.watch(&params, &rv).await {
            let mut stream = std::pin::pin!(stream);
            while let Some(item) = stream.next().await {
                match item {
                    Ok(WatchEvent::Added(o)) => {
                        let name = o.metadata.name.clone().unwrap_or_default();
                        rv = o.metadata.resource_version.clone().unwrap_or_default();
                        let at = load.now_s();
                        log.lock().expect("log").added.push((name.clone(), rv.parse().unwrap_or(0), at));
                        if name == "stop" {
                            return;
                        }
                    }
                    Ok(WatchEvent::Bookmark(b)) => rv = b.metadata.resource_version,
                    Ok(WatchEvent::Modified(o) | WatchEvent::Deleted(o)) => {
                        let name = o.metadata.name.unwrap_or_default();
                        log.lock().expect("log").broken = Some(format!("an event other than a create, for {name}"));
                        return;
                    }
                    Ok(WatchEvent::Error(e)) if e.code == 410 => {
                        log.lock().expect("log").broken = Some(format!("could not resume from {rv}: {}", e.message));
                        return;
                    }
                    Ok(WatchEvent::Error(_)) | Err(_) => break,
                }
            }
        }
        if until.lock().expect("until").is_some_and(|u| Instant::now() > u) {
            return;
        }
        log.lock().expect("log").rewatches.push(load.now_s());
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Runs `deploy/fleet.sh args` off the async threads.
async fn fleet_ok(fleet: &Arc<LocalFleet>, args: &'static [&'static str]) -> Result<String, String> {
    let fleet = fleet.clone();
    tokio::task::spawn_blocking(move || fleet.ok(args)).await.map_err(|e| format!("fleet.sh {args:?}: {e}"))
}

/// Runs the whole fault run (inside a tokio runtime): brings a fleet up in a directory of its
/// own, loads it, kills and restarts each process in turn, checks etcd, prints the table,
/// writes `faults.json`, `faults-latency.svg` and `faults-errors.svg` into `options.out`, and
/// brings the fleet down.
pub async fn run(options: &FaultOptions) -> Result<FaultReport, String> {
    let fleet = Arc::new(LocalFleet::new(options.port_base, options.gateways));
    fleet_ok(&fleet, &["up"]).await?;
    println!("== fault run: {} gateways behind {}", options.gateways, fleet.balancer());
    let writers = client(&fleet.kubeconfig(), Some(REQUEST_TIMEOUT)).await?;
    let namespace = json!({"metadata": {"name": NAMESPACE}});
    let namespace: Namespace = serde_json::from_value(namespace).map_err(|e| e.to_string())?;
    Api::<Namespace>::all(writers.clone())
        .create(&PostParams::default(), &namespace)
        .await
        .map_err(|e| format!("namespace {NAMESPACE}: {e}"))?;

    let load = Arc::new(Load {
        started: Instant::now(),
        samples: Mutex::default(),
        acknowledged: Mutex::default(),
        stop: AtomicBool::new(false),
    });
    // Watchers first, each on a client (a connection) of its own, from the resource's current
    // resourceVersion.
    let until: Arc<Mutex<Option<Instant>>> = Arc::default();
    let mut watches = Vec::new();
    for resource in Resource::ALL {
        let list = api(&writers, resource).list(&ListParams::default().limit(1)).await;
        let from = list.map_err(|e| format!("listing {}: {e}", resource.name()))?.metadata.resource_version;
        let from = from.unwrap_or_default();
        for _ in 0..options.watchers {
            let own = client(&fleet.kubeconfig(), None).await?;
            let log = Arc::new(Mutex::new(WatchLog::default()));
            let task =
                tokio::spawn(watcher(load.clone(), api(&own, resource), from.clone(), log.clone(), until.clone()));
            watches.push((resource, from.clone(), log, task));
        }
    }
    let mut writing = Vec::new();
    for resource in Resource::ALL {
        let api = api(&writers, resource);
        writing.push(tokio::spawn(writer(load.clone(), api, resource, options.rate, options.inflight)));
    }

    let mut kills = Vec::new();
    tokio::time::sleep(options.settle).await;
    for fault in [Fault::EtcdLeader, Fault::Gateway, Fault::StageProcess] {
        let (process, role) = match fault {
            Fault::EtcdLeader => {
                let leader = fleet.etcd_leader().ok_or("no etcd member says it leads")?;
                (format!("etcd-{leader}"), "etcd leader")
            }
            Fault::Gateway => ("gateway-1".to_string(), "gateway replica"),
            Fault::StageProcess => ("stage-churn".to_string(), "storage stage process (events, leases)"),
        };
        let killed_at = load.now_s();
        let killed = fleet.run(&["kill", &process]);
        if !killed.status.success() {
            return Err(format!("killing {process}: {}", String::from_utf8_lossy(&killed.stderr)));
        }
        println!("[{killed_at:>6.1} s] kill -9 {process} ({role})");
        tokio::time::sleep(options.down_for).await;
        fleet_ok(&fleet, &["up"]).await?;
        let back_at = load.now_s();
        println!("[{back_at:>6.1} s] {process} started again and answering");
        kills.push((process, role, killed_at, back_at - killed_at));
        tokio::time::sleep(options.settle).await;
    }
    load.stop.store(true, Ordering::Relaxed);
    for w in writing {
        let _ = w.await;
    }
    let load_ended = load.now_s();

    // A last create of each resource, which every watcher must reach.
    let finish_by = Instant::now() + FINISH_WITHIN;
    *until.lock().expect("until") = Some(finish_by);
    for resource in Resource::ALL {
        while let Err(e) = create(&api(&writers, resource), resource, "stop").await {
            if Instant::now() > finish_by {
                return Err(format!("the final {} create kept failing: {} {}", resource.name(), e.0, e.1));
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
    for (_, _, _, task) in &mut watches {
        let left = finish_by.saturating_duration_since(Instant::now());
        let _ = tokio::time::timeout(left, task).await;
    }

    let mut samples = std::mem::take(&mut *load.samples.lock().expect("samples"));
    samples.sort_by(|a, b| a.start_s.total_cmp(&b.start_s));
    let acknowledged = std::mem::take(&mut *load.acknowledged.lock().expect("acknowledged"));

    // etcd's record.
    let mut stored = BTreeMap::new();
    for resource in Resource::ALL {
        let (endpoints, prefix) = match resource {
            Resource::ConfigMaps => (fleet.etcd_endpoints(), format!("/registry/configmaps/{NAMESPACE}/")),
            Resource::Events => (fleet.churn_etcd(), format!("/registry/events/{NAMESPACE}/")),
        };
        stored.insert(resource.name(), etcd_keys(&endpoints, &prefix)?);
    }
    let lost: Vec<String> = acknowledged
        .iter()
        .filter(|(r, name)| !stored[r.name()].iter().any(|(n, _)| n == name))
        .map(|(r, name)| format!("{}/{name}", r.name()))
        .collect();
    let mut watchers = Vec::new();
    let mut logs = Vec::new();
    for (resource, from, log, task) in watches {
        task.abort();
        let log = std::mem::take(&mut *log.lock().expect("log"));
        let from_rv: u64 = from.parse().unwrap_or(0);
        let expected: Vec<(String, u64)> =
            stored[resource.name()].iter().filter(|(_, rev)| *rev > from_rv).cloned().collect();
        let seen: Vec<(String, u64)> = log.added.iter().map(|(n, rv, _)| (n.clone(), *rv)).collect();
        let problem = log.broken.clone().or_else(|| compare(&expected, &seen));
        watchers.push(WatcherCheck {
            resource: resource.name(),
            from,
            added: seen.len(),
            rewatches: log.rewatches.len(),
            problem,
        });
        logs.push((resource, log));
    }

    let mut before: Vec<Duration> = samples
        .iter()
        // After the first connections are set up, before the first kill.
        .filter(|s| s.error.is_none() && s.start_s >= options.settle.as_secs_f64() / 2.0)
        .filter(|s| kills.first().is_some_and(|k| s.start_s + s.latency_ms / 1e3 < k.2))
        .map(|s| Duration::from_secs_f64(s.latency_ms / 1e3))
        .collect();
    let baseline_p99_ms = Quantiles::of(&mut before).p99_ms;
    let slow_ms = (baseline_p99_ms * SLOW_FACTOR).max(SLOW_FLOOR_MS);
    let mut faults = Vec::new();
    for (i, (process, role, killed_at, back_after)) in kills.iter().enumerate() {
        let window_end = kills.get(i + 1).map(|k| k.2).unwrap_or(load_ended);
        let resources =
            Resource::ALL.iter().map(|r| during(*r, &samples, &logs, slow_ms, (*killed_at, window_end))).collect();
        faults.push(FaultRow {
            process: process.clone(),
            role,
            killed_at_s: *killed_at,
            back_after_s: *back_after,
            resources,
        });
    }
    let count = |r: Resource| acknowledged.iter().filter(|(a, _)| *a == r).count();
    let shape = BTreeMap::from([
        ("rate_per_resource", options.rate),
        ("inflight_per_resource", options.inflight as f64),
        ("watchers_per_resource", options.watchers as f64),
        ("gateways", options.gateways as f64),
        ("down_for_s", options.down_for.as_secs_f64()),
    ]);
    let report = FaultReport {
        endpoint: fleet.balancer(),
        shape,
        baseline_p99_ms,
        slow_ms,
        faults,
        acknowledged: Resource::ALL.iter().map(|r| (r.name(), count(*r))).collect(),
        lost,
        watchers,
        samples,
    };
    print!("{}", table(&report));
    write_files(&report, &options.out)?;
    fleet_ok(&fleet, &["down"]).await?;
    Ok(report)
}

/// The first difference between what etcd holds and what a watcher saw, if any.
fn compare(expected: &[(String, u64)], seen: &[(String, u64)]) -> Option<String> {
    if expected == seen {
        return None;
    }
    let at = expected.iter().zip(seen).position(|(e, s)| e != s).unwrap_or(expected.len().min(seen.len()));
    Some(format!(
        "saw {} events, etcd holds {}; first difference at #{at}: etcd {:?}, watcher {:?}",
        seen.len(),
        expected.len(),
        expected.get(at),
        seen.get(at)
    ))
}

/// `resource` during `[from, to)`.
fn during(
    resource: Resource,
    samples: &[Sample],
    logs: &[(Resource, WatchLog)],
    slow_ms: f64,
    (from, to): (f64, f64),
) -> ResourceDuring {
    // A request belongs to the window it ended in: one in flight at a kill fails because of it.
    let ended = |s: &Sample| s.start_s + s.latency_ms / 1e3;
    let mine: Vec<&Sample> =
        samples.iter().filter(|s| s.resource == resource.name() && ended(s) >= from && ended(s) < to).collect();
    let mut errors_by_code = BTreeMap::new();
    let mut error_examples = BTreeMap::new();
    for s in &mine {
        if let Some(e) = &s.error {
            *errors_by_code.entry(e.clone()).or_insert(0) += 1;
            error_examples.entry(e.clone()).or_insert_with(|| s.message.clone().unwrap_or_default());
        }
    }
    let recovered_at =
        mine.iter().filter(|s| s.error.is_some() || s.latency_ms > slow_ms).map(|s| s.start_s).fold(from, f64::max);
    let mut latencies: Vec<Duration> = mine.iter().map(|s| Duration::from_secs_f64(s.latency_ms / 1e3)).collect();
    let watching = logs.iter().filter(|(r, _)| *r == resource);
    let rewatches = watching.clone().map(|(_, l)| l.rewatches.iter().filter(|t| **t >= from && **t < to).count()).sum();
    // The longest stretch of the window in which a watcher received nothing.
    let longest_watch_pause_s = watching
        .map(|(_, l)| {
            let mut last = from;
            let mut longest: f64 = 0.0;
            for (_, _, at) in l.added.iter().filter(|(_, _, at)| *at >= from && *at < to) {
                longest = longest.max(at - last);
                last = *at;
            }
            longest.max(to - last)
        })
        .fold(0.0, f64::max);
    ResourceDuring {
        resource: resource.name(),
        requests: mine.len(),
        errors: mine.iter().filter(|s| s.error.is_some()).count(),
        errors_by_code,
        error_examples,
        latency: Quantiles::of(&mut latencies),
        max_ms: mine.iter().map(|s| s.latency_ms).fold(0.0, f64::max),
        recovered_after_s: recovered_at - from,
        last_failure_sent_s: mine.iter().filter(|s| s.error.is_some()).map(|s| s.start_s - from).reduce(f64::max),
        rewatches,
        longest_watch_pause_s,
    }
}

/// The report as a table a reader can compare: one row per fault and resource, then the
/// checks against etcd.
pub fn table(report: &FaultReport) -> String {
    let mut out = format!(
        "create p99 before the first fault {:.1} ms; recovered: the last failed or slower than {:.0} ms create sent\n",
        report.baseline_p99_ms, report.slow_ms
    );
    out += &format!(
        "{:<13} {:<11} {:>8} {:>7} {:>7} {:>8} {:>8} {:>10} {:>9} {:>9} {:>10}  errors by code\n",
        "killed",
        "resource",
        "creates",
        "errors",
        "rate",
        "p99 ms",
        "max ms",
        "recovered",
        "back",
        "rewatch",
        "watch gap"
    );
    for f in &report.faults {
        for r in &f.resources {
            let codes: Vec<String> = r.errors_by_code.iter().map(|(c, n)| format!("{c}: {n}")).collect();
            out.push_str(&format!(
                "{:<13} {:<11} {:>8} {:>7} {:>6.1}% {:>8.1} {:>8.0} {:>8.2} s {:>7.1} s {:>9} {:>8.2} s  {}\n",
                f.process,
                r.resource,
                r.requests,
                r.errors,
                100.0 * r.errors as f64 / r.requests.max(1) as f64,
                r.latency.p99_ms,
                r.max_ms,
                r.recovered_after_s,
                f.back_after_s,
                r.rewatches,
                r.longest_watch_pause_s,
                codes.join(", ")
            ));
        }
    }
    for f in &report.faults {
        for r in &f.resources {
            for (code, message) in &r.error_examples {
                out.push_str(&format!("  {} {} {code}: {message}\n", f.process, r.resource));
            }
        }
    }
    let acknowledged: Vec<String> = report.acknowledged.iter().map(|(r, n)| format!("{n} {r}")).collect();
    out.push_str(&format!(
        "acknowledged: {}; lost: {}\n",
        acknowledged.join(", "),
        match report.lost.is_empty() {
            true => "none".to_string(),
            false => report.lost.join(", "),
        }
    ));
    for (i, w) in report.watchers.iter().enumerate() {
        out.push_str(&format!(
            "watcher {i} ({} from {}): {} creates seen, {} rewatches, {}\n",
            w.resource,
            w.from,
            w.added,
            w.rewatches,
            w.problem.as_deref().unwrap_or("exactly etcd's record, in order")
        ));
    }
    out
}

fn write_files(report: &FaultReport, out: &Path) -> Result<(), String> {
    write_json(&out.join("faults.json"), report).map_err(|e| format!("faults.json: {e}"))?;
    let marks: Vec<(f64, String)> =
        report.faults.iter().map(|f| (f.killed_at_s, format!("kill {}", f.process))).collect();
    let per_second = |resource: &str, value: fn(&[&Sample]) -> f64| -> Vec<(f64, f64)> {
        let mine: Vec<&Sample> = report.samples.iter().filter(|s| s.resource == resource).collect();
        let end = mine.last().map(|s| s.start_s as usize).unwrap_or(0);
        (0..=end)
            .map(|sec| {
                let bin: Vec<&Sample> = mine.iter().copied().filter(|s| s.start_s as usize == sec).collect();
                // At the middle of its second.
                (sec as f64 + 0.5, value(&bin))
            })
            .collect()
    };
    let p99 = |bin: &[&Sample]| {
        let mut l: Vec<Duration> = bin.iter().map(|s| Duration::from_secs_f64(s.latency_ms / 1e3)).collect();
        Quantiles::of(&mut l).p99_ms.max(0.1)
    };
    let errors = |bin: &[&Sample]| bin.iter().filter(|s| s.error.is_some()).count() as f64;
    let names = ["configmaps", "events"];
    let latency: Vec<Series> = names.iter().map(|r| (format!("{r} p99"), per_second(r, p99))).collect();
    let failed: Vec<Series> = names.iter().map(|r| (format!("{r} failed"), per_second(r, errors))).collect();
    let title = "create p99 per second, through the balancer";
    plot::timeline_marked(&out.join("faults-latency.svg"), title, "ms", &latency, true, &marks)?;
    let title = "failed creates per second";
    plot::timeline_marked(&out.join("faults-errors.svg"), title, "creates", &failed, false, &marks)?;
    println!(
        "== wrote {}",
        ["faults.json", "faults-latency.svg", "faults-errors.svg"]
            .map(|f| out.join(f).display().to_string())
            .join(", ")
    );
    Ok(())
}
