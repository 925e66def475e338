//! The catalogue of served resources: what discovery lists, how URLs map to kinds, where each
//! resource lives in storage, and, through each resource's [`Strategy`], everything that
//! differs between kinds.
//!
//! A [`ResourceDef`] is one resource of one group/version: its names, scope, subresources and
//! key layout as data, and its behaviour as a [`Strategy`] object (kube's per-kind registry
//! strategy plus the scheme's defaulting, validation, printing and field-selector functions).
//! No code outside a strategy asks "which kind is this?": the registry, the cacher, the REST
//! handlers and the namespace finalizer ask the definition.
//!
//! The [`Catalogue`] holds the served definitions and can gain and lose them while the server
//! runs (custom resources, later); readers take an `Arc` of a definition and keep it for the
//! request.
//!
//! Adding a built-in kind is one file in `crate::builtin` defining its `ResourceDef` and
//! strategy, plus one line in that module's list.

mod strategy;
pub mod update;

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use serde_json::Value;

use crate::error::Cause;
use crate::object::{MAX_NESTING, ObjectExt};
use crate::selector::FieldLabels;
use crate::table::Printer;

pub use crate::validation::names::NameRule;
pub use strategy::{
    AddressAllocator, Claim, Converter, DefaultStrategy, Pool, RESET_FOR_STATUS, ResetFields, StatusMetadata, Strategy,
    meta_create, meta_update,
};

/// A subresource served beside the main resource.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Subresource {
    /// `/status`: writes change only `.status`.
    Status,
    /// `/scale`: an `autoscaling/v1` `Scale` view of `.spec.replicas`.
    Scale,
    /// `/finalize` of namespaces: writes change only `.spec.finalizers`.
    Finalize,
    /// `/approval` of CertificateSigningRequests: writes change only `.status.conditions`.
    Approval,
    /// `pods/binding`: assigns the pod to a node (what a scheduler posts).
    Binding,
    /// `pods/eviction`: a deletion that honours PodDisruptionBudgets.
    Eviction,
    /// `pods/ephemeralcontainers`: writes change only `.spec.ephemeralContainers`.
    EphemeralContainers,
    /// `pods/log`, served by the pod's kubelet.
    Log,
    /// `pods/exec`, served by the pod's kubelet.
    Exec,
    /// `pods/attach`, served by the pod's kubelet.
    Attach,
    /// `pods/portforward`, served by the pod's kubelet.
    PortForward,
    /// `pods/proxy`, `nodes/proxy`, `services/proxy`: proxied to the object's address.
    Proxy,
    /// `serviceaccounts/token`: a TokenRequest, answered with a signed token for the account.
    Token,
}

impl Subresource {
    /// The URL segment.
    pub fn name(self) -> &'static str {
        match self {
            Subresource::Status => "status",
            Subresource::Scale => "scale",
            Subresource::Finalize => "finalize",
            Subresource::Approval => "approval",
            Subresource::Binding => "binding",
            Subresource::Eviction => "eviction",
            Subresource::EphemeralContainers => "ephemeralcontainers",
            Subresource::Log => "log",
            Subresource::Exec => "exec",
            Subresource::Attach => "attach",
            Subresource::PortForward => "portforward",
            Subresource::Proxy => "proxy",
            Subresource::Token => "token",
        }
    }

    /// The subresource a URL segment names, if it is one this server knows.
    pub fn parse(segment: &str) -> Option<Subresource> {
        Self::ALL.into_iter().find(|s| s.name() == segment)
    }

    /// Every subresource, in the order discovery lists a kind's (alphabetical, as kube's).
    pub const ALL: [Subresource; 13] = [
        Subresource::Approval,
        Subresource::Attach,
        Subresource::Binding,
        Subresource::EphemeralContainers,
        Subresource::Eviction,
        Subresource::Exec,
        Subresource::Finalize,
        Subresource::Log,
        Subresource::PortForward,
        Subresource::Proxy,
        Subresource::Scale,
        Subresource::Status,
        Subresource::Token,
    ];

    /// The verbs it serves.
    pub fn verbs(self) -> &'static [&'static str] {
        match self {
            Subresource::Status | Subresource::Scale | Subresource::Approval | Subresource::EphemeralContainers => {
                &["get", "patch", "update"]
            }
            Subresource::Finalize => &["update"],
            Subresource::Binding | Subresource::Eviction | Subresource::Token => &["create"],
            Subresource::Log => &["get"],
            Subresource::Exec | Subresource::Attach | Subresource::PortForward => &["create", "get"],
            Subresource::Proxy => &["create", "delete", "get", "patch", "update"],
        }
    }

    /// Whether a write through it is validated by the kind's status rules rather than its
    /// update rules: those that change what a spec update may not (a pod's node, its
    /// ephemeral containers).
    pub fn validated_as_status(self) -> bool {
        matches!(self, Subresource::Status | Subresource::Binding | Subresource::EphemeralContainers)
    }

    /// Whether it reads and writes a view of the stored object (rather than acting on it or
    /// reaching the kubelet).
    pub fn is_view(self) -> bool {
        matches!(
            self,
            Subresource::Status
                | Subresource::Scale
                | Subresource::Finalize
                | Subresource::Approval
                | Subresource::EphemeralContainers
        )
    }
}

/// Adds a kind's OpenAPI schema (from its k8s-openapi type) to a generator; returns the
/// definition name.
pub type SchemaFn = fn(&mut schemars::SchemaGenerator) -> String;

/// How kube-apiserver writes a resource's objects to etcd, and so how this server writes them:
/// a kube-apiserver sharing the etcd reads them, and this server reads what it writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StorageMedia {
    /// The `k8s\0` magic and a `runtime.Unknown` holding the object's protobuf message (the
    /// built-in kinds).
    Protobuf,
    /// JSON (custom resources, CustomResourceDefinitions, APIServices).
    Json,
}

/// One served resource of one group/version.
pub struct ResourceDef {
    /// API group, `""` for core.
    pub group: String,
    /// API version.
    pub version: String,
    /// Plural resource name as it appears in URLs.
    pub resource: String,
    /// Kind.
    pub kind: String,
    /// Lower-case singular name.
    pub singular: String,
    /// Whether objects live in a namespace.
    pub namespaced: bool,
    /// Short names for kubectl (`cm`, `deploy`).
    pub short_names: Vec<String>,
    /// Categories (`all`).
    pub categories: Vec<String>,
    /// Served subresources.
    pub subresources: Vec<Subresource>,
    /// Key segment under the storage prefix, as kube-apiserver lays keys out in etcd
    /// (`/registry/<storage_path>/<namespace>/<name>`). Resources sharing a path share one store
    /// (events of two groups).
    pub storage_path: String,
    /// The group and version objects are stored in, when another than this one's (the
    /// strategy converts between them).
    pub stored_as: Option<(String, String)>,
    /// How its objects are written in etcd.
    pub storage_media: StorageMedia,
    /// How names are validated.
    pub name_rule: NameRule,
    /// Whether `deletecollection` is served (namespaces do not serve it).
    pub deletecollection: bool,
    /// Its OpenAPI schema, for built-in kinds.
    pub schema: Option<SchemaFn>,
    /// Its behaviour.
    pub strategy: Arc<dyn Strategy>,
    /// Whether objects are stored, or the gateway answers the resource itself.
    pub served: Served,
    /// The warning every request to a deprecated version gets (a `Warning` header).
    pub deprecation: Option<String>,
}

/// How a resource's requests are answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Served {
    /// Objects are stored and served by the generic REST verbs.
    Stored,
    /// Nothing is stored: these verbs run the kind's [`Action`](crate::action::Action), as
    /// kube's REST storages that implement only some verbs do (`bindings`,
    /// `componentstatuses`, the review APIs).
    ByGateway(&'static [&'static str]),
}

impl std::fmt::Debug for ResourceDef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ResourceDef({}/{} {})", self.api_version(), self.resource, self.kind)
    }
}

impl ResourceDef {
    /// A namespaced resource with default behaviour, stored under its plural name: refine it
    /// with the builder methods.
    pub fn new(group: &str, version: &str, resource: &str, kind: &str, strategy: impl Strategy + 'static) -> Self {
        ResourceDef {
            group: group.to_string(),
            version: version.to_string(),
            resource: resource.to_string(),
            kind: kind.to_string(),
            singular: kind.to_lowercase(),
            namespaced: true,
            short_names: Vec::new(),
            categories: Vec::new(),
            subresources: Vec::new(),
            storage_path: resource.to_string(),
            stored_as: None,
            storage_media: StorageMedia::Protobuf,
            name_rule: NameRule::Subdomain,
            deletecollection: true,
            schema: None,
            strategy: Arc::new(strategy),
            served: Served::Stored,
            deprecation: None,
        }
    }

    /// Stored objects in this version: by the strategy, or through the kind's conversion
    /// webhook (all the objects needing it in one call).
    pub async fn served_objects(&self, stored: Vec<Value>) -> Result<Vec<Value>, crate::error::ApiError> {
        match self.strategy.converter() {
            Some(c) if self.stored_as.is_some() => c.convert(stored, &self.api_version()).await,
            _ => Ok(stored.into_iter().map(|o| self.strategy.to_served(&o).unwrap_or(o)).collect()),
        }
    }

    /// A body of this version in the stored version: by the strategy, or through the kind's
    /// conversion webhook.
    pub async fn storage_object(&self, obj: Value) -> Result<Value, crate::error::ApiError> {
        match (self.strategy.converter(), &self.stored_as) {
            (Some(c), Some((group, version))) => {
                let stored = if group.is_empty() { version.clone() } else { format!("{group}/{version}") };
                let mut out = c.convert(vec![obj], &stored).await?;
                out.pop().ok_or_else(|| crate::error::ApiError::internal("conversion returned no object"))
            }
            _ => self.strategy.to_storage(obj),
        }
    }

    /// Every request to the resource gets `warning` (kube's deprecated APIs).
    pub fn deprecated(mut self, warning: &str) -> Self {
        self.deprecation = Some(warning.to_string());
        self
    }

    /// Nothing is stored: the gateway answers `verbs` itself.
    pub fn by_gateway(mut self, verbs: &'static [&'static str]) -> Self {
        self.served = Served::ByGateway(verbs);
        self
    }

    /// Whether objects of this resource are stored (and cached and watched).
    pub fn stored(&self) -> bool {
        self.served == Served::Stored
    }

    /// Objects live outside namespaces.
    pub fn cluster_scoped(mut self) -> Self {
        self.namespaced = false;
        self
    }

    /// kubectl's short names.
    pub fn short_names(mut self, names: &[&str]) -> Self {
        self.short_names = names.iter().map(|s| s.to_string()).collect();
        self
    }

    /// Discovery categories (`all`).
    pub fn categories(mut self, categories: &[&str]) -> Self {
        self.categories = categories.iter().map(|s| s.to_string()).collect();
        self
    }

    /// Served subresources.
    pub fn subresources(mut self, subresources: &[Subresource]) -> Self {
        self.subresources = subresources.to_vec();
        self
    }

    /// The key segment under the storage prefix, when not the plural name.
    pub fn storage_path(mut self, path: &str) -> Self {
        self.storage_path = path.to_string();
        self
    }

    /// Objects are stored in another group/version's form.
    pub fn stored_as(mut self, group: &str, version: &str) -> Self {
        self.stored_as = Some((group.to_string(), version.to_string()));
        self
    }

    /// Objects are written to etcd as JSON, not protobuf.
    pub fn stored_as_json(mut self) -> Self {
        self.storage_media = StorageMedia::Json;
        self
    }

    /// `v1` or `apps/v1` of the version objects are stored in.
    pub fn storage_api_version(&self) -> String {
        match &self.stored_as {
            Some((group, version)) if group.is_empty() => version.clone(),
            Some((group, version)) => format!("{group}/{version}"),
            None => self.api_version(),
        }
    }

    /// `v1` or `apps/v1` of the version objects are written to etcd in.
    pub fn etcd_api_version(&self) -> String {
        self.strategy.etcd_version().map_or_else(|| self.storage_api_version(), str::to_string)
    }

    /// How names are validated, when not as an RFC 1123 subdomain.
    pub fn names(mut self, rule: NameRule) -> Self {
        self.name_rule = rule;
        self
    }

    /// `deletecollection` is not served.
    pub fn without_deletecollection(mut self) -> Self {
        self.deletecollection = false;
        self
    }

    /// The OpenAPI schema of k8s-openapi type `T`.
    pub fn schema<T: schemars::JsonSchema>(mut self) -> Self {
        fn add<T: schemars::JsonSchema>(g: &mut schemars::SchemaGenerator) -> String {
            g.subschema_for::<T>();
            T::schema_name().into_owned()
        }
        self.schema = Some(add::<T>);
        self
    }

    /// Whether `api_version` is this resource's own [`ResourceDef::api_version`], without
    /// making it (asked on every update).
    pub fn is_api_version(&self, api_version: &str) -> bool {
        match api_version.split_once('/') {
            Some((group, version)) => group == self.group && version == self.version && !group.is_empty(),
            None => self.group.is_empty() && api_version == self.version,
        }
    }

    /// `v1` or `apps/v1`.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() { self.version.clone() } else { format!("{}/{}", self.group, self.version) }
    }

    /// `configmaps` or `deployments.apps`.
    pub fn qualified(&self) -> String {
        crate::error::qualified_resource(&self.group, &self.resource)
    }

    /// Whether the resource serves `sub`.
    pub fn has(&self, sub: Subresource) -> bool {
        self.subresources.contains(&sub)
    }

    /// The verbs discovery advertises.
    pub fn verbs(&self) -> Vec<&'static str> {
        if let Served::ByGateway(verbs) = self.served {
            return verbs.to_vec();
        }
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

    /// Whether two definitions share storage (events are served by two groups from one store).
    pub fn same_storage(&self, other: &ResourceDef) -> bool {
        self.storage_path == other.storage_path
    }

    // ------------------------------------------------------------------ behaviour

    /// Applies kube's decode-time defaults (idempotent).
    pub fn apply_defaults(&self, obj: &mut Value) {
        if obj.is_object() {
            self.strategy.defaults(obj);
        }
    }

    /// The `autoscaling/v1` Scale of `obj` (its `/scale` view).
    pub fn to_scale(&self, obj: &Value) -> Value {
        crate::scale::to_scale_at(obj, &self.strategy.scale_paths())
    }

    /// `obj` with the replicas `scale` asks for: what a `/scale` write changes.
    pub fn with_replicas(&self, obj: Value, scale: &Value) -> Value {
        crate::scale::with_replicas_at(obj, scale, &self.strategy.scale_paths())
    }

    /// `BeforeCreate` once the uid and name are assigned: deletion fields dropped, then the
    /// strategy's `PrepareForCreate` (status reset, generated fields).
    pub fn prepare_for_create(&self, obj: &mut Value) {
        if !obj.is_object() {
            return;
        }
        let meta = obj.meta_mut();
        meta.remove("deletionTimestamp");
        meta.remove("deletionGracePeriodSeconds");
        self.strategy.prepare_for_create(obj);
    }

    /// `BeforeUpdate` of the main resource: identity carried over from `old`, status kept for
    /// kinds with a status subresource, generation bumped when the strategy says the spec
    /// changed, then the strategy's `PrepareForUpdate`.
    pub fn prepare_for_update(&self, new: &mut Value, old: &Value) {
        if !new.is_object() {
            return;
        }
        crate::catalogue::update::carry_identity(new, old);
        if self.has(Subresource::Status) {
            crate::catalogue::update::keep_status(new, old);
        }
        if self.strategy.tracks_generation() && self.strategy.generation_changes(new, old) {
            crate::catalogue::update::bump_generation(new, old);
        }
        self.strategy.prepare_for_update(new, old);
    }

    /// The paths a write through `subresource` may not change, which no manager of it owns
    /// (kube's `GetResetFields`): the kind's own, else `status` for the resource when it has
    /// a status subresource, `spec` for `/status`, `status` for `/finalize`, `spec` and
    /// `status.certificate` for `/approval`.
    pub fn reset_fields(&self, subresource: Option<Subresource>) -> ResetFields {
        if let Some(own) = self.strategy.reset_fields(subresource) {
            return own;
        }
        match subresource {
            None if self.has(Subresource::Status) => &[&["status"]],
            Some(Subresource::Status) => &[&["spec"]],
            Some(Subresource::Finalize) => &[&["status"]],
            Some(Subresource::Approval) => &[&["spec"], &["status", "certificate"]],
            _ => &[],
        }
    }

    /// The `/status` flavour: identity and spec from `old`, only status and metadata changes
    /// taken from `new`, then the strategy's own status preparation.
    pub fn prepare_for_status_update(&self, new: &mut Value, old: &Value) {
        if !new.is_object() {
            return;
        }
        crate::catalogue::update::prepare_for_status_update(new, old);
        let kept: &[&str] = match self.strategy.status_metadata() {
            StatusMetadata::Writable => &[],
            StatusMetadata::Kept(fields) => fields,
            StatusMetadata::KeptAll => {
                let managed = new.pointer("/metadata/managedFields").cloned();
                new["metadata"] = old.get("metadata").cloned().unwrap_or_else(|| serde_json::json!({}));
                let meta = new.meta_mut();
                match managed {
                    Some(m) => meta.insert("managedFields".into(), m),
                    None => meta.remove("managedFields"),
                };
                &[]
            }
        };
        let empty = serde_json::Map::new();
        let old_meta = old.meta().unwrap_or(&empty);
        let meta = new.meta_mut();
        for key in kept {
            match old_meta.get(*key) {
                Some(v) => meta.insert((*key).to_string(), v.clone()),
                None => meta.remove(*key),
            };
        }
        self.strategy.prepare_for_status_update(new, old);
    }

    /// The strategy's `Validate` (create), duplicate causes reported once. Every validation
    /// also refuses an object nesting deeper than storage reads back (see [`too_deep`]).
    pub fn validate(&self, obj: &Value) -> Vec<Cause> {
        self.validate_request(self, obj)
    }

    /// [`ResourceDef::validate`] of an object in this resource's (stored) form, written through
    /// `request`: this resource, or one served from its objects in another group or version.
    /// kube validates the internal form whatever the request's version, and hands its
    /// strategy the request's group version (Events' rules depend on it).
    pub fn validate_request(&self, request: &ResourceDef, obj: &Value) -> Vec<Cause> {
        let mut causes = self.strategy.validate(request, obj);
        causes.extend(too_deep(obj));
        dedup(causes)
    }

    /// The strategy's `ValidateUpdate` of the main resource.
    pub fn validate_update(&self, new: &Value, old: &Value) -> Vec<Cause> {
        self.validate_update_request(self, new, old)
    }

    /// [`ResourceDef::validate_update`] written through `request` (see
    /// [`ResourceDef::validate_request`]).
    pub fn validate_update_request(&self, request: &ResourceDef, new: &Value, old: &Value) -> Vec<Cause> {
        let mut causes = self.strategy.validate_update(request, new, old);
        causes.extend(too_deep(new));
        dedup(causes)
    }

    /// The status strategy's `ValidateUpdate`.
    pub fn validate_status_update(&self, new: &Value, old: &Value) -> Vec<Cause> {
        self.validate_status_update_request(self, new, old)
    }

    /// [`ResourceDef::validate_status_update`] written through `request` (see
    /// [`ResourceDef::validate_request`]).
    pub fn validate_status_update_request(&self, request: &ResourceDef, new: &Value, old: &Value) -> Vec<Cause> {
        let mut causes = self.strategy.validate_status_update(request, new, old);
        causes.extend(too_deep(new));
        dedup(causes)
    }

    /// The fields field selectors can match on, with kube's value rendering: `metadata.name`,
    /// `metadata.namespace` for namespaced kinds, then the kind's own.
    pub fn field_set(&self, obj: &Value) -> Vec<(&'static str, String)> {
        let mut out = vec![("metadata.name", obj.name().to_string())];
        if self.namespaced {
            out.push(("metadata.namespace", obj.namespace().to_string()));
        }
        self.strategy.selectable_fields(obj, &mut out);
        out
    }

    /// The field labels field selectors may use, and their canonical names.
    pub fn field_labels(&self) -> &'static FieldLabels {
        self.strategy.field_labels()
    }

    /// kube's printer for `kubectl get`, `None` for the default convertor.
    pub fn printer(&self) -> Option<&dyn Printer> {
        self.strategy.printer()
    }
}

/// An object nesting deeper than [`MAX_NESTING`] could be stored but never decoded again. A
/// body is bounded on the way in, but what the server adds can go past it: managedFields
/// mirror the object's own nesting four levels further down.
fn too_deep(obj: &Value) -> Option<Cause> {
    let depth = crate::object::nesting(obj);
    if depth <= MAX_NESTING {
        return None;
    }
    let mut bare = obj.clone();
    let removed = bare.get_mut("metadata").and_then(Value::as_object_mut).and_then(|m| m.remove("managedFields"));
    let field =
        if removed.is_some() && crate::object::nesting(&bare) <= MAX_NESTING { "metadata.managedFields" } else { "" };
    Some(Cause {
        reason: "FieldValueForbidden".into(),
        message: format!(
            "Forbidden: the object would nest {depth} levels deep, past the {MAX_NESTING} the server stores"
        ),
        field: field.into(),
    })
}

fn dedup(causes: Vec<Cause>) -> Vec<Cause> {
    let mut out: Vec<Cause> = Vec::with_capacity(causes.len());
    for c in causes {
        if !out.contains(&c) {
            out.push(c);
        }
    }
    out
}

/// One served group and its versions, in discovery order.
pub struct GroupDef {
    /// Group name, `""` for core.
    pub name: String,
    /// Versions, preferred first.
    pub versions: Vec<String>,
}

/// The served resources in discovery order, and by plural name and by kind: a request's
/// lookup is one hash of a borrowed name (no allocation), then a comparison of group and
/// version among the few resources sharing it.
#[derive(Default)]
struct Index {
    all: Vec<Arc<ResourceDef>>,
    by_resource: HashMap<String, Vec<Arc<ResourceDef>>>,
    by_kind: HashMap<String, Vec<Arc<ResourceDef>>>,
    /// By storage path, in discovery order: the resources serving one store.
    by_storage: HashMap<String, Vec<Arc<ResourceDef>>>,
}

impl Index {
    fn build(all: Vec<Arc<ResourceDef>>) -> Self {
        let mut by_resource: HashMap<String, Vec<Arc<ResourceDef>>> = HashMap::new();
        let mut by_kind: HashMap<String, Vec<Arc<ResourceDef>>> = HashMap::new();
        let mut by_storage: HashMap<String, Vec<Arc<ResourceDef>>> = HashMap::new();
        for d in &all {
            by_resource.entry(d.resource.clone()).or_default().push(d.clone());
            by_kind.entry(d.kind.clone()).or_default().push(d.clone());
            by_storage.entry(d.storage_path.clone()).or_default().push(d.clone());
        }
        Index { all, by_resource, by_kind, by_storage }
    }

    fn find(
        map: &HashMap<String, Vec<Arc<ResourceDef>>>,
        group: &str,
        version: &str,
        name: &str,
    ) -> Option<Arc<ResourceDef>> {
        map.get(name)?.iter().find(|d| d.group == group && d.version == version).cloned()
    }
}

/// The served resources. Readers clone an `Arc` of the current index under a read lock held
/// for a lookup, so adding or removing a resource (rare: custom resources) never blocks a
/// request for longer than that.
pub struct Catalogue {
    index: RwLock<Arc<Index>>,
    /// Counts changes, for whoever follows what is served (the registration of the group
    /// versions' APIServices): a watch channel keeps only the latest count, so a slow follower
    /// sees one change however many happened.
    changes: tokio::sync::watch::Sender<u64>,
}

impl Default for Catalogue {
    fn default() -> Self {
        Catalogue::new([])
    }
}

impl Catalogue {
    /// A catalogue serving `defs`, in that order.
    pub fn new(defs: impl IntoIterator<Item = Arc<ResourceDef>>) -> Self {
        Catalogue {
            index: RwLock::new(Arc::new(Index::build(defs.into_iter().collect()))),
            changes: tokio::sync::watch::Sender::new(0),
        }
    }

    /// Wakes whenever the served resources change.
    pub fn subscribe(&self) -> tokio::sync::watch::Receiver<u64> {
        self.changes.subscribe()
    }

    fn changed(&self) {
        self.changes.send_modify(|n| *n += 1);
    }

    fn index(&self) -> Arc<Index> {
        self.index.read().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }

    /// Looks a resource up by group, version and plural name.
    pub fn find(&self, group: &str, version: &str, resource: &str) -> Option<Arc<ResourceDef>> {
        Index::find(&self.index().by_resource, group, version, resource)
    }

    /// Looks a resource up by group, version and kind.
    pub fn find_kind(&self, group: &str, version: &str, kind: &str) -> Option<Arc<ResourceDef>> {
        Index::find(&self.index().by_kind, group, version, kind)
    }

    /// The resource a `group/resource` names, in any version (what `--etcd-servers-overrides`
    /// and `EncryptionConfiguration` name).
    pub fn find_any_version(&self, group: &str, resource: &str) -> Option<Arc<ResourceDef>> {
        self.index().all.iter().find(|d| d.group == group && d.resource == resource).cloned()
    }

    /// The resources sharing `def`'s store (`def` among them), in discovery order: kube's
    /// equivalent resources (two versions of one kind, or one kind served by two groups).
    pub fn sharing_storage(&self, def: &ResourceDef) -> Vec<Arc<ResourceDef>> {
        self.index().by_storage.get(&def.storage_path).cloned().unwrap_or_default()
    }

    /// Every served resource, in discovery order.
    pub fn resources(&self) -> Vec<Arc<ResourceDef>> {
        self.index().all.clone()
    }

    /// One resource per store (the first served of those sharing a storage path): what the
    /// cachers, object counts and the namespace finalizer iterate.
    pub fn stores(&self) -> Vec<Arc<ResourceDef>> {
        let mut seen = std::collections::HashSet::new();
        self.index().all.iter().filter(|d| d.stored() && seen.insert(d.storage_path.clone())).cloned().collect()
    }

    /// The resources of one group/version.
    pub fn resources_of(&self, group: &str, version: &str) -> Vec<Arc<ResourceDef>> {
        self.index().all.iter().filter(|d| d.group == group && d.version == version).cloned().collect()
    }

    /// The served groups in discovery order (core first).
    pub fn groups(&self) -> Vec<GroupDef> {
        let mut out: Vec<GroupDef> = Vec::new();
        for d in &self.index().all {
            match out.iter_mut().find(|g| g.name == d.group) {
                Some(g) if !g.versions.contains(&d.version) => g.versions.push(d.version.clone()),
                Some(_) => {}
                None => out.push(GroupDef { name: d.group.clone(), versions: vec![d.version.clone()] }),
            }
        }
        out
    }

    /// Serves `def` from now on; refused if its group, version and resource are served already.
    pub fn add(&self, def: ResourceDef) -> Result<Arc<ResourceDef>, String> {
        let mut index = self.index.write().unwrap_or_else(std::sync::PoisonError::into_inner);
        if Index::find(&index.by_resource, &def.group, &def.version, &def.resource).is_some() {
            return Err(format!("{} {} is served already", def.api_version(), def.resource));
        }
        let def = Arc::new(def);
        let mut all = index.all.clone();
        all.push(def.clone());
        *index = Arc::new(Index::build(all));
        drop(index);
        self.changed();
        Ok(def)
    }

    /// In one step, stops serving the resources `gone` picks and serves `add` (appended in
    /// its order): a CRD's versions change without a moment where none is served. Refused,
    /// changing nothing, if a resource of `add` is served already and not among those going.
    pub fn replace(
        &self,
        gone: impl Fn(&ResourceDef) -> bool,
        add: Vec<ResourceDef>,
    ) -> Result<Vec<Arc<ResourceDef>>, String> {
        let mut index = self.index.write().unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut all: Vec<Arc<ResourceDef>> = index.all.iter().filter(|d| !gone(d)).cloned().collect();
        let mut added = Vec::with_capacity(add.len());
        for def in add {
            if all.iter().any(|d| d.group == def.group && d.version == def.version && d.resource == def.resource) {
                return Err(format!("{} {} is served already", def.api_version(), def.resource));
            }
            let def = Arc::new(def);
            all.push(def.clone());
            added.push(def);
        }
        *index = Arc::new(Index::build(all));
        drop(index);
        self.changed();
        Ok(added)
    }

    /// Stops serving a resource; requests holding its definition finish with it.
    pub fn remove(&self, group: &str, version: &str, resource: &str) -> Option<Arc<ResourceDef>> {
        let mut index = self.index.write().unwrap_or_else(std::sync::PoisonError::into_inner);
        let pos = index.all.iter().position(|d| d.group == group && d.version == version && d.resource == resource)?;
        let mut all = index.all.clone();
        let gone = all.remove(pos);
        *index = Arc::new(Index::build(all));
        drop(index);
        self.changed();
        Some(gone)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn widgets() -> ResourceDef {
        ResourceDef::new("example.com", "v1", "widgets", "Widget", DefaultStrategy).short_names(&["wd"])
    }

    #[test]
    fn a_resources_own_api_version_is_told_without_making_it() {
        let core = ResourceDef::new("", "v1", "configmaps", "ConfigMap", DefaultStrategy);
        let apps = ResourceDef::new("apps", "v1", "deployments", "Deployment", DefaultStrategy);
        for (def, other) in [(&core, "apps/v1"), (&apps, "v1")] {
            assert!(def.is_api_version(&def.api_version()));
            assert!(!def.is_api_version(other) && !def.is_api_version("") && !def.is_api_version("/v1"));
        }
        assert!(!apps.is_api_version("apps/v2") && !apps.is_api_version("apps"));
    }

    #[test]
    fn keys_follow_kube_layout() {
        let svc = ResourceDef::new("", "v1", "services", "Service", DefaultStrategy).storage_path("services/specs");
        assert_eq!(svc.key("/registry", "default", "web"), "/registry/services/specs/default/web");
        let ns = ResourceDef::new("", "v1", "namespaces", "Namespace", DefaultStrategy).cluster_scoped();
        assert_eq!(ns.key("/registry", "", "kube-system"), "/registry/namespaces/kube-system");
        assert_eq!(ns.key_prefix("/registry/"), "/registry/namespaces/");
    }

    #[test]
    fn the_catalogue_gains_and_loses_kinds_at_run_time() {
        let c = Catalogue::default();
        assert!(c.find("example.com", "v1", "widgets").is_none());
        let held = c.add(widgets()).unwrap();
        assert!(c.add(widgets()).is_err(), "one definition per group, version and resource");
        assert_eq!(c.find_kind("example.com", "v1", "Widget").unwrap().resource, "widgets");
        assert_eq!(c.groups().iter().map(|g| g.name.as_str()).collect::<Vec<_>>(), ["example.com"]);
        let changes = c.subscribe();
        assert!(c.remove("example.com", "v1", "widgets").is_some());
        assert!(c.find("example.com", "v1", "widgets").is_none());
        assert!(changes.has_changed().unwrap(), "followers hear of the change");
        assert_eq!(held.short_names, ["wd"], "a request holding the definition keeps it");
    }

    #[test]
    fn replacing_swaps_definitions_at_once_and_refuses_collisions() {
        let c = Catalogue::new([Arc::new(ResourceDef::new("", "v1", "configmaps", "ConfigMap", DefaultStrategy))]);
        c.add(widgets()).unwrap();
        let v2 = ResourceDef::new("example.com", "v2", "widgets", "Widget", DefaultStrategy);
        let added = c.replace(|d| d.group == "example.com", vec![v2, widgets()]).unwrap();
        assert_eq!(added.len(), 2);
        assert_eq!(c.groups()[1].versions, ["v2", "v1"]);
        let clash = ResourceDef::new("", "v1", "configmaps", "ConfigMap", DefaultStrategy);
        assert!(c.replace(|d| d.group == "example.com", vec![clash]).is_err());
        assert_eq!(c.resources().len(), 3, "a refused replacement changes nothing");
    }

    #[test]
    fn default_behaviour_validates_metadata_and_selects_by_name() {
        let d = widgets();
        let causes = d.validate(&serde_json::json!({"metadata": {"name": "Bad_Name", "namespace": "a"}}));
        assert_eq!(causes[0].field, "metadata.name");
        let fields = d.field_set(&serde_json::json!({"metadata": {"name": "w", "namespace": "a"}}));
        assert_eq!(fields, [("metadata.name", "w".to_string()), ("metadata.namespace", "a".to_string())]);
        assert!(d.printer().is_none());
    }

    #[test]
    fn validation_refuses_an_object_that_would_nest_past_what_storage_reads() {
        let d = widgets();
        let nested = |levels: usize| (0..levels).fold(serde_json::json!(1), |v, _| serde_json::json!({ "a": v }));
        let meta = serde_json::json!({"name": "w", "namespace": "a"});
        let fits = serde_json::json!({"metadata": meta, "spec": nested(MAX_NESTING - 1)});
        assert_eq!(d.validate(&fits), []);
        let deep = serde_json::json!({"metadata": meta, "spec": nested(MAX_NESTING)});
        let causes = d.validate_update(&deep, &fits);
        assert_eq!((causes.len(), causes[0].field.as_str()), (1, ""));
        assert_eq!(
            causes[0].message,
            "Forbidden: the object would nest 128 levels deep, past the 127 the server stores"
        );
        // Only the managedFields go past it: they are named.
        let mut managed = fits.clone();
        managed["metadata"]["managedFields"] = serde_json::json!([{"fieldsV1": nested(MAX_NESTING - 3)}]);
        assert_eq!(d.validate(&managed)[0].field, "metadata.managedFields");
    }
}

/// Definitions for the core's own tests, which cannot reach the built-in kinds above them.
#[cfg(test)]
pub(crate) mod testing {
    use super::{DefaultStrategy, ResourceDef};

    /// A ConfigMap-like resource with the generic strategy.
    pub(crate) fn config_maps() -> ResourceDef {
        ResourceDef::new("", "v1", "configmaps", "ConfigMap", DefaultStrategy)
    }
}
