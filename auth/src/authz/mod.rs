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
use crate::metrics::AUTHORIZATION_DECISIONS_TOTAL;
use crate::rbac::Policy;

pub mod node;
pub mod webhook;

pub use node::{NodeAuthorizer, NodeVerdict};
pub use webhook::{Verdict, WebhookAuthorizer};

/// One authorizer of `--authorization-mode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AuthorizationMode {
    /// Every request is allowed.
    AlwaysAllow,
    /// Every request is denied.
    AlwaysDeny,
    /// Roles and bindings, from the [`Policy`] the RBAC cachers feed.
    Rbac,
    /// Kubelets: their node's objects, and the `system:node` role's rules ([`node`]).
    Node,
    /// A remote service answering SubjectAccessReviews ([`webhook`]).
    Webhook,
}

impl std::str::FromStr for AuthorizationMode {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "AlwaysAllow" => Ok(AuthorizationMode::AlwaysAllow),
            "AlwaysDeny" => Ok(AuthorizationMode::AlwaysDeny),
            "RBAC" => Ok(AuthorizationMode::Rbac),
            "Node" => Ok(AuthorizationMode::Node),
            "Webhook" => Ok(AuthorizationMode::Webhook),
            other => {
                Err(format!("authorization mode {other:?} is not one of AlwaysAllow, AlwaysDeny, Node, RBAC, Webhook"))
            }
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

/// The decision of the in-memory authorizers of `modes` for `a` (Node and Webhook, which may
/// wait, have no opinion here: [`Authorizers::decide`] asks them).
pub fn decide(modes: &[AuthorizationMode], policy: &SharedPolicy, a: &Attributes) -> AuthorizationDecision {
    decide_in_memory(modes, policy, a).0
}

/// [`decide`], with the mode that decided (none for `system:masters` or no opinion).
fn decide_in_memory(
    modes: &[AuthorizationMode],
    policy: &SharedPolicy,
    a: &Attributes,
) -> (AuthorizationDecision, Option<AuthorizationMode>) {
    if a.user.in_group("system:masters") {
        return (AuthorizationDecision { allowed: true, ..Default::default() }, None);
    }
    let mut reasons = Vec::new();
    for &mode in modes {
        match mode {
            AuthorizationMode::AlwaysAllow => {
                return (AuthorizationDecision { allowed: true, ..Default::default() }, Some(mode));
            }
            // kube's AlwaysDeny has no opinion, with a reason: later modes may still allow.
            AuthorizationMode::AlwaysDeny => reasons.push("Everything is forbidden.".to_string()),
            AuthorizationMode::Rbac => {
                let d = policy.read().unwrap_or_else(std::sync::PoisonError::into_inner).authorize(a);
                if d.allowed {
                    return (
                        AuthorizationDecision { allowed: true, reason: d.reason, ..Default::default() },
                        Some(mode),
                    );
                }
                match d.errors.as_slice() {
                    [] => {}
                    [one] => reasons.push(format!("RBAC: {one}")),
                    many => reasons.push(format!("RBAC: [{}]", many.join(", "))),
                }
            }
            // Decided by [`Authorizers::decide`], which can wait for them.
            AuthorizationMode::Node | AuthorizationMode::Webhook => {}
        }
    }
    (AuthorizationDecision { reason: reasons.join("\n"), ..Default::default() }, None)
}

/// `--authorization-mode`'s authorizers with what the remote and graph ones need.
pub struct Authorizers {
    /// The modes, in order.
    pub modes: Vec<AuthorizationMode>,
    /// The RBAC policy.
    pub policy: SharedPolicy,
    /// The Node authorizer, when `Node` is a mode.
    pub node: Option<Arc<NodeAuthorizer>>,
    /// The webhook, when `Webhook` is a mode.
    pub webhook: Option<Arc<WebhookAuthorizer>>,
}

impl Authorizers {
    /// Whether every mode decides in memory at once (no graph lookup, no webhook call).
    pub fn immediate(&self) -> bool {
        !self.modes.iter().any(|m| matches!(m, AuthorizationMode::Node | AuthorizationMode::Webhook))
    }

    /// Decides `a` with every mode, in order; returns the decision and the deciding mode.
    pub async fn decide(&self, a: &Attributes) -> (AuthorizationDecision, Option<AuthorizationMode>) {
        if a.user.in_group("system:masters") {
            return (AuthorizationDecision { allowed: true, ..Default::default() }, None);
        }
        let (mut reasons, mut errors) = (Vec::new(), Vec::new());
        for mode in &self.modes {
            let d = match mode {
                AuthorizationMode::Node => match &self.node {
                    Some(n) => match n.authorize(a).await {
                        NodeVerdict::Allow => AuthorizationDecision { allowed: true, ..Default::default() },
                        NodeVerdict::NoOpinion(why) => AuthorizationDecision { reason: why, ..Default::default() },
                    },
                    None => AuthorizationDecision::default(),
                },
                AuthorizationMode::Webhook => match &self.webhook {
                    Some(w) => match w.authorize(a).await {
                        Verdict::Allow(reason) => AuthorizationDecision { allowed: true, reason, ..Default::default() },
                        Verdict::Deny(reason) => AuthorizationDecision { denied: true, reason, ..Default::default() },
                        Verdict::NoOpinion(reason) => AuthorizationDecision { reason, ..Default::default() },
                        Verdict::Failed(error) => {
                            errors.push(error);
                            AuthorizationDecision::default()
                        }
                    },
                    None => AuthorizationDecision::default(),
                },
                local => decide(std::slice::from_ref(local), &self.policy, a),
            };
            if d.allowed || d.denied {
                return (d, Some(*mode));
            }
            if !d.reason.is_empty() {
                reasons.push(d.reason);
            }
        }
        let (reason, error) = (reasons.join("\n"), errors.join(", "));
        (AuthorizationDecision { allowed: false, denied: false, reason, error }, None)
    }
}

impl AuthorizationMode {
    /// The authorizer's type, as `apiserver_authorization_decisions_total` labels it.
    pub fn kind(self) -> &'static str {
        match self {
            AuthorizationMode::AlwaysAllow => "AlwaysAllow",
            AuthorizationMode::AlwaysDeny => "AlwaysDeny",
            AuthorizationMode::Rbac => "RBAC",
            AuthorizationMode::Node => "Node",
            AuthorizationMode::Webhook => "Webhook",
        }
    }
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
            AuthorizationMode::AlwaysDeny | AuthorizationMode::Node => {}
            AuthorizationMode::Webhook => {
                errors.push("webhook authorizer does not support user rule resolution".into())
            }
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
    /// Shared with decisions in flight, which outlive the handler call when they wait.
    authorizers: Arc<Authorizers>,
}

impl AuthorizationActor {
    /// A stage deciding with `authorizers`.
    pub fn new(authorizers: Arc<Authorizers>) -> Self {
        AuthorizationActor { authorizers }
    }
}

impl Actor for AuthorizationActor {
    type Context = Context<Self>;
}

fn count(decision: &AuthorizationDecision, mode: Option<AuthorizationMode>) {
    let label = if decision.allowed { "allowed" } else { "denied" };
    let kind = match (mode, decision.allowed) {
        (Some(m), _) => m.kind(),
        (None, true) => "SystemMasters",
        (None, false) => "",
    };
    metrics::counter!(AUTHORIZATION_DECISIONS_TOTAL, "type" => kind, "decision" => label).increment(1);
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
    ApiError::forbidden(&request.api_group, &request.resource, request.authorized_name(), &why)
}

impl StageHandler<Authorize> for AuthorizationActor {
    /// In-memory modes decide in the handler; Node and Webhook as a future on the stage's
    /// arbiter, the stage's slot held until they answer.
    fn handle(
        &mut self,
        msg: Authorize,
        _: Deadline,
        _: &mut Context<Self>,
    ) -> Work<Self, Result<AuthorizationDecision, ApiError>> {
        let Authorize { user, request } = msg;
        let a = Attributes::of(user, &request);
        let authorizers = self.authorizers.clone();
        if authorizers.immediate() {
            let (d, mode) = decide_in_memory(&authorizers.modes, &authorizers.policy, &a);
            count(&d, mode);
            return Work::Done(Ok(d));
        }
        Work::later(async move {
            let (d, mode) = authorizers.decide(&a).await;
            count(&d, mode);
            Ok(d)
        })
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
        assert!(decide(&[AuthorizationMode::AlwaysDeny, AuthorizationMode::AlwaysAllow], &policy, &a).allowed);
        let deny = decide(&[AuthorizationMode::AlwaysDeny], &policy, &a);
        assert!(!deny.allowed && !deny.denied, "kube's AlwaysDeny has no opinion");
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
            parse_modes("ABAC,RBAC").unwrap_err(),
            "authorization mode \"ABAC\" is not one of AlwaysAllow, AlwaysDeny, Node, RBAC, Webhook"
        );
        assert!(parse_modes("RBAC,RBAC").is_err());
    }
}
