//! What each kind of object charges a quota, and which quotas cover it (kube: the
//! `quota.Evaluator`s of `pkg/quota/v1/evaluator/core` and the generic object counter of
//! `k8s.io/apiserver/pkg/quota/v1/generic`).
//!
//! Pods, Services and PersistentVolumeClaims have evaluators of their own; every other resource
//! is counted (`count/<resource>.<group>`, `count/<resource>` in the core group), four core ones
//! also under their legacy names (`configmaps`, `secrets`, `replicationcontrollers`,
//! `resourcequotas`).

use chrono::{DateTime, Utc};
use serde_json::Value;

use super::pods;
use super::resources::{ResourceList, units};
use apimachinery::messages::Operation;

/// Core resources counted under a legacy name as well as `count/<resource>`.
const LEGACY_COUNTS: &[&str] = &["configmaps", "resourcequotas", "replicationcontrollers", "secrets"];

/// The pod resources quota measures besides hugepages and extended resources.
const POD_RESOURCES: &[&str] = &[
    "count/pods",
    "cpu",
    "memory",
    "ephemeral-storage",
    "requests.cpu",
    "requests.memory",
    "requests.ephemeral-storage",
    "limits.cpu",
    "limits.memory",
    "limits.ephemeral-storage",
    "pods",
];

/// The pod resources every container must state once a quota limits them: kube's
/// backward-compatible mistake, kept for cpu and memory only.
const MUST_SPECIFY: &[&str] = &["cpu", "memory", "requests.cpu", "requests.memory", "limits.cpu", "limits.memory"];

const SERVICE_RESOURCES: &[&str] = &["count/services", "services", "services.nodeports", "services.loadbalancers"];

/// `<class>.storageclass.storage.k8s.io/<resource>`: claims and storage per storage class.
const STORAGE_CLASS_SUFFIX: &str = ".storageclass.storage.k8s.io/";

/// Resources quota never measures: never stored (reviews, bindings), or never quota-ed in kube
/// (events).
const IGNORED: &[(&str, &str)] = &[
    ("", "events"),
    ("events.k8s.io", "events"),
    ("", "bindings"),
    ("", "componentstatuses"),
    ("authentication.k8s.io", "tokenreviews"),
    ("authentication.k8s.io", "selfsubjectreviews"),
    ("authorization.k8s.io", "subjectaccessreviews"),
    ("authorization.k8s.io", "selfsubjectaccessreviews"),
    ("authorization.k8s.io", "localsubjectaccessreviews"),
    ("authorization.k8s.io", "selfsubjectrulesreviews"),
];

/// Whether quota leaves writes of this resource alone.
pub fn ignored(group: &str, resource: &str) -> bool {
    IGNORED.contains(&(group, resource))
}

/// `generic.ObjectCountQuotaResourceNameFor`.
pub fn object_count_name(group: &str, resource: &str) -> String {
    if group.is_empty() { format!("count/{resource}") } else { format!("count/{resource}.{group}") }
}

/// How usage of one group resource is measured.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Evaluator {
    /// Pods: their count and compute resources, scoped.
    Pods,
    /// Services: their count, node ports and load balancers.
    Services,
    /// PersistentVolumeClaims: their count and storage, overall and per storage class.
    PersistentVolumeClaims,
    /// Any other resource: a count of objects.
    Objects {
        /// API group.
        group: String,
        /// Plural resource.
        resource: String,
    },
}

/// One requirement of a quota's scope: a `spec.scopes` entry (an `Exists`), or a
/// `spec.scopeSelector` expression.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScopeRequirement {
    /// `Terminating`, `BestEffort`, `PriorityClass`, ...
    pub scope_name: String,
    /// `In`, `NotIn`, `Exists`, `DoesNotExist`.
    pub operator: String,
    /// The values `In` and `NotIn` compare with.
    pub values: Vec<String>,
}

/// `getScopeSelectorsFromQuota`: the quota's scopes, then its selector's expressions.
pub fn scope_requirements(quota: &Value) -> Vec<ScopeRequirement> {
    let strings = |v: &Value| apimachinery::object::string_list(Some(v));
    let mut out: Vec<ScopeRequirement> = strings(&quota["spec"]["scopes"])
        .into_iter()
        .map(|scope_name| ScopeRequirement { scope_name, operator: "Exists".into(), values: Vec::new() })
        .collect();
    let expressions = quota.pointer("/spec/scopeSelector/matchExpressions").and_then(Value::as_array);
    out.extend(expressions.into_iter().flatten().map(|e| ScopeRequirement {
        scope_name: e["scopeName"].as_str().unwrap_or_default().to_string(),
        operator: e["operator"].as_str().unwrap_or_default().to_string(),
        values: strings(&e["values"]),
    }));
    out
}

impl Evaluator {
    /// The evaluator of writes to `resource` in `group`.
    pub fn for_resource(group: &str, resource: &str) -> Evaluator {
        match (group, resource) {
            ("", "pods") => Evaluator::Pods,
            ("", "services") => Evaluator::Services,
            ("", "persistentvolumeclaims") => Evaluator::PersistentVolumeClaims,
            _ => Evaluator::Objects { group: group.to_string(), resource: resource.to_string() },
        }
    }

    /// The group and resource it measures.
    pub fn group_resource(&self) -> (&str, &str) {
        match self {
            Evaluator::Pods => ("", "pods"),
            Evaluator::Services => ("", "services"),
            Evaluator::PersistentVolumeClaims => ("", "persistentvolumeclaims"),
            Evaluator::Objects { group, resource } => (group, resource),
        }
    }

    /// The names an object counter charges: `count/...`, and the legacy name if it has one.
    fn counted_names(group: &str, resource: &str) -> Vec<String> {
        let mut names = vec![object_count_name(group, resource)];
        if group.is_empty() && LEGACY_COUNTS.contains(&resource) {
            names.push(resource.to_string());
        }
        names
    }

    /// `MatchingResources`: which of a quota's resource `names` this evaluator measures.
    pub fn matching_resources(&self, names: &[String]) -> Vec<String> {
        let keep = |name: &str| match self {
            Evaluator::Pods => {
                POD_RESOURCES.contains(&name)
                    || name.starts_with("hugepages-")
                    || name.starts_with("requests.hugepages-")
                    || pods::is_extended_for_quota(name)
            }
            Evaluator::Services => SERVICE_RESOURCES.contains(&name),
            Evaluator::PersistentVolumeClaims => {
                ["count/persistentvolumeclaims", "persistentvolumeclaims", "requests.storage"].contains(&name)
                    || ["persistentvolumeclaims", "requests.storage"]
                        .iter()
                        .any(|r| name.ends_with(&format!("{STORAGE_CLASS_SUFFIX}{r}")))
            }
            Evaluator::Objects { group, resource } => Self::counted_names(group, resource).iter().any(|n| n == name),
        };
        names.iter().filter(|n| keep(n)).cloned().collect()
    }

    /// `Handles`: whether a write can change what the object charges. Objects are charged when
    /// created; a Service's type and a claim's storage can change after; a pod's resources
    /// cannot, but whether it is `Terminating` can.
    pub fn handles(&self, operation: Operation, object: &Value, old: Option<&Value>) -> bool {
        match (self, operation) {
            (_, Operation::Create) => true,
            (Evaluator::Pods, Operation::Update) => {
                old.is_some_and(|old| pods::is_terminating(old) != pods::is_terminating(object))
            }
            (Evaluator::Services | Evaluator::PersistentVolumeClaims, Operation::Update) => true,
            _ => false,
        }
    }

    /// Whether `object` falls in the scope `requirement` names. Only pods have scopes: a scoped
    /// quota never covers other objects.
    pub fn matches_scope(&self, requirement: &ScopeRequirement, object: &Value) -> bool {
        if *self != Evaluator::Pods {
            return false;
        }
        match requirement.scope_name.as_str() {
            "Terminating" => pods::is_terminating(object),
            "NotTerminating" => !pods::is_terminating(object),
            "BestEffort" => pods::is_best_effort(object),
            "NotBestEffort" => !pods::is_best_effort(object),
            "PriorityClass" => {
                let class = object.pointer("/spec/priorityClassName").and_then(Value::as_str).unwrap_or("");
                let listed = requirement.values.iter().any(|v| v == class);
                match requirement.operator.as_str() {
                    "Exists" => !class.is_empty(),
                    "DoesNotExist" => class.is_empty(),
                    "In" => !class.is_empty() && listed,
                    "NotIn" => class.is_empty() || !listed,
                    _ => false,
                }
            }
            "CrossNamespacePodAffinity" => uses_cross_namespace_affinity(object),
            _ => false,
        }
    }

    /// `generic.Matches`: the quota limits (`limited`) something this evaluator measures, and
    /// `object` is in every scope of the quota.
    pub fn covers(&self, limited: &[String], scopes: &[ScopeRequirement], object: &Value) -> bool {
        !self.matching_resources(limited).is_empty() && scopes.iter().all(|s| self.matches_scope(s, object))
    }

    /// `Constraints`: a pod under a quota of cpu or memory must state them in every container;
    /// the message lists what is missing where (`must specify limits.cpu for: a; requests.memory
    /// for: a,b`).
    pub fn constraints(&self, required: &[String], object: &Value) -> Result<(), String> {
        if *self != Evaluator::Pods {
            return Ok(());
        }
        let required: Vec<&str> = required.iter().map(String::as_str).filter(|r| MUST_SPECIFY.contains(r)).collect();
        let mut missing: std::collections::BTreeMap<&str, std::collections::BTreeSet<&str>> = Default::default();
        let listed = |list: &str| object.pointer(&format!("/spec/{list}")).and_then(Value::as_array).cloned();
        let all: Vec<Value> = listed("containers").into_iter().chain(listed("initContainers")).flatten().collect();
        for c in &all {
            let stated = pods::compute_usage(&pods::container_list(c, "requests"), &pods::container_list(c, "limits"));
            for r in required.iter().filter(|r| !stated.contains_key(**r)) {
                missing.entry(r).or_default().insert(c["name"].as_str().unwrap_or(""));
            }
        }
        if missing.is_empty() {
            return Ok(());
        }
        let parts: Vec<String> = missing
            .iter()
            .map(|(r, names)| format!("{r} for: {}", names.iter().copied().collect::<Vec<_>>().join(",")))
            .collect();
        Err(format!("must specify {}", parts.join("; ")))
    }

    /// `Usage`: what `object` charges.
    pub fn usage(&self, object: &Value, now: DateTime<Utc>) -> ResourceList {
        match self {
            Evaluator::Pods => pods::usage(object, now),
            Evaluator::Services => service_usage(object),
            Evaluator::PersistentVolumeClaims => claim_usage(object),
            Evaluator::Objects { group, resource } => {
                Self::counted_names(group, resource).into_iter().map(|n| (n, units(1))).collect()
            }
        }
    }

    /// `UsageStats`: what `items` charge together, those in every scope of `scopes`, for each of
    /// `resources` (zero where nothing charges it).
    pub fn usage_stats(
        &self,
        items: &[Value],
        scopes: &[ScopeRequirement],
        resources: &[String],
        now: DateTime<Utc>,
    ) -> ResourceList {
        let mut total: ResourceList = resources.iter().map(|r| (r.clone(), units(0))).collect();
        for item in items.iter().filter(|i| scopes.iter().all(|s| self.matches_scope(s, i))) {
            super::resources::add_into(&mut total, &self.usage(item, now));
        }
        total
    }
}

/// The evaluators a quota limiting `names` needs measured (the controller's registry): the
/// built-in ones, and an object counter for each `count/...` name.
pub fn evaluators_for(names: &[String]) -> Vec<Evaluator> {
    let mut out = vec![Evaluator::Pods, Evaluator::Services, Evaluator::PersistentVolumeClaims];
    out.extend(LEGACY_COUNTS.iter().map(|r| Evaluator::Objects { group: String::new(), resource: r.to_string() }));
    for name in names {
        let Some(counted) = name.strip_prefix("count/") else { continue };
        let (resource, group) = counted.split_once('.').unwrap_or((counted, ""));
        let evaluator = Evaluator::for_resource(group, resource);
        if !out.contains(&evaluator) {
            out.push(evaluator);
        }
    }
    out.retain(|e| !e.matching_resources(names).is_empty());
    out
}

/// The Service evaluator's usage: one Service, its ports as node ports when it opens them, one
/// load balancer when it asks for one.
fn service_usage(service: &Value) -> ResourceList {
    let ports = service.pointer("/spec/ports").and_then(Value::as_array).map_or(0, Vec::len) as i64;
    let kind = service.pointer("/spec/type").and_then(Value::as_str).unwrap_or("ClusterIP");
    let (node_ports, balancers) = match kind {
        "NodePort" => (ports, 0),
        "LoadBalancer" => (ports, 1),
        _ => (0, 0),
    };
    ResourceList::from([
        ("count/services".to_string(), units(1)),
        ("services".to_string(), units(1)),
        ("services.loadbalancers".to_string(), units(balancers)),
        ("services.nodeports".to_string(), units(node_ports)),
    ])
}

/// `GetPersistentVolumeClaimClass`: the beta annotation wins over `spec.storageClassName`.
fn claim_class(claim: &Value) -> &str {
    claim
        .pointer("/metadata/annotations/volume.beta.kubernetes.io~1storage-class")
        .or_else(|| claim.pointer("/spec/storageClassName"))
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// The claim evaluator's usage: one claim and its requested storage in whole bytes, overall and
/// under its storage class.
fn claim_usage(claim: &Value) -> ResourceList {
    let mut out = ResourceList::from([
        ("count/persistentvolumeclaims".to_string(), units(1)),
        ("persistentvolumeclaims".to_string(), units(1)),
    ]);
    let class = claim_class(claim);
    if !class.is_empty() {
        out.insert(format!("{class}{STORAGE_CLASS_SUFFIX}persistentvolumeclaims"), units(1));
    }
    let requested = pods::container_list(&claim["spec"], "requests").get("storage").copied();
    if let Some(mut storage) = requested {
        // Whole bytes, so the charge passes the quota's own validation (kube issue 94313).
        let unit = 1_000_000_000;
        if storage.nanos % unit != 0 {
            storage.nanos += unit - storage.nanos.rem_euclid(unit);
        }
        out.insert("requests.storage".into(), storage);
        if !class.is_empty() {
            out.insert(format!("{class}{STORAGE_CLASS_SUFFIX}requests.storage"), storage);
        }
    }
    out
}

/// `usesCrossNamespacePodAffinity`: an affinity or anti-affinity term naming other namespaces or
/// selecting them.
fn uses_cross_namespace_affinity(pod: &Value) -> bool {
    let crosses = |term: &Value| {
        term["namespaces"].as_array().is_some_and(|n| !n.is_empty())
            || term.get("namespaceSelector").is_some_and(|s| !s.is_null())
    };
    ["podAffinity", "podAntiAffinity"].iter().any(|kind| {
        let affinity = &pod["spec"]["affinity"][kind];
        let required = affinity["requiredDuringSchedulingIgnoredDuringExecution"].as_array();
        let preferred = affinity["preferredDuringSchedulingIgnoredDuringExecution"].as_array();
        required.into_iter().flatten().any(crosses)
            || preferred.into_iter().flatten().any(|w| crosses(&w["podAffinityTerm"]))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::quota::resources::pretty;
    use serde_json::json;

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn counted_objects_charge_their_count_and_legacy_name() {
        let now = Utc::now();
        let cm = Evaluator::for_resource("", "configmaps");
        assert_eq!(pretty(&cm.usage(&json!({}), now)), "configmaps=1,count/configmaps=1");
        let deploy = Evaluator::for_resource("apps", "deployments");
        assert_eq!(pretty(&deploy.usage(&json!({}), now)), "count/deployments.apps=1");
        assert_eq!(
            deploy.matching_resources(&names(&["pods", "count/deployments.apps"])),
            vec!["count/deployments.apps"]
        );
        assert!(!deploy.handles(Operation::Update, &json!({}), Some(&json!({}))));
    }

    #[test]
    fn services_charge_node_ports_and_load_balancers_by_type() {
        let svc = json!({"spec": {"type": "LoadBalancer", "ports": [{"port": 80}, {"port": 443}]}});
        assert_eq!(
            pretty(&Evaluator::Services.usage(&svc, Utc::now())),
            "count/services=1,services=1,services.loadbalancers=1,services.nodeports=2"
        );
    }

    #[test]
    fn claims_charge_whole_bytes_overall_and_per_storage_class() {
        let claim = json!({"spec": {"storageClassName": "gold", "resources": {"requests": {"storage": "1500m"}}}});
        assert_eq!(
            pretty(&Evaluator::PersistentVolumeClaims.usage(&claim, Utc::now())),
            "count/persistentvolumeclaims=1,gold.storageclass.storage.k8s.io/persistentvolumeclaims=1,\
             gold.storageclass.storage.k8s.io/requests.storage=2,persistentvolumeclaims=1,requests.storage=2"
        );
        let limited = names(&["gold.storageclass.storage.k8s.io/requests.storage", "pods"]);
        assert_eq!(Evaluator::PersistentVolumeClaims.matching_resources(&limited), limited[..1].to_vec());
    }

    #[test]
    fn scopes_select_pods_and_no_other_objects() {
        let quota = json!({"spec": {"scopes": ["NotBestEffort"], "scopeSelector": {"matchExpressions": [
            {"scopeName": "PriorityClass", "operator": "In", "values": ["high"]}]}}});
        let scopes = scope_requirements(&quota);
        let high = json!({"spec": {"priorityClassName": "high",
            "containers": [{"name": "a", "resources": {"requests": {"cpu": "1"}}}]}});
        let limited = names(&["pods"]);
        assert!(Evaluator::Pods.covers(&limited, &scopes, &high));
        let mut low = high.clone();
        low["spec"]["priorityClassName"] = json!("low");
        assert!(!Evaluator::Pods.covers(&limited, &scopes, &low));
        assert!(!Evaluator::Services.covers(&names(&["services"]), &scopes, &json!({})));
        let not_in =
            ScopeRequirement { scope_name: "PriorityClass".into(), operator: "NotIn".into(), values: names(&["high"]) };
        assert!(Evaluator::Pods.matches_scope(&not_in, &json!({"spec": {}})), "no class is not in the list");
    }

    #[test]
    fn pods_under_cpu_and_memory_quota_must_state_them_per_container() {
        let pod = json!({"spec": {"containers": [
            {"name": "a", "resources": {"requests": {"cpu": "1"}}},
            {"name": "b"},
        ]}});
        let required = names(&["requests.cpu", "limits.memory", "pods"]);
        assert_eq!(
            Evaluator::Pods.constraints(&required, &pod).unwrap_err(),
            "must specify limits.memory for: a,b; requests.cpu for: b"
        );
        assert_eq!(Evaluator::Pods.constraints(&names(&["pods"]), &pod), Ok(()));
    }

    #[test]
    fn a_quota_needs_only_the_evaluators_of_what_it_limits() {
        let hard = names(&["pods", "count/deployments.apps", "secrets"]);
        let evaluators = evaluators_for(&hard);
        assert_eq!(
            evaluators,
            vec![
                Evaluator::Pods,
                Evaluator::Objects { group: String::new(), resource: "secrets".into() },
                Evaluator::Objects { group: "apps".into(), resource: "deployments".into() },
            ]
        );
    }
}
