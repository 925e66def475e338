//! Injected storage faults, for testing what the stages above do when storage misbehaves: a
//! decorator over any backend that holds each write for a delay set at run time and can break
//! every storage watch open (so the cacher re-syncs), and failpoints the embedded store's log
//! consults before each fsync (slow or failing). Off unless the server is started with
//! `--enable-fault-injection`; then the admin endpoint sets them.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::sync::mpsc;

use async_trait::async_trait;
use bytes::Bytes;

use crate::{Expect, KeyValue, ListOptions, ListResult, Revision, Storage, StorageError, WatchItem, WatchStream};

/// The faults in force, shared by every decorated backend.
#[derive(Debug)]
pub struct Faults {
    /// Milliseconds each write (put, delete) waits before reaching the backend. Atomic: set by
    /// the admin endpoint while writes read it.
    write_delay_ms: AtomicU64,
    /// Milliseconds the embedded store's writer sleeps between writing a batch and syncing it.
    fsync_delay_ms: AtomicU64,
    /// How many of the next fsyncs fail.
    fsync_failures: AtomicU64,
    /// Bumped to break every storage watch open; a `watch` channel so each watch's forwarder
    /// wakes on the change without polling.
    watch_breaks: tokio::sync::watch::Sender<u64>,
}

impl Default for Faults {
    fn default() -> Self {
        Faults {
            write_delay_ms: AtomicU64::new(0),
            fsync_delay_ms: AtomicU64::new(0),
            fsync_failures: AtomicU64::new(0),
            watch_breaks: tokio::sync::watch::Sender::new(0),
        }
    }
}

impl Faults {
    /// Makes every fsync of the embedded store's log wait `delay` first (zero: none).
    pub fn set_fsync_delay(&self, delay: Duration) {
        self.fsync_delay_ms.store(delay.as_millis().min(u64::MAX as u128) as u64, Ordering::Relaxed);
    }

    /// The delay before each fsync.
    pub fn fsync_delay(&self) -> Duration {
        Duration::from_millis(self.fsync_delay_ms.load(Ordering::Relaxed))
    }

    /// Makes the next `count` fsyncs fail (the store then refuses writes until reopened).
    pub fn fail_fsyncs(&self, count: u64) {
        self.fsync_failures.store(count, Ordering::Relaxed);
    }

    /// Called by the embedded store's writer thread between writing a batch and syncing it:
    /// sleeps the fsync delay, then fails if a failure is pending.
    pub fn before_fsync(&self) -> std::io::Result<()> {
        let delay = self.fsync_delay();
        if !delay.is_zero() {
            std::thread::sleep(delay);
        }
        let pending = self.fsync_failures.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1));
        match pending {
            Ok(_) => Err(std::io::Error::other("injected fsync failure")),
            Err(_) => Ok(()),
        }
    }

    /// Ends every storage watch open now with an error, as a backend restart would: the
    /// cacher re-lists and re-watches.
    pub fn break_watches(&self) {
        self.watch_breaks.send_modify(|n| *n += 1);
    }

    /// How many times the watches were broken.
    pub fn watch_breaks(&self) -> u64 {
        *self.watch_breaks.borrow()
    }

    /// Holds each write for `delay` from now on (zero: none).
    pub fn set_write_delay(&self, delay: Duration) {
        self.write_delay_ms.store(delay.as_millis().min(u64::MAX as u128) as u64, Ordering::Relaxed);
    }

    /// The delay each write waits.
    pub fn write_delay(&self) -> Duration {
        Duration::from_millis(self.write_delay_ms.load(Ordering::Relaxed))
    }

    async fn delay_write(&self) {
        let delay = self.write_delay();
        if !delay.is_zero() {
            tokio::time::sleep(delay).await;
        }
    }
}

/// A backend whose writes wait for the injected delay first. The delay comes before the write
/// reaches the backend, so a write abandoned during it (its deadline passed) never happens.
pub struct FaultyStorage {
    inner: Arc<dyn Storage>,
    faults: Arc<Faults>,
}

impl FaultyStorage {
    /// Wraps `inner` under `faults`.
    pub fn new(inner: Arc<dyn Storage>, faults: Arc<Faults>) -> Arc<FaultyStorage> {
        Arc::new(FaultyStorage { inner, faults })
    }
}

#[async_trait]
impl Storage for FaultyStorage {
    fn describe(&self) -> String {
        self.inner.describe()
    }

    async fn current_revision(&self) -> Result<Revision, StorageError> {
        self.inner.current_revision().await
    }

    async fn get(&self, key: &str) -> Result<(Option<KeyValue>, Revision), StorageError> {
        self.inner.get(key).await
    }

    async fn list(&self, prefix: &str, opts: ListOptions) -> Result<ListResult, StorageError> {
        self.inner.list(prefix, opts).await
    }

    async fn count(&self, prefix: &str) -> Result<u64, StorageError> {
        self.inner.count(prefix).await
    }

    async fn put(&self, key: &str, value: Bytes, expect: Expect) -> Result<KeyValue, StorageError> {
        self.faults.delay_write().await;
        self.inner.put(key, value, expect).await
    }

    async fn put_with_ttl(
        &self,
        key: &str,
        value: Bytes,
        expect: Expect,
        ttl: Duration,
    ) -> Result<KeyValue, StorageError> {
        self.faults.delay_write().await;
        self.inner.put_with_ttl(key, value, expect, ttl).await
    }

    async fn delete(&self, key: &str, expect: Option<Revision>) -> Result<(KeyValue, Revision), StorageError> {
        self.faults.delay_write().await;
        self.inner.delete(key, expect).await
    }

    async fn watch(&self, prefix: &str, after: Revision) -> Result<WatchStream, StorageError> {
        let WatchStream { mut items, progress } = self.inner.watch(prefix, after).await?;
        let mut breaks = self.faults.watch_breaks.subscribe();
        breaks.mark_unchanged();
        let backend = self.inner.describe();
        // Forwards the backend's items until a break is asked for, then ends with an error.
        let (tx, rx) = mpsc::channel(items.max_capacity());
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    item = items.recv() => match item {
                        Some(item) => if tx.send(item).await.is_err() { return },
                        None => return,
                    },
                    changed = breaks.changed() => {
                        if changed.is_ok() {
                            let message = "injected: the storage watch was broken".to_string();
                            let _ = tx.send(WatchItem::Error(StorageError::Unavailable { backend, message })).await;
                        }
                        return;
                    }
                }
            }
        });
        Ok(WatchStream { items: rx, progress })
    }

    async fn compact(&self, revision: Revision) -> Result<(), StorageError> {
        self.inner.compact(revision).await
    }

    async fn compacted_revision(&self) -> Result<Revision, StorageError> {
        self.inner.compacted_revision().await
    }

    async fn close(&self) -> Result<(), StorageError> {
        self.inner.close().await
    }

    fn prompt_progress(&self) -> bool {
        self.inner.prompt_progress()
    }
}
