//! A plain-HTTP test server for the callers' unit tests (feature `testing`).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::mpsc;

/// One request as a test server saw it.
#[derive(Debug)]
pub struct Seen {
    /// `POST /audit HTTP/1.1`.
    pub request_line: String,
    /// Header names in lower case, with their values.
    pub headers: Vec<(String, String)>,
    /// The request body.
    pub body: Vec<u8>,
}

/// A plain-HTTP server on 127.0.0.1 answering each request with the next of `replies`
/// (status, JSON body), then closing; returns its URL and what it saw.
pub fn serve(replies: Vec<(u16, &'static str)>) -> (String, mpsc::Receiver<Seen>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/audit", listener.local_addr().unwrap());
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for (status, body) in replies {
            let Ok((stream, _)) = listener.accept() else { return };
            let mut reader = BufReader::new(stream);
            let mut request_line = String::new();
            reader.read_line(&mut request_line).unwrap();
            let mut headers = Vec::new();
            loop {
                let mut line = String::new();
                reader.read_line(&mut line).unwrap();
                let line = line.trim_end();
                if line.is_empty() {
                    break;
                }
                let (k, v) = line.split_once(':').unwrap();
                headers.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
            }
            let len = headers.iter().find(|(k, _)| k == "content-length").map_or(0, |(_, v)| v.parse().unwrap());
            let mut payload = vec![0; len];
            reader.read_exact(&mut payload).unwrap();
            let mut stream = reader.into_inner();
            let reply = format!(
                "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            stream.write_all(reply.as_bytes()).unwrap();
            let _ = tx.send(Seen { request_line: request_line.trim_end().to_string(), headers, body: payload });
        }
    });
    (url, rx)
}
