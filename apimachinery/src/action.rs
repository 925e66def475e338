//! Actions: requests that act on objects rather than store their body, as kube's `BindingREST`
//! and `EvictionREST` do. A kind registers its actions in an [`Actions`] table, keyed by the
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
use crate::messages::Target;
use crate::options::{DeleteOptions, Params, WriteOptions};

/// What an action may do: read and write objects through the stages, as the requesting user
/// and within the request's deadline, exactly as the user's own requests would (authorization
/// of the action itself happened before it ran). Actions run on the request's own task, so
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
}

/// A `create` that acts: `body` is the decoded request body (a Binding, an Eviction), `target`
/// the object the URL names (for a collection, the namespace only). Returns the object the
/// client gets back with `201 Created`.
#[async_trait(?Send)]
pub trait Action: Send + Sync {
    /// Runs the action.
    async fn create(&self, ctx: &dyn ActionContext, target: Target, body: Value) -> Result<Value, ApiError>;
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
