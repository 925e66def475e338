//! Walking objects in step with their OpenAPI schema, and pruning by it.
//!
//! kube-apiserver decodes every request body into Go structs: the struct tags are the schema,
//! and unknown fields are dropped (or reported under `fieldValidation`). We have no Go structs,
//! so the schema is data: a [`Store`] of definitions, built by the `kinds` crate from
//! k8s-openapi's `schemars` output and installed here once ([`install_with`]).
//!
//! # Layout
//! - this module: the [`Node`] navigation API other modules (strategic merge patch, managed
//!   fields, pruning) walk objects with, and [`kind_node`].
//! - `store`: the installed definitions and `$ref` resolution.
//! - `fields`: pruning and strict field validation ([`check_fields`]).

mod fields;
mod plan;
mod store;

use std::sync::LazyLock;

use serde_json::Value;

pub use fields::{FieldReport, body_keys, cannot_be_handled, check_fields, duplicate_fields, repeats_a_key};
pub use store::{DEFINITIONS, Store, definition, definition_names, install_with, kind_definition_name, store};

/// The schema accepting anything, returned for `additionalProperties: true` and for
/// preserve-unknown-fields nodes so walkers need no special case.
static ANY: LazyLock<Value> = LazyLock::new(|| Value::Object(Default::default()));

/// A position in a kind's schema: walk it in step with an object or a patch.
///
/// A node keeps two views: the schema as written where it was reached (a property carrying its
/// own `description` and `x-kubernetes-patch-*` extensions next to a `$ref`), and the resolved
/// schema behind `$ref` / `allOf: [{$ref}]` used to walk further. Accessors look at the former
/// first, so a property's extensions stay visible after resolution.
#[derive(Clone, Copy, Debug)]
pub struct Node<'a> {
    /// The schema as written at this position (may be a bare `$ref` with siblings).
    own: &'a Value,
    /// `own` with `$ref` / single-`allOf` wrappers resolved.
    schema: &'a Value,
}

impl<'a> Node<'a> {
    fn at(own: &'a Value) -> Node<'a> {
        Node { own, schema: store::resolve(own) }
    }

    /// The root of a schema held elsewhere (a custom resource's): its `$ref`s resolve to the
    /// built-in definitions (`ObjectMeta`).
    pub fn root(schema: &'a Value) -> Node<'a> {
        Node::at(schema)
    }

    /// The schema of property `name` of this object node (`$ref`/`allOf` resolved for further
    /// walking; the returned node still carries the property's own extensions).
    pub fn property(&self, name: &str) -> Option<Node<'a>> {
        self.schema.get("properties")?.get(name).map(Node::at)
    }

    /// The schema of the items of this array node.
    pub fn items(&self) -> Option<Node<'a>> {
        self.schema.get("items").map(Node::at)
    }

    /// The schema of the values of this map node (`additionalProperties`); `true` yields a node
    /// accepting anything.
    pub fn additional_properties(&self) -> Option<Node<'a>> {
        match self.schema.get("additionalProperties")? {
            Value::Bool(false) => None,
            Value::Bool(true) => Some(Node { own: &ANY, schema: &ANY }),
            v => Some(Node::at(v)),
        }
    }

    /// An extension (or any keyword) of this node: the schema as written first, then the
    /// resolved definition.
    pub fn extension(&self, name: &str) -> Option<&'a Value> {
        self.own.get(name).or_else(|| self.schema.get(name))
    }

    /// `x-kubernetes-patch-strategy` of this field: `merge`, `retainKeys`, `merge,retainKeys`,
    /// `replace`, or `None`.
    pub fn patch_strategy(&self) -> Option<&'a str> {
        self.extension("x-kubernetes-patch-strategy").and_then(Value::as_str)
    }

    /// `x-kubernetes-patch-merge-key` of this list field.
    pub fn patch_merge_key(&self) -> Option<&'a str> {
        self.extension("x-kubernetes-patch-merge-key").and_then(Value::as_str)
    }

    /// `x-kubernetes-list-type` (`atomic`, `set`, `map`) where kube declares one.
    pub fn list_type(&self) -> Option<&'a str> {
        self.extension("x-kubernetes-list-type").and_then(Value::as_str)
    }

    /// `x-kubernetes-list-map-keys` of a `map` list.
    pub fn list_map_keys(&self) -> Vec<&'a str> {
        self.extension("x-kubernetes-list-map-keys")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default()
    }

    /// The OpenAPI `type` (`object`, `array`, `string`, `integer`, `number`, `boolean`), if
    /// declared.
    pub fn type_name(&self) -> Option<&'a str> {
        self.extension("type").and_then(Value::as_str)
    }

    /// The OpenAPI `format` (`int32`, `date-time`, `byte`...), if declared.
    pub fn format(&self) -> Option<&'a str> {
        self.extension("format").and_then(Value::as_str)
    }

    /// The field's description (the property's own text before the definition's).
    pub fn description(&self) -> Option<&'a str> {
        self.extension("description").and_then(Value::as_str)
    }

    /// Whether the node holds an integer or a string (`IntOrString`, `Quantity`).
    pub fn is_int_or_string(&self) -> bool {
        self.extension("x-kubernetes-int-or-string").and_then(Value::as_bool).unwrap_or(false)
    }

    /// Whether anything goes below this node (`RawExtension`, `FieldsV1`, a map of unknown
    /// shape): kube keeps such content as raw JSON and never prunes it.
    pub fn preserves_unknown_fields(&self) -> bool {
        if self.extension("x-kubernetes-preserve-unknown-fields").and_then(Value::as_bool).unwrap_or(false) {
            return true;
        }
        self.type_name() == Some("object")
            && self.schema.get("properties").is_none()
            && self.schema.get("additionalProperties").is_none()
    }

    /// The schema (the definition a `$ref` points to, resolved). Use [`Node::own`] for the
    /// schema as written at this position.
    pub fn raw(&self) -> &'a Value {
        self.schema
    }

    /// The schema as written at this position, before `$ref` resolution (a property's
    /// description and extensions live here).
    pub fn own(&self) -> &'a Value {
        self.own
    }

    /// The definition name this node resolved to (`io.k8s.api.core.v1.Container`), if reached
    /// through a `$ref`.
    pub fn definition_name(&self) -> Option<&'a str> {
        store::ref_target(self.own)
    }
}

/// The root schema node of a served kind (and of its `<Kind>List`, `Scale`, `Status`,
/// `DeleteOptions`, and the other meta kinds carrying a group-version-kind).
pub fn kind_node(group: &str, version: &str, kind: &str) -> Option<Node<'static>> {
    let name = kind_definition_name(group, version, kind)?;
    definition(name).map(|schema| Node { own: schema, schema })
}

/// The root node of a definition by name (`io.k8s.api.core.v1.PodSpec`).
pub fn definition_node(name: &str) -> Option<Node<'static>> {
    definition(name).map(|schema| Node { own: schema, schema })
}
