//! kube's impersonation filter: `Impersonate-User`, `Impersonate-Group`, `Impersonate-Uid` and
//! `Impersonate-Extra-<key>` headers replace the authenticated user for the rest of the chain,
//! each one first allowed by the `impersonate` verb on what it names (kube:
//! `staging/src/k8s.io/apiserver/pkg/endpoints/filters/impersonation.go`):
//!
//! - a user: `users` (a ServiceAccount's user name: `serviceaccounts` in its namespace);
//! - a group: `groups`; a uid: `uids` and an extra: `userextras/<key>` in
//!   `authentication.k8s.io`.

use std::collections::BTreeMap;

use apimachinery::error::ApiError;
use apimachinery::request::{RequestInfo, UserInfo};

/// What a request asks to be treated as, from its `Impersonate-*` headers.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ImpersonationRequest {
    /// `Impersonate-User`.
    pub user: Option<String>,
    /// `Impersonate-Group`, repeated.
    pub groups: Vec<String>,
    /// `Impersonate-Uid`.
    pub uid: Option<String>,
    /// `Impersonate-Extra-<key>`: the key (lower-cased, percent-decoded) and its values.
    pub extra: BTreeMap<String, Vec<String>>,
}

/// An `impersonate` check on `resource` named `name`.
fn check(group: &str, resource: &str, namespace: &str, name: &str) -> RequestInfo {
    RequestInfo {
        is_resource_request: true,
        verb: "impersonate".into(),
        api_group: group.into(),
        resource: resource.into(),
        namespace: namespace.into(),
        name: name.into(),
        ..Default::default()
    }
}

impl ImpersonationRequest {
    /// Whether the request impersonates anyone.
    pub fn is_empty(&self) -> bool {
        self.user.is_none() && self.groups.is_empty() && self.uid.is_none() && self.extra.is_empty()
    }

    /// The `impersonate` checks the requester must pass, in kube's order: the user, then the
    /// groups, the extras and the uid. Impersonating groups, extras or a uid without a user is
    /// refused, as kube refuses it.
    pub fn checks(&self) -> Result<Vec<RequestInfo>, ApiError> {
        let Some(user) = &self.user else {
            // kube prints the requests as Go prints its ObjectReferences (`%v`).
            let reference =
                |kind: &str, name: &str, field: &str| format!("{{{kind}  {name}  authentication.k8s.io/v1  {field}}}");
            let mut what: Vec<String> = self.groups.iter().map(|g| reference("Group", g, "")).collect();
            for (key, values) in &self.extra {
                what.extend(values.iter().map(|v| reference("UserExtra", v, key)));
            }
            what.extend(self.uid.iter().map(|u| reference("UID", u, "")));
            return Err(ApiError::internal(format!("requested [{}] without impersonating a user", what.join(" "))));
        };
        let mut out = vec![match user.strip_prefix("system:serviceaccount:").and_then(|r| r.split_once(':')) {
            Some((ns, name)) => check("", "serviceaccounts", ns, name),
            None => check("", "users", "", user),
        }];
        out.extend(self.groups.iter().map(|g| check("", "groups", "", g)));
        for (key, values) in &self.extra {
            out.extend(values.iter().map(|v| {
                let mut c = check("authentication.k8s.io", "userextras", "", v);
                c.subresource = key.clone();
                c
            }));
        }
        out.extend(self.uid.iter().map(|u| check("authentication.k8s.io", "uids", "", u)));
        Ok(out)
    }

    /// The identity the rest of the chain acts for: the impersonated user with its groups (a
    /// ServiceAccount's too), `system:authenticated` added unless it is the anonymous user.
    pub fn user(&self) -> UserInfo {
        let name = self.user.clone().unwrap_or_default();
        let mut groups = self.groups.clone();
        if let Some((ns, _)) = name.strip_prefix("system:serviceaccount:").and_then(|r| r.split_once(':')) {
            for g in ["system:serviceaccounts".to_string(), format!("system:serviceaccounts:{ns}")] {
                if !groups.contains(&g) {
                    groups.push(g);
                }
            }
        }
        let implied = if name == "system:anonymous" { "system:unauthenticated" } else { "system:authenticated" };
        if !groups.iter().any(|g| g == implied) {
            groups.push(implied.into());
        }
        UserInfo { name, uid: self.uid.clone().unwrap_or_default(), groups, extra: self.extra.clone() }
    }
}

/// Decodes an `Impersonate-Extra-` header's key as kube does: lower-cased, then
/// `url.PathUnescape`d; a key with a malformed escape is kept as sent (lower-cased).
pub fn extra_key(header_suffix: &str) -> String {
    let lower = header_suffix.to_ascii_lowercase();
    path_unescape(&lower).unwrap_or(lower)
}

/// Go's `url.PathUnescape`: every `%` must start two hex digits; `+` stays a `+`.
fn path_unescape(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes.get(i + 1..i + 3)?;
            let digit = |b: u8| char::from(b).to_digit(16);
            out.push((digit(hex[0])? * 16 + digit(hex[1])?) as u8);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    Some(String::from_utf8_lossy(&out).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checks_name_what_is_impersonated() {
        let r = ImpersonationRequest {
            user: Some("system:serviceaccount:ci:deployer".into()),
            groups: vec!["devs".into()],
            uid: Some("42".into()),
            extra: BTreeMap::from([("scopes".to_string(), vec!["view".to_string()])]),
        };
        let checks = r.checks().unwrap();
        let described: Vec<(String, String, String, String)> = checks
            .iter()
            .map(|c| (c.api_group.clone(), c.resource.clone(), c.namespace.clone(), c.name.clone()))
            .collect();
        assert_eq!(
            described,
            [
                ("".into(), "serviceaccounts".into(), "ci".into(), "deployer".into()),
                ("".into(), "groups".into(), "".into(), "devs".into()),
                ("authentication.k8s.io".into(), "userextras".into(), "".into(), "view".into()),
                ("authentication.k8s.io".into(), "uids".into(), "".into(), "42".into()),
            ]
        );
        assert_eq!(checks[2].subresource, "scopes");
        let user = r.user();
        assert_eq!(
            user.groups,
            ["devs", "system:serviceaccounts", "system:serviceaccounts:ci", "system:authenticated"]
        );
        assert_eq!(user.uid, "42");

        let groups_only = ImpersonationRequest { groups: vec!["system:masters".into()], ..Default::default() };
        assert_eq!(
            groups_only.checks().unwrap_err().message,
            "Internal error occurred: requested [{Group  system:masters  authentication.k8s.io/v1  }] without impersonating a user"
        );
        assert_eq!(extra_key("Acme.com%2fProject"), "acme.com/project");
    }

    #[test]
    fn malformed_extra_key_escapes_keep_the_key_as_sent() {
        // A `%` before a multi-byte character once sliced the string inside it and panicked.
        assert_eq!(extra_key("%aé"), "%aé");
        assert_eq!(extra_key("a%2"), "a%2");
        assert_eq!(extra_key("a%+f"), "a%+f");
        assert_eq!(extra_key("a%zz%2F"), "a%zz%2f");
        assert_eq!(extra_key("scopes%2Fx+y"), "scopes/x+y");
    }
}
