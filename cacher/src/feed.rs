//! What a cacher follows when its resource's storage lives in another process.
//!
//! A storage stage process serves the resources assigned to it (`apiserver stage`), and
//! gateways keep their own cache of them: a gateway's cacher of a remote resource lists and
//! watches through a [`RemoteFeed`], a [`Storage`] whose reads cross to the stage process, and
//! that process answers with [`FeedService`] from its own storage. One watch per resource per
//! gateway crosses the network; the gateway's cacher encodes each event once and fans it out to
//! its watchers, so event bytes cross once per gateway, not once per watcher.
//!
//! The feed carries the read half of the storage contract: revisions, gets, lists with paging,
//! counts, and watches with progress notifications. Writes never go through it: they are
//! messages to the storage stage itself, which admits and validates them.
//!
//! Wire: `POST /feed/call` with a [`FeedCall`] answers a `Result<FeedReply, StorageError>`;
//! `POST /feed/watch` with a [`WatchCall`] answers a stream whose first frame is
//! `Result<u64, StorageError>` (the watch's id) and whose next frames are [`WatchItem`]s;
//! `POST /feed/progress` with the id asks that watch for a progress notification. All in
//! rmp-serde.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use actors::Deadline;
use actors::remote::{Incoming, Peer, PeerError, StageService, answer, stream_answer};
use async_trait::async_trait;
use bytes::Bytes;
use dashmap::DashMap;
use serde::{Deserialize, Serialize};
use storage::router::StorageRouter;
use storage::{
    Expect, KeyValue, ListOptions, ListResult, ProgressRequester, Revision, Storage, StorageError, WatchItem,
    WatchStream,
};
use tokio::sync::mpsc;

/// How long a feed read may take.
const CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// Watch items buffered between the network and the cacher.
const WATCH_BUFFER: usize = 1024;

/// A read through the feed.
#[derive(Debug, Serialize, Deserialize)]
pub enum FeedCall {
    /// [`Storage::current_revision`].
    CurrentRevision,
    /// [`Storage::compacted_revision`].
    CompactedRevision,
    /// [`Storage::get`].
    Get(String),
    /// [`Storage::list`].
    List(String, ListOptions),
    /// [`Storage::count`].
    Count(String),
}

/// A feed read's answer.
#[derive(Debug, Serialize, Deserialize)]
pub enum FeedReply {
    /// A revision.
    Revision(Revision),
    /// A key, if present, and the revision it was read at.
    Get(Option<KeyValue>, Revision),
    /// A page.
    List(ListResult),
    /// A count.
    Count(u64),
}

/// Opens a watch.
#[derive(Debug, Serialize, Deserialize)]
pub struct WatchCall {
    /// Under this prefix.
    pub prefix: String,
    /// Changes after this revision.
    pub after: Revision,
}

// ---------------------------------------------------------------- serving side

/// Serves the feed of the key prefixes a stage process owns, from its storage.
pub struct FeedService {
    router: Arc<StorageRouter>,
    owned: Vec<String>,
    watches: DashMap<u64, Arc<dyn ProgressRequester>>,
    next: AtomicU64,
}

impl FeedService {
    /// Serves the keys under `owned` prefixes (`/registry/events/`), read through `router`.
    pub fn new(router: Arc<StorageRouter>, owned: Vec<String>) -> Arc<Self> {
        Arc::new(FeedService { router, owned, watches: DashMap::new(), next: AtomicU64::new(1) })
    }

    /// Adds the feed's routes to `service`.
    pub fn register(self: &Arc<Self>, service: &mut StageService) {
        let feed = self.clone();
        service.route(
            "/feed/call",
            Arc::new(move |incoming: Incoming| {
                let feed = feed.clone();
                Box::pin(async move {
                    let reply = match rmp_serde::from_slice::<FeedCall>(&incoming.body) {
                        Ok(call) => feed.call(call).await,
                        Err(e) => Err(refused(format!("undecodable feed call: {e}"))),
                    };
                    answer(200, "application/msgpack", rmp_serde::to_vec_named(&reply).unwrap_or_default())
                })
            }),
        );
        let feed = self.clone();
        service.route(
            "/feed/watch",
            Arc::new(move |incoming: Incoming| {
                let feed = feed.clone();
                Box::pin(async move {
                    let (tx, rx) = mpsc::channel(WATCH_BUFFER);
                    match rmp_serde::from_slice::<WatchCall>(&incoming.body) {
                        Ok(call) => feed.watch(call, tx).await,
                        Err(e) => {
                            let first: Result<u64, StorageError> = Err(refused(format!("undecodable watch: {e}")));
                            let _ = tx.send(Bytes::from(rmp_serde::to_vec_named(&first).unwrap_or_default())).await;
                        }
                    }
                    stream_answer(rx)
                })
            }),
        );
        let feed = self.clone();
        service.route(
            "/feed/progress",
            Arc::new(move |incoming: Incoming| {
                let feed = feed.clone();
                Box::pin(async move {
                    let id: u64 = rmp_serde::from_slice(&incoming.body).unwrap_or(0);
                    match feed.watches.get(&id) {
                        Some(w) => {
                            w.request_progress();
                            answer(200, "text/plain", "ok")
                        }
                        None => answer(404, "text/plain", "no such watch"),
                    }
                })
            }),
        );
    }

    fn backend(&self, prefix: &str) -> Result<Arc<dyn Storage>, StorageError> {
        if !self.owned.iter().any(|o| prefix.starts_with(o.as_str())) {
            return Err(refused(format!("{prefix} is not stored by this stage process")));
        }
        Ok(self.router.backend(prefix).clone())
    }

    async fn call(&self, call: FeedCall) -> Result<FeedReply, StorageError> {
        // Revisions are the backend's: a stage process owns one backend per shard.
        let any = || self.backend(self.owned.first().map(String::as_str).unwrap_or("/"));
        Ok(match call {
            FeedCall::CurrentRevision => FeedReply::Revision(any()?.current_revision().await?),
            FeedCall::CompactedRevision => FeedReply::Revision(any()?.compacted_revision().await?),
            FeedCall::Get(key) => {
                let (kv, rev) = self.backend(&key)?.get(&key).await?;
                FeedReply::Get(kv, rev)
            }
            FeedCall::List(prefix, options) => FeedReply::List(self.backend(&prefix)?.list(&prefix, options).await?),
            FeedCall::Count(prefix) => FeedReply::Count(self.backend(&prefix)?.count(&prefix).await?),
        })
    }

    /// Opens the storage watch and pumps it into `tx` until either side ends.
    async fn watch(self: &Arc<Self>, call: WatchCall, tx: mpsc::Sender<Bytes>) {
        let opened = match self.backend(&call.prefix) {
            Ok(backend) => backend.watch(&call.prefix, call.after).await,
            Err(e) => Err(e),
        };
        let WatchStream { mut items, progress } = match opened {
            Ok(stream) => stream,
            Err(e) => {
                let _ = tx.send(encode(&Err::<u64, _>(e))).await;
                return;
            }
        };
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        self.watches.insert(id, progress);
        let feed = self.clone();
        actors::remote::spawn(async move {
            if tx.send(encode(&Ok::<u64, StorageError>(id))).await.is_ok() {
                loop {
                    tokio::select! {
                        item = items.recv() => {
                            let Some(item) = item else { break };
                            if tx.send(encode(&item)).await.is_err() {
                                break;
                            }
                        }
                        // The gateway went away: release the storage watch now, not at the next event.
                        () = tx.closed() => break,
                    }
                }
            }
            feed.watches.remove(&id);
        });
    }
}

fn encode<T: Serialize>(value: &T) -> Bytes {
    Bytes::from(rmp_serde::to_vec_named(value).unwrap_or_default())
}

fn refused(message: String) -> StorageError {
    StorageError::Unavailable { backend: "feed".into(), message }
}

// ---------------------------------------------------------------- following side

/// The storage of resources a stage process serves, as a gateway's cacher reads it.
pub struct RemoteFeed {
    peer: Peer,
    name: String,
}

impl RemoteFeed {
    /// Reads through `peer`, named `name` (`storage@events`) in errors.
    pub fn new(peer: Peer, name: &str) -> Arc<Self> {
        Arc::new(RemoteFeed { peer, name: name.to_string() })
    }

    fn unavailable(&self, message: String) -> StorageError {
        StorageError::Unavailable { backend: self.describe(), message }
    }

    fn unreachable(&self, message: String) -> StorageError {
        StorageError::StageUnreachable { stage: self.name.clone(), message }
    }

    async fn call(&self, call: FeedCall) -> Result<FeedReply, StorageError> {
        let body = rmp_serde::to_vec_named(&call).map_err(|e| self.unavailable(e.to_string()))?;
        match self.peer.post("/feed/call", body, Deadline::after(CALL_TIMEOUT)).await {
            Ok((200, bytes)) => rmp_serde::from_slice::<Result<FeedReply, StorageError>>(&bytes)
                .map_err(|e| self.unavailable(format!("undecodable answer: {e}")))?,
            Ok((status, bytes)) => {
                Err(self.unavailable(format!("answered {status}: {}", String::from_utf8_lossy(&bytes))))
            }
            Err(PeerError::Deadline) => Err(self.unreachable(format!("no answer within {CALL_TIMEOUT:?}"))),
            Err(PeerError::Unreachable(why)) => Err(self.unreachable(why)),
        }
    }

    fn unexpected(&self) -> StorageError {
        self.unavailable("unexpected answer".into())
    }
}

/// Asks the stage process for a progress notification on one of its watches.
struct RemoteProgress {
    peer: Peer,
    id: u64,
}

impl ProgressRequester for RemoteProgress {
    fn request_progress(&self) {
        let (peer, body) = (self.peer.clone(), rmp_serde::to_vec_named(&self.id).unwrap_or_default());
        actors::remote::spawn(async move {
            let _ = peer.post("/feed/progress", body, Deadline::after(CALL_TIMEOUT)).await;
        });
    }
}

#[async_trait]
impl Storage for RemoteFeed {
    fn describe(&self) -> String {
        format!("{} ({})", self.name, self.peer.health().url)
    }

    async fn current_revision(&self) -> Result<Revision, StorageError> {
        match self.call(FeedCall::CurrentRevision).await? {
            FeedReply::Revision(r) => Ok(r),
            _ => Err(self.unexpected()),
        }
    }

    async fn get(&self, key: &str) -> Result<(Option<KeyValue>, Revision), StorageError> {
        match self.call(FeedCall::Get(key.to_string())).await? {
            FeedReply::Get(kv, r) => Ok((kv, r)),
            _ => Err(self.unexpected()),
        }
    }

    async fn list(&self, prefix: &str, opts: ListOptions) -> Result<ListResult, StorageError> {
        match self.call(FeedCall::List(prefix.to_string(), opts)).await? {
            FeedReply::List(l) => Ok(l),
            _ => Err(self.unexpected()),
        }
    }

    async fn count(&self, prefix: &str) -> Result<u64, StorageError> {
        match self.call(FeedCall::Count(prefix.to_string())).await? {
            FeedReply::Count(n) => Ok(n),
            _ => Err(self.unexpected()),
        }
    }

    async fn put(&self, key: &str, _: Bytes, _: Expect) -> Result<KeyValue, StorageError> {
        Err(self.unavailable(format!("{key} is written by its storage stage, not through the feed")))
    }

    async fn put_with_ttl(&self, key: &str, _: Bytes, _: Expect, _: Duration) -> Result<KeyValue, StorageError> {
        Err(self.unavailable(format!("{key} is written by its storage stage, not through the feed")))
    }

    async fn delete(&self, key: &str, _: Option<Revision>) -> Result<(KeyValue, Revision), StorageError> {
        Err(self.unavailable(format!("{key} is deleted by its storage stage, not through the feed")))
    }

    async fn watch(&self, prefix: &str, after: Revision) -> Result<WatchStream, StorageError> {
        let body = rmp_serde::to_vec_named(&WatchCall { prefix: prefix.to_string(), after })
            .map_err(|e| self.unavailable(e.to_string()))?;
        let (status, mut frames) = self.peer.stream("/feed/watch", body).await.map_err(|e| match e {
            PeerError::Unreachable(why) => self.unreachable(why),
            PeerError::Deadline => self.unreachable("the watch did not open".into()),
        })?;
        if status != 200 {
            return Err(self.unavailable(format!("the watch answered {status}")));
        }
        let id = match frames.next().await {
            Some(Ok(first)) => rmp_serde::from_slice::<Result<u64, StorageError>>(&first)
                .map_err(|e| self.unavailable(format!("undecodable watch: {e}")))??,
            Some(Err(why)) => return Err(self.unavailable(why)),
            None => return Err(self.unavailable("the watch ended before it opened".into())),
        };
        let (tx, rx) = mpsc::channel(WATCH_BUFFER);
        let broken = self.describe();
        actors::remote::spawn(async move {
            loop {
                let item = match frames.next().await {
                    Some(Ok(bytes)) => match rmp_serde::from_slice::<WatchItem>(&bytes) {
                        Ok(item) => item,
                        Err(e) => WatchItem::Error(StorageError::Unavailable {
                            backend: broken.clone(),
                            message: format!("undecodable watch item: {e}"),
                        }),
                    },
                    // A stream that ends or breaks is an error to the cacher, which lists and
                    // watches again once the process answers.
                    Some(Err(why)) => WatchItem::Error(StorageError::Unavailable {
                        backend: broken.clone(),
                        message: format!("the watch broke: {why}"),
                    }),
                    None => WatchItem::Error(StorageError::Unavailable {
                        backend: broken.clone(),
                        message: "the watch ended".into(),
                    }),
                };
                let end = matches!(item, WatchItem::Error(_));
                if tx.send(item).await.is_err() || end {
                    break;
                }
            }
        });
        Ok(WatchStream { items: rx, progress: Arc::new(RemoteProgress { peer: self.peer.clone(), id }) })
    }

    async fn compact(&self, _: Revision) -> Result<(), StorageError> {
        Err(self.unavailable("compaction is the storage stage process's".into()))
    }

    async fn compacted_revision(&self) -> Result<Revision, StorageError> {
        match self.call(FeedCall::CompactedRevision).await? {
            FeedReply::Revision(r) => Ok(r),
            _ => Err(self.unexpected()),
        }
    }
}
