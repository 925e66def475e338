//! How a message reaches a stage: the seam between a [`StageHandle`](crate::StageHandle) and
//! the stage behind it.
//!
//! A transport carries a request and brings back its reply or a [`StageError`]. The local one
//! delivers into an actor of this process; the networked one ([`crate::remote`]) encodes the
//! request, and its receiving end hands what it decodes to the stage's local handle, so the
//! stage's own mailbox admits every message wherever its caller runs and all callers share one
//! bound.

use std::future::Future;
use std::pin::Pin;

use actix::Recipient;
use tokio::sync::oneshot;

use crate::deadline::Deadline;
use crate::envelope::Envelope;
use crate::error::StageError;
use crate::mailbox::Mailbox;
use crate::message::Request;

/// A future a transport returns: `Send`, so a caller on any runtime can await it.
pub type SendFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// Carries messages of type `M` to one stage.
pub trait Transport<M: Request>: Send + Sync + 'static {
    /// Sends `msg` and waits for the reply, at most until `deadline`.
    fn send(&self, msg: M, deadline: Deadline) -> SendFuture<Result<M::Reply, StageError>>;

    /// The stage this transport reaches, for errors.
    fn stage(&self) -> &str;
}

/// Delivery into an actor of this process.
pub struct LocalTransport<M: Request> {
    recipient: Recipient<Envelope<M>>,
    mailbox: Mailbox,
}

impl<M: Request> LocalTransport<M> {
    /// Delivers to `recipient`, admitted by its stage's `mailbox`.
    pub fn new(recipient: Recipient<Envelope<M>>, mailbox: Mailbox) -> Self {
        LocalTransport { recipient, mailbox }
    }
}

impl<M: Request> Transport<M> for LocalTransport<M> {
    fn send(&self, msg: M, deadline: Deadline) -> SendFuture<Result<M::Reply, StageError>> {
        let (recipient, mailbox) = (self.recipient.clone(), self.mailbox.clone());
        Box::pin(async move { deliver(&recipient, &mailbox, msg, deadline).await })
    }

    fn stage(&self) -> &str {
        self.mailbox.stage()
    }
}

/// Delivers `msg` to the actor behind `recipient`: admitted by the stage's `mailbox` (waiting
/// for a slot as its policy says), then answered before `deadline` or given up.
pub async fn deliver<M: Request>(
    recipient: &Recipient<Envelope<M>>,
    mailbox: &Mailbox,
    msg: M,
    deadline: Deadline,
) -> Result<M::Reply, StageError> {
    let slot = mailbox.admit(deadline).await?;
    let (reply, answer) = oneshot::channel();
    // A failed send hands the envelope back; dropping it gives the slot back.
    if recipient.try_send(Envelope { msg, deadline, slot, reply }).is_err() {
        mailbox.meters().on_error();
        return Err(StageError::Stopped { stage: mailbox.stage().to_string() });
    }
    mailbox.meters().on_enqueued();
    match deadline.run(answer).await {
        Ok(Ok(reply)) => Ok(reply),
        // The stage gives up work at the same deadline, dropping the reply: it may get there
        // first.
        Ok(Err(_dropped)) if deadline.expired() => {
            Err(StageError::DeadlineExceeded { stage: mailbox.stage().to_string() })
        }
        Ok(Err(_dropped)) => Err(StageError::Stopped { stage: mailbox.stage().to_string() }),
        Err(_) => Err(StageError::DeadlineExceeded { stage: mailbox.stage().to_string() }),
    }
}
