//! RBAC from memory: Roles, ClusterRoles and their bindings as the cachers deliver them,
//! indexed by subject so a decision looks only at the bindings naming the user or one of its
//! groups (kube: `plugin/pkg/auth/authorizer/rbac`).
//!
//! The gateway feeds [`Policy`] from watches on the four RBAC resources; the authorization
//! stage and the access reviews read it. A decision never reads storage.

mod rules;

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::Value;

pub use rules::PolicyRule;

use crate::Attributes;

/// Which of the four RBAC resources an object is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RbacKind {
    /// A namespace's rules.
    Role,
    /// Rules for the cluster, or for any namespace a RoleBinding names.
    ClusterRole,
    /// Grants a role in one namespace.
    RoleBinding,
    /// Grants a ClusterRole everywhere.
    ClusterRoleBinding,
}

impl RbacKind {
    /// The kind a plural resource name of `rbac.authorization.k8s.io` holds.
    pub fn of_resource(resource: &str) -> Option<Self> {
        Some(match resource {
            "roles" => RbacKind::Role,
            "clusterroles" => RbacKind::ClusterRole,
            "rolebindings" => RbacKind::RoleBinding,
            "clusterrolebindings" => RbacKind::ClusterRoleBinding,
            _ => return None,
        })
    }

    /// Every RBAC resource.
    pub const ALL: [(&'static str, RbacKind); 4] = [
        ("clusterroles", RbacKind::ClusterRole),
        ("roles", RbacKind::Role),
        ("clusterrolebindings", RbacKind::ClusterRoleBinding),
        ("rolebindings", RbacKind::RoleBinding),
    ];
}

/// `(namespace, name)`; the namespace is empty for cluster-scoped objects.
type Key = (String, String);

fn key_of(obj: &Value) -> Key {
    let md = &obj["metadata"];
    let s = |k: &str| md.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    (s("namespace"), s("name"))
}

/// One binding: its role, and its subjects as the index keys them.
#[derive(Clone, Debug)]
struct Binding {
    role_ref: RoleRef,
    /// Users (a ServiceAccount subject as its `system:serviceaccount:<ns>:<name>` user).
    users: Vec<String>,
    groups: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum RoleRef {
    ClusterRole(String),
    /// A Role of the binding's own namespace.
    Role(String),
}

impl Binding {
    fn from_json(obj: &Value, namespace: &str) -> Binding {
        let name = obj.pointer("/roleRef/name").and_then(Value::as_str).unwrap_or("").to_string();
        let role_ref = match obj.pointer("/roleRef/kind").and_then(Value::as_str) {
            Some("Role") => RoleRef::Role(name),
            _ => RoleRef::ClusterRole(name),
        };
        let (mut users, mut groups) = (Vec::new(), Vec::new());
        for s in obj.get("subjects").and_then(Value::as_array).into_iter().flatten() {
            let name = s.get("name").and_then(Value::as_str).unwrap_or("");
            match s.get("kind").and_then(Value::as_str) {
                Some("User") => users.push(name.to_string()),
                Some("Group") => groups.push(name.to_string()),
                Some("ServiceAccount") => {
                    // A RoleBinding's subject defaults to the binding's namespace.
                    let ns = s.get("namespace").and_then(Value::as_str).filter(|n| !n.is_empty()).unwrap_or(namespace);
                    if !ns.is_empty() {
                        users.push(format!("system:serviceaccount:{ns}:{name}"));
                    }
                }
                _ => {}
            }
        }
        Binding { role_ref, users, groups }
    }
}

/// The RBAC state, indexed for decisions.
#[derive(Debug, Default)]
pub struct Policy {
    cluster_roles: HashMap<String, Arc<[PolicyRule]>>,
    roles: HashMap<Key, Arc<[PolicyRule]>>,
    bindings: HashMap<(RbacKind, Key), Binding>,
    /// Binding keys by user name and by group name.
    by_user: HashMap<String, Vec<(RbacKind, Key)>>,
    by_group: HashMap<String, Vec<(RbacKind, Key)>>,
}

/// What an RBAC evaluation found.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Decision {
    /// A bound rule covers the request.
    pub allowed: bool,
    /// Why, when allowed (`RBAC: allowed by ClusterRoleBinding "x" of ClusterRole "y" to User "z"`).
    pub reason: String,
    /// Roles bindings name that do not exist, as kube reports them after a denial.
    pub errors: Vec<String>,
}

impl Policy {
    /// Applies one object as added or modified (`present`) or deleted.
    pub fn apply(&mut self, kind: RbacKind, obj: &Value, present: bool) {
        let key = key_of(obj);
        match kind {
            RbacKind::ClusterRole => {
                if present {
                    self.cluster_roles.insert(key.1, PolicyRule::all_of(obj).into());
                } else {
                    self.cluster_roles.remove(&key.1);
                }
            }
            RbacKind::Role => {
                if present {
                    self.roles.insert(key, PolicyRule::all_of(obj).into());
                } else {
                    self.roles.remove(&key);
                }
            }
            RbacKind::RoleBinding | RbacKind::ClusterRoleBinding => {
                self.unindex(kind, &key);
                if present {
                    let binding = Binding::from_json(obj, &key.0);
                    for u in &binding.users {
                        self.by_user.entry(u.clone()).or_default().push((kind, key.clone()));
                    }
                    for g in &binding.groups {
                        self.by_group.entry(g.clone()).or_default().push((kind, key.clone()));
                    }
                    self.bindings.insert((kind, key), binding);
                }
            }
        }
    }

    /// Forgets every object of `kind`, before a fresh list of it is applied.
    pub fn clear(&mut self, kind: RbacKind) {
        match kind {
            RbacKind::ClusterRole => self.cluster_roles.clear(),
            RbacKind::Role => self.roles.clear(),
            _ => {
                let keys: Vec<Key> =
                    self.bindings.keys().filter(|(k, _)| *k == kind).map(|(_, key)| key.clone()).collect();
                for key in keys {
                    self.unindex(kind, &key);
                }
            }
        }
    }

    fn unindex(&mut self, kind: RbacKind, key: &Key) {
        let Some(old) = self.bindings.remove(&(kind, key.clone())) else { return };
        let drop = |index: &mut HashMap<String, Vec<(RbacKind, Key)>>, names: &[String]| {
            for n in names {
                if let Some(list) = index.get_mut(n) {
                    list.retain(|(k, b)| !(*k == kind && b == key));
                    if list.is_empty() {
                        index.remove(n);
                    }
                }
            }
        };
        drop(&mut self.by_user, &old.users);
        drop(&mut self.by_group, &old.groups);
    }

    /// The bindings that name the user or one of its groups, and apply in `namespace`
    /// (ClusterRoleBindings everywhere, RoleBindings in their namespace), in kube's order:
    /// cluster bindings first.
    fn bindings_for<'a>(&'a self, a: &'a Attributes) -> impl Iterator<Item = (&'a (RbacKind, Key), &'a Binding)> + 'a {
        let mut keys: Vec<&(RbacKind, Key)> = Vec::new();
        let names =
            std::iter::once(self.by_user.get(&a.user.name)).chain(a.user.groups.iter().map(|g| self.by_group.get(g)));
        for list in names.flatten() {
            for k in list {
                let applies = k.0 == RbacKind::ClusterRoleBinding || (!a.namespace.is_empty() && k.1.0 == a.namespace);
                if applies && !keys.contains(&k) {
                    keys.push(k);
                }
            }
        }
        keys.sort_by_key(|k| k.0 != RbacKind::ClusterRoleBinding);
        keys.into_iter().filter_map(move |k| self.bindings.get_key_value(k))
    }

    fn rules_of(&self, binding_ns: &str, role: &RoleRef) -> Result<&Arc<[PolicyRule]>, String> {
        match role {
            RoleRef::ClusterRole(name) => self
                .cluster_roles
                .get(name)
                .ok_or_else(|| format!("clusterrole.rbac.authorization.k8s.io {name:?} not found")),
            RoleRef::Role(name) => self
                .roles
                .get(&(binding_ns.to_string(), name.clone()))
                .ok_or_else(|| format!("role.rbac.authorization.k8s.io {name:?} not found")),
        }
    }

    /// kube's `RBACAuthorizer.Authorize`: allowed when a rule of a role bound to the user
    /// covers the request.
    pub fn authorize(&self, a: &Attributes) -> Decision {
        let mut errors = Vec::new();
        for ((kind, (ns, name)), binding) in self.bindings_for(a) {
            match self.rules_of(ns, &binding.role_ref) {
                Ok(rules) => {
                    if rules.iter().any(|r| r.allows(a)) {
                        let (rkind, rname) = match &binding.role_ref {
                            RoleRef::ClusterRole(r) => ("ClusterRole", r),
                            RoleRef::Role(r) => ("Role", r),
                        };
                        let described = if *kind == RbacKind::ClusterRoleBinding {
                            format!("ClusterRoleBinding {name:?}")
                        } else {
                            format!("RoleBinding {:?}", format!("{name}/{ns}"))
                        };
                        let reason =
                            format!("RBAC: allowed by {described} of {rkind} {rname:?} to {}", subject_of(binding, a));
                        return Decision { allowed: true, reason, errors: Vec::new() };
                    }
                }
                Err(e) => errors.push(e),
            }
        }
        Decision { allowed: false, reason: String::new(), errors }
    }

    /// Every rule that applies to the user in `namespace` (SelfSubjectRulesReview), with the
    /// errors of bindings whose roles are missing.
    pub fn rules_for(&self, a: &Attributes) -> (Vec<PolicyRule>, Vec<String>) {
        let (mut out, mut errors) = (Vec::new(), Vec::new());
        for ((_, (ns, _)), binding) in self.bindings_for(a) {
            match self.rules_of(ns, &binding.role_ref) {
                Ok(rules) => out.extend(rules.iter().cloned()),
                Err(e) => errors.push(e),
            }
        }
        (out, errors)
    }

    /// The rules of the role a binding in `namespace` refers to (`kind` `Role` or
    /// `ClusterRole`), or kube's not-found error.
    pub fn referenced_rules(&self, namespace: &str, kind: &str, name: &str) -> Result<Vec<PolicyRule>, String> {
        let role =
            if kind == "Role" { RoleRef::Role(name.to_string()) } else { RoleRef::ClusterRole(name.to_string()) };
        self.rules_of(namespace, &role).map(|r| r.to_vec())
    }

    /// Numbers of roles and bindings held, for the admin page and tests.
    pub fn sizes(&self) -> (usize, usize) {
        (self.cluster_roles.len() + self.roles.len(), self.bindings.len())
    }
}

/// The subject of `binding` that matched the user, as kube's `describeSubject` names it
/// (`User "alice"`, `Group "devs"`, `ServiceAccount "bot/ns"`).
fn subject_of(binding: &Binding, a: &Attributes) -> String {
    if binding.users.contains(&a.user.name) {
        match a.user.name.strip_prefix("system:serviceaccount:").and_then(|r| r.split_once(':')) {
            Some((ns, name)) => format!("ServiceAccount {:?}", format!("{name}/{ns}")),
            None => format!("User {:?}", a.user.name),
        }
    } else {
        let g = binding.groups.iter().find(|g| a.user.in_group(g)).cloned().unwrap_or_default();
        format!("Group {g:?}")
    }
}

#[cfg(test)]
mod tests {
    use apimachinery::request::UserInfo;
    use serde_json::json;

    use super::*;

    fn user(name: &str, groups: &[&str]) -> UserInfo {
        UserInfo {
            name: name.into(),
            uid: String::new(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
            ..Default::default()
        }
    }

    fn can(p: &Policy, u: &UserInfo, verb: &str, ns: &str, resource: &str) -> bool {
        let a = Attributes {
            user: u.clone(),
            verb: verb.into(),
            is_resource_request: true,
            namespace: ns.into(),
            resource: resource.into(),
            ..Default::default()
        };
        p.authorize(&a).allowed
    }

    fn policy() -> Policy {
        let mut p = Policy::default();
        p.apply(
            RbacKind::ClusterRole,
            &json!({"metadata": {"name": "reader"}, "rules": [{"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods"]}]}),
            true,
        );
        p.apply(
            RbacKind::Role,
            &json!({"metadata": {"name": "cm", "namespace": "a"}, "rules": [{"verbs": ["*"], "apiGroups": [""], "resources": ["configmaps"]}]}),
            true,
        );
        p.apply(
            RbacKind::RoleBinding,
            &json!({"metadata": {"name": "alice-cm", "namespace": "a"}, "roleRef": {"kind": "Role", "name": "cm"},
                    "subjects": [{"kind": "User", "name": "alice"}, {"kind": "ServiceAccount", "name": "bot"}]}),
            true,
        );
        p.apply(
            RbacKind::ClusterRoleBinding,
            &json!({"metadata": {"name": "devs-read"}, "roleRef": {"kind": "ClusterRole", "name": "reader"},
                    "subjects": [{"kind": "Group", "name": "devs"}]}),
            true,
        );
        p
    }

    #[test]
    fn bindings_grant_their_roles_where_they_apply() {
        let p = policy();
        let alice = user("alice", &["system:authenticated"]);
        assert!(can(&p, &alice, "create", "a", "configmaps"));
        assert!(!can(&p, &alice, "create", "b", "configmaps"), "a RoleBinding applies in its namespace");
        assert!(!can(&p, &alice, "list", "a", "pods"));
        let dev = user("bob", &["devs"]);
        assert!(can(&p, &dev, "list", "", "pods"), "a ClusterRoleBinding applies everywhere");
        assert!(can(&p, &dev, "get", "z", "pods"));
        let bot = user("system:serviceaccount:a:bot", &[]);
        assert!(
            can(&p, &bot, "delete", "a", "configmaps"),
            "a ServiceAccount subject defaults to the binding's namespace"
        );
        assert!(!can(&p, &user("system:serviceaccount:b:bot", &[]), "delete", "a", "configmaps"));
        let a = Attributes {
            user: dev.clone(),
            verb: "list".into(),
            is_resource_request: true,
            resource: "pods".into(),
            ..Default::default()
        };
        assert_eq!(
            p.authorize(&a).reason,
            "RBAC: allowed by ClusterRoleBinding \"devs-read\" of ClusterRole \"reader\" to Group \"devs\""
        );
    }

    #[test]
    fn changes_and_deletions_take_effect_and_missing_roles_are_reported() {
        let mut p = policy();
        let alice = user("alice", &[]);
        let binding = json!({"metadata": {"name": "alice-cm", "namespace": "a"}, "roleRef": {"kind": "Role", "name": "cm"}, "subjects": []});
        p.apply(RbacKind::RoleBinding, &binding, true);
        assert!(!can(&p, &alice, "get", "a", "configmaps"), "a subject removed from a binding loses it");
        p.apply(RbacKind::RoleBinding, &binding, false);
        assert_eq!(p.sizes().1, 1);

        let dangling = json!({"metadata": {"name": "x", "namespace": "a"}, "roleRef": {"kind": "Role", "name": "gone"}, "subjects": [{"kind": "User", "name": "alice"}]});
        p.apply(RbacKind::RoleBinding, &dangling, true);
        let a = Attributes {
            user: alice,
            verb: "get".into(),
            is_resource_request: true,
            namespace: "a".into(),
            resource: "pods".into(),
            ..Default::default()
        };
        let d = p.authorize(&a);
        assert!(!d.allowed);
        assert_eq!(d.errors, ["role.rbac.authorization.k8s.io \"gone\" not found"]);

        p.clear(RbacKind::RoleBinding);
        p.clear(RbacKind::ClusterRoleBinding);
        assert_eq!(p.sizes().1, 0);
        assert!(p.by_user.is_empty() && p.by_group.is_empty());
    }
}
