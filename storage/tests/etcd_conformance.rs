//! The conformance suite on the etcd backend, each case on its own freshly started etcd (the
//! cases assert exact revision steps and compact the whole store). etcd-only behaviour (outages,
//! restarts) is in `etcd.rs`.

use storage::conformance::Fixture;
use storage::etcd::testing::EtcdProcess;

/// A store on a fresh etcd, which the fixture keeps running until the case ends.
async fn fresh_store() -> Fixture {
    let etcd = tokio::task::spawn_blocking(EtcdProcess::start).await.expect("starting etcd");
    let store = etcd.connect().await.expect("connect");
    Fixture::with_guard(store, etcd)
}

storage::conformance_tests!(fresh_store);
