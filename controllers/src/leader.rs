//! Leader election for the controllers, so replicas sharing one storage run them one at a
//! time: client-go's `leaderelection` over a `LeaseLock`, as kube-controller-manager uses it.
//!
//! Serving needs no leader (every replica answers every request, as kube-apiserver's do); only
//! the controllers, which would otherwise race each other's writes, wait for the Lease
//! [`LEASE_NAMESPACE`]/[`LEASE_NAME`]. Its record follows client-go's:
//!
//! - `holderIdentity` is `<hostname>_<random uid>`, unique per process, so a restarted replica
//!   is a new holder;
//! - a candidate takes the Lease when it is absent, has no holder, or has expired. Expiry is
//!   judged by the candidate's own clock: `leaseDurationSeconds` after the moment it last saw
//!   the record *change*, never by comparing `renewTime` with its clock, so clock skew between
//!   replicas does not matter. A takeover increments `leaseTransitions`; `acquireTime` and
//!   `renewTime` are MicroTimes;
//! - the holder renews every retry period; when it has not renewed for the renew deadline, or
//!   sees another holder, it stops its controllers and becomes a candidate again (client-go
//!   would exit; a server keeps serving);
//! - on shutdown the holder stops its controllers and releases the Lease (client-go's
//!   `ReleaseOnCancel`: no holder, `leaseDurationSeconds: 1`), so a candidate takes over at
//!   its next try rather than after the lease duration.
//!
//! The elector knows nothing of what it runs: `start` starts the work and returns the handles
//! that stop it. `leader_election_master_status{name}` is 1 while this replica leads, as
//! client-go exports it.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use actors::Deadline;
use apimachinery::catalogue::ResourceDef;
use apimachinery::error::ApiError;
use apimachinery::messages::{CreateObject, GetObject, Target, UpdateObject};
use apimachinery::options::{GetOptions, ReadAt, WriteOptions};
use apimachinery::request::UserInfo;
use async_trait::async_trait;
use serde_json::{Value, json};
use tokio::task::AbortHandle;
use tokio::time::Instant;

use super::{WRITE_TIMEOUT, identity};
use stage_handles::{Signal, Stages};

use crate::metrics::LEADER_ELECTION_MASTER_STATUS;

/// The namespace of the controllers' Lease.
pub const LEASE_NAMESPACE: &str = "kube-system";

/// The name of the controllers' Lease (and the `name` label of the metric): the controllers
/// of this server, not kube-controller-manager's (`kube-controller-manager`), so a real
/// controller manager beside it elects its own leader.
pub const LEASE_NAME: &str = "apiserver-controllers";

/// client-go's `JitterFactor`: a candidate retries after the retry period plus up to 1.2 times
/// it, so candidates spread out.
const JITTER_FACTOR: f64 = 1.2;

/// The timings of an election (kube-controller-manager's `--leader-elect-*` flags).
#[derive(Clone, Debug)]
pub struct ElectionConfig {
    /// The Lease's namespace.
    pub namespace: String,
    /// The Lease's name.
    pub name: String,
    /// This candidate's `holderIdentity`.
    pub identity: String,
    /// How long a holder is trusted without renewing.
    pub lease_duration: Duration,
    /// How long a holder keeps trying to renew before it gives up leading.
    pub renew_deadline: Duration,
    /// How often the holder renews and candidates try.
    pub retry_period: Duration,
}

impl ElectionConfig {
    /// The controllers' election with these timings, under a fresh [`holder_identity`].
    pub fn controllers(lease_duration: Duration, renew_deadline: Duration, retry_period: Duration) -> Self {
        ElectionConfig {
            namespace: LEASE_NAMESPACE.into(),
            name: LEASE_NAME.into(),
            identity: holder_identity(),
            lease_duration,
            renew_deadline,
            retry_period,
        }
    }

    /// client-go's checks: a holder must give up before others may take over, and must have
    /// time to retry within its deadline.
    pub fn validate(&self) -> Result<(), String> {
        if self.retry_period.is_zero() {
            return Err("--leader-elect-retry-period must be greater than zero".into());
        }
        if self.lease_duration <= self.renew_deadline {
            return Err("--leader-elect-lease-duration must be greater than --leader-elect-renew-deadline".into());
        }
        if self.renew_deadline.as_secs_f64() <= JITTER_FACTOR * self.retry_period.as_secs_f64() {
            return Err(format!(
                "--leader-elect-renew-deadline must be greater than {JITTER_FACTOR} times --leader-elect-retry-period"
            ));
        }
        if self.lease_duration.as_secs() == 0 {
            return Err("--leader-elect-lease-duration must be at least one second".into());
        }
        Ok(())
    }
}

/// `<hostname>_<random uid>`, kube-controller-manager's identity: the host for people, the uid
/// so two processes on one host (or one restarted) are different holders.
pub fn holder_identity() -> String {
    let host = hostname::get().ok().and_then(|h| h.into_string().ok()).unwrap_or_else(|| "localhost".into());
    format!("{host}_{}", uuid::Uuid::new_v4())
}

/// What a Lease's spec says, compared whole to tell whether it changed (client-go's
/// `LeaderElectionRecord`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LeaderElectionRecord {
    /// Who holds it; empty when released.
    pub holder_identity: String,
    /// How long the holder is trusted without renewing.
    pub lease_duration_seconds: i64,
    /// When the holder took it (MicroTime).
    pub acquire_time: String,
    /// When the holder last renewed it (MicroTime).
    pub renew_time: String,
    /// How many times it changed hands.
    pub leader_transitions: i64,
}

impl LeaderElectionRecord {
    /// The record of a Lease object.
    pub fn from_lease(lease: &Value) -> Self {
        let text =
            |field: &str| lease.pointer(&format!("/spec/{field}")).and_then(Value::as_str).unwrap_or("").to_string();
        let number = |field: &str| lease.pointer(&format!("/spec/{field}")).and_then(Value::as_i64).unwrap_or(0);
        LeaderElectionRecord {
            holder_identity: text("holderIdentity"),
            lease_duration_seconds: number("leaseDurationSeconds"),
            acquire_time: text("acquireTime"),
            renew_time: text("renewTime"),
            leader_transitions: number("leaseTransitions"),
        }
    }

    /// Whether a holder of this record is still trusted at `now`, the record having been seen
    /// to change at `seen` (by this process's clock: client-go's rule, immune to skew).
    pub fn trusted(&self, seen: Instant, now: Instant) -> bool {
        seen + Duration::from_secs(self.lease_duration_seconds.max(0) as u64) > now
    }

    /// The Lease spec holding it (client-go's `LeaderElectionRecordToLeaseSpec`).
    pub fn to_spec(&self) -> Value {
        json!({
            "holderIdentity": self.holder_identity,
            "leaseDurationSeconds": self.lease_duration_seconds,
            "acquireTime": self.acquire_time,
            "renewTime": self.renew_time,
            "leaseTransitions": self.leader_transitions,
        })
    }
}

/// Where the record lives (client-go's `resourcelock.Interface`). An update is guarded by
/// what the lock last read or wrote, so of two candidates updating the same record one fails.
#[async_trait]
pub trait LeaseLock {
    /// The current record; `None` when there is no Lease.
    async fn get(&mut self) -> Result<Option<LeaderElectionRecord>, ApiError>;
    /// Creates the Lease holding `record`; fails if it exists.
    async fn create(&mut self, record: &LeaderElectionRecord) -> Result<(), ApiError>;
    /// Replaces the record, if the Lease is still as last seen.
    async fn update(&mut self, record: &LeaderElectionRecord) -> Result<(), ApiError>;
    /// `namespace/name`, for the log.
    fn describe(&self) -> String;
}

/// The Lease written through the storage stage and read through its cacher at the latest
/// revision (a consistent read, as client-go's GET is), as the other controllers do.
pub struct StageLeaseLock {
    stages: Stages,
    def: Arc<ResourceDef>,
    namespace: String,
    name: String,
    /// The Lease as last read or written: its resourceVersion guards the next update.
    lease: Option<Value>,
}

impl StageLeaseLock {
    /// The lock of `namespace/name`; `def` is `coordination.k8s.io/v1` leases.
    pub fn new(stages: Stages, def: Arc<ResourceDef>, namespace: &str, name: &str) -> Self {
        StageLeaseLock { stages, def, namespace: namespace.into(), name: name.into(), lease: None }
    }

    fn user() -> UserInfo {
        identity("leader-election")
    }
}

#[async_trait]
impl LeaseLock for StageLeaseLock {
    async fn get(&mut self) -> Result<Option<LeaderElectionRecord>, ApiError> {
        let get = GetObject {
            target: Target::object(&self.def, &self.namespace, &self.name),
            options: GetOptions { read_at: ReadAt::Latest },
        };
        match self.stages.reads(&self.def)?.reader.get(get).await {
            Ok(lease) => {
                let lease = lease.value();
                let record = LeaderElectionRecord::from_lease(&lease);
                self.lease = Some(lease);
                Ok(Some(record))
            }
            Err(e) if e.reason == apimachinery::Reason::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    async fn create(&mut self, record: &LeaderElectionRecord) -> Result<(), ApiError> {
        let create = CreateObject {
            target: Target::collection(&self.def, &self.namespace),
            object: json!({"metadata": {"name": self.name, "namespace": self.namespace}, "spec": record.to_spec()}),
            user: Self::user(),
            options: WriteOptions::default(),
        };
        let written = self.stages.create.ask(create, Deadline::after(WRITE_TIMEOUT)).await?;
        self.lease = Some(written.object.value().clone());
        Ok(())
    }

    async fn update(&mut self, record: &LeaderElectionRecord) -> Result<(), ApiError> {
        let Some(mut lease) = self.lease.clone() else {
            return Err(ApiError::internal("the Lease was neither read nor created before its update"));
        };
        lease["spec"] = record.to_spec();
        let update = UpdateObject {
            target: Target::object(&self.def, &self.namespace, &self.name),
            object: lease,
            user: Self::user(),
            options: WriteOptions::default(),
        };
        let written = self.stages.update.ask(update, Deadline::after(WRITE_TIMEOUT)).await?;
        self.lease = Some(written.object.value().clone());
        Ok(())
    }

    fn describe(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }
}

/// How a term of leading ended.
enum TermEnded {
    /// The Lease could not be renewed in time, or another holder has it.
    Lost,
    /// The server is shutting down.
    Stopped,
}

/// One candidate (client-go's `LeaderElector`).
pub struct LeaderElector<L> {
    config: ElectionConfig,
    lock: L,
    /// The record as last seen or written, and when (by this process's clock) it was seen to
    /// change: what expiry is judged by.
    observed: Option<(LeaderElectionRecord, Instant)>,
    /// `leader_election_master_status{name}`.
    status: metrics::Gauge,
}

impl<L: LeaseLock> LeaderElector<L> {
    /// A candidate that has seen nothing yet.
    pub fn new(config: ElectionConfig, lock: L) -> Self {
        let status = metrics::gauge!(LEADER_ELECTION_MASTER_STATUS, "name" => config.name.clone());
        status.set(0.0);
        LeaderElector { config, lock, observed: None, status }
    }

    /// Campaigns until `stop` fires: while this candidate holds the Lease, what `start` started
    /// runs; when it loses the Lease it is stopped (its handles aborted) and the campaign goes
    /// on. On `stop`, a holder stops it and releases the Lease.
    pub async fn run(mut self, start: impl Fn() -> Vec<AbortHandle>, stop: Signal) {
        let lease = self.lock.describe();
        loop {
            tracing::info!(lease, identity = %self.config.identity, "attempting to acquire leader lease");
            if !self.acquire(&stop).await {
                return;
            }
            tracing::info!(lease, identity = %self.config.identity, "successfully acquired lease");
            self.status.set(1.0);
            let running = start();
            let ended = self.hold(&stop).await;
            for handle in &running {
                handle.abort();
            }
            self.status.set(0.0);
            match ended {
                TermEnded::Lost => tracing::warn!(lease, "leader election lost: what the holder runs is stopped"),
                TermEnded::Stopped => {
                    self.release().await;
                    return;
                }
            }
        }
    }

    /// Tries every retry period (with jitter) until the Lease is taken (`true`) or `stop` fires.
    async fn acquire(&mut self, stop: &Signal) -> bool {
        loop {
            let acquired = tokio::select! {
                acquired = self.try_within(self.config.renew_deadline) => acquired,
                _ = stop.wait() => return false,
            };
            if acquired {
                return true;
            }
            if !sleep_unless(jittered(self.config.retry_period), stop).await {
                return false;
            }
        }
    }

    /// Renews every retry period until a renewal fails for the renew deadline or another holder
    /// is seen, or `stop` fires.
    async fn hold(&mut self, stop: &Signal) -> TermEnded {
        loop {
            if !sleep_unless(self.config.retry_period, stop).await {
                return TermEnded::Stopped;
            }
            let deadline = Instant::now() + self.config.renew_deadline;
            loop {
                let left = deadline.saturating_duration_since(Instant::now());
                // A renewal in flight is dropped on stop: the Lease is released right after.
                let renewed = tokio::select! {
                    renewed = self.try_within(left) => renewed,
                    _ = stop.wait() => return TermEnded::Stopped,
                };
                if renewed {
                    break;
                }
                if !self.is_leader() {
                    return TermEnded::Lost;
                }
                if Instant::now() + self.config.retry_period >= deadline {
                    tracing::warn!(
                        lease = self.lock.describe(),
                        "failed to renew lease within {:?}",
                        self.config.renew_deadline
                    );
                    return TermEnded::Lost;
                }
                if !sleep_unless(self.config.retry_period, stop).await {
                    return TermEnded::Stopped;
                }
            }
        }
    }

    /// [`try_acquire_or_renew`](Self::try_acquire_or_renew), failing when it takes longer
    /// than `bound`.
    async fn try_within(&mut self, bound: Duration) -> bool {
        tokio::time::timeout(bound, self.try_acquire_or_renew()).await.unwrap_or(false)
    }

    /// client-go's `tryAcquireOrRenew`: whether this candidate holds the Lease afterwards.
    async fn try_acquire_or_renew(&mut self) -> bool {
        let now = Instant::now();
        let stamp = apimachinery::object::now_rfc3339_micros();
        let mut wanted = LeaderElectionRecord {
            holder_identity: self.config.identity.clone(),
            lease_duration_seconds: self.config.lease_duration.as_secs() as i64,
            acquire_time: stamp.clone(),
            renew_time: stamp,
            leader_transitions: 0,
        };
        // The holder first writes over what it last wrote, without reading.
        if let Some((observed, _)) = self.observed.as_ref().filter(|_| self.is_leader() && self.lease_valid(now)) {
            wanted.acquire_time = observed.acquire_time.clone();
            wanted.leader_transitions = observed.leader_transitions;
            match self.lock.update(&wanted).await {
                Ok(()) => {
                    self.observe(wanted, now);
                    return true;
                }
                Err(e) => {
                    tracing::info!(lease = self.lock.describe(), "renewing without reading failed: {}", e.message)
                }
            }
        }
        let current = match self.lock.get().await {
            Ok(Some(current)) => current,
            Ok(None) => {
                return match self.lock.create(&wanted).await {
                    Ok(()) => {
                        self.observe(wanted, now);
                        true
                    }
                    Err(e) => {
                        tracing::info!(lease = self.lock.describe(), "creating the lease failed: {}", e.message);
                        false
                    }
                };
            }
            Err(e) => {
                tracing::warn!(lease = self.lock.describe(), "reading the lease failed: {}", e.message);
                return false;
            }
        };
        if self.observed.as_ref().map(|(r, _)| r) != Some(&current) {
            self.observe(current.clone(), now);
        }
        if !current.holder_identity.is_empty() && self.lease_valid(now) && !self.is_leader() {
            return false;
        }
        if self.is_leader() {
            wanted.acquire_time = current.acquire_time;
            wanted.leader_transitions = current.leader_transitions;
        } else {
            wanted.leader_transitions = current.leader_transitions + 1;
        }
        match self.lock.update(&wanted).await {
            Ok(()) => {
                self.observe(wanted, now);
                true
            }
            Err(e) => {
                tracing::info!(lease = self.lock.describe(), "updating the lease failed: {}", e.message);
                false
            }
        }
    }

    /// client-go's `release`: no holder, and a lease of one second.
    async fn release(&mut self) {
        let Some((observed, _)) = self.observed.as_ref().filter(|_| self.is_leader()) else { return };
        let stamp = apimachinery::object::now_rfc3339_micros();
        let released = LeaderElectionRecord {
            holder_identity: String::new(),
            lease_duration_seconds: 1,
            acquire_time: stamp.clone(),
            renew_time: stamp,
            leader_transitions: observed.leader_transitions,
        };
        match tokio::time::timeout(self.config.renew_deadline, self.lock.update(&released)).await {
            Ok(Ok(())) => {
                tracing::info!(lease = self.lock.describe(), "released the lease");
                self.observe(released, Instant::now());
            }
            Ok(Err(e)) => tracing::warn!(lease = self.lock.describe(), "releasing the lease failed: {}", e.message),
            Err(_) => tracing::warn!(lease = self.lock.describe(), "releasing the lease timed out"),
        }
    }

    /// Remembers `record` as seen at `at`, logging a new holder as client-go's
    /// `OnNewLeader` would.
    fn observe(&mut self, record: LeaderElectionRecord, at: Instant) {
        let before = self.observed.as_ref().map(|(r, _)| r.holder_identity.as_str());
        if before != Some(record.holder_identity.as_str()) && !record.holder_identity.is_empty() {
            tracing::info!(lease = self.lock.describe(), holder = %record.holder_identity, "new leader elected");
        }
        self.observed = Some((record, at));
    }

    /// Whether the record last seen names this candidate.
    fn is_leader(&self) -> bool {
        self.observed.as_ref().is_some_and(|(r, _)| r.holder_identity == self.config.identity)
    }

    /// Whether the record last seen is still trusted at `now`, by this process's clock.
    fn lease_valid(&self, now: Instant) -> bool {
        self.observed.as_ref().is_some_and(|(r, seen)| r.trusted(*seen, now))
    }
}

/// `period` plus a random part of up to [`JITTER_FACTOR`] times it (client-go's `Jitter`).
fn jittered(period: Duration) -> Duration {
    let fraction = (uuid::Uuid::new_v4().as_u128() % 1_000_000) as f64 / 1_000_000.0;
    period.mul_f64(1.0 + JITTER_FACTOR * fraction)
}

/// Sleeps for `period`; `false` if `stop` fired first.
async fn sleep_unless(period: Duration, stop: &Signal) -> bool {
    tokio::select! {
        _ = tokio::time::sleep(period) => !stop.signaled(),
        _ = stop.wait() => false,
    }
}

/// Runs `work` on the current arbiter and returns the handle that stops it, for `start`.
pub fn spawn_stoppable(work: impl Future<Output = ()> + 'static) -> AbortHandle {
    actix_rt::spawn(work).abort_handle()
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    /// One Lease in memory, with a revision guarding updates as storage does.
    #[derive(Default)]
    struct Store {
        lease: Option<(LeaderElectionRecord, u64)>,
        /// Holders whose writes fail, as a replica cut off from storage.
        unreachable: Vec<String>,
    }

    struct MemoryLock {
        store: Arc<Mutex<Store>>,
        identity: String,
        revision: u64,
    }

    /// The store, unless `identity` is cut off from it.
    fn reachable<'a>(store: &'a Mutex<Store>, identity: &str) -> Result<std::sync::MutexGuard<'a, Store>, ApiError> {
        let store = store.lock().unwrap();
        if store.unreachable.iter().any(|u| u == identity) {
            return Err(ApiError::unavailable("storage is unreachable"));
        }
        Ok(store)
    }

    #[async_trait]
    impl LeaseLock for MemoryLock {
        async fn get(&mut self) -> Result<Option<LeaderElectionRecord>, ApiError> {
            let store = reachable(&self.store, &self.identity)?;
            let lease = store.lease.clone();
            drop(store);
            Ok(lease.map(|(record, revision)| {
                self.revision = revision;
                record
            }))
        }

        async fn create(&mut self, record: &LeaderElectionRecord) -> Result<(), ApiError> {
            let mut store = reachable(&self.store, &self.identity)?;
            if store.lease.is_some() {
                return Err(ApiError::already_exists("coordination.k8s.io", "leases", LEASE_NAME));
            }
            store.lease = Some((record.clone(), 1));
            self.revision = 1;
            Ok(())
        }

        async fn update(&mut self, record: &LeaderElectionRecord) -> Result<(), ApiError> {
            let mut store = reachable(&self.store, &self.identity)?;
            let Some((_, revision)) = store.lease.as_ref() else {
                return Err(ApiError::not_found("coordination.k8s.io", "leases", LEASE_NAME));
            };
            if *revision != self.revision {
                return Err(ApiError::conflict("coordination.k8s.io", "leases", LEASE_NAME, "stale"));
            }
            let next = revision + 1;
            store.lease = Some((record.clone(), next));
            self.revision = next;
            Ok(())
        }

        fn describe(&self) -> String {
            format!("{LEASE_NAMESPACE}/{LEASE_NAME}")
        }
    }

    /// A running candidate: how many terms it started and how many of their tasks still run.
    struct Candidate {
        identity: String,
        terms: Arc<AtomicUsize>,
        running: Arc<AtomicUsize>,
        stop: Signal,
        task: tokio::task::JoinHandle<()>,
    }

    /// Counts a task as running until it is aborted.
    struct Running(Arc<AtomicUsize>);

    impl Drop for Running {
        fn drop(&mut self) {
            self.0.fetch_sub(1, Ordering::SeqCst);
        }
    }

    fn candidate(store: &Arc<Mutex<Store>>, name: &str) -> Candidate {
        let mut config =
            ElectionConfig::controllers(Duration::from_secs(15), Duration::from_secs(10), Duration::from_secs(2));
        config.identity = format!("{name}_uid");
        let lock = MemoryLock { store: store.clone(), identity: config.identity.clone(), revision: 0 };
        let (terms, running) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let stop = Signal::new("Stop");
        let start = {
            let (terms, running) = (terms.clone(), running.clone());
            move || {
                terms.fetch_add(1, Ordering::SeqCst);
                running.fetch_add(1, Ordering::SeqCst);
                let guard = Running(running.clone());
                vec![spawn_stoppable(async move {
                    let _guard = guard;
                    std::future::pending::<()>().await
                })]
            }
        };
        let task = actix_rt::spawn(LeaderElector::new(config.clone(), lock).run(start, stop.clone()));
        Candidate { identity: config.identity, terms, running, stop, task }
    }

    fn holder(store: &Arc<Mutex<Store>>) -> LeaderElectionRecord {
        store.lock().unwrap().lease.clone().expect("a lease").0
    }

    async fn settle(seconds: u64) {
        tokio::time::sleep(Duration::from_secs(seconds)).await;
    }

    #[actix_rt::test]
    async fn one_candidate_leads_and_a_dead_leader_is_replaced_after_the_lease_duration() {
        tokio::time::pause();
        let store = Arc::new(Mutex::new(Store::default()));
        let a = candidate(&store, "a");
        settle(1).await;
        let b = candidate(&store, "b");
        settle(20).await;
        assert_eq!(holder(&store).holder_identity, a.identity);
        assert_eq!(holder(&store).leader_transitions, 0);
        assert_eq!((a.running.load(Ordering::SeqCst), b.terms.load(Ordering::SeqCst)), (1, 0));

        // The leader dies without a word: b takes over once the record has not changed for a
        // lease duration by b's clock, plus at most one jittered retry.
        a.task.abort();
        let renewed = holder(&store).renew_time;
        let mut waited = 0;
        while holder(&store).holder_identity == a.identity {
            settle(1).await;
            waited += 1;
            assert!(waited <= 15 + 5 + 1, "b took over after {waited}s");
        }
        assert!(waited >= 15 - 2 - 1, "not before the lease expired: {waited}s after the last renewal {renewed}");
        assert_eq!(holder(&store).holder_identity, b.identity);
        assert_eq!(holder(&store).leader_transitions, 1, "a takeover is a transition");
        assert_eq!(b.running.load(Ordering::SeqCst), 1);
    }

    #[actix_rt::test]
    async fn stopping_releases_the_lease_and_another_takes_it_at_its_next_try() {
        tokio::time::pause();
        let store = Arc::new(Mutex::new(Store::default()));
        let a = candidate(&store, "a");
        settle(1).await;
        let b = candidate(&store, "b");
        settle(10).await;
        a.stop.signal();
        // The release is one write, without waiting: no time needs to pass.
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
        assert!(a.task.is_finished(), "the elector returns once released");
        assert_eq!(a.running.load(Ordering::SeqCst), 0, "its controllers stopped");
        let released = holder(&store);
        assert_eq!((released.holder_identity.as_str(), released.lease_duration_seconds), ("", 1));
        settle(5).await;
        assert_eq!(holder(&store).holder_identity, b.identity, "within a jittered retry period");
        assert_eq!(holder(&store).leader_transitions, 1);
    }

    #[actix_rt::test]
    async fn a_leader_that_cannot_renew_stops_its_controllers_after_the_renew_deadline() {
        tokio::time::pause();
        let store = Arc::new(Mutex::new(Store::default()));
        let a = candidate(&store, "a");
        settle(3).await;
        assert_eq!(a.running.load(Ordering::SeqCst), 1);
        store.lock().unwrap().unreachable.push(a.identity.clone());
        settle(2 + 10 + 1).await;
        assert_eq!(a.running.load(Ordering::SeqCst), 0, "stopped once the renew deadline passed");
        assert!(!a.task.is_finished(), "still campaigning");
        // Reachable again: it leads again (a new term), since nobody else took the Lease.
        store.lock().unwrap().unreachable.clear();
        settle(10).await;
        assert_eq!((a.terms.load(Ordering::SeqCst), a.running.load(Ordering::SeqCst)), (2, 1));
    }

    #[test]
    fn timings_are_checked_as_client_go_checks_them() {
        let config = |lease, renew, retry| {
            ElectionConfig::controllers(
                Duration::from_secs(lease),
                Duration::from_secs(renew),
                Duration::from_secs(retry),
            )
        };
        assert!(config(15, 10, 2).validate().is_ok());
        assert!(config(10, 10, 2).validate().is_err());
        assert!(config(15, 2, 2).validate().is_err());
        assert!(config(15, 10, 0).validate().is_err());
        let identity = holder_identity();
        let (host, uid) = identity.rsplit_once('_').unwrap();
        assert!(!host.is_empty() && uuid::Uuid::parse_str(uid).is_ok(), "{identity}");
    }

    #[test]
    fn a_record_round_trips_through_a_lease_spec() {
        let record = LeaderElectionRecord {
            holder_identity: "h_1".into(),
            lease_duration_seconds: 15,
            acquire_time: "2024-01-01T00:00:00.000000Z".into(),
            renew_time: "2024-01-01T00:00:02.000000Z".into(),
            leader_transitions: 3,
        };
        let lease = json!({"metadata": {"name": LEASE_NAME}, "spec": record.to_spec()});
        assert_eq!(LeaderElectionRecord::from_lease(&lease), record);
    }
}
