//! Deployments of several processes for the tests: storage stage processes (`apiserver stage`)
//! beside gateways, with the topology file and the cluster certificates they share.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

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
