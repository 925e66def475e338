//! A real etcd for tests: [`EtcdProcess`] starts the binary on free loopback ports with a fresh
//! data directory and kills it on drop, so every crate's tests (the conformance suite here, the
//! gateway's and the end-to-end tests) drive the same etcd that CI installs. [`EtcdCluster`]
//! starts several members as one cluster, for failover tests; started partitionable, each
//! member's peers reach it through a proxy the test controls, so it can be cut off.
//!
//! The binary is `$ETCD_BIN`, else `/usr/bin/etcd` (Debian's etcd-server, which
//! `deploy/install-tools.sh` installs), else `/opt/realtools/bin/etcd`. A missing binary fails
//! the test naming the install script: tests needing etcd are never skipped silently.

use std::fs;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{EtcdOptions, EtcdStore};
use crate::StorageError;

/// Where to look for etcd when `$ETCD_BIN` is unset, in order.
const CANDIDATES: [&str; 2] = ["/usr/bin/etcd", "/opt/realtools/bin/etcd"];

/// How long a started etcd may take to report itself healthy.
const READY_TIMEOUT: Duration = Duration::from_secs(20);

/// Attempts at starting with fresh ports, in case another process took a port between picking
/// it and etcd binding it.
const START_ATTEMPTS: usize = 4;

/// TLS of etcd's client port.
#[derive(Clone, Debug)]
pub struct ServerTls {
    /// etcd's serving certificate (PEM); it must name 127.0.0.1.
    pub cert_file: PathBuf,
    /// Its key (PEM).
    pub key_file: PathBuf,
    /// The CA that client certificates must chain to (PEM).
    pub client_ca_file: PathBuf,
}

/// A running single-member etcd on loopback ports, with its own data directory; killed and its
/// directory removed on drop.
pub struct EtcdProcess {
    /// The binary, kept for [`EtcdProcess::restart`].
    binary: PathBuf,
    /// Holds the data directory and the log; removed on drop.
    root: PathBuf,
    /// `http://127.0.0.1:<port>`: what clients connect to.
    client_url: String,
    /// The raft peer URL it listens on (a single member, but etcd insists on one).
    peer_url: String,
    /// The peer URL the other members dial: `peer_url`, or its proxy's.
    advertised_peer_url: String,
    /// Serves `/health` over plain HTTP, whatever the client URL's scheme.
    metrics_addr: SocketAddr,
    /// TLS of the client port, if any.
    tls: Option<ServerTls>,
    /// The member's name.
    name: String,
    /// `--initial-cluster`: every member's name and peer URL.
    initial_cluster: String,
    /// The process; `None` while stopped.
    child: Option<Child>,
}

impl EtcdProcess {
    /// Starts a fresh etcd serving plain HTTP and waits until it answers `/health`. Panics if
    /// there is no etcd binary (naming `deploy/install-tools.sh`) or it does not come up.
    pub fn start() -> EtcdProcess {
        Self::launch(None)
    }

    /// Like [`EtcdProcess::start`], serving clients over TLS with `tls` and requiring client
    /// certificates (kube-apiserver's `--etcd-certfile` setup).
    pub fn start_tls(tls: ServerTls) -> EtcdProcess {
        Self::launch(Some(tls))
    }

    /// Starts etcd, retrying with fresh ports if a port was taken meanwhile.
    fn launch(tls: Option<ServerTls>) -> EtcdProcess {
        let binary = find_binary().unwrap_or_else(|message| panic!("{message}"));
        let root = std::env::temp_dir().join(format!("etcd-test-{}", uuid::Uuid::new_v4().simple()));
        fs::create_dir_all(&root).unwrap_or_else(|e| panic!("creating {}: {e}", root.display()));
        let unbound = SocketAddr::from(([127, 0, 0, 1], 0));
        let mut etcd = EtcdProcess {
            binary,
            root,
            client_url: String::new(),
            peer_url: String::new(),
            advertised_peer_url: String::new(),
            metrics_addr: unbound,
            tls,
            name: "test".into(),
            initial_cluster: String::new(),
            child: None,
        };
        let mut last_error = String::new();
        for _ in 0..START_ATTEMPTS {
            let [client, peer, metrics] = free_ports();
            let scheme = if etcd.tls.is_some() { "https" } else { "http" };
            (etcd.client_url, etcd.peer_url, etcd.metrics_addr) =
                (format!("{scheme}://{client}"), format!("http://{peer}"), metrics);
            etcd.advertised_peer_url = etcd.peer_url.clone();
            etcd.initial_cluster = format!("test={}", etcd.peer_url);
            match etcd.spawn_and_wait() {
                Ok(()) => return etcd,
                Err(e) => {
                    last_error = e;
                    etcd.stop();
                    // The next attempt starts a new member: no half-initialised one behind.
                    let _ = fs::remove_dir_all(etcd.data_dir());
                }
            }
        }
        panic!("etcd ({}) did not start: {last_error}", etcd.binary.display());
    }

    /// The client URL, e.g. `http://127.0.0.1:40123` (`https://` with TLS).
    pub fn endpoint(&self) -> &str {
        &self.client_url
    }

    /// Options for an [`EtcdStore`] on this etcd; other fields at their defaults.
    pub fn options(&self) -> EtcdOptions {
        EtcdOptions { endpoints: vec![self.client_url.clone()], ..EtcdOptions::default() }
    }

    /// Connects an [`EtcdStore`] with [`EtcdProcess::options`].
    pub async fn connect(&self) -> Result<Arc<EtcdStore>, StorageError> {
        EtcdStore::connect(self.options()).await
    }

    /// The member's data directory, kept across [`EtcdProcess::restart`].
    pub fn data_dir(&self) -> PathBuf {
        self.root.join("data")
    }

    /// The process's id while it runs, for faults a test sends it (SIGSTOP: a member that hangs).
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(|c| c.id())
    }

    /// Kills the process (SIGKILL: what a crash or a lost machine looks like to clients) and
    /// waits for it; the data directory stays. Does nothing if already stopped.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Stops the process if running and starts it again on the same data directory and ports,
    /// waiting until it is healthy. Panics if it does not come back.
    pub fn restart(&mut self) {
        self.stop();
        if let Err(e) = self.spawn_and_wait() {
            panic!("etcd ({}) did not restart: {e}", self.binary.display());
        }
    }

    /// Starts the binary with this instance's ports and data directory and waits for health.
    fn spawn_and_wait(&mut self) -> Result<(), String> {
        self.spawn()?;
        self.wait_healthy()
    }

    /// Starts the binary with this instance's ports and data directory.
    fn spawn(&mut self) -> Result<(), String> {
        let log_path = self.root.join("etcd.log");
        let log = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log_path)
            .map_err(|e| format!("opening {}: {e}", log_path.display()))?;
        let log_err = log.try_clone().map_err(|e| format!("opening {}: {e}", log_path.display()))?;
        let data_dir = self.data_dir();
        let mut command = Command::new(&self.binary);
        if let Some(tls) = &self.tls {
            command.arg("--cert-file").arg(&tls.cert_file).arg("--key-file").arg(&tls.key_file);
            command.arg("--trusted-ca-file").arg(&tls.client_ca_file).arg("--client-cert-auth");
        }
        let child = command
            .args(["--name", &self.name, "--data-dir"])
            .arg(&data_dir)
            .args(["--listen-client-urls", &self.client_url, "--advertise-client-urls", &self.client_url])
            .args(["--listen-peer-urls", &self.peer_url, "--initial-advertise-peer-urls", &self.advertised_peer_url])
            .args(["--initial-cluster", &self.initial_cluster, "--initial-cluster-state", "new"])
            .args(["--listen-metrics-urls", &format!("http://{}", self.metrics_addr)])
            .args(["--logger", "zap", "--log-level", "warn"])
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log_err)
            .spawn()
            .map_err(|e| format!("spawning {}: {e}", self.binary.display()))?;
        self.child = Some(child);
        Ok(())
    }

    /// Waits until the member reports itself healthy (for a cluster member: with a leader).
    fn wait_healthy(&mut self) -> Result<(), String> {
        let log_path = self.root.join("etcd.log");
        let deadline = Instant::now() + READY_TIMEOUT;
        loop {
            if let Some(status) = self.child.as_mut().and_then(|c| c.try_wait().ok().flatten()) {
                self.child = None;
                return Err(format!("exited with {status}; log:\n{}", log_tail(&log_path)));
            }
            if healthy(self.metrics_addr) {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(format!("not healthy within {READY_TIMEOUT:?}; log:\n{}", log_tail(&log_path)));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// A running etcd cluster of several members on loopback ports; every member killed and its
/// directory removed on drop.
pub struct EtcdCluster {
    members: Vec<EtcdProcess>,
    /// Each member's peer proxy, when started partitionable.
    proxies: Vec<PeerProxy>,
}

impl EtcdCluster {
    /// Starts `size` members as one cluster and waits until each is healthy.
    pub fn start(size: usize) -> EtcdCluster {
        Self::launch(size, false)
    }

    /// Like [`EtcdCluster::start`], with every member's peer traffic through a proxy, so that
    /// [`EtcdCluster::partition`] can cut it off.
    pub fn start_partitionable(size: usize) -> EtcdCluster {
        Self::launch(size, true)
    }

    /// Starts the cluster, retrying with fresh ports (and fresh members) if a port was taken
    /// between choosing it and etcd binding it.
    fn launch(size: usize, partitionable: bool) -> EtcdCluster {
        let binary = find_binary().unwrap_or_else(|message| panic!("{message}"));
        let mut last_error = String::new();
        for _ in 0..START_ATTEMPTS {
            match Self::try_launch(&binary, size, partitionable) {
                Ok(cluster) => return cluster,
                // The failed attempt's members were dropped: killed, their directories removed.
                Err(e) => last_error = e,
            }
        }
        panic!("etcd cluster ({}) did not start: {last_error}", binary.display());
    }

    fn try_launch(binary: &Path, size: usize, partitionable: bool) -> Result<EtcdCluster, String> {
        let token = uuid::Uuid::new_v4().simple().to_string();
        let mut members: Vec<EtcdProcess> = (0..size)
            .map(|i| {
                let root = std::env::temp_dir().join(format!("etcd-test-{token}-{i}"));
                fs::create_dir_all(&root).unwrap_or_else(|e| panic!("creating {}: {e}", root.display()));
                let [client, peer, metrics] = free_ports();
                EtcdProcess {
                    binary: binary.to_path_buf(),
                    root,
                    client_url: format!("http://{client}"),
                    peer_url: format!("http://{peer}"),
                    advertised_peer_url: format!("http://{peer}"),
                    metrics_addr: metrics,
                    tls: None,
                    name: format!("member-{i}"),
                    initial_cluster: String::new(),
                    child: None,
                }
            })
            .collect();
        let mut proxies = Vec::new();
        if partitionable {
            for m in &mut members {
                let target: SocketAddr = m.peer_url.trim_start_matches("http://").parse().expect("peer address");
                let proxy = PeerProxy::start(target);
                m.advertised_peer_url = format!("http://{}", proxy.address);
                proxies.push(proxy);
            }
        }
        let initial: Vec<String> = members.iter().map(|m| format!("{}={}", m.name, m.advertised_peer_url)).collect();
        for m in &mut members {
            m.initial_cluster = initial.join(",");
            m.spawn().map_err(|e| format!("etcd member {}: {e}", m.name))?;
        }
        for m in &mut members {
            m.wait_healthy().map_err(|e| format!("etcd member {}: {e}", m.name))?;
        }
        Ok(EtcdCluster { members, proxies })
    }

    /// Cuts member `i` off from its peers: connections the others made to it are closed and
    /// new ones refused. (Its own connections to them stay, as in an asymmetric partition:
    /// etcd sends each peer its messages over connections that peer dialed, so the others
    /// hear nothing from it.) Panics unless the cluster was started partitionable.
    pub fn partition(&self, i: usize) {
        self.proxies[i].set_blocked(true);
    }

    /// Lets member `i`'s peers reach it again.
    pub fn heal(&self, i: usize) {
        self.proxies[i].set_blocked(false);
    }

    /// Every member's client URL.
    pub fn endpoints(&self) -> Vec<String> {
        self.members.iter().map(|m| m.client_url.clone()).collect()
    }

    /// Options for an [`EtcdStore`] on every member; other fields at their defaults.
    pub fn options(&self) -> EtcdOptions {
        EtcdOptions { endpoints: self.endpoints(), ..EtcdOptions::default() }
    }

    /// Member `i`.
    pub fn member(&mut self, i: usize) -> &mut EtcdProcess {
        &mut self.members[i]
    }

    /// The member that says it leads (`etcd_server_is_leader 1` on its metrics port), if any.
    pub fn leader(&self) -> Option<usize> {
        self.members
            .iter()
            .position(|m| m.child.is_some() && get(m.metrics_addr, "/metrics").contains("\netcd_server_is_leader 1"))
    }

    /// Starts member `i` again after [`EtcdProcess::stop`], waiting until it is healthy.
    pub fn restart(&mut self, i: usize) {
        self.members[i].restart();
    }
}

impl Drop for EtcdProcess {
    fn drop(&mut self) {
        self.stop();
        let _ = fs::remove_dir_all(&self.root);
    }
}

/// The etcd binary to run, or why there is none.
fn find_binary() -> Result<PathBuf, String> {
    if let Some(bin) = std::env::var_os("ETCD_BIN") {
        let bin = PathBuf::from(bin);
        return if bin.is_file() { Ok(bin) } else { Err(format!("$ETCD_BIN={} is not a file", bin.display())) };
    }
    CANDIDATES.iter().map(Path::new).find(|p| p.is_file()).map(Path::to_path_buf).ok_or_else(|| {
        format!(
            "no etcd binary: set $ETCD_BIN or install one at {} (run deploy/install-tools.sh, which installs \
             Debian's etcd-server as CI does)",
            CANDIDATES.join(" or ")
        )
    })
}

/// Three distinct free loopback ports: bound together, so they differ, then released for etcd.
fn free_ports() -> [SocketAddr; 3] {
    // Held until all three are chosen, so that they differ.
    let listeners = [unused_listener(), unused_listener(), unused_listener()];
    listeners.map(|l| l.local_addr().expect("local address"))
}

/// A loopback port free at this moment, for a test server to listen on.
///
/// It is chosen at random below the kernel's ephemeral range (32768 and up by default), which
/// is where every outgoing connection takes its local port: a port from that range, released
/// while a member restarts or before a server binds it, can be taken by any connection on the
/// machine meanwhile. Below it, only another test choosing the same port can take it.
pub fn unused_port() -> u16 {
    unused_listener().local_addr().expect("local address").port()
}

fn unused_listener() -> TcpListener {
    const LOW: u16 = 20_000;
    const SPAN: u128 = 12_000;
    for _ in 0..200 {
        let port = LOW + (uuid::Uuid::new_v4().as_u128() % SPAN) as u16;
        if let Ok(listener) = TcpListener::bind(("127.0.0.1", port)) {
            return listener;
        }
    }
    TcpListener::bind("127.0.0.1:0").expect("binding a loopback port")
}

/// Whether etcd answers `GET /health` with `"health":"true"`.
fn healthy(addr: SocketAddr) -> bool {
    get(addr, "/health").contains("\"health\":\"true\"")
}

/// The answer to `GET path` on etcd's plain HTTP metrics port (empty when there is none).
fn get(addr: SocketAddr, path: &str) -> String {
    let Ok(mut stream) = TcpStream::connect_timeout(&addr, Duration::from_millis(200)) else { return String::new() };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
    if stream.write_all(format!("GET {path} HTTP/1.0\r\nHost: localhost\r\n\r\n").as_bytes()).is_err() {
        return String::new();
    }
    let mut response = String::new();
    let _ = stream.read_to_string(&mut response);
    response
}

/// The last lines of etcd's log, for a failure message.
fn log_tail(path: &Path) -> String {
    let log = fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = log.lines().collect();
    lines[lines.len().saturating_sub(20)..].join("\n")
}

/// A TCP proxy in front of a member's peer port, which the test can block.
struct PeerProxy {
    address: SocketAddr,
    /// Whether new connections are refused; shared with the accepting thread.
    blocked: Arc<std::sync::atomic::AtomicBool>,
    /// The proxied connections, shut down when blocking.
    open: Arc<std::sync::Mutex<Vec<TcpStream>>>,
}

impl PeerProxy {
    /// Listens on a free loopback port and forwards each connection to `target`.
    fn start(target: SocketAddr) -> PeerProxy {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a proxy port");
        let address = listener.local_addr().expect("proxy address");
        let blocked = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let open = Arc::new(std::sync::Mutex::new(Vec::new()));
        let (blocked_in, open_in) = (blocked.clone(), open.clone());
        std::thread::spawn(move || {
            for client in listener.incoming().map_while(Result::ok) {
                if blocked_in.load(std::sync::atomic::Ordering::Relaxed) {
                    continue; // dropped: closed at once
                }
                let Ok(upstream) = TcpStream::connect(target) else { continue };
                let pipes = [(client.try_clone(), upstream.try_clone()), (upstream.try_clone(), client.try_clone())];
                let mut all = open_in.lock().unwrap_or_else(|e| e.into_inner());
                all.retain(|s: &TcpStream| s.peer_addr().is_ok());
                all.extend([client, upstream]);
                for (from, to) in pipes {
                    if let (Ok(mut from), Ok(mut to)) = (from, to) {
                        std::thread::spawn(move || {
                            let _ = std::io::copy(&mut from, &mut to);
                            let _ = to.shutdown(std::net::Shutdown::Both);
                        });
                    }
                }
            }
        });
        PeerProxy { address, blocked, open }
    }

    fn set_blocked(&self, blocked: bool) {
        self.blocked.store(blocked, std::sync::atomic::Ordering::Relaxed);
        if blocked {
            for s in self.open.lock().unwrap_or_else(|e| e.into_inner()).drain(..) {
                let _ = s.shutdown(std::net::Shutdown::Both);
            }
        }
    }
}
