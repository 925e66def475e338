//! The built-in kinds this server serves, one file each: the kind's definition (names, scope,
//! subresources, key layout, schema type) and its strategy (what it does differently from
//! kube's generic behaviour, and where kube's code for it lives).
//!
//! Adding a built-in kind is one new file here, defining `pub(super) fn definition()` (or a
//! function per served resource, for kinds served twice), plus one line in [`definitions`].
//! `lease.rs` is the example of a kind whose whole behaviour lives in its file; the others call
//! the shared defaulting, validation and printing code kube shares between kinds.

mod configmap;
mod cronjob;
mod daemonset;
mod deployment;
mod endpoints;
mod event;
mod job;
mod lease;
mod namespace;
mod node;
mod pod;
mod replicaset;
mod role;
mod rolebinding;
mod secret;
mod service;
mod serviceaccount;
mod statefulset;

#[cfg(test)]
mod tests;

use std::sync::{Arc, LazyLock};

use crate::kinds::{Catalogue, ResourceDef};

/// Every built-in resource, in discovery order.
fn definitions() -> Vec<ResourceDef> {
    vec![
        namespace::definition(),
        configmap::definition(),
        secret::definition(),
        serviceaccount::definition(),
        pod::definition(),
        service::definition(),
        endpoints::definition(),
        node::definition(),
        event::core(),
        deployment::definition(),
        replicaset::definition(),
        statefulset::definition(),
        daemonset::definition(),
        job::definition(),
        cronjob::definition(),
        lease::definition(),
        event::events_v1(),
        role::roles(),
        rolebinding::role_bindings(),
        role::cluster_roles(),
        rolebinding::cluster_role_bindings(),
    ]
}

/// Built once: the definitions are immutable, and the schema store and the default catalogue
/// both start from them.
static BUILTIN: LazyLock<Vec<Arc<ResourceDef>>> = LazyLock::new(|| definitions().into_iter().map(Arc::new).collect());

/// The built-in resources, in discovery order.
pub fn resources() -> &'static [Arc<ResourceDef>] {
    &BUILTIN
}

/// A built-in resource by group, version and plural name (tests, and what the schema store is
/// built from; a running server looks resources up in its [`Catalogue`]).
pub fn find(group: &str, version: &str, resource: &str) -> Option<&'static Arc<ResourceDef>> {
    BUILTIN.iter().find(|d| d.group == group && d.version == version && d.resource == resource)
}

/// A catalogue serving the built-in resources.
pub fn catalogue() -> Catalogue {
    Catalogue::new(BUILTIN.iter().cloned())
}
