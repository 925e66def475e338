//! The shared counters of one stage: how much work waits, how much is being done, how fast and
//! how slowly it goes.
//!
//! Every field is atomic so the admin endpoint and Prometheus read them without messaging the
//! (possibly saturated) actor. Depth is kept as two gauges moved where the work moves, queued
//! (admitted, not yet opened by the actor) and in progress (opened, reply not yet sent), beside
//! monotonic counters of the same transitions, because a gauge read between two scrapes misses
//! the spikes a counter pair still shows. The Prometheus gauges are copied from the atomics by
//! [`StageMeters::publish_gauges`] (the server does it every second) rather than on every
//! transition: a message makes four transitions, and every stage's meters are shared by every
//! thread that calls it.

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::metrics::{
    STAGE_CANCELLED_TOTAL, STAGE_COMPLETED_TOTAL, STAGE_ERRORS_TOTAL, STAGE_EXPIRED_TOTAL, STAGE_IN_PROGRESS,
    STAGE_LATENCY_SECONDS, STAGE_MAILBOX_CAPACITY, STAGE_MAILBOX_DEPTH, STAGE_MAILBOX_DEQUEUED_TOTAL,
    STAGE_MAILBOX_ENQUEUED_TOTAL, STAGE_MAILBOX_QUEUED, STAGE_REFUSED_TOTAL,
};

/// Log2 latency buckets in microseconds: bucket `i` holds samples in `[2^i, 2^(i+1))` µs.
const BUCKETS: usize = 36;

/// What a stage does when its mailbox is full.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WhenFull {
    /// Wait for a slot at most this long, then refuse the request (429 naming the stage).
    Shed {
        /// The longest wait for a slot.
        wait: Duration,
    },
    /// Wait for a slot until the request's deadline; never refuse. For stages in front of flow
    /// control, which must not turn requests away before flow control has classified them.
    Wait,
    /// No mailbox: callers do the work on their own tasks, reading shared state (the cache
    /// readers). Depth is the calls in flight.
    NoMailbox,
}

/// Shown by the admin endpoint as `{"policy": "shed", "wait_ms": 2000}`, `{"policy": "wait"}`
/// or `{"policy": "none"}`.
impl serde::Serialize for WhenFull {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(None)?;
        match self {
            WhenFull::Shed { wait } => {
                m.serialize_entry("policy", "shed")?;
                m.serialize_entry("wait_ms", &(wait.as_millis() as u64))?;
            }
            WhenFull::Wait => m.serialize_entry("policy", "wait")?,
            WhenFull::NoMailbox => m.serialize_entry("policy", "none")?,
        }
        m.end()
    }
}

/// Shared counters of one stage's mailbox.
#[derive(Debug)]
pub struct StageMeters {
    /// Stage name (`authentication`, `cacher`, ...).
    pub stage: String,
    /// Resource for per-resource actors (cachers), `""` otherwise.
    pub resource: String,
    /// Mailbox capacity: the most messages queued and in progress together.
    pub capacity: usize,
    /// What happens to a request that finds the mailbox full.
    pub when_full: WhenFull,
    /// The arbiter (thread) the actor runs on, so an operator sees which stages share one.
    pub arbiter: String,
    queued: AtomicI64,
    in_progress: AtomicI64,
    enqueued: AtomicU64,
    dequeued: AtomicU64,
    completed: AtomicU64,
    errors: AtomicU64,
    refused: AtomicU64,
    expired: AtomicU64,
    cancelled: AtomicU64,
    latency_us: [AtomicU64; BUCKETS],
    rate_window_start: AtomicU64,
    rate_window_count: AtomicU64,
    last_rate: AtomicU64,
    started: Instant,
    prom: PromMeters,
}

/// Prometheus handles, created once so the hot path does no registry lookups.
#[derive(Debug)]
struct PromMeters {
    enqueued: metrics::Counter,
    dequeued: metrics::Counter,
    completed: metrics::Counter,
    errors: metrics::Counter,
    refused: metrics::Counter,
    expired: metrics::Counter,
    cancelled: metrics::Counter,
    queued: metrics::Gauge,
    in_progress: metrics::Gauge,
    depth: metrics::Gauge,
    latency: metrics::Histogram,
}

/// A point-in-time copy of [`StageMeters`], as the admin endpoint reports it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct MeterSnapshot {
    /// Stage name.
    pub stage: String,
    /// Resource, for cachers.
    pub resource: String,
    /// The arbiter (thread) the actor runs on.
    pub arbiter: String,
    /// What a request finding the mailbox full does.
    pub when_full: WhenFull,
    /// Messages queued plus in progress: the work the mailbox bound applies to.
    pub mailbox_depth: u64,
    /// Messages waiting to be opened by the actor.
    pub queued: u64,
    /// Messages opened whose reply has not been sent yet.
    pub in_progress: u64,
    /// Mailbox capacity.
    pub mailbox_capacity: usize,
    /// Messages enqueued since start.
    pub enqueued: u64,
    /// Messages the actor opened since start.
    pub dequeued: u64,
    /// Messages answered (or given up) since start.
    pub completed: u64,
    /// Replies that were errors, plus requests refused for a full mailbox.
    pub errors: u64,
    /// Requests refused because the mailbox stayed full.
    pub refused: u64,
    /// Messages dropped because their deadline passed before or while they were handled.
    pub expired: u64,
    /// Messages whose caller went away while they were handled; their work was dropped.
    pub cancelled: u64,
    /// Messages handled per second over the last full second.
    pub throughput_per_sec: u64,
    /// Median time from enqueue to reply, in milliseconds.
    pub latency_p50_ms: f64,
    /// 99th percentile time from enqueue to reply, in milliseconds.
    pub latency_p99_ms: f64,
}

/// How a message's work ended, for the meters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Answered with a success.
    Succeeded,
    /// Answered with an error.
    Failed,
    /// Dropped: its deadline passed.
    Expired,
    /// Dropped: its caller went away.
    Cancelled,
}

impl StageMeters {
    /// Meters for one actor, with Prometheus series labelled by stage and resource.
    pub fn new(stage: &str, resource: &str, capacity: usize, when_full: WhenFull, arbiter: &str) -> Self {
        let labels = [("stage", stage.to_string()), ("resource", resource.to_string())];
        let prom = PromMeters {
            enqueued: metrics::counter!(STAGE_MAILBOX_ENQUEUED_TOTAL, &labels),
            dequeued: metrics::counter!(STAGE_MAILBOX_DEQUEUED_TOTAL, &labels),
            completed: metrics::counter!(STAGE_COMPLETED_TOTAL, &labels),
            errors: metrics::counter!(STAGE_ERRORS_TOTAL, &labels),
            refused: metrics::counter!(STAGE_REFUSED_TOTAL, &labels),
            expired: metrics::counter!(STAGE_EXPIRED_TOTAL, &labels),
            cancelled: metrics::counter!(STAGE_CANCELLED_TOTAL, &labels),
            queued: metrics::gauge!(STAGE_MAILBOX_QUEUED, &labels),
            in_progress: metrics::gauge!(STAGE_IN_PROGRESS, &labels),
            depth: metrics::gauge!(STAGE_MAILBOX_DEPTH, &labels),
            latency: metrics::histogram!(STAGE_LATENCY_SECONDS, &labels),
        };
        metrics::gauge!(STAGE_MAILBOX_CAPACITY, &labels).set(capacity as f64);
        StageMeters {
            stage: stage.to_string(),
            resource: resource.to_string(),
            capacity,
            when_full,
            arbiter: arbiter.to_string(),
            queued: AtomicI64::new(0),
            in_progress: AtomicI64::new(0),
            enqueued: AtomicU64::new(0),
            dequeued: AtomicU64::new(0),
            completed: AtomicU64::new(0),
            errors: AtomicU64::new(0),
            refused: AtomicU64::new(0),
            expired: AtomicU64::new(0),
            cancelled: AtomicU64::new(0),
            latency_us: std::array::from_fn(|_| AtomicU64::new(0)),
            rate_window_start: AtomicU64::new(0),
            rate_window_count: AtomicU64::new(0),
            last_rate: AtomicU64::new(0),
            started: Instant::now(),
            prom,
        }
    }

    fn gauge(v: &AtomicI64) -> u64 {
        v.load(Ordering::Relaxed).max(0) as u64
    }

    /// Copies the depth gauges to their Prometheus series.
    pub fn publish_gauges(&self) {
        let (queued, in_progress) = (Self::gauge(&self.queued), Self::gauge(&self.in_progress));
        self.prom.queued.set(queued as f64);
        self.prom.in_progress.set(in_progress as f64);
        self.prom.depth.set((queued + in_progress) as f64);
    }

    /// A message took a slot and is about to be sent.
    pub(crate) fn on_admitted(&self) {
        self.queued.fetch_add(1, Ordering::Relaxed);
    }

    /// The send of an admitted message succeeded.
    pub(crate) fn on_enqueued(&self) {
        self.enqueued.fetch_add(1, Ordering::Relaxed);
        self.prom.enqueued.increment(1);
    }

    /// An admitted message left the queue without being sent or opened (the actor is gone).
    pub(crate) fn on_unsent(&self) {
        self.queued.fetch_sub(1, Ordering::Relaxed);
    }

    /// The actor opened a message: queued → in progress.
    pub(crate) fn on_started(&self) {
        self.queued.fetch_sub(1, Ordering::Relaxed);
        self.in_progress.fetch_add(1, Ordering::Relaxed);
        self.dequeued.fetch_add(1, Ordering::Relaxed);
        self.prom.dequeued.increment(1);
    }

    /// A message's work ended `outcome`, `elapsed` after it was admitted.
    pub(crate) fn on_finished(&self, outcome: Outcome, elapsed: Duration) {
        self.in_progress.fetch_sub(1, Ordering::Relaxed);
        self.completed.fetch_add(1, Ordering::Relaxed);
        self.prom.completed.increment(1);
        match outcome {
            Outcome::Succeeded => {}
            Outcome::Failed => self.on_error(),
            Outcome::Expired => {
                self.expired.fetch_add(1, Ordering::Relaxed);
                self.prom.expired.increment(1);
            }
            Outcome::Cancelled => {
                self.cancelled.fetch_add(1, Ordering::Relaxed);
                self.prom.cancelled.increment(1);
            }
        }
        self.count_rate();
        self.observe(elapsed);
    }

    /// A request found the mailbox full and was refused.
    pub(crate) fn on_refused(&self) {
        self.refused.fetch_add(1, Ordering::Relaxed);
        self.prom.refused.increment(1);
        self.on_error();
    }

    fn count_rate(&self) {
        let sec = self.started.elapsed().as_secs() + 1;
        let start = self.rate_window_start.load(Ordering::Relaxed);
        if sec != start
            && self.rate_window_start.compare_exchange(start, sec, Ordering::Relaxed, Ordering::Relaxed).is_ok()
        {
            let count = self.rate_window_count.swap(0, Ordering::Relaxed);
            // A window that ended more than a second ago says nothing about the current rate.
            let rate = if sec == start + 1 { count } else { 0 };
            self.last_rate.store(rate, Ordering::Relaxed);
        }
        self.rate_window_count.fetch_add(1, Ordering::Relaxed);
    }

    /// Meters a call served without a mailbox (a read of a shared snapshot): in progress at
    /// once, finished with its latency when the returned guard drops, so the depth shows the
    /// calls in flight.
    pub fn start_call(self: &std::sync::Arc<Self>) -> CallInFlight {
        // Straight to in progress: there is no queue.
        self.in_progress.fetch_add(1, Ordering::Relaxed);
        self.enqueued.fetch_add(1, Ordering::Relaxed);
        self.dequeued.fetch_add(1, Ordering::Relaxed);
        self.prom.enqueued.increment(1);
        self.prom.dequeued.increment(1);
        CallInFlight { meters: self.clone(), started: Instant::now(), outcome: Outcome::Succeeded }
    }

    /// Counts a failed call (an error reply).
    pub fn on_error(&self) {
        self.errors.fetch_add(1, Ordering::Relaxed);
        self.prom.errors.increment(1);
    }

    fn observe(&self, elapsed: Duration) {
        let us = elapsed.as_micros().max(1) as u64;
        let bucket = (63 - us.leading_zeros() as usize).min(BUCKETS - 1);
        self.latency_us[bucket].fetch_add(1, Ordering::Relaxed);
        self.prom.latency.record(elapsed.as_secs_f64());
    }

    fn quantile_ms(&self, q: f64) -> f64 {
        let counts: Vec<u64> = self.latency_us.iter().map(|c| c.load(Ordering::Relaxed)).collect();
        let total: u64 = counts.iter().sum();
        if total == 0 {
            return 0.0;
        }
        let rank = ((total as f64) * q).ceil().max(1.0) as u64;
        let mut seen = 0;
        for (i, c) in counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                // Report the bucket's geometric middle: within a factor of 1.42 of the truth.
                return (1u64 << i) as f64 * std::f64::consts::SQRT_2 / 1000.0;
            }
        }
        0.0
    }

    /// Copies the counters.
    pub fn snapshot(&self) -> MeterSnapshot {
        let sec = self.started.elapsed().as_secs() + 1;
        let window = self.rate_window_start.load(Ordering::Relaxed);
        let throughput = if sec <= window + 1 { self.last_rate.load(Ordering::Relaxed) } else { 0 };
        let (queued, in_progress) = (Self::gauge(&self.queued), Self::gauge(&self.in_progress));
        MeterSnapshot {
            stage: self.stage.clone(),
            resource: self.resource.clone(),
            arbiter: self.arbiter.clone(),
            when_full: self.when_full,
            mailbox_depth: queued + in_progress,
            queued,
            in_progress,
            mailbox_capacity: self.capacity,
            enqueued: self.enqueued.load(Ordering::Relaxed),
            dequeued: self.dequeued.load(Ordering::Relaxed),
            completed: self.completed.load(Ordering::Relaxed),
            errors: self.errors.load(Ordering::Relaxed),
            refused: self.refused.load(Ordering::Relaxed),
            expired: self.expired.load(Ordering::Relaxed),
            cancelled: self.cancelled.load(Ordering::Relaxed),
            throughput_per_sec: throughput,
            latency_p50_ms: self.quantile_ms(0.50),
            latency_p99_ms: self.quantile_ms(0.99),
        }
    }
}

/// A call metered by [`StageMeters::start_call`]; finishes when dropped.
pub struct CallInFlight {
    meters: std::sync::Arc<StageMeters>,
    started: Instant,
    outcome: Outcome,
}

impl CallInFlight {
    /// Records that the call failed.
    pub fn failed(&mut self) {
        self.outcome = Outcome::Failed;
    }
}

impl Drop for CallInFlight {
    fn drop(&mut self) {
        self.meters.on_finished(self.outcome, self.started.elapsed());
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    #[test]
    fn calls_in_flight_count_as_in_progress_until_they_end() {
        let m = Arc::new(StageMeters::new("cache-reads", "pods", 0, WhenFull::Wait, "http"));
        let mut a = m.start_call();
        let b = m.start_call();
        let s = m.snapshot();
        assert_eq!((s.queued, s.in_progress, s.mailbox_depth), (0, 2, 2));
        a.failed();
        drop(a);
        drop(b);
        let s = m.snapshot();
        assert_eq!((s.in_progress, s.completed, s.errors, s.dequeued), (0, 2, 1, 2));
        assert!(s.latency_p99_ms > 0.0);
        assert_eq!(serde_json::to_value(s.when_full).unwrap(), serde_json::json!({"policy": "wait"}));
        let shed = WhenFull::Shed { wait: Duration::from_secs(2) };
        assert_eq!(serde_json::to_value(shed).unwrap(), serde_json::json!({"policy": "shed", "wait_ms": 2000}));
    }
}
