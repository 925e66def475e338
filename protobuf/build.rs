//! Compiles Kubernetes' .proto files into a descriptor set, and reads the Go types beside them
//! for what the .proto files do not say about JSON: which embedded structs are inlined, which
//! fields are omitted when empty, and JSON names that differ from the proto names.
//!
//! The files come from `deploy/build-deps.sh` (Debian's golang-k8s-api-dev and
//! golang-k8s-apimachinery-dev), in `$K8S_PROTO_DIR` or `target/k8s-protos`.

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
    let out = PathBuf::from(env::var("OUT_DIR").unwrap());
    let protoc = env::var_os("PROTOC").unwrap_or_else(|| "protoc".into());
    let status = Command::new(&protoc)
        .arg("-I")
        .arg(&dir)
        .arg("--include_imports")
        .arg(format!("--descriptor_set_out={}", out.join("k8s.fds").display()))
        .args(protos.iter().map(|p| p.strip_prefix(&dir).unwrap()))
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

/// One line per protobuf-tagged field of a Go struct: `<message> <number> <flags> <json name>`,
/// flags `i` (inlined), `z` (omitted when zero: `omitempty` on a non-pointer), `-` (neither).
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
        let flags = match (inline, omit_zero) {
            (true, _) => "i",
            (false, true) => "z",
            (false, false) => "-",
        };
        let name = if json_name.is_empty() { "-" } else { json_name };
        out.push_str(&format!("{package}.{message} {number} {flags} {name}\n"));
    }
}

fn tag<'a>(tags: &'a str, key: &str) -> Option<&'a str> {
    let start = tags.find(&format!("{key}:\""))? + key.len() + 2;
    let end = tags[start..].find('"')?;
    Some(&tags[start..start + end])
}
