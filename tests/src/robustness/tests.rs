//! Unit tests of the checker: valid histories (hand-written and simulated from a correct store)
//! pass, and each deliberately broken one is reported with the kind it breaks.

use std::collections::BTreeMap;
use std::time::Instant;

use super::traffic::Rng;
use super::*;

fn done(client: u32, call: u64, ret: u64, request: Request, response: Response) -> Operation {
    Operation::new(client, call, Some(ret), request, response)
}

fn unknown(client: u32, call: u64, request: Request) -> Operation {
    Operation::new(client, call, None, request, Response::Unknown)
}

fn found(value: &str, rv: u64) -> Response {
    Response::Found { value: value.into(), rv }
}

fn list(client: u32, call: u64, ret: u64, consistent: bool, revision: u64, items: &[(&str, &str, u64)]) -> Operation {
    let items = items.iter().map(|&(k, v, rv)| Item::new(k, v, rv)).collect();
    done(client, call, ret, Request::List { consistent }, Response::Listed { revision, items })
}

fn watch(start: WatchStart, events: Vec<WatchEvent>) -> WatchStream {
    WatchStream { events, bookmarks: true, ..WatchStream::new(9, 0, start) }
}

fn history(operations: Vec<Operation>, watches: Vec<WatchStream>) -> History {
    History { operations, watches }
}

/// The distinct kinds reported.
fn kinds(report: &Report) -> Vec<ViolationKind> {
    let mut kinds: Vec<ViolationKind> = report.violations.iter().map(|v| v.kind).collect();
    kinds.sort();
    kinds.dedup();
    kinds
}

fn assert_clean(h: &History) -> Report {
    let report = check(h);
    assert!(report.is_clean() && report.undecided_keys.is_empty(), "{report}");
    report
}

fn assert_only(h: &History, kind: ViolationKind) -> Report {
    let report = check(h);
    assert_eq!(kinds(&report), vec![kind], "{report}");
    report
}

/// Three writes to three keys at revisions 2, 3 and 4.
fn three_creates() -> Vec<Operation> {
    vec![
        done(1, 0, 10, Request::create("a", "a1", 1), Response::Created { rv: 2 }),
        done(1, 20, 30, Request::create("b", "b1", 1), Response::Created { rv: 3 }),
        done(1, 40, 50, Request::create("c", "c1", 1), Response::Created { rv: 4 }),
    ]
}

#[test]
fn concurrent_overlapping_writes_and_reads_pass() {
    let h = history(
        vec![
            done(1, 0, 10, Request::create("a", "a1", 0), Response::Created { rv: 2 }),
            // The update overlaps two gets: one sees it, one does not.
            done(1, 20, 60, Request::update("a", "a2", 2), Response::Updated { rv: 5 }),
            done(2, 25, 40, Request::get("a"), found("a1", 2)),
            done(3, 30, 70, Request::get("a"), found("a2", 5)),
            done(4, 21, 50, Request::update("a", "a3", 2), Response::Conflict),
            done(2, 45, 55, Request::create("a", "a4", 0), Response::AlreadyExists),
            done(2, 80, 90, Request::delete("a", Some(5)), Response::Deleted { rv: Some(7) }),
            done(3, 85, 95, Request::get("a"), Response::NotFound),
            done(4, 100, 110, Request::get("a"), Response::NotFound),
            list(1, 120, 130, true, 8, &[]),
        ],
        Vec::new(),
    );
    assert_clean(&h);
}

#[test]
fn unknown_writes_that_did_or_did_not_happen_pass() {
    let h = history(
        vec![
            done(1, 0, 10, Request::create("a", "a1", 0), Response::Created { rv: 2 }),
            // Happened: a later get shows its value, so it is patched to revision 4.
            unknown(2, 20, Request::update("a", "a2", 2)),
            done(1, 30, 40, Request::get("a"), found("a2", 4)),
            done(1, 50, 60, Request::update("a", "a3", 4), Response::Updated { rv: 6 }),
            // Did not happen: nothing shows it and the key stays absent.
            unknown(3, 20, Request::create("b", "b1", 0)),
            done(1, 70, 80, Request::get("b"), Response::NotFound),
            // A 5xx that did happen before it returned.
            Operation::new(4, 90, Some(100), Request::create("c", "c1", 0), Response::Unknown),
            done(4, 110, 120, Request::get("c"), found("c1", 8)),
            // Never seen, never contradicted: may have happened.
            unknown(5, 130, Request::delete("c", None)),
            unknown(6, 140, Request::update("a", "a4", 6)),
            list(1, 200, 210, false, 8, &[("a", "a3", 6), ("c", "c1", 8)]),
        ],
        Vec::new(),
    );
    assert_clean(&h);
}

#[test]
fn watches_of_every_start_with_a_group_and_bookmarks_pass() {
    let ops = vec![
        done(1, 0, 10, Request::create("a", "a1", 1), Response::Created { rv: 2 }),
        done(1, 20, 30, Request::create("b", "b1", 2), Response::Created { rv: 4 }),
        done(1, 40, 50, Request::update("a", "a2", 2), Response::Updated { rv: 6 }),
        done(1, 60, 70, Request::delete("b", None), Response::Deleted { rv: Some(8) }),
        done(1, 80, 90, Request::delete("a", Some(6)), Response::Deleted { rv: None }),
    ];
    let every = watch(
        WatchStart::FromRevision(0),
        vec![
            WatchEvent::added("a", "a1", 2),
            WatchEvent::bookmark(3),
            WatchEvent::added("b", "b1", 4),
            WatchEvent::modified("a", "a2", 6),
            WatchEvent::deleted("b", "b1", 8),
            WatchEvent::deleted("a", "a2", 9),
            WatchEvent::bookmark(12),
        ],
    );
    let group_one_from_now = WatchStream {
        group: Some(1),
        ..watch(
            WatchStart::FromNow,
            // The state (a1 at 2) as an ADDED event first, then what changed after.
            vec![
                WatchEvent::added("a", "a1", 2),
                WatchEvent::modified("a", "a2", 6),
                WatchEvent::bookmark(8),
                WatchEvent::deleted("a", "a2", 9),
            ],
        )
    };
    let initial = WatchStream {
        call: 35,
        group: Some(1),
        ..watch(
            WatchStart::InitialEvents,
            vec![
                WatchEvent::added("a", "a1", 2),
                WatchEvent::initial_events_end(5),
                WatchEvent::modified("a", "a2", 6),
            ],
        )
    };
    let initial_all = WatchStream {
        call: 55,
        ..watch(
            WatchStart::InitialEvents,
            vec![
                WatchEvent::added("b", "b1", 4),
                WatchEvent::added("a", "a2", 6),
                WatchEvent::initial_events_end(7),
                WatchEvent::deleted("b", "b1", 8),
            ],
        )
    };
    let h = history(ops, vec![every, group_one_from_now, initial, initial_all]);
    let report = assert_clean(&h);
    assert_eq!((report.watches, report.events), (4, 18));
}

#[test]
fn a_watch_that_ended_gone_passes() {
    let gone_at_once = WatchStream { end: WatchEnd::Gone, ..watch(WatchStart::FromRevision(1), Vec::new()) };
    let gone_later = WatchStream {
        end: WatchEnd::Gone,
        ..watch(WatchStart::FromRevision(1), vec![WatchEvent::added("a", "a1", 2), WatchEvent::added("b", "b1", 3)])
    };
    assert_clean(&history(three_creates(), vec![gone_at_once, gone_later]));
}

#[test]
fn a_stale_but_consistent_rv0_list_passes() {
    let mut ops = three_creates();
    ops.push(done(1, 60, 70, Request::update("a", "a2", 2), Response::Updated { rv: 6 }));
    // At revision 3, after everything returned: stale, but a true snapshot.
    ops.push(list(2, 100, 110, false, 3, &[("a", "a1", 2), ("b", "b1", 3)]));
    assert_clean(&history(ops, Vec::new()));
}

#[test]
fn a_lost_write_is_reported() {
    let h = history(
        vec![
            done(1, 0, 10, Request::create("a", "a1", 0), Response::Created { rv: 3 }),
            done(2, 20, 30, Request::get("a"), Response::NotFound),
            done(3, 40, 50, Request::get("a"), Response::NotFound),
            list(2, 60, 70, true, 5, &[]),
        ],
        Vec::new(),
    );
    assert_only(&h, ViolationKind::LostWrite);
}

#[test]
fn a_stale_read_is_reported() {
    let h = history(
        vec![
            done(1, 0, 10, Request::create("a", "a1", 0), Response::Created { rv: 2 }),
            done(1, 20, 30, Request::update("a", "a2", 2), Response::Updated { rv: 4 }),
            done(2, 40, 50, Request::get("a"), found("a1", 2)),
            done(2, 60, 70, Request::get("a"), found("a2", 4)),
        ],
        Vec::new(),
    );
    assert_only(&h, ViolationKind::StaleRead);
}

#[test]
fn a_stale_consistent_list_is_a_stale_read() {
    let mut ops = three_creates();
    ops.push(list(2, 100, 110, true, 3, &[("a", "a1", 2), ("b", "b1", 3)]));
    assert_only(&history(ops, Vec::new()), ViolationKind::StaleRead);
}

#[test]
fn a_watch_gap_is_reported() {
    let w = watch(WatchStart::FromRevision(1), vec![WatchEvent::added("a", "a1", 2), WatchEvent::added("c", "c1", 4)]);
    let report = assert_only(&history(three_creates(), vec![w]), ViolationKind::WatchGap);
    assert!(report.violations[0].message.contains("b=b1 at 3"), "{report}");
}

#[test]
fn a_gap_in_initial_events_is_reported() {
    let w = WatchStream {
        call: 60,
        ..watch(
            WatchStart::InitialEvents,
            vec![WatchEvent::added("a", "a1", 2), WatchEvent::added("c", "c1", 4), WatchEvent::initial_events_end(4)],
        )
    };
    assert_only(&history(three_creates(), vec![w]), ViolationKind::LostWrite);
}

#[test]
fn a_missing_delete_known_to_no_one_else_is_a_gap() {
    let h = history(
        vec![
            done(1, 0, 10, Request::create("a", "a1", 0), Response::Created { rv: 2 }),
            done(1, 20, 30, Request::delete("a", None), Response::Deleted { rv: None }),
            done(1, 40, 50, Request::create("a", "a2", 0), Response::Created { rv: 6 }),
        ],
        vec![watch(
            WatchStart::FromRevision(0),
            vec![WatchEvent::added("a", "a1", 2), WatchEvent::added("a", "a2", 6)],
        )],
    );
    let report = assert_only(&h, ViolationKind::WatchGap);
    assert!(report.violations[0].message.contains("existed since 2"), "{report}");
}

#[test]
fn a_repeated_event_is_reported() {
    let w = watch(
        WatchStart::FromRevision(1),
        vec![WatchEvent::added("a", "a1", 2), WatchEvent::added("a", "a1", 2), WatchEvent::added("b", "b1", 3)],
    );
    assert_only(&history(three_creates(), vec![w]), ViolationKind::WatchRepeatedEvent);
}

#[test]
fn an_out_of_order_event_is_reported() {
    let w = watch(
        WatchStart::FromRevision(1),
        vec![WatchEvent::added("b", "b1", 3), WatchEvent::added("a", "a1", 2), WatchEvent::added("c", "c1", 4)],
    );
    assert_only(&history(three_creates(), vec![w]), ViolationKind::WatchOutOfOrder);
}

#[test]
fn a_bookmark_ahead_of_an_event_is_reported() {
    let w = watch(
        WatchStart::FromRevision(1),
        vec![WatchEvent::added("a", "a1", 2), WatchEvent::bookmark(3), WatchEvent::added("b", "b1", 3)],
    );
    assert_only(&history(three_creates(), vec![w]), ViolationKind::BookmarkAhead);
}

#[test]
fn a_bookmark_behind_an_event_is_reported() {
    let w = watch(
        WatchStart::FromRevision(1),
        vec![WatchEvent::added("a", "a1", 2), WatchEvent::added("b", "b1", 3), WatchEvent::bookmark(2)],
    );
    assert_only(&history(three_creates(), vec![w]), ViolationKind::BookmarkBehind);
}

#[test]
fn a_wrong_event_is_reported() {
    // MODIFIED for a create, and an event of another group than the watch selects.
    let w =
        watch(WatchStart::FromRevision(1), vec![WatchEvent::modified("a", "a1", 2), WatchEvent::added("b", "b1", 3)]);
    let mut ops = three_creates();
    ops[1] = done(1, 20, 30, Request::create("b", "b1", 2), Response::Created { rv: 3 });
    let w = WatchStream { group: Some(1), ..w };
    let report = assert_only(&history(ops, vec![w]), ViolationKind::WatchWrongEvent);
    assert!(report.violations[0].message.contains("group 2"), "{report}");
}

#[test]
fn two_writes_at_one_revision_are_reported() {
    let h = history(
        vec![
            done(1, 0, 10, Request::create("a", "a1", 0), Response::Created { rv: 5 }),
            done(2, 0, 10, Request::create("b", "b1", 0), Response::Created { rv: 5 }),
        ],
        Vec::new(),
    );
    assert_only(&h, ViolationKind::RevisionConflict);
}

#[test]
fn a_real_time_order_violation_is_reported() {
    let h = history(
        vec![
            done(1, 0, 10, Request::create("a", "a1", 0), Response::Created { rv: 7 }),
            done(2, 20, 30, Request::create("b", "b1", 0), Response::Created { rv: 5 }),
        ],
        Vec::new(),
    );
    assert_only(&h, ViolationKind::RealTimeOrder);
}

#[test]
fn an_inconsistent_list_is_reported() {
    let mut ops = three_creates();
    // At revision 4 b must be there; a list at rv=0 may be stale, but not torn.
    ops.push(list(2, 100, 110, false, 4, &[("a", "a1", 2), ("c", "c1", 4)]));
    assert_only(&history(ops, Vec::new()), ViolationKind::InconsistentList);
}

#[test]
fn two_guarded_updates_from_one_revision_are_not_linearizable() {
    let h = history(
        vec![
            done(1, 0, 10, Request::create("a", "a1", 0), Response::Created { rv: 2 }),
            done(1, 20, 40, Request::update("a", "a2", 2), Response::Updated { rv: 3 }),
            done(2, 20, 40, Request::update("a", "a3", 2), Response::Updated { rv: 4 }),
        ],
        Vec::new(),
    );
    let report = assert_only(&h, ViolationKind::NotLinearizable);
    assert_eq!(report.violations[0].history.operations.len(), 2, "{report}");
}

#[test]
fn the_minimiser_keeps_only_the_operations_that_matter() {
    let mut ops = vec![done(1, 0, 10, Request::create("a", "v0", 0), Response::Created { rv: 1 })];
    let mut t = 20;
    let mut step = |ops: &mut Vec<Operation>, n: u64, stale: bool| {
        ops.push(done(1, t, t + 10, Request::update("a", format!("v{n}"), n), Response::Updated { rv: n + 1 }));
        // Each read overlaps the next update.
        let (value, rv) = if stale { (format!("v{}", n - 1), n) } else { (format!("v{n}"), n + 1) };
        ops.push(done(2, t + 15, t + 40, Request::get("a"), found(&value, rv)));
        t += 30;
    };
    for n in 1..=60 {
        step(&mut ops, n, n == 40);
    }
    assert_eq!(ops.len(), 121);
    let report = assert_only(&history(ops, Vec::new()), ViolationKind::StaleRead);
    // The update that returned and the read after it.
    let kept = &report.violations[0].history.operations;
    assert_eq!(kept.len(), 2, "{report}");
    assert_eq!(kept[0].request, Request::update("a", "v40", 40));
}

#[test]
fn a_history_and_its_violations_round_trip_through_json() {
    let w = watch(WatchStart::InitialEvents, vec![WatchEvent::initial_events_end(1)]);
    let h = history(three_creates(), vec![w]);
    let text = serde_json::to_string(&h).unwrap();
    assert_eq!(serde_json::from_str::<History>(&text).unwrap(), h);

    let dir = tempfile::tempdir().unwrap();
    let mut broken = three_creates();
    broken[2].response = Response::Created { rv: 3 };
    let report = check(&history(broken, Vec::new()));
    let files = report.write_violations(dir.path()).unwrap();
    assert_eq!(files.len(), report.violations.len());
    let back: Violation = serde_json::from_slice(&std::fs::read(&files[0]).unwrap()).unwrap();
    assert_eq!(back, report.violations[0]);
    assert!(report.summary().contains("RevisionConflict"), "{report}");
}

#[test]
fn simulated_valid_histories_pass() {
    for seed in 1..=20 {
        let h = Sim::new(seed, 6).run(6, 600);
        let report = check(&h);
        assert!(report.is_clean() && report.undecided_keys.is_empty(), "seed {seed}: {report}");
    }
}

#[test]
fn a_large_valid_history_checks_quickly() {
    let h = Sim::new(7, 20).run(8, 5_000);
    let started = Instant::now();
    let report = check(&h);
    let took = started.elapsed();
    assert!(report.is_clean() && report.undecided_keys.is_empty(), "{report}");
    assert_eq!(report.operations, 5_000);
    println!("{report} in {took:?}");
    assert!(took.as_secs_f64() < 3.0, "took {took:?}");
}

/// A write as the correct store made it, for watches and snapshots.
struct Logged {
    rv: u64,
    at: u64,
    key: String,
    kind: EventKind,
    value: String,
    group: u8,
}

impl Logged {
    fn event(&self) -> WatchEvent {
        WatchEvent {
            kind: self.kind,
            key: self.key.clone(),
            value: self.value.clone(),
            rv: self.rv,
            initial_events_end: false,
        }
    }
}

/// A correct store driven by concurrent clients: each operation takes effect atomically at a
/// random instant of its window, revisions skip numbers (other resources), some outcomes are
/// lost.
struct Sim {
    rng: Rng,
    keys: u64,
    rv: u64,
    store: BTreeMap<String, (String, u64)>,
    log: Vec<Logged>,
    values: u64,
}

/// An operation planned before the store answers it.
struct Plan {
    client: u32,
    call: u64,
    ret: u64,
    at: u64,
}

impl Sim {
    fn new(seed: u64, keys: u64) -> Self {
        Self { rng: Rng::new(seed), keys, rv: 1, store: BTreeMap::new(), log: Vec::new(), values: 0 }
    }

    fn group(key: &str) -> u8 {
        key.bytes().map(u32::from).sum::<u32>() as u8 % 3
    }

    /// `ops` operations by `clients` clients, and five watches over the result.
    fn run(mut self, clients: u32, ops: usize) -> History {
        let mut plans = Vec::with_capacity(ops);
        let mut free = vec![0u64; clients as usize];
        for n in 0..ops {
            let client = n % clients as usize;
            let call = free[client] + self.rng.below(50_000);
            let ret = call + 10_000 + self.rng.below(2_000_000);
            plans.push(Plan { client: client as u32, call, ret, at: call + self.rng.below(ret - call) });
            free[client] = ret;
        }
        plans.sort_by_key(|p| p.at);
        let operations = plans.iter().map(|p| self.apply(p)).collect();
        let end = free.into_iter().max().unwrap_or(0);
        let watches = self.watches(end);
        History { operations, watches }
    }

    fn apply(&mut self, p: &Plan) -> Operation {
        let key = format!("k{}", self.rng.below(self.keys));
        self.values += 1;
        let value = format!("{key}-{}", self.values);
        let current = self.store.get(&key).cloned();
        let guess = |rng: &mut Rng, rv: Option<u64>| match rv {
            Some(rv) if rng.chance(80) => rv,
            _ => rng.below(rv.unwrap_or(5) + 2),
        };
        let pick = self.rng.below(100);
        let request = match pick {
            0..20 => Request::create(key.clone(), value, Self::group(&key)),
            20..50 => {
                let expected = guess(&mut self.rng, current.as_ref().map(|c| c.1));
                Request::update(key.clone(), value, expected)
            }
            50..60 => {
                let expected = self.rng.chance(50).then(|| guess(&mut self.rng, current.as_ref().map(|c| c.1)));
                Request::delete(key.clone(), expected)
            }
            60..90 => Request::get(key.clone()),
            _ => Request::List { consistent: self.rng.chance(70) },
        };
        if request.is_write() && self.rng.chance(4) {
            // Lost: it happens or not, and the client sees a 5xx or nothing.
            if self.rng.chance(50) {
                self.answer(&request, current, p.at);
            }
            let ret = self.rng.chance(50).then_some(p.ret);
            return Operation::new(p.client, p.call, ret, request, Response::Unknown);
        }
        let response = self.answer(&request, current, p.at);
        Operation::new(p.client, p.call, Some(p.ret), request, response)
    }

    fn answer(&mut self, request: &Request, current: Option<(String, u64)>, at: u64) -> Response {
        match (request, current) {
            (Request::Create { .. }, Some(_)) => Response::AlreadyExists,
            (Request::Create { key, value, group }, None) => {
                Response::Created { rv: self.write(key, Some(value), EventKind::Added, *group, at) }
            }
            (Request::Update { .. } | Request::Delete { .. } | Request::Get { .. }, None) => Response::NotFound,
            (Request::Update { expected_rv, .. }, Some((_, rv))) if *expected_rv != rv => Response::Conflict,
            (Request::Update { key, value, .. }, Some(_)) => {
                Response::Updated { rv: self.write(key, Some(value), EventKind::Modified, Self::group(key), at) }
            }
            (Request::Delete { expected_rv: Some(e), .. }, Some((_, rv))) if *e != rv => Response::Conflict,
            (Request::Delete { key, .. }, Some((last, _))) => {
                let rv = self.write(key, None, EventKind::Deleted, Self::group(key), at);
                self.log.last_mut().expect("just logged").value = last;
                Response::Deleted { rv: self.rng.chance(80).then_some(rv) }
            }
            (Request::Get { .. }, Some((value, rv))) => Response::Found { value, rv },
            (Request::List { consistent }, _) => self.list(*consistent),
        }
    }

    fn write(&mut self, key: &str, value: Option<&String>, kind: EventKind, group: u8, at: u64) -> u64 {
        self.rv += 1 + self.rng.below(3);
        match value {
            Some(v) => self.store.insert(key.to_string(), (v.clone(), self.rv)),
            None => self.store.remove(key),
        };
        let value = value.cloned().unwrap_or_default();
        self.log.push(Logged { rv: self.rv, at, key: key.to_string(), kind, value, group });
        self.rv
    }

    /// A consistent list sees the store now; an rv=0 list one of the last few revisions.
    fn list(&mut self, consistent: bool) -> Response {
        let revision = if consistent || self.log.is_empty() {
            self.rv
        } else {
            let back = self.rng.below(10.min(self.log.len() as u64)) as usize;
            self.log[self.log.len() - 1 - back].rv
        };
        let items = self.state_at(revision).into_iter().map(|(key, (value, rv, _))| Item { key, value, rv }).collect();
        Response::Listed { revision, items }
    }

    fn state_at(&self, revision: u64) -> BTreeMap<String, (String, u64, u8)> {
        let mut state = BTreeMap::new();
        for w in self.log.iter().take_while(|w| w.rv <= revision) {
            match w.kind {
                EventKind::Deleted => state.remove(&w.key),
                _ => state.insert(w.key.clone(), (w.value.clone(), w.rv, w.group)),
            };
        }
        state
    }

    /// Every write from the start; group 1 from a point on; initial events of group 2; a
    /// resumed watch that breaks; a watch that finds its revision compacted.
    fn watches(&mut self, end: u64) -> Vec<WatchStream> {
        let mid = end / 3;
        let all = self.stream(WatchStart::FromRevision(0), None, 0, 0);
        let from_now = self.stream(WatchStart::FromNow, Some(1), mid, 0);
        let initial = self.stream(WatchStart::InitialEvents, Some(2), mid, 0);
        let resume = self.log.get(self.log.len() / 2).map_or(0, |w| w.rv);
        let mut resumed = self.stream(WatchStart::FromRevision(resume), None, mid, resume);
        resumed.events.truncate(resumed.events.len() / 2);
        resumed.end = WatchEnd::Broken;
        let gone = WatchStream { end: WatchEnd::Gone, ..WatchStream::new(0, end, WatchStart::FromRevision(1)) };
        vec![all, from_now, initial, resumed, gone]
    }

    /// A stream of the writes after `call` (or after `after`), with bookmarks sprinkled in.
    fn stream(&mut self, start: WatchStart, group: Option<u8>, call: u64, after: u64) -> WatchStream {
        let mut w = WatchStream { group, bookmarks: true, ..WatchStream::new(0, call, start) };
        let from = match start {
            WatchStart::FromRevision(_) => self.log.partition_point(|l| l.rv <= after),
            _ => self.log.partition_point(|l| l.at <= call),
        };
        if start != WatchStart::FromRevision(after) {
            let revision = from.checked_sub(1).map_or(0, |i| self.log[i].rv);
            let mut initial: Vec<WatchEvent> = (self.state_at(revision).into_iter())
                .filter(|(_, (_, _, g))| group.is_none_or(|want| want == *g))
                .map(|(key, (value, rv, _))| WatchEvent::added(key, value, rv))
                .collect();
            initial.reverse();
            w.events.extend(initial);
            // A watch without a resourceVersion sends the state with no bookmark after it.
            if start == WatchStart::InitialEvents {
                w.events.push(WatchEvent::initial_events_end(revision));
            }
        }
        for l in &self.log[from..] {
            if group.is_none_or(|g| g == l.group) {
                w.events.push(l.event());
            }
            if self.rng.chance(5) {
                w.events.push(WatchEvent::bookmark(l.rv));
            }
        }
        w
    }
}

/// One corruption of a valid simulated history and the kind it must be reported as.
fn corruptions(base: &History) -> Vec<(&'static str, History, &'static [ViolationKind])> {
    let mut out: Vec<(&'static str, History, &'static [ViolationKind])> = Vec::new();
    let rv_of = |i: usize| match base.operations[i].response {
        Response::Created { rv } | Response::Updated { rv } => Some(rv),
        _ => None,
    };
    let acked: Vec<usize> = (0..base.operations.len()).filter(|&i| rv_of(i).is_some()).collect();
    let acked_rvs: Vec<u64> = acked.iter().filter_map(|&i| rv_of(i)).collect();
    // Events in the middle of the all-keys watch whose write was acknowledged: an event only
    // the watch knows of can be dropped unnoticed.
    let ordinary: Vec<usize> = (base.watches[0].events.iter().enumerate())
        .filter(|(_, e)| e.kind != EventKind::Bookmark && acked_rvs.contains(&e.rv))
        .map(|(i, _)| i)
        .collect();
    let (a, b) = (ordinary[ordinary.len() / 2], ordinary[ordinary.len() / 2 + 1]);
    let mut h = base.clone();
    h.watches[0].events.remove(a);
    out.push(("a watch drops an event", h, &[ViolationKind::WatchGap]));
    let mut h = base.clone();
    h.watches[0].events.swap(a, b);
    out.push(("a watch swaps two events", h, &[ViolationKind::WatchOutOfOrder]));
    let mut h = base.clone();
    let event = h.watches[0].events[a].clone();
    h.watches[0].events.insert(b, event);
    out.push(("a watch repeats an event", h, &[ViolationKind::WatchRepeatedEvent]));

    // A get after an acknowledged update returns the value the update replaced.
    let writer_at = |key: &str, rv: u64| {
        (0..base.operations.len()).find(|&i| base.operations[i].request.key() == Some(key) && rv_of(i) == Some(rv))
    };
    'stale: for op in &base.operations {
        let (Request::Update { key, value, expected_rv }, Response::Updated { rv }, Some(ret)) =
            (&op.request, &op.response, op.ret)
        else {
            continue;
        };
        let Some(before) = writer_at(key, *expected_rv) else { continue };
        for (g, get) in base.operations.iter().enumerate() {
            if get.call > ret && get.request == Request::get(key.clone()) && get.response == found(value, *rv) {
                let mut h = base.clone();
                let old = base.operations[before].request.value().unwrap_or_default();
                h.operations[g].response = found(old, *expected_rv);
                out.push(("a get returns a replaced value", h, &[ViolationKind::StaleRead]));
                break 'stale;
            }
        }
    }

    // A consistent list loses an item.
    if let Some(l) = base.operations.iter().position(|op| {
        matches!(&op.response, Response::Listed { items, .. } if !items.is_empty())
            && op.request == Request::List { consistent: true }
    }) {
        let mut h = base.clone();
        if let Response::Listed { items, .. } = &mut h.operations[l].response {
            items.remove(0);
        }
        // Lost if the write returned before the list was called, else just inconsistent.
        out.push(("a consistent list loses an item", h, &[ViolationKind::LostWrite, ViolationKind::InconsistentList]));
    }
    // Two acknowledged writes claim one revision.
    let mut h = base.clone();
    let (first, last) = (acked[0], acked[acked.len() - 1]);
    let taken = rv_of(first).expect("acked");
    if let Response::Created { rv } | Response::Updated { rv } = &mut h.operations[last].response {
        *rv = taken;
    }
    out.push(("two writes claim one revision", h, &[ViolationKind::RevisionConflict]));
    out
}

#[test]
fn corrupted_simulated_histories_are_caught() {
    for seed in 1..=10 {
        let base = Sim::new(seed, 6).run(6, 600);
        for (what, h, expected) in corruptions(&base) {
            let report = check(&h);
            assert!(
                expected.iter().any(|&k| report.count(k) > 0),
                "seed {seed}, {what}: expected {expected:?}: {report}"
            );
            println!("seed {seed}, {what}: {:?}", kinds(&report));
        }
    }
}

/// A create of "a" at revision 2, then `n` updates one after another by one client, the k-th
/// writing `a{k}` at revision k + 2; returns the time after the last.
fn sequential_updates(ops: &mut Vec<Operation>, n: u64) -> u64 {
    ops.push(done(1, 0, 10, Request::create("a", "a0", 0), Response::Created { rv: 2 }));
    let mut t = 20;
    for k in 1..=n {
        ops.push(done(1, t, t + 10, Request::update("a", format!("a{k}"), k + 1), Response::Updated { rv: k + 2 }));
        t += 20;
    }
    t
}

#[test]
fn a_stale_read_past_many_cuts_is_found_from_the_state_carried_across_them() {
    let mut ops = Vec::new();
    let t = sequential_updates(&mut ops, 300);
    ops.push(done(2, t, t + 10, Request::get("a"), found("a300", 302)));
    assert_clean(&history(ops.clone(), Vec::new()));
    ops.push(done(2, t + 20, t + 30, Request::get("a"), found("a250", 252)));
    let report = assert_only(&history(ops, Vec::new()), ViolationKind::StaleRead);
    assert!(report.violations[0].message.contains("a250"), "{report}");
}

#[test]
fn a_never_returned_write_carried_across_cuts_may_take_effect_windows_later() {
    // Seen at revision 500, long after it was sent: it took effect late.
    let mut ops = vec![unknown(1, 0, Request::create("a", "late", 0))];
    let mut t = 10;
    for _ in 0..300 {
        ops.push(done(2, t, t + 10, Request::get("a"), Response::NotFound));
        t += 20;
    }
    ops.push(done(2, t, t + 10, Request::get("a"), found("late", 500)));
    assert_clean(&history(ops.clone(), Vec::new()));

    // It cannot have: a write acknowledged before that read moved the key past revision 500.
    ops.pop();
    ops.push(done(3, t, t + 10, Request::create("a", "other", 0), Response::Created { rv: 600 }));
    ops.push(done(3, t + 20, t + 30, Request::delete("a", None), Response::Deleted { rv: Some(601) }));
    ops.push(done(2, t + 40, t + 50, Request::get("a"), found("late", 500)));
    let report = check(&history(ops, Vec::new()));
    assert!(kinds(&report).contains(&ViolationKind::StaleRead), "{report}");
}

#[test]
fn a_long_history_of_few_keys_is_decided_window_by_window() {
    // About 12,000 operations a key, with unknown outcomes: one search of each key's whole
    // history leaves three of the four undecided; window by window, every key is decided.
    let h = Sim::new(3, 4).run(6, 48_000);
    let started = Instant::now();
    let report = check(&h);
    println!("{report} in {:?}", started.elapsed());
    assert!(report.is_clean() && report.undecided_keys.is_empty(), "{report}");
}
