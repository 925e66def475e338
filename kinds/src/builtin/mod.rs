//! The built-in kinds this server serves, one file each: the kind's definition (names, scope,
//! subresources, key layout, schema type) and its strategy (what it does differently from
//! kube's generic behaviour, and where kube's code for it lives).
//!
//! Adding a built-in kind is one new file here, defining `pub(super) fn definition()` (or a
//! function per served resource, for kinds served twice), plus one line in [`definitions`].
//! `lease.rs` is the example of a kind whose whole behaviour lives in its file; the others call
//! the shared defaulting, validation and printing code kube shares between kinds.

mod apiservice;
mod binding;
mod certificatesigningrequest;
mod componentstatus;
mod configmap;
mod controllerrevision;
mod crd_v1beta1;
mod cronjob;
mod csidriver;
mod csinode;
mod csistoragecapacity;
mod customresourcedefinition;
mod daemonset;
mod deployment;
mod endpoints;
mod endpointslice;
mod event;
mod eviction;
mod flowcontrol;
mod horizontalpodautoscaler;
mod ingress;
mod ingressclass;
mod job;
mod lease;
mod limitrange;
mod namespace;
mod networkpolicy;
mod node;
mod persistentvolume;
mod persistentvolumeclaim;
mod pod;
mod poddisruptionbudget;
mod podtemplate;
mod priorityclass;
mod replicaset;
mod replicationcontroller;
mod resourcequota;
mod reviews;
mod role;
mod rolebinding;
mod runtimeclass;
mod secret;
mod service;
mod serviceaccount;
mod statefulset;
mod storageclass;
mod validatingadmissionpolicy;
mod validatingadmissionpolicybinding;
mod volumeattachment;
mod webhookconfiguration;

#[cfg(test)]
mod field_selector_tests;
#[cfg(test)]
mod tests;

use std::sync::{Arc, LazyLock};

use apimachinery::catalogue::ResourceDef;

/// Every built-in resource, in discovery order.
fn definitions() -> Vec<ResourceDef> {
    // Groups in kube 1.30's discovery order (the aggregator's group priorities); in a group,
    // the preferred version first.
    let mut defs = vec![
        binding::definition(),
        componentstatus::definition(),
        namespace::definition(),
        configmap::definition(),
        secret::definition(),
        serviceaccount::definition(),
        pod::definition(),
        podtemplate::definition(),
        replicationcontroller::definition(),
        service::definition(),
        endpoints::definition(),
        node::definition(),
        persistentvolume::definition(),
        persistentvolumeclaim::definition(),
        resourcequota::definition(),
        limitrange::definition(),
        event::core(),
        // kube lists its aggregator's own group first of /apis.
        apiservice::definition(),
        deployment::definition(),
        replicaset::definition(),
        statefulset::definition(),
        daemonset::definition(),
        controllerrevision::definition(),
        event::events_v1(),
    ];
    defs.extend(reviews::authentication());
    defs.extend(reviews::authorization());
    defs.extend([
        horizontalpodautoscaler::v2(),
        horizontalpodautoscaler::v1(),
        job::definition(),
        cronjob::definition(),
        certificatesigningrequest::definition(),
        ingress::definition(),
        ingressclass::definition(),
        networkpolicy::definition(),
        poddisruptionbudget::definition(),
        role::roles(),
        rolebinding::role_bindings(),
        role::cluster_roles(),
        rolebinding::cluster_role_bindings(),
        storageclass::definition(),
        volumeattachment::definition(),
        csidriver::definition(),
        csinode::definition(),
        csistoragecapacity::definition(),
        webhookconfiguration::mutating(),
        validatingadmissionpolicy::definition(),
        validatingadmissionpolicybinding::definition(),
        webhookconfiguration::validating(),
        customresourcedefinition::definition(),
        priorityclass::definition(),
        lease::definition(),
        runtimeclass::definition(),
        endpointslice::definition(),
        flowcontrol::flow_schemas(),
        flowcontrol::priority_level_configurations(),
    ]);
    defs
}

/// Built once: the definitions are immutable, and the schema store and the default catalogue
/// both start from them.
static BUILTIN: LazyLock<Vec<Arc<ResourceDef>>> = LazyLock::new(|| definitions().into_iter().map(Arc::new).collect());

/// The built-in resources, in discovery order.
pub fn resources() -> &'static [Arc<ResourceDef>] {
    &BUILTIN
}

/// The built-in kinds' actions: a pod's `binding` and `eviction`, the top-level `bindings`,
/// the reviews, and the probes of `componentstatuses`.
pub fn actions() -> apimachinery::action::Actions {
    use apimachinery::catalogue::Subresource;
    let mut actions = apimachinery::action::Actions::default();
    actions.insert("", "pods", Some(Subresource::Binding), Arc::new(binding::Bind));
    actions.insert("", "pods", Some(Subresource::Eviction), Arc::new(eviction::Evict));
    actions.insert("", "bindings", None, Arc::new(binding::BindByName));
    actions.insert("", "componentstatuses", None, Arc::new(componentstatus::ComponentStatuses));
    reviews::register(&mut actions);
    actions
}

/// A built-in resource by group, version and plural name (tests, and what the schema store is
/// built from; a running server looks resources up in its
/// [`Catalogue`](apimachinery::catalogue::Catalogue)).
pub fn find(group: &str, version: &str, resource: &str) -> Option<&'static Arc<ResourceDef>> {
    BUILTIN.iter().find(|d| d.group == group && d.version == version && d.resource == resource)
}
