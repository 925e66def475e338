//! Compiles Kubernetes' .proto files into a descriptor set, and reads the Go types beside them
//! for what the .proto files do not say about JSON and about Go's marshallers: which embedded
//! structs are inlined, which fields are omitted when empty, which are written even when zero,
//! and JSON names that differ from the proto names.
//!
//! The files come from `deploy/build-deps.sh` (Debian's golang-k8s-api-dev and
//! golang-k8s-apimachinery-dev), in `$K8S_PROTO_DIR` or `target/k8s-protos`. Groups Debian does
//! not package (apiextensions.k8s.io, apiregistration.k8s.io) have .proto files of our own in
//! `proto/`, each with a `.fields` table saying what the Go types would (see [`own_fields`]).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::{env, fs};

mod prepare;

fn main() {
    let manifest_dir = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());
    let from_env = env::var_os("K8S_PROTO_DIR").map(PathBuf::from);
    let dir =
        from_env.clone().unwrap_or_else(|| manifest_dir.parent().unwrap_or(&manifest_dir).join("target/k8s-protos"));
    println!("cargo:rerun-if-env-changed=K8S_PROTO_DIR");
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut protos = Vec::new();
    let mut go_types = Vec::new();
    walk(&dir, &mut |p| {
        let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if name == "generated.proto" {
            protos.push(p.to_path_buf());
        } else if name.starts_with("types") && name.ends_with(".go") && !name.ends_with("_test.go") {
            go_types.push(p.to_path_buf());
        }
    });
    if protos.is_empty() {
        stop(&prepare::missing_protos(&manifest_dir, &dir, from_env.as_deref()));
    }
    protos.sort();
    go_types.sort();
    let own = Path::new(&env::var("CARGO_MANIFEST_DIR").unwrap()).join("proto");
    println!("cargo:rerun-if-changed={}", own.display());
    let mut own_protos: Vec<PathBuf> = fs::read_dir(&own)
        .expect("the crate's proto/ directory")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "proto"))
        .collect();
    own_protos.sort();
    let out = PathBuf::from(env::var("OUT_DIR").unwrap());
    let protoc = env::var_os("PROTOC").unwrap_or_else(|| "protoc".into());
    let status = Command::new(&protoc)
        .arg("-I")
        .arg(&dir)
        .arg("-I")
        .arg(&own)
        .arg("--include_imports")
        .arg(format!("--descriptor_set_out={}", out.join("k8s.fds").display()))
        .args(protos.iter().map(|p| p.strip_prefix(&dir).unwrap()))
        .args(own_protos.iter().map(|p| p.strip_prefix(&own).unwrap()))
        .current_dir(&dir)
        .output()
        .unwrap_or_else(|e| {
            stop(&prepare::missing_protoc(&manifest_dir, &protoc.to_string_lossy(), &e, from_env.as_deref()))
        });
    if !status.status.success() {
        panic!("protoc failed: {}", String::from_utf8_lossy(&status.stderr));
    }
    let mut table = String::new();
    for file in &go_types {
        let package = file.parent().unwrap().strip_prefix(&dir).unwrap().to_string_lossy().replace('/', ".");
        go_fields(&package, &fs::read_to_string(file).unwrap(), &mut table);
    }
    for proto in &own_protos {
        own_fields(&proto.with_extension("fields"), &mut table);
    }
    fs::write(out.join("go_fields.txt"), table).unwrap();
}

/// Ends the build with `message`, which cargo shows under the build script's stderr.
fn stop(message: &str) -> ! {
    eprintln!("\n{message}\n");
    std::process::exit(1)
}

fn walk(dir: &Path, f: &mut dyn FnMut(&Path)) {
    let Ok(entries) = fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() { walk(&p, f) } else { f(&p) }
    }
}

/// One line per protobuf-tagged field of a Go struct: `<message> <number> <flags> <json name>`.
/// Flags are letters, `-` for none: `i` (inlined), `z` (omitted from JSON when zero:
/// `omitempty` on a non-pointer), `w` (written by Go's marshaller even when zero: a value, not
/// a pointer, slice or map), `n` (written as `null` to JSON when nil: a pointer, slice or map
/// without `omitempty`).
fn go_fields(package: &str, source: &str, out: &mut String) {
    let mut current: Option<&str> = None;
    for line in source.lines() {
        if let Some(rest) = line.strip_prefix("type ") {
            current = rest.strip_suffix(" struct {").map(str::trim);
            continue;
        }
        if line.starts_with('}') {
            current = None;
            continue;
        }
        let Some(message) = current else { continue };
        let Some(tick) = line.find('`') else { continue };
        let (decl, tags) = (line[..tick].trim(), &line[tick..]);
        let (Some(json), Some(proto)) = (tag(tags, "json"), tag(tags, "protobuf")) else { continue };
        let Some(number) = proto.split(',').nth(1) else { continue };
        let mut words = decl.split_whitespace();
        let (first, second) = (words.next().unwrap_or(""), words.next());
        let go_type = second.unwrap_or(first);
        let mut json_parts = json.split(',');
        let json_name = json_parts.next().unwrap_or("");
        let options: Vec<&str> = json_parts.collect();
        let inline = options.contains(&"inline");
        let omit_zero = options.contains(&"omitempty") && !go_type.starts_with('*');
        let value = !(go_type.starts_with('*') || go_type.starts_with("[]") || go_type.starts_with("map["));
        let nil_written = !value && !options.contains(&"omitempty");
        let mut flags = String::new();
        for (set, letter) in [(inline, 'i'), (omit_zero, 'z'), (value, 'w'), (nil_written, 'n')] {
            if set {
                flags.push(letter);
            }
        }
        if flags.is_empty() {
            flags.push('-');
        }
        let name = if json_name.is_empty() { "-" } else { json_name };
        out.push_str(&format!("{package}.{message} {number} {flags} {name}\n"));
    }
}

/// The table of one of our own .proto files, in [`go_fields`]' format but for the message's
/// short name, after a `package <name>` line; `#` starts a comment.
fn own_fields(path: &Path, out: &mut String) {
    println!("cargo:rerun-if-changed={}", path.display());
    let text = fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut package = None;
    for line in text.lines().map(|l| l.split('#').next().unwrap_or("").trim()).filter(|l| !l.is_empty()) {
        if let Some(p) = line.strip_prefix("package ") {
            package = Some(p.trim().to_string());
            continue;
        }
        let package = package.as_deref().unwrap_or_else(|| panic!("{}: no package line first", path.display()));
        let words: Vec<&str> = line.split_whitespace().collect();
        let [message, number, flags, json] = words[..] else { panic!("{}: bad line {line:?}", path.display()) };
        out.push_str(&format!("{package}.{message} {number} {flags} {json}\n"));
    }
}

fn tag<'a>(tags: &'a str, key: &str) -> Option<&'a str> {
    let start = tags.find(&format!("{key}:\""))? + key.len() + 2;
    let end = tags[start..].find('"')?;
    Some(&tags[start..start + end])
}
