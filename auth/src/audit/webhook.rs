//! The webhook backend (`--audit-webhook-config-file`): events are POSTed in batches, as an
//! `audit.k8s.io/v1` `EventList`, to the server a kubeconfig names.
//!
//! A batch is sent when it holds `--audit-webhook-batch-max-size` events, or
//! `--audit-webhook-batch-max-wait` after its first event, whichever comes first ([`Batcher`]).
//! Batches are sent one at a time, in order, by one task on the audit arbiter ([`run_sender`]);
//! a failed POST (no answer, or a status other than 2xx) is retried as kube's generic webhook
//! retries it: five attempts, waiting `--audit-webhook-initial-backoff` and then 1.5 times longer
//! each time, with up to 20% jitter. A batch that still fails is dropped and its events are
//! counted in `apiserver_audit_error_total{plugin="webhook"}`.
//!
//! While a batch is being retried, the next ones wait in a bounded queue; a batch finding it
//! full is dropped and counted as `plugin="buffered"`, like any event the audit buffer sheds.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::event::Event;
use webhook_client::WebhookClient;

use crate::metrics::AUDIT_ERROR_TOTAL;

/// How long one POST may take, as kube's webhook client's request timeout.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// Attempts per batch, as kube's `DefaultRetryBackoffWithInitialDelay` (`Steps: 5`).
const ATTEMPTS: u32 = 5;
/// The growth of the wait between attempts (`Factor: 1.5`).
const BACKOFF_FACTOR: f64 = 1.5;
/// The most random extra wait, as a fraction of the wait (`Jitter: 0.2`).
const JITTER: f64 = 0.2;

/// How the webhook backend batches and retries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WebhookOptions {
    /// The most events in one POST (`--audit-webhook-batch-max-size`).
    pub batch_max_size: usize,
    /// The longest an event waits for its batch to fill (`--audit-webhook-batch-max-wait`).
    pub batch_max_wait: Duration,
    /// The wait before the first retry (`--audit-webhook-initial-backoff`).
    pub initial_backoff: Duration,
    /// Batches waiting while one is sent; past it batches are dropped.
    pub queued_batches: usize,
}

/// The `EventList` body of one POST.
pub fn event_list(events: &[Event]) -> Value {
    json!({"kind": "EventList", "apiVersion": "audit.k8s.io/v1", "metadata": {}, "items": events})
}

/// The batch being filled. Each batch has a generation, so a max-wait timer set for one batch
/// knows, when it fires, whether that batch was already sent for being full.
#[derive(Debug, Default)]
pub struct Batcher {
    pending: Vec<Event>,
    max_size: usize,
    generation: u64,
}

impl Batcher {
    /// An empty batcher sending batches of at most `max_size` events.
    pub fn new(max_size: usize) -> Batcher {
        Batcher { pending: Vec::new(), max_size: max_size.max(1), generation: 0 }
    }

    /// Adds an event. Returns the batch if it is now full, and whether this event started a
    /// new batch (the caller then arms the max-wait timer for [`Batcher::generation`]).
    pub fn push(&mut self, event: Event) -> (Option<Vec<Event>>, bool) {
        let started = self.pending.is_empty();
        self.pending.push(event);
        let full = (self.pending.len() >= self.max_size).then(|| self.take()).flatten();
        (full, started)
    }

    /// The batch being filled, if any, ending it.
    pub fn take(&mut self) -> Option<Vec<Event>> {
        if self.pending.is_empty() {
            return None;
        }
        self.generation += 1;
        Some(std::mem::take(&mut self.pending))
    }

    /// The current batch's generation.
    pub fn generation(&self) -> u64 {
        self.generation
    }
}

/// Hands a finished batch to the sender, or drops it (counted) if the sender's queue is full.
pub fn enqueue(queue: &mpsc::Sender<Vec<Event>>, batch: Vec<Event>) {
    let n = batch.len() as u64;
    match queue.try_send(batch) {
        Ok(()) => {}
        Err(mpsc::error::TrySendError::Full(_)) => {
            metrics::counter!(AUDIT_ERROR_TOTAL, "plugin" => "buffered").increment(n);
            tracing::warn!(events = n, "audit webhook queue full: batch dropped");
        }
        Err(mpsc::error::TrySendError::Closed(_)) => {
            metrics::counter!(AUDIT_ERROR_TOTAL, "plugin" => "webhook").increment(n);
        }
    }
}

/// Sends queued batches in order until the queue closes and is drained. Runs on an actix
/// arbiter: the webhook client's awc client is `!Send`.
pub async fn run_sender(client: WebhookClient, mut batches: mpsc::Receiver<Vec<Event>>, initial_backoff: Duration) {
    while let Some(batch) = batches.recv().await {
        if let Err(error) = send_batch(&client, &batch, initial_backoff).await {
            metrics::counter!(AUDIT_ERROR_TOTAL, "plugin" => "webhook").increment(batch.len() as u64);
            tracing::error!(server = client.server(), events = batch.len(), %error, "audit webhook batch dropped");
        }
    }
}

/// POSTs one batch, retrying every failure with backoff; the last failure is returned.
pub async fn send_batch(client: &WebhookClient, batch: &[Event], initial_backoff: Duration) -> Result<(), String> {
    let body = event_list(batch);
    let mut wait = initial_backoff;
    let mut attempt = 1;
    loop {
        let error = match client.post_json(&body, REQUEST_TIMEOUT).await {
            Ok((status, _)) if (200..300).contains(&status) => return Ok(()),
            Ok((status, reply)) => format!("the server answered {status}: {reply}"),
            Err(e) => e,
        };
        if attempt == ATTEMPTS {
            return Err(error);
        }
        tracing::debug!(attempt, %error, "audit webhook failed, retrying");
        tokio::time::sleep(jittered(wait)).await;
        wait = wait.mul_f64(BACKOFF_FACTOR);
        attempt += 1;
    }
}

/// `wait` plus up to 20% more. The clock's nanoseconds are random enough to keep many servers'
/// retries apart, and need no random number generator.
fn jittered(wait: Duration) -> Duration {
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.subsec_nanos());
    wait + wait.mul_f64(JITTER * f64::from(nanos) / 1e9)
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use chrono::Utc;

    use super::*;
    use crate::Attributes;
    use crate::audit::policy::Level;
    use webhook_client::testing::serve;

    fn event(id: &str) -> Event {
        Event::received(Level::Metadata, id, &Attributes::default(), "/", vec![], "", Utc::now())
    }

    pub(crate) fn client_for(url: &str, dir: &Path) -> WebhookClient {
        let kc = dir.join("webhook.kubeconfig");
        std::fs::write(&kc, format!("clusters:\n- name: a\n  cluster: {{server: \"{url}\"}}\n")).unwrap();
        WebhookClient::from_kubeconfig(&kc).unwrap()
    }

    #[test]
    fn batches_end_when_full_and_count_generations() {
        let mut b = Batcher::new(2);
        assert!(b.push(event("1")).1, "the first event starts a batch");
        let (full, started) = b.push(event("2"));
        assert_eq!((full.map(|f| f.len()), started), (Some(2), false));
        assert_eq!(b.generation(), 1);
        assert!(b.take().is_none(), "nothing pending");
        b.push(event("3"));
        assert_eq!(b.take().map(|t| t.len()), Some(1));
        assert_eq!(b.generation(), 2);
    }

    #[test]
    fn the_body_is_an_event_list() {
        let v = event_list(&[event("a")]);
        assert_eq!((v["kind"].as_str(), v["apiVersion"].as_str()), (Some("EventList"), Some("audit.k8s.io/v1")));
        assert_eq!(v["metadata"], json!({}));
        assert_eq!(v["items"][0]["auditID"], "a");
        let j = jittered(Duration::from_millis(100));
        assert!(j >= Duration::from_millis(100) && j <= Duration::from_millis(120), "{j:?}");
    }

    #[actix::test]
    async fn failures_are_retried_until_the_server_accepts() {
        let (url, seen) = serve(vec![(500, "{}"), (503, "{}"), (200, "")]);
        let dir = tempfile::tempdir().unwrap();
        let client = client_for(&url, dir.path());
        send_batch(&client, &[event("a"), event("b")], Duration::from_millis(5)).await.unwrap();
        // The server reports a request just after answering it: wait for each report.
        let bodies: Vec<Value> = (0..3)
            .map(|_| serde_json::from_slice(&seen.recv_timeout(Duration::from_secs(5)).unwrap().body).unwrap())
            .collect();
        assert!(bodies.iter().all(|b| b["items"].as_array().unwrap().len() == 2));
    }

    #[actix::test]
    async fn a_batch_fails_after_five_attempts() {
        let (url, seen) = serve(vec![(500, "{\"no\":1}"); 6]);
        let dir = tempfile::tempdir().unwrap();
        let err = send_batch(&client_for(&url, dir.path()), &[event("a")], Duration::from_millis(1)).await.unwrap_err();
        assert_eq!(err, "the server answered 500: {\"no\":1}");
        for _ in 0..5 {
            seen.recv_timeout(Duration::from_secs(5)).unwrap();
        }
        assert!(seen.recv_timeout(Duration::from_millis(50)).is_err(), "no sixth attempt");
    }

    #[test]
    fn a_full_queue_drops_the_batch_without_waiting() {
        let (tx, mut rx) = mpsc::channel(1);
        enqueue(&tx, vec![event("a")]);
        enqueue(&tx, vec![event("b")]);
        assert_eq!(rx.try_recv().unwrap()[0].audit_id, "a");
        assert!(rx.try_recv().is_err(), "the second batch was dropped");
    }
}
