//! What an operator meets first: duration flags in Go's syntax, as kube-apiserver's.

use tests::{TestServer, apiserver_bin};

#[test]
fn duration_flags_take_gos_syntax_and_a_bare_number_is_refused() {
    let s = TestServer::start_with(&[
        "--request-timeout=1m0s",
        "--shutdown-delay-duration=1m30s",
        "--etcd-compaction-interval=1h2m3.5s",
        "--slow-watcher-budget=1500ms",
        "--shutdown-watch-termination-grace-period=0",
    ]);
    assert!(s.kubectl_ok(&["get", "namespaces", "-o", "name"]).contains("namespace/default"));

    let dir = tempfile::tempdir().unwrap();
    let refused = std::process::Command::new(apiserver_bin())
        .args(["serve", "--data-dir"])
        .arg(dir.path())
        .arg("--request-timeout=60")
        .output()
        .expect("run the apiserver");
    assert_eq!(refused.status.code(), Some(2), "a usage error");
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains(
            "invalid value '60' for '--request-timeout <REQUEST_TIMEOUT>': time: missing unit in duration \"60\""
        ),
        "{stderr}"
    );
}
