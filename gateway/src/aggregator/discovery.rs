//! The discovery of remote group versions: what each extension server serves, fetched by the
//! APIService controller and cached here, so `/apis` answers from memory whatever the
//! extension servers do (kube's `discoveryManager` with its `AggregatorSource`).
//!
//! A backend's own aggregated `/apis` is read when it serves one (only the APIService's group
//! version kept); otherwise its `APIResourceList` at `/apis/<group>/<version>` is converted.
//! A failed refresh, or an APIService that is not `Available`, leaves the last resources known
//! in place and marks them `Stale` (kube drops them; clients ignore a stale version's
//! resources either way).

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use serde_json::{Value, json};

/// The Accept of the aggregator's discovery fetch: aggregated discovery only (kube's).
pub const AGGREGATED_ACCEPT: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,\
                                     application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList";

/// Whether a response's content type is aggregated discovery.
pub fn is_aggregated(content_type: &str) -> bool {
    content_type.contains("g=apidiscovery.k8s.io") && content_type.contains("as=APIGroupDiscoveryList")
}

/// One remote group version's resources, as last fetched.
#[derive(Debug, PartialEq)]
pub struct Discovered {
    /// `APIResourceDiscovery` entries.
    pub resources: Vec<Value>,
    /// The last refresh succeeded (and the APIService was available for it).
    pub fresh: bool,
}

/// Remote group versions' resources by group and version. A `std` lock held for a map
/// operation, never across an await.
#[derive(Default)]
pub struct DiscoveryCache {
    inner: RwLock<HashMap<(String, String), Arc<Discovered>>>,
}

impl DiscoveryCache {
    /// What is known of `group`/`version`.
    pub fn get(&self, group: &str, version: &str) -> Option<Arc<Discovered>> {
        let inner = self.inner.read().unwrap_or_else(std::sync::PoisonError::into_inner);
        inner.get(&(group.to_string(), version.to_string())).cloned()
    }

    /// A successful refresh.
    pub fn store(&self, group: &str, version: &str, resources: Vec<Value>) {
        self.put(group, version, Discovered { resources, fresh: true });
    }

    /// A failed refresh, or a backend not available: the resources known stay, marked stale.
    pub fn mark_stale(&self, group: &str, version: &str) {
        let resources = self.get(group, version).map(|d| d.resources.clone()).unwrap_or_default();
        self.put(group, version, Discovered { resources, fresh: false });
    }

    /// Forgets a group version no APIService serves any more.
    pub fn remove(&self, group: &str, version: &str) {
        let mut inner = self.inner.write().unwrap_or_else(std::sync::PoisonError::into_inner);
        inner.remove(&(group.to_string(), version.to_string()));
    }

    fn put(&self, group: &str, version: &str, discovered: Discovered) {
        let mut inner = self.inner.write().unwrap_or_else(std::sync::PoisonError::into_inner);
        inner.insert((group.to_string(), version.to_string()), Arc::new(discovered));
    }
}

/// `group`/`version`'s resources out of an `APIGroupDiscoveryList`; none when the backend does
/// not list that version (kube publishes it empty).
pub fn from_aggregated(body: &[u8], group: &str, version: &str) -> Result<Vec<Value>, String> {
    let doc: Value = serde_json::from_slice(body).map_err(|e| format!("aggregated discovery: {e}"))?;
    let items = doc.get("items").and_then(Value::as_array).ok_or("aggregated discovery without items")?;
    let versions = items
        .iter()
        .find(|g| g.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("") == group)
        .and_then(|g| g.get("versions"))
        .and_then(Value::as_array);
    let resources = versions
        .into_iter()
        .flatten()
        .find(|v| v.get("version").and_then(Value::as_str) == Some(version))
        .and_then(|v| v.get("resources"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    Ok(resources)
}

/// An `APIResourceList` converted to aggregated discovery's resources: `a/b` entries become
/// subresources of `a`.
pub fn from_resource_list(body: &[u8], group: &str, version: &str) -> Result<Vec<Value>, String> {
    let doc: Value = serde_json::from_slice(body).map_err(|e| format!("APIResourceList: {e}"))?;
    let list = doc.get("resources").and_then(Value::as_array).ok_or("APIResourceList without resources")?;
    let text = |r: &Value, k: &str| r.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    let kind_of = |r: &Value| {
        let or = |k: &str, default: &str| Some(text(r, k)).filter(|s| !s.is_empty()).unwrap_or(default.to_string());
        json!({"group": or("group", group), "version": or("version", version), "kind": text(r, "kind")})
    };
    let mut out: Vec<Value> = Vec::new();
    for r in list.iter().filter(|r| !text(r, "name").contains('/')) {
        let mut resource = json!({
            "resource": text(r, "name"),
            "responseKind": kind_of(r),
            "scope": if r.get("namespaced").and_then(Value::as_bool) == Some(true) { "Namespaced" } else { "Cluster" },
            "singularResource": text(r, "singularName"),
            "verbs": r.get("verbs").cloned().unwrap_or_else(|| json!([])),
        });
        for key in ["shortNames", "categories"] {
            if let Some(v) = r.get(key).filter(|v| v.as_array().is_some_and(|a| !a.is_empty())) {
                resource[key] = v.clone();
            }
        }
        out.push(resource);
    }
    for r in list {
        let name = text(r, "name");
        let Some((parent, sub)) = name.split_once('/') else { continue };
        let Some(owner) = out.iter_mut().find(|o| o["resource"] == parent) else { continue };
        if !owner["subresources"].is_array() {
            owner["subresources"] = json!([]);
        }
        let entry = json!({"subresource": sub, "responseKind": kind_of(r),
            "verbs": r.get("verbs").cloned().unwrap_or_else(|| json!([]))});
        owner["subresources"].as_array_mut().expect("an array").push(entry);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_resource_list_becomes_aggregated_resources_with_their_subresources() {
        let list = json!({"kind": "APIResourceList", "groupVersion": "wardle.example.com/v1alpha1", "resources": [
            {"name": "flunders", "singularName": "flunder", "namespaced": true, "kind": "Flunder",
             "verbs": ["get", "list"], "shortNames": ["fl"], "categories": []},
            {"name": "flunders/status", "singularName": "", "namespaced": true, "kind": "Flunder", "verbs": ["get"]},
            {"name": "fischers", "singularName": "fischer", "namespaced": false, "kind": "Fischer", "verbs": ["get"]}]});
        let got = from_resource_list(list.to_string().as_bytes(), "wardle.example.com", "v1alpha1").unwrap();
        assert_eq!(
            got[0],
            json!({"resource": "flunders", "scope": "Namespaced", "singularResource": "flunder", "verbs": ["get", "list"],
                "shortNames": ["fl"],
                "responseKind": {"group": "wardle.example.com", "version": "v1alpha1", "kind": "Flunder"},
                "subresources": [{"subresource": "status", "verbs": ["get"],
                    "responseKind": {"group": "wardle.example.com", "version": "v1alpha1", "kind": "Flunder"}}]})
        );
        assert_eq!((got.len(), &got[1]["scope"]), (2, &json!("Cluster")));
    }

    #[test]
    fn only_the_apiservices_version_is_taken_from_a_backends_aggregated_discovery() {
        let doc = json!({"kind": "APIGroupDiscoveryList", "items": [
            {"metadata": {"name": "wardle.example.com"}, "versions": [
                {"version": "v1beta1", "resources": [{"resource": "a"}]},
                {"version": "v1alpha1", "resources": [{"resource": "b"}]}]}]});
        let body = doc.to_string();
        assert_eq!(
            from_aggregated(body.as_bytes(), "wardle.example.com", "v1alpha1").unwrap(),
            [json!({"resource": "b"})]
        );
        assert!(from_aggregated(body.as_bytes(), "wardle.example.com", "v2").unwrap().is_empty());
        assert!(from_aggregated(b"{}", "g", "v").is_err());
    }

    #[test]
    fn a_failed_refresh_keeps_what_was_known_as_stale() {
        let cache = DiscoveryCache::default();
        cache.mark_stale("g", "v");
        assert_eq!(*cache.get("g", "v").unwrap(), Discovered { resources: vec![], fresh: false });
        cache.store("g", "v", vec![json!({"resource": "a"})]);
        cache.mark_stale("g", "v");
        assert_eq!(
            *cache.get("g", "v").unwrap(),
            Discovered { resources: vec![json!({"resource": "a"})], fresh: false }
        );
    }
}
