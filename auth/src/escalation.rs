//! RBAC escalation prevention: a Role, ClusterRole or binding may grant only what its writer
//! already holds, unless the writer may `escalate` the role (for roles) or `bind` it (for
//! bindings) (kube: `pkg/registry/rbac/validation`, `ConfirmNoEscalation` and `Covers`).
//!
//! [`EscalationCheck`] answers the core's `RoleEscalation`, which the admission chain asks
//! first in its mutating phase.

use std::collections::BTreeMap;

use apimachinery::error::ApiError;
use apimachinery::lookup::RoleEscalation;
use apimachinery::messages::{Admit, Operation};
use apimachinery::object::ObjectExt;
use serde_json::Value;

use crate::rbac::PolicyRule;
use crate::{Attributes, AuthorizationMode, SharedPolicy};

/// The check admission runs first, over the authorizer's modes and policy.
pub struct EscalationCheck {
    /// `--authorization-mode`: the check runs when RBAC is one of them.
    pub modes: Vec<AuthorizationMode>,
    /// The RBAC state the writer's rules are resolved from.
    pub policy: SharedPolicy,
}

const GROUP: &str = "rbac.authorization.k8s.io";

impl EscalationCheck {
    /// Whether the writer may `verb` the role `resource`/`name` in `namespace`.
    fn may(&self, request: &Admit, verb: &str, resource: &str, namespace: &str, name: &str) -> bool {
        let a = Attributes {
            user: request.user.clone(),
            verb: verb.into(),
            is_resource_request: true,
            api_group: GROUP.into(),
            resource: resource.into(),
            namespace: namespace.into(),
            name: name.into(),
            ..Default::default()
        };
        crate::authz::decide(&self.modes, &self.policy, &a).allowed
    }

    /// What the writer holds in `namespace` (cluster-wide when empty).
    fn held(&self, request: &Admit, namespace: &str) -> Vec<PolicyRule> {
        let a = Attributes { user: request.user.clone(), namespace: namespace.into(), ..Default::default() };
        crate::authz::rules_for(&self.modes, &self.policy, &a).0
    }

    fn refuse(
        &self,
        request: &Admit,
        resource: &str,
        name: &str,
        wanted: &[PolicyRule],
        namespace: &str,
    ) -> Result<(), ApiError> {
        let user = &request.user;
        match refusal(&user.name, &user.groups, &self.held(request, namespace), wanted) {
            None => Ok(()),
            Some(why) => Err(ApiError::forbidden(GROUP, resource, name, &why)),
        }
    }
}

impl RoleEscalation for EscalationCheck {
    fn check(&self, request: &Admit, object: &Value) -> Result<(), ApiError> {
        let target = &request.target;
        let writes = matches!(request.operation, Operation::Create | Operation::Update);
        if target.group != GROUP
            || !writes
            || request.user.in_group("system:masters")
            || !self.modes.contains(&AuthorizationMode::Rbac)
        {
            return Ok(());
        }
        let (namespace, name) = (object.namespace().to_string(), object.name().to_string());
        match target.resource.as_str() {
            resource @ ("roles" | "clusterroles") if !self.may(request, "escalate", resource, &namespace, &name) => {
                self.refuse(request, resource, &name, &PolicyRule::all_of(object), &namespace)?;
            }
            resource @ ("rolebindings" | "clusterrolebindings") => {
                let kind = object.pointer("/roleRef/kind").and_then(Value::as_str).unwrap_or("");
                let role = object.pointer("/roleRef/name").and_then(Value::as_str).unwrap_or("");
                let role_resource = if kind == "Role" { "roles" } else { "clusterroles" };
                if !self.may(request, "bind", role_resource, &namespace, role) {
                    let rules = self
                        .policy
                        .read()
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .referenced_rules(&namespace, kind, role);
                    let rules = rules.map_err(|e| ApiError::forbidden(GROUP, resource, &name, &e))?;
                    self.refuse(request, resource, &name, &rules, &namespace)?;
                }
            }
            _ => {}
        }
        Ok(())
    }
}

/// One rule per group × resource × verb (× name), and per URL × verb: the atoms `Covers`
/// compares, each covered by a single owner rule or by none.
fn breakdown(rule: &PolicyRule) -> Vec<PolicyRule> {
    let mut out = Vec::new();
    let one = |v: &String| vec![v.clone()];
    for group in &rule.api_groups {
        for resource in &rule.resources {
            for verb in &rule.verbs {
                if rule.resource_names.is_empty() {
                    out.push(PolicyRule {
                        api_groups: one(group),
                        resources: one(resource),
                        verbs: one(verb),
                        ..Default::default()
                    });
                }
                for name in &rule.resource_names {
                    out.push(PolicyRule {
                        api_groups: one(group),
                        resources: one(resource),
                        verbs: one(verb),
                        resource_names: one(name),
                        ..Default::default()
                    });
                }
            }
        }
    }
    for url in &rule.non_resource_urls {
        for verb in &rule.verbs {
            out.push(PolicyRule { non_resource_urls: one(url), verbs: one(verb), ..Default::default() });
        }
    }
    out
}

fn has_all(set: &[String], wanted: &[String]) -> bool {
    wanted.iter().all(|w| set.contains(w))
}

/// `ruleCovers`: whether one owner rule covers one atom.
fn rule_covers(owner: &PolicyRule, atom: &PolicyRule) -> bool {
    let star = |set: &[String]| set.iter().any(|s| s == "*");
    let verbs = star(&owner.verbs) || has_all(&owner.verbs, &atom.verbs);
    let groups = star(&owner.api_groups) || has_all(&owner.api_groups, &atom.api_groups);
    let resources = star(&owner.resources)
        || atom.resources.iter().all(|r| {
            owner.resources.contains(r)
                || r.split_once('/').is_some_and(|(_, sub)| owner.resources.contains(&format!("*/{sub}")))
        });
    let urls = atom.non_resource_urls.iter().all(|u| {
        owner
            .non_resource_urls
            .iter()
            .any(|o| o == u || o.strip_suffix('*').is_some_and(|prefix| u.starts_with(prefix)))
    });
    let names = if atom.resource_names.is_empty() {
        owner.resource_names.is_empty()
    } else {
        owner.resource_names.is_empty() || has_all(&owner.resource_names, &atom.resource_names)
    };
    verbs && groups && resources && names && urls
}

/// `Covers`: the atoms of `wanted` no rule of `owner` covers.
pub fn uncovered(owner: &[PolicyRule], wanted: &[PolicyRule]) -> Vec<PolicyRule> {
    wanted.iter().flat_map(breakdown).filter(|atom| !owner.iter().any(|o| rule_covers(o, atom))).collect()
}

/// `CompactRules`: atoms of one group and resource (and name) merged, their verbs together.
fn compact(rules: Vec<PolicyRule>) -> Vec<PolicyRule> {
    let mut merged: BTreeMap<(String, String, Vec<String>), PolicyRule> = BTreeMap::new();
    let mut out = Vec::new();
    for r in rules {
        if r.non_resource_urls.is_empty() && r.api_groups.len() == 1 && r.resources.len() == 1 {
            let key = (r.api_groups[0].clone(), r.resources[0].clone(), r.resource_names.clone());
            match merged.get_mut(&key) {
                Some(m) => m.verbs.extend(r.verbs.into_iter().filter(|v| !m.verbs.contains(v)).collect::<Vec<_>>()),
                None => {
                    merged.insert(key, r);
                }
            }
        } else {
            out.push(r);
        }
    }
    out.extend(merged.into_values());
    out
}

fn go_strings(list: &[String]) -> String {
    format!("[{}]", list.iter().map(|s| format!("{s:?}")).collect::<Vec<_>>().join(" "))
}

/// `CompactString`: `{APIGroups:[""], Resources:["secrets"], Verbs:["get" "list"]}`.
pub fn compact_string(r: &PolicyRule) -> String {
    let mut parts = Vec::new();
    for (name, list) in [
        ("APIGroups", &r.api_groups),
        ("Resources", &r.resources),
        ("NonResourceURLs", &r.non_resource_urls),
        ("ResourceNames", &r.resource_names),
        ("Verbs", &r.verbs),
    ] {
        if !list.is_empty() {
            parts.push(format!("{name}:{}", go_strings(list)));
        }
    }
    format!("{{{}}}", parts.join(", "))
}

/// `ConfirmNoEscalation`'s refusal: what `wanted` grants beyond `owner`, or `None` when
/// nothing. `user` and `groups` name the writer as kube's message does.
pub fn refusal(user: &str, groups: &[String], owner: &[PolicyRule], wanted: &[PolicyRule]) -> Option<String> {
    let missing = uncovered(owner, wanted);
    if missing.is_empty() {
        return None;
    }
    let mut described: Vec<String> = compact(missing).iter().map(compact_string).collect();
    described.sort();
    described.dedup();
    Some(format!(
        "user {user:?} (groups={}) is attempting to grant RBAC permissions not currently held:\n{}",
        go_strings(groups),
        described.join("\n")
    ))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn rules(v: serde_json::Value) -> Vec<PolicyRule> {
        PolicyRule::all_of(&json!({ "rules": v }))
    }

    #[test]
    fn owners_cover_what_they_hold_and_the_rest_is_described_as_kube_does() {
        let owner = rules(json!([
            {"apiGroups": [""], "resources": ["configmaps", "pods/log"], "verbs": ["get", "list"]},
            {"apiGroups": ["apps"], "resources": ["*/scale"], "verbs": ["*"]},
            {"nonResourceURLs": ["/healthz/*"], "verbs": ["get"]}
        ]));
        let fine = rules(json!([
            {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"], "resourceNames": ["a"]},
            {"apiGroups": ["apps"], "resources": ["deployments/scale"], "verbs": ["update"]},
            {"nonResourceURLs": ["/healthz/etcd"], "verbs": ["get"]}
        ]));
        assert!(uncovered(&owner, &fine).is_empty());
        let more = rules(
            json!([{"apiGroups": [""], "resources": ["secrets", "configmaps"], "verbs": ["get", "list", "delete"]}]),
        );
        let message = refusal("alice", &["system:authenticated".into()], &owner, &more).unwrap();
        assert_eq!(
            message,
            "user \"alice\" (groups=[\"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:\n{APIGroups:[\"\"], Resources:[\"configmaps\"], Verbs:[\"delete\"]}\n{APIGroups:[\"\"], Resources:[\"secrets\"], Verbs:[\"get\" \"list\" \"delete\"]}"
        );
    }
}
