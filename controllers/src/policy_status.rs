//! `status` of ValidatingAdmissionPolicies (kube-controller-manager's
//! validatingadmissionpolicy-status-controller): when a policy's generation is newer than its
//! `status.observedGeneration`, its validations are type checked against the schemas of the
//! kinds it matches ([`admission::policy::typechecking`]) and the status is written through
//! `/status` with `observedGeneration` and `typeChecking.expressionWarnings`.
//!
//! Checking only on a new generation keeps it cheap: the controller's own status write, and
//! any other change that leaves the spec alone, are events it looks at and passes over.

use std::sync::Arc;

use actors::Deadline;
use apimachinery::catalogue::{Catalogue, ResourceDef, Subresource};
use apimachinery::encoded::WatchEventType;
use apimachinery::messages::{Target, UpdateObject};
use apimachinery::object::ObjectExt;
use apimachinery::options::WriteOptions;
use serde_json::{Value, json};
use tokio::task::AbortHandle;

use super::leader::spawn_stoppable;
use super::{WRITE_TIMEOUT, events, identity};
use stage_handles::Stages;

/// The status `policy` should have, or `None` when it is up to date.
pub fn desired_status(policy: &Value, catalogue: &Catalogue) -> Option<Value> {
    let generation = policy.pointer("/metadata/generation").and_then(Value::as_i64).unwrap_or(0);
    let observed = policy.pointer("/status/observedGeneration").and_then(Value::as_i64).unwrap_or(0);
    if generation <= observed {
        return None;
    }
    let kind_of =
        |group: &str, version: &str, resource: &str| catalogue.find(group, version, resource).map(|d| d.kind.clone());
    let warnings = admission::policy::typechecking::check(policy, &kind_of);
    let mut status = policy.get("status").filter(|s| s.is_object()).cloned().unwrap_or_else(|| json!({}));
    status["observedGeneration"] = json!(generation);
    status["typeChecking"] = if warnings.is_empty() { json!({}) } else { json!({"expressionWarnings": warnings}) };
    Some(status)
}

async fn reconcile(stages: &Stages, def: &Arc<ResourceDef>, catalogue: &Catalogue, policy: Value) {
    let Some(status) = desired_status(&policy, catalogue) else { return };
    let name = policy.name().to_string();
    let mut updated = policy;
    updated["status"] = status;
    let update = UpdateObject {
        target: Target { subresource: Some(Subresource::Status), ..Target::object(def, "", &name) },
        object: updated,
        user: identity("validatingadmissionpolicy-status-controller"),
        options: WriteOptions::default(),
    };
    match stages.update.ask(update, Deadline::after(WRITE_TIMEOUT)).await {
        Ok(_) => {}
        // Changed meanwhile (its event brings us back), or deleted.
        Err(e) if matches!(e.reason, apimachinery::Reason::Conflict | apimachinery::Reason::NotFound) => {}
        Err(e) => tracing::warn!(policy = %name, "writing the type checking status: {}", e.message),
    }
}

/// Starts the controller on the current arbiter; the handle stops it (`None`: its kinds are not served).
pub fn spawn(stages: Stages, catalogue: Arc<Catalogue>) -> Option<AbortHandle> {
    let def = catalogue.find("admissionregistration.k8s.io", "v1", "validatingadmissionpolicies")?;
    let mut changes = events(&stages, &def);
    Some(spawn_stoppable(async move {
        while let Some((kind, policy)) = changes.recv().await {
            if kind != WatchEventType::Deleted {
                reconcile(&stages, &def, &catalogue, policy).await;
            }
        }
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(generation: i64, observed: Option<i64>) -> Value {
        let mut p = json!({"metadata": {"name": "p", "generation": generation}, "spec": {
            "matchConstraints": {"resourceRules": [{"apiGroups": ["apps"], "apiVersions": ["v1"],
                "operations": ["CREATE"], "resources": ["deployments"]}]},
            "validations": [{"expression": "object.spec.replicaz > 1"}]}});
        if let Some(o) = observed {
            p["status"] = json!({"observedGeneration": o, "conditions": [{"type": "x"}]});
        }
        p
    }

    #[test]
    fn a_new_generation_is_checked_and_conditions_are_kept() {
        let catalogue = kinds::catalogue();
        let status = desired_status(&policy(2, Some(1)), &catalogue).unwrap();
        assert_eq!(status["observedGeneration"], 2);
        assert_eq!(status["conditions"], json!([{"type": "x"}]));
        let warning = &status["typeChecking"]["expressionWarnings"][0];
        assert_eq!(warning["fieldRef"], "spec.validations[0].expression");
        assert!(
            warning["warning"]
                .as_str()
                .unwrap()
                .starts_with("apps/v1, Kind=Deployment: ERROR: <input>:1:12: undefined field 'replicaz'")
        );
        assert!(desired_status(&policy(2, Some(2)), &catalogue).is_none(), "up to date");
        assert_eq!(desired_status(&policy(1, None), &catalogue).unwrap()["observedGeneration"], 1);
    }
}
