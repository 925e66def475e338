//! The server names the failing axis itself: nine faults injected one at a time into one
//! server (real traffic, a real webhook server, real watch connections; storage slowed by the
//! test-only write delay), and for each `GET /debug/axes` on the admin port names the right
//! axis with evidence within 10 s of the fault starting and is healthy again within 30 s of it
//! ending. In the mixed case (storage slow, so APF's seats run out and requests get 429) it
//! names storage as the root and APF as a consequence.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::future::Future;
use std::io::Write;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use storage::etcd::testing::EtcdProcess;
use tests::TestServer;
use tests::webhook::{Reply, WebhookServer, allow};

use crate::admission_webhooks::{configure, hook, wait_cached};

const DETECT_WITHIN: Duration = Duration::from_secs(10);
const RECOVER_WITHIN: Duration = Duration::from_secs(30);

async fn verdict(s: &TestServer) -> Value {
    let mut r = awc::Client::default().get(s.admin_url("/debug/axes")).send().await.expect("admin endpoint");
    assert_eq!(r.status().as_u16(), 200);
    r.json().limit(1 << 22).await.expect("a JSON verdict")
}

/// Traffic that runs until stopped, counting its answers by status code.
struct Load {
    running: Rc<Cell<bool>>,
    codes: Rc<RefCell<BTreeMap<u16, u64>>>,
    tasks: Vec<actix_web::rt::task::JoinHandle<()>>,
}

impl Load {
    /// `tasks` loops each calling `step(task, iteration)` then pausing `pause`.
    fn start<F, Fut>(tasks: usize, pause: Duration, step: F) -> Load
    where
        F: Fn(usize, u64) -> Fut + Clone + 'static,
        Fut: Future<Output = u16> + 'static,
    {
        let running = Rc::new(Cell::new(true));
        let codes: Rc<RefCell<BTreeMap<u16, u64>>> = Rc::default();
        let tasks = (0..tasks)
            .map(|t| {
                let (running, codes, step) = (running.clone(), codes.clone(), step.clone());
                actix_web::rt::spawn(async move {
                    let mut i = 0;
                    while running.get() {
                        let code = step(t, i).await;
                        *codes.borrow_mut().entry(code).or_default() += 1;
                        i += 1;
                        actix_web::rt::time::sleep(pause).await;
                    }
                })
            })
            .collect();
        Load { running, codes, tasks }
    }

    /// Stops the loops, waiting for their calls in flight; the answers by code.
    async fn stop(self) -> BTreeMap<u16, u64> {
        self.running.set(false);
        for t in self.tasks {
            let _ = t.await;
        }
        self.codes.borrow().clone()
    }
}

/// `method url` with an optional bearer token and JSON body: the status (0 if unanswered).
async fn send(client: &awc::Client, method: &str, url: &str, token: Option<&str>, body: Option<Value>) -> u16 {
    let mut request = client.request(method.parse().unwrap(), url);
    if let Some(t) = token {
        request = request.insert_header(("Authorization", format!("Bearer {t}")));
    }
    let answer = match body {
        Some(b) => request.send_json(&b).await,
        None => request.send().await,
    };
    match answer {
        Ok(mut r) => {
            let _ = r.body().limit(1 << 24).await;
            r.status().as_u16()
        }
        Err(_) => 0,
    }
}

/// What a fault did, for the report.
struct Observed {
    fault: &'static str,
    axis: &'static str,
    detected: Duration,
    recovered: Duration,
    codes: BTreeMap<u16, u64>,
    summary: String,
}

/// Waits for the first verdict that is not healthy and checks it names `axis` with evidence.
async fn detect(s: &TestServer, fault: &str, axis: &str, started: Instant) -> (Duration, Value) {
    loop {
        let v = verdict(s).await;
        if v["status"] != "healthy" {
            assert_eq!(v["root"], axis, "{fault}: the first verdict that is not healthy names {axis}:\n{v:#}");
            let node = v["path"].as_array().unwrap().iter().find(|n| n["axis"] == axis).unwrap();
            assert_eq!(node["answer"], "yes", "{fault}: {v:#}");
            let evidence = node["evidence"].as_array().unwrap();
            assert!(
                evidence
                    .iter()
                    .any(|e| e["health"] != "healthy"
                        && e["value"].as_f64().unwrap() >= e["threshold"].as_f64().unwrap()),
                "{fault}: the evidence shows a breach: {v:#}"
            );
            assert!(v["since"].as_str().is_some(), "{fault}: the verdict says since when: {v:#}");
            return (started.elapsed(), v);
        }
        assert!(started.elapsed() < DETECT_WITHIN, "{fault}: no verdict within {DETECT_WITHIN:?}:\n{v:#}");
        actix_web::rt::time::sleep(Duration::from_millis(250)).await;
    }
}

/// Waits until every axis is healthy again.
async fn recover(s: &TestServer, fault: &str, ended: Instant) -> Duration {
    loop {
        let v = verdict(s).await;
        if v["status"] == "healthy" {
            assert_eq!(v["root"], Value::Null);
            return ended.elapsed();
        }
        assert!(ended.elapsed() < RECOVER_WITHIN, "{fault}: still unhealthy {RECOVER_WITHIN:?} after it ended:\n{v:#}");
        actix_web::rt::time::sleep(Duration::from_millis(250)).await;
    }
}

/// A watch over raw TLS that never reads: what a stuck client looks like to the server.
fn stuck_watch(s: &TestServer, path: &str) -> rustls::StreamOwned<rustls::ClientConnection, std::net::TcpStream> {
    let mut config = s.tls_config(true);
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    let name = rustls::pki_types::ServerName::try_from("127.0.0.1").unwrap();
    let conn = rustls::ClientConnection::new(Arc::new(config), name).unwrap();
    let tcp = std::net::TcpStream::connect(("127.0.0.1", s.port)).unwrap();
    let mut stream = rustls::StreamOwned::new(conn, tcp);
    write!(stream, "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: application/json\r\n\r\n").unwrap();
    stream.flush().unwrap();
    stream
}

fn configmap(name: &str, labels: Value, data: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "labels": labels}, "data": {"d": data}})
}

#[actix_web::test]
async fn the_verdict_names_each_injected_fault_and_recovers_from_it() {
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("tokens.csv");
    std::fs::write(&tokens, "nobody-token,nobody,2,\ntiny-token,tiny-user,3,\"tiny\"\n").unwrap();
    let s = TestServer::start_with(&[
        "--token-auth-file",
        tokens.to_str().unwrap(),
        "--enable-fault-injection=true",
        "--slow-watcher-budget",
        "1s",
    ]);
    // A priority level of three seats that rejects what does not fit, for the group `tiny`.
    crate::flowcontrol::tiny_reject_level(&s);
    for ns in ["storm", "wave"] {
        s.kubectl_ok(&["create", "namespace", ns]);
    }
    // A webhook whose answer time the test sets, for ConfigMaps labelled `diagnosis: slow`.
    let webhook_delay = Arc::new(AtomicU64::new(0));
    let delay = webhook_delay.clone();
    let hooks = WebhookServer::start(&["127.0.0.1"], move |_, _| Reply {
        delay: Duration::from_millis(delay.load(Ordering::Relaxed)),
        ..allow()
    });
    let selector = |value: &str| json!({"objectSelector": {"matchLabels": {"diagnosis": value}}, "timeoutSeconds": 10});
    configure(
        &s,
        "Validating",
        "slow",
        vec![hook("slow.diagnosis.test", &hooks, &hooks.url("/slow"), &["configmaps"], selector("slow"))],
    );

    let admin = s.client(true);
    let url = |path: &str| s.url(path);
    let configmaps = url("/api/v1/namespaces/default/configmaps");
    // Steady traffic throughout, so storage's latency baseline is learned from real writes.
    let steady = {
        let (client, base) = (admin.clone(), configmaps.clone());
        Load::start(2, Duration::from_millis(100), move |t, i| {
            let (client, base) = (client.clone(), base.clone());
            async move {
                let name = format!("steady-{t}");
                let code = send(
                    &client,
                    "PUT",
                    &format!("{base}/{name}"),
                    None,
                    Some(configmap(&name, json!({}), &i.to_string())),
                )
                .await;
                if code == 404 {
                    send(&client, "POST", &base, None, Some(configmap(&name, json!({}), "0"))).await
                } else {
                    code
                }
            }
        })
    };
    // APF re-reads its configuration every second; the baseline needs a few seconds of writes.
    actix_web::rt::time::sleep(Duration::from_secs(4)).await;
    let first = recover(&s, "start-up", Instant::now()).await;
    assert!(first < Duration::from_secs(1), "a fresh server is healthy at once");

    let mut observed = Vec::new();
    macro_rules! fault {
        ($name:expr, $axis:expr, start: $start:expr, stop: $stop:expr $(, then: $then:expr)?) => {{
            let started = Instant::now();
            let state = $start;
            let (detected, v) = detect(&s, $name, $axis, started).await;
            $( ($then)(&v); )?
            // The fault goes on a little past its detection, then ends.
            actix_web::rt::time::sleep(Duration::from_secs(2)).await;
            let codes = ($stop)(state).await;
            let ended = Instant::now();
            let recovered = recover(&s, $name, ended).await;
            observed.push(Observed { fault: $name, axis: $axis, detected, recovered, codes, summary: v["summary"].as_str().unwrap_or("").to_string() });
        }};
    }

    // 1. A flood of requests with a token nobody issued: 401s.
    fault!("a bad token flood", "auth",
        start: {
            let (client, u) = (s.client(false), configmaps.clone());
            Load::start(4, Duration::from_millis(50), move |_, _| {
                let (client, u) = (client.clone(), u.clone());
                async move { send(&client, "GET", &u, Some("not-a-token"), None).await }
            })
        },
        stop: |l: Load| async move { let c = l.stop().await; assert!(c.get(&401) > Some(&10), "{c:?}"); c });

    // 2. A user RBAC grants nothing, reading secrets: 403s.
    fault!("an RBAC denial wave", "auth",
    start: {
        let (client, u) = (s.client(false), url("/api/v1/namespaces/kube-system/secrets"));
        Load::start(4, Duration::from_millis(50), move |_, _| {
            let (client, u) = (client.clone(), u.clone());
            async move { send(&client, "GET", &u, Some("nobody-token"), None).await }
        })
    },
    stop: |l: Load| async move { let c = l.stop().await; assert!(c.get(&403) > Some(&10), "{c:?}"); c },
    then: |v: &Value| {
        let evidence = v["path"][0]["evidence"].to_string();
        assert!(evidence.contains("apiserver_authorization_decisions_total{decision=\\\"denied\\\"}"), "{v:#}");
    });

    // 3. The webhook answers in 1.5 s instead of at once.
    let slow_writes = |label: &'static str| {
        let (client, u) = (admin.clone(), configmaps.clone());
        Load::start(4, Duration::from_millis(50), move |t, i| {
            let (client, u) = (client.clone(), u.clone());
            async move {
                let name = format!("{label}-{t}-{i}");
                send(&client, "POST", &u, None, Some(configmap(&name, json!({"diagnosis": label}), "x"))).await
            }
        })
    };
    fault!("a slow webhook", "admission",
        start: { webhook_delay.store(1500, Ordering::Relaxed); slow_writes("slow") },
        stop: |l: Load| { let delay = webhook_delay.clone(); async move {
            delay.store(0, Ordering::Relaxed);
            let c = l.stop().await; assert!(c.get(&201) > Some(&2), "{c:?}"); c
        }},
        then: |v: &Value| assert!(v["summary"].as_str().unwrap().contains("webhook \"slow.diagnosis.test\""), "{v:#}"));

    // 4. A webhook with failurePolicy Fail whose server is down: every call is refused.
    let closed = tests::free_port();
    fault!("a webhook down with failurePolicy Fail", "admission",
    start: {
        let down = hook("down.diagnosis.test", &hooks, &format!("https://127.0.0.1:{closed}/down"), &["configmaps"],
            json!({"objectSelector": {"matchLabels": {"diagnosis": "down"}}, "failurePolicy": "Fail"}));
        configure(&s, "Validating", "down", vec![down]);
        slow_writes("down")
    },
    stop: |l: Load| { let s = &s; async move {
        s.kubectl_ok(&["delete", "validatingwebhookconfiguration", "down"]);
        wait_cached(s, "Validating", "down", false);
        let c = l.stop().await; assert!(c.get(&500) > Some(&10), "{c:?}"); c
    }},
    then: |v: &Value| {
        assert_eq!(v["status"], "failing", "{v:#}");
        assert!(v["summary"].as_str().unwrap().contains("calls to webhook \"down.diagnosis.test\" failed"), "{v:#}");
    });

    // 5. One flow floods a level of three seats that rejects what does not fit: 429s.
    fault!("an APF flood", "apf",
        start: {
            let (client, u) = (s.client(false), configmaps.clone());
            Load::start(24, Duration::ZERO, move |_, _| {
                let (client, u) = (client.clone(), u.clone());
                async move { send(&client, "GET", &u, Some("tiny-token"), None).await }
            })
        },
        stop: |l: Load| async move { let c = l.stop().await; assert!(c.get(&429) > Some(&10), "{c:?}"); c },
        then: |v: &Value| assert!(v["summary"].as_str().unwrap().contains("priority level \"tiny\""), "{v:#}"));

    // 6. Every storage write takes two seconds (the test-only delay, measured as the backend's own).
    fault!("storage slowed", "storage",
        start: s.admin_post("/faults?storageWriteDelay=2s"),
        stop: |_| { let s = &s; async move { s.admin_post("/faults?storageWriteDelay=0s"); BTreeMap::new() } });

    // 7. Compaction after every write: continue tokens and exact reads of old revisions get 410.
    fault!("a compaction storm", "watch",
        start: {
            let (client, base, compact) = (admin.clone(), url("/api/v1/namespaces/storm/configmaps"), s.admin_url("/compact"));
            Load::start(2, Duration::from_millis(100), move |t, i| {
                let (client, base, compact) = (client.clone(), base.clone(), compact.clone());
                async move {
                    let post = |n: u64| {
                        let name = format!("storm-{t}-{i}-{n}");
                        send(&client, "POST", &base, None, Some(configmap(&name, json!({}), "x")))
                    };
                    post(0).await;
                    let mut r = client.get(format!("{base}?limit=1")).send().await.unwrap();
                    let page: Value = r.json().limit(1 << 24).await.unwrap();
                    let token = page["metadata"]["continue"].as_str().unwrap_or("").to_string();
                    // A write after the page, then compaction up to it: the page's revision is gone.
                    post(1).await;
                    let _ = awc::Client::default().post(compact.as_str()).send().await.unwrap().body().await;
                    send(&client, "GET", &format!("{base}?limit=1&continue={token}"), None, None).await
                }
            })
        },
        stop: |l: Load| async move { let c = l.stop().await; assert!(c.get(&410) > Some(&5), "{c:?}"); c },
        then: |v: &Value| assert!(v["summary"].as_str().unwrap().contains("410"), "{v:#}"));

    // 8. Twenty watchers that stop reading while ConfigMaps change fast: they are cut off.
    fault!("a slow watcher wave", "watch",
        start: {
            let stuck: Vec<_> = (0..20).map(|_| stuck_watch(&s, "/api/v1/namespaces/wave/configmaps?watch=1")).collect();
            let (client, base) = (admin.clone(), url("/api/v1/namespaces/wave/configmaps"));
            let big = "x".repeat(8 << 10);
            let load = Load::start(8, Duration::ZERO, move |t, i| {
                let (client, base, big) = (client.clone(), base.clone(), big.clone());
                async move {
                    let name = format!("wave-{t}-{}", i % 20);
                    let body = configmap(&name, json!({}), &format!("{i}{big}"));
                    let code = send(&client, "PUT", &format!("{base}/{name}"), None, Some(body.clone())).await;
                    if code == 404 { send(&client, "POST", &base, None, Some(body)).await } else { code }
                }
            });
            (stuck, load)
        },
        stop: |(stuck, load): (Vec<_>, Load)| async move { drop(stuck); load.stop().await },
        then: |v: &Value| assert!(v["summary"].as_str().unwrap().contains("cut off"), "{v:#}"));

    // 9. Storage slows down under a flow whose three seats then stay taken, so APF rejects the
    //    rest: storage degraded first and is the root; APF is its consequence.
    {
        let fault = "storage slow, so APF runs out of seats";
        let started = Instant::now();
        s.admin_post("/faults?storageWriteDelay=3s");
        let load = {
            let (client, u) = (s.client(false), configmaps.clone());
            Load::start(4, Duration::from_millis(100), move |t, i| {
                let (client, u) = (client.clone(), u.clone());
                async move {
                    let name = format!("mixed-{t}-{i}");
                    send(&client, "POST", &u, Some("tiny-token"), Some(configmap(&name, json!({}), "x"))).await
                }
            })
        };
        let (detected, _) = detect(&s, fault, "storage", started).await;
        let v = loop {
            let v = verdict(&s).await;
            assert_eq!(v["root"], "storage", "{fault}: storage stays the root:\n{v:#}");
            if v["consequences"].as_array().unwrap().iter().any(|c| c["axis"] == "apf") {
                break v;
            }
            assert!(started.elapsed() < DETECT_WITHIN, "{fault}: APF is named as the consequence:\n{v:#}");
            actix_web::rt::time::sleep(Duration::from_millis(250)).await;
        };
        let summary = v["summary"].as_str().unwrap().to_string();
        assert!(summary.starts_with("storage "), "{summary}");
        assert!(summary.ends_with("as a consequence: apf"), "{summary}");
        let apf = &v["consequences"][0];
        assert!(apf["secondsAfterRoot"].as_f64().unwrap() >= 0.0, "{v:#}");
        actix_web::rt::time::sleep(Duration::from_secs(2)).await;
        s.admin_post("/faults?storageWriteDelay=0s");
        let codes = load.stop().await;
        assert!(codes.get(&429) > Some(&5), "{codes:?}");
        let ended = Instant::now();
        let recovered = recover(&s, fault, ended).await;
        observed.push(Observed { fault, axis: "storage", detected, recovered, codes, summary });
    }
    let steady_codes = steady.stop().await;

    println!("| fault | axis | detected after | healthy again after | answers by code |");
    for o in &observed {
        println!(
            "| {} | {} | {:.1} s | {:.1} s | {:?} |",
            o.fault,
            o.axis,
            o.detected.as_secs_f64(),
            o.recovered.as_secs_f64(),
            o.codes
        );
        println!("|   verdict: {} |", o.summary);
    }
    println!("steady traffic: {steady_codes:?}");
    assert_eq!(observed.len(), 9);
}

/// A real etcd that stops answering (SIGSTOP: a hung process, a disk that blocks): the verdict
/// names storage and the etcd backend within 10 s, and clears within 30 s of etcd resuming.
#[actix_web::test]
async fn a_hung_etcd_is_named_as_the_storage_axis() {
    let etcd = EtcdProcess::start();
    let s = TestServer::start_with(&["--storage-backend", "etcd3", "--etcd-servers", etcd.endpoint()]);
    let (client, base) = (s.client(true), s.url("/api/v1/namespaces/default/configmaps"));
    let load = Load::start(2, Duration::from_millis(100), move |t, i| {
        let (client, base) = (client.clone(), base.clone());
        async move {
            let name = format!("hung-{t}-{i}");
            send(&client, "POST", &base, None, Some(configmap(&name, json!({}), "x"))).await
        }
    });
    actix_web::rt::time::sleep(Duration::from_secs(3)).await;
    recover(&s, "before the fault", Instant::now()).await;
    let pid = etcd.pid().expect("etcd runs").to_string();
    let signal = |sig: &str| {
        let status = std::process::Command::new("kill").args([sig, &pid]).status().expect("kill");
        assert!(status.success(), "kill {sig} {pid}");
    };
    let started = Instant::now();
    signal("-STOP");
    let (detected, v) = detect(&s, "a hung etcd", "storage", started).await;
    let summary = v["summary"].as_str().unwrap();
    assert!(summary.contains(&format!("etcd3 ({})", etcd.endpoint())), "the verdict names the backend: {v:#}");
    actix_web::rt::time::sleep(Duration::from_secs(2)).await;
    signal("-CONT");
    let ended = Instant::now();
    let recovered = recover(&s, "a hung etcd", ended).await;
    let codes = load.stop().await;
    println!("a hung etcd: detected after {detected:?}, healthy {recovered:?} after it resumed; {summary}; {codes:?}");
    assert!(codes.get(&201) > Some(&10), "{codes:?}");
}
