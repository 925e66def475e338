//! One cacher actor per stored resource: the read path of the apiserver.
//!
//! The [`CacherActor`] lists its resource from storage, then follows the storage watch from the
//! list's revision. It is the single writer of the cache's state: current objects by key, each
//! encoded to JSON once, and a window of recent events. After every change it publishes an
//! immutable snapshot (a persistent map, so publishing copies nothing), and the
//! [`CacheReader`] answers gets and lists from those snapshots on the caller's task, never
//! through the actor's mailbox:
//!
//! - `resourceVersion` unset (a consistent read) is served once the cache provably reflects the
//!   storage's current revision: the reader asks the storage watch for a progress notification
//!   and answers when it arrives (at once when nothing was written since). On a backend whose
//!   notifications are slow (etcd), a consistent read the cache cannot prove fresh goes to
//!   storage instead.
//! - `resourceVersion=0` is served from whatever the cache holds.
//! - `resourceVersion=N` waits up to 3 s for the cache to reach N, then 504 as kube.
//! - Paged lists (`limit` with a consistent or exact read, or `continue`) read storage at the
//!   first page's revision, so pages stay consistent.
//!
//! Watches register with the actor. They replay the window from their resourceVersion (an
//! ERROR event with 410 Expired when it is older than the window), then get live events
//! filtered per watcher. Each event's line is encoded once and shared by every watcher that
//! receives it. A watcher that stops reading is given a time budget to catch up; past it, its
//! stream ends (clients re-watch from their last resourceVersion) and the others never wait.
//!
//! # Layout
//! - this module: [`CacherActor`]: the list, the storage watch and its resumption, the window,
//!   watch registration and fan-out.
//! - `reader`: [`CacheReader`] and the snapshots it reads gets and lists from.
//! - `watchers`: each watcher's filter, what it sees of a change, and the bounded queue that
//!   decides when it is too slow to keep.
//! - [`continuation`]: paged lists from storage and kube's continue tokens.
//! - [`feed`]: the read half of the storage contract over the stage transport, for resources
//!   whose storage stage runs in another process.
//! - [`conformance`]: the read-path suite every backend passes through a cacher.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use actix::{Actor, ActorContext, ActorFutureExt, AsyncContext, Context, StreamHandler, WrapFuture};
use actors::{Deadline, Request, StageHandler, StageMeters, WhenFull, Work};
use apimachinery::catalogue::ResourceDef;
use apimachinery::encoded::EncodedObject;
use apimachinery::error::ApiError;
use apimachinery::messages::{WatchEvent, WatchEventType, WatchObjects, WatchReceiver};
use apimachinery::options::ReadAt;
use serde_json::json;
use storage::metrics::TERMINATED_WATCHERS_TOTAL;
use storage::{EventType, ProgressRequester, Revision, Storage, StorageError, WatchItem};
use storage_codec::codec::decode_object;
use tokio::sync::{mpsc, watch};
use tokio_stream::StreamExt;

use crate::index::FieldIndex;
use crate::metrics::{
    CACHE_LIST_FALLTHROUGH_TOTAL, WATCH_CACHE_CAPACITY, WATCH_CACHE_EVENTS_RECEIVED_TOTAL,
    WATCH_CACHE_RESOURCE_VERSION, WATCH_CACHE_TOO_OLD_TOTAL, WATCH_CACHE_WINDOW_OLDEST_EVENT_TIMESTAMP_SECONDS,
    WATCH_EVENTS_SIZES, WATCH_EVENTS_TOTAL,
};

#[cfg(any(test, feature = "test-util"))]
pub mod conformance;
pub mod continuation;
mod entry;
pub mod feed;
mod index;
pub mod metrics;
mod reader;
mod watchers;

use entry::{Entry, Objects};
pub use reader::CacheReader;
use reader::{Shared, Snapshot};
use watchers::{CachedEvent, Lines, Watcher};

/// How a cacher is sized and timed.
#[derive(Clone, Debug)]
pub struct CacherOptions {
    /// Events the window keeps whatever their age (`--watch-cache-sizes`).
    pub window_capacity: usize,
    /// Events younger than this stay in the window past its capacity, so a client that
    /// re-watches within it resumes without a re-list (kube keeps about 75 s).
    pub window_freshness: Duration,
    /// The window never holds more events than this, however young.
    pub window_limit: usize,
    /// Events a watcher's channel holds before further ones wait in its overflow.
    pub watcher_buffer: usize,
    /// How long a watcher may leave events waiting in its overflow before it is cut off.
    pub slow_watcher_budget: Duration,
    /// How long a read waits for the cache to reach a requested revision.
    pub wait_for_revision: Duration,
    /// How often watchers that asked for bookmarks get one.
    pub bookmark_interval: Duration,
    /// How long the cacher waits before watching storage again after its watch broke: a
    /// backend that fails every new watch at once is asked a few times a second, not in a loop.
    pub resume_backoff: Duration,
}

impl Default for CacherOptions {
    fn default() -> Self {
        CacherOptions {
            window_capacity: 1_000,
            window_freshness: Duration::from_secs(75),
            window_limit: 100 * 1024,
            watcher_buffer: 1_000,
            slow_watcher_budget: Duration::from_secs(5),
            wait_for_revision: Duration::from_secs(3),
            bookmark_interval: Duration::from_secs(60),
            resume_backoff: Duration::from_millis(200),
        }
    }
}

/// How long before a watch's deadline its last bookmark is sent.
const FINAL_BOOKMARK_LEAD: Duration = Duration::from_secs(2);

/// The per-resource watch cache actor.
pub struct CacherActor {
    def: Arc<ResourceDef>,
    storage: Arc<dyn Storage>,
    prefix: String,
    options: CacherOptions,
    objects: Objects,
    /// `objects`' keys by the field the resource's clients select on, if it has one.
    index: Option<FieldIndex>,
    window: VecDeque<CachedEvent>,
    /// When the cacher began: what the window covers back to while it is still empty.
    created: std::time::SystemTime,
    /// The oldest revision a watch can resume from (events after it are all in the window).
    window_floor: Revision,
    /// The revision the cache reflects: every change under the prefix up to it is applied.
    revision: Revision,
    ready: bool,
    /// Changes applied to `objects` so far: see [`Snapshot::changes`].
    changes: u64,
    watchers: HashMap<u64, Watcher>,
    next_watcher: u64,
    progress: Option<Arc<dyn ProgressRequester>>,
    snapshots: watch::Sender<Arc<Snapshot>>,
    shared: Arc<Shared>,
    reader: CacheReader,
    /// Bumped on every re-list so events of an abandoned storage watch are ignored.
    generation: u64,
    /// The current storage watch, cancelled when a re-sync replaces it.
    storage_watch: Option<actix::SpawnHandle>,
    /// When the next sweep of the watchers is due, and its timer.
    sweep_at: Option<(Instant, actix::SpawnHandle)>,
    /// A watcher's events began to wait in its overflow since the last sweep was armed.
    overflowed: bool,
    metrics: CacherMetrics,
}

struct CacherMetrics {
    events_received: ::metrics::Counter,
    resource_version: ::metrics::Gauge,
    capacity: ::metrics::Gauge,
    /// When the window's oldest event arrived (Unix seconds): a watcher away for less than
    /// `now` minus it resumes from the window (this server's own; docs/OPEN-QUESTIONS.md 5.1).
    window_oldest: ::metrics::Gauge,
    terminated_watchers: ::metrics::Counter,
    /// Watches refused 410 because they start before the window: not a kube metric, the one
    /// signal of a window too short for its clients (docs/DIAGNOSIS.md).
    too_old: ::metrics::Counter,
    watch_events: ::metrics::Counter,
    /// `apiserver_watch_events_sizes` of the shared JSON lines, recorded once per line.
    event_sizes: ::metrics::Histogram,
}

impl CacherMetrics {
    fn new(def: &ResourceDef) -> Self {
        let resource = def.qualified();
        let (group, version, kind) = (def.group.clone(), def.version.clone(), def.kind.clone());
        CacherMetrics {
            events_received: ::metrics::counter!(WATCH_CACHE_EVENTS_RECEIVED_TOTAL, "resource" => resource.clone()),
            resource_version: ::metrics::gauge!(WATCH_CACHE_RESOURCE_VERSION, "resource" => resource.clone()),
            capacity: ::metrics::gauge!(WATCH_CACHE_CAPACITY, "resource" => resource.clone()),
            window_oldest: ::metrics::gauge!(WATCH_CACHE_WINDOW_OLDEST_EVENT_TIMESTAMP_SECONDS, "resource" => resource.clone()),
            terminated_watchers: ::metrics::counter!(TERMINATED_WATCHERS_TOTAL, "resource" => resource.clone()),
            too_old: ::metrics::counter!(WATCH_CACHE_TOO_OLD_TOTAL, "resource" => resource),
            watch_events: ::metrics::counter!(WATCH_EVENTS_TOTAL, "group" => group.clone(), "version" => version.clone(), "kind" => kind.clone()),
            event_sizes: ::metrics::histogram!(WATCH_EVENTS_SIZES, "group" => group, "version" => version, "kind" => kind),
        }
    }
}

impl CacherActor {
    /// A cacher for `def`'s objects under `storage_prefix` (e.g. `/registry`), and the reader
    /// that answers gets and lists from its snapshots.
    pub fn new(
        def: Arc<ResourceDef>,
        storage: Arc<dyn Storage>,
        storage_prefix: &str,
        options: CacherOptions,
    ) -> (Self, CacheReader) {
        let metrics = CacherMetrics::new(&def);
        let prefix = def.key_prefix(storage_prefix);
        let (snapshots, rx) = watch::channel(Arc::new(Snapshot::empty()));
        let shared = Arc::new(Shared {
            progress_requested: AtomicU64::new(0),
            epoch: Instant::now(),
            storage_reads: ::metrics::counter!(CACHE_LIST_FALLTHROUGH_TOTAL, "resource" => def.qualified()),
            watchers: AtomicUsize::new(0),
        });
        let reader = CacheReader {
            def: def.clone(),
            storage: storage.clone(),
            prefix: prefix.clone(),
            wait_for_revision: options.wait_for_revision,
            snapshots: rx,
            shared: shared.clone(),
            meters: Arc::new(StageMeters::new("cache-reads", &def.qualified(), 0, WhenFull::NoMailbox, "http")),
            _registration: None,
        };
        let actor = CacherActor {
            index: index::indexed_field(&def).map(|field| FieldIndex::build(field, &Objects::new())),
            def,
            storage,
            prefix,
            options,
            objects: Objects::new(),
            window: VecDeque::new(),
            created: std::time::SystemTime::now(),
            window_floor: 0,
            revision: 0,
            ready: false,
            watchers: HashMap::new(),
            next_watcher: 0,
            progress: None,
            snapshots,
            shared,
            reader: reader.clone(),
            changes: 0,
            generation: 0,
            storage_watch: None,
            sweep_at: None,
            overflowed: false,
            metrics,
        };
        (actor, reader)
    }

    /// Makes the current state visible to readers.
    fn publish(&self) {
        self.metrics.capacity.set(self.window.len() as f64);
        let oldest = match self.window.front() {
            Some(e) => std::time::SystemTime::now().checked_sub(e.received.elapsed()).unwrap_or(self.created),
            None => self.created,
        };
        let unix = oldest.duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        self.metrics.window_oldest.set(unix.as_secs_f64());
        self.snapshots.send_replace(Arc::new(Snapshot {
            objects: self.objects.clone(),
            index: self.index.clone(),
            revision: self.revision,
            ready: self.ready,
            changes: self.changes,
            progress: self.progress.clone(),
        }));
    }

    /// Lists storage and starts following its watch; retried until it succeeds.
    fn sync(&mut self, ctx: &mut Context<Self>) {
        self.generation += 1;
        let generation = self.generation;
        let storage = self.storage.clone();
        let prefix = self.prefix.clone();
        let def = self.def.clone();
        let fut = async move {
            let (objects, revision) = initial_list(&def, storage.as_ref(), &prefix).await?;
            let watch = storage.watch(&prefix, revision).await?;
            Ok::<_, StorageError>((objects, revision, watch))
        };
        ctx.spawn(fut.into_actor(self).map(move |res, act, ctx| {
            if generation != act.generation {
                return;
            }
            match res {
                Ok((objects, revision, watch)) => {
                    // Unless nothing at all was written since the cache last heard from
                    // storage, what happened in between is known only by its outcome, and no
                    // watcher may be handed an outcome as if it were the events: every watcher
                    // ends (clients resume from their last resourceVersion, get 410 and
                    // re-list), and the window starts at the re-list, as kube's cacher does
                    // when its reflector re-lists. The same holds when storage went back in
                    // time (a restored backup), and trivially on the first sync.
                    if act.revision == 0 || revision != act.revision {
                        if act.revision > 0 {
                            tracing::warn!(
                                resource = act.def.resource,
                                from = act.revision,
                                to = revision,
                                watchers = act.watchers.len(),
                                "re-listed across a gap: watchers end and resume with a 410"
                            );
                        }
                        act.watchers.clear();
                        act.count_watchers();
                        act.index = index::indexed_field(&act.def).map(|field| FieldIndex::build(field, &objects));
                        act.objects = objects;
                        act.changes += 1;
                        act.window.clear();
                        act.window_floor = revision;
                        act.revision = revision;
                    }
                    act.follow(watch, ctx);
                }
                Err(e) => {
                    tracing::warn!(resource = act.def.resource, "cacher sync failed, retrying: {e}");
                    ctx.run_later(Duration::from_millis(500), |act, ctx| act.sync(ctx));
                }
            }
        }));
    }

    /// Follows `watch`, a storage watch from the cache's revision, from now on.
    fn follow(&mut self, watch: storage::WatchStream, ctx: &mut Context<Self>) {
        self.progress = Some(watch.progress.clone());
        self.shared.progress_answered();
        self.ready = true;
        let revision = self.revision;
        self.advance(revision);
        self.publish();
        let generation = self.generation;
        let items = tokio_stream::wrappers::ReceiverStream::new(watch.items)
            .map(move |i| (generation, Some(i)))
            .chain(tokio_stream::once((generation, None)));
        self.storage_watch = Some(ctx.add_stream(items));
    }

    /// The storage watch broke (a backend restart, a lost connection): watch again from the
    /// last revision the cache saw, so no event is lost and watchers notice nothing. Retried
    /// every [`CacherOptions::resume_backoff`] while storage is unavailable; only when storage
    /// no longer holds that history (compacted) does the cache re-list.
    fn resume(&mut self, ctx: &mut Context<Self>) {
        if let Some(old) = self.storage_watch.take() {
            ctx.cancel_future(old);
        }
        self.ready = false;
        self.publish();
        // Items still in flight from the broken watch are ignored from here on.
        self.generation += 1;
        let generation = self.generation;
        ctx.run_later(self.options.resume_backoff, move |act, ctx| {
            if generation != act.generation {
                return;
            }
            let (storage, prefix, from) = (act.storage.clone(), act.prefix.clone(), act.revision);
            let fut = async move { storage.watch(&prefix, from).await };
            ctx.spawn(fut.into_actor(act).map(move |res, act, ctx| {
                if generation != act.generation {
                    return;
                }
                match res {
                    Ok(watch) => act.follow(watch, ctx),
                    Err(StorageError::Compacted { .. }) => act.relist(ctx),
                    Err(e) => {
                        tracing::warn!(resource = act.def.resource, "resuming the storage watch failed, retrying: {e}");
                        act.resume(ctx);
                    }
                }
            }));
        });
    }

    /// Lists and watches storage again: its history since the cache's revision is gone.
    fn relist(&mut self, ctx: &mut Context<Self>) {
        if let Some(old) = self.storage_watch.take() {
            ctx.cancel_future(old);
        }
        self.ready = false;
        self.publish();
        self.sync(ctx);
    }

    /// Keeps an event in the window, evicting what is past both its capacity and its
    /// freshness, and anything past its hard limit.
    fn remember(&mut self, event: CachedEvent) {
        self.window.push_back(event);
        let o = &self.options;
        while let Some(oldest) = self.window.front() {
            let over = self.window.len() > o.window_capacity;
            let stale = oldest.received.elapsed() > o.window_freshness;
            if !(over && stale) && self.window.len() <= o.window_limit {
                break;
            }
            self.window_floor = oldest.revision;
            self.window.pop_front();
        }
    }

    fn advance(&mut self, revision: Revision) {
        if revision > self.revision {
            self.revision = revision;
            self.metrics.resource_version.set(revision as f64);
        }
    }

    fn apply(&mut self, event: storage::Event) {
        self.metrics.events_received.increment(1);
        let received = Instant::now();
        let revision = event.kv.mod_revision;
        let key: Arc<str> = Arc::from(event.kv.key.as_str());
        let decoded = decode_object(&self.def, &event.kv);
        let prev = if event.kind == EventType::Deleted { self.objects.remove(&key) } else { None };
        if let (Some(index), Some(gone)) = (&mut self.index, &prev) {
            index.remove(&key, gone);
        }
        // Clients that read the last version in protobuf (kubelets, controllers) will read this
        // one so too: its protobuf form is made from the value at hand, not from its JSON.
        let read_in_protobuf =
            prev.as_ref().or_else(|| self.objects.get(&key)).is_some_and(|p| p.object.read_in_protobuf());
        let entry = match (decoded, event.kind, &prev) {
            (Ok(o), _, _) => {
                let entry = Entry::new(&self.def, &o);
                if read_in_protobuf {
                    entry.object.make_protobuf_of(&o);
                }
                Arc::new(entry)
            }
            // A deletion reported without the last value (etcd after compaction): the cached
            // state, at the deletion's revision.
            (Err(_), EventType::Deleted, Some(last)) => Arc::new(last.at(&self.def, revision)),
            (Err(e), _, _) => {
                tracing::error!(resource = self.def.resource, "skipping undecodable event: {e}");
                self.advance(revision);
                return;
            }
        };
        let prev = match event.kind {
            EventType::Deleted => prev,
            _ => {
                let prev = self.objects.insert(key.clone(), entry.clone());
                if let Some(index) = &mut self.index {
                    index.replace(&key, prev.as_deref(), &entry);
                }
                prev
            }
        };
        // The version this event replaces is kept only by the window now: its protobuf form
        // (made when a protobuf client read it) goes, its JSON stays for watchers that resume.
        if let Some(old) = &prev {
            old.object.supersede();
        }
        self.changes += 1;
        let cached = CachedEvent { kind: event.kind, revision, entry, prev, received };
        self.dispatch(&cached);
        self.remember(cached);
        self.advance(revision);
    }

    fn dispatch(&mut self, event: &CachedEvent) {
        let def = self.def.clone();
        let mut lines = Lines::new(&def, event);
        let (budget, limit) = self.slow_watcher_limits();
        let mut cut = Vec::new();
        let mut delivered = 0;
        for (id, w) in &mut self.watchers {
            let Some(kind) = w.sees(&def, event) else { continue };
            match w.flush().and_then(|()| w.push(lines.get(kind))) {
                Ok(()) if w.too_slow(budget, limit) => cut.push(*id),
                Ok(()) => delivered += 1,
                Err(_closed) => cut.push(*id),
            }
            self.overflowed |= !w.overflow.is_empty();
        }
        self.metrics.watch_events.increment(delivered);
        lines.record_sizes(&self.metrics.event_sizes);
        self.cut(cut);
    }

    fn slow_watcher_limits(&self) -> (Duration, usize) {
        (self.options.slow_watcher_budget, self.options.watcher_buffer * 10)
    }

    /// Between events: drains what slow watchers have room for and cuts off those past their
    /// budget, and drops watchers whose client went away.
    fn sweep_watchers(&mut self) {
        let (budget, limit) = self.slow_watcher_limits();
        let mut cut = Vec::new();
        for (id, w) in self.watchers.iter_mut() {
            if w.tx.is_closed() || (!w.overflow.is_empty() && (w.flush().is_err() || w.too_slow(budget, limit))) {
                cut.push(*id);
            }
        }
        self.cut(cut);
    }

    /// Removes watchers. Dropping the sender ends the client's stream; it re-watches from its
    /// last resourceVersion. Those whose client is still there fell behind, and are counted.
    fn cut(&mut self, ids: Vec<u64>) {
        if ids.is_empty() {
            return;
        }
        for id in ids {
            if self.watchers.remove(&id).is_some_and(|w| !w.tx.is_closed()) {
                self.metrics.terminated_watchers.increment(1);
                tracing::info!(resource = self.def.resource, "cut off a watcher that fell behind");
            }
        }
        self.count_watchers();
    }

    fn count_watchers(&self) {
        self.shared.watchers.store(self.watchers.len(), Ordering::Relaxed);
    }

    /// Sends a bookmark to every watcher that asked for them (`only_ending`: to those whose
    /// watch ends within [`FINAL_BOOKMARK_LEAD`] and did not get their last one yet).
    fn send_bookmarks(&mut self, only_ending: bool) {
        let rv = self.revision;
        let ending_by = Instant::now() + FINAL_BOOKMARK_LEAD;
        let bookmark = WatchEvent::new(WatchEventType::Bookmark, bookmark(&self.def, rv, false));
        for w in self.watchers.values_mut() {
            let ending = !w.final_bookmark_sent && w.deadline.is_some_and(|d| d <= ending_by);
            if only_ending && !ending {
                continue;
            }
            if w.bookmarks
                && w.overflow.is_empty()
                && rv > w.start.max(w.last_bookmark).max(w.after)
                && w.tx.try_send(bookmark.clone()).is_ok()
            {
                w.last_bookmark = rv;
                w.final_bookmark_sent |= ending;
            }
        }
    }

    fn add_watcher(&mut self, msg: &WatchObjects) -> Result<WatchReceiver, ApiError> {
        let options = &msg.options;
        let from = options.read_at.revision();
        let (tx, rx) = mpsc::channel(self.options.watcher_buffer.max(1));
        let mut watcher = Watcher {
            namespace: msg.target.namespace.clone(),
            labels: options.selection.labels.clone(),
            fields: options.selection.fields.clone(),
            bookmarks: options.allow_bookmarks,
            tx,
            overflow: VecDeque::new(),
            backlog: 0,
            stalled_since: None,
            start: self.revision,
            after: 0,
            last_bookmark: 0,
            // A deadline past what the clock can represent is no deadline.
            deadline: options.timeout_seconds.and_then(|t| Instant::now().checked_add(Duration::from_secs(t))),
            final_bookmark_sent: false,
        };
        if let Some(from) = from {
            // A watch from a revision the cache has not reached yet starts there (kube 1.30
            // registers it at once and sends only what follows).
            watcher.start = from;
            watcher.after = from;
        }
        let initial = matches!((from, options.send_initial_events), (_, Some(true)) | (None, None));
        let mut backlog: Vec<WatchEvent> = Vec::new();
        if initial {
            let start = self.reader.namespace_range(&watcher.namespace);
            for e in index::scan(&self.objects, self.index.as_ref(), &start, &watcher.fields) {
                if e.matches(&watcher.labels, &watcher.fields) {
                    backlog.push(WatchEvent::deferred(WatchEventType::Added, e.object.clone()));
                }
            }
            if options.send_initial_events == Some(true) {
                backlog.push(WatchEvent::new(WatchEventType::Bookmark, bookmark(&self.def, self.revision, true)));
            }
        } else if let Some(from) = from {
            if from < self.window_floor {
                let oldest = self.window_floor;
                let status = ApiError::expired(format!("too old resource version: {from} ({oldest})"));
                self.metrics.too_old.increment(1);
                let (tx, rx) = mpsc::channel(1);
                let _ = tx.try_send(WatchEvent::new(WatchEventType::Error, EncodedObject::encode(&status.to_status())));
                return Ok(WatchReceiver(rx));
            }
            for e in self.window.iter().filter(|e| e.revision > from) {
                if let Some(kind) = watcher.sees(&self.def, e) {
                    // Lines are built as the client reads: a long replay holds no copies.
                    let object = if kind == WatchEventType::Deleted {
                        watchers::departed(&self.def, e)
                    } else {
                        e.entry.object.clone()
                    };
                    backlog.push(WatchEvent::deferred(kind, object));
                }
            }
        }
        // The initial state and replay always fit: they wait in the overflow as its backlog,
        // which neither the budget nor the overflow limit counts.
        for e in backlog {
            if watcher.push(e).is_err() {
                return Ok(WatchReceiver(rx));
            }
        }
        watcher.backlog = watcher.overflow.len();
        watcher.stalled_since = None;
        self.overflowed |= !watcher.overflow.is_empty();
        self.next_watcher += 1;
        self.watchers.insert(self.next_watcher, watcher);
        self.count_watchers();
        Ok(WatchReceiver(rx))
    }
}

impl Actor for CacherActor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        self.sync(ctx);
        ctx.run_interval(self.options.bookmark_interval, |act, _| {
            if act.watchers.values().any(|w| w.bookmarks) {
                let snapshot = act.snapshots.borrow().clone();
                act.shared.request_progress(&snapshot);
                act.send_bookmarks(false);
            }
        });
        self.arm_sweep(ctx);
    }
}

/// How often watchers are swept while one has events waiting in its overflow (an initial
/// list larger than its channel, a slow client): they drain at this pace.
const SWEEP_DRAINING: Duration = Duration::from_millis(100);

/// How often they are swept otherwise: to drop those whose client went away and to send the
/// last bookmarks (kube's cacher keeps its bookmark timers in one-second buckets too).
const SWEEP_QUIET: Duration = Duration::from_secs(1);

impl CacherActor {
    /// Arms the next sweep: in [`SWEEP_DRAINING`] when a watcher has overflow (or just got
    /// some), else in [`SWEEP_QUIET`]; a sweep armed for later than that is moved up. Many
    /// cachers wake a quiet server ten times less often than a fixed 100 ms tick did.
    fn arm_sweep(&mut self, ctx: &mut Context<Self>) {
        let draining = std::mem::take(&mut self.overflowed) || self.watchers.values().any(|w| !w.overflow.is_empty());
        let wait = if draining { SWEEP_DRAINING } else { SWEEP_QUIET };
        let at = Instant::now() + wait;
        if let Some((due, handle)) = self.sweep_at {
            if due <= at {
                return;
            }
            ctx.cancel_future(handle);
        }
        let handle = ctx.run_later(wait, |act, ctx| {
            act.sweep_at = None;
            act.sweep_watchers();
            // A last bookmark shortly before each watch's deadline (kube's cacher does the
            // same), so the client resumes from a recent resourceVersion instead of risking a 410.
            let ending_by = Instant::now() + FINAL_BOOKMARK_LEAD;
            if act
                .watchers
                .values()
                .any(|w| w.bookmarks && !w.final_bookmark_sent && w.deadline.is_some_and(|d| d <= ending_by))
            {
                act.send_bookmarks(true);
            }
            act.arm_sweep(ctx);
        });
        self.sweep_at = Some((at, handle));
    }

    /// Moves the next sweep up when an event or a new watcher left something in an overflow.
    fn arm_if_overflowed(&mut self, ctx: &mut Context<Self>) {
        if self.overflowed {
            self.arm_sweep(ctx);
        }
    }
}

/// A BOOKMARK's object: only the kind and the resourceVersion (and, ending a watch's initial
/// events, kube's `k8s.io/initial-events-end` annotation).
fn bookmark(def: &ResourceDef, revision: Revision, initial_events_end: bool) -> EncodedObject {
    let mut metadata = json!({ "resourceVersion": revision.to_string(), "creationTimestamp": null });
    if initial_events_end {
        metadata["annotations"] = json!({ "k8s.io/initial-events-end": "true" });
    }
    EncodedObject::encode(&json!({ "kind": def.kind, "apiVersion": def.api_version(), "metadata": metadata }))
}

/// An item of the storage watch of one sync generation; `None` when that watch ended.
type StorageItem = (u64, Option<WatchItem>);

impl StreamHandler<StorageItem> for CacherActor {
    fn handle(&mut self, (generation, item): StorageItem, ctx: &mut Context<Self>) {
        // Items (and the end) of a watch a re-sync abandoned are ignored.
        if generation != self.generation {
            return;
        }
        match item {
            Some(WatchItem::Event(e)) => {
                self.apply(e);
                self.publish();
                self.arm_if_overflowed(ctx);
            }
            Some(WatchItem::Progress(rev)) => {
                self.shared.progress_answered();
                self.advance(rev);
                self.publish();
            }
            Some(WatchItem::Error(e @ StorageError::Compacted { .. })) => {
                tracing::warn!(resource = self.def.resource, "storage watch fell behind compaction, re-listing: {e}");
                self.relist(ctx);
            }
            Some(WatchItem::Error(e)) => {
                tracing::warn!(resource = self.def.resource, "storage watch failed, resuming: {e}");
                self.resume(ctx);
            }
            None => {
                // The storage watch ended (backend restart or a dropped watcher).
                tracing::warn!(resource = self.def.resource, "storage watch ended, resuming");
                self.resume(ctx);
            }
        }
    }

    fn finished(&mut self, _: &mut Context<Self>) {
        // Each watch announces its own end with a `None` item, tagged with its generation.
    }
}

/// Objects read per page of the initial list: decoding page by page keeps the transient
/// memory of a sync to one page, not a second copy of the whole resource.
const SYNC_PAGE: usize = 1_000;

/// Lists the resource at one revision, page by page, into cache entries (off the actor, so a
/// large sync does not hold up watch registrations).
async fn initial_list(
    def: &ResourceDef,
    storage: &dyn Storage,
    prefix: &str,
) -> Result<(Objects, Revision), StorageError> {
    let mut objects = Objects::new();
    let mut options = storage::ListOptions { revision: None, start: None, limit: SYNC_PAGE };
    loop {
        let page = storage.list(prefix, options.clone()).await?;
        for kv in &page.items {
            match decode_object(def, kv) {
                Ok(obj) => {
                    objects.insert(Arc::from(kv.key.as_str()), Arc::new(Entry::new(def, &obj)));
                }
                Err(e) => tracing::error!(resource = def.resource, "skipping undecodable object: {e}"),
            }
        }
        match page.items.last() {
            Some(last) if page.more => {
                options = storage::ListOptions {
                    revision: Some(page.revision),
                    start: Some(format!("{}\u{0}", last.key)),
                    limit: SYNC_PAGE,
                };
            }
            _ => return Ok((objects, page.revision)),
        }
    }
}

impl StageHandler<WatchObjects> for CacherActor {
    fn handle(
        &mut self,
        msg: WatchObjects,
        _: Deadline,
        _: &mut Context<Self>,
    ) -> Work<Self, <WatchObjects as Request>::Reply> {
        // A consistent watch (no resourceVersion) and a watch-list from a revision newer than the
        // cache wait for the cache, like reads; any other watch registers at once, answered from
        // the window or, from a future revision, with what follows it.
        let wait = match msg.options.read_at {
            ReadAt::NotOlderThan(n) if msg.options.send_initial_events == Some(true) && n > self.revision => {
                ReadAt::NotOlderThan(n)
            }
            ReadAt::Latest => ReadAt::Latest,
            _ => ReadAt::Any,
        };
        let reader = self.reader.clone();
        let fresh = async move { reader.fresh(wait, false).await.map(|_| ()) };
        Work::OnActor(Box::pin(fresh.into_actor(self).map(move |r, act, ctx| {
            let added = r.and_then(|()| act.add_watcher(&msg));
            act.arm_if_overflowed(ctx);
            added
        })))
    }
}

/// Stops the cacher: its watchers' streams end, and its snapshots stay readable by whoever
/// still holds its reader. Sent when the resource stops being served (its CRD is deleted).
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub struct StopCaching;

impl Request for StopCaching {
    type Reply = Result<(), ApiError>;
}

impl StageHandler<StopCaching> for CacherActor {
    fn handle(&mut self, _: StopCaching, _: Deadline, ctx: &mut Context<Self>) -> Work<Self, Result<(), ApiError>> {
        tracing::info!(resource = %self.def.qualified(), watchers = self.watchers.len(), "cacher stops");
        self.watchers.clear();
        self.shared.watchers.store(0, Ordering::Relaxed);
        ctx.stop();
        Work::Done(Ok(()))
    }
}

actors::stage_handler!(CacherActor => WatchObjects, StopCaching);
