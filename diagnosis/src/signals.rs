//! Rolling windows of the signals that define each axis: one series per metric and label,
//! holding one bucket per second for the last [`KEPT_SECONDS`], so any window up to that long
//! can be read (count, sum and largest sample) without keeping samples.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Instant;

/// Seconds of history each series keeps.
pub const KEPT_SECONDS: u64 = 32;

/// One series: a metric and the label that tells its instances apart (a webhook's name, a
/// priority level, a resource, a status code).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SeriesKey {
    /// The metric, under its exported name.
    pub metric: &'static str,
    /// The label value this series is kept per.
    pub label: String,
}

impl SeriesKey {
    /// The series of `metric` for `label`.
    pub fn new(metric: &'static str, label: impl Into<String>) -> Self {
        SeriesKey { metric, label: label.into() }
    }
}

#[derive(Clone, Copy, Debug, Default)]
struct Bucket {
    second: u64,
    /// The millisecond of the first sample, counted like `second`.
    first_ms: Option<u64>,
    count: f64,
    sum: f64,
    max: f64,
}

/// What a window of a series holds.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Window {
    /// Increments (counters) or samples (histograms).
    pub count: f64,
    /// The samples' sum (histograms).
    pub sum: f64,
    /// The largest sample (histograms) or value (gauges).
    pub max: f64,
    /// The millisecond (counted from when the signals began) of the window's first sample.
    pub first: Option<u64>,
}

impl Window {
    /// The samples' mean, if there were any.
    pub fn mean(&self) -> Option<f64> {
        (self.count > 0.0).then(|| self.sum / self.count)
    }
}

/// One series' buckets, and a gauge's last value.
#[derive(Debug)]
pub struct Series {
    buckets: Mutex<([Bucket; KEPT_SECONDS as usize], f64)>,
}

impl Series {
    fn new() -> Self {
        Series { buckets: Mutex::new(([Bucket::default(); KEPT_SECONDS as usize], 0.0)) }
    }

    fn bucket(&self, ms: u64, update: impl FnOnce(&mut Bucket, &mut f64)) {
        let second = ms / 1000;
        let mut guard = self.buckets.lock().unwrap_or_else(|e| e.into_inner());
        let (buckets, last) = &mut *guard;
        let b = &mut buckets[(second % KEPT_SECONDS) as usize];
        if b.second != second {
            *b = Bucket { second, ..Bucket::default() };
        }
        b.first_ms.get_or_insert(ms);
        update(b, last);
    }

    /// Adds `n` at millisecond `ms` (a counter).
    pub fn add(&self, ms: u64, n: f64) {
        self.bucket(ms, |b, _| b.count += n);
    }

    /// Records one sample at millisecond `ms` (a histogram).
    pub fn sample(&self, ms: u64, value: f64) {
        self.bucket(ms, |b, _| {
            b.count += 1.0;
            b.sum += value;
            b.max = b.max.max(value);
        });
    }

    /// Sets the value at millisecond `ms` (a gauge).
    pub fn set(&self, ms: u64, value: f64) {
        self.bucket(ms, |b, last| {
            b.max = b.max.max(value);
            *last = value;
        });
    }

    /// Moves a gauge by `delta` at millisecond `ms`.
    pub fn shift(&self, ms: u64, delta: f64) {
        self.bucket(ms, |b, last| {
            *last += delta;
            b.max = b.max.max(*last);
        });
    }

    /// A gauge's last value.
    pub fn last(&self) -> f64 {
        self.buckets.lock().unwrap_or_else(|e| e.into_inner()).1
    }

    /// The `seconds` seconds ending with `now` (included).
    pub fn window(&self, now: u64, seconds: u64) -> Window {
        let from = now.saturating_sub(seconds.min(KEPT_SECONDS).saturating_sub(1));
        let guard = self.buckets.lock().unwrap_or_else(|e| e.into_inner());
        let mut w = Window::default();
        for b in guard.0.iter().filter(|b| b.second >= from && b.second <= now) {
            w.count += b.count;
            w.sum += b.sum;
            w.max = w.max.max(b.max);
            if let Some(first) = b.first_ms.filter(|_| b.count > 0.0 || b.max > 0.0) {
                w.first = Some(w.first.map_or(first, |f: u64| f.min(first)));
            }
        }
        w
    }
}

/// Every series, and the clock they count seconds by.
#[derive(Debug)]
pub struct Signals {
    origin: Instant,
    /// By metric, then label (in label order): each tick asks for a metric's series a few
    /// dozen times, which a scan of every series made the tick's largest cost.
    series: RwLock<HashMap<&'static str, BTreeMap<String, Arc<Series>>>>,
}

impl Default for Signals {
    fn default() -> Self {
        Signals { origin: Instant::now(), series: RwLock::default() }
    }
}

impl Signals {
    /// The current millisecond, counted from when the signals began.
    pub fn now_ms(&self) -> u64 {
        self.origin.elapsed().as_millis() as u64
    }

    /// The current second, counted likewise.
    pub fn now(&self) -> u64 {
        self.now_ms() / 1000
    }

    /// The millisecond `at` was, counted likewise.
    pub fn ms_of(&self, at: Instant) -> u64 {
        at.saturating_duration_since(self.origin).as_millis() as u64
    }

    /// When millisecond `ms` was.
    pub fn instant_of_ms(&self, ms: u64) -> Instant {
        self.origin + std::time::Duration::from_millis(ms)
    }

    /// The series of `key`, made on first use.
    pub fn series(&self, key: &SeriesKey) -> Arc<Series> {
        let all = self.series.read().unwrap_or_else(|e| e.into_inner());
        let found = all.get(key.metric).and_then(|m| m.get(&key.label)).cloned();
        drop(all);
        if let Some(s) = found {
            return s;
        }
        let mut all = self.series.write().unwrap_or_else(|e| e.into_inner());
        let of_metric = all.entry(key.metric).or_default();
        of_metric.entry(key.label.clone()).or_insert_with(|| Arc::new(Series::new())).clone()
    }

    /// Every series of `metric`, by label, in label order.
    pub fn of(&self, metric: &str) -> Vec<(String, Arc<Series>)> {
        let all = self.series.read().unwrap_or_else(|e| e.into_inner());
        all.get(metric).map(|m| m.iter().map(|(label, s)| (label.clone(), s.clone())).collect()).unwrap_or_default()
    }

    /// The window of `metric` summed over its labels.
    pub fn total(&self, metric: &str, now: u64, seconds: u64) -> Window {
        let mut w = Window::default();
        for (_, s) in self.of(metric) {
            let one = s.window(now, seconds);
            w.count += one.count;
            w.sum += one.sum;
            w.max = w.max.max(one.max);
            w.first = match (w.first, one.first) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
        }
        w
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_sums_the_seconds_it_covers_and_forgets_older_ones() {
        let s = Series::new();
        s.add(10_000, 2.0);
        s.add(11_000, 3.0);
        s.sample(12_250, 0.5);
        s.sample(12_500, 1.5);
        assert_eq!(s.window(12, 3).count, 7.0);
        assert_eq!(s.window(12, 1), Window { count: 2.0, sum: 2.0, max: 1.5, first: Some(12_250) });
        assert_eq!(s.window(12, 2).first, Some(11_000));
        // A bucket reused for a later second starts empty.
        s.add((10 + KEPT_SECONDS) * 1000, 1.0);
        assert_eq!(s.window(10 + KEPT_SECONDS, KEPT_SECONDS).count, 6.0, "second 10 is gone, 11 and 12 are kept");
        assert_eq!(s.window(10, 1).count, 0.0, "second 10's bucket holds a later second");
    }

    #[test]
    fn gauges_keep_their_last_value_and_their_peak_per_second() {
        let s = Series::new();
        s.set(5_000, 4.0);
        s.shift(5_100, -3.0);
        assert_eq!(s.last(), 1.0);
        assert_eq!(s.window(5, 1).max, 4.0);
    }

    #[test]
    fn totals_add_up_every_label() {
        let signals = Signals::default();
        signals.series(&SeriesKey::new("m", "a")).add(3_000, 1.0);
        signals.series(&SeriesKey::new("m", "b")).add(4_000, 2.0);
        signals.series(&SeriesKey::new("other", "a")).add(4_000, 5.0);
        let t = signals.total("m", 4, 5);
        assert_eq!((t.count, t.first), (3.0, Some(3_000)));
        assert_eq!(signals.of("m").iter().map(|(l, _)| l.as_str()).collect::<Vec<_>>(), ["a", "b"]);
    }
}
