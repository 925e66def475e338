//! `x-kubernetes-list-type: set` and `map` uniqueness (apiextensions' `listtype` package, run
//! after schema validation). Paths use kube's field-path form (`spec.ports[1]`, `data[key]`).
//!
//! Items compare as Go compares them there: scalars by Go value and type (`1` and `1.0` differ),
//! objects and arrays by their JSON encoding (where `1` and `1.0` are the same). Only the second
//! occurrence of a value is reported, as kube does.
//!
//! `x-kubernetes-map-type` has no runtime check in kube (it guides server-side apply only).

use std::collections::HashMap;

use apimachinery::error::Cause;
use apimachinery::validation::field::{self, Bad, Path};
use serde_json::{Map, Value};

use super::node::Node;
use super::render::{Num, bad, json_marshal, num, sharp_v_map};

/// `ValidateListSetsAndMaps` at the root object.
pub(crate) fn list_errors(s: Node<'_>, obj: &Value) -> Vec<Cause> {
    let mut out = Vec::new();
    if let Value::Object(m) = obj {
        object(&Path::new(""), s, m, &mut out);
    }
    out
}

fn object(p: &Path, s: Node<'_>, m: &Map<String, Value>, out: &mut Vec<Cause>) {
    if let Some(values) = s.additional_schema() {
        for (k, v) in m {
            value(&p.key(k), values, v, out);
        }
    }
    if s.properties().is_some() {
        for (k, v) in m {
            if let Some(prop) = s.property(k) {
                value(&p.child(k), prop, v, out);
            }
        }
    }
}

fn value(p: &Path, s: Node<'_>, v: &Value, out: &mut Vec<Cause>) {
    match v {
        Value::Array(items) => array(p, s, items, out),
        Value::Object(m) => object(p, s, m, out),
        _ => {}
    }
}

fn array(p: &Path, s: Node<'_>, items: &[Value], out: &mut Vec<Cause>) {
    match s.str("x-kubernetes-list-type") {
        Some("set") => {
            for i in repeats(items.iter().map(Key::of)) {
                out.push(field::duplicate(&p.index(i), bad(&items[i])));
            }
        }
        Some("map") => out.extend(list_map(p, s, items)),
        _ => {}
    }
    if let Some(item_schema) = s.items() {
        for (i, item) in items.iter().enumerate() {
            value(&p.index(i), item_schema, item, out);
        }
    }
}

fn list_map(p: &Path, s: Node<'_>, items: &[Value]) -> Vec<Cause> {
    if let Some(i) = items.iter().position(|x| !x.is_null() && !x.is_object()) {
        return vec![field::invalid(&p.index(i), bad(&items[i]), "must be an object for an array of list-type map")];
    }
    if items.len() <= 1 {
        return Vec::new();
    }
    let key_fields: Vec<&str> = s
        .get("x-kubernetes-list-map-keys")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    if let [only] = key_fields[..] {
        // One key: a missing key (or a null item) is its own value, distinct from any other.
        let keys: Vec<Option<&Value>> = items.iter().map(|x| x.get(only)).collect();
        return repeats(keys.iter().map(|k| k.map(Key::of).unwrap_or(Key::Unspecified)))
            .into_iter()
            .map(|i| {
                let mut shown = Map::new();
                if let Some(k) = keys[i] {
                    shown.insert(only.to_string(), k.clone());
                }
                field::duplicate(&p.index(i), Bad::Raw(sharp_v_map(&shown)))
            })
            .collect();
    }
    let keys: Vec<Map<String, Value>> = items
        .iter()
        .map(|x| key_fields.iter().filter_map(|k| x.get(*k).map(|v| (k.to_string(), v.clone()))).collect())
        .collect();
    repeats(keys.iter().map(|k| Key::Compound(json_marshal(&Value::Object(k.clone())))))
        .into_iter()
        .map(|i| field::duplicate(&p.index(i), Bad::Raw(sharp_v_map(&keys[i]))))
        .collect()
}

/// A value as Go's `validateListSet` keys it.
#[derive(Hash, PartialEq, Eq)]
enum Key {
    Null,
    Bool(bool),
    Int(i64),
    Float(u64),
    Str(String),
    Compound(String),
    Unspecified,
}

impl Key {
    fn of(v: &Value) -> Key {
        match v {
            Value::Null => Key::Null,
            Value::Bool(b) => Key::Bool(*b),
            Value::String(s) => Key::Str(s.clone()),
            Value::Number(n) => match num(n) {
                Num::Int(i) => Key::Int(i),
                // -0 and 0 are one map key in Go.
                Num::Float(f) => Key::Float(if f == 0.0 { 0 } else { f.to_bits() }),
            },
            compound => Key::Compound(json_marshal(compound)),
        }
    }
}

/// Indices of the second occurrence of each repeated key.
fn repeats(keys: impl Iterator<Item = Key>) -> Vec<usize> {
    let mut seen: HashMap<Key, usize> = HashMap::new();
    let mut out = Vec::new();
    for (i, k) in keys.enumerate() {
        let times = seen.entry(k).or_insert(0);
        *times += 1;
        if *times == 2 {
            out.push(i);
        }
    }
    out
}
