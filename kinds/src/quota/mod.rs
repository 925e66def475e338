//! Resource quota's measures, shared by the `ResourceQuota` admission plugin, which charges each
//! write to the quotas covering it, and the quota controller, which recounts what is stored.
//!
//! # Layout
//! - [`resources`]: resource lists and their arithmetic (kube's `quota/v1/resources.go`).
//! - [`pods`]: a pod's summed requests and limits, QoS class and usage.
//! - [`evaluator`]: per group resource, what an object charges, which quota resources and
//!   scopes cover it, and what a pod must state under a cpu or memory quota.

pub mod evaluator;
pub mod pods;
pub mod resources;

use chrono::{DateTime, Utc};
use serde_json::Value;

use evaluator::{Evaluator, ScopeRequirement};
use resources::ResourceList;

/// The limits a quota enforces: `status.hard`, the limits the quota controller has taken on
/// (as kube reads them), or `spec.hard` while the controller has not seen the quota yet. kube
/// enforces nothing in that moment; here such a quota has no usage yet, so it refuses what it
/// covers ("status unknown") until its usage is counted, rather than letting it go uncharged.
pub fn limits(quota: &Value) -> ResourceList {
    resources::parse(quota.pointer("/status/hard"))
        .or_else(|| resources::parse(quota.pointer("/spec/hard")))
        .unwrap_or_default()
}

/// `status.used`; `None` before the controller first counted it.
pub fn used(quota: &Value) -> Option<ResourceList> {
    resources::parse(quota.pointer("/status/used"))
}

/// `quota.CalculateUsage`: what the stored objects charge a quota limiting `hard` in `scopes`.
/// `measured` holds each evaluator's objects in the quota's namespace; a resource whose
/// evaluator could not list them is left out rather than counted as zero.
pub fn calculate_usage(
    hard: &ResourceList,
    scopes: &[ScopeRequirement],
    measured: &[(Evaluator, Vec<Value>)],
    now: DateTime<Utc>,
) -> ResourceList {
    let names: Vec<String> = hard.keys().cloned().collect();
    let mut total = ResourceList::new();
    for (evaluator, items) in measured {
        let tracked = evaluator.matching_resources(&names);
        if tracked.is_empty() {
            continue;
        }
        let stats = evaluator.usage_stats(items, scopes, &tracked, now);
        resources::add_into(&mut total, &resources::mask(&stats, &tracked));
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn usage_counts_what_the_quota_limits_in_its_scopes() {
        let quota = json!({"spec": {"hard": {"pods": "5", "requests.cpu": "2", "count/secrets": "3"},
            "scopes": ["NotTerminating"]}});
        let pod = |cpu: &str, deadline: Option<i64>| {
            json!({"spec": {"activeDeadlineSeconds": deadline,
                "containers": [{"name": "a", "resources": {"requests": {"cpu": cpu}}}]}})
        };
        let pods = vec![pod("500m", None), pod("1", None), pod("1", Some(60))];
        let measured = vec![
            (Evaluator::Pods, pods),
            // Scoped quotas never cover counted objects.
            (Evaluator::for_resource("", "secrets"), vec![json!({}), json!({})]),
        ];
        let used = calculate_usage(&limits(&quota), &evaluator::scope_requirements(&quota), &measured, Utc::now());
        assert_eq!(resources::pretty(&used), "count/secrets=0,pods=2,requests.cpu=1500m");
        assert!(self::used(&quota).is_none());
    }
}
