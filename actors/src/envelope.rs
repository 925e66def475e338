//! A message in a stage's mailbox: the request, its deadline, its admitted slot and where the
//! reply goes. Opened by the stage runtime ([`crate::stage::dispatch`]), filled in by a
//! transport.

use tokio::sync::oneshot;

use crate::deadline::Deadline;
use crate::mailbox::Slot;
use crate::message::Request;

/// One admitted message on its way to, or in, a stage actor.
pub struct Envelope<M: Request> {
    pub(crate) msg: M,
    pub(crate) deadline: Deadline,
    pub(crate) slot: Slot,
    pub(crate) reply: oneshot::Sender<M::Reply>,
}

impl<M: Request> actix::Message for Envelope<M> {
    type Result = ();
}
