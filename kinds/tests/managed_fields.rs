//! Managed fields of built-in kinds, walked with their installed schemas.

use serde_json::{Value, json};

use apimachinery::Reason;
use apimachinery::fieldpath::*;
use apimachinery::managedfields::*;

const NOW: &str = "2026-12-05T01:00:00Z";
const LATER: &str = "2026-12-05T01:00:05Z";

fn manager(now: &str) -> FieldManager<'static> {
    kinds::schema::prepare();
    FieldManager {
        node: apimachinery::schema::kind_node("apps", "v1", "Deployment"),
        api_version: "apps/v1",
        kind: "Deployment",
        subresource: "",
        scope: Scope(&[&["status"]]),
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
            r#""k:{\"name\":\"nginx\"}":{".":{},"f:image":{},"f:name":{},"f:ports":{"#,
            r#""k:{\"containerPort\":80,\"protocol\":\"TCP\"}":{".":{},"f:containerPort":{},"f:protocol":{}}}}}}}}}"#
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
            r#"{"f:metadata":{"f:labels":{".":{},"f:app":{}}},"f:spec":{"f:replicas":{},"f:selector":{},"#
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
    assert_eq!(
        e.message,
        r#"failed to create typed patch object (/web; apps/v1, Kind=Deployment): .spec.template.spec.containers: duplicate entries for key [name="a"]"#
    );
    // Also where nothing live has the list yet, and with a key field left out.
    let e = manager(NOW).apply(None, &config, "kubectl", false).unwrap_err();
    assert!(e.message.ends_with(r#"duplicate entries for key [name="a"]"#), "{}", e.message);
    config["spec"]["template"]["spec"]["containers"] = json!([{"image": "x"}]);
    let e = manager(NOW).apply(None, &config, "kubectl", false).unwrap_err();
    assert!(
        e.message.ends_with(r#".spec.template.spec.containers: element 0: associative list with keys has an element that omits key field "name" (and doesn't have default value)"#),
        "{}",
        e.message
    );
    // A port may leave its protocol out: the schema's default keys it.
    config["spec"]["template"]["spec"]["containers"] = json!([{"name": "a", "ports": [{"containerPort": 80}]}]);
    assert!(manager(NOW).apply(None, &config, "kubectl", false).is_ok());
}

#[test]
fn an_apply_may_not_carry_managed_fields() {
    let mut config = deployment(1, "x");
    config["metadata"]["managedFields"] = json!([{"manager": "m", "operation": "Apply"}]);
    let e = manager(NOW).apply(None, &config, "kubectl", false).unwrap_err();
    assert_eq!((e.code, e.message.as_str()), (400, "metadata.managedFields must be nil"));
}

#[test]
fn a_status_value_in_a_resource_apply_is_no_conflict() {
    // The status manager owns .status.replicas; an apply through the resource that carries a
    // different status neither conflicts nor takes it (status is reset there).
    let mut live = stored(manager(NOW).apply(None, &deployment(1, "x"), "kubectl", false).unwrap());
    live["status"] = json!({"replicas": 1});
    let status_manager = FieldManager { subresource: "status", scope: Scope(&[&["spec"]]), ..manager(NOW) };
    let mut with_status = live.clone();
    with_status["status"]["replicas"] = 2.into();
    status_manager.update(Some(&live), &mut with_status, "controller");
    let live = stored(with_status);
    let mut config = deployment(1, "x");
    config["status"] = json!({"replicas": 7});
    let applied = manager(LATER).apply(Some(&live), &config, "kubectl", false).expect("no conflict over status");
    assert!(fields_of(&applied, "controller").contains("f:replicas"), "the controller keeps .status.replicas");
}

#[test]
fn an_existing_ancient_changes_entry_takes_older_ones_without_failing() {
    let mut live = stored(manager(NOW).apply(None, &deployment(1, "x"), "kubectl", false).unwrap());
    // Ten updaters, the bucket the oldest of them, then a /scale entry (untimed: it sorts
    // before the bucket, so the bucket is reached while entries are still being merged).
    let mut managed = Managed::decode(&live).unwrap();
    for i in 0..10 {
        let manager = if i == 0 { ANCIENT_CHANGES.to_string() } else { format!("m{i}") };
        let id = ManagerId {
            manager,
            operation: Operation::Update,
            api_version: "apps/v1".into(),
            subresource: String::new(),
        };
        let mut set = FieldSet::default();
        set.insert(&[
            PathElement::Field("metadata".into()),
            PathElement::Field("labels".into()),
            PathElement::Field(format!("l{i}")),
        ]);
        managed
            .entries
            .insert(id, Owned { set, api_version: "apps/v1".into(), time: Some(format!("2026-12-05T00:00:{i:02}Z")) });
    }
    managed.encode_into(&mut live);
    let mut scaled = live.clone();
    scaled["spec"]["replicas"] = 3.into();
    let scale = FieldManager { subresource: "scale", scope: Scope::ALL, ..manager(LATER) };
    scale.update(Some(&live), &mut scaled, "hpa");
    let list = entries(&scaled);
    assert_eq!(list.iter().filter(|e| e.1 == "Update").count(), MAX_UPDATE_MANAGERS, "{list:?}");
    assert!(list.iter().any(|e| e.0 == ANCIENT_CHANGES));
    assert!(list.iter().any(|e| e.0 == "hpa"));
    let bucket = fields_of(&scaled, ANCIENT_CHANGES);
    assert!(bucket.contains("f:l0") && bucket.contains("f:l1"), "the bucket keeps its fields and takes m1's: {bucket}");
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
    let last = apimachinery::gofmt::go_json(&csa);
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

/// Golden outputs recorded from kube-apiserver (its integration tests compare them byte for
/// byte or entry by entry against a real server): the same inputs here must give the same
/// entries.
mod recorded {
    use super::*;

    fn fm(group: &str, version: &str, kind: &str, now: &str) -> FieldManager<'static> {
        kinds::schema::prepare();
        let api_version = if group.is_empty() { version.to_string() } else { format!("{group}/{version}") };
        FieldManager {
            node: apimachinery::schema::kind_node(group, version, kind),
            api_version: Box::leak(api_version.into_boxed_str()),
            kind: Box::leak(kind.to_string().into_boxed_str()),
            subresource: "",
            scope: Scope::ALL,
            now: Box::leak(now.to_string().into_boxed_str()),
        }
    }

    /// The entries without their times, as kube's tests compare them.
    fn untimed(object: &Value) -> Value {
        let mut list = object["metadata"]["managedFields"].clone();
        for e in list.as_array_mut().into_iter().flatten() {
            e.as_object_mut().unwrap().remove("time");
        }
        list
    }

    fn merge_patch(object: &Value, patch: Value) -> Value {
        let mut out = object.clone();
        json_patch::merge(&mut out, &patch);
        out
    }

    /// kube's `TestApplyManagedFields`: a ConfigMap applied, then merge-patched twice by an
    /// updater that changes an applied value.
    #[test]
    fn configmap_applied_then_updated() {
        let config = json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "test-cm", "namespace": "default", "labels": {"test-label": "test"}},
            "data": {"key": "value"}
        });
        let live = stored(fm("", "v1", "ConfigMap", NOW).apply(None, &config, "apply_test", false).unwrap());
        let mut next = merge_patch(&live, json!({"data": {"new-key": "value"}}));
        fm("", "v1", "ConfigMap", "2026-12-05T01:00:01Z").update(Some(&live), &mut next, "updater");
        let live = next;
        let mut next = merge_patch(&live, json!({"data": {"key": "new value"}}));
        fm("", "v1", "ConfigMap", "2026-12-05T01:00:02Z").update(Some(&live), &mut next, "updater");
        assert_eq!(
            untimed(&next),
            json!([
                {"manager": "apply_test", "operation": "Apply", "apiVersion": "v1", "fieldsType": "FieldsV1",
                 "fieldsV1": {"f:metadata": {"f:labels": {"f:test-label": {}}}}},
                {"manager": "updater", "operation": "Update", "apiVersion": "v1", "fieldsType": "FieldsV1",
                 "fieldsV1": {"f:data": {"f:key": {}, "f:new-key": {}}}}
            ])
        );
        assert_eq!(next["metadata"]["managedFields"][1]["time"], "2026-12-05T01:00:02Z", "the newest update's time");
    }

    /// kube's `TestDuplicatesInAssociativeLists`, its apply: ports keyed by (containerPort,
    /// protocol) with the protocol's default, env by name.
    #[test]
    fn daemonset_apply_entry() {
        let config: Value = serde_json::from_str(
            r#"{"apiVersion": "apps/v1", "kind": "DaemonSet",
                "metadata": {"name": "example-daemonset", "labels": {"app": "example"}},
                "spec": {"selector": {"matchLabels": {"app": "example"}},
                  "template": {"spec": {"containers": [{"name": "nginx", "image": "nginx",
                    "ports": [{"name": "port3", "containerPort": 443}],
                    "env": [{"name": "HOME", "value": "/usr/home"}]}]}}}}"#,
        )
        .unwrap();
        let made = fm("apps", "v1", "DaemonSet", NOW).apply(None, &config, "apply", false).unwrap();
        let fields = &made["metadata"]["managedFields"][0]["fieldsV1"];
        let set = FieldSet::from_fields_v1(fields).unwrap();
        assert_eq!(
            set.to_fields_v1(),
            concat!(
                r#"{"f:metadata":{"f:labels":{"f:app":{}}},"f:spec":{"f:selector":{},"f:template":{"f:spec":{"#,
                r#""f:containers":{"k:{\"name\":\"nginx\"}":{".":{},"f:env":{"k:{\"name\":\"HOME\"}":{".":{},"f:name":{},"f:value":{}}},"#,
                r#""f:image":{},"f:name":{},"f:ports":{"k:{\"containerPort\":443,\"protocol\":\"TCP\"}":{"#,
                r#"".":{},"f:containerPort":{},"f:name":{}}}}}}}}}"#
            )
        );
    }

    /// kube's `TestApplyFormerlyAtomicFields`: a PersistentVolume's `claimRef` is granular;
    /// the entry's raw bytes are what kube asserts.
    #[test]
    fn persistentvolume_apply_entry_bytes() {
        let config = json!({
            "kind": "PersistentVolume", "apiVersion": "v1",
            "metadata": {"labels": {"type": "local"}, "name": "pv-storage"},
            "spec": {
                "storageClassName": "", "capacity": {"storage": "16Mi"}, "accessModes": ["ReadWriteOnce"],
                "hostPath": {"path": "\u{201c}/tmp/mydata"}, "claimRef": {"name": "pvc-storage", "namespace": "default"}
            }
        });
        let made = fm("", "v1", "PersistentVolume", NOW).apply(None, &config, "apply_test", false).unwrap();
        let set = FieldSet::from_fields_v1(&made["metadata"]["managedFields"][0]["fieldsV1"]).unwrap();
        assert_eq!(
            set.to_fields_v1(),
            r#"{"f:metadata":{"f:labels":{"f:type":{}}},"f:spec":{"f:accessModes":{},"f:capacity":{"f:storage":{}},"f:claimRef":{"f:name":{},"f:namespace":{}},"f:hostPath":{"f:path":{}},"f:storageClassName":{}}}"#
        );
    }
}

#[test]
fn an_apply_that_drops_the_last_label_it_owned_removes_the_labels_and_keeps_the_object() {
    let m = manager(NOW);
    let created = stored(m.apply(None, &deployment(2, "nginx:1"), "kubectl", false).unwrap());
    let mut config = deployment(2, "nginx:1");
    config["metadata"].as_object_mut().unwrap().remove("labels");
    let applied = manager(LATER).apply(Some(&created), &config, "kubectl", false).unwrap();
    assert_eq!(applied["metadata"]["name"], "web", "{applied}");
    assert!(applied["metadata"].get("labels").is_none(), "{applied}");
    assert_eq!(applied["spec"]["replicas"], 2);
    assert!(fields_of(&applied, "kubectl").starts_with(r#"{"f:spec":"#), "{}", fields_of(&applied, "kubectl"));
    // And the manager can apply again.
    let again = manager(LATER).apply(Some(&stored(applied)), &deployment(3, "nginx:1"), "kubectl", false).unwrap();
    assert_eq!(again["metadata"]["labels"], json!({"app": "web"}));
    assert_eq!(again["spec"]["replicas"], 3);
}

#[test]
fn an_apply_configuration_with_a_field_the_schema_does_not_declare_is_refused_as_kube_refuses_it() {
    let mut config = deployment(2, "nginx:1");
    config["spec"]["bogus"] = json!(1);
    config["metadata"]["namespace"] = json!("team");
    let e = manager(NOW).apply(None, &config, "kubectl", false).unwrap_err();
    assert_eq!(e.code, 500);
    assert_eq!(
        e.message,
        "failed to create typed patch object (team/web; apps/v1, Kind=Deployment): .spec.bogus: field not declared in schema"
    );
    config["other"] = json!(2);
    let e = manager(NOW).apply(None, &config, "kubectl", false).unwrap_err();
    assert!(
        e.message
            .ends_with("errors:\n  .other: field not declared in schema\n  .spec.bogus: field not declared in schema"),
        "{}",
        e.message
    );
    // Below a map of anything (labels, annotations) every key is declared.
    let mut labelled = deployment(2, "nginx:1");
    labelled["metadata"]["labels"]["any.example.com/key"] = json!("v");
    assert!(manager(NOW).apply(None, &labelled, "kubectl", false).is_ok());
}

/// The last item of a list a manager owned, dropped from its configuration, goes, and so does
/// the list: an associative list (a container's ports, keyed by port and protocol), a set (the
/// object's finalizers) and an atomic list (a container's args) alike; an item another manager
/// owns stays.
#[test]
fn an_apply_that_drops_the_last_item_of_a_list_it_owned_removes_it() {
    let mut first = deployment(2, "nginx:1");
    first["metadata"]["finalizers"] = json!(["example.com/keep"]);
    first["spec"]["template"]["spec"]["containers"][0]["args"] = json!(["--quiet"]);
    let created = stored(manager(NOW).apply(None, &first, "kubectl", false).unwrap());
    assert_eq!(created["spec"]["template"]["spec"]["containers"][0]["ports"].as_array().map(Vec::len), Some(1));

    let mut config = deployment(2, "nginx:1");
    config["spec"]["template"]["spec"]["containers"][0].as_object_mut().unwrap().remove("ports");
    let applied = stored(manager(LATER).apply(Some(&created), &config, "kubectl", false).unwrap());
    let container = &applied["spec"]["template"]["spec"]["containers"][0];
    assert!(container.get("ports").is_none(), "{container}");
    assert!(container.get("args").is_none(), "{container}");
    assert!(applied["metadata"].get("finalizers").is_none(), "{applied}");
    let owned = fields_of(&applied, "kubectl");
    assert!(!owned.contains("f:ports") && !owned.contains("f:finalizers") && !owned.contains("f:args"), "{owned}");

    // A port another manager applied stays when the first drops its own.
    let with_port = manager(NOW).apply(Some(&applied), &deployment(2, "nginx:1"), "kubectl", false).unwrap();
    let udp = json!({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {"template": {"spec": {"containers": [
            {"name": "nginx", "ports": [{"containerPort": 53, "protocol": "UDP"}]}
        ]}}}
    });
    let shared = stored(manager(LATER).apply(Some(&stored(with_port)), &udp, "dns", false).unwrap());
    let dropped = manager(LATER).apply(Some(&shared), &config, "kubectl", false).unwrap();
    assert_eq!(
        dropped["spec"]["template"]["spec"]["containers"][0]["ports"],
        json!([{"containerPort": 53, "protocol": "UDP"}])
    );
}

#[test]
fn an_applied_deployment_owns_what_kube_says_it_owns() {
    kinds::schema::prepare();
    let node = apimachinery::schema::kind_node("apps", "v1", "Deployment").expect("Deployment's schema");
    let applied = json!({
        "metadata": {"labels": {"app": "web"}},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"spec": {"containers": [
                {"name": "nginx", "image": "nginx", "ports": [{"containerPort": 80, "protocol": "TCP"}]}
            ]}}
        }
    });
    let set = FieldSet::of_applied(&applied, Some(node));
    assert_eq!(
        set.to_fields_v1(),
        concat!(
            r#"{"f:metadata":{"f:labels":{"f:app":{}}},"#,
            r#""f:spec":{"f:replicas":{},"f:selector":{},"f:template":{"f:spec":{"f:containers":{"#,
            r#""k:{\"name\":\"nginx\"}":{".":{},"f:image":{},"f:name":{},"f:ports":{"#,
            r#""k:{\"containerPort\":80,\"protocol\":\"TCP\"}":{".":{},"f:containerPort":{},"f:protocol":{}}}}}}}}}"#
        ),
        "labels' keys are owned, not labels; the selector is atomic; containers by name, ports by \
         (containerPort, protocol)"
    );
}
