//! Events, served twice from one store: `v1` Event (kube: `pkg/registry/core/event`) and
//! `events.k8s.io/v1` Event, whose fields are renamed. Both are stored in the core form under
//! `events`; requests of the `events.k8s.io` group are converted on the way in and back on the
//! way out, as kube's conversion does.

use k8s_openapi::api::core::v1::Event as CoreEvent;
use k8s_openapi::api::events::v1::Event as EventsEvent;
use serde_json::{Map, Value};

use crate::error::{ApiError, Cause};
use crate::kinds::{ResourceDef, Strategy};
use crate::selector::FieldLabels;
use crate::selector::selectable::text;
use crate::table::{Printer, printers};
use crate::validation::core;

pub(super) fn core() -> ResourceDef {
    ResourceDef::new("", "v1", "events", "Event", Events { events_group: false })
        .short_names(&["ev"])
        .schema::<CoreEvent>()
}

pub(super) fn events_v1() -> ResourceDef {
    ResourceDef::new("events.k8s.io", "v1", "events", "Event", Events { events_group: true })
        .short_names(&["ev"])
        .stored_as("", "v1")
        .schema::<EventsEvent>()
}

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

struct Events {
    /// Served as `events.k8s.io/v1` (converted), rather than core `v1`.
    events_group: bool,
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

impl Strategy for Events {
    fn validate(&self, _: &ResourceDef, obj: &Value) -> Vec<Cause> {
        core::validate_event(obj, self.events_group)
    }

    fn validate_update(&self, _: &ResourceDef, new: &Value, old: &Value) -> Vec<Cause> {
        core::validate_event_update(new, old, self.events_group)
    }

    fn allow_create_on_update(&self) -> bool {
        true
    }

    fn field_labels(&self) -> &'static FieldLabels {
        if self.events_group { &FieldLabels::EVENTS_V1 } else { &FieldLabels::CORE_EVENTS }
    }

    /// Over the stored (core) form, which both groups select through: every label the core
    /// conversion accepts, `source` being the reporting component when no source is set.
    fn selectable_fields(&self, obj: &Value, out: &mut Vec<(&'static str, String)>) {
        for f in FieldLabels::CORE_EVENTS.canonical().filter(|f| !f.starts_with("metadata.")) {
            let value = if f == "source" {
                let component = text(obj, "source.component");
                if component.is_empty() { text(obj, "reportingComponent") } else { component }
            } else {
                text(obj, f)
            };
            out.push((f, value));
        }
    }

    fn printer(&self) -> Option<&dyn Printer> {
        Some(&printers::EVENTS)
    }

    fn to_storage(&self, obj: Value) -> Result<Value, ApiError> {
        if !self.events_group {
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

    fn to_served(&self, obj: &Value) -> Option<Value> {
        (self.events_group && obj.get("kind").and_then(Value::as_str) == Some("Event"))
            .then(|| rename(obj, EVENT_FIELDS.iter().map(|(a, b)| (*b, *a)), "events.k8s.io/v1"))
    }
}
