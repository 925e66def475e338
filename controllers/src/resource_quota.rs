//! Keeps each ResourceQuota's status, the job of kube-controller-manager's resourcequota
//! controller: `status.hard` follows `spec.hard`, and `status.used` is recounted from what is
//! stored, so deleting objects gives their quota back. A quota is counted as soon as it appears
//! or its spec changes (quota admission refuses what it covers until then), and every quota is
//! recounted every `RESYNC` (5 s).
//!
//! Quota admission charges a write before it is stored, so a recount can miss an object charged
//! a moment ago and not yet written. Raising a count is always safe; lowering one waits
//! `SETTLE` (1 s) and is written only if no charge came in meanwhile (the quota's resourceVersion
//! is unchanged), recounting after the wait; the write itself is guarded by that
//! resourceVersion, so a charge made after the wait makes it fail and wait for the next round.

use std::sync::Arc;
use std::time::Duration;

use actors::Deadline;
use apimachinery::catalogue::{Catalogue, ResourceDef, Subresource};
use apimachinery::encoded::WatchEventType;
use apimachinery::lookup::ObjectLookup;
use apimachinery::messages::{GetObject, Target, UpdateObject};
use apimachinery::object::ObjectExt;
use apimachinery::options::{GetOptions, ReadAt, WriteOptions};
use kinds::quota::evaluator::{evaluators_for, scope_requirements};
use kinds::quota::resources::{self, ResourceList};
use kinds::quota::{self as q};
use serde_json::{Value, json};
use tokio::task::AbortHandle;

use super::leader::spawn_stoppable;
use super::{WRITE_TIMEOUT, events, identity};
use stage_handles::Stages;

/// How often every quota is recounted.
const RESYNC: Duration = Duration::from_secs(5);
/// How long a lower count waits for charges in flight to be stored.
const SETTLE: Duration = Duration::from_secs(1);

struct Controller {
    stages: Stages,
    quotas: Arc<ResourceDef>,
    objects: Arc<dyn ObjectLookup>,
}

/// The status `quota` should have, given `counted` usage: hard limits from the spec, usage of
/// each limited resource as counted (or as it was, for resources that could not be counted).
fn wanted_status(quota: &Value, counted: &ResourceList) -> (ResourceList, ResourceList) {
    let hard = resources::parse(quota.pointer("/spec/hard")).unwrap_or_default();
    let mut used = q::used(quota).unwrap_or_default();
    used.extend(counted.iter().map(|(k, v)| (k.clone(), *v)));
    (hard.clone(), resources::mask(&used, hard.keys()))
}

/// Whether the status already says so.
fn up_to_date(quota: &Value, hard: &ResourceList, used: &ResourceList) -> bool {
    let known = |p: &str| resources::parse(quota.pointer(p));
    known("/status/hard").is_some_and(|h| resources::equals(&h, hard))
        && q::used(quota).is_some_and(|u| resources::equals(&u, used))
}

/// Whether the quota needs counting now rather than at the next resync: new, or its limits
/// changed.
fn unsynced(quota: &Value) -> bool {
    let spec = resources::parse(quota.pointer("/spec/hard")).unwrap_or_default();
    let status = resources::parse(quota.pointer("/status/hard"));
    q::used(quota).is_none() || !status.is_some_and(|s| resources::equals(&s, &spec))
}

/// Whether `used` is below what the status says for any resource.
fn lowers(quota: &Value, used: &ResourceList) -> bool {
    let before = q::used(quota).unwrap_or_default();
    used.iter().any(|(k, v)| before.get(k).is_some_and(|b| v < b))
}

impl Controller {
    async fn read(&self, namespace: &str, name: &str) -> Option<Value> {
        let get = GetObject {
            target: Target::object(&self.quotas, namespace, name),
            options: GetOptions { read_at: ReadAt::Latest },
        };
        self.stages.reads(&self.quotas).ok()?.reader.get(get).await.ok().map(|o| o.value())
    }

    /// `quota.CalculateUsage` over what storage holds now in the quota's namespace.
    async fn count(&self, quota: &Value) -> ResourceList {
        let hard = resources::parse(quota.pointer("/spec/hard")).unwrap_or_default();
        let names: Vec<String> = hard.keys().cloned().collect();
        let mut measured = Vec::new();
        for evaluator in evaluators_for(&names) {
            let (group, resource) = evaluator.group_resource();
            match self.objects.list_latest(group, resource, quota.namespace()).await {
                Ok(items) => measured.push((evaluator, items)),
                Err(e) => tracing::debug!(quota = quota.name(), resource, "quota cannot count: {}", e.message),
            }
        }
        q::calculate_usage(&hard, &scope_requirements(quota), &measured, chrono::Utc::now())
    }

    /// Brings one quota's status up to date.
    async fn sync(&self, namespace: &str, name: &str) {
        let Some(mut quota) = self.read(namespace, name).await else { return };
        let (hard, mut used) = wanted_status(&quota, &self.count(&quota).await);
        if up_to_date(&quota, &hard, &used) {
            return;
        }
        if lowers(&quota, &used) {
            tokio::time::sleep(SETTLE).await;
            let Some(again) = self.read(namespace, name).await else { return };
            if again.resource_version() != quota.resource_version() {
                return;
            }
            quota = again;
            used = wanted_status(&quota, &self.count(&quota).await).1;
        }
        quota["status"] = json!({"hard": resources::to_json(&hard), "used": resources::to_json(&used)});
        let update = UpdateObject {
            target: Target { subresource: Some(Subresource::Status), ..Target::object(&self.quotas, namespace, name) },
            object: quota,
            user: identity("resourcequota-controller"),
            options: WriteOptions::default(),
        };
        match self.stages.update.ask(update, Deadline::after(WRITE_TIMEOUT)).await {
            Ok(_) => {}
            // Charged or changed meanwhile, or gone: the next round counts again.
            Err(e) if matches!(e.reason, apimachinery::Reason::Conflict | apimachinery::Reason::NotFound) => {}
            Err(e) => tracing::warn!(namespace, quota = name, "updating quota status: {}", e.message),
        }
    }

    /// Recounts every quota.
    async fn resync(&self) {
        match self.objects.list_latest("", "resourcequotas", "").await {
            Ok(quotas) => {
                for quota in quotas {
                    self.sync(quota.namespace(), quota.name()).await;
                }
            }
            Err(e) => tracing::warn!("listing quotas: {}", e.message),
        }
    }
}

/// Starts the controller on the current arbiter; the handle stops it (`None`: its kinds are not served).
pub fn spawn(stages: Stages, catalogue: Arc<Catalogue>, objects: Arc<dyn ObjectLookup>) -> Option<AbortHandle> {
    let quotas = catalogue.find("", "v1", "resourcequotas")?;
    let mut quota_events = events(&stages, &quotas);
    let controller = Controller { stages, quotas, objects };
    Some(spawn_stoppable(async move {
        let mut resync = tokio::time::interval(RESYNC);
        resync.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                Some((kind, quota)) = quota_events.recv() => {
                    if kind != WatchEventType::Deleted && unsynced(&quota) {
                        controller.sync(quota.namespace(), quota.name()).await;
                    }
                }
                _ = resync.tick() => controller.resync().await,
                else => return,
            }
        }
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_follows_the_spec_and_the_count() {
        let quota = json!({"spec": {"hard": {"pods": "5", "secrets": "2"}},
            "status": {"hard": {"pods": "4"}, "used": {"pods": "3", "services": "1"}}});
        assert!(unsynced(&quota), "limits changed");
        let counted = resources::parse(Some(&json!({"pods": "1"}))).unwrap();
        let (hard, used) = wanted_status(&quota, &counted);
        assert_eq!(resources::to_json(&hard), json!({"pods": "5", "secrets": "2"}));
        // secrets could not be counted, and were never: left out; services is no longer limited.
        assert_eq!(resources::to_json(&used), json!({"pods": "1"}));
        assert!(lowers(&quota, &used));
        assert!(!up_to_date(&quota, &hard, &used));
    }
}
