//! Watch guarantees, after etcd's robustness tests, per stream: events ordered and unrepeated
//! (the initial events of `sendInitialEvents` aside), each the known write at its revision
//! (atomic), every known write to a matching key between the start and the last event or
//! bookmark delivered (reliable, resumable), bookmarks never behind an earlier event nor ahead
//! of a later one, and initial events exactly the state at their bookmark's revision.

use std::collections::{BTreeMap, HashMap, HashSet};

use super::history::{EventKind, History, WatchEvent, WatchStart, WatchStream};
use super::lists::{Fault, Snapshot, SnapshotChecker};
use super::revisions::{Catalogue, Effect, Known, Resolution, WriteKind};
use super::{Findings, ViolationKind, excerpt, first_few};

/// Writes shown beside a violation at most: a gap may span a whole run.
const CONTEXT_WRITES: usize = 100;

/// One finding, with the revisions and operations a reader needs to see it.
struct Issue {
    kind: ViolationKind,
    detail: String,
    rvs: Vec<u64>,
    ops: Vec<usize>,
}

/// Checks every watch stream.
pub(crate) fn check(h: &History, res: &Resolution, cat: &Catalogue, out: &mut Findings) {
    let snapshots = SnapshotChecker::new(h, res, cat);
    for (n, w) in h.watches.iter().enumerate() {
        let stream = Stream::split(w, cat, &snapshots);
        let mut issues = Vec::new();
        if let Some(revision) = stream.initial_end {
            issues.extend(initial_state(w, &stream, revision, &snapshots));
        }
        issues.extend(stream.initial.iter().filter_map(|e| initial_event(h, res, e)));
        issues.extend(
            stream.ordinary.iter().filter(|e| e.kind != EventKind::Bookmark).filter_map(|e| atomic(h, res, cat, w, e)),
        );
        issues.extend(order(w, &stream));
        issues.extend(transitions(w, &stream));
        issues.extend(gaps(w, &stream, cat));
        report(h, cat, n, w, issues, out);
    }
}

/// A stream cut into its synthetic initial events and the rest.
struct Stream<'w> {
    initial: Vec<&'w WatchEvent>,
    /// The revision of the initial-events-end bookmark, if it arrived.
    initial_end: Option<u64>,
    /// Events and bookmarks after the initial events (the end bookmark first).
    ordinary: &'w [WatchEvent],
}

impl<'w> Stream<'w> {
    fn split(w: &'w WatchStream, cat: &Catalogue, checker: &SnapshotChecker) -> Self {
        match w.start {
            WatchStart::FromRevision(_) => Self { initial: Vec::new(), initial_end: None, ordinary: &w.events },
            WatchStart::InitialEvents => {
                let end = w.events.iter().position(|e| e.initial_events_end);
                let (initial, ordinary) = w.events.split_at(end.unwrap_or(w.events.len()));
                let initial = initial.iter().filter(|e| e.kind != EventKind::Bookmark).collect();
                Self { initial, initial_end: end.map(|i| w.events[i].rv), ordinary }
            }
            WatchStart::FromNow => Self::split_from_now(w, cat, checker),
        }
    }

    /// A watch without a resourceVersion starts with the state at some revision R as ADDED
    /// events (kube's "Get State and Start at Most Recent"), with no bookmark saying where
    /// they end or what R is. Both are inferred: the initial events are the longest run of
    /// leading ADDED events all below every later event, and R the first revision from the
    /// highest of them up to just below the next event at which the store's state of the
    /// matching keys is exactly that run (the state changes only at writes to matching keys,
    /// so only those revisions are tried). With no such R, R is the highest initial event's
    /// revision and the snapshot check reports what differs there.
    fn split_from_now(w: &'w WatchStream, cat: &Catalogue, checker: &SnapshotChecker) -> Self {
        let adds = w.events.iter().take_while(|e| e.kind == EventKind::Added).count();
        let mut cut = adds;
        while cut > 0 {
            let highest = w.events[..cut].iter().map(|e| e.rv).max().unwrap_or(0);
            let rest = w.events[cut..].iter().filter(|e| e.kind != EventKind::Bookmark).map(|e| e.rv).min();
            if rest.is_none_or(|r| r > highest) {
                break;
            }
            cut -= 1;
        }
        let (initial, ordinary) = w.events.split_at(cut);
        let initial: Vec<&WatchEvent> = initial.iter().collect();
        let highest = initial.iter().map(|e| e.rv).max().unwrap_or(0);
        let next = ordinary.iter().filter(|e| e.kind != EventKind::Bookmark).map(|e| e.rv).min();
        let matching = |(rv, k): (&u64, &Known)| w.group.is_none_or(|g| k.group == Some(g)).then_some(*rv);
        let candidates: Vec<u64> = match next {
            // From the top down: R is when the watch was registered, just below its first live
            // event.
            Some(next) => {
                let below: Vec<u64> =
                    cat.writes.range(highest.saturating_add(1)..next).rev().filter_map(matching).take(64).collect();
                below.into_iter().chain(std::iter::once(highest)).collect()
            }
            // No live event: R is somewhere after the highest initial one.
            None => std::iter::once(highest)
                .chain(cat.writes.range(highest.saturating_add(1)..).filter_map(matching).take(64))
                .collect(),
        };
        let items: Vec<(&str, &str, u64)> = initial.iter().map(|e| (e.key.as_str(), e.value.as_str(), e.rv)).collect();
        let fits = |revision: u64| {
            let snapshot = Snapshot {
                revision,
                items: items.clone(),
                group: w.group,
                call: w.call,
                ret: w.ret,
                consistent: false,
            };
            checker.check(&snapshot).is_empty()
        };
        let revision = candidates.into_iter().find(|&r| fits(r)).unwrap_or(highest);
        Self { initial, initial_end: Some(revision), ordinary }
    }
}

/// The initial events are the state at their bookmark's revision, as a consistent list.
fn initial_state(w: &WatchStream, s: &Stream, revision: u64, checker: &SnapshotChecker) -> Vec<Issue> {
    let items = s.initial.iter().map(|e| (e.key.as_str(), e.value.as_str(), e.rv)).collect();
    // A watch without a resourceVersion starts at "most recent" as the cache knows it, which
    // kube does not promise to be linearizable; sendInitialEvents=true does.
    let consistent = w.start == WatchStart::InitialEvents;
    let snapshot = Snapshot { revision, items, group: w.group, call: w.call, ret: w.ret, consistent };
    let issues = checker.check(&snapshot).into_iter().map(|issue| Issue {
        kind: match issue.fault {
            Fault::Stale => ViolationKind::StaleRead,
            Fault::Lost => ViolationKind::LostWrite,
            Fault::Missing => ViolationKind::WatchGap,
            Fault::Wrong => ViolationKind::WatchWrongEvent,
        },
        detail: format!("initial events: {}", issue.detail),
        rvs: vec![revision],
        ops: issue.ops,
    });
    issues.collect()
}

/// An initial event is ADDED and shows a write at that write's own revision.
fn initial_event(h: &History, res: &Resolution, e: &WatchEvent) -> Option<Issue> {
    let writer = res.writers.get(e.value.as_str()).copied();
    let made_it = writer.is_some_and(|i| {
        h.operations[i].request.key() == Some(e.key.as_str()) && res.effects[i] == Effect::Applied(Some(e.rv))
    });
    if e.kind == EventKind::Added && made_it {
        return None;
    }
    let detail = format!("initial event {:?} {}={} at {} is no write's result", e.kind, e.key, e.value, e.rv);
    Some(Issue { kind: ViolationKind::WatchWrongEvent, detail, rvs: vec![e.rv], ops: writer.into_iter().collect() })
}

/// An event equals the known write at its revision: key, kind, value (a DELETED event carries
/// the last value before the delete) and the watch's label group.
fn atomic(h: &History, res: &Resolution, cat: &Catalogue, w: &WatchStream, e: &WatchEvent) -> Option<Issue> {
    let wrong = |why: String| {
        let detail = format!("{:?} {}={} at {}: {why}", e.kind, e.key, e.value, e.rv);
        let writer = res.writers.get(e.value.as_str()).copied();
        Some(Issue { kind: ViolationKind::WatchWrongEvent, detail, rvs: vec![e.rv], ops: writer.into_iter().collect() })
    };
    let Some(k) = cat.writes.get(&e.rv) else { return wrong("no write is known at that revision".into()) };
    if k.key != e.key || k.kind.event() != e.kind {
        return wrong(format!("the write at that revision is a {:?} of {}", k.kind, k.key));
    }
    let value_ok = match k.kind {
        WriteKind::Delete => deleted_value_ok(h, res, cat, e),
        _ => k.value == Some(e.value.as_str()),
    };
    if !value_ok {
        return wrong(format!("the value written there is {}", k.value.unwrap_or("not the last one before it")));
    }
    if let (Some(g), Some(kg)) = (w.group, k.group)
        && g != kg
    {
        return wrong(format!("the object is in group {kg}, the watch selects {g}"));
    }
    None
}

/// A DELETED event's value is the key's last known value before it, or a value whose write
/// has no known revision (it may have come between).
fn deleted_value_ok(h: &History, res: &Resolution, cat: &Catalogue, e: &WatchEvent) -> bool {
    let before = e.rv.checked_sub(1).and_then(|rv| cat.last_at(&e.key, rv));
    if before.is_some_and(|(_, k)| k.value == Some(e.value.as_str())) {
        return true;
    }
    res.writers.get(e.value.as_str()).is_some_and(|&i| {
        h.operations[i].request.key() == Some(e.key.as_str()) && !matches!(res.effects[i], Effect::Applied(Some(_)))
    })
}

/// Ordered, unrepeated, and consistent with bookmarks.
fn order(w: &WatchStream, s: &Stream) -> Vec<Issue> {
    let mut issues = Vec::new();
    let mut seen: HashSet<u64> = HashSet::new();
    let mut last = match w.start {
        WatchStart::FromRevision(start) => start,
        _ => 0,
    };
    for e in &s.initial {
        if !seen.insert(e.rv) {
            issues.push(issue(ViolationKind::WatchRepeatedEvent, e, "an initial event repeats a revision".into()));
        }
        last = last.max(e.rv);
    }
    let mut bookmark: Option<u64> = None;
    for e in s.ordinary {
        if e.kind == EventKind::Bookmark {
            if !w.bookmarks && !e.initial_events_end {
                issues.push(issue(ViolationKind::WatchWrongEvent, e, "a bookmark the watch did not ask for".into()));
            }
            if e.rv < last {
                issues.push(issue(ViolationKind::BookmarkBehind, e, format!("bookmark below the event at {last}")));
            }
            bookmark = bookmark.max(Some(e.rv));
            continue;
        }
        if !seen.insert(e.rv) {
            issues.push(issue(ViolationKind::WatchRepeatedEvent, e, "delivered again".into()));
        } else if e.rv <= last {
            issues.push(issue(ViolationKind::WatchOutOfOrder, e, format!("after the event or start at {last}")));
        } else if let Some(b) = bookmark.filter(|&b| e.rv <= b) {
            issues.push(issue(ViolationKind::BookmarkAhead, e, format!("after a bookmark at {b}")));
        }
        last = last.max(e.rv);
    }
    issues
}

fn issue(kind: ViolationKind, e: &WatchEvent, why: String) -> Issue {
    let detail = format!("{:?} {}={} at {}: {why}", e.kind, e.key, e.value, e.rv);
    Issue { kind, detail, rvs: vec![e.rv], ops: Vec::new() }
}

/// Per key, events alternate as a store allows: ADDED only while the object is absent,
/// MODIFIED and DELETED only while it exists. A stream breaking this missed an event, even one
/// nothing else knows of (a delete that returned no revision, seen by no other watch).
fn transitions(w: &WatchStream, s: &Stream) -> Vec<Issue> {
    // From revision 0 (the namespace starts empty) or after initial events, every key's state
    // is known; otherwise only from a key's first event on.
    let complete = w.start == WatchStart::FromRevision(0) || s.initial_end.is_some();
    let mut exists: HashMap<&str, (bool, u64)> = s.initial.iter().map(|e| (e.key.as_str(), (true, e.rv))).collect();
    let mut issues = Vec::new();
    let mut last = 0;
    for e in s.ordinary.iter().filter(|e| e.kind != EventKind::Bookmark) {
        // Out-of-order and repeated events are `order`'s to report.
        if e.rv <= last {
            continue;
        }
        last = e.rv;
        let known = exists.get(e.key.as_str()).copied().or(complete.then_some((false, 0)));
        if let Some((existed, since)) = known
            && existed == (e.kind == EventKind::Added)
        {
            let state = if existed { "existed" } else { "was absent" };
            let why = format!("{} {state} since {since}: an event between is missing", e.key);
            issues.push(Issue { rvs: vec![since, e.rv], ..issue(ViolationKind::WatchGap, e, why) });
        }
        exists.insert(&e.key, (e.kind != EventKind::Deleted, e.rv));
    }
    issues
}

/// Every known write to a matching key above the start and up to the last event or bookmark
/// was delivered.
fn gaps(w: &WatchStream, s: &Stream, cat: &Catalogue) -> Vec<Issue> {
    let first_event = s.ordinary.iter().find(|e| e.kind != EventKind::Bookmark).map(|e| e.rv);
    let start = match w.start {
        WatchStart::FromRevision(rv) => Some(rv),
        WatchStart::InitialEvents => s.initial_end,
        WatchStart::FromNow => s.initial_end.or(first_event.map(|rv| rv.saturating_sub(1))),
    };
    let (Some(start), Some(end)) = (start, s.ordinary.iter().map(|e| e.rv).max()) else { return Vec::new() };
    if end <= start {
        return Vec::new();
    }
    let delivered: HashSet<u64> = s.ordinary.iter().filter(|e| e.kind != EventKind::Bookmark).map(|e| e.rv).collect();
    let missing = cat
        .writes
        .range(start + 1..=end)
        .filter(|(rv, k)| !delivered.contains(rv) && w.group.is_none_or(|g| k.group == Some(g)));
    let issues = missing.map(|(&rv, k)| Issue {
        kind: ViolationKind::WatchGap,
        detail: format!("missing {:?} {}={} at {rv}", k.kind.event(), k.key, k.value.unwrap_or("")),
        rvs: vec![rv],
        ops: Vec::new(),
    });
    issues.collect()
}

/// One violation per kind for the stream, with the known writes around the revisions involved
/// and the stream cut to them.
fn report(h: &History, cat: &Catalogue, n: usize, w: &WatchStream, issues: Vec<Issue>, out: &mut Findings) {
    let mut by_kind: BTreeMap<ViolationKind, Vec<Issue>> = BTreeMap::new();
    for issue in issues {
        by_kind.entry(issue.kind).or_default().push(issue);
    }
    for (kind, issues) in by_kind {
        let details: Vec<String> = issues.iter().map(|i| i.detail.clone()).collect();
        let group = w.group.map_or(String::new(), |g| format!(" g={g}"));
        let message = format!("watch #{n} (client {}, {:?}{group}): {}", w.client, w.start, first_few(&details));
        let lo = issues.iter().flat_map(|i| &i.rvs).min().copied().unwrap_or(0);
        let hi = issues.iter().flat_map(|i| &i.rvs).max().copied().unwrap_or(0);
        let ops = issues.iter().flat_map(|i| i.ops.iter().copied());
        let ops: Vec<usize> = cat.ops_between(lo, hi, CONTEXT_WRITES).into_iter().chain(ops).collect();
        out.add(kind, message, || excerpt(h, ops, vec![cut(w, lo, hi)]));
    }
}

/// The stream with only the events from the last one before `lo` to the first one after `hi`
/// (and the initial-events-end bookmark), so a long stream shows just the neighbourhood.
fn cut(w: &WatchStream, lo: u64, hi: u64) -> WatchStream {
    let from = w.events.iter().map(|e| e.rv).filter(|&rv| rv < lo).max().unwrap_or(lo);
    let to = w.events.iter().map(|e| e.rv).filter(|&rv| rv > hi).min().unwrap_or(hi);
    let events = w.events.iter().filter(|e| (from..=to).contains(&e.rv) || e.initial_events_end).cloned().collect();
    WatchStream { events, ..w.clone() }
}
