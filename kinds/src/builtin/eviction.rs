//! `policy/v1` Eviction, kube's `EvictionREST`: `POST pods/<name>/eviction` deletes the pod
//! unless its PodDisruptionBudget allows no disruption now, charging the budget first.

use async_trait::async_trait;
use serde_json::{Value, json};

use apimachinery::action::{Action, ActionContext, created};
use apimachinery::catalogue::Subresource;
use apimachinery::error::{ApiError, Cause, Reason};
use apimachinery::messages::Target;
use apimachinery::object::ObjectExt;
use apimachinery::options::{DeleteOptions, WriteOptions};
use apimachinery::selector::LabelSelector;

/// How many times a budget charged by someone else meanwhile is read and charged again.
const BUDGET_ATTEMPTS: usize = 5;

/// The eviction of the pod the URL names.
pub(super) struct Evict;

#[async_trait(?Send)]
impl Action for Evict {
    async fn create(&self, ctx: &dyn ActionContext, target: Target, eviction: Value) -> Result<Value, ApiError> {
        if eviction.name() != target.name {
            return Err(ApiError::bad_request("name in URL does not match name in Eviction object"));
        }
        let options = DeleteOptions::parse(ctx.query(), eviction.get("deleteOptions").filter(|d| !d.is_null()))?;
        let pod = ctx.get(&target.main()).await?;
        let phase = pod.pointer("/status/phase").and_then(Value::as_str).unwrap_or("");
        let skip_budget =
            matches!(phase, "Succeeded" | "Failed" | "Pending") || pod.pointer("/metadata/deletionTimestamp").is_some();
        if !skip_budget {
            charge_budget(ctx, &pod, &target).await?;
        }
        ctx.delete(target.main(), options).await?;
        Ok(created())
    }
}

/// Whether the pod counts as healthy for its budget (Ready).
fn ready(pod: &Value) -> bool {
    pod.pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|c| c.iter().any(|c| c["type"] == "Ready" && c["status"] == "True"))
}

fn budget_refusal(message: String, retry_after: Option<u32>) -> ApiError {
    let mut e =
        ApiError::new(Reason::TooManyRequests, "Cannot evict pod as it would violate the pod's disruption budget.");
    e.causes = vec![Cause { reason: "DisruptionBudget".into(), message, field: String::new() }];
    e.retry_after_seconds = retry_after;
    e
}

/// kube's `checkAndDecrement` over the pod's one matching budget: a disruption is taken from
/// it (and the pod recorded in `disruptedPods`) before the pod is deleted.
async fn charge_budget(ctx: &dyn ActionContext, pod: &Value, target: &Target) -> Result<(), ApiError> {
    let Some(pdbs) = ctx.catalogue().find("policy", "v1", "poddisruptionbudgets") else { return Ok(()) };
    let labels = pod.pointer("/metadata/labels").and_then(Value::as_object);
    for _attempt in 0..BUDGET_ATTEMPTS {
        let all = ctx.list(&Target::collection(&pdbs, &target.namespace)).await?;
        let matching: Vec<&Value> = all
            .iter()
            .filter(|pdb| {
                pdb.pointer("/spec/selector")
                    .and_then(|s| LabelSelector::from_label_selector(Some(s)).ok())
                    .is_some_and(|sel| sel.matches(labels))
            })
            .collect();
        let pdb = match matching.as_slice() {
            [] => return Ok(()),
            [one] => *one,
            _ => {
                return Err(ApiError::unknown(
                    "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.",
                ));
            }
        };
        let name = pdb.name().to_string();
        let int = |p: &str| pdb.pointer(p).and_then(Value::as_i64).unwrap_or(0);
        let policy =
            pdb.pointer("/spec/unhealthyPodEvictionPolicy").and_then(Value::as_str).unwrap_or("IfHealthyBudget");
        let (current, desired) = (int("/status/currentHealthy"), int("/status/desiredHealthy"));
        if !ready(pod) && (policy == "AlwaysAllow" || (current >= desired && desired > 0)) {
            return Ok(());
        }
        if int("/status/observedGeneration") < int("/metadata/generation") {
            return Err(budget_refusal(
                format!("The disruption budget {name} is still being processed by the server."),
                Some(10),
            ));
        }
        let allowed = int("/status/disruptionsAllowed");
        if allowed < 0 {
            return Err(ApiError::forbidden(
                "policy",
                "poddisruptionbudget",
                &name,
                "pdb disruptions allowed is negative",
            ));
        }
        if allowed == 0 {
            return Err(budget_refusal(
                format!("The disruption budget {name} needs {desired} healthy pods and has {current} currently"),
                None,
            ));
        }
        let mut updated = pdb.clone();
        updated["status"]["disruptionsAllowed"] = json!(allowed - 1);
        updated["status"]["disruptedPods"][target.name.as_str()] = json!(apimachinery::object::now_rfc3339());
        let mut pdb_target = Target::object(&pdbs, &target.namespace, &name);
        pdb_target.subresource = Some(Subresource::Status);
        let options = WriteOptions { dry_run: ctx.query().get("dryRun") == Some("All"), ..Default::default() };
        match ctx.update(pdb_target, updated, options).await {
            Ok(()) => return Ok(()),
            Err(e) if e.reason == Reason::Conflict => continue,
            Err(e) => return Err(e),
        }
    }
    let mut e = ApiError::timeout(
        format!("Timeout: couldn't update PodDisruptionBudget \"{}\" due to conflicts", target.name),
        10,
    );
    e.code = 504;
    Err(e)
}
