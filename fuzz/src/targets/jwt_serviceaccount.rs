//! Bearer tokens for the ServiceAccount authenticator: the fuzzer's bytes as a token, and as
//! the claims of a token signed with the server's own key. Never a panic; a token accepted is
//! of a configured issuer, unexpired (kube's one-minute leeway), for one of the audiences asked.
use std::sync::{Arc, OnceLock};

use apimachinery::error::ApiError;
use apimachinery::lookup::ObjectLookup;
use auth::TokenAuthenticator;
use auth::serviceaccount::KeySet;
use auth::serviceaccount::authenticator::ServiceAccountAuthenticator;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};

const ISSUER: &str = "https://kubernetes.default.svc";
const AUDIENCE: &str = "https://kubernetes.default.svc";

/// Every object exists, with uid `uid-1`.
struct Everything;

#[async_trait::async_trait]
impl ObjectLookup for Everything {
    async fn get(&self, _: &str, _: &str, namespace: &str, name: &str) -> Result<Option<Value>, ApiError> {
        Ok(Some(json!({"metadata": {"name": name, "namespace": namespace, "uid": "uid-1"}})))
    }
}

struct Fixture {
    _dir: tempfile::TempDir,
    authn: ServiceAccountAuthenticator,
    key: EncodingKey,
    kid: String,
}

fn fixture() -> &'static Fixture {
    static F: OnceLock<Fixture> = OnceLock::new();
    F.get_or_init(|| {
        let dir = tempfile::tempdir().expect("a temp dir");
        let keys = Arc::new(KeySet::load(dir.path(), None, &[]).expect("a generated key"));
        let kid = keys.jwks()["keys"][0]["kid"].as_str().expect("a key id").to_string();
        let pem = std::fs::read(dir.path().join("pki/service-account.key")).expect("the generated key");
        let key = EncodingKey::from_ec_pem(&pem).expect("an EC key");
        let authn =
            ServiceAccountAuthenticator::new(keys, vec![ISSUER.into()], vec![AUDIENCE.into()], Arc::new(Everything));
        Fixture { _dir: dir, authn, key, kid }
    })
}

fn check_token(token: &str, claims: Option<&Value>) {
    let f = fixture();
    let audiences = [AUDIENCE.to_string()];
    let outcome = crate::block_on(f.authn.authenticate(token, &audiences));
    let (Ok(Some(found)), Some(claims)) = (outcome, claims) else { return };
    assert_eq!(claims["iss"], ISSUER, "accepted another issuer: {claims}");
    let now = chrono::Utc::now().timestamp() as f64;
    assert!(claims["exp"].as_f64().is_some_and(|exp| exp + 60.0 > now - 1.0), "accepted an expired token: {claims}");
    assert_eq!(found.audiences, audiences);
}

/// The target: never a panic, and the properties above.
pub fn check(data: &[u8]) {
    let Some((&mode, rest)) = data.split_first() else { return };
    if mode % 2 == 0 {
        if let Ok(token) = std::str::from_utf8(rest) {
            check_token(token, None);
        }
        return;
    }
    let Some(mut claims) = crate::json_value(rest) else { return };
    if mode % 4 == 1
        && let Value::Object(map) = &mut claims
    {
        map.entry("iss").or_insert_with(|| ISSUER.into());
    }
    let f = fixture();
    let header = Header { kid: Some(f.kid.clone()), ..Header::new(Algorithm::ES256) };
    let Ok(token) = jsonwebtoken::encode(&header, &claims, &f.key) else { return };
    check_token(&token, Some(&claims));
}
