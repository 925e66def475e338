//! API aggregation: what kube-aggregator does in front of kube-apiserver, for the group
//! versions whose APIService names a Service (a *remote* APIService, served by an extension
//! API server).
//!
//! - A request to `/apis/<group>/<version>[/...]` of a remote group version is passed on by
//!   [`proxy`] once the chain has authenticated, authorized and admitted it to flow control
//!   (no admission: the extension server admits its own writes), with the caller's identity
//!   in `X-Remote-*` headers. While the APIService is not `Available` the answer is 503.
//! - The controller that keeps the APIServices' `Available` condition
//!   (`availability`) probes backends with [`Aggregator::probe`], and fetches
//!   their discovery documents with [`Aggregator::fetch_discovery`] into [`discovery`]'s
//!   cache, which `/apis` is answered from: no discovery request ever waits on an extension
//!   server.
//! - [`Aggregator`] is the state the handlers and that controller share: the APIServices as
//!   last seen, the cached discovery of remote group versions, the client identity presented
//!   to backends, and a bounded queue asking the controller to look at an APIService again
//!   when a request failed to reach it.
//!
//! The rest of this module knows nothing of the handlers' state or of the controllers: the
//! chain and [`availability`] call it, never the other way round.

pub mod availability;
pub mod discovery;
pub mod proxy;

use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use apimachinery::lookup::{EndpointError, ObjectLookup};
use kinds::apiregistration::{ApiServiceSpec, Availability};
use serde_json::Value;
use tokio::sync::mpsc;
use webhook_client::{CallError, Trust, WebhookClient};

/// The identity the aggregator's own requests to backends carry (probes, discovery).
pub const AGGREGATOR_USER: &str = "system:kube-aggregator";

/// The group the aggregator's probes and aggregated discovery fetches carry besides
/// [`AGGREGATOR_USER`] (its legacy discovery fallback carries none).
const MASTERS: [(&str, &str); 1] = [("X-Remote-Group", "system:masters")];

/// How long a probe or a discovery fetch may take (kube's 5 s client timeout).
pub const BACKEND_CHECK_TIMEOUT: Duration = Duration::from_secs(5);

/// One APIService as the aggregator serves it.
pub struct ApiService {
    /// What it says.
    pub spec: ApiServiceSpec,
    /// Its `Available` condition is `True`, as stored: requests are passed on only then.
    pub available: bool,
    /// Its `Available` condition's reason and message, for the 503 a request gets meanwhile.
    pub condition: Option<(String, String)>,
    /// The TLS client passing requests to its backend (its `caBundle`, the Service's name, the
    /// proxy client certificate), built once per spec; why not, if it cannot be built.
    /// Unused for a local APIService.
    pub client: Result<WebhookClient, String>,
}

impl ApiService {
    fn new(obj: &Value, reused: Option<&ApiService>, client_cert: Option<&(Vec<u8>, Vec<u8>)>) -> ApiService {
        let spec = ApiServiceSpec::of(obj);
        let client = match reused.filter(|r| r.spec == spec) {
            Some(r) => r.client.clone(),
            None => match &spec.service {
                None => Err("a local APIService has no backend".into()),
                Some(svc) => WebhookClient::for_proxy(Trust {
                    ca_pem: (!spec.ca_bundle.is_empty()).then(|| spec.ca_bundle.clone()),
                    insecure: spec.insecure_skip_tls_verify,
                    server_name: Some(format!("{}.{}.svc", svc.name, svc.namespace)),
                    client_cert: client_cert.cloned(),
                }),
            },
        };
        let condition = kinds::apiregistration::available_condition(obj).map(|c| {
            let text = |k: &str| c.get(k).and_then(Value::as_str).unwrap_or("").to_string();
            (text("reason"), text("message"))
        });
        ApiService { available: kinds::apiregistration::is_available(obj), condition, spec, client }
    }

    /// Whether a backend serves it.
    pub fn is_remote(&self) -> bool {
        self.spec.service.is_some()
    }

    /// The path its group version's discovery document is at.
    pub fn discovery_path(&self) -> String {
        if self.spec.group.is_empty() {
            format!("/api/{}", self.spec.version)
        } else {
            format!("/apis/{}/{}", self.spec.group, self.spec.version)
        }
    }
}

/// The APIServices by name, and the remote ones by group and version (what every request
/// under `/apis/` is routed by), swapped whole on every change: a request clones the `Arc` and
/// reads without a lock.
#[derive(Default)]
pub struct Registry {
    by_name: HashMap<String, Arc<ApiService>>,
    /// Group, then version: looked up with borrowed strings.
    remote: HashMap<String, HashMap<String, Arc<ApiService>>>,
}

impl Registry {
    fn new(by_name: HashMap<String, Arc<ApiService>>) -> Registry {
        let mut remote: HashMap<String, HashMap<String, Arc<ApiService>>> = HashMap::new();
        for s in by_name.values().filter(|s| s.is_remote()) {
            remote.entry(s.spec.group.clone()).or_default().insert(s.spec.version.clone(), s.clone());
        }
        Registry { by_name, remote }
    }

    /// The remote APIService serving `group`/`version`, if one does.
    pub fn remote(&self, group: &str, version: &str) -> Option<Arc<ApiService>> {
        self.remote.get(group)?.get(version).cloned()
    }

    /// Every remote APIService.
    pub fn remotes(&self) -> impl Iterator<Item = &Arc<ApiService>> {
        self.remote.values().flat_map(HashMap::values)
    }

    /// An APIService by name.
    pub fn get(&self, name: &str) -> Option<Arc<ApiService>> {
        self.by_name.get(name).cloned()
    }
}

/// What the aggregator's flags say.
#[derive(Clone, Default)]
pub struct AggregatorOptions {
    /// `--proxy-client-cert-file` and `--proxy-client-key-file`, read (PEM).
    pub client_cert: Option<(Vec<u8>, Vec<u8>)>,
    /// `--aggregator-reject-forwarding-redirects`: a backend's redirect becomes a 502.
    pub reject_redirects: bool,
}

/// What the proxy, discovery and the APIService controller share.
pub struct Aggregator {
    /// The APIServices as the controller last saw them. A `std` lock held only to clone or
    /// swap the `Arc`, never across an await.
    registry: RwLock<Arc<Registry>>,
    /// Remote group versions' resources, fetched by the controller, read by `/apis`.
    pub discovery: discovery::DiscoveryCache,
    /// The flags.
    pub options: AggregatorOptions,
    /// Reads Services and Endpoints (from the cachers) to find a backend's address.
    objects: Arc<dyn ObjectLookup>,
    /// Probes skip verifying the backend, as kube's do, and present the proxy certificate:
    /// one client for all.
    probe_client: Result<WebhookClient, String>,
    /// Asks the controller to probe an APIService now: a request just failed to reach its
    /// backend. Bounded; when full, probes are due anyway and the request is dropped.
    recheck: mpsc::Sender<String>,
}

/// The receiving end of [`Aggregator`]'s requests to probe an APIService again.
pub type Rechecks = mpsc::Receiver<String>;

/// How many "probe this again" requests wait for the controller before more are dropped.
const RECHECK_QUEUE: usize = 64;

impl Aggregator {
    /// The shared state, and the queue the controller reads rechecks from.
    pub fn new(objects: Arc<dyn ObjectLookup>, options: AggregatorOptions) -> (Aggregator, Rechecks) {
        let (recheck, rechecks) = mpsc::channel(RECHECK_QUEUE);
        let probe_client = WebhookClient::for_proxy(Trust {
            insecure: true,
            client_cert: options.client_cert.clone(),
            ..Default::default()
        });
        let aggregator = Aggregator {
            registry: RwLock::default(),
            discovery: discovery::DiscoveryCache::default(),
            options,
            objects,
            probe_client,
            recheck,
        };
        (aggregator, rechecks)
    }

    /// The APIServices now.
    pub fn registry(&self) -> Arc<Registry> {
        self.registry.read().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }

    /// Records an APIService as stored (added or changed).
    pub fn apply(&self, obj: &Value) {
        let name = obj.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("").to_string();
        let mut guard = self.registry.write().unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut by_name = guard.by_name.clone();
        let service = ApiService::new(obj, by_name.get(&name).map(Arc::as_ref), self.options.client_cert.as_ref());
        by_name.insert(name, Arc::new(service));
        *guard = Arc::new(Registry::new(by_name));
    }

    /// Forgets a deleted APIService.
    pub fn remove(&self, name: &str) {
        let mut guard = self.registry.write().unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut by_name = guard.by_name.clone();
        if let Some(gone) = by_name.remove(name) {
            self.discovery.remove(&gone.spec.group, &gone.spec.version);
        }
        *guard = Arc::new(Registry::new(by_name));
    }

    /// The remote APIService a request path is for: `/apis/<group>/<version>` or below.
    pub fn route(&self, path: &str) -> Option<Arc<ApiService>> {
        let rest = path.strip_prefix("/apis/")?;
        let mut parts = rest.split('/');
        let (group, version) = (parts.next()?, parts.next()?);
        if group.is_empty() || version.is_empty() {
            return None;
        }
        self.registry().remote(group, version)
    }

    /// Asks the controller to probe `name` now; dropped when its queue is full.
    pub fn recheck(&self, name: &str) {
        let _ = self.recheck.try_send(name.to_string());
    }

    /// `host:port` of an endpoint of `service`'s backend.
    async fn endpoint(&self, service: &ApiService) -> Result<String, EndpointError> {
        let Some(svc) = &service.spec.service else {
            return Err(EndpointError::Lookup("a local APIService has no backend".into()));
        };
        apimachinery::lookup::service_endpoint(self.objects.as_ref(), &svc.namespace, &svc.name, svc.port).await
    }

    /// kube's availability check of a remote APIService: its Service, port and endpoints, then
    /// `GET /apis/<group>/<version>` at an endpoint answering 2xx within 5 s. Must run on an
    /// actix runtime thread.
    pub async fn probe(&self, service: &ApiService) -> Availability {
        let Some(svc) = &service.spec.service else { return Availability::local() };
        let (ns, name) = (&svc.namespace, &svc.name);
        let down = |reason: &'static str, message: String| Availability { status: "False", reason, message };
        let endpoint = match self.endpoint(service).await {
            Ok(e) => e,
            Err(e) => {
                return match e {
                    EndpointError::ServiceNotFound(_) => {
                        down("ServiceNotFound", format!("service/{name} in {ns:?} is not present"))
                    }
                    EndpointError::NoServicePort { port, .. } => {
                        down("ServicePortError", format!("service/{name} in {ns:?} is not listening on port {port}"))
                    }
                    EndpointError::EndpointsNotFound(_) => {
                        down("EndpointsNotFound", format!("cannot find endpoints for service/{name} in {ns:?}"))
                    }
                    EndpointError::NoAddresses { port_name, .. } => down(
                        "MissingEndpoints",
                        format!(
                            "endpoints for service/{name} in {ns:?} have no addresses with port name {port_name:?}"
                        ),
                    ),
                    EndpointError::Lookup(why) => Availability {
                        status: "Unknown",
                        reason: "ServiceAccessError",
                        message: format!("service/{name} in {ns:?} cannot be checked due to: {why}"),
                    },
                };
            }
        };
        let url = format!("https://{endpoint}{}", service.discovery_path());
        let outcome = match &self.probe_client {
            Ok(client) => backend_get(client, &url, "application/json", &MASTERS, BACKEND_CHECK_TIMEOUT).await,
            Err(e) => Err(e.clone()),
        };
        match outcome {
            Ok(answer) if (200..300).contains(&answer.status) => {
                Availability { status: "True", reason: "Passed", message: "all checks passed".into() }
            }
            Ok(answer) => down(
                "FailedDiscoveryCheck",
                format!("failing or missing response from {url}: bad status from {url}: {}", answer.status),
            ),
            Err(e) => down("FailedDiscoveryCheck", format!("failing or missing response from {url}: {e}")),
        }
    }

    /// The resources `service`'s backend serves in its group version, as aggregated discovery
    /// lists them: from the backend's aggregated `/apis` when it serves one, else converted
    /// from its `/apis/<group>/<version>`. Must run on an actix runtime thread.
    pub async fn fetch_discovery(&self, service: &ApiService) -> Result<Vec<Value>, String> {
        let endpoint = self.endpoint(service).await.map_err(|e| e.to_string())?;
        let client = service.client.as_ref().map_err(Clone::clone)?;
        let (group, version) = (&service.spec.group, &service.spec.version);
        let url = format!("https://{endpoint}/apis");
        let answer = backend_get(client, &url, discovery::AGGREGATED_ACCEPT, &MASTERS, BACKEND_CHECK_TIMEOUT).await?;
        if answer.status == 200 && discovery::is_aggregated(&answer.content_type) {
            return discovery::from_aggregated(&answer.body, group, version);
        }
        let url = format!("https://{endpoint}{}", service.discovery_path());
        let answer = backend_get(client, &url, "application/json", &[], BACKEND_CHECK_TIMEOUT).await?;
        if answer.status != 200 {
            return Err(format!("bad status from {url}: {}", answer.status));
        }
        discovery::from_resource_list(&answer.body, group, version)
    }
}

/// What a backend answered the aggregator's own request.
struct BackendAnswer {
    status: u16,
    content_type: String,
    body: bytes::Bytes,
}

/// The largest body the aggregator reads for itself (discovery documents).
const MAX_BACKEND_BODY: usize = 16 << 20;

/// `GET url` as [`AGGREGATOR_USER`] (with `headers` besides), redirects not followed, the whole
/// exchange bounded by `timeout`; errors in Go's words as kube quotes them (`Get "<url>": ...`).
async fn backend_get(
    client: &WebhookClient,
    url: &str,
    accept: &str,
    headers: &[(&str, &str)],
    timeout: Duration,
) -> Result<BackendAnswer, String> {
    let mut request = client
        .http()
        .get(url)
        .timeout(timeout)
        .insert_header(("Accept", accept))
        .insert_header(("X-Remote-User", AGGREGATOR_USER));
    for header in headers {
        request = request.append_header(*header);
    }
    let exchange = async {
        let mut response = request.send().await.map_err(|e| webhook_client::send_error(url, &e))?;
        let body = response.body().limit(MAX_BACKEND_BODY).await.map_err(|e| CallError::Failed(e.to_string()))?;
        let content_type =
            response.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or("").to_string();
        Ok(BackendAnswer { status: response.status().as_u16(), content_type, body })
    };
    let timed_out =
        || format!("Get {url:?}: net/http: request canceled (Client.Timeout exceeded while awaiting headers)");
    match tokio::time::timeout(timeout, exchange).await {
        Err(_) | Ok(Err(CallError::DeadlineExceeded)) => Err(timed_out()),
        Ok(Err(CallError::Failed(e))) => Err(format!("Get {url:?}: {e}")),
        Ok(Ok(answer)) => Ok(answer),
    }
}
