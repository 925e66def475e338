//! Reconciling the bootstrap RBAC objects at every start (kube's `pkg/registry/rbac/reconciliation`
//! as its post-start hook runs it): a missing object is created; an existing one marked
//! `rbac.authorization.kubernetes.io/autoupdate: "false"` is left as its owner made it; any
//! other gains what the bootstrap version has and it lacks (rules its rules do not cover,
//! aggregation selectors, subjects, labels and annotations), and keeps what was added to it.
//! Nothing is removed, so an upgrade never takes a permission away from a user's edit.

use serde_json::{Map, Value};

use crate::escalation::uncovered;
use crate::rbac::PolicyRule;

/// What to do with one bootstrap object.
#[derive(Debug, PartialEq)]
pub enum Reconciled {
    /// It exists as needed (or its owner turned autoupdate off).
    Unchanged,
    /// Write this object over the existing one.
    Update(Value),
    /// The binding points at another role: roleRef is immutable, so delete and recreate it.
    Recreate,
}

fn autoupdate_off(existing: &Value) -> bool {
    existing.pointer("/metadata/annotations/rbac.authorization.kubernetes.io~1autoupdate").and_then(Value::as_str)
        == Some("false")
}

/// Adds the keys of `wanted` missing from `existing`; true if any was.
fn merge_map(existing: &mut Value, wanted: Option<&Value>) -> bool {
    let Some(wanted) = wanted.and_then(Value::as_object) else { return false };
    if !existing.is_object() {
        *existing = Value::Object(Map::new());
    }
    let map = existing.as_object_mut().expect("an object");
    let mut changed = false;
    for (k, v) in wanted {
        if !map.contains_key(k) {
            map.insert(k.clone(), v.clone());
            changed = true;
        }
    }
    changed
}

/// Appends the items of `wanted[key]` missing from `existing[key]`; true if any was.
fn merge_list(existing: &mut Value, wanted: &Value, key: &str) -> bool {
    let Some(items) = wanted.get(key).and_then(Value::as_array) else { return false };
    let list = existing.as_object_mut().map(|o| o.entry(key).or_insert_with(|| Value::Array(Vec::new())));
    let Some(list) = list.and_then(Value::as_array_mut) else { return false };
    let mut changed = false;
    for item in items {
        if !list.contains(item) {
            list.push(item.clone());
            changed = true;
        }
    }
    changed
}

fn merge_metadata(existing: &mut Value, wanted: &Value) -> bool {
    let mut changed = false;
    for key in ["labels", "annotations"] {
        let meta = existing.as_object_mut().map(|o| o.entry("metadata").or_insert_with(|| Value::Object(Map::new())));
        if let Some(meta) = meta.and_then(Value::as_object_mut) {
            let field = meta.entry(key).or_insert_with(|| Value::Object(Map::new()));
            changed |= merge_map(field, wanted.pointer(&format!("/metadata/{key}")));
        }
    }
    changed
}

/// Reconciles a Role or ClusterRole.
pub fn role(existing: &Value, wanted: &Value) -> Reconciled {
    if autoupdate_off(existing) {
        return Reconciled::Unchanged;
    }
    let mut out = existing.clone();
    let mut changed = merge_metadata(&mut out, wanted);
    if let Some(rule) = wanted.get("aggregationRule").filter(|r| !r.is_null()) {
        let existing_rule = out.as_object_mut().map(|o| o.entry("aggregationRule").or_insert_with(|| Value::Null));
        if let Some(existing_rule) = existing_rule {
            if existing_rule.is_null() {
                *existing_rule = Value::Object(Map::new());
            }
            changed |= merge_list(existing_rule, rule, "clusterRoleSelectors");
        }
    } else {
        // Aggregated roles' rules belong to the aggregation controller; the others must cover
        // the bootstrap rules.
        let missing = uncovered(&PolicyRule::all_of(existing), &PolicyRule::all_of(wanted));
        if !missing.is_empty() {
            let wanted_rules = wanted.get("rules").and_then(Value::as_array).cloned().unwrap_or_default();
            let have = PolicyRule::all_of(existing);
            let list = out.as_object_mut().map(|o| o.entry("rules").or_insert_with(|| Value::Array(Vec::new())));
            if let Some(list) = list.and_then(Value::as_array_mut) {
                for rule in wanted_rules {
                    if !uncovered(&have, &[PolicyRule::from_json(&rule)]).is_empty() {
                        list.push(rule);
                    }
                }
            }
            changed = true;
        }
    }
    if changed { Reconciled::Update(out) } else { Reconciled::Unchanged }
}

/// Reconciles a RoleBinding or ClusterRoleBinding.
pub fn binding(existing: &Value, wanted: &Value) -> Reconciled {
    if autoupdate_off(existing) {
        return Reconciled::Unchanged;
    }
    if existing.get("roleRef") != wanted.get("roleRef") {
        return Reconciled::Recreate;
    }
    let mut out = existing.clone();
    let mut changed = merge_metadata(&mut out, wanted);
    changed |= merge_list(&mut out, wanted, "subjects");
    if changed { Reconciled::Update(out) } else { Reconciled::Unchanged }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn view(rules: Value) -> Value {
        json!({"metadata": {"name": "r", "labels": {"a": "1"}}, "rules": rules})
    }

    #[test]
    fn a_role_gains_missing_rules_and_keeps_added_ones() {
        let wanted = view(json!([{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}]));
        let existing = view(
            json!([{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}, {"apiGroups": ["x"], "resources": ["y"], "verbs": ["*"]}]),
        );
        let Reconciled::Update(out) = role(&existing, &wanted) else { panic!("should update") };
        assert_eq!(out["rules"].as_array().unwrap().len(), 3, "{out}");
        assert_eq!(role(&out, &wanted), Reconciled::Unchanged, "a second start changes nothing");
        let mut pinned = existing.clone();
        pinned["metadata"]["annotations"] = json!({"rbac.authorization.kubernetes.io/autoupdate": "false"});
        assert_eq!(role(&pinned, &wanted), Reconciled::Unchanged, "autoupdate=false is the owner's");
    }

    #[test]
    fn a_binding_gains_subjects_and_one_with_another_role_is_recreated() {
        let wanted =
            json!({"metadata": {"name": "b"}, "roleRef": {"name": "r"}, "subjects": [{"kind": "Group", "name": "g"}]});
        let existing =
            json!({"metadata": {"name": "b"}, "roleRef": {"name": "r"}, "subjects": [{"kind": "User", "name": "u"}]});
        let Reconciled::Update(out) = binding(&existing, &wanted) else { panic!("should update") };
        assert_eq!(out["subjects"].as_array().unwrap().len(), 2);
        let moved = json!({"metadata": {"name": "b"}, "roleRef": {"name": "other"}});
        assert_eq!(binding(&moved, &wanted), Reconciled::Recreate);
    }
}
