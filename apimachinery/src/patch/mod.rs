//! PATCH bodies applied to a stored object, as kube-apiserver applies them
//! (`k8s.io/apiserver/pkg/endpoints/handlers/patch.go`).
//!
//! The content type chooses the mechanism ([`PatchType::from_content_type`]):
//! - `application/json-patch+json`: RFC 6902 operations (`kubectl patch --type=json`), applied
//!   with the `json-patch` crate;
//! - `application/merge-patch+json`: RFC 7386 merge patch (`kubectl label`, `annotate`,
//!   `--type=merge`), with the null pruning of the Go library kube uses;
//! - `application/strategic-merge-patch+json`: strategic merge patch (`kubectl apply`,
//!   `edit`, `set image`, `rollout restart`, `patch`'s default): see [`strategic`], driven by
//!   the kind's schema from [`crate::schema::kind_node`];
//! - `application/apply-patch+yaml` (server-side apply) is not a patch of the document alone:
//!   it needs the object's managed fields, so the registry applies it through
//!   [`crate::managedfields`].
//!
//! # Errors, as kube-apiserver words them
//! - a body that is not JSON, or not the shape the type needs: 400 BadRequest with Go's
//!   decoder message (`invalid character 'x' looking for beginning of value`; `Invalid JSON
//!   Patch` for a merge patch);
//! - a JSON patch operation that fails (`test` not matching, a path that does not exist):
//!   422 Invalid, `the server rejected our request due to an error in our request` (kube keeps
//!   no detail);
//! - more than 10,000 JSON patch operations: 413;
//! - strategic merge errors: see [`strategic`];
//! - a patch that turns the object into something other than a JSON object: 422 Invalid on
//!   field `patch`, as kube's decode of the result fails;
//! - a patched object nesting deeper than [`MAX_NESTING`] (what a body may): 422 Invalid on
//!   field `patch` (this server's bound; kube's decoder reads 10,000 levels).
//!
//! The result is the patched object only: checking that name, kind and apiVersion are
//! unchanged, defaulting, validation and pruning are the caller's steps, as in kube.

mod gojson;
pub mod strategic;

use serde_json::Value;

pub use strategic::{PatchSchema, strategic_merge_patch};

use crate::error::{ApiError, Cause, Reason};
use crate::object::MAX_NESTING;

/// How a PATCH body is to be applied, chosen by its `Content-Type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum PatchType {
    /// `application/json-patch+json`: RFC 6902 operations.
    Json,
    /// `application/merge-patch+json`: RFC 7386 merge patch.
    Merge,
    /// `application/strategic-merge-patch+json`: kube's strategic merge patch.
    StrategicMerge,
    /// `application/apply-patch+yaml`: server-side apply.
    Apply,
}

/// The content types [`apply_patch`] applies, in the order kube lists them in its 415 message.
pub const SUPPORTED_PATCH_CONTENT_TYPES: &[&str] = &[
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
    "application/apply-patch+yaml",
];

/// The patch types custom resources take: kube has no Go struct to read strategic merge
/// metadata from.
pub const CUSTOM_RESOURCE_PATCH_CONTENT_TYPES: &[&str] =
    &["application/json-patch+json", "application/merge-patch+json", "application/apply-patch+yaml"];

/// The patch content types a kind takes, by [`Strategy::takes_strategic_merge_patch`].
///
/// [`Strategy::takes_strategic_merge_patch`]: crate::catalogue::Strategy::takes_strategic_merge_patch
pub fn accepted_content_types(strategic: bool) -> &'static [&'static str] {
    if strategic { SUPPORTED_PATCH_CONTENT_TYPES } else { CUSTOM_RESOURCE_PATCH_CONTENT_TYPES }
}

/// kube-apiserver's cap on JSON patch operations (`maxJSONPatchOperations`).
pub const MAX_JSON_PATCH_OPERATIONS: usize = 10_000;

impl PatchType {
    /// The patch type a `Content-Type` header names (parameters such as `; charset=utf-8`
    /// ignored), `None` for anything else: the caller answers that with
    /// [`unsupported_patch_type`].
    pub fn from_content_type(ct: &str) -> Option<PatchType> {
        let media = ct.split(';').next().unwrap_or_default().trim();
        [PatchType::Json, PatchType::Merge, PatchType::StrategicMerge, PatchType::Apply]
            .into_iter()
            .find(|t| media.eq_ignore_ascii_case(t.content_type()))
    }

    /// The media type of this patch type, for audit records and metrics.
    pub fn content_type(self) -> &'static str {
        match self {
            PatchType::Json => "application/json-patch+json",
            PatchType::Merge => "application/merge-patch+json",
            PatchType::StrategicMerge => "application/strategic-merge-patch+json",
            PatchType::Apply => "application/apply-patch+yaml",
        }
    }
}

/// 415 UnsupportedMediaType for a PATCH whose content type we do not apply, worded as kube's
/// `NewUnsupportedMediaTypeError` (listing [`SUPPORTED_PATCH_CONTENT_TYPES`]).
pub fn unsupported_patch_type() -> ApiError {
    unsupported_patch_type_of(SUPPORTED_PATCH_CONTENT_TYPES)
}

/// 415 for a PATCH of a resource accepting only `accepted`.
pub fn unsupported_patch_type_of(accepted: &[&str]) -> ApiError {
    ApiError::new(
        Reason::UnsupportedMediaType,
        format!(
            "the body of the request was in an unknown format - accepted media types include: {}",
            accepted.join(", ")
        ),
    )
}

/// Applies `patch` (the request body) of type `patch_type` to `original` (the stored object)
/// and returns the patched object.
///
/// `gvk` (group, version, kind) selects the schema a strategic merge patch walks; a kind
/// without one is merged like a JSON merge patch (directives still honoured).
pub fn apply_patch(
    patch_type: PatchType,
    original: &Value,
    patch: &[u8],
    gvk: (&str, &str, &str),
) -> Result<Value, ApiError> {
    let patched = match patch_type {
        PatchType::Json => json_patch(original, patch)?,
        PatchType::Merge => merge_patch(original, patch)?,
        PatchType::StrategicMerge => {
            let (group, version, kind) = gvk;
            strategic_merge_patch(original, patch, crate::schema::kind_node(group, version, kind))?
        }
        PatchType::Apply => return Err(ApiError::internal("an apply patch is applied through the field manager")),
    };
    if !patched.is_object() {
        return Err(not_an_object(&patched));
    }
    if crate::object::nesting(&patched) > MAX_NESTING {
        return Err(too_deep());
    }
    Ok(patched)
}

/// The 422 for a patch whose result nests deeper than a body may: such an object could be
/// stored but never decoded again (a JSON patch can add a deep value at a deep path).
fn too_deep() -> ApiError {
    let message = format!("Forbidden: the patched object must not nest deeper than {MAX_NESTING} levels");
    ApiError::invalid("", "", "", vec![Cause { reason: "FieldValueForbidden".into(), message, field: "patch".into() }])
}

/// 422 with kube's generic message: how kube reports a JSON patch operation that fails.
fn unprocessable() -> ApiError {
    ApiError::new(Reason::Invalid, strategic::UNPROCESSABLE_MESSAGE)
}

/// The 422 kube returns when the patched document does not decode as an object.
fn not_an_object(patched: &Value) -> ApiError {
    let text = patched.to_string();
    let message = format!(
        "Invalid value: {}: {}",
        serde_json::to_string(&text).unwrap_or_default(),
        gojson::type_error(patched, "map[string]interface {}")
    );
    ApiError::invalid("", "", "", vec![Cause { reason: "FieldValueInvalid".into(), message, field: "patch".into() }])
}

/// RFC 6902: the body decodes as Go's `jsonpatch.DecodePatch` would (400 on failure), the
/// operations then apply in order (422 if one fails).
fn json_patch(original: &Value, body: &[u8]) -> Result<Value, ApiError> {
    gojson::check_syntax(body).map_err(ApiError::bad_request)?;
    let decoded: Value = serde_json::from_slice(body).map_err(|e| ApiError::bad_request(e.to_string()))?;
    let operations = match decoded {
        Value::Null => return Ok(original.clone()),
        Value::Array(ops) => ops,
        other => return Err(ApiError::bad_request(gojson::type_error(&other, "jsonpatch.Patch"))),
    };
    if let Some(bad) = operations.iter().find(|op| !op.is_object() && !op.is_null()) {
        return Err(ApiError::bad_request(gojson::type_error(bad, "jsonpatch.Operation")));
    }
    if operations.len() > MAX_JSON_PATCH_OPERATIONS {
        return Err(ApiError::new(
            Reason::RequestEntityTooLarge,
            format!(
                "Request entity too large: The allowed maximum operations in a JSON patch is {MAX_JSON_PATCH_OPERATIONS}, got {}",
                operations.len()
            ),
        ));
    }
    // kube decodes operations lazily: an unknown `op` or a malformed path fails when applied.
    let operations: json_patch::Patch =
        serde_json::from_value(Value::Array(operations)).map_err(|_| unprocessable())?;
    let mut doc = original.clone();
    json_patch::patch_unsafe(&mut doc, &operations).map_err(|_| unprocessable())?;
    Ok(doc)
}

/// RFC 7386 merge patch with the semantics of the Go library kube uses
/// (`evanphx/json-patch` v4 `MergePatch`).
fn merge_patch(original: &Value, body: &[u8]) -> Result<Value, ApiError> {
    const BAD_PATCH: &str = "Invalid JSON Patch";
    if gojson::check_syntax(body).is_err() {
        return Err(ApiError::bad_request(BAD_PATCH));
    }
    let patch: Value = serde_json::from_slice(body).map_err(|_| ApiError::bad_request(BAD_PATCH))?;
    match patch {
        Value::Object(patch) => {
            let mut doc = original.clone();
            match &mut doc {
                Value::Object(doc) => merge_docs(doc, patch),
                _ => return Err(ApiError::internal("the object to patch is not a JSON object")),
            }
            Ok(doc)
        }
        // Not a document: the patch replaces it (and the result is refused by the caller).
        Value::Array(mut items) => {
            items.iter_mut().for_each(prune_nulls);
            Ok(Value::Array(items))
        }
        _ => Err(ApiError::bad_request(BAD_PATCH)),
    }
}

/// `mergeDocs`: null deletes, a new or previously null field takes the patch's value without
/// its nulls, objects merge recursively.
fn merge_docs(doc: &mut serde_json::Map<String, Value>, patch: serde_json::Map<String, Value>) {
    for (key, mut value) in patch {
        if value.is_null() {
            doc.remove(&key);
            continue;
        }
        match doc.get_mut(&key) {
            None | Some(Value::Null) => {
                prune_nulls(&mut value);
                doc.insert(key, value);
            }
            Some(current) => merge_value(current, value),
        }
    }
}

/// `merge`: onto a non-object the (null-pruned) patch value replaces; a non-object patch value
/// replaces as it is; two objects merge.
fn merge_value(current: &mut Value, mut patch: Value) {
    match (current, patch.is_object()) {
        (Value::Object(cur), true) => {
            let Value::Object(patch) = patch else { unreachable!("checked") };
            merge_docs(cur, patch);
        }
        (current @ Value::Object(_), false) => *current = patch,
        (current, _) => {
            prune_nulls(&mut patch);
            *current = patch;
        }
    }
}

/// `pruneNulls`: removes null object members at every depth (list items stay, even null).
fn prune_nulls(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.retain(|_, v| !v.is_null());
            map.values_mut().for_each(prune_nulls);
        }
        Value::Array(items) => items.iter_mut().for_each(prune_nulls),
        _ => {}
    }
}

#[cfg(test)]
mod tests;
