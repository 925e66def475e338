//! The watch cache's 410 paths, forced with a small window and a compaction, and
//! read-your-writes under concurrency on both backends.

use std::time::Duration;

use futures_util::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ListParams, PostParams, WatchEvent, WatchParams};
use kube::runtime::watcher::{self, Event};
use serde_json::json;
use storage::etcd::testing::EtcdProcess;
use tests::TestServer;

use crate::watch_sync::client;

fn configmap(name: &str) -> ConfigMap {
    serde_json::from_value(json!({ "metadata": { "name": name }, "data": { "k": "v" } })).unwrap()
}

async fn next(events: &mut tokio::sync::mpsc::UnboundedReceiver<Event<ConfigMap>>) -> Event<ConfigMap> {
    let event = tokio::time::timeout(Duration::from_secs(20), events.recv()).await;
    event.expect("an informer event in time").expect("informer running")
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap()
}

/// Writes `n` changes to a namespace nobody watches, moving the resource's window past every
/// earlier revision (the server runs with a window of 10 events and no freshness margin).
async fn churn(api: &Api<ConfigMap>, prefix: &str, n: usize) {
    for i in 0..n {
        api.create(&PostParams::default(), &configmap(&format!("{prefix}-{i}"))).await.expect("churn");
    }
}

#[test]
fn too_old_watches_get_410_and_informers_recover_by_relisting() {
    let s = TestServer::start_with(&["--watch-cache-sizes", "configmaps#10", "--watch-cache-event-freshness", "0s"]);
    s.kubectl_ok(&["create", "namespace", "quiet"]);
    s.kubectl_ok(&["create", "namespace", "busy"]);
    runtime().block_on(async {
        let c = client(&s.kubeconfig).await;
        let quiet: Api<ConfigMap> = Api::namespaced(c.clone(), "quiet");
        let busy: Api<ConfigMap> = Api::namespaced(c, "busy");
        let first = quiet.create(&PostParams::default(), &configmap("first")).await.expect("create");
        let first_rv = first.metadata.resource_version.clone().unwrap();

        // An informer whose watches end every second and resume from their last resourceVersion.
        // It asks for no bookmarks: one before each watch's end would move its resume point
        // past the churn below, sparing it the 410 this case is about.
        let (tx, mut events) = tokio::sync::mpsc::unbounded_channel();
        let quiet_informer = quiet.clone();
        // Its errors (the 410 among them) are what kube-rs hands an informer before it
        // re-lists; the events are what the informer acts on.
        let informer = tokio::spawn(async move {
            let mut stream =
                watcher::watcher(quiet_informer, watcher::Config::default().timeout(1).disable_bookmarks()).boxed();
            while let Some(item) = stream.next().await {
                match item {
                    Ok(e) => {
                        if tx.send(e).is_err() {
                            return;
                        }
                    }
                    // A watcher without backoff retries at once, and once the runtime shuts
                    // down every retry fails at once: yielding lets the abort and the
                    // shutdown land instead of spinning here for ever.
                    Err(_) => tokio::task::yield_now().await,
                }
            }
        });
        assert!(matches!(next(&mut events).await, Event::Init));
        assert!(
            matches!(next(&mut events).await, Event::InitApply(cm) if cm.metadata.name.as_deref() == Some("first"))
        );
        assert!(matches!(next(&mut events).await, Event::InitDone));

        churn(&busy, "churn", 30).await;
        let compacted = s.compact();
        assert!(compacted["backends"][0]["compactedRevision"].as_u64().is_some(), "{compacted}");

        // A watch from before the window and the compaction: HTTP 200, then one ERROR event
        // carrying a 410 Expired Status, then the end of the stream.
        let mut watch = quiet.watch(&WatchParams::default(), &first_rv).await.expect("watch accepted").boxed();
        match watch.next().await {
            Some(Ok(WatchEvent::Error(status))) => {
                assert_eq!((status.code, status.reason.as_str()), (410, "Expired"), "{status:?}");
                assert!(status.message.starts_with(&format!("too old resource version: {first_rv} (")), "{status:?}");
            }
            other => panic!("expected an ERROR event with 410, got {other:?}"),
        }
        assert!(watch.next().await.is_none(), "the watch ends after its 410");

        // An exact list at the compacted revision is 410 too, answered by storage.
        let lp = ListParams::default().at(&first_rv).matching(kube::api::VersionMatch::Exact);
        match quiet.list(&lp).await {
            Err(kube::Error::Api(status)) => assert_eq!((status.code, status.reason.as_str()), (410, "Expired")),
            other => panic!("expected 410 for an exact list at a compacted revision, got {other:?}"),
        }

        // The informer's next watch resumes from a revision the window no longer holds: it
        // gets 410, re-lists, and follows new changes again.
        let relisted = tokio::time::timeout(Duration::from_secs(20), async {
            loop {
                if matches!(next(&mut events).await, Event::Init) {
                    return;
                }
            }
        })
        .await;
        assert!(relisted.is_ok(), "the informer re-listed after its resume point expired");
        assert!(
            matches!(next(&mut events).await, Event::InitApply(cm) if cm.metadata.name.as_deref() == Some("first"))
        );
        assert!(matches!(next(&mut events).await, Event::InitDone));
        quiet.create(&PostParams::default(), &configmap("second")).await.expect("create");
        loop {
            match next(&mut events).await {
                Event::Apply(cm) if cm.metadata.name.as_deref() == Some("second") => break,
                Event::Apply(_) => continue,
                other => panic!("expected the new object after the re-list, got {other:?}"),
            }
        }
        informer.abort();
    });
}

/// Eight writers each create objects and list right after every 2xx: the list (no
/// resourceVersion, a consistent read) always holds the write.
fn read_your_writes(s: &TestServer) {
    s.kubectl_ok(&["create", "namespace", "ryw"]);
    runtime().block_on(async {
        let api: Api<ConfigMap> = Api::namespaced(client(&s.kubeconfig).await, "ryw");
        let tasks: Vec<_> = (0..8)
            .map(|w| {
                let api = api.clone();
                tokio::spawn(async move {
                    for i in 0..50 {
                        let name = format!("w{w}-{i}");
                        let created = api.create(&PostParams::default(), &configmap(&name)).await.expect("create");
                        let list = api.list(&ListParams::default()).await.expect("list");
                        let found = list.items.iter().find(|cm| cm.metadata.name.as_deref() == Some(name.as_str()));
                        assert_eq!(
                            found.and_then(|cm| cm.metadata.resource_version.clone()),
                            created.metadata.resource_version,
                            "a list right after creating {name} shows it"
                        );
                        let list_rv: u64 = list.metadata.resource_version.unwrap().parse().unwrap();
                        let created_rv: u64 = created.metadata.resource_version.unwrap().parse().unwrap();
                        assert!(list_rv >= created_rv, "the list is at or after the write");
                    }
                })
            })
            .collect();
        for t in tasks {
            t.await.expect("writer");
        }
    });
}

#[test]
fn reads_see_own_writes_under_concurrency_on_the_embedded_store() {
    read_your_writes(&TestServer::start());
}

#[test]
fn reads_see_own_writes_under_concurrency_on_etcd() {
    let etcd = EtcdProcess::start();
    read_your_writes(&TestServer::start_with(&["--storage-backend", "etcd3", "--etcd-servers", etcd.endpoint()]));
}
