//! The backend's request metrics, kept in one place for every backend: a decorator that times
//! each call under kube's `etcd_request_duration_seconds`, counts it under `etcd_requests_total`
//! and, when the backend itself failed, `etcd_request_errors_total`, labelled by operation and
//! resource as kube labels them. It also knows how long its oldest unanswered request has been
//! waiting, which a histogram cannot tell until that request ends: a stalled backend shows
//! there at once.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use bytes::Bytes;

use crate::metrics::{ETCD_REQUEST_DURATION_SECONDS, ETCD_REQUEST_ERRORS_TOTAL, ETCD_REQUESTS_TOTAL};
use crate::{Expect, KeyValue, ListOptions, ListResult, Revision, Storage, StorageError, WatchStream};

/// A backend whose every call is measured.
pub struct MeteredStorage {
    inner: Arc<dyn Storage>,
    /// Unanswered calls by a sequence number, with when each began: the first is the oldest.
    in_flight: Mutex<BTreeMap<u64, Instant>>,
    next: AtomicU64,
    unavailable: AtomicU64,
}

impl MeteredStorage {
    /// Measures `inner`.
    pub fn new(inner: Arc<dyn Storage>) -> Arc<MeteredStorage> {
        Arc::new(MeteredStorage {
            inner,
            in_flight: Mutex::default(),
            next: AtomicU64::new(0),
            unavailable: AtomicU64::new(0),
        })
    }

    /// How long the oldest unanswered call has waited, if any is unanswered.
    pub fn oldest_in_flight(&self) -> Option<Duration> {
        let in_flight = self.in_flight.lock().unwrap_or_else(|e| e.into_inner());
        in_flight.values().next().map(Instant::elapsed)
    }

    /// Calls the backend failed as unavailable so far: the backend's own failures, which
    /// `etcd_request_errors_total` counts together with reads refused as compacted.
    pub fn unavailable_total(&self) -> u64 {
        self.unavailable.load(Ordering::Relaxed)
    }

    async fn timed<T>(
        &self,
        operation: &'static str,
        key: &str,
        call: impl Future<Output = Result<T, StorageError>>,
    ) -> Result<T, StorageError> {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let started = Instant::now();
        self.in_flight.lock().unwrap_or_else(|e| e.into_inner()).insert(id, started);
        // Removed however the call ends, a dropped (cancelled) one included.
        let _done = Done { in_flight: &self.in_flight, id };
        let result = call.await;
        observe(operation, key, started.elapsed(), failed(&result));
        if let Err(StorageError::Unavailable { .. }) = &result {
            self.unavailable.fetch_add(1, Ordering::Relaxed);
        }
        result
    }
}

struct Done<'a> {
    in_flight: &'a Mutex<BTreeMap<u64, Instant>>,
    id: u64,
}

impl Drop for Done<'_> {
    fn drop(&mut self) {
        self.in_flight.lock().unwrap_or_else(|e| e.into_inner()).remove(&self.id);
    }
}

/// The resource a key belongs to, for metric labels: `/registry/configmaps/ns/a` is
/// `configmaps`, `/registry/<group>/<resource>/...` keys with a dotted group are
/// `<resource>.<group>`, as kube's `type` label reads.
pub(crate) fn resource_type(key: &str) -> String {
    let mut segments = key.trim_start_matches('/').split('/');
    let mut first = segments.next().unwrap_or("");
    if first == "registry" {
        first = segments.next().unwrap_or("");
    }
    match segments.next() {
        Some(resource) if first.contains('.') && !resource.is_empty() => format!("{resource}.{first}"),
        _ => first.to_string(),
    }
}

fn observe(operation: &'static str, key: &str, took: Duration, failed: bool) {
    let kind = resource_type(key);
    metrics::histogram!(ETCD_REQUEST_DURATION_SECONDS, "operation" => operation, "type" => kind.clone())
        .record(took.as_secs_f64());
    metrics::counter!(ETCD_REQUESTS_TOTAL, "operation" => operation, "type" => kind.clone()).increment(1);
    if failed {
        metrics::counter!(ETCD_REQUEST_ERRORS_TOTAL, "operation" => operation, "type" => kind).increment(1);
    }
}

/// Whether the backend itself failed (an answer etcd gives as an error), not a guard that did
/// not hold (absent, present, changed), which etcd answers as a transaction whose compare
/// failed.
fn failed<T>(result: &Result<T, StorageError>) -> bool {
    matches!(
        result,
        Err(StorageError::Unavailable { .. }
            | StorageError::Compacted { .. }
            | StorageError::FutureRevision { .. }
            | StorageError::TooLarge { .. })
    )
}

#[async_trait]
impl Storage for MeteredStorage {
    fn describe(&self) -> String {
        self.inner.describe()
    }

    async fn current_revision(&self) -> Result<Revision, StorageError> {
        self.inner.current_revision().await
    }

    async fn get(&self, key: &str) -> Result<(Option<KeyValue>, Revision), StorageError> {
        self.timed("get", key, self.inner.get(key)).await
    }

    async fn list(&self, prefix: &str, opts: ListOptions) -> Result<ListResult, StorageError> {
        self.timed("list", prefix, self.inner.list(prefix, opts)).await
    }

    async fn count(&self, prefix: &str) -> Result<u64, StorageError> {
        self.timed("count", prefix, self.inner.count(prefix)).await
    }

    async fn put(&self, key: &str, value: Bytes, expect: Expect) -> Result<KeyValue, StorageError> {
        let operation = if expect == Expect::Absent { "create" } else { "update" };
        self.timed(operation, key, self.inner.put(key, value, expect)).await
    }

    async fn put_with_ttl(
        &self,
        key: &str,
        value: Bytes,
        expect: Expect,
        ttl: Duration,
    ) -> Result<KeyValue, StorageError> {
        let operation = if expect == Expect::Absent { "create" } else { "update" };
        self.timed(operation, key, self.inner.put_with_ttl(key, value, expect, ttl)).await
    }

    async fn delete(&self, key: &str, expect: Option<Revision>) -> Result<(KeyValue, Revision), StorageError> {
        self.timed("delete", key, self.inner.delete(key, expect)).await
    }

    async fn watch(&self, prefix: &str, after: Revision) -> Result<WatchStream, StorageError> {
        self.timed("watch", prefix, self.inner.watch(prefix, after)).await
    }

    async fn compact(&self, revision: Revision) -> Result<(), StorageError> {
        self.timed("compact", "", self.inner.compact(revision)).await
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resource_type_reads_kube_key_layouts() {
        assert_eq!(resource_type("/registry/configmaps/default/a"), "configmaps");
        assert_eq!(resource_type("/registry/namespaces/default"), "namespaces");
        assert_eq!(
            resource_type("/registry/apiextensions.k8s.io/customresourcedefinitions/x"),
            "customresourcedefinitions.apiextensions.k8s.io"
        );
    }
}
