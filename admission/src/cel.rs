//! Evaluating CEL in admission (policies and webhook match conditions) with kube's authorizer
//! library answered by the server's authorizers.
//!
//! Evaluation is synchronous, authorization a stage call. An expression that checks a
//! permission stops with the request it needs ([`EvalError::AuthorizationPending`]); it is
//! asked here and the expression evaluated again with the decision at hand. A check costs
//! 350,000 of an expression's 1,000,000, so an expression checks at most two permissions and
//! runs at most three times; [`MAX_ATTEMPTS`] bounds it anyway.

use std::collections::HashMap;

use apimachinery::lookup::AccessCheck;
use apimachinery::request::{RequestInfo, UserInfo};
use kube_cel::library::authz::{
    Authorizer, AuthzRequest, AuthzTarget, Decision, authorizer_value, request_resource_value,
};
use kube_cel::{Activation, EvalError, Evaluation, Program, Value as CelValue};

/// kube's `PerCallLimit`: the most one evaluation may cost.
pub const PER_CALL_LIMIT: u64 = 1_000_000;
/// kube's `RuntimeCELCostBudget`: the most a policy binding's validations may cost, and its
/// audit annotations apart.
pub const RUNTIME_COST_BUDGET: u64 = 10_000_000;
/// kube's `RuntimeCELCostBudgetMatchConditions`: the most a webhook's (or a binding's) match
/// conditions may cost together.
pub const MATCH_CONDITIONS_BUDGET: u64 = 2_500_000;
/// kube's message when a budget runs out.
pub const OUT_OF_BUDGET: &str =
    "validation failed due to running out of cost budget, no further validation rules will be run";

/// How many times an expression may be evaluated for its authorization checks.
const MAX_ATTEMPTS: usize = 8;

/// The user an expression's `authorizer` checks for, and the authorizers that decide.
pub struct Authz<'a> {
    /// The requesting user.
    pub user: &'a UserInfo,
    /// The server's authorizers.
    pub access: &'a dyn AccessCheck,
}

impl Authz<'_> {
    /// kube's `AttributesRecord` of a check, asked of the authorizers.
    async fn decide(&self, request: &AuthzRequest) -> Decision {
        let user = match &request.service_account {
            // kube's `serviceaccount.ServiceAccountInfo.UserInfo`.
            Some((ns, name)) => UserInfo {
                name: format!("system:serviceaccount:{ns}:{name}"),
                uid: String::new(),
                groups: vec![
                    "system:serviceaccounts".into(),
                    format!("system:serviceaccounts:{ns}"),
                    "system:authenticated".into(),
                ],
                extra: Default::default(),
            },
            None => self.user.clone(),
        };
        let mut info = RequestInfo { verb: request.verb.clone(), ..RequestInfo::default() };
        match &request.target {
            AuthzTarget::Path(path) => info.path = path.clone(),
            // kube also passes a check's field and label selectors (`fieldSelector()`,
            // `labelSelector()`); the authorizers here take no selectors, so they decide on
            // the resource alone.
            AuthzTarget::Resource { group, resource, subresource, namespace, name, .. } => {
                info.is_resource_request = true;
                info.api_group = group.clone();
                info.api_version = "*".into();
                info.resource = resource.clone();
                info.subresource = subresource.clone();
                info.namespace = namespace.clone();
                info.name = name.clone();
            }
        }
        match self.access.decide(&user, info).await {
            Ok(d) => Decision { allowed: d.allowed, reason: d.reason, error: (!d.error.is_empty()).then_some(d.error) },
            Err(e) => Decision { allowed: false, reason: String::new(), error: Some(e.message) },
        }
    }
}

/// Decisions fetched so far for one expression.
struct Decided<'a>(&'a HashMap<AuthzRequest, Decision>);

impl Authorizer for Decided<'_> {
    fn decide(&self, request: &AuthzRequest) -> Option<Decision> {
        self.0.get(request).cloned()
    }
}

/// Evaluates `program` over `vars`, at most [`PER_CALL_LIMIT`], answering its authorization
/// checks through `authz`.
pub async fn evaluate(program: &Program, vars: &[(&'static str, CelValue)], authz: Option<&Authz<'_>>) -> Evaluation {
    let mut decided: HashMap<AuthzRequest, Decision> = HashMap::new();
    let mut last = None;
    for _ in 0..MAX_ATTEMPTS {
        let cache = Decided(&decided);
        let mut activation = Activation::new().with_authorizer(&cache);
        for (name, value) in vars {
            activation = activation.bind(name, value.clone());
        }
        let evaluation = program.evaluate(&activation, Some(PER_CALL_LIMIT));
        let pending = match &evaluation.result {
            Err(EvalError::AuthorizationPending(request)) => (**request).clone(),
            _ => return evaluation,
        };
        let decision = match authz {
            Some(a) => a.decide(&pending).await,
            None => Decision::default(),
        };
        decided.insert(pending, decision);
        last = Some(evaluation);
    }
    last.unwrap_or(Evaluation { result: Err(EvalError::msg("authorization checks did not settle")), cost: 0 })
}

/// The JSON kube's activations bind, as CEL values.
pub fn value(v: &serde_json::Value) -> CelValue {
    kube_cel::value::from_json(v)
}

/// kube's `CreateAdmissionRequest`-based activation: `object`, `oldObject` and `request` as
/// the webhook review shows them, and the `authorizer` variables for the requesting user.
pub fn admission_vars(
    json: Vec<(&'static str, serde_json::Value)>,
    request: &apimachinery::messages::Admit,
) -> Vec<(&'static str, CelValue)> {
    let mut vars: Vec<(&'static str, CelValue)> = json.iter().map(|(k, v)| (*k, value(v))).collect();
    let t = &request.target;
    let subresource = t.subresource.map(|s| s.name().to_string()).unwrap_or_default();
    vars.push(("authorizer", authorizer_value()));
    vars.push((
        "authorizer.requestResource",
        request_resource_value(&t.group, &t.resource, &subresource, &t.namespace, &t.name),
    ));
    vars
}

/// The budget exhausted: kube stops evaluating the expressions that share it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OutOfBudget;

/// What one expression gave, or kube's wording of why it gave nothing
/// (`expression '<source>' resulted in error: <why>`, `compilation error: <why>`).
pub type Outcome = Result<CelValue, String>;

/// Evaluates one of a set of expressions that share `budget`, as kube's
/// `evaluationActivation.Evaluate` does: an expression that does not compile gives its
/// compile error and costs nothing; one that costs more than is left stops the set.
pub async fn run(
    program: Result<&Program, &str>,
    vars: &[(&'static str, CelValue)],
    authz: Option<&Authz<'_>>,
    budget: &mut u64,
) -> Result<Outcome, OutOfBudget> {
    let program = match program {
        Ok(p) => p,
        Err(e) => return Ok(Err(format!("compilation error: {e}"))),
    };
    let evaluation = evaluate(program, vars, authz).await;
    spend(budget, evaluation.cost)?;
    Ok(evaluation.result.map_err(|e| resulted(program.source(), &e.to_string())))
}

/// Takes `cost` from `budget`, or tells it is exhausted.
pub fn spend(budget: &mut u64, cost: u64) -> Result<(), OutOfBudget> {
    *budget = budget.checked_sub(cost).ok_or(OutOfBudget)?;
    Ok(())
}

/// kube's wording of an expression's evaluation error.
pub fn resulted(source: &str, why: &str) -> String {
    format!("expression '{source}' resulted in error: {why}")
}
