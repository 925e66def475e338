//! The flow-control stage: one actor holding every priority level's queue set.
//!
//! A [`StartRequest`] is enqueued in its level's queue set. Dispatched at once, it is answered
//! at once; queued, it is answered when fair queuing dispatches it (or with 429 when its queue
//! deadline passes); turned away, it gets 429 with `Retry-After`. The grant's [`SeatGuard`]
//! sends the release over an unbounded channel the actor drains as a stream, so a release
//! never waits for a mailbox slot and is never lost. A waiting request whose caller goes away
//! (client gone, deadline) leaves its queue the same way.
//!
//! Every second the actor re-reads the FlowSchemas and PriorityLevelConfigurations from the
//! cache and applies a change live; every ten seconds it moves seats between levels by
//! kube's borrowing rule.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use actix::{Actor, ActorFutureExt, AsyncContext, Context, StreamHandler, WrapFuture};
use actors::{Deadline, StageHandler, Work};
use apimachinery::error::{ApiError, Reason};
use apimachinery::lookup::ObjectLookup;
use apimachinery::messages::{SeatGrant, SeatGuard, SeatRelease, SeatTicket, StartRequest};
use apimachinery::object::ObjectExt;
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use crate::config::{Compiled, SharedConfig};
use crate::exempt::ExemptSeats;
use crate::limits::{self, LevelBorrowing, LevelShares};
use crate::metrics::{
    CURRENT_EXECUTING_REQUESTS, CURRENT_EXECUTING_SEATS, CURRENT_INQUEUE_REQUESTS, CURRENT_INQUEUE_SEATS,
    CURRENT_LIMIT_SEATS, DISPATCHED_REQUESTS_TOTAL, LOWER_LIMIT_SEATS, NOMINAL_LIMIT_SEATS, REJECTED_REQUESTS_TOTAL,
    REQUEST_CONCURRENCY_LIMIT, REQUEST_EXECUTION_SECONDS, REQUEST_WAIT_DURATION_SECONDS, UPPER_LIMIT_SEATS,
};
use crate::queueset::{NewRequest, Outcome, QueueSet, QueueSetConfig, QueueSetStats, Queuing, RejectReason, RequestId};
use crate::{estimate, shuffle};

/// The group the configuration objects belong to.
const GROUP: &str = "flowcontrol.apiserver.k8s.io";
/// How often the stored configuration is re-read.
const REFRESH: Duration = Duration::from_secs(1);
/// The longest the configuration goes unread while the caches show no change.
const FULL_READ: Duration = Duration::from_secs(60);
/// kube's borrowing adjustment period.
const BORROWING: Duration = Duration::from_secs(10);
/// How often queue deadlines and lingering seats are checked (and the debug view refreshed)
/// while a level has either.
const TICK: Duration = Duration::from_millis(20);
/// How often the exempt levels' seats are sampled (and the view refreshed) while no level has
/// a timer: an idle server wakes 10 times a second for it rather than 50.
const IDLE_TICK: Duration = Duration::from_millis(100);
/// The longest a request waits in a queue (kube: a quarter of the request timeout, at most a
/// minute).
const MAX_QUEUE_WAIT: Duration = Duration::from_secs(60);

/// One level's state.
struct LevelState {
    uid: String,
    exempt: bool,
    queues: QueueSet,
    borrowing: LevelBorrowing,
    /// The spec it was built from, to tell whether a refresh changed it.
    spec: Value,
}

/// A queued request's caller and what metrics need of it.
struct Waiter {
    reply: oneshot::Sender<Result<SeatGrant, ApiError>>,
    flow_schema: String,
    enqueued: Instant,
    seats: u32,
}

/// An executing request, for the execution-time metric.
struct Executing {
    flow_schema: String,
    started: Instant,
}

/// Per-level figures kube's debug dumps show, refreshed by the actor.
#[derive(Clone, Debug)]
pub struct LevelView {
    /// The level.
    pub name: String,
    /// Its current concurrency limit.
    pub current_limit: u32,
    /// Its nominal limit.
    pub nominal_limit: u32,
    /// The queue set's figures.
    pub stats: QueueSetStats,
}

/// What the stage shows without being asked (a saturated actor must not be asked to show its
/// saturation): the levels as of the last tick.
#[derive(Clone, Default)]
pub struct FlowControlView(Arc<RwLock<Vec<LevelView>>>);

impl FlowControlView {
    /// The levels, by name.
    pub fn levels(&self) -> Vec<LevelView> {
        self.0.read().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }

    /// kube's `/debug/api_priority_and_fairness/dump_priority_levels`.
    pub fn dump_priority_levels(&self) -> String {
        let mut out = String::from(
            "PriorityLevelName, ActiveQueues, IsIdle, IsQuiescing, WaitingRequests, ExecutingRequests, \
             DispatchedRequests, RejectedRequests, TimedoutRequests, CancelledRequests\n",
        );
        for l in self.levels() {
            let s = &l.stats;
            let active = s.queues.iter().filter(|q| q.waiting > 0 || q.executing > 0).count();
            let rejected = s.rejected.queue_full + s.rejected.concurrency_limit + s.rejected.time_out;
            out.push_str(&format!(
                "{}, {active}, {}, false, {}, {}, {}, {rejected}, {}, 0\n",
                l.name,
                s.waiting == 0 && s.executing == 0,
                s.waiting,
                s.executing,
                s.dispatched,
                s.rejected.time_out
            ));
        }
        out
    }

    /// kube's `/debug/api_priority_and_fairness/dump_queues`.
    pub fn dump_queues(&self) -> String {
        let mut out = String::from(
            "PriorityLevelName, Index, PendingRequests, ExecutingRequests, SeatsInUse, NextDispatchR, InitialSeatsSum\n",
        );
        for l in self.levels() {
            for (i, q) in l.stats.queues.iter().enumerate() {
                out.push_str(&format!(
                    "{}, {i}, {}, {}, {}, {:.8}ss, {}\n",
                    l.name, q.waiting, q.executing, q.seats_in_use, q.next_dispatch_r, q.seats_waiting
                ));
            }
        }
        out
    }
}

/// The APF stage actor.
pub struct FlowControlActor {
    config: SharedConfig,
    objects: Option<Arc<dyn ObjectLookup>>,
    server_limit: u32,
    levels: HashMap<String, LevelState>,
    waiting: HashMap<SeatTicket, Waiter>,
    executing: HashMap<SeatTicket, Executing>,
    /// The guards' side of the release channel.
    release_tx: mpsc::UnboundedSender<SeatRelease>,
    /// Taken when the actor starts and drained as a stream.
    release_rx: Option<mpsc::UnboundedReceiver<SeatRelease>>,
    view: FlowControlView,
    /// Whether anything changed since the view was refreshed.
    dirty: bool,
    /// Seats of exempt requests, which pass the actor by: sampled every tick.
    exempt_seats: ExemptSeats,
    /// The seat gauges of each level, registered once: a publish then stores numbers rather
    /// than looking each series up by its labels (it runs up to 50 times a second).
    level_gauges: HashMap<String, [metrics::Gauge; 2]>,
    /// The request gauges of each (level, schema) pair published so far (kept, at zero once
    /// idle), registered once.
    series: HashMap<(String, String), [metrics::Gauge; 2]>,
    /// Each configuration object's uid and resourceVersion at the last refresh: a refresh
    /// that reads the same compiles nothing.
    read_last: Vec<(String, String)>,
    /// The caches' change marks of both resources when they were last read.
    read_marks: (Option<(u64, u64)>, Instant),
    /// When the next tick is due, and its timer.
    tick_at: Option<(Instant, actix::SpawnHandle)>,
}

impl FlowControlActor {
    /// A stage with `server_limit` seats (`--max-requests-inflight` +
    /// `--max-mutating-requests-inflight`), classifying through `config`, which it refreshes
    /// from `objects` (none: kube's bootstrap configuration for good).
    pub fn new(server_limit: u32, config: SharedConfig, objects: Option<Arc<dyn ObjectLookup>>) -> Self {
        let (release_tx, release_rx) = mpsc::unbounded_channel();
        let mut actor = FlowControlActor {
            config,
            objects,
            server_limit,
            levels: HashMap::new(),
            waiting: HashMap::new(),
            executing: HashMap::new(),
            release_tx,
            release_rx: Some(release_rx),
            view: FlowControlView::default(),
            dirty: true,
            exempt_seats: ExemptSeats::default(),
            level_gauges: HashMap::new(),
            series: HashMap::new(),
            read_last: Vec::new(),
            read_marks: (None, Instant::now()),
            tick_at: None,
        };
        let current = actor.config.current();
        actor.apply(&current, Instant::now());
        actor
    }

    /// What the stage shows of itself.
    pub fn view(&self) -> FlowControlView {
        self.view.clone()
    }

    /// Where the gateway counts the exempt requests it lets through without asking.
    pub fn exempt_seats(&self) -> ExemptSeats {
        self.exempt_seats.clone()
    }

    /// Builds, reconfigures or drops queue sets for the levels of `compiled`.
    fn apply(&mut self, compiled: &Compiled, now: Instant) {
        let mut names: Vec<&String> = compiled.levels.keys().collect();
        names.sort();
        let shares: Vec<LevelShares> =
            names.iter().map(|n| LevelShares::from_spec(&compiled.levels[*n].spec)).collect();
        let nominal = limits::nominal_limits(self.server_limit, &shares);
        for (name, limits) in names.iter().zip(nominal) {
            let level = &compiled.levels[*name];
            let queuing = queuing_of(&level.spec);
            match self.levels.get_mut(*name) {
                Some(state) if state.spec == level.spec && state.borrowing.limits == limits => {
                    state.uid = level.uid.clone();
                }
                Some(state) => {
                    state.borrowing = LevelBorrowing::new(limits);
                    state.spec = level.spec.clone();
                    state.uid = level.uid.clone();
                    state.exempt = level.exempt();
                    let config = QueueSetConfig { queuing, concurrency_limit: state.borrowing.current_limit };
                    match state.queues.set_config(now, config) {
                        Ok(dispatched) => {
                            let name = name.to_string();
                            self.grant_all(&name, dispatched, now);
                        }
                        Err(e) => tracing::warn!(level = %name, error = %e, "priority level configuration not applied"),
                    }
                }
                None => {
                    let borrowing = LevelBorrowing::new(limits);
                    let config = QueueSetConfig { queuing, concurrency_limit: borrowing.current_limit };
                    match QueueSet::new(now, config) {
                        Ok(queues) => {
                            let state = LevelState {
                                uid: level.uid.clone(),
                                exempt: level.exempt(),
                                queues,
                                borrowing,
                                spec: level.spec.clone(),
                            };
                            self.levels.insert(name.to_string(), state);
                        }
                        Err(e) => tracing::warn!(level = %name, error = %e, "priority level not served"),
                    }
                }
            }
        }
        // A level no longer configured goes once nothing waits or runs in it.
        self.levels.retain(|name, state| compiled.levels.contains_key(name) || !state.queues.is_idle());
        for (name, state) in &self.levels {
            let l = state.borrowing.limits;
            metrics::gauge!(NOMINAL_LIMIT_SEATS, "priority_level" => name.clone()).set(f64::from(l.nominal));
            metrics::gauge!(LOWER_LIMIT_SEATS, "priority_level" => name.clone()).set(f64::from(l.min()));
            metrics::gauge!(UPPER_LIMIT_SEATS, "priority_level" => name.clone()).set(f64::from(l.max()));
            publish_limit(name, state.borrowing.current_limit);
        }
        self.dirty = true;
    }

    /// Hands seats to every request `dispatched` in `level`.
    fn grant_all(&mut self, level: &str, dispatched: Vec<RequestId>, now: Instant) {
        for id in dispatched {
            let ticket = SeatTicket { level: level.to_string(), id: id.value() };
            let Some(waiter) = self.waiting.remove(&ticket) else { continue };
            let waited = now.saturating_duration_since(waiter.enqueued);
            metrics::histogram!(REQUEST_WAIT_DURATION_SECONDS,
                "execute" => "true", "flow_schema" => waiter.flow_schema.clone(), "priority_level" => level.to_string())
            .record(waited.as_secs_f64());
            self.started(&ticket, &waiter.flow_schema, now);
            let grant = self.grant(ticket, waiter.seats);
            // A caller gone meanwhile drops the grant, whose guard releases the seats.
            let _ = waiter.reply.send(Ok(grant));
        }
        self.dirty = true;
    }

    fn started(&mut self, ticket: &SeatTicket, flow_schema: &str, now: Instant) {
        metrics::counter!(DISPATCHED_REQUESTS_TOTAL,
            "flow_schema" => flow_schema.to_string(), "priority_level" => ticket.level.clone())
        .increment(1);
        self.executing.insert(ticket.clone(), Executing { flow_schema: flow_schema.to_string(), started: now });
    }

    fn grant(&self, ticket: SeatTicket, seats: u32) -> SeatGrant {
        SeatGrant { seats, guard: Some(SeatGuard::new(ticket, self.release_tx.clone())) }
    }

    fn release(&mut self, release: SeatRelease, now: Instant) {
        let (ticket, finished) = match release {
            SeatRelease::Finished(t) => (t, true),
            SeatRelease::Cancelled(t) => (t, false),
        };
        let Some(level) = self.levels.get_mut(&ticket.level) else { return };
        let id = RequestId::from_value(ticket.id);
        let dispatched = if finished {
            if let Some(e) = self.executing.remove(&ticket) {
                metrics::histogram!(REQUEST_EXECUTION_SECONDS,
                    "flow_schema" => e.flow_schema, "priority_level" => ticket.level.clone(), "type" => "regular")
                .record(now.saturating_duration_since(e.started).as_secs_f64());
            }
            level.queues.finish(now, id)
        } else {
            self.waiting.remove(&ticket);
            level.queues.cancel(now, id).unwrap_or_default()
        };
        let name = ticket.level.clone();
        self.grant_all(&name, dispatched, now);
    }

    /// Rejects timed-out waiters and dispatches what the removals and releases allow.
    /// Arms the next tick: in [`TICK`] while a level has a timer or the view is behind, else
    /// in [`IDLE_TICK`]; an armed tick due later than that is moved up.
    fn schedule_tick(&mut self, ctx: &mut Context<Self>) {
        let busy = self.dirty || self.levels.values().any(|l| l.queues.has_timers());
        let wait = if busy { TICK } else { IDLE_TICK };
        let at = Instant::now() + wait;
        if let Some((due, handle)) = self.tick_at {
            if due <= at {
                return;
            }
            ctx.cancel_future(handle);
        }
        let handle = ctx.run_later(wait, |actor, ctx| {
            actor.tick_at = None;
            actor.tick(Instant::now());
            actor.schedule_tick(ctx);
        });
        self.tick_at = Some((at, handle));
    }

    fn tick(&mut self, now: Instant) {
        // An idle server's levels have no timers: the tick (50 a second) then costs a look.
        let names: Vec<String> =
            self.levels.iter().filter(|(_, l)| l.exempt || l.queues.has_timers()).map(|(n, _)| n.clone()).collect();
        for name in names {
            let Some(level) = self.levels.get_mut(&name) else { continue };
            if level.exempt {
                let seats = self.exempt_seats.in_use(&name);
                self.dirty |= level.queues.set_seats_outside(now, seats);
            }
            let expired = level.queues.tick(now);
            for id in expired.timed_out {
                let ticket = SeatTicket { level: name.clone(), id: id.value() };
                if let Some(waiter) = self.waiting.remove(&ticket) {
                    metrics::histogram!(REQUEST_WAIT_DURATION_SECONDS,
                        "execute" => "false", "flow_schema" => waiter.flow_schema.clone(), "priority_level" => name.clone())
                    .record(now.saturating_duration_since(waiter.enqueued).as_secs_f64());
                    rejected(&name, &waiter.flow_schema, RejectReason::TimeOut);
                    let _ = waiter.reply.send(Err(too_many_requests(&name)));
                }
                self.dirty = true;
            }
            self.grant_all(&name, expired.dispatched, now);
        }
        if self.dirty {
            self.dirty = false;
            self.publish();
        }
    }

    /// Refreshes the gauges and the debug view.
    fn publish(&mut self) {
        let mut views: Vec<LevelView> = self
            .levels
            .iter()
            .map(|(name, l)| LevelView {
                name: name.clone(),
                current_limit: l.borrowing.current_limit,
                nominal_limit: l.borrowing.limits.nominal,
                stats: l.queues.stats(),
            })
            .collect();
        views.sort_by(|a, b| a.name.cmp(&b.name));
        let mut inqueue: HashMap<(&str, &str), usize> = HashMap::new();
        for (t, w) in &self.waiting {
            *inqueue.entry((t.level.as_str(), w.flow_schema.as_str())).or_default() += 1;
        }
        let mut running: HashMap<(&str, &str), usize> = HashMap::new();
        for (t, e) in &self.executing {
            *running.entry((t.level.as_str(), e.flow_schema.as_str())).or_default() += 1;
        }
        for v in &views {
            let [executing_seats, inqueue_seats] =
                self.level_gauges.entry(v.name.clone()).or_insert_with_key(|level| {
                    [
                        metrics::gauge!(CURRENT_EXECUTING_SEATS, "priority_level" => level.clone()),
                        metrics::gauge!(CURRENT_INQUEUE_SEATS, "priority_level" => level.clone()),
                    ]
                });
            executing_seats.set(v.stats.seats_in_use as f64);
            inqueue_seats.set(v.stats.seats_waiting as f64);
        }
        // Every pair seen keeps its series, at zero once idle.
        for (level, schema) in inqueue.keys().chain(running.keys()) {
            self.series.entry((level.to_string(), schema.to_string())).or_insert_with_key(|(level, schema)| {
                [
                    metrics::gauge!(CURRENT_INQUEUE_REQUESTS,
                        "flow_schema" => schema.clone(), "priority_level" => level.clone()),
                    metrics::gauge!(CURRENT_EXECUTING_REQUESTS,
                        "flow_schema" => schema.clone(), "priority_level" => level.clone()),
                ]
            });
        }
        for ((level, schema), [inqueue_gauge, running_gauge]) in &self.series {
            let key = (level.as_str(), schema.as_str());
            inqueue_gauge.set(inqueue.get(&key).copied().unwrap_or(0) as f64);
            running_gauge.set(running.get(&key).copied().unwrap_or(0) as f64);
        }
        *self.view.0.write().unwrap_or_else(std::sync::PoisonError::into_inner) = views;
    }

    /// kube's borrowing: seats move from levels that lend to levels that need them.
    fn adjust_borrowing(&mut self, now: Instant) {
        let mut names: Vec<String> = self.levels.keys().cloned().collect();
        names.sort();
        let mut demand = Vec::with_capacity(names.len());
        for n in &names {
            if let Some(l) = self.levels.get_mut(n) {
                demand.push(l.queues.take_seat_demand(now));
            }
        }
        let mut borrowing: Vec<LevelBorrowing> = names.iter().map(|n| self.levels[n].borrowing).collect();
        if let Err(e) = limits::adjust_borrowing(&mut borrowing, &demand) {
            tracing::warn!(error = %e, "APF borrowing not adjusted");
            return;
        }
        for (name, b) in names.iter().zip(borrowing) {
            let Some(level) = self.levels.get_mut(name) else { continue };
            level.borrowing = b;
            let dispatched = level.queues.set_concurrency_limit(now, b.current_limit);
            publish_limit(name, b.current_limit);
            self.grant_all(name, dispatched, now);
        }
    }

    fn refresh(&mut self, ctx: &mut Context<Self>) {
        let Some(objects) = self.objects.clone() else { return };
        // Nothing changed in the cache since the last read: the same objects would be read.
        // A read a minute still happens, in case a cache was replaced and counts afresh.
        let marks = objects.changes(GROUP, "flowschemas").zip(objects.changes(GROUP, "prioritylevelconfigurations"));
        let now = Instant::now();
        if marks.is_some() && marks == self.read_marks.0 && now < self.read_marks.1 + FULL_READ {
            return;
        }
        // A failed read keeps the configuration in force: falling back to the bootstrap objects
        // would swap every stored uid (and any operator's change) for a second.
        let read = async move {
            let schemas = objects.list(GROUP, "flowschemas", "", "").await.ok()?;
            let levels = objects.list(GROUP, "prioritylevelconfigurations", "", "").await.ok()?;
            Some((schemas, levels))
        };
        ctx.spawn(read.into_actor(self).map(move |read, actor, _| {
            let Some((schemas, levels)) = read else { return };
            actor.read_marks = (marks, now);
            let versions: Vec<(String, String)> = schemas
                .iter()
                .chain(&levels)
                .map(|o| (o.meta_str("uid").to_string(), o.resource_version().to_string()))
                .collect();
            if versions == actor.read_last {
                return;
            }
            actor.read_last = versions;
            let compiled = Compiled::new(schemas, levels);
            if compiled.fingerprint != actor.config.current().fingerprint {
                actor.apply(&compiled, Instant::now());
                actor.config.set(compiled);
            }
        }));
    }
}

fn publish_limit(level: &str, limit: u32) {
    metrics::gauge!(CURRENT_LIMIT_SEATS, "priority_level" => level.to_string()).set(f64::from(limit));
    metrics::gauge!(REQUEST_CONCURRENCY_LIMIT, "priority_level" => level.to_string()).set(f64::from(limit));
}

fn rejected(level: &str, schema: &str, reason: RejectReason) {
    metrics::counter!(REJECTED_REQUESTS_TOTAL,
        "flow_schema" => schema.to_string(), "priority_level" => level.to_string(), "reason" => reason.as_str())
    .increment(1);
}

/// The queuing a level's spec asks for.
fn queuing_of(spec: &Value) -> Queuing {
    if spec.get("type").and_then(Value::as_str) == Some("Exempt") {
        return Queuing::Exempt;
    }
    let response = spec.pointer("/limited/limitResponse").unwrap_or(&Value::Null);
    if response.get("type").and_then(Value::as_str) != Some("Queue") {
        return Queuing::Reject;
    }
    let q = response.get("queuing").unwrap_or(&Value::Null);
    let int = |k: &str, d: u32| q.get(k).and_then(Value::as_u64).map_or(d, |v| v.min(u64::from(u32::MAX)) as u32);
    Queuing::Queue {
        queues: int("queues", 64),
        hand_size: int("handSize", 8),
        queue_length_limit: int("queueLengthLimit", 50),
    }
}

/// kube's APF rejection: 429, `Retry-After`, kube's message; the details name the priority
/// level, so a client (and an operator reading the Status) knows which one is saturated.
pub fn too_many_requests(level: &str) -> ApiError {
    let mut e = ApiError::new(Reason::TooManyRequests, "Too many requests, please try again later.");
    e.retry_after_seconds = Some(1);
    e.group = Some(GROUP.into());
    e.kind = Some("prioritylevelconfigurations".into());
    e.name = Some(level.to_string());
    e
}

impl Actor for FlowControlActor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        if let Some(rx) = self.release_rx.take() {
            ctx.add_stream(tokio_stream::wrappers::UnboundedReceiverStream::new(rx));
        }
        self.schedule_tick(ctx);
        ctx.run_interval(BORROWING, |actor, _| actor.adjust_borrowing(Instant::now()));
        self.refresh(ctx);
        ctx.run_interval(REFRESH, |actor, ctx| actor.refresh(ctx));
    }
}

impl StreamHandler<SeatRelease> for FlowControlActor {
    fn handle(&mut self, release: SeatRelease, ctx: &mut Context<Self>) {
        self.release(release, Instant::now());
        // A released seat may linger, a timer of its level's; the view is behind.
        self.schedule_tick(ctx);
    }

    /// The actor holds a sender itself, so the stream never ends while it lives.
    fn finished(&mut self, _: &mut Context<Self>) {}
}

/// Leaves its queue when the caller stops waiting before its grant arrived.
struct CancelOnDrop {
    ticket: Option<SeatTicket>,
    release: mpsc::UnboundedSender<SeatRelease>,
}

impl CancelOnDrop {
    /// The grant (or the refusal) arrived: nothing to cancel.
    fn disarm(&mut self) {
        self.ticket = None;
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let Some(ticket) = self.ticket.take() {
            let _ = self.release.send(SeatRelease::Cancelled(ticket));
        }
    }
}

impl StageHandler<StartRequest> for FlowControlActor {
    fn handle(
        &mut self,
        msg: StartRequest,
        deadline: Deadline,
        ctx: &mut Context<Self>,
    ) -> Work<Self, Result<SeatGrant, ApiError>> {
        let now = Instant::now();
        let class = &msg.classification;
        let level_name = if self.levels.contains_key(&class.priority_level) {
            class.priority_level.clone()
        } else {
            "catch-all".to_string()
        };
        let Some(level) = self.levels.get_mut(&level_name) else {
            return Work::Done(Err(too_many_requests(&level_name)));
        };
        if level.exempt {
            return Work::Done(Ok(SeatGrant { seats: 1, guard: None }));
        }
        let wait = deadline.remaining().map_or(MAX_QUEUE_WAIT / 4, |left| (left / 4).min(MAX_QUEUE_WAIT));
        let queues = match level.queues.config().queuing {
            Queuing::Queue { queues, .. } => queues,
            _ => 0,
        };
        let flow_hash = if queues > 1 { shuffle::flow_hash(&class.flow_schema, &class.flow_distinguisher) } else { 0 };
        let hand_size = match level.queues.config().queuing {
            Queuing::Queue { hand_size, .. } => Some(hand_size),
            _ => None,
        };
        let work = estimate::estimate(msg.work, estimate::max_seats(level.borrowing.limits.nominal, hand_size));
        let seats = work.max_seats();
        let request = NewRequest { work, flow_hash, deadline: now + wait };
        let enqueued = level.queues.enqueue(now, request);
        self.dirty = true;
        let schema = class.flow_schema.clone();
        let mut others = enqueued.dispatched;
        let work = match enqueued.outcome {
            Outcome::Dispatched(id) => {
                others.retain(|d| *d != id);
                let ticket = SeatTicket { level: level_name.clone(), id: id.value() };
                self.started(&ticket, &schema, now);
                metrics::histogram!(REQUEST_WAIT_DURATION_SECONDS,
                    "execute" => "true", "flow_schema" => schema.clone(), "priority_level" => level_name.clone())
                .record(0.0);
                Work::Done(Ok(self.grant(ticket, seats)))
            }
            Outcome::Queued(id) => {
                let ticket = SeatTicket { level: level_name.clone(), id: id.value() };
                let (reply, answer) = oneshot::channel();
                self.waiting.insert(ticket.clone(), Waiter { reply, flow_schema: schema, enqueued: now, seats });
                let mut cancel = CancelOnDrop { ticket: Some(ticket), release: self.release_tx.clone() };
                let level = level_name.clone();
                Work::later(async move {
                    let answer = answer.await;
                    cancel.disarm();
                    answer.unwrap_or_else(|_| Err(too_many_requests(&level)))
                })
            }
            Outcome::Rejected(reason) => {
                rejected(&level_name, &schema, reason);
                Work::Done(Err(too_many_requests(&level_name)))
            }
        };
        self.grant_all(&level_name, others, now);
        // A queued request's deadline is a timer, and the view is behind.
        self.schedule_tick(ctx);
        work
    }
}

actors::stage_handler!(FlowControlActor => StartRequest);

#[cfg(test)]
mod tests {
    use super::*;
    use actors::{ActorDirectory, MailboxSpec, StageArbiter, WhenFull};
    use apimachinery::messages::{Classification, RequestWork};
    use apimachinery::request::{RequestInfo, UserInfo};

    fn start_request(user: &str) -> StartRequest {
        StartRequest {
            user: UserInfo { name: user.into(), ..Default::default() },
            request: RequestInfo::default(),
            classification: Classification {
                flow_schema: "global-default".into(),
                priority_level: "global-default".into(),
                flow_distinguisher: user.into(),
                ..Default::default()
            },
            work: Default::default(),
        }
    }

    /// The stage with 20 seats in all (global-default's share gives it a handful, so a burst
    /// queues), on kube's bootstrap configuration.
    fn start_stage() -> (StageArbiter, actors::StageHandle<StartRequest>, FlowControlView) {
        start_stage_with(20)
    }

    fn start_stage_with(seats: u32) -> (StageArbiter, actors::StageHandle<StartRequest>, FlowControlView) {
        let arbiter = StageArbiter::new("front");
        let spec = MailboxSpec {
            stage: "flowcontrol".into(),
            resource: String::new(),
            capacity: 1000,
            when_full: WhenFull::Shed { wait: Duration::from_secs(5) },
        };
        let actor = FlowControlActor::new(seats, SharedConfig::default(), None);
        let view = actor.view();
        let stage = actors::start(&arbiter, &ActorDirectory::default(), &spec, actor).handle();
        (arbiter, stage, view)
    }

    #[actix::test]
    async fn seats_are_granted_queued_and_released_by_dropping_the_grant() {
        let (_arbiter, stage, view) = start_stage();
        let limit = {
            tokio::time::sleep(Duration::from_millis(50)).await;
            view.levels().into_iter().find(|l| l.name == "global-default").unwrap().current_limit as usize
        };
        assert!(limit >= 1, "global-default has seats");
        let mut grants = Vec::new();
        for _ in 0..limit {
            grants.push(stage.ask(start_request("a"), Deadline::after(Duration::from_secs(10))).await.unwrap());
        }
        // The next one waits until a grant is dropped.
        let waiting = {
            let stage = stage.clone();
            actix::spawn(async move { stage.ask(start_request("b"), Deadline::after(Duration::from_secs(10))).await })
        };
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(!waiting.is_finished(), "no seat is free");
        grants.pop();
        let granted = tokio::time::timeout(Duration::from_secs(2), waiting).await.unwrap().unwrap().unwrap();
        assert_eq!(granted.seats, 1);
        drop(granted);
        drop(grants);
        tokio::time::sleep(Duration::from_millis(100)).await;
        let l = view.levels().into_iter().find(|l| l.name == "global-default").unwrap();
        assert_eq!((l.stats.executing, l.stats.seats_in_use, l.stats.waiting), (0, 0, 0), "every seat came back");
    }

    #[actix::test]
    async fn a_request_that_waits_past_its_queue_deadline_gets_429_naming_the_level() {
        let (_arbiter, stage, view) = start_stage();
        tokio::time::sleep(Duration::from_millis(50)).await;
        let limit = view.levels().into_iter().find(|l| l.name == "global-default").unwrap().current_limit;
        let mut held = Vec::new();
        for _ in 0..limit {
            held.push(stage.ask(start_request("a"), Deadline::after(Duration::from_secs(10))).await.unwrap());
        }
        // A 400 ms request deadline: it may wait a quarter of it, then 429.
        let e = stage.ask(start_request("b"), Deadline::after(Duration::from_millis(400))).await.unwrap_err();
        assert_eq!((e.code, e.message.as_str()), (429, "Too many requests, please try again later."));
        assert_eq!((e.name.as_deref(), e.retry_after_seconds), (Some("global-default"), Some(1)));
        drop(held);
    }

    #[actix::test]
    async fn a_list_holds_a_seat_per_hundred_objects_up_to_its_levels_ceiling() {
        // 600 seats: global-default's nominal 49 seats and hand size 6 give a ceiling of 8.
        let (_arbiter, stage, view) = start_stage_with(600);
        tokio::time::sleep(Duration::from_millis(50)).await;
        let in_use = || view.levels().into_iter().find(|l| l.name == "global-default").unwrap().stats.seats_in_use;
        let ask = |objects| {
            let mut request = start_request("a");
            request.work = RequestWork { objects, watchers: 0 };
            stage.ask(request, Deadline::after(Duration::from_secs(10)))
        };
        let list = ask(550).await.unwrap();
        assert_eq!(list.seats, 6);
        let huge = ask(1_000_000).await.unwrap();
        assert_eq!(huge.seats, 8, "the level's ceiling");
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert_eq!(in_use(), 14);
        drop((list, huge));
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert_eq!(in_use(), 0);
    }

    #[actix::test]
    async fn a_write_watched_by_many_keeps_its_fan_out_seats_a_moment_after_it_ends() {
        let (_arbiter, stage, view) = start_stage_with(600);
        tokio::time::sleep(Duration::from_millis(50)).await;
        let in_use = || view.levels().into_iter().find(|l| l.name == "global-default").unwrap().stats.seats_in_use;
        let mut request = start_request("a");
        request.work = RequestWork { objects: 0, watchers: 50 };
        let write = stage.ask(request, Deadline::after(Duration::from_secs(10))).await.unwrap();
        assert_eq!(write.seats, 5, "one seat per ten watchers");
        drop(write);
        // The seats linger for 5 ms after the end; the actor's tick releases them.
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert_eq!(in_use(), 0, "released once the extra latency passed");
    }
}
