//! kube's Format library (`library.Format`): named string formats (`format.dns1123Label()`,
//! `format.named('uuid')`) whose `validate` gives kube's validation messages, or none.

use crate::error::EvalResult;
pub use crate::ext::NamedFormat;
use crate::ext::Url;
use crate::library::Ext;
use crate::names;
use crate::strfmt::{is_base64, is_date, is_date_time, is_uuid};
use crate::value::Value;

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
            validate: |s| one(is_uuid(s), "does not match the UUID format"),
            max_regex_size: 70,
        },
    ),
    ("byte", NamedFormat { name: "byte", validate: |s| one(is_base64(s), "invalid base64"), max_regex_size: 84 }),
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
