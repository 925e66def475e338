//! The storage stage: the actor that runs registry operations for the pipeline.
//!
//! Every write is a future on the stage's own arbiter; the stage's mailbox holds its slot until
//! the future answers, so the mailbox bound limits the writes in flight, and a write whose
//! deadline passes (or whose caller goes away) is dropped where it stands.

use std::sync::Arc;

use actix::{Actor, Context};
use actors::{Deadline, Request, StageHandler, Work};
use apimachinery::messages::{CreateObject, DeleteCollection, DeleteObject, PatchObject, UpdateObject};

use crate::store::RegistryStore;

/// The storage stage actor.
pub struct StorageActor {
    /// Shared with every write in flight, each a future that outlives the handler call.
    store: Arc<RegistryStore>,
}

impl StorageActor {
    /// An actor serving `store`.
    pub fn new(store: Arc<RegistryStore>) -> Self {
        StorageActor { store }
    }
}

impl Actor for StorageActor {
    type Context = Context<Self>;
}

macro_rules! delegate {
    ($($msg:ty => $method:ident),+ $(,)?) => {$(
        impl StageHandler<$msg> for StorageActor {
            fn handle(&mut self, msg: $msg, deadline: Deadline, _: &mut Context<Self>) -> Work<Self, <$msg as Request>::Reply> {
                let store = self.store.clone();
                Work::later(async move { store.$method(msg, deadline).await })
            }
        }
    )+};
}

delegate! {
    CreateObject => create,
    UpdateObject => update,
    PatchObject => patch,
    DeleteObject => delete,
    DeleteCollection => delete_collection,
}

actors::stage_handler!(StorageActor => CreateObject, UpdateObject, PatchObject, DeleteObject, DeleteCollection);
