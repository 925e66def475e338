//! kube's Format library (`library.Format`): named string formats (`format.dns1123Label()`,
//! `format.named('uuid')`) whose `validate` gives kube's validation messages, or none.

use std::sync::LazyLock;

use regex::Regex;

use crate::error::EvalResult;
pub use crate::ext::NamedFormat;
use crate::ext::Url;
use crate::library::Ext;
use crate::names;
use crate::value::Value;

static UUID: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$").expect("static regex")
});
static BASE64: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=|[A-Za-z0-9+/]{4})$")
        .expect("static regex")
});
static DATE_TIME: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))$").expect("static regex")
});

/// Go's `time.Parse("2006-01-02", s)`.
fn is_date(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 10
        && b[4] == b'-'
        && b[7] == b'-'
        && s[..4].bytes().chain(s[5..7].bytes()).chain(s[8..].bytes()).all(|c| c.is_ascii_digit())
        && chrono::NaiveDate::from_ymd_opt(
            s[..4].parse().unwrap_or(0),
            s[5..7].parse().unwrap_or(0),
            s[8..].parse().unwrap_or(0),
        )
        .is_some()
}

/// kube-openapi's `strfmt.IsDateTime`.
fn is_date_time(s: &str) -> bool {
    if s.len() < 4 {
        return false;
    }
    let lower = s.to_lowercase();
    let parts: Vec<&str> = lower.split('t').collect();
    if parts.len() < 2 || !is_date(parts[0]) {
        return false;
    }
    let Some(m) = DATE_TIME.captures(parts[1]) else { return false };
    &m[1] <= "23" && &m[2] <= "59" && &m[3] <= "59"
}

fn one(ok: bool, message: &str) -> Vec<String> {
    if ok { Vec::new() } else { vec![message.to_string()] }
}

/// The formats, by the name `format.named` takes.
pub static FORMATS: &[(&str, NamedFormat)] = &[
    (
        "dns1123Label",
        NamedFormat { name: "DNS1123Label", validate: |s| names::name_is_dns_label(s, false), max_regex_size: 30 },
    ),
    (
        "dns1123Subdomain",
        NamedFormat {
            name: "DNS1123Subdomain",
            validate: |s| names::name_is_dns_subdomain(s, false),
            max_regex_size: 60,
        },
    ),
    (
        "dns1035Label",
        NamedFormat { name: "DNS1035Label", validate: |s| names::name_is_dns1035_label(s, false), max_regex_size: 30 },
    ),
    ("qualifiedName", NamedFormat { name: "QualifiedName", validate: names::qualified_name, max_regex_size: 60 }),
    (
        "dns1123LabelPrefix",
        NamedFormat { name: "DNS1123LabelPrefix", validate: |s| names::name_is_dns_label(s, true), max_regex_size: 30 },
    ),
    (
        "dns1123SubdomainPrefix",
        NamedFormat {
            name: "DNS1123SubdomainPrefix",
            validate: |s| names::name_is_dns_subdomain(s, true),
            max_regex_size: 60,
        },
    ),
    (
        "dns1035LabelPrefix",
        NamedFormat {
            name: "DNS1035LabelPrefix",
            validate: |s| names::name_is_dns1035_label(s, true),
            max_regex_size: 30,
        },
    ),
    ("labelValue", NamedFormat { name: "LabelValue", validate: names::label_value, max_regex_size: 40 }),
    (
        "uri",
        NamedFormat {
            name: "URI",
            validate: |s| Url::parse_request_uri(s).err().into_iter().collect(),
            max_regex_size: 1103,
        },
    ),
    (
        "uuid",
        NamedFormat {
            name: "uuid",
            validate: |s| one(UUID.is_match(s), "does not match the UUID format"),
            max_regex_size: 70,
        },
    ),
    ("byte", NamedFormat { name: "byte", validate: |s| one(BASE64.is_match(s), "invalid base64"), max_regex_size: 84 }),
    ("date", NamedFormat { name: "date", validate: |s| one(is_date(s), "invalid date"), max_regex_size: 71 }),
    (
        "datetime",
        NamedFormat { name: "datetime", validate: |s| one(is_date_time(s), "invalid datetime"), max_regex_size: 71 },
    ),
];

/// The format named `name`.
pub fn named(name: &str) -> Option<&'static NamedFormat> {
    FORMATS.iter().find(|(n, _)| *n == name).map(|(_, f)| f)
}

/// The format functions.
pub fn call(name: &str, args: &[Value]) -> Option<EvalResult> {
    match (name, args) {
        ("format.named", [Value::String(n)]) => {
            Some(Ok(Value::Optional(named(n).map(|f| std::sync::Arc::new(Value::Ext(Ext::Format(f)))))))
        }
        ("validate", [Value::Ext(Ext::Format(f)), Value::String(s)]) => {
            let problems = (f.validate)(s);
            Some(Ok(if problems.is_empty() {
                Value::Optional(None)
            } else {
                Value::some(Value::list(problems.into_iter().map(Value::string).collect()))
            }))
        }
        (n, []) => n.strip_prefix("format.").and_then(named).map(|f| Ok(Value::Ext(Ext::Format(f)))),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn validate(format: &str, s: &str) -> Value {
        let f = call(&format!("format.{format}"), &[]).unwrap().unwrap();
        call("validate", &[f, Value::string(s)]).unwrap().unwrap()
    }

    #[test]
    fn formats_follow_kubes_documented_examples() {
        assert_eq!(validate("dns1123Label", "my-label-name"), Value::Optional(None));
        assert_eq!(validate("dns1123Subdomain", "apiextensions.k8s.io"), Value::Optional(None));
        assert_eq!(validate("dns1035Label", "my-label-name"), Value::Optional(None));
        assert_eq!(validate("qualifiedName", "apiextensions.k8s.io/v1beta1"), Value::Optional(None));
        assert_eq!(validate("dns1123LabelPrefix", "my-label-prefix-"), Value::Optional(None));
        assert_eq!(validate("dns1123SubdomainPrefix", "mysubdomain.prefix.-"), Value::Optional(None));
        assert_eq!(validate("dns1035LabelPrefix", "my-label-prefix-"), Value::Optional(None));
        assert_eq!(validate("uri", "http://example.com"), Value::Optional(None));
        assert_eq!(validate("uuid", "123e4567-e89b-12d3-a456-426614174000"), Value::Optional(None));
        assert_eq!(validate("byte", "aGVsbG8="), Value::Optional(None));
        assert_eq!(validate("date", "2021-01-01"), Value::Optional(None));
        assert_eq!(validate("datetime", "2021-01-01T00:00:00Z"), Value::Optional(None));
        let bad = validate("dns1123Label", "Bad_Name");
        assert!(bad.to_string().contains("a lowercase RFC 1123 label must consist of"), "{bad}");
        assert_eq!(
            validate("uuid", "nope"),
            Value::some(Value::list(vec![Value::string("does not match the UUID format")]))
        );
        assert_eq!(call("format.named", &[Value::string("nope")]).unwrap().unwrap(), Value::Optional(None));
    }
}
