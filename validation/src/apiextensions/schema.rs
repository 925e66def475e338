//! A CRD version's `openAPIV3Schema` (v1 `JSONSchemaProps` as JSON), checked as kube checks
//! it: `ValidateCustomResourceDefinitionOpenAPISchema` (what OpenAPI features are allowed,
//! the list and map extensions, `x-kubernetes-validations`' fields), the structural-schema
//! rules of `apiserver/schema` (`NewStructural`, `ValidateStructural`) and, of
//! `defaulting.ValidateDefaults`, the pruning of default values.
//!
//! The rules of `x-kubernetes-validations` are compiled by [`super::rules`] as the walk reaches
//! them.
//!
//! Not checked: whether a default validates against its schema (that needs the custom
//! resource validator, CEL rules included) or yields valid metadata inside an embedded
//! resource.
//!
//! kube walks Go maps (properties, definitions) in random order; here keys are walked sorted.

use serde_json::{Map, Value};

use std::cell::RefCell;

use super::rules::{self, CelContext, TotalCost};
use apimachinery::error::Cause;
use apimachinery::validation::field::{self, Bad, Path};

/// What kube's `validationOptions` say about schemas: stricter rules apply unless the stored
/// object already broke them.
#[derive(Clone, Debug)]
pub(super) struct Options {
    pub allow_defaults: bool,
    pub require_valid_property_type: bool,
    pub require_structural_schema: bool,
    pub require_pruned_defaults: bool,
    pub require_atomic_set_type: bool,
    pub require_map_list_keys_map_set_validation: bool,
    /// Whether rules are spared the per-expression cost limit (their schema is unchanged).
    pub suppress_expression_cost: bool,
    /// The rules and message expressions of the stored CRD, which compile in the newest CEL
    /// environment (kube's `preexistingExpressions`).
    pub preexisting: std::sync::Arc<kube_cel::rules::Preexisting>,
}

const OPENAPI_V3_TYPES: [&str; 6] = ["array", "boolean", "integer", "number", "object", "string"];
const META_FIELDS: [&str; 3] = ["apiVersion", "kind", "metadata"];
/// `supportedValidationReason`, sorted as kube lists it.
const VALIDATION_REASONS: [&str; 4] =
    ["FieldValueDuplicate", "FieldValueForbidden", "FieldValueInvalid", "FieldValueRequired"];
/// `allowedFieldsAtRootSchema`, as kube prints it (Go field names).
const ROOT_FIELDS_WITH_STATUS: &str = "[Description Type Format Title Maximum ExclusiveMaximum Minimum ExclusiveMinimum MaxLength MinLength Pattern MaxItems MinItems UniqueItems MultipleOf Required Items Properties ExternalDocs Example XPreserveUnknownFields XValidations]";

/// `JSONSchemaProps`' members in its Go field order, with whether the root of a schema may set
/// them when the status subresource is on, and how Go types them (for what counts as unset).
const ROOT_MEMBERS: [(&str, bool, Zero); 44] = [
    ("id", false, Zero::Str),
    ("$schema", false, Zero::Str),
    ("$ref", false, Zero::Ptr),
    ("description", true, Zero::Str),
    ("type", true, Zero::Str),
    ("nullable", false, Zero::Bool),
    ("format", true, Zero::Str),
    ("title", true, Zero::Str),
    ("default", false, Zero::Ptr),
    ("maximum", true, Zero::Ptr),
    ("exclusiveMaximum", true, Zero::Bool),
    ("minimum", true, Zero::Ptr),
    ("exclusiveMinimum", true, Zero::Bool),
    ("maxLength", true, Zero::Ptr),
    ("minLength", true, Zero::Ptr),
    ("pattern", true, Zero::Str),
    ("maxItems", true, Zero::Ptr),
    ("minItems", true, Zero::Ptr),
    ("uniqueItems", true, Zero::Bool),
    ("multipleOf", true, Zero::Ptr),
    ("enum", false, Zero::Ptr),
    ("maxProperties", false, Zero::Ptr),
    ("minProperties", false, Zero::Ptr),
    ("required", true, Zero::Ptr),
    ("items", true, Zero::Ptr),
    ("allOf", false, Zero::Ptr),
    ("oneOf", false, Zero::Ptr),
    ("anyOf", false, Zero::Ptr),
    ("not", false, Zero::Ptr),
    ("properties", true, Zero::Ptr),
    ("additionalProperties", false, Zero::Ptr),
    ("patternProperties", false, Zero::Ptr),
    ("dependencies", false, Zero::Ptr),
    ("additionalItems", false, Zero::Ptr),
    ("definitions", false, Zero::Ptr),
    ("externalDocs", true, Zero::Ptr),
    ("example", true, Zero::Ptr),
    ("x-kubernetes-preserve-unknown-fields", true, Zero::Ptr),
    ("x-kubernetes-embedded-resource", false, Zero::Bool),
    ("x-kubernetes-int-or-string", false, Zero::Bool),
    ("x-kubernetes-list-map-keys", false, Zero::Ptr),
    ("x-kubernetes-list-type", false, Zero::Ptr),
    ("x-kubernetes-map-type", false, Zero::Ptr),
    ("x-kubernetes-validations", true, Zero::Ptr),
];

/// How a Go field's zero value looks in JSON.
#[derive(Clone, Copy, Debug)]
enum Zero {
    /// A string: `""`.
    Str,
    /// A bool: `false`.
    Bool,
    /// A pointer, slice or map: only absent (or `null`).
    Ptr,
}

// ---------------------------------------------------------------------------------------------
// Reading a schema.

/// A member that is set: present and not `null` (a non-nil Go pointer, slice or map).
pub(super) fn get<'a>(v: &'a Value, key: &str) -> Option<&'a Value> {
    v.get(key).filter(|x| !x.is_null())
}

fn text<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

fn flag(v: &Value, key: &str) -> bool {
    v.get(key).and_then(Value::as_bool) == Some(true)
}

fn list<'a>(v: &'a Value, key: &str) -> &'a [Value] {
    v.get(key).and_then(Value::as_array).map(Vec::as_slice).unwrap_or(&[])
}

fn strings<'a>(v: &'a Value, key: &str) -> Vec<&'a str> {
    list(v, key).iter().map(|s| s.as_str().unwrap_or("")).collect()
}

/// A map member's entries in sorted key order (kube walks Go maps; the order is ours).
fn entries<'a>(v: &'a Value, key: &str) -> Vec<(&'a String, &'a Value)> {
    let mut out: Vec<_> = v.get(key).and_then(Value::as_object).map(|m| m.iter().collect()).unwrap_or_default();
    out.sort_by(|a, b| a.0.cmp(b.0));
    out
}

fn has_props(v: &Value) -> bool {
    v.get("properties").and_then(Value::as_object).is_some_and(|p| !p.is_empty())
}

fn prop<'a>(v: &'a Value, name: &str) -> Option<&'a Value> {
    v.get("properties").and_then(|p| p.get(name)).filter(|p| !p.is_null())
}

/// `items` when it is one schema (`JSONSchemaPropsOrArray.Schema`).
fn items_schema(v: &Value) -> Option<&Value> {
    get(v, "items").filter(|i| i.is_object())
}

/// `items` when it is an array of schemas.
fn items_array(v: &Value) -> Option<&[Value]> {
    get(v, "items").and_then(Value::as_array).map(Vec::as_slice)
}

/// `additionalProperties`' (or `additionalItems`') schema, when it is one rather than a bool.
fn sub_schema<'a>(v: &'a Value, key: &str) -> Option<&'a Value> {
    get(v, key).filter(|a| a.is_object())
}

/// `JSONSchemaPropsOrBool.Allows`: `false` only for a literal `false`.
fn allows(v: &Value) -> bool {
    v.as_bool() != Some(false)
}

fn has_newlines(s: &str) -> bool {
    s.contains(['\n', '\r'])
}

// ---------------------------------------------------------------------------------------------
// Walking a schema (`SchemaHas`).

/// `SchemaHas`: whether `pred` holds for `s` or any schema nested in it.
pub(super) fn schema_has(s: &Value, pred: &dyn Fn(&Value) -> bool) -> bool {
    if !s.is_object() {
        return false;
    }
    if pred(s) {
        return true;
    }
    let nested = |v: &Value| schema_has(v, pred);
    if let Some(i) = items_schema(s)
        && nested(i)
    {
        return true;
    }
    if items_array(s).into_iter().flatten().any(nested) {
        return true;
    }
    for key in ["allOf", "anyOf", "oneOf"] {
        if list(s, key).iter().any(nested) {
            return true;
        }
    }
    if get(s, "not").is_some_and(nested) {
        return true;
    }
    for key in ["properties", "patternProperties", "definitions"] {
        if entries(s, key).into_iter().any(|(_, v)| nested(v)) {
            return true;
        }
    }
    for key in ["additionalProperties", "additionalItems"] {
        if sub_schema(s, key).is_some_and(nested) {
            return true;
        }
    }
    entries(s, "dependencies").into_iter().any(|(_, d)| d.is_object() && nested(d))
}

/// `schemaHasDefaults`.
pub(super) fn has_defaults(s: &Value) -> bool {
    schema_has(s, &|s| get(s, "default").is_some())
}

/// `schemaHasKubernetesExtensions`.
pub(super) fn has_kubernetes_extensions(s: &Value) -> bool {
    schema_has(s, &|s| {
        flag(s, "x-kubernetes-embedded-resource")
            || get(s, "x-kubernetes-preserve-unknown-fields").is_some()
            || flag(s, "x-kubernetes-int-or-string")
            || !list(s, "x-kubernetes-list-map-keys").is_empty()
            || get(s, "x-kubernetes-list-type").is_some()
            || !list(s, "x-kubernetes-validations").is_empty()
    })
}

/// `SchemaHasInvalidTypes`.
pub(super) fn has_invalid_types(s: &Value) -> bool {
    schema_has(s, &|s| {
        let t = text(s, "type");
        !t.is_empty() && !OPENAPI_V3_TYPES.contains(&t)
    })
}

/// `hasNonAtomicSetType`: a `set` list whose items are not atomic.
pub(super) fn has_non_atomic_set_type(s: &Value) -> bool {
    schema_has(s, &|s| {
        let Some(is) =
            items_schema(s).filter(|_| s.get("x-kubernetes-list-type").and_then(Value::as_str) == Some("set"))
        else {
            return false;
        };
        match text(is, "type") {
            "array" => get(is, "x-kubernetes-list-type").is_some_and(|t| t.as_str() != Some("atomic")),
            "object" => is.get("x-kubernetes-map-type").and_then(Value::as_str) != Some("atomic"),
            _ => false,
        }
    })
}

/// `hasInvalidMapListKeysMapSet`.
pub(super) fn has_invalid_map_list_keys_map_set(s: &Value) -> bool {
    schema_has(s, &|s| !validate_map_list_keys_map_set(s, &Path::new("")).is_empty())
}

/// `schemaIsNonStructural`.
pub(super) fn is_non_structural(s: &Value) -> bool {
    new_structural_error(s).is_some() || !validate_structural(&Path::new(""), s).is_empty()
}

/// `schemaHasUnprunedDefaults`, pruning each default by its own schema (kube prunes it inside
/// the object it would default, which differs only around embedded resources' metadata).
pub(super) fn has_unpruned_defaults(s: &Value) -> bool {
    if !has_defaults(s) || is_non_structural(s) {
        return false;
    }
    schema_has(s, &|s| {
        get(s, "default").is_some_and(|d| {
            let mut pruned = d.clone();
            prune(&mut pruned, Some(s), false);
            pruned != *d
        })
    })
}

// ---------------------------------------------------------------------------------------------
// Go renderings of bad values.

/// Go's `%v` of a float64.
fn go_float(f: f64) -> String {
    if f != 0.0 && (f.abs() >= 1e21 || f.abs() < 1e-4) {
        let s = format!("{f:e}");
        let (mantissa, exp) = s.split_once('e').unwrap_or((&s, "0"));
        let (sign, digits) = exp.strip_prefix('-').map(|d| ('-', d)).unwrap_or(('+', exp));
        format!("{mantissa}e{sign}{digits:0>2}")
    } else {
        format!("{f}")
    }
}

fn go_number(n: &serde_json::Number) -> String {
    match n.as_i64() {
        Some(i) => i.to_string(),
        None => go_float(n.as_f64().unwrap_or(0.0)),
    }
}

/// `%#v` of a decoded JSON value held in an `interface{}` (inside a map or slice).
fn go_sharp(v: &Value) -> String {
    match v {
        Value::Null => "interface {}(nil)".to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => go_number(n),
        Value::String(s) => field::go_quote(s),
        Value::Array(a) => format!("[]interface {{}}{{{}}}", a.iter().map(go_sharp).collect::<Vec<_>>().join(", ")),
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            let body: Vec<String> =
                keys.iter().map(|k| format!("{}:{}", field::go_quote(k), go_sharp(&m[k.as_str()]))).collect();
            format!("map[string]interface {{}}{{{}}}", body.join(", "))
        }
    }
}

/// A decoded JSON value as kube's field error prints it: scalars plainly (strings quoted),
/// maps and slices `%#v`.
pub(super) fn go_value(v: &Value) -> Bad {
    match v {
        Value::Null => Bad::s("null"),
        Value::Bool(b) => Bad::Bool(*b),
        Value::Number(n) => Bad::Raw(go_number(n)),
        Value::String(s) => Bad::s(s.clone()),
        other => Bad::Raw(go_sharp(other)),
    }
}

/// `%#v` of a `[]string`.
fn go_strings(items: &[&str]) -> Bad {
    Bad::Raw(format!("[]string{{{}}}", items.iter().map(|s| field::go_quote(s)).collect::<Vec<_>>().join(", ")))
}

/// A `*string` member as a field error prints it: the string, or `"null"` when nil.
fn go_str_ptr(v: &Value, key: &str) -> Bad {
    match get(v, key) {
        Some(s) => Bad::s(s.as_str().unwrap_or("")),
        None => Bad::s("null"),
    }
}

// ---------------------------------------------------------------------------------------------
// Go regular expressions.

/// Why Go's `regexp.Compile` refuses `pattern`, worded as Go words it, or `None` when the
/// pattern compiles. The regex crate decides; the common failures get Go's wording.
fn regexp_error(pattern: &str) -> Option<String> {
    let go = |code: &str, expr: &str| Some(format!("error parsing regexp: {code}: `{expr}`"));
    // RE2 caps repeat counts at 1000; the regex crate only limits the compiled size.
    static REPEAT: std::sync::LazyLock<regex::Regex> =
        std::sync::LazyLock::new(|| regex::Regex::new(r"(^|[^\\])(\{(\d+)(,(\d*))?\})").expect("regex"));
    for c in REPEAT.captures_iter(pattern) {
        let too_big = |i: usize| c.get(i).and_then(|m| m.as_str().parse::<u64>().ok()).is_some_and(|n| n > 1000);
        if too_big(3) || too_big(5) {
            return go("invalid repeat count", &c[2]);
        }
    }
    regex::Regex::new(pattern).err()?;
    let bytes = pattern.as_bytes();
    let mut depth = 0i32;
    let mut i = 0;
    // Whether the previous token can be repeated (`*` after nothing, `(` or `|` cannot).
    let mut repeatable = false;
    let mut last_was_repeat = false;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => {
                if i + 1 >= bytes.len() {
                    return go("trailing backslash at end of expression", "");
                }
                // RE2 has no backreferences.
                if bytes[i + 1].is_ascii_digit() && bytes[i + 1] != b'0' {
                    return go("invalid escape sequence", &pattern[i..i + 2]);
                }
                i += 2;
                repeatable = true;
                last_was_repeat = false;
                continue;
            }
            b'[' => {
                let start = i;
                i += 1;
                if bytes.get(i) == Some(&b'^') {
                    i += 1;
                }
                if bytes.get(i) == Some(&b']') {
                    i += 1;
                }
                while i < bytes.len() && bytes[i] != b']' {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
                if i >= bytes.len() {
                    return go("missing closing ]", &pattern[start..]);
                }
                repeatable = true;
                last_was_repeat = false;
            }
            b'(' => {
                // RE2 has no lookarounds.
                for look in ["(?=", "(?!", "(?<=", "(?<!"] {
                    if pattern[i..].starts_with(look) {
                        return go("invalid or unsupported Perl syntax", &look[..3]);
                    }
                }
                depth += 1;
                repeatable = false;
                last_was_repeat = false;
            }
            b')' => {
                depth -= 1;
                if depth < 0 {
                    return go("unexpected )", pattern);
                }
                repeatable = true;
                last_was_repeat = false;
            }
            b'|' => {
                repeatable = false;
                last_was_repeat = false;
            }
            b'*' | b'+' | b'?' => {
                let op_end = if bytes.get(i + 1) == Some(&b'?') { i + 2 } else { i + 1 };
                if last_was_repeat {
                    let start = pattern[..i].rfind(['*', '+', '?']).unwrap_or(i);
                    return go("invalid nested repetition operator", &pattern[start..op_end]);
                }
                if !repeatable {
                    return go("missing argument to repetition operator", &pattern[i..op_end]);
                }
                i = op_end;
                last_was_repeat = true;
                continue;
            }
            _ => {
                repeatable = true;
                last_was_repeat = false;
            }
        }
        i += 1;
    }
    if depth > 0 {
        return go("missing closing )", pattern);
    }
    let rust = regex::Regex::new(pattern).err().map(|e| e.to_string()).unwrap_or_default();
    let reason = rust.lines().last().unwrap_or("").trim().trim_start_matches("error: ").to_string();
    go(&reason, pattern)
}

// ---------------------------------------------------------------------------------------------
// Field paths into a schema (`cel.ValidFieldPath`).

/// `unescapeSingleQuote`.
fn unescape_single_quote(s: &str) -> Result<String, String> {
    let mut out = String::new();
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let Some(d) = chars.next() else {
            out.push('\\');
            break;
        };
        out.push(match d {
            'a' => '\u{7}',
            'b' => '\u{8}',
            'f' => '\u{c}',
            'n' => '\n',
            'r' => '\r',
            't' => '\t',
            'v' => '\u{b}',
            '\'' => '\'',
            '\\' => '\\',
            other => return Err(format!("invalid escape char \\{other}")),
        });
    }
    Ok(out)
}

/// The tokens of a field path: `.`, `[`, `]`, single-quoted strings and names between them.
fn path_tokens(path: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let b = path.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\'' {
            let mut j = i + 1;
            while j < b.len() && !(b[j] == b'\'' && b[j - 1] != b'\\') {
                j += 1;
            }
            let end = (j + 1).min(b.len());
            out.push(&path[i..end]);
            i = end;
            continue;
        }
        if matches!(b[i], b'.' | b'[' | b']') {
            out.push(&path[i..i + 1]);
            i += 1;
            continue;
        }
        let start = i;
        while i < b.len() && !matches!(b[i], b'.' | b'[' | b']') {
            i += 1;
        }
        out.push(&path[start..i]);
    }
    out
}

/// A field path resolved against a schema: kube's path, its first segment, and the schema
/// it reaches (`None` past an `additionalProperties: true`).
pub struct FieldPath<'a> {
    /// The path as kube prints it (`spec.labels[app]`).
    pub path: Path,
    /// Its first field, when that is a property (`metadata`).
    pub root: String,
    /// The schema it reaches.
    pub schema: Option<&'a Value>,
}

/// `cel.ValidFieldPath`: `.a.b` (and, with `allow_array`, `['a']`) resolved through
/// properties and additionalProperties, with kube's errors.
pub fn valid_field_path<'a>(json_path: &str, schema: &'a Value, allow_array: bool) -> Result<FieldPath<'a>, String> {
    let mut out = FieldPath { path: Path::new(""), root: String::new(), schema: Some(schema) };
    let mut first = true;
    let mut step = |out: &mut FieldPath<'a>, name: &str| -> Result<(), String> {
        let s = out.schema.ok_or_else(|| "does not refer to a valid field".to_string())?;
        if has_props(s) {
            out.path = out.path.child(name);
            out.schema = Some(prop(s, name).ok_or_else(|| "does not refer to a valid field".to_string())?);
        } else if get(s, "additionalProperties").is_some() {
            out.path = out.path.key(name);
            out.schema = sub_schema(s, "additionalProperties");
        } else {
            return Err("does not refer to a valid field".to_string());
        }
        if first {
            out.root = if has_props(s) { name.to_string() } else { String::new() };
            first = false;
        }
        Ok(())
    };
    let tokens = path_tokens(json_path);
    let mut it = tokens.into_iter();
    while let Some(tok) = it.next() {
        match tok {
            "[" => {
                if !allow_array {
                    return Err("array notation is not allowed".to_string());
                }
                let tok = it.next().ok_or("unexpected end of JSON path")?;
                if tok.len() < 2 || !tok.starts_with('\'') || !tok.ends_with('\'') {
                    return Err(format!("expected single quoted string but got {tok}"));
                }
                let name = unescape_single_quote(&tok[1..tok.len() - 1])
                    .map_err(|e| format!("invalid string literal: {e}"))?;
                step(&mut out, &name)?;
                let tok = it.next().ok_or("unexpected end of JSON path")?;
                if tok != "]" {
                    return Err(format!("expected ] but got {tok}"));
                }
            }
            "." => {
                let tok = it.next().ok_or("unexpected end of JSON path")?;
                step(&mut out, tok)?;
            }
            other => return Err(format!("expected [ or . but got: {other}")),
        }
    }
    Ok(out)
}

// ---------------------------------------------------------------------------------------------
// `NewStructural`.

/// `validateUnsupportedFields`.
fn unsupported_field(s: &Value) -> Option<&'static str> {
    if !text(s, "id").is_empty() {
        return Some("OpenAPIV3Schema 'id' is not supported");
    }
    if !text(s, "$schema").is_empty() {
        return Some("OpenAPIV3Schema 'schema' is not supported");
    }
    if !text(s, "$ref").is_empty() {
        return Some("OpenAPIV3Schema '$ref' is not supported");
    }
    let non_empty = |key: &str| s.get(key).and_then(Value::as_object).is_some_and(|m| !m.is_empty());
    if non_empty("patternProperties") {
        return Some("OpenAPIV3Schema 'patternProperties' is not supported");
    }
    if non_empty("dependencies") {
        return Some("OpenAPIV3Schema 'dependencies' is not supported");
    }
    if get(s, "additionalItems").is_some() {
        return Some("OpenAPIV3Schema 'additionalItems' is not supported");
    }
    if non_empty("definitions") {
        return Some("OpenAPIV3Schema 'definitions' is not supported");
    }
    None
}

/// Why `NewStructural` cannot convert `s`, as kube words it; `None` when it can. kube checks
/// a schema's value validations, generics, extensions, items and properties, in that order.
pub(super) fn new_structural_error(s: &Value) -> Option<String> {
    if !s.is_object() {
        return None;
    }
    if let Some(e) = unsupported_field(s) {
        return Some(e.to_string());
    }
    let nested = get(s, "not").into_iter().chain(["allOf", "anyOf", "oneOf"].iter().flat_map(|k| list(s, k)));
    for n in nested {
        if let Some(e) = new_structural_error(n) {
            return Some(e);
        }
    }
    if let Some(e) = sub_schema(s, "additionalProperties").and_then(new_structural_error) {
        return Some(e);
    }
    if s.get("x-kubernetes-preserve-unknown-fields").and_then(Value::as_bool) == Some(false) {
        return Some("internal error: 'x-kubernetes-preserve-unknown-fields' must be true or undefined".to_string());
    }
    if items_array(s).is_some_and(|a| !a.is_empty()) {
        return Some("OpenAPIV3Schema 'items' must be a schema, but is an array".to_string());
    }
    if let Some(e) = items_schema(s).and_then(new_structural_error) {
        return Some(e);
    }
    entries(s, "properties").into_iter().find_map(|(_, p)| new_structural_error(p))
}

// ---------------------------------------------------------------------------------------------
// `ValidateStructural`.

#[derive(Clone, Copy, PartialEq, Eq)]
enum Level {
    Root,
    Item,
    Field,
}

/// `ValidateStructural`: the invariants and the completeness of a structural schema, sorted as
/// kube sorts them (by their whole text).
pub(super) fn validate_structural(path: &Path, s: &Value) -> Vec<Cause> {
    let mut out = invariants(s, Level::Root, path);
    out.extend(completeness(s, path));
    out.sort_by(|a, b| format!("{}: {}", a.field, a.message).cmp(&format!("{}: {}", b.field, b.message)));
    out
}

/// Whether a nested value validation is exactly `{type: <t>}`.
fn is_only_type(v: &Value, t: &str) -> bool {
    v.as_object().is_some_and(|m| {
        m.iter().filter(|(_, x)| !x.is_null()).all(|(k, x)| k == "type" && x.as_str() == Some(t))
            && text(v, "type") == t
    })
}

/// `anyOf: [{type: integer}, {type: string}]`, the int-or-string pattern.
fn is_int_or_string_any_of(s: &Value) -> bool {
    let any = list(s, "anyOf");
    any.len() == 2 && is_only_type(&any[0], "integer") && is_only_type(&any[1], "string")
}

fn is_int_or_string_all_of(s: &Value) -> bool {
    list(s, "allOf").first().is_some_and(is_int_or_string_any_of)
}

/// `validateStructuralInvariants`.
fn invariants(s: &Value, lvl: Level, path: &Path) -> Vec<Cause> {
    let mut out = Vec::new();
    let ty = text(s, "type");
    if ty == "array" && items_schema(s).is_none() {
        out.push(field::required(&path.child("items"), "must be specified"));
    }
    if let Some(i) = items_schema(s) {
        out.extend(invariants(i, Level::Item, &path.child("items")));
    }
    for (k, p) in entries(s, "properties") {
        out.extend(invariants(p, Level::Field, &path.child("properties").key(k)));
    }
    // validateGeneric
    if get(s, "additionalProperties").is_some() {
        if lvl == Level::Root {
            out.push(field::forbidden(&path.child("additionalProperties"), "must not be used at the root"));
        }
        if let Some(ap) = sub_schema(s, "additionalProperties") {
            out.extend(invariants(ap, Level::Field, &path.child("additionalProperties")));
        }
    }
    // validateExtensions
    let int_or_string = flag(s, "x-kubernetes-int-or-string");
    let preserve = flag(s, "x-kubernetes-preserve-unknown-fields");
    let embedded = flag(s, "x-kubernetes-embedded-resource");
    if int_or_string && preserve {
        out.push(field::invalid(
            &path.child("x-kubernetes-preserve-unknown-fields"),
            Bad::Bool(true),
            "must be false if x-kubernetes-int-or-string is true",
        ));
    }
    if int_or_string && embedded {
        out.push(field::invalid(
            &path.child("x-kubernetes-embedded-resource"),
            Bad::Bool(true),
            "must be false if x-kubernetes-int-or-string is true",
        ));
    }
    out.extend(value_validation(s, is_int_or_string_any_of(s), is_int_or_string_all_of(s), lvl, path));

    let check_metadata = lvl == Level::Root || embedded;
    if embedded && ty != "object" {
        let detail = "must be object if x-kubernetes-embedded-resource is true";
        out.push(if ty.is_empty() {
            field::required(&path.child("type"), detail)
        } else {
            field::invalid(&path.child("type"), Bad::s(ty), detail)
        });
    } else if ty.is_empty() && !int_or_string && !preserve {
        let detail = match lvl {
            Level::Root => "must not be empty at the root",
            Level::Item => "must not be empty for specified array items",
            Level::Field => "must not be empty for specified object fields",
        };
        out.push(field::required(&path.child("type"), detail));
    }
    if embedded && get(s, "additionalProperties").is_some() {
        out.push(field::forbidden(
            &path.child("additionalProperties"),
            "must not be used if x-kubernetes-embedded-resource is set",
        ));
    }
    if lvl == Level::Root && !ty.is_empty() && ty != "object" {
        out.push(field::invalid(&path.child("type"), Bad::s(ty), "must be object at the root"));
    }
    for name in ["kind", "apiVersion"] {
        if let Some(p) = prop(s, name)
            && check_metadata
            && text(p, "type") != "string"
        {
            out.push(field::invalid(
                &path.child("properties").key(name).child("type"),
                Bad::s(text(p, "type")),
                "must be string",
            ));
        }
    }
    if let Some(m) = prop(s, "metadata") {
        let mp = path.child("properties").key("metadata");
        if check_metadata && text(m, "type") != "object" {
            out.push(field::invalid(&mp.child("type"), Bad::s(text(m, "type")), "must be object"));
        }
        if lvl == Level::Root && metadata_restricts_more_than_names(m) {
            out.push(field::forbidden(
                &mp,
                "must not specify anything other than name and generateName, but metadata is implicitly specified",
            ));
        }
    }
    if embedded && !preserve && !has_props(s) {
        out.push(field::required(
            &path.child("properties"),
            "must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields",
        ));
    }
    out
}

/// Whether a root `metadata` schema says more than its type, a default and the `name` and
/// `generateName` properties, counting only what `NewStructural` keeps.
fn metadata_restricts_more_than_names(m: &Value) -> bool {
    let Some(obj) = m.as_object() else { return false };
    let props_cleared = match m.get("properties").and_then(Value::as_object) {
        None => true,
        Some(p) => {
            let (n, g) = (p.contains_key("name"), p.contains_key("generateName"));
            p.is_empty() || (n && g && p.len() == 2) || ((n || g) && p.len() == 1)
        }
    };
    obj.iter().filter(|(_, v)| !v.is_null()).any(|(k, v)| match k.as_str() {
        "properties" => !props_cleared,
        "enum" | "allOf" | "anyOf" | "oneOf" => v.as_array().is_none_or(|a| !a.is_empty()),
        "description" | "title" | "format" | "pattern" => v.as_str() != Some(""),
        "nullable"
        | "exclusiveMaximum"
        | "exclusiveMinimum"
        | "uniqueItems"
        | "x-kubernetes-embedded-resource"
        | "x-kubernetes-int-or-string" => v.as_bool() != Some(false),
        "maximum"
        | "minimum"
        | "maxLength"
        | "minLength"
        | "maxItems"
        | "minItems"
        | "multipleOf"
        | "maxProperties"
        | "minProperties"
        | "required"
        | "not"
        | "items"
        | "additionalProperties"
        | "x-kubernetes-preserve-unknown-fields"
        | "x-kubernetes-list-map-keys"
        | "x-kubernetes-list-type"
        | "x-kubernetes-map-type"
        | "x-kubernetes-validations" => true,
        _ => false,
    })
}

/// `validateValueValidation`: the junctors' nested validations and the pattern.
fn value_validation(
    v: &Value,
    skip_any_of: bool,
    skip_first_all_of_any_of: bool,
    lvl: Level,
    path: &Path,
) -> Vec<Cause> {
    let mut out = Vec::new();
    if !skip_any_of {
        for (i, n) in list(v, "anyOf").iter().enumerate() {
            out.extend(nested_value_validation(n, false, lvl, &path.child("anyOf").index(i)));
        }
    }
    for (i, n) in list(v, "allOf").iter().enumerate() {
        out.extend(nested_value_validation(n, skip_first_all_of_any_of && i == 0, lvl, &path.child("allOf").index(i)));
    }
    for (i, n) in list(v, "oneOf").iter().enumerate() {
        out.extend(nested_value_validation(n, false, lvl, &path.child("oneOf").index(i)));
    }
    if let Some(n) = get(v, "not") {
        out.extend(nested_value_validation(n, false, lvl, &path.child("not")));
    }
    let pattern = text(v, "pattern");
    if !pattern.is_empty()
        && let Some(e) = regexp_error(pattern)
    {
        out.push(field::invalid(
            &path.child("pattern"),
            Bad::s(pattern),
            &format!("must be a valid regular expression, but isn't: {e}"),
        ));
    }
    out
}

/// `validateNestedValueValidation`: what a schema under `allOf`, `anyOf`, `oneOf` or `not`
/// may not say.
fn nested_value_validation(v: &Value, skip_any_of: bool, lvl: Level, path: &Path) -> Vec<Cause> {
    let mut out = value_validation(v, skip_any_of, false, lvl, path);
    if let Some(i) = items_schema(v) {
        out.extend(nested_value_validation(i, false, lvl, &path.child("items")));
    }
    for (k, p) in entries(v, "properties") {
        out.extend(nested_value_validation(p, false, Level::Field, &path.child("properties").key(k)));
    }
    let checks: [(&str, bool, &str); 13] = [
        ("type", !text(v, "type").is_empty(), "must be empty to be structural"),
        ("additionalProperties", get(v, "additionalProperties").is_some(), "must be undefined to be structural"),
        ("default", get(v, "default").is_some(), "must be undefined to be structural"),
        ("title", !text(v, "title").is_empty(), "must be empty to be structural"),
        ("description", !text(v, "description").is_empty(), "must be empty to be structural"),
        ("nullable", flag(v, "nullable"), "must be false to be structural"),
        (
            "x-kubernetes-preserve-unknown-fields",
            flag(v, "x-kubernetes-preserve-unknown-fields"),
            "must be false to be structural",
        ),
        ("x-kubernetes-embedded-resource", flag(v, "x-kubernetes-embedded-resource"), "must be false to be structural"),
        ("x-kubernetes-int-or-string", flag(v, "x-kubernetes-int-or-string"), "must be false to be structural"),
        (
            "x-kubernetes-list-map-keys",
            !list(v, "x-kubernetes-list-map-keys").is_empty(),
            "must be empty to be structural",
        ),
        ("x-kubernetes-list-type", get(v, "x-kubernetes-list-type").is_some(), "must be undefined to be structural"),
        ("x-kubernetes-map-type", get(v, "x-kubernetes-map-type").is_some(), "must be undefined to be structural"),
        ("x-kubernetes-validations", !list(v, "x-kubernetes-validations").is_empty(), "must be empty to be structural"),
    ];
    for (key, bad, detail) in checks {
        if bad {
            out.push(field::forbidden(&path.child(key), detail));
        }
    }
    if prop(v, "metadata").is_some() {
        out.push(field::forbidden(
            &path.child("properties").key("metadata"),
            "must not be specified in a nested context",
        ));
    }
    out
}

/// `validateStructuralCompleteness`: every field a root junctor names is also specified
/// outside of it.
fn completeness(s: &Value, path: &Path) -> Vec<Cause> {
    value_validation_completeness(s, Some(s), path, path)
}

fn value_validation_completeness(v: &Value, s: Option<&Value>, s_path: &Path, v_path: &Path) -> Vec<Cause> {
    let Some(s) = s else {
        return vec![field::required(s_path, &format!("because it is defined in {}", v_path.as_str()))];
    };
    let mut out = Vec::new();
    if let Some(n) = get(v, "not") {
        out.extend(nested_completeness(n, Some(s), s_path, &v_path.child("not")));
    }
    for key in ["allOf", "anyOf", "oneOf"] {
        for (i, n) in list(v, key).iter().enumerate() {
            out.extend(nested_completeness(n, Some(s), s_path, &v_path.child(key).index(i)));
        }
    }
    out
}

fn nested_completeness(v: &Value, s: Option<&Value>, s_path: &Path, v_path: &Path) -> Vec<Cause> {
    let Some(s) = s else {
        return vec![field::required(s_path, &format!("because it is defined in {}", v_path.as_str()))];
    };
    let mut out = value_validation_completeness(v, Some(s), s_path, v_path);
    if let Some(i) = items_schema(v) {
        out.extend(nested_completeness(i, items_schema(s), &s_path.child("items"), &v_path.child("items")));
    }
    for (k, p) in entries(v, "properties") {
        let sp = s_path.child("properties").key(k);
        let vp = v_path.child("properties").key(k);
        match prop(s, k) {
            None => out.push(field::required(&sp, &format!("because it is defined in {}", vp.as_str()))),
            Some(sf) => out.extend(nested_completeness(p, Some(sf), &sp, &vp)),
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Defaults (`defaulting.ValidateDefaults`, as far as pruning).

/// kube's pruning (`pruning.Prune`): unknown fields dropped as the structural schema `s` says;
/// `embedded` marks a resource root, whose `apiVersion`, `kind` and `metadata` are kept.
pub(super) fn prune(x: &mut Value, s: Option<&Value>, embedded: bool) {
    if let Some(s) = s
        && flag(s, "x-kubernetes-preserve-unknown-fields")
    {
        skip_prune(x, s, embedded);
        return;
    }
    match x {
        Value::Object(m) => {
            let Some(s) = s else {
                m.clear();
                return;
            };
            let embedded = embedded || flag(s, "x-kubernetes-embedded-resource");
            prune_members(m, s, embedded, false);
        }
        Value::Array(a) => {
            for v in a {
                prune(v, s.and_then(items_schema), false);
            }
        }
        _ => {}
    }
}

/// The members of an object: known ones pruned by their schema; unknown ones dropped, or kept
/// (`keep_unknown`) where unknown fields are preserved.
fn prune_members(m: &mut Map<String, Value>, s: &Value, embedded: bool, keep_unknown: bool) {
    let keys: Vec<String> = m.keys().cloned().collect();
    for k in keys {
        if embedded && META_FIELDS.contains(&k.as_str()) {
            continue;
        }
        if let Some(p) = prop(s, &k) {
            prune(m.get_mut(&k).expect("key"), Some(p), false);
        } else if get(s, "additionalProperties").is_some() {
            prune(m.get_mut(&k).expect("key"), sub_schema(s, "additionalProperties"), false);
        } else if !keep_unknown {
            m.remove(&k);
        }
    }
}

/// `skipPrune`: under `x-kubernetes-preserve-unknown-fields`, only the known fields' content is
/// pruned.
fn skip_prune(x: &mut Value, s: &Value, embedded: bool) {
    match x {
        Value::Object(m) => {
            let embedded = embedded || flag(s, "x-kubernetes-embedded-resource");
            prune_members(m, s, embedded, true);
        }
        Value::Array(a) => {
            if let Some(items) = items_schema(s) {
                for v in a {
                    skip_prune(v, items, false);
                }
            }
        }
        _ => {}
    }
}

/// `ValidateDefaults` from the resource root: every default outside metadata must be pruned.
fn validate_defaults(path: &Path, s: &Value, require_pruned: bool) -> Vec<Cause> {
    let mut out = Vec::new();
    walk_defaults(path, s, true, false, require_pruned, &mut out);
    out
}

fn walk_defaults(path: &Path, s: &Value, is_root: bool, inside_meta: bool, require_pruned: bool, out: &mut Vec<Cause>) {
    let embedded = is_root || flag(s, "x-kubernetes-embedded-resource");
    let inside_meta = inside_meta && !embedded;
    if let Some(d) = get(s, "default")
        && !inside_meta
        && require_pruned
    {
        let mut pruned = d.clone();
        prune(&mut pruned, Some(s), embedded);
        if pruned != *d {
            out.push(field::invalid(&path.child("default"), go_value(d), "must not have unknown fields"));
        }
    }
    if let Some(i) = items_schema(s) {
        walk_defaults(&path.child("items"), i, false, inside_meta, require_pruned, out);
    }
    for (k, p) in entries(s, "properties") {
        let sub_meta = inside_meta || (embedded && META_FIELDS.contains(&k.as_str()));
        walk_defaults(&path.child("properties").key(k), p, false, sub_meta, require_pruned, out);
    }
}

// ---------------------------------------------------------------------------------------------
// `validateCustomResourceDefinitionValidation`.

/// `validateCustomResourceDefinitionValidation` of a `CustomResourceValidation` (the
/// `schema` member of a version, or the schema all versions share): the root's restrictions
/// under a status subresource, structural-schema errors, unpruned defaults, then the OpenAPI
/// rules.
pub(super) fn validate_validation(
    validation: Option<&Value>,
    status_enabled: bool,
    opts: &Options,
    path: &Path,
) -> Vec<Cause> {
    let mut out = Vec::new();
    let Some(schema) = validation.and_then(|v| get(v, "openAPIV3Schema")) else { return out };
    let sp = path.child("openAPIV3Schema");
    if status_enabled {
        for (key, allowed, zero) in ROOT_MEMBERS {
            let Some(v) = get(schema, key) else { continue };
            let unset = match zero {
                Zero::Str => v.as_str() == Some(""),
                Zero::Bool => v.as_bool() == Some(false),
                Zero::Ptr => false,
            };
            if unset {
                continue;
            }
            if key == "type" {
                if v.as_str() != Some("object") {
                    out.push(field::invalid(
                        &path.child("openAPIV3Schema.type"),
                        Bad::s(v.as_str().unwrap_or("")),
                        r#"only "object" is allowed as the type at the root of the schema if the status subresource is enabled"#,
                    ));
                    break;
                }
                continue;
            }
            if !allowed {
                out.push(field::invalid(
                    &sp,
                    Bad::Raw(field::go_struct(Some(schema))),
                    &format!("only {ROOT_FIELDS_WITH_STATUS} fields are allowed at the root of the schema if the status subresource is enabled"),
                ));
                break;
            }
        }
    }
    if flag(schema, "nullable") {
        out.push(field::forbidden(&path.child("openAPIV3Schema.nullable"), "nullable cannot be true at the root"));
    }
    let mut init_errors = Vec::new();
    // Rules are compiled only against a structural schema whose defaults are fine.
    let mut cel = false;
    if opts.require_structural_schema {
        if let Some(e) = new_structural_error(schema) {
            init_errors.push(field::invalid(&sp, Bad::s(""), &e));
        } else {
            let structural = validate_structural(&sp, schema);
            if !structural.is_empty() {
                out.extend(structural);
            } else {
                let defaults = validate_defaults(&sp, schema, opts.require_pruned_defaults);
                cel = defaults.is_empty();
                out.extend(defaults);
            }
        }
    }
    let ssv = Ssv {
        allow_defaults: opts.allow_defaults,
        disallow_reason: String::new(),
        inside_meta: false,
        valid_types: opts.require_valid_property_type,
        forbid_old_self: None,
    };
    let total = RefCell::new(TotalCost::default());
    let found = openapi_schema(
        schema,
        &sp,
        &ssv,
        true,
        opts,
        cel.then(|| CelContext::root(&total, opts.suppress_expression_cost, &opts.preexisting)),
    );
    out.extend(found.schema);
    out.extend(found.cel);
    if out.is_empty() {
        out.extend(init_errors);
    }
    out.extend(rules::total_cost_errors(&total.into_inner(), &sp));
    out
}

/// kube's `specStandardValidatorV3` state along a walk.
#[derive(Clone)]
struct Ssv {
    allow_defaults: bool,
    disallow_reason: String,
    inside_meta: bool,
    valid_types: bool,
    /// The highest node under which values cannot be correlated with their old values, so
    /// rules there may not use `oldSelf`.
    forbid_old_self: Option<Path>,
}

impl Ssv {
    fn forbidding_old_self(&self, path: &Path) -> Ssv {
        Ssv { forbid_old_self: Some(self.forbid_old_self.clone().unwrap_or_else(|| path.clone())), ..self.clone() }
    }

    fn forbidding_defaults(&self, reason: String) -> Ssv {
        Ssv { allow_defaults: false, disallow_reason: reason, ..self.clone() }
    }

    fn inside_meta(&self) -> Ssv {
        Ssv { inside_meta: true, ..self.clone() }
    }

    /// `specStandardValidatorV3.validate`: the OpenAPI features CRDs do not support.
    fn validate(&self, s: &Value, path: &Path) -> Vec<Cause> {
        let mut out = Vec::new();
        let ty = text(s, "type");
        if self.valid_types && !ty.is_empty() && !OPENAPI_V3_TYPES.contains(&ty) {
            out.push(field::not_supported(&path.child("type"), Bad::s(ty), &OPENAPI_V3_TYPES));
        }
        if get(s, "default").is_some() && !self.allow_defaults {
            let mut detail = "must not be set".to_string();
            if !self.disallow_reason.is_empty() {
                detail.push(' ');
                detail.push_str(&self.disallow_reason);
            }
            out.push(field::forbidden(&path.child("default"), &detail));
        }
        if !text(s, "id").is_empty() {
            out.push(field::forbidden(&path.child("id"), "id is not supported"));
        }
        if get(s, "additionalItems").is_some() {
            out.push(field::forbidden(&path.child("additionalItems"), "additionalItems is not supported"));
        }
        if s.get("patternProperties").and_then(Value::as_object).is_some_and(|m| !m.is_empty()) {
            out.push(field::forbidden(&path.child("patternProperties"), "patternProperties is not supported"));
        }
        if s.get("definitions").and_then(Value::as_object).is_some_and(|m| !m.is_empty()) {
            out.push(field::forbidden(&path.child("definitions"), "definitions is not supported"));
        }
        if get(s, "dependencies").is_some() {
            out.push(field::forbidden(&path.child("dependencies"), "dependencies is not supported"));
        }
        if get(s, "$ref").is_some() {
            out.push(field::forbidden(&path.child("$ref"), "$ref is not supported"));
        }
        if ty == "null" {
            out.push(field::forbidden(
                &path.child("type"),
                "type cannot be set to null, use nullable as an alternative",
            ));
        }
        if items_array(s).is_some_and(|a| !a.is_empty()) {
            out.push(field::forbidden(&path.child("items"), "items must be a schema object and not an array"));
        }
        if self.inside_meta && flag(s, "x-kubernetes-embedded-resource") {
            out.push(field::forbidden(
                &path.child("x-kubernetes-embedded-resource"),
                "must not be used inside of resource meta",
            ));
        }
        out
    }
}

/// What `ValidateCustomResourceDefinitionOpenAPISchema` finds, schema errors apart from CEL
/// errors: kube reports every schema error of the whole schema before any CEL error, and
/// compiles a node's rules only when nothing is wrong with the schema at or under it.
#[derive(Default)]
struct Found {
    schema: Vec<Cause>,
    cel: Vec<Cause>,
}

impl Found {
    fn append(&mut self, other: Found) {
        self.schema.extend(other.schema);
        self.cel.extend(other.cel);
    }
}

/// `ValidateCustomResourceDefinitionOpenAPISchema`. `cel` is kube's `CELSchemaContext`: `None`
/// where rules are not compiled (a schema that is not structural, inside junctors).
fn openapi_schema(
    s: &Value,
    path: &Path,
    ssv: &Ssv,
    is_root: bool,
    opts: &Options,
    cel: Option<CelContext<'_>>,
) -> Found {
    let mut found = Found::default();
    if !s.is_object() {
        return found;
    }
    let child_cel = cel.map(|c| c.child(s));
    let out = &mut found.schema;
    out.extend(ssv.validate(s, path));
    if flag(s, "uniqueItems") {
        out.push(field::forbidden(
            &path.child("uniqueItems"),
            "uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
        ));
    }
    let mut nested = Found::default();
    if let Some(ap) = get(s, "additionalProperties") {
        if has_props(s) && (!allows(ap) || ap.is_object()) {
            out.push(field::forbidden(
                &path.child("additionalProperties"),
                "additionalProperties and properties are mutual exclusive",
            ));
        }
        let sub = if ssv.inside_meta {
            ssv.forbidding_defaults("inside additionalProperties applying to object metadata".to_string())
        } else {
            ssv.clone()
        };
        if let Some(ap) = sub_schema(s, "additionalProperties") {
            nested.append(openapi_schema(ap, &path.child("additionalProperties"), &sub, false, opts, child_cel));
        }
    }
    let embedded = flag(s, "x-kubernetes-embedded-resource");
    for (k, p) in entries(s, "properties") {
        let mut sub = ssv.clone();
        // Old and new values of a map whose type is neither granular nor atomic cannot be
        // told apart field by field.
        if get(s, "x-kubernetes-map-type").is_some_and(|t| !matches!(t.as_str(), Some("granular" | "atomic"))) {
            sub = sub.forbidding_old_self(path);
        }
        if (is_root || embedded) && META_FIELDS.contains(&k.as_str()) {
            sub = sub.inside_meta();
            if is_root {
                sub = sub.forbidding_defaults(format!("in top-level {k}"));
            }
        }
        nested.append(openapi_schema(p, &path.child("properties").key(k), &sub, false, opts, child_cel));
    }
    if let Some(n) = get(s, "not") {
        nested.append(openapi_schema(n, &path.child("not"), ssv, false, opts, None));
    }
    for key in ["allOf", "oneOf", "anyOf"] {
        for (i, n) in list(s, key).iter().enumerate() {
            nested.append(openapi_schema(n, &path.child(key).index(i), ssv, false, opts, None));
        }
    }
    for (k, d) in entries(s, "definitions") {
        nested.append(openapi_schema(d, &path.child("definitions").key(k), ssv, false, opts, None));
    }
    // Only the items of a map list can be correlated with their old values (by key); set
    // items have no identity CEL could use.
    let items_ssv = if s.get("x-kubernetes-list-type").and_then(Value::as_str) == Some("map") {
        ssv.clone()
    } else {
        ssv.forbidding_old_self(path)
    };
    if let Some(i) = items_schema(s) {
        nested.append(openapi_schema(i, &path.child("items"), &items_ssv, false, opts, child_cel));
    }
    for (i, n) in items_array(s).into_iter().flatten().enumerate() {
        nested.append(openapi_schema(n, &path.child("items").index(i), &items_ssv, false, opts, child_cel));
    }
    for (k, d) in entries(s, "dependencies") {
        if d.is_object() {
            nested.append(openapi_schema(d, &path.child("dependencies").key(k), ssv, false, opts, None));
        }
    }
    let out = &mut found.schema;
    out.extend(std::mem::take(&mut nested.schema));
    if s.get("x-kubernetes-preserve-unknown-fields").and_then(Value::as_bool) == Some(false) {
        out.push(field::invalid(
            &path.child("x-kubernetes-preserve-unknown-fields"),
            Bad::Bool(false),
            "must be true or undefined",
        ));
    }
    out.extend(list_and_map_types(s, path, opts));
    if opts.require_map_list_keys_map_set_validation {
        out.extend(validate_map_list_keys_map_set(s, path));
    }
    out.extend(validation_rules(s, path));
    found.cel = nested.cel;
    if let Some(cel) = cel
        && found.schema.is_empty()
    {
        found.cel.extend(rules::compile_errors(s, path, is_root, cel, ssv.forbid_old_self.as_ref()));
    }
    found
}

/// The `x-kubernetes-map-type`, `x-kubernetes-list-type` and `x-kubernetes-list-map-keys`
/// rules.
fn list_and_map_types(s: &Value, path: &Path, opts: &Options) -> Vec<Cause> {
    let mut out = Vec::new();
    let ty = text(s, "type");
    let type_rule = |out: &mut Vec<Cause>, detail: &str| {
        out.push(if ty.is_empty() {
            field::required(&path.child("type"), detail)
        } else {
            field::invalid(&path.child("type"), Bad::s(ty), detail)
        });
    };
    if let Some(mt) = get(s, "x-kubernetes-map-type") {
        if ty != "object" {
            type_rule(&mut out, "must be object if x-kubernetes-map-type is specified");
        }
        let mt = mt.as_str().unwrap_or("");
        if mt != "atomic" && mt != "granular" {
            out.push(field::not_supported(&path.child("x-kubernetes-map-type"), Bad::s(mt), &["atomic", "granular"]));
        }
    }
    let list_type = get(s, "x-kubernetes-list-type").map(|t| t.as_str().unwrap_or(""));
    if list_type.is_some() && ty != "array" {
        type_rule(&mut out, "must be array if x-kubernetes-list-type is specified");
    } else if opts.require_atomic_set_type
        && list_type == Some("set")
        && let Some(is) = items_schema(s)
    {
        let detail = "must be atomic as item of a list with x-kubernetes-list-type=set";
        match text(is, "type") {
            "array" => {
                if let Some(t) = get(is, "x-kubernetes-list-type").filter(|t| t.as_str() != Some("atomic")) {
                    out.push(field::invalid(
                        &path.child("items").child("x-kubernetes-list-type"),
                        Bad::s(t.as_str().unwrap_or("")),
                        detail,
                    ));
                }
            }
            "object" if is.get("x-kubernetes-map-type").and_then(Value::as_str) != Some("atomic") => {
                // kube reports the items' list type here.
                out.push(field::invalid(
                    &path.child("items").child("x-kubernetes-map-type"),
                    go_str_ptr(is, "x-kubernetes-list-type"),
                    detail,
                ));
            }
            _ => {}
        }
    }
    if let Some(lt) = list_type
        && !matches!(lt, "atomic" | "set" | "map")
    {
        out.push(field::not_supported(&path.child("x-kubernetes-list-type"), Bad::s(lt), &["atomic", "set", "map"]));
    }
    let keys = strings(s, "x-kubernetes-list-map-keys");
    if !keys.is_empty() {
        let detail = "must be map if x-kubernetes-list-map-keys is non-empty";
        match list_type {
            None => out.push(field::required(&path.child("x-kubernetes-list-type"), detail)),
            Some(lt) if lt != "map" => {
                out.push(field::invalid(&path.child("x-kubernetes-list-type"), Bad::s(lt), detail))
            }
            _ => {}
        }
    }
    if list_type == Some("map") {
        if keys.is_empty() {
            out.push(field::required(
                &path.child("x-kubernetes-list-map-keys"),
                "must not be empty if x-kubernetes-list-type is map",
            ));
        }
        match get(s, "items") {
            None => {
                out.push(field::required(&path.child("items"), "must have a schema if x-kubernetes-list-type is map"))
            }
            Some(items) if !items.is_object() => out.push(field::invalid(
                &path.child("items"),
                Bad::Raw(field::go_struct(Some(items))),
                "must only have a single schema if x-kubernetes-list-type is map",
            )),
            Some(is) if text(is, "type") != "object" => out.push(field::invalid(
                &path.child("items").child("type"),
                Bad::s(text(is, "type")),
                "must be object if parent array's x-kubernetes-list-type is map",
            )),
            Some(is) => {
                let mut seen = std::collections::HashSet::new();
                for k in &keys {
                    match prop(is, k) {
                        Some(p) => {
                            if matches!(text(p, "type"), "array" | "object") {
                                // kube reports the items' type, not the key's.
                                out.push(field::invalid(
                                    &path.child("items").child("properties").key(k).child("type"),
                                    Bad::s(text(is, "type")),
                                    "must be a scalar type if parent array's x-kubernetes-list-type is map",
                                ));
                            }
                        }
                        None => out.push(field::invalid(
                            &path.child("x-kubernetes-list-map-keys"),
                            go_strings(&keys),
                            "entries must all be names of item properties",
                        )),
                    }
                    if !seen.insert(*k) {
                        out.push(field::invalid(
                            &path.child("x-kubernetes-list-map-keys"),
                            go_strings(&keys),
                            "must not contain duplicate entries",
                        ));
                    }
                }
            }
        }
    }
    out
}

/// `validateMapListKeysMapSet`: a set's or map's items are not nullable, and a map's keys are
/// required or defaulted, and not nullable.
fn validate_map_list_keys_map_set(s: &Value, path: &Path) -> Vec<Cause> {
    let mut out = Vec::new();
    let Some(is) = items_schema(s) else { return out };
    let Some(lt) = s.get("x-kubernetes-list-type").and_then(Value::as_str).filter(|t| matches!(*t, "set" | "map"))
    else {
        return out;
    };
    if flag(is, "nullable") {
        out.push(field::forbidden(
            &path.child("items").child("nullable"),
            &format!("cannot be nullable when x-kubernetes-list-type is {lt}"),
        ));
    }
    if lt == "map" {
        let required = strings(is, "required");
        for k in strings(s, "x-kubernetes-list-map-keys") {
            let Some(p) = prop(is, k) else { continue };
            let kp = path.child("items").child("properties").key(k);
            if !required.contains(&k) && get(p, "default").is_none() {
                out.push(field::required(
                    &kp.child("default"),
                    "this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property",
                ));
            }
            if flag(p, "nullable") {
                out.push(field::forbidden(
                    &kp.child("nullable"),
                    "this property is in x-kubernetes-list-map-keys, so it cannot be nullable",
                ));
            }
        }
    }
    out
}

/// The `x-kubernetes-validations` entries' own fields (their CEL is compiled in [`rules`]).
fn validation_rules(s: &Value, path: &Path) -> Vec<Cause> {
    let mut out = Vec::new();
    for (i, rule) in list(s, "x-kubernetes-validations").iter().enumerate() {
        let rp = path.child("x-kubernetes-validations").index(i);
        let (r, msg, msg_expr) = (text(rule, "rule"), text(rule, "message"), text(rule, "messageExpression"));
        let (tr, tm) = (r.trim(), msg.trim());
        if tr.is_empty() {
            out.push(field::required(&rp.child("rule"), "rule is not specified"));
        } else if !msg.is_empty() && tm.is_empty() {
            out.push(field::invalid(&rp.child("message"), Bad::s(msg), "message must be non-empty if specified"));
        } else if has_newlines(tm) {
            out.push(field::invalid(&rp.child("message"), Bad::s(msg), "message must not contain line breaks"));
        } else if has_newlines(tr) && tm.is_empty() {
            out.push(field::required(&rp.child("message"), "message must be specified if rule contains line breaks"));
        }
        if !msg_expr.is_empty() && msg_expr.trim().is_empty() {
            out.push(field::required(
                &rp.child("messageExpression"),
                "messageExpression must be non-empty if specified",
            ));
        }
        if let Some(reason) = get(rule, "reason") {
            let reason = reason.as_str().unwrap_or("");
            if !VALIDATION_REASONS.contains(&reason) {
                out.push(field::not_supported(&rp.child("reason"), Bad::s(reason), &VALIDATION_REASONS));
            }
        }
        let fp = text(rule, "fieldPath");
        if !fp.is_empty() && fp.trim().is_empty() {
            out.push(field::invalid(&rp.child("fieldPath"), Bad::s(fp), "fieldPath must be non-empty if specified"));
        }
        if has_newlines(fp) {
            out.push(field::invalid(&rp.child("fieldPath"), Bad::s(fp), "fieldPath must not contain line breaks"));
        }
        if !fp.is_empty() && new_structural_error(s).is_none() && valid_field_path(fp, s, true).is_err() {
            out.push(field::invalid(&rp.child("fieldPath"), Bad::s(fp), "fieldPath must be a valid path"));
        }
    }
    out
}
