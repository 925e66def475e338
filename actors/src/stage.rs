//! Stage actors: how a stage handles a message, and the runtime around it that keeps the
//! mailbox's slot until the reply is sent, drops work whose deadline passed or whose caller went
//! away, and meters every step.
//!
//! A stage is an actix actor that implements [`StageHandler`] for each message it accepts and
//! lists them in [`stage_handler!`](crate::stage_handler). Its handler answers with [`Work`]:
//! a reply now, a future run on the stage's own arbiter, or a future that needs the actor between
//! awaits. For futures the runtime holds the slot until the future's reply is sent, so a stage
//! doing asynchronous work (storage, admission) counts it as in progress and its bound limits
//! it; a future whose deadline passes, or whose caller stops waiting, is dropped (cancelled).

use std::future::Future;
use std::pin::Pin;

use actix::fut::ActorFutureExt;
use actix::{Actor, Addr, Arbiter, AsyncContext, Context, Handler, ResponseActFuture};
use tokio::sync::oneshot;

use crate::deadline::Deadline;
use crate::directory::ActorDirectory;
use crate::envelope::Envelope;
use crate::handle::StageHandle;
use crate::mailbox::{Mailbox, MailboxSpec, Slot};
use crate::message::{Reply, Request};
use crate::meters::Outcome;
use crate::transport::LocalTransport;

/// A future a stage runs on its own arbiter (thread): it need not be `Send`.
pub type LocalFuture<R> = Pin<Box<dyn Future<Output = R>>>;

/// How a stage answers one message.
pub enum Work<A: Actor, R> {
    /// The reply, computed in the handler.
    Done(R),
    /// A future producing the reply, run on the stage's arbiter beside the actor (which keeps
    /// handling other messages meanwhile).
    Later(LocalFuture<R>),
    /// A future that reads or changes the actor between its awaits, run inside the actor's
    /// context.
    OnActor(ResponseActFuture<A, R>),
}

impl<A: Actor, R> Work<A, R> {
    /// Work answered by `future`.
    pub fn later(future: impl Future<Output = R> + 'static) -> Self {
        Work::Later(Box::pin(future))
    }
}

/// A stage's handling of messages of type `M`.
pub trait StageHandler<M: Request>: Actor<Context = Context<Self>> {
    /// Handles `msg`, whose request must be answered before `deadline`.
    fn handle(&mut self, msg: M, deadline: Deadline, ctx: &mut Context<Self>) -> Work<Self, M::Reply>;
}

/// Implements `Handler<Envelope<M>>` for a stage actor, for each `M` it has a
/// [`StageHandler`] for, by handing the envelope to [`dispatch`].
#[macro_export]
macro_rules! stage_handler {
    ($actor:ty => $($msg:ty),+ $(,)?) => {$(
        impl ::actix::Handler<$crate::Envelope<$msg>> for $actor {
            type Result = ();
            fn handle(&mut self, envelope: $crate::Envelope<$msg>, ctx: &mut Self::Context) {
                $crate::stage::dispatch(self, envelope, ctx)
            }
        }
    )+};
}

/// Opens an envelope: drops it if nobody waits for it any more, otherwise runs the handler and
/// answers, keeping the slot until the reply is sent.
pub fn dispatch<A, M>(actor: &mut A, envelope: Envelope<M>, ctx: &mut Context<A>)
where
    A: StageHandler<M>,
    M: Request,
{
    let Envelope { msg, deadline, mut slot, reply } = envelope;
    slot.start();
    if deadline.expired() {
        slot.finish(Outcome::Expired);
        return;
    }
    if reply.is_closed() {
        slot.finish(Outcome::Cancelled);
        return;
    }
    match actor.handle(msg, deadline, ctx) {
        Work::Done(r) => answer(reply, r, slot),
        Work::Later(future) => {
            actix::spawn(async move {
                let mut reply = reply;
                let ended = tokio::select! {
                    // A reply that is ready wins over a deadline or a departure at the same moment.
                    biased;
                    r = future => Ok(r),
                    () = deadline.reached() => Err(Outcome::Expired),
                    () = reply.closed() => Err(Outcome::Cancelled),
                };
                match ended {
                    Ok(r) => answer(reply, r, slot),
                    Err(outcome) => slot.finish(outcome),
                }
            });
        }
        Work::OnActor(future) => {
            let future = match deadline.remaining() {
                Some(left) => future
                    .timeout(left)
                    .map(move |r, _, _| match r {
                        Ok(r) => answer(reply, r, slot),
                        Err(()) => slot.finish(Outcome::Expired),
                    })
                    .boxed_local(),
                None => future.map(move |r, _, _| answer(reply, r, slot)).boxed_local(),
            };
            ctx.spawn(future);
        }
    }
}

fn answer<R: Reply>(reply: oneshot::Sender<R>, r: R, mut slot: Slot) {
    let outcome = if r.is_error() { Outcome::Failed } else { Outcome::Succeeded };
    match reply.send(r) {
        Ok(()) => slot.finish(outcome),
        Err(_) => slot.finish(Outcome::Cancelled),
    }
}

/// An arbiter (a thread with its own event loop) stages run on, with the name `GET /actors`
/// shows for it.
pub struct StageArbiter {
    arbiter: Arbiter,
    name: String,
}

impl StageArbiter {
    /// A new thread named `name`.
    pub fn new(name: &str) -> Self {
        StageArbiter { arbiter: Arbiter::new(), name: name.to_string() }
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Runs `future` on this thread and returns its output; `None` if the thread stopped first.
    /// Whatever the future spawns stays on this thread: a client connected here runs its
    /// connection's tasks beside the stage that calls it, with no thread between them.
    pub async fn run<F>(&self, future: F) -> Option<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send,
    {
        let (done, output) = oneshot::channel();
        self.arbiter.spawn(async move {
            let _ = done.send(future.await);
        });
        output.await.ok()
    }

    /// Stops the thread once the stages on it have handled what they hold.
    pub fn stop(&self) -> bool {
        self.arbiter.stop()
    }
}

/// A started stage: its actor and its mailbox.
pub struct Started<A: Actor> {
    addr: Addr<A>,
    mailbox: Mailbox,
}

impl<A: Actor<Context = Context<A>>> Started<A> {
    /// A handle sending `M` to the stage through this process's transport.
    pub fn handle<M>(&self) -> StageHandle<M>
    where
        M: Request,
        A: Handler<Envelope<M>>,
    {
        StageHandle::new(LocalTransport::new(self.addr.clone().recipient(), self.mailbox.clone()))
    }

    /// The stage's mailbox.
    pub fn mailbox(&self) -> &Mailbox {
        &self.mailbox
    }
}

/// Starts `actor` on `arbiter` behind a mailbox sized by `spec`, listed in `directory`. The
/// actix channel is left unbounded: the mailbox's slots are the bound.
pub fn start<A>(arbiter: &StageArbiter, directory: &ActorDirectory, spec: &MailboxSpec, actor: A) -> Started<A>
where
    A: Actor<Context = Context<A>> + Send,
{
    let mailbox = Mailbox::new(directory, spec, arbiter.name());
    let addr = A::start_in_arbiter(&arbiter.arbiter.handle(), move |ctx: &mut Context<A>| {
        ctx.set_mailbox_capacity(0);
        actor
    });
    Started { addr, mailbox }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use serde::{Deserialize, Serialize};

    use super::*;
    use crate::error::StageError;
    use crate::meters::WhenFull;

    struct Sleeper;
    impl Actor for Sleeper {
        type Context = Context<Self>;
    }

    /// Answers after sleeping this many milliseconds, off the actor.
    #[derive(Serialize, Deserialize)]
    struct Nap(u64);
    impl Request for Nap {
        type Reply = Result<u64, String>;
    }

    /// Blocks the actor's thread this many milliseconds.
    #[derive(Serialize, Deserialize)]
    struct Block(u64);
    impl Request for Block {
        type Reply = Result<u64, String>;
    }

    impl StageHandler<Nap> for Sleeper {
        fn handle(&mut self, msg: Nap, _: Deadline, _: &mut Context<Self>) -> Work<Self, Result<u64, String>> {
            Work::later(async move {
                tokio::time::sleep(Duration::from_millis(msg.0)).await;
                if msg.0 == 13 { Err("unlucky".into()) } else { Ok(msg.0) }
            })
        }
    }

    impl StageHandler<Block> for Sleeper {
        fn handle(&mut self, msg: Block, _: Deadline, _: &mut Context<Self>) -> Work<Self, Result<u64, String>> {
            std::thread::sleep(Duration::from_millis(msg.0));
            Work::Done(Ok(msg.0))
        }
    }

    crate::stage_handler!(Sleeper => Nap, Block);

    fn started(capacity: usize, when_full: WhenFull) -> (ActorDirectory, Started<Sleeper>) {
        let directory = ActorDirectory::default();
        let spec = MailboxSpec { stage: "sleeper".into(), resource: String::new(), capacity, when_full };
        let s = start(&StageArbiter::new("test"), &directory, &spec, Sleeper);
        (directory, s)
    }

    const SHED: WhenFull = WhenFull::Shed { wait: Duration::from_millis(100) };

    #[actix::test]
    async fn a_future_run_on_an_arbiter_runs_on_its_thread_and_spawns_there() {
        let arbiter = StageArbiter::new("runner");
        let caller = std::thread::current().id();
        let (ran_on, spawned_on) = arbiter
            .run(async {
                let here = std::thread::current().id();
                let spawned = tokio::spawn(async { std::thread::current().id() }).await.unwrap();
                (here, spawned)
            })
            .await
            .expect("the arbiter runs");
        assert_ne!(ran_on, caller);
        assert_eq!(spawned_on, ran_on, "a task the future spawns stays on the arbiter's thread");
        arbiter.stop();
        assert_eq!(arbiter.run(async { 1 }).await, None, "a stopped arbiter runs nothing");
    }

    #[actix::test]
    async fn replies_flow_and_are_counted() {
        let (directory, s) = started(4, SHED);
        let h = s.handle::<Nap>();
        assert_eq!(h.call(Nap(1), Deadline::NONE).await.unwrap(), Ok(1));
        assert_eq!(h.call(Nap(13), Deadline::NONE).await.unwrap(), Err("unlucky".into()));
        // A slot counts as completed when it is released, just after its reply is sent: give
        // the second one a moment to be released.
        for _ in 0..100 {
            if directory.snapshot()[0].completed == 2 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let snap = &directory.snapshot()[0];
        assert_eq!((snap.enqueued, snap.dequeued, snap.completed, snap.mailbox_depth), (2, 2, 2, 0));
        assert_eq!((snap.errors, snap.arbiter.as_str()), (1, "test"));
    }

    #[actix::test]
    async fn async_work_holds_its_slot_until_it_answers() {
        let (directory, s) = started(2, SHED);
        let h = s.handle::<Nap>();
        // Two naps are in progress on the actor's arbiter; the actor itself is idle, yet the
        // mailbox is full: the bound holds for the work, not just the queue.
        let busy: Vec<_> = (0..2)
            .map(|_| {
                let h = h.clone();
                tokio::spawn(async move { h.call(Nap(600), Deadline::NONE).await })
            })
            .collect();
        tokio::time::sleep(Duration::from_millis(150)).await;
        let snap = &directory.snapshot()[0];
        assert_eq!((snap.queued, snap.in_progress, snap.mailbox_depth), (0, 2, 2), "{snap:?}");
        let refused = h.call(Nap(0), Deadline::NONE).await.unwrap_err();
        assert!(matches!(refused, StageError::Saturated { ref stage, .. } if stage == "sleeper"), "{refused:?}");
        for b in busy {
            assert_eq!(b.await.unwrap().unwrap(), Ok(600));
        }
        // A slot is given back just after its reply is sent, so on a busy machine the caller
        // may see the reply first: wait for the meters to settle rather than for a fixed time.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while directory.snapshot()[0].mailbox_depth != 0 && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let snap = &directory.snapshot()[0];
        assert_eq!((snap.mailbox_depth, snap.refused, snap.errors), (0, 1, 1));
    }

    #[actix::test]
    async fn a_blocked_actor_shows_its_queue() {
        let (directory, s) = started(3, SHED);
        let h = s.handle::<Block>();
        let busy: Vec<_> = (0..3)
            .map(|_| {
                let h = h.clone();
                tokio::spawn(async move { h.call(Block(400), Deadline::NONE).await })
            })
            .collect();
        tokio::time::sleep(Duration::from_millis(150)).await;
        let snap = &directory.snapshot()[0];
        assert_eq!((snap.queued, snap.in_progress), (2, 1), "one is handled while two wait: {snap:?}");
        for b in busy {
            assert_eq!(b.await.unwrap().unwrap(), Ok(400));
        }
    }

    #[actix::test]
    async fn work_past_its_deadline_is_cancelled() {
        let (directory, s) = started(4, SHED);
        let h = s.handle::<Nap>();
        let err = h.call(Nap(5_000), Deadline::after(Duration::from_millis(100))).await.unwrap_err();
        assert!(matches!(err, StageError::DeadlineExceeded { .. }), "{err:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
        let snap = &directory.snapshot()[0];
        assert_eq!((snap.mailbox_depth, snap.in_progress), (0, 0), "the nap was dropped, not finished: {snap:?}");
        assert_eq!(snap.expired + snap.cancelled, 1, "{snap:?}");
        // A message already past its deadline when opened is not handled at all.
        let blocker = h.clone();
        let b = s.handle::<Block>();
        let blocked = tokio::spawn(async move { b.call(Block(300), Deadline::NONE).await });
        tokio::time::sleep(Duration::from_millis(20)).await;
        let late = blocker.call(Nap(0), Deadline::after(Duration::from_millis(100))).await.unwrap_err();
        assert!(matches!(late, StageError::DeadlineExceeded { .. }), "{late:?}");
        blocked.await.unwrap().unwrap().unwrap();
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert_eq!(directory.snapshot()[0].mailbox_depth, 0);
    }
}
