//! `apiserver check-storage` and `apiserver migrate-storage`: what a store holds, and its data
//! brought into kube-apiserver's formats, with the flags `serve` opens storage with (etcd
//! servers, TLS, overrides, encryption, the prefix).

use std::fmt::Write as _;

use std::sync::Arc;

use apimachinery::catalogue::{Catalogue, ResourceDef};
use serde_json::Value;
use storage::router::StorageRouter;
use storage_codec::migrate::{Survey, rewrite, survey};

use crate::config::ServeOptions;

/// Reads every key under the prefix on every backend and prints what it found; fails when a
/// value does not decode. Writes nothing.
pub async fn check_storage(options: ServeOptions) -> Result<(), String> {
    let catalogue = kinds::catalogue();
    let router = open(&options, &catalogue).await?;
    let prefix = format!("{}/", options.etcd_prefix.trim_end_matches('/'));
    let mut undecodable = 0;
    for backend in router.backends() {
        let found = survey(backend.as_ref(), &prefix).await.map_err(|e| format!("{}: {e}", backend.describe()))?;
        print!("{}", report(&backend.describe(), &prefix, &found));
        undecodable += found.undecodable.len();
    }
    match undecodable {
        0 => Ok(()),
        n => Err(format!("{n} values could not be decoded")),
    }
}

/// The backends `serve` would open with `options`; the embedded store only where one exists,
/// so that a mistyped `--data-dir` is an error and not a new empty store.
async fn open(options: &ServeOptions, catalogue: &Catalogue) -> Result<Arc<StorageRouter>, String> {
    let embedded = options.data_dir.join("store");
    let uses_embedded = options.etcd_servers.is_empty()
        || options.etcd_servers_overrides.as_deref().is_some_and(|o| o.contains("#embedded"));
    if uses_embedded && !embedded.exists() {
        return Err(format!(
            "no embedded store at {}: name the server's --data-dir, or --etcd-servers",
            embedded.display()
        ));
    }
    Ok(crate::backends::open(options, &options.data_dir, catalogue, None, None).await?.0)
}

/// The report of one backend: a line per stored kind, version and format, then each value
/// that did not decode.
fn report(backend: &str, prefix: &str, found: &Survey) -> String {
    let mut out = format!("{backend}: {} keys under {prefix}\n", found.keys);
    for ((api_version, kind, format), n) in &found.found {
        let _ = writeln!(out, "  {n:>8}  {kind} {api_version} ({format})");
    }
    for key in &found.unknown_types {
        let _ = writeln!(out, "  of a type this server does not serve: {key}");
    }
    for (key, why) in &found.undecodable {
        let _ = writeln!(out, "  cannot decode {key}: {why}");
    }
    out
}

/// Rewrites every value still in this server's former format (MessagePack) in kube's: the
/// built-in resources, then the custom resources of every stored CRD.
pub async fn migrate_storage(options: ServeOptions) -> Result<(), String> {
    let catalogue = kinds::catalogue();
    let router = open(&options, &catalogue).await?;
    crate::backends::adopt_kube_prefixes(&router, &catalogue, &options.etcd_prefix).await?;
    let prefix = &options.etcd_prefix;
    let mut defs = catalogue.stores();
    defs.extend(custom_resources(&catalogue, &router, prefix).await?);
    let mut total = 0;
    for def in &defs {
        let at = def.key_prefix(prefix);
        let n = rewrite(router.backend(&at).as_ref(), def, &at).await.map_err(|e| format!("{at}: {e}"))?;
        if n > 0 {
            println!("{at}: {n} rewritten");
        }
        total += n;
    }
    let ips = cluster_ips::ServiceAllocators::new(
        options.service_cluster_ip_range,
        options.service_node_port_range,
        router.clone(),
        Arc::new(catalogue),
        prefix,
    );
    if ips.rewrite_in_kube_format().await.map_err(|e| format!("the Service IP bitmap: {e}"))? {
        println!("the Service IP bitmap rewritten");
        total += 1;
    }
    println!("{total} values rewritten in kube-apiserver's format");
    Ok(())
}

/// The resources of every CRD stored under `prefix`, each as its storage version (whose
/// defaults a read applies).
async fn custom_resources(
    catalogue: &Catalogue,
    router: &StorageRouter,
    prefix: &str,
) -> Result<Vec<Arc<ResourceDef>>, String> {
    let Some(crds) = catalogue.find("apiextensions.k8s.io", "v1", "customresourcedefinitions") else {
        return Ok(Vec::new());
    };
    let at = crds.key_prefix(prefix);
    let list = router.backend(&at).list(&at, Default::default()).await.map_err(|e| format!("{at}: {e}"))?;
    let mut out = Vec::new();
    for kv in &list.items {
        let mut crd = storage_codec::codec::decode_object(&crds, kv).map_err(|e| e.to_string())?;
        let storage = apiextensions::served::storage_version(&crd).unwrap_or_default().to_string();
        // Its objects are rewritten even when the storage version is not served.
        for version in crd.pointer_mut("/spec/versions").and_then(Value::as_array_mut).into_iter().flatten() {
            if version.get("name").and_then(Value::as_str) == Some(storage.as_str()) {
                version["served"] = Value::Bool(true);
            }
        }
        let defs = apiextensions::served::definitions(&crd, None);
        out.extend(defs.into_iter().filter(|d| d.version == storage).take(1).map(Arc::new));
    }
    Ok(out)
}
