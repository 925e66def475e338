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
//! With `--endpoint-reconciler-type=master-count` it keeps kube's older rule instead: no
//! leases; each server adds its address to those listed, and when they are more than
//! `--apiserver-count` drops the ones sorted after its own ([`counted`]).
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

/// How the listed addresses are chosen (`--endpoint-reconciler-type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reconciling {
    /// Every apiserver holding a lease (`lease`).
    Leases,
    /// kube's `master-count` rule, for this many apiservers (`--apiserver-count`).
    Count(usize),
}

/// The reconciler of one apiserver.
pub struct EndpointReconciler {
    reconciling: Reconciling,
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
    /// A reconciler advertising `ip:port`, keeping its lease (if it uses leases) under `prefix`.
    pub fn new(
        reconciling: Reconciling,
        stages: Stages,
        catalogue: Arc<Catalogue>,
        objects: Arc<dyn ObjectLookup>,
        router: Arc<StorageRouter>,
        prefix: &str,
        (ip, port): (IpAddr, u16),
    ) -> Arc<Self> {
        let leases = format!("{}/masterleases/", prefix.trim_end_matches('/'));
        let stopped = tokio::sync::Mutex::new(false);
        Arc::new(EndpointReconciler { reconciling, stages, catalogue, objects, router, leases, ip, port, stopped })
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
            let leased = self.reconciling == Reconciling::Leases;
            if leased
                && let Err(e) = self.router.backend(&key).delete(&key, None).await
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
        if self.reconciling == Reconciling::Leases
            && let Err(e) = self.renew().await
        {
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
        // master-count decides from the Endpoints it read, and writes over exactly that read
        // (a peer's write in between is a conflict, looked at again next round).
        let mut read = None;
        let ips = match self.reconciling {
            Reconciling::Leases => match self.leased().await {
                Ok(ips) => ips,
                Err(e) => {
                    tracing::warn!("reading the apiservers' endpoint leases (skipping this round): {e}");
                    return false;
                }
            },
            Reconciling::Count(count) => {
                let current = match self.objects.get("", "endpoints", "default", "kubernetes").await {
                    Ok(current) => current,
                    Err(e) => {
                        tracing::warn!("reading the kubernetes Service's endpoints (skipping this round): {e}");
                        return false;
                    }
                };
                // Leaving, kube removes nothing when there is nothing listed.
                let listed = current.as_ref().and_then(|e| e.pointer("/subsets/0")).is_some();
                if round == Round::Leaving && !listed {
                    return true;
                }
                let ips = counted(current.as_ref(), &self.ip.to_string(), count, round);
                read = Some(current);
                ips
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
            self.ensure("", "endpoints", endpoints, &["subsets"], read, |current| listed(current) == ips).await;
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
            .ensure("discovery.k8s.io", "endpointslices", slice, &fields, None, |current| {
                slice_listed(current) == want && current["addressType"] == address_type
            })
            .await;
        endpoints_ok && slice_ok
    }

    /// Creates `desired`, or, unless `fine` says the stored object is right, updates its
    /// `fields` and labels (an EndpointSlice of another address type, which cannot change, is
    /// deleted to be made again next round). The stored object is `read` when the caller read
    /// it already, else read here. Whether the stored object is right now.
    async fn ensure(
        &self,
        group: &str,
        resource: &str,
        desired: Value,
        fields: &[&str],
        read: Option<Option<Value>>,
        fine: impl Fn(&Value) -> bool,
    ) -> bool {
        let Some(def) = self.catalogue.find(group, "v1", resource) else { return true };
        let user =
            UserInfo { name: "system:apiserver".into(), groups: vec!["system:masters".into()], ..Default::default() };
        let options = WriteOptions { field_manager: Some("kube-apiserver".into()), ..Default::default() };
        let current = match read {
            Some(read) => read,
            None => self.objects.get(group, resource, "default", "kubernetes").await.ok().flatten(),
        };
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

/// kube's `master-count` rule (`masterCountEndpointReconciler`): the addresses the Endpoints
/// `current` lists, sorted as kube sorts them (as strings), with `own` added when missing or
/// when there are more than `count`; then, while there are too many, the address after `own`'s
/// place (wrapping to the first) is dropped, exactly as kube drops it. A listing that is not
/// one subset starts again from `own` alone. Leaving, `own` is taken out and nothing else.
fn counted(current: Option<&Value>, own: &str, count: usize, round: Round) -> Vec<String> {
    let subsets = current.and_then(|e| e.get("subsets")).and_then(Value::as_array);
    let listed = |subset: &Value| -> Vec<String> {
        let addresses = subset.get("addresses").and_then(Value::as_array).into_iter().flatten();
        let mut ips: Vec<String> = addresses.filter_map(|a| a["ip"].as_str().map(String::from)).collect();
        ips.sort();
        ips.dedup();
        ips
    };
    if round == Round::Leaving {
        let mut ips = subsets.and_then(|s| s.first()).map(listed).unwrap_or_default();
        ips.retain(|ip| ip != own);
        return ips;
    }
    let Some([subset]) = subsets.map(Vec::as_slice) else { return vec![own.to_string()] };
    let mut ips = listed(subset);
    if ips.iter().any(|ip| ip == own) && ips.len() <= count {
        return ips;
    }
    ips.push(own.to_string());
    ips.sort();
    ips.dedup();
    if let Some(at) = ips.iter().position(|ip| ip == own) {
        while ips.len() > count.max(1) {
            let drop = (at + 1) % ips.len();
            ips.remove(drop);
        }
    }
    ips
}

#[cfg(test)]
mod tests {
    use super::*;

    fn endpoints(ips: &[&str]) -> Value {
        let addresses: Vec<Value> = ips.iter().map(|ip| json!({"ip": ip})).collect();
        json!({"subsets": [{"addresses": addresses, "ports": [{"name": "https", "port": 6443}]}]})
    }

    #[test]
    fn master_count_adds_itself_and_drops_those_after_it() {
        let serving = |current: Option<&Value>, count| counted(current, "10.0.0.2", count, Round::Serving);
        assert_eq!(serving(None, 3), ["10.0.0.2"]);
        // Listed and within the count: left as it is.
        assert_eq!(serving(Some(&endpoints(&["10.0.0.3", "10.0.0.2"])), 3), ["10.0.0.2", "10.0.0.3"]);
        // Missing: added, in string order (10.0.0.10 sorts first).
        assert_eq!(serving(Some(&endpoints(&["10.0.0.10", "10.0.0.3"])), 3), ["10.0.0.10", "10.0.0.2", "10.0.0.3"]);
        // Too many: the ones after this server's place go.
        let four = endpoints(&["10.0.0.1", "10.0.0.3", "10.0.0.4"]);
        assert_eq!(serving(Some(&four), 2), ["10.0.0.1", "10.0.0.2"]);
        // Wrapping from the last place, kube drops the first, then (its index fixed) the server
        // itself, as kube does when the count is below the servers running.
        let last = counted(Some(&endpoints(&["10.0.0.0", "10.0.0.1"])), "10.0.0.9", 1, Round::Serving);
        assert_eq!(last, ["10.0.0.1"]);
        // Not one subset: only this server.
        let two_subsets =
            json!({"subsets": [{"addresses": [{"ip": "10.0.0.7"}]}, {"addresses": [{"ip": "10.0.0.8"}]}]});
        assert_eq!(serving(Some(&two_subsets), 3), ["10.0.0.2"]);
    }

    #[test]
    fn master_count_leaving_takes_only_itself_out() {
        let current = endpoints(&["10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4"]);
        assert_eq!(counted(Some(&current), "10.0.0.2", 2, Round::Leaving), ["10.0.0.1", "10.0.0.3", "10.0.0.4"]);
        assert!(counted(Some(&endpoints(&["10.0.0.2"])), "10.0.0.2", 1, Round::Leaving).is_empty());
        assert!(counted(None, "10.0.0.2", 1, Round::Leaving).is_empty());
    }
}
