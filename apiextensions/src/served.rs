//! What a CustomResourceDefinition gives the catalogue: one `ResourceDef` per served version,
//! in kube's version priority order (the preferred version first).

use std::cmp::Ordering;
use std::sync::Arc;

use apimachinery::catalogue::{Converter, ResourceDef, Subresource};
use apimachinery::lookup::ObjectLookup;
use apimachinery::scale::{ScalePaths, Selector, pointer_of};
use apimachinery::version::compare_kube_aware_versions;
use serde_json::Value;

use crate::conversion::WebhookConverter;
use crate::intern::{field_labels, intern};
use crate::printer::ColumnPrinter;
use crate::schema::cel::Validator;
use crate::strategy::CustomResource;

/// The CRD finalizer that deletes a CRD's objects before the CRD goes.
pub const CLEANUP_FINALIZER: &str = "customresourcecleanup.apiextensions.k8s.io";

fn text<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

fn strings(v: &Value, pointer: &str) -> Vec<String> {
    v.pointer(pointer)
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect())
        .unwrap_or_default()
}

/// The storage path of a CRD's objects: kube keeps them under `/registry/<group>/<plural>`.
pub fn storage_path(crd: &Value) -> String {
    format!("{}/{}", text(crd, "/spec/group"), text(crd, "/spec/names/plural"))
}

/// The version objects are stored in (`storage: true`).
pub fn storage_version(crd: &Value) -> Option<&str> {
    crd.pointer("/spec/versions")?
        .as_array()?
        .iter()
        .find(|v| v.get("storage").and_then(Value::as_bool) == Some(true))?
        .get("name")?
        .as_str()
}

/// The served versions' definitions, preferred first. The names are the accepted ones
/// (`status.acceptedNames`) where set, as kube serves them. A conversion webhook reaches a
/// Service through `services`; without it, versions convert as with strategy `None`.
pub fn definitions(crd: &Value, services: Option<&Arc<dyn ObjectLookup>>) -> Vec<ResourceDef> {
    let converter: Option<Arc<dyn Converter>> =
        services.and_then(|s| WebhookConverter::of(crd, s.clone())).map(|c| Arc::new(c) as Arc<dyn Converter>);
    let group = text(crd, "/spec/group");
    let names = match crd.pointer("/status/acceptedNames/plural").and_then(Value::as_str) {
        Some(p) if !p.is_empty() => "/status/acceptedNames",
        _ => "/spec/names",
    };
    let plural = text(crd, &format!("{names}/plural"));
    let kind = text(crd, &format!("{names}/kind"));
    let mut singular = text(crd, &format!("{names}/singular")).to_string();
    if singular.is_empty() {
        singular = kind.to_lowercase();
    }
    let namespaced = text(crd, "/spec/scope") != "Cluster";
    let versions: Vec<&Value> = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter(|v| v.get("served").and_then(Value::as_bool) == Some(true)).collect())
        .unwrap_or_default();
    let several = crd.pointer("/spec/versions").and_then(Value::as_array).is_some_and(|a| a.len() > 1);
    let storage = storage_version(crd).unwrap_or_default().to_string();
    let mut defs: Vec<ResourceDef> = versions
        .iter()
        .map(|v| {
            let version = text(v, "/name");
            let mut subresources = Vec::new();
            if v.pointer("/subresources/scale").is_some() {
                subresources.push(Subresource::Scale);
            }
            if v.pointer("/subresources/status").is_some() {
                subresources.push(Subresource::Status);
            }
            let schema = v.pointer("/schema/openAPIV3Schema");
            let selectable: Vec<&'static str> = v
                .get("selectableFields")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|f| f.get("jsonPath").and_then(Value::as_str))
                .map(|p| intern(p.trim_start_matches('.')))
                .collect();
            let mut labels = vec!["metadata.name"];
            if namespaced {
                labels.push("metadata.namespace");
            }
            labels.extend(selectable.iter().copied());
            let strategy = CustomResource {
                converter: converter.clone(),
                field_labels: field_labels(&labels),
                selectable,
                schema: schema.cloned().map(Arc::new),
                field_schema: CustomResource::typed_schema(schema),
                rules: schema.and_then(Validator::new),
                status: subresources.contains(&Subresource::Status),
                api_version: format!("{group}/{version}"),
                storage_version: several.then(|| format!("{group}/{storage}")),
                printer: ColumnPrinter::new(v.get("additionalPrinterColumns")),
                scale: v.pointer("/subresources/scale").map(scale_paths),
            };
            let mut def = ResourceDef::new(group, version, plural, kind, strategy)
                .storage_path(&storage_path(crd))
                .stored_as_json()
                .subresources(&subresources);
            def.singular = singular.clone();
            def.namespaced = namespaced;
            def.short_names = strings(crd, &format!("{names}/shortNames"));
            def.categories = strings(crd, &format!("{names}/categories"));
            def.deprecation = deprecation(crd, v, group, kind);
            if several {
                def.stored_as = Some((group.to_string(), storage.clone()));
            }
            def
        })
        .collect();
    defs.sort_by(|a, b| compare_kube_aware_versions(&a.version, &b.version));
    defs
}

/// The warning a deprecated version gives, as kube words it: its `deprecationWarning`, else
/// `<group>/<version> <Kind> is deprecated`, pointing to the newest served version that is not
/// deprecated when one ranks above it.
fn deprecation(crd: &Value, version: &Value, group: &str, kind: &str) -> Option<String> {
    if version.get("deprecated").and_then(Value::as_bool) != Some(true) {
        return None;
    }
    if let Some(w) = version.get("deprecationWarning").and_then(Value::as_str) {
        return Some(w.to_string());
    }
    let name = text(version, "/name");
    let mut text = format!("{group}/{name} {kind} is deprecated");
    let newer = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|v| v.get("served").and_then(Value::as_bool) == Some(true))
        .filter(|v| v.get("deprecated").and_then(Value::as_bool) != Some(true))
        .map(|v| v.get("name").and_then(Value::as_str).unwrap_or(""))
        .filter(|v| compare_kube_aware_versions(v, name) == Ordering::Less)
        .min_by(|a, b| compare_kube_aware_versions(a, b));
    if let Some(newer) = newer {
        text.push_str(&format!("; use {group}/{newer} {kind}"));
    }
    Some(text)
}

/// A version's `subresources.scale` as the paths its Scale view reads and writes.
fn scale_paths(scale: &Value) -> ScalePaths {
    let path = |k: &str| scale.get(k).and_then(Value::as_str).map(pointer_of);
    ScalePaths {
        spec_replicas: path("specReplicasPath").unwrap_or_else(|| "/spec/replicas".into()),
        status_replicas: path("statusReplicasPath").unwrap_or_else(|| "/status/replicas".into()),
        selector: path("labelSelectorPath").map_or(Selector::None, Selector::Text),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn crd() -> Value {
        json!({"metadata": {"name": "widgets.example.com"}, "spec": {"group": "example.com", "scope": "Cluster",
        "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "shortNames": ["wd"],
            "categories": ["all"]},
        "versions": [
            {"name": "v1beta1", "served": true, "storage": false},
            {"name": "v1", "served": true, "storage": true, "subresources": {"status": {}, "scale": {}}},
            {"name": "v1alpha1", "served": false, "storage": false},
        ]}})
    }

    #[test]
    fn deprecated_versions_warn_as_kube_words_it() {
        let crd = json!({"spec": {"group": "tests.example.com", "names": {"plural": "deps", "kind": "Dep"},
        "versions": [
            {"name": "v1alpha1", "served": true, "deprecated": true},
            {"name": "v1alpha2", "served": true, "deprecated": true, "deprecationWarning": "custom deprecation warning"},
            {"name": "v1beta3", "served": true},
            {"name": "v1beta2", "served": true},
            {"name": "v1", "served": false, "storage": true},
        ]}});
        let warnings: Vec<(String, Option<String>)> =
            definitions(&crd, None).into_iter().map(|d| (d.version, d.deprecation)).collect();
        let of = |v: &str| warnings.iter().find(|(n, _)| n == v).unwrap().1.clone();
        assert_eq!(
            of("v1alpha1").as_deref(),
            Some("tests.example.com/v1alpha1 Dep is deprecated; use tests.example.com/v1beta3 Dep")
        );
        assert_eq!(of("v1alpha2").as_deref(), Some("custom deprecation warning"));
        assert_eq!(of("v1beta3"), None);
    }

    #[test]
    fn a_crd_serves_each_served_version_preferred_first_in_one_store() {
        let defs = definitions(&crd(), None);
        let versions: Vec<_> = defs.iter().map(|d| d.version.as_str()).collect();
        assert_eq!(versions, ["v1", "v1beta1"]);
        let v1 = &defs[0];
        assert_eq!((v1.group.as_str(), v1.resource.as_str(), v1.kind.as_str()), ("example.com", "widgets", "Widget"));
        assert!(!v1.namespaced);
        assert_eq!(v1.short_names, ["wd"]);
        assert_eq!(v1.key("/registry", "", "a"), "/registry/example.com/widgets/a");
        assert!(v1.has(Subresource::Status) && v1.has(Subresource::Scale));
        assert!(!defs[1].has(Subresource::Status));
        assert!(defs.iter().all(|d| d.storage_path == "example.com/widgets"));
        assert_eq!(defs[1].stored_as, Some(("example.com".to_string(), "v1".to_string())));
        let stored = defs[1].strategy.to_storage(json!({"apiVersion": "example.com/v1beta1", "kind": "Widget"}));
        assert_eq!(stored.unwrap()["apiVersion"], "example.com/v1");
        let served = defs[1].strategy.to_served(&json!({"apiVersion": "example.com/v1", "kind": "Widget"}));
        assert_eq!(served.unwrap()["apiVersion"], "example.com/v1beta1");
    }
}
