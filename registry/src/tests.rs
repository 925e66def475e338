//! The registry over the in-memory store: server-set metadata, namespaces of updates, Service
//! addresses under concurrency and across restarts, deletion, and storage errors as Status.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use actix::{Actor, Context};
use actors::{ActorDirectory, Deadline, MailboxSpec, StageArbiter, StageHandler, WhenFull, Work};
use apimachinery::catalogue::{Pool, Subresource};
use apimachinery::error::ApiError;
use apimachinery::messages::{
    AdmissionPhase, Admit, Admitted, CreateObject, DeleteCollection, DeleteObject, PatchObject, Target, UpdateObject,
    WriteResult, Written,
};
use apimachinery::options::{DeleteOptions, ListOptions, Propagation, WriteOptions};
use apimachinery::patch::PatchType;
use apimachinery::request::UserInfo;
use async_trait::async_trait;
use bytes::Bytes;
use serde_json::{Value, json};
use storage::embedded::{EmbeddedOptions, EmbeddedStore};
use storage::router::StorageRouter;
use storage::{Expect, KeyValue, ListResult, Revision, Storage, StorageError, WatchStream};

use crate::RegistryStore;
use cluster_ips::{PortRange, ServiceAllocators, ServiceRange};

/// Admission that admits everything but objects labelled `refuse`; its mutating phase turns
/// the label `mutate: bad` into an invalid label, and its validating phase records what it saw
/// in the label `validated-uid` (for the test of kube's order).
struct TestAdmission;

impl Actor for TestAdmission {
    type Context = Context<Self>;
}

impl StageHandler<Admit> for TestAdmission {
    fn handle(&mut self, msg: Admit, _: Deadline, _: &mut Context<Self>) -> Work<Self, Result<Admitted, ApiError>> {
        if msg.object.pointer("/metadata/labels/refuse").is_some() {
            return Work::Done(Err(ApiError::forbidden("", &msg.target.resource, "", "refused by the test")));
        }
        let mut object = msg.object;
        let mut warnings = Vec::new();
        match msg.phase {
            AdmissionPhase::Mutating => {
                if object.pointer("/metadata/labels/mutate").and_then(Value::as_str) == Some("bad") {
                    object["metadata"]["labels"]["not a key!"] = "x".into();
                }
                warnings.push(format!("mutated {}", msg.target.name));
            }
            AdmissionPhase::Validating => {
                let uid = object.pointer("/metadata/uid").is_some();
                warnings.push(format!("validated {} uid={uid}", msg.target.name));
            }
        }
        Work::Done(Ok(Admitted { object, warnings, audit_annotations: Vec::new() }))
    }
}

actors::stage_handler!(TestAdmission => Admit);

struct Registry {
    store: RegistryStore,
    storage: Arc<dyn Storage>,
    ips: Arc<ServiceAllocators>,
    _arbiter: StageArbiter,
}

fn registry_over(storage: Arc<dyn Storage>, range: &str) -> Registry {
    let catalogue = Arc::new(kinds::catalogue());
    let router = Arc::new(StorageRouter::new(storage.clone()));
    let arbiter = StageArbiter::new("admission");
    let spec = MailboxSpec {
        stage: "admission".into(),
        resource: String::new(),
        capacity: 256,
        when_full: WhenFull::Shed { wait: Duration::from_secs(5) },
    };
    let admission = actors::start(&arbiter, &ActorDirectory::default(), &spec, TestAdmission);
    let range = ServiceRange::parse(range).unwrap();
    let ports = PortRange::default();
    let ips = Arc::new(ServiceAllocators::new(range, ports, router.clone(), catalogue.clone(), "/registry"));
    let store = RegistryStore::new(catalogue, router, "/registry", admission.handle(), ips.clone());
    Registry { store, storage, ips, _arbiter: arbiter }
}

fn registry(range: &str) -> Registry {
    registry_over(EmbeddedStore::in_memory(EmbeddedOptions::default()).unwrap(), range)
}

fn admin() -> UserInfo {
    UserInfo { name: "admin".into(), uid: String::new(), groups: vec!["system:masters".into()], ..Default::default() }
}

fn target(group: &str, resource: &str, namespace: &str, name: &str) -> Target {
    Target {
        group: group.into(),
        version: "v1".into(),
        resource: resource.into(),
        namespace: namespace.into(),
        name: name.into(),
        ..Target::default()
    }
}

impl Registry {
    async fn create(&self, group: &str, resource: &str, namespace: &str, object: Value) -> Result<Value, ApiError> {
        let msg = CreateObject {
            target: target(group, resource, namespace, ""),
            object,
            user: admin(),
            options: WriteOptions::default(),
        };
        self.store.create(msg, Deadline::NONE).await.map(object_of)
    }

    async fn service(&self, name: &str) -> Result<Value, ApiError> {
        let svc = json!({"metadata": {"name": name}, "spec": {"ports": [{"port": 80}]}});
        self.create("", "services", "default", svc).await
    }

    async fn delete(&self, resource: &str, namespace: &str, name: &str) -> Result<WriteResult, ApiError> {
        let msg = DeleteObject {
            target: target("", resource, namespace, name),
            user: admin(),
            options: DeleteOptions::default(),
        };
        self.store.delete(msg, Deadline::NONE).await
    }
}

fn object_of(r: WriteResult) -> Value {
    match r.object {
        Written::Object(o) => o,
        other => panic!("not an object: {other:?}"),
    }
}

fn ip(svc: &Value) -> String {
    svc["spec"]["clusterIP"].as_str().unwrap().to_string()
}

#[actix::test]
async fn creates_get_server_metadata_and_the_request_namespace() {
    let r = registry("10.0.0.0/24");
    let cm = r.create("", "configmaps", "team", json!({"metadata": {"generateName": "cfg-"}})).await.unwrap();
    let meta = &cm["metadata"];
    assert!(meta["name"].as_str().unwrap().starts_with("cfg-") && meta["name"].as_str().unwrap().len() == 9);
    assert_eq!(meta["namespace"], "team");
    assert!(meta["uid"].as_str().is_some_and(|u| u.len() == 36));
    assert!(meta["creationTimestamp"].is_string() && meta["resourceVersion"].is_string());
    assert!(meta.get("generation").is_none(), "configmaps track no generation");
    let deploy = json!({"metadata": {"name": "web", "labels": {"a": "b"}}, "spec": {"selector": {"matchLabels": {"a": "b"}},
        "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}});
    let d = r.create("apps", "deployments", "team", deploy).await.unwrap();
    assert_eq!((d["metadata"]["generation"].as_i64(), d["spec"]["replicas"].as_i64()), (Some(1), Some(1)));

    let e = r.create("", "configmaps", "team", json!({"metadata": {}})).await.unwrap_err();
    assert_eq!(
        (e.code, e.message.as_str()),
        (422, "ConfigMap \"\" is invalid: metadata.name: Required value: name or generateName is required")
    );
    let e =
        r.create("", "configmaps", "other", json!({"metadata": {"name": "x", "namespace": "team"}})).await.unwrap_err();
    assert_eq!(e.code, 400);
    let e = r.create("", "configmaps", "team", json!({"metadata": {"name": "r", "labels": {"refuse": "1"}}})).await;
    assert_eq!(e.unwrap_err().code, 403, "admission decides before the write");
    let rv = r.storage.current_revision().await.unwrap();
    assert!(
        r.create("", "configmaps", "team", json!({"metadata": {"name": "r2", "labels": {"refuse": "1"}}}))
            .await
            .is_err()
    );
    assert_eq!(r.storage.current_revision().await.unwrap(), rv, "a refused write writes nothing");
}

/// kube's order: mutating admission, then the kind's validation of the result, then validating
/// admission on the prepared object (uid set), each phase's warnings returned.
#[actix::test]
async fn admission_mutates_before_validation_and_validates_after_it() {
    let r = registry("10.0.0.0/24");
    let msg = |object: Value| CreateObject {
        target: target("", "configmaps", "team", ""),
        object,
        user: admin(),
        options: WriteOptions::default(),
    };
    let e = r
        .store
        .create(msg(json!({"metadata": {"name": "m", "labels": {"mutate": "bad"}}})), Deadline::NONE)
        .await
        .unwrap_err();
    assert_eq!(e.code, 422, "the mutated object is validated: {e:?}");
    assert!(e.message.contains("metadata.labels: Invalid value: \"not a key!\""), "{}", e.message);

    let ok = r.store.create(msg(json!({"metadata": {"name": "m"}})), Deadline::NONE).await.unwrap();
    assert_eq!(ok.warnings, vec!["mutated m", "validated m uid=true"]);

    let cm = object_of(ok);
    let update = UpdateObject {
        target: target("", "configmaps", "team", "m"),
        object: json!({"metadata": {"name": "m", "labels": {"mutate": "bad"}, "resourceVersion": cm["metadata"]["resourceVersion"]}}),
        user: admin(),
        options: WriteOptions::default(),
    };
    let e = r.store.update(update, Deadline::NONE).await.unwrap_err();
    assert_eq!(e.code, 422, "an update's mutation is validated too: {e:?}");
    let gone = r.delete("configmaps", "team", "m").await.unwrap();
    assert_eq!(gone.warnings, vec!["mutated m", "validated m uid=true"], "a delete runs both phases");
}

#[actix::test]
async fn an_update_without_a_namespace_takes_the_requests() {
    let r = registry("10.0.0.0/24");
    let cm =
        r.create("", "configmaps", "team", json!({"metadata": {"name": "app"}, "data": {"k": "1"}})).await.unwrap();
    // As a client-go program builds it for Update: from scratch, without a namespace.
    let fresh = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "app", "resourceVersion": cm["metadata"]["resourceVersion"]}, "data": {"k": "2"}});
    let msg = UpdateObject {
        target: target("", "configmaps", "team", "app"),
        object: fresh,
        user: admin(),
        options: WriteOptions::default(),
    };
    let updated = object_of(r.store.update(msg, Deadline::NONE).await.unwrap());
    assert_eq!((updated["metadata"]["namespace"].as_str(), updated["data"]["k"].as_str()), (Some("team"), Some("2")));
    assert_eq!(updated["metadata"]["uid"], cm["metadata"]["uid"]);
}

#[actix::test]
async fn concurrent_service_creates_never_share_an_address() {
    let r = Arc::new(registry("10.96.0.0/12"));
    let tasks: Vec<_> = (0..100)
        .map(|i| {
            let r = r.clone();
            actix::spawn(async move { r.service(&format!("s{i}")).await })
        })
        .collect();
    let mut ips = HashSet::new();
    for t in tasks {
        assert!(ips.insert(ip(&t.await.unwrap().unwrap())), "an address was handed out twice");
    }
    assert_eq!(ips.len(), 100);
    assert!(
        ips.iter().all(|ip| ip.starts_with("10.96.1.")),
        "the lowest free addresses above the static band: {ips:?}"
    );
}

#[actix::test]
async fn addresses_survive_a_restart_and_deletes_give_them_back() {
    let storage: Arc<dyn Storage> = EmbeddedStore::in_memory(EmbeddedOptions::default()).unwrap();
    let first = registry_over(storage.clone(), "10.0.0.0/29");
    let mut taken = Vec::new();
    for i in 0..3 {
        taken.push(ip(&first.service(&format!("a{i}")).await.unwrap()));
    }
    drop(first);
    // Another server over the same storage (a restart, or a second replica) knows them.
    let second = registry_over(storage, "10.0.0.0/29");
    for i in 0..3 {
        let new = ip(&second.service(&format!("b{i}")).await.unwrap());
        assert!(!taken.contains(&new), "{new} reused");
        taken.push(new);
    }
    let e = second.service("full").await.unwrap_err();
    assert_eq!(
        (e.code, e.message.as_str()),
        (500, "Internal error occurred: failed to allocate a serviceIP: range is full")
    );
    let gone = second.delete("services", "default", "a1").await.unwrap();
    assert!(gone.deleted);
    assert_eq!(ip(&second.service("again").await.unwrap()), taken[1], "the freed address");
}

#[actix::test]
async fn chosen_addresses_are_reserved_and_a_failed_write_gives_its_address_back() {
    let r = registry("10.0.0.0/28");
    let mut chosen = json!({"metadata": {"name": "dns"}, "spec": {"clusterIP": "10.0.0.10", "ports": [{"port": 53}]}});
    assert_eq!(ip(&r.create("", "services", "default", chosen.clone()).await.unwrap()), "10.0.0.10");
    chosen["metadata"]["name"] = "dns2".into();
    let e = r.create("", "services", "default", chosen).await.unwrap_err();
    assert_eq!(
        e.message,
        "Service \"dns2\" is invalid: spec.clusterIPs: Invalid value: []string{\"10.0.0.10\"}: failed to allocate IP 10.0.0.10: provided IP is already allocated"
    );
    // Refused after its address was allocated: the address is free again.
    let refused = json!({"metadata": {"name": "no", "labels": {"refuse": "1"}}, "spec": {"ports": [{"port": 80}]}});
    assert_eq!(r.create("", "services", "default", refused).await.unwrap_err().code, 403);
    let next = ip(&r.service("yes").await.unwrap());
    let again = ip(&r.service("yes2").await.unwrap());
    assert_ne!(next, again);
    assert_eq!(next, "10.0.0.1", "the refused create's address (the lowest) came back");
    // A dry run shows an address without taking it.
    let msg = CreateObject {
        target: target("", "services", "default", ""),
        object: json!({"metadata": {"name": "dry"}, "spec": {"ports": [{"port": 80}]}}),
        user: admin(),
        options: WriteOptions { dry_run: true, ..Default::default() },
    };
    let dry = ip(&object_of(r.store.create(msg, Deadline::NONE).await.unwrap()));
    assert_eq!(ip(&r.service("after-dry").await.unwrap()), dry);
}

fn node_ports(svc: &Value) -> Vec<i64> {
    svc["spec"]["ports"].as_array().unwrap().iter().filter_map(|p| p["nodePort"].as_i64()).collect()
}

impl Registry {
    async fn node_port_service(&self, name: &str, spec: Value) -> Result<Value, ApiError> {
        let mut spec = spec;
        spec["type"] = "NodePort".into();
        self.create("", "services", "default", json!({"metadata": {"name": name}, "spec": spec})).await
    }

    async fn replace(&self, svc: &Value) -> Result<Value, ApiError> {
        let msg = UpdateObject {
            target: target("", "services", "default", svc["metadata"]["name"].as_str().unwrap()),
            object: svc.clone(),
            user: admin(),
            options: WriteOptions::default(),
        };
        self.store.update(msg, Deadline::NONE).await.map(object_of)
    }
}

#[actix::test]
async fn node_ports_are_allocated_reserved_and_given_back_in_kubes_bitmap() {
    let r = registry("10.0.0.0/24");
    let two = json!({"ports": [{"name": "http", "port": 80}, {"name": "https", "port": 443}]});
    let first = r.node_port_service("web", two.clone()).await.unwrap();
    // The lowest ports above kube's static band of 86 for 30000-32767.
    assert_eq!(node_ports(&first), [30086, 30087]);
    // Ports of one number share a node port, whatever their protocols.
    let dns = json!({"ports": [{"name": "udp", "port": 53, "protocol": "UDP"}, {"name": "tcp", "port": 53}]});
    assert_eq!(node_ports(&r.node_port_service("dns", dns).await.unwrap()), [30088, 30088]);
    let chosen = json!({"ports": [{"port": 80, "nodePort": 30080}]});
    assert_eq!(node_ports(&r.node_port_service("chosen", chosen.clone()).await.unwrap()), [30080]);
    let e = r.node_port_service("again", chosen).await.unwrap_err();
    assert_eq!(
        (e.code, e.message.as_str()),
        (
            422,
            "Service \"again\" is invalid: spec.ports[0].nodePort: Invalid value: 30080: provided port is already allocated"
        )
    );
    let outside = json!({"ports": [{"port": 80, "nodePort": 8080}]});
    let e = r.node_port_service("outside", outside).await.unwrap_err();
    assert_eq!(
        e.message,
        "Service \"outside\" is invalid: spec.ports[0].nodePort: Invalid value: 8080: provided port is not in the valid range. The range of valid ports is 30000-32767"
    );
    // The refused creates gave back the addresses they took, before answering.
    assert_eq!(r.ips.used(Pool::ClusterIps).await.unwrap(), 3);
    assert_eq!(r.ips.used(Pool::NodePorts).await.unwrap(), 4);

    // The bitmap is kube's RangeAllocation: bit n of a big-endian integer is port 30000 + n.
    let (kv, _) = r.storage.get("/registry/ranges/servicenodeports").await.unwrap();
    let doc = storage_codec::codec::decode("/registry/ranges/servicenodeports", &kv.unwrap().value).unwrap();
    assert_eq!(doc["range"], "30000-32767");
    let data =
        base64::Engine::decode(&base64::engine::general_purpose::STANDARD, doc["data"].as_str().unwrap()).unwrap();
    let bit = |n: usize| data[data.len() - 1 - n / 8] & (1 << (n % 8)) != 0;
    assert!([80, 86, 87, 88].into_iter().all(bit), "{data:?}");
    assert!(!bit(89) && !bit(0));

    // A type change to ClusterIP gives the node ports up; a deletion too.
    let mut web = first;
    web["spec"]["type"] = "ClusterIP".into();
    let web = r.replace(&web).await.unwrap();
    assert!(node_ports(&web).is_empty(), "{web}");
    assert!(r.delete("services", "default", "chosen").await.unwrap().deleted);
    assert_eq!(r.ips.used(Pool::NodePorts).await.unwrap(), 1);
    assert_eq!(node_ports(&r.node_port_service("next", two).await.unwrap()), [30086, 30087]);
    // An update that adds a port keeps the held ones and allocates the new one.
    let mut next = r.node_port_service("grow", json!({"ports": [{"port": 1}]})).await.unwrap();
    next["spec"]["ports"].as_array_mut().unwrap().push(json!({"name": "b", "port": 2}));
    next["spec"]["ports"][0]["name"] = "a".into();
    assert_eq!(node_ports(&r.replace(&next).await.unwrap()), [30089, 30090]);
}

#[actix::test]
async fn node_port_claims_follow_kubes_sharing_dry_runs_and_type_changes() {
    let r = registry("10.0.0.0/24");
    // A port served over TCP and UDP shares the node port one of them asks for.
    let dns = json!({"ports": [{"name": "tcp", "port": 53, "nodePort": 30053}, {"name": "udp", "port": 53, "protocol": "UDP"}]});
    assert_eq!(node_ports(&r.node_port_service("dns", dns).await.unwrap()), [30053, 30053]);
    // Two port numbers asking for one node port: the second is refused, as by kube.
    let two =
        json!({"ports": [{"name": "a", "port": 1, "nodePort": 30001}, {"name": "b", "port": 2, "nodePort": 30001}]});
    let e = r.node_port_service("two", two).await.unwrap_err();
    assert_eq!(
        e.message,
        "Service \"two\" is invalid: spec.ports[1].nodePort: Invalid value: 30001: provided port is already allocated"
    );
    assert_eq!(r.ips.used(Pool::NodePorts).await.unwrap(), 1, "the refused create took nothing");
    // A dry run shows distinct ports and takes none.
    let msg = CreateObject {
        target: target("", "services", "default", ""),
        object: json!({"metadata": {"name": "dry"}, "spec": {"type": "LoadBalancer", "externalTrafficPolicy": "Local",
            "ports": [{"name": "a", "port": 80}, {"name": "b", "port": 443}]}}),
        user: admin(),
        options: WriteOptions { dry_run: true, ..Default::default() },
    };
    let dry = object_of(r.store.create(msg, Deadline::NONE).await.unwrap());
    assert_eq!((node_ports(&dry), &dry["spec"]["healthCheckNodePort"]), (vec![30086, 30087], &json!(30088)));
    assert_eq!(r.ips.used(Pool::NodePorts).await.unwrap(), 1);
    // To ClusterIP while dropping a port: the rest of the node ports go too.
    let web = json!({"ports": [{"name": "a", "port": 80}, {"name": "b", "port": 443}]});
    let mut web = r.node_port_service("web", web).await.unwrap();
    web["spec"]["type"] = "ClusterIP".into();
    web["spec"]["ports"].as_array_mut().unwrap().pop();
    assert!(node_ports(&r.replace(&web).await.unwrap()).is_empty());
    assert_eq!(r.ips.used(Pool::NodePorts).await.unwrap(), 1);
    // To ClusterIP with external IPs: still reached from outside, its traffic policy stays.
    let mut ext = r.node_port_service("ext", json!({"ports": [{"port": 80}]})).await.unwrap();
    ext["spec"]["type"] = "ClusterIP".into();
    ext["spec"]["externalIPs"] = json!(["192.0.2.1"]);
    let ext = r.replace(&ext).await.unwrap();
    assert_eq!(ext["spec"]["externalTrafficPolicy"], "Cluster");
}

#[actix::test]
async fn an_update_completing_a_deletion_keeps_nothing_it_reserved() {
    let r = registry("10.0.0.0/24");
    let svc =
        json!({"metadata": {"name": "held", "finalizers": ["example.com/hold"]}, "spec": {"ports": [{"port": 80}]}});
    r.create("", "services", "default", svc).await.unwrap();
    assert!(!r.delete("services", "default", "held").await.unwrap().deleted, "waits for its finalizer");
    let key = "/registry/services/specs/default/held";
    let (kv, _) = r.storage.get(key).await.unwrap();
    let mut held = storage_codec::codec::decode(key, &kv.unwrap().value).unwrap();
    held["metadata"]["finalizers"] = json!([]);
    held["spec"]["type"] = "NodePort".into();
    let msg = UpdateObject {
        target: target("", "services", "default", "held"),
        object: held,
        user: admin(),
        options: WriteOptions::default(),
    };
    assert!(r.store.update(msg, Deadline::NONE).await.unwrap().deleted);
    assert_eq!(r.ips.used(Pool::NodePorts).await.unwrap(), 0);
    assert_eq!(r.ips.used(Pool::ClusterIps).await.unwrap(), 0);
}

#[actix::test]
async fn a_local_load_balancer_gets_a_health_check_node_port() {
    let r = registry("10.0.0.0/24");
    let svc = json!({"metadata": {"name": "lb"}, "spec": {"type": "LoadBalancer", "externalTrafficPolicy": "Local",
        "ports": [{"port": 80}]}});
    let lb = r.create("", "services", "default", svc).await.unwrap();
    assert_eq!((node_ports(&lb), &lb["spec"]["healthCheckNodePort"]), (vec![30086], &json!(30087)));
    assert!(r.delete("services", "default", "lb").await.unwrap().deleted);
    assert_eq!(r.ips.used(Pool::NodePorts).await.unwrap(), 0);
}

#[actix::test]
async fn deletion_waits_for_finalizers_and_the_last_one_removed_completes_it() {
    let r = registry("10.0.0.0/24");
    r.create("", "configmaps", "team", json!({"metadata": {"name": "held", "finalizers": ["example.com/hold"]}}))
        .await
        .unwrap();
    let pending = r.delete("configmaps", "team", "held").await.unwrap();
    assert!(!pending.deleted);
    let held = object_of(pending);
    assert!(held["metadata"]["deletionTimestamp"].is_string());
    let mut released = held.clone();
    released["metadata"]["finalizers"] = json!([]);
    let msg = UpdateObject {
        target: target("", "configmaps", "team", "held"),
        object: released,
        user: admin(),
        options: WriteOptions::default(),
    };
    assert!(r.store.update(msg, Deadline::NONE).await.unwrap().deleted);
    assert_eq!(r.delete("configmaps", "team", "held").await.unwrap_err().code, 404);

    // Foreground propagation adds its finalizer; deletecollection deletes what it selects.
    r.create("", "configmaps", "team", json!({"metadata": {"name": "fg"}})).await.unwrap();
    let msg = DeleteObject {
        target: target("", "configmaps", "team", "fg"),
        user: admin(),
        options: DeleteOptions { propagation: Some(Propagation::Foreground), ..Default::default() },
    };
    let fg = object_of(r.store.delete(msg, Deadline::NONE).await.unwrap());
    assert_eq!(fg["metadata"]["finalizers"], json!(["foregroundDeletion"]));
    r.create("", "configmaps", "team", json!({"metadata": {"name": "plain"}})).await.unwrap();
    let msg = DeleteCollection {
        target: target("", "configmaps", "team", ""),
        list: ListOptions::default(),
        user: admin(),
        options: DeleteOptions::default(),
    };
    let deleted = r.store.delete_collection(msg, Deadline::NONE).await.unwrap();
    assert_eq!(deleted.len(), 2, "the pending one is marked again, the plain one deleted");
}

#[actix::test]
async fn status_writes_change_status_and_the_metadata_their_kind_allows() {
    let r = registry("10.0.0.0/24");
    let node = r
        .create("", "nodes", "", json!({"metadata": {"name": "n1"}, "spec": {"podCIDR": "10.1.0.0/24"}}))
        .await
        .unwrap();
    let mut status = node.clone();
    status["spec"]["podCIDR"] = "10.2.0.0/24".into();
    status["status"] = json!({"phase": "Running"});
    status["metadata"]["labels"] = json!({"new": "label"});
    let mut t = target("", "nodes", "", "n1");
    t.subresource = Some(Subresource::Status);
    let msg = UpdateObject { target: t, object: status, user: admin(), options: WriteOptions::default() };
    let after = object_of(r.store.update(msg, Deadline::NONE).await.unwrap());
    assert_eq!(after["status"]["phase"], "Running");
    assert_eq!(after["spec"]["podCIDR"], "10.1.0.0/24");
    assert_eq!(after["metadata"]["labels"], json!({"new": "label"}), "kube's node status strategy takes labels");

    // A Deployment's status writer may not change its labels.
    let labels = json!({"app": "web"});
    let template = json!({"metadata": {"labels": labels}, "spec": {"containers": [{"name": "c", "image": "i"}]}});
    let spec = json!({"selector": {"matchLabels": labels}, "template": template});
    let deployment = json!({"metadata": {"name": "web", "labels": labels, "annotations": {"a": "1"}}, "spec": spec});
    let deployment = r.create("apps", "deployments", "team", deployment).await.unwrap();
    let mut status = deployment.clone();
    status["metadata"]["labels"] = json!({"app": "other"});
    status["metadata"]["annotations"] = json!({"a": "2"});
    status["status"] = json!({"replicas": 1});
    let mut t = target("apps", "deployments", "team", "web");
    t.subresource = Some(Subresource::Status);
    let msg = UpdateObject { target: t, object: status, user: admin(), options: WriteOptions::default() };
    let after = object_of(r.store.update(msg, Deadline::NONE).await.unwrap());
    assert_eq!(after["status"]["replicas"], 1);
    assert_eq!((&after["metadata"]["labels"], &after["metadata"]["annotations"]), (&labels, &json!({"a": "2"})));
}

/// A backend with faults for one test: lists failing as an unreachable backend's do, or writes
/// under a prefix waiting a second (long enough to drop the request meanwhile).
struct Tampered {
    inner: Arc<dyn Storage>,
    lists_fail: bool,
    slow_writes_under: Option<&'static str>,
    /// Puts are applied but answered as a timed-out backend answers (outcome unknown).
    answers_lost: std::sync::atomic::AtomicBool,
}

impl Tampered {
    fn over(lists_fail: bool, slow_writes_under: Option<&'static str>) -> Arc<dyn Storage> {
        Self::new(lists_fail, slow_writes_under)
    }

    fn new(lists_fail: bool, slow_writes_under: Option<&'static str>) -> Arc<Tampered> {
        let inner = EmbeddedStore::in_memory(EmbeddedOptions::default()).unwrap();
        Arc::new(Tampered { inner, lists_fail, slow_writes_under, answers_lost: Default::default() })
    }
}

#[async_trait]
impl Storage for Tampered {
    fn describe(&self) -> String {
        "etcd3 (http://10.0.0.9:2379)".into()
    }
    async fn current_revision(&self) -> Result<Revision, StorageError> {
        self.inner.current_revision().await
    }
    async fn get(&self, key: &str) -> Result<(Option<KeyValue>, Revision), StorageError> {
        self.inner.get(key).await
    }
    async fn list(&self, prefix: &str, opts: storage::ListOptions) -> Result<ListResult, StorageError> {
        if self.lists_fail {
            return Err(StorageError::Unavailable { backend: self.describe(), message: "connection refused".into() });
        }
        self.inner.list(prefix, opts).await
    }
    async fn count(&self, prefix: &str) -> Result<u64, StorageError> {
        self.inner.count(prefix).await
    }
    async fn put(&self, key: &str, value: Bytes, expect: Expect) -> Result<KeyValue, StorageError> {
        if self.slow_writes_under.is_some_and(|p| key.starts_with(p)) {
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
        let written = self.inner.put(key, value, expect).await;
        if self.answers_lost.load(std::sync::atomic::Ordering::SeqCst) {
            let message = "context deadline exceeded".into();
            return Err(StorageError::Unavailable { backend: self.describe(), message });
        }
        written
    }
    async fn put_with_ttl(
        &self,
        key: &str,
        value: Bytes,
        expect: Expect,
        ttl: Duration,
    ) -> Result<KeyValue, StorageError> {
        self.inner.put_with_ttl(key, value, expect, ttl).await
    }
    async fn delete(&self, key: &str, expect: Option<Revision>) -> Result<(KeyValue, Revision), StorageError> {
        self.inner.delete(key, expect).await
    }
    async fn watch(&self, prefix: &str, after: Revision) -> Result<WatchStream, StorageError> {
        self.inner.watch(prefix, after).await
    }
    async fn compact(&self, revision: Revision) -> Result<(), StorageError> {
        self.inner.compact(revision).await
    }
    async fn compacted_revision(&self) -> Result<Revision, StorageError> {
        self.inner.compacted_revision().await
    }
}

#[actix::test]
async fn deletecollection_names_the_failing_backend_as_other_verbs_do() {
    let r = registry_over(Tampered::over(true, None), "10.0.0.0/24");
    let msg = DeleteCollection {
        target: target("", "configmaps", "team", ""),
        list: ListOptions::default(),
        user: admin(),
        options: DeleteOptions::default(),
    };
    let e = r.store.delete_collection(msg, Deadline::NONE).await.unwrap_err();
    assert_eq!((e.code, e.reason), (500, apimachinery::Reason::InternalError));
    assert_eq!(
        e.message,
        "Internal error occurred: storage backend etcd3 (http://10.0.0.9:2379) is unavailable: connection refused"
    );
}

#[actix::test]
async fn a_create_dropped_mid_write_gives_its_address_back() {
    let r = registry_over(Tampered::over(false, Some("/registry/services/")), "10.0.0.0/28");
    // The request goes away (its deadline, its client) while the Service's write waits.
    let dropped = tokio::time::timeout(Duration::from_millis(200), r.service("dropped")).await;
    assert!(dropped.is_err(), "the create was still writing");
    // The address is given back by a task of its own once the write is abandoned.
    let waited = std::time::Instant::now();
    while r.ips.used(Pool::ClusterIps).await.unwrap() > 0 {
        assert!(waited.elapsed() < Duration::from_secs(5), "the dropped create's address was never given back");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(ip(&r.service("next").await.unwrap()), "10.0.0.1", "the dropped create's address came back");
}

#[actix::test]
async fn servers_sharing_storage_see_each_others_allocations() {
    let storage: Arc<dyn Storage> = EmbeddedStore::in_memory(EmbeddedOptions::default()).unwrap();
    let (a, b) = (registry_over(storage.clone(), "10.0.0.0/29"), registry_over(storage, "10.0.0.0/29"));
    let first = ip(&a.service("a0").await.unwrap());
    let second = ip(&b.service("b0").await.unwrap());
    assert_ne!(first, second);
    // b allocated before a's next create: a's bitmap is stale, its guarded write finds out.
    let third = ip(&a.service("a1").await.unwrap());
    assert!(third != first && third != second);
    // b releases an address it never saw allocated; a gets it back.
    assert!(b.delete("services", "default", "a1").await.unwrap().deleted);
    let fourth = ip(&a.service("a2").await.unwrap());
    assert_eq!(fourth, third);
    // Filling the range from one server, the other is told it is full only after re-reading.
    for i in 0..3 {
        a.service(&format!("fill{i}")).await.unwrap();
    }
    let e = b.service("none-left").await.unwrap_err();
    assert!(e.message.ends_with("range is full"), "{e:?}");
}

/// kube's reset fields per kind and subresource, seen in the entries writes record.
#[actix::test]
async fn reset_fields_decide_what_a_write_records() {
    let r = registry("10.0.0.0/24");
    let as_manager = |m: &str| WriteOptions { field_manager: Some(m.into()), ..WriteOptions::default() };
    let managers = |o: &Value| -> Vec<(String, String)> {
        o["metadata"]["managedFields"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|e| (e["manager"].as_str().unwrap().into(), e["subresource"].as_str().unwrap_or("").into()))
            .collect()
    };
    // A CertificateSigningRequest's spec is fixed at creation and no manager owns it: a
    // create that sets only the spec records no entry.
    let csr = json!({"metadata": {"name": "alice"}, "spec": {"request": CSR_PEM_BASE64, "signerName": "example.com/x",
        "usages": ["client auth"]}});
    let msg = CreateObject {
        target: target("certificates.k8s.io", "certificatesigningrequests", "", ""),
        object: csr,
        user: admin(),
        options: as_manager("creator"),
    };
    let created = object_of(r.store.create(msg, Deadline::NONE).await.unwrap());
    assert_eq!(managers(&created), Vec::<(String, String)>::new());
    // A namespace's /finalize writes the spec and the metadata, and records its entry.
    let ns = r.create("", "namespaces", "", json!({"metadata": {"name": "team"}})).await.unwrap();
    let mut finalized = ns.clone();
    finalized["metadata"]["labels"] = json!({"added": "by-finalize"});
    finalized["spec"] = json!({"finalizers": []});
    finalized["status"] = json!({"phase": "Terminating"});
    let mut t = target("", "namespaces", "", "team");
    t.subresource = Some(Subresource::Finalize);
    let msg = UpdateObject { target: t, object: finalized, user: admin(), options: as_manager("finalizer-x") };
    let after = object_of(r.store.update(msg, Deadline::NONE).await.unwrap());
    assert_eq!(after["metadata"]["labels"]["added"], "by-finalize");
    assert_eq!(after["status"], ns["status"], "the status stays as stored");
    assert!(managers(&after).contains(&("finalizer-x".into(), "finalize".into())), "{:?}", managers(&after));
}

/// A `/status` write of the kinds whose status strategy keeps all of the stored metadata and
/// the spec (FlowSchemas, priority levels, APIServices): labels and spec sent with it stay as
/// stored, the status is written, and the writer's entry owns the status alone.
#[actix::test]
async fn status_writes_of_kinds_that_keep_metadata_record_only_the_status() {
    let r = registry("10.0.0.0/24");
    let cases = [
        (
            "flowcontrol.apiserver.k8s.io",
            "flowschemas",
            json!({"metadata": {"name": "fs", "labels": {"a": "1"}},
            "spec": {"priorityLevelConfiguration": {"name": "pl"}, "matchingPrecedence": 500}}),
            json!({"conditions": [{"type": "Dangling", "status": "True", "reason": "NotFound", "message": "m"}]}),
            "/spec/matchingPrecedence",
        ),
        (
            "flowcontrol.apiserver.k8s.io",
            "prioritylevelconfigurations",
            json!({"metadata": {"name": "pl", "labels": {"a": "1"}},
            "spec": {"type": "Limited", "limited": {"nominalConcurrencyShares": 5, "limitResponse": {"type": "Reject"}}}}),
            json!({"conditions": [{"type": "Broken", "status": "False", "reason": "Fine", "message": "m"}]}),
            "/spec/limited/nominalConcurrencyShares",
        ),
        (
            "apiregistration.k8s.io",
            "apiservices",
            json!({"metadata": {"name": "v1.local.example.com", "labels": {"a": "1"}},
            "spec": {"group": "local.example.com", "version": "v1", "groupPriorityMinimum": 100, "versionPriority": 10}}),
            json!({"conditions": [{"type": "Available", "status": "True", "reason": "Local", "message": "m"}]}),
            "/spec/versionPriority",
        ),
    ];
    for (group, resource, object, status, spec_field) in cases {
        let created = r.create(group, resource, "", object).await.unwrap_or_else(|e| panic!("{resource}: {e:?}"));
        let mut written = created.clone();
        written["metadata"]["labels"] = json!({"a": "2", "b": "new"});
        *written.pointer_mut(spec_field).unwrap() = json!(7);
        written["status"] = status.clone();
        let mut t = target(group, resource, "", created["metadata"]["name"].as_str().unwrap());
        t.subresource = Some(Subresource::Status);
        let options = WriteOptions { field_manager: Some("status-writer".into()), ..WriteOptions::default() };
        let msg = UpdateObject { target: t, object: written, user: admin(), options };
        let after =
            object_of(r.store.update(msg, Deadline::NONE).await.unwrap_or_else(|e| panic!("{resource}: {e:?}")));
        assert_eq!(after["metadata"]["labels"], created["metadata"]["labels"], "{resource}");
        assert_eq!(after["spec"], created["spec"], "{resource}");
        assert_eq!(after["status"]["conditions"][0]["type"], status["conditions"][0]["type"], "{resource}");
        let entry = after["metadata"]["managedFields"]
            .as_array()
            .and_then(|l| l.iter().find(|e| e["manager"] == "status-writer"))
            .unwrap_or_else(|| panic!("{resource}: no entry in {after}"));
        assert_eq!(entry["subresource"], "status", "{resource}");
        let owned = entry["fieldsV1"].as_object().unwrap();
        assert_eq!(owned.keys().collect::<Vec<_>>(), ["f:status"], "{resource}: {}", entry["fieldsV1"]);
    }
}

/// A certificate request for `CN=alice` (`openssl req -new`), base64 as the API carries it.
const CSR_PEM_BASE64: &str = "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURSBSRVFVRVNULS0tLS0KTUlJQ1ZUQ0NBVDBDQVFBd0VERU9NQXdHQTFVRUF3d0ZZV3hwWTJVd2dnRWlNQTBHQ1NxR1NJYjNEUUVCQVFVQQpBNElCRHdBd2dnRUtBb0lCQVFDdlJFUXVta3BoOWZJWnEwZmVNenNudGxLQXlzTzdtL00zUFNzME4wTDhtSVlkCjRLczNaVXl5RWFqSVdOYnExaVlsL0JSRk52MUtPMzB5bFV5REVldlZOSDBxODZ2akFCY2JJSWxOQ0tjUEdSUGMKMDNYR2tlL2d6d1l0ZGx5REs2YUdyay8wMjJtQ0c3b3pQWmdXN09NcDNOTy9MdU5CYkpqNzZIQjZ6UkxONjVwRApnOER1RE9oaEhNUkUyMGFIcEhualhCVzFQdjFLd1lDSEQzUlBrMERNajM2VnA2cUxEcFFqTlcza2pJNjl5K2JMClFWV0JVUHVrR1JCRmtWNmZVbGQzUTFIa0hnbU1ndUFTeE04a3NqWWNUMFlaakY1QWM5REVGc1Y5TGVFcG5BZVQKbXN5Z3V1WXV6REplanMxbEg4dndLaGZpUjRHZUh0ajdNdDd0Z3hVaEFnTUJBQUdnQURBTkJna3Foa2lHOXcwQgpBUXNGQUFPQ0FRRUFlcHVQL3UzbVBHdEVoOWpPV1ZTeVBQcDdvV3N6SGxMb0ljWnZOMUlSQ3lic3B1NGg2ck9sCk5ra0ZPRmovZlo5OEtMNDZnVThUcEZZKy9IVGpqYXNCUmtnZTZSY1k3R0JlZVZOb3ZNT00yckJzUmdLV3JZNW4KdkJBVzVuaERTb2Y4Mm9tMVl5RWhFelpaNWlJY3Nydm14UzBUQzZFL1NwREFhRXB0T2h3eGtUTFovK3dWVnB3cQp0L2RSeXVMWHQyenUraW5mTVVZZkJoWkxWa0dOdkd0MU1JUmp5bGgvU0g2Vk9GVGg2WjZqbUN5TnhFOFZyaklaCmFmK243anBUbjdMeWUzYTNWb0VtTjZwTlNNVUZHdDFnbi9LamROVTlQUVdCS2Q4QnFmeFZlNit0SzhPMEd6dDQKQkdRbXdkKzYydU0vazBuNHlyUW95K2paUTcyZU8yR0Mrdz09Ci0tLS0tRU5EIENFUlRJRklDQVRFIFJFUVVFU1QtLS0tLQo=";

impl Registry {
    /// The options of an update of ConfigMap `name` taken by a gateway whose watch cache has seen
    /// this store's last write of it and nothing since (a cache lagging behind other writers):
    /// the store trusts its copy.
    fn lagging_cache(&self, name: &str) -> WriteOptions {
        let key = format!("/registry/configmaps/default/{name}");
        WriteOptions { cache_revision: self.store.recent.get(&key).map(|kv| kv.mod_revision), ..Default::default() }
    }

    async fn put(&self, name: &str, object: Value) -> Result<Value, ApiError> {
        let msg = UpdateObject {
            target: target("", "configmaps", "default", name),
            object,
            user: admin(),
            options: self.lagging_cache(name),
        };
        self.store.update(msg, Deadline::NONE).await.map(object_of)
    }

    async fn merge_patch(&self, name: &str, patch: Value) -> Result<Value, ApiError> {
        let msg = PatchObject {
            target: target("", "configmaps", "default", name),
            patch_type: PatchType::Merge,
            patch: patch.to_string().into_bytes(),
            user: admin(),
            options: self.lagging_cache(name),
        };
        self.store.patch(msg, Deadline::NONE).await.map(object_of)
    }
}

fn rv(o: &Value) -> String {
    o["metadata"]["resourceVersion"].as_str().unwrap().to_string()
}

/// Updates start from what this store wrote last at the key; another server sharing the
/// storage (or any writer) makes that copy stale, and nothing it wrote may be lost or answered
/// around.
#[actix::test]
async fn updates_from_a_stale_copy_lose_nothing_another_server_wrote() {
    let storage: Arc<dyn Storage> = EmbeddedStore::in_memory(EmbeddedOptions::default()).unwrap();
    let (a, b) = (registry_over(storage.clone(), "10.0.0.0/29"), registry_over(storage, "10.0.0.0/29"));
    let cm = |data: Value| json!({"metadata": {"name": "c"}, "data": data});
    a.create("", "configmaps", "default", cm(json!({"x": "1"}))).await.unwrap();
    // a's own update leaves it a copy of the key.
    let seen_by_a = a.put("c", cm(json!({"x": "2"}))).await.unwrap();
    let by_b = b.merge_patch("c", json!({"data": {"x": "3"}, "metadata": {"labels": {"b": "1"}}})).await.unwrap();

    // A patch from a applies to b's object, not to a's copy.
    let patched = a.merge_patch("c", json!({"metadata": {"labels": {"a": "1"}}})).await.unwrap();
    assert_eq!(patched["data"], json!({"x": "3"}));
    assert_eq!(patched["metadata"]["labels"], json!({"a": "1", "b": "1"}));
    assert_ne!(rv(&patched), rv(&by_b));

    // b changes it again; a PUT naming the resourceVersion a last saw is a conflict, with
    // kube's message, and one naming the current resourceVersion goes through.
    let by_b = b.merge_patch("c", json!({"data": {"x": "4"}})).await.unwrap();
    let mut stale = seen_by_a.clone();
    stale["data"] = json!({"x": "5"});
    let e = a.put("c", stale).await.unwrap_err();
    assert_eq!(e.code, 409, "{e:?}");
    assert!(
        e.message
            .ends_with("the object has been modified; please apply your changes to the latest version and try again")
    );
    let mut current = by_b.clone();
    current["data"] = json!({"x": "5"});
    let put = a.put("c", current).await.unwrap();
    assert_eq!(put["data"], json!({"x": "5"}));

    // An update that changes nothing against a's (now stale) copy is compared with what is
    // stored: naming the copy's resourceVersion, it is a conflict (not "unchanged"); naming
    // none, it writes b's change away and answers with a new resourceVersion.
    let by_b = b.merge_patch("c", json!({"data": {"x": "6"}})).await.unwrap();
    let e = a.put("c", put.clone()).await.unwrap_err();
    assert_eq!(e.code, 409, "{e:?}");
    let mut same_as_copy = put.clone();
    same_as_copy["metadata"].as_object_mut().unwrap().remove("resourceVersion");
    let answered = a.put("c", same_as_copy).await.unwrap();
    assert_eq!(answered["data"], json!({"x": "5"}));
    assert_ne!(rv(&answered), rv(&by_b), "not answered from the copy as unchanged");
    let stored = b.merge_patch("c", json!({})).await.unwrap();
    assert_eq!((stored["data"].clone(), rv(&stored)), (json!({"x": "5"}), rv(&answered)), "written, as answered");
    let unchanged = a.put("c", answered.clone()).await.unwrap();
    assert_eq!(rv(&unchanged), rv(&answered), "an unchanged object is not written");

    // Deleted by b: a's update of its copy is refused as not found, as from storage.
    b.delete("configmaps", "default", "c").await.unwrap();
    let e = a.merge_patch("c", json!({"data": {"x": "7"}})).await.unwrap_err();
    assert_eq!(e.code, 404, "{e:?}");
}

/// An update started from a copy whose write's outcome is unknown (a timed-out backend) is not
/// tried again on top of itself: the client gets the storage error, as from a fresh read.
#[actix::test]
async fn an_update_from_a_copy_whose_write_timed_out_is_answered_not_retried() {
    let tampered = Tampered::new(false, None);
    let r = registry_over(tampered.clone(), "10.0.0.0/29");
    let cm = |x: &str| json!({"metadata": {"name": "c"}, "data": {"x": x}});
    r.create("", "configmaps", "default", cm("1")).await.unwrap();
    r.put("c", cm("2")).await.unwrap();
    tampered.answers_lost.store(true, std::sync::atomic::Ordering::SeqCst);
    let msg = PatchObject {
        target: target("", "configmaps", "default", "c"),
        patch_type: PatchType::Json,
        patch:
            br#"[{"op": "test", "path": "/data/x", "value": "2"}, {"op": "replace", "path": "/data/x", "value": "3"}]"#
                .to_vec(),
        user: admin(),
        options: r.lagging_cache("c"),
    };
    let e = r.store.patch(msg, Deadline::NONE).await.unwrap_err();
    assert_eq!((e.code, e.reason), (500, apimachinery::Reason::InternalError), "{e:?}");
    assert!(e.message.ends_with("is unavailable: context deadline exceeded"), "{}", e.message);
    tampered.answers_lost.store(false, std::sync::atomic::Ordering::SeqCst);
    let stored = r.merge_patch("c", json!({})).await.unwrap();
    assert_eq!(stored["data"], json!({"x": "3"}), "the write landed once");
}

/// A copy the request's watch cache does not hold as the object's version (the cache saw a
/// newer write, or holds nothing) is not started from: the store reads storage, and nothing is
/// tried against the old object first.
#[actix::test]
async fn a_copy_is_trusted_only_as_far_as_the_watch_cache() {
    let storage: Arc<dyn Storage> = EmbeddedStore::in_memory(EmbeddedOptions::default()).unwrap();
    let (a, b) = (registry_over(storage.clone(), "10.0.0.0/29"), registry_over(storage, "10.0.0.0/29"));
    let cm = |x: &str| json!({"metadata": {"name": "c"}, "data": {"x": x}});
    a.create("", "configmaps", "default", cm("1")).await.unwrap();
    let mine = a.put("c", cm("2")).await.unwrap();
    let theirs = b.merge_patch("c", json!({"data": {"x": "3"}})).await.unwrap();
    // A PUT naming the version a wrote, from a gateway whose cache has b's version: decided on
    // what storage holds (a conflict); no attempt on the copy, which would have forgotten it.
    let msg = UpdateObject {
        target: target("", "configmaps", "default", "c"),
        object: mine.clone(),
        user: admin(),
        options: WriteOptions { cache_revision: Some(rv(&theirs).parse().unwrap()), ..Default::default() },
    };
    let e = a.store.update(msg, Deadline::NONE).await.unwrap_err();
    assert_eq!(e.code, 409, "{e:?}");
    let copy = a.store.recent.get("/registry/configmaps/default/c").map(|kv| kv.mod_revision.to_string());
    assert_eq!(copy, Some(rv(&mine)), "the copy was not started from");
}
