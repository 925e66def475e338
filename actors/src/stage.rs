//! Metered handles to stage actors.
//!
//! A stage is an actix actor whose mailbox is bounded by a semaphore we own: actix exposes no
//! mailbox length and its own capacity parks senders without a deadline, so the semaphore is the
//! bound (the actix channel is set unbounded) and [`StageMeters`] counts what goes in and out.
//!
//! A caller reaches a stage only through a [`StageHandle`] for one message type. `call` waits
//! for a mailbox slot up to the handle's deadline and then fails with [`StageError::Saturated`]
//! (429 with Retry-After): a full mailbox pushes back instead of growing memory.
//!
//! The actor opens each [`Envelope`] with [`stage_handler!`](crate::stage_handler), which frees the
//! slot, counts the dequeue and forwards the inner message to the actor's plain `Handler`.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use actix::{Actor, Addr, Arbiter, Context, Message, Recipient};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, oneshot};

use crate::error::ApiError;
use crate::registry::{ActorRegistry, Registration};

/// Why a stage could not be reached.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StageError {
    /// The mailbox stayed full for the whole deadline.
    #[error("the {stage} stage is saturated: its mailbox stayed full for {waited:?}")]
    Saturated {
        /// Stage name.
        stage: String,
        /// How long the caller waited.
        waited: Duration,
    },
    /// The actor stopped or dropped the request without answering.
    #[error("the {stage} stage is not running")]
    Stopped {
        /// Stage name.
        stage: String,
    },
}

impl From<StageError> for ApiError {
    fn from(e: StageError) -> Self {
        match e {
            StageError::Saturated { .. } => ApiError::too_many_requests(format!("{e}; please try again later"), 1),
            StageError::Stopped { .. } => ApiError::unavailable(e.to_string()),
        }
    }
}

/// Log2 latency buckets in microseconds: bucket `i` holds samples in `[2^i, 2^(i+1))` µs.
const BUCKETS: usize = 36;

/// Shared counters of one actor's mailbox. Everything is atomic so the admin endpoint reads it
/// without messaging the (possibly saturated) actor.
#[derive(Debug)]
pub struct StageMeters {
    /// Stage name (`authentication`, `cacher`, ...).
    pub stage: String,
    /// Resource for per-resource actors (cachers), `""` otherwise.
    pub resource: String,
    /// Mailbox capacity.
    pub capacity: usize,
    enqueued: AtomicU64,
    dequeued: AtomicU64,
    errors: AtomicU64,
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
    errors: metrics::Counter,
    depth: metrics::Gauge,
    latency: metrics::Histogram,
}

/// A call metered by [`StageMeters::start_call`]; ends when dropped.
pub struct CallInFlight {
    meters: Arc<StageMeters>,
    started: Instant,
}

impl Drop for CallInFlight {
    fn drop(&mut self) {
        self.meters.on_dequeued();
        self.meters.observe(self.started.elapsed());
    }
}

/// A point-in-time copy of [`StageMeters`], as the admin endpoint reports it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct MeterSnapshot {
    /// Stage name.
    pub stage: String,
    /// Resource, for cachers.
    pub resource: String,
    /// Messages waiting in the mailbox.
    pub mailbox_depth: u64,
    /// Mailbox capacity.
    pub mailbox_capacity: usize,
    /// Messages enqueued since start.
    pub enqueued: u64,
    /// Messages dequeued since start.
    pub dequeued: u64,
    /// Replies that were errors, plus requests refused for a full mailbox.
    pub errors: u64,
    /// Messages handled per second over the last full second.
    pub throughput_per_sec: u64,
    /// Median time from enqueue to reply, in milliseconds.
    pub latency_p50_ms: f64,
    /// 99th percentile time from enqueue to reply, in milliseconds.
    pub latency_p99_ms: f64,
}

impl StageMeters {
    /// Meters for one actor, with Prometheus series labelled by stage and resource.
    pub fn new(stage: &str, resource: &str, capacity: usize) -> Self {
        let labels = [("stage", stage.to_string()), ("resource", resource.to_string())];
        let prom = PromMeters {
            enqueued: metrics::counter!("apiserver_stage_mailbox_enqueued_total", &labels),
            dequeued: metrics::counter!("apiserver_stage_mailbox_dequeued_total", &labels),
            errors: metrics::counter!("apiserver_stage_errors_total", &labels),
            depth: metrics::gauge!("apiserver_stage_mailbox_depth", &labels),
            latency: metrics::histogram!("apiserver_stage_latency_seconds", &labels),
        };
        metrics::gauge!("apiserver_stage_mailbox_capacity", &labels).set(capacity as f64);
        StageMeters {
            stage: stage.to_string(),
            resource: resource.to_string(),
            capacity,
            enqueued: AtomicU64::new(0),
            dequeued: AtomicU64::new(0),
            errors: AtomicU64::new(0),
            latency_us: std::array::from_fn(|_| AtomicU64::new(0)),
            rate_window_start: AtomicU64::new(0),
            rate_window_count: AtomicU64::new(0),
            last_rate: AtomicU64::new(0),
            started: Instant::now(),
            prom,
        }
    }

    fn depth(&self) -> u64 {
        self.enqueued.load(Ordering::Relaxed).saturating_sub(self.dequeued.load(Ordering::Relaxed))
    }

    fn on_enqueued(&self) {
        self.enqueued.fetch_add(1, Ordering::Relaxed);
        self.prom.enqueued.increment(1);
        self.prom.depth.set(self.depth() as f64);
    }

    fn on_dequeued(&self) {
        self.dequeued.fetch_add(1, Ordering::Relaxed);
        self.prom.dequeued.increment(1);
        self.prom.depth.set(self.depth() as f64);
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

    /// Meters a call served without a mailbox (a read of a shared snapshot): it counts as
    /// enqueued now and dequeued, with its latency, when the returned guard drops, so the
    /// depth shows the calls in flight.
    pub fn start_call(self: &Arc<Self>) -> CallInFlight {
        self.on_enqueued();
        CallInFlight { meters: self.clone(), started: Instant::now() }
    }

    /// Counts a failed call (an error reply or a refused enqueue).
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
        MeterSnapshot {
            stage: self.stage.clone(),
            resource: self.resource.clone(),
            mailbox_depth: self.depth(),
            mailbox_capacity: self.capacity,
            enqueued: self.enqueued.load(Ordering::Relaxed),
            dequeued: self.dequeued.load(Ordering::Relaxed),
            errors: self.errors.load(Ordering::Relaxed),
            throughput_per_sec: throughput,
            latency_p50_ms: self.quantile_ms(0.50),
            latency_p99_ms: self.quantile_ms(0.99),
        }
    }
}

/// A message in a stage mailbox, holding its slot until the actor opens it.
pub struct Envelope<M: Message> {
    msg: M,
    reply: oneshot::Sender<M::Result>,
    meters: Arc<StageMeters>,
    /// Held while the message waits in the mailbox; dropping it frees a slot for the next caller.
    _slot: OwnedSemaphorePermit,
}

impl<M: Message> Message for Envelope<M> {
    type Result = ();
}

impl<M: Message> Envelope<M> {
    /// Takes the message out, freeing its mailbox slot and counting the dequeue.
    pub fn open(self) -> (M, oneshot::Sender<M::Result>) {
        self.meters.on_dequeued();
        (self.msg, self.reply)
    }
}

/// Implements `Handler<Envelope<M>>` for an actor by opening the envelope and forwarding to the
/// actor's `Handler<M>`, whose response (sync value or future) answers the caller.
#[macro_export]
macro_rules! stage_handler {
    ($actor:ty => $($msg:ty),+ $(,)?) => {$(
        impl ::actix::Handler<$crate::stage::Envelope<$msg>> for $actor {
            type Result = ();
            fn handle(&mut self, env: $crate::stage::Envelope<$msg>, ctx: &mut Self::Context) {
                let (msg, reply) = env.open();
                let response = <Self as ::actix::Handler<$msg>>::handle(self, msg, ctx);
                ::actix::dev::MessageResponse::<Self, $msg>::handle(response, ctx, Some(reply));
            }
        }
    )+};
}

/// The bounded mailbox of one actor: the slots and the meters every handle to it shares.
#[derive(Clone)]
pub struct Mailbox {
    slots: Arc<Semaphore>,
    meters: Arc<StageMeters>,
    wait: Duration,
    _registration: Arc<Registration>,
}

impl Mailbox {
    /// A mailbox of `capacity` slots, registered in `registry`; callers wait at most `wait` for
    /// a slot.
    pub fn new(registry: &ActorRegistry, stage: &str, resource: &str, capacity: usize, wait: Duration) -> Self {
        let meters = Arc::new(StageMeters::new(stage, resource, capacity));
        let registration = registry.register(meters.clone());
        Mailbox { slots: Arc::new(Semaphore::new(capacity)), meters, wait, _registration: Arc::new(registration) }
    }

    /// Starts `actor` on `arbiter` with an actix channel left unbounded: this mailbox's slots
    /// are the bound.
    pub fn start<A>(&self, arbiter: &Arbiter, actor: A) -> Addr<A>
    where
        A: Actor<Context = Context<A>> + Send,
    {
        A::start_in_arbiter(&arbiter.handle(), move |ctx: &mut Context<A>| {
            ctx.set_mailbox_capacity(0);
            actor
        })
    }

    /// A handle for one message type.
    pub fn handle<M>(&self, recipient: Recipient<Envelope<M>>) -> StageHandle<M>
    where
        M: Message + Send + 'static,
        M::Result: Send,
    {
        StageHandle { recipient, mailbox: self.clone() }
    }

    /// The shared meters.
    pub fn meters(&self) -> &Arc<StageMeters> {
        &self.meters
    }
}

/// A typed, metered, bounded way to reach a stage with messages of type `M`.
pub struct StageHandle<M>
where
    M: Message + Send + 'static,
    M::Result: Send,
{
    recipient: Recipient<Envelope<M>>,
    mailbox: Mailbox,
}

impl<M> Clone for StageHandle<M>
where
    M: Message + Send + 'static,
    M::Result: Send,
{
    fn clone(&self) -> Self {
        StageHandle { recipient: self.recipient.clone(), mailbox: self.mailbox.clone() }
    }
}

impl<M> StageHandle<M>
where
    M: Message + Send + 'static,
    M::Result: Send,
{
    /// Sends `msg` and waits for the reply. Waits for a mailbox slot at most the mailbox's
    /// deadline; the reply itself is awaited without a deadline (the request's own timeout
    /// bounds it).
    pub async fn call(&self, msg: M) -> Result<M::Result, StageError> {
        let meters = &self.mailbox.meters;
        let started = Instant::now();
        let slot = match tokio::time::timeout(self.mailbox.wait, self.mailbox.slots.clone().acquire_owned()).await {
            Ok(Ok(slot)) => slot,
            Ok(Err(_closed)) => return Err(StageError::Stopped { stage: meters.stage.clone() }),
            Err(_elapsed) => {
                meters.on_error();
                return Err(StageError::Saturated { stage: meters.stage.clone(), waited: self.mailbox.wait });
            }
        };
        let (reply, rx) = oneshot::channel();
        let env = Envelope { msg, reply, meters: meters.clone(), _slot: slot };
        if self.recipient.try_send(env).is_err() {
            meters.on_error();
            return Err(StageError::Stopped { stage: meters.stage.clone() });
        }
        meters.on_enqueued();
        let out = rx.await.map_err(|_| {
            meters.on_error();
            StageError::Stopped { stage: meters.stage.clone() }
        });
        meters.observe(started.elapsed());
        out
    }

    /// The meters of the mailbox behind this handle.
    pub fn meters(&self) -> &Arc<StageMeters> {
        &self.mailbox.meters
    }
}

/// Replies that are `Result`s count their errors against the stage.
pub trait CountErrors {
    /// Whether the reply is an error.
    fn is_error(&self) -> bool;
}

impl<T, E> CountErrors for Result<T, E> {
    fn is_error(&self) -> bool {
        self.is_err()
    }
}

impl<M, T> StageHandle<M>
where
    M: Message<Result = Result<T, ApiError>> + Send + 'static,
    T: Send + 'static,
{
    /// Like [`call`](Self::call) for stages answering `Result<_, ApiError>`: mailbox failures
    /// become their Status (429/503) and error replies are counted.
    pub async fn ask(&self, msg: M) -> Result<T, ApiError> {
        let reply = self.call(msg).await?;
        if reply.is_error() {
            self.mailbox.meters.on_error();
        }
        reply
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use actix::{Handler, ResponseFuture};

    struct Sleeper;
    impl Actor for Sleeper {
        type Context = Context<Self>;
    }

    #[derive(Message)]
    #[rtype(result = "Result<u32, ApiError>")]
    struct Nap(u64);

    impl Handler<Nap> for Sleeper {
        type Result = ResponseFuture<Result<u32, ApiError>>;
        fn handle(&mut self, msg: Nap, _: &mut Context<Self>) -> Self::Result {
            Box::pin(async move {
                tokio::time::sleep(Duration::from_millis(msg.0)).await;
                Ok(msg.0 as u32)
            })
        }
    }

    #[derive(Message)]
    #[rtype(result = "u32")]
    struct Block(u64);

    impl Handler<Block> for Sleeper {
        type Result = u32;
        fn handle(&mut self, msg: Block, _: &mut Context<Self>) -> u32 {
            std::thread::sleep(Duration::from_millis(msg.0));
            1
        }
    }

    crate::stage_handler!(Sleeper => Nap, Block);

    #[actix::test]
    async fn replies_flow_and_are_counted() {
        let registry = ActorRegistry::default();
        let mb = Mailbox::new(&registry, "sleeper", "", 4, Duration::from_millis(50));
        let addr = mb.start(&Arbiter::new(), Sleeper);
        let h = mb.handle::<Nap>(addr.recipient());
        assert_eq!(h.ask(Nap(1)).await.unwrap(), 1);
        let snap = registry.snapshot();
        assert_eq!(snap.len(), 1);
        assert_eq!((snap[0].enqueued, snap[0].dequeued, snap[0].mailbox_depth), (1, 1, 0));
    }

    #[actix::test]
    async fn full_mailbox_pushes_back_with_429() {
        let registry = ActorRegistry::default();
        let mb = Mailbox::new(&registry, "blocker", "", 2, Duration::from_millis(100));
        let addr = mb.start(&Arbiter::new(), Sleeper);
        let h = mb.handle::<Block>(addr.recipient());
        // One message is being handled (its slot freed on open), two fill the mailbox.
        let busy: Vec<_> = (0..3)
            .map(|_| {
                tokio::spawn({
                    let h = h.clone();
                    async move { h.call(Block(600)).await }
                })
            })
            .collect();
        tokio::time::sleep(Duration::from_millis(150)).await;
        let refused = h.call(Block(0)).await.unwrap_err();
        assert!(matches!(refused, StageError::Saturated { .. }));
        let status = ApiError::from(refused);
        assert_eq!((status.code, status.retry_after_seconds), (429, Some(1)));
        let snap = &registry.snapshot()[0];
        assert_eq!(snap.mailbox_depth, 2, "two wait while one is handled");
        assert_eq!(snap.errors, 1);
        for b in busy {
            assert_eq!(b.await.unwrap().unwrap(), 1);
        }
        assert_eq!(registry.snapshot()[0].mailbox_depth, 0);
    }
}
