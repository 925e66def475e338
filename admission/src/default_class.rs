//! Default classes picked at admission: kube's `DefaultStorageClass` (a claim naming no
//! StorageClass gets the default one) and `DefaultIngressClass` (an Ingress naming no class
//! gets the default IngressClass).

use std::sync::Arc;

use apimachinery::error::ApiError;
use apimachinery::lookup::ObjectLookup;
use apimachinery::messages::{Admit, Operation};
use apimachinery::object::ObjectExt;
use async_trait::async_trait;
use serde_json::{Value, json};

use crate::{AdmissionPlugin, Review, on};

/// The class marked default by one of `annotations` (value `"true"`); when several are, the
/// newest, then the first by name (kube 1.30's choice, which lets a new default take over
/// without a window with none).
fn newest_default(classes: Vec<Value>, annotations: &[&str]) -> Option<Value> {
    let is_default = |c: &Value| {
        let marks = c.pointer("/metadata/annotations");
        annotations.iter().any(|a| marks.and_then(|m| m.get(*a)).and_then(Value::as_str) == Some("true"))
    };
    let created =
        |c: &Value| c.pointer("/metadata/creationTimestamp").and_then(Value::as_str).unwrap_or("").to_string();
    classes
        .into_iter()
        .filter(is_default)
        .max_by(|a, b| created(a).cmp(&created(b)).then_with(|| b.name().cmp(a.name())))
}

/// Sets `spec.storageClassName` of new claims that name none.
pub struct DefaultStorageClass {
    objects: Arc<dyn ObjectLookup>,
}

impl DefaultStorageClass {
    /// The plugin reading StorageClasses through `objects`.
    pub fn new(objects: Arc<dyn ObjectLookup>) -> Self {
        DefaultStorageClass { objects }
    }
}

#[async_trait(?Send)]
impl AdmissionPlugin for DefaultStorageClass {
    fn name(&self) -> &'static str {
        "DefaultStorageClass"
    }

    fn mutates(&self) -> bool {
        true
    }

    async fn mutate(&self, request: &Admit, claim: &mut Value, _: &mut Review) -> Result<(), ApiError> {
        if request.operation != Operation::Create || !on(request, "", "persistentvolumeclaims") {
            return Ok(());
        }
        // A class given, even "" (no class), or the beta annotation, is the client's choice.
        let beta = claim.pointer("/metadata/annotations/volume.beta.kubernetes.io~1storage-class").is_some();
        if beta || claim.pointer("/spec/storageClassName").is_some_and(|c| !c.is_null()) {
            return Ok(());
        }
        let classes = self.objects.list("storage.k8s.io", "storageclasses", "", "").await?;
        let marks = ["storageclass.kubernetes.io/is-default-class", "storageclass.beta.kubernetes.io/is-default-class"];
        if let (Some(class), Some(spec)) = (newest_default(classes, &marks), claim.get_mut("spec")) {
            spec["storageClassName"] = json!(class.name());
        }
        Ok(())
    }
}

/// Sets `spec.ingressClassName` of new Ingresses that name no class.
pub struct DefaultIngressClass {
    objects: Arc<dyn ObjectLookup>,
}

impl DefaultIngressClass {
    /// The plugin reading IngressClasses through `objects`.
    pub fn new(objects: Arc<dyn ObjectLookup>) -> Self {
        DefaultIngressClass { objects }
    }
}

#[async_trait(?Send)]
impl AdmissionPlugin for DefaultIngressClass {
    fn name(&self) -> &'static str {
        "DefaultIngressClass"
    }

    fn mutates(&self) -> bool {
        true
    }

    async fn mutate(&self, request: &Admit, ingress: &mut Value, _: &mut Review) -> Result<(), ApiError> {
        if request.operation != Operation::Create || !on(request, "networking.k8s.io", "ingresses") {
            return Ok(());
        }
        let annotated = ingress.pointer("/metadata/annotations/kubernetes.io~1ingress.class").is_some();
        if annotated || ingress.pointer("/spec/ingressClassName").is_some_and(|c| !c.is_null()) {
            return Ok(());
        }
        let classes = self.objects.list("networking.k8s.io", "ingressclasses", "", "").await?;
        if let Some(class) = newest_default(classes, &["ingressclass.kubernetes.io/is-default-class"]) {
            let Some(object) = ingress.as_object_mut() else { return Ok(()) };
            let spec = object.entry("spec").or_insert_with(|| json!({}));
            spec["ingressClassName"] = json!(class.name());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{Objects, admit};

    fn class(name: &str, created: &str, default: bool, mark: &str) -> Value {
        let annotations = if default { json!({mark: "true"}) } else { json!({}) };
        json!({"metadata": {"name": name, "creationTimestamp": created, "annotations": annotations}})
    }

    const SC_MARK: &str = "storageclass.kubernetes.io/is-default-class";

    async fn claim_class(objects: Objects, claim: Value) -> Value {
        let plugin = DefaultStorageClass::new(Arc::new(objects));
        let request = admit(Operation::Create, "", "persistentvolumeclaims", claim);
        let mut object = request.object.clone();
        plugin.mutate(&request, &mut object, &mut Review::default()).await.unwrap();
        object["spec"]["storageClassName"].clone()
    }

    #[tokio::test]
    async fn a_claim_without_a_class_gets_the_newest_default() {
        let objects = Objects::default()
            .with("storage.k8s.io", "storageclasses", "", class("old", "2026-01-01T00:00:00Z", true, SC_MARK))
            .with("storage.k8s.io", "storageclasses", "", class("new", "2026-02-01T00:00:00Z", true, SC_MARK))
            .with("storage.k8s.io", "storageclasses", "", class("newest", "2026-03-01T00:00:00Z", false, SC_MARK));
        let claim = json!({"metadata": {"name": "c"}, "spec": {}});
        assert_eq!(claim_class(objects, claim).await, "new");
    }

    #[tokio::test]
    async fn a_named_or_empty_class_is_left_alone() {
        let objects = || {
            Objects::default().with(
                "storage.k8s.io",
                "storageclasses",
                "",
                class("d", "2026-01-01T00:00:00Z", true, SC_MARK),
            )
        };
        assert_eq!(
            claim_class(objects(), json!({"metadata": {"name": "c"}, "spec": {"storageClassName": ""}})).await,
            ""
        );
        assert_eq!(
            claim_class(objects(), json!({"metadata": {"name": "c"}, "spec": {"storageClassName": "x"}})).await,
            "x"
        );
        assert_eq!(
            claim_class(Objects::default(), json!({"metadata": {"name": "c"}, "spec": {}})).await,
            Value::Null,
            "no default, no class"
        );
    }

    #[tokio::test]
    async fn an_ingress_without_a_class_gets_the_default_one() {
        let mark = "ingressclass.kubernetes.io/is-default-class";
        let objects = Objects::default()
            .with("networking.k8s.io", "ingressclasses", "", class("b", "2026-01-01T00:00:00Z", true, mark))
            .with("networking.k8s.io", "ingressclasses", "", class("a", "2026-01-01T00:00:00Z", true, mark));
        let plugin = DefaultIngressClass::new(Arc::new(objects));
        let request = admit(Operation::Create, "networking.k8s.io", "ingresses", json!({"metadata": {"name": "i"}}));
        let mut object = request.object.clone();
        plugin.mutate(&request, &mut object, &mut Review::default()).await.unwrap();
        assert_eq!(object["spec"]["ingressClassName"], "a", "same age: the first by name");
        let annotated = json!({"metadata": {"name": "i", "annotations": {"kubernetes.io/ingress.class": "nginx"}}});
        let request = admit(Operation::Create, "networking.k8s.io", "ingresses", annotated.clone());
        let mut object = request.object.clone();
        plugin.mutate(&request, &mut object, &mut Review::default()).await.unwrap();
        assert_eq!(object, annotated);
    }
}
