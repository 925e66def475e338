//! The etcd v3 backend: [`Storage`] on a real etcd cluster (kube-apiserver's `--etcd-servers`),
//! through the `etcd-client` crate.
//!
//! # Mapping
//! - A resourceVersion is etcd's mod revision; reads report the response header's revision (or
//!   the revision asked for).
//! - `put` and `delete` are one transaction each: the guard of [`Expect`] as a compare
//!   (`create_revision == 0` for absent, `mod_revision == r`, `create_revision > 0` for exists),
//!   the write plus a keys-only read of the result on success, and a read of the key on failure,
//!   so `Conflict` carries the current value and `NotFound` / `AlreadyExists` are told apart from
//!   the same answer, without a second round trip.
//! - `put_with_ttl` attaches the key to a lease, shared with the keys written soon after as
//!   kube-apiserver shares them (see the `leases` module).
//! - `list` is one range read `[start or prefix, prefix end)` at the revision; etcd's `count` is
//!   the number of keys in that range, so `remaining` is exact without a second read.
//! - Errors: etcd's "required revision has been compacted" becomes `Compacted`, "is a future
//!   revision" `FutureRevision`, "request is too large" `TooLarge`; everything else (transport,
//!   timeout, no leader) `Unavailable` naming the operation, the key and the endpoints. Every
//!   call has a deadline ([`EtcdOptions::request_timeout`]), so an unreachable etcd fails
//!   promptly; the client reconnects by itself when etcd is back.
//! - Members: requests go round robin to the members that answer; one that cannot be reached
//!   is set aside and the request sent to the next (see the `members` module), so a member
//!   going down costs no request that had not reached it.
//!
//! # The compacted revision
//! etcd has no API that reports its compacted revision, yet `Compacted` must name it. The store
//! keeps the highest compaction it did or observed: its own [`Storage::compact`] calls, the
//! `compact_revision` of watch responses, and, when an answer proves a compaction newer than
//! the one known (another apiserver compacted), a probe: a watch of one key from revision 1,
//! which etcd cancels with its compacted revision. `connect` probes once if revision 1 is
//! already unreadable, so a restarted server starts with the right value.
//!
//! # Watches
//! One etcd watch stream per [`Storage::watch`], a task translating its answers into a bounded
//! channel, and progress requests answered in order with events even on etcd releases whose own
//! progress notifications are not (before 3.4.31 / 3.5.13): see the `watch` module.
//!
//! # Layout
//! - `members`: a connection per member, requests spread over those answering, failover.
//! - `leases`: the lease shared by keys written with a TTL.
//! - `watch`: the watch task and its ordered progress notifications.
//! - [`testing`]: starts a real etcd for tests.

mod leases;
mod members;
#[cfg(any(test, feature = "test-util"))]
pub mod testing;
mod watch;

use std::future::Future;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use etcd_client::{
    Certificate, CompactionOptions, Compare, CompareOp, ConnectOptions, DeleteOptions, GetOptions, Identity,
    PutOptions, TlsOptions, Txn, TxnOp, TxnOpResponse, TxnResponse, WatchOptions,
};
use leases::{LeaseCache, LeaseChoice};
use members::{Attempt, Members};

use crate::metrics::STORAGE_DB_TOTAL_SIZE_IN_BYTES;
use crate::{Expect, KeyValue, ListOptions, ListResult, Revision, Storage, StorageError, WatchStream};
use tokio::sync::{mpsc, oneshot};

/// etcd's answer to a read or compaction below its compacted revision.
const ERR_COMPACTED: &str = "required revision has been compacted";
/// etcd's answer to a read or compaction above its current revision.
const ERR_FUTURE_REV: &str = "required revision is a future revision";
/// etcd's answer to a request over `--max-request-bytes`.
const ERR_TOO_LARGE: &str = "request is too large";
/// etcd's answer to a put on a lease that expired or was revoked.
const ERR_LEASE_NOT_FOUND: &str = "requested lease not found";
/// gRPC's answer to a message over etcd's receive limit (`--max-request-bytes` plus 512 KiB).
const ERR_MESSAGE_TOO_LARGE: &str = "message larger than max";

/// Largest response accepted from etcd (gRPC's limit is an `i32` length): lists of a large
/// resource are far above tonic's default of 4 MiB, and etcd itself sends up to this.
const MAX_RESPONSE_SIZE: usize = i32::MAX as usize;

/// A key no caller uses, read (count only) where only the response header matters.
const HEADER_KEY: &[u8] = b"\0";

/// How an [`EtcdStore`] reaches etcd. kube-apiserver's flags map onto it: `--etcd-servers`,
/// `--etcd-cafile`, `--etcd-certfile`, `--etcd-keyfile`, `--etcd-db-metric-poll-interval`.
#[derive(Clone, Debug)]
pub struct EtcdOptions {
    /// Client URLs, `http://` or `https://` (with TLS options).
    pub endpoints: Vec<String>,
    /// CA bundle that verifies etcd's serving certificate; needed for `https://` endpoints, as no
    /// system roots are loaded.
    pub ca_file: Option<PathBuf>,
    /// Client certificate for etcd's client-cert authentication (with `key_file`).
    pub cert_file: Option<PathBuf>,
    /// Key of `cert_file`.
    pub key_file: Option<PathBuf>,
    /// How long connecting to an endpoint may take.
    pub dial_timeout: Duration,
    /// Deadline of every request, so an unreachable etcd fails a request instead of hanging it.
    pub request_timeout: Duration,
    /// Items a watch may have waiting unread before it is cut off as fallen behind.
    pub watch_capacity: usize,
    /// Largest value accepted, in bytes; larger puts fail with `TooLarge` before reaching etcd.
    /// Defaults to etcd's `--max-request-bytes` (1.5 MiB).
    pub max_value_size: usize,
    /// How often `apiserver_storage_db_total_size_in_bytes` is refreshed from etcd's status
    /// (it is also refreshed after every compaction); zero only refreshes on compaction.
    pub db_metric_poll_interval: Duration,
}

impl Default for EtcdOptions {
    fn default() -> Self {
        EtcdOptions {
            endpoints: vec!["http://127.0.0.1:2379".into()],
            ca_file: None,
            cert_file: None,
            key_file: None,
            dial_timeout: Duration::from_secs(3),
            request_timeout: Duration::from_secs(5),
            watch_capacity: 1024,
            max_value_size: 1_572_864,
            db_metric_poll_interval: Duration::from_secs(30),
        }
    }
}

/// The etcd v3 store. Connect with [`EtcdStore::connect`]; cheap to share, every request runs
/// concurrently on the client's multiplexed connections.
pub struct EtcdStore {
    /// What watch tasks and the metric poller share with the store.
    inner: Arc<Inner>,
    /// Readers of the current revision, queued for [`share_revision_reads`].
    revision_reads: mpsc::UnboundedSender<RevisionWaiter>,
}

/// Where a reader of the current revision is answered.
type RevisionWaiter = oneshot::Sender<Result<Revision, StorageError>>;

/// The client and what every request needs.
struct Inner {
    /// A connection per member; clients are cloned per call (handles to a shared channel).
    members: Arc<Members>,
    /// `etcd3 (<endpoints>)`, for errors.
    backend: String,
    /// The options it was connected with.
    options: EtcdOptions,
    /// The highest compacted revision this process did or observed (see the module doc). An
    /// atomic: only ever raised (`fetch_max`), read without coordination.
    compacted: AtomicU64,
    /// The lease keys written with a TTL share.
    leases: LeaseCache,
    /// Held across a grant, so writes arriving together wait for one lease instead of each
    /// granting their own.
    granting: tokio::sync::Mutex<()>,
}

/// Why an etcd call failed.
enum Failure {
    /// etcd said the revision is compacted.
    Compacted,
    /// etcd said the revision is in the future.
    FutureRevision,
    /// etcd said the request is over its size limit.
    TooLarge,
    /// Anything else: the description, for `Unavailable`.
    Other(String),
}

impl EtcdStore {
    /// Connects to `options.endpoints` and checks that etcd answers (within the dial and request
    /// timeouts), so a wrong flag fails at start-up naming the endpoint.
    pub async fn connect(options: EtcdOptions) -> Result<Arc<EtcdStore>, StorageError> {
        let backend = format!("etcd3 ({})", options.endpoints.join(","));
        let fail = |message: String| StorageError::Unavailable { backend: backend.clone(), message };
        if options.endpoints.is_empty() {
            return Err(fail("no endpoints given (--etcd-servers)".into()));
        }
        let connect = connect_options(&options).map_err(fail)?;
        let members = Members::dial(&options.endpoints, &connect, MAX_RESPONSE_SIZE, options.dial_timeout);
        let members = Arc::new(members.await.map_err(fail)?);
        let leases = LeaseCache::default();
        let granting = tokio::sync::Mutex::new(());
        let inner = Arc::new(Inner { members, backend, compacted: AtomicU64::new(0), options, leases, granting });
        let revision = inner.current_revision().await?;
        // Revision 1 is readable unless etcd was compacted: then learn where.
        if let Err(Failure::Compacted) =
            inner.range(HEADER_KEY, GetOptions::new().with_count_only().with_revision(1)).await
        {
            inner.compacted_at_least(2).await;
        }
        inner.refresh_db_size().await;
        tracing::info!(
            backend = %inner.backend,
            revision,
            compacted = inner.compacted.load(Ordering::Acquire),
            "connected to etcd"
        );
        if !inner.options.db_metric_poll_interval.is_zero() {
            tokio::spawn(poll_db_size(Arc::downgrade(&inner), inner.options.db_metric_poll_interval));
        }
        let (revision_reads, queued) = mpsc::unbounded_channel();
        tokio::spawn(share_revision_reads(Arc::downgrade(&inner), queued));
        Ok(Arc::new(EtcdStore { inner, revision_reads }))
    }

    /// The options it was connected with.
    pub fn options(&self) -> &EtcdOptions {
        &self.inner.options
    }
}

/// The client's options from ours: timeouts, HTTP/2 keep-alive (so a dead connection under an
/// idle watch is noticed) and TLS when any file is given.
fn connect_options(options: &EtcdOptions) -> Result<ConnectOptions, String> {
    let mut connect = ConnectOptions::new()
        .with_connect_timeout(options.dial_timeout)
        .with_keep_alive(Duration::from_secs(30), Duration::from_secs(10))
        .with_keep_alive_while_idle(true);
    if options.ca_file.is_some() || options.cert_file.is_some() || options.key_file.is_some() {
        let read = |path: &PathBuf| std::fs::read(path).map_err(|e| format!("reading {}: {e}", path.display()));
        let mut tls = TlsOptions::new();
        if let Some(ca) = &options.ca_file {
            tls = tls.ca_certificate(Certificate::from_pem(read(ca)?));
        }
        match (&options.cert_file, &options.key_file) {
            (Some(cert), Some(key)) => tls = tls.identity(Identity::from_pem(read(cert)?, read(key)?)),
            (None, None) => {}
            _ => return Err("--etcd-certfile and --etcd-keyfile must be given together".into()),
        }
        connect = connect.with_tls(tls);
    }
    Ok(connect)
}

/// Refreshes the database size metric every `interval` while the store lives.
/// Answers the readers of the current revision (every consistent read from the cache asks it)
/// with one etcd request for all who are waiting when it is sent: each answer then comes from
/// a request sent after its reader asked, as if it had sent its own, and a burst of reads costs
/// one round trip instead of one each. Ends with the store.
async fn share_revision_reads(inner: Weak<Inner>, mut queued: mpsc::UnboundedReceiver<RevisionWaiter>) {
    let mut waiting = Vec::new();
    while let Some(first) = queued.recv().await {
        waiting.push(first);
        while let Ok(next) = queued.try_recv() {
            waiting.push(next);
        }
        let Some(inner) = inner.upgrade() else { return };
        let revision = inner.current_revision().await;
        drop(inner);
        for waiter in waiting.drain(..) {
            let _ = waiter.send(revision.clone());
        }
    }
}

async fn poll_db_size(inner: Weak<Inner>, interval: Duration) {
    loop {
        tokio::time::sleep(interval).await;
        let Some(inner) = inner.upgrade() else { return };
        inner.refresh_db_size().await;
    }
}

impl Inner {
    /// Runs one etcd call under the request deadline on a member, on the next ones while it
    /// could not be sent (or, for a read, while its connection broke).
    async fn call<T, F, Fut>(&self, idempotent: bool, request: F) -> Result<T, Failure>
    where
        F: Fn(&members::Member) -> Fut,
        Fut: Future<Output = Result<T, etcd_client::Error>>,
    {
        self.call_on(idempotent, request).await.1
    }

    /// [`call`](Self::call), also saying which member answered (a watch stream stays on it).
    async fn call_on<T, F, Fut>(&self, idempotent: bool, request: F) -> (usize, Result<T, Failure>)
    where
        F: Fn(&members::Member) -> Fut,
        Fut: Future<Output = Result<T, etcd_client::Error>>,
    {
        let timeout = self.options.request_timeout;
        self.members
            .call(idempotent, |member| {
                let request = request(member);
                async move {
                    match tokio::time::timeout(timeout, request).await {
                        Ok(Ok(answer)) => Ok(answer),
                        Ok(Err(e)) => Err(attempt(&e)),
                        Err(_) => Err(Attempt::TimedOut(Failure::Other(format!("no answer within {timeout:?}")))),
                    }
                }
            })
            .await
    }

    /// A range read.
    async fn range(&self, key: &[u8], options: GetOptions) -> Result<etcd_client::GetResponse, Failure> {
        self.call(true, |m| {
            let (mut kv, options) = (m.kv.clone(), options.clone());
            async move { kv.get(key, Some(options)).await }
        })
        .await
    }

    /// A transaction.
    async fn txn(&self, txn: Txn) -> Result<TxnResponse, Failure> {
        self.call(false, |m| {
            let (mut kv, txn) = (m.kv.clone(), txn.clone());
            async move { kv.txn(txn).await }
        })
        .await
    }

    /// A guarded put, on `lease` if given.
    async fn put(&self, key: &str, value: Bytes, expect: Expect, lease: Option<i64>) -> Result<KeyValue, StorageError> {
        let inner = self;
        let limit = inner.options.max_value_size;
        if value.len() > limit {
            return Err(StorageError::TooLarge { key: key.to_string(), size: value.len(), limit });
        }
        let guard = match expect {
            Expect::Absent => Compare::create_revision(key, CompareOp::Equal, 0),
            Expect::ModRevision(r) => Compare::mod_revision(key, CompareOp::Equal, r as i64),
            Expect::Exists => Compare::create_revision(key, CompareOp::Greater, 0),
        };
        // Built again only for the rare resend below, so a write copies its value once.
        let txn = || {
            Txn::new()
                .when([guard.clone()])
                .and_then([
                    TxnOp::put(key, value.to_vec(), lease.map(|id| PutOptions::new().with_lease(id))),
                    TxnOp::get(key, Some(GetOptions::new().with_keys_only())),
                ])
                .or_else([TxnOp::get(key, None)])
        };
        let operation = if expect == Expect::Absent { "create" } else { "update" };
        let mut sent = inner.txn(txn()).await;
        // A create whose connection broke under it may or may not have been applied: it is sent
        // once more (to another member), and a key holding exactly these bytes is this create's
        // own (an object's bytes carry its fresh uid, so no other create writes them).
        let retried = expect == Expect::Absent && matches!(&sent, Err(Failure::Other(m)) if connection_lost(m));
        if retried {
            sent = inner.txn(txn()).await;
        }
        let response = sent.map_err(|f| match f {
            Failure::TooLarge => StorageError::TooLarge { key: key.to_string(), size: value.len(), limit },
            other => inner.failed(operation, key, other),
        })?;
        if response.succeeded() {
            let Some(stored) = txn_range(&response, 1).into_iter().next() else {
                return Err(inner.unavailable(operation, key, "the key was not readable in its own write transaction"));
            };
            return Ok(KeyValue { value, ..stored });
        }
        let current = txn_range(&response, 0).into_iter().next();
        if let Some(ours) = current.as_ref().filter(|kv| retried && kv.value == value) {
            return Ok(ours.clone());
        }
        Err(match (expect, current) {
            (Expect::Absent, Some(_)) => StorageError::AlreadyExists { key: key.to_string() },
            (Expect::ModRevision(_) | Expect::Exists, None) => StorageError::NotFound { key: key.to_string() },
            (_, current) => StorageError::Conflict { key: key.to_string(), current: current.map(Box::new) },
        })
    }

    /// The lease for a key that must live `seconds`: the shared one, or a new grant.
    async fn lease_for(&self, key: &str, seconds: u64) -> Result<i64, StorageError> {
        if let LeaseChoice::Reuse(id) = self.leases.choose(seconds, std::time::Instant::now()) {
            return Ok(id);
        }
        let _granting = self.granting.lock().await;
        // Another write may have granted one while this waited.
        let asked = std::time::Instant::now();
        match self.leases.choose(seconds, asked) {
            LeaseChoice::Reuse(id) => Ok(id),
            LeaseChoice::Grant(seconds) => {
                // A grant sent twice only leaves an unused lease to expire: safe to resend.
                let granted = self
                    .call(true, |m| {
                        let mut lease = m.lease.clone();
                        async move { lease.grant(seconds, None).await }
                    })
                    .await
                    .map_err(|f| self.failed("lease grant for", key, f))?;
                self.leases.granted(granted.id(), granted.ttl(), asked);
                Ok(granted.id())
            }
        }
    }

    /// The error for a failed operation on `key`.
    fn unavailable(&self, operation: &str, key: &str, message: impl std::fmt::Display) -> StorageError {
        StorageError::Unavailable { backend: self.backend.clone(), message: format!("{operation} {key}: {message}") }
    }

    /// The error for a failure with no meaning of its own here.
    fn failed(&self, operation: &str, key: &str, failure: Failure) -> StorageError {
        let message = match failure {
            Failure::Compacted => ERR_COMPACTED.into(),
            Failure::FutureRevision => ERR_FUTURE_REV.into(),
            Failure::TooLarge => ERR_TOO_LARGE.into(),
            Failure::Other(message) => message,
        };
        self.unavailable(operation, key, message)
    }

    /// The current revision: the header of a linearizable count of one key.
    async fn current_revision(&self) -> Result<Revision, StorageError> {
        let response = self.range(HEADER_KEY, GetOptions::new().with_count_only()).await;
        response.map(|r| header_revision(r.header())).map_err(|f| self.failed("get", "current revision", f))
    }

    /// The current revision as member `member` has applied it: a linearizable read there,
    /// which returns once the member has applied everything committed before it, so its own
    /// revision is at least the answer. A watch's progress is measured on its own member (see
    /// the watch module).
    async fn current_revision_on(&self, member: usize) -> Result<Revision, StorageError> {
        let m = &self.members.all()[member];
        let mut kv = m.kv.clone();
        let options = GetOptions::new().with_count_only();
        let answer = match tokio::time::timeout(self.options.request_timeout, kv.get(HEADER_KEY, Some(options))).await {
            Ok(Ok(response)) => return Ok(header_revision(response.header())),
            Ok(Err(e)) => describe(&e),
            Err(_) => format!("no answer within {:?}", self.options.request_timeout),
        };
        Err(self.unavailable("get", &format!("current revision on {}", m.endpoint), answer))
    }

    /// The error for a read or compaction at `requested` that etcd refused as compacted or
    /// future; `compacted_floor` is the compacted revision the refusal proves (reads: above the
    /// revision, compactions: at least it).
    async fn revision_error(
        &self,
        operation: &str,
        key: &str,
        requested: Revision,
        compacted_floor: Revision,
        failure: Failure,
    ) -> StorageError {
        match failure {
            Failure::Compacted => {
                StorageError::Compacted { requested, compacted: self.compacted_at_least(compacted_floor).await }
            }
            Failure::FutureRevision => match self.current_revision().await {
                Ok(current) => StorageError::FutureRevision { requested, current },
                Err(e) => e,
            },
            other => self.failed(operation, key, other),
        }
    }

    /// Records a compacted revision seen or made; returns the highest known.
    fn observe_compacted(&self, revision: Revision) -> Revision {
        self.compacted.fetch_max(revision, Ordering::AcqRel).max(revision)
    }

    /// The compacted revision, known to be at least `floor`: the tracked one if it is, else
    /// etcd's, probed (falling back to `floor` if the probe gets no answer).
    async fn compacted_at_least(&self, floor: Revision) -> Revision {
        let known = self.compacted.load(Ordering::Acquire);
        if known >= floor {
            return known;
        }
        let probed = self.probe_compacted().await.unwrap_or(0);
        self.observe_compacted(probed.max(floor))
    }

    /// Asks etcd for its compacted revision: a watch of one key from revision 1 is cancelled
    /// with it (within etcd's 100 ms sync of watches that start in the past).
    async fn probe_compacted(&self) -> Option<Revision> {
        let probe = async {
            let options = WatchOptions::new().with_start_revision(1);
            let (_, stream) = self
                .call_on(true, |m| {
                    let (mut watch, options) = (m.watch.clone(), options.clone());
                    async move { watch.watch(HEADER_KEY, Some(options)).await }
                })
                .await;
            let mut stream = stream.ok()?;
            while let Some(response) = stream.message().await.ok()? {
                if response.compact_revision() > 0 {
                    return Some(response.compact_revision() as Revision);
                }
            }
            None
        };
        tokio::time::timeout(self.options.request_timeout, probe).await.ok().flatten()
    }

    /// Sets `apiserver_storage_db_total_size_in_bytes` for every endpoint that answers.
    async fn refresh_db_size(&self) {
        for member in self.members.all() {
            let endpoint = &member.endpoint;
            let mut client = member.maintenance.clone();
            match tokio::time::timeout(self.options.request_timeout, client.status()).await.map_err(|_| ()) {
                Ok(Ok(status)) => {
                    metrics::gauge!(STORAGE_DB_TOTAL_SIZE_IN_BYTES, "endpoint" => endpoint.clone())
                        .set(status.db_size() as f64);
                }
                Ok(Err(e)) => tracing::debug!(endpoint, error = %describe(&e), "etcd status failed"),
                Err(()) => tracing::debug!(endpoint, "etcd status: no answer in time"),
            }
        }
    }
}

/// How a failed etcd call ended, for failover: a connect error was never sent; a transport
/// error (the connection broke, or gRPC's `Unavailable` without etcd's own `etcdserver:`
/// message) may have been; anything else is etcd's answer.
/// The transport's words for a connection that broke under a call.
const CONNECTION_LOST: [&str; 5] =
    ["transport error", "connection error", "connection reset", "broken pipe", "h2 protocol error"];

/// Whether a failure's description says the connection broke under the call.
fn connection_lost(message: &str) -> bool {
    CONNECTION_LOST.iter().any(|m| message.contains(m))
}

fn attempt(e: &etcd_client::Error) -> Attempt<Failure> {
    let message = describe(e);
    let failure = Failure::from(e);
    let not_sent = ["tcp connect error", "error trying to connect", "Connection refused", "dns error"];
    if not_sent.iter().any(|m| message.contains(m)) {
        return Attempt::NotSent(failure);
    }
    let transport = match e {
        etcd_client::Error::TransportError(_) | etcd_client::Error::IoError(_) => true,
        // `describe` starts with the code's name; a connection that broke under the call comes
        // back as `Unknown` with the transport's error as its cause.
        etcd_client::Error::GRpcStatus(status) => {
            !status.message().starts_with("etcdserver:")
                && (message.starts_with("Unavailable: ") || connection_lost(&message))
        }
        _ => false,
    };
    match transport {
        true => Attempt::Lost(failure),
        false => Attempt::Answered(failure),
    }
}

impl From<&etcd_client::Error> for Failure {
    fn from(e: &etcd_client::Error) -> Self {
        let message = describe(e);
        if message.contains(ERR_COMPACTED) {
            Failure::Compacted
        } else if message.contains(ERR_FUTURE_REV) {
            Failure::FutureRevision
        } else if message.contains(ERR_TOO_LARGE) || message.contains(ERR_MESSAGE_TOO_LARGE) {
            Failure::TooLarge
        } else {
            Failure::Other(message)
        }
    }
}

/// An etcd client error in one line: the gRPC code and message, then the causes (e.g. the
/// transport's "connection refused") that the status alone would hide.
fn describe(e: &etcd_client::Error) -> String {
    let (mut text, mut source) = match e {
        etcd_client::Error::GRpcStatus(status) => {
            (format!("{:?}: {}", status.code(), status.message()), std::error::Error::source(status))
        }
        other => (other.to_string(), std::error::Error::source(other)),
    };
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text = format!("{text}: {cause_text}");
        }
        source = cause.source();
    }
    text
}

/// The revision of a response header (0 if etcd sent none, which it always does).
fn header_revision(header: Option<&etcd_client::ResponseHeader>) -> Revision {
    header.map_or(0, |h| h.revision() as Revision)
}

/// The first key after every key starting with `prefix` (etcd's range end for a prefix).
fn prefix_end(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return end;
        }
    }
    vec![0] // all keys
}

/// An etcd key-value as ours; keys are UTF-8 by construction.
fn key_value(kv: etcd_client::KeyValue) -> KeyValue {
    let (create_revision, mod_revision) = (kv.create_revision() as Revision, kv.mod_revision() as Revision);
    let (key, value) = kv.into_key_value();
    let key = String::from_utf8(key).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
    KeyValue { key, value: Bytes::from(value), create_revision, mod_revision, stale: false }
}

/// The key-values of the range read at `index` of a transaction's answers.
fn txn_range(response: &TxnResponse, index: usize) -> Vec<KeyValue> {
    match response.op_responses().into_iter().nth(index) {
        Some(TxnOpResponse::Get(mut get)) => get.take_kvs().into_iter().map(key_value).collect(),
        _ => Vec::new(),
    }
}

#[async_trait]
impl Storage for EtcdStore {
    fn describe(&self) -> String {
        self.inner.backend.clone()
    }

    async fn current_revision(&self) -> Result<Revision, StorageError> {
        let (answer, answered) = oneshot::channel();
        if self.revision_reads.send(answer).is_err() {
            return self.inner.current_revision().await;
        }
        match answered.await {
            Ok(revision) => revision,
            // The sharing task is gone (its runtime stopped): ask alone.
            Err(_) => self.inner.current_revision().await,
        }
    }

    async fn get(&self, key: &str) -> Result<(Option<KeyValue>, Revision), StorageError> {
        let inner = &self.inner;
        let mut response =
            inner.range(key.as_bytes(), GetOptions::new()).await.map_err(|f| inner.failed("get", key, f))?;
        let revision = header_revision(response.header());
        Ok((response.take_kvs().into_iter().next().map(key_value), revision))
    }

    async fn list(&self, prefix: &str, opts: ListOptions) -> Result<ListResult, StorageError> {
        let inner = &self.inner;
        let from = match &opts.start {
            Some(start) if start.as_str() > prefix => start.as_bytes(),
            _ if prefix.is_empty() => HEADER_KEY,
            _ => prefix.as_bytes(),
        };
        let requested = opts.revision.filter(|&r| r > 0);
        let mut options = GetOptions::new().with_range(prefix_end(prefix.as_bytes())).with_limit(opts.limit as i64);
        if let Some(revision) = requested {
            options = options.with_revision(revision as i64);
        }
        let mut response = match inner.range(from, options).await {
            Ok(response) => response,
            Err(f) => {
                let r = requested.unwrap_or(0);
                return Err(inner.revision_error("list", prefix, r, r + 1, f).await);
            }
        };
        let revision = requested.unwrap_or_else(|| header_revision(response.header()));
        let count = response.count().max(0) as u64;
        let items: Vec<KeyValue> = response.take_kvs().into_iter().map(key_value).collect();
        let remaining = count.saturating_sub(items.len() as u64);
        Ok(ListResult { items, revision, more: remaining > 0, remaining })
    }

    async fn count(&self, prefix: &str) -> Result<u64, StorageError> {
        let inner = &self.inner;
        let from = if prefix.is_empty() { HEADER_KEY } else { prefix.as_bytes() };
        let options = GetOptions::new().with_range(prefix_end(prefix.as_bytes())).with_count_only();
        let response = inner.range(from, options).await.map_err(|f| inner.failed("count", prefix, f))?;
        Ok(response.count().max(0) as u64)
    }

    async fn put(&self, key: &str, value: Bytes, expect: Expect) -> Result<KeyValue, StorageError> {
        self.inner.put(key, value, expect, None).await
    }

    async fn put_with_ttl(
        &self,
        key: &str,
        value: Bytes,
        expect: Expect,
        ttl: Duration,
    ) -> Result<KeyValue, StorageError> {
        let inner = &self.inner;
        let seconds = ttl.as_secs() + u64::from(ttl.subsec_nanos() > 0);
        let lease = inner.lease_for(key, seconds).await?;
        match inner.put(key, value.clone(), expect, Some(lease)).await {
            // The lease expired or was revoked under us (etcd restored from a snapshot): once
            // more on a fresh one.
            Err(StorageError::Unavailable { message, .. }) if message.contains(ERR_LEASE_NOT_FOUND) => {
                inner.leases.forget(lease);
                let lease = inner.lease_for(key, seconds).await?;
                inner.put(key, value, expect, Some(lease)).await
            }
            other => other,
        }
    }

    async fn delete(&self, key: &str, expect: Option<Revision>) -> Result<(KeyValue, Revision), StorageError> {
        let inner = &self.inner;
        let guard = match expect {
            Some(r) => Compare::mod_revision(key, CompareOp::Equal, r as i64),
            None => Compare::create_revision(key, CompareOp::Greater, 0),
        };
        let txn = Txn::new()
            .when([guard])
            .and_then([TxnOp::delete(key, Some(DeleteOptions::new().with_prev_key()))])
            .or_else([TxnOp::get(key, None)]);
        let response = inner.txn(txn).await.map_err(|f| inner.failed("delete", key, f))?;
        if response.succeeded() {
            let deleted = match response.op_responses().into_iter().next() {
                Some(TxnOpResponse::Delete(mut d)) => d.take_prev_kvs().into_iter().next().map(key_value),
                _ => None,
            };
            let Some(deleted) = deleted else {
                return Err(inner.unavailable("delete", key, "etcd did not return the deleted value"));
            };
            return Ok((deleted, header_revision(response.header())));
        }
        Err(match txn_range(&response, 0).into_iter().next() {
            None => StorageError::NotFound { key: key.to_string() },
            Some(current) => StorageError::Conflict { key: key.to_string(), current: Some(Box::new(current)) },
        })
    }

    async fn watch(&self, prefix: &str, after: Revision) -> Result<WatchStream, StorageError> {
        watch::start(&self.inner, prefix, after).await
    }

    async fn compact(&self, revision: Revision) -> Result<(), StorageError> {
        let inner = &self.inner;
        let request = inner.call(false, |m| {
            let mut kv = m.kv.clone();
            async move { kv.compact(revision as i64, Some(CompactionOptions::new().with_physical())).await }
        });
        match request.await {
            Ok(_) => {
                inner.observe_compacted(revision);
                inner.refresh_db_size().await;
                Ok(())
            }
            Err(f) => Err(inner.revision_error("compact", "", revision, revision, f).await),
        }
    }

    async fn compacted_revision(&self) -> Result<Revision, StorageError> {
        Ok(self.inner.compacted.load(Ordering::Acquire))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_end_is_the_first_key_after_the_prefix() {
        assert_eq!(prefix_end(b"/registry/pods/"), b"/registry/pods0");
        assert_eq!(prefix_end(b"a\xff"), b"b");
        assert_eq!(prefix_end(b"\xff\xff"), b"\0");
        assert_eq!(prefix_end(b""), b"\0");
    }
}
