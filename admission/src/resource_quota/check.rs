//! The decision of kube's quota evaluator for one write (`CheckRequest` in
//! `k8s.io/apiserver/pkg/admission/plugin/resourcequota/controller.go`): which of the
//! namespace's quotas cover the object, whether what it charges fits each of them, and what
//! each one's usage becomes if it is admitted.

use apimachinery::messages::Operation;
use apimachinery::object::ObjectExt;
use chrono::{DateTime, Utc};
use kinds::quota::evaluator::{Evaluator, scope_requirements};
use kinds::quota::resources::{self, ResourceList};
use kinds::quota::{self as q};
use serde_json::Value;

/// Why a write is refused, in kube's words; the plugin answers it as 403 Forbidden.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Refused(pub String);

/// One write, as the check sees it.
pub(crate) struct Write<'a> {
    /// How its usage is measured.
    pub evaluator: &'a Evaluator,
    /// Create or update.
    pub operation: Operation,
    /// The object to be stored.
    pub object: &'a Value,
    /// The stored object an update replaces.
    pub old: Option<&'a Value>,
    /// When it is made (a pod past its deletion's grace period no longer charges compute).
    pub now: DateTime<Utc>,
    /// The configuration's `matchContains` for this resource (kube's `limitedResources`): a
    /// consumed resource whose name contains one must be covered by a quota.
    pub limited: &'a [String],
}

/// kube's `limitedByDefault`: the consumed resources whose names contain a limited string.
fn limited_by_default(usage: &ResourceList, limited: &[String]) -> Vec<String> {
    usage
        .iter()
        .filter(|(name, q)| q.nanos > 0 && limited.iter().any(|l| name.contains(l.as_str())))
        .map(|(n, _)| n.clone())
        .collect()
}

/// `hasUsageStats`: the quota's usage is known for every resource it limits of `restricted`.
fn has_usage(quota: &Value, restricted: &[String]) -> bool {
    let used = q::used(quota).unwrap_or_default();
    q::limits(quota).keys().filter(|k| restricted.contains(k)).all(|k| used.contains_key(k))
}

fn sorted_names(names: &[String]) -> String {
    let mut names = names.to_vec();
    names.sort();
    names.join(",")
}

/// What each covering quota's `status.used` becomes if the write is admitted, by index into
/// `quotas`, leaving out quotas whose usage does not change; or why the write is refused.
pub(crate) fn check(quotas: &[Value], write: &Write<'_>) -> Result<Vec<(usize, ResourceList)>, Refused> {
    let evaluator = write.evaluator;
    let limited_names = if write.limited.is_empty() {
        Vec::new()
    } else {
        limited_by_default(&evaluator.usage(write.object, write.now), write.limited)
    };
    // What the covering quotas limit between them, to find limited consumption none covers.
    let mut restricted_by_any: Vec<String> = Vec::new();
    let mut covering = Vec::new();
    for (i, quota) in quotas.iter().enumerate() {
        let limited: Vec<String> = q::limits(quota).keys().cloned().collect();
        if !evaluator.covers(&limited, &scope_requirements(quota), write.object) {
            continue;
        }
        let restricted = evaluator.matching_resources(&limited);
        if let Err(e) = evaluator.constraints(&restricted, write.object) {
            return Err(Refused(format!("failed quota: {}: {e}", quota.name())));
        }
        if !has_usage(quota, &restricted) {
            return Err(Refused(format!(
                "status unknown for quota: {}, resources: {}",
                quota.name(),
                sorted_names(&restricted)
            )));
        }
        covering.push(i);
        restricted_by_any.extend(restricted);
    }
    let mut uncovered: Vec<String> = limited_names.into_iter().filter(|n| !restricted_by_any.contains(n)).collect();
    if !uncovered.is_empty() {
        uncovered.sort();
        uncovered.dedup();
        return Err(Refused(format!("insufficient quota to consume: {}", uncovered.join(","))));
    }

    let mut delta = evaluator.usage(write.object, write.now);
    let negative = resources::negative(&delta);
    if !negative.is_empty() {
        return Err(Refused(format!("quota usage is negative for resource(s): {}", sorted_names(&negative))));
    }
    if write.operation == Operation::Update {
        // Only what the update adds is charged.
        let Some(old) = write.old else {
            return Err(Refused("unable to get previous usage since prior version of object was not found".into()));
        };
        if !old.resource_version().is_empty() {
            delta = resources::subtract_non_negative(&delta, &evaluator.usage(old, write.now));
        }
    }
    if resources::is_zero(&delta) {
        return Ok(Vec::new());
    }

    let mut charges = Vec::new();
    for i in covering {
        let quota = &quotas[i];
        let hard = q::limits(quota);
        let used = q::used(quota).unwrap_or_default();
        let requested = resources::mask(&delta, hard.keys());
        let new_used = resources::add(&used, &requested);
        let exceeded = resources::exceeding(&resources::mask(&new_used, requested.keys()), &hard);
        if !exceeded.is_empty() {
            return Err(Refused(format!(
                "exceeded quota: {}, requested: {}, used: {}, limited: {}",
                quota.name(),
                resources::pretty(&resources::mask(&requested, &exceeded)),
                resources::pretty(&resources::mask(&used, &exceeded)),
                resources::pretty(&resources::mask(&hard, &exceeded)),
            )));
        }
        if !resources::equals(&new_used, &used) {
            charges.push((i, new_used));
        }
    }
    Ok(charges)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn quota(name: &str, hard: Value, used: Option<Value>) -> Value {
        let mut status = json!({"hard": hard});
        if let Some(used) = used {
            status["used"] = used;
        }
        json!({"metadata": {"name": name, "namespace": "ns", "resourceVersion": "5"}, "spec": {"hard": hard}, "status": status})
    }

    fn create<'a>(evaluator: &'a Evaluator, object: &'a Value) -> Write<'a> {
        Write { evaluator, operation: Operation::Create, object, old: None, now: Utc::now(), limited: &[] }
    }

    #[test]
    fn limited_consumption_needs_a_covering_quota() {
        let pods = Evaluator::for_resource("", "pods");
        let object = pod(json!({"cpu": "100m", "memory": "64Mi"}));
        let limited = ["cpu".to_string()];
        let write = Write { limited: &limited, ..create(&pods, &object) };
        assert_eq!(check(&[], &write).unwrap_err().0, "insufficient quota to consume: cpu,requests.cpu");
        let counts = quota("counts", json!({"pods": "10"}), Some(json!({"pods": "0"})));
        assert_eq!(
            check(std::slice::from_ref(&counts), &write).unwrap_err().0,
            "insufficient quota to consume: cpu,requests.cpu",
            "a quota that does not limit cpu does not cover it"
        );
        let requests = quota("requests", json!({"requests.cpu": "1"}), Some(json!({"requests.cpu": "0"})));
        assert_eq!(
            check(&[counts.clone(), requests.clone()], &write).unwrap_err().0,
            "insufficient quota to consume: cpu",
            "the legacy name is consumed too, as kube counts it"
        );
        let legacy = quota("legacy", json!({"cpu": "1"}), Some(json!({"cpu": "0"})));
        assert!(check(&[counts, requests, legacy], &write).is_ok());
        let idle = pod(json!({}));
        let write = Write { limited: &limited, ..create(&pods, &idle) };
        assert!(check(&[], &write).is_ok(), "nothing limited is consumed");
    }

    fn pod(requests: Value) -> Value {
        json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "app", "resources": {"requests": requests}}]}})
    }

    #[test]
    fn a_create_within_every_covering_quota_charges_each() {
        let quotas = vec![
            quota("count", json!({"pods": "2"}), Some(json!({"pods": "1"}))),
            quota("compute", json!({"requests.memory": "1Gi"}), Some(json!({"requests.memory": "512Mi"}))),
            quota("other", json!({"secrets": "1"}), Some(json!({"secrets": "1"}))),
        ];
        let p = pod(json!({"memory": "512Mi"}));
        let charges = check(&quotas, &create(&Evaluator::Pods, &p)).unwrap();
        let shown: Vec<(usize, String)> = charges.iter().map(|(i, u)| (*i, resources::pretty(u))).collect();
        assert_eq!(shown, vec![(0, "pods=2".to_string()), (1, "requests.memory=1Gi".to_string())]);
    }

    #[test]
    fn exceeding_a_quota_is_refused_in_kubes_words() {
        let quotas =
            vec![quota("q", json!({"pods": "2", "count/pods": "10"}), Some(json!({"pods": "2", "count/pods": "2"})))];
        let p = pod(json!({}));
        let refused = check(&quotas, &create(&Evaluator::Pods, &p)).unwrap_err();
        assert_eq!(refused.0, "exceeded quota: q, requested: pods=1, used: pods=2, limited: pods=2");
        let cm = Evaluator::for_resource("", "configmaps");
        let quotas = vec![quota(
            "cms",
            json!({"count/configmaps": "1", "configmaps": "1"}),
            Some(json!({"count/configmaps": "1", "configmaps": "1"})),
        )];
        assert_eq!(
            check(&quotas, &create(&cm, &json!({}))).unwrap_err().0,
            "exceeded quota: cms, requested: configmaps=1,count/configmaps=1, used: configmaps=1,count/configmaps=1, \
             limited: configmaps=1,count/configmaps=1"
        );
    }

    #[test]
    fn a_quota_whose_usage_is_not_counted_yet_refuses_what_it_covers() {
        // Neither hard nor used in the status: the controller has not seen the quota yet.
        let fresh = json!({"metadata": {"name": "q"}, "spec": {"hard": {"pods": "5", "secrets": "1"}}});
        let refused = check(&[fresh], &create(&Evaluator::Pods, &pod(json!({})))).unwrap_err();
        assert_eq!(refused.0, "status unknown for quota: q, resources: pods");
    }

    #[test]
    fn a_cpu_quota_needs_every_container_to_state_cpu() {
        let quotas = vec![quota("cpu", json!({"requests.cpu": "1"}), Some(json!({"requests.cpu": "0"})))];
        let refused = check(&quotas, &create(&Evaluator::Pods, &pod(json!({})))).unwrap_err();
        assert_eq!(refused.0, "failed quota: cpu: must specify requests.cpu for: app");
    }

    #[test]
    fn updates_charge_only_what_they_add() {
        let claims = Evaluator::PersistentVolumeClaims;
        let quotas = vec![quota("s", json!({"requests.storage": "10Gi"}), Some(json!({"requests.storage": "4Gi"})))];
        let claim = |size: &str| json!({"metadata": {"name": "c", "resourceVersion": "3"}, "spec": {"resources": {"requests": {"storage": size}}}});
        let (old, grown) = (claim("4Gi"), claim("6Gi"));
        let update = Write { operation: Operation::Update, old: Some(&old), ..create(&claims, &grown) };
        let charges = check(&quotas, &update).unwrap();
        assert_eq!(resources::pretty(&charges[0].1), "requests.storage=6Gi");
        let shrunk = claim("1Gi");
        let update = Write { operation: Operation::Update, old: Some(&old), ..create(&claims, &shrunk) };
        assert_eq!(check(&quotas, &update).unwrap(), vec![], "a shrink charges nothing");
    }

    #[test]
    fn scoped_quotas_cover_only_pods_in_their_scope() {
        let mut best_effort = quota("be", json!({"pods": "1"}), Some(json!({"pods": "1"})));
        best_effort["spec"]["scopes"] = json!(["BestEffort"]);
        let sized = pod(json!({"cpu": "100m"}));
        assert_eq!(check(&[best_effort.clone()], &create(&Evaluator::Pods, &sized)).unwrap(), vec![]);
        assert!(check(&[best_effort], &create(&Evaluator::Pods, &pod(json!({})))).is_err());
    }
}
