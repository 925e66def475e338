//! Reads of single objects for the stages that consult other objects while deciding (the
//! authenticator checks that a token's ServiceAccount still exists, admission plugins read
//! namespaces and ServiceAccounts). The server wires in its cachers, so none of these is a
//! storage read per request.

use async_trait::async_trait;
use serde_json::Value;

use crate::error::ApiError;
use crate::request::{RequestInfo, UserInfo};

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
}

/// Asks the server's authorizers whether a user may do something other than the request at
/// hand: kube hands admission plugins its authorizer so that, say, approving a certificate
/// request needs `approve` on the request's signer.
#[async_trait]
pub trait AccessCheck: Send + Sync {
    /// Whether `user` may do what `attributes` describe (verb, group, resource, name).
    async fn allowed(&self, user: &UserInfo, attributes: RequestInfo) -> Result<bool, ApiError>;
}
