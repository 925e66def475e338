//! What CustomResourceDefinitions cost: N CRDs with realistic schemas (twenty operator-like
//! kinds of about sixty properties each, repeated across groups) created one after another,
//! each timed from its create to its resource answering; the server's resident memory per
//! CRD; discovery and OpenAPI response times once all are served; and custom resource creates
//! and lists beside ConfigMap ones measured in the same run.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tests::TestServer;

use crate::{Phase, answered, report_cpu, rss_mib};

/// Kinds per group, as one large operator ships them.
const KINDS_PER_GROUP: usize = 20;
const CONCURRENCY: usize = 64;

/// A schema of about sixty properties: scalars of each type with the usual constraints,
/// nested objects, lists of objects and maps, as operators' specs and statuses look.
fn schema(k: usize) -> Value {
    let mut spec = serde_json::Map::new();
    for i in 0..20 {
        let p = match i % 5 {
            0 => json!({"type": "string", "maxLength": 253, "description": format!("Field {i} of kind {k}.")}),
            1 => json!({"type": "integer", "minimum": 0, "maximum": 65535, "default": i}),
            2 => json!({"type": "boolean"}),
            3 => json!({"type": "string", "enum": ["Always", "IfNotPresent", "Never"]}),
            _ => json!({"type": "object", "additionalProperties": {"type": "string"}}),
        };
        spec.insert(format!("field{i}"), p);
    }
    spec.insert(
        "template".into(),
        json!({"type": "object", "properties": {
            "image": {"type": "string"}, "replicas": {"type": "integer", "minimum": 0},
            "resources": {"type": "object", "properties": {
                "limits": {"type": "object", "additionalProperties": {"x-kubernetes-int-or-string": true}},
                "requests": {"type": "object", "additionalProperties": {"x-kubernetes-int-or-string": true}}}},
            "env": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                "items": {"type": "object", "required": ["name"], "properties": {
                    "name": {"type": "string"}, "value": {"type": "string"}}}},
            "ports": {"type": "array", "items": {"type": "object", "properties": {
                "containerPort": {"type": "integer"}, "protocol": {"type": "string", "default": "TCP"}}}},
        }}),
    );
    let mut status = serde_json::Map::new();
    for i in 0..15 {
        status.insert(format!("observed{i}"), json!({"type": "string"}));
    }
    status.insert(
        "conditions".into(),
        json!({"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"],
            "items": {"type": "object", "required": ["type", "status"], "properties": {
                "type": {"type": "string"}, "status": {"type": "string", "enum": ["True", "False", "Unknown"]},
                "reason": {"type": "string"}, "message": {"type": "string"},
                "lastTransitionTime": {"type": "string", "format": "date-time"}}}}),
    );
    json!({"type": "object", "properties": {"spec": {"type": "object", "properties": spec},
        "status": {"type": "object", "properties": status}}})
}

fn crd(group: usize, k: usize) -> Value {
    let kind = format!("Thing{k}");
    let plural = format!("things{k}");
    json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.g{group}.bench.example.com")},
        "spec": {"group": format!("g{group}.bench.example.com"), "scope": "Namespaced",
            "names": {"plural": plural, "singular": format!("thing{k}"), "kind": kind, "listKind": format!("Thing{k}List")},
            "versions": [{"name": "v1", "served": true, "storage": true, "subresources": {"status": {}},
                "additionalPrinterColumns": [{"name": "Image", "type": "string", "jsonPath": ".spec.template.image"}],
                "schema": {"openAPIV3Schema": schema(k)}}]}})
}

fn quantile(v: &mut [Duration], q: f64) -> Duration {
    v.sort();
    v.get(((v.len() as f64 * q).ceil() as usize).clamp(1, v.len()) - 1).copied().unwrap_or_default()
}

/// Times one GET of `path` with `accept`; answers (milliseconds, bytes).
async fn timed_get(server: &TestServer, path: &str, accept: &str) -> (f64, usize) {
    let client = server.client(true);
    let started = Instant::now();
    let mut response = client.get(server.url(path)).insert_header(("Accept", accept)).send().await.expect("GET");
    let body = response.body().limit(1 << 30).await.expect("body");
    assert!(response.status().is_success(), "{path}: {}", response.status());
    (started.elapsed().as_secs_f64() * 1e3, body.len())
}

/// Creates `n` CRDs and prints what they cost.
pub async fn run(n: usize, seconds: Duration) {
    let server = TestServer::start();
    let client = server.client(true);
    // Warm the paths a CRD's creation touches, so the first CRD is not charged for them.
    for path in ["/apis", "/openapi/v2", "/openapi/v3"] {
        timed_get(&server, path, "application/json").await;
    }
    let idle = rss_mib(server.pid());
    let crds_url = server.url("/apis/apiextensions.k8s.io/v1/customresourcedefinitions");
    let mut served = Vec::with_capacity(n);
    let started = Instant::now();
    for i in 0..n {
        let (group, k) = (i / KINDS_PER_GROUP, i % KINDS_PER_GROUP);
        let created = Instant::now();
        let sent = client.post(&crds_url).send_json(&crd(group, k)).await;
        assert!(answered(sent, 201).await, "CRD {i} created");
        let probe = server.url(&format!("/apis/g{group}.bench.example.com/v1/namespaces/default/things{k}"));
        loop {
            if answered(client.get(&probe).send().await, 200).await {
                break;
            }
            assert!(created.elapsed() < Duration::from_secs(30), "CRD {i} never served");
            actix_web::rt::time::sleep(Duration::from_millis(2)).await;
        }
        served.push(created.elapsed());
    }
    let total = started.elapsed();
    // Let the controller's status writes and any deferred work settle before reading memory.
    actix_web::rt::time::sleep(Duration::from_secs(2)).await;
    let after = rss_mib(server.pid());
    let max = served.iter().max().copied().unwrap_or_default();
    println!(
        "== CRDs: {n} created in {:.1} s; served after create p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
        total.as_secs_f64(),
        quantile(&mut served, 0.5).as_secs_f64() * 1e3,
        quantile(&mut served, 0.99).as_secs_f64() * 1e3,
        max.as_secs_f64() * 1e3
    );
    println!("   resident {idle:.1} MiB before, {after:.1} MiB after: {:.3} MiB per CRD", (after - idle) / n as f64);
    // The CRDs' own watch cache keeps every event younger than its freshness (75 s) beyond its
    // window: the steady state is reached once they age out.
    actix_web::rt::time::sleep(Duration::from_secs(80)).await;
    // A change to one CRD lets that cache evict what aged out.
    let first = server.url("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/things0.g0.bench.example.com");
    let label = json!({"metadata": {"labels": {"settled": "true"}}});
    let patched =
        client.patch(&first).insert_header(("Content-Type", "application/merge-patch+json")).send_json(&label);
    assert!(answered(patched.await, 200).await, "CRD labelled");
    actix_web::rt::time::sleep(Duration::from_secs(1)).await;
    let settled = rss_mib(server.pid());
    println!("   resident {settled:.1} MiB 80 s later: {:.3} MiB per CRD", (settled - idle) / n as f64);
    let aggregated = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";
    let group_doc = "/openapi/v3/apis/g0.bench.example.com/v1";
    for (path, accept) in [
        ("/apis", aggregated),
        ("/apis", "application/json"),
        ("/openapi/v3", "application/json"),
        (group_doc, "application/json"),
        ("/openapi/v2", "application/json"),
        ("/openapi/v2", "application/json"),
    ] {
        let (ms, bytes) = timed_get(&server, path, accept).await;
        let what = if accept == aggregated { "aggregated" } else { "" };
        println!("   GET {path:<42} {what:<10} {ms:>8.1} ms  {:>9.1} KiB", bytes as f64 / 1024.0);
    }

    // A custom resource beside a ConfigMap: creates at c=64, then lists of what was created.
    let cm = creates(&server, "/api/v1/namespaces/default/configmaps", None, seconds).await;
    let cr_path = "/apis/g0.bench.example.com/v1/namespaces/default/things0";
    let cr = creates(&server, cr_path, Some(("g0.bench.example.com/v1", "Thing0")), seconds).await;
    report_cpu("create configmap", CONCURRENCY, &cm.0, None, Some(cm.1));
    report_cpu("create custom resource", CONCURRENCY, &cr.0, Some(&cm.0), Some(cr.1));
    let lists = |path: &'static str| {
        let (client, url) = (server.client(true), server.url(&format!("{path}?limit=500")));
        crate::run(8, seconds, move |_, _| {
            let (c, u) = (client.clone(), url.clone());
            async move { answered(c.get(&u).send().await, 200).await }
        })
    };
    for path in [
        "/api/v1/namespaces/default/configmaps?limit=500",
        "/apis/g0.bench.example.com/v1/namespaces/default/things0?limit=500",
    ] {
        let (ms, bytes) = timed_get(&server, path, "application/json").await;
        println!("   GET {path:<70} {ms:>8.1} ms  {:>9.1} KiB", bytes as f64 / 1024.0);
    }
    let cm_lists = lists("/api/v1/namespaces/default/configmaps").await;
    let cr_lists = lists(cr_path).await;
    crate::report("list 500 configmaps", 8, &cm_lists, None);
    crate::report("list 500 custom resources", 8, &cr_lists, Some(&cm_lists));
}

/// Creates objects at `path` from 64 workers; answers the phase and the server's CPU time.
async fn creates(server: &TestServer, path: &str, typed: Option<(&str, &str)>, seconds: Duration) -> (Phase, Duration) {
    let client = server.client(true);
    let url = server.url(path);
    let pid = server.pid();
    let cpu = crate::cpu_time(pid);
    let typed = typed.map(|(a, k)| (a.to_string(), k.to_string()));
    let phase = crate::run(CONCURRENCY, seconds, move |w, i| {
        let (cl, u, typed) = (client.clone(), url.clone(), typed.clone());
        async move {
            let name = format!("o-{w}-{i}");
            let body = match typed {
                Some((api_version, kind)) => {
                    json!({"apiVersion": api_version, "kind": kind, "metadata": {"name": name},
                    "spec": {"field0": "x".repeat(100), "field1": 3, "template": {"image": "nginx", "replicas": 2,
                        "env": [{"name": "A", "value": "x".repeat(200)}]}}})
                }
                None => json!({"metadata": {"name": name}, "data": {"payload": "x".repeat(512)}}),
            };
            answered(cl.post(&u).send_json(&body).await, 201).await
        }
    })
    .await;
    (phase, crate::cpu_time(pid).saturating_sub(cpu))
}
