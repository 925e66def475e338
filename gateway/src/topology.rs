//! Which resources' storage stages run in other processes (`--stage-topology`), and the
//! handles that reach them.
//!
//! A topology file lists shards. Each shard is one `apiserver stage --shard <name>` process
//! listening at its `url`, which stores its `resources` (on its own backend, typically a separate
//! etcd via `--etcd-servers-overrides`, or its own embedded store) and runs their storage stage.
//! Every gateway given the same file routes the writes of those resources to the shard's storage
//! stage ([`ShardedWrites`]) and keeps its own cache of them, following the shard's feed, so
//! reads and watches are served by the gateway as for any other resource.
//!
//! ```yaml
//! shards:
//! - name: events
//!   url: https://127.0.0.1:7101
//!   resources: [events, leases.coordination.k8s.io]
//! ```
//!
//! Both event groups share one store, so `events` moves `events.events.k8s.io` with it, as
//! `--etcd-servers-overrides` does.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use actors::remote::{ClusterTls, Peer, RemoteStage};
use actors::{ActorDirectory, Deadline, Request, StageError, StageHandle, Transport};
use apimachinery::catalogue::Catalogue;
use apimachinery::messages::{CreateObject, DeleteCollection, DeleteObject, PatchObject, Target, UpdateObject};
use serde::Deserialize;

use crate::config::ServeOptions;

/// The topology file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct TopologyFile {
    #[serde(default)]
    shards: Vec<ShardFile>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ShardFile {
    name: String,
    url: String,
    resources: Vec<String>,
}

/// One shard: a process serving the storage stage of some resources.
#[derive(Clone, Debug)]
pub struct Shard {
    /// Its name (`events`); remote stages are shown as `storage@<name>`.
    pub name: String,
    /// Where its process listens (`https://127.0.0.1:7101`).
    pub url: String,
    /// The resources it serves, as named in the file.
    pub resources: Vec<String>,
    /// Their storage paths (`events`, `leases`): what the gateway routes by.
    pub storage_paths: Vec<String>,
}

impl Shard {
    /// The address its process binds.
    pub fn listen_address(&self) -> Result<std::net::SocketAddr, String> {
        let authority = self
            .url
            .strip_prefix("https://")
            .ok_or_else(|| format!("shard {}: the url must be https://host:port", self.name))?;
        let authority = authority.trim_end_matches('/');
        use std::net::ToSocketAddrs;
        authority
            .to_socket_addrs()
            .map_err(|e| format!("shard {}: {authority}: {e}", self.name))?
            .next()
            .ok_or_else(|| format!("shard {}: {authority} resolves to no address", self.name))
    }
}

/// The shards of a deployment.
#[derive(Clone, Debug, Default)]
pub struct Topology {
    /// Every shard, in file order.
    pub shards: Vec<Shard>,
}

impl Topology {
    /// Reads `--stage-topology` (none: every stage runs in this process).
    pub fn load(path: Option<&Path>, catalogue: &Catalogue) -> Result<Self, String> {
        let Some(path) = path else { return Ok(Topology::default()) };
        let text = std::fs::read_to_string(path).map_err(|e| format!("--stage-topology {}: {e}", path.display()))?;
        Self::parse(&text, catalogue).map_err(|e| format!("--stage-topology {}: {e}", path.display()))
    }

    /// Parses a topology and resolves its resources in `catalogue`.
    pub fn parse(text: &str, catalogue: &Catalogue) -> Result<Self, String> {
        let file: TopologyFile = serde_yaml_ng::from_str(text).map_err(|e| e.to_string())?;
        let mut seen: HashMap<String, String> = HashMap::new();
        let mut shards = Vec::new();
        for s in file.shards {
            if s.name.is_empty() || !s.name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
                return Err(format!("shard name {:?} must be letters, digits and dashes", s.name));
            }
            let mut storage_paths = Vec::new();
            for r in &s.resources {
                let (resource, group) = r.split_once('.').unwrap_or((r.as_str(), ""));
                let def = catalogue
                    .find_any_version(group, resource)
                    .filter(|d| d.stored())
                    .ok_or_else(|| format!("shard {}: {r} is not a stored built-in resource", s.name))?;
                if let Some(other) = seen.insert(def.storage_path.clone(), s.name.clone()) {
                    return Err(format!("{r} is assigned to two shards: {other} and {}", s.name));
                }
                storage_paths.push(def.storage_path.clone());
            }
            shards.push(Shard { name: s.name, url: s.url, resources: s.resources, storage_paths });
        }
        let topology = Topology { shards };
        for s in &topology.shards {
            s.listen_address()?;
        }
        Ok(topology)
    }

    /// The shard named `name`.
    pub fn shard(&self, name: &str) -> Result<&Shard, String> {
        self.shards.iter().find(|s| s.name == name).ok_or_else(|| format!("no shard {name:?} in --stage-topology"))
    }

    /// The shard storing `storage_path`, if any.
    pub fn shard_of(&self, storage_path: &str) -> Option<&Shard> {
        self.shards.iter().find(|s| s.storage_paths.iter().any(|p| p == storage_path))
    }
}

/// `--stage-ca-file`, `--stage-cert-file` and `--stage-key-file`, needed once stages run apart.
pub fn cluster_tls(options: &ServeOptions) -> Result<ClusterTls, String> {
    match (&options.stage_ca_file, &options.stage_cert_file, &options.stage_key_file) {
        (Some(ca), Some(cert), Some(key)) => ClusterTls::load(ca, cert, key),
        _ => Err("stages in other processes need --stage-ca-file, --stage-cert-file and --stage-key-file".into()),
    }
}

/// The remote storage stages of a gateway, by storage path.
#[derive(Clone, Default)]
pub struct RemoteStages {
    by_path: HashMap<String, RemoteStage>,
    peers: Vec<Peer>,
}

impl RemoteStages {
    /// Connects to every shard of `topology` (lazily: nothing is dialled until first used).
    pub fn connect(topology: &Topology, tls: Option<&ClusterTls>, directory: &ActorDirectory) -> Result<Self, String> {
        let mut out = RemoteStages::default();
        for shard in &topology.shards {
            let tls =
                tls.ok_or("stages in other processes need --stage-ca-file, --stage-cert-file and --stage-key-file")?;
            let peer = Peer::new(&shard.name, &shard.url, tls)?;
            let stage = peer.stage("storage", directory);
            for path in &shard.storage_paths {
                out.by_path.insert(path.clone(), stage.clone());
            }
            out.peers.push(peer);
        }
        Ok(out)
    }

    /// The remote storage stage of `storage_path`, if it is sharded.
    pub fn storage(&self, storage_path: &str) -> Option<&RemoteStage> {
        self.by_path.get(storage_path)
    }

    /// What the cachers of sharded resources follow: each shard's feed, by storage path.
    pub fn feeds(&self) -> HashMap<String, Arc<dyn storage::Storage>> {
        self.by_path
            .iter()
            .map(|(path, stage)| {
                let feed: Arc<dyn storage::Storage> = cacher::feed::RemoteFeed::new(stage.peer().clone(), stage.name());
                (path.clone(), feed)
            })
            .collect()
    }

    /// Every shard's process, for the admin endpoint.
    pub fn peers(&self) -> &[Peer] {
        &self.peers
    }
}

/// A write message's target, by which it is routed.
pub trait Targeted {
    /// The object or collection written.
    fn target(&self) -> &Target;
}

macro_rules! targeted {
    ($($msg:ty),+) => {$(
        impl Targeted for $msg {
            fn target(&self) -> &Target {
                &self.target
            }
        }
    )+};
}
targeted!(CreateObject, UpdateObject, PatchObject, DeleteObject, DeleteCollection);

/// Delivers writes to the storage stage of the resource's shard: this process's own, or a
/// shard process's.
pub struct ShardedWrites<M: Request> {
    local: StageHandle<M>,
    remote: HashMap<String, StageHandle<M>>,
    catalogue: Arc<Catalogue>,
}

impl<M: Request + Targeted> ShardedWrites<M> {
    /// Routes by `remotes`; everything else to `local`.
    pub fn handle(local: StageHandle<M>, remotes: &RemoteStages, catalogue: Arc<Catalogue>) -> StageHandle<M> {
        if remotes.by_path.is_empty() {
            return local;
        }
        let remote = remotes.by_path.iter().map(|(path, stage)| (path.clone(), stage.handle::<M>())).collect();
        StageHandle::new(ShardedWrites { local, remote, catalogue })
    }
}

impl<M: Request + Targeted> Transport<M> for ShardedWrites<M> {
    fn send(&self, msg: M, deadline: Deadline) -> actors::transport::SendFuture<Result<M::Reply, StageError>> {
        let t = msg.target();
        let remote = self
            .catalogue
            .find(&t.group, &t.version, &t.resource)
            .and_then(|def| self.remote.get(&def.storage_path).cloned());
        let handle = remote.unwrap_or_else(|| self.local.clone());
        Box::pin(async move { handle.call(msg, deadline).await })
    }

    fn stage(&self) -> &str {
        self.local.stage()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_resolve_their_resources() {
        let catalogue = kinds::catalogue();
        let t = Topology::parse(
            "shards:\n- name: events\n  url: https://127.0.0.1:7101\n  resources: [events, leases.coordination.k8s.io]\n",
            &catalogue,
        )
        .unwrap();
        assert_eq!(t.shards[0].storage_paths, ["events", "leases"]);
        assert_eq!(t.shard_of("events").unwrap().name, "events");
        assert!(t.shard_of("pods").is_none());
        assert_eq!(t.shards[0].listen_address().unwrap().port(), 7101);

        let twice = "shards:\n- {name: a, url: 'https://127.0.0.1:1', resources: [events]}\n- {name: b, url: 'https://127.0.0.1:2', resources: [events.events.k8s.io]}\n";
        assert_eq!(
            Topology::parse(twice, &catalogue).unwrap_err(),
            "events.events.k8s.io is assigned to two shards: a and b"
        );
        let unknown = "shards:\n- {name: a, url: 'https://127.0.0.1:1', resources: [widgets.example.com]}\n";
        assert_eq!(
            Topology::parse(unknown, &catalogue).unwrap_err(),
            "shard a: widgets.example.com is not a stored built-in resource"
        );
        let plain = "shards:\n- {name: a, url: 'http://127.0.0.1:1', resources: [events]}\n";
        assert_eq!(Topology::parse(plain, &catalogue).unwrap_err(), "shard a: the url must be https://host:port");
    }
}
