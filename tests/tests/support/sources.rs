//! Reading the workspace's production sources, for the tests that check rules over them
//! (`architecture`, `metric_names`).

use std::path::{Path, PathBuf};

/// The source of a file without comments and without its `#[cfg(test)] mod tests` tail.
pub fn production_source(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    let mut out = String::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        let trimmed = line.trim_start();
        if trimmed == "#[cfg(test)]" && lines.peek().is_some_and(|next| next.trim_start().starts_with("mod ")) {
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

/// Every `.rs` file of `dir`, recursively, but test files.
pub fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            if path.file_name().is_some_and(|n| n != "tests") {
                sources(&path, out);
            }
        } else if path.extension().is_some_and(|e| e == "rs") && path.file_stem().is_some_and(|s| s != "tests") {
            out.push(path);
        }
    }
}
