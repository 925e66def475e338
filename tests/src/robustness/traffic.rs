//! The clients of a robustness run: concurrent random creates, guarded updates, deletes,
//! consistent gets, consistent and `resourceVersion=0` lists, and watches of every kind, sent
//! through the real HTTPS API of the server under test, each recorded with its call and return
//! times and what it saw.
//!
//! Everything here runs on one actix thread (awc's client is not `Send`); the clients are tasks
//! of it, so a recorder shared as `Rc<RefCell<_>>` needs no lock.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use serde_json::{Value, json};

use super::history::{History, Item, Operation, Request, Response, WatchEnd, WatchEvent, WatchStart, WatchStream};

/// The namespace a run writes in.
pub const NAMESPACE: &str = "default";

/// How long a client waits for an answer before it counts the outcome as unknown.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// A small deterministic generator (xorshift64*): runs are repeatable from their seed, and the
/// harness needs no more than uniform picks.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator from `seed` (any value; zero is replaced).
    pub fn new(seed: u64) -> Self {
        Rng(seed.max(1))
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in `0..n` (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }

    /// True with probability `percent`/100.
    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

/// What the clients share: the server's address, the clock, the record, and when to stop.
pub struct Traffic {
    /// `https://127.0.0.1:<port>`.
    pub base: String,
    /// TLS settings trusting the server's CA and presenting the admin certificate.
    pub tls: Arc<rustls::ClientConfig>,
    /// Time zero of every recorded time.
    pub started: Instant,
    /// Objects the clients touch: `k-00` … .
    pub keys: usize,
    /// Everything recorded so far.
    pub history: RefCell<History>,
    /// Set when the run's traffic should end.
    pub stopping: Cell<bool>,
    /// The newest revision any client saw, where watches from a past revision start.
    pub seen_revision: Cell<u64>,
    /// Answers no fault explains (a 400 to a well-formed write, say).
    pub unexpected: RefCell<Vec<String>>,
}

impl Traffic {
    /// Nanoseconds since the start.
    fn now(&self) -> u64 {
        self.started.elapsed().as_nanos() as u64
    }

    fn client(&self, timeout: Duration) -> awc::Client {
        let mut tls = (*self.tls).clone();
        tls.alpn_protocols = vec![b"http/1.1".to_vec()];
        awc::Client::builder()
            .connector(awc::Connector::new().rustls_0_23(Arc::new(tls)).timeout(Duration::from_secs(3)))
            .timeout(timeout)
            .finish()
    }

    fn url(&self, rest: &str) -> String {
        format!("{}/api/v1/namespaces/{NAMESPACE}/configmaps{rest}", self.base)
    }

    fn saw(&self, rv: u64) {
        if rv > self.seen_revision.get() {
            self.seen_revision.set(rv);
        }
    }

    fn record(&self, op: Operation) {
        self.history.borrow_mut().operations.push(op);
    }
}

/// The name of key `i`.
pub fn key_name(i: usize) -> String {
    format!("k-{i:02}")
}

/// The label group of a key, fixed by its name so every create of it carries the same one.
pub fn group_of(key: &str) -> u8 {
    (key.bytes().map(u32::from).sum::<u32>() % 3) as u8
}

fn rv_of(object: &Value) -> Option<u64> {
    object["metadata"]["resourceVersion"].as_str()?.parse().ok()
}

fn value_of(object: &Value) -> String {
    object["data"]["v"].as_str().unwrap_or_default().to_string()
}

/// A status code and JSON body, or `None` when no answer came (a connection error or a
/// timeout: the request may still take effect).
async fn send(client: &awc::Client, method: &str, url: &str, body: Option<&Value>) -> Option<(u16, Value)> {
    let method = awc::http::Method::from_bytes(method.as_bytes()).expect("method");
    let request = client.request(method, url);
    let sent = match body {
        Some(b) => request.send_json(b).await,
        None => request.send().await,
    };
    let mut response = sent.ok()?;
    let bytes = response.body().limit(64 << 20).await.ok()?;
    Some((response.status().as_u16(), serde_json::from_slice(&bytes).unwrap_or(Value::Null)))
}

/// One client: sends random requests one at a time until the run stops.
pub async fn client(traffic: Rc<Traffic>, id: u32, mut rng: Rng) {
    let http = traffic.client(REQUEST_TIMEOUT);
    // The resourceVersion this client last saw per key, for its guarded writes.
    let mut known: HashMap<String, u64> = HashMap::new();
    let mut sequence = 0u64;
    while !traffic.stopping.get() {
        let key = key_name(rng.below(traffic.keys as u64) as usize);
        sequence += 1;
        let value = format!("c{id}-{sequence}");
        let roll = rng.below(100);
        let request = match roll {
            0..15 => Request::create(&key, &value, group_of(&key)),
            15..45 => match known.get(&key) {
                Some(&rv) => Request::update(&key, &value, rv),
                None => Request::get(&key),
            },
            45..55 => Request::delete(&key, if rng.chance(50) { known.get(&key).copied() } else { None }),
            55..80 => Request::get(&key),
            80..90 => Request::List { consistent: true },
            _ => Request::List { consistent: false },
        };
        let call = traffic.now();
        let answer = perform(&traffic, &http, &request).await;
        let ret = traffic.now();
        let Some(response) = answer else { continue };
        match (&request, &response) {
            (_, Response::Created { rv } | Response::Updated { rv } | Response::Found { rv, .. }) => {
                known.insert(key.clone(), *rv);
                traffic.saw(*rv);
            }
            (_, Response::NotFound | Response::Deleted { .. }) => {
                known.remove(&key);
            }
            (_, Response::Listed { revision, items }) => {
                traffic.saw(*revision);
                for item in items {
                    known.insert(item.key.clone(), item.rv);
                }
            }
            _ => {}
        }
        let ret = (response != Response::Unknown).then_some(ret);
        traffic.record(Operation::new(id, call, ret, request, response));
        // A short pause keeps the history at a size the checker decides quickly.
        actix_rt::time::sleep(Duration::from_millis(rng.below(4))).await;
    }
}

/// Sends one request and reads what it answered; `None` when the answer says nothing about
/// the store (a 429 refused before any work, a failed read).
async fn perform(traffic: &Traffic, http: &awc::Client, request: &Request) -> Option<Response> {
    let answer = match request {
        Request::Create { key, value, group } => {
            let body = json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": key, "labels": {"g": group.to_string()}}, "data": {"v": value}});
            send(http, "POST", &traffic.url(""), Some(&body)).await
        }
        Request::Update { key, value, expected_rv } => {
            let body = json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": key, "labels": {"g": group_of(key).to_string()},
                             "resourceVersion": expected_rv.to_string()},
                "data": {"v": value}});
            send(http, "PUT", &traffic.url(&format!("/{key}")), Some(&body)).await
        }
        Request::Delete { key, expected_rv } => {
            let body = expected_rv.map(|rv| {
                json!({"apiVersion": "v1", "kind": "DeleteOptions", "preconditions": {"resourceVersion": rv.to_string()}})
            });
            send(http, "DELETE", &traffic.url(&format!("/{key}")), body.as_ref()).await
        }
        Request::Get { key } => send(http, "GET", &traffic.url(&format!("/{key}")), None).await,
        Request::List { consistent } => {
            let query = if *consistent { "" } else { "?resourceVersion=0" };
            send(http, "GET", &traffic.url(query), None).await
        }
    };
    let Some((code, body)) = answer else {
        return request.is_write().then_some(Response::Unknown);
    };
    let reason = body["reason"].as_str().unwrap_or_default();
    let response = match (request, code) {
        (Request::Create { .. }, 201) => Response::Created { rv: rv_of(&body)? },
        (Request::Update { .. }, 200) => Response::Updated { rv: rv_of(&body)? },
        // The object a delete answers carries the deletion's revision, as kube's does.
        (Request::Delete { .. }, 200) => Response::Deleted { rv: rv_of(&body) },
        (Request::Get { .. }, 200) => Response::Found { value: value_of(&body), rv: rv_of(&body)? },
        (Request::List { .. }, 200) => {
            let items = body["items"].as_array()?;
            let items = items
                .iter()
                .filter_map(|o| Some(Item::new(o["metadata"]["name"].as_str()?, value_of(o), rv_of(o)?)))
                .collect();
            Response::Listed { revision: body["metadata"]["resourceVersion"].as_str()?.parse().ok()?, items }
        }
        (_, 404) if reason == "NotFound" => Response::NotFound,
        (Request::Create { .. }, 409) if reason == "AlreadyExists" => Response::AlreadyExists,
        (_, 409) if reason == "Conflict" => Response::Conflict,
        (_, 410) if !request.is_write() => Response::Gone,
        // Refused before any work was done.
        (_, 429) => return None,
        // A write may have taken effect; a read that failed says nothing (storage down
        // during a fault).
        (_, code) if request.is_write() && code >= 500 => Response::Unknown,
        (_, code) if code >= 500 => return None,
        (_, code) => {
            // Neither the model nor a fault explains it: the run reports it.
            traffic.unexpected.borrow_mut().push(format!("{request:?} answered {code}: {body}"));
            return None;
        }
    };
    Some(response)
}

/// One watcher: opens watches one after another until the run stops, each from a random
/// start, selector and bookmark setting; after a stream ends it often resumes from the last
/// revision it saw, which is what the Resumable guarantee is about.
pub async fn watcher(traffic: Rc<Traffic>, id: u32, mut rng: Rng) {
    let http = traffic.client(Duration::from_secs(3600));
    let mut last_seen: Option<u64> = None;
    while !traffic.stopping.get() {
        let start = match (last_seen, rng.below(10)) {
            (Some(rv), 0..6) => WatchStart::FromRevision(rv),
            (_, 0..3) => WatchStart::FromNow,
            (_, 3..6) => WatchStart::InitialEvents,
            _ => match traffic.seen_revision.get() {
                0 => WatchStart::FromNow,
                rv => WatchStart::FromRevision(rv.saturating_sub(rng.below(20))),
            },
        };
        let mut stream = WatchStream::new(id, traffic.now(), start);
        stream.group = rng.chance(50).then(|| rng.below(3) as u8);
        stream.bookmarks = start == WatchStart::InitialEvents || rng.chance(50);
        let seconds = 2 + rng.below(8);
        watch_once(&traffic, &http, &mut stream, seconds).await;
        stream.ret = Some(traffic.now());
        last_seen = stream.events.last().map(|e| e.rv).or(last_seen);
        if stream.end == WatchEnd::Gone {
            last_seen = None;
        }
        let opened = !stream.events.is_empty() || stream.end != WatchEnd::Broken;
        traffic.history.borrow_mut().watches.push(stream);
        if !opened {
            // The server is down: try again shortly rather than spin.
            actix_rt::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

/// Runs one watch request, filling `stream` with what it delivers and how it ends.
async fn watch_once(traffic: &Traffic, http: &awc::Client, stream: &mut WatchStream, seconds: u64) {
    let mut query = format!("?watch=1&timeoutSeconds={seconds}&allowWatchBookmarks={}", stream.bookmarks);
    match stream.start {
        WatchStart::FromNow => {}
        WatchStart::FromRevision(rv) => query += &format!("&resourceVersion={rv}"),
        WatchStart::InitialEvents => query += "&sendInitialEvents=true&resourceVersionMatch=NotOlderThan",
    }
    if let Some(g) = stream.group {
        query += &format!("&labelSelector=g%3D{g}");
    }
    stream.end = WatchEnd::Broken;
    let Ok(mut response) = http.get(traffic.url(&query)).send().await else { return };
    match response.status().as_u16() {
        200 => {}
        410 => {
            stream.end = WatchEnd::Gone;
            return;
        }
        _ => return,
    }
    let mut pending: Vec<u8> = Vec::new();
    // The server ends the stream at `timeoutSeconds`; a stream that outlives it by far is
    // stuck behind a fault, and counts as broken.
    let guard = actix_rt::time::sleep(Duration::from_secs(seconds + 20));
    tokio::pin!(guard);
    loop {
        let chunk = tokio::select! {
            chunk = response.next() => chunk,
            () = &mut guard => return,
        };
        match chunk {
            None => {
                stream.end = WatchEnd::Closed;
                return;
            }
            Some(Err(_)) => return,
            Some(Ok(bytes)) => pending.extend_from_slice(&bytes),
        }
        while let Some(newline) = pending.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = pending.drain(..=newline).collect();
            let Ok(event) = serde_json::from_slice::<Value>(&line) else { continue };
            match parse_event(&event) {
                Ok(e) => {
                    traffic.saw(e.rv);
                    stream.events.push(e);
                }
                Err(end) => {
                    stream.end = end;
                    return;
                }
            }
        }
    }
}

/// A watch event as recorded, or how an ERROR event ends the stream.
fn parse_event(event: &Value) -> Result<WatchEvent, WatchEnd> {
    let object = &event["object"];
    let rv = rv_of(object).ok_or(WatchEnd::Broken);
    let key = object["metadata"]["name"].as_str().unwrap_or_default();
    match event["type"].as_str() {
        Some("ADDED") => Ok(WatchEvent::added(key, value_of(object), rv?)),
        Some("MODIFIED") => Ok(WatchEvent::modified(key, value_of(object), rv?)),
        Some("DELETED") => Ok(WatchEvent::deleted(key, value_of(object), rv?)),
        Some("BOOKMARK") => {
            let end = object["metadata"]["annotations"]["k8s.io/initial-events-end"] == "true";
            Ok(if end { WatchEvent::initial_events_end(rv?) } else { WatchEvent::bookmark(rv?) })
        }
        Some("ERROR") if object["code"] == 410 => Err(WatchEnd::Gone),
        _ => Err(WatchEnd::Broken),
    }
}
