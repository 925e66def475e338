//! The single writer thread and its group commit.
//!
//! Callers queue a [`WriteRequest`] and await its reply. The writer takes whatever is queued (up
//! to a batch limit), checks each request's precondition in order against the committed index
//! plus the batch's earlier writes, appends the batch's records, syncs once, and only then
//! applies the batch to the index, publishes its events and replies. Readers and watchers
//! therefore never see a write that a crash could take back.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::sync::{OwnedSemaphorePermit, oneshot};

use super::Shared;
use super::log::{self, LogWriter, Record};
use super::state::Change;
use crate::metrics::STORAGE_EMBEDDED_BATCH_SIZE;
use crate::{Expect, KeyValue, Revision, StorageError};

/// Bytes of values past which a batch stops taking requests, bounding the frame buffer (a
/// batch of a thousand 1.5 MiB values would otherwise be 1.5 GiB).
const MAX_BATCH_BYTES: usize = 16 << 20;

/// A write to perform.
pub(super) enum WriteOp {
    /// A put or delete, batched with others.
    Mutate(Mutation),
    /// Compact at `revision` and rewrite the log as a snapshot; a barrier between batches.
    Compact {
        /// The new compacted revision.
        revision: Revision,
    },
    /// Commit what was queued before, close the log and end the thread: the store is closing.
    Close,
}

/// A put or delete.
pub(super) enum Mutation {
    /// Put `value` at `key` if `expect` holds.
    Put {
        /// The key.
        key: String,
        /// The value.
        value: Bytes,
        /// The precondition.
        expect: Expect,
        /// When the key expires (Unix milliseconds), for a put with a TTL.
        expires: Option<u64>,
    },
    /// Delete `key` if its mod revision is `expect` (or unconditionally).
    Delete {
        /// The key.
        key: String,
        /// The expected mod revision.
        expect: Option<Revision>,
    },
}

impl WriteOp {
    /// Roughly the bytes it adds to a batch.
    fn size(&self) -> usize {
        match self {
            WriteOp::Mutate(Mutation::Put { key, value, .. }) => key.len() + value.len(),
            WriteOp::Mutate(Mutation::Delete { key, .. }) => key.len(),
            WriteOp::Compact { .. } | WriteOp::Close => 0,
        }
    }
}

impl Mutation {
    /// The key written.
    fn key(&self) -> &str {
        match self {
            Mutation::Put { key, .. } | Mutation::Delete { key, .. } => key,
        }
    }
}

/// What a successful write returns.
pub(super) enum WriteOutcome {
    /// The stored key.
    Put(KeyValue),
    /// The deleted key as it was, and the deletion's revision.
    Delete(KeyValue, Revision),
    /// Compaction done.
    Compacted,
    /// Every write queued before the close is durable and the log is closed.
    Closed,
}

/// The reply channel of one request. A oneshot: exactly one answer, and the async caller awaits
/// it without blocking a runtime thread while the writer (a plain thread) sends without waiting.
pub(super) type Reply = oneshot::Sender<Result<WriteOutcome, StorageError>>;

/// One queued write.
pub(super) struct WriteRequest {
    /// What to do.
    pub op: WriteOp,
    /// Where the answer goes.
    pub reply: Reply,
    /// The caller's queue slot; dropped when the writer dequeues the request, which lets the
    /// next waiting caller in. The close request has none: the channel keeps a place for it.
    pub slot: Option<OwnedSemaphorePermit>,
}

/// The writer's own state: only this thread touches it.
pub(super) struct Writer {
    /// The index and watchers, shared with readers.
    pub shared: Arc<Shared>,
    /// The log being appended to; `None` for a store kept in memory only.
    pub log: Option<LogWriter>,
    /// Set after a failed append or sync: no write is accepted until the store is reopened,
    /// because after a failed fsync what is on disk is unknown.
    pub failed: Option<String>,
    /// Most requests per batch.
    pub max_batch: usize,
    /// How long a batch smaller than the previous one waits for the rest of its callers.
    pub linger: Duration,
    /// History kept in memory before the store compacts itself (0: unbounded).
    pub max_history: u64,
    /// Failpoints consulted before each fsync (tests only).
    pub faults: Option<Arc<crate::faults::Faults>>,
}

impl Writer {
    /// Serves requests until every sender is gone (the store was dropped) or a close request
    /// comes.
    pub fn run(mut self, requests: crossbeam_channel::Receiver<WriteRequest>) {
        let mut batch = Vec::with_capacity(self.max_batch);
        let mut frames = Vec::with_capacity(1 << 16);
        // Callers answered by the previous batch: they tend to come back with their next write
        // together, but a few microseconds apart. Committing as soon as the first returns would
        // split them into a tiny batch and a large one, paying two fsyncs per round; waiting
        // `linger` at most for them keeps one fsync per round. A single caller never waits.
        let mut expected = 1;
        while let Some(first) = self.next_request(&requests, &mut frames) {
            let mut bytes = first.op.size();
            batch.push(first);
            let full =
                |batch: &Vec<WriteRequest>, bytes: usize| batch.len() >= self.max_batch || bytes >= MAX_BATCH_BYTES;
            while !full(&batch, bytes) {
                match requests.try_recv() {
                    Ok(request) => {
                        bytes += request.op.size();
                        batch.push(request);
                    }
                    Err(_) => break,
                }
            }
            if batch.len() < expected && !self.linger.is_zero() {
                let deadline = Instant::now() + self.linger;
                while batch.len() < expected && !full(&batch, bytes) {
                    match requests.recv_deadline(deadline) {
                        Ok(request) => {
                            bytes += request.op.size();
                            batch.push(request);
                        }
                        Err(_) => break,
                    }
                }
            }
            expected = batch.len();
            metrics::histogram!(STORAGE_EMBEDDED_BATCH_SIZE).record(batch.len() as f64);
            // A compaction is a barrier: the writes before it commit first.
            let mut writes = Vec::with_capacity(batch.len());
            let mut closed = None;
            for request in batch.drain(..) {
                drop(request.slot);
                match (request.op, &closed) {
                    // Queued after the close: never written.
                    (_, Some(_)) => {
                        let _ = request.reply.send(Err(self.unavailable("the store is closed".into())));
                    }
                    (WriteOp::Compact { revision }, None) => {
                        self.commit(std::mem::take(&mut writes), &mut frames);
                        let result = self.compact(revision);
                        let _ = request.reply.send(result.map(|()| WriteOutcome::Compacted));
                    }
                    (WriteOp::Close, None) => closed = Some(request.reply),
                    (WriteOp::Mutate(m), None) => writes.push((m, request.reply)),
                }
            }
            self.commit(writes, &mut frames);
            if let Some(reply) = closed {
                // Every write before the close is synced; dropping the log closes the file.
                self.log = None;
                let _ = reply.send(Ok(WriteOutcome::Closed));
                for request in requests.try_iter() {
                    let _ = request.reply.send(Err(self.unavailable("the store is closed".into())));
                }
                return;
            }
            if let Some(revision) = self.history_overflow() {
                match self.compact(revision) {
                    Ok(()) => tracing::info!(revision, "history bound reached: compacted"),
                    Err(e) => tracing::warn!("compaction on reaching the history bound failed: {e}"),
                }
            }
            if frames.capacity() > 16 << 20 {
                frames = Vec::with_capacity(1 << 16); // don't keep a huge batch's buffer forever
            }
        }
    }

    /// Waits for the next request, deleting the keys whose TTL passes meanwhile, as etcd
    /// deletes the keys of an expired lease: each at a revision of its own, with its event.
    /// `None` once every sender is gone.
    fn next_request(
        &mut self,
        requests: &crossbeam_channel::Receiver<WriteRequest>,
        frames: &mut Vec<u8>,
    ) -> Option<WriteRequest> {
        loop {
            let next = self.shared.read_state().next_expiry();
            let (Some(due), None) = (next, &self.failed) else { return requests.recv().ok() };
            let now = unix_millis();
            if due > now {
                match requests.recv_timeout(Duration::from_millis(due - now)) {
                    Ok(request) => return Some(request),
                    Err(crossbeam_channel::RecvTimeoutError::Disconnected) => return None,
                    Err(crossbeam_channel::RecvTimeoutError::Timeout) => {}
                }
            }
            let expired = self.shared.read_state().expired(unix_millis(), self.max_batch);
            // Nobody waits for these answers: the receivers are dropped at once.
            let deletes = expired
                .into_iter()
                .map(|(key, revision)| (Mutation::Delete { key, expect: Some(revision) }, oneshot::channel().0))
                .collect();
            self.commit(deletes, frames);
            // One batch of expiries per round: writes waiting meanwhile go first.
            if let Ok(request) = requests.try_recv() {
                return Some(request);
            }
        }
    }

    /// The revision to compact at when more than `max_history` revisions are kept: the newer
    /// half stays.
    fn history_overflow(&self) -> Option<Revision> {
        if self.max_history == 0 || self.failed.is_some() {
            return None;
        }
        let state = self.shared.read_state();
        (state.revision - state.compacted > self.max_history).then(|| state.revision - self.max_history / 2)
    }

    /// The error every request gets once the log has failed.
    fn unavailable(&self, message: String) -> StorageError {
        StorageError::Unavailable { backend: self.shared.backend.clone(), message }
    }

    /// Commits one batch of puts and deletes.
    fn commit(&mut self, writes: Vec<(Mutation, Reply)>, frames: &mut Vec<u8>) {
        if writes.is_empty() {
            return;
        }
        if let Some(message) = &self.failed {
            let err = self.unavailable(message.clone());
            for (_, reply) in writes {
                let _ = reply.send(Err(err.clone()));
            }
            return;
        }
        frames.clear();
        let mut replies = Vec::with_capacity(writes.len());
        let mut changes = Vec::with_capacity(writes.len());
        {
            let state = self.shared.read_state();
            // The batch's own writes so far, which later requests in it must see.
            let mut overlay: HashMap<String, Option<KeyValue>> = HashMap::new();
            let mut revision = state.revision;
            for (mutation, reply) in writes {
                let current = match overlay.get(mutation.key()) {
                    Some(kv) => kv.clone(),
                    None => state.latest(mutation.key()),
                };
                let result = plan(mutation, current, revision + 1).map(|(change, outcome)| {
                    revision = change.revision;
                    let record = match &change.value {
                        Some(value) => Record::Put {
                            revision,
                            key: change.key.clone(),
                            create_revision: change.create_revision,
                            value: value.clone(),
                            expires: change.expires,
                        },
                        None => Record::Delete { revision, key: change.key.clone() },
                    };
                    log::encode_into(frames, &record);
                    let after = match &outcome {
                        WriteOutcome::Put(kv) => Some(kv.clone()),
                        _ => None,
                    };
                    overlay.insert(change.key.clone(), after);
                    changes.push(change);
                    outcome
                });
                replies.push((reply, result));
            }
        }

        if !changes.is_empty() {
            if let Some(log) = &mut self.log
                && let Err(e) = log.append(frames, self.faults.as_deref())
            {
                let message = format!("writing {}: {e}", log.path().display());
                tracing::error!(%message, "embedded store stops accepting writes");
                self.failed = Some(message.clone());
                // Even precondition failures were judged against writes that are now lost.
                let err = self.unavailable(message);
                for (reply, _) in replies {
                    let _ = reply.send(Err(err.clone()));
                }
                return;
            }
            let mut state = self.shared.write_state();
            let before = state.revision;
            for change in changes {
                state.apply(change);
            }
            // Still under the write lock: a watch registering now either replays these events
            // or is registered before they are published, never both, never neither.
            self.shared.lock_watchers().publish(state.events_after(before), &self.shared.backend);
            drop(state);
            self.shared.record_size(self.log_len());
        }
        for (reply, result) in replies {
            let _ = reply.send(result);
        }
    }

    /// Compacts at `revision`: writes a snapshot of the live state there plus the history after
    /// it, makes it the log, then forgets the history in memory.
    fn compact(&mut self, revision: Revision) -> Result<(), StorageError> {
        if let Some(message) = &self.failed {
            return Err(self.unavailable(message.clone()));
        }
        {
            let state = self.shared.read_state();
            if revision <= state.compacted {
                return Err(StorageError::Compacted { requested: revision, compacted: state.compacted });
            }
            if revision > state.revision {
                return Err(StorageError::FutureRevision { requested: revision, current: state.revision });
            }
        }
        if self.log.is_some() {
            self.rewrite_log(revision)?;
        }
        self.shared.write_state().compact(revision);
        self.shared.record_size(self.log_len());
        Ok(())
    }

    /// Writes a snapshot of the live state at `revision` plus the history after it, and makes
    /// it the log.
    fn rewrite_log(&mut self, revision: Revision) -> Result<(), StorageError> {
        let dir = self.shared.dir.clone();
        // The writer is the only mutator, so a read lock is enough for a stable view and lets
        // reads go on while the snapshot is written.
        let state = self.shared.read_state();
        let restores = state.live_at(revision).map(|(key, v)| Record::Restore {
            key: key.clone(),
            create_revision: v.create_revision,
            mod_revision: v.mod_revision,
            value: v.value.clone().unwrap_or_default(),
            expires: state.expiry_of_version(key, v.mod_revision),
        });
        let history = state.events_after(revision).map(|e| match e.kind {
            crate::EventType::Deleted => Record::Delete { revision: e.kv.mod_revision, key: e.kv.key.clone() },
            _ => Record::Put {
                revision: e.kv.mod_revision,
                key: e.kv.key.clone(),
                create_revision: e.kv.create_revision,
                value: e.kv.value.clone(),
                expires: state.expiry_of_version(&e.kv.key, e.kv.mod_revision),
            },
        });
        let records = std::iter::once(Record::header(revision, revision)).chain(restores).chain(history);
        let len = log::write_snapshot(&dir, records)
            .map_err(|e| self.unavailable(format!("writing snapshot {}: {e}", dir.join(log::LOG_FILE).display())))?;
        drop(state);
        // The rename is done: the new file is the log from now on.
        match LogWriter::open(&dir.join(log::LOG_FILE), len) {
            Ok(writer) => {
                self.log = Some(writer);
                Ok(())
            }
            Err(e) => {
                let message = format!("reopening {} after compaction: {e}", dir.join(log::LOG_FILE).display());
                self.failed = Some(message.clone());
                Err(self.unavailable(message))
            }
        }
    }

    fn log_len(&self) -> u64 {
        self.log.as_ref().map_or(0, LogWriter::len)
    }
}

/// Checks a put or delete against the key's `current` state and plans it at `revision`.
fn plan(op: Mutation, current: Option<KeyValue>, revision: Revision) -> Result<(Change, WriteOutcome), StorageError> {
    match op {
        Mutation::Put { key, value, expect, expires } => {
            match (expect, &current) {
                (Expect::Absent, Some(_)) => return Err(StorageError::AlreadyExists { key }),
                (Expect::ModRevision(_) | Expect::Exists, None) => return Err(StorageError::NotFound { key }),
                (Expect::ModRevision(want), Some(cur)) if cur.mod_revision != want => {
                    return Err(StorageError::Conflict { key, current: current.map(Box::new) });
                }
                _ => {}
            }
            let create_revision = current.map_or(revision, |c| c.create_revision);
            let kv = KeyValue {
                key: key.clone(),
                value: value.clone(),
                create_revision,
                mod_revision: revision,
                stale: false,
            };
            Ok((Change { key, revision, create_revision, value: Some(value), expires }, WriteOutcome::Put(kv)))
        }
        Mutation::Delete { key, expect } => {
            let Some(cur) = current else { return Err(StorageError::NotFound { key }) };
            if let Some(want) = expect
                && cur.mod_revision != want
            {
                return Err(StorageError::Conflict { key, current: Some(Box::new(cur)) });
            }
            let create_revision = cur.create_revision;
            let change = Change { key, revision, create_revision, value: None, expires: None };
            Ok((change, WriteOutcome::Delete(cur, revision)))
        }
    }
}

/// Now as Unix milliseconds, the clock TTL expiries are kept in (it survives a restart, as a
/// monotonic clock does not).
pub(super) fn unix_millis() -> u64 {
    let since = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
}
