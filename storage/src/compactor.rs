//! Compaction in turns, as kube-apiservers sharing an etcd take them: each interval, a server
//! writes the revision it saw one interval earlier to `compact_rev_key`, guarded by the key's
//! state at its own last turn. The one whose write lands compacts to that revision; the others
//! find the key moved, take its state and the current revision as theirs, and wait for the next
//! interval. So a fleet, this server's replicas and kube-apiservers alike, compacts once per
//! interval, never past what any of them saw an interval ago.
//!
//! kube guards the write by the key's version (how many writes it has had), this side by its
//! mod revision: every write moves both, so each side's guard fails after the other's write.
//! The value is the revision in decimal, as kube writes it.

use bytes::Bytes;

use crate::{Expect, Revision, Storage, StorageError};

/// The key kube-apiservers keep their compaction turns in, at the root of the keyspace.
pub const COMPACT_REV_KEY: &str = "compact_rev_key";

/// One server's side of the turns on one backend.
#[derive(Debug)]
pub struct Compactor {
    key: String,
    /// The key's mod revision at this server's last turn (`None`: absent).
    seen: Option<Revision>,
    /// The revision at this server's last turn: what it compacts to when it wins the next one.
    last: Revision,
}

/// How a turn went.
#[derive(Debug, PartialEq, Eq)]
pub enum Turn {
    /// This server's write landed: history is compacted up to this revision, the one it saw at
    /// its previous turn (0 on its first: kube does not compact at start-up). Compacting is
    /// skipped when the store already is compacted that far.
    Won(Revision),
    /// Another server took the turn since this one's last.
    Lost,
}

impl Compactor {
    /// The turns on `key` ([`COMPACT_REV_KEY`] but in tests).
    pub fn new(key: impl Into<String>) -> Self {
        Compactor { key: key.into(), seen: None, last: 0 }
    }

    /// Takes this interval's turn on `storage`.
    pub async fn take_turn(&mut self, storage: &dyn Storage) -> Result<Turn, StorageError> {
        let expect = self.seen.map_or(Expect::Absent, Expect::ModRevision);
        let value = Bytes::from(self.last.to_string());
        match storage.put(&self.key, value, expect).await {
            Ok(written) => {
                let target = self.last;
                self.seen = Some(written.mod_revision);
                self.last = written.mod_revision;
                if target > 0 && storage.compacted_revision().await? < target {
                    storage.compact(target).await?;
                }
                Ok(Turn::Won(target))
            }
            Err(StorageError::AlreadyExists { .. } | StorageError::Conflict { .. } | StorageError::NotFound { .. }) => {
                let (current, revision) = storage.get(&self.key).await?;
                self.seen = current.map(|kv| kv.mod_revision);
                self.last = revision;
                Ok(Turn::Lost)
            }
            Err(e) => Err(e),
        }
    }
}
