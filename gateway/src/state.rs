//! What every request handler shares: the handles to the stages and the server's own state.
//! Only the composition root (`server`) builds these; handlers only read them.

use std::sync::Arc;
use std::time::Instant;

use actors::ActorDirectory;
use apimachinery::catalogue::Catalogue;
use metrics_exporter_prometheus::PrometheusHandle;
use storage::faults::Faults;
use storage::router::StorageRouter;

pub use stage_handles::Stages;

use crate::config::ServeOptions;

/// State shared by every request handler.
pub struct ServerState {
    /// Stage handles.
    pub stages: Stages,
    /// The served resources.
    pub catalogue: Arc<Catalogue>,
    /// What a `create` of an action subresource or resource runs (binding, eviction).
    pub actions: apimachinery::action::Actions,
    /// The custom resources' OpenAPI documents, kept by the CRD controller.
    pub openapi: crate::openapi::CustomOpenApi,
    /// The authorizers the authorization stage decides with, for the access reviews.
    pub authorizers: Arc<auth::authz::Authorizers>,
    /// Records audit events, when `--audit-policy-file` and a backend are given.
    pub auditor: Option<auth::audit::Auditor>,
    /// Signs ServiceAccount tokens and publishes the keys that verify them.
    pub tokens: Arc<auth::serviceaccount::TokenIssuer>,
    /// Flags.
    pub options: ServeOptions,
    /// Renders `/metrics`.
    pub metrics: PrometheusHandle,
    /// The storage backends, for health checks and compaction.
    pub router: Arc<StorageRouter>,
    /// Injected storage faults, when `--enable-fault-injection` allows them.
    pub faults: Option<Arc<Faults>>,
    /// Which axis is at fault, judged every second (`/debug/axes` on the admin port), unless
    /// `--diagnosis=false`.
    pub diagnosis: Option<Arc<diagnosis::Diagnosis>>,
    /// Every live actor, for the admin endpoint.
    pub directory: ActorDirectory,
    /// `host:port` clients reach us at.
    pub address: String,
    /// When the server started.
    pub started: Instant,
    /// The APF configuration requests are classified by.
    pub apf: flowcontrol::SharedConfig,
    /// What the APF stage shows of itself (kube's debug dumps).
    pub apf_view: flowcontrol::FlowControlView,
    /// Where exempt requests hold their seat: they never ask the APF stage, but their demand
    /// counts in its borrowing.
    pub apf_exempt: flowcontrol::ExemptSeats,
    /// The APIServices, remote groups' cached discovery, and how requests reach extension
    /// servers.
    pub aggregator: Arc<crate::aggregator::Aggregator>,
    /// The storage stages other processes run (`--stage-topology`), shown with their health.
    pub remotes: crate::topology::RemoteStages,
    /// How kubelets are reached (`--kubelet-client-certificate`, `--kubelet-certificate-authority`).
    pub kubelet_tls: Arc<rustls::ClientConfig>,
    /// Where the shutdown sequence stands, and the requests it waits for.
    pub lifecycle: Arc<crate::lifecycle::Lifecycle>,
}
