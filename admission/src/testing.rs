//! What plugin tests share: objects to look up, and requests to admit.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use apimachinery::error::ApiError;
use apimachinery::lookup::ObjectLookup;
use apimachinery::messages::{AdmissionPhase, Admit, Operation, Target};
use apimachinery::object::ObjectExt;
use apimachinery::request::UserInfo;
use async_trait::async_trait;
use serde_json::Value;

/// Objects by group, resource and namespace, answering gets and lists (field selectors are
/// not applied), with a change count for every store and a count of the lists asked.
#[derive(Default)]
pub struct Objects {
    objects: Mutex<Vec<(String, String, String, Value)>>,
    changes: AtomicU64,
    lists: AtomicUsize,
}

impl Objects {
    /// With `object` stored as `resource.group` in `namespace`.
    pub fn with(self, group: &str, resource: &str, namespace: &str, object: Value) -> Self {
        self.put(group, resource, namespace, object);
        self
    }

    /// Stores `object`, replacing one of the same name.
    pub fn put(&self, group: &str, resource: &str, namespace: &str, object: Value) {
        let mut all = self.objects.lock().unwrap();
        all.retain(|(g, r, n, o)| !(g == group && r == resource && n == namespace && o.name() == object.name()));
        all.push((group.into(), resource.into(), namespace.into(), object));
        self.changes.fetch_add(1, Ordering::Relaxed);
    }

    /// Lists asked so far.
    pub fn lists(&self) -> usize {
        self.lists.load(Ordering::Relaxed)
    }
}

#[async_trait]
impl ObjectLookup for Objects {
    async fn get(&self, group: &str, resource: &str, namespace: &str, name: &str) -> Result<Option<Value>, ApiError> {
        let all = self.objects.lock().unwrap();
        Ok(all
            .iter()
            .find(|(g, r, n, o)| g == group && r == resource && n == namespace && o.name() == name)
            .map(|(_, _, _, o)| o.clone()))
    }

    async fn list(&self, group: &str, resource: &str, namespace: &str, _: &str) -> Result<Vec<Value>, ApiError> {
        self.lists.fetch_add(1, Ordering::Relaxed);
        let all = self.objects.lock().unwrap();
        Ok(all
            .iter()
            .filter(|(g, r, n, _)| g == group && r == resource && (namespace.is_empty() || n == namespace))
            .map(|(_, _, _, o)| o.clone())
            .collect())
    }

    fn changes(&self, _: &str, _: &str) -> Option<u64> {
        Some(self.changes.load(Ordering::Relaxed))
    }
}

/// A request to write `object` as `resource.group` in namespace `ns` (cluster-scoped for
/// resources that are).
pub fn admit(operation: Operation, group: &str, resource: &str, object: Value) -> Admit {
    let cluster_scoped = [
        "priorityclasses",
        "storageclasses",
        "ingressclasses",
        "runtimeclasses",
        "nodes",
        "persistentvolumes",
        "certificatesigningrequests",
    ];
    let namespace = if cluster_scoped.contains(&resource) { "" } else { "ns" };
    Admit {
        phase: AdmissionPhase::Mutating,
        operation,
        target: Target {
            group: group.into(),
            version: "v1".into(),
            resource: resource.into(),
            namespace: namespace.into(),
            name: object.name().to_string(),
            ..Default::default()
        },
        user: UserInfo { name: "someone".into(), ..Default::default() },
        object,
        old_object: None,
        dry_run: false,
        options: Value::Null,
    }
}

/// Allows what it holds, written `<user> <verb> <group>/<resource>` (or `<user> <verb>
/// <path>` for a non-resource URL), and counts the checks it was asked.
#[derive(Default)]
pub struct Grants {
    /// What is allowed.
    pub allowed: Vec<String>,
    /// How many checks were asked.
    pub asked: AtomicUsize,
}

#[async_trait]
impl apimachinery::lookup::AccessCheck for Grants {
    async fn allowed(&self, user: &UserInfo, a: apimachinery::request::RequestInfo) -> Result<bool, ApiError> {
        self.asked.fetch_add(1, Ordering::Relaxed);
        let what = if a.is_resource_request { format!("{}/{}", a.api_group, a.resource) } else { a.path };
        Ok(self.allowed.contains(&format!("{} {} {what}", user.name, a.verb)))
    }
}
