//! Opens the storage backends the flags ask for and routes resources to them: the embedded
//! store or etcd3 as the default, `--etcd-servers-overrides` for single resources (`embedded`
//! names this server's own store), each wrapped, from the outside in, in encryption at rest
//! when `--encryption-provider-config` is given, in kube's request metrics, and in fault
//! injection when `--enable-fault-injection` allows it (so an injected delay is measured as the
//! backend's own).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use actors::StageArbiter;
use apimachinery::catalogue::{Catalogue, ResourceDef};
use storage::embedded::{EmbeddedOptions, EmbeddedStore};
use storage::encryption::{EncryptedStorage, EncryptionConfig};
use storage::etcd::{EtcdOptions, EtcdStore};
use storage::faults::{Faults, FaultyStorage};
use storage::metered::MeteredStorage;
use storage::router::{StorageRouter, parse_overrides};
use storage::{ResourceKeys, Storage};

use crate::config::{ServeOptions, StorageBackend};
use crate::metrics::STORAGE_OBJECTS;

/// Opens every backend and builds the router for the resources of `catalogue`; every backend
/// is subject to `faults` when given. Also returns every backend's meters, for the storage
/// axis's health.
///
/// etcd's connections are made on `etcd_home` when given (the storage stage's arbiter): their
/// tasks then run on the thread that writes, so a write's call to etcd and its answer cross
/// no thread.
pub async fn open(
    options: &ServeOptions,
    data_dir: &Path,
    catalogue: &Catalogue,
    faults: Option<&Arc<Faults>>,
    etcd_home: Option<&StageArbiter>,
) -> Result<(Arc<StorageRouter>, Vec<Arc<MeteredStorage>>), String> {
    let encryption = match &options.encryption_provider_config {
        Some(path) => Some(EncryptionConfig::load(path).map_err(|e| format!("--encryption-provider-config: {e}"))?),
        None => None,
    };
    // Two groups serving one store (both `events`) share one key prefix: encryption names the
    // resource kube stores them as (core `events`), an override may name either.
    let mut stored = resource_keys(catalogue.stores(), &options.etcd_prefix);
    // Objects still under a prefix this server once used are read, to be moved, with their
    // resource's encryption.
    stored.extend(former_keys(catalogue, &options.etcd_prefix));
    let served = resource_keys(catalogue.resources(), &options.etcd_prefix);
    let mut meters = Vec::new();
    let mut wrap = |backend: Arc<dyn Storage>| -> Arc<dyn Storage> {
        let backend: Arc<dyn Storage> = match faults {
            Some(faults) => FaultyStorage::new(backend, faults.clone()),
            None => backend,
        };
        let metered = MeteredStorage::new(backend);
        meters.push(metered.clone());
        match &encryption {
            Some(config) => EncryptedStorage::new(metered, config.clone(), &stored),
            None => metered,
        }
    };
    let mut embedded: Option<Arc<dyn Storage>> = None;
    let mut open_embedded = || -> Result<Arc<dyn Storage>, String> {
        if let Some(e) = &embedded {
            return Ok(e.clone());
        }
        let tuned = EmbeddedOptions { faults: faults.cloned(), ..EmbeddedOptions::default() };
        let store: Arc<dyn Storage> = EmbeddedStore::open(&data_dir.join("store"), tuned).map_err(|e| e.to_string())?;
        embedded = Some(store.clone());
        Ok(store)
    };
    let backend = options.storage_backend.unwrap_or(match options.etcd_servers.is_empty() {
        true => StorageBackend::Embedded,
        false => StorageBackend::Etcd3,
    });
    let default = match backend {
        StorageBackend::Embedded => open_embedded()?,
        StorageBackend::Etcd3 => {
            if options.etcd_servers.is_empty() {
                return Err("--storage-backend etcd3 needs --etcd-servers".into());
            }
            etcd(options, &options.etcd_servers, etcd_home).await?
        }
    };
    let mut router = StorageRouter::new(wrap(default));
    for o in parse_overrides(options.etcd_servers_overrides.as_deref().unwrap_or(""), &served)? {
        let backend =
            if o.servers == ["embedded"] { open_embedded()? } else { etcd(options, &o.servers, etcd_home).await? };
        tracing::info!(prefix = %o.keys.prefix, backend = %backend.describe(), "storage override");
        router.route(&o.keys.prefix, wrap(backend));
    }
    Ok((Arc::new(router), meters))
}

/// The resources this server once stored under their plural name, where kube-apiserver's
/// prefix is another (`controllers`, `ingress`, and the group-prefixed two).
const FORMERLY_UNDER_PLURAL: [&str; 4] =
    ["replicationcontrollers", "ingresses", "customresourcedefinitions", "apiservices"];

/// The prefixes of [`FORMERLY_UNDER_PLURAL`], as storage names resources.
fn former_keys(catalogue: &Catalogue, prefix: &str) -> Vec<ResourceKeys> {
    let former = catalogue.stores().into_iter().filter(|d| FORMERLY_UNDER_PLURAL.contains(&d.resource.as_str()));
    former
        .map(|def| ResourceKeys {
            group: def.group.clone(),
            resource: def.resource.clone(),
            prefix: format!("{}/{}/", prefix.trim_end_matches('/'), def.resource),
        })
        .collect()
}

/// Moves the objects of [`FORMERLY_UNDER_PLURAL`] to kube's prefixes, before anything reads
/// them; a no-op once done. A value that does not decode stays where it is, named in the log.
pub async fn adopt_kube_prefixes(router: &StorageRouter, catalogue: &Catalogue, prefix: &str) -> Result<(), String> {
    for def in catalogue.stores().iter().filter(|d| FORMERLY_UNDER_PLURAL.contains(&d.resource.as_str())) {
        let (from, to) = (format!("{}/{}/", prefix.trim_end_matches('/'), def.resource), def.key_prefix(prefix));
        let storage = router.backend(&to);
        let moved = storage_codec::migrate::move_prefix(storage.as_ref(), def, &from, &to)
            .await
            .map_err(|e| format!("moving {from} to {to}: {e}"))?;
        for (key, why) in &moved.left {
            tracing::error!(key, "left under this server's former prefix: {why}");
        }
        if moved.moved > 0 {
            tracing::info!(from, to, moved = moved.moved, "moved objects to kube-apiserver's prefix");
        }
    }
    Ok(())
}

/// Where each of `defs` keeps its objects under `storage_prefix`, as storage names resources.
fn resource_keys(defs: Vec<Arc<ResourceDef>>, storage_prefix: &str) -> Vec<ResourceKeys> {
    defs.iter()
        .map(|def| ResourceKeys {
            group: def.group.clone(),
            resource: def.resource.clone(),
            prefix: def.key_prefix(storage_prefix),
        })
        .collect()
}

async fn etcd(
    options: &ServeOptions,
    servers: &[String],
    home: Option<&StageArbiter>,
) -> Result<Arc<dyn Storage>, String> {
    let etcd_options = EtcdOptions {
        endpoints: servers.to_vec(),
        ca_file: options.etcd_cafile.clone(),
        cert_file: options.etcd_certfile.clone(),
        key_file: options.etcd_keyfile.clone(),
        ..Default::default()
    };
    let connect = EtcdStore::connect(etcd_options);
    let connected = match home {
        Some(arbiter) => arbiter.run(connect).await.ok_or_else(|| format!("the {} thread stopped", arbiter.name()))?,
        None => connect.await,
    };
    let store: Arc<dyn Storage> = connected.map_err(|e| e.to_string())?;
    Ok(store)
}

/// Compacts every backend every `interval` to the revision it had one interval earlier, as
/// kube-apiserver does, so watches resuming within an interval still find their events; in
/// turns through `compact_rev_key` ([`storage::compactor`]), so replicas and kube-apiservers
/// sharing an etcd compact it once per interval between them.
pub fn spawn_compaction(router: Arc<StorageRouter>, interval: Duration) {
    for storage in router.backends() {
        actix_web::rt::spawn(async move {
            let mut turns = storage::compactor::Compactor::new(storage::compactor::COMPACT_REV_KEY);
            loop {
                tokio::time::sleep(interval).await;
                if let Err(e) = turns.take_turn(storage.as_ref()).await {
                    tracing::warn!(backend = %storage.describe(), "compaction failed: {e}");
                }
            }
        });
    }
}

/// Publishes `apiserver_storage_objects{resource}` every `interval`, counting each resource in
/// the backend that stores it, as kube-apiserver does once a minute.
pub fn spawn_object_counts(
    router: Arc<StorageRouter>,
    catalogue: Arc<Catalogue>,
    storage_prefix: String,
    interval: Duration,
) {
    actix_web::rt::spawn(async move {
        loop {
            for def in catalogue.stores() {
                let prefix = def.key_prefix(&storage_prefix);
                match router.backend(&prefix).count(&prefix).await {
                    Ok(n) => metrics::gauge!(STORAGE_OBJECTS, "resource" => def.qualified()).set(n as f64),
                    Err(e) => tracing::debug!(resource = %def.resource, "counting objects: {e}"),
                }
            }
            tokio::time::sleep(interval).await;
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Encryption and overrides name resources; storage sees kube's key layout.
    #[test]
    fn resources_are_keyed_as_kube_stores_them() {
        let catalogue = kinds::catalogue();
        let stored = resource_keys(catalogue.stores(), "/registry");
        let prefix = |group: &str, resource: &str| {
            let found: Vec<&str> = stored
                .iter()
                .filter(|k| k.group == group && k.resource == resource)
                .map(|k| k.prefix.as_str())
                .collect();
            found.join(",")
        };
        assert_eq!(prefix("", "secrets"), "/registry/secrets/");
        assert_eq!(prefix("", "services"), "/registry/services/specs/");
        assert_eq!(prefix("", "endpoints"), "/registry/services/endpoints/");
        assert_eq!(prefix("", "nodes"), "/registry/minions/");
        assert_eq!(prefix("apps", "deployments"), "/registry/deployments/");
        assert_eq!(prefix("batch", "cronjobs"), "/registry/cronjobs/");
        assert_eq!(prefix("", "replicationcontrollers"), "/registry/controllers/");
        assert_eq!(prefix("networking.k8s.io", "ingresses"), "/registry/ingress/");
        assert_eq!(
            prefix("apiextensions.k8s.io", "customresourcedefinitions"),
            "/registry/apiextensions.k8s.io/customresourcedefinitions/"
        );
        assert_eq!(prefix("apiregistration.k8s.io", "apiservices"), "/registry/apiregistration.k8s.io/apiservices/");
        // Events of both groups are one store, encrypted as core events.
        assert_eq!(prefix("", "events"), "/registry/events/");
        assert_eq!(prefix("events.k8s.io", "events"), "");
        let served = resource_keys(catalogue.resources(), "/registry");
        let routed = parse_overrides("events.k8s.io/events#embedded", &served).unwrap();
        assert_eq!(routed[0].keys.prefix, "/registry/events/");
    }
}
