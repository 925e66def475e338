//! The checker of the robustness run: given what clients did and saw while faults fired
//! ([`History`]), it says whether a correct Kubernetes API server could have answered so.
//!
//! 1. **Patching.** Every write's value is unique, so an unknown-outcome write whose value
//!    any read or event shows did happen, at the first revision it was seen with. Writes never
//!    seen may or may not have happened.
//! 2. **Per-key linearizability** of creates, guarded updates and deletes and consistent gets
//!    (P-compositionality: one search per key), by Wing & Gong's search with Lowe's
//!    memoisation against the model of one ConfigMap, window by window between the points
//!    where nothing that returned is in flight. Unknown outcomes are optional. A failure
//!    is classified as a stale read, a lost write or plain non-linearizable, and the key's
//!    history is shrunk to the few operations that still fail.
//! 3. **Revisions.** One global counter: two writes never share a revision, a write's revision
//!    exceeds the one it replaced and every write acknowledged before it was called.
//! 4. **Lists.** A list at revision R holds exactly each key's last known write at or below R;
//!    a consistent list's R is at least every revision acknowledged before it was called.
//! 5. **Watches** (etcd's robustness guarantees): ordered, unrepeated, each event equal to the
//!    known write at its revision, no gap between the start and the last event or bookmark
//!    (nor an ADDED while the object exists, or a MODIFIED or DELETED while it does not),
//!    bookmarks neither behind nor ahead of events, initial events exactly the state at R.
//!
//! It assumes the namespace is empty when the run starts. Every violation carries a small
//! history a reader can study (and check again); the [`Report`] writes them to a directory.

pub mod harness;
mod history;
mod keys;
mod linearizable;
mod lists;
mod model;
mod revisions;
pub mod traffic;
mod watch;

#[cfg(test)]
mod tests;

pub use history::{
    EventKind, History, Item, Operation, Request, Response, WatchEnd, WatchEvent, WatchStart, WatchStream,
};

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// Bounds on the work of one check.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Search moves per window of a key's history before the key is left undecided: a
    /// blow-up costs one key's verdict, not the run, and a long history is not undecided for
    /// its length alone.
    pub steps_per_window: u64,
    /// Search moves the minimiser may spend on one violation; then it keeps what it has.
    pub shrink_steps: u64,
    /// Violations kept per kind; more are only counted, so one bug does not bury the rest.
    pub max_per_kind: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self { steps_per_window: 4_000_000, shrink_steps: 5_000_000, max_per_kind: 50 }
    }
}

/// What a violation breaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum ViolationKind {
    /// No order of one key's operations explains them.
    NotLinearizable,
    /// A read missed a write acknowledged before it was called.
    StaleRead,
    /// An acknowledged write that nothing replaced is missing from every later read.
    LostWrite,
    /// Two writes at one revision, or a write not above the revision it replaced.
    RevisionConflict,
    /// A write acknowledged before another was called has the higher revision.
    RealTimeOrder,
    /// A list that is no snapshot of the store at its revision.
    InconsistentList,
    /// A watch event at or below an earlier one's revision.
    WatchOutOfOrder,
    /// A watch event delivered twice.
    WatchRepeatedEvent,
    /// A known write within a watch's range that it did not deliver.
    WatchGap,
    /// An event that is not the write at its revision (kind, key, value or group).
    WatchWrongEvent,
    /// An event at or below an earlier bookmark's revision.
    BookmarkAhead,
    /// A bookmark below an earlier event's revision.
    BookmarkBehind,
}

impl fmt::Display for ViolationKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

/// One broken guarantee.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Violation {
    /// What it breaks.
    pub kind: ViolationKind,
    /// What was seen, naming the operations.
    pub message: String,
    /// The operations and watches involved (a shrunk key history for the per-key kinds).
    pub history: History,
}

/// The verdict on a history.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Report {
    /// Operations checked.
    pub operations: usize,
    /// Watch streams checked.
    pub watches: usize,
    /// Watch events checked.
    pub events: usize,
    /// Keys whose operations were checked for linearizability.
    pub keys: usize,
    /// Keys whose search ran out of steps: neither passed nor failed.
    pub undecided_keys: Vec<String>,
    /// Windows the keys' histories were searched in (see `keys::search_windows`).
    #[serde(default)]
    pub windows: usize,
    /// Violations found beyond [`Limits::max_per_kind`], counted but not kept.
    pub suppressed: usize,
    /// What was found.
    pub violations: Vec<Violation>,
}

impl Report {
    /// Whether the history passed every check (undecided keys are not failures).
    pub fn is_clean(&self) -> bool {
        self.violations.is_empty()
    }

    /// How many violations of `kind` were kept.
    pub fn count(&self, kind: ViolationKind) -> usize {
        self.violations.iter().filter(|v| v.kind == kind).count()
    }

    /// One line: sizes, undecided keys and violations by kind.
    pub fn summary(&self) -> String {
        let mut by_kind: BTreeMap<ViolationKind, usize> = BTreeMap::new();
        for v in &self.violations {
            *by_kind.entry(v.kind).or_default() += 1;
        }
        let verdict = if by_kind.is_empty() {
            "no violations".to_string()
        } else {
            let kinds: Vec<String> = by_kind.iter().map(|(k, n)| format!("{n} {k}")).collect();
            format!("{} violations ({})", self.violations.len() + self.suppressed, kinds.join(", "))
        };
        format!(
            "{} operations, {} watches, {} events, {} keys in {} windows ({} undecided): {verdict}",
            self.operations,
            self.watches,
            self.events,
            self.keys,
            self.windows,
            self.undecided_keys.len()
        )
    }

    /// Writes each violation as pretty JSON to `dir/NNN-Kind.json` (creating `dir`), for a
    /// reader; returns the files written.
    pub fn write_violations(&self, dir: &Path) -> io::Result<Vec<PathBuf>> {
        std::fs::create_dir_all(dir)?;
        let mut files = Vec::with_capacity(self.violations.len());
        for (n, v) in self.violations.iter().enumerate() {
            let path = dir.join(format!("{n:03}-{}.json", v.kind));
            std::fs::write(&path, serde_json::to_vec_pretty(v).map_err(io::Error::other)?)?;
            files.push(path);
        }
        Ok(files)
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.summary())?;
        for v in &self.violations {
            write!(f, "\n  {}: {}", v.kind, v.message)?;
        }
        Ok(())
    }
}

/// Checks a history with the default [`Limits`].
pub fn check(history: &History) -> Report {
    check_with(history, &Limits::default())
}

/// Checks a history: see the module documentation for what.
pub fn check_with(history: &History, limits: &Limits) -> Report {
    let res = revisions::resolve(history);
    let cat = revisions::Catalogue::build(history, &res);
    let mut out = Findings::new(limits.max_per_kind);
    let keys = keys::check(history, &res, limits, &mut out);
    revisions::check(history, &res, &cat, &mut out);
    lists::check(history, &res, &cat, &mut out);
    watch::check(history, &res, &cat, &mut out);
    Report {
        operations: history.operations.len(),
        watches: history.watches.len(),
        events: history.watches.iter().map(|w| w.events.len()).sum(),
        keys: keys.checked,
        undecided_keys: keys.undecided,
        windows: keys.windows,
        suppressed: out.suppressed,
        violations: out.violations,
    }
}

/// The violations found so far, at most `max_per_kind` kept per kind.
pub(crate) struct Findings {
    violations: Vec<Violation>,
    per_kind: HashMap<ViolationKind, usize>,
    max_per_kind: usize,
    suppressed: usize,
}

impl Findings {
    fn new(max_per_kind: usize) -> Self {
        Self { violations: Vec::new(), per_kind: HashMap::new(), max_per_kind, suppressed: 0 }
    }

    /// Records a violation; its history is built only if it is kept.
    pub(crate) fn add(&mut self, kind: ViolationKind, message: String, history: impl FnOnce() -> History) {
        let n = self.per_kind.entry(kind).or_default();
        *n += 1;
        if *n > self.max_per_kind {
            self.suppressed += 1;
            return;
        }
        self.violations.push(Violation { kind, message, history: history() });
    }
}

/// The sub-history of operations `ops` (in their original order) and `watches`.
pub(crate) fn excerpt(h: &History, ops: impl IntoIterator<Item = usize>, watches: Vec<WatchStream>) -> History {
    let mut ops: Vec<usize> = ops.into_iter().collect();
    ops.sort_unstable();
    ops.dedup();
    History { operations: ops.into_iter().map(|i| h.operations[i].clone()).collect(), watches }
}

/// Joins the first few of many findings' details into one message.
pub(crate) fn first_few(details: &[String]) -> String {
    const SHOWN: usize = 5;
    let mut text = details.iter().take(SHOWN).cloned().collect::<Vec<_>>().join("; ");
    if details.len() > SHOWN {
        text.push_str(&format!("; and {} more", details.len() - SHOWN));
    }
    text
}
