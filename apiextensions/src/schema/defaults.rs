//! Structural defaulting (apiextensions' `defaulting.Default`): top-down, a property's
//! `default` fills it when missing, or when `null` and the property is not nullable; map values
//! (`additionalProperties`) and array items that are non-nullable `null`s take their schema's
//! default. Defaults are deep copies and are themselves defaulted further down.
//!
//! A `null` with neither `nullable` nor a default is removed by pruning, not here (kube does
//! the same in two steps).

use serde_json::Value;

use super::MAX_DEPTH;
use super::node::Node;

/// A non-nullable `null` under `s` (kube's `isNonNullableNull`).
fn non_nullable_null(x: &Value, s: Option<Node<'_>>) -> bool {
    x.is_null() && s.is_some_and(|s| !s.nullable())
}

pub(crate) fn default(x: &mut Value, s: Option<Node<'_>>, depth: usize) {
    let Some(s) = s else { return };
    if depth > MAX_DEPTH {
        return;
    }
    match x {
        Value::Object(m) => {
            for (k, prop) in s.properties().into_iter().flatten() {
                let Some(prop) = Node::of(prop) else { continue };
                let Some(d) = prop.default() else { continue };
                if m.get(k).is_none_or(|v| non_nullable_null(v, Some(prop))) {
                    m.insert(k.clone(), d.clone());
                }
            }
            let values = s.additional_schema();
            for (k, v) in m.iter_mut() {
                if let Some(prop) = s.property(k) {
                    default(v, Some(prop), depth + 1);
                } else if let Some(values) = values {
                    if non_nullable_null(v, Some(values)) {
                        *v = values.default().cloned().unwrap_or(Value::Null);
                    }
                    default(v, Some(values), depth + 1);
                }
            }
        }
        Value::Array(items) => {
            let item_schema = s.items();
            for v in items {
                if non_nullable_null(v, item_schema) {
                    *v = item_schema.and_then(|i| i.default()).cloned().unwrap_or(Value::Null);
                }
                default(v, item_schema, depth + 1);
            }
        }
        _ => {}
    }
}
