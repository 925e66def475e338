//! The request mix a real cluster sends, each request type on its own, through this server and
//! a reference kube-apiserver in one run: the server's CPU time per request, side by side.
//!
//! Each server runs on a fresh etcd of its own, with the same flags: the same serving
//! certificate, a token file (an admin in `system:masters` and one user per node in
//! `system:nodes`), `--authorization-mode Node,RBAC`, the same service-account key. The
//! kubelets' requests are made as their nodes, so the Node authorizer is on their path as in a
//! cluster (kube's `NodeRestriction` is left off: it is not on by default, and this server does
//! not build it). Every phase runs 64 workers for `seconds`; the server's CPU time (user +
//! system, `/proc/<pid>/stat`) over the phase is divided by the requests answered, or for watch
//! fan-out by the events delivered (after the same writes' CPU without watchers is taken off;
//! 40 watchers on each of 16 nodes), or for a full LIST by the objects listed.
//!
//! `loadgen 5 mix [--kube PATH] [--baseline PATH] [--rounds N] [--only OP,...] [--profile DIR]`: without
//! `--kube` the kube-apiserver `../shared/tools/build-kube.sh` builds (`KUBE_APISERVER`, else
//! `/tmp/kube-ref/bin/kube-apiserver`) when it is there, and none when it is not (this server
//! alone is measured). `--baseline` adds another build of this server. `--profile DIR` samples
//! this build's stacks with `perf` through each phase (files in DIR) and prints where its CPU
//! went by stage (`tests::load::profile`); sampling slows the server, so take CPU per request
//! from a run without it.

use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use serde_json::{Value, json};
use storage::etcd::testing::EtcdProcess;
use tests::TestServer;
use tests::load::{cpu_time, profile};

use crate::{Phase, run_paced};

/// Workers per phase, and nodes (each worker acts for its own node).
const WORKERS: usize = 64;
const NAMESPACE: &str = "mix";
const ADMIN_TOKEN: &str = "mix-admin";
/// ConfigMaps listed whole from the cache, per object.
const LISTED: usize = 2_000;
/// Watchers of pods, each with a `spec.nodeName` field selector naming one of
/// `WATCHED_NODES` nodes, and the writes per second under them, to those nodes' pods: each
/// write reaches `WATCHERS / WATCHED_NODES` watchers, enough that the fan-out's CPU stands out
/// of the writes' own (a write of kube-apiserver's costs milliseconds and varies by a tenth).
const WATCHERS: usize = 640;
const WATCHED_NODES: usize = 16;
const WATCHED_WRITES: u32 = 200;
/// How long an idle server's CPU is measured.
const IDLE: Duration = Duration::from_secs(30);

/// The request types, in the order they run.
pub const OPS: &[&str] = &[
    "create",
    "get",
    "update",
    "patch-strategic",
    "patch-merge",
    "apply",
    "pod-status-patch",
    "lease-put",
    "node-get",
    "token-request",
    "event-post",
    "list-pods-by-node",
    "list-configmaps-per-object",
    "watch-by-node-per-event",
    "idle-cpu-ms-per-s",
    "rss-mib-10k-configmaps",
];

fn node_token(n: usize) -> String {
    format!("mix-node-{n}")
}

/// The servers a side-by-side run measures besides this build: a kube-apiserver (when there is
/// one) and another build of this server.
pub(crate) struct Compared {
    pub(crate) kube: Option<PathBuf>,
    pub(crate) baseline: Option<PathBuf>,
}

impl Compared {
    /// `default_kube` when it exists, and no other build.
    pub(crate) fn new(default_kube: PathBuf) -> Compared {
        Compared { kube: default_kube.exists().then_some(default_kube), baseline: None }
    }

    /// Takes `--kube PATH|none` and `--baseline PATH`; false for any other flag.
    pub(crate) fn take(&mut self, flag: &str, value: &str) -> bool {
        match flag {
            "--kube" if value == "none" => self.kube = None,
            "--kube" => self.kube = Some(PathBuf::from(value)),
            "--baseline" => self.baseline = Some(PathBuf::from(value)),
            _ => return false,
        }
        true
    }
}

/// The options after `mix`.
struct Options {
    compared: Compared,
    rounds: usize,
    only: Option<Vec<String>>,
    profile: Option<PathBuf>,
    /// Requests a second per phase (`--rate`), or as fast as the workers go.
    rate: Option<f64>,
}

fn options(rest: &[String]) -> Options {
    let usage = || -> ! {
        eprintln!(
            "usage: loadgen SECONDS mix [--kube PATH|none] [--baseline PATH] [--rounds N] [--only {}] [--profile DIR] [--rate PER_SECOND]",
            OPS.join(",")
        );
        std::process::exit(2)
    };
    let default_kube = std::env::var_os("KUBE_APISERVER")
        .map_or_else(|| PathBuf::from("/tmp/kube-ref/bin/kube-apiserver"), PathBuf::from);
    let mut o = Options { compared: Compared::new(default_kube), rounds: 1, only: None, profile: None, rate: None };
    let mut it = rest.iter();
    while let Some(flag) = it.next() {
        let Some(value) = it.next() else { usage() };
        match flag.as_str() {
            _ if o.compared.take(flag, value) => {}
            "--rounds" => o.rounds = value.parse().unwrap_or_else(|_| usage()),
            "--profile" => o.profile = Some(PathBuf::from(value)),
            "--rate" => o.rate = Some(value.parse().unwrap_or_else(|_| usage())),
            "--only" => {
                let ops: Vec<String> = value.split(',').map(str::to_string).collect();
                if ops.iter().any(|op| !OPS.contains(&op.as_str())) {
                    usage()
                }
                o.only = Some(ops)
            }
            _ => usage(),
        }
    }
    o
}

/// Files both servers are started with.
pub(crate) struct Shared {
    pub(crate) dir: tempfile::TempDir,
    ca: tests::pki::TestCa,
}

impl Shared {
    /// The certificates, keys and token file; `users` are more token file lines (`token,user,uid,"groups"`).
    pub(crate) fn new(users: &[String]) -> Shared {
        let dir = tempfile::tempdir().expect("temp dir");
        let ca = tests::pki::TestCa::new("mix");
        let (cert, key) = ca.peer_cert(&["127.0.0.1", "localhost"]);
        std::fs::write(dir.path().join("serving.crt"), cert).unwrap();
        std::fs::write(dir.path().join("serving.key"), key).unwrap();
        std::fs::write(dir.path().join("ca.crt"), ca.pem()).unwrap();
        let made = Command::new("openssl")
            .args(["genrsa", "-traditional", "-out"])
            .arg(dir.path().join("sa.key"))
            .arg("2048")
            .output();
        assert!(made.is_ok_and(|o| o.status.success()), "openssl genrsa");
        let mut tokens = format!("{ADMIN_TOKEN},admin,uid-admin,\"system:masters\"\n");
        for n in 0..WORKERS {
            tokens.push_str(&format!("{},system:node:node-{n},uid-node-{n},\"system:nodes\"\n", node_token(n)));
        }
        for line in users {
            tokens.push_str(line);
            tokens.push('\n');
        }
        std::fs::write(dir.path().join("tokens.csv"), tokens).unwrap();
        Shared { dir, ca }
    }

    pub(crate) fn path(&self, name: &str) -> String {
        self.dir.path().join(name).display().to_string()
    }

    /// The flags both servers take alike.
    fn flags(&self, etcd: &str) -> Vec<String> {
        let key = self.path("sa.key");
        [
            "--etcd-servers",
            etcd,
            "--tls-cert-file",
            &self.path("serving.crt"),
            "--tls-private-key-file",
            &self.path("serving.key"),
            "--token-auth-file",
            &self.path("tokens.csv"),
            "--authorization-mode",
            "Node,RBAC",
            "--service-account-issuer",
            "https://kubernetes.default.svc",
            "--service-account-key-file",
            &key,
            "--service-account-signing-key-file",
            &key,
            "--service-cluster-ip-range",
            "10.0.0.0/20",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    }

    /// An HTTP/1.1 client trusting the serving certificate, sending `token`.
    pub(crate) fn client(&self, token: &str) -> awc::Client {
        let mut roots = rustls::RootCertStore::empty();
        use rustls::pki_types::pem::PemObject;
        for c in rustls::pki_types::CertificateDer::pem_slice_iter(self.ca.pem().as_bytes()) {
            roots.add(c.expect("ca pem")).expect("ca");
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("tls versions")
            .with_root_certificates(roots)
            .with_no_client_auth();
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        awc::Client::builder()
            .connector(awc::Connector::new().rustls_0_23(Arc::new(config)).limit(2 * WATCHERS))
            .bearer_auth(token)
            .timeout(Duration::from_secs(60))
            .finish()
    }
}

/// A server under measurement, with its etcd; stopped when dropped.
pub(crate) struct Target {
    label: String,
    pub(crate) base: String,
    pub(crate) pid: u32,
    pub(crate) admin: awc::Client,
    nodes: Vec<awc::Client>,
    /// Where its phases' `perf` samples go, when they are taken.
    profile: Option<PathBuf>,
    /// Requests a second per phase (`--rate`), or as fast as the workers go.
    rate: Option<f64>,
    _process: Process,
    pub(crate) etcd: EtcdProcess,
}

enum Process {
    /// Held for its drop, which stops the server.
    Ours {
        _server: Box<TestServer>,
    },
    Kube(Child),
}

impl Drop for Process {
    fn drop(&mut self) {
        if let Process::Kube(child) = self {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Target {
    pub(crate) async fn ours(label: &str, bin: &Path, shared: &Shared) -> Target {
        let etcd = actix_web::rt::task::spawn_blocking(EtcdProcess::start).await.expect("etcd");
        let flags = shared.flags(etcd.endpoint());
        let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
        let server = TestServer::start_binary(bin, &flags);
        let (base, pid) = (format!("https://127.0.0.1:{}", server.port), server.pid());
        Target::ready(label, base, pid, Process::Ours { _server: Box::new(server) }, etcd, shared).await
    }

    pub(crate) async fn kube(bin: &Path, shared: &Shared) -> Target {
        let etcd = actix_web::rt::task::spawn_blocking(EtcdProcess::start).await.expect("etcd");
        let port = tests::free_port();
        let log = std::fs::File::create(shared.dir.path().join(format!("kube-{port}.log"))).unwrap();
        let child = Command::new(bin)
            .args(shared.flags(etcd.endpoint()))
            .args(["--bind-address", "127.0.0.1", "--secure-port", &port.to_string(), "--cert-dir"])
            .arg(shared.dir.path().join(format!("kube-certs-{port}")))
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("start kube-apiserver");
        let base = format!("https://127.0.0.1:{port}");
        let pid = child.id();
        Target::ready("kube-apiserver", base, pid, Process::Kube(child), etcd, shared).await
    }

    /// Waits for `/readyz`.
    async fn ready(
        label: &str,
        base: String,
        pid: u32,
        process: Process,
        etcd: EtcdProcess,
        shared: &Shared,
    ) -> Target {
        let admin = shared.client(ADMIN_TOKEN);
        let nodes = (0..WORKERS).map(|n| shared.client(&node_token(n))).collect();
        let target = Target {
            label: label.to_string(),
            base,
            pid,
            admin,
            nodes,
            profile: None,
            rate: None,
            _process: process,
            etcd,
        };
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            let ok = target.admin.get(target.url("/readyz")).send().await.is_ok_and(|r| r.status().is_success());
            if ok {
                break;
            }
            assert!(Instant::now() < deadline, "{label} is not ready at {}", target.base);
            actix_web::rt::time::sleep(Duration::from_millis(250)).await;
        }
        target
    }

    pub(crate) fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    pub(crate) fn cpu(&self) -> Duration {
        cpu_time(self.pid)
    }

    /// Creates `body` at `path` as the admin (an object already there is fine).
    async fn create(&self, path: &str, body: Value) -> Value {
        for _ in 0..100 {
            match self.admin.post(self.url(path)).send_json(&body).await {
                Ok(mut r) if r.status().as_u16() == 201 => return r.json().limit(1 << 20).await.expect("created"),
                Ok(r) if r.status().as_u16() == 409 => return Value::Null,
                // A namespace just made may not yet hold its service account.
                _ => actix_web::rt::time::sleep(Duration::from_millis(100)).await,
            }
        }
        panic!("{}: could not create {path}: {body}", self.label)
    }

    /// The namespace, the nodes, their Leases and a pod bound to each, the ConfigMaps.
    async fn seed(&self) {
        self.create("/api/v1/namespaces", json!({"metadata": {"name": NAMESPACE}})).await;
        // kube-apiserver alone (no controller manager) makes no service account.
        self.create(
            &format!("/api/v1/namespaces/{NAMESPACE}/serviceaccounts"),
            json!({"metadata": {"name": "default"}}),
        )
        .await;
        for n in 0..WORKERS {
            self.create("/api/v1/nodes", node(n)).await;
            self.create(
                "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases",
                json!({"metadata": {"name": format!("node-{n}")}, "spec": {"holderIdentity": format!("node-{n}"), "leaseDurationSeconds": 40}}),
            )
            .await;
            self.create(&format!("/api/v1/namespaces/{NAMESPACE}/pods"), pod(n)).await;
        }
        let cms = format!("/api/v1/namespaces/{NAMESPACE}/configmaps");
        self.create(&cms, json!({"metadata": {"name": "hot"}, "data": {"k": "v"}})).await;
        for w in 0..WORKERS {
            self.create(&cms, json!({"metadata": {"name": format!("u-{w}")}, "data": {"k": "0"}})).await;
        }
    }
}

fn node(n: usize) -> Value {
    json!({
        "metadata": {"name": format!("node-{n}"), "labels": {"kubernetes.io/hostname": format!("node-{n}"), "kubernetes.io/os": "linux"}},
        "status": {"capacity": {"cpu": "4", "memory": "16Gi", "pods": "110"}, "allocatable": {"cpu": "4", "memory": "16Gi", "pods": "110"}}
    })
}

/// A pod bound to `node-<n>`, shaped as a Deployment's.
fn pod(n: usize) -> Value {
    json!({
        "metadata": {"name": format!("p-{n}"), "labels": {"app": "web", "pod-template-hash": "7d4b9c8f6"}},
        "spec": {
            "nodeName": format!("node-{n}"),
            "containers": [{
                "name": "app", "image": "registry.example.com/shop/web:1.25.3",
                "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}],
                "env": [{"name": "MODE", "value": "production"}],
                "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"cpu": "500m", "memory": "256Mi"}},
                "readinessProbe": {"httpGet": {"path": "/ready", "port": "http"}, "periodSeconds": 10}
            }]
        }
    })
}

/// A pod's status as its kubelet patches it (strategic merge on the conditions), the `i`th time.
fn pod_status_patch(i: usize) -> String {
    let t = format!("2026-01-01T00:{:02}:{:02}Z", (i / 60) % 60, i % 60);
    json!({"status": {
        "$setElementOrder/conditions": [{"type": "Initialized"}, {"type": "Ready"}, {"type": "ContainersReady"}, {"type": "PodScheduled"}],
        "conditions": [
            {"type": "Ready", "status": "True", "lastProbeTime": null, "lastTransitionTime": t, "message": format!("probe {i}")},
            {"type": "ContainersReady", "status": "True", "lastProbeTime": null, "lastTransitionTime": t}
        ],
        "phase": "Running", "podIP": "10.244.0.7", "podIPs": [{"ip": "10.244.0.7"}], "hostIP": "10.0.0.7"
    }})
    .to_string()
}

/// One row: an op and the server's µs of CPU per request (event, object).
type Row = (&'static str, f64);

fn per(used: Duration, n: usize) -> f64 {
    used.as_secs_f64() * 1e6 / n.max(1) as f64
}

/// Runs `op` on 64 workers for `seconds` and prints and returns its CPU per request.
async fn phase<F, Fut>(t: &Target, name: &'static str, seconds: Duration, op: F) -> Row
where
    F: Fn(usize, usize) -> Fut + Clone + 'static,
    Fut: std::future::Future<Output = bool> + 'static,
{
    let recording = t.profile.as_ref().and_then(|dir| {
        let length = seconds.saturating_sub(Duration::from_millis(500));
        profile::record(t.pid, &dir.join(format!("{name}.perf.data")), length)
    });
    let cpu = t.cpu();
    let p: Phase = run_paced(WORKERS, seconds, t.rate, op).await;
    let used = t.cpu().saturating_sub(cpu);
    crate::report_cpu(name, WORKERS, &p, None, Some(used));
    if let Some(breakdown) = recording.and_then(profile::Recording::finish) {
        println!("  {} samples, by stage (µs of this phase's CPU per request):", breakdown.samples);
        for line in breakdown.lines(per(used, p.ops)) {
            println!("{line}");
        }
    }
    if p.errors > p.ops / 100 {
        eprintln!("!! {}: {name}: {} of {} requests failed", t.label, p.errors, p.ops + p.errors);
    }
    (name, per(used, p.ops))
}

/// A phase's setup read: sent again (twice at most) when the pooled connection it took turns out
/// closed, as one the server closed while it sat idle through the phases before can.
async fn setup_get(client: &awc::Client, url: &str) -> Value {
    let mut attempts = 0;
    loop {
        match client.get(url).send().await {
            Ok(mut r) => return r.json().limit(1 << 20).await.unwrap_or_else(|e| panic!("GET {url}: {e}")),
            Err(e) if attempts < 2 => {
                attempts += 1;
                eprintln!("GET {url}: {e}; sending again");
            }
            Err(e) => panic!("GET {url}: {e}"),
        }
    }
}

/// Whether a request got `code`, reading the body so the connection can be reused; the
/// first few failures of a run are printed with their answers.
async fn answered<S>(sent: Result<awc::ClientResponse<S>, awc::error::SendRequestError>, code: u16) -> bool
where
    S: futures_util::Stream<Item = Result<bytes::Bytes, awc::error::PayloadError>> + Unpin,
{
    use std::sync::atomic::{AtomicUsize, Ordering};
    static SHOWN: AtomicUsize = AtomicUsize::new(0);
    let (status, body) = match sent {
        Ok(mut r) => (r.status().as_u16(), r.body().limit(1 << 24).await.unwrap_or_default()),
        Err(e) => (0, bytes::Bytes::from(e.to_string())),
    };
    if status != code && SHOWN.fetch_add(1, Ordering::Relaxed) < 5 {
        eprintln!("!! answered {status}, not {code}: {}", String::from_utf8_lossy(&body[..body.len().min(400)]));
    }
    status == code
}

/// Sends `body` with `content_type` by `method`, expecting `code`.
async fn send(client: &awc::Client, method: &str, url: &str, content_type: &str, body: String, code: u16) -> bool {
    let req = match method {
        "PUT" => client.put(url),
        "POST" => client.post(url),
        _ => client.patch(url),
    };
    answered(req.insert_header(("Content-Type", content_type)).send_body(body).await, code).await
}

/// Every phase `only` lets through, on `t`.
async fn rows(t: &Target, seconds: Duration, only: &Option<Vec<String>>) -> Vec<Row> {
    println!("-- {} ({}, pid {})", t.label, t.base, t.pid);
    let wanted = |op: &str| only.as_ref().is_none_or(|o| o.iter().any(|x| x == op));
    let ns = format!("/api/v1/namespaces/{NAMESPACE}");
    let mut out = Vec::new();
    let admin = t.admin.clone();
    let cms = t.url(&format!("{ns}/configmaps"));
    let payload = "x".repeat(900);

    if wanted("create") {
        let (c, u, p) = (admin.clone(), cms.clone(), payload.clone());
        out.push(
            phase(t, "create", seconds, move |w, i| {
                let body = json!({"metadata": {"name": format!("c-{w}-{i}-{}", rand_suffix())}, "data": {"payload": p.clone()}});
                let (c, u) = (c.clone(), u.clone());
                async move { answered(c.post(&u).send_json(&body).await, 201).await }
            })
            .await,
        );
    }
    if wanted("get") {
        let (c, u) = (admin.clone(), format!("{cms}/hot"));
        out.push(
            phase(t, "get", seconds, move |_, _| {
                let (c, u) = (c.clone(), u.clone());
                async move { answered(c.get(&u).send().await, 200).await }
            })
            .await,
        );
    }
    let writes: [(&'static str, &'static str, &'static str); 4] = [
        ("update", "PUT", "application/json"),
        ("patch-strategic", "PATCH", "application/strategic-merge-patch+json"),
        ("patch-merge", "PATCH", "application/merge-patch+json"),
        ("apply", "PATCH", "application/apply-patch+yaml"),
    ];
    for (name, method, content_type) in writes {
        if !wanted(name) {
            continue;
        }
        let (c, u, p) = (admin.clone(), cms.clone(), payload.clone());
        out.push(
            phase(t, name, seconds, move |w, i| {
                let (c, p) = (c.clone(), p.clone());
                let mut url = format!("{u}/u-{w}");
                let body = match name {
                    "update" | "apply" => {
                        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": format!("u-{w}")}, "data": {"k": i.to_string(), "payload": p}})
                    }
                    _ => json!({"data": {"k": i.to_string(), "payload": p}}),
                };
                if name == "apply" {
                    url.push_str("?fieldManager=mix&force=true");
                }
                async move { send(&c, method, &url, content_type, body.to_string(), 200).await }
            })
            .await,
        );
    }
    if wanted("pod-status-patch") {
        let (nodes, u) = (t.nodes.clone(), t.url(&format!("{ns}/pods")));
        out.push(
            phase(t, "pod-status-patch", seconds, move |w, i| {
                let (c, url) = (nodes[w].clone(), format!("{u}/p-{w}/status"));
                async move {
                    send(&c, "PATCH", &url, "application/strategic-merge-patch+json", pod_status_patch(i), 200).await
                }
            })
            .await,
        );
    }
    if wanted("lease-put") {
        // Each kubelet PUTs its Lease with the resourceVersion its last write returned.
        let (nodes, u) = (t.nodes.clone(), t.url("/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases"));
        let mut first = Vec::new();
        for (w, node) in nodes.iter().enumerate() {
            let lease = setup_get(node, &format!("{u}/node-{w}")).await;
            first.push(lease["metadata"]["resourceVersion"].as_str().unwrap_or_default().to_string());
        }
        let versions = Rc::new(RefCell::new(first));
        out.push(
            phase(t, "lease-put", seconds, move |w, i| {
                let (c, url, versions) = (nodes[w].clone(), format!("{u}/node-{w}"), versions.clone());
                async move {
                    let rv = versions.borrow()[w].clone();
                    let renew = format!("2026-01-01T00:00:{:02}.{:06}Z", i % 60, i % 1_000_000);
                    let body = json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                        "metadata": {"name": format!("node-{w}"), "namespace": "kube-node-lease", "resourceVersion": rv},
                        "spec": {"holderIdentity": format!("node-{w}"), "leaseDurationSeconds": 40, "renewTime": renew}});
                    let Ok(mut r) = c.put(&url).send_json(&body).await else { return false };
                    let Ok(lease) = r.json::<Value>().await else { return false };
                    match lease["metadata"]["resourceVersion"].as_str() {
                        Some(rv) if r.status().as_u16() == 200 => {
                            versions.borrow_mut()[w] = rv.to_string();
                            true
                        }
                        _ => false,
                    }
                }
            })
            .await,
        );
    }
    if wanted("node-get") {
        let (nodes, u) = (t.nodes.clone(), t.url("/api/v1/nodes"));
        out.push(
            phase(t, "node-get", seconds, move |w, _| {
                let (c, url) = (nodes[w].clone(), format!("{u}/node-{w}"));
                async move { answered(c.get(&url).send().await, 200).await }
            })
            .await,
        );
    }
    if wanted("token-request") {
        let mut uids = Vec::new();
        for w in 0..WORKERS {
            let p = setup_get(&admin, &t.url(&format!("{ns}/pods/p-{w}"))).await;
            uids.push(p["metadata"]["uid"].as_str().unwrap_or_default().to_string());
        }
        let (nodes, u) = (t.nodes.clone(), t.url(&format!("{ns}/serviceaccounts/default/token")));
        out.push(
            phase(t, "token-request", seconds, move |w, _| {
                let (c, u) = (nodes[w].clone(), u.clone());
                let body = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                    "spec": {"audiences": ["https://kubernetes.default.svc"], "expirationSeconds": 3607,
                        "boundObjectRef": {"apiVersion": "v1", "kind": "Pod", "name": format!("p-{w}"), "uid": uids[w]}}});
                async move { answered(c.post(&u).send_json(&body).await, 201).await }
            })
            .await,
        );
    }
    if wanted("event-post") {
        let (nodes, u) = (t.nodes.clone(), t.url(&format!("{ns}/events")));
        out.push(
            phase(t, "event-post", seconds, move |w, i| {
                let (c, u) = (nodes[w].clone(), u.clone());
                let body = json!({"metadata": {"name": format!("p-{w}.{i:x}{}", rand_suffix())},
                    "involvedObject": {"kind": "Pod", "namespace": NAMESPACE, "name": format!("p-{w}"), "apiVersion": "v1", "fieldPath": "spec.containers{app}"},
                    "reason": "Pulled", "message": "Container image \"registry.example.com/shop/web:1.25.3\" already present on machine",
                    "source": {"component": "kubelet", "host": format!("node-{w}")}, "type": "Normal", "count": 1,
                    "firstTimestamp": "2026-01-01T00:00:00Z", "lastTimestamp": "2026-01-01T00:00:00Z",
                    "reportingComponent": "kubelet", "reportingInstance": format!("node-{w}")});
                async move { answered(c.post(&u).send_json(&body).await, 201).await }
            })
            .await,
        );
    }
    if wanted("list-pods-by-node") {
        let (nodes, u) = (t.nodes.clone(), t.url("/api/v1/pods"));
        out.push(
            phase(t, "list-pods-by-node", seconds, move |w, _| {
                let (c, url) =
                    (nodes[w].clone(), format!("{u}?fieldSelector=spec.nodeName%3Dnode-{w}&resourceVersion=0"));
                async move { answered(c.get(&url).send().await, 200).await }
            })
            .await,
        );
    }
    if wanted("list-configmaps-per-object") {
        out.push(list_configmaps(t, &cms).await);
    }
    if wanted("watch-by-node-per-event") {
        out.push(watch_by_node(t, seconds).await);
    }
    out
}

/// A fresh server's CPU while idle (ms per second over [`IDLE`], after 5 s to settle), and its
/// resident memory (MiB) once it holds 10,000 ConfigMaps of about 1 KiB, made at c=64 and then
/// left to settle for 3 s.
async fn idle_and_memory(t: &Target) -> [Row; 2] {
    actix_web::rt::time::sleep(Duration::from_secs(5)).await;
    let (cpu, started) = (t.cpu(), Instant::now());
    actix_web::rt::time::sleep(IDLE).await;
    let idle_cpu = t.cpu().saturating_sub(cpu).as_secs_f64() * 1e3 / started.elapsed().as_secs_f64();
    println!("idle                         {idle_cpu:.2} ms of CPU per second over {} s", IDLE.as_secs());
    let idle = crate::rss_mib(t.pid);
    let made = fill(t, &t.url("/api/v1/namespaces/default/configmaps"), 10_000).await;
    actix_web::rt::time::sleep(Duration::from_secs(3)).await;
    let rss = crate::rss_mib(t.pid);
    println!("memory                       resident {idle:.1} MiB seeded, {rss:.1} MiB with {made} more ConfigMaps");
    [("idle-cpu-ms-per-s", idle_cpu), ("rss-mib-10k-configmaps", rss)]
}

/// Creates `n` ConfigMaps of about 1 KiB at `url`, [`WORKERS`] at a time; how many were made.
async fn fill(t: &Target, url: &str, n: usize) -> usize {
    let mut made = 0;
    while made < n {
        let batch: Vec<_> = (0..WORKERS.min(n - made))
            .map(|_| {
                let (c, u) = (t.admin.clone(), url.to_string());
                let body =
                    json!({"metadata": {"name": format!("f-{}", rand_suffix())}, "data": {"payload": "x".repeat(900)}});
                actix_web::rt::spawn(async move { answered(c.post(&u).send_json(&body).await, 201).await })
            })
            .collect();
        for b in batch {
            made += usize::from(b.await.unwrap_or(false));
        }
    }
    made
}

/// Distinguishes names across rounds on one server.
fn rand_suffix() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    format!("{:x}", N.fetch_add(1, Ordering::Relaxed))
}

/// Fills the namespace to [`LISTED`] ConfigMaps, then LISTs them all from the cache, at least
/// five times and until the server has spent half a second on it.
async fn list_configmaps(t: &Target, cms: &str) -> Row {
    let mut r = t.admin.get(format!("{cms}?resourceVersion=0")).send().await.expect("list");
    let have = r.json::<Value>().limit(1 << 30).await.expect("list")["items"].as_array().map_or(0, Vec::len);
    fill(t, cms, LISTED.saturating_sub(have)).await;
    // CPU time is counted in 10 ms ticks: list until the server has spent 50 of them.
    let (mut listed, mut lists, cpu) = (0usize, 0usize, t.cpu());
    while lists < 5 || (t.cpu().saturating_sub(cpu) < Duration::from_millis(500) && lists < 200) {
        let mut r = t.admin.get(format!("{cms}?resourceVersion=0")).send().await.expect("list");
        let list: Value = r.json().limit(1 << 30).await.expect("list body");
        listed += list["items"].as_array().map_or(0, Vec::len);
        lists += 1;
    }
    let used = t.cpu().saturating_sub(cpu);
    println!(
        "list-configmaps (cache)      {} objects in each of {lists} lists, server CPU {:.2} µs per object",
        listed / lists,
        per(used, listed)
    );
    ("list-configmaps-per-object", per(used, listed))
}

/// Writes the statuses of the pods of the first [`WATCHED_NODES`] nodes at
/// [`WATCHED_WRITES`] per second for `seconds`, as the admin; the server's CPU over it.
async fn write_statuses(t: &Target, seconds: Duration) -> (Duration, usize) {
    let u = t.url(&format!("/api/v1/namespaces/{NAMESPACE}/pods"));
    let mut tick = actix_web::rt::time::interval(Duration::from_secs_f64(1.0 / WATCHED_WRITES as f64));
    let (stop, cpu) = (Instant::now() + seconds, t.cpu());
    let done: Rc<RefCell<usize>> = Rc::default();
    let mut tasks = Vec::new();
    let mut i = 0usize;
    while Instant::now() < stop {
        tick.tick().await;
        let (c, url, done) = (t.admin.clone(), format!("{u}/p-{}/status", i % WATCHED_NODES), done.clone());
        let body = pod_status_patch(i + 100_000);
        tasks.push(actix_web::rt::spawn(async move {
            if send(&c, "PATCH", &url, "application/strategic-merge-patch+json", body, 200).await {
                *done.borrow_mut() += 1;
            }
        }));
        i += 1;
    }
    for task in tasks {
        let _ = task.await;
    }
    let used = t.cpu().saturating_sub(cpu);
    let n = *done.borrow();
    (used, n)
}

/// Watch fan-out with the kubelets' field selector: the CPU of pod status writes under
/// [`WATCHERS`] watchers, less the CPU of the same writes with none, per event delivered.
async fn watch_by_node(t: &Target, seconds: Duration) -> Row {
    let (alone, alone_writes) = write_statuses(t, seconds).await;
    let mut r = t.admin.get(t.url(&format!("/api/v1/namespaces/{NAMESPACE}/pods?limit=1"))).send().await.expect("list");
    let rv = r.json::<Value>().await.expect("list")["metadata"]["resourceVersion"].as_str().unwrap_or("0").to_string();
    let events: Rc<RefCell<usize>> = Rc::default();
    let mut watches = Vec::new();
    for k in 0..WATCHERS {
        let n = k % WATCHED_NODES;
        let url = t.url(&format!(
            "/api/v1/pods?watch=true&fieldSelector=spec.nodeName%3Dnode-{n}&resourceVersion={rv}&allowWatchBookmarks=true"
        ));
        let (c, events) = (t.nodes[n].clone(), events.clone());
        watches.push(actix_web::rt::spawn(async move {
            let Ok(mut resp) = c.get(&url).timeout(Duration::from_secs(3600)).send().await else { return };
            while let Some(Ok(chunk)) = resp.next().await {
                let lines = memchr::memchr_iter(b'\n', &chunk).count();
                let bookmarks = memchr::memmem::find_iter(&chunk, b"\"BOOKMARK\"").count();
                *events.borrow_mut() += lines - bookmarks.min(lines);
            }
        }));
    }
    // Every watch established before the writes start.
    actix_web::rt::time::sleep(Duration::from_secs(3)).await;
    let before = *events.borrow();
    let (watched, watched_writes) = write_statuses(t, seconds).await;
    actix_web::rt::time::sleep(Duration::from_millis(500)).await;
    let delivered = *events.borrow() - before;
    for w in watches {
        w.abort();
    }
    let alone_per_write = per(alone, alone_writes);
    let extra = watched.as_secs_f64() * 1e6 - alone_per_write * watched_writes as f64;
    let expected = watched_writes * WATCHERS / WATCHED_NODES;
    println!(
        "watch-by-node                {WATCHERS} watchers, {watched_writes} writes: {delivered} of {expected} events delivered; \
         server CPU per write {alone_per_write:.0} µs alone, {:.0} µs watched; {:.2} µs per delivered event",
        per(watched, watched_writes),
        extra / delivered.max(1) as f64
    );
    ("watch-by-node-per-event", extra / delivered.max(1) as f64)
}

/// A fresh server of `label` on a fresh etcd, seeded.
async fn start(label: &str, o: &Options, shared: &Shared) -> Target {
    let mut t = match label {
        "kube-apiserver" => Target::kube(o.compared.kube.as_deref().expect("a kube-apiserver"), shared).await,
        "this build" => {
            let mut t = Target::ours(label, &tests::apiserver_bin(), shared).await;
            if let Some(dir) = &o.profile {
                std::fs::create_dir_all(dir).expect("profile directory");
                t.profile = Some(dir.clone());
            }
            t
        }
        _ => Target::ours(label, o.compared.baseline.as_deref().expect("a baseline build"), shared).await,
    };
    t.rate = o.rate;
    t.seed().await;
    t
}

/// Runs the mix on kube-apiserver (when there is one), this build and `--baseline`, for
/// `--rounds` rounds, then prints each op's mean µs per request side by side.
pub async fn run_all(seconds: Duration, rest: Vec<String>) {
    let o = options(&rest);
    let shared = Shared::new(&[]);
    let mut servers: Vec<String> = Vec::new();
    if o.compared.kube.is_some() {
        servers.push("kube-apiserver".into());
    } else {
        println!("(no kube-apiserver: this server alone; `--kube PATH` or KUBE_APISERVER)");
    }
    servers.push("this build".into());
    if o.compared.baseline.is_some() {
        servers.push("baseline build".into());
    }
    let mut all: Vec<(String, &'static str, f64)> = Vec::new();
    for round in 0..o.rounds {
        println!("== round {} of {}, {} workers, {} s per phase", round + 1, o.rounds, WORKERS, seconds.as_secs_f64());
        for label in &servers {
            let target = start(label, &o, &shared).await;
            for (op, us) in rows(&target, seconds, &o.only).await {
                all.push((label.clone(), op, us));
            }
            drop(target);
            let fresh = ["idle-cpu-ms-per-s", "rss-mib-10k-configmaps"];
            if o.only.as_ref().is_none_or(|only| only.iter().any(|op| fresh.contains(&op.as_str()))) {
                for (op, value) in idle_and_memory(&start(label, &o, &shared).await).await {
                    all.push((label.clone(), op, value));
                }
            }
        }
    }
    println!("== server CPU per request, µs (mean of {} rounds; idle in ms/s, memory in MiB)", o.rounds);
    let header: Vec<String> = servers.iter().map(|s| format!("{s:>16}")).collect();
    println!("{:<28}{}{}", "request", header.join(""), if o.compared.kube.is_some() { "   this / kube" } else { "" });
    for op in OPS {
        let mean = |label: &str| {
            let v: Vec<f64> = all.iter().filter(|r| r.0 == label && r.1 == *op).map(|r| r.2).collect();
            (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
        };
        if mean("this build").is_none() {
            continue;
        }
        let cells: Vec<String> =
            servers.iter().map(|s| mean(s).map_or(format!("{:>16}", "-"), |v| format!("{v:>16.1}"))).collect();
        let ratio = match (mean("this build"), mean("kube-apiserver")) {
            (Some(ours), Some(kube)) if kube > 0.0 => format!("   {:.2}", ours / kube),
            _ => String::new(),
        };
        println!("{op:<28}{}{ratio}", cells.join(""));
    }
}
