//! kube's `Priority` plugin: a pod's `priorityClassName` becomes its `priority` and
//! `preemptionPolicy` (the cluster's `globalDefault` class, or priority 0, when it names
//! none), and at most one PriorityClass is the global default.

use std::sync::Arc;

use apimachinery::error::ApiError;
use apimachinery::lookup::ObjectLookup;
use apimachinery::messages::{Admit, Operation};
use apimachinery::object::ObjectExt;
use async_trait::async_trait;
use serde_json::{Value, json};

use crate::attributes::forbidden;
use crate::{AdmissionPlugin, Review, on};

const GROUP: &str = "scheduling.k8s.io";
/// A PriorityClass's policy when it says none (its defaulting).
const DEFAULT_PREEMPTION: &str = "PreemptLowerPriority";

/// Resolves pods' priorities from PriorityClasses read through the cache.
pub struct Priority {
    objects: Arc<dyn ObjectLookup>,
}

impl Priority {
    /// The plugin reading PriorityClasses through `objects`.
    pub fn new(objects: Arc<dyn ObjectLookup>) -> Self {
        Priority { objects }
    }

    /// The global default class; when a race left several, the lowest value wins (kube's
    /// `getDefaultPriorityClass`).
    async fn default_class(&self) -> Result<Option<Value>, ApiError> {
        let classes = self.objects.list(GROUP, "priorityclasses", "", "").await?;
        Ok(classes
            .into_iter()
            .filter(|c| c.get("globalDefault").and_then(Value::as_bool) == Some(true))
            .min_by_key(|c| c.get("value").and_then(Value::as_i64).unwrap_or(0)))
    }

    async fn admit_new_pod(&self, request: &Admit, pod: &mut Value) -> Result<(), ApiError> {
        let spec = &pod["spec"];
        let named = spec.get("priorityClassName").and_then(Value::as_str).unwrap_or("").to_string();
        let (class_name, priority, preemption) = if named.is_empty() {
            match self.default_class().await? {
                Some(c) => (c.name().to_string(), value_of(&c), preemption_of(&c)),
                None => (String::new(), 0, DEFAULT_PREEMPTION.to_string()),
            }
        } else {
            let Some(c) = self.objects.get(GROUP, "priorityclasses", "", &named).await? else {
                return Err(forbidden(request, pod, &format!("no PriorityClass with name {named} was found")));
            };
            (named, value_of(&c), preemption_of(&c))
        };
        if let Some(given) = spec.get("priority").and_then(Value::as_i64).filter(|p| *p != priority) {
            let why = format!(
                "the integer value of priority ({given}) must not be provided in pod spec; priority admission controller computed {priority} from the given PriorityClass name"
            );
            return Err(forbidden(request, pod, &why));
        }
        if let Some(given) = spec.get("preemptionPolicy").and_then(Value::as_str).filter(|p| *p != preemption) {
            let why = format!(
                "the string value of PreemptionPolicy ({given}) must not be provided in pod spec; priority admission controller computed {preemption} from the given PriorityClass name"
            );
            return Err(forbidden(request, pod, &why));
        }
        let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) else { return Ok(()) };
        if !class_name.is_empty() {
            spec.insert("priorityClassName".into(), json!(class_name));
        }
        spec.insert("priority".into(), json!(priority));
        spec.insert("preemptionPolicy".into(), json!(preemption));
        Ok(())
    }
}

fn value_of(class: &Value) -> i64 {
    class.get("value").and_then(Value::as_i64).unwrap_or(0)
}

fn preemption_of(class: &Value) -> String {
    class.get("preemptionPolicy").and_then(Value::as_str).unwrap_or(DEFAULT_PREEMPTION).to_string()
}

/// On update the values set at creation stay: a client sending the pod back without them
/// keeps them (validation refuses any change).
fn keep_on_update(pod: &mut Value, old: &Value) {
    let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) else { return };
    for field in ["priority", "preemptionPolicy"] {
        let missing = spec.get(field).is_none_or(Value::is_null);
        if let Some(v) = old.pointer(&format!("/spec/{field}")).filter(|v| missing && !v.is_null()) {
            spec.insert(field.into(), v.clone());
        }
    }
}

#[async_trait(?Send)]
impl AdmissionPlugin for Priority {
    fn name(&self) -> &'static str {
        "Priority"
    }

    fn mutates(&self) -> bool {
        true
    }

    fn validates(&self) -> bool {
        true
    }

    async fn mutate(&self, request: &Admit, object: &mut Value, _: &mut Review) -> Result<(), ApiError> {
        if !on(request, "", "pods") {
            return Ok(());
        }
        match (request.operation, &request.old_object) {
            (Operation::Create, _) => self.admit_new_pod(request, object).await,
            (Operation::Update, Some(old)) => {
                keep_on_update(object, old);
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// A second global default is refused (kube's `validatePriorityClass`).
    async fn validate(&self, request: &Admit, object: &Value, _: &mut Review) -> Result<(), ApiError> {
        let writes = matches!(request.operation, Operation::Create | Operation::Update);
        if !writes || !on(request, GROUP, "priorityclasses") {
            return Ok(());
        }
        if object.get("globalDefault").and_then(Value::as_bool) != Some(true) {
            return Ok(());
        }
        match self.default_class().await? {
            Some(existing) if request.operation == Operation::Create || existing.name() != object.name() => {
                let why = format!(
                    "PriorityClass {} is already marked as default. Only one default can exist",
                    existing.name()
                );
                Err(forbidden(request, object, &why))
            }
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{Objects, admit};

    fn classes() -> Objects {
        Objects::default()
            .with(GROUP, "priorityclasses", "", json!({"metadata": {"name": "high"}, "value": 1000}))
            .with(
                GROUP,
                "priorityclasses",
                "",
                json!({"metadata": {"name": "never"}, "value": 5, "preemptionPolicy": "Never"}),
            )
    }

    fn pod(spec: Value) -> Value {
        json!({"metadata": {"name": "p"}, "spec": spec})
    }

    async fn mutate(objects: Objects, request: Admit) -> Result<Value, ApiError> {
        let plugin = Priority::new(Arc::new(objects));
        let mut object = request.object.clone();
        plugin.mutate(&request, &mut object, &mut Review::default()).await.map(|()| object)
    }

    #[tokio::test]
    async fn a_named_class_sets_priority_and_preemption_policy() {
        let out = mutate(classes(), admit(Operation::Create, "", "pods", pod(json!({"priorityClassName": "never"}))))
            .await
            .unwrap();
        assert_eq!(out["spec"]["priority"], 5);
        assert_eq!(out["spec"]["preemptionPolicy"], "Never");
    }

    #[tokio::test]
    async fn without_a_class_the_global_default_or_zero_applies() {
        let out = mutate(classes(), admit(Operation::Create, "", "pods", pod(json!({})))).await.unwrap();
        assert_eq!(
            (out["spec"]["priority"].clone(), out["spec"]["preemptionPolicy"].clone()),
            (json!(0), json!(DEFAULT_PREEMPTION))
        );
        assert!(out["spec"].get("priorityClassName").is_none());
        let with_default = classes()
            .with(GROUP, "priorityclasses", "", json!({"metadata": {"name": "b"}, "value": 7, "globalDefault": true}))
            .with(GROUP, "priorityclasses", "", json!({"metadata": {"name": "a"}, "value": 3, "globalDefault": true}));
        let out = mutate(with_default, admit(Operation::Create, "", "pods", pod(json!({})))).await.unwrap();
        assert_eq!(
            (out["spec"]["priority"].clone(), out["spec"]["priorityClassName"].clone()),
            (json!(3), json!("a")),
            "the lowest default wins"
        );
    }

    #[tokio::test]
    async fn a_missing_class_or_a_conflicting_priority_is_forbidden() {
        let e = mutate(classes(), admit(Operation::Create, "", "pods", pod(json!({"priorityClassName": "gone"}))))
            .await
            .unwrap_err();
        assert_eq!(e.code, 403);
        assert_eq!(e.message, "pods \"p\" is forbidden: no PriorityClass with name gone was found");
        let e = mutate(
            classes(),
            admit(Operation::Create, "", "pods", pod(json!({"priorityClassName": "high", "priority": 1}))),
        )
        .await
        .unwrap_err();
        assert_eq!(
            e.message,
            "pods \"p\" is forbidden: the integer value of priority (1) must not be provided in pod spec; priority admission controller computed 1000 from the given PriorityClass name"
        );
        let e = mutate(
            classes(),
            admit(
                Operation::Create,
                "",
                "pods",
                pod(json!({"priorityClassName": "never", "preemptionPolicy": "PreemptLowerPriority"})),
            ),
        )
        .await
        .unwrap_err();
        assert!(e.message.ends_with("the string value of PreemptionPolicy (PreemptLowerPriority) must not be provided in pod spec; priority admission controller computed Never from the given PriorityClass name"), "{}", e.message);
    }

    #[tokio::test]
    async fn an_update_keeps_the_priority_set_at_creation() {
        let mut request = admit(Operation::Update, "", "pods", pod(json!({"priorityClassName": "high"})));
        request.old_object =
            Some(pod(json!({"priorityClassName": "high", "priority": 1000, "preemptionPolicy": "Never"})).into());
        let out = mutate(Objects::default(), request).await.unwrap();
        assert_eq!(
            (out["spec"]["priority"].clone(), out["spec"]["preemptionPolicy"].clone()),
            (json!(1000), json!("Never"))
        );
    }

    #[tokio::test]
    async fn only_one_class_may_be_the_global_default() {
        let objects = classes().with(
            GROUP,
            "priorityclasses",
            "",
            json!({"metadata": {"name": "d"}, "value": 1, "globalDefault": true}),
        );
        let plugin = Priority::new(Arc::new(objects));
        let second = json!({"metadata": {"name": "e"}, "value": 2, "globalDefault": true});
        let e = plugin
            .validate(
                &admit(Operation::Create, GROUP, "priorityclasses", second.clone()),
                &second,
                &mut Review::default(),
            )
            .await
            .unwrap_err();
        assert_eq!(
            e.message,
            "priorityclasses.scheduling.k8s.io \"e\" is forbidden: PriorityClass d is already marked as default. Only one default can exist"
        );
        let same = json!({"metadata": {"name": "d"}, "value": 4, "globalDefault": true});
        plugin
            .validate(&admit(Operation::Update, GROUP, "priorityclasses", same.clone()), &same, &mut Review::default())
            .await
            .expect("the default itself may change");
    }
}
