//! `admissionregistration.k8s.io/v1` validation (`pkg/apis/admissionregistration/validation`):
//! MutatingWebhookConfiguration, ValidatingWebhookConfiguration, ValidatingAdmissionPolicy
//! (and its status) and ValidatingAdmissionPolicyBinding.
//!
//! Updates are checked with the create rules, relaxed where kube relaxes them for what the
//! stored object already had (side effects, review versions, duplicate webhook names, label
//! values in selectors, unchanged match conditions), so an object a stricter server stored can
//! still be updated. CEL expressions go through [`super::cel::check`] where kube compiles them.

use std::collections::BTreeSet;

use serde_json::{Map, Value};

use super::cel::{self, Expression, ExpressionKind};
use super::field::{self, Bad, Path};
use super::{arr, meta, names, s, webhook};
use apimachinery::error::Cause;

const FAILURE_POLICIES: [&str; 2] = ["Fail", "Ignore"];
const MATCH_POLICIES: [&str; 2] = ["Equivalent", "Exact"];
const NO_SIDE_EFFECTS: [&str; 2] = ["None", "NoneOnDryRun"];
const SIDE_EFFECTS: [&str; 4] = ["None", "NoneOnDryRun", "Some", "Unknown"];
const OPERATIONS: [&str; 5] = ["*", "CONNECT", "CREATE", "DELETE", "UPDATE"];
const REINVOCATION_POLICIES: [&str; 2] = ["IfNeeded", "Never"];
const SCOPES: [&str; 3] = ["*", "Cluster", "Namespaced"];
const VALIDATION_ACTIONS: [&str; 3] = ["Audit", "Deny", "Warn"];
const VALIDATION_REASONS: [&str; 3] = ["Forbidden", "Invalid", "RequestEntityTooLarge"];
/// `AcceptedAdmissionReviewVersions`.
const REVIEW_VERSIONS: [&str; 2] = ["v1", "v1beta1"];
const MAX_MATCH_CONDITIONS: usize = 64;
const MAX_AUDIT_ANNOTATIONS: usize = 20;
const MAX_AUDIT_ANNOTATION_VALUE_EXPRESSION: usize = 5 * 1024;

fn md(v: &Value) -> Option<&Map<String, Value>> {
    v.get("metadata").and_then(Value::as_object)
}

/// apimachinery's `ValidateObjectMetaUpdate`, as the generic registry runs it before these
/// kinds' update validation (without core's finalizer-name rule, which they never apply).
pub fn meta_update(new: &Value, old: &Value) -> Vec<Cause> {
    meta::validate_object_meta_update(md(new), md(old), &Path::new("metadata"), false)
}

/// A member that is set: present and not `null` (a non-nil Go pointer).
fn set<'a>(v: &'a Value, key: &str) -> Option<&'a Value> {
    v.get(key).filter(|v| !v.is_null())
}

/// A `[]string` member, non-strings read as `""`.
fn strings<'a>(v: &'a Value, key: &str) -> Vec<&'a str> {
    arr(v, key).iter().map(|x| x.as_str().unwrap_or("")).collect()
}

/// `%#v` of a non-empty slice of a string type: `[]string{"a", "b"}`.
fn go_slice(type_name: &str, items: &[&str]) -> Bad {
    let quoted: Vec<String> = items.iter().map(|i| field::go_quote(i)).collect();
    Bad::Raw(format!("[]{type_name}{{{}}}", quoted.join(", ")))
}

fn has_wildcard(items: &[&str]) -> bool {
    items.contains(&"*")
}

/// A string member checked against kube's set of values (`NotSupported` otherwise); absent is
/// fine, as for kube's optional pointers.
fn one_of(out: &mut Vec<Cause>, v: &Value, key: &str, path: &Path, supported: &[&str]) {
    if let Some(x) = set(v, key) {
        let x = x.as_str().unwrap_or("");
        if !supported.contains(&x) {
            out.push(field::not_supported(&path.child(key), Bad::s(x), supported));
        }
    }
}

/// `utilvalidation.IsFullyQualifiedName`: a DNS subdomain of at least three segments (webhook
/// names).
fn fully_qualified_name(name: &str, path: &Path) -> Vec<Cause> {
    if name.is_empty() {
        return vec![field::required(path, "")];
    }
    let errs = names::dns1123_subdomain(name);
    if !errs.is_empty() {
        return vec![field::invalid(path, Bad::s(name), &errs.join(","))];
    }
    if name.split('.').count() < 3 {
        return vec![field::invalid(
            path,
            Bad::s(name),
            "should be a domain with at least three segments separated by dots",
        )];
    }
    Vec::new()
}

/// `ValidateQualifiedName`.
fn qualified_name(value: &str, path: &Path) -> Vec<Cause> {
    names::qualified_name(value).into_iter().map(|m| field::invalid(path, Bad::s(value), &m)).collect()
}

// ---------------------------------------------------------------------------------------------
// Rules.

/// `validateResources`: resources with subresources, and kube's rules for `*` and `*/*`.
fn validate_resources(resources: &[&str], path: &Path) -> Vec<Cause> {
    let mut out = Vec::new();
    if resources.is_empty() {
        out.push(field::required(path, ""));
    }
    // `x/*` and `*/x` seen so far.
    let mut with_wildcard_sub: BTreeSet<&str> = BTreeSet::new();
    let mut sub_with_wildcard_res: BTreeSet<&str> = BTreeSet::new();
    let mut has_double_wildcard = false;
    let mut has_single_wildcard = false;
    // kube overwrites this at each resource without a subresource, so the last one decides.
    let mut has_resource_without_sub = false;
    for (i, res_sub) in resources.iter().enumerate() {
        if res_sub.is_empty() {
            out.push(field::required(&path.index(i), ""));
            continue;
        }
        if *res_sub == "*/*" {
            has_double_wildcard = true;
        }
        if *res_sub == "*" {
            has_single_wildcard = true;
        }
        let Some((res, sub)) = res_sub.split_once('/') else {
            has_resource_without_sub = *res_sub != "*";
            continue;
        };
        if with_wildcard_sub.contains(res) {
            out.push(field::invalid(
                &path.index(i),
                Bad::s(*res_sub),
                &format!("if '{res}/*' is present, must not specify {res_sub}"),
            ));
        }
        if sub_with_wildcard_res.contains(sub) {
            out.push(field::invalid(
                &path.index(i),
                Bad::s(*res_sub),
                &format!("if '*/{sub}' is present, must not specify {res_sub}"),
            ));
        }
        if sub == "*" {
            with_wildcard_sub.insert(res);
        }
        if res == "*" {
            sub_with_wildcard_res.insert(sub);
        }
    }
    if resources.len() > 1 && has_double_wildcard {
        out.push(field::invalid(
            path,
            go_slice("string", resources),
            "if '*/*' is present, must not specify other resources",
        ));
    }
    if has_single_wildcard && has_resource_without_sub {
        out.push(field::invalid(
            path,
            go_slice("string", resources),
            "if '*' is present, must not specify other resources without subresources",
        ));
    }
    out
}

/// `validateRule` with subresources allowed (the only form v1's rules take).
fn validate_rule(rule: &Value, path: &Path) -> Vec<Cause> {
    let mut out = Vec::new();
    let groups = strings(rule, "apiGroups");
    if groups.is_empty() {
        out.push(field::required(&path.child("apiGroups"), ""));
    }
    if groups.len() > 1 && has_wildcard(&groups) {
        out.push(field::invalid(
            &path.child("apiGroups"),
            go_slice("string", &groups),
            "if '*' is present, must not specify other API groups",
        ));
    }
    let versions = strings(rule, "apiVersions");
    if versions.is_empty() {
        out.push(field::required(&path.child("apiVersions"), ""));
    }
    if versions.len() > 1 && has_wildcard(&versions) {
        out.push(field::invalid(
            &path.child("apiVersions"),
            go_slice("string", &versions),
            "if '*' is present, must not specify other API versions",
        ));
    }
    for (i, v) in versions.iter().enumerate() {
        if v.is_empty() {
            out.push(field::required(&path.child("apiVersions").index(i), ""));
        }
    }
    out.extend(validate_resources(&strings(rule, "resources"), &path.child("resources")));
    one_of(&mut out, rule, "scope", path, &SCOPES);
    out
}

/// `validateRuleWithOperations`.
fn validate_rule_with_operations(rule: &Value, path: &Path) -> Vec<Cause> {
    let mut out = Vec::new();
    let ops = strings(rule, "operations");
    let op_path = path.child("operations");
    if ops.is_empty() {
        out.push(field::required(&op_path, ""));
    }
    if ops.len() > 1 && has_wildcard(&ops) {
        out.push(field::invalid(
            &op_path,
            go_slice("admissionregistration.OperationType", &ops),
            "if '*' is present, must not specify other operations",
        ));
    }
    for (i, op) in ops.iter().enumerate() {
        if !OPERATIONS.contains(op) {
            out.push(field::not_supported(&op_path.index(i), Bad::s(*op), &OPERATIONS));
        }
    }
    out.extend(validate_rule(rule, path));
    out
}

/// `validateNamedRuleWithOperations`: resource names are path segments, unique.
fn validate_named_rule_with_operations(rule: &Value, path: &Path) -> Vec<Cause> {
    let mut out = Vec::new();
    let mut seen = BTreeSet::new();
    for (i, name) in strings(rule, "resourceNames").into_iter().enumerate() {
        let p = path.child("resourceNames").index(i);
        out.extend(names::path_segment_name(name, false).into_iter().map(|m| field::invalid(&p, Bad::s(name), &m)));
        if !seen.insert(name) {
            out.push(field::duplicate(&p, Bad::s(name)));
        }
    }
    out.extend(validate_rule_with_operations(rule, path));
    out
}

/// `validateMatchResources` (policies and bindings): selectors required and strict.
fn validate_match_resources(mr: &Value, path: &Path) -> Vec<Cause> {
    let mut out = Vec::new();
    match set(mr, "matchPolicy") {
        None => out.push(field::required(&path.child("matchPolicy"), "")),
        Some(_) => one_of(&mut out, mr, "matchPolicy", path, &MATCH_POLICIES),
    }
    for key in ["namespaceSelector", "objectSelector"] {
        match set(mr, key) {
            None => out.push(field::required(&path.child(key), "")),
            Some(sel) => out.extend(meta::validate_label_selector(Some(sel), &path.child(key))),
        }
    }
    for key in ["resourceRules", "excludeResourceRules"] {
        for (i, rule) in arr(mr, key).iter().enumerate() {
            out.extend(validate_named_rule_with_operations(rule, &path.child(key).index(i)));
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Match conditions, and what updates relax.

/// Expressions of the stored object, which kube compiles in its stored-expressions environment.
#[derive(Default)]
struct Preexisting {
    match_conditions: BTreeSet<String>,
    validations: BTreeSet<String>,
    messages: BTreeSet<String>,
    audit_values: BTreeSet<String>,
}

/// kube's `validationOptions`.
#[derive(Default)]
struct Options {
    ignore_match_conditions: bool,
    allow_params_in_match_conditions: bool,
    require_no_side_effects: bool,
    require_recognized_review_version: bool,
    require_unique_webhook_names: bool,
    allow_invalid_label_values: bool,
    preexisting: Preexisting,
}

impl Options {
    /// What a create is held to.
    fn strict() -> Options {
        Options {
            require_no_side_effects: true,
            require_recognized_review_version: true,
            require_unique_webhook_names: true,
            ..Options::default()
        }
    }
}

/// `validateMatchConditions`: at most 64, names unique.
fn validate_match_conditions(conditions: &[Value], opts: &Options, path: &Path) -> Vec<Cause> {
    let mut out = Vec::new();
    if conditions.len() > MAX_MATCH_CONDITIONS {
        out.push(field::too_many(path, conditions.len(), MAX_MATCH_CONDITIONS));
    }
    let mut seen = BTreeSet::new();
    for (i, c) in conditions.iter().enumerate() {
        let p = path.index(i);
        let expression = s(c, "expression").trim();
        let ep = p.child("expression");
        if expression.is_empty() {
            out.push(field::required(&ep, ""));
        } else {
            out.extend(cel::check(&Expression {
                kind: ExpressionKind::MatchCondition,
                text: expression,
                path: &ep,
                has_params: opts.allow_params_in_match_conditions,
                has_authorizer: true,
                variables: &[],
                stored: opts.preexisting.match_conditions.contains(expression),
            }));
        }
        let name = s(c, "name");
        if name.is_empty() {
            out.push(field::required(&p.child("name"), ""));
        } else {
            out.extend(qualified_name(name, &p.child("name")));
            if !seen.insert(name) {
                out.push(field::duplicate(&p.child("name"), Bad::s(name)));
            }
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Webhook configurations.

/// `validateValidatingWebhook` / `validateMutatingWebhook`.
fn validate_webhook(hook: &Value, mutating: bool, opts: &Options, path: &Path) -> Vec<Cause> {
    let mut out = fully_qualified_name(s(hook, "name"), &path.child("name"));
    for (i, rule) in arr(hook, "rules").iter().enumerate() {
        out.extend(validate_rule_with_operations(rule, &path.child("rules").index(i)));
    }
    one_of(&mut out, hook, "failurePolicy", path, &FAILURE_POLICIES);
    one_of(&mut out, hook, "matchPolicy", path, &MATCH_POLICIES);
    let allowed: &[&str] = if opts.require_no_side_effects { &NO_SIDE_EFFECTS } else { &SIDE_EFFECTS };
    match set(hook, "sideEffects") {
        None => out
            .push(field::required(&path.child("sideEffects"), &format!("must specify one of {}", allowed.join(", ")))),
        Some(_) => one_of(&mut out, hook, "sideEffects", path, allowed),
    }
    if let Some(t) = set(hook, "timeoutSeconds").and_then(Value::as_i64).filter(|t| !(1..=30).contains(t)) {
        out.push(field::invalid(
            &path.child("timeoutSeconds"),
            Bad::Int(t),
            "the timeout value must be between 1 and 30 seconds",
        ));
    }
    for key in ["namespaceSelector", "objectSelector"] {
        if let Some(sel) = set(hook, key) {
            out.extend(if opts.allow_invalid_label_values {
                meta::validate_label_selector_lenient(Some(sel), &path.child(key))
            } else {
                meta::validate_label_selector(Some(sel), &path.child(key))
            });
        }
    }
    if mutating {
        one_of(&mut out, hook, "reinvocationPolicy", path, &REINVOCATION_POLICIES);
    }
    let empty = Value::Object(Map::new());
    let cc = hook.get("clientConfig").unwrap_or(&empty);
    let cc_path = path.child("clientConfig");
    match (set(cc, "url"), set(cc, "service")) {
        (Some(url), None) => {
            out.extend(webhook::validate_webhook_url(&cc_path.child("url"), url.as_str().unwrap_or(""), true))
        }
        (None, Some(svc)) => {
            // kube passes the name where the namespace goes and the other way round.
            out.extend(webhook::validate_webhook_service(
                &cc_path.child("service"),
                s(svc, "name"),
                s(svc, "namespace"),
                set(svc, "path").map(|p| p.as_str().unwrap_or("")),
                svc.get("port").and_then(Value::as_i64).unwrap_or(0),
            ))
        }
        _ => out.push(field::required(&cc_path, "exactly one of url or service is required")),
    }
    if !opts.ignore_match_conditions {
        out.extend(validate_match_conditions(arr(hook, "matchConditions"), opts, &path.child("matchConditions")));
    }
    out
}

/// `validateAdmissionReviewVersions`.
fn validate_admission_review_versions(versions: &[&str], require_recognized: bool, path: &Path) -> Vec<Cause> {
    let mut out = Vec::new();
    if versions.is_empty() {
        out.push(field::required(path, &format!("must specify one of {}", REVIEW_VERSIONS.join(", "))));
        return out;
    }
    let mut seen = BTreeSet::new();
    let mut has_accepted = false;
    for (i, v) in versions.iter().enumerate() {
        if !seen.insert(*v) {
            out.push(field::invalid(&path.index(i), Bad::s(*v), "duplicate version"));
            continue;
        }
        out.extend(names::dns1035_label(v).into_iter().map(|m| field::invalid(&path.index(i), Bad::s(*v), &m)));
        has_accepted |= REVIEW_VERSIONS.contains(v);
    }
    if require_recognized && !has_accepted {
        out.push(field::invalid(
            path,
            go_slice("string", versions),
            &format!("must include at least one of {}", REVIEW_VERSIONS.join(", ")),
        ));
    }
    out
}

fn validate_webhook_configuration(obj: &Value, mutating: bool, opts: &Options) -> Vec<Cause> {
    let mut out =
        meta::validate_object_meta(md(obj), false, names::name_is_dns_subdomain, &Path::new("metadata"), false);
    let mut hook_names = BTreeSet::new();
    for (i, hook) in arr(obj, "webhooks").iter().enumerate() {
        let p = Path::new("webhooks").index(i);
        out.extend(validate_webhook(hook, mutating, opts, &p));
        out.extend(validate_admission_review_versions(
            &strings(hook, "admissionReviewVersions"),
            opts.require_recognized_review_version,
            &p.child("admissionReviewVersions"),
        ));
        let name = s(hook, "name");
        if opts.require_unique_webhook_names && !name.is_empty() && !hook_names.insert(name) {
            out.push(field::duplicate(&p.child("name"), Bad::s(name)));
        }
    }
    out
}

/// `ValidateMutatingWebhookConfiguration` (`mutating`) or
/// `ValidateValidatingWebhookConfiguration`, on create.
pub fn webhook_configuration(obj: &Value, mutating: bool) -> Vec<Cause> {
    validate_webhook_configuration(obj, mutating, &Options::strict())
}

/// The update flavour: the create rules, relaxed for what the stored configuration already had.
pub fn webhook_configuration_update(new: &Value, old: &Value, mutating: bool) -> Vec<Cause> {
    let old_hooks = arr(old, "webhooks");
    let new_hooks = arr(new, "webhooks");
    let conditions = |h: &Value| set(h, "matchConditions").cloned();
    let selector_invalid = |h: &Value| {
        ["namespaceSelector", "objectSelector"]
            .iter()
            .any(|k| set(h, k).is_some_and(|sel| !meta::validate_label_selector(Some(sel), &Path::new("")).is_empty()))
    };
    let mut unique = BTreeSet::new();
    let mut preexisting = Preexisting::default();
    for h in old_hooks {
        for c in arr(h, "matchConditions") {
            preexisting.match_conditions.insert(s(c, "expression").to_string());
        }
    }
    let opts = Options {
        ignore_match_conditions: new_hooks.len() == old_hooks.len()
            && new_hooks.iter().zip(old_hooks).all(|(n, o)| conditions(n) == conditions(o)),
        allow_params_in_match_conditions: false,
        require_no_side_effects: old_hooks
            .iter()
            .all(|h| set(h, "sideEffects").and_then(Value::as_str).is_some_and(|e| NO_SIDE_EFFECTS.contains(&e))),
        require_recognized_review_version: old_hooks.iter().all(|h| {
            let versions = strings(h, "admissionReviewVersions");
            versions.is_empty() || versions.iter().any(|v| REVIEW_VERSIONS.contains(v))
        }),
        require_unique_webhook_names: old_hooks.iter().all(|h| unique.insert(s(h, "name"))),
        allow_invalid_label_values: old_hooks.iter().any(selector_invalid),
        preexisting,
    };
    validate_webhook_configuration(new, mutating, &opts)
}

// ---------------------------------------------------------------------------------------------
// ValidatingAdmissionPolicy.

/// kube's `parseGroupVersion`.
fn parse_group_version(gv: &str) -> Result<(&str, &str), String> {
    if gv.is_empty() || gv == "/" {
        return Ok(("", ""));
    }
    match gv.matches('/').count() {
        0 => Ok(("", gv)),
        1 => Ok(gv.split_once('/').expect("one slash")),
        _ => Err(format!("unexpected GroupVersion string: {gv}")),
    }
}

/// `validateParamKind`.
fn validate_param_kind(pk: &Value, path: &Path) -> Vec<Cause> {
    let mut out = Vec::new();
    let api_version = s(pk, "apiVersion");
    let avp = path.child("apiVersion");
    if api_version.is_empty() {
        out.push(field::required(&avp, ""));
    } else {
        match parse_group_version(api_version) {
            Err(e) => out.push(field::invalid(&avp, Bad::s(api_version), &e)),
            Ok((group, version)) => {
                if !group.is_empty() {
                    let errs = names::dns1123_subdomain(group);
                    if !errs.is_empty() {
                        out.push(field::invalid(&avp, Bad::s(group), &errs.join(",")));
                    }
                }
                if version.is_empty() {
                    out.push(field::invalid(&avp, Bad::s(api_version), "version must be specified"));
                } else {
                    let errs = names::dns1035_label(version);
                    if !errs.is_empty() {
                        out.push(field::invalid(&avp, Bad::s(version), &errs.join(",")));
                    }
                }
            }
        }
    }
    let kind = s(pk, "kind");
    if kind.is_empty() {
        out.push(field::required(&path.child("kind"), ""));
    } else {
        let errs = names::dns1035_label(&kind.to_lowercase());
        if !errs.is_empty() {
            out.push(field::invalid(
                &path.child("kind"),
                Bad::s(kind),
                &format!("may have mixed case, but should otherwise match: {}", errs.join(",")),
            ));
        }
    }
    out
}

/// kube's `isCELIdentifier`: `[_a-zA-Z][_a-zA-Z0-9]*`, not a reserved word.
fn is_cel_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c == '_' || c.is_ascii_alphabetic())
        && chars.all(|c| c == '_' || c.is_ascii_alphanumeric())
        && !kube_cel::decl::RESERVED_WORDS.contains(&name)
}

/// Whether a message has a line break (kube's `[\n\r]+`).
fn has_newlines(s: &str) -> bool {
    s.contains(['\n', '\r'])
}

/// The spec part of `validateValidatingAdmissionPolicy`.
fn validate_policy_spec(name: &str, spec: &Value, mut opts: Options, path: &Path) -> Vec<Cause> {
    let mut out = Vec::new();
    match set(spec, "failurePolicy") {
        None => out.push(field::required(&path.child("failurePolicy"), "")),
        Some(_) => one_of(&mut out, spec, "failurePolicy", path, &FAILURE_POLICIES),
    }
    let has_params = set(spec, "paramKind").is_some();
    if let Some(pk) = set(spec, "paramKind") {
        opts.allow_params_in_match_conditions = true;
        out.extend(validate_param_kind(pk, &path.child("paramKind")));
    }
    match set(spec, "matchConstraints") {
        None => out.push(field::required(&path.child("matchConstraints"), "")),
        Some(mc) => {
            out.extend(validate_match_resources(mc, &path.child("matchConstraints")));
            // At least one resource rule, to give the expressions type information.
            if arr(mc, "resourceRules").is_empty() {
                out.push(field::required(&path.child("matchConstraints").child("resourceRules"), ""));
            }
        }
    }
    if !opts.ignore_match_conditions {
        out.extend(validate_match_conditions(arr(spec, "matchConditions"), &opts, &path.child("matchConditions")));
    }
    let declared: Vec<(String, String)> =
        arr(spec, "variables").iter().map(|v| (s(v, "name").to_string(), s(v, "expression").to_string())).collect();
    let variables = cel::variable_types(&declared, has_params, &|e| opts.preexisting.validations.contains(e));
    for (i, v) in arr(spec, "variables").iter().enumerate() {
        let p = path.child("variables").index(i);
        let vname = s(v, "name");
        if vname.trim().is_empty() {
            out.push(field::required(&p.child("name"), "name is not specified"));
        } else if !is_cel_identifier(vname) {
            out.push(field::invalid(&p.child("name"), Bad::s(vname), "name is not a valid CEL identifier"));
        }
        let expression = s(v, "expression");
        let ep = p.child("expression");
        if expression.trim().is_empty() {
            out.push(field::required(&ep, "expression is not specified"));
        } else {
            out.extend(cel::check(&Expression {
                kind: ExpressionKind::Variable,
                text: expression,
                path: &ep,
                has_params,
                has_authorizer: true,
                variables: &variables[..i],
                stored: opts.preexisting.validations.contains(expression),
            }));
        }
    }
    let validations = arr(spec, "validations");
    let audit_annotations = arr(spec, "auditAnnotations");
    if validations.is_empty() && audit_annotations.is_empty() {
        let detail = "validations or auditAnnotations must contain at least one item";
        out.push(field::required(&path.child("validations"), detail));
        out.push(field::required(&path.child("auditAnnotations"), detail));
        return out;
    }
    for (i, v) in validations.iter().enumerate() {
        out.extend(validate_validation(v, has_params, &variables, &opts, &path.child("validations").index(i)));
    }
    if set(spec, "auditAnnotations").is_some() {
        let ap = path.child("auditAnnotations");
        if audit_annotations.len() > MAX_AUDIT_ANNOTATIONS {
            out.push(field::invalid(
                &ap,
                Bad::Raw(field::go_struct(spec.get("auditAnnotations"))),
                &format!("must not have more than {MAX_AUDIT_ANNOTATIONS} auditAnnotations"),
            ));
        }
        let mut keys = BTreeSet::new();
        for (i, a) in audit_annotations.iter().enumerate() {
            let p = ap.index(i);
            out.extend(validate_audit_annotation(name, a, has_params, &variables, &opts, &p));
            let key = s(a, "key");
            if !keys.insert(key) {
                out.push(field::duplicate(&p.child("key"), Bad::s(key)));
            }
        }
    }
    out
}

/// `validateValidation`.
fn validate_validation(
    v: &Value,
    has_params: bool,
    variables: &[(String, kube_cel::Type)],
    opts: &Options,
    path: &Path,
) -> Vec<Cause> {
    let mut out = Vec::new();
    let expression = s(v, "expression");
    let ep = path.child("expression");
    if expression.trim().is_empty() {
        out.push(field::required(&ep, "expression is not specified"));
    } else {
        out.extend(cel::check(&Expression {
            kind: ExpressionKind::Validation,
            text: expression,
            path: &ep,
            has_params,
            has_authorizer: true,
            variables,
            stored: opts.preexisting.validations.contains(expression),
        }));
    }
    let message_expression = s(v, "messageExpression");
    let mp = path.child("messageExpression");
    if !message_expression.is_empty() && message_expression.trim().is_empty() {
        out.push(field::invalid(&mp, Bad::s(message_expression), "must be non-empty if specified"));
    } else if !message_expression.trim().is_empty() {
        out.extend(cel::check(&Expression {
            kind: ExpressionKind::MessageExpression,
            text: message_expression,
            path: &mp,
            // kube declares params here only through the match-conditions option.
            has_params: opts.allow_params_in_match_conditions,
            has_authorizer: false,
            variables,
            stored: opts.preexisting.messages.contains(message_expression),
        }));
    }
    let message = s(v, "message");
    if !message.is_empty() && message.trim().is_empty() {
        out.push(field::invalid(&path.child("message"), Bad::s(message), "message must be non-empty if specified"));
    } else if has_newlines(message.trim()) {
        out.push(field::invalid(&path.child("message"), Bad::s(message), "message must not contain line breaks"));
    }
    one_of(&mut out, v, "reason", path, &VALIDATION_REASONS);
    out
}

/// `validateAuditAnnotation`: `<policy name>/<key>` is a qualified name, the value expression
/// is set and at most 5 KiB.
fn validate_audit_annotation(
    policy_name: &str,
    a: &Value,
    has_params: bool,
    variables: &[(String, kube_cel::Type)],
    opts: &Options,
    path: &Path,
) -> Vec<Cause> {
    let mut out = Vec::new();
    let key = s(a, "key");
    if !policy_name.is_empty() {
        out.extend(qualified_name(&format!("{policy_name}/{key}"), &path.child("key")));
    } else {
        out.push(field::invalid(&path.child("key"), Bad::s(key), "requires metadata.name be non-empty"));
    }
    let value_expression = s(a, "valueExpression");
    let trimmed = value_expression.trim();
    let vp = path.child("valueExpression");
    if trimmed.is_empty() {
        out.push(field::required(&vp, "valueExpression is not specified"));
    } else if trimmed.len() > MAX_AUDIT_ANNOTATION_VALUE_EXPRESSION {
        out.push(field::required(
            &vp,
            &format!("must not exceed {MAX_AUDIT_ANNOTATION_VALUE_EXPRESSION} bytes in length"),
        ));
    } else {
        out.extend(cel::check(&Expression {
            kind: ExpressionKind::AuditAnnotationValue,
            text: trimmed,
            path: &vp,
            has_params,
            has_authorizer: true,
            variables,
            stored: opts.preexisting.audit_values.contains(value_expression),
        }));
    }
    out
}

fn validate_policy(obj: &Value, opts: Options) -> Vec<Cause> {
    let mut out =
        meta::validate_object_meta(md(obj), false, names::name_is_dns_subdomain, &Path::new("metadata"), false);
    let empty = Value::Object(Map::new());
    let name = md(obj).and_then(|m| m.get("name")).and_then(Value::as_str).unwrap_or("");
    out.extend(validate_policy_spec(name, obj.get("spec").unwrap_or(&empty), opts, &Path::new("spec")));
    out
}

/// `ValidateValidatingAdmissionPolicy` (create).
pub fn validating_admission_policy(obj: &Value) -> Vec<Cause> {
    validate_policy(obj, Options::default())
}

/// `ValidateValidatingAdmissionPolicyUpdate`: match conditions are not rechecked when they and
/// the param kind are unchanged; stored expressions compile in the stored environment.
pub fn validating_admission_policy_update(new: &Value, old: &Value) -> Vec<Cause> {
    let spec = |v: &Value, k: &str| v.get("spec").and_then(|s| set(s, k)).cloned();
    let mut preexisting = Preexisting::default();
    let empty = Value::Null;
    let old_spec = old.get("spec").unwrap_or(&empty);
    for c in arr(old_spec, "matchConditions") {
        preexisting.match_conditions.insert(s(c, "expression").to_string());
    }
    for v in arr(old_spec, "validations") {
        preexisting.validations.insert(s(v, "expression").to_string());
        if !s(v, "messageExpression").is_empty() {
            preexisting.messages.insert(s(v, "messageExpression").to_string());
        }
    }
    for a in arr(old_spec, "auditAnnotations") {
        preexisting.audit_values.insert(s(a, "valueExpression").to_string());
    }
    let opts = Options {
        ignore_match_conditions: spec(new, "paramKind") == spec(old, "paramKind")
            && spec(new, "matchConditions") == spec(old, "matchConditions"),
        preexisting,
        ..Options::default()
    };
    validate_policy(new, opts)
}

/// `ValidateValidatingAdmissionPolicyStatusUpdate`: type-checking warnings name a field and
/// say something; conditions are `metav1.Condition`s.
pub fn validating_admission_policy_status(obj: &Value) -> Vec<Cause> {
    let mut out = Vec::new();
    let empty = Value::Null;
    let status = obj.get("status").unwrap_or(&empty);
    let sp = Path::new("status");
    if let Some(tc) = set(status, "typeChecking") {
        let wp = sp.child("typeChecking").child("expressionWarnings");
        for (i, w) in arr(tc, "expressionWarnings").iter().enumerate() {
            let p = wp.index(i);
            if s(w, "warning").is_empty() {
                out.push(field::required(&p.child("warning"), ""));
            }
            if s(w, "fieldRef").trim().is_empty() {
                out.push(field::required(&p.child("fieldRef"), ""));
            }
        }
    }
    out.extend(meta::validate_conditions(arr(status, "conditions"), &sp.child("conditions")));
    out
}

// ---------------------------------------------------------------------------------------------
// ValidatingAdmissionPolicyBinding.

/// `validateParamRef`: a name or a selector, not both; what to do when no param is found.
fn validate_param_ref(pr: &Value, path: &Path) -> Vec<Cause> {
    let mut out = Vec::new();
    let name = s(pr, "name");
    let selector = set(pr, "selector");
    const EXCLUSIVE: &str = "name and selector are mutually exclusive";
    if !name.is_empty() {
        let np = path.child("name");
        out.extend(names::path_segment_name(name, false).into_iter().map(|m| field::invalid(&np, Bad::s(name), &m)));
        if selector.is_some() {
            out.push(field::forbidden(&np, EXCLUSIVE));
        }
    }
    if let Some(sel) = selector {
        out.extend(meta::validate_label_selector(Some(sel), &path.child("selector")));
        if !name.is_empty() {
            out.push(field::forbidden(&path.child("selector"), EXCLUSIVE));
        }
    }
    if name.is_empty() && selector.is_none() {
        out.push(field::required(path, "one of name or selector must be specified"));
    }
    let action = s(pr, "parameterNotFoundAction");
    let ap = path.child("parameterNotFoundAction");
    if action.is_empty() {
        out.push(field::required(&ap, ""));
    } else if action != "Deny" && action != "Allow" {
        out.push(field::not_supported(&ap, Bad::s(action), &["Deny", "Allow"]));
    }
    out
}

/// `validateValidationActions`: known, unique, not both Deny and Warn, at least one.
fn validate_validation_actions(actions: &[&str], path: &Path) -> Vec<Cause> {
    let mut out = Vec::new();
    let mut seen = BTreeSet::new();
    for (i, a) in actions.iter().enumerate() {
        if !VALIDATION_ACTIONS.contains(a) {
            out.push(field::not_supported(&path.index(i), Bad::s(*a), &VALIDATION_ACTIONS));
        }
        if !seen.insert(*a) {
            out.push(field::duplicate(&path.index(i), Bad::s(*a)));
        }
    }
    if seen.contains("Deny") && seen.contains("Warn") {
        out.push(field::invalid(
            path,
            go_slice("admissionregistration.ValidationAction", actions),
            "must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)",
        ));
    }
    if seen.is_empty() {
        out.push(field::required(path, "at least one validation action is required"));
    }
    out
}

/// `ValidateValidatingAdmissionPolicyBinding` (create, and update: kube checks updates the
/// same way).
pub fn validating_admission_policy_binding(obj: &Value) -> Vec<Cause> {
    let mut out =
        meta::validate_object_meta(md(obj), false, names::name_is_dns_subdomain, &Path::new("metadata"), false);
    let empty = Value::Object(Map::new());
    let spec = obj.get("spec").unwrap_or(&empty);
    let sp = Path::new("spec");
    let policy = s(spec, "policyName");
    if policy.is_empty() {
        out.push(field::required(&sp.child("policyName"), ""));
    } else {
        out.extend(
            names::name_is_dns_subdomain(policy, false)
                .into_iter()
                .map(|m| field::invalid(&sp.child("policyName"), Bad::s(policy), &m)),
        );
    }
    if let Some(pr) = set(spec, "paramRef") {
        out.extend(validate_param_ref(pr, &sp.child("paramRef")));
    }
    if let Some(mr) = set(spec, "matchResources") {
        // kube's path has this spelling.
        out.extend(validate_match_resources(mr, &sp.child("matchResouces")));
    }
    out.extend(validate_validation_actions(&strings(spec, "validationActions"), &sp.child("validationActions")));
    out
}

#[cfg(test)]
mod tests;
