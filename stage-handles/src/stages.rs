//! The handles to every stage, as the HTTP handlers and the controllers reach them.

use actors::StageHandle;
use apimachinery::catalogue::ResourceDef;
use apimachinery::error::ApiError;
use apimachinery::messages::{
    Authenticate, Authorize, CreateObject, DeleteCollection, DeleteObject, PatchObject, StartRequest, UpdateObject,
};

use crate::caches::{Caches, Reads};

/// Handles to every stage, shared by the HTTP workers and the controllers.
#[derive(Clone)]
pub struct Stages {
    /// Authentication.
    pub authenticate: StageHandle<Authenticate>,
    /// Authorization.
    pub authorize: StageHandle<Authorize>,
    /// API Priority and Fairness: seats for requests it does not exempt.
    pub flow_control: StageHandle<StartRequest>,
    /// Storage stage: creates.
    pub create: StageHandle<CreateObject>,
    /// Storage stage: updates.
    pub update: StageHandle<UpdateObject>,
    /// Storage stage: patches.
    pub patch: StageHandle<PatchObject>,
    /// Storage stage: deletes.
    pub delete: StageHandle<DeleteObject>,
    /// Storage stage: collection deletes.
    pub delete_collection: StageHandle<DeleteCollection>,
    /// Cachers by storage path (events of both groups share one).
    pub caches: Caches,
}

impl Stages {
    /// The cacher serving `def`: 503 if it is not running (a custom resource whose CRD was
    /// deleted a moment ago).
    pub fn reads(&self, def: &ResourceDef) -> Result<Reads, ApiError> {
        self.caches.reads(def)
    }
}
