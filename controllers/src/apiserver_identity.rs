//! This apiserver's identity Lease, as kube-apiserver keeps its own (`APIServerIdentity`): a
//! Lease in `kube-system` named from the host, labelled `apiserver.kubernetes.io/identity:
//! kube-apiserver`, renewed every [`RENEW_INTERVAL`] for an hour's duration. Clients that count
//! apiservers (the storage version migrator, `kubectl get leases -l ...`) see this server as
//! one of them. Leases not renewed for their duration are deleted every [`GC_INTERVAL`], as
//! kube's `apiserverleasegc` does, by whichever server gets there first.

use std::sync::Arc;
use std::time::Duration;

use actors::Deadline;
use apimachinery::catalogue::Catalogue;
use apimachinery::lookup::ObjectLookup;
use apimachinery::messages::{CreateObject, DeleteObject, Target, UpdateObject};
use apimachinery::object::now_rfc3339_micros;
use apimachinery::options::{DeleteOptions, WriteOptions};
use apimachinery::request::UserInfo;
use serde_json::{Value, json};

use super::WRITE_TIMEOUT;
use stage_handles::Stages;

/// How often the Lease is renewed (kube's `IdentityLeaseRenewIntervalPeriod`).
pub const RENEW_INTERVAL: Duration = Duration::from_secs(10);
/// The Lease's duration (kube's `IdentityLeaseDurationSeconds`).
const LEASE_SECONDS: i64 = 3600;
/// How often expired identity Leases are deleted (kube's `IdentityLeaseGCPeriod`).
pub const GC_INTERVAL: Duration = Duration::from_secs(3600);
/// The label every identity Lease carries.
const IDENTITY_LABEL: &str = "apiserver.kubernetes.io/identity";

/// kube's `APIServerID`: `apiserver-` and the first 16 bytes of the SHA-256 of the host name and
/// `kube-apiserver` (each prefixed by its 2-byte length), in lower-case unpadded base32. The
/// same host gets the same name from either kind of server.
pub fn apiserver_id(hostname: &str) -> String {
    let mut data = Vec::new();
    for part in [hostname, "kube-apiserver"] {
        data.extend_from_slice(&u16::try_from(part.len()).unwrap_or(u16::MAX).to_be_bytes());
        data.extend_from_slice(part.as_bytes());
    }
    let hash = ring::digest::digest(&ring::digest::SHA256, &data);
    format!("apiserver-{}", base32_lower(&hash.as_ref()[..16]))
}

/// RFC 4648 base32, lower case, without padding.
fn base32_lower(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 32] = b"abcdefghijklmnopqrstuvwxyz234567";
    let (mut out, mut buffer, mut bits) = (String::new(), 0u32, 0u32);
    for &b in bytes {
        buffer = (buffer << 8) | u32::from(b);
        bits += 8;
        while bits >= 5 {
            bits -= 5;
            out.push(ALPHABET[((buffer >> bits) & 31) as usize] as char);
        }
    }
    if bits > 0 {
        out.push(ALPHABET[((buffer << (5 - bits)) & 31) as usize] as char);
    }
    out
}

/// Keeps this server's identity Lease and collects expired ones, on the current runtime.
pub fn start(stages: Stages, catalogue: Arc<Catalogue>, objects: Arc<dyn ObjectLookup>, hostname: String) {
    let Some(leases) = catalogue.find("coordination.k8s.io", "v1", "leases") else { return };
    let name = apiserver_id(&hostname);
    let holder = format!("{name}_{}", uuid::Uuid::new_v4());
    let user =
        UserInfo { name: "system:apiserver".into(), groups: vec!["system:masters".into()], ..Default::default() };
    let options = || WriteOptions { field_manager: Some("kube-apiserver".into()), ..Default::default() };
    actix_rt::spawn(async move {
        let mut beat = tokio::time::interval(RENEW_INTERVAL);
        beat.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut since_gc = GC_INTERVAL;
        loop {
            beat.tick().await;
            let now = now_rfc3339_micros();
            let labels = json!({IDENTITY_LABEL: "kube-apiserver", "kubernetes.io/hostname": hostname});
            let current = objects.get("coordination.k8s.io", "leases", "kube-system", &name).await.ok().flatten();
            let written = match current {
                Some(mut lease) => {
                    lease["spec"]["holderIdentity"] = json!(holder);
                    lease["spec"]["leaseDurationSeconds"] = json!(LEASE_SECONDS);
                    lease["spec"]["renewTime"] = json!(now);
                    for (k, v) in labels.as_object().into_iter().flatten() {
                        lease["metadata"]["labels"][k] = v.clone();
                    }
                    let target = Target::object(&leases, "kube-system", &name);
                    let update = UpdateObject { target, object: lease, user: user.clone(), options: options() };
                    stages.update.ask(update, Deadline::after(WRITE_TIMEOUT)).await.map(|_| ())
                }
                None => {
                    let object = json!({"metadata": {"name": name, "namespace": "kube-system", "labels": labels},
                        "spec": {"holderIdentity": holder, "leaseDurationSeconds": LEASE_SECONDS, "renewTime": now}});
                    let target = Target::collection(&leases, "kube-system");
                    let create = CreateObject { target, object, user: user.clone(), options: options() };
                    stages.create.ask(create, Deadline::after(WRITE_TIMEOUT)).await.map(|_| ())
                }
            };
            match written {
                Ok(()) => {}
                // Written meanwhile (a cache behind, another process of this host): next beat.
                Err(e) if matches!(e.reason, apimachinery::Reason::Conflict | apimachinery::Reason::AlreadyExists) => {}
                Err(e) => tracing::warn!(lease = %name, "renewing the apiserver identity Lease: {}", e.message),
            }
            since_gc += RENEW_INTERVAL;
            if since_gc >= GC_INTERVAL {
                since_gc = Duration::ZERO;
                collect_expired(&stages, &leases, objects.as_ref(), &user).await;
            }
        }
    });
}

/// Deletes the identity Leases whose holder stopped renewing them a duration ago.
async fn collect_expired(
    stages: &Stages,
    leases: &Arc<apimachinery::catalogue::ResourceDef>,
    objects: &dyn ObjectLookup,
    user: &UserInfo,
) {
    let Ok(list) = objects.list("coordination.k8s.io", "leases", "kube-system", "").await else { return };
    let now = chrono::Utc::now();
    let identities =
        list.into_iter().filter(|l| l.pointer("/metadata/labels").and_then(|m| m.get(IDENTITY_LABEL)).is_some());
    for lease in identities {
        let renewed = lease
            .pointer("/spec/renewTime")
            .and_then(Value::as_str)
            .and_then(|t| t.parse::<chrono::DateTime<chrono::Utc>>().ok());
        let duration = lease.pointer("/spec/leaseDurationSeconds").and_then(Value::as_i64).unwrap_or(LEASE_SECONDS);
        let expired = renewed.is_none_or(|t| t + chrono::Duration::seconds(duration) < now);
        let Some(name) = lease.pointer("/metadata/name").and_then(Value::as_str).filter(|_| expired) else { continue };
        let target = Target::object(leases, "kube-system", name);
        let delete = DeleteObject { target, user: user.clone(), options: DeleteOptions::default() };
        if let Err(e) = stages.delete.ask(delete, Deadline::after(WRITE_TIMEOUT)).await
            && e.reason != apimachinery::Reason::NotFound
        {
            tracing::warn!(lease = name, "deleting an expired apiserver identity Lease: {}", e.message);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_identity_is_kubes_for_the_same_host() {
        // RFC 4648's test vectors, lower-cased and unpadded.
        assert_eq!(base32_lower(b"foobar"), "mzxw6ytboi");
        assert_eq!(base32_lower(b"f"), "my");
        let id = apiserver_id("node-a");
        assert!(id.starts_with("apiserver-") && id.len() == "apiserver-".len() + 26, "{id}");
        assert_ne!(id, apiserver_id("node-b"));
        // The Lease a reference kube-apiserver 1.32 wrote on a host named `vm`.
        assert_eq!(apiserver_id("vm"), "apiserver-wlv32tlttr4jl3gtroqexyxapa");
    }
}
