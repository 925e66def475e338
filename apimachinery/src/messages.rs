//! The messages stages exchange, and their replies. They are serde types (a watch's live stream
//! excepted) so that a stage can run in another process behind the same handle: each implements
//! [`actors::Request`], which names its reply.
//!
//! Query parameters arrive here already parsed ([`crate::options`]): no stage reads a
//! `resourceVersion` string or a propagation policy by name.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::mpsc;

use crate::encoded::EncodedObject;
use crate::error::ApiError;
use std::sync::Arc;

use crate::catalogue::{Catalogue, ResourceDef, Subresource};
use crate::options::{DeleteOptions, GetOptions, ListOptions, WatchOptions, WriteOptions};
use crate::patch::PatchType;
use crate::request::{RequestInfo, UserInfo};

pub use crate::encoded::{WatchEvent, WatchEventType};

macro_rules! request {
    ($($msg:ty => $reply:ty),+ $(,)?) => {$(
        impl actors::Request for $msg {
            type Reply = Result<$reply, ApiError>;
        }
    )+};
}

/// Which object or collection a request is about.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Target {
    /// API group (`""` for core).
    pub group: String,
    /// API version.
    pub version: String,
    /// Plural resource.
    pub resource: String,
    /// Subresource (`status`, `scale`, `finalize`), if any.
    pub subresource: Option<Subresource>,
    /// Namespace, `""` for cluster-scoped resources or all namespaces.
    pub namespace: String,
    /// Object name, `""` for a collection.
    pub name: String,
    /// The group and version the client asked in, when the stages see the stored ones above
    /// instead (an `autoscaling/v1` HorizontalPodAutoscaler is stored as `v2`): admission
    /// shows webhooks and policies the request in the version it came in.
    #[serde(default)]
    pub requested: Option<(String, String)>,
}

impl Target {
    /// The collection of `def` in `namespace` (`""`: all namespaces, or cluster-scoped).
    pub fn collection(def: &ResourceDef, namespace: &str) -> Self {
        Target {
            group: def.group.to_string(),
            version: def.version.to_string(),
            resource: def.resource.to_string(),
            namespace: namespace.to_string(),
            ..Default::default()
        }
    }

    /// One object of `def`.
    pub fn object(def: &ResourceDef, namespace: &str, name: &str) -> Self {
        Target { name: name.to_string(), ..Self::collection(def, namespace) }
    }

    /// The same target without its subresource.
    pub fn main(&self) -> Self {
        Target { subresource: None, ..self.clone() }
    }

    /// The served resource in `catalogue`, or 404 as kube answers an unknown resource.
    pub fn resolve(&self, catalogue: &Catalogue) -> Result<Arc<ResourceDef>, ApiError> {
        catalogue
            .find(&self.group, &self.version, &self.resource)
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
    /// The audiences a token must be meant for; empty means the server's own (`--api-audiences`).
    /// A TokenReview names its own.
    pub audiences: Vec<String>,
}

/// Asks the authentication stage who is calling.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Authenticate(pub Credentials);

/// Who the caller is, and for which of the asked audiences its token holds (what a TokenReview
/// reports back; empty for credentials without audiences, such as certificates).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Authenticated {
    /// The user.
    pub user: UserInfo,
    /// The audiences the credential was accepted for.
    pub audiences: Vec<String>,
}

// ---------------------------------------------------------------- authorization

/// Asks the authorization stage whether `user` may do what `request` says.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Authorize {
    /// The authenticated user.
    pub user: UserInfo,
    /// The request's attributes.
    pub request: RequestInfo,
}

/// What the authorization stage decided (kube's `authorizer.Decision` and reason).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuthorizationDecision {
    /// An authorizer allowed the request.
    pub allowed: bool,
    /// An authorizer denied it outright (rather than none having an opinion).
    pub denied: bool,
    /// Why: the allowing rule's description, or the reasons of those that had no opinion.
    pub reason: String,
    /// An authorizer failed (a webhook unreachable): unless another allowed the request, kube
    /// answers 500 with this, not 403.
    #[serde(default)]
    pub error: String,
}

// ---------------------------------------------------------------- flow control

/// Which flow schema and priority level API Priority and Fairness put a request in: decided
/// before the request may wait anywhere, so a request APF exempts is never turned away.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Classification {
    /// The matching FlowSchema's name.
    pub flow_schema: String,
    /// `X-Kubernetes-PF-FlowSchema-UID`.
    pub flow_schema_uid: String,
    /// The PriorityLevelConfiguration's name.
    pub priority_level: String,
    /// `X-Kubernetes-PF-PriorityLevel-UID`.
    pub priority_level_uid: String,
    /// The `exempt` priority level: executes at once, never queued or rejected by APF.
    pub exempt: bool,
    /// The flow within the level (the schema's distinguisher: user name, namespace, or
    /// none), which shuffle sharding hashes.
    #[serde(default)]
    pub flow_distinguisher: String,
}

/// Asks the flow-control (APF) stage for a seat to execute a classified, non-exempt request.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct StartRequest {
    /// The authenticated user.
    pub user: UserInfo,
    /// The request's attributes.
    pub request: RequestInfo,
    /// Its classification.
    pub classification: Classification,
    /// What it will cost, for its width in seats.
    pub work: RequestWork,
}

/// What a request will cost, counted by the gateway before it runs: the inputs of kube's work
/// estimator. The flow-control stage turns them into seats within its level's ceiling, which
/// only it knows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RequestWork {
    /// Objects a list (or a watch sending its initial events) is expected to go through; 0
    /// for any other request.
    pub objects: u64,
    /// Watchers a write's event will reach; 0 for reads.
    pub watchers: u64,
}

/// A granted seat. Dropping it gives the seats back: the request's end, its cancellation, a
/// panic or the deadline all release them, and a grant whose caller went away before it
/// arrived releases them where it is dropped.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct SeatGrant {
    /// Seats the request occupies.
    pub seats: u32,
    /// Gives the seats back when dropped; absent once the grant crossed a process (a remote
    /// stage releases on its side).
    #[serde(skip)]
    pub guard: Option<SeatGuard>,
}

/// Which request of which priority level holds seats, for the flow-control stage.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SeatTicket {
    /// The priority level.
    pub level: String,
    /// The request within the level's queue set.
    pub id: u64,
}

/// What a [`SeatGuard`] or a waiting request tells the flow-control stage when it ends.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SeatRelease {
    /// A dispatched request finished: its seats are free.
    Finished(SeatTicket),
    /// A waiting request's caller went away: it leaves its queue.
    Cancelled(SeatTicket),
}

/// Sends [`SeatRelease::Finished`] once, when dropped. The channel is unbounded on purpose:
/// a release must never wait or be lost, and there is at most one per granted request.
#[derive(Debug)]
pub struct SeatGuard {
    ticket: SeatTicket,
    release: mpsc::UnboundedSender<SeatRelease>,
}

impl SeatGuard {
    /// A guard releasing `ticket` through `release`.
    pub fn new(ticket: SeatTicket, release: mpsc::UnboundedSender<SeatRelease>) -> Self {
        SeatGuard { ticket, release }
    }
}

impl Drop for SeatGuard {
    fn drop(&mut self) {
        let ticket = std::mem::replace(&mut self.ticket, SeatTicket { level: String::new(), id: 0 });
        // The stage gone means the server is stopping: nothing holds seats any more.
        let _ = self.release.send(SeatRelease::Finished(ticket));
    }
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

/// Which half of admission a call runs. kube mutates first, then validates the mutated
/// object against the kind's schema and rules, then runs validating admission on the result,
/// so the storage stage asks twice around its own validation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum AdmissionPhase {
    /// Built-in mutating plugins, then mutating webhooks (reinvoked when asked to).
    Mutating,
    /// Built-in validating plugins, ValidatingAdmissionPolicies, then validating webhooks.
    Validating,
}

/// Asks the admission stage to admit (and, in the mutating phase, possibly change) a write.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Admit {
    /// Mutating or validating.
    pub phase: AdmissionPhase,
    /// The operation.
    pub operation: Operation,
    /// What is written, subresource included (`pods/status`).
    pub target: Target,
    /// Who writes.
    pub user: UserInfo,
    /// The object after the write (for Delete, the object being deleted).
    pub object: Value,
    /// The object before the write, for Update and Delete.
    pub old_object: Option<Arc<Value>>,
    /// Whether the write is a dry run.
    pub dry_run: bool,
    /// The request's options as an AdmissionReview carries them (`CreateOptions`,
    /// `UpdateOptions` or `DeleteOptions` of `meta.k8s.io/v1`).
    pub options: Value,
}

/// What admission answers: the object to go on with, and what it has to say about it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Admitted {
    /// The object, changed by the mutating phase; as sent in the validating phase.
    pub object: Value,
    /// `Warning` headers for the client (PodSecurity's `warn`, webhooks' `warnings`).
    pub warnings: Vec<String>,
    /// Annotations for the request's audit event (`pod-security.kubernetes.io/audit-violations`,
    /// webhooks' `auditAnnotations` under their names).
    pub audit_annotations: Vec<(String, String)>,
}

// ---------------------------------------------------------------- storage stage (writes)

/// What a write answers with.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Written {
    /// An object of the request's resource as stored (or as deleted / marked for deletion), in
    /// its stored version.
    Object(Value),
    /// The `autoscaling/v1` Scale view of the object (writes to `/scale`).
    Scale(Value),
    /// A `Status` with `status: Success` (deletes of kinds that answer with one).
    Status(Value),
}

impl Written {
    /// The JSON answered, whichever it is.
    pub fn value(&self) -> &Value {
        match self {
            Written::Object(v) | Written::Scale(v) | Written::Status(v) => v,
        }
    }
}

/// A write's answer: the object and any warnings (`Warning` headers).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct WriteResult {
    /// What the response body carries.
    pub object: Written,
    /// Whether an update created the object (201 instead of 200).
    pub created: bool,
    /// For deletes: whether the object is gone (false while finalizers or a grace period hold it).
    pub deleted: bool,
    /// Warnings for the client, e.g. unknown fields dropped under `fieldValidation=Warn`.
    pub warnings: Vec<String>,
    /// Annotations admission asked to add to the request's audit event.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub audit_annotations: Vec<(String, String)>,
}

/// POST: create an object.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CreateObject {
    /// The collection.
    pub target: Target,
    /// The object as sent, in the stored version.
    pub object: Value,
    /// Who writes.
    pub user: UserInfo,
    /// `CreateOptions`.
    pub options: WriteOptions,
}

/// PUT: replace an object (or its status / scale / finalizers).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct UpdateObject {
    /// The object.
    pub target: Target,
    /// The object as sent (a Scale for `/scale`).
    pub object: Value,
    /// Who writes.
    pub user: UserInfo,
    /// `UpdateOptions`.
    pub options: WriteOptions,
}

/// PATCH: patch an object (or its status / scale).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PatchObject {
    /// The object.
    pub target: Target,
    /// How the patch applies, from its Content-Type.
    pub patch_type: PatchType,
    /// The patch body.
    pub patch: Vec<u8>,
    /// Who writes.
    pub user: UserInfo,
    /// `PatchOptions`.
    pub options: WriteOptions,
}

/// DELETE of one object.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct DeleteObject {
    /// The object.
    pub target: Target,
    /// Who deletes.
    pub user: UserInfo,
    /// `DeleteOptions`.
    pub options: DeleteOptions,
}

/// DELETE of a collection, filtered by selectors.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct DeleteCollection {
    /// The collection.
    pub target: Target,
    /// Which objects.
    pub list: ListOptions,
    /// Who deletes.
    pub user: UserInfo,
    /// `DeleteOptions`, applied to each.
    pub options: DeleteOptions,
}

// ---------------------------------------------------------------- cacher (reads)

/// GET of one object.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct GetObject {
    /// The object.
    pub target: Target,
    /// `GetOptions`.
    pub options: GetOptions,
}

/// GET of a collection.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ListObjects {
    /// The collection (namespace `""`: all namespaces).
    pub target: Target,
    /// `ListOptions`.
    pub options: ListOptions,
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
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct WatchObjects {
    /// The collection (one object is watched through a `metadata.name` field selector).
    pub target: Target,
    /// `ListOptions` of a watch. `timeout_seconds` is the watch's whole duration (the client's,
    /// or the server's randomised default): a watcher asking for bookmarks gets one shortly
    /// before it ends, so it resumes from a recent resourceVersion.
    pub options: WatchOptions,
}

/// The live side of a watch: events until the channel closes (the watch ended or the watcher
/// was cut off for falling behind; clients re-watch from their last resourceVersion).
pub struct WatchReceiver(pub mpsc::Receiver<WatchEvent>);

impl std::fmt::Debug for WatchReceiver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("WatchReceiver")
    }
}

/// A live stream is not a message: a networked transport carries it as a stream of events.
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

request! {
    Authenticate => Authenticated,
    Authorize => AuthorizationDecision,
    StartRequest => SeatGrant,
    Admit => Admitted,
    CreateObject => WriteResult,
    UpdateObject => WriteResult,
    PatchObject => WriteResult,
    DeleteObject => WriteResult,
    DeleteCollection => Vec<Value>,
    GetObject => EncodedObject,
    ListObjects => ObjectList,
    WatchObjects => WatchReceiver,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::{FieldValidation, Propagation, ReadAt};
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
            subresource: Some(Subresource::Scale),
            namespace: "a".into(),
            name: "web".into(),
            requested: Some(("apps".into(), "v1beta9".into())),
        };
        let user = UserInfo { name: "alice".into(), uid: "1".into(), groups: vec!["dev".into()], ..Default::default() };
        let options = WriteOptions {
            dry_run: true,
            field_validation: FieldValidation::Strict,
            field_manager: Some("kubectl".into()),
            force: true,
            agent_manager: "kubectl".into(),
            body_keys: vec![("metadata.name".into(), false), ("metadata.name".into(), true)],
            yaml_repeats: vec!["line 3: key \"name\" already set in map".into()],
            cache_revision: Some(41),
        };
        let object = json!({"metadata": {"name": "web", "labels": {}}, "spec": {"replicas": 3, "x": null, "f": 1.5}});
        round_trip(&Authenticate(Credentials {
            bearer_token: Some("t".into()),
            client_certificate: Some(user.clone()),
            audiences: vec!["api".into()],
        }));
        round_trip(&Authorize {
            user: user.clone(),
            request: crate::request::parse_request_info("GET", "/api/v1/pods", true),
        });
        round_trip(&StartRequest {
            user: user.clone(),
            request: RequestInfo::default(),
            classification: Classification { flow_schema: "global-default".into(), ..Default::default() },
            work: RequestWork { objects: 550, watchers: 12 },
        });
        round_trip(&Admit {
            phase: AdmissionPhase::Mutating,
            operation: Operation::Update,
            target: target.clone(),
            user: user.clone(),
            object: object.clone(),
            old_object: Some(Arc::new(object.clone())),
            dry_run: false,
            options: serde_json::json!({"kind": "UpdateOptions", "apiVersion": "meta.k8s.io/v1"}),
        });
        round_trip(&CreateObject {
            target: target.clone(),
            object: object.clone(),
            user: user.clone(),
            options: options.clone(),
        });
        round_trip(&PatchObject {
            target: target.clone(),
            patch_type: PatchType::Merge,
            patch: b"{}".to_vec(),
            user: user.clone(),
            options: options.clone(),
        });
        let delete = DeleteOptions {
            grace_period_seconds: Some(0),
            precondition_uid: Some("u".into()),
            precondition_resource_version: None,
            propagation: Some(Propagation::Foreground),
            dry_run: true,
        };
        round_trip(&DeleteObject { target: target.clone(), user: user.clone(), options: delete.clone() });
        let cms = &crate::catalogue::testing::config_maps();
        let params = crate::options::Params::new(vec![
            ("labelSelector".into(), "a=b".into()),
            ("fieldSelector".into(), "metadata.name=x".into()),
        ]);
        let list = ListOptions::parse(&params, cms).unwrap();
        round_trip(&DeleteCollection { target: target.clone(), list: list.clone(), user, options: delete });
        round_trip(&ListObjects {
            target: target.clone(),
            options: ListOptions { read_at: ReadAt::Exact(5), limit: 10, ..list },
        });
        round_trip(&ObjectList {
            items: vec![crate::encoded::EncodedObject::encode(&object)],
            resource_version: "5".into(),
            continue_token: None,
            remaining_item_count: Some(2),
        });
        round_trip(&WriteResult {
            object: Written::Scale(object.clone()),
            created: false,
            deleted: false,
            warnings: vec!["w".into()],
            audit_annotations: vec![("k".into(), "v".into())],
        });
        round_trip(&ApiError::not_found("apps", "deployments", "web"));
    }

    #[test]
    fn a_live_watch_refuses_to_serialize() {
        let (_tx, rx) = mpsc::channel(1);
        assert!(rmp_serde::to_vec_named(&WatchReceiver(rx)).is_err());
    }
}
