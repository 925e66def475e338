//! Seats held by requests of exempt priority levels.
//!
//! Exempt requests never ask the flow-control actor: a full mailbox must not turn
//! `system:masters` or a health probe away. Yet kube 1.30 counts their seats, so an exempt
//! level's demand takes part in borrowing (a busy exempt level leaves less to lend). The
//! gateway holds an [`ExemptHold`] for the life of each exempt request; the actor samples the
//! counts on every tick and feeds them to the level's queue set. Each request holds one seat:
//! kube's width estimate caps an exempt request at one seat, its level having no nominal
//! seats by default.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

/// Requests executing in each exempt level, shared by the gateway's workers and the actor.
#[derive(Clone, Default)]
pub struct ExemptSeats {
    /// Level name to its count. Read-locked on the hot path (the levels are known after the
    /// first request of each); written once per new level name.
    levels: Arc<RwLock<HashMap<String, Arc<AtomicU64>>>>,
}

impl ExemptSeats {
    /// Counts a request of `level` until the hold is dropped.
    pub fn hold(&self, level: &str) -> ExemptHold {
        let existing = self.levels.read().unwrap_or_else(std::sync::PoisonError::into_inner).get(level).cloned();
        let count = existing.unwrap_or_else(|| {
            let mut levels = self.levels.write().unwrap_or_else(std::sync::PoisonError::into_inner);
            levels.entry(level.to_string()).or_default().clone()
        });
        count.fetch_add(1, Ordering::Relaxed);
        ExemptHold { count }
    }

    /// Seats held now in `level`.
    pub fn in_use(&self, level: &str) -> u64 {
        let levels = self.levels.read().unwrap_or_else(std::sync::PoisonError::into_inner);
        levels.get(level).map_or(0, |c| c.load(Ordering::Relaxed))
    }
}

/// One exempt request's seat, given back when dropped, however the request ends.
pub struct ExemptHold {
    count: Arc<AtomicU64>,
}

impl Drop for ExemptHold {
    fn drop(&mut self) {
        self.count.fetch_sub(1, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hold_counts_one_seat_until_dropped() {
        let seats = ExemptSeats::default();
        let a = seats.hold("exempt");
        let b = seats.hold("exempt");
        let other = seats.hold("mine");
        assert_eq!((seats.in_use("exempt"), seats.in_use("mine"), seats.in_use("none")), (2, 1, 0));
        drop(a);
        drop(other);
        assert_eq!((seats.in_use("exempt"), seats.in_use("mine")), (1, 0));
        drop(b);
        assert_eq!(seats.in_use("exempt"), 0);
    }
}
