//! Admission webhooks (`MutatingWebhookConfiguration`, `ValidatingWebhookConfiguration`)
//! against webhook servers the tests run ([`tests::webhook::WebhookServer`]: HTTPS with a CA
//! the configurations name as `caBundle`, recording every AdmissionReview it gets).

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tests::webhook::{Call, Reply, WebhookServer, allow, deny, patch};
use tests::{TestServer, command_outcome as out, free_port, host_ip, within};

/// A webhook named `name` called at `url` for CREATE and UPDATE of core `resources`, with the
/// caBundle of `server`; `extra` fields are merged in (`null` removes one).
pub(crate) fn hook(name: &str, server: &WebhookServer, url: &str, resources: &[&str], extra: Value) -> Value {
    let mut hook = json!({
        "name": name,
        "clientConfig": {"url": url, "caBundle": server.ca_bundle},
        "rules": [{"operations": ["CREATE", "UPDATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": resources}],
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
    });
    for (k, v) in extra.as_object().unwrap() {
        if v.is_null() {
            hook.as_object_mut().unwrap().remove(k);
        } else {
            hook[k] = v.clone();
        }
    }
    hook
}

const GROUP_PATH: &str = "/apis/admissionregistration.k8s.io/v1";

/// `Mutating` or `Validating`.
fn resource_of(kind: &str) -> String {
    format!("{}webhookconfigurations", kind.to_lowercase())
}

/// Creates the `<kind>WebhookConfiguration` `name` with `webhooks` and waits until the watch
/// cache admission reads configurations from has it.
pub(crate) fn configure(s: &TestServer, kind: &str, name: &str, webhooks: Vec<Value>) {
    let config = json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": format!("{kind}WebhookConfiguration"),
        "metadata": {"name": name}, "webhooks": webhooks});
    let created = s.kubectl_stdin(&["create", "-f", "-"], &config.to_string());
    let (ok, stdout, stderr) = out(&created);
    assert!(ok, "creating {kind}WebhookConfiguration {name}: {stdout}{stderr}");
    wait_cached(s, kind, name, true);
}

/// Waits until the watch cache of `<kind>WebhookConfigurations` has (or no longer has) `name`.
pub(crate) fn wait_cached(s: &TestServer, kind: &str, name: &str, present: bool) {
    let path = format!("{GROUP_PATH}/{}?resourceVersion=0", resource_of(kind));
    let cached = within(Duration::from_secs(5), || {
        let list: Value = serde_json::from_str(&s.kubectl_ok(&["get", "--raw", &path])).unwrap();
        list["items"].as_array().unwrap().iter().any(|c| c["metadata"]["name"] == name) == present
    });
    assert!(cached.is_some(), "the cache shows {name} {}", if present { "present" } else { "gone" });
}

/// `method path` as the admin with an optional JSON body: the status, the JSON answer and the
/// `Warning` headers.
async fn call(s: &TestServer, method: &str, path: &str, body: Option<Value>) -> (u16, Value, Vec<String>) {
    let answer = s.admin_call(method, path, body.as_ref()).await;
    let warnings = answer.warnings();
    (answer.code, answer.body, warnings)
}

fn configmap(name: &str, labels: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "labels": labels}, "data": {"k": "v"}})
}

async fn create_configmap(s: &TestServer, ns: &str, name: &str, labels: Value) -> (u16, Value, Vec<String>) {
    call(s, "POST", &format!("/api/v1/namespaces/{ns}/configmaps"), Some(configmap(name, labels))).await
}

/// Whether ConfigMap `ns/name` is stored.
fn stored(s: &TestServer, ns: &str, name: &str) -> bool {
    s.kubectl(&["get", "configmap", name, "-n", ns]).status.success()
}

// ---------------------------------------------------------------------------------------------

#[actix_web::test]
async fn a_validating_webhook_denial_names_the_webhook_and_nothing_is_stored() {
    let hooks = WebhookServer::start(&["127.0.0.1"], |_, _| deny(403, "configmaps are frozen"));
    let s = TestServer::start();
    configure(
        &s,
        "Validating",
        "deny",
        vec![hook("deny.example.com", &hooks, &hooks.url("/deny"), &["configmaps"], json!({}))],
    );

    let (ok, _, stderr) = out(&s.kubectl(&["create", "configmap", "frozen", "--from-literal=a=b"]));
    assert!(!ok);
    assert_eq!(
        stderr.trim(),
        "error: failed to create configmap: admission webhook \"deny.example.com\" denied the request: configmaps are frozen"
    );
    assert!(!stored(&s, "default", "frozen"), "a denied object is not stored");
    let (code, status, _) = create_configmap(&s, "default", "frozen", json!({})).await;
    assert_eq!(code, 403, "{status}");
    assert_eq!(status["message"], "admission webhook \"deny.example.com\" denied the request: configmaps are frozen");
    assert_eq!(status["code"], 403);
    assert_eq!(hooks.names("/deny"), ["frozen", "frozen"], "called once per request");

    // The rules name configmaps only: a secret passes without a call.
    s.kubectl_ok(&["create", "secret", "generic", "unfrozen", "--from-literal=a=b"]);
    assert_eq!(hooks.calls("/deny").len(), 2);
}

#[actix_web::test]
async fn a_validating_webhook_can_refuse_a_delete_and_sees_the_object_being_deleted() {
    let hooks = WebhookServer::start(&["127.0.0.1"], |_, _| deny(403, "keep it"));
    let s = TestServer::start();
    let rules =
        json!([{"operations": ["DELETE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}]);
    configure(
        &s,
        "Validating",
        "keep",
        vec![hook("keep.example.com", &hooks, &hooks.url("/keep"), &["configmaps"], json!({"rules": rules}))],
    );
    s.kubectl_ok(&["create", "configmap", "kept", "--from-literal=a=b"]);
    assert!(hooks.calls("/keep").is_empty(), "the rule names DELETE only");

    let (ok, _, stderr) = out(&s.kubectl(&["delete", "configmap", "kept"]));
    assert!(!ok);
    assert_eq!(
        stderr.trim(),
        "Error from server: admission webhook \"keep.example.com\" denied the request: keep it",
        "the webhook's Status has no reason, so kubectl names none"
    );
    assert!(stored(&s, "default", "kept"), "a refused delete leaves the object");
    let calls = hooks.calls("/keep");
    assert_eq!(calls.len(), 1);
    let r = &calls[0].review["request"];
    assert_eq!((&r["operation"], &r["name"], &r["namespace"]), (&json!("DELETE"), &json!("kept"), &json!("default")));
    assert!(r["object"].is_null(), "no new object on DELETE: {}", r["object"]);
    assert_eq!(r["oldObject"]["data"], json!({"a": "b"}));
    assert_eq!(r["kind"], json!({"group": "", "version": "v1", "kind": "ConfigMap"}));
    assert_eq!(r["options"]["kind"], "DeleteOptions");
}

#[actix_web::test]
async fn a_mutating_webhook_patch_is_stored_and_a_patch_that_makes_the_object_invalid_fails_validation() {
    let hooks = WebhookServer::start(&["127.0.0.1"], |_, review| {
        let name = review["request"]["name"].as_str().unwrap_or("");
        let key = if name.starts_with("broken") { "bad key" } else { "patched-on" };
        let operation = review["request"]["operation"].as_str().unwrap_or("").to_lowercase();
        patch(json!([{"op": "add", "path": format!("/metadata/labels/{key}"), "value": operation}]))
    });
    let s = TestServer::start();
    configure(
        &s,
        "Mutating",
        "label",
        vec![hook("label.example.com", &hooks, &hooks.url("/label"), &["configmaps"], json!({}))],
    );

    let (code, created, _) = create_configmap(&s, "default", "fine", json!({"app": "web"})).await;
    assert_eq!(code, 201, "{created}");
    assert_eq!(created["metadata"]["labels"], json!({"app": "web", "patched-on": "create"}));
    let labels_of = |name: &str| -> Value {
        let got: Value = serde_json::from_str(&s.kubectl_ok(&["get", "configmap", name, "-o", "json"])).unwrap();
        got["metadata"]["labels"].clone()
    };
    assert_eq!(labels_of("fine"), json!({"app": "web", "patched-on": "create"}), "the stored object");
    // An update is patched too.
    s.kubectl_ok(&["label", "--overwrite", "configmap", "fine", "app=api"]);
    assert_eq!(labels_of("fine"), json!({"app": "api", "patched-on": "update"}));

    // The mutated object is what is validated.
    let (code, status, _) = create_configmap(&s, "default", "broken", json!({"app": "web"})).await;
    assert_eq!(code, 422, "{status}");
    assert_eq!(status["reason"], "Invalid");
    assert_eq!(
        status["message"],
        "ConfigMap \"broken\" is invalid: metadata.labels: Invalid value: \"bad key\": name part must consist of \
         alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. \
         'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
    );
    assert!(!stored(&s, "default", "broken"));
    assert_eq!(hooks.names("/label"), ["fine", "fine", "broken"]);
}

#[actix_web::test]
async fn an_if_needed_webhook_is_called_again_after_a_later_webhook_changed_the_object() {
    let hooks = WebhookServer::start(&["127.0.0.1"], |path, review| match path {
        "/second" if review["request"]["object"]["metadata"]["labels"]["second"].is_null() => {
            patch(json!([{"op": "add", "path": "/metadata/labels/second", "value": "yes"}]))
        }
        _ => allow(),
    });
    let s = TestServer::start();
    // Configurations are called in name order: a-... first.
    configure(
        &s,
        "Mutating",
        "b-second",
        vec![hook("second.example.com", &hooks, &hooks.url("/second"), &["configmaps"], json!({}))],
    );
    configure(
        &s,
        "Mutating",
        "a-first",
        vec![hook(
            "first.example.com",
            &hooks,
            &hooks.url("/first"),
            &["configmaps"],
            json!({"reinvocationPolicy": "IfNeeded"}),
        )],
    );

    let (code, created, _) = create_configmap(&s, "default", "twice", json!({"app": "web"})).await;
    assert_eq!(code, 201, "{created}");
    assert_eq!(created["metadata"]["labels"], json!({"app": "web", "second": "yes"}));
    let first = hooks.calls("/first");
    assert_eq!(first.len(), 2, "first.example.com is reinvoked once: {first:?}");
    let labels = |c: &Call| c.review["request"]["object"]["metadata"]["labels"].clone();
    assert_eq!(labels(&first[0]), json!({"app": "web"}));
    assert_eq!(labels(&first[1]), json!({"app": "web", "second": "yes"}), "the second call sees the second's label");
    assert_eq!(hooks.calls("/second").len(), 1, "second.example.com (reinvocationPolicy Never) is called once");
    assert!(first[0].review["request"]["uid"] != first[1].review["request"]["uid"], "each call has its own uid");

    // Without a change by a later webhook there is no second call.
    let (code, _, _) = create_configmap(&s, "default", "once", json!({"second": "already"})).await;
    assert_eq!(code, 201);
    assert_eq!(hooks.names("/first"), ["twice", "twice", "once"]);
}

#[actix_web::test]
async fn a_webhook_slower_than_its_timeout_fails_the_request_under_fail_and_is_skipped_under_ignore() {
    let hooks = WebhookServer::start(&["127.0.0.1"], |_, _| Reply { delay: Duration::from_secs(3), ..allow() });
    let s = TestServer::start();
    let slow = |name: &str, path: &str, policy: &str| {
        hook(
            name,
            &hooks,
            &hooks.url(path),
            &["configmaps"],
            json!({"timeoutSeconds": 1, "failurePolicy": policy,
                "objectSelector": {"matchLabels": {"policy": policy}}}),
        )
    };
    configure(
        &s,
        "Validating",
        "slow",
        vec![slow("slow.example.com", "/slow", "Fail"), slow("slow-ignored.example.com", "/ignored", "Ignore")],
    );

    let started = Instant::now();
    let (code, status, _) = create_configmap(&s, "default", "late", json!({"policy": "Fail"})).await;
    let took = started.elapsed();
    assert_eq!(code, 500, "{status}");
    assert_eq!(status["reason"], "InternalError");
    assert_eq!(
        status["message"].as_str().unwrap(),
        format!(
            "Internal error occurred: failed calling webhook \"slow.example.com\": failed to call webhook: Post \
             \"{}?timeout=1s\": context deadline exceeded",
            hooks.url("/slow")
        )
    );
    assert!(took < Duration::from_millis(2500), "the call is cut at its timeoutSeconds: {took:?}");
    assert!(!stored(&s, "default", "late"));
    let calls = hooks.calls("/slow");
    assert_eq!((calls.len(), calls[0].query.as_str()), (1, "timeout=1s"), "kube's timeout parameter");

    let started = Instant::now();
    let (code, created, _) = create_configmap(&s, "default", "ignored", json!({"policy": "Ignore"})).await;
    let took = started.elapsed();
    assert_eq!(code, 201, "{created}");
    assert!(took < Duration::from_millis(2500), "the request goes on after the 1 s timeout: {took:?}");
    assert!(stored(&s, "default", "ignored"));
    assert_eq!(hooks.names("/ignored"), ["ignored"]);
}

#[actix_web::test]
async fn an_unreachable_webhook_fails_the_request_under_fail_and_is_skipped_under_ignore() {
    // A server for the caBundle only: nothing listens on the webhooks' port.
    let hooks = WebhookServer::start(&["127.0.0.1"], |_, _| allow());
    // Chosen once the server listens, so that its own ports are not among the candidates.
    let s = TestServer::start();
    let closed = free_port();
    let url = format!("https://127.0.0.1:{closed}/down");
    let down = |name: &str, policy: &str| {
        hook(
            name,
            &hooks,
            &url,
            &["configmaps"],
            json!({"failurePolicy": policy, "objectSelector": {"matchLabels": {"policy": policy}}}),
        )
    };
    configure(
        &s,
        "Validating",
        "down",
        vec![down("down.example.com", "Fail"), down("down-ignored.example.com", "Ignore")],
    );

    let (code, status, _) = create_configmap(&s, "default", "refused", json!({"policy": "Fail"})).await;
    assert_eq!(code, 500, "{status}");
    let message = status["message"].as_str().unwrap();
    let expected = format!(
        "Internal error occurred: failed calling webhook \"down.example.com\": failed to call webhook: Post \
         \"{url}?timeout=10s\": dial tcp 127.0.0.1:{closed}: connect: connection refused"
    );
    assert_eq!(message, expected);
    assert!(!stored(&s, "default", "refused"));

    let (code, created, _) = create_configmap(&s, "default", "let-through", json!({"policy": "Ignore"})).await;
    assert_eq!(code, 201, "{created}");
    assert!(stored(&s, "default", "let-through"));

    // A server whose certificate the caBundle did not sign is no better than none.
    let stranger = WebhookServer::start(&["127.0.0.1"], |_, _| allow());
    let mut untrusted = hook("untrusted.example.com", &hooks, &stranger.url("/x"), &["configmaps"], json!({}));
    untrusted["objectSelector"] = json!({"matchLabels": {"policy": "untrusted"}});
    configure(&s, "Validating", "untrusted", vec![untrusted]);
    let (code, status, _) = create_configmap(&s, "default", "distrusted", json!({"policy": "untrusted"})).await;
    assert_eq!(code, 500, "{status}");
    assert_eq!(
        status["message"].as_str().unwrap(),
        format!(
            "Internal error occurred: failed calling webhook \"untrusted.example.com\": failed to call webhook: Post \
             \"{}?timeout=10s\": tls: failed to verify certificate: x509: certificate signed by unknown authority",
            stranger.url("/x")
        )
    );
    assert!(stranger.calls("/x").is_empty());
}

#[actix_web::test]
async fn namespace_selectors_object_selectors_and_match_conditions_decide_which_webhooks_are_called() {
    let hooks = WebhookServer::start(&["127.0.0.1"], |_, _| allow());
    let s = TestServer::start();
    s.kubectl_ok(&["create", "namespace", "on"]);
    s.kubectl_ok(&["label", "namespace", "on", "hooks=on"]);
    s.kubectl_ok(&["create", "namespace", "off"]);
    configure(
        &s,
        "Validating",
        "selective",
        vec![
            hook(
                "ns.example.com",
                &hooks,
                &hooks.url("/ns"),
                &["configmaps"],
                json!({"namespaceSelector": {"matchLabels": {"hooks": "on"}}}),
            ),
            hook(
                "obj.example.com",
                &hooks,
                &hooks.url("/obj"),
                &["configmaps"],
                json!({"objectSelector": {"matchExpressions": [{"key": "hooked", "operator": "In", "values": ["yes"]}]}}),
            ),
            hook(
                "cond.example.com",
                &hooks,
                &hooks.url("/cond"),
                &["configmaps"],
                json!({"matchConditions": [{"name": "not-skipped",
                    "expression": "!object.metadata.name.startsWith('skip')"}]}),
            ),
        ],
    );
    for (ns, name, labels) in [
        ("on", "call-1", json!({"hooked": "yes"})),
        ("off", "call-2", json!({"hooked": "yes"})),
        ("on", "call-3", json!({})),
        ("on", "skip-4", json!({"hooked": "yes"})),
    ] {
        let (code, created, _) = create_configmap(&s, ns, name, labels).await;
        assert_eq!(code, 201, "{created}");
    }
    assert_eq!(hooks.names("/ns"), ["call-1", "call-3", "skip-4"], "not in a namespace without hooks=on");
    assert_eq!(hooks.names("/obj"), ["call-1", "call-2", "skip-4"], "not for an object without hooked=yes");
    assert_eq!(hooks.names("/cond"), ["call-1", "call-2", "call-3"], "not when the match condition is false");

    // An UPDATE matches the object selector when the old object matched it.
    s.kubectl_ok(&["label", "configmap", "call-1", "-n", "on", "hooked-"]);
    assert_eq!(hooks.names("/obj"), ["call-1", "call-2", "skip-4", "call-1"]);
}

#[actix_web::test]
async fn a_server_side_dry_run_reaches_side_effect_free_webhooks_marked_dry_run_and_stores_nothing() {
    let hooks = WebhookServer::start(&["127.0.0.1"], |_, _| {
        patch(json!([{"op": "add", "path": "/metadata/labels", "value": {"seen-by": "webhook"}}]))
    });
    let s = TestServer::start();
    configure(
        &s,
        "Mutating",
        "dry",
        vec![hook("dry.example.com", &hooks, &hooks.url("/dry"), &["configmaps"], json!({}))],
    );

    let shown =
        s.kubectl_ok(&["create", "configmap", "rehearsal", "--from-literal=a=b", "--dry-run=server", "-o", "json"]);
    let shown: Value = serde_json::from_str(&shown).unwrap();
    assert_eq!(shown["metadata"]["labels"], json!({"seen-by": "webhook"}), "the dry run shows the webhook's patch");
    let calls = hooks.calls("/dry");
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].review["request"]["dryRun"], true);
    assert!(!stored(&s, "default", "rehearsal"), "a dry run stores nothing");

    // v1 allows only None and NoneOnDryRun, so a webhook with side effects (which kube would
    // refuse to call in a dry run) cannot be configured at all.
    let with_effects = json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": "effects"},
        "webhooks": [hook("effects.example.com", &hooks, &hooks.url("/x"), &["configmaps"], json!({"sideEffects": "Some"}))]});
    let (code, status, _) =
        call(&s, "POST", &format!("{GROUP_PATH}/mutatingwebhookconfigurations"), Some(with_effects)).await;
    assert_eq!(code, 422, "{status}");
    assert_eq!(
        status["message"],
        "MutatingWebhookConfiguration.admissionregistration.k8s.io \"effects\" is invalid: webhooks[0].sideEffects: \
         Unsupported value: \"Some\": supported values: \"None\", \"NoneOnDryRun\""
    );
}

/// Service `webhooks/hooks` (port 443, named https) with Endpoints at `ip` and `port`, and a
/// validating webhook `svc.example.com` reached through it at `/via-service`.
fn configure_through_service(s: &TestServer, hooks: &WebhookServer, ip: &str) {
    s.kubectl_ok(&["create", "namespace", "webhooks"]);
    let service = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "hooks", "namespace": "webhooks"},
        "spec": {"ports": [{"name": "https", "port": 443, "targetPort": hooks.port}]}});
    let endpoints = json!({"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "hooks", "namespace": "webhooks"},
        "subsets": [{"addresses": [{"ip": ip}], "ports": [{"name": "https", "port": hooks.port}]}]});
    for object in [service, endpoints] {
        let (ok, stdout, stderr) = out(&s.kubectl_stdin(&["create", "-f", "-"], &object.to_string()));
        assert!(ok, "{stdout}{stderr}");
    }
    let mut through_service = hook("svc.example.com", hooks, "", &["configmaps"], json!({}));
    through_service["clientConfig"] = json!({"caBundle": hooks.ca_bundle,
        "service": {"namespace": "webhooks", "name": "hooks", "path": "/via-service", "port": 443}});
    configure(s, "Validating", "svc", vec![through_service]);
}

#[actix_web::test]
async fn a_webhook_behind_a_service_is_called_at_its_endpoint_with_a_certificate_for_the_service_name() {
    let ip = host_ip();
    let hooks = WebhookServer::start_on(&ip, &["hooks.webhooks.svc"], |_, _| deny(400, "seen through the service"));
    let s = TestServer::start();
    configure_through_service(&s, &hooks, &ip);

    let (code, status, _) = create_configmap(&s, "default", "routed", json!({})).await;
    assert_eq!(code, 400, "{status}");
    assert_eq!(status["message"], "admission webhook \"svc.example.com\" denied the request: seen through the service");
    assert_eq!(hooks.names("/via-service"), ["routed"]);
    assert_eq!(hooks.calls("/via-service")[0].query, "timeout=10s");
}

#[actix_web::test]
async fn a_webhook_behind_a_service_whose_certificate_is_for_another_name_is_not_trusted() {
    let ip = host_ip();
    let hooks = WebhookServer::start_on(&ip, &[ip.as_str(), "other.webhooks.svc"], |_, _| allow());
    let s = TestServer::start();
    configure_through_service(&s, &hooks, &ip);

    let (code, status, _) = create_configmap(&s, "default", "routed", json!({})).await;
    assert_eq!(code, 500, "{status}");
    let message = status["message"].as_str().unwrap();
    let quoted = "Internal error occurred: failed calling webhook \"svc.example.com\": failed to call webhook: Post \
                  \"https://hooks.webhooks.svc:443/via-service?timeout=10s\": ";
    assert!(message.starts_with(quoted), "errors quote the Service's URL, as kube's do: {message}");
    assert_eq!(
        &message[quoted.len()..],
        "tls: failed to verify certificate: x509: certificate is valid for other.webhooks.svc, not hooks.webhooks.svc",
        "a TLS failure for the Service's name, in Go's words"
    );
    assert!(hooks.calls("/via-service").is_empty(), "no review reaches a server that is not trusted");
    assert!(!stored(&s, "default", "routed"));
}

/// A key and a self-signed certificate for `subject_alt_name` (`DNS:a,IP:b`) made as many
/// webhook setups make them, by `openssl req -x509 -newkey rsa:2048 -nodes`: the certificate
/// and the key, PEM. Such a certificate says CA:TRUE, which the function checks, since that is
/// what the tests using it are about.
fn openssl_self_signed(subject_alt_name: &str) -> (String, String) {
    let dir = tempfile::tempdir().unwrap();
    let (cert, key) = (dir.path().join("tls.crt"), dir.path().join("tls.key"));
    let made = std::process::Command::new("openssl")
        .args(["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=webhook"])
        .args(["-addext", &format!("subjectAltName={subject_alt_name}")])
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .output()
        .expect("openssl runs (Debian's openssl; `deploy/install-tools.sh` installs it)");
    assert!(made.status.success(), "openssl req -x509: {}", String::from_utf8_lossy(&made.stderr));
    let (cert, key) = (std::fs::read_to_string(cert).unwrap(), std::fs::read_to_string(key).unwrap());
    let (_, pem) = x509_parser::pem::parse_x509_pem(cert.as_bytes()).expect("a PEM certificate");
    let parsed = pem.parse_x509().expect("an X.509 certificate");
    let constraints = parsed.basic_constraints().expect("well-formed basic constraints");
    assert!(constraints.is_some_and(|c| c.value.ca), "openssl req -x509 makes a CA:TRUE certificate");
    (cert, key)
}

#[actix_web::test]
async fn a_webhook_serving_the_self_signed_ca_certificate_openssl_makes_is_called_with_it_as_ca_bundle() {
    let (cert, key) = openssl_self_signed("DNS:localhost,IP:127.0.0.1");
    let hooks = WebhookServer::start_with_certificate("127.0.0.1", &cert, &key, |_, review| {
        match review["request"]["name"].as_str().unwrap_or("") {
            name if name.starts_with("frozen") => deny(403, "frozen by a self-signed webhook"),
            _ => allow(),
        }
    });
    let s = TestServer::start();
    configure(
        &s,
        "Validating",
        "self-signed",
        vec![hook("self-signed.example.com", &hooks, &hooks.url("/check"), &["configmaps"], json!({}))],
    );

    let (code, created, _) = create_configmap(&s, "default", "thawed", json!({})).await;
    assert_eq!(code, 201, "{created}");
    assert!(stored(&s, "default", "thawed"));
    let (code, status, _) = create_configmap(&s, "default", "frozen", json!({})).await;
    assert_eq!(code, 403, "{status}");
    assert_eq!(
        status["message"],
        "admission webhook \"self-signed.example.com\" denied the request: frozen by a self-signed webhook"
    );
    assert!(!stored(&s, "default", "frozen"));
    assert_eq!(hooks.names("/check"), ["thawed", "frozen"], "both reviews reached the webhook");
}

#[actix_web::test]
async fn a_self_signed_ca_certificate_behind_a_service_is_checked_for_the_service_name() {
    let ip = host_ip();
    let (cert, key) = openssl_self_signed("DNS:hooks.webhooks.svc");
    let hooks = WebhookServer::start_with_certificate(&ip, &cert, &key, |_, _| deny(400, "seen through the service"));
    let s = TestServer::start();
    configure_through_service(&s, &hooks, &ip);

    let (code, status, _) = create_configmap(&s, "default", "routed", json!({})).await;
    assert_eq!(code, 400, "{status}");
    assert_eq!(status["message"], "admission webhook \"svc.example.com\" denied the request: seen through the service");
    assert_eq!(hooks.names("/via-service"), ["routed"]);
}

#[actix_web::test]
async fn a_self_signed_ca_certificate_for_another_name_is_refused_in_gos_words() {
    let (cert, key) = openssl_self_signed("DNS:elsewhere.example.com");
    let hooks = WebhookServer::start_with_certificate("127.0.0.1", &cert, &key, |_, _| allow());
    let s = TestServer::start();
    configure(
        &s,
        "Validating",
        "misnamed",
        vec![hook("misnamed.example.com", &hooks, &hooks.url("/misnamed"), &["configmaps"], json!({}))],
    );

    let (code, status, _) = create_configmap(&s, "default", "refused", json!({})).await;
    assert_eq!(code, 500, "{status}");
    assert_eq!(
        status["message"].as_str().unwrap(),
        format!(
            "Internal error occurred: failed calling webhook \"misnamed.example.com\": failed to call webhook: Post \
             \"{}?timeout=10s\": tls: failed to verify certificate: x509: cannot validate certificate for 127.0.0.1 \
             because it doesn't contain any IP SANs",
            hooks.url("/misnamed")
        )
    );
    assert!(hooks.calls("/misnamed").is_empty(), "no review reaches a server that is not trusted");
    assert!(!stored(&s, "default", "refused"));
}

#[actix_web::test]
async fn the_admission_review_describes_the_request_and_its_warnings_reach_the_client() {
    let hooks = WebhookServer::start(&["127.0.0.1"], |_, review| {
        let op = review["request"]["operation"].as_str().unwrap_or("").to_lowercase();
        Reply { response: json!({"allowed": true, "warnings": [format!("the webhook saw a {op}")]}), ..allow() }
    });
    let s = TestServer::start();
    configure(
        &s,
        "Validating",
        "watch",
        vec![hook("watch.example.com", &hooks, &hooks.url("/watch"), &["configmaps"], json!({}))],
    );
    let whoami: Value = serde_json::from_str(&s.kubectl_ok(&["auth", "whoami", "-o", "json"])).unwrap();
    let me = &whoami["status"]["userInfo"];

    let (ok, _, stderr) = out(&s.kubectl(&["create", "configmap", "seen", "--from-literal=a=b"]));
    assert!(ok, "{stderr}");
    assert_eq!(stderr.trim(), "Warning: the webhook saw a create");
    let (ok, _, stderr) = out(&s.kubectl(&["label", "configmap", "seen", "touched=yes"]));
    assert!(ok, "{stderr}");
    assert_eq!(stderr.trim(), "Warning: the webhook saw a update");

    let calls = hooks.calls("/watch");
    assert_eq!(calls.len(), 2);
    let (create, update) = (&calls[0].review, &calls[1].review);
    assert_eq!((&create["apiVersion"], &create["kind"]), (&json!("admission.k8s.io/v1"), &json!("AdmissionReview")));
    let r = &create["request"];
    assert!(r["uid"].as_str().is_some_and(|u| u.len() == 36), "a uid: {r}");
    assert_eq!(r["kind"], json!({"group": "", "version": "v1", "kind": "ConfigMap"}));
    assert_eq!(r["resource"], json!({"group": "", "version": "v1", "resource": "configmaps"}));
    assert_eq!(r["requestKind"], r["kind"]);
    assert_eq!(r["requestResource"], r["resource"]);
    assert_eq!((&r["operation"], &r["namespace"], &r["name"]), (&json!("CREATE"), &json!("default"), &json!("seen")));
    assert_eq!(&r["userInfo"], me, "the user as the server authenticated them");
    assert_eq!(r["dryRun"], false);
    assert_eq!(r["object"]["data"], json!({"a": "b"}));
    assert_eq!(r["object"]["metadata"]["name"], "seen");
    let meta = &r["object"]["metadata"];
    assert!(
        meta["uid"].is_string() && meta["creationTimestamp"].is_string(),
        "validation sees the prepared object: {meta}"
    );
    assert!(r["oldObject"].is_null(), "no oldObject on CREATE: {}", r["oldObject"]);
    assert_eq!(r["options"]["kind"], "CreateOptions");
    let r = &update["request"];
    assert_eq!(r["operation"], "UPDATE");
    assert_eq!(r["object"]["metadata"]["labels"], json!({"touched": "yes"}));
    assert_eq!(r["oldObject"]["metadata"]["name"], "seen");
    assert!(r["oldObject"]["metadata"]["labels"].is_null(), "the old object has no labels: {}", r["oldObject"]);
    assert_eq!(r["options"]["kind"], "UpdateOptions", "kube shows a patch to admission as an update");

    // Over REST the warning is a Warning header in kube's format.
    let (code, _, warnings) = create_configmap(&s, "default", "seen-again", json!({})).await;
    assert_eq!(code, 201);
    assert_eq!(warnings, ["299 - \"the webhook saw a create\""]);
}

#[actix_web::test]
async fn deleting_a_configuration_stops_its_webhook_within_a_second() {
    let hooks = WebhookServer::start(&["127.0.0.1"], |_, _| deny(400, "not yet"));
    let s = TestServer::start();
    configure(
        &s,
        "Validating",
        "deny",
        vec![hook("deny.example.com", &hooks, &hooks.url("/deny"), &["configmaps"], json!({}))],
    );
    let (code, _, _) = create_configmap(&s, "default", "later", json!({})).await;
    assert_eq!(code, 400);

    s.kubectl_ok(&["delete", "validatingwebhookconfiguration", "deny"]);
    let deleted = Instant::now();
    let created = within(Duration::from_secs(1), || {
        s.kubectl(&["create", "configmap", "later", "--from-literal=a=b"]).status.success()
    });
    assert!(created.is_some(), "the create still fails a second after the configuration was deleted");
    assert!(deleted.elapsed() < Duration::from_millis(1500));
    assert!(stored(&s, "default", "later"));
}

#[actix_web::test]
async fn an_equivalent_version_is_sent_converted_and_its_patch_comes_back_in_the_requests_version() {
    let hooks = WebhookServer::start(&["127.0.0.1"], |path, _| match path {
        // A path only v2 has.
        "/v2-patch" => patch(json!([{"op": "replace", "path": "/spec/metrics/0/resource/target/averageUtilization",
            "value": 55}])),
        "/v2-exact" => deny(403, "v2 only"),
        _ => allow(),
    });
    let s = TestServer::start();
    let rules = |version: &str| {
        json!([{"operations": ["CREATE"], "apiGroups": ["autoscaling"], "apiVersions": [version],
            "resources": ["horizontalpodautoscalers"]}])
    };
    let on = |name: &str, path: &str, version: &str, extra: Value| {
        let mut h = hook(name, &hooks, &hooks.url(path), &[], extra);
        h["rules"] = rules(version);
        h
    };
    configure(&s, "Mutating", "v2-patch", vec![on("v2-patch.example.com", "/v2-patch", "v2", json!({}))]);
    configure(
        &s,
        "Validating",
        "views",
        vec![
            on("v2-exact.example.com", "/v2-exact", "v2", json!({"matchPolicy": "Exact"})),
            on("v1-view.example.com", "/v1-view", "v1", json!({})),
        ],
    );
    let v1 = json!({"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "web"},
        "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}, "maxReplicas": 5,
            "targetCPUUtilizationPercentage": 70}});
    let (code, created, _) =
        call(&s, "POST", "/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers", Some(v1)).await;
    assert_eq!(code, 201, "{created}");
    assert_eq!(created["spec"]["targetCPUUtilizationPercentage"], 55, "the v2 patch, read back in v1");

    let sent = hooks.calls("/v2-patch");
    assert_eq!(sent.len(), 1);
    let r = &sent[0].review["request"];
    assert_eq!(r["kind"], json!({"group": "autoscaling", "version": "v2", "kind": "HorizontalPodAutoscaler"}));
    assert_eq!(r["resource"], json!({"group": "autoscaling", "version": "v2", "resource": "horizontalpodautoscalers"}));
    assert_eq!(r["requestKind"], json!({"group": "autoscaling", "version": "v1", "kind": "HorizontalPodAutoscaler"}));
    assert_eq!(r["requestResource"]["version"], "v1");
    assert_eq!(r["object"]["apiVersion"], "autoscaling/v2");
    assert_eq!(r["object"]["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"], 70);

    assert!(hooks.calls("/v2-exact").is_empty(), "matchPolicy Exact: a v1 request is not a v2 one");
    let seen = hooks.calls("/v1-view");
    assert_eq!(seen.len(), 1);
    let object = &seen[0].review["request"]["object"];
    assert_eq!(object["apiVersion"], "autoscaling/v1", "a v1 rule sees the request's own version, not the stored one");
    assert_eq!(object["spec"]["targetCPUUtilizationPercentage"], 55, "after the mutation");
    assert_eq!(seen[0].review["request"]["kind"]["version"], "v1");

    // A v2 request is what the Exact webhook is for.
    let mut v2: Value =
        serde_json::from_str(&s.kubectl_ok(&["get", "horizontalpodautoscalers.v2.autoscaling", "web", "-o", "json"]))
            .unwrap();
    v2["metadata"] = json!({"name": "api"});
    let (code, status, _) =
        call(&s, "POST", "/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers", Some(v2)).await;
    assert_eq!(code, 403, "{status}");
    assert_eq!(status["message"], "admission webhook \"v2-exact.example.com\" denied the request: v2 only");
}

#[actix_web::test]
async fn a_scale_write_is_reviewed_as_a_scale_of_the_scale_subresource() {
    let hooks = WebhookServer::start(&["127.0.0.1"], |path, review| match path {
        "/scale" if review["request"]["object"]["spec"]["replicas"].as_i64() > Some(3) => {
            deny(403, "at most 3 replicas")
        }
        _ => allow(),
    });
    let s = TestServer::start();
    let on = |name: &str, path: &str, resources: &[&str]| {
        let mut h = hook(name, &hooks, &hooks.url(path), &[], json!({}));
        h["rules"] =
            json!([{"operations": ["UPDATE"], "apiGroups": ["apps"], "apiVersions": ["v1"], "resources": resources}]);
        h
    };
    configure(
        &s,
        "Validating",
        "scale",
        vec![
            on("scale.example.com", "/scale", &["deployments/scale"]),
            on("whole.example.com", "/whole", &["deployments"]),
        ],
    );
    s.kubectl_ok(&["create", "deployment", "web", "--image=nginx", "--replicas=1"]);
    s.kubectl_ok(&["scale", "deployment", "web", "--replicas=3"]);
    let (ok, _, stderr) = out(&s.kubectl(&["scale", "deployment", "web", "--replicas=5"]));
    assert!(!ok);
    assert!(
        stderr.contains("admission webhook \"scale.example.com\" denied the request: at most 3 replicas"),
        "{stderr}"
    );
    let replicas = s.kubectl_ok(&["get", "deployment", "web", "-o", "jsonpath={.spec.replicas}"]);
    assert_eq!(replicas.trim(), "3", "the refused scale changed nothing");

    let calls = hooks.calls("/scale");
    assert_eq!(calls.len(), 2, "one review per scale");
    let r = &calls[0].review["request"];
    assert_eq!(r["kind"], json!({"group": "autoscaling", "version": "v1", "kind": "Scale"}));
    assert_eq!(r["requestKind"], r["kind"]);
    assert_eq!(r["resource"], json!({"group": "apps", "version": "v1", "resource": "deployments"}));
    assert_eq!(r["subResource"], "scale");
    assert_eq!((&r["object"]["kind"], &r["object"]["spec"]["replicas"]), (&json!("Scale"), &json!(3)));
    assert_eq!(r["oldObject"]["spec"]["replicas"], 1);
    assert!(hooks.calls("/whole").is_empty(), "a rule for deployments does not see their /scale");
}
