//! `namespace_policy.go`: Roles in kube-system and kube-public, for reading the
//! authentication ConfigMap, bootstrap tokens and leader election on ConfigMaps.

use serde_json::Value;

use super::*;

const KUBE_PUBLIC: &str = "kube-public";

/// Leader election on the ConfigMap named after the component (the older lock kind).
fn leader_locking(component: &str) -> Value {
    role(
        KUBE_SYSTEM,
        &format!("system::leader-locking-{component}"),
        vec![rule(&["watch"], CORE, &["configmaps"]), named(&["get", "update"], CORE, &["configmaps"], &[component])],
    )
}

pub(super) fn roles() -> Vec<Value> {
    let signer = "system:controller:bootstrap-signer";
    vec![
        role(
            KUBE_SYSTEM,
            "extension-apiserver-authentication-reader",
            vec![named(READ, CORE, &["configmaps"], &["extension-apiserver-authentication"])],
        ),
        role(KUBE_SYSTEM, signer, vec![rule(READ, CORE, &["secrets"])]),
        // Deprecated since 1.10 but still created.
        role(
            KUBE_SYSTEM,
            "system:controller:cloud-provider",
            vec![rule(&["create", "get", "list", "watch"], CORE, &["configmaps"])],
        ),
        role(
            KUBE_SYSTEM,
            "system:controller:token-cleaner",
            vec![rule(&["delete", "get", "list", "watch"], CORE, &["secrets"]), events()],
        ),
        leader_locking("kube-controller-manager"),
        leader_locking("kube-scheduler"),
        role(
            KUBE_PUBLIC,
            signer,
            vec![
                rule(READ, CORE, &["configmaps"]),
                named(&["update"], CORE, &["configmaps"], &["cluster-info"]),
                events(),
            ],
        ),
    ]
}

pub(super) fn bindings() -> Vec<Value> {
    let sa = |name: &str| service_account(KUBE_SYSTEM, name);
    let controller = |ns: &str, name: &str| {
        let role = format!("{CONTROLLER_PREFIX}{name}");
        role_binding(ns, &role, &role, vec![sa(name)])
    };
    let (kcm, scheduler) = ("system:kube-controller-manager", "system:kube-scheduler");
    vec![
        role_binding(
            KUBE_SYSTEM,
            "system::extension-apiserver-authentication-reader",
            "extension-apiserver-authentication-reader",
            vec![user(kcm), user(scheduler)],
        ),
        role_binding(
            KUBE_SYSTEM,
            "system::leader-locking-kube-controller-manager",
            "system::leader-locking-kube-controller-manager",
            vec![user(kcm), sa("kube-controller-manager")],
        ),
        role_binding(
            KUBE_SYSTEM,
            "system::leader-locking-kube-scheduler",
            "system::leader-locking-kube-scheduler",
            vec![user(scheduler), sa("kube-scheduler")],
        ),
        controller(KUBE_SYSTEM, "bootstrap-signer"),
        controller(KUBE_SYSTEM, "cloud-provider"),
        controller(KUBE_SYSTEM, "token-cleaner"),
        controller(KUBE_PUBLIC, "bootstrap-signer"),
    ]
}
