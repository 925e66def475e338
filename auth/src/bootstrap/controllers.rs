//! `controller_policy.go`: what each kube-controller-manager loop may do when it runs under
//! its own ServiceAccount (`--use-service-account-credentials`). Roles of loops behind alpha
//! gates in 1.30 (DRA's resource-claim, service-cidrs, volumeattributesclass-protection,
//! storage-version-garbage-collector, storage-version-migrator) are left out.

use serde_json::Value;

use super::*;

const CSR: &[&str] = &["certificatesigningrequests"];

/// Each controller's ServiceAccount name (the role is `system:controller:<name>`) and rules.
pub(super) fn roles() -> Vec<(&'static str, Vec<Value>)> {
    let pvs = &["persistentvolumes"][..];
    let pvcs = &["persistentvolumeclaims"][..];
    vec![
        (
            "attachdetach-controller",
            vec![
                rule(&["list", "watch"], CORE, &["persistentvolumeclaims", "persistentvolumes"]),
                rule(READ, CORE, &["nodes"]),
                rule(&["patch", "update"], CORE, &["nodes/status"]),
                rule(&["list", "watch"], CORE, &["pods"]),
                events(),
                rule(&["create", "delete", "get", "list", "watch"], STORAGE, &["volumeattachments"]),
                rule(READ, STORAGE, &["csidrivers"]),
                rule(READ, STORAGE, &["csinodes"]),
            ],
        ),
        (
            "clusterrole-aggregation-controller",
            vec![rule(&["escalate", "get", "list", "patch", "update", "watch"], RBAC, &["clusterroles"])],
        ),
        (
            "cronjob-controller",
            vec![
                rule(&["get", "list", "update", "watch"], BATCH, &["cronjobs"]),
                rule(&["create", "delete", "get", "list", "patch", "update", "watch"], BATCH, &["jobs"]),
                rule(&["update"], BATCH, &["cronjobs/status"]),
                rule(&["update"], BATCH, &["cronjobs/finalizers"]),
                rule(&["delete", "list"], CORE, &["pods"]),
                events(),
            ],
        ),
        (
            "daemon-set-controller",
            vec![
                rule(READ, APPS_EXT, &["daemonsets"]),
                rule(&["update"], APPS_EXT, &["daemonsets/status"]),
                rule(&["update"], APPS_EXT, &["daemonsets/finalizers"]),
                rule(&["list", "watch"], CORE, &["nodes"]),
                rule(&["create", "delete", "list", "patch", "watch"], CORE, &["pods"]),
                rule(&["create"], CORE, &["pods/binding"]),
                rule(&["create", "delete", "get", "list", "patch", "update", "watch"], APPS, &["controllerrevisions"]),
                events(),
            ],
        ),
        (
            "deployment-controller",
            vec![
                rule(&["get", "list", "update", "watch"], APPS_EXT, &["deployments"]),
                rule(&["update"], APPS_EXT, &["deployments/status"]),
                rule(&["update"], APPS_EXT, &["deployments/finalizers"]),
                rule(&["create", "delete", "get", "list", "patch", "update", "watch"], APPS_EXT, &["replicasets"]),
                rule(&["get", "list", "update", "watch"], CORE, &["pods"]),
                events(),
            ],
        ),
        (
            "disruption-controller",
            vec![
                rule(READ, APPS_EXT, &["deployments"]),
                rule(READ, APPS_EXT, &["replicasets"]),
                rule(READ, CORE, &["replicationcontrollers"]),
                rule(READ, POLICY, &["poddisruptionbudgets"]),
                rule(READ, APPS, &["statefulsets"]),
                rule(&["update"], POLICY, &["poddisruptionbudgets/status"]),
                rule(&["patch", "update"], CORE, &["pods/status"]),
                rule(&["get"], ALL, &["*/scale"]),
                events(),
            ],
        ),
        (
            "endpoint-controller",
            vec![
                rule(READ, CORE, &["pods", "services"]),
                rule(&["create", "delete", "get", "list", "update"], CORE, &["endpoints"]),
                rule(&["create"], CORE, &["endpoints/restricted"]),
                events(),
            ],
        ),
        (
            "endpointslice-controller",
            vec![
                rule(READ, CORE, &["nodes", "pods", "services"]),
                rule(&["update"], CORE, &["services/finalizers"]),
                rule(&["create", "delete", "get", "list", "update"], DISCOVERY, &["endpointslices"]),
                events(),
            ],
        ),
        (
            "endpointslicemirroring-controller",
            vec![
                rule(READ, CORE, &["endpoints", "services"]),
                rule(&["update"], CORE, &["services/finalizers"]),
                rule(&["update"], CORE, &["endpoints/finalizers"]),
                rule(&["create", "delete", "get", "list", "update"], DISCOVERY, &["endpointslices"]),
                events(),
            ],
        ),
        (
            "expand-controller",
            vec![
                rule(&["get", "list", "patch", "update", "watch"], CORE, pvs),
                rule(&["patch", "update"], CORE, &["persistentvolumeclaims/status"]),
                rule(READ, CORE, pvcs),
                // The in-tree glusterfs plugin's needs, still granted in 1.30.
                rule(READ, STORAGE, &["storageclasses"]),
                rule(&["get"], CORE, &["endpoints", "services"]),
                rule(&["get"], CORE, &["secrets"]),
                events(),
            ],
        ),
        (
            "ephemeral-volume-controller",
            vec![
                rule(READ, CORE, &["pods"]),
                rule(&["update"], CORE, &["pods/finalizers"]),
                rule(&["create", "get", "list", "watch"], CORE, pvcs),
                events(),
            ],
        ),
        (
            "generic-garbage-collector",
            vec![rule(&["delete", "get", "list", "patch", "update", "watch"], ALL, ALL), events()],
        ),
        (
            "horizontal-pod-autoscaler",
            vec![
                rule(READ, AUTOSCALING, &["horizontalpodautoscalers"]),
                rule(&["update"], AUTOSCALING, &["horizontalpodautoscalers/status"]),
                rule(&["get", "update"], ALL, &["*/scale"]),
                rule(&["list"], CORE, &["pods"]),
                rule(&["list"], &["metrics.k8s.io"], &["pods"]),
                rule(&["get", "list"], &["custom.metrics.k8s.io"], ALL),
                rule(&["get", "list"], &["external.metrics.k8s.io"], ALL),
                events(),
            ],
        ),
        (
            "job-controller",
            vec![
                rule(&["get", "list", "patch", "update", "watch"], BATCH, &["jobs"]),
                rule(&["update"], BATCH, &["jobs/status"]),
                rule(&["update"], BATCH, &["jobs/finalizers"]),
                rule(&["create", "delete", "list", "patch", "watch"], CORE, &["pods"]),
                events(),
            ],
        ),
        (
            "namespace-controller",
            vec![
                rule(&["delete", "get", "list", "watch"], CORE, &["namespaces"]),
                rule(&["update"], CORE, &["namespaces/finalize", "namespaces/status"]),
                rule(&["delete", "deletecollection", "get", "list"], ALL, ALL),
            ],
        ),
        (
            "node-controller",
            vec![
                rule(&["delete", "get", "list", "patch", "update"], CORE, &["nodes"]),
                rule(&["patch", "update"], CORE, &["nodes/status"]),
                rule(&["patch", "update"], CORE, &["pods/status"]),
                // `get` for the disruption condition set before a taint eviction.
                rule(&["delete", "get", "list"], CORE, &["pods"]),
                events(),
            ],
        ),
        (
            "persistent-volume-binder",
            vec![
                rule(&["create", "delete", "get", "list", "update", "watch"], CORE, pvs),
                rule(&["update"], CORE, &["persistentvolumes/status"]),
                rule(&["get", "list", "update", "watch"], CORE, pvcs),
                rule(&["update"], CORE, &["persistentvolumeclaims/status"]),
                rule(&["create", "delete", "get", "list", "watch"], CORE, &["pods"]),
                // glusterfs and openstack plugin needs, still granted in 1.30.
                rule(READ, STORAGE, &["storageclasses"]),
                rule(&["create", "delete", "get", "update"], CORE, &["endpoints"]),
                rule(&["create", "delete", "get"], CORE, &["services"]),
                rule(&["get"], CORE, &["secrets"]),
                rule(&["get", "list"], CORE, &["nodes"]),
                // The recycler watches its pod's events.
                rule(&["watch"], CORE, &["events"]),
                events(),
            ],
        ),
        (
            "pod-garbage-collector",
            vec![
                rule(&["delete", "list", "watch"], CORE, &["pods"]),
                rule(&["get", "list"], CORE, &["nodes"]),
                rule(&["patch"], CORE, &["pods/status"]),
            ],
        ),
        (
            "replicaset-controller",
            vec![
                rule(&["get", "list", "update", "watch"], APPS_EXT, &["replicasets"]),
                rule(&["update"], APPS_EXT, &["replicasets/status"]),
                rule(&["update"], APPS_EXT, &["replicasets/finalizers"]),
                rule(&["create", "delete", "list", "patch", "watch"], CORE, &["pods"]),
                events(),
            ],
        ),
        (
            "replication-controller",
            vec![
                rule(&["get", "list", "update", "watch"], CORE, &["replicationcontrollers"]),
                rule(&["update"], CORE, &["replicationcontrollers/status"]),
                rule(&["update"], CORE, &["replicationcontrollers/finalizers"]),
                rule(&["create", "delete", "list", "patch", "watch"], CORE, &["pods"]),
                events(),
            ],
        ),
        (
            "resourcequota-controller",
            vec![rule(&["list", "watch"], ALL, ALL), rule(&["update"], CORE, &["resourcequotas/status"]), events()],
        ),
        (
            "route-controller",
            vec![rule(&["list", "watch"], CORE, &["nodes"]), rule(&["patch"], CORE, &["nodes/status"]), events()],
        ),
        ("service-account-controller", vec![rule(&["create"], CORE, &["serviceaccounts"]), events()]),
        (
            "service-controller",
            vec![
                rule(READ, CORE, &["services"]),
                rule(&["patch", "update"], CORE, &["services/status"]),
                rule(&["list", "watch"], CORE, &["nodes"]),
                events(),
            ],
        ),
        (
            "statefulset-controller",
            vec![
                rule(&["list", "watch"], CORE, &["pods"]),
                rule(READ, APPS, &["statefulsets"]),
                rule(&["update"], APPS, &["statefulsets/status"]),
                rule(&["update"], APPS, &["statefulsets/finalizers"]),
                rule(&["create", "delete", "get", "patch", "update"], CORE, &["pods"]),
                rule(&["create", "delete", "get", "list", "patch", "update", "watch"], APPS, &["controllerrevisions"]),
                rule(&["create", "get"], CORE, pvcs),
                events(),
                // StatefulSetAutoDeletePVC, beta and on in 1.30.
                rule(&["delete", "update"], CORE, pvcs),
            ],
        ),
        ("ttl-controller", vec![rule(&["list", "patch", "update", "watch"], CORE, &["nodes"]), events()]),
        (
            "certificate-controller",
            vec![
                rule(&["delete", "get", "list", "watch"], CERTIFICATES, CSR),
                rule(
                    &["update"],
                    CERTIFICATES,
                    &["certificatesigningrequests/approval", "certificatesigningrequests/status"],
                ),
                named(&["approve"], CERTIFICATES, &["signers"], &["kubernetes.io/kube-apiserver-client-kubelet"]),
                named(
                    &["sign"],
                    CERTIFICATES,
                    &["signers"],
                    &[
                        "kubernetes.io/kube-apiserver-client",
                        "kubernetes.io/kube-apiserver-client-kubelet",
                        "kubernetes.io/kubelet-serving",
                        "kubernetes.io/legacy-unknown",
                    ],
                ),
                rule(&["create"], AUTHZ, &["subjectaccessreviews"]),
                events(),
            ],
        ),
        (
            "pvc-protection-controller",
            vec![rule(&["get", "list", "update", "watch"], CORE, pvcs), rule(READ, CORE, &["pods"]), events()],
        ),
        ("pv-protection-controller", vec![rule(&["get", "list", "update", "watch"], CORE, pvs), events()]),
        ("ttl-after-finished-controller", vec![rule(&["delete", "get", "list", "watch"], BATCH, &["jobs"]), events()]),
        ("root-ca-cert-publisher", vec![rule(&["create", "update"], CORE, &["configmaps"]), events()]),
        (
            "validatingadmissionpolicy-status-controller",
            vec![
                rule(READ, &["admissionregistration.k8s.io"], &["validatingadmissionpolicies"]),
                rule(
                    &["get", "patch", "update"],
                    &["admissionregistration.k8s.io"],
                    &["validatingadmissionpolicies/status"],
                ),
                events(),
            ],
        ),
        (
            "legacy-service-account-token-cleaner",
            vec![
                named(&["get"], CORE, &["configmaps"], &["kube-apiserver-legacy-service-account-token-tracking"]),
                rule(&["delete", "patch"], CORE, &["secrets"]),
            ],
        ),
    ]
}
