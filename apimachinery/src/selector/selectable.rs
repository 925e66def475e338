//! How selectable field values are rendered, as kube's per-kind `ToSelectableFields` renders
//! them: strings as they are, booleans and numbers printed, a missing field `""` (a missing
//! boolean `false`). Each kind's strategy lists its fields with these.

use serde_json::Value;

use crate::object::field;

/// A field's value as text (`""` when absent).
pub fn text(obj: &Value, path: &str) -> String {
    match field(obj, path) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Bool(b)) => b.to_string(),
        Some(Value::Number(n)) => n.to_string(),
        _ => String::new(),
    }
}

/// A boolean field's value as text (`false` when absent, as an unset Go bool).
pub fn flag(obj: &Value, path: &str) -> String {
    field(obj, path).and_then(Value::as_bool).unwrap_or(false).to_string()
}
