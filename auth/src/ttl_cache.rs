//! Answers of a remote service (the token and authorization webhooks) kept for a while, so a
//! busy client costs one call per TTL. Bounded: when full, expired answers go first, then all.

use std::borrow::Borrow;
use std::collections::HashMap;
use std::hash::Hash;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How many answers a cache keeps.
const CAPACITY: usize = 16 * 1024;

/// Answers by key, each with when it was given.
pub struct TtlCache<K, V> {
    /// Read and written by every call that may reach the service: one short lock.
    entries: Mutex<HashMap<K, (V, Instant)>>,
}

impl<K, V> Default for TtlCache<K, V> {
    fn default() -> Self {
        TtlCache { entries: Mutex::default() }
    }
}

impl<K: Eq + Hash, V: Clone> TtlCache<K, V> {
    /// The answer for `key` if it is younger than `ttl(answer)`.
    pub fn get<Q: Eq + Hash + ?Sized>(&self, key: &Q, ttl: impl Fn(&V) -> Duration) -> Option<V>
    where
        K: Borrow<Q>,
    {
        let entries = self.entries.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let (value, at) = entries.get(key)?;
        (at.elapsed() < ttl(value)).then(|| value.clone())
    }

    /// Keeps `value` for `key`; `longest` is the longest any answer lives, past which entries
    /// make room when the cache is full.
    pub fn insert(&self, key: K, value: V, longest: Duration) {
        let mut entries = self.entries.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if entries.len() >= CAPACITY {
            entries.retain(|_, (_, at)| at.elapsed() < longest);
            if entries.len() >= CAPACITY {
                entries.clear();
            }
        }
        entries.insert(key, (value, Instant::now()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_live_for_their_own_ttl() {
        let cache: TtlCache<String, bool> = TtlCache::default();
        cache.insert("yes".into(), true, Duration::from_secs(60));
        cache.insert("no".into(), false, Duration::from_secs(60));
        let ttl = |allowed: &bool| if *allowed { Duration::from_secs(60) } else { Duration::ZERO };
        assert_eq!(cache.get("yes", ttl), Some(true));
        assert_eq!(cache.get("no", ttl), None, "expired at once");
        assert_eq!(cache.get("unknown", ttl), None);
    }
}
