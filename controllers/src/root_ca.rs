//! The `kube-root-ca.crt` ConfigMap in every active namespace (kube's root-ca-cert-publisher):
//! `ca.crt` holds the CA that verifies this server, which the `kube-api-access-*` token volume
//! projects and in-cluster clients read. Restored if it is deleted or changed.

use std::sync::Arc;

use actors::Deadline;
use apimachinery::catalogue::Catalogue;
use apimachinery::encoded::WatchEventType;
use apimachinery::lookup::ObjectLookup;
use apimachinery::messages::{CreateObject, Target, UpdateObject};
use apimachinery::object::ObjectExt;
use apimachinery::options::WriteOptions;
use serde_json::{Value, json};
use tokio::task::AbortHandle;

use super::leader::spawn_stoppable;
use super::{WRITE_TIMEOUT, active, events, identity};
use stage_handles::Stages;

const NAME: &str = "kube-root-ca.crt";
const DESCRIPTION: &str = "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters.";

struct Publisher {
    stages: Stages,
    catalogue: Arc<Catalogue>,
    objects: Arc<dyn ObjectLookup>,
    root_ca: String,
}

impl Publisher {
    /// Creates or restores the ConfigMap in `namespace`; `gone`: it was just deleted, so the
    /// cache may still show it.
    async fn sync(&self, namespace: &str, gone: bool) {
        let Some(def) = self.catalogue.find("", "v1", "configmaps") else { return };
        let existing =
            if gone { None } else { self.objects.get("", "configmaps", namespace, NAME).await.ok().flatten() };
        let user = identity("root-ca-cert-publisher");
        let result = match existing {
            Some(cm) if cm.pointer("/data/ca.crt").and_then(Value::as_str) == Some(self.root_ca.as_str()) => return,
            Some(mut cm) => {
                cm["data"] = json!({"ca.crt": self.root_ca});
                let update = UpdateObject {
                    target: Target::object(&def, namespace, NAME),
                    object: cm,
                    user,
                    options: WriteOptions::default(),
                };
                self.stages.update.ask(update, Deadline::after(WRITE_TIMEOUT)).await.map(|_| ())
            }
            None => {
                let object = json!({"metadata": {"name": NAME, "annotations": {"kubernetes.io/description": DESCRIPTION}}, "data": {"ca.crt": self.root_ca}});
                let create = CreateObject {
                    target: Target::collection(&def, namespace),
                    object,
                    user,
                    options: WriteOptions::default(),
                };
                self.stages.create.ask(create, Deadline::after(WRITE_TIMEOUT)).await.map(|_| ())
            }
        };
        match result {
            Ok(()) => {}
            // Made meanwhile, changed meanwhile (its event brings us back), or the namespace is going.
            Err(e)
                if matches!(
                    e.reason,
                    apimachinery::Reason::AlreadyExists
                        | apimachinery::Reason::Conflict
                        | apimachinery::Reason::Forbidden
                        | apimachinery::Reason::NotFound
                ) => {}
            Err(e) => tracing::warn!(namespace, "publishing {NAME}: {}", e.message),
        }
    }
}

/// Starts the publisher on the current arbiter; the handle stops it (`None`: its kinds are not served).
pub fn spawn(
    stages: Stages,
    catalogue: Arc<Catalogue>,
    objects: Arc<dyn ObjectLookup>,
    root_ca: String,
) -> Option<AbortHandle> {
    let (Some(namespaces), Some(configmaps)) =
        (catalogue.find("", "v1", "namespaces"), catalogue.find("", "v1", "configmaps"))
    else {
        return None;
    };
    let mut namespace_events = events(&stages, &namespaces);
    let mut configmap_events = events(&stages, &configmaps);
    let publisher = Publisher { stages, catalogue, objects, root_ca };
    Some(spawn_stoppable(async move {
        loop {
            let (namespace, gone) = tokio::select! {
                Some((kind, ns)) = namespace_events.recv() => {
                    if kind == WatchEventType::Deleted || !active(&ns) { continue }
                    (ns.name().to_string(), false)
                }
                Some((kind, cm)) = configmap_events.recv() => {
                    if cm.name() != NAME { continue }
                    match publisher.objects.get("", "namespaces", "", cm.namespace()).await {
                        Ok(Some(ns)) if active(&ns) => (cm.namespace().to_string(), kind == WatchEventType::Deleted),
                        _ => continue,
                    }
                }
                else => return,
            };
            publisher.sync(&namespace, gone).await;
        }
    }))
}
