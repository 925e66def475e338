//! etcd's members as this client reaches them: one connection per `--etcd-servers` endpoint,
//! requests spread over the members that answer, and a member whose connection fails set
//! aside until a probe finds it answering again.
//!
//! One balanced channel over every endpoint (the `etcd-client` default) keeps choosing a dead
//! member: its connect error comes back at once, so it looks like the least loaded, and a
//! share of requests fails for as long as the member is down. kube-apiserver's client avoids
//! this with its own balancer and retries; this does the same in the open:
//!
//! - a request goes to the next member marked up, round robin;
//! - a connect failure (the request never left) marks the member down and the request is sent
//!   to the next one, whatever it is: nothing can have been applied;
//! - a connection that breaks under a request marks the member down too, and the request is
//!   sent again only if it reads (`idempotent`), since a write may have been applied;
//! - a request without an answer in time marks the member down and fails (sending it again
//!   would double the wait);
//! - a member marked down is probed (a status call) every [`PROBE_INTERVAL`] and marked up when
//!   it answers. With every member down, requests still go to them in turn, so the first
//!   member back serves at once.

use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use etcd_client::{Client, ConnectOptions, KvClient, LeaseClient, MaintenanceClient, WatchClient};

/// How often a member marked down is probed.
pub(super) const PROBE_INTERVAL: Duration = Duration::from_millis(500);

/// One member's connection.
pub(super) struct Member {
    /// Its client URL.
    pub endpoint: String,
    /// Range, txn and compact calls.
    pub kv: KvClient,
    /// Watch streams.
    pub watch: WatchClient,
    /// Status, for probes and the database size.
    pub maintenance: MaintenanceClient,
    /// Lease grants, for keys written with a TTL.
    pub lease: LeaseClient,
    /// Whether requests go to it.
    up: AtomicBool,
}

/// Every member, and where the round robin stands.
pub(super) struct Members {
    members: Vec<Member>,
    next: AtomicUsize,
    /// Bounds each probe.
    probe_timeout: Duration,
}

/// How a failed call ended, for [`Members::call`].
pub(super) enum Attempt<E> {
    /// Not sent: a connect failure.
    NotSent(E),
    /// Sent on a connection that broke: maybe applied.
    Lost(E),
    /// Unanswered in time: maybe applied, and sending it again would take as long.
    TimedOut(E),
    /// Answered by etcd (a refusal, a compaction, ...): the member is fine.
    Answered(E),
}

impl Members {
    /// A connection to each endpoint (connected lazily: a member down at start is set aside by
    /// the first request that meets it).
    pub async fn dial(
        endpoints: &[String],
        connect: &ConnectOptions,
        max_response: usize,
        probe_timeout: Duration,
    ) -> Result<Self, String> {
        let mut members = Vec::new();
        for endpoint in endpoints {
            let client = Client::connect([endpoint], Some(connect.clone()))
                .await
                .map_err(|e| format!("connect {endpoint}: {}", super::describe(&e)))?;
            members.push(Member {
                endpoint: endpoint.clone(),
                kv: client.kv_client().max_decoding_message_size(max_response),
                watch: client.watch_client().max_decoding_message_size(max_response),
                maintenance: client.maintenance_client(),
                lease: client.lease_client(),
                up: AtomicBool::new(true),
            });
        }
        Ok(Members { members, next: AtomicUsize::new(0), probe_timeout })
    }

    /// Every member.
    pub fn all(&self) -> &[Member] {
        &self.members
    }

    /// The next member to send to: the next one marked up, or with none up, the next one.
    fn pick(&self) -> usize {
        let n = self.members.len();
        let start = self.next.fetch_add(1, Ordering::Relaxed) % n;
        (0..n).map(|i| (start + i) % n).find(|i| self.members[*i].up.load(Ordering::Acquire)).unwrap_or(start)
    }

    /// Runs `call` on a member, again on the next ones while it was not sent (or, when
    /// `idempotent`, while it was lost), at most once per member; the member used and the
    /// answer.
    pub async fn call<T, E, F, Fut>(self: &Arc<Self>, idempotent: bool, call: F) -> (usize, Result<T, E>)
    where
        F: Fn(&Member) -> Fut,
        Fut: Future<Output = Result<T, Attempt<E>>>,
    {
        let mut tries = self.members.len();
        loop {
            let i = self.pick();
            tries -= 1;
            match call(&self.members[i]).await {
                Ok(answer) => return (i, Ok(answer)),
                Err(Attempt::Answered(e)) => return (i, Err(e)),
                Err(Attempt::NotSent(e)) => {
                    self.down(i, "connect failed");
                    if tries == 0 {
                        return (i, Err(e));
                    }
                }
                Err(Attempt::Lost(e)) => {
                    self.down(i, "connection lost");
                    if !idempotent || tries == 0 {
                        return (i, Err(e));
                    }
                }
                Err(Attempt::TimedOut(e)) => {
                    self.down(i, "no answer in time");
                    return (i, Err(e));
                }
            }
        }
    }

    /// Sets member `i` aside until a probe finds it answering.
    pub fn down(self: &Arc<Self>, i: usize, why: &str) {
        let member = &self.members[i];
        if self.members.len() == 1 || !member.up.swap(false, Ordering::AcqRel) {
            // A single member is always tried; one already down has its probe running.
            return;
        }
        tracing::warn!(endpoint = %member.endpoint, why, "etcd member set aside");
        tokio::spawn(probe(Arc::downgrade(self), i));
    }
}

/// Probes member `i` until it answers a status call, then marks it up.
async fn probe(members: Weak<Members>, i: usize) {
    loop {
        tokio::time::sleep(PROBE_INTERVAL).await;
        let Some(members) = members.upgrade() else { return };
        let member = &members.members[i];
        let status = member.maintenance.clone();
        if let Ok(Ok(_)) = tokio::time::timeout(members.probe_timeout, status.clone().status()).await {
            member.up.store(true, Ordering::Release);
            tracing::info!(endpoint = %member.endpoint, "etcd member answering again");
            return;
        }
    }
}
