//! Each connection's first request head, read before actix reads it, so that a SPDY upgrade
//! reaches a handler.
//!
//! actix-http streams a request's bytes after its head to a handler only for a WebSocket
//! upgrade. kubectl's `port-forward`, and its `exec` and `attach` when WebSocket is refused,
//! upgrade to `SPDY/3.1`, which actix would answer and then read as the next request. So an
//! `Upgrade: SPDY/<version>` in the first head is handed to actix as `Upgrade: websocket`, and
//! the version is kept in the connection's data ([`SpdyUpgrade`]) for the relay to send on
//! (only that canonical spelling ever reaches the kubelet). client-go opens a fresh connection
//! for every SPDY upgrade, so the first head is the only one read; a SPDY upgrade later on a
//! connection (a proxy reusing connections) is refused, saying so.

use std::io;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll, ready};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// The longest first head read before it is handed on unread (kube's header limit is 1 MiB;
/// a SPDY upgrade's head is well under 8 KiB).
const MAX_FIRST_HEAD: usize = 64 << 10;

/// The upgrade a connection's first request asked for, when it was SPDY (`SPDY/3.1`).
#[derive(Clone, Default)]
pub struct SpdyUpgrade(Arc<OnceLock<String>>);

impl SpdyUpgrade {
    /// The `Upgrade` value the client sent, if it was SPDY.
    pub fn offered(&self) -> Option<&str> {
        self.0.get().map(String::as_str)
    }
}

/// The upgrade a request asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Upgrade {
    /// None.
    None,
    /// WebSocket.
    WebSocket,
    /// SPDY, whose bytes reach the handler: the version as the client named it (`SPDY/3.1`).
    Spdy(String),
    /// Anything else, as sent, including a SPDY upgrade that was not its connection's first
    /// request (actix would read its frames as requests).
    Other(String),
}

/// The upgrade `req` asks for. A request handed to actix as WebSocket whose connection noted a
/// SPDY upgrade is that SPDY upgrade: such a request's body runs to the connection's end, so
/// it is the connection's only request.
pub fn upgrade_of(req: &actix_web::HttpRequest) -> Upgrade {
    match req.headers().get("upgrade").map(|v| v.to_str().unwrap_or("")) {
        None => Upgrade::None,
        Some(u) if u.eq_ignore_ascii_case("websocket") => {
            match req.conn_data::<SpdyUpgrade>().and_then(SpdyUpgrade::offered) {
                Some(spdy) => Upgrade::Spdy(spdy.to_string()),
                None => Upgrade::WebSocket,
            }
        }
        Some(other) => Upgrade::Other(other.to_string()),
    }
}

/// A server's stream after TLS, whose first request head is read ahead.
pub struct FirstHead<T> {
    io: T,
    state: Ahead,
    spdy: SpdyUpgrade,
}

enum Ahead {
    /// Reading the first head.
    Reading(Vec<u8>),
    /// Giving it (perhaps rewritten) to the reader, from this offset.
    Replaying(Vec<u8>, usize),
    /// Done: reads go straight to the stream.
    Through,
}

impl<T> FirstHead<T> {
    /// Wraps a connection whose first head is still to be read.
    pub fn new(io: T) -> Self {
        FirstHead { io, state: Ahead::Reading(Vec::new()), spdy: SpdyUpgrade::default() }
    }

    /// Wraps a connection whose heads are left alone (HTTP/2, where there is no SPDY upgrade).
    pub fn through(io: T) -> Self {
        FirstHead { io, state: Ahead::Through, spdy: SpdyUpgrade::default() }
    }

    /// The stream underneath (the TLS session, for its client certificate).
    pub fn get_ref(&self) -> &T {
        &self.io
    }

    /// Where this connection's SPDY upgrade, if any, is noted.
    pub fn spdy(&self) -> SpdyUpgrade {
        self.spdy.clone()
    }
}

/// Where a head ends in `bytes` (just past its blank line), ending lines as actix's parser
/// does: at `\n`, with or without `\r` before it.
fn head_end(bytes: &[u8], from: usize) -> Option<usize> {
    let mut i = from;
    while let Some(at) = bytes[i..].iter().position(|b| *b == b'\n') {
        let lf = i + at;
        match bytes.get(lf + 1) {
            Some(b'\n') => return Some(lf + 2),
            Some(b'\r') if bytes.get(lf + 2) == Some(&b'\n') => return Some(lf + 3),
            _ => i = lf + 1,
        }
    }
    None
}

/// A SPDY version as client-go names it: `SPDY/<digits>.<digits>`, canonically spelled.
fn spdy_version(value: &str) -> Option<String> {
    let (name, version) = value.split_once('/')?;
    let (major, minor) = version.split_once('.')?;
    let digits = |s: &str| !s.is_empty() && s.len() <= 3 && s.bytes().all(|b| b.is_ascii_digit());
    (name.eq_ignore_ascii_case("spdy") && digits(major) && digits(minor)).then(|| format!("SPDY/{major}.{minor}"))
}

/// Rewrites the one `Upgrade: SPDY/<version>` line of a complete head to `Upgrade: websocket`,
/// returning the version. A head with a `Transfer-Encoding` (whose body actix would read
/// chunked, keeping the connection for more requests), with more than one `Upgrade`, or with
/// anything else as the upgrade is left as it is.
fn rewrite_spdy(head: &mut Vec<u8>) -> Option<String> {
    let text = std::str::from_utf8(head).ok()?;
    let mut found = None;
    let mut upgrades = 0;
    let mut start = text.find('\n')? + 1;
    while let Some(at) = text[start..].find('\n') {
        let end = start + at;
        let line = text[start..end].strip_suffix('\r').unwrap_or(&text[start..end]);
        if let Some((name, value)) = line.split_once(':') {
            let name = name.trim();
            if name.eq_ignore_ascii_case("transfer-encoding") {
                return None;
            }
            if name.eq_ignore_ascii_case("upgrade") {
                upgrades += 1;
                found = spdy_version(value.trim()).map(|v| (start, start + line.len(), v));
            }
        }
        start = end + 1;
    }
    let (from, to, version) = found.filter(|_| upgrades == 1)?;
    head.splice(from..to, b"Upgrade: websocket".iter().copied());
    Some(version)
}

impl<T: AsyncRead + Unpin> AsyncRead for FirstHead<T> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = &mut *self;
        loop {
            match &mut this.state {
                Ahead::Through => return Pin::new(&mut this.io).poll_read(cx, buf),
                Ahead::Replaying(data, at) => {
                    let n = (data.len() - *at).min(buf.remaining());
                    buf.put_slice(&data[*at..*at + n]);
                    *at += n;
                    if *at == data.len() {
                        this.state = Ahead::Through;
                    }
                    return Poll::Ready(Ok(()));
                }
                Ahead::Reading(read) => {
                    let mut chunk = [0u8; 4096];
                    let mut into = ReadBuf::new(&mut chunk);
                    ready!(Pin::new(&mut this.io).poll_read(cx, &mut into))?;
                    let got = into.filled();
                    let mut read = std::mem::take(read);
                    if got.is_empty() {
                        // The client closed: what was read goes on, then the end.
                        this.state = if read.is_empty() { Ahead::Through } else { Ahead::Replaying(read, 0) };
                        continue;
                    }
                    // Looked for from a little before the new bytes, in case the blank line
                    // straddles two reads.
                    let from = read.len().saturating_sub(2);
                    read.extend_from_slice(got);
                    match head_end(&read, from) {
                        Some(end) => {
                            let mut head: Vec<u8> = read.drain(..end).collect();
                            if let Some(offered) = rewrite_spdy(&mut head) {
                                let _ = this.spdy.0.set(offered);
                            }
                            head.extend_from_slice(&read);
                            this.state = Ahead::Replaying(head, 0);
                        }
                        None if read.len() > MAX_FIRST_HEAD => this.state = Ahead::Replaying(read, 0),
                        None => this.state = Ahead::Reading(read),
                    }
                }
            }
        }
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for FirstHead<T> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    /// Yields its bytes a few at a time, as a network read may.
    struct Trickle(Vec<u8>, usize);

    impl AsyncRead for Trickle {
        fn poll_read(mut self: Pin<&mut Self>, _: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
            let at = self.1;
            let n = (self.0.len() - at).min(3).min(buf.remaining());
            buf.put_slice(&self.0[at..at + n]);
            self.1 += n;
            Poll::Ready(Ok(()))
        }
    }

    async fn read_through(sent: &str) -> (String, Option<String>) {
        let mut conn = FirstHead::new(Trickle(sent.as_bytes().to_vec(), 0));
        let mut got = Vec::new();
        conn.read_to_end(&mut got).await.unwrap();
        (String::from_utf8(got).unwrap(), conn.spdy().offered().map(str::to_string))
    }

    #[tokio::test]
    async fn a_spdy_upgrade_reaches_actix_as_websocket_and_is_noted() {
        let head = "POST /api/v1/namespaces/default/pods/web/portforward HTTP/1.1\r\nHost: x\r\n\
                    Connection: Upgrade\r\nupgrade: SPDY/3.1\r\nX-Stream-Protocol-Version: portforward.k8s.io\r\n\r\n";
        let frames = "\u{80}\u{3}\u{0}\u{1}...";
        let (got, spdy) = read_through(&format!("{head}{frames}")).await;
        assert_eq!(got, format!("{}{frames}", head.replace("upgrade: SPDY/3.1", "Upgrade: websocket")));
        assert_eq!(spdy.as_deref(), Some("SPDY/3.1"));
    }

    #[tokio::test]
    async fn bare_line_feeds_end_lines_and_only_a_plain_version_is_kept() {
        let sent = "POST /exec HTTP/1.1\nupgrade: spdy/3.1\nConnection: Upgrade\n\nframes";
        let (got, spdy) = read_through(sent).await;
        assert_eq!(got, "POST /exec HTTP/1.1\nUpgrade: websocket\nConnection: Upgrade\n\nframes");
        assert_eq!(spdy.as_deref(), Some("SPDY/3.1"));
        // A second request hidden after bare line feeds ends the head there: it is body bytes,
        // and what is kept is the version alone.
        let sent = "POST /exec HTTP/1.1\r\nUpgrade: SPDY/3.1\n\nPOST /run/ns/pod/c HTTP/1.1\nHost: x\r\n\r\n";
        let (got, spdy) = read_through(sent).await;
        assert!(got.starts_with("POST /exec HTTP/1.1\r\nUpgrade: websocket\n\nPOST /run"), "{got:?}");
        assert_eq!(spdy.as_deref(), Some("SPDY/3.1"));
    }

    #[tokio::test]
    async fn doubtful_spdy_heads_are_left_for_actix_to_refuse() {
        for sent in [
            "POST /exec HTTP/1.1\r\nUpgrade: SPDY/3.1 X-Injected: 1\r\n\r\n",
            "POST /exec HTTP/1.1\r\nUpgrade: SPDY/3.1, websocket\r\n\r\n",
            "POST /exec HTTP/1.1\r\nUpgrade: SPDY/3.1\r\nUpgrade: SPDY/3.1\r\n\r\n",
            // Read chunked, the body would end and the connection carry more requests.
            "POST /exec HTTP/1.1\r\nUpgrade: SPDY/3.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        ] {
            assert_eq!(read_through(sent).await, (sent.to_string(), None), "{sent:?}");
        }
    }

    #[tokio::test]
    async fn other_heads_and_later_requests_pass_unchanged() {
        for sent in [
            "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Upgrade: SPDY/3.1\r\n\r\n",
            "GET /api/v1/pods/x/exec HTTP/1.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n",
            // Only the first head is looked at.
            "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\nGET /x HTTP/1.1\r\nUpgrade: SPDY/3.1\r\n\r\n",
            // A client that closes before its head ends.
            "GET /healthz HTTP/1.1\r\nUpgrade: SPDY/3.1",
            "",
        ] {
            assert_eq!(read_through(sent).await, (sent.to_string(), None), "{sent:?}");
        }
    }
}
