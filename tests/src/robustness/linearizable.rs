//! A generic linearizability search: Wing & Gong's depth-first search over the operations that
//! may take effect next, with Lowe's memoisation of (operations done, model state), so two
//! orders reaching the same state are explored once.
//!
//! Operations whose outcome is unknown are *optional*: the search may apply them or leave them
//! out. One that never returned (`ret == u64::MAX`) never bounds the others, so it is simply
//! left pending; one that returned (a 5xx) must be applied or dropped before anything called
//! after its return, so dropping it is a move of the search.
//!
//! A long history is searched window by window ([`explore`] with [`Goal::Returned`]): at a cut
//! where nothing that returned is still in flight, the search collects every configuration it
//! can be in (a state, and the never-returned operations that may still take effect), and the
//! next window starts from exactly those. The cost then grows with the history's length, not
//! with the product of its windows' choices.

use std::collections::HashSet;
use std::hash::{BuildHasherDefault, DefaultHasher, Hash, Hasher};

/// A sequential specification.
pub(crate) trait Model {
    /// The state; cloned and hashed at every step, so keep it small.
    type State: Clone + Eq + Hash;
    /// One operation with its observed result; equal operations are interchangeable.
    type Op: PartialEq;

    /// The state before any operation.
    fn init(&self) -> Self::State;

    /// The state after `op`, or `None` when `op` cannot have returned what it did in `state`.
    fn step(&self, state: &Self::State, op: &Self::Op) -> Option<Self::State>;

    /// Whether `op` is a read: it leaves every state it is possible in unchanged, except
    /// perhaps states that cannot be reached again once left (a read may refine a state the
    /// model knows little about). A read that leaves the current state unchanged is applied
    /// without trying alternatives: moving it first never hurts.
    fn is_read(&self, op: &Self::Op) -> bool;

    /// Whether `op` can no longer take effect in `state` nor in any state after it (a guarded
    /// write whose revision the key has moved past): a window's search stops carrying it.
    fn expired(&self, state: &Self::State, op: &Self::Op) -> bool;
}

/// An operation with its time window.
#[derive(Debug, Clone)]
pub(crate) struct Entry<O> {
    /// When it was called.
    pub call: u64,
    /// When it returned; `u64::MAX` for never.
    pub ret: u64,
    /// Whether the search may leave it out (an unknown outcome).
    pub optional: bool,
    /// The operation.
    pub op: O,
}

/// What the search found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// A linearization exists.
    Linearizable,
    /// No order explains the history.
    NotLinearizable,
    /// The step budget ran out first.
    Undecided,
}

#[derive(Debug, Clone, Copy)]
enum Move {
    Apply(usize),
    Drop(usize),
}

impl Move {
    fn index(self) -> usize {
        match self {
            Move::Apply(i) | Move::Drop(i) => i,
        }
    }
}

struct Frame {
    moves: Vec<Move>,
    next: usize,
}

/// Searches for a linearization of `entries`, trying at most `budget` moves; also returns the
/// moves tried, so a caller running many searches can bound their sum.
pub(crate) fn search<M: Model>(model: &M, entries: &[Entry<M::Op>], budget: u64) -> (Outcome, u64) {
    let found = explore(model, entries, &[Start { state: model.init(), done: Vec::new() }], Goal::All, budget);
    (found.outcome, found.steps)
}

/// Where a search stops.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Goal {
    /// Every operation that must take effect has: the end of the history.
    All,
    /// Every operation that returned has taken effect or been dropped: a cut in time after
    /// which only never-returned operations (`ret == u64::MAX`) may still take effect.
    Returned,
}

/// A configuration a search starts from: a state, and the entries already done in it.
#[derive(Debug, Clone)]
pub(crate) struct Start<S> {
    pub state: S,
    /// Indices into the searched entries.
    pub done: Vec<usize>,
}

/// What [`explore`] found.
#[derive(Debug)]
pub(crate) struct Found<S> {
    pub outcome: Outcome,
    /// Moves tried.
    pub steps: u64,
    /// For [`Goal::Returned`]: every configuration reachable at the cut, as its state and the
    /// never-returned entries not yet done (indices into the searched entries, ascending).
    pub ends: Vec<(S, Vec<usize>)>,
}

/// Wing & Gong's search from each of `starts` towards `goal`. For [`Goal::All`] it stops at
/// the first linearization; for [`Goal::Returned`] it collects every configuration at the
/// cut (the history is linearizable so far if there is one), so the search of what follows
/// can start from exactly those: a long history is then searched window by window.
pub(crate) fn explore<M: Model>(
    model: &M,
    entries: &[Entry<M::Op>],
    starts: &[Start<M::State>],
    goal: Goal,
    budget: u64,
) -> Found<M::State> {
    let mut order: Vec<usize> = (0..entries.len()).collect();
    order.sort_by_key(|&i| (entries[i].call, entries[i].ret));
    let mut position = vec![0; entries.len()];
    for (at, &i) in order.iter().enumerate() {
        position[i] = at;
    }
    let sorted: Vec<&Entry<M::Op>> = order.iter().map(|&i| &entries[i]).collect();
    let never_returns = |i: usize| sorted[i].ret == u64::MAX;
    let never_due = |i: usize| sorted[i].optional && never_returns(i);
    let mut memo = Memo::new(sorted.len());
    let mut ends = HashSet::new();
    let mut steps = 0u64;
    for start in starts {
        let mut done = BitSet::new(sorted.len());
        memo.done = 0;
        for &i in &start.done {
            done.set(position[i]);
            memo.toggle(position[i]);
        }
        let open: Vec<usize> = done.zeros().collect();
        // Entries that must still take effect; entries that returned and are not yet decided.
        let mut left = open.iter().filter(|&&i| !sorted[i].optional).count();
        let mut returned = open.iter().filter(|&&i| !never_returns(i)).count();
        let mut states = vec![start.state.clone()];
        let mut path: Vec<usize> = Vec::new();
        // The operations on the path that never returned and were optional: see `Memo::visit`.
        let mut spent_optional: Vec<usize> = Vec::new();
        let mut frames = vec![Frame { moves: moves(model, &sorted, &done, &start.state), next: 0 }];
        loop {
            let complete = match goal {
                Goal::All => left == 0,
                Goal::Returned => returned == 0,
            };
            if complete {
                if goal == Goal::All {
                    return Found { outcome: Outcome::Linearizable, steps, ends: Vec::new() };
                }
                // What follows the cut can apply the remaining never-returned entries: no need
                // to try them here.
                let mut pending: Vec<usize> = done.zeros().map(|i| order[i]).collect();
                pending.sort_unstable();
                ends.insert((states.last().expect("a state").clone(), pending));
                if let Some(frame) = frames.last_mut() {
                    frame.next = frame.moves.len();
                }
            }
            let Some(frame) = frames.last_mut() else { break };
            let Some(&mv) = frame.moves.get(frame.next) else {
                frames.pop();
                if let Some(i) = path.pop() {
                    done.clear(i);
                    memo.toggle(i);
                    states.pop();
                    left += usize::from(!sorted[i].optional);
                    returned += usize::from(!never_returns(i));
                    if never_due(i) {
                        spent_optional.pop();
                    }
                }
                continue;
            };
            frame.next += 1;
            steps += 1;
            if steps > budget {
                return Found { outcome: Outcome::Undecided, steps, ends: Vec::new() };
            }
            let state = states.last().expect("a state per depth");
            let next = match mv {
                Move::Apply(i) => model.step(state, &sorted[i].op),
                Move::Drop(_) => Some(state.clone()),
            };
            let Some(next) = next else { continue };
            let i = mv.index();
            memo.toggle(i);
            let optional = spent_optional.iter().copied().chain(never_due(i).then_some(i));
            if !memo.visit(&next, optional) {
                memo.toggle(i);
                continue;
            }
            done.set(i);
            left -= usize::from(!sorted[i].optional);
            returned -= usize::from(!never_returns(i));
            if never_due(i) {
                spent_optional.push(i);
            }
            path.push(i);
            frames.push(Frame { moves: moves(model, &sorted, &done, &next), next: 0 });
            states.push(next);
        }
    }
    let outcome = if ends.is_empty() { Outcome::NotLinearizable } else { Outcome::Linearizable };
    Found { outcome, steps, ends: ends.into_iter().collect() }
}

/// Lowe's cache of visited (operations done, state) configurations, kept as 128-bit
/// fingerprints: a random key per operation XORed over those done (updated in O(1) per move)
/// and a hash of the state. 16 bytes per configuration instead of a bitset and a state; a
/// collision, which would prune a branch, has a chance of about n²/2¹²⁸.
struct Memo {
    keys: Vec<u128>,
    done: u128,
    seen: HashSet<u128, BuildHasherDefault<Fingerprints>>,
}

impl Memo {
    fn new(n: usize) -> Self {
        let mut seed = 0x5EED_u64;
        let keys = (0..n).map(|_| u128::from(splitmix(&mut seed)) << 64 | u128::from(splitmix(&mut seed))).collect();
        Self { keys, done: 0, seen: HashSet::default() }
    }

    /// Adds or removes operation `i` from the done set.
    fn toggle(&mut self, i: usize) {
        self.done ^= self.keys[i];
    }

    /// Records the current done set with `state`; false if it was seen, or is dominated.
    ///
    /// Dominated: the same state was reached with one of the `optional` never-returned
    /// operations not yet applied. Leaving such an operation out never constrains the rest,
    /// so that configuration can do everything this one can; without the check every
    /// absorbed unknown write (say a create a blind delete then removed) would double the
    /// space the search explores.
    fn visit<S: Hash>(&mut self, state: &S, optional: impl Iterator<Item = usize>) -> bool {
        let state = state_print(state);
        let print = self.done ^ state;
        if self.seen.contains(&print) || optional.into_iter().any(|o| self.seen.contains(&(print ^ self.keys[o]))) {
            return false;
        }
        self.seen.insert(print)
    }
}

fn splitmix(seed: &mut u64) -> u64 {
    *seed = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *seed;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Two independent 64-bit hashes of a state.
fn state_print<S: Hash>(state: &S) -> u128 {
    let half = |salt: u64| {
        let mut h = DefaultHasher::new();
        salt.hash(&mut h);
        state.hash(&mut h);
        h.finish()
    };
    u128::from(half(1)) << 64 | u128::from(half(2))
}

/// Fingerprints are already random: hashing them again would only cost time.
#[derive(Default)]
struct Fingerprints(u64);

impl Hasher for Fingerprints {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }

    fn write_u128(&mut self, n: u128) {
        self.0 = n as u64;
    }
}

/// The moves possible after `done`: every operation called before the earliest return among
/// those not done may go next. A read possible now is the only move (see [`Model::is_read`]).
fn moves<M: Model>(model: &M, sorted: &[&Entry<M::Op>], done: &BitSet, state: &M::State) -> Vec<Move> {
    let mut bound = u64::MAX;
    let mut candidates = Vec::new();
    for i in done.zeros() {
        let e = sorted[i];
        if e.call > bound {
            break;
        }
        if !e.optional || e.ret != u64::MAX {
            bound = bound.min(e.ret);
        }
        candidates.push(i);
    }
    // A later candidate may have lowered the bound below an earlier one's call.
    candidates.retain(|&i| sorted[i].call <= bound);
    // Of equal operations that never returned and may go now, trying one is enough: what
    // follows cannot tell them apart.
    let mut tried: Vec<(&M::Op, bool)> = Vec::new();
    candidates.retain(|&i| {
        let e = sorted[i];
        if e.ret != u64::MAX {
            return true;
        }
        if tried.contains(&(&e.op, e.optional)) {
            return false;
        }
        tried.push((&e.op, e.optional));
        true
    });
    for &i in &candidates {
        let op = &sorted[i].op;
        if model.is_read(op) && model.step(state, op).as_ref() == Some(state) {
            return vec![Move::Apply(i)];
        }
    }
    candidates.sort_by_key(|&i| sorted[i].ret);
    let mut out: Vec<Move> = candidates.iter().map(|&i| Move::Apply(i)).collect();
    out.extend(candidates.iter().filter(|&&i| sorted[i].optional && sorted[i].ret != u64::MAX).map(|&i| Move::Drop(i)));
    out
}

/// A fixed-size set of operation indices.
#[derive(Debug, Clone)]
struct BitSet {
    words: Box<[u64]>,
    len: usize,
}

impl BitSet {
    fn new(len: usize) -> Self {
        Self { words: vec![0; len.div_ceil(64)].into_boxed_slice(), len }
    }

    fn set(&mut self, i: usize) {
        self.words[i / 64] |= 1 << (i % 64);
    }

    fn clear(&mut self, i: usize) {
        self.words[i / 64] &= !(1 << (i % 64));
    }

    /// The indices not in the set, ascending, skipping full words at once.
    fn zeros(&self) -> impl Iterator<Item = usize> + '_ {
        self.words
            .iter()
            .enumerate()
            .flat_map(move |(w, &word)| {
                let mut free = !word;
                std::iter::from_fn(move || {
                    if free == 0 {
                        return None;
                    }
                    let bit = free.trailing_zeros() as usize;
                    free &= free - 1;
                    Some(w * 64 + bit)
                })
            })
            .take_while(move |&i| i < self.len)
    }
}
