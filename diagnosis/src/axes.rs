//! One judgement of each axis from its window of signals: which signals breach their
//! thresholds, by how much, and since when the trouble they show began (`onset`: a slow
//! request's start, the first second a failure was counted), which is what orders the axes
//! when more than one is unhealthy.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::signals::{SeriesKey, Signals, Window};
use crate::tap::names;
use crate::thresholds::Thresholds;

/// The five axes, in the order that breaks ties between simultaneous onsets: a lower layer's
/// trouble shows in the layers above it (slow storage fills APF's seats; a slow webhook too),
/// rarely the other way round.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Axis {
    /// The storage backend: etcd or the embedded store.
    Storage,
    /// Admission: webhooks above all.
    Admission,
    /// The watch cache and its watchers.
    Watch,
    /// API Priority and Fairness.
    Apf,
    /// Authentication and authorization.
    Auth,
}

impl Axis {
    /// Every axis, in tie-breaking order.
    pub const ALL: [Axis; 5] = [Axis::Storage, Axis::Admission, Axis::Watch, Axis::Apf, Axis::Auth];

    /// The axis's name, as the metric label and the JSON spell it.
    pub fn name(self) -> &'static str {
        match self {
            Axis::Storage => "storage",
            Axis::Admission => "admission",
            Axis::Watch => "watch",
            Axis::Apf => "apf",
            Axis::Auth => "auth",
        }
    }
}

/// An axis's health.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Health {
    /// Every signal within its threshold.
    #[default]
    Healthy,
    /// Slower or failing in part.
    Degraded,
    /// Failing requests outright.
    Failing,
}

impl Health {
    /// The value `apiserver_axis_health` exports: 0, 1 or 2.
    pub fn gauge(self) -> f64 {
        match self {
            Health::Healthy => 0.0,
            Health::Degraded => 1.0,
            Health::Failing => 2.0,
        }
    }
}

/// One signal's reading.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Evidence {
    /// The metric (with the label read), or what was observed when it is not a metric.
    pub signal: String,
    /// What was read.
    pub value: f64,
    /// What `value` is measured in.
    pub unit: &'static str,
    /// The threshold it is judged against.
    pub threshold: f64,
    /// The learned baseline behind the threshold, for latencies.
    pub baseline: Option<f64>,
    /// What the reading says.
    pub health: Health,
    /// When the trouble it shows began.
    #[serde(skip)]
    pub onset: Option<Instant>,
    /// The reading in words.
    pub detail: String,
}

/// One judgement of an axis.
#[derive(Clone, Debug, Default)]
pub struct Finding {
    /// The worst health among the evidence.
    pub health: Health,
    /// Every signal read, breaches first.
    pub evidence: Vec<Evidence>,
}

impl Finding {
    fn push(&mut self, e: Evidence) {
        self.health = self.health.max(e.health);
        self.evidence.push(e);
    }

    /// The earliest onset among the breaching evidence.
    pub fn onset(&self) -> Option<Instant> {
        self.evidence.iter().filter(|e| e.health > Health::Healthy).filter_map(|e| e.onset).min()
    }

    fn sorted(mut self) -> Self {
        self.evidence.sort_by_key(|e| std::cmp::Reverse(e.health));
        self
    }
}

/// A storage backend's meters, polled once a judgement.
#[derive(Clone, Debug)]
pub struct StorageProbe {
    /// The backend, as errors name it.
    pub backend: String,
    /// How long its oldest unanswered request has waited.
    pub oldest_in_flight: Option<Duration>,
    /// Requests it failed as unavailable so far (not those refused as compacted, which are the
    /// watch axis's 410s).
    pub unavailable_total: u64,
}

/// The series the storage probes' unavailable requests are counted in, by backend (not an
/// exported metric: `etcd_request_errors_total` counts compacted reads too).
pub const STORAGE_UNAVAILABLE: &str = "storage requests failed as unavailable";

/// Learned latency baselines, by series.
#[derive(Debug, Default)]
pub struct Baselines(HashMap<SeriesKey, f64>);

impl Baselines {
    fn get(&self, key: &SeriesKey) -> Option<f64> {
        self.0.get(key).copied()
    }

    /// Moves `key`'s baseline towards `mean`, by one tick of a `half_life` in seconds.
    pub fn learn(&mut self, key: SeriesKey, mean: f64, half_life: f64) {
        let alpha = 1.0 - 0.5f64.powf(1.0 / half_life.max(1.0));
        self.0.entry(key).and_modify(|b| *b += alpha * (mean - *b)).or_insert(mean);
    }
}

/// What one judgement reads.
pub struct Inputs<'a> {
    /// The signals.
    pub signals: &'a Signals,
    /// The second judged (the window ends with it).
    pub now: u64,
    /// When the judgement is made.
    pub at: Instant,
    /// The storage backends' meters.
    pub storage: &'a [StorageProbe],
    /// The thresholds.
    pub thresholds: &'a Thresholds,
    /// The latency baselines.
    pub baselines: &'a Baselines,
}

impl Inputs<'_> {
    fn window(&self, key: &SeriesKey) -> Window {
        self.signals.series(key).window(self.now, self.thresholds.window_seconds)
    }

    fn rate(&self, w: &Window) -> f64 {
        w.count / self.thresholds.window_seconds as f64
    }

    fn first(&self, w: &Window) -> Option<Instant> {
        w.first.map(|ms| self.signals.instant_of_ms(ms))
    }

    /// When the slowest sample of `w` began, at the latest.
    fn slowest_began(&self, w: &Window) -> Option<Instant> {
        self.at.checked_sub(Duration::from_secs_f64(w.max.max(0.0)))
    }

    /// A count per second judged against `errorRate`.
    fn errors(&self, key: &SeriesKey, health: Health, what: &str) -> Option<Evidence> {
        let w = self.window(key);
        if w.count == 0.0 {
            return None;
        }
        let rate = self.rate(&w);
        let threshold = self.thresholds.error_rate;
        Some(Evidence {
            signal: signal(key),
            value: round(rate),
            unit: "per second",
            threshold,
            baseline: None,
            health: if rate >= threshold { health } else { Health::Healthy },
            onset: self.first(&w),
            detail: format!("{} {what} in the last {} s", w.count, self.thresholds.window_seconds),
        })
    }

    /// [`Inputs::errors`] for every label of `metric`, each described by `what(label)`.
    fn errors_by_label(&self, metric: &'static str, health: Health, what: impl Fn(&str) -> String) -> Vec<Evidence> {
        let labels = self.signals.of(metric).into_iter().map(|(label, _)| label);
        labels.filter_map(|l| self.errors(&SeriesKey::new(metric, l.clone()), health, &what(&l))).collect()
    }

    /// A mean latency judged against `floor` and `latencyFactor` times its baseline.
    fn latency(&self, key: &SeriesKey, floor: f64, what: &str) -> Option<Evidence> {
        let w = self.window(key);
        let mean = w.mean()?;
        let baseline = self.baselines.get(key);
        let threshold = baseline.map_or(floor, |b| floor.max(b * self.thresholds.latency_factor));
        Some(Evidence {
            signal: signal(key),
            value: round(mean),
            unit: "seconds (mean)",
            threshold: round(threshold),
            baseline: baseline.map(round),
            health: if mean >= threshold { Health::Degraded } else { Health::Healthy },
            onset: self.slowest_began(&w),
            detail: format!("{what}: mean {} over {} samples, slowest {}", secs(mean), w.count, secs(w.max)),
        })
    }
}

/// A series as Prometheus would name it.
fn signal(key: &SeriesKey) -> String {
    let label = match key.metric {
        names::AUTHENTICATION => "result",
        names::AUTHORIZATION => "decision",
        names::WEBHOOK_LATENCY | names::WEBHOOK_FAILURES => "name",
        names::APF_REJECTED | names::APF_WAIT => "priority_level",
        names::STORAGE_LATENCY => "operation class",
        names::STORAGE_ERRORS => "operation",
        names::TERMINATED_WATCHERS | names::WATCH_TOO_OLD => "resource",
        _ => "code",
    };
    format!("{}{{{label}=\"{}\"}}", key.metric, key.label)
}

fn round(v: f64) -> f64 {
    (v * 1e6).round() / 1e6
}

fn secs(v: f64) -> String {
    if v < 1.0 { format!("{:.1} ms", v * 1000.0) } else { format!("{v:.2} s") }
}

/// Judges every axis.
pub fn judge(inputs: &Inputs<'_>) -> HashMap<Axis, Finding> {
    Axis::ALL
        .iter()
        .map(|&axis| {
            let finding = match axis {
                Axis::Storage => storage(inputs),
                Axis::Admission => admission(inputs),
                Axis::Watch => watch(inputs),
                Axis::Apf => apf(inputs),
                Axis::Auth => auth(inputs),
            };
            (axis, finding.sorted())
        })
        .collect()
}

/// The latency series a healthy axis teaches its baseline.
pub fn learned(axis: Axis, signals: &Signals) -> Vec<SeriesKey> {
    let metric = match axis {
        Axis::Storage => names::STORAGE_LATENCY,
        Axis::Admission => names::WEBHOOK_LATENCY,
        _ => return Vec::new(),
    };
    signals.of(metric).into_iter().map(|(label, _)| SeriesKey::new(metric, label)).collect()
}

fn auth(i: &Inputs<'_>) -> Finding {
    let mut f = Finding::default();
    for (metric, failed, what) in [
        (names::AUTHENTICATION, "error", "authentication attempts failed (401)"),
        (names::AUTHORIZATION, "denied", "requests denied by authorization (403)"),
    ] {
        let key = SeriesKey::new(metric, failed);
        let Some(mut e) = i.errors(&key, Health::Degraded, what) else { continue };
        let all = i.signals.total(metric, i.now, i.thresholds.window_seconds).count;
        let ratio = i.window(&key).count / all.max(1.0);
        e.detail = format!("{} ({:.0}% of {all})", e.detail, ratio * 100.0);
        e.health = match () {
            _ if e.health == Health::Healthy || ratio < i.thresholds.auth_ratio => Health::Healthy,
            _ if ratio >= i.thresholds.auth_failing_ratio => Health::Failing,
            _ => Health::Degraded,
        };
        f.push(e);
    }
    f
}

fn admission(i: &Inputs<'_>) -> Finding {
    let mut f = Finding::default();
    for e in i.errors_by_label(names::WEBHOOK_FAILURES, Health::Failing, |n| format!("calls to webhook \"{n}\" failed"))
    {
        f.push(e);
    }
    for (name, _) in i.signals.of(names::WEBHOOK_LATENCY) {
        let what = format!("webhook \"{name}\"");
        if let Some(e) =
            i.latency(&SeriesKey::new(names::WEBHOOK_LATENCY, name), i.thresholds.webhook_slow_seconds, &what)
        {
            f.push(e);
        }
    }
    f
}

fn apf(i: &Inputs<'_>) -> Finding {
    let mut f = Finding::default();
    let rejected = |l: &str| format!("requests of priority level \"{l}\" rejected (429)");
    for e in i.errors_by_label(names::APF_REJECTED, Health::Degraded, rejected) {
        f.push(e);
    }
    for (level, _) in i.signals.of(names::APF_WAIT) {
        let key = SeriesKey::new(names::APF_WAIT, level.clone());
        let w = i.window(&key);
        let Some(mean) = w.mean() else { continue };
        let threshold = i.thresholds.apf_wait_seconds;
        let queued: f64 = i
            .signals
            .of(names::APF_IN_QUEUE)
            .iter()
            .filter(|(l, _)| l.split('/').next() == Some(level.as_str()))
            .map(|(_, s)| s.last())
            .sum();
        f.push(Evidence {
            signal: signal(&key),
            value: round(mean),
            unit: "seconds (mean)",
            threshold,
            baseline: None,
            health: if mean >= threshold { Health::Degraded } else { Health::Healthy },
            onset: i.slowest_began(&w),
            detail: format!(
                "requests of priority level \"{level}\" waited {} on average ({} dispatched), {queued} in its queues now",
                secs(mean),
                w.count
            ),
        });
    }
    f
}

fn storage(i: &Inputs<'_>) -> Finding {
    let mut f = Finding::default();
    for probe in i.storage {
        let Some(age) = probe.oldest_in_flight else { continue };
        let age = age.as_secs_f64();
        let t = i.thresholds;
        let health = match () {
            _ if age >= t.storage_failing_stall_seconds => Health::Failing,
            _ if age >= t.storage_stall_seconds => Health::Degraded,
            _ => Health::Healthy,
        };
        if health == Health::Healthy {
            continue;
        }
        f.push(Evidence {
            signal: format!("oldest unanswered request to {}", probe.backend),
            value: round(age),
            unit: "seconds",
            threshold: t.storage_stall_seconds,
            baseline: None,
            health,
            onset: i.at.checked_sub(Duration::from_secs_f64(age)),
            detail: format!("a request to {} has waited {} unanswered", probe.backend, secs(age)),
        });
    }
    for (backend, _) in i.signals.of(STORAGE_UNAVAILABLE) {
        let what = format!("requests to {backend} failed: unavailable");
        if let Some(mut e) = i.errors(&SeriesKey::new(STORAGE_UNAVAILABLE, backend), Health::Failing, &what) {
            e.signal = what;
            f.push(e);
        }
    }
    // Context only: kube's error count includes reads refused as compacted, a watch-axis 410.
    for e in
        i.errors_by_label(names::STORAGE_ERRORS, Health::Healthy, |op| format!("{op} requests answered with an error"))
    {
        f.push(e);
    }
    for class in ["write", "read"] {
        let what = format!("storage {class}s");
        if let Some(e) =
            i.latency(&SeriesKey::new(names::STORAGE_LATENCY, class), i.thresholds.storage_slow_seconds, &what)
        {
            f.push(e);
        }
    }
    f
}

fn watch(i: &Inputs<'_>) -> Finding {
    let mut f = Finding::default();
    for (resource, _) in i.signals.of(names::WATCH_TOO_OLD) {
        let what = format!("watches of {resource} refused 410: older than the watch cache's window");
        let key = SeriesKey::new(names::WATCH_TOO_OLD, resource.clone());
        if let Some(mut e) = i.errors(&key, Health::Degraded, &what) {
            // What the window holds now: how long a watcher of it may be away and resume.
            let oldest = i.signals.series(&SeriesKey::new(names::WINDOW_OLDEST, resource.clone())).last();
            let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
            let age = (now.as_secs_f64() - oldest).max(0.0);
            let events = i.signals.series(&SeriesKey::new(names::WINDOW_EVENTS, resource)).last();
            e.detail = format!("{}; its window holds {events} events, the oldest {} old", e.detail, secs(age));
            f.push(e);
        }
    }
    let what = "requests answered 410: resourceVersion or continue token compacted";
    if let Some(e) = i.errors(&SeriesKey::new(names::REQUESTS, "410"), Health::Degraded, what) {
        f.push(e);
    }
    let cut = |r: &str| format!("watchers of {r} cut off (too slow, or their storage watch ended)");
    for e in i.errors_by_label(names::TERMINATED_WATCHERS, Health::Degraded, cut) {
        f.push(e);
    }
    f
}
