//! `x-kubernetes-validations` rules evaluated on a custom resource, as kube's
//! `apiextensions-apiserver/pkg/apiserver/schema/cel` `Validator` evaluates them.
//!
//! A [`Validator`] is built once per served version: the rules of every schema node compiled
//! against the node's declaration (`kube_cel::rules`), kept in the schema's shape,
//! only where some node below has rules. Validating walks the object with it: each rule runs
//! at every value its node applies to (every item of a list, every value of a map), with
//! `self` bound to that value.
//!
//! # Transition rules
//! A rule naming `oldSelf` runs on updates only, and only where the node's old value can be
//! found: a field of an object by name, a map value by key, an item of a map list
//! (`x-kubernetes-list-type: map`) by its keys. Items of other lists have no old value. With
//! `optionalOldSelf`, the rule also runs without one, `oldSelf` being `optional.none()`.
//!
//! # Ratcheting
//! kube 1.30 ratchets (`CRDValidationRatcheting`, on by default): on an update, a failed rule
//! that does not name `oldSelf` is not an error where the value is unchanged, judged at the
//! nearest node correlated with its old value. kube sends those as warnings; validation here
//! has no channel for warnings, so they are dropped. Values are compared as JSON (kube compares
//! map lists by key, so a reordered map list counts as changed here).
//!
//! # Cost
//! As kube, every evaluation is metered ([`kube_cel`] counts cost as cel-go does): one
//! evaluation may cost at most 1,000,000 (`PerCallLimit`), all evaluations on one object at
//! most 10,000,000 (`RuntimeCELCostBudget`). Past either, validation stops with kube's message
//! for it. Before any of this, the CRD's validation refused rules whose estimate exceeds
//! kube's static limits.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use apimachinery::error::Cause;
use apimachinery::validation::field::{self, Bad, Path};
use kube_cel::decl::escape;
use kube_cel::rules::{self, Compiled, OLD_SELF, PER_CALL_LIMIT, Preexisting, RUNTIME_COST_BUDGET, Rule, SELF};
use kube_cel::{Activation, DeclType, EvalError, Program, Value as CelValue};
use serde_json::Value;
use validation::apiextensions::valid_field_path;

/// kube's `MaxEvaluatedMessageExpressionSizeBytes`.
const MAX_MESSAGE_BYTES: usize = 5 * 1024;

/// The compiled rules of a schema node and of the nodes under it that have some.
#[derive(Debug)]
pub struct Validator {
    /// The node's `type`, which kube prints as the bad value (`Invalid value: "object"`).
    ty: String,
    decl: Arc<DeclType>,
    /// Each rule, with its `fieldPath` as a path under the node when it is a valid one.
    rules: Vec<(Compiled, Option<Path>)>,
    /// The keys of a map list, by which items find their old values.
    map_keys: Option<Vec<String>>,
    /// Whether an object's fields find their old values by name (kube's `MapIsCorrelatable`).
    correlatable: bool,
    items: Option<Box<Validator>>,
    additional: Option<Box<Validator>>,
    properties: BTreeMap<String, Validator>,
}

impl Validator {
    /// The validator of a version's `openAPIV3Schema`, `None` if it has no rules.
    pub fn new(schema: &Value) -> Option<Validator> {
        Validator::node(schema, DeclType::of(schema, true)?)
    }

    fn node(s: &Value, decl: Arc<DeclType>) -> Option<Validator> {
        let sub = |key: &str| s.get(key).filter(|v| v.is_object());
        let elem = || decl.elem().cloned();
        let items = sub("items").zip(elem()).and_then(|(i, d)| Validator::node(i, d)).map(Box::new);
        let additional = sub("additionalProperties").zip(elem()).and_then(|(a, d)| Validator::node(a, d)).map(Box::new);
        let properties: BTreeMap<String, Validator> = s
            .get("properties")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
            .filter_map(|(name, p)| {
                // A property CEL cannot name is still validated, typed on its own.
                let d = match escape(name) {
                    Some(escaped) => decl.field(&escaped)?.clone(),
                    None => DeclType::of(p, p.get("x-kubernetes-embedded-resource") == Some(&Value::Bool(true)))?,
                };
                Validator::node(p, d).map(|v| (name.clone(), v))
            })
            .collect();
        let rules: Vec<(Compiled, Option<Path>)> = rules::compile(s, &decl, &Preexisting::all())
            .into_iter()
            .map(|c| {
                let path = Some(c.rule.field_path.as_str()).filter(|f| !f.is_empty());
                let path = path.and_then(|f| valid_field_path(f, s, true).ok()).map(|f| f.path);
                (c, path)
            })
            .collect();
        if rules.is_empty() && items.is_none() && additional.is_none() && properties.is_empty() {
            return None;
        }
        let text = |k: &str| s.get(k).and_then(Value::as_str);
        let map_keys = (text("x-kubernetes-list-type") == Some("map")).then(|| {
            let keys = s.get("x-kubernetes-list-map-keys").and_then(Value::as_array);
            keys.into_iter().flatten().filter_map(Value::as_str).map(str::to_string).collect()
        });
        Some(Validator {
            ty: text("type").unwrap_or("").to_string(),
            decl,
            rules,
            map_keys,
            correlatable: matches!(text("x-kubernetes-map-type"), None | Some("granular" | "atomic")),
            items,
            additional,
            properties,
        })
    }

    /// The causes of `obj` (with `old`, on an update) breaking rules, in kube's order: a node's
    /// rules, then those of its items or fields.
    pub fn validate(&self, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
        let mut out = Vec::new();
        let ratchet = Ratchet { old, unchanged: old.is_some_and(|o| o == obj) };
        let mut budget = RUNTIME_COST_BUDGET as i64;
        self.walk(&Path::new(""), obj, old, ratchet, &mut out, &mut budget);
        out
    }

    fn walk(
        &self,
        path: &Path,
        obj: &Value,
        old: Option<&Value>,
        ratchet: Ratchet<'_>,
        out: &mut Vec<Cause>,
        budget: &mut i64,
    ) {
        // Rules validate values, not their absence: a null is for the parent's rules to judge.
        if obj.is_null() || *budget < 0 {
            return;
        }
        let old = old.filter(|o| !o.is_null());
        self.evaluate(path, obj, old, ratchet.unchanged, out, budget);
        if *budget < 0 {
            return;
        }
        match obj {
            Value::Array(items) => {
                let Some(v) = &self.items else { return };
                let old_items = self.map_keys.as_ref().zip(old.and_then(Value::as_array)).map(|(keys, olds)| {
                    olds.iter().filter_map(|o| Some((map_key(keys, o)?, o))).collect::<HashMap<String, &Value>>()
                });
                for (i, item) in items.iter().enumerate() {
                    let old_item = old_items
                        .as_ref()
                        .zip(self.map_keys.as_ref())
                        .and_then(|(olds, keys)| olds.get(&map_key(keys, item)?).copied());
                    v.walk(&path.index(i), item, old_item, ratchet.child(item, old_item), out, budget);
                    if *budget < 0 {
                        return;
                    }
                }
            }
            Value::Object(fields) => {
                let old_fields = old.and_then(Value::as_object);
                for (k, value) in fields {
                    let (v, p) = match (&self.additional, self.properties.get(k)) {
                        (Some(v), _) => (&**v, path.key(k)),
                        (None, Some(v)) => (v, path.child(k)),
                        (None, None) => continue,
                    };
                    let old_value = old_fields.and_then(|o| o.get(k));
                    let correlated = if self.correlatable { old_value } else { None };
                    // kube cannot ratchet the root's apiVersion and kind: old objects are
                    // converted to the new one's version.
                    let ratchet = if path.as_str().is_empty() && matches!(k.as_str(), "apiVersion" | "kind") {
                        Ratchet { old: None, unchanged: false }
                    } else {
                        ratchet.child(value, old_value)
                    };
                    v.walk(&p, value, correlated, ratchet, out, budget);
                    if *budget < 0 {
                        return;
                    }
                }
            }
            _ => {}
        }
    }

    /// kube's `validateExpressions`: the node's rules on one value, spending `budget`.
    fn evaluate(
        &self,
        path: &Path,
        obj: &Value,
        old: Option<&Value>,
        unchanged: bool,
        out: &mut Vec<Cause>,
        budget: &mut i64,
    ) {
        if self.rules.is_empty() {
            return;
        }
        let at = |p: &Path| if p.as_str().is_empty() { Path::new("<nil>") } else { p.clone() };
        let ty = || Bad::s(self.ty.as_str());
        const OUT_OF_BUDGET: &str =
            "validation failed due to running out of cost budget, no further validation rules will be run";
        if *budget <= 0 {
            out.push(field::invalid(&at(path), ty(), OUT_OF_BUDGET));
            *budget = -1;
            return;
        }
        let self_val = self.decl.to_value(obj);
        let old_val = old.map(|o| self.decl.to_value(o));
        let optional_old = CelValue::Optional(old_val.clone().map(std::sync::Arc::new));
        for (c, field_path) in &self.rules {
            let rule = &c.rule;
            let program = match &c.program {
                None => continue,
                Some(Err(e)) => {
                    out.push(field::invalid(&at(path), ty(), &format!("rule compile error: {e}")));
                    continue;
                }
                Some(Ok(p)) => p,
            };
            let optional = rule.optional_old_self == Some(true);
            if c.uses_old_self && old.is_none() && !optional {
                continue;
            }
            let mut activation = Activation::new().bind(SELF, self_val.clone());
            match (&old_val, optional) {
                (_, true) => activation = activation.bind(OLD_SELF, optional_old.clone()),
                (Some(o), false) => activation = activation.bind(OLD_SELF, o.clone()),
                (None, false) => {}
            }
            let evaluation = program.evaluate(&activation, Some(PER_CALL_LIMIT));
            if evaluation.cost as i64 > *budget {
                out.push(field::invalid(&at(path), ty(), OUT_OF_BUDGET));
                *budget = -1;
                return;
            }
            *budget -= evaluation.cost as i64;
            let passed = match evaluation.result {
                Ok(v) => v == CelValue::Bool(true),
                Err(EvalError::NoSuchOverload) => {
                    let detail = format!(
                        "'no such overload': call arguments did not match a supported operator, function or macro signature for rule: {}",
                        rule.error_string()
                    );
                    out.push(field::invalid(&at(path), ty(), &detail));
                    continue;
                }
                Err(e @ EvalError::CostLimitExceeded) => {
                    let detail = format!(
                        "'{e}': no further validation rules will be run due to call cost exceeds limit for rule: {}",
                        rule.error_string()
                    );
                    out.push(field::invalid(&at(path), ty(), &detail));
                    *budget = -1;
                    return;
                }
                Err(e) => {
                    let detail = format!("{e} evaluating rule: {}", rule.error_string());
                    out.push(field::invalid(&at(path), ty(), &detail));
                    continue;
                }
            };
            if passed {
                continue;
            }
            let ratcheted = unchanged && !c.uses_old_self;
            let p = at(&field_path.as_ref().map_or_else(|| path.clone(), |f| path.child(f.as_str())));
            let mut push = |cause: Cause| {
                // kube warns of a ratcheted failure; this validation has no channel for
                // warnings.
                if !ratcheted {
                    out.push(cause);
                }
            };
            let message = match c.message_expression.as_ref().and_then(|m| m.as_ref().ok()) {
                None => default_message(rule),
                Some(m) => match message_of(m, &activation, *budget) {
                    Message::Stop(detail) => {
                        push(field::invalid(&p, ty(), &detail));
                        *budget = -1;
                        return;
                    }
                    Message::Fallback(cost) => {
                        *budget -= cost;
                        default_message(rule)
                    }
                    Message::Text(text, cost) => {
                        *budget -= cost;
                        text
                    }
                },
            };
            push(match rule.reason.as_deref() {
                Some("FieldValueForbidden") => field::forbidden(&p, &message),
                Some("FieldValueRequired") => field::required(&p, &message),
                Some("FieldValueDuplicate") => field::duplicate(&p, ty()),
                _ => field::invalid(&p, ty(), &message),
            });
        }
    }
}

/// What evaluating a message expression decided (kube's `evalMessageExpression`).
enum Message {
    /// The message, and what it cost.
    Text(String, i64),
    /// Unusable: the rule's own message is used; what it cost.
    Fallback(i64),
    /// Validation stops, with this detail.
    Stop(String),
}

/// kube's `evalMessageExpression`: a non-empty string of one line within kube's size limit,
/// trimmed, else the rule's message; its cost counted against `budget`.
fn message_of(program: &Program, activation: &Activation<'_>, budget: i64) -> Message {
    let evaluation = program.evaluate(activation, Some(PER_CALL_LIMIT));
    let cost = evaluation.cost as i64;
    if cost > budget {
        return Message::Stop(
            "messageExpression evaluation failed due to running out of cost budget, no further validation rules will be run"
                .into(),
        );
    }
    match evaluation.result {
        Err(EvalError::CostLimitExceeded) => Message::Stop(format!(
            "no further validation rules will be run due to call cost exceeds limit for messageExpression: {}",
            kube_cel::golang::quote(program.source())
        )),
        Ok(CelValue::String(s)) => {
            let s = s.trim();
            if !s.is_empty() && s.len() <= MAX_MESSAGE_BYTES && !s.contains('\n') {
                Message::Text(s.to_string(), cost)
            } else {
                Message::Fallback(cost)
            }
        }
        _ => Message::Fallback(cost),
    }
}

/// kube's `ruleMessageOrDefault`.
fn default_message(rule: &Rule) -> String {
    if rule.message.is_empty() {
        format!("failed rule: {}", rule.error_string())
    } else {
        rule.message.trim().to_string()
    }
}

/// A map list item's key values, as one string to look items up by; `None` (no old value) for
/// an item missing a key or keyed by something other than a scalar, as kube's `MapList`.
fn map_key(keys: &[String], item: &Value) -> Option<String> {
    let values = keys
        .iter()
        .map(|k| item.get(k).filter(|v| v.is_string() || v.is_number() || v.is_boolean()))
        .collect::<Option<Vec<&Value>>>()?;
    serde_json::to_string(&values).ok()
}

/// Where ratcheting stands at a node: its old value if it is correlated with one, and whether
/// the nearest correlated node (itself or an ancestor) is unchanged.
#[derive(Clone, Copy)]
struct Ratchet<'a> {
    old: Option<&'a Value>,
    unchanged: bool,
}

impl<'a> Ratchet<'a> {
    /// At a child whose old value (by name, key or map-list keys) is `old`: correlated if
    /// this node is and the child has one, else judged by this node.
    fn child(self, value: &Value, old: Option<&'a Value>) -> Ratchet<'a> {
        match (self.old, old) {
            (Some(_), Some(o)) => Ratchet { old: Some(o), unchanged: o == value },
            _ => Ratchet { old: None, unchanged: self.unchanged },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn causes(schema: Value, obj: Value, old: Option<Value>) -> Vec<(String, String, String)> {
        let v = Validator::new(&schema).expect("rules");
        v.validate(&obj, old.as_ref()).into_iter().map(|c| (c.field, c.reason, c.message)).collect()
    }

    fn one(field: &str, reason: &str, message: &str) -> Vec<(String, String, String)> {
        vec![(field.to_string(), reason.to_string(), message.to_string())]
    }

    fn spec(props: Value, rules: Value) -> Value {
        json!({"type": "object", "properties": {"spec": {"type": "object", "properties": props,
            "x-kubernetes-validations": rules}}})
    }

    #[test]
    fn a_false_rule_is_an_invalid_value_at_its_node() {
        let s = spec(
            json!({"min": {"type": "integer"}, "max": {"type": "integer"}}),
            json!([{"rule": "self.min <= self.max"}]),
        );
        assert_eq!(causes(s.clone(), json!({"spec": {"min": 1, "max": 2}}), None), vec![]);
        assert_eq!(
            causes(s, json!({"spec": {"min": 3, "max": 2}}), None),
            one("spec", "FieldValueInvalid", "Invalid value: \"object\": failed rule: self.min <= self.max")
        );
        let root = json!({"type": "object", "properties": {"spec": {"type": "object"}},
            "x-kubernetes-validations": [{"rule": "self.metadata.name.startsWith('w')", "message": "name must start with w"}]});
        assert_eq!(
            causes(root, json!({"metadata": {"name": "x", "labels": {}}, "spec": {}}), None),
            one("<nil>", "FieldValueInvalid", "Invalid value: \"object\": name must start with w"),
            "kube names the root <nil>"
        );
    }

    #[test]
    fn rules_run_at_every_item_and_map_value() {
        let s = spec(
            json!({
                "ports": {"type": "array", "items": {"type": "integer", "x-kubernetes-validations": [{"rule": "self > 1024"}]}},
                "labels": {"type": "object", "additionalProperties": {"type": "string",
                    "x-kubernetes-validations": [{"rule": "self.size() <= 3", "message": "too long"}]}},
                "nested": {"type": "array", "items": {"type": "object", "properties": {
                    "name": {"type": "string", "x-kubernetes-validations": [{"rule": "self != 'bad'"}]}}}},
            }),
            json!([]),
        );
        let obj = json!({"spec": {"ports": [2000, 80, 1], "labels": {"a": "abc", "b": "abcd"},
            "nested": [{"name": "ok"}, {"name": "bad"}]}});
        let got: Vec<(String, String)> = causes(s, obj, None).into_iter().map(|(f, _, m)| (f, m)).collect();
        assert_eq!(
            got,
            vec![
                ("spec.labels[b]".to_string(), "Invalid value: \"string\": too long".to_string()),
                (
                    "spec.nested[1].name".to_string(),
                    "Invalid value: \"string\": failed rule: self != 'bad'".to_string()
                ),
                ("spec.ports[1]".to_string(), "Invalid value: \"integer\": failed rule: self > 1024".to_string()),
                ("spec.ports[2]".to_string(), "Invalid value: \"integer\": failed rule: self > 1024".to_string()),
            ],
            "fields in name order (kube walks a Go map, in no order)"
        );
    }

    #[test]
    fn transition_rules_see_the_correlated_old_value() {
        let s = spec(
            json!({
                "size": {"type": "integer", "x-kubernetes-validations": [{"rule": "self >= oldSelf", "message": "may only grow"}]},
                "keyed": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                    "items": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}, "v": {"type": "integer"}},
                        "x-kubernetes-validations": [{"rule": "self.v == oldSelf.v", "message": "v is immutable"}]}},
                "plain": {"type": "array", "items": {"type": "integer"}},
            }),
            json!([{"rule": "!has(oldSelf.plain) || self.plain == oldSelf.plain", "message": "plain is immutable"}]),
        );
        let old = json!({"spec": {"size": 2, "keyed": [{"name": "a", "v": 1}, {"name": "b", "v": 2}], "plain": [1]}});
        assert_eq!(causes(s.clone(), json!({"spec": {"size": 1}}), None), vec![], "not on create");
        let new = json!({"spec": {"size": 1, "keyed": [{"name": "b", "v": 3}, {"name": "c", "v": 9}, {"name": "a", "v": 1}],
            "plain": [2]}});
        assert_eq!(
            causes(s, new, Some(old)),
            vec![
                (
                    "spec".to_string(),
                    "FieldValueInvalid".to_string(),
                    "Invalid value: \"object\": plain is immutable".to_string()
                ),
                (
                    "spec.keyed[0]".to_string(),
                    "FieldValueInvalid".to_string(),
                    "Invalid value: \"object\": v is immutable".to_string()
                ),
                (
                    "spec.size".to_string(),
                    "FieldValueInvalid".to_string(),
                    "Invalid value: \"integer\": may only grow".to_string()
                ),
            ],
            "items found by key; the new item c has no old value"
        );
    }

    #[test]
    fn optional_old_self_runs_on_create_too() {
        let s = spec(
            json!({"v": {"type": "string", "x-kubernetes-validations": [{"rule": "oldSelf.hasValue() || self == 'first'",
                "optionalOldSelf": true, "message": "must start as first"}]}}),
            json!([]),
        );
        assert_eq!(causes(s.clone(), json!({"spec": {"v": "first"}}), None), vec![]);
        assert_eq!(
            causes(s.clone(), json!({"spec": {"v": "other"}}), None),
            one("spec.v", "FieldValueInvalid", "Invalid value: \"string\": must start as first")
        );
        assert_eq!(causes(s, json!({"spec": {"v": "other"}}), Some(json!({"spec": {"v": "first"}}))), vec![]);
    }

    #[test]
    fn message_expressions_reasons_and_field_paths_shape_the_cause() {
        let s = spec(
            json!({"replicas": {"type": "integer"}, "name": {"type": "string"}}),
            json!([
                {"rule": "self.replicas < 10", "messageExpression": "'too many: ' + string(self.replicas)",
                    "fieldPath": ".replicas", "reason": "FieldValueForbidden"},
                {"rule": "has(self.name)", "reason": "FieldValueRequired", "fieldPath": ".name", "message": "name is required"},
                {"rule": "self.replicas != 12", "reason": "FieldValueDuplicate"},
                {"rule": "self.replicas < 5", "messageExpression": "''", "message": "fallback"},
            ]),
        );
        assert_eq!(
            causes(s, json!({"spec": {"replicas": 12}}), None),
            vec![
                ("spec.replicas".to_string(), "FieldValueForbidden".to_string(), "Forbidden: too many: 12".to_string()),
                (
                    "spec.name".to_string(),
                    "FieldValueRequired".to_string(),
                    "Required value: name is required".to_string()
                ),
                ("spec".to_string(), "FieldValueDuplicate".to_string(), "Duplicate value: \"object\"".to_string()),
                (
                    "spec".to_string(),
                    "FieldValueInvalid".to_string(),
                    "Invalid value: \"object\": fallback".to_string()
                ),
            ]
        );
    }

    #[test]
    fn evaluation_errors_are_reported_with_the_rule() {
        let s = spec(
            json!({"a": {"type": "object", "properties": {"b": {"type": "integer"}}},
                "n": {"x-kubernetes-int-or-string": true}}),
            json!([{"rule": "self.a.b > 0"}, {"rule": "self.n > 1"}]),
        );
        assert_eq!(
            causes(s, json!({"spec": {"a": {}, "n": "x"}}), None),
            vec![
                ("spec".to_string(), "FieldValueInvalid".to_string(), "Invalid value: \"object\": no such key: b evaluating rule: self.a.b > 0".to_string()),
                (
                    "spec".to_string(),
                    "FieldValueInvalid".to_string(),
                    "Invalid value: \"object\": 'no such overload': call arguments did not match a supported operator, function or macro signature for rule: self.n > 1".to_string()
                ),
            ]
        );
    }

    #[test]
    fn unchanged_values_are_ratcheted_on_update() {
        let s = spec(
            json!({"items": {"type": "array", "items": {"type": "string", "x-kubernetes-validations": [{"rule": "self != 'bad'"}]}},
                "other": {"type": "string"}}),
            json!([]),
        );
        let old = json!({"spec": {"items": ["bad"], "other": "x"}});
        assert_eq!(causes(s.clone(), json!({"spec": {"items": ["bad"], "other": "y"}}), Some(old.clone())), vec![]);
        assert_eq!(
            causes(s, json!({"spec": {"items": ["bad", "ok"], "other": "x"}}), Some(old)),
            one("spec.items[0]", "FieldValueInvalid", "Invalid value: \"string\": failed rule: self != 'bad'"),
            "a changed list is judged again"
        );
    }
}
