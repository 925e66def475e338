//! kube's audit (`audit.k8s.io/v1`): each request is recorded at its stages under an audit
//! policy, to a JSON-lines log and/or a webhook, without ever making the request wait.
//!
//! # Layout
//! - [`policy`]: the `Policy` file, evaluated per request to a [`RequestAuditConfig`].
//! - [`event`]: the `Event`, filled in by the HTTP layer, and [`prepare`], which applies the
//!   config's omitted stages and level to a copy about to be emitted.
//! - [`log`]: the `--audit-log-path` backend, rotated as kube rotates it.
//! - [`webhook`]: the `--audit-webhook-config-file` backend, batched, with kube's retries.
//! - here: [`Auditor`], the handle requests record through; [`start`]; the actor writing events.
//!
//! # What the HTTP layer does (kube's `WithAudit` filter)
//! 1. Once the request is authenticated: `let config = auditor.evaluate(&attrs)`. At
//!    [`Level::None`] nothing more is done. Otherwise
//!    `let mut event = Event::received(config.level, audit_id, &attrs, uri, source_ips(..), user_agent, received_at)`
//!    and `auditor.emit(&config, &event, Stage::RequestReceived)`.
//! 2. On the way: [`Event::set_impersonated_user`], [`Event::set_authorization`] (the
//!    decision annotations), [`Event::set_request_object`] or [`Event::set_request_patch`],
//!    [`Event::annotate`].
//! 3. A long-running request (watch), once its response head is sent:
//!    `event.set_response_code(200)`, `auditor.emit(&config, &event, Stage::ResponseStarted)`,
//!    then keep `auditor.complete_on_drop(config, event)` alive in the response stream: it emits
//!    `ResponseComplete` when the stream ends (or `Panic` if it is dropped by a panic).
//! 4. Any other request, once the response is ready: [`Event::set_response_object`] (or
//!    [`Event::set_error`]) and [`Event::set_response_code`], then
//!    `auditor.emit(&config, &event, Stage::ResponseComplete)`.
//!
//! # Why a bounded channel and a plain actix actor, not a stage
//! Recording must never make a request wait, and nothing comes back from it: it is
//! fire-and-forget. A stage (`actors::start`) is request/reply, with an awaited reply and a
//! mailbox whose admission is `async`; so the buffer here is a bounded tokio channel that
//! [`Auditor::record`] `try_send`s into: when it is full the event is dropped and counted
//! (`apiserver_audit_error_total{plugin="buffered"}`, as kube's buffered backend counts it).
//! Its consumer is an actix actor on an arbiter of its own, because the log backend writes
//! files synchronously (blocking nobody else's thread) and the webhook client needs an actix
//! runtime thread. When the last [`Auditor`] is dropped, the channel closes, the actor sends
//! its last batch and stops, and the thread ends once the webhook queue is drained.
//!
//! The buffer is listed in the [`ActorDirectory`] as stage `audit`: an event counts as in
//! progress from the moment it is buffered until it is written, and a dropped event counts as
//! an error.

use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context as TaskContext, Poll};
use std::time::Duration;

use actix::prelude::Stream;
use actix::{Actor, AsyncContext, Context, StreamHandler};
use actors::directory::Registration;
use actors::meters::{CallInFlight, StageMeters};
use actors::{ActorDirectory, WhenFull};
use tokio::sync::mpsc;

use crate::Attributes;
use crate::metrics::{AUDIT_ERROR_TOTAL, AUDIT_EVENT_TOTAL, AUDIT_LEVEL_TOTAL, AUDIT_REQUESTS_REJECTED_TOTAL};
use webhook_client::WebhookClient;

pub mod event;
pub mod log;
pub mod policy;
pub mod webhook;

pub use event::{Event, EventUser, ObjectReference, ResponseStatus, prepare, source_ips};
pub use policy::{AuditPolicy, Level, PolicyError, RequestAuditConfig, Stage};

use self::log::{LogBackend, Rotation};
use self::webhook::{Batcher, WebhookOptions};

/// The audit flags, with kube's defaults.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuditOptions {
    /// `--audit-policy-file`; without it nothing is audited.
    pub policy_file: Option<PathBuf>,
    /// `--audit-log-path`; `-` is standard output.
    pub log_path: Option<PathBuf>,
    /// `--audit-log-maxsize`, megabytes; 0 is lumberjack's 100, as in kube.
    pub log_maxsize_mb: u64,
    /// `--audit-log-maxbackup`; 0 keeps all.
    pub log_maxbackup: usize,
    /// `--audit-log-maxage`, days; 0 keeps all.
    pub log_maxage_days: u64,
    /// `--audit-webhook-config-file`, a kubeconfig.
    pub webhook_config_file: Option<PathBuf>,
    /// `--audit-webhook-batch-max-size`.
    pub webhook_batch_max_size: usize,
    /// `--audit-webhook-batch-max-wait`.
    pub webhook_batch_max_wait: Duration,
    /// `--audit-webhook-initial-backoff`.
    pub webhook_initial_backoff: Duration,
    /// Events buffered between requests and the writer (kube's `--audit-*-batch-buffer-size`).
    pub buffer_size: usize,
}

impl Default for AuditOptions {
    fn default() -> Self {
        AuditOptions {
            policy_file: None,
            log_path: None,
            log_maxsize_mb: 0,
            log_maxbackup: 0,
            log_maxage_days: 0,
            webhook_config_file: None,
            webhook_batch_max_size: 400,
            webhook_batch_max_wait: Duration::from_secs(30),
            webhook_initial_backoff: Duration::from_secs(10),
            buffer_size: 10_000,
        }
    }
}

/// An event in the buffer, metered as in progress until the writer is done with it.
struct Queued {
    event: Event,
    metered: CallInFlight,
}

/// Where requests record their events. Cheap to clone, `Send + Sync`; [`Auditor::record`]
/// never blocks.
#[derive(Clone)]
pub struct Auditor {
    shared: Arc<Shared>,
}

struct Shared {
    policy: AuditPolicy,
    /// Bounded, so a slow disk or webhook costs events, not memory or request latency; a
    /// tokio channel because its `try_send` never waits and its free capacity is the depth.
    buffer: mpsc::Sender<Queued>,
    capacity: usize,
    meters: Arc<StageMeters>,
    /// Events shed because the buffer was full, since start.
    dropped: AtomicU64,
    _listed: Registration,
}

impl Auditor {
    /// An auditor buffering up to `capacity` events, and the buffer's receiving end.
    fn new(policy: AuditPolicy, capacity: usize, directory: &ActorDirectory) -> (Auditor, mpsc::Receiver<Queued>) {
        let (buffer, rx) = mpsc::channel(capacity);
        let meters =
            Arc::new(StageMeters::new("audit", "", capacity, WhenFull::Shed { wait: Duration::ZERO }, "audit"));
        let listed = directory.register(meters.clone());
        let shared = Shared { policy, buffer, capacity, meters, dropped: AtomicU64::new(0), _listed: listed };
        (Auditor { shared: Arc::new(shared) }, rx)
    }

    /// The policy requests are evaluated against.
    pub fn policy(&self) -> &AuditPolicy {
        &self.shared.policy
    }

    /// The policy's decision for a request (counted in `apiserver_audit_level_total`).
    pub fn evaluate(&self, attrs: &Attributes) -> RequestAuditConfig {
        let config = self.shared.policy.evaluate(attrs);
        metrics::counter!(AUDIT_LEVEL_TOTAL, "level" => config.level.as_str()).increment(1);
        config
    }

    /// Emits `event` at `stage` if `config` records that stage: a copy, stamped now, with the
    /// bodies the level does not record removed.
    pub fn emit(&self, config: &RequestAuditConfig, event: &Event, stage: Stage) {
        if !config.records(stage) {
            return;
        }
        if let Some(e) = prepare(config, event.at_stage(stage, chrono::Utc::now())) {
            self.record(e);
        }
    }

    /// Buffers an event as it is, without waiting: a full buffer drops it and counts it.
    pub fn record(&self, event: Event) {
        metrics::counter!(AUDIT_EVENT_TOTAL).increment(1);
        let queued = Queued { event, metered: self.shared.meters.start_call() };
        let Err(refused) = self.shared.buffer.try_send(queued) else { return };
        let (mpsc::error::TrySendError::Full(mut q) | mpsc::error::TrySendError::Closed(mut q)) = refused;
        q.metered.failed();
        let n = self.shared.dropped.fetch_add(1, Ordering::Relaxed) + 1;
        metrics::counter!(AUDIT_ERROR_TOTAL, "plugin" => "buffered").increment(1);
        // Warn on the 1st, 2nd, 4th, 8th... drop: a full buffer must not flood the log too.
        if n.is_power_of_two() {
            tracing::warn!(audit_id = %q.event.audit_id, dropped = n, "audit buffer full: event dropped");
        }
    }

    /// A guard that emits `ResponseComplete` for `event` when dropped (`Panic` if dropped by a
    /// panic), for responses that outlive the handler, such as watches.
    pub fn complete_on_drop(&self, config: RequestAuditConfig, event: Event) -> AuditCompletion {
        AuditCompletion { auditor: self.clone(), config, event }
    }

    /// Events shed because the buffer was full, since start.
    pub fn dropped(&self) -> u64 {
        self.shared.dropped.load(Ordering::Relaxed)
    }

    /// Events buffered and not yet taken by the writer.
    pub fn buffered(&self) -> usize {
        self.shared.capacity - self.shared.buffer.capacity()
    }
}

/// Emits an event's `ResponseComplete` when dropped; see [`Auditor::complete_on_drop`].
pub struct AuditCompletion {
    auditor: Auditor,
    config: RequestAuditConfig,
    event: Event,
}

impl AuditCompletion {
    /// The event, to complete before the guard is dropped.
    pub fn event_mut(&mut self) -> &mut Event {
        &mut self.event
    }
}

impl Drop for AuditCompletion {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.event.set_panic("the handler panicked");
            self.auditor.emit(&self.config, &self.event, Stage::Panic);
            return;
        }
        // A response that never wrote its head, as kube fakes it.
        self.event.response_status.get_or_insert_with(|| ResponseStatus {
            status: "Success".into(),
            message: "Connection closed early".into(),
            code: 200,
            ..Default::default()
        });
        self.auditor.emit(&self.config, &self.event, Stage::ResponseComplete);
    }
}

/// Starts audit as the options say: `None` when there is no policy file or no backend (audit
/// off, as in kube). The policy, log file and webhook kubeconfig are read now, so their
/// errors stop the server at startup. Must be called inside a running actix `System`: the
/// writer gets an arbiter (thread) of its own. The buffer is listed in `directory`.
pub fn start(options: &AuditOptions, directory: &ActorDirectory) -> Result<Option<Auditor>, String> {
    // Requests are never refused for audit's sake (nothing blocks on it): kube's counter of
    // such refusals stays at zero, and is exported so dashboards find it.
    metrics::counter!(AUDIT_REQUESTS_REJECTED_TOTAL).absolute(0);
    let Some(policy_file) = &options.policy_file else {
        if options.log_path.is_some() || options.webhook_config_file.is_some() {
            tracing::info!("no audit policy file provided: no audit events will be recorded");
        }
        return Ok(None);
    };
    let policy = AuditPolicy::from_file(policy_file)
        .map_err(|e| format!("loading audit policy file: {e}: from file {}", policy_file.display()))?;
    if options.buffer_size == 0 {
        return Err("invalid audit buffer size 0, must be a positive number".into());
    }
    if options.webhook_batch_max_size == 0 {
        return Err("invalid audit batch webhook max batch size 0, must be a positive number".into());
    }
    let rotation = Rotation::from_flags(options.log_maxsize_mb, options.log_maxbackup, options.log_maxage_days);
    let log = options.log_path.as_deref().map(|p| LogBackend::open(p, rotation)).transpose()?;
    let webhook = options
        .webhook_config_file
        .as_deref()
        .map(|p| WebhookClient::from_kubeconfig(p).map_err(|e| format!("initializing audit webhook: {e}")))
        .transpose()?;
    if log.is_none() && webhook.is_none() {
        return Ok(None);
    }
    let webhook = webhook.map(|client| {
        let options = WebhookOptions {
            batch_max_size: options.webhook_batch_max_size,
            batch_max_wait: options.webhook_batch_max_wait,
            initial_backoff: options.webhook_initial_backoff,
            // The events waiting for the webhook are bounded by the buffer's size too.
            queued_batches: (options.buffer_size / options.webhook_batch_max_size).max(1),
        };
        WebhookSide::new(client, options)
    });
    let (auditor, buffer) = Auditor::new(policy, options.buffer_size, directory);
    let actor = AuditActor { log, webhook };
    let arbiter = actix::Arbiter::new();
    AuditActor::start_in_arbiter(&arbiter.handle(), move |ctx: &mut Context<AuditActor>| {
        ctx.add_stream(Buffer(buffer));
        actor
    });
    Ok(Some(auditor))
}

/// The buffer's receiving end as the stream the actor handles.
struct Buffer(mpsc::Receiver<Queued>);

impl Stream for Buffer {
    type Item = Queued;

    fn poll_next(self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Option<Queued>> {
        self.get_mut().0.poll_recv(cx)
    }
}

/// Writes buffered events to the backends, on the audit arbiter.
struct AuditActor {
    log: Option<LogBackend>,
    webhook: Option<WebhookSide>,
}

/// The webhook backend's state in the actor: the batch being filled, and the queue to the
/// task that sends batches.
struct WebhookSide {
    options: WebhookOptions,
    batcher: Batcher,
    /// Bounded: batches wait here while one is being retried; a full queue drops a batch.
    queue: mpsc::Sender<Vec<Event>>,
    /// The client and the queue's receiving end, until the sender task is started.
    unstarted: Option<(WebhookClient, mpsc::Receiver<Vec<Event>>)>,
    sender: Option<tokio::task::JoinHandle<()>>,
}

impl WebhookSide {
    fn new(client: WebhookClient, options: WebhookOptions) -> WebhookSide {
        let (queue, rx) = mpsc::channel(options.queued_batches);
        WebhookSide {
            batcher: Batcher::new(options.batch_max_size),
            options,
            queue,
            unstarted: Some((client, rx)),
            sender: None,
        }
    }
}

impl AuditActor {
    /// The max-wait timer of batch `generation`: sends it unless it was sent full already.
    fn flush_batch(&mut self, generation: u64) {
        if let Some(w) = &mut self.webhook
            && w.batcher.generation() == generation
            && let Some(batch) = w.batcher.take()
        {
            webhook::enqueue(&w.queue, batch);
        }
    }
}

impl Actor for AuditActor {
    type Context = Context<Self>;

    fn started(&mut self, _: &mut Context<Self>) {
        if let Some(w) = &mut self.webhook
            && let Some((client, rx)) = w.unstarted.take()
        {
            w.sender = Some(actix::spawn(webhook::run_sender(client, rx, w.options.initial_backoff)));
        }
    }

    /// The buffer closed (every [`Auditor`] is gone): the last batch is queued, and the thread
    /// stops once the sender has drained the queue.
    fn stopped(&mut self, _: &mut Context<Self>) {
        let sender = self.webhook.take().and_then(|mut w| {
            if let Some(batch) = w.batcher.take() {
                webhook::enqueue(&w.queue, batch);
            }
            w.sender
        });
        actix::spawn(async move {
            if let Some(sender) = sender {
                let _ = sender.await;
            }
            actix::Arbiter::current().stop();
        });
    }
}

impl StreamHandler<Queued> for AuditActor {
    fn handle(&mut self, queued: Queued, ctx: &mut Context<Self>) {
        let event = queued.event;
        if let Some(log) = &mut self.log {
            log.write_event(&event);
        }
        if let Some(w) = &mut self.webhook {
            match w.batcher.push(event) {
                (Some(full), _) => webhook::enqueue(&w.queue, full),
                (None, true) => {
                    let generation = w.batcher.generation();
                    ctx.run_later(w.options.batch_max_wait, move |actor, _| actor.flush_batch(generation));
                }
                (None, false) => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::time::Instant;

    use serde_json::Value;

    use super::*;
    use webhook_client::testing::serve;

    const POLICY: &str = "apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [ResponseStarted]\n\
                          rules:\n- level: None\n  nonResourceURLs: [/healthz*]\n- level: Request\n";

    fn attrs(verb: &str) -> Attributes {
        Attributes {
            user: apimachinery::request::UserInfo { name: "alice".into(), ..Default::default() },
            verb: verb.into(),
            is_resource_request: true,
            namespace: "default".into(),
            api_version: "v1".into(),
            resource: "pods".into(),
            ..Default::default()
        }
    }

    fn event(id: &str) -> Event {
        Event::received(Level::Metadata, id, &attrs("get"), "/api/v1/pods", vec![], "", chrono::Utc::now())
    }

    fn write_policy(dir: &Path) -> PathBuf {
        let p = dir.join("policy.yaml");
        std::fs::write(&p, POLICY).unwrap();
        p
    }

    #[test]
    fn a_full_buffer_drops_without_blocking_and_counts() {
        let directory = ActorDirectory::default();
        let (auditor, mut rx) = Auditor::new(AuditPolicy::default(), 4, &directory);
        let begun = Instant::now();
        for i in 0..10 {
            auditor.record(event(&i.to_string()));
        }
        assert!(begun.elapsed() < Duration::from_millis(500), "record never waits for a consumer");
        assert_eq!((auditor.dropped(), auditor.buffered()), (6, 4));
        let kept: Vec<String> = std::iter::from_fn(|| rx.try_recv().ok()).map(|q| q.event.audit_id).collect();
        assert_eq!(kept, ["0", "1", "2", "3"], "the first four were kept, in order");
        let snap = &directory.snapshot()[0];
        assert_eq!((snap.stage.as_str(), snap.errors, snap.completed, snap.in_progress), ("audit", 6, 10, 0));
        drop(auditor);
        assert!(directory.snapshot().is_empty(), "unlisted with the last auditor");
    }

    #[test]
    fn emit_applies_the_policy_config() {
        let (auditor, mut rx) = Auditor::new(AuditPolicy::parse(POLICY).unwrap(), 8, &ActorDirectory::default());
        let config = auditor.evaluate(&attrs("create"));
        assert_eq!(config.level, Level::Request);
        let mut e = event("a");
        e.level = config.level;
        e.set_request_object(&serde_json::json!({"metadata": {"name": "p"}}));
        e.set_response_object(&serde_json::json!({"kind": "Pod"}));
        for stage in [Stage::RequestReceived, Stage::ResponseStarted, Stage::ResponseComplete] {
            auditor.emit(&config, &e, stage);
        }
        let got: Vec<Event> = std::iter::from_fn(|| rx.try_recv().ok()).map(|q| q.event).collect();
        assert_eq!(got.iter().map(|e| e.stage).collect::<Vec<_>>(), [Stage::RequestReceived, Stage::ResponseComplete]);
        assert!(got.iter().all(|e| e.request_object.is_some() && e.response_object.is_none()));
        auditor.emit(&RequestAuditConfig::default(), &e, Stage::ResponseComplete);
        assert!(rx.try_recv().is_err(), "level None emits nothing");
    }

    #[test]
    fn the_completion_guard_emits_response_complete() {
        let (auditor, mut rx) = Auditor::new(AuditPolicy::default(), 8, &ActorDirectory::default());
        let config = RequestAuditConfig { level: Level::Metadata, ..Default::default() };
        let mut guard = auditor.complete_on_drop(config, event("w"));
        guard.event_mut().annotate("k", "v");
        drop(guard);
        let e = rx.try_recv().unwrap().event;
        assert_eq!((e.stage, e.annotations["k"].as_str()), (Stage::ResponseComplete, "v"));
        assert_eq!(e.response_status.unwrap().message, "Connection closed early");
    }

    #[actix::test]
    async fn audit_is_off_without_a_policy_or_a_backend() {
        let dir = tempfile::tempdir().unwrap();
        let directory = ActorDirectory::default();
        let log_only = AuditOptions { log_path: Some(dir.path().join("a.log")), ..Default::default() };
        assert!(start(&log_only, &directory).unwrap().is_none());
        let policy_only = AuditOptions { policy_file: Some(write_policy(dir.path())), ..Default::default() };
        assert!(start(&policy_only, &directory).unwrap().is_none());
        let bad = dir.path().join("bad.yaml");
        std::fs::write(&bad, "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: [{level: Loud}]\n").unwrap();
        let err = start(&AuditOptions { policy_file: Some(bad), ..log_only }, &directory).err().unwrap();
        assert!(err.starts_with("loading audit policy file: rules[0].level: Unsupported value"), "{err}");
    }

    #[actix::test]
    async fn events_reach_the_log_and_the_webhook_in_batches() {
        let dir = tempfile::tempdir().unwrap();
        let (url, seen) = serve(vec![(200, ""), (200, "")]);
        let kubeconfig = dir.path().join("webhook.yaml");
        std::fs::write(&kubeconfig, format!("clusters:\n- name: a\n  cluster: {{server: \"{url}\"}}\n")).unwrap();
        let log_path = dir.path().join("audit/audit.log");
        let options = AuditOptions {
            policy_file: Some(write_policy(dir.path())),
            log_path: Some(log_path.clone()),
            webhook_config_file: Some(kubeconfig),
            webhook_batch_max_size: 2,
            webhook_batch_max_wait: Duration::from_millis(100),
            ..Default::default()
        };
        let auditor = start(&options, &ActorDirectory::default()).unwrap().expect("audit on");
        for id in ["a", "b", "c"] {
            auditor.record(event(id));
        }
        // Two events fill a batch; the third goes out at the batch's max wait.
        let batch = |s: webhook_client::testing::Seen| {
            let v: Value = serde_json::from_slice(&s.body).unwrap();
            v["items"]
                .as_array()
                .unwrap()
                .iter()
                .map(|e| e["auditID"].as_str().unwrap().to_string())
                .collect::<Vec<_>>()
        };
        assert_eq!(batch(seen.recv_timeout(Duration::from_secs(5)).unwrap()), ["a", "b"]);
        assert_eq!(batch(seen.recv_timeout(Duration::from_secs(5)).unwrap()), ["c"]);
        let lines = std::fs::read_to_string(&log_path).unwrap();
        let ids: Vec<String> = lines.lines().map(|l| serde_json::from_str::<Event>(l).unwrap().audit_id).collect();
        assert_eq!(ids, ["a", "b", "c"], "one JSON event per line");
        drop(auditor);
    }
}
