//! Bootstrap tokens (`--enable-bootstrap-token-auth`), as kube's bootstrap token authenticator
//! reads them: what `kubeadm join` and a kubelet's TLS bootstrap present before the node has
//! a credential of its own. A token `<id>.<secret>` (6 and 16 characters of `[a-z0-9]`) is
//! the Secret `kube-system/bootstrap-token-<id>` of type `bootstrap.kubernetes.io/token` whose
//! `token-id` and `token-secret` match, whose `expiration` (RFC 3339) has not passed, and which
//! is marked `usage-bootstrap-authentication: "true"`. Its user is `system:bootstrap:<id>`, in
//! `system:bootstrappers` and the Secret's `auth-extra-groups`.
//!
//! A token that fails a check is not this authenticator's, as in kube: the next one may still
//! take it, and nobody taking it is a 401. Why it failed is logged, never told the client.

use std::sync::Arc;

use apimachinery::lookup::ObjectLookup;
use apimachinery::messages::Authenticated;
use apimachinery::object::ObjectExt;
use apimachinery::request::UserInfo;
use async_trait::async_trait;
use base64::Engine;
use serde_json::Value;

use super::TokenAuthenticator;

/// Where the Secrets live, their name prefix and type (kube's `bootstrapapi`).
const NAMESPACE: &str = "kube-system";
const SECRET_PREFIX: &str = "bootstrap-token-";
const SECRET_TYPE: &str = "bootstrap.kubernetes.io/token";
/// The user name prefix and the group every bootstrap token is in.
const USER_PREFIX: &str = "system:bootstrap:";
const DEFAULT_GROUP: &str = "system:bootstrappers";

/// The bootstrap token authenticator, reading Secrets through `objects`.
pub struct BootstrapTokens {
    objects: Arc<dyn ObjectLookup>,
}

impl BootstrapTokens {
    /// An authenticator over the Secrets `objects` reads.
    pub fn new(objects: Arc<dyn ObjectLookup>) -> Self {
        BootstrapTokens { objects }
    }
}

/// `<id>.<secret>`, each of `[a-z0-9]`, 6 and 16 long.
fn parse(token: &str) -> Option<(&str, &str)> {
    let (id, secret) = token.split_once('.')?;
    let valid = |s: &str, len: usize| s.len() == len && s.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
    (valid(id, 6) && valid(secret, 16)).then_some((id, secret))
}

/// A key of the Secret's `data`, decoded (empty when absent or not base64).
fn data(secret: &Value, key: &str) -> String {
    let encoded = secret.pointer(&format!("/data/{key}")).and_then(Value::as_str).unwrap_or("");
    let bytes = base64::engine::general_purpose::STANDARD.decode(encoded).unwrap_or_default();
    String::from_utf8(bytes).unwrap_or_default()
}

/// Whether `group` may be an extra group: `system:bootstrappers:` then `[a-z0-9:-]`, ending
/// in `[a-z0-9]`, at most 256 characters after the prefix.
fn valid_extra_group(group: &str) -> bool {
    let Some(rest) = group.strip_prefix("system:bootstrappers:") else { return false };
    let allowed = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b':' || b == b'-';
    !rest.is_empty()
        && rest.len() <= 256
        && rest.bytes().all(allowed)
        && rest.bytes().last().is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
}

/// Whether two secrets are equal, in a time that does not depend on where they differ.
fn same_secret(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |differ, (x, y)| differ | (x ^ y)) == 0
}

/// The user a Secret that matches the token makes, or why the Secret does not authenticate.
fn user_of(
    secret: &Value,
    id: &str,
    token_secret: &str,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<UserInfo, String> {
    if secret.is_being_deleted() {
        return Err("is deleted and awaiting removal".into());
    }
    if secret.get("type").and_then(Value::as_str) != Some(SECRET_TYPE) || secret.get("data").is_none_or(Value::is_null)
    {
        return Err(format!("has invalid type, expected {SECRET_TYPE}."));
    }
    let stored = data(secret, "token-secret");
    if !same_secret(stored.as_bytes(), token_secret.as_bytes()) {
        return Err("has invalid value for key token-secret.".into());
    }
    if data(secret, "token-id") != id {
        return Err("has invalid value for key token-id.".into());
    }
    let expiration = data(secret, "expiration");
    if !expiration.is_empty() {
        match chrono::DateTime::parse_from_rfc3339(&expiration) {
            Ok(at) if at <= now => return Err(format!("has expired at {expiration}")),
            Ok(_) => {}
            Err(_) => return Err(format!("has an unparsable expiration time ({expiration}): treated as expired")),
        }
    }
    if data(secret, "usage-bootstrap-authentication") != "true" {
        return Err("not marked usage-bootstrap-authentication=true.".into());
    }
    let mut groups = vec![DEFAULT_GROUP.to_string()];
    let extra = data(secret, "auth-extra-groups");
    if !extra.is_empty() {
        for group in extra.split(',') {
            if !valid_extra_group(group) {
                return Err(format!(
                    "has invalid value for key auth-extra-groups: {group:?} is not a valid bootstrap group"
                ));
            }
            groups.push(group.to_string());
        }
    }
    // A set, listed sorted, as kube's `sets.String`.
    groups.sort();
    groups.dedup();
    Ok(UserInfo { name: format!("{USER_PREFIX}{id}"), groups, ..Default::default() })
}

#[async_trait(?Send)]
impl TokenAuthenticator for BootstrapTokens {
    fn name(&self) -> &'static str {
        "bootstrap-token"
    }

    async fn authenticate(&self, token: &str, _: &[String]) -> Result<Option<Authenticated>, String> {
        let Some((id, token_secret)) = parse(token) else { return Ok(None) };
        let name = format!("{SECRET_PREFIX}{id}");
        let secret = self.objects.get("", "secrets", NAMESPACE, &name).await.map_err(|e| e.message)?;
        let Some(secret) = secret else {
            tracing::debug!("no Secret {NAMESPACE}/{name} to match a bootstrap bearer token");
            return Ok(None);
        };
        match user_of(&secret, id, token_secret, chrono::Utc::now()) {
            Ok(user) => Ok(Some(Authenticated { user, audiences: Vec::new() })),
            Err(why) => {
                tracing::debug!("bootstrap token Secret {NAMESPACE}/{name} {why}");
                Ok(None)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn b64(s: &str) -> String {
        base64::engine::general_purpose::STANDARD.encode(s)
    }

    fn secret(id: &str, token_secret: &str, extra: &[(&str, &str)]) -> Value {
        let mut data = serde_json::Map::new();
        for (k, v) in [("token-id", id), ("token-secret", token_secret), ("usage-bootstrap-authentication", "true")]
            .iter()
            .chain(extra)
        {
            data.insert(k.to_string(), b64(v).into());
        }
        json!({"metadata": {"name": format!("bootstrap-token-{id}"), "namespace": "kube-system"},
               "type": SECRET_TYPE, "data": data})
    }

    #[test]
    fn tokens_are_six_dot_sixteen_lowercase_alphanumerics() {
        assert_eq!(parse("abcdef.0123456789abcdef"), Some(("abcdef", "0123456789abcdef")));
        for bad in
            ["abcdef.0123456789abcde", "ABCDEF.0123456789abcdef", "abcdef0123456789abcdef", "abcde.0123456789abcdefg"]
        {
            assert_eq!(parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_matching_secret_makes_a_bootstrap_user_in_its_groups() {
        let now = chrono::Utc::now();
        let later = (now + chrono::Duration::hours(1)).to_rfc3339();
        let groups = "system:bootstrappers:kubeadm:default-node-token,system:bootstrappers:kubeadm:default-node-token";
        let s = secret("abcdef", "0123456789abcdef", &[("expiration", &later), ("auth-extra-groups", groups)]);
        let user = user_of(&s, "abcdef", "0123456789abcdef", now).unwrap();
        assert_eq!(user.name, "system:bootstrap:abcdef");
        assert_eq!(user.groups, ["system:bootstrappers", "system:bootstrappers:kubeadm:default-node-token"]);
    }

    #[test]
    fn each_failed_check_refuses_with_kubes_reason() {
        let now = chrono::Utc::now();
        let ok = || secret("abcdef", "0123456789abcdef", &[]);
        let refused = |s: Value| user_of(&s, "abcdef", "0123456789abcdef", now).unwrap_err();
        assert_eq!(
            user_of(&ok(), "abcdef", "0123456789abcdeg", now).unwrap_err(),
            "has invalid value for key token-secret."
        );
        let mut wrong_type = ok();
        wrong_type["type"] = "Opaque".into();
        assert_eq!(refused(wrong_type), "has invalid type, expected bootstrap.kubernetes.io/token.");
        let earlier = (now - chrono::Duration::seconds(1)).to_rfc3339();
        assert!(refused(secret("abcdef", "0123456789abcdef", &[("expiration", &earlier)])).starts_with("has expired"));
        let unmarked = secret("abcdef", "0123456789abcdef", &[("usage-bootstrap-authentication", "false")]);
        assert_eq!(refused(unmarked), "not marked usage-bootstrap-authentication=true.");
        let bad_group = secret("abcdef", "0123456789abcdef", &[("auth-extra-groups", "system:masters")]);
        assert!(refused(bad_group).starts_with("has invalid value for key auth-extra-groups"));
        let mut deleting = ok();
        deleting["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z".into();
        assert_eq!(refused(deleting), "is deleted and awaiting removal");
        let mut other_id = ok();
        other_id["data"]["token-id"] = b64("zzzzzz").into();
        assert_eq!(refused(other_id), "has invalid value for key token-id.");
    }
}
