//! The stored form of the keys this store updated last, so the next update of the same key
//! starts from it instead of reading storage first (kube's `GuaranteedUpdate` starts from the
//! watch cache's copy the same way). Leases, node and pod status are updated again and again by
//! the one client that owns them: each update saves a storage round trip.
//!
//! A copy is only a guess. The write is guarded by the copy's mod revision, so a copy another
//! writer made stale costs a conflict and a read, never a lost update, and is then forgotten;
//! the update loop reads storage before answering anything decided on a copy alone (an error,
//! an unchanged object). Storage restored from a snapshot under a running server can reuse a
//! revision for other bytes: as with kube-apiserver, restart the servers after a restore.

use std::collections::HashMap;
use std::sync::Mutex;

use storage::KeyValue;

/// Bytes of values the younger generation holds before it becomes the older one (the older is
/// dropped): at most twice this is kept, whatever the number of keys.
const GENERATION_BYTES: usize = 2 << 20;

/// Two generations of copies: a key found in the older one moves to the younger, so keys
/// updated again within a generation's lifetime stay while the rest age out.
#[derive(Default)]
pub struct RecentWrites {
    generations: Mutex<Generations>,
}

#[derive(Default)]
struct Generations {
    young: HashMap<String, KeyValue>,
    young_bytes: usize,
    old: HashMap<String, KeyValue>,
}

impl RecentWrites {
    /// The copy of `key`, if this store wrote it lately.
    pub fn get(&self, key: &str) -> Option<KeyValue> {
        let g = self.generations.lock().unwrap_or_else(|e| e.into_inner());
        g.young.get(key).or_else(|| g.old.get(key)).cloned()
    }

    /// Keeps what this store just wrote to `kv.key`.
    pub fn remember(&self, kv: KeyValue) {
        let mut g = self.generations.lock().unwrap_or_else(|e| e.into_inner());
        g.old.remove(&kv.key);
        if g.young_bytes + kv.value.len() > GENERATION_BYTES {
            g.old = std::mem::take(&mut g.young);
            g.young_bytes = 0;
        }
        g.young_bytes += kv.value.len();
        if let Some(replaced) = g.young.insert(kv.key.clone(), kv) {
            g.young_bytes -= replaced.value.len();
        }
    }

    /// Drops the copy of `key` (deleted, or its write's outcome unknown).
    pub fn forget(&self, key: &str) {
        let mut g = self.generations.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(gone) = g.young.remove(key) {
            g.young_bytes -= gone.value.len();
        }
        g.old.remove(key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kv(key: &str, len: usize, rev: u64) -> KeyValue {
        KeyValue { key: key.into(), value: vec![0u8; len].into(), create_revision: 1, mod_revision: rev, stale: false }
    }

    #[test]
    fn the_latest_write_of_a_key_is_kept_until_forgotten() {
        let r = RecentWrites::default();
        assert!(r.get("/a").is_none());
        r.remember(kv("/a", 10, 5));
        r.remember(kv("/a", 12, 6));
        assert_eq!(r.get("/a").map(|kv| kv.mod_revision), Some(6));
        r.forget("/a");
        assert!(r.get("/a").is_none());
    }

    #[test]
    fn what_is_kept_stays_within_two_generations_of_bytes() {
        let r = RecentWrites::default();
        let size = GENERATION_BYTES / 4;
        for i in 0..64 {
            r.remember(kv(&format!("/k{i}"), size, i));
        }
        let g = r.generations.lock().unwrap();
        let kept: usize = g.young.values().chain(g.old.values()).map(|kv| kv.value.len()).sum();
        assert!(kept <= 2 * GENERATION_BYTES, "kept {kept} bytes");
        assert!(g.young.contains_key("/k63"), "the last write is kept");
        assert!(!g.young.contains_key("/k0") && !g.old.contains_key("/k0"), "the first has aged out");
    }

    #[test]
    fn a_key_written_again_moves_out_of_the_older_generation() {
        let r = RecentWrites::default();
        let size = GENERATION_BYTES / 2;
        r.remember(kv("/hot", 10, 1));
        r.remember(kv("/x", size, 2));
        r.remember(kv("/y", size, 3));
        // "/hot" is in the older generation now; written again it moves to the younger.
        r.remember(kv("/hot", 10, 4));
        r.remember(kv("/z", size, 5));
        assert_eq!(r.get("/hot").map(|kv| kv.mod_revision), Some(4));
    }
}
