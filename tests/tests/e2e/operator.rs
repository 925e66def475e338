//! What an operator meets first: duration flags in Go's syntax, as kube-apiserver's; a
//! `/metrics` with kube's help texts and Go's process metrics; logs without colour codes when
//! they go to a file.

use std::time::{SystemTime, UNIX_EPOCH};

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

/// The value of the sample `name` (no labels) in a Prometheus text page.
fn sample(page: &str, name: &str) -> f64 {
    let line = page.lines().find(|l| l.split_whitespace().next() == Some(name)).unwrap_or_else(|| panic!("no {name}"));
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

#[test]
fn metrics_carry_kubes_help_texts_and_gos_process_metrics() {
    let s = TestServer::start();
    s.kubectl_ok(&["create", "configmap", "counted", "--from-literal=a=b"]);
    let page = s.kubectl_ok(&["get", "--raw", "/metrics"]);

    assert!(
        page.contains(
            "# HELP apiserver_request_total [STABLE] Counter of apiserver requests broken out for each verb, dry run \
             value, group, version, resource, scope, component, and HTTP response code.\n\
             # TYPE apiserver_request_total counter\n"
        ),
        "kube's help text, with its stability"
    );
    let lines: Vec<&str> = page.lines().collect();
    for (i, line) in lines.iter().enumerate() {
        if let Some(name) = line.strip_prefix("# TYPE ").and_then(|t| t.split_whitespace().next()) {
            let help = format!("# HELP {name} ");
            assert!(i > 0 && lines[i - 1].starts_with(&help), "{name} has no help text");
        }
    }

    assert!(page.contains("# TYPE process_cpu_seconds_total counter\n"));
    assert!(sample(&page, "process_cpu_seconds_total") > 0.0, "the server has used CPU");
    assert!(sample(&page, "process_resident_memory_bytes") > 1e6);
    assert!(sample(&page, "process_virtual_memory_bytes") >= sample(&page, "process_resident_memory_bytes"));
    let (open, max) = (sample(&page, "process_open_fds"), sample(&page, "process_max_fds"));
    assert!(open >= 3.0 && open <= max, "{open} of {max} descriptors");
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs_f64();
    let started = sample(&page, "process_start_time_seconds");
    assert!(now - 600.0 < started && started <= now + 1.0, "started at {started}, now {now}");
}

#[test]
fn logs_written_to_a_file_carry_no_colour_codes() {
    let s = TestServer::start_logging("info", &[]);
    s.kubectl_ok(&["get", "namespaces"]);
    let log = s.log_text();
    assert!(log.contains(" INFO "), "the log has lines at info: {log}");
    assert!(!log.contains('\x1b'), "no terminal escape codes in a log file: {:?}", &log[..log.len().min(400)]);
}
