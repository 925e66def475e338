//! Server-side apply beside the writes it stands in for: at c=64, each worker keeps changing
//! the replicas of its own Deployment by a PUT of the whole object, by a strategic merge
//! patch, and by an apply of the whole configuration (forced, since the other phases take
//! `.spec.replicas` from the applier), alternated twice on one server. Each row shows the
//! server's CPU time per request; the summary gives apply's cost as a multiple of the strategic
//! merge patch's. Then the bytes `managedFields` add to a stored (and cached) object, with the
//! applier's entry alone and with an updater's beside it.

use std::time::Duration;

use serde_json::{Value, json};
use tests::TestServer;
use tests::load::cpu_time;

use crate::{Phase, answered, report_cpu, run};

const WORKERS: usize = 64;

fn deployment(w: usize, replicas: usize) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": format!("web-{w}"), "namespace": "default", "labels": {"app": "web", "tier": "frontend"}},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "web", "worker": w.to_string()}},
            "template": {
                "metadata": {"labels": {"app": "web", "worker": w.to_string()}},
                "spec": {"containers": [
                    {"name": "app", "image": "registry.example.com/shop/web:1.25.3",
                     "ports": [{"containerPort": 8080, "protocol": "TCP"}, {"containerPort": 9090, "protocol": "TCP"}],
                     "env": [{"name": "MODE", "value": "production"}],
                     "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}}},
                    {"name": "proxy", "image": "envoyproxy/envoy:v1.30.1", "args": ["--config-path", "/etc/envoy.yaml"]}
                ]}
            }
        }
    })
}

#[derive(Clone, Copy, PartialEq)]
enum Write {
    Update,
    StrategicMerge,
    Apply,
}

impl Write {
    fn label(self) -> &'static str {
        match self {
            Write::Update => "update (PUT, whole object)",
            Write::StrategicMerge => "strategic merge patch",
            Write::Apply => "apply (whole configuration)",
        }
    }
}

pub async fn run_all(seconds: Duration) {
    let server = TestServer::start();
    let client = server.client(true);
    let base = server.url("/apis/apps/v1/namespaces/default/deployments");
    for w in 0..WORKERS {
        let url = format!("{base}/web-{w}?fieldManager=bench&force=true");
        let mut sent = client
            .patch(&url)
            .insert_header(("Content-Type", "application/apply-patch+yaml"))
            .send_body(deployment(w, 1).to_string())
            .await
            .expect("seeding by apply");
        let body = sent.body().await.unwrap_or_default();
        assert_eq!(sent.status().as_u16(), 201, "seeding web-{w} by apply: {}", String::from_utf8_lossy(&body));
    }
    println!("== server-side apply: {WORKERS} Deployments, each changed by its own worker, c={WORKERS}");
    let pid = server.pid();
    let mut rows: Vec<(Write, f64, f64)> = Vec::new();
    for _round in 0..2 {
        for write in [Write::Update, Write::StrategicMerge, Write::Apply] {
            let (cl, b) = (client.clone(), base.clone());
            let cpu = cpu_time(pid);
            let phase: Phase = run(WORKERS, seconds, move |w, i| {
                let (cl, b) = (cl.clone(), b.clone());
                async move {
                    let replicas = 1 + (i % 5);
                    let url = format!("{b}/web-{w}");
                    let sent = match write {
                        Write::Update => cl.put(&url).send_json(&deployment(w, replicas)).await,
                        Write::StrategicMerge => {
                            cl.patch(&url)
                                .insert_header(("Content-Type", "application/strategic-merge-patch+json"))
                                .send_body(json!({"spec": {"replicas": replicas}}).to_string())
                                .await
                        }
                        Write::Apply => {
                            cl.patch(format!("{url}?fieldManager=bench&force=true"))
                                .insert_header(("Content-Type", "application/apply-patch+yaml"))
                                .send_body(deployment(w, replicas).to_string())
                                .await
                        }
                    };
                    answered(sent, 200).await
                }
            })
            .await;
            let used = cpu_time(pid).saturating_sub(cpu);
            report_cpu(write.label(), WORKERS, &phase, None, Some(used));
            rows.push((write, phase.rate(), used.as_secs_f64() * 1e6 / phase.ops.max(1) as f64));
        }
    }
    let mean = |write: Write, f: fn(&(Write, f64, f64)) -> f64| {
        let v: Vec<f64> = rows.iter().filter(|r| r.0 == write).map(f).collect();
        v.iter().sum::<f64>() / v.len().max(1) as f64
    };
    let (smp_cpu, apply_cpu, put_cpu) =
        (mean(Write::StrategicMerge, |r| r.2), mean(Write::Apply, |r| r.2), mean(Write::Update, |r| r.2));
    println!(
        "== apply: {:.0} req/s, {:.2}x the CPU of a strategic merge patch ({:.0} vs {:.0} µs/req; PUT {:.0} µs/req); rate {:.1}% of the patch's",
        mean(Write::Apply, |r| r.1),
        apply_cpu / smp_cpu,
        apply_cpu,
        smp_cpu,
        put_cpu,
        100.0 * mean(Write::Apply, |r| r.1) / mean(Write::StrategicMerge, |r| r.1)
    );
    // What ownership costs an object at rest: its entries' bytes in the stored JSON, once
    // applied, and once an updater has changed a field beside the applier.
    let measure = |label: &'static str| {
        let client = client.clone();
        let url = format!("{base}/web-0");
        async move {
            let mut r = client.get(&url).send().await.expect("get");
            let object: Value = r.json().limit(1 << 20).await.expect("JSON");
            let whole = serde_json::to_vec(&object).expect("encode").len();
            let managed = serde_json::to_vec(&object["metadata"]["managedFields"]).expect("encode").len();
            let entries = object["metadata"]["managedFields"].as_array().map_or(0, Vec::len);
            println!(
                "== managedFields {label}: {managed} bytes in {entries} entries of a {whole}-byte Deployment ({:.0}% of it)",
                100.0 * managed as f64 / whole as f64
            );
        }
    };
    measure("after the applies").await;
    let sent = client
        .patch(format!("{base}/web-0"))
        .insert_header(("Content-Type", "application/strategic-merge-patch+json"))
        .send_body(json!({"spec": {"paused": true}}).to_string())
        .await;
    assert!(answered(sent, 200).await, "an update beside the applier");
    measure("with an updater beside").await;
}
