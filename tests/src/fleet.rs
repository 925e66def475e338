//! Deployments of several processes for the tests: storage stage processes (`apiserver stage`)
//! beside gateways, with the topology file and the cluster certificates they share; and the
//! local fleet of `deploy/fleet.sh`, driven as an operator would.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

use serde_json::Value;

use crate::pki::TestCa;
use crate::{apiserver_bin, free_port};

/// The files every process of a test deployment shares: the cluster CA, one certificate for
/// 127.0.0.1 that all present, and the topology.
pub struct Deployment {
    dir: tempfile::TempDir,
    /// `--stage-topology`.
    pub topology: PathBuf,
}

/// One shard of a [`Deployment`].
#[derive(Clone, Debug)]
pub struct ShardSpec {
    /// Its name.
    pub name: String,
    /// The port its process listens on.
    pub port: u16,
    /// Its resources (`events`, `leases.coordination.k8s.io`).
    pub resources: Vec<String>,
}

impl ShardSpec {
    /// A shard on a free port.
    pub fn new(name: &str, resources: &[&str]) -> Self {
        ShardSpec { name: name.into(), port: free_port(), resources: resources.iter().map(|r| r.to_string()).collect() }
    }
}

impl Deployment {
    /// Writes the CA, the certificate and the topology of `shards`.
    pub fn new(shards: &[ShardSpec]) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let ca = TestCa::new("cluster");
        let (cert, key) = ca.peer_cert(&["127.0.0.1", "localhost"]);
        std::fs::write(dir.path().join("ca.crt"), ca.pem()).unwrap();
        std::fs::write(dir.path().join("stage.crt"), cert).unwrap();
        std::fs::write(dir.path().join("stage.key"), key).unwrap();
        let mut yaml = String::from("shards:\n");
        for s in shards {
            yaml.push_str(&format!(
                "- name: {}\n  url: https://127.0.0.1:{}\n  resources: [{}]\n",
                s.name,
                s.port,
                s.resources.join(", ")
            ));
        }
        let topology = dir.path().join("topology.yaml");
        std::fs::write(&topology, yaml).unwrap();
        Deployment { dir, topology }
    }

    /// The TLS every process of the deployment presents and accepts, for a client of its stage
    /// processes.
    pub fn cluster_tls(&self) -> Result<actors::remote::ClusterTls, String> {
        let file = |f: &str| self.dir.path().join(f);
        actors::remote::ClusterTls::load(&file("ca.crt"), &file("stage.crt"), &file("stage.key"))
    }

    /// The flags every process of the deployment takes.
    pub fn flags(&self) -> Vec<String> {
        let file = |f: &str| self.dir.path().join(f).display().to_string();
        vec![
            "--stage-topology".into(),
            self.topology.display().to_string(),
            "--stage-ca-file".into(),
            file("ca.crt"),
            "--stage-cert-file".into(),
            file("stage.crt"),
            "--stage-key-file".into(),
            file("stage.key"),
        ]
    }
}

/// A running `apiserver stage` process.
pub struct StageProcess {
    child: Option<Child>,
    shard: String,
    args: Vec<String>,
    data_dir: tempfile::TempDir,
    log: PathBuf,
}

impl StageProcess {
    /// Starts the process of `shard` with the deployment's flags and `args`, and waits until it
    /// listens.
    pub fn start(deployment: &Deployment, shard: &str, args: &[&str]) -> Self {
        let data_dir = tempfile::tempdir().expect("temp dir");
        let mut all = deployment.flags();
        all.extend(args.iter().map(|a| a.to_string()));
        let log = data_dir.path().join("stage.log");
        let mut p = StageProcess { child: None, shard: shard.into(), args: all, data_dir, log };
        p.launch();
        p
    }

    fn launch(&mut self) {
        let log_file = std::fs::OpenOptions::new().create(true).append(true).open(&self.log).expect("log file");
        let mut child = Command::new(apiserver_bin())
            .arg("stage")
            .arg("--shard")
            .arg(&self.shard)
            .arg("--data-dir")
            .arg(self.data_dir.path())
            .args(&self.args)
            .env("RUST_LOG", std::env::var("RUST_LOG").unwrap_or_else(|_| "warn".into()))
            .stdout(Stdio::piped())
            .stderr(log_file)
            .spawn()
            .expect("spawn apiserver stage");
        let first = crate::first_line(&mut child);
        assert!(first.contains("serving on"), "stage process did not start: {first}\n{}", self.log_tail());
        self.child = Some(child);
    }

    /// Kills the process with SIGKILL, as a crash would.
    pub fn kill9(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Starts it again after [`kill9`](Self::kill9), with the same flags and data directory.
    pub fn start_again(&mut self) {
        assert!(self.child.is_none(), "still running");
        self.launch();
    }

    /// The last lines of its log.
    pub fn log_tail(&self) -> String {
        crate::tail(&self.log)
    }

    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("running").id()
    }

    /// Its data directory.
    pub fn data_dir(&self) -> &Path {
        self.data_dir.path()
    }
}

impl Drop for StageProcess {
    fn drop(&mut self) {
        self.kill9();
    }
}

/// The local fleet of `deploy/fleet.sh` in a directory of its own, on ports from `port_base`
/// (see the script for the layout): a 3-member etcd cluster, a churn etcd with the `churn`
/// stage process (events and leases), gateways and HAProxy. Brought down when dropped.
pub struct LocalFleet {
    dir: tempfile::TempDir,
    port_base: u16,
    gateways: usize,
}

impl LocalFleet {
    /// A fleet of `gateways` replicas, not started yet.
    pub fn new(port_base: u16, gateways: usize) -> Self {
        LocalFleet { dir: tempfile::tempdir().expect("temp dir"), port_base, gateways }
    }

    fn script() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/fleet.sh")
    }

    /// Runs `deploy/fleet.sh args`.
    pub fn run(&self, args: &[&str]) -> Output {
        Command::new(Self::script())
            .args(args)
            .env("FLEET_DIR", self.dir.path())
            .env("FLEET_GATEWAYS", self.gateways.to_string())
            .env("FLEET_PORT_BASE", self.port_base.to_string())
            .env("APISERVER_BIN", apiserver_bin())
            .output()
            .expect("run deploy/fleet.sh")
    }

    /// Runs `deploy/fleet.sh args`, which must succeed; its output.
    pub fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(
            out.status.success(),
            "fleet.sh {args:?}: {}\n{}\n{}",
            String::from_utf8_lossy(&out.stderr),
            String::from_utf8_lossy(&out.stdout),
            self.logs()
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// The last lines of each gateway's, the stage process's and the balancer's log.
    pub fn logs(&self) -> String {
        let mut names: Vec<String> = (1..=self.gateways).map(|i| format!("gateway-{i}")).collect();
        names.extend(["stage-churn".to_string(), "haproxy".to_string()]);
        let mut all = String::new();
        for name in names {
            let text = std::fs::read_to_string(self.dir.path().join(format!("logs/{name}.log"))).unwrap_or_default();
            let lines: Vec<&str> = text.lines().collect();
            all.push_str(&format!("--- {name}\n{}\n", lines[lines.len().saturating_sub(15)..].join("\n")));
        }
        all
    }

    /// The admin kubeconfig (a system:masters client certificate; the balancer's address).
    pub fn kubeconfig(&self) -> PathBuf {
        self.dir.path().join("admin.kubeconfig")
    }

    /// The balancer's URL.
    pub fn balancer(&self) -> String {
        format!("https://127.0.0.1:{}", self.port_base + 100)
    }

    /// The client URL of etcd member `i` (1 to 3).
    pub fn etcd_member(&self, i: usize) -> String {
        format!("http://127.0.0.1:{}", self.port_base + i as u16)
    }

    /// The etcd cluster's client URLs, comma-separated.
    pub fn etcd_endpoints(&self) -> String {
        (1..=3).map(|i| self.etcd_member(i)).collect::<Vec<_>>().join(",")
    }

    /// The churn etcd's client URL.
    pub fn churn_etcd(&self) -> String {
        format!("http://127.0.0.1:{}", self.port_base + 21)
    }

    /// Which member (1 to 3) leads the etcd cluster, as the members report it.
    pub fn etcd_leader(&self) -> Option<usize> {
        let out = etcdctl(&self.etcd_endpoints(), &["endpoint", "status", "-w", "json"]).ok()?;
        let members: Value = serde_json::from_slice(&out).ok()?;
        members.as_array()?.iter().find_map(|m| {
            let status = &m["Status"];
            let leads = status["header"]["member_id"].as_u64()? == status["leader"].as_u64()?;
            let endpoint = m["Endpoint"].as_str()?;
            leads.then(|| (1..=3).find(|i| self.etcd_member(*i) == endpoint))?
        })
    }
}

impl Drop for LocalFleet {
    fn drop(&mut self) {
        let _ = self.run(&["down"]);
    }
}

fn etcdctl(endpoints: &str, args: &[&str]) -> Result<Vec<u8>, String> {
    let out = Command::new("etcdctl")
        .env("ETCDCTL_API", "3")
        .args(["--endpoints", endpoints])
        .args(args)
        .output()
        .map_err(|e| format!("etcdctl: {e}"))?;
    match out.status.success() {
        true => Ok(out.stdout),
        false => Err(format!("etcdctl {args:?}: {}", String::from_utf8_lossy(&out.stderr))),
    }
}

/// The keys under `prefix` in the etcd at `endpoints`, as `(last path segment, mod revision)`
/// in revision order: etcd's own record, to check what a server acknowledged and watchers saw.
pub fn etcd_keys(endpoints: &str, prefix: &str) -> Result<Vec<(String, u64)>, String> {
    use base64::Engine;
    let out = etcdctl(endpoints, &["get", prefix, "--prefix", "--keys-only", "-w", "json"])?;
    let v: Value = serde_json::from_slice(&out).map_err(|e| format!("etcdctl's JSON: {e}"))?;
    let decode =
        |s: &str| base64::engine::general_purpose::STANDARD.decode(s).ok().and_then(|b| String::from_utf8(b).ok());
    let mut keys = Vec::new();
    for kv in v["kvs"].as_array().into_iter().flatten() {
        let key = kv["key"].as_str().and_then(decode).ok_or("a key that is not base64 UTF-8")?;
        let revision = kv["mod_revision"].as_u64().ok_or("a key without mod_revision")?;
        keys.push((key.rsplit('/').next().unwrap_or_default().to_string(), revision));
    }
    keys.sort_by_key(|k| k.1);
    Ok(keys)
}
