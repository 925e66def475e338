//! One priority level's queue set: fair queuing of requests for a number of seats.
//!
//! This is kube's `fairqueuing/queueset` as a plain data structure. It owns no clock, no timer
//! and no thread: every call takes the current `now`, and the caller (the flow-control actor)
//! arms one timer for [`QueueSet::next_wakeup`] and calls [`QueueSet::expire`] and
//! [`QueueSet::release_due`] when it fires. The same calls with the same instants give the same
//! answers, which is what the tests below rely on.
//!
//! # How a request goes through
//! - [`QueueSet::enqueue`] classifies nothing; it is given the request's [`WorkEstimate`]
//!   (seats), its flow hash ([`crate::shuffle::flow_hash`]) and its queue deadline. In
//!   *Queue* mode it shuffle-shards the request to the queue of its hand holding the least
//!   waiting work, rejects it with `queue-full` when every seat is taken and that queue already
//!   holds `queue_length_limit` requests, queues it otherwise, and then dispatches as much as
//!   fits, which may be the new request itself (at once when seats are free and it is fairly
//!   next). In *Reject* mode it dispatches when the seats fit and otherwise rejects with
//!   `concurrency-limit`. *Exempt* mode dispatches everything and only counts the seats (kube
//!   1.30 counts the exempt level's seats so its demand takes part in borrowing).
//! - Every dispatched id must be ended by exactly one [`QueueSet::finish`]. A request with
//!   `additional_latency` keeps its seats that much longer (kube's allowance for the watch
//!   notifications a write causes); [`QueueSet::release_due`] gives them back.
//! - A waiting request leaves its queue by dispatch, by [`QueueSet::expire`] once its deadline
//!   passes (rejected with `time-out`), or by [`QueueSet::cancel`] when its client went away
//!   (no trace: not counted as a rejection).
//!
//! # Seats cannot leak
//! Ids are issued here, never reused, and every transition is keyed by the id's current phase:
//! `finish` acts only on an executing id and moves it on, so finishing twice (or finishing a
//! rejected, cancelled or unknown id) changes nothing and returns no dispatches; `cancel` acts
//! only on a waiting id; lingering seats are released once, when their instant has come. A
//! dispatched request's seats therefore come back exactly once, whatever order the caller's
//! events arrive in.
//!
//! # Fairness
//! kube's generalisation of fair queuing to requests of several seats: a progress meter R
//! (seat-seconds allotted to each non-empty queue so far) advances at
//! `min(seats asked for by all queues, concurrency limit) / number of non-empty queues` per
//! second, where a queue is non-empty while it has waiting or executing requests and asks for
//! the seats it holds plus the seats of its waiting requests. Each queue's next request
//! starts, virtually, at the queue's `next_dispatch_r` and costs
//! `initial_seats × G + final_seats × additional_latency` seat-seconds, G being the
//! [`ESTIMATED_SERVICE_DURATION`]; dispatch picks the queue whose head finishes first
//! virtually (ties go round-robin from the queue last served). If that head does not fit in
//! the free seats, nothing is dispatched until it does: skipping it would starve wide
//! requests. When a request finishes after S seconds, its queue's `next_dispatch_r` is
//! corrected by `initial_seats × (S − G)`, and a queue's `next_dispatch_r` never falls below
//! its head's arrival R (the anti-windup bound), so an idle flow cannot bank credit.

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::fmt;
use std::time::{Duration, Instant};

use crate::limits::{IntegratorResults, SeatDemandIntegrator};
use crate::shuffle::{Dealer, DealerError};

/// G, the service time every request is first assumed to take; corrected on completion. kube
/// has used 3 ms since 1.24 (earlier it was 60 s): small, so a queue's virtual start mostly
/// reflects measured service times rather than the guess.
pub const ESTIMATED_SERVICE_DURATION: Duration = Duration::from_millis(3);

/// Fixed-point seat-seconds, 10^-8 of a seat-second per unit, as kube's `SeatSeconds`: exact
/// sums and comparisons, so ties between queues break the same way every time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
struct SeatSeconds(u64);

/// Units per seat-second.
const SS_SCALE: f64 = 1e8;

impl SeatSeconds {
    const MAX: Self = Self(u64::MAX);

    /// `seats × d` (kube's `SeatsTimesDuration`); negative products count as 0.
    fn of(seats: f64, d: Duration) -> Self {
        Self(Self::signed(seats, d.as_nanos() as f64).max(0.0) as u64)
    }

    /// `seats × nanos` in units, rounded, with its sign.
    fn signed(seats: f64, nanos: f64) -> f64 {
        (seats * nanos / (1e9 / SS_SCALE)).round()
    }

    fn as_f64(self) -> f64 {
        self.0 as f64 / SS_SCALE
    }

    /// How long `seats` seats take to do this much work (kube's `DurationPerSeat`).
    fn duration_per_seat(self, seats: f64) -> Duration {
        Duration::from_nanos((self.0 as f64 / seats * (1e9 / SS_SCALE)).round() as u64)
    }
}

/// R is wound back by this much when it nears the top of the range (kube's `rDecrement`).
const R_DECREMENT: SeatSeconds = SeatSeconds(u64::MAX / 2);
/// The R at which the epoch advances (kube's `highR`).
const HIGH_R: SeatSeconds = SeatSeconds(R_DECREMENT.0 + R_DECREMENT.0 / 2);

/// How many seats a request occupies and for how long beyond its own execution (kube's
/// `WorkEstimate`, from the work estimator).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WorkEstimate {
    /// Seats while the request executes; at least 1 (0 is taken as 1, kube's estimator never
    /// gives less). A request wider than the concurrency limit waits until nothing else of
    /// the level executes, then runs alone, as in kube.
    pub initial_seats: u32,
    /// Seats a write keeps after it finished, for the watch notifications it causes; at
    /// dispatch kube caps this at the concurrency limit and stretches the latency so the work
    /// stays the same.
    pub final_seats: u32,
    /// How long after finishing the request keeps its seats (zero: released at finish). Like
    /// kube, the request keeps `max(initial_seats, final_seats)` seats until then.
    pub additional_latency: Duration,
}

impl WorkEstimate {
    /// A plain request of `seats` seats, released when it finishes.
    pub fn seats(seats: u32) -> Self {
        Self { initial_seats: seats, final_seats: 0, additional_latency: Duration::ZERO }
    }

    /// The seats held from dispatch until release (kube's `MaxSeats`).
    pub fn max_seats(&self) -> u32 {
        self.initial_seats.max(self.final_seats)
    }
}

/// What the priority level does with requests that cannot execute at once (its
/// `limitResponse`), or `Exempt`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Queuing {
    /// `limitResponse.type: Queue`.
    Queue {
        /// `queues`: the shuffle-sharding deck.
        queues: u32,
        /// `handSize`: how many queues each flow may use.
        hand_size: u32,
        /// `queueLengthLimit`: requests a queue may hold while every seat is taken.
        queue_length_limit: u32,
    },
    /// `limitResponse.type: Reject`: no queues; what does not fit is rejected at once.
    Reject,
    /// The `exempt` level: everything executes at once; seats are only counted.
    Exempt,
}

/// A queue set's configuration: kube's QueuingConfig (from the PriorityLevelConfiguration)
/// and DispatchingConfig (the current concurrency limit, moved by borrowing).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueueSetConfig {
    /// How waiting is done.
    pub queuing: Queuing,
    /// Seats the level may use at once (its current limit, see [`crate::limits`]).
    pub concurrency_limit: u32,
}

/// A configuration the queue set cannot take.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError(pub DealerError);

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the QueueSetConfig implies an invalid shuffle sharding config (DesiredNumQueues is deckSize): {}",
            self.0
        )
    }
}

impl std::error::Error for ConfigError {}

/// A request issued by [`QueueSet::enqueue`]; unique within its queue set, never reused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RequestId(u64);

impl RequestId {
    /// The id as a number, to carry it outside the queue set.
    pub fn value(self) -> u64 {
        self.0
    }

    /// The id a number carried outside stands for (an id the set never issued is unknown to
    /// it: finishing or cancelling it does nothing).
    pub fn from_value(value: u64) -> Self {
        RequestId(value)
    }
}

/// Why a request was turned away, named by kube's `reason` label of
/// `apiserver_flowcontrol_rejected_requests_total`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RejectReason {
    /// Its queue was at the length limit while every seat was taken.
    QueueFull,
    /// A Reject-mode level had no seats for it.
    ConcurrencyLimit,
    /// Its queue deadline passed while it waited.
    TimeOut,
}

impl RejectReason {
    /// kube's label value.
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::QueueFull => "queue-full",
            Self::ConcurrencyLimit => "concurrency-limit",
            Self::TimeOut => "time-out",
        }
    }
}

/// A request asking for seats.
#[derive(Clone, Copy, Debug)]
pub struct NewRequest {
    /// Its seats.
    pub work: WorkEstimate,
    /// Its flow's hash ([`crate::shuffle::flow_hash`]); only Queue mode reads it.
    pub flow_hash: u64,
    /// When it stops waiting and is rejected with `time-out` (kube: a quarter of the request's
    /// timeout, at most a minute).
    pub deadline: Instant,
}

/// What became of the new request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// It executes now; call [`QueueSet::finish`] once when it is done.
    Dispatched(RequestId),
    /// It waits in a queue; it will appear in the `dispatched` list of a later call, or in
    /// [`Expired::timed_out`], unless cancelled.
    Queued(RequestId),
    /// It was turned away (answer 429); it holds nothing.
    Rejected(RejectReason),
}

/// The answer to [`QueueSet::enqueue`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Enqueued {
    /// The new request's fate.
    pub outcome: Outcome,
    /// Every request this call dispatched, in order, the new one included when it was: grant
    /// their seats.
    pub dispatched: Vec<RequestId>,
}

/// The answer to [`QueueSet::expire`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Expired {
    /// Waiting requests whose deadline passed: they are gone; reject them with `time-out`.
    pub timed_out: Vec<RequestId>,
    /// Requests dispatched because the removals unblocked a queue.
    pub dispatched: Vec<RequestId>,
}

/// Where a live request is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RequestState {
    /// In a queue.
    Waiting,
    /// Dispatched, not yet finished.
    Executing,
    /// Finished, still holding its seats until the instant given.
    Lingering(Instant),
}

/// Per-level rejection counts, by reason.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RejectCounts {
    /// `queue-full`.
    pub queue_full: u64,
    /// `concurrency-limit`.
    pub concurrency_limit: u64,
    /// `time-out`.
    pub time_out: u64,
}

/// One queue's state, for metrics and kube's debug dump.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct QueueStats {
    /// Requests waiting.
    pub waiting: usize,
    /// Seats those requests ask for (their `max_seats`).
    pub seats_waiting: u64,
    /// The queue's virtual start for its next dispatch, in seat-seconds of R.
    pub next_dispatch_r: f64,
    /// Requests dispatched from this queue and not finished.
    pub executing: usize,
    /// Seats held by requests from this queue (lingering ones included).
    pub seats_in_use: u64,
}

/// The whole level, for metrics and kube's debug dump.
#[derive(Clone, Debug, PartialEq)]
pub struct QueueSetStats {
    /// Each queue, by index (during a shrink, the excess queues still draining too).
    pub queues: Vec<QueueStats>,
    /// R, the progress meter, in seat-seconds.
    pub current_r: f64,
    /// Requests waiting.
    pub waiting: usize,
    /// Seats waiting requests ask for.
    pub seats_waiting: u64,
    /// Requests dispatched and not finished.
    pub executing: usize,
    /// Seats held (executing and lingering requests).
    pub seats_in_use: u64,
    /// Requests dispatched since the queue set was made.
    pub dispatched: u64,
    /// Requests rejected since the queue set was made, by reason.
    pub rejected: RejectCounts,
}

/// A live request's bookkeeping.
#[derive(Clone, Debug)]
struct Request {
    /// Its seats; the final seats may be capped at dispatch.
    work: WorkEstimate,
    /// Initial plus final work, fixed at arrival: what its queue is charged at dispatch.
    total_work: SeatSeconds,
    /// The final part alone, kept when the final seats are capped.
    final_work: SeatSeconds,
    /// The queue it went through; `None` when dispatched without queuing (Reject, Exempt).
    queue: Option<usize>,
    /// R at arrival: the anti-windup bound of its queue while it is the head.
    arrival_r: SeatSeconds,
    /// Queue deadline (only meaningful while waiting).
    deadline: Instant,
    /// Seats counted while waiting (`max_seats` before any capping).
    waiting_seats: u32,
    /// Seats held from dispatch to release (`max_seats` after capping).
    held_seats: u32,
    /// Which transitions are open to it: the guard that makes every release happen once.
    phase: Phase,
    /// The service time its queue was charged for it (the estimate at its arrival), which its
    /// completion corrects.
    charged: Duration,
}

/// A live request's phase; a request in none of them is gone from the map.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// In its queue: may be dispatched, time out or be cancelled.
    Waiting,
    /// Holding its seats; `since` measures the service time that corrects its queue.
    Executing { since: Instant },
    /// Finished, holding its seats until `until` for the extra latency.
    Lingering { until: Instant },
}

/// One FIFO queue.
#[derive(Clone, Debug, Default)]
struct Queue {
    /// Waiting requests, oldest first. A deque: dispatch pops the head; the rarer removals from
    /// the middle (time-out, cancel) search it, bounded by the queue length limit.
    waiting: VecDeque<RequestId>,
    /// Σ max_seats of the waiting requests: their share of the seat demand that drives R.
    seats_waiting: u64,
    /// Σ total_work of the waiting requests: what shuffle sharding minimises.
    work_waiting: SeatSeconds,
    /// R at which the queue's next request starts, virtually.
    next_dispatch_r: SeatSeconds,
    /// Dispatched and not finished (lingering ones are not counted, as in kube).
    executing: usize,
    /// Seats held by this queue's executing and lingering requests.
    seats_in_use: u64,
}

impl Queue {
    fn is_empty_and_idle(&self) -> bool {
        self.waiting.is_empty() && self.executing == 0
    }
}

/// One priority level's queues and seats. See the module documentation for the protocol.
#[derive(Debug)]
pub struct QueueSet {
    /// The configuration in force; `concurrency_limit` bounds the seats in use.
    config: QueueSetConfig,
    /// The queue length limit in force; kept from the last Queue configuration while in
    /// Reject or Exempt mode, for the queues still draining.
    queue_length_limit: u32,
    /// Present exactly in Queue mode, valid for `config`.
    dealer: Option<Dealer>,
    /// May hold more queues than configured while the excess ones drain; a queue is removed
    /// when it is empty, idle and holds no seats after a release, as in kube.
    queues: Vec<Queue>,
    /// Every live request: waiting, executing or lingering. Finished and removed ones are gone,
    /// which is what makes a second `finish` a no-op.
    requests: HashMap<RequestId, Request>,
    /// Waiting requests by deadline, so the earliest is at hand for the caller's one timer.
    deadlines: BTreeSet<(Instant, RequestId)>,
    /// Lingering requests by release instant, likewise.
    releases: BTreeSet<(Instant, RequestId)>,
    /// The progress meter R.
    current_r: SeatSeconds,
    /// G: what a request is assumed to take until it finishes. It starts at kube's 3 ms and
    /// follows the level's measured service times (a moving average): with kube's fixed 3 ms,
    /// a backlogged flow whose requests take 50 ms is charged too little at dispatch and takes
    /// several seats in a row ahead of a quiet flow before its completions correct it.
    estimated_service: Duration,
    /// Requests finished, to seed the estimate with the first measurement.
    completions: u64,
    /// The instant R was last brought up to date; later instants only.
    last_real_time: Instant,
    /// The queue last dispatched from; the next scan starts after it.
    robin_index: usize,
    /// Requests shuffle-sharded so far: rotates where the hand is scanned from, so flows with
    /// overlapping hands do not all favour the same queue.
    enqueues: u64,
    /// The last id issued; ids are never reused, so a stale id can never match a new request.
    next_id: u64,
    /// Totals over all queues, kept in step with them so the hot checks need no scan:
    /// requests waiting, the seats they ask for, requests executing, and seats held (lingering
    /// included), the last being what the concurrency limit bounds.
    waiting: usize,
    seats_waiting: u64,
    executing: usize,
    seats_in_use: u64,
    /// Counters since creation, for metrics.
    dispatched: u64,
    rejected: RejectCounts,
    /// Seats held by requests that never came through this queue set: an exempt level's
    /// requests pass the actor by ([`QueueSet::set_seats_outside`]).
    seats_outside: u64,
    /// Seats in use plus seats waiting over time, for the borrowing adjustment.
    seat_demand: SeatDemandIntegrator,
}

impl QueueSet {
    /// A queue set with no requests.
    pub fn new(now: Instant, config: QueueSetConfig) -> Result<Self, ConfigError> {
        let mut qs = Self {
            config,
            queue_length_limit: 0,
            dealer: None,
            queues: Vec::new(),
            requests: HashMap::new(),
            deadlines: BTreeSet::new(),
            releases: BTreeSet::new(),
            current_r: SeatSeconds::default(),
            estimated_service: ESTIMATED_SERVICE_DURATION,
            completions: 0,
            last_real_time: now,
            robin_index: 0,
            enqueues: 0,
            next_id: 0,
            waiting: 0,
            seats_waiting: 0,
            executing: 0,
            seats_in_use: 0,
            dispatched: 0,
            rejected: RejectCounts::default(),
            seats_outside: 0,
            seat_demand: SeatDemandIntegrator::new(now),
        };
        qs.set_config(now, config)?;
        Ok(qs)
    }

    /// The configuration in force.
    pub fn config(&self) -> QueueSetConfig {
        self.config
    }

    /// Changes the configuration live. Waiting requests stay where they are: when there are
    /// fewer queues than before, the excess queues drain (new requests are dealt only among
    /// the configured ones); when the limit rises, waiting requests are dispatched at once and
    /// returned. An invalid configuration changes nothing.
    pub fn set_config(&mut self, now: Instant, config: QueueSetConfig) -> Result<Vec<RequestId>, ConfigError> {
        let dealer = match config.queuing {
            Queuing::Queue { queues, hand_size, .. } => {
                Some(Dealer::new(queues as usize, hand_size as usize).map_err(ConfigError)?)
            }
            Queuing::Reject | Queuing::Exempt => None,
        };
        self.sync_time(now);
        if let Queuing::Queue { queues, queue_length_limit, .. } = config.queuing {
            let wanted = queues as usize;
            if wanted > self.queues.len() {
                self.queues.resize_with(wanted, Queue::default);
            }
            self.queue_length_limit = queue_length_limit;
        }
        self.config = config;
        self.dealer = dealer;
        let mut dispatched = Vec::new();
        self.dispatch_as_much_as_possible(now, &mut dispatched);
        self.note_demand(now);
        Ok(dispatched)
    }

    /// Moves the concurrency limit alone (the periodic borrowing adjustment); returns what a
    /// raised limit dispatched.
    pub fn set_concurrency_limit(&mut self, now: Instant, concurrency_limit: u32) -> Vec<RequestId> {
        let config = QueueSetConfig { concurrency_limit, ..self.config };
        // The queuing part is unchanged and was accepted before, so this cannot fail.
        self.set_config(now, config).unwrap_or_default()
    }

    /// Admits a request: dispatches it, queues it or rejects it (see the module
    /// documentation), then dispatches whatever else now fits.
    pub fn enqueue(&mut self, now: Instant, request: NewRequest) -> Enqueued {
        self.sync_time(now);
        let mut work = request.work;
        work.initial_seats = work.initial_seats.max(1);
        let final_work = SeatSeconds::of(f64::from(work.final_seats), work.additional_latency);
        let charged = self.estimated_service;
        let total_work =
            SeatSeconds(SeatSeconds::of(f64::from(work.initial_seats), charged).0.saturating_add(final_work.0));
        let entry = Request {
            work,
            total_work,
            final_work,
            queue: None,
            arrival_r: self.current_r,
            deadline: request.deadline,
            waiting_seats: work.max_seats(),
            held_seats: 0,
            phase: Phase::Waiting,
            charged,
        };
        let mut dispatched = Vec::new();
        let outcome = match self.config.queuing {
            Queuing::Exempt => Outcome::Dispatched(self.dispatch_sans_queue(now, entry, &mut dispatched)),
            Queuing::Reject => {
                if self.can_accommodate(work.max_seats()) {
                    Outcome::Dispatched(self.dispatch_sans_queue(now, entry, &mut dispatched))
                } else {
                    self.rejected.concurrency_limit += 1;
                    Outcome::Rejected(RejectReason::ConcurrencyLimit)
                }
            }
            Queuing::Queue { .. } => self.enqueue_to_queue(now, entry, request.flow_hash, &mut dispatched),
        };
        self.note_demand(now);
        Enqueued { outcome, dispatched }
    }

    /// Ends a dispatched request's execution: its queue's virtual time is corrected with the
    /// measured duration, its seats are released (or, with `additional_latency`, held until
    /// [`QueueSet::next_release`]), and whatever now fits is dispatched and returned. Any id
    /// that is not executing (already finished, waiting, rejected, unknown) is a no-op.
    pub fn finish(&mut self, now: Instant, id: RequestId) -> Vec<RequestId> {
        let Some(request) = self.requests.get(&id) else { return Vec::new() };
        let Phase::Executing { since } = request.phase else { return Vec::new() };
        let (queue, initial_seats, latency, charged) =
            (request.queue, request.work.initial_seats, request.work.additional_latency, request.charged);
        self.sync_time(now);
        self.executing -= 1;
        let service = now.saturating_duration_since(since);
        // A moving average over about four completions; the first one replaces kube's guess.
        self.estimated_service =
            if self.completions == 0 { service } else { (self.estimated_service * 3 + service) / 4 };
        self.completions = self.completions.saturating_add(1);
        if let Some(q) = queue {
            let queue = &mut self.queues[q];
            queue.executing -= 1;
            // next_dispatch_r -= initial × (G − S): the queue was charged G at dispatch.
            let g = charged.as_nanos() as f64;
            let correction = SeatSeconds::signed(f64::from(initial_seats), g - service.as_nanos() as f64);
            queue.next_dispatch_r = if correction >= 0.0 {
                SeatSeconds(queue.next_dispatch_r.0.saturating_sub(correction as u64))
            } else {
                SeatSeconds(queue.next_dispatch_r.0.saturating_add((-correction) as u64))
            };
            self.bound_next_dispatch(q);
        }
        if latency.is_zero() {
            self.release(id);
        } else {
            let until = now.checked_add(latency).unwrap_or(now);
            if let Some(request) = self.requests.get_mut(&id) {
                request.phase = Phase::Lingering { until };
            }
            self.releases.insert((until, id));
        }
        let mut dispatched = Vec::new();
        self.dispatch_as_much_as_possible(now, &mut dispatched);
        self.note_demand(now);
        dispatched
    }

    /// Releases the seats of lingering requests whose extra latency has passed by `now`, then
    /// dispatches what fits. Call it at [`QueueSet::next_release`].
    pub fn release_due(&mut self, now: Instant) -> Vec<RequestId> {
        self.sync_time(now);
        let due: Vec<RequestId> = self.releases.iter().take_while(|(at, _)| *at <= now).map(|&(_, id)| id).collect();
        for id in due {
            self.release(id);
        }
        let mut dispatched = Vec::new();
        self.dispatch_as_much_as_possible(now, &mut dispatched);
        self.note_demand(now);
        dispatched
    }

    /// Removes every waiting request whose deadline is at or before `now` (rejected with
    /// `time-out`), then dispatches what the removals unblocked. Call it at
    /// [`QueueSet::next_deadline`].
    pub fn expire(&mut self, now: Instant) -> Expired {
        self.sync_time(now);
        let due: Vec<RequestId> = self.deadlines.iter().take_while(|(at, _)| *at <= now).map(|&(_, id)| id).collect();
        for &id in &due {
            self.remove_waiting(id);
            self.rejected.time_out += 1;
        }
        let mut dispatched = Vec::new();
        self.dispatch_as_much_as_possible(now, &mut dispatched);
        self.note_demand(now);
        Expired { timed_out: due, dispatched }
    }

    /// Both timers at once: [`QueueSet::expire`] and [`QueueSet::release_due`]. Call it at
    /// [`QueueSet::next_wakeup`].
    pub fn tick(&mut self, now: Instant) -> Expired {
        let mut expired = self.expire(now);
        expired.dispatched.extend(self.release_due(now));
        expired
    }

    /// Removes a waiting request whose client went away, without counting it as rejected.
    /// Returns `None` (and changes nothing) unless the id was waiting; otherwise the requests
    /// the removal let through.
    pub fn cancel(&mut self, now: Instant, id: RequestId) -> Option<Vec<RequestId>> {
        if self.requests.get(&id)?.phase != Phase::Waiting {
            return None;
        }
        self.sync_time(now);
        self.remove_waiting(id);
        let mut dispatched = Vec::new();
        self.dispatch_as_much_as_possible(now, &mut dispatched);
        self.note_demand(now);
        Some(dispatched)
    }

    /// Whether a timer of its own is pending: a waiting request (each has a deadline) or a
    /// lingering seat. Without one, [`QueueSet::tick`] has nothing to do: virtual time and
    /// demand are brought up to date by the next event itself.
    pub fn has_timers(&self) -> bool {
        !self.deadlines.is_empty() || !self.releases.is_empty()
    }

    /// The earliest deadline of a waiting request.
    pub fn next_deadline(&self) -> Option<Instant> {
        self.deadlines.first().map(|&(at, _)| at)
    }

    /// The earliest instant lingering seats are due back.
    pub fn next_release(&self) -> Option<Instant> {
        self.releases.first().map(|&(at, _)| at)
    }

    /// When [`QueueSet::tick`] next has work: the earlier of the two above.
    pub fn next_wakeup(&self) -> Option<Instant> {
        match (self.next_deadline(), self.next_release()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Where a request is, or `None` once it is gone (finished and released, rejected, timed
    /// out, cancelled) or was never issued here.
    pub fn state(&self, id: RequestId) -> Option<RequestState> {
        self.requests.get(&id).map(|r| match r.phase {
            Phase::Waiting => RequestState::Waiting,
            Phase::Executing { .. } => RequestState::Executing,
            Phase::Lingering { until } => RequestState::Lingering(until),
        })
    }

    /// Nothing waiting and nothing executing (kube's `IsIdle`; lingering seats do not count):
    /// an undesired level may be dropped once idle.
    pub fn is_idle(&self) -> bool {
        self.waiting == 0 && self.executing == 0
    }

    /// Seats held by requests the caller dispatched without this queue set (an exempt level's,
    /// sampled by the actor): counted in the seat demand and in the stats' seats in use.
    /// Whether the count changed.
    pub fn set_seats_outside(&mut self, now: Instant, seats: u64) -> bool {
        if seats == self.seats_outside {
            return false;
        }
        self.seats_outside = seats;
        self.note_demand(now);
        true
    }

    /// The seat demand integrated since the last call (or since creation), for
    /// [`crate::limits::adjust_borrowing`]; starts a new period.
    pub fn take_seat_demand(&mut self, now: Instant) -> IntegratorResults {
        self.seat_demand.reset(now)
    }

    /// A snapshot for metrics and debug dumps.
    pub fn stats(&self) -> QueueSetStats {
        QueueSetStats {
            queues: self
                .queues
                .iter()
                .map(|q| QueueStats {
                    waiting: q.waiting.len(),
                    seats_waiting: q.seats_waiting,
                    next_dispatch_r: q.next_dispatch_r.as_f64(),
                    executing: q.executing,
                    seats_in_use: q.seats_in_use,
                })
                .collect(),
            current_r: self.current_r.as_f64(),
            waiting: self.waiting,
            seats_waiting: self.seats_waiting,
            executing: self.executing,
            seats_in_use: self.seats_in_use + self.seats_outside,
            dispatched: self.dispatched,
            rejected: self.rejected,
        }
    }

    // ------------------------------------------------------------------ internals

    fn issue_id(&mut self) -> RequestId {
        self.next_id += 1;
        RequestId(self.next_id)
    }

    /// Queue mode admission: shuffle shard, queue-full check, enqueue, dispatch.
    fn enqueue_to_queue(
        &mut self,
        now: Instant,
        mut entry: Request,
        flow_hash: u64,
        dispatched: &mut Vec<RequestId>,
    ) -> Outcome {
        let q = self.shuffle_shard(flow_hash);
        if self.seats_in_use >= u64::from(self.config.concurrency_limit)
            && self.queues[q].waiting.len() >= self.queue_length_limit as usize
        {
            self.rejected.queue_full += 1;
            return Outcome::Rejected(RejectReason::QueueFull);
        }
        let id = self.issue_id();
        if self.queues[q].is_empty_and_idle() {
            // A queue coming back to life starts at the present, not at its old virtual time.
            self.queues[q].next_dispatch_r = self.current_r;
        }
        entry.queue = Some(q);
        let (seats, work, deadline) = (entry.waiting_seats, entry.total_work, entry.deadline);
        self.requests.insert(id, entry);
        let queue = &mut self.queues[q];
        queue.waiting.push_back(id);
        queue.seats_waiting += u64::from(seats);
        queue.work_waiting = SeatSeconds(queue.work_waiting.0.saturating_add(work.0));
        self.waiting += 1;
        self.seats_waiting += u64::from(seats);
        self.deadlines.insert((deadline, id));
        self.bound_next_dispatch(q);
        self.dispatch_as_much_as_possible(now, dispatched);
        if self.requests.get(&id).is_some_and(|r| r.phase == Phase::Waiting) {
            if deadline <= now {
                // Already out of time and not dispatched: kube's wait returns at once.
                self.remove_waiting(id);
                self.rejected.time_out += 1;
                self.dispatch_as_much_as_possible(now, dispatched);
                return Outcome::Rejected(RejectReason::TimeOut);
            }
            return Outcome::Queued(id);
        }
        Outcome::Dispatched(id)
    }

    /// The queue of the flow's hand with the least waiting work; the scan starts at a rotating
    /// offset and keeps the first minimum (kube's `shuffleShardLocked`).
    fn shuffle_shard(&mut self, hash: u64) -> usize {
        let Some(dealer) = self.dealer else { return 0 };
        let hand = dealer.deal(hash);
        let offset = (self.enqueues % hand.len() as u64) as usize;
        self.enqueues += 1;
        let mut best = hand[offset];
        let mut best_work = SeatSeconds::MAX;
        for i in 0..hand.len() {
            let q = hand[(offset + i) % hand.len()];
            let work = self.queues[q].work_waiting;
            if work < best_work {
                best_work = work;
                best = q;
            }
        }
        best
    }

    /// Reject and Exempt mode: executes at once, outside any queue.
    fn dispatch_sans_queue(&mut self, now: Instant, mut entry: Request, dispatched: &mut Vec<RequestId>) -> RequestId {
        let id = self.issue_id();
        let seats = entry.work.max_seats();
        entry.waiting_seats = 0;
        entry.held_seats = seats;
        entry.phase = Phase::Executing { since: now };
        self.requests.insert(id, entry);
        self.executing += 1;
        self.seats_in_use += u64::from(seats);
        self.dispatched += 1;
        dispatched.push(id);
        id
    }

    /// Whether `seats` more seats may be taken now (kube's `canAccommodateSeatsLocked`).
    fn can_accommodate(&self, seats: u32) -> bool {
        if self.config.queuing == Queuing::Exempt {
            return true;
        }
        let limit = self.config.concurrency_limit;
        if seats > limit {
            // Wider than the level: runs alone once nothing else executes.
            return self.executing == 0;
        }
        self.seats_in_use + u64::from(seats) <= u64::from(limit)
    }

    fn dispatch_as_much_as_possible(&mut self, now: Instant, dispatched: &mut Vec<RequestId>) {
        while self.waiting != 0
            && self.seats_in_use < u64::from(self.config.concurrency_limit)
            && self.dispatch_one(now, dispatched)
        {}
    }

    /// Dispatches the head of the queue that finishes first virtually, if it fits; false when
    /// nothing was dispatched (kube's `dispatchLocked` with `findDispatchQueueToBoundLocked`).
    fn dispatch_one(&mut self, now: Instant, dispatched: &mut Vec<RequestId>) -> bool {
        let nq = self.queues.len();
        if nq == 0 {
            return false;
        }
        let mut min: Option<(SeatSeconds, usize)> = None;
        let mut min_finish = SeatSeconds::MAX;
        for _ in 0..nq {
            self.robin_index = (self.robin_index + 1) % nq;
            let queue = &self.queues[self.robin_index];
            let Some(head) = queue.waiting.front().and_then(|id| self.requests.get(id)) else { continue };
            let finish = SeatSeconds(queue.next_dispatch_r.0.saturating_add(head.total_work.0));
            if finish < min_finish {
                min_finish = finish;
                min = Some((finish, self.robin_index));
            }
        }
        let Some((_, q)) = min else { return false };
        let Some(&id) = self.queues[q].waiting.front() else { return false };
        let Some(seats) = self.requests.get(&id).map(|r| r.work.max_seats()) else { return false };
        if !self.can_accommodate(seats) {
            // The fair choice waits for seats; nothing else jumps ahead of it.
            return false;
        }
        self.queues[q].waiting.pop_front();
        let limit = self.config.concurrency_limit;
        let Some(request) = self.requests.get_mut(&id) else { return false };
        if request.work.final_seats > limit && limit > 0 {
            // kube caps the final seats at the limit and keeps the final work constant.
            request.work.final_seats = limit;
            request.work.additional_latency = request.final_work.duration_per_seat(f64::from(limit));
        }
        request.held_seats = request.work.max_seats();
        request.phase = Phase::Executing { since: now };
        let (waiting_seats, held, total_work, deadline) =
            (request.waiting_seats, request.held_seats, request.total_work, request.deadline);
        self.deadlines.remove(&(deadline, id));
        self.robin_index = q;
        let queue = &mut self.queues[q];
        queue.seats_waiting -= u64::from(waiting_seats);
        queue.work_waiting = SeatSeconds(queue.work_waiting.0.saturating_sub(total_work.0));
        queue.executing += 1;
        queue.seats_in_use += u64::from(held);
        queue.next_dispatch_r = SeatSeconds(queue.next_dispatch_r.0.saturating_add(total_work.0));
        self.waiting -= 1;
        self.seats_waiting -= u64::from(waiting_seats);
        self.executing += 1;
        self.seats_in_use += u64::from(held);
        self.dispatched += 1;
        self.bound_next_dispatch(q);
        dispatched.push(id);
        true
    }

    /// Takes a waiting request out of its queue and forgets it.
    fn remove_waiting(&mut self, id: RequestId) {
        let Some(request) = self.requests.remove(&id) else { return };
        self.deadlines.remove(&(request.deadline, id));
        if let Some(q) = request.queue {
            let queue = &mut self.queues[q];
            if let Some(pos) = queue.waiting.iter().position(|&w| w == id) {
                queue.waiting.remove(pos);
            }
            queue.seats_waiting -= u64::from(request.waiting_seats);
            queue.work_waiting = SeatSeconds(queue.work_waiting.0.saturating_sub(request.total_work.0));
            self.bound_next_dispatch(q);
        }
        self.waiting -= 1;
        self.seats_waiting -= u64::from(request.waiting_seats);
    }

    /// Gives back a finished request's seats and forgets it; drops its queue if that is now
    /// an excess, unused queue.
    fn release(&mut self, id: RequestId) {
        let Some(request) = self.requests.remove(&id) else { return };
        if let Phase::Lingering { until } = request.phase {
            self.releases.remove(&(until, id));
        }
        self.seats_in_use -= u64::from(request.held_seats);
        if let Some(q) = request.queue {
            self.queues[q].seats_in_use -= u64::from(request.held_seats);
            self.remove_queue_if_excess(q);
        }
    }

    fn desired_queues(&self) -> usize {
        match self.config.queuing {
            Queuing::Queue { queues, .. } => queues as usize,
            Queuing::Reject | Queuing::Exempt => 0,
        }
    }

    /// kube's attrition of excess queues after a shrink: the queue just released goes if there
    /// are more than desired and it is unused. Unlike kube, a queue still holding lingering
    /// seats is kept, so no live request ever points at a removed queue.
    fn remove_queue_if_excess(&mut self, q: usize) {
        let queue = &self.queues[q];
        if self.queues.len() <= self.desired_queues() || !queue.is_empty_and_idle() || queue.seats_in_use != 0 {
            return;
        }
        self.queues.remove(q);
        for request in self.requests.values_mut() {
            if let Some(index) = request.queue.as_mut().filter(|i| **i > q) {
                *index -= 1;
            }
        }
        if self.robin_index >= q {
            // Keeps "the scan starts after the queue last served" true.
            self.robin_index = self.robin_index.checked_sub(1).unwrap_or(self.queues.len().saturating_sub(1));
        }
    }

    /// The anti-windup bound: a queue's next dispatch never precedes its head's arrival.
    fn bound_next_dispatch(&mut self, q: usize) {
        let queue = &self.queues[q];
        let Some(head) = queue.waiting.front().and_then(|id| self.requests.get(id)) else { return };
        let bound = head.arrival_r;
        if self.queues[q].next_dispatch_r < bound {
            self.queues[q].next_dispatch_r = bound;
        }
    }

    /// R's rate of progress under the current state, in seat-seconds per second per queue.
    fn virtual_time_ratio(&self) -> f64 {
        let mut active = 0u32;
        let mut seats_requested = 0u64;
        for queue in &self.queues {
            seats_requested += queue.seats_in_use + queue.seats_waiting;
            if !queue.is_empty_and_idle() {
                active += 1;
            }
        }
        if active == 0 {
            return 0.0;
        }
        (seats_requested as f64).min(f64::from(self.config.concurrency_limit)) / f64::from(active)
    }

    /// Advances R to `now`, assuming the state since the last call held all along; call before
    /// changing any queue.
    fn sync_time(&mut self, now: Instant) {
        let elapsed = now.saturating_duration_since(self.last_real_time);
        self.last_real_time = self.last_real_time.max(now);
        let increment = SeatSeconds::of(self.virtual_time_ratio(), elapsed);
        self.current_r = SeatSeconds(self.current_r.0.saturating_add(increment.0));
        if self.current_r >= HIGH_R {
            self.advance_epoch();
        }
    }

    /// Winds R and every reading of it back by [`R_DECREMENT`], long before the counter could
    /// overflow (years of saturation at the default scale).
    fn advance_epoch(&mut self) {
        self.current_r = SeatSeconds(self.current_r.0 - R_DECREMENT.0);
        for queue in &mut self.queues {
            queue.next_dispatch_r = if queue.is_empty_and_idle() {
                // Stale anyway; the next arrival sets it from R.
                SeatSeconds(0)
            } else {
                SeatSeconds(queue.next_dispatch_r.0.saturating_sub(R_DECREMENT.0))
            };
        }
        for request in self.requests.values_mut() {
            if request.phase == Phase::Waiting {
                request.arrival_r = SeatSeconds(request.arrival_r.0.saturating_sub(R_DECREMENT.0));
            }
        }
    }

    fn note_demand(&mut self, now: Instant) {
        self.seat_demand.set(now, (self.seats_in_use + self.seats_waiting + self.seats_outside) as f64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shuffle::flow_hash;

    const FAR: Duration = Duration::from_secs(3600);

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn queuing(queues: u32, hand_size: u32, queue_length_limit: u32, concurrency_limit: u32) -> QueueSetConfig {
        QueueSetConfig { queuing: Queuing::Queue { queues, hand_size, queue_length_limit }, concurrency_limit }
    }

    fn qs(t0: Instant, config: QueueSetConfig) -> QueueSet {
        QueueSet::new(t0, config).expect("valid config")
    }

    fn req(flow_hash: u64, seats: u32, deadline: Instant) -> NewRequest {
        NewRequest { work: WorkEstimate::seats(seats), flow_hash, deadline }
    }

    /// Enqueues and expects the given outcome kind, returning the id.
    fn dispatched(qs: &mut QueueSet, now: Instant, r: NewRequest) -> RequestId {
        let e = qs.enqueue(now, r);
        let Outcome::Dispatched(id) = e.outcome else { panic!("expected dispatch, got {e:?}") };
        assert_eq!(e.dispatched, vec![id]);
        id
    }

    fn queued(qs: &mut QueueSet, now: Instant, r: NewRequest) -> RequestId {
        let e = qs.enqueue(now, r);
        let Outcome::Queued(id) = e.outcome else { panic!("expected queuing, got {e:?}") };
        assert_eq!(e.dispatched, vec![]);
        id
    }

    fn rejected(qs: &mut QueueSet, now: Instant, r: NewRequest) -> RejectReason {
        let e = qs.enqueue(now, r);
        let Outcome::Rejected(reason) = e.outcome else { panic!("expected rejection, got {e:?}") };
        reason
    }

    #[test]
    fn dispatches_at_once_while_seats_are_free_then_queues() {
        let t0 = Instant::now();
        let mut qs = qs(t0, queuing(8, 2, 10, 2));
        let a = dispatched(&mut qs, t0, req(1, 1, t0 + FAR));
        let b = dispatched(&mut qs, t0, req(2, 1, t0 + FAR));
        let c = queued(&mut qs, t0, req(3, 1, t0 + FAR));
        let s = qs.stats();
        assert_eq!((s.waiting, s.seats_waiting, s.executing, s.seats_in_use, s.dispatched), (1, 1, 2, 2, 2));
        assert_eq!(qs.state(c), Some(RequestState::Waiting));
        assert_eq!(qs.finish(t0 + ms(5), a), vec![c]);
        assert_eq!(qs.state(a), None);
        assert_eq!(qs.state(c), Some(RequestState::Executing));
        assert_eq!(qs.finish(t0 + ms(6), b), vec![]);
        assert_eq!(qs.finish(t0 + ms(7), c), vec![]);
        assert!(qs.is_idle());
        let s = qs.stats();
        assert_eq!((s.waiting, s.executing, s.seats_in_use, s.dispatched), (0, 0, 0, 3));
    }

    #[test]
    fn queue_full_rejects_only_at_the_limit_with_every_seat_taken() {
        let t0 = Instant::now();
        // One queue, two places, one seat.
        let mut qs = qs(t0, queuing(1, 1, 2, 1));
        let a = dispatched(&mut qs, t0, req(7, 1, t0 + FAR));
        let b = queued(&mut qs, t0, req(7, 1, t0 + FAR));
        let _c = queued(&mut qs, t0, req(7, 1, t0 + FAR));
        assert_eq!(rejected(&mut qs, t0, req(7, 1, t0 + FAR)), RejectReason::QueueFull);
        assert_eq!(RejectReason::QueueFull.as_str(), "queue-full");
        assert_eq!(qs.stats().rejected, RejectCounts { queue_full: 1, ..Default::default() });
        // A place frees up when the head is dispatched.
        assert_eq!(qs.finish(t0 + ms(10), a), vec![b]);
        let _d = queued(&mut qs, t0 + ms(10), req(7, 1, t0 + FAR));
        assert_eq!(rejected(&mut qs, t0 + ms(10), req(7, 1, t0 + FAR)), RejectReason::QueueFull);
        let s = qs.stats();
        assert_eq!((s.waiting, s.executing, s.rejected.queue_full, s.dispatched), (2, 1, 2, 2));
    }

    #[test]
    fn a_full_queue_still_admits_while_seats_are_free() {
        let t0 = Instant::now();
        // kube rejects only when the queue is at its limit AND every seat is in use: a wide
        // head waiting for seats does not make newcomers bounce off a queue of length 1.
        let mut qs = qs(t0, queuing(1, 1, 1, 4));
        let _a = dispatched(&mut qs, t0, req(0, 1, t0 + FAR));
        let wide = queued(&mut qs, t0, req(0, 4, t0 + FAR));
        let behind = queued(&mut qs, t0, req(0, 1, t0 + FAR));
        let s = qs.stats();
        assert_eq!((s.waiting, s.seats_in_use, s.queues[0].waiting, s.queues[0].seats_waiting), (2, 1, 2, 5));
        assert_eq!(qs.state(wide), Some(RequestState::Waiting));
        assert_eq!(qs.state(behind), Some(RequestState::Waiting));
    }

    #[test]
    fn waiting_requests_time_out_at_their_deadline() {
        let t0 = Instant::now();
        let mut qs = qs(t0, queuing(1, 1, 10, 1));
        let a = dispatched(&mut qs, t0, req(0, 1, t0 + FAR));
        let b = queued(&mut qs, t0, req(0, 1, t0 + ms(100)));
        let c = queued(&mut qs, t0, req(0, 1, t0 + ms(200)));
        assert_eq!(qs.next_deadline(), Some(t0 + ms(100)));
        assert_eq!(qs.next_wakeup(), Some(t0 + ms(100)));
        assert_eq!(qs.expire(t0 + ms(99)), Expired::default());
        assert_eq!(qs.expire(t0 + ms(100)), Expired { timed_out: vec![b], dispatched: vec![] });
        assert_eq!(qs.state(b), None);
        assert_eq!(qs.next_deadline(), Some(t0 + ms(200)));
        assert_eq!(qs.stats().rejected, RejectCounts { time_out: 1, ..Default::default() });
        // A dispatched request has no deadline any more.
        assert_eq!(qs.finish(t0 + ms(150), a), vec![c]);
        assert_eq!(qs.next_deadline(), None);
        assert_eq!(qs.expire(t0 + ms(500)), Expired::default());
        assert_eq!(qs.state(c), Some(RequestState::Executing));
        // Finishing a timed-out id does nothing.
        assert_eq!(qs.finish(t0 + ms(500), b), vec![]);
        assert_eq!(qs.stats().executing, 1);
    }

    #[test]
    fn a_request_already_past_its_deadline_is_rejected_unless_it_runs_at_once() {
        let t0 = Instant::now() + ms(1000);
        let mut qs = qs(t0, queuing(1, 1, 10, 1));
        // Seats free: it runs, the deadline is about waiting only.
        let a = dispatched(&mut qs, t0, req(0, 1, t0 - ms(1)));
        assert_eq!(rejected(&mut qs, t0, req(0, 1, t0 - ms(1))), RejectReason::TimeOut);
        assert_eq!(RejectReason::TimeOut.as_str(), "time-out");
        let s = qs.stats();
        assert_eq!((s.waiting, s.rejected.time_out, s.queues[0].waiting), (0, 1, 0));
        assert_eq!(qs.next_deadline(), None);
        assert_eq!(qs.finish(t0 + ms(1), a), vec![]);
    }

    #[test]
    fn a_cancelled_request_leaves_no_trace_and_unblocks_its_queue() {
        let t0 = Instant::now();
        let mut qs = qs(t0, queuing(1, 1, 10, 2));
        let a = dispatched(&mut qs, t0, req(0, 1, t0 + FAR));
        let wide = queued(&mut qs, t0, req(0, 2, t0 + FAR));
        let narrow = queued(&mut qs, t0, req(0, 1, t0 + FAR));
        // The narrow one waits behind the wide head although a seat is free.
        assert_eq!(qs.state(narrow), Some(RequestState::Waiting));
        assert_eq!(qs.cancel(t0 + ms(1), wide), Some(vec![narrow]));
        assert_eq!(qs.state(wide), None);
        assert_eq!(qs.stats().rejected, RejectCounts::default());
        // Cancelling what is not waiting changes nothing.
        assert_eq!(qs.cancel(t0 + ms(2), wide), None);
        assert_eq!(qs.cancel(t0 + ms(2), a), None);
        assert_eq!(qs.state(a), Some(RequestState::Executing));
        let s = qs.stats();
        assert_eq!((s.waiting, s.executing, s.seats_in_use, s.dispatched), (0, 2, 2, 2));
    }

    #[test]
    fn reject_mode_dispatches_what_fits_and_rejects_the_rest() {
        let t0 = Instant::now();
        let mut qs = qs(t0, QueueSetConfig { queuing: Queuing::Reject, concurrency_limit: 3 });
        let a = dispatched(&mut qs, t0, req(0, 2, t0));
        assert_eq!(rejected(&mut qs, t0, req(0, 2, t0)), RejectReason::ConcurrencyLimit);
        assert_eq!(RejectReason::ConcurrencyLimit.as_str(), "concurrency-limit");
        let b = dispatched(&mut qs, t0, req(0, 1, t0));
        assert_eq!(rejected(&mut qs, t0, req(0, 1, t0)), RejectReason::ConcurrencyLimit);
        assert_eq!(qs.finish(t0 + ms(1), a), vec![]);
        assert_eq!(qs.finish(t0 + ms(1), b), vec![]);
        // Wider than the level: runs alone when nothing else does.
        let wide = dispatched(&mut qs, t0 + ms(2), req(0, 5, t0));
        assert_eq!(qs.stats().seats_in_use, 5);
        assert_eq!(rejected(&mut qs, t0 + ms(2), req(0, 1, t0)), RejectReason::ConcurrencyLimit);
        assert_eq!(qs.finish(t0 + ms(3), wide), vec![]);
        let s = qs.stats();
        assert!(s.queues.is_empty());
        assert_eq!((s.dispatched, s.rejected.concurrency_limit, s.seats_in_use, s.executing), (3, 3, 0, 0));
    }

    #[test]
    fn exempt_mode_dispatches_everything_and_counts_its_seats() {
        let t0 = Instant::now();
        let mut qs = qs(t0, QueueSetConfig { queuing: Queuing::Exempt, concurrency_limit: 0 });
        let ids: Vec<_> = (0..5).map(|_| dispatched(&mut qs, t0, req(0, 2, t0))).collect();
        let s = qs.stats();
        assert_eq!((s.executing, s.seats_in_use, s.dispatched), (5, 10, 5));
        let demand = qs.take_seat_demand(t0 + Duration::from_secs(1));
        assert_eq!((demand.duration, demand.average, demand.max), (1.0, 10.0, 10.0));
        for id in ids {
            assert_eq!(qs.finish(t0 + Duration::from_secs(1), id), vec![]);
        }
        assert!(qs.is_idle());
    }

    /// Flows 0, 1, 2 with one queue each (hand of 1 over 4 queues: queue = hash % 4).
    #[test]
    fn a_wide_head_that_does_not_fit_holds_back_everyone_after_it() {
        let t0 = Instant::now();
        let mut qs = qs(t0, queuing(4, 1, 10, 4));
        let a = dispatched(&mut qs, t0, req(0, 1, t0 + FAR));
        // Queue 1's wide head: finish at R 0 + 4 × 3 ms, but only 3 seats are free.
        let wide = queued(&mut qs, t0, req(1, 4, t0 + FAR));
        // 100 ms later R has moved (2 active queues, min(5, 4) / 2 = 2 per second, so R = 0.2)
        // and a narrow request of queue 2 would finish at 0.203: the wide head is still the
        // fair next one, so the narrow one waits though a seat is free.
        let narrow = queued(&mut qs, t0 + ms(100), req(2, 1, t0 + FAR));
        let s = qs.stats();
        assert!((s.current_r - 0.2).abs() < 1e-9, "R = {}", s.current_r);
        assert_eq!((s.seats_in_use, s.waiting), (1, 2));
        assert_eq!(qs.finish(t0 + ms(100), a), vec![wide]);
        assert_eq!(qs.finish(t0 + ms(200), wide), vec![narrow]);
    }

    #[test]
    fn a_request_wider_than_the_limit_runs_alone() {
        let t0 = Instant::now();
        let mut qs = qs(t0, queuing(2, 1, 10, 2));
        let a = dispatched(&mut qs, t0, req(0, 1, t0 + FAR));
        let huge = queued(&mut qs, t0, req(1, 3, t0 + FAR));
        assert_eq!(qs.finish(t0 + ms(10), a), vec![huge]);
        let after = queued(&mut qs, t0 + ms(10), req(0, 1, t0 + FAR));
        assert_eq!(qs.stats().seats_in_use, 3);
        assert_eq!(qs.finish(t0 + ms(20), huge), vec![after]);
    }

    #[test]
    fn final_seats_are_held_for_the_additional_latency() {
        let t0 = Instant::now();
        let mut qs = qs(t0, queuing(1, 1, 10, 2));
        let write = NewRequest {
            work: WorkEstimate { initial_seats: 1, final_seats: 2, additional_latency: ms(50) },
            flow_hash: 0,
            deadline: t0 + FAR,
        };
        let w = dispatched(&mut qs, t0, write);
        // The write holds max(1, 2) = 2 seats from dispatch on.
        let r = queued(&mut qs, t0, req(0, 1, t0 + FAR));
        assert_eq!(qs.finish(t0 + ms(10), w), vec![]);
        assert_eq!(qs.state(w), Some(RequestState::Lingering(t0 + ms(60))));
        assert_eq!(qs.next_release(), Some(t0 + ms(60)));
        let s = qs.stats();
        assert_eq!((s.executing, s.seats_in_use, s.waiting), (0, 2, 1));
        // Finishing again changes nothing; releases happen at their instant, once.
        assert_eq!(qs.finish(t0 + ms(20), w), vec![]);
        assert_eq!(qs.release_due(t0 + ms(59)), vec![]);
        assert_eq!(qs.tick(t0 + ms(60)), Expired { timed_out: vec![], dispatched: vec![r] });
        assert_eq!(qs.state(w), None);
        assert_eq!(qs.next_release(), None);
        assert_eq!(qs.release_due(t0 + ms(100)), vec![]);
        assert_eq!(qs.stats().seats_in_use, 1);
    }

    #[test]
    fn final_seats_over_the_limit_are_capped_and_the_latency_stretched() {
        let t0 = Instant::now();
        let mut qs = qs(t0, queuing(1, 1, 10, 2));
        let a = dispatched(&mut qs, t0, req(0, 1, t0 + FAR));
        // 4 final seats for 100 ms = 0.4 seat-seconds; with a limit of 2 that is 2 seats for
        // 200 ms. Capping happens at dispatch from the queue.
        let write = NewRequest {
            work: WorkEstimate { initial_seats: 1, final_seats: 4, additional_latency: ms(100) },
            flow_hash: 0,
            deadline: t0 + FAR,
        };
        let w = queued(&mut qs, t0, write);
        assert_eq!(qs.finish(t0 + ms(1), a), vec![w]);
        assert_eq!(qs.stats().seats_in_use, 2);
        assert_eq!(qs.finish(t0 + ms(2), w), vec![]);
        assert_eq!(qs.state(w), Some(RequestState::Lingering(t0 + ms(202))));
    }

    #[test]
    fn double_finish_and_foreign_ids_are_no_ops() {
        let t0 = Instant::now();
        let mut qs = qs(t0, queuing(1, 1, 10, 1));
        let a = dispatched(&mut qs, t0, req(0, 1, t0 + FAR));
        let b = queued(&mut qs, t0, req(0, 1, t0 + FAR));
        // Finishing a waiting request does not release anyone's seats.
        assert_eq!(qs.finish(t0, b), vec![]);
        assert_eq!(qs.state(b), Some(RequestState::Waiting));
        assert_eq!(qs.finish(t0 + ms(1), a), vec![b]);
        assert_eq!(qs.finish(t0 + ms(2), a), vec![]);
        let other = QueueSet::new(t0, queuing(1, 1, 10, 1)).unwrap().issue_id();
        let mut other_qs = QueueSet::new(t0, queuing(1, 1, 10, 1)).unwrap();
        assert_eq!(other_qs.finish(t0, RequestId(999)), vec![]);
        let s = qs.stats();
        assert_eq!((s.executing, s.seats_in_use, s.dispatched), (1, 1, 2));
        assert_eq!(qs.finish(t0 + ms(3), b), vec![]);
        assert_eq!(qs.finish(t0 + ms(3), other), vec![]);
        let s = qs.stats();
        assert_eq!((s.executing, s.seats_in_use), (0, 0));
    }

    #[test]
    fn raising_the_limit_dispatches_waiting_requests_at_once() {
        let t0 = Instant::now();
        let mut qs = qs(t0, queuing(1, 1, 10, 1));
        let _a = dispatched(&mut qs, t0, req(0, 1, t0 + FAR));
        let b = queued(&mut qs, t0, req(0, 1, t0 + FAR));
        let c = queued(&mut qs, t0, req(0, 1, t0 + FAR));
        let d = queued(&mut qs, t0, req(0, 1, t0 + FAR));
        assert_eq!(qs.set_concurrency_limit(t0 + ms(1), 3), vec![b, c]);
        assert_eq!(qs.state(d), Some(RequestState::Waiting));
        // Lowering it preempts nothing; it only stops further dispatches.
        assert_eq!(qs.set_concurrency_limit(t0 + ms(2), 1), vec![]);
        assert_eq!(qs.stats().executing, 3);
        assert_eq!(qs.finish(t0 + ms(3), b), vec![]);
        assert_eq!(qs.config().concurrency_limit, 1);
    }

    #[test]
    fn shrinking_the_queues_lets_the_excess_ones_drain() {
        let t0 = Instant::now();
        // Hand of 1 over 4 queues: hash 3 lands in queue 3.
        let mut qs = qs(t0, queuing(4, 1, 10, 1));
        let a = dispatched(&mut qs, t0, req(3, 1, t0 + FAR));
        let b = queued(&mut qs, t0, req(3, 1, t0 + FAR));
        assert_eq!(qs.set_config(t0 + ms(1), queuing(2, 1, 10, 1)), Ok(vec![]));
        assert_eq!(qs.stats().queues.len(), 4, "queue 3 still holds a request");
        // New requests are dealt among the 2 configured queues only (3 % 2 = 1).
        let c = queued(&mut qs, t0 + ms(1), req(3, 1, t0 + FAR));
        assert_eq!(qs.stats().queues[1].waiting, 1);
        // Queue 3 was charged for a, so c (fresh queue 1, R 0.001) finishes first virtually:
        // 0.001 + 0.003 against b's 0.003 + 0.003.
        assert_eq!(qs.finish(t0 + ms(2), a), vec![c]);
        // kube's attrition removes whichever queue empties on a release while there are more
        // than wanted, here queue 1; queue 3, b's, becomes queue 2.
        assert_eq!(qs.finish(t0 + ms(3), c), vec![b]);
        assert_eq!(qs.stats().queues.len(), 3);
        assert_eq!(qs.stats().queues[2].waiting, 0);
        assert_eq!(qs.stats().queues[2].executing, 1);
        assert_eq!(qs.finish(t0 + ms(4), b), vec![]);
        assert_eq!(qs.stats().queues.len(), 2);
        // Back at the configured size, releases remove nothing more.
        let d = dispatched(&mut qs, t0 + ms(5), req(3, 1, t0 + FAR));
        assert_eq!(qs.finish(t0 + ms(6), d), vec![]);
        assert_eq!(qs.stats().queues.len(), 2);
    }

    #[test]
    fn an_excess_queue_holding_lingering_seats_waits_for_their_release() {
        let t0 = Instant::now();
        let mut qs = qs(t0, queuing(2, 1, 10, 4));
        let write = NewRequest {
            work: WorkEstimate { initial_seats: 1, final_seats: 1, additional_latency: ms(50) },
            flow_hash: 1,
            deadline: t0 + FAR,
        };
        let w = dispatched(&mut qs, t0, write);
        let r = dispatched(&mut qs, t0, req(1, 1, t0 + FAR));
        assert_eq!(qs.set_config(t0, queuing(1, 1, 10, 4)), Ok(vec![]));
        assert_eq!(qs.finish(t0 + ms(1), w), vec![]);
        assert_eq!(qs.finish(t0 + ms(2), r), vec![]);
        // Queue 1 is empty and idle but still holds w's seat: it stays (kube would drop it).
        let s = qs.stats();
        assert_eq!((s.queues.len(), s.queues[1].seats_in_use, s.seats_in_use), (2, 1, 1));
        assert!(qs.is_idle(), "lingering seats do not make a level busy");
        assert_eq!(qs.next_wakeup(), Some(t0 + ms(51)));
        assert_eq!(qs.release_due(t0 + ms(51)), vec![]);
        let s = qs.stats();
        assert_eq!((s.queues.len(), s.seats_in_use), (1, 0));
        assert_eq!(qs.next_wakeup(), None);
    }

    #[test]
    fn next_wakeup_is_the_earlier_of_deadline_and_release() {
        let t0 = Instant::now();
        let mut qs = qs(t0, queuing(1, 1, 10, 1));
        let write = NewRequest {
            work: WorkEstimate { initial_seats: 1, final_seats: 1, additional_latency: ms(30) },
            flow_hash: 0,
            deadline: t0 + FAR,
        };
        let w = dispatched(&mut qs, t0, write);
        let late = queued(&mut qs, t0, req(0, 1, t0 + ms(100)));
        let early = queued(&mut qs, t0, req(0, 1, t0 + ms(20)));
        assert_eq!(qs.finish(t0 + ms(10), w), vec![]);
        assert_eq!((qs.next_deadline(), qs.next_release()), (Some(t0 + ms(20)), Some(t0 + ms(40))));
        assert_eq!(qs.next_wakeup(), Some(t0 + ms(20)));
        assert_eq!(qs.tick(t0 + ms(20)), Expired { timed_out: vec![early], dispatched: vec![] });
        assert_eq!(qs.next_wakeup(), Some(t0 + ms(40)));
        assert_eq!(qs.tick(t0 + ms(40)), Expired { timed_out: vec![], dispatched: vec![late] });
        assert_eq!(qs.next_wakeup(), None);
    }

    #[test]
    fn switching_to_reject_mode_drains_what_is_queued() {
        let t0 = Instant::now();
        let mut qs = qs(t0, queuing(2, 1, 10, 1));
        let a = dispatched(&mut qs, t0, req(0, 1, t0 + FAR));
        let b = queued(&mut qs, t0, req(0, 1, t0 + FAR));
        assert_eq!(qs.set_config(t0, QueueSetConfig { queuing: Queuing::Reject, concurrency_limit: 1 }), Ok(vec![]));
        assert_eq!(rejected(&mut qs, t0, req(0, 1, t0 + FAR)), RejectReason::ConcurrencyLimit);
        assert_eq!(qs.finish(t0 + ms(1), a), vec![b]);
        assert_eq!(qs.finish(t0 + ms(2), b), vec![]);
        // Both queues are excess now; queue 0 went on b's release, queue 1 was never used.
        assert_eq!(qs.stats().queues.len(), 1);
        assert!(qs.is_idle());
    }

    #[test]
    fn an_invalid_config_is_refused_and_changes_nothing() {
        let t0 = Instant::now();
        assert_eq!(
            QueueSet::new(t0, queuing(4, 5, 10, 1)).unwrap_err().to_string(),
            "the QueueSetConfig implies an invalid shuffle sharding config (DesiredNumQueues is deckSize): \
             handSize 5 is greater than deckSize 4"
        );
        let mut qs = qs(t0, queuing(4, 2, 10, 1));
        let err = qs.set_config(t0, queuing(512, 8, 10, 1)).unwrap_err();
        assert_eq!(err, ConfigError(DealerError::TooMuchEntropy { deck_size: 512, hand_size: 8 }));
        assert_eq!(qs.config(), queuing(4, 2, 10, 1));
        assert_eq!(qs.stats().queues.len(), 4);
    }

    /// Hands (worked out as in the shuffle tests) over 8 queues, hand of 2: hash 42 = digits
    /// [2, 5] → cards [2, 6]; hash 25 = digits [1, 3] → cards [1, 4].
    #[test]
    fn shuffle_sharding_picks_the_least_loaded_queue_of_the_hand_from_a_rotating_start() {
        let t0 = Instant::now();
        let mut qs = qs(t0, queuing(8, 2, 10, 1));
        assert_eq!(Dealer::new(8, 2).unwrap().deal(42), vec![2, 6]);
        assert_eq!(Dealer::new(8, 2).unwrap().deal(25), vec![1, 4]);
        // Enqueue 0 scans from hand[0]: both empty, the first wins: queue 2.
        let _blocker = dispatched(&mut qs, t0, req(42, 1, t0 + FAR));
        // Enqueue 1 scans from hand[1] = 4: tie at zero work, queue 4 kept.
        queued(&mut qs, t0, req(25, 1, t0 + FAR));
        // Enqueue 2 scans from hand[0] = 1: empty, less work than queue 4.
        queued(&mut qs, t0, req(25, 1, t0 + FAR));
        // Enqueue 3 scans from hand[1] = 4: equal work (one request each), queue 4 kept.
        queued(&mut qs, t0, req(25, 1, t0 + FAR));
        let s = qs.stats();
        let per_queue: Vec<(usize, usize)> = s.queues.iter().map(|q| (q.waiting, q.executing)).collect();
        assert_eq!(per_queue, vec![(0, 0), (1, 0), (0, 1), (0, 0), (2, 0), (0, 0), (0, 0), (0, 0)]);
    }

    #[test]
    fn virtual_time_advances_at_the_fair_rate_and_finishing_corrects_the_queue() {
        let t0 = Instant::now();
        let mut qs = qs(t0, queuing(4, 1, 10, 4));
        let a = dispatched(&mut qs, t0, req(0, 1, t0 + FAR));
        // One active queue asking for 1 seat: R advances 1 seat-second per second.
        let s = qs.stats();
        assert_eq!(s.queues[0].next_dispatch_r, 0.003, "charged G at dispatch");
        let b = dispatched(&mut qs, t0 + Duration::from_secs(2), req(1, 1, t0 + FAR));
        assert_eq!(qs.stats().current_r, 2.0);
        // Two active queues, 2 seats asked for: min(2, 4) / 2 = 1 per second each.
        let _wide = queued(&mut qs, t0 + Duration::from_secs(3), req(1, 4, t0 + FAR));
        assert_eq!(qs.stats().current_r, 3.0);
        // Now 6 seats are asked for: min(6, 4) / 2 = 2 per second.
        assert_eq!(qs.finish(t0 + Duration::from_secs(4), a), vec![]);
        let s = qs.stats();
        assert_eq!(s.current_r, 5.0);
        // Queue 0: 0.003 + 1 × (4 s − 3 ms) = 4.0.
        assert_eq!(s.queues[0].next_dispatch_r, 4.0);
        // Queue 1: b charged at R = 2.0 (fresh queue) + G; the waiting wide head arrived at R
        // 3.0, which bounds the queue's start from below (anti-windup).
        assert_eq!(s.queues[1].next_dispatch_r, 3.0);
        let _ = b;
    }

    #[test]
    fn seat_demand_is_integrated_for_borrowing() {
        let t0 = Instant::now();
        let mut qs = qs(t0, queuing(1, 1, 10, 2));
        let a = dispatched(&mut qs, t0, req(0, 1, t0 + FAR));
        let _b = dispatched(&mut qs, t0, req(0, 1, t0 + FAR));
        let _c = queued(&mut qs, t0, req(0, 1, t0 + FAR));
        // Demand 3 for one second, then 2 (c takes a's seat) for one second.
        assert_eq!(qs.finish(t0 + Duration::from_secs(1), a).len(), 1);
        let d = qs.take_seat_demand(t0 + Duration::from_secs(2));
        assert_eq!((d.duration, d.average, d.deviation, d.max), (2.0, 2.5, 0.5, 3.0));
        // A new period starts from the current value.
        let d = qs.take_seat_demand(t0 + Duration::from_secs(3));
        assert_eq!((d.duration, d.average, d.deviation, d.min, d.max), (1.0, 2.0, 0.0, 2.0, 2.0));
    }

    #[test]
    fn seats_held_outside_count_in_the_demand_and_the_stats() {
        let t0 = Instant::now();
        let mut qs = QueueSet::new(t0, QueueSetConfig { queuing: Queuing::Exempt, concurrency_limit: 0 }).unwrap();
        let _a = dispatched(&mut qs, t0, req(0, 1, t0 + FAR));
        qs.set_seats_outside(t0, 3);
        assert_eq!(qs.stats().seats_in_use, 4);
        qs.set_seats_outside(t0 + Duration::from_secs(1), 0);
        let d = qs.take_seat_demand(t0 + Duration::from_secs(2));
        assert_eq!((d.average, d.max), (2.5, 4.0));
    }

    #[test]
    fn the_epoch_advances_before_r_overflows_and_order_is_kept() {
        let t0 = Instant::now();
        let mut qs = qs(t0, queuing(2, 1, 10, 1));
        let a = dispatched(&mut qs, t0, req(0, 1, t0 + FAR));
        let b = queued(&mut qs, t0, req(0, 1, t0 + FAR));
        let c = queued(&mut qs, t0, req(1, 1, t0 + FAR));
        // Push R (and the readings taken from it) just below the threshold.
        let shift = HIGH_R.0 - 1000;
        qs.current_r.0 += shift;
        for q in &mut qs.queues {
            q.next_dispatch_r.0 += shift;
        }
        for r in qs.requests.values_mut() {
            r.arrival_r.0 += shift;
        }
        // Without the shift the order is the same: queue 1 is fresh, queue 0 was charged for a.
        assert_eq!(qs.finish(t0 + Duration::from_secs(1), a), vec![c]);
        assert!(qs.current_r < R_DECREMENT, "wound back");
        assert!(qs.queues[0].next_dispatch_r < R_DECREMENT);
        assert_eq!(qs.finish(t0 + Duration::from_secs(2), c), vec![b]);
    }

    /// Two flows on the suggested levels' shape (64 queues, hands of 6, 50 per queue): one
    /// keeps ten times the level's capacity waiting, the other sends a request every 250 ms.
    /// Every request takes 100 ms. The light flow's requests are served within two rounds of
    /// seats (110 ms on average), while the heavy flow's wait behind their own backlog (about
    /// 900 ms on average).
    #[test]
    fn a_light_flow_is_not_stuck_behind_a_flooding_one() {
        let t0 = Instant::now();
        let limit = 4;
        let mut qs = qs(t0, queuing(64, 6, 50, limit));
        let heavy_hash = flow_hash("global-default", "heavy");
        let light_hash = flow_hash("global-default", "light");
        let dealer = Dealer::new(64, 6).unwrap();
        let (heavy_hand, light_hand) = (dealer.deal(heavy_hash), dealer.deal(light_hash));
        assert!(heavy_hand.iter().all(|q| !light_hand.contains(q)), "the two hands share no queue");

        let service = ms(100);
        let mut arrived: HashMap<RequestId, (Instant, bool)> = HashMap::new();
        let mut running: Vec<(Instant, RequestId)> = Vec::new();
        let (mut light_waits, mut heavy_waits) = (Vec::new(), Vec::new());
        let mut start = |now: Instant,
                         ids: Vec<RequestId>,
                         arrived: &HashMap<RequestId, (Instant, bool)>,
                         running: &mut Vec<(Instant, RequestId)>| {
            for id in ids {
                let (at, light) = arrived[&id];
                if light {
                    light_waits.push(now - at)
                } else {
                    heavy_waits.push(now - at)
                }
                running.push((now + service, id));
            }
        };
        let submit =
            |qs: &mut QueueSet, now: Instant, light: bool, arrived: &mut HashMap<RequestId, (Instant, bool)>| {
                let e = qs.enqueue(now, req(if light { light_hash } else { heavy_hash }, 1, now + FAR));
                let id = match e.outcome {
                    Outcome::Dispatched(id) | Outcome::Queued(id) => id,
                    Outcome::Rejected(reason) => panic!("rejected: {reason:?}"),
                };
                arrived.insert(id, (now, light));
                e.dispatched
            };
        for _ in 0..10 * limit {
            let d = submit(&mut qs, t0, false, &mut arrived);
            start(t0, d, &arrived, &mut running);
        }
        for step in 1..=5200u64 {
            let now = t0 + ms(step);
            let (done, still): (Vec<_>, Vec<_>) = running.iter().partition(|(end, _)| *end <= now);
            running = still;
            for (_, id) in done {
                let d = qs.finish(now, id);
                start(now, d, &arrived, &mut running);
                if !arrived[&id].1 {
                    // The heavy flow tops its backlog up at once.
                    let d = submit(&mut qs, now, false, &mut arrived);
                    start(now, d, &arrived, &mut running);
                }
            }
            if step % 250 == 0 && step <= 5000 {
                let d = submit(&mut qs, now, true, &mut arrived);
                start(now, d, &arrived, &mut running);
            }
        }
        assert_eq!(light_waits.len(), 20, "every light request was served");
        // All four seats free up in the same instant here, so a request waits for the next
        // round (up to 100 ms). The heavy backlog that arrived at once was charged kube's
        // initial guess of G (3 ms) before any request finished, so for the first second it
        // takes several seats a round and a light request may wait up to three rounds. Once G
        // follows the measured service time, a light request is served within one round:
        // its wait is bounded by rounds, never by the heavy backlog.
        let (warm_up, steady) = light_waits.split_at(3);
        assert!(warm_up.iter().all(|w| *w <= 3 * service), "light waits: {light_waits:?}");
        assert!(steady.iter().all(|w| *w <= service), "light waits: {light_waits:?}");
        let light_mean = steady.iter().sum::<Duration>() / steady.len() as u32;
        assert!(light_mean < ms(80), "kube's fixed 3 ms gave 110 ms here: {light_waits:?}");
        let heavy_mean = heavy_waits.iter().sum::<Duration>() / heavy_waits.len() as u32;
        assert!(heavy_mean >= ms(800), "the heavy flow waits behind its own backlog: {heavy_mean:?}");
        assert_eq!(qs.stats().rejected, RejectCounts::default());
    }

    /// The same in miniature, every step exact: one flow queues 40 requests at once on 4 seats;
    /// a second flow's request arriving 10 ms later is the very next one dispatched.
    #[test]
    fn the_light_request_is_dispatched_at_the_first_free_seat() {
        let t0 = Instant::now();
        let mut qs = qs(t0, queuing(8, 1, 100, 4));
        let heavy: Vec<RequestId> = (0..40)
            .map(|_| {
                let e = qs.enqueue(t0, req(0, 1, t0 + FAR));
                match e.outcome {
                    Outcome::Dispatched(id) | Outcome::Queued(id) => id,
                    Outcome::Rejected(r) => panic!("{r:?}"),
                }
            })
            .collect();
        assert_eq!(qs.stats().executing, 4);
        let light = queued(&mut qs, t0 + ms(10), req(1, 1, t0 + FAR));
        assert_eq!(qs.finish(t0 + ms(100), heavy[0]), vec![light]);
        assert_eq!(qs.finish(t0 + ms(100), heavy[1]), vec![heavy[4]]);
        assert_eq!(qs.stats().queues[0].waiting, 35);
    }
}
