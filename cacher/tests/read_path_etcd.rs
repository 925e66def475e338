//! The cacher's read-path conformance suite on etcd, each case on its own freshly started etcd
//! (the cases predict exact revisions and one compacts the whole store).

use cacher::conformance::Fixture;
use storage::etcd::testing::EtcdProcess;

/// A store on a fresh etcd, which the fixture keeps running until the case ends.
async fn fresh_store() -> Fixture {
    let etcd = tokio::task::spawn_blocking(EtcdProcess::start).await.expect("starting etcd");
    let store = etcd.connect().await.expect("connect");
    Fixture::with_guard(store, etcd)
}

cacher::cacher_read_path_tests!(fresh_store);
