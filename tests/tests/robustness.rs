//! The robustness runs CI keeps: a bounded few minutes of random traffic and watches against
//! the real server while failpoints fire, on each backend, then every history and watch stream
//! checked (`tests::robustness`). A failing run writes its history and the minimal failing
//! histories to the directory it names. Longer runs: `cargo run --release -p tests --bin
//! robustness -- --help`.

use std::time::Duration;

use tests::robustness::harness::{Backend, Config, run};

/// Seconds of faults per backend: `ROBUSTNESS_SECONDS`, 60 by default.
fn duration() -> Duration {
    Duration::from_secs(std::env::var("ROBUSTNESS_SECONDS").ok().and_then(|s| s.parse().ok()).unwrap_or(60))
}

fn run_and_check(backend: Backend) {
    let config = Config::new(backend, duration());
    let outcome = run(&config);
    println!("{backend:?}: {outcome}");
    assert!(outcome.faults.len() >= 3, "fewer than three kinds of fault fired: {outcome}");
    assert!(outcome.report.operations > 1_000, "too little traffic was checked: {outcome}");
    assert!(outcome.report.violations.is_empty() && outcome.unexpected.is_empty(), "{outcome}");
}

#[test]
fn embedded_store_keeps_its_guarantees_through_crashes_fsync_faults_compaction_and_cacher_resyncs() {
    run_and_check(Backend::Embedded);
}

#[test]
fn etcd_cluster_keeps_its_guarantees_through_member_and_leader_kills_defrag_and_compaction() {
    run_and_check(Backend::Etcd);
}
