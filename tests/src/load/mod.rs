//! Load tests that find limits rather than time one operation: each stage driven on its own at
//! rising offered rates until it collapses ([`stages`]), a clusterloader2-style scenario against
//! any Kubernetes endpoint ([`cl2`]), and a fleet loaded while its processes are killed
//! ([`faults`]). Each prints a table, writes its results as JSON and draws them as SVG
//! ([`plot`]), so a run can be read, compared and checked by a test. The load generator
//! (`loadgen`) runs them from the command line.
//!
//! # Layout
//! - [`stages`]: the open-loop stepper, the capacity rule, the per-stage table.
//! - [`targets`]: the stages it drives, each built as the server builds it (in process) or
//!   reached in a stage process over the network.
//! - [`cl2`]: namespaces, deployments and their pods created, updated, listed, watched and
//!   deleted through a real client at a client-side QPS limit.
//! - [`faults`]: the fault run, a steady load through the local fleet while an etcd member, a
//!   gateway replica and a stage process are killed in turn, checked against etcd.
//! - [`lag`]: revision lag of each kind of read against linearizable reads of storage, under
//!   Lease contention and fast creates (open question 5.2).
//! - [`window`]: the watch cache's hit rate and the storage list rate of restarting informers
//!   across retention, window and object count, beside a model (open question 5.1).
//! - [`plot`]: the SVG figures.
//! - [`profile`]: a server's CPU split by stage, from `perf` samples of its stacks.
//! - [`histogram`]: quantiles of a scraped Prometheus histogram per label group, over a phase.

pub mod cl2;
pub mod faults;
pub mod histogram;
pub mod lag;
pub mod plot;
pub mod profile;
pub mod stages;
pub mod targets;
pub mod window;

use std::time::Duration;

use serde::Serialize;

/// The `q` quantile of sorted `samples`, in milliseconds (0 when there are none): the sample
/// at rank ⌈q·n⌉, as the other load generator phases report it.
pub fn quantile_ms(sorted: &[Duration], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() as f64 * q).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[i].as_secs_f64() * 1000.0
}

/// p50, p90 and p99 of latencies, in milliseconds.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct Quantiles {
    /// Median.
    pub p50_ms: f64,
    /// 90th percentile.
    pub p90_ms: f64,
    /// 99th percentile.
    pub p99_ms: f64,
}

impl Quantiles {
    /// Of `samples`, which it sorts.
    pub fn of(samples: &mut [Duration]) -> Self {
        samples.sort_unstable();
        Quantiles {
            p50_ms: quantile_ms(samples, 0.50),
            p90_ms: quantile_ms(samples, 0.90),
            p99_ms: quantile_ms(samples, 0.99),
        }
    }
}

/// CPU time (user + system) a process has used, from `/proc/<pid>/stat`.
pub fn cpu_time(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command name (which may hold spaces) start after the last ')'.
    let fields: Vec<&str> =
        stat.rsplit_once(')').map(|(_, rest)| rest.split_whitespace().collect()).unwrap_or_default();
    let ticks: u64 = [11, 12].iter().filter_map(|i| fields.get(*i)?.parse::<u64>().ok()).sum();
    // Linux reports in clock ticks of 1/100 s (USER_HZ) on every architecture it runs on here.
    Duration::from_millis(ticks * 10)
}

/// Writes `value` as pretty JSON to `path`, creating its directory.
pub fn write_json(path: &std::path::Path, value: &impl Serialize) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let text = serde_json::to_string_pretty(value).map_err(std::io::Error::other)?;
    std::fs::write(path, text)
}
