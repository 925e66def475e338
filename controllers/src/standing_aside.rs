//! Standing aside for kube-controller-manager: in a cluster adopted from kube, a real
//! kube-controller-manager runs the namespace, service-account, token, quota, aggregation,
//! policy-status and root-CA controllers. This server's own copies of them would race it, so
//! they run only while no one holds kube-controller-manager's Lease
//! ([`CONTROLLER_MANAGER_LEASE`]).
//!
//! The Lease is judged as a candidate for it would judge it (client-go's rule, as in
//! [`crate::leader`]): held while it names a holder and has changed within its
//! `leaseDurationSeconds`, by this process's clock. A Lease seen for the first time counts as
//! held for one lease duration, so a kube-controller-manager that is still renewing is never
//! raced; a released Lease (no holder) frees the controllers at once. When the Lease cannot be
//! read, nothing changes: controllers running keep running, and those standing aside keep
//! waiting.

use std::time::Duration;

use tokio::task::AbortHandle;
use tokio::time::Instant;

use crate::leader::{LeaderElectionRecord, LeaseLock};

/// kube-controller-manager's Lease (its `--leader-elect-resource-namespace` and
/// `--leader-elect-resource-name` defaults).
pub const CONTROLLER_MANAGER_LEASE: &str = "kube-system/kube-controller-manager";

/// Whether another controller manager holds its Lease.
pub struct HolderWatch<L> {
    lock: L,
    /// The record as last seen, and when it was seen to change.
    observed: Option<(LeaderElectionRecord, Instant)>,
}

impl<L: LeaseLock> HolderWatch<L> {
    /// Watches the Lease behind `lock`.
    pub fn new(lock: L) -> Self {
        HolderWatch { lock, observed: None }
    }

    /// Reads the Lease: whether it is held now, or `None` when it could not be read.
    pub async fn held(&mut self) -> Option<bool> {
        let now = Instant::now();
        let current = match self.lock.get().await {
            Ok(current) => current,
            Err(e) => {
                tracing::warn!(lease = self.lock.describe(), "reading the lease failed: {}", e.message);
                return None;
            }
        };
        let Some(current) = current else {
            self.observed = None;
            return Some(false);
        };
        if self.observed.as_ref().map(|(r, _)| r) != Some(&current) {
            self.observed = Some((current, now));
        }
        let (record, seen) = self.observed.as_ref().expect("just set");
        Some(!record.holder_identity.is_empty() && record.trusted(*seen, now))
    }

    /// Who holds it, as last read.
    pub fn holder(&self) -> &str {
        self.observed.as_ref().map_or("", |(r, _)| r.holder_identity.as_str())
    }

    /// `namespace/name`, for the log.
    pub fn describe(&self) -> String {
        self.lock.describe()
    }
}

/// What [`run`] started, stopped when dropped: when the task running [`run`] is aborted (its
/// replica lost the controllers' own Lease), the controllers stop with it.
struct Started(Vec<AbortHandle>);

impl Drop for Started {
    fn drop(&mut self) {
        for handle in &self.0 {
            handle.abort();
        }
    }
}

/// Reads the Lease every `period`: runs what `start` starts while it is not held, and stops it
/// while it is. Runs until aborted.
pub async fn run<L: LeaseLock>(mut watch: HolderWatch<L>, period: Duration, start: impl Fn() -> Vec<AbortHandle>) {
    let lease = watch.describe();
    let mut running: Option<Started> = None;
    // The first answer is logged whatever it is, so the log always says where things stand.
    let mut first = true;
    loop {
        // A read that does not answer within five periods counts as unreadable: things stay
        // as they are.
        let held = tokio::time::timeout(period * 5, watch.held()).await.ok().flatten();
        match held {
            Some(true) if running.is_some() || first => {
                running = None;
                tracing::info!(
                    lease,
                    holder = watch.holder(),
                    "the lease is held: this server's controllers stand aside"
                );
            }
            Some(true) => {}
            Some(false) if running.is_none() => {
                if watch.holder().is_empty() {
                    tracing::info!(lease, "the lease is not held: this server's controllers run");
                } else {
                    tracing::info!(lease, holder = watch.holder(), "the lease expired: this server's controllers run");
                }
                running = Some(Started(start()));
            }
            Some(false) | None => {}
        }
        first &= held.is_none();
        tokio::time::sleep(period).await;
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Arc, Mutex};

    use apimachinery::error::ApiError;
    use async_trait::async_trait;

    use super::*;
    use crate::leader::spawn_stoppable;

    /// The Lease as another process keeps it; reads fail while `unreadable`.
    #[derive(Default)]
    struct Shared {
        record: Option<LeaderElectionRecord>,
        unreadable: bool,
    }

    struct ReadOnly(Arc<Mutex<Shared>>);

    #[async_trait]
    impl LeaseLock for ReadOnly {
        async fn get(&mut self) -> Result<Option<LeaderElectionRecord>, ApiError> {
            let shared = self.0.lock().unwrap();
            if shared.unreadable {
                return Err(ApiError::unavailable("storage is unreachable"));
            }
            Ok(shared.record.clone())
        }
        async fn create(&mut self, _: &LeaderElectionRecord) -> Result<(), ApiError> {
            unreachable!("the watch only reads")
        }
        async fn update(&mut self, _: &LeaderElectionRecord) -> Result<(), ApiError> {
            unreachable!("the watch only reads")
        }
        fn describe(&self) -> String {
            CONTROLLER_MANAGER_LEASE.into()
        }
    }

    fn renewed(shared: &Mutex<Shared>, holder: &str, at: u32) {
        shared.lock().unwrap().record = Some(LeaderElectionRecord {
            holder_identity: holder.into(),
            lease_duration_seconds: 15,
            renew_time: format!("2026-01-01T00:00:{at:02}.000000Z"),
            ..Default::default()
        });
    }

    /// `run` on the Lease in `shared`: how many controllers it started are running.
    fn supervise(shared: &Arc<Mutex<Shared>>) -> (Arc<AtomicUsize>, AbortHandle) {
        let running = Arc::new(AtomicUsize::new(0));
        struct Counted(Arc<AtomicUsize>);
        impl Drop for Counted {
            fn drop(&mut self) {
                self.0.fetch_sub(1, Ordering::SeqCst);
            }
        }
        let start = {
            let running = running.clone();
            move || {
                running.fetch_add(1, Ordering::SeqCst);
                let counted = Counted(running.clone());
                vec![spawn_stoppable(async move {
                    let _counted = counted;
                    std::future::pending::<()>().await
                })]
            }
        };
        let watch = HolderWatch::new(ReadOnly(shared.clone()));
        let task = spawn_stoppable(run(watch, Duration::from_secs(2), start));
        (running, task)
    }

    async fn settle(seconds: u64) {
        tokio::time::sleep(Duration::from_secs(seconds)).await;
    }

    #[actix_rt::test]
    async fn controllers_run_without_a_holder_and_stand_aside_while_one_renews() {
        tokio::time::pause();
        let shared = Arc::new(Mutex::new(Shared::default()));
        let (running, task) = supervise(&shared);
        settle(1).await;
        assert_eq!(running.load(Ordering::SeqCst), 1, "no Lease: the controllers run");

        // kube-controller-manager comes and renews every 2 s: they stop at the next read.
        for at in 0..10 {
            renewed(&shared, "kcm-1", at);
            settle(2).await;
            assert_eq!(running.load(Ordering::SeqCst), 0, "held at {at}");
        }
        // Storage cannot be read for a while: nothing changes, even past the lease duration.
        shared.lock().unwrap().unreadable = true;
        settle(30).await;
        assert_eq!(running.load(Ordering::SeqCst), 0);
        shared.lock().unwrap().unreadable = false;

        // It stops renewing: the controllers start once the record has not changed for the
        // lease duration (15 s) by this clock, at the first read after it.
        renewed(&shared, "kcm-1", 59);
        let mut waited = 0;
        while running.load(Ordering::SeqCst) == 0 {
            settle(1).await;
            waited += 1;
            assert!(waited <= 15 + 2 + 1, "started {waited}s after the last change");
        }
        assert!(waited >= 15, "not before the lease expired: {waited}s");

        // Aborting the supervisor (its replica lost the controllers' own Lease) stops them.
        task.abort();
        settle(1).await;
        assert_eq!(running.load(Ordering::SeqCst), 0);
    }

    #[actix_rt::test]
    async fn a_lease_seen_first_counts_as_held_for_its_duration_and_a_released_one_frees_at_once() {
        tokio::time::pause();
        let shared = Arc::new(Mutex::new(Shared::default()));
        renewed(&shared, "kcm-1", 0);
        let (running, _task) = supervise(&shared);
        settle(10).await;
        assert_eq!(running.load(Ordering::SeqCst), 0, "a Lease found at start may still be renewed");

        // kube-controller-manager releases it on shutdown (no holder): the controllers run at
        // the next read.
        shared.lock().unwrap().record.as_mut().unwrap().holder_identity.clear();
        settle(3).await;
        assert_eq!(running.load(Ordering::SeqCst), 1);
        // A new holder takes it: they stand aside again.
        renewed(&shared, "kcm-2", 1);
        settle(3).await;
        assert_eq!(running.load(Ordering::SeqCst), 0);
    }
}
