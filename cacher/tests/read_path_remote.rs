//! The cacher's read-path conformance suite through the network: the cacher follows a
//! [`RemoteFeed`] (HTTP/2, mutual TLS) served by a [`FeedService`] over an embedded store, as a
//! gateway's cacher follows a storage stage process. Writes go to the store directly, as the
//! storage stage process writes them.

use std::sync::Arc;
use std::time::Duration;

use actors::remote::{ClusterTls, Listening, Peer, StageService};
use async_trait::async_trait;
use bytes::Bytes;
use cacher::conformance::Fixture;
use cacher::feed::{FeedService, RemoteFeed};
use rcgen::{BasicConstraints, CertificateParams, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair};
use storage::embedded::{EmbeddedOptions, EmbeddedStore};
use storage::router::StorageRouter;
use storage::{Expect, KeyValue, ListOptions, ListResult, Revision, Storage, StorageError, WatchStream};

/// Reads through the feed, writes to the store behind it.
struct Split {
    feed: Arc<RemoteFeed>,
    store: Arc<dyn Storage>,
}

#[async_trait]
impl Storage for Split {
    fn describe(&self) -> String {
        self.feed.describe()
    }
    async fn current_revision(&self) -> Result<Revision, StorageError> {
        self.feed.current_revision().await
    }
    async fn get(&self, key: &str) -> Result<(Option<KeyValue>, Revision), StorageError> {
        self.feed.get(key).await
    }
    async fn list(&self, prefix: &str, opts: ListOptions) -> Result<ListResult, StorageError> {
        self.feed.list(prefix, opts).await
    }
    async fn count(&self, prefix: &str) -> Result<u64, StorageError> {
        self.feed.count(prefix).await
    }
    async fn put(&self, key: &str, value: Bytes, expect: Expect) -> Result<KeyValue, StorageError> {
        self.store.put(key, value, expect).await
    }
    async fn put_with_ttl(
        &self,
        key: &str,
        value: Bytes,
        expect: Expect,
        ttl: Duration,
    ) -> Result<KeyValue, StorageError> {
        self.store.put_with_ttl(key, value, expect, ttl).await
    }
    async fn delete(&self, key: &str, expect: Option<Revision>) -> Result<(KeyValue, Revision), StorageError> {
        self.store.delete(key, expect).await
    }
    async fn watch(&self, prefix: &str, after: Revision) -> Result<WatchStream, StorageError> {
        self.feed.watch(prefix, after).await
    }
    async fn compact(&self, revision: Revision) -> Result<(), StorageError> {
        self.store.compact(revision).await
    }
    async fn compacted_revision(&self) -> Result<Revision, StorageError> {
        self.feed.compacted_revision().await
    }
    fn prompt_progress(&self) -> bool {
        self.feed.prompt_progress()
    }
}

fn cluster_tls() -> ClusterTls {
    let ca_key = KeyPair::generate().unwrap();
    let mut ca = CertificateParams::new(Vec::new()).unwrap();
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca_cert = ca.self_signed(&ca_key).unwrap();
    let issuer = Issuer::new(ca, ca_key);
    let key = KeyPair::generate().unwrap();
    let mut leaf = CertificateParams::new(vec!["127.0.0.1".to_string()]).unwrap();
    leaf.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth, ExtendedKeyUsagePurpose::ClientAuth];
    let cert = leaf.signed_by(&key, &issuer).unwrap();
    ClusterTls::from_pem(ca_cert.pem().as_bytes(), cert.pem().as_bytes(), key.serialize_pem().as_bytes()).unwrap()
}

/// A fresh in-memory store served over the feed on a free port; the fixture keeps the listener.
async fn fresh_store() -> Fixture {
    let store: Arc<dyn Storage> = EmbeddedStore::in_memory(EmbeddedOptions::default()).expect("open");
    let router = Arc::new(StorageRouter::new(store.clone()));
    let mut service = StageService::default();
    FeedService::new(router, vec![format!("{}/", cacher::conformance::PREFIX)]).register(&mut service);
    let tls = cluster_tls();
    let listening: Listening = service.serve(([127, 0, 0, 1], 0).into(), &tls).expect("listen");
    let url = format!("https://127.0.0.1:{}", listening.address().port());
    let feed = RemoteFeed::new(Peer::new("shard", &url, &tls).expect("peer"), "storage@shard");
    Fixture::with_guard(Arc::new(Split { feed, store }), listening)
}

cacher::cacher_read_path_tests!(fresh_store);
