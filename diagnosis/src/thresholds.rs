//! What counts as a breach, and how quickly a verdict moves: every number the axes are judged
//! by, with kube-scale defaults, overridable from a JSON file (`--diagnosis-config`). The
//! defaults are chosen so a healthy server under load stays healthy (a webhook answering in
//! tens of milliseconds, storage in a few, the occasional denied request) and the faults an
//! operator would page for show within seconds; docs/DIAGNOSIS.md explains each.

use serde::{Deserialize, Serialize};

/// Every threshold. Rates are per second over the window; latencies in seconds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct Thresholds {
    /// Seconds of signals each judgement reads.
    pub window_seconds: u64,
    /// An axis degrades when this many of the last `ofTicks` judgements (one a second)
    /// breached...
    pub breach_ticks: usize,
    /// ... out of this many.
    pub of_ticks: usize,
    /// An unhealthy axis is healthy again after this many clean judgements in a row.
    pub recover_ticks: u32,
    /// Axes whose trouble began within this many seconds of each other are judged
    /// simultaneous: the lower layer (storage, admission, watch, APF, auth) is the root.
    pub tie_seconds: f64,
    /// Failures per second below which an axis's errors are noise (401s, 403s, webhook call
    /// errors, 429s, 410s, cut-off watchers, storage errors).
    pub error_rate: f64,
    /// The share of authentication attempts or authorization decisions that must fail, beside
    /// `errorRate`, for the auth axis to degrade...
    pub auth_ratio: f64,
    /// ... and to be failing.
    pub auth_failing_ratio: f64,
    /// A webhook is slow when its mean latency is above this and `latencyFactor` times its
    /// baseline.
    pub webhook_slow_seconds: f64,
    /// Storage is slow when its mean read or write latency is above this and `latencyFactor`
    /// times its baseline.
    pub storage_slow_seconds: f64,
    /// How far above its learned baseline a latency must be to breach.
    pub latency_factor: f64,
    /// Baselines follow healthy latencies with this half-life, in seconds.
    pub baseline_half_life_seconds: f64,
    /// Storage is stalled when a request has waited this long unanswered...
    pub storage_stall_seconds: f64,
    /// ... and failing when one has waited this long.
    pub storage_failing_stall_seconds: f64,
    /// A priority level is congested when requests wait this long in its queues on average.
    pub apf_wait_seconds: f64,
}

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds {
            window_seconds: 5,
            breach_ticks: 2,
            of_ticks: 3,
            recover_ticks: 5,
            tie_seconds: 1.0,
            error_rate: 0.5,
            auth_ratio: 0.1,
            auth_failing_ratio: 0.5,
            webhook_slow_seconds: 1.0,
            storage_slow_seconds: 0.2,
            latency_factor: 4.0,
            baseline_half_life_seconds: 60.0,
            storage_stall_seconds: 1.0,
            storage_failing_stall_seconds: 10.0,
            apf_wait_seconds: 1.0,
        }
    }
}

impl Thresholds {
    /// Reads thresholds from a JSON file; fields it leaves out keep their defaults.
    pub fn load(path: &std::path::Path) -> Result<Self, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let t: Thresholds = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        t.check().map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(t)
    }

    /// Whether the thresholds can work together.
    pub fn check(&self) -> Result<(), String> {
        if self.window_seconds == 0 || self.window_seconds > crate::signals::KEPT_SECONDS {
            return Err(format!("windowSeconds must be 1 to {}", crate::signals::KEPT_SECONDS));
        }
        if self.breach_ticks == 0 || self.breach_ticks > self.of_ticks {
            return Err("breachTicks must be 1 to ofTicks".into());
        }
        if self.recover_ticks == 0 {
            return Err("recoverTicks must be at least 1".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_overrides_what_it_names_and_nothing_else() {
        let dir = std::env::temp_dir().join(format!("thresholds-{}", std::process::id()));
        std::fs::write(&dir, r#"{"webhookSlowSeconds": 0.25}"#).unwrap();
        let t = Thresholds::load(&dir).unwrap();
        assert_eq!(t.webhook_slow_seconds, 0.25);
        assert_eq!(Thresholds { webhook_slow_seconds: 1.0, ..t }, Thresholds::default());
        std::fs::write(&dir, r#"{"webhookSlow": 1}"#).unwrap();
        assert!(Thresholds::load(&dir).unwrap_err().contains("unknown field `webhookSlow`"));
        std::fs::write(&dir, r#"{"breachTicks": 4}"#).unwrap();
        assert!(Thresholds::load(&dir).unwrap_err().contains("breachTicks"));
        std::fs::remove_file(&dir).unwrap();
    }
}
