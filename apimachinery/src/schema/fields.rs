//! Pruning and strict field validation: what kube-apiserver's decoding of a request body into
//! Go structs does to it, done on a `serde_json::Value` with the kind's schema.
//!
//! kube decodes with `sigs.k8s.io/json`: unknown fields are dropped, and with
//! `fieldValidation=Strict` (error) or `Warn` (the server's default: warnings) reported as
//! `unknown field "spec.template.spec.containers[0].foo"`; duplicate fields likewise as
//! `duplicate field "metadata.name"`. A value of the wrong type fails the whole decode with Go's
//! `json: cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas of type
//! int32`, which the handler wraps as `Deployment in version "v1" cannot be handled as a
//! Deployment: ...` (400 BadRequest). Strict errors are only reported when decoding otherwise
//! succeeded.
//!
//! Differences from kube, by construction: the object is already a `Value`, so unknown fields
//! are reported in key order rather than document order, and duplicates need the raw body
//! ([`duplicate_fields`]); a field kube types as a named Go string type (`v1.RestartPolicy`) is
//! named `string` in type errors.

use std::fmt::Write as _;
use std::sync::LazyLock;

use regex::Regex;
use serde_json::{Map, Value};

use super::Node;
use super::plan::{self, Plan, Shape, TimeLayout};
use super::store::{self as build, store};
use crate::gofmt::json_kind;

/// kube keeps at most this many strict errors per decode.
const MAX_STRICT_ERRORS: usize = 100;

/// What decoding an object against its kind's schema found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FieldReport {
    /// Paths of the unknown fields, removed from the object (`spec.foo`,
    /// `spec.template.spec.containers[0].imagePullPolicyX`).
    pub unknown: Vec<String>,
    /// Paths of duplicate fields, from [`FieldReport::add_duplicates`] (`metadata.name`).
    pub duplicates: Vec<String>,
    /// The body's keys in document order, when known ([`FieldReport::set_body_keys`]).
    pub body_order: Vec<(String, bool)>,
    /// A YAML body's repeated keys as go-yaml words them ([`FieldReport::set_yaml_repeats`]).
    pub yaml_repeats: Vec<String>,
    /// The first decoding error as Go words it (`json: cannot unmarshal string into Go struct
    /// field DeploymentSpec.spec.replicas of type int32`): the request fails whatever the
    /// field validation directive.
    pub decode_error: Option<String>,
}

impl FieldReport {
    /// Whether nothing was found: the object decodes cleanly and strictly.
    pub fn is_clean(&self) -> bool {
        self.unknown.is_empty()
            && self.duplicates.is_empty()
            && self.yaml_repeats.is_empty()
            && self.decode_error.is_none()
    }

    /// Scans the raw request body for duplicate fields (a `Value` has already merged them).
    pub fn add_duplicates(&mut self, body: &[u8]) {
        self.set_body_keys(&body_keys(body));
    }

    /// The body's keys in document order ([`body_keys`]): duplicates are taken from them, and
    /// strict errors are reported in the order the body has them, as kube's decoder meets them.
    pub fn set_body_keys(&mut self, keys: &[(String, bool)]) {
        for (path, duplicate) in keys {
            if *duplicate && !self.duplicates.contains(path) {
                self.duplicates.push(path.clone());
            }
        }
        self.body_order = keys.to_vec();
    }

    /// A YAML body's repeated keys (`line 9: key "replicas" already set in map`): kube's YAML
    /// decoder reports them in one error before the unknown fields, and `Warn` splits that
    /// error into one warning per line.
    pub fn set_yaml_repeats(&mut self, lines: &[String]) {
        self.yaml_repeats = lines.to_vec();
    }

    /// The strict errors one by one, as kube words them: the `Warn` directive sends each as a
    /// `Warning` header (`unknown field "spec.foo"`).
    pub fn strict_errors(&self) -> Vec<String> {
        let mut out = self.yaml_repeats.clone();
        out.extend(self.json_strict_errors());
        out.truncate(MAX_STRICT_ERRORS);
        out
    }

    /// The errors of the JSON strict decode (of the YAML converted to JSON, for YAML bodies).
    fn json_strict_errors(&self) -> Vec<String> {
        if !self.body_order.is_empty() {
            let mut out = Vec::new();
            let mut reported: Vec<&String> = Vec::new();
            for (path, duplicate) in &self.body_order {
                if *duplicate {
                    out.push(format!("duplicate field {}", go_quote(path)));
                } else if self.unknown.contains(path) && !reported.contains(&path) {
                    reported.push(path);
                    out.push(format!("unknown field {}", go_quote(path)));
                }
            }
            let rest = self.unknown.iter().filter(|p| !reported.contains(p));
            out.extend(rest.map(|p| format!("unknown field {}", go_quote(p))));
            out.truncate(MAX_STRICT_ERRORS);
            return out;
        }
        let unknown = self.unknown.iter().map(|p| format!("unknown field {}", go_quote(p)));
        let duplicate = self.duplicates.iter().map(|p| format!("duplicate field {}", go_quote(p)));
        unknown.chain(duplicate).take(MAX_STRICT_ERRORS).collect()
    }

    /// `strict decoding error: unknown field "spec.foo", unknown field "spec.bar"`, or `None`
    /// when there is no strict error: under `Strict`, kube fails a create or update with this
    /// wrapped by [`cannot_be_handled`], a patch with 422 on field `patch`.
    pub fn strict_message(&self) -> Option<String> {
        let mut errs = self.json_strict_errors();
        if !self.yaml_repeats.is_empty() {
            errs.insert(0, format!("yaml: unmarshal errors:\n  {}", self.yaml_repeats.join("\n  ")));
        }
        errs.truncate(MAX_STRICT_ERRORS);
        (!errs.is_empty()).then(|| format!("strict decoding error: {}", errs.join(", ")))
    }
}

/// The 400 BadRequest message kube's create and update handlers give for a body that failed
/// to decode (`transformDecodeError`): `Deployment in version "v1" cannot be handled as a
/// Deployment: json: cannot unmarshal ...`. `body_kind` and `body_version` are what the body
/// declared; `kind` is the kind the endpoint serves; `error` is [`FieldReport::decode_error`]
/// or [`FieldReport::strict_message`].
pub fn cannot_be_handled(body_kind: &str, body_version: &str, kind: &str, error: &str) -> String {
    format!("{body_kind} in version {} cannot be handled as a {kind}: {error}", go_quote(body_version))
}

/// Go's `%q`/`strconv.Quote` for the paths and versions we print (JSON escaping is the same
/// for the printable ASCII that field names use).
fn go_quote(s: &str) -> String {
    crate::gofmt::quote(s)
}

/// Prunes unknown fields from `obj` (a `group/version, Kind` object, or its `<Kind>List`) in
/// place and reports them, with the first type error, as kube's decoder would.
///
/// Unknown fields are removed wherever the schema declares properties; maps
/// (`additionalProperties`) keep any key; `RawExtension`, `FieldsV1` and other schemaless
/// objects keep anything; `IntOrString` and `Quantity` take a string or a number. A `null`
/// field is removed (Go decodes it as the zero value, which kube omits). An unknown kind is
/// left alone with a clean report.
pub fn check_fields(group: &str, version: &str, kind: &str, obj: &mut Value) -> FieldReport {
    let mut report = FieldReport::default();
    let Some(name) = build::kind_definition_name(group, version, kind) else { return report };
    let Some(root) = plan::definition(name) else { return report };
    let mut walker = Walker { report: &mut report, path: String::new(), go_struct: None, go_fields: Vec::new() };
    walker.walk(root, obj);
    report
}

/// The state of one walk: kube's two paths (the strict-error path with indices and map keys,
/// and Go's type-error context of struct name and field names only).
struct Walker<'r> {
    report: &'r mut FieldReport,
    /// `spec.template.spec.containers[0]`.
    path: String,
    /// The innermost Go struct being decoded (`DeploymentSpec`).
    go_struct: Option<&'static str>,
    /// JSON names of the struct fields from the root (`spec`, `replicas`).
    go_fields: Vec<&'static str>,
}

impl TimeLayout {
    /// Go's layout, as its parse errors name it.
    fn go(self) -> &'static str {
        match self {
            TimeLayout::Seconds => "2006-01-02T15:04:05Z07:00",
            TimeLayout::Micros => "2006-01-02T15:04:05.000000Z07:00",
        }
    }
}

impl Walker<'_> {
    fn walk(&mut self, plan: &'static Plan, v: &mut Value) {
        if v.is_null() {
            return;
        }
        let plan = plan::resolved(plan);
        let go_type = || go_type(plan.node, plan.def);
        match &plan.shape {
            Shape::Def(_) | Shape::Anything => {}
            Shape::IntOrString => self.int_or_string(v),
            Shape::Quantity => self.quantity(v),
            Shape::Time(layout) => self.time(v, *layout),
            Shape::Struct { fields, go_struct } => match v {
                Value::Object(o) => self.object(fields, go_struct, o),
                _ => self.type_error(v, &go_type()),
            },
            Shape::Map(values) => match v {
                Value::Object(o) => self.map(values, o),
                _ => self.type_error(v, &go_type()),
            },
            Shape::Array(items) => match v {
                Value::Array(a) => {
                    if let Some(items) = items {
                        let base = self.path.len();
                        for (i, item) in a.iter_mut().enumerate() {
                            let _ = write!(self.path, "[{i}]");
                            self.walk(items, item);
                            self.path.truncate(base);
                        }
                    }
                }
                _ => self.type_error(v, &go_type()),
            },
            Shape::Bytes => match v {
                Value::String(s) => {
                    if let Err(at) = check_base64(s) {
                        self.decode_error(format!("illegal base64 data at input byte {at}"));
                    }
                }
                _ => self.type_error(v, &go_type()),
            },
            Shape::String if !v.is_string() => self.type_error(v, &go_type()),
            Shape::Integer { int32 } => match v {
                Value::Number(n) => {
                    let fits = match n.as_i64() {
                        Some(i) => !int32 || i32::try_from(i).is_ok(),
                        None => false,
                    };
                    if !fits {
                        let ty = if *int32 { "int32" } else { "int64" };
                        self.decode_error_typed(&format!("number {n}"), ty);
                    }
                }
                _ => self.type_error(v, &go_type()),
            },
            Shape::Number if !v.is_number() => self.type_error(v, "float64"),
            Shape::Boolean if !v.is_boolean() => self.type_error(v, "bool"),
            Shape::String | Shape::Number | Shape::Boolean => {}
        }
    }

    /// A struct: known properties walked, unknown ones removed and reported, nulls dropped.
    fn object(&mut self, fields: &'static [(&'static str, Plan)], go_struct: &'static str, o: &mut Map<String, Value>) {
        o.retain(|key, child| {
            let Some((name, plan)) = plan::field(fields, key) else {
                let p = if self.path.is_empty() { key.clone() } else { format!("{}.{key}", self.path) };
                if !self.report.unknown.contains(&p) && self.report.unknown.len() < MAX_STRICT_ERRORS {
                    self.report.unknown.push(p);
                }
                return false;
            };
            if child.is_null() {
                return false;
            }
            let base = self.path.len();
            if !self.path.is_empty() {
                self.path.push('.');
            }
            self.path.push_str(key);
            let saved_struct = self.go_struct.replace(go_struct);
            self.go_fields.push(name);
            self.walk(plan, child);
            self.go_fields.pop();
            self.go_struct = saved_struct;
            self.path.truncate(base);
            true
        });
    }

    /// A map: any key; values walked; a null string value becomes `""` as in Go.
    fn map(&mut self, values: &'static Plan, o: &mut Map<String, Value>) {
        let null_is_empty = values.node.type_name() == Some("string");
        for (key, child) in o.iter_mut() {
            if child.is_null() {
                if null_is_empty {
                    *child = Value::String(String::new());
                }
                continue;
            }
            let base = self.path.len();
            if !self.path.is_empty() {
                self.path.push('.');
            }
            self.path.push_str(key);
            self.walk(values, child);
            self.path.truncate(base);
        }
    }

    /// `IntOrString.UnmarshalJSON`: a string, or else what decodes into an int32.
    fn int_or_string(&mut self, v: &Value) {
        match v {
            Value::String(_) => {}
            Value::Number(n) if n.as_i64().is_some_and(|i| i32::try_from(i).is_ok()) => {}
            Value::Number(n) => {
                self.decode_error(format!("json: cannot unmarshal number {n} into Go value of type int32"))
            }
            other => {
                self.decode_error(format!("json: cannot unmarshal {} into Go value of type int32", json_kind(other)))
            }
        }
    }

    /// `Quantity.UnmarshalJSON`: a string or a number that parses as a quantity.
    /// `Quantity.UnmarshalJSON`, then its `MarshalJSON`: a quantity kube reads is written back
    /// in canonical form (`0.5` as `500m`, `1024Mi` as `1Gi`, a bare number as a string).
    fn quantity(&mut self, v: &mut Value) {
        let text = match &*v {
            Value::String(s) => s.trim().to_string(),
            other => other.to_string(),
        };
        if let Err(e) = check_quantity(&text) {
            return self.decode_error(e.to_string());
        }
        // A value too large or too fine for the parser's nano-units stays as sent.
        if let Ok(q) = kube_cel::quantity::parse(&text) {
            *v = Value::String(q.canonical());
        }
    }

    /// `Time.UnmarshalJSON`: a string in RFC 3339, in any offset and precision; then its
    /// `MarshalJSON`, so the value is stored as kube stores it: in UTC, ending in `Z`, whole
    /// seconds for a `Time` and microseconds for a `MicroTime`.
    fn time(&mut self, v: &mut Value, layout: TimeLayout) {
        match &*v {
            Value::String(s) if s.is_empty() => {}
            Value::String(s) => {
                match chrono::DateTime::parse_from_rfc3339(s) {
                    Err(_) => self.decode_error(format!(
                        "parsing time {} as {}: cannot parse {} as \"2006\"",
                        go_quote(s),
                        go_quote(layout.go()),
                        go_quote(s)
                    )),
                    // chrono reads a leap second (`:60`) as nanoseconds past a second; Go's
                    // time.Parse refuses it.
                    Ok(t) if t.timestamp_subsec_nanos() >= 1_000_000_000 => {
                        self.decode_error(format!("parsing time {}: second out of range", go_quote(s)))
                    }
                    Ok(t) => {
                        // A year Go cannot write in four digits stays as sent.
                        if let Some(written) = crate::gofmt::write_time(t, layout == TimeLayout::Micros) {
                            *v = Value::String(written);
                        }
                    }
                }
            }
            other => {
                self.decode_error(format!("json: cannot unmarshal {} into Go value of type string", json_kind(other)))
            }
        }
    }

    /// Go's `UnmarshalTypeError` with the decoder's context.
    fn type_error(&mut self, v: &Value, go_type: &str) {
        self.decode_error_typed(json_kind(v), go_type);
    }

    fn decode_error_typed(&mut self, value: &str, go_type: &str) {
        let msg = match &self.go_struct {
            Some(s) => format!(
                "json: cannot unmarshal {value} into Go struct field {s}.{} of type {go_type}",
                self.go_fields.join(".")
            ),
            None => format!("json: cannot unmarshal {value} into Go value of type {go_type}"),
        };
        self.decode_error(msg);
    }

    /// Keeps the first decoding error, as Go's decoder does.
    fn decode_error(&mut self, msg: String) {
        if self.report.decode_error.is_none() {
            self.report.decode_error = Some(msg);
        }
    }
}

/// `io.k8s.api.apps.v1.DeploymentSpec` → `v1.DeploymentSpec`: Go's `reflect.Type.String()`.
fn go_type_of_definition(def: &str) -> String {
    let mut parts = def.rsplitn(3, '.');
    let name = parts.next().unwrap_or(def);
    match parts.next() {
        Some(pkg) => format!("{pkg}.{name}"),
        None => name.to_string(),
    }
}

/// The Go type kube decodes a node into, as `reflect.Type.String()` prints it.
fn go_type(node: Node<'static>, def: Option<&str>) -> String {
    if let Some(d) = def.filter(|d| store().defs.contains_key(*d)) {
        return go_type_of_definition(d);
    }
    match node.type_name() {
        Some("array") => match node.items() {
            Some(items) => format!("[]{}", go_type(items, items.definition_name())),
            None => "[]interface {}".into(),
        },
        Some("object") => match node.additional_properties() {
            Some(values) => format!("map[string]{}", go_type(values, values.definition_name())),
            None => "map[string]interface {}".into(),
        },
        Some("integer") if node.format() == Some("int64") => "int64".into(),
        Some("integer") => "int32".into(),
        Some("number") => "float64".into(),
        Some("boolean") => "bool".into(),
        Some("string") if node.format() == Some("byte") => "[]uint8".into(),
        Some("string") => "string".into(),
        _ => "interface {}".into(),
    }
}

/// Why a quantity does not parse, in `k8s.io/apimachinery/pkg/api/resource` words.
#[derive(Debug, PartialEq, Eq)]
enum QuantityError {
    Format,
    Suffix,
    Numeric,
}

impl std::fmt::Display for QuantityError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            QuantityError::Format => {
                "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
            }
            QuantityError::Suffix => "unable to parse quantity's suffix",
            QuantityError::Numeric => "unable to parse numeric part of quantity",
        })
    }
}

/// The shape `resource.ParseQuantity` accepts.
static QUANTITY_RE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$").expect("valid regex"));

fn check_quantity(s: &str) -> Result<(), QuantityError> {
    let caps = QUANTITY_RE.captures(s).ok_or(QuantityError::Format)?;
    let number = caps.get(1).map_or("", |m| m.as_str());
    let suffix = caps.get(2).map_or("", |m| m.as_str());
    let digits = number.trim_start_matches(['+', '-']);
    if digits.matches('.').count() > 1 || digits == "." || digits.is_empty() {
        return Err(QuantityError::Numeric);
    }
    const SUFFIXES: &[&str] = &["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "n", "u", "m", "k", "M", "G", "T", "P", "E"];
    if SUFFIXES.contains(&suffix) {
        return Ok(());
    }
    let exponent = suffix.strip_prefix(['e', 'E']).ok_or(QuantityError::Suffix)?;
    let exponent = exponent.strip_prefix(['+', '-']).unwrap_or(exponent);
    if exponent.is_empty() || !exponent.bytes().all(|b| b.is_ascii_digit()) {
        return Err(QuantityError::Suffix);
    }
    Ok(())
}

/// Checks standard padded base64 as Go's `base64.StdEncoding` decodes it (`\r` and `\n`
/// ignored); the error is the offset Go's `CorruptInputError` reports.
fn check_base64(s: &str) -> Result<(), usize> {
    let bytes: Vec<(usize, u8)> = s.bytes().enumerate().filter(|(_, b)| *b != b'\r' && *b != b'\n').collect();
    let valid = |b: u8| b.is_ascii_alphanumeric() || b == b'+' || b == b'/';
    let mut quantum_start = 0;
    let mut i = 0;
    while i < bytes.len() {
        let (pos, b) = bytes[i];
        let j = i - quantum_start;
        if b == b'=' {
            // Padding is allowed only as the third or fourth byte of the last quantum.
            let rest = &bytes[i..];
            let ok = match j {
                2 => rest.len() == 2 && rest[1].1 == b'=',
                3 => rest.len() == 1,
                _ => false,
            };
            return if ok { Ok(()) } else { Err(pos) };
        }
        if !valid(b) {
            return Err(pos);
        }
        i += 1;
        if i - quantum_start == 4 {
            quantum_start = i;
        }
    }
    if i == quantum_start { Ok(()) } else { Err(bytes[quantum_start].0) }
}

/// The paths of duplicate object keys in a JSON body (`metadata.name`,
/// `spec.containers[0].image`), as kube's strict decoder reports them; empty for invalid JSON
/// beyond the point where it stops parsing.
pub fn duplicate_fields(body: &[u8]) -> Vec<String> {
    DupScanner::run(body, true).out
}

/// Every object key of a JSON body in document order, as a path, and whether it repeats a key
/// of its object: the order kube's strict decoder meets unknown and duplicate fields in.
pub fn body_keys(body: &[u8]) -> Vec<(String, bool)> {
    DupScanner::run(body, true).keys
}

/// Whether any object of a JSON body repeats a key: a scan that builds no paths and stops at
/// the first repeat, so bodies without one (nearly all) cost no allocation per key.
pub fn repeats_a_key(body: &[u8]) -> bool {
    DupScanner::run(body, false).repeated
}

/// A minimal JSON reader that only tracks paths and object keys.
struct DupScanner<'a> {
    b: &'a [u8],
    i: usize,
    /// Build paths and record every key (else only look for a repeat).
    paths: bool,
    repeated: bool,
    out: Vec<String>,
    keys: Vec<(String, bool)>,
}

impl<'a> DupScanner<'a> {
    fn run(body: &'a [u8], paths: bool) -> Self {
        let mut scanner = DupScanner { b: body, i: 0, paths, repeated: false, out: Vec::new(), keys: Vec::new() };
        scanner.value("");
        scanner
    }

    /// An object key: borrowed from the body unless it has escapes to decode.
    fn key(&mut self) -> Option<std::borrow::Cow<'a, str>> {
        let (b, start) = (self.b, self.i);
        let end = start + 1 + b[start + 1..].iter().position(|c| *c == b'"' || *c == b'\\')?;
        if b[end] == b'"' {
            self.i = end + 1;
            return std::str::from_utf8(&b[start + 1..end]).ok().map(std::borrow::Cow::Borrowed);
        }
        self.string().map(std::borrow::Cow::Owned)
    }

    fn ws(&mut self) {
        while self.i < self.b.len() && matches!(self.b[self.i], b' ' | b'\t' | b'\n' | b'\r') {
            self.i += 1;
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.ws();
        self.b.get(self.i).copied()
    }

    fn value(&mut self, path: &str) -> Option<()> {
        match self.peek()? {
            b'{' => self.object(path),
            b'[' => self.array(path),
            b'"' => self.string().map(|_| ()),
            _ => {
                while self.i < self.b.len()
                    && !matches!(self.b[self.i], b',' | b'}' | b']' | b' ' | b'\n' | b'\r' | b'\t')
                {
                    self.i += 1;
                }
                Some(())
            }
        }
    }

    fn string(&mut self) -> Option<String> {
        let start = self.i;
        self.i += 1;
        while self.i < self.b.len() {
            match self.b[self.i] {
                b'\\' => self.i += 2,
                b'"' => {
                    self.i += 1;
                    return serde_json::from_slice(&self.b[start..self.i]).ok();
                }
                _ => self.i += 1,
            }
        }
        None
    }

    fn object(&mut self, path: &str) -> Option<()> {
        self.i += 1;
        let mut seen: Vec<std::borrow::Cow<'a, str>> = Vec::new();
        if self.peek()? == b'}' {
            self.i += 1;
            return Some(());
        }
        loop {
            if self.peek()? != b'"' {
                return None;
            }
            let key = self.key()?;
            let duplicate = seen.contains(&key);
            let full = if !self.paths {
                if duplicate {
                    self.repeated = true;
                    return None;
                }
                String::new()
            } else if path.is_empty() {
                key.to_string()
            } else {
                format!("{path}.{key}")
            };
            if self.paths {
                self.keys.push((full.clone(), duplicate));
                if duplicate && !self.out.contains(&full) {
                    self.out.push(full.clone());
                }
            }
            if !duplicate {
                seen.push(key);
            }
            if self.peek()? != b':' {
                return None;
            }
            self.i += 1;
            self.value(&full)?;
            match self.peek()? {
                b',' => self.i += 1,
                b'}' => {
                    self.i += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    fn array(&mut self, path: &str) -> Option<()> {
        self.i += 1;
        if self.peek()? == b']' {
            self.i += 1;
            return Some(());
        }
        let mut index = 0;
        loop {
            if self.paths {
                self.value(&format!("{path}[{index}]"))?;
            } else {
                self.value("")?;
            }
            index += 1;
            match self.peek()? {
                b',' => self.i += 1,
                b']' => {
                    self.i += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantities_parse_like_kube() {
        for ok in ["1", "100m", "1.5Gi", "2e3", "1E-2", "+1", "0.5", "128974848"] {
            assert_eq!(check_quantity(ok), Ok(()), "{ok}");
        }
        assert_eq!(check_quantity("abc"), Err(QuantityError::Format));
        assert_eq!(check_quantity("1Mk"), Err(QuantityError::Suffix));
        assert_eq!(check_quantity("1.2.3"), Err(QuantityError::Numeric));
    }

    #[test]
    fn base64_errors_name_go_offsets() {
        assert_eq!(check_base64("aGVsbG8="), Ok(()));
        assert_eq!(check_base64("aGVsbG8h"), Ok(()));
        assert_eq!(check_base64(""), Ok(()));
        assert_eq!(check_base64("abc"), Err(0));
        assert_eq!(check_base64("abcde"), Err(4));
        assert_eq!(check_base64("ab$d"), Err(2));
        assert_eq!(check_base64("a==="), Err(1));
    }

    #[test]
    fn duplicate_fields_carry_kube_paths() {
        let body =
            br#"{"metadata":{"name":"a","name":"b"},"spec":{"containers":[{"image":"x","image":"y"}]},"spec":{}}"#;
        assert_eq!(duplicate_fields(body), ["metadata.name", "spec.containers[0].image", "spec"]);
        assert!(duplicate_fields(br#"{"a":{"b":1},"c":[1,2,{"d":"e"}]}"#).is_empty());
        assert!(repeats_a_key(body));
        assert!(repeats_a_key(br#"{"a":1,"\u0061":2}"#), "keys compare decoded");
        assert!(!repeats_a_key(br#"{"a":{"b":1},"c":[1,2,{"d":"e","a":3}]}"#));
    }
}
