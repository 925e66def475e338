//! The review APIs, answered from the authorizer and authenticator in process (kube:
//! `pkg/registry/authorization/*review`, `pkg/registry/authentication/*review`): nothing is
//! stored, the object comes back with its status filled.
//!
//! - `SelfSubjectAccessReview`: may I do this? (`kubectl auth can-i`)
//! - `SubjectAccessReview`, `LocalSubjectAccessReview`: may this user do this?
//! - `SelfSubjectRulesReview`: what may I do in a namespace? (`kubectl auth can-i --list`)
//! - `SelfSubjectReview`: who am I? (`kubectl auth whoami`)
//! - `TokenReview`: whose token is this?

use actix_web::HttpResponse;
use actix_web::http::StatusCode;
use apimachinery::catalogue::ResourceDef;
use apimachinery::error::{ApiError, Cause};
use apimachinery::messages::{Authenticate, Credentials};
use apimachinery::request::UserInfo;
use apimachinery::validation::field::{self, Bad, Path};
use auth::Attributes;
use auth::rbac::PolicyRule;
use serde_json::{Value, json};

use crate::context::RequestContext;
use crate::negotiate::{Offer, decode_body, input_format, negotiate, respond};

/// Serves a create of one of the review resources.
pub async fn serve(ctx: &RequestContext<'_>, def: &ResourceDef, body: &[u8]) -> Result<HttpResponse, ApiError> {
    let mut review = decode_body(input_format(ctx.header("Content-Type"), true)?, body)?;
    check_kind(def, &review)?;
    let status = match def.resource.as_str() {
        "selfsubjectaccessreviews" => {
            let spec = &review["spec"];
            invalid(def, access_spec(spec, &Path::new("spec")))?;
            access(ctx, ctx.user.clone(), spec, "").await
        }
        "subjectaccessreviews" => {
            let spec = &review["spec"];
            invalid(def, subject_spec(spec))?;
            access(ctx, subject(spec), spec, "").await
        }
        "localsubjectaccessreviews" => {
            let namespace = ctx.info.namespace.clone();
            let spec = &review["spec"];
            let mut causes = subject_spec(spec);
            if spec.get("resourceAttributes").is_none_or(Value::is_null) {
                causes.push(field::invalid(
                    &Path::new("spec").child("nonResourceAttributes"),
                    Bad::Raw(field::go_struct(spec.get("nonResourceAttributes"))),
                    "disallowed on this kind of request",
                ));
            }
            invalid(def, causes)?;
            let asked = spec.pointer("/resourceAttributes/namespace").and_then(Value::as_str).unwrap_or("");
            if asked != namespace {
                return Err(ApiError::bad_request(format!(
                    "spec.resourceAttributes.namespace must match namespace: {namespace}"
                )));
            }
            access(ctx, subject(spec), spec, &namespace).await
        }
        "selfsubjectrulesreviews" => {
            let namespace = review.pointer("/spec/namespace").and_then(Value::as_str).unwrap_or("").to_string();
            rules(ctx, &namespace)
        }
        "selfsubjectreviews" => json!({"userInfo": user_info(&ctx.user)}),
        "tokenreviews" => token(ctx, &review).await?,
        _ => return Err(ApiError::resource_not_found()),
    };
    review["status"] = status;
    if let Some(md) = review.get_mut("metadata").and_then(Value::as_object_mut) {
        md.insert("creationTimestamp".into(), Value::Null);
    } else {
        review["metadata"] = json!({"creationTimestamp": null});
    }
    review["apiVersion"] = def.api_version().into();
    review["kind"] = def.kind.clone().into();
    let output = negotiate(ctx.header("Accept"), Offer::writes(def))?;
    Ok(respond(StatusCode::CREATED, output, &review, ctx.pretty()))
}

/// A body of another kind is refused as kube's decoder refuses it.
fn check_kind(def: &ResourceDef, review: &Value) -> Result<(), ApiError> {
    let kind = review.get("kind").and_then(Value::as_str).unwrap_or("");
    if !kind.is_empty() && kind != def.kind {
        return Err(ApiError::bad_request(format!(
            "the object provided is unrecognized (must be of type {}): {kind} in {}",
            def.kind,
            review.get("apiVersion").and_then(Value::as_str).unwrap_or("")
        )));
    }
    Ok(())
}

fn invalid(def: &ResourceDef, causes: Vec<Cause>) -> Result<(), ApiError> {
    if causes.is_empty() { Ok(()) } else { Err(ApiError::invalid(&def.group, &def.kind, "", causes)) }
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

/// The attributes a review's spec describes.
fn attributes(user: UserInfo, spec: &Value, namespace: &str) -> Attributes {
    let s = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    if let Some(r) = spec.get("resourceAttributes").filter(|v| !v.is_null()) {
        let ns = if namespace.is_empty() { s(r, "namespace") } else { namespace.to_string() };
        Attributes {
            user,
            verb: s(r, "verb"),
            is_resource_request: true,
            namespace: ns,
            api_group: s(r, "group"),
            api_version: s(r, "version"),
            resource: s(r, "resource"),
            subresource: s(r, "subresource"),
            name: s(r, "name"),
            ..Default::default()
        }
    } else {
        let n = &spec["nonResourceAttributes"];
        Attributes { user, verb: s(n, "verb"), path: s(n, "path"), ..Default::default() }
    }
}

/// `status` of an access review: kube's `SubjectAccessReviewStatus`.
async fn access(ctx: &RequestContext<'_>, user: UserInfo, spec: &Value, namespace: &str) -> Value {
    let a = attributes(user, spec, namespace);
    let (d, _) = ctx.server.authorizers.decide(&a).await;
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
    status
}

/// `status` of a SelfSubjectRulesReview: the requester's rules in `namespace`.
fn rules(ctx: &RequestContext<'_>, namespace: &str) -> Value {
    let a = Attributes { user: ctx.user.clone(), namespace: namespace.to_string(), ..Default::default() };
    let authorizers = &ctx.server.authorizers;
    let (rules, errors) = auth::authz::rules_for(&authorizers.modes, &authorizers.policy, &a);
    let resource_rules: Vec<Value> = rules
        .iter()
        .filter(|r| r.non_resource_urls.is_empty())
        .map(|r| {
            let mut v = json!({"verbs": r.verbs, "apiGroups": r.api_groups, "resources": r.resources});
            if !r.resource_names.is_empty() {
                v["resourceNames"] = json!(r.resource_names);
            }
            v
        })
        .collect();
    let non_resource_rules: Vec<Value> = rules
        .iter()
        .filter(|r: &&PolicyRule| !r.non_resource_urls.is_empty())
        .map(|r| json!({"verbs": r.verbs, "nonResourceURLs": r.non_resource_urls}))
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
async fn token(ctx: &RequestContext<'_>, review: &Value) -> Result<Value, ApiError> {
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
    Ok(match ctx.server.stages.authenticate.ask(Authenticate(creds), ctx.deadline).await {
        Ok(found) => {
            json!({"authenticated": true, "user": user_info(&found.user), "audiences": found.audiences})
        }
        Err(_) => json!({"user": {}, "error": "invalid bearer token"}),
    })
}
