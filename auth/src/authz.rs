//! The authorization stage: `--authorization-mode`'s authorizers in order, after kube's
//! privileged-group authorizer (`system:masters` may do anything). The first to allow or deny
//! decides; when none has an opinion the request is denied, and their reasons are the 403's
//! (kube: `pkg/kubeapiserver/authorizer`, `staging/.../authorization/union`).

use std::sync::{Arc, RwLock};

use actix::{Actor, Context};
use actors::{Deadline, StageHandler, Work};
use apimachinery::error::ApiError;
use apimachinery::messages::{AuthorizationDecision, Authorize};
use apimachinery::request::{RequestInfo, UserInfo};

use crate::Attributes;
use crate::rbac::Policy;

/// One authorizer of `--authorization-mode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AuthorizationMode {
    /// Every request is allowed.
    AlwaysAllow,
    /// Every request is denied.
    AlwaysDeny,
    /// Roles and bindings, from the [`Policy`] the RBAC cachers feed.
    Rbac,
}

impl std::str::FromStr for AuthorizationMode {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "AlwaysAllow" => Ok(AuthorizationMode::AlwaysAllow),
            "AlwaysDeny" => Ok(AuthorizationMode::AlwaysDeny),
            "RBAC" => Ok(AuthorizationMode::Rbac),
            other => Err(format!("authorization mode {other:?} is not one of AlwaysAllow, AlwaysDeny, RBAC")),
        }
    }
}

/// Parses `--authorization-mode`: comma-separated, each mode once.
pub fn parse_modes(s: &str) -> Result<Vec<AuthorizationMode>, String> {
    let mut modes = Vec::new();
    for m in s.split(',').map(str::trim) {
        let mode: AuthorizationMode = m.parse()?;
        if modes.contains(&mode) {
            return Err(format!("authorization-mode {m:?} has mode specified more than once"));
        }
        modes.push(mode);
    }
    Ok(modes)
}

/// The RBAC state shared by the authorizer, the access reviews and the feed that fills it.
pub type SharedPolicy = Arc<RwLock<Policy>>;

/// The decision of the whole chain for `a`.
pub fn decide(modes: &[AuthorizationMode], policy: &SharedPolicy, a: &Attributes) -> AuthorizationDecision {
    if a.user.in_group("system:masters") {
        return AuthorizationDecision { allowed: true, ..Default::default() };
    }
    let mut reasons = Vec::new();
    for mode in modes {
        match mode {
            AuthorizationMode::AlwaysAllow => return AuthorizationDecision { allowed: true, ..Default::default() },
            AuthorizationMode::AlwaysDeny => {
                reasons.push("Everything is forbidden.".to_string());
                return AuthorizationDecision { allowed: false, denied: true, reason: reasons.join("\n") };
            }
            AuthorizationMode::Rbac => {
                let d = policy.read().unwrap_or_else(std::sync::PoisonError::into_inner).authorize(a);
                if d.allowed {
                    return AuthorizationDecision { allowed: true, denied: false, reason: d.reason };
                }
                match d.errors.as_slice() {
                    [] => {}
                    [one] => reasons.push(format!("RBAC: {one}")),
                    many => reasons.push(format!("RBAC: [{}]", many.join(", "))),
                }
            }
        }
    }
    AuthorizationDecision { allowed: false, denied: false, reason: reasons.join("\n") }
}

/// What the chain allows the user in `a.namespace`, for SelfSubjectRulesReview: the rules,
/// and the errors that may have hidden some (kube's `RulesFor` of each authorizer).
pub fn rules_for(
    modes: &[AuthorizationMode],
    policy: &SharedPolicy,
    a: &Attributes,
) -> (Vec<crate::rbac::PolicyRule>, Vec<String>) {
    let everything = || {
        let all = vec!["*".to_string()];
        vec![
            crate::rbac::PolicyRule {
                verbs: all.clone(),
                api_groups: all.clone(),
                resources: all.clone(),
                ..Default::default()
            },
            crate::rbac::PolicyRule { verbs: all.clone(), non_resource_urls: all, ..Default::default() },
        ]
    };
    if a.user.in_group("system:masters") {
        return (everything(), Vec::new());
    }
    let (mut rules, mut errors) = (Vec::new(), Vec::new());
    for mode in modes {
        match mode {
            AuthorizationMode::AlwaysAllow => rules.extend(everything()),
            AuthorizationMode::AlwaysDeny => {}
            AuthorizationMode::Rbac => {
                let (r, e) = policy.read().unwrap_or_else(std::sync::PoisonError::into_inner).rules_for(a);
                rules.extend(r);
                errors.extend(e);
            }
        }
    }
    (rules, errors)
}

/// The authorization stage actor.
pub struct AuthorizationActor {
    modes: Vec<AuthorizationMode>,
    policy: SharedPolicy,
}

impl AuthorizationActor {
    /// An authorizer running `modes` over `policy`.
    pub fn new(modes: Vec<AuthorizationMode>, policy: SharedPolicy) -> Self {
        AuthorizationActor { modes, policy }
    }
}

impl Actor for AuthorizationActor {
    type Context = Context<Self>;
}

/// kube's 403 for `user` doing `request`, with the authorizers' reasons after a colon.
pub fn forbidden(user: &UserInfo, request: &RequestInfo, reason: &str) -> ApiError {
    let suffix = if reason.is_empty() { String::new() } else { format!(": {reason}") };
    if !request.is_resource_request {
        return ApiError::new(
            apimachinery::Reason::Forbidden,
            format!("forbidden: User \"{}\" cannot {} path \"{}\"{suffix}", user.name, request.verb, request.path),
        );
    }
    let resource = if request.subresource.is_empty() {
        request.resource.clone()
    } else {
        format!("{}/{}", request.resource, request.subresource)
    };
    let scope = if request.namespace.is_empty() {
        "at the cluster scope".to_string()
    } else {
        format!("in the namespace \"{}\"", request.namespace)
    };
    let why = format!(
        "User \"{}\" cannot {} resource \"{resource}\" in API group \"{}\" {scope}{suffix}",
        user.name, request.verb, request.api_group
    );
    ApiError::forbidden(&request.api_group, &request.resource, &request.name, &why)
}

impl StageHandler<Authorize> for AuthorizationActor {
    fn handle(
        &mut self,
        msg: Authorize,
        _: Deadline,
        _: &mut Context<Self>,
    ) -> Work<Self, Result<AuthorizationDecision, ApiError>> {
        let Authorize { user, request } = msg;
        let decision = decide(&self.modes, &self.policy, &Attributes::of(user, &request));
        let label = if decision.allowed { "allowed" } else { "denied" };
        metrics::counter!("apiserver_authorization_decisions_total", "decision" => label).increment(1);
        Work::Done(Ok(decision))
    }
}

actors::stage_handler!(AuthorizationActor => Authorize);

#[cfg(test)]
mod tests {
    use apimachinery::request::parse_request_info;
    use serde_json::json;

    use super::*;
    use crate::rbac::RbacKind;

    #[test]
    fn forbidden_message_matches_kube() {
        let user = UserInfo { name: "bob".into(), ..Default::default() };
        let req = parse_request_info("GET", "/api/v1/namespaces/default/configmaps", false);
        let e = forbidden(&user, &req, "");
        assert_eq!(
            e.message,
            "configmaps is forbidden: User \"bob\" cannot list resource \"configmaps\" in API group \"\" in the namespace \"default\""
        );
        let req = parse_request_info("DELETE", "/apis/apps/v1/namespaces/a/deployments/web", false);
        assert_eq!(
            forbidden(&user, &req, "RBAC: role.rbac.authorization.k8s.io \"x\" not found").message,
            "deployments.apps \"web\" is forbidden: User \"bob\" cannot delete resource \"deployments\" in API group \"apps\" in the namespace \"a\": RBAC: role.rbac.authorization.k8s.io \"x\" not found"
        );
        let req = parse_request_info("GET", "/metrics", false);
        assert_eq!(forbidden(&user, &req, "").message, "forbidden: User \"bob\" cannot get path \"/metrics\"");
    }

    #[test]
    fn modes_decide_in_order_after_system_masters() {
        let policy = SharedPolicy::default();
        let bob = UserInfo { name: "bob".into(), ..Default::default() };
        let req = parse_request_info("GET", "/api/v1/namespaces/a/pods", false);
        let a = Attributes::of(bob.clone(), &req);
        assert!(!decide(&[AuthorizationMode::Rbac], &policy, &a).allowed);
        assert!(decide(&[AuthorizationMode::Rbac, AuthorizationMode::AlwaysAllow], &policy, &a).allowed);
        let deny = decide(&[AuthorizationMode::AlwaysDeny, AuthorizationMode::AlwaysAllow], &policy, &a);
        assert!(!deny.allowed && deny.denied);
        assert_eq!(deny.reason, "Everything is forbidden.");
        let admin = UserInfo { name: "root".into(), groups: vec!["system:masters".into()], ..Default::default() };
        assert!(decide(&[AuthorizationMode::AlwaysDeny], &policy, &Attributes::of(admin, &req)).allowed);

        policy.write().unwrap().apply(
            RbacKind::RoleBinding,
            &json!({"metadata": {"name": "b", "namespace": "a"}, "roleRef": {"kind": "ClusterRole", "name": "missing"},
                    "subjects": [{"kind": "User", "name": "bob"}]}),
            true,
        );
        let d = decide(&[AuthorizationMode::Rbac], &policy, &a);
        assert_eq!(d.reason, "RBAC: clusterrole.rbac.authorization.k8s.io \"missing\" not found");
        assert_eq!(
            parse_modes("Node,RBAC").unwrap_err(),
            "authorization mode \"Node\" is not one of AlwaysAllow, AlwaysDeny, RBAC"
        );
        assert!(parse_modes("RBAC,RBAC").is_err());
    }
}
