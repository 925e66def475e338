//! `x-kubernetes-validations` rules compiled against the schema node they sit on, as kube's
//! `apiextensions-apiserver/pkg/apiserver/schema/cel` compiles them (`Compile`; its
//! `ValidFieldPath`, for `fieldPath`, is apimachinery's, beside the CRD validation that uses
//! it most): `self` is the node's value, typed by its declaration; `oldSelf` its value
//! before an update (a rule naming it is a transition rule; with `optionalOldSelf` it is an
//! optional that may be `optional.none()`). Both the CRD's validation (which refuses what does
//! not compile or costs too much) and the custom resources' validation (which evaluates) use
//! the one compilation.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::Value;

use crate::Program;
use crate::cost::{Estimate, SizeEstimator};
use crate::decl::{DeclKind, DeclType, MAX_REQUEST_SIZE_BYTES};
use crate::env::{Env, Version};
use crate::types::Type;

/// The variable a rule's node value is bound to.
pub const SELF: &str = "self";
/// The variable the node's old value is bound to in transition rules.
pub const OLD_SELF: &str = "oldSelf";

/// kube's `PerCallLimit`: the most one evaluation of a rule may cost.
pub const PER_CALL_LIMIT: u64 = 1_000_000;
/// kube's `RuntimeCELCostBudget`: the most all rules may cost on one object.
pub const RUNTIME_COST_BUDGET: u64 = 10_000_000;

/// The name of `self`'s type: kube makes up a new one (`selfType<n>`) for every compilation
/// so that rules cannot depend on it.
fn self_type_name() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| u64::from(d.subsec_nanos()))
        .unwrap_or(0);
    format!("selfType{}", nanos.wrapping_add(NEXT.fetch_add(1, Ordering::Relaxed)))
}

/// One `x-kubernetes-validations` entry, as written.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Rule {
    /// `rule`.
    pub rule: String,
    /// `message`.
    pub message: String,
    /// `messageExpression`.
    pub message_expression: String,
    /// `reason` (`FieldValueInvalid` when unset).
    pub reason: Option<String>,
    /// `fieldPath`.
    pub field_path: String,
    /// `optionalOldSelf`.
    pub optional_old_self: Option<bool>,
}

impl Rule {
    /// The rules of schema node `s`.
    pub fn list(s: &Value) -> Vec<Rule> {
        let text = |r: &Value, k: &str| r.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        s.get("x-kubernetes-validations")
            .and_then(Value::as_array)
            .map(|rules| {
                rules
                    .iter()
                    .map(|r| Rule {
                        rule: text(r, "rule"),
                        message: text(r, "message"),
                        message_expression: text(r, "messageExpression"),
                        reason: r.get("reason").and_then(Value::as_str).map(str::to_string),
                        field_path: text(r, "fieldPath"),
                        optional_old_self: r.get("optionalOldSelf").and_then(Value::as_bool),
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    /// kube's `ruleErrorString`: the message if there is one, else the rule, trimmed.
    pub fn error_string(&self) -> &str {
        if self.message.is_empty() { self.rule.trim() } else { self.message.trim() }
    }
}

/// Which environment each expression compiles in: kube's `preexistingExpressions`. An
/// expression found anywhere in the stored CRD compiles in the newest environment; one a user
/// adds, in the one kube stays compatible with.
#[derive(Clone, Debug, Default)]
pub struct Preexisting {
    rules: HashSet<String>,
    messages: HashSet<String>,
    /// Every expression is stored: custom resources' validation.
    all: bool,
}

impl Preexisting {
    /// Nothing stored: a CRD being created.
    pub fn none() -> Preexisting {
        Preexisting::default()
    }

    /// Everything stored: rules evaluated on custom resources.
    pub fn all() -> Preexisting {
        Preexisting { all: true, ..Preexisting::default() }
    }

    /// The expressions of the stored CRD `crd` (every version's schema).
    pub fn of_crd(crd: &Value) -> Preexisting {
        let mut out = Preexisting::default();
        let mut visit = |s: &Value| out.collect(s);
        if let Some(s) = crd.pointer("/spec/validation/openAPIV3Schema") {
            visit(s);
        }
        for v in crd.pointer("/spec/versions").and_then(Value::as_array).into_iter().flatten() {
            if let Some(s) = v.pointer("/schema/openAPIV3Schema") {
                visit(s);
            }
        }
        out
    }

    fn collect(&mut self, s: &Value) {
        match s {
            Value::Object(m) => {
                for r in Rule::list(s) {
                    self.rules.insert(r.rule);
                    if !r.message_expression.is_empty() {
                        self.messages.insert(r.message_expression);
                    }
                }
                for v in m.values() {
                    self.collect(v);
                }
            }
            Value::Array(items) => items.iter().for_each(|v| self.collect(v)),
            _ => {}
        }
    }

    fn rule_version(&self, rule: &str) -> Version {
        if self.all || self.rules.contains(rule) { Version::STORED } else { Version::NEW_EXPRESSIONS }
    }

    fn message_version(&self, expr: &str) -> Version {
        if self.all || self.messages.contains(expr) { Version::STORED } else { Version::NEW_EXPRESSIONS }
    }
}

/// Why a rule or its message expression does not compile, in kube's words (`compilation
/// failed: ERROR: <input>:1:6: ...`, `cel expression must evaluate to a bool`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct CompileError(pub String);

/// What compiling one rule gives (kube's `CompilationResult`).
#[derive(Debug, Default)]
pub struct Compiled {
    /// The rule as written.
    pub rule: Rule,
    /// The program, or why there is none; `None` for an empty rule (not compiled at all).
    pub program: Option<Result<Program, CompileError>>,
    /// Whether the rule names `oldSelf`: a transition rule, evaluated on updates only.
    pub uses_old_self: bool,
    /// The estimated worst case of one evaluation.
    pub max_cost: u64,
    /// How often a value of the node could repeat in one request, were nothing above it
    /// bounded: kube's request size over the value's smallest serialization.
    pub max_cardinality: u64,
    /// The message expression's program, or why there is none; `None` without one.
    pub message_expression: Option<Result<Program, CompileError>>,
    /// The estimated worst case of one evaluation of the message expression.
    pub message_expression_max_cost: u64,
}

/// kube's size estimator for CRD rules: a path's size is the declared maximum of what it leads
/// to, walked from the rule's node (whatever variable the path starts at, as kube walks it).
pub struct DeclSizes<'a>(pub &'a DeclType);

impl SizeEstimator for DeclSizes<'_> {
    fn estimate_size(&self, path: Option<&[String]>, _: &Type) -> Option<Estimate> {
        let path = path.filter(|p| !p.is_empty())?;
        let mut node: &DeclType = self.0;
        for step in &path[1..] {
            node = match step.as_str() {
                "@items" | "@values" => node.elem()?,
                "@keys" => {
                    return matches!(node.kind, DeclKind::Map(_)).then_some(Estimate::default());
                }
                field => node.field(field)?,
            };
        }
        Some(Estimate { min: 0, max: node.max_elements })
    }
}

/// Compiles the rules of schema node `s`, whose values are declared by `decl`, each in the
/// environment `preexisting` chooses for it.
pub fn compile(s: &Value, decl: &Arc<DeclType>, preexisting: &Preexisting) -> Vec<Compiled> {
    let self_type = decl.cel_type(&self_type_name());
    let max_cardinality = MAX_REQUEST_SIZE_BYTES / (decl.min_serialized_size + 1);
    Rule::list(s)
        .into_iter()
        .map(|rule| {
            let old_self = if rule.optional_old_self == Some(true) {
                Type::optional(self_type.clone())
            } else {
                self_type.clone()
            };
            let env = |v: Version| Env::new(v).declare(SELF, self_type.clone()).declare(OLD_SELF, old_self.clone());
            compile_rule(rule, decl, &env, preexisting, max_cardinality)
        })
        .collect()
}

fn compile_rule(
    rule: Rule,
    decl: &DeclType,
    env: &dyn Fn(Version) -> Env,
    preexisting: &Preexisting,
    max_cardinality: u64,
) -> Compiled {
    let mut out = Compiled { max_cardinality, ..Compiled::default() };
    if rule.rule.trim().is_empty() {
        out.rule = rule;
        return out;
    }
    let sizes = DeclSizes(decl);
    let compiled = typed(
        &rule.rule,
        &env(preexisting.rule_version(&rule.rule)),
        &sizes,
        &Type::Bool,
        "",
        "cel expression must evaluate to a bool",
    );
    match compiled {
        Err(e) => out.program = Some(Err(e)),
        Ok((program, cost)) => {
            out.uses_old_self = program.references_variable(OLD_SELF);
            out.max_cost = cost.max;
            out.program = Some(Ok(program));
            if !rule.message_expression.is_empty() {
                let compiled = typed(
                    &rule.message_expression,
                    &env(preexisting.message_version(&rule.message_expression)),
                    &sizes,
                    &Type::String,
                    "messageExpression ",
                    "messageExpression must evaluate to a string",
                );
                out.message_expression = Some(compiled.map(|(program, cost)| {
                    out.message_expression_max_cost = cost.max;
                    program
                }));
            }
        }
    }
    out.rule = rule;
    out
}

/// Compiles `source`, which must give a `want`, and estimates its cost.
fn typed(
    source: &str,
    env: &Env,
    sizes: &dyn SizeEstimator,
    want: &Type,
    prefix: &str,
    wrong_type: &str,
) -> Result<(Program, Estimate), CompileError> {
    let program = Program::compile(env, source).map_err(|e| CompileError(format!("{prefix}{e}")))?;
    if !program.output_type().is_exact(want) {
        return Err(CompileError(wrong_type.to_string()));
    }
    let cost = program.estimate(sizes);
    Ok((program, cost))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn compiled(s: &Value) -> Compiled {
        let decl = DeclType::of(s, false).unwrap();
        compile(s, &decl, &Preexisting::none()).remove(0)
    }

    /// A scalar schema: `integer`, `number`, `string`, `boolean`, a string format
    /// (`duration`, `date`, `date-time`) or `int-or-string`.
    fn scalar(t: &str) -> Value {
        match t {
            "duration" | "date" | "date-time" => json!({"type": "string", "format": t}),
            "int-or-string" => json!({"x-kubernetes-int-or-string": true}),
            t => json!({"type": t}),
        }
    }

    fn with_rule(mut s: Value, rule: &str) -> Value {
        s["x-kubernetes-validations"] = json!([{"rule": rule}]);
        s
    }

    fn max(mut s: Value, key: &str, max: Option<i64>) -> Value {
        if let Some(m) = max {
            s[key] = json!(m);
        }
        s
    }

    fn array(items: Value, m: Option<i64>) -> Value {
        max(json!({"type": "array", "items": items}), "maxItems", m)
    }

    fn map(values: Value, m: Option<i64>) -> Value {
        max(json!({"type": "object", "additionalProperties": values}), "maxProperties", m)
    }

    fn string(m: Option<i64>) -> Value {
        max(json!({"type": "string"}), "maxLength", m)
    }

    fn required_object(m: Option<i64>) -> Value {
        max(
            json!({"type": "object", "required": ["required"],
                "properties": {"required": {"type": "string"}, "optional": {"type": "string"}}}),
            "maxProperties",
            m,
        )
    }

    /// kube's `TestCostEstimation` cases: each schema without limits and with them, and the
    /// costs kube 1.30 estimates for both.
    #[test]
    fn estimates_match_kubes_cost_estimation_table() {
        type Gen = Box<dyn Fn(Option<i64>) -> Value>;
        let cases: Vec<(&str, Gen, u64, i64, u64)> = vec![
            (
                "number list all",
                Box::new(|m| with_rule(array(scalar("number"), m), "self.all(x, true)")),
                4718591,
                10,
                32,
            ),
            (
                "string list all",
                Box::new(|m| with_rule(array(scalar("string"), m), "self.all(x, true)")),
                3145727,
                20,
                62,
            ),
            (
                "bool list all",
                Box::new(|m| with_rule(array(scalar("boolean"), m), "self.all(x, true)")),
                1887437,
                5,
                17,
            ),
            (
                "list of lists all",
                Box::new(|m| with_rule(array(array(scalar("number"), None), m), "self.all(x, true)")),
                3145727,
                100,
                302,
            ),
            (
                "object list all",
                Box::new(|m| with_rule(array(required_object(None), m), "self.all(x, true)")),
                555128,
                50,
                152,
            ),
            ("number map all", Box::new(|m| with_rule(map(scalar("number"), m), "self.all(x, true)")), 1348169, 10, 32),
            ("string map all", Box::new(|m| with_rule(map(scalar("string"), m), "self.all(x, true)")), 1179647, 3, 11),
            ("contains", Box::new(|m| with_rule(string(m), "self.contains('test')")), 314574, 10, 5),
            ("startsWith", Box::new(|m| with_rule(string(m), "self.startsWith('test')")), 2, 15, 2),
            (
                "concatenation",
                Box::new(|m| with_rule(string(m), r#"size(self + "hello") > size("hello")"#)),
                314578,
                4,
                7,
            ),
            ("index", Box::new(|m| with_rule(array(scalar("number"), m), "self[1] == 0.0")), 2, 5000, 2),
            (
                "string index",
                Box::new(|m| with_rule(array(scalar("string"), m), "self[1] == self[1]")),
                314577,
                8,
                314577,
            ),
            (
                "nested all",
                Box::new(|m| with_rule(array(scalar("number"), m), "self.all(x, self.all(y, true))")),
                0,
                10,
                352,
            ),
            (
                "triple all",
                Box::new(|m| with_rule(array(scalar("number"), m), "self.all(x, self.all(y, self.all(z, true)))")),
                0,
                10,
                3552,
            ),
            ("matches", Box::new(|m| with_rule(string(m), r#"self.matches("x")"#)), 314574, 50, 22),
            (
                "matches empty string",
                Box::new(|m| with_rule(string(m), r#""".matches("(((((((((())))))))))[0-9]")"#)),
                7,
                10,
                7,
            ),
            ("matches empty regex", Box::new(|m| with_rule(string(m), r#"self.matches("")"#)), 1, 100, 1),
            (
                "map of strings with value length",
                Box::new(|m| with_rule(map(string(m), m), "self.all(x, x.contains(self[x]))")),
                2752507,
                10,
                72,
            ),
            ("zero-length string", Box::new(|m| with_rule(string(m), r#"self == "x""#)), 2, 0, 1),
            (
                "zero-length bytes",
                Box::new(|m| {
                    with_rule(max(json!({"type": "string", "format": "byte"}), "maxLength", m), r#"self == b"x""#)
                }),
                2,
                0,
                1,
            ),
            (
                "maxItems above the estimate",
                Box::new(|m| with_rule(array(scalar("number"), m), "self.all(x, x == 0.0)")),
                6291454,
                3 * 1024 * 2048,
                25165826,
            ),
            (
                "nested maps under a root rule",
                Box::new(|m| {
                    let inner = map(max(required_object(None), "maxProperties", m), m);
                    with_rule(array(inner, m), r#"self.all(x, x["y"].required == "z")"#)
                }),
                7340027,
                10,
                72,
            ),
            (
                "int-or-string list all",
                Box::new(|m| with_rule(array(scalar("int-or-string"), m), "self.all(x, true)")),
                4718591,
                10,
                32,
            ),
            (
                "int-or-string index",
                Box::new(|m| with_rule(array(scalar("int-or-string"), m), "self[0] == 5")),
                3,
                10,
                3,
            ),
            ("bool index", Box::new(|m| with_rule(array(scalar("boolean"), m), "self[0] == false")), 2, 25, 2),
            ("object index", Box::new(|m| with_rule(array(required_object(None), m), "self[0] == null")), 2, 422, 2),
            (
                "list of lists index",
                Box::new(|m| with_rule(array(array(scalar("number"), None), m), "self[0][0] == -1.0")),
                3,
                51,
                3,
            ),
            (
                "list of number maps all",
                Box::new(|m| with_rule(array(map(scalar("number"), None), m), "self.all(x, x.y == 25.2)")),
                6291452,
                12,
                74,
            ),
            (
                "list of number maps index",
                Box::new(|m| with_rule(array(map(scalar("number"), None), m), "self[0].x > 2.0")),
                4,
                3000,
                4,
            ),
            (
                "duration list all",
                Box::new(|m| with_rule(array(scalar("duration"), m), "self.all(x, true)")),
                2359295,
                5,
                17,
            ),
            (
                "duration index",
                Box::new(|m| with_rule(array(scalar("duration"), m), "self[0].getHours() == 2")),
                4,
                525,
                4,
            ),
            ("date list all", Box::new(|m| with_rule(array(scalar("date"), m), "self.all(x, true)")), 725936, 15, 47),
            (
                "date-time list all",
                Box::new(|m| with_rule(array(scalar("date-time"), m), "self.all(x, true)")),
                428963,
                25,
                77,
            ),
            (
                "int-or-string map all",
                Box::new(|m| with_rule(map(scalar("int-or-string"), m), "self.all(x, true)")),
                1348169,
                15,
                47,
            ),
            (
                "object map all",
                Box::new(|m| with_rule(map(required_object(None), m), "self.all(x, true)")),
                428963,
                20,
                62,
            ),
            (
                "duration map all",
                Box::new(|m| with_rule(map(scalar("duration"), m), "self.all(x, true)")),
                1048577,
                5,
                17,
            ),
            ("date map all", Box::new(|m| with_rule(map(scalar("date"), m), "self.all(x, true)")), 524288, 10, 32),
            (
                "date-time map all",
                Box::new(|m| with_rule(map(scalar("date-time"), m), "self.all(x, true)")),
                349526,
                25,
                77,
            ),
            ("join", Box::new(|m| with_rule(array(string(m), m), "self.join(' ') == 'aa bb'")), 329853068905, 10, 43),
            (
                "replace",
                Box::new(|m| {
                    let props = json!({"str": string(m), "before": string(Some(2)), "after": string(Some(4))});
                    with_rule(
                        json!({"type": "object", "properties": props}),
                        "self.str.replace(self.before, self.after) == 'does not matter'",
                    )
                }),
                629154,
                4,
                12,
            ),
            (
                "split",
                Box::new(|m| {
                    let props = json!({"str": string(m), "separator": string(m)});
                    with_rule(json!({"type": "object", "properties": props}), "self.str.split(self.separator) == []")
                }),
                629160,
                10,
                22,
            ),
            ("lowerAscii", Box::new(|m| with_rule(string(m), "self.lowerAscii() == 'lower!'")), 314575, 10, 6),
            ("size", Box::new(|m| with_rule(map(scalar("integer"), m), "oldSelf.size() == self.size()")), 5, 10, 5),
            (
                "timestamps compared",
                Box::new(|m| with_rule(map(scalar("date-time"), m), r#"self["a"] == self["b"]"#)),
                8,
                7,
                8,
            ),
            (
                "durations compared",
                Box::new(|m| with_rule(map(scalar("duration"), m), r#"self["c"] == self["d"]"#)),
                8,
                42,
                8,
            ),
            (
                "enums",
                Box::new(|m| {
                    let s = max(json!({"type": "string", "enum": ["A", "B", "C", "LongValue"]}), "maxLength", m);
                    with_rule(s, "self.contains('A')")
                }),
                2,
                1000,
                401,
            ),
        ];
        for (name, generate, unbounded, limit, bounded) in cases {
            let c = compiled(&generate(None));
            assert!(matches!(c.program, Some(Ok(_))), "{name}: {:?}", c.program);
            if unbounded > 0 {
                assert_eq!(c.max_cost, unbounded, "{name}, without limits");
            }
            assert_eq!(compiled(&generate(Some(limit))).max_cost, bounded, "{name}, limited to {limit}");
        }
    }

    #[test]
    fn rules_must_compile_to_a_bool_and_messages_to_a_string() {
        let s = json!({"type": "object", "properties": {"a": {"type": "integer"}}, "x-kubernetes-validations": [
            {"rule": "self.b > 0"},
            {"rule": "self.a"},
            {"rule": "self.a > oldSelf.a", "messageExpression": "self.a"},
            {"rule": "self.a > 0", "messageExpression": "'a is ' + string(self.a)"},
            {"rule": " "},
        ]});
        let got = compile(&s, &DeclType::of(&s, false).unwrap(), &Preexisting::none());
        let error = |c: &Compiled| c.program.as_ref().and_then(|p| p.as_ref().err()).map(|e| e.0.clone());
        assert_eq!(
            error(&got[0]).unwrap(),
            "compilation failed: ERROR: <input>:1:5: undefined field 'b'\n | self.b > 0\n | ....^"
        );
        assert_eq!(error(&got[1]).unwrap(), "cel expression must evaluate to a bool");
        assert!(got[2].uses_old_self && !got[3].uses_old_self);
        assert_eq!(
            got[2].message_expression.as_ref().unwrap().as_ref().unwrap_err().0,
            "messageExpression must evaluate to a string"
        );
        assert!(matches!(got[3].message_expression, Some(Ok(_))));
        assert!(got[4].program.is_none(), "an empty rule is not compiled");
    }
}
