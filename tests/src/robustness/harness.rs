//! A robustness run: the real server (on its embedded store, or on a 3-member etcd cluster)
//! takes random traffic from concurrent clients and watchers ([`super::traffic`]) while a
//! fault thread injects failpoints one after another; then the recorded history is checked
//! ([`super::check`]) and, on any violation or undecided key, written out for a reader.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use storage::etcd::testing::EtcdCluster;

use super::traffic::{self, Rng, Traffic};
use super::{Report, check};
use crate::TestServer;

/// Where the server keeps its data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// The embedded store in the server's data directory.
    Embedded,
    /// A 3-member etcd cluster.
    Etcd,
}

/// A failpoint the fault thread fires.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, clap::ValueEnum)]
pub enum Fault {
    /// kill -9 of the server, then a restart on the same data.
    KillServer,
    /// Every fsync of the embedded store's log waits 300 ms, for 3 s.
    SlowFsync,
    /// One fsync fails (the store refuses writes after it), then the server is killed and
    /// restarted, as an operator or supervisor would.
    FailFsync,
    /// Compaction at the current revision under load.
    Compact,
    /// Every storage watch breaks, so each cacher re-lists and re-watches.
    BreakWatches,
    /// kill -9 of an etcd member that does not lead, then its restart.
    KillEtcdMember,
    /// kill -9 of the etcd leader, then its restart.
    KillEtcdLeader,
    /// Defragmentation of every etcd member under load.
    Defrag,
    /// An etcd member (the leader half the time) cut off from its peers for 4 s.
    PartitionEtcdMember,
}

impl Fault {
    /// The failpoints a backend supports.
    pub fn all(backend: Backend) -> Vec<Fault> {
        match backend {
            Backend::Embedded => {
                vec![Fault::KillServer, Fault::SlowFsync, Fault::Compact, Fault::BreakWatches, Fault::FailFsync]
            }
            Backend::Etcd => vec![
                Fault::KillEtcdMember,
                Fault::Compact,
                Fault::PartitionEtcdMember,
                Fault::KillEtcdLeader,
                Fault::BreakWatches,
                Fault::Defrag,
                Fault::KillServer,
            ],
        }
    }
}

/// How a run is shaped.
#[derive(Clone, Debug)]
pub struct Config {
    /// The storage under the server.
    pub backend: Backend,
    /// How long traffic runs with faults firing.
    pub duration: Duration,
    /// Concurrent request clients.
    pub clients: u32,
    /// Concurrent watchers.
    pub watchers: u32,
    /// Objects the clients share.
    pub keys: usize,
    /// The pause between two faults.
    pub fault_every: Duration,
    /// The faults, fired in this order, round and round.
    pub faults: Vec<Fault>,
    /// Seed of every random choice.
    pub seed: u64,
    /// Where a failing run writes its history and violations.
    pub out_dir: PathBuf,
}

impl Config {
    /// A run of `duration` on `backend` with every fault it supports.
    pub fn new(backend: Backend, duration: Duration) -> Self {
        let seed = std::env::var("ROBUSTNESS_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| {
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(1, |d| d.as_nanos() as u64)
        });
        Config {
            backend,
            duration,
            clients: 8,
            watchers: 4,
            keys: 24,
            fault_every: Duration::from_secs(6),
            faults: Fault::all(backend),
            seed,
            out_dir: std::env::temp_dir().join(format!("robustness-{seed}")),
        }
    }
}

/// What a run did and found.
#[derive(Debug)]
pub struct Outcome {
    /// The checker's verdict.
    pub report: Report,
    /// Faults fired, by kind.
    pub faults: BTreeMap<String, u32>,
    /// Answers no fault explains.
    pub unexpected: Vec<String>,
    /// The seed, to run it again.
    pub seed: u64,
    /// Where the history (and any violations) were written: failing runs, and runs that left
    /// keys undecided.
    pub written: Option<PathBuf>,
}

impl std::fmt::Display for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let faults: Vec<String> = self.faults.iter().map(|(k, n)| format!("{k} x{n}")).collect();
        write!(f, "seed {}: {}; faults: {}", self.seed, self.report, faults.join(", "))?;
        if !self.unexpected.is_empty() {
            write!(f, "; {} unexpected answers, first: {}", self.unexpected.len(), self.unexpected[0])?;
        }
        if let Some(dir) = &self.written {
            write!(f, "; written to {}", dir.display())?;
        }
        Ok(())
    }
}

/// The processes under test, owned by the fault thread.
struct Cluster {
    server: TestServer,
    etcd: Option<EtcdCluster>,
}

impl Cluster {
    fn start(backend: Backend) -> Cluster {
        match backend {
            Backend::Embedded => {
                Cluster { server: TestServer::start_with(&["--enable-fault-injection=true"]), etcd: None }
            }
            Backend::Etcd => {
                let etcd = EtcdCluster::start_partitionable(3);
                let endpoints = etcd.endpoints().join(",");
                let server = TestServer::start_with(&[
                    "--storage-backend",
                    "etcd3",
                    "--etcd-servers",
                    &endpoints,
                    "--enable-fault-injection=true",
                ]);
                Cluster { server, etcd: Some(etcd) }
            }
        }
    }

    /// Fires `fault`, returning once the system is whole again.
    fn inject(&mut self, fault: Fault, rng: &mut Rng) {
        let s = &mut self.server;
        match fault {
            Fault::KillServer => {
                s.kill9();
                std::thread::sleep(Duration::from_millis(300));
                s.start_again();
            }
            Fault::SlowFsync => {
                s.admin_post("/faults?fsyncDelay=300ms");
                std::thread::sleep(Duration::from_secs(3));
                s.admin_post("/faults?fsyncDelay=0s");
            }
            Fault::FailFsync => {
                s.admin_post("/faults?fsyncFailures=1");
                std::thread::sleep(Duration::from_secs(1));
                s.kill9();
                s.start_again();
            }
            Fault::Compact => {
                s.compact();
            }
            Fault::BreakWatches => {
                s.admin_post("/faults?breakWatches=true");
            }
            Fault::KillEtcdMember | Fault::KillEtcdLeader => {
                let etcd = self.etcd.as_mut().expect("an etcd cluster");
                let leader = wait_for_leader(etcd);
                let victim =
                    if fault == Fault::KillEtcdLeader { leader } else { (leader + 1 + rng.below(2) as usize) % 3 };
                etcd.member(victim).stop();
                std::thread::sleep(Duration::from_secs(2));
                etcd.restart(victim);
            }
            Fault::PartitionEtcdMember => {
                let etcd = self.etcd.as_ref().expect("an etcd cluster");
                let leader = wait_for_leader(etcd);
                let victim = if rng.chance(50) { leader } else { (leader + 1) % 3 };
                etcd.partition(victim);
                std::thread::sleep(Duration::from_secs(4));
                etcd.heal(victim);
                wait_for_leader(etcd);
            }
            Fault::Defrag => {
                let etcd = self.etcd.as_ref().expect("an etcd cluster");
                let out = std::process::Command::new("etcdctl")
                    .args(["--endpoints", &etcd.endpoints().join(","), "defrag"])
                    .output()
                    .expect("etcdctl (Debian's etcd-client; deploy/install-tools.sh installs it)");
                assert!(out.status.success(), "defrag: {}", String::from_utf8_lossy(&out.stderr));
            }
        }
    }
}

/// The leader's index, waiting for an election to finish if one is under way.
fn wait_for_leader(etcd: &EtcdCluster) -> usize {
    crate::poll_until(Duration::from_secs(20), || etcd.leader()).expect("an etcd leader within 20 s")
}

/// Runs traffic and faults for `config.duration`, then checks the history.
pub fn run(config: &Config) -> Outcome {
    let mut cluster = Cluster::start(config.backend);
    let tls = Arc::new(cluster.server.tls_config(true));
    let base = format!("https://127.0.0.1:{}", cluster.server.port);
    let started = Instant::now();
    let faulting = Arc::new(AtomicBool::new(true));
    let faults_done = Arc::new(AtomicBool::new(false));

    // Faults fire on their own thread: a restart blocks until the server is ready.
    let fault_thread = {
        let (faulting, done, config) = (faulting.clone(), faults_done.clone(), config.clone());
        std::thread::spawn(move || {
            // Set however the thread ends, so the traffic never waits for a thread that died.
            struct Done(Arc<AtomicBool>);
            impl Drop for Done {
                fn drop(&mut self) {
                    self.0.store(true, Ordering::Relaxed);
                }
            }
            let _done = Done(done);
            let mut fired: BTreeMap<String, u32> = BTreeMap::new();
            let mut rng = Rng::new(config.seed ^ 0xfa17);
            let mut next = 0;
            while faulting.load(Ordering::Relaxed) {
                std::thread::sleep(config.fault_every);
                if !faulting.load(Ordering::Relaxed) {
                    break;
                }
                let fault = config.faults[next % config.faults.len()];
                next += 1;
                cluster.inject(fault, &mut rng);
                *fired.entry(format!("{fault:?}")).or_default() += 1;
            }
            (cluster, fired)
        })
    };

    let traffic = Rc::new(Traffic {
        base,
        tls,
        started,
        keys: config.keys,
        history: Default::default(),
        stopping: Default::default(),
        seen_revision: Default::default(),
        unexpected: Default::default(),
    });
    let system = actix_rt::System::new();
    system.block_on({
        let traffic = traffic.clone();
        let config = config.clone();
        async move {
            let mut rng = Rng::new(config.seed);
            let clients: Vec<_> = (0..config.clients)
                .map(|id| actix_rt::spawn(traffic::client(traffic.clone(), id, Rng::new(rng.next_u64()))))
                .collect();
            let watchers: Vec<_> = (0..config.watchers)
                .map(|id| {
                    actix_rt::spawn(traffic::watcher(traffic.clone(), config.clients + id, Rng::new(rng.next_u64())))
                })
                .collect();
            actix_rt::time::sleep(config.duration).await;
            // The last fault completes (a restart may be under way), then a calm spell lets the
            // watchers catch up with the last writes before everything stops.
            faulting.store(false, Ordering::Relaxed);
            while !faults_done.load(Ordering::Relaxed) {
                actix_rt::time::sleep(Duration::from_millis(100)).await;
            }
            actix_rt::time::sleep(Duration::from_secs(3)).await;
            traffic.stopping.set(true);
            for handle in clients.into_iter().chain(watchers) {
                let _ = handle.await;
            }
        }
    });
    let (cluster, faults) = fault_thread.join().expect("the fault thread");
    let server_log = cluster.server.log_text();
    drop(cluster);
    let history = Rc::try_unwrap(traffic).ok().expect("every client ended");
    let unexpected = history.unexpected.into_inner();
    let history = history.history.into_inner();
    let report = check(&history);
    // A run that left keys undecided writes its history too, for `robustness --check`.
    let failed = !report.violations.is_empty() || !unexpected.is_empty();
    let written = (failed || !report.undecided_keys.is_empty()).then(|| {
        std::fs::create_dir_all(&config.out_dir).expect("output directory");
        history.save(&config.out_dir.join("history.json")).expect("writing the history");
        report.write_violations(&config.out_dir).expect("writing the violations");
        if failed {
            std::fs::write(config.out_dir.join("apiserver.log"), &server_log).expect("writing the server's log");
        }
        config.out_dir.clone()
    });
    Outcome { report, faults, unexpected, seed: config.seed, written }
}
