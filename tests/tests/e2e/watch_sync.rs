//! Informers stay in sync: kube-rs watchers (a reflector, a label-selected watcher, a streaming
//! list started mid-run) and the Python client's watch follow 10,000 changes (creates, updates,
//! label flips, deletes) and each sees exactly what etcd's own history says happened, in order,
//! with no re-list.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures_util::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::runtime::watcher::{self, Event};
use kube::runtime::{WatchStreamExt, reflector};
use serde_json::json;
use storage::etcd::testing::EtcdProcess;
use storage::{EventType, Storage, WatchItem};
use tests::TestServer;
use tokio::sync::mpsc;

const NAMESPACE: &str = "sync";
const CHANGES: usize = 10_000;
const WRITERS: usize = 8;
const NAMES_PER_WRITER: usize = 50;
/// The streaming-list watcher starts once this many changes are done.
const LATE_START: usize = 2_000;

/// What a client saw of one change: `A` (applied: added or modified) or `D`, name, version.
type Seen = (char, String, u64);

/// One change as etcd recorded it.
#[derive(Debug, Clone)]
struct Change {
    kind: EventType,
    name: String,
    revision: u64,
    tier_before: Option<String>,
    tier_after: Option<String>,
}

fn tier(obj: &serde_json::Value) -> Option<String> {
    obj.pointer("/metadata/labels/tier").and_then(|v| v.as_str()).map(String::from)
}

pub(crate) async fn client(kubeconfig: &std::path::Path) -> kube::Client {
    let config = kube::Config::from_custom_kubeconfig(
        Kubeconfig::read_from(kubeconfig).expect("kubeconfig"),
        &KubeConfigOptions::default(),
    )
    .await
    .expect("client config");
    kube::Client::try_from(config).expect("client")
}

fn rv_of(cm: &ConfigMap) -> u64 {
    cm.metadata.resource_version.as_deref().unwrap_or("0").parse().expect("numeric resourceVersion")
}

fn name_of(cm: &ConfigMap) -> String {
    cm.metadata.name.clone().unwrap_or_default()
}

/// What a watcher saw: its init phases (objects listed) and its events, as they came.
#[derive(Default, Debug)]
struct Observed {
    inits: usize,
    /// Completed initial lists: more than one means the watcher started over.
    init_dones: usize,
    initial: Vec<(String, u64)>,
    events: Vec<Seen>,
}

/// Runs a kube-rs watcher, forwarding what it sees; `ready` fires after its first init.
fn spawn_watcher(
    api: Api<ConfigMap>,
    config: watcher::Config,
    ready: tokio::sync::oneshot::Sender<()>,
    out: mpsc::UnboundedSender<Event<ConfigMap>>,
) {
    tokio::spawn(async move {
        let mut ready = Some(ready);
        let mut stream = watcher::watcher(api, config).boxed();
        while let Some(item) = stream.next().await {
            match item {
                Ok(event) => {
                    let done = matches!(event, Event::InitDone);
                    if out.send(event).is_err() {
                        return;
                    }
                    if done && let Some(r) = ready.take() {
                        let _ = r.send(());
                    }
                }
                Err(e) => panic!("kube-rs watcher error: {e}"),
            }
        }
    });
}

/// Drains a watcher's events until one reaches `last` (or the patience runs out).
async fn collect(rx: &mut mpsc::UnboundedReceiver<Event<ConfigMap>>, seen: &mut Observed, last: u64) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(90);
    while seen.events.last().is_none_or(|e| e.2 < last) {
        let event = match tokio::time::timeout_at(deadline, rx.recv()).await {
            Ok(Some(e)) => e,
            Ok(None) => panic!("the watcher ended"),
            Err(_) => panic!("the watcher did not reach {last}; last seen {:?}", seen.events.last()),
        };
        match event {
            Event::Init => seen.inits += 1,
            Event::InitApply(cm) => seen.initial.push((name_of(&cm), rv_of(&cm))),
            Event::InitDone => seen.init_dones += 1,
            Event::Apply(cm) => seen.events.push(('A', name_of(&cm), rv_of(&cm))),
            Event::Delete(cm) => seen.events.push(('D', name_of(&cm), rv_of(&cm))),
        }
    }
}

/// One writer's share of the changes, on names only it touches.
async fn write(api: Api<ConfigMap>, writer: usize, changes: usize, done: Arc<AtomicUsize>) {
    let mut rng: u64 = 0x9E37_79B9_7F4A_7C15 ^ (writer as u64 + 1);
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let mut exists: BTreeMap<usize, bool> = BTreeMap::new();
    for i in 0..changes {
        let slot = (next() as usize) % NAMES_PER_WRITER;
        let name = format!("w{writer}-{slot}");
        let tier = if next() % 2 == 0 { "a" } else { "b" };
        if !exists.get(&slot).copied().unwrap_or(false) {
            let cm: ConfigMap = serde_json::from_value(json!({
                "metadata": { "name": name, "labels": { "tier": tier } },
                "data": { "v": i.to_string() },
            }))
            .unwrap();
            api.create(&PostParams::default(), &cm).await.unwrap_or_else(|e| panic!("create {name}: {e}"));
            exists.insert(slot, true);
        } else {
            match next() % 4 {
                0 => {
                    api.delete(&name, &DeleteParams::default()).await.unwrap_or_else(|e| panic!("delete {name}: {e}"));
                    exists.insert(slot, false);
                }
                1 => {
                    let patch = Patch::Merge(
                        json!({ "metadata": { "labels": { "tier": tier } }, "data": { "v": i.to_string() } }),
                    );
                    api.patch(&name, &PatchParams::default(), &patch)
                        .await
                        .unwrap_or_else(|e| panic!("flip {name}: {e}"));
                }
                _ => {
                    let patch = Patch::Merge(json!({ "data": { "v": i.to_string() } }));
                    api.patch(&name, &PatchParams::default(), &patch)
                        .await
                        .unwrap_or_else(|e| panic!("update {name}: {e}"));
                }
            }
        }
        done.fetch_add(1, Ordering::Relaxed);
    }
}

/// The Python watcher's event lines, once it has printed `count` of them.
async fn python_events(mut child: std::process::Child, count: usize) -> Vec<String> {
    let stdout = child.stdout.take().expect("piped");
    let lines = tokio::task::spawn_blocking(move || {
        use std::io::BufRead;
        std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
            .filter(|l| l != "WATCHING")
            .take(count)
            .collect::<Vec<String>>()
    });
    let lines = tokio::time::timeout(Duration::from_secs(180), lines).await.expect("python kept up").expect("reader");
    let status = child.wait().expect("python exits");
    assert!(status.success(), "python watcher failed after {} events", lines.len());
    lines
}

/// etcd's own record of the namespace's changes after `start`.
async fn history(etcd: &EtcdProcess, start: u64, count: usize) -> Vec<Change> {
    let store = etcd.connect().await.expect("etcd");
    let mut watch = store.watch(&format!("/registry/configmaps/{NAMESPACE}/"), start).await.expect("etcd watch");
    let configmaps = kinds::catalogue().find("", "v1", "configmaps").expect("configmaps are served");
    let mut out = Vec::with_capacity(count);
    while out.len() < count {
        let item = tokio::time::timeout(Duration::from_secs(30), watch.items.recv()).await.expect("etcd history");
        match item.expect("etcd watch open") {
            WatchItem::Event(e) => {
                let now = storage_codec::codec::decode_object(&configmaps, &e.kv).expect("decodes");
                let before =
                    e.prev.as_ref().map(|p| storage_codec::codec::decode_object(&configmaps, p).expect("decodes"));
                out.push(Change {
                    kind: e.kind,
                    name: now["metadata"]["name"].as_str().unwrap_or_default().to_string(),
                    revision: e.kv.mod_revision,
                    tier_before: before.as_ref().and_then(tier),
                    tier_after: if e.kind == EventType::Deleted { None } else { tier(&now) },
                });
            }
            WatchItem::Progress(_) => {}
            WatchItem::Error(e) => panic!("etcd history: {e}"),
        }
    }
    out
}

/// The namespace's state (name → resourceVersion) after the changes before `revision`.
fn state_before(history: &[Change], revision: u64) -> BTreeMap<String, u64> {
    let mut state = BTreeMap::new();
    for c in history.iter().take_while(|c| c.revision < revision) {
        match c.kind {
            EventType::Deleted => state.remove(&c.name),
            _ => state.insert(c.name.clone(), c.revision),
        };
    }
    state
}

fn applied(history: &[Change]) -> Vec<Seen> {
    history.iter().map(|c| (if c.kind == EventType::Deleted { 'D' } else { 'A' }, c.name.clone(), c.revision)).collect()
}

/// What a `tier=a` watcher sees: entering the selection is an add, leaving it a delete.
fn selected(history: &[Change]) -> Vec<Seen> {
    let a = |t: &Option<String>| t.as_deref() == Some("a");
    history
        .iter()
        .filter_map(|c| match (a(&c.tier_before), a(&c.tier_after)) {
            (_, true) => Some(('A', c.name.clone(), c.revision)),
            (true, false) => Some(('D', c.name.clone(), c.revision)),
            (false, false) => None,
        })
        .collect()
}

/// Where two event sequences first differ, for a readable failure.
fn first_difference(got: &[Seen], want: &[Seen]) -> String {
    let at = got.iter().zip(want).position(|(g, w)| g != w).unwrap_or(got.len().min(want.len()));
    format!(
        "{} events seen, {} expected; first difference at {at}: got {:?}, expected {:?}",
        got.len(),
        want.len(),
        got.get(at),
        want.get(at)
    )
}

#[test]
fn informers_and_python_watch_stay_in_sync_through_ten_thousand_changes() {
    let etcd = EtcdProcess::start();
    let s = TestServer::start_with(&["--storage-backend", "etcd3", "--etcd-servers", etcd.endpoint()]);
    s.kubectl_ok(&["create", "namespace", NAMESPACE]);
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    rt.block_on(async {
        let start = etcd.connect().await.expect("etcd").current_revision().await.expect("revision");
        let python = std::process::Command::new(tests::python_bin())
            .arg("-u")
            .arg(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("python/watch_sync.py"))
            .args([s.kubeconfig.to_str().unwrap(), NAMESPACE, &start.to_string(), &CHANGES.to_string()])
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("python");

        let api: Api<ConfigMap> = Api::namespaced(client(&s.kubeconfig).await, NAMESPACE);
        // A reflector over a plain list-then-watch watcher, and a label-selected watcher.
        let (store, writer) = reflector::store::<ConfigMap>();
        let (all_tx, mut all_rx) = mpsc::unbounded_channel();
        let (ready_tx, ready) = tokio::sync::oneshot::channel();
        tokio::spawn({
            let api = api.clone();
            async move {
                let mut ready = Some(ready_tx);
                let mut stream = watcher::watcher(api, watcher::Config::default()).reflect(writer).boxed();
                while let Some(item) = stream.next().await {
                    let event = item.unwrap_or_else(|e| panic!("reflector watcher error: {e}"));
                    let done = matches!(event, Event::InitDone);
                    if all_tx.send(event).is_err() {
                        return;
                    }
                    if done && let Some(r) = ready.take() {
                        let _ = r.send(());
                    }
                }
            }
        });
        ready.await.expect("reflector synced");
        let (tier_tx, mut tier_rx) = mpsc::unbounded_channel();
        let (ready_tx, ready) = tokio::sync::oneshot::channel();
        spawn_watcher(api.clone(), watcher::Config::default().labels("tier=a"), ready_tx, tier_tx);
        ready.await.expect("selected watcher synced");

        let done = Arc::new(AtomicUsize::new(0));
        let writers: Vec<_> =
            (0..WRITERS).map(|w| tokio::spawn(write(api.clone(), w, CHANGES / WRITERS, done.clone()))).collect();
        // A streaming list (WatchList: initial events, then the annotated bookmark) mid-run.
        while done.load(Ordering::Relaxed) < LATE_START {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let (late_tx, mut late_rx) = mpsc::unbounded_channel();
        let (ready_tx, _late_ready) = tokio::sync::oneshot::channel();
        spawn_watcher(api.clone(), watcher::Config::default().streaming_lists(), ready_tx, late_tx);
        for w in writers {
            w.await.expect("writer");
        }

        let history = history(&etcd, start, CHANGES).await;
        let last = history.last().expect("history").revision;

        let mut all = Observed::default();
        collect(&mut all_rx, &mut all, last).await;
        assert_eq!((all.inits, all.init_dones), (1, 1), "the reflector never had to re-list");
        assert!(all.initial.is_empty());
        let want = applied(&history);
        assert!(all.events == want, "reflector: {}", first_difference(&all.events, &want));
        let cached: BTreeMap<String, u64> = store.state().iter().map(|cm| (name_of(cm), rv_of(cm))).collect();
        assert_eq!(cached, state_before(&history, last + 1), "the reflector's store is the final state");

        let want_a = selected(&history);
        let mut tier_a = Observed::default();
        collect(&mut tier_rx, &mut tier_a, want_a.last().expect("some tier=a changes").2).await;
        assert_eq!((tier_a.inits, tier_a.init_dones), (1, 1), "the selected watcher never had to re-list");
        assert!(tier_a.events == want_a, "tier=a watcher: {}", first_difference(&tier_a.events, &want_a));

        let mut late = Observed::default();
        collect(&mut late_rx, &mut late, last).await;
        // kube-rs announces a streaming list's start with no Init event, only its end.
        assert_eq!(late.init_dones, 1, "the streaming list never had to start over");
        let first_live = late.events.first().expect("live events after the streaming list").2;
        let initial: BTreeMap<String, u64> = late.initial.iter().cloned().collect();
        assert_eq!(initial.len(), late.initial.len(), "no object listed twice");
        assert_eq!(
            initial,
            state_before(&history, first_live),
            "the streamed list is the state before its first event"
        );
        let want_late: Vec<Seen> = applied(&history).into_iter().filter(|e| e.2 >= first_live).collect();
        assert!(late.events == want_late, "streaming list: {}", first_difference(&late.events, &want_late));

        let want_py: Vec<String> = history
            .iter()
            .map(|c| {
                let kind = match c.kind {
                    EventType::Added => "ADDED",
                    EventType::Modified => "MODIFIED",
                    EventType::Deleted => "DELETED",
                };
                format!("{kind} {} {}", c.name, c.revision)
            })
            .collect();
        let got_py = python_events(python, CHANGES).await;
        let at = got_py.iter().zip(&want_py).position(|(g, w)| g != w);
        assert!(
            got_py == want_py,
            "python watch: {} events, first difference at {at:?}: got {:?}, expected {:?}",
            got_py.len(),
            at.and_then(|i| got_py.get(i)),
            at.and_then(|i| want_py.get(i))
        );
    });
}
