//! API Priority and Fairness against the real binary: kube's bootstrap configuration is
//! served with kube's columns, responses name the schema and level that served them, and under
//! a flood of one flow a quiet flow of the same priority level is served as if alone, while
//! `system:masters` passes exempt.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tests::TestServer;

#[test]
fn the_bootstrap_configuration_lists_with_kube_columns() {
    let s = TestServer::start();
    let fs = s.kubectl_ok(&["get", "flowschemas"]);
    let mut lines = fs.lines();
    let header: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
    assert_eq!(header, ["NAME", "PRIORITYLEVEL", "MATCHINGPRECEDENCE", "DISTINGUISHERMETHOD", "AGE", "MISSINGPL"]);
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split_whitespace().collect()).collect();
    let names: Vec<&str> = rows.iter().map(|r| r[0]).collect();
    assert_eq!(
        names,
        [
            "exempt",
            "probes",
            "system-leader-election",
            "endpoint-controller",
            "workload-leader-election",
            "system-node-high",
            "system-nodes",
            "kube-controller-manager",
            "kube-scheduler",
            "kube-system-service-accounts",
            "service-accounts",
            "global-default",
            "catch-all"
        ],
        "kube's thirteen, by precedence then name:\n{fs}"
    );
    let global = rows.iter().find(|r| r[0] == "global-default").unwrap();
    assert_eq!((global[1], global[2], global[3]), ("global-default", "9900", "ByUser"), "{fs}");
    let exempt = rows.iter().find(|r| r[0] == "exempt").unwrap();
    assert_eq!((exempt[1], exempt[2], exempt[3]), ("exempt", "1", "<none>"), "{fs}");

    // The Dangling condition is kept: MISSINGPL reads False once it is set.
    let missing = tests::poll_until(Duration::from_secs(20), || {
        let fs = s.kubectl_ok(&["get", "flowschema", "global-default", "--no-headers"]);
        let cols: Vec<String> = fs.split_whitespace().map(String::from).collect();
        (cols.get(5).map(String::as_str) == Some("False")).then_some(cols)
    });
    assert!(missing.is_some(), "global-default's MISSINGPL becomes False");

    let pl = s.kubectl_ok(&["get", "prioritylevelconfigurations"]);
    let mut lines = pl.lines();
    let header: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
    assert_eq!(header, ["NAME", "TYPE", "NOMINALCONCURRENCYSHARES", "QUEUES", "HANDSIZE", "QUEUELENGTHLIMIT", "AGE"]);
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split_whitespace().collect()).collect();
    let row = |name: &str| rows.iter().find(|r| r[0] == name).unwrap_or_else(|| panic!("{name} in\n{pl}")).clone();
    assert_eq!(&row("catch-all")[1..6], ["Limited", "5", "<none>", "<none>", "<none>"], "{pl}");
    assert_eq!(&row("exempt")[1..6], ["Exempt", "<none>", "<none>", "<none>", "<none>"], "{pl}");
    assert_eq!(&row("workload-low")[1..6], ["Limited", "100", "128", "6", "50"], "{pl}");
    assert_eq!(rows.len(), 8, "{pl}");

    // The response headers name the stored schema and level by uid.
    let schema: Value = serde_json::from_str(&s.kubectl_ok(&["get", "flowschema", "exempt", "-o", "json"])).unwrap();
    let level: Value =
        serde_json::from_str(&s.kubectl_ok(&["get", "prioritylevelconfiguration", "exempt", "-o", "json"])).unwrap();
    // Classification reads the stored objects once a second, as kube's config controller does:
    // until it has, the headers carry the bootstrap objects' names.
    let headers = || {
        let out = s.kubectl(&["get", "--raw", "/api/v1/namespaces", "-v=8"]);
        let log = String::from_utf8_lossy(&out.stderr).to_string();
        let header_of = |name: &str| {
            log.lines()
                .find_map(|l| l.split_once(&format!("{name}: ")).map(|(_, v)| v.trim().to_string()))
                .unwrap_or_else(|| panic!("{name} in\n{log}"))
        };
        (header_of("X-Kubernetes-Pf-Flowschema-Uid"), header_of("X-Kubernetes-Pf-Prioritylevel-Uid"))
    };
    let stored = (
        schema["metadata"]["uid"].as_str().unwrap().to_string(),
        level["metadata"]["uid"].as_str().unwrap().to_string(),
    );
    let seen = tests::poll_until(Duration::from_secs(5), || Some(headers()).filter(|h| *h == stored));
    assert_eq!(seen.unwrap_or_else(headers), stored, "the headers name the stored schema and level by uid");
}

fn p99(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[(samples.len() * 99 / 100).min(samples.len() - 1)]
}

async fn create(client: &awc::Client, url: &str, token: &str, name: &str) -> (u16, Duration) {
    let started = Instant::now();
    let body = json!({"metadata": {"name": name}});
    let mut r = client
        .post(url)
        .insert_header(("Authorization", format!("Bearer {token}")))
        .send_json(&body)
        .await
        .expect("request sent");
    let _ = r.body().limit(1 << 20).await;
    (r.status().as_u16(), started.elapsed())
}

/// The fairness test: `heavy` keeps ten times its level's seats busy, `light` sends a
/// request every 200 ms, both in one priority level (different flows, by user). The level
/// neither lends nor borrows and each write takes 100 ms (an injected storage delay), so its
/// capacity is known: 11 seats, 110 writes a second. Its hand size of 2 keeps the flood in
/// two queues, so a quiet request competes with two queues for the next free seat.
#[actix_web::test]
async fn a_quiet_flow_is_served_as_if_alone_while_another_floods_its_priority_level() {
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("tokens.csv");
    std::fs::write(&tokens, "heavy-token,heavy,1,\"loaders\"\nlight-token,light,2,\"loaders\"\n").unwrap();
    // 120 seats: the level's 23 shares of 268 give it 11.
    let s = TestServer::start_with(&[
        "--token-auth-file",
        tokens.to_str().unwrap(),
        "--enable-fault-injection=true",
        "--max-requests-inflight=80",
        "--max-mutating-requests-inflight=40",
    ]);
    s.kubectl_ok(&["create", "namespace", "load"]);
    s.kubectl_ok(&["create", "clusterrolebinding", "loaders", "--clusterrole=edit", "--group=loaders"]);
    let level = json!({"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "PriorityLevelConfiguration",
        "metadata": {"name": "loaders"},
        "spec": {"type": "Limited", "limited": {"nominalConcurrencyShares": 23, "lendablePercent": 0,
            "borrowingLimitPercent": 0,
            "limitResponse": {"type": "Queue", "queuing": {"queues": 64, "handSize": 2, "queueLengthLimit": 100}}}}});
    let schema = json!({"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema",
        "metadata": {"name": "loaders"},
        "spec": {"priorityLevelConfiguration": {"name": "loaders"}, "matchingPrecedence": 500,
            "distinguisherMethod": {"type": "ByUser"},
            "rules": [{"subjects": [{"kind": "Group", "group": {"name": "loaders"}}],
                "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"], "namespaces": ["*"]}]}]}});
    for o in [level, schema] {
        let out = s.kubectl_stdin(&["create", "-f", "-"], &o.to_string());
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
    actix_web::rt::time::sleep(Duration::from_millis(2500)).await;
    let mut r = awc::Client::default()
        .post(s.admin_url("/faults?storageWriteDelay=100ms"))
        .send()
        .await
        .expect("admin endpoint");
    assert_eq!(r.status().as_u16(), 200, "{:?}", r.body().await);
    let client = s.client(false);
    let url = s.url("/api/v1/namespaces/load/configmaps");

    // Alone.
    let mut alone = Vec::new();
    for i in 0..30 {
        let (code, took) = create(&client, &url, "light-token", &format!("alone-{i}")).await;
        assert_eq!(code, 201);
        alone.push(took);
        actix_web::rt::time::sleep(Duration::from_millis(50)).await;
    }
    let alone_p99 = p99(alone);

    // The flood: 110 requests always in flight, ten times the level's seats.
    let stop = Instant::now() + Duration::from_secs(12);
    let heavy: Vec<_> = (0..110)
        .map(|w| {
            let (client, url) = (client.clone(), url.clone());
            actix_web::rt::spawn(async move {
                let (mut codes, mut times) = (Vec::new(), Vec::new());
                let mut i = 0;
                while Instant::now() < stop {
                    let (code, took) = create(&client, &url, "heavy-token", &format!("heavy-{w}-{i}")).await;
                    codes.push(code);
                    times.push(took);
                    i += 1;
                }
                (codes, times)
            })
        })
        .collect();
    actix_web::rt::time::sleep(Duration::from_secs(1)).await;
    let (mut light, mut light_codes, mut exempt) = (Vec::new(), Vec::new(), Vec::new());
    let admin = s.client(true);
    for i in 0..40 {
        let (code, took) = create(&client, &url, "light-token", &format!("light-{i}")).await;
        light_codes.push(code);
        light.push(took);
        // system:masters is exempt: never queued behind the flood.
        let started = Instant::now();
        let r = admin.get(s.url("/api/v1/namespaces/load/configmaps?limit=1")).send().await.unwrap();
        exempt.push((r.status().as_u16(), started.elapsed()));
        actix_web::rt::time::sleep(Duration::from_millis(200)).await;
    }
    let mut heavy_codes = Vec::new();
    let mut heavy_times = Vec::new();
    for h in heavy {
        let (codes, times) = h.await.unwrap();
        heavy_codes.extend(codes);
        heavy_times.extend(times);
    }

    let loaded_p99 = p99(light.clone());
    let served = heavy_codes.iter().filter(|c| **c == 201).count();
    println!(
        "alone p99 {alone_p99:?}, loaded p99 {loaded_p99:?}, heavy served {served}, \
         heavy 429 {}",
        heavy_codes.iter().filter(|c| **c == 429).count()
    );
    assert!(light_codes.iter().all(|c| *c == 201), "the quiet flow saw no refusal: {light_codes:?}");
    assert!(
        loaded_p99 <= alone_p99 * 2,
        "the quiet flow's p99 stays within twice its unloaded p99: {loaded_p99:?} vs {alone_p99:?}"
    );
    assert!(exempt.iter().all(|(c, _)| *c == 200), "{exempt:?}");
    // 11 seats of (at least) 100 ms writes finish at most 1,320 writes in 12 s; each of the 110
    // workers may then have one more request queued or running, which is still served: at most
    // 1,430. Unthrottled, 110 writers at 100 ms would finish 13,200.
    assert!((400..=1430).contains(&served), "the flood is served at the level's pace: {served}");
    assert!(heavy_codes.iter().all(|c| *c == 201 || *c == 429), "{:?}", heavy_codes.iter().find(|c| **c != 201));
    // The flood queued: its requests waited far longer than a lone write takes.
    let heavy_p50 = {
        heavy_times.sort();
        heavy_times[heavy_times.len() / 2]
    };
    assert!(heavy_p50 > alone_p99 * 3, "the flooding flow waited its turn: p50 {heavy_p50:?}");
}

/// Gives the group `tiny` the `edit` role and its own priority level, `tiny`: one share (three
/// seats of 600), lending and borrowing none, rejecting what does not fit.
pub(crate) fn tiny_reject_level(s: &TestServer) {
    s.kubectl_ok(&["create", "clusterrolebinding", "tiny", "--clusterrole=edit", "--group=tiny"]);
    let level = json!({"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "PriorityLevelConfiguration",
        "metadata": {"name": "tiny"},
        "spec": {"type": "Limited", "limited": {"nominalConcurrencyShares": 1, "lendablePercent": 0,
            "borrowingLimitPercent": 0, "limitResponse": {"type": "Reject"}}}});
    let schema = json!({"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema",
        "metadata": {"name": "tiny"},
        "spec": {"priorityLevelConfiguration": {"name": "tiny"}, "matchingPrecedence": 100,
            "rules": [{"subjects": [{"kind": "Group", "group": {"name": "tiny"}}],
                "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"], "namespaces": ["*"]}]}]}});
    for o in [level, schema] {
        let out = s.kubectl_stdin(&["create", "-f", "-"], &o.to_string());
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
}

/// A level with `limitResponse: Reject` and no seats to spare turns requests away at once with
/// kube's 429, which names the level.
#[actix_web::test]
async fn a_saturated_reject_level_answers_429_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("tokens.csv");
    std::fs::write(&tokens, "t,tiny-user,1,\"tiny\"\n").unwrap();
    let s = TestServer::start_with(&["--token-auth-file", tokens.to_str().unwrap(), "--enable-fault-injection=true"]);
    tiny_reject_level(&s);
    // The stage re-reads the configuration every second.
    actix_web::rt::time::sleep(Duration::from_millis(2500)).await;
    let mut r = awc::Client::default().post(s.admin_url("/faults?storageWriteDelay=2s")).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 200, "{:?}", r.body().await);
    let client = s.client(false);
    let url = s.url("/api/v1/namespaces/default/configmaps");
    let writes: Vec<_> = (0..16)
        .map(|i| {
            let (client, url) = (client.clone(), url.clone());
            actix_web::rt::spawn(async move {
                let mut r = client
                    .post(&url)
                    .insert_header(("Authorization", "Bearer t"))
                    .send_json(&json!({"metadata": {"name": format!("t-{i}")}}))
                    .await
                    .unwrap();
                let retry = r.headers().get("Retry-After").map(|v| v.to_str().unwrap().to_string());
                let level = r.headers().get("X-Kubernetes-PF-PriorityLevel-UID").is_some();
                let body: Value = r.json().limit(1 << 20).await.unwrap_or(Value::Null);
                (r.status().as_u16(), retry, level, body)
            })
        })
        .collect();
    let mut refused = 0;
    for w in writes {
        let (code, retry, named_by_header, body) = w.await.unwrap();
        if code == 429 {
            refused += 1;
            assert_eq!(body["message"], "Too many requests, please try again later.", "{body}");
            assert_eq!(body["reason"], "TooManyRequests", "{body}");
            assert_eq!(body["details"]["name"], "tiny", "the Status names the priority level: {body}");
            assert_eq!(body["details"]["kind"], "prioritylevelconfigurations", "{body}");
            assert_eq!(retry.as_deref(), Some("1"));
            assert!(named_by_header, "the level's uid header is set on a rejection too");
        } else {
            assert_eq!(code, 201, "{body}");
        }
    }
    // One share of 246 is 3 of the 600 seats, and the level neither lends nor borrows.
    assert_eq!(refused, 13, "three seats, the rest refused at once");
    let dump = s.kubectl_ok(&["get", "--raw", "/debug/api_priority_and_fairness/dump_priority_levels"]);
    let tiny = dump.lines().find(|l| l.starts_with("tiny,")).unwrap_or_else(|| panic!("{dump}"));
    let rejected: u64 = tiny.split(',').nth(7).unwrap().trim().parse().unwrap();
    assert_eq!(rejected, 13, "{dump}");
}
