//! The catalogue of served resources: what discovery lists, how URLs map to kinds, where each
//! resource lives in storage. Adding a built-in kind starts here.

/// A subresource served beside the main resource.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Subresource {
    /// `/status`: writes change only `.status`.
    Status,
    /// `/scale`: an `autoscaling/v1` `Scale` view of `.spec.replicas`.
    Scale,
    /// `/finalize` of namespaces: writes change only `.spec.finalizers`.
    Finalize,
}

impl Subresource {
    /// The URL segment.
    pub fn name(self) -> &'static str {
        match self {
            Subresource::Status => "status",
            Subresource::Scale => "scale",
            Subresource::Finalize => "finalize",
        }
    }

    /// The verbs it serves.
    pub fn verbs(self) -> &'static [&'static str] {
        match self {
            Subresource::Status | Subresource::Scale => &["get", "patch", "update"],
            Subresource::Finalize => &["update"],
        }
    }
}

/// How `metadata.name` is validated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NameRule {
    /// RFC 1123 subdomain (most kinds).
    Subdomain,
    /// RFC 1123 label (namespaces).
    Label,
    /// RFC 1035 label (services).
    Rfc1035Label,
    /// Any name valid as a path segment (RBAC kinds: `system:masters` etc.).
    PathSegment,
}

/// One served resource of one group/version.
#[derive(Debug)]
pub struct ResourceDef {
    /// API group, `""` for core.
    pub group: &'static str,
    /// API version.
    pub version: &'static str,
    /// Plural resource name as it appears in URLs.
    pub resource: &'static str,
    /// Kind.
    pub kind: &'static str,
    /// Lower-case singular name.
    pub singular: &'static str,
    /// Whether objects live in a namespace.
    pub namespaced: bool,
    /// Short names for kubectl (`cm`, `deploy`).
    pub short_names: &'static [&'static str],
    /// Categories (`all`).
    pub categories: &'static [&'static str],
    /// Served subresources.
    pub subresources: &'static [Subresource],
    /// Key segment under the storage prefix, as kube-apiserver lays keys out in etcd
    /// (`/registry/<storage_path>/<namespace>/<name>`).
    pub storage_path: &'static str,
    /// How names are validated.
    pub name_rule: NameRule,
    /// Whether `deletecollection` is served (namespaces do not serve it).
    pub deletecollection: bool,
}

impl ResourceDef {
    /// `v1` or `apps/v1`.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() { self.version.to_string() } else { format!("{}/{}", self.group, self.version) }
    }

    /// `configmaps` or `deployments.apps`.
    pub fn qualified(&self) -> String {
        crate::error::qualified_resource(self.group, self.resource)
    }

    /// Whether the resource serves `sub`.
    pub fn has(&self, sub: Subresource) -> bool {
        self.subresources.contains(&sub)
    }

    /// The verbs discovery advertises.
    pub fn verbs(&self) -> Vec<&'static str> {
        let mut v = vec!["create", "delete"];
        if self.deletecollection {
            v.push("deletecollection");
        }
        v.extend(["get", "list", "patch", "update", "watch"]);
        v
    }

    /// The storage key prefix holding every object of this resource (ends with `/`).
    pub fn key_prefix(&self, storage_prefix: &str) -> String {
        format!("{}/{}/", storage_prefix.trim_end_matches('/'), self.storage_path)
    }

    /// The storage key prefix for one namespace, or the whole resource when `namespace` is empty.
    pub fn namespace_prefix(&self, storage_prefix: &str, namespace: &str) -> String {
        if self.namespaced && !namespace.is_empty() {
            format!("{}{namespace}/", self.key_prefix(storage_prefix))
        } else {
            self.key_prefix(storage_prefix)
        }
    }

    /// The storage key of one object.
    pub fn key(&self, storage_prefix: &str, namespace: &str, name: &str) -> String {
        if self.namespaced {
            format!("{}{namespace}/{name}", self.key_prefix(storage_prefix))
        } else {
            format!("{}{name}", self.key_prefix(storage_prefix))
        }
    }
}

const STATUS: &[Subresource] = &[Subresource::Status];
const STATUS_SCALE: &[Subresource] = &[Subresource::Status, Subresource::Scale];
const NONE: &[Subresource] = &[];
const NAMESPACE_SUBRESOURCES: &[Subresource] = &[Subresource::Status, Subresource::Finalize];
const ALL: &[&str] = &["all"];

macro_rules! def {
    ($group:expr, $version:expr, $resource:expr, $kind:expr, $singular:expr, namespaced: $ns:expr,
     short: $short:expr, categories: $cat:expr, sub: $sub:expr, storage: $storage:expr, names: $names:expr) => {
        ResourceDef {
            group: $group,
            version: $version,
            resource: $resource,
            kind: $kind,
            singular: $singular,
            namespaced: $ns,
            short_names: $short,
            categories: $cat,
            subresources: $sub,
            storage_path: $storage,
            name_rule: $names,
            deletecollection: true,
        }
    };
}

/// Every built-in resource this server serves, in discovery order.
pub static BUILTIN: &[ResourceDef] = &[
    ResourceDef {
        deletecollection: false,
        ..def!("", "v1", "namespaces", "Namespace", "namespace", namespaced: false, short: &["ns"],
            categories: &[], sub: NAMESPACE_SUBRESOURCES, storage: "namespaces", names: NameRule::Label)
    },
    def!("", "v1", "configmaps", "ConfigMap", "configmap", namespaced: true, short: &["cm"],
        categories: &[], sub: NONE, storage: "configmaps", names: NameRule::Subdomain),
    def!("", "v1", "secrets", "Secret", "secret", namespaced: true, short: &[],
        categories: &[], sub: NONE, storage: "secrets", names: NameRule::Subdomain),
    def!("", "v1", "serviceaccounts", "ServiceAccount", "serviceaccount", namespaced: true, short: &["sa"],
        categories: &[], sub: NONE, storage: "serviceaccounts", names: NameRule::Subdomain),
    def!("", "v1", "pods", "Pod", "pod", namespaced: true, short: &["po"],
        categories: ALL, sub: STATUS, storage: "pods", names: NameRule::Subdomain),
    def!("", "v1", "services", "Service", "service", namespaced: true, short: &["svc"],
        categories: ALL, sub: STATUS, storage: "services/specs", names: NameRule::Rfc1035Label),
    def!("", "v1", "endpoints", "Endpoints", "endpoints", namespaced: true, short: &["ep"],
        categories: &[], sub: NONE, storage: "services/endpoints", names: NameRule::Subdomain),
    def!("", "v1", "nodes", "Node", "node", namespaced: false, short: &["no"],
        categories: &[], sub: STATUS, storage: "minions", names: NameRule::Subdomain),
    def!("", "v1", "events", "Event", "event", namespaced: true, short: &["ev"],
        categories: &[], sub: NONE, storage: "events", names: NameRule::Subdomain),
    def!("apps", "v1", "deployments", "Deployment", "deployment", namespaced: true, short: &["deploy"],
        categories: ALL, sub: STATUS_SCALE, storage: "deployments", names: NameRule::Subdomain),
    def!("apps", "v1", "replicasets", "ReplicaSet", "replicaset", namespaced: true, short: &["rs"],
        categories: ALL, sub: STATUS_SCALE, storage: "replicasets", names: NameRule::Subdomain),
    def!("apps", "v1", "statefulsets", "StatefulSet", "statefulset", namespaced: true, short: &["sts"],
        categories: ALL, sub: STATUS_SCALE, storage: "statefulsets", names: NameRule::Subdomain),
    def!("apps", "v1", "daemonsets", "DaemonSet", "daemonset", namespaced: true, short: &["ds"],
        categories: ALL, sub: STATUS, storage: "daemonsets", names: NameRule::Subdomain),
    def!("batch", "v1", "jobs", "Job", "job", namespaced: true, short: &[],
        categories: ALL, sub: STATUS, storage: "jobs", names: NameRule::Subdomain),
    def!("batch", "v1", "cronjobs", "CronJob", "cronjob", namespaced: true, short: &["cj"],
        categories: ALL, sub: STATUS, storage: "cronjobs", names: NameRule::Subdomain),
    def!("coordination.k8s.io", "v1", "leases", "Lease", "lease", namespaced: true, short: &[],
        categories: &[], sub: NONE, storage: "leases", names: NameRule::Subdomain),
    def!("events.k8s.io", "v1", "events", "Event", "event", namespaced: true, short: &["ev"],
        categories: &[], sub: NONE, storage: "events", names: NameRule::Subdomain),
    def!("rbac.authorization.k8s.io", "v1", "roles", "Role", "role", namespaced: true, short: &[],
        categories: &[], sub: NONE, storage: "roles", names: NameRule::PathSegment),
    def!("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding", "rolebinding", namespaced: true, short: &[],
        categories: &[], sub: NONE, storage: "rolebindings", names: NameRule::PathSegment),
    def!("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", "clusterrole", namespaced: false, short: &[],
        categories: &[], sub: NONE, storage: "clusterroles", names: NameRule::PathSegment),
    def!("rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding", "clusterrolebinding",
        namespaced: false, short: &[], categories: &[], sub: NONE, storage: "clusterrolebindings",
        names: NameRule::PathSegment),
];

/// Looks a resource up by group, version and plural name.
pub fn find(group: &str, version: &str, resource: &str) -> Option<&'static ResourceDef> {
    BUILTIN.iter().find(|d| d.group == group && d.version == version && d.resource == resource)
}

/// Looks a resource up by group, version and kind.
pub fn find_kind(group: &str, version: &str, kind: &str) -> Option<&'static ResourceDef> {
    BUILTIN.iter().find(|d| d.group == group && d.version == version && d.kind == kind)
}

/// One served group and its versions, in discovery order.
pub struct GroupDef {
    /// Group name, `""` for core.
    pub name: &'static str,
    /// Versions, preferred first.
    pub versions: Vec<&'static str>,
}

/// The served groups in discovery order (core first).
pub fn groups() -> Vec<GroupDef> {
    let mut out: Vec<GroupDef> = Vec::new();
    for d in BUILTIN {
        match out.iter_mut().find(|g| g.name == d.group) {
            Some(g) if !g.versions.contains(&d.version) => g.versions.push(d.version),
            Some(_) => {}
            None => out.push(GroupDef { name: d.group, versions: vec![d.version] }),
        }
    }
    out
}

/// The resources of one group/version.
pub fn resources_of(group: &str, version: &str) -> impl Iterator<Item = &'static ResourceDef> {
    let (group, version) = (group.to_string(), version.to_string());
    BUILTIN.iter().filter(move |d| d.group == group && d.version == version)
}

/// Whether two definitions share storage (events are served by two groups from one store).
pub fn same_storage(a: &ResourceDef, b: &ResourceDef) -> bool {
    a.storage_path == b.storage_path
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_follow_kube_layout() {
        let svc = find("", "v1", "services").unwrap();
        assert_eq!(svc.key("/registry", "default", "web"), "/registry/services/specs/default/web");
        let ns = find("", "v1", "namespaces").unwrap();
        assert_eq!(ns.key("/registry", "", "kube-system"), "/registry/namespaces/kube-system");
        assert_eq!(ns.key_prefix("/registry/"), "/registry/namespaces/");
    }

    #[test]
    fn groups_list_core_first() {
        let g = groups();
        assert_eq!(g[0].name, "");
        assert!(g.iter().any(|g| g.name == "apps"));
        assert_eq!(g.iter().filter(|g| g.name == "apps").count(), 1);
    }
}
