//! Authorization cost in process: one decision of the authorization chain (`RBAC` after the
//! privileged group, as the server runs it) over a policy of 10,000 RoleBindings in 1,000
//! namespaces and 1,000 ClusterRoles, for a user bound in the request's namespace, a group
//! member bound cluster-wide, and a user bound nowhere (the denial scans every binding of the
//! user's name and groups, so it costs the same whatever the number of other bindings).
//! The same decisions over a policy holding only the bindings that matter are the baseline.

use std::time::Instant;

use apimachinery::request::{UserInfo, parse_request_info};
use auth::{Attributes, AuthorizationMode, SharedPolicy};
use serde_json::{Value, json};
use tests::TestServer;
use tests::load::targets::rbac_policy;

use crate::{answered, cpu_time, report, report_cpu};

fn user(name: &str, groups: &[&str]) -> UserInfo {
    let mut groups: Vec<String> = groups.iter().map(|g| g.to_string()).collect();
    groups.push("system:authenticated".into());
    UserInfo { name: name.into(), uid: String::new(), groups, ..Default::default() }
}

/// p50 and p99 of `n` decisions, in µs, and whether they allowed.
fn measure(policy: &SharedPolicy, a: &Attributes, n: usize) -> (f64, f64, bool) {
    let modes = [AuthorizationMode::Rbac];
    let mut times = Vec::with_capacity(n);
    let mut allowed = false;
    for _ in 0..n {
        let started = Instant::now();
        allowed = auth::authz::decide(&modes, policy, a).allowed;
        times.push(started.elapsed().as_secs_f64() * 1e6);
    }
    times.sort_by(f64::total_cmp);
    (times[n / 2], times[n * 99 / 100], allowed)
}

pub fn run() {
    let n = 200_000;
    let big = rbac_policy(1_000, 1_000);
    let small = rbac_policy(0, 10);
    let (roles, bindings) = big.read().unwrap().sizes();
    println!(
        "== authorization in process: {roles} roles, {bindings} bindings (baseline: a policy of the measured bindings only)"
    );
    let cases = [
        ("bound by a RoleBinding", user("alice", &[]), "GET", "/api/v1/namespaces/ns-7/pods"),
        ("bound by a group's ClusterRoleBinding", user("carol", &["ops"]), "GET", "/apis/apps/v1/deployments"),
        ("bound nowhere (denied)", user("mallory", &["interns"]), "DELETE", "/api/v1/namespaces/ns-7/pods/p"),
    ];
    for (what, u, method, path) in cases {
        let a = Attributes::of(u, &parse_request_info(method, path, false));
        let (p50, p99, allowed) = measure(&big, &a, n);
        let (b50, b99, _) = measure(&small, &a, n);
        println!(
            "  {what:<40} {}  p50 {p50:>6.2} µs  p99 {p99:>6.2} µs   baseline p50 {b50:>6.2} µs  p99 {b99:>6.2} µs  ({:.2}x at p99)",
            if allowed { "allowed" } else { "denied " },
            p99 / b99
        );
    }
}

/// The policy of [`policy`] as objects, created through the API so the server's RBAC cache
/// holds it: 1,000 ClusterRoles and 10 RoleBindings in each of `namespaces` namespaces.
async fn load_policy_over_https(server: &TestServer, namespaces: usize, cluster_roles: usize) {
    let client = server.client(true);
    let post = |path: String, body: Value| {
        let (client, url) = (client.clone(), server.url(&path));
        async move {
            let r = client.post(&url).send_json(&body).await.expect("create");
            assert!(matches!(r.status().as_u16(), 201 | 409), "{path}: {}", r.status());
        }
    };
    let rbac = "/apis/rbac.authorization.k8s.io/v1";
    let mut pending = Vec::new();
    for i in 0..cluster_roles {
        let role = json!({"metadata": {"name": format!("role-{i}")}, "rules": [
            {"verbs": ["get", "list", "watch"], "apiGroups": ["", "apps"], "resources": ["pods", "deployments", format!("things-{i}")]},
            {"verbs": ["create"], "apiGroups": ["batch"], "resources": ["jobs"], "resourceNames": [format!("job-{i}")]}
        ]});
        pending.push(Box::pin(post(format!("{rbac}/clusterroles"), role))
            as std::pin::Pin<Box<dyn std::future::Future<Output = ()>>>);
    }
    for ns in 0..namespaces {
        pending.push(Box::pin(post("/api/v1/namespaces".into(), json!({"metadata": {"name": format!("ns-{ns}")}}))));
    }
    run_all(pending).await;
    let mut pending = Vec::new();
    for ns in 0..namespaces {
        for b in 0..10 {
            let binding = json!({"metadata": {"name": format!("b-{b}")},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": format!("role-{}", (ns * 10 + b) % cluster_roles.max(1))},
                "subjects": [{"kind": "User", "name": format!("user-{ns}-{b}")}, {"kind": "Group", "name": format!("team-{ns}")}]});
            pending.push(Box::pin(post(format!("{rbac}/namespaces/ns-{ns}/rolebindings"), binding))
                as std::pin::Pin<Box<dyn std::future::Future<Output = ()>>>);
        }
    }
    run_all(pending).await;
}

/// Runs futures 64 at a time.
async fn run_all(mut pending: Vec<std::pin::Pin<Box<dyn std::future::Future<Output = ()>>>>) {
    while !pending.is_empty() {
        let batch: Vec<_> = pending.drain(..pending.len().min(64)).collect();
        futures_util::future::join_all(batch).await;
    }
}

/// A server with the loader's token, its Role to create ConfigMaps in `load` and its binding.
async fn server_for_load(mode: &str, dir: &std::path::Path, namespaces: usize) -> TestServer {
    let tokens = dir.join(format!("tokens-{mode}.csv"));
    std::fs::write(&tokens, "loader-token,loader,9001\n").expect("token file");
    let server = TestServer::start_with(&["--authorization-mode", mode, "--token-auth-file", tokens.to_str().unwrap()]);
    load_policy_over_https(&server, namespaces, 1_000).await;
    let client = server.client(true);
    for (path, body) in [
        ("/api/v1/namespaces", json!({"metadata": {"name": "load"}})),
        (
            "/apis/rbac.authorization.k8s.io/v1/namespaces/load/roles",
            json!({"metadata": {"name": "loader"},
            "rules": [{"verbs": ["create", "get"], "apiGroups": [""], "resources": ["configmaps"]}]}),
        ),
        (
            "/apis/rbac.authorization.k8s.io/v1/namespaces/load/rolebindings",
            json!({"metadata": {"name": "loader"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "loader"},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "loader"}]}),
        ),
    ] {
        let r = client.post(&server.url(path)).send_json(&body).await.expect("create");
        assert_eq!(r.status().as_u16(), 201, "{path}");
    }
    server
}

/// Over HTTPS with the same policy loaded: SelfSubjectAccessReviews/s, and ConfigMap creates/s
/// at c=64 by a user a RoleBinding allows, with RBAC and (the baseline) with AlwaysAllow.
pub async fn run_https(seconds: std::time::Duration) {
    let namespaces = 1_000;
    let dir = tempfile::tempdir().expect("temp dir");
    println!(
        "== authorization over HTTPS: 1,000 ClusterRoles, 10,000 RoleBindings, a user bound by a RoleBinding, c=64"
    );
    let mut creates = Vec::new();
    for mode in ["AlwaysAllow", "RBAC"] {
        let server = server_for_load(mode, dir.path(), namespaces).await;
        // Wait until the loader's binding is in the server's RBAC cache.
        let client = server.client(false);
        let probe = server.url("/api/v1/namespaces/load/configmaps/none");
        let started = Instant::now();
        while started.elapsed() < std::time::Duration::from_secs(5) {
            let r = client.get(&probe).bearer_auth("loader-token").send().await;
            if r.is_ok_and(|r| r.status().as_u16() == 404) {
                break;
            }
        }
        if mode == "RBAC" {
            let (cl, u) = (client.clone(), server.url("/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"));
            let review = crate::run(64, seconds, move |_, _| {
                let (cl, u) = (cl.clone(), u.clone());
                async move {
                    let body = json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
                        "spec": {"resourceAttributes": {"namespace": "load", "verb": "create", "resource": "configmaps"}}});
                    answered(cl.post(&u).bearer_auth("loader-token").send_json(&body).await, 201).await
                }
            })
            .await;
            report("https SelfSubjectAccessReview", 64, &review, None);
        }
        let (cl, u) = (client.clone(), server.url("/api/v1/namespaces/load/configmaps"));
        let pid = server.pid();
        let cpu = cpu_time(pid);
        let create = crate::run(64, seconds, move |w, i| {
            let (cl, u) = (cl.clone(), u.clone());
            async move {
                let body = json!({"metadata": {"name": format!("c-{w}-{i}")}, "data": {"payload": "x".repeat(512)}});
                answered(cl.post(&u).bearer_auth("loader-token").send_json(&body).await, 201).await
            }
        })
        .await;
        let used = cpu_time(pid).saturating_sub(cpu);
        creates.push((mode, create, used));
    }
    let baseline = &creates[0].1;
    for (mode, phase, cpu) in &creates {
        report_cpu(&format!("https create as loader, {mode}"), 64, phase, Some(baseline), Some(*cpu));
    }
    println!("  (percentages: of the AlwaysAllow run's rate)");
}
