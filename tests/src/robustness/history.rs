//! What a robustness run records: every request a client sent with what it saw, and every watch
//! stream with the events it delivered. Plain serde types, so the harness builds them directly
//! and a history can be written to a JSON file and checked again later.

use std::fmt;
use std::io;
use std::path::Path;

use serde::{Deserialize, Serialize};

/// Everything the clients of one run did and saw.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct History {
    /// Requests, in any order (the checker sorts by time).
    pub operations: Vec<Operation>,
    /// Watch streams, in any order.
    #[serde(default)]
    pub watches: Vec<WatchStream>,
}

impl History {
    /// Reads a history written by [`History::save`], to check a failed run again.
    pub fn load(path: &Path) -> io::Result<Self> {
        let text = std::fs::read(path)?;
        serde_json::from_slice(&text).map_err(io::Error::other)
    }

    /// Writes the history as JSON, so a failed run can be checked again without the fleet.
    pub fn save(&self, path: &Path) -> io::Result<()> {
        std::fs::write(path, serde_json::to_vec(self).map_err(io::Error::other)?)
    }
}

/// One request and what its client saw. Times are nanoseconds since the harness started, from
/// one monotonic clock, so `ret` of one operation compares with `call` of another.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Operation {
    /// The client that sent it (a client sends one request at a time).
    pub client: u32,
    /// When the request was sent.
    pub call: u64,
    /// When the answer arrived; `None` when none did, so the effect is unknown.
    pub ret: Option<u64>,
    /// What was asked.
    pub request: Request,
    /// What was answered.
    pub response: Response,
}

impl Operation {
    /// An operation, for the harness and tests.
    pub fn new(client: u32, call: u64, ret: Option<u64>, request: Request, response: Response) -> Self {
        Self { client, call, ret, request, response }
    }

    /// Whether the client learned the outcome: an answer arrived and it was not a 5xx or
    /// timeout. Otherwise a write may or may not have taken effect.
    pub fn outcome_known(&self) -> bool {
        self.ret.is_some() && self.response != Response::Unknown
    }

    /// The end of the operation's time window, `u64::MAX` when it never returned.
    pub fn ret_or_max(&self) -> u64 {
        self.ret.unwrap_or(u64::MAX)
    }
}

/// A request to the ConfigMaps of the run's namespace; a key is an object's name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Request {
    /// POST; the object carries the label `g=<group>` for its whole life.
    Create {
        /// The object's name.
        key: String,
        /// Unique across the run, so it names this write wherever it is seen.
        value: String,
        /// The label selector group.
        group: u8,
    },
    /// PUT guarded by `metadata.resourceVersion`.
    Update {
        /// The object's name.
        key: String,
        /// Unique across the run.
        value: String,
        /// The resourceVersion the client expects the object to have.
        expected_rv: u64,
    },
    /// DELETE, optionally with `preconditions.resourceVersion`.
    Delete {
        /// The object's name.
        key: String,
        /// The precondition, if any.
        expected_rv: Option<u64>,
    },
    /// A consistent GET (resourceVersion unset).
    Get {
        /// The object's name.
        key: String,
    },
    /// A list of the namespace: `consistent` is resourceVersion unset, otherwise
    /// resourceVersion=0 (any snapshot, possibly stale).
    List {
        /// Whether the list must be linearizable.
        consistent: bool,
    },
}

impl Request {
    /// A create request.
    pub fn create(key: impl Into<String>, value: impl Into<String>, group: u8) -> Self {
        Self::Create { key: key.into(), value: value.into(), group }
    }

    /// A guarded update request.
    pub fn update(key: impl Into<String>, value: impl Into<String>, expected_rv: u64) -> Self {
        Self::Update { key: key.into(), value: value.into(), expected_rv }
    }

    /// A delete request.
    pub fn delete(key: impl Into<String>, expected_rv: Option<u64>) -> Self {
        Self::Delete { key: key.into(), expected_rv }
    }

    /// A consistent get.
    pub fn get(key: impl Into<String>) -> Self {
        Self::Get { key: key.into() }
    }

    /// The object the request is about; `None` for a list.
    pub fn key(&self) -> Option<&str> {
        match self {
            Self::Create { key, .. } | Self::Update { key, .. } | Self::Delete { key, .. } | Self::Get { key } => {
                Some(key)
            }
            Self::List { .. } => None,
        }
    }

    /// The value a create or update writes.
    pub fn value(&self) -> Option<&str> {
        match self {
            Self::Create { value, .. } | Self::Update { value, .. } => Some(value),
            _ => None,
        }
    }

    /// Whether the request may change the store.
    pub fn is_write(&self) -> bool {
        matches!(self, Self::Create { .. } | Self::Update { .. } | Self::Delete { .. })
    }
}

/// What the client saw.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Response {
    /// 201 with the new object's resourceVersion.
    Created {
        /// The create's revision.
        rv: u64,
    },
    /// 200 to an update.
    Updated {
        /// The update's revision.
        rv: u64,
    },
    /// 200 to a delete.
    Deleted {
        /// The deletion's revision, when the server reports it.
        rv: Option<u64>,
    },
    /// 200 to a get.
    Found {
        /// The object's value.
        value: String,
        /// The object's resourceVersion.
        rv: u64,
    },
    /// 404: definitely not applied.
    NotFound,
    /// 409 to a create: definitely not applied.
    AlreadyExists,
    /// 409 to a guarded write: definitely not applied.
    Conflict,
    /// 200 to a list.
    Listed {
        /// The list's resourceVersion.
        revision: u64,
        /// The objects, in any order.
        items: Vec<Item>,
    },
    /// 410 to a read (its revision was compacted).
    Gone,
    /// No answer, a 5xx or a timeout: the effect is unknown.
    Unknown,
}

/// An object in a list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Item {
    /// The object's name.
    pub key: String,
    /// Its value.
    pub value: String,
    /// Its resourceVersion (its last write's revision).
    pub rv: u64,
}

impl Item {
    /// An item.
    pub fn new(key: impl Into<String>, value: impl Into<String>, rv: u64) -> Self {
        Self { key: key.into(), value: value.into(), rv }
    }
}

/// One watch request and the events it delivered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WatchStream {
    /// The client that opened it.
    pub client: u32,
    /// When the request was sent.
    pub call: u64,
    /// When the stream ended, if it did before the harness stopped recording.
    pub ret: Option<u64>,
    /// Where it starts.
    pub start: WatchStart,
    /// The label selector `g=<group>`, or every object.
    pub group: Option<u8>,
    /// allowWatchBookmarks.
    pub bookmarks: bool,
    /// The events as received, in order.
    pub events: Vec<WatchEvent>,
    /// How it ended.
    pub end: WatchEnd,
}

impl WatchStream {
    /// A stream of every object without bookmarks and no events yet; set the other fields.
    pub fn new(client: u32, call: u64, start: WatchStart) -> Self {
        Self {
            client,
            call,
            ret: None,
            start,
            group: None,
            bookmarks: false,
            events: Vec::new(),
            end: WatchEnd::Closed,
        }
    }
}

/// The resourceVersion a watch starts from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum WatchStart {
    /// No resourceVersion: the current state as ADDED events (at a revision the stream does not
    /// name), then changes after it.
    FromNow,
    /// Changes strictly after this revision.
    FromRevision(u64),
    /// sendInitialEvents=true: the state at some revision R as ADDED events, a bookmark with
    /// `initial_events_end` at R, then changes after R.
    InitialEvents,
}

/// How a watch stream ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum WatchEnd {
    /// The server ended it or the harness stopped.
    Closed,
    /// 410 Expired: the start revision was compacted (allowed).
    Gone,
    /// The connection was lost.
    Broken,
}

/// A watch event's type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum EventKind {
    /// ADDED.
    Added,
    /// MODIFIED.
    Modified,
    /// DELETED.
    Deleted,
    /// BOOKMARK.
    Bookmark,
}

/// One event as delivered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WatchEvent {
    /// Its type.
    pub kind: EventKind,
    /// The object's name; empty for a bookmark.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub key: String,
    /// The object's value (for DELETED, its last value); empty for a bookmark.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub value: String,
    /// The object's resourceVersion, or the bookmark's.
    pub rv: u64,
    /// A bookmark annotated `k8s.io/initial-events-end`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub initial_events_end: bool,
}

impl WatchEvent {
    fn object(kind: EventKind, key: impl Into<String>, value: impl Into<String>, rv: u64) -> Self {
        Self { kind, key: key.into(), value: value.into(), rv, initial_events_end: false }
    }

    /// An ADDED event.
    pub fn added(key: impl Into<String>, value: impl Into<String>, rv: u64) -> Self {
        Self::object(EventKind::Added, key, value, rv)
    }

    /// A MODIFIED event.
    pub fn modified(key: impl Into<String>, value: impl Into<String>, rv: u64) -> Self {
        Self::object(EventKind::Modified, key, value, rv)
    }

    /// A DELETED event carrying the object's last value and the deletion's revision.
    pub fn deleted(key: impl Into<String>, value: impl Into<String>, rv: u64) -> Self {
        Self::object(EventKind::Deleted, key, value, rv)
    }

    /// A plain BOOKMARK.
    pub fn bookmark(rv: u64) -> Self {
        Self::object(EventKind::Bookmark, "", "", rv)
    }

    /// The BOOKMARK that ends a watch's initial events.
    pub fn initial_events_end(rv: u64) -> Self {
        Self { initial_events_end: true, ..Self::bookmark(rv) }
    }
}

impl fmt::Display for Operation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ret = self.ret.map_or("?".to_string(), |r| r.to_string());
        write!(f, "client {} [{}..{}] ", self.client, self.call, ret)?;
        match &self.request {
            Request::Create { key, value, group } => write!(f, "create {key}={value} g={group}")?,
            Request::Update { key, value, expected_rv } => write!(f, "update {key}={value} if rv={expected_rv}")?,
            Request::Delete { key, expected_rv: Some(rv) } => write!(f, "delete {key} if rv={rv}")?,
            Request::Delete { key, expected_rv: None } => write!(f, "delete {key}")?,
            Request::Get { key } => write!(f, "get {key}")?,
            Request::List { consistent } => write!(f, "list{}", if *consistent { "" } else { " rv=0" })?,
        }
        match &self.response {
            Response::Created { rv } | Response::Updated { rv } | Response::Deleted { rv: Some(rv) } => {
                write!(f, " -> rv {rv}")
            }
            Response::Found { value, rv } => write!(f, " -> {value} rv {rv}"),
            Response::Listed { revision, items } => write!(f, " -> {} items at rv {revision}", items.len()),
            other => write!(f, " -> {other:?}"),
        }
    }
}
