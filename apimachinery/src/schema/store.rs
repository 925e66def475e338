//! The definitions schema nodes resolve `$ref`s against: built once by the crate that knows
//! the kinds' types and installed here, so the walkers below (pruning, strategic merge patch,
//! managed fields) stay generic.

use std::collections::{BTreeMap, HashMap};
use std::sync::{LazyLock, OnceLock};

use serde_json::Value;

/// Prefix of every `$ref` in the canonical store.
pub const DEFINITIONS: &str = "#/definitions/";

/// The definitions and the kind index, shared by every caller for the process lifetime.
pub struct Store {
    /// Definition name (`io.k8s.api.apps.v1.Deployment`) to schema; sorted for stable output.
    pub defs: BTreeMap<String, Value>,
    /// (group, version, kind) to definition name, from `x-kubernetes-group-version-kind`.
    pub kinds: HashMap<(String, String, String), String>,
}

/// Installed once per process; the first installer wins.
static INSTALLED: OnceLock<Store> = OnceLock::new();

/// The installed store, building it with `build` if none is installed yet.
pub fn install_with(build: impl FnOnce() -> Store) -> &'static Store {
    INSTALLED.get_or_init(build)
}

/// What a process that installed nothing walks with: no definitions, so every kind reads as
/// schemaless (maps granular, lists atomic).
static EMPTY: LazyLock<Store> = LazyLock::new(|| Store { defs: BTreeMap::new(), kinds: HashMap::new() });

/// The installed store. The server installs it with its catalogue (`kinds::catalogue`), before
/// it serves; the core's own tests run with none.
pub fn store() -> &'static Store {
    INSTALLED.get().unwrap_or(&EMPTY)
}

/// The definition name a `$ref` (or `allOf: [{$ref}]`) points to.
pub fn ref_target(v: &Value) -> Option<&str> {
    let r = match v.get("$ref") {
        Some(r) => r,
        None => match v.get("allOf").and_then(Value::as_array).map(Vec::as_slice) {
            Some([one]) => one.get("$ref")?,
            _ => return None,
        },
    };
    let r = r.as_str()?;
    Some(r.strip_prefix(DEFINITIONS).or_else(|| r.strip_prefix("#/components/schemas/")).unwrap_or(r))
}

/// Follows `$ref` / `allOf: [{$ref}]` wrappers to the definition (a few hops at most).
pub fn resolve(mut v: &Value) -> &Value {
    for _ in 0..8 {
        match ref_target(v).and_then(definition) {
            Some(d) => v = d,
            None => break,
        }
    }
    v
}

/// The installed definitions by name, hashed: walkers resolve a `$ref` at nearly every step,
/// and a search of the sorted map compared names sharing long prefixes (`io.k8s.api.core.v1.`).
static BY_NAME: OnceLock<HashMap<&'static str, &'static Value>> = OnceLock::new();

/// A definition by name (`io.k8s.api.apps.v1.Deployment`), as served in `/openapi/v2`.
pub fn definition(name: &str) -> Option<&'static Value> {
    let installed = INSTALLED.get()?;
    BY_NAME.get_or_init(|| installed.defs.iter().map(|(k, v)| (k.as_str(), v)).collect()).get(name).copied()
}

/// Every definition name, sorted.
pub fn definition_names() -> impl Iterator<Item = &'static str> {
    store().defs.keys().map(String::as_str)
}

/// The definition name of a kind (`apps`, `v1`, `DeploymentList` →
/// `io.k8s.api.apps.v1.DeploymentList`), from its `x-kubernetes-group-version-kind`.
pub fn kind_definition_name(group: &str, version: &str, kind: &str) -> Option<&'static str> {
    store().kinds.get(&(group.to_string(), version.to_string(), kind.to_string())).map(String::as_str)
}
