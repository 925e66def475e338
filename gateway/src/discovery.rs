//! Discovery: `/api`, `/apis`, group and group-version documents, and aggregated discovery
//! (`apidiscovery.k8s.io/v2`), which client-go 1.30 asks for first.
//!
//! Groups come from the catalogue and from the remote APIServices the aggregator knows, in
//! kube's order; a remote group version's resources come from the aggregator's cache. Every
//! document is built from memory: none waits on an extension server.

use std::sync::Arc;

use apimachinery::catalogue::{Catalogue, ResourceDef, Served, Subresource};
use base64::Engine;
use kinds::apiregistration::{self, Priority};
use serde_json::{Value, json};

use crate::aggregator::discovery::DiscoveryCache;
use crate::aggregator::{ApiService, Registry};

/// The media type of aggregated discovery responses; client-go checks it on the response.
pub const AGGREGATED_V2: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";
/// The beta media type older clients ask for.
pub const AGGREGATED_V2BETA1: &str = "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList";

/// Which aggregated discovery version an Accept header asks for, if any.
pub fn wants_aggregated(accept: Option<&str>) -> Option<&'static str> {
    let accept = accept?;
    for range in accept.split(',') {
        let params: Vec<&str> = range.split(';').map(str::trim).collect();
        let has = |p: &str| params.contains(&p);
        if params.first() == Some(&"application/json")
            && has("g=apidiscovery.k8s.io")
            && has("as=APIGroupDiscoveryList")
        {
            if has("v=v2") {
                return Some(AGGREGATED_V2);
            }
            if has("v=v2beta1") {
                return Some(AGGREGATED_V2BETA1);
            }
        }
    }
    None
}

/// `GET /api`.
pub fn api_versions(server_address: &str) -> Value {
    json!({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{ "clientCIDR": "0.0.0.0/0", "serverAddress": server_address }],
    })
}

fn group_json(name: &str, versions: &[&str]) -> Value {
    let versions: Vec<Value> =
        versions.iter().map(|v| json!({ "groupVersion": format!("{name}/{v}"), "version": v })).collect();
    json!({ "name": name, "versions": versions.clone(), "preferredVersion": versions[0] })
}

/// Who serves a group version listed in discovery.
enum Source {
    /// This server: its resources are the catalogue's.
    Local,
    /// An extension server, through its APIService.
    Remote(Arc<ApiService>),
}

/// One version of a listed group.
struct ListedVersion {
    version: String,
    priority: Priority,
    source: Source,
}

/// One group of `/apis`, its versions in discovery order.
struct ListedGroup {
    name: String,
    versions: Vec<ListedVersion>,
}

impl ListedGroup {
    /// The highest `groupPriorityMinimum` of its versions: what orders groups.
    fn priority(&self) -> i32 {
        self.versions.iter().map(|v| v.priority.group).max().unwrap_or(0)
    }

    fn version_names(&self) -> Vec<&str> {
        self.versions.iter().map(|v| v.version.as_str()).collect()
    }
}

/// The groups of `/apis` in kube's order: the served groups and the remote APIServices' (a
/// remote group version replaces a local one of the same name, as kube's aggregator routes
/// it), groups by their highest priority then by name, versions by priority then kube's
/// version order. `apiregistration.k8s.io` sorts first.
fn listed_groups(catalogue: &Catalogue, remote: &Registry) -> Vec<ListedGroup> {
    let mut groups: Vec<ListedGroup> = Vec::new();
    let mut add = |group: &str, version: &str, priority: Priority, source: Source| {
        let at = match groups.iter().position(|g| g.name == group) {
            Some(at) => at,
            None => {
                groups.push(ListedGroup { name: group.to_string(), versions: Vec::new() });
                groups.len() - 1
            }
        };
        let versions = &mut groups[at].versions;
        versions.retain(|v| v.version != version);
        versions.push(ListedVersion { version: version.to_string(), priority, source });
    };
    for g in catalogue.groups().iter().filter(|g| !g.name.is_empty()) {
        for v in &g.versions {
            add(&g.name, v, apiregistration::local_priority(&g.name, v), Source::Local);
        }
    }
    for service in remote.remotes().filter(|s| !s.spec.group.is_empty()) {
        add(&service.spec.group, &service.spec.version, service.spec.priority, Source::Remote(service.clone()));
    }
    for g in &mut groups {
        g.versions.sort_by(|a, b| {
            apiregistration::compare_versions((&a.version, a.priority.version), (&b.version, b.priority.version))
        });
    }
    groups.sort_by(|a, b| b.priority().cmp(&a.priority()).then_with(|| a.name.cmp(&b.name)));
    groups
}

/// `GET /apis`.
pub fn api_group_list(catalogue: &Catalogue, remote: &Registry) -> Value {
    let groups: Vec<Value> =
        listed_groups(catalogue, remote).iter().map(|g| group_json(&g.name, &g.version_names())).collect();
    json!({ "kind": "APIGroupList", "apiVersion": "v1", "groups": groups })
}

/// `GET /apis/<group>`.
pub fn api_group(catalogue: &Catalogue, remote: &Registry, group: &str) -> Option<Value> {
    let g = listed_groups(catalogue, remote).into_iter().find(|g| g.name == group)?;
    let mut doc = group_json(&g.name, &g.version_names());
    doc["kind"] = "APIGroup".into();
    doc["apiVersion"] = "v1".into();
    Some(doc)
}

/// The group, version and kind a subresource answers with, as kube's discovery names them.
fn subresource_kind(def: &ResourceDef, sub: Subresource) -> (String, String, String) {
    let own = |kind: &str| (def.group.clone(), def.version.clone(), kind.to_string());
    match sub {
        Subresource::Status
        | Subresource::Finalize
        | Subresource::Approval
        | Subresource::EphemeralContainers
        | Subresource::Log => own(&def.kind),
        Subresource::Scale => ("autoscaling".into(), "v1".into(), "Scale".into()),
        Subresource::Eviction => ("policy".into(), "v1".into(), "Eviction".into()),
        Subresource::Binding => own("Binding"),
        Subresource::Token => ("authentication.k8s.io".into(), "v1".into(), "TokenRequest".into()),
        Subresource::Exec => own("PodExecOptions"),
        Subresource::Attach => own("PodAttachOptions"),
        Subresource::PortForward => own("PodPortForwardOptions"),
        Subresource::Proxy => own(&format!("{}ProxyOptions", def.kind)),
    }
}

/// kube's `storageVersionHash` of a stored resource: the first 8 bytes of the SHA-256 of
/// `<group>/<version>/<kind>` of the version it is written to etcd in, base64. Clients (the
/// storage version migrator) compare it across servers to see a storage version change.
fn storage_version_hash(api_version: &str, kind: &str) -> String {
    let gvk =
        if api_version.contains('/') { format!("{api_version}/{kind}") } else { format!("/{api_version}/{kind}") };
    let digest = ring::digest::digest(&ring::digest::SHA256, gvk.as_bytes());
    base64::engine::general_purpose::STANDARD.encode(&digest.as_ref()[..8])
}

/// `GET /api/v1` or `GET /apis/<group>/<version>`.
pub fn api_resource_list(catalogue: &Catalogue, group: &str, version: &str) -> Option<Value> {
    let defs = catalogue.resources_of(group, version);
    if defs.is_empty() {
        return None;
    }
    let mut resources = Vec::new();
    for d in &defs {
        let mut r = json!({
            "name": d.resource,
            "singularName": d.singular,
            "namespaced": d.namespaced,
            "kind": d.kind,
            "verbs": d.verbs(),
        });
        if !d.short_names.is_empty() {
            r["shortNames"] = json!(d.short_names);
        }
        if !d.categories.is_empty() {
            r["categories"] = json!(d.categories);
        }
        if d.served == Served::Stored {
            r["storageVersionHash"] = json!(storage_version_hash(&d.etcd_api_version(), &d.kind));
        }
        resources.push(r);
        for sub in &d.subresources {
            let (g, v, k) = subresource_kind(d, *sub);
            let mut s = json!({
                "name": format!("{}/{}", d.resource, sub.name()),
                "singularName": "",
                "namespaced": d.namespaced,
                "kind": k,
                "verbs": sub.verbs(),
            });
            if (g.as_str(), v.as_str()) != (d.group.as_str(), d.version.as_str()) {
                s["group"] = g.into();
                s["version"] = v.into();
            }
            resources.push(s);
        }
    }
    let group_version = if group.is_empty() { version.to_string() } else { format!("{group}/{version}") };
    Some(
        json!({ "kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version, "resources": resources }),
    )
}

fn aggregated_resource(d: &ResourceDef) -> Value {
    let subresources: Vec<Value> = d
        .subresources
        .iter()
        .map(|s| {
            let (g, v, k) = subresource_kind(d, *s);
            json!({
                "subresource": s.name(),
                "responseKind": { "group": g, "version": v, "kind": k },
                "verbs": s.verbs(),
            })
        })
        .collect();
    let mut r = json!({
        "resource": d.resource,
        "responseKind": { "group": d.group, "version": d.version, "kind": d.kind },
        "scope": if d.namespaced { "Namespaced" } else { "Cluster" },
        "singularResource": d.singular,
        "verbs": d.verbs(),
    });
    if !d.short_names.is_empty() {
        r["shortNames"] = json!(d.short_names);
    }
    if !d.categories.is_empty() {
        r["categories"] = json!(d.categories);
    }
    if !subresources.is_empty() {
        r["subresources"] = json!(subresources);
    }
    r
}

/// The `APIVersionDiscovery` of one group version: a local one's resources from the
/// catalogue, always current; a remote one's from the aggregator's cache, `Stale` unless its
/// APIService is available and its last refresh succeeded (kube omits empty resources).
fn aggregated_version(catalogue: &Catalogue, discovery: &DiscoveryCache, group: &str, v: &ListedVersion) -> Value {
    match &v.source {
        Source::Local => {
            let resources: Vec<Value> =
                catalogue.resources_of(group, &v.version).iter().map(|d| aggregated_resource(d)).collect();
            json!({ "version": v.version, "resources": resources, "freshness": "Current" })
        }
        Source::Remote(service) => {
            let known = discovery.get(group, &v.version);
            let fresh = service.available && known.as_ref().is_some_and(|d| d.fresh);
            let mut doc = json!({ "version": v.version, "freshness": if fresh { "Current" } else { "Stale" } });
            if let Some(d) = known.filter(|d| !d.resources.is_empty()) {
                doc["resources"] = json!(d.resources);
            }
            doc
        }
    }
}

fn aggregated_list(media_type: &str, items: Vec<Value>) -> Value {
    let api_version =
        if media_type == AGGREGATED_V2 { "apidiscovery.k8s.io/v2" } else { "apidiscovery.k8s.io/v2beta1" };
    json!({ "kind": "APIGroupDiscoveryList", "apiVersion": api_version, "metadata": {}, "items": items })
}

/// Aggregated discovery for `/api`: the core group, always served here.
pub fn aggregated_core(catalogue: &Catalogue, media_type: &str) -> Value {
    let versions: Vec<Value> = catalogue
        .groups()
        .iter()
        .filter(|g| g.name.is_empty())
        .flat_map(|g| g.versions.clone())
        .map(|v| {
            let resources: Vec<Value> = catalogue.resources_of("", &v).iter().map(|d| aggregated_resource(d)).collect();
            json!({ "version": v, "resources": resources, "freshness": "Current" })
        })
        .collect();
    let items = if versions.is_empty() {
        Vec::new()
    } else {
        vec![json!({ "metadata": { "creationTimestamp": null }, "versions": versions })]
    };
    aggregated_list(media_type, items)
}

/// Aggregated discovery for `/apis`, from the catalogue and the aggregator's cache: nothing
/// here waits on an extension server.
pub fn aggregated(catalogue: &Catalogue, remote: &Registry, discovery: &DiscoveryCache, media_type: &str) -> Value {
    let items: Vec<Value> = listed_groups(catalogue, remote)
        .iter()
        .map(|g| {
            let versions: Vec<Value> =
                g.versions.iter().map(|v| aggregated_version(catalogue, discovery, &g.name, v)).collect();
            json!({ "metadata": { "name": g.name, "creationTimestamp": null }, "versions": versions })
        })
        .collect();
    aggregated_list(media_type, items)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The hashes a reference kube-apiserver 1.32 serves: of the version each resource is
    /// written to etcd in (core `v1` for both event groups, `autoscaling/v2` for both HPA
    /// versions, `v1beta1` for CRDs); none for subresources and resources stored nowhere.
    #[test]
    fn storage_version_hashes_are_kubes() {
        let catalogue = kinds::catalogue();
        let hash = |group: &str, version: &str, resource: &str| {
            let list = api_resource_list(&catalogue, group, version).unwrap();
            let r = list["resources"].as_array().unwrap().iter().find(|r| r["name"] == resource).cloned();
            r.unwrap_or_else(|| panic!("{resource}"))["storageVersionHash"].as_str().map(str::to_string)
        };
        let kube = [
            ("", "v1", "configmaps", "qFsyl6wFWjQ="),
            ("", "v1", "endpoints", "fWeeMqaN/OA="),
            ("", "v1", "events", "r2yiGXH7wu8="),
            ("", "v1", "namespaces", "Q3oi5N2YM8M="),
            ("", "v1", "nodes", "XwShjMxG9Fs="),
            ("events.k8s.io", "v1", "events", "r2yiGXH7wu8="),
            ("autoscaling", "v1", "horizontalpodautoscalers", "qwQve8ut294="),
            ("autoscaling", "v2", "horizontalpodautoscalers", "qwQve8ut294="),
            ("apiextensions.k8s.io", "v1", "customresourcedefinitions", "jfWCUB31mvA="),
            ("apiregistration.k8s.io", "v1", "apiservices", "InPBPD7+PqM="),
        ];
        for (group, version, resource, expected) in kube {
            assert_eq!(hash(group, version, resource).as_deref(), Some(expected), "{group}/{version} {resource}");
        }
        for (group, version, resource) in [
            ("", "v1", "bindings"),
            ("", "v1", "componentstatuses"),
            ("", "v1", "namespaces/status"),
            ("authorization.k8s.io", "v1", "subjectaccessreviews"),
        ] {
            assert_eq!(hash(group, version, resource), None, "{group}/{version} {resource}");
        }
    }

    #[test]
    fn client_go_accept_header_selects_v2() {
        let a = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";
        assert_eq!(wants_aggregated(Some(a)), Some(AGGREGATED_V2));
        assert_eq!(wants_aggregated(Some("application/json")), None);
    }

    #[test]
    fn resource_list_has_scale_subresource_in_autoscaling() {
        let l = api_resource_list(&kinds::catalogue(), "apps", "v1").unwrap();
        let scale = l["resources"].as_array().unwrap().iter().find(|r| r["name"] == "deployments/scale").unwrap();
        assert_eq!((scale["group"].as_str(), scale["kind"].as_str()), (Some("autoscaling"), Some("Scale")));
    }

    #[test]
    fn aggregated_core_has_pods() {
        let d = aggregated_core(&kinds::catalogue(), AGGREGATED_V2);
        let core = &d["items"][0];
        assert!(core["metadata"].get("name").is_none());
        let pods =
            core["versions"][0]["resources"].as_array().unwrap().iter().find(|r| r["resource"] == "pods").unwrap();
        assert_eq!(pods["scope"], "Namespaced");
        let subresources: Vec<&str> =
            pods["subresources"].as_array().unwrap().iter().map(|s| s["subresource"].as_str().unwrap()).collect();
        assert_eq!(
            subresources,
            ["attach", "binding", "ephemeralcontainers", "eviction", "exec", "log", "portforward", "proxy", "status"]
        );
        let eviction = &pods["subresources"][3];
        assert_eq!(
            eviction["responseKind"],
            serde_json::json!({"group": "policy", "version": "v1", "kind": "Eviction"})
        );
        assert_eq!(eviction["verbs"], serde_json::json!(["create"]));
    }

    struct NoObjects;

    #[async_trait::async_trait]
    impl apimachinery::lookup::ObjectLookup for NoObjects {
        async fn get(&self, _: &str, _: &str, _: &str, _: &str) -> Result<Option<Value>, apimachinery::ApiError> {
            Ok(None)
        }
    }

    fn remote(group: &str, version: &str, group_priority: i32, available: bool) -> Value {
        let status = if available { "True" } else { "False" };
        json!({"metadata": {"name": format!("{version}.{group}")}, "spec": {"group": group, "version": version,
            "service": {"namespace": "ns", "name": "svc", "port": 443}, "groupPriorityMinimum": group_priority,
            "versionPriority": 100}, "status": {"conditions": [{"type": "Available", "status": status}]}})
    }

    fn aggregator(services: &[Value]) -> crate::aggregator::Aggregator {
        let (aggregator, _) = crate::aggregator::Aggregator::new(Arc::new(NoObjects), Default::default());
        for s in services {
            aggregator.apply(s);
        }
        aggregator
    }

    #[test]
    fn remote_groups_join_apis_by_priority_after_apiregistration() {
        let catalogue = kinds::catalogue();
        let a = aggregator(&[
            remote("metrics.k8s.io", "v1beta1", 100, true),
            remote("high.example.com", "v1", 17900, true),
        ]);
        let list = api_group_list(&catalogue, &a.registry());
        let names: Vec<&str> = list["groups"].as_array().unwrap().iter().map(|g| g["name"].as_str().unwrap()).collect();
        assert_eq!(names[..3], ["apiregistration.k8s.io", "high.example.com", "apps"]);
        assert_eq!(names.last(), Some(&"metrics.k8s.io"));
        let autoscaling = api_group(&catalogue, &a.registry(), "autoscaling").unwrap();
        assert_eq!(autoscaling["preferredVersion"]["version"], "v2", "local versions keep kube's order");
        let metrics = api_group(&catalogue, &a.registry(), "metrics.k8s.io").unwrap();
        assert_eq!(metrics["versions"], json!([{"groupVersion": "metrics.k8s.io/v1beta1", "version": "v1beta1"}]));
    }

    #[test]
    fn a_remote_version_is_current_only_while_available_and_fetched() {
        let catalogue = kinds::catalogue();
        let a =
            aggregator(&[remote("metrics.k8s.io", "v1beta1", 100, true), remote("down.example.com", "v1", 100, false)]);
        let version = |a: &crate::aggregator::Aggregator, group: &str| {
            let doc = aggregated(&catalogue, &a.registry(), &a.discovery, AGGREGATED_V2);
            let item =
                doc["items"].as_array().unwrap().iter().find(|i| i["metadata"]["name"] == group).unwrap().clone();
            item["versions"][0].clone()
        };
        assert_eq!(
            version(&a, "metrics.k8s.io"),
            json!({"version": "v1beta1", "freshness": "Stale"}),
            "not fetched yet"
        );
        a.discovery.store("metrics.k8s.io", "v1beta1", vec![json!({"resource": "pods"})]);
        assert_eq!(version(&a, "metrics.k8s.io")["freshness"], "Current");
        a.discovery.store("down.example.com", "v1", vec![json!({"resource": "things"})]);
        assert_eq!(
            version(&a, "down.example.com"),
            json!({"version": "v1", "freshness": "Stale", "resources": [{"resource": "things"}]}),
            "an unavailable APIService is stale, its last resources kept"
        );
        let doc = aggregated(&catalogue, &a.registry(), &a.discovery, AGGREGATED_V2);
        assert_eq!(doc["items"][0]["metadata"]["name"], "apiregistration.k8s.io");
    }
}
