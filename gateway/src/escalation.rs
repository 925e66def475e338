//! RBAC escalation prevention in the write path, first in the admission chain (its mutating
//! phase) as kube checks it in its RBAC storage before admission: a Role or ClusterRole whose rules the writer does not hold is
//! refused unless the writer may `escalate` it; a binding to such a role unless the writer may
//! `bind` it (`auth::escalation` compares the rules).

use apimachinery::error::ApiError;
use apimachinery::messages::{Admit, Operation};
use apimachinery::object::ObjectExt;
use async_trait::async_trait;
use auth::rbac::PolicyRule;
use auth::{Attributes, AuthorizationMode, SharedPolicy};
use serde_json::Value;

/// The check, over the authorizer's modes and policy.
pub struct RbacEscalation {
    /// `--authorization-mode`: the check runs when RBAC is one of them.
    pub modes: Vec<AuthorizationMode>,
    /// The RBAC state the writer's rules are resolved from.
    pub policy: SharedPolicy,
}

const GROUP: &str = "rbac.authorization.k8s.io";

impl RbacEscalation {
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
        auth::authz::decide(&self.modes, &self.policy, &a).allowed
    }

    /// What the writer holds in `namespace` (cluster-wide when empty).
    fn held(&self, request: &Admit, namespace: &str) -> Vec<PolicyRule> {
        let a = Attributes { user: request.user.clone(), namespace: namespace.into(), ..Default::default() };
        auth::authz::rules_for(&self.modes, &self.policy, &a).0
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
        match auth::escalation::refusal(&user.name, &user.groups, &self.held(request, namespace), wanted) {
            None => Ok(()),
            Some(why) => Err(ApiError::forbidden(GROUP, resource, name, &why)),
        }
    }
}

#[async_trait(?Send)]
impl admission::AdmissionPlugin for RbacEscalation {
    fn name(&self) -> &'static str {
        "RBACEscalation"
    }

    /// In the mutating phase, first: kube's RBAC storage checks before its store admits or
    /// validates anything, so a writer without the rules gets this 403 before a 404 for a
    /// missing namespace or a 422 for an invalid role. It changes nothing.
    fn mutates(&self) -> bool {
        true
    }

    async fn mutate(&self, request: &Admit, object: &mut Value, _: &mut admission::Review) -> Result<(), ApiError> {
        let object = &*object;
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
