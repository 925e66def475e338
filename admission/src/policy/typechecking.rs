//! The type checking kube's ValidatingAdmissionPolicy status controller does
//! (`typechecking.go`): each validation's `expression` and `messageExpression` is checked
//! against the schema of every kind the policy's `matchConstraints` name, with `object` and
//! `oldObject` of that kind and `params` of the `paramKind`, and what the checker finds becomes
//! `status.typeChecking.expressionWarnings`. Warnings never change what the policy does.
//!
//! As kube: only rules without wildcards in groups and versions are looked at, resources with
//! `*` or a subresource are skipped, at most 10 kinds are checked, sorted by group, version and
//! kind, and a kind without a schema is skipped.

use std::collections::BTreeSet;

use apimachinery::object::string_list;
use kinds::schema::{cel_type, kind_node};
use kube_cel::types::{Type, namespace_type, request_type};
use kube_cel::{CompileError, Env, Program, Version, format_issues};
use serde_json::{Value, json};

/// kube's `maxTypesToCheck`.
const MAX_TYPES: usize = 10;

/// A kind: group, version, kind.
type Gvk = (String, String, String);

/// Go's `GroupVersionKind.String()`.
fn gvk_string((group, version, kind): &Gvk) -> String {
    format!("{group}/{version}, Kind={kind}")
}

/// The kinds to check `policy` against, from its resource rules; `kind_of(group, version,
/// resource)` is the server's REST mapping.
fn kinds_to_check(policy: &Value, kind_of: &dyn Fn(&str, &str, &str) -> Option<String>) -> Vec<Gvk> {
    let mut kinds = BTreeSet::new();
    let rules = policy.pointer("/spec/matchConstraints/resourceRules").and_then(Value::as_array);
    for rule in rules.into_iter().flatten() {
        let groups = string_list(rule.get("apiGroups"));
        let versions = string_list(rule.get("apiVersions"));
        if groups.iter().chain(&versions).any(|x| x.contains('*')) {
            continue;
        }
        let mut resources: Vec<String> =
            string_list(rule.get("resources")).into_iter().filter(|r| !r.contains(['*', '/'])).collect();
        resources.sort();
        let (mut groups, mut versions) = (groups, versions);
        groups.sort();
        versions.sort();
        for g in &groups {
            for v in &versions {
                for r in &resources {
                    if let Some(kind) = kind_of(g, v, r) {
                        kinds.insert((g.clone(), v.clone(), kind));
                        if kinds.len() == MAX_TYPES {
                            return kinds.into_iter().collect();
                        }
                    }
                }
            }
        }
    }
    kinds.into_iter().collect()
}

/// The schema type of a kind, if it has a schema.
fn kind_type((group, version, kind): &Gvk) -> Option<Type> {
    kind_node(group, version, kind).map(|node| cel_type(node, kind))
}

/// The warnings for `policy`: `[{fieldRef, warning}]`, as `status.typeChecking` holds them.
pub fn check(policy: &Value, kind_of: &dyn Fn(&str, &str, &str) -> Option<String>) -> Vec<Value> {
    let kinds: Vec<(Gvk, Type)> =
        kinds_to_check(policy, kind_of).into_iter().filter_map(|k| kind_type(&k).map(|t| (k, t))).collect();
    if kinds.is_empty() {
        return Vec::new();
    }
    let spec = policy.get("spec").cloned().unwrap_or(Value::Null);
    // params are declared only when the paramKind has a schema, as kube declares them.
    let params = spec.get("paramKind").filter(|p| !p.is_null()).and_then(|p| {
        let api_version = p.get("apiVersion").and_then(Value::as_str).unwrap_or("");
        let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
        let kind = p.get("kind").and_then(Value::as_str).unwrap_or("");
        kind_type(&(group.to_string(), version.to_string(), kind.to_string()))
    });
    let variables: Vec<(String, String)> = spec
        .get("variables")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|v| {
            let s = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
            (s("name"), s("expression"))
        })
        .collect();
    // Per kind: the environment, variables typed by their expressions in order.
    let envs: Vec<(&Gvk, Env)> = kinds
        .iter()
        .map(|(gvk, t)| {
            let mut env = Env::new(Version::STORED)
                .declare("object", t.clone())
                .declare("oldObject", t.clone())
                .declare("request", request_type())
                .declare("namespaceObject", namespace_type())
                .declare("authorizer", Type::named("kubernetes.authorization.Authorizer"))
                .declare("authorizer.requestResource", Type::named("kubernetes.authorization.ResourceCheck"));
            if let Some(p) = &params {
                env = env.declare("params", p.clone());
            }
            let mut fields = std::collections::BTreeMap::new();
            for (name, expression) in &variables {
                let vars = Type::object_of("kubernetes.variables", fields.clone());
                let typed = Program::compile(&env.clone().declare("variables", vars), expression)
                    .map(|p| p.output_type().clone())
                    .unwrap_or(Type::Dyn);
                fields.insert(name.clone(), typed);
            }
            (gvk, env.declare("variables", Type::object_of("kubernetes.variables", fields)))
        })
        .collect();
    let check_expression = |source: &str| -> String {
        let mut results = Vec::new();
        for (gvk, env) in &envs {
            if let Err(CompileError::Issues { issues, .. }) = Program::compile(env, source) {
                results.push(format!("{}: {}\n", gvk_string(gvk), format_issues(source, &issues)));
            }
        }
        results.join("\n")
    };
    let mut warnings = Vec::new();
    for (i, v) in spec.get("validations").and_then(Value::as_array).into_iter().flatten().enumerate() {
        for key in ["expression", "messageExpression"] {
            let Some(source) = v.get(key).and_then(Value::as_str).filter(|s| !s.is_empty()) else { continue };
            let warning = check_expression(source);
            if !warning.is_empty() {
                warnings.push(json!({"fieldRef": format!("spec.validations[{i}].{key}"), "warning": warning}));
            }
        }
    }
    warnings
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind_of(group: &str, version: &str, resource: &str) -> Option<String> {
        kinds::find(group, version, resource).map(|d| d.kind.clone())
    }

    fn policy(validations: Value, param_kind: Value) -> Value {
        json!({"metadata": {"name": "p", "generation": 1}, "spec": {
            "paramKind": param_kind,
            "matchConstraints": {"resourceRules": [
                {"apiGroups": ["apps"], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["deployments", "deployments/scale"]},
                {"apiGroups": ["*"], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"]}]},
            "variables": [{"name": "replicas", "expression": "object.spec.replicas"}],
            "validations": validations}})
    }

    #[test]
    fn an_undefined_field_is_a_warning_per_kind_in_kubes_words() {
        let p = policy(
            json!([{"expression": "object.spec.replicas > 1"}, {"expression": "object.foo == 1",
            "messageExpression": "'x' + object.metadata.name"}]),
            Value::Null,
        );
        let w = check(&p, &kind_of);
        assert_eq!(
            w,
            vec![json!({"fieldRef": "spec.validations[1].expression",
                "warning": "apps/v1, Kind=Deployment: ERROR: <input>:1:7: undefined field 'foo'\n | object.foo == 1\n | ......^\n"})]
        );
    }

    #[test]
    fn params_and_variables_are_typed() {
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap"});
        let p = policy(
            json!([{"expression": "variables.replicas <= params.data.max"},
            {"expression": "variables.replicas <= int(params.data.max)"}]),
            cm,
        );
        let w = check(&p, &kind_of);
        assert_eq!(w.len(), 1, "{w:?}");
        assert_eq!(w[0]["fieldRef"], "spec.validations[0].expression");
        assert!(
            w[0]["warning"]
                .as_str()
                .unwrap()
                .contains("found no matching overload for '_<=_' applied to '(int, string)'"),
            "{w:?}"
        );
        // Without a paramKind, params are not declared.
        let w = check(&policy(json!([{"expression": "params.x == 1"}]), Value::Null), &kind_of);
        assert!(w[0]["warning"].as_str().unwrap().contains("undeclared reference to 'params'"));
    }

    #[test]
    fn wildcards_and_unknown_kinds_check_nothing() {
        let p = json!({"spec": {"matchConstraints": {"resourceRules": [{"apiGroups": ["*"], "apiVersions": ["*"],
            "resources": ["*"]}]}, "validations": [{"expression": "object.foo == 1"}]}});
        assert!(check(&p, &kind_of).is_empty());
    }
}
