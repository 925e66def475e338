//! `policy.go`: the user-facing, component and certificate-approval ClusterRoles, and the
//! bindings that give components and the built-in groups their roles.

use serde_json::Value;

use super::*;

/// Rules of the namespaced user roles; `admin`, `edit` and `view` gather them by label.
fn user_roles() -> Vec<Value> {
    let to_admin = vec![
        rule(&["create"], AUTHZ, &["localsubjectaccessreviews"]),
        rule(READ_WRITE, RBAC, &["rolebindings", "roles"]),
    ];
    let to_edit = vec![
        rule(READ, CORE, &["pods/attach", "pods/exec", "pods/portforward", "pods/proxy", "secrets", "services/proxy"]),
        rule(&["impersonate"], CORE, &["serviceaccounts"]),
        rule(WRITE, CORE, &["pods", "pods/attach", "pods/exec", "pods/portforward", "pods/proxy"]),
        rule(&["create"], CORE, &["pods/eviction"]),
        rule(
            WRITE,
            CORE,
            &[
                "configmaps",
                "events",
                "persistentvolumeclaims",
                "replicationcontrollers",
                "replicationcontrollers/scale",
                "secrets",
                "serviceaccounts",
                "services",
                "services/proxy",
            ],
        ),
        rule(&["create"], CORE, &["serviceaccounts/token"]),
        rule(
            WRITE,
            APPS,
            &[
                "daemonsets",
                "deployments",
                "deployments/rollback",
                "deployments/scale",
                "replicasets",
                "replicasets/scale",
                "statefulsets",
                "statefulsets/scale",
            ],
        ),
        rule(WRITE, AUTOSCALING, &["horizontalpodautoscalers"]),
        rule(WRITE, BATCH, &["cronjobs", "jobs"]),
        rule(
            WRITE,
            EXTENSIONS,
            &[
                "daemonsets",
                "deployments",
                "deployments/rollback",
                "deployments/scale",
                "ingresses",
                "networkpolicies",
                "replicasets",
                "replicasets/scale",
                "replicationcontrollers/scale",
            ],
        ),
        rule(WRITE, POLICY, &["poddisruptionbudgets"]),
        rule(WRITE, NETWORKING, &["ingresses", "networkpolicies"]),
        rule(READ_WRITE, COORDINATION, &["leases"]),
    ];
    let to_view = vec![
        rule(
            READ,
            CORE,
            &[
                "configmaps",
                "endpoints",
                "persistentvolumeclaims",
                "persistentvolumeclaims/status",
                "pods",
                "replicationcontrollers",
                "replicationcontrollers/scale",
                "serviceaccounts",
                "services",
                "services/status",
            ],
        ),
        rule(
            READ,
            CORE,
            &[
                "bindings",
                "events",
                "limitranges",
                "namespaces/status",
                "pods/log",
                "pods/status",
                "replicationcontrollers/status",
                "resourcequotas",
                "resourcequotas/status",
            ],
        ),
        rule(READ, CORE, &["namespaces"]),
        rule(READ, DISCOVERY, &["endpointslices"]),
        rule(
            READ,
            APPS,
            &[
                "controllerrevisions",
                "daemonsets",
                "daemonsets/status",
                "deployments",
                "deployments/scale",
                "deployments/status",
                "replicasets",
                "replicasets/scale",
                "replicasets/status",
                "statefulsets",
                "statefulsets/scale",
                "statefulsets/status",
            ],
        ),
        rule(READ, AUTOSCALING, &["horizontalpodautoscalers", "horizontalpodautoscalers/status"]),
        rule(READ, BATCH, &["cronjobs", "cronjobs/status", "jobs", "jobs/status"]),
        rule(
            READ,
            EXTENSIONS,
            &[
                "daemonsets",
                "daemonsets/status",
                "deployments",
                "deployments/scale",
                "deployments/status",
                "ingresses",
                "ingresses/status",
                "networkpolicies",
                "replicasets",
                "replicasets/scale",
                "replicasets/status",
                "replicationcontrollers/scale",
            ],
        ),
        rule(READ, POLICY, &["poddisruptionbudgets", "poddisruptionbudgets/status"]),
        rule(READ, NETWORKING, &["ingresses", "ingresses/status", "networkpolicies"]),
    ];
    vec![
        aggregating("admin", "admin"),
        aggregated_into(aggregating("edit", "edit"), "admin"),
        aggregated_into(aggregating("view", "view"), "edit"),
        aggregated_into(cluster_role("system:aggregate-to-admin", to_admin), "admin"),
        aggregated_into(cluster_role("system:aggregate-to-edit", to_edit), "edit"),
        aggregated_into(cluster_role("system:aggregate-to-view", to_view), "view"),
    ]
}

/// What the kubelet may do; the Node authorizer and NodeRestriction narrow it per node.
fn node_rules() -> Vec<Value> {
    vec![
        rule(&["create"], AUTHN, &["tokenreviews"]),
        rule(&["create"], AUTHZ, &["localsubjectaccessreviews", "subjectaccessreviews"]),
        rule(READ, CORE, &["services"]),
        rule(&["create", "get", "list", "watch"], CORE, &["nodes"]),
        rule(&["patch", "update"], CORE, &["nodes/status"]),
        rule(&["patch", "update"], CORE, &["nodes"]),
        rule(&["create", "patch", "update"], CORE, &["events"]),
        rule(READ, CORE, &["pods"]),
        rule(&["create", "delete"], CORE, &["pods"]),
        rule(&["patch", "update"], CORE, &["pods/status"]),
        rule(&["create"], CORE, &["pods/eviction"]),
        rule(READ, CORE, &["configmaps", "secrets"]),
        rule(&["get"], CORE, &["persistentvolumeclaims", "persistentvolumes"]),
        rule(&["get"], CORE, &["endpoints"]),
        rule(&["create", "get", "list", "watch"], CERTIFICATES, &["certificatesigningrequests"]),
        rule(&["create", "delete", "get", "patch", "update"], COORDINATION, &["leases"]),
        rule(&["get"], STORAGE, &["volumeattachments"]),
        rule(&["create"], CORE, &["serviceaccounts/token"]),
        rule(&["get", "patch", "update"], CORE, &["persistentvolumeclaims/status"]),
        rule(READ, STORAGE, &["csidrivers"]),
        rule(&["create", "delete", "get", "patch", "update"], STORAGE, &["csinodes"]),
        rule(READ, &["node.k8s.io"], &["runtimeclasses"]),
    ]
}

/// Leader election on the lease named after the component.
fn leader_lease(component: &str) -> [Value; 2] {
    [rule(&["create"], COORDINATION, &["leases"]), named(&["get", "update"], COORDINATION, &["leases"], &[component])]
}

fn component_roles() -> Vec<(&'static str, Vec<Value>)> {
    let delegation =
        || [rule(&["create"], AUTHN, &["tokenreviews"]), rule(&["create"], AUTHZ, &["subjectaccessreviews"])];
    let mut controller_manager = vec![events()];
    controller_manager.extend(leader_lease("kube-controller-manager"));
    controller_manager.extend([
        rule(&["create"], CORE, &["secrets", "serviceaccounts"]),
        rule(&["delete"], CORE, &["secrets"]),
        rule(&["get"], CORE, &["configmaps", "namespaces", "secrets", "serviceaccounts"]),
        rule(&["update"], CORE, &["secrets", "serviceaccounts"]),
    ]);
    controller_manager.extend(delegation());
    controller_manager
        .extend([rule(&["list", "watch"], ALL, ALL), rule(&["create"], CORE, &["serviceaccounts/token"])]);

    let mut scheduler = vec![events()];
    scheduler.extend(leader_lease("kube-scheduler"));
    scheduler.extend([
        rule(READ, CORE, &["nodes"]),
        rule(&["delete", "get", "list", "watch"], CORE, &["pods"]),
        rule(&["create"], CORE, &["bindings", "pods/binding"]),
        rule(&["patch", "update"], CORE, &["pods/status"]),
        rule(READ, CORE, &["replicationcontrollers", "services"]),
        rule(READ, APPS_EXT, &["replicasets"]),
        rule(READ, APPS, &["statefulsets"]),
        rule(READ, POLICY, &["poddisruptionbudgets"]),
        rule(READ, CORE, &["persistentvolumeclaims", "persistentvolumes"]),
    ]);
    scheduler.extend(delegation());
    scheduler.extend([
        rule(READ, STORAGE, &["csinodes"]),
        rule(READ, CORE, &["namespaces"]),
        rule(READ, STORAGE, &["csidrivers"]),
        rule(READ, STORAGE, &["csistoragecapacities"]),
    ]);

    vec![
        ("system:auth-delegator", delegation().into()),
        (
            "system:heapster",
            vec![
                rule(READ, CORE, &["events", "namespaces", "nodes", "pods"]),
                rule(READ, EXTENSIONS, &["deployments"]),
            ],
        ),
        ("system:kube-aggregator", vec![rule(READ, CORE, &["endpoints", "services"])]),
        ("system:kube-controller-manager", controller_manager),
        ("system:kube-dns", vec![rule(&["list", "watch"], CORE, &["endpoints", "services"])]),
        ("system:kube-scheduler", scheduler),
        (
            "system:kubelet-api-admin",
            vec![
                rule(READ, CORE, &["nodes"]),
                rule(&["proxy"], CORE, &["nodes"]),
                rule(&["*"], CORE, &["nodes/log", "nodes/metrics", "nodes/proxy", "nodes/stats"]),
            ],
        ),
        ("system:node", node_rules()),
        (
            "system:node-bootstrapper",
            vec![rule(&["create", "get", "list", "watch"], CERTIFICATES, &["certificatesigningrequests"])],
        ),
        (
            "system:node-problem-detector",
            vec![rule(&["get"], CORE, &["nodes"]), rule(&["patch"], CORE, &["nodes/status"]), events()],
        ),
        (
            "system:node-proxier",
            vec![
                rule(&["list", "watch"], CORE, &["endpoints", "services"]),
                rule(READ, CORE, &["nodes"]),
                events(),
                rule(&["list", "watch"], DISCOVERY, &["endpointslices"]),
            ],
        ),
        (
            "system:persistent-volume-provisioner",
            vec![
                rule(&["create", "delete", "get", "list", "watch"], CORE, &["persistentvolumes"]),
                rule(&["get", "list", "update", "watch"], CORE, &["persistentvolumeclaims"]),
                rule(READ, STORAGE, &["storageclasses"]),
                rule(&["watch"], CORE, &["events"]),
                events(),
            ],
        ),
        (
            "system:volume-scheduler",
            vec![
                rule(&["get", "list", "patch", "update", "watch"], CORE, &["persistentvolumes"]),
                rule(READ, STORAGE, &["storageclasses"]),
                rule(&["get", "list", "patch", "update", "watch"], CORE, &["persistentvolumeclaims"]),
            ],
        ),
    ]
}

/// The approve permission for one built-in signer.
fn approver(signer: &str) -> Vec<Value> {
    vec![named(&["approve"], CERTIFICATES, &["signers"], &[&format!("kubernetes.io/{signer}")])]
}

fn public_roles() -> Vec<(&'static str, Vec<Value>)> {
    let health = ["/healthz", "/livez", "/readyz", "/version", "/version/"];
    let mut discovery = vec!["/api", "/api/*", "/apis", "/apis/*", "/openapi", "/openapi/*"];
    discovery.extend(health);
    let csr =
        |verb: &str, sub: &str| vec![rule(&[verb], CERTIFICATES, &[&format!("certificatesigningrequests/{sub}")])];
    vec![
        ("cluster-admin", vec![rule(&["*"], ALL, ALL), urls(&["*"], &["*"])]),
        ("system:discovery", vec![urls(&["get"], &discovery)]),
        ("system:public-info-viewer", vec![urls(&["get"], &health)]),
        (
            "system:basic-user",
            vec![
                rule(&["create"], AUTHZ, &["selfsubjectaccessreviews", "selfsubjectrulesreviews"]),
                rule(&["create"], AUTHN, &["selfsubjectreviews"]),
            ],
        ),
        (
            "system:monitoring",
            vec![urls(
                &["get"],
                &["/healthz", "/healthz/*", "/livez", "/livez/*", "/metrics", "/metrics/slis", "/readyz", "/readyz/*"],
            )],
        ),
        (
            "system:service-account-issuer-discovery",
            vec![urls(&["get"], &["/.well-known/openid-configuration", "/openid/v1/jwks"])],
        ),
        ("system:certificates.k8s.io:certificatesigningrequests:nodeclient", csr("create", "nodeclient")),
        ("system:certificates.k8s.io:certificatesigningrequests:selfnodeclient", csr("create", "selfnodeclient")),
        ("system:certificates.k8s.io:kube-apiserver-client-approver", approver("kube-apiserver-client")),
        (
            "system:certificates.k8s.io:kube-apiserver-client-kubelet-approver",
            approver("kube-apiserver-client-kubelet"),
        ),
        ("system:certificates.k8s.io:kubelet-serving-approver", approver("kubelet-serving")),
        ("system:certificates.k8s.io:legacy-unknown-approver", approver("legacy-unknown")),
    ]
}

/// `policy.go`'s `ClusterRoles()`.
pub(super) fn roles() -> Vec<Value> {
    let mut out = user_roles();
    out.extend(public_roles().into_iter().chain(component_roles()).map(|(name, rules)| cluster_role(name, rules)));
    out
}

/// `policy.go`'s `ClusterRoleBindings()`.
pub(super) fn bindings() -> Vec<Value> {
    let scheduler = || vec![user("system:kube-scheduler")];
    vec![
        cluster_binding("cluster-admin", vec![group("system:masters")]),
        cluster_binding("system:monitoring", vec![group("system:monitoring")]),
        cluster_binding("system:discovery", vec![group("system:authenticated")]),
        cluster_binding("system:basic-user", vec![group("system:authenticated")]),
        cluster_binding(
            "system:public-info-viewer",
            vec![group("system:authenticated"), group("system:unauthenticated")],
        ),
        cluster_binding("system:node-proxier", vec![user("system:kube-proxy")]),
        cluster_binding("system:kube-controller-manager", vec![user("system:kube-controller-manager")]),
        cluster_binding("system:kube-dns", vec![service_account(KUBE_SYSTEM, "kube-dns")]),
        cluster_binding("system:kube-scheduler", scheduler()),
        cluster_binding("system:volume-scheduler", scheduler()),
        // Kept without subjects since 1.7: the Node authorizer grants nodes this role.
        cluster_binding("system:node", Vec::new()),
        cluster_binding("system:service-account-issuer-discovery", vec![group("system:serviceaccounts")]),
    ]
}
