//! kube's `ResourceQuota` plugin: a write is admitted only if what it charges fits every
//! ResourceQuota of its namespace covering it, and the charge is written into those quotas'
//! `status.used` before admission answers, so concurrent writes can never exceed a quota.
//!
//! # Concurrency
//! kube batches the evaluations waiting in a namespace and writes each changed quota once per
//! batch. Here evaluations in one namespace take turns instead (`NamespaceTurns`): each reads
//! the quotas, checks, and writes its charge with the quota's resourceVersion as precondition.
//! The turns keep one server's evaluations from conflicting with each other; the precondition
//! keeps the quota controller's recounts, and other servers sharing the storage, from being
//! overwritten: a conflict re-reads the quotas from storage and checks again. A dry run is
//! checked and not charged.
//!
//! The charge is an update of `resourcequotas/status`, which passes through admission again;
//! this plugin ignores subresources (as kube does), so charging never recurses into charging.
//!
//! # Layout
//! - [`check`]: the decision over one write and the namespace's quotas.

mod check;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use apimachinery::error::ApiError;
use apimachinery::lookup::{ObjectLookup, ObjectWriter};
use apimachinery::messages::{Admit, Operation};
use apimachinery::object::ObjectExt;
use async_trait::async_trait;
use kinds::quota::evaluator::{Evaluator, ignored};
use kinds::quota::resources;
use serde_json::Value;
use tokio::sync::OwnedMutexGuard;

use crate::attributes::forbidden;
use crate::live_lookup::LiveLookup;
use crate::{AdmissionPlugin, Review};
use check::{Refused, Write};

/// How long an evaluation waits for its namespace's turn (kube's "resource quota evaluates
/// timeout" after 10 s).
const TURN_TIMEOUT: Duration = Duration::from_secs(10);
/// Conflicting charges are checked again this many times against fresh quotas (kube: 3).
const RETRIES: usize = 3;

/// One evaluation at a time per namespace.
#[derive(Default)]
struct NamespaceTurns {
    /// The lock of each namespace with an evaluation running or waiting. The map's own lock
    /// is a std mutex, held only to find, insert or drop an entry; each namespace's is an async
    /// mutex, held across the read, check and write of one evaluation, and fair, so waiters go
    /// in arrival order.
    locks: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
}

/// A namespace's turn: while it lives, no other evaluation in the namespace runs. Dropping it
/// (the evaluation ended, or its request was cancelled) passes the turn on, and forgets the
/// namespace when nobody else waits.
struct Turn<'a> {
    guard: Option<OwnedMutexGuard<()>>,
    lock: Arc<tokio::sync::Mutex<()>>,
    namespace: String,
    turns: &'a NamespaceTurns,
}

impl NamespaceTurns {
    async fn take(&self, namespace: &str, wait: Duration) -> Result<Turn<'_>, ApiError> {
        let lock = self.locks.lock().expect("not poisoned").entry(namespace.to_string()).or_default().clone();
        let mut turn = Turn { guard: None, lock: lock.clone(), namespace: namespace.to_string(), turns: self };
        match tokio::time::timeout(wait, lock.lock_owned()).await {
            Ok(guard) => {
                turn.guard = Some(guard);
                Ok(turn)
            }
            Err(_) => Err(ApiError::internal("resource quota evaluates timeout")),
        }
    }
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        self.guard.take();
        let mut locks = self.turns.locks.lock().expect("not poisoned");
        // Clones are only made under the map's lock: the map's and ours are the last two.
        if Arc::strong_count(&self.lock) == 2 {
            locks.remove(&self.namespace);
        }
    }
}

/// One of `limitedResources` (kube's `LimitedResource`): creating `resource` of `apiGroup`
/// while consuming a resource whose name contains one of `matchContains` needs a quota that
/// limits it. (`matchScopes` is not read.)
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LimitedResource {
    /// `apiGroup`, `""` for core.
    pub api_group: String,
    /// `resource`, plural.
    pub resource: String,
    /// `matchContains`.
    pub match_contains: Vec<String>,
}

/// The `limitedResources` of a `ResourceQuotaConfiguration`.
pub fn limited_resources(config: &Value) -> Result<Vec<LimitedResource>, String> {
    const API_VERSIONS: [&str; 3] = [
        "apiserver.config.k8s.io/v1",
        "resourcequota.admission.k8s.io/v1beta1",
        "resourcequota.admission.k8s.io/v1alpha1",
    ];
    // The legacy `resourcequota.admission.k8s.io` versions called it `Configuration`.
    crate::config::expect_kind(config, &["ResourceQuotaConfiguration", "Configuration"], &API_VERSIONS)?;
    let mut limited = Vec::new();
    for (i, l) in config.get("limitedResources").and_then(Value::as_array).into_iter().flatten().enumerate() {
        let resource = l.get("resource").and_then(Value::as_str).unwrap_or("");
        if resource.is_empty() {
            return Err(format!("limitedResources[{i}].resource: Required value"));
        }
        limited.push(LimitedResource {
            api_group: l.get("apiGroup").and_then(Value::as_str).unwrap_or("").to_string(),
            resource: resource.to_string(),
            match_contains: apimachinery::object::string_list(l.get("matchContains")),
        });
    }
    Ok(limited)
}

/// Enforces and charges ResourceQuotas.
pub struct ResourceQuota {
    quotas: LiveLookup,
    /// `limitedResources` of the plugin's configuration.
    limited: Vec<LimitedResource>,
    writer: Arc<dyn ObjectWriter>,
    turns: NamespaceTurns,
    /// The quotas as this plugin last wrote them, by `namespace/name` (kube's `updatedQuotas`):
    /// the cache may not show a charge just made yet, and checking the next write against the
    /// older state would only conflict. A std mutex, never held across an await.
    charged: Mutex<HashMap<String, Value>>,
}

fn key(quota: &Value) -> String {
    format!("{}/{}", quota.namespace(), quota.name())
}

fn revision(quota: &Value) -> Option<u64> {
    quota.resource_version().parse().ok()
}

impl ResourceQuota {
    /// The plugin reading quotas through `objects` and charging them through `writer`.
    pub fn new(objects: Arc<dyn ObjectLookup>, writer: Arc<dyn ObjectWriter>) -> Self {
        Self::with_limited(objects, writer, Vec::new())
    }

    /// The plugin with a configuration's `limitedResources`: consumption they name is refused
    /// unless a quota covers it.
    pub fn with_limited(
        objects: Arc<dyn ObjectLookup>,
        writer: Arc<dyn ObjectWriter>,
        limited: Vec<LimitedResource>,
    ) -> Self {
        ResourceQuota {
            quotas: LiveLookup::new(objects, "", "resourcequotas"),
            limited,
            writer,
            turns: NamespaceTurns::default(),
            charged: Mutex::default(),
        }
    }

    /// The namespace's quotas by name, each the newer of the cache's and the one last written
    /// here; remembered quotas the cache has caught up with, or no longer lists, are forgotten.
    async fn quotas(&self, namespace: &str) -> Result<Vec<Value>, ApiError> {
        let listed = self.quotas.list(namespace).await?;
        let mut charged = self.charged.lock().expect("not poisoned");
        let mut current = Vec::with_capacity(listed.len());
        let mut listed_keys = Vec::with_capacity(listed.len());
        for quota in listed {
            let k = key(&quota);
            match charged.get(&k) {
                Some(mine) if revision(mine) > revision(&quota) => current.push(mine.clone()),
                Some(_) => {
                    charged.remove(&k);
                    current.push(quota);
                }
                None => current.push(quota),
            }
            listed_keys.push(k);
        }
        let prefix = format!("{namespace}/");
        charged.retain(|k, _| !k.starts_with(&prefix) || listed_keys.contains(k));
        current.sort_by(|a, b| a.name().cmp(b.name()));
        Ok(current)
    }

    /// Checks `write` against `quotas` and charges the covering ones, checking again against
    /// fresh quotas those whose charge conflicted.
    async fn evaluate(
        &self,
        request: &Admit,
        write: &Write<'_>,
        mut quotas: Vec<Value>,
        review: &Review,
    ) -> Result<(), ApiError> {
        for attempt in 0..=RETRIES {
            let charges =
                check::check(&quotas, write).map_err(|Refused(why)| forbidden(request, write.object, &why))?;
            if request.dry_run || charges.is_empty() {
                return Ok(());
            }
            let mut failed = Vec::new();
            let mut last_error = None;
            for (i, used) in charges {
                let mut quota = quotas[i].clone();
                quota["status"]["used"] = resources::to_json(&used);
                match self.writer.update_status("", "resourcequotas", quota, review.deadline).await {
                    Ok(stored) => {
                        self.charged.lock().expect("not poisoned").insert(key(&stored), stored);
                    }
                    Err(e) => {
                        failed.push(quotas[i].name().to_string());
                        last_error = Some(e);
                    }
                }
            }
            let Some(error) = last_error else { return Ok(()) };
            if attempt == RETRIES {
                return Err(error);
            }
            // Only the quotas that failed are checked again: the others are charged.
            let fresh = self.quotas.list_latest(&request.target.namespace).await.map_err(|_| error.clone())?;
            quotas = fresh.into_iter().filter(|q| failed.iter().any(|f| f == q.name())).collect();
            quotas.sort_by(|a, b| a.name().cmp(b.name()));
        }
        Ok(())
    }
}

#[async_trait(?Send)]
impl AdmissionPlugin for ResourceQuota {
    fn name(&self) -> &'static str {
        "ResourceQuota"
    }

    fn validates(&self) -> bool {
        true
    }

    async fn validate(&self, request: &Admit, object: &Value, review: &mut Review) -> Result<(), ApiError> {
        let t = &request.target;
        let creates_namespace =
            request.operation == Operation::Create && t.group.is_empty() && t.resource == "namespaces";
        if t.subresource.is_some() || t.namespace.is_empty() || creates_namespace || ignored(&t.group, &t.resource) {
            return Ok(());
        }
        let evaluator = Evaluator::for_resource(&t.group, &t.resource);
        if !evaluator.handles(request.operation, object, request.old_object.as_deref()) {
            return Ok(());
        }
        let limited: Vec<String> = self
            .limited
            .iter()
            .filter(|l| l.api_group == t.group && l.resource == t.resource)
            .flat_map(|l| l.match_contains.iter().cloned())
            .collect();
        let write = Write {
            evaluator: &evaluator,
            operation: request.operation,
            object,
            old: request.old_object.as_deref(),
            now: chrono::Utc::now(),
            limited: &limited,
        };
        // Most namespaces have no quota: their writes need no turn.
        if self.quotas(&t.namespace).await?.is_empty() {
            if limited.is_empty() {
                return Ok(());
            }
            // No quota at all covers what the configuration limits.
            return check::check(&[], &write).map(|_| ()).map_err(|Refused(why)| forbidden(request, object, &why));
        }
        let wait = review.deadline.remaining().map_or(TURN_TIMEOUT, |left| left.min(TURN_TIMEOUT));
        let _turn = self.turns.take(&t.namespace, wait).await?;
        let quotas = self.quotas(&t.namespace).await?;
        self.evaluate(request, &write, quotas, review).await
    }
}

#[cfg(test)]
mod config_tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn limited_resources_are_read_from_kubes_configuration() {
        let limited = limited_resources(&json!({"apiVersion": "apiserver.config.k8s.io/v1",
            "kind": "ResourceQuotaConfiguration",
            "limitedResources": [{"resource": "pods", "matchContains": ["cpu", "memory"]},
                {"apiGroup": "apps", "resource": "deployments"}]}))
        .unwrap();
        assert_eq!(
            limited[0],
            LimitedResource {
                api_group: String::new(),
                resource: "pods".into(),
                match_contains: vec!["cpu".into(), "memory".into()]
            }
        );
        assert_eq!((limited[1].api_group.as_str(), limited[1].match_contains.len()), ("apps", 0));
        let e = limited_resources(&json!({"apiVersion": "apiserver.config.k8s.io/v1",
            "kind": "ResourceQuotaConfiguration", "limitedResources": [{"matchContains": ["cpu"]}]}))
        .unwrap_err();
        assert_eq!(e, "limitedResources[0].resource: Required value");
        assert!(limited_resources(&json!({"kind": "PodSecurityConfiguration"})).is_err());
    }
}
