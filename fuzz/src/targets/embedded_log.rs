//! The embedded store's write-ahead log as found on disk at startup (`EmbeddedStore::open`).
//!
//! Two kinds of input: a log written as the store writes it (a snapshot header, restores, then
//! puts and deletes) and then damaged (bytes changed, the file cut short); and frames with
//! valid checksums around arbitrary payloads, which reach the record decoder and the replay's
//! checks. Opening never panics. Damage with a whole record after it is refused (it is not a
//! torn tail). A store that opens holds a consistent prefix of what was written: exactly the
//! state after some record, and never less than every record before the first damaged byte. It
//! then takes a write at the next revision.
use std::collections::BTreeMap;

use arbitrary::Arbitrary;
use bytes::Bytes;
use serde::Serialize;
use storage::embedded::{EmbeddedOptions, EmbeddedStore, LOG_FILE};
use storage::{Expect, ListOptions, Storage};

/// The log's record, as `storage/src/embedded/log.rs` encodes it (rmp-serde, named).
#[derive(Serialize)]
enum Record {
    Header {
        format: u32,
        compacted: u64,
        revision: u64,
    },
    Restore {
        key: String,
        create_revision: u64,
        mod_revision: u64,
        #[serde(with = "bin")]
        value: Vec<u8>,
    },
    Put {
        revision: u64,
        key: String,
        create_revision: u64,
        #[serde(with = "bin")]
        value: Vec<u8>,
    },
    Delete {
        revision: u64,
        key: String,
    },
}

mod bin {
    pub fn serialize<S: serde::Serializer>(v: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(v)
    }
}

fn frame(out: &mut Vec<u8>, payload: &[u8]) {
    out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    out.extend_from_slice(&crc32(payload).to_le_bytes());
    out.extend_from_slice(payload);
}

fn crc32(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in data {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 != 0 { (crc >> 1) ^ 0xEDB8_8320 } else { crc >> 1 };
        }
    }
    !crc
}

#[derive(Arbitrary, Debug)]
pub enum Op {
    Put { key: u8, value: Vec<u8> },
    Delete { key: u8 },
}

#[derive(Arbitrary, Debug)]
pub enum Input {
    /// A log as the store writes it, then damaged.
    Written { snapshot: u8, restores: Vec<(u8, u8)>, ops: Vec<Op>, flips: Vec<(u16, u8)>, cut: Option<u16> },
    /// Frames with good checksums around arbitrary payloads.
    Frames(Vec<Vec<u8>>),
    /// Whatever bytes.
    Raw(Vec<u8>),
}

/// A key's state: create revision, mod revision, value.
type Model = BTreeMap<String, (u64, u64, Vec<u8>)>;

fn key(k: u8) -> String {
    format!("/registry/things/k{}", k % 8)
}

/// The target: never a panic, and the properties above.
pub fn check(input: Input) {
    let dir = tempfile::tempdir().expect("a temp dir");
    let mut log = Vec::new();
    // For a written log: the state after each record with where that record ends.
    let mut states: Vec<(u64, u64, Model)> = Vec::new();
    let mut damaged_at = usize::MAX;
    let mut must_refuse = false;
    match input {
        Input::Written { snapshot, restores, ops, flips, cut } => {
            let revision = u64::from(snapshot) + 1;
            let mut model = Model::new();
            let mut push = |log: &mut Vec<u8>, r: &Record, rev: u64, model: &Model| {
                frame(log, &rmp_serde::to_vec_named(r).unwrap());
                states.push((log.len() as u64, rev, model.clone()));
            };
            push(&mut log, &Record::Header { format: 1, compacted: revision, revision }, revision, &model);
            for (k, m) in restores {
                let k = key(k);
                if model.contains_key(&k) {
                    continue;
                }
                let mod_revision = u64::from(m) % revision + 1;
                let create_revision = mod_revision.div_ceil(2);
                let value = vec![m; 3];
                model.insert(k.clone(), (create_revision, mod_revision, value.clone()));
                push(&mut log, &Record::Restore { key: k, create_revision, mod_revision, value }, revision, &model);
            }
            let mut rev = revision;
            for op in ops.into_iter().take(64) {
                match op {
                    Op::Put { key: k, value } => {
                        rev += 1;
                        let k = key(k);
                        let create_revision = model.get(&k).map_or(rev, |v| v.0);
                        model.insert(k.clone(), (create_revision, rev, value.clone()));
                        push(&mut log, &Record::Put { revision: rev, key: k, create_revision, value }, rev, &model);
                    }
                    Op::Delete { key: k } => {
                        let k = key(k);
                        if model.remove(&k).is_none() {
                            continue;
                        }
                        rev += 1;
                        push(&mut log, &Record::Delete { revision: rev, key: k }, rev, &model);
                    }
                }
            }
            let written = log.clone();
            for (at, xor) in flips.into_iter().take(4) {
                let at = usize::from(at) % log.len();
                log[at] ^= xor;
            }
            if let Some(cut) = cut {
                log.truncate(usize::from(cut) % (log.len() + 1));
            }
            let changed: Vec<usize> = (0..written.len()).filter(|&i| log.get(i) != Some(&written[i])).collect();
            damaged_at = changed.first().copied().unwrap_or(usize::MAX);
            // A record written whole after the damaged one: the damage is not a torn tail.
            let ends: Vec<usize> = states.iter().map(|(end, _, _)| *end as usize).collect();
            let damaged_end = ends.iter().copied().find(|&end| end > damaged_at);
            must_refuse = damaged_end.is_some_and(|damaged_end| {
                ends.windows(2).any(|w| {
                    w[0] >= damaged_end && w[1] <= log.len() && !changed.iter().any(|&c| c >= w[0] && c < w[1])
                })
            });
        }
        Input::Frames(payloads) => {
            for p in payloads {
                frame(&mut log, &p);
            }
        }
        Input::Raw(bytes) => log = bytes,
    }
    std::fs::write(dir.path().join(LOG_FILE), &log).expect("writing the log");

    let Ok(store) = EmbeddedStore::open(dir.path(), EmbeddedOptions::default()) else { return };
    assert!(!must_refuse, "the store opened over damage with a whole record written after it");
    crate::block_on(async {
        let revision = store.current_revision().await.expect("a revision");
        let compacted = store.compacted_revision().await.expect("a compacted revision");
        assert!(compacted <= revision, "compacted {compacted} past the revision {revision}");
        assert!(revision <= i64::MAX as u64, "revision {revision} past etcd's int64");
        let items = store.list("/", ListOptions::default()).await.expect("a list").items;
        for kv in &items {
            assert!(kv.create_revision <= kv.mod_revision && kv.mod_revision <= revision, "{kv:?} at {revision}");
        }
        if !states.is_empty() {
            let found: Model = items
                .iter()
                .map(|kv| (kv.key.clone(), (kv.create_revision, kv.mod_revision, kv.value.to_vec())))
                .collect();
            let prefix = states.iter().position(|(_, rev, model)| *rev == revision && *model == found);
            let Some(prefix) = prefix else {
                panic!("the store opened at {revision} with a state no prefix of the log had")
            };
            let intact = states.iter().take_while(|(end, _, _)| (*end as usize) <= damaged_at).count();
            // Several records can leave the same state (restores do not move the revision):
            // the last of them counts.
            let last = states.iter().rposition(|(_, rev, model)| *rev == revision && *model == found).unwrap();
            assert!(
                last + 1 >= intact,
                "records before the first damaged byte were lost: {prefix}..={last} < {intact}"
            );
        }
        let put = store.put("/registry/things/new", Bytes::from_static(b"x"), Expect::Exists).await;
        assert!(put.is_err());
        let put = store.put("/registry/things/zz", Bytes::from_static(b"x"), Expect::Absent).await;
        let kv = put.unwrap_or_else(|e| panic!("a write after opening failed: {e}"));
        assert_eq!(kv.mod_revision, revision + 1);
        store.close().await.expect("closing");
    });
}
