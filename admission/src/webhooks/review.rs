//! `admission.k8s.io/v1` AdmissionReview: the request a webhook is sent and what its answer
//! must look like, with kube's checks and wording.

use std::time::Duration;

use apimachinery::catalogue::Subresource;
use apimachinery::error::{ApiError, Reason};
use apimachinery::messages::{Admit, Operation};
use base64::Engine;
use serde_json::{Value, json};
use webhook_client::CallError;

use super::config::Hook;
use crate::Review;
use crate::versions::Seen;

/// What a webhook answered, checked.
#[derive(Debug)]
pub struct Answer {
    /// `response.allowed`.
    pub allowed: bool,
    /// `response.status`, for a denial.
    pub status: Value,
    /// The decoded JSON patch, if any.
    pub patch: Option<Vec<u8>>,
    /// `response.warnings`.
    pub warnings: Vec<String>,
    /// `response.auditAnnotations`.
    pub audit_annotations: Vec<(String, String)>,
}

impl Answer {
    /// Hands the answer's warnings and audit annotations (under the webhook's name, as kube
    /// keys them) to the review.
    pub fn note(&self, hook: &Hook, review: &mut Review) {
        review.warnings.extend(self.warnings.iter().cloned());
        for (k, v) in &self.audit_annotations {
            review.audit_annotations.push((format!("{}/{k}", hook.name), v.clone()));
        }
    }

    /// The status code a denial carries (at least 400, as kube makes it).
    pub fn status_code(&self) -> u16 {
        let code = self.status.get("code").and_then(Value::as_u64).unwrap_or(0) as u16;
        code.max(400)
    }

    /// kube's `ToStatusErr`: the webhook's Status with a message naming the webhook, a code of
    /// at least 400.
    pub fn denial(&self, webhook: &str) -> ApiError {
        let denied_by = format!("admission webhook \"{webhook}\" denied the request");
        let message = self.status.get("message").and_then(Value::as_str).unwrap_or("");
        let reason_text = self.status.get("reason").and_then(Value::as_str).unwrap_or("");
        let message = if !message.is_empty() {
            format!("{denied_by}: {message}")
        } else if !reason_text.is_empty() {
            format!("{denied_by}: {reason_text}")
        } else {
            format!("{denied_by} without explanation")
        };
        let reason: Reason = serde_json::from_value(Value::String(reason_text.to_string())).unwrap_or(Reason::Unknown);
        let mut e = ApiError::new(reason, message);
        e.code = self.status_code();
        if let Some(details) = self.status.get("details") {
            e.name = details.get("name").and_then(Value::as_str).map(String::from);
            e.group = details.get("group").and_then(Value::as_str).map(String::from);
            e.kind = details.get("kind").and_then(Value::as_str).map(String::from);
        }
        e
    }
}

/// Why a call gave no usable answer.
#[derive(Debug)]
pub enum CallFailure {
    /// Before any request was sent: no endpoint, a bad caBundle, a failed match condition.
    Setup(String),
    /// The exchange failed (`url`, filled in by [`CallFailure::at`], and the transport's
    /// error).
    Transport(CallError),
    /// A non-2xx status.
    Status(u16, Value),
    /// The answer was not a valid AdmissionReview.
    Invalid(String),
    /// A failure with the URL it happened at.
    At(String, Box<CallFailure>),
}

impl CallFailure {
    /// The failure, remembering the URL called.
    pub fn at(self, url: String) -> CallFailure {
        match self {
            f @ (CallFailure::Transport(_) | CallFailure::Status(..)) => CallFailure::At(url, Box::new(f)),
            f => f,
        }
    }
}

impl std::fmt::Display for CallFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CallFailure::Setup(why) => write!(f, "failed to call webhook: {why}"),
            CallFailure::Invalid(why) => write!(f, "received invalid webhook response: {why}"),
            CallFailure::At(url, inner) => match inner.as_ref() {
                CallFailure::Transport(CallError::DeadlineExceeded) => {
                    write!(f, "failed to call webhook: Post \"{url}\": context deadline exceeded")
                }
                CallFailure::Transport(CallError::Failed(why)) => {
                    write!(f, "failed to call webhook: Post \"{url}\": {why}")
                }
                CallFailure::Status(code, body) => match body.get("message").and_then(Value::as_str) {
                    Some(message) => write!(f, "failed to call webhook: {message}"),
                    None => write!(
                        f,
                        "failed to call webhook: the server responded with the status code {code} but did not \
                         return more information"
                    ),
                },
                other => other.fmt(f),
            },
            CallFailure::Transport(_) | CallFailure::Status(..) => write!(f, "failed to call webhook"),
        }
    }
}

/// `url` with kube's `timeout` query parameter (`?timeout=10s`).
pub fn with_timeout(url: &str, timeout: Duration) -> String {
    let sep = if url.contains('?') { '&' } else { '?' };
    format!("{url}{sep}timeout={}s", timeout.as_secs())
}

fn operation(op: Operation) -> &'static str {
    crate::operation_label(op)
}

/// The AdmissionReview sent for `request` with `object` (the object as the chain has it so
/// far).
pub fn request_body(request: &Admit, seen: &Seen<'_>) -> Value {
    let t = &request.target;
    let (object, old_object) = (seen.object.as_ref(), seen.old_object.as_deref());
    let kind_source = if request.operation == Operation::Delete { old_object } else { Some(object) };
    let kind = kind_source.and_then(|o| o.get("kind")).and_then(Value::as_str).unwrap_or("");
    let (request_gvk, request_gvr) = match seen.requested {
        Some(d) => (
            json!({"group": d.group, "version": d.version, "kind": d.kind}),
            json!({"group": d.group, "version": d.version, "resource": d.resource}),
        ),
        None => (
            json!({"group": t.group, "version": t.version, "kind": kind}),
            json!({"group": t.group, "version": t.version, "resource": t.resource}),
        ),
    };
    let (mut gvk, gvr) = match seen.def {
        Some(d) => (
            json!({"group": d.group, "version": d.version, "kind": d.kind}),
            json!({"group": d.group, "version": d.version, "resource": d.resource}),
        ),
        None => (request_gvk.clone(), request_gvr.clone()),
    };
    // A `/scale` write reviews the Scale, whatever the resource.
    let mut request_gvk = request_gvk;
    if t.subresource == Some(Subresource::Scale) {
        gvk = json!({"group": "autoscaling", "version": "v1", "kind": "Scale"});
        request_gvk = gvk.clone();
    }
    let u = &request.user;
    let mut user = json!({"username": u.name, "groups": u.groups});
    if !u.uid.is_empty() {
        user["uid"] = u.uid.clone().into();
    }
    if !u.extra.is_empty() {
        user["extra"] = json!(u.extra);
    }
    let mut req = json!({
        "uid": uuid::Uuid::new_v4().to_string(),
        "kind": gvk,
        "resource": gvr,
        "requestKind": request_gvk,
        "requestResource": request_gvr,
        "name": t.name,
        "operation": operation(request.operation),
        "userInfo": user,
        "object": if request.operation == Operation::Delete { Value::Null } else { object.clone() },
        "oldObject": old_object.cloned().unwrap_or(Value::Null),
        "dryRun": request.dry_run,
        "options": request.options,
    });
    if !t.namespace.is_empty() {
        req["namespace"] = t.namespace.clone().into();
    }
    if let Some(sub) = t.subresource {
        req["subResource"] = sub.name().into();
        req["requestSubResource"] = sub.name().into();
    }
    json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": req})
}

/// The JSON variables a match condition sees: `object`, `oldObject`, `request` (the
/// authorizer is added by [`crate::cel::admission_vars`]).
pub fn cel_variables(request: &Admit, seen: &Seen<'_>) -> Vec<(&'static str, Value)> {
    let mut body = request_body(request, seen);
    let mut req = body["request"].take();
    let object = req.get_mut("object").map(Value::take).unwrap_or(Value::Null);
    let old_object = req.get_mut("oldObject").map(Value::take).unwrap_or(Value::Null);
    if let Some(r) = req.as_object_mut() {
        r.remove("object");
        r.remove("oldObject");
    }
    vec![("object", object), ("oldObject", old_object), ("request", req)]
}

/// Checks a webhook's reply as kube's `VerifyAdmissionResponse` does for v1.
pub fn parse_response(reply: &Value, uid: &str) -> Result<Answer, CallFailure> {
    let invalid = |why: String| CallFailure::Invalid(why);
    let api_version = reply.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let kind = reply.get("kind").and_then(Value::as_str).unwrap_or("");
    if api_version != "admission.k8s.io/v1" || kind != "AdmissionReview" {
        return Err(invalid(format!(
            "expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got {api_version}, Kind={kind}"
        )));
    }
    let Some(response) = reply.get("response").filter(|r| r.is_object()) else {
        return Err(invalid("webhook response was absent".into()));
    };
    let got = response.get("uid").and_then(Value::as_str).unwrap_or("");
    if got != uid {
        return Err(invalid(format!("expected response.uid={uid:?}, got {got:?}")));
    }
    let patch = match response.get("patch").and_then(Value::as_str).filter(|p| !p.is_empty()) {
        None => None,
        Some(encoded) => {
            let patch_type = response.get("patchType").and_then(Value::as_str).unwrap_or("");
            if patch_type != "JSONPatch" {
                return Err(invalid(format!(
                    "webhook returned response.patch but not response.patchType (or an unsupported patchType {patch_type:?})"
                )));
            }
            Some(
                base64::engine::general_purpose::STANDARD
                    .decode(encoded)
                    .map_err(|e| invalid(format!("response.patch: {e}")))?,
            )
        }
    };
    let warnings = response
        .get("warnings")
        .and_then(Value::as_array)
        .map(|w| w.iter().filter_map(Value::as_str).map(String::from).collect())
        .unwrap_or_default();
    let audit_annotations = response
        .get("auditAnnotations")
        .and_then(Value::as_object)
        .map(|m| m.iter().map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").to_string())).collect())
        .unwrap_or_default();
    Ok(Answer {
        allowed: response.get("allowed").and_then(Value::as_bool).unwrap_or(false),
        status: response.get("status").cloned().unwrap_or(Value::Null),
        patch,
        warnings,
        audit_annotations,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(response: Value) -> Value {
        json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response})
    }

    #[test]
    fn answers_are_checked_as_kube_checks_them() {
        let e = parse_response(&reply(json!({"uid": "b", "allowed": true})), "a").unwrap_err();
        assert_eq!(e.to_string(), "received invalid webhook response: expected response.uid=\"a\", got \"b\"");
        let e = parse_response(&json!({"response": {"uid": "a"}}), "a").unwrap_err();
        assert!(e.to_string().contains("expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview"));
        let patch = base64::engine::general_purpose::STANDARD.encode(br#"[{"op":"add","path":"/x","value":1}]"#);
        let a = parse_response(
            &reply(json!({"uid": "a", "allowed": true, "patch": patch, "patchType": "JSONPatch", "warnings": ["w"]})),
            "a",
        )
        .unwrap();
        assert!(a.allowed && a.patch.is_some() && a.warnings == ["w"]);
    }

    #[test]
    fn denials_name_the_webhook_with_at_least_400() {
        let a =
            parse_response(&reply(json!({"uid": "a", "allowed": false, "status": {"message": "no"}})), "a").unwrap();
        let e = a.denial("deny.example.com");
        assert_eq!(
            (e.code, e.message.as_str()),
            (400, "admission webhook \"deny.example.com\" denied the request: no")
        );
        let a = parse_response(
            &reply(json!({"uid": "a", "allowed": false, "status": {"code": 403, "reason": "Forbidden"}})),
            "a",
        )
        .unwrap();
        let e = a.denial("x.y.z");
        assert_eq!(
            (e.code, e.reason, e.message.as_str()),
            (403, Reason::Forbidden, "admission webhook \"x.y.z\" denied the request: Forbidden")
        );
        let a = parse_response(&reply(json!({"uid": "a", "allowed": false})), "a").unwrap();
        assert_eq!(a.denial("x.y.z").message, "admission webhook \"x.y.z\" denied the request without explanation");
    }

    #[test]
    fn call_failures_read_as_kubes() {
        let f = CallFailure::Transport(CallError::DeadlineExceeded).at("https://h/p?timeout=10s".into());
        assert_eq!(
            f.to_string(),
            "failed to call webhook: Post \"https://h/p?timeout=10s\": context deadline exceeded"
        );
        assert_eq!(with_timeout("https://h/p", Duration::from_secs(5)), "https://h/p?timeout=5s");
    }
}
