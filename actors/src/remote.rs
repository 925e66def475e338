//! Stages in other processes: the networked [`Transport`].
//!
//! A process exposes stage handles with a [`StageService`]: each message type of each stage is a
//! route, `POST /stages/<stage>/<Message>`, whose body is the message and its deadline encoded
//! with rmp-serde. The receiving side hands the message to the stage's own handle, so the stage's
//! mailbox admits it as it admits a local caller's: callers in every process share one bound, and
//! a mailbox that stays full answers 429 naming the stage. The reply, or the [`StageError`], comes
//! back encoded the same way. A stream (a storage watch feeding another process's cache) is one
//! response of length-prefixed frames ([`frame`], [`Frames`]).
//!
//! A caller reaches a process through a [`Peer`]: HTTP/2 over mutual TLS with the cluster CA
//! ([`ClusterTls`]), one connection multiplexing every call. A peer that cannot be reached is
//! marked down: calls fail at once with [`StageError::Transport`] (a 503 naming the stage) while
//! a probe retries in the background every [`PROBE_INTERVAL`]; its first answer marks the peer up
//! again, so a restarted process is used again without anyone acting.

use std::collections::HashMap;
use std::marker::PhantomData;
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use bytes::{Buf, Bytes, BytesMut};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use rustls::RootCertStore;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use serde::{Deserialize, Serialize};

use crate::deadline::Deadline;
use crate::directory::{ActorDirectory, Registration};
use crate::error::StageError;
use crate::handle::StageHandle;
use crate::message::Request;
use crate::meters::{StageMeters, WhenFull};
use crate::transport::{SendFuture, Transport};

/// How often a peer marked down is probed.
pub const PROBE_INTERVAL: Duration = Duration::from_millis(250);

/// How long connecting to a peer may take before it counts as unreachable.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(1);

/// The largest message or reply accepted: a write carries an object up to kube's 3 MiB request
/// limit, a list reply many of them.
pub const MAX_MESSAGE_BYTES: usize = 256 << 20;

/// Streams one connection may have open at a stage process. Well above any mailbox's capacity,
/// so that calls past a full mailbox reach it and are refused with 429 naming the stage,
/// rather than waiting unmetered in the caller's connection (HTTP/2's default here is 200).
pub const MAX_CONCURRENT_STREAMS: u32 = 16_384;

// ---------------------------------------------------------------- TLS

/// TLS between the processes of one deployment: each presents a certificate signed by the
/// cluster CA, and accepts only peers that present one.
#[derive(Clone)]
pub struct ClusterTls {
    ca: Vec<CertificateDer<'static>>,
    chain: Vec<CertificateDer<'static>>,
    key_pem: Arc<Vec<u8>>,
}

impl ClusterTls {
    /// From PEM: the cluster CA, this process's certificate (valid for serving and as a client)
    /// and its key.
    pub fn from_pem(ca_pem: &[u8], cert_pem: &[u8], key_pem: &[u8]) -> Result<Self, String> {
        let certs = |pem: &[u8], what: &str| -> Result<Vec<CertificateDer<'static>>, String> {
            let certs = CertificateDer::pem_slice_iter(pem)
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| format!("{what}: {e}"))?;
            if certs.is_empty() {
                return Err(format!("{what}: no certificate in the PEM"));
            }
            Ok(certs)
        };
        PrivateKeyDer::from_pem_slice(key_pem).map_err(|e| format!("stage key: {e}"))?;
        Ok(ClusterTls {
            ca: certs(ca_pem, "cluster CA")?,
            chain: certs(cert_pem, "stage certificate")?,
            key_pem: Arc::new(key_pem.to_vec()),
        })
    }

    /// From files.
    pub fn load(ca: &Path, cert: &Path, key: &Path) -> Result<Self, String> {
        let read = |p: &Path| std::fs::read(p).map_err(|e| format!("{}: {e}", p.display()));
        Self::from_pem(&read(ca)?, &read(cert)?, &read(key)?)
    }

    fn key(&self) -> PrivateKeyDer<'static> {
        PrivateKeyDer::from_pem_slice(&self.key_pem).expect("checked when loaded")
    }

    fn roots(&self) -> Result<Arc<RootCertStore>, String> {
        let mut roots = RootCertStore::empty();
        for c in &self.ca {
            roots.add(c.clone()).map_err(|e| format!("cluster CA: {e}"))?;
        }
        Ok(Arc::new(roots))
    }

    /// The listener's configuration: HTTP/2, and a client certificate of the cluster CA required.
    pub fn server_config(&self) -> Result<rustls::ServerConfig, String> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(self.roots()?, provider.clone())
            .build()
            .map_err(|e| format!("cluster CA: {e}"))?;
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| e.to_string())?
            .with_client_cert_verifier(verifier)
            .with_single_cert(self.chain.clone(), self.key())
            .map_err(|e| format!("stage certificate: {e}"))?;
        config.alpn_protocols = vec![b"h2".to_vec()];
        Ok(config)
    }

    fn client_config(&self) -> Result<rustls::ClientConfig, String> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let roots = Arc::unwrap_or_clone(self.roots()?);
        let mut config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| e.to_string())?
            .with_root_certificates(roots)
            .with_client_auth_cert(self.chain.clone(), self.key())
            .map_err(|e| format!("stage certificate: {e}"))?;
        // The connector offers h2 itself.
        config.alpn_protocols.clear();
        Ok(config)
    }
}

// ---------------------------------------------------------------- the wire

/// A call as it crosses: the time left and the message.
#[derive(Serialize, Deserialize)]
struct Call<M> {
    deadline: Deadline,
    msg: M,
}

/// The route of messages of type `M` to `stage`.
fn route<M>(stage: &str) -> String {
    let full = std::any::type_name::<M>();
    let message = full.rsplit("::").next().unwrap_or(full);
    format!("/stages/{stage}/{message}")
}

/// The HTTP status a stage error crosses with.
fn status_of(e: &StageError) -> u16 {
    match e {
        StageError::Saturated { .. } => 429,
        StageError::Stopped { .. } => 503,
        StageError::DeadlineExceeded { .. } => 504,
        StageError::Transport { .. } => 502,
    }
}

/// Encodes one frame of a stream: its length (4 bytes, big-endian), then its bytes.
pub fn frame(payload: &[u8]) -> Bytes {
    let mut out = BytesMut::with_capacity(4 + payload.len());
    out.extend_from_slice(&(payload.len() as u32).to_be_bytes());
    out.extend_from_slice(payload);
    out.freeze()
}

/// The frames of a stream response, in order.
pub struct Frames {
    body: hyper::body::Incoming,
    buffer: BytesMut,
}

impl Frames {
    /// The next frame; `None` when the stream ended cleanly, an error when it broke.
    pub async fn next(&mut self) -> Option<Result<Bytes, String>> {
        loop {
            if self.buffer.len() >= 4 {
                let len = u32::from_be_bytes(self.buffer[..4].try_into().expect("4 bytes")) as usize;
                if len > MAX_MESSAGE_BYTES {
                    return Some(Err(format!("a frame of {len} bytes is over the limit")));
                }
                if self.buffer.len() >= 4 + len {
                    self.buffer.advance(4);
                    return Some(Ok(self.buffer.split_to(len).freeze()));
                }
            }
            match self.body.frame().await {
                None if self.buffer.is_empty() => return None,
                None => return Some(Err("the stream ended inside a frame".into())),
                Some(Err(e)) => return Some(Err(e.to_string())),
                Some(Ok(f)) => {
                    if let Ok(data) = f.into_data() {
                        self.buffer.extend_from_slice(&data);
                    }
                }
            }
        }
    }
}

// ---------------------------------------------------------------- the calling side

/// The runtime the connections to peers live on, apart from any caller's: a call made on one
/// HTTP worker and answered while that worker is busy still makes progress.
fn network() -> &'static tokio::runtime::Runtime {
    static NET: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    NET.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("stage-net")
            .enable_all()
            .build()
            .expect("start the stage network runtime")
    })
}

/// Runs `future` on the runtime the connections to and from peers live on.
pub fn spawn(future: impl std::future::Future<Output = ()> + Send + 'static) {
    network().spawn(future);
}

/// Spawns hyper's connection tasks on [`network`].
#[derive(Clone, Copy)]
struct NetworkExecutor;

impl<F> hyper::rt::Executor<F> for NetworkExecutor
where
    F: std::future::Future + Send + 'static,
    F::Output: Send + 'static,
{
    fn execute(&self, future: F) {
        network().spawn(future);
    }
}

/// Why a call to a peer got no answer.
#[derive(Debug)]
pub enum PeerError {
    /// The peer could not be reached, or the exchange broke.
    Unreachable(String),
    /// The deadline passed first.
    Deadline,
}

/// Whether a peer answers, as the admin endpoint shows it.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PeerHealth {
    /// The process's name.
    pub name: String,
    /// Where it listens.
    pub url: String,
    /// Whether the last attempt reached it.
    pub up: bool,
    /// Seconds since it went down, when down.
    pub down_for_seconds: Option<f64>,
    /// Why it is down.
    pub last_error: Option<String>,
}

#[derive(Default)]
struct Health {
    down: Option<(Instant, String)>,
    probing: bool,
}

struct PeerState {
    name: String,
    url: String,
    client: Client<HttpsConnector<HttpConnector>, Full<Bytes>>,
    health: Mutex<Health>,
}

/// Another process of the deployment, reached over HTTP/2 with mutual TLS. Cheap to clone.
#[derive(Clone)]
pub struct Peer(Arc<PeerState>);

impl Peer {
    /// A peer named `name` listening at `url` (`https://host:port`).
    pub fn new(name: &str, url: &str, tls: &ClusterTls) -> Result<Self, String> {
        let mut http = HttpConnector::new();
        http.enforce_http(false);
        http.set_connect_timeout(Some(CONNECT_TIMEOUT));
        http.set_nodelay(true);
        let https = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(tls.client_config()?)
            .https_only()
            .enable_http2()
            .wrap_connector(http);
        let client = Client::builder(NetworkExecutor)
            .timer(hyper_util::rt::TokioTimer::new())
            .pool_timer(hyper_util::rt::TokioTimer::new())
            .http2_only(true)
            .http2_keep_alive_interval(Some(Duration::from_secs(10)))
            .http2_keep_alive_timeout(Duration::from_secs(5))
            .build(https);
        Ok(Peer(Arc::new(PeerState {
            name: name.to_string(),
            url: url.trim_end_matches('/').to_string(),
            client,
            health: Mutex::default(),
        })))
    }

    /// The process's name.
    pub fn name(&self) -> &str {
        &self.0.name
    }

    /// Whether it answers.
    pub fn health(&self) -> PeerHealth {
        let h = self.lock();
        PeerHealth {
            name: self.0.name.clone(),
            url: self.0.url.clone(),
            up: h.down.is_none(),
            down_for_seconds: h.down.as_ref().map(|(at, _)| at.elapsed().as_secs_f64()),
            last_error: h.down.as_ref().map(|(_, why)| why.clone()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Health> {
        self.0.health.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Fails at once while the peer is down.
    fn check_up(&self) -> Result<(), PeerError> {
        match &self.lock().down {
            Some((at, why)) => {
                Err(PeerError::Unreachable(format!("down for {:.1}s: {why}", at.elapsed().as_secs_f64())))
            }
            None => Ok(()),
        }
    }

    /// Marks the peer down and probes it until it answers.
    fn mark_down(&self, why: String) {
        let mut h = self.lock();
        if h.down.is_none() {
            tracing::warn!(peer = self.0.name, url = self.0.url, "stage process unreachable: {why}");
            h.down = Some((Instant::now(), why));
        }
        if h.probing {
            return;
        }
        h.probing = true;
        let peer = self.clone();
        network().spawn(async move {
            loop {
                tokio::time::sleep(PROBE_INTERVAL).await;
                let why = match peer.send("/stages/health", Bytes::new()).await {
                    Ok((200, _)) => break,
                    Ok((status, _)) => format!("its health check answered {status}"),
                    Err(e) => describe(&e),
                };
                if let Some(down) = peer.lock().down.as_mut() {
                    down.1 = why;
                }
            }
            let mut h = peer.lock();
            h.probing = false;
            h.down = None;
            tracing::info!(peer = peer.0.name, url = peer.0.url, "stage process reachable again");
        });
    }

    /// Sends `body` to `path`; the answer's status and body, or hyper's error.
    async fn send(
        &self,
        path: &str,
        body: Bytes,
    ) -> Result<(u16, hyper::body::Incoming), hyper_util::client::legacy::Error> {
        let request = http::Request::builder()
            .method("POST")
            .uri(format!("{}{path}", self.0.url))
            .header("content-type", "application/msgpack")
            .body(Full::new(body))
            .expect("a request of a valid URL and header");
        let response = self.0.client.request(request).await?;
        Ok((response.status().as_u16(), response.into_body()))
    }

    /// Sends `body` to `path` and reads the whole answer, within `deadline`.
    pub async fn post(&self, path: &str, body: Vec<u8>, deadline: Deadline) -> Result<(u16, Bytes), PeerError> {
        self.check_up()?;
        let exchange = async {
            let (status, body) = self.send(path, Bytes::from(body)).await.map_err(|e| {
                let why = describe(&e);
                if e.is_connect() {
                    self.mark_down(why.clone());
                }
                PeerError::Unreachable(why)
            })?;
            let bytes = body
                .collect()
                .await
                .map_err(|e| PeerError::Unreachable(format!("reading the answer: {e}")))?
                .to_bytes();
            Ok((status, bytes))
        };
        deadline.run(exchange).await.map_err(|_| PeerError::Deadline)?
    }

    /// Opens a stream: sends `body` to `path` and returns the answer's status and frames.
    pub async fn stream(&self, path: &str, body: Vec<u8>) -> Result<(u16, Frames), PeerError> {
        self.check_up()?;
        let (status, body) = self.send(path, Bytes::from(body)).await.map_err(|e| {
            let why = describe(&e);
            self.mark_down(why.clone());
            PeerError::Unreachable(why)
        })?;
        Ok((status, Frames { body, buffer: BytesMut::new() }))
    }

    /// A stage of this peer, metered in `directory` as `<stage>@<peer>` (its calls as this
    /// process sees them).
    pub fn stage(&self, stage: &str, directory: &ActorDirectory) -> RemoteStage {
        let name = format!("{stage}@{}", self.0.name);
        let meters = Arc::new(StageMeters::new(&name, "", 0, WhenFull::NoMailbox, "remote"));
        let registration = Arc::new(directory.register(meters.clone()));
        RemoteStage { peer: self.clone(), stage: stage.to_string(), name, meters, _registration: registration }
    }
}

/// What a hyper client error says, with its cause (the connection refused, the certificate
/// refused).
fn describe(e: &hyper_util::client::legacy::Error) -> String {
    let mut out = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        out.push_str(": ");
        out.push_str(&s.to_string());
        source = s.source();
    }
    out
}

/// One stage of a peer, from which transports for each of its message types are made.
#[derive(Clone)]
pub struct RemoteStage {
    peer: Peer,
    stage: String,
    name: String,
    meters: Arc<StageMeters>,
    _registration: Arc<Registration>,
}

impl RemoteStage {
    /// The stage's name as errors show it: `<stage>@<peer>`.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The peer it runs in.
    pub fn peer(&self) -> &Peer {
        &self.peer
    }

    /// A handle sending messages of type `M` to this stage.
    pub fn handle<M: Request>(&self) -> StageHandle<M> {
        StageHandle::new(RemoteTransport::<M> { stage: self.clone(), path: route::<M>(&self.stage), _m: PhantomData })
    }
}

/// Delivery to a stage in another process.
pub struct RemoteTransport<M> {
    stage: RemoteStage,
    path: String,
    _m: PhantomData<fn(M)>,
}

impl<M: Request> Transport<M> for RemoteTransport<M> {
    fn send(&self, msg: M, deadline: Deadline) -> SendFuture<Result<M::Reply, StageError>> {
        let stage = self.stage.clone();
        let path = self.path.clone();
        Box::pin(async move {
            let mut call = stage.meters.start_call();
            let name = stage.name.clone();
            let unreachable = |message: String| StageError::Transport { stage: name.clone(), message };
            let body = rmp_serde::to_vec_named(&Call { deadline, msg }).map_err(|e| unreachable(e.to_string()));
            let answer = match body {
                Ok(body) => stage.peer.post(&path, body, deadline).await,
                Err(e) => return Err(e),
            };
            let result = match answer {
                Ok((200, bytes)) => rmp_serde::from_slice::<M::Reply>(&bytes)
                    .map_err(|e| unreachable(format!("undecodable reply: {e}"))),
                Ok((status, bytes)) => Err(match rmp_serde::from_slice::<StageError>(&bytes) {
                    Ok(e) => e.renamed(&name),
                    Err(_) => unreachable(format!("answered {status}: {}", String::from_utf8_lossy(&bytes))),
                }),
                Err(PeerError::Deadline) => Err(StageError::DeadlineExceeded { stage: name.clone() }),
                Err(PeerError::Unreachable(why)) => Err(unreachable(why)),
            };
            if !matches!(&result, Ok(r) if !crate::message::Reply::is_error(r)) {
                call.failed();
            }
            result
        })
    }

    fn stage(&self) -> &str {
        self.stage.name()
    }
}

// ---------------------------------------------------------------- the receiving side

/// A response a route answers with.
pub type Answer = http::Response<BoxBody<Bytes, std::io::Error>>;

/// A request as a route sees it.
pub struct Incoming {
    /// `GET` or `POST`.
    pub method: http::Method,
    /// The path.
    pub path: String,
    /// The query string, without `?`.
    pub query: String,
    /// The whole body.
    pub body: Bytes,
}

/// Answers requests to one path (or under one prefix).
pub type Route = Arc<dyn Fn(Incoming) -> SendFuture<Answer> + Send + Sync>;

/// An answer of `status` with `body`.
pub fn answer(status: u16, content_type: &str, body: impl Into<Bytes>) -> Answer {
    let body = Full::new(body.into()).map_err(|never| match never {}).boxed();
    let mut response = http::Response::new(body);
    *response.status_mut() = http::StatusCode::from_u16(status).unwrap_or(http::StatusCode::INTERNAL_SERVER_ERROR);
    if let Ok(value) = http::HeaderValue::from_str(content_type) {
        response.headers_mut().insert(http::header::CONTENT_TYPE, value);
    }
    response
}

/// A streamed answer: each payload received is sent as one [`frame`]; the stream ends when the
/// sender is dropped.
pub fn stream_answer(mut payloads: tokio::sync::mpsc::Receiver<Bytes>) -> Answer {
    let frames = futures_util::stream::poll_fn(move |cx| {
        payloads.poll_recv(cx).map(|p| p.map(|p| Ok::<_, std::io::Error>(hyper::body::Frame::data(frame(&p)))))
    });
    let mut response = http::Response::new(http_body_util::StreamBody::new(frames).boxed());
    response.headers_mut().insert(http::header::CONTENT_TYPE, http::HeaderValue::from_static("application/msgpack"));
    response
}

/// What a process exposes to its peers: stage handles, and routes of its own (streams, the
/// health check, the directory of its actors).
#[derive(Clone, Default)]
pub struct StageService {
    exact: HashMap<String, Route>,
    prefixes: Vec<(String, Route)>,
}

impl StageService {
    /// Exposes `handle`: messages of type `M` arriving for its stage are delivered through it,
    /// admitted by the stage's own mailbox.
    pub fn expose<M: Request>(&mut self, handle: StageHandle<M>) {
        let path = route::<M>(handle.stage());
        let deliver: Route = Arc::new(move |incoming: Incoming| {
            let handle = handle.clone();
            Box::pin(async move {
                let encoded = |status: u16, e: &StageError| {
                    answer(status, "application/msgpack", rmp_serde::to_vec_named(e).unwrap_or_default())
                };
                let stage = handle.stage().to_string();
                let call: Call<M> = match rmp_serde::from_slice(&incoming.body) {
                    Ok(call) => call,
                    Err(e) => {
                        return encoded(
                            400,
                            &StageError::Transport { stage, message: format!("undecodable message: {e}") },
                        );
                    }
                };
                match handle.call(call.msg, call.deadline).await {
                    Ok(reply) => match rmp_serde::to_vec_named(&reply) {
                        Ok(bytes) => answer(200, "application/msgpack", bytes),
                        Err(e) => {
                            encoded(500, &StageError::Transport { stage, message: format!("unencodable reply: {e}") })
                        }
                    },
                    Err(e) => encoded(status_of(&e), &e),
                }
            })
        });
        self.exact.insert(path, deliver);
    }

    /// Answers requests to `path` with `route`.
    pub fn route(&mut self, path: &str, route: Route) {
        self.exact.insert(path.to_string(), route);
    }

    /// Answers requests to any path under `prefix` with `route`.
    pub fn route_prefix(&mut self, prefix: &str, route: Route) {
        self.prefixes.push((prefix.to_string(), route));
    }

    /// The exposed stage message routes, sorted.
    pub fn exposed(&self) -> Vec<String> {
        let mut all: Vec<String> = self.exact.keys().filter(|p| p.starts_with("/stages/")).cloned().collect();
        all.sort();
        all
    }

    fn find(&self, path: &str) -> Option<Route> {
        if path == "/stages/health" {
            return Some(Arc::new(|_| Box::pin(async { answer(200, "text/plain", "ok") })));
        }
        self.exact.get(path).cloned().or_else(|| {
            self.prefixes.iter().find(|(prefix, _)| path.starts_with(prefix.as_str())).map(|(_, r)| r.clone())
        })
    }

    /// Listens on `address` (HTTP/2 over mutual TLS) until the returned [`Listening`] is dropped
    /// or stopped. Connections are served on the network runtime, apart from any stage's.
    pub fn serve(self, address: std::net::SocketAddr, tls: &ClusterTls) -> Result<Listening, String> {
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(tls.server_config()?));
        let std_listener = std::net::TcpListener::bind(address).map_err(|e| format!("binding {address}: {e}"))?;
        std_listener.set_nonblocking(true).map_err(|e| e.to_string())?;
        let bound = std_listener.local_addr().map_err(|e| e.to_string())?;
        let service = Arc::new(self);
        let task = network().spawn(async move {
            let listener = match tokio::net::TcpListener::from_std(std_listener) {
                Ok(l) => l,
                Err(e) => return tracing::error!("stage listener on {bound}: {e}"),
            };
            loop {
                let Ok((tcp, _)) = listener.accept().await else { continue };
                let _ = tcp.set_nodelay(true);
                let (acceptor, service) = (acceptor.clone(), service.clone());
                tokio::spawn(async move {
                    let tls = match acceptor.accept(tcp).await {
                        Ok(tls) => tls,
                        Err(e) => return tracing::debug!("stage listener: TLS handshake refused: {e}"),
                    };
                    let serve = hyper::service::service_fn(move |request: http::Request<hyper::body::Incoming>| {
                        let service = service.clone();
                        async move { Ok::<_, std::convert::Infallible>(service.dispatch(request).await) }
                    });
                    let connection = hyper::server::conn::http2::Builder::new(hyper_util::rt::TokioExecutor::new())
                        .max_concurrent_streams(MAX_CONCURRENT_STREAMS)
                        .serve_connection(hyper_util::rt::TokioIo::new(tls), serve);
                    if let Err(e) = connection.await {
                        tracing::debug!("stage connection ended: {e}");
                    }
                });
            }
        });
        Ok(Listening { address: bound, task })
    }

    async fn dispatch(&self, request: http::Request<hyper::body::Incoming>) -> Answer {
        let (parts, body) = request.into_parts();
        let path = parts.uri.path().to_string();
        let Some(route) = self.find(&path) else {
            return answer(404, "text/plain", format!("no route {path}"));
        };
        let body = match http_body_util::Limited::new(body, MAX_MESSAGE_BYTES).collect().await {
            Ok(b) => b.to_bytes(),
            Err(e) => return answer(413, "text/plain", format!("reading the request: {e}")),
        };
        let query = parts.uri.query().unwrap_or_default().to_string();
        route(Incoming { method: parts.method, path, query, body }).await
    }
}

/// A listening [`StageService`]; dropping it stops accepting (connections open stay served
/// until they close).
pub struct Listening {
    address: std::net::SocketAddr,
    task: tokio::task::JoinHandle<()>,
}

impl Listening {
    /// The address bound (its port, when asked for port 0).
    pub fn address(&self) -> std::net::SocketAddr {
        self.address
    }
}

impl Drop for Listening {
    fn drop(&mut self) {
        self.task.abort();
    }
}

#[cfg(test)]
mod tests;
