//! The [`ObjectWriter`] admission plugins write other objects' status through (quota admission
//! charging a ResourceQuota): an update of the object's `/status` sent to the storage stage,
//! so the write is validated, admitted and guarded like any client's.

use actors::{Deadline, StageHandle};
use apimachinery::catalogue::{Catalogue, Subresource};
use apimachinery::error::ApiError;
use apimachinery::lookup::ObjectWriter;
use apimachinery::messages::{Target, UpdateObject};
use apimachinery::object::ObjectExt;
use apimachinery::options::WriteOptions;
use apimachinery::request::UserInfo;
use async_trait::async_trait;
use serde_json::Value;
use std::sync::Arc;

/// Status updates through the storage stage, as the API server itself (kube's plugin writes
/// through the loopback client, as `system:apiserver`).
pub struct StageStatusWriter {
    /// The storage stage's updates.
    pub update: StageHandle<UpdateObject>,
    /// To find the served version of a resource.
    pub catalogue: Arc<Catalogue>,
}

#[async_trait]
impl ObjectWriter for StageStatusWriter {
    async fn update_status(
        &self,
        group: &str,
        resource: &str,
        object: Value,
        deadline: Deadline,
    ) -> Result<Value, ApiError> {
        let Some(def) = self.catalogue.find_any_version(group, resource) else {
            return Err(ApiError::internal(format!("{resource}.{group} is not served")));
        };
        let target = Target {
            subresource: Some(Subresource::Status),
            ..Target::object(&def, object.namespace(), object.name())
        };
        let user =
            UserInfo { name: "system:apiserver".into(), groups: vec!["system:masters".into()], ..Default::default() };
        let update = UpdateObject { target, object, user, options: WriteOptions::default() };
        Ok(self.update.ask(update, deadline).await?.object.value().clone())
    }
}
