//! Graceful termination as kube-apiserver 1.30 does it: its lifecycle signals
//! (`k8s.io/apiserver/pkg/server/lifecycle_signals.go`), the filters that turn requests away
//! while it shuts down (`WithRetryAfter`, `WithWaitGroup`), and the sequence from SIGTERM to
//! exit (`genericapiserver.go`'s `RunWithContext`).
//!
//! The sequence, each step logged by its signal's name:
//!
//! 1. `ShutdownInitiated` (SIGTERM or SIGINT): `/readyz` fails its `shutdown` check so load
//!    balancers move traffic away; everything else is served as before. (The controllers stop
//!    and give their Lease up now, beside the sequence: see `controllers::leader`.)
//! 2. `AfterShutdownDelayDuration`, `--shutdown-delay-duration` later. Without
//!    `--shutdown-send-retry-after` the listener closes now (`HTTPServerStoppedListening`):
//!    new connections are refused, and HTTP/1 connections close once their request is
//!    answered.
//! 3. `NotAcceptingNewRequest`, at the same moment (kube waits for its pre-shutdown hooks
//!    first; this server has none): a new request on a connection still open gets 503
//!    `apiserver is shutting down` (or, with `--shutdown-send-retry-after`, kube's 429 with
//!    `Retry-After: 5`); probes and `/metrics` are still answered. Watches end now, cleanly, so
//!    their clients re-watch elsewhere from their last resourceVersion: as in kube, at 200 a
//!    second or faster, so that all have ended within `--shutdown-watch-termination-grace-period`
//!    (with none, all at once; kube leaves them to be cut at exit).
//! 4. `InFlightRequestsDrained`: every request that was being served has been answered in full
//!    (each is bounded by its deadline), and the watches have ended.
//! 5. With `--shutdown-send-retry-after`, the listener closes only now
//!    (`HTTPServerStoppedListening`). The composition root then closes storage and exits 0.
//!
//! Requests are counted in flight from the chain's entry until their response body is sent
//! (or dropped) when it is streamed, not only until the handler returns: a list streamed in
//! chunks is still being answered after its handler is done.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use actix_web::body::{BodySize, BoxBody, MessageBody};
use actix_web::dev::ServerHandle;
use actix_web::{HttpRequest, HttpResponse};
use bytes::Bytes;
use tokio::sync::Notify;

/// Paths kube never turns away while shutting down: probes and metrics scraping.
const EXEMPT_PATH_PREFIXES: [&str; 4] = ["/readyz", "/livez", "/healthz", "/metrics"];

/// The user agent of kube-apiserver's loopback client, exempt as the paths above.
const LOOPBACK_USER_AGENT: &str = "kube-apiserver/";

/// kube's answer to a request refused with 429 during shutdown (`WithRetryAfter`).
pub const RETRY_AFTER_MESSAGE: &str = "The apiserver is shutting down, please try again later.";

/// The `Retry-After` of kube's 429 during shutdown: time enough to reach another server.
const RETRY_AFTER_SECONDS: u64 = 5;

/// kube's floor on how fast watches are ended during shutdown (a watch every 5 ms at least),
/// so a long grace period does not keep a few watches waiting for nothing.
const MIN_WATCH_END_RATE: f64 = 200.0;

/// How long ended watches may take to send their last bytes, past the grace period.
const WATCH_CLOSE_TIMEOUT: Duration = Duration::from_secs(2);

/// How long the HTTP workers may take to finish writing once everything has drained. Idle
/// HTTP/2 connections are never closed by the workers themselves, so the exit does not wait
/// for them past this.
const FLUSH_TIMEOUT: Duration = Duration::from_secs(2);

pub use stage_handles::Signal;

/// The signals of kube's shutdown sequence, in the order they fire.
pub struct LifecycleSignals {
    /// SIGTERM or SIGINT arrived.
    pub shutdown_initiated: Signal,
    /// `--shutdown-delay-duration` has passed since.
    pub after_shutdown_delay_duration: Signal,
    /// New requests are refused, and watches end.
    pub not_accepting_new_request: Signal,
    /// Every request in flight has been answered and every watch has ended.
    pub in_flight_requests_drained: Signal,
    /// The serving listener is closed.
    pub http_server_stopped_listening: Signal,
}

impl Default for LifecycleSignals {
    fn default() -> Self {
        LifecycleSignals {
            shutdown_initiated: Signal::new("ShutdownInitiated"),
            after_shutdown_delay_duration: Signal::new("AfterShutdownDelayDuration"),
            not_accepting_new_request: Signal::new("NotAcceptingNewRequest"),
            in_flight_requests_drained: Signal::new("InFlightRequestsDrained"),
            http_server_stopped_listening: Signal::new("HTTPServerStoppedListening"),
        }
    }
}

/// A request refused because [`RequestWaitGroup::wait`] has begun.
#[derive(Debug, thiserror::Error)]
#[error("apiserver is shutting down")]
pub struct ShuttingDown;

/// kube's `SafeWaitGroup`: counts requests in flight and, once [`wait`](Self::wait) has begun,
/// refuses to count new ones, so the count can only fall to zero.
#[derive(Default)]
pub struct RequestWaitGroup {
    /// The count and whether a wait has begun, under one lock: a request counted just as the
    /// wait begins is either refused or waited for, never neither.
    state: Mutex<WaitState>,
    /// Woken when the count reaches zero.
    idle: Notify,
}

#[derive(Default)]
struct WaitState {
    count: usize,
    waiting: bool,
}

impl RequestWaitGroup {
    /// Counts a request until the returned guard is dropped; refused once a wait has begun.
    pub fn add(self: &Arc<Self>) -> Result<InFlightRequest, ShuttingDown> {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if state.waiting {
            return Err(ShuttingDown);
        }
        state.count += 1;
        Ok(InFlightRequest(self.clone()))
    }

    /// Requests in flight.
    pub fn len(&self) -> usize {
        self.state.lock().unwrap_or_else(PoisonError::into_inner).count
    }

    /// Whether no request is in flight.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Refuses new requests from now on and resolves once none is in flight.
    pub async fn wait(&self) {
        loop {
            // Registered before the count is read, so a guard dropped in between still wakes it.
            let idle = self.idle.notified();
            tokio::pin!(idle);
            idle.as_mut().enable();
            {
                let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
                state.waiting = true;
                if state.count == 0 {
                    return;
                }
            }
            idle.await;
        }
    }
}

/// A request's place in a [`RequestWaitGroup`], given back when dropped.
pub struct InFlightRequest(Arc<RequestWaitGroup>);

impl Drop for InFlightRequest {
    fn drop(&mut self) {
        let mut state = self.0.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.count -= 1;
        if state.count == 0 {
            self.0.idle.notify_waiters();
        }
    }
}

/// Why the chain turns a request away while the server shuts down.
#[derive(Debug, PartialEq, Eq)]
pub enum Refusal {
    /// kube's `WithRetryAfter` (`--shutdown-send-retry-after`): 429, try another server.
    RetryAfter,
    /// kube's `WithWaitGroup`: 503, the server no longer takes requests.
    ShuttingDown,
}

impl Refusal {
    /// The answer, as kube words and heads it.
    pub fn response(&self) -> HttpResponse {
        match self {
            // `http.Error`'s plain text, and `Connection: close` so the client's next attempt
            // opens a connection, most likely to another server.
            Refusal::RetryAfter => HttpResponse::TooManyRequests()
                .force_close()
                .insert_header(("Retry-After", RETRY_AFTER_SECONDS.to_string()))
                .insert_header(("X-Content-Type-Options", "nosniff"))
                .content_type("text/plain; charset=utf-8")
                .body(format!("{RETRY_AFTER_MESSAGE}\n")),
            Refusal::ShuttingDown => {
                let status = apimachinery::error::ApiError::unavailable(ShuttingDown.to_string()).to_status();
                HttpResponse::ServiceUnavailable()
                    .insert_header(("Retry-After", "1"))
                    .insert_header(("X-Content-Type-Options", "nosniff"))
                    .content_type("application/json")
                    .body(serde_json::to_vec(&status).unwrap_or_default())
            }
        }
    }
}

/// What kind of request the chain asks [`Lifecycle::admit`] about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RequestKind {
    /// Bounded by the request deadline: drained before the listener closes.
    Short,
    /// A watch (the one long-running request): ended at the grace period.
    Watch,
}

/// The shutdown state every request consults, shared by the chain, the health checks and the
/// watch streams.
pub struct Lifecycle {
    /// Where the sequence stands.
    pub signals: LifecycleSignals,
    /// Requests other than long-running ones, in flight.
    pub requests: Arc<RequestWaitGroup>,
    /// Watches being served.
    pub watches: Arc<RequestWaitGroup>,
    /// The turns in which watches end.
    watch_ends: Arc<WatchEnds>,
    /// `--shutdown-send-retry-after`.
    send_retry_after: bool,
}

impl Lifecycle {
    /// A server not shutting down.
    pub fn new(send_retry_after: bool) -> Self {
        Lifecycle {
            signals: LifecycleSignals::default(),
            requests: Arc::default(),
            watches: Arc::default(),
            watch_ends: Arc::default(),
            send_retry_after,
        }
    }

    /// The chain's first step: a request refused ([`Refusal`]), or served, counted in flight
    /// while the returned guard lives (probes and metrics are never counted nor refused, as in
    /// kube, so they cannot hold the shutdown).
    pub fn admit(&self, req: &HttpRequest, kind: RequestKind) -> Result<Option<InFlightRequest>, Refusal> {
        if exempt(req) {
            return Ok(None);
        }
        if self.send_retry_after && self.signals.not_accepting_new_request.signaled() {
            return Err(Refusal::RetryAfter);
        }
        let group = match kind {
            RequestKind::Short => &self.requests,
            RequestKind::Watch => &self.watches,
        };
        group.add().map(Some).map_err(|ShuttingDown| Refusal::ShuttingDown)
    }

    /// Resolves when a watch is to end: at `NotAcceptingNewRequest`, after the watches that
    /// took their turn before it.
    pub fn watches_end(&self) -> impl Future<Output = ()> + 'static {
        let (shutting_down, turns) = (self.signals.not_accepting_new_request.wait(), self.watch_ends.clone());
        async move {
            shutting_down.await;
            tokio::time::sleep(turns.next_turn()).await;
        }
    }

    /// Runs the sequence of the module's doc, from `ShutdownInitiated` to the listener closed
    /// and the HTTP workers done (or [`FLUSH_TIMEOUT`] spent on them).
    pub async fn shut_down(&self, options: &ShutdownOptions, server: &ServerHandle) {
        let signals = &self.signals;
        signals.shutdown_initiated.signal();
        tokio::time::sleep(options.delay).await;
        signals.after_shutdown_delay_duration.signal();
        let stopping = (!options.send_retry_after).then(|| self.stop_listening(server));
        self.watch_ends.pace(self.watches.len(), options.watch_grace);
        signals.not_accepting_new_request.signal();
        tokio::join!(self.drain_requests(options.drain_timeout), self.end_watches(options.watch_grace));
        signals.in_flight_requests_drained.signal();
        let stopping = stopping.unwrap_or_else(|| self.stop_listening(server));
        if tokio::time::timeout(FLUSH_TIMEOUT, stopping).await.is_err() {
            tracing::info!("[graceful-termination] connections still open are closed at exit");
        }
    }

    /// Closes the listener; the returned future resolves once the HTTP workers have stopped.
    fn stop_listening(&self, server: &ServerHandle) -> impl Future<Output = ()> + 'static {
        // The stop command is sent before the future is first polled: the acceptor drops the
        // listening socket, and HTTP/1 connections close once their current request is done.
        let stopped = server.stop(true);
        self.signals.http_server_stopped_listening.signal();
        stopped
    }

    /// Waits for the requests in flight, for at most `bound` (past the longest deadline, a
    /// request is no longer answered anyway).
    async fn drain_requests(&self, bound: Duration) {
        match tokio::time::timeout(bound, self.requests.wait()).await {
            Ok(()) => tracing::info!("[graceful-termination] in-flight non long-running request(s) have drained"),
            Err(_) => tracing::warn!(
                remaining = self.requests.len(),
                "[graceful-termination] in-flight requests did not drain within {bound:?}"
            ),
        }
    }

    /// Waits for the watches, which end at their turns, to have sent their last bytes.
    async fn end_watches(&self, grace: Duration) {
        let before = self.watches.len();
        let _ = tokio::time::timeout(grace + WATCH_CLOSE_TIMEOUT, self.watches.wait()).await;
        tracing::info!(
            active_watches_before = before,
            active_watches_after = self.watches.len(),
            duration = ?grace,
            "[graceful-termination] active watch request(s) have drained"
        );
    }
}

/// When each watch ends once the server refuses new requests: one after the other, at
/// [`MIN_WATCH_END_RATE`] or faster so all have ended within the grace period (kube's rate
/// limited wait group), sparing the servers the clients move to a burst of re-watches.
#[derive(Default)]
struct WatchEnds {
    /// The time between two ends, in nanoseconds; set before the signal the watches wait for.
    interval_nanos: AtomicU64,
    /// Turns taken so far.
    taken: AtomicU64,
}

impl WatchEnds {
    /// Spreads `watches` ends over at most `grace` (none: all at once).
    fn pace(&self, watches: usize, grace: Duration) {
        let interval = if grace.is_zero() || watches == 0 {
            Duration::ZERO
        } else {
            (grace / watches as u32).min(Duration::from_secs_f64(1.0 / MIN_WATCH_END_RATE))
        };
        self.interval_nanos.store(interval.as_nanos() as u64, Ordering::SeqCst);
    }

    /// How long after the signal the next watch ends.
    fn next_turn(&self) -> Duration {
        let turn = self.taken.fetch_add(1, Ordering::SeqCst);
        Duration::from_nanos(self.interval_nanos.load(Ordering::SeqCst).saturating_mul(turn))
    }
}

/// The durations and choices of the sequence, from kube's flags.
#[derive(Clone, Debug)]
pub struct ShutdownOptions {
    /// `--shutdown-delay-duration`.
    pub delay: Duration,
    /// `--shutdown-send-retry-after`.
    pub send_retry_after: bool,
    /// `--shutdown-watch-termination-grace-period`: the longest time watches take to end.
    pub watch_grace: Duration,
    /// The longest wait for requests in flight: the longest deadline a request can have.
    pub drain_timeout: Duration,
}

/// kube's `isRequestExemptFromRetryAfter`.
fn exempt(req: &HttpRequest) -> bool {
    let path = req.path();
    EXEMPT_PATH_PREFIXES.iter().any(|p| path.starts_with(p))
        || req
            .headers()
            .get("User-Agent")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|agent| agent.starts_with(LOOPBACK_USER_AGENT))
}

/// SIGTERM and SIGINT, caught from [`install`](Self::install) on: the first starts the
/// shutdown; a second ends the process at once with status 1, as kube's signal handler does.
pub struct TerminationSignals {
    terminate: tokio::signal::unix::Signal,
    interrupt: tokio::signal::unix::Signal,
}

impl TerminationSignals {
    /// Catches both signals from now on (inside a runtime).
    pub fn install() -> std::io::Result<Self> {
        use tokio::signal::unix::{SignalKind, signal};
        Ok(TerminationSignals {
            terminate: signal(SignalKind::terminate())?,
            interrupt: signal(SignalKind::interrupt())?,
        })
    }

    /// Resolves at the first signal (one caught before this was called included).
    pub async fn requested(mut self) {
        let name = tokio::select! {
            _ = self.terminate.recv() => "SIGTERM",
            _ = self.interrupt.recv() => "SIGINT",
        };
        tracing::info!(signal = name, "[graceful-termination] termination requested");
        actix_web::rt::spawn(async move {
            tokio::select! {
                _ = self.terminate.recv() => {}
                _ = self.interrupt.recv() => {}
            }
            tracing::warn!("[graceful-termination] second termination signal: exiting at once");
            std::process::exit(1);
        });
    }
}

/// A response body that keeps its request counted in flight until it has been sent in full or
/// dropped.
struct Counted {
    body: BoxBody,
    _request: InFlightRequest,
}

impl MessageBody for Counted {
    type Error = <BoxBody as MessageBody>::Error;

    fn size(&self) -> BodySize {
        self.body.size()
    }

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Bytes, Self::Error>>> {
        Pin::new(&mut self.body).poll_next(cx)
    }
}

/// `response`, with `request` counted in flight until its body is sent. A body already whole
/// in memory is left as it is and the request counted out now: only writing it is left, which
/// the workers finish after the drain.
pub fn counted_until_sent(response: HttpResponse, request: InFlightRequest) -> HttpResponse {
    response.map_body(|_, body| match body.try_into_bytes() {
        Ok(bytes) => BoxBody::new(bytes),
        Err(body) => BoxBody::new(Counted { body, _request: request }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_wait_group_refuses_new_requests_once_waiting_and_resolves_when_the_last_ends() {
        let group = Arc::new(RequestWaitGroup::default());
        let first = group.add().unwrap();
        let second = group.add().unwrap();
        let waiting = tokio::spawn({
            let group = group.clone();
            async move { group.wait().await }
        });
        tokio::task::yield_now().await;
        assert!(group.add().is_err(), "refused once a wait began");
        drop(first);
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished(), "one request is still in flight");
        drop(second);
        tokio::time::timeout(Duration::from_secs(1), waiting).await.unwrap().unwrap();
        assert!(group.is_empty());
    }

    #[tokio::test]
    async fn a_signal_wakes_waiters_before_and_after_it_fires() {
        let signal = Signal::new("Test");
        let early = tokio::spawn(signal.wait());
        assert!(!signal.signaled());
        signal.signal();
        signal.signal();
        assert!(signal.signaled());
        early.await.unwrap();
        tokio::time::timeout(Duration::from_millis(100), signal.wait()).await.expect("already fired");
    }

    #[test]
    fn watches_end_one_after_the_other_within_the_grace_period_at_kubes_floor_rate_or_faster() {
        let turns = |watches: usize, grace: Duration| {
            let ends = WatchEnds::default();
            ends.pace(watches, grace);
            (0..watches).map(|_| ends.next_turn()).last().unwrap_or_default()
        };
        assert_eq!(turns(3, Duration::from_secs(30)), Duration::from_millis(10), "200 a second: 0, 5, 10 ms");
        assert_eq!(turns(1000, Duration::from_secs(1)), Duration::from_millis(999), "1000 a second to fit in 1 s");
        assert_eq!(turns(50, Duration::ZERO), Duration::ZERO, "no grace period: all at once");
    }

    #[actix_web::test]
    async fn probes_pass_and_the_rest_is_refused_as_kube_refuses_it() {
        use actix_web::test::TestRequest;
        let lifecycle = Lifecycle::new(false);
        let get = TestRequest::get().uri("/api/v1/namespaces").to_http_request();
        let guard = lifecycle.admit(&get, RequestKind::Short).unwrap().expect("counted");
        assert_eq!(lifecycle.requests.len(), 1);
        drop(guard);
        lifecycle.signals.not_accepting_new_request.signal();
        tokio::time::timeout(Duration::from_secs(1), lifecycle.requests.wait()).await.unwrap();
        assert_eq!(lifecycle.admit(&get, RequestKind::Short).err(), Some(Refusal::ShuttingDown));
        let readyz = TestRequest::get().uri("/readyz?verbose").to_http_request();
        assert!(lifecycle.admit(&readyz, RequestKind::Short).unwrap().is_none(), "served, not counted");
        let loopback =
            TestRequest::get().uri("/api").insert_header(("User-Agent", "kube-apiserver/v1.30.0")).to_http_request();
        assert!(lifecycle.admit(&loopback, RequestKind::Short).is_ok());

        let retrying = Lifecycle::new(true);
        assert!(retrying.admit(&get, RequestKind::Short).is_ok(), "served before NotAcceptingNewRequest");
        retrying.signals.not_accepting_new_request.signal();
        let refusal = retrying.admit(&get, RequestKind::Watch).err().unwrap();
        assert_eq!(refusal, Refusal::RetryAfter);
        let response = refusal.response();
        assert_eq!(response.status().as_u16(), 429);
        assert_eq!(response.headers().get("Retry-After").unwrap(), "5");
        let body = actix_web::body::to_bytes(response.into_body()).await.unwrap();
        assert_eq!(body, "The apiserver is shutting down, please try again later.\n");
    }
}
