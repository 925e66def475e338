//! The controller work a standalone server needs, which kube-controller-manager does in a full
//! cluster. Each follows its resources through the cachers and writes through the storage
//! stage as a controller identity; each can be turned off by its flag, so a real
//! kube-controller-manager can take over. Beside them, the API's own controllers (always on)
//! and the RBAC feed, which writes nothing: it keeps the authorizer's policy current.
//!
//! # Layout
//! - this module: what every controller shares: [`events`] (a resource's objects, then their
//!   changes, from its cacher), [`identity`] (who a controller writes as), [`WRITE_TIMEOUT`].
//! - [`namespace_finalizer`]: completes namespace deletion.
//! - [`service_accounts`]: a `default` ServiceAccount in every namespace.
//! - [`token_secrets`]: legacy tokens in `kubernetes.io/service-account-token` Secrets.
//! - [`role_aggregation`]: ClusterRoles with an `aggregationRule` get the rules they select.
//! - [`root_ca`]: the `kube-root-ca.crt` ConfigMap in every namespace.
//! - [`resource_quota`]: ResourceQuotas' `status.hard` and `status.used`.
//! - [`policy_status`]: ValidatingAdmissionPolicies' `status.typeChecking`.
//! - [`crds`]: CustomResourceDefinitions served, their names and conditions kept, their
//!   objects deleted with them (part of the API, not of kube-controller-manager: always on).
//! - [`apiservice_registration`]: an APIService for every group version served here.
//! - [`authentication_trust`]: the `extension-apiserver-authentication` ConfigMap extension
//!   servers authenticate passed-on requests by.
//! - [`legacy_tokens`]: since when legacy service-account token use is tracked, and the
//!   last-used label each use puts on the token's Secret (kube-apiserver's work: always on).
//! - [`rbac_feed`]: keeps the authorizer's RBAC policy current from the RBAC cachers (in every
//!   replica and storage stage process, never elected).
//! - [`apiserver_identity`]: this apiserver's identity Lease, as kube-apiserver keeps its own
//!   (in every replica, never elected).
//! - [`kubernetes_endpoints`]: the `kubernetes` Service's endpoints, from every apiserver's
//!   lease (in every replica, never elected).
//! - [`leader`]: the Lease that lets one replica at a time run the controllers above that
//!   kube-controller-manager would run (`--leader-elect`).
//! - [`standing_aside`]: those controllers stop while a real kube-controller-manager holds its
//!   own Lease.
//! - [`metrics`]: the names of the metrics they record.

use std::sync::Arc;
use std::time::Duration;

use actors::Deadline;
use apimachinery::catalogue::ResourceDef;
use apimachinery::encoded::{EncodedObject, WatchEventType};
use apimachinery::messages::{Target, WatchObjects};
use apimachinery::options::{ReadAt, WatchOptions};
use apimachinery::request::UserInfo;
use serde_json::Value;
use tokio::sync::mpsc;

use stage_handles::Stages;

pub mod apiserver_identity;
pub mod apiservice_registration;
pub mod authentication_trust;
pub mod configmap_data;
pub mod crds;
pub mod kubernetes_endpoints;
pub mod leader;
pub mod legacy_tokens;
pub mod metrics;
pub mod namespace_finalizer;
pub mod policy_status;
pub mod rbac_feed;
pub mod resource_quota;
pub mod role_aggregation;
pub mod root_ca;
pub mod service_accounts;
pub mod standing_aside;
pub mod token_secrets;

/// How long one write of a controller may take.
pub const WRITE_TIMEOUT: Duration = Duration::from_secs(30);

/// The identity a controller writes as: its kube-controller-manager ServiceAccount name, in
/// `system:masters` (it runs inside the server, past RBAC).
pub fn identity(controller: &str) -> UserInfo {
    UserInfo {
        name: format!("system:serviceaccount:kube-system:{controller}"),
        uid: String::new(),
        groups: vec!["system:masters".into(), "system:authenticated".into()],
        ..Default::default()
    }
}

/// Whether a namespace takes new content (not being deleted).
pub fn active(namespace: &Value) -> bool {
    use apimachinery::object::ObjectExt;
    namespace.pointer("/status/phase").and_then(Value::as_str) != Some("Terminating") && !namespace.is_being_deleted()
}

/// The events of every object of `def`: the current state first (as `Added`), then each
/// change; a watch that ends is started again the same way, so a controller that acts on
/// state rather than on transitions misses nothing.
pub fn events(stages: &Stages, def: &Arc<ResourceDef>) -> mpsc::Receiver<(WatchEventType, Value)> {
    follow(stages, def, |object| object.value())
}

/// [`events`] with the objects as the cacher holds them (shared, not decoded), for a
/// controller that keeps every object and decodes few.
pub fn encoded_events(stages: &Stages, def: &Arc<ResourceDef>) -> mpsc::Receiver<(WatchEventType, EncodedObject)> {
    follow(stages, def, |object| object)
}

/// The watch loop of [`events`] and [`encoded_events`], each object passed through `map`.
fn follow<T: Send + 'static>(
    stages: &Stages,
    def: &Arc<ResourceDef>,
    map: fn(EncodedObject) -> T,
) -> mpsc::Receiver<(WatchEventType, T)> {
    let (tx, rx) = mpsc::channel(1024);
    let (stages, def) = (stages.clone(), def.clone());
    actix_rt::spawn(async move {
        loop {
            let watch = WatchObjects {
                target: Target::collection(&def, ""),
                options: WatchOptions { read_at: ReadAt::Latest, ..Default::default() },
            };
            match async { stages.reads(&def)?.watch.ask(watch, Deadline::NONE).await }.await {
                Ok(stream) => {
                    let mut stream = stream.0;
                    loop {
                        // A controller that stopped (its leader lost the Lease) drops its end:
                        // the watch ends then, not at the next event.
                        let event = tokio::select! {
                            event = stream.recv() => event,
                            _ = tx.closed() => return,
                        };
                        let Some(event) = event else { break };
                        if matches!(event.kind, WatchEventType::Bookmark | WatchEventType::Error) {
                            continue;
                        }
                        if tx.send((event.kind, map(event.object))).await.is_err() {
                            return;
                        }
                    }
                }
                Err(e) => tracing::warn!(resource = %def.resource, "controller cannot watch: {}", e.message),
            }
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_millis(500)) => {}
                _ = tx.closed() => return,
            }
        }
    });
    rx
}
