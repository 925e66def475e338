//! `metadata.managedFields`: who owns which fields of an object, kept on every write as
//! kube-apiserver keeps it (`k8s.io/apimachinery/pkg/util/managedfields`), and server-side
//! apply built on it.
//!
//! An entry is one manager's field set, keyed by manager name, operation (`Apply` or
//! `Update`), subresource and, for updaters only, the apiVersion they wrote with.
//! - An **update** (create, PUT, a non-apply PATCH) gives its manager the fields it changed
//!   and takes them from everyone else; fields it removed leave every set. Objects that carry
//!   no entries are not tracked by updates (kube's rule: only creates start tracking).
//! - An **apply** merges the configuration into the object, makes the manager own exactly
//!   what the configuration holds, removes the fields it owned last time and no longer
//!   applies unless someone else owns them, and fails with 409 when it would change a value
//!   another manager owns (unless forced, when ownership moves to it).
//! - Entries are written sorted (Apply before Update, oldest first), at most
//!   [`MAX_UPDATE_MANAGERS`] update entries (older ones merge into `ancient-changes`), an entry
//!   whose set became empty is dropped, and object identity fields are never owned.

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use crate::catalogue::ResetFields;
use crate::error::{ApiError, Cause, Reason};
use crate::fieldpath::{self, FieldSet, PathElement, display_path};
use crate::schema::Node;

/// kube's cap on update entries (`DefaultMaxUpdateManagers`).
pub const MAX_UPDATE_MANAGERS: usize = 10;
/// The entry older updates merge into once there are too many.
pub const ANCIENT_CHANGES: &str = "ancient-changes";
/// The manager the fields of an untracked object are given to on its first apply.
pub const BEFORE_FIRST_APPLY: &str = "before-first-apply";
/// kubectl's client-side apply annotation, kept in step by `kubectl`'s server-side applies.
pub const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";
/// The manager whose applies migrate client-side apply objects.
const KUBECTL: &str = "kubectl";

/// An entry's operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Operation {
    /// Server-side apply.
    Apply,
    /// Any other write.
    Update,
}

impl Operation {
    fn as_str(self) -> &'static str {
        match self {
            Operation::Apply => "Apply",
            Operation::Update => "Update",
        }
    }
}

/// What tells entries apart (kube's manager identifier): the apiVersion counts for updaters
/// only, so an applier has one entry whatever version it applies.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ManagerId {
    /// The manager's name.
    pub manager: String,
    /// Apply or Update.
    pub operation: Operation,
    /// The apiVersion of an updater's entry; empty for an applier.
    pub api_version: String,
    /// The subresource written through; empty for the resource itself.
    pub subresource: String,
}

impl ManagerId {
    /// The entry as a conflict names it: `"m"`, `"m" with subresource "status"`, and for
    /// updaters `… using apps/v1`.
    pub fn describe(&self) -> String {
        let mut out = crate::gofmt::quote(&self.manager);
        if !self.subresource.is_empty() {
            out.push_str(&format!(" with subresource {}", crate::gofmt::quote(&self.subresource)));
        }
        if self.operation == Operation::Update {
            out.push_str(&format!(" using {}", self.api_version));
        }
        out
    }
}

/// One manager's fields.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Owned {
    /// The fields.
    pub set: FieldSet,
    /// The apiVersion the set is written in.
    pub api_version: String,
    /// When the manager last changed the object (RFC 3339, seconds).
    pub time: Option<String>,
}

/// The managed fields of one object.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Managed {
    /// Every entry by identity.
    pub entries: BTreeMap<ManagerId, Owned>,
}

impl Managed {
    /// Reads `metadata.managedFields` of `object`; an entry that does not decode makes the
    /// whole list unreadable, as in kube.
    pub fn decode(object: &Value) -> Result<Managed, String> {
        let mut managed = Managed::default();
        let Some(list) = object.pointer("/metadata/managedFields") else { return Ok(managed) };
        let Some(list) = list.as_array() else {
            return if list.is_null() { Ok(managed) } else { Err("managedFields must be a list".into()) };
        };
        for entry in list {
            let text = |k: &str| entry.get(k).and_then(Value::as_str).unwrap_or_default().to_string();
            let operation = match text("operation").as_str() {
                "Apply" => Operation::Apply,
                "Update" => Operation::Update,
                other => return Err(format!("unknown operation {other:?}")),
            };
            if text("fieldsType") != "FieldsV1" {
                return Err(format!("unknown fieldsType {:?}", text("fieldsType")));
            }
            let set = match entry.get("fieldsV1") {
                Some(fields) => FieldSet::from_fields_v1(fields)?,
                None => FieldSet::default(),
            };
            let api_version = text("apiVersion");
            let id = ManagerId {
                manager: text("manager"),
                operation,
                api_version: if operation == Operation::Apply { String::new() } else { api_version.clone() },
                subresource: text("subresource"),
            };
            let time = entry.get("time").and_then(Value::as_str).map(String::from);
            managed.entries.insert(id, Owned { set, api_version, time });
        }
        Ok(managed)
    }

    /// Writes the entries into `object`'s `metadata.managedFields` in kube's order (Apply
    /// before Update, then by time, manager, apiVersion, subresource); none removes the field.
    pub fn encode_into(&self, object: &mut Value) {
        let mut entries: Vec<(&ManagerId, &Owned)> = self.entries.iter().collect();
        entries.sort_by(|(a, x), (b, y)| {
            a.operation
                .cmp(&b.operation)
                .then_with(|| x.time.as_deref().unwrap_or("").cmp(y.time.as_deref().unwrap_or("")))
                .then_with(|| a.manager.cmp(&b.manager))
                .then_with(|| x.api_version.cmp(&y.api_version))
                .then_with(|| a.subresource.cmp(&b.subresource))
        });
        let list: Vec<Value> = entries
            .into_iter()
            .map(|(id, owned)| {
                let mut e = Map::new();
                e.insert("manager".into(), id.manager.clone().into());
                e.insert("operation".into(), id.operation.as_str().into());
                e.insert("apiVersion".into(), owned.api_version.clone().into());
                if let Some(t) = &owned.time {
                    e.insert("time".into(), t.clone().into());
                }
                e.insert("fieldsType".into(), "FieldsV1".into());
                e.insert("fieldsV1".into(), owned.set.to_fields_v1_value());
                if !id.subresource.is_empty() {
                    e.insert("subresource".into(), id.subresource.clone().into());
                }
                Value::Object(e)
            })
            .collect();
        let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) else { return };
        if list.is_empty() {
            meta.remove("managedFields");
        } else {
            meta.insert("managedFields".into(), Value::Array(list));
        }
    }

    /// Drops empty sets.
    fn prune_empty(&mut self) {
        self.entries.retain(|_, o| !o.set.is_empty());
    }

    /// Merges the oldest update entries into `ancient-changes` (one per apiVersion) until at
    /// most [`MAX_UPDATE_MANAGERS`] remain.
    fn cap_updaters(&mut self) {
        let mut updaters: Vec<ManagerId> =
            self.entries.keys().filter(|id| id.operation == Operation::Update).cloned().collect();
        if updaters.len() <= MAX_UPDATE_MANAGERS {
            return;
        }
        updaters.sort_by(|a, b| {
            let time = |id: &ManagerId| self.entries[id].time.clone().unwrap_or_default();
            time(a).cmp(&time(b)).then_with(|| a.cmp(b))
        });
        let mut first_by_version: BTreeMap<String, ManagerId> = BTreeMap::new();
        let mut count = updaters.len();
        for id in updaters {
            if count <= MAX_UPDATE_MANAGERS {
                break;
            }
            let owned = self.entries[&id].clone();
            let bucket = ManagerId {
                manager: ANCIENT_CHANGES.into(),
                operation: Operation::Update,
                api_version: owned.api_version.clone(),
                subresource: String::new(),
            };
            if id == bucket {
                // The bucket itself: older entries merge into it, it does not merge away.
                first_by_version.entry(owned.api_version.clone()).or_insert(id);
                continue;
            }
            match first_by_version.get(&owned.api_version) {
                Some(first) => {
                    if !self.entries.contains_key(&bucket) {
                        let moved = self.entries.remove(first).expect("the first of its version");
                        self.entries.insert(bucket.clone(), moved);
                    }
                    self.entries.remove(&id);
                    let b = self.entries.get_mut(&bucket).expect("just made");
                    b.set = owned.set.union(&b.set);
                    b.time = owned.time;
                    count -= 1;
                }
                None => {
                    first_by_version.insert(owned.api_version.clone(), id);
                }
            }
        }
    }

    /// The union of every manager's fields.
    fn all(&self) -> FieldSet {
        self.entries.values().fold(FieldSet::default(), |acc, o| acc.union(&o.set))
    }
}

/// Fields that are the server's to set, never a manager's (kube's `stripMeta`).
fn strip_meta(set: &FieldSet) -> FieldSet {
    let f = |n: &str| PathElement::Field(n.to_string());
    let mut strip = FieldSet::default();
    for top in ["apiVersion", "kind", "metadata"] {
        strip.insert(&[f(top)]);
    }
    for meta in [
        "name",
        "namespace",
        "creationTimestamp",
        "selfLink",
        "uid",
        "clusterName",
        "generation",
        "managedFields",
        "resourceVersion",
    ] {
        strip.insert(&[f("metadata"), f(meta)]);
    }
    set.difference(&strip)
}

/// What a write may not change, and so neither own nor take from others: kube's reset
/// fields, each a path of field names (`["status"]`, `["metadata", "labels"]`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Scope(pub ResetFields);

impl Scope {
    /// Everything may change.
    pub const ALL: Scope = Scope(&[]);

    fn restrict(self, mut set: FieldSet) -> FieldSet {
        for path in self.0 {
            let path: Vec<PathElement> = path.iter().map(|f| PathElement::Field((*f).to_string())).collect();
            set.remove_path(&path);
        }
        set
    }
}

/// A write's field manager: the kind's schema and where the write goes.
#[derive(Clone, Copy, Debug)]
pub struct FieldManager<'a> {
    /// The kind's schema (`None`: maps granular, lists atomic).
    pub node: Option<Node<'a>>,
    /// The kind's `group/version` (`v1` for the core group).
    pub api_version: &'a str,
    /// The kind.
    pub kind: &'a str,
    /// The subresource written through, empty for the resource.
    pub subresource: &'a str,
    /// What a write here may own.
    pub scope: Scope,
    /// The write's time (RFC 3339, seconds).
    pub now: &'a str,
}

/// The default manager of a write without `fieldManager`: the User-Agent up to its first `/`,
/// printable characters only, at most 128 bytes (kube's `prefixFromUserAgent`).
pub fn manager_from_user_agent(user_agent: &str) -> String {
    let prefix = user_agent.split('/').next().unwrap_or_default();
    let mut out = String::new();
    for c in prefix.chars().filter(|c| !c.is_control()) {
        if out.len() + c.len_utf8() > 128 {
            break;
        }
        out.push(c);
    }
    out
}

/// Whether a write's `managedFields` asks for them to be reset (`[]` or `[{}]`).
fn asks_reset(object: &Value) -> bool {
    match object.pointer("/metadata/managedFields").and_then(Value::as_array) {
        Some(list) => list.is_empty() || (list.len() == 1 && list[0].as_object().is_some_and(Map::is_empty)),
        None => false,
    }
}

/// The "live object" of a create, as kube's field manager has it: the Go zero value of the
/// kind as its unstructured converter writes it (values present, structs as objects, some nil
/// fields `null`), or for a kind without Go types (a custom resource) an object holding only
/// its apiVersion and kind.
fn zero_object(api_version: &str, kind: &str) -> Cow<'static, Value> {
    let schema = protobuf::Schema::global();
    match schema.message_for(api_version, kind) {
        Some(id) => Cow::Borrowed(protobuf::go_zero::built_in(id)),
        None => Cow::Owned(json!({"apiVersion": api_version, "kind": kind})),
    }
}

impl FieldManager<'_> {
    /// kube's 500 for a configuration the schema cannot take, naming the object and its kind.
    fn typed_error(&self, config: &Value, e: String) -> ApiError {
        let meta = |k: &str| config.pointer(&format!("/metadata/{k}")).and_then(Value::as_str).unwrap_or_default();
        ApiError::unknown(format!(
            "failed to create typed patch object ({}/{}; {}): {e}",
            meta("namespace"),
            meta("name"),
            gvk_string(self.api_version, self.kind)
        ))
    }

    /// kube's 500 for an apply configuration that is not a valid typed object: a field the
    /// schema does not declare (whatever `fieldValidation` says), a list repeating a key.
    pub fn check_config(&self, config: &Value) -> Result<(), ApiError> {
        fieldpath::check_keys(config, self.node).map_err(|e| self.typed_error(config, e))
    }

    /// Records an update (create when `live` is `None`) by `manager` into `new`'s
    /// `managedFields`. `new` is the object about to be stored.
    pub fn update(&self, live: Option<&Value>, new: &mut Value, manager: &str) {
        let managed = match live {
            Some(live) if !self.subresource.is_empty() => Managed::decode(live),
            _ if asks_reset(new) => Ok(Managed::default()),
            _ => match Managed::decode(new) {
                Ok(m) if !m.entries.is_empty() => Ok(m),
                _ => live.map_or_else(|| Ok(Managed::default()), Managed::decode),
            },
        };
        let Ok(mut managed) = managed else {
            // Unreadable entries leave the write untracked, as kube leaves it.
            return;
        };
        strip_managed_fields(new);
        // Updates of objects nobody tracks stay untracked; creates start tracking.
        if managed.entries.is_empty() && live.is_some() {
            return;
        }
        // The comparison passes over `live`'s managed fields, so `live` is not copied to drop them.
        let zero;
        let before = match live {
            Some(live) => live,
            None => {
                zero = zero_object(self.api_version, self.kind);
                &*zero
            }
        };
        self.record_update(&mut managed, before, new, manager);
        managed.cap_updaters();
        managed.encode_into(new);
    }

    fn record_update(&self, managed: &mut Managed, before: &Value, after: &Value, manager: &str) {
        // What the write may not change (kube's reset fields) neither moves nor removes
        // anyone's ownership.
        let cmp = fieldpath::compare(before, after, self.node);
        let changed = self.scope.restrict(cmp.modified.union(&cmp.added));
        let removed = self.scope.restrict(cmp.removed);
        for owned in managed.entries.values_mut() {
            owned.set.subtract(&changed);
            owned.set.subtract(&removed);
        }
        managed.prune_empty();
        let set = strip_meta(&changed);
        if set.is_empty() {
            return;
        }
        let id = ManagerId {
            manager: manager.to_string(),
            operation: Operation::Update,
            api_version: self.api_version.to_string(),
            subresource: self.subresource.to_string(),
        };
        let previous = managed.entries.remove(&id).map(|o| o.set).unwrap_or_default();
        // kube's `/scale` entries carry no time: they are rebuilt from the Scale's own entries,
        // which the conversion leaves without one.
        let time = (self.subresource != "scale").then(|| self.now.to_string());
        let owned = Owned { set: set.union(&previous), api_version: self.api_version.to_string(), time };
        managed.entries.insert(id, owned);
    }

    /// Applies `config` by `manager` to `live` (`None`: create on apply) and returns the
    /// object to store with its `managedFields`, or a 409 naming the conflicts.
    pub fn apply(&self, live: Option<&Value>, config: &Value, manager: &str, force: bool) -> Result<Value, ApiError> {
        check_type(config, self.api_version, self.kind)?;
        if config.pointer("/metadata/managedFields").is_some_and(|m| !m.is_null()) {
            return Err(ApiError::bad_request("metadata.managedFields must be nil"));
        }
        // The configuration must be a valid typed object before anything merges it.
        self.check_config(config)?;
        let mut live = live.cloned().unwrap_or_else(|| json!({}));
        let mut managed =
            Managed::decode(&live).map_err(|e| ApiError::internal(format!("failed to decode managed fields: {e}")))?;
        strip_managed_fields(&mut live);
        if managed.entries.is_empty() && live.pointer("/metadata/uid").is_some() {
            // An object nobody tracks: what it holds belongs to an updater of its own, so an
            // apply changing it conflicts instead of silently taking it.
            self.record_update(&mut managed, &zero_object(self.api_version, self.kind), &live, BEFORE_FIRST_APPLY);
        }
        let mut config = config.clone();
        strip_managed_fields(&mut config);
        let outcome = match self.apply_once(&live, &config, managed.clone(), manager, force) {
            Err(Refusal::Conflicts(conflicts)) if manager == KUBECTL && !force => {
                // kubectl switching an object from client-side apply: conflicts over fields its
                // last-applied configuration holds, with the live values, are its own.
                match self.allowed_by_last_applied(&live) {
                    Some(allowed) if conflicts.iter().all(|(_, path)| allowed.contains(path)) => {
                        self.apply_once(&live, &config, managed, manager, true)
                    }
                    Some(allowed) => {
                        Err(Refusal::Conflicts(conflicts.into_iter().filter(|(_, p)| !allowed.contains(p)).collect()))
                    }
                    None => Err(Refusal::Conflicts(conflicts)),
                }
            }
            other => other,
        };
        let (mut object, managed) = outcome.map_err(|refusal| match refusal {
            Refusal::Conflicts(conflicts) => conflict_error(conflicts),
            Refusal::Typed(e) => self.typed_error(&config, e),
        })?;
        let has_last_applied = object
            .pointer("/metadata/annotations")
            .and_then(|a| a.get(LAST_APPLIED))
            .and_then(Value::as_str)
            .is_some_and(|t| !t.is_empty());
        if manager == KUBECTL && has_last_applied {
            let mut applied = config.clone();
            if let Some(a) = applied.pointer_mut("/metadata/annotations").and_then(Value::as_object_mut) {
                a.remove(LAST_APPLIED);
                if a.is_empty() {
                    applied["metadata"].as_object_mut().map(|m| m.remove("annotations"));
                }
            }
            let text = format!("{}\n", crate::gofmt::go_json(&applied));
            object["metadata"]["annotations"][LAST_APPLIED] = text.into();
        }
        let mut managed = managed;
        managed.cap_updaters();
        managed.encode_into(&mut object);
        Ok(object)
    }

    /// One apply: the merged, pruned object and the new entries, or the conflicts.
    fn apply_once(
        &self,
        live: &Value,
        config: &Value,
        mut managed: Managed,
        manager: &str,
        force: bool,
    ) -> Result<(Value, Managed), Refusal> {
        let id = ManagerId {
            manager: manager.to_string(),
            operation: Operation::Apply,
            api_version: String::new(),
            subresource: self.subresource.to_string(),
        };
        let merged = fieldpath::merge(live, config, self.node).map_err(Refusal::Typed)?;
        let last = managed.entries.get(&id).map(|o| o.set.clone());
        // Pruning sees the configuration's whole set, identity fields included, as kube's
        // merge does beneath its meta-stripping layer: that is what keeps `metadata` (owned
        // through its name) when the last label or annotation the applier owned goes.
        let applied = self.scope.restrict(FieldSet::of_applied(config, self.node));
        let previous_time = managed.entries.get(&id).and_then(|o| o.time.clone());
        managed.entries.insert(
            id.clone(),
            Owned { set: applied.clone(), api_version: self.api_version.into(), time: previous_time },
        );
        let new = match &last {
            Some(last) if !last.is_empty() => self.prune(&merged, &managed, last),
            _ => merged,
        };
        if let Some(o) = managed.entries.get_mut(&id) {
            o.set = strip_meta(&applied);
        }
        // Conflicts: another manager's fields this apply changes.
        // What the write may not change (kube's reset fields) is no one's conflict.
        let cmp = fieldpath::compare(live, &new, self.node);
        let changed = self.scope.restrict(cmp.modified.union(&cmp.added));
        let removed = self.scope.restrict(cmp.removed);
        let mut conflicts = Vec::new();
        for (other, owned) in &managed.entries {
            if *other == id {
                continue;
            }
            let clash = owned.set.intersection(&changed);
            for path in clash.iterate() {
                conflicts.push((other.clone(), path));
            }
        }
        if !conflicts.is_empty() && !force {
            return Err(Refusal::Conflicts(conflicts));
        }
        for (other, owned) in managed.entries.iter_mut() {
            if *other != id {
                owned.set.subtract(&changed);
                owned.set.subtract(&removed);
            }
        }
        managed.prune_empty();
        if new != *live
            && let Some(o) = managed.entries.get_mut(&id)
        {
            o.time = Some(self.now.to_string());
        }
        Ok((new, managed))
    }

    /// Removes what the applier owned last time and no longer applies, unless someone else
    /// (or its new configuration) owns it (structured-merge-diff's `prune`).
    fn prune(&self, merged: &Value, managed: &Managed, last: &FieldSet) -> Value {
        let named = |s: &FieldSet| fieldpath::with_named_members(s, self.node);
        let last = named(last);
        let pruned = fieldpath::remove_items(merged, &last, self.node);
        let merged_set = named(&FieldSet::of_applied(merged, self.node));
        // Add back what anyone owns.
        let owned = named(&managed.all());
        let pruned_set = named(&FieldSet::of_applied(&pruned, self.node));
        let pruned = fieldpath::remove_items(merged, &merged_set.difference(&pruned_set.union(&owned)), self.node);
        // Remove only what the applier owned.
        let pruned_set = named(&FieldSet::of_applied(&pruned, self.node));
        fieldpath::remove_items(merged, &merged_set.difference(&pruned_set).intersection(&last), self.node)
    }

    /// The fields of the live object's last-applied configuration that still hold the values
    /// it applied (kube's `allowedConflictsFromLastApplied`).
    fn allowed_by_last_applied(&self, live: &Value) -> Option<FieldSet> {
        let text = live.pointer("/metadata/annotations")?.get(LAST_APPLIED)?.as_str()?;
        let last: Value = serde_json::from_str(text).ok()?;
        if last.get("apiVersion").and_then(Value::as_str) != Some(self.api_version) {
            return None;
        }
        let set = FieldSet::of_applied(&last, self.node);
        let cmp = fieldpath::compare(&last, live, self.node);
        Some(set.difference(&cmp.modified).difference(&cmp.added).difference(&cmp.removed))
    }
}

/// Removes `metadata.managedFields` (an apply configuration may not set them; an update's
/// are read before).
fn strip_managed_fields(object: &mut Value) {
    if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("managedFields");
    }
}

/// Why an apply was refused.
enum Refusal {
    /// Fields other managers own that the apply would change.
    Conflicts(Vec<(ManagerId, Vec<PathElement>)>),
    /// A configuration the schema cannot take (a repeated list key).
    Typed(String),
}

/// kube's 409 for an apply's conflicts (`NewConflictError`).
fn conflict_error(conflicts: Vec<(ManagerId, Vec<PathElement>)>) -> ApiError {
    let causes: Vec<Cause> = conflicts
        .iter()
        .map(|(id, path)| Cause {
            reason: "FieldManagerConflict".into(),
            message: format!("conflict with {}", id.describe()),
            field: display_path(path),
        })
        .collect();
    let message = if let [(id, path)] = conflicts.as_slice() {
        format!("Apply failed with 1 conflict: conflict with {}: {}", id.describe(), display_path(path))
    } else {
        let mut by_manager: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (id, path) in &conflicts {
            by_manager.entry(id.describe()).or_default().push(display_path(path));
        }
        let mut lines = Vec::new();
        for (manager, paths) in by_manager {
            lines.push(format!("conflicts with {manager}:"));
            lines.extend(paths.into_iter().map(|p| format!("- {p}")));
        }
        format!("Apply failed with {} conflicts: {}", conflicts.len(), lines.join("\n"))
    };
    let mut e = ApiError::new(Reason::Conflict, message);
    e.causes = causes;
    e
}

/// Go's `GroupVersionKind.String()`: `apps/v1, Kind=Deployment`, `/v1, Kind=ConfigMap`.
fn gvk_string(api_version: &str, kind: &str) -> String {
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    format!("{group}/{version}, Kind={kind}")
}

/// The 400 for an apply configuration of another kind than the resource's (kube's version
/// check).
pub fn check_type(config: &Value, api_version: &str, kind: &str) -> Result<(), ApiError> {
    let text = |k: &str| config.get(k).and_then(Value::as_str).unwrap_or_default();
    if (text("apiVersion"), text("kind")) == (api_version, kind) {
        return Ok(());
    }
    Err(ApiError::bad_request(format!("invalid object type: {}", gvk_string(text("apiVersion"), text("kind")))))
}
