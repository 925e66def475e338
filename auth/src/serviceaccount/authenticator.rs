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

/// The label kube-apiserver keeps on a legacy token's Secret: the day (UTC) it was last used.
pub const LAST_USED_LABEL: &str = "kubernetes.io/legacy-token-last-used";
/// The label kube-controller-manager's legacy token cleaner sets on a Secret whose token it
/// found unused: from then on the token is refused.
pub const INVALID_SINCE_LABEL: &str = "kubernetes.io/legacy-token-invalid-since";

/// Records that a legacy token's Secret was used, as kube labels it (off the request's path).
pub trait LegacyTokenUse: Send + Sync {
    /// The Secret `namespace/name` (of `uid`) was used today, `today` as `YYYY-MM-DD` (UTC).
    fn used(&self, namespace: &str, name: &str, uid: &str, today: &str);
}

/// Where legacy token use is recorded, set once the write path it needs exists.
pub type LegacyTokenRecorder = Arc<std::sync::OnceLock<Arc<dyn LegacyTokenUse>>>;

/// The ServiceAccount token authenticator.
pub struct ServiceAccountAuthenticator {
    keys: Arc<KeySet>,
    /// `--service-account-issuer` values; the first issues, all are accepted.
    issuers: Vec<String>,
    /// `--api-audiences`: what legacy tokens, which name no audience, are for.
    api_audiences: Vec<String>,
    objects: Arc<dyn ObjectLookup>,
    legacy_use: LegacyTokenRecorder,
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
        let legacy_use = LegacyTokenRecorder::default();
        ServiceAccountAuthenticator { keys, issuers, api_audiences, objects, legacy_use }
    }

    /// Records the use of legacy tokens through `recorder`, once it is set.
    pub fn recording_legacy_use(mut self, recorder: LegacyTokenRecorder) -> Self {
        self.legacy_use = recorder;
        self
    }

    /// Labels the Secret with today's date unless it already says today or tomorrow (a peer's
    /// clock ahead), as kube does.
    fn record_use(&self, secret: &Value) {
        let Some(recorder) = self.legacy_use.get() else { return };
        let now = chrono::Utc::now();
        let today = now.format("%Y-%m-%d").to_string();
        let label = secret.pointer("/metadata/labels").and_then(|l| l.get(LAST_USED_LABEL)).and_then(Value::as_str);
        let tomorrow = || (now + chrono::Duration::days(1)).format("%Y-%m-%d").to_string();
        if label.is_some_and(|l| l == today || l == tomorrow()) {
            return;
        }
        let text = |p: &str| secret.pointer(p).and_then(Value::as_str).unwrap_or("");
        recorder.used(text("/metadata/namespace"), text("/metadata/name"), text("/metadata/uid"), &today);
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
        if secret.pointer("/metadata/deletionTimestamp").is_some_and(|t| !t.is_null()) {
            return Err("Token has been invalidated".into());
        }
        let kept = secret.pointer("/data/token").and_then(Value::as_str).and_then(|t| STANDARD.decode(t).ok());
        if kept.as_deref() != Some(token.as_bytes()) {
            return Err("token does not match server's copy".into());
        }
        let (ns, name, uid) = (&claims.namespace, &claims.service_account_name, &claims.service_account_uid);
        self.object("serviceaccounts", ns, name, uid).await?;
        let invalid_since = secret.pointer("/metadata/labels").and_then(|l| l.get(INVALID_SINCE_LABEL));
        if invalid_since.and_then(Value::as_str).is_some_and(|since| !since.is_empty()) {
            self.record_use(&secret);
            return Err(format!(
                "the token in secret {ns}/{} for service account {ns}/{name} has been marked invalid. Use tokens \
                 from the TokenRequest API or manually created secret-based tokens, or remove the \
                 '{INVALID_SINCE_LABEL}' label from the secret to temporarily allow use of this token",
                claims.secret_name
            ));
        }
        // Legacy tokens name no audience: they hold for the API audiences only.
        let held: Vec<String> = audiences.iter().filter(|a| self.api_audiences.contains(a)).cloned().collect();
        if held.is_empty() {
            return Err(format!(
                "token audiences {:?} is invalid for the target audiences {audiences:?}",
                self.api_audiences
            ));
        }
        self.record_use(&secret);
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

    struct Uses(std::sync::Mutex<Vec<String>>);

    impl LegacyTokenUse for Uses {
        fn used(&self, namespace: &str, name: &str, uid: &str, today: &str) {
            self.0.lock().unwrap().push(format!("{namespace}/{name} {uid} {today}"));
        }
    }

    #[actix::test]
    async fn legacy_token_use_is_recorded_and_an_invalidated_one_refused_as_kube_words_it() {
        let (_dir, issuer, authn, objects) = setup();
        let uses = Arc::new(Uses(Default::default()));
        let recorder = LegacyTokenRecorder::default();
        let authn = authn.recording_legacy_use(recorder.clone());
        let account = objects.0.lock().unwrap()[0].1.clone();
        let secret = json!({"metadata": {"name": "robot-token", "namespace": "ns", "uid": "s-1"}});
        let token = issuer.issue_legacy(&account, &secret).unwrap();
        let mut kept = secret.clone();
        kept["data"] = json!({"token": STANDARD.encode(&token)});
        objects.0.lock().unwrap().push(("secrets".into(), kept.clone()));
        let api = issuer.api_audiences().to_vec();
        // Before the write path exists nothing is recorded; then each use not yet labelled today is.
        authn.authenticate(&token, &api).await.unwrap().unwrap();
        let _ = recorder.set(uses.clone());
        authn.authenticate(&token, &api).await.unwrap().unwrap();
        let today = chrono::Utc::now().format("%Y-%m-%d").to_string();
        assert_eq!(*uses.0.lock().unwrap(), [format!("ns/robot-token s-1 {today}")]);
        let set = |labels: Value| {
            let mut all = objects.0.lock().unwrap();
            all.retain(|(r, _)| r != "secrets");
            let mut secret = kept.clone();
            secret["metadata"]["labels"] = labels;
            all.push(("secrets".into(), secret));
        };
        set(json!({LAST_USED_LABEL: today}));
        authn.authenticate(&token, &api).await.unwrap().unwrap();
        assert_eq!(uses.0.lock().unwrap().len(), 1, "already labelled today");
        set(json!({LAST_USED_LABEL: "2020-01-01", INVALID_SINCE_LABEL: "2021-01-01"}));
        let e = authn.authenticate(&token, &api).await.unwrap_err();
        assert_eq!(
            e,
            "the token in secret ns/robot-token for service account ns/robot has been marked invalid. Use tokens \
             from the TokenRequest API or manually created secret-based tokens, or remove the \
             'kubernetes.io/legacy-token-invalid-since' label from the secret to temporarily allow use of this token"
        );
        assert_eq!(uses.0.lock().unwrap().len(), 2, "a refused use is recorded too, as kube records it");
    }
}
