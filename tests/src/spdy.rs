//! The kubelet's side of SPDY/3.1, as far as the fake kubelet needs it: streams opened by the
//! client, answered, and data carried on them.
//!
//! A frame is 8 bytes of head and a payload. A control frame's head starts with the bit set,
//! the version (3) and its type; a data frame's with its stream's id; both end with a flags
//! byte (`FIN` is 1) and the payload's length in 24 bits.
//!
//! Header blocks are zlib-compressed with SPDY's dictionary. The fake never reads the client's:
//! it tells streams apart by the order client-go opens them (always the error stream first).
//! The blocks it writes hold no header; each is a stored (uncompressed) deflate block and the
//! empty one a sync flush writes, which a reader primed with the dictionary reads like any
//! other.

use std::collections::HashMap;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

const SYN_STREAM: u16 = 1;
const SYN_REPLY: u16 = 2;
const PING: u16 = 6;
const FIN: u8 = 1;

/// What a stream carries, by the order client-go opens them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// The error stream: a Status at the end.
    Error,
    /// The command's input.
    Stdin,
    /// Its output.
    Stdout,
    /// Its error output.
    Stderr,
    /// A forwarded connection's bytes (port-forward).
    Data,
}

/// What the fake does with the streams.
pub enum Serve {
    /// `exec` or `attach` of `cat`: stdin is written back on stdout; when it ends, stdout and
    /// stderr end and the error stream carries a `Success` Status.
    Cat {
        /// The streams, in the order they are opened.
        opened: Vec<Role>,
    },
    /// `portForward`: each connection is an error stream and a data stream; what arrives on
    /// the data stream is answered with `prefix` and the same bytes.
    Echo {
        /// What each answer starts with.
        prefix: String,
    },
}

/// Serves the SPDY session on `conn` (after the 101) until the client closes it.
pub async fn serve<S: AsyncRead + AsyncWrite + Unpin>(conn: &mut S, serve: Serve) -> std::io::Result<()> {
    let mut session = Session { streams: HashMap::new(), opened: 0, replied: false };
    loop {
        let mut head = [0u8; 8];
        if conn.read_exact(&mut head).await.is_err() {
            return Ok(());
        }
        let flags = head[4];
        let length = u32::from_be_bytes([0, head[5], head[6], head[7]]) as usize;
        let mut payload = vec![0u8; length];
        conn.read_exact(&mut payload).await?;
        if head[0] & 0x80 != 0 {
            match u16::from_be_bytes([head[2], head[3]]) {
                SYN_STREAM => {
                    let id = stream_id(&payload[..4]);
                    let role = match &serve {
                        Serve::Cat { opened } => opened.get(session.opened).copied().unwrap_or(Role::Error),
                        Serve::Echo { .. } => [Role::Error, Role::Data][session.opened % 2],
                    };
                    session.opened += 1;
                    session.streams.insert(id, role);
                    let reply = session.reply(id);
                    conn.write_all(&reply).await?;
                }
                PING => {
                    conn.write_all(&head).await?;
                    conn.write_all(&payload).await?;
                }
                // RST_STREAM, SETTINGS, WINDOW_UPDATE, GOAWAY, HEADERS: nothing to do.
                _ => {}
            }
            conn.flush().await?;
            continue;
        }
        let id = stream_id(&head[..4]);
        let fin = flags & FIN != 0;
        match (session.streams.get(&id).copied(), &serve) {
            (Some(Role::Stdin), Serve::Cat { .. }) => {
                if let Some(stdout) = session.find(Role::Stdout)
                    && !payload.is_empty()
                {
                    conn.write_all(&data(stdout, 0, &payload)).await?;
                }
                if fin {
                    for role in [Role::Stdout, Role::Stderr] {
                        if let Some(id) = session.find(role) {
                            conn.write_all(&data(id, FIN, b"")).await?;
                        }
                    }
                    if let Some(error) = session.find(Role::Error) {
                        conn.write_all(&data(error, FIN, br#"{"metadata":{},"status":"Success"}"#)).await?;
                    }
                }
            }
            (Some(Role::Data), Serve::Echo { prefix }) => {
                if !payload.is_empty() {
                    let mut answer = prefix.as_bytes().to_vec();
                    answer.extend_from_slice(&payload);
                    conn.write_all(&data(id, 0, &answer)).await?;
                }
                if fin {
                    // The connection's error stream was opened just before its data stream.
                    conn.write_all(&data(id, FIN, b"")).await?;
                    conn.write_all(&data(id - 2, FIN, b"")).await?;
                }
            }
            _ => {}
        }
        conn.flush().await?;
    }
}

struct Session {
    streams: HashMap<u32, Role>,
    opened: usize,
    /// Whether a header block was written yet (the first one starts the zlib stream).
    replied: bool,
}

impl Session {
    fn find(&self, role: Role) -> Option<u32> {
        self.streams.iter().filter(|(_, r)| **r == role).map(|(id, _)| *id).max()
    }

    /// A SYN_REPLY with no headers for stream `id`.
    fn reply(&mut self, id: u32) -> Vec<u8> {
        let mut block = Vec::new();
        if !self.replied {
            // zlib's header: deflate, 32 KiB window, no preset-dictionary flag, check bits.
            block.extend_from_slice(&[0x78, 0x01]);
            self.replied = true;
        }
        // No headers (a 32-bit count of 0), as one stored block that is not the last.
        let headers = [0u8; 4];
        block.push(0x00);
        block.extend_from_slice(&(headers.len() as u16).to_le_bytes());
        block.extend_from_slice(&(!(headers.len() as u16)).to_le_bytes());
        block.extend_from_slice(&headers);
        // An empty stored block, as a sync flush ends each block: a reader then hands over the
        // headers without asking for bytes past the frame.
        block.extend_from_slice(&[0x00, 0x00, 0x00, 0xff, 0xff]);
        let mut payload = id.to_be_bytes().to_vec();
        payload.extend_from_slice(&block);
        control(SYN_REPLY, 0, &payload)
    }
}

fn stream_id(bytes: &[u8]) -> u32 {
    u32::from_be_bytes([bytes[0] & 0x7f, bytes[1], bytes[2], bytes[3]])
}

fn control(kind: u16, flags: u8, payload: &[u8]) -> Vec<u8> {
    let mut frame = vec![0x80, 0x03];
    frame.extend_from_slice(&kind.to_be_bytes());
    frame.push(flags);
    frame.extend_from_slice(&(payload.len() as u32).to_be_bytes()[1..]);
    frame.extend_from_slice(payload);
    frame
}

fn data(id: u32, flags: u8, payload: &[u8]) -> Vec<u8> {
    let mut frame = id.to_be_bytes().to_vec();
    frame.push(flags);
    frame.extend_from_slice(&(payload.len() as u32).to_be_bytes()[1..]);
    frame.extend_from_slice(payload);
    frame
}
