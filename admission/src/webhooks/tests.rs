//! Match conditions: kube's matcher's outcomes, cost limits and authorizer.

use std::sync::Arc;

use apimachinery::messages::Operation;
use kube_cel::{Activation, Env, Program, Type};
use serde_json::{Value, json};

use super::config::{HookKind, parse_hook};
use super::*;
use crate::testing::{Grants, Objects, admit};

fn plugin(allowed: &[&str]) -> WebhookPlugin {
    let grants = Grants { allowed: allowed.iter().map(|s| s.to_string()).collect(), ..Default::default() };
    WebhookPlugin::new(
        HookKind::Validating,
        Arc::new(Objects::default()),
        Arc::new(kinds::catalogue()),
        Arc::new(grants),
    )
}

fn hook(conditions: &[&str], failure_policy: &str) -> Hook {
    let conditions: Vec<Value> =
        conditions.iter().enumerate().map(|(i, e)| json!({"name": format!("c{i}"), "expression": e})).collect();
    parse_hook(
        "cfg",
        HookKind::Validating,
        &json!({"name": "w.example.com", "sideEffects": "None", "failurePolicy": failure_policy,
            "matchConditions": conditions, "clientConfig": {"url": "https://hook.example/"}}),
    )
}

/// A ConfigMap with `items` numbers in `data` keys, for costly conditions.
fn config_map(items: usize) -> Admit {
    let list: Vec<usize> = (0..items).collect();
    admit(Operation::Create, "", "configmaps", json!({"metadata": {"name": "c", "namespace": "ns"}, "list": list}))
}

async fn outcome(plugin: &WebhookPlugin, hook: &Hook, request: &Admit) -> Result<bool, String> {
    let seen = Seen::new(request, &request.object, None, &[]);
    match plugin.conditions_hold(hook, request, &seen).await {
        Ok(holds) => Ok(holds),
        Err(Undecided::Refused(e)) => Err(e.message),
        Err(Undecided::Setup(e)) => Err(format!("setup: {e}")),
    }
}

/// What `condition` costs over `request`'s object, as this crate counts it.
fn cost_of(condition: &str, request: &Admit) -> u64 {
    let env = Env::new(kube_cel::Version::STORED).declare("object", Type::Dyn);
    let program = Program::compile(&env, condition).unwrap();
    let activation = Activation::new().bind("object", crate::cel::value(&request.object));
    program.evaluate(&activation, None).cost
}

#[tokio::test]
async fn a_false_condition_skips_and_errors_follow_the_failure_policy() {
    let p = plugin(&[]);
    let request = config_map(1);
    assert_eq!(outcome(&p, &hook(&["true", "object.metadata.name == 'c'"], "Fail"), &request).await, Ok(true));
    assert_eq!(outcome(&p, &hook(&["object.nope == 1", "false"], "Fail"), &request).await, Ok(false));
    assert_eq!(
        outcome(&p, &hook(&["object.nope == 1", "true", "object.gone == 1"], "Fail"), &request).await,
        Err("configmaps \"c\" is forbidden: [expression 'object.nope == 1' resulted in error: no such key: nope, \
             expression 'object.gone == 1' resulted in error: no such key: gone]"
            .into())
    );
    assert_eq!(outcome(&p, &hook(&["object.nope == 1"], "Ignore"), &request).await, Ok(false));
}

#[tokio::test]
async fn conditions_ask_the_authorizer_for_the_requesting_user() {
    let p = plugin(&["someone get /healthz", "someone create /configmaps"]);
    let request = config_map(1);
    let check = "authorizer.path('/healthz').check('get').allowed()";
    assert_eq!(outcome(&p, &hook(&[check], "Fail"), &request).await, Ok(true));
    let denied = "authorizer.group('').resource('pods').check('delete').allowed()";
    assert_eq!(outcome(&p, &hook(&[denied], "Fail"), &request).await, Ok(false));
    let own = "authorizer.requestResource.check('create').allowed()";
    assert_eq!(outcome(&p, &hook(&[own], "Fail"), &request).await, Ok(true));
}

#[tokio::test]
async fn conditions_are_held_to_the_per_call_limit_and_their_shared_budget() {
    let p = plugin(&[]);
    let request = config_map(400);
    let condition = "object.list.all(a, object.list.all(b, b >= 0))";
    let cost = cost_of(condition, &request);
    assert!(cost < crate::cel::PER_CALL_LIMIT && cost > MATCH_CONDITIONS_BUDGET / 10, "{cost}");
    let fits = (MATCH_CONDITIONS_BUDGET / cost) as usize;
    assert_eq!(outcome(&p, &hook(&vec![condition; fits], "Fail"), &request).await, Ok(true));
    assert_eq!(
        outcome(&p, &hook(&vec![condition; fits + 1], "Fail"), &request).await,
        Err(format!("configmaps \"c\" is forbidden: {OUT_OF_BUDGET}"))
    );
    assert_eq!(outcome(&p, &hook(&vec![condition; fits + 1], "Ignore"), &request).await, Ok(false));
    let request = config_map(1000);
    assert_eq!(
        outcome(&p, &hook(&[condition], "Fail"), &request).await,
        Err(format!(
            "configmaps \"c\" is forbidden: expression '{condition}' resulted in error: operation cancelled: actual \
             cost limit exceeded"
        ))
    );
}
