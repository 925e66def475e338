//! The metrics tap: a recorder in front of the exporter's that passes every metric on and, for
//! the few that define an axis, also feeds a series of [`Signals`]. The axes are judged from
//! the very numbers an operator scrapes, under kube's names, so the evidence a verdict cites can
//! be checked against `/metrics`.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use metrics::{
    Counter, CounterFn, Gauge, GaugeFn, Histogram, HistogramFn, Key, KeyName, Metadata, Recorder, SharedString, Unit,
};

use crate::signals::{Series, SeriesKey, Signals};

/// The metrics the axes read, under the names their emitting crates record them with.
pub mod names {
    /// Webhook call latency by webhook `name`.
    pub use admission::metrics::ADMISSION_WEBHOOK_ADMISSION_DURATION_SECONDS as WEBHOOK_LATENCY;
    /// Webhook calls that failed (`error_type="calling_webhook_error"`) by webhook `name`.
    pub use admission::metrics::ADMISSION_WEBHOOK_REJECTION_COUNT as WEBHOOK_FAILURES;
    /// Requests answered, by `code`.
    pub use apimachinery::metrics::REQUEST_TOTAL as REQUESTS;
    /// Authentication attempts by `result`.
    pub use auth::metrics::AUTHENTICATION_ATTEMPTS as AUTHENTICATION;
    /// Authorization decisions by `decision`.
    pub use auth::metrics::AUTHORIZATION_DECISIONS_TOTAL as AUTHORIZATION;
    /// Events in the watch cache's window, by `resource`.
    pub use cacher::metrics::WATCH_CACHE_CAPACITY as WINDOW_EVENTS;
    /// Watches refused as too old for the watch cache's window, by `resource`.
    pub use cacher::metrics::WATCH_CACHE_TOO_OLD_TOTAL as WATCH_TOO_OLD;
    /// When the oldest event of the watch cache's window arrived (Unix seconds), by `resource`.
    pub use cacher::metrics::WATCH_CACHE_WINDOW_OLDEST_EVENT_TIMESTAMP_SECONDS as WINDOW_OLDEST;
    /// Requests waiting in APF's queues by `priority_level` (summed over flow schemas).
    pub use flowcontrol::metrics::CURRENT_INQUEUE_REQUESTS as APF_IN_QUEUE;
    /// Requests APF turned away by `priority_level`.
    pub use flowcontrol::metrics::REJECTED_REQUESTS_TOTAL as APF_REJECTED;
    /// Time requests waited in APF's queues by `priority_level`.
    pub use flowcontrol::metrics::REQUEST_WAIT_DURATION_SECONDS as APF_WAIT;
    /// Storage request latency, by `read` or `write`.
    pub use storage::metrics::ETCD_REQUEST_DURATION_SECONDS as STORAGE_LATENCY;
    /// Storage requests the backend answered with an error, by `operation`.
    pub use storage::metrics::ETCD_REQUEST_ERRORS_TOTAL as STORAGE_ERRORS;
    /// Watchers cut off, by `resource`.
    pub use storage::metrics::TERMINATED_WATCHERS_TOTAL as TERMINATED_WATCHERS;
}

/// Which series a metric instance feeds, if any.
pub fn classify(key: &Key) -> Option<SeriesKey> {
    let label = |name: &str| key.labels().find(|l| l.key() == name).map(|l| l.value().to_string());
    let metric: &'static str = match key.name() {
        names::AUTHENTICATION => names::AUTHENTICATION,
        names::AUTHORIZATION => names::AUTHORIZATION,
        names::WEBHOOK_LATENCY => names::WEBHOOK_LATENCY,
        names::WEBHOOK_FAILURES if label("error_type").as_deref() == Some("calling_webhook_error") => {
            names::WEBHOOK_FAILURES
        }
        names::APF_REJECTED => names::APF_REJECTED,
        names::APF_WAIT => names::APF_WAIT,
        names::APF_IN_QUEUE => names::APF_IN_QUEUE,
        names::STORAGE_LATENCY => names::STORAGE_LATENCY,
        names::STORAGE_ERRORS => names::STORAGE_ERRORS,
        names::TERMINATED_WATCHERS => names::TERMINATED_WATCHERS,
        names::WATCH_TOO_OLD => names::WATCH_TOO_OLD,
        names::WINDOW_OLDEST => names::WINDOW_OLDEST,
        names::WINDOW_EVENTS => names::WINDOW_EVENTS,
        names::REQUESTS => names::REQUESTS,
        _ => return None,
    };
    let by = match metric {
        names::AUTHENTICATION => label("result")?,
        names::AUTHORIZATION => label("decision")?,
        names::WEBHOOK_LATENCY | names::WEBHOOK_FAILURES => label("name")?,
        names::APF_IN_QUEUE => format!("{}/{}", label("priority_level")?, label("flow_schema").unwrap_or_default()),
        names::APF_REJECTED | names::APF_WAIT => label("priority_level")?,
        names::STORAGE_LATENCY => match label("operation")?.as_str() {
            "get" | "list" | "count" => "read".to_string(),
            "create" | "update" | "delete" => "write".to_string(),
            // A watch's setup and compaction are not requests a client waits on.
            _ => return None,
        },
        names::STORAGE_ERRORS => label("operation")?,
        names::TERMINATED_WATCHERS | names::WATCH_TOO_OLD | names::WINDOW_OLDEST | names::WINDOW_EVENTS => {
            label("resource")?
        }
        _ => label("code")?,
    };
    Some(SeriesKey::new(metric, by))
}

/// A recorder that feeds [`Signals`] and passes everything on to `inner`.
///
/// `counter!` and its kin register their key on every call. The handles are kept by key, so
/// a call after the first is one lookup: not the inner registry's lookup, the classification
/// and, for a tapped metric, a new wrapper each time.
pub struct TapRecorder<R> {
    inner: R,
    signals: Arc<Signals>,
    counters: Handles<Counter>,
    gauges: Handles<Gauge>,
    histograms: Handles<Histogram>,
}

impl<R: Recorder> TapRecorder<R> {
    /// Taps `inner` into `signals`.
    pub fn new(inner: R, signals: Arc<Signals>) -> Self {
        TapRecorder {
            inner,
            signals,
            counters: Handles::default(),
            gauges: Handles::default(),
            histograms: Handles::default(),
        }
    }
}

/// Registered handles by key. The inner recorder keeps its metrics for the process's life (no
/// idle expiry is configured), so a kept handle never goes stale.
struct Handles<H>(RwLock<HashMap<Key, H>>);

impl<H> Default for Handles<H> {
    fn default() -> Self {
        Handles(RwLock::default())
    }
}

impl<H: Clone> Handles<H> {
    fn get_or(&self, key: &Key, register: impl FnOnce() -> H) -> H {
        if let Some(h) = self.0.read().unwrap_or_else(std::sync::PoisonError::into_inner).get(key) {
            return h.clone();
        }
        let mut all = self.0.write().unwrap_or_else(std::sync::PoisonError::into_inner);
        all.entry(key.clone()).or_insert_with(register).clone()
    }
}

struct Tapped<H> {
    inner: H,
    series: Arc<Series>,
    signals: Arc<Signals>,
}

impl CounterFn for Tapped<Counter> {
    fn increment(&self, value: u64) {
        self.inner.increment(value);
        self.series.add(self.signals.now_ms(), value as f64);
    }

    fn absolute(&self, value: u64) {
        self.inner.absolute(value);
    }
}

impl GaugeFn for Tapped<Gauge> {
    fn increment(&self, value: f64) {
        self.inner.increment(value);
        self.series.shift(self.signals.now_ms(), value);
    }

    fn decrement(&self, value: f64) {
        self.inner.decrement(value);
        self.series.shift(self.signals.now_ms(), -value);
    }

    fn set(&self, value: f64) {
        self.inner.set(value);
        self.series.set(self.signals.now_ms(), value);
    }
}

impl HistogramFn for Tapped<Histogram> {
    fn record(&self, value: f64) {
        self.inner.record(value);
        self.series.sample(self.signals.now_ms(), value);
    }
}

impl<R: Recorder> TapRecorder<R> {
    fn tapped<H>(&self, key: &Key, inner: H) -> Result<Arc<Tapped<H>>, H> {
        match classify(key) {
            Some(k) => Ok(Arc::new(Tapped { inner, series: self.signals.series(&k), signals: self.signals.clone() })),
            None => Err(inner),
        }
    }
}

impl<R: Recorder> Recorder for TapRecorder<R> {
    fn describe_counter(&self, key: KeyName, unit: Option<Unit>, description: SharedString) {
        self.inner.describe_counter(key, unit, description);
    }

    fn describe_gauge(&self, key: KeyName, unit: Option<Unit>, description: SharedString) {
        self.inner.describe_gauge(key, unit, description);
    }

    fn describe_histogram(&self, key: KeyName, unit: Option<Unit>, description: SharedString) {
        self.inner.describe_histogram(key, unit, description);
    }

    fn register_counter(&self, key: &Key, metadata: &Metadata<'_>) -> Counter {
        self.counters.get_or(key, || {
            self.tapped(key, self.inner.register_counter(key, metadata)).map_or_else(|plain| plain, Counter::from_arc)
        })
    }

    fn register_gauge(&self, key: &Key, metadata: &Metadata<'_>) -> Gauge {
        self.gauges.get_or(key, || {
            self.tapped(key, self.inner.register_gauge(key, metadata)).map_or_else(|plain| plain, Gauge::from_arc)
        })
    }

    fn register_histogram(&self, key: &Key, metadata: &Metadata<'_>) -> Histogram {
        self.histograms.get_or(key, || {
            let inner = self.inner.register_histogram(key, metadata);
            self.tapped(key, inner).map_or_else(|plain| plain, Histogram::from_arc)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use metrics::Label;

    fn key(name: &'static str, labels: &[(&'static str, &'static str)]) -> Key {
        Key::from_parts(name, labels.iter().map(|(k, v)| Label::new(*k, *v)).collect::<Vec<_>>())
    }

    #[test]
    fn only_the_signals_of_an_axis_are_tapped_and_by_the_label_that_matters() {
        let c = |name, labels| classify(&key(name, labels));
        assert_eq!(
            c(names::STORAGE_LATENCY, &[("operation", "update"), ("type", "pods")]),
            Some(SeriesKey::new(names::STORAGE_LATENCY, "write"))
        );
        assert_eq!(c(names::STORAGE_LATENCY, &[("operation", "watch"), ("type", "pods")]), None);
        assert_eq!(
            c(names::WEBHOOK_FAILURES, &[("name", "a.example.com"), ("error_type", "calling_webhook_error")]),
            Some(SeriesKey::new(names::WEBHOOK_FAILURES, "a.example.com"))
        );
        assert_eq!(c(names::WEBHOOK_FAILURES, &[("name", "a"), ("error_type", "no_error")]), None, "a denial");
        assert_eq!(
            c(names::REQUESTS, &[("verb", "GET"), ("code", "401")]),
            Some(SeriesKey::new(names::REQUESTS, "401"))
        );
        assert_eq!(c(cacher::metrics::WATCH_EVENTS_TOTAL, &[("kind", "Pod")]), None);
    }

    #[test]
    fn the_tap_passes_every_sample_on() {
        #[derive(Default)]
        struct Counted(std::sync::Mutex<Vec<String>>);
        impl Recorder for Counted {
            fn describe_counter(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
            fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
            fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
            fn register_counter(&self, key: &Key, _: &Metadata<'_>) -> Counter {
                self.0.lock().unwrap().push(key.name().to_string());
                Counter::noop()
            }
            fn register_gauge(&self, _: &Key, _: &Metadata<'_>) -> Gauge {
                Gauge::noop()
            }
            fn register_histogram(&self, _: &Key, _: &Metadata<'_>) -> Histogram {
                Histogram::noop()
            }
        }
        let signals = Arc::new(Signals::default());
        let tap = TapRecorder::new(Counted::default(), signals.clone());
        let meta = Metadata::new("t", metrics::Level::INFO, None);
        tap.register_counter(&key(names::AUTHENTICATION, &[("result", "error")]), &meta).increment(3);
        tap.register_counter(&key("unrelated_total", &[]), &meta).increment(1);
        assert_eq!(*tap.inner.0.lock().unwrap(), [names::AUTHENTICATION, "unrelated_total"]);
        let now = signals.now();
        assert_eq!(signals.series(&SeriesKey::new(names::AUTHENTICATION, "error")).window(now, 5).count, 3.0);
        assert_eq!(signals.of("unrelated_total").len(), 0);

        // A key registered again is the handle kept the first time: the inner recorder is not
        // asked twice, and both calls count in the same series.
        tap.register_counter(&key(names::AUTHENTICATION, &[("result", "error")]), &meta).increment(2);
        tap.register_counter(&key("unrelated_total", &[]), &meta).increment(1);
        assert_eq!(*tap.inner.0.lock().unwrap(), [names::AUTHENTICATION, "unrelated_total"]);
        assert_eq!(signals.series(&SeriesKey::new(names::AUTHENTICATION, "error")).window(now, 5).count, 5.0);
    }
}
