//! Leases for keys written with a TTL, shared the way kube-apiserver shares them.
//!
//! A lease per key would be one grant per Event and millions of leases in etcd. Instead, a lease
//! granted with a little more than the TTL asked for is reused by the keys written soon after
//! it: each still lives at least its TTL, and at most the reuse window longer. The window is 5%
//! of the TTL, at most a minute, and a lease carries at most [`MAX_KEYS_PER_LEASE`] keys (so one
//! expiry deletes a bounded number of keys in one revision). These are kube's numbers, so a fleet
//! mixing both servers leaves etcd the same load.

use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Most keys attached to one lease before a new one is granted.
pub(super) const MAX_KEYS_PER_LEASE: u64 = 1000;
/// The reuse window's share of the TTL, in percent.
const REUSE_PERCENT: u64 = 5;
/// The longest reuse window, in seconds.
const MAX_REUSE_SECONDS: u64 = 60;

/// The lease being reused.
struct Current {
    id: i64,
    /// When etcd expires it (by the local clock, from the time the grant was asked for: never
    /// later than etcd's own view).
    expires: Instant,
    /// Keys given it so far.
    keys: u64,
}

/// The lease being reused, if any.
#[derive(Default)]
pub(super) struct LeaseCache {
    current: Mutex<Option<Current>>,
}

/// What a write with a TTL should do.
pub(super) enum LeaseChoice {
    /// Attach the key to this lease.
    Reuse(i64),
    /// Grant a lease of this many seconds, then [`LeaseCache::granted`] it.
    Grant(i64),
}

impl LeaseCache {
    /// The lease for a key that must live `ttl` seconds from `now`.
    pub fn choose(&self, ttl: u64, now: Instant) -> LeaseChoice {
        let ttl = ttl.max(1);
        let reuse = reuse_seconds(ttl);
        let mut current = self.current.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(lease) = current.as_mut() {
            let lives_long_enough = lease.expires >= now + Duration::from_secs(ttl);
            let not_too_long = lease.expires <= now + Duration::from_secs(ttl + reuse);
            if lives_long_enough && not_too_long && lease.keys < MAX_KEYS_PER_LEASE {
                lease.keys += 1;
                return LeaseChoice::Reuse(lease.id);
            }
        }
        LeaseChoice::Grant(i64::try_from(ttl + reuse).unwrap_or(i64::MAX))
    }

    /// Stops reusing lease `id`, which etcd no longer has.
    pub fn forget(&self, id: i64) {
        let mut current = self.current.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if current.as_ref().is_some_and(|lease| lease.id == id) {
            *current = None;
        }
    }

    /// Records a lease granted for `seconds` at `asked` (before the grant was sent), as the one
    /// to reuse.
    pub fn granted(&self, id: i64, seconds: i64, asked: Instant) {
        let expires = asked + Duration::from_secs(u64::try_from(seconds).unwrap_or(0));
        let mut current = self.current.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        *current = Some(Current { id, expires, keys: 1 });
    }
}

/// How much longer than its TTL a key may live on a shared lease.
fn reuse_seconds(ttl: u64) -> u64 {
    (ttl * REUSE_PERCENT / 100).min(MAX_REUSE_SECONDS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lease_is_reused_while_every_key_on_it_lives_its_ttl_and_not_much_more() {
        let cache = LeaseCache::default();
        let start = Instant::now();
        // An hour's TTL: a 60-second window (5% would be 180).
        let LeaseChoice::Grant(seconds) = cache.choose(3600, start) else { panic!("nothing to reuse yet") };
        assert_eq!(seconds, 3660);
        cache.granted(7, seconds, start);
        assert!(matches!(cache.choose(3600, start + Duration::from_secs(59)), LeaseChoice::Reuse(7)));
        // Past the window, a key on lease 7 would live less than an hour.
        assert!(matches!(cache.choose(3600, start + Duration::from_secs(61)), LeaseChoice::Grant(3660)));
        // A much shorter TTL would live far too long on it.
        assert!(matches!(cache.choose(10, start), LeaseChoice::Grant(10)));
    }

    #[test]
    fn a_lease_carries_a_bounded_number_of_keys() {
        let cache = LeaseCache::default();
        let now = Instant::now();
        cache.granted(1, 3660, now);
        for _ in 1..MAX_KEYS_PER_LEASE {
            assert!(matches!(cache.choose(3600, now), LeaseChoice::Reuse(1)));
        }
        assert!(matches!(cache.choose(3600, now), LeaseChoice::Grant(_)));
    }
}
