//! The authentication and authorization stages, and the filters kube runs between them.
//!
//! kube's handler chain, which the gateway follows: authentication, audit, impersonation, API
//! Priority and Fairness, authorization, then the handler.
//!
//! # Layout
//! - [`authn`]: the authentication stage (client certificates, token authenticators in
//!   order, anonymous).
//! - [`serviceaccount`]: ServiceAccount tokens: keys, issuing, verification.
//! - [`authz`]: the authorization stage: `--authorization-mode`'s authorizers in order.
//! - [`rbac`]: Roles and bindings held in memory, indexed by subject; fed from the RBAC
//!   cachers by the gateway, never read from storage per request.
//! - [`bootstrap`]: the ClusterRoles and ClusterRoleBindings kube creates at first start.
//! - [`escalation`]: roles and bindings grant only what their writer holds.
//! - [`reconcile`]: the bootstrap RBAC objects reconciled at every start (missing ones created,
//!   existing ones given what they lack, `autoupdate: "false"` left alone).
//! - [`audit`]: kube's audit: the policy, the events at each stage, the log and webhook
//!   backends; a request never waits for it.
//! - [`impersonation`]: the `Impersonate-*` headers, each authorized, replacing the user.
//! - [`ttl_cache`]: the token and authorization webhooks' answers kept for their TTL.

use apimachinery::request::{RequestInfo, UserInfo};

pub mod audit;
pub mod authn;
pub mod authz;
pub mod bootstrap;
pub mod escalation;
pub mod impersonation;
pub mod metrics;
pub mod rbac;
pub mod reconcile;
pub mod serviceaccount;
pub mod ttl_cache;

pub use authn::{AuthenticationActor, StaticTokens, TokenAuthenticator, load_token_file};
pub use authz::{AuthorizationActor, AuthorizationMode, SharedPolicy, forbidden};

/// What an authorizer decides on: who asks to do what (kube's `authorizer.Attributes`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Attributes {
    /// Who asks.
    pub user: UserInfo,
    /// `get`, `list`, `create`, … or a non-resource request's lower-case HTTP method.
    pub verb: String,
    /// Whether it names a resource (else a path such as `/healthz`).
    pub is_resource_request: bool,
    /// The path of a non-resource request.
    pub path: String,
    /// The namespace, empty for cluster-scoped and all-namespace requests.
    pub namespace: String,
    /// The API group, empty for core.
    pub api_group: String,
    /// The API version.
    pub api_version: String,
    /// The plural resource.
    pub resource: String,
    /// The subresource, if any.
    pub subresource: String,
    /// The object's name, empty for collections; for a list or watch, the name its field
    /// selector pins, as kube's attributes have it.
    pub name: String,
}

impl Attributes {
    /// The attributes of `user` making `request`.
    pub fn of(user: UserInfo, request: &RequestInfo) -> Self {
        Attributes {
            user,
            verb: request.verb.clone(),
            is_resource_request: request.is_resource_request,
            path: request.path.clone(),
            namespace: request.namespace.clone(),
            api_group: request.api_group.clone(),
            api_version: request.api_version.clone(),
            resource: request.resource.clone(),
            subresource: request.subresource.clone(),
            name: request.authorized_name().to_string(),
        }
    }
}
