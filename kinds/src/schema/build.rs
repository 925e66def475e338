//! Generation of the definitions: k8s-openapi's `schemars` schemas of every served kind, their
//! lists and the meta types, plus kube's OpenAPI extensions from our tables.
//!
//! The store keeps one canonical form: Swagger-2.0-style `$ref: "#/definitions/<name>"` with
//! siblings (`description`, `x-kubernetes-patch-*`) allowed next to it, which is what kube's
//! `/openapi/v2` serves too. The v3 documents are derived from it (refs rewritten, `$ref`
//! siblings wrapped in `allOf`) by the `openapi` module.

use std::collections::{BTreeMap, HashMap};

use k8s_openapi::api::autoscaling;
use k8s_openapi::apimachinery::pkg::apis::meta::v1 as meta;
use schemars::JsonSchema;
use schemars::generate::{SchemaGenerator, SchemaSettings};
use serde_json::{Map, Value, json};

use super::patch_meta::{ATOMIC_STRUCTS, LIST_TYPES, MAP_TYPES, PATCH_META, PROPERTY_DEFAULTS};
use apimachinery::schema::{DEFINITIONS, Store};

use crate::builtin;

/// The store of built-in definitions, built and installed for the core's schema walkers at
/// first use: generation takes milliseconds but allocates a few MB we do not want to rebuild
/// per request.
pub(crate) fn store() -> &'static Store {
    apimachinery::schema::install_with(build)
}

fn add<T: JsonSchema>(g: &mut SchemaGenerator) -> String {
    g.subschema_for::<T>();
    T::schema_name().into_owned()
}

/// Definition names of the meta types and the `Scale` subresource.
pub(crate) const LIST_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta";
pub(crate) const STATUS: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.Status";
pub(crate) const DELETE_OPTIONS: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions";
pub(crate) const PATCH: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.Patch";
pub(crate) const WATCH_EVENT: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.WatchEvent";
pub(crate) const API_RESOURCE_LIST: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.APIResourceList";
pub(crate) const API_GROUP: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.APIGroup";
pub(crate) const API_GROUP_LIST: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.APIGroupList";
pub(crate) const API_VERSIONS: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.APIVersions";
pub(crate) const SCALE: &str = "io.k8s.api.autoscaling.v1.Scale";

/// The generator settings: Swagger-2.0 style refs, no transforms (we post-process ourselves).
fn generator() -> SchemaGenerator {
    SchemaSettings::draft07()
        .with(|s| {
            s.definitions_path = "#/definitions".into();
            s.meta_schema = None;
            s.transforms = Vec::new();
        })
        .into_generator()
}

fn gvk(group: &str, version: &str, kind: &str) -> Value {
    json!({"group": group, "kind": kind, "version": version})
}

fn build() -> Store {
    let mut g = generator();
    // Every built-in kind's k8s-openapi type, declared in its definition.
    let mut kind_names = Vec::new();
    for d in builtin::resources() {
        if let Some(add_schema) = d.schema {
            kind_names.push((d, add_schema(&mut g)));
        }
    }
    add::<autoscaling::v1::Scale>(&mut g);
    add::<meta::ObjectMeta>(&mut g);
    add::<meta::ListMeta>(&mut g);
    add::<meta::Status>(&mut g);
    add::<meta::DeleteOptions>(&mut g);
    add::<meta::Patch>(&mut g);
    add::<meta::WatchEvent<()>>(&mut g);
    add::<meta::APIResourceList>(&mut g);
    add::<meta::APIGroup>(&mut g);
    add::<meta::APIGroupList>(&mut g);
    add::<meta::APIVersions>(&mut g);
    let mut defs: BTreeMap<String, Value> = g.take_definitions(false).into_iter().collect();

    let mut kinds: HashMap<(String, String, String), String> = HashMap::new();
    let mut set_gvks = |defs: &mut BTreeMap<String, Value>, name: &str, gvks: Vec<(&str, &str, &str)>| {
        let list: Vec<Value> = gvks.iter().map(|(g, v, k)| gvk(g, v, k)).collect();
        if let Some(Value::Object(o)) = defs.get_mut(name) {
            o.insert("x-kubernetes-group-version-kind".into(), Value::Array(list));
        }
        for (g, v, k) in gvks {
            kinds.entry((g.into(), v.into(), k.into())).or_insert_with(|| name.to_string());
        }
    };

    for (k, name) in &kind_names {
        drop_required_metadata(defs.get_mut(name.as_str()));
        set_gvks(&mut defs, name, vec![(&k.group, &k.version, &k.kind)]);
        if !k.verbs().contains(&"list") {
            continue;
        }
        let list_name = format!("{name}List");
        let list_kind = format!("{}List", k.kind);
        let list = list_schema(name, &k.kind, defs.get(name.as_str()));
        defs.insert(list_name.clone(), list);
        set_gvks(&mut defs, &list_name, vec![(&k.group, &k.version, &list_kind)]);
    }

    // The meta kinds every group version serves, listed with each of them as kube does.
    let mut gvs: Vec<(&str, &str)> = Vec::new();
    for d in builtin::resources() {
        if !gvs.contains(&(d.group.as_str(), d.version.as_str())) {
            gvs.push((&d.group, &d.version));
        }
    }
    if !gvs.contains(&("autoscaling", "v1")) {
        gvs.push(("autoscaling", "v1"));
    }
    gvs.sort();
    for (name, kind) in [(DELETE_OPTIONS, "DeleteOptions"), (WATCH_EVENT, "WatchEvent")] {
        set_gvks(&mut defs, name, gvs.iter().map(|(g, v)| (*g, *v, kind)).collect());
    }
    set_gvks(&mut defs, STATUS, vec![("", "v1", "Status")]);
    set_gvks(&mut defs, SCALE, vec![("autoscaling", "v1", "Scale")]);
    drop_required_metadata(defs.get_mut(SCALE));
    for (name, kind) in [
        (API_RESOURCE_LIST, "APIResourceList"),
        (API_GROUP, "APIGroup"),
        (API_GROUP_LIST, "APIGroupList"),
        (API_VERSIONS, "APIVersions"),
    ] {
        set_gvks(&mut defs, name, vec![("", "v1", kind)]);
    }

    apply_tables(&mut defs);
    untype_free_form(&mut defs);
    Store { defs, kinds }
}

/// The apiextensions types that hold any JSON, or one of several shapes (`default`, `enum`,
/// `items`, `additionalProperties` of a JSONSchemaProps): kube publishes them with a
/// description only, since their Go types declare no OpenAPI type. k8s-openapi's schemas give
/// them a type (`JSON` as an object), and kubectl's client-side validation then refuses a
/// CRD whose schema has an integer `default` or a string `enum`.
fn untype_free_form(defs: &mut BTreeMap<String, Value>) {
    const FREE_FORM: [&str; 4] = [
        "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSON",
        "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrArray",
        "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrBool",
        "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrStringArray",
    ];
    for name in FREE_FORM {
        if let Some(Value::Object(o)) = defs.get_mut(name) {
            o.retain(|k, _| k == "description");
        }
    }
}

/// k8s-openapi marks `metadata` required because its Rust field is not optional; kube's schema
/// does not require it (a create without metadata fails validation, not decoding).
fn drop_required_metadata(schema: Option<&mut Value>) {
    let Some(Value::Object(o)) = schema else { return };
    let empty = match o.get_mut("required") {
        Some(Value::Array(req)) => {
            req.retain(|r| r != "metadata");
            req.is_empty()
        }
        _ => false,
    };
    if empty {
        o.remove("required");
    }
}

/// The `<Kind>List` definition kube publishes beside each kind (k8s-openapi's `List<T>` has no
/// schema of its own).
fn list_schema(item_def: &str, kind: &str, item: Option<&Value>) -> Value {
    let prop = |p: &str| item.and_then(|i| i.pointer(&format!("/properties/{p}"))).cloned();
    let mut props = Map::new();
    if let Some(v) = prop("apiVersion") {
        props.insert("apiVersion".into(), v);
    }
    props.insert(
        "items".into(),
        json!({
            "description": format!("Items is the list of {kind} objects."),
            "type": "array",
            "items": {"$ref": format!("{DEFINITIONS}{item_def}")},
        }),
    );
    if let Some(v) = prop("kind") {
        props.insert("kind".into(), v);
    }
    props.insert(
        "metadata".into(),
        json!({
            "$ref": format!("{DEFINITIONS}{LIST_META}"),
            "description": "Standard list metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds",
        }),
    );
    json!({
        "description": format!("{kind}List is a list of {kind} objects."),
        "type": "object",
        "properties": props,
        "required": ["items"],
    })
}

/// Writes the strategic-merge and list-type tables onto the property schemas. A table row
/// naming a missing definition or property is a bug in the table: the unit tests check every
/// row lands.
fn apply_tables(defs: &mut BTreeMap<String, Value>) {
    for row in PATCH_META {
        let Some(p) = property_mut(defs, row.definition, row.property) else { continue };
        if let Some(s) = row.strategy {
            p.insert("x-kubernetes-patch-strategy".into(), s.into());
        }
        if let Some(k) = row.merge_key {
            p.insert("x-kubernetes-patch-merge-key".into(), k.into());
        }
    }
    for row in LIST_TYPES {
        let Some(p) = property_mut(defs, row.definition, row.property) else { continue };
        p.insert("x-kubernetes-list-type".into(), row.list_type.into());
        if !row.map_keys.is_empty() {
            p.insert("x-kubernetes-list-map-keys".into(), row.map_keys.iter().map(|k| Value::from(*k)).collect());
        }
    }
    for (definition, property, map_type) in MAP_TYPES {
        if let Some(p) = property_mut(defs, definition, property) {
            p.insert("x-kubernetes-map-type".into(), (*map_type).into());
        }
    }
    for (definition, property, default) in PROPERTY_DEFAULTS {
        if let Some(p) = property_mut(defs, definition, property) {
            p.insert("default".into(), (*default).into());
        }
    }
    for definition in ATOMIC_STRUCTS {
        if let Some(Value::Object(d)) = defs.get_mut(*definition) {
            d.insert("x-kubernetes-map-type".into(), "atomic".into());
        }
    }
}

fn property_mut<'a>(
    defs: &'a mut BTreeMap<String, Value>,
    definition: &str,
    property: &str,
) -> Option<&'a mut Map<String, Value>> {
    defs.get_mut(definition)?.get_mut("properties")?.get_mut(property)?.as_object_mut()
}
