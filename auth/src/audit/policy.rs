//! The audit policy (`audit.k8s.io/v1` `Policy`, `--audit-policy-file`): which requests are
//! recorded, at which [`Level`], and which [`Stage`]s are left out.
//!
//! Rules are tried in order and the first that matches decides, as kube's policy checker does;
//! a request no rule matches is not audited ([`Level::None`]). A rule matches when every field
//! it sets matches (users, groups, verbs, then resources and namespaces, or non-resource URLs).
//! The policy-wide `omitStages` are merged into every rule's once, at load time, so evaluating a
//! request allocates only the stages it returns.

use std::fmt;
use std::path::Path;

use apimachinery::validation::field::{self, Bad, Path as FieldPath};
use apimachinery::validation::names::name_is_dns_subdomain;
use serde::{Deserialize, Deserializer, Serialize};

use crate::Attributes;

/// How much of a request is recorded. Ordered: each level records what the previous does, and
/// more.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Level {
    /// Not recorded.
    #[default]
    None,
    /// Who asked for what, when, and the response status; no bodies.
    Metadata,
    /// Metadata and the request body.
    Request,
    /// Metadata and both bodies.
    RequestResponse,
}

impl Level {
    const ALL: [&'static str; 4] = ["None", "Metadata", "Request", "RequestResponse"];

    /// The level as kube spells it.
    pub fn as_str(self) -> &'static str {
        Level::ALL[self as usize]
    }

    fn parse(s: &str) -> Option<Level> {
        match s {
            "None" => Some(Level::None),
            "Metadata" => Some(Level::Metadata),
            "Request" => Some(Level::Request),
            "RequestResponse" => Some(Level::RequestResponse),
            _ => None,
        }
    }
}

/// A point in a request's handling at which an event is generated.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Stage {
    /// As soon as the request is authenticated, before it is handled.
    RequestReceived,
    /// Once the response headers are sent; only for long-running requests (watches).
    ResponseStarted,
    /// Once the response body is complete.
    ResponseComplete,
    /// The handler panicked.
    Panic,
}

impl Stage {
    const ALL: [&'static str; 4] = ["RequestReceived", "ResponseStarted", "ResponseComplete", "Panic"];

    /// The stage as kube spells it.
    pub fn as_str(self) -> &'static str {
        Stage::ALL[self as usize]
    }

    fn parse(s: &str) -> Option<Stage> {
        match s {
            "RequestReceived" => Some(Stage::RequestReceived),
            "ResponseStarted" => Some(Stage::ResponseStarted),
            "ResponseComplete" => Some(Stage::ResponseComplete),
            "Panic" => Some(Stage::Panic),
            _ => None,
        }
    }
}

/// What the policy decided for one request (kube's `RequestAuditConfig`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RequestAuditConfig {
    /// The level to record it at; [`Level::None`] means not at all.
    pub level: Level,
    /// Stages for which no event is emitted (the rule's and the policy's), sorted.
    pub omit_stages: Vec<Stage>,
    /// Whether `metadata.managedFields` is dropped from recorded bodies.
    pub omit_managed_fields: bool,
}

impl RequestAuditConfig {
    /// Whether an event at `stage` is emitted at all.
    pub fn records(&self, stage: Stage) -> bool {
        self.level != Level::None && !self.omit_stages.contains(&stage)
    }
}

/// Resources of one API group a rule names.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GroupResources {
    /// The API group, `""` for core.
    #[serde(default, deserialize_with = "null_as_default")]
    pub group: String,
    /// `pods`, `pods/log`, `pods/*`, `*/scale` or `*`; empty means every resource of the group.
    #[serde(default, deserialize_with = "null_as_default")]
    pub resources: Vec<String>,
    /// Object names; empty means every object.
    #[serde(default, deserialize_with = "null_as_default")]
    pub resource_names: Vec<String>,
}

/// One rule of a policy, validated; its `omit_stages` already include the policy's.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PolicyRule {
    /// The level of requests it matches.
    pub level: Level,
    /// User names; empty means every user.
    pub users: Vec<String>,
    /// Groups, any of which matches; empty means every group.
    pub user_groups: Vec<String>,
    /// Verbs; empty means every verb.
    pub verbs: Vec<String>,
    /// Resources; empty means every resource (and, with no namespaces either, every request).
    pub resources: Vec<GroupResources>,
    /// Namespaces; `""` is cluster-scoped requests; empty means every namespace.
    pub namespaces: Vec<String>,
    /// Non-resource paths, exact or with a trailing `*`; `*` alone matches every path.
    pub non_resource_urls: Vec<String>,
    /// Stages not emitted: the rule's and the policy's.
    pub omit_stages: Vec<Stage>,
    /// Overrides the policy's `omitManagedFields` when set.
    pub omit_managed_fields: Option<bool>,
}

/// A loaded audit policy. The default policy has no rules: nothing is audited.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AuditPolicy {
    rules: Vec<PolicyRule>,
    omit_stages: Vec<Stage>,
    omit_managed_fields: bool,
}

/// Why a policy file was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PolicyError {
    /// The file could not be read.
    Read {
        /// The file.
        path: String,
        /// The I/O error.
        error: String,
    },
    /// Not YAML or JSON of the expected shape.
    Decode(String),
    /// `apiVersion`/`kind` is not `audit.k8s.io/v1` `Policy`.
    Kind(String),
    /// Field errors, each `path: message` as kube's validation words them.
    Invalid(Vec<String>),
    /// A valid policy with no rules, which kube refuses.
    NoRules,
}

impl fmt::Display for PolicyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PolicyError::Read { path, error } => write!(f, "failed to read file path {path:?}: {error}"),
            PolicyError::Decode(e) => write!(f, "failed decoding: {e}"),
            PolicyError::Kind(e) => f.write_str(e),
            // kube's aggregate error: one message alone, several in brackets.
            PolicyError::Invalid(errs) if errs.len() == 1 => f.write_str(&errs[0]),
            PolicyError::Invalid(errs) => write!(f, "[{}]", errs.join(", ")),
            PolicyError::NoRules => f.write_str("loaded illegal policy with 0 rules"),
        }
    }
}

impl std::error::Error for PolicyError {}

/// YAML's `key:` (null) reads as the field's empty value, as Go's decoder leaves it.
fn null_as_default<'de, D: Deserializer<'de>, T: Default + Deserialize<'de>>(d: D) -> Result<T, D::Error> {
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

/// The file's shape, before validation.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PolicyFile {
    #[serde(default, deserialize_with = "null_as_default")]
    api_version: String,
    #[serde(default, deserialize_with = "null_as_default")]
    kind: String,
    #[serde(default, deserialize_with = "null_as_default")]
    rules: Vec<RuleFile>,
    #[serde(default, deserialize_with = "null_as_default")]
    omit_stages: Vec<String>,
    #[serde(default, deserialize_with = "null_as_default")]
    omit_managed_fields: bool,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RuleFile {
    #[serde(default, deserialize_with = "null_as_default")]
    level: String,
    #[serde(default, deserialize_with = "null_as_default")]
    users: Vec<String>,
    #[serde(default, deserialize_with = "null_as_default")]
    user_groups: Vec<String>,
    #[serde(default, deserialize_with = "null_as_default")]
    verbs: Vec<String>,
    #[serde(default, deserialize_with = "null_as_default")]
    resources: Vec<GroupResources>,
    #[serde(default, deserialize_with = "null_as_default")]
    namespaces: Vec<String>,
    #[serde(default, rename = "nonResourceURLs", deserialize_with = "null_as_default")]
    non_resource_urls: Vec<String>,
    #[serde(default, deserialize_with = "null_as_default")]
    omit_stages: Vec<String>,
    #[serde(default)]
    omit_managed_fields: Option<bool>,
}

impl AuditPolicy {
    /// Reads and validates a policy file (YAML or JSON).
    pub fn from_file(path: &Path) -> Result<AuditPolicy, PolicyError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| PolicyError::Read { path: path.display().to_string(), error: e.to_string() })?;
        AuditPolicy::parse(&text)
    }

    /// Parses and validates a policy (YAML or JSON; JSON is read as YAML).
    pub fn parse(text: &str) -> Result<AuditPolicy, PolicyError> {
        let file: PolicyFile = serde_yaml_ng::from_str(text).map_err(|e| PolicyError::Decode(e.to_string()))?;
        if file.kind.is_empty() {
            return Err(PolicyError::Decode("Object 'Kind' is missing".into()));
        }
        if file.api_version != "audit.k8s.io/v1" || file.kind != "Policy" {
            return Err(PolicyError::Kind(format!(
                "unknown group version field {}, Kind={} in policy: only audit.k8s.io/v1 Policy is supported",
                file.api_version, file.kind
            )));
        }
        let mut errors = Vec::new();
        let omit_stages = stages(&file.omit_stages, &FieldPath::new("omitStages"), &mut errors);
        let rules: Vec<PolicyRule> = file
            .rules
            .into_iter()
            .enumerate()
            .map(|(i, r)| rule(r, &FieldPath::new("rules").index(i), &omit_stages, &mut errors))
            .collect();
        if !errors.is_empty() {
            return Err(PolicyError::Invalid(errors));
        }
        if rules.is_empty() {
            return Err(PolicyError::NoRules);
        }
        Ok(AuditPolicy { rules, omit_stages, omit_managed_fields: file.omit_managed_fields })
    }

    /// The rules, in the order they are tried.
    pub fn rules(&self) -> &[PolicyRule] {
        &self.rules
    }

    /// The level and stages for a request: the first matching rule's, else [`Level::None`].
    pub fn evaluate(&self, attrs: &Attributes) -> RequestAuditConfig {
        match self.rules.iter().find(|r| r.matches(attrs)) {
            Some(r) => RequestAuditConfig {
                level: r.level,
                omit_stages: r.omit_stages.clone(),
                omit_managed_fields: r.omit_managed_fields.unwrap_or(self.omit_managed_fields),
            },
            None => RequestAuditConfig {
                level: Level::None,
                omit_stages: self.omit_stages.clone(),
                omit_managed_fields: self.omit_managed_fields,
            },
        }
    }
}

fn field_error(cause: apimachinery::error::Cause) -> String {
    format!("{}: {}", cause.field, cause.message)
}

/// Parses a list of stages, reporting unknown ones; the result is sorted and deduplicated.
fn stages(names: &[String], path: &FieldPath, errors: &mut Vec<String>) -> Vec<Stage> {
    let mut out = Vec::new();
    for (i, name) in names.iter().enumerate() {
        match Stage::parse(name) {
            Some(s) => out.push(s),
            None => errors.push(field_error(field::invalid(
                &path.index(i),
                Bad::s(name),
                &format!("allowed stages are {}", Stage::ALL.join(",")),
            ))),
        }
    }
    out.sort();
    out.dedup();
    out
}

/// Validates one rule as kube's `validatePolicyRule` does and merges the policy's stages in.
fn rule(r: RuleFile, path: &FieldPath, policy_stages: &[Stage], errors: &mut Vec<String>) -> PolicyRule {
    let level = match Level::parse(&r.level) {
        Some(l) => l,
        None if r.level.is_empty() => {
            errors.push(field_error(field::required(&path.child("level"), "")));
            Level::None
        }
        None => {
            errors.push(field_error(field::not_supported(&path.child("level"), Bad::s(&r.level), &Level::ALL)));
            Level::None
        }
    };
    let urls_path = path.child("nonResourceURLs");
    for (i, url) in r.non_resource_urls.iter().enumerate() {
        if url == "*" {
            continue;
        }
        if !url.starts_with('/') {
            let detail = "non-resource URL rules must begin with a '/' character";
            errors.push(field_error(field::invalid(&urls_path.index(i), Bad::s(url), detail)));
        }
        if url.len() > 1 && url[..url.len() - 1].contains('*') {
            let detail = "non-resource URL wildcards '*' must be the final character of the rule";
            errors.push(field_error(field::invalid(&urls_path.index(i), Bad::s(url), detail)));
        }
    }
    for gr in &r.resources {
        if !gr.group.is_empty() {
            let msgs = name_is_dns_subdomain(&gr.group, false);
            if !msgs.is_empty() {
                let p = path.child("resources").child("group");
                errors.push(field_error(field::invalid(&p, Bad::s(&gr.group), &msgs.join(","))));
            }
        }
        if !gr.resource_names.is_empty() && gr.resources.is_empty() {
            let p = path.child("resources").child("resourceNames");
            let names = Bad::Raw(go_strings(&gr.resource_names));
            errors.push(field_error(field::invalid(&p, names, "using resourceNames requires at least one resource")));
        }
    }
    let mut omit_stages = stages(&r.omit_stages, &path.child("omitStages"), errors);
    if !r.non_resource_urls.is_empty() && (!r.resources.is_empty() || !r.namespaces.is_empty()) {
        let detail = "rules cannot apply to both regular resources and non-resource URLs";
        errors.push(field_error(field::invalid(&urls_path, Bad::Raw(go_strings(&r.non_resource_urls)), detail)));
    }
    omit_stages.extend_from_slice(policy_stages);
    omit_stages.sort();
    omit_stages.dedup();
    PolicyRule {
        level,
        users: r.users,
        user_groups: r.user_groups,
        verbs: r.verbs,
        resources: r.resources,
        namespaces: r.namespaces,
        non_resource_urls: r.non_resource_urls,
        omit_stages,
        omit_managed_fields: r.omit_managed_fields,
    }
}

/// `%#v` of a `[]string`, as kube prints a bad list.
fn go_strings(v: &[String]) -> String {
    let items: Vec<String> = v.iter().map(|s| field::go_quote(s)).collect();
    format!("[]string{{{}}}", items.join(", "))
}

fn has(list: &[String], value: &str) -> bool {
    list.iter().any(|s| s == value)
}

impl PolicyRule {
    /// Whether this rule applies to a request.
    pub fn matches(&self, attrs: &Attributes) -> bool {
        if !self.users.is_empty() && !has(&self.users, &attrs.user.name) {
            return false;
        }
        if !self.user_groups.is_empty() && !attrs.user.groups.iter().any(|g| has(&self.user_groups, g)) {
            return false;
        }
        if !self.verbs.is_empty() && !has(&self.verbs, &attrs.verb) {
            return false;
        }
        if !self.namespaces.is_empty() || !self.resources.is_empty() {
            return self.matches_resource(attrs);
        }
        if !self.non_resource_urls.is_empty() {
            return !attrs.is_resource_request && self.non_resource_urls.iter().any(|u| path_matches(&attrs.path, u));
        }
        true
    }

    fn matches_resource(&self, attrs: &Attributes) -> bool {
        if !attrs.is_resource_request {
            return false;
        }
        // Cluster-scoped requests have the empty namespace, which a rule lists as "".
        if !self.namespaces.is_empty() && !has(&self.namespaces, &attrs.namespace) {
            return false;
        }
        if self.resources.is_empty() {
            return true;
        }
        self.resources.iter().filter(|gr| gr.group == attrs.api_group).any(|gr| gr.matches(attrs))
    }
}

impl GroupResources {
    /// Whether a request in this group names one of these resources (and objects).
    fn matches(&self, attrs: &Attributes) -> bool {
        if self.resources.is_empty() {
            return true;
        }
        if !self.resource_names.is_empty() && !has(&self.resource_names, &attrs.name) {
            return false;
        }
        let (resource, sub) = (attrs.resource.as_str(), attrs.subresource.as_str());
        self.resources.iter().any(|spec| {
            let exact = if sub.is_empty() { spec == resource } else { spec.split_once('/') == Some((resource, sub)) };
            // `pods/*` matches pods itself as well as its subresources, as kube's checker does.
            exact
                || spec == "*"
                || (!sub.is_empty() && spec.strip_prefix("*/") == Some(sub))
                || spec.strip_suffix("/*") == Some(resource)
        })
    }
}

/// A non-resource path against a rule's URL: exact, `*`, or a prefix ending in `*`.
fn path_matches(path: &str, spec: &str) -> bool {
    match spec.strip_suffix('*') {
        Some(prefix) => path.starts_with(prefix.trim_end_matches('*')),
        None => spec == path,
    }
}

#[cfg(test)]
mod tests {
    use apimachinery::request::UserInfo;

    use super::*;

    fn user(name: &str, groups: &[&str]) -> UserInfo {
        UserInfo { name: name.into(), groups: groups.iter().map(|g| g.to_string()).collect(), ..Default::default() }
    }

    fn resource(verb: &str, group: &str, ns: &str, resource: &str, sub: &str, name: &str) -> Attributes {
        Attributes {
            user: user("alice", &["dev", "system:authenticated"]),
            verb: verb.into(),
            is_resource_request: true,
            namespace: ns.into(),
            api_group: group.into(),
            api_version: "v1".into(),
            resource: resource.into(),
            subresource: sub.into(),
            name: name.into(),
            ..Default::default()
        }
    }

    fn non_resource(path: &str) -> Attributes {
        Attributes {
            user: user("alice", &["dev"]),
            verb: "get".into(),
            is_resource_request: false,
            path: path.into(),
            ..Default::default()
        }
    }

    fn policy(rules: &str) -> AuditPolicy {
        AuditPolicy::parse(&format!("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n{rules}")).unwrap()
    }

    fn level(p: &AuditPolicy, a: &Attributes) -> Level {
        p.evaluate(a).level
    }

    #[test]
    fn users_groups_and_verbs_must_all_match() {
        let p = policy(
            "- level: RequestResponse\n  users: [bob]\n\
             - level: Request\n  userGroups: [ops, dev]\n  verbs: [create, update]\n\
             - level: Metadata\n  userGroups: [dev]\n",
        );
        let create = resource("create", "", "default", "pods", "", "");
        assert_eq!(level(&p, &create), Level::Request, "alice is in dev and creates");
        assert_eq!(level(&p, &resource("get", "", "default", "pods", "", "")), Level::Metadata);
        let mut bob = create.clone();
        bob.user = user("bob", &[]);
        assert_eq!(level(&p, &bob), Level::RequestResponse);
        let mut carol = create;
        carol.user = user("carol", &["qa"]);
        assert_eq!(level(&p, &carol), Level::None, "no rule matches: not audited");
    }

    #[test]
    fn resources_match_with_subresources_and_names() {
        let p = policy(
            "- level: None\n  resources: [{group: \"\", resources: [pods/log]}]\n\
             - level: RequestResponse\n  resources: [{group: \"\", resources: [\"*/status\"]}]\n\
             - level: Request\n  resources: [{group: apps, resources: [\"deployments/*\"]}]\n\
             - level: Request\n  resources: [{group: \"\", resources: [configmaps], resourceNames: [cfg]}]\n\
             - level: Metadata\n  resources: [{group: \"\", resources: [pods]}]\n",
        );
        assert_eq!(level(&p, &resource("get", "", "ns", "pods", "log", "p")), Level::None);
        assert_eq!(level(&p, &resource("update", "", "ns", "pods", "status", "p")), Level::RequestResponse);
        assert_eq!(level(&p, &resource("update", "", "ns", "nodes", "status", "n")), Level::RequestResponse);
        assert_eq!(level(&p, &resource("get", "", "ns", "pods", "", "p")), Level::Metadata);
        assert_eq!(level(&p, &resource("get", "", "ns", "pods", "exec", "p")), Level::None, "pods/exec is not pods");
        assert_eq!(level(&p, &resource("patch", "apps", "ns", "deployments", "scale", "d")), Level::Request);
        assert_eq!(level(&p, &resource("get", "apps", "ns", "deployments", "", "d")), Level::Request, "as kube");
        assert_eq!(level(&p, &resource("get", "", "ns", "deployments", "scale", "d")), Level::None, "wrong group");
        assert_eq!(level(&p, &resource("get", "", "ns", "configmaps", "", "cfg")), Level::Request);
        assert_eq!(level(&p, &resource("get", "", "ns", "configmaps", "", "other")), Level::None);
        assert_eq!(level(&p, &resource("list", "", "ns", "configmaps", "", "")), Level::None);
    }

    #[test]
    fn an_empty_resource_list_matches_the_whole_group() {
        let p = policy("- level: Metadata\n  resources: [{group: rbac.authorization.k8s.io}]\n");
        assert_eq!(level(&p, &resource("get", "rbac.authorization.k8s.io", "", "roles", "", "")), Level::Metadata);
        assert_eq!(level(&p, &resource("get", "", "", "pods", "", "")), Level::None);
    }

    #[test]
    fn namespaces_match_and_empty_means_cluster_scoped() {
        let p = policy(
            "- level: Request\n  namespaces: [kube-system]\n\
             - level: Metadata\n  namespaces: [\"\"]\n",
        );
        assert_eq!(level(&p, &resource("get", "", "kube-system", "pods", "", "")), Level::Request);
        assert_eq!(level(&p, &resource("get", "", "", "nodes", "", "")), Level::Metadata);
        assert_eq!(level(&p, &resource("get", "", "default", "pods", "", "")), Level::None);
        assert_eq!(level(&p, &non_resource("/healthz")), Level::None, "namespaces never match non-resource paths");
    }

    #[test]
    fn non_resource_urls_match_exactly_or_by_trailing_star() {
        let p = policy(
            "- level: None\n  nonResourceURLs: [/healthz*, /version]\n\
             - level: Metadata\n  nonResourceURLs: [\"*\"]\n",
        );
        assert_eq!(level(&p, &non_resource("/healthz")), Level::None);
        assert_eq!(level(&p, &non_resource("/healthz/etcd")), Level::None);
        assert_eq!(level(&p, &non_resource("/version")), Level::None);
        assert_eq!(level(&p, &non_resource("/versions")), Level::Metadata);
        assert_eq!(level(&p, &non_resource("/metrics")), Level::Metadata);
        assert_eq!(level(&p, &resource("get", "", "", "pods", "", "")), Level::None, "URLs never match resources");
    }

    #[test]
    fn the_first_matching_rule_wins() {
        let p = policy("- level: Metadata\n  verbs: [get]\n- level: RequestResponse\n");
        assert_eq!(level(&p, &resource("get", "", "ns", "pods", "", "")), Level::Metadata);
        assert_eq!(level(&p, &resource("create", "", "ns", "pods", "", "")), Level::RequestResponse);
    }

    #[test]
    fn omit_stages_merge_policy_and_rule() {
        let p = AuditPolicy::parse(
            "apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\nomitManagedFields: true\n\
             rules:\n- level: Metadata\n  verbs: [watch]\n  omitStages: [ResponseStarted, RequestReceived]\n  \
             omitManagedFields: false\n- level: Request\n",
        )
        .unwrap();
        let watch = p.evaluate(&resource("watch", "", "ns", "pods", "", ""));
        assert_eq!(watch.omit_stages, vec![Stage::RequestReceived, Stage::ResponseStarted]);
        assert!(!watch.omit_managed_fields, "the rule overrides the policy");
        let get = p.evaluate(&resource("get", "", "ns", "pods", "", ""));
        assert_eq!(
            (get.level, get.omit_stages.clone(), get.omit_managed_fields),
            (Level::Request, vec![Stage::RequestReceived], true)
        );
        assert!(!get.records(Stage::RequestReceived) && get.records(Stage::ResponseComplete));
        assert!(!RequestAuditConfig::default().records(Stage::ResponseComplete), "level None records nothing");
    }

    #[test]
    fn json_policies_parse_too() {
        let p = AuditPolicy::parse(
            r#"{"apiVersion":"audit.k8s.io/v1","kind":"Policy","rules":[{"level":"Metadata","nonResourceURLs":["/api*"]}]}"#,
        )
        .unwrap();
        assert_eq!(level(&p, &non_resource("/apis/apps")), Level::Metadata);
    }

    #[test]
    fn invalid_policies_are_refused_as_kube_words_it() {
        let parse = |rules: &str| {
            AuditPolicy::parse(&format!("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n{rules}"))
                .unwrap_err()
                .to_string()
        };
        assert_eq!(
            parse("- level: Loud\n"),
            "rules[0].level: Unsupported value: \"Loud\": supported values: \"None\", \"Metadata\", \"Request\", \"RequestResponse\""
        );
        assert_eq!(parse("- users: [a]\n"), "rules[0].level: Required value");
        assert_eq!(
            parse(
                "- level: Metadata\n- level: None\n  resources: [{resources: [pods]}]\n  nonResourceURLs: [/healthz]\n"
            ),
            "rules[1].nonResourceURLs: Invalid value: []string{\"/healthz\"}: rules cannot apply to both regular resources and non-resource URLs"
        );
        assert_eq!(
            parse("- level: None\n  nonResourceURLs: [healthz, \"/a*b\"]\n"),
            "[rules[0].nonResourceURLs[0]: Invalid value: \"healthz\": non-resource URL rules must begin with a '/' character, \
             rules[0].nonResourceURLs[1]: Invalid value: \"/a*b\": non-resource URL wildcards '*' must be the final character of the rule]"
        );
        assert_eq!(
            parse("- level: None\n  omitStages: [Later]\n"),
            "rules[0].omitStages[0]: Invalid value: \"Later\": allowed stages are RequestReceived,ResponseStarted,ResponseComplete,Panic"
        );
        assert!(
            parse("- level: None\n  resources: [{resourceNames: [x]}]\n").contains("requires at least one resource")
        );
        assert!(parse("- level: None\n  resources: [{group: Apps/v1, resources: [x]}]\n").contains("resources.group"));
        let none = AuditPolicy::parse("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: []\n").unwrap_err();
        assert_eq!(none, PolicyError::NoRules);
        let old = AuditPolicy::parse("apiVersion: audit.k8s.io/v1beta1\nkind: Policy\nrules: [{level: None}]\n");
        assert!(matches!(old, Err(PolicyError::Kind(_))), "{old:?}");
    }

    #[test]
    fn a_policy_file_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("policy.yaml");
        std::fs::write(&f, "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n").unwrap();
        assert_eq!(AuditPolicy::from_file(&f).unwrap().rules().len(), 1);
        let missing = AuditPolicy::from_file(&dir.path().join("nope")).unwrap_err();
        assert!(matches!(missing, PolicyError::Read { .. }), "{missing}");
        assert_eq!(Level::RequestResponse.as_str(), "RequestResponse");
        assert_eq!(Stage::ResponseComplete.as_str(), "ResponseComplete");
        assert!(Level::Metadata < Level::Request && Level::None < Level::Metadata);
    }
}
