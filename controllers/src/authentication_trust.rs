//! `kube-system/extension-apiserver-authentication`: what extension API servers read to
//! authenticate the requests this server passes on to them (kube's
//! `clusterauthenticationtrust` controller), written at start.
//!
//! `client-ca-file` holds the CA verifying client certificates; with
//! `--requestheader-client-ca-file`, `requestheader-client-ca-file` holds the front-proxy CA
//! and `requestheader-{username-headers,group-headers,extra-headers-prefix,allowed-names}`
//! the flags as JSON arrays. What another server sharing the storage wrote is kept: lists are
//! merged and certificate bundles deduplicated (kube also drops certificates expired for
//! more than five minutes; this server does not read their dates).

use apimachinery::catalogue::Catalogue;
use serde_json::{Map, Value};

use super::identity;
use stage_handles::Stages;

/// The ConfigMap's namespace and name.
const NAMESPACE: &str = "kube-system";
const NAME: &str = "extension-apiserver-authentication";

/// The front-proxy part (`--requestheader-*`).
#[derive(Clone, Debug, Default)]
pub struct RequestHeader {
    /// The CA's PEM.
    pub client_ca: String,
    /// `--requestheader-allowed-names`.
    pub allowed_names: Vec<String>,
    /// `--requestheader-username-headers`.
    pub username_headers: Vec<String>,
    /// `--requestheader-group-headers`.
    pub group_headers: Vec<String>,
    /// `--requestheader-extra-headers-prefix`.
    pub extra_headers_prefix: Vec<String>,
}

/// What is published.
#[derive(Clone, Debug, Default)]
pub struct AuthenticationTrust {
    /// The PEM of the CA verifying client certificates.
    pub client_ca: String,
    /// The front-proxy trust, when configured.
    pub requestheader: Option<RequestHeader>,
}

/// The PEM blocks of a bundle, each once, in order.
fn pem_blocks(bundle: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut current = String::new();
    for line in bundle.lines().map(str::trim).filter(|l| !l.is_empty()) {
        if line.starts_with("-----BEGIN ") {
            current.clear();
        }
        current.push_str(line);
        current.push('\n');
        if line.starts_with("-----END ") && !out.contains(&current) {
            out.push(std::mem::take(&mut current));
        }
    }
    out
}

/// `existing` and `new` bundles together, each certificate once.
fn merge_bundles(existing: Option<&str>, new: &str) -> String {
    let mut blocks = pem_blocks(existing.unwrap_or(""));
    for b in pem_blocks(new) {
        if !blocks.contains(&b) {
            blocks.push(b);
        }
    }
    blocks.concat()
}

/// `existing` (a JSON array) and `new` together, each string once.
fn merge_lists(existing: Option<&str>, new: &[String]) -> String {
    let mut list: Vec<String> = existing.and_then(|e| serde_json::from_str(e).ok()).unwrap_or_default();
    for n in new {
        if !list.contains(n) {
            list.push(n.clone());
        }
    }
    Value::from(list).to_string()
}

/// The ConfigMap's data: `existing` with `trust` merged in.
fn merged(existing: &Map<String, Value>, trust: &AuthenticationTrust) -> Map<String, Value> {
    let mut data = existing.clone();
    let old = |k: &str| existing.get(k).and_then(Value::as_str);
    data.insert("client-ca-file".into(), merge_bundles(old("client-ca-file"), &trust.client_ca).into());
    if let Some(rh) = &trust.requestheader {
        data.insert(
            "requestheader-client-ca-file".into(),
            merge_bundles(old("requestheader-client-ca-file"), &rh.client_ca).into(),
        );
        for (key, values) in [
            ("requestheader-username-headers", &rh.username_headers),
            ("requestheader-group-headers", &rh.group_headers),
            ("requestheader-extra-headers-prefix", &rh.extra_headers_prefix),
            ("requestheader-allowed-names", &rh.allowed_names),
        ] {
            data.insert(key.into(), merge_lists(old(key), values).into());
        }
    }
    data
}

/// Writes the ConfigMap, merged with what it holds; a conflict (another server writing it)
/// is retried.
pub async fn publish(stages: &Stages, catalogue: &Catalogue, trust: &AuthenticationTrust) -> Result<(), String> {
    let user = identity("cluster-authentication-trust-controller");
    super::configmap_data::reconcile(stages, catalogue, (NAMESPACE, NAME), &user, |data| {
        let wanted = merged(data.unwrap_or(&Map::new()), trust);
        (data != Some(&wanted)).then_some(wanted)
    })
    .await
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const A: &str = "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n";
    const B: &str = "-----BEGIN CERTIFICATE-----\nBBBB\n-----END CERTIFICATE-----\n";

    #[test]
    fn what_another_server_published_is_kept() {
        let existing: Map<String, Value> = serde_json::from_value(json!({
            "client-ca-file": A, "requestheader-username-headers": "[\"X-Remote-User\"]", "other": "x"}))
        .unwrap();
        let trust = AuthenticationTrust {
            client_ca: format!("{B}{A}"),
            requestheader: Some(RequestHeader {
                client_ca: B.into(),
                username_headers: vec!["X-Remote-User".into(), "X-Other".into()],
                group_headers: vec!["X-Remote-Group".into()],
                ..Default::default()
            }),
        };
        let data = merged(&existing, &trust);
        assert_eq!(data["client-ca-file"], format!("{A}{B}"));
        assert_eq!(data["requestheader-client-ca-file"], B);
        assert_eq!(data["requestheader-username-headers"], "[\"X-Remote-User\",\"X-Other\"]");
        assert_eq!(data["requestheader-allowed-names"], "[]");
        assert_eq!(data["other"], "x");
    }

    #[test]
    fn without_a_front_proxy_ca_only_the_client_ca_is_published() {
        let data = merged(&Map::new(), &AuthenticationTrust { client_ca: A.into(), requestheader: None });
        assert_eq!(data.keys().collect::<Vec<_>>(), ["client-ca-file"]);
    }
}
