//! Verifies ServiceAccount tokens: the signature against `--service-account-key-file`'s keys,
//! the issuer, expiry (with kube's one-minute leeway) and audiences, then that the
//! ServiceAccount still exists with the token's uid, and so does the Pod or Secret the token is
//! bound to. A legacy token must also still be the one its Secret holds. The objects come from
//! the cachers, so a deletion refuses the token within the cache's lag, without a storage
//! read per request.

use std::collections::BTreeMap;
use std::sync::Arc;

use apimachinery::lookup::ObjectLookup;
use apimachinery::messages::Authenticated;
use apimachinery::request::UserInfo;
use async_trait::async_trait;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use jsonwebtoken::Validation;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::{BoundClaims, KeySet, LEGACY_ISSUER, LegacyClaims, user_name};
use crate::authn::TokenAuthenticator;
use crate::metrics::{
    SERVICEACCOUNT_LEGACY_TOKENS_TOTAL, SERVICEACCOUNT_STALE_TOKENS_TOTAL, SERVICEACCOUNT_VALID_TOKENS_TOTAL,
};

/// go-jose's default leeway, which kube's validation uses.
const LEEWAY_SECONDS: u64 = 60;

/// The ServiceAccount token authenticator.
pub struct ServiceAccountAuthenticator {
    keys: Arc<KeySet>,
    /// `--service-account-issuer` values; the first issues, all are accepted.
    issuers: Vec<String>,
    /// `--api-audiences`: what legacy tokens, which name no audience, are for.
    api_audiences: Vec<String>,
    objects: Arc<dyn ObjectLookup>,
}

impl ServiceAccountAuthenticator {
    /// Accepts tokens of `issuers` (and legacy ones) signed by `keys`, checking the objects
    /// they name through `objects`.
    pub fn new(
        keys: Arc<KeySet>,
        issuers: Vec<String>,
        api_audiences: Vec<String>,
        objects: Arc<dyn ObjectLookup>,
    ) -> Self {
        ServiceAccountAuthenticator { keys, issuers, api_audiences, objects }
    }

    /// The claims of `token` if one of the keys signed it.
    fn verify<C: DeserializeOwned>(&self, token: &str, exp_required: bool) -> Result<C, String> {
        let header = jsonwebtoken::decode_header(token).map_err(|e| format!("malformed token: {e}"))?;
        let mut last = "no verifying key for the token's algorithm".to_string();
        for key in self.keys.verifying().iter().filter(|k| k.algorithm == header.alg) {
            if header.kid.as_ref().is_some_and(|kid| kid != &key.kid) {
                continue;
            }
            let mut validation = Validation::new(key.algorithm);
            validation.leeway = LEEWAY_SECONDS;
            validation.validate_aud = false;
            validation.validate_exp = exp_required;
            validation.validate_nbf = exp_required;
            validation.set_required_spec_claims::<&str>(if exp_required { &["exp"] } else { &[] });
            match jsonwebtoken::decode::<C>(token, &key.key, &validation) {
                Ok(data) => return Ok(data.claims),
                Err(e) if matches!(e.kind(), jsonwebtoken::errors::ErrorKind::ExpiredSignature) => {
                    return Err("service account token has expired".into());
                }
                Err(e) => last = e.to_string(),
            }
        }
        Err(last)
    }

    async fn object(&self, resource: &str, namespace: &str, name: &str, uid: &str) -> Result<Value, String> {
        let kind = resource.trim_end_matches('s');
        let found = self
            .objects
            .get("", resource, namespace, name)
            .await
            .map_err(|e| e.message)?
            .ok_or_else(|| format!("{kind} {namespace}/{name} has been deleted"))?;
        let actual = found.pointer("/metadata/uid").and_then(Value::as_str).unwrap_or_default();
        if actual != uid {
            return Err(format!("{kind} UID ({uid}) does not match the one in the token ({actual})"));
        }
        // An object being deleted keeps its tokens for a minute, as kube allows, so a pod in
        // graceful termination can still release what it holds.
        let deleted_at = found
            .pointer("/metadata/deletionTimestamp")
            .and_then(Value::as_str)
            .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok());
        if deleted_at.is_some_and(|t| t.timestamp() + (LEEWAY_SECONDS as i64) < chrono::Utc::now().timestamp()) {
            return Err(format!("{kind} {namespace}/{name} is being deleted"));
        }
        Ok(found)
    }

    async fn bound(&self, token: &str, audiences: &[String]) -> Result<Authenticated, String> {
        let claims: BoundClaims = self.verify(token, true)?;
        let held: Vec<String> = audiences.iter().filter(|a| claims.aud.contains(a)).cloned().collect();
        if held.is_empty() {
            return Err(format!("token audiences {:?} is invalid for the target audiences {audiences:?}", claims.aud));
        }
        let k = &claims.kubernetes;
        self.object("serviceaccounts", &k.namespace, &k.serviceaccount.name, &k.serviceaccount.uid).await?;
        let mut extra = BTreeMap::new();
        if let Some(pod) = &k.pod {
            self.object("pods", &k.namespace, &pod.name, &pod.uid).await?;
            extra.insert("authentication.kubernetes.io/pod-name".to_string(), vec![pod.name.clone()]);
            extra.insert("authentication.kubernetes.io/pod-uid".to_string(), vec![pod.uid.clone()]);
        }
        if let Some(secret) = &k.secret {
            self.object("secrets", &k.namespace, &secret.name, &secret.uid).await?;
        }
        if !claims.jti.is_empty() {
            extra.insert("authentication.kubernetes.io/credential-id".to_string(), vec![format!("JTI={}", claims.jti)]);
        }
        let now = chrono::Utc::now().timestamp();
        if k.warnafter.is_some_and(|w| now > w) {
            metrics::counter!(SERVICEACCOUNT_STALE_TOKENS_TOTAL).increment(1);
        } else {
            metrics::counter!(SERVICEACCOUNT_VALID_TOKENS_TOTAL).increment(1);
        }
        Ok(Authenticated {
            user: account_user(&k.namespace, &k.serviceaccount.name, &k.serviceaccount.uid, extra),
            audiences: held,
        })
    }

    async fn legacy(&self, token: &str, audiences: &[String]) -> Result<Authenticated, String> {
        let claims: LegacyClaims = self.verify(token, false)?;
        let secret = self.secret(&claims).await?;
        let kept = secret.pointer("/data/token").and_then(Value::as_str).and_then(|t| STANDARD.decode(t).ok());
        if kept.as_deref() != Some(token.as_bytes()) {
            return Err("token does not match server's copy".into());
        }
        let (ns, name, uid) = (&claims.namespace, &claims.service_account_name, &claims.service_account_uid);
        self.object("serviceaccounts", ns, name, uid).await?;
        // Legacy tokens name no audience: they hold for the API audiences only.
        let held: Vec<String> = audiences.iter().filter(|a| self.api_audiences.contains(a)).cloned().collect();
        if held.is_empty() {
            return Err(format!(
                "token audiences {:?} is invalid for the target audiences {audiences:?}",
                self.api_audiences
            ));
        }
        metrics::counter!(SERVICEACCOUNT_LEGACY_TOKENS_TOTAL).increment(1);
        Ok(Authenticated { user: account_user(ns, name, uid, BTreeMap::new()), audiences: held })
    }

    async fn secret(&self, claims: &LegacyClaims) -> Result<Value, String> {
        let (ns, name) = (&claims.namespace, &claims.secret_name);
        self.objects
            .get("", "secrets", ns, name)
            .await
            .map_err(|e| e.message)?
            .ok_or_else(|| format!("secret {ns}/{name} has been deleted"))
    }
}

fn account_user(namespace: &str, name: &str, uid: &str, extra: BTreeMap<String, Vec<String>>) -> UserInfo {
    UserInfo {
        name: user_name(namespace, name),
        uid: uid.to_string(),
        groups: vec!["system:serviceaccounts".into(), format!("system:serviceaccounts:{namespace}")],
        extra,
    }
}

#[async_trait(?Send)]
impl TokenAuthenticator for ServiceAccountAuthenticator {
    fn name(&self) -> &'static str {
        "serviceaccount"
    }

    fn audience_aware(&self) -> bool {
        true
    }

    async fn authenticate(&self, token: &str, audiences: &[String]) -> Result<Option<Authenticated>, String> {
        match crate::authn::unverified_issuer(token) {
            Some(iss) if iss == LEGACY_ISSUER => self.legacy(token, audiences).await.map(Some),
            Some(iss) if self.issuers.contains(&iss) => self.bound(token, audiences).await.map(Some),
            _ => Ok(None),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use apimachinery::error::ApiError;
    use serde_json::json;

    use super::*;
    use crate::serviceaccount::{Bound, Ref, TokenIssuer, TokenSpec};

    struct Objects(std::sync::Mutex<Vec<(String, Value)>>);

    #[async_trait]
    impl ObjectLookup for Objects {
        async fn get(&self, _: &str, resource: &str, _: &str, name: &str) -> Result<Option<Value>, ApiError> {
            let all = self.0.lock().unwrap();
            Ok(all.iter().find(|(r, o)| r == resource && o["metadata"]["name"] == name).map(|(_, o)| o.clone()))
        }
    }

    fn setup() -> (tempfile::TempDir, TokenIssuer, ServiceAccountAuthenticator, Arc<Objects>) {
        let dir = tempfile::tempdir().unwrap();
        let keys = Arc::new(KeySet::load(dir.path(), None, &[]).unwrap());
        let api = vec!["https://kubernetes.default.svc".to_string()];
        let issuer = TokenIssuer::new(keys.clone(), "https://issuer.test", &api, None);
        let account = json!({"metadata": {"name": "robot", "namespace": "ns", "uid": "sa-1"}});
        let objects = Arc::new(Objects(std::sync::Mutex::new(vec![("serviceaccounts".into(), account)])));
        let authn =
            ServiceAccountAuthenticator::new(keys, vec!["https://issuer.test".into()], api.clone(), objects.clone());
        (dir, issuer, authn, objects)
    }

    fn spec(audiences: &[&str], bound: Option<Bound>) -> TokenSpec {
        TokenSpec {
            audiences: audiences.iter().map(|a| a.to_string()).collect(),
            expiration: Duration::from_secs(600),
            bound,
        }
    }

    #[actix::test]
    async fn a_bound_token_names_its_account_until_the_account_or_pod_goes() {
        let (_dir, issuer, authn, objects) = setup();
        let account = objects.0.lock().unwrap()[0].1.clone();
        objects.0.lock().unwrap().push(("pods".into(), json!({"metadata": {"name": "web", "uid": "pod-1"}})));
        let pod = Some(Bound::Pod(Ref { name: "web".into(), uid: "pod-1".into() }));
        let (token, _) = issuer.issue(&account, &spec(&[], pod), chrono::Utc::now().timestamp()).unwrap();
        let api = issuer.api_audiences().to_vec();
        let found = authn.authenticate(&token, &api).await.unwrap().unwrap();
        assert_eq!(found.user.name, "system:serviceaccount:ns:robot");
        assert_eq!(found.user.uid, "sa-1");
        assert_eq!(found.user.groups, vec!["system:serviceaccounts", "system:serviceaccounts:ns"]);
        assert_eq!(found.user.extra["authentication.kubernetes.io/pod-name"], vec!["web"]);
        assert_eq!(found.audiences, api);

        let e = authn.authenticate(&token, &["other".to_string()]).await.unwrap_err();
        assert!(e.contains("invalid for the target audiences"), "{e}");

        objects.0.lock().unwrap().retain(|(r, _)| r != "pods");
        let e = authn.authenticate(&token, &api).await.unwrap_err();
        assert_eq!(e, "pod ns/web has been deleted");
    }

    #[actix::test]
    async fn expired_and_foreign_tokens_are_refused_or_passed_on() {
        let (_dir, issuer, authn, _) = setup();
        let account = json!({"metadata": {"name": "robot", "namespace": "ns", "uid": "sa-1"}});
        let long_ago = chrono::Utc::now().timestamp() - 3600;
        let (token, _) = issuer.issue(&account, &spec(&["a"], None), long_ago).unwrap();
        let e = authn.authenticate(&token, &["a".to_string()]).await.unwrap_err();
        assert_eq!(e, "service account token has expired");
        assert_eq!(authn.authenticate("not-a-jwt", &[]).await, Ok(None));
        let other = TokenIssuer::new(issuer.keys.clone(), "https://elsewhere", &[], None);
        let (token, _) = other.issue(&account, &spec(&["a"], None), chrono::Utc::now().timestamp()).unwrap();
        assert_eq!(authn.authenticate(&token, &["a".to_string()]).await, Ok(None), "another issuer's token");
        // A token of ours signed by a key we do not hold.
        let dir = tempfile::tempdir().unwrap();
        let stranger =
            TokenIssuer::new(Arc::new(KeySet::load(dir.path(), None, &[]).unwrap()), "https://issuer.test", &[], None);
        let (token, _) = stranger.issue(&account, &spec(&["a"], None), chrono::Utc::now().timestamp()).unwrap();
        assert!(authn.authenticate(&token, &["a".to_string()]).await.is_err());
    }

    #[actix::test]
    async fn a_legacy_token_holds_while_its_secret_keeps_it() {
        let (_dir, issuer, authn, objects) = setup();
        let account = objects.0.lock().unwrap()[0].1.clone();
        let secret = json!({"metadata": {"name": "robot-token", "namespace": "ns"}});
        let token = issuer.issue_legacy(&account, &secret).unwrap();
        let mut kept = secret.clone();
        kept["data"] = json!({"token": STANDARD.encode(&token)});
        objects.0.lock().unwrap().push(("secrets".into(), kept));
        let api = issuer.api_audiences().to_vec();
        let found = authn.authenticate(&token, &api).await.unwrap().unwrap();
        assert_eq!(found.user.name, "system:serviceaccount:ns:robot");
        let e = authn.authenticate(&token, &["vault".to_string()]).await.unwrap_err();
        assert!(e.contains("invalid for the target audiences"), "a legacy token is for the API only: {e}");
        objects.0.lock().unwrap().retain(|(r, _)| r != "secrets");
        assert_eq!(authn.authenticate(&token, &api).await.unwrap_err(), "secret ns/robot-token has been deleted");
    }
}
