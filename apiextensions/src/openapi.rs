//! A CRD's versions in the OpenAPI documents, shaped as kube's CRD OpenAPI builder shapes them
//! (apiextensions-apiserver's `controller/openapi/builder`): so `kubectl explain` walks a
//! custom resource's fields, and `kubectl create --validate=strict` finds the `fieldValidation`
//! parameter on its PATCH operation and leaves unknown fields to the server.
//!
//! Each served version gets two definitions, named after the reversed group
//! (`example.com/v1` `Widget` → `com.example.v1.Widget` and `com.example.v1.WidgetList`). The
//! kind's is the version's structural schema with `metadata` replaced by `ObjectMeta`,
//! `apiVersion` and `kind` described, embedded resources completed, and
//! `x-kubernetes-int-or-string` unfolded into its `anyOf`. The v3 form keeps everything else; the
//! v2 form drops what Swagger 2.0 cannot say, as kube's v2 conversion does: defaults,
//! `allOf`/`anyOf`/`oneOf`/`not`, nullable nodes' types, preserved-unknown nodes' contents.

use apimachinery::catalogue::ResourceDef;
use kinds::schema::{CustomDocuments, CustomResourceDoc};
use serde_json::{Value, json};

const OBJECT_META: &str = "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";
const LIST_META: &str = "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta";
const CONVENTIONS: &str = "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md";
/// Keywords a structural schema cannot hold: kube's conversion drops them.
const NOT_STRUCTURAL: [&str; 9] = [
    "example",
    "externalDocs",
    "id",
    "$schema",
    "$ref",
    "definitions",
    "dependencies",
    "additionalItems",
    "patternProperties",
];

/// One served version of a CRD, as the documents need it.
pub struct ServedVersion<'a> {
    /// The CRD.
    pub crd: &'a Value,
    /// The catalogue entry serving the version.
    pub def: &'a ResourceDef,
}

/// `example.com`, `v1`, `Widget` → `com.example.v1.Widget` (kube's friendly definition name).
pub fn definition_name(group: &str, version: &str, kind: &str) -> String {
    let mut parts: Vec<&str> = group.split('.').filter(|p| !p.is_empty()).collect();
    parts.reverse();
    parts.push(version);
    parts.push(kind);
    parts.join(".")
}

/// The documents of one group version, from every served CRD version in it (all of one group
/// and version).
pub fn documents(versions: &[ServedVersion<'_>]) -> CustomDocuments {
    let mut resources = Vec::new();
    let mut v3 = Vec::new();
    let mut v2 = Vec::new();
    for ServedVersion { crd, def } in versions {
        let kind_definition = definition_name(&def.group, &def.version, &def.kind);
        let list_definition = format!("{kind_definition}List");
        let list_kind = crd
            .pointer("/status/acceptedNames/listKind")
            .or_else(|| crd.pointer("/spec/names/listKind"))
            .and_then(Value::as_str)
            .filter(|k| !k.is_empty())
            .map_or_else(|| format!("{}List", def.kind), str::to_string);
        let schema = version_schema(crd, &def.version);
        let preserve_all = crd.pointer("/spec/preserveUnknownFields").and_then(Value::as_bool) == Some(true)
            || schema.as_ref().is_some_and(preserves_unknown);
        let gvk = |kind: &str| json!([{"group": def.group, "kind": kind, "version": def.version}]);
        let mut kind_v3 = kind_schema(schema.clone());
        kind_v3["x-kubernetes-group-version-kind"] = gvk(&def.kind);
        let mut kind_v2 = if preserve_all { json!({"type": "object"}) } else { to_v2(kind_schema(schema)) };
        kind_v2["x-kubernetes-group-version-kind"] = gvk(&def.kind);
        let mut list = list_schema(def, &kind_definition);
        list["x-kubernetes-group-version-kind"] = gvk(&list_kind);
        v3.push((kind_definition.clone(), kind_v3));
        v3.push((list_definition.clone(), list.clone()));
        v2.push((kind_definition.clone(), kind_v2));
        v2.push((list_definition.clone(), list));
        resources.push(CustomResourceDoc { def, kind_definition, list_definition });
    }
    let (group, version) = versions.first().map_or(("", ""), |v| (v.def.group.as_str(), v.def.version.as_str()));
    CustomDocuments::build(group, version, &resources, &v3, &v2)
}

/// The `openAPIV3Schema` of one version.
fn version_schema(crd: &Value, version: &str) -> Option<Value> {
    crd.pointer("/spec/versions")?
        .as_array()?
        .iter()
        .find(|v| v.get("name").and_then(Value::as_str) == Some(version))?
        .pointer("/schema/openAPIV3Schema")
        .cloned()
}

fn preserves_unknown(s: &Value) -> bool {
    s.get("x-kubernetes-preserve-unknown-fields").and_then(Value::as_bool) == Some(true)
}

fn type_meta(name: &str) -> Value {
    let description = match name {
        "apiVersion" => format!(
            "APIVersion defines the versioned schema of this representation of an object. Servers should convert \
             recognized schemas to the latest internal value, and may reject unrecognized values. More info: \
             {CONVENTIONS}#resources"
        ),
        _ => format!(
            "Kind is a string value representing the REST resource this object represents. Servers may infer this \
             from the endpoint the client submits requests to. Cannot be updated. In CamelCase. More info: \
             {CONVENTIONS}#types-kinds"
        ),
    };
    json!({"type": "string", "description": description})
}

/// The kind's definition (v3 form): the structural schema completed as kube completes it.
fn kind_schema(schema: Option<Value>) -> Value {
    let mut s = schema.filter(Value::is_object).unwrap_or_else(|| json!({"type": "object"}));
    complete(&mut s);
    if s.get("type").is_none() {
        s["type"] = "object".into();
    }
    let props = s.as_object_mut().expect("an object").entry("properties").or_insert_with(|| json!({}));
    if let Some(props) = props.as_object_mut() {
        props.insert(
            "metadata".into(),
            json!({"$ref": OBJECT_META, "description": format!("Standard object's metadata. More info: {CONVENTIONS}#metadata")}),
        );
        props.insert("apiVersion".into(), type_meta("apiVersion"));
        props.insert("kind".into(), type_meta("kind"));
    }
    s
}

/// kube's `Unfold` and embedded-resource completion, and the non-structural keywords dropped,
/// at every node.
fn complete(s: &mut Value) {
    let Some(o) = s.as_object_mut() else { return };
    for k in NOT_STRUCTURAL {
        o.remove(k);
    }
    if o.get("x-kubernetes-int-or-string").and_then(Value::as_bool) == Some(true) {
        let pattern = json!([{"type": "integer"}, {"type": "string"}]);
        let has = o.get("anyOf") == Some(&pattern)
            || o.get("allOf").and_then(|a| a.get(0)).and_then(|a| a.get("anyOf")) == Some(&pattern);
        if !has {
            if o.contains_key("anyOf") {
                let mut all = vec![json!({"anyOf": pattern})];
                if let Some(Value::Array(existing)) = o.remove("allOf") {
                    all.extend(existing);
                }
                o.insert("allOf".into(), Value::Array(all));
            } else {
                o.insert("anyOf".into(), pattern);
            }
        }
    }
    if o.get("x-kubernetes-embedded-resource").and_then(Value::as_bool) == Some(true) {
        let props = o.entry("properties").or_insert_with(|| json!({}));
        if let Some(props) = props.as_object_mut() {
            props.insert("apiVersion".into(), json!({"type": "string", "description": format!("apiVersion defines the versioned schema of this representation of an object. More info: {CONVENTIONS}#resources")}));
            props.insert("kind".into(), json!({"type": "string", "description": format!("kind is a string value representing the type of this object. In CamelCase. More info: {CONVENTIONS}#types-kinds")}));
            props.insert("metadata".into(), json!({"$ref": OBJECT_META}));
        }
        let required = o.entry("required").or_insert_with(|| json!([]));
        if let Some(r) = required.as_array_mut() {
            for k in ["kind", "apiVersion"] {
                if !r.iter().any(|x| x == k) {
                    r.push(k.into());
                }
            }
        }
    }
    for key in ["items", "additionalProperties", "not"] {
        if let Some(child) = o.get_mut(key) {
            complete(child);
        }
    }
    for key in ["properties"] {
        if let Some(Value::Object(m)) = o.get_mut(key) {
            m.values_mut().for_each(complete);
        }
    }
    for key in ["allOf", "anyOf", "oneOf"] {
        if let Some(Value::Array(a)) = o.get_mut(key) {
            a.iter_mut().for_each(complete);
        }
    }
}

/// The v2 form: what Swagger 2.0 cannot hold dropped (kube's `openapi/v2/conversion.go`, and
/// defaults pruned as its v2 controller prunes them).
fn to_v2(mut s: Value) -> Value {
    fn walk(s: &mut Value) -> bool {
        let Some(o) = s.as_object_mut() else { return false };
        o.remove("default");
        for k in ["allOf", "anyOf", "oneOf", "not"] {
            o.remove(k);
        }
        let nullable = o.remove("nullable").and_then(|v| v.as_bool()) == Some(true);
        if nullable {
            o.remove("type");
            o.remove("items");
            o.remove("properties");
        }
        if o.get("x-kubernetes-preserve-unknown-fields").and_then(Value::as_bool) == Some(true) {
            o.remove("properties");
            let had_items = o.remove("items").is_some();
            if matches!(o.get("type").and_then(Value::as_str), Some("object")) || (had_items && o.get("type").is_some())
            {
                o.remove("type");
            }
        }
        if let Some(child) = o.get_mut("items") {
            walk(child);
        }
        if let Some(child) = o.get_mut("additionalProperties")
            && walk(child)
        {
            o.remove("required");
        }
        let mut nullable_props = Vec::new();
        if let Some(Value::Object(props)) = o.get_mut("properties") {
            for (name, p) in props.iter_mut() {
                if walk(p) {
                    nullable_props.push(name.clone());
                }
            }
        }
        if let Some(Value::Array(required)) = o.get_mut("required") {
            required.retain(|r| !r.as_str().is_some_and(|r| nullable_props.iter().any(|n| n == r)));
            if required.is_empty() {
                o.remove("required");
            }
        }
        nullable
    }
    walk(&mut s);
    s
}

fn list_schema(def: &ResourceDef, kind_definition: &str) -> Value {
    json!({
        "type": "object",
        "description": format!("{}List is a list of {}", def.kind, def.kind),
        "required": ["items"],
        "properties": {
            "apiVersion": type_meta("apiVersion"),
            "kind": type_meta("kind"),
            "items": {
                "type": "array",
                "description": format!("List of {}. More info: {CONVENTIONS}", def.resource),
                "items": {"$ref": format!("#/definitions/{kind_definition}")},
            },
            "metadata": {
                "$ref": LIST_META,
                "description": format!("Standard list metadata. More info: {CONVENTIONS}#types-kinds"),
            },
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Map;

    use crate::served;

    fn crd() -> Value {
        json!({"metadata": {"name": "widgets.example.com"}, "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
            "versions": [{"name": "v1", "served": true, "storage": true, "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "required": ["size", "note"], "properties": {
                        "size": {"type": "integer", "default": 1, "description": "How big."},
                        "port": {"x-kubernetes-int-or-string": true},
                        "note": {"type": "string", "nullable": true},
                        "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true,
                            "properties": {"a": {"type": "string"}}},
                        "child": {"type": "object", "x-kubernetes-embedded-resource": true,
                            "x-kubernetes-preserve-unknown-fields": true}}},
                    "status": {"type": "object"}}}}}]}})
    }

    fn docs() -> (Value, Value) {
        let crd = crd();
        let defs = served::definitions(&crd, None);
        let d = documents(&[ServedVersion { crd: &crd, def: &defs[0] }]);
        let v3: Value = serde_json::from_slice(&d.v3).unwrap();
        let v2: Map<String, Value> =
            d.v2_definitions.iter().map(|(k, v)| (k.clone(), serde_json::from_str(v).unwrap())).collect();
        (v3, Value::Object(v2))
    }

    #[test]
    fn definitions_are_named_after_the_reversed_group() {
        assert_eq!(definition_name("example.com", "v1", "Widget"), "com.example.v1.Widget");
        assert_eq!(definition_name("stable.example.com", "v1beta1", "CronTab"), "com.example.stable.v1beta1.CronTab");
    }

    #[test]
    fn the_v3_document_has_kubectls_operations_and_the_completed_schema() {
        let (v3, _) = docs();
        let patch = &v3["paths"]["/apis/example.com/v1/namespaces/{namespace}/widgets/{name}"]["patch"];
        assert_eq!(
            patch["x-kubernetes-group-version-kind"],
            json!({"group": "example.com", "kind": "Widget", "version": "v1"})
        );
        assert!(patch["parameters"].as_array().unwrap().iter().any(|p| p["name"] == "fieldValidation"));
        let content = patch["requestBody"]["content"].as_object().unwrap();
        assert!(!content.contains_key("application/strategic-merge-patch+json"));
        assert!(v3["paths"]["/apis/example.com/v1/namespaces/{namespace}/widgets/{name}/status"]["get"].is_object());
        let w = &v3["components"]["schemas"]["com.example.v1.Widget"];
        assert_eq!(
            w["x-kubernetes-group-version-kind"],
            json!([{"group": "example.com", "kind": "Widget", "version": "v1"}])
        );
        assert_eq!(
            w["properties"]["metadata"]["allOf"][0]["$ref"],
            "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
        );
        let spec = &w["properties"]["spec"]["properties"];
        assert_eq!(spec["size"]["default"], 1, "v3 keeps defaults");
        assert_eq!(spec["port"]["anyOf"], json!([{"type": "integer"}, {"type": "string"}]));
        assert_eq!(spec["child"]["required"], json!(["kind", "apiVersion"]));
        let schemas = v3["components"]["schemas"].as_object().unwrap();
        assert!(schemas.contains_key("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"));
        assert!(schemas.contains_key("io.k8s.apimachinery.pkg.apis.meta.v1.Status"));
        let list = &schemas["com.example.v1.WidgetList"];
        assert_eq!(list["properties"]["items"]["items"]["$ref"], "#/components/schemas/com.example.v1.Widget");
        assert_eq!(list["x-kubernetes-group-version-kind"][0]["kind"], "WidgetList");
    }

    #[test]
    fn the_v2_form_drops_what_swagger_2_cannot_say() {
        let (_, v2) = docs();
        let spec = &v2["com.example.v1.Widget"]["properties"]["spec"];
        assert!(spec["properties"]["size"].get("default").is_none());
        assert!(spec["properties"]["port"].get("anyOf").is_none());
        assert!(spec["properties"]["note"].as_object().unwrap().is_empty(), "a nullable node loses its type");
        assert_eq!(spec["required"], json!(["size"]), "a nullable field is no longer required");
        let free = spec["properties"]["free"].as_object().unwrap();
        assert!(!free.contains_key("properties") && !free.contains_key("type"));
        assert_eq!(v2["com.example.v1.Widget"]["properties"]["metadata"]["$ref"], OBJECT_META);
    }
}
