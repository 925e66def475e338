//! Watches on etcd: one etcd watch stream per [`Storage::watch`](crate::Storage::watch), and a
//! task that translates its answers into a bounded channel.
//!
//! # Ordered progress notifications
//! kube's cacher serves consistent reads by asking for a progress notification and waiting until
//! its watch has delivered everything up to it, so a notification must follow every event at or
//! below its revision. etcd's own answer to a progress request is ordered only since 3.4.31 and
//! 3.5.13 (etcd issue 15220): earlier releases, such as the 3.4.23 CI installs, send the current
//! revision at once, ahead of events still queued or still being replayed. So progress is
//! established here with etcd's ordering guarantees instead, which hold on every release:
//!
//! - every watcher of one gRPC stream shares one server-side queue, in which a synced watcher's
//!   events are queued when they commit, and a replaying watcher's when etcd's sync loop (every
//!   100 ms, one pass at a time) catches it up;
//! - every revision above 1 has at least one event somewhere in the keyspace.
//!
//! To report progress, the task reads the current revision `P` with a linearizable read on the
//! watch's own member, which answers once that member has applied `P`. If the watch has already
//! delivered an event at or above `P`, or started after it, `P` is reported at once. Otherwise
//! it adds a *marker* watcher to the same stream: all keys from `P - 1`. etcd answers the marker
//! only from a sync pass after it was created, with an event at `P` (or a compaction notice if
//! that history is gone), so when the marker's answer arrives, everything queued for the watch
//! before that pass has arrived too. (Read on another member, `P` could be ahead of the watch's
//! member: the marker would then start in etcd's synced group and be answered as the member
//! applies `P - 1`, ahead of the watch's own events at `P - 1` and `P`.) One marker suffices for a watch known
//! to be synced; a watch that may still be replaying (any watch until markers first established
//! its progress) takes two markers one after the other, since a replay may share the first
//! marker's pass in either order but is finished before the second's. A marker is cancelled as
//! soon as it answers, so its all-keys traffic lasts about one round trip; a notification costs
//! one read plus up to one (or two) of etcd's 100 ms sync periods.
//!
//! Limits: a watcher that etcd parks as a victim (its server-side queue full), or whose replay
//! takes more than one sync pass (over 1000 revisions of its events, or over 512 watchers
//! replaying at once on that etcd), may still be replaying when the second marker answers.
//!
//! # Failure
//! A full channel ends the watch with `Unavailable` (the watcher fell behind); a broken stream
//! (etcd restarted, network) or a cancellation ends it with `Unavailable`, a compaction with
//! `Compacted`: the consumer re-lists or re-watches. A broken stream sets its member aside, so
//! the consumer's next watch goes to another. Every channel has one slot more than its capacity for
//! that final item.

use std::sync::Arc;

use etcd_client::{EventType as EtcdEventType, WatchOptions, WatchRequestSender, WatchResponse, WatchResponseStream};
use tokio::sync::{Notify, mpsc};

use super::members::Attempt;
use super::{Failure, HEADER_KEY, Inner, header_revision, key_value};
use crate::metered::resource_type;
use crate::metrics::TERMINATED_WATCHERS_TOTAL;
use crate::{Event, EventType, KeyValue, ProgressRequester, Revision, StorageError, WatchItem, WatchStream};

/// Asks a watch task for a progress notification.
struct ProgressSignal {
    /// Wakes the task. A `Notify` because requests coalesce: one stored permit stands for every
    /// request made before the task looks, and the notification it triggers answers them all.
    wake: Notify,
}

impl ProgressRequester for ProgressSignal {
    fn request_progress(&self) {
        self.wake.notify_one();
    }
}

/// Starts a watch of `prefix` for changes after `after` (0: from now).
pub(super) async fn start(inner: &Arc<Inner>, prefix: &str, after: Revision) -> Result<WatchStream, StorageError> {
    let fail = |message: String| inner.unavailable("watch", prefix, message);
    if after > 0 {
        // etcd reports a compacted start only later, on the stream; a read at `after` fails now.
        let check = etcd_client::GetOptions::new().with_count_only().with_revision(after as i64);
        let check = inner.range(if prefix.is_empty() { HEADER_KEY } else { prefix.as_bytes() }, check);
        match check.await {
            Ok(_) | Err(Failure::FutureRevision) => {}
            Err(f) => return Err(inner.revision_error("watch", prefix, after, after + 1, f).await),
        }
    }
    let start_revision = if after > 0 { after as i64 + 1 } else { 0 };
    let options =
        WatchOptions::new().with_prefix().with_prev_key().with_progress_notify().with_start_revision(start_revision);
    // Opened and confirmed on one member, as one call: a member that cannot be reached is
    // set aside and the next one tried.
    let (member, opened) = inner
        .call_on(true, |m| {
            let (mut client, options) = (m.watch.clone(), options.clone());
            async move {
                let mut stream = client.watch(prefix, Some(options)).await?;
                let created = stream.message().await?;
                Ok((stream, created))
            }
        })
        .await;
    let (stream, created) = match opened {
        Ok((stream, Some(created))) if created.created() && !created.canceled() => (stream, created),
        Ok((_, Some(refused))) => return Err(fail(format!("etcd refused the watch: {}", refused.cancel_reason()))),
        Ok((_, None)) => return Err(fail("etcd closed the watch stream before creating the watch".into())),
        Err(f) => return Err(inner.failed("watch", prefix, f)),
    };
    let (requests, responses) = stream.split();
    let capacity = inner.options.watch_capacity.max(1);
    let (tx, items) = mpsc::channel(capacity + 1);
    let signal = Arc::new(ProgressSignal { wake: Notify::new() });
    let task = WatchTask {
        inner: Arc::clone(inner),
        member,
        prefix: prefix.to_string(),
        id: created.watch_id(),
        requests,
        tx,
        capacity,
        // A watch from now delivers events above the revision it was created at.
        delivered: if after > 0 { after } else { header_revision(created.header()) },
        synced: false,
        marker: None,
    };
    tokio::spawn(task.run(responses, Arc::clone(&signal)));
    Ok(WatchStream { items, progress: signal })
}

/// A progress notification being established with marker watchers.
struct Marker {
    /// The revision to report: the current one when progress was asked for.
    revision: Revision,
    /// The etcd id of the marker now in flight, once etcd confirmed creating it.
    id: Option<i64>,
    /// Markers still to be answered, this one included.
    rounds: u8,
}

/// The task serving one watch.
struct WatchTask {
    /// The store's client and error naming.
    inner: Arc<Inner>,
    /// The member the stream is on, set aside if the stream breaks.
    member: usize,
    /// The watched prefix.
    prefix: String,
    /// etcd's id of the watch on its stream.
    id: i64,
    /// Creates and cancels markers on the watch's stream.
    requests: WatchRequestSender,
    /// The watch's items. Bounded, and only `try_send`-ed to: a full channel cuts the watcher
    /// off instead of buffering without bound.
    tx: mpsc::Sender<WatchItem>,
    /// The advertised capacity of `tx` (it has one slot more, for the final error).
    capacity: usize,
    /// Every event of the watch up to this revision has been delivered.
    delivered: Revision,
    /// etcd has synced the watch (markers established its progress once), so one marker
    /// suffices.
    synced: bool,
    /// The progress notification in flight, if any.
    marker: Option<Marker>,
}

impl WatchTask {
    /// Translates etcd's answers until the stream breaks, the watch ends, or its receiver is
    /// dropped (which drops the stream and so cancels the watch on etcd).
    async fn run(mut self, mut responses: WatchResponseStream, signal: Arc<ProgressSignal>) {
        loop {
            let open = tokio::select! {
                biased;
                () = self.tx.closed() => false,
                response = responses.message() => match response {
                    Ok(Some(response)) => self.handle(response).await,
                    Ok(None) => {
                        self.inner.members.down(self.member, "it closed a watch stream");
                        self.end(self.unavailable("etcd closed the watch stream".into()))
                    }
                    Err(e) => {
                        if !matches!(super::attempt(&e), Attempt::Answered(_)) {
                            self.inner.members.down(self.member, "a watch stream broke");
                        }
                        self.end(self.unavailable(super::describe(&e)))
                    }
                },
                () = signal.wake.notified(), if self.marker.is_none() => self.start_progress().await,
            };
            if !open {
                return;
            }
        }
    }

    /// Handles one answer from the stream; returns whether the watch stays open.
    async fn handle(&mut self, response: WatchResponse) -> bool {
        if response.watch_id() == self.id {
            return self.handle_own(&response);
        }
        let Some(marker) = self.marker.as_mut() else { return true }; // a cancelled marker's leftovers
        match marker.id {
            None if response.created() => {
                if response.canceled() {
                    return self
                        .end(self.unavailable(format!("etcd refused a marker watch: {}", response.cancel_reason())));
                }
                marker.id = Some(response.watch_id());
                true
            }
            Some(id)
                if id == response.watch_id() && (!response.events().is_empty() || response.compact_revision() > 0) =>
            {
                marker.rounds -= 1;
                let (revision, rounds) = (marker.revision, marker.rounds);
                marker.id = None;
                let cancelled = response.compact_revision() > 0 || self.requests.cancel(id).await.is_ok();
                if !cancelled {
                    return self.end(self.unavailable("the watch stream closed".into()));
                }
                if rounds > 0 {
                    return self.send_marker(revision).await;
                }
                self.marker = None;
                self.synced = true;
                tracing::trace!(
                    prefix = self.prefix,
                    revision,
                    delivered = self.delivered,
                    "progress: markers answered"
                );
                self.progress(revision)
            }
            _ => true,
        }
    }

    /// Handles an answer for the watch itself.
    fn handle_own(&mut self, response: &WatchResponse) -> bool {
        if response.compact_revision() > 0 {
            let compacted = self.inner.observe_compacted(response.compact_revision() as Revision);
            return self.end(StorageError::Compacted { requested: self.delivered, compacted });
        }
        if response.canceled() {
            return self.end(self.unavailable(format!("etcd cancelled the watch: {}", response.cancel_reason())));
        }
        if response.events().is_empty() {
            // etcd's periodic progress notification, which is queued in order with events.
            if response.created() {
                return true;
            }
            let revision = header_revision(response.header());
            tracing::trace!(prefix = self.prefix, revision, delivered = self.delivered, "etcd progress notification");
            return self.progress(revision);
        }
        for event in response.events() {
            let Some(event) = event_of(event) else { continue };
            let revision = event.kv.mod_revision;
            if revision <= self.delivered {
                tracing::warn!(
                    prefix = self.prefix,
                    revision,
                    delivered = self.delivered,
                    "event at or below a revision already reported"
                );
            }
            if !self.deliver(WatchItem::Event(event)) {
                return false;
            }
            self.delivered = self.delivered.max(revision);
        }
        true
    }

    /// Starts answering a progress request (see the module doc).
    async fn start_progress(&mut self) -> bool {
        let revision = match self.inner.current_revision_on(self.member).await {
            Ok(revision) => revision,
            Err(e) => return self.end(e),
        };
        if revision <= self.delivered {
            tracing::trace!(prefix = self.prefix, revision, delivered = self.delivered, "progress: already delivered");
            return self.progress(revision);
        }
        self.marker = Some(Marker { revision, id: None, rounds: if self.synced { 1 } else { 2 } });
        self.send_marker(revision).await
    }

    /// Adds a marker watcher for `revision` to the stream.
    async fn send_marker(&mut self, revision: Revision) -> bool {
        // From `revision - 1`: the event at `revision` answers, or if its history was compacted
        // (even a compaction at exactly `revision`, which drops a delete there), the notice does.
        let options = WatchOptions::new().with_all_keys().with_start_revision(revision as i64 - 1);
        if self.requests.watch(HEADER_KEY, Some(options)).await.is_err() {
            return self.end(self.unavailable("the watch stream closed".into()));
        }
        true
    }

    /// Delivers a progress notification.
    fn progress(&mut self, revision: Revision) -> bool {
        self.delivered = self.delivered.max(revision);
        self.deliver(WatchItem::Progress(revision))
    }

    /// Sends `item` if the channel has room beyond the slot reserved for the final error;
    /// otherwise ends the watch as fallen behind. Returns whether the watch stays open.
    fn deliver(&self, item: WatchItem) -> bool {
        if self.tx.capacity() > 1 {
            return self.tx.try_send(item).is_ok();
        }
        metrics::counter!(TERMINATED_WATCHERS_TOTAL, "resource" => resource_type(&self.prefix)).increment(1);
        self.end(self.unavailable(format!("watcher fell behind: {} items were waiting unread", self.capacity)))
    }

    /// Ends the watch with `error` (into the reserved slot); returns false.
    fn end(&self, error: StorageError) -> bool {
        let _ = self.tx.try_send(WatchItem::Error(error));
        false
    }

    /// The error ending this watch.
    fn unavailable(&self, message: String) -> StorageError {
        self.inner.unavailable("watch", &self.prefix, message)
    }
}

/// An etcd watch event as ours. A delete's key-value is the value before it with the delete's
/// revision, as the embedded store reports it (etcd sends only the key and revision).
fn event_of(event: &etcd_client::Event) -> Option<Event> {
    let kv = event.kv()?;
    let prev = event.prev_kv().cloned().map(key_value);
    Some(match event.event_type() {
        EtcdEventType::Put => {
            let kind = if kv.create_revision() == kv.mod_revision() { EventType::Added } else { EventType::Modified };
            Event { kind, kv: key_value(kv.clone()), prev }
        }
        EtcdEventType::Delete => {
            let before =
                prev.clone().unwrap_or_else(|| KeyValue { value: Default::default(), ..key_value(kv.clone()) });
            Event {
                kind: EventType::Deleted,
                kv: KeyValue { mod_revision: kv.mod_revision() as Revision, ..before },
                prev,
            }
        }
    })
}
