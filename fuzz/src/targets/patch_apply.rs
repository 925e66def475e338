//! A server-side apply configuration (`application/apply-patch+yaml`, decoded to JSON) applied
//! by the field manager (`FieldManager::apply`): to a fixed Deployment with its schema, and
//! nested under a schemaless custom resource's `spec` as deep as the first byte says. Never a
//! panic; a result is an object the server can store and decode again, or one its validation
//! refuses (managedFields nest deeper than the object they describe).
use apimachinery::managedfields::{FieldManager, Scope};
use serde_json::{Value, json};

const NOW: &str = "2026-01-01T00:00:00Z";

/// The target: never a panic, and the properties above.
pub fn check(data: &[u8]) {
    kinds::schema::prepare();
    let Some((&depth, rest)) = data.split_first() else { return };
    let Some(config) = crate::json_value(rest) else { return };

    let deployments = FieldManager {
        node: apimachinery::schema::kind_node("apps", "v1", "Deployment"),
        api_version: "apps/v1",
        kind: "Deployment",
        subresource: "",
        scope: Scope(&[&["status"]]),
        now: NOW,
    };
    let live = crate::deployment();
    for old in [None, Some(&live)] {
        if let Ok(applied) = deployments.apply(old, &config, "fuzz", depth % 2 == 0) {
            crate::assert_storable_or_refused(&applied);
        }
    }

    // A custom resource without a schema: maps granular, lists atomic, any depth the client
    // sends (up to what its body decoder allows).
    let mut spec = config;
    for _ in 0..depth {
        spec = json!({ "a": spec });
    }
    let widget = json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": spec});
    if apimachinery::object::nesting(&widget) > crate::MAX_NESTING {
        // The body decoder refuses it before apply sees it.
        return;
    }
    let widgets = FieldManager {
        node: None,
        api_version: "example.com/v1",
        kind: "Widget",
        subresource: "",
        scope: Scope(&[&["status"]]),
        now: NOW,
    };
    if let Ok(applied) = widgets.apply(None, &widget, "fuzz", false) {
        crate::assert_storable_or_refused(&applied);
        let _: &Value = &applied;
    }
}
