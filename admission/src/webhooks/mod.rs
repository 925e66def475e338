//! kube's `MutatingAdmissionWebhook` and `ValidatingAdmissionWebhook` plugins.
//!
//! Configurations come from the cachers ([`config::HookSource`]) on every request, so a
//! change applies as soon as the cache has it. A webhook is called when a rule matches the
//! request, its namespaceSelector matches the namespace's labels (the object's own for a
//! Namespace), its objectSelector matches the object's or the old object's labels, and every
//! match condition holds. Mutating webhooks are called one after another, each seeing the
//! last one's patch; validating webhooks are called concurrently. Every call is bounded by its
//! `timeoutSeconds` and by what is left of the request's deadline.
//!
//! Match conditions are evaluated as kube's matcher evaluates them: all of them, within
//! [`MATCH_CONDITIONS_BUDGET`] together and each within kube's per-call limit, their
//! `authorizer` checks answered by the server's authorizers. A false condition skips the
//! webhook; errors refuse the request under `failurePolicy: Fail` (`<resource> "<name>" is
//! forbidden: expression '<expression>' resulted in error: <why>`) and skip it under `Ignore`.
//!
//! Errors name the webhook as kube's do: a denial is `admission webhook "x" denied the
//! request: <message>`; a failed call is `Internal error occurred: failed calling webhook
//! "x": failed to call webhook: Post "<url>?timeout=10s": <why>` under `failurePolicy: Fail`,
//! and an audit annotation under `Ignore`.

pub mod config;
pub mod review;

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use apimachinery::error::ApiError;
use apimachinery::lookup::{AccessCheck, ObjectLookup};
use apimachinery::messages::Admit;
use apimachinery::patch::{PatchType, apply_patch};
use async_trait::async_trait;
use kube_cel::Value as CelValue;
use serde_json::{Value, json};

use crate::cel::{self, MATCH_CONDITIONS_BUDGET, OUT_OF_BUDGET};
use crate::matching::Rule;
use crate::metrics::{
    ADMISSION_WEBHOOK_ADMISSION_DURATION_SECONDS, ADMISSION_WEBHOOK_REJECTION_COUNT, ADMISSION_WEBHOOK_REQUEST_TOTAL,
};
use crate::versions::{self, Seen};
use crate::{AdmissionPlugin, Review};
use apimachinery::catalogue::{Catalogue, ResourceDef};
use config::{Hook, HookKind, HookSource};
use review::{Answer, CallFailure};
use webhook_client::Endpoint;

/// What the mutating webhooks remember between the two runs of the mutating plugins.
#[derive(Debug, Default)]
pub struct Rounds {
    /// `IfNeeded` webhooks called since the object last changed.
    previously_invoked: HashSet<(String, String)>,
    /// `IfNeeded` webhooks to call again on the second run.
    to_reinvoke: HashSet<(String, String)>,
    /// The object as the last webhook left it, to see whether a built-in plugin changed it
    /// after.
    last_output: Option<Value>,
}

/// Why a webhook's applicability could not be decided.
enum Undecided {
    /// A selector's namespace could not be read: the webhook fails by its failure policy.
    Setup(String),
    /// A match condition failed under `failurePolicy: Fail`: the request is refused.
    Refused(ApiError),
}

/// One of the two webhook plugins.
pub struct WebhookPlugin {
    kind: HookKind,
    source: HookSource,
    objects: Arc<dyn ObjectLookup>,
    /// The served versions, for `matchPolicy: Equivalent` and to show objects as served.
    catalogue: Arc<Catalogue>,
    /// Answers match conditions' `authorizer` checks.
    access: Arc<dyn AccessCheck>,
}

impl WebhookPlugin {
    /// The plugin of `kind`, reading configurations, namespaces and endpoints via `objects`,
    /// match conditions' authorization checks answered by `access`.
    pub fn new(
        kind: HookKind,
        objects: Arc<dyn ObjectLookup>,
        catalogue: Arc<Catalogue>,
        access: Arc<dyn AccessCheck>,
    ) -> Self {
        WebhookPlugin { kind, source: HookSource::new(kind, objects.clone()), objects, catalogue, access }
    }

    /// The request as `hook` sees it, if the hook applies (a rule matches the request or,
    /// under `matchPolicy: Equivalent`, an equivalent version of it; the selectors; the match
    /// conditions, over the version matched).
    async fn applies<'a>(
        &self,
        hook: &Hook,
        request: &'a Admit,
        object: &'a Value,
        candidates: &'a [Arc<ResourceDef>],
    ) -> Result<Option<Seen<'a>>, Undecided> {
        let Some(matched) = versions::matched(candidates, request, hook.exact, &hook.rules, Rule::matches) else {
            return Ok(None);
        };
        if !hook.selectors.select(self.objects.as_ref(), request, object).await.map_err(Undecided::Setup)? {
            return Ok(None);
        }
        let seen = Seen::new(request, object, matched.map(|d| d.as_ref()), candidates);
        if hook.match_conditions.is_empty() || self.conditions_hold(hook, request, &seen).await? {
            return Ok(Some(seen));
        }
        Ok(None)
    }

    /// kube's match condition matcher: every condition is evaluated (at most
    /// [`MATCH_CONDITIONS_BUDGET`] together), a false one skips the webhook, and errors
    /// otherwise refuse the request under `failurePolicy: Fail` (`<resource> "<name>" is
    /// forbidden: <errors>`) and skip the webhook under `Ignore`.
    async fn conditions_hold(&self, hook: &Hook, request: &Admit, seen: &Seen<'_>) -> Result<bool, Undecided> {
        let vars = cel::admission_vars(review::cel_variables(request, seen), request);
        let authz = cel::Authz { user: &request.user, access: self.access.as_ref() };
        let mut budget = MATCH_CONDITIONS_BUDGET;
        let mut outcomes = Vec::with_capacity(hook.match_conditions.len());
        for condition in &hook.match_conditions {
            let program = condition.program.as_deref().map_err(String::as_str);
            match cel::run(program, &vars, Some(&authz), &mut budget).await {
                Ok(outcome) => outcomes.push(outcome),
                Err(cel::OutOfBudget) => return self.condition_errors(hook, request, vec![OUT_OF_BUDGET.to_string()]),
            }
        }
        let mut errors: Vec<String> = Vec::new();
        for outcome in outcomes {
            match outcome {
                Ok(CelValue::Bool(false)) => return Ok(false),
                Ok(_) => {}
                Err(e) => {
                    if !errors.contains(&e) {
                        errors.push(e);
                    }
                }
            }
        }
        if errors.is_empty() { Ok(true) } else { self.condition_errors(hook, request, errors) }
    }

    /// Match condition errors, as kube's failure policy treats them.
    fn condition_errors(&self, hook: &Hook, request: &Admit, errors: Vec<String>) -> Result<bool, Undecided> {
        if !hook.fail_closed {
            return Ok(false);
        }
        // Go's error aggregate.
        let why = if errors.len() == 1 { errors[0].clone() } else { format!("[{}]", errors.join(", ")) };
        let t = &request.target;
        Err(Undecided::Refused(ApiError::forbidden(&t.group, &t.resource, &t.name, &why)))
    }

    /// Calls `hook` with the request as it sees it, bounded by its timeout and what is left of
    /// the deadline.
    async fn call(
        &self,
        hook: &Hook,
        request: &Admit,
        seen: &Seen<'_>,
        review: &Review,
    ) -> Result<Answer, CallFailure> {
        let client = hook.client.as_ref().map_err(|e| CallFailure::Setup(e.clone()))?;
        // Errors quote the URL kube posts to: for a Service its DNS name and port, whichever
        // endpoint is dialled.
        let (base, shown) = match &hook.endpoint {
            Endpoint::Url(url) => (url.clone(), url.clone()),
            Endpoint::Service { namespace, name, path, port } => {
                let dialled = apimachinery::lookup::service_url(self.objects.as_ref(), namespace, name, path, *port)
                    .await
                    .map_err(CallFailure::Setup)?;
                (
                    dialled,
                    format!("https://{name}.{namespace}.svc:{port}{}", apimachinery::lookup::slash_prefixed(path)),
                )
            }
        };
        let timeout = review.deadline.remaining().map_or(hook.timeout, |left| left.min(hook.timeout));
        let url = review::with_timeout(&base, hook.timeout);
        let body = review::request_body(request, seen);
        let uid = body["request"]["uid"].as_str().unwrap_or("").to_string();
        let started = Instant::now();
        let result = client.post_json_to(&url, &body, timeout).await;
        let elapsed = started.elapsed();
        let answer = match result {
            Ok((200..=299, reply)) => review::parse_response(&reply, &uid),
            Ok((code, reply)) => Err(CallFailure::Status(code, reply)),
            Err(e) => Err(CallFailure::Transport(e)),
        };
        self.record(hook, request, &answer, elapsed);
        answer.map_err(|failure| failure.at(review::with_timeout(&shown, hook.timeout)))
    }

    fn record(&self, hook: &Hook, request: &Admit, answer: &Result<Answer, CallFailure>, elapsed: Duration) {
        let op = crate::operation_label(request.operation);
        let kind = self.kind.metric_type();
        let name = hook.name.clone();
        let (rejected, code, error_type) = match answer {
            Ok(a) if a.allowed => (false, 200, None),
            Ok(a) => (true, 200, Some(("no_error", a.status_code()))),
            Err(CallFailure::Status(code, _)) => (true, *code, Some(("calling_webhook_error", 0))),
            Err(_) => (true, 0, Some(("calling_webhook_error", 0))),
        };
        metrics::histogram!(ADMISSION_WEBHOOK_ADMISSION_DURATION_SECONDS,
            "name" => name.clone(), "operation" => op, "rejected" => rejected.to_string(), "type" => kind)
        .record(elapsed.as_secs_f64());
        metrics::counter!(ADMISSION_WEBHOOK_REQUEST_TOTAL,
            "name" => name.clone(), "code" => code.to_string(), "operation" => op,
            "rejected" => rejected.to_string(), "type" => kind)
        .increment(1);
        if let Some((error_type, rejection_code)) = error_type {
            metrics::counter!(ADMISSION_WEBHOOK_REJECTION_COUNT,
                "name" => name, "error_type" => error_type, "operation" => op,
                "rejection_code" => rejection_code.to_string(), "type" => kind)
            .increment(1);
        }
    }

    /// What a failed call means: the request fails under `Fail`, goes on (noted in the audit
    /// event) under `Ignore`.
    fn failed(
        &self,
        hook: &Hook,
        failure: CallFailure,
        round: usize,
        index: usize,
        review: &mut Review,
    ) -> Result<(), ApiError> {
        if hook.fail_closed {
            return Err(ApiError::internal(format!("failed calling webhook \"{}\": {failure}", hook.name)));
        }
        tracing::warn!(webhook = %hook.name, error = %failure, "webhook failed open (failurePolicy: Ignore)");
        let key = match self.kind {
            HookKind::Mutating => format!("failed-open.mutation.webhook.admission.k8s.io/round_{round}_index_{index}"),
            HookKind::Validating => {
                format!("failed-open.validating.webhook.admission.k8s.io/round_{round}_index_{index}")
            }
        };
        review.audit_annotations.push((key, hook.name.clone()));
        Ok(())
    }

    fn dry_run_refused(hook: &Hook, request: &Admit) -> Option<ApiError> {
        (request.dry_run && !hook.dry_run_safe)
            .then(|| ApiError::bad_request(format!("admission webhook \"{}\" does not support dry run", hook.name)))
    }

    async fn mutate_all(&self, request: &Admit, object: &mut Value, review: &mut Review) -> Result<(), ApiError> {
        let hooks = self.source.hooks().await;
        if hooks.is_empty() {
            return Ok(());
        }
        let candidates = versions::candidates(&self.catalogue, request);
        let round = usize::from(review.reinvoking);
        let mut rounds = std::mem::take(&mut review.rounds);
        if review.reinvoking && rounds.last_output.as_ref() != Some(object) {
            // A built-in plugin changed the object after the webhooks ran.
            let invoked = std::mem::take(&mut rounds.previously_invoked);
            rounds.to_reinvoke.extend(invoked);
        }
        let result = async {
            for (index, hook) in hooks.iter().enumerate() {
                let key = (hook.configuration.clone(), hook.name.clone());
                if review.reinvoking && !rounds.to_reinvoke.contains(&key) {
                    continue;
                }
                let seen = match self.applies(hook, request, object, &candidates).await {
                    Ok(Some(seen)) => seen,
                    Ok(None) => continue,
                    Err(Undecided::Refused(e)) => return Err(e),
                    Err(Undecided::Setup(e)) => {
                        self.failed(hook, CallFailure::Setup(e), round, index, review)?;
                        continue;
                    }
                };
                if let Some(e) = Self::dry_run_refused(hook, request) {
                    return Err(e);
                }
                let answer = match self.call(hook, request, &seen, review).await {
                    Ok(a) => a,
                    Err(failure) => {
                        self.failed(hook, failure, round, index, review)?;
                        continue;
                    }
                };
                answer.note(hook, review);
                if !answer.allowed {
                    return Err(answer.denial(&hook.name));
                }
                let patched = match &answer.patch {
                    Some(patch) => Some(patched(hook, request, &seen, patch)?),
                    None => None,
                };
                drop(seen);
                let mut changed = false;
                if let Some(patched) = patched
                    && patched != *object
                {
                    *object = patched;
                    changed = true;
                }
                let annotation = json!({"configuration": hook.configuration, "webhook": hook.name, "mutated": changed});
                review.audit_annotations.push((
                    format!("mutation.webhook.admission.k8s.io/round_{round}_index_{index}"),
                    annotation.to_string(),
                ));
                if changed {
                    let invoked = std::mem::take(&mut rounds.previously_invoked);
                    rounds.to_reinvoke.extend(invoked);
                    if !review.reinvoking {
                        review.reinvoke |= !rounds.to_reinvoke.is_empty();
                    }
                }
                if hook.reinvoke_if_needed {
                    rounds.previously_invoked.insert(key);
                }
            }
            Ok(())
        }
        .await;
        rounds.last_output = Some(object.clone());
        review.rounds = rounds;
        result
    }

    async fn validate_all(&self, request: &Admit, object: &Value, review: &mut Review) -> Result<(), ApiError> {
        let hooks = self.source.hooks().await;
        if hooks.is_empty() {
            return Ok(());
        }
        let candidates = versions::candidates(&self.catalogue, request);
        let mut called = Vec::new();
        for (index, hook) in hooks.iter().enumerate() {
            match self.applies(hook, request, object, &candidates).await {
                Ok(Some(seen)) => {
                    if let Some(e) = Self::dry_run_refused(hook, request) {
                        return Err(e);
                    }
                    called.push((index, hook, seen));
                }
                Ok(None) => {}
                Err(Undecided::Refused(e)) => return Err(e),
                Err(Undecided::Setup(e)) => self.failed(hook, CallFailure::Setup(e), 0, index, review)?,
            }
        }
        if called.is_empty() {
            return Ok(());
        }
        let shared: &Review = review;
        let answers =
            futures_util::future::join_all(called.iter().map(|(_, hook, seen)| self.call(hook, request, seen, shared)))
                .await;
        // kube returns one of the refusals; this returns the first in calling order.
        let mut refusal = None;
        for ((index, hook, _), answer) in called.into_iter().zip(answers) {
            match answer {
                Ok(answer) => {
                    answer.note(hook, review);
                    if !answer.allowed && refusal.is_none() {
                        refusal = Some(answer.denial(&hook.name));
                    }
                }
                Err(failure) => {
                    if let Err(e) = self.failed(hook, failure, 0, index, review) {
                        refusal.get_or_insert(e);
                    }
                }
            }
        }
        refusal.map_or(Ok(()), Err)
    }
}

/// A webhook's JSON patch applied to the object it was sent, back in the stored form.
fn patched(hook: &Hook, request: &Admit, seen: &Seen<'_>, patch: &[u8]) -> Result<Value, ApiError> {
    let t = &request.target;
    let (group, version) = seen.def.map_or((&t.group, &t.version), |d| (&d.group, &d.version));
    let kind = seen.object["kind"].as_str().unwrap_or("");
    let failed = |e: ApiError| ApiError::internal(format!("failed calling webhook \"{}\": {}", hook.name, e.message));
    let patched = apply_patch(PatchType::Json, &seen.object, patch, (group, version, kind)).map_err(failed)?;
    seen.to_storage(patched).map_err(failed)
}

/// A Service reference's path as a URL path.

#[async_trait(?Send)]
impl AdmissionPlugin for WebhookPlugin {
    fn name(&self) -> &'static str {
        match self.kind {
            HookKind::Mutating => "MutatingAdmissionWebhook",
            HookKind::Validating => "ValidatingAdmissionWebhook",
        }
    }

    fn mutates(&self) -> bool {
        self.kind == HookKind::Mutating
    }

    fn validates(&self) -> bool {
        self.kind == HookKind::Validating
    }

    async fn mutate(&self, request: &Admit, object: &mut Value, review: &mut Review) -> Result<(), ApiError> {
        self.mutate_all(request, object, review).await
    }

    async fn validate(&self, request: &Admit, object: &Value, review: &mut Review) -> Result<(), ApiError> {
        self.validate_all(request, object, review).await
    }
}

#[cfg(test)]
mod tests;
