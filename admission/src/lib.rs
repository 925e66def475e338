//! The admission stage.
//!
//! Every write reaches [`AdmissionActor`] with the object as it would be stored (for updates and
//! patches, after the change is applied to the current object, as kube admits inside its
//! update loop). Plugins are small traits registered by name and run in the configured order;
//! each may change the object (mutating) or refuse it (validating).
//!
//! # Layout
//! - [`AdmissionPlugin`], [`AdmissionChain`], [`build_chain`]: the plugin contract and registry.
//! - [`namespace_lifecycle`]: kube's `NamespaceLifecycle`: no new objects in a missing or
//!   terminating namespace; the system namespaces cannot be deleted.
//! - [`pod_security`]: the pure core of kube's `PodSecurity`: the Pod Security Standards checks,
//!   namespace labels, and the decisions and messages for pods, pod controllers and namespaces.
//! - [`service_account`]: kube's `ServiceAccount`: pods run as an existing ServiceAccount and
//!   get its token volume.

use std::sync::Arc;

use actix::{Actor, Context};
use actors::{Deadline, StageHandler, Work};
use apimachinery::error::ApiError;
use apimachinery::lookup::ObjectLookup;
use apimachinery::messages::Admit;
use async_trait::async_trait;
use serde_json::Value;

pub mod namespace_lifecycle;
pub mod pod_security;
pub mod service_account;

/// One admission plugin.
#[async_trait]
pub trait AdmissionPlugin: Send + Sync {
    /// The name it is enabled by (`--enable-admission-plugins`).
    fn name(&self) -> &'static str;
    /// Admits `request`, returning the (possibly changed) object or the refusal.
    async fn admit(&self, request: &Admit, object: Value) -> Result<Value, ApiError>;
}

/// What plugins are built from.
#[derive(Clone)]
pub struct PluginContext {
    /// Reads of the objects plugins consult (namespaces, ServiceAccounts), from the cachers.
    pub objects: Arc<dyn ObjectLookup>,
}

/// Plugins enabled when no flag says otherwise.
pub const DEFAULT_PLUGINS: &[&str] = &["NamespaceLifecycle", "ServiceAccount"];

/// Builds the chain for `names`, in that order; unknown names are an error naming them.
pub fn build_chain(names: &[String], ctx: &PluginContext) -> Result<AdmissionChain, String> {
    let mut plugins: Vec<Arc<dyn AdmissionPlugin>> = Vec::new();
    for name in names {
        let plugin: Arc<dyn AdmissionPlugin> = match name.as_str() {
            "NamespaceLifecycle" => Arc::new(namespace_lifecycle::NamespaceLifecycle::new(ctx.objects.clone())),
            "ServiceAccount" => Arc::new(service_account::ServiceAccount::new(ctx.objects.clone())),
            other => return Err(format!("unknown admission plugin: {other}")),
        };
        plugins.push(plugin);
    }
    Ok(AdmissionChain { plugins })
}

/// Plugins in order.
#[derive(Clone, Default)]
pub struct AdmissionChain {
    plugins: Vec<Arc<dyn AdmissionPlugin>>,
}

impl AdmissionChain {
    /// Runs every plugin in order; the first refusal wins.
    pub async fn admit(&self, request: Admit) -> Result<Value, ApiError> {
        let mut object = request.object.clone();
        for p in &self.plugins {
            object = p.admit(&request, object).await?;
        }
        Ok(object)
    }

    /// The chain with `plugin` run before the others (checks kube makes in its storage layer,
    /// ahead of admission proper).
    pub fn first(mut self, plugin: Arc<dyn AdmissionPlugin>) -> Self {
        self.plugins.insert(0, plugin);
        self
    }

    /// The plugin names, in order.
    pub fn names(&self) -> Vec<&'static str> {
        self.plugins.iter().map(|p| p.name()).collect()
    }
}

/// The admission stage actor.
pub struct AdmissionActor {
    /// Shared with the admissions in flight, each a future that outlives the handler call.
    chain: Arc<AdmissionChain>,
}

impl AdmissionActor {
    /// An actor running `chain`.
    pub fn new(chain: AdmissionChain) -> Self {
        AdmissionActor { chain: Arc::new(chain) }
    }
}

impl Actor for AdmissionActor {
    type Context = Context<Self>;
}

/// The chain runs as a future on the stage's arbiter: the stage's slot is held until it
/// answers, and it is dropped (a webhook call with it) when the request's deadline passes.
impl StageHandler<Admit> for AdmissionActor {
    fn handle(&mut self, msg: Admit, _: Deadline, _: &mut Context<Self>) -> Work<Self, Result<Value, ApiError>> {
        let chain = self.chain.clone();
        Work::later(async move { chain.admit(msg).await })
    }
}

actors::stage_handler!(AdmissionActor => Admit);
