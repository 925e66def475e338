//! The stages a write passes after the gateway, and the lookups they read with: the
//! authorization stage (admission asks it for permission checks), the admission stage and the
//! storage stage. A gateway and a storage stage process (`apiserver stage`) build them alike.

use std::sync::Arc;
use std::time::Duration;

use actors::{ActorDirectory, Deadline, MailboxSpec, StageArbiter, Started, WhenFull};
use admission::{AdmissionActor, PluginContext};
use apimachinery::catalogue::Catalogue;
use apimachinery::encoded::EncodedObject;
use apimachinery::error::ApiError;
use apimachinery::lookup::{AccessCheck, KindResource, LateWriter, ObjectLookup};
use apimachinery::messages::{AuthorizationDecision, Authorize, GetObject, ListObjects, Target};
use apimachinery::options::{GetOptions, ListOptions, ReadAt};
use apimachinery::request::{RequestInfo, UserInfo};
use apimachinery::selector::FieldSelector;
use async_trait::async_trait;
use auth::AuthorizationActor;
use cluster_ips::ServiceAllocators;
use registry::{RegistryStore, StorageActor};
use serde_json::Value;
use storage::router::StorageRouter;

use crate::config::ServeOptions;
use crate::status_writer::StageStatusWriter;
use stage_handles::Caches;

/// Looks namespaces up through the namespace cacher as kube's plugin uses its informer: the
/// cache first, and a consistent read only when the cache does not know the namespace (one
/// created a moment ago), so admission never waits on storage in the common case.
/// Single-object reads for admission and authentication, from the cachers' snapshots (a read
/// at the latest revision only when the snapshot lacks the object, so a just-created object is
/// seen).
pub(crate) struct CachedObjects {
    pub catalogue: Arc<Catalogue>,
    pub caches: Caches,
    /// Start the cacher of a resource looked up for the first time (a storage stage process
    /// caches only what its admission reads); a gateway runs every cacher from the start.
    pub on_demand: bool,
}

#[async_trait]
impl ObjectLookup for CachedObjects {
    async fn get(&self, group: &str, resource: &str, namespace: &str, name: &str) -> Result<Option<Value>, ApiError> {
        Ok(self.get_encoded(group, resource, namespace, name).await?.map(|o| o.value()))
    }

    async fn get_json(
        &self,
        group: &str,
        resource: &str,
        namespace: &str,
        name: &str,
    ) -> Result<Option<bytes::Bytes>, ApiError> {
        Ok(self.get_encoded(group, resource, namespace, name).await?.map(|o| o.json().clone()))
    }

    async fn list(&self, group: &str, resource: &str, namespace: &str, fields: &str) -> Result<Vec<Value>, ApiError> {
        self.list_at(group, resource, namespace, fields, ReadAt::Any).await
    }

    async fn list_json(
        &self,
        group: &str,
        resource: &str,
        namespace: &str,
        fields: &str,
    ) -> Result<Vec<bytes::Bytes>, ApiError> {
        let list = self.list_encoded(group, resource, namespace, fields, ReadAt::Any).await?;
        Ok(list.iter().map(|o| o.json().clone()).collect())
    }

    async fn list_latest(&self, group: &str, resource: &str, namespace: &str) -> Result<Vec<Value>, ApiError> {
        self.list_at(group, resource, namespace, "", ReadAt::Latest).await
    }

    fn changes(&self, group: &str, resource: &str) -> Option<u64> {
        let def = self.catalogue.find_any_version(group, resource)?;
        self.reads(&def)?.reader.changes()
    }

    fn resource_for_kind(&self, group: &str, version: &str, kind: &str) -> Option<KindResource> {
        let def = self.catalogue.find_kind(group, version, kind).filter(|d| d.stored())?;
        Some(KindResource { resource: def.resource.clone(), namespaced: def.namespaced })
    }
}

impl CachedObjects {
    /// The object as the cache holds it; a read at the latest revision when the cache lacks it.
    async fn get_encoded(
        &self,
        group: &str,
        resource: &str,
        namespace: &str,
        name: &str,
    ) -> Result<Option<EncodedObject>, ApiError> {
        let Some((def, reads)) = self.served(group, resource)? else { return Ok(None) };
        let target = Target::object(&def, namespace, name);
        for read_at in [ReadAt::Any, ReadAt::Latest] {
            match reads.reader.get(GetObject { target: target.clone(), options: GetOptions { read_at } }).await {
                Ok(object) => return Ok(Some(object)),
                Err(e) if e.reason == apimachinery::Reason::NotFound => continue,
                Err(e) => return Err(e),
            }
        }
        Ok(None)
    }

    /// The resource's definition and its cache's reads (`None`: not cached here); an error
    /// when the resource is not served.
    fn served(
        &self,
        group: &str,
        resource: &str,
    ) -> Result<Option<(Arc<apimachinery::catalogue::ResourceDef>, stage_handles::Reads)>, ApiError> {
        let Some(def) = self.catalogue.find_any_version(group, resource) else {
            return Err(ApiError::internal(format!("{resource}.{group} is not served")));
        };
        Ok(self.reads(&def).map(|reads| (def, reads)))
    }

    fn reads(&self, def: &Arc<apimachinery::catalogue::ResourceDef>) -> Option<stage_handles::Reads> {
        match self.on_demand {
            true => Some(self.caches.start(def.clone())),
            false => self.caches.get(&def.storage_path),
        }
    }

    async fn list_at(
        &self,
        group: &str,
        resource: &str,
        namespace: &str,
        fields: &str,
        read_at: ReadAt,
    ) -> Result<Vec<Value>, ApiError> {
        Ok(self.list_encoded(group, resource, namespace, fields, read_at).await?.iter().map(|o| o.value()).collect())
    }

    async fn list_encoded(
        &self,
        group: &str,
        resource: &str,
        namespace: &str,
        fields: &str,
        read_at: ReadAt,
    ) -> Result<Vec<EncodedObject>, ApiError> {
        let Some((def, reads)) = self.served(group, resource)? else { return Ok(Vec::new()) };
        let mut options = ListOptions { read_at, ..Default::default() };
        options.selection.fields = FieldSelector::parse(fields)?;
        let list = ListObjects { target: Target::collection(&def, namespace), options };
        Ok(reads.reader.list(list).await?.items)
    }
}

/// Admission's permission checks, asked of the authorization stage as any request is.
struct StageAccess(actors::StageHandle<Authorize>);

/// How long a permission check inside admission may take.
const ACCESS_CHECK_TIMEOUT: Duration = Duration::from_secs(10);

#[async_trait]
impl AccessCheck for StageAccess {
    async fn allowed(&self, user: &UserInfo, attributes: RequestInfo) -> Result<bool, ApiError> {
        Ok(self.decide(user, attributes).await?.allowed)
    }

    async fn decide(&self, user: &UserInfo, attributes: RequestInfo) -> Result<AuthorizationDecision, ApiError> {
        let ask = Authorize { user: user.clone(), request: attributes };
        Ok(self.0.ask(ask, Deadline::after(ACCESS_CHECK_TIMEOUT)).await?)
    }
}

/// The threads the write path's stages run on.
pub(crate) struct Arbiters<'a> {
    /// Authentication, authorization and flow control.
    pub front: &'a StageArbiter,
    /// The storage stage, admission (which only the storage stage asks, once or twice a
    /// write), and etcd's connections: a write and its admission cross no thread.
    pub storage: &'a StageArbiter,
}

/// The started write path.
pub(crate) struct WritePath {
    /// The authorizers the authorization stage decides with.
    pub authorizers: Arc<auth::authz::Authorizers>,
    /// The RBAC policy they read, fed from the RBAC cachers.
    pub policy: auth::SharedPolicy,
    /// The authorization stage.
    pub authorization: Started<AuthorizationActor>,
    /// The storage stage.
    pub storage: Started<StorageActor>,
}

/// Starts authorization, admission and the storage stage over `router`.
pub(crate) fn start_write_path(
    options: &ServeOptions,
    catalogue: &Arc<Catalogue>,
    router: &Arc<StorageRouter>,
    objects: &Arc<dyn ObjectLookup>,
    directory: &ActorDirectory,
    arbiters: &Arbiters<'_>,
) -> Result<WritePath, String> {
    let shed = WhenFull::Shed { wait: options.stage_mailbox_wait };
    let policy = auth::SharedPolicy::default();
    let escalation = admission::escalation::RbacEscalation(Arc::new(auth::escalation::EscalationCheck {
        modes: options.authorization_mode.0.clone(),
        policy: policy.clone(),
    }));
    let authorizers = authorizers(options, &policy, objects)?;
    let authorization = actors::start(
        arbiters.front,
        directory,
        &spec("authorization", "", options, shed),
        AuthorizationActor::new(authorizers.clone()),
    );
    let plugins = admission::enabled_plugins(&options.enable_admission_plugins, &options.disable_admission_plugins)?;
    // Plugins write through the storage stage, which starts with the chain's handle: bound below.
    let status_writer = LateWriter::default();
    let context = PluginContext {
        objects: objects.clone(),
        catalogue: catalogue.clone(),
        access: Arc::new(StageAccess(authorization.handle())),
        writer: Arc::new(status_writer.clone()),
        toleration_seconds: admission::tolerations::DefaultTolerationSeconds {
            not_ready_seconds: options.default_not_ready_toleration_seconds,
            unreachable_seconds: options.default_unreachable_toleration_seconds,
        },
        configuration: Arc::new(match &options.admission_control_config_file {
            Some(path) => admission::config::AdmissionConfiguration::load(path)?,
            None => admission::config::AdmissionConfiguration::default(),
        }),
    };
    let chain = admission::build_chain(&plugins, &context)?.first(Arc::new(escalation));
    tracing::info!(plugins = ?chain.names(), "admission chain");
    let admission =
        actors::start(arbiters.storage, directory, &spec("admission", "", options, shed), AdmissionActor::new(chain));

    let range = options.service_cluster_ip_range;
    let ports = options.service_node_port_range;
    let allocators = ServiceAllocators::new(range, ports, router.clone(), catalogue.clone(), &options.etcd_prefix);
    let cluster_ips = Arc::new(allocators);
    let store =
        RegistryStore::new(catalogue.clone(), router.clone(), &options.etcd_prefix, admission.handle(), cluster_ips)
            .with_event_ttl(options.event_ttl);
    let storage = actors::start(
        arbiters.storage,
        directory,
        &spec("storage", "", options, shed),
        StorageActor::new(Arc::new(store)),
    );
    status_writer.bind(Arc::new(StageStatusWriter { update: storage.handle(), catalogue: catalogue.clone() }));

    Ok(WritePath { authorizers, policy, authorization, storage })
}

pub(crate) fn spec(stage: &str, resource: &str, options: &ServeOptions, when_full: WhenFull) -> MailboxSpec {
    MailboxSpec {
        stage: stage.to_string(),
        resource: resource.to_string(),
        capacity: options.stage_mailbox_capacity,
        when_full,
    }
}

/// `--authorization-mode`'s authorizers.
fn authorizers(
    options: &ServeOptions,
    policy: &auth::SharedPolicy,
    objects: &Arc<dyn ObjectLookup>,
) -> Result<Arc<auth::authz::Authorizers>, String> {
    use auth::AuthorizationMode;
    let modes = options.authorization_mode.0.clone();
    let node =
        modes.contains(&AuthorizationMode::Node).then(|| Arc::new(auth::authz::NodeAuthorizer::new(objects.clone())));
    let webhook = match (modes.contains(&AuthorizationMode::Webhook), &options.authorization_webhook_config_file) {
        (false, _) => None,
        (true, None) => return Err("--authorization-mode=Webhook needs --authorization-webhook-config-file".into()),
        (true, Some(file)) => Some(Arc::new(auth::authz::WebhookAuthorizer::new(
            webhook_client::WebhookClient::from_kubeconfig(file)?,
            &options.authorization_webhook_version,
            options.authorization_webhook_cache_authorized_ttl,
            options.authorization_webhook_cache_unauthorized_ttl,
        ))),
    };
    Ok(Arc::new(auth::authz::Authorizers { modes, policy: policy.clone(), node, webhook }))
}
