//! ClusterRole aggregation (kube's clusterrole-aggregation controller): a ClusterRole with an
//! `aggregationRule` holds the rules of every other ClusterRole its selectors match, in the
//! order of the selectors and, within one, of the roles' names, each rule once. This is how
//! `admin`, `edit` and `view` pick up the `system:aggregate-to-*` roles and any role a user
//! labels `rbac.authorization.k8s.io/aggregate-to-edit: "true"`.

use std::sync::Arc;

use actors::Deadline;
use apimachinery::catalogue::Catalogue;
use apimachinery::messages::{ListObjects, Target, UpdateObject};
use apimachinery::object::ObjectExt;
use apimachinery::options::{ListOptions, WriteOptions};
use apimachinery::selector::LabelSelector;
use serde_json::Value;
use tokio::task::AbortHandle;

use super::leader::spawn_stoppable;
use super::{WRITE_TIMEOUT, events, identity};
use stage_handles::Stages;

/// The rules `role`'s aggregationRule selects among `roles` (sorted by name).
pub fn aggregated_rules(role: &Value, roles: &[Value]) -> Vec<Value> {
    let mut rules: Vec<Value> = Vec::new();
    let selectors = role.pointer("/aggregationRule/clusterRoleSelectors").and_then(Value::as_array);
    for selector in selectors.into_iter().flatten() {
        let Ok(selector) = LabelSelector::from_label_selector(Some(selector)) else { continue };
        for other in roles.iter().filter(|r| r.name() != role.name()) {
            if !selector.matches(other.pointer("/metadata/labels").and_then(Value::as_object)) {
                continue;
            }
            for rule in other.get("rules").and_then(Value::as_array).into_iter().flatten() {
                if !rules.contains(rule) {
                    rules.push(rule.clone());
                }
            }
        }
    }
    rules
}

async fn aggregate(stages: &Stages, catalogue: &Catalogue) {
    let Some(def) = catalogue.find("rbac.authorization.k8s.io", "v1", "clusterroles") else { return };
    let list = ListObjects { target: Target::collection(&def, ""), options: ListOptions::default() };
    let Ok(reads) = stages.reads(&def) else { return };
    let Ok(list) = reads.reader.list(list).await else { return };
    let mut roles: Vec<Value> = list.items.iter().map(|r| r.value()).collect();
    roles.sort_by(|a, b| a.name().cmp(b.name()));
    for role in roles.iter().filter(|r| r.get("aggregationRule").is_some_and(|a| !a.is_null())) {
        let rules = aggregated_rules(role, &roles);
        let current = role.get("rules").and_then(Value::as_array).cloned().unwrap_or_default();
        if current == rules {
            continue;
        }
        let mut updated = role.clone();
        updated["rules"] = Value::Array(rules);
        let update = UpdateObject {
            target: Target::object(&def, "", role.name()),
            object: updated,
            user: identity("clusterrole-aggregation-controller"),
            options: WriteOptions::default(),
        };
        // A conflict is a newer version of the role, whose event brings us back.
        if let Err(e) = stages.update.ask(update, Deadline::after(WRITE_TIMEOUT)).await
            && e.reason != apimachinery::Reason::Conflict
        {
            tracing::warn!(role = role.name(), "aggregating a ClusterRole: {}", e.message);
        }
    }
}

/// Starts the controller on the current arbiter; the handle stops it (`None`: its kinds are not served).
pub fn spawn(stages: Stages, catalogue: Arc<Catalogue>) -> Option<AbortHandle> {
    let def = catalogue.find("rbac.authorization.k8s.io", "v1", "clusterroles")?;
    let mut changes = events(&stages, &def);
    Some(spawn_stoppable(async move {
        while changes.recv().await.is_some() {
            // One pass covers every change queued meanwhile.
            while changes.try_recv().is_ok() {}
            aggregate(&stages, &catalogue).await;
        }
    }))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn rules_come_from_matching_roles_once_in_selector_then_name_order() {
        let edit = json!({"metadata": {"name": "edit"}, "aggregationRule": {"clusterRoleSelectors": [
            {"matchLabels": {"to-edit": "true"}}, {"matchLabels": {"extra": "true"}}]}});
        let a = json!({"metadata": {"name": "a", "labels": {"to-edit": "true"}}, "rules": [{"verbs": ["get"]}]});
        let b = json!({"metadata": {"name": "b", "labels": {"to-edit": "true", "extra": "true"}}, "rules": [{"verbs": ["list"]}, {"verbs": ["get"]}]});
        let c = json!({"metadata": {"name": "c", "labels": {"extra": "true"}}, "rules": [{"verbs": ["watch"]}]});
        let other = json!({"metadata": {"name": "d"}, "rules": [{"verbs": ["delete"]}]});
        let rules = aggregated_rules(&edit, &[a, b, c, other, edit.clone()]);
        assert_eq!(rules, vec![json!({"verbs": ["get"]}), json!({"verbs": ["list"]}), json!({"verbs": ["watch"]})]);
    }
}
