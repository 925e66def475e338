//! The codec against bytes recorded from a reference kube-apiserver (see `fixtures/README.md`):
//! kube's protobuf of an object decodes to kube's JSON of the same object, and that JSON
//! encodes to kube's bytes, byte for byte.

use std::path::PathBuf;

use serde_json::Value;

fn fixture(name: &str) -> Vec<u8> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn json_fixture(name: &str) -> Value {
    serde_json::from_slice(&fixture(name)).unwrap()
}

/// `v` without null members: kube's JSON writes a zero Time as `null` (`creationTimestamp` of
/// a pod template), where this server's objects leave the member out. Nulls in arrays (an
/// `enum` of a schema) are values and stay.
fn without_null_members(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter().filter(|(_, x)| !x.is_null()).map(|(k, x)| (k.clone(), without_null_members(x))).collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(without_null_members).collect()),
        other => other.clone(),
    }
}

/// A GET or LIST answered in protobuf and in JSON at the same resourceVersion.
fn same_object_both_ways(stem: &str) {
    let (pb, json) = (fixture(&format!("{stem}.pb")), json_fixture(&format!("{stem}.json")));
    let decoded = protobuf::decode_object(&pb).unwrap();
    assert_eq!(decoded, without_null_members(&json), "{stem}: kube's protobuf read here differs from kube's JSON");
    let encoded = protobuf::encode_object(&json).unwrap();
    assert!(
        encoded == pb,
        "{stem}: kube's JSON encoded here differs from kube's protobuf\n{}",
        first_difference(&encoded, &pb)
    );
}

/// Where two byte strings part, for a readable failure.
fn first_difference(ours: &[u8], kube: &[u8]) -> String {
    let at = ours.iter().zip(kube).position(|(a, b)| a != b).unwrap_or(ours.len().min(kube.len()));
    let window = |b: &[u8]| format!("{:02x?}", &b[at.saturating_sub(16)..(at + 16).min(b.len())]);
    format!(
        "at byte {at} of {} (ours) / {} (kube):\n ours {}\n kube {}",
        ours.len(),
        kube.len(),
        window(ours),
        window(kube)
    )
}

#[test]
fn a_custom_resource_definition_reads_and_writes_as_kube_does() {
    // Its schema holds every special JSON form a CRD admits: JSON values (default, enum with
    // a null, example), a schema as items, a schema as additionalProperties, x-kubernetes-*
    // fields, doubles, validation rules; a scale subresource and printer columns.
    same_object_both_ways("crd.get");
}

#[test]
fn a_custom_resource_definition_list_reads_and_writes_as_kube_does() {
    same_object_both_ways("crd.list");
}

#[test]
fn api_services_read_and_write_as_kube_does() {
    // One backed by a Service (caBundle bytes, a port), one local (no service at all).
    same_object_both_ways("apiservice.get");
    same_object_both_ways("apiservice-local.get");
    same_object_both_ways("apiservice.list");
}

/// A watch recorded in protobuf and in JSON (the same events): frame by frame, each decodes
/// to the JSON event and the JSON event encodes to the frame.
fn same_watch_both_ways(stem: &str) {
    let pb = fixture(&format!("{stem}.pb"));
    let json = String::from_utf8(fixture(&format!("{stem}.json"))).unwrap();
    let events: Vec<Value> = json.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert!(!events.is_empty());
    let mut rest = pb.as_slice();
    for event in &events {
        let (event_type, object, used) = protobuf::read_watch_frame(rest).unwrap().expect("a whole frame");
        let expected = without_null_members(&event["object"]);
        assert_eq!((event_type.as_str(), &object), (event["type"].as_str().unwrap(), &expected), "{stem}");
        let frame = protobuf::watch_frame(&event_type, &event["object"]).unwrap();
        assert!(frame == rest[..used], "{stem}: {}", first_difference(&frame, &rest[..used]));
        rest = &rest[used..];
    }
    assert!(rest.is_empty(), "{stem}: frames left after the JSON events");
}

#[test]
fn watches_of_both_kinds_frame_as_kube_does() {
    same_watch_both_ways("crd.watch");
    same_watch_both_ways("apiservice.watch");
}

#[test]
fn custom_resources_have_no_message_whatever_their_group_is_called() {
    // A custom group whose first label is a built-in group's, with a built-in kind's name.
    for (api_version, kind) in [("apps.example.com/v1", "Deployment"), ("example.com/v1", "Widget")] {
        assert!(!protobuf::supports(api_version, kind), "{api_version} {kind}");
    }
    assert!(protobuf::supports("apiextensions.k8s.io/v1", "CustomResourceDefinition"));
    assert!(protobuf::supports("apiregistration.k8s.io/v1", "APIServiceList"));
    // No longer served by kube 1.30.
    assert!(!protobuf::supports("apiextensions.k8s.io/v1beta1", "CustomResourceDefinition"));
}

#[test]
fn built_in_kinds_read_and_write_as_kube_does() {
    // A Pod (quantities, an IntOrString port by name, defaults), a Deployment (IntOrString
    // percent and zero), a Service (targetPort by name and defaulted by number), an Event
    // (MicroTimes with microseconds, a series).
    for stem in ["pod.get", "deployment.get", "service.get", "event.get"] {
        same_object_both_ways(stem);
    }
}
