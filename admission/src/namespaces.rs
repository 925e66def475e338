//! What admission reads of a namespace: its phase and its labels. Every namespaced write looks
//! its namespace up at least once (NamespaceLifecycle), pods and webhooks with a namespace
//! selector once more, and a Namespace carries managedFields and annotations that none of them
//! reads: these two fields are decoded from the cached JSON, and the rest is skipped over.

use apimachinery::error::ApiError;
use apimachinery::lookup::ObjectLookup;
use serde::Deserialize;
use serde_json::{Map, Value};

/// A namespace's phase and labels.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct NamespaceView {
    #[serde(default)]
    metadata: Option<Metadata>,
    #[serde(default)]
    status: Option<Status>,
}

#[derive(Debug, Default, Deserialize)]
struct Metadata {
    #[serde(default)]
    labels: Option<Map<String, Value>>,
}

#[derive(Debug, Default, Deserialize)]
struct Status {
    #[serde(default)]
    phase: Option<String>,
}

impl NamespaceView {
    /// `status.phase` (`Active`, `Terminating`), if set.
    pub(crate) fn phase(&self) -> Option<&str> {
        self.status.as_ref()?.phase.as_deref()
    }

    /// `metadata.labels`, if set.
    pub(crate) fn labels(&self) -> Option<&Map<String, Value>> {
        self.metadata.as_ref()?.labels.as_ref()
    }

    /// The namespace as a plugin that reads `/metadata/labels` of a whole object sees it.
    pub(crate) fn labels_object(&self) -> Value {
        let labels = self.labels().map_or(Value::Null, |l| Value::Object(l.clone()));
        serde_json::json!({ "metadata": { "labels": labels } })
    }
}

/// Namespace `name` as `objects` holds it, or `None` if it does not exist.
pub(crate) async fn lookup(objects: &dyn ObjectLookup, name: &str) -> Result<Option<NamespaceView>, ApiError> {
    let Some(json) = objects.get_json("", "namespaces", "", name).await? else { return Ok(None) };
    serde_json::from_slice(&json).map(Some).map_err(|e| ApiError::internal(format!("decoding namespace {name:?}: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::Objects;
    use serde_json::json;

    #[tokio::test]
    async fn phase_and_labels_are_read_and_the_rest_skipped() {
        let ns = json!({
            "apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": "a", "labels": {"team": "x"}, "managedFields": [{"manager": "m", "fieldsV1": {"f:x": {}}}]},
            "spec": {"finalizers": ["kubernetes"]},
            "status": {"phase": "Terminating"},
        });
        let objects = Objects::default().with("", "namespaces", "", ns);
        let view = lookup(&objects, "a").await.unwrap().unwrap();
        assert_eq!(view.phase(), Some("Terminating"));
        assert_eq!(view.labels().unwrap().get("team"), Some(&json!("x")));
        assert_eq!(view.labels_object(), json!({"metadata": {"labels": {"team": "x"}}}));
        assert!(lookup(&objects, "b").await.unwrap().is_none());
    }

    #[tokio::test]
    async fn a_namespace_without_status_or_labels_has_neither() {
        let objects = Objects::default().with("", "namespaces", "", json!({"metadata": {"name": "a"}, "status": null}));
        let view = lookup(&objects, "a").await.unwrap().unwrap();
        assert_eq!((view.phase(), view.labels()), (None, None));
        assert_eq!(view.labels_object(), json!({"metadata": {"labels": null}}));
    }
}
