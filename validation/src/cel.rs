//! The one place CEL expressions are checked when objects are validated: the match conditions
//! of admission webhooks and policies, and a ValidatingAdmissionPolicy's validations, message
//! expressions, audit annotations and variables.
//!
//! kube compiles each expression where its validation reaches it (`validateCELCondition` and
//! the policy's composited compiler in `pkg/apis/admissionregistration/validation`) and turns a
//! compile error into a cause at the expression's path: `Invalid value: "<expression>":
//! <detail>`. The validators here call [`check`] at those same points, so causes stay in
//! kube's order.
//!
//! [`check`] compiles in kube's environment ([`kube_cel::Env`]) with the variables kube
//! declares for the kind of expression (`mustBuildEnvs` and the composition environment):
//! `object`, `oldObject`, `request` and `namespaceObject` always, `params` with a `paramKind`,
//! `authorizer` and `authorizer.requestResource` where kube declares them, `variables`
//! outside match conditions, each typed by its own expression as kube's composited compiler
//! types it. A new expression compiles in the environment kube stays compatible with (1.31);
//! one unchanged on update, in the newest (1.32).

use super::field::{self, Bad, Path};
use apimachinery::error::Cause;
use kube_cel::types::{namespace_type, request_type};
use kube_cel::{Env, Program, Type, Version};

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
    /// The variables the expression may read as `variables.<name>`, with their types: for a
    /// variable, the ones declared before it; for the others, all of the policy's.
    pub variables: &'a [(String, Type)],
    /// Whether the expression is unchanged from the stored object (an update): kube compiles
    /// those in its `StoredExpressions` environment.
    pub stored: bool,
}

/// cel-go's `Type.String()`, as kube prints types in "must evaluate to" messages.
fn type_string(t: &Type) -> String {
    match t {
        Type::Timestamp => "google.protobuf.Timestamp".into(),
        Type::Duration => "google.protobuf.Duration".into(),
        Type::Null => "null_type".into(),
        other => other.to_string(),
    }
}

/// Compiles `expr`, giving the program or why it does not compile in kube's words
/// (`compilation failed: ERROR: <input>:1:5: ...`, `must evaluate to bool but got int`).
pub fn compile(expr: &Expression<'_>) -> Result<Program, String> {
    let program = Program::compile(&environment(expr), expr.text).map_err(|e| e.to_string())?;
    let output = program.output_type();
    let accepts = |want: &Type| output.is_exact(want);
    let wrong = |want: &str| format!("must evaluate to {want} but got {}", type_string(output));
    match expr.kind {
        ExpressionKind::MatchCondition | ExpressionKind::Validation if !accepts(&Type::Bool) => Err(wrong("bool")),
        ExpressionKind::MessageExpression if !accepts(&Type::String) => Err(wrong("string")),
        ExpressionKind::AuditAnnotationValue if !accepts(&Type::String) && !accepts(&Type::Null) => {
            Err(format!("must evaluate to one of [string null_type] but got {}", type_string(output)))
        }
        _ => Ok(program),
    }
}

/// Compiles `expr` and reports why it does not compile, as kube's validation would:
/// `Invalid value: "<expression>": compilation failed: ERROR: <input>:1:5: ...`.
pub fn check(expr: &Expression<'_>) -> Vec<Cause> {
    match compile(expr) {
        Ok(_) => Vec::new(),
        Err(detail) => vec![field::invalid(expr.path, Bad::s(expr.text), &detail)],
    }
}

/// The types of a policy's variables, each compiled in order seeing the ones before it, as
/// kube's composited compiler types them (`dyn` for one that does not compile).
pub fn variable_types(
    variables: &[(String, String)],
    has_params: bool,
    stored: &dyn Fn(&str) -> bool,
) -> Vec<(String, Type)> {
    let mut out: Vec<(String, Type)> = Vec::with_capacity(variables.len());
    let path = Path::new("");
    for (name, expression) in variables {
        let expr = Expression {
            kind: ExpressionKind::Variable,
            text: expression,
            path: &path,
            has_params,
            has_authorizer: true,
            variables: &out,
            stored: stored(expression),
        };
        let t = compile(&expr).map(|p| p.output_type().clone()).unwrap_or(Type::Dyn);
        out.push((name.clone(), t));
    }
    out
}

/// The environment kube compiles `expr` in (`mustBuildEnvs` and the composition
/// environment).
fn environment(expr: &Expression<'_>) -> Env {
    let version = if expr.stored { Version::STORED } else { Version::NEW_EXPRESSIONS };
    let mut env = Env::new(version)
        .declare("object", Type::Dyn)
        .declare("oldObject", Type::Dyn)
        .declare("request", request_type())
        .declare("namespaceObject", namespace_type());
    if expr.has_params {
        env = env.declare("params", Type::Dyn);
    }
    if expr.has_authorizer {
        env = env
            .declare("authorizer", Type::named("kubernetes.authorization.Authorizer"))
            .declare("authorizer.requestResource", Type::named("kubernetes.authorization.ResourceCheck"));
    }
    if expr.kind != ExpressionKind::MatchCondition {
        let fields = expr.variables.iter().cloned().collect();
        env = env.declare("variables", Type::object_of("kubernetes.variables", fields));
    }
    env
}

#[cfg(test)]
mod tests {
    use super::*;

    fn causes(kind: ExpressionKind, text: &str, has_params: bool) -> Vec<String> {
        let path = Path::new("spec").child("validations").index(0).child("expression");
        let variables = [("ready".to_string(), Type::Bool)];
        let expr = Expression {
            kind,
            text,
            path: &path,
            has_params,
            has_authorizer: kind != ExpressionKind::MessageExpression,
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
        assert!(
            causes(ExpressionKind::Validation, "authorizer.group('').resource('pods').check('get').allowed()", false)
                .is_empty()
        );
        assert!(
            causes(ExpressionKind::Validation, "authorizer.requestResource.check('get').allowed()", false).is_empty()
        );
        assert_eq!(
            causes(ExpressionKind::MessageExpression, "authorizer.path('/').check('get').reason()", false).len(),
            1,
            "no authorizer in message expressions"
        );
    }

    #[test]
    fn results_must_have_the_kinds_type() {
        assert_eq!(
            causes(ExpressionKind::Validation, "object.spec.paused", false),
            [
                "spec.validations[0].expression: Invalid value: \"object.spec.paused\": must evaluate to bool but got dyn"
            ]
        );
        assert!(causes(ExpressionKind::Validation, "!object.spec.paused", false).is_empty());
        assert!(
            causes(ExpressionKind::MessageExpression, "'too many: ' + string(object.spec.replicas)", false).is_empty()
        );
        assert_eq!(
            causes(ExpressionKind::MessageExpression, "1 + 2", false),
            ["spec.validations[0].expression: Invalid value: \"1 + 2\": must evaluate to string but got int"]
        );
        assert!(
            causes(ExpressionKind::AuditAnnotationValue, "object.spec.replicas > 1 ? 'big' : 'small'", false)
                .is_empty()
        );
        // kube 1.32 refuses a conditional of a string and null.
        assert_eq!(
            causes(ExpressionKind::AuditAnnotationValue, "object.spec.replicas > 1 ? \"big\" : null", false),
            ["spec.validations[0].expression: Invalid value: \"object.spec.replicas > 1 ? \\\"big\\\" : null\": \
              compilation failed: ERROR: <input>:1:26: found no matching overload for '_?_:_' applied to '(bool, \
              string, null)'\n | object.spec.replicas > 1 ? \"big\" : null\n | .........................^"]
        );
        assert!(causes(ExpressionKind::Variable, "object.spec.replicas", false).is_empty());
    }

    #[test]
    fn variables_are_typed_by_their_expressions() {
        let vars = [("x".to_string(), "'s'".to_string()), ("y".to_string(), "variables.x.size()".to_string())];
        let typed = variable_types(&vars, false, &|_| false);
        assert_eq!(typed[0].1.to_string(), "string");
        assert_eq!(typed[1].1.to_string(), "int");
    }

    #[test]
    fn two_variable_comprehensions_are_for_stored_expressions_only() {
        let path = Path::new("x");
        let expr = |stored| Expression {
            kind: ExpressionKind::Validation,
            text: "[1].all(i, v, v > i)",
            path: &path,
            has_params: false,
            has_authorizer: true,
            variables: &[],
            stored,
        };
        assert_eq!(check(&expr(false)).len(), 1);
        assert!(check(&expr(true)).is_empty());
    }
}
