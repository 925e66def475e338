//! Per-key linearizability: each key's operations (lists aside) searched on their own, a
//! failure classified by a simple rule and its history shrunk to the operations that matter.

use std::collections::{BTreeMap, HashMap, HashSet};

use super::history::{History, Request, Response, WatchEvent, WatchStart, WatchStream};
use super::linearizable::{Entry, Goal, Model, Outcome, Start, explore, search};
use super::model::{KeyModel, KeyOp, KeyState, UNSEEN, WriteResult};
use super::revisions::{Effect, Resolution};
use super::{Findings, Limits, ViolationKind, excerpt};

/// What the per-key pass covered.
pub(crate) struct KeyStats {
    /// Keys searched.
    pub checked: usize,
    /// Keys whose search ran out of steps.
    pub undecided: Vec<String>,
    /// Windows searched, over all keys.
    pub windows: usize,
}

/// Searches every key and reports the failures.
pub(crate) fn check(h: &History, res: &Resolution, limits: &Limits, out: &mut Findings) -> KeyStats {
    let mut by_key: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, op) in h.operations.iter().enumerate() {
        let unknown_read = !op.request.is_write() && !op.outcome_known();
        if let Some(key) = op.request.key().filter(|_| !unknown_read && op.response != Response::Gone) {
            by_key.entry(key).or_default().push(i);
        }
    }
    let (mut undecided, mut windows) = (Vec::new(), 0);
    for (&key, ops) in &by_key {
        let key_ops = KeyOps::new(h, res, ops);
        let (verdict, searched) = search_windows(res, &key_ops, limits.steps_per_window);
        windows += searched;
        match verdict {
            Verdict::Linearizable => {}
            Verdict::Undecided => undecided.push(key.to_string()),
            Verdict::FailsBy { window, prefix } => {
                // The failing window alone when it fails from any state; else everything
                // through it, which fails from the key's start.
                let ops_of = |entries: &[usize]| {
                    let mut ops: Vec<usize> = entries.iter().map(|&n| key_ops.ops[n]).collect();
                    ops.sort_unstable();
                    KeyOps::new(h, res, &ops)
                };
                let window = ops_of(&window);
                let all: Vec<usize> = (0..window.ops.len()).collect();
                let alone = window.still_fails(res, &all, limits.shrink_steps / 4).0;
                report(h, res, &if alone { window } else { ops_of(&prefix) }, key, limits, out);
            }
        }
    }
    KeyStats { checked: by_key.len(), undecided, windows }
}

/// Operations a window holds at least before it may end at a cut: carrying configurations
/// across a cut costs more than searching a few operations more.
const MIN_WINDOW: usize = 64;
/// Configurations carried across one cut before the key is left undecided.
const MAX_CARRIED: usize = 4096;

/// What the windowed search of one key found.
enum Verdict {
    Linearizable,
    Undecided,
    /// Not linearizable: the entries (indices into the key's entries) of the window where
    /// the search found no configuration, with those carried into it, and all the entries
    /// through it.
    FailsBy {
        window: Vec<usize>,
        prefix: Vec<usize>,
    },
}

/// Searches one key's history window by window: the history is cut wherever every operation
/// that returned did so before the next one was called, and each window is searched from
/// every configuration the one before could end in (see [`explore`]). A cut is exact, so the
/// verdict is the one a search of the whole history would give, in time that grows with the
/// history instead of with the product of its windows' choices. Each window may take
/// `budget` moves. Also returns the windows searched.
fn search_windows(res: &Resolution, key_ops: &KeyOps, budget: u64) -> (Verdict, usize) {
    let entries = &key_ops.entries;
    let model = KeyModel::fresh(key_ops.revisions(res));
    let mut order: Vec<usize> = (0..entries.len()).collect();
    order.sort_by_key(|&n| (entries[n].call, entries[n].ret));
    let mut windows = Vec::new();
    let (mut begin, mut latest_return) = (0, 0);
    for (at, &n) in order.iter().enumerate() {
        if at - begin >= MIN_WINDOW && latest_return < entries[n].call {
            windows.push(begin..at);
            begin = at;
        }
        if entries[n].ret != u64::MAX {
            latest_return = latest_return.max(entries[n].ret);
        }
    }
    windows.push(begin..order.len());

    let mut configs = vec![(model.init(), Vec::<usize>::new())];
    for (w, range) in windows.iter().enumerate() {
        let last = w + 1 == windows.len();
        let mut carried: Vec<usize> = configs.iter().flat_map(|(_, pending)| pending.iter().copied()).collect();
        carried.sort_unstable();
        carried.dedup();
        let ids: Vec<usize> = carried.iter().chain(&order[range.clone()]).copied().collect();
        let window: Vec<Entry<KeyOp>> = ids.iter().map(|&n| entries[n].clone()).collect();
        let starts: Vec<Start<KeyState>> = configs
            .iter()
            .map(|(state, pending)| Start {
                state: *state,
                done: (0..carried.len()).filter(|&j| pending.binary_search(&carried[j]).is_err()).collect(),
            })
            .collect();
        let goal = if last { Goal::All } else { Goal::Returned };
        let found = explore(&model, &window, &starts, goal, budget);
        let fails = || (Verdict::FailsBy { window: ids.clone(), prefix: order[..range.end].to_vec() }, w + 1);
        match found.outcome {
            Outcome::Undecided => return (Verdict::Undecided, w + 1),
            Outcome::NotLinearizable => return fails(),
            Outcome::Linearizable if last => return (Verdict::Linearizable, w + 1),
            Outcome::Linearizable => {}
        }
        let ends =
            found.ends.into_iter().map(|(state, pending)| (state, pending.into_iter().map(|j| ids[j]).collect()));
        configs = carry(&model, entries, ends);
        if configs.is_empty() {
            return fails();
        }
        if configs.len() > MAX_CARRIED {
            return (Verdict::Undecided, w + 1);
        }
    }
    (Verdict::Linearizable, windows.len())
}

/// The configurations worth carrying across a cut: never-returned operations that can no
/// longer take effect are let go (a configuration that still owed one of them is impossible),
/// and a configuration is dropped when another has the same state and more optional
/// operations left to apply, since it can do everything the first can.
fn carry(
    model: &KeyModel,
    entries: &[Entry<KeyOp>],
    ends: impl Iterator<Item = (KeyState, Vec<usize>)>,
) -> Vec<(KeyState, Vec<usize>)> {
    let mut out: Vec<(KeyState, Vec<usize>)> = Vec::new();
    'each: for (state, pending) in ends {
        let mut kept = Vec::with_capacity(pending.len());
        for n in pending {
            if !model.expired(&state, &entries[n].op) {
                kept.push(n);
            } else if !entries[n].optional {
                continue 'each;
            }
        }
        out.push((state, kept));
    }
    // Carried operations alike (the same operation, all called before the cut, none
    // returned) are interchangeable: which of them are left does not matter, only how many.
    // Each configuration keeps the first ones of each kind, so such configurations become one.
    let mut alike: Vec<(KeyOp, Vec<usize>)> = Vec::new();
    for n in out.iter().flat_map(|(_, pending)| pending.iter().copied()) {
        match alike.iter_mut().find(|(op, _)| *op == entries[n].op) {
            Some((_, members)) => members.push(n),
            None => alike.push((entries[n].op, vec![n])),
        }
    }
    for (_, members) in &mut alike {
        members.sort_unstable();
        members.dedup();
    }
    for (_, pending) in &mut out {
        let mut canonical = Vec::with_capacity(pending.len());
        for (op, members) in &alike {
            let count = pending.iter().filter(|&&n| entries[n].op == *op).count();
            canonical.extend_from_slice(&members[..count]);
        }
        canonical.sort_unstable();
        *pending = canonical;
    }
    let unique: HashSet<(KeyState, Vec<usize>)> = out.into_iter().collect();
    let mut out: Vec<(KeyState, Vec<usize>)> = unique.into_iter().collect();
    // Larger pending sets first, so each is kept before those it covers.
    out.sort_unstable_by(|a, b| b.1.len().cmp(&a.1.len()).then_with(|| a.1.cmp(&b.1)));
    if out.len() > MAX_CARRIED {
        return out;
    }
    let covers = |big: &(KeyState, Vec<usize>), small: &(KeyState, Vec<usize>)| {
        big.0 == small.0
            && small.1.iter().all(|n| big.1.binary_search(n).is_ok())
            && big.1.iter().all(|n| small.1.binary_search(n).is_ok() || entries[*n].optional)
    };
    let mut kept: Vec<(KeyState, Vec<usize>)> = Vec::with_capacity(out.len());
    for config in out {
        if !kept.iter().any(|big| covers(big, &config)) {
            kept.push(config);
        }
    }
    kept
}

/// Classifies and shrinks one key's failure, then records it.
fn report(h: &History, res: &Resolution, key_ops: &KeyOps, key: &str, limits: &Limits, out: &mut Findings) {
    let all: Vec<usize> = (0..key_ops.ops.len()).collect();
    let found = classify(h, res, &key_ops.ops);
    let witnesses: Vec<usize> = all.iter().copied().filter(|&n| found.witnesses.contains(&key_ops.ops[n])).collect();
    let keep = minimise(res, key_ops, &witnesses, limits.shrink_steps);
    let message = format!("key {key}: {} (shrunk to {} of its {} operations)", found.message, keep.len(), all.len());
    out.add(found.kind, message, || render(h, res, &key_ops.pick(&keep)));
}

/// One key's operations as search entries; `ops[n]` is the history index of `entries[n]`.
struct KeyOps {
    ops: Vec<usize>,
    entries: Vec<Entry<KeyOp>>,
    /// The interned value each entry writes, if it may have written one.
    writes: Vec<Option<u32>>,
    values: usize,
}

impl KeyOps {
    fn new<'h>(h: &'h History, res: &Resolution, ops: &[usize]) -> Self {
        let mut ids: HashMap<&'h str, u32> = HashMap::new();
        let mut intern = |v: &'h str| {
            let next = ids.len() as u32;
            *ids.entry(v).or_insert(next)
        };
        let mut entries = Vec::with_capacity(ops.len());
        let mut writes = Vec::with_capacity(ops.len());
        for &i in ops {
            let op = &h.operations[i];
            // No read or event showed a write of unknown outcome: its value is one no read
            // can match, the same for all of them, so the search treats them as alike.
            let value = match res.effects[i] {
                Effect::Maybe => op.request.value().map(|_| UNSEEN),
                _ => op.request.value().map(&mut intern),
            };
            let (step, optional) = key_op(&op.request, &op.response, res.effects[i], value, &mut intern);
            writes.push(value.filter(|&v| v != UNSEEN && matches!(res.effects[i], Effect::Applied(_))));
            // An unknown outcome may take effect up to its return (a 5xx), if it returned at all.
            let ret = op.ret_or_max().max(op.call);
            entries.push(Entry { call: op.call, ret, optional, op: step });
        }
        Self { ops: ops.to_vec(), entries, writes, values: ids.len() }
    }

    /// The history indices of entries `picked`.
    fn pick(&self, picked: &[usize]) -> Vec<usize> {
        picked.iter().map(|&n| self.ops[n]).collect()
    }

    /// The known revisions of the writes among entries `subset`.
    fn revisions_of(&self, res: &Resolution, subset: &[usize]) -> HashSet<u64> {
        let known = subset.iter().map(|&n| res.effects[self.ops[n]]);
        known.filter_map(|e| if let Effect::Applied(rv) = e { rv } else { None }).collect()
    }

    /// The known revisions of all the key's writes.
    fn revisions(&self, res: &Resolution) -> HashSet<u64> {
        self.revisions_of(res, &(0..self.ops.len()).collect::<Vec<_>>())
    }

    /// Whether entries `subset` still fail, judged as a shrunk history (see
    /// [`KeyModel::shrunk`]); also the moves spent.
    fn still_fails(&self, res: &Resolution, subset: &[usize], budget: u64) -> (bool, u64) {
        let mut written = vec![false; self.values];
        for v in subset.iter().filter_map(|&n| self.writes[n]) {
            written[v as usize] = true;
        }
        let revisions = self.revisions_of(res, subset);
        let entries: Vec<Entry<KeyOp>> = subset.iter().map(|&n| self.entries[n].clone()).collect();
        let (outcome, steps) = search(&KeyModel::shrunk(written, revisions), &entries, budget);
        (outcome == Outcome::NotLinearizable, steps)
    }
}

/// The model's view of one operation, and whether the search may leave it out.
fn key_op<'h>(
    request: &'h Request,
    response: &'h Response,
    effect: Effect,
    value: Option<u32>,
    intern: &mut impl FnMut(&'h str) -> u32,
) -> (KeyOp, bool) {
    use WriteResult::{AlreadyExists, Applied, Conflict, NotFound};
    let result = match (effect, response) {
        (Effect::Applied(rv), _) => Some(Applied(rv)),
        (Effect::Maybe, _) => Some(Applied(None)),
        (Effect::None, Response::AlreadyExists) => Some(AlreadyExists),
        (Effect::None, Response::Conflict) => Some(Conflict),
        (Effect::None, Response::NotFound) => Some(NotFound),
        (Effect::None, _) => None,
    };
    let op = match (request, result, value) {
        (Request::Get { .. }, _, _) => match response {
            Response::Found { value, rv } => KeyOp::Found { value: intern(value), rv: *rv },
            Response::NotFound => KeyOp::Absent,
            _ => KeyOp::Invalid,
        },
        (Request::Create { .. }, Some(result @ (Applied(_) | AlreadyExists)), Some(value)) => {
            KeyOp::Create { value, result }
        }
        (Request::Update { expected_rv, .. }, Some(result @ (Applied(_) | Conflict | NotFound)), Some(value)) => {
            KeyOp::Update { value, expected: *expected_rv, result }
        }
        (Request::Delete { expected_rv, .. }, Some(result @ (Applied(_) | Conflict | NotFound)), _) => {
            KeyOp::Delete { expected: *expected_rv, result }
        }
        _ => KeyOp::Invalid,
    };
    (op, effect == Effect::Maybe)
}

/// Greedy shrinking: drops chunks of operations, halving the chunk size down to one, while the
/// rest still fails; the `witnesses` the classification names always stay. Ends early when the
/// budget is spent.
fn minimise(res: &Resolution, key_ops: &KeyOps, witnesses: &[usize], budget: u64) -> Vec<usize> {
    let mut keep: Vec<usize> = (0..key_ops.ops.len()).collect();
    let (fails, mut spent) = key_ops.still_fails(res, &keep, budget);
    if !fails {
        return keep;
    }
    let mut chunk = keep.len().div_ceil(2);
    loop {
        // From the end backwards: what follows a violation rarely matters.
        let mut end = keep.len();
        while end > 0 && spent < budget {
            let start = end.saturating_sub(chunk);
            let rest: Vec<usize> = (keep.iter().enumerate())
                .filter(|&(at, n)| !(start..end).contains(&at) || witnesses.contains(n))
                .map(|(_, &n)| n)
                .collect();
            if rest.len() < keep.len() {
                let (fails, steps) = key_ops.still_fails(res, &rest, budget - spent);
                spent += steps;
                if fails {
                    keep = rest;
                }
            }
            end = start.min(keep.len());
        }
        if chunk == 1 || spent >= budget {
            return keep;
        }
        chunk = chunk.div_ceil(2);
    }
}

/// A history operation's facts the classification needs.
struct Fact<'h> {
    i: usize,
    call: u64,
    ret: u64,
    request: &'h Request,
    response: &'h Response,
    effect: Effect,
    /// A write acknowledged with its revision.
    acked_rv: Option<u64>,
}

impl<'h> Fact<'h> {
    fn new(h: &'h History, res: &Resolution, i: usize) -> Self {
        let op = &h.operations[i];
        let acked_rv = match res.effects[i] {
            Effect::Applied(rv) if op.outcome_known() => rv,
            _ => None,
        };
        Fact {
            i,
            call: op.call,
            ret: op.ret_or_max(),
            request: &op.request,
            response: &op.response,
            effect: res.effects[i],
            acked_rv,
        }
    }

    fn is_read(&self) -> bool {
        matches!(self.request, Request::Get { .. })
            && matches!(self.response, Response::Found { .. } | Response::NotFound)
    }

    /// Whether it may have written after revision `rv` (its own revision above, or unknown).
    fn may_supersede(&self, rv: u64) -> bool {
        match self.effect {
            Effect::Applied(r) => r.is_none_or(|r| r > rv),
            Effect::Maybe => true,
            Effect::None => false,
        }
    }
}

/// A failure's name, what shows it, and the operations that show it.
struct Classified {
    kind: ViolationKind,
    message: String,
    /// History indices the minimiser must keep.
    witnesses: Vec<usize>,
}

/// Names a failure: a lost write, a stale read, or else plain non-linearizability.
fn classify(h: &History, res: &Resolution, ops: &[usize]) -> Classified {
    let facts: Vec<Fact> = ops.iter().map(|&i| Fact::new(h, res, i)).collect();
    let named = |kind, message, witnesses| Classified { kind, message, witnesses };
    if let Some((w, r)) = lost_write(&facts) {
        let message = format!(
            "{} is missing from every later read, first {}, and nothing replaced it",
            h.operations[w], h.operations[r]
        );
        return named(ViolationKind::LostWrite, message, vec![w, r]);
    }
    if let Some((r, w)) = stale_read(&facts) {
        let message = format!("{} returned after {} had returned", h.operations[r], h.operations[w]);
        return named(ViolationKind::StaleRead, message, vec![r, w]);
    }
    let message = format!("no order of these {} operations explains what they returned", ops.len());
    named(ViolationKind::NotLinearizable, message, Vec::new())
}

/// An acknowledged create or update that no later read shows, although no other write may
/// have replaced it before those reads returned: (the write, the first later read).
fn lost_write(facts: &[Fact]) -> Option<(usize, usize)> {
    for w in facts {
        let (Some(rv), Some(value)) = (w.acked_rv, w.request.value()) else { continue };
        let later: Vec<&Fact> = facts.iter().filter(|r| r.is_read() && r.call > w.ret).collect();
        let seen = later.iter().any(|r| matches!(r.response, Response::Found { value: v, .. } if v == value));
        if later.is_empty() || seen {
            continue;
        }
        let horizon = later.iter().map(|r| r.ret).max().unwrap_or(0);
        if !facts.iter().any(|x| x.i != w.i && x.call < horizon && x.may_supersede(rv)) {
            return Some((w.i, later[0].i));
        }
    }
    None
}

/// A get that returned a state a write acknowledged before the get was called had replaced:
/// (the get, the write).
fn stale_read(facts: &[Fact]) -> Option<(usize, usize)> {
    for r in facts.iter().filter(|r| r.is_read()) {
        let mut earlier = facts.iter().filter(|w| w.ret < r.call);
        let stale = match r.response {
            Response::Found { rv, .. } => earlier.find(|w| w.acked_rv.is_some_and(|w_rv| w_rv > *rv)),
            _ => earlier.find(|w| {
                let (Some(w_rv), Some(_)) = (w.acked_rv, w.request.value()) else { return false };
                !facts
                    .iter()
                    .any(|d| matches!(d.request, Request::Delete { .. }) && d.call < r.ret && d.may_supersede(w_rv))
            }),
        };
        if let Some(w) = stale {
            return Some((r.i, w.i));
        }
    }
    None
}

/// The shrunk history: its operations, plus for each unknown-outcome write that was seen a
/// one-event watch showing it, so checking the excerpt again patches it the same way.
fn render(h: &History, res: &Resolution, ops: &[usize]) -> History {
    let mut watches = Vec::new();
    for &i in ops {
        let op = &h.operations[i];
        let (Effect::Applied(Some(rv)), false) = (res.effects[i], op.outcome_known()) else { continue };
        let (Some(key), Some(value)) = (op.request.key(), op.request.value()) else { continue };
        let event = match op.request {
            Request::Create { .. } => WatchEvent::added(key, value, rv),
            _ => WatchEvent::modified(key, value, rv),
        };
        let mut evidence = WatchStream::new(op.client, op.call, WatchStart::FromNow);
        evidence.events.push(event);
        watches.push(evidence);
    }
    excerpt(h, ops.iter().copied(), watches)
}
