//! etcd-only behaviour of the etcd backend, against real etcd processes: outages and restarts,
//! a member of a cluster lost (failover), deadlines, compactions made by another client, slow watchers, progress notifications under
//! concurrent writes, etcd's own size limit, and TLS with client certificates. The shared
//! semantics are in `etcd_conformance.rs`.

use std::net::TcpListener;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use storage::etcd::testing::{EtcdCluster, EtcdProcess, ServerTls};
use storage::etcd::{EtcdOptions, EtcdStore};
use storage::{Expect, KeyValue, ListOptions, Revision, Storage, StorageError, WatchItem, WatchStream};

/// Starts etcd off the runtime's threads.
async fn start_etcd() -> EtcdProcess {
    tokio::task::spawn_blocking(EtcdProcess::start).await.expect("starting etcd")
}

/// Bytes from a string.
fn b(s: &str) -> Bytes {
    Bytes::copy_from_slice(s.as_bytes())
}

/// The next watch item, failing the test if none comes within `within` (`None`: closed).
async fn next_item(w: &mut WatchStream, within: Duration) -> Option<WatchItem> {
    tokio::time::timeout(within, w.items.recv()).await.expect("no watch item in time")
}

/// Asserts `err` is `Unavailable` naming the etcd endpoint and `what` (the operation and key).
fn assert_unavailable(err: &StorageError, endpoint: &str, what: &str) {
    match err {
        StorageError::Unavailable { backend, message } => {
            assert_eq!(backend, &format!("etcd3 ({endpoint})"));
            assert!(message.starts_with(what), "{message:?} should start with {what:?}");
        }
        other => panic!("expected Unavailable, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stopped_etcd_fails_requests_promptly_and_ends_watches() {
    let mut etcd = start_etcd().await;
    let store = etcd.connect().await.unwrap();
    let key = "/registry/pods/default/a";
    store.put(key, b("x"), Expect::Absent).await.unwrap();
    let mut watch = store.watch("/registry/pods/", 0).await.unwrap();

    etcd.stop();
    let started = Instant::now();
    assert_unavailable(&store.get(key).await.unwrap_err(), etcd.endpoint(), &format!("get {key}: "));
    let put = store.put(key, b("y"), Expect::Exists).await.unwrap_err();
    assert_unavailable(&put, etcd.endpoint(), &format!("update {key}: "));
    let list = store.list("/registry/pods/", ListOptions::default()).await.unwrap_err();
    assert_unavailable(&list, etcd.endpoint(), "list /registry/pods/: ");
    let watch_again = store.watch("/registry/pods/", 0).await.err().expect("a watch fails");
    assert_unavailable(&watch_again, etcd.endpoint(), "watch /registry/pods/: ");
    assert!(started.elapsed() < Duration::from_secs(5), "failing took {:?}", started.elapsed());

    match next_item(&mut watch, Duration::from_secs(10)).await {
        Some(WatchItem::Error(e)) => assert_unavailable(&e, etcd.endpoint(), "watch /registry/pods/: "),
        other => panic!("expected the watch to end with an error, got {other:?}"),
    }
    assert_eq!(next_item(&mut watch, Duration::from_secs(1)).await, None, "the watch closes after its error");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restarted_etcd_serves_the_same_store_again() {
    let mut etcd = start_etcd().await;
    let store = etcd.connect().await.unwrap();
    let key = "/registry/configmaps/default/a";
    let written = store.put(key, b("before"), Expect::Absent).await.unwrap();

    etcd.restart();
    let deadline = Instant::now() + Duration::from_secs(10);
    let read = loop {
        match store.get(key).await {
            Ok(read) => break read,
            Err(e) if Instant::now() < deadline => {
                eprintln!("not yet back: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(e) => panic!("etcd did not come back for the same store: {e}"),
        }
    };
    assert_eq!(read, (Some(written.clone()), written.mod_revision), "the data survived the restart");

    let mut watch = store.watch("/registry/configmaps/", 0).await.unwrap();
    let updated = store.put(key, b("after"), Expect::ModRevision(written.mod_revision)).await.unwrap();
    match next_item(&mut watch, Duration::from_secs(10)).await {
        Some(WatchItem::Event(e)) => assert_eq!((e.kv, e.prev), (updated, Some(written))),
        other => panic!("expected the update, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn silent_endpoint_fails_within_the_request_timeout() {
    // Accepts connections (the kernel's backlog does) but never answers.
    let silent = TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("http://{}", silent.local_addr().unwrap());
    let options = EtcdOptions {
        endpoints: vec![endpoint.clone()],
        request_timeout: Duration::from_millis(700),
        ..EtcdOptions::default()
    };
    let started = Instant::now();
    let err = EtcdStore::connect(options).await.err().expect("connecting to a silent endpoint fails");
    assert_unavailable(&err, &endpoint, "get current revision: no answer within 700ms");
    assert!(started.elapsed() < Duration::from_secs(3), "failing took {:?}", started.elapsed());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compaction_by_another_client_is_learned() {
    let etcd = start_etcd().await;
    let (compactor, other) = (etcd.connect().await.unwrap(), etcd.connect().await.unwrap());
    let p = "/registry/secrets/default/";
    let mut last = 0;
    for i in 0..5 {
        last = compactor.put(&format!("{p}s{i}"), b("v"), Expect::Absent).await.unwrap().mod_revision;
    }
    compactor.compact(last - 1).await.unwrap();
    assert_eq!(compactor.compacted_revision().await.unwrap(), last - 1);
    assert_eq!(other.compacted_revision().await.unwrap(), 0, "nothing observed yet");

    let opts = ListOptions { revision: Some(last - 3), ..Default::default() };
    assert_eq!(
        other.list(p, opts).await,
        Err(StorageError::Compacted { requested: last - 3, compacted: last - 1 }),
        "a refused read learns etcd's compacted revision"
    );
    assert_eq!(other.compacted_revision().await.unwrap(), last - 1);
    match other.watch(p, last - 2).await {
        Err(e) => assert_eq!(e, StorageError::Compacted { requested: last - 2, compacted: last - 1 }),
        Ok(_) => panic!("a watch needing compacted history must fail"),
    }
    let reconnected = etcd.connect().await.unwrap();
    assert_eq!(reconnected.compacted_revision().await.unwrap(), last - 1, "connect learns it too");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_watcher_is_cut_off_with_an_error() {
    let etcd = start_etcd().await;
    let store = EtcdStore::connect(EtcdOptions { watch_capacity: 4, ..etcd.options() }).await.unwrap();
    let p = "/registry/events/default/";
    let mut watch = store.watch(p, 0).await.unwrap();
    for i in 0..10 {
        store.put(&format!("{p}e{i}"), b("v"), Expect::Absent).await.unwrap();
    }
    for _ in 0..4 {
        assert!(matches!(next_item(&mut watch, Duration::from_secs(5)).await, Some(WatchItem::Event(_))));
    }
    match next_item(&mut watch, Duration::from_secs(5)).await {
        Some(WatchItem::Error(StorageError::Unavailable { message, .. })) => {
            assert!(message.contains("watcher fell behind: 4 items"), "{message}")
        }
        other => panic!("expected the fell-behind error, got {other:?}"),
    }
    assert_eq!(next_item(&mut watch, Duration::from_secs(1)).await, None);
}

/// Reads `w` until a progress notification at or above `target`, checking that no event at or
/// below an earlier notification arrives after it; returns the events read.
async fn read_until_progress(w: &mut WatchStream, target: Revision, progressed: &mut Revision) -> Vec<KeyValue> {
    let mut events = Vec::new();
    loop {
        match next_item(w, Duration::from_secs(10)).await {
            Some(WatchItem::Event(e)) => {
                assert!(e.kv.mod_revision > *progressed, "event {} after progress {progressed}", e.kv.mod_revision);
                events.push(e.kv);
            }
            Some(WatchItem::Progress(rev)) => {
                *progressed = (*progressed).max(rev);
                if rev >= target {
                    return events;
                }
            }
            other => panic!("unexpected {other:?}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_never_overtakes_events_under_concurrent_writes() {
    let etcd = start_etcd().await;
    let store: Arc<dyn Storage> = etcd.connect().await.unwrap();
    let p = "/registry/leases/kube-system/";
    let r0 = store.current_revision().await.unwrap();
    for i in 0..200 {
        store.put(&format!("{p}old{i:03}"), b("v"), Expect::Absent).await.unwrap();
    }
    // One watch replaying 200 events, one from now; progress asked for at once, then while a
    // writer changes the prefix and others.
    let mut replaying = store.watch(p, r0).await.unwrap();
    let mut live = store.watch(p, 0).await.unwrap();
    let writer = {
        let store = Arc::clone(&store);
        tokio::spawn(async move {
            let mut written = Vec::new();
            for i in 0..150 {
                written.push(store.put(&format!("{p}new{i:03}"), b("v"), Expect::Absent).await.unwrap());
                store.put(&format!("/registry/other/x{i}"), b("v"), Expect::Absent).await.unwrap();
            }
            written
        })
    };
    let (mut progressed_replaying, mut progressed_live) = (0, 0);
    let (mut seen_replaying, mut seen_live) = (Vec::new(), Vec::new());
    while !writer.is_finished() {
        let now = store.current_revision().await.unwrap();
        replaying.progress.request_progress();
        live.progress.request_progress();
        seen_replaying.extend(read_until_progress(&mut replaying, now, &mut progressed_replaying).await);
        seen_live.extend(read_until_progress(&mut live, now, &mut progressed_live).await);
    }
    let written = writer.await.unwrap();
    let end = store.current_revision().await.unwrap();
    replaying.progress.request_progress();
    live.progress.request_progress();
    seen_replaying.extend(read_until_progress(&mut replaying, end, &mut progressed_replaying).await);
    seen_live.extend(read_until_progress(&mut live, end, &mut progressed_live).await);

    assert_eq!(seen_replaying.len(), 350, "the replay and every new write, once each");
    assert_eq!(&seen_replaying[200..], &written[..]);
    assert_eq!(seen_live, written);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn value_over_etcds_own_limit_is_too_large() {
    let etcd = start_etcd().await;
    // Our limit above etcd's default --max-request-bytes (1.5 MiB): etcd refuses instead.
    let store = EtcdStore::connect(EtcdOptions { max_value_size: 4 << 20, ..etcd.options() }).await.unwrap();
    let key = "/registry/configmaps/default/big";
    let value = Bytes::from(vec![1u8; 1_800_000]);
    assert_eq!(
        store.put(key, value, Expect::Absent).await,
        Err(StorageError::TooLarge { key: key.into(), size: 1_800_000, limit: 4 << 20 })
    );
    assert_eq!(store.get(key).await.unwrap().0, None);
}

/// A CA, etcd's serving certificate for 127.0.0.1 and a client certificate, written to `dir`.
fn write_pki(dir: &Path) -> (ServerTls, EtcdOptions) {
    use rcgen::{BasicConstraints, CertificateParams, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair, SanType};
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca_cert = ca_params.self_signed(&ca_key).unwrap();
    let issuer = Issuer::new(ca_params, ca_key);
    let issue = |name: &str, usage: ExtendedKeyUsagePurpose| {
        let mut params = CertificateParams::new(vec!["localhost".to_string()]).unwrap();
        params.subject_alt_names.push(SanType::IpAddress("127.0.0.1".parse().unwrap()));
        params.extended_key_usages = vec![usage];
        let key = KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &issuer).unwrap();
        let (cert_file, key_file) = (dir.join(format!("{name}.crt")), dir.join(format!("{name}.key")));
        std::fs::write(&cert_file, cert.pem()).unwrap();
        std::fs::write(&key_file, key.serialize_pem()).unwrap();
        (cert_file, key_file)
    };
    let ca_file = dir.join("ca.crt");
    std::fs::write(&ca_file, ca_cert.pem()).unwrap();
    let (server_cert, server_key) = issue("server", ExtendedKeyUsagePurpose::ServerAuth);
    let (client_cert, client_key) = issue("client", ExtendedKeyUsagePurpose::ClientAuth);
    let server = ServerTls { cert_file: server_cert, key_file: server_key, client_ca_file: ca_file.clone() };
    let client = EtcdOptions {
        ca_file: Some(ca_file),
        cert_file: Some(client_cert),
        key_file: Some(client_key),
        ..EtcdOptions::default()
    };
    (server, client)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_with_client_certificates() {
    let pki = tempfile::tempdir().unwrap();
    let (server, client) = write_pki(pki.path());
    let etcd = tokio::task::spawn_blocking(move || EtcdProcess::start_tls(server)).await.unwrap();
    assert!(etcd.endpoint().starts_with("https://"));
    let options = EtcdOptions { endpoints: vec![etcd.endpoint().to_string()], ..client };

    let store = EtcdStore::connect(options.clone()).await.unwrap();
    let key = "/registry/secrets/default/tls";
    let mut watch = store.watch("/registry/secrets/", 0).await.unwrap();
    let written = store.put(key, b("over tls"), Expect::Absent).await.unwrap();
    assert_eq!(store.get(key).await.unwrap().0, Some(written.clone()));
    match next_item(&mut watch, Duration::from_secs(10)).await {
        Some(WatchItem::Event(e)) => assert_eq!(e.kv, written),
        other => panic!("expected the write, got {other:?}"),
    }

    let without_client_cert = EtcdOptions { cert_file: None, key_file: None, ..options };
    let err = EtcdStore::connect(without_client_cert).await.err().expect("etcd requires a client certificate");
    assert_unavailable(&err, etcd.endpoint(), "get current revision: ");
}

/// Creates `n` keys `<prefix>-<i>` one after the other; the errors.
async fn create_each(store: &EtcdStore, prefix: &str, n: usize) -> Vec<String> {
    let mut errors = Vec::new();
    for i in 0..n {
        if let Err(e) = store.put(&format!("/registry/pods/default/{prefix}-{i}"), b("x"), Expect::Absent).await {
            errors.push(e.to_string());
        }
    }
    errors
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_member_costs_no_request_that_had_not_reached_it() {
    let mut cluster = tokio::task::spawn_blocking(|| EtcdCluster::start(3)).await.unwrap();
    let store = EtcdStore::connect(cluster.options()).await.unwrap();
    // Watches opened one after the other land on every member in turn.
    let mut watches = Vec::new();
    for _ in 0..3 {
        watches.push(store.watch("/registry/pods/", 0).await.unwrap());
    }
    assert_eq!(create_each(&store, "before", 6).await, Vec::<String>::new());

    // A follower is lost: no request fails, reads and writes alike.
    let leader = cluster.leader().expect("a leader");
    let follower = (leader + 1) % 3;
    cluster.member(follower).stop();
    assert_eq!(create_each(&store, "follower-down", 30).await, Vec::<String>::new());
    for i in 0..30 {
        let (kv, _) = store.get(&format!("/registry/pods/default/follower-down-{i}")).await.unwrap();
        assert!(kv.is_some(), "follower-down-{i}");
    }
    // The watch on the lost member ended; watching again from its last revision goes to
    // another member at the first try and misses nothing.
    let mut ended = 0;
    for w in &mut watches {
        let mut last = 0;
        let mut seen = Vec::new();
        let resumed = loop {
            match next_item(w, Duration::from_secs(10)).await {
                Some(WatchItem::Event(e)) => {
                    last = e.kv.mod_revision;
                    seen.push(e.kv.key.clone());
                    if e.kv.key.ends_with("follower-down-29") {
                        break None;
                    }
                }
                Some(WatchItem::Progress(_)) => {}
                Some(WatchItem::Error(e)) => break Some(e),
                None => panic!("the watch closed without an error"),
            }
        };
        if let Some(error) = resumed {
            ended += 1;
            assert!(matches!(error, StorageError::Unavailable { .. }), "{error:?}");
            let mut again = store.watch("/registry/pods/", last).await.expect("watching again at once");
            loop {
                match next_item(&mut again, Duration::from_secs(10)).await {
                    Some(WatchItem::Event(e)) => {
                        seen.push(e.kv.key.clone());
                        if e.kv.key.ends_with("follower-down-29") {
                            break;
                        }
                    }
                    Some(WatchItem::Progress(_)) => {}
                    other => panic!("the resumed watch: {other:?}"),
                }
            }
        }
        let expected: Vec<String> = (0..6)
            .map(|i| format!("/registry/pods/default/before-{i}"))
            .chain((0..30).map(|i| format!("/registry/pods/default/follower-down-{i}")))
            .collect();
        assert_eq!(seen, expected);
    }
    assert_eq!(ended, 1, "exactly the watch on the lost member ended");

    // The follower returns and the leader is lost: writes fail only while the others elect
    // a leader, then succeed while the old one is still down.
    cluster.restart(follower);
    let lost = cluster.leader().expect("a leader");
    cluster.member(lost).stop();
    let started = Instant::now();
    let mut streak = 0;
    let mut i = 0;
    while streak < 30 {
        assert!(started.elapsed() < Duration::from_secs(15), "no run of 30 successful writes within 15 s");
        match store.put(&format!("/registry/pods/default/leader-down-{i}"), b("x"), Expect::Absent).await {
            Ok(_) => streak += 1,
            Err(_) => streak = 0,
        }
        i += 1;
    }
    assert!(cluster.leader().is_some_and(|l| l != lost));
}

/// Concurrent readers of the current revision share etcd requests, yet each answer is at least
/// the revision of every write that finished before its reader asked (a consistent read stays
/// consistent), and later readers never see an older revision.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shared_revision_reads_see_every_write_finished_before_they_asked() {
    let etcd = start_etcd().await;
    let store = etcd.connect().await.unwrap();
    let mut tasks = Vec::new();
    for w in 0..32 {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            let mut last = 0;
            for i in 0..20 {
                let written = store.put(&format!("/registry/r/{w}-{i}"), b("x"), Expect::Absent).await.unwrap();
                let read = store.current_revision().await.unwrap();
                assert!(read >= written.mod_revision, "read {read} before its own write {}", written.mod_revision);
                assert!(read >= last, "read {read} after {last}");
                last = read;
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let writes_after = store.put("/registry/r/last", b("x"), Expect::Absent).await.unwrap().mod_revision;
    assert_eq!(store.current_revision().await.unwrap(), writes_after);
}
