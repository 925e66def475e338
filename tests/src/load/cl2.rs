//! A clusterloader2-style load scenario against any Kubernetes endpoint, through kube-rs (the
//! client an operator would use), at a client-side QPS limit as clusterloader2's load test
//! runs:
//!
//! 1. **namespaces**: N namespaces, then a wait for each one's `default` ServiceAccount (pods
//!    are refused before it exists);
//! 2. **watchers**: W informer-like watches of the run's pods across namespaces, each listed
//!    before the load starts;
//! 3. **create**: M Deployments per namespace, each with its P pods as plain Pod objects
//!    (nothing schedules here, and a Deployment's own controller, where one runs, selects on
//!    a label these pods do not carry);
//! 4. **update**: every Deployment scaled through `/scale`, then every one annotated;
//! 5. **list**: the pods of each namespace listed in turn, for a fixed time;
//! 6. **delete**: every pod and Deployment; then (**teardown**) the namespaces.
//!
//! Requests leave at most at the QPS limit and at most `inflight` at a time. Every request is
//! recorded with its phase, verb, resource, start, latency and HTTP status; watchers record
//! how long after its create was sent each pod reached them. When the server's admin endpoint
//! is given, every stage's mailbox depth is sampled from its `GET /actors` every 200 ms (other
//! servers have no such endpoint: that figure is then left out).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use futures_util::StreamExt;
use indicatif::{ProgressBar, ProgressStyle};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Namespace, Pod, ServiceAccount};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::runtime::watcher::{self, Event};
use serde::Serialize;
use serde_json::{Value, json};
use tokio::sync::Semaphore;

use super::plot::{self, Series};
use super::{Quantiles, write_json};

/// The annotation carrying when a pod's create was sent, in microseconds since the epoch.
const SENT_AT: &str = "loadgen.k8s.io/sent-at";
/// How often the admin endpoint is sampled.
const MAILBOX_EVERY: Duration = Duration::from_millis(200);

/// What to run, and against what.
#[derive(Clone, Debug)]
pub struct Cl2Options {
    /// The kubeconfig of the endpoint (its current context).
    pub kubeconfig: PathBuf,
    /// Another server URL than the kubeconfig's.
    pub endpoint: Option<String>,
    /// The server's admin endpoint (`http://127.0.0.1:<port>`), serving `GET /actors`.
    pub admin: Option<String>,
    /// Namespaces.
    pub namespaces: usize,
    /// Deployments per namespace.
    pub deployments: usize,
    /// Pods per Deployment.
    pub pods: usize,
    /// The client's request rate limit.
    pub qps: f64,
    /// Requests in flight at most.
    pub inflight: usize,
    /// Watchers of the run's pods.
    pub watchers: usize,
    /// How long pods are listed.
    pub list_for: Duration,
    /// Where results and figures go.
    pub out: PathBuf,
}

impl Cl2Options {
    /// A small run against `kubeconfig`, writing into `out`.
    pub fn new(kubeconfig: &Path, out: &Path) -> Self {
        Cl2Options {
            kubeconfig: kubeconfig.to_path_buf(),
            endpoint: None,
            admin: None,
            namespaces: 10,
            deployments: 10,
            pods: 3,
            qps: 200.0,
            inflight: 32,
            watchers: 4,
            list_for: Duration::from_secs(5),
            out: out.to_path_buf(),
        }
    }
}

/// One request.
#[derive(Clone, Debug, Serialize)]
pub struct Sample {
    /// The phase it belongs to.
    pub phase: &'static str,
    /// `POST`, `PATCH`, `LIST`, `DELETE`.
    pub verb: &'static str,
    /// `pods`, `deployments/scale`.
    pub resource: &'static str,
    /// When it was sent, in seconds since the run began.
    pub start_s: f64,
    /// How long it took.
    pub latency_ms: f64,
    /// The error's HTTP status (0: no answer); none when it succeeded.
    pub error: Option<u16>,
}

/// The requests of one verb on one resource.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    /// The verb.
    pub verb: String,
    /// The resource.
    pub resource: String,
    /// Requests sent.
    pub count: usize,
    /// Requests per second over the time they were sent in.
    pub rate_per_sec: f64,
    /// Latencies of all of them.
    pub latency: Quantiles,
    /// Failures by HTTP status (`0`: no answer).
    pub errors: BTreeMap<String, usize>,
}

/// How long a phase took.
#[derive(Clone, Debug, Serialize)]
pub struct PhaseTime {
    /// Its name.
    pub name: &'static str,
    /// Seconds.
    pub seconds: f64,
    /// Requests it sent (waits send none).
    pub requests: usize,
}

/// What the watchers saw.
#[derive(Clone, Debug, Default, Serialize)]
pub struct WatchReport {
    /// Pod creates and deletes each watcher should see.
    pub expected_each: usize,
    /// Creates seen, per watcher.
    pub added: Vec<usize>,
    /// Deletes seen, per watcher.
    pub deleted: Vec<usize>,
    /// From a pod's create being sent to a watcher seeing it.
    pub lag: Quantiles,
}

/// Every stage's depth at one moment.
#[derive(Clone, Debug, Serialize)]
pub struct DepthSample {
    /// Seconds since the run began.
    pub t_s: f64,
    /// Stage (cachers summed) to queued + in progress.
    pub depth: BTreeMap<String, u64>,
}

/// A run's results, as `cl2.json` holds them.
#[derive(Clone, Debug, Serialize)]
pub struct Cl2Report {
    /// The server.
    pub endpoint: String,
    /// Namespaces × Deployments × pods, QPS, in flight, watchers.
    pub shape: BTreeMap<&'static str, f64>,
    /// In order.
    pub phases: Vec<PhaseTime>,
    /// One per verb and resource.
    pub rows: Vec<Row>,
    /// What the watchers saw.
    pub watch: WatchReport,
    /// From the namespaces' delete to their being gone (none: not within a minute).
    pub namespaces_gone_after_s: Option<f64>,
    /// Mailbox depths every 200 ms, when the server has an admin endpoint.
    pub mailbox: Option<Vec<DepthSample>>,
    /// Every request.
    pub samples: Vec<Sample>,
}

/// One request of the scenario.
#[derive(Clone, Debug)]
enum Op {
    CreateNamespace(String),
    CreateDeployment { ns: String, name: String },
    CreatePod { ns: String, name: String, group: String },
    Scale { ns: String, name: String, replicas: usize },
    Annotate { ns: String, name: String },
    ListPods(String),
    DeletePod { ns: String, name: String },
    DeleteDeployment { ns: String, name: String },
    DeleteNamespace(String),
}

/// What every request task shares.
#[derive(Clone)]
struct Run {
    client: kube::Client,
    id: String,
    started: Instant,
    samples: Arc<Mutex<Vec<Sample>>>,
}

fn micros_now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_micros() as u64)
}

fn code_of(e: &kube::Error) -> u16 {
    match e {
        kube::Error::Api(status) => status.code,
        _ => 0,
    }
}

impl Run {
    fn pod(&self, ns: &str, name: &str, group: &str) -> Pod {
        serde_json::from_value(json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": ns, "labels": {"loadgen-run": self.id, "group": group},
                "annotations": {SENT_AT: micros_now().to_string()}},
            "spec": {"containers": [{"name": "pause", "image": "registry.k8s.io/pause:3.9"}]}}))
        .expect("a pod")
    }

    fn deployment(&self, name: &str, replicas: usize) -> Deployment {
        serde_json::from_value(json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "labels": {"loadgen-run": self.id}},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"name": name}},
                "template": {"metadata": {"labels": {"name": name}},
                    "spec": {"containers": [{"name": "pause", "image": "registry.k8s.io/pause:3.9"}]}}}}))
        .expect("a deployment")
    }

    /// Sends `op`; its verb, resource and outcome.
    async fn perform(&self, op: &Op, pods: usize) -> (&'static str, &'static str, Result<(), u16>) {
        let c = self.client.clone();
        let post = PostParams::default();
        let patch = PatchParams::default();
        let delete = DeleteParams::default();
        let done = |r: Result<(), kube::Error>| r.map_err(|e| code_of(&e));
        match op {
            Op::CreateNamespace(ns) => {
                let object: Namespace = serde_json::from_value(
                    json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns, "labels": {"loadgen-run": self.id}}}),
                )
                .expect("a namespace");
                ("POST", "namespaces", done(Api::<Namespace>::all(c).create(&post, &object).await.map(drop)))
            }
            Op::CreateDeployment { ns, name } => {
                let object = self.deployment(name, pods);
                (
                    "POST",
                    "deployments",
                    done(Api::<Deployment>::namespaced(c, ns).create(&post, &object).await.map(drop)),
                )
            }
            Op::CreatePod { ns, name, group } => {
                let object = self.pod(ns, name, group);
                ("POST", "pods", done(Api::<Pod>::namespaced(c, ns).create(&post, &object).await.map(drop)))
            }
            Op::Scale { ns, name, replicas } => {
                let body = Patch::Merge(json!({"spec": {"replicas": replicas}}));
                let api = Api::<Deployment>::namespaced(c, ns);
                ("PATCH", "deployments/scale", done(api.patch_scale(name, &patch, &body).await.map(drop)))
            }
            Op::Annotate { ns, name } => {
                let body = Patch::Merge(
                    json!({"metadata": {"annotations": {"loadgen.k8s.io/touched": micros_now().to_string()}}}),
                );
                let api = Api::<Deployment>::namespaced(c, ns);
                ("PATCH", "deployments", done(api.patch(name, &patch, &body).await.map(drop)))
            }
            Op::ListPods(ns) => {
                let params = ListParams::default().labels(&format!("loadgen-run={}", self.id));
                ("LIST", "pods", done(Api::<Pod>::namespaced(c, ns).list(&params).await.map(drop)))
            }
            Op::DeletePod { ns, name } => {
                ("DELETE", "pods", done(Api::<Pod>::namespaced(c, ns).delete(name, &delete).await.map(drop)))
            }
            Op::DeleteDeployment { ns, name } => {
                let api = Api::<Deployment>::namespaced(c, ns);
                ("DELETE", "deployments", done(api.delete(name, &delete).await.map(drop)))
            }
            Op::DeleteNamespace(ns) => {
                ("DELETE", "namespaces", done(Api::<Namespace>::all(c).delete(ns, &delete).await.map(drop)))
            }
        }
    }
}

/// Sends `ops` at most `qps` a second and `inflight` at a time, with a progress bar.
async fn paced(run: &Run, options: &Cl2Options, phase: &'static str, ops: Vec<Op>) -> PhaseTime {
    let started = Instant::now();
    let requests = ops.len();
    let bar = ProgressBar::new(requests as u64).with_message(phase).with_style(
        ProgressStyle::with_template("{msg:>10} [{bar:40}] {pos}/{len} {per_sec} {elapsed}")
            .expect("a progress template")
            .progress_chars("=> "),
    );
    let slots = Arc::new(Semaphore::new(options.inflight.max(1)));
    let mut ticker = tokio::time::interval(Duration::from_secs_f64(1.0 / options.qps.max(0.1)));
    // A client held back by the in-flight limit does not burst to catch up: the QPS is a
    // ceiling, as client-go's limiter makes it.
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut tasks = tokio::task::JoinSet::new();
    for op in ops {
        ticker.tick().await;
        let slot = slots.clone().acquire_owned().await.expect("the semaphore is never closed");
        let (run, bar, pods) = (run.clone(), bar.clone(), options.pods);
        tasks.spawn(async move {
            let sent = Instant::now();
            let (verb, resource, outcome) = run.perform(&op, pods).await;
            let sample = Sample {
                phase,
                verb,
                resource,
                start_s: sent.duration_since(run.started).as_secs_f64(),
                latency_ms: sent.elapsed().as_secs_f64() * 1000.0,
                error: outcome.err(),
            };
            run.samples.lock().expect("samples").push(sample);
            drop(slot);
            bar.inc(1);
        });
    }
    while tasks.join_next().await.is_some() {}
    bar.finish_and_clear();
    let seconds = started.elapsed().as_secs_f64();
    println!("{phase:<10} {requests:>6} requests in {seconds:>6.2} s");
    PhaseTime { name: phase, seconds, requests }
}

/// What one watcher counted.
#[derive(Default)]
struct Seen {
    added: usize,
    deleted: usize,
    lags: Vec<Duration>,
}

/// Starts `count` watchers of the run's pods; each signals once listed.
async fn start_watchers(run: &Run, count: usize) -> (Vec<Arc<Mutex<Seen>>>, Vec<tokio::task::JoinHandle<()>>) {
    let mut seen = Vec::new();
    let mut tasks = Vec::new();
    let mut listed = Vec::new();
    for _ in 0..count {
        let counts = Arc::new(Mutex::new(Seen::default()));
        let (ready, is_ready) = tokio::sync::oneshot::channel::<()>();
        let api = Api::<Pod>::all(run.client.clone());
        let config = watcher::Config::default().labels(&format!("loadgen-run={}", run.id));
        let mine = counts.clone();
        tasks.push(tokio::spawn(async move {
            let mut ready = Some(ready);
            let mut events = std::pin::pin!(watcher::watcher(api, config));
            while let Some(event) = events.next().await {
                match event {
                    Ok(Event::InitDone) => {
                        if let Some(r) = ready.take() {
                            let _ = r.send(());
                        }
                    }
                    Ok(Event::Apply(pod)) => {
                        let sent = pod.metadata.annotations.as_ref().and_then(|a| a.get(SENT_AT)?.parse::<u64>().ok());
                        let mut s = mine.lock().expect("counts");
                        s.added += 1;
                        if let Some(sent) = sent {
                            s.lags.push(Duration::from_micros(micros_now().saturating_sub(sent)));
                        }
                    }
                    Ok(Event::Delete(_)) => mine.lock().expect("counts").deleted += 1,
                    Ok(_) | Err(_) => {}
                }
            }
        }));
        seen.push(counts);
        listed.push(is_ready);
    }
    for l in listed {
        let _ = tokio::time::timeout(Duration::from_secs(30), l).await;
    }
    (seen, tasks)
}

/// Samples `GET <admin>/actors` every [`MAILBOX_EVERY`] on a thread of its own until `stop`.
fn sample_mailboxes(
    admin: String,
    started: Instant,
    stop: Arc<AtomicBool>,
) -> std::thread::JoinHandle<Vec<DepthSample>> {
    std::thread::spawn(move || {
        let address = admin.trim_start_matches("http://").trim_end_matches('/').to_string();
        let mut samples = Vec::new();
        while !stop.load(Ordering::Relaxed) {
            if let Ok((200, body)) = crate::plain_http(&address, "GET", "/actors") {
                let listed: Value = serde_json::from_str(&body).unwrap_or_default();
                let mut depth = BTreeMap::new();
                for actor in listed["actors"].as_array().into_iter().flatten() {
                    let stage = actor["stage"].as_str().unwrap_or("?");
                    let name = match actor["resource"].as_str() {
                        Some(r) if !r.is_empty() => format!("{stage} (all resources)"),
                        _ => stage.to_string(),
                    };
                    *depth.entry(name).or_insert(0) += actor["mailbox_depth"].as_u64().unwrap_or(0);
                }
                samples.push(DepthSample { t_s: started.elapsed().as_secs_f64(), depth });
            }
            std::thread::sleep(MAILBOX_EVERY);
        }
        samples
    })
}

/// One row per verb and resource, in the order first sent.
pub fn rows(samples: &[Sample]) -> Vec<Row> {
    let mut order: Vec<(&str, &str)> = Vec::new();
    for s in samples {
        if !order.contains(&(s.verb, s.resource)) {
            order.push((s.verb, s.resource));
        }
    }
    order
        .into_iter()
        .map(|(verb, resource)| {
            let mine: Vec<&Sample> = samples.iter().filter(|s| s.verb == verb && s.resource == resource).collect();
            let first = mine.iter().map(|s| s.start_s).fold(f64::INFINITY, f64::min);
            let last = mine.iter().map(|s| s.start_s + s.latency_ms / 1000.0).fold(0.0, f64::max);
            let mut latencies: Vec<Duration> =
                mine.iter().map(|s| Duration::from_secs_f64(s.latency_ms / 1000.0)).collect();
            let mut errors = BTreeMap::new();
            for code in mine.iter().filter_map(|s| s.error) {
                *errors.entry(code.to_string()).or_insert(0) += 1;
            }
            Row {
                verb: verb.into(),
                resource: resource.into(),
                count: mine.len(),
                rate_per_sec: mine.len() as f64 / (last - first).max(1e-3),
                latency: Quantiles::of(&mut latencies),
                errors,
            }
        })
        .collect()
}

/// The summary table.
pub fn table(report: &Cl2Report) -> String {
    let mut out = format!(
        "== cl2 against {}: {} namespaces x {} deployments x {} pods, QPS {}, {} in flight, {} watchers\n",
        report.endpoint,
        report.shape["namespaces"],
        report.shape["deployments"],
        report.shape["pods"],
        report.shape["qps"],
        report.shape["inflight"],
        report.shape["watchers"]
    );
    out.push_str(&format!(
        "  {:<7} {:<18} {:>6} {:>8} {:>8} {:>8} {:>8}  errors\n",
        "verb", "resource", "count", "rate/s", "p50 ms", "p90 ms", "p99 ms"
    ));
    for r in &report.rows {
        let errors = if r.errors.is_empty() {
            "-".to_string()
        } else {
            r.errors.iter().map(|(code, n)| format!("{code}: {n}")).collect::<Vec<_>>().join(", ")
        };
        out.push_str(&format!(
            "  {:<7} {:<18} {:>6} {:>8.1} {:>8.2} {:>8.2} {:>8.2}  {errors}\n",
            r.verb, r.resource, r.count, r.rate_per_sec, r.latency.p50_ms, r.latency.p90_ms, r.latency.p99_ms
        ));
    }
    let w = &report.watch;
    out.push_str(&format!(
        "  watchers: {} each expected {} creates and {} deletes; saw creates {:?}, deletes {:?}; create sent → seen p50 {:.2} ms, p99 {:.2} ms\n",
        w.added.len(),
        w.expected_each,
        w.expected_each,
        w.added,
        w.deleted,
        w.lag.p50_ms,
        w.lag.p99_ms
    ));
    let phases: Vec<String> = report.phases.iter().map(|p| format!("{} {:.2} s", p.name, p.seconds)).collect();
    out.push_str(&format!("  phases: {}\n", phases.join(", ")));
    match report.namespaces_gone_after_s {
        Some(s) => out.push_str(&format!("  namespaces gone {s:.2} s after their delete\n")),
        None => out.push_str("  namespaces still there a minute after their delete\n"),
    }
    out
}

/// p99 of each verb and resource over time, in about 80 intervals of the run (0.1 to 5 s each).
fn latency_series(samples: &[Sample], rows: &[Row]) -> Vec<Series> {
    let span = samples.iter().map(|s| s.start_s).fold(0.0, f64::max);
    let width = (span / 80.0).clamp(0.1, 5.0);
    rows.iter()
        .map(|r| {
            let mut buckets: BTreeMap<u64, Vec<Duration>> = BTreeMap::new();
            for s in samples.iter().filter(|s| s.verb == r.verb && s.resource == r.resource) {
                let bucket = (s.start_s / width) as u64;
                buckets.entry(bucket).or_default().push(Duration::from_secs_f64(s.latency_ms / 1000.0));
            }
            let points = buckets
                .into_iter()
                .map(|(b, mut l)| ((b as f64 + 0.5) * width, Quantiles::of(&mut l).p99_ms.max(0.001)))
                .collect();
            (format!("{} {} p99", r.verb, r.resource), points)
        })
        .collect()
}

fn mailbox_series(samples: &[DepthSample]) -> Vec<Series> {
    let mut stages: Vec<String> = samples.iter().flat_map(|s| s.depth.keys().cloned()).collect();
    stages.sort();
    stages.dedup();
    stages
        .into_iter()
        .map(|stage| {
            let points = samples.iter().map(|s| (s.t_s, s.depth.get(&stage).copied().unwrap_or(0) as f64)).collect();
            (stage, points)
        })
        .collect()
}

async fn client(options: &Cl2Options) -> Result<kube::Client, String> {
    let kubeconfig = Kubeconfig::read_from(&options.kubeconfig).map_err(|e| format!("kubeconfig: {e}"))?;
    let mut config = kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .map_err(|e| format!("kubeconfig: {e}"))?;
    if let Some(url) = &options.endpoint {
        config.cluster_url = url.parse().map_err(|e| format!("{url}: {e}"))?;
    }
    kube::Client::try_from(config).map_err(|e| format!("client: {e}"))
}

/// Waits until each namespace has its `default` ServiceAccount (at most 30 s).
async fn wait_for_service_accounts(run: &Run, namespaces: &[String]) -> Result<(), String> {
    let until = Instant::now() + Duration::from_secs(30);
    for ns in namespaces {
        let api = Api::<ServiceAccount>::namespaced(run.client.clone(), ns);
        while api.get_opt("default").await.map_err(|e| format!("{ns}: {e}"))?.is_none() {
            if Instant::now() > until {
                return Err(format!("namespace {ns} has no default ServiceAccount after 30 s"));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    Ok(())
}

/// Runs the scenario (inside a tokio runtime), prints its table, and writes `cl2.json`,
/// `cl2-latency.svg` and, with an admin endpoint, `cl2-mailbox.svg` into `options.out`.
pub async fn run(options: &Cl2Options) -> Result<Cl2Report, String> {
    let client = client(options).await?;
    let id = format!("{:x}", micros_now() % 0xff_ffff);
    let started = Instant::now();
    let run = Run { client: client.clone(), id: id.clone(), started, samples: Arc::default() };
    let stop = Arc::new(AtomicBool::new(false));
    let sampler = options.admin.clone().map(|admin| sample_mailboxes(admin, started, stop.clone()));
    let namespaces: Vec<String> = (0..options.namespaces).map(|i| format!("cl2-{id}-{i}")).collect();
    let deployments: Vec<(String, String)> = namespaces
        .iter()
        .flat_map(|ns| (0..options.deployments).map(move |d| (ns.clone(), format!("d-{d}"))))
        .collect();
    let pods = |d: &str| (0..options.pods).map(move |p| format!("{d}-{p}")).collect::<Vec<_>>();

    let mut phases = Vec::new();
    phases
        .push(paced(&run, options, "namespaces", namespaces.iter().cloned().map(Op::CreateNamespace).collect()).await);
    let waited = Instant::now();
    wait_for_service_accounts(&run, &namespaces).await?;
    phases.push(PhaseTime { name: "serviceaccounts", seconds: waited.elapsed().as_secs_f64(), requests: 0 });
    let listed = Instant::now();
    let (seen, watchers) = start_watchers(&run, options.watchers).await;
    phases.push(PhaseTime { name: "watchers", seconds: listed.elapsed().as_secs_f64(), requests: 0 });

    let mut create = Vec::new();
    for (ns, d) in &deployments {
        create.push(Op::CreateDeployment { ns: ns.clone(), name: d.clone() });
        for p in pods(d) {
            create.push(Op::CreatePod { ns: ns.clone(), name: p, group: d.clone() });
        }
    }
    phases.push(paced(&run, options, "create", create).await);
    // Every Deployment scaled, then every one annotated: one write per object in flight, as
    // clusterloader2's phases update, rather than two racing on one object.
    let scale =
        deployments.iter().map(|(ns, d)| Op::Scale { ns: ns.clone(), name: d.clone(), replicas: options.pods + 1 });
    let annotate = deployments.iter().map(|(ns, d)| Op::Annotate { ns: ns.clone(), name: d.clone() });
    let update = scale.chain(annotate).collect();
    phases.push(paced(&run, options, "update", update).await);
    let lists = ((options.list_for.as_secs_f64() * options.qps) as usize).max(namespaces.len());
    let list = (0..lists).map(|i| Op::ListPods(namespaces[i % namespaces.len()].clone())).collect();
    phases.push(paced(&run, options, "list", list).await);
    let mut delete = Vec::new();
    for (ns, d) in &deployments {
        for p in pods(d) {
            delete.push(Op::DeletePod { ns: ns.clone(), name: p });
        }
        delete.push(Op::DeleteDeployment { ns: ns.clone(), name: d.clone() });
    }
    phases.push(paced(&run, options, "delete", delete).await);

    // Every watcher should have seen every pod go.
    let expected = deployments.len() * options.pods;
    let until = Instant::now() + Duration::from_secs(30);
    while Instant::now() < until && seen.iter().any(|s| s.lock().expect("counts").deleted < expected) {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    for w in &watchers {
        w.abort();
    }
    let deleting = Instant::now();
    phases.push(paced(&run, options, "teardown", namespaces.iter().cloned().map(Op::DeleteNamespace).collect()).await);
    let namespaces_gone_after_s = wait_gone(&client, &namespaces, deleting).await;
    stop.store(true, Ordering::Relaxed);
    let mailbox = match sampler {
        Some(t) => Some(t.join().map_err(|_| "the mailbox sampler panicked".to_string())?),
        None => None,
    };

    let mut samples = std::mem::take(&mut *run.samples.lock().expect("samples"));
    // In the order sent (they were recorded as they were answered).
    samples.sort_by(|a, b| a.start_s.total_cmp(&b.start_s));
    let rows = rows(&samples);
    let mut lags: Vec<Duration> = seen.iter().flat_map(|s| s.lock().expect("counts").lags.clone()).collect();
    let watch = WatchReport {
        expected_each: expected,
        added: seen.iter().map(|s| s.lock().expect("counts").added).collect(),
        deleted: seen.iter().map(|s| s.lock().expect("counts").deleted).collect(),
        lag: Quantiles::of(&mut lags),
    };
    let shape = BTreeMap::from([
        ("namespaces", options.namespaces as f64),
        ("deployments", options.deployments as f64),
        ("pods", options.pods as f64),
        ("qps", options.qps),
        ("inflight", options.inflight as f64),
        ("watchers", options.watchers as f64),
    ]);
    let endpoint = client_url(options);
    let report = Cl2Report { endpoint, shape, phases, rows, watch, namespaces_gone_after_s, mailbox, samples };
    print!("{}", table(&report));
    write_files(&report, &options.out)?;
    Ok(report)
}

/// The server the run went to, as the kubeconfig or `--endpoint` names it.
fn client_url(options: &Cl2Options) -> String {
    if let Some(url) = &options.endpoint {
        return url.clone();
    }
    Kubeconfig::read_from(&options.kubeconfig)
        .ok()
        .and_then(|k| {
            let context = k.current_context.clone()?;
            let cluster = k.contexts.iter().find(|c| c.name == context)?.context.as_ref()?.cluster.clone();
            k.clusters.iter().find(|c| c.name == cluster)?.cluster.as_ref()?.server.clone()
        })
        .unwrap_or_else(|| options.kubeconfig.display().to_string())
}

/// Seconds from `since` until every namespace answers 404 (none after a minute).
async fn wait_gone(client: &kube::Client, namespaces: &[String], since: Instant) -> Option<f64> {
    let api = Api::<Namespace>::all(client.clone());
    let until = since + Duration::from_secs(60);
    for ns in namespaces {
        loop {
            match api.get_opt(ns).await {
                Ok(None) => break,
                _ if Instant::now() > until => return None,
                _ => tokio::time::sleep(Duration::from_millis(100)).await,
            }
        }
    }
    Some(since.elapsed().as_secs_f64())
}

fn write_files(report: &Cl2Report, out: &Path) -> Result<(), String> {
    write_json(&out.join("cl2.json"), report).map_err(|e| format!("cl2.json: {e}"))?;
    let latency = latency_series(&report.samples, &report.rows);
    plot::timeline(&out.join("cl2-latency.svg"), "p99 latency over time, by verb and resource", "ms", &latency, true)?;
    let mut written = vec![out.join("cl2.json"), out.join("cl2-latency.svg")];
    match &report.mailbox {
        Some(samples) => {
            let series = mailbox_series(samples);
            let title = "mailbox depth (queued + in progress) per stage, every 200 ms";
            plot::timeline(&out.join("cl2-mailbox.svg"), title, "messages", &series, false)?;
            written.push(out.join("cl2-mailbox.svg"));
        }
        None => println!("  no admin endpoint given (--admin): the mailbox depth figure is left out"),
    }
    let names: Vec<String> = written.iter().map(|p| p.display().to_string()).collect();
    println!("== wrote {}", names.join(", "));
    Ok(())
}
