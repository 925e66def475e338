//! The vocabulary of `k8s.io/apimachinery/pkg/util/validation/field`: field paths, the error
//! types (`FieldValueInvalid`, `FieldValueRequired`, ...) and the exact way kube words each one.
//!
//! kube prints a bad value with Go's `fmt`: strings `%q`, numbers and booleans plainly, anything
//! else with `%#v` (`map[string]string{"app":"web"}`). [`Bad`] carries a value already rendered
//! that way, so a [`Cause`]'s message reads exactly like kube-apiserver's.

use serde_json::{Map, Value};

use crate::error::Cause;

/// A field path as kube prints it: `spec.template.spec.containers[0].image`, `data[key]`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Path(String);

impl Path {
    /// A root path (`metadata`, `spec`); the empty root is `""` (whole-object errors).
    pub fn new(root: &str) -> Path {
        Path(root.to_string())
    }

    /// `parent.child` (several segments may be given dotted: `spec.template`).
    pub fn child(&self, name: &str) -> Path {
        if self.0.is_empty() { Path(name.to_string()) } else { Path(format!("{}.{name}", self.0)) }
    }

    /// `parent[i]`.
    pub fn index(&self, i: usize) -> Path {
        Path(format!("{}[{i}]", self.0))
    }

    /// `parent[key]`: kube prints map keys unquoted.
    pub fn key(&self, key: &str) -> Path {
        Path(format!("{}[{key}]", self.0))
    }

    /// The printed path.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A bad value, rendered as Go's `fmt` would print it inside a field error.
#[derive(Clone, Debug, PartialEq)]
pub enum Bad {
    /// A Go string: printed `%q`.
    Str(String),
    /// An integer: printed plainly.
    Int(i64),
    /// A boolean: printed plainly.
    Bool(bool),
    /// A nil pointer: printed `null`.
    Null,
    /// Anything else, already rendered `%#v`-style.
    Raw(String),
}

impl Bad {
    /// A string value.
    pub fn s(v: impl Into<String>) -> Bad {
        Bad::Str(v.into())
    }

    /// A JSON scalar as Go would print the typed field it was decoded into.
    pub fn json(v: Option<&Value>) -> Bad {
        match v {
            None | Some(Value::Null) => Bad::Null,
            Some(Value::String(s)) => Bad::Str(s.clone()),
            Some(Value::Bool(b)) => Bad::Bool(*b),
            Some(Value::Number(n)) => n.as_i64().map(Bad::Int).unwrap_or_else(|| Bad::Raw(n.to_string())),
            Some(other) => Bad::Raw(other.to_string()),
        }
    }

    fn render(&self) -> String {
        match self {
            Bad::Str(s) => go_quote(s),
            Bad::Int(i) => i.to_string(),
            Bad::Bool(b) => b.to_string(),
            Bad::Null => "null".to_string(),
            Bad::Raw(r) => r.clone(),
        }
    }
}

fn cause(reason: &str, path: &Path, message: String) -> Cause {
    Cause { reason: reason.to_string(), message, field: path.0.clone() }
}

fn with_detail(mut s: String, detail: &str) -> String {
    if !detail.is_empty() {
        s.push_str(": ");
        s.push_str(detail);
    }
    s
}

/// `field.Invalid`: `Invalid value: "x": <detail>`.
pub fn invalid(path: &Path, value: Bad, detail: &str) -> Cause {
    cause("FieldValueInvalid", path, with_detail(format!("Invalid value: {}", value.render()), detail))
}

/// `field.Required`: `Required value[: detail]`.
pub fn required(path: &Path, detail: &str) -> Cause {
    cause("FieldValueRequired", path, with_detail("Required value".to_string(), detail))
}

/// `field.Forbidden`: `Forbidden: <detail>`.
pub fn forbidden(path: &Path, detail: &str) -> Cause {
    cause("FieldValueForbidden", path, with_detail("Forbidden".to_string(), detail))
}

/// `field.Duplicate`: `Duplicate value: "x"`.
pub fn duplicate(path: &Path, value: Bad) -> Cause {
    cause("FieldValueDuplicate", path, format!("Duplicate value: {}", value.render()))
}

/// `field.Duplicate` with a detail kube sets by hand (taints).
pub fn duplicate_with(path: &Path, value: Bad, detail: &str) -> Cause {
    cause("FieldValueDuplicate", path, with_detail(format!("Duplicate value: {}", value.render()), detail))
}

/// `field.NotFound`: `Not found: "x"`.
pub fn not_found(path: &Path, value: Bad) -> Cause {
    cause("FieldValueNotFound", path, format!("Not found: {}", value.render()))
}

/// `field.NotSupported`: `Unsupported value: "x": supported values: "a", "b"`.
pub fn not_supported(path: &Path, value: Bad, valid: &[&str]) -> Cause {
    let detail = if valid.is_empty() {
        String::new()
    } else {
        format!("supported values: {}", valid.iter().map(|v| go_quote(v)).collect::<Vec<_>>().join(", "))
    };
    cause("FieldValueNotSupported", path, with_detail(format!("Unsupported value: {}", value.render()), &detail))
}

/// `field.InternalError`: `Internal error: <detail>`.
pub fn internal_error(path: &Path, detail: &str) -> Cause {
    cause("InternalError", path, with_detail("Internal error".to_string(), detail))
}

/// `field.TooLong`: `Too long: must have at most N bytes` (the value is not printed).
pub fn too_long(path: &Path, max: usize) -> Cause {
    cause("FieldValueTooLong", path, format!("Too long: must have at most {max} bytes"))
}

/// `field.TypeInvalid`: `Invalid value: "x": <detail>`, cause type `FieldValueTypeInvalid` (a
/// value that does not match its schema type; CRD validation reports these).
pub fn type_invalid(path: &Path, value: Bad, detail: &str) -> Cause {
    cause("FieldValueTypeInvalid", path, with_detail(format!("Invalid value: {}", value.render()), detail))
}

/// `field.TooLongMaxLength`: `Too long: may not be longer than N` (the value is not printed; a
/// negative `max` reads `Too long: value is too long`).
pub fn too_long_max_length(path: &Path, max: i64) -> Cause {
    let detail = if max >= 0 { format!("may not be longer than {max}") } else { "value is too long".to_string() };
    cause("FieldValueTooLong", path, format!("Too long: {detail}"))
}

/// `field.TooMany`: `Too many: N: must have at most M items`.
pub fn too_many(path: &Path, actual: usize, max: usize) -> Cause {
    cause("FieldValueTooMany", path, format!("Too many: {actual}: must have at most {max} items"))
}

/// Go's `strconv.Quote`: double quotes, backslash escapes, printable Unicode kept as is.
pub fn go_quote(s: &str) -> String {
    crate::gofmt::quote(s)
}

/// `%#v` of a `map[string]string` (keys sorted, as Go's fmt sorts them); `None` is a nil map.
pub fn go_string_map(m: Option<&Map<String, Value>>) -> String {
    match m {
        None => "map[string]string(nil)".to_string(),
        Some(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            let body: Vec<String> = keys
                .iter()
                .map(|k| format!("{}:{}", go_quote(k), go_quote(m[k.as_str()].as_str().unwrap_or(""))))
                .collect();
            format!("map[string]string{{{}}}", body.join(", "))
        }
    }
}

/// `%#v` of a `[]string`; `None` is a nil slice.
pub fn go_string_slice(v: Option<&Value>) -> String {
    match v.and_then(Value::as_array) {
        None => "[]string(nil)".to_string(),
        Some(a) => {
            let items: Vec<String> = a.iter().map(|s| go_quote(s.as_str().unwrap_or(""))).collect();
            format!("[]string{{{}}}", items.join(", "))
        }
    }
}

/// `%#v` of a `metav1.LabelSelector` (the pointer is dereferenced by kube's error printer).
pub fn go_label_selector(sel: Option<&Value>) -> String {
    let Some(sel) = sel.filter(|v| !v.is_null()) else { return "null".to_string() };
    let labels = go_string_map(sel.get("matchLabels").and_then(Value::as_object));
    let exprs = match sel.get("matchExpressions").and_then(Value::as_array) {
        None => "[]v1.LabelSelectorRequirement(nil)".to_string(),
        Some(a) => {
            let items: Vec<String> = a
                .iter()
                .map(|e| {
                    format!(
                        "v1.LabelSelectorRequirement{{Key:{}, Operator:{}, Values:{}}}",
                        go_quote(e.get("key").and_then(Value::as_str).unwrap_or("")),
                        go_quote(e.get("operator").and_then(Value::as_str).unwrap_or("")),
                        go_string_slice(e.get("values"))
                    )
                })
                .collect();
            format!("[]v1.LabelSelectorRequirement{{{}}}", items.join(", "))
        }
    };
    format!("v1.LabelSelector{{MatchLabels:{labels}, MatchExpressions:{exprs}}}")
}

/// `%#v` of an `intstr.IntOrString`.
pub fn go_int_or_string(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => format!("intstr.IntOrString{{Type:1, IntVal:0, StrVal:{}}}", go_quote(s)),
        Some(Value::Number(n)) => {
            format!("intstr.IntOrString{{Type:0, IntVal:{}, StrVal:\"\"}}", n.as_i64().unwrap_or(0))
        }
        _ => "intstr.IntOrString{Type:0, IntVal:0, StrVal:\"\"}".to_string(),
    }
}

/// A value kube would print with `%#v` of a whole Go struct: there is no faithful rendering of
/// an internal Go type from its JSON, so the compact JSON stands in for it.
pub fn go_struct(v: Option<&Value>) -> String {
    match v {
        None | Some(Value::Null) => "null".to_string(),
        Some(v) => v.to_string(),
    }
}

/// A short account of what changed between two values of Go type `type_name`, where kube
/// prints a `cmp.Diff` (`  core.PodSpec{`, then `- \tkey: old,` and `+ \tkey: new,` lines).
pub fn go_diff(type_name: &str, old: &Value, new: &Value) -> String {
    let mut lines = vec![format!("  {type_name}{{")];
    let (o, n) = (old.as_object(), new.as_object());
    let mut keys: std::collections::BTreeSet<&String> = o.map(|m| m.keys().collect()).unwrap_or_default();
    keys.extend(n.map(|m| m.keys().collect::<Vec<_>>()).unwrap_or_default());
    for k in keys {
        let (ov, nv) = (old.get(k), new.get(k));
        if ov != nv {
            if let Some(ov) = ov {
                lines.push(format!("- \t{k}: {ov},"));
            }
            if let Some(nv) = nv {
                lines.push(format!("+ \t{k}: {nv},"));
            }
        }
    }
    lines.push("  }".to_string());
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn paths_print_like_kube() {
        let p = Path::new("spec").child("containers").index(0).child("image");
        assert_eq!(p.as_str(), "spec.containers[0].image");
        assert_eq!(Path::new("data").key("a b").as_str(), "data[a b]");
        assert_eq!(Path::new("").child("x").as_str(), "x");
    }

    #[test]
    fn messages_match_field_error_bodies() {
        let p = Path::new("metadata").child("name");
        assert_eq!(required(&p, "").message, "Required value");
        assert_eq!(
            required(&p, "name or generateName is required").message,
            "Required value: name or generateName is required"
        );
        assert_eq!(invalid(&p, Bad::s("Bad"), "x").message, "Invalid value: \"Bad\": x");
        assert_eq!(
            invalid(&p, Bad::Int(-1), "must be greater than or equal to 0").message,
            "Invalid value: -1: must be greater than or equal to 0"
        );
        assert_eq!(
            not_supported(&p, Bad::s("X"), &["Always", "IfNotPresent", "Never"]).message,
            "Unsupported value: \"X\": supported values: \"Always\", \"IfNotPresent\", \"Never\""
        );
        assert_eq!(forbidden(&p, "not allowed on this type").message, "Forbidden: not allowed on this type");
        assert_eq!(too_long(&p, 262144).message, "Too long: must have at most 262144 bytes");
        assert_eq!(duplicate(&p, Bad::s("a")).reason, "FieldValueDuplicate");
        assert_eq!(too_long_max_length(&p, 2).message, "Too long: may not be longer than 2");
        let c = type_invalid(&p, Bad::s("string"), "x in body must be of type integer: \"string\"");
        assert_eq!(
            (c.reason.as_str(), c.message.as_str()),
            ("FieldValueTypeInvalid", "Invalid value: \"string\": x in body must be of type integer: \"string\"")
        );
    }

    #[test]
    fn go_quoting_escapes_like_strconv() {
        assert_eq!(go_quote("a\"b\\c\n"), "\"a\\\"b\\\\c\\n\"");
        assert_eq!(go_quote("é"), "\"é\"");
        assert_eq!(go_quote("\u{1}"), "\"\\x01\"");
    }

    #[test]
    fn go_renderings() {
        let m = json!({"b": "2", "a": "1"});
        assert_eq!(go_string_map(m.as_object()), "map[string]string{\"a\":\"1\", \"b\":\"2\"}");
        assert_eq!(go_string_map(None), "map[string]string(nil)");
        assert_eq!(
            go_label_selector(Some(&json!({"matchLabels": {"app": "x"}}))),
            "v1.LabelSelector{MatchLabels:map[string]string{\"app\":\"x\"}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}"
        );
        assert_eq!(go_int_or_string(Some(&json!("25%"))), "intstr.IntOrString{Type:1, IntVal:0, StrVal:\"25%\"}");
        assert_eq!(go_string_slice(Some(&json!(["a", "b"]))), "[]string{\"a\", \"b\"}");
    }
}
