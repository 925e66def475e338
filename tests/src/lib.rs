//! The harness of the end-to-end tests and the load generator: boots the real `apiserver`
//! binary on free loopback ports with its own data directory, and drives it with real clients
//! (kubectl 1.30, the Python `kubernetes` client) and a raw HTTPS client for exact status checks.
//!
//! The binary is `target/<profile>/apiserver` next to the test executable (build it first:
//! `cargo build --release -p gateway --bin apiserver`), or `$APISERVER_BIN`. kubectl comes from
//! `$KUBECTL`, Python from `$APISERVER_PYTHON` (`deploy/install-tools.sh` prints both). A missing
//! tool fails the test with a message saying how to install it: nothing is skipped silently.
//!
//! # Layout
//! - [`http`]: raw requests sent as a chosen caller.
//! - [`webhook`]: admission webhook servers for the tests and the load generator.
//! - [`extension`]: an extension API server, for aggregation.
//! - [`pki`]: the certificates of both.
//! - [`fleet`]: storage stage processes beside gateways.
//! - [`load`]: the load generator's per-stage capacity runs and clusterloader2-style scenario.
//! - [`robustness`]: a history recorded under faults, checked for linearizability and the
//!   watch guarantees.
//! - [`flags`]: the duration flags of the load generator and the robustness runner.
//! - `src/bin/`: the `loadgen` and `robustness` binaries. Beside `src/`, `tests/` holds the test
//!   binaries: `e2e`, `load`, `robustness`, the crate-rule check (`architecture`) and what a
//!   checkout promises (`checkout`).

pub mod extension;
pub mod flags;
pub mod fleet;
pub mod http;
pub mod kubelet;
pub mod load;
pub mod pki;
pub mod robustness;
pub mod spdy;
pub mod webhook;

pub use http::{Answer, Caller};

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::Engine;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// The first line a started process prints on stdout (empty if none within 60 s); the rest is
/// drained so the pipe never fills.
pub fn first_line(child: &mut Child) -> String {
    let stdout = child.stdout.take().expect("stdout piped");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut lines = BufReader::new(stdout).lines();
        if let Some(Ok(first)) = lines.next() {
            let _ = tx.send(first);
        }
        for _ in lines {}
    });
    rx.recv_timeout(Duration::from_secs(60)).unwrap_or_default()
}

/// Every JSON line a started process prints on stdout (a watch), as it prints it.
pub fn json_lines(child: &mut Child) -> std::sync::mpsc::Receiver<serde_json::Value> {
    let stdout = child.stdout.take().expect("stdout piped");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Ok(v) = serde_json::from_str(&line) {
                let _ = tx.send(v);
            }
        }
    });
    rx
}

/// The last 40 lines of a log file, for failure messages.
pub fn tail(log: &Path) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(40)..].join("\n")
}

/// A free loopback port (bound once, released for the server to take), outside the range
/// outgoing connections take theirs from, so that a server restarted on it finds it free.
pub fn free_port() -> u16 {
    storage::etcd::testing::unused_port()
}

/// This machine's address on its default route: Endpoints may not point at loopback (kube's
/// validation refuses 127.0.0.0/8), so a server reached through a Service listens here.
pub fn host_ip() -> String {
    let probe = std::net::UdpSocket::bind("0.0.0.0:0").unwrap();
    // Connecting a UDP socket sends nothing; it only picks the route and the local address.
    probe.connect("10.255.255.255:9").expect("a route off this machine (for a non-loopback address)");
    let ip = probe.local_addr().unwrap().ip();
    assert!(!ip.is_loopback() && !ip.is_unspecified(), "a non-loopback address for the Endpoints: {ip}");
    ip.to_string()
}

/// A kubeconfig presenting `token` to `server` in namespace `default`; `ca` is the field that
/// trusts the server's CA with its value (`certificate-authority-data: <base64>` or
/// `certificate-authority: <path>`).
pub fn token_kubeconfig_text(server: &str, ca: &str, token: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: local\n  cluster:\n    server: {server}\n    {ca}\nusers:\n- name: user\n  user:\n    token: {token}\ncontexts:\n- name: user\n  context:\n    cluster: local\n    user: user\n    namespace: default\ncurrent-context: user\n"
    )
}

/// The apiserver binary under test.
pub fn apiserver_bin() -> PathBuf {
    if let Ok(p) = std::env::var("APISERVER_BIN") {
        return PathBuf::from(p);
    }
    let exe = std::env::current_exe().expect("test executable path");
    // Tests run from target/<profile>/deps/, binaries (the load generator) from target/<profile>/.
    let dir = exe.parent().expect("executable dir");
    let dir = if dir.ends_with("deps") { dir.parent().expect("target dir") } else { dir };
    let bin = dir.join("apiserver");
    assert!(
        bin.exists(),
        "{} is missing: build it first with `cargo build --release -p gateway --bin apiserver` (deploy/test.sh does)",
        bin.display()
    );
    bin
}

fn tool(env: &str, fallbacks: &[&str], install_hint: &str) -> PathBuf {
    if let Ok(p) = std::env::var(env) {
        return PathBuf::from(p);
    }
    for f in fallbacks {
        if Path::new(f).exists() {
            return PathBuf::from(f);
        }
    }
    panic!("${env} is not set and none of {fallbacks:?} exists: {install_hint}");
}

/// kubectl 1.30.
pub fn kubectl_bin() -> PathBuf {
    tool(
        "KUBECTL",
        &["/opt/apiserver-tools/bin/kubectl", "/opt/realtools/bin/kubectl"],
        "run `eval \"$(deploy/install-tools.sh)\"`",
    )
}

/// helm 3.
pub fn helm_bin() -> PathBuf {
    tool("HELM", &["/opt/apiserver-tools/bin/helm"], "run `eval \"$(deploy/install-tools.sh)\"`")
}

/// Python with the `kubernetes` client.
pub fn python_bin() -> PathBuf {
    tool(
        "APISERVER_PYTHON",
        &["/opt/apiserver-tools/venv/bin/python", "/opt/realtools/venv/bin/python"],
        "run `eval \"$(deploy/install-tools.sh)\"`",
    )
}

/// A running apiserver process.
pub struct TestServer {
    child: Option<Child>,
    /// The data directory (kept across restarts).
    pub data_dir: PathBuf,
    _owned_dir: Option<tempfile::TempDir>,
    /// The HTTPS port.
    pub port: u16,
    /// The admin port.
    pub admin_port: u16,
    /// `<data-dir>/admin.kubeconfig`.
    pub kubeconfig: PathBuf,
    /// Extra flags it was started with.
    args: Vec<String>,
    /// `RUST_LOG` it was started with, when not the test run's own.
    log_level: Option<String>,
    log: PathBuf,
    /// The binary it runs ([`apiserver_bin`] unless started with another).
    bin: PathBuf,
}

impl TestServer {
    /// Starts a server with a fresh data directory.
    pub fn start() -> Self {
        Self::start_with(&[])
    }

    /// Starts a server with a fresh data directory and extra flags.
    pub fn start_with(args: &[&str]) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let data_dir = dir.path().to_path_buf();
        let mut s =
            Self::launch_on_free_ports(apiserver_bin(), data_dir, args.iter().map(|s| s.to_string()).collect(), None);
        s._owned_dir = Some(dir);
        s
    }

    /// Starts `bin`, another build of the server, with a fresh data directory and extra flags:
    /// benchmarks compare two builds in one run.
    pub fn start_binary(bin: &Path, args: &[&str]) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let data_dir = dir.path().to_path_buf();
        let args = args.iter().map(|s| s.to_string()).collect();
        let mut s = Self::launch_on_free_ports(bin.to_path_buf(), data_dir, args, None);
        s._owned_dir = Some(dir);
        s
    }

    /// Starts a server with a fresh data directory, extra flags and `RUST_LOG=level` (for tests
    /// of what it logs).
    pub fn start_logging(level: &str, args: &[&str]) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let args = args.iter().map(|s| s.to_string()).collect();
        let mut s = Self::launch_on_free_ports(apiserver_bin(), dir.path().to_path_buf(), args, Some(level.into()));
        s._owned_dir = Some(dir);
        s
    }

    /// Everything the server has logged so far.
    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Starts a server on an existing data directory (kept afterwards).
    pub fn start_in(data_dir: &Path) -> Self {
        Self::launch_on_free_ports(apiserver_bin(), data_dir.to_path_buf(), Vec::new(), None)
    }

    /// Launches on ports that were free a moment ago; another process on the machine may take
    /// one first (the ports are released before the server binds them), so a server that could
    /// not bind is started again on new ones.
    fn launch_on_free_ports(bin: PathBuf, data_dir: PathBuf, args: Vec<String>, log_level: Option<String>) -> Self {
        for _ in 0..4 {
            let ports = (free_port(), free_port());
            match Self::try_launch(&bin, data_dir.clone(), ports, args.clone(), log_level.clone()) {
                Ok(s) => return s,
                Err(log) if log.contains("Address already in use") => continue,
                Err(log) => panic!("apiserver did not start:\n{log}"),
            }
        }
        panic!("apiserver found no free port in four tries")
    }

    /// Starts this server's binary again on its data directory and ports.
    fn relaunch(&self) -> Self {
        let (args, level) = (self.args.clone(), self.log_level.clone());
        Self::try_launch(&self.bin, self.data_dir.clone(), (self.port, self.admin_port), args, level)
            .unwrap_or_else(|log| panic!("apiserver did not start:\n{log}"))
    }

    /// Starts the server and waits until it is ready; the log's tail when it exits first.
    fn try_launch(
        bin: &Path,
        data_dir: PathBuf,
        (port, admin_port): (u16, u16),
        args: Vec<String>,
        log_level: Option<String>,
    ) -> Result<Self, String> {
        // Named by port, so a restart appends to the same log.
        let log = data_dir.join(format!("apiserver-{port}.log"));
        let log_file = std::fs::OpenOptions::new().create(true).append(true).open(&log).expect("log file");
        let mut cmd = Command::new(bin);
        cmd.arg("serve")
            .arg("--data-dir")
            .arg(&data_dir)
            .arg("--secure-port")
            .arg(port.to_string())
            .arg("--admin-port")
            .arg(admin_port.to_string())
            .args(&args)
            .env(
                "RUST_LOG",
                log_level.clone().or_else(|| std::env::var("RUST_LOG").ok()).unwrap_or_else(|| "warn".into()),
            )
            .stdout(Stdio::piped())
            .stderr(log_file);
        let mut child = cmd.spawn().expect("spawn apiserver");
        // The first line names the kubeconfig.
        let first = first_line(&mut child);
        let mut server = TestServer {
            child: Some(child),
            kubeconfig: data_dir.join("admin.kubeconfig"),
            data_dir,
            _owned_dir: None,
            port,
            admin_port,
            args,
            log_level,
            log,
            bin: bin.to_path_buf(),
        };
        if !first.contains("kubeconfig") {
            return Err(format!("{first}\n{}", server.log_tail()));
        }
        server.ready_or_exited()?;
        Ok(server)
    }

    /// Waits until the server answers `/readyz`; the log's tail when the process exits first.
    fn ready_or_exited(&mut self) -> Result<(), String> {
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if let Some(child) = self.child.as_mut()
                && child.try_wait().ok().flatten().is_some()
            {
                self.child = None;
                return Err(self.log_tail());
            }
            if std::net::TcpStream::connect(("127.0.0.1", self.port)).is_ok() {
                let out = self.kubectl(&["get", "--raw", "/readyz"]);
                if out.status.success() {
                    return Ok(());
                }
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("apiserver not ready in 30s\n{}", self.log_tail());
    }

    /// The last lines of the server's log, for failure messages.
    pub fn log_tail(&self) -> String {
        tail(&self.log)
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("running").id()
    }

    /// Stops the server gracefully (SIGTERM) and waits for it.
    pub fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = Command::new("kill").arg("-TERM").arg(c.id().to_string()).status();
            let deadline = Instant::now() + Duration::from_secs(15);
            while Instant::now() < deadline {
                if let Ok(Some(_)) = c.try_wait() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Sends SIGTERM and returns at once: the server goes through its shutdown on its own
    /// ([`TestServer::wait_exit`] waits for it).
    pub fn terminate(&self) {
        let pid = self.pid().to_string();
        let sent = Command::new("kill").arg("-TERM").arg(&pid).status().expect("run kill");
        assert!(sent.success(), "kill -TERM {pid}");
    }

    /// Waits up to `within` for the process to exit; its exit status, or `None` if it still
    /// runs. Once it has exited, [`TestServer::start_again`] starts it on the same data.
    pub fn wait_exit(&mut self, within: Duration) -> Option<std::process::ExitStatus> {
        let child = self.child.as_mut().expect("running");
        let status = poll_until(within, || child.try_wait().expect("wait for the apiserver"))?;
        self.child = None;
        Some(status)
    }

    /// Kills the server with SIGKILL, as a crash would.
    pub fn kill9(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Starts the server again on the same data directory and ports.
    pub fn restart(&mut self) {
        self.stop();
        let owned = self._owned_dir.take();
        let mut s = self.relaunch();
        s._owned_dir = owned;
        *self = s;
    }

    /// Starts the server again after a crash.
    pub fn start_again(&mut self) {
        assert!(self.child.is_none(), "still running");
        let owned = self._owned_dir.take();
        let mut s = self.relaunch();
        s._owned_dir = owned;
        *self = s;
    }

    /// Runs kubectl against this server.
    pub fn kubectl(&self, args: &[&str]) -> Output {
        Command::new(kubectl_bin())
            .args(args)
            .env("KUBECONFIG", &self.kubeconfig)
            .env_remove("KUBERNETES_SERVICE_HOST")
            .output()
            .expect("run kubectl")
    }

    /// A kubeconfig that presents `token` instead of the admin's client certificate.
    pub fn token_kubeconfig(&self, token: &str) -> PathBuf {
        let admin = std::fs::read_to_string(&self.kubeconfig).expect("admin kubeconfig");
        let ca = admin
            .lines()
            .find_map(|l| l.trim().strip_prefix("certificate-authority-data:"))
            .expect("certificate-authority-data")
            .trim()
            .to_string();
        let path = self
            .data_dir
            .join(format!("token-{}.kubeconfig", token.len() ^ token.bytes().map(usize::from).sum::<usize>()));
        let server = format!("https://127.0.0.1:{}", self.port);
        let text = token_kubeconfig_text(&server, &format!("certificate-authority-data: {ca}"), token);
        std::fs::write(&path, text).expect("write kubeconfig");
        path
    }

    /// Runs kubectl as the holder of `token`.
    pub fn kubectl_with_token(&self, token: &str, args: &[&str]) -> Output {
        Command::new(kubectl_bin())
            .args(args)
            .env("KUBECONFIG", self.token_kubeconfig(token))
            .env_remove("KUBERNETES_SERVICE_HOST")
            .output()
            .expect("run kubectl")
    }

    /// Runs kubectl and returns its stdout, failing the test with its stderr if it fails.
    pub fn kubectl_ok(&self, args: &[&str]) -> String {
        let out = self.kubectl(args);
        assert!(
            out.status.success(),
            "kubectl {args:?} failed:\nstdout: {}\nstderr: {}\nserver log:\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
            self.log_tail()
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Runs helm against this server, with `env` beside its kubeconfig (and its caches kept in
    /// the server's data directory).
    pub fn helm(&self, args: &[&str], env: &[(&str, &str)]) -> Output {
        let home = self.data_dir.join("helm");
        let mut cmd = Command::new(helm_bin());
        cmd.args(args)
            .env("KUBECONFIG", &self.kubeconfig)
            .env("HELM_CACHE_HOME", home.join("cache"))
            .env("HELM_CONFIG_HOME", home.join("config"))
            .env("HELM_DATA_HOME", home.join("data"))
            .env_remove("KUBERNETES_SERVICE_HOST");
        for (k, v) in env {
            cmd.env(k, v);
        }
        cmd.output().expect("run helm")
    }

    /// Runs kubectl with `stdin` as input.
    pub fn kubectl_stdin(&self, args: &[&str], stdin: &str) -> Output {
        use std::io::Write;
        let mut child = Command::new(kubectl_bin())
            .args(args)
            .env("KUBECONFIG", &self.kubeconfig)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run kubectl");
        child.stdin.take().expect("stdin").write_all(stdin.as_bytes()).expect("write stdin");
        child.wait_with_output().expect("kubectl output")
    }

    /// Runs a Python script from `tests/python` with the kubeconfig as its first argument.
    pub fn python(&self, script: &str, args: &[&str]) -> Output {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("python").join(script);
        Command::new(python_bin()).arg("-u").arg(path).arg(&self.kubeconfig).args(args).output().expect("run python")
    }

    /// The HTTPS base URL.
    pub fn url(&self, path: &str) -> String {
        format!("https://127.0.0.1:{}{path}", self.port)
    }

    /// The admin endpoint's base URL.
    pub fn admin_url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.admin_port)
    }

    /// Compacts every backend's history up to its current revision through the admin endpoint
    /// (`POST /compact`), from any thread or runtime; returns the endpoint's JSON answer.
    pub fn compact(&self) -> serde_json::Value {
        self.admin_post("/compact")
    }

    /// `POST path_and_query` on the admin endpoint, from any thread or runtime: its JSON answer,
    /// failing the test unless it is 200.
    pub fn admin_post(&self, path_and_query: &str) -> serde_json::Value {
        use std::io::{Read, Write};
        let mut conn = std::net::TcpStream::connect(("127.0.0.1", self.admin_port)).expect("admin endpoint");
        let request = format!(
            "POST {path_and_query} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        );
        conn.write_all(request.as_bytes()).expect("send");
        let mut response = String::new();
        conn.read_to_string(&mut response).expect("read");
        assert!(response.starts_with("HTTP/1.1 200"), "POST {path_and_query} failed: {response}");
        let body = response.split_once("\r\n\r\n").map_or("", |(_, b)| b);
        serde_json::from_str(body).unwrap_or_else(|e| panic!("POST {path_and_query} answer {body:?}: {e}"))
    }

    /// TLS client settings trusting the server's CA, optionally presenting the admin certificate.
    pub fn tls_config(&self, as_admin: bool) -> rustls::ClientConfig {
        let kc: serde_json::Value =
            serde_yaml_ng::from_str(&std::fs::read_to_string(&self.kubeconfig).expect("kubeconfig")).expect("yaml");
        let b64 = |p: &str| {
            base64::engine::general_purpose::STANDARD
                .decode(kc.pointer(p).and_then(|v| v.as_str()).expect(p))
                .expect("base64")
        };
        let ca = b64("/clusters/0/cluster/certificate-authority-data");
        let mut roots = rustls::RootCertStore::empty();
        for c in CertificateDer::pem_slice_iter(&ca) {
            roots.add(c.expect("ca pem")).expect("ca");
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("tls versions")
            .with_root_certificates(roots);
        if as_admin {
            let cert = b64("/users/0/user/client-certificate-data");
            let key = b64("/users/0/user/client-key-data");
            let chain: Vec<_> = CertificateDer::pem_slice_iter(&cert).map(|c| c.expect("cert")).collect();
            builder
                .with_client_auth_cert(chain, PrivateKeyDer::from_pem_slice(&key).expect("key"))
                .expect("client auth")
        } else {
            builder.with_no_client_auth()
        }
    }

    /// An HTTPS client (run inside an actix runtime).
    pub fn client(&self, as_admin: bool) -> awc::Client {
        let mut config = self.tls_config(as_admin);
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        awc::Client::builder()
            .connector(awc::Connector::new().rustls_0_23(Arc::new(config)).limit(256))
            .timeout(Duration::from_secs(60))
            .finish()
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.kill9();
    }
}

/// `method path` without a body to the plain-HTTP listener at `address` (`host:port`, the admin
/// endpoint), from any thread or runtime: the status and the body. One request per connection,
/// answered with a length, as the admin endpoint answers.
pub fn plain_http(address: &str, method: &str, path: &str) -> std::io::Result<(u16, String)> {
    use std::io::{Read, Write};
    let mut conn = std::net::TcpStream::connect(address)?;
    conn.set_read_timeout(Some(Duration::from_secs(10)))?;
    let request =
        format!("{method} {path} HTTP/1.1\r\nHost: {address}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
    conn.write_all(request.as_bytes())?;
    let mut response = String::new();
    conn.read_to_string(&mut response)?;
    let (head, body) = response.split_once("\r\n\r\n").unwrap_or((&response, ""));
    let status = head.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    Ok((status, body.to_string()))
}

/// Asserts a process succeeded, showing its output otherwise.
pub fn assert_success(what: &str, out: &Output) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{what} failed:\nstdout: {stdout}\nstderr: {}", String::from_utf8_lossy(&out.stderr));
    stdout
}

impl TestServer {
    /// Runs inline Python `code` (`python -c`) with `kubeconfig` as `sys.argv[1]` and `args` after.
    pub fn python_code(&self, kubeconfig: &Path, code: &str, args: &[&str]) -> Output {
        Command::new(python_bin())
            .arg("-u")
            .arg("-c")
            .arg(code)
            .arg(kubeconfig)
            .args(args)
            .output()
            .expect("run python")
    }
}

/// A command's outcome as (succeeded, stdout, stderr).
pub fn command_outcome(o: &Output) -> (bool, String, String) {
    (
        o.status.success(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// Polls `check` until it holds, for at most `within`; returns how long it took.
pub fn within(within: Duration, mut check: impl FnMut() -> bool) -> Option<Duration> {
    let started = Instant::now();
    poll_until(within, || check().then(|| started.elapsed()))
}

/// Polls `check` every 20 ms until it gives `Some`, for at most `within`.
pub fn poll_until<T>(within: Duration, mut check: impl FnMut() -> Option<T>) -> Option<T> {
    let deadline = Instant::now() + within;
    loop {
        if let Some(v) = check() {
            return Some(v);
        }
        if Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Writes to `path` the kubeconfig of a webhook served at `server` (a full URL), trusting
/// `ca_file` for https, as `--authentication-token-webhook-config-file` and
/// `--authorization-webhook-config-file` take it.
pub fn write_webhook_kubeconfig(path: &Path, server: &str, ca_file: Option<&Path>) {
    let ca = ca_file.map_or(String::new(), |p| format!("    certificate-authority: {}\n", p.display()));
    let text = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: hook\n  cluster:\n    server: {server}\n{ca}users:\n- name: apiserver\n  user: {{}}\ncontexts:\n- name: hook\n  context:\n    cluster: hook\n    user: apiserver\ncurrent-context: hook\n"
    );
    std::fs::write(path, text).expect("write webhook kubeconfig");
}

impl TestServer {
    /// `method path` with `token` as its bearer credential (none: no credentials, not the
    /// admin's certificate either) and an optional JSON body: the status and the JSON answer.
    /// Run inside an actix runtime.
    pub async fn call_with_token(
        &self,
        token: Option<&str>,
        method: &str,
        path: &str,
        body: Option<serde_json::Value>,
    ) -> (u16, serde_json::Value) {
        let caller = token.map_or(Caller::Anonymous, Caller::Bearer);
        let answer = self.request(caller, method, path).json_opt(body.as_ref()).send().await;
        (answer.code, answer.body)
    }
}
