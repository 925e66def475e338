//! The load generator's limit-finding runs, kept small: the storage stage stepped up to its
//! capacity in process and in a stage process over the wire, and the clusterloader2-style
//! scenario against a server of this build. Each prints its table, writes JSON that parses and
//! holds the rows it should, and draws non-empty SVG figures.

use std::path::Path;
use std::time::Duration;

use serde_json::Value;
use tests::TestServer;
use tests::load::cl2::{self, Cl2Options};
use tests::load::stages::{self, StepPlan};

fn json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn assert_svg(path: &Path) {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert!(text.starts_with("<svg") && text.trim_end().ends_with("</svg>"), "{} is not SVG", path.display());
    assert!(text.contains("<polyline") || text.contains("<path"), "{} draws no line", path.display());
}

#[actix_rt::test]
async fn the_storage_stage_is_stepped_to_its_capacity_in_process_and_over_the_wire() {
    let out = tempfile::tempdir().unwrap();
    let plan = StepPlan { step: Duration::from_millis(500), max_rate: 4_000.0 };
    let runs = stages::run_all(&["storage", "storage-wire"], &plan, out.path()).await.expect("the runs");

    assert_eq!(runs.iter().map(|r| r.key.as_str()).collect::<Vec<_>>(), ["storage", "storage-wire"]);
    for run in &runs {
        let table = run.table();
        for column in ["offered/s", "achieved/s", "p50 ms", "p99 ms", "429", "deadline", "depth mean", "verdict"] {
            assert!(table.contains(column), "{} table lacks {column}:\n{table}", run.name);
        }
        let first = &run.steps[0];
        assert_eq!(first.offered, stages::FIRST_RATE);
        assert!(first.ok > 0 && first.collapsed.is_empty(), "{table}");
        assert!(run.capacity_per_sec.is_some_and(|c| c > 0.0), "{table}");
        assert!(!first.depth_samples.is_empty(), "depth was sampled: {table}");
        for step in &run.steps {
            assert_eq!(step.errors.other, 0, "{}: {:?}\n{table}", run.name, step.errors.other_example);
        }
    }
    let summary = stages::summary(&runs);
    assert!(summary.contains("storage in process: capacity ~"), "{summary}");
    assert!(summary.contains("storage over the wire: capacity ~"), "{summary}");
    assert!(summary.contains("storage over the wire / in process, in-memory store: "), "{summary}");

    let written = json(&out.path().join("stages.json"));
    let steps = written["runs"][1]["steps"].as_array().expect("steps");
    assert!(steps[0]["ok"].as_u64() > Some(0), "{written}");
    assert!(steps[0]["latency"]["p99_ms"].as_f64() > Some(0.0), "{written}");
    assert_svg(&out.path().join("stages.svg"));
}

#[test]
fn the_cl2_scenario_runs_against_a_test_server() {
    let server = TestServer::start();
    let out = tempfile::tempdir().unwrap();
    let options = Cl2Options {
        namespaces: 2,
        deployments: 3,
        pods: 3,
        qps: 200.0,
        watchers: 2,
        list_for: Duration::from_secs(1),
        admin: Some(server.admin_url("")),
        ..Cl2Options::new(&server.kubeconfig, out.path())
    };
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let report = runtime.block_on(cl2::run(&options)).expect("the scenario");

    let table = cl2::table(&report);
    for column in ["verb", "resource", "count", "rate/s", "p50 ms", "p90 ms", "p99 ms", "errors"] {
        assert!(table.contains(column), "the table lacks {column}:\n{table}");
    }
    let written = json(&out.path().join("cl2.json"));
    let rows: Vec<(String, u64)> = written["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .map(|r| {
            assert_eq!(r["errors"], serde_json::json!({}), "no request failed:\n{table}");
            assert!(r["latency"]["p99_ms"].as_f64() > Some(0.0), "{r}");
            (
                format!("{} {}", r["verb"].as_str().unwrap(), r["resource"].as_str().unwrap()),
                r["count"].as_u64().unwrap(),
            )
        })
        .collect();
    let expected = [
        ("POST namespaces", 2),
        ("POST deployments", 6),
        ("POST pods", 18),
        ("PATCH deployments/scale", 6),
        ("PATCH deployments", 6),
        ("DELETE pods", 18),
        ("DELETE deployments", 6),
        ("DELETE namespaces", 2),
    ];
    for (row, count) in expected {
        assert!(rows.contains(&(row.to_string(), count)), "{row} x{count} in {rows:?}\n{table}");
    }
    assert!(rows.iter().any(|(r, n)| r == "LIST pods" && *n >= 2), "{rows:?}");
    assert_eq!(report.watch.added, [18, 18], "every watcher saw every create:\n{table}");
    assert_eq!(report.watch.deleted, [18, 18], "every watcher saw every delete:\n{table}");
    assert!(report.namespaces_gone_after_s.is_some(), "{table}");
    assert!(written["mailbox"].as_array().is_some_and(|m| !m.is_empty()), "mailbox depths were sampled");
    assert_svg(&out.path().join("cl2-latency.svg"));
    assert_svg(&out.path().join("cl2-mailbox.svg"));
}

/// The load generator's command line: `--help` lists the modes; an unknown mode, options a mode
/// does not take, or seconds that are no duration are usage errors before anything runs; a
/// mode's own `--help` is its options'.
#[test]
fn the_load_generator_explains_itself_and_refuses_what_it_does_not_know() {
    let run = |args: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_loadgen")).args(args).output().expect("loadgen runs");
        let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        (out.status.code(), text(&out.stdout), text(&out.stderr))
    };
    let (code, help, _) = run(&["--help"]);
    assert_eq!(code, Some(0));
    assert!(help.contains("Usage: loadgen [SECONDS] [MODE]"), "{help}");
    assert!(help.contains("Modes:\n") && help.contains("\n  cl2 ") && help.contains("\n  watch=WxR,... "), "{help}");

    let (code, _, stderr) = run(&["5", "everything"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("unknown mode \"everything\""), "{stderr}");
    let (code, _, stderr) = run(&["5", "crds=many"]);
    assert_eq!(code, Some(2), "{stderr}");
    let (code, _, stderr) = run(&["1m30s", "embedded", "--rate", "5"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("mode embedded takes no options"), "{stderr}");
    let (code, _, stderr) = run(&["soon", "embedded"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("time: invalid duration \"soon\""), "{stderr}");

    let (code, cl2_help, _) = run(&["cl2", "--help"]);
    assert_eq!(code, Some(0));
    assert!(cl2_help.contains("--namespaces"), "{cl2_help}");
}
