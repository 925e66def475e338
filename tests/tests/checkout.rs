//! What a newcomer's checkout promises, checked: the declared minimum Rust version is the one
//! `Cargo.lock` needs, and the install scripts leave the machine's own files as they found them.

use std::os::unix::fs::PermissionsExt;
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

/// Runs `script` in bash with `deploy/<file>` sourced (which defines its functions and does
/// nothing else) and `SUDO` empty, with `env` set: whether it succeeded, and its stdout.
fn sourced(file: &str, env: &[(&str, &Path)], script: &str) -> (bool, String) {
    let path = workspace_root().join("deploy").join(file);
    let out = Command::new("bash")
        .arg("-c")
        .arg(format!("source {}; SUDO=''; {script}", path.display()))
        .envs(env.iter().copied())
        .output()
        .expect("bash runs");
    (out.status.success(), String::from_utf8_lossy(&out.stdout).into_owned())
}

/// [`sourced`] install-tools.sh with `POLICY_RC_D` at `policy`.
fn with_install_tools(policy: &Path, script: &str) -> (bool, String) {
    sourced("install-tools.sh", &[("POLICY_RC_D", policy)], script)
}

/// The names in `dir`, sorted.
fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> =
        std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    names
}

const OURS: &str = "#!/bin/sh\nexit 101\n";

#[test]
fn install_tools_puts_back_a_policy_rc_d_it_did_not_write_and_removes_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("policy-rc.d");

    // None before: ours while the command runs, none after.
    let (ok, seen) = with_install_tools(&policy, "with_services_held_off cat \"$POLICY_RC_D\"");
    assert!(ok);
    assert_eq!(seen, OURS, "services are held off during the install");
    assert!(listing(dir.path()).is_empty(), "nothing left behind: {:?}", listing(dir.path()));

    // The machine's own: the same bytes and mode after, whether the command succeeds or fails.
    let theirs = "#!/bin/sh\n# the administrator's\nexit 0\n";
    std::fs::write(&policy, theirs).unwrap();
    std::fs::set_permissions(&policy, std::fs::Permissions::from_mode(0o750)).unwrap();
    for (command, succeeds) in [("cat \"$POLICY_RC_D\"", true), ("false", false)] {
        let (ok, seen) = with_install_tools(&policy, &format!("with_services_held_off {command}"));
        assert_eq!(ok, succeeds, "{command}");
        if succeeds {
            assert_eq!(seen, OURS);
        }
        assert_eq!(std::fs::read_to_string(&policy).unwrap(), theirs, "after {command}");
        assert_eq!(std::fs::metadata(&policy).unwrap().permissions().mode() & 0o777, 0o750, "after {command}");
        assert_eq!(listing(dir.path()), ["policy-rc.d"], "after {command}");
    }

    // A link stays a link to the same file, which is not written through.
    let target = dir.path().join("shared-policy");
    std::fs::rename(&policy, &target).unwrap();
    std::os::unix::fs::symlink(&target, &policy).unwrap();
    let (ok, _) = with_install_tools(&policy, "with_services_held_off true");
    assert!(ok);
    assert_eq!(std::fs::read_link(&policy).unwrap(), target);
    assert_eq!(std::fs::read_to_string(&target).unwrap(), theirs);
}

#[test]
fn build_deps_replaces_only_a_proto_directory_it_made() {
    let dir = tempfile::tempdir().unwrap();
    let dest = dir.path().join("k8s-protos");
    let fetch = |content: &str| {
        let fetched = tempfile::Builder::new().prefix("fetched").tempdir_in(dir.path()).unwrap().keep();
        std::fs::write(fetched.join("generated.proto"), content).unwrap();
        fetched
    };
    let install = |fetched: &Path| {
        let script = format!("install_protos {} \"$DEST\"", fetched.display());
        sourced("build-deps.sh", &[("DEST", &dest)], &script).0
    };

    // Nothing there: the fetched files arrive, marked as the script's.
    assert!(install(&fetch("first")));
    assert_eq!(std::fs::read_to_string(dest.join("generated.proto")).unwrap(), "first");
    // Its own: replaced.
    assert!(install(&fetch("second")));
    assert_eq!(std::fs::read_to_string(dest.join("generated.proto")).unwrap(), "second");
    assert_eq!(listing(dir.path()), ["k8s-protos"]);

    // Someone else's directory: left as it is, and the run fails saying so.
    std::fs::remove_dir_all(&dest).unwrap();
    std::fs::create_dir(&dest).unwrap();
    std::fs::write(dest.join("notes.txt"), "mine").unwrap();
    let fetched = fetch("third");
    assert!(!install(&fetched));
    assert_eq!(listing(&dest), ["notes.txt"]);
    assert_eq!(std::fs::read_to_string(dest.join("notes.txt")).unwrap(), "mine");
}

/// Only install-tools.sh writes a policy-rc.d (and puts back the machine's own): other scripts
/// that install services hold them off through its `with_services_held_off`.
#[test]
fn no_other_script_writes_or_removes_policy_rc_d() {
    let deploy = workspace_root().join("deploy");
    let mut offenders = Vec::new();
    for entry in std::fs::read_dir(&deploy).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "sh") || path.ends_with("install-tools.sh") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        for (n, line) in text.lines().enumerate() {
            let code = line.split('#').next().unwrap_or_default();
            if code.contains("policy-rc.d") {
                offenders.push(format!("{}:{}: {line}", path.display(), n + 1));
            }
        }
    }
    assert!(offenders.is_empty(), "policy-rc.d handled outside install-tools.sh:\n{}", offenders.join("\n"));
}
