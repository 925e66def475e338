//! What kube declares in Go struct tags and comment markers and we cannot get from
//! k8s-openapi: the strategic-merge metadata (`patchStrategy`, `patchMergeKey`) and the list and
//! map types (`+listType`, `+listMapKey`, `+mapType`, `+structType`) of the served kinds' types,
//! as kube-apiserver v1.30 publishes them in its OpenAPI.
//!
//! Values were read from kube's `types.go` files (k8s.io/api and k8s.io/apimachinery at
//! v0.30). A Go struct embedded inline (`EphemeralContainerCommon` in `EphemeralContainer`)
//! appears under the definition that embeds it. Every row must name a definition and property
//! that exist: `tests::every_table_row_lands` checks it.

/// One field's strategic-merge metadata, published as `x-kubernetes-patch-strategy` and
/// `x-kubernetes-patch-merge-key` on the property schema.
#[derive(Clone, Copy, Debug)]
pub struct PatchMeta {
    /// Definition name (`io.k8s.api.core.v1.PodSpec`).
    pub definition: &'static str,
    /// JSON property name.
    pub property: &'static str,
    /// `merge`, `retainKeys`, `merge,retainKeys` (`None`: the list or struct is replaced).
    pub strategy: Option<&'static str>,
    /// The field identifying an element of a merged list of objects.
    pub merge_key: Option<&'static str>,
}

/// One list's server-side-apply list type, published as `x-kubernetes-list-type` (and
/// `x-kubernetes-list-map-keys` for `map` lists).
#[derive(Clone, Copy, Debug)]
pub struct ListType {
    /// Definition name.
    pub definition: &'static str,
    /// JSON property name.
    pub property: &'static str,
    /// `atomic`, `set` or `map`.
    pub list_type: &'static str,
    /// The keys identifying an element of a `map` list.
    pub map_keys: &'static [&'static str],
}

const fn patch(
    definition: &'static str,
    property: &'static str,
    strategy: Option<&'static str>,
    merge_key: Option<&'static str>,
) -> PatchMeta {
    PatchMeta { definition, property, strategy, merge_key }
}

const fn list(
    definition: &'static str,
    property: &'static str,
    list_type: &'static str,
    map_keys: &'static [&'static str],
) -> ListType {
    ListType { definition, property, list_type, map_keys }
}

/// Strategic-merge metadata: (definition, property, strategy, merge key).
///
/// Lists absent here (tolerations, taints, readinessGates, resizePolicy...) have no strategy:
/// a strategic merge patch replaces them whole.
pub static PATCH_META: &[PatchMeta] = &[
    patch("io.k8s.api.core.v1.PersistentVolumeClaimStatus", "conditions", Some("merge"), Some("type")),
    patch("io.k8s.api.core.v1.Container", "ports", Some("merge"), Some("containerPort")),
    patch("io.k8s.api.core.v1.Container", "env", Some("merge"), Some("name")),
    patch("io.k8s.api.core.v1.Container", "volumeMounts", Some("merge"), Some("mountPath")),
    patch("io.k8s.api.core.v1.Container", "volumeDevices", Some("merge"), Some("devicePath")),
    patch("io.k8s.api.core.v1.ContainerStatus", "volumeMounts", Some("merge"), Some("mountPath")),
    patch("io.k8s.api.core.v1.PodSpec", "volumes", Some("merge,retainKeys"), Some("name")),
    patch("io.k8s.api.core.v1.PodSpec", "initContainers", Some("merge"), Some("name")),
    patch("io.k8s.api.core.v1.PodSpec", "containers", Some("merge"), Some("name")),
    patch("io.k8s.api.core.v1.PodSpec", "ephemeralContainers", Some("merge"), Some("name")),
    patch("io.k8s.api.core.v1.PodSpec", "imagePullSecrets", Some("merge"), Some("name")),
    patch("io.k8s.api.core.v1.PodSpec", "hostAliases", Some("merge"), Some("ip")),
    patch("io.k8s.api.core.v1.PodSpec", "topologySpreadConstraints", Some("merge"), Some("topologyKey")),
    patch("io.k8s.api.core.v1.PodSpec", "schedulingGates", Some("merge"), Some("name")),
    patch("io.k8s.api.core.v1.PodSpec", "resourceClaims", Some("merge,retainKeys"), Some("name")),
    patch("io.k8s.api.core.v1.EphemeralContainer", "ports", Some("merge"), Some("containerPort")),
    patch("io.k8s.api.core.v1.EphemeralContainer", "env", Some("merge"), Some("name")),
    patch("io.k8s.api.core.v1.EphemeralContainer", "volumeMounts", Some("merge"), Some("mountPath")),
    patch("io.k8s.api.core.v1.EphemeralContainer", "volumeDevices", Some("merge"), Some("devicePath")),
    patch("io.k8s.api.core.v1.PodStatus", "conditions", Some("merge"), Some("type")),
    patch("io.k8s.api.core.v1.PodStatus", "hostIPs", Some("merge"), Some("ip")),
    patch("io.k8s.api.core.v1.PodStatus", "podIPs", Some("merge"), Some("ip")),
    patch("io.k8s.api.core.v1.PodStatus", "resourceClaimStatuses", Some("merge,retainKeys"), Some("name")),
    patch("io.k8s.api.core.v1.ServiceStatus", "conditions", Some("merge"), Some("type")),
    patch("io.k8s.api.core.v1.ServiceSpec", "ports", Some("merge"), Some("port")),
    patch("io.k8s.api.core.v1.ServiceAccount", "secrets", Some("merge"), Some("name")),
    patch("io.k8s.api.core.v1.NodeSpec", "podCIDRs", Some("merge"), None),
    patch("io.k8s.api.core.v1.NodeStatus", "conditions", Some("merge"), Some("type")),
    patch("io.k8s.api.core.v1.NodeStatus", "addresses", Some("merge"), Some("type")),
    patch("io.k8s.api.core.v1.NamespaceStatus", "conditions", Some("merge"), Some("type")),
    patch("io.k8s.api.apps.v1.StatefulSetStatus", "conditions", Some("merge"), Some("type")),
    patch("io.k8s.api.apps.v1.DeploymentSpec", "strategy", Some("retainKeys"), None),
    patch("io.k8s.api.apps.v1.DeploymentStatus", "conditions", Some("merge"), Some("type")),
    patch("io.k8s.api.apps.v1.DaemonSetStatus", "conditions", Some("merge"), Some("type")),
    patch("io.k8s.api.apps.v1.ReplicaSetStatus", "conditions", Some("merge"), Some("type")),
    patch("io.k8s.api.batch.v1.JobStatus", "conditions", Some("merge"), Some("type")),
    patch("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta", "ownerReferences", Some("merge"), Some("uid")),
    patch("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta", "finalizers", Some("merge"), None),
];

/// List types: (definition, property, list type, map keys).
pub static LIST_TYPES: &[ListType] = &[
    list("io.k8s.api.core.v1.PersistentVolumeClaimSpec", "accessModes", "atomic", &[]),
    list("io.k8s.api.core.v1.PersistentVolumeClaimStatus", "accessModes", "atomic", &[]),
    list("io.k8s.api.core.v1.PersistentVolumeClaimStatus", "conditions", "map", &["type"]),
    list("io.k8s.api.core.v1.RBDVolumeSource", "monitors", "atomic", &[]),
    list("io.k8s.api.core.v1.CephFSVolumeSource", "monitors", "atomic", &[]),
    list("io.k8s.api.core.v1.SecretVolumeSource", "items", "atomic", &[]),
    list("io.k8s.api.core.v1.SecretProjection", "items", "atomic", &[]),
    list("io.k8s.api.core.v1.ISCSIVolumeSource", "portals", "atomic", &[]),
    list("io.k8s.api.core.v1.FCVolumeSource", "targetWWNs", "atomic", &[]),
    list("io.k8s.api.core.v1.FCVolumeSource", "wwids", "atomic", &[]),
    list("io.k8s.api.core.v1.ConfigMapVolumeSource", "items", "atomic", &[]),
    list("io.k8s.api.core.v1.ConfigMapProjection", "items", "atomic", &[]),
    list("io.k8s.api.core.v1.ProjectedVolumeSource", "sources", "atomic", &[]),
    list("io.k8s.api.core.v1.HTTPGetAction", "httpHeaders", "atomic", &[]),
    list("io.k8s.api.core.v1.ExecAction", "command", "atomic", &[]),
    list("io.k8s.api.core.v1.Capabilities", "add", "atomic", &[]),
    list("io.k8s.api.core.v1.Capabilities", "drop", "atomic", &[]),
    list("io.k8s.api.core.v1.ResourceRequirements", "claims", "map", &["name"]),
    list("io.k8s.api.core.v1.Container", "command", "atomic", &[]),
    list("io.k8s.api.core.v1.Container", "args", "atomic", &[]),
    list("io.k8s.api.core.v1.Container", "ports", "map", &["containerPort", "protocol"]),
    list("io.k8s.api.core.v1.Container", "envFrom", "atomic", &[]),
    list("io.k8s.api.core.v1.Container", "env", "map", &["name"]),
    list("io.k8s.api.core.v1.Container", "resizePolicy", "atomic", &[]),
    list("io.k8s.api.core.v1.Container", "volumeMounts", "map", &["mountPath"]),
    list("io.k8s.api.core.v1.Container", "volumeDevices", "map", &["devicePath"]),
    list("io.k8s.api.core.v1.ContainerStatus", "volumeMounts", "map", &["mountPath"]),
    list("io.k8s.api.core.v1.NodeSelector", "nodeSelectorTerms", "atomic", &[]),
    list("io.k8s.api.core.v1.NodeSelectorTerm", "matchExpressions", "atomic", &[]),
    list("io.k8s.api.core.v1.NodeSelectorTerm", "matchFields", "atomic", &[]),
    list("io.k8s.api.core.v1.NodeSelectorRequirement", "values", "atomic", &[]),
    list("io.k8s.api.core.v1.PodAffinity", "requiredDuringSchedulingIgnoredDuringExecution", "atomic", &[]),
    list("io.k8s.api.core.v1.PodAffinity", "preferredDuringSchedulingIgnoredDuringExecution", "atomic", &[]),
    list("io.k8s.api.core.v1.PodAntiAffinity", "requiredDuringSchedulingIgnoredDuringExecution", "atomic", &[]),
    list("io.k8s.api.core.v1.PodAntiAffinity", "preferredDuringSchedulingIgnoredDuringExecution", "atomic", &[]),
    list("io.k8s.api.core.v1.PodAffinityTerm", "namespaces", "atomic", &[]),
    list("io.k8s.api.core.v1.PodAffinityTerm", "matchLabelKeys", "atomic", &[]),
    list("io.k8s.api.core.v1.PodAffinityTerm", "mismatchLabelKeys", "atomic", &[]),
    list("io.k8s.api.core.v1.NodeAffinity", "preferredDuringSchedulingIgnoredDuringExecution", "atomic", &[]),
    list("io.k8s.api.core.v1.PodSpec", "volumes", "map", &["name"]),
    list("io.k8s.api.core.v1.PodSpec", "initContainers", "map", &["name"]),
    list("io.k8s.api.core.v1.PodSpec", "containers", "map", &["name"]),
    list("io.k8s.api.core.v1.PodSpec", "ephemeralContainers", "map", &["name"]),
    list("io.k8s.api.core.v1.PodSpec", "imagePullSecrets", "map", &["name"]),
    list("io.k8s.api.core.v1.PodSpec", "tolerations", "atomic", &[]),
    list("io.k8s.api.core.v1.PodSpec", "hostAliases", "map", &["ip"]),
    list("io.k8s.api.core.v1.PodSpec", "readinessGates", "atomic", &[]),
    list("io.k8s.api.core.v1.PodSpec", "topologySpreadConstraints", "map", &["topologyKey", "whenUnsatisfiable"]),
    list("io.k8s.api.core.v1.PodSpec", "schedulingGates", "map", &["name"]),
    list("io.k8s.api.core.v1.PodSpec", "resourceClaims", "map", &["name"]),
    list("io.k8s.api.core.v1.TopologySpreadConstraint", "matchLabelKeys", "atomic", &[]),
    list("io.k8s.api.core.v1.HostAlias", "hostnames", "atomic", &[]),
    list("io.k8s.api.core.v1.PodSecurityContext", "supplementalGroups", "atomic", &[]),
    list("io.k8s.api.core.v1.PodSecurityContext", "sysctls", "atomic", &[]),
    list("io.k8s.api.core.v1.PodDNSConfig", "nameservers", "atomic", &[]),
    list("io.k8s.api.core.v1.PodDNSConfig", "searches", "atomic", &[]),
    list("io.k8s.api.core.v1.PodDNSConfig", "options", "atomic", &[]),
    list("io.k8s.api.core.v1.EphemeralContainer", "command", "atomic", &[]),
    list("io.k8s.api.core.v1.EphemeralContainer", "args", "atomic", &[]),
    list("io.k8s.api.core.v1.EphemeralContainer", "ports", "map", &["containerPort", "protocol"]),
    list("io.k8s.api.core.v1.EphemeralContainer", "envFrom", "atomic", &[]),
    list("io.k8s.api.core.v1.EphemeralContainer", "env", "map", &["name"]),
    list("io.k8s.api.core.v1.EphemeralContainer", "resizePolicy", "atomic", &[]),
    list("io.k8s.api.core.v1.EphemeralContainer", "volumeMounts", "map", &["mountPath"]),
    list("io.k8s.api.core.v1.EphemeralContainer", "volumeDevices", "map", &["devicePath"]),
    list("io.k8s.api.core.v1.PodStatus", "conditions", "map", &["type"]),
    list("io.k8s.api.core.v1.PodStatus", "hostIPs", "atomic", &[]),
    list("io.k8s.api.core.v1.PodStatus", "podIPs", "map", &["ip"]),
    list("io.k8s.api.core.v1.PodStatus", "initContainerStatuses", "atomic", &[]),
    list("io.k8s.api.core.v1.PodStatus", "containerStatuses", "atomic", &[]),
    list("io.k8s.api.core.v1.PodStatus", "ephemeralContainerStatuses", "atomic", &[]),
    list("io.k8s.api.core.v1.PodStatus", "resourceClaimStatuses", "map", &["name"]),
    list("io.k8s.api.core.v1.ServiceStatus", "conditions", "map", &["type"]),
    list("io.k8s.api.core.v1.LoadBalancerStatus", "ingress", "atomic", &[]),
    list("io.k8s.api.core.v1.LoadBalancerIngress", "ports", "atomic", &[]),
    list("io.k8s.api.core.v1.ServiceSpec", "ports", "map", &["port", "protocol"]),
    list("io.k8s.api.core.v1.ServiceSpec", "clusterIPs", "atomic", &[]),
    list("io.k8s.api.core.v1.ServiceSpec", "externalIPs", "atomic", &[]),
    list("io.k8s.api.core.v1.ServiceSpec", "loadBalancerSourceRanges", "atomic", &[]),
    list("io.k8s.api.core.v1.ServiceSpec", "ipFamilies", "atomic", &[]),
    list("io.k8s.api.core.v1.ServiceAccount", "secrets", "map", &["name"]),
    list("io.k8s.api.core.v1.ServiceAccount", "imagePullSecrets", "atomic", &[]),
    list("io.k8s.api.core.v1.Endpoints", "subsets", "atomic", &[]),
    list("io.k8s.api.core.v1.EndpointSubset", "addresses", "atomic", &[]),
    list("io.k8s.api.core.v1.EndpointSubset", "notReadyAddresses", "atomic", &[]),
    list("io.k8s.api.core.v1.EndpointSubset", "ports", "atomic", &[]),
    list("io.k8s.api.core.v1.NodeSpec", "podCIDRs", "set", &[]),
    list("io.k8s.api.core.v1.NodeSpec", "taints", "atomic", &[]),
    list("io.k8s.api.core.v1.NodeStatus", "conditions", "map", &["type"]),
    list("io.k8s.api.core.v1.NodeStatus", "addresses", "map", &["type"]),
    list("io.k8s.api.core.v1.NodeStatus", "images", "atomic", &[]),
    list("io.k8s.api.core.v1.NodeStatus", "volumesInUse", "atomic", &[]),
    list("io.k8s.api.core.v1.NodeStatus", "volumesAttached", "atomic", &[]),
    list("io.k8s.api.core.v1.NodeStatus", "runtimeHandlers", "atomic", &[]),
    list("io.k8s.api.core.v1.ContainerImage", "names", "atomic", &[]),
    list("io.k8s.api.core.v1.NamespaceSpec", "finalizers", "atomic", &[]),
    list("io.k8s.api.core.v1.NamespaceStatus", "conditions", "map", &["type"]),
    list("io.k8s.api.core.v1.DownwardAPIVolumeSource", "items", "atomic", &[]),
    list("io.k8s.api.core.v1.DownwardAPIProjection", "items", "atomic", &[]),
    list("io.k8s.api.apps.v1.StatefulSetSpec", "volumeClaimTemplates", "atomic", &[]),
    list("io.k8s.api.apps.v1.StatefulSetStatus", "conditions", "map", &["type"]),
    list("io.k8s.api.apps.v1.DeploymentStatus", "conditions", "map", &["type"]),
    list("io.k8s.api.apps.v1.DaemonSetStatus", "conditions", "map", &["type"]),
    list("io.k8s.api.apps.v1.ReplicaSetStatus", "conditions", "map", &["type"]),
    list("io.k8s.api.batch.v1.PodFailurePolicyOnExitCodesRequirement", "values", "set", &[]),
    list("io.k8s.api.batch.v1.PodFailurePolicyRule", "onPodConditions", "atomic", &[]),
    list("io.k8s.api.batch.v1.PodFailurePolicy", "rules", "atomic", &[]),
    list("io.k8s.api.batch.v1.SuccessPolicy", "rules", "atomic", &[]),
    list("io.k8s.api.batch.v1.JobStatus", "conditions", "atomic", &[]),
    list("io.k8s.api.batch.v1.UncountedTerminatedPods", "succeeded", "set", &[]),
    list("io.k8s.api.batch.v1.UncountedTerminatedPods", "failed", "set", &[]),
    list("io.k8s.api.batch.v1.CronJobStatus", "active", "atomic", &[]),
    list("io.k8s.api.rbac.v1.PolicyRule", "verbs", "atomic", &[]),
    list("io.k8s.api.rbac.v1.PolicyRule", "apiGroups", "atomic", &[]),
    list("io.k8s.api.rbac.v1.PolicyRule", "resources", "atomic", &[]),
    list("io.k8s.api.rbac.v1.PolicyRule", "resourceNames", "atomic", &[]),
    list("io.k8s.api.rbac.v1.PolicyRule", "nonResourceURLs", "atomic", &[]),
    list("io.k8s.api.rbac.v1.Role", "rules", "atomic", &[]),
    list("io.k8s.api.rbac.v1.RoleBinding", "subjects", "atomic", &[]),
    list("io.k8s.api.rbac.v1.ClusterRole", "rules", "atomic", &[]),
    list("io.k8s.api.rbac.v1.AggregationRule", "clusterRoleSelectors", "atomic", &[]),
    list("io.k8s.api.rbac.v1.ClusterRoleBinding", "subjects", "atomic", &[]),
    list("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta", "ownerReferences", "map", &["uid"]),
    list("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta", "finalizers", "set", &[]),
    list("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta", "managedFields", "atomic", &[]),
    list("io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions", "dryRun", "atomic", &[]),
    list("io.k8s.apimachinery.pkg.apis.meta.v1.Status", "details", "atomic", &[]),
    list("io.k8s.apimachinery.pkg.apis.meta.v1.StatusDetails", "causes", "atomic", &[]),
    list("io.k8s.apimachinery.pkg.apis.meta.v1.APIVersions", "versions", "atomic", &[]),
    list("io.k8s.apimachinery.pkg.apis.meta.v1.APIVersions", "serverAddressByClientCIDRs", "atomic", &[]),
    list("io.k8s.apimachinery.pkg.apis.meta.v1.APIGroupList", "groups", "atomic", &[]),
    list("io.k8s.apimachinery.pkg.apis.meta.v1.APIGroup", "versions", "atomic", &[]),
    list("io.k8s.apimachinery.pkg.apis.meta.v1.APIGroup", "serverAddressByClientCIDRs", "atomic", &[]),
    list("io.k8s.apimachinery.pkg.apis.meta.v1.APIResource", "shortNames", "atomic", &[]),
    list("io.k8s.apimachinery.pkg.apis.meta.v1.APIResource", "categories", "atomic", &[]),
    list("io.k8s.apimachinery.pkg.apis.meta.v1.APIResourceList", "resources", "atomic", &[]),
    list("io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelector", "matchExpressions", "atomic", &[]),
    list("io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelectorRequirement", "values", "atomic", &[]),
];

/// Map properties with an `x-kubernetes-map-type` (`+mapType`): (definition, property, type).
pub static MAP_TYPES: &[(&str, &str, &str)] = &[
    ("io.k8s.api.core.v1.PersistentVolumeClaimStatus", "allocatedResourceStatuses", "granular"),
    ("io.k8s.api.core.v1.PersistentVolumeSpec", "claimRef", "granular"),
    ("io.k8s.api.core.v1.PodSpec", "nodeSelector", "atomic"),
    ("io.k8s.api.core.v1.ServiceSpec", "selector", "atomic"),
];

/// Property defaults kube publishes (`+default=`): (definition, property, value). Server-side
/// apply keys list elements by them when a configuration leaves a key field out.
pub static PROPERTY_DEFAULTS: &[(&str, &str, &str)] =
    &[("io.k8s.api.core.v1.ContainerPort", "protocol", "TCP"), ("io.k8s.api.core.v1.ServicePort", "protocol", "TCP")];

/// Definitions kube marks `+structType=atomic` (`x-kubernetes-map-type: atomic` on the
/// definition): server-side apply replaces them whole.
pub static ATOMIC_STRUCTS: &[&str] = &[
    "io.k8s.api.core.v1.ObjectFieldSelector",
    "io.k8s.api.core.v1.ResourceFieldSelector",
    "io.k8s.api.core.v1.ConfigMapKeySelector",
    "io.k8s.api.core.v1.SecretKeySelector",
    "io.k8s.api.core.v1.NodeSelector",
    "io.k8s.api.core.v1.NodeSelectorTerm",
    "io.k8s.api.core.v1.EndpointAddress",
    "io.k8s.api.core.v1.EndpointPort",
    "io.k8s.api.core.v1.ObjectReference",
    "io.k8s.api.core.v1.LocalObjectReference",
    "io.k8s.api.core.v1.TypedLocalObjectReference",
    "io.k8s.api.rbac.v1.Subject",
    "io.k8s.api.rbac.v1.RoleRef",
    "io.k8s.apimachinery.pkg.apis.meta.v1.OwnerReference",
    "io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelector",
];
