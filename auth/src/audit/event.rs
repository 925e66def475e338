//! The audit event (`audit.k8s.io/v1` `Event`), serialized field for field as kube writes it,
//! and the helpers the HTTP layer fills it in with as the request goes along.
//!
//! One [`Event`] lives for the whole request: built by [`Event::received`] once the request
//! is authenticated, completed with the authorization decision, the bodies and the status, and
//! emitted at each stage as a copy ([`Event::at_stage`]) passed through [`prepare`], which
//! drops the stages the policy omits and the bodies its level does not record.

use std::collections::BTreeMap;
use std::net::IpAddr;

use apimachinery::error::ApiError;
use apimachinery::request::UserInfo;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::policy::{Level, RequestAuditConfig, Stage};
use crate::Attributes;

/// The annotation holding the authorization decision, `allow` or `forbid`.
pub const DECISION_ANNOTATION: &str = "authorization.k8s.io/decision";
/// The annotation holding the authorizer's reason.
pub const REASON_ANNOTATION: &str = "authorization.k8s.io/reason";

/// kube truncates user agents longer than this many bytes.
const MAX_USER_AGENT: usize = 1024;

/// One audit record, as kube's `audit.k8s.io/v1` `Event`. Field order is kube's, so a line of
/// our log reads like a line of kube's.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Event {
    /// Always `Event`.
    pub kind: String,
    /// Always `audit.k8s.io/v1`.
    pub api_version: String,
    /// The level the policy chose for the request.
    pub level: Level,
    /// The request's id, also sent back as the `Audit-ID` header.
    #[serde(rename = "auditID")]
    pub audit_id: String,
    /// The stage this copy was emitted at.
    pub stage: Stage,
    /// The path and query as the client sent them.
    #[serde(rename = "requestURI")]
    pub request_uri: String,
    /// The Kubernetes verb, or the lower-case HTTP method of a non-resource request.
    pub verb: String,
    /// The authenticated user.
    pub user: EventUser,
    /// The user the request impersonates, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub impersonated_user: Option<EventUser>,
    /// `X-Forwarded-For`, `X-Real-Ip`, then the peer address ([`source_ips`]).
    #[serde(default, rename = "sourceIPs", skip_serializing_if = "Vec::is_empty")]
    pub source_ips: Vec<String>,
    /// The client's `User-Agent`, truncated past 1024 bytes.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub user_agent: String,
    /// What a resource request is about; absent for non-resource requests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub object_ref: Option<ObjectReference>,
    /// The response's status: the code, and for a `Status` body its status, message, reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_status: Option<ResponseStatus>,
    /// The request body, at [`Level::Request`] and above.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_object: Option<Value>,
    /// The response body, at [`Level::RequestResponse`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_object: Option<Value>,
    /// When the request arrived.
    #[serde(with = "micro_time")]
    pub request_received_timestamp: DateTime<Utc>,
    /// When it reached this stage.
    #[serde(with = "micro_time")]
    pub stage_timestamp: DateTime<Utc>,
    /// Notes from the stages (authorization's decision, admission's), sorted by key as Go
    /// encodes maps.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

/// A user as audit records it (`authentication.k8s.io/v1` `UserInfo`; empty fields omitted).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EventUser {
    /// The user name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub username: String,
    /// The uid, if the authenticator knows one.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub uid: String,
    /// The groups.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<String>,
    /// Extra attributes.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub extra: BTreeMap<String, Vec<String>>,
}

impl From<&UserInfo> for EventUser {
    fn from(u: &UserInfo) -> Self {
        EventUser { username: u.name.clone(), uid: u.uid.clone(), groups: u.groups.clone(), extra: u.extra.clone() }
    }
}

/// The object a resource request targets; empty fields omitted.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectReference {
    /// The plural resource.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub resource: String,
    /// The namespace.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// The object's name (from the path, or from the request body of a create).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// The object's uid, from the request body.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub uid: String,
    /// The API group, empty for core.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_group: String,
    /// The API version.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// The object's resourceVersion, from the request body.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub resource_version: String,
    /// The subresource.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub subresource: String,
}

/// The bounded part of a response's `Status` kube copies into an event: for a success just the
/// code (`{"metadata":{},"code":200}`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ResponseStatus {
    /// Always `{}` (a `Status`'s list metadata, which kube always writes).
    #[serde(default)]
    pub metadata: Map<String, Value>,
    /// `Success` or `Failure`, from a `Status` body.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub status: String,
    /// The `Status` message.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// The `Status` reason.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// The `Status` details.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
    /// The HTTP status code.
    pub code: u16,
}

impl Event {
    /// The event of a request that was just authenticated, at stage `RequestReceived`.
    /// `attrs` carries the authenticated user (impersonation is applied later, and recorded
    /// with [`Event::set_impersonated_user`]); `level` is the policy's for the request.
    pub fn received(
        level: Level,
        audit_id: &str,
        attrs: &Attributes,
        request_uri: &str,
        source_ips: Vec<String>,
        user_agent: &str,
        at: DateTime<Utc>,
    ) -> Event {
        let object_ref = attrs.is_resource_request.then(|| ObjectReference {
            resource: attrs.resource.clone(),
            namespace: attrs.namespace.clone(),
            name: attrs.name.clone(),
            api_group: attrs.api_group.clone(),
            api_version: attrs.api_version.clone(),
            subresource: attrs.subresource.clone(),
            ..Default::default()
        });
        Event {
            kind: "Event".into(),
            api_version: "audit.k8s.io/v1".into(),
            level,
            audit_id: audit_id.to_string(),
            stage: Stage::RequestReceived,
            request_uri: request_uri.to_string(),
            verb: attrs.verb.clone(),
            user: EventUser::from(&attrs.user),
            impersonated_user: None,
            source_ips,
            user_agent: truncate_user_agent(user_agent),
            object_ref,
            response_status: None,
            request_object: None,
            response_object: None,
            request_received_timestamp: at,
            stage_timestamp: at,
            annotations: BTreeMap::new(),
        }
    }

    /// A copy of the event at `stage`, stamped `now` (`RequestReceived` is stamped with the
    /// time the request arrived, as kube does).
    pub fn at_stage(&self, stage: Stage, now: DateTime<Utc>) -> Event {
        let mut e = self.clone();
        e.stage = stage;
        e.stage_timestamp = if stage == Stage::RequestReceived { self.request_received_timestamp } else { now };
        e
    }

    /// Records the user the request impersonates.
    pub fn set_impersonated_user(&mut self, user: &UserInfo) {
        self.impersonated_user = Some(EventUser::from(user));
    }

    /// Adds an annotation; a key already set keeps its first value, as kube keeps it.
    pub fn annotate(&mut self, key: &str, value: &str) {
        self.annotations.entry(key.to_string()).or_insert_with(|| value.to_string());
    }

    /// Records the authorization decision (`allow`/`forbid`) and the authorizer's reason.
    pub fn set_authorization(&mut self, allowed: bool, reason: &str) {
        self.annotate(DECISION_ANNOTATION, if allowed { "allow" } else { "forbid" });
        self.annotate(REASON_ANNOTATION, reason);
    }

    /// Records the decoded request body: completes the object reference from its metadata
    /// (the name of a create is only in the body) and keeps a copy at [`Level::Request`] and
    /// above.
    pub fn set_request_object(&mut self, obj: &Value) {
        if let Some(r) = &mut self.object_ref {
            let meta = |k: &str| obj.pointer(&format!("/metadata/{k}")).and_then(Value::as_str).unwrap_or("");
            for (field, key) in [
                (&mut r.namespace, "namespace"),
                (&mut r.name, "name"),
                (&mut r.uid, "uid"),
                (&mut r.resource_version, "resourceVersion"),
            ] {
                if field.is_empty() {
                    *field = meta(key).to_string();
                }
            }
        }
        if self.level >= Level::Request {
            self.request_object = Some(obj.clone());
        }
    }

    /// Records a patch as the request body, kept at [`Level::Request`] and above (kube logs
    /// the patch as sent, not the patched object).
    pub fn set_request_patch(&mut self, patch: &Value) {
        if self.level >= Level::Request {
            self.request_object = Some(patch.clone());
        }
    }

    /// Records the response body: a `Status` also fills in the response status; a copy is kept
    /// at [`Level::RequestResponse`].
    pub fn set_response_object(&mut self, obj: &Value) {
        if obj.get("kind").and_then(Value::as_str) == Some("Status") {
            let s = |k: &str| obj.get(k).and_then(Value::as_str).unwrap_or("").to_string();
            let code = obj.get("code").and_then(Value::as_u64).and_then(|c| u16::try_from(c).ok());
            self.response_status = Some(ResponseStatus {
                metadata: Map::new(),
                status: s("status"),
                message: s("message"),
                reason: s("reason"),
                details: obj.get("details").filter(|d| !d.is_null()).cloned(),
                code: code.or(self.response_status.as_ref().map(|r| r.code)).unwrap_or(0),
            });
        }
        if self.level >= Level::RequestResponse {
            self.response_object = Some(obj.clone());
        }
    }

    /// Records an error response: its `Status` is the response body.
    pub fn set_error(&mut self, err: &ApiError) {
        self.set_response_object(&err.to_status());
        self.set_response_code(err.code);
    }

    /// Records the HTTP status code once the response head is written.
    pub fn set_response_code(&mut self, code: u16) {
        self.response_status.get_or_insert_with(ResponseStatus::default).code = code;
    }

    /// Records a panic in the handler, as kube's filter does before emitting stage `Panic`.
    pub fn set_panic(&mut self, message: &str) {
        self.response_status = Some(ResponseStatus {
            status: "Failure".into(),
            message: format!("APIServer panic'd: {message}"),
            reason: "InternalError".into(),
            code: 500,
            ..Default::default()
        });
    }
}

/// The event to emit for `event` (already at its stage) under `config`: `None` when the policy
/// omits the stage or the request; otherwise the event without the bodies its level does not
/// record, and without `metadata.managedFields` in them if the policy says so.
pub fn prepare(config: &RequestAuditConfig, mut event: Event) -> Option<Event> {
    if !config.records(event.stage) {
        return None;
    }
    if config.level < Level::Request {
        event.request_object = None;
    }
    if config.level < Level::RequestResponse {
        event.response_object = None;
    }
    if config.omit_managed_fields {
        for body in [&mut event.request_object, &mut event.response_object].into_iter().flatten() {
            strip_managed_fields(body);
        }
    }
    Some(event)
}

/// Drops `metadata.managedFields` from an object, from each item of a list and from each row
/// object of a table, as kube's `copyWithoutManagedFields` does.
pub fn strip_managed_fields(body: &mut Value) {
    fn strip(obj: &mut Value) {
        if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.remove("managedFields");
        }
    }
    strip(body);
    if let Some(items) = body.get_mut("items").and_then(Value::as_array_mut) {
        items.iter_mut().for_each(strip);
    }
    if let Some(rows) = body.get_mut("rows").and_then(Value::as_array_mut) {
        rows.iter_mut().filter_map(|r| r.get_mut("object")).for_each(strip);
    }
}

/// The source IPs kube records: each valid address of `X-Forwarded-For`, then `X-Real-Ip` if
/// it is not among them, then the peer's address unless it repeats the last one.
pub fn source_ips(forwarded_for: Option<&str>, real_ip: Option<&str>, peer: Option<IpAddr>) -> Vec<String> {
    let mut ips: Vec<IpAddr> =
        forwarded_for.into_iter().flat_map(|h| h.split(',')).filter_map(|p| p.trim().parse().ok()).collect();
    if let Some(ip) = real_ip.and_then(|h| h.trim().parse::<IpAddr>().ok())
        && !ips.contains(&ip)
    {
        ips.push(ip);
    }
    if let Some(ip) = peer
        && ips.last() != Some(&ip)
    {
        ips.push(ip);
    }
    ips.iter().map(IpAddr::to_string).collect()
}

fn truncate_user_agent(ua: &str) -> String {
    if ua.len() <= MAX_USER_AGENT {
        return ua.to_string();
    }
    let cut = (0..=MAX_USER_AGENT).rev().find(|i| ua.is_char_boundary(*i)).unwrap_or(0);
    format!("{}...TRUNCATED", &ua[..cut])
}

/// kube's `MicroTime`: RFC 3339 in UTC with exactly six fractional digits.
pub fn format_micro_time(t: &DateTime<Utc>) -> String {
    t.format("%Y-%m-%dT%H:%M:%S%.6fZ").to_string()
}

mod micro_time {
    use chrono::{DateTime, Utc};
    use serde::{Deserialize, Deserializer, Serializer, de::Error};

    pub fn serialize<S: Serializer>(t: &DateTime<Utc>, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&super::format_micro_time(t))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<DateTime<Utc>, D::Error> {
        let s = String::deserialize(d)?;
        DateTime::parse_from_rfc3339(&s).map(|t| t.with_timezone(&Utc)).map_err(D::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;
    use serde_json::json;

    use super::*;

    fn at(micros: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2024, 1, 2, 3, 4, 5).unwrap() + chrono::Duration::microseconds(micros.into())
    }

    fn attrs() -> Attributes {
        Attributes {
            user: UserInfo {
                name: "alice".into(),
                uid: "u-1".into(),
                groups: vec!["dev".into(), "system:authenticated".into()],
                ..Default::default()
            },
            verb: "create".into(),
            is_resource_request: true,
            namespace: "default".into(),
            api_group: "apps".into(),
            api_version: "v1".into(),
            resource: "deployments".into(),
            ..Default::default()
        }
    }

    fn config(level: Level) -> RequestAuditConfig {
        RequestAuditConfig { level, ..Default::default() }
    }

    fn event(level: Level) -> Event {
        let ips = source_ips(None, None, Some("10.0.0.7".parse().unwrap()));
        Event::received(
            level,
            "a-1",
            &attrs(),
            "/apis/apps/v1/namespaces/default/deployments",
            ips,
            "kubectl/v1.30",
            at(123_456),
        )
    }

    fn body() -> Value {
        json!({"kind": "Deployment", "metadata": {"name": "web", "uid": "x-1", "managedFields": [{"manager": "kubectl"}]}})
    }

    #[test]
    fn an_event_serializes_as_kube_writes_it() {
        let mut e = event(Level::Metadata);
        e.set_request_object(&body());
        e.set_authorization(true, "RBAC: allowed by ClusterRoleBinding \"admins\"");
        e.set_response_code(201);
        let line = serde_json::to_string(&e.at_stage(Stage::ResponseComplete, at(654_321))).unwrap();
        assert_eq!(
            line,
            concat!(
                r#"{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"a-1","#,
                r#""stage":"ResponseComplete","requestURI":"/apis/apps/v1/namespaces/default/deployments","#,
                r#""verb":"create","user":{"username":"alice","uid":"u-1","groups":["dev","system:authenticated"]},"#,
                r#""sourceIPs":["10.0.0.7"],"userAgent":"kubectl/v1.30","#,
                r#""objectRef":{"resource":"deployments","namespace":"default","name":"web","uid":"x-1","apiGroup":"apps","apiVersion":"v1"},"#,
                r#""responseStatus":{"metadata":{},"code":201},"#,
                r#""requestReceivedTimestamp":"2024-01-02T03:04:05.123456Z","stageTimestamp":"2024-01-02T03:04:05.654321Z","#,
                r#""annotations":{"authorization.k8s.io/decision":"allow","authorization.k8s.io/reason":"RBAC: allowed by ClusterRoleBinding \"admins\""}}"#
            )
        );
        let back: Event = serde_json::from_str(&line).unwrap();
        assert_eq!(back, e.at_stage(Stage::ResponseComplete, at(654_321)), "round trip");
    }

    #[test]
    fn non_resource_requests_have_no_object_ref_and_received_keeps_the_arrival_time() {
        let a = Attributes { verb: "get".into(), path: "/healthz".into(), ..Default::default() };
        let e = Event::received(Level::Metadata, "a", &a, "/healthz?verbose", vec![], "", at(1));
        let v = serde_json::to_value(e.at_stage(Stage::RequestReceived, at(999))).unwrap();
        assert!(v.get("objectRef").is_none() && v.get("userAgent").is_none() && v.get("sourceIPs").is_none());
        assert!(v.get("impersonatedUser").is_none() && v.get("annotations").is_none());
        assert_eq!(v["stageTimestamp"], "2024-01-02T03:04:05.000001Z");
        assert_eq!(v["user"], json!({}), "an empty user prints as kube's: every field omitted");
    }

    #[test]
    fn errors_fill_the_status_from_the_status_body() {
        let mut e = event(Level::RequestResponse);
        e.set_error(&ApiError::resource_not_found());
        let s = serde_json::to_value(e.response_status.as_ref().unwrap()).unwrap();
        assert_eq!((s["status"].as_str(), s["code"].as_u64()), (Some("Failure"), Some(404)));
        assert_eq!(s["metadata"], json!({}));
        assert_eq!(e.response_object.as_ref().unwrap()["kind"], "Status", "RequestResponse keeps the Status body");
        e.set_impersonated_user(&UserInfo { name: "bob".into(), ..Default::default() });
        assert_eq!(serde_json::to_value(&e).unwrap()["impersonatedUser"], json!({"username": "bob"}));
    }

    #[test]
    fn levels_strip_the_bodies_they_do_not_record() {
        let run = |level: Level, omit_managed_fields: bool| {
            let mut e = event(Level::RequestResponse);
            e.set_request_object(&body());
            e.set_response_object(&body());
            let c = RequestAuditConfig { level, omit_managed_fields, ..Default::default() };
            prepare(&c, e.at_stage(Stage::ResponseComplete, at(2)))
        };
        let meta = run(Level::Metadata, false).unwrap();
        assert!(meta.request_object.is_none() && meta.response_object.is_none());
        let req = run(Level::Request, false).unwrap();
        assert!(req.request_object.is_some() && req.response_object.is_none());
        assert!(req.request_object.unwrap().pointer("/metadata/managedFields").is_some());
        let both = run(Level::RequestResponse, true).unwrap();
        for body in [both.request_object.unwrap(), both.response_object.unwrap()] {
            assert!(body.pointer("/metadata/managedFields").is_none(), "omitManagedFields strips them");
            assert_eq!(body.pointer("/metadata/name").unwrap(), "web");
        }
        assert!(run(Level::None, false).is_none());
    }

    #[test]
    fn lower_levels_never_copy_the_bodies() {
        let mut e = event(Level::Metadata);
        e.set_request_object(&body());
        e.set_response_object(&body());
        assert!(e.request_object.is_none() && e.response_object.is_none());
        assert_eq!(e.object_ref.unwrap().name, "web", "the object reference is still completed");
    }

    #[test]
    fn omitted_stages_are_not_emitted() {
        let c = RequestAuditConfig { omit_stages: vec![Stage::RequestReceived], ..config(Level::Metadata) };
        let e = event(Level::Metadata);
        assert!(prepare(&c, e.at_stage(Stage::RequestReceived, at(0))).is_none());
        assert!(prepare(&c, e.at_stage(Stage::ResponseComplete, at(0))).is_some());
    }

    #[test]
    fn managed_fields_go_from_lists_and_tables_too() {
        let mut list = json!({"items": [{"metadata": {"managedFields": [], "name": "a"}}],
                              "rows": [{"object": {"metadata": {"managedFields": []}}}]});
        strip_managed_fields(&mut list);
        assert_eq!(list, json!({"items": [{"metadata": {"name": "a"}}], "rows": [{"object": {"metadata": {}}}]}));
    }

    #[test]
    fn source_ips_follow_kube_order_without_repeats() {
        let peer = Some("10.0.0.1".parse().unwrap());
        assert_eq!(
            source_ips(Some("1.1.1.1, junk, 2.2.2.2"), Some("2.2.2.2"), peer),
            ["1.1.1.1", "2.2.2.2", "10.0.0.1"]
        );
        assert_eq!(source_ips(Some("10.0.0.1"), Some("3.3.3.3"), peer), ["10.0.0.1", "3.3.3.3", "10.0.0.1"]);
        assert_eq!(source_ips(Some("3.3.3.3,10.0.0.1"), None, peer), ["3.3.3.3", "10.0.0.1"]);
        assert_eq!(source_ips(None, None, None), Vec::<String>::new());
    }

    #[test]
    fn long_user_agents_are_truncated() {
        let e = Event::received(Level::Metadata, "a", &attrs(), "/", vec![], &"é".repeat(600), at(0));
        assert!(e.user_agent.ends_with("...TRUNCATED") && e.user_agent.len() <= 1024 + 12);
        assert_eq!(event(Level::Metadata).user_agent, "kubectl/v1.30");
    }
}
