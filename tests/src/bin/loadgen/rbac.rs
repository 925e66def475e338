//! Authorization cost in process: one decision of the authorization chain (`RBAC` after the
//! privileged group, as the server runs it) over a policy of 10,000 RoleBindings in 1,000
//! namespaces and 1,000 ClusterRoles, for a user bound in the request's namespace, a group
//! member bound cluster-wide, and a user bound nowhere (the denial scans every binding of the
//! user's name and groups, so it costs the same whatever the number of other bindings).
//! The same decisions over a policy holding only the bindings that matter are the baseline.

use std::time::Instant;

use apimachinery::request::{UserInfo, parse_request_info};
use auth::rbac::RbacKind;
use auth::{Attributes, AuthorizationMode, SharedPolicy};
use serde_json::json;

fn policy(namespaces: usize, cluster_roles: usize) -> SharedPolicy {
    let policy = SharedPolicy::default();
    let mut p = policy.write().unwrap();
    for i in 0..cluster_roles {
        let role = json!({"metadata": {"name": format!("role-{i}")}, "rules": [
            {"verbs": ["get", "list", "watch"], "apiGroups": ["", "apps"], "resources": ["pods", "deployments", format!("things-{i}")]},
            {"verbs": ["create"], "apiGroups": ["batch"], "resources": ["jobs"], "resourceNames": [format!("job-{i}")]}
        ]});
        p.apply(RbacKind::ClusterRole, &role, true);
    }
    for ns in 0..namespaces {
        for b in 0..10 {
            let binding = json!({"metadata": {"name": format!("b-{b}"), "namespace": format!("ns-{ns}")},
                "roleRef": {"kind": "ClusterRole", "name": format!("role-{}", (ns * 10 + b) % cluster_roles.max(1))},
                "subjects": [{"kind": "User", "name": format!("user-{ns}-{b}")}, {"kind": "Group", "name": format!("team-{ns}")}]});
            p.apply(RbacKind::RoleBinding, &binding, true);
        }
    }
    // The subjects measured.
    p.apply(
        RbacKind::RoleBinding,
        &json!({"metadata": {"name": "alice", "namespace": "ns-7"}, "roleRef": {"kind": "ClusterRole", "name": "role-3"},
                "subjects": [{"kind": "User", "name": "alice"}]}),
        true,
    );
    p.apply(
        RbacKind::ClusterRoleBinding,
        &json!({"metadata": {"name": "ops"}, "roleRef": {"kind": "ClusterRole", "name": "role-5"},
                "subjects": [{"kind": "Group", "name": "ops"}]}),
        true,
    );
    drop(p);
    policy
}

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
    let big = policy(1_000, 1_000);
    let small = policy(0, 10);
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
