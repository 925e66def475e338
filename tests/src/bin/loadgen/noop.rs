//! The cost of writes that change nothing, beside a baseline build in the same run: each of 64
//! workers PUTs its own Deployment back as it read it (a controller's or an informer-driven
//! client's read-modify-write that had nothing to do), then with its times in the Python
//! client's form (`+00:00`), then with a change (an annotation that flips), alternated twice
//! per build. A write that changes nothing after decoding stores nothing and keeps the
//! resourceVersion; the rows show the server's CPU per request and how many writes reached
//! storage (resourceVersions that moved).
//!
//! `loadgen 5 noop --baseline PATH` runs the same phases on the server binary at PATH (another
//! build) in the same run, so the figures read as ratios.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tests::TestServer;
use tests::load::cpu_time;

use crate::{Phase, report_cpu, run};

const WORKERS: usize = 64;

pub(crate) fn deployment(w: usize) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": format!("web-{w}"), "namespace": "default", "labels": {"app": "web"}},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "web", "worker": w.to_string()}},
            "template": {
                "metadata": {"labels": {"app": "web", "worker": w.to_string()}},
                "spec": {"containers": [
                    {"name": "app", "image": "registry.example.com/shop/web:1.25.3",
                     "ports": [{"containerPort": 8080, "protocol": "TCP"}],
                     "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"cpu": "0.5"}}},
                ]}
            }
        }
    })
}

#[derive(Clone, Copy, PartialEq)]
enum Write {
    /// The object as read.
    AsRead,
    /// The object as read, its times written as Python writes them.
    PythonTimes,
    /// A real change.
    Change,
}

impl Write {
    fn label(self) -> &'static str {
        match self {
            Write::AsRead => "no-op PUT, as read",
            Write::PythonTimes => "no-op PUT, times as +00:00",
            Write::Change => "PUT with a change",
        }
    }
}

/// `t` (`2026-12-06T04:36:05Z`) as Python's `isoformat()` writes it.
fn python_time(v: &mut Value) {
    if let Some(t) = v.as_str().and_then(|t| t.strip_suffix('Z')) {
        *v = Value::String(format!("{t}+00:00"));
    }
}

/// What each worker sends in `write`, from the object it read.
fn body(read: &Value, write: Write, i: usize) -> Value {
    let mut out = read.clone();
    out["metadata"].as_object_mut().map(|m| m.remove("resourceVersion"));
    match write {
        Write::AsRead => {}
        Write::PythonTimes => {
            python_time(&mut out["metadata"]["creationTimestamp"]);
            for e in out["metadata"]["managedFields"].as_array_mut().into_iter().flatten() {
                python_time(&mut e["time"]);
            }
        }
        Write::Change => out["metadata"]["annotations"] = json!({"flip": (i % 2).to_string()}),
    }
    out
}

/// One build's phases on a server of its own.
async fn phases(label: &str, bin: &Path, seconds: Duration) -> Vec<(Write, f64, usize)> {
    let server = TestServer::start_binary(bin, &[]);
    let client = server.client(true);
    let base = server.url("/apis/apps/v1/namespaces/default/deployments");
    for w in 0..WORKERS {
        let mut r = client.post(&base).send_json(&deployment(w)).await.expect("create");
        assert_eq!(r.status().as_u16(), 201, "create web-{w}");
        let _ = r.body().await;
    }
    println!("== {label}: {WORKERS} Deployments, each written by its own worker, c={WORKERS}");
    let pid = server.pid();
    let mut rows = Vec::new();
    for _round in 0..2 {
        for write in [Write::AsRead, Write::PythonTimes, Write::Change] {
            // Each phase starts from the objects as they are now (a change phase moved them).
            let mut read = Vec::new();
            for w in 0..WORKERS {
                let mut r = client.get(format!("{base}/web-{w}")).send().await.expect("get");
                read.push(r.json::<Value>().limit(1 << 20).await.expect("JSON"));
            }
            // The resourceVersion each worker saw last: a write that moves it reached storage.
            let last: Arc<Vec<Mutex<Value>>> =
                Arc::new(read.iter().map(|o| Mutex::new(o["metadata"]["resourceVersion"].clone())).collect());
            let read = Arc::new(read);
            let moved = Arc::new(AtomicUsize::new(0));
            let (cl, b, r, m) = (client.clone(), base.clone(), read.clone(), moved.clone());
            let cpu = cpu_time(pid);
            let phase: Phase = run(WORKERS, seconds, move |w, i| {
                let (cl, b, sent, m) = (cl.clone(), b.clone(), body(&r[w], write, i), m.clone());
                let last = last.clone();
                async move {
                    let Ok(mut resp) = cl.put(format!("{b}/web-{w}")).send_json(&sent).await else { return false };
                    let Ok(after) = resp.json::<Value>().limit(1 << 20).await else { return false };
                    let rv = after["metadata"]["resourceVersion"].clone();
                    if std::mem::replace(&mut *last[w].lock().unwrap(), rv.clone()) != rv {
                        m.fetch_add(1, Ordering::Relaxed);
                    }
                    resp.status().as_u16() == 200
                }
            })
            .await;
            let used = cpu_time(pid).saturating_sub(cpu);
            report_cpu(write.label(), WORKERS, &phase, None, Some(used));
            let written = moved.load(Ordering::Relaxed);
            println!("   {} of {} writes reached storage", written, phase.ops);
            rows.push((write, used.as_secs_f64() * 1e6 / phase.ops.max(1) as f64, written));
        }
    }
    rows
}

/// Runs the phases on this build and, when given, on `baseline`; prints the CPU ratios.
pub async fn run_all(seconds: Duration, rest: Vec<String>) {
    let baseline = crate::baseline_build("noop", &rest);
    let mean = |rows: &[(Write, f64, usize)], write: Write| {
        let v: Vec<f64> = rows.iter().filter(|r| r.0 == write).map(|r| r.1).collect();
        v.iter().sum::<f64>() / v.len().max(1) as f64
    };
    let this = phases("this build", &tests::apiserver_bin(), seconds).await;
    let Some(baseline) = baseline else { return };
    let base = phases("baseline", &baseline, seconds).await;
    for write in [Write::AsRead, Write::PythonTimes, Write::Change] {
        let (a, b) = (mean(&this, write), mean(&base, write));
        println!("== {}: {a:.0} µs/req, baseline {b:.0} µs/req ({:.2}x)", write.label(), a / b);
    }
}
