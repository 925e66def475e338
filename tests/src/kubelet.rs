//! A fake kubelet: the part of a kubelet's HTTPS server the apiserver reaches, enough to see
//! what arrives and answer as a kubelet does.
//!
//! - `GET /containerLogs/<ns>/<pod>/<container>`: two lines, or with `follow=true` three lines
//!   written a little apart in chunks, then the end.
//! - `GET /exec/<ns>/<pod>/<container>?command=...`: a WebSocket upgrade in
//!   `v4.channel.k8s.io` (v1 to v4, as kubelets speak; an offer of only `v5.channel.k8s.io`
//!   gets 400, as from a kubelet): it writes `ran: <command>` on stdout (channel 1) and a
//!   `Success` Status on the error channel (3), then closes.
//! - A SPDY/3.1 upgrade of `/exec/...` or `/attach/...` runs `cat` (stdin comes back on
//!   stdout), and one of `/portForward/...` answers each forwarded connection's bytes with
//!   `forwarded: ` and the same bytes (`crate::spdy`).
//! - `GET /healthz`: `ok from <node>`.
//!
//! Its serving certificate chains to the test's CA, and it notes the common name of the client
//! certificate each connection presents.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use crate::pki::TestCa;
use crate::spdy::{Role, Serve};

/// One request the fake kubelet got.
#[derive(Clone, Debug)]
pub struct Seen {
    /// Method and path with query.
    pub target: String,
    /// The client certificate's common name, if one was presented.
    pub client: Option<String>,
    /// The names of the request's headers, lower-cased.
    pub headers: Vec<String>,
}

/// A running fake kubelet.
pub struct FakeKubelet {
    /// Its port on 127.0.0.1.
    pub port: u16,
    /// The CA its serving certificate chains to (and client certificates are checked against).
    pub ca: TestCa,
    seen: Arc<Mutex<Vec<Seen>>>,
    _thread: std::thread::JoinHandle<()>,
}

impl FakeKubelet {
    /// Starts one on a free port of 127.0.0.1, serving for node `node`.
    pub fn start(node: &str) -> FakeKubelet {
        let ca = TestCa::new("kubelet");
        let tls = Arc::new(ca.server_config(&["127.0.0.1"], Some(&ca.pem())));
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
        let (node, log) = (node.to_string(), seen.clone());
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).unwrap();
                let acceptor = tokio_rustls::TlsAcceptor::from(tls);
                loop {
                    let Ok((tcp, _)) = listener.accept().await else { return };
                    let (acceptor, node, log) = (acceptor.clone(), node.clone(), log.clone());
                    tokio::spawn(async move {
                        let Ok(mut conn) = acceptor.accept(tcp).await else { return };
                        let client = conn.get_ref().1.peer_certificates().and_then(|c| common_name(c.first()?));
                        let _ = serve(&mut conn, &node, client, &log).await;
                    });
                }
            });
        });
        FakeKubelet { port, ca, seen, _thread: thread }
    }

    /// The requests it got, in order.
    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

fn common_name(cert: &rustls::pki_types::CertificateDer<'_>) -> Option<String> {
    let (_, parsed) = x509_parser::parse_x509_certificate(cert.as_ref()).ok()?;
    let cn = parsed.subject().iter_common_name().next()?.as_str().ok()?.to_string();
    Some(cn)
}

/// Serves one request on `conn`.
async fn serve<S: AsyncRead + AsyncWrite + Unpin>(
    conn: &mut S,
    node: &str,
    client: Option<String>,
    log: &Mutex<Vec<Seen>>,
) -> std::io::Result<()> {
    let mut buf = Vec::new();
    let mut byte = [0u8; 1];
    while !buf.ends_with(b"\r\n\r\n") {
        if conn.read(&mut byte).await? == 0 {
            return Ok(());
        }
        buf.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&buf).to_string();
    let mut lines = head.split("\r\n");
    let request_line = lines.next().unwrap_or("");
    let target = request_line.split_whitespace().take(2).collect::<Vec<_>>().join(" ");
    let header = |name: &str| {
        head.split("\r\n")
            .filter_map(|l| l.split_once(':'))
            .find(|(k, _)| k.trim().eq_ignore_ascii_case(name))
            .map(|(_, v)| v.trim().to_string())
    };
    let headers = lines.filter_map(|l| l.split_once(':')).map(|(k, _)| k.trim().to_ascii_lowercase()).collect();
    log.lock().unwrap().push(Seen { target: target.clone(), client, headers });
    let path = target.split_whitespace().nth(1).unwrap_or("");
    let (path, query) = path.split_once('?').unwrap_or((path, ""));
    if path.starts_with("/containerLogs/") {
        if query.split('&').any(|p| p == "follow=true") {
            conn.write_all(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n")
                .await?;
            for i in 1..=3 {
                let line = format!("line {i}\n");
                conn.write_all(format!("{:x}\r\n{line}\r\n", line.len()).as_bytes()).await?;
                conn.flush().await?;
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            conn.write_all(b"0\r\n\r\n").await?;
        } else {
            let body = "line 1\nline 2\n";
            let answer =
                format!("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n\r\n{body}", body.len());
            conn.write_all(answer.as_bytes()).await?;
        }
    } else if header("Upgrade").is_some_and(|u| u.eq_ignore_ascii_case("SPDY/3.1")) {
        let offered: Vec<String> = head
            .split("\r\n")
            .filter_map(|l| l.split_once(':'))
            .filter(|(k, _)| k.trim().eq_ignore_ascii_case("X-Stream-Protocol-Version"))
            .flat_map(|(_, v)| v.split(',').map(|v| v.trim().to_string()).collect::<Vec<_>>())
            .collect();
        return spdy_session(conn, path, query, &offered).await;
    } else if path.starts_with("/exec/") {
        let offered = header("Sec-WebSocket-Protocol").unwrap_or_default();
        if !offered.split(',').any(|p| p.trim() == "v4.channel.k8s.io") {
            let body = format!("requested protocol(s) are not supported: [{offered}]");
            let answer = format!("HTTP/1.1 400 Bad Request\r\nContent-Length: {}\r\n\r\n{body}", body.len());
            return conn.write_all(answer.as_bytes()).await;
        }
        let key = header("Sec-WebSocket-Key").unwrap_or_default();
        let digest = ring::digest::digest(
            &ring::digest::SHA1_FOR_LEGACY_USE_ONLY,
            format!("{key}258EAFA5-E914-47DA-95CA-C5AB0DC85B11").as_bytes(),
        );
        let accept = base64::engine::general_purpose::STANDARD.encode(digest.as_ref());
        conn.write_all(
            format!(
                "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
                 Sec-WebSocket-Accept: {accept}\r\nSec-WebSocket-Protocol: v4.channel.k8s.io\r\n\r\n"
            )
            .as_bytes(),
        )
        .await?;
        let command: Vec<String> = query
            .split('&')
            .filter_map(|p| p.strip_prefix("command="))
            .map(|c| c.replace("%20", " ").replace('+', " "))
            .collect();
        frame(conn, 1, format!("ran: {}\n", command.join(" ")).as_bytes()).await?;
        frame(conn, 3, br#"{"metadata":{},"status":"Success"}"#).await?;
        // A close frame, then whatever the client sends until it closes too.
        conn.write_all(&[0x88, 0x02, 0x03, 0xe8]).await?;
        conn.flush().await?;
        let mut rest = [0u8; 1024];
        while tokio::time::timeout(Duration::from_secs(5), conn.read(&mut rest))
            .await
            .is_ok_and(|r| r.is_ok_and(|n| n > 0))
        {}
    } else if path == "/healthz" {
        let body = format!("ok from {node}");
        let answer = format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{body}", body.len());
        conn.write_all(answer.as_bytes()).await?;
    } else {
        conn.write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 9\r\n\r\nnot found").await?;
    }
    conn.flush().await?;
    let _ = conn.shutdown().await;
    Ok(())
}

/// Answers a SPDY upgrade of `/exec`, `/attach` (both running `cat`) or `/portForward` (an
/// echo), choosing the newest protocol version offered, as a kubelet does.
async fn spdy_session<S: AsyncRead + AsyncWrite + Unpin>(
    conn: &mut S,
    path: &str,
    query: &str,
    offered: &[String],
) -> std::io::Result<()> {
    let (version, serve) = if path.starts_with("/portForward/") {
        ("portforward.k8s.io", Serve::Echo { prefix: "forwarded: ".into() })
    } else {
        // client-go opens the error stream, then stdin, stdout and stderr as asked for.
        let mut opened = vec![Role::Error];
        for (param, role) in [("input=1", Role::Stdin), ("output=1", Role::Stdout), ("error=1", Role::Stderr)] {
            if query.split('&').any(|p| p == param) {
                opened.push(role);
            }
        }
        ("v4.channel.k8s.io", Serve::Cat { opened })
    };
    if !offered.iter().any(|v| v == version) {
        let body = format!("requested protocol(s) are not supported: {offered:?}");
        let answer = format!("HTTP/1.1 403 Forbidden\r\nContent-Length: {}\r\n\r\n{body}", body.len());
        return conn.write_all(answer.as_bytes()).await;
    }
    let answer = format!(
        "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n\
         X-Stream-Protocol-Version: {version}\r\n\r\n"
    );
    conn.write_all(answer.as_bytes()).await?;
    conn.flush().await?;
    crate::spdy::serve(conn, serve).await
}

/// Writes one unmasked binary WebSocket frame carrying `data` on `channel`.
async fn frame<S: AsyncWrite + Unpin>(conn: &mut S, channel: u8, data: &[u8]) -> std::io::Result<()> {
    let len = data.len() + 1;
    let mut out = vec![0x82];
    if len < 126 {
        out.push(len as u8);
    } else {
        out.push(126);
        out.extend_from_slice(&(len as u16).to_be_bytes());
    }
    out.push(channel);
    out.extend_from_slice(data);
    conn.write_all(&out).await?;
    conn.flush().await
}
