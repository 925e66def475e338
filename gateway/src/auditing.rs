//! kube's audit filter at the HTTP boundary: what the chain records of a request for
//! [`auth::audit`], and when. An event is begun once the request is authenticated (the policy
//! is evaluated against the authenticated user), learns the impersonated user, the
//! authorization decision and the request body on the way, and is emitted at
//! `RequestReceived` and `ResponseComplete`; a watch also at `ResponseStarted`, and its
//! `ResponseComplete` when its stream ends.

use std::cell::RefCell;
use std::pin::Pin;
use std::task::{Context, Poll};

use actix_web::body::{BodySize, BoxBody, MessageBody};
use actix_web::{HttpRequest, HttpResponse};
use apimachinery::error::ApiError;
use apimachinery::messages::AuthorizationDecision;
use apimachinery::request::{RequestInfo, UserInfo};
use auth::Attributes;
use auth::audit::{AuditCompletion, Auditor, Event, Level, RequestAuditConfig, Stage};
use chrono::{DateTime, Utc};
use serde_json::Value;

/// The request bodies the REST handlers read, kept for the event at `Request` level and above.
pub type BodySlot = RefCell<Option<bytes::Bytes>>;

/// Annotations admission asked for, carried to the audit event in the response's extensions.
pub struct AuditAnnotations(pub Vec<(String, String)>);

/// One request's audit event in the making.
pub struct RequestAudit {
    auditor: Auditor,
    config: RequestAuditConfig,
    event: Event,
}

/// The event of a request `user` makes, if the policy audits it.
fn begin(
    auditor: Option<&Auditor>,
    req: &HttpRequest,
    info: &RequestInfo,
    user: &UserInfo,
    audit_id: &str,
    received: DateTime<Utc>,
) -> Option<RequestAudit> {
    let auditor = auditor?;
    let attrs = Attributes::of(user.clone(), info);
    let config = auditor.evaluate(&attrs);
    if config.level == Level::None {
        return None;
    }
    let header = |name: &str| req.headers().get(name).and_then(|v| v.to_str().ok());
    let peer = req.peer_addr().map(|a| a.ip());
    let ips = auth::audit::source_ips(header("X-Forwarded-For"), header("X-Real-Ip"), peer);
    let uri = req.uri().path_and_query().map_or_else(|| req.path().to_string(), |p| p.to_string());
    let event =
        Event::received(config.level, audit_id, &attrs, &uri, ips, header("User-Agent").unwrap_or(""), received);
    Some(RequestAudit { auditor: auditor.clone(), config, event })
}

/// Begins and emits at `RequestReceived` the event of an authenticated request.
pub fn begin_authenticated(
    auditor: Option<&Auditor>,
    req: &HttpRequest,
    info: &RequestInfo,
    user: &UserInfo,
    audit_id: &str,
    received: DateTime<Utc>,
) -> Option<RequestAudit> {
    let audit = begin(auditor, req, info, user, audit_id, received)?;
    audit.auditor.emit(&audit.config, &audit.event, Stage::RequestReceived);
    Some(audit)
}

/// Records a request refused by authentication as kube's failed-authentication audit does:
/// one event, at `ResponseStarted`, with no user, code 401 and the methods `attempted`.
pub fn failed_authentication(
    auditor: Option<&Auditor>,
    req: &HttpRequest,
    info: &RequestInfo,
    audit_id: &str,
    received: DateTime<Utc>,
    attempted: &[&str],
) {
    let Some(mut audit) = begin(auditor, req, info, &UserInfo::default(), audit_id, received) else { return };
    let mut status = ApiError::unauthorized();
    status.message = format!("Authentication failed, attempted: {}", attempted.join(", "));
    audit.event.set_error(&status);
    audit.auditor.emit(&audit.config, &audit.event, Stage::ResponseStarted);
}

/// A request body as JSON, if it is JSON or YAML (protobuf bodies are not recorded).
fn decoded(body: &[u8]) -> Option<Value> {
    serde_json::from_slice(body).ok().or_else(|| serde_yaml_ng::from_slice(body).ok()).filter(Value::is_object)
}

impl RequestAudit {
    /// Records whom the request impersonates.
    pub fn impersonated(&mut self, user: &UserInfo) {
        self.event.set_impersonated_user(user);
    }

    /// Records the authorization decision.
    pub fn authorized(&mut self, decision: &AuthorizationDecision) {
        self.event.set_authorization(decision.allowed, &decision.reason);
    }

    /// Completes the event with the request body the handlers read and the outcome, and emits
    /// it; a successful watch is emitted at `ResponseStarted` now and completed when its
    /// stream ends.
    pub fn finish(
        mut self,
        body: Option<bytes::Bytes>,
        outcome: Result<HttpResponse, ApiError>,
        long_running: bool,
    ) -> Result<HttpResponse, ApiError> {
        if let Some(object) = body.as_deref().and_then(decoded) {
            if self.event.verb == "patch" {
                self.event.set_request_patch(&object);
            } else {
                self.event.set_request_object(&object);
            }
        }
        let response = match outcome {
            Err(e) => {
                self.event.set_error(&e);
                self.auditor.emit(&self.config, &self.event, Stage::ResponseComplete);
                return Err(e);
            }
            Ok(r) => r,
        };
        self.event.set_response_code(response.status().as_u16());
        if let Some(AuditAnnotations(said)) = response.extensions().get::<AuditAnnotations>() {
            for (key, value) in said {
                self.event.annotate(key, value);
            }
        }
        if long_running && response.status().is_success() {
            self.auditor.emit(&self.config, &self.event, Stage::ResponseStarted);
            let completion = self.auditor.complete_on_drop(self.config, self.event);
            return Ok(response.map_body(|_, body| BoxBody::new(Audited { body, _completion: completion })));
        }
        let response = if self.config.level >= Level::RequestResponse {
            let (response, body) = response.into_parts();
            match body.try_into_bytes() {
                Ok(bytes) => {
                    if let Ok(object) = serde_json::from_slice::<Value>(&bytes) {
                        self.event.set_response_object(&object);
                    }
                    response.set_body(BoxBody::new(bytes))
                }
                // A streamed list: recorded without its body.
                Err(body) => response.set_body(body),
            }
        } else {
            response
        };
        self.auditor.emit(&self.config, &self.event, Stage::ResponseComplete);
        Ok(response)
    }
}

/// A watch's body, which completes its audit event when the stream is dropped.
struct Audited {
    body: BoxBody,
    _completion: AuditCompletion,
}

impl MessageBody for Audited {
    type Error = Box<dyn std::error::Error>;

    fn size(&self) -> BodySize {
        self.body.size()
    }

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<bytes::Bytes, Self::Error>>> {
        Pin::new(&mut self.body).poll_next(cx)
    }
}
