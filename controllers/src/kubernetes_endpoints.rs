//! The `kubernetes` Service's endpoints, kept as kube-apiserver's lease reconciler keeps them
//! (`--endpoint-reconciler-type=lease`), so in-cluster clients reach every apiserver of a
//! fleet, of either kind, and none that has gone.
//!
//! Every [`INTERVAL`], each apiserver writes its `--advertise-address` as an Endpoints object
//! under `<prefix>/masterleases/<ip>`, on a storage TTL of [`LEASE_TTL`]; it then reads every
//! lease and makes the Endpoints and the EndpointSlice `default/kubernetes` list exactly their
//! addresses (sorted), on the secure port named `https`. A server shutting down deletes its
//! lease and writes the endpoints without itself; one that dies drops out when its lease
//! expires. The keys and values are kube's, so kube-apiservers sharing the etcd take part.
//!
//! As kube's reconciler, it compares addresses only (servers on different ports do not take
//! turns rewriting the port), never erases every address while serving, and skips a round in
//! which a lease cannot be read rather than drop its holder.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use actors::Deadline;
use apimachinery::catalogue::Catalogue;
use apimachinery::lookup::ObjectLookup;
use apimachinery::messages::{CreateObject, DeleteObject, Target, UpdateObject};
use apimachinery::options::{DeleteOptions, WriteOptions};
use apimachinery::request::UserInfo;
use serde_json::{Value, json};
use storage::router::StorageRouter;
use storage::{Expect, ListOptions};
use storage_codec::codec;

use super::WRITE_TIMEOUT;
use stage_handles::Stages;

/// How often the lease is renewed and the endpoints checked (kube's default).
pub const INTERVAL: Duration = Duration::from_secs(10);
/// How long a lease outlives its last renewal (kube's default).
pub const LEASE_TTL: Duration = Duration::from_secs(15);

/// How long one round may take before it is given up (the lease must be renewed well within
/// its TTL).
const ROUND_TIMEOUT: Duration = Duration::from_secs(5);

/// The reconciler of one apiserver.
pub struct EndpointReconciler {
    stages: Stages,
    catalogue: Arc<Catalogue>,
    objects: Arc<dyn ObjectLookup>,
    router: Arc<StorageRouter>,
    /// `<prefix>/masterleases/`.
    leases: String,
    ip: IpAddr,
    port: u16,
    /// Held for a round; `true` once [`EndpointReconciler::remove`] ran: no round starts after.
    stopped: tokio::sync::Mutex<bool>,
}

/// What a round may write.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Round {
    /// A serving server's round: never erases every address.
    Serving,
    /// The last round of a server shutting down: its own address goes, even if it was the last.
    Leaving,
}

impl EndpointReconciler {
    /// A reconciler advertising `ip:port`, keeping its lease under `prefix`.
    pub fn new(
        stages: Stages,
        catalogue: Arc<Catalogue>,
        objects: Arc<dyn ObjectLookup>,
        router: Arc<StorageRouter>,
        prefix: &str,
        (ip, port): (IpAddr, u16),
    ) -> Arc<Self> {
        let leases = format!("{}/masterleases/", prefix.trim_end_matches('/'));
        let stopped = tokio::sync::Mutex::new(false);
        Arc::new(EndpointReconciler { stages, catalogue, objects, router, leases, ip, port, stopped })
    }

    /// Renews the lease and reconciles every [`INTERVAL`] (a fixed beat, however long a round
    /// took), on the current runtime, until [`EndpointReconciler::remove`].
    pub fn start(self: &Arc<Self>) {
        let this = self.clone();
        actix_rt::spawn(async move {
            let mut beat = tokio::time::interval(INTERVAL);
            beat.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                beat.tick().await;
                let stopped = this.stopped.lock().await;
                if *stopped {
                    return;
                }
                if tokio::time::timeout(ROUND_TIMEOUT, this.round(Round::Serving)).await.is_err() {
                    tracing::warn!(ip = %this.ip, "an endpoint reconcile round took over {ROUND_TIMEOUT:?}");
                }
                drop(stopped);
            }
        });
    }

    /// Gives up this server's place: waits for a round in progress, stops the rounds, deletes
    /// its lease and writes the endpoints without it (again after a conflict with a peer's
    /// write), within `within`.
    pub async fn remove(&self, within: Duration) {
        let leaving = async {
            let mut stopped = self.stopped.lock().await;
            *stopped = true;
            let key = format!("{}{}", self.leases, self.ip);
            if let Err(e) = self.router.backend(&key).delete(&key, None).await
                && !matches!(e, storage::StorageError::NotFound { .. })
            {
                tracing::warn!(ip = %self.ip, "deleting the apiserver's endpoint lease: {e}");
            }
            while !self.reconcile(Round::Leaving).await {
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        };
        if tokio::time::timeout(within, leaving).await.is_err() {
            tracing::warn!(ip = %self.ip, "the kubernetes Service's endpoints were not updated within {within:?}");
        }
    }

    /// One round: the lease renewed, then the endpoints reconciled.
    async fn round(&self, round: Round) {
        if let Err(e) = self.renew().await {
            tracing::warn!(ip = %self.ip, "renewing the apiserver's endpoint lease: {e}");
        }
        self.reconcile(round).await;
    }

    /// Writes this server's lease, as kube writes it: an Endpoints with its address.
    async fn renew(&self) -> Result<(), String> {
        let key = format!("{}{}", self.leases, self.ip);
        let lease = json!({"apiVersion": "v1", "kind": "Endpoints", "metadata": {},
            "subsets": [{"addresses": [{"ip": self.ip.to_string()}]}]});
        let bytes = codec::encode_typed(&lease)?;
        let backend = self.router.backend(&key);
        let written = match backend.put_with_ttl(&key, bytes.clone(), Expect::Exists, LEASE_TTL).await {
            Err(storage::StorageError::NotFound { .. }) => {
                backend.put_with_ttl(&key, bytes, Expect::Absent, LEASE_TTL).await.map(|_| ())
            }
            other => other.map(|_| ()),
        };
        match written {
            // Written by another process of this server meanwhile: renewed all the same.
            Ok(()) | Err(storage::StorageError::AlreadyExists { .. }) => Ok(()),
            Err(e) => Err(e.to_string()),
        }
    }

    /// The addresses holding a lease, sorted (kube reads each lease's first address); an error
    /// when any lease cannot be read, as kube's `ListLeases` fails.
    async fn leased(&self) -> Result<Vec<String>, String> {
        let backend = self.router.backend(&self.leases);
        let list = backend.list(&self.leases, ListOptions::default()).await.map_err(|e| e.to_string())?;
        let mut ips = Vec::with_capacity(list.items.len());
        for kv in &list.items {
            let lease = codec::decode(&kv.key, &kv.value).map_err(|e| e.to_string())?;
            let ip = lease.pointer("/subsets/0/addresses/0/ip").and_then(Value::as_str);
            ips.push(ip.ok_or_else(|| format!("{} names no address", kv.key))?.to_string());
        }
        ips.sort();
        ips.dedup();
        Ok(ips)
    }

    /// Makes the Endpoints and the EndpointSlice `default/kubernetes` list the leased
    /// addresses; whether both are as they should be.
    async fn reconcile(&self, round: Round) -> bool {
        let ips = match self.leased().await {
            Ok(ips) => ips,
            Err(e) => {
                tracing::warn!("reading the apiservers' endpoint leases (skipping this round): {e}");
                return false;
            }
        };
        if ips.is_empty() && round == Round::Serving {
            tracing::warn!("no apiserver holds an endpoint lease: refusing to erase every endpoint while serving");
            return false;
        }
        let ports = json!([{"name": "https", "port": self.port, "protocol": "TCP"}]);
        let subsets = if ips.is_empty() {
            json!([])
        } else {
            let addresses: Vec<Value> = ips.iter().map(|ip| json!({"ip": ip})).collect();
            json!([{"addresses": addresses, "ports": ports}])
        };
        let endpoints = json!({"metadata": {"name": "kubernetes", "namespace": "default",
            "labels": {"endpointslice.kubernetes.io/skip-mirror": "true"}}, "subsets": subsets});
        let listed = |e: &Value| -> Vec<String> {
            let addresses = e.pointer("/subsets/0/addresses").and_then(Value::as_array).into_iter().flatten();
            let mut ips: Vec<String> = addresses.filter_map(|a| a["ip"].as_str().map(String::from)).collect();
            ips.sort();
            ips
        };
        let endpoints_ok =
            self.ensure("", "endpoints", endpoints, &["subsets"], |current| listed(current) == ips).await;
        // IPv6 only when every address is; addresses of the other family are left out.
        let v6 = !ips.is_empty() && ips.iter().all(|ip| ip.contains(':'));
        let family: Vec<&String> = ips.iter().filter(|ip| ip.contains(':') == v6).collect();
        let slice_endpoints: Vec<Value> =
            family.iter().map(|ip| json!({"addresses": [ip], "conditions": {"ready": true}})).collect();
        let slice_ports = if family.is_empty() { json!([]) } else { ports };
        let address_type = if v6 { "IPv6" } else { "IPv4" };
        let slice = json!({"metadata": {"name": "kubernetes", "namespace": "default",
            "labels": {"kubernetes.io/service-name": "kubernetes"}},
            "addressType": address_type, "endpoints": slice_endpoints, "ports": slice_ports});
        let slice_listed = |s: &Value| -> Vec<String> {
            let endpoints = s.get("endpoints").and_then(Value::as_array).into_iter().flatten();
            let mut ips: Vec<String> =
                endpoints.filter_map(|e| e.pointer("/addresses/0")?.as_str().map(String::from)).collect();
            ips.sort();
            ips
        };
        let want: Vec<String> = family.iter().map(|ip| ip.to_string()).collect();
        let fields = ["endpoints", "ports"];
        let slice_ok = self
            .ensure("discovery.k8s.io", "endpointslices", slice, &fields, |current| {
                slice_listed(current) == want && current["addressType"] == address_type
            })
            .await;
        endpoints_ok && slice_ok
    }

    /// Creates `desired`, or, unless `fine` says the stored object is right, updates its
    /// `fields` and labels (an EndpointSlice of another address type, which cannot change, is
    /// deleted to be made again next round). Whether the stored object is right now.
    async fn ensure(
        &self,
        group: &str,
        resource: &str,
        desired: Value,
        fields: &[&str],
        fine: impl Fn(&Value) -> bool,
    ) -> bool {
        let Some(def) = self.catalogue.find(group, "v1", resource) else { return true };
        let user =
            UserInfo { name: "system:apiserver".into(), groups: vec!["system:masters".into()], ..Default::default() };
        let options = WriteOptions { field_manager: Some("kube-apiserver".into()), ..Default::default() };
        let current = self.objects.get(group, resource, "default", "kubernetes").await.ok().flatten();
        let deadline = Deadline::after(WRITE_TIMEOUT);
        let result = match current {
            Some(current) => {
                let labelled = desired["metadata"]["labels"]
                    .as_object()
                    .into_iter()
                    .flatten()
                    .all(|(k, v)| current.pointer(&format!("/metadata/labels/{k}")) == Some(v));
                if fine(&current) && labelled {
                    return true;
                }
                if desired.get("addressType").is_some_and(|t| current.get("addressType") != Some(t)) {
                    let target = Target::object(&def, "default", "kubernetes");
                    let delete = DeleteObject { target, user, options: DeleteOptions::default() };
                    return match self.stages.delete.ask(delete, deadline).await {
                        Ok(_) => false,
                        Err(e) => {
                            tracing::warn!(resource, "replacing the kubernetes EndpointSlice: {}", e.message);
                            false
                        }
                    };
                }
                let mut updated = current;
                for f in fields {
                    updated[*f] = desired[*f].clone();
                }
                for (k, v) in desired["metadata"]["labels"].as_object().into_iter().flatten() {
                    updated["metadata"]["labels"][k] = v.clone();
                }
                let target = Target::object(&def, "default", "kubernetes");
                let update = UpdateObject { target, object: updated, user, options };
                self.stages.update.ask(update, deadline).await.map(|_| ())
            }
            None => {
                let create =
                    CreateObject { target: Target::collection(&def, "default"), object: desired, user, options };
                self.stages.create.ask(create, deadline).await.map(|_| ())
            }
        };
        match result {
            Ok(()) => true,
            // Written by another apiserver meanwhile: looked at again.
            Err(e) if matches!(e.reason, apimachinery::Reason::Conflict | apimachinery::Reason::AlreadyExists) => false,
            Err(e) => {
                tracing::warn!(resource, "keeping the kubernetes Service's endpoints: {}", e.message);
                false
            }
        }
    }
}
