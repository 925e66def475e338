//! The exclusion tree, walked once a second: each axis's judgement is smoothed (it degrades
//! after `breachTicks` of `ofTicks` breaching judgements and recovers after `recoverTicks`
//! clean ones), remembers when its trouble began, and the verdict names the axis whose trouble
//! began first as the root and the others as its consequences.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use serde_json::{Value, json};

use crate::axes::{self, Axis, Baselines, Evidence, Finding, Health, Inputs, STORAGE_UNAVAILABLE, StorageProbe};
use crate::signals::{SeriesKey, Signals};
use crate::tap::names;
use crate::thresholds::Thresholds;

/// The question each node of the tree asks, in the order an operator walks it.
const TREE: [(Axis, &str); 5] = [
    (Axis::Auth, "Are requests refused as unauthenticated (401) or forbidden (403)?"),
    (Axis::Admission, "Do admission webhooks fail or answer slowly?"),
    (Axis::Apf, "Do APF's priority levels reject requests (429) or keep them waiting?"),
    (Axis::Storage, "Is storage slower than its baseline, stalled, or failing?"),
    (Axis::Watch, "Are reads and watches answered 410, or watchers cut off?"),
];

/// Status codes shown as the symptoms clients see.
const SYMPTOMS: [&str; 7] = ["401", "403", "410", "429", "500", "503", "504"];

#[derive(Debug, Default)]
struct AxisState {
    health: Health,
    /// When the current trouble began.
    since: Option<Instant>,
    /// The last `ofTicks` judgements: each breach's onset, or `None` when clean.
    recent: VecDeque<Option<Instant>>,
    clean: u32,
    /// The latest judgement, and the latest that breached while unhealthy.
    current: Finding,
    breaching: Finding,
}

impl AxisState {
    fn judge(&mut self, finding: Finding, at: Instant, t: &Thresholds) {
        let breached = finding.health > Health::Healthy;
        self.recent.push_back(breached.then(|| finding.onset().unwrap_or(at)));
        while self.recent.len() > t.of_ticks {
            self.recent.pop_front();
        }
        self.clean = if breached { 0 } else { self.clean + 1 };
        if breached {
            self.breaching = finding.clone();
        }
        match self.health {
            Health::Healthy if self.recent.iter().flatten().count() >= t.breach_ticks => {
                self.health = if breached { finding.health } else { Health::Degraded };
                self.since = self.recent.iter().flatten().min().copied();
            }
            Health::Healthy => {}
            _ if breached => self.health = finding.health,
            _ if self.clean >= t.recover_ticks => {
                self.health = Health::Healthy;
                self.since = None;
                self.recent.clear();
            }
            _ => {}
        }
        self.current = finding;
    }

    /// What the verdict shows: the breach that made it unhealthy, or the current readings.
    fn evidence(&self) -> &[Evidence] {
        if self.health > Health::Healthy { &self.breaching.evidence } else { &self.current.evidence }
    }
}

#[derive(Debug, Default)]
struct State {
    axes: HashMap<Axis, AxisState>,
    baselines: Baselines,
    unavailable_seen: HashMap<String, u64>,
    verdict: Value,
    summary: String,
}

/// The server's diagnosis: judge every second with [`Diagnosis::tick`], read with
/// [`Diagnosis::verdict`].
pub struct Diagnosis {
    signals: Arc<Signals>,
    thresholds: Thresholds,
    state: Mutex<State>,
}

/// What changed in a tick, for the log.
#[derive(Debug, PartialEq)]
pub struct Change {
    /// The verdict's summary.
    pub summary: String,
    /// Whether every axis is healthy.
    pub healthy: bool,
}

impl Diagnosis {
    /// A diagnosis over `signals`, judged by `thresholds`.
    pub fn new(signals: Arc<Signals>, thresholds: Thresholds) -> Self {
        let diagnosis = Diagnosis { signals, thresholds, state: Mutex::default() };
        diagnosis.tick_at(Instant::now(), diagnosis.signals.now(), &[]);
        diagnosis
    }

    /// The signals it reads.
    pub fn signals(&self) -> &Arc<Signals> {
        &self.signals
    }

    /// Judges every axis now; returns the new verdict's summary when it changed.
    pub fn tick(&self, storage: &[StorageProbe]) -> Option<Change> {
        self.tick_at(Instant::now(), self.signals.now(), storage)
    }

    /// Judges every axis as of second `now` (at `at`).
    pub fn tick_at(&self, at: Instant, now: u64, storage: &[StorageProbe]) -> Option<Change> {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        for probe in storage {
            let seen = state.unavailable_seen.insert(probe.backend.clone(), probe.unavailable_total).unwrap_or(0);
            let failed = probe.unavailable_total.saturating_sub(seen);
            if failed > 0 {
                self.signals
                    .series(&SeriesKey::new(STORAGE_UNAVAILABLE, probe.backend.clone()))
                    .add(self.signals.ms_of(at), failed as f64);
            }
        }
        let t = &self.thresholds;
        let findings = {
            let inputs =
                Inputs { signals: &self.signals, now, at, storage, thresholds: t, baselines: &state.baselines };
            axes::judge(&inputs)
        };
        for (axis, finding) in findings {
            // Baselines learn only from healthy judgements, so a fault never becomes normal.
            if finding.health == Health::Healthy && state.axes.get(&axis).is_none_or(|a| a.health == Health::Healthy) {
                for key in axes::learned(axis, &self.signals) {
                    if let Some(mean) = self.signals.series(&key).window(now, t.window_seconds).mean() {
                        state.baselines.learn(key, mean, t.baseline_half_life_seconds);
                    }
                }
            }
            state.axes.entry(axis).or_default().judge(finding, at, t);
        }
        corroborate(&mut state.axes, at, Duration::from_secs_f64(t.tie_seconds));
        let (verdict, summary, healthy) = self.render(&state, at, now);
        state.verdict = verdict;
        if summary == state.summary {
            return None;
        }
        state.summary = summary.clone();
        Some(Change { summary, healthy })
    }

    /// The latest verdict, as `GET /debug/axes` answers it.
    pub fn verdict(&self) -> Value {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).verdict.clone()
    }

    /// Every axis's health.
    pub fn health(&self) -> Vec<(Axis, Health)> {
        let state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        Axis::ALL.iter().map(|&a| (a, state.axes.get(&a).map_or(Health::Healthy, |s| s.health))).collect()
    }

    fn render(&self, state: &State, at: Instant, now: u64) -> (Value, String, bool) {
        let wall = |i: Instant| -> String {
            let ago = at.saturating_duration_since(i);
            let time = SystemTime::now().checked_sub(ago).unwrap_or(SystemTime::UNIX_EPOCH);
            chrono::DateTime::<chrono::Utc>::from(time).to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
        };
        let axis = |a: Axis| state.axes.get(&a).expect("every axis is judged");
        let mut unhealthy: Vec<(Axis, Instant)> = Axis::ALL
            .iter()
            .filter(|&&a| axis(a).health > Health::Healthy)
            .map(|&a| (a, axis(a).since.unwrap_or(at)))
            .collect();
        unhealthy.sort_by_key(|&(a, since)| (since, a));
        // Onsets within the tie window are simultaneous: the lowest layer among them is the root.
        let tie = Duration::from_secs_f64(self.thresholds.tie_seconds);
        let root = unhealthy.first().map(|&(_, earliest)| {
            unhealthy.iter().filter(|(_, since)| *since <= earliest + tie).map(|&(a, s)| (a, s)).min_by_key(|&(a, _)| a)
        });
        let root = root.flatten();
        let consequences: Vec<Value> = unhealthy
            .iter()
            .filter(|(a, _)| Some(*a) != root.map(|r| r.0))
            .map(|&(a, since)| {
                let after = root.map_or(0.0, |(_, r)| since.saturating_duration_since(r).as_secs_f64());
                json!({"axis": a.name(), "health": axis(a).health, "since": wall(since),
                    "secondsAfterRoot": (after * 10.0).round() / 10.0})
            })
            .collect();
        let status = unhealthy.iter().map(|&(a, _)| axis(a).health).max().unwrap_or_default();
        let summary = match root {
            None => "healthy: every axis is within its thresholds".to_string(),
            Some((r, since)) => {
                let first = axis(r).evidence().first().map(|e| e.detail.clone()).unwrap_or_default();
                let mut s = format!("{} {} since {} ({first})", r.name(), health_word(axis(r).health), wall(since));
                if !consequences.is_empty() {
                    let names: Vec<&str> = unhealthy.iter().filter(|(a, _)| *a != r).map(|(a, _)| a.name()).collect();
                    s.push_str(&format!("; as a consequence: {}", names.join(", ")));
                }
                s
            }
        };
        let path: Vec<Value> = TREE
            .iter()
            .map(|&(a, question)| {
                let s = axis(a);
                json!({
                    "axis": a.name(),
                    "question": question,
                    "answer": if s.health > Health::Healthy { "yes" } else { "no" },
                    "health": s.health,
                    "since": s.since.map(wall),
                    "evidence": s.evidence(),
                })
            })
            .collect();
        let axes: serde_json::Map<String, Value> = Axis::ALL
            .iter()
            .map(|&a| (a.name().to_string(), json!({"health": axis(a).health, "since": axis(a).since.map(wall)})))
            .collect();
        let window = self.thresholds.window_seconds;
        let symptoms: serde_json::Map<String, Value> = SYMPTOMS
            .iter()
            .map(|code| {
                let w = self.signals.series(&SeriesKey::new(names::REQUESTS, *code)).window(now, window);
                (code.to_string(), json!((w.count / window as f64 * 100.0).round() / 100.0))
            })
            .collect();
        let verdict = json!({
            "status": status,
            "root": root.map(|(a, _)| a.name()),
            "since": root.map(|(_, s)| wall(s)),
            "consequences": consequences,
            "summary": summary,
            "axes": axes,
            "path": path,
            "symptomsPerSecond": symptoms,
            "evaluatedAt": wall(at),
            "thresholds": self.thresholds,
        });
        (verdict, summary, root.is_none())
    }
}

/// An axis that breached only once so far is unhealthy at once when another axis is unhealthy
/// and its own trouble began earlier (or within the tie window): the earlier trouble explains
/// the later one, and waiting for its second breach would name the consequence as the root for
/// a moment.
fn corroborate(axes: &mut HashMap<Axis, AxisState>, at: Instant, tie: Duration) {
    let Some(earliest) = axes.values().filter(|a| a.health > Health::Healthy).filter_map(|a| a.since).min() else {
        return;
    };
    for state in axes.values_mut() {
        let breaching = state.current.health > Health::Healthy;
        if state.health == Health::Healthy && breaching {
            let onset = state.current.onset().unwrap_or(at);
            if onset <= earliest + tie {
                state.health = state.current.health;
                state.since = Some(onset);
            }
        }
    }
}

fn health_word(h: Health) -> &'static str {
    match h {
        Health::Healthy => "healthy",
        Health::Degraded => "degraded",
        Health::Failing => "failing",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A diagnosis whose clock the test moves: second `n` is `origin + n`.
    struct Clock {
        d: Diagnosis,
    }

    impl Clock {
        fn new() -> Self {
            Clock { d: Diagnosis::new(Arc::new(Signals::default()), Thresholds::default()) }
        }

        fn series(&self, metric: &'static str, label: &str) -> Arc<crate::signals::Series> {
            self.d.signals.series(&SeriesKey::new(metric, label))
        }

        fn tick(&self, second: u64, storage: &[StorageProbe]) -> Value {
            let at = self.d.signals.instant_of_ms(second * 1000 + 999);
            self.d.tick_at(at, second, storage);
            self.d.verdict()
        }
    }

    fn stalled(secs: f64, unavailable: u64) -> Vec<StorageProbe> {
        vec![StorageProbe {
            backend: "etcd3 https://e:2379".into(),
            oldest_in_flight: (secs > 0.0).then(|| Duration::from_secs_f64(secs)),
            unavailable_total: unavailable,
        }]
    }

    #[test]
    fn a_quiet_server_is_healthy_and_says_so() {
        let c = Clock::new();
        let v = c.tick(1, &[]);
        assert_eq!(v["status"], "healthy");
        assert_eq!(v["root"], Value::Null);
        assert_eq!(v["path"].as_array().unwrap().len(), 5);
        assert!(v["path"].as_array().unwrap().iter().all(|n| n["answer"] == "no"));
    }

    #[test]
    fn one_breaching_judgement_is_not_enough_and_two_of_three_are() {
        let c = Clock::new();
        c.series(names::AUTHENTICATION, "error").add(10000, 20.0);
        c.series(names::AUTHENTICATION, "success").add(10000, 1.0);
        assert_eq!(c.tick(10, &[])["status"], "healthy", "one judgement breached");
        let v = c.tick(11, &[]);
        assert_eq!(v["status"], "failing", "{v:#}");
        assert_eq!(v["root"], "auth");
        let node = &v["path"][0];
        assert_eq!(node["answer"], "yes");
        assert_eq!(node["evidence"][0]["signal"], format!("{}{{result=\"error\"}}", names::AUTHENTICATION));
        assert_eq!(node["evidence"][0]["value"], 4.0, "20 in a 5 s window");
        // The window slides past the failures, then five clean judgements recover the axis.
        let mut recovered = None;
        for s in 12..30 {
            if c.tick(s, &[])["status"] == "healthy" {
                recovered = Some(s);
                break;
            }
        }
        assert_eq!(recovered, Some(19), "the window clears at 15, five clean judgements later it is healthy");
    }

    #[test]
    fn latency_is_judged_against_a_learned_baseline_with_a_floor() {
        let c = Clock::new();
        let writes = c.series(names::STORAGE_LATENCY, "write");
        for s in 1..40 {
            writes.sample(s * 1000, 0.004);
            assert_eq!(c.tick(s, &[])["status"], "healthy");
        }
        // 150 ms is far above a 4 ms baseline, but under the 200 ms floor: not slow.
        for s in 40..45 {
            writes.sample(s * 1000, 0.15);
            assert_eq!(c.tick(s, &[])["status"], "healthy", "{:#}", c.d.verdict());
        }
        for s in 45..60 {
            writes.sample(s * 1000, 1.0);
            c.tick(s, &[]);
        }
        let v = c.d.verdict();
        assert_eq!(v["root"], "storage", "{v:#}");
        let e = &v["path"][3]["evidence"][0];
        assert_eq!(e["signal"], format!("{}{{operation class=\"write\"}}", names::STORAGE_LATENCY));
        assert!(e["baseline"].as_f64().unwrap() < 0.05, "the baseline did not learn the fault: {e}");
    }

    #[test]
    fn the_axis_whose_trouble_began_first_is_the_root() {
        let c = Clock::new();
        // APF starts rejecting at second 20; a storage request has been stalled since 18.5.
        for s in 20..24 {
            c.series(names::APF_REJECTED, "workload-low").add(s * 1000, 10.0);
            let age = s as f64 + 1.0 - 18.5;
            c.tick(s, &stalled(age, 0));
        }
        let v = c.d.verdict();
        assert_eq!(v["root"], "storage", "{v:#}");
        assert_eq!(v["consequences"][0]["axis"], "apf");
        assert!(v["consequences"][0]["secondsAfterRoot"].as_f64().unwrap() >= 1.0, "{v:#}");
        assert!(v["summary"].as_str().unwrap().contains("as a consequence: apf"), "{}", v["summary"]);
    }

    #[test]
    fn an_earlier_breach_is_the_root_as_soon_as_its_consequence_is_confirmed() {
        let c = Clock::new();
        // APF rejects from 40.7; storage's stalled request began at 40.5 but crosses the stall
        // threshold only at 41.5: when APF is confirmed (41), storage has breached once.
        c.series(names::APF_REJECTED, "tiny").add(40_700, 10.0);
        assert_eq!(c.tick(40, &stalled(0.499, 0))["status"], "healthy");
        c.series(names::APF_REJECTED, "tiny").add(41_000, 10.0);
        let v = c.tick(41, &stalled(1.499, 0));
        assert_eq!(v["root"], "storage", "{v:#}");
        assert_eq!(v["consequences"][0]["axis"], "apf");
        assert_eq!(v["consequences"][0]["secondsAfterRoot"], 0.2);

        // Seats fill a moment before the requests holding them reach storage: APF's first
        // rejection can precede the stalled request by a millisecond. Simultaneous: storage.
        let c = Clock::new();
        c.series(names::APF_REJECTED, "tiny").add(50_200, 10.0);
        c.tick(50, &stalled(0.0, 0));
        c.series(names::APF_REJECTED, "tiny").add(51_000, 10.0);
        let v = c.tick(51, &stalled(1.798, 0));
        assert_eq!(v["root"], "storage", "{v:#}");
    }

    #[test]
    fn onsets_within_the_tie_window_name_the_lower_layer() {
        let c = Clock::new();
        for s in 30..33 {
            c.series(names::APF_REJECTED, "workload-low").add(s * 1000, 10.0);
            c.series(names::WEBHOOK_FAILURES, "slow.example.com").add(s * 1000, 10.0);
            c.tick(s, &[]);
        }
        let v = c.d.verdict();
        assert_eq!(v["root"], "admission", "{v:#}");
        assert_eq!(v["status"], "failing");
    }

    #[test]
    fn compacted_reads_are_the_watch_axis_not_a_storage_failure() {
        let c = Clock::new();
        for s in 5..8 {
            c.series(names::STORAGE_ERRORS, "list").add(s * 1000, 10.0);
            c.series(names::REQUESTS, "410").add(s * 1000, 10.0);
            c.tick(s, &stalled(0.0, 0));
        }
        let v = c.d.verdict();
        assert_eq!(v["root"], "watch", "{v:#}");
        assert_eq!(v["axes"]["storage"]["health"], "healthy");
        assert_eq!(v["symptomsPerSecond"]["410"], 6.0);
    }

    #[test]
    fn a_window_too_short_says_how_long_it_covers() {
        let c = Clock::new();
        let unix = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs_f64();
        c.series(names::WINDOW_OLDEST, "pods").set(1_000, (unix - 120.0).floor());
        c.series(names::WINDOW_EVENTS, "pods").set(1_000, 100.0);
        for s in 1..4 {
            c.series(names::WATCH_TOO_OLD, "pods").add(s * 1000, 5.0);
            c.tick(s, &[]);
        }
        let v = c.d.verdict();
        assert_eq!(v["root"], "watch", "{v:#}");
        let detail = v["path"][4]["evidence"][0]["detail"].as_str().unwrap();
        assert!(detail.contains("its window holds 100 events, the oldest 12"), "{detail}");
    }

    #[test]
    fn requests_failing_as_unavailable_make_storage_fail_naming_the_backend() {
        let c = Clock::new();
        c.tick(1, &stalled(0.0, 7));
        c.tick(2, &stalled(0.0, 20));
        let v = c.tick(3, &stalled(0.0, 40));
        assert_eq!((v["root"].as_str(), v["status"].as_str()), (Some("storage"), Some("failing")), "{v:#}");
        assert!(v["summary"].as_str().unwrap().contains("etcd3 https://e:2379"), "{}", v["summary"]);
    }
}
