//! Reading the workspace's production sources, for the tests that check rules over them
//! (`architecture`, `metric_names`).

#![allow(dead_code)] // each test binary uses its own part

use std::path::{Path, PathBuf};

/// The source of a file without comments and without its test modules: the `mod tests { ... }`
/// tail, and declarations of test-only files (`#[cfg(test)]` or the `test-util` feature).
pub fn production_source(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    let mut out = String::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("#[cfg(")
            && trimmed.contains("test")
            && lines.peek().is_some_and(|next| declares_module(next))
        {
            // `mod tests;` declares a file of tests; `mod tests {` opens them here, to the end.
            if lines.peek().is_some_and(|next| next.contains('{')) {
                break;
            }
            lines.next();
            continue;
        }
        if trimmed.starts_with("//") {
            continue;
        }
        out.push_str(line.split(" //").next().unwrap_or(line));
        out.push('\n');
    }
    out
}

/// Whether `line` declares a module (`mod x;`, `pub mod x {`, `pub(crate) mod x;`).
pub fn declares_module(line: &str) -> bool {
    let t = line.trim_start();
    let t = t.strip_prefix("pub(crate) ").or_else(|| t.strip_prefix("pub ")).unwrap_or(t);
    t.starts_with("mod ")
}

/// Whether a source file holds only tests or what tests share, by the names the house gives
/// them: `tests.rs`, `*_tests.rs`, `test_kinds.rs`, `testing.rs` (harnesses) and
/// `conformance.rs` (suites other crates' tests run).
pub fn test_only(path: &Path) -> bool {
    let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("");
    matches!(stem, "tests" | "testing" | "conformance" | "test_kinds") || stem.ends_with("_tests")
}

/// Every `.rs` file of `dir`, recursively, but test-only files and `tests/` folders.
pub fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            if path.file_name().is_some_and(|n| n != "tests") {
                sources(&path, out);
            }
        } else if path.extension().is_some_and(|e| e == "rs") && !test_only(&path) {
            out.push(path);
        }
    }
}
