//! [`ApiError`]: the Kubernetes `Status` (`kind: Status, apiVersion: v1`) that every layer's
//! error becomes. Each crate keeps its own error enum and maps it here exactly once, so the
//! code, reason and message a client sees are decided in one place per layer.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// `metav1.StatusReason`: the machine-readable reason clients switch on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[allow(missing_docs)]
pub enum Reason {
    NotFound,
    AlreadyExists,
    Conflict,
    Invalid,
    BadRequest,
    Unauthorized,
    Forbidden,
    MethodNotAllowed,
    NotAcceptable,
    UnsupportedMediaType,
    RequestEntityTooLarge,
    Gone,
    Expired,
    TooManyRequests,
    InternalError,
    ServerTimeout,
    ServiceUnavailable,
    Timeout,
    /// A plain error kube returns without a reason (`metav1.StatusReasonUnknown`): 500, and
    /// the Status carries no `reason`.
    #[serde(rename = "")]
    Unknown,
}

impl Reason {
    /// The HTTP status code kube-apiserver pairs with this reason.
    pub fn code(self) -> u16 {
        match self {
            Reason::NotFound => 404,
            Reason::AlreadyExists | Reason::Conflict => 409,
            Reason::Invalid => 422,
            Reason::BadRequest => 400,
            Reason::Unauthorized => 401,
            Reason::Forbidden => 403,
            Reason::MethodNotAllowed => 405,
            Reason::NotAcceptable => 406,
            Reason::UnsupportedMediaType => 415,
            Reason::RequestEntityTooLarge => 413,
            Reason::Gone | Reason::Expired => 410,
            Reason::TooManyRequests => 429,
            Reason::InternalError | Reason::ServerTimeout | Reason::Unknown => 500,
            Reason::ServiceUnavailable => 503,
            Reason::Timeout => 504,
        }
    }
}

/// One entry of `details.causes`: which field failed and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cause {
    /// `metav1.CauseType`, e.g. `FieldValueInvalid`, `FieldValueRequired`.
    pub reason: String,
    /// Human-readable text, e.g. `Invalid value: "Bad": ...`.
    pub message: String,
    /// JSON-path-like field, e.g. `metadata.name`.
    pub field: String,
}

/// A failed API call, shaped as the `Status` object kube-apiserver returns.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, thiserror::Error)]
#[error("{code} {reason:?}: {message}")]
pub struct ApiError {
    /// HTTP status code.
    pub code: u16,
    /// Machine-readable reason.
    pub reason: Reason,
    /// Human-readable message, worded as kube-apiserver words it.
    pub message: String,
    /// `details.name`.
    pub name: Option<String>,
    /// `details.group`.
    pub group: Option<String>,
    /// `details.kind` (a resource name for most errors, a Kind for Invalid).
    pub kind: Option<String>,
    /// `details.causes`.
    pub causes: Vec<Cause>,
    /// `details.retryAfterSeconds`, also sent as the `Retry-After` header.
    pub retry_after_seconds: Option<u32>,
    /// `metadata.continue`: a fresh token offered with 410 for an expired continue token.
    pub continue_token: Option<String>,
}

/// `configmaps` or `deployments.apps`: how kube names a resource in messages.
pub fn qualified_resource(group: &str, resource: &str) -> String {
    if group.is_empty() { resource.to_string() } else { format!("{resource}.{group}") }
}

impl ApiError {
    /// An error with just a reason and message.
    pub fn new(reason: Reason, message: impl Into<String>) -> Self {
        ApiError {
            code: reason.code(),
            reason,
            message: message.into(),
            name: None,
            group: None,
            kind: None,
            causes: Vec::new(),
            retry_after_seconds: None,
            continue_token: None,
        }
    }

    fn about(mut self, group: &str, resource: &str, name: &str) -> Self {
        self.group = (!group.is_empty()).then(|| group.to_string());
        self.kind = Some(resource.to_string());
        self.name = (!name.is_empty()).then(|| name.to_string());
        self
    }

    /// 404: `configmaps "foo" not found`.
    pub fn not_found(group: &str, resource: &str, name: &str) -> Self {
        let qr = qualified_resource(group, resource);
        Self::new(Reason::NotFound, format!("{qr} \"{name}\" not found")).about(group, resource, name)
    }

    /// 409: `configmaps "foo" already exists`.
    pub fn already_exists(group: &str, resource: &str, name: &str) -> Self {
        let qr = qualified_resource(group, resource);
        Self::new(Reason::AlreadyExists, format!("{qr} \"{name}\" already exists")).about(group, resource, name)
    }

    /// 409 Conflict for a stale resourceVersion or failed precondition.
    pub fn conflict(group: &str, resource: &str, name: &str, why: &str) -> Self {
        let qr = qualified_resource(group, resource);
        Self::new(Reason::Conflict, format!("Operation cannot be fulfilled on {qr} \"{name}\": {why}"))
            .about(group, resource, name)
    }

    /// The Conflict kube returns when the resourceVersion in an update is stale.
    pub fn stale_resource_version(group: &str, resource: &str, name: &str) -> Self {
        Self::conflict(
            group,
            resource,
            name,
            "the object has been modified; please apply your changes to the latest version and try again",
        )
    }

    /// 422 Invalid: `Kind.group "name" is invalid: <field>: <message>` (several causes in
    /// brackets, repeated messages once, as kube's error aggregate prints them).
    pub fn invalid(group: &str, kind: &str, name: &str, causes: Vec<Cause>) -> Self {
        let summary = aggregate(&causes);
        let qualified_kind = if group.is_empty() { kind.to_string() } else { format!("{kind}.{group}") };
        let mut e = Self::new(Reason::Invalid, format!("{qualified_kind} \"{name}\" is invalid: {summary}"))
            .about(group, kind, name);
        e.causes = causes;
        e
    }

    /// Field errors kube returns as a plain error aggregate rather than as 422 Invalid (the
    /// binding's validation): 500 without a reason, the causes as the message.
    pub fn from_field_errors(causes: &[Cause]) -> Self {
        Self::unknown(aggregate(causes))
    }

    /// 404 for a path naming no served resource: `the server could not find the requested
    /// resource`.
    pub fn resource_not_found() -> Self {
        Self::new(Reason::NotFound, "the server could not find the requested resource")
    }

    /// 400 BadRequest.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(Reason::BadRequest, message)
    }

    /// 403 Forbidden about a resource: `<qr> "<name>" is forbidden: <why>`.
    pub fn forbidden(group: &str, resource: &str, name: &str, why: &str) -> Self {
        let qr = qualified_resource(group, resource);
        let subject = if name.is_empty() { qr } else { format!("{qr} \"{name}\"") };
        Self::new(Reason::Forbidden, format!("{subject} is forbidden: {why}")).about(group, resource, name)
    }

    /// 401 Unauthorized, as kube words it.
    pub fn unauthorized() -> Self {
        Self::new(Reason::Unauthorized, "Unauthorized")
    }

    /// 405 MethodNotAllowed.
    pub fn method_not_allowed() -> Self {
        Self::new(Reason::MethodNotAllowed, "the server does not allow this method on the requested resource")
    }

    /// 410 Expired: a resourceVersion or continue token older than what is kept.
    pub fn expired(message: impl Into<String>) -> Self {
        Self::new(Reason::Expired, message)
    }

    /// 429 TooManyRequests with Retry-After.
    pub fn too_many_requests(message: impl Into<String>, retry_after_seconds: u32) -> Self {
        let mut e = Self::new(Reason::TooManyRequests, message);
        e.retry_after_seconds = Some(retry_after_seconds);
        e
    }

    /// 500 InternalError: `Internal error occurred: <why>`.
    pub fn internal(why: impl std::fmt::Display) -> Self {
        let mut e = Self::new(Reason::InternalError, format!("Internal error occurred: {why}"));
        e.causes.push(Cause { reason: String::new(), message: why.to_string(), field: String::new() });
        e
    }

    /// 500 with no reason: how kube answers a plain error from below the API layer.
    pub fn unknown(message: impl Into<String>) -> Self {
        Self::new(Reason::Unknown, message)
    }

    /// 503 ServiceUnavailable.
    pub fn unavailable(message: impl Into<String>) -> Self {
        Self::new(Reason::ServiceUnavailable, message)
    }

    /// 504 Timeout, worded as kube's `NewTimeoutError`: `Timeout: <message>`.
    pub fn timeout(message: impl Into<String>, retry_after_seconds: u32) -> Self {
        let mut e = Self::new(Reason::Timeout, format!("Timeout: {}", message.into()));
        e.retry_after_seconds = Some(retry_after_seconds);
        e
    }

    /// 504 for a request that ran past its deadline (`--request-timeout`, `?timeout=`), worded
    /// as kube's timeout filter words it.
    pub fn request_timeout() -> Self {
        Self::new(Reason::Timeout, "Timeout: request did not complete within the allotted timeout")
    }

    /// 504 for a resourceVersion the server has not reached: kube's `TooLargeResourceVersion`,
    /// whose `ResourceVersionTooLarge` cause is how client-go's reflector recognises it.
    pub fn too_large_resource_version(requested: u64, current: u64) -> Self {
        let mut e = Self::timeout(format!("Too large resource version: {requested}, current: {current}"), 1);
        e.causes.push(Cause {
            reason: "ResourceVersionTooLarge".into(),
            message: "Too large resource version".into(),
            field: String::new(),
        });
        e
    }

    /// The `Status` object as JSON.
    pub fn to_status(&self) -> Value {
        let mut status = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        });
        if self.reason == Reason::Unknown {
            status.as_object_mut().expect("object").remove("reason");
        }
        let mut details = serde_json::Map::new();
        if let Some(n) = &self.name {
            details.insert("name".into(), n.clone().into());
        }
        if let Some(g) = &self.group {
            details.insert("group".into(), g.clone().into());
        }
        if let Some(k) = &self.kind {
            details.insert("kind".into(), k.clone().into());
        }
        if !self.causes.is_empty() {
            let causes: Vec<Value> = self
                .causes
                .iter()
                .map(|c| {
                    let mut m = serde_json::Map::new();
                    if !c.reason.is_empty() {
                        m.insert("reason".into(), c.reason.clone().into());
                    }
                    m.insert("message".into(), c.message.clone().into());
                    if !c.field.is_empty() {
                        m.insert("field".into(), c.field.clone().into());
                    }
                    Value::Object(m)
                })
                .collect();
            details.insert("causes".into(), causes.into());
        }
        if let Some(r) = self.retry_after_seconds {
            details.insert("retryAfterSeconds".into(), r.into());
        }
        if !details.is_empty() {
            status["details"] = Value::Object(details);
        }
        if let Some(token) = &self.continue_token {
            status["metadata"]["continue"] = token.clone().into();
        }
        status
    }
}

/// A stage that could not be reached or did not answer, as kube would answer it: 429 for a
/// saturated stage (with Retry-After), 503 naming a stopped or unreachable one, kube's 504
/// Timeout for a request past its deadline (the stage that held it named in the cause).
impl From<actors::StageError> for ApiError {
    fn from(e: actors::StageError) -> Self {
        use actors::StageError;
        match e {
            StageError::Saturated { .. } => ApiError::too_many_requests(format!("{e}; please try again later"), 1),
            StageError::Stopped { .. } | StageError::Transport { .. } => ApiError::unavailable(e.to_string()),
            StageError::DeadlineExceeded { .. } => {
                let mut timeout = ApiError::request_timeout();
                timeout.causes.push(Cause { reason: String::new(), message: e.to_string(), field: String::new() });
                timeout
            }
        }
    }
}

/// Field errors as kube's error aggregate prints them: `<field>: <message>`, several in
/// brackets, repeated ones once.
fn aggregate(causes: &[Cause]) -> String {
    let mut list: Vec<String> = Vec::new();
    for c in causes {
        let m = if c.field.is_empty() { c.message.clone() } else { format!("{}: {}", c.field, c.message) };
        if !list.contains(&m) {
            list.push(m);
        }
    }
    if list.len() == 1 { list.swap_remove(0) } else { format!("[{}]", list.join(", ")) }
}

/// A `Status` with `status: Success`, as returned by some deletes.
pub fn success_status(group: &str, resource: &str, name: &str, uid: Option<&str>) -> Value {
    let mut details = json!({ "name": name, "kind": resource });
    if !group.is_empty() {
        details["group"] = group.into();
    }
    if let Some(uid) = uid {
        details["uid"] = uid.into();
    }
    json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": details,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn not_found_names_group_qualified_resource() {
        let s = ApiError::not_found("apps", "deployments", "web").to_status();
        assert_eq!(s["message"], "deployments.apps \"web\" not found");
        assert_eq!(s["code"], 404);
        assert_eq!(s["reason"], "NotFound");
        assert_eq!(s["details"]["group"], "apps");
        assert_eq!(s["details"]["kind"], "deployments");
    }

    #[test]
    fn invalid_lists_causes() {
        let e = ApiError::invalid(
            "",
            "ConfigMap",
            "Bad",
            vec![Cause {
                reason: "FieldValueInvalid".into(),
                message: "Invalid value: \"Bad\"".into(),
                field: "metadata.name".into(),
            }],
        );
        let s = e.to_status();
        assert_eq!(s["code"], 422);
        assert_eq!(s["message"], "ConfigMap \"Bad\" is invalid: metadata.name: Invalid value: \"Bad\"");
        assert_eq!(s["details"]["causes"][0]["field"], "metadata.name");
    }

    #[test]
    fn invalid_names_the_group_of_non_core_kinds() {
        let cause =
            |f: &str| Cause { reason: "FieldValueRequired".into(), message: "Required value".into(), field: f.into() };
        let e = ApiError::invalid("apps", "Deployment", "web", vec![cause("spec.selector"), cause("spec.template")]);
        assert_eq!(
            e.message,
            "Deployment.apps \"web\" is invalid: [spec.selector: Required value, spec.template: Required value]"
        );
        assert_eq!(e.to_status()["details"]["kind"], "Deployment");
        assert_eq!(e.to_status()["details"]["group"], "apps");
    }

    #[test]
    fn too_many_requests_carries_retry_after() {
        let s = ApiError::too_many_requests("busy", 1).to_status();
        assert_eq!(s["code"], 429);
        assert_eq!(s["details"]["retryAfterSeconds"], 1);
    }
}
