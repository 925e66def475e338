//! The storage contract and its backends.
//!
//! [`Storage`] is etcd's shape, cut to what the API machinery needs (the role of
//! `k8s.io/apiserver`'s `storage.Interface`, kept small like etcd's `client/v3/kubernetes`
//! interface): one global revision that every write advances by one, keys with create and mod
//! revisions, history kept until compaction, optimistic writes guarded by an expected mod
//! revision, and watches from a revision. Reading or watching at a compacted revision fails with
//! [`StorageError::Compacted`], which the API maps to 410.
//!
//! # Layout
//! - [`embedded`]: the default backend, a write-ahead log with group commit on local disk and
//!   an in-memory multi-version index.
//! - [`etcd`]: the etcd v3 backend (`--etcd-servers`), and a real etcd for tests.
//! - [`conformance`]: the one suite every backend must pass.
//! - [`compactor`]: compaction in turns through `compact_rev_key`, shared with kube-apiservers.
//! - [`encryption`]: encryption at rest (`--encryption-provider-config`), a decorator over any
//!   backend, byte-compatible with kube-apiserver's providers.
//! - [`router`]: which backend stores which resource (`--etcd-servers-overrides`).
//! - [`faults`]: injected write delays, for testing the stages above (off by default).
//! - [`metered`]: kube's `etcd_request_*` metrics for every backend, and its oldest unanswered
//!   request.
//!
//! It knows no Kubernetes model: values are bytes. How objects become bytes, and how a
//! storage error reads as a Status, is the `storage-codec` crate above it; a resource is named
//! here only by its API group, its plural and its key prefix ([`ResourceKeys`]), for the flags
//! that configure storage per resource.
//!
//! The storage *stage*, kube's generic registry (object metadata, preconditions, finalizers),
//! is the `registry` crate, on top of this contract; the read path is the `cacher` crate.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;

pub mod compactor;
#[cfg(any(test, feature = "test-util"))]
pub mod conformance;
pub mod embedded;
pub mod encryption;
pub mod etcd;
pub mod faults;
pub mod metered;
pub mod metrics;
pub mod router;

/// A revision of the whole store (etcd's `header.revision`); `resourceVersion` on the wire.
pub type Revision = u64;

/// Where one resource's objects are stored, for the flags that name resources
/// (`--encryption-provider-config`, `--etcd-servers-overrides`): the layers above know the
/// resources, storage knows keys.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResourceKeys {
    /// API group (`""` for core).
    pub group: String,
    /// Plural resource, e.g. `deployments`.
    pub resource: String,
    /// The prefix of every key of the resource, ending with `/`, e.g. `/registry/deployments/`.
    pub prefix: String,
}

/// One stored key at one revision.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyValue {
    /// The full key, e.g. `/registry/configmaps/default/a`.
    pub key: String,
    /// The stored bytes.
    pub value: Bytes,
    /// Revision of the write that created the key (since it last did not exist).
    pub create_revision: Revision,
    /// Revision of the last write to the key.
    pub mod_revision: Revision,
    /// The value was read through a transformation other than the one writes use (e.g. an old
    /// encryption key): an update rewrites it even when the object is unchanged, which is how
    /// keys are rotated.
    pub stale: bool,
}

/// What a write expects of the key's current state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Expect {
    /// The key must not exist (create).
    Absent,
    /// The key must exist with this mod revision (guaranteed update).
    ModRevision(Revision),
    /// The key must exist, any revision.
    Exists,
}

/// Options of a range read.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListOptions {
    /// Read at this revision; `None` reads at the current revision.
    pub revision: Option<Revision>,
    /// Start at this key (inclusive) instead of the prefix's first key; used for paging.
    pub start: Option<String>,
    /// At most this many items; 0 means all.
    pub limit: usize,
}

/// The answer to a range read.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListResult {
    /// Items in key order.
    pub items: Vec<KeyValue>,
    /// The revision the read was served at.
    pub revision: Revision,
    /// Whether more items follow the last one returned.
    pub more: bool,
    /// How many items follow the last one returned.
    pub remaining: u64,
}

/// What happened to a key, as a watch reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum EventType {
    /// The key was created.
    Added,
    /// The key was overwritten.
    Modified,
    /// The key was deleted.
    Deleted,
}

/// One change, in global revision order.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Event {
    /// What happened.
    pub kind: EventType,
    /// The key. For `Deleted`, `value` is the last value before deletion and `mod_revision` is
    /// the deletion's revision.
    pub kv: KeyValue,
    /// The value before this change, if the key existed.
    pub prev: Option<KeyValue>,
}

/// What a watch stream carries.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum WatchItem {
    /// A change under the watched prefix.
    Event(Event),
    /// Every change under the prefix up to this revision has been delivered (etcd's progress
    /// notification).
    Progress(Revision),
    /// The watch ended with an error (e.g. the watcher fell behind); re-list and watch again.
    Error(StorageError),
}

/// Asks a backend to send a [`WatchItem::Progress`] on one watch.
pub trait ProgressRequester: Send + Sync {
    /// Queues a progress notification after every event already committed.
    fn request_progress(&self);
}

/// A live watch: items in revision order, ending when the receiver closes.
pub struct WatchStream {
    /// The items.
    pub items: mpsc::Receiver<WatchItem>,
    /// Requests progress notifications on this watch.
    pub progress: Arc<dyn ProgressRequester>,
}

/// Errors of the storage layer. Each names what failed; the registry maps them to Status per
/// verb (`configmaps "a" not found`, 409, 410, 5xx naming the backend).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error, Serialize, Deserialize)]
pub enum StorageError {
    /// No such key.
    #[error("key not found: {key}")]
    NotFound {
        /// The key.
        key: String,
    },
    /// A create found the key present.
    #[error("key exists: {key}")]
    AlreadyExists {
        /// The key.
        key: String,
    },
    /// A guarded write found another mod revision.
    #[error("revision conflict on {key}")]
    Conflict {
        /// The key.
        key: String,
        /// The key's current state, so a guaranteed update can retry without re-reading.
        current: Option<Box<KeyValue>>,
    },
    /// The revision asked for has been compacted.
    #[error("required revision {requested} has been compacted (compacted revision {compacted})")]
    Compacted {
        /// The revision asked for.
        requested: Revision,
        /// The store's compacted revision.
        compacted: Revision,
    },
    /// The revision asked for is in the future.
    #[error("required revision {requested} is a future revision (current revision {current})")]
    FutureRevision {
        /// The revision asked for.
        requested: Revision,
        /// The store's current revision.
        current: Revision,
    },
    /// A value over the backend's size limit.
    #[error("value of {size} bytes for {key} exceeds the storage limit of {limit} bytes")]
    TooLarge {
        /// The key.
        key: String,
        /// The value's size.
        size: usize,
        /// The limit.
        limit: usize,
    },
    /// The backend cannot serve: disk error, unreachable etcd, a watcher too slow to keep.
    #[error("storage backend {backend} is unavailable: {message}")]
    Unavailable {
        /// Which backend and endpoint, e.g. `embedded (./data)` or `etcd3 (http://127.0.0.1:2379)`.
        backend: String,
        /// What went wrong.
        message: String,
    },
    /// A backend in another process (a storage stage process's feed) cannot be reached: the
    /// API answers 503 naming the stage, as for any stage that is down.
    #[error("the {stage} stage is unreachable: {message}")]
    StageUnreachable {
        /// The stage, e.g. `storage@events`.
        stage: String,
        /// What the transport reported.
        message: String,
    },
    /// Stored bytes could not be decoded.
    #[error("stored object at {key} is corrupt: {message}")]
    Corrupt {
        /// The key.
        key: String,
        /// The decoding error.
        message: String,
    },
}

/// The storage contract. Every backend implements it and passes [`conformance`].
#[async_trait]
pub trait Storage: Send + Sync + 'static {
    /// Names the backend and where it keeps data, for errors and `/readyz`.
    fn describe(&self) -> String;

    /// The current revision.
    async fn current_revision(&self) -> Result<Revision, StorageError>;

    /// Reads one key at the current revision, with the revision it was read at.
    async fn get(&self, key: &str) -> Result<(Option<KeyValue>, Revision), StorageError>;

    /// Reads the keys under `prefix` in key order.
    async fn list(&self, prefix: &str, opts: ListOptions) -> Result<ListResult, StorageError>;

    /// Counts the keys under `prefix` at the current revision.
    async fn count(&self, prefix: &str) -> Result<u64, StorageError>;

    /// Writes `value` at `key` if the key's state matches `expect`; returns the stored key.
    async fn put(&self, key: &str, value: Bytes, expect: Expect) -> Result<KeyValue, StorageError>;

    /// Writes like [`put`](Self::put), and deletes the key once `ttl` has passed without another
    /// write to it, as etcd deletes the keys of an expired lease: a `Deleted` event at a
    /// revision of its own. A later `put` keeps the key for good. Events expire this way after
    /// `--event-ttl`. A key may outlive its TTL by a little (etcd leases are shared by the keys
    /// written close together), never the other way round.
    async fn put_with_ttl(
        &self,
        key: &str,
        value: Bytes,
        expect: Expect,
        ttl: Duration,
    ) -> Result<KeyValue, StorageError>;

    /// Deletes `key` if its mod revision matches `expect` (any, if `None`); returns the deleted
    /// key as it was and the deletion's revision.
    async fn delete(&self, key: &str, expect: Option<Revision>) -> Result<(KeyValue, Revision), StorageError>;

    /// Watches `prefix` for changes after revision `after` (0: from now). Fails with
    /// `Compacted` if history after `after` is gone.
    async fn watch(&self, prefix: &str, after: Revision) -> Result<WatchStream, StorageError>;

    /// Forgets history before `revision`, as etcd's compaction does: reads at a revision below
    /// it, and watches needing an event below it, fail with `Compacted` afterwards.
    async fn compact(&self, revision: Revision) -> Result<(), StorageError>;

    /// The revision of the last compaction (0 if never compacted): the oldest readable revision.
    async fn compacted_revision(&self) -> Result<Revision, StorageError>;

    /// Stops taking writes and returns once every write accepted before is durable, so a
    /// process exiting after it leaves no write half done. Later writes fail with
    /// `Unavailable`. A backend that answers a write only once it is durable elsewhere (etcd)
    /// has nothing to wait for.
    async fn close(&self) -> Result<(), StorageError> {
        Ok(())
    }

    /// Whether a requested progress notification arrives at once. When it does, a cache that
    /// is behind catches up faster than storage could answer a read; when it does not (etcd
    /// batches them), consistent reads go to storage instead of waiting.
    fn prompt_progress(&self) -> bool {
        false
    }
}
