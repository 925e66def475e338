//! Calling out to webhooks over HTTPS.
//!
//! A client for webhooks configured by a kubeconfig file, as kube's
//! `--audit-webhook-config-file`, `--authentication-token-webhook-config-file` and
//! `--authorization-webhook-config-file` configure them.
//!
//! The current context (or, without one, the only cluster and user) gives the URL (`server`),
//! how the server is trusted (`certificate-authority`, `certificate-authority-data`, or
//! `insecure-skip-tls-verify`; with none of them the public webpki roots), and how the client
//! proves itself (`client-certificate`/`client-key` or their `-data` forms, a `token` or
//! `tokenFile`, or `username`/`password`). Relative paths are read from the kubeconfig's
//! directory, as client-go resolves them. Files are read once, when the client is built.
//!
//! # Trust
//! A CA bundle (`certificate-authority`, a `caBundle`) is trusted as Go's `crypto/x509` trusts
//! its roots: a server certificate that is itself in the bundle is accepted as it is, whatever
//! its basic constraints say (the self-signed CA:TRUE certificate `openssl req -x509` makes),
//! and any other must chain to the bundle. Names, validity and handshake signatures are
//! checked either way; see the `verify` module. Every call-out of the server (admission,
//! conversion, token and audit webhooks, the aggregator's proxy, OIDC discovery) is made by
//! this crate, so they all trust alike; only etcd's client has TLS of its own.
//!
//! # Threads
//! awc's client is `!Send`: it must be built and used on a thread running an actix (tokio
//! `LocalSet`) runtime, such as an actix arbiter (inside an actor) or an actix-web worker
//! (inside a handler). [`WebhookClient`] itself is `Send + Sync` and cheap to clone: it holds
//! the parsed configuration, and [`WebhookClient::post_json`] uses an awc client kept per
//! thread (per actix `System` on that thread), so calls from one thread reuse connections.
//!
//! # Layout
//! - this module: [`WebhookClient`] (kubeconfig files, `caBundle`s, calls and their errors) and
//!   [`Trust`].
//! - `verify`: server certificates checked against a CA bundle as Go's `crypto/x509` checks them.
//! - `testing` (feature `testing`): a plain-HTTP test server for the callers' unit tests.

use std::cell::RefCell;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use base64::Engine;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::WebPkiSupportedAlgorithms;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};
use serde::{Deserialize, Deserializer};
use serde_json::Value;

#[cfg(any(test, feature = "test-util"))]
pub mod testing;
mod verify;

/// The largest response body read, so a misbehaving webhook cannot exhaust memory.
const MAX_RESPONSE_BYTES: usize = 10 << 20;

/// Distinguishes clients in the per-thread cache of awc clients.
static NEXT_ID: AtomicU64 = AtomicU64::new(0);

/// A webhook endpoint read from a kubeconfig file. `Send + Sync`; clones share the
/// configuration. See the module documentation for the threads it may be used on.
#[derive(Clone)]
pub struct WebhookClient {
    target: Arc<Target>,
}

struct Target {
    /// Keys this target's awc client in each thread's cache.
    id: u64,
    server: String,
    /// `None`: awc's default TLS setup (the public webpki roots, no client certificate).
    tls: Option<Arc<rustls::ClientConfig>>,
    /// The `Authorization` header value, if the user has credentials besides a certificate.
    authorization: Option<String>,
    /// Built for passing requests on ([`WebhookClient::for_proxy`]): redirects are not
    /// followed, and there is no default timeout or header.
    proxy: bool,
}

impl std::fmt::Debug for WebhookClient {
    /// Shows the server only: credentials stay out of logs.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebhookClient").field("server", &self.target.server).finish_non_exhaustive()
    }
}

thread_local! {
    /// awc clients built on this thread, for the actix `System` whose id is kept beside them:
    /// a client's connections belong to the runtime it was built on, so a new `System` on the
    /// same thread (tests run one per test) starts afresh.
    static CLIENTS: RefCell<(usize, HashMap<u64, awc::Client>)> = RefCell::new((usize::MAX, HashMap::new()));
}

/// Why a call got no answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CallError {
    /// The timeout passed first (kube reports it as `context deadline exceeded`).
    DeadlineExceeded,
    /// The connection, TLS or HTTP exchange failed, as the transport said.
    Failed(String),
}

/// Where a webhook configured by a Kubernetes `clientConfig` (admission webhooks, CRD
/// conversion webhooks) is reached.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Endpoint {
    /// `clientConfig.url`.
    Url(String),
    /// `clientConfig.service`, resolved to one of the Service's endpoints per call.
    Service {
        /// The Service's namespace.
        namespace: String,
        /// The Service's name.
        name: String,
        /// The path to post to (`/` when unset).
        path: String,
        /// The Service port (443 when unset).
        port: i64,
    },
}

/// A `clientConfig` (`url` or `service`, and `caBundle`) read as kube's webhook clients read
/// it: the endpoint, and a client trusting the bundle (or the public roots) that checks a
/// Service's certificate for `<name>.<namespace>.svc` whatever address is dialled.
pub fn from_client_config(cc: &Value) -> (Endpoint, Result<WebhookClient, String>) {
    let ca = cc
        .get("caBundle")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(|b| base64::engine::general_purpose::STANDARD.decode(b).map_err(|e| format!("caBundle: {e}")))
        .transpose();
    match cc.get("service").filter(|s| s.is_object()) {
        Some(svc) => {
            let text = |k: &str| svc.get(k).and_then(Value::as_str).unwrap_or("").to_string();
            let (namespace, name) = (text("namespace"), text("name"));
            let verify = format!("{name}.{namespace}.svc");
            let client = ca.and_then(|ca| WebhookClient::for_endpoints(ca, Some(verify)));
            let path = svc.get("path").and_then(Value::as_str).unwrap_or("/").to_string();
            let port = svc.get("port").and_then(Value::as_i64).unwrap_or(443);
            (Endpoint::Service { namespace, name, path, port }, client)
        }
        None => {
            let url = cc.get("url").and_then(Value::as_str).unwrap_or("").to_string();
            (Endpoint::Url(url), ca.and_then(|ca| WebhookClient::for_endpoints(ca, None)))
        }
    }
}

impl WebhookClient {
    /// Reads the kubeconfig at `path` and the files it names.
    pub fn from_kubeconfig(path: &Path) -> Result<WebhookClient, String> {
        let resolved = resolve(path)?;
        let tls = tls_config(&resolved).map_err(|e| format!("{}: {e}", path.display()))?;
        let target = Target {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            server: resolved.server,
            tls,
            authorization: resolved.authorization,
            proxy: false,
        };
        Ok(WebhookClient { target: Arc::new(target) })
    }

    /// A client for `server` (an `https://` URL) trusting `ca_pem`, or the public roots without
    /// one: what `--oidc-issuer-url` and `--oidc-ca-file` configure.
    pub fn for_server(server: &str, ca_pem: Option<Vec<u8>>) -> Result<WebhookClient, String> {
        let resolved = Resolved { server: server.to_string(), ca_pem, ..Default::default() };
        let tls = tls_config(&resolved)?;
        Ok(Self::with_tls(resolved.server, tls, false))
    }

    fn with_tls(server: String, tls: Option<Arc<rustls::ClientConfig>>, proxy: bool) -> WebhookClient {
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        WebhookClient { target: Arc::new(Target { id, server, tls, authorization: None, proxy }) }
    }

    /// A client for URLs given per call ([`WebhookClient::post_json_to`]), trusting `ca_pem`
    /// (an admission webhook's `caBundle`) or, without one, the public roots. With
    /// `verify_name`, the server certificate must be valid for that name whatever address is
    /// dialled: a webhook reached through its Service's endpoints presents a certificate for
    /// `<service>.<namespace>.svc`, as kube checks it.
    pub fn for_endpoints(ca_pem: Option<Vec<u8>>, verify_name: Option<String>) -> Result<WebhookClient, String> {
        let resolved = Resolved { ca_pem, verify_name, ..Default::default() };
        Ok(Self::with_tls(String::new(), tls_config(&resolved)?, false))
    }

    /// A client for requests passed on as they came, to URLs given per request: the
    /// aggregator's proxy and its availability probes. TLS is as `trust` says; redirects are
    /// not followed (the caller decides what a redirect means), and there is no default
    /// timeout or header (the caller sets each request's). Streamed through
    /// [`WebhookClient::http`].
    pub fn for_proxy(trust: Trust) -> Result<WebhookClient, String> {
        // Skipping verification makes the roots and the name moot.
        let (ca_pem, verify_name) = if trust.insecure { (None, None) } else { (trust.ca_pem, trust.server_name) };
        let resolved = Resolved {
            ca_pem,
            verify_name,
            insecure: trust.insecure,
            client_cert: trust.client_cert,
            ..Default::default()
        };
        Ok(Self::with_tls(String::new(), tls_config(&resolved)?, true))
    }

    /// The TLS configuration requests are made with (`None`: awc's default), for connections
    /// awc cannot make: upgraded streams relayed byte for byte.
    pub fn tls_config(&self) -> Option<Arc<rustls::ClientConfig>> {
        self.target.tls.clone()
    }

    /// This thread's pooled awc client for the target, for requests the helpers here do not
    /// cover (streamed bodies). Must be used on the thread it was taken on.
    pub fn http(&self) -> awc::Client {
        self.awc_client()
    }

    /// GETs `url` (on the same trust as the server) and returns the status and the JSON body
    /// (`Value::Null` when not JSON). Must run on an actix runtime thread.
    pub async fn get_json(&self, url: &str, timeout: Duration) -> Result<(u16, Value), String> {
        let client = self.awc_client();
        let request = client.get(url).timeout(timeout).insert_header(("Accept", "application/json"));
        let exchange = async {
            let mut response = request.send().await.map_err(|e| e.to_string())?;
            let bytes = response.body().limit(MAX_RESPONSE_BYTES).await.map_err(|e| e.to_string())?;
            Ok::<_, String>((response.status().as_u16(), serde_json::from_slice(&bytes).unwrap_or(Value::Null)))
        };
        tokio::time::timeout(timeout, exchange)
            .await
            .map_err(|_| format!("Get {url:?}: timed out after {timeout:?}"))?
            .map_err(|e| format!("Get {url:?}: {e}"))
    }

    /// The URL requests are posted to.
    pub fn server(&self) -> &str {
        &self.target.server
    }

    /// POSTs `body` as JSON to the server URL, with the bearer token if any, and returns the
    /// status code and the response body parsed as JSON (`Value::Null` when the body is empty
    /// or not JSON: callers that need a body check its shape). `timeout` bounds the whole
    /// exchange, body included. Must run on an actix runtime thread (see the module docs).
    pub async fn post_json(&self, body: &Value, timeout: Duration) -> Result<(u16, Value), String> {
        let server = self.target.server.clone();
        self.post_json_to(&server, body, timeout).await.map_err(|e| match e {
            CallError::DeadlineExceeded => format!("Post {server:?}: timed out after {timeout:?}"),
            CallError::Failed(e) => format!("Post {server:?}: {e}"),
        })
    }

    /// POSTs `body` as JSON to `url` (an admission webhook's URL, or an endpoint of its
    /// Service) on this client's trust and credentials; see [`WebhookClient::post_json`].
    pub async fn post_json_to(&self, url: &str, body: &Value, timeout: Duration) -> Result<(u16, Value), CallError> {
        let client = self.awc_client();
        let mut request = client
            .post(url)
            .timeout(timeout)
            .insert_header(("Accept", "application/json"))
            .insert_header(("Content-Type", "application/json"));
        if let Some(auth) = &self.target.authorization {
            request = request.insert_header(("Authorization", auth.as_str()));
        }
        let payload = serde_json::to_vec(body).map_err(|e| CallError::Failed(e.to_string()))?;
        let exchange = async {
            let mut response = request.send_body(payload).await.map_err(|e| send_error(url, &e))?;
            let bytes =
                response.body().limit(MAX_RESPONSE_BYTES).await.map_err(|e| CallError::Failed(e.to_string()))?;
            Ok((response.status().as_u16(), serde_json::from_slice(&bytes).unwrap_or(Value::Null)))
        };
        tokio::time::timeout(timeout, exchange).await.map_err(|_| CallError::DeadlineExceeded)?
    }

    /// This thread's awc client for the target, built on first use.
    fn awc_client(&self) -> awc::Client {
        let Some(system) = actix::System::try_current() else { return build_awc(&self.target) };
        CLIENTS.with(|cache| {
            let mut cache = cache.borrow_mut();
            if cache.0 != system.id() {
                *cache = (system.id(), HashMap::new());
            }
            cache.1.entry(self.target.id).or_insert_with(|| build_awc(&self.target)).clone()
        })
    }
}

/// Why a request to `url` got no response, in Go's words where kube quotes them (see
/// [`connect_error`]).
pub fn send_error(url: &str, e: &awc::error::SendRequestError) -> CallError {
    match e {
        awc::error::SendRequestError::Timeout => CallError::DeadlineExceeded,
        awc::error::SendRequestError::Connect(awc::error::ConnectError::Io(e)) => {
            CallError::Failed(connect_error(url, e))
        }
        e => CallError::Failed(e.to_string()),
    }
}

/// A failed connection or TLS handshake in Go's words where they are well known (`dial tcp
/// 127.0.0.1:8443: connect: connection refused`, `tls: failed to verify certificate: x509:
/// certificate signed by unknown authority`), as kube's errors quote them after the URL;
/// other TLS failures keep rustls's words after `tls: ` (see [`verify::go_words`]).
fn connect_error(url: &str, e: &std::io::Error) -> String {
    if let Some(tls) = e.get_ref().and_then(|inner| inner.downcast_ref::<rustls::Error>()) {
        return verify::go_words(tls);
    }
    let address = url
        .parse::<awc::http::Uri>()
        .ok()
        .and_then(|uri| {
            let host = uri.host()?.to_string();
            let port = uri.port_u16().unwrap_or(if uri.scheme_str() == Some("http") { 80 } else { 443 });
            Some(format!("{host}:{port}"))
        })
        .unwrap_or_default();
    match e.kind() {
        std::io::ErrorKind::ConnectionRefused => format!("dial tcp {address}: connect: connection refused"),
        _ => format!("dial tcp {address}: {e}"),
    }
}

fn build_awc(target: &Target) -> awc::Client {
    let connector = match &target.tls {
        Some(config) => awc::Connector::new().rustls_0_23(config.clone()),
        None => awc::Connector::new(),
    };
    let builder = awc::Client::builder().connector(connector);
    if target.proxy {
        builder.disable_redirects().disable_timeout().no_default_headers().finish()
    } else {
        builder.finish()
    }
}

/// How a server dialled by address is trusted and how the client proves itself: kube's
/// `rest.TLSClientConfig` as the aggregator builds it for an APIService.
#[derive(Clone, Debug, Default)]
pub struct Trust {
    /// PEM roots to trust (an APIService's `caBundle`).
    pub ca_pem: Option<Vec<u8>>,
    /// Accept any server certificate (`insecureSkipTLSVerify`).
    pub insecure: bool,
    /// The name the server certificate must be valid for, whatever address is dialled
    /// (`<service>.<namespace>.svc`).
    pub server_name: Option<String>,
    /// PEM certificate chain and key presented to the server (`--proxy-client-cert-file`).
    pub client_cert: Option<(Vec<u8>, Vec<u8>)>,
}

/// What a kubeconfig says about one endpoint, files read and data decoded.
#[derive(Debug, Default, PartialEq, Eq)]
struct Resolved {
    server: String,
    /// PEM roots to trust instead of the public ones.
    ca_pem: Option<Vec<u8>>,
    insecure: bool,
    /// PEM certificate chain and key.
    client_cert: Option<(Vec<u8>, Vec<u8>)>,
    authorization: Option<String>,
    /// The name the server certificate must be valid for, instead of the dialled host.
    verify_name: Option<String>,
}

/// YAML's `key:` (null) reads as the field's empty value, as client-go leaves it.
fn null_as_default<'de, D: Deserializer<'de>, T: Default + Deserialize<'de>>(d: D) -> Result<T, D::Error> {
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

#[derive(Deserialize, Default)]
struct Kubeconfig {
    #[serde(default, deserialize_with = "null_as_default")]
    clusters: Vec<Named<Cluster>>,
    #[serde(default, deserialize_with = "null_as_default")]
    users: Vec<Named<User>>,
    #[serde(default, deserialize_with = "null_as_default")]
    contexts: Vec<Named<Context>>,
    #[serde(default, rename = "current-context", deserialize_with = "null_as_default")]
    current_context: String,
}

/// A named entry; the body's key (`cluster`, `user`, `context`) depends on the list.
#[derive(Deserialize)]
struct Named<T> {
    name: String,
    #[serde(alias = "cluster", alias = "user", alias = "context")]
    body: T,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
struct Cluster {
    #[serde(default, deserialize_with = "null_as_default")]
    server: String,
    #[serde(default, deserialize_with = "null_as_default")]
    certificate_authority: String,
    #[serde(default, deserialize_with = "null_as_default")]
    certificate_authority_data: String,
    #[serde(default, deserialize_with = "null_as_default")]
    insecure_skip_tls_verify: bool,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
struct User {
    #[serde(default, deserialize_with = "null_as_default")]
    client_certificate: String,
    #[serde(default, deserialize_with = "null_as_default")]
    client_certificate_data: String,
    #[serde(default, deserialize_with = "null_as_default")]
    client_key: String,
    #[serde(default, deserialize_with = "null_as_default")]
    client_key_data: String,
    #[serde(default, deserialize_with = "null_as_default")]
    token: String,
    #[serde(default, rename = "tokenFile", deserialize_with = "null_as_default")]
    token_file: String,
    #[serde(default, deserialize_with = "null_as_default")]
    username: String,
    #[serde(default, deserialize_with = "null_as_default")]
    password: String,
    #[serde(default)]
    exec: Option<Value>,
    #[serde(default)]
    auth_provider: Option<Value>,
}

#[derive(Deserialize, Default)]
struct Context {
    #[serde(default, deserialize_with = "null_as_default")]
    cluster: String,
    #[serde(default, deserialize_with = "null_as_default")]
    user: String,
}

/// Reads the kubeconfig and picks the endpoint: the current context's cluster and user, or the
/// only ones.
fn resolve(path: &Path) -> Result<Resolved, String> {
    let fail = |msg: String| format!("{}: {msg}", path.display());
    let text = std::fs::read_to_string(path).map_err(|e| fail(e.to_string()))?;
    let config: Kubeconfig = serde_yaml_ng::from_str(&text).map_err(|e| fail(e.to_string()))?;
    let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    let (cluster_name, user_name) = selected(&config).map_err(fail)?;
    let cluster = &config
        .clusters
        .iter()
        .find(|c| c.name == cluster_name)
        .ok_or_else(|| fail(format!("cluster {cluster_name:?} not found")))?
        .body;
    if cluster.server.is_empty() {
        return Err(fail(format!("no server found for cluster {cluster_name:?}")));
    }
    let ca = &cluster.certificate_authority;
    let ca_pem = data_or_file(&cluster.certificate_authority_data, ca, &dir, "certificate-authority").map_err(fail)?;
    if cluster.insecure_skip_tls_verify && ca_pem.is_some() {
        return Err(fail("specifying a root certificates file with the insecure flag is not allowed".into()));
    }
    let mut resolved = Resolved {
        server: cluster.server.clone(),
        ca_pem,
        insecure: cluster.insecure_skip_tls_verify,
        ..Default::default()
    };
    if !user_name.is_empty() {
        let user = &config
            .users
            .iter()
            .find(|u| u.name == user_name)
            .ok_or_else(|| fail(format!("user {user_name:?} not found")))?
            .body;
        (resolved.client_cert, resolved.authorization) =
            credentials(user, &dir).map_err(|e| fail(format!("user {user_name:?}: {e}")))?;
    }
    Ok(resolved)
}

/// The names of the cluster and user (empty for none) the kubeconfig selects.
fn selected(config: &Kubeconfig) -> Result<(String, String), String> {
    if config.current_context.is_empty() {
        return match (config.clusters.as_slice(), config.users.as_slice()) {
            ([c], [u]) => Ok((c.name.clone(), u.name.clone())),
            ([c], []) => Ok((c.name.clone(), String::new())),
            _ => Err("no current-context, and not exactly one cluster and at most one user".into()),
        };
    }
    let ctx = config
        .contexts
        .iter()
        .find(|c| c.name == config.current_context)
        .ok_or_else(|| format!("context {:?} not found", config.current_context))?;
    Ok((ctx.body.cluster.clone(), ctx.body.user.clone()))
}

/// A client certificate (chain and key, PEM) and an `Authorization` header value.
type Credentials = (Option<(Vec<u8>, Vec<u8>)>, Option<String>);

/// A user's credentials; a token (or token file) wins over a user name and password.
fn credentials(user: &User, dir: &Path) -> Result<Credentials, String> {
    if user.exec.is_some() || user.auth_provider.is_some() {
        return Err("exec and auth-provider credentials are not supported".into());
    }
    let cert = data_or_file(&user.client_certificate_data, &user.client_certificate, dir, "client-certificate")?;
    let key = data_or_file(&user.client_key_data, &user.client_key, dir, "client-key")?;
    let client_cert = match (cert, key) {
        (Some(c), Some(k)) => Some((c, k)),
        (None, None) => None,
        _ => return Err("client-certificate and client-key must be given together".into()),
    };
    let token = match (user.token.as_str(), user.token_file.as_str()) {
        ("", "") => String::new(),
        ("", file) => {
            let f = local_path(dir, file);
            std::fs::read_to_string(&f).map_err(|e| format!("tokenFile {}: {e}", f.display()))?.trim().to_string()
        }
        (token, _) => token.to_string(),
    };
    let authorization = if !token.is_empty() {
        Some(format!("Bearer {token}"))
    } else if !user.username.is_empty() {
        let pair = format!("{}:{}", user.username, user.password);
        Some(format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(pair)))
    } else {
        None
    };
    Ok((client_cert, authorization))
}

/// A path from the kubeconfig, relative to its directory unless absolute.
fn local_path(dir: &Path, p: &str) -> PathBuf {
    let p = Path::new(p);
    if p.is_absolute() { p.to_path_buf() } else { dir.join(p) }
}

/// The `-data` field (base64) if set, else the file it names, else nothing.
fn data_or_file(data: &str, file: &str, dir: &Path, what: &str) -> Result<Option<Vec<u8>>, String> {
    if !data.is_empty() {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(data.trim())
            .map_err(|e| format!("{what}-data is not base64: {e}"))?;
        return Ok(Some(bytes));
    }
    if file.is_empty() {
        return Ok(None);
    }
    let f = local_path(dir, file);
    std::fs::read(&f).map(Some).map_err(|e| format!("{what} {}: {e}", f.display()))
}

/// The rustls configuration for a resolved endpoint; `None` when awc's defaults (the public
/// roots, no client certificate) fit.
fn tls_config(r: &Resolved) -> Result<Option<Arc<rustls::ClientConfig>>, String> {
    if r.ca_pem.is_none() && !r.insecure && r.client_cert.is_none() && r.verify_name.is_none() {
        return Ok(None);
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let algorithms = provider.signature_verification_algorithms;
    let verifier_provider = provider.clone();
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?;
    let builder = match &r.ca_pem {
        Some(pem) => {
            let name = match &r.verify_name {
                Some(n) => Some(ServerName::try_from(n.clone()).map_err(|e| format!("{n}: {e}"))?),
                None => None,
            };
            let verifier = verify::BundleVerifier::new(pem, name, verifier_provider)?;
            builder.dangerous().with_custom_certificate_verifier(Arc::new(verifier))
        }
        None if r.verify_name.is_some() => {
            return Err("a server reached through a Service needs a caBundle".into());
        }
        None if r.insecure => {
            builder.dangerous().with_custom_certificate_verifier(Arc::new(SkipServerVerification(algorithms)))
        }
        // Public roots with a client certificate: webpki-roots is not reachable from here.
        None => {
            return Err("a client certificate needs certificate-authority (or insecure-skip-tls-verify): \
                        the public roots are used only without one"
                .into());
        }
    };
    let mut config = match &r.client_cert {
        Some((cert, key)) => {
            let chain = CertificateDer::pem_slice_iter(cert)
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| format!("client-certificate: {e}"))?;
            let key = PrivateKeyDer::from_pem_slice(key).map_err(|e| format!("client-key: {e}"))?;
            builder.with_client_auth_cert(chain, key).map_err(|e| format!("client certificate: {e}"))?
        }
        None => builder.with_no_client_auth(),
    };
    // HTTP/1.1 only: webhook servers are plain request/response endpoints.
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Some(Arc::new(config)))
}

/// `insecure-skip-tls-verify`: any server certificate is accepted, but handshake signatures are
/// still checked, so the session is at least with the certificate's key holder.
#[derive(Debug)]
struct SkipServerVerification(WebPkiSupportedAlgorithms);

impl ServerCertVerifier for SkipServerVerification {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.0)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.0)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use std::net::TcpListener;

    use crate::testing::serve;

    use serde_json::json;

    use super::*;

    fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    fn b64(b: &[u8]) -> String {
        base64::engine::general_purpose::STANDARD.encode(b)
    }

    #[test]
    fn the_current_context_picks_cluster_and_user_and_paths_are_relative() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "ca.crt", "CA PEM");
        write(dir.path(), "token", "s3cret\n");
        let kc = write(
            dir.path(),
            "kc.yaml",
            "apiVersion: v1\nkind: Config\nclusters:\n- name: other\n  cluster: {server: https://other}\n\
             - name: audit\n  cluster:\n    server: https://audit.example:8443/events\n    certificate-authority: ca.crt\n\
             users:\n- name: u\n  user:\n    tokenFile: token\n- name: v\n  user: {token: nope}\n\
             contexts:\n- name: c\n  context: {cluster: audit, user: u}\ncurrent-context: c\n",
        );
        let r = resolve(&kc).unwrap();
        assert_eq!(r.server, "https://audit.example:8443/events");
        assert_eq!(r.ca_pem.as_deref(), Some(&b"CA PEM"[..]));
        assert_eq!(r.authorization.as_deref(), Some("Bearer s3cret"));
        assert!(!r.insecure && r.client_cert.is_none());
    }

    #[test]
    fn without_a_context_the_only_cluster_is_used() {
        let dir = tempfile::tempdir().unwrap();
        let kc = write(
            dir.path(),
            "kc.yaml",
            &format!(
                "clusters:\n- name: a\n  cluster:\n    server: http://127.0.0.1:1\n    certificate-authority-data: {}\n\
                 users:\n- name: u\n  user:\n    client-certificate-data: {}\n    client-key-data: {}\n    token: t\n",
                b64(b"ca"),
                b64(b"cert"),
                b64(b"key")
            ),
        );
        let r = resolve(&kc).unwrap();
        assert_eq!(r.ca_pem.as_deref(), Some(&b"ca"[..]));
        assert_eq!(r.client_cert, Some((b"cert".to_vec(), b"key".to_vec())));
        assert_eq!(r.authorization.as_deref(), Some("Bearer t"));
        let only_cluster = write(
            dir.path(),
            "c.yaml",
            "clusters:\n- name: a\n  cluster: {server: http://x, insecure-skip-tls-verify: true}\nusers:\n",
        );
        let r = resolve(&only_cluster).unwrap();
        assert!(r.insecure && r.authorization.is_none());
    }

    #[test]
    fn bad_kubeconfigs_say_why() {
        let dir = tempfile::tempdir().unwrap();
        let err = |text: &str| resolve(&write(dir.path(), "kc.yaml", text)).unwrap_err();
        assert!(err("clusters:\n- name: a\n  cluster: {}\n").contains("no server found for cluster \"a\""));
        assert!(err("current-context: x\n").contains("context \"x\" not found"));
        assert!(err("clusters: []\n").contains("not exactly one cluster"));
        let both = format!(
            "clusters:\n- name: a\n  cluster: {{server: https://x, insecure-skip-tls-verify: true, certificate-authority-data: {}}}\n",
            b64(b"x")
        );
        assert!(err(&both).contains("insecure flag is not allowed"));
        assert!(
            err("clusters:\n- name: a\n  cluster: {server: https://x, certificate-authority: missing.crt}\n")
                .contains("missing.crt")
        );
        let half = format!(
            "clusters:\n- name: a\n  cluster: {{server: https://x}}\nusers:\n- name: u\n  user: {{client-key-data: {}}}\n",
            b64(b"k")
        );
        assert!(err(&half).contains("must be given together"));
        assert!(err("clusters:\n- name: a\n  cluster: {server: https://x}\nusers:\n- name: u\n  user: {exec: {command: x}}\n").contains("not supported"));
    }

    #[test]
    fn tls_is_built_from_real_pem_and_refuses_garbage() {
        let ca = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
        let with_ca = Resolved {
            server: "https://localhost".into(),
            ca_pem: Some(ca.cert.pem().into_bytes()),
            client_cert: Some((ca.cert.pem().into_bytes(), ca.signing_key.serialize_pem().into_bytes())),
            ..Default::default()
        };
        let config = tls_config(&with_ca).unwrap().expect("a custom config");
        assert_eq!(config.alpn_protocols, vec![b"http/1.1".to_vec()]);
        assert!(tls_config(&Resolved { insecure: true, ..Default::default() }).unwrap().is_some());
        assert!(tls_config(&Resolved::default()).unwrap().is_none(), "public roots: awc's defaults");
        let garbage = Resolved { ca_pem: Some(b"not pem".to_vec()), ..Default::default() };
        assert!(tls_config(&garbage).is_err());
        let public_with_cert = Resolved { client_cert: with_ca.client_cert.clone(), ..Default::default() };
        assert!(tls_config(&public_with_cert).unwrap_err().contains("certificate-authority"));
    }

    #[actix::test]
    async fn post_json_sends_the_body_and_token_and_reads_the_reply() {
        let (url, seen) = serve(vec![(201, r#"{"ok":true}"#)]);
        let dir = tempfile::tempdir().unwrap();
        let kc = write(
            dir.path(),
            "kc.yaml",
            &format!(
                "clusters:\n- name: a\n  cluster: {{server: \"{url}\"}}\nusers:\n- name: u\n  user: {{token: abc}}\n"
            ),
        );
        let client = WebhookClient::from_kubeconfig(&kc).unwrap();
        assert_eq!(format!("{client:?}"), format!("WebhookClient {{ server: {url:?}, .. }}"));
        let (status, body) = client.post_json(&json!({"kind": "EventList"}), Duration::from_secs(5)).await.unwrap();
        assert_eq!((status, body), (201, json!({"ok": true})));
        let req = seen.recv_timeout(Duration::from_secs(5)).unwrap();
        assert_eq!(req.request_line, "POST /audit HTTP/1.1");
        let header = |k: &str| req.headers.iter().find(|(h, _)| h == k).map(|(_, v)| v.as_str());
        assert_eq!(header("authorization"), Some("Bearer abc"));
        assert_eq!(header("content-type"), Some("application/json"));
        assert_eq!(serde_json::from_slice::<Value>(&req.body).unwrap(), json!({"kind": "EventList"}));
    }

    #[actix::test]
    async fn post_json_fails_when_nobody_listens() {
        let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let dir = tempfile::tempdir().unwrap();
        let kc = write(
            dir.path(),
            "kc.yaml",
            &format!("clusters:\n- name: a\n  cluster: {{server: \"http://127.0.0.1:{port}/\"}}\n"),
        );
        let client = WebhookClient::from_kubeconfig(&kc).unwrap();
        let err = client.post_json(&json!({}), Duration::from_secs(5)).await.unwrap_err();
        assert_eq!(
            err,
            format!("Post \"http://127.0.0.1:{port}/\": dial tcp 127.0.0.1:{port}: connect: connection refused"),
            "Go's words, as kube's errors quote them"
        );
    }
}
