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
//! - `storage` (the key-value contract and backends) on no workspace crate and no Kubernetes
//!   crate: it knows bytes, keys and revisions; `storage-codec` (objects as stored bytes,
//!   storage errors as Status) on `storage`, `apimachinery` and `protobuf` (kube's stored
//!   format); `cluster-ips` (the Service kind's address allocator) on `storage`,
//!   `apimachinery` and `storage-codec`;
//! - the stage crates only on `actors`, the core, the kinds, `webhook-client` (admission and
//!   the auth stages) and, for `registry` and `cacher`, `storage` and `storage-codec`: never
//!   on each other;
//!   `registry`, `cacher` and `storage` name no kind, so they do not depend on `kinds`;
//! - dev-dependencies may add `kinds`, `validation` and `cluster-ips` (tests drive real kinds);
//! - `stage-handles` (how code above the stages reaches them) only on `actors`, the core,
//!   `cacher` and `storage`; `controllers` only on the stage handles, the core, the kinds and
//!   the stages whose libraries they use (`admission`, `apiextensions`, `auth`), and only
//!   `gateway` depends on it;
//! - `diagnosis` (the server's own diagnosis) only on the crates whose metrics it reads
//!   (`apimachinery`, `storage` and the stages but `registry`), for their metric names: a
//!   renamed metric is renamed for the diagnosis too;
//! - `gateway`, the composition root, depends on every stage crate, and nothing depends on it
//!   but the fuzz targets;
//! - inside every crate, at every level, the child modules of a module import each other
//!   without cycles (tests excluded);
//! - no crate is over 15,000 lines of Rust in its `src/` (test-only files excluded), and every
//!   crate root has a `# Layout` section;
//! - `storage`, `storage-codec`, `registry` and `cacher` name no built-in resource or kind in
//!   their production code: what is particular to a kind is its strategy's.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;
use support::{declares_module, production_source, sources, test_only};

#[path = "support/sources.rs"]
mod support;

/// Crates that know Kubernetes: the runtime and the storage contract depend on none of them.
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
        "storage" => &[],
        "storage-codec" => &["apimachinery", "protobuf", "storage"],
        "cluster-ips" => &["apimachinery", "storage", "storage-codec"],
        "registry" | "cacher" => &["actors", "apimachinery", "storage", "storage-codec"],
        "admission" => &["actors", "apimachinery", "kube-cel", "kinds", "validation", "webhook-client"],
        "flowcontrol" | "auth" => &["actors", "apimachinery", "webhook-client"],
        "stage-handles" => &["actors", "apimachinery", "cacher", "storage"],
        // The storage contract and codec for the one key written below the API: the
        // apiservers' endpoint leases, as kube's reconciler writes them.
        "controllers" => &[
            "actors",
            "admission",
            "apiextensions",
            "apimachinery",
            "auth",
            "kinds",
            "stage-handles",
            "storage",
            "storage-codec",
        ],
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
        // A crate's own tests may depend on it with its `test-util` feature.
        let internal: BTreeSet<&String> = deps.iter().filter(|d| members.contains(d) && *d != name).collect();
        if let Some(allowed) = allowed(name) {
            for d in &internal {
                let test_only = !normal.contains(*d) && ["kinds", "validation", "cluster-ips"].contains(&d.as_str());
                if !allowed.contains(&d.as_str()) && !test_only {
                    broken.push(format!("{name} depends on {d}"));
                }
            }
        }
        if !["gateway", "controllers", "tests"].contains(&name.as_str()) && deps.contains("controllers") {
            broken.push(format!("{name} depends on controllers, which only the composition root starts"));
        }
        // The fuzz targets drive the gateway's request decoding from outside, as a client would.
        if name != "gateway" && name != "apiserver-fuzz" && deps.contains("gateway") {
            broken.push(format!("{name} depends on gateway, the composition root"));
        }
    }
    for model_free in ["actors", "storage"] {
        for d in &ws.crates[model_free].1 {
            if KUBERNETES.contains(&d.as_str()) {
                broken.push(format!("{model_free} depends on the Kubernetes crate {d}"));
            }
        }
    }
    for stage in STAGES {
        if !ws.crates["gateway"].1.contains(*stage) {
            broken.push(format!("gateway, the composition root, does not wire {stage}"));
        }
    }
    for expected in [
        "actors",
        "protobuf",
        "kube-cel",
        "apimachinery",
        "validation",
        "kinds",
        "storage",
        "storage-codec",
        "cluster-ips",
        "stage-handles",
        "controllers",
        "gateway",
        "tests",
    ]
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

/// The module path of a source file below `src` (`[]` for the crate root and binaries'
/// roots; `foo/mod.rs` and `foo.rs` are both `[foo]`).
fn module_path(src: &Path, file: &Path) -> Option<Vec<String>> {
    let rel = file.strip_prefix(src).ok()?;
    let mut parts: Vec<String> = rel.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect();
    if parts.first().is_some_and(|p| p == "bin") {
        return None;
    }
    let last = parts.pop()?;
    let stem = last.trim_end_matches(".rs");
    let root = parts.is_empty() && matches!(stem, "lib" | "main");
    if stem != "mod" && !root {
        parts.push(stem.to_string());
    }
    Some(parts)
}

/// The module paths `code` names, absolute from the crate root: `crate::a::b` and, relative to
/// the file's module `here`, `super::` and `self::` paths, with `{...}` groups expanded.
fn references(code: &str, here: &[String]) -> Vec<Vec<String>> {
    fn ident(s: &str) -> (&str, &str) {
        let end = s.find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(s.len());
        (&s[..end], &s[end..])
    }
    /// Expands the path continuing at `rest` after `base`, pushing every path it names.
    fn expand(base: Vec<String>, rest: &str, out: &mut Vec<Vec<String>>) {
        let rest = rest.trim_start();
        if let Some(group) = rest.strip_prefix('{') {
            let mut depth = 0;
            let mut start = 0;
            for (i, ch) in group.char_indices() {
                match ch {
                    '{' => depth += 1,
                    '}' if depth == 0 => {
                        expand(base.clone(), &group[start..i], out);
                        return;
                    }
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        expand(base.clone(), &group[start..i], out);
                        start = i + 1;
                    }
                    _ => {}
                }
            }
            return;
        }
        let (name, after) = ident(rest);
        if name.is_empty() || name == "self" {
            out.push(base);
            return;
        }
        let mut path = base;
        path.push(name.to_string());
        match after.strip_prefix("::") {
            Some(more) => expand(path, more, out),
            None => out.push(path),
        }
    }
    let mut out = Vec::new();
    for prefix in ["crate::", "super::", "self::"] {
        for (i, _) in code.match_indices(prefix) {
            let before = code[..i].chars().last();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$' || c == ':') {
                continue;
            }
            let mut rest = &code[i + prefix.len()..];
            let base: Vec<String> = match prefix {
                "crate::" => Vec::new(),
                "self::" => here.to_vec(),
                _ => {
                    let mut up = 1;
                    while let Some(r) = rest.strip_prefix("super::") {
                        up += 1;
                        rest = r;
                    }
                    if up > here.len() {
                        continue;
                    }
                    here[..here.len() - up].to_vec()
                }
            };
            expand(base, rest, &mut out);
        }
    }
    out
}

/// Every module cycle of a crate whose sources are `files`, at every level: within each
/// module, its child modules (with everything below them) must import each other without a
/// cycle. Each cycle is given as `parent: a -> b -> a`.
fn module_cycles(src: &Path, files: &[PathBuf]) -> Vec<String> {
    let modules: BTreeSet<Vec<String>> = files.iter().filter_map(|f| module_path(src, f)).collect();
    // Parent module to its children's import graph.
    let mut graphs: BTreeMap<Vec<String>, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    for f in files {
        let Some(here) = module_path(src, f) else { continue };
        for target in references(&production_source(f), &here) {
            let common = here.iter().zip(&target).take_while(|(a, b)| a == b).count();
            if common >= here.len() || common >= target.len() {
                continue; // a module naming its own descendants or ancestors
            }
            let parent = here[..common].to_vec();
            let mut child = parent.clone();
            child.push(target[common].clone());
            if !modules.contains(&child) {
                continue; // an item of the parent, not a child module
            }
            graphs.entry(parent).or_default().entry(here[common].clone()).or_default().insert(target[common].clone());
        }
    }
    graphs
        .iter()
        .filter_map(|(parent, graph)| {
            cycle(graph).map(|c| {
                format!("{}: {}", if parent.is_empty() { "crate".into() } else { parent.join("::") }, c.join(" -> "))
            })
        })
        .collect()
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
fn no_crate_has_a_module_cycle_at_any_level() {
    let ws = workspace();
    let mut found = Vec::new();
    for (name, (dir, _)) in &ws.crates {
        let src = dir.join("src");
        let mut files = Vec::new();
        sources(&src, &mut files);
        found.extend(module_cycles(&src, &files).into_iter().map(|c| format!("{name}: {c}")));
    }
    assert!(found.is_empty(), "module cycles:\n{}", found.join("\n"));
}

/// The most lines of Rust a crate's `src/` may hold, test-only files left out: a bigger room
/// hides its own walls.
const MOST_LINES: usize = 15_000;

#[test]
fn no_crate_is_over_fifteen_thousand_lines() {
    let ws = workspace();
    let mut over = Vec::new();
    for (name, (dir, _)) in &ws.crates {
        let mut files = Vec::new();
        sources(&dir.join("src"), &mut files);
        let lines: usize = files.iter().map(|f| std::fs::read_to_string(f).unwrap().lines().count()).sum();
        assert!(lines > 0 || name == "apiserver-fuzz", "{name} has no sources under src/");
        if lines > MOST_LINES {
            over.push(format!("{name}: {lines} lines"));
        }
    }
    assert!(over.is_empty(), "crates over {MOST_LINES} lines:\n{}", over.join("\n"));
}

/// Every crate root says what its modules hold, in a `# Layout` section of its doc.
#[test]
fn every_crate_root_has_a_layout_section() {
    let ws = workspace();
    let mut missing = Vec::new();
    for (name, (dir, _)) in &ws.crates {
        let root = ["lib.rs", "main.rs"].iter().map(|f| dir.join("src").join(f)).find(|p| p.exists());
        let Some(root) = root else { continue };
        let text = std::fs::read_to_string(&root).unwrap();
        if !text.lines().any(|l| l.trim() == "//! # Layout") {
            missing.push(format!("{name} ({})", root.strip_prefix(&ws.root).unwrap().display()));
        }
    }
    assert!(missing.is_empty(), "crate roots without a `//! # Layout` section:\n{}", missing.join("\n"));
}

/// The crates below the kinds that must stay generic.
const GENERIC: &[&str] = &["storage", "storage-codec", "registry", "cacher"];

#[test]
fn generic_crates_name_no_kind() {
    let ws = workspace();
    let catalogue = kinds::catalogue();
    let mut names: BTreeSet<String> = ["evictions", "Eviction"].iter().map(|s| s.to_string()).collect();
    for def in catalogue.resources() {
        names.insert(def.resource.clone());
        names.insert(def.kind.clone());
    }
    let mut named = Vec::new();
    for krate in GENERIC {
        let mut files = Vec::new();
        sources(&ws.crates[*krate].0.join("src"), &mut files);
        for f in files {
            let code = production_source(&f);
            for name in &names {
                if code.contains(&format!("\"{name}\"")) {
                    named.push(format!("{} names \"{name}\"", f.strip_prefix(&ws.root).unwrap().display()));
                }
            }
        }
    }
    assert!(named.is_empty(), "kinds named in generic code:\n{}", named.join("\n"));
}

/// Test suites and harnesses that ship in a crate's `src/` are compiled only for tests: each
/// test-only file is declared under `#[cfg(test)]` or `#[cfg(any(test, feature = "test-util"))]`.
#[test]
fn test_code_is_kept_out_of_production_builds() {
    let ws = workspace();
    let mut shipped = Vec::new();
    for (dir, _) in ws.crates.values() {
        let mut stack = vec![dir.join("src")];
        while let Some(d) = stack.pop() {
            for entry in std::fs::read_dir(&d).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    stack.push(path);
                    continue;
                }
                if !test_only(&path) || path.components().any(|c| c.as_os_str() == "bin") {
                    continue;
                }
                let stem = path.file_stem().unwrap().to_str().unwrap();
                let folder = path.parent().unwrap();
                let parent = ["mod.rs", "lib.rs", "main.rs"]
                    .iter()
                    .map(|f| folder.join(f))
                    .chain([folder.with_extension("rs")])
                    .find(|p| {
                        p.exists()
                            && std::fs::read_to_string(p)
                                .unwrap()
                                .lines()
                                .any(|l| declares_module(l) && l.contains(&format!("mod {stem}")))
                    })
                    .unwrap_or_else(|| panic!("no module declares {}", path.display()));
                let text = std::fs::read_to_string(&parent).unwrap();
                let lines: Vec<&str> = text.lines().collect();
                let at = lines.iter().position(|l| declares_module(l) && l.contains(&format!("mod {stem}"))).unwrap();
                let gate = at.checked_sub(1).map(|i| lines[i].trim()).unwrap_or("");
                if gate != "#[cfg(test)]" && gate != r#"#[cfg(any(test, feature = "test-util"))]"# {
                    shipped.push(format!(
                        "{} (declared in {})",
                        path.strip_prefix(&ws.root).unwrap().display(),
                        parent.strip_prefix(&ws.root).unwrap().display()
                    ));
                }
            }
        }
    }
    assert!(shipped.is_empty(), "test code in production builds:\n{}", shipped.join("\n"));
}

#[test]
fn the_cycle_check_sees_cycles() {
    let here = |p: &str| p.split("::").filter(|s| !s.is_empty()).map(String::from).collect::<Vec<_>>();
    let named =
        |code: &str, at: &str| -> Vec<String> { references(code, &here(at)).iter().map(|p| p.join("::")).collect() };
    assert_eq!(named("use crate::{a::X, b::{c, d::E}};", ""), ["a::X", "b::c", "b::d::E"]);
    assert_eq!(named("use super::c;", "a::b"), ["a::c"]);
    assert_eq!(named("super::super::x::Y", "a::b"), ["x::Y"]);
    assert!(named("foo_crate::a", "").is_empty());
    assert!(named("$crate::a", "").is_empty());
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
    // A nested cycle, as files on disk: `m::x` and `m::y` import each other.
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path();
    std::fs::create_dir(src.join("m")).unwrap();
    std::fs::write(src.join("lib.rs"), "mod m;").unwrap();
    std::fs::write(src.join("m/mod.rs"), "mod x; mod y;").unwrap();
    std::fs::write(src.join("m/x.rs"), "use super::y::Y;").unwrap();
    std::fs::write(src.join("m/y.rs"), "use crate::m::x::X;").unwrap();
    let mut files = Vec::new();
    sources(src, &mut files);
    assert_eq!(module_cycles(src, &files), ["m: x -> y -> x"]);
    std::fs::write(src.join("m/y.rs"), "use crate::other::X;").unwrap();
    assert!(module_cycles(src, &files).is_empty());
}
