//! The storage stage: kube's generic registry store (`registry/generic/registry/store.go`) on
//! top of a [`Storage`].
//!
//! It owns what happens between a decoded request and the stored bytes: server-set metadata
//! (uid, creationTimestamp, generation, generateName), defaults and validation, the status and
//! scale subresources, guaranteed updates with resourceVersion preconditions, patches applied
//! to the current object inside the update loop (so a conflict re-applies the patch), admission
//! of the final object, and deletion with preconditions, grace periods and finalizers.
//!
//! Storage errors are mapped to Status here, once per verb (kube's `InterpretCreateError` and
//! friends).

use std::collections::BTreeSet;
use std::sync::Arc;

use actix::{Actor, Context, Handler, ResponseFuture};
use actors::error::{ApiError, Cause, success_status};
use actors::kinds::{ResourceDef, Subresource};
use actors::messages::{
    Admit, CreateObject, DeleteCollection, DeleteObject, DeleteOptions, FieldValidation, Operation, PatchObject,
    Target, UpdateObject, WriteOptions, WriteResult,
};
use actors::object::{ObjectExt, normalize_metadata, now_rfc3339};
use actors::patch::{PatchType, apply_patch};
use actors::selector::{FieldSelector, LabelSelector};
use actors::stage::StageHandle;
use actors::{defaults, schema, validation};
use serde_json::{Value, json};

use crate::router::StorageRouter;
use crate::{Expect, KeyValue, ListOptions, StorageError, codec};

/// Kinds whose strategy sets and bumps `metadata.generation` on spec changes.
fn tracks_generation(def: &ResourceDef) -> bool {
    matches!(def.group, "apps" | "batch")
}

/// Kinds that may be created by PUT (kube's `AllowCreateOnUpdate`).
fn allows_create_on_update(def: &ResourceDef) -> bool {
    matches!(
        (def.group, def.resource),
        ("", "endpoints")
            | ("", "events")
            | ("events.k8s.io", "events")
            | ("coordination.k8s.io", "leases")
            | ("rbac.authorization.k8s.io", _)
    )
}

/// Kinds whose DELETE answers with the deleted object rather than a `Status`.
fn returns_deleted_object(def: &ResourceDef) -> bool {
    matches!((def.group, def.resource), ("", "pods") | ("", "services") | ("", "namespaces"))
}

/// How many times a guaranteed update retries a conflict before giving up.
const MAX_UPDATE_RETRIES: usize = 64;

/// The generic registry store for every built-in resource.
pub struct RegistryStore {
    router: Arc<StorageRouter>,
    prefix: String,
    admission: StageHandle<Admit>,
}

/// Reads an object from stored bytes, setting `metadata.resourceVersion` from the key's mod
/// revision (kube never stores the resourceVersion inside the object).
pub fn decode_object(kv: &KeyValue) -> Result<Value, StorageError> {
    let mut obj = codec::decode(&kv.key, &kv.value)?;
    obj.set_meta_str("resourceVersion", &kv.mod_revision.to_string());
    Ok(obj)
}

fn encode_object(obj: &Value) -> bytes::Bytes {
    let mut stored = obj.clone();
    if let Some(meta) = stored.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("resourceVersion");
        meta.remove("selfLink");
    }
    codec::encode(&stored)
}

/// Maps a storage error to Status for one object of one resource.
pub fn interpret(def: &ResourceDef, name: &str, e: StorageError) -> ApiError {
    match e {
        StorageError::NotFound { .. } => ApiError::not_found(def.group, def.resource, name),
        StorageError::AlreadyExists { .. } => ApiError::already_exists(def.group, def.resource, name),
        StorageError::Conflict { .. } => ApiError::stale_resource_version(def.group, def.resource, name),
        StorageError::Compacted { requested, compacted } => {
            ApiError::expired(format!("too old resource version: {requested} ({compacted})"))
        }
        StorageError::FutureRevision { requested, current } => ApiError::too_large_resource_version(requested, current),
        StorageError::TooLarge { .. } => ApiError::new(actors::Reason::RequestEntityTooLarge, e.to_string()),
        StorageError::Unavailable { .. } | StorageError::Corrupt { .. } => ApiError::internal(e),
    }
}

fn random_suffix() -> String {
    // kube's generateName alphabet: no vowels (no words), no confusable characters.
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let bytes = uuid::Uuid::new_v4().into_bytes();
    bytes[..5].iter().map(|b| ALPHABET[*b as usize % ALPHABET.len()] as char).collect()
}

impl RegistryStore {
    /// A store writing under `prefix` (e.g. `/registry`) into the backends of `router`,
    /// admitting through `admission`.
    pub fn new(router: Arc<StorageRouter>, prefix: &str, admission: StageHandle<Admit>) -> Self {
        RegistryStore { router, prefix: prefix.trim_end_matches('/').to_string(), admission }
    }

    fn key(&self, def: &ResourceDef, namespace: &str, name: &str) -> String {
        def.key(&self.prefix, namespace, name)
    }

    /// Drops unknown fields (kube decodes into typed structs) and applies `fieldValidation`:
    /// `Strict` refuses them (400 for create and update, 422 on `patch` for patches, as kube),
    /// `Warn` returns them as warnings. A type error fails whatever the directive.
    fn check_fields(
        def: &ResourceDef,
        obj: &mut Value,
        mode: FieldValidation,
        patch: bool,
    ) -> Result<Vec<String>, ApiError> {
        let body_kind = obj.get("kind").and_then(Value::as_str).unwrap_or(def.kind).to_string();
        let body_version = obj.get("apiVersion").and_then(Value::as_str).unwrap_or(def.version).to_string();
        let report = schema::check_fields(def.group, def.version, def.kind, obj);
        if let Some(err) = &report.decode_error {
            return Err(ApiError::bad_request(schema::cannot_be_handled(&body_kind, &body_version, def.kind, err)));
        }
        match (mode, report.strict_message()) {
            (_, None) | (FieldValidation::Ignore, _) => Ok(Vec::new()),
            (FieldValidation::Warn, Some(_)) => Ok(report.strict_errors()),
            (FieldValidation::Strict, Some(message)) if patch => Err(ApiError::invalid(
                def.group,
                def.kind,
                obj.name(),
                vec![Cause { reason: "FieldValueInvalid".into(), message, field: "patch".into() }],
            )),
            (FieldValidation::Strict, Some(message)) => {
                Err(ApiError::bad_request(schema::cannot_be_handled(&body_kind, &body_version, def.kind, &message)))
            }
        }
    }

    fn check_identity(def: &ResourceDef, target: &Target, obj: &Value) -> Result<(), ApiError> {
        let kind = obj.get("kind").and_then(Value::as_str).unwrap_or("");
        let api_version = obj.get("apiVersion").and_then(Value::as_str).unwrap_or("");
        if (!kind.is_empty() && kind != def.kind) || (!api_version.is_empty() && api_version != def.api_version()) {
            return Err(ApiError::bad_request(format!(
                "the API version in the data ({api_version}) does not match the expected API version ({})",
                def.api_version()
            )));
        }
        let ns = obj.namespace();
        if def.namespaced && !ns.is_empty() && ns != target.namespace {
            return Err(ApiError::bad_request(
                "the namespace of the provided object does not match the namespace sent on the request",
            ));
        }
        Ok(())
    }

    async fn admit(
        &self,
        operation: Operation,
        target: &Target,
        options: &WriteOptions,
        object: Value,
        old: Option<&Value>,
    ) -> Result<Value, ApiError> {
        self.admission
            .ask(Admit {
                operation,
                target: target.clone(),
                user: options.user.clone(),
                object,
                old_object: old.cloned(),
                dry_run: options.dry_run,
            })
            .await
    }

    fn invalid(def: &ResourceDef, name: &str, causes: Vec<Cause>) -> Result<(), ApiError> {
        if causes.is_empty() { Ok(()) } else { Err(ApiError::invalid(def.group, def.kind, name, causes)) }
    }

    /// POST.
    pub async fn create(&self, msg: CreateObject) -> Result<WriteResult, ApiError> {
        let CreateObject { target, mut object, options } = msg;
        let def = target.def()?;
        if !object.is_object() {
            return Err(ApiError::bad_request("the body of the request must be an object"));
        }
        Self::check_identity(def, &target, &object)?;
        let warnings = Self::check_fields(def, &mut object, options.field_validation, false)?;
        object["apiVersion"] = def.api_version().into();
        object["kind"] = def.kind.into();

        if object.name().is_empty() {
            let generate = object.meta_str("generateName").to_string();
            if !generate.is_empty() {
                let name = format!("{generate}{}", random_suffix());
                object.set_meta_str("name", &name);
            }
        }
        let name = object.name().to_string();
        if name.is_empty() {
            return Err(ApiError::invalid(
                def.group,
                def.kind,
                "",
                vec![Cause {
                    reason: "FieldValueRequired".into(),
                    message: "Required value: name or generateName is required".into(),
                    field: "metadata.name".into(),
                }],
            ));
        }
        if def.namespaced {
            object.set_meta_str("namespace", &target.namespace);
        } else {
            object.meta_mut().remove("namespace");
        }
        if !object.resource_version().is_empty() {
            return Err(ApiError::unknown("resourceVersion should not be set on objects to be created"));
        }
        let meta = object.meta_mut();
        for f in ["deletionTimestamp", "deletionGracePeriodSeconds", "selfLink"] {
            meta.remove(f);
        }
        meta.insert("uid".into(), uuid::Uuid::new_v4().to_string().into());
        meta.insert("creationTimestamp".into(), now_rfc3339().into());
        if tracks_generation(def) {
            meta.insert("generation".into(), 1.into());
        } else {
            meta.remove("generation");
        }
        normalize_metadata(&mut object);
        defaults::apply_defaults(def, &mut object);
        defaults::prepare_for_create(def, &mut object);
        if def.group.is_empty() && def.kind == "Service" && defaults::needs_cluster_ip(&object) && !options.dry_run {
            let ip = self.allocate_cluster_ip().await?;
            defaults::set_cluster_ip(&mut object, &ip);
        }
        Self::invalid(def, &name, validation::validate(def, &object))?;

        let object = self.admit(Operation::Create, &target, &options, object, None).await?;
        let key = self.key(def, &target.namespace, &name);
        if options.dry_run {
            return Ok(WriteResult { object, created: true, deleted: false, warnings });
        }
        let kv = self.router.backend(&key).put(&key, encode_object(&object), Expect::Absent).await.map_err(|e| {
            let mut err = interpret(def, &name, e);
            if err.reason == actors::Reason::AlreadyExists && !object.meta_str("generateName").is_empty() {
                err.retry_after_seconds = Some(1);
            }
            err
        })?;
        let mut stored = object;
        stored.set_meta_str("resourceVersion", &kv.mod_revision.to_string());
        Ok(WriteResult { object: stored, created: true, deleted: false, warnings })
    }

    /// Picks the lowest free address of the service range (10.96.0.0/12; .1 is the
    /// `kubernetes` service's).
    async fn allocate_cluster_ip(&self) -> Result<String, ApiError> {
        let services = actors::kinds::find("", "v1", "services").expect("services are served");
        let prefix = services.key_prefix(&self.prefix);
        let list =
            self.router.backend(&prefix).list(&prefix, ListOptions::default()).await.map_err(ApiError::internal)?;
        let mut used = BTreeSet::new();
        for kv in &list.items {
            if let Ok(svc) = codec::decode(&kv.key, &kv.value)
                && let Some(ip) = svc.pointer("/spec/clusterIP").and_then(Value::as_str)
                && let Ok(addr) = ip.parse::<std::net::Ipv4Addr>()
            {
                used.insert(u32::from(addr));
            }
        }
        let base = u32::from(std::net::Ipv4Addr::new(10, 96, 0, 0));
        (base + 2..base + (1 << 20) - 1)
            .find(|a| !used.contains(a))
            .map(|a| std::net::Ipv4Addr::from(a).to_string())
            .ok_or_else(|| ApiError::internal("failed to allocate a serviceIP: range is full"))
    }

    async fn read_current(&self, def: &ResourceDef, key: &str, name: &str) -> Result<Option<KeyValue>, ApiError> {
        self.router.backend(key).get(key).await.map(|(kv, _)| kv).map_err(|e| interpret(def, name, e))
    }

    /// Shared loop of PUT and PATCH: read the current object, build the new one with `mutate`,
    /// admit it, write it guarded by the read revision, retry on conflict.
    async fn guaranteed_update<F>(
        &self,
        target: &Target,
        options: &WriteOptions,
        mut mutate: F,
    ) -> Result<WriteResult, ApiError>
    where
        F: FnMut(Option<&Value>) -> Result<(Value, Vec<String>), ApiError>,
    {
        let def = target.def()?;
        let name = target.name.as_str();
        let key = self.key(def, &target.namespace, name);
        let mut current = self.read_current(def, &key, name).await?;
        for _ in 0..MAX_UPDATE_RETRIES {
            let old = match &current {
                Some(kv) => Some(decode_object(kv).map_err(|e| interpret(def, name, e))?),
                None => None,
            };
            let (candidate, warnings) = mutate(old.as_ref())?;
            let Some(old) = old else {
                // Create on update: only kinds that allow it reach here with no current object.
                let mut candidate = candidate;
                candidate.meta_mut().remove("resourceVersion");
                let created = self
                    .create(CreateObject {
                        target: Target { name: String::new(), subresource: String::new(), ..target.clone() },
                        object: candidate,
                        options: options.clone(),
                    })
                    .await?;
                return Ok(WriteResult { warnings, ..created });
            };
            let sent_rv = candidate.resource_version().to_string();
            let old_rv = old.resource_version().to_string();
            if !sent_rv.is_empty() && sent_rv != old_rv {
                return Err(ApiError::stale_resource_version(def.group, def.resource, name));
            }
            let mut new = self.merge_server_state(def, &target.subresource, candidate, &old);
            if new.resource_version().is_empty() {
                new.set_meta_str("resourceVersion", &old_rv);
            }
            if target.subresource == "status" {
                Self::invalid(def, name, validation::validate_status_update(def, &new, &old))?;
            } else {
                Self::invalid(def, name, validation::validate_update(def, &new, &old))?;
            }
            new = self.admit(Operation::Update, target, options, new, Some(&old)).await?;

            // Unchanged objects are not written: no new resourceVersion, as kube does.
            let mut old_cmp = old.clone();
            old_cmp.meta_mut().remove("resourceVersion");
            let mut new_cmp = new.clone();
            new_cmp.meta_mut().remove("resourceVersion");
            let stale = current.as_ref().is_some_and(|kv| kv.stale);
            if old_cmp == new_cmp && !stale {
                return Ok(WriteResult { object: old, created: false, deleted: false, warnings });
            }
            new.set_meta_str("resourceVersion", &old_rv);
            if options.dry_run {
                return Ok(WriteResult { object: new, created: false, deleted: false, warnings });
            }
            let mod_rev = current.as_ref().map(|kv| kv.mod_revision).unwrap_or(0);
            // The last finalizer removed from an object being deleted completes the deletion.
            if new.is_being_deleted() && new.finalizers().is_empty() && !has_namespace_finalizers(def, &new) {
                match self.router.backend(&key).delete(&key, Some(mod_rev)).await {
                    Ok((_, rev)) => {
                        new.set_meta_str("resourceVersion", &rev.to_string());
                        return Ok(WriteResult { object: new, created: false, deleted: true, warnings });
                    }
                    Err(StorageError::Conflict { current: now, .. }) if sent_rv.is_empty() => {
                        current = now.map(|b| *b);
                        continue;
                    }
                    Err(e) => return Err(interpret(def, name, e)),
                }
            }
            match self.router.backend(&key).put(&key, encode_object(&new), Expect::ModRevision(mod_rev)).await {
                Ok(kv) => {
                    new.set_meta_str("resourceVersion", &kv.mod_revision.to_string());
                    return Ok(WriteResult { object: new, created: false, deleted: false, warnings });
                }
                Err(StorageError::Conflict { current: now, .. }) if sent_rv.is_empty() => {
                    current = now.map(|b| *b);
                    if current.is_none() {
                        return Err(ApiError::not_found(def.group, def.resource, name));
                    }
                }
                Err(StorageError::NotFound { .. }) => {
                    return Err(ApiError::not_found(def.group, def.resource, name));
                }
                Err(e) => return Err(interpret(def, name, e)),
            }
        }
        Err(ApiError::conflict(def.group, def.resource, name, "too many concurrent updates; please try again"))
    }

    /// Builds the object to store from what the client sent and what is stored: server-owned
    /// metadata is kept, and the status subresource splits spec from status writes.
    fn merge_server_state(&self, def: &ResourceDef, subresource: &str, mut new: Value, old: &Value) -> Value {
        new["apiVersion"] = def.api_version().into();
        new["kind"] = def.kind.into();
        if let Some(meta) = new.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.remove("selfLink");
        }
        if subresource == "finalize" {
            // Namespace finalization changes only `spec.finalizers`.
            let finalizers = new.pointer("/spec/finalizers").cloned();
            let rv = new.resource_version().to_string();
            let mut out = old.clone();
            match finalizers {
                Some(f) => out["spec"]["finalizers"] = f,
                None => {
                    if let Some(spec) = out.get_mut("spec").and_then(Value::as_object_mut) {
                        spec.remove("finalizers");
                    }
                }
            }
            out.set_meta_str("resourceVersion", &rv);
            return out;
        }
        if subresource == "status" {
            defaults::prepare_for_status_update(def, &mut new, old);
            // kube's ResetObjectMetaForStatus: a status write changes no metadata.
            let rv = new.resource_version().to_string();
            new["metadata"] = old.get("metadata").cloned().unwrap_or_else(|| json!({}));
            new.set_meta_str("resourceVersion", &rv);
        } else {
            defaults::apply_defaults(def, &mut new);
            defaults::prepare_for_update(def, &mut new, old);
        }
        normalize_metadata(&mut new);
        new
    }

    /// PUT.
    pub async fn update(&self, msg: UpdateObject) -> Result<WriteResult, ApiError> {
        let UpdateObject { target, object, options } = msg;
        let def = target.def()?;
        if !object.is_object() {
            return Err(ApiError::bad_request("the body of the request must be an object"));
        }
        Self::check_identity(def, &target, &object)?;
        if object.name() != target.name {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({}) does not match the name on the URL ({})",
                object.name(),
                target.name
            )));
        }
        if target.subresource == "scale" {
            return self.update_scale(&target, &options, ScaleChange::Replace(object)).await;
        }
        let mut object = object;
        let warnings = Self::check_fields(def, &mut object, options.field_validation, false)?;
        let exists_required = !allows_create_on_update(def) || !target.subresource.is_empty();
        let result = self
            .guaranteed_update(&target, &options, |old| {
                if old.is_none() && exists_required {
                    return Err(ApiError::not_found(def.group, def.resource, &target.name));
                }
                Ok((object.clone(), warnings.clone()))
            })
            .await?;
        Ok(result)
    }

    /// PATCH.
    pub async fn patch(&self, msg: PatchObject) -> Result<WriteResult, ApiError> {
        let PatchObject { target, content_type, patch, options } = msg;
        let def = target.def()?;
        let patch_type =
            PatchType::from_content_type(&content_type).ok_or_else(actors::patch::unsupported_patch_type)?;
        if target.subresource == "scale" {
            return self.update_scale(&target, &options, ScaleChange::Patch(patch_type, patch)).await;
        }
        let gvk = (def.group, def.version, def.kind);
        self.guaranteed_update(&target, &options, |old| {
            let Some(old) = old else {
                return Err(ApiError::not_found(def.group, def.resource, &target.name));
            };
            let mut patched = apply_patch(patch_type, old, &patch, gvk)?;
            if !patched.is_object() {
                return Err(ApiError::bad_request("the patched object must be an object"));
            }
            let warnings = Self::check_fields(def, &mut patched, options.field_validation, true)?;
            // A patch that leaves the resourceVersion alone is unconditional; one that sets it
            // asks for optimistic concurrency, as kube treats it.
            if patched.resource_version() == old.resource_version() {
                patched.meta_mut().remove("resourceVersion");
            }
            Ok((patched, warnings))
        })
        .await
    }

    async fn update_scale(
        &self,
        target: &Target,
        options: &WriteOptions,
        change: ScaleChange,
    ) -> Result<WriteResult, ApiError> {
        let def = target.def()?;
        if !def.has(Subresource::Scale) {
            return Err(ApiError::not_found(def.group, def.resource, &target.name));
        }
        let main = Target { subresource: String::new(), ..target.clone() };
        let result = self
            .guaranteed_update(&main, options, |old| {
                let Some(old) = old else {
                    return Err(ApiError::not_found(def.group, def.resource, &target.name));
                };
                let current_scale = to_scale(def, old);
                let scale = match &change {
                    ScaleChange::Replace(s) => s.clone(),
                    ScaleChange::Patch(pt, body) => {
                        apply_patch(*pt, &current_scale, body, ("autoscaling", "v1", "Scale"))?
                    }
                };
                let replicas = scale.pointer("/spec/replicas").and_then(Value::as_i64).unwrap_or(0);
                if replicas < 0 {
                    return Err(ApiError::invalid(
                        "autoscaling",
                        "Scale",
                        &target.name,
                        vec![Cause {
                            reason: "FieldValueInvalid".into(),
                            message: format!("Invalid value: {replicas}: must be greater than or equal to 0"),
                            field: "spec.replicas".into(),
                        }],
                    ));
                }
                let mut new = old.clone();
                new["spec"]["replicas"] = replicas.into();
                let rv = scale.resource_version();
                if !rv.is_empty() && rv != old.resource_version() {
                    return Err(ApiError::stale_resource_version(def.group, def.resource, &target.name));
                }
                new.meta_mut().remove("resourceVersion");
                Ok((new, Vec::new()))
            })
            .await?;
        Ok(WriteResult { object: to_scale(def, &result.object), ..result })
    }

    /// DELETE of one object.
    pub async fn delete(&self, msg: DeleteObject) -> Result<WriteResult, ApiError> {
        let DeleteObject { target, delete, options } = msg;
        let def = target.def()?;
        let name = target.name.clone();
        let key = self.key(def, &target.namespace, &name);
        for _ in 0..MAX_UPDATE_RETRIES {
            let Some(kv) = self.read_current(def, &key, &name).await? else {
                return Err(ApiError::not_found(def.group, def.resource, &name));
            };
            let old = decode_object(&kv).map_err(|e| interpret(def, &name, e))?;
            check_preconditions(def, &name, &delete, &old)?;
            let mut marked = old.clone();
            let pending = self.mark_for_deletion(def, &delete, &mut marked);
            self.admit(Operation::Delete, &target, &options, old.clone(), Some(&old)).await?;
            if options.dry_run {
                return Ok(self.delete_result(def, marked, !pending));
            }
            if pending {
                if marked == old {
                    return Ok(self.delete_result(def, old, false));
                }
                marked.meta_mut().remove("resourceVersion");
                match self
                    .router
                    .backend(&key)
                    .put(&key, encode_object(&marked), Expect::ModRevision(kv.mod_revision))
                    .await
                {
                    Ok(kv) => {
                        marked.set_meta_str("resourceVersion", &kv.mod_revision.to_string());
                        return Ok(self.delete_result(def, marked, false));
                    }
                    Err(StorageError::Conflict { .. }) => continue,
                    Err(e) => return Err(interpret(def, &name, e)),
                }
            }
            match self.router.backend(&key).delete(&key, Some(kv.mod_revision)).await {
                Ok((_, rev)) => {
                    let mut gone = old;
                    gone.set_meta_str("resourceVersion", &rev.to_string());
                    return Ok(self.delete_result(def, gone, true));
                }
                Err(StorageError::Conflict { .. }) => continue,
                Err(e) => return Err(interpret(def, &name, e)),
            }
        }
        Err(ApiError::conflict(def.group, def.resource, &name, "too many concurrent updates; please try again"))
    }

    fn delete_result(&self, def: &ResourceDef, object: Value, deleted: bool) -> WriteResult {
        let object = if deleted && !returns_deleted_object(def) {
            success_status(def.group, def.resource, object.name(), Some(object.uid()))
        } else {
            object
        };
        WriteResult { object, created: false, deleted, warnings: Vec::new() }
    }

    /// Sets what a pending deletion records; returns whether the object must stay (finalizers
    /// or a grace period) rather than be removed now.
    fn mark_for_deletion(&self, def: &ResourceDef, delete: &DeleteOptions, obj: &mut Value) -> bool {
        let mut finalizers: Vec<String> = obj.finalizers().iter().map(|s| s.to_string()).collect();
        match delete.propagation_policy.as_deref() {
            Some("Orphan") if !finalizers.iter().any(|f| f == "orphan") => finalizers.push("orphan".into()),
            Some("Foreground") if !finalizers.iter().any(|f| f == "foregroundDeletion") => {
                finalizers.push("foregroundDeletion".into())
            }
            _ => {}
        }
        let namespace_finalizers = has_namespace_finalizers(def, obj);
        // A pod bound to a node is deleted gracefully: the kubelet confirms with grace 0.
        let grace = if def.group.is_empty() && def.resource == "pods" {
            let bound = obj.pointer("/spec/nodeName").and_then(Value::as_str).is_some_and(|n| !n.is_empty());
            let terminal = matches!(obj.pointer("/status/phase").and_then(Value::as_str), Some("Failed" | "Succeeded"));
            let default = obj.pointer("/spec/terminationGracePeriodSeconds").and_then(Value::as_i64).unwrap_or(30);
            let g = delete.grace_period_seconds.unwrap_or(default);
            if bound && !terminal { g.max(0) } else { 0 }
        } else {
            0
        };
        if finalizers.is_empty() && !namespace_finalizers && grace == 0 {
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
        if namespace_finalizers {
            obj["status"]["phase"] = "Terminating".into();
        }
        true
    }

    /// DELETE of a collection: every matching object, one by one, as kube does.
    pub async fn delete_collection(&self, msg: DeleteCollection) -> Result<Vec<Value>, ApiError> {
        let DeleteCollection { target, selection, delete, options } = msg;
        let def = target.def()?;
        let labels = LabelSelector::parse(&selection.label_selector)?;
        let fields = FieldSelector::parse(&selection.field_selector)?.validate_for(def)?;
        let prefix = def.namespace_prefix(&self.prefix, &target.namespace);
        let list =
            self.router.backend(&prefix).list(&prefix, ListOptions::default()).await.map_err(ApiError::internal)?;
        let mut deleted = Vec::new();
        for kv in &list.items {
            let obj = decode_object(kv).map_err(ApiError::internal)?;
            if !labels.matches(obj.labels()) || !fields.matches(&actors::selector::field_set(def, &obj)) {
                continue;
            }
            let one = Target { name: obj.name().to_string(), namespace: obj.namespace().to_string(), ..target.clone() };
            match self.delete(DeleteObject { target: one, delete: delete.clone(), options: options.clone() }).await {
                Ok(r) => deleted.push(if r.object.get("kind") == Some(&json!("Status")) { obj } else { r.object }),
                Err(e) if e.reason == actors::Reason::NotFound => {}
                Err(e) => return Err(e),
            }
        }
        Ok(deleted)
    }
}

/// Whether a namespace still waits for its content to be deleted (`spec.finalizers`).
fn has_namespace_finalizers(def: &ResourceDef, obj: &Value) -> bool {
    def.group.is_empty()
        && def.resource == "namespaces"
        && obj.pointer("/spec/finalizers").and_then(Value::as_array).is_some_and(|f| !f.is_empty())
}

enum ScaleChange {
    Replace(Value),
    Patch(PatchType, Vec<u8>),
}

/// The `autoscaling/v1` `Scale` view of a scalable object.
pub fn to_scale(def: &ResourceDef, obj: &Value) -> Value {
    let meta = obj.meta().cloned().unwrap_or_default();
    let mut scale_meta = serde_json::Map::new();
    for f in ["name", "namespace", "uid", "resourceVersion", "creationTimestamp"] {
        if let Some(v) = meta.get(f) {
            scale_meta.insert(f.into(), v.clone());
        }
    }
    let selector = obj
        .pointer("/spec/selector")
        .and_then(|s| LabelSelector::from_label_selector(Some(s)).ok())
        .map(|s| s.to_string())
        .unwrap_or_default();
    let _ = def;
    json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": scale_meta,
        "spec": { "replicas": obj.pointer("/spec/replicas").cloned().unwrap_or(json!(0)) },
        "status": {
            "replicas": obj.pointer("/status/replicas").cloned().unwrap_or(json!(0)),
            "selector": selector,
        },
    })
}

fn check_preconditions(def: &ResourceDef, name: &str, delete: &DeleteOptions, obj: &Value) -> Result<(), ApiError> {
    if let Some(uid) = &delete.precondition_uid
        && uid != obj.uid()
    {
        return Err(ApiError::conflict(
            def.group,
            def.resource,
            name,
            &format!("Precondition failed: UID in precondition: {uid}, UID in object meta: {}", obj.uid()),
        ));
    }
    if let Some(rv) = &delete.precondition_resource_version
        && rv != obj.resource_version()
    {
        return Err(ApiError::conflict(
            def.group,
            def.resource,
            name,
            &format!(
                "Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in object meta: {}",
                obj.resource_version()
            ),
        ));
    }
    Ok(())
}

/// The storage stage actor: runs registry operations for the pipeline.
pub struct StorageActor {
    store: Arc<RegistryStore>,
}

impl StorageActor {
    /// An actor serving `store`.
    pub fn new(store: Arc<RegistryStore>) -> Self {
        StorageActor { store }
    }
}

impl Actor for StorageActor {
    type Context = Context<Self>;
}

macro_rules! delegate {
    ($msg:ty, $method:ident, $out:ty) => {
        impl Handler<$msg> for StorageActor {
            type Result = ResponseFuture<Result<$out, ApiError>>;
            fn handle(&mut self, msg: $msg, _: &mut Context<Self>) -> Self::Result {
                let store = self.store.clone();
                Box::pin(async move { store.$method(msg).await })
            }
        }
    };
}

delegate!(CreateObject, create, WriteResult);
delegate!(UpdateObject, update, WriteResult);
delegate!(PatchObject, patch, WriteResult);
delegate!(DeleteObject, delete, WriteResult);
delegate!(DeleteCollection, delete_collection, Vec<Value>);

actors::stage_handler!(StorageActor => CreateObject, UpdateObject, PatchObject, DeleteObject, DeleteCollection);
