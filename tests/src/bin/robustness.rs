//! Long robustness runs, and re-checking a saved history:
//!
//! ```sh
//! cargo build --release -p gateway --bin apiserver
//! cargo run --release -p tests --bin robustness -- --backend etcd --minutes 30
//! cargo run --release -p tests --bin robustness -- --check /tmp/robustness-<seed>/history.json
//! ```

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use tests::robustness::harness::{Backend, Config, Fault, run};
use tests::robustness::{History, check};

#[derive(Parser)]
#[command(about = "Random traffic and watches against the real server while faults fire, then every history checked")]
struct Args {
    /// `embedded` or `etcd` (a 3-member cluster); both when absent.
    #[arg(long)]
    backend: Option<String>,
    /// Traffic and faults per backend (minutes, or a duration: `90s`).
    #[arg(long, default_value = "5", value_parser = tests::flags::minutes)]
    minutes: Duration,
    /// Time between two faults (seconds, or a duration: `6s`).
    #[arg(long, default_value = "6", value_parser = tests::flags::seconds)]
    fault_every: Duration,
    /// The faults to fire, in turn (default: every one the backend supports).
    #[arg(long, value_enum, value_delimiter = ',')]
    faults: Vec<Fault>,
    /// Seed of every random choice (default: the clock).
    #[arg(long)]
    seed: Option<u64>,
    /// Check a history a run wrote instead of running.
    #[arg(long)]
    check: Option<PathBuf>,
}

fn main() -> ExitCode {
    let args = Args::parse();
    if let Some(path) = args.check {
        let history = History::load(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let report = check(&history);
        println!("{report}");
        return if report.violations.is_empty() { ExitCode::SUCCESS } else { ExitCode::FAILURE };
    }
    let backends = match args.backend.as_deref() {
        None => vec![Backend::Embedded, Backend::Etcd],
        Some("embedded") => vec![Backend::Embedded],
        Some("etcd") => vec![Backend::Etcd],
        Some(other) => panic!("--backend {other}: expected embedded or etcd"),
    };
    let mut clean = true;
    for backend in backends {
        let mut config = Config::new(backend, args.minutes);
        config.fault_every = args.fault_every;
        let supported = Fault::all(backend);
        if !args.faults.is_empty() {
            config.faults = args.faults.iter().copied().filter(|f| supported.contains(f)).collect();
            assert!(!config.faults.is_empty(), "--faults: none of them applies to {backend:?}: {supported:?}");
        }
        if let Some(seed) = args.seed {
            config.seed = seed;
            config.out_dir = std::env::temp_dir().join(format!("robustness-{seed}"));
        }
        let started = std::time::Instant::now();
        let outcome = run(&config);
        println!("{backend:?} ({:.0} s): {outcome}", started.elapsed().as_secs_f64());
        clean &= outcome.report.violations.is_empty() && outcome.unexpected.is_empty();
    }
    if clean { ExitCode::SUCCESS } else { ExitCode::FAILURE }
}
