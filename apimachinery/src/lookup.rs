//! Reads of single objects for the stages that consult other objects while deciding (the
//! authenticator checks that a token's ServiceAccount still exists, admission plugins read
//! namespaces and ServiceAccounts). The server wires in its cachers, so none of these is a
//! storage read per request.

use async_trait::async_trait;
use serde_json::Value;

use crate::error::ApiError;

/// Reads one object by group, plural resource, namespace and name.
#[async_trait]
pub trait ObjectLookup: Send + Sync {
    /// The object, or `None` if it does not exist.
    async fn get(&self, group: &str, resource: &str, namespace: &str, name: &str) -> Result<Option<Value>, ApiError>;

    /// The objects in `namespace` (every namespace when empty) matching `field_selector`
    /// (`spec.nodeName=n1`; empty for all). Lookups that only get refuse it.
    async fn list(
        &self,
        group: &str,
        resource: &str,
        namespace: &str,
        field_selector: &str,
    ) -> Result<Vec<Value>, ApiError> {
        let _ = (group, namespace, field_selector);
        Err(ApiError::internal(format!("this lookup does not list {resource}")))
    }

    /// The plural resource serving `kind` of `group`/`version` and whether it is namespaced
    /// (kube's REST mapping), for plugins that are given a kind rather than a resource (a
    /// policy's `paramKind`). `None` when no served resource has that kind.
    fn resource_for_kind(&self, group: &str, version: &str, kind: &str) -> Option<KindResource> {
        let _ = (group, version, kind);
        None
    }
}

/// Where a kind is served: [`ObjectLookup::resource_for_kind`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KindResource {
    /// The plural resource (`configmaps`).
    pub resource: String,
    /// Whether its objects live in namespaces.
    pub namespaced: bool,
}
