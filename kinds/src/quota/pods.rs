//! What a pod asks for: its requests and limits summed as the scheduler sums them (kube:
//! `k8s.io/component-helpers/resource`, `PodRequests` and `PodLimits`), its QoS class and its
//! quota usage (kube: `pkg/quota/v1/evaluator/core/pods.go`).

use chrono::{DateTime, Utc};
use serde_json::Value;

use super::resources::{self, ResourceList, units};

/// One container's `resources.requests` or `resources.limits`.
pub fn container_list(container: &Value, which: &str) -> ResourceList {
    resources::parse(container.pointer(&format!("/resources/{which}"))).unwrap_or_default()
}

fn containers<'a>(pod: &'a Value, list: &str) -> impl Iterator<Item = &'a Value> {
    pod.pointer(&format!("/spec/{list}")).and_then(Value::as_array).into_iter().flatten()
}

/// A sidecar: an init container that keeps running beside the app containers.
fn is_sidecar(container: &Value) -> bool {
    container["restartPolicy"] == "Always"
}

/// The pod's total of `which` (`requests` or `limits`): app containers and sidecars summed,
/// raised to what the largest init container needs while it runs (with the sidecars started
/// before it), plus the pod's overhead when `overhead` (to every request, to limits it sets).
fn pod_total(pod: &Value, which: &str, overhead: bool) -> ResourceList {
    let mut total = ResourceList::new();
    for c in containers(pod, "containers") {
        resources::add_into(&mut total, &container_list(c, which));
    }
    let mut sidecars = ResourceList::new();
    let mut init = ResourceList::new();
    for c in containers(pod, "initContainers") {
        let own = container_list(c, which);
        let running = if is_sidecar(c) {
            resources::add_into(&mut total, &own);
            resources::add_into(&mut sidecars, &own);
            sidecars.clone()
        } else {
            resources::add(&own, &sidecars)
        };
        resources::max_into(&mut init, &running);
    }
    resources::max_into(&mut total, &init);
    if overhead && let Some(extra) = resources::parse(pod.pointer("/spec/overhead")) {
        if which == "requests" {
            resources::add_into(&mut total, &extra);
        } else {
            for (k, q) in extra {
                if let Some(have) = total.get_mut(&k) {
                    *have = resources::add_quantity(*have, q);
                }
            }
        }
    }
    total
}

/// `PodRequests`.
pub fn pod_requests(pod: &Value, overhead: bool) -> ResourceList {
    pod_total(pod, "requests", overhead)
}

/// `PodLimits`.
pub fn pod_limits(pod: &Value, overhead: bool) -> ResourceList {
    pod_total(pod, "limits", overhead)
}

/// `qos.GetPodQOS(pod) == BestEffort`: the recorded class, else no container asks for or caps
/// cpu or memory.
pub fn is_best_effort(pod: &Value) -> bool {
    if let Some(class) = pod.pointer("/status/qosClass").and_then(Value::as_str).filter(|c| !c.is_empty()) {
        return class == "BestEffort";
    }
    !containers(pod, "initContainers").chain(containers(pod, "containers")).any(|c| {
        ["requests", "limits"].iter().any(|which| {
            container_list(c, which).iter().any(|(name, q)| (name == "cpu" || name == "memory") && q.nanos > 0)
        })
    })
}

/// `IsTerminating`: the pod has an active deadline.
pub fn is_terminating(pod: &Value) -> bool {
    pod.pointer("/spec/activeDeadlineSeconds").and_then(Value::as_i64).is_some_and(|s| s >= 0)
}

/// `QuotaV1Pod`: a pod in a terminal phase, or past its deletion's grace period, no longer
/// holds compute quota (a node that is gone would otherwise keep it charged forever).
pub fn holds_compute(pod: &Value, now: DateTime<Utc>) -> bool {
    let phase = pod.pointer("/status/phase").and_then(Value::as_str);
    if matches!(phase, Some("Failed" | "Succeeded")) {
        return false;
    }
    let deleted = pod.pointer("/metadata/deletionTimestamp").and_then(Value::as_str);
    let grace = pod.pointer("/metadata/deletionGracePeriodSeconds").and_then(Value::as_i64);
    if let (Some(at), Some(grace)) = (deleted, grace)
        && let Ok(at) = DateTime::parse_from_rfc3339(at)
    {
        return now <= at.with_timezone(&Utc) + chrono::Duration::seconds(grace);
    }
    true
}

/// Whether `name` is a native resource (no domain, or one under `kubernetes.io/`).
fn is_native(name: &str) -> bool {
    !name.contains('/') || name.contains("kubernetes.io/")
}

/// `helper.IsExtendedResourceName`: a resource of a device plugin (`example.com/gpu`).
pub fn is_extended(name: &str) -> bool {
    !is_native(name) && !name.starts_with("requests.")
}

/// `isExtendedResourceNameForQuota`: how a quota names an extended resource
/// (`requests.example.com/gpu`).
pub fn is_extended_for_quota(name: &str) -> bool {
    !is_native(name) && name.starts_with("requests.")
}

/// `podComputeUsageHelper`: the quota resources `requests` and `limits` charge.
pub fn compute_usage(requests: &ResourceList, limits: &ResourceList) -> ResourceList {
    let mut out = ResourceList::new();
    out.insert("pods".into(), units(1));
    for resource in ["cpu", "memory", "ephemeral-storage"] {
        if let Some(q) = requests.get(resource) {
            out.insert(resource.into(), *q);
            out.insert(format!("requests.{resource}"), *q);
        }
        if let Some(q) = limits.get(resource) {
            out.insert(format!("limits.{resource}"), *q);
        }
    }
    for (name, q) in requests {
        if name.starts_with("hugepages-") {
            out.insert(name.clone(), *q);
            out.insert(format!("requests.{name}"), *q);
        }
        if is_extended(name) {
            out.insert(format!("requests.{name}"), *q);
        }
    }
    out
}

/// `PodUsageFunc`: `count/pods` always (it counts what is stored); the compute resources while
/// the pod [`holds_compute`].
pub fn usage(pod: &Value, now: DateTime<Utc>) -> ResourceList {
    let mut out = ResourceList::from([("count/pods".to_string(), units(1))]);
    if holds_compute(pod, now) {
        let requests = pod_requests(pod, true);
        let limits = pod_limits(pod, true);
        resources::add_into(&mut out, &compute_usage(&requests, &limits));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(spec: Value) -> Value {
        json!({"metadata": {"name": "p"}, "spec": spec})
    }

    #[test]
    fn requests_sum_app_containers_and_sidecars_and_take_the_largest_init_step() {
        let p = pod(json!({
            "initContainers": [
                {"name": "side", "restartPolicy": "Always", "resources": {"requests": {"cpu": "100m"}}},
                {"name": "setup", "resources": {"requests": {"cpu": "2", "memory": "1Gi"}}},
            ],
            "containers": [
                {"name": "a", "resources": {"requests": {"cpu": "250m", "memory": "128Mi"}, "limits": {"cpu": "1"}}},
                {"name": "b", "resources": {"requests": {"cpu": "250m"}}},
            ],
            "overhead": {"cpu": "10m"},
        }));
        // setup runs beside the sidecar: 2.1 cpu; afterwards 0.6 cpu: the larger wins.
        assert_eq!(resources::pretty(&pod_requests(&p, false)), "cpu=2100m,memory=1Gi");
        assert_eq!(resources::pretty(&pod_requests(&p, true)), "cpu=2110m,memory=1Gi");
        assert_eq!(resources::pretty(&pod_limits(&p, true)), "cpu=1010m");
    }

    #[test]
    fn usage_charges_compute_only_while_the_pod_holds_it() {
        let now = Utc::now();
        let p = pod(json!({"containers": [{"name": "a", "resources": {
            "requests": {"cpu": "500m", "memory": "1Gi", "example.com/gpu": "1"}, "limits": {"memory": "2Gi"}}}]}));
        assert_eq!(
            resources::pretty(&usage(&p, now)),
            "count/pods=1,cpu=500m,limits.memory=2Gi,memory=1Gi,pods=1,requests.cpu=500m,\
             requests.example.com/gpu=1,requests.memory=1Gi"
        );
        let mut done = p.clone();
        done["status"] = json!({"phase": "Succeeded"});
        assert_eq!(resources::pretty(&usage(&done, now)), "count/pods=1");
        let mut going = p.clone();
        going["metadata"]["deletionTimestamp"] = json!("2020-01-01T00:00:00Z");
        going["metadata"]["deletionGracePeriodSeconds"] = json!(30);
        assert_eq!(resources::pretty(&usage(&going, now)), "count/pods=1", "past its grace period");
    }

    #[test]
    fn best_effort_and_terminating_as_kube_decides_them() {
        assert!(is_best_effort(&pod(json!({"containers": [{"name": "a"}]}))));
        let capped = pod(json!({"containers": [{"name": "a", "resources": {"limits": {"memory": "1Gi"}}}]}));
        assert!(!is_best_effort(&capped));
        let zero = pod(json!({"containers": [{"name": "a", "resources": {"requests": {"cpu": "0"}}}]}));
        assert!(is_best_effort(&zero), "a zero request is no request");
        assert!(is_terminating(&pod(json!({"activeDeadlineSeconds": 0}))));
        assert!(!is_terminating(&pod(json!({}))));
    }
}
