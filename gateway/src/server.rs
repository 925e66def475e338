//! The composition root: the only place that names concrete actors. It opens storage, starts
//! every stage on its arbiter, bootstraps the system namespaces, and serves HTTPS and the admin
//! endpoint.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::Arbiter;
use actix_web::{App, HttpServer, web};
use actors::error::ApiError;
use actors::kinds::{self, ResourceDef};
use actors::messages::{
    Authenticate, Authorize, CreateObject, DeleteCollection, DeleteObject, GetObject, PatchObject, ReadConsistency,
    StartRequest, Target, UpdateObject, WatchObjects, WriteOptions,
};
use actors::registry::ActorRegistry;
use actors::request::UserInfo;
use actors::stage::{Mailbox, StageHandle};
use admission::{AdmissionActor, NamespaceLookup, PluginContext};
use async_trait::async_trait;
use cacher::{CacheReader, CacherActor, CacherOptions};
use flowcontrol::FlowControlActor;
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use serde_json::{Value, json};
use storage::registry::{RegistryStore, StorageActor};
use storage::router::StorageRouter;

use crate::auth::{AuthenticationActor, AuthorizationActor};
use crate::config::ServeOptions;
use crate::tls;

/// Handles to one resource's cacher.
#[derive(Clone)]
pub struct Reads {
    /// Gets and lists, answered from the cacher's snapshots without its mailbox.
    pub reader: CacheReader,
    /// Watches.
    pub watch: StageHandle<WatchObjects>,
}

/// Handles to every stage, shared by the HTTP workers.
#[derive(Clone)]
pub struct Stages {
    /// Authentication.
    pub authenticate: StageHandle<Authenticate>,
    /// Authorization.
    pub authorize: StageHandle<Authorize>,
    /// API Priority and Fairness.
    pub flow_control: StageHandle<StartRequest>,
    /// Storage stage: creates.
    pub create: StageHandle<CreateObject>,
    /// Storage stage: updates.
    pub update: StageHandle<UpdateObject>,
    /// Storage stage: patches.
    pub patch: StageHandle<PatchObject>,
    /// Storage stage: deletes.
    pub delete: StageHandle<DeleteObject>,
    /// Storage stage: collection deletes.
    pub delete_collection: StageHandle<DeleteCollection>,
    /// Cachers by storage path (events of both groups share one).
    pub reads: HashMap<&'static str, Reads>,
}

impl Stages {
    /// The cacher serving `def`.
    pub fn reads(&self, def: &ResourceDef) -> &Reads {
        &self.reads[def.storage_path]
    }
}

/// State shared by every request handler.
pub struct Server {
    /// Stage handles.
    pub stages: Stages,
    /// Flags.
    pub options: ServeOptions,
    /// Renders `/metrics`.
    pub metrics: PrometheusHandle,
    /// The storage backends, for health checks and compaction.
    pub router: Arc<StorageRouter>,
    /// Every live actor, for the admin endpoint.
    pub registry: ActorRegistry,
    /// `host:port` clients reach us at.
    pub address: String,
    /// When the server started.
    pub started: Instant,
}

/// Looks namespaces up through the namespace cacher as kube's plugin uses its informer: the
/// cache first, and a consistent read only when the cache does not know the namespace (one
/// created a moment ago), so admission never waits on storage in the common case.
struct CachedNamespaces(CacheReader);

#[async_trait]
impl NamespaceLookup for CachedNamespaces {
    async fn namespace(&self, name: &str) -> Result<Option<Value>, ApiError> {
        let target =
            Target { version: "v1".into(), resource: "namespaces".into(), name: name.into(), ..Default::default() };
        let cached = ReadConsistency { resource_version: Some("0".into()), resource_version_match: None };
        for consistency in [cached, ReadConsistency::default()] {
            match self.0.get(GetObject { target: target.clone(), consistency }).await {
                Ok(ns) => return Ok(Some(ns.value())),
                Err(e) if e.reason == actors::Reason::NotFound => continue,
                Err(e) => return Err(e),
            }
        }
        Ok(None)
    }
}

fn install_metrics() -> PrometheusHandle {
    const SECONDS: &[f64] =
        &[0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0];
    let handle = PrometheusBuilder::new()
        .set_buckets_for_metric(Matcher::Suffix("_seconds".into()), SECONDS)
        .expect("bucket list is not empty")
        .install_recorder()
        .expect("the metrics recorder is installed once");
    // Histograms buffer raw samples until upkeep folds them into buckets; without it, a server
    // nobody scrapes would grow by every request's samples.
    let upkeep = handle.clone();
    std::thread::Builder::new()
        .name("metrics-upkeep".into())
        .spawn(move || {
            loop {
                std::thread::sleep(Duration::from_secs(5));
                upkeep.run_upkeep();
            }
        })
        .expect("spawn the metrics upkeep thread");
    handle
}

/// Runs the server until it is stopped.
pub async fn serve(options: ServeOptions) -> Result<(), String> {
    let metrics = install_metrics();
    // Schemas and OpenAPI documents are built once, before the first request needs them.
    actors::schema::prepare();
    std::fs::create_dir_all(&options.data_dir).map_err(|e| format!("{}: {e}", options.data_dir.display()))?;
    let data_dir = options.data_dir.canonicalize().map_err(|e| e.to_string())?;
    let router = crate::backends::open(&options, &data_dir).await?;
    let registry = ActorRegistry::default();
    let cap = options.stage_mailbox_capacity;
    let wait = options.stage_mailbox_wait;

    // Stages that do little work per message share one arbiter; cachers get their own so reads
    // and watch fan-out never queue behind writes.
    let stage_arbiter = Arbiter::new();
    let cacher_arbiter = Arbiter::new();

    let mut reads = HashMap::new();
    for def in kinds::BUILTIN {
        if reads.contains_key(def.storage_path) {
            continue;
        }
        let mailbox = Mailbox::new(&registry, "cacher", &def.qualified(), cap, wait);
        let backend = router.backend(&def.key_prefix(&options.etcd_prefix)).clone();
        let cacher_options = CacherOptions {
            window_capacity: options.watch_cache_size(&def.qualified()),
            window_freshness: options.watch_cache_event_freshness,
            slow_watcher_budget: options.slow_watcher_budget,
            ..CacherOptions::default()
        };
        let (actor, reader) = CacherActor::new(def, backend, &options.etcd_prefix, cacher_options);
        let addr = mailbox.start(&cacher_arbiter, actor);
        reads.insert(
            def.storage_path,
            Reads { reader: reader.register(&registry), watch: mailbox.handle(addr.recipient()) },
        );
    }

    let namespaces = Arc::new(CachedNamespaces(reads["namespaces"].reader.clone()));
    let chain = admission::build_chain(&options.enable_admission_plugins, &PluginContext { namespaces })?;
    tracing::info!(plugins = ?chain.names(), "admission chain");
    let admission_mb = Mailbox::new(&registry, "admission", "", cap, wait);
    let admission_addr = admission_mb.start(&stage_arbiter, AdmissionActor::new(chain));
    let admit = admission_mb.handle(admission_addr.recipient());

    let store = Arc::new(RegistryStore::new(router.clone(), &options.etcd_prefix, admit));
    let storage_mb = Mailbox::new(&registry, "storage", "", cap, wait);
    let storage_addr = storage_mb.start(&stage_arbiter, StorageActor::new(store));

    let tokens = match &options.token_auth_file {
        Some(f) => crate::auth::load_token_file(f)?,
        None => HashMap::new(),
    };
    let authn_mb = Mailbox::new(&registry, "authentication", "", cap, wait);
    let authn_addr = authn_mb.start(&stage_arbiter, AuthenticationActor::new(tokens, options.anonymous_auth));
    let authz_mb = Mailbox::new(&registry, "authorization", "", cap, wait);
    let authz_addr = authz_mb.start(&stage_arbiter, AuthorizationActor::new(options.authorization_mode));
    let apf_mb = Mailbox::new(&registry, "flowcontrol", "", cap, wait);
    let apf_addr = apf_mb.start(&stage_arbiter, FlowControlActor);

    let stages = Stages {
        authenticate: authn_mb.handle(authn_addr.recipient()),
        authorize: authz_mb.handle(authz_addr.recipient()),
        flow_control: apf_mb.handle(apf_addr.recipient()),
        create: storage_mb.handle(storage_addr.clone().recipient()),
        update: storage_mb.handle(storage_addr.clone().recipient()),
        patch: storage_mb.handle(storage_addr.clone().recipient()),
        delete: storage_mb.handle(storage_addr.clone().recipient()),
        delete_collection: storage_mb.handle(storage_addr.recipient()),
        reads,
    };
    bootstrap(&stages).await?;
    if options.enable_namespace_finalizer {
        crate::namespace_finalizer::spawn(stages.clone());
    }
    crate::backends::spawn_object_counts(router.clone(), options.etcd_prefix.clone(), Duration::from_secs(60));
    if !options.etcd_compaction_interval.is_zero() {
        crate::backends::spawn_compaction(router.clone(), options.etcd_compaction_interval);
    }

    let host =
        if options.bind_address.is_unspecified() { "127.0.0.1".to_string() } else { options.bind_address.to_string() };
    let host = if host.contains(':') { format!("[{host}]") } else { host };
    let address = format!("{host}:{}", options.secure_port);
    let tls_opts = tls::TlsOptions {
        cert_file: options.tls_cert_file.clone(),
        key_file: options.tls_private_key_file.clone(),
        client_ca_file: options.client_ca_file.clone(),
        extra_sans: vec![options.bind_address.to_string()],
    };
    let material = tls::prepare(&data_dir, &tls_opts)?;
    let kubeconfig = data_dir.join("admin.kubeconfig");
    match tls::write_admin_kubeconfig(&kubeconfig, &format!("https://{address}"), &material) {
        Ok(()) => println!("apiserver: serving on https://{address}; kubeconfig: {}", kubeconfig.display()),
        Err(e) => println!("apiserver: serving on https://{address}; {e}"),
    }

    let server = web::Data::new(Server {
        stages,
        options: options.clone(),
        metrics,
        router,
        registry: registry.clone(),
        address: address.clone(),
        started: Instant::now(),
    });
    let workers = if options.workers == 0 {
        std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2)
    } else {
        options.workers
    };
    let main = {
        let server = server.clone();
        HttpServer::new(move || App::new().app_data(server.clone()).default_service(web::to(crate::http::dispatch)))
            .workers(workers)
            // Watch events and list chunks are written as they come; Nagle would hold a small
            // write back until the client ACKs the previous one (up to its delayed-ACK 40 ms).
            // Go, and so kube-apiserver, disables it on every connection too.
            .tcp_nodelay(true)
            .on_connect(crate::http::on_connect)
            .bind_rustls_0_23((options.bind_address, options.secure_port), material.server_config)
            .map_err(|e| format!("binding {}:{}: {e}", options.bind_address, options.secure_port))?
            .run()
    };
    let admin = HttpServer::new(move || App::new().app_data(server.clone()).configure(crate::admin::routes))
        .workers(1)
        .bind((options.admin_bind_address, options.admin_port))
        .map_err(|e| format!("binding admin {}:{}: {e}", options.admin_bind_address, options.admin_port))?
        .run();
    let admin_handle = admin.handle();
    actix_web::rt::spawn(admin);
    let result = main.await.map_err(|e| e.to_string());
    admin_handle.stop(true).await;
    result
}

/// Creates what kube's bootstrap controller creates: the system namespaces and the
/// `kubernetes` service.
async fn bootstrap(stages: &Stages) -> Result<(), String> {
    let system = WriteOptions {
        user: UserInfo { name: "system:apiserver".into(), uid: String::new(), groups: vec!["system:masters".into()] },
        ..Default::default()
    };
    let mut objects = Vec::new();
    for ns in ["default", "kube-system", "kube-public", "kube-node-lease"] {
        let target = Target { version: "v1".into(), resource: "namespaces".into(), ..Default::default() };
        objects.push((target, json!({ "metadata": { "name": ns } })));
    }
    let svc_target =
        Target { version: "v1".into(), resource: "services".into(), namespace: "default".into(), ..Default::default() };
    objects.push((
        svc_target,
        json!({
            "metadata": { "name": "kubernetes", "labels": { "component": "apiserver", "provider": "kubernetes" } },
            "spec": {
                "clusterIP": "10.96.0.1",
                "ports": [{ "name": "https", "port": 443, "protocol": "TCP", "targetPort": 6443 }],
            },
        }),
    ));
    for (target, object) in objects {
        let create = CreateObject { target, object, options: system.clone() };
        match stages.create.ask(create).await {
            Ok(_) => {}
            Err(e) if e.reason == actors::Reason::AlreadyExists => {}
            Err(e) => return Err(format!("bootstrap: {}", e.message)),
        }
    }
    Ok(())
}
