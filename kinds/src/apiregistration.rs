//! `apiregistration.k8s.io`: what an APIService says, shared by its kind (`builtin::apiservice`)
//! and by the gateway's aggregator, which proxies remote group versions, keeps their
//! `Available` condition and registers the local ones (kube-aggregator's
//! `pkg/apis/apiregistration` helpers and `cmd/kube-apiserver/app/aggregator.go`).
//!
//! An APIService named `<version>.<group>` (`v1.` for the core group) says which server
//! answers that group version: this one when `spec.service` is absent (a *local* APIService),
//! else the Service it names (a *remote* one). Its priorities order groups and versions in
//! discovery.

use std::cmp::Ordering;

use serde_json::{Value, json};

use apimachinery::version::compare_kube_aware_versions;

/// The group.
pub const GROUP: &str = "apiregistration.k8s.io";

/// The label marking APIServices the server keeps itself.
pub const AUTOMANAGED_LABEL: &str = "kube-aggregator.kubernetes.io/automanaged";
/// [`AUTOMANAGED_LABEL`]'s value on built-in group versions: kube syncs them once, at start.
pub const AUTOMANAGED_ON_START: &str = "onstart";
/// [`AUTOMANAGED_LABEL`]'s value on custom resources' group versions: kept while served.
pub const AUTOMANAGED_ALWAYS: &str = "true";

/// The condition type every APIService has in its status.
pub const AVAILABLE: &str = "Available";

/// `apiregistration.k8s.io` itself is no APIService, and sorts above every group
/// (kube's `APIRegistrationGroupPriority`).
pub const APIREGISTRATION_GROUP_PRIORITY: i32 = 20001;

/// Where a group version sorts in discovery: groups by `group` (highest first), versions in a
/// group by `version` (highest first, then by kube's version order).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Priority {
    /// `spec.groupPriorityMinimum`.
    pub group: i32,
    /// `spec.versionPriority`.
    pub version: i32,
}

/// The priorities of custom resources' group versions (kube's `crdregistration` controller).
pub const CRD_PRIORITY: Priority = Priority { group: 1000, version: 100 };

/// kube-apiserver 1.30's `apiVersionPriorities`: `(group, version, groupPriorityMinimum,
/// versionPriority)`. A built-in group version missing here gets no APIService (kube logs
/// `Skipping APIService creation`).
const BUILTIN_PRIORITIES: &[(&str, &str, i32, i32)] = &[
    ("", "v1", 18000, 1),
    ("apps", "v1", 17800, 15),
    ("events.k8s.io", "v1", 17750, 15),
    ("events.k8s.io", "v1beta1", 17750, 5),
    ("authentication.k8s.io", "v1", 17700, 15),
    ("authentication.k8s.io", "v1beta1", 17700, 9),
    ("authentication.k8s.io", "v1alpha1", 17700, 1),
    ("authorization.k8s.io", "v1", 17600, 15),
    ("autoscaling", "v2", 17500, 30),
    ("autoscaling", "v1", 17500, 15),
    ("autoscaling", "v2beta1", 17500, 9),
    ("autoscaling", "v2beta2", 17500, 1),
    ("batch", "v1", 17400, 15),
    ("batch", "v1beta1", 17400, 9),
    ("batch", "v2alpha1", 17400, 9),
    ("certificates.k8s.io", "v1", 17300, 15),
    ("certificates.k8s.io", "v1alpha1", 17300, 1),
    ("networking.k8s.io", "v1", 17200, 15),
    ("networking.k8s.io", "v1alpha1", 17200, 1),
    ("policy", "v1", 17100, 15),
    ("policy", "v1beta1", 17100, 9),
    ("rbac.authorization.k8s.io", "v1", 17000, 15),
    ("storage.k8s.io", "v1", 16800, 15),
    ("storage.k8s.io", "v1beta1", 16800, 9),
    ("storage.k8s.io", "v1alpha1", 16800, 1),
    ("apiextensions.k8s.io", "v1", 16700, 15),
    ("admissionregistration.k8s.io", "v1", 16700, 15),
    ("admissionregistration.k8s.io", "v1beta1", 16700, 12),
    ("admissionregistration.k8s.io", "v1alpha1", 16700, 9),
    ("scheduling.k8s.io", "v1", 16600, 15),
    ("coordination.k8s.io", "v1", 16500, 15),
    ("node.k8s.io", "v1", 16300, 15),
    ("node.k8s.io", "v1beta1", 16300, 9),
    ("node.k8s.io", "v1alpha1", 16300, 1),
    ("discovery.k8s.io", "v1", 16200, 15),
    ("discovery.k8s.io", "v1beta1", 16200, 12),
    ("flowcontrol.apiserver.k8s.io", "v1", 16100, 21),
    ("flowcontrol.apiserver.k8s.io", "v1beta3", 16100, 18),
    ("flowcontrol.apiserver.k8s.io", "v1beta2", 16100, 15),
    ("flowcontrol.apiserver.k8s.io", "v1beta1", 16100, 12),
    ("flowcontrol.apiserver.k8s.io", "v1alpha1", 16100, 9),
    ("internal.apiserver.k8s.io", "v1alpha1", 16000, 9),
    ("resource.k8s.io", "v1alpha2", 15900, 9),
    ("storagemigration.k8s.io", "v1alpha1", 15800, 9),
];

/// The priorities kube gives a built-in group version, if it registers one for it.
pub fn builtin_priority(group: &str, version: &str) -> Option<Priority> {
    BUILTIN_PRIORITIES
        .iter()
        .find(|(g, v, ..)| *g == group && *v == version)
        .map(|(_, _, group, version)| Priority { group: *group, version: *version })
}

/// The priority of a group served here: `apiregistration.k8s.io` above all, a built-in group
/// version by kube's table, anything else (custom resources) as kube registers CRDs.
pub fn local_priority(group: &str, version: &str) -> Priority {
    if group == GROUP {
        return Priority { group: APIREGISTRATION_GROUP_PRIORITY, version: 1 };
    }
    builtin_priority(group, version).unwrap_or(CRD_PRIORITY)
}

/// The name of the APIService of a group version: `<version>.<group>` (`v1.` for core).
pub fn name_of(group: &str, version: &str) -> String {
    format!("{version}.{group}")
}

/// How two versions of a group rank in discovery (`Less`: `a` first): the higher
/// `versionPriority`, then kube's version order.
pub fn compare_versions(a: (&str, i32), b: (&str, i32)) -> Ordering {
    b.1.cmp(&a.1).then_with(|| compare_kube_aware_versions(a.0, b.0))
}

/// The Service a remote APIService names.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ServiceReference {
    /// `namespace`.
    pub namespace: String,
    /// `name`.
    pub name: String,
    /// `port` (443 by default).
    pub port: i64,
}

/// An APIService's spec, read once from its JSON.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApiServiceSpec {
    /// `metadata.name`.
    pub name: String,
    /// `spec.group`.
    pub group: String,
    /// `spec.version`.
    pub version: String,
    /// `spec.service`: `None` for a local APIService.
    pub service: Option<ServiceReference>,
    /// `spec.caBundle`, decoded (PEM).
    pub ca_bundle: Vec<u8>,
    /// `spec.insecureSkipTLSVerify`.
    pub insecure_skip_tls_verify: bool,
    /// The priorities.
    pub priority: Priority,
}

impl ApiServiceSpec {
    /// Reads an APIService object.
    pub fn of(obj: &Value) -> ApiServiceSpec {
        let spec = obj.get("spec").unwrap_or(&Value::Null);
        let text = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        let int = |k: &str| spec.get(k).and_then(Value::as_i64).unwrap_or(0) as i32;
        let service = spec.get("service").filter(|s| s.is_object()).map(|s| ServiceReference {
            namespace: text(s, "namespace"),
            name: text(s, "name"),
            port: s.get("port").and_then(Value::as_i64).unwrap_or(443),
        });
        ApiServiceSpec {
            name: obj.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("").to_string(),
            group: text(spec, "group"),
            version: text(spec, "version"),
            service,
            ca_bundle: ca_bundle(spec),
            insecure_skip_tls_verify: spec.get("insecureSkipTLSVerify").and_then(Value::as_bool).unwrap_or(false),
            priority: Priority { group: int("groupPriorityMinimum"), version: int("versionPriority") },
        }
    }
}

pub use validation::apiregistration::ca_bundle;

/// The `Available` condition, if set.
pub fn available_condition(obj: &Value) -> Option<&Value> {
    obj.pointer("/status/conditions")?.as_array()?.iter().find(|c| c["type"] == AVAILABLE)
}

/// Whether the APIService is `Available=True` (kube's `IsAPIServiceConditionTrue`).
pub fn is_available(obj: &Value) -> bool {
    available_condition(obj).is_some_and(|c| c["status"] == "True")
}

/// The `Available` condition an APIService should carry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Availability {
    /// `True`, `False` or `Unknown`.
    pub status: &'static str,
    /// The reason (`Local`, `Passed`, `FailedDiscoveryCheck`, ...).
    pub reason: &'static str,
    /// The message, as kube words it.
    pub message: String,
}

impl Availability {
    /// kube's `NewLocalAvailableAPIServiceCondition`.
    pub fn local() -> Availability {
        Availability { status: "True", reason: "Local", message: "Local APIServices are always available".into() }
    }
}

/// kube's `SetAPIServiceCondition` for `Available`: reason and message always replaced, the
/// transition time only when the status changes.
pub fn set_availability(obj: &mut Value, availability: &Availability, now: &str) {
    if !obj["status"].is_object() {
        obj["status"] = json!({});
    }
    if !obj["status"]["conditions"].is_array() {
        obj["status"]["conditions"] = json!([]);
    }
    let conditions = obj["status"]["conditions"].as_array_mut().expect("an array");
    let Availability { status, reason, message } = availability;
    match conditions.iter_mut().find(|c| c["type"] == AVAILABLE) {
        Some(c) => {
            if c["status"] != *status {
                c["lastTransitionTime"] = (*now).into();
            }
            c["status"] = (*status).into();
            c["reason"] = (*reason).into();
            c["message"] = message.as_str().into();
        }
        None => conditions.push(json!({"type": AVAILABLE, "status": status, "lastTransitionTime": now,
            "reason": reason, "message": message})),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_served_builtin_group_version_has_kube_priorities() {
        for def in crate::builtin::resources() {
            if def.group != GROUP {
                assert!(builtin_priority(&def.group, &def.version).is_some(), "{}", def.api_version());
            }
        }
        assert_eq!(builtin_priority("", "v1"), Some(Priority { group: 18000, version: 1 }));
        assert_eq!(local_priority("widgets.example.com", "v1"), CRD_PRIORITY);
        assert_eq!(local_priority(GROUP, "v1").group, 20001);
    }

    #[test]
    fn builtin_groups_sort_in_catalogue_order() {
        // The catalogue lists groups in kube's discovery order, which follows these priorities
        // (core apart: it is served at /api).
        let groups: Vec<String> =
            crate::catalogue().groups().into_iter().map(|g| g.name).filter(|g| !g.is_empty()).collect();
        let mut sorted = groups.clone();
        sorted.sort_by(|a, b| {
            let p = |g: &str| local_priority(g, "v1").group;
            p(b).cmp(&p(a)).then_with(|| a.cmp(b))
        });
        assert_eq!(groups, sorted);
    }

    #[test]
    fn versions_rank_by_priority_then_kube_order() {
        let mut v = vec![("v1beta1", 100), ("v1", 100), ("v2alpha1", 100), ("v1alpha1", 200)];
        v.sort_by(|a, b| compare_versions(*a, *b));
        assert_eq!(v, [("v1alpha1", 200), ("v1", 100), ("v1beta1", 100), ("v2alpha1", 100)]);
    }

    #[test]
    fn a_spec_reads_defaults_and_decodes_the_ca_bundle() {
        let s = ApiServiceSpec::of(&json!({"metadata": {"name": "v1.example.com"}, "spec": {
            "group": "example.com", "version": "v1", "service": {"namespace": "ns", "name": "svc"},
            "caBundle": "UEVN", "groupPriorityMinimum": 100, "versionPriority": 10}}));
        assert_eq!(s.service, Some(ServiceReference { namespace: "ns".into(), name: "svc".into(), port: 443 }));
        assert_eq!(s.ca_bundle, b"PEM");
        assert_eq!(s.priority, Priority { group: 100, version: 10 });
        assert!(ApiServiceSpec::of(&json!({"spec": {"version": "v1"}})).service.is_none());
    }

    #[test]
    fn setting_availability_moves_the_transition_time_only_on_a_flip() {
        let mut obj = json!({});
        let down = Availability { status: "False", reason: "FailedDiscoveryCheck", message: "gone".into() };
        set_availability(&mut obj, &down, "t1");
        let again = Availability { message: "still gone".into(), ..down.clone() };
        set_availability(&mut obj, &again, "t2");
        let c = available_condition(&obj).unwrap();
        assert_eq!((c["lastTransitionTime"].as_str(), c["message"].as_str()), (Some("t1"), Some("still gone")));
        assert!(!is_available(&obj));
        set_availability(&mut obj, &Availability::local(), "t3");
        assert_eq!(available_condition(&obj).unwrap()["lastTransitionTime"], "t3");
        assert!(is_available(&obj));
    }
}
