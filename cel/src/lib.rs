//! CEL as kube-apiserver 1.32 has it: the language of CustomResourceDefinitions'
//! `x-kubernetes-validations` rules, ValidatingAdmissionPolicies and webhook
//! `matchConditions`, with kube's environment, its type checker's findings, and cel-go's cost
//! model, counted as cel-go counts it so that kube's limits mean here what they mean there.
//!
//! An expression is parsed by the `cel` crate (cel-go's grammar), checked by [`check`] against
//! an [`Env`] (a [`Version`] of kube's environment and the variables of a use), validated as
//! kube's 1.29 validators do, planned ([`plan`]) and evaluated here ([`eval`]) on [`Value`]s.
//! Every step of an evaluation adds to a cost; past the caller's limit the evaluation stops
//! with cel-go's `operation cancelled: actual cost limit exceeded`. The static estimate
//! ([`cost::estimate`]) bounds the cost before anything runs, which is how kube refuses CRD
//! rules that could cost too much.
//!
//! # The environment
//! Both versions have CEL's standard library (UTC the default time zone, numbers compared
//! across types), optional types, the strings extension at version 2 (no `reverse`), sets,
//! and kube's libraries: URLs, regex (`find`, `findAll`), lists (`isSorted`, `sum`, `min`,
//! `max`, `indexOf`, `lastIndexOf`), the authorizer with selectors, quantity, IP, CIDR and
//! format. 1.32 adds two-variable comprehensions. kube's minimum compatibility version, 1.31,
//! compiles what users write; expressions already stored compile in 1.32 ([`env`]).
//!
//! # Limits
//! The callers hold expressions to kube's numbers: [`rules::PER_CALL_LIMIT`] (1,000,000) per
//! evaluation, [`rules::RUNTIME_COST_BUDGET`] (10,000,000) per object's CRD rules and per policy
//! binding, 2,500,000 for match conditions together; CRD rules are estimated at creation
//! against 10,000,000 each and 100,000,000 per schema.
//!
//! # Known differences
//! Quantities hold at most about 1.7e29 units (nanounits in 128 bits; kube's are arbitrary
//! precision). `'...'.format(...)` is validated for its verbs' count at compile, not for their
//! argument types.
//!
//! # Layout
//! - this module: [`Program`] (compile, estimate, evaluate) and cel-go's report format
//!   ([`Issue`], [`format_issues`]).
//! - [`env`]: versions and environments; [`decls`]: every overload with cel-go's ids.
//! - [`parse`]: the parser with kube's macros; [`check`]: the type checker; [`validate`]: the
//!   AST validators; [`types`]: the checker's types.
//! - [`plan`]: the steps cel-go's planner makes (which decide costs); [`eval`]: the
//!   interpreter and its cost count.
//! - [`value`]: values, and [`ext`] the values of kube's libraries; [`functions`]: dispatch
//!   to [`stdlib`] (the standard library and cel-go's extensions) and [`library`] (kube's);
//!   [`authorization`]: what an authorization check asks.
//! - [`cost`]: the static estimate and run-time call costs.
//! - [`decl`]: schema declarations (CRD rules' `self`); [`rules`]: CRD rules compiled.
//! - [`golang`], [`names`], [`quantity`]: what kube's libraries share with the object model
//!   (Go's quoting and durations, kube's name formats, resource quantities); [`strfmt`]: the
//!   `format` checks CEL's format library and CRD schemas share.
//! - [`error`]: why an evaluation failed or stopped, in cel-go's words.

pub mod authorization;
pub mod check;
pub mod cost;
pub mod decl;
pub mod decls;
pub mod env;
pub mod error;
pub mod eval;
pub mod ext;
pub mod functions;
pub mod golang;
pub mod library;
pub mod names;
pub mod parse;
pub mod plan;
pub mod quantity;
pub mod rules;
pub mod stdlib;
pub mod strfmt;
pub mod types;
pub mod validate;
pub mod value;

use std::collections::BTreeSet;

use cel::common::ast::{Expr, IdedExpr, SourceInfo};

pub use check::{Checked, check};
pub use cost::Estimate;
pub use decl::DeclType;
pub use env::{Env, Version};
pub use error::EvalError;
pub use eval::Activation;
pub use types::Type;
pub use value::Value;

/// Something wrong with an expression, where it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Issue {
    /// 1-based line.
    pub line: usize,
    /// 1-based column, in characters.
    pub column: usize,
    /// What is wrong (`undefined field 'foo'`).
    pub message: String,
}

impl Issue {
    /// An issue at character `offset` of `source`.
    pub fn at(source: &str, offset: usize, message: impl Into<String>) -> Issue {
        let mut line = 1;
        let mut column = 1;
        for c in source.chars().take(offset) {
            if c == '\n' {
                line += 1;
                column = 1;
            } else {
                column += 1;
            }
        }
        Issue { line, column, message: message.into() }
    }
}

/// cel-go's `Issues.String()`: each issue as `ERROR: <input>:line:col: message` with the line
/// and a caret under the column, sorted by position.
pub fn format_issues(source: &str, issues: &[Issue]) -> String {
    let mut sorted: Vec<&Issue> = issues.iter().collect();
    sorted.sort_by_key(|i| (i.line, i.column));
    let lines: Vec<&str> = source.split('\n').collect();
    sorted
        .iter()
        .map(|i| {
            let mut out = format!("ERROR: <input>:{}:{}: {}", i.line, i.column, i.message);
            if let Some(snippet) = lines.get(i.line - 1) {
                out.push_str(&format!("\n | {snippet}\n | {}^", ".".repeat(i.column.saturating_sub(1))));
            }
            out
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Why an expression does not compile.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CompileError {
    /// Syntax, type or validation issues: `compilation failed: ERROR: <input>:1:5: ...`.
    #[error("compilation failed: {}", format_issues(.text, .issues))]
    Issues {
        /// The expression.
        text: String,
        /// What is wrong.
        issues: Vec<Issue>,
    },
    /// The program could not be made (a constant conversion or pattern that cannot work):
    /// `program instantiation failed: ...`.
    #[error("program instantiation failed: {0}")]
    Instantiation(String),
}

impl CompileError {
    /// cel-go's report of the issues alone (`ERROR: <input>:1:5: ...`), for callers that word
    /// the failure their own way.
    pub fn issues_text(&self) -> String {
        match self {
            CompileError::Issues { text, issues } => format_issues(text, issues),
            CompileError::Instantiation(e) => e.clone(),
        }
    }
}

/// A compiled expression.
pub struct Program {
    source: String,
    expr: IdedExpr,
    checked: Checked,
    plan: plan::Node,
    output: Type,
}

impl std::fmt::Debug for Program {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Program({:?})", self.source)
    }
}

/// What one evaluation gave and cost.
#[derive(Clone, Debug, PartialEq)]
pub struct Evaluation {
    /// The value, or why there is none.
    pub result: Result<Value, EvalError>,
    /// The cost counted, up to where evaluation stopped.
    pub cost: u64,
}

/// Where node `id` starts, in characters.
fn offset(info: &SourceInfo, id: u64) -> usize {
    info.offset_for(id).map(|(start, _)| start as usize).unwrap_or(0)
}

impl Program {
    /// Parses, checks and plans `source` in `env`.
    pub fn compile(env: &Env, source: &str) -> Result<Program, CompileError> {
        Program::compile_with(env, source, true)
    }

    /// [`Program::compile`], with cel-go's plan-time optimizations or without: cel-go counts
    /// the cost of a constant list literal as 10 without them, 0 with them. kube's environment
    /// optimizes; kube's library tests, whose costs the tests here reuse, do not.
    pub fn compile_with(env: &Env, source: &str, optimize: bool) -> Result<Program, CompileError> {
        let issues = |issues: Vec<Issue>| CompileError::Issues { text: source.to_string(), issues };
        let parsed = parse::parse(source, env.version).map_err(|errors| {
            issues(errors.into_iter().map(|e| Issue { line: e.line, column: e.column, message: e.message }).collect())
        })?;
        let checked = check::check(&parsed.expr, env);
        let at = |found: &[(u64, String)]| {
            found
                .iter()
                .map(|(id, m)| Issue::at(source, offset(&parsed.source_info, *id), m.clone()))
                .collect::<Vec<_>>()
        };
        if !checked.issues.is_empty() {
            return Err(issues(at(&checked.issues)));
        }
        let validated = validate::validate(&parsed.expr, &checked);
        if !validated.is_empty() {
            return Err(issues(at(&validated)));
        }
        let plan = plan::plan(&parsed.expr, &checked, optimize).map_err(CompileError::Instantiation)?;
        let output = checked.type_of(parsed.expr.id);
        Ok(Program { source: source.to_string(), expr: parsed.expr, checked, plan, output })
    }

    /// The text it was compiled from.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The type it evaluates to.
    pub fn output_type(&self) -> &Type {
        &self.output
    }

    /// cel-go's static estimate of its cost, sizes given by `sizes`.
    pub fn estimate(&self, sizes: &dyn cost::SizeEstimator) -> Estimate {
        cost::estimate::estimate(&self.expr, &self.checked, sizes)
    }

    /// Evaluates it over `activation`, stopping once its cost passes `limit`.
    pub fn evaluate(&self, activation: &Activation<'_>, limit: Option<u64>) -> Evaluation {
        let mut evaluator = eval::Evaluator::new(activation, limit);
        let result = evaluator.eval(&self.plan);
        Evaluation { result, cost: evaluator.cost }
    }

    /// Whether it reads variable `name`.
    pub fn references_variable(&self, name: &str) -> bool {
        let mut found = false;
        parse::walk(&self.expr, &mut |e| {
            if matches!(&e.expr, Expr::Ident(n) if n == name)
                && matches!(self.checked.references.get(&e.id), Some(check::Reference::Variable(v)) if v == name)
            {
                found = true;
            }
        });
        found
    }

    /// The fields selected directly on variable `name`: for `variables`, the variables an
    /// expression reads (`variables.a + variables.b` reads `a` and `b`).
    pub fn fields_of(&self, name: &str) -> BTreeSet<String> {
        let mut out = BTreeSet::new();
        parse::walk(&self.expr, &mut |e| {
            if let Expr::Select(s) = &e.expr
                && matches!(&s.operand.expr, Expr::Ident(i) if i == name)
            {
                out.insert(s.field.clone());
            }
        });
        out
    }
}

#[cfg(test)]
mod tests;
