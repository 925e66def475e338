//! The built-in definitions compiled for [`super::check_fields`]: each node's shape decided
//! once, a struct's properties in a sorted table, so a request's walk does no lookup in the
//! schema's JSON (a property, then its `$ref`, `type`, `format` and extensions, each a search of
//! a JSON object) for each field of the object it checks.
//!
//! A definition is compiled on first use and kept for the process's life (the installed
//! definitions never change); a property naming a definition links to it by name, so
//! recursive definitions (`JSONSchemaProps`) compile one level at a time.

use std::collections::HashMap;
use std::sync::OnceLock;

use serde_json::{Map, Value};

use super::Node;
use super::store::store;

pub(super) const INT_OR_STRING: &str = "io.k8s.apimachinery.pkg.util.intstr.IntOrString";
pub(super) const QUANTITY: &str = "io.k8s.apimachinery.pkg.api.resource.Quantity";
pub(super) const TIME: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.Time";
pub(super) const MICRO_TIME: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime";

/// A node of the walk: what its value must be, and the schema it came from (for the Go type an
/// error names).
#[derive(Debug)]
pub(super) struct Plan {
    pub shape: Shape,
    pub node: Node<'static>,
    /// The definition the node resolved to, if reached through a `$ref`.
    pub def: Option<&'static str>,
}

/// The precision kube writes a time field with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum TimeLayout {
    /// `metav1.Time`: RFC 3339 in whole seconds.
    Seconds,
    /// `metav1.MicroTime`: RFC 3339 with six fractional digits.
    Micros,
}

#[derive(Debug)]
pub(super) enum Shape {
    /// A definition compiled on first use.
    Def(&'static str),
    /// An object of known properties, sorted by name; its Go struct's short name.
    Struct {
        fields: Vec<(&'static str, Plan)>,
        go_struct: &'static str,
    },
    /// An object of any keys whose values all have one shape.
    Map(Box<Plan>),
    Array(Option<Box<Plan>>),
    /// A string holding base64.
    Bytes,
    String,
    Integer {
        int32: bool,
    },
    Number,
    Boolean,
    IntOrString,
    Quantity,
    Time(TimeLayout),
    /// Raw JSON (`RawExtension`, `FieldsV1`), or a node declaring no type: anything goes.
    Anything,
}

/// The compiled definitions by name, each compiled on first use.
static DEFS: OnceLock<HashMap<&'static str, OnceLock<Plan>>> = OnceLock::new();

/// The plan of definition `name`, or `None` for a name the installed store lacks.
pub(super) fn definition(name: &str) -> Option<&'static Plan> {
    let defs = DEFS.get_or_init(|| store().defs.keys().map(|k| (k.as_str(), OnceLock::new())).collect());
    let (&name, cell) = defs.get_key_value(name)?;
    Some(cell.get_or_init(|| {
        let node = super::definition_node(name).expect("a definition of the installed store");
        compile(node, Some(name))
    }))
}

/// `plan` itself, or the definition it names.
pub(super) fn resolved(plan: &Plan) -> &Plan {
    match plan.shape {
        Shape::Def(name) => definition(name).unwrap_or(plan),
        _ => plan,
    }
}

/// The keys a property may carry beside its `$ref` without changing how its value is walked.
fn walks_as_its_definition(own: &Value) -> bool {
    own.as_object().is_some_and(|o| {
        !["type", "format", "properties", "additionalProperties", "items", "x-kubernetes-int-or-string"]
            .iter()
            .any(|k| o.contains_key(*k))
    })
}

/// A property's plan: a link to its definition when it names one, else compiled here.
fn property(node: Node<'static>) -> Plan {
    let def = node.definition_name();
    match def {
        Some(name) if super::definition(name).is_some() && walks_as_its_definition(node.own()) => {
            Plan { shape: Shape::Def(name), node, def }
        }
        _ => compile(node, def),
    }
}

fn compile(node: Node<'static>, def: Option<&'static str>) -> Plan {
    let shape = match def {
        Some(INT_OR_STRING) => Shape::IntOrString,
        Some(QUANTITY) => Shape::Quantity,
        Some(TIME) => Shape::Time(TimeLayout::Seconds),
        Some(MICRO_TIME) => Shape::Time(TimeLayout::Micros),
        _ => shape(node, def),
    };
    Plan { shape, node, def }
}

fn shape(node: Node<'static>, def: Option<&'static str>) -> Shape {
    if node.is_int_or_string() {
        return Shape::IntOrString;
    }
    if let Some(props) = node.raw().get("properties").and_then(Value::as_object) {
        return structure(props, def);
    }
    match node.type_name() {
        Some("object") => match node.additional_properties() {
            Some(values) if !values.raw().as_object().is_some_and(Map::is_empty) => {
                Shape::Map(Box::new(property(values)))
            }
            _ => Shape::Anything,
        },
        Some("array") => Shape::Array(node.items().map(|items| Box::new(property(items)))),
        Some("string") if node.format() == Some("byte") => Shape::Bytes,
        Some("string") => Shape::String,
        Some("integer") => Shape::Integer { int32: node.format() != Some("int64") },
        Some("number") => Shape::Number,
        Some("boolean") => Shape::Boolean,
        _ => Shape::Anything,
    }
}

fn structure(props: &'static Map<String, Value>, def: Option<&'static str>) -> Shape {
    let mut fields: Vec<_> = props.iter().map(|(name, prop)| (name.as_str(), property(Node::at(prop)))).collect();
    fields.sort_unstable_by_key(|(name, _)| *name);
    let go_struct = def.map(|d| d.rsplit('.').next().unwrap_or(d)).unwrap_or_default();
    Shape::Struct { fields, go_struct }
}

/// The field `key` of a struct's sorted table.
pub(super) fn field<'p>(fields: &'p [(&'static str, Plan)], key: &str) -> Option<&'p (&'static str, Plan)> {
    fields.binary_search_by(|(name, _)| (*name).cmp(key)).ok().map(|i| &fields[i])
}
