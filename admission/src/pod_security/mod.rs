//! The pure core of kube's `PodSecurity` admission plugin (pod-security-admission as built into
//! kube-apiserver v1.30): the Pod Security Standards checks, the namespace labels that choose a
//! level per mode, and the decisions and messages kube's plugin gives for pods, pod controllers
//! and namespaces. No I/O: the plugin looks up the namespace (and, when a namespace's enforce
//! level tightens, lists its pods) and hands the objects in.
//!
//! Modes: **enforce** refuses a pod that violates its level (403, `violates PodSecurity
//! "restricted:latest": ...`); **warn** returns the same findings as warnings (`would violate
//! PodSecurity ...`); **audit** records them as an audit annotation. Pod controllers (Deployments,
//! Jobs, ...) get warn and audit on their pod template but are never refused: the pods they
//! create are, and refusing the template would only hide that from the controller's status.
//!
//! # Layout
//! - [`policy`]: [`Level`], [`Version`], [`LevelVersion`], [`Policy`] and
//!   [`NamespacePolicy::from_labels`], with kube's defaults and label errors.
//! - [`checks`]: every check of v1.30, its revisions by version, and [`evaluate`].
//! - [`decision`]: what the plugin answers: [`pod_decision`], [`pod_controller_decision`],
//!   [`namespace_decision`] and [`existing_pods_warnings`], configured by [`Config`].
//! - [`plugin`]: the admission plugin over them.
//! - this module: the message wording shared by all of them.

pub mod checks;
pub mod decision;
pub mod plugin;
pub mod policy;

use apimachinery::validation::field::go_quote;

pub use checks::{MAX_CHECK_VERSION, Violation, evaluate};
pub use decision::{
    Config, Decision, Exemptions, NamespaceDecision, Request, Subject, before_namespace_lookup, existing_pods_warnings,
    namespace_decision, pod_check_deadline, pod_controller_decision, pod_decision, pod_template, subject,
};
pub use policy::{Level, LevelVersion, NamespacePolicy, Policy, Version};

/// kube's `AggregateCheckResult.ForbiddenReason`: the reasons, comma-joined
/// (`privileged, allowPrivilegeEscalation != false`). The namespace-wide warning uses it.
pub fn forbidden_reason(violations: &[Violation]) -> String {
    violations.iter().map(|v| v.reason.as_str()).collect::<Vec<_>>().join(", ")
}

/// kube's `AggregateCheckResult.ForbiddenDetail`: each reason with its detail in parentheses
/// when it has one, comma-joined.
pub fn forbidden_detail(violations: &[Violation]) -> String {
    let parts: Vec<String> = violations
        .iter()
        .map(|v| if v.detail.is_empty() { v.reason.clone() } else { format!("{} ({})", v.reason, v.detail) })
        .collect();
    parts.join(", ")
}

/// The enforce refusal, after kube's `pods "name" is forbidden: `:
/// `violates PodSecurity "restricted:latest": privileged (...), ...`.
pub fn violates_message(lv: LevelVersion, violations: &[Violation]) -> String {
    format!("violates PodSecurity {}: {}", go_quote(&lv.to_string()), forbidden_detail(violations))
}

/// The warn-mode warning and the audit-mode annotation value:
/// `would violate PodSecurity "restricted:latest": ...`.
pub fn would_violate_message(lv: LevelVersion, violations: &[Violation]) -> String {
    format!("would violate PodSecurity {}: {}", go_quote(&lv.to_string()), forbidden_detail(violations))
}

#[cfg(test)]
mod tests;
