//! Schema validation as kube-openapi's `validate.SchemaValidator` runs it for a custom
//! resource, with each error converted the way apiextensions' `kubeOpenAPIResultToFieldErrors`
//! converts it into a `field.Error`.
//!
//! kube-openapi names a value by its path from the root (`spec.replicas`, `spec.items[1]`, a
//! map value `spec.labels.key`: dotted, unlike the bracketed `[key]` of apiextensions' own
//! checks), and words every message `<path> in body ...`. A node runs its validators in
//! kube-openapi's order (type, allOf/anyOf/oneOf/not, string, format, number, array, enum,
//! object), each only when it applies to the value's JSON kind; so a value of the wrong type
//! gets its type error and nothing from below it.
//!
//! Errors are deduplicated as kube-openapi's `Result.AddErrors` does. kube-openapi picks the
//! failures reported for a failed `anyOf`/`oneOf` by a count of the checks each branch passed
//! (`MatchCount`); that count is kept here with the same increments.

use apimachinery::error::Cause;
use apimachinery::validation::field::{self, Bad, Path, go_quote};
use serde_json::{Map, Value};

use super::MAX_DEPTH;
use super::formats;
use super::node::{Additional, Node};
use super::pattern;
use super::render::{Num, bad, float_v, json_marshal, num};

/// kube-openapi's `Result`: errors in order, deduplicated, and the `MatchCount`.
#[derive(Debug, Default)]
struct Res {
    errs: Vec<Cause>,
    count: usize,
}

impl Res {
    fn err(c: Cause) -> Res {
        Res { errs: vec![c], count: 0 }
    }

    fn add(&mut self, c: Cause) {
        if !self.errs.contains(&c) {
            self.errs.push(c);
        }
    }

    fn merge(&mut self, other: Res) {
        for c in other.errs {
            self.add(c);
        }
        self.count += other.count;
    }

    fn valid(&self) -> bool {
        self.errs.is_empty()
    }
}

/// The field path kube reports for a kube-openapi name: the leading `.` of root-level names
/// (`.spec` from a root `required`) trimmed, the root itself empty.
fn path(name: &str) -> Path {
    Path::new(name.strip_prefix('.').unwrap_or(name))
}

/// An error kube-openapi raises as a plain `errors.New` (the composite `anyOf`/`oneOf`/`allOf`
/// /`not` failures): kube reports it with no field and an empty value.
fn composite(message: String) -> Cause {
    field::invalid(&Path::new(""), Bad::s(""), &message)
}

/// `errors.InvalidType` with a string value, converted to `field.TypeInvalid`.
fn invalid_type(name: &str, type_name: &str, value: &str) -> Cause {
    let message = format!("{name} in body must be of type {type_name}: {}", go_quote(value));
    field::type_invalid(&path(name), Bad::s(value), &message)
}

/// The schema's `format` after apiextensions strips the formats it does not support.
fn supported_format<'a>(s: Node<'a>) -> &'a str {
    s.str("format").filter(|f| formats::is_supported(f)).unwrap_or("")
}

/// Errors of `obj` against the root schema `s`.
pub(crate) fn schema_errors(s: Node<'_>, obj: &Value) -> Vec<Cause> {
    node(s, "", obj, 0).errs
}

/// `SchemaValidator.Validate` for one node.
fn node(s: Node<'_>, name: &str, data: &Value, depth: usize) -> Res {
    if depth > MAX_DEPTH {
        return Res::err(super::too_deep(&path(name)));
    }
    let mut res = Res::default();
    if data.is_null() {
        // kube-openapi runs only the type and enum checks on a nil value.
        res.merge(type_check(s, name, data));
        res.merge(enum_check(s, name, data));
        return res;
    }
    let format = supported_format(s);
    let run = |res: &mut Res, r: Res| {
        res.merge(r);
        res.count += 1;
    };
    if !s.types().is_empty() || !format.is_empty() {
        run(&mut res, type_check(s, name, data));
    }
    run(&mut res, composites(s, name, data, depth));
    if let Value::String(text) = data {
        run(&mut res, string_check(s, name, text));
        if !format.is_empty() {
            run(&mut res, format_check(format, name, text));
        }
    }
    if let Value::Number(n) = data {
        run(&mut res, number_check(s, name, num(n)));
    }
    if let Value::Array(items) = data {
        run(&mut res, array_check(s, name, items, depth));
    }
    run(&mut res, enum_check(s, name, data));
    if let Value::Object(m) = data {
        run(&mut res, object_check(s, name, m, depth));
    }
    res.count += 1;
    res
}

/// kube-openapi's `typeValidator`, with its format rules: a number never matches a string
/// format, and a string or array is not type-checked when the schema has a format but is not
/// numeric (a quirk kept as is).
fn type_check(s: Node<'_>, name: &str, data: &Value) -> Res {
    let types = s.types();
    let format = supported_format(s);
    let ok = Res { errs: Vec::new(), count: 1 };
    let joined = types.join(",");
    if data.is_null() {
        if !types.is_empty() && !types.contains(&"null") && !s.nullable() {
            return Res::err(invalid_type(name, &joined, "null"));
        }
        return ok;
    }
    let (json_type, data_format) = match data {
        Value::Bool(_) => ("boolean", ""),
        Value::String(_) => ("string", ""),
        Value::Number(n) => match num(n) {
            Num::Int(_) => ("integer", "int64"),
            Num::Float(_) => ("number", "float64"),
        },
        Value::Array(_) => ("array", ""),
        _ => ("object", ""),
    };
    // A float with an integral value passes as an integer, an integer as a number.
    let float_int = matches!(data, Value::Number(n) if matches!(num(n), Num::Float(f) if is_json_integer(f)))
        && types.contains(&"integer");
    let int_float = json_type == "integer" && types.contains(&"number");
    let stringish = data.is_string() || data.is_array();
    let formatted = !format.is_empty();
    let matches_type = types.contains(&json_type) || data_format == format || float_int || int_float;
    if formatted && !stringish && !matches_type {
        return Res::err(invalid_type(name, format, data_format));
    }
    let numeric = types.contains(&"number") || types.contains(&"integer");
    if formatted && stringish && !numeric {
        return ok;
    }
    if !(types.contains(&json_type) || float_int || int_float) {
        return Res::err(invalid_type(name, &joined, json_type));
    }
    ok
}

/// `allOf`, `anyOf`, `oneOf` and `not` (kube-openapi's `schemaPropsValidator`).
fn composites(s: Node<'_>, name: &str, data: &Value, depth: usize) -> Res {
    let mut main = Res::default();
    let any_of = s.list("anyOf");
    if !any_of.is_empty() {
        let mut best: Option<Res> = None;
        let mut first_success: Option<Res> = None;
        for branch in any_of {
            let r = node(branch, name, data, depth + 1);
            if r.valid() {
                best = None;
                first_success = Some(r);
                break;
            }
            if best.as_ref().is_none_or(|b| r.count > b.count) {
                best = Some(r);
            }
        }
        if first_success.is_none() {
            main.add(composite(format!("{} must validate at least one schema (anyOf)", go_quote(name))));
        }
        if let Some(r) = best.or(first_success) {
            main.merge(r);
        }
    }
    let one_of = s.list("oneOf");
    if !one_of.is_empty() {
        let mut best: Option<Res> = None;
        let mut first_success: Option<Res> = None;
        let mut validated = 0;
        for branch in one_of {
            let r = node(branch, name, data, depth + 1);
            if r.valid() {
                validated += 1;
                best = None;
                if first_success.is_none() {
                    first_success = Some(r);
                }
                continue;
            }
            if validated == 0 && best.as_ref().is_none_or(|b| r.count > b.count) {
                best = Some(r);
            }
        }
        if validated != 1 {
            let detail = if validated == 0 {
                "Found none valid".to_string()
            } else {
                format!("Found {validated} valid alternatives")
            };
            main.add(composite(format!("{} must validate one and only one schema (oneOf). {detail}", go_quote(name))));
            if let Some(r) = best {
                main.merge(r);
            }
        } else if let Some(r) = first_success {
            main.merge(r);
        }
    }
    let all_of = s.list("allOf");
    if !all_of.is_empty() {
        let total = all_of.len();
        let mut validated = 0;
        for branch in all_of {
            let r = node(branch, name, data, depth + 1);
            if r.valid() {
                validated += 1;
            }
            main.merge(r);
        }
        if validated != total {
            let detail = if validated == 0 { ". None validated" } else { "" };
            main.add(composite(format!("{} must validate all the schemas (allOf){detail}", go_quote(name))));
        }
    }
    if let Some(not) = s.get("not").and_then(Node::of)
        && node(not, name, data, depth + 1).valid()
    {
        main.add(composite(format!("{} must not validate the schema (not)", go_quote(name))));
    }
    main.count += 1;
    main
}

/// `maxLength`, `minLength`, `pattern`: the first failure only, as kube-openapi stops there.
/// Lengths count Unicode code points.
fn string_check(s: Node<'_>, name: &str, text: &str) -> Res {
    let len = text.chars().count() as i64;
    if let Some(max) = s.i64("maxLength").filter(|max| len > *max) {
        return Res::err(field::too_long_max_length(&path(name), max));
    }
    if let Some(min) = s.i64("minLength").filter(|min| len < *min) {
        let message = format!("{name} in body should be at least {min} chars long");
        return Res::err(field::invalid(&path(name), Bad::s(text), &message));
    }
    if let Some(p) = s.str("pattern").filter(|p| !p.is_empty()) {
        let failure = match pattern::compile(p) {
            Err(e) => Some(format!("{p}, but pattern is invalid: {e}")),
            Ok(re) if !re.is_match(text) => Some(p.to_string()),
            Ok(_) => None,
        };
        if let Some(shown) = failure {
            let message = format!("{name} in body should match '{shown}'");
            return Res::err(field::invalid(&path(name), Bad::s(text), &message));
        }
    }
    Res::default()
}

fn format_check(format: &str, name: &str, text: &str) -> Res {
    if formats::validates(format, text) {
        return Res::default();
    }
    Res::err(field::type_invalid(
        &path(name),
        Bad::s(text),
        &format!("{name} in body must be of type {format}: {}", go_quote(text)),
    ))
}

/// Go's `int64(f)`: truncation toward zero.
fn go_i64(f: f64) -> i64 {
    f as i64
}

/// go-openapi's `swag.IsFloat64AJSONInteger`: integral within ±(2^53-1), allowing a relative
/// error of 1e-9.
fn is_json_integer(f: f64) -> bool {
    const MAX: f64 = 9_007_199_254_740_991.0;
    if !f.is_finite() || !(-MAX..=MAX).contains(&f) {
        return false;
    }
    if f == f.trunc() {
        return true;
    }
    if f < 0.0 {
        // Go's uint64(f) of a negative float lands far away: the relative error is ~1.
        return false;
    }
    let g = f.trunc();
    let diff = (f - g).abs();
    if g == 0.0 {
        return diff < 1e-9 * f64::from_bits(1);
    }
    diff / (f + g) < 1e-9
}

/// `multipleOf`, `minimum`, `maximum`: on an integer value the bounds are truncated to integers
/// first (kube-openapi's native-type path), on a float they stay floats; both print as Go does.
fn number_check(s: Node<'_>, name: &str, n: Num) -> Res {
    let p = path(name);
    let (mut multiple, mut minimum, mut maximum) = (None, None, None);
    let excl_max = s.get("exclusiveMaximum").and_then(Value::as_bool).unwrap_or(false);
    let excl_min = s.get("exclusiveMinimum").and_then(Value::as_bool).unwrap_or(false);
    let less = |excl: bool| if excl { "less than" } else { "less than or equal to" };
    let greater = |excl: bool| if excl { "greater than" } else { "greater than or equal to" };
    match n {
        Num::Int(v) => {
            if let Some(factor) = s.f64("multipleOf").map(go_i64) {
                if factor <= 0 {
                    let message = format!("factor MultipleOf declared for {name} must be positive: {factor}");
                    multiple = Some(field::invalid(&p, Bad::Int(factor), &message));
                } else if v.wrapping_rem(factor) != 0 {
                    let message = format!("{name} in body should be a multiple of {factor}");
                    multiple = Some(field::invalid(&p, Bad::Int(v), &message));
                }
            }
            if let Some(max) = s.f64("maximum").map(go_i64)
                && ((!excl_max && v > max) || (excl_max && v >= max))
            {
                let message = format!("{name} in body should be {} {max}", less(excl_max));
                maximum = Some(field::invalid(&p, Bad::Int(v), &message));
            }
            if let Some(min) = s.f64("minimum").map(go_i64)
                && ((!excl_min && v < min) || (excl_min && v <= min))
            {
                let message = format!("{name} in body should be {} {min}", greater(excl_min));
                minimum = Some(field::invalid(&p, Bad::Int(v), &message));
            }
        }
        Num::Float(v) => {
            let value = || Bad::Raw(float_v(v));
            if let Some(factor) = s.f64("multipleOf") {
                if factor <= 0.0 {
                    let shown = float_v(factor);
                    let message = format!("factor MultipleOf declared for {name} must be positive: {shown}");
                    multiple = Some(field::invalid(&p, Bad::Raw(shown), &message));
                } else {
                    let mult = if factor < 1.0 { 1.0 / factor * v } else { v / factor };
                    if !is_json_integer(mult) {
                        let message = format!("{name} in body should be a multiple of {}", float_v(factor));
                        multiple = Some(field::invalid(&p, value(), &message));
                    }
                }
            }
            if let Some(max) = s.f64("maximum")
                && ((!excl_max && v > max) || (excl_max && v >= max))
            {
                let message = format!("{name} in body should be {} {}", less(excl_max), float_v(max));
                maximum = Some(field::invalid(&p, value(), &message));
            }
            if let Some(min) = s.f64("minimum")
                && ((!excl_min && v < min) || (excl_min && v <= min))
            {
                let message = format!("{name} in body should be {} {}", greater(excl_min), float_v(min));
                minimum = Some(field::invalid(&p, value(), &message));
            }
        }
    }
    let mut res = Res { errs: Vec::new(), count: 1 };
    // kube-openapi merges multipleOf, then minimum, then maximum.
    for c in [multiple, minimum, maximum].into_iter().flatten() {
        res.add(c);
    }
    res
}

/// `items`, then `minItems`, `maxItems`, `uniqueItems` (kube-openapi's `schemaSliceValidator`).
fn array_check(s: Node<'_>, name: &str, items: &[Value], depth: usize) -> Res {
    let mut res = Res::default();
    if let Some(item_schema) = s.items() {
        for (i, item) in items.iter().enumerate() {
            res.merge(node(item_schema, &format!("{name}[{i}]"), item, depth + 1));
        }
    }
    let size = items.len() as i64;
    if let Some(min) = s.i64("minItems").filter(|min| size < *min) {
        let message = format!("{name} in body should have at least {min} items");
        res.add(field::invalid(&path(name), Bad::Int(size), &message));
    }
    if let Some(max) = s.i64("maxItems").filter(|max| size > *max) {
        res.add(field::too_many(&path(name), size as usize, max.max(0) as usize));
    }
    if s.get("uniqueItems").and_then(Value::as_bool) == Some(true)
        && items.iter().enumerate().any(|(i, a)| items[..i].contains(a))
    {
        let message = format!("{name} in body shouldn't contain duplicates");
        res.add(field::invalid(&path(name), Bad::s(""), &message));
    }
    res.count += 1;
    res
}

/// `enum`: kube-openapi compares after Go's reflect conversion to each allowed value's type, so
/// `1.0` matches `1`, `1.5` matches `1` (float to int truncates) and an integer matches the
/// string of its code point; `null` matches nothing. kube lists the allowed values as strings,
/// JSON for non-strings.
fn enum_check(s: Node<'_>, name: &str, data: &Value) -> Res {
    let Some(allowed) = s.get("enum").and_then(Value::as_array).filter(|a| !a.is_empty()) else {
        return Res::default();
    };
    if !data.is_null() && allowed.iter().any(|a| enum_matches(data, a)) {
        return Res::default();
    }
    let shown: Vec<String> =
        allowed.iter().map(|a| a.as_str().map(str::to_string).unwrap_or_else(|| json_marshal(a))).collect();
    let shown: Vec<&str> = shown.iter().map(String::as_str).collect();
    Res::err(field::not_supported(&path(name), bad(data), &shown))
}

fn enum_matches(data: &Value, allowed: &Value) -> bool {
    match (data, allowed) {
        (Value::String(a), Value::String(b)) => a == b,
        (Value::Bool(a), Value::Bool(b)) => a == b,
        (Value::Number(a), Value::Number(b)) => match (num(a), num(b)) {
            (Num::Int(x), Num::Int(y)) => x == y,
            (Num::Int(x), Num::Float(y)) => x as f64 == y,
            (Num::Float(x), Num::Int(y)) => go_i64(x) == y,
            (Num::Float(x), Num::Float(y)) => x == y,
        },
        (Value::Number(a), Value::String(b)) => match num(a) {
            Num::Int(x) => {
                let c = u32::try_from(x).ok().and_then(char::from_u32).unwrap_or('\u{FFFD}');
                b.chars().eq(std::iter::once(c))
            }
            Num::Float(_) => false,
        },
        (Value::Array(_), Value::Array(_)) | (Value::Object(_), Value::Object(_)) => data == allowed,
        _ => false,
    }
}

/// `minProperties`, `maxProperties`, `additionalProperties`, `properties`, `required`
/// (kube-openapi's `objectValidator`; kube iterates Go maps, here keys go in sorted order).
fn object_check(s: Node<'_>, name: &str, m: &Map<String, Value>, depth: usize) -> Res {
    let mut res = Res::default();
    let size = m.len() as i64;
    if let Some(min) = s.i64("minProperties").filter(|min| size < *min) {
        let message = format!("{name} in body should have at least {min} properties");
        res.add(field::invalid(&path(name), Bad::Int(size), &message));
    }
    if let Some(max) = s.i64("maxProperties").filter(|max| size > *max) {
        res.add(field::too_many(&path(name), size as usize, max.max(0) as usize));
    }
    let props = s.properties();
    let declared = |k: &str| props.is_some_and(|p| p.contains_key(k));
    match s.additional() {
        Additional::Bool(false) => {
            for k in m.keys().filter(|k| !declared(k)) {
                let message = format!("{name}.{k} in body is a forbidden property");
                res.add(field::invalid(&path(name), Bad::s(k.as_str()), &message));
            }
        }
        Additional::Schema(values) => {
            for (k, v) in m.iter().filter(|(k, _)| !declared(k)) {
                res.merge(node(values, &format!("{name}.{k}"), v, depth + 1));
            }
        }
        _ => {}
    }
    for (p, schema) in props.into_iter().flatten() {
        let (Some(schema), Some(v)) = (Node::of(schema), m.get(p)) else { continue };
        let child = if name.is_empty() { p.clone() } else { format!("{name}.{p}") };
        res.merge(node(schema, &child, v, depth + 1));
    }
    for k in s.get("required").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str) {
        if !m.contains_key(k) {
            res.add(field::required(&path(&format!("{name}.{k}")), ""));
        }
    }
    res
}
