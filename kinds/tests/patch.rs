//! `apply_patch` on built-in kinds, whose installed schemas drive strategic merge patch.

use apimachinery::patch::*;
use serde_json::{Value, json};

/// A stored Deployment, server-defaulted fields included.
fn deployment() -> Value {
    let container = |name: &str, image: &str| {
        json!({"name": name, "image": image, "imagePullPolicy": "IfNotPresent",
               "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
               "env": [{"name": "A", "value": "1"}], "ports": [{"containerPort": 80, "protocol": "TCP"}]})
    };
    json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default", "generation": 1, "finalizers": ["f1"]},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "web"}},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {
                    "containers": [container("c1", "img:1"), container("c2", "side:1")],
                    "tolerations": [{"key": "k1", "operator": "Exists"}],
                    "volumes": [{"name": "data", "emptyDir": {}}],
                    "restartPolicy": "Always",
                },
            },
        },
    })
}

const DEPLOYMENT: (&str, &str, &str) = ("apps", "v1", "Deployment");

fn smp_deployment(patch: Value) -> Value {
    kinds::schema::prepare_definitions();
    apply_patch(PatchType::StrategicMerge, &deployment(), patch.to_string().as_bytes(), DEPLOYMENT)
        .unwrap_or_else(|e| panic!("{patch}: {e}"))
}

#[test]
fn built_in_strategies_apply_to_a_deployment() {
    // Finalizers merge as a set; tolerations have no strategy and are replaced.
    let patched = smp_deployment(json!({
        "metadata": {"finalizers": ["f2"]},
        "spec": {"template": {"spec": {"tolerations": [{"key": "k2", "operator": "Exists"}]}}},
    }));
    assert_eq!(patched["metadata"]["finalizers"], json!(["f2", "f1"]));
    assert_eq!(patched["spec"]["template"]["spec"]["tolerations"], json!([{"key": "k2", "operator": "Exists"}]));

    // strategy and volumes carry retainKeys.
    let patched = smp_deployment(json!({"spec": {
        "strategy": {"$retainKeys": ["type"], "type": "Recreate"},
        "template": {"spec": {"volumes": [{"$retainKeys": ["configMap", "name"], "name": "data", "configMap": {"name": "cm"}}]}},
    }}));
    assert_eq!(patched["spec"]["strategy"], json!({"type": "Recreate"}));
    assert_eq!(patched["spec"]["template"]["spec"]["volumes"], json!([{"name": "data", "configMap": {"name": "cm"}}]));

    // A container without its merge key: kube's 500 and wording.
    let e = apply_patch(
        PatchType::StrategicMerge,
        &deployment(),
        br#"{"spec":{"template":{"spec":{"containers":[{"image":"x"}]}}}}"#,
        DEPLOYMENT,
    )
    .unwrap_err();
    assert_eq!((e.code, e.message.as_str()), (500, "map: map[image:x] does not contain declared merge key: name"));
}

#[test]
fn kubectl_apply_on_a_deployment_changes_only_what_the_manifest_changed() {
    // kubectl apply's three-way patch after changing c1's image and one env var of c2, and
    // adding a port to c1.
    let patched = smp_deployment(json!({
        "metadata": {"annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}\n"}},
        "spec": {"template": {"spec": {
            "$setElementOrder/containers": [{"name": "c1"}, {"name": "c2"}],
            "containers": [
                {"$setElementOrder/ports": [{"containerPort": 80}, {"containerPort": 443}],
                 "image": "img:2", "name": "c1", "ports": [{"containerPort": 443}]},
                {"$setElementOrder/env": [{"name": "A"}], "env": [{"name": "A", "value": "2"}], "name": "c2"},
            ],
        }}},
    }));
    let mut expected = deployment();
    expected["metadata"]["annotations"] = json!({"kubectl.kubernetes.io/last-applied-configuration": "{}\n"});
    let containers = &mut expected["spec"]["template"]["spec"]["containers"];
    containers[0]["image"] = json!("img:2");
    containers[0]["ports"] = json!([{"containerPort": 80, "protocol": "TCP"}, {"containerPort": 443}]);
    containers[1]["env"] = json!([{"name": "A", "value": "2"}]);
    assert_eq!(patched, expected);
}

#[test]
fn kubectl_set_image_on_a_deployment_merges_containers_by_name() {
    let patched =
        smp_deployment(json!({"spec": {"template": {"spec": {"containers": [{"name": "c1", "image": "img:2"}]}}}}));
    let mut expected = deployment();
    expected["spec"]["template"]["spec"]["containers"][0]["image"] = json!("img:2");
    assert_eq!(patched, expected);
}

#[test]
fn service_ports_merge_by_port() {
    let service = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
                         "spec": {"ports": [{"port": 80, "protocol": "TCP", "targetPort": 8080}]}});
    kinds::schema::prepare_definitions();
    let patched = apply_patch(
        PatchType::StrategicMerge,
        &service,
        br#"{"spec":{"ports":[{"port":80,"targetPort":9090},{"port":443,"protocol":"TCP"}]}}"#,
        ("", "v1", "Service"),
    )
    .unwrap();
    assert_eq!(
        patched["spec"]["ports"],
        json!([{"port": 80, "protocol": "TCP", "targetPort": 9090}, {"port": 443, "protocol": "TCP"}])
    );
}
