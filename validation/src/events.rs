//! Events (kube: `pkg/apis/core/validation/events.go`), validated as kube validates them: in
//! the core form (kube's internal one, which both groups store), with the group the request
//! was made to deciding the rules. A `v1` request gets the legacy rules only; an
//! `events.k8s.io` request also gets the strict ones, and on update every identifying field
//! is immutable. Field paths are the core names whichever group was asked (`message`, not
//! `note`), as kube reports them.

use chrono::{DateTime, FixedOffset, Timelike};
use serde_json::{Map, Value};

use super::field::{self, Bad, Path, go_quote};
use super::{IMMUTABLE, meta, names, s};
use apimachinery::error::Cause;

/// `ReportingInstanceLengthLimit`, `ActionLengthLimit` and `ReasonLengthLimit`.
const SHORT_LIMIT: usize = 128;
/// `NoteLengthLimit` (of the core `message`).
const NOTE_LIMIT: usize = 1024;

/// The API group a write was made to: kube's `requestGroupVersion` of an Event write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventApi {
    /// Core `v1`: the legacy rules only.
    Core,
    /// `events.k8s.io/v1`: the strict rules too.
    EventsV1,
}

impl EventApi {
    /// Where kube reports the reporting controller: under its core name for core requests.
    fn controller_path(self) -> Path {
        Path::new(if self == EventApi::Core { "reportingComponent" } else { "reportingController" })
    }
}

fn md(v: &Value) -> Option<&Map<String, Value>> {
    v.get("metadata").and_then(Value::as_object)
}

/// A time member, `None` for Go's zero time (absent, null, or not a time).
fn time(v: &Value, key: &str) -> Option<DateTime<FixedOffset>> {
    v.get(key).and_then(Value::as_str).and_then(|t| DateTime::parse_from_rfc3339(t).ok())
}

/// `ValidateEventCreate` of an Event in the core form.
pub fn validate_event_create(event: &Value, api: EventApi) -> Vec<Cause> {
    let mut out = legacy(event, api);
    if api == EventApi::Core {
        return out;
    }
    out.extend(meta::validate_object_meta(md(event), true, names::name_is_dns_subdomain, &Path::new("metadata"), true));
    out.extend(series(event));
    if time(event, "eventTime").is_none() {
        out.push(field::required(&Path::new("eventTime"), ""));
    }
    let ty = s(event, "type");
    if ty != "Normal" && ty != "Warning" {
        out.push(field::invalid(&Path::new("type"), Bad::s(""), &format!("has invalid value: {ty}")));
    }
    for key in ["firstTimestamp", "lastTimestamp"] {
        if time(event, key).is_some() {
            out.push(field::invalid(&Path::new(key), Bad::s(""), "needs to be unset"));
        }
    }
    if count(event) != 0 {
        out.push(field::invalid(&Path::new("count"), Bad::s(""), "needs to be unset"));
    }
    let source = event.get("source").unwrap_or(&Value::Null);
    if !s(source, "component").is_empty() || !s(source, "host").is_empty() {
        out.push(field::invalid(&Path::new("source"), Bad::s(""), "needs to be unset"));
    }
    out
}

/// `ValidateEventUpdate` of Events in the core form.
pub fn validate_event_update(new: &Value, old: &Value, api: EventApi) -> Vec<Cause> {
    let mut out = legacy(new, api);
    if api == EventApi::Core {
        return out;
    }
    out.extend(meta::validate_object_meta_update(md(new), md(old), &Path::new("metadata"), true));
    if series_of(new) != series_of(old) {
        out.extend(series(new));
    }
    let immutable = |out: &mut Vec<Cause>, key: &str, path: &str, render: fn(&Value, &str) -> Bad| {
        if !same(new, old, key) {
            out.push(field::invalid(&Path::new(path), render(new, key), IMMUTABLE));
        }
    };
    let text = |v: &Value, key: &str| Bad::s(s(v, key));
    immutable(&mut out, "involvedObject", "involvedObject", |v, k| Bad::Raw(go_object_reference(v.get(k))));
    immutable(&mut out, "reason", "reason", text);
    immutable(&mut out, "message", "message", text);
    immutable(&mut out, "source", "source", |v, k| Bad::Raw(go_event_source(v.get(k))));
    immutable(&mut out, "firstTimestamp", "firstTimestamp", |v, k| Bad::Raw(go_time(time(v, k))));
    immutable(&mut out, "lastTimestamp", "lastTimestamp", |v, k| Bad::Raw(go_time(time(v, k))));
    immutable(&mut out, "count", "count", |v, _| Bad::Int(count(v)));
    // kube checks the reason twice.
    immutable(&mut out, "reason", "reason", text);
    immutable(&mut out, "type", "type", text);
    // Changes below a microsecond are tolerated (clients that wrote nanoseconds in protobuf).
    if time(new, "eventTime").map(micros) != time(old, "eventTime").map(micros) {
        out.push(field::invalid(&Path::new("eventTime"), Bad::Raw(go_time(time(new, "eventTime"))), IMMUTABLE));
    }
    immutable(&mut out, "action", "action", text);
    immutable(&mut out, "related", "related", |v, k| match v.get(k).filter(|r| !r.is_null()) {
        // A nil pointer prints as the string "null".
        None => Bad::s("null"),
        some => Bad::Raw(go_object_reference(some)),
    });
    immutable(&mut out, "reportingComponent", "reportingController", text);
    immutable(&mut out, "reportingInstance", "reportingInstance", text);
    out
}

/// `legacyValidateEvent`: what every Event must hold, whichever group it was written through.
/// Events with an `eventTime` ("new" ones) must name their reporter and action.
fn legacy(event: &Value, api: EventApi) -> Vec<Cause> {
    let mut out = Vec::new();
    let namespace = md(event).and_then(|m| m.get("namespace")).and_then(Value::as_str).unwrap_or("");
    let involved = event.get("involvedObject").unwrap_or(&Value::Null);
    let involved_ns = s(involved, "namespace");
    let ns_path = Path::new("involvedObject").child("namespace");
    if time(event, "eventTime").is_none() {
        let mismatch = if involved_ns.is_empty() {
            !namespace.is_empty() && namespace != "default"
        } else {
            namespace != involved_ns
        };
        if mismatch {
            out.push(field::invalid(&ns_path, Bad::s(involved_ns), "does not match event.namespace"));
        }
    } else {
        if involved_ns.is_empty() && namespace != "default" && namespace != "kube-system" {
            out.push(field::invalid(&ns_path, Bad::s(involved_ns), "does not match event.namespace"));
        }
        let controller = s(event, "reportingComponent");
        let controller_path = api.controller_path();
        if controller.is_empty() {
            out.push(field::required(&controller_path, ""));
        }
        out.extend(
            names::qualified_name(controller)
                .into_iter()
                .map(|m| field::invalid(&controller_path, Bad::s(controller), &m)),
        );
        for key in ["reportingInstance", "action", "reason"] {
            let v = s(event, key);
            if v.is_empty() {
                out.push(field::required(&Path::new(key), ""));
            }
            if v.len() > SHORT_LIMIT {
                let detail = format!("can have at most {SHORT_LIMIT} characters");
                out.push(field::invalid(&Path::new(key), Bad::s(""), &detail));
            }
        }
        if s(event, "message").len() > NOTE_LIMIT {
            let detail = format!("can have at most {NOTE_LIMIT} characters");
            out.push(field::invalid(&Path::new("message"), Bad::s(""), &detail));
        }
    }
    out.extend(
        names::dns1123_subdomain(namespace)
            .into_iter()
            .map(|m| field::invalid(&Path::new("namespace"), Bad::s(namespace), &m)),
    );
    out
}

/// `validateV1EventSeries`.
fn series(event: &Value) -> Vec<Cause> {
    let mut out = Vec::new();
    let Some(series) = event.get("series").filter(|s| !s.is_null()) else { return out };
    if series.get("count").and_then(Value::as_i64).unwrap_or(0) < 2 {
        out.push(field::invalid(&Path::new("series.count"), Bad::s(""), "should be at least 2"));
    }
    if time(series, "lastObservedTime").is_none() {
        out.push(field::required(&Path::new("series.lastObservedTime"), ""));
    }
    out
}

/// The series as Go compares it: none, or its count and last observed time.
fn series_of(event: &Value) -> Option<(i64, Option<DateTime<FixedOffset>>)> {
    let series = event.get("series").filter(|s| !s.is_null())?;
    Some((series.get("count").and_then(Value::as_i64).unwrap_or(0), time(series, "lastObservedTime")))
}

fn count(event: &Value) -> i64 {
    event.get("count").and_then(Value::as_i64).unwrap_or(0)
}

fn micros(t: DateTime<FixedOffset>) -> (i64, u32) {
    (t.timestamp(), t.nanosecond() / 1_000)
}

/// Whether a field holds the same Go value in both: members a Go struct has (absent ones
/// being zero), times as instants.
fn same(new: &Value, old: &Value, key: &str) -> bool {
    let (n, o) = (new.get(key).filter(|v| !v.is_null()), old.get(key).filter(|v| !v.is_null()));
    match key {
        "involvedObject" => reference(n) == reference(o),
        "related" => n.map(|r| reference(Some(r))) == o.map(|r| reference(Some(r))),
        "source" => source(n) == source(o),
        "firstTimestamp" | "lastTimestamp" => time(new, key) == time(old, key),
        "count" => count(new) == count(old),
        _ => s(new, key) == s(old, key),
    }
}

/// `core.ObjectReference`'s fields, in its Go order.
const REFERENCE: [(&str, &str); 7] = [
    ("kind", "Kind"),
    ("namespace", "Namespace"),
    ("name", "Name"),
    ("uid", "UID"),
    ("apiVersion", "APIVersion"),
    ("resourceVersion", "ResourceVersion"),
    ("fieldPath", "FieldPath"),
];
/// `core.EventSource`'s fields, in its Go order.
const SOURCE: [(&str, &str); 2] = [("component", "Component"), ("host", "Host")];

fn reference(v: Option<&Value>) -> [&str; 7] {
    REFERENCE.map(|(key, _)| v.map_or("", |v| s(v, key)))
}

fn source(v: Option<&Value>) -> [&str; 2] {
    SOURCE.map(|(key, _)| v.map_or("", |v| s(v, key)))
}

/// A Go struct of string fields as `%#v` prints it: `core.EventSource{Component:"kubelet", Host:""}`.
fn go_strings_struct(type_name: &str, fields: &[(&str, &str)], v: Option<&Value>) -> String {
    let members: Vec<String> =
        fields.iter().map(|(key, go)| format!("{go}:{}", go_quote(v.map_or("", |v| s(v, key))))).collect();
    format!("{type_name}{{{}}}", members.join(", "))
}

fn go_object_reference(v: Option<&Value>) -> String {
    go_strings_struct("core.ObjectReference", &REFERENCE, v)
}

fn go_event_source(v: Option<&Value>) -> String {
    go_strings_struct("core.EventSource", &SOURCE, v)
}

/// Go's `time.Time.String()` of a time in UTC (the zero time for none):
/// `2024-05-01 10:20:30.5 +0000 UTC`, the fraction without trailing zeros.
fn go_time(t: Option<DateTime<FixedOffset>>) -> String {
    let Some(t) = t else { return "0001-01-01 00:00:00 +0000 UTC".to_string() };
    let utc = t.naive_utc();
    let nanos = utc.nanosecond() % 1_000_000_000;
    let fraction = if nanos == 0 { String::new() } else { format!(".{nanos:09}").trim_end_matches('0').to_string() };
    format!("{}{fraction} +0000 UTC", utc.format("%Y-%m-%d %H:%M:%S"))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn pairs(causes: &[Cause]) -> Vec<(&str, &str)> {
        causes.iter().map(|c| (c.field.as_str(), c.message.as_str())).collect()
    }

    fn new_event() -> Value {
        json!({
            "metadata": {"name": "e", "namespace": "default"},
            "involvedObject": {"kind": "Pod", "namespace": "default", "name": "web"},
            "eventTime": "2024-05-01T10:20:30.123456Z", "reason": "Started", "action": "Start", "type": "Normal",
            "reportingComponent": "example.com/ctl", "reportingInstance": "ctl-1", "message": "started"
        })
    }

    #[test]
    fn a_core_request_gets_the_legacy_rules_only() {
        let mut e = new_event();
        e["type"] = json!("Odd");
        e["count"] = json!(3);
        assert!(validate_event_create(&e, EventApi::Core).is_empty());
        e.as_object_mut().unwrap().remove("eventTime");
        e["involvedObject"]["namespace"] = json!("other");
        assert_eq!(
            pairs(&validate_event_create(&e, EventApi::Core)),
            [("involvedObject.namespace", "Invalid value: \"other\": does not match event.namespace")]
        );
    }

    #[test]
    fn an_events_request_needs_an_event_time_and_no_deprecated_fields() {
        let mut e = new_event();
        e.as_object_mut().unwrap().remove("eventTime");
        e["count"] = json!(2);
        e["source"] = json!({"host": "node-1"});
        e["series"] = json!({"count": 1});
        assert_eq!(
            pairs(&validate_event_create(&e, EventApi::EventsV1)),
            [
                ("series.count", "Invalid value: \"\": should be at least 2"),
                ("series.lastObservedTime", "Required value"),
                ("eventTime", "Required value"),
                ("count", "Invalid value: \"\": needs to be unset"),
                ("source", "Invalid value: \"\": needs to be unset"),
            ]
        );
    }

    #[test]
    fn the_reporting_controller_is_named_as_the_request_names_it() {
        let mut e = new_event();
        e.as_object_mut().unwrap().remove("reportingComponent");
        let core = validate_event_create(&e, EventApi::Core);
        let events = validate_event_create(&e, EventApi::EventsV1);
        assert_eq!(core[0].field, "reportingComponent");
        assert_eq!(events[0].field, "reportingController");
        assert_eq!(core.len(), events.len());
    }

    #[test]
    fn identifying_fields_are_immutable_through_events_k8s_io_and_print_as_go_values() {
        let old = new_event();
        let mut new = old.clone();
        new["involvedObject"]["fieldPath"] = json!("spec.containers{web}");
        new["eventTime"] = json!("2024-05-01T11:00:00.000000Z");
        new["related"] = json!({"kind": "Node", "name": "n"});
        assert_eq!(
            pairs(&validate_event_update(&new, &old, EventApi::EventsV1)),
            [
                (
                    "involvedObject",
                    "Invalid value: core.ObjectReference{Kind:\"Pod\", Namespace:\"default\", Name:\"web\", UID:\"\", \
                     APIVersion:\"\", ResourceVersion:\"\", FieldPath:\"spec.containers{web}\"}: field is immutable"
                ),
                ("eventTime", "Invalid value: 2024-05-01 11:00:00 +0000 UTC: field is immutable"),
                (
                    "related",
                    "Invalid value: core.ObjectReference{Kind:\"Node\", Namespace:\"\", Name:\"n\", UID:\"\", \
                     APIVersion:\"\", ResourceVersion:\"\", FieldPath:\"\"}: field is immutable"
                ),
            ]
        );
        assert!(validate_event_update(&new, &old, EventApi::Core).is_empty());
    }

    #[test]
    fn empty_structs_and_absent_ones_are_the_same_go_value() {
        let mut old = new_event();
        old["source"] = json!({});
        let mut new = new_event();
        new["eventTime"] = json!("2024-05-01T10:20:30.123456900Z");
        assert!(validate_event_update(&new, &old, EventApi::EventsV1).is_empty(), "below a microsecond");
        new["related"] = Value::Null;
        assert!(validate_event_update(&new, &old, EventApi::EventsV1).is_empty());
    }

    #[test]
    fn go_times_print_as_go_prints_them() {
        let t = |s: &str| Some(DateTime::parse_from_rfc3339(s).unwrap());
        assert_eq!(go_time(t("2024-05-01T10:20:30.123456Z")), "2024-05-01 10:20:30.123456 +0000 UTC");
        assert_eq!(go_time(t("2024-05-01T12:20:30.5+02:00")), "2024-05-01 10:20:30.5 +0000 UTC");
        assert_eq!(go_time(None), "0001-01-01 00:00:00 +0000 UTC");
    }
}
