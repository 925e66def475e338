//! The RBAC objects kube-apiserver 1.30 creates at first start (kube:
//! `plugin/pkg/auth/authorizer/rbac/bootstrappolicy`), with its default feature gates: the
//! cluster roles and bindings of `policy.go`, one `system:controller:*` role per
//! kube-controller-manager loop bound to that loop's ServiceAccount (`controller_policy.go`),
//! and the few Roles kube-system and kube-public need (`namespace_policy.go`).
//!
//! Every object carries kube's bootstrapping label and `autoupdate` annotation, so clients
//! that look for them (and kube's reconciler) treat these as the defaults. Rules are built
//! with their lists sorted, as kube's rule builder stores them.

mod cluster;
mod controllers;
mod namespaced;
#[cfg(test)]
mod tests;

use serde_json::{Map, Value, json};

const API_VERSION: &str = "rbac.authorization.k8s.io/v1";
const RBAC_GROUP: &str = "rbac.authorization.k8s.io";
const KUBE_SYSTEM: &str = "kube-system";
/// The prefix of controller roles, whose rest is the controller's ServiceAccount name.
const CONTROLLER_PREFIX: &str = "system:controller:";

// API groups, as the lists `rule` takes.
const CORE: &[&str] = &[""];
const APPS: &[&str] = &["apps"];
const APPS_EXT: &[&str] = &["apps", "extensions"];
const EXTENSIONS: &[&str] = &["extensions"];
const AUTHN: &[&str] = &["authentication.k8s.io"];
const AUTHZ: &[&str] = &["authorization.k8s.io"];
const AUTOSCALING: &[&str] = &["autoscaling"];
const BATCH: &[&str] = &["batch"];
const CERTIFICATES: &[&str] = &["certificates.k8s.io"];
const COORDINATION: &[&str] = &["coordination.k8s.io"];
const DISCOVERY: &[&str] = &["discovery.k8s.io"];
const NETWORKING: &[&str] = &["networking.k8s.io"];
const POLICY: &[&str] = &["policy"];
const RBAC: &[&str] = &[RBAC_GROUP];
const STORAGE: &[&str] = &["storage.k8s.io"];
const ALL: &[&str] = &["*"];

// Verb sets kube's policy names `Read` and `ReadWrite`, and ReadWrite without the reads.
const READ: &[&str] = &["get", "list", "watch"];
const READ_WRITE: &[&str] = &["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"];
const WRITE: &[&str] = &["create", "delete", "deletecollection", "patch", "update"];

fn sorted(items: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = items.iter().map(|s| s.to_string()).collect();
    v.sort();
    v.dedup();
    v
}

/// A resource rule.
fn rule(verbs: &[&str], groups: &[&str], resources: &[&str]) -> Value {
    json!({"apiGroups": sorted(groups), "resources": sorted(resources), "verbs": sorted(verbs)})
}

/// A resource rule limited to the named objects.
fn named(verbs: &[&str], groups: &[&str], resources: &[&str], names: &[&str]) -> Value {
    let mut r = rule(verbs, groups, resources);
    r["resourceNames"] = json!(sorted(names));
    r
}

/// A non-resource rule.
fn urls(verbs: &[&str], paths: &[&str]) -> Value {
    json!({"nonResourceURLs": sorted(paths), "verbs": sorted(verbs)})
}

/// kube's `eventsRule`: recording events through either events API.
fn events() -> Value {
    rule(&["create", "patch", "update"], &["", "events.k8s.io"], &["events"])
}

fn meta(name: &str, namespace: Option<&str>) -> Value {
    let mut m = json!({
        "name": name,
        "labels": {"kubernetes.io/bootstrapping": "rbac-defaults"},
        "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"},
    });
    if let Some(ns) = namespace {
        m["namespace"] = json!(ns);
    }
    m
}

/// The label the aggregated `admin`, `edit` and `view` roles select their rules by.
fn aggregate_label(to: &str) -> String {
    format!("rbac.authorization.k8s.io/aggregate-to-{to}")
}

fn cluster_role(name: &str, rules: Vec<Value>) -> Value {
    json!({"apiVersion": API_VERSION, "kind": "ClusterRole", "metadata": meta(name, None), "rules": rules})
}

/// Adds `aggregate-to-<to>: "true"`, so the role's rules flow into that aggregated role.
fn aggregated_into(mut role: Value, to: &str) -> Value {
    role["metadata"]["labels"][aggregate_label(to)] = json!("true");
    role
}

/// An aggregated role: no rules of its own, the aggregation controller fills them in from
/// the roles labelled `aggregate-to-<selects>`.
fn aggregating(name: &str, selects: &str) -> Value {
    let mut role = cluster_role(name, Vec::new());
    let mut labels = Map::new();
    labels.insert(aggregate_label(selects), json!("true"));
    role["aggregationRule"] = json!({"clusterRoleSelectors": [{"matchLabels": labels}]});
    role
}

fn role(namespace: &str, name: &str, rules: Vec<Value>) -> Value {
    json!({"apiVersion": API_VERSION, "kind": "Role", "metadata": meta(name, Some(namespace)), "rules": rules})
}

fn user(name: &str) -> Value {
    json!({"apiGroup": RBAC_GROUP, "kind": "User", "name": name})
}

fn group(name: &str) -> Value {
    json!({"apiGroup": RBAC_GROUP, "kind": "Group", "name": name})
}

fn service_account(namespace: &str, name: &str) -> Value {
    json!({"kind": "ServiceAccount", "name": name, "namespace": namespace})
}

/// kube omits `subjects` when there are none (the deprecated `system:node` binding).
fn binding(kind: &str, metadata: Value, role_kind: &str, role: &str, subjects: Vec<Value>) -> Value {
    let mut b = json!({
        "apiVersion": API_VERSION, "kind": kind, "metadata": metadata,
        "roleRef": {"apiGroup": RBAC_GROUP, "kind": role_kind, "name": role},
    });
    if !subjects.is_empty() {
        b["subjects"] = json!(subjects);
    }
    b
}

/// A ClusterRoleBinding named after the ClusterRole it grants.
fn cluster_binding(role: &str, subjects: Vec<Value>) -> Value {
    binding("ClusterRoleBinding", meta(role, None), "ClusterRole", role, subjects)
}

fn role_binding(namespace: &str, name: &str, role: &str, subjects: Vec<Value>) -> Value {
    binding("RoleBinding", meta(name, Some(namespace)), "Role", role, subjects)
}

/// The bootstrap ClusterRoles: `policy.go`'s, then the controller roles.
pub fn cluster_roles() -> Vec<Value> {
    let mut out = cluster::roles();
    out.extend(
        controllers::roles()
            .into_iter()
            .map(|(name, rules)| cluster_role(&format!("{CONTROLLER_PREFIX}{name}"), rules)),
    );
    out
}

/// The bootstrap ClusterRoleBindings: `policy.go`'s, then each controller role bound to its
/// controller's ServiceAccount in kube-system.
pub fn cluster_role_bindings() -> Vec<Value> {
    let mut out = cluster::bindings();
    out.extend(controllers::roles().into_iter().map(|(name, _)| {
        cluster_binding(&format!("{CONTROLLER_PREFIX}{name}"), vec![service_account(KUBE_SYSTEM, name)])
    }));
    out
}

/// The bootstrap Roles of kube-system and kube-public.
pub fn roles() -> Vec<Value> {
    namespaced::roles()
}

/// The bootstrap RoleBindings of kube-system and kube-public.
pub fn role_bindings() -> Vec<Value> {
    namespaced::bindings()
}
