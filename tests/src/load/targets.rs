//! The stages [`stages`](super::stages) drives, each with the messages the server sends it:
//!
//! | key | stage | message |
//! |---|---|---|
//! | `storage` | the storage stage in process, on an in-memory store | `CreateObject`, a ConfigMap of 512 bytes |
//! | `storage-etcd` | the same on an etcd started for the run | the same |
//! | `storage-wire` | the same in a stage process (`apiserver stage`) on its own etcd, over HTTP/2 with mutual TLS | the same |
//! | `authorization` | the authorization stage, RBAC over 10,000 RoleBindings | `Authorize`, a list of pods a RoleBinding allows |
//! | `admission` | the admission stage, kube's default chain | `Admit` of a Pod create, mutating and validating phases in turn |
//! | `flowcontrol` | the flow-control stage, kube's bootstrap configuration, 600 seats | `StartRequest` of 64 users, the seat given back at once |
//!
//! In process, the storage stage admits through the admission stage with kube's default chain,
//! as a server's does (RBAC escalation checks aside: a ConfigMap never reaches them); the
//! objects admission looks up (the namespace, its ServiceAccount) are held in memory, as the
//! server reads them from its cachers. The stage process builds its write path itself and
//! looks namespaces up through its own caches: its namespace is created through the stage
//! before the run. Each in-process stage runs on an arbiter as in the server (admission on the
//! storage stage's), with the server's default mailbox (1,024 slots, a request waiting 2 s for
//! a slot before 429).

use std::any::Any;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use actors::remote::{ClusterTls, Peer};
use actors::{ActorDirectory, Deadline, MailboxSpec, Request, StageArbiter, StageError, StageHandle, WhenFull};
use admission::{AdmissionActor, PluginContext};
use apimachinery::error::ApiError;
use apimachinery::lookup::{AccessCheck, LateWriter, ObjectLookup};
use apimachinery::messages::{
    AdmissionPhase, Admit, Authorize, CreateObject, Operation, RequestWork, StartRequest, Target,
};
use apimachinery::object::ObjectExt;
use apimachinery::options::WriteOptions;
use apimachinery::request::{RequestInfo, UserInfo, parse_request_info};
use async_trait::async_trait;
use auth::rbac::RbacKind;
use auth::{AuthorizationActor, AuthorizationMode, SharedPolicy};
use cluster_ips::{PortRange, ServiceAllocators, ServiceRange};
use flowcontrol::{FlowControlActor, SharedConfig};
use futures_util::future::LocalBoxFuture;
use registry::{RegistryStore, StorageActor};
use serde_json::{Value, json};
use storage::Storage;
use storage::embedded::{EmbeddedOptions, EmbeddedStore};
use storage::etcd::testing::EtcdProcess;
use storage::router::StorageRouter;

use crate::fleet::{Deployment, ShardSpec, StageProcess};

/// Every stage key, in the order `stages` runs them.
pub const ALL: &[&str] = &["storage", "storage-etcd", "storage-wire", "authorization", "admission", "flowcontrol"];

/// The namespace the storage and admission stages write in.
pub const NAMESPACE: &str = "loadgen";

/// How long one message may take: past it the call ends with a deadline error, as a request's
/// would.
pub const MESSAGE_DEADLINE: Duration = Duration::from_secs(5);

/// How one message ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Answered with a success.
    Ok,
    /// Refused for a full mailbox (429), by this stage or one it called.
    Saturated,
    /// Its deadline passed first (504).
    Deadline,
    /// Any other error, with its message.
    Other(String),
}

impl Outcome {
    /// A stage call's result: the transport's error or the stage's own answer.
    pub fn of<R>(result: Result<Result<R, ApiError>, StageError>) -> Self {
        match result {
            Ok(Ok(_)) => Outcome::Ok,
            Err(StageError::Saturated { .. }) => Outcome::Saturated,
            Err(StageError::DeadlineExceeded { .. }) => Outcome::Deadline,
            Err(e) => Outcome::Other(e.to_string()),
            Ok(Err(e)) if e.code == 429 => Outcome::Saturated,
            Ok(Err(e)) if e.code == 504 => Outcome::Deadline,
            Ok(Err(e)) => Outcome::Other(format!("{} {}", e.code, e.message)),
        }
    }
}

/// Sends the n-th message of a run.
type Sender = Rc<dyn Fn(u64) -> LocalBoxFuture<'static, Outcome>>;

/// Where a stage's depth (queued + in progress) is read.
#[derive(Clone)]
pub enum DepthProbe {
    /// The directory of this process.
    Local {
        /// The directory the stage is listed in.
        directory: ActorDirectory,
        /// Its stage name.
        stage: String,
    },
    /// A stage process's `/stages/actors`.
    Remote {
        /// The process (a peer of its own, so samples do not queue behind the load).
        peer: Peer,
        /// Its stage name there.
        stage: String,
    },
}

impl DepthProbe {
    /// The stage's depth now; `None` when it could not be read.
    pub async fn read(&self) -> Option<u64> {
        match self {
            DepthProbe::Local { directory, stage } => {
                directory.snapshot().iter().find(|m| &m.stage == stage).map(|m| m.mailbox_depth)
            }
            DepthProbe::Remote { peer, stage } => {
                let (status, body) =
                    peer.post("/stages/actors", Vec::new(), Deadline::after(Duration::from_secs(1))).await.ok()?;
                let listed: Value = serde_json::from_slice(&body).ok().filter(|_| status == 200)?;
                listed["actors"].as_array()?.iter().find(|a| a["stage"] == stage.as_str())?["mailbox_depth"].as_u64()
            }
        }
    }
}

/// One stage to drive: how to send its n-th message and how to read its depth. Dropping it
/// stops what it started (arbiters, processes, etcd).
pub struct StageTarget {
    /// Its key (`storage-wire`).
    pub key: String,
    /// What it is, for tables and legends (`storage over the wire`).
    pub name: String,
    /// What it runs on and what it is sent.
    pub detail: String,
    send: Sender,
    /// Where its depth is read.
    pub depth: DepthProbe,
    /// The processes whose CPU time its messages cost: this one (the generator and, in
    /// process, the stage), and the stage process when it runs in one. etcd is left out.
    pub processes: Vec<u32>,
    _keep: Vec<Box<dyn Any>>,
}

impl StageTarget {
    /// Sends message `n`.
    pub fn send(&self, n: u64) -> LocalBoxFuture<'static, Outcome> {
        (self.send)(n)
    }
}

/// Stops an arbiter's thread when the target holding it is dropped.
struct Stopping(StageArbiter);

impl Drop for Stopping {
    fn drop(&mut self) {
        self.0.stop();
    }
}

/// A sender of `make(n)` through `handle`.
fn sender<M, R>(handle: StageHandle<M>, make: impl Fn(u64) -> M + 'static) -> Sender
where
    M: Request<Reply = Result<R, ApiError>>,
    R: 'static,
{
    Rc::new(move |n| {
        let (handle, msg) = (handle.clone(), make(n));
        Box::pin(async move { Outcome::of(handle.call(msg, Deadline::after(MESSAGE_DEADLINE)).await) })
    })
}

/// The server's default mailbox for `stage`.
fn mailbox(stage: &str) -> MailboxSpec {
    MailboxSpec {
        stage: stage.into(),
        resource: String::new(),
        capacity: 1024,
        when_full: WhenFull::Shed { wait: Duration::from_secs(2) },
    }
}

/// Starts the stage `key` (one of [`ALL`]).
pub async fn start(key: &str) -> Result<StageTarget, String> {
    match key {
        "storage" => {
            let store: Arc<dyn Storage> =
                EmbeddedStore::in_memory(EmbeddedOptions::default()).map_err(|e| e.to_string())?;
            Ok(storage_in_process(key, "storage in process", "in-memory store", store, Vec::new()))
        }
        "storage-etcd" => {
            let etcd = start_etcd().await?;
            let store: Arc<dyn Storage> = etcd.connect().await.map_err(|e| format!("etcd: {e}"))?;
            Ok(storage_in_process(key, "storage in process on etcd", "etcd", store, vec![Box::new(etcd)]))
        }
        "storage-wire" => storage_over_the_wire().await,
        "authorization" => Ok(authorization()),
        "admission" => Ok(admission_stage()),
        "flowcontrol" => Ok(flowcontrol().await),
        other => Err(format!("no stage {other:?}: one of {}", ALL.join(", "))),
    }
}

async fn start_etcd() -> Result<EtcdProcess, String> {
    actix_web::rt::task::spawn_blocking(EtcdProcess::start).await.map_err(|e| format!("starting etcd: {e}"))
}

fn loader() -> UserInfo {
    UserInfo { name: "loader".into(), groups: vec!["system:authenticated".into()], ..Default::default() }
}

fn core(resource: &str, namespace: &str) -> Target {
    Target {
        group: String::new(),
        version: "v1".into(),
        resource: resource.into(),
        namespace: namespace.into(),
        ..Default::default()
    }
}

/// The n-th ConfigMap create of a run writing names starting `prefix`.
fn configmap_create(prefix: &str, n: u64) -> CreateObject {
    CreateObject {
        target: core("configmaps", NAMESPACE),
        object: json!({"metadata": {"name": format!("{prefix}-{n}")}, "data": {"payload": "x".repeat(512)}}),
        user: loader(),
        options: WriteOptions::default(),
    }
}

/// Objects admission looks up, held in memory as the server's cachers hold them: the
/// namespace and its `default` ServiceAccount. Lists find nothing else; the change count never
/// moves, so plugins that build from lists (webhooks, policies) build once.
struct HeldObjects(Vec<(&'static str, String, Value)>);

impl HeldObjects {
    fn lookup() -> Arc<dyn ObjectLookup> {
        let namespace = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE, "uid": "ns-uid"},
            "status": {"phase": "Active"}});
        let account = json!({"apiVersion": "v1", "kind": "ServiceAccount",
            "metadata": {"name": "default", "namespace": NAMESPACE, "uid": "sa-uid"}});
        Arc::new(HeldObjects(vec![
            ("namespaces", String::new(), namespace),
            ("serviceaccounts", NAMESPACE.into(), account),
        ]))
    }
}

#[async_trait]
impl ObjectLookup for HeldObjects {
    async fn get(&self, group: &str, resource: &str, namespace: &str, name: &str) -> Result<Option<Value>, ApiError> {
        Ok(self
            .0
            .iter()
            .find(|(r, ns, o)| group.is_empty() && *r == resource && ns == namespace && o.name() == name)
            .map(|(_, _, o)| o.clone()))
    }

    async fn list(&self, group: &str, resource: &str, namespace: &str, _: &str) -> Result<Vec<Value>, ApiError> {
        let found = self
            .0
            .iter()
            .filter(|(r, ns, _)| group.is_empty() && *r == resource && (namespace.is_empty() || ns == namespace));
        Ok(found.map(|(_, _, o)| o.clone()).collect())
    }

    fn changes(&self, _: &str, _: &str) -> Option<u64> {
        Some(0)
    }
}

/// Permission checks inside admission (the certificate plugins'): none of these writes asks.
struct Allowed;

#[async_trait]
impl AccessCheck for Allowed {
    async fn allowed(&self, _: &UserInfo, _: RequestInfo) -> Result<bool, ApiError> {
        Ok(true)
    }
}

/// The admission stage with kube's default plugins, on `arbiter`.
fn admission_actor(arbiter: &StageArbiter, directory: &ActorDirectory) -> actors::Started<AdmissionActor> {
    let plugins = admission::enabled_plugins(&[], &[]).expect("kube's default plugins");
    let context = PluginContext {
        objects: HeldObjects::lookup(),
        catalogue: Arc::new(kinds::catalogue()),
        access: Arc::new(Allowed),
        // Quota charges would write through it; no quota covers the namespace.
        writer: Arc::new(LateWriter::default()),
        toleration_seconds: admission::tolerations::DefaultTolerationSeconds {
            not_ready_seconds: 300,
            unreachable_seconds: 300,
        },
        configuration: Arc::new(admission::config::AdmissionConfiguration::default()),
    };
    let chain = admission::build_chain(&plugins, &context).expect("kube's default chain");
    actors::start(arbiter, directory, &mailbox("admission"), AdmissionActor::new(chain))
}

fn storage_in_process(
    key: &str,
    name: &str,
    backend: &str,
    store: Arc<dyn Storage>,
    mut keep: Vec<Box<dyn Any>>,
) -> StageTarget {
    kinds::schema::prepare();
    let directory = ActorDirectory::default();
    // Admission shares the storage stage's thread, as in the server.
    let storage_arbiter = StageArbiter::new("storage");
    let admission = admission_actor(&storage_arbiter, &directory);
    let catalogue = Arc::new(kinds::catalogue());
    let router = Arc::new(StorageRouter::new(store));
    let range = ServiceRange::parse("10.96.0.0/12").expect("a service range");
    let ports = PortRange::default();
    let cluster_ips = Arc::new(ServiceAllocators::new(range, ports, router.clone(), catalogue.clone(), "/registry"));
    let registry = RegistryStore::new(catalogue, router, "/registry", admission.handle(), cluster_ips);
    let storage =
        actors::start(&storage_arbiter, &directory, &mailbox("storage"), StorageActor::new(Arc::new(registry)));
    keep.push(Box::new(Stopping(storage_arbiter)));
    StageTarget {
        key: key.into(),
        name: name.into(),
        detail: format!("{backend}, kube's default admission chain; CreateObject of a 512-byte ConfigMap"),
        send: sender(storage.handle::<CreateObject>(), |n| configmap_create("p", n)),
        depth: DepthProbe::Local { directory, stage: "storage".into() },
        processes: vec![std::process::id()],
        _keep: keep,
    }
}

async fn storage_over_the_wire() -> Result<StageTarget, String> {
    let etcd = start_etcd().await?;
    let shard = ShardSpec::new("load", &["configmaps"]);
    let deployment = Deployment::new(std::slice::from_ref(&shard));
    let endpoint = etcd.endpoint().to_string();
    let (process, deployment) = actix_web::rt::task::spawn_blocking(move || {
        let flags = ["--storage-backend", "etcd3", "--etcd-servers", &endpoint];
        (StageProcess::start(&deployment, "load", &flags), deployment)
    })
    .await
    .map_err(|e| format!("starting the stage process: {e}"))?;
    let tls: ClusterTls = deployment.cluster_tls()?;
    let url = format!("https://127.0.0.1:{}", shard.port);
    let directory = ActorDirectory::default();
    let stage = Peer::new("load", &url, &tls)?.stage("storage", &directory);
    let create = stage.handle::<CreateObject>();
    // The namespace the ConfigMaps go to, created through the stage: its admission finds it in
    // storage.
    let namespace = CreateObject {
        target: core("namespaces", ""),
        object: json!({"metadata": {"name": NAMESPACE}}),
        user: loader(),
        options: WriteOptions::default(),
    };
    match create.call(namespace, Deadline::after(Duration::from_secs(10))).await {
        Ok(Ok(_)) => {}
        other => return Err(format!("creating the namespace through the stage process: {other:?}")),
    }
    Ok(StageTarget {
        key: "storage-wire".into(),
        name: "storage over the wire".into(),
        detail: "a stage process on etcd, HTTP/2 + mutual TLS; CreateObject of a 512-byte ConfigMap".into(),
        send: sender(create, |n| configmap_create("w", n)),
        depth: DepthProbe::Remote { peer: Peer::new("load-probe", &url, &tls)?, stage: "storage".into() },
        processes: vec![std::process::id(), process.pid()],
        _keep: vec![Box::new(process), Box::new(deployment), Box::new(etcd), Box::new(stage)],
    })
}

/// An RBAC policy of `cluster_roles` ClusterRoles and ten RoleBindings in each of `namespaces`
/// namespaces (`ns-<n>`, binding `user-<n>-<b>` and the group `team-<n>`), plus the subjects the
/// authorization figures measure: `alice` bound by a RoleBinding in `ns-7`, the group `ops`
/// by a ClusterRoleBinding.
pub fn rbac_policy(namespaces: usize, cluster_roles: usize) -> SharedPolicy {
    let policy = SharedPolicy::default();
    let mut p = policy.write().unwrap();
    for i in 0..cluster_roles {
        let role = json!({"metadata": {"name": format!("role-{i}")}, "rules": [
            {"verbs": ["get", "list", "watch"], "apiGroups": ["", "apps"], "resources": ["pods", "deployments", format!("things-{i}")]},
            {"verbs": ["create"], "apiGroups": ["batch"], "resources": ["jobs"], "resourceNames": [format!("job-{i}")]}
        ]});
        p.apply(RbacKind::ClusterRole, &role, true);
    }
    for ns in 0..namespaces {
        for b in 0..10 {
            let binding = json!({"metadata": {"name": format!("b-{b}"), "namespace": format!("ns-{ns}")},
                "roleRef": {"kind": "ClusterRole", "name": format!("role-{}", (ns * 10 + b) % cluster_roles.max(1))},
                "subjects": [{"kind": "User", "name": format!("user-{ns}-{b}")}, {"kind": "Group", "name": format!("team-{ns}")}]});
            p.apply(RbacKind::RoleBinding, &binding, true);
        }
    }
    p.apply(
        RbacKind::RoleBinding,
        &json!({"metadata": {"name": "alice", "namespace": "ns-7"}, "roleRef": {"kind": "ClusterRole", "name": "role-3"},
                "subjects": [{"kind": "User", "name": "alice"}]}),
        true,
    );
    p.apply(
        RbacKind::ClusterRoleBinding,
        &json!({"metadata": {"name": "ops"}, "roleRef": {"kind": "ClusterRole", "name": "role-5"},
                "subjects": [{"kind": "Group", "name": "ops"}]}),
        true,
    );
    drop(p);
    policy
}

fn authorization() -> StageTarget {
    const NAMESPACES: u64 = 1_000;
    let directory = ActorDirectory::default();
    let arbiter = StageArbiter::new("front");
    let authorizers = auth::authz::Authorizers {
        modes: vec![AuthorizationMode::Rbac],
        policy: rbac_policy(NAMESPACES as usize, 1_000),
        node: None,
        webhook: None,
    };
    let stage =
        actors::start(&arbiter, &directory, &mailbox("authorization"), AuthorizationActor::new(Arc::new(authorizers)));
    // User n's RoleBinding lets it list pods in its namespace.
    let send = sender(stage.handle::<Authorize>(), |n| {
        let (ns, b) = (n % NAMESPACES, n / NAMESPACES % 10);
        let user = UserInfo {
            name: format!("user-{ns}-{b}"),
            groups: vec![format!("team-{ns}"), "system:authenticated".into()],
            ..Default::default()
        };
        Authorize { user, request: parse_request_info("GET", &format!("/api/v1/namespaces/ns-{ns}/pods"), false) }
    });
    StageTarget {
        key: "authorization".into(),
        name: "authorization in process".into(),
        detail: "RBAC over 1,000 ClusterRoles and 10,000 RoleBindings; Authorize of a pod list, allowed".into(),
        send,
        depth: DepthProbe::Local { directory, stage: "authorization".into() },
        processes: vec![std::process::id()],
        _keep: vec![Box::new(Stopping(arbiter))],
    }
}

fn admission_stage() -> StageTarget {
    kinds::schema::prepare();
    let directory = ActorDirectory::default();
    let arbiter = StageArbiter::new("admission");
    let stage = admission_actor(&arbiter, &directory);
    let send = sender(stage.handle::<Admit>(), |n| {
        let name = format!("pod-{n}");
        let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NAMESPACE},
            "spec": {"containers": [{"name": "app", "image": "registry.k8s.io/pause:3.9"}]}});
        Admit {
            phase: if n % 2 == 0 { AdmissionPhase::Mutating } else { AdmissionPhase::Validating },
            operation: Operation::Create,
            target: Target { name, ..core("pods", NAMESPACE) },
            user: loader(),
            object: pod,
            old_object: None,
            dry_run: false,
            options: Value::Null,
        }
    });
    StageTarget {
        key: "admission".into(),
        name: "admission in process".into(),
        detail: "kube's default chain; Admit of a Pod create, mutating and validating phases in turn".into(),
        send,
        depth: DepthProbe::Local { directory, stage: "admission".into() },
        processes: vec![std::process::id()],
        _keep: vec![Box::new(Stopping(arbiter))],
    }
}

async fn flowcontrol() -> StageTarget {
    let directory = ActorDirectory::default();
    let arbiter = StageArbiter::new("front");
    let config = SharedConfig::default();
    let stage =
        actors::start(&arbiter, &directory, &mailbox("flowcontrol"), FlowControlActor::new(600, config.clone(), None));
    // Let the stage build its levels from the bootstrap configuration.
    actix_web::rt::time::sleep(Duration::from_millis(100)).await;
    let handle = stage.handle::<StartRequest>();
    let info = parse_request_info("GET", "/api/v1/namespaces/default/configmaps/c", false);
    // Classified on the caller's task as the gateway does; the grant is dropped as soon as it
    // arrives, which gives the seat back.
    let send: Sender = Rc::new(move |n| {
        let user = UserInfo {
            name: format!("user-{}", n % 64),
            groups: vec!["system:authenticated".into()],
            ..Default::default()
        };
        let classification = config.classify(&user, &info);
        let start = StartRequest { user, request: info.clone(), classification, work: RequestWork::default() };
        let handle = handle.clone();
        Box::pin(async move { Outcome::of(handle.call(start, Deadline::after(MESSAGE_DEADLINE)).await) })
    });
    StageTarget {
        key: "flowcontrol".into(),
        name: "flowcontrol in process".into(),
        detail: "kube's bootstrap FlowSchemas, 600 seats; StartRequest from 64 users, seat given back at once".into(),
        send,
        depth: DepthProbe::Local { directory, stage: "flowcontrol".into() },
        processes: vec![std::process::id()],
        _keep: vec![Box::new(Stopping(arbiter))],
    }
}
