//! String formats kube checks: [`kube_cel::names`], shared with CEL's `format` library, and
//! which of them a kind's `metadata.name` must match.

/// A name rule: `(name, is_generate_name_prefix) -> problems`.
pub type NameFn = fn(&str, bool) -> Vec<String>;

pub use kube_cel::names::*;

/// How a kind's `metadata.name` is validated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NameRule {
    /// RFC 1123 subdomain (most kinds).
    Subdomain,
    /// RFC 1123 label (namespaces).
    Label,
    /// RFC 1035 label (services).
    Rfc1035Label,
    /// Any name valid as a path segment (RBAC kinds: `system:masters` etc.).
    PathSegment,
}

impl NameRule {
    /// The name check kube's `ValidateObjectMeta` is given for the rule.
    pub fn check(self) -> NameFn {
        match self {
            NameRule::Subdomain => name_is_dns_subdomain,
            NameRule::Label => name_is_dns_label,
            NameRule::Rfc1035Label => name_is_dns1035_label,
            NameRule::PathSegment => path_segment_name,
        }
    }
}
