//! CEL for admission: webhook `matchConditions` and ValidatingAdmissionPolicy expressions.
//!
//! Expressions are compiled by the `cel` crate (a maintained CEL parser and interpreter) in one
//! environment: the standard library with `matches` (RE2-compatible regexes), and the
//! strings, lists and math extensions, which are kube's `ext.Strings`, `ext.Lists` and
//! `ext.Math` libraries of cel-go. kube's own libraries (quantity, url, ip/cidr, authorizer,
//! format) are not in it; an expression calling them fails when evaluated, with the crate's
//! "undeclared reference" error.

use std::sync::{Arc, LazyLock};

use cel::{Context, Env};
use serde_json::Value;

/// The one environment every expression compiles and runs in.
static ENV: LazyLock<Arc<Env>> = LazyLock::new(|| {
    let mut env = Env::stdlib();
    // The extensions register only new overloads on a fresh standard environment.
    let _ = env.add_extension(cel::extensions::strings);
    let _ = env.add_extension(cel::extensions::lists);
    let _ = env.add_extension(cel::extensions::math);
    Arc::new(env)
});

/// A compiled expression.
pub struct Program {
    program: cel::Program,
}

impl std::fmt::Debug for Program {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Program")
    }
}

impl Program {
    /// Compiles `source`; the error is the parser's report (kube's wording is
    /// `compilation failed: ERROR: <input>:1:3: Syntax error: ...`, cel-go's).
    pub fn compile(source: &str) -> Result<Program, String> {
        if source.trim().is_empty() {
            return Err("compilation failed: expression is empty".into());
        }
        ENV.compile(source).map(|program| Program { program }).map_err(|e| format!("compilation failed: {e}"))
    }

    /// The variables the expression names at top level (`object`, `params`, ...).
    pub fn references_variable(&self, name: &str) -> bool {
        self.program.references().has_variable(name)
    }

    /// Evaluates with `vars` bound (JSON values become CEL maps, lists, strings, ints, doubles,
    /// bools and null), answering JSON.
    pub fn eval(&self, vars: &[(&str, &Value)]) -> Result<Value, String> {
        let mut context = Context::with_env(ENV.clone());
        for (name, value) in vars {
            context.add_variable(*name, *value).map_err(|e| format!("binding {name}: {e}"))?;
        }
        let out = self.program.execute(&context).map_err(|e| e.to_string())?;
        out.json().map_err(|e| format!("{e:?}"))
    }

    /// Evaluates an expression that must give a bool.
    pub fn eval_bool(&self, vars: &[(&str, &Value)]) -> Result<bool, String> {
        match self.eval(vars)? {
            Value::Bool(b) => Ok(b),
            other => Err(format!("expression must evaluate to bool, got {other}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn expressions_see_json_objects_and_the_extensions() {
        let object = json!({"metadata": {"name": "web-1", "labels": {"team": "a"}}, "spec": {"replicas": 3}});
        let p = Program::compile("object.spec.replicas <= 5 && object.metadata.name.startsWith('web')").unwrap();
        assert!(p.eval_bool(&[("object", &object)]).unwrap());
        let p = Program::compile("object.metadata.name.upperAscii() == 'WEB-1'").unwrap();
        assert!(p.eval_bool(&[("object", &object)]).unwrap(), "the strings extension");
        let p = Program::compile("object.metadata.name.matches('^web-[0-9]+$')").unwrap();
        assert!(p.eval_bool(&[("object", &object)]).unwrap(), "regexes");
        let p = Program::compile("has(object.metadata.labels.team) && !has(object.metadata.labels.env)").unwrap();
        assert!(p.eval_bool(&[("object", &object)]).unwrap());
        assert!(p.references_variable("object") && !p.references_variable("params"));
        let p = Program::compile("object.spec.replicas").unwrap();
        assert!(p.eval_bool(&[("object", &object)]).unwrap_err().contains("must evaluate to bool"));
    }

    #[test]
    fn broken_expressions_say_why() {
        let e = Program::compile("object.spec.replicas <").unwrap_err();
        assert!(e.starts_with("compilation failed: "), "{e}");
        assert!(Program::compile(" ").is_err());
        let p = Program::compile("object.nope.deeper == 1").unwrap();
        assert!(p.eval_bool(&[("object", &json!({}))]).is_err(), "a missing field is an evaluation error");
    }
}
