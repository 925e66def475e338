//! The admission stage.
//!
//! The storage stage asks twice per write, as kube's handlers do: the mutating phase
//! ([`AdmissionPhase::Mutating`]) over the object as the client made it, before the kind's
//! strategy prepares and validates it; then the validating phase over the prepared, validated
//! object, just before it is stored. For updates and patches both run inside the update loop
//! over the changed current object, so a conflict that makes the loop retry admits again.
//!
//! Plugins are registered by kube's names and always run in kube's order
//! ([`ORDERED_PLUGINS`]), whatever order the flags name them in: built-in plugins first, then
//! the webhooks and policies, then `ResourceQuota`, which must see the final object.
//!
//! # Layout
//! - [`AdmissionPlugin`], [`Review`], [`AdmissionChain`], [`build_chain`]: the plugin
//!   contract, what plugins note beside their decision, the chain and the registry by name.
//! - [`namespace_lifecycle`]: kube's `NamespaceLifecycle`: no new objects in a missing or
//!   terminating namespace; the system namespaces cannot be deleted.
//! - [`limit_ranger`]: kube's `LimitRanger`: LimitRange defaults for pods' containers, and
//!   their min, max and ratio bounds on pods and claims.
//! - [`resource_quota`]: kube's `ResourceQuota`: writes charged to the namespace's quotas,
//!   refused past them.
//! - [`pod_security`]: the pure core of kube's `PodSecurity`: the Pod Security Standards checks,
//!   namespace labels, and the decisions and messages for pods, pod controllers and namespaces.
//! - [`service_account`]: kube's `ServiceAccount`: pods run as an existing ServiceAccount and
//!   get its token volume.
//! - [`webhooks`]: kube's `MutatingAdmissionWebhook` and `ValidatingAdmissionWebhook`.
//! - [`policy`]: kube's `ValidatingAdmissionPolicy`: CEL validations bound to requests.
//! - [`config`]: `--admission-control-config-file`, each plugin's own configuration.
//! - [`matching`]: the rules and selectors webhooks and policies are matched to requests by.
//! - [`versions`]: the served version a webhook or policy sees a request in (`matchPolicy`).
//! - [`cel`]: CEL in admission (policies, match conditions), with kube's authorizer library
//!   answered by the server's authorizers.
//! - [`priority`]: kube's `Priority`: `priorityClassName` becomes `priority` and
//!   `preemptionPolicy`; one global default.
//! - [`runtime_class`]: kube's `RuntimeClass`: the class's overhead and scheduling constraints.
//! - [`tolerations`]: kube's `DefaultTolerationSeconds` and `TaintNodesByCondition`.
//! - [`escalation`]: RBAC escalation prevention, first in the chain, asking the auth stage's
//!   check.
//! - [`default_class`]: kube's `DefaultStorageClass` and `DefaultIngressClass`.
//! - [`volumes`]: kube's `StorageObjectInUseProtection` and `PersistentVolumeClaimResize`.
//! - [`certificates`]: kube's `CertificateApproval`, `CertificateSigning` and
//!   `CertificateSubjectRestriction`.
//! - `attributes`: what kube's `admission.NewForbidden` makes of a plugin's refusal.
//! - `live_lookup`: kube's live lookup: an empty cached answer (no LimitRanges, no quotas)
//!   checked against storage, then trusted for a while.
//! - `testing` (tests only): objects to look up and requests to admit.
//!
//! CEL expressions compile and run in [`kube_cel`], which validation shares.

use std::sync::{Arc, OnceLock};
use std::time::Instant;

use actix::{Actor, Context};
use actors::{Deadline, StageHandler, Work};
use apimachinery::error::ApiError;
use apimachinery::lookup::{AccessCheck, ObjectLookup, ObjectWriter};
use apimachinery::messages::{AdmissionPhase, Admit, Admitted, Operation};
use async_trait::async_trait;
use serde_json::Value;

use crate::metrics::{ADMISSION_CONTROLLER_ADMISSION_DURATION_SECONDS, ADMISSION_STEP_ADMISSION_DURATION_SECONDS};

mod attributes;
pub mod cel;
pub mod certificates;
pub mod config;
pub mod default_class;
pub mod escalation;
pub mod limit_ranger;
mod live_lookup;
pub mod matching;
pub mod metrics;
pub mod namespace_lifecycle;
mod namespaces;
pub mod pod_security;
pub mod policy;
pub mod priority;
pub mod resource_quota;
pub mod runtime_class;
pub mod service_account;
#[cfg(test)]
mod testing;
pub mod tolerations;
pub mod versions;
pub mod volumes;
pub mod webhooks;

/// What plugins say beside their decision, gathered over a request's phase.
#[derive(Debug, Default)]
pub struct Review {
    /// `Warning` headers for the client.
    pub warnings: Vec<String>,
    /// Annotations for the request's audit event.
    pub audit_annotations: Vec<(String, String)>,
    /// Set on the second run of the mutating plugins (kube's reinvocation).
    pub reinvoking: bool,
    /// Set by a plugin (the mutating webhooks) that wants the mutating plugins run once more
    /// because the object changed after a webhook asking for reinvocation had seen it.
    pub reinvoke: bool,
    /// The request's deadline, for plugins that bound their own work by it.
    pub deadline: Deadline,
    /// What the mutating webhooks remember between the two runs.
    pub rounds: webhooks::Rounds,
}

/// One admission plugin. A plugin mutates, validates, or both; kube runs every mutating step
/// of the chain before any validating one.
///
/// Futures need not be `Send`: the chain runs on the admission stage's own arbiter, and the
/// webhook plugins' HTTP client is bound to its thread.
#[async_trait(?Send)]
pub trait AdmissionPlugin: Send + Sync {
    /// The name it is enabled by (`--enable-admission-plugins`).
    fn name(&self) -> &'static str;

    /// Whether [`AdmissionPlugin::mutate`] does anything.
    fn mutates(&self) -> bool {
        false
    }

    /// Whether [`AdmissionPlugin::validate`] does anything.
    fn validates(&self) -> bool {
        false
    }

    /// May change `object`; an error refuses the request. The chain has moved the request's
    /// object into `object`, so `request.object` is null here.
    async fn mutate(&self, request: &Admit, object: &mut Value, review: &mut Review) -> Result<(), ApiError> {
        let _ = (request, object, review);
        Ok(())
    }

    /// Looks at the final `object`; an error refuses the request.
    async fn validate(&self, request: &Admit, object: &Value, review: &mut Review) -> Result<(), ApiError> {
        let _ = (request, object, review);
        Ok(())
    }
}

/// What plugins are built from.
#[derive(Clone)]
pub struct PluginContext {
    /// Reads of the objects plugins consult (namespaces, ServiceAccounts), from the cachers.
    pub objects: Arc<dyn ObjectLookup>,
    /// The served resources: webhooks and policies see a request in a served version
    /// ([`versions`]).
    pub catalogue: Arc<apimachinery::catalogue::Catalogue>,
    /// The server's authorizers, for plugins that check a permission beyond the request's
    /// own (the certificate plugins ask about signers).
    pub access: Arc<dyn AccessCheck>,
    /// Status writes to other objects (quota charges), through the storage stage.
    pub writer: Arc<dyn ObjectWriter>,
    /// `DefaultTolerationSeconds`' settings.
    pub toleration_seconds: tolerations::DefaultTolerationSeconds,
    /// Plugins' own configuration (`--admission-control-config-file`): `PodSecurity` reads
    /// its defaults and exemptions from it.
    pub configuration: Arc<config::AdmissionConfiguration>,
}

/// Whether `request` writes `resource.group` itself, not a subresource of it.
pub(crate) fn on(request: &Admit, group: &str, resource: &str) -> bool {
    let t = &request.target;
    t.subresource.is_none() && t.resource == resource && t.group == group
}

/// kube 1.30's plugin order (`AllOrderedPlugins`), cut to the plugins that apply to a server
/// with no nodes of its own, with whether kube enables each by default. The chain runs enabled
/// plugins in this order.
pub const ORDERED_PLUGINS: &[(&str, bool)] = &[
    ("NamespaceLifecycle", true),
    ("LimitRanger", true),
    ("ServiceAccount", true),
    ("TaintNodesByCondition", true),
    ("PodSecurity", true),
    ("Priority", true),
    ("DefaultTolerationSeconds", true),
    ("DefaultStorageClass", true),
    ("StorageObjectInUseProtection", true),
    ("PersistentVolumeClaimResize", true),
    ("RuntimeClass", true),
    ("CertificateApproval", true),
    ("CertificateSigning", true),
    ("CertificateSubjectRestriction", true),
    ("DefaultIngressClass", true),
    ("MutatingAdmissionWebhook", true),
    ("ValidatingAdmissionPolicy", true),
    ("ValidatingAdmissionWebhook", true),
    ("ResourceQuota", true),
];

/// kube's plugins this server does not build; naming them is refused with a clear message
/// rather than as unknown.
const NOT_BUILT: &[&str] = &[
    "AlwaysAdmit",
    "AlwaysDeny",
    "AlwaysPullImages",
    "NamespaceAutoProvision",
    "NamespaceExists",
    "LimitPodHardAntiAffinityTopology",
    "NodeRestriction",
    "ImagePolicyWebhook",
    "PodNodeSelector",
    "PodTolerationRestriction",
    "EventRateLimit",
    "ExtendedResourceToleration",
    "OwnerReferencesPermissionEnforcement",
    "ClusterTrustBundleAttest",
    "DenyServiceExternalIPs",
];

/// The plugins kube would run for `--enable-admission-plugins=enable` (added to the defaults)
/// and `--disable-admission-plugins=disable` (taken from them), in kube's order.
pub fn enabled_plugins(enable: &[String], disable: &[String]) -> Result<Vec<&'static str>, String> {
    for name in enable.iter().chain(disable) {
        if NOT_BUILT.contains(&name.as_str()) {
            return Err(format!("admission plugin {name:?} is not built into this server"));
        }
        if !ORDERED_PLUGINS.iter().any(|(n, _)| n == name) {
            return Err(format!("unknown admission plugin: {name}"));
        }
    }
    if let Some(both) = enable.iter().find(|n| disable.contains(n)) {
        return Err(format!("{both} in enable-admission-plugins and disable-admission-plugins overlapped"));
    }
    Ok(ORDERED_PLUGINS
        .iter()
        .filter(|(name, on)| (*on || enable.iter().any(|e| e == name)) && !disable.iter().any(|d| d == name))
        .map(|(name, _)| *name)
        .collect())
}

/// The plugins enabled when no flag says otherwise, in order.
pub fn default_plugins() -> Vec<&'static str> {
    ORDERED_PLUGINS.iter().filter(|(_, on)| *on).map(|(n, _)| *n).collect()
}

/// Builds the chain for `names` (from [`enabled_plugins`]), in kube's order.
pub fn build_chain(names: &[&str], ctx: &PluginContext) -> Result<AdmissionChain, String> {
    let mut plugins: Vec<Arc<dyn AdmissionPlugin>> = Vec::new();
    for (name, _) in ORDERED_PLUGINS.iter().filter(|(n, _)| names.contains(n)) {
        let plugin: Arc<dyn AdmissionPlugin> = match *name {
            "NamespaceLifecycle" => Arc::new(namespace_lifecycle::NamespaceLifecycle::new(ctx.objects.clone())),
            "LimitRanger" => Arc::new(limit_ranger::LimitRanger::new(ctx.objects.clone())),
            "ServiceAccount" => Arc::new(service_account::ServiceAccount::new(ctx.objects.clone())),
            "TaintNodesByCondition" => Arc::new(tolerations::TaintNodesByCondition),
            "PodSecurity" => {
                let config = match ctx.configuration.plugin("PodSecurity") {
                    Some(c) => pod_security::decision::Config::from_configuration(c)
                        .map_err(|e| format!("PodSecurity configuration: {e}"))?,
                    None => pod_security::decision::Config::default(),
                };
                Arc::new(pod_security::plugin::PodSecurity::with_config(ctx.objects.clone(), config))
            }
            "Priority" => Arc::new(priority::Priority::new(ctx.objects.clone())),
            "DefaultTolerationSeconds" => Arc::new(ctx.toleration_seconds.clone()),
            "DefaultStorageClass" => Arc::new(default_class::DefaultStorageClass::new(ctx.objects.clone())),
            "StorageObjectInUseProtection" => Arc::new(volumes::StorageObjectInUseProtection),
            "PersistentVolumeClaimResize" => Arc::new(volumes::PersistentVolumeClaimResize::new(ctx.objects.clone())),
            "RuntimeClass" => Arc::new(runtime_class::RuntimeClass::new(ctx.objects.clone())),
            "CertificateApproval" => Arc::new(certificates::CertificateApproval::new(ctx.access.clone())),
            "CertificateSigning" => Arc::new(certificates::CertificateSigning::new(ctx.access.clone())),
            "CertificateSubjectRestriction" => Arc::new(certificates::CertificateSubjectRestriction),
            "DefaultIngressClass" => Arc::new(default_class::DefaultIngressClass::new(ctx.objects.clone())),
            "MutatingAdmissionWebhook" => Arc::new(webhooks::WebhookPlugin::new(
                webhooks::config::HookKind::Mutating,
                ctx.objects.clone(),
                ctx.catalogue.clone(),
                ctx.access.clone(),
            )),
            "ValidatingAdmissionPolicy" => Arc::new(policy::ValidatingAdmissionPolicy::new(
                ctx.objects.clone(),
                ctx.catalogue.clone(),
                ctx.access.clone(),
            )),
            "ValidatingAdmissionWebhook" => Arc::new(webhooks::WebhookPlugin::new(
                webhooks::config::HookKind::Validating,
                ctx.objects.clone(),
                ctx.catalogue.clone(),
                ctx.access.clone(),
            )),
            "ResourceQuota" => {
                let limited = match ctx.configuration.plugin("ResourceQuota") {
                    Some(c) => {
                        resource_quota::limited_resources(c).map_err(|e| format!("ResourceQuota configuration: {e}"))?
                    }
                    None => Vec::new(),
                };
                Arc::new(resource_quota::ResourceQuota::with_limited(ctx.objects.clone(), ctx.writer.clone(), limited))
            }
            other => return Err(format!("unknown admission plugin: {other}")),
        };
        plugins.push(plugin);
    }
    Ok(AdmissionChain { plugins: plugins.into_iter().map(Step::new).collect() })
}

/// Plugins in order.
#[derive(Clone, Default)]
pub struct AdmissionChain {
    plugins: Vec<Step>,
}

/// A plugin and its duration histograms.
#[derive(Clone)]
struct Step {
    plugin: Arc<dyn AdmissionPlugin>,
    durations: PluginDurations,
}

impl Step {
    fn new(plugin: Arc<dyn AdmissionPlugin>) -> Self {
        Step { plugin, durations: PluginDurations::default() }
    }
}

/// One plugin's `apiserver_admission_controller_admission_duration_seconds` histograms, by
/// type, operation and whether it rejected, each registered on its first use. A write records
/// some 25 of them; building each one's key and looking it up per call showed in profiles.
#[derive(Clone)]
struct PluginDurations([OnceLock<::metrics::Histogram>; 12]);

impl Default for PluginDurations {
    fn default() -> Self {
        PluginDurations(std::array::from_fn(|_| OnceLock::new()))
    }
}

impl PluginDurations {
    fn record(&self, name: &'static str, op: Operation, kind: &'static str, rejected: bool, begun: Instant) {
        let of_op = match op {
            Operation::Create => 0,
            Operation::Update => 1,
            Operation::Delete => 2,
        };
        let slot = (usize::from(kind == "validate") * 3 + of_op) * 2 + usize::from(rejected);
        let histogram = self.0[slot].get_or_init(|| {
            ::metrics::histogram!(ADMISSION_CONTROLLER_ADMISSION_DURATION_SECONDS,
                "name" => name, "operation" => operation_label(op), "rejected" => if rejected { "true" } else { "false" },
                "type" => kind)
        });
        histogram.record(begun.elapsed().as_secs_f64());
    }
}

/// kube's operation label values.
pub(crate) fn operation_label(op: Operation) -> &'static str {
    match op {
        Operation::Create => "CREATE",
        Operation::Update => "UPDATE",
        Operation::Delete => "DELETE",
    }
}

impl AdmissionChain {
    /// Runs the request's phase: every mutating plugin in order (once more if one asks for
    /// reinvocation), or every validating plugin in order; the first refusal wins.
    pub async fn admit(&self, mut request: Admit, deadline: Deadline) -> Result<Admitted, ApiError> {
        let started = Instant::now();
        let mut review = Review { deadline, ..Review::default() };
        let phase = request.phase;
        let (result, object) = match phase {
            AdmissionPhase::Mutating => {
                // Moved, not copied: plugins mutate `object`, and on refusal it is dropped.
                let mut object = std::mem::take(&mut request.object);
                let mut result = self.mutate_once(&request, &mut object, &mut review).await;
                if result.is_ok() && review.reinvoke {
                    review.reinvoking = true;
                    review.reinvoke = false;
                    result = self.mutate_once(&request, &mut object, &mut review).await;
                }
                (result, Some(object))
            }
            AdmissionPhase::Validating => {
                let mut result = Ok(());
                for step in self.plugins.iter().filter(|s| s.plugin.validates()) {
                    let (p, begun) = (&step.plugin, Instant::now());
                    result = p.validate(&request, &request.object, &mut review).await;
                    step.durations.record(p.name(), request.operation, "validate", result.is_err(), begun);
                    if result.is_err() {
                        break;
                    }
                }
                // What was validated is returned as it is: moved out below, not copied.
                (result, None)
            }
        };
        let kind = if phase == AdmissionPhase::Mutating { "admit" } else { "validate" };
        let subresource = request.target.subresource.map(|s| s.name()).unwrap_or("");
        ::metrics::histogram!(ADMISSION_STEP_ADMISSION_DURATION_SECONDS,
            "operation" => operation_label(request.operation), "rejected" => result.is_err().to_string(),
            "resource" => request.target.resource.clone(), "subresource" => subresource, "type" => kind)
        .record(started.elapsed().as_secs_f64());
        result?;
        let object = object.unwrap_or_else(|| std::mem::take(&mut request.object));
        Ok(Admitted { object, warnings: review.warnings, audit_annotations: review.audit_annotations })
    }

    async fn mutate_once(&self, request: &Admit, object: &mut Value, review: &mut Review) -> Result<(), ApiError> {
        for step in self.plugins.iter().filter(|s| s.plugin.mutates()) {
            let (p, begun) = (&step.plugin, Instant::now());
            let result = p.mutate(request, object, review).await;
            step.durations.record(p.name(), request.operation, "admit", result.is_err(), begun);
            result?;
        }
        Ok(())
    }

    /// The chain with `plugin` run before the others (checks kube makes in its storage layer,
    /// ahead of admission proper).
    pub fn first(mut self, plugin: Arc<dyn AdmissionPlugin>) -> Self {
        self.plugins.insert(0, Step::new(plugin));
        self
    }

    /// The plugin names, in order.
    pub fn names(&self) -> Vec<&'static str> {
        self.plugins.iter().map(|s| s.plugin.name()).collect()
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
    fn handle(
        &mut self,
        msg: Admit,
        deadline: Deadline,
        _: &mut Context<Self>,
    ) -> Work<Self, Result<Admitted, ApiError>> {
        let chain = self.chain.clone();
        Work::later(async move { chain.admit(msg, deadline).await })
    }
}

actors::stage_handler!(AdmissionActor => Admit);

#[cfg(test)]
mod tests {
    use super::*;

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn flags_add_to_and_take_from_the_defaults_in_kubes_order() {
        assert_eq!(enabled_plugins(&[], &[]).unwrap(), default_plugins());
        let without = enabled_plugins(&[], &names(&["NamespaceLifecycle", "PodSecurity"])).unwrap();
        let mut expected = default_plugins();
        expected.retain(|n| *n != "NamespaceLifecycle" && *n != "PodSecurity");
        assert_eq!(without, expected);
        assert_eq!(without[..3], ["LimitRanger", "ServiceAccount", "TaintNodesByCondition"], "kube's order");
        assert_eq!(
            enabled_plugins(&names(&["ServiceAccount", "NamespaceLifecycle"]), &[]).unwrap(),
            default_plugins(),
            "the flag's order does not matter"
        );
        assert_eq!(enabled_plugins(&names(&["Bogus"]), &[]).unwrap_err(), "unknown admission plugin: Bogus");
        assert!(enabled_plugins(&names(&["AlwaysPullImages"]), &[]).unwrap_err().contains("not built"));
        assert!(
            enabled_plugins(&names(&["ServiceAccount"]), &names(&["ServiceAccount"]))
                .unwrap_err()
                .contains("overlapped")
        );
    }
}
