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
        let Some(ns) = self.namespaces.get("", "namespaces", "", &t.namespace).await? else {
            return Err(ApiError::not_found("", "namespaces", &t.namespace));
        };
        if ns.pointer("/status/phase").and_then(Value::as_str) == Some("Terminating") {
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
    use apimachinery::messages::Target;
    use apimachinery::request::UserInfo;
    use serde_json::json;

    struct Fixed(Option<Value>);

    #[async_trait]
    impl ObjectLookup for Fixed {
        async fn get(&self, _: &str, _: &str, _: &str, _: &str) -> Result<Option<Value>, ApiError> {
            Ok(self.0.clone())
        }
    }

    fn create_cm(ns: &str) -> Admit {
        Admit {
            phase: apimachinery::messages::AdmissionPhase::Mutating,
            operation: Operation::Create,
            target: Target {
                version: "v1".into(),
                resource: "configmaps".into(),
                namespace: ns.into(),
                ..Default::default()
            },
            user: UserInfo::default(),
            object: json!({"metadata": {"name": "c"}}),
            old_object: None,
            dry_run: false,
            options: Value::Null,
        }
    }

    #[tokio::test]
    async fn missing_namespace_is_not_found() {
        let p = NamespaceLifecycle::new(Arc::new(Fixed(None)));
        let e = p.mutate(&create_cm("nope"), &mut json!({}), &mut Review::default()).await.unwrap_err();
        assert_eq!((e.code, e.message.as_str()), (404, "namespaces \"nope\" not found"));
    }

    #[tokio::test]
    async fn terminating_namespace_refuses_new_content() {
        let p = NamespaceLifecycle::new(Arc::new(Fixed(Some(json!({"status": {"phase": "Terminating"}})))));
        let req = create_cm("old");
        let e = p.mutate(&req, &mut req.object.clone(), &mut Review::default()).await.unwrap_err();
        assert_eq!(e.code, 403);
        assert_eq!(
            e.message,
            "configmaps \"c\" is forbidden: unable to create new content in namespace old because it is being terminated"
        );
    }

    #[tokio::test]
    async fn system_namespaces_cannot_be_deleted() {
        let p = NamespaceLifecycle::new(Arc::new(Fixed(None)));
        let mut req = create_cm("");
        req.operation = Operation::Delete;
        req.target.resource = "namespaces".into();
        req.target.name = "kube-system".into();
        let e = p.mutate(&req, &mut json!({}), &mut Review::default()).await.unwrap_err();
        assert_eq!(e.message, "namespaces \"kube-system\" is forbidden: this namespace may not be deleted");
    }
}
