//! Keeps the authorizer's RBAC [`Policy`](auth::rbac::Policy) current: each of the four RBAC
//! resources is listed from its cacher, then followed by a watch from the list's
//! resourceVersion. A watch that ends resumes from the last event seen; one refused as too old
//! (410) starts over with a fresh list, which replaces what the policy held of that resource.

use std::sync::Arc;
use std::time::Duration;

use actors::Deadline;
use apimachinery::catalogue::{Catalogue, ResourceDef};
use apimachinery::encoded::WatchEventType;
use apimachinery::messages::{ListObjects, Target, WatchObjects};
use apimachinery::object::ObjectExt;
use apimachinery::options::{ListOptions, ReadAt, WatchOptions};
use auth::SharedPolicy;
use auth::rbac::RbacKind;

use stage_handles::Caches;

/// Lists `def` into `policy` (replacing what it held of `kind`); returns the list's revision.
async fn load(caches: &Caches, def: &ResourceDef, kind: RbacKind, policy: &SharedPolicy) -> Result<u64, String> {
    let list = ListObjects { target: Target::collection(def, ""), options: ListOptions::default() };
    let list = caches.reads(def).map_err(|e| e.message)?.reader.list(list).await.map_err(|e| e.message)?;
    let mut p = policy.write().unwrap_or_else(std::sync::PoisonError::into_inner);
    p.clear(kind);
    for item in &list.items {
        p.apply(kind, &item.value(), true);
    }
    Ok(list.resource_version.parse().unwrap_or(0))
}

/// Follows `def` from `revision` until the watch is refused as too old or cannot start.
async fn follow(caches: &Caches, def: &ResourceDef, kind: RbacKind, policy: &SharedPolicy, mut revision: u64) {
    loop {
        let watch = WatchObjects {
            target: Target::collection(def, ""),
            options: WatchOptions {
                read_at: ReadAt::NotOlderThan(revision),
                allow_bookmarks: true,
                ..Default::default()
            },
        };
        let mut rx = match async { caches.reads(def)?.watch.ask(watch, Deadline::NONE).await }.await {
            Ok(rx) => rx.0,
            Err(e) => {
                tracing::warn!(resource = def.resource, "RBAC feed cannot watch: {}", e.message);
                return;
            }
        };
        while let Some(event) = rx.recv().await {
            let object = event.object.value();
            match event.kind {
                WatchEventType::Error => return,
                WatchEventType::Bookmark => {}
                kind_of_change => {
                    let present = kind_of_change != WatchEventType::Deleted;
                    policy.write().unwrap_or_else(std::sync::PoisonError::into_inner).apply(kind, &object, present);
                }
            }
            if let Ok(rv) = object.resource_version().parse() {
                revision = rv;
            }
        }
    }
}

/// Loads the RBAC resources into `policy`, then keeps them current from the cachers. Returns
/// once the first lists are in, so no request is decided on an empty policy.
pub async fn start(caches: Caches, catalogue: Arc<Catalogue>, policy: SharedPolicy) -> Result<(), String> {
    for (resource, kind) in RbacKind::ALL {
        let def = catalogue
            .find("rbac.authorization.k8s.io", "v1", resource)
            .ok_or_else(|| format!("{resource} are not served"))?;
        let revision = load(&caches, &def, kind, &policy).await?;
        let (caches, policy) = (caches.clone(), policy.clone());
        actix_rt::spawn(async move {
            let mut revision = revision;
            loop {
                follow(&caches, &def, kind, &policy, revision).await;
                // Too old or refused: start over from a fresh list.
                loop {
                    tokio::time::sleep(Duration::from_millis(200)).await;
                    match load(&caches, &def, kind, &policy).await {
                        Ok(rv) => {
                            revision = rv;
                            break;
                        }
                        Err(e) => tracing::warn!(resource = def.resource, "RBAC feed cannot list: {e}"),
                    }
                }
            }
        });
    }
    Ok(())
}
