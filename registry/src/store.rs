//! kube's generic registry store (`registry/generic/registry/store.go`) on top of a
//! [`Storage`]: what happens between a decoded request and the stored bytes.
//!
//! Server-set metadata (uid, creationTimestamp, generation, generateName), the kind's defaults,
//! `PrepareFor*` and validation (through its strategy), the status, scale and finalize
//! subresources, guaranteed updates with resourceVersion preconditions, patches applied to the
//! current object inside the update loop (so a conflict re-applies the patch), admission of the
//! final object, deletion with preconditions, grace periods and finalizers, and Service cluster
//! IPs. Storage errors are mapped to Status with [`storage_codec::errors::interpret`].

use std::sync::Arc;
use std::time::Duration;

use actors::{Deadline, StageHandle};
use apimachinery::catalogue::{AddressAllocator, Catalogue, Pool, ResourceDef, Subresource};
use apimachinery::error::{ApiError, Cause, success_status};
use apimachinery::managedfields::{FieldManager, Scope};
use apimachinery::messages::{
    AdmissionPhase, Admit, Admitted, CreateObject, DeleteCollection, DeleteObject, Operation, PatchObject, Target,
    UpdateObject, WriteResult, Written,
};
use apimachinery::object::{ObjectExt, normalize_metadata, now_rfc3339, same_but_resource_version};
use apimachinery::options::{DeleteOptions, FieldValidation, Propagation, WriteOptions};
use apimachinery::patch::{PatchType, apply_patch};
use apimachinery::request::UserInfo;
use apimachinery::{Reason, schema};
use serde_json::{Value, json};
use storage::router::StorageRouter;
use storage::{Expect, KeyValue, StorageError};
use storage_codec::codec::{decode_object, encode_object, encode_replacing, stored_form, try_stored_form};
use storage_codec::errors::interpret;

use crate::recent::RecentWrites;

/// How many times a guaranteed update retries a conflict before giving up.
const MAX_UPDATE_RETRIES: usize = 64;

/// How one attempt of a guaranteed update ended.
enum Step {
    Done(WriteResult),
    /// The write itself failed: the answer, whatever the attempt started from (a write whose
    /// outcome is unknown must not be tried again on top of itself).
    Failed(ApiError),
    /// Storage answered a conflict with the key's current state: try again on it.
    Retry(KeyValue),
    /// Try again on what storage holds now.
    Read,
    /// Unchanged from a copy: the answer if storage still holds the copy's revision.
    Unchanged(WriteResult),
}

/// The generic registry store for every served resource.
pub struct RegistryStore {
    catalogue: Arc<Catalogue>,
    router: Arc<StorageRouter>,
    prefix: String,
    admission: StageHandle<Admit>,
    allocators: Arc<dyn AddressAllocator>,
    /// Events are deleted this long after their last write (`--event-ttl`); `None` keeps them.
    event_ttl: Option<Duration>,
    /// Where updates of a key this store updated lately start, instead of a storage read.
    pub(crate) recent: RecentWrites,
}

/// Who writes, and how: what every write step needs besides the object.
struct Writer<'a> {
    user: &'a UserInfo,
    dry_run: bool,
    deadline: Deadline,
    /// The request's options as admission sees them (`CreateOptions`, ...).
    options: Value,
}

impl<'a> Writer<'a> {
    /// A writer of a create, update or patch (`options_kind` names the options it sent).
    fn new(user: &'a UserInfo, options: &WriteOptions, deadline: Deadline, options_kind: &str) -> Self {
        Writer { user, dry_run: options.dry_run, deadline, options: options.review_form(options_kind) }
    }
}

/// What admission said about a write besides its decision, carried to the answer.
#[derive(Default)]
struct Said {
    warnings: Vec<String>,
    audit_annotations: Vec<(String, String)>,
}

impl Said {
    fn add(&mut self, admitted: Admitted) -> Value {
        self.warnings.extend(admitted.warnings);
        self.audit_annotations.extend(admitted.audit_annotations);
        admitted.object
    }
}

fn invalid(def: &ResourceDef, name: &str, causes: Vec<Cause>) -> Result<(), ApiError> {
    if causes.is_empty() { Ok(()) } else { Err(ApiError::invalid(&def.group, &def.kind, name, causes)) }
}

/// Drops unknown fields (kube decodes into typed structs) and applies `fieldValidation`:
/// `Strict` refuses them (400 for create and update, 422 on `patch` for patches, as kube),
/// `Warn` returns them as warnings. A type error fails whatever the directive.
fn check_fields(
    def: &ResourceDef,
    obj: &mut Value,
    options: &WriteOptions,
    patch: bool,
) -> Result<Vec<String>, ApiError> {
    let mode = options.field_validation;
    let body_kind = obj.get("kind").and_then(Value::as_str).unwrap_or(&def.kind).to_string();
    // kube names the version alone (`"v1"` of `apps/v1`).
    let body_version = obj
        .get("apiVersion")
        .and_then(Value::as_str)
        .map(|v| v.rsplit_once('/').map_or(v, |(_, version)| version))
        .unwrap_or(&def.version)
        .to_string();
    let mut report = match def.strategy.prune_unknown_fields(obj) {
        Some(unknown) => schema::FieldReport { unknown, ..schema::FieldReport::default() },
        None => schema::check_fields(&def.group, &def.version, &def.kind, obj),
    };
    report.set_body_keys(&options.body_keys);
    report.set_yaml_repeats(&options.yaml_repeats);
    if let Some(err) = &report.decode_error {
        return Err(ApiError::bad_request(schema::cannot_be_handled(&body_kind, &body_version, &def.kind, err)));
    }
    match (mode, report.strict_message()) {
        (_, None) | (FieldValidation::Ignore, _) => Ok(Vec::new()),
        (FieldValidation::Warn, Some(_)) => Ok(report.strict_errors()),
        (FieldValidation::Strict, Some(message)) if patch => Err(ApiError::invalid(
            &def.group,
            &def.kind,
            obj.name(),
            vec![Cause { reason: "FieldValueInvalid".into(), message, field: "patch".into() }],
        )),
        (FieldValidation::Strict, Some(message)) => {
            Err(ApiError::bad_request(schema::cannot_be_handled(&body_kind, &body_version, &def.kind, &message)))
        }
    }
}

/// The body's kind and apiVersion must be the resource's.
fn check_type(def: &ResourceDef, obj: &Value) -> Result<(), ApiError> {
    let kind = obj.get("kind").and_then(Value::as_str).unwrap_or("");
    let api_version = obj.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    if (!kind.is_empty() && kind != def.kind) || (!api_version.is_empty() && api_version != def.api_version()) {
        return Err(ApiError::bad_request(format!(
            "the API version in the data ({api_version}) does not match the expected API version ({})",
            def.api_version()
        )));
    }
    Ok(())
}

/// kube's `EnsureObjectNamespaceMatchesRequestNamespace`: an object without a namespace takes
/// the request's, a cluster-scoped one loses its, and a different one is refused.
fn ensure_namespace(def: &ResourceDef, target: &Target, obj: &mut Value) -> Result<(), ApiError> {
    let request_ns = if def.namespaced { target.namespace.as_str() } else { "" };
    let ns = obj.namespace().to_string();
    if ns == request_ns {
        return Ok(());
    }
    if ns.is_empty() {
        obj.set_meta_str("namespace", request_ns);
        Ok(())
    } else if request_ns.is_empty() {
        obj.meta_mut().remove("namespace");
        Ok(())
    } else {
        Err(ApiError::bad_request(
            "the namespace of the provided object does not match the namespace sent on the request",
        ))
    }
}

fn check_preconditions(def: &ResourceDef, name: &str, delete: &DeleteOptions, obj: &Value) -> Result<(), ApiError> {
    let checks = [
        ("UID", delete.precondition_uid.as_deref(), obj.uid()),
        ("ResourceVersion", delete.precondition_resource_version.as_deref(), obj.resource_version()),
    ];
    for (field, wanted, held) in checks {
        if let Some(wanted) = wanted
            && wanted != held
        {
            let message =
                format!("Precondition failed: {field} in precondition: {wanted}, {field} in object meta: {held}");
            return Err(ApiError::conflict(&def.group, &def.resource, name, &message));
        }
    }
    Ok(())
}

/// The pooled values (cluster IPs, node ports) a stored object holds.
fn held(def: &ResourceDef, obj: &Value) -> Vec<(Pool, String)> {
    def.strategy.claims(obj).into_iter().filter_map(|c| Some((c.pool, c.value?))).collect()
}

/// Values reserved for a write in progress. Given back when the write does not happen, and
/// when the write's future is dropped before it knows (its deadline passed, its caller left):
/// the release then runs in a task of its own, which nothing cancels.
struct Reservation {
    allocator: Arc<dyn AddressAllocator>,
    taken: Vec<(Pool, String)>,
}

impl Reservation {
    /// The write happened, or may have: the values stay taken.
    fn keep(mut self) {
        self.taken.clear();
    }

    /// The write did not happen: the values are free again when this returns.
    async fn give_back(mut self) {
        let releases: Vec<_> = std::mem::take(&mut self.taken)
            .into_iter()
            .filter_map(|(pool, value)| release_detached(self.allocator.clone(), pool, value))
            .collect();
        for release in releases {
            let _ = release.await;
        }
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        for (pool, value) in self.taken.drain(..) {
            release_detached(self.allocator.clone(), pool, value);
        }
    }
}

/// Releases `value` in a task of its own, so that cancelling the request that freed it does not
/// cancel the release; `None` outside a runtime (the server is going down).
fn release_detached(
    allocator: Arc<dyn AddressAllocator>,
    pool: Pool,
    value: String,
) -> Option<tokio::task::JoinHandle<()>> {
    let runtime = tokio::runtime::Handle::try_current().ok()?;
    Some(runtime.spawn(async move {
        if let Err(e) = allocator.release(pool, &value).await {
            tracing::warn!(value, ?pool, "releasing a pooled value: {}", e.message);
        }
    }))
}

/// Whether a failed write certainly did not happen. A backend that timed out or went away may
/// have committed it (etcd answers late), so the address it reserved is kept: a leaked address
/// is harmless, one handed out twice is not.
fn not_written(e: &StorageError) -> bool {
    !matches!(
        e,
        StorageError::Unavailable { .. } | StorageError::StageUnreachable { .. } | StorageError::Corrupt { .. }
    )
}

/// Whether a write's managed fields are still to be recorded as an update, or were made by
/// the apply that produced the object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Tracking {
    Update,
    Applied,
}

/// The field manager of a write of `def` through `subresource`: the resource's writes do not
/// own `status` when a status subresource exists; a status write owns only `status`.
fn field_manager<'a>(
    def: &'a ResourceDef,
    subresource: Option<Subresource>,
    api_version: &'a str,
    now: &'a str,
) -> FieldManager<'a> {
    let scope = Scope(def.reset_fields(subresource));
    FieldManager {
        node: def
            .strategy
            .field_schema()
            .map(schema::Node::root)
            .or_else(|| schema::kind_node(&def.group, &def.version, &def.kind)),
        api_version,
        kind: &def.kind,
        subresource: subresource.map(Subresource::name).unwrap_or_default(),
        scope,
        now,
    }
}

/// Records an update by `manager` into `new`'s `managedFields`, as `form`'s field manager
/// sees it: in `form`'s version, `live` and `new` being in the stored form (the same when
/// `form` is the stored resource).
fn track_update(
    form: &ResourceDef,
    subresource: Option<Subresource>,
    live: Option<&Value>,
    new: &mut Value,
    manager: &str,
) {
    let (api_version, now) = (form.api_version(), now_rfc3339());
    let fields = field_manager(form, subresource, &api_version, &now);
    let Some(mut view) = form.strategy.to_served(new) else {
        return fields.update(live, new, manager);
    };
    without_shown_empty(&mut view, new);
    let live = live.map(|l| {
        let mut view = form.strategy.to_served(l).unwrap_or_else(|| l.clone());
        without_shown_empty(&mut view, l);
        view
    });
    fields.update(live.as_ref(), &mut view, manager);
    match (view.pointer("/metadata/managedFields").cloned(), new.get_mut("metadata").and_then(Value::as_object_mut)) {
        (Some(entries), Some(meta)) => meta.insert("managedFields".into(), entries),
        (None, Some(meta)) => meta.remove("managedFields"),
        _ => None,
    };
}

/// `view` without the empty structs its conversion from `stored` shows under names of its own
/// (an Event's `deprecatedSource`): shown as Go's JSON shows them, they hold no field anyone
/// set.
fn without_shown_empty(view: &mut Value, stored: &Value) {
    if let Some(map) = view.as_object_mut() {
        map.retain(|k, v| !(v.as_object().is_some_and(|o| o.is_empty()) && stored.get(k).is_none()));
    }
}

/// The 422 for a Scale asking for fewer than no replicas.
fn check_replicas(name: &str, replicas: i64) -> Result<(), ApiError> {
    if replicas >= 0 {
        return Ok(());
    }
    Err(ApiError::invalid(
        "autoscaling",
        "Scale",
        name,
        vec![Cause {
            reason: "FieldValueInvalid".into(),
            message: format!("Invalid value: {replicas}: must be greater than or equal to 0"),
            field: "spec.replicas".into(),
        }],
    ))
}

/// kube's `checkName`: the object an apply makes names the object of the URL.
fn check_name(config: &Value, target: &Target) -> Result<(), ApiError> {
    let name = config.name();
    if name != target.name {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({name}) does not match the name on the URL ({})",
            target.name
        )));
    }
    let namespace = config.namespace();
    if !namespace.is_empty() && !target.namespace.is_empty() && namespace != target.namespace {
        return Err(ApiError::bad_request(format!(
            "the namespace of the object ({namespace}) does not match the namespace on the URL ({})",
            target.namespace
        )));
    }
    Ok(())
}

/// A create that failed, and whether its write may have happened all the same.
struct CreateFailed {
    error: ApiError,
    maybe_written: bool,
}

impl From<ApiError> for CreateFailed {
    fn from(error: ApiError) -> Self {
        CreateFailed { error, maybe_written: false }
    }
}

enum ScaleChange {
    Replace(Value),
    Patch(PatchType, Vec<u8>),
}

impl RegistryStore {
    /// A store for the resources of `catalogue`, writing under `prefix` (e.g. `/registry`)
    /// into the backends of `router`, admitting through `admission`, taking Service addresses
    /// from `cluster_ips`.
    pub fn new(
        catalogue: Arc<Catalogue>,
        router: Arc<StorageRouter>,
        prefix: &str,
        admission: StageHandle<Admit>,
        allocators: Arc<dyn AddressAllocator>,
    ) -> Self {
        let prefix = prefix.trim_end_matches('/').to_string();
        RegistryStore {
            catalogue,
            router,
            prefix,
            admission,
            allocators,
            event_ttl: None,
            recent: RecentWrites::default(),
        }
    }

    /// Deletes Events `ttl` after their last write, as kube-apiserver's `--event-ttl` does: by
    /// a storage lease (etcd's, shared by Events written close together), so any apiserver
    /// sharing the etcd sees them go.
    pub fn with_event_ttl(mut self, ttl: Duration) -> Self {
        self.event_ttl = Some(ttl).filter(|t| !t.is_zero());
        self
    }

    /// Writes an object's bytes at `key`, with the TTL of its resource if it has one.
    async fn put(&self, key: &str, bytes: bytes::Bytes, expect: Expect) -> Result<KeyValue, StorageError> {
        let backend = self.router.backend(key);
        let events = key.strip_prefix(self.prefix.as_str()).is_some_and(|k| k.starts_with("/events/"));
        match self.event_ttl.filter(|_| events) {
            Some(ttl) => backend.put_with_ttl(key, bytes, expect, ttl).await,
            None => backend.put(key, bytes, expect).await,
        }
    }

    fn key(&self, def: &ResourceDef, namespace: &str, name: &str) -> String {
        def.key(&self.prefix, namespace, name)
    }

    /// The resource a request was made to, when it is served from `def`'s objects in another
    /// group or version (`events.k8s.io` Events, `autoscaling/v1` HPAs): its strategy converts
    /// between the forms, and its group decides version-dependent validation.
    fn requested(&self, target: &Target) -> Option<Arc<ResourceDef>> {
        let (group, version) = target.requested.as_ref()?;
        self.catalogue.find(group, version, &target.resource)
    }

    /// The form a write of the main resource is patched, applied and tracked in, when the
    /// request was made to another one than stored and the strategy converts (conversion
    /// webhooks are the gateway's, around the stages): kube does all three in the request's
    /// version.
    fn request_form(&self, target: &Target) -> Option<Arc<ResourceDef>> {
        self.requested(target).filter(|r| target.subresource.is_none() && r.strategy.converter().is_none())
    }

    /// Asks admission to run `phase` over a write of `object` (named from it: a create's
    /// target is its collection).
    async fn admit(
        &self,
        phase: AdmissionPhase,
        operation: Operation,
        target: &Target,
        writer: &Writer<'_>,
        object: Value,
        old: Option<Arc<Value>>,
    ) -> Result<Admitted, ApiError> {
        let mut target = target.clone();
        if target.name.is_empty() {
            target.name = object.name().to_string();
        }
        let msg = Admit {
            phase,
            operation,
            target,
            user: writer.user.clone(),
            object,
            old_object: old,
            dry_run: writer.dry_run,
            options: writer.options.clone(),
        };
        self.admission.ask(msg, writer.deadline).await
    }

    /// Reserves the pooled values `obj` claims but the stored object does not already hold
    /// (`held`), recording allocated ones in it (a dry run finds them without reserving them).
    /// On an error, what was reserved is given back.
    async fn reserve(
        &self,
        def: &ResourceDef,
        obj: &mut Value,
        held: &[(Pool, String)],
        dry_run: bool,
    ) -> Result<Reservation, ApiError> {
        let mut reservation = Reservation { allocator: self.allocators.clone(), taken: Vec::new() };
        // What a dry run chose so far, per pool: not shown twice.
        let mut chosen: Vec<(Pool, String)> = Vec::new();
        for claim in def.strategy.claims(obj) {
            if claim.value.as_ref().is_some_and(|v| held.iter().any(|(p, h)| *p == claim.pool && h == v)) {
                continue;
            }
            let skipped: Vec<String> =
                chosen.iter().filter(|(p, _)| *p == claim.pool).map(|(_, v)| v.clone()).collect();
            let value = match self.allocators.reserve(&claim, obj.name(), &skipped, dry_run).await {
                Ok(value) => value,
                // What was taken is free again before the client hears of the refusal.
                Err(e) => {
                    reservation.give_back().await;
                    return Err(e);
                }
            };
            if claim.value.is_none() {
                def.strategy.set_claim(obj, claim.slot, &value);
            }
            if dry_run {
                chosen.push((claim.pool, value));
            } else {
                reservation.taken.push((claim.pool, value));
            }
        }
        Ok(reservation)
    }

    /// Gives back the values an object that is gone (or changed) held, in tasks nothing
    /// cancels.
    async fn release(&self, values: Vec<(Pool, String)>) {
        Reservation { allocator: self.allocators.clone(), taken: values }.give_back().await;
    }

    /// POST.
    pub async fn create(&self, msg: CreateObject, deadline: Deadline) -> Result<WriteResult, ApiError> {
        self.create_tracked(msg, deadline, Tracking::Update).await
    }

    /// A create, its managed fields recorded as an update unless an apply made them.
    async fn create_tracked(
        &self,
        msg: CreateObject,
        deadline: Deadline,
        tracking: Tracking,
    ) -> Result<WriteResult, ApiError> {
        let CreateObject { target, mut object, user, options } = msg;
        let def = target.resolve(&self.catalogue)?;
        if !object.is_object() {
            return Err(ApiError::bad_request("the body of the request must be an object"));
        }
        check_type(&def, &object)?;
        ensure_namespace(&def, &target, &mut object)?;
        let warnings = check_fields(&def, &mut object, &options, false)?;
        object["apiVersion"] = def.api_version().into();
        object["kind"] = def.kind.clone().into();
        // kube decodes with defaults, runs mutating admission, then prepares and validates
        // the result (so a webhook's change is validated) before validating admission.
        def.apply_defaults(&mut object);
        // kube records a create's fields as decoded with defaults, before admission and the
        // strategy add theirs.
        if tracking == Tracking::Update {
            let form = self.request_form(&target);
            track_update(form.as_deref().unwrap_or(&def), None, None, &mut object, options.manager());
        }
        let writer = Writer::new(&user, &options, deadline, "CreateOptions");
        let mut said = Said { warnings, ..Said::default() };
        let mut object =
            said.add(self.admit(AdmissionPhase::Mutating, Operation::Create, &target, &writer, object, None).await?);
        object["apiVersion"] = def.api_version().into();
        object["kind"] = def.kind.clone().into();
        ensure_namespace(&def, &target, &mut object)?;

        if object.name().is_empty() {
            let generate = object.meta_str("generateName").to_string();
            if !generate.is_empty() {
                let name = format!("{generate}{}", apimachinery::object::random_suffix());
                object.set_meta_str("name", &name);
            }
        }
        let name = object.name().to_string();
        if name.is_empty() {
            return Err(ApiError::invalid(
                &def.group,
                &def.kind,
                "",
                vec![Cause {
                    reason: "FieldValueRequired".into(),
                    message: "Required value: name or generateName is required".into(),
                    field: "metadata.name".into(),
                }],
            ));
        }
        if !object.resource_version().is_empty() {
            return Err(ApiError::unknown("resourceVersion should not be set on objects to be created"));
        }
        let meta = object.meta_mut();
        meta.remove("selfLink");
        meta.insert("uid".into(), uuid::Uuid::new_v4().to_string().into());
        meta.insert("creationTimestamp".into(), now_rfc3339().into());
        if def.strategy.tracks_generation() {
            meta.insert("generation".into(), 1.into());
        } else {
            meta.remove("generation");
        }
        normalize_metadata(&mut object);
        def.apply_defaults(&mut object);
        def.prepare_for_create(&mut object);
        def.strategy.record_requester(&mut object, &user);
        // An object that exists is AlreadyExists, not a conflict over the values it holds.
        if !held(&def, &object).is_empty() {
            let key = self.key(&def, &target.namespace, &name);
            if self.read_current(&def, &key, &name).await?.is_some() {
                return Err(ApiError::already_exists(&def.group, &def.resource, &name));
            }
        }
        let reservation = self.reserve(&def, &mut object, &[], options.dry_run).await?;
        match self.finish_create(&def, &target, &writer, object, &name, said).await {
            Ok(created) => {
                reservation.keep();
                Ok(created)
            }
            Err(CreateFailed { error, maybe_written }) => {
                if maybe_written {
                    reservation.keep()
                } else {
                    reservation.give_back().await
                }
                Err(error)
            }
        }
    }

    /// Validation, admission and the write of a prepared new object.
    async fn finish_create(
        &self,
        def: &ResourceDef,
        target: &Target,
        writer: &Writer<'_>,
        object: Value,
        name: &str,
        mut said: Said,
    ) -> Result<WriteResult, CreateFailed> {
        let requested = self.requested(target);
        invalid(def, name, def.validate_request(requested.as_deref().unwrap_or(def), &object))?;
        // What validating admission answers with is the object it was given: what was
        // validated is what is stored.
        let object =
            said.add(self.admit(AdmissionPhase::Validating, Operation::Create, target, writer, object, None).await?);
        let Said { warnings, audit_annotations } = said;
        let key = self.key(def, &target.namespace, name);
        if writer.dry_run {
            let object = Written::Object(object);
            return Ok(WriteResult { object, created: true, deleted: false, warnings, audit_annotations });
        }
        let bytes = encode_object(def, &object).map_err(|error| CreateFailed { error, maybe_written: false })?;
        let kv = self.put(&key, bytes, Expect::Absent).await.map_err(|e| {
            let maybe_written = !not_written(&e);
            let mut error = interpret(def, name, e);
            if error.reason == Reason::AlreadyExists && !object.meta_str("generateName").is_empty() {
                error.retry_after_seconds = Some(1);
            }
            CreateFailed { error, maybe_written }
        })?;
        let mut stored = object;
        stored.set_meta_str("resourceVersion", &kv.mod_revision.to_string());
        Ok(WriteResult { object: Written::Object(stored), created: true, deleted: false, warnings, audit_annotations })
    }

    async fn read_current(&self, def: &ResourceDef, key: &str, name: &str) -> Result<Option<KeyValue>, ApiError> {
        self.router.backend(key).get(key).await.map(|(kv, _)| kv).map_err(|e| interpret(def, name, e))
    }

    /// Shared loop of PUT and PATCH: read the current object, build the new one with `mutate`,
    /// admit it, write it guarded by the read revision, retry on conflict.
    async fn guaranteed_update<F>(
        &self,
        def: &ResourceDef,
        target: &Target,
        writer: Writer<'_>,
        options: &WriteOptions,
        tracking: Tracking,
        mut mutate: F,
    ) -> Result<WriteResult, ApiError>
    where
        F: FnMut(Option<&Value>) -> Result<(Value, Vec<String>), ApiError>,
    {
        let (user, deadline) = (writer.user, writer.deadline);
        let name = target.name.as_str();
        let key = self.key(def, &target.namespace, name);
        let scale = target.subresource == Some(Subresource::Scale);
        let requested = self.requested(target);
        // What this store wrote last at the key, when it did and the request's watch cache
        // holds no newer version (it holds that one, or lags behind it): the copy is then at
        // least as fresh as the cache's object kube starts from. A dry run decides on what
        // storage holds. `fresh` once `current` was read from storage.
        let recent = match options.cache_revision {
            Some(cached) if !options.dry_run => self.recent.get(&key).filter(|kv| cached <= kv.mod_revision),
            _ => None,
        };
        let mut fresh = recent.is_none();
        let mut current = match recent {
            Some(kv) => Some(kv),
            None => self.read_current(def, &key, name).await?,
        };
        for _ in 0..MAX_UPDATE_RETRIES {
            let attempt: Result<Step, ApiError> = async {
                // Shared with admission, which is sent it twice.
                let old = match &current {
                    Some(kv) => Some(Arc::new(decode_object(def, kv).map_err(|e| interpret(def, name, e))?)),
                    None => None,
                };
                let (mut candidate, mut warnings) = mutate(old.as_deref())?;
                let Some(old) = old else {
                    // Create on update: only kinds that allow it reach here with no current object.
                    let mut candidate = candidate;
                    candidate.meta_mut().remove("resourceVersion");
                    let create = CreateObject {
                        target: Target { name: String::new(), subresource: None, ..target.clone() },
                        object: candidate,
                        user: user.clone(),
                        options: options.clone(),
                    };
                    match self.create_tracked(create, deadline, tracking).await {
                        // Another writer created it first: apply onto theirs, as kube's guaranteed
                        // update retries a lost create.
                        Err(e) if e.reason == Reason::AlreadyExists && tracking == Tracking::Applied => {
                            return Ok(Step::Read);
                        }
                        created => return Ok(Step::Done(WriteResult { warnings, ..created? })),
                    }
                };
                let sent_rv = candidate.resource_version().to_string();
                let old_rv = old.resource_version().to_string();
                if !sent_rv.is_empty() && sent_rv != old_rv {
                    return Err(ApiError::stale_resource_version(&def.group, &def.resource, name));
                }
                if let Some(sub) = target.subresource {
                    def.strategy.check_subresource_update(sub, name, &old)?;
                }
                // The candidate in its stored form with its managed fields, when it was made for
                // them: what the stored form below would make again if admission changes nothing.
                let mut tracked = None;
                if tracking == Tracking::Update {
                    // kube records an update's fields on the object as sent (decoded with
                    // defaults), before admission and the strategy change it; compared with the
                    // stored object in the form a read gives it back, so a write that only restates
                    // what Go leaves out (`env: []`) changes no manager's fields or time.
                    let round_tripped = try_stored_form(def, &candidate);
                    // Reused below only if it went through the resource's own version: a patch may
                    // have set another `apiVersion`, which the stored form below overwrites first.
                    let own_type =
                        candidate.get("apiVersion").and_then(Value::as_str).is_some_and(|v| def.is_api_version(v))
                            && candidate.get("kind").and_then(Value::as_str) == Some(def.kind.as_str());
                    let reusable = round_tripped.is_some() && own_type;
                    // The stored form is defaulted already.
                    let mut sent = round_tripped.unwrap_or_else(|| {
                        let mut sent = candidate.clone();
                        def.apply_defaults(&mut sent);
                        sent
                    });
                    let form = self.request_form(target);
                    track_update(
                        form.as_deref().unwrap_or(def),
                        target.subresource,
                        Some(&*old),
                        &mut sent,
                        options.manager(),
                    );
                    let entries = sent.pointer("/metadata/managedFields").cloned();
                    if let Some(meta) = candidate.get_mut("metadata").and_then(Value::as_object_mut) {
                        match entries {
                            Some(e) => meta.insert("managedFields".into(), e),
                            None => meta.remove("managedFields"),
                        };
                    }
                    tracked = reusable.then_some(sent);
                }
                // Mutating admission sees the object as the client made it, before the strategy
                // prepares it; the result is then prepared and validated, as kube orders it. A
                // `/scale` write is admitted as kube admits it: an update of the Scale.
                let admitted_old = if scale { Arc::new(def.to_scale(&old)) } else { old.clone() };
                let sent = if scale { def.to_scale(&candidate) } else { candidate.clone() };
                let mutated = self
                    .admit(
                        AdmissionPhase::Mutating,
                        Operation::Update,
                        target,
                        &writer,
                        sent,
                        Some(admitted_old.clone()),
                    )
                    .await?;
                warnings.extend(mutated.warnings);
                let mut audit_annotations = mutated.audit_annotations;
                let mutated_object =
                    if scale { def.with_replicas(candidate.clone(), &mutated.object) } else { mutated.object };
                // Compared with the stored object in the form a read gives it back.
                let changed = mutated_object != candidate;
                let candidate = match tracked {
                    Some(mut form) if !changed => {
                        form["apiVersion"] = def.api_version().into();
                        form["kind"] = def.kind.clone().into();
                        form
                    }
                    _ => {
                        let mut candidate = if changed {
                            let mut changed = mutated_object;
                            def.apply_defaults(&mut changed);
                            changed
                        } else {
                            candidate
                        };
                        candidate["apiVersion"] = def.api_version().into();
                        candidate["kind"] = def.kind.clone().into();
                        stored_form(def, candidate)
                    }
                };
                let mut new = self.merge_server_state(def, target.subresource, candidate, &old);
                if new.resource_version().is_empty() {
                    new.set_meta_str("resourceVersion", &old_rv);
                }
                let request = requested.as_deref().unwrap_or(def);
                if target.subresource.is_some_and(Subresource::validated_as_status) {
                    invalid(def, name, def.validate_status_update_request(request, &new, &old))?;
                } else {
                    invalid(def, name, def.validate_update_request(request, &new, &old))?;
                }
                let (sent, kept) = if scale { (def.to_scale(&new), Some(new)) } else { (new, None) };
                let admitted = self
                    .admit(AdmissionPhase::Validating, Operation::Update, target, &writer, sent, Some(admitted_old))
                    .await?;
                warnings.extend(admitted.warnings);
                audit_annotations.extend(admitted.audit_annotations);
                let mut new = match kept {
                    Some(object) => def.with_replicas(object, &admitted.object),
                    None => admitted.object,
                };

                // Unchanged objects are not written: no new resourceVersion, as kube does.
                let stale = current.as_ref().is_some_and(|kv| kv.stale);
                if same_but_resource_version(&old, &new) && !stale {
                    // Unchanged from a copy: storage may hold a newer object, which this must be
                    // compared with before answering.
                    let object = Written::Object(Arc::unwrap_or_clone(old));
                    let result = WriteResult { object, created: false, deleted: false, warnings, audit_annotations };
                    return Ok(if fresh { Step::Done(result) } else { Step::Unchanged(result) });
                }
                new.set_meta_str("resourceVersion", &old_rv);
                // A Service whose type or ports change gains or gives up addresses and ports.
                let was_held = held(def, &old);
                let reservation = self.reserve(def, &mut new, &was_held, options.dry_run).await?;
                if options.dry_run {
                    let object = Written::Object(new);
                    return Ok(Step::Done(WriteResult {
                        object,
                        created: false,
                        deleted: false,
                        warnings,
                        audit_annotations,
                    }));
                }
                let mod_rev = current.as_ref().map(|kv| kv.mod_revision).unwrap_or(0);
                // The last finalizer removed from an object being deleted completes the deletion.
                let completes =
                    new.is_being_deleted() && new.finalizers().is_empty() && !def.strategy.awaits_finalization(&new);
                // Whatever the outcome, the copy (if one was used) is no guide to the next update.
                self.recent.forget(&key);
                let written = if completes {
                    self.router.backend(&key).delete(&key, Some(mod_rev)).await.map(|(_, rev)| rev)
                } else {
                    let previous = current.as_ref().map(|kv| &kv.value[..]).unwrap_or_default();
                    let bytes = encode_replacing(def, &new, previous)?;
                    self.put(&key, bytes, Expect::ModRevision(mod_rev)).await.map(|kv| {
                        let rev = kv.mod_revision;
                        self.recent.remember(kv);
                        rev
                    })
                };
                match written {
                    Ok(rev) => {
                        // A write that completed a deletion holds nothing: what it reserved too.
                        if completes {
                            reservation.give_back().await;
                        } else {
                            reservation.keep();
                        }
                        new.set_meta_str("resourceVersion", &rev.to_string());
                        let now_held = if completes { Vec::new() } else { held(def, &new) };
                        self.release(was_held.into_iter().filter(|h| !now_held.contains(h)).collect()).await;
                        let object = Written::Object(new);
                        Ok(Step::Done(WriteResult {
                            object,
                            created: false,
                            deleted: completes,
                            warnings,
                            audit_annotations,
                        }))
                    }
                    Err(e) => {
                        if not_written(&e) {
                            reservation.give_back().await
                        } else {
                            reservation.keep()
                        }
                        match e {
                            // A copy's conflict says nothing of the request's own resourceVersion:
                            // it is checked again against what storage holds.
                            StorageError::Conflict { current: now, .. } if sent_rv.is_empty() || !fresh => match now {
                                Some(now) => Ok(Step::Retry(*now)),
                                None => Ok(Step::Failed(ApiError::not_found(&def.group, &def.resource, name))),
                            },
                            // Gone since the copy was made: as if storage had been read first
                            // (an update of a kind that creates on update creates it).
                            StorageError::NotFound { .. } if !fresh => Ok(Step::Read),
                            StorageError::NotFound { .. } => {
                                Ok(Step::Failed(ApiError::not_found(&def.group, &def.resource, name)))
                            }
                            e => Ok(Step::Failed(interpret(def, name, e))),
                        }
                    }
                }
            }
            .await;
            let decided_on_copy = match attempt {
                Ok(Step::Done(result)) => return Ok(result),
                Ok(Step::Failed(e)) => return Err(e),
                Ok(Step::Retry(now)) => {
                    // The copy was stale: the next update starts from storage again.
                    self.recent.forget(&key);
                    (current, fresh) = (Some(now), true);
                    continue;
                }
                Ok(Step::Read) => {
                    self.recent.forget(&key);
                    (current, fresh) = (self.read_current(def, &key, name).await?, true);
                    continue;
                }
                // Decided on a copy: what storage holds may decide otherwise (a resourceVersion
                // the copy was behind on, a patch that applies to the newer object).
                Ok(Step::Unchanged(result)) => Ok(result),
                Err(e) if !fresh => Err(e),
                Err(e) => return Err(e),
            };
            // The answer stands if storage still holds the copy's revision (and the copy's
            // encoding): then it is what a read would have started from.
            let copied = current.as_ref().map(|kv| kv.mod_revision);
            let now = match self.read_current(def, &key, name).await {
                Ok(now) => now,
                // The attempt's own answer, rather than the read's failure.
                Err(_) => return decided_on_copy,
            };
            if now.as_ref().is_some_and(|kv| Some(kv.mod_revision) == copied && !kv.stale) {
                return decided_on_copy;
            }
            self.recent.forget(&key);
            (current, fresh) = (now, true);
        }
        Err(ApiError::conflict(&def.group, &def.resource, name, "too many concurrent updates; please try again"))
    }

    /// Builds the object to store from what the client sent and what is stored: server-owned
    /// metadata is kept, and the status and finalize subresources change only their part.
    fn merge_server_state(
        &self,
        def: &ResourceDef,
        subresource: Option<Subresource>,
        mut new: Value,
        old: &Value,
    ) -> Value {
        new["apiVersion"] = def.api_version().into();
        new["kind"] = def.kind.clone().into();
        if let Some(meta) = new.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.remove("selfLink");
        }
        match subresource {
            Some(Subresource::Status) => {
                // The kind's status strategy: spec and identity as stored, and what it says of
                // the metadata (most kinds take labels, annotations, finalizers and owners).
                let rv = new.resource_version().to_string();
                def.prepare_for_status_update(&mut new, old);
                new.set_meta_str("resourceVersion", &rv);
            }
            Some(Subresource::Scale) | None => {
                def.apply_defaults(&mut new);
                def.prepare_for_update(&mut new, old);
            }
            // The kind's own subresources (a pod's binding, a namespace's finalize).
            Some(other) => def.strategy.prepare_for_subresource_update(other, &mut new, old),
        }
        normalize_metadata(&mut new);
        new
    }

    /// PUT.
    pub async fn update(&self, msg: UpdateObject, deadline: Deadline) -> Result<WriteResult, ApiError> {
        let UpdateObject { target, mut object, user, options } = msg;
        let def = target.resolve(&self.catalogue)?;
        if !object.is_object() {
            return Err(ApiError::bad_request("the body of the request must be an object"));
        }
        if target.subresource == Some(Subresource::Scale) {
            if object.name() != target.name {
                return Err(name_mismatch(object.name(), &target.name));
            }
            return self.update_scale(&def, &target, &user, &options, deadline, ScaleChange::Replace(object)).await;
        }
        check_type(&def, &object)?;
        ensure_namespace(&def, &target, &mut object)?;
        if object.name() != target.name {
            return Err(name_mismatch(object.name(), &target.name));
        }
        let warnings = check_fields(&def, &mut object, &options, false)?;
        let exists_required = !def.strategy.allow_create_on_update() || target.subresource.is_some();
        let writer = Writer::new(&user, &options, deadline, "UpdateOptions");
        self.guaranteed_update(&def, &target, writer, &options, Tracking::Update, |old| {
            if old.is_none() && exists_required {
                return Err(ApiError::not_found(&def.group, &def.resource, &target.name));
            }
            Ok((object.clone(), warnings.clone()))
        })
        .await
    }

    /// PATCH.
    pub async fn patch(&self, msg: PatchObject, deadline: Deadline) -> Result<WriteResult, ApiError> {
        let PatchObject { target, patch_type, patch, user, options } = msg;
        let def = target.resolve(&self.catalogue)?;
        if patch_type == PatchType::Apply {
            return self.apply(&def, target, &patch, &user, &options, deadline).await;
        }
        if target.subresource == Some(Subresource::Scale) {
            let change = ScaleChange::Patch(patch_type, patch);
            return self.update_scale(&def, &target, &user, &options, deadline, change).await;
        }
        // kube applies a patch to the object in the version the request was made to: one
        // served from these objects in another form is patched in that form, then converted
        // back (conversion webhooks are the gateway's, around the stages).
        let form = self.request_form(&target);
        let form = form.as_deref().unwrap_or(&def);
        let gvk = (form.group.as_str(), form.version.as_str(), form.kind.as_str());
        // kube's `patchToUpdateOptions`: admission sees a patch as an update, with UpdateOptions.
        let writer = Writer::new(&user, &options, deadline, "UpdateOptions");
        self.guaranteed_update(&def, &target, writer, &options, Tracking::Update, |old| {
            let Some(old) = old else {
                return Err(ApiError::not_found(&def.group, &def.resource, &target.name));
            };
            let served = form.strategy.to_served(old);
            let old = served.as_ref().unwrap_or(old);
            let mut patched = apply_patch(patch_type, old, &patch, gvk)?;
            if !patched.is_object() {
                return Err(ApiError::bad_request("the patched object must be an object"));
            }
            let warnings = check_fields(form, &mut patched, &options, true)?;
            // A patch that leaves the resourceVersion alone is unconditional; one that sets it
            // asks for optimistic concurrency, as kube treats it.
            if patched.resource_version() == old.resource_version() {
                patched.meta_mut().remove("resourceVersion");
            }
            Ok((form.strategy.to_storage(patched)?, warnings))
        })
        .await
    }

    /// PATCH with a server-side apply configuration (already decoded to JSON): merged into
    /// the object by the field manager, which creates the object when it is missing.
    async fn apply(
        &self,
        def: &ResourceDef,
        target: Target,
        config: &[u8],
        user: &UserInfo,
        options: &WriteOptions,
        deadline: Deadline,
    ) -> Result<WriteResult, ApiError> {
        let mut config: Value = serde_json::from_slice(config).map_err(|e| ApiError::bad_request(e.to_string()))?;
        if target.subresource == Some(Subresource::Scale) {
            return self.apply_scale(def, &target, &config, user, options, deadline).await;
        }
        // An apply in another version than the stored one is made to the object in that
        // version, as kube converts the live object to the request's version; entries keep
        // the versions they were written in.
        let requested = match &target.requested {
            Some((group, version)) => Some(
                self.catalogue
                    .find(group, version, &target.resource)
                    .ok_or_else(|| ApiError::not_found(group, &target.resource, &target.name))?,
            ),
            None => None,
        };
        let served: &ResourceDef = requested.as_deref().unwrap_or(def);
        // A configuration that is not a valid typed object fails before field validation, as
        // kube's apply converts it first (an unknown field is a 500 whatever `fieldValidation`).
        let api_version = served.api_version();
        field_manager(served, target.subresource, &api_version, "").check_config(&config)?;
        let warnings = check_fields(served, &mut config, options, true)?;
        let writer = Writer::new(user, options, deadline, "PatchOptions");
        self.guaranteed_update(def, &target, writer, options, Tracking::Applied, |old| {
            let old_served = old.map(|o| served.strategy.to_served(o).unwrap_or_else(|| o.clone()));
            let old = old_served.as_ref();
            if old.is_none() && target.subresource.is_some() {
                return Err(ApiError::not_found(&def.group, &def.resource, &target.name));
            }
            let uid = config.uid();
            if old.is_none() && !uid.is_empty() {
                let why =
                    format!("uid mismatch: the provided object specified uid {uid}, and no existing object was found");
                return Err(ApiError::conflict(&def.group, &def.resource, &target.name, &why));
            }
            let now = now_rfc3339();
            let manager = field_manager(served, target.subresource, &api_version, &now);
            let mut applied = manager.apply(old, &config, options.manager(), options.force)?;
            // As kube checks it: on the merged object, so a configuration may leave its name out.
            check_name(&applied, &target)?;
            if let Some(old) = old
                && applied.resource_version() == old.resource_version()
            {
                applied.meta_mut().remove("resourceVersion");
            }
            if requested.is_some() {
                applied = served.strategy.to_storage(applied)?;
            }
            Ok((applied, warnings.clone()))
        })
        .await
    }

    /// An apply of a `Scale`: its replicas applied to the object as a configuration holding
    /// only them, owned by the manager through the `scale` subresource.
    async fn apply_scale(
        &self,
        def: &ResourceDef,
        target: &Target,
        config: &Value,
        user: &UserInfo,
        options: &WriteOptions,
        deadline: Deadline,
    ) -> Result<WriteResult, ApiError> {
        if !def.has(Subresource::Scale) {
            return Err(ApiError::not_found(&def.group, &def.resource, &target.name));
        }
        apimachinery::managedfields::check_type(config, "autoscaling/v1", "Scale")?;
        if let Some(replicas) = config.pointer("/spec/replicas").and_then(Value::as_i64) {
            check_replicas(&target.name, replicas)?;
        }
        let api_version = def.api_version();
        let mut parent = json!({"apiVersion": api_version, "kind": def.kind, "metadata": {"name": target.name}});
        if let Some(replicas) = config.pointer("/spec/replicas") {
            parent = def.with_replicas(parent, &json!({"spec": {"replicas": replicas}}));
        }
        let writer = Writer::new(user, options, deadline, "PatchOptions");
        let result = self
            .guaranteed_update(def, target, writer, options, Tracking::Applied, |old| {
                let Some(old) = old else {
                    return Err(ApiError::not_found(&def.group, &def.resource, &target.name));
                };
                let now = now_rfc3339();
                let manager = field_manager(def, Some(Subresource::Scale), &api_version, &now);
                let mut applied = manager.apply(Some(old), &parent, options.manager(), options.force)?;
                applied.meta_mut().remove("resourceVersion");
                Ok((applied, Vec::new()))
            })
            .await?;
        let scale = def.to_scale(result.object.value());
        Ok(WriteResult { object: Written::Scale(scale), ..result })
    }

    async fn update_scale(
        &self,
        def: &ResourceDef,
        target: &Target,
        user: &UserInfo,
        options: &WriteOptions,
        deadline: Deadline,
        change: ScaleChange,
    ) -> Result<WriteResult, ApiError> {
        if !def.has(Subresource::Scale) {
            return Err(ApiError::not_found(&def.group, &def.resource, &target.name));
        }
        let result = self
            .guaranteed_update(
                def,
                target,
                Writer::new(user, options, deadline, "UpdateOptions"),
                options,
                Tracking::Update,
                |old| {
                    let Some(old) = old else {
                        return Err(ApiError::not_found(&def.group, &def.resource, &target.name));
                    };
                    let current_scale = def.to_scale(old);
                    let scale = match &change {
                        ScaleChange::Replace(s) => s.clone(),
                        ScaleChange::Patch(pt, body) => {
                            apply_patch(*pt, &current_scale, body, ("autoscaling", "v1", "Scale"))?
                        }
                    };
                    let replicas = scale.pointer("/spec/replicas").and_then(Value::as_i64).unwrap_or(0);
                    check_replicas(&target.name, replicas)?;
                    let mut new = def.with_replicas(old.clone(), &json!({"spec": {"replicas": replicas}}));
                    let rv = scale.resource_version();
                    if !rv.is_empty() && rv != old.resource_version() {
                        return Err(ApiError::stale_resource_version(&def.group, &def.resource, &target.name));
                    }
                    new.meta_mut().remove("resourceVersion");
                    Ok((new, Vec::new()))
                },
            )
            .await?;
        let scale = def.to_scale(result.object.value());
        Ok(WriteResult { object: Written::Scale(scale), ..result })
    }

    /// DELETE of one object.
    pub async fn delete(&self, msg: DeleteObject, deadline: Deadline) -> Result<WriteResult, ApiError> {
        let DeleteObject { target, user, options } = msg;
        let def = target.resolve(&self.catalogue)?;
        let (object, deleted, admitted) = self.delete_one(&def, &target, &user, &options, deadline).await?;
        let Admitted { warnings, audit_annotations, .. } = admitted;
        let object = if deleted && !def.strategy.delete_returns_object() {
            Written::Status(success_status(&def.group, &def.resource, object.name(), Some(object.uid())))
        } else {
            Written::Object(object)
        };
        Ok(WriteResult { object, created: false, deleted, warnings, audit_annotations })
    }

    /// Deletes (or marks for deletion) one object; returns it as deleted or marked, whether
    /// it is gone, and what admission said (its object unused).
    async fn delete_one(
        &self,
        def: &ResourceDef,
        target: &Target,
        user: &UserInfo,
        delete: &DeleteOptions,
        deadline: Deadline,
    ) -> Result<(Value, bool, Admitted), ApiError> {
        let name = target.name.as_str();
        let key = self.key(def, &target.namespace, name);
        let writer = Writer { user, dry_run: delete.dry_run, deadline, options: delete.review_form() };
        if !delete.dry_run {
            self.recent.forget(&key);
        }
        for _ in 0..MAX_UPDATE_RETRIES {
            let Some(kv) = self.read_current(def, &key, name).await? else {
                return Err(ApiError::not_found(&def.group, &def.resource, name));
            };
            let old = decode_object(def, &kv).map_err(|e| interpret(def, name, e))?;
            if let Some(why) = def.strategy.deletion_forbidden(&old) {
                return Err(ApiError::forbidden(&def.group, &def.resource, name, &why));
            }
            check_preconditions(def, name, delete, &old)?;
            let mut marked = old.clone();
            let pending = mark_for_deletion(def, delete, &mut marked);
            // A delete is admitted by both phases; what mutating admission returns is not used.
            let shared = Arc::new(old.clone());
            let mut said = self
                .admit(AdmissionPhase::Mutating, Operation::Delete, target, &writer, old.clone(), Some(shared.clone()))
                .await?;
            let validated = self
                .admit(AdmissionPhase::Validating, Operation::Delete, target, &writer, old.clone(), Some(shared))
                .await?;
            said.warnings.extend(validated.warnings);
            said.audit_annotations.extend(validated.audit_annotations);
            if delete.dry_run {
                return Ok((marked, !pending, said));
            }
            if pending {
                if marked == old {
                    return Ok((old, false, said));
                }
                marked.meta_mut().remove("resourceVersion");
                let bytes = encode_replacing(def, &marked, &kv.value)?;
                match self.put(&key, bytes, Expect::ModRevision(kv.mod_revision)).await {
                    Ok(kv) => {
                        marked.set_meta_str("resourceVersion", &kv.mod_revision.to_string());
                        return Ok((marked, false, said));
                    }
                    Err(StorageError::Conflict { .. }) => continue,
                    Err(e) => return Err(interpret(def, name, e)),
                }
            }
            match self.router.backend(&key).delete(&key, Some(kv.mod_revision)).await {
                Ok((_, rev)) => {
                    self.release(held(def, &old)).await;
                    let mut gone = old;
                    gone.set_meta_str("resourceVersion", &rev.to_string());
                    return Ok((gone, true, said));
                }
                Err(StorageError::Conflict { .. }) => continue,
                Err(e) => return Err(interpret(def, name, e)),
            }
        }
        Err(ApiError::conflict(&def.group, &def.resource, name, "too many concurrent updates; please try again"))
    }

    /// DELETE of a collection: every matching object, one by one, as kube does.
    pub async fn delete_collection(&self, msg: DeleteCollection, deadline: Deadline) -> Result<Vec<Value>, ApiError> {
        let DeleteCollection { target, list, user, options } = msg;
        let def = target.resolve(&self.catalogue)?;
        let prefix = def.namespace_prefix(&self.prefix, &target.namespace);
        let items =
            self.router.backend(&prefix).list(&prefix, Default::default()).await.map_err(|e| interpret(&def, "", e))?;
        let mut deleted = Vec::new();
        for kv in &items.items {
            let obj = decode_object(&def, kv).map_err(|e| interpret(&def, "", e))?;
            if !list.selection.labels.matches(obj.labels()) || !list.selection.fields.matches(&def.field_set(&obj)) {
                continue;
            }
            let one = Target::object(&def, obj.namespace(), obj.name());
            match self.delete_one(&def, &one, &user, &options, deadline).await {
                Ok((object, _, _)) => deleted.push(object),
                Err(e) if e.reason == Reason::NotFound => {}
                Err(e) => return Err(e),
            }
        }
        Ok(deleted)
    }
}

fn name_mismatch(body: &str, url: &str) -> ApiError {
    ApiError::bad_request(format!("the name of the object ({body}) does not match the name on the URL ({url})"))
}

/// Sets what a pending deletion records; returns whether the object must stay (finalizers,
/// its own finalization, or a grace period) rather than be removed now.
fn mark_for_deletion(def: &ResourceDef, delete: &DeleteOptions, obj: &mut Value) -> bool {
    let mut finalizers: Vec<String> = obj.finalizers().iter().map(|s| s.to_string()).collect();
    let wanted = match delete.propagation {
        Some(Propagation::Orphan) => Some("orphan"),
        Some(Propagation::Foreground) => Some("foregroundDeletion"),
        Some(Propagation::Background) | None => None,
    };
    if let Some(f) = wanted
        && !finalizers.iter().any(|x| x == f)
    {
        finalizers.push(f.into());
    }
    let awaits = def.strategy.awaits_finalization(obj);
    let grace = def.strategy.deletion_grace_seconds(obj, delete.grace_period_seconds);
    if finalizers.is_empty() && !awaits && grace == 0 {
        return false;
    }
    if !obj.is_being_deleted() {
        let when = chrono::Utc::now() + chrono::Duration::seconds(grace);
        let meta = obj.meta_mut();
        meta.insert("deletionTimestamp".into(), when.format("%Y-%m-%dT%H:%M:%SZ").to_string().into());
        meta.insert("deletionGracePeriodSeconds".into(), grace.into());
    }
    if !finalizers.is_empty() {
        obj.meta_mut().insert("finalizers".into(), json!(finalizers));
    }
    if awaits {
        def.strategy.mark_terminating(obj);
    }
    true
}
