//! Finalizes deleted namespaces, the job kube-controller-manager's namespace controller does in a
//! full cluster, so `kubectl delete namespace` completes against this server alone.
//!
//! A deleted namespace is `Terminating` with `kubernetes` in `spec.finalizers`. This task watches
//! namespaces through their cacher; for each terminating one it deletes every namespaced object
//! in it (pods with grace 0: no kubelet confirms them here), waits until the content is gone
//! (objects with their own finalizers hold it), then removes `kubernetes` through the
//! `/finalize` subresource, which lets the namespace go. `--enable-namespace-finalizer=false`
//! leaves namespaces `Terminating`, as a bare kube-apiserver does.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use actors::Deadline;
use apimachinery::catalogue::Catalogue;
use apimachinery::messages::{DeleteCollection, GetObject, ListObjects, Target, UpdateObject, WatchObjects};
use apimachinery::object::ObjectExt;
use apimachinery::options::{DeleteOptions, GetOptions, ListOptions, ReadAt, WatchOptions, WriteOptions};
use apimachinery::request::UserInfo;
use serde_json::Value;
use tokio::task::{AbortHandle, JoinSet};

use super::leader::spawn_stoppable;
use stage_handles::Stages;

/// How long one step of the finalizer may take before it is retried.
const STEP_TIMEOUT: Duration = Duration::from_secs(60);

fn controller() -> UserInfo {
    UserInfo {
        name: "system:serviceaccount:kube-system:namespace-controller".into(),
        uid: String::new(),
        groups: vec!["system:masters".into(), "system:authenticated".into()],
        ..Default::default()
    }
}

fn namespaces() -> Target {
    Target { version: "v1".into(), resource: "namespaces".into(), ..Default::default() }
}

fn terminating(ns: &Value) -> bool {
    ns.is_being_deleted()
        && ns.pointer("/spec/finalizers").and_then(Value::as_array).is_some_and(|f| f.iter().any(|x| x == "kubernetes"))
}

/// Deletes the namespace's content; returns whether it is empty.
async fn empty_namespace(stages: &Stages, catalogue: &Catalogue, namespace: &str) -> bool {
    let mut empty = true;
    for def in catalogue.stores().into_iter().filter(|d| d.namespaced) {
        // Grace 0: no kubelet here would confirm a graceful pod deletion.
        let delete = DeleteOptions { grace_period_seconds: Some(0), ..Default::default() };
        let msg = DeleteCollection {
            target: Target::collection(&def, namespace),
            list: ListOptions::default(),
            user: controller(),
            options: delete,
        };
        if let Err(e) = stages.delete_collection.ask(msg, Deadline::after(STEP_TIMEOUT)).await {
            tracing::warn!(namespace, resource = %def.resource, "deleting namespace content: {}", e.message);
            empty = false;
            continue;
        }
        let list = ListObjects { target: Target::collection(&def, namespace), options: ListOptions::default() };
        match async { stages.reads(&def)?.reader.list(list).await }.await {
            Ok(l) if l.items.is_empty() => {}
            _ => empty = false,
        }
    }
    empty
}

async fn finalize(stages: &Stages, catalogue: &Catalogue, name: &str) {
    let Some(ns_def) = catalogue.find("", "v1", "namespaces") else { return };
    let mut backoff = Duration::from_millis(200);
    loop {
        if empty_namespace(stages, catalogue, name).await {
            let get =
                GetObject { target: Target { name: name.into(), ..namespaces() }, options: GetOptions::default() };
            let Ok(ns) = async { stages.reads(&ns_def)?.reader.get(get).await }.await else {
                return;
            };
            let mut ns = ns.value();
            if let Some(list) = ns.pointer_mut("/spec/finalizers").and_then(Value::as_array_mut) {
                list.retain(|f| f != "kubernetes");
            }
            let update = UpdateObject {
                target: Target {
                    name: name.into(),
                    subresource: Some(apimachinery::catalogue::Subresource::Finalize),
                    ..namespaces()
                },
                object: ns,
                user: controller(),
                options: WriteOptions::default(),
            };
            match stages.update.ask(update, Deadline::after(STEP_TIMEOUT)).await {
                Ok(_) => return,
                Err(e) if e.reason == apimachinery::Reason::NotFound => return,
                Err(e) => tracing::warn!(namespace = name, "finalizing namespace: {}", e.message),
            }
        }
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(Duration::from_secs(10));
    }
}

/// Starts the finalizer on the current arbiter. The namespaces being finalized are tasks of
/// its own, so stopping it stops them too.
pub fn spawn(stages: Stages, catalogue: Arc<Catalogue>) -> Option<AbortHandle> {
    let ns_def = catalogue.find("", "v1", "namespaces")?;
    Some(spawn_stoppable(async move {
        let mut finalizing = JoinSet::new();
        let active: Arc<Mutex<HashSet<String>>> = Arc::default();
        loop {
            let watch = WatchObjects {
                target: namespaces(),
                options: WatchOptions { read_at: ReadAt::Latest, ..Default::default() },
            };
            let mut rx = match async { stages.reads(&ns_def)?.watch.ask(watch, Deadline::NONE).await }.await {
                Ok(rx) => rx.0,
                Err(e) => {
                    tracing::warn!("namespace finalizer cannot watch namespaces: {}", e.message);
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    continue;
                }
            };
            loop {
                let event = tokio::select! {
                    event = rx.recv() => event,
                    // Reaps finished ones, so the set holds only those running.
                    Some(_) = finalizing.join_next() => continue,
                };
                let Some(event) = event else { break };
                let object = event.object.value();
                if !terminating(&object) {
                    continue;
                }
                let name = object.name().to_string();
                if !active.lock().expect("not poisoned").insert(name.clone()) {
                    continue;
                }
                let (stages, active, catalogue) = (stages.clone(), active.clone(), catalogue.clone());
                finalizing.spawn_local(async move {
                    finalize(&stages, &catalogue, &name).await;
                    active.lock().expect("not poisoned").remove(&name);
                });
            }
        }
    }))
}
