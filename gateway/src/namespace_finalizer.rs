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

use actors::kinds::{self, ResourceDef};
use actors::messages::{
    DeleteCollection, DeleteOptions, ListObjects, ReadConsistency, Selection, Target, UpdateObject, WatchObjects,
    WriteOptions,
};
use actors::object::ObjectExt;
use actors::request::UserInfo;
use serde_json::Value;

use crate::server::Stages;

fn controller() -> WriteOptions {
    WriteOptions {
        user: UserInfo {
            name: "system:serviceaccount:kube-system:namespace-controller".into(),
            uid: String::new(),
            groups: vec!["system:masters".into(), "system:authenticated".into()],
        },
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

/// The namespaced resources, one per store (events are served by two groups from one).
fn namespaced_resources() -> Vec<&'static ResourceDef> {
    let mut seen = HashSet::new();
    kinds::BUILTIN.iter().filter(|d| d.namespaced && seen.insert(d.storage_path)).collect()
}

fn target_of(def: &ResourceDef, namespace: &str) -> Target {
    Target {
        group: def.group.into(),
        version: def.version.into(),
        resource: def.resource.into(),
        namespace: namespace.into(),
        ..Default::default()
    }
}

/// Deletes the namespace's content; returns whether it is empty.
async fn empty_namespace(stages: &Stages, namespace: &str) -> bool {
    let mut empty = true;
    for def in namespaced_resources() {
        let delete =
            DeleteOptions { grace_period_seconds: (def.resource == "pods").then_some(0), ..Default::default() };
        let msg = DeleteCollection {
            target: target_of(def, namespace),
            selection: Selection::default(),
            delete,
            options: controller(),
        };
        if let Err(e) = stages.delete_collection.ask(msg).await {
            tracing::warn!(namespace, resource = def.resource, "deleting namespace content: {}", e.message);
            empty = false;
            continue;
        }
        let list = ListObjects {
            target: target_of(def, namespace),
            selection: Selection::default(),
            consistency: ReadConsistency::default(),
            limit: 0,
            continue_token: None,
        };
        match stages.reads(def).reader.list(list).await {
            Ok(l) if l.items.is_empty() => {}
            _ => empty = false,
        }
    }
    empty
}

async fn finalize(stages: &Stages, name: &str) {
    let mut backoff = Duration::from_millis(200);
    loop {
        if empty_namespace(stages, name).await {
            let get = actors::messages::GetObject {
                target: Target { name: name.into(), ..namespaces() },
                consistency: ReadConsistency::default(),
            };
            let Ok(ns) = stages.reads(kinds::find("", "v1", "namespaces").expect("served")).reader.get(get).await
            else {
                return;
            };
            let mut ns = ns.value();
            if let Some(list) = ns.pointer_mut("/spec/finalizers").and_then(Value::as_array_mut) {
                list.retain(|f| f != "kubernetes");
            }
            let update = UpdateObject {
                target: Target { name: name.into(), subresource: "finalize".into(), ..namespaces() },
                object: ns,
                options: controller(),
            };
            match stages.update.ask(update).await {
                Ok(_) => return,
                Err(e) if e.reason == actors::Reason::NotFound => return,
                Err(e) => tracing::warn!(namespace = name, "finalizing namespace: {}", e.message),
            }
        }
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(Duration::from_secs(10));
    }
}

/// Starts the finalizer on the current arbiter.
pub fn spawn(stages: Stages) {
    let active: Arc<Mutex<HashSet<String>>> = Arc::default();
    actix_web::rt::spawn(async move {
        let ns_def = kinds::find("", "v1", "namespaces").expect("namespaces are served");
        loop {
            let watch = WatchObjects {
                target: namespaces(),
                selection: Selection::default(),
                consistency: ReadConsistency::default(),
                allow_bookmarks: false,
                send_initial_events: None,
                timeout_seconds: None,
            };
            let mut rx = match stages.reads(ns_def).watch.ask(watch).await {
                Ok(rx) => rx.0,
                Err(e) => {
                    tracing::warn!("namespace finalizer cannot watch namespaces: {}", e.message);
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    continue;
                }
            };
            while let Some(event) = rx.recv().await {
                let object = event.object.value();
                if !terminating(&object) {
                    continue;
                }
                let name = object.name().to_string();
                if !active.lock().expect("not poisoned").insert(name.clone()) {
                    continue;
                }
                let (stages, active) = (stages.clone(), active.clone());
                actix_web::rt::spawn(async move {
                    finalize(&stages, &name).await;
                    active.lock().expect("not poisoned").remove(&name);
                });
            }
        }
    });
}
