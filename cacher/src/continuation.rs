//! Paged lists from storage and kube's continue tokens.
//!
//! A token is base64url (unpadded) JSON `{"v":"meta.k8s.io/v1","rv":N,"start":"<key>"}` where
//! `start` is relative to the listed prefix: the next page starts there, read at revision `N`,
//! so every page shows the store as it was when the first page was read.

use std::sync::Arc;

use apimachinery::catalogue::ResourceDef;
use apimachinery::encoded::EncodedObject;
use apimachinery::error::ApiError;
use apimachinery::messages::ObjectList;
use apimachinery::object::ObjectExt;
use apimachinery::options::{ContinueToken, ListOptions, ReadAt};
use storage::{Revision, Storage, StorageError};
use storage_codec::codec::decode_object;
use storage_codec::errors::interpret;

fn encode(revision: Option<Revision>, start: &str) -> String {
    ContinueToken { revision, start: start.to_string() }.encode()
}

/// Serves one page (or a whole exact-revision list) from storage, filtering by selectors and
/// reading further until `limit` matches are found, as kube's etcd3 store does.
pub async fn list_from_storage(
    def: &ResourceDef,
    storage: Arc<dyn Storage>,
    prefix: &str,
    options: &ListOptions,
) -> Result<ObjectList, ApiError> {
    let (labels, fields) = (&options.selection.labels, &options.selection.fields);
    let (mut revision, mut start) = match &options.continue_token {
        Some(token) => (token.revision, Some(format!("{prefix}{}", token.start))),
        None => (None, None),
    };
    if options.continue_token.is_none() {
        match options.read_at {
            ReadAt::Exact(n) => revision = Some(n),
            // NotOlderThan: the latest revision is newer than n unless n is in the future.
            ReadAt::NotOlderThan(n) => {
                let current = storage.current_revision().await.map_err(|e| interpret(def, "", e))?;
                if n > current {
                    return Err(ApiError::too_large_resource_version(n, current));
                }
            }
            ReadAt::Latest | ReadAt::Any => {}
        }
    }
    let filtered = !labels.is_empty() || !fields.is_empty();
    let limit = options.limit;
    let mut items = Vec::new();
    let mut last_key: Option<String> = None;
    let mut more;
    let mut remaining;
    let mut page_size = if limit == 0 { 0 } else { limit.max(1) };
    loop {
        let opts = storage::ListOptions { revision, start: start.clone(), limit: page_size };
        let page = match storage.list(prefix, opts).await {
            Ok(p) => p,
            Err(StorageError::Compacted { .. }) if options.continue_token.is_some() => {
                let fresh = last_key.as_deref().or(start.as_deref()).map(|k| encode(None, &k[prefix.len()..]));
                let mut e = ApiError::expired(
                    "The provided continue parameter is too old to display a consistent list result. You can start a new \
                     list without the continue parameter, or use the continue token in this response to retrieve the \
                     remainder of the results. Continuing with the provided token results in an inconsistent list - \
                     objects that were created, modified, or deleted between the time the first chunk was returned \
                     and now may show up in the list.",
                );
                e.continue_token = fresh;
                return Err(e);
            }
            // kube's etcd3 store words an Exact list below the compacted revision this way.
            Err(StorageError::Compacted { .. }) => {
                return Err(ApiError::expired("The resourceVersion for the provided list is too old."));
            }
            Err(e) => return Err(interpret(def, "", e)),
        };
        revision = Some(page.revision);
        more = page.more;
        remaining = page.remaining;
        for kv in &page.items {
            last_key = Some(kv.key.clone());
            let obj = decode_object(def, kv).map_err(|e| interpret(def, "", e))?;
            if labels.matches(obj.labels()) && fields.matches(&def.field_set(&obj)) {
                items.push(EncodedObject::encode(&obj));
                if limit > 0 && items.len() == limit {
                    break;
                }
            }
        }
        if limit == 0 || items.len() >= limit || !more {
            // Items of a filled page after the last one taken remain for the next page.
            if let Some(k) = &last_key
                && page.items.last().is_some_and(|kv| &kv.key != k)
            {
                more = true;
            }
            break;
        }
        start = last_key.as_ref().map(|k| format!("{k}\u{0}"));
        // Selective filters read bigger pages, as kube doubles its etcd page size.
        page_size = (page_size * 2).min(10_000);
    }
    let revision = revision.unwrap_or(0);
    let continue_token = (limit > 0 && more)
        .then(|| last_key.as_ref().map(|k| encode(Some(revision), &format!("{}\u{0}", &k[prefix.len()..]))))
        .flatten();
    let remaining_item_count = (continue_token.is_some() && !filtered).then_some(remaining);
    Ok(ObjectList { items, resource_version: revision.to_string(), continue_token, remaining_item_count })
}
