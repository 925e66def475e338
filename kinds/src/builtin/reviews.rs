//! The review resources of `authentication.k8s.io/v1` and `authorization.k8s.io/v1`: created
//! only, stored nowhere; each is an action that asks the server's authenticators or
//! authorizers and answers the review with its status filled (kube:
//! `pkg/registry/authentication/*review`, `pkg/registry/authorization/*review`).
//!
//! - `SelfSubjectAccessReview`: may I do this? (`kubectl auth can-i`)
//! - `SubjectAccessReview`, `LocalSubjectAccessReview`: may this user do this?
//! - `SelfSubjectRulesReview`: what may I do in a namespace? (`kubectl auth can-i --list`)
//! - `SelfSubjectReview`: who am I? (`kubectl auth whoami`)
//! - `TokenReview`: whose token is this?

use std::sync::Arc;

use async_trait::async_trait;
use k8s_openapi::api::authentication::v1::{SelfSubjectReview, TokenReview};
use k8s_openapi::api::authorization::v1::{
    LocalSubjectAccessReview, SelfSubjectAccessReview, SelfSubjectRulesReview, SubjectAccessReview,
};
use serde_json::{Value, json};

use apimachinery::action::{Action, ActionContext, Actions};
use apimachinery::catalogue::{DefaultStrategy, ResourceDef};
use apimachinery::error::{ApiError, Cause};
use apimachinery::messages::{Credentials, Target};
use apimachinery::request::{RequestInfo, UserInfo};
use apimachinery::validation::field::{self, Bad, Path};

const AUTHENTICATION: &str = "authentication.k8s.io";
const AUTHORIZATION: &str = "authorization.k8s.io";

fn review(group: &str, resource: &str, kind: &str) -> ResourceDef {
    ResourceDef::new(group, "v1", resource, kind, DefaultStrategy).cluster_scoped().by_gateway(&["create"])
}

/// `authentication.k8s.io/v1`, in kube's discovery order.
pub(super) fn authentication() -> Vec<ResourceDef> {
    vec![
        review(AUTHENTICATION, "selfsubjectreviews", "SelfSubjectReview").schema::<SelfSubjectReview>(),
        review(AUTHENTICATION, "tokenreviews", "TokenReview").schema::<TokenReview>(),
    ]
}

/// `authorization.k8s.io/v1`, in kube's discovery order.
pub(super) fn authorization() -> Vec<ResourceDef> {
    let mut local = review(AUTHORIZATION, "localsubjectaccessreviews", "LocalSubjectAccessReview");
    local.namespaced = true;
    vec![
        local.schema::<LocalSubjectAccessReview>(),
        review(AUTHORIZATION, "selfsubjectaccessreviews", "SelfSubjectAccessReview")
            .schema::<SelfSubjectAccessReview>(),
        review(AUTHORIZATION, "selfsubjectrulesreviews", "SelfSubjectRulesReview").schema::<SelfSubjectRulesReview>(),
        review(AUTHORIZATION, "subjectaccessreviews", "SubjectAccessReview").schema::<SubjectAccessReview>(),
    ]
}

/// Registers each review's action.
pub(super) fn register(actions: &mut Actions) {
    let reviews = [
        (AUTHENTICATION, "selfsubjectreviews", "SelfSubjectReview", Question::WhoAmI),
        (AUTHENTICATION, "tokenreviews", "TokenReview", Question::Token),
        (AUTHORIZATION, "localsubjectaccessreviews", "LocalSubjectAccessReview", Question::LocalSubjectAccess),
        (AUTHORIZATION, "selfsubjectaccessreviews", "SelfSubjectAccessReview", Question::SelfAccess),
        (AUTHORIZATION, "selfsubjectrulesreviews", "SelfSubjectRulesReview", Question::SelfRules),
        (AUTHORIZATION, "subjectaccessreviews", "SubjectAccessReview", Question::SubjectAccess),
    ];
    for (group, resource, kind, question) in reviews {
        actions.insert(group, resource, None, Arc::new(Review { group, kind, question }));
    }
}

/// What a review asks.
#[derive(Clone, Copy)]
enum Question {
    SelfAccess,
    SubjectAccess,
    LocalSubjectAccess,
    SelfRules,
    WhoAmI,
    Token,
}

/// The create of one review kind.
struct Review {
    group: &'static str,
    kind: &'static str,
    question: Question,
}

#[async_trait(?Send)]
impl Action for Review {
    async fn create(&self, ctx: &dyn ActionContext, target: Target, mut review: Value) -> Result<Value, ApiError> {
        self.check_kind(&review)?;
        let spec = &review["spec"];
        let status = match self.question {
            Question::SelfAccess => {
                self.invalid(access_spec(spec, &Path::new("spec")))?;
                access(ctx, ctx.user().clone(), spec, "").await?
            }
            Question::SubjectAccess => {
                self.invalid(subject_spec(spec))?;
                access(ctx, subject(spec), spec, "").await?
            }
            Question::LocalSubjectAccess => {
                let namespace = target.namespace.as_str();
                let mut causes = subject_spec(spec);
                if spec.get("resourceAttributes").is_none_or(Value::is_null) {
                    causes.push(field::invalid(
                        &Path::new("spec").child("nonResourceAttributes"),
                        Bad::Raw(field::go_struct(spec.get("nonResourceAttributes"))),
                        "disallowed on this kind of request",
                    ));
                }
                self.invalid(causes)?;
                let asked = spec.pointer("/resourceAttributes/namespace").and_then(Value::as_str).unwrap_or("");
                if asked != namespace {
                    return Err(ApiError::bad_request(format!(
                        "spec.resourceAttributes.namespace must match namespace: {namespace}"
                    )));
                }
                access(ctx, subject(spec), spec, namespace).await?
            }
            Question::SelfRules => {
                let namespace = spec.get("namespace").and_then(Value::as_str).unwrap_or("");
                rules(ctx, namespace)
            }
            Question::WhoAmI => json!({"userInfo": user_info(ctx.user())}),
            Question::Token => token(ctx, &review).await?,
        };
        review["status"] = status;
        if let Some(md) = review.get_mut("metadata").and_then(Value::as_object_mut) {
            md.insert("creationTimestamp".into(), Value::Null);
        } else {
            review["metadata"] = json!({"creationTimestamp": null});
        }
        review["apiVersion"] = format!("{}/v1", self.group).into();
        review["kind"] = self.kind.into();
        Ok(review)
    }
}

impl Review {
    /// A body of another kind is refused as kube's decoder refuses it.
    fn check_kind(&self, review: &Value) -> Result<(), ApiError> {
        let kind = review.get("kind").and_then(Value::as_str).unwrap_or("");
        if !kind.is_empty() && kind != self.kind {
            return Err(ApiError::bad_request(format!(
                "the object provided is unrecognized (must be of type {}): {kind} in {}",
                self.kind,
                review.get("apiVersion").and_then(Value::as_str).unwrap_or("")
            )));
        }
        Ok(())
    }

    fn invalid(&self, causes: Vec<Cause>) -> Result<(), ApiError> {
        if causes.is_empty() { Ok(()) } else { Err(ApiError::invalid(self.group, self.kind, "", causes)) }
    }
}

/// `ValidateSelfSubjectAccessReviewSpec`: exactly one of the two attribute kinds.
fn access_spec(spec: &Value, path: &Path) -> Vec<Cause> {
    let has = |k: &str| spec.get(k).is_some_and(|v| !v.is_null());
    let mut out = Vec::new();
    if has("resourceAttributes") && has("nonResourceAttributes") {
        out.push(field::invalid(
            &path.child("nonResourceAttributes"),
            Bad::Raw(field::go_struct(spec.get("nonResourceAttributes"))),
            "cannot be specified in combination with resourceAttributes",
        ));
    }
    if !has("resourceAttributes") && !has("nonResourceAttributes") {
        out.push(field::invalid(
            &path.child("resourceAttributes"),
            Bad::Null,
            "exactly one of nonResourceAttributes or resourceAttributes must be specified",
        ));
    }
    out
}

/// `ValidateSubjectAccessReviewSpec`: the attributes, and a user or a group.
fn subject_spec(spec: &Value) -> Vec<Cause> {
    let mut out = access_spec(spec, &Path::new("spec"));
    let user = spec.get("user").and_then(Value::as_str).unwrap_or("");
    let groups = spec.get("groups").and_then(Value::as_array).is_some_and(|g| !g.is_empty());
    if user.is_empty() && !groups {
        out.push(field::invalid(
            &Path::new("spec").child("user"),
            Bad::s(user),
            "at least one of user or group must be specified",
        ));
    }
    out
}

/// The user a SubjectAccessReview asks about.
fn subject(spec: &Value) -> UserInfo {
    let strings = |k: &str| -> Vec<String> {
        spec.get(k)
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(|s| s.as_str().map(String::from)).collect())
            .unwrap_or_default()
    };
    let extra = spec.get("extra").and_then(Value::as_object).map(|m| {
        m.iter()
            .map(|(k, v)| {
                let values = v.as_array().map(|a| a.iter().filter_map(|s| s.as_str().map(String::from)).collect());
                (k.clone(), values.unwrap_or_default())
            })
            .collect()
    });
    UserInfo {
        name: spec.get("user").and_then(Value::as_str).unwrap_or("").into(),
        uid: spec.get("uid").and_then(Value::as_str).unwrap_or("").into(),
        groups: strings("groups"),
        extra: extra.unwrap_or_default(),
    }
}

/// The request a review's spec describes: its resource attributes (in `namespace` when the
/// review is namespaced), or its non-resource ones.
fn attributes(spec: &Value, namespace: &str) -> RequestInfo {
    let s = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    if let Some(r) = spec.get("resourceAttributes").filter(|v| !v.is_null()) {
        RequestInfo {
            is_resource_request: true,
            verb: s(r, "verb"),
            namespace: if namespace.is_empty() { s(r, "namespace") } else { namespace.to_string() },
            api_group: s(r, "group"),
            api_version: s(r, "version"),
            resource: s(r, "resource"),
            subresource: s(r, "subresource"),
            name: s(r, "name"),
            ..Default::default()
        }
    } else {
        let n = &spec["nonResourceAttributes"];
        RequestInfo { verb: s(n, "verb"), path: s(n, "path"), ..Default::default() }
    }
}

/// `status` of an access review: kube's `SubjectAccessReviewStatus`.
async fn access(ctx: &dyn ActionContext, user: UserInfo, spec: &Value, namespace: &str) -> Result<Value, ApiError> {
    let d = ctx.authorize(user, attributes(spec, namespace)).await?;
    let mut status = json!({"allowed": d.allowed});
    if d.denied {
        status["denied"] = true.into();
    }
    if !d.reason.is_empty() {
        status["reason"] = d.reason.into();
    }
    if !d.error.is_empty() {
        status["evaluationError"] = d.error.into();
    }
    Ok(status)
}

/// `status` of a SelfSubjectRulesReview: the requester's rules in `namespace`, resource rules
/// apart from non-resource ones.
fn rules(ctx: &dyn ActionContext, namespace: &str) -> Value {
    let (rules, errors) = ctx.rules(ctx.user(), namespace);
    let list = |rule: &Value, key: &str| rule.get(key).cloned().unwrap_or_else(|| json!([]));
    let (non_resource, resource): (Vec<&Value>, Vec<&Value>) =
        rules.iter().partition(|r| r.get("nonResourceURLs").is_some());
    let resource_rules: Vec<Value> = resource
        .into_iter()
        .map(|r| {
            let mut v = json!({"verbs": list(r, "verbs"), "apiGroups": list(r, "apiGroups"), "resources": list(r, "resources")});
            if let Some(names) = r.get("resourceNames") {
                v["resourceNames"] = names.clone();
            }
            v
        })
        .collect();
    let non_resource_rules: Vec<Value> = non_resource
        .into_iter()
        .map(|r| json!({"verbs": list(r, "verbs"), "nonResourceURLs": list(r, "nonResourceURLs")}))
        .collect();
    let mut status = json!({"resourceRules": resource_rules, "nonResourceRules": non_resource_rules, "incomplete": !errors.is_empty()});
    if !errors.is_empty() {
        status["evaluationError"] = errors.join(", ").into();
    }
    status
}

/// kube's `UserInfo` JSON, without its empty members.
fn user_info(user: &UserInfo) -> Value {
    let mut info = json!({"username": user.name});
    if !user.uid.is_empty() {
        info["uid"] = user.uid.clone().into();
    }
    if !user.groups.is_empty() {
        info["groups"] = json!(user.groups);
    }
    if !user.extra.is_empty() {
        info["extra"] = json!(user.extra);
    }
    info
}

/// `status` of a TokenReview: the token run through the authenticators.
async fn token(ctx: &dyn ActionContext, review: &Value) -> Result<Value, ApiError> {
    let token = review.pointer("/spec/token").and_then(Value::as_str).unwrap_or("");
    if token.is_empty() {
        return Err(ApiError::bad_request("token is required for TokenReview in authentication"));
    }
    let audiences: Vec<String> = review
        .pointer("/spec/audiences")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect())
        .unwrap_or_default();
    let creds = Credentials { bearer_token: Some(token.to_string()), client_certificate: None, audiences };
    Ok(match ctx.authenticate(creds).await {
        Ok(found) => {
            json!({"authenticated": true, "user": user_info(&found.user), "audiences": found.audiences})
        }
        Err(_) => json!({"user": {}, "error": "invalid bearer token"}),
    })
}
