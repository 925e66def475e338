//! [`Strategy`]: everything kind-specific, behind one object per kind.
//!
//! It gathers what kube spreads over a kind's scheme (defaulting, conversion, field label
//! conversion), its registry strategy (`PrepareForCreate`, `Validate`, generation, create on
//! update, delete behaviour) and its printer. Every method has kube's generic behaviour as its
//! default, so a kind overrides only what it does differently.

use std::sync::Arc;

use serde_json::Value;

use super::{ResourceDef, Subresource};
use crate::error::{ApiError, Cause};
use crate::selector::FieldLabels;
use crate::table::Printer;
use crate::validation::{field::Path, meta};

/// A shared pool objects take values from, each value held by one object at a time (kube's
/// allocators).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Pool {
    /// Service cluster IPs (`--service-cluster-ip-range`).
    ClusterIps,
    /// Service node ports (`--service-node-port-range`).
    NodePorts,
}

/// A value an object holds or needs from a [`Pool`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Claim {
    /// The pool.
    pub pool: Pool,
    /// Where in the object the value goes, in the kind's own numbering: what
    /// [`Strategy::set_claim`] is given back.
    pub slot: usize,
    /// The value chosen by the client (or allocated before), which is reserved for the object;
    /// `None` asks for a free one.
    pub value: Option<String>,
    /// The field an error about the value names, e.g. `spec.ports[0].nodePort`.
    pub field: String,
}

/// Reserves the values that [`Strategy::claims`] claims, for the registry that writes the
/// objects claiming them. The registry knows no kind: the Service kind's allocators (kube's
/// `ipallocator` and `portallocator`) implement this, and the composition root hands them over.
#[async_trait::async_trait]
pub trait AddressAllocator: Send + Sync {
    /// Reserves a value for object `name` being written: a free one for a claim without a
    /// value (but none of `skipped`: what a dry run already chose for the same object), exactly
    /// the chosen one otherwise. A dry run finds the value without reserving it. Errors are the
    /// Status the client sees.
    async fn reserve(&self, claim: &Claim, name: &str, skipped: &[String], dry_run: bool) -> Result<String, ApiError>;

    /// Gives a value back: the object holding it is gone, or its write failed.
    async fn release(&self, pool: Pool, value: &str) -> Result<(), ApiError>;
}

/// What a write through `/status` does to metadata, as each of kube's status strategies says
/// in its `PrepareForUpdate`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StatusMetadata {
    /// Labels, annotations, finalizers and owner references change as written.
    Writable,
    /// Like `Writable`, except these fields of `metadata`, which stay as stored.
    Kept(&'static [&'static str]),
    /// All of it stays as stored but the managed fields.
    KeptAll,
}

/// Paths a write may not change, which no manager of it owns: kube's `GetResetFields`.
pub type ResetFields = &'static [&'static [&'static str]];

/// `metav1.ResetObjectMetaForStatus`: what several status strategies keep as stored.
pub const RESET_FOR_STATUS: &[&str] =
    &["deletionTimestamp", "generation", "selfLink", "labels", "annotations", "finalizers", "ownerReferences"];

/// The behaviour of one kind. Implementations are stateless or hold only configuration.
pub trait Strategy: Send + Sync {
    /// kube's decode-time defaults: applied to every body and to every object read back.
    fn defaults(&self, _obj: &mut Value) {}

    /// Where its `/scale` view reads and writes (custom resources name their own paths).
    fn scale_paths(&self) -> crate::scale::ScalePaths {
        crate::scale::ScalePaths::default()
    }

    /// Whether the kind takes strategic merge patches: custom resources do not (kube has no
    /// Go struct to read their merge keys from).
    fn takes_strategic_merge_patch(&self) -> bool {
        true
    }

    /// Whether list items keep `apiVersion` and `kind`: a custom resource list is unstructured
    /// in kube and its items carry them; a built-in kind's typed list drops them.
    fn list_items_keep_type(&self) -> bool {
        false
    }

    /// Custom resources' decoding: the unknown fields their structural schema prunes, removed
    /// from `obj` and named by path. `None`, the default, decodes by the kind's OpenAPI schema
    /// as kube decodes built-in kinds into Go structs (the registry asks
    /// `schema::check_fields`): kept out of this trait so the kinds stay below the schemas
    /// built from them.
    fn prune_unknown_fields(&self, _obj: &mut Value) -> Option<Vec<String>> {
        None
    }

    /// `PrepareForCreate`, once the uid and name are assigned: status reset, generated fields.
    fn prepare_for_create(&self, _obj: &mut Value) {}

    /// What `PrepareForCreate` takes from the user creating the object (a
    /// CertificateSigningRequest records its requester).
    fn record_requester(&self, _obj: &mut Value, _user: &crate::request::UserInfo) {}

    /// Why the object may not be deleted at all (a system PriorityClass), as kube's 403 words it.
    fn deletion_forbidden(&self, _obj: &Value) -> Option<String> {
        None
    }

    /// `PrepareForUpdate` of the main resource, after identity and status are carried over.
    fn prepare_for_update(&self, _new: &mut Value, _old: &Value) {}

    /// The status strategy's `PrepareForUpdate`, after spec and identity are carried over
    /// from `old` and [`Strategy::status_metadata`] is applied: what else a `/status` write
    /// may not change.
    fn prepare_for_status_update(&self, _new: &mut Value, _old: &Value) {}

    /// A write through one of the kind's own subresources, other than `status` and `scale`
    /// which every kind shares: what it changes of the stored object `old`, as kube's
    /// per-subresource strategies say (a pod's `binding` sets its node, a namespace's
    /// `finalize` its finalizers). `new` is the object as written; it becomes what is stored.
    /// The default changes nothing: the subresource acts without writing the object.
    fn prepare_for_subresource_update(&self, _subresource: Subresource, new: &mut Value, old: &Value) {
        *new = old.clone();
    }

    /// Refuses a write through `subresource` given the stored object, before admission sees
    /// it (kube's `BindingREST` will not bind a pod twice: 409). The default allows it.
    fn check_subresource_update(&self, _subresource: Subresource, _name: &str, _old: &Value) -> Result<(), ApiError> {
        Ok(())
    }

    /// The schema the field manager walks objects with, when the kind's is not a built-in
    /// definition: a custom resource's structural schema, whose `x-kubernetes-list-type`,
    /// `x-kubernetes-list-map-keys` and `x-kubernetes-map-type` say how its lists and maps merge.
    /// Walked from its root by `schema::Node::root`.
    fn field_schema(&self) -> Option<&Value> {
        None
    }

    /// kube's reset fields of a write through `subresource` (`None`: the resource itself),
    /// where the kind's differ from the defaults ([`crate::catalogue::ResourceDef::reset_fields`]).
    fn reset_fields(&self, _subresource: Option<crate::catalogue::Subresource>) -> Option<ResetFields> {
        None
    }

    /// Which metadata a `/status` write may change. Most of kube's status strategies take
    /// labels, annotations, finalizers and owners from the write; some keep part or all of
    /// the stored metadata.
    fn status_metadata(&self) -> StatusMetadata {
        StatusMetadata::Writable
    }

    /// `Validate` on create: by default, kube's `ValidateObjectMeta`, then the kind's own rules
    /// ([`Strategy::validate_kind`]). The strategy is the stored resource's and `obj` is in the
    /// stored form; `def` is the resource the request was made to (see
    /// [`ResourceDef::validate_request`]), the same for every validation method.
    fn validate(&self, def: &ResourceDef, obj: &Value) -> Vec<Cause> {
        let mut out = meta_create(def, obj);
        out.extend(self.validate_kind(obj));
        out
    }

    /// `ValidateUpdate` of the main resource: by default, kube's `ValidateObjectMetaUpdate`,
    /// then the kind's own update rules ([`Strategy::validate_kind_update`]).
    fn validate_update(&self, _def: &ResourceDef, new: &Value, old: &Value) -> Vec<Cause> {
        let mut out = meta_update(new, old);
        out.extend(self.validate_kind_update(new, old));
        out
    }

    /// The kind's own rules on create, beyond its metadata (kube's `Validate<Kind>` less
    /// `ValidateObjectMeta`): none by default.
    fn validate_kind(&self, _obj: &Value) -> Vec<Cause> {
        Vec::new()
    }

    /// The kind's own rules on update, beyond the metadata update rules: by default its
    /// create rules on the new object.
    fn validate_kind_update(&self, new: &Value, _old: &Value) -> Vec<Cause> {
        self.validate_kind(new)
    }

    /// `ValidateUpdate` through `/status`: by default, the metadata update rules.
    fn validate_status_update(&self, _def: &ResourceDef, new: &Value, old: &Value) -> Vec<Cause> {
        meta_update(new, old)
    }

    /// Whether `metadata.generation` is set on create and bumped by spec changes.
    fn tracks_generation(&self) -> bool {
        false
    }

    /// Whether an update changes what generation counts (the spec, by default).
    fn generation_changes(&self, new: &Value, old: &Value) -> bool {
        new.get("spec") != old.get("spec")
    }

    /// Whether PUT of a missing object creates it (kube's `AllowCreateOnUpdate`).
    fn allow_create_on_update(&self) -> bool {
        false
    }

    /// Whether DELETE answers with the deleted object rather than a success `Status`.
    fn delete_returns_object(&self) -> bool {
        false
    }

    /// Seconds a deletion waits for its grace period (`requested` is the client's
    /// `gracePeriodSeconds`); 0 deletes at once, finalizers allowing.
    fn deletion_grace_seconds(&self, _obj: &Value, _requested: Option<i64>) -> i64 {
        0
    }

    /// Whether a deleted object still waits for its own finalization (a namespace for its
    /// content), which keeps it beyond its finalizers.
    fn awaits_finalization(&self, _obj: &Value) -> bool {
        false
    }

    /// Marks an object whose deletion now waits for its finalization (a namespace becomes
    /// `Terminating`).
    fn mark_terminating(&self, _obj: &mut Value) {}

    /// The pooled values the object holds or needs (a Service's cluster IP and node ports).
    fn claims(&self, _obj: &Value) -> Vec<Claim> {
        Vec::new()
    }

    /// Records a value allocated for the claim at `slot`.
    fn set_claim(&self, _obj: &mut Value, _slot: usize, _value: &str) {}

    /// The field labels field selectors may use, and their canonical names.
    fn field_labels(&self) -> &'static FieldLabels {
        &FieldLabels::META
    }

    /// The kind's own selectable fields (beyond `metadata.name` and `metadata.namespace`),
    /// under their canonical labels.
    fn selectable_fields(&self, _obj: &Value, _out: &mut Vec<(&'static str, String)>) {}

    /// The selectable field the watch cache indexes its objects by, for a kind whose clients
    /// list and watch by one (kube's watch cache indexes pods by `spec.nodeName`).
    fn indexed_field(&self) -> Option<&'static str> {
        None
    }

    /// kube's printer for `kubectl get`, `None` for the default convertor.
    fn printer(&self) -> Option<&dyn Printer> {
        None
    }

    /// Converts a body of this version into the stored form (see `ResourceDef::stored_as`).
    fn to_storage(&self, obj: Value) -> Result<Value, ApiError> {
        Ok(obj)
    }

    /// Converts a stored object into this version; `None` when it is served as stored.
    fn to_served(&self, _obj: &Value) -> Option<Value> {
        None
    }

    /// The `group/version` kube-apiserver writes this kind to etcd in, when it is not the stored
    /// form here ([`Strategy::to_etcd_version`] converts to it).
    fn etcd_version(&self) -> Option<&'static str> {
        None
    }

    /// The object as kube-apiserver writes it to etcd, when that is an older version than the
    /// stored form here (CustomResourceDefinitions are written as `v1beta1`); `None` when the
    /// stored form is written as it is.
    fn to_etcd_version(&self, _obj: &Value) -> Option<Value> {
        None
    }

    /// An object read from etcd in the stored form here: the inverse of
    /// [`Strategy::to_etcd_version`], and a no-op on an object already in it.
    fn read_etcd_version(&self, obj: Value) -> Value {
        obj
    }

    /// The conversion webhook of a custom resource whose CRD names one: it converts in place
    /// of [`Strategy::to_storage`] and [`Strategy::to_served`] (see
    /// [`ResourceDef::served_objects`](super::ResourceDef::served_objects)).
    fn converter(&self) -> Option<Arc<dyn Converter>> {
        None
    }
}

/// Converts objects between a kind's versions by calling out (a CRD's conversion webhook).
/// Async, so it runs where requests wait anyway (the gateway, around the stages), never inside
/// a stage's synchronous steps; not `Send`, as the HTTP client's futures stay on the worker
/// thread that made them.
#[async_trait::async_trait(?Send)]
pub trait Converter: Send + Sync {
    /// `objects` in `api_version`, in their order. Objects already in it come back unchanged;
    /// a failure is the error the client sees.
    async fn convert(&self, objects: Vec<Value>, api_version: &str) -> Result<Vec<Value>, ApiError>;
}

/// kube's `ValidateObjectMeta` with the kind's name rule, what every kind's create validation
/// starts with.
pub fn meta_create(def: &ResourceDef, obj: &Value) -> Vec<Cause> {
    meta::validate_object_meta(
        obj.get("metadata").and_then(Value::as_object),
        def.namespaced,
        def.name_rule.check(),
        &Path::new("metadata"),
        true,
    )
}

/// kube's `ValidateObjectMetaUpdate`, what every kind's update validation starts with.
pub fn meta_update(new: &Value, old: &Value) -> Vec<Cause> {
    let md = |v: &Value| v.get("metadata").and_then(Value::as_object).cloned();
    meta::validate_object_meta_update(md(new).as_ref(), md(old).as_ref(), &Path::new("metadata"), true)
}

/// A kind that behaves as kube's generic strategy does: metadata validation only, no status
/// handling, no printer.
pub struct DefaultStrategy;

impl Strategy for DefaultStrategy {}
