//! kube's `ValidatingAdmissionPolicy` plugin: CEL validations of `admissionregistration.k8s.io/v1`
//! ValidatingAdmissionPolicies, applied through their ValidatingAdmissionPolicyBindings.
//!
//! For each policy matching the request (its `matchConstraints`) and each of its bindings
//! matching it too (the binding's `matchResources`), the policy is evaluated once per param
//! the binding refers to ([`params`]), and each failed validation is acted on as the binding's
//! `validationActions` say: `Deny` refuses the request, `Warn` adds a `Warning` header, `Audit`
//! adds the `validation.policy.admission.k8s.io/validation_failure` audit annotation. Errors
//! (an expression that fails, a param that cannot be found, a paramKind that is not served)
//! deny or are ignored by the policy's `failurePolicy`. The first refusal is the answer, with
//! its validation's reason and code, as kube's dispatcher returns it:
//! `deployments.apps "web" is forbidden: ValidatingAdmissionPolicy 'max-replicas' with binding
//! 'max-replicas-binding' denied request: <message>`.
//!
//! CEL sees `object`, `oldObject`, `request`, `params`, `namespaceObject` and `variables`,
//! and `authorizer` (in match conditions, variables and validations), whose checks the
//! server's authorizers answer for the requesting user. Costs are limited as kube limits
//! them ([`validator`]).
//!
//! # Layout
//! - this module: the plugin, which dispatches as kube's `dispatcher.go`, and its metrics.
//! - [`source`]: policies and bindings from the cachers, compiled once per change.
//! - [`params`]: the params of a binding.
//! - [`validator`]: one evaluation of a policy.
//! - [`typechecking`]: the warnings the status controller writes to `status.typeChecking`.

pub mod params;
pub mod source;
pub mod typechecking;
pub mod validator;

use std::sync::Arc;
use std::time::Duration;

use apimachinery::error::{ApiError, Cause, Reason};
use apimachinery::lookup::{AccessCheck, ObjectLookup};
use apimachinery::messages::{Admit, Operation};
use apimachinery::object::ObjectExt;
use async_trait::async_trait;
use kube_cel::library::authz::request_resource_value;
use serde_json::{Value, json};

use crate::cel::Authz;
use crate::matching::RequestAttributes;
use crate::metrics::{VALIDATING_ADMISSION_POLICY_CHECK_DURATION_SECONDS, VALIDATING_ADMISSION_POLICY_CHECK_TOTAL};
use crate::versions::{self, Seen};
use crate::{AdmissionPlugin, Review};
use apimachinery::catalogue::{Catalogue, ResourceDef};
use source::{Action, Binding, Hook, MatchResources, Policy, PolicySource};
use validator::{AuditOutcome, Evaluation, Inputs};

/// kube's cap on a published audit annotation value.
const MAX_AUDIT_ANNOTATION_VALUE: usize = 10 * 1024;

/// The audit annotation a failed validation under `Audit` is noted with.
pub const VALIDATION_FAILURE_ANNOTATION: &str = "validation.policy.admission.k8s.io/validation_failure";

/// The `ValidatingAdmissionPolicy` admission plugin.
pub struct ValidatingAdmissionPolicy {
    source: PolicySource,
    objects: Arc<dyn ObjectLookup>,
    /// The served versions, for `matchPolicy: Equivalent` and to show objects as served.
    catalogue: Arc<Catalogue>,
    /// Answers the expressions' `authorizer` checks.
    access: Arc<dyn AccessCheck>,
}

impl ValidatingAdmissionPolicy {
    /// The plugin, reading policies, bindings, params and namespaces via `objects`, the
    /// expressions' authorization checks answered by `access`.
    pub fn new(objects: Arc<dyn ObjectLookup>, catalogue: Arc<Catalogue>, access: Arc<dyn AccessCheck>) -> Self {
        ValidatingAdmissionPolicy { source: PolicySource::new(objects.clone()), objects, catalogue, access }
    }
}

/// A refusal: the policy, the binding (none for the policy's own misconfiguration), why.
struct Denial {
    policy: String,
    binding: Option<String>,
    message: String,
    reason: Reason,
}

/// What CEL sees of the request in one version: `object` (none for a delete, whose object
/// is the one deleted), `oldObject`, and `request`, the AdmissionRequest without `uid`,
/// `object` and `oldObject`.
struct View {
    object: Value,
    old_object: Value,
    request: Value,
}

impl View {
    fn new(request: &Admit, seen: &Seen<'_>) -> View {
        let mut vars = crate::webhooks::review::cel_variables(request, seen).into_iter().map(|(_, v)| v);
        let (object, old_object, mut req) =
            (vars.next().unwrap_or_default(), vars.next().unwrap_or_default(), vars.next().unwrap_or_default());
        if let Some(r) = req.as_object_mut() {
            r.remove("uid");
        }
        View { object, old_object, request: req }
    }
}

/// kube's `CreateNamespaceObject`: the namespace with the metadata kube exposes.
fn namespace_variable(ns: &Value) -> Value {
    const METADATA: [&str; 12] = [
        "name",
        "generateName",
        "namespace",
        "uid",
        "resourceVersion",
        "generation",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "labels",
        "annotations",
        "finalizers",
    ];
    let metadata: serde_json::Map<String, Value> = METADATA
        .iter()
        .filter_map(|k| ns.pointer(&format!("/metadata/{k}")).map(|v| (k.to_string(), v.clone())))
        .collect();
    let mut out = json!({"metadata": metadata});
    for key in ["spec", "status"] {
        if let Some(v) = ns.get(key) {
            out[key] = v.clone();
        }
    }
    out
}

impl ValidatingAdmissionPolicy {
    /// The version `m` selects the request in (see [`versions::matched`]), if it does: no
    /// exclusion and a rule (with its resource names) match, then the selectors, so the
    /// namespace is read only for requests the rules match. An error when that namespace
    /// cannot be read.
    async fn matches<'c>(
        &self,
        m: &MatchResources,
        request: &Admit,
        object: &Value,
        candidates: &'c [Arc<ResourceDef>],
    ) -> Result<Option<Option<&'c Arc<ResourceDef>>>, String> {
        let name = &request.target.name;
        let rule_matches = |r: &source::NamedRule, attrs: &RequestAttributes<'_>| {
            r.rule.matches(attrs) && (r.resource_names.is_empty() || r.resource_names.contains(name))
        };
        if versions::matched(candidates, request, m.exact, &m.exclude_resource_rules, rule_matches).is_some() {
            return Ok(None);
        }
        let matched = if m.resource_rules.is_empty() {
            candidates.first()
        } else {
            match versions::matched(candidates, request, m.exact, &m.resource_rules, rule_matches) {
                Some(matched) => matched,
                None => return Ok(None),
            }
        };
        Ok(m.selectors.select(self.objects.as_ref(), request, object).await?.then_some(matched))
    }

    /// The namespace CEL sees as `namespaceObject`: none for cluster-scoped objects and for a
    /// Namespace itself.
    async fn namespace_of(&self, request: &Admit) -> Result<Value, ApiError> {
        let t = &request.target;
        if t.namespace.is_empty() || (t.group.is_empty() && t.resource == "namespaces") {
            return Ok(Value::Null);
        }
        match self.objects.get("", "namespaces", "", &t.namespace).await? {
            Some(ns) => Ok(namespace_variable(&ns)),
            None => Err(ApiError::not_found("", "namespaces", &t.namespace)),
        }
    }

    async fn dispatch(&self, request: &Admit, object: &Value, review: &mut Review) -> Result<(), ApiError> {
        let hooks = self.source.hooks().await;
        if hooks.is_empty() {
            return Ok(());
        }
        let mut dispatch = Dispatch {
            request,
            object,
            candidates: versions::candidates(&self.catalogue, request),
            views: Vec::new(),
            namespace: None,
            denials: Vec::new(),
        };
        for hook in hooks.iter() {
            self.apply(hook, &mut dispatch, review).await?;
        }
        match dispatch.denials.into_iter().next() {
            None => Ok(()),
            Some(d) => Err(denied(request, object, d)),
        }
    }

    /// Applies one policy through its bindings; an error only when the request's namespace
    /// cannot be read.
    async fn apply(&self, hook: &Hook, d: &mut Dispatch<'_>, review: &mut Review) -> Result<(), ApiError> {
        let policy = &hook.policy;
        let candidates = std::mem::take(&mut d.candidates);
        let matched = self.matches(&policy.match_constraints, d.request, d.object, &candidates).await;
        let version = match matched {
            Ok(Some(matched)) => matched.and_then(|m| candidates.iter().position(|c| Arc::ptr_eq(c, m))),
            Ok(None) => {
                d.candidates = candidates;
                return Ok(());
            }
            Err(e) => {
                d.candidates = candidates;
                d.config_error(policy, None, e);
                return Ok(());
            }
        };
        d.candidates = candidates;
        if let Some(e) = &policy.configuration_error {
            d.config_error(policy, None, e.clone());
            return Ok(());
        }
        let mut annotations: Vec<(String, Vec<String>)> = Vec::new();
        for binding in &hook.bindings {
            if let Some(m) = &binding.match_resources {
                match self.matches(m, d.request, d.object, &d.candidates).await {
                    Ok(Some(_)) => {}
                    Ok(None) => continue,
                    Err(e) => {
                        d.config_error(policy, Some(binding), e);
                        continue;
                    }
                }
            }
            let kind = policy.param_kind.as_ref();
            let params = match params::collect(
                self.objects.as_ref(),
                kind,
                binding.param_ref.as_ref(),
                &d.request.target.namespace,
            )
            .await
            {
                Ok(p) => p,
                Err(e) => {
                    d.config_error(policy, Some(binding), e);
                    continue;
                }
            };
            if d.namespace.is_none() {
                d.namespace = Some(self.namespace_of(d.request).await?);
            }
            let view = d.view(version);
            let request: &Admit = d.request;
            let t = &request.target;
            let subresource = t.subresource.map(|s| s.name()).unwrap_or("");
            let request_resource = request_resource_value(&t.group, &t.resource, subresource, &t.namespace, &t.name);
            let authz = Authz { user: &request.user, access: self.access.as_ref() };
            for params in params {
                let inputs = Inputs {
                    object: view.object.clone(),
                    old_object: view.old_object.clone(),
                    request: view.request.clone(),
                    params,
                    namespace: d.namespace.clone().unwrap_or(Value::Null),
                    request_resource: request_resource.clone(),
                };
                let validated = validator::validate(policy, &inputs, &authz).await;
                d.act(policy, binding, &validated.decisions, review);
                for outcome in validated.audit {
                    match outcome {
                        AuditOutcome::Publish(key, mut value) => {
                            truncate(&mut value, MAX_AUDIT_ANNOTATION_VALUE);
                            match annotations.iter_mut().find(|(k, _)| *k == key) {
                                Some((_, values)) if !values.contains(&value) => values.push(value),
                                Some(_) => {}
                                None => annotations.push((key, vec![value])),
                            }
                        }
                        AuditOutcome::Error(message, elapsed) => {
                            d.deny(policy, binding, message, Reason::Invalid);
                            record(&policy.name, &binding.name, "deny", elapsed);
                        }
                        AuditOutcome::Exclude => {}
                    }
                }
            }
        }
        // Values from several bindings or params are joined, as kube publishes them.
        for (key, values) in annotations {
            review.audit_annotations.push((format!("{}/{key}", policy.name), values.join(", ")));
        }
        Ok(())
    }
}

/// One request's dispatch: what every policy sees, and the refusals so far (the first is the
/// answer).
struct Dispatch<'a> {
    request: &'a Admit,
    object: &'a Value,
    /// The versions the request can be matched in ([`versions::candidates`]).
    candidates: Vec<Arc<ResourceDef>>,
    /// CEL's views of the request, built once per version a policy matched (by index in
    /// `candidates`; `None` for a request not in the catalogue).
    views: Vec<(Option<usize>, Arc<View>)>,
    /// `namespaceObject`, read once a binding applies.
    namespace: Option<Value>,
    denials: Vec<Denial>,
}

impl Dispatch<'_> {
    /// CEL's view of the request in candidate `version`.
    fn view(&mut self, version: Option<usize>) -> Arc<View> {
        if let Some((_, view)) = self.views.iter().find(|(v, _)| *v == version) {
            return view.clone();
        }
        let def = version.map(|i| self.candidates[i].as_ref());
        let view = Arc::new(View::new(self.request, &Seen::new(self.request, self.object, def, &self.candidates)));
        self.views.push((version, view.clone()));
        view
    }

    fn deny(&mut self, policy: &Policy, binding: &Binding, message: String, reason: Reason) {
        let denial = Denial { policy: policy.name.clone(), binding: Some(binding.name.clone()), message, reason };
        self.denials.push(denial);
    }

    /// A policy or binding that cannot be applied: a refusal under `failurePolicy: Fail`.
    fn config_error(&mut self, policy: &Policy, binding: Option<&Binding>, why: String) {
        if !policy.fail_closed {
            return;
        }
        let message = match binding {
            None => format!("failed to configure policy: {why}"),
            Some(_) => format!("failed to configure binding: {why}"),
        };
        let binding = binding.map(|b| b.name.clone());
        self.denials.push(Denial { policy: policy.name.clone(), binding, message, reason: Reason::Invalid });
    }

    /// Acts on an evaluation's decisions by the binding's validation actions.
    fn act(&mut self, policy: &Policy, binding: &Binding, decisions: &[validator::Decision], review: &mut Review) {
        for (index, decision) in decisions.iter().enumerate() {
            if !decision.deny {
                if decision.evaluation == Evaluation::Error {
                    record(&policy.name, &binding.name, "allow", decision.elapsed);
                }
                continue;
            }
            for action in &binding.actions {
                match action {
                    Action::Deny => {
                        self.deny(policy, binding, decision.message.clone(), decision.reason);
                        record(&policy.name, &binding.name, "deny", decision.elapsed);
                    }
                    Action::Audit => {
                        audit_failure(review, &policy.name, binding, index, &decision.message);
                        record(&policy.name, &binding.name, "audit", decision.elapsed);
                    }
                    Action::Warn => {
                        review.warnings.push(format!(
                            "Validation failed for ValidatingAdmissionPolicy '{}' with binding '{}': {}",
                            policy.name, binding.name, decision.message
                        ));
                        record(&policy.name, &binding.name, "warn", decision.elapsed);
                    }
                }
            }
        }
    }
}

/// Cuts `s` to at most `max` bytes, at a character boundary.
fn truncate(s: &mut String, max: usize) {
    if s.len() > max {
        let mut end = max;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        s.truncate(end);
    }
}

/// kube's `ValidationFailureValue`, published once per request (kube keeps the first value an
/// annotation key is given).
fn audit_failure(review: &mut Review, policy: &str, binding: &Binding, index: usize, message: &str) {
    if review.audit_annotations.iter().any(|(k, _)| k == VALIDATION_FAILURE_ANNOTATION) {
        return;
    }
    let actions: Vec<&str> = binding.actions.iter().map(|a| a.as_str()).collect();
    let value = json!([{
        "message": message,
        "policy": policy,
        "binding": binding.name,
        "expressionIndex": index,
        "validationActions": actions,
    }]);
    review.audit_annotations.push((VALIDATION_FAILURE_ANNOTATION.to_string(), value.to_string()));
}

/// kube's refusal: `admission.NewForbidden` around the denial's message, its reason and code
/// in place of Forbidden's, the message repeated as a cause.
fn denied(request: &Admit, object: &Value, d: Denial) -> ApiError {
    let message = match &d.binding {
        Some(b) => format!("ValidatingAdmissionPolicy '{}' with binding '{b}' denied request: {}", d.policy, d.message),
        None => format!("ValidatingAdmissionPolicy '{}' denied request: {}", d.policy, d.message),
    };
    let t = &request.target;
    // kube names the request's object, else the object's name or generateName, else Unknown.
    let from_object = if request.operation == Operation::Delete { "" } else { object.name() };
    let generate = if request.operation == Operation::Delete { "" } else { object.meta_str("generateName") };
    let name = [t.name.as_str(), from_object, generate].into_iter().find(|n| !n.is_empty()).unwrap_or("Unknown");
    let mut e = ApiError::forbidden(&t.group, &t.resource, name, &message);
    e.reason = d.reason;
    e.code = d.reason.code();
    e.causes.push(Cause { reason: String::new(), message, field: String::new() });
    e
}

/// kube 1.30's `apiserver_validating_admission_policy_check_total` and
/// `..._check_duration_seconds`, by policy, binding, enforcement action (`deny`, `warn`,
/// `audit`, or `allow` for an error ignored) and state (`active`).
fn record(policy: &str, binding: &str, action: &'static str, elapsed: Duration) {
    metrics::counter!(VALIDATING_ADMISSION_POLICY_CHECK_TOTAL,
        "policy" => policy.to_string(), "policy_binding" => binding.to_string(),
        "enforcement_action" => action, "state" => "active")
    .increment(1);
    metrics::histogram!(VALIDATING_ADMISSION_POLICY_CHECK_DURATION_SECONDS,
        "policy" => policy.to_string(), "policy_binding" => binding.to_string(),
        "enforcement_action" => action, "state" => "active")
    .record(elapsed.as_secs_f64());
}

#[async_trait(?Send)]
impl AdmissionPlugin for ValidatingAdmissionPolicy {
    fn name(&self) -> &'static str {
        "ValidatingAdmissionPolicy"
    }

    fn validates(&self) -> bool {
        true
    }

    async fn validate(&self, request: &Admit, object: &Value, review: &mut Review) -> Result<(), ApiError> {
        self.dispatch(request, object, review).await
    }
}

#[cfg(test)]
mod tests;
