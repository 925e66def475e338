//! The admin endpoint lists every actor with its mailbox meters while a load runs.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tests::TestServer;

#[actix_web::test]
async fn actors_endpoint_shows_each_stage_under_load() {
    let s = TestServer::start();
    let client = s.client(true);
    let url = s.url("/api/v1/namespaces/default/configmaps");
    let created = client.post(&url).send_json(&json!({"metadata": {"name": "hot"}})).await.unwrap();
    assert_eq!(created.status().as_u16(), 201);

    let stop = Instant::now() + Duration::from_secs(3);
    let mut load = Vec::new();
    for _ in 0..32 {
        let client = client.clone();
        let url = format!("{url}/hot");
        load.push(actix_web::rt::spawn(async move {
            let mut n = 0u32;
            while Instant::now() < stop {
                if let Ok(mut r) = client.get(&url).send().await {
                    let _ = r.body().await;
                    n += 1;
                }
            }
            n
        }));
    }
    actix_web::rt::time::sleep(Duration::from_millis(1500)).await;
    let admin = awc::Client::default();
    let mut r = admin.get(s.admin_url("/actors")).send().await.expect("admin endpoint answers under load");
    assert_eq!(r.status().as_u16(), 200);
    let doc: Value = r.json().limit(1 << 20).await.unwrap();
    let mut served = 0;
    for t in load {
        served += t.await.unwrap();
    }
    assert!(served > 100, "load ran: {served}");

    let actors = doc["actors"].as_array().expect("actors");
    let find =
        |name: &str| actors.iter().find(|a| a["name"] == name).unwrap_or_else(|| panic!("no actor {name} in {doc}"));
    for stage in [
        "authentication",
        "authorization",
        "flowcontrol",
        "admission",
        "storage",
        "cacher/configmaps",
        "cacher/deployments.apps",
    ] {
        let a = find(stage);
        for field in [
            "mailbox_depth",
            "mailbox_capacity",
            "enqueued",
            "dequeued",
            "errors",
            "latency_p50_ms",
            "latency_p99_ms",
            "throughput_per_sec",
        ] {
            assert!(a.get(field).is_some(), "{stage} lacks {field}: {a}");
        }
        // The flow-control stage's bound is above what APF's queues hold (see docs).
        let capacity = if stage == "flowcontrol" { 32768 } else { 1024 };
        assert_eq!(a["mailbox_capacity"], capacity, "{stage}");
    }
    let authn = find("authentication");
    assert!(authn["enqueued"].as_u64().unwrap() > 100, "{authn}");
    assert!(authn["throughput_per_sec"].as_u64().unwrap() > 0, "measured during the load: {authn}");
    // Gets and lists read the cacher's snapshots without its mailbox; they are metered as
    // `cache-reads`, whose depth is the reads in flight.
    let reads = find("cache-reads/configmaps");
    assert!(reads["dequeued"].as_u64().unwrap() > 100, "{reads}");
    assert!(reads["latency_p99_ms"].as_f64().unwrap() > 0.0, "{reads}");
    assert!(find("storage")["enqueued"].as_u64().unwrap() >= 1);
}
