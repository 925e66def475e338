//! `--authentication-token-webhook-config-file`: tokens no other authenticator knows are sent
//! as a TokenReview (authentication.k8s.io/v1) to a remote service, which says who holds them.
//! Answers, yes or no, are kept for `--authentication-token-webhook-cache-ttl` keyed by the
//! token's SHA-256, so a busy client costs one call per TTL, and the token itself is never
//! kept.

use std::time::Duration;

use apimachinery::messages::Authenticated;
use apimachinery::request::UserInfo;
use async_trait::async_trait;
use serde_json::{Value, json};

use super::TokenAuthenticator;
use crate::ttl_cache::TtlCache;
use webhook_client::WebhookClient;

/// How long one review may take.
const REVIEW_TIMEOUT: Duration = Duration::from_secs(30);

type Answer = Option<UserInfo>;

/// The webhook token authenticator.
pub struct WebhookTokenAuthenticator {
    client: WebhookClient,
    /// `--authentication-token-webhook-version`: `v1` or `v1beta1` (kube 1.30's default).
    version: String,
    ttl: Duration,
    /// Token digest → answer and when it was given; checked and filled by every review.
    cache: TtlCache<[u8; 32], Answer>,
}

fn digest(token: &str) -> [u8; 32] {
    let d = ring::digest::digest(&ring::digest::SHA256, token.as_bytes());
    let mut out = [0; 32];
    out.copy_from_slice(d.as_ref());
    out
}

/// The user a TokenReview's `status.user` names.
fn reviewed_user(status: &Value) -> UserInfo {
    let user = &status["user"];
    let strings = |v: &Value| -> Vec<String> {
        v.as_array().map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect()).unwrap_or_default()
    };
    let extra =
        user["extra"].as_object().map(|m| m.iter().map(|(k, v)| (k.clone(), strings(v))).collect()).unwrap_or_default();
    UserInfo {
        name: user["username"].as_str().unwrap_or_default().to_string(),
        uid: user["uid"].as_str().unwrap_or_default().to_string(),
        groups: strings(&user["groups"]),
        extra,
    }
}

impl WebhookTokenAuthenticator {
    /// An authenticator sending `version` TokenReviews to `client`, keeping answers for `ttl`.
    pub fn new(client: WebhookClient, version: &str, ttl: Duration) -> Self {
        WebhookTokenAuthenticator { client, version: version.to_string(), ttl, cache: TtlCache::default() }
    }

    async fn review(&self, token: &str) -> Result<Answer, String> {
        let review = json!({
            "apiVersion": format!("authentication.k8s.io/{}", self.version),
            "kind": "TokenReview",
            "metadata": {"creationTimestamp": null},
            "spec": {"token": token},
            "status": {"user": {}},
        });
        let (code, body) = self.client.post_json(&review, REVIEW_TIMEOUT).await?;
        if !(200..300).contains(&code) {
            return Err(format!("the token webhook answered {code}"));
        }
        let status = &body["status"];
        if status["authenticated"].as_bool() != Some(true) {
            return Ok(None);
        }
        Ok(Some(reviewed_user(status)))
    }
}

#[async_trait(?Send)]
impl TokenAuthenticator for WebhookTokenAuthenticator {
    fn name(&self) -> &'static str {
        "webhook"
    }

    async fn authenticate(&self, token: &str, _: &[String]) -> Result<Option<Authenticated>, String> {
        let key = digest(token);
        let answer = match self.cache.get(&key, |_| self.ttl) {
            Some(answer) => answer,
            None => {
                let answer = self.review(token).await?;
                if !self.ttl.is_zero() {
                    self.cache.insert(key, answer.clone(), self.ttl);
                }
                answer
            }
        };
        match answer {
            Some(user) => Ok(Some(Authenticated { user, audiences: Vec::new() })),
            None => Err("the token webhook did not authenticate the token".into()),
        }
    }
}
