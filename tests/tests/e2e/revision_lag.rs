//! Open question 5.2 in its short form: while clients contend on a Lease and others create
//! ConfigMaps, a consistent read through this server never answers at a revision older than a
//! linearizable read of storage taken just before it, on either backend, and an Exact read
//! answers at exactly the revision asked for. RV=0 reads and watches may trail; their lag is
//! printed, and measured at length by `loadgen 30 lag` (docs/OPEN-QUESTIONS.md).

use std::time::Duration;

use storage::etcd::testing::EtcdProcess;
use tests::TestServer;
use tests::load::lag::{self, Authority, LagOptions, LagReport};

const OPTIONS: LagOptions =
    LagOptions { duration: Duration::from_secs(3), writers: 8, rate: 400.0, lease_contenders: 4 };

fn check(report: &LagReport) {
    let kind = |name: &str| report.kinds.iter().find(|k| k.kind == name).unwrap();
    let consistent = kind("consistent");
    assert!(consistent.samples > 50, "{}", lag::table(std::slice::from_ref(report)));
    assert_eq!((consistent.max, consistent.errors), (0, 0), "{}", lag::table(std::slice::from_ref(report)));
    let exact = kind("Exact");
    assert!(exact.samples > 50);
    assert_eq!((exact.max, exact.errors), (0, 0), "{}", lag::table(std::slice::from_ref(report)));
    assert!(kind("watch").samples > 50, "the watch was sampled");
    assert!(report.creates_per_sec > 100.0 && report.lease_updates_per_sec > 5.0, "the load ran: {report:?}");
}

#[actix_web::test]
async fn consistent_reads_never_trail_storage_on_the_embedded_store() {
    let s = TestServer::start();
    let report = lag::run(&s, Authority::Admin(s.admin_url("/debug/storage/revision")), "embedded", &OPTIONS).await;
    print!("{}", lag::table(std::slice::from_ref(&report)));
    check(&report);
}

#[actix_web::test]
async fn consistent_reads_never_trail_a_linearizable_etcd_read() {
    let etcd = EtcdProcess::start();
    let s = TestServer::start_with(&["--storage-backend", "etcd3", "--etcd-servers", etcd.endpoint()]);
    let report = lag::run(&s, Authority::etcd(etcd.endpoint()).await.unwrap(), "etcd", &OPTIONS).await;
    print!("{}", lag::table(std::slice::from_ref(&report)));
    check(&report);
}
