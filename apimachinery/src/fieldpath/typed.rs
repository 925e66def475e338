//! Walks of an object in step with its kind's schema, as structured-merge-diff walks typed
//! values: the field set a value holds, the merge of an applied configuration into a live
//! object, the comparison of two objects, and the removal of a set's fields.
//!
//! The schema decides how a list's elements are told apart (`x-kubernetes-list-type`, else the
//! strategic-merge markers kube derives it from) and whether a map is one value
//! (`x-kubernetes-map-type: atomic`); where it is silent, maps are granular and lists atomic.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

use super::{FieldSet, PathElement};
use crate::schema::Node;

/// How a list's elements are told apart.
enum ListKind<'a> {
    Atomic,
    Set,
    Map(Vec<&'a str>),
}

/// A list's kind: its `x-kubernetes-list-type`, else what its strategic-merge markers imply
/// (merge with a key: a map by that key; merge without: a set), else atomic.
fn list_kind<'a>(node: Option<Node<'a>>) -> ListKind<'a> {
    let Some(node) = node else { return ListKind::Atomic };
    match node.list_type() {
        Some("map") => ListKind::Map(node.list_map_keys()),
        Some("set") => ListKind::Set,
        Some(_) => ListKind::Atomic,
        None => {
            match (node.patch_strategy().is_some_and(|s| s.split(',').any(|s| s == "merge")), node.patch_merge_key()) {
                (true, Some(key)) => ListKind::Map(vec![key]),
                (true, None) => ListKind::Set,
                _ => ListKind::Atomic,
            }
        }
    }
}

fn map_is_atomic(node: Option<Node<'_>>) -> bool {
    node.and_then(|n| n.extension("x-kubernetes-map-type")).and_then(Value::as_str) == Some("atomic")
}

/// The schema of map entry `key`, and whether the schema declares it as a struct field.
fn field_node<'a>(node: Option<Node<'a>>, key: &str) -> (Option<Node<'a>>, bool) {
    let declared = node.and_then(|n| n.property(key));
    (declared.or_else(|| node.and_then(|n| n.additional_properties())), declared.is_some())
}

/// The schema below `pe`.
fn child_node<'a>(node: Option<Node<'a>>, pe: &PathElement) -> Option<Node<'a>> {
    match pe {
        PathElement::Field(name) => field_node(node, name).0,
        _ => node.and_then(|n| n.items()),
    }
}

/// The path element naming `item`, element `index` of a list of kind `kind`.
fn item_element(kind: &ListKind<'_>, items_node: Option<Node<'_>>, index: usize, item: &Value) -> PathElement {
    match kind {
        ListKind::Atomic => PathElement::Index(index),
        ListKind::Set => PathElement::Value(item.clone()),
        ListKind::Map(keys) => {
            // A key field left out takes its schema default, as kube completes it.
            let fields = keys
                .iter()
                .filter_map(|k| {
                    let given = item.get(*k).filter(|v| !v.is_null()).cloned();
                    let default = || items_node?.property(k)?.extension("default").cloned();
                    Some((k.to_string(), given.or_else(default)?))
                })
                .collect();
            PathElement::key(fields)
        }
    }
}

/// The field set of `value` (structured-merge-diff's `ToFieldSet`): see
/// [`FieldSet::of_applied`].
pub(super) fn field_set(value: &Value, node: Option<Node<'_>>) -> FieldSet {
    let mut set = FieldSet::default();
    walk_set(value, node, &mut Vec::new(), &mut set);
    set
}

fn walk_set(value: &Value, node: Option<Node<'_>>, path: &mut Vec<PathElement>, set: &mut FieldSet) {
    match value {
        Value::Object(map) => {
            if map_is_atomic(node) {
                set.insert(path);
                return;
            }
            for (key, child) in map {
                let (child_node, declared) = field_node(node, key);
                path.push(PathElement::Field(key.clone()));
                walk_set(child, child_node, path, set);
                let empty = child.is_null() || child.as_object().is_some_and(Map::is_empty);
                if empty || !declared {
                    set.insert(path);
                }
                path.pop();
            }
        }
        Value::Array(items) => {
            let kind = list_kind(node);
            if matches!(kind, ListKind::Atomic) {
                set.insert(path);
                return;
            }
            let items_node = node.and_then(|n| n.items());
            let elements: Vec<PathElement> =
                items.iter().enumerate().map(|(i, item)| item_element(&kind, items_node, i, item)).collect();
            let mut seen = BTreeSet::new();
            let duplicated: BTreeSet<&PathElement> = elements.iter().filter(|pe| !seen.insert(*pe)).collect();
            for (pe, item) in elements.iter().zip(items) {
                path.push(pe.clone());
                // A duplicated element is owned whole: it cannot be told apart to descend.
                if !duplicated.contains(pe) {
                    walk_set(item, items_node, path, set);
                }
                set.insert(path);
                path.pop();
            }
        }
        _ => set.insert(path),
    }
}

/// Checks that `value` is a valid typed object, as structured-merge-diff's conversion of an
/// apply configuration does: every field is declared where the schema declares a struct's
/// fields, every element of an associative list has its key fields (or their defaults), and
/// no list repeats a key or a set a value. The error lists each problem with its path, worded
/// as structured-merge-diff words it.
pub fn check_keys(value: &Value, node: Option<Node<'_>>) -> Result<(), String> {
    let mut errors = Vec::new();
    walk_keys(value, node, &mut Vec::new(), &mut errors);
    match errors.len() {
        0 => Ok(()),
        1 => Err(errors.remove(0)),
        _ => Err(format!("errors:\n  {}", errors.join("\n  "))),
    }
}

fn walk_keys(value: &Value, node: Option<Node<'_>>, path: &mut Vec<PathElement>, errors: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            if map_is_atomic(node) {
                return;
            }
            let closed = node.is_some_and(|n| n.raw().get("properties").is_some() && !n.preserves_unknown_fields());
            for (key, child) in map {
                path.push(PathElement::Field(key.clone()));
                let child_node = field_node(node, key).0;
                if closed && child_node.is_none() {
                    errors.push(format!("{}: field not declared in schema", display_path(path)));
                } else {
                    walk_keys(child, child_node, path, errors);
                }
                path.pop();
            }
        }
        Value::Array(items) => {
            let kind = list_kind(node);
            if matches!(kind, ListKind::Atomic) {
                return;
            }
            let items_node = node.and_then(|n| n.items());
            let mut seen = BTreeSet::new();
            for (i, item) in items.iter().enumerate() {
                if let ListKind::Map(keys) = &kind {
                    let missing = keys.iter().find(|k| {
                        item.get(**k).is_none_or(Value::is_null)
                            && items_node.and_then(|n| n.property(k)).and_then(|n| n.extension("default")).is_none()
                    });
                    if let Some(k) = missing {
                        errors.push(format!(
                            "{}: element {i}: associative list with keys has an element that omits key field {} (and doesn't have default value)",
                            display_path(path),
                            crate::gofmt::quote(k)
                        ));
                        continue;
                    }
                }
                let pe = item_element(&kind, items_node, i, item);
                if !seen.insert(pe.clone()) {
                    errors.push(format!("{}: duplicate entries for key {}", display_path(path), display_element(&pe)));
                    continue;
                }
                path.push(pe);
                walk_keys(item, items_node, path, errors);
                path.pop();
            }
        }
        _ => {}
    }
}

/// `config` merged into `live` (structured-merge-diff's `Merge`): scalars, atomic lists and
/// atomic maps are replaced by the config's; maps merge key by key; associative lists and sets
/// merge element by element, in an order that keeps the config's elements in its order and
/// the live-only elements where they were.
///
/// Fails when the configuration repeats a list element's key.
pub fn merge(live: &Value, config: &Value, node: Option<Node<'_>>) -> Result<Value, String> {
    let mut path = Vec::new();
    Ok(merge_values(Some(live), Some(config), node, &mut path)?.unwrap_or_else(|| Value::Object(Map::new())))
}

fn both_empty(l: Option<&Value>, r: Option<&Value>) -> bool {
    let empty = |v: Option<&Value>| match v {
        None | Some(Value::Null) => true,
        Some(Value::Object(m)) => m.is_empty(),
        Some(Value::Array(a)) => a.is_empty(),
        _ => false,
    };
    empty(l) && empty(r)
}

fn merge_values(
    lhs: Option<&Value>,
    rhs: Option<&Value>,
    node: Option<Node<'_>>,
    path: &mut Vec<PathElement>,
) -> Result<Option<Value>, String> {
    match (lhs, rhs) {
        (Some(Value::Object(l)), Some(Value::Object(r))) if !map_is_atomic(node) && !both_empty(lhs, rhs) => {
            let mut out = Map::new();
            for (key, lv) in l {
                let child = field_node(node, key).0;
                path.push(PathElement::Field(key.clone()));
                if let Some(v) = merge_values(Some(lv), r.get(key), child, path)? {
                    out.insert(key.clone(), v);
                }
                path.pop();
            }
            for (key, rv) in r.iter().filter(|(k, _)| !l.contains_key(*k)) {
                let child = field_node(node, key).0;
                path.push(PathElement::Field(key.clone()));
                if let Some(v) = merge_values(None, Some(rv), child, path)? {
                    out.insert(key.clone(), v);
                }
                path.pop();
            }
            Ok(Some(Value::Object(out)))
        }
        (Some(Value::Array(l)), Some(Value::Array(r)))
            if !matches!(list_kind(node), ListKind::Atomic) && !both_empty(lhs, rhs) =>
        {
            merge_lists(l, r, node, path).map(Some)
        }
        (_, Some(r)) => Ok(Some(r.clone())),
        (Some(l), None) => Ok(Some(l.clone())),
        (None, None) => Ok(None),
    }
}

fn merge_lists(
    lhs: &[Value],
    rhs: &[Value],
    node: Option<Node<'_>>,
    path: &mut Vec<PathElement>,
) -> Result<Value, String> {
    let kind = list_kind(node);
    let items_node = node.and_then(|n| n.items());
    let rhs_pes: Vec<PathElement> =
        rhs.iter().enumerate().map(|(i, v)| item_element(&kind, items_node, i, v)).collect();
    let mut observed_rhs: BTreeMap<&PathElement, &Value> = BTreeMap::new();
    for (pe, v) in rhs_pes.iter().zip(rhs) {
        if observed_rhs.insert(pe, v).is_some() {
            return Err(format!("{}: duplicate entries for key {}", display_path(path), display_element(pe)));
        }
    }
    let lhs_pes: Vec<PathElement> =
        lhs.iter().enumerate().map(|(i, v)| item_element(&kind, items_node, i, v)).collect();
    // A live element whose key repeats is not merged with the config's (kube keeps such lists
    // readable; `None` marks the duplicate).
    let mut observed_lhs: BTreeMap<&PathElement, Option<&Value>> = BTreeMap::new();
    for (pe, v) in lhs_pes.iter().zip(lhs) {
        observed_lhs.entry(pe).and_modify(|seen| *seen = None).or_insert(Some(v));
    }
    let mut shared = rhs_pes.iter().filter(|pe| observed_lhs.contains_key(pe));
    let mut next_shared = shared.next();
    let mut merged_rhs: BTreeSet<&PathElement> = BTreeSet::new();
    let mut out = Vec::with_capacity(lhs.len().max(rhs.len()));
    let (mut li, mut ri) = (0, 0);
    let mut push = |pe: &PathElement, l: Option<&Value>, r: Option<&Value>, out: &mut Vec<Value>| {
        path.push(pe.clone());
        let merged = merge_values(l, r, items_node, path);
        path.pop();
        if let Some(v) = merged? {
            out.push(v);
        }
        Ok::<(), String>(())
    };
    while li < lhs_pes.len() || ri < rhs_pes.len() {
        if li < lhs_pes.len() && ri < rhs_pes.len() {
            let pe = &lhs_pes[li];
            if *pe == rhs_pes[ri] {
                merged_rhs.insert(pe);
                push(pe, observed_lhs[pe], observed_rhs.get(pe).copied(), &mut out)?;
                li += 1;
                ri += 1;
                next_shared = shared.next();
                continue;
            }
            if observed_rhs.contains_key(pe) && next_shared.is_some_and(|n| n != pe) {
                // A shared element, but not the one this round wants.
                li += 1;
                continue;
            }
        }
        if li < lhs_pes.len() {
            let pe = &lhs_pes[li];
            if !observed_rhs.contains_key(pe) {
                push(pe, Some(&lhs[li]), None, &mut out)?;
                li += 1;
                continue;
            } else if merged_rhs.contains(pe) {
                li += 1;
            }
        }
        if ri < rhs_pes.len() {
            let pe = &rhs_pes[ri];
            merged_rhs.insert(pe);
            let l = observed_lhs.get(pe).copied().flatten();
            push(pe, l, observed_rhs.get(pe).copied(), &mut out)?;
            ri += 1;
            if next_shared == Some(pe) {
                next_shared = shared.next();
            }
        }
    }
    Ok(Value::Array(out))
}

/// A path as structured-merge-diff prints it in errors: `.spec.ports[port=80,protocol="TCP"]`.
pub fn display_path(path: &[PathElement]) -> String {
    path.iter().map(display_element).collect()
}

fn display_element(pe: &PathElement) -> String {
    match pe {
        PathElement::Field(name) => format!(".{name}"),
        PathElement::Key(fields) => {
            let parts: Vec<String> = fields.iter().map(|(k, v)| format!("{k}={}", crate::gofmt::go_json(v))).collect();
            format!("[{}]", parts.join(","))
        }
        PathElement::Value(v) => format!("[={}]", crate::gofmt::go_json(v)),
        PathElement::Index(i) => format!("[{i}]"),
    }
}

/// What changed between two objects, field by field.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Comparison {
    /// Fields in the old object only.
    pub removed: FieldSet,
    /// Fields in both whose values differ.
    pub modified: FieldSet,
    /// Fields in the new object only.
    pub added: FieldSet,
}

/// Compares `old` with `new` (structured-merge-diff's `Compare`): a leaf (scalar, atomic list
/// or map, or a map or list empty on both sides) is added, removed or modified as a whole; a
/// granular map or list that appears or disappears is recorded itself as well as its leaves.
pub fn compare(old: &Value, new: &Value, node: Option<Node<'_>>) -> Comparison {
    let mut cmp = Comparison::default();
    compare_values(Some(old), Some(new), node, &mut Vec::new(), &mut cmp);
    cmp
}

fn compare_values(
    lhs: Option<&Value>,
    rhs: Option<&Value>,
    node: Option<Node<'_>>,
    path: &mut Vec<PathElement>,
    cmp: &mut Comparison,
) {
    // Equal values hold no difference at any depth: most of a write's object is as it was.
    if let (Some(l), Some(r)) = (lhs, rhs)
        && l == r
    {
        return;
    }
    let is = |v: Option<&Value>, want: fn(&Value) -> bool| v.is_none_or(|v| v.is_null() || want(v));
    let granular_map = is(lhs, Value::is_object)
        && is(rhs, Value::is_object)
        && !map_is_atomic(node)
        && !both_empty(lhs, rhs)
        && (lhs.is_some_and(Value::is_object) || rhs.is_some_and(Value::is_object));
    let granular_list = is(lhs, Value::is_array)
        && is(rhs, Value::is_array)
        && !matches!(list_kind(node), ListKind::Atomic)
        && !both_empty(lhs, rhs)
        && (lhs.is_some_and(Value::is_array) || rhs.is_some_and(Value::is_array));
    if granular_map {
        let empty = Map::new();
        let l = lhs.and_then(Value::as_object).unwrap_or(&empty);
        let r = rhs.and_then(Value::as_object).unwrap_or(&empty);
        let keys: BTreeSet<&String> = l.keys().chain(r.keys()).collect();
        let in_metadata = matches!(path.as_slice(), [PathElement::Field(f)] if f == "metadata");
        for key in keys {
            if in_metadata && key == "managedFields" {
                // The bookkeeping itself, which the field manager rewrites, is nobody's field.
                continue;
            }
            path.push(PathElement::Field(key.clone()));
            compare_values(l.get(key), r.get(key), field_node(node, key).0, path, cmp);
            path.pop();
        }
    } else if granular_list {
        compare_lists(lhs.and_then(Value::as_array), rhs.and_then(Value::as_array), node, path, cmp);
    } else {
        // A leaf.
        match (lhs, rhs) {
            (None, _) => cmp.added.insert(path),
            (_, None) => cmp.removed.insert(path),
            (Some(l), Some(r)) if l != r => cmp.modified.insert(path),
            _ => {}
        }
        return;
    }
    match (lhs, rhs) {
        (None, _) => cmp.added.insert(path),
        (_, None) => cmp.removed.insert(path),
        _ => {}
    }
}

fn compare_lists(
    lhs: Option<&Vec<Value>>,
    rhs: Option<&Vec<Value>>,
    node: Option<Node<'_>>,
    path: &mut Vec<PathElement>,
    cmp: &mut Comparison,
) {
    let kind = list_kind(node);
    let items_node = node.and_then(|n| n.items());
    let mut order: Vec<PathElement> = Vec::new();
    let mut l_values: BTreeMap<PathElement, Vec<&Value>> = BTreeMap::new();
    for (i, v) in lhs.into_iter().flatten().enumerate() {
        let pe = item_element(&kind, items_node, i, v);
        let entry = l_values.entry(pe.clone()).or_default();
        if entry.is_empty() {
            order.push(pe);
        }
        entry.push(v);
    }
    let mut r_values: BTreeMap<PathElement, Vec<&Value>> = BTreeMap::new();
    for (i, v) in rhs.into_iter().flatten().enumerate() {
        let pe = item_element(&kind, items_node, i, v);
        let entry = r_values.entry(pe.clone()).or_default();
        if entry.is_empty() && !l_values.contains_key(&pe) {
            order.push(pe);
        }
        entry.push(v);
    }
    let none = Vec::new();
    for pe in order {
        let l = l_values.get(&pe).unwrap_or(&none);
        let r = r_values.get(&pe).unwrap_or(&none);
        path.push(pe);
        match (l.len(), r.len()) {
            (0..=1, 0..=1) => compare_values(l.first().copied(), r.first().copied(), items_node, path, cmp),
            (2.., 2..) => {
                if l != r {
                    cmp.modified.insert(path);
                }
            }
            (2.., _) => {
                if let Some(first) = r.first() {
                    compare_values(None, Some(first), items_node, path, cmp);
                }
                cmp.removed.insert(path);
            }
            (_, _) => {
                if let Some(first) = l.first() {
                    compare_values(Some(first), None, items_node, path, cmp);
                }
                cmp.added.insert(path);
            }
        }
        path.pop();
    }
}

/// `value` without the fields of `set` (structured-merge-diff's `RemoveItems`): a member is
/// removed with everything under it; a map or list left empty by the removal goes too, as a
/// typed object drops an empty field.
pub fn remove_items(value: &Value, set: &FieldSet, node: Option<Node<'_>>) -> Value {
    remove(value, set, node).unwrap_or_else(|| Value::Object(Map::new()))
}

fn remove(value: &Value, set: &FieldSet, node: Option<Node<'_>>) -> Option<Value> {
    match value {
        Value::Object(map) => {
            if map.is_empty() || map_is_atomic(node) {
                return None;
            }
            let mut out = Map::new();
            for (key, child) in map {
                let pe = PathElement::Field(key.clone());
                if set.has_member(&pe) {
                    continue;
                }
                match set.below(&pe) {
                    Some(sub) => {
                        if let Some(v) = remove(child, sub, field_node(node, key).0) {
                            out.insert(key.clone(), v);
                        }
                    }
                    None => {
                        out.insert(key.clone(), child.clone());
                    }
                }
            }
            (!out.is_empty()).then_some(Value::Object(out))
        }
        Value::Array(items) => {
            let kind = list_kind(node);
            if items.is_empty() || matches!(kind, ListKind::Atomic) {
                return None;
            }
            let items_node = node.and_then(|n| n.items());
            let mut out = Vec::with_capacity(items.len());
            for (i, item) in items.iter().enumerate() {
                let pe = item_element(&kind, items_node, i, item);
                if set.has_member(&pe) {
                    continue;
                }
                match set.below(&pe) {
                    Some(sub) => out.push(remove(item, sub, items_node).unwrap_or(Value::Null)),
                    None => out.push(item.clone()),
                }
            }
            (!out.is_empty()).then_some(Value::Array(out))
        }
        _ => Some(value.clone()),
    }
}

/// `set` with every declared struct field that has members below it made a member itself
/// (structured-merge-diff's `EnsureNamedFieldsAreMembers`): what pruning compares with, so that
/// a struct someone owns a leaf of is never removed whole.
pub fn with_named_members(set: &FieldSet, node: Option<Node<'_>>) -> FieldSet {
    let mut members = set.members.clone();
    let mut children = BTreeMap::new();
    for (pe, child) in &set.children {
        if let PathElement::Field(name) = pe
            && node.and_then(|n| n.property(name)).is_some()
        {
            members.insert(pe.clone());
        }
        children.insert(pe.clone(), with_named_members(child, child_node(node, pe)));
    }
    FieldSet { members, children }
}
