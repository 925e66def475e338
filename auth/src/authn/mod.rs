//! The authentication stage: credentials to a user, by the authenticators kube tries in
//! order. A client certificate verified by TLS against the client CA decides first (CN is the
//! user, O the groups); then a bearer token goes to the token authenticators in turn
//! (`--token-auth-file`, ServiceAccount tokens, bootstrap tokens, OIDC, the token webhook), the first to accept
//! it deciding; a request with no credentials is `system:anonymous` when `--anonymous-auth`
//! allows it. A token nobody accepts is 401 even with anonymous auth on, as kube.
//!
//! Audiences: a request is for the server's API audiences (`--api-audiences`) unless a
//! TokenReview names others. Authenticators whose tokens carry no audience (the token file, a
//! webhook) accept only requests for the API audiences, as kube's audience-agnostic wrapper.

use std::sync::Arc;
use std::time::Instant;

use actix::{Actor, Context};
use actors::{Deadline, StageHandler, Work};
use apimachinery::error::ApiError;
use apimachinery::messages::{Authenticate, Authenticated};
use apimachinery::request::UserInfo;
use async_trait::async_trait;

use crate::metrics::{AUTHENTICATION_ATTEMPTS, AUTHENTICATION_DURATION_SECONDS};

pub mod bootstrap_token;
pub mod oidc;
pub mod token_file;
pub mod webhook;

pub use token_file::{StaticTokens, load_token_file};

/// One way of recognising bearer tokens.
///
/// Its futures are not `Send`: they run on the authentication stage's arbiter, and the webhook
/// and OIDC ones call out through actix-web clients, which live on one thread.
#[async_trait(?Send)]
pub trait TokenAuthenticator: Send + Sync {
    /// Its name in logs and metrics.
    fn name(&self) -> &'static str;
    /// Whether its tokens name their audiences (else only the API audiences are accepted).
    fn audience_aware(&self) -> bool {
        false
    }
    /// The user `token` belongs to, with the audiences it holds for among `audiences`;
    /// `Ok(None)` when the token is not one of this authenticator's, `Err` when it is but is
    /// refused (why goes to the log, never to the client).
    async fn authenticate(&self, token: &str, audiences: &[String]) -> Result<Option<Authenticated>, String>;
}

/// The authentication stage actor.
pub struct AuthenticationActor {
    authenticators: Vec<Arc<dyn TokenAuthenticator>>,
    api_audiences: Arc<Vec<String>>,
    anonymous: bool,
}

impl AuthenticationActor {
    /// A stage trying `authenticators` in order, for `api_audiences`, allowing anonymous
    /// requests if `anonymous`.
    pub fn new(authenticators: Vec<Arc<dyn TokenAuthenticator>>, api_audiences: Vec<String>, anonymous: bool) -> Self {
        AuthenticationActor { authenticators, api_audiences: Arc::new(api_audiences), anonymous }
    }
}

impl Actor for AuthenticationActor {
    type Context = Context<Self>;
}

/// Adds `system:authenticated`, which every authenticated user has.
pub fn authenticated(mut user: UserInfo) -> UserInfo {
    if !user.in_group("system:authenticated") && user.name != "system:anonymous" {
        user.groups.push("system:authenticated".into());
    }
    user
}

/// A JWT's `iss` claim, read before verifying, so that a token of another issuer goes on to
/// the next authenticator untouched.
pub(crate) fn unverified_issuer(token: &str) -> Option<String> {
    use base64::Engine;
    let mut parts = token.split('.');
    let (_, payload, _, None) = (parts.next()?, parts.next()?, parts.next()?, parts.next()) else { return None };
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(payload.trim_end_matches('=')).ok()?;
    let claims: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
    claims.get("iss")?.as_str().map(str::to_string)
}

fn intersect(a: &[String], b: &[String]) -> Vec<String> {
    a.iter().filter(|x| b.contains(x)).cloned().collect()
}

/// Runs `token` through `authenticators`; the first acceptance wins.
async fn authenticate_token(
    authenticators: &[Arc<dyn TokenAuthenticator>],
    api_audiences: &[String],
    token: &str,
    asked: &[String],
) -> Result<Authenticated, ApiError> {
    let audiences = if asked.is_empty() { api_audiences } else { asked };
    for a in authenticators {
        let started = Instant::now();
        let outcome = a.authenticate(token, audiences).await;
        let result = match &outcome {
            Ok(Some(_)) => "success",
            Ok(None) => continue,
            Err(_) => "failure",
        };
        metrics::histogram!(AUTHENTICATION_DURATION_SECONDS, "result" => result)
            .record(started.elapsed().as_secs_f64());
        match outcome {
            Ok(Some(mut found)) => {
                if !a.audience_aware() {
                    found.audiences = intersect(audiences, api_audiences);
                    if found.audiences.is_empty() {
                        tracing::debug!(authenticator = a.name(), "token refused: not for the API audiences");
                        continue;
                    }
                }
                found.user = authenticated(found.user);
                return Ok(found);
            }
            Ok(None) => {}
            Err(why) => tracing::debug!(authenticator = a.name(), "token refused: {why}"),
        }
    }
    Err(ApiError::unauthorized())
}

impl StageHandler<Authenticate> for AuthenticationActor {
    fn handle(
        &mut self,
        Authenticate(creds): Authenticate,
        _: Deadline,
        _: &mut Context<Self>,
    ) -> Work<Self, Result<Authenticated, ApiError>> {
        let count = |r: &Result<Authenticated, ApiError>| {
            let label = if r.is_ok() { "success" } else { "error" };
            metrics::counter!(AUTHENTICATION_ATTEMPTS, "result" => label).increment(1);
        };
        // kube tries client certificates before tokens: a verified certificate decides.
        if let Some(user) = creds.client_certificate {
            let out = Ok(Authenticated { user: authenticated(user), audiences: Vec::new() });
            count(&out);
            return Work::Done(out);
        }
        let Some(token) = creds.bearer_token else {
            let out = if self.anonymous {
                Ok(Authenticated { user: UserInfo::anonymous(), audiences: Vec::new() })
            } else {
                Err(ApiError::unauthorized())
            };
            count(&out);
            return Work::Done(out);
        };
        let (authenticators, api_audiences) = (self.authenticators.clone(), self.api_audiences.clone());
        Work::later(async move {
            let out = authenticate_token(&authenticators, &api_audiences, &token, &creds.audiences).await;
            count(&out);
            out
        })
    }
}

actors::stage_handler!(AuthenticationActor => Authenticate);
