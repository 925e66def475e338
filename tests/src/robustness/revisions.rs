//! What is known about the writes of a run, and the checks of the global revision counter.
//!
//! Every value is written once, so a value seen anywhere (a get, a list item, a watch event)
//! names the write that made it: an unknown-outcome write whose value was seen did happen, at
//! the first revision the value was seen with. The [`Catalogue`] then holds every write whose
//! revision is known, from acknowledged and patched writes and from DELETED events; the watch
//! and list checks compare what they saw against it.

use std::collections::{BTreeMap, HashMap};

use super::history::{EventKind, History, Operation, Request, Response};
use super::{Findings, ViolationKind, excerpt};

/// Whether and where a write took effect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Effect {
    /// A read, or a write that definitely did not apply (or whose answer is impossible).
    None,
    /// It took effect: acknowledged, or its value was seen. The revision is unknown for a
    /// delete that returned none and for a write seen only as a DELETED event's value.
    Applied(Option<u64>),
    /// Its outcome is unknown and nothing showed it: it may or may not have happened.
    Maybe,
}

/// The effect of every operation, and which operation wrote each value.
#[derive(Debug)]
pub(crate) struct Resolution<'h> {
    /// Indexed like `History::operations`.
    pub effects: Vec<Effect>,
    /// The operation that writes each value.
    pub writers: HashMap<&'h str, usize>,
}

impl Resolution<'_> {
    /// Whether operation `i` may have taken effect with a revision nobody saw.
    pub(crate) fn unresolved(&self, i: usize) -> bool {
        matches!(self.effects[i], Effect::Maybe | Effect::Applied(None))
    }
}

/// Resolves every write: acknowledged ones from their answer, unknown ones from observations.
pub(crate) fn resolve(h: &History) -> Resolution<'_> {
    let mut writers = HashMap::new();
    for (i, op) in h.operations.iter().enumerate() {
        if let Some(value) = op.request.value() {
            writers.entry(value).or_insert(i);
        }
    }
    let seen = observations(h);
    let effects = h.operations.iter().map(|op| effect(op, &seen)).collect();
    Resolution { effects, writers }
}

/// One operation's effect, given what was seen.
fn effect(op: &Operation, seen: &HashMap<&str, Option<u64>>) -> Effect {
    match (&op.request, &op.response) {
        (r, _) if !r.is_write() => Effect::None,
        (r, _) if !op.outcome_known() => match r.value().and_then(|v| seen.get(v)) {
            Some(&rv) => Effect::Applied(rv),
            None => Effect::Maybe,
        },
        (Request::Create { .. }, Response::Created { rv }) | (Request::Update { .. }, Response::Updated { rv }) => {
            Effect::Applied(Some(*rv))
        }
        (Request::Delete { .. }, Response::Deleted { rv }) => Effect::Applied(*rv),
        _ => Effect::None,
    }
}

/// Every value some read or event showed, with the lowest revision it was shown at (`None`:
/// only as a DELETED event's last value, which carries the deletion's revision).
fn observations<'h>(h: &'h History) -> HashMap<&'h str, Option<u64>> {
    let mut seen: HashMap<&str, Option<u64>> = HashMap::new();
    let add = |seen: &mut HashMap<&'h str, Option<u64>>, value: &'h str, rv: Option<u64>| {
        let slot = seen.entry(value).or_insert(rv);
        *slot = match (*slot, rv) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
    };
    for op in h.operations.iter().filter(|op| op.outcome_known()) {
        match &op.response {
            Response::Found { value, rv } => add(&mut seen, value.as_str(), Some(*rv)),
            Response::Listed { items, .. } => {
                for item in items {
                    add(&mut seen, item.value.as_str(), Some(item.rv));
                }
            }
            _ => {}
        }
    }
    for e in h.watches.iter().flat_map(|w| &w.events) {
        match e.kind {
            EventKind::Added | EventKind::Modified => add(&mut seen, e.value.as_str(), Some(e.rv)),
            EventKind::Deleted => add(&mut seen, e.value.as_str(), None),
            EventKind::Bookmark => {}
        }
    }
    seen
}

/// A write's kind, as a watch event names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WriteKind {
    /// ADDED.
    Create,
    /// MODIFIED.
    Update,
    /// DELETED.
    Delete,
}

impl WriteKind {
    fn of(request: &Request) -> Option<Self> {
        match request {
            Request::Create { .. } => Some(Self::Create),
            Request::Update { .. } => Some(Self::Update),
            Request::Delete { .. } => Some(Self::Delete),
            _ => None,
        }
    }

    /// The event a watch delivers for this write.
    pub(crate) fn event(self) -> EventKind {
        match self {
            Self::Create => EventKind::Added,
            Self::Update => EventKind::Modified,
            Self::Delete => EventKind::Deleted,
        }
    }
}

/// A write whose revision is known.
#[derive(Debug, Clone)]
pub(crate) struct Known<'h> {
    /// The object written.
    pub key: &'h str,
    /// Create, update or delete.
    pub kind: WriteKind,
    /// The value written; `None` for a delete.
    pub value: Option<&'h str>,
    /// The operation, unless only a DELETED event showed it.
    pub op: Option<usize>,
    /// The object's label group, when its create is known.
    pub group: Option<u8>,
}

/// Every write whose revision is known, by revision and by key.
#[derive(Debug)]
pub(crate) struct Catalogue<'h> {
    /// By revision.
    pub writes: BTreeMap<u64, Known<'h>>,
    /// Each key's revisions, ascending.
    keys: HashMap<&'h str, Vec<u64>>,
    /// Operations resolved to a revision another operation holds: (revision, holder, other).
    pub conflicts: Vec<(u64, usize, usize)>,
    /// The writes that took effect before they returned, by return time.
    pub acked: AckIndex,
}

impl<'h> Catalogue<'h> {
    /// Collects the known writes of `h`.
    pub(crate) fn build(h: &'h History, res: &Resolution<'h>) -> Self {
        let mut writes: BTreeMap<u64, Known<'h>> = BTreeMap::new();
        let mut conflicts = Vec::new();
        for (i, op) in h.operations.iter().enumerate() {
            let (Effect::Applied(Some(rv)), Some(kind), Some(key)) =
                (res.effects[i], WriteKind::of(&op.request), op.request.key())
            else {
                continue;
            };
            match writes.get(&rv) {
                Some(held) => conflicts.push((rv, held.op.expect("ops are inserted first"), i)),
                None => {
                    let value = op.request.value();
                    writes.insert(rv, Known { key, kind, value, op: Some(i), group: None });
                }
            }
        }
        // A DELETED event is the only witness of an unknown or revision-less delete; events
        // that disagree with a write already known are the watch check's business.
        for e in h.watches.iter().flat_map(|w| &w.events).filter(|e| e.kind == EventKind::Deleted) {
            writes.entry(e.rv).or_insert(Known {
                key: &e.key,
                kind: WriteKind::Delete,
                value: None,
                op: None,
                group: None,
            });
        }
        let mut keys: HashMap<&str, Vec<u64>> = HashMap::new();
        for (&rv, k) in &writes {
            keys.entry(k.key).or_default().push(rv);
        }
        let mut cat = Self { writes, keys, conflicts, acked: AckIndex::new(h, res) };
        cat.assign_groups(h);
        cat
    }

    /// Gives every known write its object's group: a create's own, carried to later writes;
    /// before a key's first known create, the group all its creates use, if they agree.
    fn assign_groups(&mut self, h: &History) {
        let fallback = fallback_groups(h);
        for (key, rvs) in &self.keys {
            let mut group = fallback.get(key).copied().flatten();
            for rv in rvs {
                let k = self.writes.get_mut(rv).expect("indexed");
                if let (WriteKind::Create, Some(Request::Create { group: g, .. })) =
                    (k.kind, k.op.map(|i| &h.operations[i].request))
                {
                    group = Some(*g);
                }
                k.group = group;
            }
        }
    }

    /// Every key with a known write.
    pub(crate) fn keys(&self) -> impl Iterator<Item = &'h str> + '_ {
        self.keys.keys().copied()
    }

    /// The last known write of `key` at or below `rv`.
    pub(crate) fn last_at(&self, key: &str, rv: u64) -> Option<(u64, &Known<'h>)> {
        let rvs = self.keys.get(key)?;
        let at = rvs.partition_point(|&r| r <= rv).checked_sub(1)?;
        Some((rvs[at], &self.writes[&rvs[at]]))
    }

    /// The first known write of `key` above `rv`.
    pub(crate) fn next_after(&self, key: &str, rv: u64) -> Option<u64> {
        let rvs = self.keys.get(key)?;
        rvs.get(rvs.partition_point(|&r| r <= rv)).copied()
    }

    /// The operations of the known writes in `lo..=hi` (at most `limit`), for a reader.
    pub(crate) fn ops_between(&self, lo: u64, hi: u64, limit: usize) -> Vec<usize> {
        self.writes.range(lo..=hi.max(lo)).filter_map(|(_, k)| k.op).take(limit).collect()
    }
}

/// The one group every create of a key uses, or `None` if they differ.
fn fallback_groups(h: &History) -> HashMap<&str, Option<u8>> {
    let mut groups: HashMap<&str, Option<u8>> = HashMap::new();
    for op in &h.operations {
        if let Request::Create { key, group, .. } = &op.request {
            groups.entry(key).and_modify(|g| *g = g.filter(|g| g == group)).or_insert(Some(*group));
        }
    }
    groups
}

/// The writes known to have taken effect before they returned, sorted by return time, with
/// a running maximum of their revisions: "the highest revision acknowledged before t".
#[derive(Debug, Default)]
pub(crate) struct AckIndex {
    rets: Vec<u64>,
    /// For each prefix, the (revision, operation) of its highest revision.
    best: Vec<(u64, usize)>,
}

impl AckIndex {
    fn new(h: &History, res: &Resolution) -> Self {
        let mut acked: Vec<(u64, u64, usize)> = (h.operations.iter().enumerate())
            .filter_map(|(i, op)| match (res.effects[i], op.ret) {
                (Effect::Applied(Some(rv)), Some(ret)) => Some((ret, rv, i)),
                _ => None,
            })
            .collect();
        acked.sort_unstable();
        let mut best: Vec<(u64, usize)> = Vec::with_capacity(acked.len());
        for &(_, rv, i) in &acked {
            let top = best.last().copied().filter(|&(b, _)| b >= rv).unwrap_or((rv, i));
            best.push(top);
        }
        Self { rets: acked.iter().map(|a| a.0).collect(), best }
    }

    /// The highest (revision, operation) among writes that returned strictly before `t`.
    pub(crate) fn max_before(&self, t: u64) -> Option<(u64, usize)> {
        let n = self.rets.partition_point(|&r| r < t);
        n.checked_sub(1).map(|i| self.best[i])
    }
}

/// Reports two writes at one revision, writes whose revision is not above the one they
/// replaced, and writes ordered in real time but not by revision.
pub(crate) fn check(h: &History, res: &Resolution, cat: &Catalogue, out: &mut Findings) {
    for &(rv, a, b) in &cat.conflicts {
        let message = format!("two writes at revision {rv}: {} and {}", h.operations[a], h.operations[b]);
        out.add(ViolationKind::RevisionConflict, message, || excerpt(h, [a, b], Vec::new()));
    }
    for (i, op) in h.operations.iter().enumerate() {
        let expected = match &op.request {
            Request::Update { expected_rv, .. } => Some(*expected_rv),
            Request::Delete { expected_rv, .. } => *expected_rv,
            _ => None,
        };
        if let (Effect::Applied(Some(rv)), Some(expected)) = (res.effects[i], expected)
            && rv <= expected
        {
            let message = format!("revision went backwards: {op} replaced revision {expected}");
            out.add(ViolationKind::RevisionConflict, message, || excerpt(h, [i], Vec::new()));
        }
    }
    check_real_time(h, res, cat, out);
}

/// Write A returned before write B was called, so B's revision must be above A's.
fn check_real_time(h: &History, res: &Resolution, cat: &Catalogue, out: &mut Findings) {
    for (b, op) in h.operations.iter().enumerate() {
        let Effect::Applied(Some(rv)) = res.effects[b] else { continue };
        let Some((before, a)) = cat.acked.max_before(op.call) else { continue };
        // Equal revisions of two writes are a RevisionConflict already.
        if before > rv {
            let message = format!(
                "{} returned revision {before} before {} was called, which got the lower revision {rv}",
                h.operations[a], op
            );
            out.add(ViolationKind::RealTimeOrder, message, || excerpt(h, [a, b], Vec::new()));
        }
    }
}
