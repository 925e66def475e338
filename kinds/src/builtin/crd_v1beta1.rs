//! CustomResourceDefinitions between `v1`, which this server serves and holds, and `v1beta1`,
//! the version kube-apiserver writes them to etcd in (its smaller form: what all versions
//! share is written once, at the top of the spec). Both directions go as kube's through its
//! internal version: `v1` to `v1beta1` hoists the schema, subresources, printer columns and
//! selectable fields that every version has alike; `v1beta1` to `v1` gives them back to every
//! version, with `v1beta1`'s defaults applied as kube's decoding applies them.

use serde_json::{Map, Value, json};

/// The version kube writes CRDs to etcd in.
pub(super) const V1BETA1: &str = "apiextensions.k8s.io/v1beta1";

/// The version-specific fields `v1beta1` can hold once for all versions, with their
/// `v1beta1` names at the top of the spec.
const SHARED: [(&str, &str); 4] = [
    ("subresources", "subresources"),
    ("schema", "validation"),
    ("additionalPrinterColumns", "additionalPrinterColumns"),
    ("selectableFields", "selectableFields"),
];

/// A `v1` CRD in `v1beta1`.
pub(super) fn to_v1beta1(crd: &Value) -> Value {
    let mut out = crd.clone();
    out["apiVersion"] = json!(V1BETA1);
    let Some(spec) = out.get_mut("spec").and_then(Value::as_object_mut) else { return out };
    let preserve = spec.get("preserveUnknownFields").and_then(Value::as_bool).unwrap_or(false);
    spec.insert("preserveUnknownFields".into(), json!(preserve));
    if let Some(conversion) = spec.get_mut("conversion").and_then(Value::as_object_mut)
        && let Some(webhook) = conversion.remove("webhook")
    {
        if let Some(config) = webhook.get("clientConfig") {
            conversion.insert("webhookClientConfig".into(), config.clone());
        }
        if let Some(versions) = webhook.get("conversionReviewVersions") {
            conversion.insert("conversionReviewVersions".into(), versions.clone());
        }
    }
    let Some(versions) = spec.get_mut("versions").and_then(Value::as_array_mut) else { return out };
    for v in versions.iter_mut() {
        if let Some(columns) = v.get_mut("additionalPrinterColumns").and_then(Value::as_array_mut) {
            columns.iter_mut().for_each(|c| rename(c, "jsonPath", "JSONPath"));
        }
    }
    let first = versions.first().and_then(|v| v.get("name")).cloned();
    let mut hoisted = Map::new();
    for (field, top) in SHARED {
        let shared = versions.first().and_then(|v| v.get(field)).cloned();
        if versions.iter().all(|v| v.get(field) == shared.as_ref()) {
            versions.iter_mut().filter_map(Value::as_object_mut).for_each(|v| {
                v.remove(field);
            });
            if let Some(shared) = shared {
                hoisted.insert(top.into(), shared);
            }
        }
    }
    if let Some(first) = first {
        spec.insert("version".into(), first);
    }
    spec.extend(hoisted);
    out
}

/// A `v1beta1` CRD (or one already in `v1`, returned as it is) in `v1`.
pub(super) fn to_v1(mut crd: Value) -> Value {
    if crd.get("apiVersion").and_then(Value::as_str) != Some(V1BETA1) {
        return crd;
    }
    crd["apiVersion"] = json!("apiextensions.k8s.io/v1");
    let Some(spec) = crd.get_mut("spec").and_then(Value::as_object_mut) else { return crd };
    // v1beta1's default (true), which kube's decoding from storage applies; v1 omits false.
    match spec.get("preserveUnknownFields").and_then(Value::as_bool) {
        Some(false) => {
            spec.remove("preserveUnknownFields");
        }
        _ => {
            spec.insert("preserveUnknownFields".into(), json!(true));
        }
    }
    let version = spec.remove("version");
    let empty = spec.get("versions").and_then(Value::as_array).is_none_or(Vec::is_empty);
    if empty && let Some(name) = version.filter(|v| v.as_str().is_some_and(|s| !s.is_empty())) {
        spec.insert("versions".into(), json!([{"name": name, "served": true, "storage": true}]));
    }
    if let Some(conversion) = spec.get_mut("conversion").and_then(Value::as_object_mut) {
        let config = conversion.remove("webhookClientConfig");
        let mut review = conversion.remove("conversionReviewVersions");
        // v1beta1's default for a webhook that names no review versions.
        let listed = review.as_ref().and_then(Value::as_array).is_some_and(|v| !v.is_empty());
        if conversion.get("strategy").and_then(Value::as_str) == Some("Webhook") && !listed {
            review = Some(json!(["v1beta1"]));
        }
        if config.is_some() || review.is_some() {
            let mut webhook = Map::new();
            if let Some(config) = config {
                webhook.insert("clientConfig".into(), config);
            }
            if let Some(review) = review {
                webhook.insert("conversionReviewVersions".into(), review);
            }
            conversion.insert("webhook".into(), Value::Object(webhook));
        }
    }
    let hoisted: Vec<(&str, Value)> =
        SHARED.iter().filter_map(|(field, top)| spec.remove(*top).map(|shared| (*field, shared))).collect();
    if let Some(versions) = spec.get_mut("versions").and_then(Value::as_array_mut) {
        for v in versions.iter_mut().filter_map(Value::as_object_mut) {
            for (field, shared) in &hoisted {
                v.insert(field.to_string(), shared.clone());
            }
            if let Some(columns) = v.get_mut("additionalPrinterColumns").and_then(Value::as_array_mut) {
                columns.iter_mut().for_each(|c| rename(c, "JSONPath", "jsonPath"));
            }
        }
    }
    crd
}

fn rename(obj: &mut Value, from: &str, to: &str) {
    if let Some(map) = obj.as_object_mut()
        && let Some(v) = map.remove(from)
    {
        map.insert(to.into(), v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crd(versions: Value) -> Value {
        json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                     "names": {"plural": "widgets", "kind": "Widget"}, "versions": versions},
        })
    }

    #[test]
    fn what_every_version_shares_is_written_once_and_given_back_to_each() {
        let schema = json!({"openAPIV3Schema": {"type": "object"}});
        let columns = json!([{"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}]);
        let v1 = crd(json!([
            {"name": "v1", "served": true, "storage": true, "schema": schema, "additionalPrinterColumns": columns,
             "subresources": {"status": {}}},
            {"name": "v2", "served": true, "storage": false, "schema": schema, "additionalPrinterColumns": columns},
        ]));
        let beta = to_v1beta1(&v1);
        let spec = &beta["spec"];
        assert_eq!(beta["apiVersion"], "apiextensions.k8s.io/v1beta1");
        assert_eq!((&spec["version"], &spec["validation"]), (&json!("v1"), &schema));
        assert_eq!(spec["additionalPrinterColumns"][0]["JSONPath"], ".metadata.creationTimestamp");
        // Subresources differ between the versions: each keeps its own.
        assert!(spec.get("subresources").is_none());
        assert_eq!(spec["versions"][0]["subresources"], json!({"status": {}}));
        assert!(spec["versions"][1].get("schema").is_none());
        assert_eq!(to_v1(beta), v1);
    }

    #[test]
    fn conversion_webhooks_move_and_come_back() {
        let mut v1 = crd(json!([{"name": "v1", "served": true, "storage": true}]));
        v1["spec"]["conversion"] = json!({"strategy": "Webhook", "webhook": {
            "clientConfig": {"url": "https://x.example/convert"}, "conversionReviewVersions": ["v1"]}});
        let beta = to_v1beta1(&v1);
        assert_eq!(
            beta["spec"]["conversion"],
            json!({"strategy": "Webhook", "webhookClientConfig": {"url": "https://x.example/convert"},
                   "conversionReviewVersions": ["v1"]})
        );
        assert_eq!(to_v1(beta.clone()), v1);
        // A webhook naming no review versions gets v1beta1's default.
        let mut bare = beta;
        bare["spec"]["conversion"].as_object_mut().unwrap().remove("conversionReviewVersions");
        assert_eq!(to_v1(bare)["spec"]["conversion"]["webhook"]["conversionReviewVersions"], json!(["v1beta1"]));
    }

    #[test]
    fn a_v1beta1_crd_of_one_version_reads_with_its_defaults() {
        let beta = json!({"apiVersion": "apiextensions.k8s.io/v1beta1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "a.example.com"},
            "spec": {"group": "example.com", "version": "v1", "names": {"plural": "a", "kind": "A"}}});
        let v1 = to_v1(beta);
        assert_eq!(v1["spec"]["versions"], json!([{"name": "v1", "served": true, "storage": true}]));
        assert_eq!(v1["spec"]["preserveUnknownFields"], true);
        // An object already in v1 is left alone.
        assert_eq!(to_v1(v1.clone()), v1);
    }
}
