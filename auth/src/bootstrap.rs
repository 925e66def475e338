//! The RBAC objects kube-apiserver 1.30 creates at first start (kube:
//! `plugin/pkg/auth/authorizer/rbac/bootstrappolicy`): the roles every cluster relies on for
//! discovery, public health endpoints, self-review and the admin group, with their bindings.
//! Each carries kube's bootstrapping label and `autoupdate` annotation.

use serde_json::{Value, json};

fn meta(name: &str) -> Value {
    json!({
        "name": name,
        "labels": {"kubernetes.io/bootstrapping": "rbac-defaults"},
        "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"},
    })
}

fn cluster_role(name: &str, rules: Value) -> Value {
    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": meta(name), "rules": rules})
}

fn binding_to_groups(name: &str, groups: &[&str]) -> Value {
    let subjects: Vec<Value> =
        groups.iter().map(|g| json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": g})).collect();
    json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": meta(name),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
        "subjects": subjects,
    })
}

/// The bootstrap ClusterRoles.
pub fn cluster_roles() -> Vec<Value> {
    vec![
        cluster_role(
            "cluster-admin",
            json!([{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}, {"nonResourceURLs": ["*"], "verbs": ["*"]}]),
        ),
        cluster_role(
            "system:discovery",
            json!([{"nonResourceURLs": ["/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez", "/openapi", "/openapi/*", "/readyz", "/version", "/version/"], "verbs": ["get"]}]),
        ),
        cluster_role(
            "system:public-info-viewer",
            json!([{"nonResourceURLs": ["/healthz", "/livez", "/readyz", "/version", "/version/"], "verbs": ["get"]}]),
        ),
        cluster_role(
            "system:basic-user",
            json!([
                {"apiGroups": ["authorization.k8s.io"], "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"], "verbs": ["create"]},
                {"apiGroups": ["authentication.k8s.io"], "resources": ["selfsubjectreviews"], "verbs": ["create"]}
            ]),
        ),
    ]
}

/// The bootstrap ClusterRoleBindings.
pub fn cluster_role_bindings() -> Vec<Value> {
    vec![
        binding_to_groups("cluster-admin", &["system:masters"]),
        binding_to_groups("system:discovery", &["system:authenticated"]),
        binding_to_groups("system:public-info-viewer", &["system:authenticated", "system:unauthenticated"]),
        binding_to_groups("system:basic-user", &["system:authenticated"]),
    ]
}

#[cfg(test)]
mod tests {
    use apimachinery::request::{UserInfo, parse_request_info};

    use crate::Attributes;
    use crate::rbac::{Policy, RbacKind};

    fn bootstrapped() -> Policy {
        let mut p = Policy::default();
        for r in super::cluster_roles() {
            p.apply(RbacKind::ClusterRole, &r, true);
        }
        for b in super::cluster_role_bindings() {
            p.apply(RbacKind::ClusterRoleBinding, &b, true);
        }
        p
    }

    #[test]
    fn anonymous_users_see_health_and_version_only_and_users_discovery_and_themselves() {
        let p = bootstrapped();
        let anonymous = UserInfo::anonymous();
        let user = UserInfo { name: "alice".into(), groups: vec!["system:authenticated".into()], ..Default::default() };
        let can = |u: &UserInfo, method: &str, path: &str| {
            p.authorize(&Attributes::of(u.clone(), &parse_request_info(method, path, false))).allowed
        };
        assert!(can(&anonymous, "GET", "/version"));
        assert!(can(&anonymous, "GET", "/healthz"));
        assert!(!can(&anonymous, "GET", "/api"));
        assert!(!can(&anonymous, "GET", "/api/v1/namespaces/default/secrets"));
        assert!(can(&user, "GET", "/api"));
        assert!(can(&user, "GET", "/apis/apps/v1"));
        assert!(can(&user, "GET", "/openapi/v3"));
        assert!(!can(&user, "GET", "/metrics"));
        assert!(!can(&user, "GET", "/api/v1/namespaces/default/pods"));
        assert!(can(&user, "POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"));
        assert!(can(&user, "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews"));
    }
}
