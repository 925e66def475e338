//! Webhook configurations as the dispatcher uses them: parsed once per change of the stored
//! objects (their names and resourceVersions), sorted as kube calls them (by configuration
//! name, then in the configuration's order), with their HTTPS clients built.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use apimachinery::lookup::ObjectLookup;
use apimachinery::object::ObjectExt;
use apimachinery::validation::field::Path;
use kube_cel::Program;
use serde_json::Value;
use validation::cel::{Expression, ExpressionKind, compile};
use webhook_client::{Endpoint, WebhookClient};

use crate::matching::{Rule, Selectors};

/// The group both configuration kinds belong to.
pub const GROUP: &str = "admissionregistration.k8s.io";

/// Mutating or validating.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HookKind {
    /// MutatingWebhookConfiguration: called in order, may patch.
    Mutating,
    /// ValidatingWebhookConfiguration: called concurrently.
    Validating,
}

impl HookKind {
    /// The plural resource the configurations are stored as.
    pub fn resource(self) -> &'static str {
        match self {
            HookKind::Mutating => "mutatingwebhookconfigurations",
            HookKind::Validating => "validatingwebhookconfigurations",
        }
    }

    /// kube's `type` label of the webhook metrics.
    pub fn metric_type(self) -> &'static str {
        match self {
            HookKind::Mutating => "admit",
            HookKind::Validating => "validating",
        }
    }
}

/// A CEL match condition, compiled when the configuration is read, in kube's environment for
/// stored expressions with `object`, `oldObject`, `request` and `authorizer`.
#[derive(Clone)]
pub struct MatchCondition {
    /// Its name, for errors.
    pub name: String,
    /// The compiled program, or why it did not compile.
    pub program: Result<Arc<Program>, String>,
}

impl MatchCondition {
    /// Compiles `expression` as kube's webhook accessor does.
    pub fn compile(name: &str, expression: &str) -> MatchCondition {
        let path = Path::new("");
        let expr = Expression {
            kind: ExpressionKind::MatchCondition,
            text: expression,
            path: &path,
            has_params: false,
            has_authorizer: true,
            variables: &[],
            stored: true,
        };
        MatchCondition { name: name.to_string(), program: compile(&expr).map(Arc::new) }
    }
}

/// One webhook of a configuration, ready to match and call.
#[derive(Clone)]
pub struct Hook {
    /// The configuration's name.
    pub configuration: String,
    /// The webhook's name (errors and metrics name it).
    pub name: String,
    /// Its rules.
    pub rules: Vec<Rule>,
    /// `namespaceSelector` and `objectSelector`.
    pub selectors: Selectors,
    /// `matchConditions`, all of which must hold.
    pub match_conditions: Vec<MatchCondition>,
    /// `failurePolicy: Fail` (the default), else `Ignore`.
    pub fail_closed: bool,
    /// `matchPolicy: Exact`; else `Equivalent` (the default).
    pub exact: bool,
    /// `timeoutSeconds` (default 10).
    pub timeout: Duration,
    /// `sideEffects` is `None` or `NoneOnDryRun`, so a dry-run request may call it.
    pub dry_run_safe: bool,
    /// `reinvocationPolicy: IfNeeded` (mutating only).
    pub reinvoke_if_needed: bool,
    /// Where it is reached.
    pub endpoint: Endpoint,
    /// The HTTPS client, trusting `caBundle`.
    pub client: Result<WebhookClient, String>,
}

/// Parses one webhook of configuration `configuration`.
pub(crate) fn parse_hook(configuration: &str, kind: HookKind, w: &Value) -> Hook {
    let rules =
        w.get("rules").and_then(Value::as_array).map(|r| r.iter().map(Rule::parse).collect()).unwrap_or_default();
    let (endpoint, client) = webhook_client::from_client_config(w.get("clientConfig").unwrap_or(&Value::Null));
    let side_effects = w.get("sideEffects").and_then(Value::as_str).unwrap_or("");
    let match_conditions = w
        .get("matchConditions")
        .and_then(Value::as_array)
        .map(|conditions| {
            conditions
                .iter()
                .map(|c| {
                    let s = |k: &str| c.get(k).and_then(Value::as_str).unwrap_or("");
                    MatchCondition::compile(s("name"), s("expression"))
                })
                .collect()
        })
        .unwrap_or_default();
    Hook {
        configuration: configuration.to_string(),
        name: w.get("name").and_then(Value::as_str).unwrap_or("").to_string(),
        rules,
        selectors: Selectors::parse(w),
        match_conditions,
        fail_closed: w.get("failurePolicy").and_then(Value::as_str) != Some("Ignore"),
        exact: w.get("matchPolicy").and_then(Value::as_str) == Some("Exact"),
        timeout: Duration::from_secs(w.get("timeoutSeconds").and_then(Value::as_u64).unwrap_or(10).clamp(1, 30)),
        dry_run_safe: matches!(side_effects, "None" | "NoneOnDryRun"),
        reinvoke_if_needed: kind == HookKind::Mutating
            && w.get("reinvocationPolicy").and_then(Value::as_str) == Some("IfNeeded"),
        endpoint,
        client,
    }
}

/// The hooks of every configuration of one kind, kept until the configurations change.
pub struct HookSource {
    kind: HookKind,
    objects: Arc<dyn ObjectLookup>,
    /// The last build. A mutex because the stage's futures share it; it is held only to
    /// compare and swap.
    built: Mutex<Built>,
}

/// Names and resourceVersions of the configurations hooks were built from.
type Fingerprint = Vec<(String, String)>;

/// The hooks built last, and what they were built from: a request neither lists nor
/// rebuilds while the cache's change count stands, and rebuilds only when a list shows the
/// configurations themselves changed.
#[derive(Default)]
struct Built {
    changes: Option<u64>,
    fingerprint: Fingerprint,
    hooks: Arc<Vec<Hook>>,
}

impl HookSource {
    /// Hooks of `kind`, from the configurations `objects` lists.
    pub fn new(kind: HookKind, objects: Arc<dyn ObjectLookup>) -> Self {
        HookSource { kind, objects, built: Mutex::new(Built::default()) }
    }

    /// The current hooks, in kube's calling order.
    pub async fn hooks(&self) -> Arc<Vec<Hook>> {
        // Read before the list, so a change during it shows as a change next time.
        let changes = self.objects.changes(GROUP, self.kind.resource());
        {
            let built = self.built.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            if changes.is_some() && built.changes == changes {
                return built.hooks.clone();
            }
        }
        // Not served (or not readable): no webhooks to call.
        let Ok(mut configs) = self.objects.list(GROUP, self.kind.resource(), "", "").await else {
            return Arc::new(Vec::new());
        };
        configs.sort_by(|a, b| a.name().cmp(b.name()));
        let fingerprint: Fingerprint =
            configs.iter().map(|c| (c.name().to_string(), c.resource_version().to_string())).collect();
        {
            let mut built = self.built.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            if built.fingerprint == fingerprint {
                built.changes = changes;
                return built.hooks.clone();
            }
        }
        let hooks: Vec<Hook> = configs
            .iter()
            .flat_map(|c| {
                let name = c.name().to_string();
                c.get("webhooks")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default()
                    .into_iter()
                    .map(move |w| parse_hook(&name, self.kind, &w))
            })
            .collect();
        let hooks = Arc::new(hooks);
        *self.built.lock().unwrap_or_else(std::sync::PoisonError::into_inner) =
            Built { changes, fingerprint, hooks: hooks.clone() };
        hooks
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn hook(rules: Value) -> Hook {
        parse_hook("cfg", HookKind::Validating, &json!({"name": "a.b.c", "rules": rules, "sideEffects": "None"}))
    }

    #[tokio::test]
    async fn configurations_are_listed_again_only_after_a_change() {
        let objects = Arc::new(crate::testing::Objects::default());
        let config = |names: &[&str]| {
            let webhooks: Vec<Value> = names
                .iter()
                .map(|n| json!({"name": n, "sideEffects": "None", "clientConfig": {"url": "https://hook.example/"}}))
                .collect();
            json!({"metadata": {"name": "cfg", "resourceVersion": names.len().to_string()}, "webhooks": webhooks})
        };
        objects.put(GROUP, HookKind::Validating.resource(), "", config(&["a.example.com"]));
        let source = HookSource::new(HookKind::Validating, objects.clone());
        let names = |hooks: &[Hook]| hooks.iter().map(|h| h.name.clone()).collect::<Vec<_>>();
        assert_eq!(names(&source.hooks().await), ["a.example.com"]);
        let first = source.hooks().await;
        assert_eq!(objects.lists(), 1, "the second request reused the first build without listing");
        objects.put(GROUP, HookKind::Validating.resource(), "", config(&["a.example.com", "b.example.com"]));
        let second = source.hooks().await;
        assert_eq!(names(&second), ["a.example.com", "b.example.com"]);
        assert!(!Arc::ptr_eq(&first, &second));
        assert_eq!(objects.lists(), 2);
    }

    #[test]
    fn defaults_are_kubes() {
        let h = hook(json!([]));
        assert!(h.fail_closed && !h.exact && !h.reinvoke_if_needed && h.dry_run_safe);
        assert_eq!(h.timeout, Duration::from_secs(10));
        assert!(h.selectors.namespace.is_empty() && h.selectors.object.is_empty());
    }
}
