//! One evaluation of a policy: for one binding and one param, what its match conditions,
//! validations and audit annotations decide (kube's `validator.go`), worded as kube words it.
//!
//! Variables are evaluated eagerly, in order, each seeing the ones before it; an expression
//! naming a variable whose evaluation failed fails with that variable's error, as kube's lazy
//! variables make it fail. (A variable nothing reads is evaluated all the same: its error is
//! never seen.)

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use apimachinery::error::Reason;
use serde_json::{Map, Value};

use super::source::{Expression, Policy};

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
    /// One per validation (or one for failed match conditions).
    pub decisions: Vec<Decision>,
    /// One per audit annotation.
    pub audit: Vec<AuditOutcome>,
}

/// Evaluates `policy` over `inputs`.
pub fn validate(policy: &Policy, inputs: &Inputs) -> Validated {
    let mut eval = Evaluator::new(policy, inputs);
    let on_error = |message: String| Decision {
        deny: policy.fail_closed,
        evaluation: Evaluation::Error,
        message,
        reason: Reason::Invalid,
        elapsed: Duration::ZERO,
    };
    match eval.match_conditions() {
        Ok(true) => {}
        Ok(false) => return Validated::default(),
        Err(e) => return Validated { decisions: vec![on_error(e)], audit: Vec::new() },
    }
    let mut decisions = Vec::with_capacity(policy.validations.len());
    for v in &policy.validations {
        let started = Instant::now();
        let result = eval.run(&v.expression);
        let elapsed = started.elapsed();
        let decision = match result {
            Err(e) => Decision { elapsed, ..on_error(e) },
            Ok(Value::Bool(true)) => Decision {
                deny: false,
                evaluation: Evaluation::Admit,
                message: String::new(),
                reason: v.reason,
                elapsed,
            },
            Ok(_) => {
                let from_expression = v.message_expression.as_ref().and_then(|m| match eval.run(m) {
                    Ok(Value::String(s)) => {
                        let s = s.trim();
                        (!s.is_empty() && s.len() <= MAX_MESSAGE && !s.contains('\n')).then(|| s.to_string())
                    }
                    Ok(_) => None,
                    Err(e) => {
                        tracing::debug!(policy = %policy.name, "messageExpression failed: {e}");
                        None
                    }
                });
                let message = from_expression
                    .or_else(|| (!v.message.is_empty()).then(|| v.message.clone()))
                    .unwrap_or_else(|| format!("failed expression: {}", v.expression.source.trim()));
                Decision { deny: true, evaluation: Evaluation::Deny, message, reason: v.reason, elapsed }
            }
        };
        decisions.push(decision);
    }
    let audit = policy
        .audit_annotations
        .iter()
        .map(|a| {
            let started = Instant::now();
            let failed = |message: String| {
                if policy.fail_closed { AuditOutcome::Error(message, started.elapsed()) } else { AuditOutcome::Exclude }
            };
            match eval.run_typed(&a.value_expression) {
                Err(e) => failed(e),
                Ok((Value::String(s), _)) if s.trim().is_empty() => AuditOutcome::Exclude,
                Ok((Value::String(s), _)) => AuditOutcome::Publish(a.key.clone(), s.trim().to_string()),
                Ok((Value::Null, _)) => AuditOutcome::Exclude,
                Ok((_, type_name)) => failed(format!(
                    "valueExpression '{}' resulted in unsupported return type: {type_name}. Return type must be \
                     either string or null.",
                    a.value_expression.source
                )),
            }
        })
        .collect();
    Validated { decisions, audit }
}

/// Evaluates a policy's expressions over one set of inputs, variables computed once.
struct Evaluator<'a> {
    policy: &'a Policy,
    inputs: &'a Inputs,
    /// The variables that evaluated, as CEL's `variables`.
    variables: Value,
    /// Why the others did not: `composited variable "x" fails to ...`.
    failed: BTreeMap<String, String>,
}

impl<'a> Evaluator<'a> {
    fn new(policy: &'a Policy, inputs: &'a Inputs) -> Self {
        let mut eval = Evaluator { policy, inputs, variables: Value::Object(Map::new()), failed: BTreeMap::new() };
        for v in &policy.variables {
            let outcome = match &v.expression.program {
                Err(e) => Err(format!("composited variable \"{}\" fails to compile: {e}", v.name)),
                Ok(p) => match eval.failed_variable(p) {
                    Some(e) => Err(format!("composited variable \"{}\" fails to evaluate: {e}", v.name)),
                    None => p
                        .eval(&eval.bindings())
                        .map_err(|e| format!("composited variable \"{}\" fails to evaluate: {e}", v.name)),
                },
            };
            match outcome {
                Ok(value) => {
                    eval.variables.as_object_mut().expect("variables is a map").insert(v.name.clone(), value);
                }
                Err(e) => {
                    eval.failed.insert(v.name.clone(), e);
                }
            }
        }
        eval
    }

    fn bindings(&self) -> [(&'static str, &Value); 6] {
        [
            ("object", &self.inputs.object),
            ("oldObject", &self.inputs.old_object),
            ("request", &self.inputs.request),
            ("params", &self.inputs.params),
            ("namespaceObject", &self.inputs.namespace),
            ("variables", &self.variables),
        ]
    }

    /// The error of the first failed variable `program` reads.
    fn failed_variable(&self, program: &apimachinery::cel::Program) -> Option<&String> {
        if self.failed.is_empty() {
            return None;
        }
        program.fields_of("variables").iter().find_map(|name| self.failed.get(name))
    }

    /// Evaluates `e`, failing as kube's activation fails: `compilation error: ...` or
    /// `expression '<source>' resulted in error: <why>`.
    fn run(&self, e: &Expression) -> Result<Value, String> {
        self.run_typed(e).map(|(v, _)| v)
    }

    fn run_typed(&self, e: &Expression) -> Result<(Value, &'static str), String> {
        let program = e.program.as_ref().map_err(|err| format!("compilation error: {err}"))?;
        let resulted = |why: &str| format!("expression '{}' resulted in error: {why}", e.source);
        if let Some(err) = self.failed_variable(program) {
            return Err(resulted(err));
        }
        program.eval_typed(&self.bindings()).map_err(|why| resulted(&why))
    }

    /// Whether every match condition holds: a false one wins over errors, which are
    /// otherwise reported together as kube's error aggregate prints them.
    fn match_conditions(&mut self) -> Result<bool, String> {
        let mut errors: Vec<String> = Vec::new();
        for c in &self.policy.match_conditions {
            match self.run(&c.expression) {
                Ok(Value::Bool(false)) => return Ok(false),
                Ok(_) => {}
                Err(e) => {
                    if !errors.contains(&e) {
                        errors.push(e);
                    }
                }
            }
        }
        match errors.len() {
            0 => Ok(true),
            1 => Err(errors.remove(0)),
            _ => Err(format!("[{}]", errors.join(", "))),
        }
    }
}
