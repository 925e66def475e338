//! The one storage conformance suite, the role of k8s.io/apiserver's
//! `storage/testing/store_tests.go`: every backend (embedded, etcd) and the cacher's read path
//! must pass it unchanged.
//!
//! Each case is a public async function taking the store under test. A backend's test file is
//! one line, [`conformance_tests!`](crate::conformance_tests), given an async function (or
//! closure) returning a [`Fixture`]; it expands to one `#[tokio::test]` per case in a
//! `conformance` module:
//!
//! ```ignore
//! async fn fresh_store() -> storage::conformance::Fixture {
//!     let dir = tempfile::tempdir().unwrap();
//!     let store = EmbeddedStore::open(dir.path(), EmbeddedOptions::default()).unwrap();
//!     Fixture::with_guard(store, dir)
//! }
//! storage::conformance_tests!(fresh_store);
//! ```
//!
//! Every case writes only under its own key prefix (a fresh UUID under
//! `/registry/configmaps/`), so cases can share one etcd. They do assert exact revisions, which
//! assumes no other writer moves the store's global revision while a case runs, and the
//! compaction cases compact the whole store: on a shared store, serialize the cases (the
//! fixture's `guard` can hold a lock for that).
//!
//! The size limit case assumes the default limit of 1.5 MiB ([`MAX_VALUE_SIZE`]), etcd's
//! `--max-request-bytes` default.

use std::any::Any;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;

use crate::{Event, EventType, Expect, KeyValue, ListOptions, Revision, Storage, StorageError, WatchItem, WatchStream};

/// The value size limit the suite expects the backend to enforce (etcd's default).
pub const MAX_VALUE_SIZE: usize = 1_572_864;

/// How long a case waits for a watch item before failing.
const ITEM_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a case waits to be sure no further watch item comes.
const QUIET: Duration = Duration::from_millis(150);

/// A store for one case, with whatever must live as long as it.
pub struct Fixture {
    /// The store under test.
    pub store: Arc<dyn Storage>,
    /// Kept until the case ends: a temp dir, or a lock serializing cases on a shared etcd.
    pub guard: Box<dyn Any + Send + Sync>,
}

impl Fixture {
    /// A fixture needing nothing kept alive.
    pub fn new(store: Arc<dyn Storage>) -> Self {
        Fixture { store, guard: Box::new(()) }
    }

    /// A fixture that keeps `guard` until the case ends.
    pub fn with_guard(store: Arc<dyn Storage>, guard: impl Any + Send + Sync) -> Self {
        Fixture { store, guard: Box::new(guard) }
    }
}

/// Expands to one `#[tokio::test]` per conformance case, in a module named `conformance`.
/// `$factory` is an async function or closure returning a [`Fixture`] for a fresh case; the
/// module glob-imports its parent, so a factory defined beside the macro call resolves.
#[macro_export]
macro_rules! conformance_tests {
    ($factory:expr) => {
        $crate::conformance_tests!(@cases $factory;
            create_get_update_delete,
            create_after_delete,
            list_at_past_revision,
            paging_at_fixed_revision_while_writing,
            count,
            watch_orders_events_under_prefix,
            watch_from_past_revision_replays_exactly,
            watch_from_compacted_revision_fails,
            list_at_compacted_revision_fails,
            future_revision_fails,
            compaction_keeps_latest_versions,
            compaction_turns_are_taken_once_per_interval,
            concurrent_guaranteed_updates_lose_nothing,
            value_size_limit,
            progress_after_events,
            dropped_watch_does_not_disturb_others,
            keys_with_a_ttl_expire,
        );
    };
    (@cases $factory:expr; $($case:ident),* $(,)?) => {
        /// The storage conformance suite, one test per case.
        mod conformance {
            #[allow(unused_imports)]
            use super::*;
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $case() {
                    let fixture: $crate::conformance::Fixture = ($factory)().await;
                    $crate::conformance::$case(::std::sync::Arc::clone(&fixture.store)).await;
                    drop(fixture);
                }
            )*
        }
    };
}

/// A key prefix no other case uses, ending in `/`.
fn unique_prefix() -> String {
    format!("/registry/configmaps/conformance-{}/", uuid::Uuid::new_v4().simple())
}

/// `prefix` without its trailing slash plus `-sibling/`: a prefix that shares every character
/// of `prefix` but the slash, to prove prefix reads stop at the boundary.
fn sibling(prefix: &str) -> String {
    format!("{}-sibling/", prefix.trim_end_matches('/'))
}

/// Bytes from a string.
fn b(s: &str) -> Bytes {
    Bytes::copy_from_slice(s.as_bytes())
}

/// Puts and expects success.
async fn put(store: &Arc<dyn Storage>, key: &str, value: &str, expect: Expect) -> KeyValue {
    store.put(key, b(value), expect).await.unwrap_or_else(|e| panic!("put {key} ({expect:?}): {e}"))
}

/// Lists everything under `prefix` at `revision`.
async fn list_at(store: &Arc<dyn Storage>, prefix: &str, revision: Option<Revision>) -> Vec<KeyValue> {
    let opts = ListOptions { revision, ..Default::default() };
    let result = store.list(prefix, opts).await.unwrap_or_else(|e| panic!("list {prefix} at {revision:?}: {e}"));
    assert!(!result.more && result.remaining == 0, "an unlimited list returns everything");
    result.items
}

/// The next item on a watch, failing the case if none comes in time.
async fn next_item(w: &mut WatchStream) -> WatchItem {
    match tokio::time::timeout(ITEM_TIMEOUT, w.items.recv()).await {
        Ok(Some(item)) => item,
        Ok(None) => panic!("watch closed while an item was expected"),
        Err(_) => panic!("no watch item within {ITEM_TIMEOUT:?}"),
    }
}

/// The next item on a watch, which must be an event.
async fn next_event(w: &mut WatchStream) -> Event {
    match next_item(w).await {
        WatchItem::Event(e) => e,
        other => panic!("expected an event, got {other:?}"),
    }
}

/// Fails if the watch delivers anything soon.
async fn assert_quiet(w: &mut WatchStream) {
    if let Ok(item) = tokio::time::timeout(QUIET, w.items.recv()).await {
        panic!("expected no watch item, got {item:?}");
    }
}

/// Asserts an event's kind, key, revision and previous value.
fn assert_event(e: &Event, kind: EventType, kv: &KeyValue, prev: Option<&KeyValue>) {
    assert_eq!(e.kind, kind, "event kind of {e:?}");
    assert_eq!(&e.kv, kv, "event key-value");
    assert_eq!(e.prev.as_ref(), prev, "event previous value");
}

/// Create, get, update and delete, with every precondition outcome; failed writes do not move
/// the revision.
pub async fn create_get_update_delete(store: Arc<dyn Storage>) {
    let p = unique_prefix();
    let key = format!("{p}a");
    let r0 = store.current_revision().await.unwrap();
    assert_eq!(store.get(&key).await.unwrap(), (None, r0), "absent key reads as None at the current revision");

    let created = put(&store, &key, "v1", Expect::Absent).await;
    assert_eq!(
        created,
        KeyValue { key: key.clone(), value: b("v1"), create_revision: r0 + 1, mod_revision: r0 + 1, stale: false }
    );
    assert_eq!(store.get(&key).await.unwrap(), (Some(created.clone()), r0 + 1));

    assert_eq!(store.put(&key, b("x"), Expect::Absent).await, Err(StorageError::AlreadyExists { key: key.clone() }));
    assert_eq!(
        store.put(&key, b("x"), Expect::ModRevision(r0)).await,
        Err(StorageError::Conflict { key: key.clone(), current: Some(Box::new(created.clone())) })
    );

    let updated = put(&store, &key, "v2", Expect::ModRevision(r0 + 1)).await;
    assert_eq!(
        updated,
        KeyValue { key: key.clone(), value: b("v2"), create_revision: r0 + 1, mod_revision: r0 + 2, stale: false }
    );
    let overwritten = put(&store, &key, "v3", Expect::Exists).await;
    assert_eq!(overwritten, KeyValue { value: b("v3"), mod_revision: r0 + 3, ..updated.clone() });
    assert_eq!(store.current_revision().await.unwrap(), r0 + 3, "failed writes do not advance the revision");

    let missing = format!("{p}missing");
    let not_found = StorageError::NotFound { key: missing.clone() };
    assert_eq!(store.put(&missing, b("x"), Expect::ModRevision(r0 + 1)).await, Err(not_found.clone()));
    assert_eq!(store.put(&missing, b("x"), Expect::Exists).await, Err(not_found.clone()));
    assert_eq!(store.delete(&missing, None).await, Err(not_found.clone()));
    assert_eq!(store.delete(&missing, Some(r0 + 1)).await, Err(not_found));

    assert_eq!(
        store.delete(&key, Some(r0 + 2)).await,
        Err(StorageError::Conflict { key: key.clone(), current: Some(Box::new(overwritten.clone())) })
    );
    assert_eq!(store.current_revision().await.unwrap(), r0 + 3);
    assert_eq!(store.delete(&key, Some(r0 + 3)).await, Ok((overwritten, r0 + 4)));
    assert_eq!(store.get(&key).await.unwrap(), (None, r0 + 4));
    assert_eq!(store.delete(&key, None).await, Err(StorageError::NotFound { key: key.clone() }));

    let other = format!("{p}b");
    let b1 = put(&store, &other, "b", Expect::Absent).await;
    assert_eq!(b1.mod_revision, r0 + 5);
    assert_eq!(store.delete(&other, None).await, Ok((b1, r0 + 6)), "unconditional delete");
    assert_eq!(store.current_revision().await.unwrap(), r0 + 6);
}

/// A key deleted and created again starts over: a new create revision, and reads at the old
/// revisions still see the old incarnation.
pub async fn create_after_delete(store: Arc<dyn Storage>) {
    let p = unique_prefix();
    let key = format!("{p}a");
    let first = put(&store, &key, "one", Expect::Absent).await;
    let (_, deleted_at) = store.delete(&key, Some(first.mod_revision)).await.unwrap();
    assert_eq!(deleted_at, first.mod_revision + 1);
    assert_eq!(store.put(&key, b("x"), Expect::Exists).await, Err(StorageError::NotFound { key: key.clone() }));
    let second = put(&store, &key, "two", Expect::Absent).await;
    assert_eq!(second.create_revision, deleted_at + 1, "a re-created key has a new create revision");
    assert_eq!(second.mod_revision, deleted_at + 1);
    assert_eq!(store.get(&key).await.unwrap(), (Some(second.clone()), second.mod_revision));
    assert_eq!(list_at(&store, &p, Some(first.mod_revision)).await, [first]);
    assert_eq!(list_at(&store, &p, Some(deleted_at)).await, []);
    assert_eq!(list_at(&store, &p, None).await, [second]);
}

/// Lists at past revisions see each key as it was then, and stop at the prefix boundary.
pub async fn list_at_past_revision(store: Arc<dyn Storage>) {
    let p = unique_prefix();
    let outside = format!("{}a", sibling(&p));
    let a1 = put(&store, &format!("{p}a"), "a1", Expect::Absent).await;
    let b1 = put(&store, &format!("{p}b"), "b1", Expect::Absent).await;
    put(&store, &outside, "x", Expect::Absent).await;
    let a2 = put(&store, &a1.key, "a2", Expect::ModRevision(a1.mod_revision)).await;
    let (_, b_deleted) = store.delete(&b1.key, None).await.unwrap();
    let c1 = put(&store, &format!("{p}c"), "c1", Expect::Absent).await;

    assert_eq!(list_at(&store, &p, Some(a1.mod_revision - 1)).await, []);
    assert_eq!(list_at(&store, &p, Some(a1.mod_revision)).await, std::slice::from_ref(&a1));
    assert_eq!(list_at(&store, &p, Some(b1.mod_revision)).await, [a1.clone(), b1.clone()]);
    assert_eq!(list_at(&store, &p, Some(a2.mod_revision)).await, [a2.clone(), b1.clone()]);
    assert_eq!(list_at(&store, &p, Some(b_deleted)).await, std::slice::from_ref(&a2));
    assert_eq!(list_at(&store, &p, None).await, [a2.clone(), c1.clone()]);

    let at = store.list(&p, ListOptions { revision: Some(b1.mod_revision), ..Default::default() }).await.unwrap();
    assert_eq!(at.revision, b1.mod_revision, "a list reports the revision it was served at");
    let now = store.list(&p, ListOptions::default()).await.unwrap();
    assert_eq!(now.revision, store.current_revision().await.unwrap());
    assert_eq!(now.revision, c1.mod_revision);
}

/// Paging with `start` and `limit` at a fixed revision is consistent while writes go on, and
/// `more` and `remaining` are exact.
pub async fn paging_at_fixed_revision_while_writing(store: Arc<dyn Storage>) {
    let p = unique_prefix();
    let mut all = Vec::new();
    for i in 0..10 {
        all.push(put(&store, &format!("{p}k{i:02}"), &format!("v{i}"), Expect::Absent).await);
    }
    put(&store, &format!("{}k00", sibling(&p)), "outside", Expect::Absent).await;

    let first = store.list(&p, ListOptions { limit: 3, ..Default::default() }).await.unwrap();
    let at = first.revision;
    assert_eq!(at, store.current_revision().await.unwrap());
    let mut pages = vec![(first.items, first.more, first.remaining)];
    let mut start = format!("{}\0", pages[0].0.last().unwrap().key);
    for round in 0.. {
        // Writes between pages: a key inside the next page, a delete, an update, a new key.
        put(&store, &format!("{p}k0{round}a"), "new", Expect::Absent).await;
        store.delete(&all[9 - round].key, None).await.unwrap();
        put(&store, &all[round].key, "changed", Expect::Exists).await;
        let page =
            store.list(&p, ListOptions { revision: Some(at), start: Some(start.clone()), limit: 3 }).await.unwrap();
        assert_eq!(page.revision, at);
        let more = page.more;
        if let Some(last) = page.items.last() {
            start = format!("{}\0", last.key);
        }
        pages.push((page.items, page.more, page.remaining));
        if !more {
            break;
        }
    }
    let shape: Vec<(usize, bool, u64)> = pages.iter().map(|(items, more, rem)| (items.len(), *more, *rem)).collect();
    assert_eq!(shape, [(3, true, 7), (3, true, 4), (3, true, 1), (1, false, 0)]);
    let paged: Vec<KeyValue> = pages.into_iter().flat_map(|(items, _, _)| items).collect();
    assert_eq!(paged, all, "pages read at a fixed revision see exactly the keys at that revision");

    let past_end =
        store.list(&p, ListOptions { revision: Some(at), start: Some(format!("{p}z")), limit: 3 }).await.unwrap();
    assert_eq!((past_end.items.len(), past_end.more, past_end.remaining), (0, false, 0));
    let from_middle =
        store.list(&p, ListOptions { revision: Some(at), start: Some(all[4].key.clone()), limit: 0 }).await.unwrap();
    assert_eq!(from_middle.items, all[4..], "start is inclusive; limit 0 means all");
}

/// Count sees live keys under the prefix only.
pub async fn count(store: Arc<dyn Storage>) {
    let p = unique_prefix();
    assert_eq!(store.count(&p).await.unwrap(), 0);
    for name in ["a", "b", "c"] {
        put(&store, &format!("{p}{name}"), name, Expect::Absent).await;
    }
    put(&store, &format!("{}a", sibling(&p)), "x", Expect::Absent).await;
    store.delete(&format!("{p}b"), None).await.unwrap();
    put(&store, &format!("{p}a"), "a2", Expect::Exists).await;
    assert_eq!(store.count(&p).await.unwrap(), 2);
    assert_eq!(store.count(&format!("{p}a")).await.unwrap(), 1);
}

/// A watch from now delivers every later change under its prefix, across keys, in revision
/// order, with previous values; nothing from other prefixes.
pub async fn watch_orders_events_under_prefix(store: Arc<dyn Storage>) {
    let p = unique_prefix();
    let outside = sibling(&p);
    let before = put(&store, &format!("{p}before"), "x", Expect::Absent).await;
    let mut w = store.watch(&p, 0).await.unwrap();

    let a1 = put(&store, &format!("{p}a"), "a1", Expect::Absent).await;
    let b1 = put(&store, &format!("{p}b"), "b1", Expect::Absent).await;
    put(&store, &format!("{outside}a"), "x", Expect::Absent).await;
    let a2 = put(&store, &a1.key, "a2", Expect::ModRevision(a1.mod_revision)).await;
    let (b_last, b_deleted) = store.delete(&b1.key, None).await.unwrap();
    let (_, before_deleted) = store.delete(&before.key, None).await.unwrap();
    store.delete(&format!("{outside}a"), None).await.unwrap();
    let c1 = put(&store, &format!("{p}c"), "c1", Expect::Absent).await;

    assert_event(&next_event(&mut w).await, EventType::Added, &a1, None);
    assert_event(&next_event(&mut w).await, EventType::Added, &b1, None);
    assert_event(&next_event(&mut w).await, EventType::Modified, &a2, Some(&a1));
    let deleted_b = KeyValue { mod_revision: b_deleted, ..b_last.clone() };
    assert_event(&next_event(&mut w).await, EventType::Deleted, &deleted_b, Some(&b_last));
    let deleted_before = KeyValue { mod_revision: before_deleted, ..before.clone() };
    assert_event(&next_event(&mut w).await, EventType::Deleted, &deleted_before, Some(&before));
    assert_event(&next_event(&mut w).await, EventType::Added, &c1, None);
    assert_quiet(&mut w).await;
}

/// A watch from a past revision replays exactly the events after it, then goes on live.
pub async fn watch_from_past_revision_replays_exactly(store: Arc<dyn Storage>) {
    let p = unique_prefix();
    let outside = sibling(&p);
    let mut written = Vec::new();
    for i in 0..6 {
        let expect = if i < 3 { Expect::Absent } else { Expect::Exists };
        written.push(put(&store, &format!("{p}k{}", i % 3), &format!("v{i}"), expect).await);
        put(&store, &format!("{outside}k{i}"), "x", Expect::Absent).await;
    }
    let from = written[2].mod_revision;
    let mut w = store.watch(&p, from).await.unwrap();
    for kv in &written[3..] {
        let e = next_event(&mut w).await;
        assert_eq!(e.kind, EventType::Modified);
        assert_eq!(&e.kv, kv);
    }
    assert_quiet(&mut w).await;
    let live = put(&store, &format!("{p}k9"), "live", Expect::Absent).await;
    assert_event(&next_event(&mut w).await, EventType::Added, &live, None);

    // From the current revision: nothing to replay.
    let now = store.current_revision().await.unwrap();
    let mut w2 = store.watch(&p, now).await.unwrap();
    assert_quiet(&mut w2).await;
    let later = put(&store, &format!("{p}k9"), "later", Expect::Exists).await;
    assert_event(&next_event(&mut w2).await, EventType::Modified, &later, Some(&live));
    assert_event(&next_event(&mut w).await, EventType::Modified, &later, Some(&live));
}

/// Writes `n` changes under `p` and returns the revision of the last.
async fn write_some(store: &Arc<dyn Storage>, p: &str, n: usize) -> Revision {
    let mut last = 0;
    for i in 0..n {
        last = put(
            store,
            &format!("{p}k{}", i % 2),
            &format!("v{i}"),
            if i < 2 { Expect::Absent } else { Expect::Exists },
        )
        .await
        .mod_revision;
    }
    last
}

/// A watch that needs compacted history fails with `Compacted`; one from the compacted revision
/// works.
pub async fn watch_from_compacted_revision_fails(store: Arc<dyn Storage>) {
    let p = unique_prefix();
    let r0 = store.current_revision().await.unwrap();
    let last = write_some(&store, &p, 6).await;
    assert_eq!(last, r0 + 6);
    store.compact(r0 + 5).await.unwrap();
    match store.watch(&p, r0 + 1).await {
        Err(StorageError::Compacted { requested, compacted }) => {
            assert_eq!(compacted, r0 + 5);
            assert!(requested <= r0 + 2, "requested {requested}");
        }
        Err(e) => panic!("expected Compacted, got {e}"),
        Ok(_) => panic!("expected Compacted, got a watch"),
    }
    let mut w = store.watch(&p, r0 + 5).await.unwrap();
    let e = next_event(&mut w).await;
    assert_eq!(e.kv.mod_revision, r0 + 6);
    assert_quiet(&mut w).await;
}

/// Reads below the compacted revision fail with `Compacted`, at it they work; compacting at or
/// below it again fails with `Compacted`.
pub async fn list_at_compacted_revision_fails(store: Arc<dyn Storage>) {
    let p = unique_prefix();
    let r0 = store.current_revision().await.unwrap();
    write_some(&store, &p, 5).await;
    let at = r0 + 4;
    store.compact(at).await.unwrap();
    assert_eq!(store.compacted_revision().await.unwrap(), at);
    let opts = |revision| ListOptions { revision: Some(revision), ..Default::default() };
    assert_eq!(store.list(&p, opts(r0 + 1)).await, Err(StorageError::Compacted { requested: r0 + 1, compacted: at }));
    assert_eq!(store.list(&p, opts(at - 1)).await, Err(StorageError::Compacted { requested: at - 1, compacted: at }));
    let at_compacted = store.list(&p, opts(at)).await.unwrap();
    assert_eq!(at_compacted.revision, at);
    assert_eq!(at_compacted.items.len(), 2);
    assert_eq!(store.compact(at).await, Err(StorageError::Compacted { requested: at, compacted: at }));
    assert_eq!(store.compact(at - 1).await, Err(StorageError::Compacted { requested: at - 1, compacted: at }));
    assert_eq!(store.compacted_revision().await.unwrap(), at);
}

/// Reads and compactions at a revision not yet written fail with `FutureRevision`.
pub async fn future_revision_fails(store: Arc<dyn Storage>) {
    let p = unique_prefix();
    let now = write_some(&store, &p, 2).await;
    let future = now + 10;
    let opts = ListOptions { revision: Some(future), ..Default::default() };
    assert_eq!(store.list(&p, opts).await, Err(StorageError::FutureRevision { requested: future, current: now }));
    assert_eq!(store.compact(future).await, Err(StorageError::FutureRevision { requested: future, current: now }));
    assert_eq!(store.current_revision().await.unwrap(), now);
}

/// Two servers taking compaction turns on one store: whoever writes first in an interval
/// compacts, to the revision of its previous turn; the other finds the key moved and waits.
/// The key holds the revision in decimal, as kube-apiserver writes it.
pub async fn compaction_turns_are_taken_once_per_interval(store: Arc<dyn Storage>) {
    use crate::compactor::{Compactor, Turn};
    let p = unique_prefix();
    let key = format!("{p}compact_rev_key");
    let (mut a, mut b) = (Compactor::new(&key), Compactor::new(&key));
    assert_eq!(a.take_turn(store.as_ref()).await.unwrap(), Turn::Won(0), "nothing compacted at start-up");
    let first = store.get(&key).await.unwrap().0.unwrap();
    assert_eq!(first.value, "0");
    assert_eq!(b.take_turn(store.as_ref()).await.unwrap(), Turn::Lost);
    // The next interval: b moves first this time, and compacts to what it saw at its last turn.
    let before = write_some(&store, &p, 3).await;
    let Turn::Won(target) = b.take_turn(store.as_ref()).await.unwrap() else { panic!("b moved first") };
    assert_eq!(a.take_turn(store.as_ref()).await.unwrap(), Turn::Lost, "one compaction per interval");
    assert!(first.mod_revision <= target && target < before, "{} <= {target} < {before}", first.mod_revision);
    assert!(store.compacted_revision().await.unwrap() >= target);
    let written = store.get(&key).await.unwrap().0.unwrap();
    assert_eq!(written.value, target.to_string(), "the revision in decimal, as kube writes it");
    // And the interval after: a's guard is b's write, so a wins.
    assert!(matches!(a.take_turn(store.as_ref()).await.unwrap(), Turn::Won(_)));
}

/// Compaction keeps the latest version of every live key readable, with its revisions, at the
/// compacted revision and after; writes go on from the same revision.
pub async fn compaction_keeps_latest_versions(store: Arc<dyn Storage>) {
    let p = unique_prefix();
    let a1 = put(&store, &format!("{p}a"), "a1", Expect::Absent).await;
    let b1 = put(&store, &format!("{p}b"), "b1", Expect::Absent).await;
    let c1 = put(&store, &format!("{p}c"), "c1", Expect::Absent).await;
    let a2 = put(&store, &a1.key, "a2", Expect::Exists).await;
    let a3 = put(&store, &a1.key, "a3", Expect::Exists).await;
    store.delete(&c1.key, None).await.unwrap();
    let now = store.current_revision().await.unwrap();
    store.compact(now).await.unwrap();
    assert_eq!(store.compacted_revision().await.unwrap(), now);

    assert_eq!(list_at(&store, &p, None).await, [a3.clone(), b1.clone()]);
    assert_eq!(list_at(&store, &p, Some(now)).await, [a3.clone(), b1.clone()]);
    assert_eq!(store.get(&a1.key).await.unwrap(), (Some(a3.clone()), now));
    assert_eq!(store.get(&c1.key).await.unwrap(), (None, now));
    assert_eq!(store.count(&p).await.unwrap(), 2);
    assert_eq!(a3.create_revision, a1.create_revision);
    assert_ne!(a2, a3);

    let a4 = put(&store, &a1.key, "a4", Expect::ModRevision(a3.mod_revision)).await;
    assert_eq!(a4.mod_revision, now + 1);
    assert_eq!(a4.create_revision, a1.create_revision);
    let c2 = put(&store, &c1.key, "c2", Expect::Absent).await;
    assert_eq!(c2.create_revision, now + 2);
}

/// Fifty concurrent guaranteed-update loops incrementing one counter lose no update.
pub async fn concurrent_guaranteed_updates_lose_nothing(store: Arc<dyn Storage>) {
    const WORKERS: usize = 50;
    const INCREMENTS: usize = 4;
    let p = unique_prefix();
    let key = format!("{p}counter");
    let created = put(&store, &key, "0", Expect::Absent).await;
    let mut tasks = Vec::new();
    for _ in 0..WORKERS {
        let store = Arc::clone(&store);
        let key = key.clone();
        tasks.push(tokio::spawn(async move {
            let mut conflicts = 0usize;
            for _ in 0..INCREMENTS {
                let mut current = store.get(&key).await.unwrap().0.expect("counter exists");
                loop {
                    let n: u64 = std::str::from_utf8(&current.value).unwrap().parse().unwrap();
                    let next = Bytes::from((n + 1).to_string());
                    match store.put(&key, next, Expect::ModRevision(current.mod_revision)).await {
                        Ok(_) => break,
                        Err(StorageError::Conflict { current: Some(now), .. }) => {
                            conflicts += 1;
                            current = *now;
                        }
                        Err(StorageError::Conflict { current: None, .. }) => {
                            conflicts += 1;
                            current = store.get(&key).await.unwrap().0.expect("counter exists");
                        }
                        Err(e) => panic!("guaranteed update failed: {e}"),
                    }
                }
            }
            conflicts
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    let (last, _) = store.get(&key).await.unwrap();
    let last = last.unwrap();
    let total = (WORKERS * INCREMENTS) as u64;
    assert_eq!(last.value, Bytes::from(total.to_string()));
    assert_eq!(last.mod_revision, created.mod_revision + total, "exactly one write per increment");
    assert_eq!(last.create_revision, created.create_revision);
}

/// Values just under the 1.5 MiB limit are stored intact; over it, `TooLarge` and nothing
/// written.
pub async fn value_size_limit(store: Arc<dyn Storage>) {
    let p = unique_prefix();
    let key = format!("{p}big");
    let r0 = store.current_revision().await.unwrap();
    let near: Bytes = (0..MAX_VALUE_SIZE - 8 * 1024).map(|i| (i % 251) as u8).collect::<Vec<u8>>().into();
    let stored = store.put(&key, near.clone(), Expect::Absent).await.unwrap();
    assert_eq!(stored.mod_revision, r0 + 1);
    assert_eq!(store.get(&key).await.unwrap().0.unwrap().value, near);

    let over = Bytes::from(vec![7u8; MAX_VALUE_SIZE + 1]);
    match store.put(&format!("{p}huge"), over, Expect::Absent).await {
        Err(StorageError::TooLarge { key: k, size, .. }) => {
            assert_eq!(k, format!("{p}huge"));
            assert_eq!(size, MAX_VALUE_SIZE + 1);
        }
        other => panic!("expected TooLarge, got {other:?}"),
    }
    assert_eq!(store.current_revision().await.unwrap(), r0 + 1);
    assert_eq!(store.get(&format!("{p}huge")).await.unwrap().0, None);
}

/// A progress notification comes after every event committed before it was requested, on a
/// live watch and on one still replaying.
pub async fn progress_after_events(store: Arc<dyn Storage>) {
    let p = unique_prefix();
    let r0 = store.current_revision().await.unwrap();
    let mut live = store.watch(&p, 0).await.unwrap();
    let a = put(&store, &format!("{p}a"), "a", Expect::Absent).await;
    let c = put(&store, &format!("{p}c"), "c", Expect::Absent).await;
    live.progress.request_progress();
    assert_eq!(next_event(&mut live).await.kv, a);
    assert_eq!(next_event(&mut live).await.kv, c);
    let check_progress = |item: WatchItem, at_least: Revision| match item {
        WatchItem::Progress(rev) => assert!(rev >= at_least, "progress {rev} before the last event {at_least}"),
        other => panic!("expected progress, got {other:?}"),
    };
    check_progress(next_item(&mut live).await, c.mod_revision);
    live.progress.request_progress();
    check_progress(next_item(&mut live).await, c.mod_revision);

    let mut replaying = store.watch(&p, r0).await.unwrap();
    replaying.progress.request_progress();
    assert_eq!(next_event(&mut replaying).await.kv, a);
    assert_eq!(next_event(&mut replaying).await.kv, c);
    check_progress(next_item(&mut replaying).await, c.mod_revision);
    assert_quiet(&mut replaying).await;
}

/// Dropping one watch (or only its receiver) does not disturb other watches of the same prefix.
pub async fn dropped_watch_does_not_disturb_others(store: Arc<dyn Storage>) {
    let p = unique_prefix();
    let mut kept = store.watch(&p, 0).await.unwrap();
    let dropped = store.watch(&p, 0).await.unwrap();
    let half = store.watch(&p, 0).await.unwrap();
    drop(dropped);
    let progress_of_half = Arc::clone(&half.progress);
    drop(half.items);
    let mut written = Vec::new();
    for i in 0..20 {
        written.push(put(&store, &format!("{p}k{i:02}"), "v", Expect::Absent).await);
        if i == 10 {
            progress_of_half.request_progress();
        }
    }
    for kv in &written {
        assert_eq!(&next_event(&mut kept).await.kv, kv);
    }
    kept.progress.request_progress();
    assert!(matches!(next_item(&mut kept).await, WatchItem::Progress(_)));
    assert_quiet(&mut kept).await;
}

/// A key put with a TTL is deleted when it passes, with a `Deleted` event at a revision of its
/// own; a key without one stays, and so does a key put again without one.
pub async fn keys_with_a_ttl_expire(store: Arc<dyn Storage>) {
    let p = unique_prefix();
    let (short, kept, forever) = (format!("{p}short"), format!("{p}kept"), format!("{p}forever"));
    let ttl = Duration::from_secs(1);
    let start = store.current_revision().await.unwrap();
    let mut w = store.watch(&p, start).await.unwrap();
    // `kept` is given its TTL first, so it would be due no later than `short`.
    let kept1 = store.put_with_ttl(&kept, b("k1"), Expect::Absent, ttl).await.unwrap();
    let short1 = store.put_with_ttl(&short, b("s1"), Expect::Absent, ttl).await.unwrap();
    let forever1 = put(&store, &forever, "f1", Expect::Absent).await;
    let kept2 = put(&store, &kept, "k2", Expect::ModRevision(kept1.mod_revision)).await;
    assert_eq!(short1.mod_revision, kept1.mod_revision + 1, "a put with a TTL is one revision");
    for (kind, kv, prev) in [
        (EventType::Added, &kept1, None),
        (EventType::Added, &short1, None),
        (EventType::Added, &forever1, None),
        (EventType::Modified, &kept2, Some(&kept1)),
    ] {
        assert_event(&next_event(&mut w).await, kind, kv, prev);
    }
    // etcd grants leases of at least its minimum TTL (a few seconds) and checks them twice a
    // second: wait well past that, as a busy machine needs.
    let expired = match tokio::time::timeout(Duration::from_secs(60), w.items.recv()).await {
        Ok(Some(WatchItem::Event(e))) => e,
        other => panic!("expected the expiry's event, got {other:?}"),
    };
    let deleted_at = kept2.mod_revision + 1;
    assert_event(&expired, EventType::Deleted, &KeyValue { mod_revision: deleted_at, ..short1.clone() }, Some(&short1));
    assert_quiet(&mut w).await;
    assert_eq!(store.get(&short).await.unwrap(), (None, deleted_at));
    assert_eq!(list_at(&store, &p, None).await, [forever1, kept2]);
}
