//! Service cluster IPs: allocated atomically from `--service-cluster-ip-range`, never shared by
//! concurrent creates, released by deletes, kept across restarts; a full range and a taken
//! address get kube's errors, through the raw API and through kubectl.

use std::collections::HashSet;

use serde_json::{Value, json};
use tests::TestServer;

const SVCS: &str = "/api/v1/namespaces/default/services";

fn service(name: &str) -> Value {
    json!({"metadata": {"name": name}, "spec": {"selector": {"app": name}, "ports": [{"port": 80}]}})
}

async fn create(client: &awc::Client, s: &TestServer, body: Value) -> (u16, Value) {
    let mut r = client.post(s.url(SVCS)).send_json(&body).await.expect("request sent");
    let v: Value = r.json().limit(1 << 20).await.unwrap_or(Value::Null);
    (r.status().as_u16(), v)
}

fn ip_of(svc: &Value) -> String {
    svc["spec"]["clusterIP"].as_str().unwrap_or_else(|| panic!("no clusterIP: {svc}")).to_string()
}

async fn create_many(s: &TestServer, prefix: &str, n: usize) -> Vec<String> {
    let client = s.client(true);
    let tasks: Vec<_> = (0..n)
        .map(|i| {
            let client = client.clone();
            let body = service(&format!("{prefix}-{i}"));
            let url = s.url(SVCS);
            actix_web::rt::spawn(async move {
                let mut r = client.post(url).send_json(&body).await.expect("request sent");
                let v: Value = r.json().limit(1 << 20).await.unwrap();
                (r.status().as_u16(), v)
            })
        })
        .collect();
    let mut ips = Vec::new();
    for t in tasks {
        let (code, svc) = t.await.unwrap();
        assert_eq!(code, 201, "{svc}");
        ips.push(ip_of(&svc));
    }
    ips
}

#[actix_web::test]
async fn concurrent_creates_get_distinct_addresses_kept_across_a_restart() {
    let mut s = TestServer::start();
    let first = create_many(&s, "web", 200).await;
    let distinct: HashSet<&String> = first.iter().collect();
    assert_eq!(distinct.len(), 200, "200 concurrent creates, 200 addresses");
    assert!(!distinct.contains(&"10.96.0.1".to_string()), "the kubernetes Service's address is taken");
    assert!(first.iter().all(|ip| ip.starts_with("10.9") || ip.starts_with("10.10") || ip.starts_with("10.11")));

    s.restart();
    let after = create_many(&s, "api", 20).await;
    let mut all: HashSet<String> = first.into_iter().collect();
    for ip in after {
        assert!(all.insert(ip.clone()), "{ip} was handed out twice across the restart");
    }
}

#[actix_web::test]
async fn a_full_range_refuses_and_deletes_give_addresses_back() {
    // A /29 holds 6 addresses: the kubernetes Service's and 5 more.
    let s = TestServer::start_with(&["--service-cluster-ip-range", "10.0.0.0/29"]);
    let client = s.client(true);
    let mut ips = Vec::new();
    for i in 0..5 {
        let (code, svc) = create(&client, &s, service(&format!("s{i}"))).await;
        assert_eq!(code, 201, "{svc}");
        ips.push(ip_of(&svc));
    }
    let (code, status) = create(&client, &s, service("one-too-many")).await;
    assert_eq!(code, 500, "{status}");
    assert_eq!(status["reason"], "InternalError");
    assert_eq!(status["message"], "Internal error occurred: failed to allocate a serviceIP: range is full");

    let mut r = client.delete(s.url(&format!("{SVCS}/s2"))).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 200, "{:?}", r.body().await);
    let (code, svc) = create(&client, &s, service("reuses")).await;
    assert_eq!(code, 201, "{svc}");
    assert_eq!(ip_of(&svc), ips[2], "the deleted Service's address is free again");

    // A chosen address must be free and in range.
    let mut taken = service("taken");
    taken["spec"]["clusterIP"] = ips[0].clone().into();
    let (code, status) = create(&client, &s, taken).await;
    assert_eq!(code, 422, "{status}");
    assert_eq!(
        status["message"],
        format!(
            "Service \"taken\" is invalid: spec.clusterIPs: Invalid value: []string{{\"{0}\"}}: failed to allocate IP {0}: provided IP is already allocated",
            ips[0]
        )
    );
    let mut outside = service("outside");
    outside["spec"]["clusterIP"] = "10.1.0.9".into();
    let (code, status) = create(&client, &s, outside).await;
    assert_eq!(code, 422, "{status}");
    assert!(
        status["message"].as_str().unwrap().ends_with(
            "failed to allocate IP 10.1.0.9: the provided IP (10.1.0.9) is not in the valid range. The range of valid IPs is 10.0.0.0/29"
        ),
        "{status}"
    );
    // A headless Service needs no address.
    let mut headless = service("headless");
    headless["spec"]["clusterIP"] = "None".into();
    let (code, svc) = create(&client, &s, headless).await;
    assert_eq!(code, 201, "{svc}");
    assert_eq!(svc["spec"]["clusterIP"], "None");
}

#[test]
fn kubectl_creates_lists_and_is_refused_by_a_full_range() {
    // A /30 holds 2 addresses: the kubernetes Service's and one more.
    let s = TestServer::start_with(&["--service-cluster-ip-range", "10.0.0.0/30"]);
    s.kubectl_ok(&["create", "service", "clusterip", "web", "--tcp=80:8080"]);
    let table = s.kubectl_ok(&["get", "services"]);
    let header: Vec<&str> = table.lines().next().unwrap_or("").split_whitespace().collect();
    assert_eq!(header, ["NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "AGE"], "{table}");
    let row: Vec<&str> = table.lines().find(|l| l.starts_with("web ")).expect("web row").split_whitespace().collect();
    assert_eq!(&row[..5], ["web", "ClusterIP", "10.0.0.2", "<none>", "80/TCP"], "{table}");
    assert!(table.lines().any(|l| l.starts_with("kubernetes ") && l.contains("10.0.0.1")), "{table}");

    let out = s.kubectl(&["create", "service", "clusterip", "api", "--tcp=80:8080"]);
    assert!(!out.status.success(), "a full range took a Service");
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim(),
        "error: failed to create ClusterIP service: Internal error occurred: failed to allocate a serviceIP: range is full"
    );
    s.kubectl_ok(&["delete", "service", "web"]);
    s.kubectl_ok(&["create", "service", "clusterip", "api", "--tcp=80:8080"]);
    let ip = s.kubectl_ok(&["get", "service", "api", "-o", "jsonpath={.spec.clusterIP}"]);
    assert_eq!(ip, "10.0.0.2", "the deleted Service's address went to the next one");
}
