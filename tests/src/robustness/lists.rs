//! Lists, and the snapshot check they share with a watch's initial events: what a reader got at
//! revision R must be each key's last known write at or below R, and a consistent read's R
//! must cover every write acknowledged before it was called.

use std::collections::{BTreeMap, HashMap};

use super::history::{History, Request, Response};
use super::revisions::{Catalogue, Known, Resolution, WriteKind};
use super::{Findings, ViolationKind, excerpt, first_few};

/// The state a reader got.
pub(crate) struct Snapshot<'a> {
    /// The revision it claims.
    pub revision: u64,
    /// (key, value, rv) of each object.
    pub items: Vec<(&'a str, &'a str, u64)>,
    /// The label selector, if any.
    pub group: Option<u8>,
    /// When the read was called and returned (`None`: the harness stopped first).
    pub call: u64,
    /// See `call`.
    pub ret: Option<u64>,
    /// Whether it must be linearizable.
    pub consistent: bool,
}

/// How a snapshot is wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Fault {
    /// Its revision is below one acknowledged before the read.
    Stale,
    /// It lacks an acknowledged write it had to show.
    Lost,
    /// It lacks a key's last write.
    Missing,
    /// It holds what no known write at or below its revision left.
    Wrong,
}

/// One finding about a snapshot.
pub(crate) struct Issue {
    pub fault: Fault,
    pub detail: String,
    /// Operations a reader needs to see it.
    pub ops: Vec<usize>,
}

/// Checks snapshots against the catalogue of known writes.
pub(crate) struct SnapshotChecker<'a, 'h> {
    h: &'h History,
    cat: &'a Catalogue<'h>,
    /// Every key with a known write, sorted, so reports come in a stable order.
    keys: Vec<&'h str>,
    /// When each key's deletes with unknown revision were called: one of them may explain a
    /// snapshot without an object the catalogue still holds.
    unresolved_deletes: HashMap<&'h str, Vec<u64>>,
}

impl<'a, 'h> SnapshotChecker<'a, 'h> {
    pub(crate) fn new(h: &'h History, res: &Resolution, cat: &'a Catalogue<'h>) -> Self {
        let mut keys: Vec<&str> = cat.keys().collect();
        keys.sort_unstable();
        let mut unresolved_deletes: HashMap<&str, Vec<u64>> = HashMap::new();
        for (i, op) in h.operations.iter().enumerate() {
            if let Request::Delete { key, .. } = &op.request
                && res.unresolved(i)
            {
                unresolved_deletes.entry(key).or_default().push(op.call);
            }
        }
        Self { h, cat, keys, unresolved_deletes }
    }

    /// Everything wrong with `s`.
    pub(crate) fn check(&self, s: &Snapshot) -> Vec<Issue> {
        let mut issues = Vec::new();
        if s.consistent
            && let Some((rv, op)) = self.cat.acked.max_before(s.call)
            && rv > s.revision
        {
            let detail =
                format!("revision {} is below {rv} of {}, which returned before", s.revision, self.h.operations[op]);
            issues.push(Issue { fault: Fault::Stale, detail, ops: vec![op] });
        }
        let mut got: HashMap<&str, (&str, u64)> = HashMap::new();
        for &(key, value, rv) in &s.items {
            if rv > s.revision {
                let detail = format!("{key}={value} has rv {rv}, above the revision {}", s.revision);
                issues.push(Issue { fault: Fault::Wrong, detail, ops: Vec::new() });
            }
            if got.insert(key, (value, rv)).is_some() {
                issues.push(Issue { fault: Fault::Wrong, detail: format!("{key} appears twice"), ops: Vec::new() });
            }
        }
        for &key in &self.keys {
            issues.extend(self.check_key(s, key, got.remove(key)));
        }
        // What is left names keys no known write touched.
        let mut phantoms: Vec<_> = got.into_iter().collect();
        phantoms.sort_unstable();
        for (key, (value, rv)) in phantoms {
            let detail = format!("holds {key}={value} at {rv}, which no known write made");
            issues.push(Issue { fault: Fault::Wrong, detail, ops: Vec::new() });
        }
        issues
    }

    /// Compares what `s` shows of `key` with the key's last known write at its revision.
    fn check_key(&self, s: &Snapshot, key: &str, have: Option<(&str, u64)>) -> Option<Issue> {
        let last = self.cat.last_at(key, s.revision);
        let want = match (last, s.group) {
            (Some((_, k)), _) if k.kind == WriteKind::Delete => None,
            (Some((rv, k)), None) => Some((rv, k)),
            (Some((rv, k)), Some(g)) => match k.group {
                Some(kg) => Some((rv, k)).filter(|_| kg == g),
                // Its group is unknown, so whether the selector matches is too.
                None => return None,
            },
            (None, _) => None,
        };
        match (want, have) {
            (Some((rv, k)), Some((value, got_rv))) if k.value == Some(value) && rv == got_rv => return None,
            (None, None) => return None,
            (Some(_), None) if self.may_be_deleted(key, s.ret) => return None,
            _ => {}
        }
        let lost = s.consistent && last.is_some_and(|(_, k)| self.acked_before(k, s.call));
        let fault = match (lost, have) {
            (true, _) => Fault::Lost,
            (false, None) => Fault::Missing,
            (false, Some(_)) => Fault::Wrong,
        };
        let shown = have.map_or("nothing".to_string(), |(v, rv)| format!("{v} at {rv}"));
        let detail = format!(
            "shows {shown} for {key}, but its last write at or below {} is {}",
            s.revision,
            self.describe(last)
        );
        let mut ops: Vec<usize> = last.and_then(|(_, k)| k.op).into_iter().collect();
        ops.extend(have.and_then(|(_, rv)| self.cat.writes.get(&rv)).and_then(|k| k.op));
        ops.extend(self.cat.next_after(key, s.revision).and_then(|rv| self.cat.writes[&rv].op));
        Some(Issue { fault, detail, ops })
    }

    fn may_be_deleted(&self, key: &str, ret: Option<u64>) -> bool {
        let before = ret.unwrap_or(u64::MAX);
        self.unresolved_deletes.get(key).is_some_and(|calls| calls.iter().any(|&c| c < before))
    }

    fn acked_before(&self, k: &Known, call: u64) -> bool {
        k.op.is_some_and(|i| self.h.operations[i].outcome_known() && self.h.operations[i].ret_or_max() < call)
    }

    fn describe(&self, last: Option<(u64, &Known)>) -> String {
        match last {
            None => "none".to_string(),
            Some((rv, k)) => match k.op {
                Some(i) => format!("{} (rv {rv})", self.h.operations[i]),
                None => format!("a delete seen only by a watch (rv {rv})"),
            },
        }
    }
}

/// Checks every list that answered.
pub(crate) fn check(h: &History, res: &Resolution, cat: &Catalogue, out: &mut Findings) {
    let checker = SnapshotChecker::new(h, res, cat);
    for (i, op) in h.operations.iter().enumerate() {
        let (Request::List { consistent }, Response::Listed { revision, items }, true) =
            (&op.request, &op.response, op.outcome_known())
        else {
            continue;
        };
        let items = items.iter().map(|it| (it.key.as_str(), it.value.as_str(), it.rv)).collect();
        let snapshot =
            Snapshot { revision: *revision, items, group: None, call: op.call, ret: op.ret, consistent: *consistent };
        let mut by_kind: BTreeMap<ViolationKind, (Vec<String>, Vec<usize>)> = BTreeMap::new();
        for issue in checker.check(&snapshot) {
            let kind = match issue.fault {
                Fault::Stale => ViolationKind::StaleRead,
                Fault::Lost => ViolationKind::LostWrite,
                Fault::Missing | Fault::Wrong => ViolationKind::InconsistentList,
            };
            let entry = by_kind.entry(kind).or_default();
            entry.0.push(issue.detail);
            entry.1.extend(issue.ops);
        }
        for (kind, (details, ops)) in by_kind {
            let message = format!("{op}: {}", first_few(&details));
            out.add(kind, message, || excerpt(h, ops.into_iter().chain([i]), Vec::new()));
        }
    }
}
