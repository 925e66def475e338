//! Taints and tolerations set at admission: kube's `DefaultTolerationSeconds` (pods tolerate
//! an unready or unreachable node for five minutes before eviction) and
//! `TaintNodesByCondition` (a new node is tainted not-ready until its kubelet says otherwise).

use apimachinery::error::ApiError;
use apimachinery::messages::{Admit, Operation};
use async_trait::async_trait;
use serde_json::{Value, json};

use crate::{AdmissionPlugin, Review, on};

const NOT_READY: &str = "node.kubernetes.io/not-ready";
const UNREACHABLE: &str = "node.kubernetes.io/unreachable";

/// Adds `NoExecute` tolerations of `not-ready` and `unreachable` to pods that have none.
#[derive(Clone, Debug)]
pub struct DefaultTolerationSeconds {
    /// `--default-not-ready-toleration-seconds`.
    pub not_ready_seconds: i64,
    /// `--default-unreachable-toleration-seconds`.
    pub unreachable_seconds: i64,
}

impl Default for DefaultTolerationSeconds {
    /// kube's defaults: 300 s each.
    fn default() -> Self {
        DefaultTolerationSeconds { not_ready_seconds: 300, unreachable_seconds: 300 }
    }
}

/// Whether a toleration covers `key`'s `NoExecute` taint: the key or any key, the effect or
/// any effect.
fn tolerates(toleration: &Value, key: &str) -> bool {
    let field = |f: &str| toleration.get(f).and_then(Value::as_str).unwrap_or("");
    (field("key") == key || field("key").is_empty()) && (field("effect") == "NoExecute" || field("effect").is_empty())
}

#[async_trait(?Send)]
impl AdmissionPlugin for DefaultTolerationSeconds {
    fn name(&self) -> &'static str {
        "DefaultTolerationSeconds"
    }

    fn mutates(&self) -> bool {
        true
    }

    async fn mutate(&self, request: &Admit, pod: &mut Value, _: &mut Review) -> Result<(), ApiError> {
        let writes = matches!(request.operation, Operation::Create | Operation::Update);
        if !writes || !on(request, "", "pods") {
            return Ok(());
        }
        let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) else { return Ok(()) };
        let present: Vec<Value> = spec.get("tolerations").and_then(Value::as_array).cloned().unwrap_or_default();
        let mut added = Vec::new();
        for (key, seconds) in [(NOT_READY, self.not_ready_seconds), (UNREACHABLE, self.unreachable_seconds)] {
            if !present.iter().any(|t| tolerates(t, key)) {
                added.push(
                    json!({"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": seconds}),
                );
            }
        }
        if !added.is_empty() {
            let list = spec.entry("tolerations").or_insert_with(|| json!([]));
            if let Some(list) = list.as_array_mut() {
                list.extend(added);
            } else {
                *list = Value::Array(added);
            }
        }
        Ok(())
    }
}

/// Taints every new node `not-ready:NoSchedule`, so nothing is scheduled to it before its
/// conditions are known.
pub struct TaintNodesByCondition;

#[async_trait(?Send)]
impl AdmissionPlugin for TaintNodesByCondition {
    fn name(&self) -> &'static str {
        "TaintNodesByCondition"
    }

    fn mutates(&self) -> bool {
        true
    }

    async fn mutate(&self, request: &Admit, node: &mut Value, _: &mut Review) -> Result<(), ApiError> {
        if request.operation != Operation::Create || !on(request, "", "nodes") {
            return Ok(());
        }
        let Some(node) = node.as_object_mut() else { return Ok(()) };
        let spec = node.entry("spec").or_insert_with(|| json!({}));
        let Some(spec) = spec.as_object_mut() else { return Ok(()) };
        let taints = spec.entry("taints").or_insert_with(|| json!([]));
        if taints.is_null() {
            *taints = json!([]);
        }
        let Some(taints) = taints.as_array_mut() else { return Ok(()) };
        let matches =
            |t: &Value| t.get("key") == Some(&json!(NOT_READY)) && t.get("effect") == Some(&json!("NoSchedule"));
        if !taints.iter().any(matches) {
            taints.push(json!({"key": NOT_READY, "effect": "NoSchedule"}));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::admit;

    async fn run(plugin: &dyn AdmissionPlugin, request: Admit) -> Value {
        let mut object = request.object.clone();
        plugin.mutate(&request, &mut object, &mut Review::default()).await.unwrap();
        object
    }

    #[tokio::test]
    async fn pods_get_five_minutes_of_tolerance_unless_they_say_otherwise() {
        let plugin = DefaultTolerationSeconds::default();
        let pod = json!({"metadata": {"name": "p"}, "spec": {"containers": []}});
        let out = run(&plugin, admit(Operation::Create, "", "pods", pod)).await;
        assert_eq!(
            out["spec"]["tolerations"],
            json!([
                {"key": NOT_READY, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
                {"key": UNREACHABLE, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
            ])
        );
        let own = json!({"key": UNREACHABLE, "operator": "Exists", "tolerationSeconds": 5});
        let pod = json!({"metadata": {"name": "p"}, "spec": {"tolerations": [own.clone()]}});
        let out = run(&plugin, admit(Operation::Create, "", "pods", pod)).await;
        let tolerations = out["spec"]["tolerations"].as_array().unwrap();
        assert_eq!(tolerations.len(), 2, "its own toleration of any effect covers unreachable");
        assert_eq!(tolerations[0], own);
        assert_eq!(tolerations[1]["key"], NOT_READY);
        let everything = json!({"metadata": {"name": "p"}, "spec": {"tolerations": [{"operator": "Exists"}]}});
        let out = run(&plugin, admit(Operation::Create, "", "pods", everything.clone())).await;
        assert_eq!(out, everything, "a toleration of every taint needs nothing more");
    }

    #[tokio::test]
    async fn new_nodes_are_tainted_not_ready_once() {
        let node = json!({"metadata": {"name": "n"}});
        let out = run(&TaintNodesByCondition, admit(Operation::Create, "", "nodes", node)).await;
        assert_eq!(out["spec"]["taints"], json!([{"key": NOT_READY, "effect": "NoSchedule"}]));
        let again = run(&TaintNodesByCondition, admit(Operation::Create, "", "nodes", out.clone())).await;
        assert_eq!(again, out);
        let updated =
            run(&TaintNodesByCondition, admit(Operation::Update, "", "nodes", json!({"metadata": {"name": "n"}})))
                .await;
        assert!(updated.get("spec").is_none(), "only creates are tainted");
    }
}
