//! Field selectors as each built-in kind accepts them (kube's per-kind field label conversion).

use apimachinery::selector::FieldLabels;
use apimachinery::selector::fields::FieldSelector;

/// The field labels of a built-in resource.
fn find(group: &str, version: &str, resource: &str) -> Option<&'static FieldLabels> {
    crate::find(group, version, resource).map(|d| d.field_labels())
}

#[test]
fn validate_accepts_metadata_everywhere_kube_does() {
    for (g, r) in [("", "configmaps"), ("apps", "deployments"), ("rbac.authorization.k8s.io", "clusterroles")] {
        let def = find(g, "v1", r).unwrap();
        let s = FieldSelector::parse("metadata.name=a,metadata.namespace=b").unwrap();
        assert_eq!(s.validate_for(def).unwrap(), s);
    }
}

#[test]
fn validate_rejects_unknown_fields_with_default_wording() {
    let def = find("", "v1", "configmaps").unwrap();
    let e = FieldSelector::parse("data.x=1").unwrap().validate_for(def).unwrap_err();
    assert_eq!(e.code, 400);
    assert_eq!(e.message, r#""data.x" is not a known field selector: only "metadata.name", "metadata.namespace""#);
    // apps/v1 registers no conversion, so a ReplicaSet's status.replicas is rejected too.
    let rs = find("apps", "v1", "replicasets").unwrap();
    let e = FieldSelector::parse("status.replicas=1").unwrap().validate_for(rs).unwrap_err();
    assert_eq!(
        e.message,
        r#""status.replicas" is not a known field selector: only "metadata.name", "metadata.namespace""#
    );
}

#[test]
fn validate_uses_kind_specific_rules() {
    let pods = find("", "v1", "pods").unwrap();
    let s = FieldSelector::parse("spec.host=n1,status.phase=Running").unwrap().validate_for(pods).unwrap();
    assert_eq!(s.to_string(), "spec.nodeName=n1,status.phase=Running");
    let e = FieldSelector::parse("spec.foo=x").unwrap().validate_for(pods).unwrap_err();
    assert_eq!(e.message, "field label not supported: spec.foo");

    let nodes = find("", "v1", "nodes").unwrap();
    assert!(FieldSelector::parse("spec.unschedulable=true").unwrap().validate_for(nodes).is_ok());
    let e = FieldSelector::parse("metadata.namespace=x").unwrap().validate_for(nodes).unwrap_err();
    assert_eq!(e.message, "field label not supported: metadata.namespace");

    let jobs = find("batch", "v1", "jobs").unwrap();
    assert!(FieldSelector::parse("status.successful=1").unwrap().validate_for(jobs).is_ok());
    let e = FieldSelector::parse("status.active=1").unwrap().validate_for(jobs).unwrap_err();
    assert_eq!(e.message, r#"field label "status.active" not supported for Job"#);

    let secrets = find("", "v1", "secrets").unwrap();
    assert!(FieldSelector::parse("type=Opaque").unwrap().validate_for(secrets).is_ok());

    let services = find("", "v1", "services").unwrap();
    assert!(FieldSelector::parse("spec.clusterIP=None").unwrap().validate_for(services).is_ok());
}

#[test]
fn validate_maps_events_v1_names_to_core_labels() {
    let ev = find("events.k8s.io", "v1", "events").unwrap();
    let s = FieldSelector::parse("regarding.name=web,reportingController=kubelet").unwrap();
    assert_eq!(s.validate_for(ev).unwrap().to_string(), "involvedObject.name=web,reportingComponent=kubelet");
    let e = FieldSelector::parse("involvedObject.name=web").unwrap().validate_for(ev).unwrap_err();
    assert_eq!(e.message, "field label not supported: involvedObject.name");
    let core = find("", "v1", "events").unwrap();
    assert!(FieldSelector::parse("involvedObject.name=web,source=kubelet").unwrap().validate_for(core).is_ok());
}
