//! ValidatingAdmissionPolicies and their bindings as the dispatcher uses them (kube's
//! `policy_source.go`): each policy with the bindings naming it, its expressions compiled,
//! its `paramKind` resolved to a resource. Rebuilt only when a policy or binding changed
//! (their names and resourceVersions), and a policy is compiled again only when it changed.
//!
//! A binding naming a policy that does not exist is left out, as kube leaves it out: it has no
//! failure policy to apply, and the policy may yet be created.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use apimachinery::error::Reason;
use apimachinery::lookup::{KindResource, ObjectLookup};
use apimachinery::object::{ObjectExt, string_list};
use apimachinery::selector::LabelSelector;
use apimachinery::validation::field::Path;
use kube_cel::{Program, Type};
use serde_json::Value;
use validation::cel::{self, ExpressionKind};

use crate::matching::{Rule, Selectors, selector};

/// The group both kinds belong to.
pub const GROUP: &str = "admissionregistration.k8s.io";

/// An expression, compiled when the policy was read, in kube's environment for stored
/// expressions.
#[derive(Debug)]
pub struct Expression {
    /// The text, as written.
    pub source: String,
    /// The program, or kube's compile error (`compilation failed: ...`).
    pub program: Result<Program, String>,
}

/// What every expression of one policy compiles with: `params` when it has a paramKind, and
/// its variables typed by their expressions.
struct Compiler {
    has_params: bool,
    variables: Vec<(String, Type)>,
}

impl Compiler {
    /// Compiles `source` as an expression of `kind` seeing the first `visible` variables.
    fn compile(&self, source: &str, kind: ExpressionKind, visible: usize) -> Expression {
        let path = Path::new("");
        let expr = cel::Expression {
            kind,
            text: source,
            path: &path,
            has_params: self.has_params,
            // kube declares no authorizer for message expressions only.
            has_authorizer: kind != ExpressionKind::MessageExpression,
            variables: &self.variables[..visible.min(self.variables.len())],
            stored: true,
        };
        Expression { source: source.to_string(), program: cel::compile(&expr) }
    }
}

/// A named expression: a match condition or a variable.
#[derive(Debug)]
pub struct Named {
    /// Its name.
    pub name: String,
    /// Its expression.
    pub expression: Expression,
}

/// One of `validations`.
#[derive(Debug)]
pub struct Validation {
    /// Must hold.
    pub expression: Expression,
    /// `message`, trimmed.
    pub message: String,
    /// `messageExpression`.
    pub message_expression: Option<Expression>,
    /// `reason` (default `Invalid`).
    pub reason: Reason,
}

/// One of `auditAnnotations`.
#[derive(Debug)]
pub struct AuditAnnotation {
    /// The key, published as `<policy name>/<key>`.
    pub key: String,
    /// Gives the value (a string, or null for none).
    pub value_expression: Expression,
}

/// `matchConstraints` of a policy, `matchResources` of a binding.
#[derive(Debug)]
pub struct MatchResources {
    /// `namespaceSelector` and `objectSelector`.
    pub selectors: Selectors,
    /// `resourceRules`; empty matches every resource.
    pub resource_rules: Vec<NamedRule>,
    /// `excludeResourceRules`.
    pub exclude_resource_rules: Vec<NamedRule>,
    /// `matchPolicy: Exact`; else `Equivalent` (the default).
    pub exact: bool,
}

/// A rule limited to some object names (`NamedRuleWithOperations`).
#[derive(Debug)]
pub struct NamedRule {
    /// The rule.
    pub rule: Rule,
    /// `resourceNames`; empty for every name.
    pub resource_names: Vec<String>,
}

impl MatchResources {
    fn parse(v: &Value) -> MatchResources {
        let rules = |key: &str| {
            v.get(key)
                .and_then(Value::as_array)
                .map(|rules| {
                    rules
                        .iter()
                        .map(|r| NamedRule {
                            rule: Rule::parse(r),
                            resource_names: string_list(r.get("resourceNames")),
                        })
                        .collect()
                })
                .unwrap_or_default()
        };
        MatchResources {
            selectors: Selectors::parse(v),
            resource_rules: rules("resourceRules"),
            exclude_resource_rules: rules("excludeResourceRules"),
            exact: v.get("matchPolicy").and_then(Value::as_str) == Some("Exact"),
        }
    }
}

/// A policy's `paramKind`, resolved.
#[derive(Debug)]
pub struct ParamKind {
    /// `apiVersion` as written.
    pub api_version: String,
    /// `kind`.
    pub kind: String,
    /// Its API group.
    pub group: String,
    /// Where it is served; `None` leaves the policy misconfigured.
    pub served: Option<KindResource>,
}

impl ParamKind {
    /// Go's `GroupVersionKind.String()`: `apps/v1, Kind=Deployment`, `/v1, Kind=ConfigMap`.
    pub fn gvk(&self) -> String {
        let (group, version) = self.api_version.split_once('/').unwrap_or(("", &self.api_version));
        format!("{group}/{version}, Kind={}", self.kind)
    }
}

/// A ValidatingAdmissionPolicy, compiled.
#[derive(Debug)]
pub struct Policy {
    /// Its name.
    pub name: String,
    /// `failurePolicy: Fail` (the default), else `Ignore`.
    pub fail_closed: bool,
    /// `paramKind`.
    pub param_kind: Option<ParamKind>,
    /// `matchConstraints`.
    pub match_constraints: MatchResources,
    /// `matchConditions`.
    pub match_conditions: Vec<Named>,
    /// `variables`, in order.
    pub variables: Vec<Named>,
    /// `validations`.
    pub validations: Vec<Validation>,
    /// `auditAnnotations`.
    pub audit_annotations: Vec<AuditAnnotation>,
    /// Why the policy cannot be applied (its paramKind is not served), denying or ignoring
    /// every request it matches by its failure policy.
    pub configuration_error: Option<String>,
}

fn str_of<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

/// The `name` and `expression` of each of `spec.<key>`.
fn named(spec: &Value, key: &str) -> Vec<(String, String)> {
    spec.get(key)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|c| (str_of(c, "name").to_string(), str_of(c, "expression").to_string()))
        .collect()
}

impl Policy {
    /// Compiles `policy`, resolving its paramKind through `objects`.
    pub fn compile(policy: &Value, objects: &dyn ObjectLookup) -> Policy {
        let spec = policy.get("spec").cloned().unwrap_or(Value::Null);
        let param_kind = spec.get("paramKind").filter(|p| !p.is_null()).map(|p| {
            let api_version = str_of(p, "apiVersion").to_string();
            let kind = str_of(p, "kind").to_string();
            let (group, version) = api_version.split_once('/').unwrap_or(("", &api_version));
            let served = objects.resource_for_kind(group, version, &kind);
            ParamKind { group: group.to_string(), api_version: api_version.clone(), kind, served }
        });
        let has_params = param_kind.is_some();
        let variables = named(&spec, "variables");
        let compiler = Compiler { has_params, variables: cel::variable_types(&variables, has_params, &|_| true) };
        let all = variables.len();
        let configuration_error = param_kind
            .as_ref()
            .filter(|p| p.served.is_none())
            .map(|p| format!("failed to find resource referenced by paramKind: '{}'", p.gvk()));
        let validations = spec
            .get("validations")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|v| Validation {
                expression: compiler.compile(str_of(v, "expression"), ExpressionKind::Validation, all),
                message: str_of(v, "message").trim().to_string(),
                message_expression: Some(str_of(v, "messageExpression"))
                    .filter(|m| !m.trim().is_empty())
                    .map(|m| compiler.compile(m, ExpressionKind::MessageExpression, all)),
                reason: serde_json::from_value(v.get("reason").cloned().unwrap_or(Value::Null))
                    .unwrap_or(Reason::Invalid),
            })
            .collect();
        let audit_annotations = spec
            .get("auditAnnotations")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|a| AuditAnnotation {
                key: str_of(a, "key").to_string(),
                value_expression: compiler.compile(
                    str_of(a, "valueExpression").trim(),
                    ExpressionKind::AuditAnnotationValue,
                    all,
                ),
            })
            .collect();
        Policy {
            name: policy.name().to_string(),
            fail_closed: str_of(&spec, "failurePolicy") != "Ignore",
            param_kind,
            match_constraints: MatchResources::parse(spec.get("matchConstraints").unwrap_or(&Value::Null)),
            match_conditions: named(&spec, "matchConditions")
                .into_iter()
                .map(|(name, e)| Named { expression: compiler.compile(&e, ExpressionKind::MatchCondition, 0), name })
                .collect(),
            variables: variables
                .iter()
                .enumerate()
                .map(|(i, (name, e))| Named {
                    name: name.clone(),
                    expression: compiler.compile(e, ExpressionKind::Variable, i),
                })
                .collect(),
            validations,
            audit_annotations,
            configuration_error,
        }
    }
}

/// What a binding does with a failed validation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Refuse the request.
    Deny,
    /// Tell the client in a `Warning` header.
    Warn,
    /// Note it in the audit event.
    Audit,
}

impl Action {
    /// kube's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Deny => "Deny",
            Action::Warn => "Warn",
            Action::Audit => "Audit",
        }
    }
}

/// A binding's `paramRef`.
#[derive(Debug)]
pub struct ParamRef {
    /// `name`, `""` when a selector is used.
    pub name: String,
    /// `namespace`, `""` for the request's.
    pub namespace: String,
    /// `selector`.
    pub selector: Option<LabelSelector>,
    /// `parameterNotFoundAction: Deny` (also when unset).
    pub deny_when_missing: bool,
}

/// A ValidatingAdmissionPolicyBinding.
#[derive(Debug)]
pub struct Binding {
    /// Its name.
    pub name: String,
    /// `matchResources`; `None` matches whatever the policy matches.
    pub match_resources: Option<MatchResources>,
    /// `paramRef`.
    pub param_ref: Option<ParamRef>,
    /// `validationActions`.
    pub actions: Vec<Action>,
}

impl Binding {
    fn parse(b: &Value) -> Binding {
        let spec = b.get("spec").cloned().unwrap_or(Value::Null);
        let param_ref = spec.get("paramRef").filter(|p| !p.is_null()).map(|p| ParamRef {
            name: str_of(p, "name").to_string(),
            namespace: str_of(p, "namespace").to_string(),
            selector: p.get("selector").filter(|s| !s.is_null()).map(|s| selector(Some(s))),
            deny_when_missing: str_of(p, "parameterNotFoundAction") != "Allow",
        });
        let actions = string_list(spec.get("validationActions"))
            .iter()
            .filter_map(|a| match a.as_str() {
                "Deny" => Some(Action::Deny),
                "Warn" => Some(Action::Warn),
                "Audit" => Some(Action::Audit),
                _ => None,
            })
            .collect();
        Binding {
            name: b.name().to_string(),
            match_resources: spec.get("matchResources").filter(|m| !m.is_null()).map(MatchResources::parse),
            param_ref,
            actions,
        }
    }
}

/// A policy and the bindings naming it, sorted by name.
#[derive(Debug)]
pub struct Hook {
    /// The policy.
    pub policy: Arc<Policy>,
    /// Its bindings.
    pub bindings: Vec<Binding>,
}

/// Names and resourceVersions of the policies and bindings hooks were built from.
type Fingerprint = (Vec<(String, String)>, Vec<(String, String)>);

/// What was built last.
#[derive(Default)]
struct Built {
    /// The cache's change counts of bindings and policies at the build: while they stand, a
    /// request neither lists nor compares.
    changes: Option<(u64, u64)>,
    fingerprint: Fingerprint,
    hooks: Arc<Vec<Hook>>,
    /// Compiled policies by name, with the resourceVersion they were compiled at.
    compiled: HashMap<String, (String, Arc<Policy>)>,
}

/// The hooks of every policy that has bindings, kept until a policy or binding changes.
pub struct PolicySource {
    objects: Arc<dyn ObjectLookup>,
    /// The last build. A mutex because the stage's futures share it; it is held only to
    /// compare, and to swap in a new build, never across a read of the cache.
    built: Mutex<Built>,
}

impl PolicySource {
    /// Hooks from the policies and bindings `objects` lists.
    pub fn new(objects: Arc<dyn ObjectLookup>) -> Self {
        PolicySource { objects, built: Mutex::new(Built::default()) }
    }

    /// The current hooks, by policy name.
    pub async fn hooks(&self) -> Arc<Vec<Hook>> {
        // Read before the lists, so a change during them shows as a change next time.
        let changes = self
            .objects
            .changes(GROUP, "validatingadmissionpolicybindings")
            .zip(self.objects.changes(GROUP, "validatingadmissionpolicies"));
        {
            let built = self.built.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            if changes.is_some() && built.changes == changes {
                return built.hooks.clone();
            }
        }
        // Not served (or not readable): nothing to apply.
        let Ok(mut bindings) = self.objects.list(GROUP, "validatingadmissionpolicybindings", "", "").await else {
            return Arc::new(Vec::new());
        };
        if bindings.is_empty() {
            let mut built = self.built.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            *built = Built { changes, ..Built::default() };
            return built.hooks.clone();
        }
        let Ok(mut policies) = self.objects.list(GROUP, "validatingadmissionpolicies", "", "").await else {
            return Arc::new(Vec::new());
        };
        policies.sort_by(|a, b| a.name().cmp(b.name()));
        bindings.sort_by(|a, b| a.name().cmp(b.name()));
        let versions =
            |list: &[Value]| list.iter().map(|o| (o.name().to_string(), o.resource_version().to_string())).collect();
        let fingerprint: Fingerprint = (versions(&policies), versions(&bindings));
        let previous = {
            let mut built = self.built.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            if built.fingerprint == fingerprint {
                built.changes = changes;
                return built.hooks.clone();
            }
            built.compiled.clone()
        };
        let mut compiled = HashMap::new();
        let mut hooks = Vec::new();
        for policy in &policies {
            let mine: Vec<Binding> = bindings
                .iter()
                .filter(|b| b.pointer("/spec/policyName").and_then(Value::as_str) == Some(policy.name()))
                .map(Binding::parse)
                .collect();
            if mine.is_empty() {
                continue;
            }
            let rv = policy.resource_version().to_string();
            let reused = previous.get(policy.name()).filter(|(at, _)| *at == rv).map(|(_, p)| p.clone());
            let compiled_policy = reused.unwrap_or_else(|| Arc::new(Policy::compile(policy, self.objects.as_ref())));
            compiled.insert(policy.name().to_string(), (rv, compiled_policy.clone()));
            hooks.push(Hook { policy: compiled_policy, bindings: mine });
        }
        let hooks = Arc::new(hooks);
        *self.built.lock().unwrap_or_else(std::sync::PoisonError::into_inner) =
            Built { changes, fingerprint, hooks: hooks.clone(), compiled };
        hooks
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    struct NoKinds;

    #[async_trait::async_trait]
    impl ObjectLookup for NoKinds {
        async fn get(
            &self,
            _: &str,
            _: &str,
            _: &str,
            _: &str,
        ) -> Result<Option<Value>, apimachinery::error::ApiError> {
            Ok(None)
        }
    }

    #[test]
    fn a_policy_compiles_with_kubes_defaults() {
        let p = Policy::compile(
            &json!({"metadata": {"name": "p"}, "spec": {
                "matchConstraints": {"resourceRules": [{"operations": ["CREATE"], "apiGroups": ["apps"],
                    "apiVersions": ["v1"], "resources": ["deployments"], "resourceNames": ["a"]}]},
                "validations": [{"expression": "true", "message": "  m  "}, {"expression": "(", "reason": "Forbidden"}],
                "auditAnnotations": [{"key": "k", "valueExpression": " 'v' "}]}}),
            &NoKinds,
        );
        assert!(p.fail_closed && p.configuration_error.is_none());
        assert_eq!(p.match_constraints.resource_rules[0].resource_names, ["a"]);
        assert_eq!((p.validations[0].message.as_str(), p.validations[0].reason), ("m", Reason::Invalid));
        assert!(p.validations[1].expression.program.as_ref().unwrap_err().starts_with("compilation failed: "));
        assert_eq!(p.validations[1].reason, Reason::Forbidden);
        assert_eq!(p.audit_annotations[0].value_expression.source, "'v'");
    }

    #[test]
    fn an_unserved_param_kind_misconfigures_the_policy() {
        let p = Policy::compile(
            &json!({"metadata": {"name": "p"}, "spec": {"paramKind": {"apiVersion": "example.com/v1", "kind": "Limits"},
                "validations": [{"expression": "true"}]}}),
            &NoKinds,
        );
        assert_eq!(
            p.configuration_error.as_deref(),
            Some("failed to find resource referenced by paramKind: 'example.com/v1, Kind=Limits'")
        );
    }

    #[test]
    fn bindings_read_their_actions_and_param_ref() {
        let b = Binding::parse(&json!({"metadata": {"name": "b"}, "spec": {"policyName": "p",
            "validationActions": ["Warn", "Audit"], "paramRef": {"name": "limits", "parameterNotFoundAction": "Allow"}}}));
        assert_eq!(b.actions, [Action::Warn, Action::Audit]);
        let r = b.param_ref.unwrap();
        assert!(!r.deny_when_missing && r.name == "limits" && r.selector.is_none());
        assert!(b.match_resources.is_none());
    }
}
