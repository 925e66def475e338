//! Events: one kind served by two groups from one store, as kube serves them (its
//! `pkg/registry/core/event` storage, installed in both): core `v1` Event and
//! `events.k8s.io/v1` Event.
//!
//! Objects are stored in the core form, kube's internal one. The events.k8s.io form is a
//! conversion of it both ways (kube's `pkg/apis/events/v1/conversion.go`): seven fields take
//! other names (`regarding` is `involvedObject`, `note` is `message`, the `deprecated*` fields
//! are the legacy ones) and the rest keep theirs. The store validates the core form, with the
//! group the request was made to deciding the rules ([`events::EventApi`]), and applies a
//! patch sent to events.k8s.io to the events.k8s.io form.
//!
//! Each form reads as kube's JSON of its Go struct: zero values are shown where Go shows
//! them (a core Event's empty `source` and `reportingComponent`, an events.k8s.io Event's
//! empty `deprecatedSource`) and left out where `omitempty` drops them. Zero times, which Go
//! writes as `null`, are left out, as everywhere in this server.

use k8s_openapi::api::core::v1::Event as CoreEvent;
use k8s_openapi::api::events::v1::Event as EventsEvent;
use serde_json::{Map, Value};

use crate::printers;
use apimachinery::catalogue::{ResourceDef, Strategy};
use apimachinery::error::{ApiError, Cause};
use apimachinery::selector::FieldLabels;
use apimachinery::selector::selectable::text;
use apimachinery::table::Printer;
use validation::events::{self, EventApi};

/// The group of the second form.
const EVENTS_GROUP: &str = "events.k8s.io";

pub(super) fn core() -> ResourceDef {
    ResourceDef::new("", "v1", "events", "Event", Events { events_group: false })
        .short_names(&["ev"])
        .schema::<CoreEvent>()
}

pub(super) fn events_v1() -> ResourceDef {
    ResourceDef::new(EVENTS_GROUP, "v1", "events", "Event", Events { events_group: true })
        .short_names(&["ev"])
        .stored_as("", "v1")
        .schema::<EventsEvent>()
}

/// `(events.k8s.io/v1 field, core/v1 field)` for the fields kube converts by hand; every other
/// field of the two forms (`metadata`, `eventTime`, `series`, `reportingInstance`, `action`,
/// `reason`, `related`, `type`) has the same name and value in both.
const RENAMED: &[(&str, &str)] = &[
    ("regarding", "involvedObject"),
    ("note", "message"),
    ("reportingController", "reportingComponent"),
    ("deprecatedSource", "source"),
    ("deprecatedFirstTimestamp", "firstTimestamp"),
    ("deprecatedLastTimestamp", "lastTimestamp"),
    ("deprecatedCount", "count"),
];

/// The events.k8s.io/v1 fields that are structs in Go: its JSON shows them even when empty.
const SHOWN_EMPTY: &[&str] = &["regarding", "deprecatedSource"];
/// The events.k8s.io/v1 fields Go's JSON leaves out when zero (`omitempty`).
const OMITTED_ZERO: &[&str] =
    &["reportingController", "reportingInstance", "action", "reason", "note", "type", "deprecatedCount"];
/// What the core form's JSON shows of zero Go values: two structs and two strings without
/// `omitempty`. Set when an Event is written (after its fields are recorded as the client's),
/// so the core form reads as kube's.
const CORE_EMPTY_STRUCTS: &[&str] = &["involvedObject", "source"];
const CORE_EMPTY_STRINGS: &[&str] = &["reportingComponent", "reportingInstance"];

/// Sets the core form's zero members an Event lacks.
fn with_core_zero(obj: &mut Value) {
    let Some(map) = obj.as_object_mut() else { return };
    let zeros = CORE_EMPTY_STRUCTS.iter().map(|k| (k, Value::Object(Map::new())));
    for (key, zero) in zeros.chain(CORE_EMPTY_STRINGS.iter().map(|k| (k, Value::String(String::new())))) {
        if map.get(*key).is_none_or(Value::is_null) {
            map.insert(key.to_string(), zero);
        }
    }
}

/// `Convert_v1_Event_To_core_Event` of a body sent to events.k8s.io. A core field name is no
/// field of this form and is dropped, as kube's decoder drops it; other unknown fields are
/// kept under their names, for the registry's field validation to report.
fn to_core(obj: Value) -> Value {
    let Value::Object(map) = obj else { return obj };
    let mut out = Map::with_capacity(map.len());
    for (key, value) in map {
        if RENAMED.iter().any(|(_, core)| *core == key) {
            continue;
        }
        let key = RENAMED.iter().find(|(events, _)| *events == key).map_or(key, |(_, core)| core.to_string());
        out.insert(key, value);
    }
    out.insert("apiVersion".into(), "v1".into());
    Value::Object(out)
}

/// `Convert_core_Event_To_v1_Event` of a stored Event, with the struct fields Go's JSON shows
/// though empty.
fn to_events_v1(obj: &Value) -> Value {
    let Some(map) = obj.as_object() else { return obj.clone() };
    let mut out = Map::with_capacity(map.len() + SHOWN_EMPTY.len());
    for (key, value) in map {
        let key = RENAMED.iter().find(|(_, core)| core == key).map_or(key.as_str(), |(events, _)| events);
        let zero = matches!(value, Value::String(s) if s.is_empty()) || value.as_i64() == Some(0);
        if zero && OMITTED_ZERO.contains(&key) {
            continue;
        }
        out.insert(key.to_string(), value.clone());
    }
    for key in SHOWN_EMPTY {
        if out.get(*key).is_none_or(Value::is_null) {
            out.insert(key.to_string(), Value::Object(Map::new()));
        }
    }
    out.insert("apiVersion".into(), format!("{EVENTS_GROUP}/v1").into());
    Value::Object(out)
}

struct Events {
    /// Served as `events.k8s.io/v1` (converted), rather than core `v1`.
    events_group: bool,
}

/// The rules a write gets, from the resource the request was made to.
fn api_of(request: &ResourceDef) -> EventApi {
    if request.group == EVENTS_GROUP { EventApi::EventsV1 } else { EventApi::Core }
}

impl Strategy for Events {
    fn validate(&self, request: &ResourceDef, obj: &Value) -> Vec<Cause> {
        events::validate_event_create(obj, api_of(request))
    }

    fn validate_update(&self, request: &ResourceDef, new: &Value, old: &Value) -> Vec<Cause> {
        events::validate_event_update(new, old, api_of(request))
    }

    fn allow_create_on_update(&self) -> bool {
        true
    }

    fn prepare_for_create(&self, obj: &mut Value) {
        with_core_zero(obj);
    }

    fn prepare_for_update(&self, new: &mut Value, _old: &Value) {
        with_core_zero(new);
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
        Ok(to_core(obj))
    }

    fn to_served(&self, obj: &Value) -> Option<Value> {
        (self.events_group && obj.get("kind").and_then(Value::as_str) == Some("Event")).then(|| to_events_v1(obj))
    }
}
