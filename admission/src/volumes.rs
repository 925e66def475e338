//! Volume safety at admission: kube's `StorageObjectInUseProtection` (claims and volumes get
//! the finalizer that keeps them while in use) and `PersistentVolumeClaimResize` (a claim
//! grows only if its StorageClass allows expansion).

use std::sync::Arc;

use apimachinery::error::ApiError;
use apimachinery::lookup::ObjectLookup;
use apimachinery::messages::{Admit, Operation};
use async_trait::async_trait;
use kube_cel::quantity;
use serde_json::{Value, json};

use crate::attributes::forbidden;
use crate::{AdmissionPlugin, Review, on};

/// Adds `kubernetes.io/pvc-protection` to new claims and `kubernetes.io/pv-protection` to new
/// volumes.
pub struct StorageObjectInUseProtection;

#[async_trait(?Send)]
impl AdmissionPlugin for StorageObjectInUseProtection {
    fn name(&self) -> &'static str {
        "StorageObjectInUseProtection"
    }

    fn mutates(&self) -> bool {
        true
    }

    async fn mutate(&self, request: &Admit, object: &mut Value, _: &mut Review) -> Result<(), ApiError> {
        if request.operation != Operation::Create {
            return Ok(());
        }
        let finalizer = if on(request, "", "persistentvolumeclaims") {
            "kubernetes.io/pvc-protection"
        } else if on(request, "", "persistentvolumes") {
            "kubernetes.io/pv-protection"
        } else {
            return Ok(());
        };
        let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) else { return Ok(()) };
        let list = meta.entry("finalizers").or_insert_with(|| json!([]));
        if list.is_null() {
            *list = json!([]);
        }
        if let Some(list) = list.as_array_mut().filter(|l| !l.iter().any(|f| f == finalizer)) {
            list.push(json!(finalizer));
        }
        Ok(())
    }
}

/// Refuses growing a claim unless it is bound and its StorageClass allows volume expansion.
pub struct PersistentVolumeClaimResize {
    objects: Arc<dyn ObjectLookup>,
}

impl PersistentVolumeClaimResize {
    /// The plugin reading StorageClasses through `objects`.
    pub fn new(objects: Arc<dyn ObjectLookup>) -> Self {
        PersistentVolumeClaimResize { objects }
    }

    async fn may_expand(&self, claim: &Value, old: &Value) -> Result<bool, ApiError> {
        let class = |c: &Value| c.pointer("/spec/storageClassName").and_then(Value::as_str).unwrap_or("").to_string();
        let (new_class, old_class) = (class(claim), class(old));
        if new_class.is_empty() || new_class != old_class {
            return Ok(false);
        }
        let Some(sc) = self.objects.get("storage.k8s.io", "storageclasses", "", &new_class).await? else {
            return Ok(false);
        };
        Ok(sc.get("allowVolumeExpansion").and_then(Value::as_bool) == Some(true))
    }
}

fn requested_storage(claim: &Value) -> i128 {
    claim.pointer("/spec/resources/requests/storage").and_then(|q| quantity::from_json(q).ok()).map_or(0, |q| q.nanos)
}

#[async_trait(?Send)]
impl AdmissionPlugin for PersistentVolumeClaimResize {
    fn name(&self) -> &'static str {
        "PersistentVolumeClaimResize"
    }

    fn validates(&self) -> bool {
        true
    }

    async fn validate(&self, request: &Admit, claim: &Value, _: &mut Review) -> Result<(), ApiError> {
        let Some(old) = request.old_object.as_deref() else { return Ok(()) };
        if request.operation != Operation::Update || !on(request, "", "persistentvolumeclaims") {
            return Ok(());
        }
        if requested_storage(claim) <= requested_storage(old) {
            return Ok(());
        }
        if old.pointer("/status/phase").and_then(Value::as_str) != Some("Bound") {
            return Err(forbidden(request, claim, "Only bound persistent volume claims can be expanded"));
        }
        if !self.may_expand(claim, old).await? {
            return Err(forbidden(
                request,
                claim,
                "only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must support resize",
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{Objects, admit};

    #[tokio::test]
    async fn new_claims_and_volumes_get_their_protection_finalizer_once() {
        for (resource, finalizer) in [
            ("persistentvolumeclaims", "kubernetes.io/pvc-protection"),
            ("persistentvolumes", "kubernetes.io/pv-protection"),
        ] {
            let request =
                admit(Operation::Create, "", resource, json!({"metadata": {"name": "v", "finalizers": ["x"]}}));
            let mut object = request.object.clone();
            StorageObjectInUseProtection.mutate(&request, &mut object, &mut Review::default()).await.unwrap();
            assert_eq!(object["metadata"]["finalizers"], json!(["x", finalizer]));
            let again = object.clone();
            StorageObjectInUseProtection.mutate(&request, &mut object, &mut Review::default()).await.unwrap();
            assert_eq!(object, again);
        }
    }

    fn claim(size: &str, phase: &str) -> Value {
        json!({"metadata": {"name": "c"}, "spec": {"storageClassName": "fast", "resources": {"requests": {"storage": size}}}, "status": {"phase": phase}})
    }

    async fn grow(expandable: bool, phase: &str, from: &str, to: &str) -> Result<(), ApiError> {
        let sc = json!({"metadata": {"name": "fast"}, "allowVolumeExpansion": expandable});
        let plugin = PersistentVolumeClaimResize::new(Arc::new(Objects::default().with(
            "storage.k8s.io",
            "storageclasses",
            "",
            sc,
        )));
        let mut request = admit(Operation::Update, "", "persistentvolumeclaims", claim(to, phase));
        request.old_object = Some(claim(from, phase).into());
        let object = request.object.clone();
        plugin.validate(&request, &object, &mut Review::default()).await
    }

    #[tokio::test]
    async fn a_claim_grows_only_bound_and_where_its_class_allows() {
        grow(true, "Bound", "1Gi", "2Gi").await.expect("an expandable class");
        grow(false, "Bound", "2Gi", "1024Mi").await.expect("not growing is not resizing");
        let e = grow(false, "Bound", "1Gi", "2Gi").await.unwrap_err();
        assert_eq!(e.code, 403);
        assert_eq!(
            e.message,
            "persistentvolumeclaims \"c\" is forbidden: only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must support resize"
        );
        let e = grow(true, "Pending", "1Gi", "2Gi").await.unwrap_err();
        assert!(e.message.ends_with("Only bound persistent volume claims can be expanded"));
    }
}
