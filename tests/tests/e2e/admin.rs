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

/// Debian's Chromium (`deploy/install-tools.sh` installs it), or `$CHROMIUM`.
fn chromium() -> std::path::PathBuf {
    if let Ok(p) = std::env::var("CHROMIUM") {
        return p.into();
    }
    let p = std::path::PathBuf::from("/usr/bin/chromium");
    assert!(p.exists(), "chromium is missing: run deploy/install-tools.sh (Debian's chromium)");
    p
}

/// Loads `url` in headless Chromium for `budget_ms` of page time and returns the DOM its scripts
/// built, or, with `screenshot`, writes a PNG there.
fn headless(url: &str, budget_ms: u32, screenshot: Option<&std::path::Path>) -> String {
    let mut cmd = std::process::Command::new(chromium());
    cmd.args([
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--hide-scrollbars",
        "--window-size=1400,900",
        &format!("--virtual-time-budget={budget_ms}"),
    ]);
    match screenshot {
        Some(path) => cmd.arg(format!("--screenshot={}", path.display())),
        None => cmd.arg("--dump-dom"),
    };
    let out = cmd.arg(url).output().expect("run chromium");
    assert!(out.status.success(), "chromium: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The admin page, in headless Chromium while creates load the server: it draws each stage of
/// the pipeline with its live depth and throughput, and the table of every actor. Its
/// screenshot is left beside the test's output.
#[test]
fn admin_page_draws_the_pipeline_under_load_in_chromium() {
    let s = TestServer::start();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (tls, url) = (s.tls_config(true), s.url("/api/v1/namespaces/default/configmaps"));
    let load = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            actix_web::rt::System::new().block_on(async move {
                let client = awc::Client::builder()
                    .connector(awc::Connector::new().rustls_0_23(std::sync::Arc::new(tls)))
                    .finish();
                let workers: Vec<_> = (0..16)
                    .map(|w| {
                        let (client, url, stop) = (client.clone(), url.clone(), stop.clone());
                        actix_web::rt::spawn(async move {
                            let mut i = 0u32;
                            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                                let body = json!({"metadata": {"name": format!("load-{w}-{i}")}, "data": {"k": "v"}});
                                if let Ok(mut r) = client.post(&url).send_json(&body).await {
                                    let _ = r.body().await;
                                }
                                i += 1;
                            }
                            i
                        })
                    })
                    .collect();
                let mut total = 0;
                for w in workers {
                    total += w.await.unwrap_or(0);
                }
                total
            })
        })
    };
    std::thread::sleep(Duration::from_secs(2));

    let page = s.admin_url("/");
    let dom = headless(&page, 4_000, None);
    let updates: u32 = dom
        .split("data-updates=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    assert!(updates >= 2, "the page refreshed from /actors: {updates} updates\n{dom}");
    for stage in ["authentication", "flowcontrol", "authorization", "admission", "storage"] {
        assert!(dom.contains(&format!("data-stage=\"{stage}\"")), "the pipeline draws {stage}:\n{dom}");
    }
    let storage = dom.split("data-stage=\"storage\"").nth(1).unwrap_or_default();
    let throughput: u64 = storage
        .split("data-throughput=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    assert!(throughput > 0, "the storage stage shows the creates going through it:\n{storage:.400}");
    assert!(dom.contains("data-actor=\"cacher/configmaps\""), "the table lists every actor");
    // Above the pipeline, the server's own verdict and the exclusion tree it walked.
    for axis in ["auth", "admission", "apf", "storage", "watch"] {
        assert!(dom.contains(&format!("data-axis=\"{axis}\"")), "the tree shows the {axis} node:\n{dom}");
    }
    let verdict = dom.split("id=\"verdict\">").nth(1).and_then(|v| v.split('<').next()).unwrap_or_default();
    assert!(!verdict.is_empty(), "the verdict is shown: {dom}");

    let shot = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("admin-page.png");
    let _ = std::fs::remove_file(&shot);
    headless(&page, 3_000, Some(&shot));
    let png = std::fs::read(&shot).expect("the screenshot was written");
    assert!(png.starts_with(b"\x89PNG") && png.len() > 20_000, "a real screenshot: {} bytes", png.len());
    println!("admin page screenshot under load: {}", shot.display());

    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let created = load.join().unwrap();
    assert!(created > 0);
}
