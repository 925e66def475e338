//! What only the embedded store can show: durability across reopen and crashes, torn tails,
//! compaction reclaiming disk, and its bounded watch channels.

use std::fs;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use storage::embedded::{EmbeddedOptions, EmbeddedStore, LOG_FILE};
use storage::{Expect, KeyValue, ListOptions, Revision, Storage, StorageError, WatchItem, WatchStream};

fn open(dir: &Path) -> Arc<EmbeddedStore> {
    EmbeddedStore::open(dir, EmbeddedOptions::default()).expect("open")
}

fn open_with(dir: &Path, options: EmbeddedOptions) -> Arc<EmbeddedStore> {
    EmbeddedStore::open(dir, options).expect("open")
}

async fn all_at(store: &EmbeddedStore, revision: Option<Revision>) -> Vec<KeyValue> {
    store.list("", ListOptions { revision, ..Default::default() }).await.unwrap().items
}

async fn put(store: &EmbeddedStore, key: &str, value: &str, expect: Expect) -> KeyValue {
    store.put(key, Bytes::copy_from_slice(value.as_bytes()), expect).await.unwrap()
}

async fn next_item(w: &mut WatchStream) -> Option<WatchItem> {
    tokio::time::timeout(Duration::from_secs(10), w.items.recv()).await.expect("a watch item in time")
}

fn log_len(dir: &Path) -> u64 {
    fs::metadata(dir.join(LOG_FILE)).unwrap().len()
}

/// Makes exactly one write to `key`: deletes it if `delete` and it exists, else creates or
/// overwrites it.
async fn write_once(store: &EmbeddedStore, key: &str, value: &str, delete: bool) {
    let exists = store.get(key).await.unwrap().0.is_some();
    if exists && delete {
        store.delete(key, None).await.unwrap();
    } else {
        put(store, key, value, if exists { Expect::Exists } else { Expect::Absent }).await;
    }
}

/// Writes a mix of creates, updates and deletes across a few keys, one at a time.
async fn write_history(store: &EmbeddedStore, writes: usize) {
    for i in 0..writes {
        write_once(store, &format!("/registry/configmaps/ns/k{}", i % 4), &format!("value-{i}"), i % 7 == 6).await;
    }
}

#[tokio::test]
async fn reopen_restores_state_and_revisions() {
    let dir = tempfile::tempdir().unwrap();
    let (revision, everything, at_5) = {
        let store = open(dir.path());
        assert_eq!(store.describe(), format!("embedded ({})", dir.path().display()));
        assert_eq!(store.current_revision().await.unwrap(), 1, "an empty store is at revision 1");
        let first = put(&store, "/registry/configmaps/ns/a", "a", Expect::Absent).await;
        assert_eq!(first.mod_revision, 2, "the first write gets revision 2");
        write_history(&store, 30).await;
        let revision = store.current_revision().await.unwrap();
        (revision, all_at(&store, None).await, all_at(&store, Some(5)).await)
    };
    let store = open(dir.path());
    assert_eq!(store.current_revision().await.unwrap(), revision);
    assert_eq!(all_at(&store, None).await, everything);
    assert_eq!(all_at(&store, Some(5)).await, at_5, "history survives reopen");
    let next = put(&store, "/registry/configmaps/ns/after", "x", Expect::Absent).await;
    assert_eq!(next.mod_revision, revision + 1);
    drop(store);
    let store = open(dir.path());
    assert_eq!(store.get("/registry/configmaps/ns/after").await.unwrap(), (Some(next), revision + 1));
}

#[tokio::test]
async fn reopen_replays_watch_history() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = open(dir.path());
        write_history(&store, 10).await;
    }
    let store = open(dir.path());
    let mut w = store.watch("/registry/configmaps/", 1).await.unwrap();
    let mut revisions = Vec::new();
    while revisions.len() < (store.current_revision().await.unwrap() - 1) as usize {
        match next_item(&mut w).await {
            Some(WatchItem::Event(e)) => revisions.push(e.kv.mod_revision),
            other => panic!("{other:?}"),
        }
    }
    let expected: Vec<Revision> = (2..=store.current_revision().await.unwrap()).collect();
    assert_eq!(revisions, expected);
}

/// Makes `n` writes one at a time and returns the log length after the header and after each.
async fn boundaries(store: &EmbeddedStore, dir: &Path, n: usize) -> Vec<u64> {
    let mut ends = vec![log_len(dir)];
    for i in 0..n {
        write_once(store, &format!("/registry/configmaps/ns/k{}", i % 5), &format!("v{i}"), i % 6 == 5).await;
        ends.push(log_len(dir));
    }
    ends
}

/// Opens `bytes` as the log in `dir` and checks it holds exactly the first `records` writes of
/// `original`. With `write_after`, also checks the damaged tail is gone: a new write follows the
/// last good record and survives reopen.
async fn check_recovers(
    dir: &Path,
    bytes: &[u8],
    original: &EmbeddedStore,
    records: usize,
    write_after: bool,
    what: &str,
) {
    fs::write(dir.join(LOG_FILE), bytes).unwrap();
    let store = open(dir);
    let revision = 1 + records as Revision;
    assert_eq!(store.current_revision().await.unwrap(), revision, "{what}: revision");
    assert_eq!(all_at(&store, None).await, all_at(original, Some(revision)).await, "{what}: state");
    if write_after {
        let kv = put(&store, "/registry/configmaps/ns/new", "n", Expect::Absent).await;
        assert_eq!(kv.mod_revision, revision + 1, "{what}: next write");
        drop(store);
        let store = open(dir);
        assert_eq!(store.current_revision().await.unwrap(), revision + 1, "{what}: after reopen");
    }
}

/// Opens `bytes` as the log in `dir` and checks the store refuses to open, leaving the file as
/// it was: damage inside the snapshot the log begins with, or with good records after it, is
/// never a torn write.
fn check_refuses(dir: &Path, bytes: &[u8], what: &str) {
    fs::write(dir.join(LOG_FILE), bytes).unwrap();
    assert!(EmbeddedStore::open(dir, EmbeddedOptions::default()).is_err(), "{what}: opened");
    assert_eq!(fs::read(dir.join(LOG_FILE)).unwrap(), bytes, "{what}: the log was changed");
}

#[tokio::test]
async fn a_torn_tail_is_cut_away_and_damage_before_good_records_refuses_to_open() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let ends = boundaries(&store, dir.path(), 24).await;
    assert_eq!(store.current_revision().await.unwrap(), 25);
    assert!(ends.windows(2).all(|w| w[0] < w[1]), "one record per write: {ends:?}");
    let log = fs::read(dir.path().join(LOG_FILE)).unwrap();
    let total = *ends.last().unwrap();
    assert_eq!(log.len() as u64, total);
    // Records wholly before `offset`.
    let complete = |offset: u64| ends.iter().skip(1).take_while(|&&end| end <= offset).count();
    let mut offsets: Vec<u64> = ends.iter().flat_map(|&e| [e.saturating_sub(1), e, e + 1]).collect();
    offsets.extend((0..ends[1]).step_by(2)); // densely through the header and first record
    offsets.extend((ends[1]..total).step_by(41));
    offsets.retain(|&o| o <= total);
    offsets.sort_unstable();
    offsets.dedup();
    let scratch = tempfile::tempdir().unwrap();
    for &offset in &offsets {
        let what = format!("truncated at {offset}");
        if offset < ends[0] {
            check_refuses(scratch.path(), &log[..offset as usize], &what);
            continue;
        }
        let at_boundary = ends.contains(&offset);
        check_recovers(scratch.path(), &log[..offset as usize], &store, complete(offset), at_boundary, &what).await;
    }
    let last_start = ends[ends.len() - 2];
    for offset in (0..total).step_by(37).chain(last_start..total) {
        let mut flipped = log.clone();
        flipped[offset as usize] ^= 0x20;
        let what = format!("byte flipped at {offset}");
        // Damage with good records after it is not a torn write: the store refuses to open
        // rather than drop them. Only damage in the last record is cut away.
        if offset < last_start {
            check_refuses(scratch.path(), &flipped, &what);
            continue;
        }
        check_recovers(scratch.path(), &flipped, &store, ends.len() - 2, offset % 3 == 0, &what).await;
    }
    // Zeros after the last record: blocks a torn append grew the file over.
    let mut zeros = log.clone();
    zeros.extend_from_slice(&[0; 8192]);
    check_recovers(scratch.path(), &zeros, &store, ends.len() - 1, true, "zeros after the end").await;
}

#[tokio::test]
async fn compaction_shrinks_the_log_and_survives_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let value = "x".repeat(1000);
    let (compacted_at, live, final_rev) = {
        let store = open(dir.path());
        for i in 0..200 {
            let key = format!("/registry/configmaps/ns/k{}", i % 5);
            let expect = if i < 5 { Expect::Absent } else { Expect::Exists };
            put(&store, &key, &format!("{value}{i}"), expect).await;
        }
        let before = log_len(dir.path());
        let at = store.current_revision().await.unwrap();
        store.compact(at).await.unwrap();
        let after = log_len(dir.path());
        assert!(after * 10 < before, "log went from {before} to {after} bytes");
        let live = all_at(&store, None).await;
        // Writes after compaction land in the new log.
        put(&store, "/registry/configmaps/ns/k0", "after", Expect::Exists).await;
        assert!(!dir.path().join(format!("{LOG_FILE}.tmp")).exists());
        (at, live, store.current_revision().await.unwrap())
    };
    let store = open(dir.path());
    assert_eq!(store.compacted_revision().await.unwrap(), compacted_at);
    assert_eq!(store.current_revision().await.unwrap(), final_rev);
    assert_eq!(all_at(&store, Some(compacted_at)).await, live);
    assert_eq!(
        store.list("", ListOptions { revision: Some(compacted_at - 1), ..Default::default() }).await,
        Err(StorageError::Compacted { requested: compacted_at - 1, compacted: compacted_at })
    );
    let mut w = store.watch("/registry/", compacted_at).await.unwrap();
    match next_item(&mut w).await {
        Some(WatchItem::Event(e)) => assert_eq!((e.kv.mod_revision, &e.kv.value[..]), (final_rev, &b"after"[..])),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        store.compact(compacted_at).await,
        Err(StorageError::Compacted { requested: compacted_at, compacted: compacted_at })
    );
    store.compact(final_rev).await.unwrap();
    drop(store);
    let store = open(dir.path());
    assert_eq!(store.compacted_revision().await.unwrap(), final_rev);
    assert_eq!(all_at(&store, None).await.len(), 5);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_sees_only_committed_events() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let mut w = store.watch("/registry/configmaps/", 0).await.unwrap();
    let mut writers = Vec::new();
    for t in 0..8 {
        let store = Arc::clone(&store);
        writers.push(tokio::spawn(async move {
            for i in 0..5 {
                let key = format!("/registry/configmaps/ns/t{t}");
                let expect = if i == 0 { Expect::Absent } else { Expect::Exists };
                store.put(&key, Bytes::from(format!("{i}")), expect).await.unwrap();
                // Failing preconditions write nothing and publish nothing.
                assert!(store.put(&key, Bytes::from("no"), Expect::Absent).await.is_err());
                assert!(store.put(&key, Bytes::from("no"), Expect::ModRevision(1)).await.is_err());
            }
        }));
    }
    let mut seen = Vec::new();
    while seen.len() < 40 {
        let Some(WatchItem::Event(e)) = next_item(&mut w).await else { panic!("expected an event") };
        assert_ne!(&e.kv.value[..], b"no");
        // When an event arrives, its write is already in the log on disk.
        let copy = tempfile::tempdir().unwrap();
        fs::copy(dir.path().join(LOG_FILE), copy.path().join(LOG_FILE)).unwrap();
        let reopened = open(copy.path());
        assert!(reopened.current_revision().await.unwrap() >= e.kv.mod_revision);
        seen.push(e.kv.mod_revision);
    }
    for w in writers {
        w.await.unwrap();
    }
    let expected: Vec<Revision> = (2..42).collect();
    assert_eq!(seen, expected, "every committed write once, in order, nothing else");
}

#[tokio::test]
async fn a_watcher_that_falls_behind_is_cut_off_with_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let store = open_with(dir.path(), EmbeddedOptions { watch_capacity: 4, ..Default::default() });
    let mut slow = store.watch("/registry/", 0).await.unwrap();
    let mut fast = store.watch("/registry/", 0).await.unwrap();
    for i in 0..10 {
        put(&store, &format!("/registry/configmaps/ns/k{i}"), "v", Expect::Absent).await;
        let Some(WatchItem::Event(e)) = next_item(&mut fast).await else { panic!() };
        assert_eq!(e.kv.mod_revision, i + 2);
    }
    for i in 0..4 {
        let Some(WatchItem::Event(e)) = next_item(&mut slow).await else { panic!() };
        assert_eq!(e.kv.mod_revision, i + 2);
    }
    match next_item(&mut slow).await {
        Some(WatchItem::Error(StorageError::Unavailable { message, .. })) => {
            assert!(message.contains("fell behind"), "{message}")
        }
        other => panic!("expected the fell-behind error, got {other:?}"),
    }
    assert!(next_item(&mut slow).await.is_none(), "the stream ends after the error");
    assert_eq!(store.watcher_count(), 1);
}

#[tokio::test]
async fn a_replay_longer_than_the_channel_is_delivered_whole_then_live() {
    let dir = tempfile::tempdir().unwrap();
    let store = open_with(dir.path(), EmbeddedOptions { watch_capacity: 8, ..Default::default() });
    for i in 0..100 {
        put(&store, &format!("/registry/configmaps/ns/k{i:03}"), "v", Expect::Absent).await;
        put(&store, &format!("/registry/secrets/ns/k{i:03}"), "v", Expect::Absent).await;
    }
    let mut w = store.watch("/registry/configmaps/", 1).await.unwrap();
    w.progress.request_progress();
    let mut revisions = Vec::new();
    for _ in 0..100 {
        let Some(WatchItem::Event(e)) = next_item(&mut w).await else { panic!() };
        revisions.push(e.kv.mod_revision);
    }
    assert_eq!(revisions, (0..100).map(|i| 2 + 2 * i).collect::<Vec<_>>());
    assert_eq!(next_item(&mut w).await, Some(WatchItem::Progress(201)), "progress after the replayed events");
    let live = put(&store, "/registry/configmaps/ns/live", "v", Expect::Absent).await;
    let Some(WatchItem::Event(e)) = next_item(&mut w).await else { panic!() };
    assert_eq!(e.kv, live);
}

#[tokio::test]
async fn compaction_overtaking_a_replay_ends_it_with_compacted() {
    let dir = tempfile::tempdir().unwrap();
    let store = open_with(dir.path(), EmbeddedOptions { watch_capacity: 4, ..Default::default() });
    for i in 0..50 {
        put(&store, &format!("/registry/configmaps/ns/k{i:03}"), "v", Expect::Absent).await;
    }
    let mut w = store.watch("/registry/", 1).await.unwrap();
    store.compact(40).await.unwrap();
    let mut events = 0;
    loop {
        match next_item(&mut w).await {
            Some(WatchItem::Event(_)) => events += 1,
            Some(WatchItem::Error(StorageError::Compacted { compacted: 40, .. })) => break,
            other => panic!("{other:?}"),
        }
    }
    assert!(events < 40, "replayed {events} events before the compaction caught up");
    assert!(next_item(&mut w).await.is_none());
}

#[tokio::test]
async fn dropped_watches_are_cleaned_up_on_the_next_commit() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let kept = store.watch("/registry/configmaps/", 0).await.unwrap();
    for _ in 0..5 {
        drop(store.watch("/registry/secrets/", 0).await.unwrap());
    }
    assert_eq!(store.watcher_count(), 6);
    put(&store, "/registry/pods/ns/a", "v", Expect::Absent).await;
    assert_eq!(store.watcher_count(), 1);
    drop(kept);
}

#[tokio::test]
async fn too_large_names_the_limit() {
    let dir = tempfile::tempdir().unwrap();
    let store = open_with(dir.path(), EmbeddedOptions { max_value_size: 10, ..Default::default() });
    assert_eq!(
        store.put("/k", Bytes::from_static(b"0123456789a"), Expect::Absent).await,
        Err(StorageError::TooLarge { key: "/k".into(), size: 11, limit: 10 })
    );
    put(&store, "/k", "0123456789", Expect::Absent).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_writes_get_distinct_contiguous_revisions() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let mut tasks = Vec::new();
    for t in 0..64 {
        let store = Arc::clone(&store);
        tasks.push(tokio::spawn(async move {
            let mut revs = Vec::new();
            for i in 0..10 {
                revs.push(
                    store
                        .put(&format!("/registry/configmaps/ns/{t}-{i}"), Bytes::from("v"), Expect::Absent)
                        .await
                        .unwrap()
                        .mod_revision,
                );
            }
            revs
        }));
    }
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await.unwrap());
    }
    all.sort_unstable();
    assert_eq!(all, (2..642).collect::<Vec<_>>());
    drop(store);
    let store = open(dir.path());
    assert_eq!(store.count("/registry/configmaps/").await.unwrap(), 640);
}

/// The child side of [`acknowledged_writes_survive_kill_9`]: writes until killed, printing each
/// acknowledged write.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "run by acknowledged_writes_survive_kill_9 in a child process"]
async fn crash_child() {
    let Ok(dir) = std::env::var("EMBEDDED_CRASH_DIR") else { return };
    let store = open(Path::new(&dir));
    let mut tasks = Vec::new();
    for t in 0..16 {
        let store = Arc::clone(&store);
        tasks.push(tokio::spawn(async move {
            for i in 0u64.. {
                let key = format!("/registry/configmaps/ns/w{t}");
                let expect = if i == 0 { Expect::Absent } else { Expect::Exists };
                let value = format!("{i}:{}", "p".repeat((i as usize * 37) % 3000));
                let kv = store.put(&key, Bytes::from(value), expect).await.unwrap();
                let mut out = std::io::stdout().lock();
                writeln!(out, "ack {key} {i} {}", kv.mod_revision).unwrap();
                out.flush().unwrap();
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
}

#[tokio::test]
async fn acknowledged_writes_survive_kill_9() {
    let dir = tempfile::tempdir().unwrap();
    for round in 0..3 {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args(["--ignored", "--exact", "crash_child", "--nocapture", "--test-threads=1"])
            .env("EMBEDDED_CRASH_DIR", dir.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut acks = Vec::new();
        let want = 150 + round * 97;
        while acks.len() < want {
            let line = lines.next().expect("the child writes until killed").unwrap();
            if let Some(rest) = line.strip_prefix("ack ") {
                acks.push(rest.to_string());
            }
        }
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        // Acks printed before the kill are acknowledged writes too.
        acks.extend(lines.map_while(Result::ok).filter_map(|l| l.strip_prefix("ack ").map(str::to_string)));

        let store = open(dir.path());
        let now = store.current_revision().await.unwrap();
        for ack in &acks {
            let mut parts = ack.split(' ');
            let (key, i, rev) = (parts.next().unwrap(), parts.next().unwrap(), parts.next().unwrap());
            let rev: Revision = rev.parse().unwrap();
            assert!(rev <= now, "acknowledged revision {rev} beyond recovered {now}");
            let at = store.list(key, ListOptions { revision: Some(rev), ..Default::default() }).await.unwrap();
            let value = &at.items[0].value;
            assert!(value.starts_with(format!("{i}:").as_bytes()), "round {round}: {key} at {rev}");
        }
        // The child restarts numbering at 0 with Expect::Absent: start each round clean. The
        // next round's child then appends to the recovered (and truncated) log.
        for t in 0..16 {
            let _ = store.delete(&format!("/registry/configmaps/ns/w{t}"), None).await;
        }
    }
}

#[tokio::test]
async fn history_past_its_bound_is_compacted_keeping_the_newer_half() {
    let dir = tempfile::tempdir().unwrap();
    let store = open_with(dir.path(), EmbeddedOptions { max_history: 100, ..Default::default() });
    for i in 0..250 {
        put(&store, &format!("/k/{}", i % 10), &format!("v{i}"), if i < 10 { Expect::Absent } else { Expect::Exists })
            .await;
    }
    let current = store.current_revision().await.unwrap();
    let compacted = store.compacted_revision().await.unwrap();
    assert!(compacted > 1, "the store compacted itself");
    assert!(current - compacted <= 100, "at most the bound is kept: {current} - {compacted}");
    assert!(current - compacted >= 50, "the newer half stays: {current} - {compacted}");
    let old = store.list("/k/", ListOptions { revision: Some(compacted - 1), ..Default::default() }).await;
    assert!(matches!(old, Err(StorageError::Compacted { .. })), "{old:?}");
    let latest = all_at(&store, None).await;
    assert_eq!(latest.len(), 10);
    assert_eq!(latest.iter().find(|kv| kv.key == "/k/9").unwrap().value, Bytes::from("v249"));
    drop(store);
    let reopened = open(dir.path());
    assert_eq!(all_at(&reopened, None).await, latest, "the compacted log reopens to the same state");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_answers_once_queued_writes_are_durable_and_refuses_later_ones() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let writers: Vec<_> = (0..64)
        .map(|i| {
            let store = store.clone();
            tokio::spawn(async move {
                let key = format!("/registry/configmaps/ns/c{i}");
                store.put(&key, Bytes::from(format!("v{i}")), Expect::Absent).await.map(|kv| kv.key)
            })
        })
        .collect();
    tokio::task::yield_now().await;
    store.close().await.expect("close");
    let mut acknowledged = Vec::new();
    for writer in writers {
        match writer.await.unwrap() {
            Ok(key) => acknowledged.push(key),
            Err(e) => assert!(matches!(e, StorageError::Unavailable { .. }), "{e:?}"),
        }
    }
    let late = store.put("/registry/configmaps/ns/late", Bytes::from("x"), Expect::Absent).await;
    assert!(matches!(late, Err(StorageError::Unavailable { .. })), "{late:?}");
    store.close().await.expect("a second close returns at once");
    assert_eq!(all_at(&store, None).await.len(), acknowledged.len(), "reads still answer");
    drop(store);
    let keys: Vec<String> = all_at(&open(dir.path()), None).await.into_iter().map(|kv| kv.key).collect();
    acknowledged.sort();
    let mut keys = keys;
    keys.sort();
    assert_eq!(keys, acknowledged, "every acknowledged write, and only those, after reopening");
}
