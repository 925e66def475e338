//! The values of kube's libraries, as [`crate::value::Value`] holds them: quantities, IPs,
//! CIDRs, URLs, named formats and the authorizer's values. Only the data lives here, below the
//! values; what the libraries do with it is [`crate::library`].

use std::net::IpAddr;
use std::sync::Arc;

use crate::authorization::{AuthzTarget, Decision};

/// A value of one of kube's library types.
#[derive(Clone, Debug)]
pub enum Ext {
    /// `kubernetes.Quantity`. `pointer`: kube's `add` and `sub` return a pointer to a
    /// quantity, which its equality does not recognise on the right of `==`.
    Quantity(crate::quantity::Quantity, bool),
    /// `net.IP`.
    Ip(IpAddr),
    /// `net.CIDR`.
    Cidr(Cidr),
    /// `kubernetes.URL`.
    Url(Arc<Url>),
    /// `kubernetes.NamedFormat`.
    Format(&'static NamedFormat),
    /// One of the authorizer library's values.
    Authz(Arc<AuthzValue>),
}

/// A CIDR: an address and a prefix length (the address is kept as written, not masked).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cidr {
    /// The address.
    pub addr: IpAddr,
    /// The prefix length.
    pub bits: u8,
}

/// A parsed URL (Go's `url.URL`, the parts kube reads).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Url {
    pub(crate) scheme: String,
    pub(crate) opaque: String,
    pub(crate) user: Option<String>,
    pub(crate) host: String,
    pub(crate) path: String,
    pub(crate) raw_path: String,
    pub(crate) omit_host: bool,
    pub(crate) force_query: bool,
    pub(crate) raw_query: String,
    pub(crate) fragment: Option<String>,
}

/// A named format.
#[derive(Debug)]
pub struct NamedFormat {
    /// kube's name of it (`DNS1123Label`).
    pub name: &'static str,
    /// The messages of what is wrong with a string, none if it is valid.
    pub validate: fn(&str) -> Vec<String>,
    /// The regex size kube assumes for its cost.
    pub max_regex_size: u64,
}

/// A value of the authorizer library.
#[derive(Clone, Debug)]
pub enum AuthzValue {
    /// `kubernetes.authorization.Authorizer`: for the requesting user, or a service account.
    Authorizer(Option<(String, String)>),
    /// `kubernetes.authorization.PathCheck`.
    PathCheck(Option<(String, String)>, String),
    /// `kubernetes.authorization.GroupCheck`.
    GroupCheck(Option<(String, String)>, String),
    /// `kubernetes.authorization.ResourceCheck`: the service account and the target.
    ResourceCheck(Option<(String, String)>, AuthzTarget),
    /// `kubernetes.authorization.Decision`.
    Decision(Decision),
}
