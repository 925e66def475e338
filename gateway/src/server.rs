//! The composition root: the only module that names concrete actors and knows every other
//! module. It builds the catalogue, opens storage, starts every stage on its arbiter, bootstraps
//! the system namespaces, starts the controllers (under their Lease), and serves HTTPS and the
//! admin endpoint until SIGTERM, then shuts down in kube's steps (`lifecycle`) and closes
//! storage.
//!
//! Arbiters (threads with their own event loop): the storage stage and the admission stage,
//! which do the CPU work of writes (defaults, validation, patches, encoding; the admission
//! chain), share one (`storage`), with etcd's connections: a write asks admission once or twice
//! and etcd once, and each crossing to another thread cost more in wake-ups than that thread
//! saved (docs/BENCHMARKS.md, "Fewer threads between a write and etcd"); the price is that a
//! long write's CPU delays etcd's answers to the gateway's and the cachers' calls. The cachers
//! share one, so reads' snapshots and watch fan-out never queue behind writes; authentication,
//! authorization and flow control, whose work per message is a map lookup or a comparison,
//! share one (`front`). HTTP workers run on their own threads.

use std::sync::Arc;
use std::time::{Duration, Instant};

use actix_web::{App, HttpServer, web};
use actors::{ActorDirectory, Deadline, StageArbiter, WhenFull};
use apimachinery::catalogue::Catalogue;
use apimachinery::lookup::ObjectLookup;
use apimachinery::messages::{CreateObject, DeleteObject, GetObject, Target, UpdateObject};
use apimachinery::options::{DeleteOptions, GetOptions, ReadAt, WriteOptions};
use apimachinery::request::UserInfo;
use auth::AuthenticationActor;
use controllers::kubernetes_endpoints::EndpointReconciler;
use flowcontrol::FlowControlActor;
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use serde_json::{Value, json};
use storage::faults::Faults;
use tokio::task::AbortHandle;

use crate::config::ServeOptions;
use crate::metrics::AXIS_HEALTH;
use crate::state::{ServerState, Stages};
use crate::tls;
use crate::topology::{RemoteStages, ShardedWrites, Topology};
use stage_handles::Caches;

/// TLS handshakes one worker runs at once: far more than real clients start together, few
/// enough that a handshake flood is bounded.
const MAX_HANDSHAKES_PER_WORKER: usize = 8_192;

/// How long bootstrap writes may take.
const BOOTSTRAP_TIMEOUT: Duration = Duration::from_secs(60);

/// Installs the Prometheus recorder, behind the diagnosis's tap when `signals` is given, which
/// feeds the axes' signals into it as they are recorded.
pub(crate) fn install_metrics(signals: Option<Arc<diagnosis::Signals>>) -> PrometheusHandle {
    const SECONDS: &[f64] =
        &[0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0];
    let recorder = PrometheusBuilder::new()
        .set_buckets_for_metric(Matcher::Suffix("_seconds".into()), SECONDS)
        .expect("bucket list is not empty")
        .build_recorder();
    let handle = recorder.handle();
    let installed = match signals {
        Some(signals) => metrics::set_global_recorder(diagnosis::TapRecorder::new(recorder, signals)).is_ok(),
        None => metrics::set_global_recorder(recorder).is_ok(),
    };
    assert!(installed, "the metrics recorder is installed once");
    crate::prometheus::describe_all();
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

/// Copies every stage's queued and in-progress depth to its Prometheus gauges once a second
/// (the counter pairs beside them catch what happens in between).
pub(crate) fn publish_stage_gauges(directory: ActorDirectory) {
    std::thread::Builder::new()
        .name("stage-gauges".into())
        .spawn(move || {
            loop {
                directory.publish_gauges();
                std::thread::sleep(Duration::from_secs(1));
            }
        })
        .expect("spawn the stage gauge thread");
}

/// Judges the axes once a second from the tapped signals and the storage backends' meters,
/// exports each axis's health as `apiserver_axis_health{axis}` (0 healthy, 1 degraded,
/// 2 failing) and logs the verdict when it changes.
fn diagnose(diagnosis: Arc<diagnosis::Diagnosis>, meters: Vec<Arc<storage::metered::MeteredStorage>>) {
    std::thread::Builder::new()
        .name("diagnosis".into())
        .spawn(move || {
            // The gauges exist from the start, before the first judgement a second later.
            loop {
                for (axis, health) in diagnosis.health() {
                    metrics::gauge!(AXIS_HEALTH, "axis" => axis.name()).set(health.gauge());
                }
                std::thread::sleep(Duration::from_secs(1));
                let probes: Vec<_> = meters
                    .iter()
                    .map(|m| diagnosis::StorageProbe {
                        backend: storage::Storage::describe(m.as_ref()),
                        oldest_in_flight: m.oldest_in_flight(),
                        unavailable_total: m.unavailable_total(),
                    })
                    .collect();
                if let Some(change) = diagnosis.tick(&probes) {
                    if change.healthy {
                        tracing::info!(verdict = %change.summary, "axes");
                    } else {
                        tracing::warn!(verdict = %change.summary, "axes");
                    }
                }
            }
        })
        .expect("spawn the diagnosis thread");
}

/// How often the APF bootstrap objects and the FlowSchemas' `Dangling` conditions are kept.
const APF_UPKEEP: Duration = Duration::from_secs(10);

/// Passes of [`APF_UPKEEP`] skipped in a row while the APF objects stay unchanged.
const APF_UPKEEP_SKIPS: u32 = 5;

/// The flow-control stage's mailbox bound: above what kube's bootstrap levels queue in all
/// (about 26,000 requests), so APF, not the mailbox, decides who waits and who gets 429.
const APF_MAILBOX_CAPACITY: usize = 1 << 15;

/// Runs the server until it is stopped.
pub async fn serve(options: ServeOptions) -> Result<(), String> {
    validation::pod::allow_privileged(options.allow_privileged);
    let lifecycle = Arc::new(crate::lifecycle::Lifecycle::new(options.shutdown_send_retry_after));
    let election = options.leader_elect.then(|| {
        controllers::leader::ElectionConfig::controllers(
            options.leader_elect_lease_duration,
            options.leader_elect_renew_deadline,
            options.leader_elect_retry_period,
        )
    });
    if let Some(config) = &election {
        config.validate()?;
    }
    let lease = &options.controller_manager_lease;
    if !lease.is_empty() && !lease.split_once('/').is_some_and(|(ns, name)| !ns.is_empty() && !name.is_empty()) {
        return Err(format!("--controller-manager-lease must be namespace/name or empty, not {lease:?}"));
    }
    let diagnosis = diagnosis(&options)?;
    let metrics = install_metrics(diagnosis.as_ref().map(|d| d.signals().clone()));
    // Schemas and OpenAPI documents are built once, before the first request needs them.
    kinds::schema::prepare();
    let catalogue = Arc::new(kinds::catalogue());
    std::fs::create_dir_all(&options.data_dir).map_err(|e| format!("{}: {e}", options.data_dir.display()))?;
    let data_dir = options.data_dir.canonicalize().map_err(|e| e.to_string())?;
    let faults = options.enable_fault_injection.then(|| Arc::new(Faults::default()));
    if faults.is_some() {
        tracing::warn!("fault injection is enabled: the admin endpoint can slow storage down");
    }
    // The storage stage's thread, made first so that etcd's connections live on it.
    let storage_arbiter = StageArbiter::new("storage");
    let (router, storage_meters) =
        crate::backends::open(&options, &data_dir, &catalogue, faults.as_ref(), Some(&storage_arbiter)).await?;
    crate::backends::adopt_kube_prefixes(&router, &catalogue, &options.etcd_prefix).await?;
    // The storage stage's meters are this process's only when it runs the stage itself.
    if let Some(diagnosis) = &diagnosis {
        diagnose(diagnosis.clone(), storage_meters);
    }
    let directory = ActorDirectory::default();
    publish_stage_gauges(directory.clone());
    let stages = start_stages(&options, &data_dir, &catalogue, &router, &directory, storage_arbiter)?;
    let Started { stages, objects, authorizers, policy, auditor, issuer, remotes, apf, apf_view, apf_exempt } = stages;

    let range = options.service_cluster_ip_range;
    let tls_opts = tls::TlsOptions {
        cert_file: options.tls_cert_file.clone(),
        key_file: options.tls_private_key_file.clone(),
        client_ca_file: options.client_ca_file.clone(),
        extra_sans: vec![options.bind_address.to_string(), range.first().to_string()],
    };
    let material = tls::prepare(&data_dir, &tls_opts)?;
    bootstrap(&stages, &catalogue, range.first().to_string(), objects.as_ref()).await?;
    controllers::rbac_feed::start(stages.caches.clone(), catalogue.clone(), policy.clone()).await?;
    let openapi = crate::openapi::CustomOpenApi::default();
    let aggregator = start_api_controllers(&options, &stages, &catalogue, &objects, &openapi, &material).await?;
    let elector = start_elected_controllers(
        &options,
        election,
        &lifecycle,
        &stages,
        &catalogue,
        &objects,
        &issuer,
        material.serving_ca_pem.clone(),
    )?;
    let endpoints = endpoint_reconciler(&options, &stages, &catalogue, &objects, &router);
    let host = hostname::get().map(|h| h.to_string_lossy().into_owned()).unwrap_or_default();
    controllers::apiserver_identity::start(stages.clone(), catalogue.clone(), objects.clone(), host);
    crate::backends::spawn_object_counts(
        router.clone(),
        catalogue.clone(),
        options.etcd_prefix.clone(),
        Duration::from_secs(60),
    );
    if !options.etcd_compaction_interval.is_zero() {
        crate::backends::spawn_compaction(router.clone(), options.etcd_compaction_interval);
    }

    let host =
        if options.bind_address.is_unspecified() { "127.0.0.1".to_string() } else { options.bind_address.to_string() };
    let host = if host.contains(':') { format!("[{host}]") } else { host };
    let address = format!("{host}:{}", options.secure_port);
    let kubeconfig = data_dir.join("admin.kubeconfig");
    match tls::write_admin_kubeconfig(&kubeconfig, &format!("https://{address}"), &material) {
        Ok(()) => println!("apiserver: serving on https://{address}; kubeconfig: {}", kubeconfig.display()),
        Err(e) => println!("apiserver: serving on https://{address}; {e}"),
    }

    let backends = router.clone();
    let server = web::Data::new(ServerState {
        stages,
        catalogue,
        actions: kinds::actions(),
        openapi,
        authorizers,
        auditor,
        tokens: issuer,
        options: options.clone(),
        metrics,
        router,
        faults,
        diagnosis,
        directory,
        address,
        started: Instant::now(),
        apf,
        apf_view,
        apf_exempt,
        aggregator,
        remotes,
        kubelet_tls: crate::kubelet::kubelet_tls(&options)?,
        lifecycle: lifecycle.clone(),
    });
    let (main, admin) = http_servers(&options, server, material)?;
    // Listed in the `kubernetes` Service once it listens.
    if let Some(reconciler) = &endpoints {
        reconciler.start();
    }
    run_until_terminated(&options, &lifecycle, main, admin, elector, endpoints).await?;
    // Every request has been answered: storage closes with no accepted write left half done.
    if let Err(e) = backends.close().await {
        tracing::warn!("closing storage: {e}");
    }
    tracing::info!("[graceful-termination] apiserver is exiting");
    Ok(())
}

/// The diagnosis of `--diagnosis`, with the thresholds of `--diagnosis-config`.
fn diagnosis(options: &ServeOptions) -> Result<Option<Arc<diagnosis::Diagnosis>>, String> {
    if !options.diagnosis {
        return Ok(None);
    }
    let thresholds = match &options.diagnosis_config {
        Some(path) => diagnosis::Thresholds::load(path).map_err(|e| format!("--diagnosis-config: {e}"))?,
        None => diagnosis::Thresholds::default(),
    };
    Ok(Some(Arc::new(diagnosis::Diagnosis::new(Arc::default(), thresholds))))
}

/// The stages, running, and what the handlers keep of them.
struct Started {
    stages: Stages,
    objects: Arc<dyn ObjectLookup>,
    authorizers: Arc<auth::authz::Authorizers>,
    policy: auth::SharedPolicy,
    auditor: Option<auth::audit::Auditor>,
    issuer: Arc<auth::serviceaccount::TokenIssuer>,
    remotes: RemoteStages,
    apf: flowcontrol::SharedConfig,
    apf_view: flowcontrol::FlowControlView,
    apf_exempt: flowcontrol::ExemptSeats,
}

/// Starts every stage on its arbiter: the cachers of every stored resource, the write path
/// (authorization, admission, storage, or the storage stage processes of the topology),
/// authentication and flow control.
fn start_stages(
    options: &ServeOptions,
    data_dir: &std::path::Path,
    catalogue: &Arc<Catalogue>,
    router: &Arc<storage::router::StorageRouter>,
    directory: &ActorDirectory,
    storage_arbiter: StageArbiter,
) -> Result<Started, String> {
    let front = StageArbiter::new("front");
    let cacher_arbiter = StageArbiter::new("cachers");

    let topology = Topology::load(options.stage_topology.as_deref(), catalogue)?;
    let cluster_tls = match topology.shards.is_empty() {
        true => None,
        false => Some(crate::topology::cluster_tls(options)?),
    };
    let remotes = RemoteStages::connect(&topology, cluster_tls.as_ref(), directory)?;
    for shard in &topology.shards {
        tracing::info!(shard = shard.name, url = shard.url, resources = ?shard.resources, "storage stage in another process");
    }
    let caches =
        Caches::new(cacher_arbiter, directory.clone(), router.clone(), remotes.feeds(), options.cache_settings());
    for def in catalogue.stores() {
        caches.start(def);
    }
    let objects: Arc<dyn ObjectLookup> = Arc::new(crate::pipeline::CachedObjects {
        catalogue: catalogue.clone(),
        caches: caches.clone(),
        on_demand: false,
    });
    let arbiters = crate::pipeline::Arbiters { front: &front, storage: &storage_arbiter };
    let crate::pipeline::WritePath { authorizers, policy, authorization, storage } =
        crate::pipeline::start_write_path(options, catalogue, router, &objects, directory, &arbiters)?;
    let auditor = auth::audit::start(&audit_options(options), directory)?;
    let keys = Arc::new(auth::serviceaccount::KeySet::load(
        data_dir,
        options.service_account_signing_key_file.as_deref(),
        &options.service_account_key_file,
    )?);
    let audiences = options.audiences();
    let issuer = Arc::new(auth::serviceaccount::TokenIssuer::new(
        keys.clone(),
        &options.service_account_issuer[0],
        &audiences,
        options.service_account_max_token_expiration,
    ));
    let legacy_token_use = auth::serviceaccount::authenticator::LegacyTokenRecorder::default();
    let authenticators = authenticators(options, keys, &audiences, &objects, &legacy_token_use)?;
    // In front of flow control: waits for a slot rather than refusing, so APF decides who is
    // turned away.
    let authentication = actors::start(
        &front,
        directory,
        &crate::pipeline::spec("authentication", "", options, WhenFull::Wait),
        AuthenticationActor::new(authenticators, audiences, options.anonymous_auth),
    );
    let apf = flowcontrol::SharedConfig::default();
    let server_seats = flowcontrol::limits::server_concurrency_limit(
        options.max_requests_inflight,
        options.max_mutating_requests_inflight,
    );
    let apf_stage = FlowControlActor::new(server_seats, apf.clone(), Some(objects.clone()));
    let apf_view = apf_stage.view();
    let apf_exempt = apf_stage.exempt_seats();
    // Requests APF queues hold their mailbox slot while they wait: the bound must exceed what
    // the queues hold, or a flood would fill the mailbox and turn away every flow alike.
    let shed = WhenFull::Shed { wait: options.stage_mailbox_wait };
    let mut apf_spec = crate::pipeline::spec("flowcontrol", "", options, shed);
    apf_spec.capacity = apf_spec.capacity.max(APF_MAILBOX_CAPACITY);
    let flow_control = actors::start(&front, directory, &apf_spec, apf_stage);

    let stages = Stages {
        authenticate: authentication.handle(),
        authorize: authorization.handle(),
        flow_control: flow_control.handle(),
        create: ShardedWrites::handle(storage.handle(), &remotes, catalogue.clone()),
        update: ShardedWrites::handle(storage.handle(), &remotes, catalogue.clone()),
        patch: ShardedWrites::handle(storage.handle(), &remotes, catalogue.clone()),
        delete: ShardedWrites::handle(storage.handle(), &remotes, catalogue.clone()),
        delete_collection: ShardedWrites::handle(storage.handle(), &remotes, catalogue.clone()),
        caches,
    };
    let labeler = controllers::legacy_tokens::SecretLabeler::new(stages.clone(), catalogue.clone());
    let _ = legacy_token_use.set(Arc::new(labeler));
    Ok(Started { stages, objects, authorizers, policy, auditor, issuer, remotes, apf, apf_view, apf_exempt })
}

/// The token authenticators of the flags, in kube's order: static tokens, ServiceAccount
/// tokens, OIDC, the token webhook.
fn authenticators(
    options: &ServeOptions,
    keys: Arc<auth::serviceaccount::KeySet>,
    audiences: &[String],
    objects: &Arc<dyn ObjectLookup>,
    legacy_token_use: &auth::serviceaccount::authenticator::LegacyTokenRecorder,
) -> Result<Vec<Arc<dyn auth::TokenAuthenticator>>, String> {
    let mut authenticators: Vec<Arc<dyn auth::TokenAuthenticator>> = Vec::new();
    if let Some(f) = &options.token_auth_file {
        authenticators.push(Arc::new(auth::StaticTokens(auth::load_token_file(f)?)));
    }
    authenticators.push(Arc::new(
        auth::serviceaccount::authenticator::ServiceAccountAuthenticator::new(
            keys,
            options.service_account_issuer.clone(),
            audiences.to_vec(),
            objects.clone(),
        )
        .recording_legacy_use(legacy_token_use.clone()),
    ));
    if options.enable_bootstrap_token_auth {
        authenticators.push(Arc::new(auth::authn::bootstrap_token::BootstrapTokens::new(objects.clone())));
    }
    if let Some(issuer_url) = &options.oidc_issuer_url {
        let oidc = auth::authn::oidc::OidcOptions {
            issuer_url: issuer_url.clone(),
            client_id: options.oidc_client_id.clone(),
            username_claim: options.oidc_username_claim.clone(),
            username_prefix: options.oidc_username_prefix.clone(),
            groups_claim: options.oidc_groups_claim.clone(),
            groups_prefix: options.oidc_groups_prefix.clone(),
            ca_file: options.oidc_ca_file.clone(),
            signing_algs: options.oidc_signing_algs.clone(),
            required_claims: options.oidc_required_claim.clone(),
        };
        authenticators.push(Arc::new(auth::authn::oidc::OidcAuthenticator::new(oidc)?));
    }
    if let Some(file) = &options.authentication_token_webhook_config_file {
        let client = webhook_client::WebhookClient::from_kubeconfig(file)?;
        let ttl = options.authentication_token_webhook_cache_ttl;
        let version = &options.authentication_token_webhook_version;
        authenticators.push(Arc::new(auth::authn::webhook::WebhookTokenAuthenticator::new(client, version, ttl)));
    }
    Ok(authenticators)
}

/// Starts the API's own controllers, which every replica runs: CRDs served, an APIService per
/// group version, the APIServices' availability, and the extension servers' trust ConfigMap.
/// Returns the aggregator they keep.
async fn start_api_controllers(
    options: &ServeOptions,
    stages: &Stages,
    catalogue: &Arc<Catalogue>,
    objects: &Arc<dyn ObjectLookup>,
    openapi: &crate::openapi::CustomOpenApi,
    material: &tls::TlsMaterial,
) -> Result<Arc<crate::aggregator::Aggregator>, String> {
    controllers::crds::start(stages.clone(), catalogue.clone(), Arc::new(openapi.clone()), objects.clone()).await;
    let (aggregator, rechecks) = crate::aggregator::Aggregator::new(objects.clone(), aggregator_options(options)?);
    let aggregator = Arc::new(aggregator);
    controllers::apiservice_registration::start(stages.clone(), catalogue.clone()).await;
    crate::aggregator::availability::start(stages.clone(), catalogue.clone(), aggregator.clone(), rechecks).await;
    let trust = authentication_trust(options, material)?;
    if let Err(e) = controllers::authentication_trust::publish(stages, catalogue, &trust).await {
        tracing::warn!("publishing the extension API servers' authentication: {e}");
    }
    controllers::legacy_tokens::start(stages.clone(), catalogue.clone());
    Ok(aggregator)
}

/// Starts the controllers kube-controller-manager would run, and the APF upkeep: now, or
/// under the Lease when `election` is given (then returns the elector's task, which ends once
/// the Lease is released at shutdown).
#[allow(clippy::too_many_arguments)]
fn start_elected_controllers(
    options: &ServeOptions,
    election: Option<controllers::leader::ElectionConfig>,
    lifecycle: &crate::lifecycle::Lifecycle,
    stages: &Stages,
    catalogue: &Arc<Catalogue>,
    objects: &Arc<dyn ObjectLookup>,
    issuer: &Arc<auth::serviceaccount::TokenIssuer>,
    serving_ca: Option<String>,
) -> Result<Option<actix_web::rt::task::JoinHandle<()>>, String> {
    let start_controllers =
        {
            let (options, stages, catalogue, objects) =
                (options.clone(), stages.clone(), catalogue.clone(), objects.clone());
            let issuer = issuer.clone();
            move || {
                let mut running = vec![spawn_apf_upkeep(stages.clone(), catalogue.clone(), objects.clone())];
                let watch = standing_aside_watch(&options, &stages, &catalogue);
                let period = options.leader_elect_retry_period;
                let (options, stages, catalogue, objects, issuer, serving_ca) = (
                    options.clone(),
                    stages.clone(),
                    catalogue.clone(),
                    objects.clone(),
                    issuer.clone(),
                    serving_ca.clone(),
                );
                let controllers =
                    move || spawn_controllers(&options, &stages, &catalogue, &objects, &issuer, serving_ca.as_deref());
                match watch {
                    Some(watch) => running.push(controllers::leader::spawn_stoppable(
                        controllers::standing_aside::run(watch, period, controllers),
                    )),
                    None => running.extend(controllers()),
                }
                running
            }
        };
    Ok(match election {
        Some(config) => {
            use controllers::leader::{LeaderElector, StageLeaseLock};
            let leases = catalogue.find("coordination.k8s.io", "v1", "leases").ok_or("leases are not served")?;
            let lock = StageLeaseLock::new(stages.clone(), leases, &config.namespace, &config.name);
            let stop = lifecycle.signals.shutdown_initiated.clone();
            Some(actix_web::rt::spawn(LeaderElector::new(config, lock).run(start_controllers, stop)))
        }
        None => {
            start_controllers();
            None
        }
    })
}

/// What tells whether a kube-controller-manager holds its Lease (`--controller-manager-lease`),
/// unless the flag is empty.
fn standing_aside_watch(
    options: &ServeOptions,
    stages: &Stages,
    catalogue: &Catalogue,
) -> Option<controllers::standing_aside::HolderWatch<controllers::leader::StageLeaseLock>> {
    let (namespace, name) = options.controller_manager_lease.split_once('/')?;
    let leases = catalogue.find("coordination.k8s.io", "v1", "leases")?;
    let lock = controllers::leader::StageLeaseLock::new(stages.clone(), leases, namespace, name);
    Some(controllers::standing_aside::HolderWatch::new(lock))
}

/// The HTTPS server of the API and the admin endpoint's, bound but not yet running.
fn http_servers(
    options: &ServeOptions,
    server: web::Data<ServerState>,
    material: tls::TlsMaterial,
) -> Result<(actix_web::dev::Server, actix_web::dev::Server), String> {
    let workers = if options.workers == 0 {
        std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2)
    } else {
        options.workers
    };
    // Once the listener closes, the workers serve what is in flight for as long as the rest of
    // the sequence may take (the drain, the watches' grace); the sequence itself never waits
    // for them past its end.
    let worker_grace =
        options.request_timeout + options.shutdown_watch_termination_grace_period + Duration::from_secs(5);
    let admin_tls = material.server_config.clone();
    let address = std::net::SocketAddr::new(options.bind_address, options.secure_port);
    let main = crate::listener::serve_api(
        crate::listener::ListenOptions {
            address,
            workers,
            // TLS handshakes in progress per worker (actix's default is 256). A socket that
            // never starts its handshake holds a slot until the 3 s handshake timeout, so a few
            // hundred idle connections would make every new client wait; Go, and so
            // kube-apiserver, sets no such bound.
            max_handshakes: MAX_HANDSHAKES_PER_WORKER,
            shutdown_timeout: worker_grace,
        },
        server.clone(),
        material.server_config,
    )
    .map_err(|e| format!("binding {address}: {e}"))?;
    // The admin endpoint answers until the very end of the shutdown. Off loopback it is served
    // over TLS and every request is authenticated and authorized (`admin::guard`).
    let admin_address = (options.admin_bind_address, options.admin_port);
    let bind_error = |e: std::io::Error| format!("binding admin {}:{}: {e}", admin_address.0, admin_address.1);
    let admin = if options.admin_bind_address.is_loopback() {
        HttpServer::new(move || App::new().app_data(server.clone()).configure(crate::admin::routes))
            .workers(1)
            .disable_signals()
            .shutdown_timeout(1)
            .bind(admin_address)
            .map_err(bind_error)?
            .run()
    } else {
        let guarded = move || {
            App::new()
                .app_data(server.clone())
                .wrap(actix_web::middleware::from_fn(crate::admin::guard))
                .configure(crate::admin::routes)
        };
        HttpServer::new(guarded)
            .workers(1)
            .on_connect(crate::chain::on_connect)
            .disable_signals()
            .shutdown_timeout(1)
            .bind_rustls_0_23(admin_address, admin_tls)
            .map_err(bind_error)?
            .run()
    };
    Ok((main, admin))
}

/// What keeps this server in the `kubernetes` Service's endpoints
/// (`--endpoint-reconciler-type`), unless it is advertised at no address other members could
/// reach (a loopback address).
fn endpoint_reconciler(
    options: &ServeOptions,
    stages: &Stages,
    catalogue: &Arc<Catalogue>,
    objects: &Arc<dyn ObjectLookup>,
    router: &Arc<storage::router::StorageRouter>,
) -> Option<Arc<EndpointReconciler>> {
    use controllers::kubernetes_endpoints::Reconciling;
    let reconciling = match options.endpoint_reconciler_type.as_str() {
        "lease" => Reconciling::Leases,
        "master-count" => Reconciling::Count(options.apiserver_count as usize),
        _ => return None,
    };
    let Some(ip) = options.advertised_address().filter(|ip| !ip.is_loopback() && !ip.is_unspecified()) else {
        tracing::info!("advertised at a loopback address: the kubernetes Service gets no endpoint for this server");
        return None;
    };
    Some(EndpointReconciler::new(
        reconciling,
        stages.clone(),
        catalogue.clone(),
        objects.clone(),
        router.clone(),
        &options.etcd_prefix,
        (ip, options.secure_port),
    ))
}

/// Serves until SIGTERM or SIGINT, then runs kube's shutdown sequence; beside it, the elector
/// stops the controllers and releases their Lease.
async fn run_until_terminated(
    options: &ServeOptions,
    lifecycle: &crate::lifecycle::Lifecycle,
    main: actix_web::dev::Server,
    admin: actix_web::dev::Server,
    elector: Option<actix_web::rt::task::JoinHandle<()>>,
    endpoints: Option<Arc<EndpointReconciler>>,
) -> Result<(), String> {
    // From here on SIGTERM and SIGINT start the graceful shutdown; until here (starting up)
    // they end the process at once.
    let termination =
        crate::lifecycle::TerminationSignals::install().map_err(|e| format!("installing signal handlers: {e}"))?;
    let (main_handle, admin_handle) = (main.handle(), admin.handle());
    let mut serving = actix_web::rt::spawn(main);
    actix_web::rt::spawn(admin);
    tokio::select! {
        ended = &mut serving => {
            admin_handle.stop(false).await;
            return match ended {
                Ok(result) => result.map_err(|e| e.to_string()),
                Err(e) => Err(format!("the HTTPS server stopped: {e}")),
            };
        }
        () = termination.requested() => {}
    }
    let shutdown = crate::lifecycle::ShutdownOptions {
        delay: options.shutdown_delay_duration,
        send_retry_after: options.shutdown_send_retry_after,
        watch_grace: options.shutdown_watch_termination_grace_period,
        drain_timeout: options.request_timeout,
    };
    // The elector (stopped by `ShutdownInitiated`) stops the controllers and releases their
    // Lease, so another replica takes them over at once; both are done before storage closes.
    let release_bound = options.leader_elect_renew_deadline;
    let controllers_stopped = async move {
        if let Some(elector) = elector
            && tokio::time::timeout(release_bound, elector).await.is_err()
        {
            tracing::warn!("the controllers' Lease was not released within {release_bound:?}");
        }
    };
    // Out of the `kubernetes` Service's endpoints at once, so in-cluster clients stop coming
    // while the requests in flight drain (kube's pre-shutdown hook).
    let endpoints_removed = async move {
        if let Some(reconciler) = endpoints {
            reconciler.remove(2 * controllers::kubernetes_endpoints::INTERVAL).await;
        }
    };
    tokio::join!(lifecycle.shut_down(&shutdown, &main_handle), controllers_stopped, endpoints_removed);
    let _ = tokio::time::timeout(Duration::from_secs(2), admin_handle.stop(true)).await;
    Ok(())
}

fn aggregator_options(options: &ServeOptions) -> Result<crate::aggregator::AggregatorOptions, String> {
    let read = |p: &std::path::Path| std::fs::read(p).map_err(|e| format!("{}: {e}", p.display()));
    let client_cert = match (&options.proxy_client_cert_file, &options.proxy_client_key_file) {
        (Some(cert), Some(key)) => Some((read(cert)?, read(key)?)),
        (None, None) => None,
        _ => return Err("--proxy-client-cert-file and --proxy-client-key-file must be given together".into()),
    };
    Ok(crate::aggregator::AggregatorOptions {
        client_cert,
        reject_redirects: options.aggregator_reject_forwarding_redirects,
    })
}

/// What `kube-system/extension-apiserver-authentication` publishes, warning as kube does when
/// the front-proxy headers leave out the ones the aggregator sends.
fn authentication_trust(
    options: &ServeOptions,
    material: &tls::TlsMaterial,
) -> Result<controllers::authentication_trust::AuthenticationTrust, String> {
    use controllers::authentication_trust::{AuthenticationTrust, RequestHeader};
    let requestheader = match &options.requestheader_client_ca_file {
        None => None,
        Some(file) => {
            let client_ca = std::fs::read_to_string(file).map_err(|e| format!("{}: {e}", file.display()))?;
            for (flag, values, standard) in [
                ("username-headers", &options.requestheader_username_headers, "X-Remote-User"),
                ("group-headers", &options.requestheader_group_headers, "X-Remote-Group"),
                ("extra-headers-prefix", &options.requestheader_extra_headers_prefix, "X-Remote-Extra-"),
            ] {
                if !values.is_empty() && !values.iter().any(|v| v.eq_ignore_ascii_case(standard)) {
                    tracing::warn!(
                        "--requestheader-{flag} is set without specifying the standard {standard} header - API aggregation will not work"
                    );
                }
            }
            Some(RequestHeader {
                client_ca,
                allowed_names: options.requestheader_allowed_names.clone(),
                username_headers: options.requestheader_username_headers.clone(),
                group_headers: options.requestheader_group_headers.clone(),
                extra_headers_prefix: options.requestheader_extra_headers_prefix.clone(),
            })
        }
    };
    Ok(AuthenticationTrust { client_ca: material.client_ca_pem.clone(), requestheader })
}

fn audit_options(options: &ServeOptions) -> auth::audit::AuditOptions {
    auth::audit::AuditOptions {
        policy_file: options.audit_policy_file.clone(),
        log_path: options.audit_log_path.clone(),
        log_maxsize_mb: options.audit_log_maxsize,
        log_maxbackup: options.audit_log_maxbackup,
        log_maxage_days: options.audit_log_maxage,
        webhook_config_file: options.audit_webhook_config_file.clone(),
        webhook_batch_max_size: options.audit_webhook_batch_max_size,
        webhook_batch_max_wait: options.audit_webhook_batch_max_wait,
        webhook_initial_backoff: options.audit_webhook_initial_backoff,
        buffer_size: options.audit_buffer_size,
    }
}

/// Starts the controllers the flags leave on; the handles stop them.
fn spawn_controllers(
    options: &ServeOptions,
    stages: &Stages,
    catalogue: &Arc<Catalogue>,
    objects: &Arc<dyn ObjectLookup>,
    issuer: &Arc<auth::serviceaccount::TokenIssuer>,
    serving_ca_pem: Option<&str>,
) -> Vec<AbortHandle> {
    use controllers::{
        namespace_finalizer, policy_status, resource_quota, role_aggregation, root_ca, service_accounts, token_secrets,
    };
    let mut running = Vec::new();
    if options.enable_namespace_finalizer {
        running.extend(namespace_finalizer::spawn(stages.clone(), catalogue.clone()));
    }
    if options.enable_serviceaccount_controller {
        running.extend(service_accounts::spawn(stages.clone(), catalogue.clone(), objects.clone()));
    }
    if options.enable_serviceaccount_token_controller {
        let controller = token_secrets::TokenSecrets {
            issuer: issuer.clone(),
            root_ca: serving_ca_pem.unwrap_or_default().to_string(),
            objects: objects.clone(),
        };
        running.extend(token_secrets::spawn(stages.clone(), catalogue.clone(), controller));
    }
    if options.enable_clusterrole_aggregation {
        running.extend(role_aggregation::spawn(stages.clone(), catalogue.clone()));
    }
    if options.enable_resourcequota_controller {
        running.extend(resource_quota::spawn(stages.clone(), catalogue.clone(), objects.clone()));
    }
    if options.enable_validating_admission_policy_status_controller {
        running.extend(policy_status::spawn(stages.clone(), catalogue.clone()));
    }
    // With a serving certificate of the user's and no CA of ours, there is nothing to publish.
    if let (true, Some(ca)) = (options.enable_root_ca_publisher, serving_ca_pem) {
        running.extend(root_ca::spawn(stages.clone(), catalogue.clone(), objects.clone(), ca.to_string()));
    }
    running
}

/// Creates what kube's bootstrap controller and post-start hooks create: the system
/// namespaces, the `kubernetes` service at the first address of the service range, and the
/// system priority classes.
async fn bootstrap(
    stages: &Stages,
    catalogue: &Catalogue,
    kubernetes_ip: String,
    lookup: &dyn ObjectLookup,
) -> Result<(), String> {
    let system = UserInfo {
        name: "system:apiserver".into(),
        uid: String::new(),
        groups: vec!["system:masters".into()],
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
                "clusterIP": kubernetes_ip,
                "ports": [{ "name": "https", "port": 443, "protocol": "TCP", "targetPort": 6443 }],
            },
        }),
    ));
    for (name, value, description) in validation::cluster::SYSTEM_PRIORITY_CLASSES {
        let target = Target {
            group: "scheduling.k8s.io".into(),
            version: "v1".into(),
            resource: "priorityclasses".into(),
            ..Default::default()
        };
        objects.push((target, json!({ "metadata": { "name": name }, "value": value, "description": description })));
    }
    for (target, object) in objects {
        // Created once: after a restart they exist (and the Service's address is taken).
        let existing =
            Target { name: object["metadata"]["name"].as_str().unwrap_or_default().into(), ..target.clone() };
        if stored(stages, catalogue, existing.clone()).await.is_some() {
            continue;
        }
        let create = CreateObject { target, object, user: system.clone(), options: WriteOptions::default() };
        match stages.create.ask(create, Deadline::after(BOOTSTRAP_TIMEOUT)).await {
            Ok(_) => {}
            Err(e) if e.reason == apimachinery::Reason::AlreadyExists => {}
            // Another replica starting at the same moment creates it first: its create can fail
            // otherwise than AlreadyExists (the Service's address is taken by the other's), and
            // the other's object lands a moment after its address is allocated.
            Err(e) => {
                if !appears(stages, catalogue, &existing).await {
                    return Err(format!("bootstrap: {}", e.message));
                }
            }
        }
    }
    reconcile_rbac(stages, catalogue, &system).await?;
    ensure_apf(stages, catalogue, &system, lookup).await
}

/// Whether the object at `target` is stored within a few seconds: written meanwhile by another
/// replica bootstrapping at the same moment.
async fn appears(stages: &Stages, catalogue: &Catalogue, target: &Target) -> bool {
    let until = Instant::now() + Duration::from_secs(5);
    while Instant::now() < until {
        if stored(stages, catalogue, target.clone()).await.is_some() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    false
}

/// The latest stored object at `target`, read through its resource's cacher, if any.
async fn stored(stages: &Stages, catalogue: &Catalogue, target: Target) -> Option<Value> {
    let def = target.resolve(catalogue).ok()?;
    let reads = stages.reads(&def).ok()?;
    let get = GetObject { target, options: GetOptions { read_at: ReadAt::Latest } };
    reads.reader.get(get).await.ok().map(|e| e.value())
}

/// Creates kube's mandatory and suggested APF objects, restores the mandatory ones and keeps
/// the suggested ones while their `apf.kubernetes.io/autoupdate-spec` annotation allows it
/// ([`flowcontrol::bootstrap::ensure`]). Run at start and every [`APF_UPKEEP`] after.
async fn ensure_apf(
    stages: &Stages,
    catalogue: &Catalogue,
    system: &UserInfo,
    lookup: &dyn ObjectLookup,
) -> Result<(), String> {
    use flowcontrol::bootstrap::{self, Ensure, Strategy};
    let target = |resource: &str| Target {
        group: "flowcontrol.apiserver.k8s.io".into(),
        version: "v1".into(),
        resource: resource.into(),
        ..Default::default()
    };
    let mut objects: Vec<(&str, Strategy, Value)> = Vec::new();
    let levels = "prioritylevelconfigurations";
    objects.extend(bootstrap::mandatory_priority_levels().into_iter().map(|o| (levels, Strategy::Mandatory, o)));
    objects.extend(bootstrap::suggested_priority_levels().into_iter().map(|o| (levels, Strategy::Suggested, o)));
    objects.extend(bootstrap::mandatory_flow_schemas().into_iter().map(|o| ("flowschemas", Strategy::Mandatory, o)));
    objects.extend(bootstrap::suggested_flow_schemas().into_iter().map(|o| ("flowschemas", Strategy::Suggested, o)));
    for (resource, strategy, wanted) in objects {
        let named = Target { name: wanted["metadata"]["name"].as_str().unwrap_or_default().into(), ..target(resource) };
        let existing = stored(stages, catalogue, named.clone()).await;
        let result = match bootstrap::ensure(&wanted, existing.as_ref(), strategy) {
            Ensure::LeaveAlone => Ok(()),
            Ensure::Create(object) => {
                let create = CreateObject {
                    target: target(resource),
                    object,
                    user: system.clone(),
                    options: WriteOptions::default(),
                };
                stages.create.ask(create, Deadline::after(BOOTSTRAP_TIMEOUT)).await.map(|_| ())
            }
            Ensure::Update(object) => {
                let update =
                    UpdateObject { target: named, object, user: system.clone(), options: WriteOptions::default() };
                stages.update.ask(update, Deadline::after(BOOTSTRAP_TIMEOUT)).await.map(|_| ())
            }
        };
        match result {
            Ok(()) => {}
            Err(e) if matches!(e.reason, apimachinery::Reason::AlreadyExists | apimachinery::Reason::Conflict) => {}
            Err(e) => return Err(format!("bootstrap APF configuration: {}", e.message)),
        }
    }
    mark_dangling(stages, system, lookup).await;
    Ok(())
}

/// Keeps each FlowSchema's `Dangling` condition, as kube's configuration controller does:
/// `False` (reason `Found`) while its priority level exists, `True` (`NotFound`) otherwise.
async fn mark_dangling(stages: &Stages, system: &UserInfo, objects: &dyn ObjectLookup) {
    let group = "flowcontrol.apiserver.k8s.io";
    let (Ok(schemas), Ok(levels)) = (
        objects.list(group, "flowschemas", "", "").await,
        objects.list(group, "prioritylevelconfigurations", "", "").await,
    ) else {
        return;
    };
    let level_names: Vec<&str> = levels.iter().filter_map(|l| l.pointer("/metadata/name")?.as_str()).collect();
    for mut schema in schemas {
        let level = schema.pointer("/spec/priorityLevelConfiguration/name").and_then(Value::as_str).unwrap_or("");
        let found = level_names.contains(&level);
        let (status, reason, message) = if found {
            (
                "False",
                "Found",
                format!(
                    "This FlowSchema references the PriorityLevelConfiguration object named {level:?} and it exists"
                ),
            )
        } else {
            (
                "True",
                "NotFound",
                format!(
                    "This FlowSchema references the PriorityLevelConfiguration object named {level:?} but there is no such object"
                ),
            )
        };
        let conditions = schema.pointer("/status/conditions").and_then(Value::as_array).cloned().unwrap_or_default();
        let current = conditions.iter().find(|c| c["type"] == "Dangling");
        if current.is_some_and(|c| c["status"] == status && c["reason"] == reason && c["message"] == message.as_str()) {
            continue;
        }
        let mut kept: Vec<Value> = conditions.into_iter().filter(|c| c["type"] != "Dangling").collect();
        let now = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
        kept.push(json!({"type": "Dangling", "status": status, "lastTransitionTime": now, "reason": reason, "message": message}));
        schema["status"] = json!({"conditions": kept});
        let name = schema.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("").to_string();
        let target = Target {
            group: group.into(),
            version: "v1".into(),
            resource: "flowschemas".into(),
            subresource: Some(apimachinery::catalogue::Subresource::Status),
            name,
            ..Default::default()
        };
        let update = UpdateObject { target, object: schema, user: system.clone(), options: WriteOptions::default() };
        // A conflict means someone else wrote it: the next pass looks again.
        let _ = stages.update.ask(update, Deadline::after(BOOTSTRAP_TIMEOUT)).await;
    }
}

/// Keeps the APF bootstrap objects as kube's configuration controller does.
fn spawn_apf_upkeep(stages: Stages, catalogue: Arc<Catalogue>, objects: Arc<dyn ObjectLookup>) -> AbortHandle {
    controllers::leader::spawn_stoppable(async move {
        let system =
            UserInfo { name: "system:apiserver".into(), groups: vec!["system:masters".into()], ..Default::default() };
        // Each pass reads every bootstrap object from storage; while neither resource changes
        // in the cache, a pass would find what the last one left, so one a minute (kube's
        // period) is enough.
        let mut kept = (None, 0);
        loop {
            actix::clock::sleep(APF_UPKEEP).await;
            let marks = apf_changes(objects.as_ref());
            if marks.is_some() && marks == kept.0 && kept.1 < APF_UPKEEP_SKIPS {
                kept.1 += 1;
                continue;
            }
            match ensure_apf(&stages, &catalogue, &system, objects.as_ref()).await {
                Ok(()) => kept = (marks, 0),
                Err(e) => tracing::warn!(error = %e, "APF configuration upkeep"),
            }
        }
    })
}

/// Where the cache's FlowSchemas and PriorityLevelConfigurations stand (`None` while either
/// cache is not ready): equal marks mean no object of either changed in between.
fn apf_changes(objects: &dyn ObjectLookup) -> Option<(u64, u64)> {
    let group = "flowcontrol.apiserver.k8s.io";
    Some((objects.changes(group, "flowschemas")?, objects.changes(group, "prioritylevelconfigurations")?))
}

/// Creates the bootstrap RBAC objects or reconciles them with what exists ([`auth::reconcile`]).
async fn reconcile_rbac(stages: &Stages, catalogue: &Catalogue, system: &UserInfo) -> Result<(), String> {
    use auth::reconcile::{self, Reconciled};
    let rbac = |resource: &str, namespace: &str| Target {
        group: "rbac.authorization.k8s.io".into(),
        version: "v1".into(),
        resource: resource.into(),
        namespace: namespace.into(),
        ..Default::default()
    };
    let namespace = |o: &Value| o.pointer("/metadata/namespace").and_then(Value::as_str).unwrap_or("").to_string();
    let mut objects: Vec<(Target, Value)> = Vec::new();
    objects.extend(auth::bootstrap::cluster_roles().into_iter().map(|r| (rbac("clusterroles", ""), r)));
    objects.extend(auth::bootstrap::cluster_role_bindings().into_iter().map(|b| (rbac("clusterrolebindings", ""), b)));
    objects.extend(auth::bootstrap::roles().into_iter().map(|r| (rbac("roles", &namespace(&r)), r)));
    objects.extend(auth::bootstrap::role_bindings().into_iter().map(|b| (rbac("rolebindings", &namespace(&b)), b)));
    let deadline = || Deadline::after(BOOTSTRAP_TIMEOUT);
    for (target, wanted) in objects {
        let named = Target { name: wanted["metadata"]["name"].as_str().unwrap_or_default().into(), ..target.clone() };
        let existing = stored(stages, catalogue, named.clone()).await;
        let decision = match &existing {
            None => None,
            Some(e) if target.resource.ends_with("bindings") => Some(reconcile::binding(e, &wanted)),
            Some(e) => Some(reconcile::role(e, &wanted)),
        };
        let result = match decision {
            Some(Reconciled::Unchanged) => Ok(()),
            Some(Reconciled::Update(object)) => {
                let update =
                    UpdateObject { target: named, object, user: system.clone(), options: WriteOptions::default() };
                stages.update.ask(update, deadline()).await.map(|_| ())
            }
            Some(Reconciled::Recreate) => {
                let delete = DeleteObject { target: named, user: system.clone(), options: DeleteOptions::default() };
                let create =
                    CreateObject { target, object: wanted, user: system.clone(), options: WriteOptions::default() };
                match stages.delete.ask(delete, deadline()).await {
                    Ok(_) => stages.create.ask(create, deadline()).await.map(|_| ()),
                    Err(e) => Err(e),
                }
            }
            None => {
                let create =
                    CreateObject { target, object: wanted, user: system.clone(), options: WriteOptions::default() };
                stages.create.ask(create, deadline()).await.map(|_| ())
            }
        };
        match result {
            Ok(()) => {}
            // Another replica reconciled it first.
            Err(e) if matches!(e.reason, apimachinery::Reason::AlreadyExists | apimachinery::Reason::Conflict) => {}
            Err(e) => return Err(format!("bootstrap RBAC: {}", e.message)),
        }
    }
    Ok(())
}
