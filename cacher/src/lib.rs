//! One cacher actor per stored resource: the read path of the apiserver.
//!
//! The [`CacherActor`] lists its resource from storage, then follows the storage watch from the
//! list's revision. It is the single writer of its state (current objects by key, and a window
//! of recent events) and serves gets, lists and watches from memory:
//!
//! - `resourceVersion` unset (a consistent read) is served once the cache provably reflects the
//!   storage's current revision: it asks the storage watch for a progress notification and
//!   answers when that arrives (immediately when nothing was written since).
//! - `resourceVersion=0` is served from whatever the cache holds.
//! - `resourceVersion=N` waits up to 3 s for the cache to reach N, then 504 as kube.
//! - Paged lists (`limit` with a consistent or exact read, or `continue`) read storage at the
//!   first page's revision, so pages stay consistent.
//! - Watches replay the window from their resourceVersion (410 Expired through an ERROR event
//!   when it is older than the window), then get live events filtered per watcher. A watcher
//!   whose buffer fills is cut off (its stream ends; clients re-watch) so it never slows others.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use actix::fut::{self, LocalBoxActorFuture};
use actix::{Actor, ActorFutureExt, AsyncContext, Context, Handler, ResponseActFuture, StreamHandler, WrapFuture};
use actors::error::ApiError;
use actors::kinds::ResourceDef;
use actors::messages::{
    GetObject, ListObjects, ObjectList, ReadConsistency, Selection, Target, WatchEvent, WatchEventType, WatchObjects,
    WatchReceiver,
};
use actors::object::ObjectExt;
use actors::selector::{FieldSelector, LabelSelector};
use serde_json::{Value, json};
use storage::registry::{decode_object, interpret};
use storage::{EventType, ProgressRequester, Revision, Storage, StorageError, WatchItem};
use tokio::sync::{mpsc, oneshot};
use tokio_stream::StreamExt;

pub mod conformance;
pub mod continuation;

/// How a cacher is sized and timed.
#[derive(Clone, Debug)]
pub struct CacherOptions {
    /// Events kept for watches that resume from a past resourceVersion.
    pub window_capacity: usize,
    /// Events buffered per watcher before it is cut off as too slow.
    pub watcher_buffer: usize,
    /// How long a read waits for the cache to reach a requested revision.
    pub wait_for_revision: Duration,
    /// How often watchers that asked for bookmarks get one.
    pub bookmark_interval: Duration,
}

impl Default for CacherOptions {
    fn default() -> Self {
        CacherOptions {
            window_capacity: 10_000,
            watcher_buffer: 1_000,
            wait_for_revision: Duration::from_secs(3),
            bookmark_interval: Duration::from_secs(60),
        }
    }
}

/// Where a read is answered from.
enum Source {
    /// The cache is fresh enough.
    Cache,
    /// Storage answers: the cache is behind and would catch up only slowly.
    Storage,
}

/// One change as the cache keeps it: decoded once, shared by every watcher.
struct CachedEvent {
    kind: EventType,
    revision: Revision,
    object: Arc<Value>,
    prev: Option<Arc<Value>>,
}

/// A registered watcher and its filter.
struct Watcher {
    namespace: String,
    labels: LabelSelector,
    fields: FieldSelector,
    bookmarks: bool,
    /// Bounded: a full buffer means the client is too slow, and the watcher is cut off.
    tx: mpsc::Sender<WatchEvent>,
    /// The resourceVersion the watch started at: bookmarks report progress past it.
    start: Revision,
    /// Events at or below it are not sent (a watch from a revision the cache has not reached).
    after: Revision,
    /// The last bookmark's resourceVersion, so an idle watch is not sent the same one twice.
    last_bookmark: Revision,
}

/// The per-resource watch cache actor.
pub struct CacherActor {
    def: &'static ResourceDef,
    storage: Arc<dyn Storage>,
    prefix: String,
    options: CacherOptions,
    objects: BTreeMap<String, Arc<Value>>,
    window: VecDeque<CachedEvent>,
    /// The oldest revision a watch can resume from (events after it are all in the window).
    window_floor: Revision,
    /// The revision the cache reflects: every change under the prefix up to it is applied.
    revision: Revision,
    ready: bool,
    watchers: HashMap<u64, Watcher>,
    next_watcher: u64,
    /// Reads waiting for the cache to reach a revision, keyed by that revision.
    waiting: BTreeMap<Revision, Vec<oneshot::Sender<()>>>,
    progress: Option<Arc<dyn ProgressRequester>>,
    progress_requested: bool,
    /// Bumped on every re-list so events of an abandoned storage watch are ignored.
    generation: u64,
    metrics: CacherMetrics,
}

struct CacherMetrics {
    events_received: metrics::Counter,
    resource_version: metrics::Gauge,
    capacity: metrics::Gauge,
    terminated_watchers: metrics::Counter,
    watch_events: metrics::Counter,
    storage_lists: metrics::Counter,
}

impl CacherMetrics {
    fn new(def: &ResourceDef) -> Self {
        let resource = def.qualified();
        CacherMetrics {
            events_received: metrics::counter!("apiserver_watch_cache_events_received_total", "resource" => resource.clone()),
            resource_version: metrics::gauge!("apiserver_watch_cache_resource_version", "resource" => resource.clone()),
            capacity: metrics::gauge!("apiserver_watch_cache_capacity", "resource" => resource.clone()),
            terminated_watchers: metrics::counter!("apiserver_terminated_watchers_total", "resource" => resource.clone()),
            watch_events: metrics::counter!("apiserver_watch_events_total", "group" => def.group, "version" => def.version, "kind" => def.kind),
            storage_lists: metrics::counter!("apiserver_cache_list_fallthrough_total", "resource" => resource),
        }
    }
}

impl CacherActor {
    /// A cacher for `def`'s objects under `storage_prefix` (e.g. `/registry`).
    pub fn new(
        def: &'static ResourceDef,
        storage: Arc<dyn Storage>,
        storage_prefix: &str,
        options: CacherOptions,
    ) -> Self {
        let metrics = CacherMetrics::new(def);
        metrics.capacity.set(options.window_capacity as f64);
        CacherActor {
            def,
            storage,
            prefix: def.key_prefix(storage_prefix),
            options,
            objects: BTreeMap::new(),
            window: VecDeque::new(),
            window_floor: 0,
            revision: 0,
            ready: false,
            watchers: HashMap::new(),
            next_watcher: 0,
            waiting: BTreeMap::new(),
            progress: None,
            progress_requested: false,
            generation: 0,
            metrics,
        }
    }

    /// Lists storage and starts following its watch; retried until it succeeds.
    fn sync(&mut self, ctx: &mut Context<Self>) {
        self.generation += 1;
        let generation = self.generation;
        let storage = self.storage.clone();
        let prefix = self.prefix.clone();
        let fut = async move {
            let list = storage.list(&prefix, storage::ListOptions::default()).await?;
            let watch = storage.watch(&prefix, list.revision).await?;
            Ok::<_, StorageError>((list, watch))
        };
        ctx.spawn(fut.into_actor(self).map(move |res, act, ctx| {
            if generation != act.generation {
                return;
            }
            match res {
                Ok((list, watch)) => {
                    let mut objects = BTreeMap::new();
                    for kv in &list.items {
                        match decode_object(kv) {
                            Ok(obj) => {
                                objects.insert(kv.key.clone(), Arc::new(obj));
                            }
                            Err(e) => tracing::error!(resource = act.def.resource, "skipping undecodable object: {e}"),
                        }
                    }
                    if act.revision > 0 && list.revision >= act.revision {
                        act.catch_up(objects, list.revision);
                    } else {
                        // First sync, or storage went back in time (a restored backup): nothing
                        // before can be trusted, so watchers start over.
                        act.watchers.clear();
                        act.objects = objects;
                        act.window.clear();
                        act.window_floor = list.revision;
                    }
                    act.progress = Some(watch.progress.clone());
                    act.progress_requested = false;
                    act.ready = true;
                    act.advance(list.revision);
                    let generation = act.generation;
                    ctx.add_stream(
                        tokio_stream::wrappers::ReceiverStream::new(watch.items).map(move |i| (generation, i)),
                    );
                }
                Err(e) => {
                    tracing::warn!(resource = act.def.resource, "cacher sync failed, retrying: {e}");
                    ctx.run_later(Duration::from_millis(500), |act, ctx| act.sync(ctx));
                }
            }
        }));
    }

    /// Lists and watches storage again after its watch broke. Watchers stay connected: the
    /// re-list is turned into the events they missed (see [`CacherActor::catch_up`]).
    fn resync(&mut self, ctx: &mut Context<Self>) {
        self.ready = false;
        self.sync(ctx);
    }

    /// Applies a re-list at `revision` as events: what appeared or changed since the cache last
    /// heard from storage is ADDED or MODIFIED at its own resourceVersion, what vanished is
    /// DELETED at `revision`. Watchers and the window see the same sequence a live watch would
    /// have converged to, with no event twice and no state lost.
    fn catch_up(&mut self, mut fresh: BTreeMap<String, Arc<Value>>, revision: Revision) {
        let mut changes: Vec<CachedEvent> = Vec::new();
        for (key, object) in &fresh {
            let prev = self.objects.get(key);
            let kind = match prev {
                None => EventType::Added,
                Some(old) if old.resource_version() != object.resource_version() => EventType::Modified,
                Some(_) => continue,
            };
            let at = object.resource_version().parse().unwrap_or(revision);
            changes.push(CachedEvent { kind, revision: at, object: object.clone(), prev: prev.cloned() });
        }
        for (key, old) in &self.objects {
            if !fresh.contains_key(key) {
                // A live DELETED event carries the deletion's revision; the re-list revision is
                // the closest this catch-up knows.
                let mut gone = (**old).clone();
                gone.set_meta_str("resourceVersion", &revision.to_string());
                let event =
                    CachedEvent { kind: EventType::Deleted, revision, object: Arc::new(gone), prev: Some(old.clone()) };
                changes.push(event);
            }
        }
        changes.sort_by_key(|e| e.revision);
        std::mem::swap(&mut self.objects, &mut fresh);
        for event in changes {
            self.metrics.events_received.increment(1);
            self.dispatch(&event);
            self.remember(event);
        }
    }

    /// Keeps an event in the window, evicting the oldest past capacity.
    fn remember(&mut self, event: CachedEvent) {
        if self.window.len() >= self.options.window_capacity
            && let Some(old) = self.window.pop_front()
        {
            self.window_floor = old.revision;
        }
        self.window.push_back(event);
    }

    fn advance(&mut self, revision: Revision) {
        if revision > self.revision {
            self.revision = revision;
            self.metrics.resource_version.set(revision as f64);
        }
        let later = self.waiting.split_off(&(self.revision + 1));
        for (_, senders) in std::mem::replace(&mut self.waiting, later) {
            for s in senders {
                let _ = s.send(());
            }
        }
        if !self.waiting.is_empty() && !self.progress_requested {
            self.request_progress();
        }
    }

    fn request_progress(&mut self) {
        if let Some(p) = &self.progress {
            self.progress_requested = true;
            p.request_progress();
        }
    }

    fn apply(&mut self, event: storage::Event) {
        self.metrics.events_received.increment(1);
        let revision = event.kv.mod_revision;
        let key = event.kv.key.clone();
        let object = match decode_object(&event.kv) {
            Ok(o) => Arc::new(o),
            Err(e) => {
                tracing::error!(resource = self.def.resource, "skipping undecodable event: {e}");
                return;
            }
        };
        let prev = match event.kind {
            EventType::Deleted => self.objects.remove(&key),
            _ => self.objects.insert(key, object.clone()),
        };
        let cached = CachedEvent { kind: event.kind, revision, object, prev };
        self.dispatch(&cached);
        self.remember(cached);
        self.advance(revision);
    }

    fn dispatch(&mut self, event: &CachedEvent) {
        let def = self.def;
        let mut gone = Vec::new();
        let mut slow = Vec::new();
        for (id, w) in &mut self.watchers {
            let Some(out) = translate(def, w, event) else { continue };
            if event.revision <= w.after {
                continue;
            }
            match w.tx.try_send(out) {
                Ok(()) => self.metrics.watch_events.increment(1),
                Err(mpsc::error::TrySendError::Full(_)) => slow.push(*id),
                Err(mpsc::error::TrySendError::Closed(_)) => gone.push(*id),
            }
        }
        for id in gone {
            self.watchers.remove(&id);
        }
        for id in slow {
            // Dropping the sender ends the client's stream; it re-watches from its last
            // resourceVersion, which the window still holds unless it fell very far behind.
            self.watchers.remove(&id);
            self.metrics.terminated_watchers.increment(1);
            tracing::info!(resource = def.resource, "cut off a watcher that fell behind");
        }
    }

    fn send_bookmarks(&mut self) {
        let rv = self.revision;
        let bookmark = Arc::new(json!({
            "kind": self.def.kind,
            "apiVersion": self.def.api_version(),
            "metadata": { "resourceVersion": rv.to_string(), "creationTimestamp": null },
        }));
        for w in self.watchers.values_mut() {
            if w.bookmarks
                && rv > w.start.max(w.last_bookmark).max(w.after)
                && w.tx.try_send(WatchEvent { kind: WatchEventType::Bookmark, object: bookmark.clone() }).is_ok()
            {
                w.last_bookmark = rv;
            }
        }
    }

    /// Resolves once the cache reflects `consistency`: immediately for `0`, after the given
    /// revision for an explicit one (504 after the deadline), after the storage's current
    /// revision for a consistent read. A consistent read that `may_read_storage` resolves to
    /// [`Source::Storage`] instead of waiting when the cache is behind and the backend's
    /// progress notifications are slow (etcd batches them about every 100 ms), as kube 1.30
    /// serves consistent reads from etcd.
    fn wait_until(
        &mut self,
        consistency: &ReadConsistency,
        may_read_storage: bool,
    ) -> LocalBoxActorFuture<Self, Result<Source, ApiError>> {
        let explicit = match consistency.resource_version.as_deref() {
            None | Some("") => None,
            Some("0") if self.ready => return Box::pin(fut::ready(Ok(Source::Cache))),
            Some("0") => Some(0),
            Some(rv) => match rv.parse::<Revision>() {
                Ok(n) => Some(n),
                Err(_) => {
                    return Box::pin(fut::ready(Err(ApiError::bad_request(format!(
                        "invalid resource version \"{rv}\""
                    )))));
                }
            },
        };
        let deadline = self.options.wait_for_revision;
        let target: LocalBoxActorFuture<Self, Result<Revision, ApiError>> = match explicit {
            Some(n) => Box::pin(fut::ready(Ok(n))),
            None => {
                let storage = self.storage.clone();
                let def = self.def;
                Box::pin(
                    async move { storage.current_revision().await.map_err(|e| interpret(def, "", e)) }.into_actor(self),
                )
            }
        };
        let read_storage = explicit.is_none() && may_read_storage && !self.storage.prompt_progress();
        Box::pin(target.then(move |target, act, _ctx| {
            let wait: LocalBoxActorFuture<Self, Result<Source, ApiError>> = match target {
                Err(e) => Box::pin(fut::ready(Err(e))),
                Ok(rev) if act.ready && act.revision >= rev => Box::pin(fut::ready(Ok(Source::Cache))),
                Ok(_) if read_storage => {
                    // Catch up in the background so later reads find the cache fresh.
                    if act.ready && !act.progress_requested {
                        act.request_progress();
                    }
                    Box::pin(fut::ready(Ok(Source::Storage)))
                }
                Ok(rev) => {
                    let (tx, rx) = oneshot::channel();
                    act.waiting.entry(rev).or_default().push(tx);
                    if act.ready && !act.progress_requested {
                        act.request_progress();
                    }
                    Box::pin(
                        async move { matches!(tokio::time::timeout(deadline, rx).await, Ok(Ok(()))) }
                            .into_actor(act)
                            .map(move |reached, act, _| {
                                if reached {
                                    Ok(Source::Cache)
                                } else {
                                    Err(ApiError::too_large_resource_version(rev, act.revision))
                                }
                            }),
                    )
                }
            };
            wait
        }))
    }

    fn key(&self, target: &Target) -> String {
        if self.def.namespaced {
            format!("{}{}/{}", self.prefix, target.namespace, target.name)
        } else {
            format!("{}{}", self.prefix, target.name)
        }
    }

    fn get(&self, target: &Target) -> Result<Arc<Value>, ApiError> {
        let key = self.key(target);
        self.objects
            .get(&key)
            .cloned()
            .ok_or_else(|| ApiError::not_found(self.def.group, self.def.resource, &target.name))
    }

    fn namespace_range(&self, namespace: &str) -> String {
        if self.def.namespaced && !namespace.is_empty() {
            format!("{}{namespace}/", self.prefix)
        } else {
            self.prefix.clone()
        }
    }

    fn list_from_cache(&self, target: &Target, labels: &LabelSelector, fields: &FieldSelector) -> ObjectList {
        let start = self.namespace_range(&target.namespace);
        let items = self
            .objects
            .range(start.clone()..)
            .take_while(|(k, _)| k.starts_with(&start))
            .filter(|(_, o)| labels.matches(o.labels()) && fields.matches(&actors::selector::field_set(self.def, o)))
            .map(|(_, o)| o.clone())
            .collect();
        ObjectList {
            items,
            resource_version: self.revision.to_string(),
            continue_token: None,
            remaining_item_count: None,
        }
    }

    fn add_watcher(
        &mut self,
        msg: &WatchObjects,
        labels: LabelSelector,
        fields: FieldSelector,
    ) -> Result<WatchReceiver, ApiError> {
        let (tx, rx) = mpsc::channel(self.options.watcher_buffer.max(1));
        let mut watcher = Watcher {
            namespace: msg.target.namespace.clone(),
            labels,
            fields,
            bookmarks: msg.allow_bookmarks,
            tx,
            start: self.revision,
            after: 0,
            last_bookmark: 0,
        };
        let from = match msg.consistency.resource_version.as_deref() {
            None | Some("") | Some("0") => None,
            Some(rv) => Some(
                rv.parse::<Revision>()
                    .map_err(|_| ApiError::bad_request(format!("invalid resource version \"{rv}\"")))?,
            ),
        };
        if let Some(from) = from {
            // A watch from a revision the cache has not reached yet starts there (kube 1.30
            // registers it at once and sends only what follows).
            watcher.start = from;
            watcher.after = from;
        }
        let initial = matches!((from, msg.send_initial_events), (_, Some(true)) | (None, None));
        // Everything queued below fits: the buffer grows to hold the initial state and replay.
        let mut backlog: Vec<WatchEvent> = Vec::new();
        if initial {
            let start = self.namespace_range(&watcher.namespace);
            for (_, o) in self.objects.range(start.clone()..).take_while(|(k, _)| k.starts_with(&start)) {
                if watcher.labels.matches(o.labels())
                    && watcher.fields.matches(&actors::selector::field_set(self.def, o))
                {
                    backlog.push(WatchEvent { kind: WatchEventType::Added, object: o.clone() });
                }
            }
            if msg.send_initial_events == Some(true) {
                backlog.push(WatchEvent {
                    kind: WatchEventType::Bookmark,
                    object: Arc::new(json!({
                        "kind": self.def.kind,
                        "apiVersion": self.def.api_version(),
                        "metadata": {
                            "resourceVersion": self.revision.to_string(),
                            "creationTimestamp": null,
                            "annotations": { "k8s.io/initial-events-end": "true" },
                        },
                    })),
                });
            }
        } else if let Some(from) = from {
            if from < self.window_floor {
                let status = ApiError::expired(format!("too old resource version: {from} ({})", self.window_floor));
                let (tx, rx) = mpsc::channel(1);
                let _ = tx.try_send(WatchEvent { kind: WatchEventType::Error, object: Arc::new(status.to_status()) });
                return Ok(WatchReceiver(rx));
            }
            for e in self.window.iter().filter(|e| e.revision > from) {
                if let Some(out) = translate(self.def, &watcher, e) {
                    backlog.push(out);
                }
            }
        }
        if backlog.len() >= self.options.watcher_buffer {
            let (tx, rx) = mpsc::channel(backlog.len() + self.options.watcher_buffer);
            watcher.tx = tx;
            for e in backlog {
                let _ = watcher.tx.try_send(e);
            }
            self.insert_watcher(watcher);
            return Ok(WatchReceiver(rx));
        }
        for e in backlog {
            let _ = watcher.tx.try_send(e);
        }
        self.insert_watcher(watcher);
        Ok(WatchReceiver(rx))
    }

    fn insert_watcher(&mut self, watcher: Watcher) {
        self.next_watcher += 1;
        self.watchers.insert(self.next_watcher, watcher);
    }
}

/// What one watcher sees of one change: kube's `convertToWatchEvent` (an object entering the
/// selection is ADDED, leaving it DELETED with its previous state).
fn translate(def: &ResourceDef, w: &Watcher, e: &CachedEvent) -> Option<WatchEvent> {
    let passes = |o: &Value| {
        (w.namespace.is_empty() || !def.namespaced || o.namespace() == w.namespace)
            && w.labels.matches(o.labels())
            && w.fields.matches(&actors::selector::field_set(def, o))
    };
    match e.kind {
        EventType::Deleted => {
            let last = e.prev.as_ref().unwrap_or(&e.object);
            passes(last).then(|| {
                let mut gone = (**last).clone();
                gone.set_meta_str("resourceVersion", &e.revision.to_string());
                WatchEvent { kind: WatchEventType::Deleted, object: Arc::new(gone) }
            })
        }
        EventType::Added | EventType::Modified => {
            let now = passes(&e.object);
            let before = e.prev.as_ref().is_some_and(|p| passes(p));
            match (before, now) {
                (false, true) => Some(WatchEvent { kind: WatchEventType::Added, object: e.object.clone() }),
                (true, true) => Some(WatchEvent { kind: WatchEventType::Modified, object: e.object.clone() }),
                (true, false) => {
                    let mut gone = (**e.prev.as_ref().expect("before implies prev")).clone();
                    gone.set_meta_str("resourceVersion", &e.revision.to_string());
                    Some(WatchEvent { kind: WatchEventType::Deleted, object: Arc::new(gone) })
                }
                (false, false) => None,
            }
        }
    }
}

impl Actor for CacherActor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        self.sync(ctx);
        ctx.run_interval(self.options.bookmark_interval, |act, _| {
            if act.watchers.values().any(|w| w.bookmarks) {
                act.request_progress();
                act.send_bookmarks();
            }
        });
    }
}

impl StreamHandler<(u64, WatchItem)> for CacherActor {
    fn handle(&mut self, (generation, item): (u64, WatchItem), ctx: &mut Context<Self>) {
        if generation != self.generation {
            return;
        }
        match item {
            WatchItem::Event(e) => self.apply(e),
            WatchItem::Progress(rev) => {
                self.progress_requested = false;
                self.advance(rev);
            }
            WatchItem::Error(e) => {
                tracing::warn!(resource = self.def.resource, "storage watch failed, re-listing: {e}");
                self.resync(ctx);
            }
        }
    }

    fn finished(&mut self, ctx: &mut Context<Self>) {
        // The storage watch ended (backend restart or a dropped watcher): start over. Streams of
        // abandoned generations end too; only the current one matters.
        if self.ready {
            tracing::warn!(resource = self.def.resource, "storage watch ended, re-listing");
            self.resync(ctx);
        }
    }
}

fn parse_selection(def: &ResourceDef, s: &Selection) -> Result<(LabelSelector, FieldSelector), ApiError> {
    let labels = LabelSelector::parse(&s.label_selector)?;
    // Validation also converts aliases (`spec.host`) to the canonical labels `field_set` uses.
    let fields = FieldSelector::parse(&s.field_selector)?.validate_for(def)?;
    Ok((labels, fields))
}

impl Handler<GetObject> for CacherActor {
    type Result = ResponseActFuture<Self, Result<Arc<Value>, ApiError>>;

    fn handle(&mut self, msg: GetObject, _: &mut Context<Self>) -> Self::Result {
        let wait = self.wait_until(&msg.consistency, true);
        Box::pin(wait.then(move |source, act, _| -> LocalBoxActorFuture<Self, Result<Arc<Value>, ApiError>> {
            match source {
                Err(e) => Box::pin(fut::ready(Err(e))),
                Ok(Source::Cache) => Box::pin(fut::ready(act.get(&msg.target))),
                Ok(Source::Storage) => {
                    act.metrics.storage_lists.increment(1);
                    let (storage, def, key) = (act.storage.clone(), act.def, act.key(&msg.target));
                    Box::pin(
                        async move {
                            match storage.get(&key).await.map_err(|e| interpret(def, &msg.target.name, e))? {
                                (Some(kv), _) => {
                                    decode_object(&kv).map(Arc::new).map_err(|e| interpret(def, &msg.target.name, e))
                                }
                                (None, _) => Err(ApiError::not_found(def.group, def.resource, &msg.target.name)),
                            }
                        }
                        .into_actor(act),
                    )
                }
            }
        }))
    }
}

impl Handler<ListObjects> for CacherActor {
    type Result = ResponseActFuture<Self, Result<ObjectList, ApiError>>;

    fn handle(&mut self, msg: ListObjects, _: &mut Context<Self>) -> Self::Result {
        let (labels, fields) = match parse_selection(self.def, &msg.selection) {
            Ok(s) => s,
            Err(e) => return Box::pin(fut::ready(Err(e))),
        };
        let rv = msg.consistency.resource_version.as_deref().unwrap_or("");
        let exact = msg.consistency.resource_version_match.as_deref() == Some("Exact");
        let paged = msg.continue_token.is_some() || (msg.limit > 0 && rv != "0") || exact;
        if paged {
            // Pages must be consistent at one revision, which only storage history keeps.
            self.metrics.storage_lists.increment(1);
            let storage = self.storage.clone();
            let def = self.def;
            let prefix = self.namespace_range(&msg.target.namespace);
            return Box::pin(
                async move { continuation::list_from_storage(def, storage, &prefix, &msg, &labels, &fields).await }
                    .into_actor(self),
            );
        }
        let wait = self.wait_until(&msg.consistency, true);
        Box::pin(wait.then(move |source, act, _| -> LocalBoxActorFuture<Self, Result<ObjectList, ApiError>> {
            match source {
                Err(e) => Box::pin(fut::ready(Err(e))),
                Ok(Source::Cache) => Box::pin(fut::ready(Ok(act.list_from_cache(&msg.target, &labels, &fields)))),
                Ok(Source::Storage) => {
                    act.metrics.storage_lists.increment(1);
                    let (storage, def, prefix) =
                        (act.storage.clone(), act.def, act.namespace_range(&msg.target.namespace));
                    Box::pin(
                            async move {
                                continuation::list_from_storage(def, storage, &prefix, &msg, &labels, &fields).await
                            }
                            .into_actor(act),
                        )
                }
            }
        }))
    }
}

impl Handler<WatchObjects> for CacherActor {
    type Result = ResponseActFuture<Self, Result<WatchReceiver, ApiError>>;

    fn handle(&mut self, msg: WatchObjects, _: &mut Context<Self>) -> Self::Result {
        let (labels, fields) = match parse_selection(self.def, &msg.selection) {
            Ok(s) => s,
            Err(e) => return Box::pin(fut::ready(Err(e))),
        };
        // A consistent watch (no resourceVersion) and a watch-list from a revision newer than the
        // cache wait for the cache, like reads; any other watch registers at once, answered from
        // the window or, from a future revision, with what follows it.
        let consistency = match msg.consistency.resource_version.as_deref() {
            Some(rv)
                if rv != "0"
                    && msg.send_initial_events == Some(true)
                    && rv.parse::<Revision>().is_ok_and(|n| n > self.revision) =>
            {
                msg.consistency.clone()
            }
            None | Some("") => ReadConsistency::default(),
            _ => ReadConsistency { resource_version: Some("0".into()), resource_version_match: None },
        };
        let wait = self.wait_until(&consistency, false);
        Box::pin(wait.map(move |r, act, _| r.and_then(|_| act.add_watcher(&msg, labels, fields))))
    }
}

actors::stage_handler!(CacherActor => GetObject, ListObjects, WatchObjects);
