//! Watchers of one cacher: their filters, what each sees of a change, and the bounded queue that
//! decides when a watcher is too slow to keep.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Instant;

use apimachinery::catalogue::ResourceDef;
use apimachinery::encoded::EncodedObject;
use apimachinery::messages::{WatchEvent, WatchEventType};
use apimachinery::selector::{FieldSelector, LabelSelector};
use storage::{EventType, Revision};
use tokio::sync::mpsc;

use crate::entry::Entry;

/// One change as the cache keeps it in its window.
pub(crate) struct CachedEvent {
    pub kind: EventType,
    pub revision: Revision,
    /// The object after the change (for a deletion, its last state at the deletion's revision).
    pub entry: Arc<Entry>,
    /// The object before the change.
    pub prev: Option<Arc<Entry>>,
    /// When the cacher received it, for delivery latency and the window's time bound.
    pub received: Instant,
}

/// A registered watcher.
pub(crate) struct Watcher {
    pub namespace: String,
    pub labels: LabelSelector,
    pub fields: FieldSelector,
    pub bookmarks: bool,
    pub tx: mpsc::Sender<WatchEvent>,
    /// Events that did not fit in the channel; a watcher whose overflow does not drain within
    /// the slow-watcher budget is cut off.
    pub overflow: VecDeque<WatchEvent>,
    /// How many events at the front of the overflow are the watch's initial state or replay:
    /// a client reading a large initial list is not falling behind, so these count against
    /// neither the budget nor the overflow limit.
    pub backlog: usize,
    /// Since when live events have waited in the overflow.
    pub stalled_since: Option<Instant>,
    /// The resourceVersion the watch started at: bookmarks report progress past it.
    pub start: Revision,
    /// Events at or below it are not sent (a watch from a revision the cache has not reached).
    pub after: Revision,
    /// The last bookmark's resourceVersion, so an idle watch is not sent the same one twice.
    pub last_bookmark: Revision,
    /// When the watch will end, for a last bookmark shortly before (kube sends it 2 s ahead).
    pub deadline: Option<Instant>,
    /// Whether that last bookmark went out.
    pub final_bookmark_sent: bool,
}

/// The client went away.
pub(crate) struct Closed;

impl Watcher {
    fn passes(&self, def: &ResourceDef, e: &Entry) -> bool {
        (self.namespace.is_empty() || !def.namespaced || e.namespace() == self.namespace)
            && e.matches(&self.labels, &self.fields)
    }

    /// What this watcher sees of a change, as kube's `convertToWatchEvent`: an object entering
    /// the selection is ADDED, one leaving it DELETED (with its previous state).
    pub fn sees(&self, def: &ResourceDef, e: &CachedEvent) -> Option<WatchEventType> {
        if e.revision <= self.after {
            return None;
        }
        match e.kind {
            EventType::Deleted => {
                self.passes(def, e.prev.as_deref().unwrap_or(&e.entry)).then_some(WatchEventType::Deleted)
            }
            EventType::Added | EventType::Modified => {
                let now = self.passes(def, &e.entry);
                let before = e.prev.as_ref().is_some_and(|p| self.passes(def, p));
                match (before, now) {
                    (false, true) => Some(WatchEventType::Added),
                    (true, true) => Some(WatchEventType::Modified),
                    (true, false) => Some(WatchEventType::Deleted),
                    (false, false) => None,
                }
            }
        }
    }

    /// Queues an event behind any overflow.
    pub fn push(&mut self, event: WatchEvent) -> Result<(), Closed> {
        if !self.overflow.is_empty() {
            self.overflow.push_back(event);
            if self.backlog == 0 {
                self.stalled_since.get_or_insert_with(Instant::now);
            }
            return Ok(());
        }
        match self.tx.try_send(event) {
            Ok(()) => Ok(()),
            Err(mpsc::error::TrySendError::Full(event)) => {
                self.overflow.push_back(event);
                self.stalled_since.get_or_insert_with(Instant::now);
                Ok(())
            }
            Err(mpsc::error::TrySendError::Closed(_)) => Err(Closed),
        }
    }

    /// Moves overflow into the channel as far as it has room.
    pub fn flush(&mut self) -> Result<(), Closed> {
        while let Some(event) = self.overflow.pop_front() {
            match self.tx.try_send(event) {
                Ok(()) => self.backlog = self.backlog.saturating_sub(1),
                Err(mpsc::error::TrySendError::Full(event)) => {
                    self.overflow.push_front(event);
                    // Once the initial state is out, live events still waiting start the clock.
                    if self.backlog == 0 {
                        self.stalled_since.get_or_insert_with(Instant::now);
                    }
                    return Ok(());
                }
                Err(mpsc::error::TrySendError::Closed(_)) => return Err(Closed),
            }
        }
        self.stalled_since = None;
        Ok(())
    }

    /// Whether the watcher has been stalled longer than `budget` or holds more than `limit`
    /// undelivered events.
    pub fn too_slow(&self, budget: std::time::Duration, limit: usize) -> bool {
        self.stalled_since.is_some_and(|t| t.elapsed() > budget) || self.overflow.len() - self.backlog > limit
    }
}

/// The lines of one change, built the first time a watcher needs each and shared by all.
pub(crate) struct Lines<'a> {
    def: &'a ResourceDef,
    event: &'a CachedEvent,
    built: [Option<WatchEvent>; 3],
    /// How many watchers took each line.
    taken: [u32; 3],
}

impl<'a> Lines<'a> {
    pub fn new(def: &'a ResourceDef, event: &'a CachedEvent) -> Self {
        Lines { def, event, built: [None, None, None], taken: [0; 3] }
    }

    pub fn get(&mut self, kind: WatchEventType) -> WatchEvent {
        let slot = match kind {
            WatchEventType::Added => 0,
            WatchEventType::Modified => 1,
            _ => 2,
        };
        let (def, event) = (self.def, self.event);
        self.taken[slot] += 1;
        self.built[slot]
            .get_or_insert_with(|| {
                let object = match kind {
                    WatchEventType::Deleted => departed(def, event),
                    _ => event.entry.object.clone(),
                };
                let mut line = WatchEvent::new(kind, object);
                line.received = Some(event.received);
                line
            })
            .clone()
    }
}

impl Lines<'_> {
    /// Records the size of every line handed out, once per line with its count.
    pub fn record_sizes(&self, sizes: &metrics::Histogram) {
        for (line, taken) in self.built.iter().zip(self.taken) {
            if let Some(line) = line {
                sizes.record_many(line.line().len() as f64, taken as usize);
            }
        }
    }
}

/// The object a DELETED event carries: the last state, at the revision it went away (or left
/// the selection), as kube's cacher sets it.
pub(crate) fn departed(def: &ResourceDef, e: &CachedEvent) -> EncodedObject {
    match (&e.kind, &e.prev) {
        // A deletion's entry is already the last state at the deletion's revision.
        (EventType::Deleted, _) | (_, None) => e.entry.object.clone(),
        (_, Some(prev)) => prev.at(def, e.revision).object,
    }
}
