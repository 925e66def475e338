//! Bringing stored data into kube's layout and formats, and surveying what a store holds.
//!
//! This server once wrote objects as MessagePack, and four resources under other prefixes than
//! kube's. [`move_prefix`] moves a resource's keys to kube's prefix (run at startup, before
//! anything reads them); [`rewrite`] writes every value not yet in kube's format again
//! (`apiserver migrate-storage`). Each key is written with a guard on the state it was read
//! in, so a migration racing a writer loses nothing: the writer's version stays. [`survey`]
//! reads every key and writes nothing (`apiserver check-storage`).

use std::collections::BTreeMap;

use apimachinery::catalogue::ResourceDef;
use serde_json::Value;
use storage::{Expect, KeyValue, ListOptions, Storage, StorageError};

use crate::codec::{Format, decode, decode_object, encode_object};

/// Keys read per range request.
const PAGE: usize = 500;

/// Calls `each` with every key under `prefix`, in pages, each read at the current revision
/// (a long migration outlives compactions).
async fn for_each_key(
    storage: &dyn Storage,
    prefix: &str,
    mut each: impl AsyncFnMut(KeyValue) -> Result<(), StorageError>,
) -> Result<(), StorageError> {
    let mut opts = ListOptions { limit: PAGE, ..Default::default() };
    loop {
        let page = storage.list(prefix, opts.clone()).await?;
        let next = page.items.last().map(|kv| format!("{}\0", kv.key));
        for kv in page.items {
            each(kv).await?;
        }
        match next {
            Some(start) if page.more => opts.start = Some(start),
            _ => return Ok(()),
        }
    }
}

/// What [`move_prefix`] did.
#[derive(Debug, Default)]
pub struct Moved {
    /// Objects moved.
    pub moved: usize,
    /// Keys left where they were, with why: values that did not decode.
    pub left: Vec<(String, String)>,
}

/// Moves every object of `def` from `from` (a prefix this server once used) to `to` (kube's),
/// in kube's format. All servers are stopped before such an upgrade (docs/OPERATIONS.md), so a
/// key already present at `to` was moved by a run that stopped half way: it wins, and the old
/// one is dropped. A value that does not decode stays, and is reported.
pub async fn move_prefix(
    storage: &dyn Storage,
    def: &ResourceDef,
    from: &str,
    to: &str,
) -> Result<Moved, StorageError> {
    let mut out = Moved::default();
    for_each_key(storage, from, async |kv| {
        let target = format!("{to}{}", &kv.key[from.len()..]);
        let encoded = decode_object(def, &kv)
            .map_err(|e| e.to_string())
            .and_then(|obj| encode_object(def, &obj).map_err(|e| e.message));
        let bytes = match encoded {
            Ok(bytes) => bytes,
            Err(why) => {
                out.left.push((kv.key.clone(), why));
                return Ok(());
            }
        };
        match storage.put(&target, bytes, Expect::Absent).await {
            Ok(_) => out.moved += 1,
            Err(StorageError::AlreadyExists { .. }) => {}
            Err(e) => return Err(e),
        }
        match storage.delete(&kv.key, Some(kv.mod_revision)).await {
            Ok(_) | Err(StorageError::NotFound { .. } | StorageError::Conflict { .. }) => Ok(()),
            Err(e) => Err(e),
        }
    })
    .await?;
    Ok(out)
}

/// Writes every value of `def` under `prefix` that is not in kube's format again, in it;
/// returns how many were rewritten. A key changed meanwhile is left to its writer.
pub async fn rewrite(storage: &dyn Storage, def: &ResourceDef, prefix: &str) -> Result<usize, StorageError> {
    let mut rewritten = 0;
    for_each_key(storage, prefix, async |kv| {
        if Format::of(&kv.value) != Format::MessagePack {
            return Ok(());
        }
        let obj = decode_object(def, &kv)?;
        let bytes = encode_object(def, &obj)
            .map_err(|e| StorageError::Corrupt { key: kv.key.clone(), message: e.message.clone() })?;
        match storage.put(&kv.key, bytes, Expect::ModRevision(kv.mod_revision)).await {
            Ok(_) => rewritten += 1,
            Err(StorageError::Conflict { .. } | StorageError::NotFound { .. }) => {}
            Err(e) => return Err(e),
        }
        Ok(())
    })
    .await?;
    Ok(rewritten)
}

/// What [`survey`] found.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Survey {
    /// Keys read.
    pub keys: usize,
    /// Objects by their stored `apiVersion`, kind and format.
    pub found: BTreeMap<(String, String, &'static str), usize>,
    /// Keys holding kube's protobuf of a type this server has no message for (a kind a newer
    /// kube-apiserver serves): kept, not damaged.
    pub unknown_types: Vec<String>,
    /// Keys whose values did not decode, with why.
    pub undecodable: Vec<(String, String)>,
}

/// Reads every key under `prefix` and tells what it holds; writes nothing.
pub async fn survey(storage: &dyn Storage, prefix: &str) -> Result<Survey, StorageError> {
    let mut out = Survey::default();
    for_each_key(storage, prefix, async |kv| {
        out.keys += 1;
        let format = Format::of(&kv.value);
        match decode(&kv.key, &kv.value) {
            Ok(obj) => {
                let text = |f: &str| obj.get(f).and_then(Value::as_str).unwrap_or("").to_string();
                *out.found.entry((text("apiVersion"), text("kind"), format.name())).or_default() += 1;
            }
            Err(_) if crate::codec::is_unknown_type(&kv.value) => out.unknown_types.push(kv.key.clone()),
            Err(e) => out.undecodable.push((kv.key.clone(), e.to_string())),
        }
        Ok(())
    })
    .await?;
    Ok(out)
}
