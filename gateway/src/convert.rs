//! Versions served from one store. Events are kept as `core/v1` Events and also served as
//! `events.k8s.io/v1`, whose fields are renamed: requests of that group are converted to the core
//! form on the way in and back on the way out, as kube's conversion does.

use actors::error::ApiError;
use actors::kinds::{self, ResourceDef};
use actors::messages::Target;
use serde_json::{Map, Value};

/// `(events.k8s.io/v1 field, core/v1 field)` pairs.
const EVENT_FIELDS: &[(&str, &str)] = &[
    ("regarding", "involvedObject"),
    ("note", "message"),
    ("reportingController", "reportingComponent"),
    ("deprecatedSource", "source"),
    ("deprecatedFirstTimestamp", "firstTimestamp"),
    ("deprecatedLastTimestamp", "lastTimestamp"),
    ("deprecatedCount", "count"),
];

fn is_events_v1(def: &ResourceDef) -> bool {
    def.group == "events.k8s.io"
}

/// The definition requests for `def` are stored and validated as.
pub fn storage_def(def: &'static ResourceDef) -> &'static ResourceDef {
    if is_events_v1(def) { kinds::find("", "v1", "events").expect("core events are served") } else { def }
}

/// The target requests for `def` are stored under.
pub fn storage_target(def: &ResourceDef, mut target: Target) -> Target {
    if is_events_v1(def) {
        target.group = String::new();
        target.version = "v1".into();
    }
    target
}

fn rename(obj: &Value, pairs: impl Iterator<Item = (&'static str, &'static str)>, api_version: &str) -> Value {
    let Some(map) = obj.as_object() else { return obj.clone() };
    let mut out: Map<String, Value> = map.clone();
    for (from, to) in pairs {
        if let Some(v) = out.remove(from) {
            out.insert(to.to_string(), v);
        }
    }
    out.insert("apiVersion".into(), api_version.into());
    Value::Object(out)
}

/// Converts a request body of `def`'s version into the stored form.
pub fn to_storage(def: &ResourceDef, obj: Value) -> Result<Value, ApiError> {
    if !is_events_v1(def) {
        return Ok(obj);
    }
    let api_version = obj.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    if !api_version.is_empty() && api_version != "events.k8s.io/v1" {
        return Err(ApiError::bad_request(format!(
            "the API version in the data ({api_version}) does not match the expected API version (events.k8s.io/v1)"
        )));
    }
    Ok(rename(&obj, EVENT_FIELDS.iter().copied(), "v1"))
}

/// Converts a stored object into `def`'s version.
pub fn from_storage(def: &ResourceDef, obj: &Value) -> Value {
    if !is_events_v1(def) || obj.get("kind").and_then(Value::as_str) != Some("Event") {
        return obj.clone();
    }
    rename(obj, EVENT_FIELDS.iter().map(|(a, b)| (*b, *a)), "events.k8s.io/v1")
}

/// Whether objects of `def` are served in another form than they are stored (so cached
/// encodings cannot be sent as they are).
pub fn converts(def: &ResourceDef) -> bool {
    is_events_v1(def)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn events_round_trip_between_groups() {
        let v1 = kinds::find("events.k8s.io", "v1", "events").unwrap();
        let e = json!({"apiVersion": "events.k8s.io/v1", "kind": "Event", "note": "hi", "regarding": {"name": "p"}, "reason": "R"});
        let core = to_storage(v1, e.clone()).unwrap();
        assert_eq!(core["message"], "hi");
        assert_eq!(core["involvedObject"]["name"], "p");
        assert_eq!(core["apiVersion"], "v1");
        assert_eq!(from_storage(v1, &core), e);
    }
}
