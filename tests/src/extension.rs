//! A small extension API server for the aggregation tests: actix-web over HTTPS on a thread of
//! its own, with a certificate for its Service's DNS name signed by a CA the APIService names
//! as `caBundle`, asking for (not requiring) a client certificate from a front-proxy CA.
//!
//! It serves one group version with one namespaced resource, `flunders`: discovery (its
//! aggregated `/apis` when asked for, `/apis/<group>/<version>`), lists that echo what the
//! request carried (the `X-Remote-*` identity, decoded as kube's request-header authenticator
//! decodes it, any credentials or impersonation left on it, the query, the client
//! certificate's name), a watch that sends one event at once and the next after two seconds,
//! and a redirect at `.../redirect`. It can be stopped and started again on the same port.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix_web::dev::{Extensions, ServerHandle};
use actix_web::{App, HttpRequest, HttpResponse, HttpServer, web};
use serde_json::{Value, json};

use crate::pki::TestCa;

/// The resource it serves.
pub const RESOURCE: &str = "flunders";

/// What one request to the server carried.
#[derive(Clone, Debug)]
pub struct Seen {
    /// `GET /apis/...`.
    pub method: String,
    /// The path.
    pub path: String,
    /// `X-Remote-User`.
    pub user: String,
    /// `X-Remote-Group`, each header.
    pub groups: Vec<String>,
    /// The client certificate's common name.
    pub client_cn: Option<String>,
}

/// The common name of the client certificate of a connection.
#[derive(Clone)]
struct ClientCn(Option<String>);

fn client_cn(conn: &dyn std::any::Any, ext: &mut Extensions) {
    type Tls = actix_tls::accept::rustls_0_23::TlsStream<actix_web::rt::net::TcpStream>;
    let Some(tls) = conn.downcast_ref::<Tls>() else { return };
    let (_, session) = tls.get_ref();
    let cn = session.peer_certificates().and_then(|c| c.first()).and_then(|der| {
        let (_, cert) = x509_parser::parse_x509_certificate(der).ok()?;
        cert.subject().iter_common_name().next()?.as_str().ok().map(String::from)
    });
    ext.insert(ClientCn(cn));
}

/// An extension API server the test runs; stopped when dropped.
pub struct ExtensionServer {
    /// Where it listens.
    pub addr: SocketAddr,
    /// Its group.
    pub group: String,
    /// Its version.
    pub version: String,
    /// The CA its serving certificate chains to.
    pub ca: TestCa,
    names: Vec<String>,
    client_ca: Option<String>,
    seen: Arc<Mutex<Vec<Seen>>>,
    running: Option<(ServerHandle, std::thread::JoinHandle<()>)>,
}

impl ExtensionServer {
    /// A server for `group`/`version` on `ip` (a free port), its certificate valid for `names`,
    /// client certificates verified against `client_ca` (PEM) when given.
    pub fn start(ip: &str, names: &[&str], group: &str, version: &str, client_ca: Option<&str>) -> ExtensionServer {
        let port = std::net::TcpListener::bind((ip, 0)).unwrap().local_addr().unwrap().port();
        let mut server = ExtensionServer {
            addr: SocketAddr::new(ip.parse().unwrap(), port),
            group: group.into(),
            version: version.into(),
            ca: TestCa::new("extension"),
            names: names.iter().map(|n| n.to_string()).collect(),
            client_ca: client_ca.map(String::from),
            seen: Arc::default(),
            running: None,
        };
        server.resume();
        server
    }

    /// Stops it: its port refuses connections until [`ExtensionServer::resume`].
    pub fn stop(&mut self) {
        if let Some((handle, thread)) = self.running.take() {
            drop(handle.stop(false));
            thread.join().unwrap();
        }
    }

    /// Starts it again on the same port, with the same certificate authority.
    pub fn resume(&mut self) {
        assert!(self.running.is_none(), "already running");
        let names: Vec<&str> = self.names.iter().map(String::as_str).collect();
        let tls = self.ca.server_config(&names, self.client_ca.as_deref());
        let (addr, seen) = (self.addr, self.seen.clone());
        let (group, version) = (self.group.clone(), self.version.clone());
        let (tx, rx) = std::sync::mpsc::channel();
        let thread = std::thread::spawn(move || {
            actix_web::rt::System::new().block_on(async move {
                let server = HttpServer::new(move || {
                    let (seen, group, version) = (seen.clone(), group.clone(), version.clone());
                    App::new().default_service(web::to(move |req: HttpRequest| {
                        let (seen, group, version) = (seen.clone(), group.clone(), version.clone());
                        async move { answer(&req, &seen, &group, &version) }
                    }))
                })
                .workers(1)
                .disable_signals()
                .on_connect(client_cn)
                .bind_rustls_0_23(addr, tls)
                .expect("the extension server listens")
                .run();
                tx.send(server.handle()).unwrap();
                let _ = server.await;
            })
        });
        let handle = rx.recv_timeout(Duration::from_secs(10)).expect("the extension server started");
        self.running = Some((handle, thread));
    }

    /// The requests it got, in order.
    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    /// An APIService for its group version behind Service `namespace/name`, trusting its CA.
    pub fn api_service(&self, namespace: &str, name: &str) -> Value {
        json!({"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
            "metadata": {"name": format!("{}.{}", self.version, self.group)},
            "spec": {"group": self.group, "version": self.version, "caBundle": self.ca.bundle(),
                "service": {"namespace": namespace, "name": name, "port": 443},
                "groupPriorityMinimum": 1000, "versionPriority": 15}})
    }
}

impl Drop for ExtensionServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The identity headers as kube's request-header authenticator reads them: the extra keys
/// lower-cased and path-unescaped (as impersonation's are).
fn identity(req: &HttpRequest) -> (String, Vec<String>, BTreeMap<String, Vec<String>>) {
    let values = |name: &str| -> Vec<String> {
        req.headers().get_all(name).filter_map(|v| v.to_str().ok()).map(String::from).collect()
    };
    let mut extra: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (name, value) in req.headers() {
        if let (Some(key), Ok(v)) = (name.as_str().strip_prefix("x-remote-extra-"), value.to_str()) {
            extra.entry(auth::impersonation::extra_key(key)).or_default().push(v.to_string());
        }
    }
    (values("x-remote-user").into_iter().next().unwrap_or_default(), values("x-remote-group"), extra)
}

fn resources_json(group: &str, version: &str) -> Value {
    json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": format!("{group}/{version}"),
        "resources": [{"name": RESOURCE, "singularName": "flunder", "namespaced": true, "kind": "Flunder",
            "verbs": ["get", "list", "watch"], "shortNames": ["fl"]}]})
}

fn answer(req: &HttpRequest, seen: &Mutex<Vec<Seen>>, group: &str, version: &str) -> HttpResponse {
    let (user, groups, extra) = identity(req);
    let client_cn = req.conn_data::<ClientCn>().and_then(|c| c.0.clone());
    let path = req.path().to_string();
    seen.lock().unwrap().push(Seen {
        method: req.method().to_string(),
        path: path.clone(),
        user: user.clone(),
        groups: groups.clone(),
        client_cn: client_cn.clone(),
    });
    let gv = format!("/apis/{group}/{version}");
    let accept = req.headers().get("accept").and_then(|v| v.to_str().ok()).unwrap_or("");
    if path == "/apis" && accept.contains("as=APIGroupDiscoveryList") {
        let doc = json!({"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2", "metadata": {},
            "items": [{"metadata": {"name": group}, "versions": [{"version": version, "freshness": "Current",
                "resources": [{"resource": RESOURCE, "singularResource": "flunder", "scope": "Namespaced",
                    "shortNames": ["fl"], "verbs": ["get", "list", "watch"],
                    "responseKind": {"group": group, "version": version, "kind": "Flunder"}}]}]}]});
        return HttpResponse::Ok()
            .content_type("application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList")
            .body(doc.to_string());
    }
    if path == gv {
        return HttpResponse::Ok().json(resources_json(group, version));
    }
    if path == format!("{gv}/redirect") {
        return HttpResponse::Found().insert_header(("Location", "https://example.com/")).finish();
    }
    if !path.starts_with(&gv) {
        return HttpResponse::NotFound().json(json!({"kind": "Status", "apiVersion": "v1", "status": "Failure",
            "reason": "NotFound", "code": 404, "message": format!("{path} is not served here")}));
    }
    let carried = |prefix: &str| -> Vec<String> {
        req.headers().keys().map(|k| k.as_str().to_string()).filter(|k| k.starts_with(prefix)).collect()
    };
    let echo = json!({"user": user, "groups": groups, "extra": extra, "path": path, "query": req.query_string(),
        "clientCN": client_cn, "authorization": req.headers().get("authorization").and_then(|v| v.to_str().ok()),
        "impersonate": carried("impersonate-"), "audit-id": req.headers().get("audit-id").and_then(|v| v.to_str().ok())});
    if req.query_string().split('&').any(|p| p == "watch=true" || p == "watch=1") {
        let object = |name: &str| {
            json!({"type": "ADDED", "object": {"apiVersion": format!("{group}/{version}"), "kind": "Flunder",
                "metadata": {"name": name, "namespace": "default", "resourceVersion": "1"}}})
            .to_string()
                + "\n"
        };
        let (first, second) = (object("first"), object("second"));
        let events = futures_util::stream::unfold(0, move |n| {
            let (first, second) = (first.clone(), second.clone());
            async move {
                match n {
                    0 => Some((Ok::<_, actix_web::Error>(web::Bytes::from(first)), 1)),
                    1 => {
                        actix_web::rt::time::sleep(Duration::from_secs(2)).await;
                        Some((Ok(web::Bytes::from(second)), 2))
                    }
                    _ => None,
                }
            }
        });
        return HttpResponse::Ok().content_type("application/json").streaming(events);
    }
    let flunder = json!({"apiVersion": format!("{group}/{version}"), "kind": "Flunder",
        "metadata": {"name": "flunder-1", "namespace": "default", "resourceVersion": "1",
            "creationTimestamp": "2024-01-01T00:00:00Z"}});
    HttpResponse::Ok().json(json!({"kind": "FlunderList", "apiVersion": format!("{group}/{version}"),
        "metadata": {"resourceVersion": "1"}, "items": [flunder], "seen": echo}))
}
