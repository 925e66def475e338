//! Server-side printing: the `meta.k8s.io/v1` `Table` kube-apiserver v1.30 returns when a client
//! asks for `Accept: application/json;as=Table;v=v1;g=meta.k8s.io` (what `kubectl get` sends).
//!
//! Why server-side: kubectl 1.30 has no printers of its own for built-in kinds; it renders the
//! columns and cells the server sends, so `kubectl get pods` looks right only if every cell is
//! computed as kube's `pkg/printers/internalversion` computes it (pod STATUS logic, `2m3s`
//! ages, `80:30080/TCP` ports, ...).
//!
//! # Shape
//! ```json
//! {"kind": "Table", "apiVersion": "meta.k8s.io/v1",
//!  "metadata": {"resourceVersion": "42", "continue": "...", "remainingItemCount": 3},
//!  "columnDefinitions": [{"name": "Name", "type": "string", "format": "name",
//!                         "description": "...", "priority": 0}, ...],
//!  "rows": [{"cells": ["web-1", "1/1", "Running", "0", "5m"],
//!            "conditions": [...],            // pods that Succeeded or Failed only
//!            "object": {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
//!                       "metadata": {...}}}]}
//! ```
//! - The server always prints *wide*: every column, priority 1 included, and every row carries
//!   the wide cells; kubectl hides priority-1 columns unless `-o wide`.
//! - `object` follows `includeObject`: `Metadata` (default) → `PartialObjectMetadata`,
//!   `Object` → the full object, `None` → `null` (kube keeps the key).
//! - Kinds without a printer (roles, clusterroles, anything unknown) get kube's default
//!   convertor (`rest.NewDefaultTableConvertor`): columns `Name` and `Created At` (type `date`),
//!   cells `[name, creationTimestamp in RFC 3339]`; its `rows` is `null` for an empty list,
//!   while the printers' is `[]`.
//! - `columnDefinitions` is `null` when headers are suppressed.
//!
//! # Watch
//! With `as=Table` on a watch, kube's `watchEmbeddedEncoder` turns each event's object into a
//! Table of one row (metadata.resourceVersion = the object's). Column definitions go only with
//! the first encoded event; after encoding anything, the encoder switches `noHeaders` on, so
//! every later Table has `"columnDefinitions": null`. `Status` objects (ERROR events) pass
//! through unconverted but still count as the first event. [`WatchTableEncoder`] does exactly
//! this. `noHeaders` is not a query parameter (`TableOptions.NoHeaders` is `json:"-"`); it
//! exists for this internal use.
//!
//! # Layout
//! - this file: options, the Table envelope, watch encoding, [`human_duration`].
//! - the kinds' printers are the `kinds` crate's; this module has the default columns.
//! - [`descriptions`]: the column description strings.

// `ApiError` is the crate's one error currency (a whole Kubernetes Status); see `selector`.

pub mod descriptions;

use chrono::{DateTime, TimeDelta, Utc};
use serde_json::{Map, Value, json};

use crate::ApiError;

/// `includeObject`: what each row's `object` holds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum IncludeObject {
    /// `None`: `"object": null`.
    None,
    /// `Metadata` (the default): a `PartialObjectMetadata` with the object's metadata.
    #[default]
    Metadata,
    /// `Object`: the whole object, in the version the request named.
    Object,
}

impl IncludeObject {
    /// Parses the `includeObject` query parameter; absent or empty means `Metadata`. Anything
    /// else is kube's 400: `Unable to convert to Table as requested: includeObject: Invalid
    /// value: "X": must be 'Metadata', 'Object', 'None', or empty`.
    pub fn parse(value: Option<&str>) -> Result<IncludeObject, ApiError> {
        match value.unwrap_or("") {
            "" | "Metadata" => Ok(IncludeObject::Metadata),
            "Object" => Ok(IncludeObject::Object),
            "None" => Ok(IncludeObject::None),
            other => Err(ApiError::bad_request(format!(
                "Unable to convert to Table as requested: includeObject: Invalid value: {}: must be 'Metadata', 'Object', 'None', or empty",
                crate::gofmt::quote(other)
            ))),
        }
    }
}

/// Which `meta.k8s.io` version the client negotiated; it names the Table's and the
/// `PartialObjectMetadata`'s `apiVersion`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum MetaVersion {
    /// `meta.k8s.io/v1` (what kubectl 1.30 asks for first).
    #[default]
    V1,
    /// `meta.k8s.io/v1beta1`.
    V1Beta1,
}

impl MetaVersion {
    /// `meta.k8s.io/v1` or `meta.k8s.io/v1beta1`.
    pub fn api_version(self) -> &'static str {
        match self {
            MetaVersion::V1 => "meta.k8s.io/v1",
            MetaVersion::V1Beta1 => "meta.k8s.io/v1beta1",
        }
    }
}

/// How to print: kube's `metav1.TableOptions` plus the negotiated version.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TableOptions {
    /// What each row's `object` holds.
    pub include_object: IncludeObject,
    /// Leave `columnDefinitions` out (`null`): set by [`WatchTableEncoder`] after the first
    /// event; clients cannot ask for it.
    pub no_headers: bool,
    /// The Table's `apiVersion`.
    pub version: MetaVersion,
}

/// The list metadata copied into the Table's `metadata`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ListMetaInfo {
    /// `metadata.resourceVersion` (the list's, or the object's for a single object); omitted
    /// when empty.
    pub resource_version: String,
    /// `metadata.continue`; omitted when empty.
    pub continue_token: String,
    /// `metadata.remainingItemCount`; omitted when `None`.
    pub remaining_item_count: Option<i64>,
}

/// One column of a Table (`metav1.TableColumnDefinition`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Column {
    /// Header, e.g. `Name`, `Up-to-date` (kubectl upper-cases it).
    pub name: &'static str,
    /// OpenAPI type: `string`, `integer`, `boolean`, `date`.
    pub kind: &'static str,
    /// OpenAPI format, `name` for the name column, else empty.
    pub format: &'static str,
    /// Description.
    pub description: &'static str,
    /// 0 for default columns, 1 for `-o wide` ones.
    pub priority: i32,
}

impl Column {
    fn to_json(self) -> Value {
        json!({
            "name": self.name,
            "type": self.kind,
            "format": self.format,
            "description": self.description,
            "priority": self.priority,
        })
    }
}

/// One printed row before its `object` is attached.
pub struct Row {
    /// The cells, one per column.
    pub cells: Vec<Value>,
    /// `conditions` (pods that completed), if any.
    pub conditions: Option<Value>,
}

impl Row {
    /// A row of `cells`, without conditions.
    pub fn cells(cells: Vec<Value>) -> Row {
        Row { cells, conditions: None }
    }
}

/// How a kind is printed: kube's `TableConvertor` for it.
pub trait Printer: Send + Sync {
    /// The columns, wide ones included.
    fn columns(&self) -> &[Column];
    /// One object's row, ages relative to `now`.
    fn row(&self, obj: &Value, now: DateTime<Utc>) -> Row;
    /// The order of a list's rows: as listed by default; kube's FlowSchema list printer sorts.
    fn order(&self, _objects: &mut [&Value]) {}
}

/// A column shown by `kubectl get`.
pub const fn col(name: &'static str, kind: &'static str, description: &'static str) -> Column {
    Column { name, kind, format: "", description, priority: 0 }
}

/// A column shown by `kubectl get -o wide` only.
pub const fn wide(name: &'static str, kind: &'static str, description: &'static str) -> Column {
    Column { name, kind, format: "", description, priority: 1 }
}

/// kube's `Name` column.
pub const NAME: Column =
    Column { name: "Name", kind: "string", format: "name", description: descriptions::NAME, priority: 0 };
/// `rest.NewDefaultTableConvertor`'s columns.
pub const DEFAULT_COLUMNS: &[Column] = &[NAME, col("Created At", "date", descriptions::CREATION_TIMESTAMP)];

/// `rest.NewDefaultTableConvertor`'s row: name and creation time in RFC 3339 (UTC).
pub fn default_row(obj: &Value) -> Row {
    let created = obj
        .pointer("/metadata/creationTimestamp")
        .and_then(Value::as_str)
        .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
        .map_or_else(
            || "0001-01-01T00:00:00Z".to_string(),
            |t| t.with_timezone(&Utc).format("%Y-%m-%dT%H:%M:%SZ").to_string(),
        );
    let name = obj.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("");
    Row::cells(vec![name.into(), created.into()])
}

/// The columns kube prints for a kind with `printer` (the default convertor's without one).
pub fn columns(printer: Option<&dyn Printer>) -> &[Column] {
    printer.map_or(DEFAULT_COLUMNS, |p| p.columns())
}

/// Builds the Table for `objects` printed by `printer` (the default convertor for `None`; a
/// list, or one object for a GET), as kube-apiserver v1.30 does. `now` is the reference for ages (`AGE`, `LAST SEEN`, restart
/// times), injected so tests are deterministic.
pub fn to_table(
    printer: Option<&dyn Printer>,
    objects: &[&Value],
    opts: &TableOptions,
    list_meta: ListMetaInfo,
    now: DateTime<Utc>,
) -> Value {
    let columns = columns(printer);
    let mut objects = objects.to_vec();
    if let Some(p) = printer {
        p.order(&mut objects);
    }
    let rows: Vec<Value> = objects
        .iter()
        .map(|obj| {
            let row = match printer {
                Some(p) => p.row(obj, now),
                None => default_row(obj),
            };
            let mut r = Map::new();
            r.insert("cells".into(), Value::Array(row.cells));
            if let Some(conditions) = row.conditions {
                r.insert("conditions".into(), conditions);
            }
            r.insert("object".into(), row_object(obj, opts));
            Value::Object(r)
        })
        .collect();
    let rows = if rows.is_empty() && printer.is_none() { Value::Null } else { Value::Array(rows) };

    let mut metadata = Map::new();
    if !list_meta.resource_version.is_empty() {
        metadata.insert("resourceVersion".into(), list_meta.resource_version.into());
    }
    if !list_meta.continue_token.is_empty() {
        metadata.insert("continue".into(), list_meta.continue_token.into());
    }
    if let Some(n) = list_meta.remaining_item_count {
        metadata.insert("remainingItemCount".into(), n.into());
    }
    let column_definitions =
        if opts.no_headers { Value::Null } else { Value::Array(columns.iter().map(|c| c.to_json()).collect()) };
    json!({
        "kind": "Table",
        "apiVersion": opts.version.api_version(),
        "metadata": metadata,
        "columnDefinitions": column_definitions,
        "rows": rows,
    })
}

/// The Table for one object (a GET, or one watch event): `metadata.resourceVersion` is the
/// object's, as kube's table generator reads it from a non-list object.
pub fn object_to_table(
    printer: Option<&dyn Printer>,
    object: &Value,
    opts: &TableOptions,
    now: DateTime<Utc>,
) -> Value {
    use crate::object::ObjectExt;
    let list_meta = ListMetaInfo { resource_version: object.resource_version().to_string(), ..Default::default() };
    to_table(printer, &[object], opts, list_meta, now)
}

/// Turns watch event objects into Tables the way kube's `watchEmbeddedEncoder` does: headers on
/// the first encoded event only (unless the options already suppress them), `Status` objects
/// (ERROR events) unchanged. One encoder per watch connection.
#[derive(Debug)]
pub struct WatchTableEncoder {
    opts: TableOptions,
}

impl WatchTableEncoder {
    /// An encoder for one watch.
    pub fn new(opts: TableOptions) -> WatchTableEncoder {
        WatchTableEncoder { opts }
    }

    /// The `object` of the next watch event.
    pub fn encode(&mut self, printer: Option<&dyn Printer>, object: &Value, now: DateTime<Utc>) -> Value {
        let out = if object.get("kind").and_then(Value::as_str) == Some("Status")
            && object.get("apiVersion").and_then(Value::as_str) == Some("v1")
        {
            object.clone()
        } else {
            object_to_table(printer, object, &self.opts, now)
        };
        self.opts.no_headers = true;
        out
    }
}

fn row_object(obj: &Value, opts: &TableOptions) -> Value {
    match opts.include_object {
        IncludeObject::None => Value::Null,
        IncludeObject::Object => obj.clone(),
        IncludeObject::Metadata => {
            let mut metadata = obj.get("metadata").and_then(Value::as_object).cloned().unwrap_or_default();
            // Go's ObjectMeta always serializes creationTimestamp, null when unset.
            metadata.entry("creationTimestamp").or_insert(Value::Null);
            json!({
                "kind": "PartialObjectMetadata",
                "apiVersion": opts.version.api_version(),
                "metadata": metadata,
            })
        }
    }
}

/// `duration.HumanDuration` (k8s.io/apimachinery): a duration with ~2-3 significant figures:
/// `0s`..`119s`, `2m3s`..`9m59s`, `10m`..`179m`, `3h5m`..`7h59m`, `8h`..`47h`, `2d3h`..`7d23h`,
/// `8d`..`729d`, `2y80d`..`7y364d`, then `8y`. Up to 2 s in the future reads `0s` (clock skew);
/// further in the future is `<invalid>`.
pub fn human_duration(d: TimeDelta) -> String {
    let seconds = d.num_seconds();
    if seconds < -1 {
        return "<invalid>".to_string();
    } else if seconds < 0 {
        return "0s".to_string();
    } else if seconds < 60 * 2 {
        return format!("{seconds}s");
    }
    let minutes = seconds / 60;
    if minutes < 10 {
        let s = seconds % 60;
        return if s == 0 { format!("{minutes}m") } else { format!("{minutes}m{s}s") };
    } else if minutes < 60 * 3 {
        return format!("{minutes}m");
    }
    let hours = seconds / 3600;
    if hours < 8 {
        let m = minutes % 60;
        return if m == 0 { format!("{hours}h") } else { format!("{hours}h{m}m") };
    } else if hours < 48 {
        return format!("{hours}h");
    } else if hours < 24 * 8 {
        let h = hours % 24;
        return if h == 0 { format!("{}d", hours / 24) } else { format!("{}d{h}h", hours / 24) };
    } else if hours < 24 * 365 * 2 {
        return format!("{}d", hours / 24);
    } else if hours < 24 * 365 * 8 {
        let dy = (hours / 24) % 365;
        return if dy == 0 { format!("{}y", hours / 24 / 365) } else { format!("{}y{dy}d", hours / 24 / 365) };
    }
    format!("{}y", hours / 24 / 365)
}
