//! The command lines of `tests::load`: `stages` / `stage=<key>[,<key>...]` (each stage stepped
//! up to its capacity) and `cl2` (the clusterloader2-style scenario, against a server started
//! for the run, on the embedded store, on etcd, or with pods and Deployments in a storage stage
//! process, unless `--kubeconfig` names another), and `faults` (the local fleet loaded while an
//! etcd member, a gateway and a stage process are killed in turn), and `lag` (each read kind's
//! revision lag against linearizable storage reads, on both backends).

use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;
use storage::etcd::testing::EtcdProcess;
use tests::TestServer;
use tests::fleet::{Deployment, ShardSpec, StageProcess};
use tests::load::cl2::{self, Cl2Options};
use tests::load::faults::{self, FaultOptions};
use tests::load::lag::{self, Authority, LagOptions};
use tests::load::stages::{self, StepPlan};
use tests::load::targets;
use tests::load::window::{self, SweepCell, WindowOptions};

/// `lag` options.
#[derive(Parser, Debug)]
#[command(no_binary_name = true)]
struct LagArgs {
    /// Clients creating ConfigMaps.
    #[arg(long, default_value_t = 16)]
    writers: usize,
    /// Creates per second, all writers together (0: as fast as they are answered).
    #[arg(long, default_value_t = 800.0)]
    rate: f64,
    /// Clients contending on one Lease.
    #[arg(long, default_value_t = 4)]
    contenders: usize,
    /// Where `lag.json` goes.
    #[arg(long, default_value = "loadgen-out")]
    out: PathBuf,
}

/// `lag`: each read kind's revision lag for `seconds` on the embedded store, then on etcd.
pub async fn lag(seconds: Duration, rest: Vec<String>) {
    let args = LagArgs::parse_from(rest);
    let options =
        LagOptions { duration: seconds, writers: args.writers, rate: args.rate, lease_contenders: args.contenders };
    let mut reports = Vec::new();
    {
        let server = TestServer::start();
        let authority = Authority::Admin(server.admin_url("/debug/storage/revision"));
        reports.push(lag::run(&server, authority, "embedded", &options).await);
    }
    {
        let etcd = EtcdProcess::start();
        let server = TestServer::start_with(&["--storage-backend", "etcd3", "--etcd-servers", etcd.endpoint()]);
        let authority = Authority::etcd(etcd.endpoint()).await.expect("connect to etcd");
        reports.push(lag::run(&server, authority, "etcd", &options).await);
    }
    println!(
        "== revision lag, {} s per backend, {} writers at {} creates/s (0: unpaced), {} lease contenders",
        seconds.as_secs(),
        args.writers,
        args.rate,
        args.contenders
    );
    print!("{}", lag::table(&reports));
    let path = args.out.join("lag.json");
    match tests::load::write_json(&path, &reports) {
        Ok(()) => println!("wrote {}", path.display()),
        Err(e) => eprintln!("loadgen: {}: {e}", path.display()),
    }
}

/// `window` options.
#[derive(Parser, Debug)]
#[command(no_binary_name = true)]
struct WindowArgs {
    /// Object updates per second.
    #[arg(long, default_value_t = 400.0)]
    rate: f64,
    /// Informers restarting.
    #[arg(long, default_value_t = 16)]
    informers: usize,
    /// The longest downtime of an informer (seconds, or a duration: `4s`).
    #[arg(long, default_value = "4", value_parser = tests::flags::seconds)]
    max_down: Duration,
    /// The window's freshness (`--watch-cache-event-freshness`; seconds, or a duration).
    #[arg(long, default_value = "0", value_parser = tests::flags::seconds)]
    freshness: Duration,
    /// Window capacities to sweep.
    #[arg(long, value_delimiter = ',', default_value = "100,500,1000,2000")]
    windows: Vec<usize>,
    /// Compaction retentions to sweep, in whole seconds (or durations: `5s,1m`).
    #[arg(long, value_delimiter = ',', default_value = "5,60", value_parser = tests::flags::whole_seconds)]
    retentions: Vec<u64>,
    /// Object counts to sweep.
    #[arg(long, value_delimiter = ',', default_value = "100,2000")]
    objects: Vec<usize>,
    /// Where `window.json` and the figures go.
    #[arg(long, default_value = "loadgen-out")]
    out: PathBuf,
}

/// `window`: the watch cache's hit rate swept over retention × window × objects, `seconds` per
/// cell, beside the model; a table, `window.json`, and two figures.
pub async fn window(seconds: Duration, rest: Vec<String>) {
    let args = WindowArgs::parse_from(rest);
    let options = WindowOptions {
        duration: seconds,
        update_rate: args.rate,
        informers: args.informers,
        max_down: args.max_down,
        freshness: args.freshness,
    };
    let mut results = Vec::new();
    for &objects in &args.objects {
        for &retention_s in &args.retentions {
            for &w in &args.windows {
                let cell = SweepCell { window: w, retention_s, objects };
                let r = window::run_cell(cell, &options).await;
                eprintln!("{}", window::table(std::slice::from_ref(&r)).lines().last().unwrap_or_default());
                results.push(r);
            }
        }
    }
    println!(
        "== watch cache window: {} s per cell, {} updates/s, {} informers, downtime uniform on [0, {} s], freshness {} s",
        seconds.as_secs(),
        args.rate,
        args.informers,
        args.max_down.as_secs_f64(),
        args.freshness.as_secs_f64()
    );
    print!("{}", window::table(&results));
    let path = args.out.join("window.json");
    if let Err(e) = tests::load::write_json(&path, &results) {
        eprintln!("loadgen: {}: {e}", path.display());
    }
    let series = |value: fn(&window::CellResult) -> f64, model: fn(&window::CellResult) -> f64| {
        let mut lines: Vec<tests::load::plot::Series> = Vec::new();
        for &objects in &args.objects {
            for &retention_s in &args.retentions {
                let points = results
                    .iter()
                    .filter(|r| r.cell.objects == objects && r.cell.retention_s == retention_s)
                    .map(|r| (r.cell.window as f64, value(r)))
                    .collect();
                lines.push((format!("measured: {objects} objects, retention {retention_s} s"), points));
            }
            let points = results
                .iter()
                .filter(|r| r.cell.objects == objects && r.cell.retention_s == args.retentions[0])
                .map(|r| (r.cell.window as f64, model(r)))
                .collect();
            lines.push((format!("model: {objects} objects"), points));
        }
        lines
    };
    let figures = [
        ("window-miss-rate.svg", "resumes refused 410 (share)", series(|r| r.miss_rate, |r| r.predicted_miss_rate)),
        (
            "window-storage-lists.svg",
            "storage lists per second",
            series(|r| r.storage_lists_per_sec, |r| r.predicted_storage_lists_per_sec),
        ),
    ];
    for (file, y, lines) in figures {
        let path = args.out.join(file);
        let title = format!("restarting informers at {} updates/s: {y} by watch cache window", args.rate);
        match tests::load::plot::lines(&path, &title, "window capacity (events)", y, &lines) {
            Ok(()) => println!("wrote {}", path.display()),
            Err(e) => eprintln!("loadgen: {e}"),
        }
    }
}

/// `stages` and `stage=` options.
#[derive(Parser, Debug)]
#[command(no_binary_name = true)]
struct StagesArgs {
    /// Where `stages.json` and `stages.svg` go.
    #[arg(long, default_value = "loadgen-out")]
    out: PathBuf,
}

/// `cl2` options.
#[derive(Parser, Debug)]
#[command(no_binary_name = true)]
struct Cl2Args {
    /// The endpoint's kubeconfig; none: a server of this build is started for the run.
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
    /// A server URL replacing the kubeconfig's.
    #[arg(long)]
    endpoint: Option<String>,
    /// The server's admin endpoint (`http://127.0.0.1:<port>`), for mailbox depths.
    #[arg(long)]
    admin: Option<String>,
    #[arg(long, default_value_t = 10)]
    namespaces: usize,
    /// Deployments per namespace.
    #[arg(long, default_value_t = 10)]
    deployments: usize,
    /// Pods per Deployment.
    #[arg(long, default_value_t = 3)]
    pods: usize,
    /// The client's request rate limit.
    #[arg(long, default_value_t = 200.0)]
    qps: f64,
    /// Requests in flight at most.
    #[arg(long, default_value_t = 32)]
    inflight: usize,
    /// Watchers of the run's pods.
    #[arg(long, default_value_t = 4)]
    watchers: usize,
    /// Where `cl2.json` and the figures go.
    #[arg(long, default_value = "loadgen-out")]
    out: PathBuf,
    /// Start the server on an etcd of its own instead of the embedded store.
    #[arg(long)]
    etcd: bool,
    /// Start a gateway on an etcd with pods and Deployments written by a storage stage
    /// process over the wire.
    #[arg(long)]
    fleet: bool,
}

/// `faults` options.
#[derive(Parser, Debug)]
#[command(no_binary_name = true)]
struct FaultArgs {
    /// Creates per second of each resource (ConfigMaps, Events).
    #[arg(long, default_value_t = 40.0)]
    rate: f64,
    /// Gateway replicas behind the balancer.
    #[arg(long, default_value_t = 2)]
    gateways: usize,
    /// Watchers of each resource.
    #[arg(long, default_value_t = 2)]
    watchers: usize,
    /// How long a killed process stays down (seconds, or a duration: `5s`).
    #[arg(long, default_value = "5", value_parser = tests::flags::seconds)]
    down_for: Duration,
    /// The fleet's first port (see deploy/fleet.sh).
    #[arg(long, default_value_t = 23000)]
    port_base: u16,
    /// Where `faults.json` and the figures go.
    #[arg(long, default_value = "loadgen-out")]
    out: PathBuf,
}

/// `faults`: a fleet of its own loaded for `seconds` before each kill and after each restart.
pub fn faults(seconds: Duration, rest: Vec<String>) {
    let args = FaultArgs::parse_from(rest);
    let options = FaultOptions {
        port_base: args.port_base,
        gateways: args.gateways,
        rate: args.rate,
        watchers: args.watchers,
        settle: seconds,
        down_for: args.down_for,
        ..FaultOptions::new(&args.out)
    };
    let runtime =
        tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("a runtime");
    match runtime.block_on(faults::run(&options)) {
        Ok(report) if report.lossless() => {}
        Ok(_) => {
            eprintln!("loadgen: the fault run lost an acknowledged write or a watch event (see above)");
            std::process::exit(1);
        }
        Err(e) => {
            eprintln!("loadgen: {e}");
            std::process::exit(1);
        }
    }
}

/// `stages` (every stage) or `stage=a,b`: steps of `seconds` each.
pub async fn stages(seconds: Duration, which: &str, rest: Vec<String>) {
    let args = StagesArgs::parse_from(rest);
    let keys: Vec<&str> = match which {
        "stages" => targets::ALL.to_vec(),
        list => list.split(',').collect(),
    };
    if let Err(e) = stages::run_all(&keys, &StepPlan::new(seconds), &args.out).await {
        eprintln!("loadgen: {e}");
        std::process::exit(1);
    }
}

/// A server started for a `cl2` run, with what it runs on.
struct Started {
    server: TestServer,
    _shard: Option<(StageProcess, Deployment)>,
    _etcd: Option<EtcdProcess>,
}

/// The server `args` ask for: on the embedded store; on an etcd (`--etcd`); or a gateway on an
/// etcd whose pods and Deployments are written by a storage stage process (`--fleet`).
fn start_server(args: &Cl2Args) -> Started {
    if !args.etcd && !args.fleet {
        return Started { server: TestServer::start(), _shard: None, _etcd: None };
    }
    let etcd = EtcdProcess::start();
    let backend = ["--storage-backend", "etcd3", "--etcd-servers", etcd.endpoint()];
    if !args.fleet {
        return Started { server: TestServer::start_with(&backend), _shard: None, _etcd: Some(etcd) };
    }
    let shard = ShardSpec::new("workloads", &["pods", "deployments.apps"]);
    let deployment = Deployment::new(std::slice::from_ref(&shard));
    let process = StageProcess::start(&deployment, "workloads", &backend);
    let mut flags = deployment.flags();
    flags.extend(backend.iter().map(|f| f.to_string()));
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let server = TestServer::start_with(&flags);
    Started { server, _shard: Some((process, deployment)), _etcd: Some(etcd) }
}

/// `cl2`: the scenario, listing pods for `seconds`.
pub fn cl2(seconds: Duration, rest: Vec<String>) {
    let args = Cl2Args::parse_from(rest);
    let started = args.kubeconfig.is_none().then(|| start_server(&args));
    let kubeconfig = match (&args.kubeconfig, &started) {
        (Some(k), _) => k.clone(),
        (None, Some(s)) => s.server.kubeconfig.clone(),
        (None, None) => unreachable!("a server is started when no kubeconfig is given"),
    };
    let options = Cl2Options {
        endpoint: args.endpoint,
        admin: args.admin.or_else(|| started.as_ref().map(|s| s.server.admin_url(""))),
        namespaces: args.namespaces,
        deployments: args.deployments,
        pods: args.pods,
        qps: args.qps,
        inflight: args.inflight,
        watchers: args.watchers,
        list_for: seconds,
        ..Cl2Options::new(&kubeconfig, &args.out)
    };
    let runtime =
        tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("a runtime");
    if let Err(e) = runtime.block_on(cl2::run(&options)) {
        eprintln!("loadgen: {e}");
        std::process::exit(1);
    }
}
