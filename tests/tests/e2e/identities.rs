//! Identities from outside the server: OIDC ID tokens, a token-review webhook, an
//! authorization webhook, and kubelets under the Node authorizer. The issuer and the webhooks
//! are served by the test itself (actix-web on its own thread, https with a self-signed
//! certificate made here and passed to the apiserver as the CA).

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use actix_web::{App, HttpRequest, HttpResponse, HttpServer, web};
use base64::Engine;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};
use serde_json::{Value, json};
use tests::{TestServer, command_outcome as out, poll_until, within, write_webhook_kubeconfig};

const UNAUTHORIZED: &str = "error: You must be logged in to the server (Unauthorized)";
const CLIENT_ID: &str = "kubernetes";

fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs()
}

/// A server the test runs (an OIDC issuer or a webhook): every request it got, as
/// (path, JSON body), in order. Stopped when dropped.
struct Stub {
    seen: Arc<Mutex<Vec<(String, Value)>>>,
    handle: actix_web::dev::ServerHandle,
}

impl Stub {
    fn seen(&self) -> Vec<(String, Value)> {
        self.seen.lock().unwrap().clone()
    }
}

impl Drop for Stub {
    fn drop(&mut self) {
        // The stop command is sent now; its completion is not waited for.
        drop(self.handle.stop(false));
    }
}

/// A loopback listener on a free port, bound before the stub's answers are built (they may
/// need its URL).
fn listener() -> (TcpListener, u16) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    (l, port)
}

/// Serves `answer(path, body)` as JSON (200) for every request on `listener`, over https with
/// `tls` or plain http, on a thread of its own.
fn serve(
    listener: TcpListener,
    tls: Option<rustls::ServerConfig>,
    answer: impl Fn(&str, &Value) -> Value + Send + Sync + 'static,
) -> Stub {
    let seen: Arc<Mutex<Vec<(String, Value)>>> = Arc::default();
    let answer = Arc::new(answer);
    let (tx, rx) = std::sync::mpsc::channel();
    let recorder = seen.clone();
    std::thread::spawn(move || {
        actix_web::rt::System::new().block_on(async move {
            let server = HttpServer::new(move || {
                let (seen, answer) = (recorder.clone(), answer.clone());
                App::new().default_service(web::to(move |req: HttpRequest, body: web::Bytes| {
                    let (seen, answer) = (seen.clone(), answer.clone());
                    async move {
                        let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                        seen.lock().unwrap().push((req.path().to_string(), body.clone()));
                        HttpResponse::Ok().json(answer(req.path(), &body))
                    }
                }))
            })
            .workers(1)
            .disable_signals();
            let server = match tls {
                Some(config) => server.listen_rustls_0_23(listener, config),
                None => server.listen(listener),
            }
            .expect("stub listens")
            .run();
            tx.send(server.handle()).unwrap();
            server.await
        })
    });
    let handle = rx.recv_timeout(Duration::from_secs(10)).expect("stub started");
    Stub { seen, handle }
}

/// A self-signed certificate for 127.0.0.1: the stub's TLS settings, and the certificate's
/// PEM written to `dir/name.crt` for the apiserver to trust.
fn self_signed(dir: &Path, name: &str) -> (rustls::ServerConfig, PathBuf) {
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = rcgen::CertificateParams::new(vec!["127.0.0.1".to_string(), "localhost".to_string()])
        .unwrap()
        .self_signed(&key)
        .unwrap();
    let ca = dir.join(format!("{name}.crt"));
    std::fs::write(&ca, cert.pem()).unwrap();
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![cert.der().clone()], PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())))
        .unwrap();
    (config, ca)
}

// ---------------------------------------------------------------------------------------------
// OIDC

/// An EC P-256 signing key and its JWK.
struct SigningKey {
    kid: String,
    pem: String,
    jwk: Value,
}

fn signing_key(kid: &str) -> SigningKey {
    let key = rcgen::KeyPair::generate().unwrap();
    let raw = key.public_key_raw();
    assert_eq!((raw.len(), raw[0]), (65, 4), "an uncompressed P-256 point");
    let b64 = |b: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(b);
    SigningKey {
        kid: kid.to_string(),
        pem: key.serialize_pem(),
        jwk: json!({"kty": "EC", "crv": "P-256", "alg": "ES256", "use": "sig", "kid": kid,
            "x": b64(&raw[1..33]), "y": b64(&raw[33..])}),
    }
}

impl SigningKey {
    fn sign(&self, claims: &Value) -> String {
        let mut header = Header::new(Algorithm::ES256);
        header.kid = Some(self.kid.clone());
        jsonwebtoken::encode(&header, claims, &EncodingKey::from_ec_pem(self.pem.as_bytes()).unwrap()).unwrap()
    }
}

/// An OIDC issuer the test runs, publishing one key.
struct Issuer {
    url: String,
    key: SigningKey,
    _stub: Stub,
}

impl Issuer {
    fn start(dir: &Path) -> (Issuer, PathBuf) {
        let (tls, ca) = self_signed(dir, "issuer");
        let (l, port) = listener();
        let url = format!("https://127.0.0.1:{port}");
        let key = signing_key("k1");
        let (issuer, jwks) = (url.clone(), json!({"keys": [key.jwk.clone()]}));
        let stub = serve(l, Some(tls), move |path, _| match path {
            "/.well-known/openid-configuration" => json!({"issuer": issuer, "jwks_uri": format!("{issuer}/jwks"),
                "id_token_signing_alg_values_supported": ["ES256"], "response_types_supported": ["id_token"],
                "subject_types_supported": ["public"]}),
            "/jwks" => jwks.clone(),
            _ => json!({}),
        });
        (Issuer { url, key, _stub: stub }, ca)
    }

    /// The claims of a good token for `sub`, with `changes` merged in (`null` removes a claim).
    fn claims(&self, sub: &str, changes: Value) -> Value {
        let mut claims = json!({"iss": self.url, "aud": CLIENT_ID, "sub": sub, "iat": now(), "exp": now() + 600,
            "groups": ["dev", "ops"], "tenant": "acme"});
        for (k, v) in changes.as_object().unwrap() {
            if v.is_null() {
                claims.as_object_mut().unwrap().remove(k);
            } else {
                claims[k] = v.clone();
            }
        }
        claims
    }

    fn token(&self, sub: &str, changes: Value) -> String {
        self.key.sign(&self.claims(sub, changes))
    }
}

/// A server trusting `issuer` for client `kubernetes` with ES256, plus `extra` flags.
fn oidc_server(issuer: &Issuer, ca: &Path, extra: &[&str]) -> TestServer {
    let mut flags = vec![
        "--oidc-issuer-url",
        &issuer.url,
        "--oidc-client-id",
        CLIENT_ID,
        "--oidc-ca-file",
        ca.to_str().unwrap(),
        "--oidc-signing-algs",
        "ES256",
    ];
    flags.extend_from_slice(extra);
    TestServer::start_with(&flags)
}

/// `kubectl auth whoami -o json` as the holder of `token`: its `status.userInfo`, or stderr.
fn whoami(s: &TestServer, token: &str) -> Result<Value, String> {
    let (ok, stdout, stderr) = out(&s.kubectl_with_token(token, &["auth", "whoami", "-o", "json"]));
    if !ok {
        return Err(stderr);
    }
    let review: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    Ok(review["status"]["userInfo"].clone())
}

#[actix_web::test]
async fn oidc_id_tokens_sign_users_in_with_the_issuer_prefix_and_their_groups_and_rbac_binds_them() {
    let dir = tempfile::tempdir().unwrap();
    let (issuer, ca) = Issuer::start(dir.path());
    let s = oidc_server(
        &issuer,
        &ca,
        &["--oidc-groups-claim", "groups", "--oidc-groups-prefix", "oidc:", "--oidc-required-claim", "tenant=acme"],
    );
    let jane = issuer.token("jane", json!({}));
    let user = format!("{}#jane", issuer.url);
    assert_eq!(
        whoami(&s, &jane).unwrap_or_else(|e| panic!("{e}\n{}", s.log_tail())),
        json!({"username": user, "groups": ["oidc:dev", "oidc:ops", "system:authenticated"]})
    );
    // `aud` may be a list naming the client among others.
    let listed = issuer.token("jane", json!({"aud": ["dashboard", CLIENT_ID]}));
    assert_eq!(whoami(&s, &listed).map(|u| u["username"].clone()), Ok(json!(user)));

    // Authenticated, not authorized: RBAC knows the prefixed name only.
    let jane_does = |args: &[&str]| out(&s.kubectl_with_token(&jane, args));
    let (ok, _, err) = jane_does(&["get", "configmaps"]);
    assert!(!ok);
    assert!(
        err.contains(&format!(
            "configmaps is forbidden: User \"{user}\" cannot list resource \"configmaps\" in API group \"\" in the namespace \"default\""
        )),
        "{err}"
    );
    s.kubectl_ok(&["create", "role", "cm-reader", "--verb=get,list", "--resource=configmaps"]);
    s.kubectl_ok(&["create", "rolebinding", "jane-cm", "--role=cm-reader", &format!("--user={user}")]);
    assert!(
        poll_until(Duration::from_secs(2), || jane_does(&["get", "configmaps"]).0.then_some(())).is_some(),
        "a RoleBinding to {user} lets her list configmaps: {}",
        jane_does(&["get", "configmaps"]).2
    );
    // Bindings to the unprefixed name and group grant nothing; one to her prefixed group does.
    s.kubectl_ok(&["create", "clusterrole", "secret-reader", "--verb=get,list", "--resource=secrets"]);
    s.kubectl_ok(&["create", "clusterrolebinding", "bare-jane", "--clusterrole=secret-reader", "--user=jane"]);
    s.kubectl_ok(&["create", "clusterrolebinding", "bare-dev", "--clusterrole=secret-reader", "--group=dev"]);
    s.kubectl_ok(&["create", "clusterrole", "pod-reader", "--verb=get,list", "--resource=pods"]);
    s.kubectl_ok(&["create", "clusterrolebinding", "oidc-dev", "--clusterrole=pod-reader", "--group=oidc:dev"]);
    assert!(
        poll_until(Duration::from_secs(2), || jane_does(&["get", "pods", "-A"]).0.then_some(())).is_some(),
        "a ClusterRoleBinding to group oidc:dev lets her list pods: {}",
        jane_does(&["get", "pods", "-A"]).2
    );
    // The bindings made before that one are in effect too, and are not hers.
    let (ok, _, err) = jane_does(&["get", "secrets"]);
    assert!(!ok && err.contains(&format!("User \"{user}\" cannot list resource \"secrets\"")), "{err}");
}

#[actix_web::test]
async fn oidc_tokens_for_another_audience_expired_forged_or_missing_a_required_claim_are_unauthorized() {
    let dir = tempfile::tempdir().unwrap();
    let (issuer, ca) = Issuer::start(dir.path());
    let s = oidc_server(&issuer, &ca, &["--oidc-required-claim", "tenant=acme"]);
    let good = issuer.token("jane", json!({}));
    assert_eq!(
        whoami(&s, &good).map(|u| u["username"].clone()),
        Ok(json!(format!("{}#jane", issuer.url))),
        "{}",
        s.log_tail()
    );

    let stranger = signing_key("k1");
    let unknown_kid = signing_key("k2");
    let refused = [
        ("another audience", issuer.token("jane", json!({"aud": "dashboard"}))),
        ("expired", issuer.token("jane", json!({"iat": now() - 1200, "exp": now() - 600}))),
        ("signed by another key with the same kid", stranger.sign(&issuer.claims("jane", json!({})))),
        ("signed by a key the issuer does not publish", unknown_kid.sign(&issuer.claims("jane", json!({})))),
        ("from another issuer", issuer.token("jane", json!({"iss": "https://127.0.0.1:1"}))),
        ("without the required claim", issuer.token("jane", json!({"tenant": null}))),
        ("with another value of the required claim", issuer.token("jane", json!({"tenant": "umbrella"}))),
        ("without exp", issuer.token("jane", json!({"exp": null}))),
    ];
    for (what, token) in &refused {
        let err = whoami(&s, token).expect_err(what);
        assert!(err.contains(UNAUTHORIZED), "a token {what}: {err}");
        let (code, status) = s.call_with_token(Some(token), "GET", "/api/v1/namespaces/default/configmaps", None).await;
        assert_eq!((code, &status["message"]), (401, &json!("Unauthorized")), "a token {what}: {status}");
    }
    // The good one still works after all that.
    assert!(whoami(&s, &good).is_ok());
}

#[actix_web::test]
async fn oidc_with_the_email_claim_names_users_by_verified_email_without_a_prefix() {
    let dir = tempfile::tempdir().unwrap();
    let (issuer, ca) = Issuer::start(dir.path());
    let s = oidc_server(&issuer, &ca, &["--oidc-username-claim", "email"]);
    let verified = issuer.token("u-123", json!({"email": "jane@example.com", "email_verified": true}));
    assert_eq!(
        whoami(&s, &verified).unwrap_or_else(|e| panic!("{e}\n{}", s.log_tail())),
        json!({"username": "jane@example.com", "groups": ["system:authenticated"]}),
        "no prefix for email, and no groups without --oidc-groups-claim"
    );
    let unverified = issuer.token("u-123", json!({"email": "jane@example.com", "email_verified": false}));
    let err = whoami(&s, &unverified).expect_err("an unverified email is refused");
    assert!(err.contains(UNAUTHORIZED), "{err}");
    let (code, _) = s.call_with_token(Some(&unverified), "GET", "/api/v1/namespaces/default/pods", None).await;
    assert_eq!(code, 401);
    let no_email = issuer.token("u-123", json!({}));
    assert!(whoami(&s, &no_email).expect_err("a token without the username claim").contains(UNAUTHORIZED));
}

// ---------------------------------------------------------------------------------------------
// Token webhook

/// A TokenReview webhook knowing one token, `carol-token`.
fn token_webhook() -> impl Fn(&str, &Value) -> Value + Send + Sync + 'static {
    |_, review| {
        if review["spec"]["token"] == "carol-token" {
            json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
                "status": {"authenticated": true, "user": {"username": "carol", "uid": "42", "groups": ["ops"]}}})
        } else {
            json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "status": {"authenticated": false}})
        }
    }
}

fn reviews_of(hook: &Stub, token: &str) -> usize {
    hook.seen().iter().filter(|(_, r)| r["spec"]["token"] == token).count()
}

#[actix_web::test]
async fn token_webhook_signs_in_the_users_it_knows_and_its_answers_are_cached_for_the_ttl() {
    let dir = tempfile::tempdir().unwrap();
    let (tls, ca) = self_signed(dir.path(), "authn");
    let (l, port) = listener();
    let hook = serve(l, Some(tls), token_webhook());
    let config = dir.path().join("authn.kubeconfig");
    write_webhook_kubeconfig(&config, &format!("https://127.0.0.1:{port}/authenticate"), Some(&ca));
    let s = TestServer::start_with(&[
        "--authentication-token-webhook-config-file",
        config.to_str().unwrap(),
        "--authentication-token-webhook-cache-ttl",
        "1m",
        "--authentication-token-webhook-version",
        "v1",
    ]);

    assert_eq!(
        whoami(&s, "carol-token").unwrap_or_else(|e| panic!("{e}\n{}", s.log_tail())),
        json!({"username": "carol", "uid": "42", "groups": ["ops", "system:authenticated"]})
    );
    let seen = hook.seen();
    let (path, review) = seen.iter().find(|(_, r)| r["spec"]["token"] == "carol-token").expect("carol's review");
    assert_eq!(path, "/authenticate");
    assert_eq!((&review["apiVersion"], &review["kind"]), (&json!("authentication.k8s.io/v1"), &json!("TokenReview")));
    assert_eq!(reviews_of(&hook, "carol-token"), 1);

    // Within the TTL the answer is remembered: the webhook is not asked again.
    assert!(whoami(&s, "carol-token").is_ok());
    let (code, _) = s.call_with_token(Some("carol-token"), "GET", "/version", None).await;
    assert_eq!(code, 200);
    assert_eq!(reviews_of(&hook, "carol-token"), 1, "asked once in a minute: {:?}", hook.seen());

    // A token it does not know is refused as kube refuses a bad credential.
    let err = whoami(&s, "mallory-token").expect_err("an unknown token");
    assert!(err.contains(UNAUTHORIZED), "{err}");
    let (code, status) = s.call_with_token(Some("mallory-token"), "GET", "/api/v1/namespaces", None).await;
    assert_eq!((code, &status["message"]), (401, &json!("Unauthorized")), "{status}");
    assert!(reviews_of(&hook, "mallory-token") >= 1, "the webhook was asked about it");

    // carol is authenticated, and RBAC decides what she may do.
    let (ok, _, err) = out(&s.kubectl_with_token("carol-token", &["get", "pods"]));
    assert!(
        !ok && err.contains("pods is forbidden: User \"carol\" cannot list resource \"pods\" in API group \"\" in the namespace \"default\""),
        "{err}"
    );
}

#[actix_web::test]
async fn token_webhook_with_a_zero_cache_ttl_is_asked_on_every_request() {
    let (l, port) = listener();
    let hook = serve(l, None, token_webhook());
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("authn.kubeconfig");
    write_webhook_kubeconfig(&config, &format!("http://127.0.0.1:{port}/authenticate"), None);
    let s = TestServer::start_with(&[
        "--authentication-token-webhook-config-file",
        config.to_str().unwrap(),
        "--authentication-token-webhook-cache-ttl",
        "0s",
    ]);
    for _ in 0..3 {
        let (code, _) = s.call_with_token(Some("carol-token"), "GET", "/version", None).await;
        assert_eq!(code, 200, "{}", s.log_tail());
    }
    assert_eq!(reviews_of(&hook, "carol-token"), 3, "{:?}", hook.seen());
    // Without --authentication-token-webhook-version, kube 1.30 sends v1beta1.
    assert!(hook.seen().iter().all(|(_, r)| r["apiVersion"] == "authentication.k8s.io/v1beta1"), "{:?}", hook.seen());
    assert_eq!(whoami(&s, "carol-token").map(|u| u["username"].clone()), Ok(json!("carol")));
}

// ---------------------------------------------------------------------------------------------
// Authorization webhook

const ALICE: &str = "alice-token,alice,1001\n";

/// A SubjectAccessReview webhook: alice may do anything to configmaps, nobody may touch pods,
/// and it has no opinion on the rest.
fn authz_webhook(_: &str, review: &Value) -> Value {
    let spec = &review["spec"];
    let resource = spec["resourceAttributes"]["resource"].as_str().unwrap_or("");
    let status = if spec["user"] == "alice" && resource == "configmaps" {
        json!({"allowed": true, "reason": "alice may"})
    } else if resource == "pods" {
        json!({"allowed": false, "denied": true, "reason": "no pods for you"})
    } else {
        json!({"allowed": false})
    };
    json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "status": status})
}

fn webhook_authz_server(dir: &Path, hook_url: &str, ca: Option<&Path>, extra: &[&str]) -> TestServer {
    let tokens = dir.join("tokens.csv");
    std::fs::write(&tokens, ALICE).unwrap();
    let config = dir.join("authz.kubeconfig");
    write_webhook_kubeconfig(&config, hook_url, ca);
    let mut flags = vec![
        "--token-auth-file",
        tokens.to_str().unwrap(),
        "--authorization-mode",
        "RBAC,Webhook",
        "--authorization-webhook-config-file",
        config.to_str().unwrap(),
        "--authorization-webhook-version",
        "v1",
    ];
    flags.extend_from_slice(extra);
    TestServer::start_with(&flags)
}

fn reviews(hook: &Stub, resource: &str, verb: &str) -> Vec<Value> {
    hook.seen()
        .into_iter()
        .map(|(_, r)| r)
        .filter(|r| {
            r["spec"]["resourceAttributes"]["resource"] == resource && r["spec"]["resourceAttributes"]["verb"] == verb
        })
        .collect()
}

#[actix_web::test]
async fn authorization_webhook_decides_what_rbac_does_not_allow_and_its_reason_is_in_the_403() {
    let dir = tempfile::tempdir().unwrap();
    let (tls, ca) = self_signed(dir.path(), "authz");
    let (l, port) = listener();
    let hook = serve(l, Some(tls), authz_webhook);
    let s = webhook_authz_server(
        dir.path(),
        &format!("https://127.0.0.1:{port}/authorize"),
        Some(&ca),
        &["--authorization-webhook-cache-authorized-ttl", "1m"],
    );
    s.kubectl_ok(&["create", "configmap", "settings", "--from-literal=a=b"]);
    let alice = |args: &[&str]| out(&s.kubectl_with_token("alice-token", args));

    // RBAC has no binding for alice: the webhook allows her configmaps.
    let (ok, stdout, err) = alice(&["get", "configmaps"]);
    assert!(ok, "{err}\n{}", s.log_tail());
    assert!(stdout.contains("settings"), "{stdout}");
    let list = reviews(&hook, "configmaps", "list");
    assert_eq!(list.len(), 1, "{:?}", hook.seen());
    let review = &list[0];
    assert_eq!(
        (&review["apiVersion"], &review["kind"]),
        (&json!("authorization.k8s.io/v1"), &json!("SubjectAccessReview"))
    );
    assert_eq!(review["spec"]["user"], "alice");
    assert_eq!(review["spec"]["uid"], "1001");
    assert!(review["spec"]["groups"].as_array().unwrap().contains(&json!("system:authenticated")), "{review}");
    let attrs = &review["spec"]["resourceAttributes"];
    assert_eq!(
        (
            &attrs["namespace"],
            &attrs["verb"],
            attrs["group"].as_str().unwrap_or(""),
            &attrs["version"],
            &attrs["resource"]
        ),
        (&json!("default"), &json!("list"), "", &json!("v1"), &json!("configmaps")),
        "{attrs}"
    );
    assert_eq!(review["spec"].get("nonResourceAttributes"), None, "{review}");

    // Allowed answers are kept for the authorized TTL: the same list is not asked again.
    let (code, _) = s.call_with_token(Some("alice-token"), "GET", "/api/v1/namespaces/default/configmaps", None).await;
    assert_eq!(code, 200);
    assert_eq!(reviews(&hook, "configmaps", "list").len(), 1, "cached for a minute");

    // A get names the object.
    let (code, cm) =
        s.call_with_token(Some("alice-token"), "GET", "/api/v1/namespaces/default/configmaps/settings", None).await;
    assert_eq!((code, &cm["data"]), (200, &json!({"a": "b"})));
    let get = reviews(&hook, "configmaps", "get");
    assert_eq!(get.last().map(|r| &r["spec"]["resourceAttributes"]["name"]), Some(&json!("settings")));

    // Pods are denied, with the webhook's reason at the end of kube's message.
    let (code, status) = s.call_with_token(Some("alice-token"), "GET", "/api/v1/namespaces/default/pods", None).await;
    assert_eq!(code, 403, "{status}");
    let message = status["message"].as_str().unwrap_or("");
    assert_eq!(
        message,
        "pods is forbidden: User \"alice\" cannot list resource \"pods\" in API group \"\" in the namespace \"default\": no pods for you"
    );
    let (ok, _, err) = alice(&["get", "pods"]);
    assert!(!ok && err.trim_end().ends_with(": no pods for you"), "{err}");
    // Subresources are sent as such.
    let (code, status) =
        s.call_with_token(Some("alice-token"), "GET", "/api/v1/namespaces/default/pods/web/log", None).await;
    assert_eq!(code, 403, "{status}");
    assert!(status["message"].as_str().unwrap_or("").ends_with(": no pods for you"), "{status}");
    let log = reviews(&hook, "pods", "get");
    let attrs = &log.last().expect("a review of pods/log")["spec"]["resourceAttributes"];
    assert_eq!((&attrs["subresource"], &attrs["name"]), (&json!("log"), &json!("web")), "{attrs}");

    // A non-resource path is sent as one, and no opinion leaves it forbidden.
    let (code, _) = s.call_with_token(Some("alice-token"), "GET", "/metrics", None).await;
    assert_eq!(code, 403);
    assert!(
        hook.seen()
            .iter()
            .any(|(_, r)| r["spec"]["nonResourceAttributes"] == json!({"path": "/metrics", "verb": "get"})),
        "{:?}",
        hook.seen()
    );
    // Secrets: no opinion, so RBAC's 403 stands.
    let (code, status) =
        s.call_with_token(Some("alice-token"), "GET", "/api/v1/namespaces/default/secrets", None).await;
    assert_eq!(code, 403);
    assert!(
        status["message"].as_str().unwrap_or("").starts_with(
            "secrets is forbidden: User \"alice\" cannot list resource \"secrets\" in API group \"\" in the namespace \"default\""
        ),
        "{status}"
    );

    // What RBAC allows never reaches the webhook (whoami's review is allowed to everyone), nor
    // does anything the admin does.
    assert!(whoami(&s, "alice-token").is_ok());
    let seen = hook.seen();
    assert!(!seen.iter().any(|(_, r)| r["spec"]["resourceAttributes"]["resource"] == "selfsubjectreviews"), "{seen:?}");
    assert!(!seen.iter().any(|(_, r)| r["spec"]["user"] == "kubernetes-admin"), "{seen:?}");

    let (code, metrics) = admin_text(&s, "/metrics").await;
    assert_eq!(code, 200);
    let evaluations: Vec<&str> =
        metrics.lines().filter(|l| l.starts_with("apiserver_authorization_webhook_evaluations_total{")).collect();
    assert!(evaluations.iter().any(|l| l.contains("result=\"success\"")), "{evaluations:?}");
}

async fn admin_text(s: &TestServer, path: &str) -> (u16, String) {
    let answer = s.admin_call("GET", path, None).await;
    (answer.code, answer.text())
}

#[actix_web::test]
async fn authorization_webhook_that_is_down_fails_requests_rbac_does_not_allow_with_an_internal_error() {
    let dir = tempfile::tempdir().unwrap();
    // Nothing listens there.
    let closed = tests::free_port();
    let s = webhook_authz_server(dir.path(), &format!("http://127.0.0.1:{closed}/authorize"), None, &[]);

    let (code, status) =
        s.call_with_token(Some("alice-token"), "GET", "/api/v1/namespaces/default/configmaps", None).await;
    // As kube-apiserver 1.30: its authorization filter answers the webhook's error with an
    // InternalError when no authorizer allowed the request.
    assert_eq!(code, 500, "{status}\n{}", s.log_tail());
    assert_eq!(status["reason"], "InternalError", "{status}");
    let message = status["message"].as_str().unwrap_or("");
    assert!(
        message.starts_with(&format!("Internal error occurred: Post \"http://127.0.0.1:{closed}/authorize\"")),
        "{status}"
    );
    let (ok, _, err) = out(&s.kubectl_with_token("alice-token", &["get", "configmaps"]));
    assert!(!ok && err.contains("Internal error occurred"), "{err}");
    // What RBAC allows is unaffected.
    assert!(whoami(&s, "alice-token").is_ok());
    s.kubectl_ok(&["get", "configmaps"]);

    let (_, metrics) = admin_text(&s, "/metrics").await;
    assert!(
        metrics
            .lines()
            .any(|l| l.starts_with("apiserver_authorization_webhook_evaluations_total{")
                && l.contains("result=\"error\"")),
        "{}",
        metrics.lines().filter(|l| l.contains("authorization_webhook")).collect::<Vec<_>>().join("\n")
    );
    assert!(
        metrics.lines().any(|l| l.starts_with("apiserver_authorization_webhook_evaluations_fail_open_total{")),
        "{}",
        metrics.lines().filter(|l| l.contains("authorization_webhook")).collect::<Vec<_>>().join("\n")
    );
}

// ---------------------------------------------------------------------------------------------
// Node authorizer

const NODES: &str =
    "node-token,system:node:n1,n1uid,\"system:nodes\"\nnode2-token,system:node:n2,n2uid,\"system:nodes\"\n";

const POD_ON_N1: &str = r#"
apiVersion: v1
kind: Pod
metadata:
  name: web
  namespace: default
spec:
  nodeName: n1
  serviceAccountName: web-sa
  containers:
  - name: c
    image: nginx
    volumeMounts:
    - name: creds
      mountPath: /creds
  volumes:
  - name: creds
    secret:
      secretName: s1
"#;

#[actix_web::test]
async fn node_authorizer_lets_a_kubelet_read_only_what_the_pods_bound_to_its_node_reference() {
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("tokens.csv");
    std::fs::write(&tokens, NODES).unwrap();
    let s =
        TestServer::start_with(&["--token-auth-file", tokens.to_str().unwrap(), "--authorization-mode", "Node,RBAC"]);
    s.kubectl_ok(&["create", "secret", "generic", "s1", "--from-literal=k=v1"]);
    s.kubectl_ok(&["create", "secret", "generic", "s2", "--from-literal=k=v2"]);
    s.kubectl_ok(&["create", "serviceaccount", "web-sa"]);
    s.kubectl_ok(&["create", "serviceaccount", "other-sa"]);
    tests::assert_success("create the pod", &s.kubectl_stdin(&["apply", "-f", "-"], POD_ON_N1));
    let pod: Value = serde_json::from_str(&s.kubectl_ok(&["get", "pod", "web", "-o", "json"])).unwrap();
    let pod_uid = pod["metadata"]["uid"].as_str().unwrap().to_string();

    let n1 = |args: &[&str]| out(&s.kubectl_with_token("node-token", args));
    let (ok, _, err) = n1(&["get", "nodes"]);
    assert!(ok, "a kubelet lists nodes: {err}");

    // The secret its pod mounts: allowed once the graph has the pod.
    let read = poll_until(Duration::from_secs(5), || {
        let (ok, stdout, _) = n1(&["get", "secret", "s1", "-o", "jsonpath={.data.k}"]);
        ok.then_some(stdout)
    });
    assert_eq!(read.as_deref(), Some("djE="), "n1 reads s1: {}", n1(&["get", "secret", "s1"]).2);

    // Another secret: no path from the node to it.
    let (ok, _, err) = n1(&["get", "secret", "s2"]);
    assert!(!ok);
    assert!(
        err.contains("secrets \"s2\" is forbidden: User \"system:node:n1\" cannot get resource \"secrets\" in API group \"\" in the namespace \"default\": no relationship found between node 'n1' and this object"),
        "{err}"
    );
    let (code, status) =
        s.call_with_token(Some("node-token"), "GET", "/api/v1/namespaces/default/secrets/s2", None).await;
    assert_eq!(code, 403, "{status}");
    assert!(
        status["message"].as_str().unwrap_or("").contains("no relationship found between node 'n1' and this object"),
        "{status}"
    );
    // Another node may not read n1's secret.
    let (code, status) =
        s.call_with_token(Some("node2-token"), "GET", "/api/v1/namespaces/default/secrets/s1", None).await;
    assert_eq!(code, 403, "{status}");
    assert!(
        status["message"].as_str().unwrap_or("").contains("no relationship found between node 'n2' and this object"),
        "{status}"
    );
    // Secrets are got one by one, never listed.
    let (code, status) = s.call_with_token(Some("node-token"), "GET", "/api/v1/namespaces/default/secrets", None).await;
    assert_eq!(code, 403, "{status}");
    assert!(
        status["message"].as_str().unwrap_or("").starts_with(
            "secrets is forbidden: User \"system:node:n1\" cannot list resource \"secrets\" in API group \"\" in the namespace \"default\""
        ),
        "{status}"
    );
    assert!(!n1(&["get", "secrets"]).0);
    // A list pinned to one Secret by its field selector reads that one, as kube's RequestInfo
    // names it: the kubelet lists and watches each Secret and ConfigMap of its pods so.
    let pinned = |name: &str| format!("/api/v1/namespaces/default/secrets?fieldSelector=metadata.name%3D{name}");
    let (code, list) = s.call_with_token(Some("node-token"), "GET", &pinned("s1"), None).await;
    assert_eq!(code, 200, "{list}");
    let names: Vec<&str> =
        list["items"].as_array().into_iter().flatten().filter_map(|i| i["metadata"]["name"].as_str()).collect();
    assert_eq!(names, ["s1"]);
    // Pinned by name across every namespace: refused, whatever pods the node holds.
    let everywhere = "/api/v1/secrets?fieldSelector=metadata.name%3Ds1";
    let (code, status) = s.call_with_token(Some("node-token"), "GET", everywhere, None).await;
    assert_eq!(code, 403, "{status}");
    assert!(
        status["message"].as_str().unwrap_or("").contains("can only read namespaced object of this type"),
        "{status}"
    );
    let (code, status) = s.call_with_token(Some("node-token"), "GET", &pinned("s2"), None).await;
    assert_eq!(code, 403, "{status}");
    assert!(
        status["message"].as_str().unwrap_or("").contains(
            "secrets \"s2\" is forbidden: User \"system:node:n1\" cannot list resource \"secrets\" in API group \"\" in the namespace \"default\": no relationship found between node 'n1' and this object"
        ),
        "{status}"
    );

    // A token for the pod's service account, bound to the pod: allowed; for another: not.
    let request = |sa: &str| {
        json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "metadata": {"name": sa, "namespace": "default"},
            "spec": {"expirationSeconds": 3600,
                "boundObjectRef": {"kind": "Pod", "apiVersion": "v1", "name": "web", "uid": pod_uid}}})
    };
    let (code, tr) = s
        .call_with_token(
            Some("node-token"),
            "POST",
            "/api/v1/namespaces/default/serviceaccounts/web-sa/token",
            Some(request("web-sa")),
        )
        .await;
    assert_eq!(code, 201, "{tr}\n{}", s.log_tail());
    assert_eq!(tr["kind"], "TokenRequest");
    let token = tr["status"]["token"].as_str().unwrap_or("");
    assert_eq!(token.split('.').count(), 3, "a JWT: {tr}");
    let (code, status) = s
        .call_with_token(
            Some("node-token"),
            "POST",
            "/api/v1/namespaces/default/serviceaccounts/other-sa/token",
            Some(request("other-sa")),
        )
        .await;
    assert_eq!(code, 403, "{status}");
    assert_eq!(
        status["message"].as_str().unwrap_or(""),
        "serviceaccounts \"other-sa\" is forbidden: User \"system:node:n1\" cannot create resource \"serviceaccounts/token\" in API group \"\" in the namespace \"default\": no relationship found between node 'n1' and this object"
    );
    let (code, _) = s
        .call_with_token(
            Some("node2-token"),
            "POST",
            "/api/v1/namespaces/default/serviceaccounts/web-sa/token",
            Some(request("web-sa")),
        )
        .await;
    assert_eq!(code, 403, "n2 has no pod using web-sa");
}

/// Creates the bootstrap token Secret `kube-system/bootstrap-token-<id>` as `kubeadm token
/// create` does, with `data` given as `key=value` pairs beside the id and secret.
fn bootstrap_secret(s: &TestServer, id: &str, secret: &str, data: &[&str]) {
    let name = format!("bootstrap-token-{id}");
    let mut args: Vec<String> = ["create", "secret", "generic", &name, "-n", "kube-system"].map(String::from).to_vec();
    args.extend(["--type".into(), "bootstrap.kubernetes.io/token".into()]);
    let pairs = [format!("token-id={id}"), format!("token-secret={secret}")];
    for pair in pairs.iter().map(String::as_str).chain(data.iter().copied()) {
        args.push(format!("--from-literal={pair}"));
    }
    s.kubectl_ok(&args.iter().map(String::as_str).collect::<Vec<_>>());
}

#[actix_web::test]
async fn bootstrap_tokens_sign_in_as_kubeadm_join_presents_them_while_their_secret_allows() {
    let s = TestServer::start_with(&["--enable-bootstrap-token-auth"]);
    let hour = chrono::Duration::hours(1);
    let later = (chrono::Utc::now() + hour).to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let earlier = (chrono::Utc::now() - hour).to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let usage = "usage-bootstrap-authentication=true";
    let expired = format!("expiration={earlier}");
    bootstrap_secret(&s, "oldtok", "0123456789abcdef", &[usage, &expired]);
    bootstrap_secret(&s, "nouse1", "0123456789abcdef", &["usage-bootstrap-authentication=false"]);
    let expires = format!("expiration={later}");
    let groups = "auth-extra-groups=system:bootstrappers:kubeadm:default-node-token";
    bootstrap_secret(&s, "abcdef", "0123456789abcdef", &[usage, &expires, groups]);

    // The Secrets reach the authenticator through the cache, in the order they were written.
    let good = "abcdef.0123456789abcdef";
    assert!(within(Duration::from_secs(10), || whoami(&s, good).is_ok()).is_some(), "{}", s.log_tail());
    assert_eq!(
        whoami(&s, good).unwrap(),
        json!({"username": "system:bootstrap:abcdef",
               "groups": ["system:bootstrappers", "system:bootstrappers:kubeadm:default-node-token", "system:authenticated"]})
    );
    for (what, token) in [
        ("with another secret", "abcdef.0123456789abcdeg"),
        ("whose Secret has expired", "oldtok.0123456789abcdef"),
        ("whose Secret is not for authentication", "nouse1.0123456789abcdef"),
        ("with no Secret", "zzzzzz.0123456789abcdef"),
    ] {
        let err = whoami(&s, token).expect_err(what);
        assert!(err.contains("Unauthorized"), "a token {what}: {err}");
    }

    // Without the flag the same Secret signs nobody in.
    let off = TestServer::start();
    bootstrap_secret(&off, "abcdef", "0123456789abcdef", &[usage, &expires]);
    let stored = off.kubectl_ok(&["get", "secret", "-n", "kube-system", "bootstrap-token-abcdef", "-o", "name"]);
    assert_eq!(stored.trim(), "secret/bootstrap-token-abcdef");
    assert!(within(Duration::from_secs(2), || whoami(&off, good).is_ok()).is_none(), "accepted without the flag");
}
