//! `flowcontrol.apiserver.k8s.io/v1` defaults (`pkg/apis/flowcontrol/v1/defaults.go`).
//!
//! In v1 `limited.nominalConcurrencyShares` is a pointer: only an absent (or `null`) value
//! becomes 30, an explicit 0 stays 0 (v1beta3 needs an annotation to tell the two apart).

use serde_json::{Value, json};

use super::{child_obj, set_if_unset};

/// Sets an integer member that is absent, `null` or 0 (a Go `int32` field's zero value).
fn set_if_zero(m: &mut serde_json::Map<String, Value>, key: &str, value: i64) {
    if m.get(key).is_none_or(|v| v.is_null() || v.as_i64() == Some(0)) {
        m.insert(key.to_string(), json!(value));
    }
}

/// FlowSchema: `matchingPrecedence` 1000 when zero (the spec is a struct, always defaulted).
pub fn default_flow_schema(obj: &mut Value) {
    let Some(o) = obj.as_object_mut() else { return };
    set_if_zero(child_obj(o, "spec"), "matchingPrecedence", 1000);
}

/// PriorityLevelConfiguration: a limited level's shares (30), lendable percent (0) and queuing
/// (64 queues, hand size 8, queue length limit 50); an exempt level's shares and lendable
/// percent (0).
pub fn default_priority_level_configuration(obj: &mut Value) {
    if let Some(exempt) = obj.pointer_mut("/spec/exempt").and_then(Value::as_object_mut) {
        set_if_unset(exempt, "nominalConcurrencyShares", json!(0));
        set_if_unset(exempt, "lendablePercent", json!(0));
    }
    let Some(limited) = obj.pointer_mut("/spec/limited").and_then(Value::as_object_mut) else { return };
    set_if_unset(limited, "nominalConcurrencyShares", json!(30));
    set_if_unset(limited, "lendablePercent", json!(0));
    if let Some(q) =
        limited.get_mut("limitResponse").and_then(|lr| lr.get_mut("queuing")).and_then(Value::as_object_mut)
    {
        set_if_zero(q, "handSize", 8);
        set_if_zero(q, "queues", 64);
        set_if_zero(q, "queueLengthLimit", 50);
    }
}
