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
//! [`check`] parses the expression and runs [`crate::cel::check`] with the variables kube
//! declares for its kind: `object`, `oldObject`, `request` and `namespaceObject` always,
//! `params` with a `paramKind`, `variables` outside match conditions. `object`, `oldObject` and
//! `params` are `dyn`, as in kube, so only what is wrong whatever the object is refused: syntax,
//! undeclared names and functions, fields `request` does not have, mismatched literals, and a
//! result of the wrong type (`must evaluate to bool`). `authorizer` is not declared: this server
//! cannot evaluate it, so an expression naming it is refused rather than failing every request.

use super::field::{self, Bad, Path};
use crate::cel::types::{namespace_type, request_type};
use crate::cel::{Declarations, Program, Type, format_issues};
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

/// Compiles `expr` and reports why it does not compile, as kube's validation would:
/// `Invalid value: "<expression>": compilation failed: ERROR: <input>:1:5: ...`, or the result
/// type it must have.
pub fn check(expr: &Expression<'_>) -> Vec<Cause> {
    let invalid = |detail: &str| vec![field::invalid(expr.path, Bad::s(expr.text), detail)];
    let program = match Program::compile(expr.text) {
        Ok(p) => p,
        Err(e) => return invalid(&e),
    };
    let checked = crate::cel::check(&program, &declarations(expr));
    if !checked.issues.is_empty() {
        return invalid(&format!("compilation failed: {}", format_issues(expr.text, &checked.issues)));
    }
    let output = &checked.output;
    let fits = |want: &Type| matches!(output, Type::Unknown) || output.same_kind(want);
    let wrong = match expr.kind {
        ExpressionKind::MatchCondition | ExpressionKind::Validation => {
            (!fits(&Type::Bool)).then_some("must evaluate to bool")
        }
        ExpressionKind::MessageExpression => (!fits(&Type::String)).then_some("must evaluate to string"),
        ExpressionKind::AuditAnnotationValue => {
            (!fits(&Type::String) && !fits(&Type::Null)).then_some("must evaluate to one of [string null_type]")
        }
        ExpressionKind::Variable => None,
    };
    wrong.map(invalid).unwrap_or_default()
}

/// The variables kube declares for `expr` (`mustBuildEnvs` and the composition environment).
fn declarations(expr: &Expression<'_>) -> Declarations {
    let mut decls = Declarations::new()
        .declare("object", Type::Dyn)
        .declare("oldObject", Type::Dyn)
        .declare("request", request_type())
        .declare("namespaceObject", namespace_type());
    if expr.has_params {
        decls = decls.declare("params", Type::Dyn);
    }
    if expr.kind != ExpressionKind::MatchCondition {
        let fields = expr.variables.iter().map(|v| (v.clone(), Type::Unknown)).collect();
        decls = decls.declare("variables", Type::object_of("kubernetes.variables", fields));
    }
    decls.lenient_references = expr.stored;
    decls
}

#[cfg(test)]
mod tests {
    use super::*;

    fn causes(kind: ExpressionKind, text: &str, has_params: bool) -> Vec<String> {
        let path = Path::new("spec").child("validations").index(0).child("expression");
        let variables = ["ready".to_string()];
        let expr = Expression {
            kind,
            text,
            path: &path,
            has_params,
            has_authorizer: true,
            variables: &variables,
            stored: false,
        };
        check(&expr).into_iter().map(|c| format!("{}: {}", c.field, c.message)).collect()
    }

    #[test]
    fn syntax_errors_are_refused_with_cel_gos_report() {
        let c = causes(ExpressionKind::Validation, "object.spec.replicas <", false);
        assert_eq!(c.len(), 1);
        assert!(
            c[0].starts_with(
                "spec.validations[0].expression: Invalid value: \"object.spec.replicas <\": compilation failed: \
                 ERROR: <input>:1:23: Syntax error: "
            ),
            "{}",
            c[0]
        );
    }

    #[test]
    fn names_are_declared_by_kind() {
        assert!(causes(ExpressionKind::Validation, "object.spec.replicas <= params.max", true).is_empty());
        assert_eq!(
            causes(ExpressionKind::Validation, "object.spec.replicas <= params.max", false),
            ["spec.validations[0].expression: Invalid value: \"object.spec.replicas <= params.max\": compilation \
              failed: ERROR: <input>:1:25: undeclared reference to 'params' (in container '')\n | object.spec.replicas \
              <= params.max\n | ........................^"]
        );
        assert!(
            causes(ExpressionKind::Validation, "variables.ready && request.operation == 'CREATE'", false).is_empty()
        );
        assert_eq!(causes(ExpressionKind::Validation, "variables.nope", false).len(), 1);
        assert_eq!(causes(ExpressionKind::MatchCondition, "variables.ready", false).len(), 1, "no variables there");
        assert_eq!(
            causes(ExpressionKind::Validation, "authorizer.group('').resource('pods').check('get').allowed()", false)
                .len(),
            1
        );
    }

    #[test]
    fn results_must_have_the_kinds_type() {
        assert_eq!(
            causes(ExpressionKind::Validation, "object.spec.paused", false),
            ["spec.validations[0].expression: Invalid value: \"object.spec.paused\": must evaluate to bool"]
        );
        assert!(causes(ExpressionKind::Validation, "!object.spec.paused", false).is_empty());
        assert!(
            causes(ExpressionKind::MessageExpression, "'too many: ' + string(object.spec.replicas)", false).is_empty()
        );
        assert_eq!(causes(ExpressionKind::MessageExpression, "1 + 2", false).len(), 1);
        assert!(
            causes(ExpressionKind::AuditAnnotationValue, "object.spec.replicas > 1 ? 'big' : null", false).is_empty()
        );
        assert!(causes(ExpressionKind::Variable, "object.spec.replicas", false).is_empty());
    }
}
