//! The built-in catalogue as a whole, and the kinds' selectable fields.

use serde_json::json;

use super::*;
use crate::catalogue;

#[test]
fn every_resource_is_found_by_name_and_kind_in_discovery_order() {
    let c = catalogue();
    assert_eq!(c.resources().len(), resources().len());
    assert_eq!(c.groups()[0].name, "");
    assert_eq!(c.groups().iter().filter(|g| g.name == "apps").count(), 1);
    assert_eq!(c.find_kind("apps", "v1", "Deployment").unwrap().resource, "deployments");
    let stores: Vec<String> = c.stores().iter().map(|d| d.storage_path.clone()).collect();
    assert_eq!(stores.iter().filter(|p| *p == "events").count(), 1, "two event groups, one store");
}

#[test]
fn crds_follow_admissionregistration_in_discovery() {
    // Both groups have priority 16700 in kube-aggregator; ties go by APIService name, and
    // `v1.admissionregistration.k8s.io` sorts before `v1.apiextensions.k8s.io`.
    let groups: Vec<String> = catalogue().groups().into_iter().map(|g| g.name).collect();
    let at = |g: &str| groups.iter().position(|x| x == g).unwrap();
    assert_eq!(at("apiextensions.k8s.io"), at("admissionregistration.k8s.io") + 1);
    assert_eq!(at("scheduling.k8s.io"), at("apiextensions.k8s.io") + 1);
    let crd = find("apiextensions.k8s.io", "v1", "customresourcedefinitions").unwrap();
    assert!(!crd.namespaced);
    assert_eq!(crd.short_names, ["crd", "crds"]);
    assert_eq!(crd.categories, ["api-extensions"]);
    assert!(crd.printer().is_none(), "kube's default table: name and creation time");
}

#[test]
fn pod_fields_render_like_kube() {
    let pods = find("", "v1", "pods").unwrap();
    let p = json!({"metadata": {"name": "p", "namespace": "ns"}, "spec": {"nodeName": "n1"},
                   "status": {"podIPs": [{"ip": "10.0.0.1"}]}});
    let f = pods.field_set(&p);
    assert!(f.contains(&("spec.nodeName", "n1".to_string())));
    assert!(f.contains(&("spec.hostNetwork", "false".to_string())), "unset bools read false");
    assert!(f.contains(&("status.podIP", "10.0.0.1".to_string())));
}

#[test]
fn job_successful_counts_succeeded_pods() {
    let jobs = find("batch", "v1", "jobs").unwrap();
    assert!(jobs.field_set(&json!({})).contains(&("status.successful", "0".to_string())));
    let j = json!({"status": {"succeeded": 2}});
    assert!(jobs.field_set(&j).contains(&("status.successful", "2".to_string())));
}

#[test]
fn event_source_falls_back_to_reporting_component() {
    let events = find("", "v1", "events").unwrap();
    let e = json!({"reportingComponent": "ctl", "involvedObject": {"name": "p"}, "type": "Warning"});
    let fields = events.field_set(&e);
    assert!(fields.contains(&("source", "ctl".to_string())));
    assert!(
        fields.contains(&("involvedObject.name", "p".to_string())) && fields.contains(&("type", "Warning".to_string()))
    );
    let with_source = json!({"reportingComponent": "ctl", "source": {"component": "kubelet"}});
    assert!(events.field_set(&with_source).contains(&("source", "kubelet".to_string())));
    assert_eq!(fields.len(), 13, "metadata.name, metadata.namespace and the 11 event fields: {fields:?}");
}

#[test]
fn events_round_trip_between_groups() {
    let v1 = find("events.k8s.io", "v1", "events").unwrap();
    let e = json!({"apiVersion": "events.k8s.io/v1", "kind": "Event", "note": "hi", "regarding": {"name": "p"}, "reason": "R"});
    let core = v1.strategy.to_storage(e.clone()).unwrap();
    assert_eq!(core["message"], "hi");
    assert_eq!(core["involvedObject"]["name"], "p");
    assert_eq!(core["apiVersion"], "v1");
    // Struct fields show though empty, as kube's JSON shows them.
    let mut served = e.clone();
    served["deprecatedSource"] = json!({});
    assert_eq!(v1.strategy.to_served(&core), Some(served));
    assert_eq!(v1.stored_as, Some((String::new(), "v1".to_string())));
    // A core name is no field of events.k8s.io: dropped; an unknown field stays for field
    // validation to report.
    let mixed =
        json!({"apiVersion": "events.k8s.io/v1", "kind": "Event", "note": "n", "message": "m", "colour": "blue"});
    let core = v1.strategy.to_storage(mixed).unwrap();
    assert_eq!((&core["message"], &core["colour"]), (&json!("n"), &json!("blue")));
    // Every renamed field travels both ways.
    let all = json!({"apiVersion": "events.k8s.io/v1", "kind": "Event", "regarding": {"name": "p"}, "note": "n",
        "reportingController": "c", "deprecatedSource": {"host": "h"}, "deprecatedFirstTimestamp": "2024-05-01T10:00:00Z",
        "deprecatedLastTimestamp": "2024-05-01T10:05:00Z", "deprecatedCount": 3, "eventTime": "2024-05-01T10:20:30.000001Z",
        "series": {"count": 2, "lastObservedTime": "2024-05-01T10:21:30.000001Z"}, "related": {"name": "n"},
        "reportingInstance": "i", "action": "A", "reason": "R", "type": "Normal"});
    let core = v1.strategy.to_storage(all.clone()).unwrap();
    assert_eq!(
        (&core["involvedObject"], &core["source"], &core["count"], &core["reportingComponent"]),
        (&json!({"name": "p"}), &json!({"host": "h"}), &json!(3), &json!("c"))
    );
    assert_eq!(v1.strategy.to_served(&core), Some(all));
}

#[test]
fn every_resource_stored_nowhere_has_an_action_and_nothing_stored_has_one() {
    use apimachinery::catalogue::Served;
    let actions = actions();
    for def in resources() {
        let action = actions.find(def, None).is_some();
        match def.served {
            Served::ByGateway(_) => assert!(action, "{} is stored nowhere and has no action", def.resource),
            Served::Stored => assert!(!action, "{} is stored, yet its create has an action", def.resource),
        }
    }
}
