//! Read access to one node of a `JSONSchemaProps` held as JSON.
//!
//! The schema arrives as the CRD carries it (`openAPIV3Schema`); a missing or non-object node
//! is treated as absent. Only the keywords the structural algorithms use are read here.

use serde_json::{Map, Value};

/// One schema node (a JSON object).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Node<'a>(pub(crate) &'a Map<String, Value>);

/// `additionalProperties` as kube's `StructuralOrBool` sees it.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Additional<'a> {
    /// Not set.
    Absent,
    /// `true` or `false` without a schema.
    Bool(bool),
    /// A schema (allowing).
    Schema(Node<'a>),
}

impl<'a> Node<'a> {
    /// The node at `v`, if it is a schema object.
    pub(crate) fn of(v: &'a Value) -> Option<Node<'a>> {
        v.as_object().map(Node)
    }

    pub(crate) fn get(&self, key: &str) -> Option<&'a Value> {
        self.0.get(key).filter(|v| !v.is_null())
    }

    fn flag(&self, key: &str) -> bool {
        self.get(key).and_then(Value::as_bool).unwrap_or(false)
    }

    pub(crate) fn str(&self, key: &str) -> Option<&'a str> {
        self.get(key).and_then(Value::as_str)
    }

    /// `type` as kube-openapi's `StringOrArray`: `x-kubernetes-int-or-string` becomes
    /// `["integer", "string"]` (apiextensions' conversion to `spec.Schema` does this).
    pub(crate) fn types(&self) -> Vec<&'a str> {
        if self.int_or_string() {
            return vec!["integer", "string"];
        }
        match self.get("type") {
            Some(Value::String(t)) if !t.is_empty() => vec![t.as_str()],
            Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        }
    }

    pub(crate) fn nullable(&self) -> bool {
        self.flag("nullable")
    }

    pub(crate) fn int_or_string(&self) -> bool {
        self.flag("x-kubernetes-int-or-string")
    }

    pub(crate) fn preserve_unknown_fields(&self) -> bool {
        self.flag("x-kubernetes-preserve-unknown-fields")
    }

    pub(crate) fn embedded_resource(&self) -> bool {
        self.flag("x-kubernetes-embedded-resource")
    }

    /// `default`; a JSON `null` default counts as none (kube's `Default.Object == nil`).
    pub(crate) fn default(&self) -> Option<&'a Value> {
        self.get("default")
    }

    pub(crate) fn properties(&self) -> Option<&'a Map<String, Value>> {
        self.get("properties").and_then(Value::as_object)
    }

    pub(crate) fn property(&self, name: &str) -> Option<Node<'a>> {
        self.properties().and_then(|p| p.get(name)).and_then(Node::of)
    }

    /// `items` when it is a single schema (structural schemas allow no other form).
    pub(crate) fn items(&self) -> Option<Node<'a>> {
        self.get("items").and_then(Node::of)
    }

    pub(crate) fn additional(&self) -> Additional<'a> {
        match self.get("additionalProperties") {
            None => Additional::Absent,
            Some(Value::Bool(b)) => Additional::Bool(*b),
            Some(v) => Node::of(v).map(Additional::Schema).unwrap_or(Additional::Absent),
        }
    }

    /// The schema a map value is pruned, defaulted and walked with (`None` for a bare
    /// `additionalProperties: true|false`).
    pub(crate) fn additional_schema(&self) -> Option<Node<'a>> {
        match self.additional() {
            Additional::Schema(s) => Some(s),
            _ => None,
        }
    }

    pub(crate) fn list(&self, key: &str) -> Vec<Node<'a>> {
        self.get(key).and_then(Value::as_array).map(|a| a.iter().filter_map(Node::of).collect()).unwrap_or_default()
    }

    pub(crate) fn f64(&self, key: &str) -> Option<f64> {
        self.get(key).and_then(Value::as_f64)
    }

    /// An integer keyword (`maxLength`, `minItems`, ...).
    pub(crate) fn i64(&self, key: &str) -> Option<i64> {
        self.get(key).and_then(|v| v.as_i64().or_else(|| v.as_f64().map(|f| f as i64)))
    }
}

/// The schema for `key` of an object under `s`: its property, else the
/// `additionalProperties` schema (kube's `getSchemaForField`).
pub(crate) fn field_schema<'a>(s: Option<Node<'a>>, key: &str) -> Option<Node<'a>> {
    let s = s?;
    s.property(key).or_else(|| s.additional_schema())
}
