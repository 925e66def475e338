//! Field selectors as `k8s.io/apimachinery/pkg/fields` (v1.30) parses, matches and prints them,
//! plus the per-kind field label conversion kube-apiserver applies before listing.
//!
//! Grammar: comma-separated terms `field=value`, `field==value` or `field!=value`. In values a
//! backslash escapes `\`, `,` and `=` (an escaped comma does not split terms); any other escape,
//! a trailing backslash, or an unescaped `,`/`=` in a value is an error. Terms are sorted as
//! strings after splitting, which fixes the canonical print order. A field missing from an
//! object reads as `""`, so `status.podIP=` selects pods without an IP.
//!
//! Which fields a resource accepts is decided by kube's field label conversion functions
//! (`AddFieldLabelConversionFunc` in `pkg/apis/<group>/<version>/conversion.go`), not by what
//! the registry can select on: see [`FieldSelector::validate_for`].

use std::fmt;

use crate::ApiError;

/// How a field requirement compares (`=` and `==` are the same operator in kube).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FieldOperator {
    /// `field=value` or `field==value`.
    Equals,
    /// `field!=value`.
    NotEquals,
}

/// One term of a field selector (`fields.Requirement`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct FieldRequirement {
    /// The field path, e.g. `metadata.name` or `spec.nodeName`.
    pub field: String,
    /// The comparison.
    pub operator: FieldOperator,
    /// The unescaped value.
    pub value: String,
}

impl FieldRequirement {
    fn matches(&self, fields: &[(&str, String)]) -> bool {
        let have = fields.iter().find(|(f, _)| *f == self.field).map_or("", |(_, v)| v.as_str());
        match self.operator {
            FieldOperator::Equals => have == self.value,
            FieldOperator::NotEquals => have != self.value,
        }
    }
}

impl fmt::Display for FieldRequirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let op = match self.operator {
            FieldOperator::Equals => "=",
            FieldOperator::NotEquals => "!=",
        };
        write!(f, "{}{op}{}", self.field, escape_value(&self.value))
    }
}

/// A parsed field selector: the AND of its terms, in kube's (sorted) order.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct FieldSelector {
    terms: Vec<FieldRequirement>,
}

impl FieldSelector {
    /// The selector that matches everything.
    pub fn everything() -> FieldSelector {
        FieldSelector::default()
    }

    /// A selector with one `field=value` term (`fields.OneTermEqualSelector`), e.g. the
    /// `metadata.name` selector a watch on a single object uses.
    pub fn one_term_equal(field: &str, value: &str) -> FieldSelector {
        FieldSelector {
            terms: vec![FieldRequirement {
                field: field.to_string(),
                operator: FieldOperator::Equals,
                value: value.to_string(),
            }],
        }
    }

    /// Parses the `fieldSelector` query parameter (`fields.ParseSelector`). Errors are 400
    /// BadRequest with kube's exact message.
    pub fn parse(selector: &str) -> Result<FieldSelector, ApiError> {
        Self::parse_message(selector).map_err(ApiError::bad_request)
    }

    /// [`FieldSelector::parse`] with the bare message.
    pub fn parse_message(selector: &str) -> Result<FieldSelector, String> {
        let mut parts = split_terms(selector);
        parts.sort_unstable();
        let mut terms = Vec::new();
        for part in parts {
            if part.is_empty() {
                continue;
            }
            let Some((lhs, op, rhs)) = split_term(part) else {
                return Err(format!("invalid selector: '{selector}'; can't understand '{part}'"));
            };
            let value = unescape_value(rhs)?;
            // kube's identity transform drops a term whose field and value are both empty
            // (`=`), which then selects everything.
            if lhs.is_empty() && value.is_empty() {
                continue;
            }
            terms.push(FieldRequirement { field: lhs.to_string(), operator: op, value });
        }
        Ok(FieldSelector { terms })
    }

    /// Whether the selector places no restriction.
    pub fn is_empty(&self) -> bool {
        self.terms.is_empty()
    }

    /// The terms, in kube's order. The cacher uses an `Equals` term on `metadata.name` or
    /// `metadata.namespace` to narrow its scan (see [`FieldSelector::exact_match`]).
    pub fn requirements(&self) -> &[FieldRequirement] {
        &self.terms
    }

    /// `RequiresExactMatch`: the value the first `field=value` term on `field` demands.
    pub fn exact_match(&self, field: &str) -> Option<&str> {
        self.terms.iter().find(|t| t.field == field && t.operator == FieldOperator::Equals).map(|t| t.value.as_str())
    }

    /// Whether an object whose selectable fields are `fields` (see
    /// [`field_set`](super::field_set)) is selected; a field missing from the set reads as `""`.
    pub fn matches(&self, fields: &[(&str, String)]) -> bool {
        self.terms.iter().all(|t| t.matches(fields))
    }

    /// Applies kube's field label conversion for the resource (`Scheme.ConvertFieldLabel` via
    /// `Selector.Transform` in the list/watch handler): rejects fields the resource does not
    /// support and rewrites legacy or version-specific names to the canonical ones
    /// (`spec.host` → `spec.nodeName` for pods; `regarding.*` → `involvedObject.*` for
    /// `events.k8s.io`), so matching uses the names [`field_set`](super::field_set) produces.
    ///
    /// `metadata.name` is accepted everywhere; `metadata.namespace` wherever kube accepts it,
    /// which includes cluster-scoped kinds without their own conversion (clusterroles) but not
    /// nodes or namespaces. The error is 400 BadRequest worded as kube words it for the kind:
    /// `field label not supported: <field>` for kinds with a conversion function,
    /// `field label "<field>" not supported for Job` for jobs, and
    /// `"<field>" is not a known field selector: only "metadata.name", "metadata.namespace"`
    /// for every other kind.
    pub fn validate_for(&self, rules: &FieldLabels) -> Result<FieldSelector, ApiError> {
        let mut terms = Vec::with_capacity(self.terms.len());
        for t in &self.terms {
            let field = rules.convert(&t.field).map_err(ApiError::bad_request)?;
            terms.push(FieldRequirement { field: field.to_string(), operator: t.operator, value: t.value.clone() });
        }
        Ok(FieldSelector { terms })
    }
}

impl fmt::Display for FieldSelector {
    /// `Selector.String()`: terms joined by `,`, values escaped.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, t) in self.terms.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{t}")?;
        }
        Ok(())
    }
}

/// `fields.EscapeValue`: prefixes `\`, `,` and `=` with a backslash.
pub fn escape_value(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if matches!(c, '\\' | ',' | '=') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// `fields.UnescapeValue`.
fn unescape_value(s: &str) -> Result<String, String> {
    if !s.contains(['\\', ',', '=']) {
        return Ok(s.to_string());
    }
    let mut out = String::with_capacity(s.len());
    let mut in_slash = false;
    for c in s.chars() {
        if in_slash {
            if matches!(c, '\\' | ',' | '=') {
                out.push(c);
            } else {
                return Err(format!("invalid field selector: invalid escape sequence: \\{c}"));
            }
            in_slash = false;
            continue;
        }
        match c {
            '\\' => in_slash = true,
            // kube prints the rune with %v, i.e. as its code point number.
            ',' | '=' => return Err(format!("invalid field selector: unescaped character in value: {}", c as u32)),
            c => out.push(c),
        }
    }
    if in_slash {
        return Err("invalid field selector: invalid escape sequence: \\".to_string());
    }
    Ok(out)
}

/// Splits at commas not preceded by a backslash escape; escapes stay in the terms.
fn split_terms(selector: &str) -> Vec<&str> {
    if selector.is_empty() {
        return Vec::new();
    }
    let mut terms = Vec::new();
    let mut start = 0;
    let mut in_slash = false;
    for (i, c) in selector.char_indices() {
        if in_slash {
            in_slash = false;
        } else if c == '\\' {
            in_slash = true;
        } else if c == ',' {
            terms.push(&selector[start..i]);
            start = i + 1;
        }
    }
    terms.push(&selector[start..]);
    terms
}

/// Splits a term at the first operator (`!=`, then `==`, then `=` at each position); the field
/// part has no escaping.
fn split_term(term: &str) -> Option<(&str, FieldOperator, &str)> {
    for (i, _) in term.char_indices() {
        let rest = &term[i..];
        for (op, kind) in
            [("!=", FieldOperator::NotEquals), ("==", FieldOperator::Equals), ("=", FieldOperator::Equals)]
        {
            if let Some(value) = rest.strip_prefix(op) {
                return Some((&term[..i], kind, value));
            }
        }
    }
    None
}

/// Accepted field labels, each mapped to its canonical (internal) label.
type LabelMap = &'static [(&'static str, &'static str)];

/// One kind's field label conversion, as registered in kube 1.30 (`Scheme.AddFieldLabelConversionFunc`):
/// the labels it accepts, each mapped to its canonical name, and how it words a refusal.
pub struct FieldLabels {
    accepted: LabelMap,
    reject: fn(&str) -> String,
}

fn not_supported(label: &str) -> String {
    format!("field label not supported: {label}")
}

fn not_supported_for_job(label: &str) -> String {
    format!("field label {} not supported for Job", crate::gofmt::quote(label))
}

fn not_known(label: &str) -> String {
    format!(
        "{} is not a known field selector: only \"metadata.name\", \"metadata.namespace\"",
        crate::gofmt::quote(label)
    )
}

macro_rules! same {
    ($($f:literal),* $(,)?) => { &[$(($f, $f)),*] };
}

const POD_LABELS: &[(&str, &str)] = &[
    ("metadata.name", "metadata.name"),
    ("metadata.namespace", "metadata.namespace"),
    ("spec.nodeName", "spec.nodeName"),
    ("spec.restartPolicy", "spec.restartPolicy"),
    ("spec.schedulerName", "spec.schedulerName"),
    ("spec.serviceAccountName", "spec.serviceAccountName"),
    ("spec.hostNetwork", "spec.hostNetwork"),
    ("status.phase", "status.phase"),
    ("status.podIP", "status.podIP"),
    ("status.nominatedNodeName", "status.nominatedNodeName"),
    // Backwards compatibility with old v1 clients.
    ("spec.host", "spec.nodeName"),
];

const CORE_EVENT_LABELS: &[(&str, &str)] = same!(
    "involvedObject.kind",
    "involvedObject.namespace",
    "involvedObject.name",
    "involvedObject.uid",
    "involvedObject.apiVersion",
    "involvedObject.resourceVersion",
    "involvedObject.fieldPath",
    "reason",
    "reportingComponent",
    "source",
    "type",
    "metadata.namespace",
    "metadata.name",
);

/// `events.k8s.io/v1` names map onto the core Event's internal field labels.
const EVENTS_V1_LABELS: &[(&str, &str)] = &[
    ("reason", "reason"),
    ("regarding.kind", "involvedObject.kind"),
    ("regarding.namespace", "involvedObject.namespace"),
    ("regarding.name", "involvedObject.name"),
    ("regarding.uid", "involvedObject.uid"),
    ("regarding.apiVersion", "involvedObject.apiVersion"),
    ("regarding.resourceVersion", "involvedObject.resourceVersion"),
    ("regarding.fieldPath", "involvedObject.fieldPath"),
    ("reportingController", "reportingComponent"),
    ("type", "type"),
    ("metadata.namespace", "metadata.namespace"),
    ("metadata.name", "metadata.name"),
];

impl FieldLabels {
    /// `runtime.DefaultMetaV1FieldSelectorConversion`: every kind without its own function.
    pub const META: FieldLabels =
        FieldLabels { accepted: same!("metadata.name", "metadata.namespace"), reject: not_known };
    /// Pods.
    pub const PODS: FieldLabels = FieldLabels { accepted: POD_LABELS, reject: not_supported };
    /// Nodes.
    pub const NODES: FieldLabels =
        FieldLabels { accepted: same!("metadata.name", "spec.unschedulable"), reject: not_supported };
    /// ReplicationControllers.
    pub const REPLICATION_CONTROLLERS: FieldLabels = FieldLabels {
        accepted: same!("metadata.name", "metadata.namespace", "status.replicas"),
        reject: not_supported,
    };
    /// Core events.
    pub const CORE_EVENTS: FieldLabels = FieldLabels { accepted: CORE_EVENT_LABELS, reject: not_supported };
    /// `events.k8s.io` events, whose names map onto the core Event's labels.
    pub const EVENTS_V1: FieldLabels = FieldLabels { accepted: EVENTS_V1_LABELS, reject: not_supported };
    /// Namespaces.
    pub const NAMESPACES: FieldLabels =
        FieldLabels { accepted: same!("status.phase", "metadata.name"), reject: not_supported };
    /// Secrets.
    pub const SECRETS: FieldLabels =
        FieldLabels { accepted: same!("type", "metadata.namespace", "metadata.name"), reject: not_supported };
    /// Services.
    pub const SERVICES: FieldLabels =
        FieldLabels { accepted: same!("metadata.namespace", "metadata.name", "spec.clusterIP"), reject: not_supported };
    /// Jobs, whose refusal names the kind.
    pub const JOBS: FieldLabels = FieldLabels {
        accepted: same!("metadata.name", "metadata.namespace", "status.successful"),
        reject: not_supported_for_job,
    };
    /// CertificateSigningRequests.
    pub const CERTIFICATE_SIGNING_REQUESTS: FieldLabels =
        FieldLabels { accepted: same!("metadata.name", "spec.signerName"), reject: not_supported };

    /// A custom resource version's labels (`metadata.name`, `metadata.namespace` when
    /// namespaced, its `selectableFields`), any other refused as kube's custom resource
    /// converter refuses it: `field label not supported: <field>`.
    pub const fn custom(accepted: LabelMap) -> FieldLabels {
        FieldLabels { accepted, reject: not_supported }
    }

    /// The canonical labels accepted, each once, in the table's order.
    pub fn canonical(&self) -> impl Iterator<Item = &'static str> + '_ {
        let accepted = self.accepted;
        accepted
            .iter()
            .enumerate()
            .filter(move |(i, (_, to))| !accepted[..*i].iter().any(|(_, t)| t == to))
            .map(|(_, (_, to))| *to)
    }

    fn convert(&self, label: &str) -> Result<&'static str, String> {
        self.accepted.iter().find(|(from, _)| *from == label).map(|(_, to)| *to).ok_or_else(|| (self.reject)(label))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(pairs: &[(&'static str, &str)]) -> Vec<(&'static str, String)> {
        pairs.iter().map(|(k, v)| (*k, v.to_string())).collect()
    }

    fn err(s: &str) -> String {
        FieldSelector::parse_message(s).unwrap_err()
    }

    #[test]
    fn empty_selector_matches_everything() {
        let s = FieldSelector::parse("").unwrap();
        assert!(s.is_empty());
        assert!(s.matches(&[]));
        assert_eq!(s.to_string(), "");
        assert!(FieldSelector::parse(",,").unwrap().is_empty());
        assert!(FieldSelector::parse("=").unwrap().is_empty());
    }

    #[test]
    fn operators_parse_and_print() {
        let s = FieldSelector::parse("metadata.name==a").unwrap();
        assert_eq!(s.requirements()[0].operator, FieldOperator::Equals);
        assert_eq!(s.to_string(), "metadata.name=a");
        let s = FieldSelector::parse("status.phase!=Running").unwrap();
        assert_eq!(s.requirements()[0].operator, FieldOperator::NotEquals);
        assert_eq!(s.to_string(), "status.phase!=Running");
        assert_eq!(FieldSelector::parse("a=").unwrap().to_string(), "a=");
    }

    #[test]
    fn terms_are_sorted_as_strings() {
        let s = FieldSelector::parse("spec.nodeName=n1,metadata.name=a,status.phase!=Failed").unwrap();
        assert_eq!(s.to_string(), "metadata.name=a,spec.nodeName=n1,status.phase!=Failed");
    }

    #[test]
    fn backslash_escapes_round_trip() {
        let s = FieldSelector::parse(r"a=x\,y\=z\\w,b=c").unwrap();
        assert_eq!(s.requirements().len(), 2);
        assert_eq!(s.requirements()[0].value, r"x,y=z\w");
        assert_eq!(s.to_string(), r"a=x\,y\=z\\w,b=c");
        assert_eq!(escape_value(r"a,b=c\"), r"a\,b\=c\\");
    }

    #[test]
    fn first_operator_splits_the_term() {
        let s = FieldSelector::parse("a!=b").unwrap();
        assert_eq!((s.requirements()[0].field.as_str(), s.requirements()[0].value.as_str()), ("a", "b"));
        // The field part has no escaping: `a\=b` is field `a\`, `a\=b=c` has value `b=c`.
        assert_eq!(FieldSelector::parse(r"a\=b").unwrap().requirements()[0].field, r"a\");
        assert_eq!(err(r"a\=b=c"), "invalid field selector: unescaped character in value: 61");
    }

    #[test]
    fn parse_errors_use_kube_wording() {
        assert_eq!(err("foo"), "invalid selector: 'foo'; can't understand 'foo'");
        assert_eq!(err("a=b,foo"), "invalid selector: 'a=b,foo'; can't understand 'foo'");
        assert_eq!(err("a!b"), "invalid selector: 'a!b'; can't understand 'a!b'");
        assert_eq!(err("a=b=c"), "invalid field selector: unescaped character in value: 61");
        assert_eq!(err(r"a=b\x"), "invalid field selector: invalid escape sequence: \\x");
        assert_eq!(err(r"a=b\"), "invalid field selector: invalid escape sequence: \\");
        let e = FieldSelector::parse("foo").unwrap_err();
        assert_eq!(e.code, 400);
        assert_eq!(e.to_status()["reason"], "BadRequest");
    }

    #[test]
    fn matching_treats_missing_fields_as_empty() {
        let f = fields(&[("metadata.name", "web"), ("status.phase", "Running")]);
        let m = |s: &str| FieldSelector::parse(s).unwrap().matches(&f);
        assert!(m("metadata.name=web"));
        assert!(!m("metadata.name=db"));
        assert!(m("metadata.name!=db"));
        assert!(m("metadata.name=web,status.phase=Running"));
        assert!(!m("metadata.name=web,status.phase!=Running"));
        assert!(m("spec.nodeName="));
        assert!(!m("spec.nodeName!="));
    }

    #[test]
    fn exact_match_finds_equality_terms() {
        let s = FieldSelector::parse("metadata.namespace=ns,metadata.name!=x").unwrap();
        assert_eq!(s.exact_match("metadata.namespace"), Some("ns"));
        assert_eq!(s.exact_match("metadata.name"), None);
        assert_eq!(FieldSelector::one_term_equal("metadata.name", "a").exact_match("metadata.name"), Some("a"));
    }
}
