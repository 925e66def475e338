//! Watches: replay from the event log, then live delivery by the writer thread.
//!
//! A new watch is *pending* while it replays: it copies events from the event log into its own
//! channel as room allows, under a read lock of the index. Once a step finds nothing left to
//! replay, it joins the *synced* list in that same critical section; the writer publishes only
//! while holding the index's write lock, so the events a watch replays and the events it is
//! later sent never overlap or leave a gap. A replay larger than the channel continues in a task
//! that waits for the receiver to make room; the writer never waits for a watcher.
//!
//! Every channel has one slot more than its advertised capacity, reserved for the
//! [`WatchItem::Error`] that tells a watcher which fell behind why its stream ends.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};

use tokio::sync::mpsc;

use super::Shared;
use crate::metered::resource_type;
use crate::metrics::TERMINATED_WATCHERS_TOTAL;
use crate::{Event, ProgressRequester, Revision, StorageError, WatchItem, WatchStream};

/// Events scanned per replay step, so a replay over a long log filtered by a narrow prefix never
/// holds the read lock long.
const SCAN_PER_STEP: usize = 4096;

/// A watch that has caught up: the writer delivers to it directly.
pub(super) struct Watcher {
    /// Matches [`WatchControl::id`].
    id: u64,
    /// Only keys starting with this.
    prefix: String,
    /// Only events above this revision (a watch may start in the future).
    after: Revision,
    /// The watch's items. Bounded, and only ever `try_send`-ed to: a full channel cuts the
    /// watcher off instead of stalling the writer or buffering without bound.
    tx: mpsc::Sender<WatchItem>,
}

/// The synced watches.
#[derive(Default)]
pub(super) struct Watchers {
    /// Few (one per resource and cacher), so a scan per batch is cheaper than an index.
    synced: Vec<Watcher>,
}

impl Watchers {
    /// Number of synced watches.
    pub fn len(&self) -> usize {
        self.synced.len()
    }

    /// Delivers a committed batch's events to every matching watcher, dropping those whose
    /// receiver is gone or whose channel is full.
    pub fn publish<'a>(&mut self, events: impl Iterator<Item = &'a Event> + Clone, backend: &str) {
        self.synced.retain(|w| {
            if w.tx.is_closed() {
                return false;
            }
            for event in events.clone() {
                if event.kv.mod_revision > w.after
                    && event.kv.key.starts_with(&w.prefix)
                    && !deliver(&w.tx, WatchItem::Event(event.clone()), backend, &w.prefix)
                {
                    return false;
                }
            }
            true
        });
    }
}

/// Sends `item` if the channel has room beyond the reserved error slot; otherwise sends the
/// fell-behind error into that slot. Returns whether the watch stays open.
fn deliver(tx: &mpsc::Sender<WatchItem>, item: WatchItem, backend: &str, prefix: &str) -> bool {
    if tx.capacity() > 1 {
        return tx.try_send(item).is_ok();
    }
    let _ = tx.try_send(WatchItem::Error(StorageError::Unavailable {
        backend: backend.to_string(),
        message: format!(
            "watcher fell behind: {} items were waiting unread on the watch of {prefix}",
            tx.max_capacity() - 1
        ),
    }));
    metrics::counter!(TERMINATED_WATCHERS_TOTAL, "resource" => resource_type(prefix)).increment(1);
    false
}

/// The handle a [`WatchStream`] keeps to ask for progress notifications.
pub(super) struct WatchControl {
    /// Identifies the watch among the synced ones.
    id: u64,
    /// The store, weakly: a forgotten stream must not keep a closed store alive.
    shared: Weak<Shared>,
    /// A progress request that arrived while the watch was still replaying. An atomic, not a
    /// lock: it is only set and taken while the watchers lock is held, which orders them; the
    /// atomic just makes the flag shareable.
    progress_pending: AtomicBool,
}

impl ProgressRequester for WatchControl {
    fn request_progress(&self) {
        let Some(shared) = self.shared.upgrade() else { return };
        // The read lock excludes the writer, so every event up to `revision` has been published.
        let state = shared.read_state();
        let mut watchers = shared.lock_watchers();
        if let Some(i) = watchers.synced.iter().position(|w| w.id == self.id) {
            let w = &watchers.synced[i];
            if !deliver(&w.tx, WatchItem::Progress(state.revision), &shared.backend, &w.prefix) {
                watchers.synced.swap_remove(i);
            }
        } else {
            self.progress_pending.store(true, Ordering::Relaxed);
        }
    }
}

/// A watch still replaying.
struct Pending {
    /// The watch's control, shared with its stream.
    control: Arc<WatchControl>,
    /// Only keys starting with this.
    prefix: String,
    /// The revision the watch started after.
    after: Revision,
    /// Events up to this revision have been replayed.
    cursor: Revision,
    /// The watch's items; exclusively this replay's until it registers.
    tx: mpsc::Sender<WatchItem>,
}

/// Where a replay step left the watch.
enum Step {
    /// It is synced (or closed): nothing more to do.
    Done,
    /// The channel filled up (or the step's scan budget ran out) before replay finished.
    Continue(Pending),
}

/// Starts a watch of `prefix` for events above `after`, which the caller has checked against the
/// compacted revision.
pub(super) fn start(shared: &Arc<Shared>, id: u64, prefix: String, after: Revision) -> WatchStream {
    let (tx, items) = mpsc::channel(shared.watch_capacity + 1);
    let control =
        Arc::new(WatchControl { id, shared: Arc::downgrade(shared), progress_pending: AtomicBool::new(false) });
    let pending = Pending { control: Arc::clone(&control), prefix, after, cursor: after, tx };
    if let Step::Continue(pending) = step(shared, pending) {
        tokio::spawn(replay(Arc::downgrade(shared), pending));
    }
    WatchStream { items, progress: control }
}

/// Continues a replay that did not fit the channel, each time the receiver has drained half of
/// it.
async fn replay(shared: Weak<Shared>, mut pending: Pending) {
    let room = (pending.tx.max_capacity() / 2).max(2).min(pending.tx.max_capacity());
    loop {
        match pending.tx.reserve_many(room).await {
            Ok(permits) => drop(permits),
            Err(_) => return, // receiver gone
        }
        let Some(shared) = shared.upgrade() else { return };
        match step(&shared, pending) {
            Step::Done => return,
            Step::Continue(p) => pending = p,
        }
    }
}

/// Replays what fits into the channel; if that reaches the current revision, registers the
/// watch as synced within the same read lock.
fn step(shared: &Shared, mut p: Pending) -> Step {
    let state = shared.read_state();
    if p.cursor < state.compacted {
        // A compaction overtook a slow replay.
        let _ = p
            .tx
            .try_send(WatchItem::Error(StorageError::Compacted { requested: p.cursor, compacted: state.compacted }));
        return Step::Done;
    }
    let mut room = p.tx.capacity().saturating_sub(1);
    for (scanned, event) in state.events_after(p.cursor).enumerate() {
        if scanned == SCAN_PER_STEP {
            return Step::Continue(p);
        }
        if event.kv.mod_revision > p.after && event.kv.key.starts_with(&p.prefix) {
            if room == 0 {
                return Step::Continue(p);
            }
            if p.tx.try_send(WatchItem::Event(event.clone())).is_err() {
                return Step::Done; // receiver gone
            }
            room -= 1;
        }
        p.cursor = event.kv.mod_revision;
    }
    let mut watchers = shared.lock_watchers();
    let watcher = Watcher { id: p.control.id, prefix: p.prefix, after: p.after, tx: p.tx };
    if p.control.progress_pending.swap(false, Ordering::Relaxed)
        && !deliver(&watcher.tx, WatchItem::Progress(state.revision), &shared.backend, &watcher.prefix)
    {
        return Step::Done;
    }
    watchers.synced.push(watcher);
    Step::Done
}
