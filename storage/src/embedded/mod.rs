//! The embedded backend: etcd's MVCC semantics over a write-ahead log on local disk.
//!
//! # Design
//! - **Index** (`state`): every key's versions since the compacted revision in a `BTreeMap`
//!   (a prefix is a range), plus an event log with one event per revision that watches replay
//!   from by index. Values are `Bytes` shared by the index, events and readers: no write copies
//!   the state.
//! - **Log** (`log`): frames `[u32 length][u32 crc32][rmp-serde payload]`. Open replays it and
//!   truncates a torn tail at the last good frame; damage with a good record after it is not a
//!   torn write, and open refuses it rather than drop acknowledged writes. Compaction rewrites
//!   it as a snapshot (live keys at the compacted revision, then the history after it)
//!   through a temp file, fsync, rename and directory fsync, so disk space is reclaimed and
//!   the compacted revision is durable.
//! - **Writes** (`writer`): one writer thread. Callers queue a request with a oneshot reply on
//!   a bounded channel; the writer takes everything queued (group commit), checks preconditions
//!   in order against the committed index plus the batch's earlier writes, appends the batch,
//!   syncs once, then applies it to the index, publishes events and replies. Nothing unsynced is
//!   ever visible, and a crash loses only unacknowledged writes.
//! - **Watches** (`watch`): replay and registration happen under the index's read lock, and
//!   the writer publishes under its write lock, so no event is lost or repeated between replay
//!   and live delivery. Every watch channel is bounded; a full one ends the watch with an error.
//!
//! Revisions follow etcd: an empty store is at revision 1, each put or delete advances it by
//! one, reads below the compacted revision fail with `Compacted` and above the current one with
//! `FutureRevision`.

mod log;
mod state;
mod watch;
mod writer;

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use tokio::sync::{Semaphore, oneshot};

pub use self::log::LOG_FILE;
use self::log::{LogWriter, Record};
use self::state::{Change, State, Version};
use self::watch::Watchers;
use self::writer::{Mutation, WriteOp, WriteOutcome, WriteRequest, Writer};
use crate::metrics::STORAGE_DB_TOTAL_SIZE_IN_BYTES;
use crate::{Expect, KeyValue, ListOptions, ListResult, Revision, Storage, StorageError, WatchStream};

/// The largest `max_value_size` honoured (1 GiB): a record, key and framing included, must fit a
/// frame's `u32` length.
pub const MAX_VALUE_SIZE_CEILING: usize = 1 << 30;

/// How an [`EmbeddedStore`] is tuned.
#[derive(Clone, Debug)]
pub struct EmbeddedOptions {
    /// Largest value accepted, in bytes; larger puts fail with `TooLarge`. Defaults to etcd's
    /// `--max-request-bytes` (1.5 MiB), so objects that fit here fit in etcd too. At most
    /// [`MAX_VALUE_SIZE_CEILING`], since a log frame's length is a `u32`.
    pub max_value_size: usize,
    /// Items a watch may have waiting unread before it is cut off as fallen behind.
    pub watch_capacity: usize,
    /// Writes that may wait for the writer thread; more wait for a slot (up to
    /// `write_queue_timeout`) instead of queueing without bound.
    pub write_queue_capacity: usize,
    /// Most writes committed by one fsync.
    pub max_batch: usize,
    /// How long a write waits for a queue slot before failing with `Unavailable`.
    pub write_queue_timeout: Duration,
    /// Group commit: how long a batch smaller than the previous one waits for the previous
    /// batch's callers to send their next write, so that concurrent writers share one fsync
    /// per round instead of splitting into a small and a large batch. Zero commits at once.
    pub group_commit_linger: Duration,
    /// Most revisions of history kept in memory: past it the store compacts itself, keeping
    /// the newer half, so a write burst between two scheduled compactions cannot grow memory
    /// without bound. Reads and watches older than that answer `Compacted` (410), as after any
    /// compaction. Zero disables the bound.
    pub max_history: u64,
    /// Failpoints (a slow or failing fsync) for tests; `None` in normal operation.
    pub faults: Option<Arc<crate::faults::Faults>>,
}

impl Default for EmbeddedOptions {
    fn default() -> Self {
        EmbeddedOptions {
            max_value_size: 1_572_864,
            watch_capacity: 1024,
            write_queue_capacity: 4096,
            max_batch: 1024,
            write_queue_timeout: Duration::from_secs(10),
            group_commit_linger: Duration::from_micros(500),
            max_history: 500_000,
            faults: None,
        }
    }
}

/// What readers, watchers and the writer thread share.
pub(crate) struct Shared {
    /// The index. An `RwLock`: any number of reads run at once, and the one writer takes it
    /// exclusively only to apply a batch that is already durable, which takes microseconds.
    state: RwLock<State>,
    /// The synced watches. A `Mutex`, always taken after `state`: the writer publishes while
    /// holding the write lock and a registering watch joins while holding a read lock, which is
    /// what makes replay plus live delivery gapless.
    watchers: Mutex<Watchers>,
    /// `embedded (<dir>)`, for errors.
    backend: String,
    /// The store's directory.
    dir: PathBuf,
    /// Advertised capacity of each watch channel.
    watch_capacity: usize,
}

impl Shared {
    /// A read lock of the index. A panic elsewhere cannot leave the index half-updated (apply
    /// does not panic mid-way), so a poisoned lock is still safe to use.
    fn read_state(&self) -> RwLockReadGuard<'_, State> {
        self.state.read().unwrap_or_else(PoisonError::into_inner)
    }

    /// The write lock of the index; only the writer thread takes it.
    fn write_state(&self) -> RwLockWriteGuard<'_, State> {
        self.state.write().unwrap_or_else(PoisonError::into_inner)
    }

    /// The watchers lock; take it after `state`, never before.
    fn lock_watchers(&self) -> MutexGuard<'_, Watchers> {
        self.watchers.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Reports the log's size.
    fn record_size(&self, bytes: u64) {
        metrics::gauge!(STORAGE_DB_TOTAL_SIZE_IN_BYTES, "endpoint" => self.dir.display().to_string()).set(bytes as f64);
    }

    /// The error for a backend that cannot serve, e.g. a disk error naming its file.
    fn unavailable(&self, message: String) -> StorageError {
        StorageError::Unavailable { backend: self.backend.clone(), message }
    }
}

/// The embedded store. Open it with [`EmbeddedStore::open`]; dropping the last handle stops the
/// writer thread after the writes already queued.
pub struct EmbeddedStore {
    /// The index and watchers, shared with the writer thread.
    shared: Arc<Shared>,
    /// The options it was opened with.
    options: EmbeddedOptions,
    /// Requests to the writer thread. A bounded crossbeam channel because the writer is a plain
    /// thread blocking on it, with one place more than `slots` for the close request; `None`
    /// once dropping, which closes it and ends the thread.
    requests: Option<crossbeam_channel::Sender<WriteRequest>>,
    /// Set by the first [`EmbeddedStore::close`], so the close request is sent once and always
    /// finds its place in `requests`.
    closing: AtomicBool,
    /// One permit per slot of `requests`. A tokio semaphore so a caller waits for room without
    /// blocking a runtime thread (and with a deadline); holding a permit guarantees the channel
    /// has room.
    slots: Arc<Semaphore>,
    /// The writer thread, joined on drop so the log is closed when the store is gone.
    writer: Option<std::thread::JoinHandle<()>>,
    /// Source of watch ids.
    next_watch_id: AtomicU64,
}

impl EmbeddedStore {
    /// Opens (or creates) the store in `dir`: replays its log, truncating a torn tail, and
    /// starts the writer thread.
    pub fn open(dir: &Path, mut options: EmbeddedOptions) -> Result<Arc<EmbeddedStore>, StorageError> {
        options.max_value_size = options.max_value_size.min(MAX_VALUE_SIZE_CEILING);
        let backend = format!("embedded ({})", dir.display());
        let fail = |message: String| StorageError::Unavailable { backend: backend.clone(), message };
        let path = dir.join(LOG_FILE);
        fs::create_dir_all(dir).map_err(|e| fail(format!("creating {}: {e}", dir.display())))?;
        log::remove_stale_tmp(dir).map_err(|e| fail(format!("removing a stale snapshot in {}: {e}", dir.display())))?;
        if !path.exists() {
            log::write_snapshot(dir, std::iter::once(Record::header(0, 1)))
                .map_err(|e| fail(format!("creating {}: {e}", path.display())))?;
        }

        let mut replayed: Option<State> = None;
        let mut restoring = true;
        let end = log::replay(&path, |record| replay_record(&mut replayed, &mut restoring, record))
            .map_err(|e| fail(format!("reading {}: {e}", path.display())))?;
        if let Some(damage) = &end.damage {
            tracing::warn!(
                path = %path.display(),
                good_len = end.good_len,
                file_len = end.file_len,
                ?damage,
                "truncating the torn tail of the log (nothing good follows it: writes there were never acknowledged)"
            );
        }
        // The log begins with a snapshot written whole and fsynced before it was renamed into
        // place, so an unreadable beginning is damage, never a torn write: starting empty would
        // lose everything the store held.
        let Some(state) = replayed else {
            return Err(fail(format!(
                "{} is damaged at its beginning ({:?}): refusing to start empty over it",
                path.display(),
                end.damage
            )));
        };
        let good_len = end.good_len;
        let log = LogWriter::open(&path, good_len).map_err(|e| fail(format!("opening {}: {e}", path.display())))?;
        tracing::info!(
            dir = %dir.display(),
            revision = state.revision,
            compacted = state.compacted,
            keys = state.key_count(),
            "embedded store opened"
        );

        Self::start(state, Some(log), backend, dir.to_path_buf(), options)
    }

    /// A store kept in memory only, with the same semantics (revisions, history, compaction,
    /// watches) and no durability: for tests of the layers above storage.
    pub fn in_memory(options: EmbeddedOptions) -> Result<Arc<EmbeddedStore>, StorageError> {
        Self::start(State::new(0, 1), None, "embedded (in memory)".to_string(), PathBuf::new(), options)
    }

    fn start(
        state: State,
        log: Option<LogWriter>,
        backend: String,
        dir: PathBuf,
        mut options: EmbeddedOptions,
    ) -> Result<Arc<EmbeddedStore>, StorageError> {
        options.max_value_size = options.max_value_size.min(MAX_VALUE_SIZE_CEILING);
        let fail = |message: String| StorageError::Unavailable { backend: backend.clone(), message };
        let shared = Arc::new(Shared {
            state: RwLock::new(state),
            watchers: Mutex::new(Watchers::default()),
            backend: backend.clone(),
            dir,
            watch_capacity: options.watch_capacity.max(1),
        });
        shared.record_size(log.as_ref().map_or(0, LogWriter::len));
        let queue = options.write_queue_capacity.max(1);
        let (requests, receiver) = crossbeam_channel::bounded(queue + 1);
        let writer = Writer {
            shared: Arc::clone(&shared),
            log,
            failed: None,
            max_batch: options.max_batch.max(1),
            linger: options.group_commit_linger,
            max_history: options.max_history,
            faults: options.faults.clone(),
        };
        let writer = std::thread::Builder::new()
            .name("embedded-store-writer".into())
            .spawn(move || writer.run(receiver))
            .map_err(|e| fail(format!("starting the writer thread: {e}")))?;
        Ok(Arc::new(EmbeddedStore {
            shared,
            options,
            requests: Some(requests),
            closing: AtomicBool::new(false),
            slots: Arc::new(Semaphore::new(queue)),
            writer: Some(writer),
            next_watch_id: AtomicU64::new(1),
        }))
    }

    /// The directory the store keeps its log in.
    pub fn dir(&self) -> &Path {
        &self.shared.dir
    }

    /// The options the store was opened with.
    pub fn options(&self) -> &EmbeddedOptions {
        &self.options
    }

    /// Number of watches currently receiving live events (replaying ones excluded); closed ones
    /// are counted until the next commit cleans them up.
    pub fn watcher_count(&self) -> usize {
        self.shared.lock_watchers().len()
    }

    /// Queues a write and waits for the writer's answer.
    async fn write(&self, op: WriteOp) -> Result<WriteOutcome, StorageError> {
        let slot = match Arc::clone(&self.slots).try_acquire_owned() {
            Ok(slot) => slot,
            Err(_) => {
                match tokio::time::timeout(self.options.write_queue_timeout, Arc::clone(&self.slots).acquire_owned())
                    .await
                {
                    Ok(Ok(slot)) => slot,
                    Ok(Err(_)) => return Err(self.shared.unavailable("the store is closed".into())),
                    Err(_) => {
                        return Err(self.shared.unavailable(format!(
                            "write queue of {} stayed full for {:?}",
                            self.options.write_queue_capacity, self.options.write_queue_timeout
                        )));
                    }
                }
            }
        };
        let (reply, answer) = oneshot::channel();
        let stopped = || self.shared.unavailable("the writer thread has stopped".into());
        let requests = self.requests.as_ref().ok_or_else(stopped)?;
        // Holding a slot means the channel has room, so this never finds it full.
        requests.try_send(WriteRequest { op, reply, slot: Some(slot) }).map_err(|_| stopped())?;
        answer.await.map_err(|_| stopped())?
    }

    /// A put, expiring at `expires` (Unix milliseconds) if given.
    async fn put_expiring(
        &self,
        key: &str,
        value: Bytes,
        expect: Expect,
        expires: Option<u64>,
    ) -> Result<KeyValue, StorageError> {
        let limit = self.options.max_value_size;
        if value.len() > limit {
            return Err(StorageError::TooLarge { key: key.to_string(), size: value.len(), limit });
        }
        match self.write(WriteOp::Mutate(Mutation::Put { key: key.to_string(), value, expect, expires })).await? {
            WriteOutcome::Put(kv) => Ok(kv),
            _ => Err(self.shared.unavailable("the writer answered a put with another outcome".into())),
        }
    }

    /// Stops taking writes and returns once every write queued before is synced and the log
    /// is closed. Writes waiting for a queue slot, and later ones, fail with `Unavailable`.
    /// A second call returns at once.
    pub async fn close(&self) -> Result<(), StorageError> {
        if self.closing.swap(true, Ordering::SeqCst) {
            return Ok(());
        }
        self.slots.close();
        let stopped = || self.shared.unavailable("the writer thread has stopped".into());
        let requests = self.requests.as_ref().ok_or_else(stopped)?;
        let (reply, answer) = oneshot::channel();
        // The channel has one place more than there are slots, and this is the one request
        // sent without a slot: it never finds the channel full.
        requests.try_send(WriteRequest { op: WriteOp::Close, reply, slot: None }).map_err(|_| stopped())?;
        answer.await.map_err(|_| stopped())?.map(|_| ())
    }
}

impl Drop for EmbeddedStore {
    fn drop(&mut self) {
        self.requests = None;
        if let Some(writer) = self.writer.take() {
            let _ = writer.join();
        }
    }
}

/// Applies one replayed record, checking it continues the log consistently: a header first
/// (revisions within etcd's `int64`), then the snapshot's restores (each key once, before any
/// write), then writes at consecutive revisions. `restoring` is true until the first write.
fn replay_record(state: &mut Option<State>, restoring: &mut bool, record: Record) -> Result<(), String> {
    let Some(s) = state.as_mut() else {
        return match record {
            Record::Header { format: 1, compacted, revision }
                if compacted <= revision && (1..=MAX_REVISION).contains(&revision) =>
            {
                *state = Some(State::new(compacted, revision));
                Ok(())
            }
            Record::Header { format: 1, compacted, revision } => {
                Err(format!("a header at revision {revision} compacted at {compacted}"))
            }
            Record::Header { format, .. } => Err(format!("unsupported header (format {format})")),
            _ => Err("the log does not start with a header".into()),
        };
    };
    match record {
        Record::Header { .. } => Err("a second header".into()),
        Record::Restore { key, create_revision, mod_revision, value, expires } => {
            if !*restoring {
                return Err(format!("restore of {key} after the snapshot's writes"));
            }
            if mod_revision > s.revision || create_revision > mod_revision || create_revision == 0 {
                return Err(format!("restore of {key} at {mod_revision} beyond the snapshot at {}", s.revision));
            }
            if s.latest(&key).is_some() {
                return Err(format!("a second restore of {key}"));
            }
            s.restore(key, Version { mod_revision, create_revision, value: Some(value) }, expires);
            Ok(())
        }
        Record::Put { revision, key, create_revision, value, expires } => {
            *restoring = false;
            next_revision(s, revision)?;
            let expected = s.latest(&key).map_or(revision, |kv| kv.create_revision);
            if expected != create_revision {
                return Err(format!("put of {key} with create revision {create_revision}, expected {expected}"));
            }
            s.apply(Change { key, revision, create_revision, value: Some(value), expires });
            Ok(())
        }
        Record::Delete { revision, key } => {
            *restoring = false;
            next_revision(s, revision)?;
            let Some(kv) = s.latest(&key) else { return Err(format!("delete of absent key {key}")) };
            s.apply(Change { key, revision, create_revision: kv.create_revision, value: None, expires: None });
            Ok(())
        }
    }
}

/// The largest revision: etcd's revisions are `int64`, and so are kube's resourceVersions as
/// clients parse them.
const MAX_REVISION: Revision = i64::MAX as Revision;

/// Checks that a replayed write comes right after the state's revision.
fn next_revision(s: &State, revision: Revision) -> Result<(), String> {
    if s.revision < MAX_REVISION && revision == s.revision + 1 {
        Ok(())
    } else {
        Err(format!("revision {revision} follows {}", s.revision))
    }
}

#[async_trait]
impl Storage for EmbeddedStore {
    fn describe(&self) -> String {
        self.shared.backend.clone()
    }

    async fn current_revision(&self) -> Result<Revision, StorageError> {
        Ok(self.shared.read_state().revision)
    }

    async fn get(&self, key: &str) -> Result<(Option<KeyValue>, Revision), StorageError> {
        let state = self.shared.read_state();
        Ok((state.latest(key), state.revision))
    }

    async fn list(&self, prefix: &str, opts: ListOptions) -> Result<ListResult, StorageError> {
        let state = self.shared.read_state();
        state.read_revision(opts.revision).map(|rev| state.list(prefix, opts.start.as_deref(), opts.limit, rev))
    }

    async fn count(&self, prefix: &str) -> Result<u64, StorageError> {
        Ok(self.shared.read_state().count(prefix))
    }

    async fn put(&self, key: &str, value: Bytes, expect: Expect) -> Result<KeyValue, StorageError> {
        self.put_expiring(key, value, expect, None).await
    }

    async fn put_with_ttl(
        &self,
        key: &str,
        value: Bytes,
        expect: Expect,
        ttl: Duration,
    ) -> Result<KeyValue, StorageError> {
        let ttl = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX);
        self.put_expiring(key, value, expect, Some(writer::unix_millis().saturating_add(ttl))).await
    }

    async fn delete(&self, key: &str, expect: Option<Revision>) -> Result<(KeyValue, Revision), StorageError> {
        match self.write(WriteOp::Mutate(Mutation::Delete { key: key.to_string(), expect })).await? {
            WriteOutcome::Delete(kv, revision) => Ok((kv, revision)),
            _ => Err(self.shared.unavailable("the writer answered a delete with another outcome".into())),
        }
    }

    async fn watch(&self, prefix: &str, after: Revision) -> Result<WatchStream, StorageError> {
        let after = {
            let state = self.shared.read_state();
            let after = if after == 0 { state.revision } else { after };
            if after < state.compacted {
                return Err(StorageError::Compacted { requested: after, compacted: state.compacted });
            }
            after
        };
        let id = self.next_watch_id.fetch_add(1, Ordering::Relaxed);
        Ok(watch::start(&self.shared, id, prefix.to_string(), after))
    }

    async fn compact(&self, revision: Revision) -> Result<(), StorageError> {
        self.write(WriteOp::Compact { revision }).await.map(|_| ())
    }

    async fn compacted_revision(&self) -> Result<Revision, StorageError> {
        Ok(self.shared.read_state().compacted)
    }

    async fn close(&self) -> Result<(), StorageError> {
        EmbeddedStore::close(self).await
    }

    /// Progress is queued behind already-published events at once: no batching delay.
    fn prompt_progress(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod replay_tests {
    use super::log::encode_into;
    use super::*;

    fn open_log(records: &[Record]) -> Result<Arc<EmbeddedStore>, StorageError> {
        let dir = tempfile::tempdir().unwrap();
        let mut buf = Vec::new();
        for r in records {
            encode_into(&mut buf, r);
        }
        fs::write(dir.path().join(LOG_FILE), &buf).unwrap();
        EmbeddedStore::open(dir.path(), EmbeddedOptions::default())
    }

    fn restore(key: &str, revision: Revision) -> Record {
        let value = Bytes::new();
        Record::Restore { key: key.into(), create_revision: revision, mod_revision: revision, value, expires: None }
    }

    fn put(key: &str, revision: Revision) -> Record {
        Record::Put { revision, key: key.into(), create_revision: revision, value: Bytes::new(), expires: None }
    }

    #[test]
    fn restores_come_once_per_key_and_before_any_write() {
        assert!(open_log(&[Record::header(3, 3), restore("/a", 2), put("/b", 4)]).is_ok());
        // A restore after a write would change history without an event.
        assert!(open_log(&[Record::header(3, 3), put("/b", 4), restore("/a", 2)]).is_err());
        // A second restore of a key would stack two versions of it out of order.
        assert!(open_log(&[Record::header(3, 3), restore("/a", 2), restore("/a", 1)]).is_err());
        assert!(open_log(&[Record::header(3, 3), restore("/a", 0)]).is_err());
    }

    #[test]
    fn a_damaged_snapshot_header_refuses_to_open_instead_of_starting_empty() {
        // Alone, and with a write after it.
        for (records, says) in [(1, "refusing to start empty"), (2, "damaged in the middle")] {
            let dir = tempfile::tempdir().unwrap();
            let mut buf = Vec::new();
            encode_into(&mut buf, &Record::header(0, 5));
            if records == 2 {
                encode_into(&mut buf, &put("/a", 6));
            }
            buf[10] ^= 0x40;
            fs::write(dir.path().join(LOG_FILE), &buf).unwrap();
            let e = EmbeddedStore::open(dir.path(), EmbeddedOptions::default())
                .err()
                .expect("a damaged log refuses to open");
            assert!(e.to_string().contains(says), "{e}");
            // The file is left as found, for the operator to restore.
            assert_eq!(fs::read(dir.path().join(LOG_FILE)).unwrap(), buf);
        }
    }

    #[test]
    fn revisions_past_int64_are_refused_not_overflowed() {
        let max = i64::MAX as Revision;
        // A header at u64::MAX once overflowed the next revision's check.
        assert!(open_log(&[Record::header(0, Revision::MAX), put("/a", 0)]).is_err());
        assert!(open_log(&[Record::header(0, max + 1)]).is_err());
        assert!(open_log(&[Record::header(0, max), put("/a", max + 1)]).is_err());
        assert!(open_log(&[Record::header(4, 3)]).is_err());
    }

    /// Polls `key` until it is gone.
    async fn gone(store: &EmbeddedStore, key: &str) -> Revision {
        for _ in 0..400 {
            match store.get(key).await.unwrap() {
                (None, revision) => return revision,
                _ => tokio::time::sleep(Duration::from_millis(25)).await,
            }
        }
        panic!("{key} did not expire");
    }

    #[tokio::test]
    async fn expiries_in_the_log_are_kept_across_reopen() {
        let (past, later) = (writer::unix_millis() - 1, writer::unix_millis() + 3_600_000);
        let restored = |key: &str, revision, expires| Record::Restore {
            key: key.into(),
            create_revision: revision,
            mod_revision: revision,
            value: Bytes::new(),
            expires,
        };
        let put = |key: &str, revision, expires| Record::Put {
            revision,
            key: key.into(),
            create_revision: revision,
            value: Bytes::new(),
            expires,
        };
        let store = open_log(&[
            Record::header(3, 3),
            restored("/r-due", 2, Some(past)),
            restored("/r-later", 3, Some(later)),
            put("/p-due", 4, Some(past)),
            put("/p-later", 5, Some(later)),
            put("/p-forever", 6, None),
        ])
        .unwrap();
        gone(&store, "/r-due").await;
        assert_eq!(gone(&store, "/p-due").await, 8, "each expired key is deleted at a revision of its own");
        let left = store.list("/", ListOptions::default()).await.unwrap().items;
        assert_eq!(left.iter().map(|kv| kv.key.as_str()).collect::<Vec<_>>(), ["/p-forever", "/p-later", "/r-later"]);
    }

    #[tokio::test]
    async fn a_compacted_log_keeps_the_expiries_of_live_keys() {
        let dir = tempfile::tempdir().unwrap();
        let store = EmbeddedStore::open(dir.path(), EmbeddedOptions::default()).unwrap();
        let hour = Duration::from_secs(3600);
        let v = || Bytes::from_static(b"v");
        store.put_with_ttl("/a", v(), Expect::Absent, hour).await.unwrap(); // 2
        store.put("/b", v(), Expect::Absent).await.unwrap(); // 3
        store.put_with_ttl("/c", v(), Expect::Absent, hour).await.unwrap(); // 4
        store.put("/a-then-kept", v(), Expect::Absent).await.unwrap(); // 5
        store.put_with_ttl("/d", v(), Expect::Absent, hour).await.unwrap(); // 6
        store.put("/d", v(), Expect::Exists).await.unwrap(); // 7: /d is kept for good
        store.compact(3).await.unwrap();
        drop(store);
        let mut expiring = Vec::new();
        log::replay(&dir.path().join(LOG_FILE), |record| {
            match record {
                Record::Restore { key, expires: Some(_), .. } | Record::Put { key, expires: Some(_), .. } => {
                    expiring.push(key)
                }
                _ => {}
            }
            Ok(())
        })
        .unwrap();
        // The snapshot's restore of /a, and /c's put after it; /d's first put is superseded.
        assert_eq!(expiring, ["/a", "/c"]);
    }
}
