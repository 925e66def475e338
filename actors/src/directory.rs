//! The directory of live actors, so the admin endpoint can list every one with its mailbox
//! meters.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use dashmap::DashMap;

use crate::meters::{MeterSnapshot, StageMeters};

/// The set of live actors. Cloning shares the set.
#[derive(Clone, Default)]
pub struct ActorDirectory {
    /// Concurrent map: actors register from many arbiters while the admin endpoint reads.
    actors: Arc<DashMap<u64, Arc<StageMeters>>>,
    next_id: Arc<AtomicU64>,
}

/// Keeps an actor listed; dropping it removes the entry.
pub struct Registration {
    id: u64,
    actors: Arc<DashMap<u64, Arc<StageMeters>>>,
}

impl Drop for Registration {
    fn drop(&mut self) {
        self.actors.remove(&self.id);
    }
}

impl ActorDirectory {
    /// Lists an actor until the returned [`Registration`] is dropped.
    pub fn register(&self, meters: Arc<StageMeters>) -> Registration {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        self.actors.insert(id, meters);
        Registration { id, actors: self.actors.clone() }
    }

    /// Copies every actor's depth gauges to Prometheus.
    pub fn publish_gauges(&self) {
        for e in self.actors.iter() {
            e.value().publish_gauges();
        }
    }

    /// A copy of every actor's meters, ordered by stage then resource.
    pub fn snapshot(&self) -> Vec<MeterSnapshot> {
        let mut out: Vec<MeterSnapshot> = self.actors.iter().map(|e| e.value().snapshot()).collect();
        out.sort_by(|a, b| (a.stage.as_str(), a.resource.as_str()).cmp(&(b.stage.as_str(), b.resource.as_str())));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dropping_registration_unlists_actor() {
        let r = ActorDirectory::default();
        let reg = r.register(Arc::new(StageMeters::new("cacher", "pods", 8, crate::WhenFull::Wait, "cachers")));
        assert_eq!(r.snapshot()[0].resource, "pods");
        drop(reg);
        assert!(r.snapshot().is_empty());
    }
}
