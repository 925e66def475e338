//! A density run under a real control plane: kube-controller-manager, kube-scheduler and N
//! kubemark hollow nodes (real kubelets on a fake container runtime) against kube-apiserver and
//! this server, one after the other in one run, each on a fresh etcd of its own with the same
//! flags (the files of [`crate::mix`]).
//!
//! For each server:
//! 1. **setup** (not measured): the server, the controllers (at 1,000 requests/s, so the
//!    server is what is measured), the hollow nodes (at a kubelet's 50/s), until every Node is
//!    Ready and the run's namespace holds its `default` ServiceAccount;
//! 2. **ramp**: Deployments making `--pods` pods, until the loadgen's own watch has seen every
//!    pod Running with every container ready;
//! 3. **steady**: `seconds` more (heartbeats, status syncs, resyncs);
//! 4. **teardown**: the Deployments deleted, until the watch has seen every pod deleted.
//!
//! Per phase it prints the server's CPU seconds and peak resident memory (sampled every
//! 250 ms), the CPU of the rest (etcd, controllers, hollow nodes: what shared the cores), and
//! after the run the p50/p99 of `apiserver_request_duration_seconds` per verb and resource over
//! the ramp and the steady phase, from the server's `/metrics`. Pod startup latency is
//! clusterloader2's: from a pod's creation to the watch event showing it Running and ready,
//! both seen by the loadgen's watch, with millisecond timestamps.
//!
//! `loadgen 60 density [--kube PATH|none] [--baseline PATH] [--bins DIR] [--nodes N] [--pods N]`:
//! the controllers and kubemark come from `--bins` (`KUBE_CONTROL_PLANE_BIN`, else
//! `/tmp/kube-ref/bin`, as `KUBE_CONTROL_PLANE=1 ../shared/tools/build-kube.sh` builds them);
//! without them the run says so and is skipped.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::rc::Rc;
use std::time::{Duration, Instant};

use apimachinery::metrics::REQUEST_DURATION_SECONDS;
use futures_util::StreamExt;
use serde_json::{Value, json};
use tests::load::histogram::{self, Buckets};
use tests::load::{Quantiles, cpu_time};

use crate::mix::{Compared, Shared, Target};

const NAMESPACE: &str = "density";
const KCM_TOKEN: &str = "density-kcm";
const SCHEDULER_TOKEN: &str = "density-scheduler";
/// Pods per Deployment.
const PER_DEPLOYMENT: usize = 50;
/// How long the ramp and the teardown may take before the run gives up on them.
const PHASE_LIMIT: Duration = Duration::from_secs(900);
/// How often the server's resident memory is sampled.
const RSS_EVERY: Duration = Duration::from_millis(250);
/// The hollow nodes' kubelet ports start here, one per node.
const FIRST_KUBELET_PORT: u16 = 21_000;
/// The tokens in the shared token file for hollow nodes (more nodes than this are refused).
const MAX_NODES: usize = 200;

struct Options {
    compared: Compared,
    bins: PathBuf,
    nodes: usize,
    pods: usize,
}

fn options(rest: &[String]) -> Options {
    let usage = || -> ! {
        eprintln!(
            "usage: loadgen SECONDS density [--kube PATH|none] [--baseline PATH] [--bins DIR] [--nodes N] [--pods N]"
        );
        std::process::exit(2)
    };
    let bins =
        std::env::var_os("KUBE_CONTROL_PLANE_BIN").map_or_else(|| PathBuf::from("/tmp/kube-ref/bin"), PathBuf::from);
    let default_kube = std::env::var_os("KUBE_APISERVER").map_or_else(|| bins.join("kube-apiserver"), PathBuf::from);
    let mut o = Options { compared: Compared::new(default_kube), bins, nodes: 50, pods: 1_500 };
    let mut it = rest.iter();
    while let Some(flag) = it.next() {
        let Some(value) = it.next() else { usage() };
        match flag.as_str() {
            _ if o.compared.take(flag, value) => {}
            "--bins" => o.bins = PathBuf::from(value),
            "--nodes" => o.nodes = value.parse().unwrap_or_else(|_| usage()),
            "--pods" => o.pods = value.parse().unwrap_or_else(|_| usage()),
            _ => usage(),
        }
    }
    if o.nodes == 0 || o.nodes > MAX_NODES || o.pods == 0 {
        usage()
    }
    o
}

fn hollow_token(n: usize) -> String {
    format!("density-hollow-{n}")
}

/// The token file lines of the controllers and the hollow nodes.
fn users() -> Vec<String> {
    let mut users = vec![
        format!("{KCM_TOKEN},system:kube-controller-manager,uid-kcm"),
        format!("{SCHEDULER_TOKEN},system:kube-scheduler,uid-scheduler"),
    ];
    users.extend(
        (0..MAX_NODES).map(|n| format!("{},system:node:hollow-{n},uid-hollow-{n},\"system:nodes\"", hollow_token(n))),
    );
    users
}

/// A kubeconfig for `token` at the server `base`, trusting the shared CA.
fn kubeconfig(shared: &Shared, base: &str, token: &str) -> PathBuf {
    let path = shared.dir.path().join(format!("{token}-{}.kubeconfig", base.rsplit(':').next().unwrap_or("")));
    let text = tests::token_kubeconfig_text(base, &format!("certificate-authority: {}", shared.path("ca.crt")), token);
    std::fs::write(&path, text).expect("write kubeconfig");
    path
}

/// The controllers and hollow nodes of one server's run; killed when dropped.
struct ControlPlane {
    children: Vec<Child>,
}

impl ControlPlane {
    fn start(o: &Options, shared: &Shared, t: &Target) -> ControlPlane {
        let logs = shared.dir.path().join(format!("logs-{}", t.pid));
        std::fs::create_dir_all(&logs).expect("log directory");
        println!("{}: controller and hollow node logs in {}", t.base, logs.display());
        let spawn = |bin: &str, args: Vec<String>, log: String| -> Child {
            let err = std::fs::File::create(logs.join(log)).expect("log file");
            Command::new(o.bins.join(bin))
                .args(args)
                .env("TMPDIR", &logs)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(err)
                .spawn()
                .unwrap_or_else(|e| panic!("start {bin}: {e}"))
        };
        let config = |token: &str| kubeconfig(shared, &t.base, token).display().to_string();
        let rate = ["--kube-api-qps", "1000", "--kube-api-burst", "1000"].map(String::from);
        let mut children = vec![
            spawn(
                "kube-controller-manager",
                [
                    "--kubeconfig",
                    &config(KCM_TOKEN),
                    "--secure-port",
                    "0",
                    "--leader-elect",
                    "--use-service-account-credentials",
                    "--controllers=*",
                    "--cluster-cidr",
                    "10.244.0.0/16",
                ]
                .iter()
                .map(|s| s.to_string())
                .chain(rate.clone())
                .collect(),
                "kube-controller-manager.log".into(),
            ),
            spawn(
                "kube-scheduler",
                ["--kubeconfig", &config(SCHEDULER_TOKEN), "--secure-port", "0", "--leader-elect"]
                    .iter()
                    .map(|s| s.to_string())
                    .chain(rate)
                    .collect(),
                "kube-scheduler.log".into(),
            ),
        ];
        for n in 0..o.nodes {
            let port = (FIRST_KUBELET_PORT + n as u16).to_string();
            let name = format!("hollow-{n}");
            let args = [
                "--morph",
                "kubelet",
                "--name",
                &name,
                "--kubeconfig",
                &config(&hollow_token(n)),
                "--use-host-image-service=false",
                "--kubelet-port",
                &port,
                "--kubelet-read-only-port",
                "0",
                "--kube-api-qps",
                "50",
                "--kube-api-burst",
                "100",
            ];
            children.push(spawn("kubemark", args.iter().map(|s| s.to_string()).collect(), format!("{name}.log")));
        }
        ControlPlane { children }
    }

    fn pids(&self) -> impl Iterator<Item = u32> + '_ {
        self.children.iter().map(Child::id)
    }
}

impl Drop for ControlPlane {
    fn drop(&mut self) {
        for child in &mut self.children {
            let _ = child.kill();
        }
        for child in &mut self.children {
            let _ = child.wait();
        }
    }
}

/// What the loadgen's watch has seen of each pod.
#[derive(Default)]
struct Seen {
    created: HashMap<String, Instant>,
    running: HashMap<String, Instant>,
    /// The pods that exist now, as far as the watch knows.
    live: HashSet<String>,
}

impl Seen {
    fn saw(&mut self, name: &str, pod: &Value, now: Instant) {
        self.created.entry(name.to_string()).or_insert(now);
        self.live.insert(name.to_string());
        if running_and_ready(pod) {
            self.running.entry(name.to_string()).or_insert(now);
        }
    }
}

fn running_and_ready(pod: &Value) -> bool {
    let status = &pod["status"];
    let statuses = status["containerStatuses"].as_array();
    status["phase"] == "Running" && statuses.is_some_and(|s| !s.is_empty() && s.iter().all(|c| c["ready"] == true))
}

/// Lists the run's pods into `seen` (what exists now replaces what the watch knew); the list's
/// resourceVersion.
async fn relist(client: &awc::Client, url: &str, seen: &RefCell<Seen>) -> Option<String> {
    let mut resp = client.get(url).send().await.ok().filter(|r| r.status().is_success())?;
    let list: Value = resp.json().limit(1 << 30).await.ok()?;
    let now = Instant::now();
    let mut seen = seen.borrow_mut();
    seen.live.clear();
    for pod in list["items"].as_array().into_iter().flatten() {
        if let Some(name) = pod["metadata"]["name"].as_str() {
            seen.saw(name, pod, now);
        }
    }
    list["metadata"]["resourceVersion"].as_str().map(str::to_string)
}

/// Watches the run's pods from `rv`, again from the last resourceVersion when a watch ends, and
/// from a new list when the server says that resourceVersion is gone.
async fn watch_pods(client: awc::Client, url: String, mut rv: String, seen: Rc<RefCell<Seen>>) {
    loop {
        let watch = format!("{url}?watch=true&allowWatchBookmarks=true&timeoutSeconds=3600&resourceVersion={rv}");
        let resp = client.get(&watch).timeout(Duration::from_secs(3700)).send().await;
        let Some(mut resp) = resp.ok().filter(|r| r.status().is_success()) else {
            actix_web::rt::time::sleep(Duration::from_millis(500)).await;
            rv = relist(&client, &url, &seen).await.unwrap_or(rv);
            continue;
        };
        let mut buf: Vec<u8> = Vec::new();
        let mut expired = false;
        while let Some(Ok(chunk)) = resp.next().await {
            let now = Instant::now();
            buf.extend_from_slice(&chunk);
            while let Some(end) = memchr::memchr(b'\n', &buf) {
                let line: Vec<u8> = buf.drain(..=end).collect();
                let Ok(event) = serde_json::from_slice::<Value>(&line) else { continue };
                let pod = &event["object"];
                if event["type"] == "ERROR" {
                    expired = true;
                    continue;
                }
                if let Some(v) = pod["metadata"]["resourceVersion"].as_str() {
                    rv = v.to_string();
                }
                let Some(name) = pod["metadata"]["name"].as_str() else { continue };
                let mut seen = seen.borrow_mut();
                match event["type"].as_str() {
                    Some("ADDED") | Some("MODIFIED") => seen.saw(name, pod, now),
                    Some("DELETED") => {
                        seen.live.remove(name);
                    }
                    _ => {}
                }
            }
        }
        if expired {
            println!("the loadgen's pod watch expired at resourceVersion {rv}: listing again");
            rv = relist(&client, &url, &seen).await.unwrap_or(rv);
        }
    }
}

/// One phase's figures for one server.
#[derive(Clone, Debug, Default)]
struct PhaseFigures {
    seconds: f64,
    server_cpu: f64,
    server_peak_mib: f64,
    rest_cpu: f64,
}

/// One server's run.
struct Report {
    label: String,
    phases: Vec<(&'static str, PhaseFigures)>,
    startup: Option<Quantiles>,
    running: usize,
    listed_running: usize,
    /// `apiserver_request_duration_seconds` over the ramp, and over the steady phase.
    durations: [Vec<(String, Buckets)>; 2],
}

/// Polls `check` every 250 ms until it holds or `limit` passes; whether it held.
async fn until<F, Fut>(limit: Duration, mut check: F) -> bool
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if check().await {
            return true;
        }
        actix_web::rt::time::sleep(Duration::from_millis(250)).await;
    }
    false
}

async fn get_json(t: &Target, path: &str) -> Option<Value> {
    let mut r = t.admin.get(t.url(path)).send().await.ok()?;
    if !r.status().is_success() {
        return None;
    }
    r.json::<Value>().limit(1 << 30).await.ok()
}

async fn ready_nodes(t: &Target) -> usize {
    let Some(list) = get_json(t, "/api/v1/nodes").await else { return 0 };
    let ready = |n: &&Value| {
        n["status"]["conditions"]
            .as_array()
            .is_some_and(|c| c.iter().any(|c| c["type"] == "Ready" && c["status"] == "True"))
    };
    list["items"].as_array().map_or(0, |items| items.iter().filter(ready).count())
}

async fn scrape(t: &Target) -> BTreeMap<String, Buckets> {
    let text = match t.admin.get(t.url("/metrics")).send().await {
        Ok(mut r) => {
            r.body().limit(1 << 28).await.map(|b| String::from_utf8_lossy(&b).into_owned()).unwrap_or_default()
        }
        Err(_) => String::new(),
    };
    histogram::parse(&text, REQUEST_DURATION_SECONDS, &["verb", "resource", "subresource"])
}

/// CPU seconds of the server, and of the rest.
fn cpu_split(t: &Target, plane: &ControlPlane) -> (f64, f64) {
    let rest: Duration = plane.pids().chain(t.etcd.pid()).map(cpu_time).sum();
    (t.cpu().as_secs_f64(), rest.as_secs_f64())
}

fn deployment(i: usize, replicas: usize) -> Value {
    let name = format!("d-{i}");
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{
                    "name": "pause", "image": "registry.k8s.io/pause:3.9",
                    "resources": {"requests": {"cpu": "1m", "memory": "1Mi"}}
                }]}
            }
        }
    })
}

/// The 1.32 scheduler built beside kube-apiserver 1.32 waits for an informer of VolumeAttachments,
/// which the bootstrap role of 1.30 (the version this server serves) does not grant: granted here
/// on every server alike.
async fn grant_scheduler_volume_attachments(t: &Target) {
    let name = "density:scheduler-volumeattachments";
    let role = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": name},
        "rules": [{"apiGroups": ["storage.k8s.io"], "resources": ["volumeattachments"], "verbs": ["get", "list", "watch"]}]
    });
    let binding = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "system:kube-scheduler"}]
    });
    for (path, body) in [("clusterroles", role), ("clusterrolebindings", binding)] {
        let url = t.url(&format!("/apis/rbac.authorization.k8s.io/v1/{path}"));
        let made = t.admin.post(url).send_json(&body).await.map(|r| r.status().as_u16());
        assert_eq!(made.ok(), Some(201), "create {path}/{name}");
    }
}

/// One server's run, through the four phases.
async fn measure(label: &str, t: Target, o: &Options, shared: &Shared, steady: Duration) -> Report {
    println!("== {label}: {} hollow nodes, {} pods", o.nodes, o.pods);
    grant_scheduler_volume_attachments(&t).await;
    let plane = ControlPlane::start(o, shared, &t);
    let nodes_ready = until(PHASE_LIMIT, || async { ready_nodes(&t).await >= o.nodes }).await;
    assert!(nodes_ready, "{label}: {} of {} nodes Ready", ready_nodes(&t).await, o.nodes);
    let ns = json!({"metadata": {"name": NAMESPACE}});
    let made = t.admin.post(t.url("/api/v1/namespaces")).send_json(&ns).await.map(|r| r.status().as_u16());
    assert_eq!(made.ok(), Some(201), "{label}: create namespace");
    let sa = format!("/api/v1/namespaces/{NAMESPACE}/serviceaccounts/default");
    assert!(until(PHASE_LIMIT, || async { get_json(&t, &sa).await.is_some() }).await, "{label}: no default SA");
    println!("{label}: {} nodes Ready", o.nodes);

    let pods = format!("/api/v1/namespaces/{NAMESPACE}/pods");
    let rv = get_json(&t, &pods).await.expect("list pods")["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or("0")
        .to_string();
    let seen: Rc<RefCell<Seen>> = Rc::default();
    let watcher = actix_web::rt::spawn(watch_pods(t.admin.clone(), t.url(&pods), rv, seen.clone()));
    let rss: Rc<RefCell<Vec<(Instant, f64)>>> = Rc::default();
    let sampler = {
        let (rss, pid) = (rss.clone(), t.pid);
        actix_web::rt::spawn(async move {
            loop {
                rss.borrow_mut().push((Instant::now(), crate::rss_mib(pid)));
                actix_web::rt::time::sleep(RSS_EVERY).await;
            }
        })
    };

    // Each phase runs between its own two marks: the scrapes and the list between phases are
    // counted in none.
    let mark = || (Instant::now(), cpu_split(&t, &plane));
    let metrics_before = scrape(&t).await;
    let mut phases = vec![(mark(), mark())];
    let deployments = o.pods.div_ceil(PER_DEPLOYMENT);
    for i in 0..deployments {
        let replicas = PER_DEPLOYMENT.min(o.pods - i * PER_DEPLOYMENT);
        let url = t.url(&format!("/apis/apps/v1/namespaces/{NAMESPACE}/deployments"));
        let made = t.admin.post(url).send_json(&deployment(i, replicas)).await.map(|r| r.status().as_u16());
        assert_eq!(made.ok(), Some(201), "{label}: create Deployment d-{i}");
    }
    let ramped = until(PHASE_LIMIT, || async { seen.borrow().running.len() >= o.pods }).await;
    phases[0].1 = mark();
    let metrics_ramped = scrape(&t).await;
    println!(
        "{label}: ramp {}: {} of {} pods running",
        if ramped { "done" } else { "timed out" },
        seen.borrow().running.len(),
        o.pods
    );

    let from = mark();
    actix_web::rt::time::sleep(steady).await;
    phases.push((from, mark()));
    let metrics_after = scrape(&t).await;
    let listed = get_json(&t, &pods).await.expect("list pods");
    let listed_running =
        listed["items"].as_array().map_or(0, |items| items.iter().filter(|p| running_and_ready(p)).count());

    let from = mark();
    for i in 0..deployments {
        let url = t.url(&format!("/apis/apps/v1/namespaces/{NAMESPACE}/deployments/d-{i}"));
        let _ = t.admin.delete(url).send_json(&json!({"propagationPolicy": "Background"})).await;
    }
    let gone = until(PHASE_LIMIT, || async { seen.borrow().live.is_empty() }).await;
    phases.push((from, mark()));
    println!(
        "{label}: teardown {}: {} of {} pods left",
        if gone { "done" } else { "timed out" },
        seen.borrow().live.len(),
        seen.borrow().created.len()
    );
    watcher.abort();
    sampler.abort();

    let samples = rss.borrow();
    let phases = ["ramp", "steady", "teardown"]
        .iter()
        .zip(phases)
        .map(|(name, ((from, (s0, r0)), (to, (s1, r1))))| {
            let peak = samples.iter().filter(|(at, _)| *at >= from && *at <= to).map(|s| s.1).fold(0.0, f64::max);
            let figures = PhaseFigures {
                seconds: (to - from).as_secs_f64(),
                server_cpu: s1 - s0,
                server_peak_mib: peak,
                rest_cpu: r1 - r0,
            };
            (*name, figures)
        })
        .collect();
    let seen = seen.borrow();
    let mut startup: Vec<Duration> = seen
        .running
        .iter()
        .filter_map(|(name, at)| Some(at.saturating_duration_since(*seen.created.get(name)?)))
        .collect();
    let between = |before: &BTreeMap<String, Buckets>, after: &BTreeMap<String, Buckets>| {
        after
            .iter()
            .filter(|(key, _)| !key.starts_with("WATCH") && !key.starts_with("CONNECT"))
            .map(|(key, b)| (key.clone(), b.since(before.get(key))))
            .filter(|(_, b)| b.count() > 0.0)
            .collect()
    };
    let durations = [between(&metrics_before, &metrics_ramped), between(&metrics_ramped, &metrics_after)];
    drop(plane);
    Report {
        label: label.to_string(),
        phases,
        startup: (!startup.is_empty()).then(|| Quantiles::of(&mut startup)),
        running: seen.running.len(),
        listed_running,
        durations,
    }
}

fn missing_binaries(o: &Options) -> Vec<String> {
    ["kube-controller-manager", "kube-scheduler", "kubemark"]
        .iter()
        .filter(|b| !o.bins.join(b).exists())
        .map(|b| o.bins.join(b).display().to_string())
        .collect()
}

fn print_reports(reports: &[Report], pods: usize) {
    println!("== the density run side by side (CPU in seconds, memory in MiB)");
    let header: Vec<String> = reports.iter().map(|r| format!("{:>16}", r.label)).collect();
    let kube = reports.iter().position(|r| r.label == "kube-apiserver");
    let ours = reports.iter().position(|r| r.label == "this build");
    let ratio_header = if kube.is_some() { "   this / kube" } else { "" };
    println!("{:<34}{}{ratio_header}", "", header.join(""));
    let row = |name: String, value: &dyn Fn(&Report) -> f64| {
        let cells: Vec<String> = reports.iter().map(|r| format!("{:>16.1}", value(r))).collect();
        let ratio = match (kube, ours) {
            (Some(k), Some(u)) if value(&reports[k]) > 0.0 => {
                format!("   {:.2}", value(&reports[u]) / value(&reports[k]))
            }
            _ => String::new(),
        };
        println!("{name:<34}{}{ratio}", cells.join(""));
    };
    for (i, phase) in ["ramp", "steady", "teardown"].iter().enumerate() {
        row(format!("{phase}: length, s"), &|r| r.phases[i].1.seconds);
        row(format!("{phase}: server CPU"), &|r| r.phases[i].1.server_cpu);
        row(format!("{phase}: server peak RSS"), &|r| r.phases[i].1.server_peak_mib);
        row(format!("{phase}: the rest's CPU"), &|r| r.phases[i].1.rest_cpu);
    }
    row("server peak RSS, whole run".into(), &|r| r.phases.iter().map(|p| p.1.server_peak_mib).fold(0.0, f64::max));
    row("pod startup p50, ms".into(), &|r| r.startup.as_ref().map_or(0.0, |q| q.p50_ms));
    row("pod startup p90, ms".into(), &|r| r.startup.as_ref().map_or(0.0, |q| q.p90_ms));
    row("pod startup p99, ms".into(), &|r| r.startup.as_ref().map_or(0.0, |q| q.p99_ms));
    row(format!("pods seen running (of {pods})"), &|r| r.running as f64);
    row(format!("pods listed running (of {pods})"), &|r| r.listed_running as f64);
    for r in reports {
        for (phase, durations) in ["ramp", "steady"].iter().zip(&r.durations) {
            println!("== {}: apiserver_request_duration_seconds over the {phase} phase", r.label);
            println!("{:<48}{:>10}{:>12}{:>12}", "verb/resource/subresource", "requests", "p50 ms", "p99 ms");
            let mut rows: Vec<&(String, Buckets)> = durations.iter().collect();
            rows.sort_by(|a, b| b.1.count().total_cmp(&a.1.count()));
            for (key, b) in rows.iter().take(16) {
                let ms = |q: f64| b.quantile(q).map_or(0.0, |s| s * 1e3);
                println!("{:<48}{:>10.0}{:>12.1}{:>12.1}", key.trim_end_matches('/'), b.count(), ms(0.5), ms(0.99));
            }
        }
    }
}

/// Runs the density run on kube-apiserver (when there is one), this build and `--baseline`.
pub async fn run_all(steady: Duration, rest: Vec<String>) {
    let o = options(&rest);
    let missing = missing_binaries(&o);
    if !missing.is_empty() {
        println!(
            "density: skipped, not built: {} (`KUBE_CONTROL_PLANE=1 ../shared/tools/build-kube.sh`, or --bins DIR)",
            missing.join(", ")
        );
        return;
    }
    let shared = Shared::new(&users());
    let mut reports = Vec::new();
    if let Some(kube) = &o.compared.kube {
        let t = Target::kube(kube, &shared).await;
        reports.push(measure("kube-apiserver", t, &o, &shared, steady).await);
    } else {
        println!("(no kube-apiserver: this server alone; `--kube PATH` or KUBE_APISERVER)");
    }
    let t = Target::ours("this build", &tests::apiserver_bin(), &shared).await;
    reports.push(measure("this build", t, &o, &shared, steady).await);
    if let Some(baseline) = &o.compared.baseline {
        let t = Target::ours("baseline build", baseline, &shared).await;
        reports.push(measure("baseline build", t, &o, &shared, steady).await);
    }
    print_reports(&reports, o.pods);
}

#[cfg(test)]
mod unit {
    use super::*;

    #[test]
    fn a_pod_counts_as_started_once_running_with_every_container_ready() {
        let pod = |phase: &str, ready: &[bool]| {
            let statuses: Vec<Value> = ready.iter().map(|r| json!({"ready": r})).collect();
            json!({"status": {"phase": phase, "containerStatuses": statuses}})
        };
        assert!(running_and_ready(&pod("Running", &[true, true])));
        assert!(!running_and_ready(&pod("Running", &[true, false])));
        assert!(!running_and_ready(&pod("Running", &[])));
        assert!(!running_and_ready(&pod("Pending", &[true])));
    }

    #[test]
    fn each_hollow_node_has_its_own_token() {
        let users = users();
        assert_eq!(users.len(), MAX_NODES + 2);
        assert!(users.contains(&format!("{},system:node:hollow-7,uid-hollow-7,\"system:nodes\"", hollow_token(7))));
    }
}
