//! A webhook server for tests and the load generator: actix-web over HTTPS on a thread of its
//! own, with a certificate signed by a CA made here (rcgen) that webhook configurations name
//! as `caBundle`, or with a self-signed certificate given to it that is its own `caBundle`. It records the AdmissionReviews it gets, so a test can count calls and read
//! what the apiserver sent.

use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix_web::{App, HttpRequest, HttpResponse, HttpServer, web};
use base64::Engine;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use serde_json::{Value, json};

/// What a webhook answers: the `response` fields besides `uid`, after `delay`.
pub struct Reply {
    /// The response's fields.
    pub response: Value,
    /// How long the server waits before answering.
    pub delay: Duration,
    /// The whole body to answer, instead of an AdmissionReview around `response` (a
    /// ConversionReview).
    pub body: Option<Value>,
}

/// Answers `body` as it is.
pub fn body(body: Value) -> Reply {
    Reply { response: Value::Null, delay: Duration::ZERO, body: Some(body) }
}

/// Allowed.
pub fn allow() -> Reply {
    Reply { response: json!({"allowed": true}), delay: Duration::ZERO, body: None }
}

/// Denied with `code` and `message`.
pub fn deny(code: u16, message: &str) -> Reply {
    Reply {
        response: json!({"allowed": false, "status": {"code": code, "message": message}}),
        delay: Duration::ZERO,
        body: None,
    }
}

/// Allowed with a JSONPatch.
pub fn patch(ops: Value) -> Reply {
    let encoded = base64::engine::general_purpose::STANDARD.encode(ops.to_string());
    Reply {
        response: json!({"allowed": true, "patchType": "JSONPatch", "patch": encoded}),
        delay: Duration::ZERO,
        body: None,
    }
}

/// One review a webhook server got: the path and query it was posted to, and the body.
#[derive(Clone, Debug)]
pub struct Call {
    /// The path posted to.
    pub path: String,
    /// The query string.
    pub query: String,
    /// The AdmissionReview sent.
    pub review: Value,
}

impl Call {
    /// The name of the object under review.
    pub fn name(&self) -> &str {
        self.review["request"]["name"].as_str().unwrap_or("")
    }
}

/// A webhook server the test runs; stopped when dropped.
pub struct WebhookServer {
    /// Where it listens, on loopback.
    pub port: u16,
    /// The CA's PEM, base64: the configurations' `caBundle`.
    pub ca_bundle: String,
    calls: Arc<Mutex<Vec<Call>>>,
    handle: actix_web::dev::ServerHandle,
}

/// The ConfigMap kube-root-ca.crt, which a controller writes into every namespace: answered
/// (allowed) but not recorded, so the tests count only their own requests.
const ROOT_CA: &str = "kube-root-ca.crt";

impl WebhookServer {
    /// A server whose certificate is valid for `names` (IP addresses or DNS names), answering
    /// `answer(path, review)`.
    pub fn start(names: &[&str], answer: impl Fn(&str, &Value) -> Reply + Send + Sync + 'static) -> WebhookServer {
        Self::start_on("127.0.0.1", names, answer)
    }

    /// [`WebhookServer::start`] listening on `ip`.
    pub fn start_on(
        ip: &str,
        names: &[&str],
        answer: impl Fn(&str, &Value) -> Reply + Send + Sync + 'static,
    ) -> WebhookServer {
        let ca = crate::pki::TestCa::new("webhook");
        Self::serve(ip, ca.server_config(names, None), ca.bundle(), answer)
    }

    /// A server on `ip` presenting `cert_pem` (with `key_pem`), whose `caBundle` is that
    /// certificate itself: a self-signed certificate made outside the tests (`openssl req -x509`).
    pub fn start_with_certificate(
        ip: &str,
        cert_pem: &str,
        key_pem: &str,
        answer: impl Fn(&str, &Value) -> Reply + Send + Sync + 'static,
    ) -> WebhookServer {
        let chain = CertificateDer::pem_slice_iter(cert_pem.as_bytes()).collect::<Result<Vec<_>, _>>().unwrap();
        let key = PrivateKeyDer::from_pem_slice(key_pem.as_bytes()).expect("a PEM private key");
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let tls = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .expect("the certificate and key match");
        let bundle = base64::engine::general_purpose::STANDARD.encode(cert_pem);
        Self::serve(ip, tls, bundle, answer)
    }

    /// Serves HTTPS with `tls` on `ip`; `ca_bundle` is what configurations name to trust it.
    fn serve(
        ip: &str,
        tls: rustls::ServerConfig,
        ca_bundle: String,
        answer: impl Fn(&str, &Value) -> Reply + Send + Sync + 'static,
    ) -> WebhookServer {
        let listener = TcpListener::bind((ip, 0)).unwrap();
        let port = listener.local_addr().unwrap().port();
        let calls: Arc<Mutex<Vec<Call>>> = Arc::default();
        let (recorder, answer) = (calls.clone(), Arc::new(answer));
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            actix_web::rt::System::new().block_on(async move {
                let server = HttpServer::new(move || {
                    let (calls, answer) = (recorder.clone(), answer.clone());
                    App::new().default_service(web::to(move |req: HttpRequest, body: web::Bytes| {
                        let (calls, answer) = (calls.clone(), answer.clone());
                        async move {
                            let review: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                            let reply = if review["request"]["name"] == ROOT_CA {
                                allow()
                            } else {
                                calls.lock().unwrap().push(Call {
                                    path: req.path().to_string(),
                                    query: req.query_string().to_string(),
                                    review: review.clone(),
                                });
                                answer(req.path(), &review)
                            };
                            actix_web::rt::time::sleep(reply.delay).await;
                            if let Some(body) = reply.body {
                                return HttpResponse::Ok().json(body);
                            }
                            let mut response = reply.response;
                            response["uid"] = review["request"]["uid"].clone();
                            HttpResponse::Ok().json(
                                json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response}),
                            )
                        }
                    }))
                })
                .workers(1)
                .disable_signals()
                .listen_rustls_0_23(listener, tls)
                .expect("webhook server listens")
                .run();
                tx.send(server.handle()).unwrap();
                server.await
            })
        });
        let handle = rx.recv_timeout(Duration::from_secs(10)).expect("webhook server started");
        WebhookServer { port, ca_bundle, calls, handle }
    }

    /// `https://127.0.0.1:<port><path>`.
    pub fn url(&self, path: &str) -> String {
        format!("https://127.0.0.1:{}{path}", self.port)
    }

    /// The calls to `path`, in order.
    pub fn calls(&self, path: &str) -> Vec<Call> {
        self.calls.lock().unwrap().iter().filter(|c| c.path == path).cloned().collect()
    }

    /// The names of the objects of the calls to `path`, in order.
    pub fn names(&self, path: &str) -> Vec<String> {
        self.calls(path).iter().map(|c| c.name().to_string()).collect()
    }
}

impl Drop for WebhookServer {
    fn drop(&mut self) {
        drop(self.handle.stop(false));
    }
}
