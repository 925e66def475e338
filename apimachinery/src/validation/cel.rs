//! The one place CEL expressions are checked when objects are validated: the match conditions
//! of admission webhooks and policies, and a ValidatingAdmissionPolicy's validations, message
//! expressions, audit annotations and variables.
//!
//! kube compiles each expression where its validation reaches it (`validateCELCondition` and
//! the policy's composited compiler in `pkg/apis/admissionregistration/validation`) and turns a
//! compile error into a cause at the expression's path: `cel.ErrorTypeRequired` as
//! `Required value: <detail>`, `ErrorTypeInvalid` as `Invalid value: "<expression>": <detail>`,
//! anything else as an internal error. The validators here call [`check`] at those same points,
//! so causes stay in kube's order.
//!
//! No CEL compiler is wired in yet: [`check`] accepts every expression. The validation around
//! it (an expression must be non-empty, at most 64 match conditions, unique names, ...) is in
//! place; plugging a compiler in means implementing [`check`] and nothing else.

use super::field::Path;
use crate::error::Cause;

/// What an expression is, which decides the CEL environment it compiles in and the type it
/// must return.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExpressionKind {
    /// `matchConditions[].expression` of a webhook or a policy: returns a bool.
    MatchCondition,
    /// A policy's `validations[].expression`: returns a bool.
    Validation,
    /// A policy's `validations[].messageExpression`: returns a string.
    MessageExpression,
    /// A policy's `auditAnnotations[].valueExpression`: returns a string or null.
    AuditAnnotationValue,
    /// A policy's `variables[].expression`: any type, stored under the variable's name.
    Variable,
}

/// One expression to compile, with what kube's `OptionalVariableDeclarations` and environment
/// type say about it.
#[derive(Clone, Debug)]
pub struct Expression<'a> {
    /// What the expression is.
    pub kind: ExpressionKind,
    /// The text to compile, as kube passes it (trimmed for match conditions and audit
    /// annotation values, as written otherwise so compiler columns are right).
    pub text: &'a str,
    /// Where a compile error is reported.
    pub path: &'a Path,
    /// Whether `params` is declared (the policy has a `paramKind`).
    pub has_params: bool,
    /// Whether `authorizer` is declared.
    pub has_authorizer: bool,
    /// The variables the expression may read as `variables.<name>`: for a variable, the ones
    /// declared before it; for the others, all of the policy's.
    pub variables: &'a [String],
    /// Whether the expression is unchanged from the stored object (an update): kube compiles
    /// those in its `StoredExpressions` environment, which also accepts library functions a
    /// newer server may have introduced.
    pub stored: bool,
}

/// Compiles `expr` and reports why it does not compile, as kube's validation would. Without a
/// CEL compiler, every expression is accepted.
pub fn check(expr: &Expression<'_>) -> Vec<Cause> {
    let _ = expr;
    Vec::new()
}
