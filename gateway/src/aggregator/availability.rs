//! APIServices kept: what kube-aggregator's registration controller (the proxy's routes
//! follow the stored APIServices), its `AvailableConditionController` and its discovery
//! manager do, in one task following APIServices, Services and Endpoints from their cachers.
//!
//! - **Routes.** Every APIService event updates the aggregator's registry, which the chain
//!   routes `/apis/<group>/<version>` by.
//! - **Availability.** A remote APIService is probed ([`Aggregator::probe`]) when it appears
//!   or changes, when its Service or Endpoints change, when a proxied request failed to reach
//!   its backend, and every 30 s (kube's resync). After a failed probe it is probed again after
//!   1 s, then 2 s, 4 s and every 5 s while it keeps failing: kube's retries back off to 30 s,
//!   so a backend that recovered can stay `False` for half a minute or more (#83332); here it
//!   is back within seconds. Probes of different APIServices run concurrently, one at a time
//!   per APIService. `Available` is written through `/status` only when it changes; a local
//!   APIService is kept `True` (`Local`).
//! - **Discovery.** A remote group version's resources are fetched
//!   ([`Aggregator::fetch_discovery`]) when its APIService becomes available or changes, and
//!   every minute, into the aggregator's cache; while it is not available its entry is marked
//!   stale. Requests never fetch.
//! - **Metrics** (kube's): `aggregator_unavailable_apiservice{name}` (1 while unavailable, set
//!   at every probe; a deleted APIService's series is left at 0, as the recorder cannot drop
//!   it) and `aggregator_unavailable_apiservice_total{name,reason}` (each fall from available).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use actors::Deadline;
use apimachinery::catalogue::{Catalogue, ResourceDef, Subresource};
use apimachinery::encoded::WatchEventType;
use apimachinery::messages::{ListObjects, Target, UpdateObject};
use apimachinery::object::{ObjectExt, now_rfc3339};
use apimachinery::options::{ListOptions, ReadAt, WriteOptions};
use kinds::apiregistration::{self, ApiServiceSpec, Availability};
use serde_json::Value;
use tokio::sync::mpsc;
use tokio::time::Instant;

use controllers::{WRITE_TIMEOUT, events, identity};
use stage_handles::Stages;

use super::{Aggregator, Rechecks};
use crate::metrics::{AGGREGATOR_UNAVAILABLE_APISERVICE, AGGREGATOR_UNAVAILABLE_APISERVICE_TOTAL};

/// How often an available APIService is probed again (kube's informer resync).
const RESYNC: Duration = Duration::from_secs(30);
/// The first wait before probing a failing APIService again; it doubles up to [`RETRY_MAX`].
const RETRY_FIRST: Duration = Duration::from_secs(1);
/// The longest wait between probes of a failing APIService.
const RETRY_MAX: Duration = Duration::from_secs(5);
/// How often a remote group version's discovery is fetched again (kube's one minute).
const DISCOVERY_RESYNC: Duration = Duration::from_secs(60);
/// Probes and fetches answered and not yet handled: bounded by the APIServices (one probe and
/// one fetch each at a time), so a sender never waits long.
const DONE_QUEUE: usize = 256;

/// What the controller knows of one APIService.
struct Tracked {
    /// As last seen.
    object: Value,
    spec: ApiServiceSpec,
    /// When to probe it next (remote ones).
    next_probe: Option<Instant>,
    /// The wait after the last failed probe; zero while it passes.
    retry: Duration,
    /// A probe is running.
    probing: bool,
    /// Something changed while the probe ran: probe again as soon as it ends.
    recheck: bool,
    /// When to fetch its discovery next (remote, available ones).
    next_discovery: Option<Instant>,
    /// A fetch is running.
    fetching: bool,
}

/// A probe's or a fetch's outcome, for the spec it ran against.
enum Done {
    Probe(ApiServiceSpec, Availability),
    Discovery(ApiServiceSpec, Result<Vec<Value>, String>),
}

struct Controller {
    stages: Stages,
    def: Arc<ResourceDef>,
    aggregator: Arc<Aggregator>,
    tracked: HashMap<String, Tracked>,
    done: mpsc::Sender<Done>,
}

impl Controller {
    /// An APIService added, changed or deleted.
    async fn observe(&mut self, kind: WatchEventType, obj: Value) {
        let name = obj.name().to_string();
        if kind == WatchEventType::Deleted {
            self.tracked.remove(&name);
            self.aggregator.remove(&name);
            metrics::gauge!(AGGREGATOR_UNAVAILABLE_APISERVICE, "name" => name).set(0.0);
            return;
        }
        self.aggregator.apply(&obj);
        let spec = ApiServiceSpec::of(&obj);
        let available = apiregistration::is_available(&obj);
        let now = Instant::now();
        let remote = spec.service.is_some();
        let (changed, was_available) = match self.tracked.get(&name) {
            Some(t) => (t.spec != spec, apiregistration::is_available(&t.object)),
            None => (true, false),
        };
        let entry = self.tracked.entry(name.clone()).or_insert_with(|| Tracked {
            object: Value::Null,
            spec: spec.clone(),
            next_probe: None,
            retry: Duration::ZERO,
            probing: false,
            recheck: false,
            next_discovery: None,
            fetching: false,
        });
        entry.object = obj;
        entry.spec = spec.clone();
        if !remote {
            entry.next_probe = None;
            entry.next_discovery = None;
            metrics::gauge!(AGGREGATOR_UNAVAILABLE_APISERVICE, "name" => name.clone()).set(0.0);
            if apiregistration::available_condition(&entry.object).is_none_or(|c| c["reason"] != "Local") {
                let object = entry.object.clone();
                self.write_status(object, &Availability::local()).await;
            }
            return;
        }
        if changed {
            entry.retry = Duration::ZERO;
            Self::probe_soon(entry, now);
        }
        if available && (changed || !was_available) {
            entry.next_discovery = Some(now);
        }
        if !available {
            entry.next_discovery = None;
            self.aggregator.discovery.mark_stale(&spec.group, &spec.version);
        }
    }

    /// Probes `t` as soon as it is not already being probed.
    fn probe_soon(t: &mut Tracked, now: Instant) {
        if t.probing {
            t.recheck = true;
        } else {
            t.next_probe = Some(now);
        }
    }

    /// A Service or its Endpoints changed: the APIServices behind it are probed again.
    fn backend_changed(&mut self, obj: &Value) {
        let (namespace, name) = (obj.namespace(), obj.name());
        let now = Instant::now();
        for t in self.tracked.values_mut() {
            if t.spec.service.as_ref().is_some_and(|s| s.namespace == namespace && s.name == name) {
                Self::probe_soon(t, now);
            }
        }
    }

    /// A request through the proxy failed to reach `name`'s backend.
    fn recheck(&mut self, name: &str) {
        if let Some(t) = self.tracked.get_mut(name).filter(|t| t.spec.service.is_some()) {
            Self::probe_soon(t, Instant::now());
        }
    }

    /// Starts the probes and fetches that are due.
    fn start_due(&mut self) {
        let now = Instant::now();
        let registry = self.aggregator.registry();
        for (name, t) in &mut self.tracked {
            let Some(service) = registry.get(name) else { continue };
            if !t.probing && t.next_probe.is_some_and(|at| at <= now) {
                t.probing = true;
                t.next_probe = None;
                let (aggregator, done, service) = (self.aggregator.clone(), self.done.clone(), service.clone());
                actix_web::rt::spawn(async move {
                    let availability = aggregator.probe(&service).await;
                    let _ = done.send(Done::Probe(service.spec.clone(), availability)).await;
                });
            }
            if !t.fetching && t.next_discovery.is_some_and(|at| at <= now) {
                t.fetching = true;
                t.next_discovery = None;
                let (aggregator, done) = (self.aggregator.clone(), self.done.clone());
                actix_web::rt::spawn(async move {
                    let fetched = aggregator.fetch_discovery(&service).await;
                    let _ = done.send(Done::Discovery(service.spec.clone(), fetched)).await;
                });
            }
        }
    }

    /// When something is next due.
    fn next_wake(&self) -> Instant {
        let far = Instant::now() + DISCOVERY_RESYNC;
        self.tracked.values().flat_map(|t| [t.next_probe, t.next_discovery]).flatten().min().unwrap_or(far)
    }

    async fn finish(&mut self, done: Done) {
        let now = Instant::now();
        match done {
            Done::Probe(spec, availability) => {
                let Some(t) = self.tracked.get_mut(&spec.name) else { return };
                t.probing = false;
                if t.spec != spec {
                    // Probed against an older spec: the new one is probed afresh.
                    t.next_probe = Some(now);
                    return;
                }
                let passed = availability.status == "True";
                t.retry = if passed { Duration::ZERO } else { (t.retry * 2).clamp(RETRY_FIRST, RETRY_MAX) };
                let wait = if passed { RESYNC } else { t.retry };
                t.next_probe = Some(if std::mem::take(&mut t.recheck) { now } else { now + wait });
                let unavailable = if passed { 0.0 } else { 1.0 };
                metrics::gauge!(AGGREGATOR_UNAVAILABLE_APISERVICE, "name" => spec.name.clone()).set(unavailable);
                let object = t.object.clone();
                let was_available = apiregistration::is_available(&object);
                if self.write_status(object, &availability).await && was_available && !passed {
                    metrics::counter!(AGGREGATOR_UNAVAILABLE_APISERVICE_TOTAL,
                        "name" => spec.name.clone(), "reason" => availability.reason)
                    .increment(1);
                }
            }
            Done::Discovery(spec, fetched) => {
                let Some(t) = self.tracked.get_mut(&spec.name) else { return };
                t.fetching = false;
                if t.spec != spec {
                    return;
                }
                if apiregistration::is_available(&t.object) {
                    t.next_discovery = Some(now + DISCOVERY_RESYNC);
                }
                match fetched {
                    Ok(resources) => self.aggregator.discovery.store(&spec.group, &spec.version, resources),
                    Err(e) => {
                        tracing::warn!(apiservice = %spec.name, "discovery of an extension server failed: {e}");
                        self.aggregator.discovery.mark_stale(&spec.group, &spec.version);
                        Self::probe_soon(t, now);
                    }
                }
            }
        }
    }

    /// Writes `availability` into `object`'s status unless it says so already; whether it was
    /// written. A conflict (the object changed meanwhile) brings an event, and a probe, instead.
    async fn write_status(&self, mut object: Value, availability: &Availability) -> bool {
        let before = object.get("status").cloned();
        apiregistration::set_availability(&mut object, availability, &now_rfc3339());
        if object.get("status") == before.as_ref() {
            return false;
        }
        let name = object.name().to_string();
        if availability.status != "True" || before.is_some() {
            tracing::info!(apiservice = %name, status = availability.status, reason = availability.reason,
                "changing APIService availability");
        }
        let update = UpdateObject {
            target: Target { subresource: Some(Subresource::Status), ..Target::object(&self.def, "", &name) },
            object,
            user: identity("apiservice-available-controller"),
            options: WriteOptions::default(),
        };
        match self.stages.update.ask(update, Deadline::after(WRITE_TIMEOUT)).await {
            Ok(_) => true,
            Err(e) if matches!(e.reason, apimachinery::Reason::Conflict | apimachinery::Reason::NotFound) => false,
            Err(e) => {
                tracing::warn!(apiservice = %name, "writing APIService status: {}", e.message);
                false
            }
        }
    }
}

/// Loads the stored APIServices into the aggregator's registry, so the server routes remote
/// group versions from its first request, then keeps them on the current arbiter.
pub async fn start(stages: Stages, catalogue: Arc<Catalogue>, aggregator: Arc<Aggregator>, mut rechecks: Rechecks) {
    let Some(def) = catalogue.find(apiregistration::GROUP, "v1", "apiservices") else { return };
    let list = ListObjects {
        target: Target::collection(&def, ""),
        options: ListOptions { read_at: ReadAt::Latest, ..Default::default() },
    };
    if let Ok(reads) = stages.reads(&def)
        && let Ok(list) = reads.reader.list(list).await
    {
        for obj in list.items.iter().map(|o| o.value()) {
            aggregator.apply(&obj);
        }
    }
    let backend = |resource: &str| catalogue.find("", "v1", resource);
    let (Some(services_def), Some(endpoints_def)) = (backend("services"), backend("endpoints")) else { return };
    let mut apiservices = events(&stages, &def);
    let mut services = events(&stages, &services_def);
    let mut endpoints = events(&stages, &endpoints_def);
    let (done, mut finished) = mpsc::channel(DONE_QUEUE);
    let mut controller = Controller { stages, def, aggregator, tracked: HashMap::new(), done };
    actix_web::rt::spawn(async move {
        loop {
            let wake = controller.next_wake();
            tokio::select! {
                Some((kind, obj)) = apiservices.recv() => controller.observe(kind, obj).await,
                Some((_, obj)) = services.recv() => controller.backend_changed(&obj),
                Some((_, obj)) = endpoints.recv() => controller.backend_changed(&obj),
                Some(name) = rechecks.recv() => controller.recheck(&name),
                Some(done) = finished.recv() => controller.finish(done).await,
                _ = tokio::time::sleep_until(wake) => {}
            }
            controller.start_due();
        }
    });
}
