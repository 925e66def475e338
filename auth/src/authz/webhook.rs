//! `--authorization-mode=Webhook`: requests RBAC has no opinion on are sent as a
//! SubjectAccessReview (authorization.k8s.io/v1) to `--authorization-webhook-config-file`'s
//! service. Allowed answers are kept for `--authorization-webhook-cache-authorized-ttl`, the
//! others for `--authorization-webhook-cache-unauthorized-ttl`, keyed by the review itself. A
//! webhook that fails or times out has no opinion (the request is then forbidden unless a
//! later authorizer allows it), counted as a fail-open evaluation as kube counts it.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::Attributes;
use crate::metrics::{
    AUTHORIZATION_WEBHOOK_DURATION_SECONDS, AUTHORIZATION_WEBHOOK_EVALUATIONS_FAIL_OPEN_TOTAL,
    AUTHORIZATION_WEBHOOK_EVALUATIONS_TOTAL,
};
use crate::ttl_cache::TtlCache;
use webhook_client::WebhookClient;

/// How long one review may take.
const REVIEW_TIMEOUT: Duration = Duration::from_secs(30);
/// The authorizer's name in metrics, as kube names the one its flags configure.
const NAME: &str = "webhook";

/// What the webhook said.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Allowed, with the webhook's reason.
    Allow(String),
    /// Denied outright: no later authorizer is asked.
    Deny(String),
    /// No opinion, with why.
    NoOpinion(String),
    /// The webhook could not be asked or answered badly: no opinion, and the error, which
    /// makes the request a 500 unless a later authorizer allows it (kube's legacy flags'
    /// behaviour).
    Failed(String),
}

/// The webhook authorizer.
pub struct WebhookAuthorizer {
    client: WebhookClient,
    /// `--authorization-webhook-version`: `v1` or `v1beta1` (kube 1.30's default).
    version: String,
    authorized_ttl: Duration,
    unauthorized_ttl: Duration,
    /// Review spec (as JSON text) → verdict and when it was given.
    cache: TtlCache<String, Verdict>,
}

/// The `spec` of the SubjectAccessReview for `a`.
pub fn review_spec(a: &Attributes) -> Value {
    let mut spec = json!({"user": a.user.name, "groups": a.user.groups});
    if !a.user.uid.is_empty() {
        spec["uid"] = a.user.uid.clone().into();
    }
    if !a.user.extra.is_empty() {
        spec["extra"] = json!(a.user.extra);
    }
    if a.is_resource_request {
        let mut attrs = serde_json::Map::new();
        for (key, value) in [
            ("namespace", &a.namespace),
            ("verb", &a.verb),
            ("group", &a.api_group),
            ("version", &a.api_version),
            ("resource", &a.resource),
            ("subresource", &a.subresource),
            ("name", &a.name),
        ] {
            if !value.is_empty() || key == "group" {
                attrs.insert(key.into(), value.clone().into());
            }
        }
        spec["resourceAttributes"] = Value::Object(attrs);
    } else {
        spec["nonResourceAttributes"] = json!({"path": a.path, "verb": a.verb});
    }
    spec
}

impl WebhookAuthorizer {
    /// An authorizer calling `client`, keeping allowed answers for `authorized_ttl` and the
    /// others for `unauthorized_ttl`.
    pub fn new(client: WebhookClient, version: &str, authorized_ttl: Duration, unauthorized_ttl: Duration) -> Self {
        let version = version.to_string();
        WebhookAuthorizer { client, version, authorized_ttl, unauthorized_ttl, cache: TtlCache::default() }
    }

    fn ttl(&self, verdict: &Verdict) -> Duration {
        if matches!(verdict, Verdict::Allow(_)) { self.authorized_ttl } else { self.unauthorized_ttl }
    }

    /// Asks the webhook (or the cache) about `a`.
    pub async fn authorize(&self, a: &Attributes) -> Verdict {
        let spec = review_spec(a);
        let key = spec.to_string();
        if let Some(v) = self.cache.get(key.as_str(), |v| self.ttl(v)) {
            return v;
        }
        let mut spec = spec;
        if self.version == "v1beta1"
            && let Some(groups) = spec.as_object_mut().and_then(|s| s.remove("groups"))
        {
            // v1beta1 names the field `group`.
            spec["group"] = groups;
        }
        let review = json!({
            "apiVersion": format!("authorization.k8s.io/{}", self.version),
            "kind": "SubjectAccessReview",
            "metadata": {"creationTimestamp": null},
            "spec": spec,
            "status": {"allowed": false},
        });
        let started = Instant::now();
        let outcome = self.client.post_json(&review, REVIEW_TIMEOUT).await;
        let result = match &outcome {
            Ok((code, _)) if (200..300).contains(code) => "success",
            Err(e) if e.contains("timed out") => "timeout",
            _ => "error",
        };
        metrics::counter!(AUTHORIZATION_WEBHOOK_EVALUATIONS_TOTAL, "name" => NAME, "result" => result).increment(1);
        metrics::histogram!(AUTHORIZATION_WEBHOOK_DURATION_SECONDS, "name" => NAME, "result" => result)
            .record(started.elapsed().as_secs_f64());
        let body = match outcome {
            Ok((code, body)) if (200..300).contains(&code) => body,
            Ok((code, _)) => return self.fail_open(result, format!("the authorization webhook answered {code}")),
            Err(e) => return self.fail_open(result, e),
        };
        let status = &body["status"];
        let reason = status["reason"].as_str().unwrap_or_default().to_string();
        let verdict = if status["allowed"].as_bool() == Some(true) {
            Verdict::Allow(reason)
        } else if status["denied"].as_bool() == Some(true) {
            Verdict::Deny(reason)
        } else {
            Verdict::NoOpinion(reason)
        };
        self.cache.insert(key, verdict.clone(), self.authorized_ttl.max(self.unauthorized_ttl));
        verdict
    }

    fn fail_open(&self, result: &'static str, why: String) -> Verdict {
        tracing::warn!("authorization webhook: {why}");
        metrics::counter!(AUTHORIZATION_WEBHOOK_EVALUATIONS_FAIL_OPEN_TOTAL, "name" => NAME, "result" => result)
            .increment(1);
        Verdict::Failed(why)
    }
}

#[cfg(test)]
mod tests {
    use apimachinery::request::{UserInfo, parse_request_info};

    use super::*;

    #[test]
    fn the_review_names_the_resource_or_path_as_kube_sends_it() {
        let user = UserInfo { name: "alice".into(), groups: vec!["dev".into()], ..Default::default() };
        let a = Attributes::of(user.clone(), &parse_request_info("GET", "/api/v1/namespaces/ns/pods/web/log", false));
        let spec = review_spec(&a);
        assert_eq!(
            spec["resourceAttributes"],
            json!({"namespace": "ns", "verb": "get", "group": "", "version": "v1", "resource": "pods", "subresource": "log", "name": "web"})
        );
        assert_eq!(spec["user"], "alice");
        let a = Attributes::of(user, &parse_request_info("GET", "/healthz", false));
        assert_eq!(review_spec(&a)["nonResourceAttributes"], json!({"path": "/healthz", "verb": "get"}));
    }
}
