//! The cache's state as readers see it: immutable snapshots the cacher actor publishes after
//! every change, read by gets and lists on the caller's task so reads never queue in the actor's
//! mailbox behind watch fan-out.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use actors::StageMeters;
use actors::directory::{ActorDirectory, Registration};
use apimachinery::catalogue::ResourceDef;
use apimachinery::encoded::EncodedObject;
use apimachinery::error::ApiError;
use apimachinery::messages::{GetObject, ListObjects, ObjectList, Target};
use apimachinery::options::ReadAt;
use apimachinery::selector::{FieldSelector, LabelSelector};
use storage::{ProgressRequester, Revision, Storage};
use storage_codec::codec::decode_object;
use storage_codec::errors::interpret;
use tokio::sync::watch;

use crate::continuation;
use crate::entry::Objects;

/// The cache at one revision.
pub(crate) struct Snapshot {
    pub objects: Objects,
    /// `objects`' keys by the field the resource's clients select on, if it has one.
    pub index: Option<crate::index::FieldIndex>,
    /// Every change under the resource's prefix up to this revision is in `objects`.
    pub revision: Revision,
    /// False until the first list from storage has been applied.
    pub ready: bool,
    /// Counts the changes applied to `objects`, so a reader can tell in O(1) that nothing
    /// changed since its last look (`revision` also moves on progress notifications).
    pub changes: u64,
    pub progress: Option<Arc<dyn ProgressRequester>>,
}

impl Snapshot {
    pub fn empty() -> Self {
        Snapshot { objects: Objects::new(), index: None, revision: 0, ready: false, changes: 0, progress: None }
    }
}

/// State the actor and its readers share.
pub(crate) struct Shared {
    /// When the progress notification on its way was asked for (milliseconds since `epoch`;
    /// 0: none), so concurrent readers ask once, and ask again if no answer came within a
    /// second (the request may have gone to a storage watch that has since been replaced).
    pub progress_requested: AtomicU64,
    pub epoch: Instant,
    /// Reads answered by storage (`apiserver_cache_list_fallthrough_total`).
    pub storage_reads: metrics::Counter,
    /// Watchers the actor serves, published after each change for flow control's estimate of
    /// a write's fan-out (the actor's own map is not readable from outside it).
    pub watchers: AtomicUsize,
}

impl Shared {
    pub fn request_progress(&self, snapshot: &Snapshot) {
        let Some(p) = &snapshot.progress else { return };
        let now = self.epoch.elapsed().as_millis() as u64 + 1;
        let asked = self.progress_requested.load(Ordering::Acquire);
        if (asked == 0 || now.saturating_sub(asked) >= 1_000)
            && self.progress_requested.compare_exchange(asked, now, Ordering::AcqRel, Ordering::Acquire).is_ok()
        {
            p.request_progress();
        }
    }

    /// A progress notification arrived (or the storage watch was replaced).
    pub fn progress_answered(&self) {
        self.progress_requested.store(0, Ordering::Release);
    }
}

/// Where a read is answered from.
pub(crate) enum Source {
    /// The cache, at this snapshot.
    Cache(Arc<Snapshot>),
    /// Storage: the cache is behind and would catch up only slowly.
    Storage,
}

/// Gets and lists of one resource, answered from the cacher's snapshots (or storage when the
/// cache cannot prove it is fresh). Cheap to clone; every clone reads the same cache.
///
/// Shared memory by design, not a stage behind a handle: a read is a lookup in an immutable
/// snapshot on the caller's own task, so it never queues behind watch fan-out in the cacher's
/// mailbox. A stage in another process would reach it through its own local reader.
#[derive(Clone)]
pub struct CacheReader {
    pub(crate) def: Arc<ResourceDef>,
    pub(crate) storage: Arc<dyn Storage>,
    pub(crate) prefix: String,
    pub(crate) wait_for_revision: Duration,
    pub(crate) snapshots: watch::Receiver<Arc<Snapshot>>,
    pub(crate) shared: Arc<Shared>,
    /// Reads are metered like a stage (depth = reads in flight), without a mailbox.
    pub(crate) meters: Arc<StageMeters>,
    pub(crate) _registration: Option<Arc<Registration>>,
}

impl CacheReader {
    /// Lists this reader among the actors the admin endpoint shows, as `cache-reads`.
    pub fn register(mut self, directory: &ActorDirectory) -> Self {
        self._registration = Some(Arc::new(directory.register(self.meters.clone())));
        self
    }

    /// Objects in the cache now (all namespaces): what a list of the resource goes through.
    pub fn object_count(&self) -> u64 {
        self.snapshots.borrow().objects.len() as u64
    }

    /// A number that differs whenever the cached objects have changed since it was last read;
    /// `None` until the cache has synced. Lets a stage that builds something from a whole list
    /// (admission's webhook configurations) skip the list when nothing moved.
    pub fn changes(&self) -> Option<u64> {
        let snapshot = self.snapshots.borrow();
        snapshot.ready.then_some(snapshot.changes)
    }

    /// Watchers of the resource now: how many a write's event will reach.
    pub fn watcher_count(&self) -> u64 {
        self.shared.watchers.load(Ordering::Relaxed) as u64
    }

    /// The resourceVersion of the object `target` names as the cache holds it now (no wait
    /// for freshness; `None` before the cache is ready or without such an object): a write may
    /// trust a copy of the stored object as far as it would trust the cache.
    pub fn cached_revision(&self, target: &Target) -> Option<Revision> {
        let snapshot = self.snapshots.borrow();
        if !snapshot.ready {
            return None;
        }
        snapshot.objects.get(self.key(target).as_str()).map(|e| e.revision)
    }

    /// GET of one object.
    pub async fn get(&self, msg: GetObject) -> Result<EncodedObject, ApiError> {
        self.metered(self.get_inner(msg)).await
    }

    /// Runs a read under the reader's meters, counting it in flight and its error if any.
    async fn metered<T>(&self, read: impl Future<Output = Result<T, ApiError>>) -> Result<T, ApiError> {
        let mut call = self.meters.start_call();
        let out = read.await;
        if out.is_err() {
            call.failed();
        }
        out
    }

    async fn get_inner(&self, msg: GetObject) -> Result<EncodedObject, ApiError> {
        match self.fresh(msg.options.read_at, true).await? {
            Source::Cache(snapshot) => snapshot
                .objects
                .get(self.key(&msg.target).as_str())
                .map(|e| e.object.clone())
                .ok_or_else(|| ApiError::not_found(&self.def.group, &self.def.resource, &msg.target.name)),
            Source::Storage => {
                self.shared.storage_reads.increment(1);
                let (def, name) = (&self.def, &msg.target.name);
                match self.storage.get(&self.key(&msg.target)).await.map_err(|e| interpret(def, name, e))? {
                    (Some(kv), _) => {
                        decode_object(def, &kv).map(|o| EncodedObject::encode(&o)).map_err(|e| interpret(def, name, e))
                    }
                    (None, _) => Err(ApiError::not_found(&def.group, &def.resource, name)),
                }
            }
        }
    }

    /// GET of a collection.
    pub async fn list(&self, msg: ListObjects) -> Result<ObjectList, ApiError> {
        self.metered(self.list_inner(msg)).await
    }

    async fn list_inner(&self, msg: ListObjects) -> Result<ObjectList, ApiError> {
        let options = &msg.options;
        let exact = matches!(options.read_at, ReadAt::Exact(_));
        // Pages must be consistent at one revision, which only storage history keeps.
        let paged = options.continue_token.is_some() || (options.limit > 0 && options.read_at != ReadAt::Any) || exact;
        let source = if paged { Source::Storage } else { self.fresh(options.read_at, true).await? };
        let (labels, fields) = (&options.selection.labels, &options.selection.fields);
        match source {
            Source::Cache(snapshot) => Ok(self.list_snapshot(&snapshot, &msg.target, labels, fields)),
            Source::Storage => {
                self.shared.storage_reads.increment(1);
                let prefix = self.namespace_range(&msg.target.namespace);
                continuation::list_from_storage(&self.def, self.storage.clone(), &prefix, options).await
            }
        }
    }

    fn list_snapshot(
        &self,
        snapshot: &Snapshot,
        target: &Target,
        labels: &LabelSelector,
        fields: &FieldSelector,
    ) -> ObjectList {
        let start = self.namespace_range(&target.namespace);
        let items = crate::index::scan(&snapshot.objects, snapshot.index.as_ref(), &start, fields)
            .filter(|e| e.matches(labels, fields))
            .map(|e| e.object.clone())
            .collect();
        ObjectList {
            items,
            resource_version: snapshot.revision.to_string(),
            continue_token: None,
            remaining_item_count: None,
        }
    }

    pub(crate) fn key(&self, target: &Target) -> String {
        if self.def.namespaced {
            format!("{}{}/{}", self.prefix, target.namespace, target.name)
        } else {
            format!("{}{}", self.prefix, target.name)
        }
    }

    pub(crate) fn namespace_range(&self, namespace: &str) -> String {
        if self.def.namespaced && !namespace.is_empty() {
            format!("{}{namespace}/", self.prefix)
        } else {
            self.prefix.clone()
        }
    }

    /// The snapshot a read may be answered from: at once for `resourceVersion=0`; once the cache
    /// reaches an explicit revision (504 after the deadline, as kube); once it reaches the
    /// storage's current revision for a consistent read. A consistent read that
    /// `may_read_storage` goes to storage instead of waiting when the backend's progress
    /// notifications are slow (etcd batches them about every 100 ms), as kube 1.30 serves
    /// consistent reads from etcd.
    pub(crate) async fn fresh(&self, read_at: ReadAt, may_read_storage: bool) -> Result<Source, ApiError> {
        let explicit = match read_at {
            ReadAt::Latest => None,
            ReadAt::Any => Some(0),
            ReadAt::NotOlderThan(n) | ReadAt::Exact(n) => Some(n),
        };
        let now = self.snapshots.borrow().clone();
        if now.ready && explicit.is_some_and(|n| now.revision >= n) {
            return Ok(Source::Cache(now));
        }
        let target = match explicit {
            Some(n) => n,
            None => self.storage.current_revision().await.map_err(|e| interpret(&self.def, "", e))?,
        };
        let now = self.snapshots.borrow().clone();
        if now.ready && now.revision >= target {
            return Ok(Source::Cache(now));
        }
        if explicit.is_none() && may_read_storage && !self.storage.prompt_progress() {
            // Catch up in the background so later reads find the cache fresh.
            if now.ready {
                self.shared.request_progress(&now);
            }
            return Ok(Source::Storage);
        }
        self.wait_for(target).await.map(Source::Cache)
    }

    /// Waits until the cache reflects `target`, asking storage for progress notifications
    /// while it is behind.
    async fn wait_for(&self, target: Revision) -> Result<Arc<Snapshot>, ApiError> {
        let deadline = tokio::time::Instant::from_std(Instant::now() + self.wait_for_revision);
        let mut rx = self.snapshots.clone();
        loop {
            let snapshot = rx.borrow_and_update().clone();
            if snapshot.ready && snapshot.revision >= target {
                return Ok(snapshot);
            }
            if snapshot.ready {
                self.shared.request_progress(&snapshot);
            }
            match tokio::time::timeout_at(deadline, rx.changed()).await {
                Ok(Ok(())) => continue,
                Ok(Err(_)) => return Err(ApiError::unavailable(format!("the {} cache stopped", self.def.resource))),
                Err(_) => return Err(ApiError::too_large_resource_version(target, snapshot.revision)),
            }
        }
    }
}
