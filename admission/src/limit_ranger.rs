//! kube's `LimitRanger` plugin (`plugin/pkg/admission/limitranger`): the LimitRanges of a
//! namespace fill in the resources its new pods' containers leave out (mutating), and bound
//! what pods and claims ask for (validating).
//!
//! Mutating, for pods: each `type: Container` item's `defaultRequest` and `default` fill the
//! requests and limits a container (or init container) does not state, and the pod is
//! annotated with what was set (`kubernetes.io/limit-ranger`). Validating: `min`, `max` and
//! `maxLimitRequestRatio` per container and per pod, `min` and `max` of a claim's storage
//! request, every violation of a LimitRange reported at once in kube's words. Pods are checked
//! when created only (their resources cannot change), claims when created or updated.

use std::sync::Arc;

use apimachinery::error::ApiError;
use apimachinery::gofmt::aggregate;
use apimachinery::lookup::ObjectLookup;
use apimachinery::messages::{Admit, Operation};
use apimachinery::object::ObjectExt;
use async_trait::async_trait;
use kinds::quota::pods::{container_list, pod_limits, pod_requests};
use kinds::quota::resources::{self, ResourceList};
use kube_cel::quantity::Quantity;
use serde_json::{Map, Value};

use crate::attributes::forbidden;
use crate::live_lookup::LiveLookup;
use crate::{AdmissionPlugin, Review};

/// Where the plugin records what it set.
const ANNOTATION: &str = "kubernetes.io/limit-ranger";
/// `resource.MaxMilliValue`: above it kube compares whole units, not thousandths.
const MAX_MILLI_VALUE: i128 = (i64::MAX / 1000) as i128;

/// Applies and enforces LimitRanges.
pub struct LimitRanger {
    ranges: LiveLookup,
}

impl LimitRanger {
    /// The plugin reading LimitRanges through `objects`.
    pub fn new(objects: Arc<dyn ObjectLookup>) -> Self {
        LimitRanger { ranges: LiveLookup::new(objects, "", "limitranges") }
    }

    /// LimitRanges apply to this write (kube's `SupportsAttributes`, and objects being deleted
    /// are left alone).
    fn applies(request: &Admit) -> bool {
        let t = &request.target;
        if t.subresource.is_some() || !t.group.is_empty() {
            return false;
        }
        let kind_fits = matches!(
            (t.resource.as_str(), request.operation),
            ("pods", Operation::Create) | ("persistentvolumeclaims", Operation::Create | Operation::Update)
        );
        kind_fits && !request.old_object.as_deref().is_some_and(|old| old.is_being_deleted())
    }
}

#[async_trait(?Send)]
impl AdmissionPlugin for LimitRanger {
    fn name(&self) -> &'static str {
        "LimitRanger"
    }

    fn mutates(&self) -> bool {
        true
    }

    fn validates(&self) -> bool {
        true
    }

    async fn mutate(&self, request: &Admit, pod: &mut Value, _: &mut Review) -> Result<(), ApiError> {
        if !Self::applies(request) || request.target.resource != "pods" {
            return Ok(());
        }
        for range in self.ranges.list(&request.target.namespace).await? {
            set_defaults(&range, pod);
        }
        Ok(())
    }

    async fn validate(&self, request: &Admit, object: &Value, _: &mut Review) -> Result<(), ApiError> {
        if !Self::applies(request) {
            return Ok(());
        }
        for range in self.ranges.list(&request.target.namespace).await? {
            let violations = match request.target.resource.as_str() {
                "pods" => pod_violations(&range, object),
                _ => claim_violations(&range, object),
            };
            if !violations.is_empty() {
                return Err(forbidden(request, object, &aggregate(&violations)));
            }
        }
        Ok(())
    }
}

/// The range's items of `kind`.
fn items<'a>(range: &'a Value, kind: &'a str) -> impl Iterator<Item = &'a Value> {
    let all = range.pointer("/spec/limits").and_then(Value::as_array).into_iter().flatten();
    all.filter(move |item| item["type"] == kind)
}

/// The named quantities of an item's `min`, `max`, ... as a list.
fn bounds(item: &Value, which: &str) -> ResourceList {
    resources::parse(item.get(which)).unwrap_or_default()
}

/// `defaultContainerResourceRequirements`: the requests and limits the range's Container items
/// default (a later item's value wins), as the JSON they are written in.
fn container_defaults(range: &Value) -> (Map<String, Value>, Map<String, Value>) {
    let (mut requests, mut limits) = (Map::new(), Map::new());
    for item in items(range, "Container") {
        for (into, from) in [(&mut requests, "defaultRequest"), (&mut limits, "default")] {
            if let Some(values) = item.get(from).and_then(Value::as_object) {
                into.extend(values.clone());
            }
        }
    }
    (requests, limits)
}

/// `mergeContainerResources`: fills what `container` leaves out; returns what it set, in kube's
/// words (`cpu, memory request for container app`).
fn fill_container(
    container: &mut Value,
    defaults: &(Map<String, Value>, Map<String, Value>),
    role: &str,
) -> Vec<String> {
    let name = container["name"].as_str().unwrap_or("").to_string();
    let mut notes = Vec::new();
    for (which, wanted, word) in [("requests", &defaults.0, "request"), ("limits", &defaults.1, "limit")] {
        let stated = container.pointer(&format!("/resources/{which}")).and_then(Value::as_object);
        let missing: Map<String, Value> = wanted
            .iter()
            .filter(|(k, _)| !stated.is_some_and(|s| s.contains_key(*k)))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        if missing.is_empty() {
            continue;
        }
        let set: Vec<&str> = missing.keys().map(String::as_str).collect();
        notes.push(format!("{} {word} for {role} {name}", set.join(", ")));
        let list = object_member(container, "resources").and_then(|r| object_member(r, which));
        if let Some(list) = list.and_then(Value::as_object_mut) {
            list.extend(missing);
        }
    }
    notes
}

/// `PodMutateLimitFunc`: one range's container defaults, and the annotation saying what they set.
fn set_defaults(range: &Value, pod: &mut Value) {
    let defaults = container_defaults(range);
    if defaults.0.is_empty() && defaults.1.is_empty() {
        return;
    }
    let mut notes = Vec::new();
    for (list, role) in [("containers", "container"), ("initContainers", "init container")] {
        let Some(containers) = pod.pointer_mut(&format!("/spec/{list}")).and_then(Value::as_array_mut) else {
            continue;
        };
        for c in containers {
            notes.extend(fill_container(c, &defaults, role));
        }
    }
    if notes.is_empty() {
        return;
    }
    let annotations = object_member(pod, "metadata").and_then(|m| object_member(m, "annotations"));
    if let Some(a) = annotations.and_then(Value::as_object_mut) {
        a.insert(ANNOTATION.into(), format!("LimitRanger plugin set: {}", notes.join("; ")).into());
    }
}

/// The member `key` of the object `value`, made an empty object if absent or not an object.
fn object_member<'a>(value: &'a mut Value, key: &str) -> Option<&'a mut Value> {
    let member = value.as_object_mut()?.entry(key).or_insert_with(|| Value::Object(Map::new()));
    if !member.is_object() {
        *member = Value::Object(Map::new());
    }
    Some(member)
}

/// `Quantity.Value` (`unit` 10⁹ nanos) or `MilliValue` (10⁶): rounded up, as Go rounds.
fn scaled(q: Option<&Quantity>, unit: i128) -> i128 {
    q.map_or(0, |q| q.nanos.div_euclid(unit) + i128::from(q.nanos.rem_euclid(unit) != 0))
}

/// `requestLimitEnforcedValues`: the three in thousandths when none overflows that, else in
/// whole units.
fn comparable(request: Option<&Quantity>, limit: Option<&Quantity>, enforced: &Quantity) -> (i128, i128, i128) {
    let whole = |q| scaled(q, 1_000_000_000);
    let (r, l, e) = (whole(request), whole(limit), whole(Some(enforced)));
    if r <= MAX_MILLI_VALUE && l <= MAX_MILLI_VALUE && e <= MAX_MILLI_VALUE {
        let milli = |q| scaled(q, 1_000_000);
        return (milli(request), milli(limit), milli(Some(enforced)));
    }
    (r, l, e)
}

/// `minConstraint`.
fn below_min(kind: &str, name: &str, min: &Quantity, requests: &ResourceList, limits: &ResourceList) -> Option<String> {
    let (req, lim) = (requests.get(name), limits.get(name));
    let (r, l, e) = comparable(req, lim, min);
    let min = min.canonical();
    match (req, lim) {
        (None, _) => Some(format!("minimum {name} usage per {kind} is {min}.  No request is specified")),
        (Some(req), _) if r < e => {
            Some(format!("minimum {name} usage per {kind} is {min}, but request is {}", req.canonical()))
        }
        (_, Some(lim)) if l < e => {
            Some(format!("minimum {name} usage per {kind} is {min}, but limit is {}", lim.canonical()))
        }
        _ => None,
    }
}

/// `maxConstraint`.
fn above_max(kind: &str, name: &str, max: &Quantity, requests: &ResourceList, limits: &ResourceList) -> Option<String> {
    let (req, lim) = (requests.get(name), limits.get(name));
    let (r, l, e) = comparable(req, lim, max);
    let max = max.canonical();
    match (req, lim) {
        (_, None) => Some(format!("maximum {name} usage per {kind} is {max}.  No limit is specified")),
        (_, Some(lim)) if l > e => {
            Some(format!("maximum {name} usage per {kind} is {max}, but limit is {}", lim.canonical()))
        }
        (Some(req), _) if r > e => {
            Some(format!("maximum {name} usage per {kind} is {max}, but request is {}", req.canonical()))
        }
        _ => None,
    }
}

/// `maxRequestConstraint`: for claims, whose limits are not the user's to set.
fn request_above_max(kind: &str, name: &str, max: &Quantity, requests: &ResourceList) -> Option<String> {
    let req = requests.get(name);
    let (r, _, e) = comparable(req, None, max);
    let max = max.canonical();
    match req {
        None => Some(format!("maximum {name} usage per {kind} is {max}.  No request is specified")),
        Some(req) if r > e => {
            Some(format!("maximum {name} usage per {kind} is {max}, but request is {}", req.canonical()))
        }
        _ => None,
    }
}

/// `limitRequestRatioConstraint`: the ratio printed as Go's `%f` prints it.
fn above_ratio(
    kind: &str,
    name: &str,
    ratio: &Quantity,
    requests: &ResourceList,
    limits: &ResourceList,
) -> Option<String> {
    let (req, lim) = (requests.get(name), limits.get(name));
    let (r, l, _) = comparable(req, lim, ratio);
    let shown = ratio.canonical();
    if req.is_none() || r == 0 {
        return Some(format!(
            "{name} max limit to request ratio per {kind} is {shown}, but no request is specified or request is 0"
        ));
    }
    if lim.is_none() || l == 0 {
        return Some(format!(
            "{name} max limit to request ratio per {kind} is {shown}, but no limit is specified or limit is 0"
        ));
    }
    let observed = l as f64 / r as f64;
    let whole = scaled(Some(ratio), 1_000_000_000);
    let (compared, allowed) = if whole <= MAX_MILLI_VALUE {
        (observed * 1000.0, scaled(Some(ratio), 1_000_000) as f64)
    } else {
        (observed, whole as f64)
    };
    (compared > allowed).then(|| {
        format!("{name} max limit to request ratio per {kind} is {shown}, but provided ratio is {observed:.6}")
    })
}

/// Every min, max and ratio violation of `item` by one set of requests and limits.
fn check(kind: &str, item: &Value, requests: &ResourceList, limits: &ResourceList, out: &mut Vec<String>) {
    for (name, min) in bounds(item, "min") {
        out.extend(below_min(kind, &name, &min, requests, limits));
    }
    for (name, max) in bounds(item, "max") {
        out.extend(above_max(kind, &name, &max, requests, limits));
    }
    for (name, ratio) in bounds(item, "maxLimitRequestRatio") {
        out.extend(above_ratio(kind, &name, &ratio, requests, limits));
    }
}

/// `PodValidateLimitFunc`: each container against the Container items, the pod's totals
/// against the Pod items.
fn pod_violations(range: &Value, pod: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for item in range.pointer("/spec/limits").and_then(Value::as_array).into_iter().flatten() {
        match item["type"].as_str() {
            Some("Container") => {
                for list in ["containers", "initContainers"] {
                    for c in pod.pointer(&format!("/spec/{list}")).and_then(Value::as_array).into_iter().flatten() {
                        check(
                            "Container",
                            item,
                            &container_list(c, "requests"),
                            &container_list(c, "limits"),
                            &mut out,
                        );
                    }
                }
            }
            Some("Pod") => check("Pod", item, &pod_requests(pod, false), &pod_limits(pod, false), &mut out),
            _ => {}
        }
    }
    out
}

/// `PersistentVolumeClaimValidateLimitFunc`: the storage a claim requests, between the
/// PersistentVolumeClaim items' min and max.
fn claim_violations(range: &Value, claim: &Value) -> Vec<String> {
    let requests = container_list(&claim["spec"], "requests");
    let mut out = Vec::new();
    for item in items(range, "PersistentVolumeClaim") {
        for (name, min) in bounds(item, "min") {
            out.extend(below_min("PersistentVolumeClaim", &name, &min, &requests, &ResourceList::new()));
        }
        for (name, max) in bounds(item, "max") {
            out.extend(request_above_max("PersistentVolumeClaim", &name, &max, &requests));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{Objects, admit};
    use apimachinery::messages::AdmissionPhase;
    use serde_json::json;

    fn plugin(limits: Value) -> LimitRanger {
        let range = json!({"metadata": {"name": "lr"}, "spec": {"limits": limits}});
        LimitRanger::new(Arc::new(Objects::default().with("", "limitranges", "ns", range)))
    }

    fn request(resource: &str, operation: Operation, object: &Value) -> Admit {
        let mut request = admit(operation, "", resource, object.clone());
        request.phase = AdmissionPhase::Validating;
        request.old_object = (operation == Operation::Update).then(|| object.clone().into());
        request
    }

    async fn refusal(p: &LimitRanger, resource: &str, object: Value) -> String {
        let e = p
            .validate(&request(resource, Operation::Create, &object), &object, &mut Review::default())
            .await
            .unwrap_err();
        assert_eq!(e.code, 403);
        e.message
    }

    fn pod(containers: Value) -> Value {
        json!({"metadata": {"name": "x"}, "spec": {"containers": containers}})
    }

    #[tokio::test]
    async fn container_defaults_fill_what_containers_leave_out_and_say_so() {
        let p = plugin(json!([{"type": "Container",
            "default": {"cpu": "500m", "memory": "512Mi"}, "defaultRequest": {"cpu": "100m", "memory": "256Mi"}}]));
        let mut object = pod(json!([{"name": "app", "resources": {"requests": {"cpu": "200m"}}}]));
        object["spec"]["initContainers"] = json!([{"name": "init"}]);
        let req = request("pods", Operation::Create, &object);
        p.mutate(&req, &mut object, &mut Review::default()).await.unwrap();
        assert_eq!(
            object["spec"]["containers"][0]["resources"],
            json!({"requests": {"cpu": "200m", "memory": "256Mi"}, "limits": {"cpu": "500m", "memory": "512Mi"}})
        );
        assert_eq!(
            object["spec"]["initContainers"][0]["resources"]["requests"],
            json!({"cpu": "100m", "memory": "256Mi"})
        );
        assert_eq!(
            object["metadata"]["annotations"][ANNOTATION],
            "LimitRanger plugin set: memory request for container app; cpu, memory limit for container app; \
             cpu, memory request for init container init; cpu, memory limit for init container init"
        );
        // Pod updates are never defaulted: their resources cannot change.
        let mut untouched = pod(json!([{"name": "app"}]));
        let update = request("pods", Operation::Update, &untouched);
        p.mutate(&update, &mut untouched, &mut Review::default()).await.unwrap();
        assert!(untouched["spec"]["containers"][0].get("resources").is_none());
    }

    #[tokio::test]
    async fn container_bounds_are_all_reported_in_kubes_words() {
        let p = plugin(json!([{"type": "Container", "min": {"cpu": "100m"}, "max": {"memory": "1Gi"}}]));
        let message = refusal(
            &p,
            "pods",
            pod(json!([{"name": "a", "resources": {"requests": {"cpu": "50m", "memory": "1Gi"}, "limits": {"memory": "2Gi"}}}])),
        )
        .await;
        assert_eq!(
            message,
            "pods \"x\" is forbidden: [minimum cpu usage per Container is 100m, but request is 50m, \
             maximum memory usage per Container is 1Gi, but limit is 2Gi]"
        );
        let message = refusal(&p, "pods", pod(json!([{"name": "a"}]))).await;
        assert_eq!(
            message,
            "pods \"x\" is forbidden: [minimum cpu usage per Container is 100m.  No request is specified, \
             maximum memory usage per Container is 1Gi.  No limit is specified]"
        );
    }

    #[tokio::test]
    async fn ratios_and_pod_totals() {
        let p = plugin(json!([
            {"type": "Container", "maxLimitRequestRatio": {"cpu": "2"}},
            {"type": "Pod", "max": {"cpu": "1"}},
        ]));
        let sized = |req: &str, lim: &str| json!({"requests": {"cpu": req}, "limits": {"cpu": lim}});
        let message =
            refusal(&p, "pods", pod(json!([{"name": "a", "resources": sized("100m", "500m")}, {"name": "b", "resources": sized("400m", "600m")}])))
                .await;
        assert_eq!(
            message,
            "pods \"x\" is forbidden: [cpu max limit to request ratio per Container is 2, but provided ratio is 5.000000, \
             maximum cpu usage per Pod is 1, but limit is 1100m]"
        );
        let fits = pod(json!([{"name": "a", "resources": sized("200m", "400m")}]));
        p.validate(&request("pods", Operation::Create, &fits), &fits, &mut Review::default()).await.unwrap();
    }

    #[tokio::test]
    async fn claims_are_bounded_on_create_and_update() {
        let p =
            plugin(json!([{"type": "PersistentVolumeClaim", "min": {"storage": "1Gi"}, "max": {"storage": "10Gi"}}]));
        let claim =
            |size: &str| json!({"metadata": {"name": "c"}, "spec": {"resources": {"requests": {"storage": size}}}});
        assert_eq!(
            refusal(&p, "persistentvolumeclaims", claim("500Mi")).await,
            "persistentvolumeclaims \"c\" is forbidden: minimum storage usage per PersistentVolumeClaim is 1Gi, but request is 500Mi"
        );
        let big = claim("20Gi");
        let e = p
            .validate(&request("persistentvolumeclaims", Operation::Update, &big), &big, &mut Review::default())
            .await
            .unwrap_err();
        assert_eq!(
            e.message,
            "persistentvolumeclaims \"c\" is forbidden: maximum storage usage per PersistentVolumeClaim is 10Gi, but request is 20Gi"
        );
    }
}
