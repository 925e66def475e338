//! The sequential specification of one ConfigMap, as kube-apiserver v1.30 serves it: creates
//! fail if it exists, guarded updates and deletes compare the resourceVersion, every write gets
//! a revision above every earlier one. Values are interned per key, so a state is a few words.

use std::collections::HashSet;

use super::linearizable::Model;

/// The value of every write of unknown outcome that no read or event showed: one no read
/// matches. Such writes differ only in when they were called, so the search tries only one of
/// several alike.
pub(crate) const UNSEEN: u32 = u32::MAX;

/// What a write answered, as the model needs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WriteResult {
    /// It took effect, at this revision if known (an unknown outcome's revision is unknown
    /// unless a read or event showed its value).
    Applied(Option<u64>),
    /// 409 AlreadyExists.
    AlreadyExists,
    /// 409 Conflict.
    Conflict,
    /// 404.
    NotFound,
}

/// One operation on the key with its result; values are interned ids.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum KeyOp {
    /// POST.
    Create { value: u32, result: WriteResult },
    /// Guarded PUT.
    Update { value: u32, expected: u64, result: WriteResult },
    /// DELETE with an optional precondition.
    Delete { expected: Option<u64>, result: WriteResult },
    /// A consistent GET that found this value at this revision.
    Found { value: u32, rv: u64 },
    /// A consistent GET answered 404.
    Absent,
    /// An answer the request cannot get (say, `Updated` to a create): never possible.
    Invalid,
}

/// The key's value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Current {
    /// No object.
    Absent,
    /// An object; its revision is unknown when an unobserved unknown-outcome write made it.
    Present { value: u32, rv: Option<u64> },
    /// Whatever writes left out of a shrunk history made: anything not contradicted by the
    /// writes still in it (see [`KeyModel::shrunk`]).
    Dropped,
}

/// The model's state: the value and the revision of the key's last write, which the next
/// write must exceed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct KeyState {
    current: Current,
    floor: u64,
}

/// One key's specification.
#[derive(Debug, Clone)]
pub(crate) struct KeyModel {
    start: Current,
    /// For a shrunk history: which value ids a write still in it writes.
    written: Vec<bool>,
    /// The known revisions of the key's writes, which a write of unknown revision cannot
    /// have had: without them, an object of unknown revision would match every guarded
    /// write and the search would explore them all.
    revisions: HashSet<u64>,
}

impl KeyModel {
    /// The model of a key that does not exist when the run starts; `revisions` are the known
    /// revisions of its writes.
    pub(crate) fn fresh(revisions: HashSet<u64>) -> Self {
        Self { start: Current::Absent, written: Vec::new(), revisions }
    }

    /// The model of a key whose history lost some writes to the minimiser: it starts in
    /// whatever state they left, so an update whose predecessor was dropped is not a violation
    /// of its own. `written` holds the value ids and `revisions` the revisions of the writes
    /// kept: those the dropped writes cannot explain.
    pub(crate) fn shrunk(written: Vec<bool>, revisions: HashSet<u64>) -> Self {
        Self { start: Current::Dropped, written, revisions }
    }

    /// Whether the object in `s` has resourceVersion `expected`, as far as is known: one of
    /// unknown revision got one above the key's last and held by no other write.
    fn has_rv(&self, s: KeyState, expected: u64) -> bool {
        match s.current {
            Current::Absent => false,
            Current::Present { rv: Some(rv), .. } => rv == expected,
            Current::Present { rv: None, .. } => expected > s.floor && !self.revisions.contains(&expected),
            Current::Dropped => !self.revisions.contains(&expected),
        }
    }

    /// Whether an object in `current` might not have resourceVersion `expected`.
    fn may_differ(current: Current, expected: u64) -> bool {
        match current {
            Current::Absent => false,
            Current::Present { rv, .. } => rv != Some(expected),
            Current::Dropped => true,
        }
    }

    fn was_written(&self, value: u32) -> bool {
        self.written.get(value as usize).copied().unwrap_or(false)
    }

    fn create(&self, s: KeyState, value: u32, result: WriteResult) -> Option<KeyState> {
        match (s.current, result) {
            (Current::Absent | Current::Dropped, WriteResult::Applied(rv)) => s.write(Some(value), rv),
            (Current::Present { .. } | Current::Dropped, WriteResult::AlreadyExists) => Some(s),
            _ => None,
        }
    }

    fn update(&self, s: KeyState, value: u32, expected: u64, result: WriteResult) -> Option<KeyState> {
        match result {
            WriteResult::Applied(rv) if self.has_rv(s, expected) && rv.is_none_or(|rv| rv > expected) => {
                s.write(Some(value), rv)
            }
            WriteResult::Conflict if Self::may_differ(s.current, expected) => Some(s),
            WriteResult::NotFound => s.absent(),
            _ => None,
        }
    }

    fn delete(&self, s: KeyState, expected: Option<u64>, result: WriteResult) -> Option<KeyState> {
        let allowed = expected.is_none_or(|e| self.has_rv(s, e));
        match result {
            WriteResult::Applied(rv) if s.current != Current::Absent && allowed => s.write(None, rv),
            WriteResult::Conflict if expected.is_some_and(|e| Self::may_differ(s.current, e)) => Some(s),
            WriteResult::NotFound => s.absent(),
            _ => None,
        }
    }

    fn found(&self, s: KeyState, value: u32, rv: u64) -> Option<KeyState> {
        match s.current {
            Current::Present { value: v, rv: r } if v == value && r.is_none_or(|r| r == rv) => Some(s),
            Current::Dropped if !self.was_written(value) && !self.revisions.contains(&rv) => {
                Some(KeyState { current: Current::Present { value, rv: Some(rv) }, floor: s.floor.max(rv) })
            }
            _ => None,
        }
    }
}

impl KeyState {
    /// The state after a write of `value` (`None`: a delete) at `rv`, if `rv` is above the
    /// key's last revision.
    fn write(self, value: Option<u32>, rv: Option<u64>) -> Option<KeyState> {
        if rv.is_some_and(|rv| rv <= self.floor) {
            return None;
        }
        let current = value.map_or(Current::Absent, |value| Current::Present { value, rv });
        Some(KeyState { current, floor: rv.unwrap_or(self.floor) })
    }

    /// The state after a 404, if one is possible.
    fn absent(self) -> Option<KeyState> {
        match self.current {
            Current::Present { .. } => None,
            Current::Absent | Current::Dropped => Some(KeyState { current: Current::Absent, ..self }),
        }
    }
}

impl Model for KeyModel {
    type State = KeyState;
    type Op = KeyOp;

    fn init(&self) -> KeyState {
        KeyState { current: self.start, floor: 0 }
    }

    fn step(&self, s: &KeyState, op: &KeyOp) -> Option<KeyState> {
        match *op {
            KeyOp::Create { value, result } => self.create(*s, value, result),
            KeyOp::Update { value, expected, result } => self.update(*s, value, expected, result),
            KeyOp::Delete { expected, result } => self.delete(*s, expected, result),
            KeyOp::Found { value, rv } => self.found(*s, value, rv),
            KeyOp::Absent => s.absent(),
            KeyOp::Invalid => None,
        }
    }

    fn expired(&self, s: &KeyState, op: &KeyOp) -> bool {
        // Revisions only grow: once the key's last write is past a guard or a known revision,
        // nothing brings it back.
        let past = |rv: Option<u64>| rv.is_some_and(|rv| rv <= s.floor);
        match *op {
            KeyOp::Create { result: WriteResult::Applied(rv), .. } => past(rv),
            KeyOp::Update { expected, result: WriteResult::Applied(rv), .. } => expected < s.floor || past(rv),
            KeyOp::Delete { expected, result: WriteResult::Applied(rv) } => {
                expected.is_some_and(|e| e < s.floor) || past(rv)
            }
            _ => false,
        }
    }

    fn is_read(&self, op: &KeyOp) -> bool {
        matches!(
            op,
            KeyOp::Found { .. }
                | KeyOp::Absent
                | KeyOp::Create { result: WriteResult::AlreadyExists, .. }
                | KeyOp::Update { result: WriteResult::Conflict | WriteResult::NotFound, .. }
                | KeyOp::Delete { result: WriteResult::Conflict | WriteResult::NotFound, .. }
        )
    }
}
