//! kube's own CEL libraries (`k8s.io/apiserver/pkg/cel/library`): URLs, regex (`find`,
//! `findAll`), lists, the authorizer (with selectors), quantity, IP, CIDR and format. Their
//! values are [`Ext`] values; their functions are reached through [`call`].

pub mod authz;
pub mod format;
pub mod ip;
pub mod lists;
pub mod quantity;
pub mod urls;

use std::fmt;
use std::net::IpAddr;

use crate::error::{EvalError, EvalResult};
pub use crate::ext::Ext;
use crate::value::Value;

impl Ext {
    /// The type's name, as `type(x)` gives it.
    pub fn type_name(&self) -> &'static str {
        match self {
            Ext::Quantity(..) => "kubernetes.Quantity",
            Ext::Ip(_) => "net.IP",
            Ext::Cidr(_) => "net.CIDR",
            Ext::Url(_) => "kubernetes.URL",
            Ext::Format(_) => "kubernetes.NamedFormat",
            Ext::Authz(a) => a.type_name(),
        }
    }

    /// kube's `Size` of IPs and CIDRs (bytes of the address, of the prefix); 1 for the others.
    pub fn size(&self) -> u64 {
        match self {
            Ext::Ip(IpAddr::V4(_)) => 4,
            Ext::Ip(IpAddr::V6(_)) => 16,
            Ext::Cidr(c) => u64::from(c.bits).div_ceil(8),
            _ => 1,
        }
    }

    /// kube's `Equal` of a library value with `other` (not null): `None` for "no such
    /// overload", which is what a value of another type gives, and what a quantity made by
    /// `quantity()` gives with one made by `add` or `sub` on its right (kube's `Equal` does
    /// not recognise the pointer those return). The authorizer's values have no equality.
    pub fn equality(&self, other: &Value) -> Option<bool> {
        let Value::Ext(other) = other else { return None };
        match (self, other) {
            (Ext::Quantity(_, false), Ext::Quantity(_, true)) => None,
            (Ext::Quantity(a, _), Ext::Quantity(b, _)) => Some(a == b),
            (Ext::Ip(a), Ext::Ip(b)) => Some(a == b),
            (Ext::Cidr(a), Ext::Cidr(b)) => Some(a == b),
            (Ext::Url(a), Ext::Url(b)) => Some(a.to_string() == b.to_string()),
            (Ext::Format(a), Ext::Format(b)) => Some(a.name == b.name),
            _ => None,
        }
    }
}

impl fmt::Display for Ext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Ext::Quantity(q, _) => f.write_str(&q.canonical()),
            Ext::Ip(a) => write!(f, "{a}"),
            Ext::Cidr(c) => write!(f, "{c}"),
            Ext::Url(u) => write!(f, "{u}"),
            Ext::Format(n) => f.write_str(n.name),
            Ext::Authz(a) => f.write_str(a.type_name()),
        }
    }
}

/// Conversions kube's libraries add: `string(ip)`, `string(cidr)`.
pub fn convert(function: &str, v: &Value) -> Option<EvalResult> {
    match (function, v) {
        ("string", Value::Ext(Ext::Ip(a))) => Some(Ok(Value::string(a.to_string()))),
        ("string", Value::Ext(Ext::Cidr(c))) => Some(Ok(Value::string(c.to_string()))),
        _ => None,
    }
}

/// Calls library function `name`, if it is one of kube's.
pub fn call(
    name: &str,
    overload: Option<&str>,
    args: &[Value],
    regex: Option<&regex::Regex>,
    authorizer: Option<&dyn authz::Authorizer>,
) -> Option<EvalResult> {
    if let Some(r) = ip::call(name, args) {
        return Some(r);
    }
    if let Some(r) = urls::call(name, args) {
        return Some(r);
    }
    if let Some(r) = quantity::call(name, args) {
        return Some(r);
    }
    if let Some(r) = lists::call(name, overload, args) {
        return Some(r);
    }
    if let Some(r) = format::call(name, args) {
        return Some(r);
    }
    if let Some(r) = authz::call(name, args, authorizer) {
        return Some(r);
    }
    match (name, args) {
        ("find", [Value::String(s), Value::String(p)]) => Some(find(s, p, regex)),
        ("findAll", [Value::String(s), Value::String(p)]) => Some(find_all(s, p, -1, regex)),
        ("findAll", [Value::String(s), Value::String(p), Value::Int(n)]) => Some(find_all(s, p, *n, regex)),
        _ => None,
    }
}

fn compiled(pattern: &str, regex: Option<&regex::Regex>) -> Result<regex::Regex, EvalError> {
    match regex {
        Some(r) => Ok(r.clone()),
        None => crate::stdlib::regex::compile(pattern).map_err(|e| EvalError::msg(format!("Illegal regex: {e}"))),
    }
}

/// kube's `find`: the first match, `''` without one.
fn find(s: &str, pattern: &str, regex: Option<&regex::Regex>) -> EvalResult {
    let re = compiled(pattern, regex)?;
    Ok(Value::string(re.find(s).map(|m| m.as_str()).unwrap_or("")))
}

/// kube's `findAll`: Go's `FindAllString(s, n)`, all for a negative `n`.
fn find_all(s: &str, pattern: &str, n: i64, regex: Option<&regex::Regex>) -> EvalResult {
    let re = compiled(pattern, regex)?;
    let limit = if n < 0 { usize::MAX } else { n as usize };
    Ok(Value::list(re.find_iter(s).take(limit).map(|m| Value::string(m.as_str())).collect()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &str) -> Value {
        Value::string(v)
    }

    #[test]
    fn find_follows_kubes_documented_examples() {
        let call = |name: &str, args: &[Value]| call(name, None, args, None, None).unwrap().unwrap();
        assert_eq!(call("find", &[s("abc 123"), s("[0-9]+")]), s("123"));
        assert_eq!(call("find", &[s("abc 123"), s("xyz")]), s(""));
        assert_eq!(call("findAll", &[s("123 abc 456"), s("[0-9]+")]), Value::list(vec![s("123"), s("456")]));
        assert_eq!(call("findAll", &[s("123 abc 456"), s("[0-9]+"), Value::Int(1)]), Value::list(vec![s("123")]));
        assert_eq!(call("findAll", &[s("123 abc 456"), s("xyz")]), Value::list(vec![]));
    }
}
