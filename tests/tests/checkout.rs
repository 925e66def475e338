//! What a newcomer's checkout promises, checked: the declared minimum Rust version is the one
//! `Cargo.lock` needs.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// `1.89` as `(1, 89)`; a patch number does not change what a version needs.
fn major_minor(version: &str) -> (u32, u32) {
    let mut parts = version.split('.').map(|p| p.parse::<u32>().unwrap());
    (parts.next().unwrap(), parts.next().unwrap_or(0))
}

/// The host's target triple, which decides which platform-specific dependencies a build uses.
fn host() -> String {
    let out = Command::new("rustc").arg("-vV").output().expect("rustc runs");
    let text = String::from_utf8(out.stdout).unwrap();
    text.lines().find_map(|l| l.strip_prefix("host: ")).expect("rustc -vV names the host").to_string()
}

#[test]
fn the_declared_rust_version_is_the_one_the_locked_dependencies_need() {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    // A build compiles only what its platform's configuration selects: loom (and the windows
    // crates behind it) comes in under `cfg(loom)` only.
    let out = Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--locked", "--offline", "--filter-platform", &host()])
        .current_dir(workspace_root())
        .output()
        .expect("cargo metadata runs");
    assert!(out.status.success(), "cargo metadata: {}", String::from_utf8_lossy(&out.stderr));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let members: Vec<&str> = doc["workspace_members"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    let built: Vec<&str> =
        doc["resolve"]["nodes"].as_array().unwrap().iter().filter_map(|n| n["id"].as_str()).collect();
    let packages = doc["packages"].as_array().unwrap();
    let id = |p: &Value| p["id"].as_str().unwrap().to_string();

    let declared: Vec<&str> = packages
        .iter()
        .filter(|p| members.contains(&id(p).as_str()))
        .map(|p| p["rust_version"].as_str().expect("every member declares rust-version"))
        .collect();
    let declared = major_minor(declared[0]);
    // Edition 2024, which the workspace is written in, came with Rust 1.85.
    let mut needed = ((1, 85), "edition 2024".to_string());
    for p in packages.iter().filter(|p| built.contains(&id(p).as_str()) && !members.contains(&id(p).as_str())) {
        if let Some(v) = p["rust_version"].as_str().map(major_minor).filter(|v| *v > needed.0) {
            needed = (v, format!("{} {}", p["name"].as_str().unwrap(), p["version"].as_str().unwrap()));
        }
    }
    let ((major, minor), by) = needed;
    assert_eq!(
        declared,
        (major, minor),
        "Cargo.toml's rust-version should be \"{major}.{minor}\": {by} needs it (and nothing locked needs more)"
    );
}
