//! A `default` ServiceAccount in every active namespace (kube's serviceaccounts controller):
//! made when a namespace appears, and again if someone deletes it.

use std::sync::Arc;

use actors::Deadline;
use apimachinery::catalogue::Catalogue;
use apimachinery::encoded::WatchEventType;
use apimachinery::lookup::ObjectLookup;
use apimachinery::messages::{CreateObject, Target};
use apimachinery::object::ObjectExt;
use apimachinery::options::WriteOptions;
use serde_json::json;
use tokio::task::AbortHandle;

use super::leader::spawn_stoppable;
use super::{WRITE_TIMEOUT, active, events, identity};
use stage_handles::Stages;

/// Creates `default` in `namespace` unless it exists. `deleted`: it was just deleted, so the
/// cache may still show it; create without looking (an existing one is AlreadyExists).
async fn ensure(stages: &Stages, catalogue: &Catalogue, objects: &dyn ObjectLookup, namespace: &str, deleted: bool) {
    if !deleted {
        match objects.get("", "serviceaccounts", namespace, "default").await {
            Ok(Some(_)) => return,
            Ok(None) => {}
            Err(e) => return tracing::warn!(namespace, "reading the default ServiceAccount: {}", e.message),
        }
    }
    let Some(def) = catalogue.find("", "v1", "serviceaccounts") else { return };
    let create = CreateObject {
        target: Target::collection(&def, namespace),
        object: json!({"metadata": {"name": "default"}}),
        user: identity("service-account-controller"),
        options: WriteOptions::default(),
    };
    match stages.create.ask(create, Deadline::after(WRITE_TIMEOUT)).await {
        Ok(_) => {}
        // Created meanwhile, or the namespace is going: nothing to do.
        Err(e) if matches!(e.reason, apimachinery::Reason::AlreadyExists | apimachinery::Reason::Forbidden) => {}
        Err(e) if e.reason == apimachinery::Reason::NotFound => {}
        Err(e) => tracing::warn!(namespace, "creating the default ServiceAccount: {}", e.message),
    }
}

/// Starts the controller on the current arbiter; the handle stops it (`None`: its kinds are not served).
pub fn spawn(stages: Stages, catalogue: Arc<Catalogue>, objects: Arc<dyn ObjectLookup>) -> Option<AbortHandle> {
    let (Some(namespaces), Some(accounts)) =
        (catalogue.find("", "v1", "namespaces"), catalogue.find("", "v1", "serviceaccounts"))
    else {
        return None;
    };
    let mut namespace_events = events(&stages, &namespaces);
    let mut account_events = events(&stages, &accounts);
    Some(spawn_stoppable(async move {
        loop {
            let (namespace, deleted) = tokio::select! {
                Some((kind, ns)) = namespace_events.recv() => {
                    if kind == WatchEventType::Deleted || !active(&ns) { continue }
                    (ns.name().to_string(), false)
                }
                Some((kind, sa)) = account_events.recv() => {
                    if kind != WatchEventType::Deleted || sa.name() != "default" { continue }
                    match objects.get("", "namespaces", "", sa.namespace()).await {
                        Ok(Some(ns)) if active(&ns) => (sa.namespace().to_string(), true),
                        _ => continue,
                    }
                }
                else => return,
            };
            ensure(&stages, &catalogue, objects.as_ref(), &namespace, deleted).await;
        }
    }))
}
