//! Bearer tokens for the OIDC authenticator (`authn::oidc`): the fuzzer's bytes as a token, and
//! as the claims of a token signed with the issuer's key (so the claim checks are reached).
//! Never a panic; a token accepted names the issuer, is meant for the client id, carries an
//! expiry in the future and the username claim, as kube's OIDC authenticator requires.
use std::sync::OnceLock;

use auth::TokenAuthenticator;
use auth::authn::oidc::{OidcAuthenticator, OidcOptions};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};

const ISSUER: &str = "https://issuer.test";
const CLIENT_ID: &str = "kubernetes";
const SECRET: &[u8] = b"fuzzing-secret-fuzzing-secret-32";

fn authenticator() -> &'static OidcAuthenticator {
    static A: OnceLock<OidcAuthenticator> = OnceLock::new();
    A.get_or_init(|| {
        use base64::Engine;
        let k = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(SECRET);
        let jwks = serde_json::from_value(json!({"keys": [{"kty": "oct", "k": k, "kid": "k1", "alg": "HS256"}]}))
            .expect("a JWK set");
        let options = OidcOptions {
            issuer_url: ISSUER.into(),
            client_id: CLIENT_ID.into(),
            username_claim: "sub".into(),
            groups_claim: Some("groups".into()),
            signing_algs: vec!["HS256".into()],
            ..Default::default()
        };
        OidcAuthenticator::with_keys(options, &jwks).expect("an authenticator")
    })
}

fn check_token(token: &str) {
    let outcome = crate::block_on(authenticator().authenticate(token, &[]));
    let Ok(Some(found)) = outcome else { return };
    let claims = claims_of(token);
    assert_eq!(claims["iss"], ISSUER, "accepted without the issuer: {claims}");
    let aud_ok = match &claims["aud"] {
        Value::String(a) => a == CLIENT_ID,
        Value::Array(list) => list.iter().any(|a| a == CLIENT_ID),
        _ => false,
    };
    assert!(aud_ok, "accepted without the client id as audience: {claims}");
    let now = chrono::Utc::now().timestamp() as f64;
    assert!(claims["exp"].as_f64().is_some_and(|exp| exp > now - 1.0), "accepted without a future expiry: {claims}");
    assert!(claims["sub"].is_string(), "accepted without the username claim: {claims}");
    assert_eq!(found.user.name, format!("{ISSUER}#{}", claims["sub"].as_str().unwrap()));
}

fn claims_of(token: &str) -> Value {
    use base64::Engine;
    let payload = token.split('.').nth(1).unwrap_or("");
    let bytes =
        base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(payload.trim_end_matches('=')).unwrap_or_default();
    serde_json::from_slice(&bytes).unwrap_or(Value::Null)
}

/// The target: never a panic, and the properties above.
pub fn check(data: &[u8]) {
    let Some((&mode, rest)) = data.split_first() else { return };
    if mode % 2 == 0 {
        if let Ok(token) = std::str::from_utf8(rest) {
            check_token(token);
        }
        return;
    }
    let Some(mut claims) = crate::json_value(rest) else { return };
    // Most inputs name the issuer, or the token is passed over before any check.
    if mode % 4 == 1
        && let Value::Object(map) = &mut claims
    {
        map.entry("iss").or_insert_with(|| ISSUER.into());
    }
    let header = Header { kid: Some("k1".into()), ..Header::new(Algorithm::HS256) };
    let Ok(token) = jsonwebtoken::encode(&header, &claims, &EncodingKey::from_secret(SECRET)) else { return };
    check_token(&token);
}
