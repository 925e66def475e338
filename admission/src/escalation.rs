//! RBAC escalation prevention in the write path, first in the admission chain (its mutating
//! phase), as kube checks it in its RBAC storage before admission: a Role or ClusterRole whose
//! rules the writer does not hold is refused unless the writer may `escalate` it, a binding to
//! such a role unless the writer may `bind` it. What the writer holds is the authorizer's to
//! say: the check itself is the auth stage's (`RoleEscalation`), wired in by the server.

use std::sync::Arc;

use apimachinery::error::ApiError;
use apimachinery::lookup::RoleEscalation;
use apimachinery::messages::Admit;
use async_trait::async_trait;
use serde_json::Value;

/// The plugin, over the authorizer's check.
pub struct RbacEscalation(pub Arc<dyn RoleEscalation>);

#[async_trait(?Send)]
impl crate::AdmissionPlugin for RbacEscalation {
    fn name(&self) -> &'static str {
        "RBACEscalation"
    }

    /// In the mutating phase, first: kube's RBAC storage checks before its store admits or
    /// validates anything, so a writer without the rules gets this 403 before a 404 for a
    /// missing namespace or a 422 for an invalid role. It changes nothing.
    fn mutates(&self) -> bool {
        true
    }

    async fn mutate(&self, request: &Admit, object: &mut Value, _: &mut crate::Review) -> Result<(), ApiError> {
        self.0.check(request, object)
    }
}
