//! ServiceAccounts as their users meet them: `kubectl create token` and the tokens it gives
//! (who they authenticate as, when they stop working), TokenReview, legacy token Secrets, the
//! default ServiceAccount of every namespace and the token volume of pods, ClusterRole
//! aggregation into `admin`/`edit`/`view`, anonymous requests, issuer discovery, and the
//! official Python client presenting a bearer token.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine;
use serde_json::{Value, json};
use tests::{Caller, TestServer, command_outcome as out, within};

use crate::kinds::call;

const ISSUER: &str = "https://kubernetes.default.svc.cluster.local";
const UNAUTHORIZED: &str = "error: You must be logged in to the server (Unauthorized)";
const MOUNT_PATH: &str = "/var/run/secrets/kubernetes.io/serviceaccount";

/// `kubectl create token ...` as the admin: the token.
fn create_token(s: &TestServer, args: &[&str]) -> String {
    let mut all = vec!["create", "token"];
    all.extend_from_slice(args);
    s.kubectl_ok(&all).trim().to_string()
}

/// The decoded JSON of one part of a JWT (0: header, 1: claims).
fn jwt_part(token: &str, i: usize) -> Value {
    let part = token.split('.').nth(i).unwrap_or_else(|| panic!("not a JWT: {token}"));
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(part).expect("base64url");
    serde_json::from_slice(&bytes).expect("JSON")
}

/// `kubectl auth whoami` as the holder of `token`: its table rows, spaces collapsed.
fn whoami(s: &TestServer, token: &str) -> Result<Vec<String>, String> {
    let (ok, stdout, stderr) = out(&s.kubectl_with_token(token, &["auth", "whoami"]));
    if !ok {
        return Err(stderr);
    }
    Ok(stdout.lines().map(|l| l.split_whitespace().collect::<Vec<_>>().join(" ")).collect())
}

/// Whether `kubectl auth whoami` with `token` is refused as kube refuses a bad credential.
fn refused(s: &TestServer, token: &str) -> bool {
    matches!(whoami(s, token), Err(e) if e.contains(UNAUTHORIZED))
}

fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs()
}

/// An HTTPS request without a client certificate, with `token` as bearer token if given.
async fn raw(s: &TestServer, token: Option<&str>, method: &str, path: &str) -> (u16, Option<String>, Value) {
    let answer = s.request(token.map_or(Caller::Anonymous, Caller::Bearer), method, path).send().await;
    let ctype = answer.header("content-type").map(str::to_string);
    (answer.code, ctype, answer.body)
}

fn get_json(s: &TestServer, args: &[&str]) -> Value {
    let mut all = vec!["get"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["-o", "json"]);
    serde_json::from_str(&s.kubectl_ok(&all)).expect("kubectl JSON")
}

fn sa_uid(s: &TestServer, ns: &str, name: &str) -> String {
    s.kubectl_ok(&["get", "serviceaccount", name, "-n", ns, "-o", "jsonpath={.metadata.uid}"])
}

async fn token_review(s: &TestServer, token: &str, audiences: Option<&[&str]>) -> Value {
    let mut spec = json!({"token": token});
    if let Some(a) = audiences {
        spec["audiences"] = json!(a);
    }
    let body = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": spec});
    let (code, review) =
        call(s, "POST", "/apis/authentication.k8s.io/v1/tokenreviews", "application/json", Some(body)).await;
    assert_eq!(code, 201, "{review}");
    review
}

#[actix_web::test]
async fn kubectl_create_token_gives_a_token_that_authenticates_as_the_service_account() {
    let s = TestServer::start();
    let token = create_token(&s, &["default"]);
    let uid = sa_uid(&s, "default", "default");

    // An ES256 JWT from the server's issuer, for the API's audience, an hour long by default.
    let header = jwt_part(&token, 0);
    assert_eq!(header["alg"], "ES256", "{header}");
    assert!(header["kid"].as_str().is_some_and(|k| !k.is_empty()), "{header}");
    let claims = jwt_part(&token, 1);
    assert_eq!(claims["iss"], ISSUER, "{claims}");
    assert_eq!(claims["aud"], json!([ISSUER]), "{claims}");
    assert_eq!(claims["sub"], "system:serviceaccount:default:default", "{claims}");
    assert_eq!(
        claims["kubernetes.io"],
        json!({"namespace": "default", "serviceaccount": {"name": "default", "uid": uid}}),
        "{claims}"
    );
    assert_eq!(claims["exp"].as_u64().unwrap() - claims["iat"].as_u64().unwrap(), 3600, "{claims}");
    let jti = claims["jti"].as_str().expect("jti").to_string();

    let rows = whoami(&s, &token).expect("the token is accepted");
    assert_eq!(
        rows,
        [
            "ATTRIBUTE VALUE".to_string(),
            "Username system:serviceaccount:default:default".into(),
            format!("UID {uid}"),
            "Groups [system:serviceaccounts system:serviceaccounts:default system:authenticated]".into(),
            format!("Extra: authentication.kubernetes.io/credential-id [JTI={jti}]"),
        ]
    );

    // A ServiceAccount of another namespace, with --duration.
    s.kubectl_ok(&["create", "namespace", "ci"]);
    s.kubectl_ok(&["create", "serviceaccount", "deployer", "-n", "ci"]);
    let token = create_token(&s, &["deployer", "-n", "ci", "--duration", "10m"]);
    let claims = jwt_part(&token, 1);
    assert_eq!(claims["exp"].as_u64().unwrap() - claims["iat"].as_u64().unwrap(), 600, "{claims}");
    let rows = whoami(&s, &token).expect("the token is accepted");
    assert_eq!(rows[1], "Username system:serviceaccount:ci:deployer");
    assert_eq!(rows[2], format!("UID {}", sa_uid(&s, "ci", "deployer")));
    assert_eq!(rows[3], "Groups [system:serviceaccounts system:serviceaccounts:ci system:authenticated]");

    // The TokenRequest itself: 201, its spec defaulted, its status the token.
    let body =
        json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"expirationSeconds": 600}});
    let (code, tr) =
        call(&s, "POST", "/api/v1/namespaces/ci/serviceaccounts/deployer/token", "application/json", Some(body)).await;
    assert_eq!(code, 201, "{tr}");
    assert_eq!((&tr["apiVersion"], &tr["kind"]), (&json!("authentication.k8s.io/v1"), &json!("TokenRequest")), "{tr}");
    assert_eq!(tr["spec"]["audiences"], json!([ISSUER]), "{tr}");
    assert_eq!(tr["spec"]["expirationSeconds"], 600, "{tr}");
    let t = tr["status"]["token"].as_str().expect("status.token");
    assert_eq!(jwt_part(t, 1)["sub"], "system:serviceaccount:ci:deployer");
    assert!(tr["status"]["expirationTimestamp"].as_str().is_some_and(|t| t.ends_with('Z')), "{tr}");

    // What kube refuses to issue.
    let (ok, _, err) = out(&s.kubectl(&["create", "token", "default", "--duration", "5m"]));
    assert!(!ok);
    assert!(
        err.contains("TokenRequest.authentication.k8s.io \"default\" is invalid: spec.expirationSeconds: Invalid value: 300: may not specify a duration less than 10 minutes"),
        "{err}"
    );
    let (ok, _, err) = out(&s.kubectl(&["create", "token", "ghost"]));
    assert!(!ok && err.contains("serviceaccounts \"ghost\" not found"), "{err}");
    let (ok, _, err) =
        out(&s.kubectl(&["create", "token", "default", "--bound-object-kind", "Pod", "--bound-object-name", "nope"]));
    assert!(!ok && err.contains("pods \"nope\" not found"), "{err}");

    // A token for another audience is no credential for this API, but TokenReview vouches for
    // it to whoever asks on that audience's behalf.
    let foo = create_token(&s, &["default", "--audience", "foo"]);
    assert_eq!(jwt_part(&foo, 1)["aud"], json!(["foo"]));
    let err = whoami(&s, &foo).expect_err("a token for audience foo is refused");
    assert!(err.contains(UNAUTHORIZED), "{err}");
    let (code, _, status) = raw(&s, Some(&foo), "GET", "/api/v1/namespaces/default/configmaps").await;
    assert_eq!((code, &status["message"], &status["reason"]), (401, &json!("Unauthorized"), &json!("Unauthorized")));

    let review = token_review(&s, &foo, Some(&["foo"])).await;
    assert_eq!(review["status"]["authenticated"], true, "{review}");
    assert_eq!(review["status"]["audiences"], json!(["foo"]), "{review}");
    assert_eq!(review["status"]["user"]["username"], "system:serviceaccount:default:default", "{review}");
    assert_eq!(
        review["status"]["user"]["groups"],
        json!(["system:serviceaccounts", "system:serviceaccounts:default", "system:authenticated"]),
        "{review}"
    );
    let review = token_review(&s, &foo, None).await;
    assert_ne!(review["status"]["authenticated"], true, "a foo token is not for the API's audience: {review}");
    let api = create_token(&s, &["default"]);
    let review = token_review(&s, &api, None).await;
    assert_eq!(review["status"]["authenticated"], true, "{review}");
    assert_eq!(review["status"]["audiences"], json!([ISSUER]), "{review}");
}

#[actix_web::test]
async fn tokens_are_refused_once_expired_or_once_their_account_or_bound_object_is_deleted() {
    let s = TestServer::start();
    let uid = sa_uid(&s, "default", "default");
    let kid = jwt_part(&create_token(&s, &["default"]), 0)["kid"].as_str().expect("kid").to_string();

    // Tokens signed with the server's own key (its data dir's pki/service-account.key).
    let pem = std::fs::read(s.data_dir.join("pki/service-account.key")).expect("the service account key");
    let key = jsonwebtoken::EncodingKey::from_ec_pem(&pem).expect("a PKCS#8 EC P-256 key");
    let mint = |exp: u64| {
        let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::ES256);
        header.kid = Some(kid.clone());
        let claims = json!({"aud": [ISSUER], "exp": exp, "iat": now() - 4000, "nbf": now() - 4000, "iss": ISSUER,
            "sub": "system:serviceaccount:default:default",
            "kubernetes.io": {"namespace": "default", "serviceaccount": {"name": "default", "uid": uid}}});
        jsonwebtoken::encode(&header, &claims, &key).expect("sign")
    };
    let live = mint(now() + 600);
    let rows = whoami(&s, &live).expect("a token signed with the server's key and not expired is accepted");
    assert_eq!(rows[1], "Username system:serviceaccount:default:default");
    let expired = mint(now() - 120);
    let err = whoami(&s, &expired).expect_err("an expired token is refused");
    assert!(err.contains(UNAUTHORIZED), "{err}");
    let (code, _, status) = raw(&s, Some(&expired), "GET", "/api/v1/namespaces/default/pods").await;
    assert_eq!((code, &status["message"]), (401, &json!("Unauthorized")), "{status}");

    // A forged signature is refused too.
    let mut forged = live.clone();
    let last = forged.pop().unwrap();
    forged.push(if last == 'A' { 'B' } else { 'A' });
    assert!(refused(&s, &forged), "a token with a broken signature is refused");

    // Bound to a pod: it says so, and dies with the pod.
    s.kubectl_ok(&["run", "x", "--image=nginx"]);
    let pod_uid = s.kubectl_ok(&["get", "pod", "x", "-o", "jsonpath={.metadata.uid}"]);
    let bound = create_token(&s, &["default", "--bound-object-kind", "Pod", "--bound-object-name", "x"]);
    assert_eq!(jwt_part(&bound, 1)["kubernetes.io"]["pod"], json!({"name": "x", "uid": pod_uid}));
    let rows = whoami(&s, &bound).expect("a pod-bound token of a live pod is accepted");
    assert!(rows.contains(&"Extra: authentication.kubernetes.io/pod-name [x]".to_string()), "{rows:?}");
    assert!(rows.contains(&format!("Extra: authentication.kubernetes.io/pod-uid [{pod_uid}]")), "{rows:?}");
    s.kubectl_ok(&["delete", "pod", "x", "--grace-period=0", "--force"]);
    assert!(
        within(Duration::from_secs(1), || refused(&s, &bound)).is_some(),
        "the pod-bound token is refused within a second of the pod's deletion: {:?}",
        whoami(&s, &bound)
    );
    // A pod of the same name is another pod.
    s.kubectl_ok(&["run", "x", "--image=nginx"]);
    assert!(refused(&s, &bound), "a new pod of the same name does not revive the token");

    // Bound to a Secret: dies with the Secret.
    s.kubectl_ok(&["create", "secret", "generic", "s1", "--from-literal=a=b"]);
    let bound = create_token(&s, &["default", "--bound-object-kind", "Secret", "--bound-object-name", "s1"]);
    whoami(&s, &bound).expect("a secret-bound token of a live Secret is accepted");
    s.kubectl_ok(&["delete", "secret", "s1"]);
    assert!(within(Duration::from_secs(1), || refused(&s, &bound)).is_some(), "{:?}", whoami(&s, &bound));

    // The ServiceAccount deleted: its tokens go with it, and its successor's uid does not
    // revive them.
    let token = create_token(&s, &["default"]);
    whoami(&s, &token).expect("accepted");
    s.kubectl_ok(&["delete", "serviceaccount", "default"]);
    assert!(
        within(Duration::from_secs(1), || refused(&s, &token)).is_some(),
        "the token is refused within a second of its ServiceAccount's deletion: {:?}",
        whoami(&s, &token)
    );
    let mut new_uid = String::new();
    let recreated = within(Duration::from_secs(10), || {
        let (ok, stdout, _) = out(&s.kubectl(&["get", "serviceaccount", "default", "-o", "jsonpath={.metadata.uid}"]));
        new_uid = stdout;
        ok && !new_uid.is_empty()
    });
    assert!(recreated.is_some(), "the default ServiceAccount is recreated\n{}", s.log_tail());
    assert_ne!(new_uid, uid, "the recreated ServiceAccount is a new object");
    assert!(refused(&s, &token), "the old token stays refused");
    assert!(refused(&s, &live), "the minted token names the old uid: refused");
    let rows = whoami(&s, &create_token(&s, &["default"])).expect("a new token works");
    assert_eq!(rows[2], format!("UID {new_uid}"));
}

#[actix_web::test]
async fn legacy_token_secrets_are_filled_in_and_die_with_their_secret_or_account() {
    let s = TestServer::start();
    s.kubectl_ok(&["create", "serviceaccount", "builder"]);
    let uid = sa_uid(&s, "default", "builder");
    let secret = |name: &str, sa: &str| {
        format!(
            "apiVersion: v1\nkind: Secret\nmetadata:\n  name: {name}\n  annotations:\n    kubernetes.io/service-account.name: {sa}\ntype: kubernetes.io/service-account-token\n"
        )
    };
    tests::assert_success(
        "create secret",
        &s.kubectl_stdin(&["apply", "-f", "-"], &secret("builder-token", "builder")),
    );
    let filled = |name: &str| {
        let mut got = Value::Null;
        let took = within(Duration::from_secs(5), || {
            got = get_json(&s, &["secret", name]);
            got["data"]["token"].is_string()
        });
        assert!(took.is_some(), "the token controller fills {name} in: {got}\n{}", s.log_tail());
        got
    };
    let got = filled("builder-token");
    let b64 = |v: &Value| {
        String::from_utf8(base64::engine::general_purpose::STANDARD.decode(v.as_str().expect("a data key")).unwrap())
            .unwrap()
    };
    assert_eq!(got["metadata"]["annotations"]["kubernetes.io/service-account.uid"], uid.as_str(), "{got}");
    assert_eq!(b64(&got["data"]["namespace"]), "default");
    let kubeconfig: Value =
        serde_yaml_ng::from_str(&std::fs::read_to_string(&s.kubeconfig).unwrap()).expect("kubeconfig YAML");
    let cluster_ca = b64(&kubeconfig["clusters"][0]["cluster"]["certificate-authority-data"]);
    assert_eq!(b64(&got["data"]["ca.crt"]).trim(), cluster_ca.trim(), "ca.crt is the cluster's CA");
    let token = b64(&got["data"]["token"]);
    assert_eq!(jwt_part(&token, 1)["sub"], "system:serviceaccount:default:builder");

    let rows = whoami(&s, &token).expect("the legacy token is accepted");
    assert_eq!(rows[1], "Username system:serviceaccount:default:builder");
    assert_eq!(rows[2], format!("UID {uid}"));
    assert_eq!(rows[3], "Groups [system:serviceaccounts system:serviceaccounts:default system:authenticated]");

    // Its use is tracked as kube tracks it, and a token the cleaner marked invalid is refused.
    let today = chrono::Utc::now().format("%Y-%m-%d").to_string();
    let last_used = "jsonpath={.metadata.labels.kubernetes\\.io/legacy-token-last-used}";
    let labelled = within(Duration::from_secs(5), || {
        s.kubectl_ok(&["get", "secret", "builder-token", "-o", last_used]) == today
            || chrono::Utc::now().format("%Y-%m-%d").to_string() != today
    });
    assert!(labelled.is_some(), "the Secret is labelled with the day of its use\n{}", s.log_tail());
    let since = ["get", "configmap", "-n", "kube-system", "kube-apiserver-legacy-service-account-token-tracking"];
    let since = s.kubectl_ok(&[&since[..], &["-o", "jsonpath={.data.since}"]].concat());
    assert!(chrono::NaiveDate::parse_from_str(&since, "%Y-%m-%d").is_ok(), "tracked since {since:?}");
    s.kubectl_ok(&["label", "secret", "builder-token", "kubernetes.io/legacy-token-invalid-since=2026-01-01"]);
    assert!(
        within(Duration::from_secs(5), || refused(&s, &token)).is_some(),
        "a token marked invalid is refused: {:?}",
        whoami(&s, &token)
    );
    s.kubectl_ok(&["label", "secret", "builder-token", "kubernetes.io/legacy-token-invalid-since-"]);
    assert!(within(Duration::from_secs(5), || whoami(&s, &token).is_ok()).is_some(), "accepted again");

    // Deleting the Secret revokes the token.
    s.kubectl_ok(&["delete", "secret", "builder-token"]);
    assert!(
        within(Duration::from_secs(1), || refused(&s, &token)).is_some(),
        "the token is refused once its Secret is gone: {:?}",
        whoami(&s, &token)
    );

    // Deleting the ServiceAccount deletes its token Secrets.
    tests::assert_success(
        "create secret",
        &s.kubectl_stdin(&["apply", "-f", "-"], &secret("builder-token-2", "builder")),
    );
    let token = b64(&filled("builder-token-2")["data"]["token"]);
    whoami(&s, &token).expect("the second legacy token is accepted");
    s.kubectl_ok(&["delete", "serviceaccount", "builder"]);
    let gone = within(Duration::from_secs(5), || {
        let (ok, _, err) = out(&s.kubectl(&["get", "secret", "builder-token-2"]));
        !ok && err.contains("secrets \"builder-token-2\" not found")
    });
    assert!(gone.is_some(), "the token Secret is deleted with its ServiceAccount\n{}", s.log_tail());
    assert!(refused(&s, &token));
}

/// The `kube-api-access-*` volume of a pod, checked to be kube's, and its name.
fn token_volume(pod: &Value) -> String {
    let volumes = pod["spec"]["volumes"].as_array().unwrap_or_else(|| panic!("no volumes: {pod}"));
    assert_eq!(volumes.len(), 1, "{pod}");
    let name = volumes[0]["name"].as_str().unwrap().to_string();
    let suffix = name.strip_prefix("kube-api-access-").unwrap_or_else(|| panic!("volume name {name}"));
    assert!(
        suffix.len() == 5 && suffix.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit()),
        "volume name {name}"
    );
    assert_eq!(
        volumes[0]["projected"],
        json!({"defaultMode": 420, "sources": [
            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
            {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
            {"downwardAPI": {"items": [{"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}, "path": "namespace"}]}}
        ]}),
        "{pod}"
    );
    name
}

#[actix_web::test]
async fn every_namespace_gets_a_default_service_account_and_pods_mount_its_token() {
    let s = TestServer::start_with(&["--enable-root-ca-publisher=true"]);
    s.kubectl_ok(&["create", "namespace", "team-a"]);
    let took = within(Duration::from_secs(5), || {
        s.kubectl(&["get", "serviceaccount", "default", "-n", "team-a"]).status.success()
    });
    assert!(took.is_some(), "the namespace gets a default ServiceAccount\n{}", s.log_tail());

    // ... and the kube-root-ca.crt ConfigMap the token volume projects, restored if deleted.
    let kubeconfig: Value = serde_yaml_ng::from_str(&std::fs::read_to_string(&s.kubeconfig).unwrap()).unwrap();
    let ca_data = kubeconfig["clusters"][0]["cluster"]["certificate-authority-data"].as_str().unwrap().to_string();
    let cluster_ca = String::from_utf8(base64::engine::general_purpose::STANDARD.decode(ca_data).unwrap()).unwrap();
    let root_ca = || {
        let o = s.kubectl(&["get", "configmap", "kube-root-ca.crt", "-n", "team-a", "-o", "jsonpath={.data.ca\\.crt}"]);
        String::from_utf8_lossy(&o.stdout).trim().to_string()
    };
    assert!(within(Duration::from_secs(5), || root_ca() == cluster_ca.trim()).is_some(), "{}", root_ca());
    s.kubectl_ok(&["delete", "configmap", "kube-root-ca.crt", "-n", "team-a"]);
    assert!(within(Duration::from_secs(5), || root_ca() == cluster_ca.trim()).is_some(), "restored: {}", root_ca());

    let pod = r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","namespace":"team-a"},"spec":{
        "initContainers":[{"name":"init","image":"busybox"}],
        "containers":[{"name":"app","image":"nginx"},{"name":"sidecar","image":"busybox"}]}}"#;
    tests::assert_success("create pod", &s.kubectl_stdin(&["create", "-f", "-"], pod));
    let got = get_json(&s, &["pod", "web", "-n", "team-a"]);
    assert_eq!(got["spec"]["serviceAccountName"], "default", "{got}");
    let volume = token_volume(&got);
    for c in
        got["spec"]["initContainers"].as_array().unwrap().iter().chain(got["spec"]["containers"].as_array().unwrap())
    {
        assert_eq!(
            c["volumeMounts"],
            json!([{"name": volume, "mountPath": MOUNT_PATH, "readOnly": true}]),
            "container {}: {c}",
            c["name"]
        );
    }

    // A ServiceAccount that does not exist.
    let ghost = r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"team-a"},"spec":{
        "serviceAccountName":"ghost","containers":[{"name":"app","image":"nginx"}]}}"#;
    let (ok, _, err) = out(&s.kubectl_stdin(&["create", "-f", "-"], ghost));
    assert!(!ok);
    assert!(
        err.contains(
            "pods \"p\" is forbidden: error looking up service account team-a/ghost: serviceaccount \"ghost\" not found"
        ),
        "{err}"
    );

    // Opting out, on the pod or on its ServiceAccount.
    let quiet = r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"quiet","namespace":"team-a"},"spec":{
        "automountServiceAccountToken":false,"containers":[{"name":"app","image":"nginx"}]}}"#;
    tests::assert_success("create pod", &s.kubectl_stdin(&["create", "-f", "-"], quiet));
    let got = get_json(&s, &["pod", "quiet", "-n", "team-a"]);
    assert_eq!(got["spec"]["serviceAccountName"], "default", "{got}");
    assert_eq!(got["spec"].get("volumes"), None, "{got}");
    assert_eq!(got["spec"]["containers"][0].get("volumeMounts"), None, "{got}");

    let sa = r#"{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"silent","namespace":"team-a"},"automountServiceAccountToken":false}"#;
    tests::assert_success("create sa", &s.kubectl_stdin(&["create", "-f", "-"], sa));
    let pod = r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"silent","namespace":"team-a"},"spec":{
        "serviceAccountName":"silent","containers":[{"name":"app","image":"nginx"}]}}"#;
    tests::assert_success("create pod", &s.kubectl_stdin(&["create", "-f", "-"], pod));
    let got = get_json(&s, &["pod", "silent", "-n", "team-a"]);
    assert_eq!(got["spec"].get("volumes"), None, "{got}");
    assert_eq!(got["spec"]["containers"][0].get("volumeMounts"), None, "{got}");

    // kube's v1 Pod also carries the deprecated `serviceAccount` copy of serviceAccountName
    // (`kubectl get pod -o yaml` shows `serviceAccount: default` beside `serviceAccountName`).
    let got = get_json(&s, &["pod", "web", "-n", "team-a"]);
    assert_eq!(got["spec"]["serviceAccount"], "default", "{}", got["spec"]);
}

#[actix_web::test]
async fn the_edit_cluster_role_aggregates_labelled_roles_and_grants_them_to_a_bound_group() {
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("tokens.csv");
    std::fs::write(&tokens, "bob-token,bob,1002,\"devs\"\n").unwrap();
    let s = TestServer::start_with(&["--token-auth-file", tokens.to_str().unwrap()]);
    let bob = |args: &[&str]| out(&s.kubectl_with_token("bob-token", args));

    let edit = get_json(&s, &["clusterrole", "edit"]);
    assert_eq!(
        edit["aggregationRule"],
        json!({"clusterRoleSelectors": [{"matchLabels": {"rbac.authorization.k8s.io/aggregate-to-edit": "true"}}]}),
        "{edit}"
    );
    s.kubectl_ok(&["create", "namespace", "team"]);
    s.kubectl_ok(&["create", "rolebinding", "devs-edit", "-n", "team", "--clusterrole=edit", "--group=devs"]);
    let took =
        within(Duration::from_secs(1), || bob(&["create", "configmap", "c1", "-n", "team", "--from-literal=a=b"]).0);
    assert!(took.is_some(), "{:?}", bob(&["create", "configmap", "c1", "-n", "team"]));
    let (ok, _, err) = bob(&["create", "deployment", "web", "-n", "team", "--image=nginx"]);
    assert!(ok, "edit grants deployments: {err}");
    let (ok, _, err) = bob(&["get", "configmaps", "-n", "default"]);
    assert!(
        !ok && err.contains("configmaps is forbidden: User \"bob\" cannot list resource \"configmaps\" in API group \"\" in the namespace \"default\""),
        "{err}"
    );

    // edit leaves RBAC out.
    let (ok, _, err) = bob(&["create", "role", "r", "-n", "team", "--verb=get", "--resource=pods"]);
    assert!(!ok);
    assert!(
        err.contains("roles.rbac.authorization.k8s.io is forbidden: User \"bob\" cannot create resource \"roles\" in API group \"rbac.authorization.k8s.io\" in the namespace \"team\""),
        "{err}"
    );
    let (ok, _, err) = bob(&["create", "rolebinding", "rb", "-n", "team", "--clusterrole=view", "--user=bob"]);
    assert!(!ok);
    assert!(
        err.contains("rolebindings.rbac.authorization.k8s.io is forbidden: User \"bob\" cannot create resource \"rolebindings\" in API group \"rbac.authorization.k8s.io\" in the namespace \"team\""),
        "{err}"
    );
    // Quotas: edit reads them, no more.
    assert!(bob(&["get", "resourcequotas", "-n", "team"]).0);
    let quota_denied = "resourcequotas is forbidden: User \"bob\" cannot create resource \"resourcequotas\" in API group \"\" in the namespace \"team\"";
    let (ok, _, err) = bob(&["create", "quota", "q1", "-n", "team", "--hard=pods=10"]);
    assert!(!ok && err.contains(quota_denied), "{err}");

    // A role labelled for aggregation into edit: its rules join edit's, and bob may.
    let rule = json!({"apiGroups": [""], "resources": ["resourcequotas"], "verbs": ["create"]});
    let role = r#"{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":"quota-maker",
        "labels":{"rbac.authorization.k8s.io/aggregate-to-edit":"true"}},
        "rules":[{"apiGroups":[""],"resources":["resourcequotas"],"verbs":["create"]}]}"#;
    tests::assert_success("create clusterrole", &s.kubectl_stdin(&["create", "-f", "-"], role));
    let has_rule =
        |role: &str| get_json(&s, &["clusterrole", role])["rules"].as_array().is_some_and(|r| r.contains(&rule));
    assert!(
        within(Duration::from_secs(2), || has_rule("edit")).is_some(),
        "edit aggregates the new role's rules: {}",
        get_json(&s, &["clusterrole", "edit"])["rules"]
    );
    // edit is itself aggregated into admin.
    assert!(
        within(Duration::from_secs(2), || has_rule("admin")).is_some(),
        "admin aggregates edit's new rules: {}",
        get_json(&s, &["clusterrole", "admin"])["rules"]
    );
    assert!(!has_rule("view"), "view does not aggregate edit's roles");
    assert!(
        within(Duration::from_secs(1), || bob(&["create", "quota", "q1", "-n", "team", "--hard=pods=10"]).0).is_some(),
        "{:?}",
        bob(&["create", "quota", "q1", "-n", "team", "--hard=pods=10"])
    );

    // Removing the role removes its rules again.
    s.kubectl_ok(&["delete", "clusterrole", "quota-maker"]);
    assert!(
        within(Duration::from_secs(2), || !has_rule("edit")).is_some(),
        "{}",
        get_json(&s, &["clusterrole", "edit"])["rules"]
    );
    assert!(
        within(Duration::from_secs(1), || {
            bob(&["create", "quota", "q2", "-n", "team", "--hard=pods=10"]).2.contains(quota_denied)
        })
        .is_some(),
        "{:?}",
        bob(&["create", "quota", "q2", "-n", "team", "--hard=pods=10"])
    );
}

#[actix_web::test]
async fn anonymous_requests_see_version_and_health_but_bad_tokens_are_401() {
    let s = TestServer::start();
    // (kubectl itself cannot be made anonymous: without any credential in its kubeconfig it
    // prompts for a username, so these are raw requests without a client certificate.)
    let (code, _, version) = raw(&s, None, "GET", "/version").await;
    assert!(code == 200 && version["gitVersion"].is_string(), "{version}");
    let (code, _, health) = raw(&s, None, "GET", "/healthz").await;
    assert_eq!((code, health), (200, json!("ok")));
    let (code, _, status) = raw(&s, None, "GET", "/api/v1/namespaces/default/secrets").await;
    let denied = "secrets is forbidden: User \"system:anonymous\" cannot list resource \"secrets\" in API group \"\" in the namespace \"default\"";
    assert_eq!((code, status["message"].as_str().unwrap_or_default()), (403, denied), "{status}");
    assert_eq!(status["reason"], "Forbidden");

    // A credential that does not authenticate is refused, not downgraded to anonymous.
    let (code, _, status) = raw(&s, Some("not-a-token"), "GET", "/version").await;
    assert_eq!((code, &status["message"], &status["code"]), (401, &json!("Unauthorized"), &json!(401)), "{status}");
    let (ok, _, err) = out(&s.kubectl_with_token("not-a-token", &["get", "--raw", "/version"]));
    assert!(!ok && err.contains(UNAUTHORIZED), "{err}");

    // With --anonymous-auth=false (and another issuer) nothing is open without credentials.
    let closed =
        TestServer::start_with(&["--anonymous-auth=false", "--service-account-issuer", "https://sa.example.com"]);
    for path in ["/version", "/healthz"] {
        let (code, _, status) = raw(&closed, None, "GET", path).await;
        assert_eq!((code, &status["message"]), (401, &json!("Unauthorized")), "{path}: {status}");
    }
    closed.kubectl_ok(&["get", "namespaces"]);
    let token = create_token(&closed, &["default"]);
    let claims = jwt_part(&token, 1);
    assert_eq!(
        (&claims["iss"], &claims["aud"]),
        (&json!("https://sa.example.com"), &json!(["https://sa.example.com"]))
    );
    let rows = whoami(&closed, &token).expect("a token of the configured issuer is accepted");
    assert_eq!(rows[1], "Username system:serviceaccount:default:default");
    let (code, _, doc) = raw(&closed, Some(&token), "GET", "/.well-known/openid-configuration").await;
    assert_eq!(code, 200, "{doc}");
    assert_eq!(
        (&doc["issuer"], &doc["jwks_uri"]),
        (&json!("https://sa.example.com"), &json!(closed.url("/openid/v1/jwks")))
    );
}

#[actix_web::test]
async fn issuer_discovery_publishes_the_key_that_verifies_service_account_tokens() {
    let s = TestServer::start();
    let token = create_token(&s, &["default"]);
    let (code, ctype, doc) = raw(&s, Some(&token), "GET", "/.well-known/openid-configuration").await;
    assert_eq!(code, 200, "{doc}");
    assert_eq!(ctype.as_deref(), Some("application/json"));
    assert_eq!(
        doc,
        json!({"issuer": ISSUER, "jwks_uri": s.url("/openid/v1/jwks"), "response_types_supported": ["id_token"],
            "subject_types_supported": ["public"], "id_token_signing_alg_values_supported": ["ES256"]})
    );

    let (code, ctype, jwks) = raw(&s, Some(&token), "GET", "/openid/v1/jwks").await;
    assert_eq!(code, 200, "{jwks}");
    assert_eq!(ctype.as_deref(), Some("application/jwk-set+json"));
    let kid = jwt_part(&token, 0)["kid"].clone();
    let keys = jwks["keys"].as_array().unwrap_or_else(|| panic!("{jwks}"));
    let key = keys.iter().find(|k| k["kid"] == kid).unwrap_or_else(|| panic!("no key {kid} in {jwks}"));
    assert_eq!(
        (&key["kty"], &key["crv"], &key["alg"], &key["use"]),
        (&json!("EC"), &json!("P-256"), &json!("ES256"), &json!("sig"))
    );
    assert!(key.get("d").is_none(), "the private part is not published: {key}");
    // The published key verifies the token.
    let decoding =
        jsonwebtoken::DecodingKey::from_ec_components(key["x"].as_str().unwrap(), key["y"].as_str().unwrap())
            .expect("an EC public key");
    let mut validation = jsonwebtoken::Validation::new(jsonwebtoken::Algorithm::ES256);
    validation.set_audience(&[ISSUER]);
    validation.set_issuer(&[ISSUER]);
    let verified = jsonwebtoken::decode::<Value>(&token, &decoding, &validation).expect("the token verifies");
    assert_eq!(verified.claims["sub"], "system:serviceaccount:default:default");

    // kubectl, as the ServiceAccount, reads them too; anonymous users may not.
    let (ok, stdout, err) = out(&s.kubectl_with_token(&token, &["get", "--raw", "/.well-known/openid-configuration"]));
    assert!(ok, "{err}");
    assert_eq!(serde_json::from_str::<Value>(&stdout).unwrap()["issuer"], ISSUER);
    for path in ["/.well-known/openid-configuration", "/openid/v1/jwks"] {
        let (code, _, status) = raw(&s, None, "GET", path).await;
        assert_eq!(code, 403, "{path}: {status}");
        assert_eq!(
            status["message"],
            format!("forbidden: User \"system:anonymous\" cannot get path \"{path}\""),
            "{status}"
        );
    }
}

const PYTHON: &str = r#"
import json, sys
from kubernetes import client, config
from kubernetes.client.rest import ApiException

config.load_kube_config(config_file=sys.argv[1])
v1 = client.CoreV1Api()
if sys.argv[2] == "viewer":
    me = client.AuthenticationV1Api().create_self_subject_review(client.V1SelfSubjectReview())
    assert me.status.user_info.username == "system:serviceaccount:default:reader", me.status.user_info
    pods, status, _ = v1.list_namespaced_pod_with_http_info("default")
    assert status == 200, status
    assert [p.metadata.name for p in pods.items] == ["web"], [p.metadata.name for p in pods.items]
    try:
        v1.create_namespaced_config_map("default", client.V1ConfigMap(metadata=client.V1ObjectMeta(name="nope")))
        raise AssertionError("the viewer created a configmap")
    except ApiException as e:
        assert e.status == 403, (e.status, e.body)
        assert json.loads(e.body)["message"] == sys.argv[3], e.body
else:
    try:
        v1.list_namespaced_pod("default")
        raise AssertionError("a bad token listed pods")
    except ApiException as e:
        assert e.status == 401, (e.status, e.body)
        assert json.loads(e.body)["message"] == "Unauthorized", e.body
print("ok")
"#;

#[actix_web::test]
async fn the_python_client_with_a_service_account_token_gets_200_403_and_401() {
    let s = TestServer::start();
    s.kubectl_ok(&["run", "web", "--image=nginx"]);
    s.kubectl_ok(&["create", "serviceaccount", "reader"]);
    s.kubectl_ok(&["create", "rolebinding", "reader-view", "--clusterrole=view", "--serviceaccount=default:reader"]);
    let token = create_token(&s, &["reader"]);
    assert!(
        within(Duration::from_secs(1), || s.kubectl_with_token(&token, &["get", "pods"]).status.success()).is_some()
    );

    let denied = "configmaps is forbidden: User \"system:serviceaccount:default:reader\" cannot create resource \"configmaps\" in API group \"\" in the namespace \"default\"";
    let (ok, stdout, err) = out(&s.python_code(&s.token_kubeconfig(&token), PYTHON, &["viewer", denied]));
    assert!(ok && stdout.trim() == "ok", "{stdout}\n{err}\n{}", s.log_tail());
    let (ok, stdout, err) = out(&s.python_code(&s.token_kubeconfig("bad-token"), PYTHON, &["bad"]));
    assert!(ok && stdout.trim() == "ok", "{stdout}\n{err}\n{}", s.log_tail());
}
