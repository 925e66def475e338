//! kube's `DeclType` of a structural schema node (`SchemaDeclType` in
//! `k8s.io/apiserver/pkg/cel/common`): what CEL sees of a custom resource's values, for
//! `x-kubernetes-validations` rules.
//!
//! A declaration gives three things the rules need, all from the one schema walk:
//! - the CEL [`Type`] the checker types `self` and `oldSelf` with (objects expose their declared
//!   properties only, under kube's escaped names: `x-y` is `x__dash__y`);
//! - sizes for the cost estimator: the largest string, list or map a request can hold there
//!   (`maxLength`, `maxItems`, `maxProperties`, else what fits in kube's 3 MiB request limit
//!   given the smallest serialized item), and the smallest serialized size of a value;
//! - the conversion of JSON values to CEL values as kube's `UnstructuredToVal` makes them
//!   (`number` is always `double`, `date-time` a timestamp, `byte` bytes, undeclared fields
//!   invisible).
//!
//! The root of a resource, and every `x-kubernetes-embedded-resource`, also declares `kind`,
//! `apiVersion`, `metadata.name` and `metadata.generateName`, as kube's `WithTypeAndObjectMeta`.

use std::collections::BTreeMap;
use std::sync::{Arc, LazyLock};

use base64::Engine;
use serde_json::{Value, json};

use crate::types::{FieldSource, Object, Type};
use crate::value::{Key, List, ListType, Map, Value as CelValue};

/// kube's `MaxRequestSizeBytes`: the largest request, which bounds every size estimate.
pub const MAX_REQUEST_SIZE_BYTES: u64 = 3 * 1024 * 1024;

/// What a value declared by a schema node is.
#[derive(Debug)]
pub enum DeclKind {
    /// `boolean`.
    Bool,
    /// `integer`.
    Int,
    /// `number`.
    Double,
    /// `string`.
    String,
    /// `string` with format `byte`.
    Bytes,
    /// `string` with format `duration`.
    Duration,
    /// `string` with format `date` or `date-time`.
    Timestamp,
    /// `x-kubernetes-int-or-string`: typed at run time.
    Dyn,
    /// `array`.
    List(Arc<DeclType>),
    /// `object` with an `additionalProperties` schema.
    Map(Arc<DeclType>),
    /// `object` with properties (or none): escaped CEL name to the JSON name and declaration.
    Object(BTreeMap<String, (String, Arc<DeclType>)>),
}

/// One schema node's declaration.
#[derive(Debug)]
pub struct DeclType {
    /// What it is.
    pub kind: DeclKind,
    /// The largest size (bytes of a string, items of a list, entries of a map) a value can
    /// have: kube's `MaxElements`. Zero for scalars.
    pub max_elements: u64,
    /// The smallest JSON a value serializes to: how many of them a request can repeat.
    pub min_serialized_size: u64,
    /// How a list compares and concatenates (`x-kubernetes-list-type`).
    pub list_type: ListType,
}

/// A schema node that says nothing more than a string.
static STRING_SCHEMA: LazyLock<Value> = LazyLock::new(|| json!({"type": "string"}));
/// The `metadata` CEL sees at the root of a resource.
static METADATA_SCHEMA: LazyLock<Value> = LazyLock::new(
    || json!({"type": "object", "properties": {"name": {"type": "string"}, "generateName": {"type": "string"}}}),
);

fn flag(s: &Value, key: &str) -> bool {
    s.get(key).and_then(Value::as_bool) == Some(true)
}

fn int(s: &Value, key: &str) -> Option<u64> {
    s.get(key).and_then(Value::as_i64).map(|n| n.max(0) as u64)
}

/// kube's `WithTypeAndObjectMeta`: whether a resource root already declares `kind`,
/// `apiVersion` and `metadata.name`/`generateName` as kube requires, else the overrides.
fn has_type_and_object_meta(s: &Value) -> bool {
    let ty = |p: Option<&Value>, t: &str| p.and_then(|p| p.get("type")).and_then(Value::as_str) == Some(t);
    let props = s.get("properties");
    let prop = |name: &str| props.and_then(|p| p.get(name));
    let meta = prop("metadata");
    let meta_prop = |name: &str| meta.and_then(|m| m.get("properties")).and_then(|p| p.get(name));
    ty(prop("kind"), "string")
        && ty(prop("apiVersion"), "string")
        && ty(meta, "object")
        && ty(meta_prop("name"), "string")
        && ty(meta_prop("generateName"), "string")
}

/// CEL's reserved words: never identifiers (kube's `celReservedSymbols`).
pub const RESERVED_WORDS: [&str; 21] = [
    "true",
    "false",
    "null",
    "in",
    "as",
    "break",
    "const",
    "continue",
    "else",
    "for",
    "function",
    "if",
    "import",
    "let",
    "loop",
    "package",
    "namespace",
    "return",
    "var",
    "void",
    "while",
];

/// kube's `cel.Escape`: a property name as a CEL identifier, or `None` if it cannot be one
/// (then CEL does not see the property).
pub fn escape(name: &str) -> Option<String> {
    let first = name.chars().next()?;
    if first.is_ascii_digit() {
        return None;
    }
    if RESERVED_WORDS.contains(&name) {
        return Some(format!("__{name}__"));
    }
    if !name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '/')) {
        return None;
    }
    let mut out = String::with_capacity(name.len());
    let mut rest = name;
    while let Some(c) = rest.chars().next() {
        if rest.starts_with("__") {
            out.push_str("__underscores__");
            rest = &rest[2..];
            continue;
        }
        match c {
            '.' => out.push_str("__dot__"),
            '-' => out.push_str("__dash__"),
            '/' => out.push_str("__slash__"),
            c => out.push(c),
        }
        rest = &rest[c.len_utf8()..];
    }
    Some(out)
}

impl DeclType {
    fn new(kind: DeclKind, max_elements: u64, min_serialized_size: u64) -> Arc<DeclType> {
        Arc::new(DeclType { kind, max_elements, min_serialized_size, list_type: ListType::Atomic })
    }

    /// The declaration of structural schema node `s`, or `None` where kube has none (a node
    /// without a type, a list or map of such nodes). `resource_root` for the root of a custom
    /// resource; embedded resources are recognized by their extension.
    pub fn of(s: &Value, resource_root: bool) -> Option<Arc<DeclType>> {
        if flag(s, "x-kubernetes-int-or-string") {
            return Some(DeclType::new(DeclKind::Dyn, MAX_REQUEST_SIZE_BYTES - 2, 1));
        }
        let root = resource_root || flag(s, "x-kubernetes-embedded-resource");
        match s.get("type").and_then(Value::as_str).unwrap_or("") {
            "array" => {
                let items = s.get("items").filter(|i| i.is_object())?;
                let elem = DeclType::of(items, false)?;
                let max = int(s, "maxItems").unwrap_or((MAX_REQUEST_SIZE_BYTES - 2) / (elem.min_serialized_size + 1));
                let list_type = match s.get("x-kubernetes-list-type").and_then(Value::as_str) {
                    Some("set") => ListType::Set,
                    Some("map") => ListType::Map(
                        s.get("x-kubernetes-list-map-keys")
                            .and_then(Value::as_array)
                            .into_iter()
                            .flatten()
                            .filter_map(Value::as_str)
                            .map(|k| Arc::from(escape(k).unwrap_or_else(|| k.to_string()).as_str()))
                            .collect(),
                    ),
                    _ => ListType::Atomic,
                };
                Some(Arc::new(DeclType {
                    kind: DeclKind::List(elem),
                    max_elements: max,
                    min_serialized_size: 2,
                    list_type,
                }))
            }
            "object" => {
                if let Some(values) = s.get("additionalProperties").filter(|a| a.is_object()) {
                    let elem = DeclType::of(values, false)?;
                    let max = int(s, "maxProperties")
                        .unwrap_or((MAX_REQUEST_SIZE_BYTES - 2) / (elem.min_serialized_size + 6));
                    return Some(DeclType::new(DeclKind::Map(elem), max, 2));
                }
                let overridden = root && !has_type_and_object_meta(s);
                let own = s.get("properties").and_then(Value::as_object);
                let mut props: BTreeMap<&str, &Value> =
                    own.map(|p| p.iter().map(|(k, v)| (k.as_str(), v)).collect()).unwrap_or_default();
                if overridden {
                    props.insert("kind", &STRING_SCHEMA);
                    props.insert("apiVersion", &STRING_SCHEMA);
                    props.insert("metadata", &METADATA_SCHEMA);
                }
                let required: Vec<&str> = s
                    .get("required")
                    .and_then(Value::as_array)
                    .map(|r| r.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                let mut fields = BTreeMap::new();
                // An object is at least `{}`, plus its required fields that no default fills.
                let mut min = 2;
                for (name, prop) in props {
                    let Some(decl) = DeclType::of(prop, false) else { continue };
                    if required.contains(&name) && prop.get("default").is_none_or(Value::is_null) {
                        min += name.len() as u64 + decl.min_serialized_size + 4;
                    }
                    if let Some(escaped) = escape(name) {
                        fields.insert(escaped, (name.to_string(), decl));
                    }
                }
                Some(DeclType::new(DeclKind::Object(fields), 0, min))
            }
            "string" => {
                let general = MAX_REQUEST_SIZE_BYTES - 2;
                Some(match s.get("format").and_then(Value::as_str).unwrap_or("") {
                    "byte" => DeclType::new(DeclKind::Bytes, int(s, "maxLength").unwrap_or(general), 2),
                    "duration" => DeclType::new(DeclKind::Duration, 32, 3),
                    "date" => DeclType::new(DeclKind::Timestamp, 12, 12),
                    "date-time" => DeclType::new(DeclKind::Timestamp, 32, 21),
                    _ => {
                        // maxLength counts code points, a code point up to 4 bytes.
                        let max = match (int(s, "maxLength"), s.get("enum").and_then(Value::as_array)) {
                            (Some(n), _) => n.saturating_mul(4),
                            (None, Some(e)) if !e.is_empty() => {
                                e.iter().filter_map(Value::as_str).map(|v| v.len() as u64).max().unwrap_or(0)
                            }
                            _ => general,
                        };
                        DeclType::new(DeclKind::String, max, 2)
                    }
                })
            }
            "boolean" => Some(DeclType::new(DeclKind::Bool, 0, 4)),
            "number" => Some(DeclType::new(DeclKind::Double, 0, 1)),
            "integer" => Some(DeclType::new(DeclKind::Int, 0, 1)),
            _ => None,
        }
    }

    /// The element declaration of a list, or the value declaration of a map.
    pub fn elem(&self) -> Option<&Arc<DeclType>> {
        match &self.kind {
            DeclKind::List(e) | DeclKind::Map(e) => Some(e),
            _ => None,
        }
    }

    /// The declaration of field `name` (escaped) of an object.
    pub fn field(&self, name: &str) -> Option<&Arc<DeclType>> {
        match &self.kind {
            DeclKind::Object(fields) => fields.get(name).map(|(_, d)| d),
            _ => None,
        }
    }

    /// The CEL type, objects named `name` and their nested objects after their path
    /// (`name.spec`).
    pub fn cel_type(self: &Arc<Self>, name: &str) -> Type {
        match &self.kind {
            DeclKind::Bool => Type::Bool,
            DeclKind::Int => Type::Int,
            DeclKind::Double => Type::Double,
            DeclKind::String => Type::String,
            DeclKind::Bytes => Type::Bytes,
            DeclKind::Duration => Type::Duration,
            DeclKind::Timestamp => Type::Timestamp,
            DeclKind::Dyn => Type::Dyn,
            DeclKind::List(e) => Type::list(e.cel_type(name)),
            DeclKind::Map(e) => Type::map(Type::String, e.cel_type(name)),
            DeclKind::Object(_) => {
                Type::Object(Object::Lazy { name: name.into(), fields: Arc::new(DeclFields(self.clone())) })
            }
        }
    }

    /// `value` as CEL sees it here (kube's `UnstructuredToVal`). A value that does not match
    /// the declaration (schema validation reported it) is taken as plain JSON.
    pub fn to_value(&self, value: &Value) -> CelValue {
        match (&self.kind, value) {
            (_, Value::Null) => CelValue::Null,
            (DeclKind::Double, Value::Number(n)) => CelValue::Double(n.as_f64().unwrap_or(f64::NAN)),
            (DeclKind::Bytes, Value::String(s)) => match base64::engine::general_purpose::STANDARD.decode(s) {
                Ok(b) => CelValue::Bytes(Arc::from(b)),
                Err(_) => crate::value::from_json(value),
            },
            (DeclKind::Duration, Value::String(s)) => match crate::golang::parse_duration(s) {
                Ok(nanos) => CelValue::Duration(nanos as i64),
                Err(_) => crate::value::from_json(value),
            },
            (DeclKind::Timestamp, Value::String(s)) => match parse_timestamp(s) {
                Some(t) => CelValue::Timestamp(t),
                None => crate::value::from_json(value),
            },
            (DeclKind::List(elem), Value::Array(items)) => CelValue::List(List {
                items: Arc::new(items.iter().map(|i| elem.to_value(i)).collect()),
                list_type: self.list_type.clone(),
            }),
            (DeclKind::Map(elem), Value::Object(m)) => CelValue::Map(Map::new(
                m.iter().map(|(k, v)| (Key::String(Arc::from(k.as_str())), elem.to_value(v))).collect(),
            )),
            (DeclKind::Object(fields), Value::Object(m)) => CelValue::Map(Map::new(
                fields
                    .iter()
                    .filter_map(|(escaped, (name, decl))| {
                        m.get(name).map(|v| (Key::String(Arc::from(escaped.as_str())), decl.to_value(v)))
                    })
                    .collect(),
            )),
            _ => crate::value::from_json(value),
        }
    }
}

/// A `date` or `date-time` string as a timestamp (RFC 3339, `t` and `z` in either case).
fn parse_timestamp(s: &str) -> Option<chrono::DateTime<chrono::FixedOffset>> {
    if let Ok(d) = chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d") {
        return Some(d.and_hms_opt(0, 0, 0)?.and_utc().fixed_offset());
    }
    chrono::DateTime::parse_from_rfc3339(&s.to_uppercase()).ok()
}

/// The fields of an object declaration, typed as they are selected.
#[derive(Debug)]
struct DeclFields(Arc<DeclType>);

impl FieldSource for DeclFields {
    fn field(&self, owner: &str, field: &str) -> Option<Type> {
        self.0.field(field).map(|d| d.cel_type(&format!("{owner}.{field}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn property_names_are_escaped_as_kube_escapes_them() {
        assert_eq!(escape("replicas").as_deref(), Some("replicas"));
        assert_eq!(escape("x-y.z/w").as_deref(), Some("x__dash__y__dot__z__slash__w"));
        assert_eq!(escape("a__b").as_deref(), Some("a__underscores__b"));
        assert_eq!(escape("namespace").as_deref(), Some("__namespace__"));
        assert_eq!(escape("1st"), None);
        assert_eq!(escape("a b"), None);
    }

    #[test]
    fn sizes_come_from_the_schema_or_the_request_limit() {
        let s = json!({"type": "object", "properties": {
            "names": {"type": "array", "maxItems": 10, "items": {"type": "string", "maxLength": 5}},
            "free": {"type": "array", "items": {"type": "string"}},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            "color": {"type": "string", "enum": ["red", "purple"]},
        }});
        let d = DeclType::of(&s, true).unwrap();
        let names = d.field("names").unwrap();
        assert_eq!((names.max_elements, names.elem().unwrap().max_elements), (10, 20));
        assert_eq!(d.field("free").unwrap().max_elements, (MAX_REQUEST_SIZE_BYTES - 2) / 3);
        assert_eq!(d.field("labels").unwrap().max_elements, (MAX_REQUEST_SIZE_BYTES - 2) / 8);
        assert_eq!(d.field("color").unwrap().max_elements, 6);
        assert!(d.field("kind").is_some() && d.field("metadata").unwrap().field("generateName").is_some());
        assert_eq!(d.cel_type("selfType").to_string(), "selfType");
    }

    #[test]
    fn values_are_typed_by_their_declaration() {
        let s = json!({"type": "object", "properties": {
            "ratio": {"type": "number"}, "at": {"type": "string", "format": "date-time"},
            "x-y": {"type": "integer"},
        }});
        let d = DeclType::of(&s, false).unwrap();
        let v = d.to_value(&json!({"ratio": 1, "at": "2024-01-02T03:04:05Z", "x-y": 2, "hidden": true}));
        let CelValue::Map(m) = v else { panic!("{v:?}") };
        let get = |k: &str| m.get(&Key::String(Arc::from(k))).cloned();
        assert_eq!(get("ratio"), Some(CelValue::Double(1.0)));
        assert!(matches!(get("at"), Some(CelValue::Timestamp(_))));
        assert_eq!(get("x__dash__y"), Some(CelValue::Int(2)));
        assert_eq!(get("hidden"), None, "undeclared fields are invisible");
    }
}
