//! kube's `NamespaceLifecycle` plugin.

use std::sync::Arc;

use apimachinery::error::ApiError;
use apimachinery::messages::{Admit, Operation};
use async_trait::async_trait;
use serde_json::Value;

use apimachinery::lookup::ObjectLookup;

use crate::{AdmissionPlugin, Review};

/// Namespaces that always exist and may not be deleted.
const IMMORTAL: &[&str] = &["default", "kube-system", "kube-public"];

/// Refuses new objects in missing or terminating namespaces and the deletion of system
/// namespaces.
pub struct NamespaceLifecycle {
    namespaces: Arc<dyn ObjectLookup>,
}

impl NamespaceLifecycle {
    /// The plugin reading namespaces through `namespaces`.
    pub fn new(namespaces: Arc<dyn ObjectLookup>) -> Self {
        NamespaceLifecycle { namespaces }
    }
}

#[async_trait(?Send)]
impl AdmissionPlugin for NamespaceLifecycle {
    fn name(&self) -> &'static str {
        "NamespaceLifecycle"
    }

    /// kube's plugin is a mutating one that changes nothing: its refusals come before the
    /// kind's validation (a create in a missing namespace is 404, however invalid).
    fn mutates(&self) -> bool {
        true
    }

    async fn mutate(&self, request: &Admit, object: &mut Value, _: &mut Review) -> Result<(), ApiError> {
        let t = &request.target;
        let is_namespace = t.group.is_empty() && t.resource == "namespaces";
        if is_namespace && request.operation == Operation::Delete && IMMORTAL.contains(&t.name.as_str()) {
            return Err(ApiError::forbidden("", "namespaces", &t.name, "this namespace may not be deleted"));
        }
        if request.operation != Operation::Create || is_namespace || t.namespace.is_empty() {
            return Ok(());
        }
        let Some(ns) = crate::namespaces::lookup(self.namespaces.as_ref(), &t.namespace).await? else {
            return Err(ApiError::not_found("", "namespaces", &t.namespace));
        };
        if ns.phase() == Some("Terminating") {
            let name = object.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("");
            return Err(ApiError::forbidden(
                &t.group,
                &t.resource,
                name,
                &format!("unable to create new content in namespace {} because it is being terminated", t.namespace),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{Objects, admit};
    use serde_json::json;

    /// A ConfigMap create in `ns`.
    fn create_cm(ns: &str) -> Admit {
        let mut request = admit(Operation::Create, "", "configmaps", json!({"metadata": {"name": "c"}}));
        request.target.namespace = ns.into();
        request
    }

    #[tokio::test]
    async fn missing_namespace_is_not_found() {
        let p = NamespaceLifecycle::new(Arc::new(Objects::default()));
        let e = p.mutate(&create_cm("nope"), &mut json!({}), &mut Review::default()).await.unwrap_err();
        assert_eq!((e.code, e.message.as_str()), (404, "namespaces \"nope\" not found"));
    }

    #[tokio::test]
    async fn terminating_namespace_refuses_new_content() {
        let old = json!({"metadata": {"name": "old"}, "status": {"phase": "Terminating"}});
        let p = NamespaceLifecycle::new(Arc::new(Objects::default().with("", "namespaces", "", old)));
        let req = create_cm("old");
        let e = p.mutate(&req, &mut req.object.clone(), &mut Review::default()).await.unwrap_err();
        assert_eq!(e.code, 403);
        assert_eq!(
            e.message,
            "configmaps \"c\" is forbidden: unable to create new content in namespace old because it is being terminated"
        );
        let active = json!({"metadata": {"name": "new"}, "status": {"phase": "Active"}});
        let p = NamespaceLifecycle::new(Arc::new(Objects::default().with("", "namespaces", "", active)));
        let req = create_cm("new");
        p.mutate(&req, &mut req.object.clone(), &mut Review::default()).await.unwrap();
    }

    #[tokio::test]
    async fn system_namespaces_cannot_be_deleted() {
        let p = NamespaceLifecycle::new(Arc::new(Objects::default()));
        let mut req = create_cm("");
        req.operation = Operation::Delete;
        req.target.resource = "namespaces".into();
        req.target.name = "kube-system".into();
        let e = p.mutate(&req, &mut json!({}), &mut Review::default()).await.unwrap_err();
        assert_eq!(e.message, "namespaces \"kube-system\" is forbidden: this namespace may not be deleted");
    }
}
