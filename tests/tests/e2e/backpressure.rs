//! Backpressure and deadlines: a slowed storage fills the storage stage's mailbox with work in
//! progress, the bound holds, further requests are refused with 429 naming the stage, and
//! nothing is lost; a request past `--request-timeout` gets kube's 504 and its stage work is
//! cancelled.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tests::TestServer;

const CMS: &str = "/api/v1/namespaces/default/configmaps";

async fn set_write_delay(s: &TestServer, delay: &str) {
    let mut r = awc::Client::default()
        .post(s.admin_url(&format!("/faults?storageWriteDelay={delay}")))
        .send()
        .await
        .expect("admin endpoint");
    assert_eq!(r.status().as_u16(), 200, "{:?}", r.body().await);
}

async fn actor(s: &TestServer, name: &str) -> Value {
    let mut r = awc::Client::default().get(s.admin_url("/actors")).send().await.expect("admin endpoint answers");
    let doc: Value = r.json().limit(1 << 20).await.unwrap();
    doc["actors"].as_array().unwrap().iter().find(|a| a["name"] == name).cloned().unwrap_or_else(|| panic!("{doc}"))
}

async fn post(client: &awc::Client, url: &str, body: Value) -> (u16, Value) {
    let mut r = client.post(url).send_json(&body).await.expect("request sent");
    let v = r.json().limit(1 << 20).await.unwrap_or(Value::Null);
    (r.status().as_u16(), v)
}

async fn names(client: &awc::Client, url: &str) -> Vec<String> {
    let mut r = client.get(url).send().await.unwrap();
    let list: Value = r.json().limit(16 << 20).await.unwrap();
    list["items"].as_array().unwrap().iter().map(|i| i["metadata"]["name"].as_str().unwrap().to_string()).collect()
}

#[actix_web::test]
async fn a_slow_storage_fills_its_bound_then_sheds_and_loses_nothing() {
    const BOUND: u64 = 16;
    let s = TestServer::start_with(&[
        "--enable-fault-injection=true",
        "--stage-mailbox-capacity",
        "16",
        "--stage-mailbox-wait",
        "1s",
    ]);
    let client = s.client(true);
    let url = s.url(CMS);
    set_write_delay(&s, "4s").await;

    let creates: Vec<_> = (0..64)
        .map(|i| {
            let (client, url) = (client.clone(), url.clone());
            actix_web::rt::spawn(async move {
                let (code, body) = post(&client, &url, json!({"metadata": {"name": format!("cm-{i}")}})).await;
                (i, code, body)
            })
        })
        .collect();
    actix_web::rt::time::sleep(Duration::from_millis(600)).await;
    let storage = actor(&s, "storage").await;
    assert_eq!(storage["in_progress"], BOUND, "the bound holds for work in progress: {storage}");
    assert_eq!(storage["mailbox_depth"], BOUND, "{storage}");
    assert_eq!(storage["mailbox_capacity"], BOUND, "{storage}");
    assert_eq!(storage["arbiter"], "storage", "{storage}");

    let mut created = Vec::new();
    let mut refused = 0;
    for c in creates {
        let (i, code, body) = c.await.unwrap();
        match code {
            201 => created.push(format!("cm-{i}")),
            429 => {
                refused += 1;
                assert_eq!(body["reason"], "TooManyRequests", "{body}");
                assert_eq!(body["details"]["retryAfterSeconds"], 1, "{body}");
                let message = body["message"].as_str().unwrap();
                assert!(message.starts_with("the storage stage is saturated"), "{message}");
            }
            other => panic!("create cm-{i}: {other} {body}"),
        }
    }
    assert_eq!(created.len() as u64, BOUND, "exactly the admitted writes completed");
    assert_eq!(refused, 64 - BOUND, "every other write was refused");

    set_write_delay(&s, "0s").await;
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let storage = actor(&s, "storage").await;
        if storage["mailbox_depth"] == 0 {
            assert_eq!((&storage["queued"], &storage["in_progress"]), (&json!(0), &json!(0)), "{storage}");
            assert!(storage["refused"].as_u64().unwrap() >= 64 - BOUND, "{storage}");
            break;
        }
        assert!(Instant::now() < deadline, "depth never returned to 0: {storage}");
        actix_web::rt::time::sleep(Duration::from_millis(100)).await;
    }
    let mut stored = names(&client, &url).await;
    stored.sort();
    created.sort();
    assert_eq!(stored, created, "every acknowledged write is stored and no refused one is");

    // At full speed the same burst goes through.
    let again: Vec<_> = (0..64)
        .map(|i| {
            let (client, url) = (client.clone(), url.clone());
            actix_web::rt::spawn(async move {
                post(&client, &url, json!({"metadata": {"name": format!("again-{i}")}})).await.0
            })
        })
        .collect();
    for a in again {
        assert_eq!(a.await.unwrap(), 201);
    }
}

#[actix_web::test]
async fn a_request_past_its_deadline_gets_504_and_its_write_is_cancelled() {
    let s = TestServer::start_with(&["--enable-fault-injection=true", "--request-timeout", "1s"]);
    let client = s.client(true);
    let url = s.url(CMS);
    set_write_delay(&s, "3s").await;

    let started = Instant::now();
    let (code, status) = post(&client, &url, json!({"metadata": {"name": "late"}})).await;
    let took = started.elapsed();
    assert_eq!(code, 504, "{status}");
    assert_eq!(status["kind"], "Status");
    assert_eq!(status["reason"], "Timeout");
    assert_eq!(status["code"], 504);
    assert_eq!(status["message"], "Timeout: request did not complete within the allotted timeout");
    assert!(took >= Duration::from_millis(900) && took < Duration::from_millis(2500), "answered after {took:?}");

    // A client's own shorter timeout applies too; a malformed one is kube's 400.
    let started = Instant::now();
    let (code, _) = post(&client, &format!("{url}?timeout=300ms"), json!({"metadata": {"name": "later"}})).await;
    assert_eq!(code, 504);
    assert!(started.elapsed() < Duration::from_millis(900), "{:?}", started.elapsed());
    let (code, status) = post(&client, &format!("{url}?timeout=soon"), json!({"metadata": {"name": "x"}})).await;
    assert_eq!(code, 400, "{status}");
    assert_eq!(status["message"], "invalid timeout specified in the request URL - time: invalid duration \"soon\"");

    // The stage dropped the work: nothing in progress, counted as given up, and reads are
    // untouched by the write delay.
    actix_web::rt::time::sleep(Duration::from_millis(200)).await;
    let storage = actor(&s, "storage").await;
    assert_eq!(storage["in_progress"], 0, "{storage}");
    assert_eq!(storage["expired"].as_u64().unwrap() + storage["cancelled"].as_u64().unwrap(), 2, "{storage}");
    let mut r = client.get(s.url(&format!("{CMS}/late"))).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 404, "{:?}", r.body().await);

    // After the delay would have ended, the cancelled writes still never happened.
    set_write_delay(&s, "0s").await;
    actix_web::rt::time::sleep(Duration::from_secs(3)).await;
    assert!(names(&client, &url).await.is_empty(), "cancelled writes were not stored");
    let (code, _) = post(&client, &url, json!({"metadata": {"name": "on-time"}})).await;
    assert_eq!(code, 201);
}
