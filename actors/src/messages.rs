//! The messages stages exchange. They are plain serde types (a watch's live stream excepted) so a
//! stage can later run in another process behind the same handle.

use actix::Message;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::mpsc;

use crate::encoded::EncodedObject;
use crate::error::ApiError;
use crate::kinds::{self, ResourceDef};
use crate::request::{RequestInfo, UserInfo};

/// Which object or collection a request is about.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Target {
    /// API group (`""` for core).
    pub group: String,
    /// API version.
    pub version: String,
    /// Plural resource.
    pub resource: String,
    /// Subresource (`status`, `scale`) or `""`.
    pub subresource: String,
    /// Namespace, `""` for cluster-scoped resources or all namespaces.
    pub namespace: String,
    /// Object name, `""` for a collection.
    pub name: String,
}

impl Target {
    /// The target of a parsed request.
    pub fn from_request(info: &RequestInfo) -> Self {
        Target {
            group: info.api_group.clone(),
            version: info.api_version.clone(),
            resource: info.resource.clone(),
            subresource: info.subresource.clone(),
            namespace: info.namespace.clone(),
            name: info.name.clone(),
        }
    }

    /// The served resource, or 404 as kube answers an unknown resource.
    pub fn def(&self) -> Result<&'static ResourceDef, ApiError> {
        kinds::find(&self.group, &self.version, &self.resource)
            .ok_or_else(|| ApiError::new(crate::Reason::NotFound, "the server could not find the requested resource"))
    }
}

// ---------------------------------------------------------------- authentication

/// Credentials presented by a request.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Credentials {
    /// The bearer token from `Authorization: Bearer ...`.
    pub bearer_token: Option<String>,
    /// The identity of a client certificate the TLS layer verified against the client CA
    /// (CN as user name, O as groups).
    pub client_certificate: Option<UserInfo>,
}

/// Asks the authentication stage who is calling.
#[derive(Clone, Debug, Serialize, Deserialize, Message)]
#[rtype(result = "Result<UserInfo, ApiError>")]
pub struct Authenticate(pub Credentials);

// ---------------------------------------------------------------- authorization

/// Asks the authorization stage whether `user` may do what `request` says.
#[derive(Clone, Debug, Serialize, Deserialize, Message)]
#[rtype(result = "Result<(), ApiError>")]
pub struct Authorize {
    /// The authenticated user.
    pub user: UserInfo,
    /// The request's attributes.
    pub request: RequestInfo,
}

// ---------------------------------------------------------------- flow control

/// Asks the flow-control (APF) stage for a seat to execute a request.
#[derive(Clone, Debug, Serialize, Deserialize, Message)]
#[rtype(result = "Result<SeatGrant, ApiError>")]
pub struct StartRequest {
    /// The authenticated user.
    pub user: UserInfo,
    /// The request's attributes.
    pub request: RequestInfo,
}

/// A granted seat: which flow schema and priority level classified the request.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct SeatGrant {
    /// `X-Kubernetes-PF-FlowSchema-UID`.
    pub flow_schema_uid: String,
    /// `X-Kubernetes-PF-PriorityLevel-UID`.
    pub priority_level_uid: String,
}

// ---------------------------------------------------------------- admission

/// The operation being admitted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[allow(missing_docs)]
pub enum Operation {
    Create,
    Update,
    Delete,
}

/// Asks the admission stage to admit (and possibly mutate) a write, with the object as it would
/// be stored.
#[derive(Clone, Debug, Serialize, Deserialize, Message)]
#[rtype(result = "Result<Value, ApiError>")]
pub struct Admit {
    /// The operation.
    pub operation: Operation,
    /// What is written.
    pub target: Target,
    /// Who writes.
    pub user: UserInfo,
    /// The object after the write (for Delete, the object being deleted).
    pub object: Value,
    /// The object before the write, for Update and Delete.
    pub old_object: Option<Value>,
    /// Whether the write is a dry run.
    pub dry_run: bool,
}

// ---------------------------------------------------------------- storage stage (writes)

/// `?fieldValidation=`: what to do with unknown or duplicate fields.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum FieldValidation {
    /// Drop them silently.
    Ignore,
    /// Drop them and warn (the server default).
    #[default]
    Warn,
    /// Reject the request.
    Strict,
}

/// Options shared by every write.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct WriteOptions {
    /// Who writes.
    pub user: UserInfo,
    /// `?dryRun=All`.
    pub dry_run: bool,
    /// `?fieldValidation=`.
    pub field_validation: FieldValidation,
    /// `?fieldManager=`.
    pub field_manager: Option<String>,
}

/// What a write answers: the object and any warnings (`Warning` headers).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct WriteResult {
    /// The object as stored (or, for deletes, as deleted / marked for deletion).
    pub object: Value,
    /// Whether an update created the object (201 instead of 200).
    pub created: bool,
    /// For deletes: whether the object is gone (false while finalizers or a grace period hold it).
    pub deleted: bool,
    /// Warnings for the client, e.g. unknown fields dropped under `fieldValidation=Warn`.
    pub warnings: Vec<String>,
}

/// POST: create an object.
#[derive(Clone, Debug, Serialize, Deserialize, Message)]
#[rtype(result = "Result<WriteResult, ApiError>")]
pub struct CreateObject {
    /// The collection.
    pub target: Target,
    /// The object as sent.
    pub object: Value,
    /// Write options.
    pub options: WriteOptions,
}

/// PUT: replace an object (or its status / scale).
#[derive(Clone, Debug, Serialize, Deserialize, Message)]
#[rtype(result = "Result<WriteResult, ApiError>")]
pub struct UpdateObject {
    /// The object.
    pub target: Target,
    /// The object as sent.
    pub object: Value,
    /// Write options.
    pub options: WriteOptions,
}

/// PATCH: patch an object (or its status / scale).
#[derive(Clone, Debug, Serialize, Deserialize, Message)]
#[rtype(result = "Result<WriteResult, ApiError>")]
pub struct PatchObject {
    /// The object.
    pub target: Target,
    /// The patch's Content-Type.
    pub content_type: String,
    /// The patch body.
    pub patch: Vec<u8>,
    /// Write options.
    pub options: WriteOptions,
}

/// `metav1.DeleteOptions`, the parts the registry acts on.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct DeleteOptions {
    /// `gracePeriodSeconds`.
    pub grace_period_seconds: Option<i64>,
    /// `preconditions.uid`.
    pub precondition_uid: Option<String>,
    /// `preconditions.resourceVersion`.
    pub precondition_resource_version: Option<String>,
    /// `propagationPolicy` (`Orphan`, `Background`, `Foreground`), or the legacy
    /// `orphanDependents` mapped to it.
    pub propagation_policy: Option<String>,
}

/// DELETE of one object.
#[derive(Clone, Debug, Serialize, Deserialize, Message)]
#[rtype(result = "Result<WriteResult, ApiError>")]
pub struct DeleteObject {
    /// The object.
    pub target: Target,
    /// Delete options.
    pub delete: DeleteOptions,
    /// Write options.
    pub options: WriteOptions,
}

/// DELETE of a collection, filtered by selectors.
#[derive(Clone, Debug, Serialize, Deserialize, Message)]
#[rtype(result = "Result<Vec<Value>, ApiError>")]
pub struct DeleteCollection {
    /// The collection.
    pub target: Target,
    /// Which objects.
    pub selection: Selection,
    /// Delete options.
    pub delete: DeleteOptions,
    /// Write options.
    pub options: WriteOptions,
}

// ---------------------------------------------------------------- cacher (reads)

/// Label and field selectors, as sent.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Selection {
    /// `labelSelector`.
    pub label_selector: String,
    /// `fieldSelector`.
    pub field_selector: String,
}

/// `resourceVersion` and `resourceVersionMatch` of a read.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReadConsistency {
    /// `resourceVersion`: `None` (consistent read), `"0"` (any), or a revision.
    pub resource_version: Option<String>,
    /// `resourceVersionMatch`: `NotOlderThan`, `Exact`, or `None`.
    pub resource_version_match: Option<String>,
}

/// GET of one object.
#[derive(Clone, Debug, Serialize, Deserialize, Message)]
#[rtype(result = "Result<EncodedObject, ApiError>")]
pub struct GetObject {
    /// The object.
    pub target: Target,
    /// Read consistency.
    pub consistency: ReadConsistency,
}

/// GET of a collection.
#[derive(Clone, Debug, Serialize, Deserialize, Message)]
#[rtype(result = "Result<ObjectList, ApiError>")]
pub struct ListObjects {
    /// The collection (namespace `""`: all namespaces).
    pub target: Target,
    /// Selectors.
    pub selection: Selection,
    /// Read consistency.
    pub consistency: ReadConsistency,
    /// `limit` (0: no limit).
    pub limit: usize,
    /// `continue`.
    pub continue_token: Option<String>,
}

/// A list answer.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ObjectList {
    /// The items, each with its `resourceVersion` set.
    pub items: Vec<EncodedObject>,
    /// `metadata.resourceVersion` of the list.
    pub resource_version: String,
    /// `metadata.continue`.
    pub continue_token: Option<String>,
    /// `metadata.remainingItemCount`.
    pub remaining_item_count: Option<u64>,
}

/// A watch request.
#[derive(Clone, Debug, Serialize, Deserialize, Message)]
#[rtype(result = "Result<WatchReceiver, ApiError>")]
pub struct WatchObjects {
    /// The collection (or one object, through a `metadata.name` field selector).
    pub target: Target,
    /// Selectors.
    pub selection: Selection,
    /// Read consistency (`resourceVersion` to start after).
    pub consistency: ReadConsistency,
    /// `allowWatchBookmarks`.
    pub allow_bookmarks: bool,
    /// `sendInitialEvents`.
    pub send_initial_events: Option<bool>,
    /// How long the watch will last (`timeoutSeconds`, or the server's randomised default):
    /// a watcher asking for bookmarks gets one shortly before it ends, so it resumes from a
    /// recent resourceVersion.
    pub timeout_seconds: Option<u64>,
}

/// The type of a watch event on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum WatchEventType {
    /// `ADDED`.
    Added,
    /// `MODIFIED`.
    Modified,
    /// `DELETED`.
    Deleted,
    /// `BOOKMARK`.
    Bookmark,
    /// `ERROR`.
    Error,
}

pub use crate::encoded::WatchEvent;

/// The live side of a watch: events until the channel closes (the watch ended or the watcher
/// was cut off for falling behind; clients re-watch from their last resourceVersion).
pub struct WatchReceiver(pub mpsc::Receiver<WatchEvent>);

impl std::fmt::Debug for WatchReceiver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("WatchReceiver")
    }
}

impl Serialize for WatchReceiver {
    fn serialize<S: serde::Serializer>(&self, _: S) -> Result<S::Ok, S::Error> {
        Err(serde::ser::Error::custom("a live watch stream crosses processes as a stream, not a message"))
    }
}

impl<'de> Deserialize<'de> for WatchReceiver {
    fn deserialize<D: serde::Deserializer<'de>>(_: D) -> Result<Self, D::Error> {
        Err(serde::de::Error::custom("a live watch stream crosses processes as a stream, not a message"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::de::DeserializeOwned;
    use serde_json::json;

    /// Encodes with the wire format a remote stage will use and checks nothing is lost.
    fn round_trip<T: Serialize + DeserializeOwned>(msg: &T) {
        let bytes = rmp_serde::to_vec_named(msg).expect("encodes");
        let back: T = rmp_serde::from_slice(&bytes).expect("decodes");
        assert_eq!(serde_json::to_value(&back).unwrap(), serde_json::to_value(msg).unwrap());
    }

    #[test]
    fn stage_messages_cross_processes_intact() {
        let target = Target {
            group: "apps".into(),
            version: "v1".into(),
            resource: "deployments".into(),
            subresource: "scale".into(),
            namespace: "a".into(),
            name: "web".into(),
        };
        let user = UserInfo { name: "alice".into(), uid: "1".into(), groups: vec!["dev".into()] };
        let options = WriteOptions {
            user: user.clone(),
            dry_run: true,
            field_validation: FieldValidation::Strict,
            field_manager: Some("kubectl".into()),
        };
        let object = json!({"metadata": {"name": "web", "labels": {}}, "spec": {"replicas": 3, "x": null, "f": 1.5}});
        round_trip(&Authenticate(Credentials {
            bearer_token: Some("t".into()),
            client_certificate: Some(user.clone()),
        }));
        round_trip(&Authorize {
            user: user.clone(),
            request: crate::request::parse_request_info("GET", "/api/v1/pods", true),
        });
        round_trip(&StartRequest { user: user.clone(), request: RequestInfo::default() });
        round_trip(&Admit {
            operation: Operation::Update,
            target: target.clone(),
            user,
            object: object.clone(),
            old_object: Some(object.clone()),
            dry_run: false,
        });
        round_trip(&CreateObject { target: target.clone(), object: object.clone(), options: options.clone() });
        round_trip(&PatchObject {
            target: target.clone(),
            content_type: "application/merge-patch+json".into(),
            patch: b"{}".to_vec(),
            options: options.clone(),
        });
        let delete = DeleteOptions {
            grace_period_seconds: Some(0),
            precondition_uid: Some("u".into()),
            precondition_resource_version: None,
            propagation_policy: Some("Foreground".into()),
        };
        round_trip(&DeleteObject { target: target.clone(), delete: delete.clone(), options: options.clone() });
        round_trip(&DeleteCollection {
            target: target.clone(),
            selection: Selection { label_selector: "a=b".into(), field_selector: "metadata.name=x".into() },
            delete,
            options,
        });
        round_trip(&ListObjects {
            target: target.clone(),
            selection: Selection::default(),
            consistency: ReadConsistency {
                resource_version: Some("5".into()),
                resource_version_match: Some("Exact".into()),
            },
            limit: 10,
            continue_token: Some("c".into()),
        });
        round_trip(&ObjectList {
            items: vec![crate::encoded::EncodedObject::encode(&object)],
            resource_version: "5".into(),
            continue_token: None,
            remaining_item_count: Some(2),
        });
        round_trip(&ApiError::not_found("apps", "deployments", "web"));
    }

    #[test]
    fn a_live_watch_refuses_to_serialize() {
        let (_tx, rx) = mpsc::channel(1);
        assert!(rmp_serde::to_vec_named(&WatchReceiver(rx)).is_err());
    }
}
