//! `metadata` and label selectors: apimachinery's `ValidateObjectMeta`,
//! `ValidateObjectMetaUpdate`, `ValidateLabels`, `ValidateAnnotations`, `ValidateLabelSelector`,
//! plus the kube finalizer-name rule core adds on top.

use serde_json::{Map, Value};

use super::field::{self, Bad, Path};
use super::names;
use crate::error::Cause;

pub use super::names::NameFn;

/// Max total size of `metadata.annotations` (keys plus values).
pub const TOTAL_ANNOTATION_SIZE: usize = 256 * 1024;

const STANDARD_FINALIZERS: &[&str] = &["kubernetes", "orphan", "foregroundDeletion"];

fn string_map(v: Option<&Value>) -> Vec<(&str, &str)> {
    let mut out: Vec<(&str, &str)> = v
        .and_then(Value::as_object)
        .map(|m| m.iter().map(|(k, v)| (k.as_str(), v.as_str().unwrap_or(""))).collect())
        .unwrap_or_default();
    // Go iterates maps in random order; sorting keeps our causes deterministic.
    out.sort();
    out
}

/// `ValidateLabelName`.
pub fn validate_label_name(key: &str, path: &Path) -> Vec<Cause> {
    names::qualified_name(key).into_iter().map(|m| field::invalid(path, Bad::s(key), &m)).collect()
}

/// `ValidateLabels`: every problem is reported at the map's own path.
pub fn validate_labels(labels: Option<&Value>, path: &Path) -> Vec<Cause> {
    let mut out = Vec::new();
    for (k, v) in string_map(labels) {
        out.extend(validate_label_name(k, path));
        out.extend(names::label_value(v).into_iter().map(|m| field::invalid(path, Bad::s(v), &m)));
    }
    out
}

/// `ValidateAnnotations`: keys are qualified names (case-insensitive), total size bounded.
pub fn validate_annotations(annotations: Option<&Value>, path: &Path) -> Vec<Cause> {
    let mut out = Vec::new();
    let pairs = string_map(annotations);
    for (k, _) in &pairs {
        out.extend(names::qualified_name(&k.to_lowercase()).into_iter().map(|m| field::invalid(path, Bad::s(*k), &m)));
    }
    let total: usize = pairs.iter().map(|(k, v)| k.len() + v.len()).sum();
    if total > TOTAL_ANNOTATION_SIZE {
        out.push(field::too_long(path, TOTAL_ANNOTATION_SIZE));
    }
    out
}

fn validate_kube_finalizer_name(name: &str, path: &Path) -> Vec<Cause> {
    if !name.contains('/') && !STANDARD_FINALIZERS.contains(&name) {
        return vec![field::invalid(
            path,
            Bad::s(name),
            "name is neither a standard finalizer name nor is it fully qualified",
        )];
    }
    Vec::new()
}

fn validate_finalizers(finalizers: Option<&Value>, path: &Path) -> Vec<Cause> {
    let mut out = Vec::new();
    let list: Vec<&str> =
        finalizers.and_then(Value::as_array).map(|a| a.iter().filter_map(Value::as_str).collect()).unwrap_or_default();
    for f in &list {
        out.extend(names::qualified_name(f).into_iter().map(|m| field::invalid(path, Bad::s(*f), &m)));
    }
    if list.contains(&"orphan") && list.contains(&"foregroundDeletion") {
        out.push(field::invalid(
            path,
            Bad::Raw(field::go_string_slice(finalizers)),
            "finalizer orphan and foregroundDeletion cannot be both set",
        ));
    }
    out
}

fn validate_owner_references(refs: Option<&Value>, path: &Path) -> Vec<Cause> {
    let mut out = Vec::new();
    let mut first_controller: Option<String> = None;
    for r in refs.and_then(Value::as_array).into_iter().flatten() {
        let s = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        let (api_version, kind, name, uid) = (s("apiVersion"), s("kind"), s("name"), s("uid"));
        let version = api_version.rsplit('/').next().unwrap_or("");
        if version.is_empty() {
            out.push(field::invalid(&path.child("apiVersion"), Bad::s(&api_version), "version must not be empty"));
        }
        if kind.is_empty() {
            out.push(field::invalid(&path.child("kind"), Bad::s(&kind), "kind must not be empty"));
        }
        if name.is_empty() {
            out.push(field::invalid(&path.child("name"), Bad::s(&name), "name must not be empty"));
        }
        if uid.is_empty() {
            out.push(field::invalid(&path.child("uid"), Bad::s(&uid), "uid must not be empty"));
        }
        if api_version == "v1" && kind == "Event" {
            out.push(field::invalid(
                path,
                Bad::Raw(field::go_struct(Some(r))),
                "/v1, Kind=Event is disallowed from being an owner",
            ));
        }
        if r.get("controller").and_then(Value::as_bool) == Some(true) {
            let current = format!("{kind}/{name}");
            match &first_controller {
                Some(first) => out.push(field::invalid(
                    path,
                    Bad::Raw(field::go_struct(refs)),
                    &format!(
                        "Only one reference can have Controller set to true. Found \"true\" in references for {first} and {current}"
                    ),
                )),
                None => first_controller = Some(current),
            }
        }
    }
    out
}

/// `ValidateObjectMeta` (the core flavour adds the kube finalizer-name rule: `kube_finalizers`).
pub fn validate_object_meta(
    meta: Option<&Map<String, Value>>,
    requires_namespace: bool,
    name_fn: NameFn,
    path: &Path,
    kube_finalizers: bool,
) -> Vec<Cause> {
    let empty = Map::new();
    let meta = meta.unwrap_or(&empty);
    let s = |k: &str| meta.get(k).and_then(Value::as_str).unwrap_or("");
    let mut out = Vec::new();
    let generate_name = s("generateName");
    if !generate_name.is_empty() {
        out.extend(
            name_fn(generate_name, true)
                .into_iter()
                .map(|m| field::invalid(&path.child("generateName"), Bad::s(generate_name), &m)),
        );
    }
    let name = s("name");
    if name.is_empty() {
        out.push(field::required(&path.child("name"), "name or generateName is required"));
    } else {
        out.extend(name_fn(name, false).into_iter().map(|m| field::invalid(&path.child("name"), Bad::s(name), &m)));
    }
    let namespace = s("namespace");
    if requires_namespace {
        if namespace.is_empty() {
            out.push(field::required(&path.child("namespace"), ""));
        } else {
            out.extend(
                names::name_is_dns_label(namespace, false)
                    .into_iter()
                    .map(|m| field::invalid(&path.child("namespace"), Bad::s(namespace), &m)),
            );
        }
    } else if !namespace.is_empty() {
        out.push(field::forbidden(&path.child("namespace"), "not allowed on this type"));
    }
    if let Some(g) = meta.get("generation").and_then(Value::as_i64).filter(|g| *g < 0) {
        out.push(field::invalid(&path.child("generation"), Bad::Int(g), super::NEGATIVE));
    }
    out.extend(validate_labels(meta.get("labels"), &path.child("labels")));
    out.extend(validate_annotations(meta.get("annotations"), &path.child("annotations")));
    out.extend(validate_owner_references(meta.get("ownerReferences"), &path.child("ownerReferences")));
    out.extend(validate_finalizers(meta.get("finalizers"), &path.child("finalizers")));
    if kube_finalizers {
        for f in meta.get("finalizers").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str) {
            out.extend(validate_kube_finalizer_name(f, &path.child("finalizers")));
        }
    }
    out
}

fn immutable(new: Option<&Value>, old: Option<&Value>, path: &Path, out: &mut Vec<Cause>) {
    let norm = |v: Option<&Value>| v.filter(|v| !v.is_null() && *v != &Value::String(String::new())).cloned();
    if norm(new) != norm(old) {
        out.push(field::invalid(path, Bad::json(new), super::IMMUTABLE));
    }
}

/// `ValidateObjectMetaUpdate` (the registry has already carried uid, creationTimestamp,
/// generation and the deletion fields over from the stored object; see
/// [`crate::defaults::prepare_for_update`]).
pub fn validate_object_meta_update(
    new: Option<&Map<String, Value>>,
    old: Option<&Map<String, Value>>,
    path: &Path,
    kube_finalizers: bool,
) -> Vec<Cause> {
    let empty = Map::new();
    let (new, old) = (new.unwrap_or(&empty), old.unwrap_or(&empty));
    let mut out = Vec::new();
    if old.get("deletionTimestamp").is_some_and(|v| !v.is_null()) {
        let list = |m: &Map<String, Value>| -> Vec<String> {
            m.get("finalizers")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(Value::as_str).map(String::from).collect())
                .unwrap_or_default()
        };
        let old_f = list(old);
        let mut extra: Vec<String> = list(new).into_iter().filter(|f| !old_f.contains(f)).collect();
        extra.sort();
        extra.dedup();
        if !extra.is_empty() {
            let rendered: Vec<String> = extra.iter().map(|f| field::go_quote(f)).collect();
            out.push(field::forbidden(
                &path.child("finalizers"),
                &format!(
                    "no new finalizers can be added if the object is being deleted, found new finalizers []string{{{}}}",
                    rendered.join(", ")
                ),
            ));
        }
    }
    let generation = |m: &Map<String, Value>| m.get("generation").and_then(Value::as_i64).unwrap_or(0);
    if generation(new) < generation(old) {
        out.push(field::invalid(&path.child("generation"), Bad::Int(generation(new)), "must not be decremented"));
    }
    for key in ["name", "namespace", "uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds"] {
        immutable(new.get(key), old.get(key), &path.child(key), &mut out);
    }
    out.extend(validate_labels(new.get("labels"), &path.child("labels")));
    out.extend(validate_annotations(new.get("annotations"), &path.child("annotations")));
    out.extend(validate_owner_references(new.get("ownerReferences"), &path.child("ownerReferences")));
    if kube_finalizers {
        for f in new.get("finalizers").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str) {
            out.extend(validate_kube_finalizer_name(f, &path.child("finalizers")));
        }
    }
    out
}

/// `ValidateLabelSelector` (strict label values).
pub fn validate_label_selector(sel: Option<&Value>, path: &Path) -> Vec<Cause> {
    let Some(sel) = sel.filter(|v| !v.is_null()) else { return Vec::new() };
    let mut out = validate_labels(sel.get("matchLabels"), &path.child("matchLabels"));
    for (i, e) in sel.get("matchExpressions").and_then(Value::as_array).into_iter().flatten().enumerate() {
        let p = path.child("matchExpressions").index(i);
        let op = e.get("operator").and_then(Value::as_str).unwrap_or("");
        let values: Vec<&str> = e
            .get("values")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        match op {
            "In" | "NotIn" if values.is_empty() => {
                out.push(field::required(&p.child("values"), "must be specified when `operator` is 'In' or 'NotIn'"))
            }
            "Exists" | "DoesNotExist" if !values.is_empty() => out.push(field::forbidden(
                &p.child("values"),
                "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
            )),
            "In" | "NotIn" | "Exists" | "DoesNotExist" => {}
            _ => out.push(field::invalid(&p.child("operator"), Bad::s(op), "not a valid selector operator")),
        }
        let key = e.get("key").and_then(Value::as_str).unwrap_or("");
        out.extend(validate_label_name(key, &p.child("key")));
        for (j, v) in values.iter().enumerate() {
            out.extend(
                names::label_value(v).into_iter().map(|m| field::invalid(&p.child("values").index(j), Bad::s(*v), &m)),
            );
        }
    }
    out
}

/// `ValidateLabelSelector` with `AllowInvalidLabelValueInSelector`: the values of
/// `matchExpressions` are not checked as label values (what kube allows on updates of objects
/// stored before the check was strict).
pub fn validate_label_selector_lenient(sel: Option<&Value>, path: &Path) -> Vec<Cause> {
    validate_label_selector(sel, path).into_iter().filter(|c| !c.field.contains(".values[")).collect()
}

const CONDITION_REASON_FMT: &str = "[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?";
const CONDITION_REASON_ERR: &str = "a condition reason must start with alphabetic character, optionally followed by a string of alphanumeric characters or '_,:', and must end with an alphanumeric character or '_'";
static CONDITION_REASON: std::sync::LazyLock<regex::Regex> =
    std::sync::LazyLock::new(|| regex::Regex::new(&format!("^(?:{CONDITION_REASON_FMT})$")).expect("static regex"));

/// `metav1validation.ValidateConditions`: `metav1.Condition`s with unique, qualified types,
/// a known status, a transition time and a reason.
pub fn validate_conditions(conditions: &[Value], path: &Path) -> Vec<Cause> {
    const MAX_REASON: usize = 1024;
    const MAX_MESSAGE: usize = 32 * 1024;
    let mut out = Vec::new();
    let mut seen: Vec<&str> = Vec::new();
    for (i, c) in conditions.iter().enumerate() {
        let p = path.index(i);
        let s = |k: &str| c.get(k).and_then(Value::as_str).unwrap_or("");
        let ty = s("type");
        if seen.contains(&ty) {
            out.push(field::duplicate(&p.child("type"), Bad::s(ty)));
        } else {
            seen.push(ty);
        }
        out.extend(validate_label_name(ty, &p.child("type")));
        let status = s("status");
        if !["True", "False", "Unknown"].contains(&status) {
            out.push(field::not_supported(&p.child("status"), Bad::s(status), &["False", "True", "Unknown"]));
        }
        if let Some(g) = c.get("observedGeneration").and_then(Value::as_i64).filter(|g| *g < 0) {
            out.push(field::invalid(
                &p.child("observedGeneration"),
                Bad::Int(g),
                "must be greater than or equal to zero",
            ));
        }
        let time = s("lastTransitionTime");
        if time.is_empty() || time.starts_with("0001-01-01T00:00:00") {
            out.push(field::required(&p.child("lastTransitionTime"), "must be set"));
        }
        let reason = s("reason");
        if reason.is_empty() {
            out.push(field::required(&p.child("reason"), "must be set"));
        } else {
            if !CONDITION_REASON.is_match(reason) {
                out.push(field::invalid(
                    &p.child("reason"),
                    Bad::s(reason),
                    &names::regex_error(
                        CONDITION_REASON_ERR,
                        CONDITION_REASON_FMT,
                        &["my_name", "MY_NAME", "MyName", "ReasonA,ReasonB", "ReasonA:ReasonB"],
                    ),
                ));
            }
            if reason.len() > MAX_REASON {
                out.push(field::too_long(&p.child("reason"), MAX_REASON));
            }
        }
        if s("message").len() > MAX_MESSAGE {
            out.push(field::too_long(&p.child("message"), MAX_MESSAGE));
        }
    }
    out
}

/// What `metav1.LabelSelectorAsSelector` makes of a selector.
#[derive(Debug, PartialEq, Eq)]
pub enum Selector<'a> {
    /// The selector does not parse (bad operator, key or value).
    Invalid,
    /// A nil selector: matches nothing, and is not "empty".
    Nothing,
    /// `{}`: matches everything, and is "empty" (controllers skip the template check).
    Everything,
    /// A real selector.
    Some(&'a Value),
}

/// Parses a `LabelSelector` the way `LabelSelectorAsSelector` does.
pub fn as_selector(sel: Option<&Value>) -> Selector<'_> {
    let Some(sel) = sel.filter(|v| !v.is_null()) else { return Selector::Nothing };
    let n_labels = sel.get("matchLabels").and_then(Value::as_object).map_or(0, Map::len);
    let n_exprs = sel.get("matchExpressions").and_then(Value::as_array).map_or(0, Vec::len);
    if n_labels + n_exprs == 0 {
        return Selector::Everything;
    }
    if !validate_label_selector(Some(sel), &Path::new("")).is_empty() {
        return Selector::Invalid;
    }
    Selector::Some(sel)
}

/// Whether a parsed selector matches a label set.
pub fn selector_matches(sel: &Selector<'_>, labels: Option<&Map<String, Value>>) -> bool {
    let sel = match sel {
        Selector::Invalid | Selector::Nothing => return false,
        Selector::Everything => return true,
        Selector::Some(v) => v,
    };
    let get = |k: &str| labels.and_then(|l| l.get(k)).and_then(Value::as_str);
    for (k, v) in sel.get("matchLabels").and_then(Value::as_object).into_iter().flatten() {
        if get(k) != v.as_str() {
            return false;
        }
    }
    for e in sel.get("matchExpressions").and_then(Value::as_array).into_iter().flatten() {
        let key = e.get("key").and_then(Value::as_str).unwrap_or("");
        let values: Vec<&str> = e
            .get("values")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let ok = match e.get("operator").and_then(Value::as_str).unwrap_or("") {
            "In" => get(key).is_some_and(|v| values.contains(&v)),
            "NotIn" => get(key).is_none_or(|v| !values.contains(&v)),
            "Exists" => get(key).is_some(),
            "DoesNotExist" => get(key).is_none(),
            _ => false,
        };
        if !ok {
            return false;
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn meta(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn name_required_and_namespace_rules() {
        let m = meta(json!({}));
        let c = validate_object_meta(Some(&m), true, names::name_is_dns_subdomain, &Path::new("metadata"), true);
        assert_eq!(c[0].field, "metadata.name");
        assert_eq!(c[0].message, "Required value: name or generateName is required");
        assert_eq!(c[1].field, "metadata.namespace");
        assert_eq!(c[1].message, "Required value");
        let m = meta(json!({"name": "a", "namespace": "x"}));
        let c = validate_object_meta(Some(&m), false, names::name_is_dns_subdomain, &Path::new("metadata"), true);
        assert_eq!(c[0].message, "Forbidden: not allowed on this type");
    }

    #[test]
    fn labels_report_at_map_path() {
        let c = validate_labels(Some(&json!({"a": "b c"})), &Path::new("metadata").child("labels"));
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].field, "metadata.labels");
        assert!(c[0].message.starts_with("Invalid value: \"b c\": a valid label must be an empty string"));
    }

    #[test]
    fn kube_finalizer_names() {
        let m = meta(json!({"name": "a", "finalizers": ["foo", "kubernetes", "x.io/y"]}));
        let c = validate_object_meta(Some(&m), false, names::name_is_dns_subdomain, &Path::new("metadata"), true);
        assert_eq!(c.len(), 1);
        assert_eq!(
            c[0].message,
            "Invalid value: \"foo\": name is neither a standard finalizer name nor is it fully qualified"
        );
    }

    #[test]
    fn selectors_match_like_labels_package() {
        let sel = json!({"matchLabels": {"app": "a"}, "matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["db"]}]});
        let s = as_selector(Some(&sel));
        assert!(selector_matches(&s, json!({"app": "a"}).as_object()));
        assert!(!selector_matches(&s, json!({"app": "a", "tier": "db"}).as_object()));
        assert_eq!(as_selector(None), Selector::Nothing);
        assert_eq!(as_selector(Some(&json!({}))), Selector::Everything);
        assert_eq!(
            as_selector(Some(&json!({"matchExpressions": [{"key": "a", "operator": "Bad"}]}))),
            Selector::Invalid
        );
    }

    #[test]
    fn update_keeps_identity_fields() {
        let old = meta(json!({"name": "a", "uid": "1", "generation": 2}));
        let new = meta(json!({"name": "b", "uid": "1", "generation": 2}));
        let c = validate_object_meta_update(Some(&new), Some(&old), &Path::new("metadata"), true);
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].field, "metadata.name");
        assert_eq!(c[0].message, "Invalid value: \"b\": field is immutable");
    }
}
