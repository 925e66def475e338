//! The objects a reference kube-apiserver wrote to etcd (`tests/fixtures/kube-etcd`, recorded by
//! its `record.py`): each is found at the key this server computes, decodes to exactly the
//! object kube served (but for the members kube writes as `null`, which this server's objects
//! leave out), and encodes back to kube's bytes; the keys kube keeps beside the objects
//! decode too. Data this server stored before, as MessagePack, is read and migrated.

use std::sync::Arc;

use apimachinery::catalogue::{Catalogue, ResourceDef};
use base64::Engine;
use serde_json::Value;
use storage::etcd::testing::EtcdProcess;
use storage::{Expect, KeyValue, Storage};
use storage_codec::codec::{Format, decode, decode_object, encode_object};
use tests::TestServer;

const RECORDED: &str = include_str!("../../fixtures/kube-etcd/recorded.json");

struct Record {
    def: Arc<ResourceDef>,
    kv: KeyValue,
    object: Value,
}

fn records() -> Vec<Record> {
    let recorded: Value = serde_json::from_str(RECORDED).expect("fixture parses");
    let mut catalogue = kinds::catalogue();
    let objects = recorded["objects"].as_array().expect("objects");
    // The custom resources are served from their recorded CRDs.
    for r in objects.iter().filter(|r| r["resource"] == "customresourcedefinitions") {
        catalogue = with_crd(catalogue, &r["object"]);
    }
    objects
        .iter()
        .map(|r| {
            let text = |f: &str| r[f].as_str().expect(f).to_string();
            let def = catalogue
                .find(&text("group"), &text("version"), &text("resource"))
                .unwrap_or_else(|| panic!("{} {} is served", text("group"), text("resource")));
            let value = base64::engine::general_purpose::STANDARD.decode(text("value")).expect("base64");
            let kv = KeyValue {
                key: text("key"),
                value: value.into(),
                create_revision: 0,
                mod_revision: r["modRevision"].as_u64().expect("modRevision") as _,
                stale: false,
            };
            Record { def, kv, object: r["object"].clone() }
        })
        .collect()
}

fn with_crd(catalogue: Catalogue, crd: &Value) -> Catalogue {
    let mut defs = catalogue.resources();
    defs.extend(apiextensions::served::definitions(crd, None).into_iter().map(Arc::new));
    Catalogue::new(defs)
}

/// A stored object as this server serves it: decoded, defaulted as on read, in the served
/// version.
fn served(def: &ResourceDef, kv: &KeyValue) -> Value {
    let obj = decode_object(def, kv).unwrap_or_else(|e| panic!("{} decodes: {e}", kv.key));
    def.strategy.to_served(&obj).unwrap_or(obj)
}

#[test]
fn every_kind_kube_stored_is_at_our_key_and_decodes_to_what_kube_served() {
    let records = records();
    assert!(records.len() >= 60, "{} records", records.len());
    let mut wrong = Vec::new();
    for Record { def, kv, object } in &records {
        let meta = &object["metadata"];
        let (namespace, name) = (meta["namespace"].as_str().unwrap_or(""), meta["name"].as_str().unwrap());
        assert_eq!(&def.key("/registry", namespace, name), &kv.key, "{} {name}", def.kind);
        differences(&kv.key, &served(def, kv), &without_null_members(object), &mut wrong);
    }
    assert!(wrong.is_empty(), "decoded objects differ from what kube served:\n{}", wrong.join("\n"));
}

/// `v` without null members: kube's JSON writes a zero time or a nil list as `null` (a pod
/// template's `creationTimestamp`), where this server's objects leave the member out. Nulls in
/// arrays are values and stay.
fn without_null_members(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter().filter(|(_, x)| !x.is_null()).map(|(k, x)| (k.clone(), without_null_members(x))).collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(without_null_members).collect()),
        other => other.clone(),
    }
}

/// Where `ours` and `kube` differ, as `at: ours != kube` lines.
fn differences(at: &str, ours: &Value, kube: &Value, out: &mut Vec<String>) {
    match (ours, kube) {
        (Value::Object(a), Value::Object(b)) => {
            for k in a.keys().chain(b.keys().filter(|k| !a.contains_key(*k))) {
                let (x, y) = (a.get(k).unwrap_or(&Value::Null), b.get(k).unwrap_or(&Value::Null));
                if a.contains_key(k) != b.contains_key(k) {
                    out.push(format!("{at}/{k}: {} != {}", show(a.get(k)), show(b.get(k))));
                } else {
                    differences(&format!("{at}/{k}"), x, y, out);
                }
            }
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => {
            for (i, (x, y)) in a.iter().zip(b).enumerate() {
                differences(&format!("{at}/{i}"), x, y, out);
            }
        }
        _ if ours != kube => out.push(format!("{at}: {ours} != {kube}")),
        _ => {}
    }
}

fn show(v: Option<&Value>) -> String {
    v.map_or_else(|| "(absent)".to_string(), |v| v.to_string().chars().take(200).collect())
}

#[test]
fn every_kind_encodes_back_to_kube_bytes() {
    let mut wrong = Vec::new();
    for Record { def, kv, .. } in &records() {
        let stored = decode(&kv.key, &kv.value).map(|o| def.strategy.read_etcd_version(o)).expect("decodes");
        let bytes = encode_object(def, &stored).unwrap_or_else(|e| panic!("{} encodes: {e:?}", kv.key));
        assert_eq!(Format::of(&bytes), Format::of(&kv.value), "{}", kv.key);
        match Format::of(&kv.value) {
            Format::Protobuf if bytes != kv.value => {
                let ours = decode(&kv.key, &bytes).unwrap();
                let before = wrong.len();
                differences(&kv.key, &ours, &decode(&kv.key, &kv.value).unwrap(), &mut wrong);
                if wrong.len() == before {
                    wrong.push(format!("{}: the same object in other bytes", kv.key));
                }
            }
            Format::Protobuf => {}
            // kube writes typed JSON in its Go structs' field order: the documents are equal.
            _ => differences(
                &kv.key,
                &decode(&kv.key, &bytes).unwrap(),
                &decode(&kv.key, &kv.value).unwrap(),
                &mut wrong,
            ),
        }
    }
    assert!(wrong.is_empty(), "encoded objects differ from kube's:\n{}", wrong.join("\n"));
}

#[test]
fn custom_resources_are_kube_json_to_the_byte() {
    let records = records();
    let widget = records.iter().find(|r| r.def.kind == "Widget").expect("a custom resource");
    let bytes = encode_object(&widget.def, &widget.object).unwrap();
    assert_eq!(String::from_utf8_lossy(&bytes), String::from_utf8_lossy(&widget.kv.value));
}

#[test]
fn what_kube_keeps_beside_the_objects_decodes() {
    let recorded: Value = serde_json::from_str(RECORDED).unwrap();
    let raw = recorded["raw"].as_array().expect("raw");
    let find = |key: &str| {
        let r = raw.iter().find(|r| r["key"] == key).unwrap_or_else(|| panic!("{key} recorded"));
        let bytes = base64::engine::general_purpose::STANDARD.decode(r["value"].as_str().unwrap()).unwrap();
        decode(key, &bytes).unwrap_or_else(|e| panic!("{key}: {e}"))
    };
    let ips = find("/registry/ranges/serviceips");
    assert_eq!((ips["kind"].as_str(), ips["range"].as_str()), (Some("RangeAllocation"), Some("10.0.0.0/24")));
    let ports = find("/registry/ranges/servicenodeports");
    assert_eq!(ports["range"], "30000-32767");
    let lease = raw.iter().find(|r| r["key"].as_str().unwrap().starts_with("/registry/masterleases/")).expect("lease");
    let endpoints = find(lease["key"].as_str().unwrap());
    assert_eq!(endpoints["kind"], "Endpoints");
}

/// A store written by a release that stored MessagePack, some of it under the prefixes it used
/// then: the server reads it all, moves the renamed prefixes, `check-storage` reports the
/// formats without writing, and `migrate-storage` leaves nothing in MessagePack.
#[test]
fn messagepack_data_is_read_moved_and_migrated() {
    let etcd = EtcdProcess::start();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let old = |kind: &str, api_version: &str, name: &str, extra: Value| {
        let mut obj = serde_json::json!({"apiVersion": api_version, "kind": kind, "metadata": {
            "name": name, "namespace": "default", "uid": format!("uid-{name}"),
            "creationTimestamp": "2026-01-01T00:00:00Z"}});
        obj.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        bytes::Bytes::from(rmp_serde::to_vec_named(&obj).unwrap())
    };
    let template = serde_json::json!({"metadata": {"labels": {"app": "old"}},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]}});
    rt.block_on(async {
        let store = etcd.connect().await.expect("etcd");
        let cm = old("ConfigMap", "v1", "old-cm", serde_json::json!({"data": {"k": "v"}}));
        store.put("/registry/configmaps/default/old-cm", cm, Expect::Absent).await.unwrap();
        let rc = old(
            "ReplicationController",
            "v1",
            "old-rc",
            serde_json::json!({"spec": {
            "replicas": 0, "selector": {"app": "old"}, "template": template}}),
        );
        store.put("/registry/replicationcontrollers/default/old-rc", rc, Expect::Absent).await.unwrap();
    });
    let flags = ["--etcd-servers", etcd.endpoint()];
    let s = TestServer::start_with(&flags);
    assert_eq!(s.kubectl_ok(&["get", "configmap", "old-cm", "-o", "jsonpath={.data.k}"]), "v");
    assert_eq!(s.kubectl_ok(&["get", "rc", "old-rc", "-o", "jsonpath={.spec.template.metadata.labels.app}"]), "old");
    let keys = rt.block_on(async {
        let store = etcd.connect().await.unwrap();
        let list = store.list("/registry/", Default::default()).await.unwrap();
        list.items.into_iter().map(|kv| (kv.key, Format::of(&kv.value))).collect::<Vec<_>>()
    });
    let format_of = |key: &str| keys.iter().find(|(k, _)| k == key).map(|(_, f)| *f);
    // Moved to kube's prefix, in kube's format; the configmap waits for its next write.
    assert_eq!(format_of("/registry/replicationcontrollers/default/old-rc"), None);
    assert_eq!(format_of("/registry/controllers/default/old-rc"), Some(Format::Protobuf));
    assert_eq!(format_of("/registry/configmaps/default/old-cm"), Some(Format::MessagePack));
    // What this server wrote itself is kube's.
    assert_eq!(format_of("/registry/namespaces/default"), Some(Format::Protobuf));
    // A custom resource stored in MessagePack, of a version stored but no longer served.
    let crd = r#"{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.example.com"}, "spec": {"group": "example.com", "scope": "Namespaced",
        "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"}, "versions": [
        {"name": "v1", "served": false, "storage": true, "schema": {"openAPIV3Schema": {"type": "object",
            "x-kubernetes-preserve-unknown-fields": true}}},
        {"name": "v2", "served": true, "storage": false, "schema": {"openAPIV3Schema": {"type": "object",
            "x-kubernetes-preserve-unknown-fields": true}}}]}}"#;
    tests::assert_success("create the CRD", &s.kubectl_stdin(&["create", "-f", "-"], crd));
    rt.block_on(async {
        let store = etcd.connect().await.unwrap();
        let gadget = old("Gadget", "example.com/v1", "old-g", serde_json::json!({"spec": {"size": 3}}));
        store.put("/registry/example.com/gadgets/default/old-g", gadget, Expect::Absent).await.unwrap();
    });

    let storage_command = |command: &str| {
        let out = std::process::Command::new(tests::apiserver_bin())
            .arg(command)
            .args(flags)
            .arg("--data-dir")
            .arg(&s.data_dir)
            .output()
            .unwrap();
        (out.status.success(), String::from_utf8_lossy(&out.stdout).into_owned())
    };
    let (ok, report) = storage_command("check-storage");
    assert!(ok, "{report}");
    assert!(report.contains("ConfigMap v1 (messagepack)"), "{report}");
    assert!(report.contains("ReplicationController v1 (protobuf)"), "{report}");
    let (ok, migrated) = storage_command("migrate-storage");
    assert!(ok && migrated.contains("/registry/configmaps/: 1 rewritten"), "{migrated}");
    assert!(migrated.contains("/registry/example.com/gadgets/: 1 rewritten"), "{migrated}");
    let (ok, report) = storage_command("check-storage");
    assert!(ok && !report.contains("messagepack"), "{report}");
    assert_eq!(s.kubectl_ok(&["get", "configmap", "old-cm", "-o", "jsonpath={.data.k}"]), "v");
    assert_eq!(s.kubectl_ok(&["get", "gadgets.v2.example.com", "old-g", "-o", "jsonpath={.spec.size}"]), "3");

    // A value nothing can decode is reported, and fails the check.
    rt.block_on(async {
        let store = etcd.connect().await.unwrap();
        store
            .put("/registry/configmaps/default/broken", bytes::Bytes::from_static(b"k8s\0\x0a\xff"), Expect::Absent)
            .await
            .unwrap();
    });
    let (ok, report) = storage_command("check-storage");
    assert!(!ok && report.contains("cannot decode /registry/configmaps/default/broken"), "{report}");
}

const TEMPLATED: &str = r#"
apiVersion: apps/v1
kind: Deployment
metadata: {name: d, namespace: default}
spec:
  minReadySeconds: 0
  selector: {matchLabels: {app: d}}
  template:
    metadata: {labels: {app: d}}
    spec: {tolerations: [], containers: [{name: c, image: nginx, resources: {}, env: []}]}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: ss, namespace: default}
spec:
  replicas: 0
  selector: {matchLabels: {app: ss}}
  template:
    metadata: {labels: {app: ss}}
    spec: {containers: [{name: c, image: nginx}]}
  volumeClaimTemplates:
  - metadata: {name: data}
    spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
---
apiVersion: batch/v1
kind: Job
metadata: {name: j, namespace: default}
spec:
  suspend: true
  template:
    spec: {restartPolicy: Never, containers: [{name: c, image: busybox, env: []}]}
---
apiVersion: v1
kind: PodTemplate
metadata: {name: pt, namespace: default}
template:
  metadata: {labels: {app: pt}}
  spec: {tolerations: [], containers: [{name: c, image: busybox, env: [], ports: []}]}
"#;

/// An object read back from kube's format compares equal to the same object sent, though
/// protobuf drops what Go leaves out (`env: []`, a zero `minReadySeconds`) and adds what Go
/// always writes (a StatefulSet's `serviceName: ""`): labelling a Deployment, a StatefulSet and
/// a Job changes no generation and trips no immutability check, applying the unchanged
/// manifest again writes nothing, and a StatefulSet replaced by its manifest is accepted.
#[test]
fn objects_read_back_compare_equal_to_what_was_sent() {
    let s = TestServer::start();
    let dir = tempfile::tempdir().unwrap();
    let manifest = dir.path().join("templated.yaml");
    std::fs::write(&manifest, TEMPLATED).unwrap();
    let file = manifest.to_str().unwrap();
    s.kubectl_ok(&["apply", "-f", file]);
    let get =
        |kind: &str, name: &str, path: &str| s.kubectl_ok(&["get", kind, name, "-o", &format!("jsonpath={path}")]);
    for (kind, name) in [("deployment", "d"), ("statefulset", "ss"), ("job", "j")] {
        s.kubectl_ok(&["label", kind, name, "touched=yes"]);
        assert_eq!(get(kind, name, "{.metadata.labels.touched}"), "yes", "{kind}");
        assert_eq!(get(kind, name, "{.metadata.generation}"), "1", "{kind}: a label is no change of spec");
    }
    // kubectl sends again what the live objects do not show (`env: []`, the claim templates
    // the server fills), as it does to kube-apiserver; the patches change nothing. A PodTemplate,
    // which no controller writes, shows that nothing is stored.
    let before = get("podtemplate", "pt", "{.metadata.resourceVersion}");
    // A second later, so that a manager's time recorded again would be a change.
    std::thread::sleep(std::time::Duration::from_millis(1100));
    s.kubectl_ok(&["apply", "-f", file]);
    assert_eq!(get("podtemplate", "pt", "{.metadata.resourceVersion}"), before, "an unchanged apply wrote nothing");
    for (kind, name) in [("deployment", "d"), ("statefulset", "ss"), ("job", "j")] {
        assert_eq!(get(kind, name, "{.metadata.generation}"), "1", "{kind}: applied again unchanged");
    }
    let sts = dir.path().join("sts.yaml");
    std::fs::write(&sts, TEMPLATED.split("---").nth(1).unwrap()).unwrap();
    s.kubectl_ok(&["replace", "-f", sts.to_str().unwrap()]);
    assert_eq!(get("statefulset", "ss", "{.metadata.generation}"), "1", "a replace with the same spec");
}

/// What kube-apiserver bootstraps (the RBAC roles and bindings, PriorityClasses, FlowSchemas
/// and PriorityLevelConfigurations recorded from it) is what this server bootstraps, to the
/// content: two servers sharing an etcd converge on the same objects instead of each
/// rewriting the other's.
#[test]
fn bootstrap_objects_have_kube_content() {
    let s = TestServer::start();
    let recorded: Value = serde_json::from_str(RECORDED).unwrap();
    let bootstrapped =
        ["clusterroles", "clusterrolebindings", "roles", "rolebindings", "priorityclasses", "flowschemas"];
    // What objects.yaml created among those resources; the rest kube wrote itself.
    let created = |obj: &Value| {
        obj["metadata"]["namespace"] == "fixtures"
            || ["fixtures-reader", "high", "fixtures"].contains(&obj["metadata"]["name"].as_str().unwrap_or(""))
    };
    let content = |obj: &Value| {
        let mut out = obj.clone();
        let meta = out["metadata"].as_object_mut().unwrap();
        meta.retain(|k, _| matches!(k.as_str(), "name" | "namespace" | "labels" | "annotations"));
        out.as_object_mut().unwrap().remove("status");
        out
    };
    let client = s.client(true);
    let (mut compared, mut wrong) = (0, Vec::new());
    for r in recorded["objects"].as_array().unwrap() {
        let (resource, obj) = (r["resource"].as_str().unwrap(), &r["object"]);
        let resource_bootstrapped = bootstrapped.contains(&resource) || resource == "prioritylevelconfigurations";
        if !resource_bootstrapped || created(obj) {
            continue;
        }
        let (group, version) = (r["group"].as_str().unwrap(), r["version"].as_str().unwrap());
        let base = if group.is_empty() { "/api/v1".to_string() } else { format!("/apis/{group}/{version}") };
        let ns = obj["metadata"]["namespace"].as_str().map(|n| format!("/namespaces/{n}")).unwrap_or_default();
        let name = obj["metadata"]["name"].as_str().unwrap();
        let url = s.url(&format!("{base}{ns}/{resource}/{name}"));
        let ours: Value = actix_web::rt::System::new().block_on(async {
            let mut resp = client.get(&url).send().await.expect("get");
            assert_eq!(resp.status().as_u16(), 200, "{url}");
            resp.json().limit(1 << 20).await.expect("json")
        });
        differences(&format!("{resource}/{name}"), &content(&ours), &content(obj), &mut wrong);
        compared += 1;
    }
    assert_eq!(compared, 9, "the bootstrapped objects recorded");
    assert!(wrong.is_empty(), "bootstrap objects differ from kube's:\n{}", wrong.join("\n"));
}

/// Whether bit `n` of a `RangeAllocation`'s `data` (a big-endian integer) is set.
fn range_bit(allocation: &Value, n: usize) -> bool {
    let data = base64::engine::general_purpose::STANDARD.decode(allocation["data"].as_str().unwrap()).unwrap();
    data.len() > n / 8 && data[data.len() - 1 - n / 8] & (1 << (n % 8)) != 0
}

/// The node port bitmap kube-apiserver wrote is the one this server allocates from: the port
/// kube gave its Service is refused here, and the bitmap this server writes back keeps it.
#[test]
fn node_ports_kube_allocated_stay_taken_here() {
    let recorded: Value = serde_json::from_str(RECORDED).unwrap();
    let key = "/registry/ranges/servicenodeports";
    let raw = recorded["raw"].as_array().unwrap().iter().find(|r| r["key"] == key).expect("recorded bitmap");
    let bytes = base64::engine::general_purpose::STANDARD.decode(raw["value"].as_str().unwrap()).unwrap();
    assert!(range_bit(&decode(key, &bytes).unwrap(), 443), "kube's bitmap holds its Service's 30443");
    let etcd = EtcdProcess::start();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let store = etcd.connect().await.expect("etcd");
        store.put(key, bytes.into(), Expect::Absent).await.unwrap();
    });
    let s = TestServer::start_with(&["--etcd-servers", etcd.endpoint()]);
    s.kubectl_ok(&["create", "namespace", "np"]);
    let taken = s.kubectl(&["-n", "np", "create", "service", "nodeport", "taken", "--tcp=80", "--node-port=30443"]);
    assert_eq!(
        String::from_utf8_lossy(&taken.stderr).trim(),
        "error: failed to create NodePort service: Service \"taken\" is invalid: spec.ports[0].nodePort: Invalid value: 30443: provided port is already allocated"
    );
    s.kubectl_ok(&["-n", "np", "create", "service", "nodeport", "fresh", "--tcp=80"]);
    let port = s.kubectl_ok(&["-n", "np", "get", "svc", "fresh", "-o", "jsonpath={.spec.ports[0].nodePort}"]);
    let port: usize = port.parse().expect("a node port");
    assert!((30000..=32767).contains(&port) && port != 30443, "{port}");
    let stored = rt.block_on(async { etcd.connect().await.unwrap().get(key).await.unwrap().0.unwrap() });
    let allocation = decode(key, &stored.value).unwrap();
    assert_eq!(allocation["range"], "30000-32767");
    assert!(range_bit(&allocation, 443) && range_bit(&allocation, port - 30000), "{allocation}");
}

/// A varint field `number` holding `v`, as a schema newer than this server's writes it.
fn newer_field(number: u32, v: u64) -> Vec<u8> {
    let mut out = Vec::new();
    prost::encoding::encode_key(number, prost::encoding::WireType::Varint, &mut out);
    prost::encoding::encode_varint(v, &mut out);
    out
}

/// A length-delimited field.
fn delimited(number: u32, bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    prost::encoding::encode_key(number, prost::encoding::WireType::LengthDelimited, &mut out);
    prost::encoding::encode_varint(bytes.len() as u64, &mut out);
    out.extend_from_slice(bytes);
    out
}

fn message_of(name: &str, value: &Value) -> Vec<u8> {
    let schema = protobuf::Schema::global();
    let mut out = Vec::new();
    protobuf::codec::encode(schema, schema.message(name).expect(name), value, &mut out).unwrap();
    out
}

#[test]
fn fields_a_newer_kube_wrote_survive_writes_here() {
    // A Pod as a newer kube-apiserver stores it: a field of its own on the Pod (900), in its
    // spec (901) and in its container (902), none of which this server's schema knows.
    let meta = serde_json::json!({"name": "web", "namespace": "default", "uid": "7d0c",
        "creationTimestamp": "2026-01-01T00:00:00Z"});
    let container = [
        message_of("k8s.io.api.core.v1.Container", &serde_json::json!({"name": "app", "image": "nginx"})),
        newer_field(902, 3),
    ]
    .concat();
    let spec = message_of("k8s.io.api.core.v1.PodSpec", &serde_json::json!({"restartPolicy": "Always"}));
    let spec = [delimited(2, &container), spec, newer_field(901, 2)].concat();
    let pod = [
        delimited(1, &message_of("k8s.io.apimachinery.pkg.apis.meta.v1.ObjectMeta", &meta)),
        delimited(2, &spec),
        newer_field(900, 1),
    ]
    .concat();
    let body = protobuf::enveloped("v1", "Pod", &pod);
    let etcd = EtcdProcess::start();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let key = "/registry/pods/default/web";
    rt.block_on(async { etcd.connect().await.unwrap().put(key, body.into(), Expect::Absent).await.unwrap() });
    let s = TestServer::start_with(&["--etcd-servers", etcd.endpoint()]);
    assert_eq!(s.kubectl_ok(&["get", "pod", "web", "-o", "jsonpath={.spec.containers[0].image}"]), "nginx");

    // Writes of every kind here: a label, an annotation by strategic merge, a status patch, a
    // replace; each keeps what the newer server wrote, where it wrote it.
    s.kubectl_ok(&["label", "pod", "web", "tier=front"]);
    s.kubectl_ok(&["patch", "pod", "web", "-p", r#"{"metadata":{"annotations":{"a":"b"}}}"#]);
    s.kubectl_ok(&[
        "patch",
        "pod",
        "web",
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"status":{"phase":"Running"}}"#,
    ]);
    let got = s.kubectl_ok(&["get", "pod", "web", "-o", "json"]);
    let mut got: Value = serde_json::from_str(&got).unwrap();
    got["metadata"]["labels"]["replaced"] = "yes".into();
    tests::assert_success("replace", &s.kubectl_stdin(&["replace", "-f", "-"], &got.to_string()));

    let stored = rt.block_on(async { etcd.connect().await.unwrap().get(key).await.unwrap().0.unwrap() });
    let has = |needle: &[u8]| stored.value.windows(needle.len()).any(|w| w == needle);
    for (number, v) in [(900, 1), (901, 2), (902, 3)] {
        assert!(has(&newer_field(number, v)), "field {number} kept: {:?}", stored.value);
    }
    let obj = decode(key, &stored.value).unwrap();
    assert_eq!(obj["metadata"]["labels"], serde_json::json!({"tier": "front", "replaced": "yes"}));
    assert_eq!(
        (obj["metadata"]["annotations"]["a"].as_str(), obj["status"]["phase"].as_str()),
        (Some("b"), Some("Running"))
    );
    // The container is still app's, and the fields sit inside the messages they were in: the
    // spec's own after its known fields, the Pod's at its end.
    assert!(stored.value.ends_with(&[newer_field(900, 1), protobuf::UNKNOWN_TAIL.to_vec()].concat()));
}

#[test]
fn json_fields_a_newer_kube_wrote_are_not_shown_and_survive_writes_here() {
    let etcd = EtcdProcess::start();
    let s = TestServer::start_with(&["--etcd-servers", etcd.endpoint()]);
    let crd = r#"{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
        "metadata":{"name":"widgets.example.com"},
        "spec":{"group":"example.com","names":{"kind":"Widget","plural":"widgets"},"scope":"Namespaced",
        "versions":[{"name":"v1","served":true,"storage":true,
            "schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true,
                "properties":{"app.kubernetes.io/name":{"type":"string"}}}}}]}}"#;
    tests::assert_success("create the CRD", &s.kubectl_stdin(&["create", "-f", "-"], crd));
    // A newer kube-apiserver rewrites it (in kube's v1beta1 JSON) with fields of its own.
    let key = "/registry/apiextensions.k8s.io/customresourcedefinitions/widgets.example.com";
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let read = || rt.block_on(async { etcd.connect().await.unwrap().get(key).await.unwrap().0.unwrap() });
    // (After this server's CRD controller has written its conditions, and again if it writes
    // more.)
    let established = || {
        s.kubectl_ok(&[
            "get",
            "crd",
            "widgets.example.com",
            "-o",
            "jsonpath={.status.conditions[?(@.type==\"Established\")].status}",
        ])
    };
    assert!(
        tests::poll_until(std::time::Duration::from_secs(20), || (established() == "True").then_some(())).is_some()
    );
    // One of them sits under a map key with dots and a slash (a schema property's name).
    let written = loop {
        let stored = read();
        let mut newer: Value = serde_json::from_slice(&stored.value).unwrap();
        assert_eq!(newer["apiVersion"], "apiextensions.k8s.io/v1beta1");
        newer["futureTop"] = serde_json::json!({"x": 1});
        newer["spec"]["futureSpec"] = "s".into();
        newer["spec"]["versions"][0]["futureVersion"] = true.into();
        newer["spec"]["validation"]["openAPIV3Schema"]["properties"]["app.kubernetes.io/name"]["futureProp"] = 1.into();
        let value = bytes::Bytes::from(serde_json::to_vec(&newer).unwrap());
        let put = rt.block_on(async {
            etcd.connect().await.unwrap().put(key, value, Expect::ModRevision(stored.mod_revision)).await
        });
        match put {
            Ok(kv) => break kv.mod_revision.to_string(),
            Err(storage::StorageError::Conflict { .. }) => continue,
            Err(e) => panic!("{e}"),
        }
    };

    // Served as kube's decoding serves it: without them, so a client's read and write round
    // trip raises no unknown-field warnings.
    let shown = |path: &str| s.kubectl_ok(&["get", "crd", "widgets.example.com", "-o", &format!("jsonpath={path}")]);
    let seen = tests::poll_until(std::time::Duration::from_secs(20), || {
        (shown("{.metadata.resourceVersion}") == written).then_some(())
    });
    assert!(seen.is_some(), "the rewrite at {written} is read");
    assert_eq!(shown("{.spec.futureSpec}{.futureTop}{.spec.versions[0].futureVersion}"), "");
    let property = shown("{.spec.versions[0].schema.openAPIV3Schema.properties}");
    assert_eq!(property, r#"{"app.kubernetes.io/name":{"type":"string"}}"#);
    let out = s.kubectl(&["label", "crd", "widgets.example.com", "tier=front"]);
    assert!(out.status.success() && out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));

    let after: Value = serde_json::from_slice(&read().value).unwrap();
    assert_eq!(after["metadata"]["labels"]["tier"], "front");
    assert_eq!(
        (&after["futureTop"], &after["spec"]["futureSpec"], &after["spec"]["versions"][0]["futureVersion"]),
        (&serde_json::json!({"x": 1}), &serde_json::json!("s"), &serde_json::json!(true))
    );
    let property = &after["spec"]["validation"]["openAPIV3Schema"]["properties"]["app.kubernetes.io/name"];
    assert_eq!(property, &serde_json::json!({"type": "string", "futureProp": 1}));
}
