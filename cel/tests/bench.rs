//! Evaluation time per rule, this crate's evaluator against the `cel` crate's interpreter (the
//! one the server used before), on the same rules over the same object, in one run.
//!
//! Ignored by default; run in release:
//! `cargo test -p kube-cel --release --test bench -- --ignored --nocapture`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use kube_cel::{Activation, Env, Program, Type, Version, value};
use serde_json::{Value, json};

/// Evaluations timed per rule and evaluator.
const RUNS: usize = 20_000;

/// The object the rules read as `self`: a workload-like spec.
fn object() -> Value {
    let containers: Vec<Value> = (0..20)
        .map(|i| {
            json!({"name": format!("c{i}"), "image": format!("registry.example.com/app{i}:1.{i}"),
            "ports": [{"containerPort": 8000 + i}]})
        })
        .collect();
    let items: Vec<String> = (0..100).map(|i| format!("item-{i}")).collect();
    let ports: Vec<i64> = (0..50).map(|i| 1000 + i * 37).collect();
    json!({"name": "web-frontend", "replicas": 3, "items": items, "ports": ports,
        "template": {"containers": containers}, "address": "10.1.2.3"})
}

/// The rules timed: a name, and the rule.
const RULES: [(&str, &str); 7] = [
    ("comparison", "self.replicas >= 0 && self.replicas <= 10"),
    ("string functions", "self.name.startsWith('web-') && self.name.size() < 64"),
    ("regex", "self.name.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')"),
    ("all over 100 strings", "self.items.all(i, i.size() < 32)"),
    ("filter over 50 ints", "self.ports.filter(p, p > 1024).size() <= 50"),
    ("nested has/contains", "self.template.containers.all(c, has(c.image) && c.image.contains(':'))"),
    ("ip library (new only)", "isIP(self.address) && cidr('10.0.0.0/8').containsIP(self.address)"),
];

/// p50 and p99 of `timings`.
fn percentiles(mut timings: Vec<Duration>) -> (Duration, Duration) {
    timings.sort();
    let at = |p: f64| timings[((timings.len() as f64 - 1.0) * p).round() as usize];
    (at(0.50), at(0.99))
}

/// Times `eval`, which must answer true, `RUNS` times after a warm-up.
fn time(mut eval: impl FnMut() -> bool) -> (Duration, Duration) {
    for _ in 0..RUNS / 10 {
        assert!(eval());
    }
    let mut timings = Vec::with_capacity(RUNS);
    for _ in 0..RUNS {
        let started = Instant::now();
        let ok = eval();
        timings.push(started.elapsed());
        assert!(ok);
    }
    percentiles(timings)
}

/// JSON as the old evaluator read it (integers as `int`, objects as maps of strings).
fn old_value(v: &Value) -> cel::Value {
    match v {
        Value::Null => cel::Value::Null,
        Value::Bool(b) => cel::Value::Bool(*b),
        Value::Number(n) => match n.as_i64() {
            Some(i) => cel::Value::Int(i),
            None => cel::Value::Float(n.as_f64().unwrap_or(f64::NAN)),
        },
        Value::String(s) => cel::Value::String(Arc::new(s.clone())),
        Value::Array(items) => cel::Value::List(Arc::new(items.iter().map(old_value).collect())),
        Value::Object(fields) => {
            let map: std::collections::HashMap<cel::objects::Key, cel::Value> =
                fields.iter().map(|(k, v)| (cel::objects::Key::String(Arc::new(k.clone())), old_value(v))).collect();
            cel::Value::Map(cel::objects::Map { map: Arc::new(map) })
        }
    }
}

fn show(d: Duration) -> String {
    format!("{:.2} µs", d.as_secs_f64() * 1e6)
}

#[test]
#[ignore = "a benchmark: run in release with --ignored --nocapture"]
fn evaluation_per_rule_old_and_new() {
    let json = object();
    let new_self = value::from_json(&json);
    let old_self = old_value(&json);
    let env = Env::new(Version::STORED).declare("self", Type::Dyn);
    let old_env = Arc::new(cel::Env::stdlib());
    println!("| rule | old p50 | old p99 | new p50 | new p99 | new cost |");
    println!("|---|---|---|---|---|---|");
    for (name, rule) in RULES {
        let program = Program::compile(&env, rule).expect("compiles");
        let cost = program.evaluate(&Activation::new().bind("self", new_self.clone()), None).cost;
        let (new50, new99) = time(|| {
            let activation = Activation::new().bind("self", new_self.clone());
            matches!(program.evaluate(&activation, Some(1_000_000)).result, Ok(kube_cel::Value::Bool(true)))
        });
        let old = cel::Program::compile(rule).ok().and_then(|p| {
            let mut context = cel::Context::with_env(old_env.clone());
            context.add_variable_from_value("self", old_self.clone());
            // The old environment lacks kube's libraries: such a rule does not run there.
            matches!(p.execute(&context), Ok(cel::Value::Bool(true))).then(|| {
                time(|| {
                    let mut context = cel::Context::with_env(old_env.clone());
                    context.add_variable_from_value("self", old_self.clone());
                    matches!(p.execute(&context), Ok(cel::Value::Bool(true)))
                })
            })
        });
        let (old50, old99) = old.map_or(("n/a".into(), "n/a".into()), |(a, b)| (show(a), show(b)));
        println!("| {name} | {old50} | {old99} | {} | {} | {cost} |", show(new50), show(new99));
    }
}
