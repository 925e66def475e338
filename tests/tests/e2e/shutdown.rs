//! Graceful termination as kube-apiserver does it: on SIGTERM `/readyz` fails at once while
//! everything else is served through `--shutdown-delay-duration`; then the listener closes (or,
//! with `--shutdown-send-retry-after`, new requests get 429), requests in flight finish (a
//! write among them, durable across a restart), watches end cleanly within
//! `--shutdown-watch-termination-grace-period`, and the process exits 0.

use std::time::{Duration, Instant};

use actix_web::rt::time::sleep;
use futures_util::StreamExt;
use serde_json::{Value, json};
use tests::{Caller, TestServer};

const CMS: &str = "/api/v1/namespaces/default/configmaps";

/// Waits (without blocking the runtime) for the server to exit; its exit status.
async fn exit_status(s: &mut TestServer, within: Duration) -> std::process::ExitStatus {
    let deadline = Instant::now() + within;
    loop {
        if let Some(status) = s.wait_exit(Duration::ZERO) {
            return status;
        }
        assert!(Instant::now() < deadline, "the server did not exit within {within:?}\n{}", s.log_tail());
        sleep(Duration::from_millis(50)).await;
    }
}

#[actix_web::test]
async fn sigterm_fails_readyz_at_once_serves_through_the_delay_and_exits_0() {
    let mut s = TestServer::start_with(&["--shutdown-delay-duration=3s"]);
    assert_eq!(s.request(Caller::Admin, "GET", "/readyz").send().await.code, 200);
    s.terminate();
    let signalled = Instant::now();
    let readyz = loop {
        let answer = s.request(Caller::Admin, "GET", "/readyz?verbose").send().await;
        if answer.code == 500 {
            break answer;
        }
        assert!(signalled.elapsed() < Duration::from_secs(1), "readyz still passes: {}", answer.text());
        sleep(Duration::from_millis(50)).await;
    };
    let text = readyz.text();
    assert!(text.contains("[-]shutdown failed: reason withheld\n"), "{text}");
    assert!(text.contains("[+]etcd ok\n") && text.ends_with("readyz check failed\n"), "{text}");
    for probe in ["/livez", "/healthz"] {
        let answer = s.request(Caller::Admin, "GET", probe).send().await;
        assert_eq!((answer.code, answer.text().as_str()), (200, "ok"), "{probe} passes while shutting down");
    }
    let get = s.admin_call("GET", "/api/v1/namespaces/default", None).await;
    assert_eq!((get.code, &get.body["metadata"]["name"]), (200, &json!("default")), "served during the delay");
    assert!(signalled.elapsed() < Duration::from_secs(3), "all of the above within the delay");

    let status = exit_status(&mut s, Duration::from_secs(15)).await;
    assert_eq!(status.code(), Some(0), "{status}\n{}", s.log_tail());
    assert!(signalled.elapsed() >= Duration::from_secs(3), "served for the whole delay");
}

#[actix_web::test]
async fn watches_end_cleanly_when_requests_are_refused_and_a_write_in_flight_completes_durably() {
    let mut s = TestServer::start_with(&[
        "--shutdown-delay-duration=3s",
        "--shutdown-watch-termination-grace-period=5s",
        "--enable-fault-injection=true",
    ]);
    let mut watch =
        s.client(true).get(s.url(&format!("{CMS}?watch=1&timeoutSeconds=300"))).send().await.expect("the watch starts");
    assert_eq!(watch.status().as_u16(), 200);
    s.admin_post("/faults?storageWriteDelay=2s");

    // During the delay everything is served, the watch included; the second write is still in
    // its storage delay when the listener closes, and is answered all the same.
    let seen = json!({"metadata": {"name": "seen"}});
    let slow = json!({"metadata": {"name": "slow"}, "data": {"a": "1"}});
    let writes = async {
        sleep(Duration::from_millis(200)).await;
        s.terminate();
        let signalled = Instant::now();
        let first = s.admin_call("POST", CMS, Some(&seen)).await;
        let second = s.admin_call("POST", CMS, Some(&slow)).await;
        (signalled, first, second)
    };
    let refused = async {
        sleep(Duration::from_millis(200 + 3500)).await;
        std::net::TcpStream::connect(("127.0.0.1", s.port)).is_err()
    };
    let read_watch = async {
        let mut lines = Vec::new();
        while let Some(chunk) = watch.next().await {
            lines.extend_from_slice(&chunk.expect("the watch ends cleanly, not broken off"));
        }
        (lines, Instant::now())
    };
    let ((signalled, first, second), refused, (lines, ended)) = tokio::join!(writes, refused, read_watch);
    assert_eq!((first.code, second.code), (201, 201), "{} {}", first.body, second.body);
    assert!(refused, "no new connections once the delay has passed");

    let watched = ended - signalled;
    assert!(
        watched >= Duration::from_millis(2900) && watched < Duration::from_secs(8),
        "the watch ended {watched:?} after SIGTERM: at the end of the 3 s delay, within the 5 s grace period\n{}",
        s.log_tail()
    );
    let events: Vec<Value> =
        lines.split(|b| *b == b'\n').filter(|l| !l.is_empty()).map(|l| serde_json::from_slice(l).unwrap()).collect();
    assert!(
        events.iter().any(|e| e["type"] == "ADDED" && e["object"]["metadata"]["name"] == "seen"),
        "the watch was served through the delay: {events:?}"
    );

    let status = exit_status(&mut s, Duration::from_secs(15)).await;
    assert_eq!(status.code(), Some(0), "{status}\n{}", s.log_tail());
    s.start_again();
    let kept = s.admin_call("GET", &format!("{CMS}/slow"), None).await;
    assert_eq!((kept.code, &kept.body["data"]["a"]), (200, &json!("1")), "the acknowledged write survived");
}

#[actix_web::test]
async fn with_send_retry_after_a_new_request_gets_kubes_429_while_requests_drain() {
    let mut s = TestServer::start_with(&[
        "--shutdown-send-retry-after=true",
        "--shutdown-delay-duration=1s",
        "--enable-fault-injection=true",
    ]);
    s.admin_post("/faults?storageWriteDelay=4s");
    let drained = json!({"metadata": {"name": "drained"}});
    let write = s.admin_call("POST", CMS, Some(&drained));
    let probe = async {
        sleep(Duration::from_millis(300)).await;
        s.terminate();
        // Past the delay, while the write still drains: the listener is open, new requests
        // are turned away.
        sleep(Duration::from_millis(2000)).await;
        let refused = s.request(Caller::Admin, "GET", "/api/v1/namespaces").send().await;
        let readyz = s.request(Caller::Admin, "GET", "/readyz").send().await;
        (refused, readyz)
    };
    let (written, (refused, readyz)) = tokio::join!(write, probe);
    assert_eq!(refused.code, 429, "{}", refused.text());
    assert_eq!(refused.header("Retry-After"), Some("5"));
    assert_eq!(refused.text(), "The apiserver is shutting down, please try again later.\n");
    assert_eq!(readyz.code, 500, "probes are still answered: {}", readyz.text());
    assert_eq!(written.code, 201, "the write in flight drained: {}", written.body);

    let status = exit_status(&mut s, Duration::from_secs(15)).await;
    assert_eq!(status.code(), Some(0), "{status}\n{}", s.log_tail());
}
