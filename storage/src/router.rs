//! Which backend stores which resource: kube-apiserver's `--etcd-servers-overrides`.
//!
//! Every backend has its own revision sequence, so routing is by resource, never within one:
//! a resource's keys (`/registry/events/...`) all live in one backend, its cacher follows that
//! backend's watch, and its resourceVersions are that backend's revisions (as in kube, where an
//! overridden resource's resourceVersions come from its own etcd).

use std::sync::Arc;

use crate::{ResourceKeys, Storage};

/// One `--etcd-servers-overrides` entry: `group/resource#server;server`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Override {
    /// The resource and where its keys are.
    pub keys: ResourceKeys,
    /// The servers (etcd URLs, or `embedded` for this server's own store).
    pub servers: Vec<String>,
}

/// Parses kube's `--etcd-servers-overrides` syntax: comma-separated
/// `group/resource#server1;server2` entries, the group empty for core (`/events#...`), each
/// naming one of the served `resources`.
pub fn parse_overrides(flag: &str, resources: &[ResourceKeys]) -> Result<Vec<Override>, String> {
    let mut out = Vec::new();
    for entry in flag.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let (gr, servers) = entry
            .split_once('#')
            .ok_or_else(|| format!("invalid value of etcd server overrides: {entry} (want group/resource#servers)"))?;
        let (group, resource) = gr.split_once('/').ok_or_else(|| {
            format!("invalid resource definition: {gr} (want group/resource, e.g. /events or apps/deployments)")
        })?;
        let servers: Vec<String> =
            servers.split(';').map(str::trim).filter(|s| !s.is_empty()).map(String::from).collect();
        if resource.is_empty() || servers.is_empty() {
            return Err(format!("invalid value of etcd server overrides: {entry}"));
        }
        let Some(keys) = resources.iter().find(|r| r.group == group && r.resource == resource) else {
            return Err(format!("--etcd-servers-overrides names {gr}, which this server does not serve"));
        };
        out.push(Override { keys: keys.clone(), servers });
    }
    Ok(out)
}

/// Routes each resource's keys to its backend.
pub struct StorageRouter {
    default: Arc<dyn Storage>,
    /// `(key prefix, backend)`, longest prefixes first.
    routes: Vec<(String, Arc<dyn Storage>)>,
}

impl StorageRouter {
    /// Every key in `default`.
    pub fn new(default: Arc<dyn Storage>) -> Self {
        StorageRouter { default, routes: Vec::new() }
    }

    /// Stores every key under `prefix` (one resource's, and any resource sharing its keys) in
    /// `backend`.
    pub fn route(&mut self, prefix: &str, backend: Arc<dyn Storage>) {
        let prefix = prefix.to_string();
        self.routes.retain(|(p, _)| *p != prefix);
        self.routes.push((prefix, backend));
        self.routes.sort_by_key(|(p, _)| std::cmp::Reverse(p.len()));
    }

    /// The backend holding `key` (or every key under the prefix `key`).
    pub fn backend(&self, key: &str) -> &Arc<dyn Storage> {
        self.routes.iter().find(|(p, _)| key.starts_with(p.as_str())).map(|(_, b)| b).unwrap_or(&self.default)
    }

    /// The default backend.
    pub fn default_backend(&self) -> &Arc<dyn Storage> {
        &self.default
    }

    /// Closes every backend ([`Storage::close`]): once it returns, no accepted write is left
    /// half done. The first error is returned, after every backend was asked.
    pub async fn close(&self) -> Result<(), crate::StorageError> {
        let mut first = Ok(());
        for backend in self.backends() {
            if let Err(e) = backend.close().await {
                first = first.and(Err(e));
            }
        }
        first
    }

    /// Every distinct backend, default first, for compaction and health checks.
    pub fn backends(&self) -> Vec<Arc<dyn Storage>> {
        let mut out = vec![self.default.clone()];
        for (_, b) in &self.routes {
            if !out.iter().any(|o| Arc::ptr_eq(o, b)) {
                out.push(b.clone());
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn served() -> Vec<ResourceKeys> {
        [("", "events", "/registry/events/"), ("apps", "deployments", "/registry/deployments/")]
            .map(|(g, r, p)| ResourceKeys { group: g.into(), resource: r.into(), prefix: p.into() })
            .to_vec()
    }

    #[test]
    fn parses_kube_syntax() {
        let o =
            parse_overrides("/events#http://127.0.0.1:2381;http://127.0.0.1:2382,apps/deployments#embedded", &served())
                .unwrap();
        assert_eq!(
            o[0],
            Override {
                keys: served()[0].clone(),
                servers: vec!["http://127.0.0.1:2381".into(), "http://127.0.0.1:2382".into()]
            }
        );
        assert_eq!(
            (o[1].keys.prefix.as_str(), o[1].servers.as_slice()),
            ("/registry/deployments/", &["embedded".into()][..])
        );
    }

    #[test]
    fn rejects_malformed_entries() {
        assert!(parse_overrides("events#http://x", &served()).unwrap_err().contains("group/resource"));
        assert!(parse_overrides("/events", &served()).is_err());
        assert!(parse_overrides("/widgets#http://x", &served()).unwrap_err().contains("does not serve"));
        assert!(parse_overrides("", &served()).unwrap().is_empty());
    }
}
