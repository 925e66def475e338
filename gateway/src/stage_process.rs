//! `apiserver stage --shard <name>`: one shard's storage stage in a process of its own.
//!
//! The process opens storage with the server's own flags (typically `--etcd-servers-overrides`
//! sending the shard's resources to an etcd of their own, or its own embedded store), starts the
//! write path as a gateway does (authorization, admission, the storage stage), and listens at the
//! shard's URL of `--stage-topology` (HTTP/2, mutual TLS with the cluster CA) for:
//!
//! - the storage stage's messages (`POST /stages/storage/<Message>`), admitted by its own
//!   mailbox whoever sends them;
//! - the feed the gateways' cachers follow (`/feed/...`), for the shard's resources only;
//! - `GET /stages/actors` (its actors, as the admin endpoint lists them) and
//!   `GET /stages/metrics` (Prometheus).
//!
//! Admission reads what it needs (namespaces, webhook configurations, policies, quotas) from
//! caches of its own, each started the first time it is read; RBAC, for admission's permission
//! checks, from the RBAC cachers as in a gateway. It serves no HTTPS API and runs no controller.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use actors::remote::{Incoming, StageService, answer};
use actors::{ActorDirectory, StageArbiter};
use apimachinery::lookup::ObjectLookup;
use apimachinery::messages::{CreateObject, DeleteCollection, DeleteObject, PatchObject, UpdateObject};
use cacher::feed::FeedService;
use serde_json::json;

use crate::config::StageOptions;
use crate::pipeline::{Arbiters, CachedObjects, WritePath};
use crate::topology::Topology;
use stage_handles::Caches;

/// Runs the shard's storage stage until SIGTERM or SIGINT.
pub async fn run(options: StageOptions) -> Result<(), String> {
    let serve = options.serve;
    validation::pod::allow_privileged(serve.allow_privileged);
    let metrics = crate::server::install_metrics(None);
    kinds::schema::prepare();
    let catalogue = Arc::new(kinds::catalogue());
    let topology = Topology::load(serve.stage_topology.as_deref(), &catalogue)?;
    let shard = topology.shard(&options.shard)?.clone();
    let tls = crate::topology::cluster_tls(&serve)?;
    std::fs::create_dir_all(&serve.data_dir).map_err(|e| format!("{}: {e}", serve.data_dir.display()))?;
    let data_dir = serve.data_dir.canonicalize().map_err(|e| e.to_string())?;
    let (front, storage, cachers) =
        (StageArbiter::new("front"), StageArbiter::new("storage"), StageArbiter::new("cachers"));
    let (router, _) = crate::backends::open(&serve, &data_dir, &catalogue, None, Some(&storage)).await?;
    crate::backends::adopt_kube_prefixes(&router, &catalogue, &serve.etcd_prefix).await?;
    let directory = ActorDirectory::default();
    crate::server::publish_stage_gauges(directory.clone());

    let caches = Caches::new(cachers, directory.clone(), router.clone(), HashMap::new(), serve.cache_settings());
    let objects: Arc<dyn ObjectLookup> =
        Arc::new(CachedObjects { catalogue: catalogue.clone(), caches: caches.clone(), on_demand: true });
    for def in catalogue.stores().into_iter().filter(|d| d.group == "rbac.authorization.k8s.io") {
        caches.start(def);
    }
    let arbiters = Arbiters { front: &front, storage: &storage };
    let WritePath { policy, storage, .. } =
        crate::pipeline::start_write_path(&serve, &catalogue, &router, &objects, &directory, &arbiters)?;
    controllers::rbac_feed::start(caches.clone(), catalogue.clone(), policy).await?;

    let mut service = StageService::default();
    service.expose(storage.handle::<CreateObject>());
    service.expose(storage.handle::<UpdateObject>());
    service.expose(storage.handle::<PatchObject>());
    service.expose(storage.handle::<DeleteObject>());
    service.expose(storage.handle::<DeleteCollection>());
    let owned: Vec<String> = catalogue
        .stores()
        .into_iter()
        .filter(|d| shard.storage_paths.contains(&d.storage_path))
        .map(|d| d.key_prefix(&serve.etcd_prefix))
        .collect();
    FeedService::new(router.clone(), owned).register(&mut service);
    let (name, listing) = (shard.name.clone(), directory.clone());
    service.route(
        "/stages/actors",
        Arc::new(move |_: Incoming| {
            let body = json!({ "process": name, "actors": listing.snapshot() });
            Box::pin(async move { answer(200, "application/json", body.to_string()) })
        }),
    );
    service.route(
        "/stages/metrics",
        Arc::new(move |_: Incoming| {
            let body = crate::prometheus::render(&metrics);
            Box::pin(async move { answer(200, "text/plain; version=0.0.4", body) })
        }),
    );
    let exposed = service.exposed();
    let address = shard.listen_address()?;
    let listening = service.serve(address, &tls)?;
    if !serve.etcd_compaction_interval.is_zero() {
        crate::backends::spawn_compaction(router.clone(), serve.etcd_compaction_interval);
    }
    tracing::info!(shard = shard.name, resources = ?shard.resources, routes = ?exposed, "storage stage serving");
    println!("apiserver: storage stage of shard {} serving on https://{}", shard.name, listening.address());

    wait_for_signal().await;
    tracing::info!(shard = shard.name, "stopping");
    drop(listening);
    // No write the stage accepted is left half done when the process ends.
    match tokio::time::timeout(Duration::from_secs(10), router.close()).await {
        Ok(result) => result.map_err(|e| format!("closing storage: {e}")),
        Err(_) => Err("closing storage took over 10 s".into()),
    }
}

async fn wait_for_signal() {
    use actix_web::rt::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate()).expect("a SIGTERM handler");
    tokio::select! {
        _ = term.recv() => {}
        _ = actix_web::rt::signal::ctrl_c() => {}
    }
}
