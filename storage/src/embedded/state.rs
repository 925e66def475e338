//! The in-memory multi-version index: every key's versions since the compacted revision, and the
//! event log that watches replay from.
//!
//! Only the writer thread mutates a [`State`] (under the store's `RwLock`), so a read lock is a
//! consistent snapshot at [`State::revision`].

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::ops::Bound;

use bytes::Bytes;

use crate::{Event, EventType, KeyValue, ListResult, Revision, StorageError};

/// One version of a key: a value, or a tombstone left by a delete.
#[derive(Clone, Debug)]
pub(super) struct Version {
    /// The write that produced this version.
    pub mod_revision: Revision,
    /// The write that created the key (equal to `mod_revision` on a create; meaningless on a
    /// tombstone, where it keeps the deleted key's create revision).
    pub create_revision: Revision,
    /// The value, shared with events and readers; `None` is a tombstone.
    pub value: Option<Bytes>,
}

/// A key's versions in ascending `mod_revision`, never empty while the key is in the index.
#[derive(Debug, Default)]
pub(super) struct KeyHistory {
    versions: Vec<Version>,
}

impl KeyHistory {
    /// The newest version, tombstone included.
    fn latest(&self) -> Option<&Version> {
        self.versions.last()
    }

    /// The version visible at `revision`, tombstone included.
    fn at(&self, revision: Revision) -> Option<&Version> {
        let after = self.versions.partition_point(|v| v.mod_revision <= revision);
        after.checked_sub(1).map(|i| &self.versions[i])
    }

    /// The live (non-tombstone) version at `revision`.
    fn live_at(&self, revision: Revision) -> Option<&Version> {
        self.at(revision).filter(|v| v.value.is_some())
    }

    /// Forgets the versions a compaction at `revision` makes unreachable: everything at or
    /// below it except the newest such version, and that one too if it is a tombstone.
    /// Idempotent. Returns whether the key has no version left.
    fn compact(&mut self, revision: Revision) -> bool {
        let upto = self.versions.partition_point(|v| v.mod_revision <= revision);
        if upto > 0 {
            let keep_last = self.versions[upto - 1].value.is_some();
            self.versions.drain(..if keep_last { upto - 1 } else { upto });
        }
        self.versions.is_empty()
    }
}

/// One committed write, as the writer thread and log replay apply it.
pub(super) struct Change {
    /// The key written.
    pub key: String,
    /// The write's revision: exactly one above the state's.
    pub revision: Revision,
    /// The key's create revision after the write (ignored for deletes).
    pub create_revision: Revision,
    /// The new value, `None` for a delete.
    pub value: Option<Bytes>,
    /// When the key expires (Unix milliseconds), for a put with a TTL; a put without one, or a
    /// delete, clears the key's expiry.
    pub expires: Option<u64>,
}

/// The whole index.
#[derive(Debug)]
pub(super) struct State {
    /// Every key with a version since the compacted revision, in key order so that a prefix is a
    /// contiguous range.
    keys: BTreeMap<String, KeyHistory>,
    /// One event per revision in `(compacted, revision]` (revisions with no event, like the
    /// empty store's 1, have none), oldest first: watch replay is an index into it.
    events: VecDeque<Event>,
    /// The current revision.
    pub revision: Revision,
    /// The compacted revision (0 if never compacted).
    pub compacted: Revision,
    /// Live keys written with a TTL, by expiry (Unix milliseconds) then key: the writer deletes
    /// them in this order.
    expiring: BTreeSet<(u64, String)>,
    /// Each expiring key's expiry, to find its entry in `expiring`.
    expiry_of: HashMap<String, u64>,
}

impl State {
    /// An index at `revision` with nothing in it.
    pub fn new(compacted: Revision, revision: Revision) -> Self {
        State {
            keys: BTreeMap::new(),
            events: VecDeque::new(),
            revision,
            compacted,
            expiring: BTreeSet::new(),
            expiry_of: HashMap::new(),
        }
    }

    /// When `key` expires, if its current version was written with a TTL.
    pub fn expiry(&self, key: &str) -> Option<u64> {
        self.expiry_of.get(key).copied()
    }

    /// When `key`'s version written at `mod_revision` expires: its expiry if that version is
    /// the key's latest, for a snapshot's records.
    pub fn expiry_of_version(&self, key: &str, mod_revision: Revision) -> Option<u64> {
        let latest = self.keys.get(key)?.latest()?;
        if latest.mod_revision == mod_revision { self.expiry(key) } else { None }
    }

    /// The first expiry due, if any key has one.
    pub fn next_expiry(&self) -> Option<u64> {
        self.expiring.first().map(|(at, _)| *at)
    }

    /// At most `limit` keys expired at `now` (Unix milliseconds), each with the mod revision it
    /// expires at, earliest first.
    pub fn expired(&self, now: u64, limit: usize) -> Vec<(String, Revision)> {
        self.expiring
            .iter()
            .take_while(|(at, _)| *at <= now)
            .take(limit)
            .filter_map(|(_, key)| Some((key.clone(), self.keys.get(key)?.latest()?.mod_revision)))
            .collect()
    }

    /// Records the expiry of `key`'s new version (none: the key stays).
    fn set_expiry(&mut self, key: &str, expires: Option<u64>) {
        if let Some(old) = self.expiry_of.remove(key) {
            self.expiring.remove(&(old, key.to_string()));
        }
        if let Some(at) = expires {
            self.expiry_of.insert(key.to_string(), at);
            self.expiring.insert((at, key.to_string()));
        }
    }

    /// Number of keys with any version (live or tombstone), for diagnostics.
    pub fn key_count(&self) -> usize {
        self.keys.len()
    }

    /// The key's current value.
    pub fn latest(&self, key: &str) -> Option<KeyValue> {
        let v = self.keys.get(key)?.latest()?;
        kv(key, v)
    }

    /// Resolves the revision a read asks for (`None` or 0: current) or says why it cannot be
    /// served.
    pub fn read_revision(&self, requested: Option<Revision>) -> Result<Revision, StorageError> {
        match requested {
            None | Some(0) => Ok(self.revision),
            Some(r) if r < self.compacted => Err(StorageError::Compacted { requested: r, compacted: self.compacted }),
            Some(r) if r > self.revision => Err(StorageError::FutureRevision { requested: r, current: self.revision }),
            Some(r) => Ok(r),
        }
    }

    /// Keys under `prefix` from `start` (inclusive), in key order.
    fn range<'a>(
        &'a self,
        prefix: &'a str,
        start: Option<&'a str>,
    ) -> impl Iterator<Item = (&'a String, &'a KeyHistory)> {
        let from = match start {
            Some(s) if s > prefix => s,
            _ => prefix,
        };
        self.keys
            .range::<str, _>((Bound::Included(from), Bound::Unbounded))
            .take_while(move |(k, _)| k.starts_with(prefix))
    }

    /// Lists keys under `prefix` live at `revision` (already checked by [`Self::read_revision`]).
    pub fn list(&self, prefix: &str, start: Option<&str>, limit: usize, revision: Revision) -> ListResult {
        let mut live = self.range(prefix, start).filter_map(|(k, h)| h.live_at(revision).map(|v| (k, v)));
        let mut items = Vec::new();
        for (k, v) in live.by_ref() {
            items.extend(kv(k, v));
            if limit != 0 && items.len() == limit {
                break;
            }
        }
        let remaining = live.count() as u64;
        ListResult { items, revision, more: remaining > 0, remaining }
    }

    /// Counts keys under `prefix` live now.
    pub fn count(&self, prefix: &str) -> u64 {
        self.range(prefix, None).filter(|(_, h)| h.latest().is_some_and(|v| v.value.is_some())).count() as u64
    }

    /// Every key live at `revision` with its version there, for a snapshot.
    pub fn live_at(&self, revision: Revision) -> impl Iterator<Item = (&String, &Version)> {
        self.keys.iter().filter_map(move |(k, h)| h.live_at(revision).map(|v| (k, v)))
    }

    /// Events with a revision above `after`, oldest first; O(1) to find the first one.
    pub fn events_after(&self, after: Revision) -> impl Iterator<Item = &Event> + Clone {
        let skip = match self.events.front() {
            Some(first) => usize::try_from((after + 1).saturating_sub(first.kv.mod_revision)).unwrap_or(usize::MAX),
            None => 0,
        };
        self.events.range(skip.min(self.events.len())..)
    }

    /// Applies one committed write: a new version, one event, the revision advanced.
    pub fn apply(&mut self, change: Change) {
        debug_assert_eq!(change.revision, self.revision + 1, "revisions advance one at a time");
        self.set_expiry(&change.key, change.value.as_ref().and(change.expires));
        let history = self.keys.entry(change.key.clone()).or_default();
        let prev = history.latest().and_then(|v| kv(&change.key, v));
        let (event, version) = match change.value {
            Some(value) => {
                let create_revision = prev.as_ref().map_or(change.revision, |p| p.create_revision);
                debug_assert_eq!(create_revision, change.create_revision, "create revision planned by the writer");
                let kind = if prev.is_some() { EventType::Modified } else { EventType::Added };
                let kv = KeyValue {
                    key: change.key,
                    value: value.clone(),
                    create_revision,
                    mod_revision: change.revision,
                    stale: false,
                };
                (
                    Event { kind, kv, prev },
                    Version { mod_revision: change.revision, create_revision, value: Some(value) },
                )
            }
            None => {
                let Some(prev) = prev else {
                    debug_assert!(false, "delete of an absent key reached apply");
                    return;
                };
                let kv = KeyValue { mod_revision: change.revision, ..prev.clone() };
                let version =
                    Version { mod_revision: change.revision, create_revision: prev.create_revision, value: None };
                (Event { kind: EventType::Deleted, kv, prev: Some(prev) }, version)
            }
        };
        history.versions.push(version);
        self.events.push_back(event);
        self.revision = change.revision;
    }

    /// Restores a key's version from a snapshot, with its expiry: no event, no revision
    /// change.
    pub fn restore(&mut self, key: String, version: Version, expires: Option<u64>) {
        self.set_expiry(&key, expires);
        self.keys.entry(key).or_default().versions.push(version);
    }

    /// Forgets history before `revision`. Only keys written since the last compaction can have
    /// more than one version or a tombstone, and those are exactly the keys of the events being
    /// dropped, so this costs O(events compacted), not O(keys).
    pub fn compact(&mut self, revision: Revision) {
        while self.events.front().is_some_and(|e| e.kv.mod_revision <= revision) {
            let Some(event) = self.events.pop_front() else { break };
            if let Some(history) = self.keys.get_mut(&event.kv.key)
                && history.compact(revision)
            {
                self.keys.remove(&event.kv.key);
            }
        }
        self.compacted = revision;
    }
}

/// The key as a reader sees it at `v`, `None` for a tombstone.
fn kv(key: &str, v: &Version) -> Option<KeyValue> {
    Some(KeyValue {
        key: key.to_string(),
        value: v.value.clone()?,
        create_revision: v.create_revision,
        mod_revision: v.mod_revision,
        stale: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn put(s: &mut State, key: &str, value: &str) {
        let revision = s.revision + 1;
        let create_revision = s.latest(key).map_or(revision, |kv| kv.create_revision);
        let value = Some(Bytes::from(value.to_string()));
        s.apply(Change { key: key.into(), revision, create_revision, value, expires: None });
    }

    fn delete(s: &mut State, key: &str) {
        let revision = s.revision + 1;
        s.apply(Change { key: key.into(), revision, create_revision: 0, value: None, expires: None });
    }

    #[test]
    fn reads_at_past_revisions_see_the_versions_then() {
        let mut s = State::new(0, 1);
        put(&mut s, "/a", "1"); // 2
        put(&mut s, "/b", "1"); // 3
        put(&mut s, "/a", "2"); // 4
        delete(&mut s, "/b"); // 5
        let at3 = s.list("/", None, 0, 3);
        assert_eq!(at3.items.iter().map(|kv| (&*kv.key, kv.mod_revision)).collect::<Vec<_>>(), [("/a", 2), ("/b", 3)]);
        let now = s.list("/", None, 0, 5);
        assert_eq!(now.items.len(), 1);
        assert_eq!(now.items[0].create_revision, 2);
        assert_eq!(now.items[0].mod_revision, 4);
        assert_eq!(s.count("/"), 1);
    }

    #[test]
    fn compaction_drops_superseded_versions_and_tombstones() {
        let mut s = State::new(0, 1);
        put(&mut s, "/a", "1"); // 2
        put(&mut s, "/a", "2"); // 3
        put(&mut s, "/b", "1"); // 4
        delete(&mut s, "/b"); // 5
        put(&mut s, "/a", "3"); // 6
        s.compact(5);
        assert_eq!(s.key_count(), 1, "/b's tombstone is gone");
        assert_eq!(s.keys["/a"].versions.len(), 2, "/a keeps its version at 5 and the newer one");
        assert_eq!(s.events_after(0).map(|e| e.kv.mod_revision).collect::<Vec<_>>(), [6]);
        assert_eq!(s.list("/", None, 0, 5).items[0].value, "2");
    }

    #[test]
    fn events_after_indexes_by_revision() {
        let mut s = State::new(0, 1);
        for i in 0..5 {
            put(&mut s, &format!("/k{i}"), "v"); // 2..=6
        }
        assert_eq!(s.events_after(4).map(|e| e.kv.mod_revision).collect::<Vec<_>>(), [5, 6]);
        assert_eq!(s.events_after(6).count(), 0);
        assert_eq!(s.events_after(100).count(), 0);
        assert_eq!(s.events_after(0).count(), 5);
    }
}
