//! The crate rules of docs/ARCHITECTURE.md, checked over `cargo metadata` and the sources:
//!
//! - `actors` (the runtime) depends on no workspace crate and no Kubernetes crate;
//! - `protobuf` (the wire format) and `webhook-client` (calls out to webhooks) depend on no
//!   workspace crate;
//! - `kube-cel` (CEL as kube has it) depends on no workspace crate;
//! - `apimachinery` (the generic object model) depends only on `actors`, `protobuf` and
//!   `kube-cel`: never on a kind;
//! - `validation` (per-kind rules) only on `apimachinery` and `kube-cel`; `kinds` (the built-in
//!   kinds) on those and `validation` and `protobuf`;
//! - `storage` (the key-value contract and backends) only on `apimachinery`;
//! - the stage crates only on `actors`, the core, the kinds, `webhook-client` (admission and
//!   the auth stages) and, for `registry` and `cacher`, `storage`: never on each other;
//!   `registry`, `cacher` and `storage` name no kind, so they do not depend on `kinds`;
//! - `diagnosis` (the server's own diagnosis) only on the crates whose metrics it reads
//!   (`apimachinery`, `storage` and the stages but `registry`), for their metric names: a
//!   renamed metric is renamed for the diagnosis too;
//! - dev-dependencies may add `kinds` and `validation` (tests drive real kinds);
//! - `gateway`, the composition root, depends on every stage crate, and nothing depends on it
//!   but the fuzz targets;
//! - inside every crate, the top-level modules import each other without cycles (tests
//!   excluded).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;
use support::{production_source, sources};

#[path = "support/sources.rs"]
mod support;

/// Crates that know Kubernetes: the runtime must not depend on any of them.
const KUBERNETES: &[&str] =
    &["apimachinery", "kinds", "validation", "kube-cel", "k8s-openapi", "kube", "kube-core", "kube-client"];
const STAGES: &[&str] = &["registry", "cacher", "admission", "flowcontrol", "auth"];

fn allowed(krate: &str) -> Option<&'static [&'static str]> {
    Some(match krate {
        "actors" | "protobuf" | "webhook-client" | "kube-cel" => &[],
        // The names of the metrics it reads, from the crates that record them.
        "diagnosis" => &["admission", "apimachinery", "auth", "cacher", "flowcontrol", "storage"],
        "apimachinery" => &["actors", "protobuf", "kube-cel"],
        "validation" => &["apimachinery", "kube-cel"],
        "kinds" => &["apimachinery", "kube-cel", "protobuf", "validation"],
        "storage" => &["apimachinery"],
        "registry" | "cacher" => &["actors", "apimachinery", "storage"],
        "admission" => &["actors", "apimachinery", "kube-cel", "kinds", "validation", "webhook-client"],
        "flowcontrol" | "auth" => &["actors", "apimachinery", "webhook-client"],
        _ => return None,
    })
}

struct Workspace {
    root: PathBuf,
    /// Crate name to (its directory, every dependency of any kind).
    crates: BTreeMap<String, (PathBuf, BTreeSet<String>)>,
    /// Crate name to its dependencies other than dev-dependencies.
    normal: BTreeMap<String, BTreeSet<String>>,
}

fn workspace() -> Workspace {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--no-deps", "--offline"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo metadata runs");
    assert!(out.status.success(), "cargo metadata: {}", String::from_utf8_lossy(&out.stderr));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let root = PathBuf::from(doc["workspace_root"].as_str().unwrap());
    let mut crates = BTreeMap::new();
    let mut normal = BTreeMap::new();
    for p in doc["packages"].as_array().unwrap() {
        let name = p["name"].as_str().unwrap().to_string();
        let dir = Path::new(p["manifest_path"].as_str().unwrap()).parent().unwrap().to_path_buf();
        let all = p["dependencies"].as_array().unwrap();
        let deps = all.iter().map(|d| d["name"].as_str().unwrap().to_string()).collect();
        let not_dev = all.iter().filter(|d| d["kind"] != "dev").map(|d| d["name"].as_str().unwrap().to_string());
        normal.insert(name.clone(), not_dev.collect());
        crates.insert(name, (dir, deps));
    }
    Workspace { root, crates, normal }
}

#[test]
fn crates_depend_only_as_the_architecture_allows() {
    let ws = workspace();
    let members: BTreeSet<&String> = ws.crates.keys().collect();
    let mut broken = Vec::new();
    for (name, (_, deps)) in &ws.crates {
        let normal = &ws.normal[name];
        let internal: BTreeSet<&String> = deps.iter().filter(|d| members.contains(d)).collect();
        if let Some(allowed) = allowed(name) {
            for d in &internal {
                let test_only = !normal.contains(*d) && ["kinds", "validation"].contains(&d.as_str());
                if !allowed.contains(&d.as_str()) && !test_only {
                    broken.push(format!("{name} depends on {d}"));
                }
            }
        }
        // The fuzz targets drive the gateway's request decoding from outside, as a client would.
        if name != "gateway" && name != "apiserver-fuzz" && deps.contains("gateway") {
            broken.push(format!("{name} depends on gateway, the composition root"));
        }
    }
    for d in &ws.crates["actors"].1 {
        if KUBERNETES.contains(&d.as_str()) {
            broken.push(format!("actors depends on the Kubernetes crate {d}"));
        }
    }
    for stage in STAGES {
        if !ws.crates["gateway"].1.contains(*stage) {
            broken.push(format!("gateway, the composition root, does not wire {stage}"));
        }
    }
    for expected in
        ["actors", "protobuf", "kube-cel", "apimachinery", "validation", "kinds", "storage", "gateway", "tests"]
            .iter()
            .chain(STAGES)
    {
        if !ws.crates.contains_key(*expected) {
            broken.push(format!("the workspace has no {expected} crate"));
        }
    }
    assert!(broken.is_empty(), "crate rules broken:\n{}", broken.join("\n"));
    assert!(ws.root.join("docs/ARCHITECTURE.md").exists());
}

/// The top-level module a source file belongs to (`None` for the crate root and binaries).
fn top_module(src: &Path, file: &Path) -> Option<String> {
    let rel = file.strip_prefix(src).ok()?;
    let first = rel.components().next()?.as_os_str().to_str()?.to_string();
    if rel.components().count() == 1 {
        let stem = first.trim_end_matches(".rs");
        return (!matches!(stem, "lib" | "main")).then(|| stem.to_string());
    }
    (first != "bin").then_some(first)
}

/// The top-level modules `code` names through `crate::` (and, in a top-level file, `super::`).
fn references(code: &str, top_level_file: bool, modules: &BTreeSet<String>) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut scan = |prefix: &str| {
        for (i, _) in code.match_indices(prefix) {
            let before = code[..i].chars().last();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$') {
                continue;
            }
            let rest = &code[i + prefix.len()..];
            let candidates: Vec<&str> = if let Some(group) = rest.strip_prefix('{') {
                group.split('}').next().unwrap_or("").split(',').collect()
            } else {
                vec![rest]
            };
            for c in candidates {
                let name: String = c.trim().chars().take_while(|ch| ch.is_alphanumeric() || *ch == '_').collect();
                if modules.contains(&name) {
                    out.insert(name);
                }
            }
        }
    };
    scan("crate::");
    if top_level_file {
        scan("super::");
    }
    out
}

fn cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|n| n == node) {
            let mut c = path[at..].to_vec();
            c.push(node.to_string());
            return Some(c);
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.to_string());
        for next in graph.get(node).into_iter().flatten() {
            if let Some(c) = visit(next, graph, path, done) {
                return Some(c);
            }
        }
        path.pop();
        done.insert(node.to_string());
        None
    }
    let mut done = BTreeSet::new();
    graph.keys().find_map(|n| visit(n, graph, &mut Vec::new(), &mut done))
}

#[test]
fn no_crate_has_a_module_cycle() {
    let ws = workspace();
    let mut found = Vec::new();
    for (name, (dir, _)) in &ws.crates {
        let src = dir.join("src");
        let mut files = Vec::new();
        sources(&src, &mut files);
        let modules: BTreeSet<String> = files.iter().filter_map(|f| top_module(&src, f)).collect();
        let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for f in &files {
            let Some(module) = top_module(&src, f) else { continue };
            let top_level_file = f.parent() == Some(src.as_path());
            let refs = references(&production_source(f), top_level_file, &modules);
            graph.entry(module.clone()).or_default().extend(refs.into_iter().filter(|r| *r != module));
        }
        if let Some(c) = cycle(&graph) {
            found.push(format!("{name}: {}", c.join(" -> ")));
        }
    }
    assert!(found.is_empty(), "module cycles:\n{}", found.join("\n"));
}

#[test]
fn the_cycle_check_sees_cycles() {
    let modules: BTreeSet<String> = ["a", "b", "c"].iter().map(|s| s.to_string()).collect();
    assert_eq!(references("use crate::{a::X, b};\nuse super::c;", true, &modules).len(), 3);
    assert!(references("use super::c;", false, &modules).is_empty());
    assert!(references("foo_crate::a", true, &modules).is_empty());
    let graph: BTreeMap<String, BTreeSet<String>> = [
        ("a".to_string(), ["b".to_string()].into()),
        ("b".to_string(), ["c".to_string()].into()),
        ("c".to_string(), ["a".to_string()].into()),
    ]
    .into();
    assert_eq!(cycle(&graph).unwrap(), ["a", "b", "c", "a"]);
    let dag: BTreeMap<String, BTreeSet<String>> =
        [("a".to_string(), ["b".to_string()].into()), ("b".to_string(), BTreeSet::new())].into();
    assert!(cycle(&dag).is_none());
}
