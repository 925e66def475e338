//! Objects marked `x-kubernetes-embedded-resource`, and `metadata` as `metav1.ObjectMeta`.
//!
//! kube validates an embedded resource's `apiVersion`, `kind` and `metadata` itself (the
//! schema need not declare them; apiextensions' `objectmeta` package), and when decoding
//! round-trips every `metadata` through the Go `ObjectMeta` struct: fields it lacks are dropped
//! (and reported under strict field validation), and the struct's `omitempty` fields come back
//! without their empty values.

use apimachinery::error::Cause;
use apimachinery::validation::field::{self, Bad, Path};
use serde_json::{Map, Value};
use validation::{meta, names};

use super::node::Node;
use super::render::{Num, bad, json_kind, num};

/// The embedded-resource checks of `objectmeta.Validate` below the root (the root's own
/// metadata is the ordinary `ObjectMeta` validation's business).
pub(crate) fn embedded_errors(s: Node<'_>, obj: &Value) -> Vec<Cause> {
    let mut out = Vec::new();
    walk(&Path::new(""), obj, s, &mut out);
    out
}

fn walk(p: &Path, x: &Value, s: Node<'_>, out: &mut Vec<Cause>) {
    match x {
        Value::Object(m) => {
            if s.embedded_resource() {
                embedded(p, m, out);
            }
            for (k, v) in m {
                if let Some(prop) = s.property(k) {
                    walk(&p.child(k), v, prop, out);
                } else if let Some(values) = s.additional_schema() {
                    walk(&p.key(k), v, values, out);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = s.items() {
                for (i, v) in items.iter().enumerate() {
                    walk(&p.index(i), v, item_schema, out);
                }
            }
        }
        _ => {}
    }
}

/// `validateEmbeddedResource`: `apiVersion` and `kind` required (metadata is not), each checked,
/// and `metadata` validated as `ObjectMeta` (a missing name is not an error here).
fn embedded(p: &Path, x: &Map<String, Value>, out: &mut Vec<Cause>) {
    for k in ["apiVersion", "kind"] {
        if !x.contains_key(k) {
            out.push(field::required(&p.child(k), "must not be empty"));
        }
    }
    if let Some(v) = x.get("apiVersion") {
        let at = p.child("apiVersion");
        match v.as_str() {
            None => out.push(field::invalid(&at, bad(v), "must be a string")),
            Some("") => out.push(field::invalid(&at, Bad::s(""), "must not be empty")),
            // `schema.ParseGroupVersion`: `version` or `group/version`.
            Some(gv) if gv != "/" && gv.matches('/').count() > 1 => {
                out.push(field::invalid(&at, Bad::s(gv), &format!("unexpected GroupVersion string: {gv}")));
            }
            Some(_) => {}
        }
    }
    if let Some(v) = x.get("kind") {
        let at = p.child("kind");
        match v.as_str() {
            None => out.push(field::invalid(&at, bad(v), "must be a string")),
            Some("") => out.push(field::invalid(&at, Bad::s(""), "must not be empty")),
            Some(kind) => {
                let errs = names::dns1035_label(&kind.to_lowercase());
                if !errs.is_empty() {
                    let detail = format!("may have mixed case, but should otherwise match: {}", errs.join(","));
                    out.push(field::invalid(&at, Bad::s(kind), &detail));
                }
            }
        }
    }
    if let Some(v) = x.get("metadata") {
        let at = p.child("metadata");
        match decode_error(v) {
            Some(e) => out.push(field::invalid(&at, bad(v), &e)),
            None => {
                let mut m = v.as_object().cloned().unwrap_or_default();
                if m.get("name").and_then(Value::as_str).unwrap_or("").is_empty() {
                    m.insert("name".to_string(), Value::String("fakename".to_string()));
                }
                let namespaced = m.get("namespace").and_then(Value::as_str).is_some_and(|n| !n.is_empty());
                out.extend(meta::validate_object_meta(Some(&m), namespaced, names::path_segment_name, &at, false));
            }
        }
    }
}

/// How a field of `ObjectMeta` (or of the structs in it) decodes in Go.
#[derive(Clone, Copy)]
enum Go {
    /// `string`, omitted when empty.
    Str,
    /// `string`, kept when empty (no `omitempty`).
    StrKept,
    /// `int64`, omitted when 0.
    Int,
    /// `*int64`: kept when 0.
    IntPtr,
    /// `*bool`: kept when false.
    BoolPtr,
    /// `metav1.Time` (a string, RFC 3339).
    Time,
    /// `map[string]string`.
    StrMap,
    /// `[]string`.
    StrList,
    /// `[]OwnerReference`.
    OwnerRefs,
    /// `[]ManagedFieldsEntry`.
    ManagedFields,
    /// `*FieldsV1`: raw JSON, any object.
    Raw,
}

const OBJECT_META: &[(&str, Go)] = &[
    ("annotations", Go::StrMap),
    ("creationTimestamp", Go::Time),
    ("deletionGracePeriodSeconds", Go::IntPtr),
    ("deletionTimestamp", Go::Time),
    ("finalizers", Go::StrList),
    ("generateName", Go::Str),
    ("generation", Go::Int),
    ("labels", Go::StrMap),
    ("managedFields", Go::ManagedFields),
    ("name", Go::Str),
    ("namespace", Go::Str),
    ("ownerReferences", Go::OwnerRefs),
    ("resourceVersion", Go::Str),
    ("selfLink", Go::Str),
    ("uid", Go::Str),
];

const OWNER_REFERENCE: &[(&str, Go)] = &[
    ("apiVersion", Go::StrKept),
    ("blockOwnerDeletion", Go::BoolPtr),
    ("controller", Go::BoolPtr),
    ("kind", Go::StrKept),
    ("name", Go::StrKept),
    ("uid", Go::StrKept),
];

const MANAGED_FIELDS_ENTRY: &[(&str, Go)] = &[
    ("apiVersion", Go::Str),
    ("fieldsType", Go::Str),
    ("fieldsV1", Go::Raw),
    ("manager", Go::Str),
    ("operation", Go::Str),
    ("subresource", Go::Str),
    ("time", Go::Time),
];

fn go_type(t: Go) -> &'static str {
    match t {
        Go::Str | Go::StrKept | Go::Time => "string",
        Go::Int | Go::IntPtr => "int64",
        Go::BoolPtr => "bool",
        Go::StrMap => "map[string]string",
        Go::StrList => "[]string",
        Go::OwnerRefs => "[]v1.OwnerReference",
        Go::ManagedFields => "[]v1.ManagedFieldsEntry",
        Go::Raw => "v1.FieldsV1",
    }
}

/// The error `json.Unmarshal(metadata, &metav1.ObjectMeta{})` returns, if any: Go reports
/// the first type mismatch in document order (kube re-marshals the map, so keys are sorted).
pub(crate) fn decode_error(meta: &Value) -> Option<String> {
    match meta {
        Value::Null => None,
        Value::Object(m) => struct_error(m, "ObjectMeta", "", OBJECT_META),
        other => Some(format!("json: cannot unmarshal {} into Go value of type v1.ObjectMeta", json_kind(other))),
    }
}

fn struct_error(m: &Map<String, Value>, st: &str, stack: &str, fields: &[(&str, Go)]) -> Option<String> {
    let mut keys: Vec<&String> = m.keys().collect();
    keys.sort();
    for k in keys {
        let Some((_, t)) = fields.iter().find(|(f, _)| f == k) else { continue };
        let field_path = if stack.is_empty() { k.to_string() } else { format!("{stack}.{k}") };
        // Go names a number it could not fit in an int64 with its text, other values by kind.
        let mismatch = |v: &Value, ty: &str| {
            let what = match v {
                Value::Number(n) if ty == "int64" => format!("number {n}"),
                other => json_kind(other),
            };
            Some(format!("json: cannot unmarshal {what} into Go struct field {st}.{field_path} of type {ty}"))
        };
        let v = &m[k.as_str()];
        if v.is_null() {
            continue;
        }
        let found = match t {
            Go::Str | Go::StrKept => (!v.is_string()).then(|| mismatch(v, "string")).flatten(),
            Go::Int | Go::IntPtr => (!matches!(v, Value::Number(n) if matches!(num(n), Num::Int(_))))
                .then(|| mismatch(v, "int64"))
                .flatten(),
            Go::BoolPtr => (!v.is_boolean()).then(|| mismatch(v, "bool")).flatten(),
            Go::Time => match v {
                Value::String(s) => time_error(s),
                other => Some(format!("json: cannot unmarshal {} into Go value of type string", json_kind(other))),
            },
            Go::StrMap => match v {
                Value::Object(entries) => {
                    entries.values().find(|e| !e.is_null() && !e.is_string()).and_then(|e| mismatch(e, "string"))
                }
                other => mismatch(other, go_type(*t)),
            },
            Go::StrList => match v {
                Value::Array(items) => {
                    items.iter().find(|e| !e.is_null() && !e.is_string()).and_then(|e| mismatch(e, "string"))
                }
                other => mismatch(other, go_type(*t)),
            },
            Go::OwnerRefs | Go::ManagedFields => match v {
                Value::Array(items) => {
                    let (inner, name, element) = match t {
                        Go::OwnerRefs => (OWNER_REFERENCE, "OwnerReference", "v1.OwnerReference"),
                        _ => (MANAGED_FIELDS_ENTRY, "ManagedFieldsEntry", "v1.ManagedFieldsEntry"),
                    };
                    items.iter().find_map(|item| match item {
                        Value::Null => None,
                        Value::Object(o) => struct_error(o, name, &field_path, inner),
                        other => mismatch(other, element),
                    })
                }
                other => mismatch(other, go_type(*t)),
            },
            Go::Raw => (!v.is_object()).then(|| mismatch(v, go_type(*t))).flatten(),
        };
        if found.is_some() {
            return found;
        }
    }
    None
}

/// `time.Parse(time.RFC3339, s)`'s error, if any (reported for the first layout element that
/// does not match, as Go words it).
fn time_error(s: &str) -> Option<String> {
    const LAYOUT: &str = "2006-01-02T15:04:05Z07:00";
    let steps: &[(&str, usize)] = &[
        ("2006", 4),
        ("-", 1),
        ("01", 2),
        ("-", 1),
        ("02", 2),
        ("T", 1),
        ("15", 2),
        (":", 1),
        ("04", 2),
        (":", 1),
        ("05", 2),
    ];
    let fail = |rest: &str, elem: &str| {
        Some(format!("parsing time {} as {}: cannot parse {} as {}", quote(s), quote(LAYOUT), quote(rest), quote(elem)))
    };
    let mut rest = s;
    for (elem, n) in steps {
        let ok = if elem.bytes().all(|b| b.is_ascii_digit()) {
            rest.len() >= *n && rest.as_bytes()[..*n].iter().all(u8::is_ascii_digit)
        } else {
            rest.starts_with(elem)
        };
        if !ok {
            return fail(rest, elem);
        }
        rest = &rest[*n..];
    }
    if let Some(frac) = rest.strip_prefix('.') {
        let digits = frac.bytes().take_while(u8::is_ascii_digit).count();
        rest = &frac[digits..];
    }
    let zone_ok = rest == "Z"
        || (rest.len() == 6
            && matches!(rest.as_bytes()[0], b'+' | b'-')
            && rest.as_bytes()[3] == b':'
            && [1, 2, 4, 5].iter().all(|i| rest.as_bytes()[*i].is_ascii_digit()));
    if !zone_ok {
        return fail(rest, "Z07:00");
    }
    None
}

fn quote(s: &str) -> String {
    field::go_quote(s)
}

/// `metadata` after a round-trip through `ObjectMeta`: unknown fields removed (their paths,
/// `<prefix>.foo`, `<prefix>.ownerReferences[0].bar`, appended to `unknown`), nulls and the
/// `omitempty` fields' empty values removed. Metadata that does not decode is left alone (the
/// error is validation's to report).
pub(crate) fn coerce(meta: &mut Value, prefix: &str, unknown: &mut Vec<String>) {
    if decode_error(meta).is_some() {
        return;
    }
    if meta.is_null() {
        // `null` decodes to the empty ObjectMeta, which encodes as `{}`.
        *meta = Value::Object(Map::new());
    }
    if let Value::Object(m) = meta {
        coerce_struct(m, prefix, OBJECT_META, unknown);
    }
}

fn coerce_struct(m: &mut Map<String, Value>, prefix: &str, fields: &[(&str, Go)], unknown: &mut Vec<String>) {
    let keys: Vec<String> = m.keys().cloned().collect();
    for k in keys {
        let Some((_, t)) = fields.iter().find(|(f, _)| *f == k) else {
            m.remove(&k);
            unknown.push(format!("{prefix}.{k}"));
            continue;
        };
        let Some(v) = m.get_mut(&k) else { continue };
        if let (Go::OwnerRefs | Go::ManagedFields, Value::Array(items)) = (t, &mut *v) {
            let inner = if matches!(t, Go::OwnerRefs) { OWNER_REFERENCE } else { MANAGED_FIELDS_ENTRY };
            for (i, item) in items.iter_mut().enumerate() {
                if let Value::Object(o) = item {
                    coerce_struct(o, &format!("{prefix}.{k}[{i}]"), inner, unknown);
                }
            }
        }
        // A time is read and written back as kube's ObjectMeta round trip writes it.
        if let (Go::Time, Value::String(text)) = (t, &*v)
            && let Some(canonical) = apimachinery::gofmt::canonical_time(text)
        {
            *v = Value::String(canonical);
        }
        if let (Go::StrMap | Go::StrList, Value::Object(_) | Value::Array(_)) = (t, &*v) {
            // A null entry decodes as "" in a Go map or slice of strings.
            match v {
                Value::Object(entries) => entries.values_mut().filter(|e| e.is_null()).for_each(|e| *e = "".into()),
                Value::Array(items) => items.iter_mut().filter(|e| e.is_null()).for_each(|e| *e = "".into()),
                _ => {}
            }
        }
        let empty = match (t, &*v) {
            (_, Value::Null) => true,
            (Go::Str, Value::String(s)) => s.is_empty(),
            (Go::Int, Value::Number(n)) => n.as_i64() == Some(0),
            (Go::StrMap, Value::Object(o)) => o.is_empty(),
            (Go::StrList | Go::OwnerRefs | Go::ManagedFields, Value::Array(a)) => a.is_empty(),
            _ => false,
        };
        if empty {
            m.remove(&k);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn decode_errors_read_like_go() {
        assert_eq!(
            decode_error(&json!("x")).unwrap(),
            "json: cannot unmarshal string into Go value of type v1.ObjectMeta"
        );
        assert_eq!(
            decode_error(&json!({"name": 5})).unwrap(),
            "json: cannot unmarshal number into Go struct field ObjectMeta.name of type string"
        );
        assert_eq!(
            decode_error(&json!({"generation": 1.5})).unwrap(),
            "json: cannot unmarshal number 1.5 into Go struct field ObjectMeta.generation of type int64"
        );
        assert_eq!(
            decode_error(&json!({"labels": {"a": 1}})).unwrap(),
            "json: cannot unmarshal number into Go struct field ObjectMeta.labels of type string"
        );
        assert_eq!(
            decode_error(&json!({"creationTimestamp": "yesterday"})).unwrap(),
            "parsing time \"yesterday\" as \"2006-01-02T15:04:05Z07:00\": cannot parse \"yesterday\" as \"2006\""
        );
        assert!(decode_error(&json!({"creationTimestamp": "2024-01-02T03:04:05.5+01:00", "foo": 1})).is_none());
    }

    #[test]
    fn coercion_drops_unknown_and_empty_fields() {
        let mut m = json!({"name": "a", "namespace": "", "foo": 1, "labels": {},
            "ownerReferences": [{"apiVersion": "v1", "kind": "K", "name": "n", "uid": "u", "bar": true}]});
        let mut unknown = Vec::new();
        coerce(&mut m, "spec.t.metadata", &mut unknown);
        assert_eq!(unknown, ["spec.t.metadata.foo", "spec.t.metadata.ownerReferences[0].bar"]);
        assert_eq!(
            m,
            json!({"name": "a", "ownerReferences": [{"apiVersion": "v1", "kind": "K", "name": "n", "uid": "u"}]})
        );
    }

    #[test]
    fn times_are_written_back_as_kube_writes_them() {
        let mut m = json!({"name": "a", "creationTimestamp": "2024-01-02T03:04:05.5+01:00",
            "managedFields": [{"manager": "m", "operation": "Update", "time": "2024-01-02T02:04:05+00:00"}]});
        coerce(&mut m, "metadata", &mut Vec::new());
        assert_eq!(m["creationTimestamp"], "2024-01-02T02:04:05Z");
        assert_eq!(m["managedFields"][0]["time"], "2024-01-02T02:04:05Z");
    }
}
