//! ServiceAccount tokens: the JWTs a TokenRequest (`POST .../serviceaccounts/<name>/token`)
//! answers with, the legacy ones kept in `kubernetes.io/service-account-token` Secrets, and
//! their verification ([`authenticator`]).
//!
//! Bound tokens carry kube's claims: `iss` (`--service-account-issuer`), `sub`
//! (`system:serviceaccount:<ns>:<name>`), `aud`, `exp`/`iat`/`nbf`, a `jti`, and under
//! `kubernetes.io` the namespace, the ServiceAccount's name and uid, and the Pod or Secret the
//! token is bound to. Legacy tokens carry the older flat claims and no expiry.

use std::sync::Arc;
use std::time::Duration;

use jsonwebtoken::Header;
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub mod authenticator;
pub mod keys;

pub use keys::KeySet;

/// The issuer of legacy Secret-based tokens.
pub const LEGACY_ISSUER: &str = "kubernetes/serviceaccount";
/// The shortest token a TokenRequest may ask for.
pub const MIN_EXPIRATION: Duration = Duration::from_secs(600);
/// The longest: 2^32 seconds.
pub const MAX_EXPIRATION_SECONDS: i64 = 1 << 32;

/// A reference to an object inside the claims.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ref {
    /// Its name.
    pub name: String,
    /// Its uid.
    pub uid: String,
}

/// The `kubernetes.io` claim of a bound token.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KubernetesClaims {
    /// The ServiceAccount's namespace.
    pub namespace: String,
    /// The ServiceAccount.
    pub serviceaccount: Ref,
    /// The Pod the token is bound to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod: Option<Ref>,
    /// The Secret the token is bound to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret: Option<Ref>,
    /// After this time the token is stale: still valid, but counted and reported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warnafter: Option<i64>,
}

/// The claims of a bound token.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BoundClaims {
    /// Audiences.
    pub aud: Vec<String>,
    /// Expiry (Unix seconds).
    pub exp: i64,
    /// Issued at.
    pub iat: i64,
    /// Issuer.
    pub iss: String,
    /// Token id, reported as the user's `authentication.kubernetes.io/credential-id`.
    #[serde(default)]
    pub jti: String,
    /// Kubernetes' own claims.
    #[serde(rename = "kubernetes.io")]
    pub kubernetes: KubernetesClaims,
    /// Not before.
    pub nbf: i64,
    /// Subject: `system:serviceaccount:<ns>:<name>`.
    pub sub: String,
}

/// The claims of a legacy Secret-based token.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LegacyClaims {
    /// Always [`LEGACY_ISSUER`].
    pub iss: String,
    /// The ServiceAccount's namespace.
    #[serde(rename = "kubernetes.io/serviceaccount/namespace")]
    pub namespace: String,
    /// The Secret holding the token.
    #[serde(rename = "kubernetes.io/serviceaccount/secret.name")]
    pub secret_name: String,
    /// The ServiceAccount's name.
    #[serde(rename = "kubernetes.io/serviceaccount/service-account.name")]
    pub service_account_name: String,
    /// The ServiceAccount's uid.
    #[serde(rename = "kubernetes.io/serviceaccount/service-account.uid")]
    pub service_account_uid: String,
    /// Subject.
    pub sub: String,
}

/// The object a token is bound to (a TokenRequest's `spec.boundObjectRef`, checked to exist).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Bound {
    /// A Pod.
    Pod(Ref),
    /// A Secret.
    Secret(Ref),
}

/// What a TokenRequest asks for, once checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TokenSpec {
    /// The audiences; the server's API audiences when the request names none.
    pub audiences: Vec<String>,
    /// Lifetime.
    pub expiration: Duration,
    /// The bound object, if any.
    pub bound: Option<Bound>,
}

/// The user name of a ServiceAccount.
pub fn user_name(namespace: &str, name: &str) -> String {
    format!("system:serviceaccount:{namespace}:{name}")
}

/// Issues tokens: the TokenRequest subresource and the legacy token controller call it.
pub struct TokenIssuer {
    keys: Arc<KeySet>,
    issuer: String,
    api_audiences: Vec<String>,
    max_expiration: Option<Duration>,
}

fn meta(object: &Value, field: &str) -> String {
    object.pointer(&format!("/metadata/{field}")).and_then(Value::as_str).unwrap_or_default().to_string()
}

impl TokenIssuer {
    /// An issuer signing with `keys`' signing key as `issuer`; `max_expiration` caps lifetimes
    /// (`--service-account-max-token-expiration`).
    pub fn new(keys: Arc<KeySet>, issuer: &str, api_audiences: &[String], max_expiration: Option<Duration>) -> Self {
        TokenIssuer { keys, issuer: issuer.to_string(), api_audiences: api_audiences.to_vec(), max_expiration }
    }

    /// The API audiences, which tokens are for when a request names none.
    pub fn api_audiences(&self) -> &[String] {
        &self.api_audiences
    }

    /// `--service-account-issuer`.
    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    /// The lifetime a request for `asked` gets: capped by `--service-account-max-token-expiration`.
    pub fn lifetime(&self, asked: Duration) -> Duration {
        self.max_expiration.map_or(asked, |max| asked.min(max))
    }

    fn sign(&self, claims: &impl Serialize) -> Result<String, String> {
        let key = self.keys.signing().ok_or("no --service-account-signing-key-file: this server issues no tokens")?;
        let header = Header { kid: Some(key.kid.clone()), ..Header::new(key.algorithm) };
        jsonwebtoken::encode(&header, claims, &key.key).map_err(|e| format!("signing the token: {e}"))
    }

    /// A bound token for `account` (a ServiceAccount object), issued at `now` (Unix seconds);
    /// returns it with its expiry.
    pub fn issue(&self, account: &Value, spec: &TokenSpec, now: i64) -> Result<(String, i64), String> {
        let (namespace, name) = (meta(account, "namespace"), meta(account, "name"));
        let exp = now + spec.expiration.as_secs() as i64;
        let (pod, secret) = match &spec.bound {
            Some(Bound::Pod(r)) => (Some(r.clone()), None),
            Some(Bound::Secret(r)) => (None, Some(r.clone())),
            None => (None, None),
        };
        let claims = BoundClaims {
            aud: if spec.audiences.is_empty() { self.api_audiences.clone() } else { spec.audiences.clone() },
            exp,
            iat: now,
            iss: self.issuer.clone(),
            jti: uuid::Uuid::new_v4().to_string(),
            kubernetes: KubernetesClaims {
                namespace: namespace.clone(),
                serviceaccount: Ref { name: name.clone(), uid: meta(account, "uid") },
                pod,
                secret,
                warnafter: None,
            },
            nbf: now,
            sub: user_name(&namespace, &name),
        };
        Ok((self.sign(&claims)?, exp))
    }

    /// A legacy token for `account`, to be kept in `secret`.
    pub fn issue_legacy(&self, account: &Value, secret: &Value) -> Result<String, String> {
        let (namespace, name) = (meta(account, "namespace"), meta(account, "name"));
        self.sign(&LegacyClaims {
            iss: LEGACY_ISSUER.into(),
            namespace: namespace.clone(),
            secret_name: meta(secret, "name"),
            service_account_name: name.clone(),
            service_account_uid: meta(account, "uid"),
            sub: user_name(&namespace, &name),
        })
    }

    /// `/.well-known/openid-configuration`, as kube serves it for `--service-account-issuer`.
    pub fn openid_configuration(&self, jwks_uri: &str) -> Value {
        let jwks = jwks_uri;
        let algorithms: Vec<String> = {
            let mut a: Vec<String> = self.keys.verifying().iter().map(|k| format!("{:?}", k.algorithm)).collect();
            a.sort();
            a.dedup();
            a
        };
        serde_json::json!({
            "issuer": self.issuer,
            "jwks_uri": jwks,
            "response_types_supported": ["id_token"],
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": algorithms,
        })
    }

    /// `/openid/v1/jwks`.
    pub fn jwks(&self) -> Value {
        self.keys.jwks()
    }
}
