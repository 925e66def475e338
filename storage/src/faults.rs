//! Injected storage faults, for testing what the stages above do when storage is slow: a
//! decorator over any backend that holds each write for a delay set at run time. Off unless the
//! server is started with `--enable-fault-injection`; then the admin endpoint (loopback) sets it.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;

use crate::{Expect, KeyValue, ListOptions, ListResult, Revision, Storage, StorageError, WatchStream};

/// The faults in force, shared by every decorated backend.
#[derive(Debug, Default)]
pub struct Faults {
    /// Milliseconds each write (put, delete) waits before reaching the backend. Atomic: set by
    /// the admin endpoint while writes read it.
    write_delay_ms: AtomicU64,
}

impl Faults {
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

    async fn delete(&self, key: &str, expect: Option<Revision>) -> Result<(KeyValue, Revision), StorageError> {
        self.faults.delay_write().await;
        self.inner.delete(key, expect).await
    }

    async fn watch(&self, prefix: &str, after: Revision) -> Result<WatchStream, StorageError> {
        self.inner.watch(prefix, after).await
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
