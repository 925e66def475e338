//! kube's Authz library (`library.Authz`, with `AuthzSelectors`): admission policies ask the
//! authorizer whether the requesting user (or a service account) may do something:
//! `authorizer.group('apps').resource('deployments').namespace('ns').check('create').allowed()`.
//!
//! Evaluation is synchronous and authorization is not, so a check asks an [`Authorizer`] that
//! answers from decisions it already has. When it has none, evaluation stops with
//! [`crate::EvalError::AuthorizationPending`] carrying the request; the caller obtains the
//! decision and evaluates again. A check costs 350,000 and an expression may cost 1,000,000, so
//! an expression makes at most two distinct checks and is evaluated at most three times.

use std::sync::Arc;

pub use crate::authorization::{Authorizer, AuthzRequest, AuthzTarget, Decision};
use crate::error::{EvalError, EvalResult};
pub use crate::ext::AuthzValue;
use crate::library::Ext;
use crate::names;
use crate::value::Value;

impl AuthzValue {
    /// The type's name.
    pub fn type_name(&self) -> &'static str {
        match self {
            AuthzValue::Authorizer(_) => "kubernetes.authorization.Authorizer",
            AuthzValue::PathCheck(..) => "kubernetes.authorization.PathCheck",
            AuthzValue::GroupCheck(..) => "kubernetes.authorization.GroupCheck",
            AuthzValue::ResourceCheck(..) => "kubernetes.authorization.ResourceCheck",
            AuthzValue::Decision(_) => "kubernetes.authorization.Decision",
        }
    }
}

/// The `authorizer` variable of a policy's expressions.
pub fn authorizer_value() -> Value {
    Value::Ext(Ext::Authz(Arc::new(AuthzValue::Authorizer(None))))
}

/// The `authorizer.requestResource` variable: a resource check of the request's resource.
pub fn request_resource_value(group: &str, resource: &str, subresource: &str, namespace: &str, name: &str) -> Value {
    let target = AuthzTarget::Resource {
        group: group.into(),
        resource: resource.into(),
        subresource: subresource.into(),
        namespace: namespace.into(),
        name: name.into(),
        field_selector: String::new(),
        label_selector: String::new(),
    };
    Value::Ext(Ext::Authz(Arc::new(AuthzValue::ResourceCheck(None, target))))
}

fn wrap(v: AuthzValue) -> EvalResult {
    Ok(Value::Ext(Ext::Authz(Arc::new(v))))
}

/// The authorizer functions.
pub fn call(name: &str, args: &[Value], authorizer: Option<&dyn Authorizer>) -> Option<EvalResult> {
    let Some(Value::Ext(Ext::Authz(this))) = args.first() else { return None };
    let s = |i: usize| match args.get(i) {
        Some(Value::String(s)) => Some(s.to_string()),
        _ => None,
    };
    Some(match (&**this, name) {
        (AuthzValue::Authorizer(sa), "path") => {
            let path = s(1)?;
            if path.trim().is_empty() {
                return Some(Err(EvalError::msg("path must not be empty")));
            }
            wrap(AuthzValue::PathCheck(sa.clone(), path))
        }
        (AuthzValue::Authorizer(sa), "group") => wrap(AuthzValue::GroupCheck(sa.clone(), s(1)?)),
        (AuthzValue::Authorizer(_), "serviceAccount") => {
            let (namespace, name) = (s(1)?, s(2)?);
            if !names::name_is_dns_subdomain(&name, false).is_empty() {
                return Some(Err(EvalError::msg("Invalid service account name")));
            }
            if !names::name_is_dns_label(&namespace, false).is_empty() {
                return Some(Err(EvalError::msg("Invalid service account namespace")));
            }
            wrap(AuthzValue::Authorizer(Some((namespace, name))))
        }
        (AuthzValue::GroupCheck(sa, group), "resource") => {
            let resource = s(1)?;
            if resource.trim().is_empty() {
                return Some(Err(EvalError::msg("resource must not be empty")));
            }
            wrap(AuthzValue::ResourceCheck(
                sa.clone(),
                AuthzTarget::Resource {
                    group: group.clone(),
                    resource,
                    subresource: String::new(),
                    namespace: String::new(),
                    name: String::new(),
                    field_selector: String::new(),
                    label_selector: String::new(),
                },
            ))
        }
        (
            AuthzValue::ResourceCheck(sa, target),
            "subresource" | "namespace" | "name" | "fieldSelector" | "labelSelector",
        ) => {
            let value = s(1)?;
            let mut target = target.clone();
            if let AuthzTarget::Resource { subresource, namespace, name: n, field_selector, label_selector, .. } =
                &mut target
            {
                match name {
                    "subresource" => *subresource = value,
                    "namespace" => *namespace = value,
                    "name" => *n = value,
                    "fieldSelector" => *field_selector = value,
                    _ => *label_selector = value,
                }
            }
            wrap(AuthzValue::ResourceCheck(sa.clone(), target))
        }
        (AuthzValue::PathCheck(sa, path), "check") => check(
            authorizer,
            AuthzRequest { service_account: sa.clone(), verb: s(1)?, target: AuthzTarget::Path(path.clone()) },
        ),
        (AuthzValue::ResourceCheck(sa, target), "check") => {
            check(authorizer, AuthzRequest { service_account: sa.clone(), verb: s(1)?, target: target.clone() })
        }
        (AuthzValue::Decision(d), "allowed") => Ok(Value::Bool(d.allowed)),
        (AuthzValue::Decision(d), "reason") => Ok(Value::string(d.reason.as_str())),
        (AuthzValue::Decision(d), "errored") => Ok(Value::Bool(d.error.is_some())),
        (AuthzValue::Decision(d), "error") => Ok(Value::string(d.error.as_deref().unwrap_or(""))),
        _ => return None,
    })
}

fn check(authorizer: Option<&dyn Authorizer>, request: AuthzRequest) -> EvalResult {
    let Some(authorizer) = authorizer else {
        // No authorizer to ask: kube's authorizer would have no opinion.
        return wrap(AuthzValue::Decision(Decision { allowed: false, reason: String::new(), error: None }));
    };
    match authorizer.decide(&request) {
        Some(d) => wrap(AuthzValue::Decision(d)),
        None => Err(EvalError::AuthorizationPending(Box::new(request))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct AllowPods;

    impl Authorizer for AllowPods {
        fn decide(&self, request: &AuthzRequest) -> Option<Decision> {
            match &request.target {
                AuthzTarget::Resource { resource, .. } if resource == "pods" => {
                    Some(Decision { allowed: true, reason: "pods are fine".into(), error: None })
                }
                AuthzTarget::Resource { resource, .. } if resource == "later" => None,
                _ => Some(Decision::default()),
            }
        }
    }

    fn step(v: Value, name: &str, args: &[&str]) -> EvalResult {
        let mut all = vec![v];
        all.extend(args.iter().map(|a| Value::string(*a)));
        call(name, &all, Some(&AllowPods)).expect("an authz function")
    }

    #[test]
    fn checks_build_requests_and_read_decisions() {
        let r = step(authorizer_value(), "group", &[""]).and_then(|g| step(g, "resource", &["pods"])).unwrap();
        let r = step(r, "namespace", &["ns"]).unwrap();
        let d = step(r, "check", &["get"]).unwrap();
        assert_eq!(step(d.clone(), "allowed", &[]), Ok(Value::Bool(true)));
        assert_eq!(step(d, "reason", &[]), Ok(Value::string("pods are fine")));
        let later = step(authorizer_value(), "group", &[""]).and_then(|g| step(g, "resource", &["later"])).unwrap();
        assert!(matches!(step(later, "check", &["get"]), Err(EvalError::AuthorizationPending(_))));
        assert_eq!(step(authorizer_value(), "path", &[" "]), Err(EvalError::msg("path must not be empty")));
        assert_eq!(
            step(authorizer_value(), "serviceAccount", &["ns", "Bad_Name"]),
            Err(EvalError::msg("Invalid service account name"))
        );
    }
}
