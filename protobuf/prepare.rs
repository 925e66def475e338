//! What the build script tells someone whose checkout is not prepared yet: the one command
//! that prepares it, with the paths of this checkout. Shared with the crate's tests, which
//! check that the script it names is there.

use std::path::Path;

/// The command preparing the checkout, runnable from anywhere: `./deploy/build-deps.sh` in the
/// checkout's root, with `K8S_PROTO_DIR` when it was set (the script fetches into it then).
pub fn command(manifest_dir: &Path, proto_dir_from_env: Option<&Path>) -> String {
    let root = manifest_dir.parent().unwrap_or(manifest_dir);
    let env = proto_dir_from_env.map(|d| format!("K8S_PROTO_DIR={} ", d.display())).unwrap_or_default();
    format!("cd {} && {env}./deploy/build-deps.sh", root.display())
}

/// Why the build stops when `dir` holds no `.proto` files, and how to go on.
pub fn missing_protos(manifest_dir: &Path, dir: &Path, proto_dir_from_env: Option<&Path>) -> String {
    format!(
        "Kubernetes' .proto files are missing: there is no generated.proto under {}.\n\
         This checkout is not prepared yet. Prepare it once (it installs protoc and fetches the files):\n\n    \
         {}\n\nthen build again.",
        dir.display(),
        command(manifest_dir, proto_dir_from_env)
    )
}

/// Why the build stops when protoc cannot be run, and how to go on.
pub fn missing_protoc(manifest_dir: &Path, protoc: &str, error: &std::io::Error, proto_dir: Option<&Path>) -> String {
    format!(
        "protoc could not be run ({protoc}: {error}). Install it (and the .proto files) with\n\n    {}\n\n\
         or set PROTOC to a protoc binary, then build again.",
        command(manifest_dir, proto_dir)
    )
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    #[test]
    fn an_unprepared_checkout_is_told_the_command_that_prepares_it() {
        let manifest_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
        let root = manifest_dir.parent().unwrap();
        let message = missing_protos(manifest_dir, &root.join("target/k8s-protos"), None);
        let command = format!("cd {} && ./deploy/build-deps.sh", root.display());
        assert!(message.contains(&format!("\n\n    {command}\n\n")), "on a line of its own: {message}");
        let script = root.join("deploy/build-deps.sh");
        let mode = std::fs::metadata(&script).unwrap_or_else(|e| panic!("{}: {e}", script.display())).permissions();
        assert!(mode.mode() & 0o111 != 0, "{} is executable", script.display());

        let elsewhere = Path::new("/srv/protos");
        let message = missing_protos(manifest_dir, elsewhere, Some(elsewhere));
        assert!(message.contains(" && K8S_PROTO_DIR=/srv/protos ./deploy/build-deps.sh"), "{message}");
        assert!(
            std::fs::read_to_string(&script).unwrap().contains("PROTO_DIR=\"${K8S_PROTO_DIR:-"),
            "the script fetches into $K8S_PROTO_DIR"
        );

        let not_found = std::io::Error::from(std::io::ErrorKind::NotFound);
        let message = missing_protoc(manifest_dir, "protoc", &not_found, None);
        assert!(message.starts_with("protoc could not be run (protoc: entity not found)"), "{message}");
        assert!(message.contains(&format!("\n\n    {command}\n\n")), "{message}");
    }
}
