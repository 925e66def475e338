//! The bounded mailbox of one stage, on the receiving side.
//!
//! A mailbox is a semaphore of N slots plus the stage's [`StageMeters`]. A message takes a slot
//! when it is admitted and gives it back when its reply has been sent (or its work given up),
//! so the bound holds for the work, queued and in progress together, not just for the queue:
//! a stage answering with futures cannot accumulate unbounded work in flight. actix's own
//! channel is left unbounded and carries only admitted messages: actix exposes no mailbox
//! length and its capacity parks senders without a deadline, so the semaphore is the bound.
//!
//! The bound lives with the stage, not with its callers: every handle to the stage, in this
//! process or (with a networked transport) another, is admitted by the same [`Mailbox::admit`].

use std::sync::Arc;
use std::time::Instant;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::deadline::Deadline;
use crate::directory::{ActorDirectory, Registration};
use crate::error::StageError;
use crate::meters::{Outcome, StageMeters, WhenFull};

/// How a mailbox is sized and what it does when full.
#[derive(Clone, Debug)]
pub struct MailboxSpec {
    /// Stage name, as `GET /actors`, metrics and errors name it.
    pub stage: String,
    /// The resource of a per-resource stage (cachers), `""` otherwise.
    pub resource: String,
    /// The most messages queued and in progress together.
    pub capacity: usize,
    /// What a message finding every slot taken does.
    pub when_full: WhenFull,
}

/// The slots and meters of one stage. Cloning shares them.
#[derive(Clone)]
pub struct Mailbox {
    /// One permit per message queued or in progress. A tokio semaphore so callers wait for a
    /// slot without blocking a thread, and with a deadline.
    slots: Arc<Semaphore>,
    meters: Arc<StageMeters>,
    _registration: Arc<Registration>,
}

impl Mailbox {
    /// A mailbox for a stage running on `arbiter`, listed in `directory`.
    pub fn new(directory: &ActorDirectory, spec: &MailboxSpec, arbiter: &str) -> Self {
        let meters = Arc::new(StageMeters::new(&spec.stage, &spec.resource, spec.capacity, spec.when_full, arbiter));
        let registration = directory.register(meters.clone());
        Mailbox { slots: Arc::new(Semaphore::new(spec.capacity)), meters, _registration: Arc::new(registration) }
    }

    /// Admits one message: takes a slot, waiting as the mailbox's [`WhenFull`] policy says and
    /// never past `deadline`.
    pub async fn admit(&self, deadline: Deadline) -> Result<Slot, StageError> {
        let stage = || self.meters.stage.clone();
        let permit = match self.slots.clone().try_acquire_owned() {
            Ok(p) => p,
            Err(tokio::sync::TryAcquireError::Closed) => return Err(StageError::Stopped { stage: stage() }),
            Err(tokio::sync::TryAcquireError::NoPermits) => {
                let wait = match self.meters.when_full {
                    WhenFull::Shed { wait } => Deadline::after(wait).min(deadline),
                    WhenFull::Wait | WhenFull::NoMailbox => deadline,
                };
                match wait.run(self.slots.clone().acquire_owned()).await {
                    Ok(Ok(p)) => p,
                    Ok(Err(_closed)) => return Err(StageError::Stopped { stage: stage() }),
                    Err(_) if deadline.expired() => return Err(StageError::DeadlineExceeded { stage: stage() }),
                    Err(_) => {
                        self.meters.on_refused();
                        let WhenFull::Shed { wait } = self.meters.when_full else {
                            unreachable!("only a shedding mailbox stops waiting before the deadline")
                        };
                        return Err(StageError::Saturated { stage: stage(), waited: wait });
                    }
                }
            }
        };
        self.meters.on_admitted();
        Ok(Slot { _permit: permit, meters: self.meters.clone(), admitted: Instant::now(), state: SlotState::Queued })
    }

    /// The shared meters.
    pub fn meters(&self) -> &Arc<StageMeters> {
        &self.meters
    }

    /// The stage's name.
    pub fn stage(&self) -> &str {
        &self.meters.stage
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SlotState {
    Queued,
    InProgress,
    Done,
}

/// One admitted message's place in the mailbox, held from admission until its reply is sent.
/// Dropping it gives the slot back and settles the meters, however the work ended.
pub struct Slot {
    _permit: OwnedSemaphorePermit,
    meters: Arc<StageMeters>,
    admitted: Instant,
    state: SlotState,
}

impl Slot {
    /// The actor opened the message: it is in progress now.
    pub(crate) fn start(&mut self) {
        if self.state == SlotState::Queued {
            self.meters.on_started();
            self.state = SlotState::InProgress;
        }
    }

    /// The work ended; the slot is given back when this is dropped.
    pub(crate) fn finish(&mut self, outcome: Outcome) {
        match self.state {
            SlotState::Queued => {
                self.start();
                self.finish(outcome);
            }
            SlotState::InProgress => {
                self.meters.on_finished(outcome, self.admitted.elapsed());
                self.state = SlotState::Done;
            }
            SlotState::Done => {}
        }
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        match self.state {
            // Never opened: the actor is gone (its channel dropped the message).
            SlotState::Queued => self.meters.on_unsent(),
            // Opened but never answered: the work was dropped.
            SlotState::InProgress => self.finish(Outcome::Cancelled),
            SlotState::Done => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn spec(capacity: usize, when_full: WhenFull) -> MailboxSpec {
        MailboxSpec { stage: "test".into(), resource: String::new(), capacity, when_full }
    }

    #[tokio::test(start_paused = true)]
    async fn a_shedding_mailbox_refuses_after_its_wait() {
        let directory = ActorDirectory::default();
        let mb = Mailbox::new(&directory, &spec(1, WhenFull::Shed { wait: Duration::from_millis(50) }), "t");
        let mut held = mb.admit(Deadline::NONE).await.unwrap();
        let refused = mb.admit(Deadline::NONE).await.err().unwrap();
        assert!(matches!(refused, StageError::Saturated { ref stage, .. } if stage == "test"), "{refused:?}");
        held.start();
        let s = mb.meters().snapshot();
        assert_eq!((s.queued, s.in_progress, s.refused, s.errors), (0, 1, 1, 1));
        held.finish(Outcome::Succeeded);
        drop(held);
        assert!(mb.admit(Deadline::NONE).await.is_ok(), "the slot came back");
    }

    #[tokio::test(start_paused = true)]
    async fn a_waiting_mailbox_waits_until_the_deadline_and_never_refuses() {
        let directory = ActorDirectory::default();
        let mb = Mailbox::new(&directory, &spec(1, WhenFull::Wait), "t");
        let held = mb.admit(Deadline::NONE).await.unwrap();
        let timed_out = mb.admit(Deadline::after(Duration::from_secs(30))).await.err().unwrap();
        assert!(matches!(timed_out, StageError::DeadlineExceeded { .. }), "{timed_out:?}");
        assert_eq!(mb.meters().snapshot().refused, 0);
        let waiting = tokio::spawn({
            let mb = mb.clone();
            async move { mb.admit(Deadline::NONE).await.is_ok() }
        });
        tokio::time::sleep(Duration::from_secs(60)).await;
        drop(held);
        assert!(waiting.await.unwrap());
    }

    #[tokio::test]
    async fn dropped_slots_settle_the_meters() {
        let directory = ActorDirectory::default();
        let mb = Mailbox::new(&directory, &spec(4, WhenFull::Wait), "t");
        let unsent = mb.admit(Deadline::NONE).await.unwrap();
        let mut abandoned = mb.admit(Deadline::NONE).await.unwrap();
        abandoned.start();
        assert_eq!(mb.meters().snapshot().mailbox_depth, 2);
        drop(unsent);
        drop(abandoned);
        let s = mb.meters().snapshot();
        assert_eq!((s.mailbox_depth, s.cancelled, s.completed), (0, 1, 1));
    }
}
