//! Actions: requests that act rather than store their body, as kube's `BindingREST`,
//! `EvictionREST` and the review REST storages do, and the reads of resources stored nowhere
//! (ComponentStatus). A kind registers its actions in an [`Actions`] table, keyed by the
//! resource and subresource they serve; the gateway decodes the body, hands the action an
//! [`ActionContext`] over the stages, and answers what it returns. So no handler asks which
//! kind it serves.
//!
//! The table sits beside the catalogue rather than in each kind's strategy because an action
//! speaks in messages and options, which themselves name the catalogue's definitions.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;

use crate::catalogue::{Catalogue, ResourceDef, Subresource};
use crate::error::ApiError;
use crate::messages::{Authenticated, AuthorizationDecision, Credentials, Target};
use crate::options::{DeleteOptions, Params, WriteOptions};
use crate::request::{RequestInfo, UserInfo};

/// What an action may do: read and write objects through the stages, as the requesting user
/// and within the request's deadline, exactly as the user's own requests would (authorization
/// of the action itself happened before it ran); ask the server's authorizers and
/// authenticators (the reviews); dial an address and probe the storage backends
/// (ComponentStatus). Actions run on the request's own task, so
/// their futures need not be `Send`.
#[async_trait(?Send)]
pub trait ActionContext {
    /// The served resources, to find the other kinds an action touches.
    fn catalogue(&self) -> &Catalogue;

    /// The request's query parameters (`dryRun`, the delete options of an eviction).
    fn query(&self) -> &Params;

    /// The object `target` names, as last written.
    async fn get(&self, target: &Target) -> Result<Value, ApiError>;

    /// Every object of the collection `target` names, as last written.
    async fn list(&self, target: &Target) -> Result<Vec<Value>, ApiError>;

    /// Updates the object `target` names (or its subresource) to `object`.
    async fn update(&self, target: Target, object: Value, options: WriteOptions) -> Result<(), ApiError>;

    /// Deletes the object `target` names.
    async fn delete(&self, target: Target, options: DeleteOptions) -> Result<(), ApiError>;

    /// The user the request acts for.
    fn user(&self) -> &UserInfo;

    /// What the server's authorizers decide for `user` doing what `attributes` describe (the
    /// access reviews ask about users other than the requester).
    async fn authorize(&self, user: UserInfo, attributes: RequestInfo) -> Result<AuthorizationDecision, ApiError>;

    /// Who `credentials` belong to, as the server's authenticators say (a TokenReview).
    async fn authenticate(&self, credentials: Credentials) -> Result<Authenticated, ApiError>;

    /// The rules `user` holds in `namespace` (all namespaces for `""`), each in RBAC's
    /// `PolicyRule` JSON form, and the errors of authorizers that could not say (which may have
    /// hidden some rules): a SelfSubjectRulesReview.
    fn rules(&self, user: &UserInfo, namespace: &str) -> (Vec<Value>, Vec<String>);

    /// Opens (and closes) a TCP connection to `address` (`host:port`), within a few seconds;
    /// the error is worded as Go's dialer words it (`dial tcp <address>: connect: connection
    /// refused`), which kube's messages quote.
    async fn dial(&self, address: &str) -> Result<(), String>;

    /// Whether each storage backend answers, in the order the server lists them (a
    /// ComponentStatus per etcd): its error, or that it did not answer in time.
    async fn storage_health(&self) -> Vec<Result<(), String>>;
}

/// What a resource's verbs do when they act instead of reading or writing stored objects. The
/// resource's verbs (`ResourceDef::by_gateway`) say which of these the gateway calls; the
/// others answer 405.
#[async_trait(?Send)]
pub trait Action: Send + Sync {
    /// A `create` that acts: `body` is the decoded request body (a Binding, an Eviction, a
    /// review), `target` the object the URL names (for a collection, the namespace only).
    /// Returns the object the client gets back with `201 Created`.
    async fn create(&self, _ctx: &dyn ActionContext, _target: Target, _body: Value) -> Result<Value, ApiError> {
        Err(ApiError::method_not_allowed())
    }

    /// A `list` of objects made on request (ComponentStatus probes its components): every
    /// item in full, `kind` and `apiVersion` included.
    async fn list(&self, _ctx: &dyn ActionContext, _target: &Target) -> Result<Vec<Value>, ApiError> {
        Err(ApiError::method_not_allowed())
    }

    /// A `get` of one such object: by default the [`Action::list`] item of that name, else 404.
    async fn get(&self, ctx: &dyn ActionContext, target: &Target) -> Result<Value, ApiError> {
        let items = self.list(ctx, target).await?;
        let name = |o: &Value| o.pointer("/metadata/name").and_then(Value::as_str) == Some(target.name.as_str());
        items.into_iter().find(name).ok_or_else(|| ApiError::not_found(&target.group, &target.resource, &target.name))
    }
}

/// `{"kind":"Status","status":"Success","code":201}`: what kube answers a binding or an
/// eviction.
pub fn created() -> Value {
    serde_json::json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201})
}

/// Every action, by the group, resource and subresource (`None`: the resource itself) whose
/// `create` runs it. A handful of entries, searched in place: a lookup allocates nothing.
#[derive(Clone, Default)]
pub struct Actions {
    entries: Vec<Entry>,
}

/// One registered action: group, resource, subresource, and the action.
type Entry = (String, String, Option<Subresource>, Arc<dyn Action>);

impl Actions {
    /// Registers `action` for `create` of `group`/`resource`, or of its `subresource`.
    pub fn insert(&mut self, group: &str, resource: &str, subresource: Option<Subresource>, action: Arc<dyn Action>) {
        self.entries.retain(|(g, r, s, _)| (g.as_str(), r.as_str(), *s) != (group, resource, subresource));
        self.entries.push((group.to_string(), resource.to_string(), subresource, action));
    }

    /// The action a `create` of `def` (or of its `subresource`) runs, if it has one.
    pub fn find(&self, def: &ResourceDef, subresource: Option<Subresource>) -> Option<&dyn Action> {
        self.entries
            .iter()
            .find(|(g, r, s, _)| *g == def.group && *r == def.resource && *s == subresource)
            .map(|(_, _, _, a)| a.as_ref())
    }
}
