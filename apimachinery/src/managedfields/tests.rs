use serde_json::{Value, json};

use super::*;

const NOW: &str = "2026-12-05T01:00:00Z";
const LATER: &str = "2026-12-05T01:00:05Z";

fn manager(now: &str) -> FieldManager<'static> {
    crate::schema::prepare();
    FieldManager {
        node: crate::schema::kind_node("apps", "v1", "Deployment"),
        api_version: "apps/v1",
        kind: "Deployment",
        subresource: "",
        scope: Scope::NotStatus,
        now: Box::leak(now.to_string().into_boxed_str()),
    }
}

fn deployment(replicas: i64, image: &str) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "labels": {"app": "web"}},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "nginx", "image": image, "ports": [{"containerPort": 80, "protocol": "TCP"}]}]}
            }
        }
    })
}

/// The object as stored after a write: identity fields the server sets.
fn stored(mut object: Value) -> Value {
    object["metadata"]["uid"] = "u-1".into();
    object
}

fn entries(object: &Value) -> Vec<(String, String, String)> {
    object["metadata"]["managedFields"]
        .as_array()
        .map(|l| {
            l.iter()
                .map(|e| {
                    let s = |k: &str| e[k].as_str().unwrap_or_default().to_string();
                    (s("manager"), s("operation"), s("subresource"))
                })
                .collect()
        })
        .unwrap_or_default()
}

fn fields_of(object: &Value, manager: &str) -> String {
    let e = object["metadata"]["managedFields"]
        .as_array()
        .and_then(|l| l.iter().find(|e| e["manager"] == manager))
        .unwrap_or_else(|| panic!("no entry of {manager} in {object}"));
    FieldSet::from_fields_v1(&e["fieldsV1"]).unwrap().to_fields_v1()
}

#[test]
fn apply_creates_and_records_what_the_configuration_holds() {
    let created = manager(NOW).apply(None, &deployment(2, "nginx:1"), "kubectl", false).unwrap();
    assert_eq!(created["spec"]["replicas"], 2);
    assert_eq!(entries(&created), [("kubectl".into(), "Apply".into(), String::new())]);
    assert_eq!(
        fields_of(&created, "kubectl"),
        concat!(
            r#"{"f:metadata":{"f:labels":{"f:app":{}}},"f:spec":{"f:replicas":{},"f:selector":{},"#,
            r#""f:template":{"f:metadata":{"f:labels":{"f:app":{}}},"f:spec":{"f:containers":{"#,
            r#""k:{\"name\":\"nginx\"}":{"f:image":{},"f:name":{},"f:ports":{"#,
            r#""k:{\"containerPort\":80,\"protocol\":\"TCP\"}":{"f:containerPort":{},"f:protocol":{},".":{}}},"#,
            r#"".":{}}}}}}}"#
        )
    );
    assert_eq!(created["metadata"]["managedFields"][0]["time"], NOW);
}

#[test]
fn a_second_manager_changing_an_owned_value_conflicts_and_force_takes_it() {
    let live = stored(manager(NOW).apply(None, &deployment(2, "nginx:1"), "alice", false).unwrap());
    let bob =
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}, "spec": {"replicas": 5}});
    let e = manager(LATER).apply(Some(&live), &bob, "bob", false).unwrap_err();
    assert_eq!((e.code, e.reason), (409, Reason::Conflict));
    assert_eq!(e.message, r#"Apply failed with 1 conflict: conflict with "alice": .spec.replicas"#);
    assert_eq!(e.causes.len(), 1);
    assert_eq!(
        (e.causes[0].reason.as_str(), e.causes[0].message.as_str(), e.causes[0].field.as_str()),
        ("FieldManagerConflict", r#"conflict with "alice""#, ".spec.replicas")
    );
    let forced = manager(LATER).apply(Some(&live), &bob, "bob", true).unwrap();
    assert_eq!(forced["spec"]["replicas"], 5);
    assert_eq!(fields_of(&forced, "bob"), r#"{"f:spec":{"f:replicas":{}}}"#);
    assert!(!fields_of(&forced, "alice").contains("f:replicas"), "alice lost .spec.replicas");
}

#[test]
fn equal_values_are_shared_and_a_dropped_field_goes_only_when_nobody_else_owns_it() {
    let live = stored(manager(NOW).apply(None, &deployment(2, "nginx:1"), "alice", false).unwrap());
    // bob applies the same replicas: no conflict, both own it.
    let bob =
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}, "spec": {"replicas": 2}});
    let shared = stored(manager(LATER).apply(Some(&live), &bob, "bob", false).unwrap());
    assert!(fields_of(&shared, "alice").contains("f:replicas"));
    assert_eq!(fields_of(&shared, "bob"), r#"{"f:spec":{"f:replicas":{}}}"#);
    // alice stops applying replicas (shared: kept) and the container port (hers: removed).
    let mut config = deployment(2, "nginx:1");
    config["spec"].as_object_mut().unwrap().remove("replicas");
    config["spec"]["template"]["spec"]["containers"][0].as_object_mut().unwrap().remove("ports");
    let after = manager(LATER).apply(Some(&shared), &config, "alice", false).unwrap();
    assert_eq!(after["spec"]["replicas"], 2, "still owned by bob");
    assert!(after["spec"]["template"]["spec"]["containers"][0].get("ports").is_none(), "{after}");
    assert!(!fields_of(&after, "alice").contains("f:replicas"));
}

#[test]
fn containers_merge_by_name_and_ports_by_port_and_protocol() {
    let live = stored(manager(NOW).apply(None, &deployment(2, "nginx:1"), "alice", false).unwrap());
    let sidecar = json!({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {"template": {"spec": {"containers": [
            {"name": "nginx", "ports": [{"containerPort": 80, "protocol": "UDP"}]},
            {"name": "proxy", "image": "envoy"}
        ]}}}
    });
    let merged = manager(LATER).apply(Some(&live), &sidecar, "bob", false).unwrap();
    let containers = merged["spec"]["template"]["spec"]["containers"].as_array().unwrap();
    assert_eq!(containers.len(), 2);
    assert_eq!((containers[0]["name"].as_str(), containers[0]["image"].as_str()), (Some("nginx"), Some("nginx:1")));
    assert_eq!(
        containers[0]["ports"],
        json!([{"containerPort": 80, "protocol": "TCP"}, {"containerPort": 80, "protocol": "UDP"}])
    );
    assert_eq!(containers[1]["name"], "proxy");
}

#[test]
fn an_update_after_an_apply_is_recorded_beside_it() {
    let live = stored(manager(NOW).apply(None, &deployment(2, "nginx:1"), "kubectl", false).unwrap());
    let mut scaled = live.clone();
    scaled["spec"]["replicas"] = 4.into();
    manager(LATER).update(Some(&live), &mut scaled, "kube-controller-manager");
    assert_eq!(
        entries(&scaled),
        [
            ("kubectl".into(), "Apply".into(), String::new()),
            ("kube-controller-manager".into(), "Update".into(), String::new())
        ]
    );
    assert_eq!(fields_of(&scaled, "kube-controller-manager"), r#"{"f:spec":{"f:replicas":{}}}"#);
    assert!(!fields_of(&scaled, "kubectl").contains("f:replicas"), "the update took it");
    // Re-applying the old replicas now conflicts with the updater, named with its version.
    let e = manager(LATER).apply(Some(&stored(scaled)), &deployment(2, "nginx:1"), "kubectl", false).unwrap_err();
    assert_eq!(
        e.message,
        r#"Apply failed with 1 conflict: conflict with "kube-controller-manager" using apps/v1: .spec.replicas"#
    );
}

#[test]
fn a_create_records_new_maps_and_list_elements_as_members() {
    let mut created = deployment(1, "nginx:1");
    manager(NOW).update(None, &mut created, "kubectl-create");
    let fields = fields_of(&created, "kubectl-create");
    assert!(
        fields.starts_with(
            r#"{"f:metadata":{"f:labels":{"f:app":{},".":{}}},"f:spec":{"f:replicas":{},"f:selector":{},"#
        ),
        "{fields}"
    );
    assert!(
        fields.contains(r#""f:containers":{"k:{\"name\":\"nginx\"}":{"#),
        "containers itself is in the zero object: {fields}"
    );
}

#[test]
fn empty_managed_fields_in_a_write_reset_them_and_updates_then_go_untracked() {
    let live = stored(manager(NOW).apply(None, &deployment(2, "nginx:1"), "kubectl", false).unwrap());
    let mut new = live.clone();
    new["metadata"]["managedFields"] = json!([]);
    new["spec"]["replicas"] = 3.into();
    manager(LATER).update(Some(&live), &mut new, "editor");
    assert!(new["metadata"].get("managedFields").is_none(), "{new}");
}

#[test]
fn the_apply_must_name_the_kind_it_writes() {
    let mut config = deployment(1, "x");
    config["kind"] = "StatefulSet".into();
    let e = manager(NOW).apply(None, &config, "kubectl", false).unwrap_err();
    assert_eq!((e.code, e.message.as_str()), (400, "invalid object type: apps/v1, Kind=StatefulSet"));
}

#[test]
fn a_repeated_key_in_a_configuration_is_refused() {
    let mut config = deployment(1, "x");
    config["spec"]["template"]["spec"]["containers"] =
        json!([{"name": "a", "image": "x"}, {"name": "a", "image": "y"}]);
    let live = stored(manager(NOW).apply(None, &deployment(1, "x"), "kubectl", false).unwrap());
    let e = manager(NOW).apply(Some(&live), &config, "kubectl", false).unwrap_err();
    assert_eq!(e.code, 500);
    assert!(
        e.message.contains(r#".spec.template.spec.containers: duplicate entries for key [name="a"]"#),
        "{}",
        e.message
    );
}

#[test]
fn update_managers_beyond_ten_merge_into_ancient_changes() {
    let mut live = stored(manager(NOW).apply(None, &deployment(1, "x"), "kubectl", false).unwrap());
    for i in 0..12 {
        let mut new = live.clone();
        new["metadata"]["labels"][format!("l{i}")] = "v".into();
        let t = format!("2026-12-05T01:00:{:02}Z", 10 + i);
        manager(&t).update(Some(&live), &mut new, &format!("m{i:02}"));
        live = new;
    }
    let list = entries(&live);
    let updaters = list.iter().filter(|e| e.1 == "Update").count();
    assert_eq!(updaters, MAX_UPDATE_MANAGERS);
    assert!(list.iter().any(|e| e.0 == ANCIENT_CHANGES), "{list:?}");
    assert!(!list.iter().any(|e| e.0 == "m00" || e.0 == "m01" || e.0 == "m02"), "{list:?}");
}

#[test]
fn kubectl_takes_over_fields_its_client_side_apply_set() {
    // An object made by `kubectl apply` (client side): its last-applied annotation matches.
    let mut csa = deployment(2, "nginx:1");
    let last = crate::gofmt::go_json(&csa);
    csa["metadata"]["annotations"] = json!({LAST_APPLIED: last});
    manager(NOW).update(None, &mut csa, "kubectl-client-side-apply");
    let live = stored(csa);
    let mut config = deployment(3, "nginx:1");
    let ok = manager(LATER).apply(Some(&live), &config, "kubectl", false).expect("no conflict for kubectl");
    assert_eq!(ok["spec"]["replicas"], 3);
    let annotation: Value =
        serde_json::from_str(ok["metadata"]["annotations"][LAST_APPLIED].as_str().unwrap()).unwrap();
    assert_eq!(annotation["spec"]["replicas"], 3, "the annotation follows the server-side apply");
    // Another manager does conflict.
    config["spec"]["replicas"] = 4.into();
    assert_eq!(manager(LATER).apply(Some(&live), &config, "flux", false).unwrap_err().code, 409);
}
