//! Discovery: `/api`, `/apis`, group and group-version documents, and aggregated discovery
//! (`apidiscovery.k8s.io/v2`), which client-go 1.30 asks for first.

use apimachinery::kinds::{Catalogue, ResourceDef, Subresource};
use serde_json::{Value, json};

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

fn group_json(name: &str, versions: &[String]) -> Value {
    let versions: Vec<Value> =
        versions.iter().map(|v| json!({ "groupVersion": format!("{name}/{v}"), "version": v })).collect();
    json!({ "name": name, "versions": versions.clone(), "preferredVersion": versions[0] })
}

/// `GET /apis`.
pub fn api_group_list(catalogue: &Catalogue) -> Value {
    let groups: Vec<Value> =
        catalogue.groups().iter().filter(|g| !g.name.is_empty()).map(|g| group_json(&g.name, &g.versions)).collect();
    json!({ "kind": "APIGroupList", "apiVersion": "v1", "groups": groups })
}

/// `GET /apis/<group>`.
pub fn api_group(catalogue: &Catalogue, group: &str) -> Option<Value> {
    let g = catalogue.groups().into_iter().find(|g| g.name == group && !group.is_empty())?;
    let mut doc = group_json(&g.name, &g.versions);
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

/// Aggregated discovery for `/api` (`core == true`) or `/apis`.
pub fn aggregated(catalogue: &Catalogue, core: bool, media_type: &str) -> Value {
    let api_version =
        if media_type == AGGREGATED_V2 { "apidiscovery.k8s.io/v2" } else { "apidiscovery.k8s.io/v2beta1" };
    let items: Vec<Value> = catalogue
        .groups()
        .iter()
        .filter(|g| g.name.is_empty() == core)
        .map(|g| {
            let versions: Vec<Value> = g
                .versions
                .iter()
                .map(|v| {
                    let resources: Vec<Value> =
                        catalogue.resources_of(&g.name, v).iter().map(|d| aggregated_resource(d)).collect();
                    json!({ "version": v, "resources": resources, "freshness": "Current" })
                })
                .collect();
            let mut meta = json!({ "creationTimestamp": null });
            if !g.name.is_empty() {
                meta["name"] = g.name.clone().into();
            }
            json!({ "metadata": meta, "versions": versions })
        })
        .collect();
    json!({ "kind": "APIGroupDiscoveryList", "apiVersion": api_version, "metadata": {}, "items": items })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_go_accept_header_selects_v2() {
        let a = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";
        assert_eq!(wants_aggregated(Some(a)), Some(AGGREGATED_V2));
        assert_eq!(wants_aggregated(Some("application/json")), None);
    }

    #[test]
    fn resource_list_has_scale_subresource_in_autoscaling() {
        let l = api_resource_list(&apimachinery::builtin::catalogue(), "apps", "v1").unwrap();
        let scale = l["resources"].as_array().unwrap().iter().find(|r| r["name"] == "deployments/scale").unwrap();
        assert_eq!((scale["group"].as_str(), scale["kind"].as_str()), (Some("autoscaling"), Some("Scale")));
    }

    #[test]
    fn aggregated_core_has_pods() {
        let d = aggregated(&apimachinery::builtin::catalogue(), true, AGGREGATED_V2);
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
}
