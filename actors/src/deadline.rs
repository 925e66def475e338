//! When a request's work stops being worth doing.
//!
//! Every non-long-running request gets a deadline when it arrives (kube's `--request-timeout`
//! and `?timeout=`), and every stage message carries it: a caller stops waiting at the
//! deadline, and a stage drops work whose deadline has passed instead of doing it for nobody.
//! Watches carry [`Deadline::NONE`]; they end on their own timeouts.

use std::future::Future;
use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use tokio::time::Instant;

/// A point in time after which a request's work is abandoned, or none.
/// Not ordered: "none" is neither earlier nor later than an instant; use [`Deadline::min`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Deadline(Option<Instant>);

/// The deadline passed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Elapsed;

impl Default for Deadline {
    /// No deadline.
    fn default() -> Self {
        Deadline::NONE
    }
}

impl Deadline {
    /// No deadline.
    pub const NONE: Deadline = Deadline(None);

    /// `timeout` from now.
    pub fn after(timeout: Duration) -> Self {
        Deadline(Instant::now().checked_add(timeout))
    }

    /// At `at`.
    pub fn at(at: Instant) -> Self {
        Deadline(Some(at))
    }

    /// The instant, if any.
    pub fn instant(&self) -> Option<Instant> {
        self.0
    }

    /// Whether the deadline has passed.
    pub fn expired(&self) -> bool {
        self.0.is_some_and(|d| d <= Instant::now())
    }

    /// Time left, `None` without a deadline (zero once passed).
    pub fn remaining(&self) -> Option<Duration> {
        self.0.map(|d| d.saturating_duration_since(Instant::now()))
    }

    /// The earlier of two deadlines.
    pub fn min(self, other: Deadline) -> Deadline {
        match (self.0, other.0) {
            (Some(a), Some(b)) => Deadline(Some(a.min(b))),
            (a, b) => Deadline(a.or(b)),
        }
    }

    /// Completes at the deadline; never without one.
    pub async fn reached(&self) {
        match self.0 {
            Some(at) => tokio::time::sleep_until(at).await,
            None => std::future::pending().await,
        }
    }

    /// Runs `work` until the deadline.
    pub async fn run<F: Future>(&self, work: F) -> Result<F::Output, Elapsed> {
        match self.0 {
            Some(at) => tokio::time::timeout_at(at, work).await.map_err(|_| Elapsed),
            None => Ok(work.await),
        }
    }
}

/// Crosses processes as the time left, in milliseconds: instants mean nothing elsewhere.
impl Serialize for Deadline {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.remaining().map(|d| d.as_millis().min(u64::MAX as u128) as u64).serialize(s)
    }
}

impl<'de> Deserialize<'de> for Deadline {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(match Option::<u64>::deserialize(d)? {
            Some(ms) => Deadline::after(Duration::from_millis(ms)),
            None => Deadline::NONE,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn work_past_the_deadline_is_abandoned() {
        let d = Deadline::after(Duration::from_millis(100));
        assert!(!d.expired());
        assert_eq!(d.run(async { 7 }).await, Ok(7));
        let slow = d.run(tokio::time::sleep(Duration::from_secs(1)));
        assert_eq!(slow.await, Err(Elapsed));
        assert!(d.expired());
        assert_eq!(d.remaining(), Some(Duration::ZERO));
        assert_eq!(Deadline::NONE.remaining(), None);
        assert_eq!(Deadline::NONE.min(d), d);
    }

    #[tokio::test(start_paused = true)]
    async fn crosses_processes_as_time_left() {
        let d = Deadline::after(Duration::from_secs(5));
        let bytes = rmp_serde::to_vec_named(&d).unwrap();
        let back: Deadline = rmp_serde::from_slice(&bytes).unwrap();
        assert_eq!(back.remaining(), Some(Duration::from_secs(5)));
        let none: Deadline = rmp_serde::from_slice(&rmp_serde::to_vec_named(&Deadline::NONE).unwrap()).unwrap();
        assert_eq!(none, Deadline::NONE);
    }
}
