//! Reaching kubelets and pods: what kube hands to a backend instead of answering itself.
//!
//! - `log` is a GET of the kubelet's `/containerLogs/<ns>/<pod>/<container>`, its answer
//!   streamed back as it comes (`-f` keeps it open).
//! - `exec`, `attach` and `portforward` are HTTP upgrades (SPDY/3.1, or WebSocket) relayed to
//!   the kubelet's `/exec`, `/attach` and `/portForward` byte for byte, as kube's
//!   `UpgradeAwareHandler` relays them: the kubelet's `101 Switching Protocols` goes back to the
//!   client, and from then on each side's bytes are copied to the other until either closes.
//!   The streaming protocol is the kubelet's and the client's business; an answer that is not
//!   101 (a kubelet refusing a protocol) is passed back as it is, so a client falls back as it
//!   would with kube.
//! - `proxy` of nodes, pods and services is the same relay for any request: to the kubelet, to
//!   the pod's IP, or to an endpoint of the Service.
//!
//! Kubelets are reached over TLS presenting `--kubelet-client-certificate`, verified with
//! `--kubelet-certificate-authority` when given (kube does not verify them otherwise); pods and
//! endpoints over plain HTTP unless the request names the `https` scheme.

use std::sync::Arc;
use std::time::Duration;

use actix_web::http::StatusCode;
use actix_web::http::header::{HeaderName, HeaderValue};
use actix_web::{HttpRequest, HttpResponse, web};
use bytes::{Bytes, BytesMut};
use futures_util::StreamExt;
use rustls::pki_types::ServerName;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

/// The remote command protocol kubectl 1.30 offers over WebSocket: v4 plus a signal closing
/// one stream (which a kubelet, not knowing it, ignores: stdin is not closed at its end).
const V5: &str = "v5.channel.k8s.io";
/// The newest remote command protocol kubelets speak over WebSocket.
const V4: &str = "v4.channel.k8s.io";

/// How long connecting (and the TLS handshake) may take.
const DIAL_TIMEOUT: Duration = Duration::from_secs(30);
/// The largest response head accepted from a backend.
const MAX_HEAD: usize = 64 << 10;
/// The largest body of a non-upgrade answer read whole.
const MAX_BODY: usize = 4 << 20;

/// How a backend is reached.
#[derive(Clone)]
pub enum Transport {
    /// Plain TCP.
    Plain,
    /// TLS with this configuration (a kubelet's client certificate and trust).
    Tls(Arc<rustls::ClientConfig>),
}

/// A backend that could not be reached or answered nonsense, in Go's words where kube quotes
/// them (`dial tcp ...: connect: connection refused`).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Unreachable(pub String);

/// Builds the kubelet client's TLS configuration from the flags.
pub fn kubelet_tls(options: &crate::config::ServeOptions) -> Result<Arc<rustls::ClientConfig>, String> {
    let read = |p: &std::path::Path| std::fs::read(p).map_err(|e| format!("reading {}: {e}", p.display()));
    let client_cert = match (&options.kubelet_client_certificate, &options.kubelet_client_key) {
        (Some(cert), Some(key)) => Some((read(cert)?, read(key)?)),
        (None, None) => None,
        _ => return Err("--kubelet-client-certificate and --kubelet-client-key must be given together".into()),
    };
    let ca_pem = options.kubelet_certificate_authority.as_deref().map(read).transpose()?;
    let trust = webhook_client::Trust { insecure: ca_pem.is_none(), ca_pem, server_name: None, client_cert };
    let client = webhook_client::WebhookClient::for_proxy(trust)?;
    client.tls_config().ok_or_else(|| "the kubelet client has no TLS configuration".to_string())
}

/// Connects to `address` (`host:port`) within `timeout`; a failure in Go's words, as kube
/// quotes them (`dial tcp ...: connect: connection refused`, `... i/o timeout`).
pub async fn dial_tcp(address: &str, timeout: Duration) -> Result<TcpStream, String> {
    match tokio::time::timeout(timeout, TcpStream::connect(address)).await {
        Ok(Ok(tcp)) => Ok(tcp),
        Ok(Err(e)) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
            Err(format!("dial tcp {address}: connect: connection refused"))
        }
        Ok(Err(e)) => Err(format!("dial tcp {address}: {e}")),
        Err(_) => Err(format!("dial tcp {address}: i/o timeout")),
    }
}

/// Opens a connection to `address` (`host:port`).
async fn connect(transport: &Transport, address: &str) -> Result<Box<dyn Stream>, Unreachable> {
    let tcp = dial_tcp(address, DIAL_TIMEOUT).await.map_err(Unreachable)?;
    let _ = tcp.set_nodelay(true);
    match transport {
        Transport::Plain => Ok(Box::new(tcp)),
        Transport::Tls(config) => {
            let host = address.rsplit_once(':').map_or(address, |(h, _)| h).trim_matches(['[', ']']);
            let name = ServerName::try_from(host.to_string())
                .map_err(|e| Unreachable(format!("{address} is no TLS server name: {e}")))?;
            let connector = tokio_rustls::TlsConnector::from(config.clone());
            match tokio::time::timeout(DIAL_TIMEOUT, connector.connect(name, tcp)).await {
                Ok(Ok(tls)) => Ok(Box::new(tls)),
                Ok(Err(e)) => Err(Unreachable(format!("tls: {e}"))),
                Err(_) => Err(Unreachable("net/http: TLS handshake timeout".into())),
            }
        }
    }
}

/// A connection to a backend.
trait Stream: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Stream for T {}

/// Headers not passed on to the backend: the credentials and identity the client gave this
/// server (the backend trusts this server's certificate, not them), the host (the backend's),
/// and the body's framing (set again below).
fn dropped(name: &str) -> bool {
    matches!(
        name,
        "authorization"
            | "host"
            | "content-length"
            | "transfer-encoding"
            | "keep-alive"
            | "proxy-connection"
            | "expect"
            | "te"
            | "trailer"
    ) || name.starts_with("impersonate-")
        || name.starts_with("x-remote-")
}

/// Sends `req` (method and headers) to `path_and_query` at `address`, with `body`, and relays
/// the answer: an upgrade's stream both ways, anything else streamed back as it comes. With
/// `translate_v5`, a WebSocket offer of only `v5.channel.k8s.io` is made as v4.
pub async fn relay(
    transport: &Transport,
    address: &str,
    path_and_query: &str,
    req: &HttpRequest,
    body: Option<web::Payload>,
    translate_v5: bool,
) -> Result<HttpResponse, Unreachable> {
    let upgrade = req.headers().contains_key("upgrade");
    // A SPDY upgrade reached this handler named as WebSocket (`first_head`); it goes on as sent.
    let spdy = match crate::first_head::upgrade_of(req) {
        crate::first_head::Upgrade::Spdy(version) => Some(version),
        _ => None,
    };
    let offered: Vec<&str> = req
        .headers()
        .get_all("sec-websocket-protocol")
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .collect();
    // kubectl's WebSocket exec and attach offer only v5, which kubelets do not speak: the
    // kubelet is asked for v4, whose frames are the same, and the client told it got v5.
    let v5_as_v4 = translate_v5 && spdy.is_none() && offered == [V5];
    let mut conn = connect(transport, address).await?;
    let mut head = format!("{} {path_and_query} HTTP/1.1\r\nHost: {address}\r\n", req.method());
    if v5_as_v4 {
        head.push_str(&format!("Sec-WebSocket-Protocol: {V4}\r\n"));
    }
    for (name, value) in req.headers() {
        let skipped =
            (!upgrade && name.as_str() == "connection") || (v5_as_v4 && name.as_str() == "sec-websocket-protocol");
        if dropped(name.as_str()) || skipped {
            continue;
        }
        if let Some(spdy) = spdy.as_deref().filter(|_| name.as_str() == "upgrade") {
            head.push_str(&format!("Upgrade: {spdy}\r\n"));
        } else if let Ok(value) = value.to_str() {
            head.push_str(&format!("{}: {value}\r\n", name.as_str()));
        }
    }
    if let Some(peer) = req.peer_addr() {
        head.push_str(&format!("X-Forwarded-For: {}\r\n", peer.ip()));
    }
    let mut payload = body;
    // A plain request's body is sent chunked, as it comes; an upgrade has none before the switch.
    let chunked = !upgrade && payload.is_some() && req.method() != actix_web::http::Method::GET;
    if chunked {
        head.push_str("Transfer-Encoding: chunked\r\n");
    }
    if !upgrade {
        head.push_str("Connection: close\r\n");
    }
    head.push_str("\r\n");
    let lost = |e: std::io::Error| Unreachable(format!("writing to {address}: {e}"));
    conn.write_all(head.as_bytes()).await.map_err(lost)?;
    if chunked && let Some(mut body) = payload.take() {
        while let Some(chunk) = body.next().await {
            let chunk = chunk.map_err(|e| Unreachable(format!("reading the request body: {e}")))?;
            if !chunk.is_empty() {
                conn.write_all(format!("{:x}\r\n", chunk.len()).as_bytes()).await.map_err(lost)?;
                conn.write_all(&chunk).await.map_err(lost)?;
                conn.write_all(b"\r\n").await.map_err(lost)?;
            }
        }
        conn.write_all(b"0\r\n\r\n").await.map_err(lost)?;
    }
    conn.flush().await.map_err(lost)?;

    // An interim answer (`100 Continue`, `102`) is not the answer.
    let mut read = Bytes::new();
    let (status, headers, rest) = loop {
        let (status, headers, rest) = read_head(&mut conn, address, read).await?;
        if !status.is_informational() || status == StatusCode::SWITCHING_PROTOCOLS {
            break (status, headers, rest);
        }
        read = rest;
    };
    let mut answer = HttpResponse::build(status);
    let mut length = None;
    let mut chunked_answer = false;
    for (name, value) in &headers {
        match name.as_str() {
            "content-length" => length = value.to_str().ok().and_then(|v| v.parse::<usize>().ok()),
            "transfer-encoding" => chunked_answer = value.to_str().is_ok_and(|v| v.contains("chunked")),
            "connection" | "keep-alive" | "upgrade" => {}
            "sec-websocket-protocol" if v5_as_v4 => {}
            _ => {
                answer.append_header((name.clone(), value.clone()));
            }
        }
    }
    if status == StatusCode::SWITCHING_PROTOCOLS {
        let upgraded_to = headers.iter().find(|(n, _)| n.as_str() == "upgrade").map(|(_, v)| v.clone());
        answer.upgrade(upgraded_to.unwrap_or_else(|| HeaderValue::from_static("websocket")));
        if v5_as_v4 {
            answer.insert_header(("sec-websocket-protocol", V5));
        }
        let (from_backend, mut to_backend) = tokio::io::split(conn);
        let mut forwarding = payload.map(|mut payload| {
            actix_web::rt::spawn(async move {
                while let Some(Ok(chunk)) = payload.next().await {
                    if to_backend.write_all(&chunk).await.is_err() {
                        return;
                    }
                }
                let _ = to_backend.shutdown().await;
            })
        });
        // When the backend closes, the client's connection closes too: the stream ends in an
        // error (actix then drops the connection, whose request side is still open), and the
        // copy the other way stops.
        let closed = futures_util::stream::once(async move {
            if let Some(task) = forwarding.take() {
                task.abort();
            }
            Err::<Bytes, _>(std::io::Error::new(std::io::ErrorKind::ConnectionAborted, "the backend closed"))
        });
        let first = futures_util::stream::once(async move { Ok::<_, std::io::Error>(rest) });
        return Ok(answer.streaming(first.chain(read_stream(from_backend)).chain(closed)));
    }
    let bodiless = req.method() == actix_web::http::Method::HEAD
        || status.is_informational()
        || matches!(status, StatusCode::NO_CONTENT | StatusCode::NOT_MODIFIED);
    if bodiless {
        return Ok(answer.finish());
    }
    let body = if chunked_answer {
        dechunk(rest, conn)
    } else if let Some(len) = length {
        let first = futures_util::stream::once(async move { Ok::<_, std::io::Error>(rest) });
        let stream = first.chain(read_stream(conn)).boxed_local();
        if len <= MAX_BODY {
            // Read whole (an error from the backend), so it arrives with its length.
            return Ok(answer.body(stream_prefix(stream, len).await.map_err(|e| Unreachable(e.to_string()))?));
        }
        limited(stream, len)
    } else {
        let first = futures_util::stream::once(async move { Ok::<_, std::io::Error>(rest) });
        first.chain(read_stream(conn)).boxed_local()
    };
    Ok(answer.streaming(body))
}

/// The first `len` bytes of a stream, streamed; an end before them is an error.
fn limited(
    stream: futures_util::stream::LocalBoxStream<'static, Result<Bytes, std::io::Error>>,
    len: usize,
) -> futures_util::stream::LocalBoxStream<'static, Result<Bytes, std::io::Error>> {
    futures_util::stream::unfold((stream, len), |(mut stream, left)| async move {
        if left == 0 {
            return None;
        }
        match stream.next().await {
            Some(Ok(mut chunk)) => {
                chunk.truncate(left);
                let left = left - chunk.len();
                Some((Ok(chunk), (stream, left)))
            }
            Some(Err(e)) => Some((Err(e), (stream, 0))),
            None => Some((Err(truncated()), (stream, 0))),
        }
    })
    .boxed_local()
}

/// The error of a body that ended before its framing said it would.
fn truncated() -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "the backend's answer ended early")
}

/// What remains of a connection, as a stream of the chunks read.
fn read_stream<R: AsyncRead + Unpin + 'static>(
    reader: R,
) -> impl futures_util::Stream<Item = Result<Bytes, std::io::Error>> {
    futures_util::stream::unfold(reader, |mut reader| async move {
        let mut buf = BytesMut::with_capacity(16 << 10);
        match reader.read_buf(&mut buf).await {
            Ok(0) => None,
            Ok(_) => Some((Ok(buf.freeze()), reader)),
            Err(e) => Some((Err(e), reader)),
        }
    })
}

/// The first `len` bytes of a stream, read whole.
async fn stream_prefix(
    mut stream: futures_util::stream::LocalBoxStream<'static, Result<Bytes, std::io::Error>>,
    len: usize,
) -> Result<Bytes, std::io::Error> {
    let mut out = BytesMut::with_capacity(len);
    while out.len() < len {
        match stream.next().await {
            Some(Ok(chunk)) => out.extend_from_slice(&chunk),
            Some(Err(e)) => return Err(e),
            None => return Err(truncated()),
        }
    }
    out.truncate(len);
    Ok(out.freeze())
}

/// Where a chunked body's decoding stands.
struct Chunked<R> {
    buf: BytesMut,
    reader: R,
    /// Data bytes of the current chunk not yet passed on.
    left: usize,
    /// The CRLF after a chunk's data is still to be skipped.
    crlf: bool,
    done: bool,
}

/// A chunked body, decoded as it arrives (a chunk's data passed on as it comes, however large
/// the chunk): `rest` is what was read past the head. An end before the last chunk is an error.
fn dechunk<R: AsyncRead + Unpin + 'static>(
    rest: Bytes,
    reader: R,
) -> futures_util::stream::LocalBoxStream<'static, Result<Bytes, std::io::Error>> {
    let state = Chunked { buf: BytesMut::from(&rest[..]), reader, left: 0, crlf: false, done: false };
    let invalid = |why: &str| std::io::Error::new(std::io::ErrorKind::InvalidData, why.to_string());
    futures_util::stream::unfold(state, move |mut st| async move {
        if st.done {
            return None;
        }
        loop {
            if st.left > 0 && !st.buf.is_empty() {
                let n = st.left.min(st.buf.len());
                st.left -= n;
                st.crlf = st.left == 0;
                let data = st.buf.split_to(n).freeze();
                return Some((Ok(data), st));
            }
            if st.left == 0 && st.crlf && st.buf.len() >= 2 {
                let _ = st.buf.split_to(2);
                st.crlf = false;
                continue;
            }
            if st.left == 0 && !st.crlf {
                // A chunk's head: `<hex size>[;ext]\r\n`; size 0 ends the body.
                if let Some(line_end) = st.buf.windows(2).position(|w| w == b"\r\n") {
                    let text = String::from_utf8_lossy(&st.buf[..line_end]).to_string();
                    let _ = st.buf.split_to(line_end + 2);
                    match usize::from_str_radix(text.split(';').next().unwrap_or("").trim(), 16) {
                        Ok(0) => return None,
                        Ok(size) => {
                            st.left = size;
                            continue;
                        }
                        Err(_) => {
                            st.done = true;
                            return Some((Err(invalid("bad chunk size")), st));
                        }
                    }
                }
                if st.buf.len() > MAX_HEAD {
                    st.done = true;
                    return Some((Err(invalid("chunk head too long")), st));
                }
            }
            match st.reader.read_buf(&mut st.buf).await {
                Ok(0) => {
                    st.done = true;
                    return Some((Err(truncated()), st));
                }
                Err(e) => {
                    st.done = true;
                    return Some((Err(e), st));
                }
                Ok(_) => {}
            }
        }
    })
    .boxed_local()
}

/// Reads a response head after the bytes `read` already; returns its status, headers and the
/// bytes read past it.
async fn read_head(
    conn: &mut Box<dyn Stream>,
    address: &str,
    read: Bytes,
) -> Result<(StatusCode, Vec<(HeaderName, HeaderValue)>, Bytes), Unreachable> {
    let mut buf = BytesMut::with_capacity(4096);
    buf.extend_from_slice(&read);
    let end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i;
        }
        if buf.len() > MAX_HEAD {
            return Err(Unreachable(format!("{address} sent a response head over {MAX_HEAD} bytes")));
        }
        match conn.read_buf(&mut buf).await {
            Ok(0) => return Err(Unreachable(format!("{address} closed the connection before answering: EOF"))),
            Ok(_) => {}
            Err(e) => return Err(Unreachable(format!("reading from {address}: {e}"))),
        }
    };
    let head = buf.split_to(end + 4);
    let text = String::from_utf8_lossy(&head[..end]);
    let mut lines = text.split("\r\n");
    let status_line = lines.next().unwrap_or("");
    let code = status_line.split_whitespace().nth(1).and_then(|c| c.parse::<u16>().ok());
    let status = code
        .and_then(|c| StatusCode::from_u16(c).ok())
        .ok_or_else(|| Unreachable(format!("{address} answered {status_line:?}, not HTTP")))?;
    let mut headers = Vec::new();
    for line in lines {
        if let Some((name, value)) = line.split_once(':')
            && let (Ok(name), Ok(value)) =
                (HeaderName::try_from(name.trim().to_ascii_lowercase()), HeaderValue::from_str(value.trim()))
        {
            headers.push((name, value));
        }
    }
    Ok((status, headers, buf.freeze()))
}
