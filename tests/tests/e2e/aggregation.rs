//! API aggregation against an extension API server the test runs
//! ([`tests::extension::ExtensionServer`]: HTTPS behind a Service, echoing the identity it
//! was given): the APIService becomes available, requests reach the extension server with
//! the caller's identity, and while it is down its group answers 503 and shows as stale
//! while every other group keeps working and discovery stays fast.

use std::time::{Duration, Instant};

use futures_util::StreamExt;
use serde_json::{Value, json};
use tests::extension::ExtensionServer;
use tests::pki::TestCa;
use tests::{Caller, TestServer, command_outcome as out, host_ip, poll_until, within};

const GROUP: &str = "wardle.example.com";
const VERSION: &str = "v1alpha1";
const NAME: &str = "v1alpha1.wardle.example.com";
const FLUNDERS: &str = "/apis/wardle.example.com/v1alpha1/namespaces/default/flunders";
const AGGREGATED: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

fn create(s: &TestServer, object: &Value) {
    let (ok, stdout, stderr) = out(&s.kubectl_stdin(&["create", "-f", "-"], &object.to_string()));
    assert!(ok, "creating {object}: {stdout}{stderr}");
}

/// Service `wardle/api` (port 443, named https) with Endpoints at the extension server.
fn expose(s: &TestServer, ext: &ExtensionServer) {
    s.kubectl_ok(&["create", "namespace", "wardle"]);
    let port = ext.addr.port();
    create(
        s,
        &json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "api", "namespace": "wardle"},
        "spec": {"ports": [{"name": "https", "port": 443, "targetPort": port}]}}),
    );
    create(
        s,
        &json!({"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "api", "namespace": "wardle"},
        "subsets": [{"addresses": [{"ip": ext.addr.ip().to_string()}], "ports": [{"name": "https", "port": port}]}]}),
    );
}

/// The `Available` condition of APIService `name`.
fn available(s: &TestServer, name: &str) -> Value {
    let obj: Value = serde_json::from_str(&s.kubectl_ok(&["get", "apiservice", name, "-o", "json"])).unwrap();
    let conditions = obj.pointer("/status/conditions").and_then(Value::as_array).cloned().unwrap_or_default();
    conditions.into_iter().find(|c| c["type"] == "Available").unwrap_or(Value::Null)
}

/// Waits until APIService `name`'s `Available` condition has `status` (and `reason`).
fn wait_available(s: &TestServer, name: &str, status: &str, reason: &str, limit: Duration) -> Value {
    poll_until(limit, || {
        let c = available(s, name);
        (c["status"] == status && c["reason"] == reason).then_some(c)
    })
    .unwrap_or_else(|| panic!("{name} never became {status} ({reason}): {}\n{}", available(s, name), s.log_tail()))
}

/// The `kubectl get apiservices` row of `name`, whitespace collapsed.
fn table_row(s: &TestServer, name: &str) -> String {
    let table = s.kubectl_ok(&["get", "apiservices"]);
    let row = table.lines().find(|l| l.starts_with(&format!("{name} "))).unwrap_or_else(|| panic!("{table}"));
    row.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Polls `check` every 50 ms until it gives `Some`, for at most `limit`, without blocking the
/// test's runtime.
async fn eventually<T, F: std::future::Future<Output = Option<T>>>(
    limit: Duration,
    mut check: impl FnMut() -> F,
) -> Option<T> {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(v) = check().await {
            return Some(v);
        }
        if Instant::now() >= deadline {
            return None;
        }
        actix_web::rt::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The aggregated discovery entry of the wardle group version.
async fn aggregated_entry(s: &TestServer) -> Value {
    let answer = s.request(Caller::Admin, "GET", "/apis").header("Accept", AGGREGATED).send().await;
    let items = answer.body["items"].as_array().cloned().unwrap_or_default();
    let group = items.into_iter().find(|i| i["metadata"]["name"] == GROUP).unwrap_or(Value::Null);
    group["versions"][0].clone()
}

#[actix_web::test]
async fn an_extension_server_answers_through_the_proxy_and_its_outage_stays_in_its_group() {
    let dir = tempfile::tempdir().unwrap();
    let front_proxy = TestCa::new("front-proxy");
    let (cert, key) = front_proxy.client_cert("front-proxy-client");
    let path = |name: &str, text: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p.to_str().unwrap().to_string()
    };
    let (cert, key, ca) =
        (path("proxy.crt", &cert), path("proxy.key", &key), path("front-proxy-ca.crt", &front_proxy.pem()));
    let tokens = path("tokens.csv", "bob-token,bob,1002,\"devs\"\n");
    let s = TestServer::start_with(&[
        "--proxy-client-cert-file",
        &cert,
        "--proxy-client-key-file",
        &key,
        "--requestheader-client-ca-file",
        &ca,
        "--requestheader-allowed-names=front-proxy-client",
        "--requestheader-username-headers=X-Remote-User",
        "--requestheader-group-headers=X-Remote-Group",
        "--requestheader-extra-headers-prefix=X-Remote-Extra-",
        "--token-auth-file",
        &tokens,
    ]);
    let ip = host_ip();
    let mut ext = ExtensionServer::start(&ip, &["api.wardle.svc"], GROUP, VERSION, Some(&front_proxy.pem()));
    expose(&s, &ext);
    create(&s, &ext.api_service("wardle", "api"));

    // Available once probed: the probe came as the aggregator, with the proxy certificate.
    let c = wait_available(&s, NAME, "True", "Passed", Duration::from_secs(10));
    assert_eq!(c["message"], "all checks passed");
    let probe = ext.seen().into_iter().find(|r| r.path == "/apis/wardle.example.com/v1alpha1").expect("probed");
    assert_eq!(
        (probe.user.as_str(), probe.groups.as_slice()),
        ("system:kube-aggregator", &["system:masters".to_string()][..])
    );
    assert_eq!(probe.client_cn.as_deref(), Some("front-proxy-client"));
    assert_eq!(table_row(&s, NAME).rsplit_once(' ').unwrap().0, format!("{NAME} wardle/api True"));
    let header =
        s.kubectl_ok(&["get", "apiservices"]).lines().next().unwrap().split_whitespace().collect::<Vec<_>>().join(" ");
    assert_eq!(header, "NAME SERVICE AVAILABLE AGE");

    // Discovery: listed in /apis (legacy and aggregated) and in kubectl api-resources.
    let groups = s.admin_call("GET", "/apis", None).await;
    assert!(groups.body["groups"].as_array().unwrap().iter().any(|g| g["name"] == GROUP), "{}", groups.body);
    let srv = &s;
    let fresh = eventually(Duration::from_secs(5), move || async move {
        let entry = aggregated_entry(srv).await;
        (entry["freshness"] == "Current").then_some(entry)
    })
    .await;
    let fresh = fresh.expect("the extension server's discovery fetched");
    assert_eq!(fresh["resources"][0]["resource"], "flunders");
    let resources = s.kubectl_ok(&["api-resources", "--api-group", GROUP, "--no-headers"]);
    assert_eq!(
        resources.split_whitespace().collect::<Vec<_>>(),
        ["flunders", "fl", "wardle.example.com/v1alpha1", "true", "Flunder"]
    );

    // kubectl reaches the resource through the proxy, as the admin.
    let got = s.kubectl_ok(&["get", "flunders", "-n", "default"]);
    let rows: Vec<Vec<&str>> = got.lines().map(|l| l.split_whitespace().collect()).collect();
    assert_eq!((rows.len(), &rows[0][..], rows[1][0]), (2, &["NAME", "AGE"][..], "flunder-1"), "{got}");
    let listed = ext.seen().into_iter().rev().find(|r| r.path == FLUNDERS).expect("the list passed on");
    assert_eq!(listed.user, "kubernetes-admin");
    assert!(listed.groups.contains(&"system:masters".to_string()), "{:?}", listed.groups);

    // The caller's identity, not its credentials nor headers it forged; authorized first.
    let as_bob =
        move |path: &str| srv.request(Caller::Bearer("bob-token"), "GET", path).header("X-Remote-User", "mallory");
    let refused = as_bob(FLUNDERS).send().await;
    assert_eq!(refused.code, 403, "{}", refused.body);
    assert_eq!(
        refused.body["message"],
        "flunders.wardle.example.com is forbidden: User \"bob\" cannot list resource \"flunders\" in API group \"wardle.example.com\" in the namespace \"default\""
    );
    s.kubectl_ok(&[
        "create",
        "clusterrole",
        "flunder-reader",
        "--verb=get,list,watch",
        "--resource=flunders.wardle.example.com",
    ]);
    s.kubectl_ok(&["create", "clusterrolebinding", "bob-reads-flunders", "--clusterrole=flunder-reader", "--user=bob"]);
    let listed = eventually(Duration::from_secs(5), move || async move {
        let answer = as_bob(&format!("{FLUNDERS}?limit=5&labelSelector=a%3Db")).send().await;
        (answer.code == 200).then_some(answer)
    })
    .await;
    let listed = listed.expect("bob may list flunders once bound");
    let seen = &listed.body["seen"];
    assert_eq!(seen["user"], "bob");
    assert_eq!(seen["groups"], json!(["devs", "system:authenticated"]));
    assert_eq!(seen["authorization"], Value::Null, "the caller's credentials stay behind");
    assert_eq!(seen["query"], "labelSelector=a%3Db&limit=5", "the query re-encoded, sorted");
    assert_eq!(seen["clientCN"], "front-proxy-client");
    assert_eq!(listed.header("audit-id"), seen["audit-id"].as_str(), "one audit id end to end");

    // Impersonated extras travel escaped and arrive as they were.
    let impersonated = s
        .request(Caller::Admin, "GET", FLUNDERS)
        .header("Impersonate-User", "alice")
        .header("Impersonate-Group", "system:masters")
        .header("Impersonate-Extra-Scopes", "view")
        .header("Impersonate-Extra-authentication.kubernetes.io%2fpod-name", "p1")
        .send()
        .await;
    assert_eq!(impersonated.code, 200, "{}", impersonated.body);
    let seen = &impersonated.body["seen"];
    assert_eq!((&seen["user"], &seen["groups"]), (&json!("alice"), &json!(["system:masters", "system:authenticated"])));
    assert_eq!(seen["extra"], json!({"authentication.kubernetes.io/pod-name": ["p1"], "scopes": ["view"]}));
    assert_eq!(seen["impersonate"], json!([]), "impersonation headers stay behind");

    // A watch streams: its first event arrives while the backend still holds the second.
    let started = Instant::now();
    let mut watch = s.client(true).get(s.url(&format!("{FLUNDERS}?watch=true"))).send().await.unwrap();
    assert_eq!(watch.status().as_u16(), 200);
    let first = tokio::time::timeout(Duration::from_secs(1), watch.next()).await.expect("an event within 1 s");
    let first = String::from_utf8_lossy(&first.unwrap().unwrap()).into_owned();
    assert!(first.contains("\"first\"") && !first.contains("\"second\""), "{first}");
    assert!(started.elapsed() < Duration::from_millis(1500), "flushed at once, not with the next event");
    drop(watch);

    let redirected = s.admin_call("GET", "/apis/wardle.example.com/v1alpha1/redirect", None).await;
    assert_eq!(redirected.code, 502, "{}", redirected.body);
    assert_eq!(redirected.body["message"], "the backend attempted to redirect this request, which is not permitted");

    // The extension server goes away.
    ext.stop();
    let failed = s.admin_call("GET", FLUNDERS, None).await;
    assert_eq!((failed.code, failed.body["reason"].as_str()), (503, Some("ServiceUnavailable")), "{}", failed.body);
    let message = failed.body["message"].as_str().unwrap();
    assert!(message.starts_with(&format!("APIService \"{NAME}\": error trying to reach service: ")), "{message}");
    let port = ext.addr.port();
    // (A first probe may find a connection the extension server closed; the next dials.) Its
    // retries come within seconds; the bound is kube's 30 s resync, for a busy machine.
    let down = poll_until(Duration::from_secs(30), || {
        let c = available(&s, NAME);
        (c["reason"] == "FailedDiscoveryCheck" && c["message"].as_str().unwrap_or("").ends_with("connection refused"))
            .then_some(c)
    })
    .unwrap_or_else(|| panic!("not marked unavailable: {}", available(&s, NAME)));
    assert_eq!(down["status"], "False");
    let url = format!("https://{ip}:{port}/apis/wardle.example.com/v1alpha1");
    assert_eq!(
        down["message"],
        format!(
            "failing or missing response from {url}: Get \"{url}\": dial tcp {ip}:{port}: connect: connection refused"
        )
    );
    assert_eq!(
        table_row(&s, NAME).rsplit_once(' ').unwrap().0,
        format!("{NAME} wardle/api False (FailedDiscoveryCheck)")
    );

    // Its group answers 503 naming the APIService, documents and resources alike.
    for path in [FLUNDERS, "/apis/wardle.example.com/v1alpha1"] {
        let answer = s.admin_call("GET", path, None).await;
        assert_eq!(answer.code, 503, "{path}: {}", answer.body);
        assert_eq!(
            answer.body["message"],
            format!(
                "service unavailable: APIService \"{NAME}\" is not available (FailedDiscoveryCheck): {}",
                down["message"].as_str().unwrap()
            )
        );
        assert_eq!(
            answer.body["details"],
            json!({"name": NAME, "group": "apiregistration.k8s.io", "kind": "apiservices"})
        );
    }

    // Discovery answers at once from memory; the group is stale, the others are whole.
    for accept in [AGGREGATED, "application/json"] {
        let started = Instant::now();
        let answer = s.request(Caller::Admin, "GET", "/apis").header("Accept", accept).send().await;
        let took = started.elapsed();
        assert_eq!(answer.code, 200);
        assert!(took < Duration::from_secs(1), "/apis ({accept}) took {took:?}");
        eprintln!("/apis ({accept}) with the extension server down: {took:?}");
    }
    assert_eq!(aggregated_entry(&s).await["freshness"], "Stale");
    // kubectl 1.30 drops a stale group version from what it lists without an error: its
    // disk-cached discovery client does not pass aggregated discovery's failed group versions
    // on (client-go's `StaleGroupVersionError` reaches only clients using the aggregated
    // interface directly), so it lists every other group and succeeds, as against kube.
    let api_resources = s.kubectl(&["api-resources"]);
    let (ok, stdout, stderr) = out(&api_resources);
    assert!(ok, "kubectl api-resources works with one group down: {stderr}");
    for listed in ["pods", "deployments", "apiservices", "flowschemas", "customresourcedefinitions"] {
        assert!(stdout.lines().any(|l| l.starts_with(&format!("{listed} "))), "{listed} listed: {stdout}");
    }
    assert!(!stdout.contains("flunders"), "the stale group is left out: {stdout}");
    s.kubectl_ok(&["get", "pods", "-A"]);
    s.kubectl_ok(&["get", "deployments", "-n", "default"]);
    s.kubectl_ok(&["create", "configmap", "still-writable", "--from-literal=a=b"]);
    let metrics = s.admin_call("GET", "/metrics", None).await.text();
    assert!(metrics.contains(&format!("aggregator_unavailable_apiservice{{name=\"{NAME}\"}} 1")), "{metrics}");
    assert!(metrics.lines().any(|l| l.starts_with("aggregator_unavailable_apiservice_total")
        && l.contains(&format!("name=\"{NAME}\""))
        && l.contains("reason=\"FailedDiscoveryCheck\"")
        && l.ends_with(" 1")));

    // Back: seen within seconds, discovery current again, requests passed on.
    ext.resume();
    let back = Instant::now();
    wait_available(&s, NAME, "True", "Passed", Duration::from_secs(10));
    eprintln!("the restarted extension server was available again after {:?}", back.elapsed());
    let current = eventually(Duration::from_secs(5), move || async move {
        (aggregated_entry(srv).await["freshness"] == "Current").then_some(())
    });
    assert!(current.await.is_some(), "discovery current again");
    assert_eq!(s.admin_call("GET", FLUNDERS, None).await.code, 200);
    let (ok, _, stderr) = out(&s.kubectl(&["api-resources"]));
    assert!(ok, "{stderr}");

    // Deleted, the APIService takes its group out of discovery and its paths with it.
    s.kubectl_ok(&["delete", "apiservice", NAME]);
    let gone = eventually(Duration::from_secs(5), move || async move {
        let legacy = srv.admin_call("GET", "/apis", None).await;
        let listed = legacy.body["groups"].as_array().unwrap().iter().any(|g| g["name"] == GROUP);
        (!listed && aggregated_entry(srv).await.is_null()).then_some(())
    });
    assert!(gone.await.is_some(), "the group left /apis");
    assert_eq!(s.admin_call("GET", "/apis/wardle.example.com", None).await.code, 404);
    assert_eq!(s.admin_call("GET", FLUNDERS, None).await.code, 404);
    let (ok, stdout, stderr) = out(&s.kubectl(&["api-resources"]));
    assert!(ok && !stdout.contains("flunders") && stdout.contains("pods"), "{stdout}{stderr}");
}

#[actix_web::test]
async fn every_served_group_version_has_a_local_apiservice_kept_by_the_server() {
    let s = TestServer::start();
    let list: Value = serde_json::from_str(&s.kubectl_ok(&["get", "apiservices", "-o", "json"])).unwrap();
    let items = list["items"].as_array().unwrap();
    let names: Vec<&str> = items.iter().map(|i| i["metadata"]["name"].as_str().unwrap()).collect();
    for name in [
        "v1.",
        "v1.apps",
        "v2.autoscaling",
        "v1.autoscaling",
        "v1.apiextensions.k8s.io",
        "v1.flowcontrol.apiserver.k8s.io",
    ] {
        assert!(names.contains(&name), "{name} in {names:?}");
    }
    assert!(!names.iter().any(|n| n.ends_with("apiregistration.k8s.io")));
    let core = items.iter().find(|i| i["metadata"]["name"] == "v1.").unwrap();
    assert_eq!(core["metadata"]["labels"], json!({"kube-aggregator.kubernetes.io/automanaged": "onstart"}));
    assert_eq!(core["spec"], json!({"version": "v1", "groupPriorityMinimum": 18000, "versionPriority": 1}));
    assert_eq!(table_row(&s, "v1.apps").rsplit_once(' ').unwrap().0, "v1.apps Local True");

    // Deleted, a built-in one comes back (kube waits for a restart).
    let uid = |s: &TestServer| s.kubectl_ok(&["get", "apiservice", "v1.apps", "-o", "jsonpath={.metadata.uid}"]);
    let before = uid(&s);
    s.kubectl_ok(&["delete", "apiservice", "v1.apps"]);
    assert!(
        within(Duration::from_secs(5), || out(&s.kubectl(&["get", "apiservice", "v1.apps"])).0 && uid(&s) != before)
            .is_some()
    );

    // A CRD's group version has one while it is served.
    create(
        &s,
        &json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object"}}}]}}),
    );
    let custom = poll_until(Duration::from_secs(5), || {
        let o = s.kubectl(&["get", "apiservice", "v1.example.com", "-o", "json"]);
        o.status.success().then(|| serde_json::from_slice::<Value>(&o.stdout).unwrap())
    })
    .expect("the CRD's APIService");
    assert_eq!(custom["metadata"]["labels"]["kube-aggregator.kubernetes.io/automanaged"], "true");
    assert_eq!(
        (&custom["spec"]["groupPriorityMinimum"], &custom["spec"]["versionPriority"]),
        (&json!(1000), &json!(100))
    );
    s.kubectl_ok(&["delete", "crd", "widgets.example.com"]);
    assert!(within(Duration::from_secs(10), || !out(&s.kubectl(&["get", "apiservice", "v1.example.com"])).0).is_some());

    // kube's validation, word for word.
    let bad = json!({"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService", "metadata": {"name": "foo"},
        "spec": {"group": "example.com", "version": "v1", "groupPriorityMinimum": 0, "versionPriority": 1,
            "service": {"namespace": "ns", "name": "svc", "port": 443}}});
    let answer = s.admin_call("POST", "/apis/apiregistration.k8s.io/v1/apiservices", Some(&bad)).await;
    assert_eq!(answer.code, 422);
    assert_eq!(
        answer.body["message"],
        "APIService.apiregistration.k8s.io \"foo\" is invalid: [metadata.name: Invalid value: \"foo\": must be `spec.version+\".\"+spec.group`: \"v1.example.com\", spec.groupPriorityMinimum: Invalid value: 0: must be positive and less than 20000]"
    );

    // What extension servers read to authenticate us.
    let trust: Value = serde_json::from_str(&s.kubectl_ok(&[
        "get",
        "configmap",
        "-n",
        "kube-system",
        "extension-apiserver-authentication",
        "-o",
        "json",
    ]))
    .unwrap();
    assert!(trust["data"]["client-ca-file"].as_str().unwrap().starts_with("-----BEGIN CERTIFICATE-----"));
}

#[actix_web::test]
async fn a_remote_apiservice_says_why_its_backend_cannot_be_reached() {
    let s = TestServer::start();
    s.kubectl_ok(&["create", "namespace", "wardle"]);
    let ext_ca = TestCa::new("unreached");
    let service = json!({"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService", "metadata": {"name": NAME},
        "spec": {"group": GROUP, "version": VERSION, "caBundle": ext_ca.bundle(),
            "service": {"namespace": "wardle", "name": "api"}, "groupPriorityMinimum": 1000, "versionPriority": 15}});
    create(&s, &service);
    let c = wait_available(&s, NAME, "False", "ServiceNotFound", Duration::from_secs(10));
    assert_eq!(c["message"], "service/api in \"wardle\" is not present");
    let before = s.admin_call("GET", FLUNDERS, None).await;
    assert_eq!(before.code, 503, "{}", before.body);

    create(
        &s,
        &json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "api", "namespace": "wardle"},
        "spec": {"ports": [{"name": "https", "port": 8443}]}}),
    );
    let c = wait_available(&s, NAME, "False", "ServicePortError", Duration::from_secs(10));
    assert_eq!(c["message"], "service/api in \"wardle\" is not listening on port 443");

    s.kubectl_ok(&["delete", "service", "-n", "wardle", "api"]);
    create(
        &s,
        &json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "api", "namespace": "wardle"},
        "spec": {"ports": [{"name": "https", "port": 443, "targetPort": 8443}]}}),
    );
    let c = wait_available(&s, NAME, "False", "EndpointsNotFound", Duration::from_secs(10));
    assert_eq!(c["message"], "cannot find endpoints for service/api in \"wardle\"");

    create(
        &s,
        &json!({"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "api", "namespace": "wardle"},
        "subsets": [{"addresses": [{"ip": host_ip()}], "ports": [{"name": "other", "port": 8443}]}]}),
    );
    let c = wait_available(&s, NAME, "False", "MissingEndpoints", Duration::from_secs(10));
    assert_eq!(c["message"], "endpoints for service/api in \"wardle\" have no addresses with port name \"https\"");
}
