use std::collections::HashSet;

use apimachinery::request::{UserInfo, parse_request_info};
use serde_json::{Value, json};

use crate::Attributes;
use crate::rbac::{Policy, RbacKind};

fn name(obj: &Value) -> &str {
    obj["metadata"]["name"].as_str().unwrap_or_default()
}

fn objects() -> Vec<(RbacKind, Vec<Value>)> {
    vec![
        (RbacKind::ClusterRole, super::cluster_roles()),
        (RbacKind::ClusterRoleBinding, super::cluster_role_bindings()),
        (RbacKind::Role, super::roles()),
        (RbacKind::RoleBinding, super::role_bindings()),
    ]
}

fn bootstrapped() -> Policy {
    let mut p = Policy::default();
    for (kind, objs) in objects() {
        for o in objs {
            p.apply(kind, &o, true);
        }
    }
    p
}

/// The rules kube's aggregation controller ends up giving `role`: its own and, transitively,
/// those of every role its selectors match.
fn aggregated_rules(roles: &[Value], role: &str) -> Vec<Value> {
    let r = roles.iter().find(|r| name(r) == role).expect("role exists");
    let mut rules = r["rules"].as_array().cloned().unwrap_or_default();
    for sel in r.pointer("/aggregationRule/clusterRoleSelectors").and_then(Value::as_array).into_iter().flatten() {
        for (k, v) in sel["matchLabels"].as_object().into_iter().flatten() {
            for m in roles.iter().filter(|m| m["metadata"]["labels"].get(k) == Some(v)) {
                rules.extend(aggregated_rules(roles, name(m)));
            }
        }
    }
    rules
}

/// The bootstrap policy, aggregated, with user `tester` bound cluster-wide to `role`: how an
/// administrator hands out the user-facing and component roles.
fn tester_with(role: &str) -> (Policy, UserInfo) {
    let mut p = bootstrapped();
    let roles = super::cluster_roles();
    for r in ["admin", "edit", "view"] {
        p.apply(RbacKind::ClusterRole, &json!({"metadata": {"name": r}, "rules": aggregated_rules(&roles, r)}), true);
    }
    let grant = json!({
        "metadata": {"name": "tester"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "tester"}],
    });
    p.apply(RbacKind::ClusterRoleBinding, &grant, true);
    (p, UserInfo { name: "tester".into(), ..Default::default() })
}

fn can(p: &Policy, u: &UserInfo, method: &str, path: &str) -> bool {
    p.authorize(&Attributes::of(u.clone(), &parse_request_info(method, path, false))).allowed
}

fn service_account(name: &str) -> UserInfo {
    UserInfo {
        name: format!("system:serviceaccount:kube-system:{name}"),
        groups: vec!["system:serviceaccounts".into(), "system:serviceaccounts:kube-system".into()],
        ..Default::default()
    }
}

fn user(name: &str) -> UserInfo {
    UserInfo { name: name.into(), groups: vec!["system:authenticated".into()], ..Default::default() }
}

#[test]
fn anonymous_users_see_health_and_version_only_and_users_discovery_and_themselves() {
    let p = bootstrapped();
    let anonymous = UserInfo::anonymous();
    let user = user("alice");
    assert!(can(&p, &anonymous, "GET", "/version"));
    assert!(can(&p, &anonymous, "GET", "/healthz"));
    assert!(!can(&p, &anonymous, "GET", "/api"));
    assert!(!can(&p, &anonymous, "GET", "/api/v1/namespaces/default/secrets"));
    assert!(can(&p, &user, "GET", "/api"));
    assert!(can(&p, &user, "GET", "/apis/apps/v1"));
    assert!(can(&p, &user, "GET", "/openapi/v3"));
    assert!(!can(&p, &user, "GET", "/metrics"));
    assert!(!can(&p, &user, "GET", "/api/v1/namespaces/default/pods"));
    assert!(can(&p, &user, "POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"));
    assert!(can(&p, &user, "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews"));
}

#[test]
fn kube_1_30_counts() {
    let counts: Vec<usize> = objects().iter().map(|(_, objs)| objs.len()).collect();
    assert_eq!(counts, [64, 45, 7, 7], "ClusterRoles, ClusterRoleBindings, Roles, RoleBindings");
}

#[test]
fn names_are_unique_and_every_binding_names_a_role_defined_here() {
    for (kind, objs) in objects() {
        let keys: HashSet<(&str, &str)> =
            objs.iter().map(|o| (o["metadata"]["namespace"].as_str().unwrap_or_default(), name(o))).collect();
        assert_eq!(keys.len(), objs.len(), "{kind:?} names repeat");
    }
    let cluster_roles: HashSet<String> = super::cluster_roles().iter().map(|r| name(r).to_string()).collect();
    for b in super::cluster_role_bindings() {
        assert_eq!(
            b["roleRef"],
            json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name(&b)})
        );
        assert!(cluster_roles.contains(name(&b)), "{} grants a missing ClusterRole", name(&b));
    }
    let roles: HashSet<(String, String)> =
        super::roles().iter().map(|r| (r["metadata"]["namespace"].to_string(), name(r).to_string())).collect();
    for b in super::role_bindings() {
        assert_eq!(
            (b["roleRef"]["kind"].as_str(), b["roleRef"]["apiGroup"].as_str()),
            (Some("Role"), Some("rbac.authorization.k8s.io"))
        );
        let wanted = (b["metadata"]["namespace"].to_string(), b["roleRef"]["name"].as_str().unwrap().to_string());
        assert!(roles.contains(&wanted), "{} grants a missing Role", name(&b));
    }
}

#[test]
fn every_object_is_a_marked_rbac_v1_object_with_subjects_as_kube_writes_them() {
    for (kind, objs) in objects() {
        for o in objs {
            assert_eq!(o["apiVersion"], "rbac.authorization.k8s.io/v1");
            assert_eq!(o["kind"], format!("{kind:?}"));
            assert_eq!(o["metadata"]["labels"]["kubernetes.io/bootstrapping"], "rbac-defaults", "{}", name(&o));
            assert_eq!(o["metadata"]["annotations"]["rbac.authorization.kubernetes.io/autoupdate"], "true");
            let namespaced = matches!(kind, RbacKind::Role | RbacKind::RoleBinding);
            assert_eq!(o["metadata"]["namespace"].is_string(), namespaced, "{}", name(&o));
            for s in o["subjects"].as_array().into_iter().flatten() {
                match s["kind"].as_str() {
                    Some("ServiceAccount") => {
                        assert!(s.get("apiGroup").is_none() && s["namespace"] == "kube-system", "{s}")
                    }
                    Some("User" | "Group") => {
                        assert!(s["apiGroup"] == "rbac.authorization.k8s.io" && s.get("namespace").is_none())
                    }
                    other => panic!("subject kind {other:?}"),
                }
            }
        }
    }
}

#[test]
fn admin_edit_and_view_aggregate_by_kubes_labels() {
    let roles = super::cluster_roles();
    let get = |n: &str| roles.iter().find(|r| name(r) == n).unwrap_or_else(|| panic!("{n} missing")).clone();
    let label = |to: &str| format!("rbac.authorization.k8s.io/aggregate-to-{to}");
    for (role, selects, labelled) in
        [("admin", "admin", None), ("edit", "edit", Some("admin")), ("view", "view", Some("edit"))]
    {
        let r = get(role);
        assert_eq!(r["aggregationRule"], json!({"clusterRoleSelectors": [{"matchLabels": {label(selects): "true"}}]}));
        assert_eq!(r["rules"], json!([]), "{role} is filled in by the aggregation controller");
        let mut labels = json!({"kubernetes.io/bootstrapping": "rbac-defaults"});
        if let Some(to) = labelled {
            labels[label(to)] = json!("true");
        }
        assert_eq!(r["metadata"]["labels"], labels, "{role}");
    }
    for to in ["admin", "edit", "view"] {
        let r = get(&format!("system:aggregate-to-{to}"));
        assert_eq!(r["metadata"]["labels"], json!({"kubernetes.io/bootstrapping": "rbac-defaults", label(to): "true"}));
        assert!(r.get("aggregationRule").is_none());
    }
}

#[test]
fn the_aggregate_roles_grant_what_view_edit_and_admin_users_expect() {
    let (p, view) = tester_with("system:aggregate-to-view");
    assert!(can(&p, &view, "GET", "/api/v1/namespaces/team/pods/web"));
    assert!(can(&p, &view, "GET", "/api/v1/namespaces/team/pods/web/log"));
    assert!(can(&p, &view, "GET", "/apis/apps/v1/namespaces/team/deployments"));
    assert!(!can(&p, &view, "GET", "/api/v1/namespaces/team/secrets/token"));
    assert!(!can(&p, &view, "GET", "/api/v1/namespaces/team/pods/web/exec"));
    assert!(!can(&p, &view, "POST", "/apis/apps/v1/namespaces/team/deployments"));

    let (p, edit) = tester_with("system:aggregate-to-edit");
    assert!(can(&p, &edit, "POST", "/apis/apps/v1/namespaces/team/deployments"));
    assert!(can(&p, &edit, "PATCH", "/apis/apps/v1/namespaces/team/deployments/web/scale"));
    assert!(can(&p, &edit, "GET", "/api/v1/namespaces/team/secrets/token"));
    assert!(can(&p, &edit, "POST", "/api/v1/namespaces/team/pods/web/eviction"));
    assert!(!can(&p, &edit, "POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/team/rolebindings"));

    let (p, admin) = tester_with("system:aggregate-to-admin");
    assert!(can(&p, &admin, "POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/team/rolebindings"));
    assert!(can(&p, &admin, "POST", "/apis/authorization.k8s.io/v1/namespaces/team/localsubjectaccessreviews"));
}

#[test]
fn aggregated_admin_edit_and_view_nest_as_in_kube() {
    let (p, view) = tester_with("view");
    assert!(can(&p, &view, "GET", "/api/v1/namespaces/team/configmaps/c"));
    assert!(!can(&p, &view, "GET", "/api/v1/namespaces/team/secrets/s"));
    let (p, edit) = tester_with("edit");
    assert!(can(&p, &edit, "GET", "/api/v1/namespaces/team/configmaps/c"));
    assert!(can(&p, &edit, "DELETE", "/apis/batch/v1/namespaces/team/jobs/j"));
    assert!(!can(&p, &edit, "PUT", "/apis/rbac.authorization.k8s.io/v1/namespaces/team/roles/r"));
    let (p, admin) = tester_with("admin");
    assert!(can(&p, &admin, "GET", "/api/v1/namespaces/team/pods"));
    assert!(can(&p, &admin, "PUT", "/apis/rbac.authorization.k8s.io/v1/namespaces/team/roles/r"));
    assert!(!can(&p, &admin, "DELETE", "/api/v1/namespaces/team"));
}

#[test]
fn system_node_lets_kubelets_register_and_review_but_is_bound_to_nobody() {
    let binding = super::cluster_role_bindings().into_iter().find(|b| name(b) == "system:node").unwrap();
    assert!(binding.get("subjects").is_none(), "the Node authorizer grants it instead");
    let (p, node) = tester_with("system:node");
    assert!(can(&p, &node, "GET", "/api/v1/nodes/n1"));
    assert!(can(&p, &node, "POST", "/api/v1/nodes"));
    assert!(can(&p, &node, "PATCH", "/api/v1/nodes/n1/status"));
    assert!(can(&p, &node, "POST", "/apis/authentication.k8s.io/v1/tokenreviews"));
    assert!(can(&p, &node, "POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews"));
    assert!(can(&p, &node, "PUT", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n1"));
    assert!(can(&p, &node, "POST", "/api/v1/namespaces/team/serviceaccounts/default/token"));
    assert!(!can(&p, &node, "DELETE", "/api/v1/nodes/n1"));
    assert!(!can(&p, &node, "POST", "/apis/apps/v1/namespaces/team/deployments"));
}

#[test]
fn components_and_controllers_act_under_their_bindings() {
    let p = bootstrapped();
    let kcm = user("system:kube-controller-manager");
    assert!(can(&p, &kcm, "POST", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases"));
    assert!(can(&p, &kcm, "PUT", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kube-controller-manager"));
    assert!(!can(&p, &kcm, "PUT", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kube-scheduler"));
    assert!(can(&p, &kcm, "GET", "/api/v1/namespaces/kube-system/configmaps/extension-apiserver-authentication"));
    let scheduler = user("system:kube-scheduler");
    assert!(can(&p, &scheduler, "POST", "/api/v1/namespaces/team/pods/web/binding"));
    assert!(can(&p, &scheduler, "PUT", "/api/v1/namespaces/kube-system/configmaps/kube-scheduler"));
    assert!(!can(&p, &scheduler, "PUT", "/api/v1/namespaces/kube-system/configmaps/other"));
    assert!(!can(&p, &scheduler, "PUT", "/api/v1/namespaces/team/configmaps/kube-scheduler"));
    assert!(can(&p, &user("system:kube-proxy"), "GET", "/apis/discovery.k8s.io/v1/endpointslices"));

    for b in super::cluster_role_bindings().iter().filter(|b| name(b).starts_with("system:controller:")) {
        let sa = &name(b)["system:controller:".len()..];
        assert_eq!(b["subjects"], json!([{"kind": "ServiceAccount", "name": sa, "namespace": "kube-system"}]));
    }
    let deployments = service_account("deployment-controller");
    assert!(can(&p, &deployments, "PUT", "/apis/apps/v1/namespaces/team/deployments/web/status"));
    assert!(can(&p, &deployments, "POST", "/apis/apps/v1/namespaces/team/replicasets"));
    assert!(!can(&p, &deployments, "GET", "/api/v1/namespaces/team/secrets/s"));
    let namespaces = service_account("namespace-controller");
    assert!(can(&p, &namespaces, "DELETE", "/apis/example.com/v1/namespaces/gone/widgets"));
    assert!(can(&p, &namespaces, "PUT", "/api/v1/namespaces/gone/finalize"));
    let signer = service_account("bootstrap-signer");
    assert!(can(&p, &signer, "PUT", "/api/v1/namespaces/kube-public/configmaps/cluster-info"));
    assert!(!can(&p, &signer, "PUT", "/api/v1/namespaces/kube-public/configmaps/other"));
    assert!(can(&p, &signer, "GET", "/api/v1/namespaces/kube-system/secrets"));
    assert!(can(&p, &service_account("default"), "GET", "/openid/v1/jwks"));
}

#[test]
fn nothing_behind_an_off_by_default_1_30_gate_is_granted() {
    let off = [
        "resource.k8s.io",
        "storagemigration.k8s.io",
        "internal.apiserver.k8s.io",
        "clustertrustbundles",
        "servicecidrs",
        "ipaddresses",
        "volumeattributesclasses",
        "leasecandidates",
    ];
    for (_, objs) in objects() {
        for o in objs {
            let text = o["rules"].to_string();
            assert!(off.iter().all(|w| !text.contains(w)), "{} grants {text}", name(&o));
        }
    }
}
