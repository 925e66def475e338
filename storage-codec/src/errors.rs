//! Storage errors as the API reports them, mapped once (kube's `storage/errors`
//! `Interpret*Error`): a missing key is the object's 404, a taken key its 409, a guard that
//! failed a stale-resourceVersion 409, a compacted revision 410, a backend failure a 500 naming
//! the backend, a storage stage process out of reach a 503 naming the stage.

use apimachinery::catalogue::ResourceDef;
use apimachinery::error::ApiError;

use storage::StorageError;

/// Maps a storage error to Status for object `name` (`""` for a collection) of `def`.
pub fn interpret(def: &ResourceDef, name: &str, e: StorageError) -> ApiError {
    match e {
        StorageError::NotFound { .. } => ApiError::not_found(&def.group, &def.resource, name),
        StorageError::AlreadyExists { .. } => ApiError::already_exists(&def.group, &def.resource, name),
        StorageError::Conflict { .. } => ApiError::stale_resource_version(&def.group, &def.resource, name),
        StorageError::Compacted { requested, compacted } => {
            ApiError::expired(format!("too old resource version: {requested} ({compacted})"))
        }
        StorageError::FutureRevision { requested, current } => ApiError::too_large_resource_version(requested, current),
        StorageError::TooLarge { .. } => ApiError::new(apimachinery::Reason::RequestEntityTooLarge, e.to_string()),
        StorageError::Unavailable { .. } | StorageError::Corrupt { .. } => ApiError::internal(e),
        StorageError::StageUnreachable { .. } => ApiError::unavailable(e.to_string()),
    }
}
