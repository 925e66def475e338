//! One evaluation of a policy: for one binding and one param, what its match conditions,
//! validations and audit annotations decide (kube's `validator.go`), worded as kube words it.
//!
//! Costs are kube's: the match conditions share [`MATCH_CONDITIONS_BUDGET`], the validations
//! [`RUNTIME_COST_BUDGET`], the message expressions what the validations left of it, and the
//! audit annotations a budget of their own; every expression is also held to kube's per-call
//! limit. A budget that runs out ends its set of expressions with kube's
//! `validation failed due to running out of cost budget, ...`.
//!
//! Variables are evaluated when an expression names them (and the variables those name), once
//! per set of expressions as kube's composition context caches them, their cost counted with
//! the expression's. An expression naming a variable whose evaluation failed fails with that
//! variable's error, as kube's lazy variables make it fail.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use apimachinery::error::Reason;
use kube_cel::Value as CelValue;
use kube_cel::value::{Key, Map};
use serde_json::Value;

use super::source::{Expression, Policy};
use crate::cel::{self, Authz, MATCH_CONDITIONS_BUDGET, OUT_OF_BUDGET, OutOfBudget, Outcome, RUNTIME_COST_BUDGET};

/// kube's `MaxEvaluatedMessageExpressionSizeBytes`.
const MAX_MESSAGE: usize = 5 * 1024;

/// The CEL variables of one evaluation.
pub struct Inputs {
    /// `object`: null for a delete.
    pub object: Value,
    /// `oldObject`: null for a create.
    pub old_object: Value,
    /// `request`.
    pub request: Value,
    /// `params`: null without params.
    pub params: Value,
    /// `namespaceObject`: null for cluster-scoped objects.
    pub namespace: Value,
    /// `authorizer.requestResource`: a check of the request's resource.
    pub request_resource: CelValue,
}

/// What an expression's failure does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Evaluation {
    /// It held.
    Admit,
    /// It did not hold.
    Deny,
    /// It could not be evaluated.
    Error,
}

/// kube's `PolicyDecision`: whether to refuse, and why.
#[derive(Clone, Debug)]
pub struct Decision {
    /// Refuse (a failed validation, or an error under `Fail`), or let through.
    pub deny: bool,
    /// What the expression did.
    pub evaluation: Evaluation,
    /// Why, for a refusal or an error.
    pub message: String,
    /// The status reason of a refusal.
    pub reason: Reason,
    /// How long the expression took.
    pub elapsed: Duration,
}

/// What an audit annotation's value expression gave.
#[derive(Clone, Debug, PartialEq)]
pub enum AuditOutcome {
    /// A value to publish under the key.
    Publish(String, String),
    /// Nothing to publish (null or blank).
    Exclude,
    /// It failed under `Fail`: the request is refused with this message.
    Error(String, Duration),
}

/// The decisions of one evaluation, one per validation.
#[derive(Debug, Default)]
pub struct Validated {
    /// One per validation (or one for failed match conditions or an exhausted budget).
    pub decisions: Vec<Decision>,
    /// One per audit annotation.
    pub audit: Vec<AuditOutcome>,
}

/// Evaluates `policy` over `inputs`, its authorization checks answered through `authz`.
pub async fn validate(policy: &Policy, inputs: &Inputs, authz: &Authz<'_>) -> Validated {
    let on_error = |message: String| Decision {
        deny: policy.fail_closed,
        evaluation: Evaluation::Error,
        message,
        reason: Reason::Invalid,
        elapsed: Duration::ZERO,
    };
    let only = |message: String| Validated { decisions: vec![on_error(message)], audit: Vec::new() };
    let run = Run::new(policy, inputs);
    if !policy.match_conditions.is_empty() {
        let conditions: Vec<Option<&Expression>> =
            policy.match_conditions.iter().map(|c| Some(&c.expression)).collect();
        match run.set(&conditions, Some(authz), MATCH_CONDITIONS_BUDGET).await {
            // kube's matcher: errors under `Ignore` skip the policy as a false condition does.
            Err(OutOfBudget) if policy.fail_closed => return only(OUT_OF_BUDGET.into()),
            Err(OutOfBudget) => return Validated::default(),
            Ok((outcomes, _)) => {
                if outcomes.iter().any(|o| matches!(o.outcome, Some(Ok(CelValue::Bool(false))))) {
                    return Validated::default();
                }
                let mut errors: Vec<String> = Vec::new();
                for e in outcomes.into_iter().filter_map(|o| o.outcome.and_then(Result::err)) {
                    if !errors.contains(&e) {
                        errors.push(e);
                    }
                }
                match errors.len() {
                    0 => {}
                    _ if !policy.fail_closed => return Validated::default(),
                    1 => return only(errors.remove(0)),
                    _ => return only(format!("[{}]", errors.join(", "))),
                }
            }
        }
    }
    let validations: Vec<Option<&Expression>> = policy.validations.iter().map(|v| Some(&v.expression)).collect();
    let (results, remaining) = match run.set(&validations, Some(authz), RUNTIME_COST_BUDGET).await {
        Ok(r) => r,
        Err(OutOfBudget) => return only(OUT_OF_BUDGET.into()),
    };
    // Every message expression is evaluated, whether its validation failed or not, without
    // the authorizer, on what the validations left.
    let messages: Vec<Option<&Expression>> = policy.validations.iter().map(|v| v.message_expression.as_ref()).collect();
    let messages = run.set(&messages, None, remaining).await;
    let mut decisions = Vec::with_capacity(policy.validations.len());
    for (i, (v, result)) in policy.validations.iter().zip(results).enumerate() {
        let elapsed = result.elapsed;
        let decision = match result.outcome.unwrap_or(Ok(CelValue::Bool(true))) {
            Err(e) => Decision { elapsed, ..on_error(e) },
            Ok(_) if messages.is_err() => {
                Decision { elapsed, ..on_error(format!("failed messageExpression: {OUT_OF_BUDGET}")) }
            }
            Ok(CelValue::Bool(true)) => Decision {
                deny: false,
                evaluation: Evaluation::Admit,
                message: String::new(),
                reason: v.reason,
                elapsed,
            },
            Ok(_) => {
                let evaluated = messages.as_ref().ok().and_then(|(m, _)| m.get(i)).and_then(|m| m.outcome.as_ref());
                let from_expression = match evaluated {
                    Some(Ok(CelValue::String(s))) => {
                        let s = s.trim();
                        (!s.is_empty() && s.len() <= MAX_MESSAGE && !s.contains('\n')).then(|| s.to_string())
                    }
                    Some(Err(e)) => {
                        tracing::debug!(policy = %policy.name, "messageExpression failed: {e}");
                        None
                    }
                    _ => None,
                };
                let message = from_expression
                    .or_else(|| (!v.message.is_empty()).then(|| v.message.clone()))
                    .unwrap_or_else(|| format!("failed expression: {}", v.expression.source.trim()));
                Decision { deny: true, evaluation: Evaluation::Deny, message, reason: v.reason, elapsed }
            }
        };
        decisions.push(decision);
    }
    // kube binds no authorizer for audit annotations, and gives them a budget of their own.
    let values: Vec<Option<&Expression>> = policy.audit_annotations.iter().map(|a| Some(&a.value_expression)).collect();
    let results = match run.set(&values, None, RUNTIME_COST_BUDGET).await {
        Ok((results, _)) => results,
        Err(OutOfBudget) => return only(OUT_OF_BUDGET.into()),
    };
    let audit = policy
        .audit_annotations
        .iter()
        .zip(results)
        .map(|(a, result)| match result.outcome.unwrap_or(Ok(CelValue::Null)) {
            Err(e) if policy.fail_closed => AuditOutcome::Error(e, result.elapsed),
            Err(_) => AuditOutcome::Exclude,
            Ok(CelValue::String(s)) if s.trim().is_empty() => AuditOutcome::Exclude,
            Ok(CelValue::String(s)) => AuditOutcome::Publish(a.key.clone(), s.trim().to_string()),
            Ok(CelValue::Null) => AuditOutcome::Exclude,
            // Whatever the failure policy, as kube's `AuditAnnotationActionError`.
            Ok(other) => AuditOutcome::Error(
                format!(
                    "valueExpression '{}' resulted in unsupported return type: {}. Return type must be either \
                     string or null.",
                    a.value_expression.source,
                    other.type_name()
                ),
                result.elapsed,
            ),
        })
        .collect();
    Validated { decisions, audit }
}

/// What one expression of a set gave: `None` for a placeholder (a validation without a
/// message expression).
struct Evaluated {
    outcome: Option<Outcome>,
    elapsed: Duration,
}

/// The variables of one evaluation, and the policy's.
struct Run<'a> {
    policy: &'a Policy,
    /// `object`, `oldObject`, `request`, `params`, `namespaceObject`, and the authorizer's.
    vars: Vec<(&'static str, CelValue)>,
}

/// The variables evaluated so far in one set of expressions.
#[derive(Default)]
struct Variables {
    values: BTreeMap<String, Result<CelValue, String>>,
}

impl Variables {
    /// `variables`, as CEL sees it: the ones that evaluated.
    fn value(&self) -> CelValue {
        let entries = self
            .values
            .iter()
            .filter_map(|(k, v)| v.as_ref().ok().map(|v| (Key::String(k.as_str().into()), v.clone())))
            .collect();
        CelValue::Map(Map::new(entries))
    }
}

impl<'a> Run<'a> {
    fn new(policy: &'a Policy, inputs: &Inputs) -> Run<'a> {
        let json = [
            ("object", &inputs.object),
            ("oldObject", &inputs.old_object),
            ("request", &inputs.request),
            ("params", &inputs.params),
            ("namespaceObject", &inputs.namespace),
        ];
        let mut vars: Vec<(&'static str, CelValue)> = json.iter().map(|(k, v)| (*k, cel::value(v))).collect();
        vars.push(("authorizer", kube_cel::library::authz::authorizer_value()));
        vars.push(("authorizer.requestResource", inputs.request_resource.clone()));
        Run { policy, vars }
    }

    /// Evaluates a set of expressions sharing `budget` (kube's `ForInput`): the outcomes and
    /// what is left, or the budget exhausted.
    async fn set(
        &self,
        expressions: &[Option<&Expression>],
        authz: Option<&Authz<'_>>,
        mut budget: u64,
    ) -> Result<(Vec<Evaluated>, u64), OutOfBudget> {
        let mut variables = Variables::default();
        let mut out = Vec::with_capacity(expressions.len());
        for e in expressions {
            let Some(e) = e else {
                out.push(Evaluated { outcome: None, elapsed: Duration::ZERO });
                continue;
            };
            let started = Instant::now();
            let outcome = self.evaluate(e, &mut variables, authz, &mut budget).await?;
            out.push(Evaluated { outcome: Some(outcome), elapsed: started.elapsed() });
        }
        Ok((out, budget))
    }

    /// Evaluates `e` after the variables it names, their cost and its own taken from
    /// `budget`.
    async fn evaluate(
        &self,
        e: &Expression,
        variables: &mut Variables,
        authz: Option<&Authz<'_>>,
        budget: &mut u64,
    ) -> Result<Outcome, OutOfBudget> {
        let program = match &e.program {
            Ok(p) => p,
            Err(err) => return Ok(Err(format!("compilation error: {err}"))),
        };
        let mut variables_cost = 0u64;
        for index in self.needed(program) {
            let v = &self.policy.variables[index];
            if variables.values.contains_key(&v.name) {
                continue;
            }
            let value = match &v.expression.program {
                Err(err) => Err(format!("composited variable \"{}\" fails to compile: {err}", v.name)),
                Ok(p) => match self.failed_variable(p, variables) {
                    Some(err) => Err(format!("composited variable \"{}\" fails to evaluate: {err}", v.name)),
                    None => {
                        let vars = self.with_variables(variables);
                        let evaluation = cel::evaluate(p, &vars, authz).await;
                        variables_cost = variables_cost.saturating_add(evaluation.cost);
                        evaluation
                            .result
                            .map_err(|err| format!("composited variable \"{}\" fails to evaluate: {err}", v.name))
                    }
                },
            };
            variables.values.insert(v.name.clone(), value);
        }
        let outcome = match self.failed_variable(program, variables) {
            Some(err) => Err(cel::resulted(program.source(), &err)),
            None => {
                let vars = self.with_variables(variables);
                let evaluation = cel::evaluate(program, &vars, authz).await;
                cel::spend(budget, variables_cost)?;
                cel::spend(budget, evaluation.cost)?;
                return Ok(evaluation.result.map_err(|err| cel::resulted(program.source(), &err.to_string())));
            }
        };
        cel::spend(budget, variables_cost)?;
        Ok(outcome)
    }

    /// The activation with `variables` bound.
    fn with_variables(&self, variables: &Variables) -> Vec<(&'static str, CelValue)> {
        let mut vars = self.vars.clone();
        vars.push(("variables", variables.value()));
        vars
    }

    /// The error of the first failed variable `program` names.
    fn failed_variable(&self, program: &kube_cel::Program, variables: &Variables) -> Option<String> {
        program.fields_of("variables").iter().find_map(|name| variables.values.get(name)?.clone().err())
    }

    /// The indexes of the variables `program` needs, directly or through other variables, in
    /// declaration order (a variable sees only the ones before it).
    fn needed(&self, program: &kube_cel::Program) -> Vec<usize> {
        let declared = &self.policy.variables;
        let mut names: BTreeSet<String> = program.fields_of("variables");
        let mut needed = Vec::new();
        for (i, v) in declared.iter().enumerate().rev() {
            if names.contains(&v.name) {
                needed.push(i);
                if let Ok(p) = &v.expression.program {
                    names.extend(p.fields_of("variables"));
                }
            }
        }
        needed.reverse();
        needed
    }
}
