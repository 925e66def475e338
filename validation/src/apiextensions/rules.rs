//! The CEL part of a CRD schema's validation: every `x-kubernetes-validations` rule compiled
//! with `self` typed from its node (`kube_cel::rules`), and refused as kube refuses it
//! (`ValidateCustomResourceDefinitionOpenAPISchema`, `CELSchemaContext`):
//!
//! - a rule or message expression that does not compile, at `...x-kubernetes-validations[i].rule`
//!   (or `.messageExpression`), the bad value printed as kube prints the rule struct;
//! - `oldSelf` under a list that is not a map list (or a map of an unknown map type), where
//!   old values cannot be correlated with new ones; `optionalOldSelf` without `oldSelf`;
//! - a rule whose estimated cost, times how often its node can repeat in one request, exceeds
//!   kube's per-expression limit, and the rules of a schema whose total exceeds kube's limit
//!   for a whole schema.

use std::cell::RefCell;

use serde_json::Value;

use super::GO_ADDRESS;
use apimachinery::error::Cause;
use apimachinery::validation::field::{self, Bad, Path};
use kube_cel::DeclType;
use kube_cel::rules::{self, Preexisting, Rule};

/// kube's `StaticEstimatedCostLimit`: the most one rule may cost, over all its evaluations.
const EXPRESSION_COST_LIMIT: u64 = 10_000_000;
/// kube's `StaticEstimatedCRDCostLimit`: the most all rules of a schema may cost together.
const SCHEMA_COST_LIMIT: u64 = 100_000_000;

/// kube's `TotalCost`: the estimated cost of all rules of a schema, and the costliest ones.
#[derive(Debug, Default)]
pub(super) struct TotalCost {
    total: u64,
    /// At most four expressions costing at least 1% of the limit, costliest first.
    most_expensive: Vec<(Path, u64)>,
}

impl TotalCost {
    fn observe(&mut self, path: Path, cost: u64) {
        self.total = self.total.saturating_add(cost);
        if cost < SCHEMA_COST_LIMIT / 100 {
            return;
        }
        self.most_expensive.push((path, cost));
        self.most_expensive.sort_by_key(|e| std::cmp::Reverse(e.1));
        self.most_expensive.truncate(4);
    }
}

/// kube's `CELSchemaContext` at a node: how often its values can repeat in one object
/// (`None`: nothing above bounds it), and the schema's running total.
#[derive(Clone, Copy, Debug)]
pub(super) struct CelContext<'a> {
    cardinality: Option<u64>,
    total: &'a RefCell<TotalCost>,
    /// Whether the per-expression limit is waived (an unchanged schema on update).
    suppress_expression_cost: bool,
    /// The expressions of the stored CRD: they compile in the newest environment.
    preexisting: &'a Preexisting,
}

impl<'a> CelContext<'a> {
    /// The context of a schema's root.
    pub(super) fn root(
        total: &'a RefCell<TotalCost>,
        suppress_expression_cost: bool,
        preexisting: &'a Preexisting,
    ) -> Self {
        CelContext { cardinality: Some(1), total, suppress_expression_cost, preexisting }
    }

    /// The context of the children (properties, items, values) of node `s`.
    pub(super) fn child(&self, s: &Value) -> Self {
        let int = |k: &str| s.get(k).and_then(Value::as_i64).map(|n| n.max(0) as u64);
        let factor = match s.get("type").and_then(Value::as_str) {
            Some("object") if s.get("additionalProperties").is_some_and(|a| !a.is_null()) => int("maxProperties"),
            Some("array") => int("maxItems"),
            _ => Some(1),
        };
        let cardinality = self.cardinality.zip(factor).map(|(a, b)| a.saturating_mul(b));
        CelContext { cardinality, ..*self }
    }
}

/// `%#v` of kube's internal `apiextensions.ValidationRule`, the bad value of compile errors.
fn go_rule(r: &Rule) -> Bad {
    let q = |s: &str| field::go_quote(s);
    let ptr = |ty: &str, set: bool| {
        if set { format!("(*{ty})({GO_ADDRESS})") } else { format!("(*{ty})(nil)") }
    };
    Bad::Raw(format!(
        "apiextensions.ValidationRule{{Rule:{}, Message:{}, MessageExpression:{}, Reason:{}, FieldPath:{}, OptionalOldSelf:{}}}",
        q(&r.rule),
        q(&r.message),
        q(&r.message_expression),
        ptr("apiextensions.FieldValueErrorReason", r.reason.is_some()),
        q(&r.field_path),
        ptr("bool", r.optional_old_self.is_some()),
    ))
}

/// kube's `getCostErrorMessage`.
fn cost_error(what: &str, cost: u64, limit: u64) -> String {
    let factor = cost as f64 / limit as f64;
    let factor = if factor > 100.0 {
        "more than 100x".to_string()
    } else if factor < 1.5 {
        format!("{factor:.6}x")
    } else {
        format!("{factor:.1}x")
    };
    format!(
        "{what} exceeds budget by factor of {factor} (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)"
    )
}

/// The CEL errors of the rules of node `s` at `path` (none if it has no rules).
/// `forbid_old_self` is the node under which `oldSelf` cannot be correlated.
pub(super) fn compile_errors(
    s: &Value,
    path: &Path,
    is_root: bool,
    ctx: CelContext<'_>,
    forbid_old_self: Option<&Path>,
) -> Vec<Cause> {
    let rules_path = path.child("x-kubernetes-validations");
    if Rule::list(s).is_empty() {
        return Vec::new();
    }
    let Some(decl) = DeclType::of(s, is_root) else {
        return vec![field::internal_error(
            &rules_path,
            "internal error: failed to construct type information for x-kubernetes-validations rules: unable to convert structural schema to CEL declarations",
        )];
    };
    let mut out = Vec::new();
    let mut total = ctx.total.borrow_mut();
    for (i, c) in rules::compile(s, &decl, ctx.preexisting).into_iter().enumerate() {
        let rp = rules_path.index(i);
        let cardinality = ctx.cardinality.unwrap_or(c.max_cardinality);
        let cost = |max: u64| if max == 0 { 0 } else { max.saturating_mul(cardinality) };
        let rule_cost = cost(c.max_cost);
        if rule_cost > EXPRESSION_COST_LIMIT && !ctx.suppress_expression_cost {
            out.push(field::forbidden(
                &rp.child("rule"),
                &cost_error("estimated rule cost", rule_cost, EXPRESSION_COST_LIMIT),
            ));
        }
        total.observe(rp.child("rule"), rule_cost);
        if let Some(Err(e)) = &c.program {
            out.push(field::invalid(&rp.child("rule"), go_rule(&c.rule), &e.0));
        }
        match &c.message_expression {
            Some(Err(e)) => out.push(field::invalid(&rp.child("messageExpression"), go_rule(&c.rule), &e.0)),
            Some(Ok(_)) => {
                let message_cost = cost(c.message_expression_max_cost);
                if message_cost > EXPRESSION_COST_LIMIT && !ctx.suppress_expression_cost {
                    out.push(field::forbidden(
                        &rp.child("messageExpression"),
                        &cost_error("estimated messageExpression cost", message_cost, EXPRESSION_COST_LIMIT),
                    ));
                }
                total.observe(rp.child("messageExpression"), message_cost);
            }
            None => {}
        }
        if c.uses_old_self {
            if let Some(within) = forbid_old_self {
                out.push(field::invalid(
                    &rp.child("rule"),
                    Bad::s(c.rule.rule.as_str()),
                    &format!(
                        "oldSelf cannot be used on the uncorrelatable portion of the schema within {}",
                        within.as_str()
                    ),
                ));
            }
        } else if let Some(optional) = c.rule.optional_old_self {
            out.push(field::invalid(
                &rp.child("optionalOldSelf"),
                Bad::Bool(optional),
                "may not be set if oldSelf is not used in rule",
            ));
        }
    }
    out
}

/// The errors of a schema whose rules cost too much together: the costliest rules, then the
/// schema (`path` is its `openAPIV3Schema`).
pub(super) fn total_cost_errors(total: &TotalCost, path: &Path) -> Vec<Cause> {
    if total.total <= SCHEMA_COST_LIMIT {
        return Vec::new();
    }
    let mut out: Vec<Cause> = total
        .most_expensive
        .iter()
        .map(|(p, _)| {
            field::forbidden(
                p,
                "contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema",
            )
        })
        .collect();
    out.push(field::forbidden(
        path,
        &cost_error(
            "x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema",
            total.total,
            SCHEMA_COST_LIMIT,
        ),
    ));
    out
}
