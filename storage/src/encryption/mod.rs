//! Encryption at rest, as kube-apiserver's `--encryption-provider-config`.
//!
//! [`EncryptedStorage`] is a [`Storage`] decorator, where kube's value transformer sits under
//! its etcd3 store: values of the configured resources are encrypted on `put` and decrypted on
//! every way out (`get`, `list`, `delete`, watch events and their previous values, the current
//! value a `Conflict` carries). The layers above see plaintext; the backend sees only what
//! kube-apiserver would have written to etcd with the same configuration, byte for byte, so
//! either server reads the other's data.
//!
//! A value read through anything but the writing provider and key comes back with
//! [`KeyValue::stale`] set, and the registry rewrites stale objects on update even when they
//! are unchanged: `kubectl get secrets -A -o json | kubectl replace -f -` rotates keys, or moves
//! data in or out of encryption, as it does with kube.
//!
//! A value no provider can read fails with [`StorageError::Corrupt`] naming the key and why
//! (a list fails as a whole and a watch ends with the error, as in kube).
//!
//! # Layout
//! - `config`: the configuration file, kube's validation, which providers apply to which
//!   resource.
//! - `transformer`: the providers (`identity`, `aescbc`, `aesgcm`, `secretbox`) and kube's
//!   on-disk layout of each.
//! - this module: the decorator, and the configured resources to their key prefixes.

mod config;
mod transformer;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use tokio::sync::mpsc;

pub use config::EncryptionConfig;
use transformer::{ENCRYPTED_PREFIX, IDENTITY_READ_ENCRYPTED, Transformer};

use crate::{
    Event, Expect, KeyValue, ListOptions, ListResult, ResourceKeys, Revision, Storage, StorageError, WatchItem,
    WatchStream,
};

/// Items a watch's decrypting forwarder holds for its receiver. When full, the forwarder stops
/// reading the inner watch, so the inner backend's own policy for slow watchers applies (the
/// embedded store cuts them off); a small buffer keeps decrypted copies of large values few.
const WATCH_FORWARD_BUFFER: usize = 64;

/// Bytes of encrypted values above which a list is decrypted on a blocking thread rather than
/// on the async worker (style habit 9: CPU-heavy work off the executor).
const BLOCKING_DECRYPT_BYTES: usize = 1 << 20;

/// Which storage keys are transformed how.
struct KeyRules {
    /// Key prefix of each configured resource (ends with `/`) and its transformer.
    prefixes: Vec<(String, Arc<Transformer>)>,
}

impl KeyRules {
    /// The configured transformer of `key`, if any.
    fn transformer(&self, key: &str) -> Option<&Transformer> {
        self.prefixes.iter().find(|(prefix, _)| key.starts_with(prefix.as_str())).map(|(_, t)| t.as_ref())
    }

    /// The stored form of `value` at `key`; fails only if the OS cannot supply random bytes.
    fn encode(&self, key: &str, value: &Bytes) -> Result<Bytes, String> {
        match self.transformer(key) {
            None => Ok(value.clone()),
            Some(t) => t.transform_to_storage(value, key),
        }
    }

    /// `kv` with its value decrypted. Keys of resources the configuration does not name read
    /// through kube's default identity transformer: as they are, unless they look encrypted.
    fn decode(&self, kv: KeyValue) -> Result<KeyValue, StorageError> {
        let corrupt = |message: String| StorageError::Corrupt { key: kv.key.clone(), message };
        match self.transformer(&kv.key) {
            None if kv.value.starts_with(ENCRYPTED_PREFIX) => Err(corrupt(IDENTITY_READ_ENCRYPTED.to_string())),
            None => Ok(kv),
            Some(t) => {
                let (value, stale) = t
                    .transform_from_storage(&kv.value, &kv.key)
                    .map_err(|e| corrupt(format!("failed to decrypt data: {e}")))?;
                Ok(KeyValue { value, stale: kv.stale || stale, ..kv })
            }
        }
    }

    /// Decrypts every item.
    fn decode_all(&self, items: Vec<KeyValue>) -> Result<Vec<KeyValue>, StorageError> {
        items.into_iter().map(|kv| self.decode(kv)).collect()
    }

    /// An event with its value and previous value decrypted.
    fn decode_event(&self, e: Event) -> Result<Event, StorageError> {
        Ok(Event { kind: e.kind, kv: self.decode(e.kv)?, prev: e.prev.map(|p| self.decode(p)).transpose()? })
    }

    /// An inner write error as the caller should see it: a conflict carries the current value
    /// decrypted (or none, so the caller re-reads and meets the error), and a size error
    /// reports the caller's size when that alone is over the limit.
    fn decode_error(&self, e: StorageError, written: usize) -> StorageError {
        match e {
            StorageError::Conflict { key, current } => {
                let current = current.and_then(|kv| self.decode(*kv).ok()).map(Box::new);
                StorageError::Conflict { key, current }
            }
            StorageError::TooLarge { key, size, limit } => {
                StorageError::TooLarge { key, size: if written > limit { written } else { size }, limit }
            }
            other => other,
        }
    }
}

/// A [`Storage`] that encrypts the values of the resources an [`EncryptionConfig`] names and
/// passes everything else through, except that a value of another key that looks encrypted
/// (`k8s:enc:`) reads as corrupt rather than as an object, as kube's default identity
/// transformer has it.
pub struct EncryptedStorage {
    /// The store holding the encrypted bytes.
    inner: Arc<dyn Storage>,
    /// Shared with watch forwarders and blocking list decryption, which outlive a call.
    rules: Arc<KeyRules>,
}

impl EncryptedStorage {
    /// Wraps `inner`, encrypting those of the stored `resources` that `config` names, each
    /// under its key prefix (`secrets` → `/registry/secrets/`, `deployments.apps` →
    /// `/registry/deployments/`). Resources `config` names that are not in `resources` are
    /// ignored. Two resources sharing a prefix (events of two groups) are listed once, as the
    /// resource kube stores them as.
    pub fn new(inner: Arc<dyn Storage>, config: EncryptionConfig, resources: &[ResourceKeys]) -> Arc<EncryptedStorage> {
        let mut prefixes = Vec::new();
        for keys in resources {
            if let Some(providers) = config.providers_for(&keys.group, &keys.resource) {
                let transformer = Transformer::new(providers.to_vec());
                let prefix = keys.prefix.clone();
                tracing::info!(prefix, writer = transformer.writer().name(), "encryption at rest");
                prefixes.push((prefix, Arc::new(transformer)));
            }
        }
        Arc::new(EncryptedStorage { inner, rules: Arc::new(KeyRules { prefixes }) })
    }

    /// Decrypts list items, on a blocking thread when there is much to decrypt.
    async fn decode_all(&self, items: Vec<KeyValue>) -> Result<Vec<KeyValue>, StorageError> {
        let encrypted: usize =
            items.iter().filter(|kv| self.rules.transformer(&kv.key).is_some()).map(|kv| kv.value.len()).sum();
        if encrypted < BLOCKING_DECRYPT_BYTES {
            return self.rules.decode_all(items);
        }
        let rules = Arc::clone(&self.rules);
        tokio::task::spawn_blocking(move || rules.decode_all(items)).await.map_err(|e| StorageError::Unavailable {
            backend: self.describe(),
            message: format!("decryption task failed: {e}"),
        })?
    }

    /// Encrypts and writes, with a TTL if given.
    async fn put_encrypted(
        &self,
        key: &str,
        value: Bytes,
        expect: Expect,
        ttl: Option<Duration>,
    ) -> Result<KeyValue, StorageError> {
        let stored = self.rules.encode(key, &value).map_err(|e| StorageError::Unavailable {
            backend: self.describe(),
            message: format!("failed to encrypt {key}: {e}"),
        })?;
        let written = match ttl {
            Some(ttl) => self.inner.put_with_ttl(key, stored, expect, ttl).await,
            None => self.inner.put(key, stored, expect).await,
        };
        match written {
            Ok(kv) => Ok(KeyValue { value, stale: false, ..kv }),
            Err(e) => Err(self.rules.decode_error(e, value.len())),
        }
    }
}

/// Forwards one inner watch, decrypting events, until either side closes; an event that cannot
/// be decrypted ends the watch with its error, as kube's watcher does.
async fn forward_watch(rules: Arc<KeyRules>, mut inner: mpsc::Receiver<WatchItem>, tx: mpsc::Sender<WatchItem>) {
    loop {
        let item = tokio::select! {
            item = inner.recv() => match item {
                Some(item) => item,
                None => return,
            },
            () = tx.closed() => return,
        };
        let (item, last) = match item {
            WatchItem::Event(e) => match rules.decode_event(e) {
                Ok(e) => (WatchItem::Event(e), false),
                Err(err) => (WatchItem::Error(err), true),
            },
            other => (other, false),
        };
        if tx.send(item).await.is_err() || last {
            return;
        }
    }
}

#[async_trait]
impl Storage for EncryptedStorage {
    fn describe(&self) -> String {
        format!("{} with encryption at rest", self.inner.describe())
    }

    async fn current_revision(&self) -> Result<Revision, StorageError> {
        self.inner.current_revision().await
    }

    async fn get(&self, key: &str) -> Result<(Option<KeyValue>, Revision), StorageError> {
        let (kv, revision) = self.inner.get(key).await?;
        Ok((kv.map(|kv| self.rules.decode(kv)).transpose()?, revision))
    }

    async fn list(&self, prefix: &str, opts: ListOptions) -> Result<ListResult, StorageError> {
        let result = self.inner.list(prefix, opts).await?;
        Ok(ListResult { items: self.decode_all(result.items).await?, ..result })
    }

    async fn count(&self, prefix: &str) -> Result<u64, StorageError> {
        self.inner.count(prefix).await
    }

    async fn put(&self, key: &str, value: Bytes, expect: Expect) -> Result<KeyValue, StorageError> {
        self.put_encrypted(key, value, expect, None).await
    }

    async fn put_with_ttl(
        &self,
        key: &str,
        value: Bytes,
        expect: Expect,
        ttl: Duration,
    ) -> Result<KeyValue, StorageError> {
        self.put_encrypted(key, value, expect, Some(ttl)).await
    }

    async fn delete(&self, key: &str, expect: Option<Revision>) -> Result<(KeyValue, Revision), StorageError> {
        let (kv, revision) = self.inner.delete(key, expect).await.map_err(|e| self.rules.decode_error(e, 0))?;
        match self.rules.decode(kv) {
            Ok(kv) => Ok((kv, revision)),
            Err(StorageError::Corrupt { key, message }) => {
                Err(StorageError::Corrupt { key, message: format!("{message} (the key was deleted)") })
            }
            Err(e) => Err(e),
        }
    }

    async fn watch(&self, prefix: &str, after: Revision) -> Result<WatchStream, StorageError> {
        let inner = self.inner.watch(prefix, after).await?;
        let (tx, items) = mpsc::channel(WATCH_FORWARD_BUFFER);
        tokio::spawn(forward_watch(Arc::clone(&self.rules), inner.items, tx));
        Ok(WatchStream { items, progress: inner.progress })
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
