//! Load generator: create and get requests/s with p50/p99 at concurrency 1 and 64 over HTTPS
//! through the whole pipeline (authentication, authorization, flow control, admission on),
//! beside the same operations on the storage trait directly, so the pipeline's cost shows as a
//! ratio measured in the same run on the same machine.
//!
//! Usage: `cargo run --release -p tests --bin loadgen -- [seconds-per-phase] [embedded|etcd|startup|watch|watch-matrix|watch=WxR,...|cache|cache=N,...|protobuf|rbac|apf|admission|crds|crds=N|stages|stage=KEY,...|cl2|faults|lag|window|diagnosis|apply|all]`
//! (default 5 seconds, all; `--help` lists the modes, an unknown one is an error, and the
//! seconds may be a Go duration, `1m30s`). `etcd` runs the same phases on a real etcd started for the run (the
//! storage-trait rows are then etcd's own put/get rate through our client); `startup` times a
//! server start on a store already holding 100,000 objects; `watch` measures watch delivery with
//! 100 to 10,000 watchers (see `watch.rs`), `watch-remote` the same through a storage stage
//! process beside in process; `replicas` creates/s through 1 and 3 gateway replicas on one etcd; `cache` measures memory per cached object and
//! LIST of 10,000 and 100,000 objects from the cache and from storage (see `cache.rs`; `cache=N` for
//! N objects on the embedded store only); `apf` times APF classification and dispatch per
//! request in process beside a bare stage hop (see `apf.rs`); `admission` measures creates/s
//! without admission plugins, with the default chain, and with one local webhook (see
//! `admission.rs`); `crds` (or `crds=N`) creates 1,000 (N) CRDs and prints the time each
//! took to be served, memory per CRD, discovery and OpenAPI times after, and custom resource
//! creates and lists beside ConfigMap ones (see `crds.rs`); `stages` (or `stage=storage,storage-wire`)
//! steps each stage up to its capacity, seconds being each step's length, and `cl2 [--kubeconfig
//! PATH] [--namespaces N ...]` runs the clusterloader2-style scenario, seconds being its list
//! phase, and `faults [--rate N ...]` loads a local fleet (`deploy/fleet.sh`) while its etcd
//! leader, a gateway and its stage process are killed in turn, seconds being the load before
//! each kill, and `lag [--writers N --contenders N]` measures each read kind's revision lag
//! against linearizable storage reads for `seconds` per backend, and `window [--windows ...]`
//! sweeps the watch cache's hit rate over retention × window × objects, `seconds` per cell;
//! `diagnosis` compares a server judging its axes with one that does not, and `apply` times
//! server-side applies beside strategic merge patches and updates, and `noop [--baseline PATH]`
//! writes that change nothing beside changing ones, on this build and another, and `format
//! [--baseline PATH]` kube's etcd format beside MessagePack, and `mix` the request mix of a
//! cluster beside kube-apiserver, and `density` a real control plane with kubemark hollow nodes
//! beside kube-apiserver (see `apply.rs`, `format.rs`, `noop.rs`, `mix.rs`, `density.rs`,
//! `load.rs` and `tests::load`; none is part of `all`). HTTPS rows show the server's CPU time per request,
//! which other load on a shared machine disturbs far less than rates. `APISERVER_BIN` picks the
//! server binary, so two builds can be compared by one load generator. Needs the release apiserver binary
//! (`cargo build --release -p gateway --bin apiserver`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use serde_json::json;
use storage::embedded::{EmbeddedOptions, EmbeddedStore};
use storage::etcd::testing::EtcdProcess;
use storage::{Expect, Storage};
use tests::TestServer;
use tests::load::cpu_time;

mod admission;
mod apf;
mod apply;
mod cache;
mod crds;
mod density;
mod format;
mod load;
mod mix;
mod noop;
mod protobuf;
mod rbac;
mod replicas;
mod watch;

/// Latencies of one phase.
struct Phase {
    ops: usize,
    elapsed: Duration,
    latencies: Vec<Duration>,
    errors: usize,
}

impl Phase {
    fn rate(&self) -> f64 {
        self.ops as f64 / self.elapsed.as_secs_f64()
    }

    fn quantile_ms(&self, q: f64) -> f64 {
        if self.latencies.is_empty() {
            return 0.0;
        }
        let mut l = self.latencies.clone();
        l.sort();
        let i = ((l.len() as f64 * q).ceil() as usize).clamp(1, l.len()) - 1;
        l[i].as_secs_f64() * 1000.0
    }
}

/// Runs `op(worker, i)` from `concurrency` tasks for `duration`.
async fn run<F, Fut>(concurrency: usize, duration: Duration, op: F) -> Phase
where
    F: Fn(usize, usize) -> Fut + Clone + 'static,
    Fut: std::future::Future<Output = bool> + 'static,
{
    run_paced(concurrency, duration, None, op).await
}

/// Like [`run`]; with a `rate`, the tasks together send at most that many requests a second,
/// evenly spaced (the `i`th request of worker `w` not before `(i * concurrency + w) / rate`
/// seconds in): a cluster at rest, where each request finds the server idle.
async fn run_paced<F, Fut>(concurrency: usize, duration: Duration, rate: Option<f64>, op: F) -> Phase
where
    F: Fn(usize, usize) -> Fut + Clone + 'static,
    Fut: std::future::Future<Output = bool> + 'static,
{
    let start = Instant::now();
    let stop = start + duration;
    let mut tasks = Vec::new();
    for w in 0..concurrency {
        let op = op.clone();
        tasks.push(actix_web::rt::spawn(async move {
            let (mut lat, mut errors, mut i) = (Vec::new(), 0, 0);
            while Instant::now() < stop {
                if let Some(rate) = rate {
                    let due = start + Duration::from_secs_f64((i * concurrency + w) as f64 / rate);
                    if due >= stop {
                        break;
                    }
                    actix_web::rt::time::sleep_until(due.into()).await;
                }
                let t = Instant::now();
                if op(w, i).await {
                    lat.push(t.elapsed());
                } else {
                    errors += 1;
                }
                i += 1;
            }
            (lat, errors)
        }));
    }
    let mut latencies = Vec::new();
    let mut errors = 0;
    for t in tasks {
        let (l, e) = t.await.expect("load task");
        latencies.extend(l);
        errors += e;
    }
    Phase { ops: latencies.len(), elapsed: start.elapsed(), latencies, errors }
}

fn report(name: &str, c: usize, p: &Phase, baseline: Option<&Phase>) {
    report_cpu(name, c, p, baseline, None);
}

/// Prints a phase; `cpu` is the server's CPU time during it, shown per request: CPU time is
/// what the server spent, which other load on a shared machine disturbs far less than rates.
fn report_cpu(name: &str, c: usize, p: &Phase, baseline: Option<&Phase>, cpu: Option<Duration>) {
    let ratio = baseline.map(|b| format!("{:>7.1}%", 100.0 * p.rate() / b.rate())).unwrap_or_else(|| "       -".into());
    let per_request = cpu
        .filter(|_| p.ops > 0)
        .map(|t| format!("   server CPU {:>6.1} µs/req", t.as_secs_f64() * 1e6 / p.ops as f64))
        .unwrap_or_default();
    println!(
        "{name:<28} c={c:<3} {:>9.0} req/s   p50 {:>7.2} ms   p99 {:>7.2} ms   errors {:<5} of storage trait rate: {ratio}{per_request}",
        p.rate(),
        p.quantile_ms(0.50),
        p.quantile_ms(0.99),
        p.errors
    );
}

fn rss_mib(pid: u32) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|kb| kb.parse::<f64>().ok())
        .map(|kb| kb / 1024.0)
        .unwrap_or(0.0)
}

async fn storage_phases(store: Arc<dyn Storage>, seconds: Duration) -> Vec<(usize, Phase, Phase)> {
    let value = Bytes::from(vec![b'x'; 600]);
    store.put("/registry/loadgen/hot", value.clone(), Expect::Absent).await.expect("seed");
    let mut out = Vec::new();
    for (round, c) in [1usize, 64].into_iter().enumerate() {
        let (s, v) = (store.clone(), value.clone());
        let create = run(c, seconds, move |w, i| {
            let (s, v) = (s.clone(), v.clone());
            async move { s.put(&format!("/registry/loadgen/r{round}-{w}-{i}"), v, Expect::Absent).await.is_ok() }
        })
        .await;
        let s = store.clone();
        let get = run(c, seconds, move |_, _| {
            let s = s.clone();
            async move { s.get("/registry/loadgen/hot").await.is_ok_and(|(kv, _)| kv.is_some()) }
        })
        .await;
        out.push((c, create, get));
    }
    out
}

/// Whether a request got `code`; reads the body so the connection can be reused.
async fn answered<S>(sent: Result<awc::ClientResponse<S>, awc::error::SendRequestError>, code: u16) -> bool
where
    S: futures_util::Stream<Item = Result<Bytes, awc::error::PayloadError>> + Unpin,
{
    let Ok(mut r) = sent else { return false };
    let _ = r.body().await;
    r.status().as_u16() == code
}

async fn https_phases(server: &TestServer, baseline: &[(usize, Phase, Phase)], seconds: Duration) {
    let client = server.client(true);
    let url = server.url("/api/v1/namespaces/default/configmaps");
    let hot =
        client.post(&url).send_json(&json!({"metadata": {"name": "hot"}, "data": {"k": "v"}})).await.expect("seed");
    assert_eq!(hot.status().as_u16(), 201);
    let pid = server.pid();
    for (round, (c, base_create, base_get)) in baseline.iter().enumerate() {
        let (cl, u) = (client.clone(), url.clone());
        let cpu = cpu_time(pid);
        let create = run(*c, seconds, move |w, i| {
            let (cl, u) = (cl.clone(), u.clone());
            async move {
                let body =
                    json!({"metadata": {"name": format!("r{round}-{w}-{i}")}, "data": {"payload": "x".repeat(512)}});
                answered(cl.post(&u).send_json(&body).await, 201).await
            }
        })
        .await;
        let used = cpu_time(pid).saturating_sub(cpu);
        report_cpu("https create configmap", *c, &create, Some(base_create), Some(used));
        let (cl, u) = (client.clone(), format!("{url}/hot"));
        let cpu = cpu_time(pid);
        let get = run(*c, seconds, move |_, _| {
            let (cl, u) = (cl.clone(), u.clone());
            async move { answered(cl.get(&u).send().await, 200).await }
        })
        .await;
        let used = cpu_time(pid).saturating_sub(cpu);
        report_cpu("https get configmap (cache)", *c, &get, Some(base_get), Some(used));
    }
}

async fn embedded(seconds: Duration) {
    println!("== embedded store: storage trait directly (same machine, same run)");
    let dir = tempfile::tempdir().expect("temp dir");
    let store: Arc<dyn Storage> = EmbeddedStore::open(dir.path(), EmbeddedOptions::default()).expect("open store");
    let baseline = storage_phases(store, seconds).await;
    for (c, create, get) in &baseline {
        report("storage put (create)", *c, create, None);
        report("storage get", *c, get, None);
    }
    let server = TestServer::start();
    actix_web::rt::time::sleep(Duration::from_secs(2)).await;
    let idle = rss_mib(server.pid());
    println!(
        "== embedded store: HTTPS through the pipeline (authn, authz, APF, admission on; client on the same cores)"
    );
    https_phases(&server, &baseline, seconds).await;
    println!("== memory: apiserver resident {idle:.1} MiB idle, {:.1} MiB after the run", rss_mib(server.pid()));
}

/// The diagnosis's cost: creates and cached gets at c=64 through one server with the axes
/// judged (the default) and one with `--diagnosis=false`, alternated twice on the same
/// machine, with each server's CPU time per request.
async fn diagnosis_cost(seconds: Duration) {
    let on = TestServer::start();
    let off = TestServer::start_with(&["--diagnosis=false"]);
    let mut rows: Vec<(&str, &str, f64, f64)> = Vec::new();
    for round in 0..2 {
        for (label, server) in [("diagnosis on", &on), ("diagnosis off", &off)] {
            let client = server.client(true);
            let url = server.url("/api/v1/namespaces/default/configmaps");
            let _ = client.post(&url).send_json(&json!({"metadata": {"name": "hot"}})).await;
            let pid = server.pid();
            let (cl, u) = (client.clone(), url.clone());
            let cpu = cpu_time(pid);
            let create = run(64, seconds, move |w, i| {
                let (cl, u) = (cl.clone(), u.clone());
                async move {
                    let body =
                        json!({"metadata": {"name": format!("r{round}-{w}-{i}")}, "data": {"p": "x".repeat(512)}});
                    answered(cl.post(&u).send_json(&body).await, 201).await
                }
            })
            .await;
            let used = cpu_time(pid).saturating_sub(cpu);
            report_cpu(&format!("{label}: create"), 64, &create, None, Some(used));
            rows.push((label, "create", create.rate(), used.as_secs_f64() * 1e6 / create.ops.max(1) as f64));
            let (cl, u) = (client.clone(), format!("{url}/hot"));
            let cpu = cpu_time(pid);
            let get = run(64, seconds, move |_, _| {
                let (cl, u) = (cl.clone(), u.clone());
                async move { answered(cl.get(&u).send().await, 200).await }
            })
            .await;
            let used = cpu_time(pid).saturating_sub(cpu);
            report_cpu(&format!("{label}: get (cache)"), 64, &get, None, Some(used));
            rows.push((label, "get", get.rate(), used.as_secs_f64() * 1e6 / get.ops.max(1) as f64));
        }
    }
    for op in ["create", "get"] {
        let mean = |label: &str, f: fn(&(&str, &str, f64, f64)) -> f64| {
            let v: Vec<f64> = rows.iter().filter(|r| r.0 == label && r.1 == op).map(f).collect();
            v.iter().sum::<f64>() / v.len().max(1) as f64
        };
        println!(
            "== {op}: with diagnosis {:.1}% of the rate without, server CPU {:.1} vs {:.1} µs/req",
            100.0 * mean("diagnosis on", |r| r.2) / mean("diagnosis off", |r| r.2),
            mean("diagnosis on", |r| r.3),
            mean("diagnosis off", |r| r.3)
        );
    }
}

async fn etcd(seconds: Duration) {
    let etcd = actix_web::rt::task::spawn_blocking(EtcdProcess::start).await.expect("etcd");
    println!("== etcd {}: storage trait directly (etcd's own rate through our client)", etcd.endpoint());
    let store: Arc<dyn Storage> = etcd.connect().await.expect("connect etcd");
    let baseline = storage_phases(store, seconds).await;
    for (c, create, get) in &baseline {
        report("etcd put (create)", *c, create, None);
        report("etcd get", *c, get, None);
    }
    let server = TestServer::start_with(&["--storage-backend", "etcd3", "--etcd-servers", etcd.endpoint()]);
    println!("== etcd: HTTPS through the pipeline (percentages: of etcd's own rate)");
    https_phases(&server, &baseline, seconds).await;
}

/// Fills an embedded store with `n` configmaps of about 1 KiB, then times a server start on it
/// until `/readyz` answers (storage replay plus every cacher's initial list).
async fn startup(n: usize) {
    let dir = tempfile::tempdir().expect("temp dir");
    {
        let store: Arc<dyn Storage> =
            EmbeddedStore::open(&dir.path().join("store"), EmbeddedOptions::default()).expect("open store");
        let body = json!({"apiVersion": "v1", "kind": "ConfigMap", "data": {"payload": "x".repeat(900)}});
        let configmaps = kinds::catalogue().find("", "v1", "configmaps").expect("configmaps are served");
        let mut batch = Vec::new();
        for i in 0..n {
            let mut obj = body.clone();
            obj["metadata"] = json!({"name": format!("cm-{i}"), "namespace": "default", "uid": format!("uid-{i}"), "creationTimestamp": "2026-01-01T00:00:00Z"});
            let store = store.clone();
            let value = storage_codec::codec::encode_object(&configmaps, &obj).expect("encodes");
            batch.push(actix_web::rt::spawn(async move {
                store.put(&format!("/registry/configmaps/default/cm-{i}"), value, Expect::Absent).await
            }));
            if batch.len() == 256 {
                for t in batch.drain(..) {
                    t.await.expect("task").expect("put");
                }
            }
        }
        for t in batch {
            t.await.expect("task").expect("put");
        }
    }
    let size: u64 = std::fs::read_dir(dir.path().join("store"))
        .unwrap()
        .filter_map(|e| e.ok()?.metadata().ok())
        .map(|m| m.len())
        .sum();
    let started = Instant::now();
    let server = TestServer::start_in(dir.path());
    println!(
        "== startup: {n} configmaps ({:.0} MiB on disk): ready in {:.2} s, resident {:.1} MiB",
        size as f64 / (1 << 20) as f64,
        started.elapsed().as_secs_f64(),
        rss_mib(server.pid())
    );
}

/// The modes, each what it runs (see the module documentation); `all` runs those marked.
const MODES: &[(&str, &str)] = &[
    ("all", "embedded, etcd, startup, watch, cache, protobuf, apf, admission, crds and rbac"),
    ("embedded", "creates and gets through the pipeline beside the embedded store's own rate"),
    ("etcd", "the same on an etcd started for the run"),
    ("startup", "a server start on a store holding 100,000 objects"),
    ("watch", "watch delivery to 100 to 10,000 watchers"),
    ("watch=WxR,...", "chosen watch phases, watchers x changes/s"),
    ("watch-matrix", "watch phases of 100 to 10,000 watchers at 10 to 100 changes/s"),
    ("watch-remote", "watch phases through a storage stage process"),
    ("replicas", "creates/s through 1 and 3 gateway replicas on one etcd"),
    ("cache", "memory per cached object and LISTs from the cache and from storage"),
    ("cache=N,...", "the same for N objects, on the embedded store"),
    ("protobuf", "protobuf beside JSON"),
    ("apf", "APF classification and dispatch per request"),
    ("admission", "creates/s with no admission, the default chain, and a webhook"),
    ("crds", "1,000 CRDs created and served"),
    ("crds=N", "N CRDs"),
    ("rbac", "authorization decisions, in process and over HTTPS"),
    ("stages", "each stage stepped up to its capacity (options: `stages --help`)"),
    ("stage=KEY,...", "chosen stages"),
    ("cl2", "the clusterloader2-style scenario (options: `cl2 --help`)"),
    ("faults", "a local fleet loaded while processes are killed (options: `faults --help`)"),
    ("lag", "each read kind's revision lag (options: `lag --help`)"),
    ("window", "the watch cache's hit rate swept (options: `window --help`)"),
    ("diagnosis", "a server judging its axes beside one that does not"),
    ("apply", "server-side applies beside strategic merge patches and updates"),
    ("noop", "writes that change nothing beside changing ones (options: `--baseline PATH`)"),
    (
        "density",
        "kube-controller-manager, kube-scheduler and kubemark hollow nodes beside kube-apiserver (options: `density --help`)",
    ),
    ("mix", "the request mix of a cluster, each type's server CPU beside kube-apiserver's (options: `mix --help`)"),
    (
        "format",
        "kube's etcd format beside MessagePack: the codec, and a build beside another (options: `--baseline PATH`)",
    ),
];

/// Each phase's length when the command line gives none.
const DEFAULT_SECONDS: &str = "5";

/// The modes that read options of their own after their name.
const WITH_OPTIONS: &[&str] =
    &["stages", "stage=", "cl2", "faults", "lag", "window", "noop", "format", "mix", "density"];

/// The load generator's command line; a mode's own options follow the mode and go to its parser.
#[derive(clap::Parser, Debug)]
#[command(name = "loadgen", about = "Load generator: the pipeline's cost measured beside storage's own rate, \
    and capacity, watch, cache and fault runs", after_help = modes_help())]
struct Args {
    /// Length of each phase: seconds, or a Go duration (`1m30s`).
    #[arg(default_value = DEFAULT_SECONDS, value_parser = tests::flags::seconds)]
    seconds: Duration,
    /// What to run (see the modes below).
    #[arg(default_value = "all", value_parser = mode)]
    mode: String,
}

/// The list of modes shown after the options in `--help`.
fn modes_help() -> String {
    let width = MODES.iter().map(|(m, _)| m.len()).max().unwrap_or(0);
    let lines: Vec<String> = MODES.iter().map(|(m, what)| format!("  {m:<width$}  {what}")).collect();
    format!("Modes:\n{}", lines.join("\n"))
}

/// The build a mode compares this one with: `--baseline PATH` in its options (`rest`), or none;
/// anything else is a usage error.
fn baseline_build(mode: &str, rest: &[String]) -> Option<std::path::PathBuf> {
    match rest {
        [] => None,
        [flag, path] if flag == "--baseline" => Some(std::path::PathBuf::from(path)),
        _ => {
            eprintln!("usage: loadgen SECONDS {mode} [--baseline PATH-TO-ANOTHER-APISERVER-BUILD]");
            std::process::exit(2);
        }
    }
}

/// `text` if it names a mode, with a well-formed argument for those that take one.
fn mode(text: &str) -> Result<String, String> {
    let counts = |list: &str| list.split(',').all(|n| n.parse::<usize>().is_ok());
    let known = match text.split_once('=') {
        None => MODES.iter().any(|(m, _)| !m.contains('=') && *m == text),
        Some(("crds", n)) => n.parse::<usize>().is_ok(),
        Some(("cache", list)) => counts(list),
        Some(("stage", keys)) => !keys.is_empty(),
        Some(("watch", list)) => list
            .split(',')
            .all(|p| p.split_once('x').is_some_and(|(w, r)| w.parse::<usize>().is_ok() && r.parse::<u32>().is_ok())),
        Some(_) => false,
    };
    if known { Ok(text.to_string()) } else { Err(format!("unknown mode {text:?} (see --help for the modes)")) }
}

/// Whether `mode` reads options of its own.
fn takes_options(mode: &str) -> bool {
    WITH_OPTIONS.iter().any(|m| if m.ends_with('=') { mode.starts_with(m) } else { mode == *m })
}

/// The command line: the seconds and the mode (checked, `--help` answered), and what follows a
/// mode that takes options of its own. Options after any other mode are refused.
fn command_line() -> (Duration, String, Vec<String>) {
    use clap::{CommandFactory, Parser};
    let argv: Vec<String> = std::env::args().collect();
    // Everything after the first argument naming a mode is the mode's own (its `--help` too).
    let split = argv.iter().skip(1).position(|a| mode(a).is_ok()).map_or(argv.len(), |i| i + 2);
    let mut head = argv[..split].to_vec();
    // `loadgen cl2`: a mode first leaves each phase at its default length.
    if head.len() == 2 && mode(&head[1]).is_ok() {
        head.insert(1, DEFAULT_SECONDS.into());
    }
    let args = Args::parse_from(head);
    let rest = argv[split..].to_vec();
    if !rest.is_empty() && !takes_options(&args.mode) {
        Args::command()
            .error(clap::error::ErrorKind::UnknownArgument, format!("mode {} takes no options: {rest:?}", args.mode))
            .exit();
    }
    (args.seconds, args.mode, rest)
}

fn main() {
    let (seconds, what, rest) = command_line();
    if what == "cl2" {
        load::cl2(seconds, rest);
        return;
    }
    if what == "faults" {
        load::faults(seconds, rest);
        return;
    }
    actix_web::rt::System::new().block_on(async move {
        if what == "stages" || what.starts_with("stage=") {
            load::stages(seconds, what.trim_start_matches("stage="), rest.clone()).await;
        }
        if what == "embedded" || what == "all" {
            embedded(seconds).await;
        }
        if what == "etcd" || what == "all" {
            etcd(seconds).await;
        }
        if what == "startup" || what == "all" {
            startup(100_000).await;
        }
        if what == "diagnosis" {
            diagnosis_cost(seconds).await;
        }
        if what == "window" {
            load::window(seconds, rest.clone()).await;
        }
        if what == "lag" {
            load::lag(seconds, rest.clone()).await;
        }
        if what == "apply" {
            apply::run_all(seconds).await;
        }
        if what == "noop" {
            noop::run_all(seconds, rest.clone()).await;
        }
        if what == "mix" {
            mix::run_all(seconds, rest.clone()).await;
        }
        if what == "density" {
            density::run_all(seconds, rest.clone()).await;
        }
        if what == "format" {
            format::run_all(seconds, rest).await;
        }
        if what == "replicas" {
            replicas::run_replicas(seconds).await;
        }
        if what == "watch-remote" {
            watch::remote(seconds, &[(100, 100), (1_000, 20)]).await;
        }
        if what == "watch" || what == "all" {
            watch::run(seconds, &[(100, 100), (1_000, 20), (1_000, 100), (10_000, 10)]).await;
        }
        if what == "cache" || what == "all" {
            cache::run().await;
        }
        if what == "protobuf" || what == "all" {
            protobuf::run_all(seconds).await;
        }
        if what == "apf" || what == "all" {
            apf::run(seconds).await;
        }
        if what == "admission" || what == "all" {
            admission::run_all(seconds).await;
        }
        if what == "crds" || what == "all" {
            crds::run(1_000, seconds).await;
        }
        if let Some(n) = what.strip_prefix("crds=") {
            crds::run(n.parse().expect("a CRD count"), seconds).await;
        }
        if what == "rbac" || what == "all" {
            rbac::run();
            rbac::run_https(seconds).await;
        }
        if let Some(sizes) = what.strip_prefix("cache=") {
            let sizes: Vec<usize> = sizes.split(',').map(|n| n.parse().expect("an object count")).collect();
            cache::on_embedded(&sizes).await;
        }
        if let Some(list) = what.strip_prefix("watch=") {
            // `watch=1000x100,10000x10`: chosen phases, watchers x changes/s.
            let phases: Vec<(usize, u32)> = list
                .split(',')
                .filter_map(|p| p.split_once('x'))
                .map(|(w, r)| (w.parse().expect("watchers"), r.parse().expect("rate")))
                .collect();
            watch::run(seconds, &phases).await;
        }
        if what == "watch-matrix" {
            let mut phases = Vec::new();
            for watchers in [100, 1_000, 10_000] {
                for rate in [10, 20, 100] {
                    phases.push((watchers, rate));
                }
            }
            watch::run(seconds, &phases).await;
        }
    });
}
