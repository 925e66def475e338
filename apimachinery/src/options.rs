//! The query parameters of each verb, parsed and validated once, where a request enters, into
//! types every stage after the gateway works with.
//!
//! kube-apiserver decodes them into `metav1.GetOptions`, `ListOptions`, `CreateOptions`... and
//! validates each with `ValidateListOptions`, `ValidateCreateOptions` and friends: a bad value is
//! 422 Invalid on the options kind (`ListOptions.meta.k8s.io "" is invalid: ...`), a value that
//! does not decode is 400. The same rules and wording are here, so no stage re-parses a string
//! and no two stages disagree about one.

use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use crate::catalogue::ResourceDef;
use crate::error::{ApiError, Cause};
use crate::selector::{FieldSelector, LabelSelector};
use crate::validation::field::{self, Bad, Path};

/// A revision of the store: `resourceVersion` on the wire.
pub type Revision = u64;

/// Query parameters in the order sent; the first value of a repeated key wins, as Go's
/// `url.Values.Get` reads them.
#[derive(Clone, Debug, Default)]
pub struct Params(Vec<(String, String)>);

impl Params {
    /// Parameters from decoded `(key, value)` pairs.
    pub fn new(pairs: Vec<(String, String)>) -> Self {
        Params(pairs)
    }

    /// The first value of `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    /// The first value of `key`, `None` when absent or empty (Go's zero value).
    pub fn non_empty(&self, key: &str) -> Option<&str> {
        self.get(key).filter(|v| !v.is_empty())
    }

    /// Replaces every value of `key` with `value`.
    pub fn set(&mut self, key: &str, value: &str) {
        self.0.retain(|(k, _)| k != key);
        self.0.push((key.to_string(), value.to_string()));
    }

    /// Every value of `key`.
    pub fn all(&self, key: &str) -> Vec<&str> {
        self.0.iter().filter(|(k, _)| k == key).map(|(_, v)| v.as_str()).collect()
    }

    /// Whether boolean `key` is set, as kube's parameter decoding reads one: present with any
    /// value but `0` or `false` (in any case) is true, `watch=` and `watch=yes` included; the
    /// Python client sends `watch=True`.
    pub fn flag(&self, key: &str) -> bool {
        self.bool(key).unwrap_or(false)
    }

    /// An optional boolean (`sendInitialEvents`, `orphanDependents`): `None` when absent, else as
    /// [`flag`](Self::flag) reads it.
    fn bool(&self, key: &str) -> Option<bool> {
        self.get(key).map(|v| !(v == "0" || v.eq_ignore_ascii_case("false")))
    }
}

/// How a read is answered, from `resourceVersion` and `resourceVersionMatch`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum ReadAt {
    /// No resourceVersion: the latest state, as a quorum read would see it.
    #[default]
    Latest,
    /// `resourceVersion=0`: any state the server holds (the cache's, however old).
    Any,
    /// `resourceVersion=N` (match `NotOlderThan` or unset): a state at least as new as N. For a
    /// watch: the events after N.
    NotOlderThan(Revision),
    /// `resourceVersion=N&resourceVersionMatch=Exact`: the state at exactly N (lists only).
    Exact(Revision),
}

impl ReadAt {
    /// The revision a read must reach, if it names one.
    pub fn revision(self) -> Option<Revision> {
        match self {
            ReadAt::NotOlderThan(n) | ReadAt::Exact(n) => Some(n),
            ReadAt::Latest | ReadAt::Any => None,
        }
    }
}

fn parse_revision(rv: &str) -> Result<Revision, ApiError> {
    // `strconv.ParseUint`: digits only (Rust's parse would also take a leading `+`).
    let digits = rv.bytes().all(|b| b.is_ascii_digit());
    rv.parse::<Revision>().ok().filter(|_| digits).ok_or_else(|| {
        ApiError::bad_request(format!("resourceVersion: Invalid value: \"{rv}\": must be a non-negative integer"))
    })
}

/// Label and field selectors, parsed, the field selector converted to the resource's canonical
/// field labels. Crosses processes as the two strings.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Selection {
    /// `labelSelector`.
    pub labels: LabelSelector,
    /// `fieldSelector`, validated for the resource.
    pub fields: FieldSelector,
}

impl Selection {
    /// Everything.
    pub fn everything() -> Self {
        Selection::default()
    }

    /// Parses `labelSelector` and `fieldSelector` for `def` (400 with kube's message).
    pub fn parse(q: &Params, def: &ResourceDef) -> Result<Self, ApiError> {
        let labels = LabelSelector::parse(q.get("labelSelector").unwrap_or(""))?;
        let fields = FieldSelector::parse(q.get("fieldSelector").unwrap_or(""))?.validate_for(def.field_labels())?;
        Ok(Selection { labels, fields })
    }

    /// Whether it selects everything.
    pub fn is_everything(&self) -> bool {
        self.labels.is_empty() && self.fields.is_empty()
    }
}

impl Serialize for Selection {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        (self.labels.to_string(), self.fields.to_string()).serialize(s)
    }
}

impl<'de> Deserialize<'de> for Selection {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let (labels, fields) = <(String, String)>::deserialize(d)?;
        Ok(Selection {
            labels: LabelSelector::parse_message(&labels).map_err(serde::de::Error::custom)?,
            fields: FieldSelector::parse_message(&fields).map_err(serde::de::Error::custom)?,
        })
    }
}

/// `metav1.GetOptions`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GetOptions {
    /// `resourceVersion`.
    pub read_at: ReadAt,
}

impl GetOptions {
    /// Parses a get's query.
    pub fn parse(q: &Params) -> Result<Self, ApiError> {
        let read_at = match q.non_empty("resourceVersion") {
            None => ReadAt::Latest,
            Some("0") => ReadAt::Any,
            Some(rv) => ReadAt::NotOlderThan(parse_revision(rv)?),
        };
        Ok(GetOptions { read_at })
    }
}

fn invalid_options(kind: &str, causes: Vec<Cause>) -> ApiError {
    ApiError::invalid("meta.k8s.io", kind, "", causes)
}

/// Where a paged list continues: kube's continue token, base64url (unpadded) JSON
/// `{"v":"meta.k8s.io/v1","rv":N,"start":"<key>"}` with `start` relative to the listed
/// prefix, so every page reads the store as it was at revision N.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContinueToken {
    /// The revision every page reads at; `None` for the latest (a token handed out after the
    /// original revision was compacted).
    pub revision: Option<Revision>,
    /// The key the next page starts at, relative to the listed prefix.
    pub start: String,
}

#[derive(Serialize, Deserialize)]
struct TokenWire {
    v: String,
    rv: i64,
    start: String,
}

impl ContinueToken {
    /// The token's wire form.
    pub fn encode(&self) -> String {
        use base64::Engine;
        let rv = self.revision.map_or(-1, |r| r as i64);
        let wire = TokenWire { v: "meta.k8s.io/v1".into(), rv, start: self.start.clone() };
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(serde_json::to_vec(&wire).expect("token serializes"))
    }

    /// Decodes a `continue` parameter (400 with kube's message when it is not one).
    pub fn decode(token: &str) -> Result<Self, ApiError> {
        use base64::Engine;
        let invalid =
            |why: &str| ApiError::bad_request(format!("invalid continue token: continue key is not valid: {why}"));
        let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(token.trim_end_matches('='))
            .map_err(|e| invalid(&e.to_string()))?;
        let t: TokenWire = serde_json::from_slice(&bytes).map_err(|e| invalid(&e.to_string()))?;
        if t.v != "meta.k8s.io/v1" {
            return Err(invalid(&format!("incorrect encoded start resourceVersion (version {})", t.v)));
        }
        if t.start.is_empty() {
            return Err(invalid("encoded start key empty"));
        }
        // Keys are paths: a token must not climb out of the listed prefix.
        if t.start.split('/').any(|seg| seg == ".." || seg == ".") || t.start.starts_with('/') {
            return Err(invalid("path traversal attempt detected"));
        }
        match t.rv {
            -1 => Ok(ContinueToken { revision: None, start: t.start }),
            rv if rv > 0 => Ok(ContinueToken { revision: Some(rv as Revision), start: t.start }),
            _ => Err(invalid("incorrect encoded start resourceVersion (version meta.k8s.io/v1)")),
        }
    }
}

/// `metav1.ListOptions` of a list (or of a deletecollection's selection).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListOptions {
    /// Which objects.
    pub selection: Selection,
    /// `resourceVersion` and `resourceVersionMatch` (ignored when continuing).
    pub read_at: ReadAt,
    /// `limit`, 0 for none.
    pub limit: usize,
    /// `continue`.
    pub continue_token: Option<ContinueToken>,
}

impl ListOptions {
    /// Parses and validates a list's query for `def`, as kube's `ValidateListOptions` and its
    /// storage layer do.
    pub fn parse(q: &Params, def: &ResourceDef) -> Result<Self, ApiError> {
        let rv = q.non_empty("resourceVersion");
        let rv_match = q.non_empty("resourceVersionMatch");
        let continue_param = q.non_empty("continue");
        let mut causes = Vec::new();
        let path = Path::new("resourceVersionMatch");
        if let Some(m) = rv_match {
            if rv.is_none() {
                causes.push(field::forbidden(
                    &path,
                    "resourceVersionMatch is forbidden unless resourceVersion is provided",
                ));
            }
            if continue_param.is_some() {
                causes.push(field::forbidden(&path, "resourceVersionMatch is forbidden when continue is provided"));
            }
            if m != "Exact" && m != "NotOlderThan" {
                causes.push(field::not_supported(&path, Bad::s(m), &["Exact", "NotOlderThan", ""]));
            }
            if m == "Exact" && rv == Some("0") {
                causes.push(field::forbidden(
                    &path,
                    "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
                ));
            }
        }
        if q.get("sendInitialEvents").is_some() {
            causes.push(field::forbidden(&Path::new("sendInitialEvents"), "sendInitialEvents is forbidden for list"));
        }
        if !causes.is_empty() {
            return Err(invalid_options("ListOptions", causes));
        }
        let continue_token = continue_param.map(ContinueToken::decode).transpose()?;
        if continue_token.is_some() && rv.is_some_and(|rv| rv != "0") {
            return Err(ApiError::bad_request("specifying resource version is not allowed when using continue"));
        }
        let read_at = match (rv, rv_match) {
            (None, _) => ReadAt::Latest,
            (Some("0"), _) => ReadAt::Any,
            (Some(rv), Some("Exact")) => ReadAt::Exact(parse_revision(rv)?),
            (Some(rv), _) => ReadAt::NotOlderThan(parse_revision(rv)?),
        };
        let limit = match q.non_empty("limit") {
            None => 0,
            Some(l) => l
                .parse::<i64>()
                .map(|n| n.max(0) as usize)
                .map_err(|_| ApiError::bad_request(format!("limit: Invalid value: \"{l}\"")))?,
        };
        Ok(ListOptions { selection: Selection::parse(q, def)?, read_at, limit, continue_token })
    }

    /// Everything, read as `read_at`, unpaged.
    pub fn everything(read_at: ReadAt) -> Self {
        ListOptions { read_at, ..Default::default() }
    }
}

/// `metav1.ListOptions` of a watch.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WatchOptions {
    /// Which objects.
    pub selection: Selection,
    /// Where the watch starts: the current state first (`Latest`, `Any`), or the events after a
    /// revision (`NotOlderThan`).
    pub read_at: ReadAt,
    /// `allowWatchBookmarks`.
    pub allow_bookmarks: bool,
    /// `sendInitialEvents`.
    pub send_initial_events: Option<bool>,
    /// `timeoutSeconds`, as the client sent it.
    pub timeout_seconds: Option<u64>,
}

impl WatchOptions {
    /// Parses and validates a watch's query for `def`, as kube's `ValidateListOptions` does for
    /// a watch. `sendInitialEvents` is served (kube's `WatchList`, alpha in 1.30) without the
    /// feature-gate refusal of a 1.30 server that has it off, and legacy watches are not
    /// defaulted to it.
    pub fn parse(q: &Params, def: &ResourceDef) -> Result<Self, ApiError> {
        let rv = q.non_empty("resourceVersion");
        let rv_match = q.non_empty("resourceVersionMatch");
        let send_initial_events = q.bool("sendInitialEvents");
        let path = Path::new("resourceVersionMatch");
        let mut causes = Vec::new();
        if send_initial_events.is_some() && rv_match != Some("NotOlderThan") {
            causes.push(field::forbidden(
                &path,
                "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
            ));
        }
        if let Some(m) = rv_match {
            if send_initial_events.is_none() {
                causes.push(field::forbidden(
                    &path,
                    "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
                ));
            }
            if m != "NotOlderThan" {
                causes.push(field::not_supported(&path, Bad::s(m), &["NotOlderThan"]));
            }
            if q.non_empty("continue").is_some() {
                causes.push(field::forbidden(&path, "resourceVersionMatch is forbidden when continue is provided"));
            }
        }
        if !causes.is_empty() {
            return Err(invalid_options("ListOptions", causes));
        }
        let read_at = match rv {
            None => ReadAt::Latest,
            Some("0") => ReadAt::Any,
            Some(rv) => ReadAt::NotOlderThan(parse_revision(rv)?),
        };
        // As kube: zero is the server's default; a negative timeout ends the watch at once.
        let timeout_seconds = match q.non_empty("timeoutSeconds") {
            None => None,
            // Wider than kube's int64, so a timeout past any clock is served as "never", not 400.
            Some(t) => match t.parse::<i128>() {
                Ok(0) => None,
                Ok(n) => Some(n.clamp(0, u64::MAX as i128) as u64),
                Err(_) => return Err(ApiError::bad_request(format!("timeoutSeconds: Invalid value: \"{t}\""))),
            },
        };
        Ok(WatchOptions {
            selection: Selection::parse(q, def)?,
            read_at,
            allow_bookmarks: q.flag("allowWatchBookmarks"),
            send_initial_events,
            timeout_seconds,
        })
    }
}

/// `?fieldValidation=`: what to do with unknown or duplicate fields.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum FieldValidation {
    /// Drop them silently.
    Ignore,
    /// Drop them and warn (the server default).
    #[default]
    Warn,
    /// Reject the request.
    Strict,
}

/// Which write a [`WriteOptions`] belongs to: its errors name that verb's options kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriteVerb {
    /// POST.
    Create,
    /// PUT.
    Update,
    /// PATCH.
    Patch,
    /// PATCH with a server-side apply body.
    Apply,
}

/// `metav1.CreateOptions`, `UpdateOptions` and `PatchOptions` (the same fields, and apply's
/// `force`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WriteOptions {
    /// `dryRun=All`.
    pub dry_run: bool,
    /// `fieldValidation`.
    pub field_validation: FieldValidation,
    /// `fieldManager`.
    pub field_manager: Option<String>,
    /// `force` of an apply: take the fields other managers own.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub force: bool,
    /// The manager a write without `fieldManager` is recorded under (from its User-Agent).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub agent_manager: String,
    /// The body's object keys in document order, when it repeats a key (what `fieldValidation`
    /// reports as duplicate fields, a parsed object having merged them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub body_keys: Vec<(String, bool)>,
    /// A YAML body's repeated keys as go-yaml reports them (`line 9: key "replicas" already
    /// set in map`): kube's YAML decoder names lines, not paths.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub yaml_repeats: Vec<String>,
    /// The object's resourceVersion in the watch cache of the server that took the request, as
    /// it stood then: an update may start from the storage stage's own copy of the object only
    /// if the cache holds no newer version (so the copy is as fresh as kube's start from its
    /// watch cache).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_revision: Option<u64>,
}

fn dry_run(q: &Params, path: &Path, causes: &mut Vec<Cause>) -> bool {
    let values = q.all("dryRun");
    if values.iter().any(|v| *v != "All") {
        let rendered = values.iter().map(|v| crate::gofmt::quote(v)).collect::<Vec<_>>().join(", ");
        causes.push(field::not_supported(path, Bad::Raw(format!("[]string{{{rendered}}}")), &["All"]));
    }
    !values.is_empty()
}

/// kube's `FieldManagerMaxLength`.
const FIELD_MANAGER_MAX_LENGTH: usize = 128;

impl WriteOptions {
    /// The options as an AdmissionReview carries them: `kind` is `CreateOptions`,
    /// `UpdateOptions` or `PatchOptions` (kube passes the request's own options kind).
    pub fn review_form(&self, kind: &str) -> Value {
        let mut options = serde_json::json!({"kind": kind, "apiVersion": "meta.k8s.io/v1"});
        if self.dry_run {
            options["dryRun"] = serde_json::json!(["All"]);
        }
        if let Some(manager) = &self.field_manager {
            options["fieldManager"] = manager.as_str().into();
        }
        options["fieldValidation"] = match self.field_validation {
            FieldValidation::Ignore => "Ignore",
            FieldValidation::Warn => "Warn",
            FieldValidation::Strict => "Strict",
        }
        .into();
        options
    }

    /// The manager the write is recorded under: its `fieldManager`, else the one its
    /// User-Agent names, else `kube-apiserver` (the server's own controllers, which kube's
    /// loopback client names so).
    pub fn manager(&self) -> &str {
        match (&self.field_manager, self.agent_manager.as_str()) {
            (Some(m), _) => m,
            (None, "") => "kube-apiserver",
            (None, agent) => agent,
        }
    }

    /// Parses and validates a write's query, as kube's `Validate{Create,Update,Patch}Options`.
    pub fn parse(q: &Params, verb: WriteVerb) -> Result<Self, ApiError> {
        let mut causes = Vec::new();
        if verb == WriteVerb::Patch && q.get("force").is_some() {
            causes.push(field::forbidden(&Path::new("force"), "may not be specified for non-apply patch"));
        }
        let manager = q.non_empty("fieldManager");
        if verb == WriteVerb::Apply && manager.is_none() {
            causes.push(field::required(&Path::new("fieldManager"), "is required for apply patch"));
        }
        if let Some(m) = manager {
            let path = Path::new("fieldManager");
            if m.len() > FIELD_MANAGER_MAX_LENGTH {
                causes.push(field::too_long(&path, FIELD_MANAGER_MAX_LENGTH));
            }
            for (i, c) in m.char_indices() {
                if c.is_control() {
                    let detail = format!("invalid character U+{:04X} (at position {i})", c as u32);
                    causes.push(field::invalid(&path, Bad::s(m), &detail));
                }
            }
        }
        let dry_run = dry_run(q, &Path::new("dryRun"), &mut causes);
        let field_validation = match q.get("fieldValidation").unwrap_or("") {
            "" | "Warn" => FieldValidation::Warn,
            "Ignore" => FieldValidation::Ignore,
            "Strict" => FieldValidation::Strict,
            other => {
                causes.push(field::not_supported(
                    &Path::new("fieldValidation"),
                    Bad::s(other),
                    &["", "Ignore", "Strict", "Warn"],
                ));
                FieldValidation::Warn
            }
        };
        if !causes.is_empty() {
            let kind = match verb {
                WriteVerb::Create => "CreateOptions",
                WriteVerb::Update => "UpdateOptions",
                WriteVerb::Patch | WriteVerb::Apply => "PatchOptions",
            };
            return Err(invalid_options(kind, causes));
        }
        let force = match q.get("force") {
            // Go's `strconv.ParseBool`, which kube's query decoding uses.
            Some("1" | "t" | "T" | "TRUE" | "true" | "True") => verb == WriteVerb::Apply,
            Some("0" | "f" | "F" | "FALSE" | "false" | "False") | None => false,
            Some(other) => {
                return Err(ApiError::bad_request(format!(
                    "failed to decode query parameter \"force\": strconv.ParseBool: parsing {}: invalid syntax",
                    crate::gofmt::quote(other)
                )));
            }
        };
        Ok(WriteOptions {
            dry_run,
            field_validation,
            field_manager: manager.map(String::from),
            force,
            ..Default::default()
        })
    }
}

/// `propagationPolicy`: what happens to the dependents of a deleted object.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Propagation {
    /// `Orphan`: dependents are kept (the `orphan` finalizer).
    Orphan,
    /// `Background`: the object goes now, the garbage collector deletes dependents after.
    Background,
    /// `Foreground`: the object stays until its dependents are gone (`foregroundDeletion`).
    Foreground,
}

impl Propagation {
    fn parse(s: &str) -> Option<Propagation> {
        match s {
            "Orphan" => Some(Propagation::Orphan),
            "Background" => Some(Propagation::Background),
            "Foreground" => Some(Propagation::Foreground),
            _ => None,
        }
    }
}

/// `metav1.DeleteOptions`, the parts the registry acts on.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeleteOptions {
    /// `gracePeriodSeconds`.
    pub grace_period_seconds: Option<i64>,
    /// `preconditions.uid`.
    pub precondition_uid: Option<String>,
    /// `preconditions.resourceVersion`.
    pub precondition_resource_version: Option<String>,
    /// `propagationPolicy`, or the legacy `orphanDependents` mapped to it.
    pub propagation: Option<Propagation>,
    /// `dryRun=All`.
    pub dry_run: bool,
}

impl DeleteOptions {
    /// The options as an AdmissionReview carries them.
    pub fn review_form(&self) -> Value {
        let mut options = serde_json::json!({"kind": "DeleteOptions", "apiVersion": "meta.k8s.io/v1"});
        if let Some(seconds) = self.grace_period_seconds {
            options["gracePeriodSeconds"] = seconds.into();
        }
        if self.precondition_uid.is_some() || self.precondition_resource_version.is_some() {
            let mut pre = serde_json::Map::new();
            if let Some(uid) = &self.precondition_uid {
                pre.insert("uid".into(), uid.as_str().into());
            }
            if let Some(rv) = &self.precondition_resource_version {
                pre.insert("resourceVersion".into(), rv.as_str().into());
            }
            options["preconditions"] = pre.into();
        }
        if let Some(p) = self.propagation {
            options["propagationPolicy"] = match p {
                Propagation::Orphan => "Orphan",
                Propagation::Background => "Background",
                Propagation::Foreground => "Foreground",
            }
            .into();
        }
        if self.dry_run {
            options["dryRun"] = serde_json::json!(["All"]);
        }
        options
    }

    /// DeleteOptions from the body when there is one (a `DeleteOptions` object), else from the
    /// query, as kube reads them; validated as kube's `ValidateDeleteOptions`.
    pub fn parse(q: &Params, body: Option<&Value>) -> Result<Self, ApiError> {
        // kube's order: the orphan/propagation conflict, the propagation policy, then dryRun.
        let mut dry_run_causes = Vec::new();
        let mut causes = Vec::new();
        let mut opts = DeleteOptions::default();
        let (propagation, orphan) = match body {
            Some(v) => {
                opts.grace_period_seconds = v.get("gracePeriodSeconds").and_then(Value::as_i64);
                opts.precondition_uid = v.pointer("/preconditions/uid").and_then(Value::as_str).map(String::from);
                opts.precondition_resource_version =
                    v.pointer("/preconditions/resourceVersion").and_then(Value::as_str).map(String::from);
                let dry: Vec<&str> = v
                    .get("dryRun")
                    .and_then(Value::as_array)
                    .map_or(Vec::new(), |a| a.iter().filter_map(Value::as_str).collect());
                if dry.iter().any(|d| *d != "All") {
                    let rendered = dry.iter().map(|d| crate::gofmt::quote(d)).collect::<Vec<_>>().join(", ");
                    dry_run_causes.push(field::not_supported(
                        &Path::new("dryRun"),
                        Bad::Raw(format!("[]string{{{rendered}}}")),
                        &["All"],
                    ));
                }
                opts.dry_run = !dry.is_empty();
                (
                    v.get("propagationPolicy").and_then(Value::as_str).map(String::from),
                    v.get("orphanDependents").and_then(Value::as_bool),
                )
            }
            None => {
                if let Some(g) = q.non_empty("gracePeriodSeconds") {
                    opts.grace_period_seconds =
                        Some(g.parse().map_err(|_| {
                            ApiError::bad_request(format!("gracePeriodSeconds: Invalid value: \"{g}\""))
                        })?);
                }
                opts.dry_run = dry_run(q, &Path::new("dryRun"), &mut dry_run_causes);
                (q.non_empty("propagationPolicy").map(String::from), q.bool("orphanDependents"))
            }
        };
        if orphan.is_some() && propagation.is_some() {
            causes.push(field::invalid(
                &Path::new("propagationPolicy"),
                Bad::s(propagation.clone().unwrap_or_default()),
                "orphanDependents and deletionPropagation cannot be both set",
            ));
        }
        opts.propagation = match (&propagation, orphan) {
            (Some(p), _) => match Propagation::parse(p) {
                Some(p) => Some(p),
                None => {
                    causes.push(field::not_supported(
                        &Path::new("propagationPolicy"),
                        Bad::s(p.as_str()),
                        &["Foreground", "Background", "Orphan", "nil"],
                    ));
                    None
                }
            },
            (None, Some(true)) => Some(Propagation::Orphan),
            (None, Some(false)) => Some(Propagation::Background),
            (None, None) => None,
        };
        causes.extend(dry_run_causes);
        if !causes.is_empty() {
            return Err(invalid_options("DeleteOptions", causes));
        }
        Ok(opts)
    }
}

/// `?timeout=`: how long the client lets a request take (`time.ParseDuration` syntax); `None`
/// if absent. 400 with kube's message when it does not parse; zero or negative means "no limit
/// of the client's own" (the server's `--request-timeout` applies).
pub fn request_timeout(q: &Params) -> Result<Option<Duration>, ApiError> {
    let Some(value) = q.non_empty("timeout") else { return Ok(None) };
    match crate::gofmt::parse_duration(value) {
        Ok(nanos) if nanos > 0 => Ok(Some(Duration::from_nanos(nanos.min(u64::MAX as i128) as u64))),
        Ok(_) => Ok(None),
        Err(e) => Err(ApiError::bad_request(format!("invalid timeout specified in the request URL - {e}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(s: &str) -> Params {
        Params::new(
            s.split('&')
                .filter(|p| !p.is_empty())
                .map(|p| {
                    let (k, v) = p.split_once('=').unwrap_or((p, ""));
                    (k.to_string(), v.to_string())
                })
                .collect(),
        )
    }

    fn cms() -> &'static ResourceDef {
        static CMS: std::sync::LazyLock<ResourceDef> = std::sync::LazyLock::new(crate::catalogue::testing::config_maps);
        &CMS
    }

    #[test]
    fn list_resource_versions_read_as_kube_reads_them() {
        let read = |s: &str| ListOptions::parse(&q(s), cms()).unwrap().read_at;
        assert_eq!(read(""), ReadAt::Latest);
        assert_eq!(read("resourceVersion=0"), ReadAt::Any);
        assert_eq!(read("resourceVersion=0&resourceVersionMatch=NotOlderThan"), ReadAt::Any);
        assert_eq!(read("resourceVersion=7"), ReadAt::NotOlderThan(7));
        assert_eq!(read("resourceVersion=7&resourceVersionMatch=Exact"), ReadAt::Exact(7));
    }

    #[test]
    fn resource_versions_are_decimal_digits_only() {
        // Rust's integer parse takes a leading `+`; Go's strconv.ParseUint does not.
        for rv in ["+5", "-5", " 5", "5 "] {
            let err = GetOptions::parse(&q(&format!("resourceVersion={rv}"))).unwrap_err();
            assert_eq!(err.code, 400, "{rv:?}");
            assert!(ListOptions::parse(&q(&format!("resourceVersion={rv}")), cms()).is_err(), "{rv:?}");
        }
        assert_eq!(GetOptions::parse(&q("resourceVersion=007")).unwrap().read_at, ReadAt::NotOlderThan(7));
    }

    #[test]
    fn invalid_list_options_are_422_on_list_options() {
        let e = ListOptions::parse(&q("resourceVersionMatch=Exact"), cms()).unwrap_err();
        assert_eq!((e.code, e.kind.as_deref(), e.group.as_deref()), (422, Some("ListOptions"), Some("meta.k8s.io")));
        assert_eq!(
            e.message,
            "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided"
        );
        let e = ListOptions::parse(&q("resourceVersion=0&resourceVersionMatch=Exact"), cms()).unwrap_err();
        assert!(e.message.ends_with("resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\""), "{e:?}");
        let e = ListOptions::parse(&q("resourceVersion=1&resourceVersionMatch=Newest"), cms()).unwrap_err();
        assert!(
            e.message.ends_with("Unsupported value: \"Newest\": supported values: \"Exact\", \"NotOlderThan\", \"\""),
            "{e:?}"
        );
        let e = ListOptions::parse(&q("sendInitialEvents=true"), cms()).unwrap_err();
        assert!(e.message.ends_with("sendInitialEvents: Forbidden: sendInitialEvents is forbidden for list"));
    }

    #[test]
    fn continue_tokens_round_trip_and_refuse_a_resource_version() {
        let t = ContinueToken { revision: Some(42), start: "default/a\u{0}".into() };
        assert_eq!(ContinueToken::decode(&t.encode()).unwrap(), t);
        let latest = ContinueToken { revision: None, start: "b".into() };
        assert_eq!(ContinueToken::decode(&latest.encode()).unwrap(), latest);
        let both = format!("continue={}&resourceVersion=5", t.encode());
        let e = ListOptions::parse(&q(&both), cms()).unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            (400, "specifying resource version is not allowed when using continue")
        );
        let zero = format!("continue={}&resourceVersion=0", t.encode());
        assert_eq!(ListOptions::parse(&q(&zero), cms()).unwrap().continue_token, Some(t));
    }

    #[test]
    fn malformed_continue_tokens_are_bad_requests() {
        use base64::Engine;
        let b64 = |s: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(s);
        for bad in ["%%%".to_string(), "bm90IGpzb24".to_string(), b64(br#"{"v":"x","rv":1,"start":"a"}"#)] {
            let e = ContinueToken::decode(&bad).unwrap_err();
            assert_eq!(e.code, 400, "{bad}");
            assert!(e.message.starts_with("invalid continue token"), "{}", e.message);
        }
        let climb = b64(br#"{"v":"meta.k8s.io/v1","rv":1,"start":"../secrets/x"}"#);
        assert_eq!(ContinueToken::decode(&climb).unwrap_err().code, 400);
    }

    #[test]
    fn watch_options_follow_kube_validation() {
        let e = WatchOptions::parse(&q("resourceVersion=5&resourceVersionMatch=NotOlderThan"), cms()).unwrap_err();
        assert_eq!(e.code, 422);
        assert!(
            e.message.ends_with("resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided"),
            "{e:?}"
        );
        let e = WatchOptions::parse(&q("sendInitialEvents=true"), cms()).unwrap_err();
        assert!(e.message.ends_with("sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"));
        let w = WatchOptions::parse(
            &q("sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=9"),
            cms(),
        )
        .unwrap();
        assert_eq!((w.send_initial_events, w.allow_bookmarks, w.timeout_seconds), (Some(true), true, Some(9)));
        assert_eq!(WatchOptions::parse(&q("resourceVersion=12"), cms()).unwrap().read_at, ReadAt::NotOlderThan(12));
    }

    #[test]
    fn write_options_are_validated_as_kube_validates_them() {
        let w = WriteOptions::parse(&q("dryRun=All&fieldValidation=Strict&fieldManager=kubectl"), WriteVerb::Create)
            .unwrap();
        assert_eq!(
            (w.dry_run, w.field_validation, w.field_manager.as_deref()),
            (true, FieldValidation::Strict, Some("kubectl"))
        );
        let e = WriteOptions::parse(&q("dryRun=Some&fieldValidation=Loud"), WriteVerb::Update).unwrap_err();
        assert_eq!(
            e.message,
            "UpdateOptions.meta.k8s.io \"\" is invalid: [dryRun: Unsupported value: []string{\"Some\"}: supported values: \"All\", fieldValidation: Unsupported value: \"Loud\": supported values: \"\", \"Ignore\", \"Strict\", \"Warn\"]"
        );
        let e = WriteOptions::parse(&q("force=true"), WriteVerb::Patch).unwrap_err();
        assert!(e.message.ends_with("force: Forbidden: may not be specified for non-apply patch"), "{e:?}");
        let long = format!("fieldManager={}", "m".repeat(129));
        assert!(
            WriteOptions::parse(&q(&long), WriteVerb::Create).unwrap_err().message.contains("fieldManager: Too long")
        );
    }

    #[test]
    fn delete_options_come_from_the_body_or_else_the_query() {
        let body = serde_json::json!({"propagationPolicy": "Foreground", "gracePeriodSeconds": 3, "dryRun": ["All"]});
        let d = DeleteOptions::parse(&q("gracePeriodSeconds=9"), Some(&body)).unwrap();
        assert_eq!((d.propagation, d.grace_period_seconds, d.dry_run), (Some(Propagation::Foreground), Some(3), true));
        let d = DeleteOptions::parse(&q("gracePeriodSeconds=0&orphanDependents=true"), None).unwrap();
        assert_eq!((d.propagation, d.grace_period_seconds), (Some(Propagation::Orphan), Some(0)));
        let e = DeleteOptions::parse(&q("propagationPolicy=Sideways"), None).unwrap_err();
        assert_eq!(
            e.message,
            "DeleteOptions.meta.k8s.io \"\" is invalid: propagationPolicy: Unsupported value: \"Sideways\": supported values: \"Foreground\", \"Background\", \"Orphan\", \"nil\""
        );
        let both = serde_json::json!({"propagationPolicy": "Orphan", "orphanDependents": true});
        assert!(DeleteOptions::parse(&q(""), Some(&both)).unwrap_err().message.contains("cannot be both set"));
    }

    #[test]
    fn booleans_are_true_unless_zero_or_false_as_kube_decodes_them() {
        for (query, set) in [("watch=1", true), ("watch=True", true), ("watch=yes", true), ("watch=", true)] {
            assert_eq!(q(query).flag("watch"), set, "{query}");
        }
        for query in ["watch=0", "watch=false", "watch=FALSE", ""] {
            assert!(!q(query).flag("watch"), "{query}");
        }
        let w = WatchOptions::parse(&q("sendInitialEvents=&resourceVersionMatch=NotOlderThan"), cms()).unwrap();
        assert_eq!(w.send_initial_events, Some(true));
    }

    #[test]
    fn a_zero_watch_timeout_is_the_servers_default_and_a_negative_one_ends_at_once() {
        assert_eq!(WatchOptions::parse(&q("timeoutSeconds=0"), cms()).unwrap().timeout_seconds, None);
        assert_eq!(WatchOptions::parse(&q("timeoutSeconds=-5"), cms()).unwrap().timeout_seconds, Some(0));
        assert_eq!(WatchOptions::parse(&q("timeoutSeconds=30"), cms()).unwrap().timeout_seconds, Some(30));
        assert_eq!(WatchOptions::parse(&q("timeoutSeconds=soon"), cms()).unwrap_err().code, 400);
        let huge = format!("timeoutSeconds={}", u64::MAX);
        assert_eq!(WatchOptions::parse(&q(&huge), cms()).unwrap().timeout_seconds, Some(u64::MAX));
    }

    #[test]
    fn delete_option_causes_come_in_kube_order() {
        let e = DeleteOptions::parse(&q("dryRun=Some&propagationPolicy=Sideways"), None).unwrap_err();
        assert_eq!(e.causes.iter().map(|c| c.field.as_str()).collect::<Vec<_>>(), ["propagationPolicy", "dryRun"]);
    }

    #[test]
    fn request_timeouts_parse_go_durations() {
        assert_eq!(request_timeout(&q("timeout=1m30s")).unwrap(), Some(Duration::from_secs(90)));
        assert_eq!(request_timeout(&q("timeout=250ms")).unwrap(), Some(Duration::from_millis(250)));
        assert_eq!(request_timeout(&q("timeout=0s")).unwrap(), None);
        assert_eq!(request_timeout(&q("")).unwrap(), None);
        let e = request_timeout(&q("timeout=soon")).unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            (400, "invalid timeout specified in the request URL - time: invalid duration \"soon\"")
        );
        assert!(
            request_timeout(&q("timeout=5")).unwrap_err().message.ends_with("time: missing unit in duration \"5\"")
        );
    }

    #[test]
    fn typed_options_cross_processes_intact() {
        let l = ListOptions::parse(&q("labelSelector=app=web&fieldSelector=metadata.name=a&limit=5"), cms());
        let l = l.unwrap();
        let back: ListOptions = rmp_serde::from_slice(&rmp_serde::to_vec_named(&l).unwrap()).unwrap();
        assert_eq!(back, l);
    }
}
