//! Field sets as server-side apply keeps them: which fields of an object a manager owns, as a
//! tree of path elements, and their `FieldsV1` encoding in `managedFields` (kube's exact bytes:
//! `f:<name>` for a field, `k:<json>` for an associative list's element by its keys, `v:<json>`
//! for a set's element by its value, `i:<n>` for an atomic list's element by its index; an
//! element that is itself owned and has owned children carries `".": {}` before them).
//!
//! Path elements are ordered as structured-merge-diff orders them (fields, then keys, then
//! values, then indexes; values by kind, then numerically or lexically), which is the order
//! `FieldsV1` is written in.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

use serde_json::{Map, Value};

use crate::gofmt::go_json;
use crate::schema::Node;

mod typed;

use protobuf::fields_v1::compare_values;

pub use typed::{Comparison, check_keys, compare, display_path, merge, remove_items, with_named_members};

/// One step into an object.
#[derive(Clone, Debug)]
pub enum PathElement {
    /// A field of a map or struct.
    Field(String),
    /// An element of an associative list, by its key fields (sorted by name).
    Key(Vec<(String, Value)>),
    /// An element of a set (a list of scalars), by its value.
    Value(Value),
    /// An element of an atomic list, by its index.
    Index(usize),
}

impl PathElement {
    /// The element of an associative list whose key fields are `fields`.
    pub fn key(mut fields: Vec<(String, Value)>) -> Self {
        fields.sort_by(|a, b| a.0.cmp(&b.0));
        PathElement::Key(fields)
    }

    fn rank(&self) -> u8 {
        match self {
            PathElement::Field(_) => 0,
            PathElement::Key(_) => 1,
            PathElement::Value(_) => 2,
            PathElement::Index(_) => 3,
        }
    }

    /// The element as `FieldsV1` writes it.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        match self {
            PathElement::Field(name) => {
                out.push_str("f:");
                out.push_str(name);
            }
            PathElement::Key(fields) => {
                out.push_str("k:");
                out.push_str(&go_json(&Value::Object(fields.iter().cloned().collect())));
            }
            PathElement::Value(value) => {
                out.push_str("v:");
                out.push_str(&go_json(value));
            }
            PathElement::Index(i) => {
                let _ = write!(out, "i:{i}");
            }
        }
        out
    }

    /// Reads an element as `FieldsV1` writes it; `None` for a kind this version does not know
    /// (kube drops those too).
    pub fn decode(text: &str) -> Result<Option<Self>, String> {
        let (kind, rest) = match text.split_at_checked(2) {
            Some((kind, rest)) if kind.ends_with(':') => (kind, rest),
            _ => return Err(format!("{text:?} is not a path element (like f:name)")),
        };
        let json = || serde_json::from_str::<Value>(rest).map_err(|e| format!("{text:?}: {e}"));
        Ok(Some(match kind {
            "f:" => PathElement::Field(rest.to_string()),
            "v:" => PathElement::Value(json()?),
            "k:" => match json()? {
                Value::Object(map) => PathElement::key(map.into_iter().collect()),
                _ => return Err(format!("{text:?}: a key is a JSON object")),
            },
            "i:" => PathElement::Index(rest.parse().map_err(|e| format!("{text:?}: {e}"))?),
            _ => return Ok(None),
        }))
    }
}

impl Ord for PathElement {
    fn cmp(&self, other: &Self) -> Ordering {
        match (self, other) {
            (PathElement::Field(a), PathElement::Field(b)) => a.cmp(b),
            (PathElement::Key(a), PathElement::Key(b)) => compare_fields(a, b),
            (PathElement::Value(a), PathElement::Value(b)) => compare_values(a, b),
            (PathElement::Index(a), PathElement::Index(b)) => a.cmp(b),
            _ => self.rank().cmp(&other.rank()),
        }
    }
}

impl PartialOrd for PathElement {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for PathElement {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for PathElement {}

/// Key fields in order: field by field (name, then value), a shorter list first.
fn compare_fields(a: &[(String, Value)], b: &[(String, Value)]) -> Ordering {
    for ((an, av), (bn, bv)) in a.iter().zip(b) {
        let c = an.cmp(bn).then_with(|| compare_values(av, bv));
        if c != Ordering::Equal {
            return c;
        }
    }
    a.len().cmp(&b.len())
}

/// A set of field paths: the elements owned here (`members`), and the sets under each element
/// that has owned descendants (`children`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FieldSet {
    members: BTreeSet<PathElement>,
    children: BTreeMap<PathElement, FieldSet>,
}

impl FieldSet {
    /// Whether the set holds no path.
    pub fn is_empty(&self) -> bool {
        self.members.is_empty() && self.children.values().all(FieldSet::is_empty)
    }

    /// Adds `path` (not empty).
    pub fn insert(&mut self, path: &[PathElement]) {
        match path {
            [] => {}
            [last] => {
                self.members.insert(last.clone());
            }
            [first, rest @ ..] => self.children.entry(first.clone()).or_default().insert(rest),
        }
    }

    /// Whether `path` is in the set.
    pub fn contains(&self, path: &[PathElement]) -> bool {
        match path {
            [] => false,
            [last] => self.members.contains(last),
            [first, rest @ ..] => self.children.get(first).is_some_and(|c| c.contains(rest)),
        }
    }

    /// Whether `pe` (one element, relative to this set) is a member.
    pub fn has_member(&self, pe: &PathElement) -> bool {
        self.members.contains(pe)
    }

    /// The set below `pe`, if it has owned descendants there.
    pub fn below(&self, pe: &PathElement) -> Option<&FieldSet> {
        self.children.get(pe).filter(|c| !c.is_empty())
    }

    /// The set without `pe` (one top-level element) and everything below it.
    pub fn without(&self, pe: &PathElement) -> FieldSet {
        let mut out = self.clone();
        out.members.remove(pe);
        out.children.remove(pe);
        out
    }

    /// Without `path` (not empty), nor what is below it.
    pub fn without_path(&self, path: &[PathElement]) -> FieldSet {
        match path {
            [] => self.clone(),
            [last] => self.without(last),
            [first, rest @ ..] => {
                let mut out = self.clone();
                if let Some(c) = out.children.get_mut(first) {
                    *c = c.without_path(rest);
                    if c.is_empty() {
                        out.children.remove(first);
                    }
                }
                out
            }
        }
    }

    /// Only `pe` (one top-level element) and what is below it.
    pub fn only(&self, pe: &PathElement) -> FieldSet {
        let mut out = FieldSet::default();
        if self.members.contains(pe) {
            out.members.insert(pe.clone());
        }
        if let Some(c) = self.children.get(pe) {
            out.children.insert(pe.clone(), c.clone());
        }
        out
    }

    /// Every path, as structured-merge-diff iterates them: at each level the members first,
    /// then what is below each child (the order conflicts are reported in).
    pub fn iterate(&self) -> Vec<Vec<PathElement>> {
        let mut out = Vec::new();
        self.iterate_into(&mut Vec::new(), &mut out);
        out
    }

    fn iterate_into(&self, prefix: &mut Vec<PathElement>, out: &mut Vec<Vec<PathElement>>) {
        for pe in &self.members {
            prefix.push(pe.clone());
            out.push(prefix.clone());
            prefix.pop();
        }
        for (pe, c) in &self.children {
            prefix.push(pe.clone());
            c.iterate_into(prefix, out);
            prefix.pop();
        }
    }

    /// Every path in the set, in order (a member before its descendants).
    pub fn paths(&self) -> Vec<Vec<PathElement>> {
        let mut out = Vec::new();
        self.walk(&mut Vec::new(), &mut out);
        out
    }

    fn walk(&self, prefix: &mut Vec<PathElement>, out: &mut Vec<Vec<PathElement>>) {
        let keys: BTreeSet<&PathElement> = self.members.iter().chain(self.children.keys()).collect();
        for pe in keys {
            prefix.push(pe.clone());
            if self.members.contains(pe) {
                out.push(prefix.clone());
            }
            if let Some(c) = self.children.get(pe) {
                c.walk(prefix, out);
            }
            prefix.pop();
        }
    }

    /// The paths in either set.
    pub fn union(&self, other: &FieldSet) -> FieldSet {
        let mut out = self.clone();
        out.members.extend(other.members.iter().cloned());
        for (pe, c) in &other.children {
            let merged = match out.children.get(pe) {
                Some(mine) => mine.union(c),
                None => c.clone(),
            };
            out.children.insert(pe.clone(), merged);
        }
        out
    }

    /// The paths in this set and not in `other`.
    pub fn difference(&self, other: &FieldSet) -> FieldSet {
        let members = self.members.difference(&other.members).cloned().collect();
        let children = self
            .children
            .iter()
            .map(|(pe, c)| (pe.clone(), other.children.get(pe).map_or_else(|| c.clone(), |o| c.difference(o))))
            .filter(|(_, c)| !c.is_empty())
            .collect();
        FieldSet { members, children }
    }

    /// Removes the paths of `other` from this set: [`FieldSet::difference`] in place, copying
    /// nothing that stays.
    pub fn subtract(&mut self, other: &FieldSet) {
        if other.is_empty() {
            return;
        }
        for pe in &other.members {
            self.members.remove(pe);
        }
        self.children.retain(|pe, c| {
            if let Some(o) = other.children.get(pe) {
                c.subtract(o);
            }
            !c.is_empty()
        });
    }

    /// Removes `path` (not empty) and what is below it: [`FieldSet::without_path`] in place.
    pub fn remove_path(&mut self, path: &[PathElement]) {
        match path {
            [] => {}
            [last] => {
                self.members.remove(last);
                self.children.remove(last);
            }
            [first, rest @ ..] => {
                if let Some(c) = self.children.get_mut(first) {
                    c.remove_path(rest);
                    if c.is_empty() {
                        self.children.remove(first);
                    }
                }
            }
        }
    }

    /// The paths in both sets.
    pub fn intersection(&self, other: &FieldSet) -> FieldSet {
        let members = self.members.intersection(&other.members).cloned().collect();
        let children = self
            .children
            .iter()
            .filter_map(|(pe, c)| Some((pe.clone(), c.intersection(other.children.get(pe)?))))
            .filter(|(_, c)| !c.is_empty())
            .collect();
        FieldSet { members, children }
    }

    /// The set as `FieldsV1` JSON, byte for byte as kube writes it.
    pub fn to_fields_v1(&self) -> String {
        let mut out = String::from("{");
        self.emit(false, &mut out);
        out.push('}');
        out
    }

    /// [`FieldSet::to_fields_v1`] as the JSON value it reads as, built without the text.
    pub fn to_fields_v1_value(&self) -> Value {
        Value::Object(self.emit_map(false))
    }

    fn emit_map(&self, include_self: bool) -> Map<String, Value> {
        let keys: BTreeSet<&PathElement> = self.members.iter().chain(self.children.keys()).collect();
        let mut out = Map::new();
        if include_self && !keys.is_empty() {
            out.insert(".".into(), Value::Object(Map::new()));
        }
        for pe in keys {
            let below = match self.children.get(pe) {
                Some(c) => c.emit_map(self.members.contains(pe)),
                None => Map::new(),
            };
            out.insert(pe.encode(), Value::Object(below));
        }
        out
    }

    fn emit(&self, include_self: bool, out: &mut String) {
        let keys: BTreeSet<&PathElement> = self.members.iter().chain(self.children.keys()).collect();
        let mut first = true;
        // The element's own marker comes first (structured-merge-diff since 2020, kube 1.18).
        if include_self && !keys.is_empty() {
            out.push_str("\".\":{}");
            first = false;
        }
        for pe in keys {
            if !first {
                out.push(',');
            }
            first = false;
            out.push_str(&go_json(&Value::String(pe.encode())));
            out.push_str(":{");
            if let Some(c) = self.children.get(pe) {
                c.emit(self.members.contains(pe), out);
            }
            out.push('}');
        }
    }

    /// The fields an applied configuration sets, as structured-merge-diff counts them against
    /// the kind's schema: a scalar, an atomic list or map (`x-kubernetes-list-type` or
    /// `x-kubernetes-map-type: atomic`) is owned whole; each element of an associative list
    /// (`k:` by its keys) or a set (`v:`) is owned and descended into; each entry of a map (a key
    /// the schema does not declare) is owned; a declared field holding a struct is owned only
    /// through its leaves. Where the schema is silent (no node, preserved unknown fields) maps
    /// are maps and lists are atomic.
    pub fn of_applied(value: &Value, node: Option<Node<'_>>) -> FieldSet {
        typed::field_set(value, node)
    }

    /// Reads a set from `FieldsV1` JSON; elements of kinds this version does not know are
    /// dropped, as kube drops them.
    pub fn from_fields_v1(fields: &Value) -> Result<FieldSet, String> {
        let Value::Object(map) = fields else { return Err("FieldsV1 must be a JSON object".into()) };
        let mut set = FieldSet::default();
        for (key, sub) in map {
            if key == "." {
                continue;
            }
            let Some(pe) = PathElement::decode(key)? else { continue };
            let Value::Object(inner) = sub else { return Err(format!("{key:?}: must map to a JSON object")) };
            let child = FieldSet::from_fields_v1(sub)?;
            if inner.is_empty() || inner.contains_key(".") {
                set.members.insert(pe.clone());
            }
            if !child.is_empty() {
                set.children.insert(pe, child);
            }
        }
        Ok(set)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn f(name: &str) -> PathElement {
        PathElement::Field(name.to_string())
    }

    #[test]
    fn elements_order_as_structured_merge_diff_orders_them() {
        let key = |n: &str| PathElement::key(vec![("name".into(), json!(n))]);
        let mut v = [PathElement::Index(0), PathElement::Value(json!("a")), key("b"), key("a"), f("z"), f("a")];
        v.sort();
        let encoded: Vec<String> = v.iter().map(PathElement::encode).collect();
        assert_eq!(encoded, ["f:a", "f:z", r#"k:{"name":"a"}"#, r#"k:{"name":"b"}"#, r#"v:"a""#, "i:0"]);
        // Values by kind first (numbers, strings, booleans), then within a kind.
        let mut values = [json!(true), json!("x"), json!(10), json!(9.5), json!(2)];
        values.sort_by(compare_values);
        assert_eq!(values, [json!(2), json!(9.5), json!(10), json!("x"), json!(true)]);
    }

    #[test]
    fn a_key_is_written_with_its_fields_sorted_and_go_escaping() {
        let pe = PathElement::key(vec![("protocol".into(), json!("TCP")), ("containerPort".into(), json!(80))]);
        assert_eq!(pe.encode(), r#"k:{"containerPort":80,"protocol":"TCP"}"#);
        assert_eq!(PathElement::Value(json!("a<b&c")).encode(), r#"v:"a\u003cb\u0026c""#);
    }

    #[test]
    fn fields_v1_is_written_in_kube_order_with_the_self_marker_first() {
        // A Deployment's spec as kubectl apply --server-side records it.
        let container = PathElement::key(vec![("name".into(), json!("nginx"))]);
        let port = PathElement::key(vec![("containerPort".into(), json!(80)), ("protocol".into(), json!("TCP"))]);
        let base = [f("spec"), f("template"), f("spec"), f("containers"), container.clone()];
        let mut set = FieldSet::default();
        set.insert(&[f("spec"), f("replicas")]);
        set.insert(&base);
        set.insert(&[&base[..], &[f("image")]].concat());
        set.insert(&[&base[..], &[f("name")]].concat());
        set.insert(&[&base[..], &[f("ports")]].concat());
        set.insert(&[&base[..], &[f("ports"), port.clone()]].concat());
        set.insert(&[&base[..], &[f("ports"), port, f("containerPort")]].concat());
        let text = set.to_fields_v1();
        assert_eq!(
            text,
            r#"{"f:spec":{"f:replicas":{},"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"nginx\"}":{".":{},"f:image":{},"f:name":{},"f:ports":{".":{},"k:{\"containerPort\":80,\"protocol\":\"TCP\"}":{".":{},"f:containerPort":{}}}}}}}}}"#
        );
        // Read back, it is the same set, whatever order the JSON object came in.
        let back = FieldSet::from_fields_v1(&serde_json::from_str(&text).unwrap()).unwrap();
        assert_eq!(back, set);
        assert_eq!(back.to_fields_v1(), text);
    }

    #[test]
    fn set_algebra_works_path_by_path() {
        let mut a = FieldSet::default();
        a.insert(&[f("spec"), f("replicas")]);
        a.insert(&[f("spec"), f("paused")]);
        let mut b = FieldSet::default();
        b.insert(&[f("spec"), f("replicas")]);
        b.insert(&[f("metadata"), f("labels"), f("app")]);
        assert_eq!(a.intersection(&b).paths(), [vec![f("spec"), f("replicas")]]);
        assert_eq!(a.difference(&b).paths(), [vec![f("spec"), f("paused")]]);
        let u = a.union(&b);
        assert_eq!(u.paths().len(), 3);
        assert!(u.contains(&[f("metadata"), f("labels"), f("app")]));
        assert!(!u.contains(&[f("metadata"), f("labels")]), "an ancestor is not a member by itself");
        assert!(a.difference(&a).is_empty());
        let mut in_place = a.clone();
        in_place.subtract(&b);
        assert_eq!(in_place, a.difference(&b));
        let mut cut = a.clone();
        cut.remove_path(&[f("spec")]);
        assert_eq!(cut, a.without_path(&[f("spec")]));
    }

    #[test]
    fn unknown_kinds_are_dropped_and_malformed_ones_refused() {
        let set = FieldSet::from_fields_v1(&json!({"f:a": {}, "x:future": {}})).unwrap();
        assert_eq!(set.paths(), [vec![f("a")]]);
        assert!(FieldSet::from_fields_v1(&json!({"name": {}})).unwrap_err().contains("not a path element"));
        assert!(FieldSet::from_fields_v1(&json!({"k:[1]": {}})).unwrap_err().contains("a key is a JSON object"));
        assert!(FieldSet::from_fields_v1(&json!({"i:x": {}})).is_err());
        assert!(FieldSet::from_fields_v1(&json!({"f:a": 1})).is_err());
    }
}
