//! Metric names are written once, in each crate's `metrics` module (`src/metrics.rs`), and
//! everything else, the emitters, `/metrics`' help texts and the diagnosis, uses those
//! constants: a metric renamed there is renamed everywhere, and none can drift apart.
//!
//! This test scans the production sources of every workspace crate (test files and the
//! `#[cfg(test)] mod tests` at the end of a file excluded, as the architecture check reads
//! them) and fails on a string literal that looks like a metric name outside a `metrics.rs`.

use std::path::{Path, PathBuf};

use support::{production_source, sources};

#[path = "support/sources.rs"]
mod support;

/// The prefixes of the metric names kube-apiserver and this server record: a literal made of
/// one of them, `_` and more lowercase letters, digits and `_` is a metric name.
const PREFIXES: &[&str] = &[
    "aggregator",
    "apiserver",
    "authentication",
    "authorization",
    "etcd",
    "go",
    "kubernetes",
    "leader_election",
    "process",
    "rest_client",
    "serviceaccount",
    "storage",
    "watch_cache",
    "workqueue",
];

/// Whether `token` (a string literal's text) looks like a metric name.
fn is_metric_name(token: &str) -> bool {
    PREFIXES.iter().any(|prefix| {
        token.strip_prefix(prefix).and_then(|rest| rest.strip_prefix('_')).is_some_and(|rest| {
            !rest.is_empty() && rest.bytes().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'_')
        })
    })
}

/// The string literals of `code` that look like metric names. Every `"` is tried as an opening
/// quote (a closing one is followed by code, which is never a whole metric name and a `"`), so
/// char literals such as `'"'` do not throw the scan off.
fn metric_literals(code: &str) -> Vec<&str> {
    let mut out = Vec::new();
    for (at, _) in code.match_indices('"') {
        let rest = &code[at + 1..];
        let end = rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(rest.len());
        if rest[end..].starts_with('"') && is_metric_name(&rest[..end]) {
            out.push(&rest[..end]);
        }
    }
    out
}

/// Whether `file` holds only tests: `tests.rs`, `*_tests.rs` (a `tests/` directory is skipped
/// by [`sources`]).
fn test_file(file: &Path) -> bool {
    file.file_stem().and_then(|s| s.to_str()).is_some_and(|s| s == "tests" || s.ends_with("_tests"))
}

/// The `src/` directory of every crate of the workspace.
fn crate_sources() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|d| d.join("Cargo.toml").is_file() && d.join("src").is_dir())
        .map(|d| d.join("src"))
        .collect();
    dirs.sort();
    dirs
}

#[test]
fn metric_names_are_written_only_in_metrics_modules() {
    let dirs = crate_sources();
    assert!(dirs.len() >= 15, "the scan finds the workspace's crates: {dirs:?}");
    let mut modules = 0;
    let mut stray = Vec::new();
    for dir in dirs {
        let mut files = Vec::new();
        sources(&dir, &mut files);
        for file in files.iter().filter(|f| !test_file(f)) {
            if file.file_name().is_some_and(|n| n == "metrics.rs") {
                modules += 1;
                continue;
            }
            for name in metric_literals(&production_source(file)) {
                stray.push(format!("{}: \"{name}\"", file.display()));
            }
        }
    }
    assert!(modules >= 8, "the scan finds the metrics modules ({modules})");
    assert!(
        stray.is_empty(),
        "metric names written outside a crate's metrics module (name them there, as a `pub const`, and use \
         the constant):\n{}",
        stray.join("\n")
    );
}

#[test]
fn the_scan_flags_metric_names_and_nothing_else() {
    let line = r#"metrics::counter!("apiserver_request_total", "code" => code).increment(1);"#;
    assert_eq!(metric_literals(line), ["apiserver_request_total"]);
    let line = r#"let (a, b) = (split_once('"'), "etcd_requests_total"); gauge!("process_open_fds")"#;
    assert_eq!(metric_literals(line), ["etcd_requests_total", "process_open_fds"]);
    // Labels, label values, text around a name and bare prefixes are not metric names.
    let line = r#"counter!(REQUEST_TOTAL, "verb" => "apiserver", "priority_level" => l, "etcd_x{a=\"b\"} 1", "go_")"#;
    assert_eq!(metric_literals(line), Vec::<&str>::new());
    assert!(test_file(Path::new("gateway/src/chain_tests.rs")) && test_file(Path::new("x/src/tests.rs")));
    assert!(!test_file(Path::new("gateway/src/chain.rs")));
}
