//! Structural pruning as apiextensions' decoder applies it to a custom resource
//! (`unstructuredSchemaCoercer.apply`), in kube's order:
//!
//! 1. the root `metadata` round-trips through `ObjectMeta` (unknown fields `metadata.foo`);
//! 2. `pruning.PruneWithOptions` with the root treated as an embedded resource (its
//!    `apiVersion`, `kind`, `metadata` are kept whatever the schema says);
//! 3. `PruneNonNullableNullsWithoutDefaults`: a `null` where the schema is neither nullable
//!    nor defaulted is removed (a defaulted one is left for defaulting to replace);
//! 4. `objectmeta.Coerce`: each embedded resource's `metadata` round-trips through
//!    `ObjectMeta`.
//!
//! The paths of steps 2 and 4 are each sorted, as kube sorts them; map values are named with
//! dots (`spec.labels.key.foo`) in step 2, with brackets in step 4 (`spec.m[key].metadata.x`),
//! as kube names them.

use apimachinery::validation::field::Path;
use serde_json::Value;

use super::MAX_DEPTH;
use super::node::{Additional, Node, field_schema};
use super::objectmeta;

/// The fields an embedded resource (and the root) keeps without the schema declaring them.
const META_FIELDS: [&str; 3] = ["apiVersion", "kind", "metadata"];

pub(crate) fn prune_all(s: Option<Node<'_>>, obj: &mut Value) -> Vec<String> {
    let mut unknown = Vec::new();
    if let Some(meta) = obj.get_mut("metadata") {
        objectmeta::coerce(meta, "metadata", &mut unknown);
    }
    let mut pruned = Vec::new();
    prune(obj, s, true, &mut String::new(), &mut pruned, 0);
    pruned.sort();
    unknown.extend(pruned);
    prune_nulls(obj, s, 0);
    let mut coerced = Vec::new();
    coerce_embedded(obj, s, &Path::new(""), &mut coerced, 0);
    coerced.sort();
    unknown.extend(coerced);
    unknown
}

fn append_key(path: &mut String, key: &str) {
    if !path.is_empty() {
        path.push('.');
    }
    path.push_str(key);
}

fn record(path: &str, key: &str, out: &mut Vec<String>) {
    out.push(if path.is_empty() { key.to_string() } else { format!("{path}.{key}") });
}

/// kube's `prune`. `root` stands for the embedded-resource flag kube sets on the root's schema.
fn prune(x: &mut Value, s: Option<Node<'_>>, root: bool, path: &mut String, out: &mut Vec<String>, depth: usize) {
    if depth > MAX_DEPTH {
        // Deeper than the bound: left as is (validation rejects such objects).
        return;
    }
    if let Some(s) = s.filter(Node::preserve_unknown_fields) {
        return skip_prune(x, s, root, path, out, depth);
    }
    let base = path.len();
    match x {
        Value::Object(m) => {
            if s.is_none() && !root {
                for k in std::mem::take(m).keys() {
                    record(path, k, out);
                }
                return;
            }
            let embedded = root || s.is_some_and(|s| s.embedded_resource());
            let keys: Vec<String> = m.keys().cloned().collect();
            for k in keys {
                if embedded && META_FIELDS.contains(&k.as_str()) {
                    continue;
                }
                let child = match (s.and_then(|s| s.property(&k)), s.map(|s| s.additional())) {
                    (Some(prop), _) => Some(Some(prop)),
                    (None, Some(Additional::Schema(values))) => Some(Some(values)),
                    (None, Some(Additional::Bool(_))) => Some(None),
                    _ => None,
                };
                match child {
                    Some(child) => {
                        append_key(path, &k);
                        if let Some(v) = m.get_mut(&k) {
                            prune(v, child, false, path, out, depth + 1);
                        }
                        path.truncate(base);
                    }
                    None => {
                        m.remove(&k);
                        record(path, &k, out);
                    }
                }
            }
        }
        Value::Array(items) => {
            let item_schema = s.and_then(|s| s.items());
            for (i, v) in items.iter_mut().enumerate() {
                path.push_str(&format!("[{i}]"));
                prune(v, item_schema, false, path, out, depth + 1);
                path.truncate(base);
            }
        }
        _ => {}
    }
}

/// kube's `skipPrune` under `x-kubernetes-preserve-unknown-fields`: unknown fields stay, the
/// declared ones are pruned by their schemas.
fn skip_prune(x: &mut Value, s: Node<'_>, root: bool, path: &mut String, out: &mut Vec<String>, depth: usize) {
    let base = path.len();
    match x {
        Value::Object(m) => {
            let embedded = root || s.embedded_resource();
            for (k, v) in m.iter_mut() {
                if embedded && META_FIELDS.contains(&k.as_str()) {
                    continue;
                }
                let child = match (s.property(k), s.additional()) {
                    (Some(prop), _) => Some(Some(prop)),
                    (None, Additional::Schema(values)) => Some(Some(values)),
                    (None, Additional::Bool(_)) => Some(None),
                    (None, Additional::Absent) => None,
                };
                if let Some(child) = child {
                    append_key(path, k);
                    prune(v, child, false, path, out, depth + 1);
                    path.truncate(base);
                }
            }
        }
        Value::Array(items) => {
            let Some(item_schema) = s.items() else { return };
            for (i, v) in items.iter_mut().enumerate() {
                path.push_str(&format!("[{i}]"));
                if depth < MAX_DEPTH {
                    skip_prune(v, item_schema, false, path, out, depth + 1);
                }
                path.truncate(base);
            }
        }
        _ => {}
    }
}

/// `PruneNonNullableNullsWithoutDefaults`.
fn prune_nulls(x: &mut Value, s: Option<Node<'_>>, depth: usize) {
    if depth > MAX_DEPTH {
        return;
    }
    match x {
        Value::Object(m) => {
            m.retain(|k, v| {
                let fs = field_schema(s, k);
                let drop = v.is_null() && fs.is_some_and(|f| !f.nullable() && f.default().is_none());
                if !drop {
                    prune_nulls(v, fs, depth + 1);
                }
                !drop
            });
        }
        Value::Array(items) => {
            let item_schema = s.and_then(|s| s.items());
            for v in items {
                prune_nulls(v, item_schema, depth + 1);
            }
        }
        _ => {}
    }
}

/// `objectmeta.Coerce` below the root (the root's own metadata went first).
fn coerce_embedded(x: &mut Value, s: Option<Node<'_>>, p: &Path, out: &mut Vec<String>, depth: usize) {
    let Some(s) = s else { return };
    if depth > MAX_DEPTH {
        return;
    }
    match x {
        Value::Object(m) => {
            if s.embedded_resource()
                && let Some(meta) = m.get_mut("metadata")
            {
                objectmeta::coerce(meta, p.child("metadata").as_str(), out);
            }
            for (k, v) in m.iter_mut() {
                if let Some(prop) = s.property(k) {
                    coerce_embedded(v, Some(prop), &p.child(k), out, depth + 1);
                } else if !matches!(s.additional(), Additional::Absent) {
                    coerce_embedded(v, s.additional_schema(), &p.key(k), out, depth + 1);
                }
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter_mut().enumerate() {
                coerce_embedded(v, s.items(), &p.index(i), out, depth + 1);
            }
        }
        _ => {}
    }
}
