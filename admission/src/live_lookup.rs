//! kube's "live lookup" for plugins that read a kind from an informer: a namespace whose cache
//! shows no LimitRanges (or ResourceQuotas) may have one created a moment ago that the cache has
//! not seen, so an empty answer is checked against storage; and since most namespaces have none,
//! an empty consistent answer is trusted for a while rather than asked again on every write.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use apimachinery::error::ApiError;
use apimachinery::lookup::ObjectLookup;
use serde_json::Value;

/// How long an empty consistent answer stands (kube's `liveTTL`).
const EMPTY_TTL: Duration = Duration::from_secs(30);
/// Namespaces remembered before expired entries are dropped (kube's LRU holds 10,000).
const REMEMBERED: usize = 10_000;

/// The objects of one kind in a namespace, from the cache, else from storage.
pub(crate) struct LiveLookup {
    objects: Arc<dyn ObjectLookup>,
    group: &'static str,
    resource: &'static str,
    /// When storage last said a namespace has none. A std mutex: held only to read or insert,
    /// never across an await.
    empty_since: Mutex<HashMap<String, Instant>>,
}

impl LiveLookup {
    /// Lists `resource` of `group` through `objects`.
    pub(crate) fn new(objects: Arc<dyn ObjectLookup>, group: &'static str, resource: &'static str) -> Self {
        LiveLookup { objects, group, resource, empty_since: Mutex::default() }
    }

    /// The objects in `namespace`.
    pub(crate) async fn list(&self, namespace: &str) -> Result<Vec<Value>, ApiError> {
        let cached = self.objects.list(self.group, self.resource, namespace, "").await?;
        if !cached.is_empty() {
            return Ok(cached);
        }
        let fresh = |at: &Instant| at.elapsed() < EMPTY_TTL;
        if self.empty_since.lock().expect("not poisoned").get(namespace).is_some_and(fresh) {
            return Ok(cached);
        }
        let live = self.objects.list_latest(self.group, self.resource, namespace).await?;
        if live.is_empty() {
            let mut remembered = self.empty_since.lock().expect("not poisoned");
            if remembered.len() >= REMEMBERED {
                remembered.retain(|_, at| fresh(at));
            }
            remembered.insert(namespace.to_string(), Instant::now());
        }
        Ok(live)
    }

    /// Every object in `namespace` as storage holds it now.
    pub(crate) async fn list_latest(&self, namespace: &str) -> Result<Vec<Value>, ApiError> {
        self.objects.list_latest(self.group, self.resource, namespace).await
    }
}
