//! Security defaults a client can see: TLS 1.2 with AEAD suites or TLS 1.3 only; connections
//! that never start TLS, that trickle their headers or their body, or that send oversized
//! headers do not hold the server up; anonymous users can neither write nor read secrets; the
//! admin endpoint off loopback demands credentials; secrets and tokens never reach the log.
//! (The 3 MiB body limit's 413 is in `bad_input`.)

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tests::{Caller, TestServer};

/// 1,000 TCP connections that never send a byte (more than actix's default 256 handshakes per
/// worker on two workers) must not make a new client wait for the 3 s handshake timeout: kube
/// answers such a client at once.
#[test]
fn idle_connections_that_never_start_tls_do_not_hold_up_new_clients() {
    let s = TestServer::start();
    let idle: Vec<TcpStream> =
        (0..1_000).map(|_| TcpStream::connect(("127.0.0.1", s.port)).expect("an idle TCP connection")).collect();
    // Let the server accept them all.
    std::thread::sleep(Duration::from_millis(500));
    let started = Instant::now();
    s.kubectl_ok(&["get", "--raw", "/readyz"]);
    let waited = started.elapsed();
    drop(idle);
    assert!(
        waited < Duration::from_secs(1),
        "a new client waited {waited:?} behind connections that never started TLS"
    );
}

/// What `openssl s_client` negotiated with the server when offering only `args`' protocol and
/// suites: the cipher, or `None` when the server refused the handshake.
fn negotiated(s: &TestServer, args: &[&str]) -> Option<String> {
    let out = Command::new("openssl")
        .args(["s_client", "-connect", &format!("127.0.0.1:{}", s.port)])
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("openssl s_client (Debian's openssl package; deploy/install-tools.sh installs it)");
    let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    let cipher = text.lines().find_map(|l| l.split_once(", Cipher is ").map(|(_, c)| c.trim().to_string()))?;
    (cipher != "(NONE)").then_some(cipher)
}

/// kube-apiserver takes Go's defaults: TLS 1.2 or 1.3, forward-secret AEAD suites. This server
/// offers no more: old protocols and CBC or static-RSA suites get a handshake failure, even
/// from a client that would accept them (`@SECLEVEL=0`).
#[test]
fn tls_is_1_2_with_aead_suites_or_1_3_only() {
    let s = TestServer::start();
    for refused in [
        &["-tls1", "-cipher", "DEFAULT@SECLEVEL=0"][..],
        &["-tls1_1", "-cipher", "DEFAULT@SECLEVEL=0"],
        &["-tls1_2", "-cipher", "AES128-SHA:AES256-GCM-SHA384:@SECLEVEL=0"],
        &["-tls1_2", "-cipher", "ECDHE-ECDSA-AES128-SHA:ECDHE-RSA-AES128-SHA:@SECLEVEL=0"],
    ] {
        assert_eq!(negotiated(&s, refused), None, "offering {refused:?}");
    }
    let tls12 = negotiated(&s, &["-tls1_2"]).expect("TLS 1.2 with the default suites");
    assert!(tls12.starts_with("ECDHE-") && (tls12.contains("GCM") || tls12.contains("CHACHA20")), "{tls12}");
    let tls13 = negotiated(&s, &["-tls1_3"]).expect("TLS 1.3");
    assert!(tls13.starts_with("TLS_"), "{tls13}");
}

/// A TLS connection to the serving port, as the admin.
fn tls_stream(s: &TestServer) -> rustls::StreamOwned<rustls::ClientConnection, TcpStream> {
    let name = rustls::pki_types::ServerName::try_from("127.0.0.1").expect("server name");
    let conn = rustls::ClientConnection::new(Arc::new(s.tls_config(true)), name).expect("TLS client");
    let tcp = TcpStream::connect(("127.0.0.1", s.port)).expect("connect");
    tcp.set_read_timeout(Some(Duration::from_secs(30))).expect("read timeout");
    rustls::StreamOwned::new(conn, tcp)
}

/// The status line's code of what the server wrote back, or `None` if it closed the
/// connection without an answer.
fn answered(stream: &mut rustls::StreamOwned<rustls::ClientConnection, TcpStream>) -> Option<u16> {
    let mut head = [0u8; 12];
    let mut read = 0;
    while read < head.len() {
        match stream.read(&mut head[read..]) {
            Ok(0) | Err(_) => break,
            Ok(n) => read += n,
        }
    }
    std::str::from_utf8(&head[..read]).ok()?.strip_prefix("HTTP/1.1 ")?.parse().ok()
}

/// Headers are bounded (128 KiB, 96 of them): past that the server answers 431 and closes, and
/// nothing else is affected. (Go's bound is 1 MiB of headers and no count.)
#[test]
fn oversized_headers_get_431_and_the_server_keeps_serving() {
    let s = TestServer::start();
    let request = |extra: &str| {
        let mut tls = tls_stream(&s);
        let head = format!("GET /version HTTP/1.1\r\nHost: 127.0.0.1\r\n{extra}Connection: close\r\n\r\n");
        // The server may answer and close before the client has written everything.
        let _ = tls.write_all(head.as_bytes());
        answered(&mut tls)
    };
    assert_eq!(request(&format!("X-Big: {}\r\n", "a".repeat(64 << 10))), Some(200), "64 KiB of header");
    // Past the bound the server answers 431 and closes while bytes are still arriving; the
    // reset that close sends may reach the client before it reads the 431. Either way it is
    // refused.
    let oversized = request(&format!("X-Big: {}\r\n", "a".repeat(256 << 10)));
    assert!(matches!(oversized, Some(431) | None), "256 KiB of header: {oversized:?}");
    let many: String = (0..120).map(|i| format!("X-H{i}: a\r\n")).collect();
    assert_eq!(request(&many), Some(431), "120 headers");
    assert_eq!(request(""), Some(200), "a plain request afterwards");
}

/// Slowloris: a client that trickles its request head is cut off once it has had 5 s for it,
/// and 200 of them at once do not hold up anyone else; a client that trickles its body gets
/// kube's 504 at the request deadline.
#[test]
fn slow_clients_are_cut_off() {
    let s = TestServer::start_with(&["--request-timeout", "2s"]);
    let started = Instant::now();
    let mut trickling: Vec<_> = (0..200)
        .map(|_| {
            let mut tls = tls_stream(&s);
            tls.write_all(b"GET /version HTTP/1.1\r\n").expect("first line");
            tls
        })
        .collect();
    // They keep sending a header a second; a new client is answered meanwhile.
    let mut cut_off = vec![None; trickling.len()];
    let mut served_meanwhile = None;
    while cut_off.iter().any(Option::is_none) && started.elapsed() < Duration::from_secs(20) {
        for (i, tls) in trickling.iter_mut().enumerate() {
            if cut_off[i].is_none() && (tls.write_all(b"X-Slow: a\r\n").is_err() || tls.flush().is_err()) {
                cut_off[i] = Some(started.elapsed());
            }
        }
        if served_meanwhile.is_none() {
            let asked = Instant::now();
            s.kubectl_ok(&["get", "--raw", "/version"]);
            served_meanwhile = Some(asked.elapsed());
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    let latest = cut_off.iter().map(|c| c.expect("every trickling client is cut off within 20 s")).max();
    assert!(latest < Some(Duration::from_secs(10)), "the last trickling client was cut off after {latest:?}");
    let served = served_meanwhile.expect("a new client was tried");
    assert!(served < Duration::from_secs(1), "a new client waited {served:?} behind 200 trickling ones");

    let mut tls = tls_stream(&s);
    let head = "POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: 127.0.0.1\r\n\
                Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{";
    tls.write_all(head.as_bytes()).expect("head");
    let posted = Instant::now();
    // Read between the trickled bytes: the server answers and closes while the body is still
    // coming, and a close with unread input resets the connection, dropping what was not read.
    tls.sock.set_read_timeout(Some(Duration::from_millis(100))).expect("read timeout");
    let mut head = Vec::new();
    while posted.elapsed() < Duration::from_secs(10) && !head.ends_with(b"\r\n") {
        if tls.write_all(b" ").and_then(|()| tls.flush()).is_err() {
            break;
        }
        let mut byte = [0u8; 1];
        while let Ok(1) = tls.read(&mut byte) {
            head.push(byte[0]);
            if head.ends_with(b"\r\n") {
                break;
            }
        }
    }
    let status = String::from_utf8_lossy(&head);
    assert!(status.starts_with("HTTP/1.1 504"), "a body trickled past the 2 s request timeout: {status:?}");
    assert!(posted.elapsed() < Duration::from_secs(4), "answered after {:?}", posted.elapsed());
    s.kubectl_ok(&["get", "configmaps"]);
}

/// Anonymous requests are allowed in (as kube's are) but may neither write nor read secrets;
/// with `--anonymous-auth=false` they are 401s; a bad credential is a 401, never anonymous.
#[actix_web::test]
async fn anonymous_users_cannot_write_or_read_secrets() {
    let s = TestServer::start();
    s.kubectl_ok(&["create", "secret", "generic", "db", "--from-literal=password=hunter2"]);
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "anon"}});
    let anonymous = |method: &'static str, path: &'static str, body: Option<Value>| {
        let s = &s;
        async move { s.request(Caller::Anonymous, method, path).json_opt(body.as_ref()).send().await }
    };
    let write = anonymous("POST", "/api/v1/namespaces/default/configmaps", Some(cm.clone())).await;
    assert_eq!((write.code, write.body["reason"].as_str()), (403, Some("Forbidden")), "{}", write.body);
    assert_eq!(
        write.body["message"],
        "configmaps is forbidden: User \"system:anonymous\" cannot create resource \"configmaps\" in API group \"\" in the namespace \"default\""
    );
    let read = anonymous("GET", "/api/v1/namespaces/default/secrets/db", None).await;
    assert_eq!(read.code, 403, "{}", read.body);
    assert!(!read.text().contains("hunter2") && !read.text().contains("aHVudGVyMg"), "{}", read.text());
    let list = anonymous("GET", "/api/v1/secrets", None).await;
    assert_eq!(list.code, 403, "{}", list.body);
    let bad = s.request(Caller::Bearer("not-a-token"), "GET", "/api/v1/namespaces/default/secrets").send().await;
    assert_eq!((bad.code, bad.body["reason"].as_str()), (401, Some("Unauthorized")), "{}", bad.body);

    let closed = TestServer::start_with(&["--anonymous-auth=false"]);
    for (method, path) in [("GET", "/api/v1/namespaces/default/secrets"), ("GET", "/version")] {
        let answer = closed.request(Caller::Anonymous, method, path).send().await;
        assert_eq!(answer.code, 401, "{method} {path}: {}", answer.body);
    }
    let write =
        closed.request(Caller::Anonymous, "POST", "/api/v1/namespaces/default/configmaps").json(&cm).send().await;
    assert_eq!(write.code, 401, "{}", write.body);
}

/// Off loopback the admin endpoint is HTTPS and asks who is calling: no credentials is a 401,
/// a user RBAC does not allow is a 403 naming the path, `system:masters` gets the listing.
/// Plain HTTP gets no answer at all.
#[actix_web::test]
async fn admin_endpoint_off_loopback_demands_credentials() {
    let dir = tempfile::tempdir().expect("temp dir");
    let tokens = dir.path().join("tokens.csv");
    std::fs::write(&tokens, "viewer-token,viewer,1001,\n").expect("token file");
    let s = TestServer::start_with(&["--admin-bind-address", "0.0.0.0", "--token-auth-file", tokens.to_str().unwrap()]);
    let url = format!("https://127.0.0.1:{}/actors", s.admin_port);

    let plain = tests::plain_http(&format!("127.0.0.1:{}", s.admin_port), "GET", "/actors");
    assert!(!matches!(plain, Ok((200, _))), "plain HTTP was served: {plain:?}");

    let mut anonymous = s.client(false).get(&url).send().await.expect("anonymous call");
    assert_eq!(anonymous.status().as_u16(), 403, "{:?}", anonymous.body().await);
    let mut unknown = s.client(false).get(&url).bearer_auth("nobody").send().await.expect("bad token call");
    assert_eq!(unknown.status().as_u16(), 401, "{:?}", unknown.body().await);
    let mut viewer = s.client(false).get(&url).bearer_auth("viewer-token").send().await.expect("viewer call");
    let refused: Value = viewer.json().await.expect("a Status");
    assert_eq!(refused["code"], 403, "{refused}");
    assert_eq!(refused["message"], "forbidden: User \"viewer\" cannot get path \"/actors\"");
    let compact = s
        .client(false)
        .post(format!("https://127.0.0.1:{}/compact", s.admin_port))
        .bearer_auth("viewer-token")
        .send()
        .await
        .expect("viewer compact");
    assert_eq!(compact.status().as_u16(), 403);

    let mut admin = s.client(true).get(&url).send().await.expect("admin call");
    assert_eq!(admin.status().as_u16(), 200);
    let listing: Value = admin.json().limit(16 << 20).await.expect("the listing");
    assert!(listing["actors"].as_array().is_some_and(|a| !a.is_empty()), "{listing}");
}

/// At debug level, a secret's value and a bearer token appear nowhere in the server's log,
/// whatever happens to the requests that carry them.
#[actix_web::test]
async fn secrets_and_tokens_never_reach_the_log() {
    let dir = tempfile::tempdir().expect("temp dir");
    let tokens = dir.path().join("tokens.csv");
    let token = "tok-5be1c0a9e2f84d7b";
    std::fs::write(&tokens, format!("{token},alice,1002,\n")).expect("token file");
    let s = TestServer::start_logging("debug", &["--token-auth-file", tokens.to_str().unwrap()]);
    let value = "s3cr3t-9f1e27c4d6";
    let secret = |name: &str| json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name}, "stringData": {"password": value}});
    let path = "/api/v1/namespaces/default/secrets";
    assert_eq!(s.admin_call("POST", path, Some(&secret("db"))).await.code, 201);
    // Refused, conflicting and invalid writes of it, and a user who may not read it.
    assert_eq!(s.admin_call("POST", path, Some(&secret("db"))).await.code, 409);
    assert_eq!(s.admin_call("POST", path, Some(&secret("Not_Valid"))).await.code, 422);
    let mut stale = secret("db");
    stale["metadata"]["resourceVersion"] = "1".into();
    assert_eq!(s.admin_call("PUT", &format!("{path}/db"), Some(&stale)).await.code, 409);
    let denied = s.request(Caller::Bearer(token), "GET", &format!("{path}/db")).send().await;
    assert_eq!(denied.code, 403);
    let wrong = s.request(Caller::Bearer(&format!("{token}x")), "GET", path).send().await;
    assert_eq!(wrong.code, 401);
    assert_eq!(s.admin_call("GET", &format!("{path}/db"), None).await.code, 200);

    let log = s.log_text();
    assert!(log.lines().count() > 5, "the server logged at debug level:\n{log}");
    let encoded = base64_of(value);
    for needle in [value, &encoded, token] {
        assert!(!log.contains(needle), "{needle:?} is in the log:\n{}", s.log_tail());
    }
}

fn base64_of(s: &str) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(s)
}
