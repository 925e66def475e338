//! kube's `RuntimeClass` plugin: a pod naming a RuntimeClass gets the class's pod overhead and
//! scheduling constraints, and a pod naming a missing class is refused.

use std::sync::Arc;

use apimachinery::error::ApiError;
use apimachinery::lookup::ObjectLookup;
use apimachinery::messages::{Admit, Operation};
use async_trait::async_trait;
use kube_cel::quantity;
use serde_json::{Map, Value, json};

use crate::attributes::forbidden;
use crate::{AdmissionPlugin, Review, on};

/// Applies RuntimeClasses read through the cache.
pub struct RuntimeClass {
    objects: Arc<dyn ObjectLookup>,
}

impl RuntimeClass {
    /// The plugin reading RuntimeClasses through `objects`.
    pub fn new(objects: Arc<dyn ObjectLookup>) -> Self {
        RuntimeClass { objects }
    }

    /// The class a new pod names, if it names one.
    async fn class_of(&self, request: &Admit, pod: &Value) -> Result<Option<Value>, ApiError> {
        if request.operation != Operation::Create || !on(request, "", "pods") {
            return Ok(None);
        }
        let Some(name) = pod.pointer("/spec/runtimeClassName").and_then(Value::as_str) else { return Ok(None) };
        match self.objects.get("node.k8s.io", "runtimeclasses", "", name).await? {
            Some(class) => Ok(Some(class)),
            None => Err(forbidden(request, pod, &format!("pod rejected: RuntimeClass {name:?} not found"))),
        }
    }
}

/// Whether two resource lists hold the same quantities (`1000m` equals `1`).
fn same_resources(a: &Value, b: &Value) -> bool {
    let (Some(a), Some(b)) = (a.as_object(), b.as_object()) else { return a == b };
    let nanos = |v: &Value| quantity::from_json(v).ok().map(|q| q.nanos);
    a.len() == b.len()
        && a.iter().all(|(k, v)| match (nanos(v), b.get(k).and_then(nanos)) {
            (Some(x), Some(y)) => x == y,
            _ => Some(v) == b.get(k),
        })
}

fn has_overhead(pod: &Value) -> bool {
    pod.pointer("/spec/overhead").and_then(Value::as_object).is_some_and(|o| !o.is_empty())
}

const OVERHEAD_MISMATCH: &str = "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead";

#[async_trait(?Send)]
impl AdmissionPlugin for RuntimeClass {
    fn name(&self) -> &'static str {
        "RuntimeClass"
    }

    fn mutates(&self) -> bool {
        true
    }

    fn validates(&self) -> bool {
        true
    }

    async fn mutate(&self, request: &Admit, pod: &mut Value, _: &mut Review) -> Result<(), ApiError> {
        let Some(class) = self.class_of(request, pod).await? else { return Ok(()) };
        if let Some(fixed) = class.pointer("/overhead/podFixed") {
            if has_overhead(pod) && !same_resources(&pod["spec"]["overhead"], fixed) {
                return Err(forbidden(request, pod, OVERHEAD_MISMATCH));
            }
            pod["spec"]["overhead"] = fixed.clone();
        }
        let Some(scheduling) = class.get("scheduling") else { return Ok(()) };
        let mut selector: Map<String, Value> =
            pod["spec"].get("nodeSelector").and_then(Value::as_object).cloned().unwrap_or_default();
        for (key, want) in scheduling.get("nodeSelector").and_then(Value::as_object).into_iter().flatten() {
            if let Some(have) = selector.get(key).filter(|have| *have != want) {
                let (want, have) = (want.as_str().unwrap_or(""), have.as_str().unwrap_or(""));
                let why = format!(
                    "conflict: runtimeClass.scheduling.nodeSelector[{key}] = {want}; pod.spec.nodeSelector[{key}] = {have}"
                );
                return Err(forbidden(request, pod, &why));
            }
            selector.insert(key.clone(), want.clone());
        }
        if !selector.is_empty() {
            pod["spec"]["nodeSelector"] = Value::Object(selector);
        }
        let mut tolerations: Vec<Value> =
            pod["spec"].get("tolerations").and_then(Value::as_array).cloned().unwrap_or_default();
        for t in scheduling.get("tolerations").and_then(Value::as_array).into_iter().flatten() {
            if !tolerations.contains(t) {
                tolerations.push(t.clone());
            }
        }
        if !tolerations.is_empty() {
            pod["spec"]["tolerations"] = json!(tolerations);
        }
        Ok(())
    }

    /// An overhead the class does not define, or one that differs from it, is refused (a
    /// mutating webhook may have set it after the mutating pass).
    async fn validate(&self, request: &Admit, pod: &Value, _: &mut Review) -> Result<(), ApiError> {
        if !has_overhead(pod) || request.operation != Operation::Create || !on(request, "", "pods") {
            return Ok(());
        }
        let class =
            if pod.pointer("/spec/runtimeClassName").is_some() { self.class_of(request, pod).await? } else { None };
        match class.as_ref().and_then(|c| c.pointer("/overhead/podFixed")) {
            Some(fixed) if same_resources(&pod["spec"]["overhead"], fixed) => Ok(()),
            Some(_) => Err(forbidden(request, pod, OVERHEAD_MISMATCH)),
            None => Err(forbidden(
                request,
                pod,
                "pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead",
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{Objects, admit};

    fn plugin() -> RuntimeClass {
        let class = json!({
            "metadata": {"name": "gvisor"}, "handler": "runsc",
            "overhead": {"podFixed": {"cpu": "250m", "memory": "64Mi"}},
            "scheduling": {"nodeSelector": {"sandbox": "yes"}, "tolerations": [{"key": "sandbox", "operator": "Exists"}]},
        });
        RuntimeClass::new(Arc::new(Objects::default().with("node.k8s.io", "runtimeclasses", "", class)))
    }

    fn pod(spec: Value) -> Value {
        json!({"metadata": {"name": "p"}, "spec": spec})
    }

    async fn mutate(spec: Value) -> Result<Value, ApiError> {
        let request = admit(Operation::Create, "", "pods", pod(spec));
        let mut object = request.object.clone();
        plugin().mutate(&request, &mut object, &mut Review::default()).await.map(|()| object)
    }

    #[tokio::test]
    async fn the_class_brings_its_overhead_and_scheduling() {
        let out = mutate(json!({"runtimeClassName": "gvisor", "nodeSelector": {"zone": "a"}})).await.unwrap();
        assert_eq!(out["spec"]["overhead"], json!({"cpu": "250m", "memory": "64Mi"}));
        assert_eq!(out["spec"]["nodeSelector"], json!({"zone": "a", "sandbox": "yes"}));
        assert_eq!(out["spec"]["tolerations"], json!([{"key": "sandbox", "operator": "Exists"}]));
        let same = mutate(json!({"runtimeClassName": "gvisor", "overhead": {"cpu": "0.25", "memory": "64Mi"}})).await;
        assert!(same.is_ok(), "an equal overhead in other units is the same overhead");
    }

    #[tokio::test]
    async fn a_missing_class_a_conflict_or_another_overhead_is_refused() {
        let e = mutate(json!({"runtimeClassName": "kata"})).await.unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            (403, "pods \"p\" is forbidden: pod rejected: RuntimeClass \"kata\" not found")
        );
        let e = mutate(json!({"runtimeClassName": "gvisor", "nodeSelector": {"sandbox": "no"}})).await.unwrap_err();
        assert!(
            e.message.ends_with(
                "conflict: runtimeClass.scheduling.nodeSelector[sandbox] = yes; pod.spec.nodeSelector[sandbox] = no"
            ),
            "{}",
            e.message
        );
        let e = mutate(json!({"runtimeClassName": "gvisor", "overhead": {"cpu": "1"}})).await.unwrap_err();
        assert!(e.message.ends_with(OVERHEAD_MISMATCH));
    }

    #[tokio::test]
    async fn an_overhead_without_a_class_fails_validation() {
        let p = pod(json!({"overhead": {"cpu": "1"}}));
        let e = plugin()
            .validate(&admit(Operation::Create, "", "pods", p.clone()), &p, &mut Review::default())
            .await
            .unwrap_err();
        assert!(
            e.message.ends_with("pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead")
        );
    }
}
