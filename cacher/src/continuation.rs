//! Paged lists from storage and kube's continue tokens.
//!
//! A token is base64url (unpadded) JSON `{"v":"meta.k8s.io/v1","rv":N,"start":"<key>"}` where
//! `start` is relative to the listed prefix: the next page starts there, read at revision `N`,
//! so every page shows the store as it was when the first page was read.

use std::sync::Arc;

use actors::encoded::EncodedObject;
use actors::error::ApiError;
use actors::kinds::ResourceDef;
use actors::messages::{ListObjects, ObjectList};
use actors::object::ObjectExt;
use actors::selector::{FieldSelector, LabelSelector};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::{Deserialize, Serialize};
use storage::registry::{decode_object, interpret};
use storage::{ListOptions, Revision, Storage, StorageError};

#[derive(Serialize, Deserialize)]
struct Token {
    v: String,
    rv: i64,
    start: String,
}

/// Encodes a continue token.
pub fn encode(revision: Revision, start: &str) -> String {
    let token = Token { v: "meta.k8s.io/v1".into(), rv: revision as i64, start: start.to_string() };
    URL_SAFE_NO_PAD.encode(serde_json::to_vec(&token).expect("token serializes"))
}

/// Decodes a continue token into (revision, start key relative to the prefix); a revision of
/// `None` means "latest" (a token handed out after the original revision expired).
pub fn decode(token: &str) -> Result<(Option<Revision>, String), ApiError> {
    let invalid =
        |why: &str| ApiError::bad_request(format!("invalid continue token: continue key is not valid: {why}"));
    let bytes = URL_SAFE_NO_PAD.decode(token.trim_end_matches('=')).map_err(|e| invalid(&e.to_string()))?;
    let t: Token = serde_json::from_slice(&bytes).map_err(|e| invalid(&e.to_string()))?;
    if t.v != "meta.k8s.io/v1" {
        return Err(invalid(&format!("incorrect encoded start resourceVersion (version {})", t.v)));
    }
    if t.start.is_empty() {
        return Err(invalid("encoded start key empty"));
    }
    // Keys are paths: a token must not climb out of the listed prefix.
    if t.start.split('/').any(|seg| seg == ".." || seg == ".") || t.start.starts_with('/') {
        return Err(invalid("path traversal attempt detected"));
    }
    match t.rv {
        -1 => Ok((None, t.start)),
        rv if rv > 0 => Ok((Some(rv as Revision), t.start)),
        _ => Err(invalid("incorrect encoded start resourceVersion (version meta.k8s.io/v1)")),
    }
}

/// Serves one page (or a whole exact-revision list) from storage, filtering by selectors and
/// reading further until `limit` matches are found, as kube's etcd3 store does.
pub async fn list_from_storage(
    def: &'static ResourceDef,
    storage: Arc<dyn Storage>,
    prefix: &str,
    msg: &ListObjects,
    labels: &LabelSelector,
    fields: &FieldSelector,
) -> Result<ObjectList, ApiError> {
    let (mut revision, mut start) = match &msg.continue_token {
        Some(token) => {
            let (rv, start) = decode(token)?;
            (rv, Some(format!("{prefix}{start}")))
        }
        None => (None, None),
    };
    if msg.continue_token.is_none()
        && let Some(rv) = msg.consistency.resource_version.as_deref().filter(|rv| !rv.is_empty() && *rv != "0")
    {
        let n =
            rv.parse::<Revision>().map_err(|_| ApiError::bad_request(format!("invalid resource version \"{rv}\"")))?;
        match msg.consistency.resource_version_match.as_deref() {
            Some("Exact") => revision = Some(n),
            // NotOlderThan (or no match): the latest revision is newer than n unless n is in the future.
            _ => {
                let current = storage.current_revision().await.map_err(|e| interpret(def, "", e))?;
                if n > current {
                    return Err(ApiError::too_large_resource_version(n, current));
                }
            }
        }
    }
    let filtered = !labels.is_empty() || !fields.is_empty();
    let limit = msg.limit;
    let mut items = Vec::new();
    let mut last_key: Option<String> = None;
    let mut more;
    let mut remaining;
    let mut page_size = if limit == 0 { 0 } else { limit.max(1) };
    loop {
        let opts = ListOptions { revision, start: start.clone(), limit: page_size };
        let page = match storage.list(prefix, opts).await {
            Ok(p) => p,
            Err(StorageError::Compacted { .. }) if msg.continue_token.is_some() => {
                let fresh = last_key.as_deref().or(start.as_deref()).map(|k| encode_latest(&k[prefix.len()..]));
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
            let obj = decode_object(kv).map_err(|e| interpret(def, "", e))?;
            if labels.matches(obj.labels()) && fields.matches(&actors::selector::field_set(def, &obj)) {
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
        .then(|| last_key.as_ref().map(|k| encode(revision, &format!("{}\u{0}", &k[prefix.len()..]))))
        .flatten();
    let remaining_item_count = (continue_token.is_some() && !filtered).then_some(remaining);
    Ok(ObjectList { items, resource_version: revision.to_string(), continue_token, remaining_item_count })
}

fn encode_latest(start: &str) -> String {
    let token = Token { v: "meta.k8s.io/v1".into(), rv: -1, start: start.to_string() };
    URL_SAFE_NO_PAD.encode(serde_json::to_vec(&token).expect("token serializes"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_round_trips() {
        let t = encode(42, "default/a\u{0}");
        assert_eq!(decode(&t).unwrap(), (Some(42), "default/a\u{0}".to_string()));
    }

    #[test]
    fn malformed_tokens_are_bad_requests() {
        for bad in ["%%%", "bm90IGpzb24", &URL_SAFE_NO_PAD.encode(br#"{"v":"x","rv":1,"start":"a"}"#)] {
            let e = decode(bad).unwrap_err();
            assert_eq!(e.code, 400, "{bad}");
            assert!(e.message.starts_with("invalid continue token"), "{}", e.message);
        }
        let climb = URL_SAFE_NO_PAD.encode(br#"{"v":"meta.k8s.io/v1","rv":1,"start":"../secrets/x"}"#);
        assert_eq!(decode(&climb).unwrap_err().code, 400);
    }
}
