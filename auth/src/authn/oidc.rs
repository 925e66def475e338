//! `--oidc-*`: ID tokens of one OpenID Connect issuer (kube's OIDC flags). The issuer's keys
//! come from its discovery document (`<issuer>/.well-known/openid-configuration`, then its
//! `jwks_uri`), fetched on first use and again when a token names a key not seen yet (at most
//! every [`REFRESH_INTERVAL`]), so a key rotation at the issuer needs no restart.
//!
//! A token is this authenticator's when its `iss` is `--oidc-issuer-url`; it must then be
//! signed by one of the issuer's keys with an algorithm of `--oidc-signing-algs`, be meant for
//! `--oidc-client-id`, be unexpired, and carry the username claim (an `email` claim counts
//! only if `email_verified` is not false). User names get `--oidc-username-prefix` (by default
//! the issuer URL and `#`, except for `email`; `-` for none), groups `--oidc-groups-prefix`.

use std::path::PathBuf;
use std::sync::RwLock;
use std::time::{Duration, Instant};

use apimachinery::messages::Authenticated;
use apimachinery::request::UserInfo;
use async_trait::async_trait;
use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::Value;

use super::TokenAuthenticator;
use webhook_client::WebhookClient;

/// The soonest the issuer's keys are fetched again for an unknown key id.
const REFRESH_INTERVAL: Duration = Duration::from_secs(10);
/// How long a fetch from the issuer may take.
const FETCH_TIMEOUT: Duration = Duration::from_secs(10);

/// The `--oidc-*` flags.
#[derive(Clone, Debug, Default)]
pub struct OidcOptions {
    /// `--oidc-issuer-url` (https).
    pub issuer_url: String,
    /// `--oidc-client-id`: the audience tokens must name.
    pub client_id: String,
    /// `--oidc-username-claim` (`sub` by default).
    pub username_claim: String,
    /// `--oidc-username-prefix`; `None` for kube's default.
    pub username_prefix: Option<String>,
    /// `--oidc-groups-claim`.
    pub groups_claim: Option<String>,
    /// `--oidc-groups-prefix`.
    pub groups_prefix: String,
    /// `--oidc-ca-file`: the CA of the issuer's serving certificate.
    pub ca_file: Option<PathBuf>,
    /// `--oidc-signing-algs` (`RS256` by default).
    pub signing_algs: Vec<String>,
    /// `--oidc-required-claim`: `claim=value` pairs every token must carry.
    pub required_claims: Vec<(String, String)>,
}

struct IssuerKey {
    kid: Option<String>,
    algorithm: Option<Algorithm>,
    key: DecodingKey,
}

#[derive(Default)]
struct Keys {
    keys: Vec<IssuerKey>,
    fetched: Option<Instant>,
}

/// The OIDC token authenticator.
pub struct OidcAuthenticator {
    options: OidcOptions,
    algorithms: Vec<Algorithm>,
    client: WebhookClient,
    /// Read by every token check, written by a refresh: a read-mostly lock.
    keys: RwLock<Keys>,
    /// The keys were given up front ([`OidcAuthenticator::with_keys`]): the issuer is never
    /// contacted for others.
    fixed_keys: bool,
}

fn algorithm(name: &str) -> Result<Algorithm, String> {
    name.parse::<Algorithm>().map_err(|_| format!("--oidc-signing-algs: unsupported algorithm {name:?}"))
}

impl OidcAuthenticator {
    /// An authenticator for `options`; the issuer is not contacted until a token needs it.
    pub fn new(options: OidcOptions) -> Result<Self, String> {
        if !options.issuer_url.starts_with("https://") {
            return Err(format!("--oidc-issuer-url must use https: {:?}", options.issuer_url));
        }
        if options.client_id.is_empty() {
            return Err("--oidc-client-id is required with --oidc-issuer-url".into());
        }
        let ca = match &options.ca_file {
            Some(f) => Some(std::fs::read(f).map_err(|e| format!("--oidc-ca-file {}: {e}", f.display()))?),
            None => None,
        };
        let client = WebhookClient::for_server(&options.issuer_url, ca)?;
        let names =
            if options.signing_algs.is_empty() { vec!["RS256".to_string()] } else { options.signing_algs.clone() };
        let algorithms = names.iter().map(|n| algorithm(n)).collect::<Result<_, _>>()?;
        Ok(OidcAuthenticator { options, algorithms, client, keys: RwLock::default(), fixed_keys: false })
    }

    /// An authenticator that verifies with `jwks` and never fetches the issuer's keys: for an
    /// issuer that cannot be reached from the server, and for tests of token checks without one.
    pub fn with_keys(options: OidcOptions, jwks: &JwkSet) -> Result<Self, String> {
        let mut authenticator = Self::new(options)?;
        let keys = issuer_keys(jwks);
        authenticator.keys = RwLock::new(Keys { keys, fetched: Some(Instant::now()) });
        authenticator.fixed_keys = true;
        Ok(authenticator)
    }

    fn prefix(&self) -> String {
        match self.options.username_prefix.as_deref() {
            Some("-") => String::new(),
            Some(p) => p.to_string(),
            None if self.username_claim() == "email" => String::new(),
            None => format!("{}#", self.options.issuer_url),
        }
    }

    fn username_claim(&self) -> &str {
        if self.options.username_claim.is_empty() { "sub" } else { &self.options.username_claim }
    }

    /// Fetches the issuer's keys, checking that its discovery document names it as issuer.
    async fn fetch(&self) -> Result<Vec<IssuerKey>, String> {
        let issuer = self.options.issuer_url.trim_end_matches('/');
        let discovery_url = format!("{issuer}/.well-known/openid-configuration");
        let (code, discovery) = self.client.get_json(&discovery_url, FETCH_TIMEOUT).await?;
        if code != 200 {
            return Err(format!("{discovery_url}: {code}"));
        }
        if discovery["issuer"].as_str() != Some(self.options.issuer_url.as_str()) {
            return Err(format!("issuer did not match the issuer returned by provider: {}", discovery["issuer"]));
        }
        let jwks_uri = discovery["jwks_uri"].as_str().ok_or("the discovery document has no jwks_uri")?;
        let (code, jwks) = self.client.get_json(jwks_uri, FETCH_TIMEOUT).await?;
        if code != 200 {
            return Err(format!("{jwks_uri}: {code}"));
        }
        let set: JwkSet = serde_json::from_value(jwks).map_err(|e| format!("{jwks_uri}: {e}"))?;
        Ok(issuer_keys(&set))
    }

    /// Refreshes the keys if none are known or `kid` is unknown, no more often than allowed.
    async fn ensure_key(&self, kid: Option<&str>) -> Result<(), String> {
        {
            let keys = self.keys.read().unwrap_or_else(std::sync::PoisonError::into_inner);
            let known = keys.keys.iter().any(|k| kid.is_none() || k.kid.as_deref() == kid);
            let recent = keys.fetched.is_some_and(|t| t.elapsed() < REFRESH_INTERVAL);
            if known || recent || self.fixed_keys {
                return Ok(());
            }
        }
        let fetched = self.fetch().await;
        let mut keys = self.keys.write().unwrap_or_else(std::sync::PoisonError::into_inner);
        keys.fetched = Some(Instant::now());
        keys.keys = fetched?;
        Ok(())
    }

    fn verify(&self, token: &str, header: &jsonwebtoken::Header) -> Result<Value, String> {
        let keys = self.keys.read().unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut validation = Validation::new(header.alg);
        validation.set_audience(&[&self.options.client_id]);
        validation.set_issuer(&[&self.options.issuer_url]);
        // go-oidc refuses a token without an audience naming the client, without an expiry (a
        // zero expiry is long past) or without the issuer; jsonwebtoken checks each only
        // when present unless it is required.
        validation.set_required_spec_claims(&["exp", "iss", "aud"]);
        validation.leeway = 0;
        let mut last = "no key of the issuer matches the token".to_string();
        for k in keys.keys.iter().filter(|k| header.kid.is_none() || k.kid == header.kid) {
            if k.algorithm.is_some_and(|a| a != header.alg) {
                continue;
            }
            match jsonwebtoken::decode::<Value>(token, &k.key, &validation) {
                Ok(data) => return Ok(data.claims),
                Err(e) => last = format!("oidc: verify token: {e}"),
            }
        }
        Err(last)
    }

    fn user(&self, claims: &Value) -> Result<UserInfo, String> {
        let claim = self.username_claim();
        let name =
            claims.get(claim).and_then(Value::as_str).ok_or_else(|| format!("oidc: claim not present: {claim}"))?;
        if claim == "email" && claims.get("email_verified").and_then(Value::as_bool) == Some(false) {
            return Err("oidc: email not verified".into());
        }
        for (key, value) in &self.options.required_claims {
            if claims.get(key).and_then(Value::as_str) != Some(value.as_str()) {
                return Err(format!("oidc: required claim {key} value does not match"));
            }
        }
        let mut groups = Vec::new();
        if let Some(groups_claim) = &self.options.groups_claim {
            match claims.get(groups_claim) {
                None | Some(Value::Null) => {}
                Some(Value::String(g)) => groups.push(g.clone()),
                Some(Value::Array(list)) => {
                    for g in list {
                        groups.push(
                            g.as_str().ok_or_else(|| format!("oidc: parse groups claim {groups_claim:?}"))?.to_string(),
                        );
                    }
                }
                Some(_) => return Err(format!("oidc: parse groups claim {groups_claim:?}")),
            }
        }
        let groups = groups.into_iter().map(|g| format!("{}{g}", self.options.groups_prefix)).collect();
        Ok(UserInfo { name: format!("{}{name}", self.prefix()), uid: String::new(), groups, ..Default::default() })
    }
}

/// The keys of a JWK set that this server can verify with (others are skipped, as go-oidc
/// skips them).
fn issuer_keys(set: &JwkSet) -> Vec<IssuerKey> {
    set.keys
        .iter()
        .filter_map(|k| {
            let key = DecodingKey::from_jwk(k).ok()?;
            let algorithm = k.common.key_algorithm.and_then(|a| a.to_string().parse().ok());
            Some(IssuerKey { kid: k.common.key_id.clone(), algorithm, key })
        })
        .collect()
}

#[async_trait(?Send)]
impl TokenAuthenticator for OidcAuthenticator {
    fn name(&self) -> &'static str {
        "oidc"
    }

    async fn authenticate(&self, token: &str, _: &[String]) -> Result<Option<Authenticated>, String> {
        if super::unverified_issuer(token).as_deref() != Some(self.options.issuer_url.as_str()) {
            return Ok(None);
        }
        let header = jsonwebtoken::decode_header(token).map_err(|e| format!("oidc: malformed token: {e}"))?;
        if !self.algorithms.contains(&header.alg) {
            return Err(format!("oidc: token signed with {:?}, not one of --oidc-signing-algs", header.alg));
        }
        self.ensure_key(header.kid.as_deref()).await?;
        let claims = self.verify(token, &header)?;
        Ok(Some(Authenticated { user: self.user(&claims)?, audiences: Vec::new() }))
    }
}

#[cfg(test)]
mod tests {
    use base64::Engine;
    use jsonwebtoken::{EncodingKey, Header};
    use serde_json::json;

    use super::*;

    const ISSUER: &str = "https://issuer.test";
    const SECRET: &[u8] = b"a-test-secret-of-thirty-two-byte";

    fn authenticator() -> OidcAuthenticator {
        let k = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(SECRET);
        let jwks =
            serde_json::from_value(json!({"keys": [{"kty": "oct", "k": k, "kid": "k1", "alg": "HS256"}]})).unwrap();
        let options = OidcOptions {
            issuer_url: ISSUER.into(),
            client_id: "kubernetes".into(),
            signing_algs: vec!["HS256".into()],
            ..Default::default()
        };
        OidcAuthenticator::with_keys(options, &jwks).unwrap()
    }

    fn token(claims: &Value) -> String {
        let header = jsonwebtoken::Header { kid: Some("k1".into()), ..Header::new(Algorithm::HS256) };
        jsonwebtoken::encode(&header, claims, &EncodingKey::from_secret(SECRET)).unwrap()
    }

    #[actix::test]
    async fn tokens_without_audience_expiry_or_issuer_are_refused() {
        let a = authenticator();
        let exp = chrono::Utc::now().timestamp() + 600;
        let full = json!({"iss": ISSUER, "aud": "kubernetes", "exp": exp, "sub": "alice"});
        let user = a.authenticate(&token(&full), &[]).await.unwrap().unwrap().user;
        assert_eq!(user.name, "https://issuer.test#alice");
        for missing in ["aud", "exp"] {
            let mut claims = full.clone();
            claims.as_object_mut().unwrap().remove(missing);
            let refused = a.authenticate(&token(&claims), &[]).await;
            assert!(refused.is_err(), "a token without {missing} was accepted: {refused:?}");
        }
        // Without `iss` a token is not this issuer's at all, and checked against the issuer
        // when verified anyway.
        let mut claims = full.clone();
        claims.as_object_mut().unwrap().remove("iss");
        assert!(a.authenticate(&token(&claims), &[]).await.unwrap().is_none());
        assert!(
            a.verify(&token(&claims), &Header { kid: Some("k1".into()), ..Header::new(Algorithm::HS256) }).is_err()
        );
    }
}
