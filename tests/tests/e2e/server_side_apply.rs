//! Server-side apply and managedFields as kubectl 1.30, kube-rs and the Python client see
//! them: creation by apply, re-apply, conflicts between managers (409 with kube's message and
//! causes), forcing, shared ownership, pruning, list-map merging, updates recorded beside
//! applies, and kubectl's client-side apply migration.

use serde_json::{Value, json};
use tests::TestServer;

const NS: &str = "ssa";

fn deployment(replicas: u32, image: &str, ports: &str) -> String {
    format!(
        r#"
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: {NS}
  labels: {{app: web}}
spec:
  replicas: {replicas}
  selector:
    matchLabels: {{app: web}}
  template:
    metadata:
      labels: {{app: web}}
    spec:
      containers:
      - name: nginx
        image: {image}
{ports}"#
    )
}

const PORT_80: &str = "        ports:\n        - containerPort: 80\n          protocol: TCP\n";

/// A server with the namespace the tests write in.
fn server() -> TestServer {
    let s = TestServer::start();
    s.kubectl_ok(&["create", "namespace", NS]);
    s
}

/// Creates `body` as the recorded outputs' typed client did (its manager `e2e.test`).
fn create_as_typed_client(s: &TestServer, body: &Value) {
    ok(s.kubectl_stdin(&["create", "--field-manager=e2e.test", "-f", "-"], &body.to_string()), "create");
}

fn get(s: &TestServer, what: &str) -> Value {
    let text = s.kubectl_ok(&["get", what, "-n", NS, "-o", "json", "--show-managed-fields"]);
    serde_json::from_str(&text).expect("JSON")
}

/// The managers of an object: (manager, operation, subresource).
fn managers(object: &Value) -> Vec<(String, String, String)> {
    let list = object["metadata"]["managedFields"].as_array().cloned().unwrap_or_default();
    list.iter()
        .map(|e| {
            let s = |k: &str| e[k].as_str().unwrap_or_default().to_string();
            (s("manager"), s("operation"), s("subresource"))
        })
        .collect()
}

fn fields_of<'a>(object: &'a Value, manager: &str) -> &'a Value {
    object["metadata"]["managedFields"]
        .as_array()
        .and_then(|l| l.iter().find(|e| e["manager"] == manager))
        .map(|e| &e["fieldsV1"])
        .unwrap_or_else(|| panic!("no entry of {manager}: {}", object["metadata"]))
}

fn apply(s: &TestServer, yaml: &str, extra: &[&str]) -> std::process::Output {
    let mut args = vec!["apply", "--server-side", "-f", "-"];
    args.extend_from_slice(extra);
    s.kubectl_stdin(&args, yaml)
}

fn ok(out: std::process::Output, what: &str) -> String {
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{what} failed:\nstdout: {stdout}\nstderr: {stderr}");
    stdout.into_owned()
}

#[test]
fn kubectl_applies_conflicts_forces_and_scales_as_kube_records_it() {
    let s = server();
    let first = apply(&s, &deployment(2, "nginx:1.25", PORT_80), &["-v=6"]);
    let log = String::from_utf8_lossy(&first.stderr).into_owned();
    let out = ok(first, "the first apply");
    assert!(out.contains("deployment.apps/web serverside-applied"), "{out}");
    assert!(
        log.lines().any(|l| l.contains("PATCH") && l.contains("201 Created")),
        "an apply that creates answers 201:\n{log}"
    );
    let d = get(&s, "deployment/web");
    assert_eq!(managers(&d), [("kubectl".into(), "Apply".into(), String::new())]);
    // What kube-apiserver 1.30 records for this configuration.
    assert_eq!(
        *fields_of(&d, "kubectl"),
        json!({
            "f:metadata": {"f:labels": {"f:app": {}}},
            "f:spec": {
                "f:replicas": {},
                "f:selector": {},
                "f:template": {
                    "f:metadata": {"f:labels": {"f:app": {}}},
                    "f:spec": {"f:containers": {"k:{\"name\":\"nginx\"}": {
                        ".": {}, "f:image": {}, "f:name": {},
                        "f:ports": {"k:{\"containerPort\":80,\"protocol\":\"TCP\"}": {
                            ".": {}, "f:containerPort": {}, "f:protocol": {}
                        }}
                    }}}
                }
            }
        })
    );
    assert_eq!(d["spec"]["strategy"]["type"], "RollingUpdate", "defaults apply to an applied object");

    // The same manager changes a field by applying again.
    ok(apply(&s, &deployment(2, "nginx:1.26", PORT_80), &[]), "the re-apply");
    assert_eq!(get(&s, "deployment/web")["spec"]["template"]["spec"]["containers"][0]["image"], "nginx:1.26");

    // A second manager changing the replicas the first owns: 409 with kube's message.
    let out = apply(&s, &deployment(5, "nginx:1.26", ""), &["--field-manager=ops"]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(r#"Apply failed with 1 conflict: conflict with "kubectl": .spec.replicas"#), "{stderr}");
    assert_eq!(get(&s, "deployment/web")["spec"]["replicas"], 2, "nothing written");
    // Forced, ops takes .spec.replicas; the image it applies equal is shared.
    ok(apply(&s, &deployment(5, "nginx:1.26", ""), &["--field-manager=ops", "--force-conflicts"]), "forced");
    let d = get(&s, "deployment/web");
    assert_eq!(d["spec"]["replicas"], 5);
    assert!(fields_of(&d, "ops")["f:spec"].get("f:replicas").is_some());
    assert!(fields_of(&d, "kubectl")["f:spec"].get("f:replicas").is_none(), "kubectl lost it");
    let image = |m: &str| {
        fields_of(&d, m)["f:spec"]["f:template"]["f:spec"]["f:containers"]["k:{\"name\":\"nginx\"}"]
            .get("f:image")
            .is_some()
    };
    assert!(image("kubectl") && image("ops"), "an equal value is owned by both");

    // kubectl stops applying the port (its own: removed) and the image (shared: kept).
    let trimmed = deployment(5, "nginx:1.26", "").replace("        image: nginx:1.26\n", "");
    ok(apply(&s, &trimmed, &[]), "the trimmed apply");
    let d = get(&s, "deployment/web");
    let c = &d["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(c["image"], "nginx:1.26", "ops still applies the image");
    assert!(c.get("ports").is_none(), "the port only kubectl owned is gone: {c}");

    // `kubectl scale` is an update through /scale, recorded beside the applies.
    s.kubectl_ok(&["scale", "deployment/web", "-n", NS, "--replicas=3"]);
    let d = get(&s, "deployment/web");
    let mut found = managers(&d);
    // kube's order: Apply entries first, then by time (seconds), then by manager.
    let list = d["metadata"]["managedFields"].as_array().unwrap();
    let order: Vec<(String, String, String)> = list
        .iter()
        .map(|e| {
            let s = |k: &str| e[k].as_str().unwrap_or_default().to_string();
            (s("operation"), s("time"), s("manager"))
        })
        .collect();
    let mut sorted = order.clone();
    sorted.sort();
    assert_eq!(order, sorted, "entries in kube's order");
    found.sort();
    assert_eq!(
        found,
        [
            ("kubectl".into(), "Apply".into(), String::new()),
            ("kubectl".into(), "Update".into(), "scale".into()),
            ("ops".into(), "Apply".into(), String::new()),
        ]
    );
    let scale_entry =
        d["metadata"]["managedFields"].as_array().unwrap().iter().find(|e| e["subresource"] == "scale").unwrap();
    assert_eq!(scale_entry["fieldsV1"], json!({"f:spec": {"f:replicas": {}}}));
    assert_eq!(scale_entry["apiVersion"], "apps/v1");
    assert!(fields_of(&d, "ops")["f:spec"].get("f:replicas").is_none(), "the scale took replicas");

    // ops applying its replicas again now conflicts with the updater, named as kube names it.
    let out = apply(&s, &deployment(5, "nginx:1.26", ""), &["--field-manager=ops"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(r#"conflict with "kubectl" with subresource "scale" using apps/v1: .spec.replicas"#),
        "{stderr}"
    );

    // `kubectl diff --server-side` shows what an apply would change, and changes nothing.
    let out =
        s.kubectl_stdin(&["diff", "--server-side", "--force-conflicts", "-f", "-"], &deployment(7, "nginx:1.26", ""));
    assert_eq!(out.status.code(), Some(1), "differences found: {}", String::from_utf8_lossy(&out.stderr));
    let diff = String::from_utf8_lossy(&out.stdout);
    assert!(diff.contains("-  replicas: 3") && diff.contains("+  replicas: 7"), "{diff}");
    assert_eq!(get(&s, "deployment/web")["spec"]["replicas"], 3);
}

#[test]
fn kubectl_moves_between_client_side_and_server_side_apply() {
    let s = server();
    // Client-side apply first: kubectl-client-side-apply owns the fields, the annotation holds
    // the configuration.
    ok(s.kubectl_stdin(&["apply", "-f", "-"], &deployment(2, "nginx:1.25", PORT_80)), "client-side apply");
    let d = get(&s, "deployment/web");
    assert!(managers(&d).iter().any(|m| m.0 == "kubectl-client-side-apply" && m.1 == "Update"), "{:?}", managers(&d));
    // Switching to server-side: the fields it applied before are kubectl's, no conflict.
    ok(apply(&s, &deployment(4, "nginx:1.25", PORT_80), &[]), "server-side apply after client-side");
    let d = get(&s, "deployment/web");
    assert_eq!(d["spec"]["replicas"], 4);
    assert!(fields_of(&d, "kubectl")["f:spec"].get("f:replicas").is_some());
    let annotation = d["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
        .as_str()
        .expect("the annotation is kept");
    let last: Value = serde_json::from_str(annotation).expect("JSON");
    assert_eq!(last["spec"]["replicas"], 4, "kept in step with the server-side apply");
    // And back to client-side apply.
    ok(s.kubectl_stdin(&["apply", "-f", "-"], &deployment(6, "nginx:1.25", PORT_80)), "client-side apply again");
    assert_eq!(get(&s, "deployment/web")["spec"]["replicas"], 6);
}

#[test]
fn kube_rs_patch_apply_creates_conflicts_and_forces() {
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::api::{Api, Patch, PatchParams};

    let s = server();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let client = crate::watch_sync::client(&s.kubeconfig).await;
        let cms: Api<ConfigMap> = Api::namespaced(client, NS);
        let config = |v: &str| {
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"}, "data": {"mode": v}})
        };
        let made = cms.patch("settings", &PatchParams::apply("operator"), &Patch::Apply(config("fast"))).await.unwrap();
        assert_eq!(made.data.as_ref().unwrap()["mode"], "fast");
        let entries = made.metadata.managed_fields.clone().unwrap_or_default();
        assert_eq!(entries.len(), 1);
        assert_eq!((entries[0].manager.as_deref(), entries[0].operation.as_deref()), (Some("operator"), Some("Apply")));
        let err = cms.patch("settings", &PatchParams::apply("other"), &Patch::Apply(config("slow"))).await.unwrap_err();
        match err {
            kube::Error::Api(e) => {
                assert_eq!((e.code, e.reason.as_str()), (409, "Conflict"));
                assert_eq!(e.message, r#"Apply failed with 1 conflict: conflict with "operator": .data.mode"#);
            }
            other => panic!("expected a 409, got {other:?}"),
        }
        let forced =
            cms.patch("settings", &PatchParams::apply("other").force(), &Patch::Apply(config("slow"))).await.unwrap();
        assert_eq!(forced.data.as_ref().unwrap()["mode"], "slow");
        // A status apply owns only the status; the config may leave its name out.
        use k8s_openapi::api::apps::v1::Deployment;
        let deployments: Api<Deployment> = Api::namespaced(cms.clone().into_client(), NS);
        let d = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
            "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {"metadata": {"labels": {"a": "b"}},
                "spec": {"containers": [{"name": "c", "image": "x"}]}}}});
        deployments.patch("d", &PatchParams::apply("operator"), &Patch::Apply(d)).await.unwrap();
        let status = json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "spec": {"replicas": 9}, "status": {"observedGeneration": 1, "replicas": 3}});
        let after = deployments.patch_status("d", &PatchParams::apply("ctrl"), &Patch::Apply(status)).await.unwrap();
        assert_eq!(after.status.as_ref().and_then(|s| s.replicas), Some(3));
        assert_eq!(after.spec.as_ref().and_then(|s| s.replicas), Some(1), "a status write leaves the spec");
        let entry = after.metadata.managed_fields.unwrap_or_default().into_iter().find(|e| e.manager.as_deref() == Some("ctrl")).expect("ctrl's entry");
        assert_eq!((entry.operation.as_deref(), entry.subresource.as_deref()), (Some("Apply"), Some("status")));
        assert_eq!(entry.fields_v1.unwrap().0, json!({"f:status": {"f:observedGeneration": {}, "f:replicas": {}}}));

        // An apply of the Scale owns the replicas through the scale subresource.
        let scale = json!({"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": {"name": "d"}, "spec": {"replicas": 4}});
        let scaled = deployments.patch_scale("d", &PatchParams::apply("hpa"), &Patch::Apply(scale)).await.unwrap();
        assert_eq!(scaled.spec.and_then(|s| s.replicas), Some(4));
        let d = deployments.get("d").await.unwrap();
        let entry = d.metadata.managed_fields.unwrap_or_default().into_iter().find(|e| e.manager.as_deref() == Some("hpa")).expect("hpa's entry");
        assert_eq!((entry.operation.as_deref(), entry.subresource.as_deref()), (Some("Apply"), Some("scale")));
        assert_eq!(entry.fields_v1.unwrap().0, json!({"f:spec": {"f:replicas": {}}}));
        let mine = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"a": "b"}}, "template": {"metadata": {"labels": {"a": "b"}},
                "spec": {"containers": [{"name": "c", "image": "x"}]}}}});
        match deployments.patch("d", &PatchParams::apply("operator"), &Patch::Apply(mine)).await.unwrap_err() {
            kube::Error::Api(e) => assert_eq!(
                e.message,
                r#"Apply failed with 1 conflict: conflict with "hpa" with subresource "scale": .spec.replicas"#
            ),
            other => panic!("expected a 409, got {other:?}"),
        }

        // Two applies creating the same object at once both land: the later applies onto the
        // earlier's object instead of failing with AlreadyExists.
        let same = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "race"}, "data": {"k": "v"}});
        let (pa, pb) = (PatchParams::apply("first"), PatchParams::apply("second"));
        let (patch_a, patch_b) = (Patch::Apply(same.clone()), Patch::Apply(same));
        let (ra, rb) = tokio::join!(cms.patch("race", &pa, &patch_a), cms.patch("race", &pb, &patch_b));
        ra.expect("first apply");
        rb.expect("second apply");
        let race = cms.get("race").await.unwrap();
        let mut managers: Vec<String> =
            race.metadata.managed_fields.unwrap_or_default().into_iter().filter_map(|e| e.manager).collect();
        managers.sort();
        assert_eq!(managers, ["first", "second"], "both own the equal value");
        // Creating by apply with a uid that matches nothing is a conflict, as in kube.
        let with_uid = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ghost", "uid": "1234"}});
        match cms.patch("ghost", &PatchParams::apply("operator"), &Patch::Apply(with_uid)).await.unwrap_err() {
            kube::Error::Api(e) => assert_eq!(
                (e.code, e.message.as_str()),
                (409, r#"Operation cannot be fulfilled on configmaps "ghost": uid mismatch: the provided object specified uid 1234, and no existing object was found"#)
            ),
            other => panic!("expected a 409, got {other:?}"),
        }

        // An apply without a field manager is refused as kube refuses it.
        let err = cms.patch("settings", &PatchParams::default(), &Patch::Apply(config("x"))).await.unwrap_err();
        match err {
            kube::Error::Api(e) => {
                assert_eq!(e.code, 422);
                assert!(e.message.contains("fieldManager: Required value: is required for apply patch"), "{}", e.message);
            }
            other => panic!("expected a 422, got {other:?}"),
        }
    });
}

#[test]
fn python_client_applies_with_a_field_manager() {
    let s = server();
    let code = r#"
import sys
from kubernetes import client, config
from kubernetes.client.rest import ApiException
from kubernetes.dynamic import DynamicClient
config.load_kube_config(config_file=sys.argv[1])
cms = DynamicClient(client.ApiClient()).resources.get(api_version="v1", kind="ConfigMap")
body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "py"}, "data": {"a": "1"}}
made = cms.server_side_apply(body=body, namespace="ssa", field_manager="py-tool")
assert made.data.a == "1", made
assert [(m.manager, m.operation) for m in made.metadata.managedFields] == [("py-tool", "Apply")]
body["data"] = {"a": "2"}
try:
    cms.server_side_apply(body=body, namespace="ssa", field_manager="intruder")
    raise SystemExit("no conflict")
except ApiException as e:
    assert e.status == 409, e.status
    assert 'conflict with \\"py-tool\\": .data.a' in (e.body.decode() if isinstance(e.body, bytes) else e.body), e.body
made = cms.server_side_apply(body=body, namespace="ssa", field_manager="intruder", force_conflicts=True)
assert made.data.a == "2", made
print("ok")
"#;
    let out = s.python_code(&s.kubeconfig, code, &[]);
    let stdout = tests::assert_success("python apply", &out);
    assert_eq!(stdout.trim(), "ok");
}

/// The entries without their times, as recorded outputs are compared.
fn untimed(object: &Value) -> Value {
    let mut list = object["metadata"]["managedFields"].clone();
    for e in list.as_array_mut().into_iter().flatten() {
        e.as_object_mut().unwrap().remove("time");
    }
    list
}

/// A Deployment created by a typed client, then scaled through `/scale`: the create's entry
/// owns the defaulted fields, the scale's entry takes `.spec.replicas` (and carries no time),
/// as kube-apiserver recorded it for the same requests.
#[test]
fn a_deployment_created_then_scaled_records_what_kube_records() {
    let s = server();
    let body = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "d1", "namespace": NS, "labels": {"mutationlab.configbutler.ai/scenario": "scale-patch"}},
        "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "d1"}},
            "template": {"metadata": {"labels": {"app": "d1"}},
                "spec": {"containers": [{"name": "c", "image": "busybox:1.36", "command": ["sleep", "3600"], "resources": {}}]}},
            "strategy": {}, "paused": true},
        "status": {}
    });
    create_as_typed_client(&s, &body);
    s.kubectl_ok(&[
        "patch",
        "deployment",
        "d1",
        "-n",
        NS,
        "--subresource=scale",
        "--type=merge",
        "-p",
        r#"{"spec":{"replicas":2}}"#,
        "--field-manager=e2e.test",
    ]);
    let d = get(&s, "deployment/d1");
    assert_eq!(d["spec"]["replicas"], 2);
    let k = |name: &str| format!("k:{{\"name\":\"{name}\"}}");
    assert_eq!(
        untimed(&d),
        json!([
            {"apiVersion": "apps/v1", "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:replicas": {}}},
             "manager": "e2e.test", "operation": "Update", "subresource": "scale"},
            {"apiVersion": "apps/v1", "fieldsType": "FieldsV1", "manager": "e2e.test", "operation": "Update",
             "fieldsV1": {
                "f:metadata": {"f:labels": {".": {}, "f:mutationlab.configbutler.ai/scenario": {}}},
                "f:spec": {
                    "f:paused": {}, "f:progressDeadlineSeconds": {}, "f:revisionHistoryLimit": {}, "f:selector": {},
                    "f:strategy": {"f:rollingUpdate": {".": {}, "f:maxSurge": {}, "f:maxUnavailable": {}}, "f:type": {}},
                    "f:template": {
                        "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
                        "f:spec": {
                            "f:containers": {k("c"): {
                                ".": {}, "f:command": {}, "f:image": {}, "f:imagePullPolicy": {}, "f:name": {},
                                "f:resources": {}, "f:terminationMessagePath": {}, "f:terminationMessagePolicy": {}
                            }},
                            "f:dnsPolicy": {}, "f:restartPolicy": {}, "f:schedulerName": {}, "f:securityContext": {},
                            "f:terminationGracePeriodSeconds": {}
                        }
                    }
                }
             }}
        ])
    );
    let entries = d["metadata"]["managedFields"].as_array().unwrap();
    assert!(entries[0].get("time").is_none(), "kube's /scale entries carry no time");
    assert!(entries[1]["time"].is_string());
}

/// A Pod created by a typed client: its creator owns what it sent and the defaults, not what
/// admission adds (the service account, the tolerations, the priority), as kube records it.
#[test]
fn a_pod_created_records_its_defaults_but_not_what_admission_adds() {
    let s = server();
    let body = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "p1", "namespace": NS, "labels": {"mutationlab.configbutler.ai/scenario": "graceful-delete"}},
        "spec": {"containers": [{"name": "c", "image": "busybox:1.36", "command": ["sleep", "3600"], "resources": {}}],
                 "terminationGracePeriodSeconds": 5, "automountServiceAccountToken": false},
        "status": {}
    });
    create_as_typed_client(&s, &body);
    let p = get(&s, "pod/p1");
    assert_eq!(p["spec"]["serviceAccountName"], "default", "admission set it");
    assert_eq!(
        untimed(&p),
        json!([{
            "apiVersion": "v1", "fieldsType": "FieldsV1", "manager": "e2e.test", "operation": "Update",
            "fieldsV1": {
                "f:metadata": {"f:labels": {".": {}, "f:mutationlab.configbutler.ai/scenario": {}}},
                "f:spec": {
                    "f:automountServiceAccountToken": {},
                    "f:containers": {"k:{\"name\":\"c\"}": {
                        ".": {}, "f:command": {}, "f:image": {}, "f:imagePullPolicy": {}, "f:name": {},
                        "f:resources": {}, "f:terminationMessagePath": {}, "f:terminationMessagePolicy": {}
                    }},
                    "f:dnsPolicy": {}, "f:enableServiceLinks": {}, "f:restartPolicy": {}, "f:schedulerName": {},
                    "f:securityContext": {}, "f:terminationGracePeriodSeconds": {}
                }
            }
        }])
    );
}

fn config_map(labels: &str, annotations: &str, value: &str) -> String {
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: {NS}\n{labels}{annotations}data:\n  k: {value}\n"
    )
}

/// The entries of an object as (manager, operation, fieldsV1).
fn entries(object: &Value) -> Vec<(String, String, Value)> {
    let list = object["metadata"]["managedFields"].as_array().cloned().unwrap_or_default();
    list.iter()
        .map(|e| {
            (
                e["manager"].as_str().unwrap().to_string(),
                e["operation"].as_str().unwrap().to_string(),
                e["fieldsV1"].clone(),
            )
        })
        .collect()
}

/// What kube-apiserver 1.32 answers (recorded with kubectl 1.30): a manifest that no longer
/// has labels or annotations removes them, whether the fields were applied server-side or
/// client-side before, and the manager can go on applying.
#[test]
fn kubectl_applies_a_manifest_that_dropped_its_last_label() {
    let s = server();
    let labelled = config_map("  labels: {a: b}\n", "  annotations: {note: x}\n", "v");
    let bare = config_map("", "", "v2");
    ok(apply(&s, &labelled, &[]), "server-side apply with labels");
    ok(apply(&s, &bare, &[]), "server-side apply without labels");
    let cm = get(&s, "configmap/settings");
    assert!(cm["metadata"].get("labels").is_none() && cm["metadata"].get("annotations").is_none(), "{cm}");
    assert_eq!(entries(&cm), [("kubectl".into(), "Apply".into(), json!({"f:data": {"f:k": {}}}))]);
    ok(apply(&s, &labelled, &[]), "server-side apply with labels again");
    assert_eq!(get(&s, "configmap/settings")["metadata"]["labels"], json!({"a": "b"}));
    ok(s.kubectl_stdin(&["delete", "-f", "-"], &bare), "delete");

    // From client-side apply to server-side apply and back.
    ok(s.kubectl_stdin(&["apply", "-f", "-"], &labelled), "client-side apply");
    ok(apply(&s, &bare, &[]), "server-side apply without labels after client-side apply");
    let cm = get(&s, "configmap/settings");
    assert!(cm["metadata"].get("labels").is_none(), "{cm}");
    assert_eq!(
        cm["metadata"]["annotations"],
        json!({"kubectl.kubernetes.io/last-applied-configuration":
            "{\"apiVersion\":\"v1\",\"data\":{\"k\":\"v2\"},\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"settings\",\"namespace\":\"ssa\"}}\n"})
    );
    assert_eq!(
        entries(&cm),
        [
            (
                "kubectl-last-applied".into(),
                "Apply".into(),
                json!({"f:metadata": {"f:annotations": {"f:kubectl.kubernetes.io/last-applied-configuration": {}}}})
            ),
            ("kubectl".into(), "Apply".into(), json!({"f:data": {"f:k": {}}})),
        ]
    );
    ok(s.kubectl_stdin(&["apply", "-f", "-"], &labelled), "client-side apply again");
    let cm = get(&s, "configmap/settings");
    assert_eq!((&cm["metadata"]["labels"], &cm["data"]["k"]), (&json!({"a": "b"}), &json!("v")));
    assert_eq!(
        entries(&cm),
        [(
            "kubectl-client-side-apply".into(),
            "Update".into(),
            json!({"f:data": {"f:k": {}}, "f:metadata": {
                "f:annotations": {"f:kubectl.kubernetes.io/last-applied-configuration": {}, "f:note": {}},
                "f:labels": {".": {}, "f:a": {}}}})
        )]
    );
    ok(apply(&s, &bare, &[]), "server-side apply without labels again");
    let cm = get(&s, "configmap/settings");
    assert!(cm["metadata"].get("labels").is_none() && cm["metadata"]["annotations"].get("note").is_none(), "{cm}");
}

/// A CRD of two versions with the same schema, like Gateway API's ReferenceGrant: `v1`
/// served, `v1beta1` stored; a list of structs keyed by group and kind, a set of strings.
const GRANTS_CRD: &str = include_str!("../../fixtures/grants-crd.yaml");

fn grant(version: &str, spec: &str) -> String {
    format!("apiVersion: example.com/{version}\nkind: Grant\nmetadata: {{name: g1, namespace: {NS}}}\nspec:\n{spec}")
}

/// Server-side apply of a custom resource in a served version that is not its storage
/// version merges by the CRD's list types, and each entry keeps the version it was written
/// in. The expectations were recorded from kube-apiserver 1.32 with kubectl 1.30.
#[test]
fn kubectl_applies_a_custom_resource_in_a_version_that_is_not_stored() {
    let s = server();
    ok(s.kubectl_stdin(&["apply", "-f", "-"], GRANTS_CRD), "create the CRD");
    s.kubectl_ok(&["wait", "--for=condition=Established", "crd/grants.example.com", "--timeout=10s"]);
    let first = grant("v1", "  from: [{group: a, kind: A}, {group: b, kind: B}]\n  to: [x1, y1]\n  note: first\n");
    ok(apply(&s, &first, &[]), "apply in v1");
    let second = grant("v1", "  from: [{group: c, kind: C}]\n  to: [z]\n");
    ok(apply(&s, &second, &["--field-manager=other"]), "apply of another manager in v1");
    let g = get(&s, "grants.v1.example.com/g1");
    assert_eq!(
        g["spec"],
        json!({"from": [{"group": "a", "kind": "A"}, {"group": "b", "kind": "B"}, {"group": "c", "kind": "C"}],
               "note": "first", "to": ["x1", "y1", "z"]})
    );
    let key = |g: &str, k: &str| format!("k:{{\"group\":\"{g}\",\"kind\":\"{k}\"}}");
    let item = json!({".": {}, "f:group": {}, "f:kind": {}});
    let kubectl_fields = json!({"f:spec": {
        "f:from": {key("a", "A"): item, key("b", "B"): item}, "f:note": {}, "f:to": {"v:\"x1\"": {}, "v:\"y1\"": {}}}});
    let other_fields = json!({"f:spec": {"f:from": {key("c", "C"): item}, "f:to": {"v:\"z\"": {}}}});
    let versions = |g: &Value| -> Vec<(String, String)> {
        g["metadata"]["managedFields"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| (e["manager"].as_str().unwrap().into(), e["apiVersion"].as_str().unwrap().into()))
            .collect()
    };
    assert_eq!((fields_of(&g, "kubectl"), fields_of(&g, "other")), (&kubectl_fields, &other_fields));
    let stored_view = get(&s, "grants.v1beta1.example.com/g1");
    assert_eq!(
        versions(&stored_view),
        [("kubectl".into(), "example.com/v1".into()), ("other".into(), "example.com/v1".into())]
    );

    // An apply in the stored version conflicts with what an applier of v1 owns, and shares
    // what it sets to the same value.
    let third = grant("v1beta1", "  note: third\n");
    let out = apply(&s, &third, &["--field-manager=third"]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.starts_with("error: Apply failed with 1 conflict: conflict with \"kubectl\": .spec.note"),
        "{stderr}"
    );
    ok(apply(&s, &grant("v1beta1", "  from: [{group: a, kind: A}]\n"), &["--field-manager=fourth"]), "shared");
    let g = get(&s, "grants.v1.example.com/g1");
    assert_eq!(g["spec"]["note"], "first");
    assert_eq!(fields_of(&g, "fourth"), &json!({"f:spec": {"f:from": {key("a", "A"): item}}}));
    assert_eq!(versions(&g)[0], ("fourth".into(), "example.com/v1beta1".into()));
    assert!(g["metadata"]["managedFields"][0].get("time").is_none(), "an apply that changed nothing has no time");
}

/// kube's apply converts the configuration to a typed object first: a field the schema
/// does not declare is its 500, whatever `fieldValidation` asks (recorded from kube-apiserver
/// 1.32).
#[test]
fn an_apply_with_an_undeclared_field_is_kubes_500() {
    let s = server();
    let config = format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: unk, namespace: {NS}, bogus: 3}}\ndata: {{k: v}}\n"
    );
    for validation in ["Ignore", "Warn", "Strict"] {
        let out = s.kubectl_stdin(
            &["apply", "--server-side", "-f", "-", &format!("--validate={}", validation.to_lowercase())],
            &config,
        );
        assert!(!out.status.success(), "{validation}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains(
                "failed to create typed patch object (ssa/unk; /v1, Kind=ConfigMap): .metadata.bogus: field not declared in schema"
            ),
            "{validation}: {stderr}"
        );
    }
}

/// Creates of kinds across the groups, and of a custom resource: the creator's entry is the
/// one kube-apiserver records for the same object (`tests/fixtures/managed-fields/`, recorded by
/// its `record.py`), which depends on the Go zero value of each kind (structs present, some nil
/// fields `null`) and, for a custom resource, on there being none.
#[test]
fn creates_record_what_kube_records_for_each_kind() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/managed-fields");
    let read = |name: &str| -> Value {
        serde_json::from_str(&std::fs::read_to_string(dir.join(name)).expect("fixture")).expect("JSON")
    };
    let (cases, recorded) = (read("objects.json"), read("creates.json"));
    let s = server();
    let mut differ = Vec::new();
    for (case, want) in cases.as_array().unwrap().iter().zip(recorded.as_array().unwrap()) {
        let name = case["name"].as_str().unwrap();
        assert_eq!(want["name"], name, "fixtures in one order");
        let namespaced = |b: &Value| {
            serde_json::from_str::<Value>(&b.to_string().replace("\"NAMESPACE\"", &format!("\"{NS}\""))).unwrap()
        };
        for setup in case["setup"].as_array().into_iter().flatten() {
            // The default ServiceAccount may exist already.
            s.kubectl_stdin(&["create", "-n", NS, "-f", "-"], &namespaced(&setup["body"]).to_string());
        }
        let body = namespaced(&case["body"]).to_string();
        // A custom resource is served shortly after its CRD is created.
        let mut created = s.kubectl_stdin(&["create", "-n", NS, "-f", "-"], &body);
        for _ in 0..50 {
            if created.status.success() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(200));
            created = s.kubectl_stdin(&["create", "-n", NS, "-f", "-"], &body);
        }
        ok(created, name);
        let kind = case["body"]["kind"].as_str().unwrap().to_lowercase();
        let what = if kind == "widget" {
            format!("widgets.example.com/{}", case["body"]["metadata"]["name"].as_str().unwrap())
        } else {
            format!("{kind}/{}", case["body"]["metadata"]["name"].as_str().unwrap())
        };
        let object = get(&s, &what);
        // Controllers may have written the status meanwhile: the creator's entry is kubectl's.
        let entries = object["metadata"]["managedFields"].as_array().cloned().unwrap_or_default();
        let creator = entries.iter().find(|e| e["manager"] == "kubectl-create").expect("kubectl's entry");
        let got = &creator["fieldsV1"];
        if *got != want["fieldsV1"] {
            differ.push(format!("{name}:\n  kube: {}\n  here: {got}", want["fieldsV1"]));
        }
    }
    assert!(differ.is_empty(), "entries differ from kube's:\n{}", differ.join("\n"));
}
