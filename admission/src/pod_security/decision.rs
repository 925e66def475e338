//! What kube's PodSecurity plugin answers for a write (kube's `admission/admission.go`), as
//! pure functions over the objects.
//!
//! kube's plugin validates (never mutates) creates and updates of pods, of the pod controllers
//! it knows (their pod template), and of namespaces (their labels). The plugin here:
//! 1. classifies the write with [`subject`]; `None` means PodSecurity has no opinion;
//! 2. for a pod or pod controller, asks [`before_namespace_lookup`], which settles writes the
//!    namespace is not needed for (ignored subresources, exempt namespaces and users), so those
//!    cost no lookup;
//! 3. looks up the namespace and calls [`pod_decision`] or [`pod_controller_decision`]; for a
//!    namespace calls [`namespace_decision`], and when that asks for it, lists the namespace's
//!    pods and calls [`existing_pods_warnings`];
//! 4. applies the [`Decision`]: adds the warnings (`Warning: 299` headers) and audit annotations
//!    whatever the outcome, and refuses with `denial` if set.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use apimachinery::error::ApiError;
use apimachinery::messages::Operation;
use apimachinery::validation::field::go_quote;
use serde_json::Value;

use super::checks::{Violation, evaluate};
use super::policy::{
    AUDIT_LEVEL_LABEL, AUDIT_VERSION_LABEL, ENFORCE_LEVEL_LABEL, ENFORCE_VERSION_LABEL, Level, LevelVersion,
    NamespacePolicy, Policy, Version, WARN_LEVEL_LABEL, WARN_VERSION_LABEL,
};
use super::{forbidden_reason, violates_message, would_violate_message};

/// At most this many existing pods are checked when a namespace's enforce level tightens
/// (kube's `defaultNamespaceMaxPodsToCheck`).
pub const MAX_PODS_TO_CHECK: usize = 3000;
/// How long checking existing pods may take, at most (kube's `defaultNamespacePodCheckTimeout`).
pub const NAMESPACE_POD_CHECK_TIMEOUT: Duration = Duration::from_secs(1);
/// The warning kube gives when it could not list the namespace's pods.
pub const LIST_PODS_FAILED_WARNING: &str = "failed to list pods while checking new PodSecurity enforce level";

/// Audit annotation keys as kube records them: the `pod-security.kubernetes.io/` prefix plus
/// kube's short key.
const EXEMPT_ANNOTATION: &str = "pod-security.kubernetes.io/exempt";
const ENFORCE_POLICY_ANNOTATION: &str = "pod-security.kubernetes.io/enforce-policy";
const AUDIT_VIOLATIONS_ANNOTATION: &str = "pod-security.kubernetes.io/audit-violations";
const ERROR_ANNOTATION: &str = "pod-security.kubernetes.io/error";

/// Requests kube's PodSecurity configuration exempts from evaluation; none by default.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Exemptions {
    /// Authenticated user names whose pod and pod-controller writes are not evaluated.
    pub usernames: Vec<String>,
    /// Namespaces whose pods and pod controllers are not evaluated.
    pub namespaces: Vec<String>,
    /// `spec.runtimeClassName`s whose pods are not evaluated.
    pub runtime_classes: Vec<String>,
}

/// kube's `PodSecurityConfiguration`: the policy of namespaces without labels, and exemptions.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Config {
    /// The level and version of each mode when a namespace sets no label for it
    /// (`privileged:latest` by default).
    pub defaults: Policy,
    /// Exempt users, namespaces and runtime classes.
    pub exemptions: Exemptions,
}

impl Config {
    /// A `PodSecurityConfiguration` (from the admission configuration file): unset levels
    /// are `privileged`, unset versions `latest`, as kube defaults them; every invalid field
    /// is reported.
    pub fn from_configuration(v: &Value) -> Result<Config, String> {
        const API_VERSIONS: [&str; 3] = [
            "pod-security.admission.config.k8s.io/v1",
            "pod-security.admission.config.k8s.io/v1beta1",
            "pod-security.admission.config.k8s.io/v1alpha1",
        ];
        crate::config::expect_kind(v, &["PodSecurityConfiguration"], &API_VERSIONS)?;
        let mut errors = Vec::new();
        let defaults = &v["defaults"];
        let mut mode = |name: &str| {
            let text =
                |key: &str, default: &str| defaults.get(key).and_then(Value::as_str).unwrap_or(default).to_string();
            let (level, version) = (text(name, "privileged"), text(&format!("{name}-version"), "latest"));
            let level = Level::parse(&level).map_err(|why| {
                errors.push(format!("defaults.{name}: Invalid value: {}: {why}", go_quote(&level)));
            });
            let version = Version::parse(&version).map_err(|why| {
                errors.push(format!("defaults.{name}-version: Invalid value: {}: {why}", go_quote(&version)));
            });
            LevelVersion::new(level.unwrap_or(Level::Privileged), version.unwrap_or(Version::Latest))
        };
        let policy = Policy { enforce: mode("enforce"), audit: mode("audit"), warn: mode("warn") };
        let list = |key: &str| -> Vec<String> {
            v.pointer(&format!("/exemptions/{key}"))
                .and_then(Value::as_array)
                .map(|l| l.iter().filter_map(Value::as_str).map(String::from).collect())
                .unwrap_or_default()
        };
        let exemptions = Exemptions {
            usernames: list("usernames"),
            namespaces: list("namespaces"),
            runtime_classes: list("runtimeClasses"),
        };
        if errors.is_empty() { Ok(Config { defaults: policy, exemptions }) } else { Err(errors.join(", ")) }
    }

    fn exempt_namespace(&self, namespace: &str) -> bool {
        !namespace.is_empty() && self.exemptions.namespaces.iter().any(|n| n == namespace)
    }

    fn exempt_user(&self, username: &str) -> bool {
        !username.is_empty() && self.exemptions.usernames.iter().any(|u| u == username)
    }

    fn exempt_runtime_class(&self, spec: &Value) -> bool {
        let class = spec.get("runtimeClassName").and_then(Value::as_str).unwrap_or("");
        !class.is_empty() && self.exemptions.runtime_classes.iter().any(|c| c == class)
    }
}

/// The parts of a write the decisions read.
#[derive(Clone, Copy, Debug)]
pub struct Request<'a> {
    /// Create and Update are evaluated; kube's plugin does not handle Delete.
    pub operation: Operation,
    /// The subresource's URL segment (`status`, `ephemeralcontainers`), if any.
    pub subresource: Option<&'a str>,
    /// The namespace written in.
    pub namespace: &'a str,
    /// The authenticated user's name.
    pub username: &'a str,
}

/// What PodSecurity has an opinion on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Subject {
    /// `namespaces`: labels validated, tightening checked against existing pods.
    Namespace,
    /// `pods`: all three modes.
    Pod,
    /// A resource embedding a pod template: warn and audit only.
    PodController,
}

/// What PodSecurity evaluates for writes to `group`/`resource`, or `None`.
pub fn subject(group: &str, resource: &str) -> Option<Subject> {
    match (group, resource) {
        ("", "namespaces") => Some(Subject::Namespace),
        ("", "pods") => Some(Subject::Pod),
        ("", "replicationcontrollers" | "podtemplates")
        | ("apps", "replicasets" | "deployments" | "statefulsets" | "daemonsets")
        | ("batch", "jobs" | "cronjobs") => Some(Subject::PodController),
        _ => None,
    }
}

/// A controller's pod template as `(metadata, spec)`, or `None` when the resource is not a pod
/// controller or (a ReplicationController's optional template) has none. A missing template of
/// the others evaluates as an empty one, as kube evaluates the zero value.
pub fn pod_template<'a>(resource: &str, object: &'a Value) -> Option<(&'a Value, &'a Value)> {
    static NULL: Value = Value::Null;
    let template = match resource {
        "podtemplates" => object.get("template"),
        "replicationcontrollers" => Some(object.pointer("/spec/template").filter(|t| !t.is_null())?),
        "cronjobs" => object.pointer("/spec/jobTemplate/spec/template"),
        "replicasets" | "deployments" | "statefulsets" | "daemonsets" | "jobs" => object.pointer("/spec/template"),
        _ => return None,
    }
    .unwrap_or(&NULL);
    Some((template.get("metadata").unwrap_or(&NULL), template.get("spec").unwrap_or(&NULL)))
}

/// What the plugin does with a write: warnings and audit annotations always, and the refusal if
/// any.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Decision {
    /// The Status to refuse with: 403 Forbidden for an enforce violation (`pods "p" is
    /// forbidden: violates PodSecurity ...`), 422 Invalid for bad namespace labels, 500 when
    /// the pod's namespace could not be read. `None`: allowed.
    pub denial: Option<ApiError>,
    /// Warnings for the response's `Warning` headers, in order.
    pub warnings: Vec<String>,
    /// Audit annotations for the request's audit event, keys with kube's
    /// `pod-security.kubernetes.io/` prefix (`enforce-policy`, `audit-violations`, `exempt`,
    /// `error`).
    pub audit_annotations: BTreeMap<String, String>,
}

impl Decision {
    fn allowed() -> Self {
        Decision::default()
    }

    fn annotated(key: &str, value: impl Into<String>) -> Self {
        let mut d = Decision::default();
        d.audit_annotations.insert(key.to_string(), value.into());
        d
    }

    fn exempt(reason: &str) -> Self {
        Decision::annotated(EXEMPT_ANNOTATION, reason)
    }
}

/// Pod subresources whose writes are not pods (or change nothing PodSecurity checks); any
/// other pod subresource (`ephemeralcontainers`) is evaluated as the pod it writes, so an
/// unknown one fails safe.
const IGNORED_POD_SUBRESOURCES: &[&str] =
    &["exec", "attach", "binding", "eviction", "log", "portforward", "proxy", "status"];

/// Settles a pod or pod-controller write that needs no namespace lookup: deletes, ignored
/// subresources, exempt namespaces (`exempt: namespace`) and users (`exempt: user`).
/// `None`: look the namespace up and call [`pod_decision`] or [`pod_controller_decision`].
/// Namespaces never need a lookup; for them this returns `None`.
pub fn before_namespace_lookup(config: &Config, subject: Subject, req: &Request) -> Option<Decision> {
    if subject == Subject::Namespace {
        return None;
    }
    if req.operation == Operation::Delete {
        return Some(Decision::allowed());
    }
    let ignored = match (subject, req.subresource) {
        (_, None) => false,
        (Subject::Pod, Some(sub)) => IGNORED_POD_SUBRESOURCES.contains(&sub),
        (_, Some(_)) => true,
    };
    if ignored {
        return Some(Decision::allowed());
    }
    if config.exempt_namespace(req.namespace) {
        return Some(Decision::exempt("namespace"));
    }
    if config.exempt_user(req.username) {
        return Some(Decision::exempt("user"));
    }
    None
}

/// The decision for a pod create or update. `namespace` is the pod's Namespace object, or the
/// lookup's error text (a missing namespace is such an error); `old_pod` is the stored pod for
/// an update.
pub fn pod_decision(
    config: &Config,
    req: &Request,
    namespace: Result<&Value, &str>,
    pod: &Value,
    old_pod: Option<&Value>,
) -> Decision {
    if let Some(d) = before_namespace_lookup(config, Subject::Pod, req) {
        return d;
    }
    let namespace = match namespace {
        Ok(ns) => ns,
        Err(e) => {
            let status = ApiError::internal(format!("failed to lookup namespace {}", go_quote(req.namespace)));
            let mut d = Decision::annotated(ERROR_ANNOTATION, format!("{}: {e}", status.message));
            d.denial = Some(status);
            return d;
        }
    };
    let ns_policy = NamespacePolicy::from_labels(namespace.pointer("/metadata/labels"), &config.defaults);
    if ns_policy.errors.is_empty() && ns_policy.policy.fully_privileged() {
        // kube records privileged:latest here whatever versions the labels name.
        return Decision::annotated(ENFORCE_POLICY_ANNOTATION, LevelVersion::privileged().to_string());
    }
    if req.operation == Operation::Update && old_pod.is_some_and(|old| !is_significant_pod_update(pod, old)) {
        return Decision::allowed();
    }
    static NULL: Value = Value::Null;
    let metadata = pod.get("metadata").unwrap_or(&NULL);
    let spec = pod.get("spec").unwrap_or(&NULL);
    let name = metadata.get("name").and_then(Value::as_str).unwrap_or("");
    evaluate_pod(config, &ns_policy, metadata, spec, Some(name))
}

/// The decision for a pod controller create or update (`resource` is the plural, e.g.
/// `deployments`): warnings and audit annotations for its pod template, never a refusal; a
/// failed namespace lookup is only recorded.
pub fn pod_controller_decision(
    config: &Config,
    req: &Request,
    namespace: Result<&Value, &str>,
    resource: &str,
    object: &Value,
) -> Decision {
    if let Some(d) = before_namespace_lookup(config, Subject::PodController, req) {
        return d;
    }
    let namespace = match namespace {
        Ok(ns) => ns,
        Err(e) => {
            return Decision::annotated(
                ERROR_ANNOTATION,
                format!("failed to lookup namespace {}: {e}", go_quote(req.namespace)),
            );
        }
    };
    let ns_policy = NamespacePolicy::from_labels(namespace.pointer("/metadata/labels"), &config.defaults);
    let p = &ns_policy.policy;
    if ns_policy.errors.is_empty() && p.warn.level == Level::Privileged && p.audit.level == Level::Privileged {
        return Decision::allowed();
    }
    let Some((metadata, spec)) = pod_template(resource, object) else { return Decision::allowed() };
    evaluate_pod(config, &ns_policy, metadata, spec, None)
}

/// kube's `EvaluatePod`: enforce (when `enforce_name` names the pod), audit, then warn unless
/// refused; a level/version evaluated once is reused by the later modes.
fn evaluate_pod(
    config: &Config,
    ns_policy: &NamespacePolicy,
    metadata: &Value,
    spec: &Value,
    enforce_name: Option<&str>,
) -> Decision {
    if config.exempt_runtime_class(spec) {
        return Decision::exempt("runtimeClass");
    }
    let policy = &ns_policy.policy;
    let mut d = Decision::allowed();
    if let Some(text) = ns_policy.error_text() {
        d.audit_annotations.insert(ERROR_ANNOTATION.to_string(), format!("Failed to parse policy: {text}"));
    }
    let mut cache: Vec<(LevelVersion, Vec<Violation>)> = Vec::new();
    let mut results = |lv: LevelVersion| -> Vec<Violation> {
        if let Some((_, v)) = cache.iter().find(|(c, _)| *c == lv) {
            return v.clone();
        }
        let v = evaluate(lv, metadata, spec);
        cache.push((lv, v.clone()));
        v
    };
    if let Some(name) = enforce_name {
        d.audit_annotations.insert(ENFORCE_POLICY_ANNOTATION.to_string(), policy.enforce.to_string());
        let violations = results(policy.enforce);
        if !violations.is_empty() {
            d.denial = Some(ApiError::forbidden("", "pods", name, &violates_message(policy.enforce, &violations)));
        }
    }
    let audit = results(policy.audit);
    if !audit.is_empty() {
        d.audit_annotations
            .insert(AUDIT_VIOLATIONS_ANNOTATION.to_string(), would_violate_message(policy.audit, &audit));
    }
    // No warnings on a request already refused.
    if d.denial.is_none() {
        let warn = results(policy.warn);
        if !warn.is_empty() {
            d.warnings.push(would_violate_message(policy.warn, &warn));
        }
    }
    d
}

/// kube's `isSignificantPodUpdate`: only a change of the containers' number or images (or the
/// per-container seccomp annotations), or an added ephemeral container, is evaluated; updates
/// of anything else (labels, status, tolerations...) pass, since API validation keeps the rest
/// of a pod's spec immutable.
fn is_significant_pod_update(pod: &Value, old: &Value) -> bool {
    let list = |p: &Value, key: &str| -> Vec<Value> {
        p.pointer(&format!("/spec/{key}")).and_then(Value::as_array).cloned().unwrap_or_default()
    };
    let annotation = |p: &Value, key: &str| -> String {
        p.pointer("/metadata/annotations").and_then(|a| a.get(key)).and_then(Value::as_str).unwrap_or("").to_string()
    };
    let field = |c: &Value, key: &str| c.get(key).and_then(Value::as_str).unwrap_or("").to_string();
    let significant = |c: &Value, old_c: &Value| {
        let key = format!("container.seccomp.security.alpha.kubernetes.io/{}", field(c, "name"));
        field(c, "image") != field(old_c, "image") || annotation(pod, &key) != annotation(old, &key)
    };
    for key in ["containers", "initContainers"] {
        let (new, prev) = (list(pod, key), list(old, key));
        if new.len() != prev.len() || new.iter().zip(&prev).any(|(c, o)| significant(c, o)) {
            return true;
        }
    }
    let old_ephemeral = list(old, "ephemeralContainers");
    list(pod, "ephemeralContainers").iter().any(|c| {
        match old_ephemeral.iter().find(|o| field(o, "name") == field(c, "name")) {
            None => true,
            Some(o) => significant(c, o),
        }
    })
}

/// What [`namespace_decision`] asks of the plugin.
#[derive(Clone, Debug, PartialEq)]
pub enum NamespaceDecision {
    /// Settled.
    Done(Decision),
    /// The enforce level got stricter: allow the write, with the warnings
    /// [`existing_pods_warnings`] gives for the namespace's current pods under `enforce`.
    CheckPods {
        /// The namespace whose pods to list.
        namespace: String,
        /// The new enforce level and version.
        enforce: LevelVersion,
    },
}

/// The decision for a namespace create or update: labels must parse (on update, only if they
/// changed to something broken anew), and tightening the enforce level is checked against the
/// pods already there. `old_namespace` is the stored namespace for an update.
pub fn namespace_decision(
    config: &Config,
    req: &Request,
    namespace: &Value,
    old_namespace: Option<&Value>,
) -> NamespaceDecision {
    let done = NamespaceDecision::Done;
    if req.subresource.is_some() {
        return done(Decision::allowed());
    }
    let name = namespace.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("");
    let labels = namespace.pointer("/metadata/labels");
    let new = NamespacePolicy::from_labels(labels, &config.defaults);
    let invalid = |p: &NamespacePolicy| Decision {
        denial: Some(ApiError::invalid("", "Namespace", name, p.errors.clone())),
        ..Decision::default()
    };
    match (req.operation, old_namespace) {
        // kube's admission attributes carry no namespace for a namespace create (the URL names
        // none), so its exempt-namespace warning never fires there.
        (Operation::Create, _) => done(if new.errors.is_empty() { Decision::allowed() } else { invalid(&new) }),
        (Operation::Update, Some(old)) => {
            let old = NamespacePolicy::from_labels(old.pointer("/metadata/labels"), &config.defaults);
            if !new.errors.is_empty() && (old.errors.is_empty() || new.errors != old.errors) {
                return done(invalid(&new));
            }
            let (n, o) = (new.policy.enforce, old.policy.enforce);
            let relaxed_or_same = n.version == o.version && n.level <= o.level;
            if n == o || n.level == Level::Privileged || relaxed_or_same {
                return done(Decision::allowed());
            }
            // An update's attributes carry the namespace's own name.
            if config.exempt_namespace(name) {
                let mut d = Decision::allowed();
                d.warnings.extend(exempt_namespace_warning(config, name, &new.policy, labels));
                return done(d);
            }
            NamespaceDecision::CheckPods { namespace: name.to_string(), enforce: n }
        }
        _ => done(Decision::allowed()),
    }
}

/// kube's warning for labels set on an exempt namespace, naming the non-privileged modes the
/// labels set; `None` when the policy is privileged or the same as the defaults.
fn exempt_namespace_warning(config: &Config, name: &str, policy: &Policy, labels: Option<&Value>) -> Option<String> {
    if policy.fully_privileged() || policy.equivalent(&config.defaults) {
        return None;
    }
    let has = |key: &str| labels.and_then(|l| l.get(key)).is_some();
    let modes = [
        ("enforce", policy.enforce, ENFORCE_LEVEL_LABEL, ENFORCE_VERSION_LABEL),
        ("audit", policy.audit, AUDIT_LEVEL_LABEL, AUDIT_VERSION_LABEL),
        ("warn", policy.warn, WARN_LEVEL_LABEL, WARN_VERSION_LABEL),
    ];
    let set: Vec<String> = modes
        .iter()
        .filter(|(_, lv, level, version)| lv.level != Level::Privileged && (has(level) || has(version)))
        .map(|(mode, lv, _, _)| format!("{mode}={lv}"))
        .collect();
    Some(format!(
        "namespace {} is exempt from Pod Security, and the policy ({}) will be ignored",
        go_quote(name),
        set.join(", ")
    ))
}

/// When checking existing pods must stop: [`NAMESPACE_POD_CHECK_TIMEOUT`] from `now`, or half
/// the time left before the request's deadline if that is sooner.
pub fn pod_check_deadline(now: Instant, request_deadline: Option<Instant>) -> Instant {
    let budget = match request_deadline {
        Some(d) => NAMESPACE_POD_CHECK_TIMEOUT.min(d.saturating_duration_since(now) / 2),
        None => NAMESPACE_POD_CHECK_TIMEOUT,
    };
    now + budget
}

/// kube's `EvaluatePodsInNamespace`, for [`NamespaceDecision::CheckPods`]: the warnings that
/// go with allowing the namespace update. `pods` is the namespace's pods, or `Err(())` when
/// listing them failed. Pods of exempt runtime classes are skipped; one pod per controller is
/// checked before the rest of its replicas; at most [`MAX_PODS_TO_CHECK`], and no more once
/// `deadline` has passed. Pods with the same violations share one line, named after the
/// lexically first of them: `web-1 (and 2 other pods): privileged, runAsNonRoot != true`.
pub fn existing_pods_warnings(
    config: &Config,
    namespace: &str,
    enforce: LevelVersion,
    pods: Result<&[Value], ()>,
    deadline: Option<Instant>,
) -> Decision {
    let Ok(pods) = pods else {
        return Decision { warnings: vec![LIST_PODS_FAILED_WARNING.to_string()], ..Decision::default() };
    };
    static NULL: Value = Value::Null;
    let mut prioritized = prioritize_pods(config, pods);
    let total = prioritized.len();
    prioritized.truncate(MAX_PODS_TO_CHECK);
    let mut checked = prioritized.len();
    // Distinct reason lists in order of first appearance, with (first name, count).
    let mut seen: Vec<(String, String, usize)> = Vec::new();
    for (i, pod) in prioritized.iter().enumerate() {
        let metadata = pod.get("metadata").unwrap_or(&NULL);
        let violations = evaluate(enforce, metadata, pod.get("spec").unwrap_or(&NULL));
        if !violations.is_empty() {
            let warning = forbidden_reason(&violations);
            let pod_name = metadata.get("name").and_then(Value::as_str).unwrap_or("");
            match seen.iter_mut().find(|(w, _, _)| *w == warning) {
                None => seen.push((warning, pod_name.to_string(), 1)),
                Some((_, first, count)) => {
                    if pod_name < first.as_str() {
                        *first = pod_name.to_string();
                    }
                    *count += 1;
                }
            }
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            checked = i + 1;
            break;
        }
    }
    let mut warnings = Vec::new();
    if checked < total {
        warnings.push(format!(
            "new PodSecurity enforce level only checked against the first {checked} of {total} existing pods"
        ));
    }
    if !seen.is_empty() {
        warnings.push(format!(
            "existing pods in namespace {} violate the new PodSecurity enforce level {}",
            go_quote(namespace),
            go_quote(&enforce.to_string())
        ));
    }
    let mut pod_warnings: Vec<String> = seen
        .into_iter()
        .map(|(warning, first, count)| match count {
            1 => format!("{first}: {warning}"),
            2 => format!("{first} (and 1 other pod): {warning}"),
            n => format!("{first} (and {} other pods): {warning}", n - 1),
        })
        .collect();
    pod_warnings.sort();
    warnings.extend(pod_warnings);
    Decision { warnings, ..Decision::default() }
}

/// kube's `prioritizePods`: drops pods of exempt runtime classes, and moves every replica after
/// the first of its controller to the end, so a namespace of large ReplicaSets still gets each
/// controller checked within the pod limit.
fn prioritize_pods<'a>(config: &Config, pods: &'a [Value]) -> Vec<&'a Value> {
    let mut first = Vec::new();
    let mut duplicates = Vec::new();
    let mut controllers: Vec<&str> = Vec::new();
    for pod in pods {
        if pod.get("spec").is_some_and(|s| config.exempt_runtime_class(s)) {
            continue;
        }
        let controller = pod
            .pointer("/metadata/ownerReferences")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .find(|r| r.get("controller").and_then(Value::as_bool) == Some(true))
            .map(|r| r.get("uid").and_then(Value::as_str).unwrap_or(""));
        match controller {
            None => first.push(pod),
            Some(uid) if controllers.contains(&uid) => duplicates.push(pod),
            Some(uid) => {
                controllers.push(uid);
                first.push(pod);
            }
        }
    }
    first.extend(duplicates);
    first
}
