//! kube's `PodSecurity` admission plugin over the decisions of this module: it reads the
//! namespace (and, when a namespace's enforce level tightens, its pods) from the cachers and
//! turns a [`Decision`] into the refusal, `Warning` headers and audit annotations.

use std::sync::Arc;
use std::time::Instant;

use apimachinery::error::ApiError;
use apimachinery::lookup::ObjectLookup;
use apimachinery::messages::{Admit, Operation};
use async_trait::async_trait;
use serde_json::Value;

use super::decision::{
    Config, Decision, NamespaceDecision, Request, Subject, before_namespace_lookup, existing_pods_warnings,
    namespace_decision, pod_check_deadline, pod_controller_decision, pod_decision, subject,
};
use crate::{AdmissionPlugin, Review};

/// The plugin: validating only, as kube's.
pub struct PodSecurity {
    config: Config,
    objects: Arc<dyn ObjectLookup>,
}

impl PodSecurity {
    /// The plugin with kube's default configuration (privileged everywhere unless labelled, no
    /// exemptions), reading through `objects`.
    pub fn new(objects: Arc<dyn ObjectLookup>) -> Self {
        PodSecurity { config: Config::default(), objects }
    }

    /// The plugin with `config` (a `PodSecurityConfiguration`'s defaults and exemptions).
    pub fn with_config(objects: Arc<dyn ObjectLookup>, config: Config) -> Self {
        PodSecurity { config, objects }
    }

    /// The namespace's labels, all the decision reads of it, as `{"metadata": {"labels": ..}}`.
    async fn namespace(&self, name: &str) -> Result<Value, String> {
        match crate::namespaces::lookup(self.objects.as_ref(), name).await {
            Ok(Some(ns)) => Ok(ns.labels_object()),
            Ok(None) => Err(format!("namespaces \"{name}\" not found")),
            Err(e) => Err(e.message),
        }
    }
}

fn apply(decision: Decision, review: &mut Review) -> Result<(), ApiError> {
    review.warnings.extend(decision.warnings);
    review.audit_annotations.extend(decision.audit_annotations);
    match decision.denial {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

#[async_trait(?Send)]
impl AdmissionPlugin for PodSecurity {
    fn name(&self) -> &'static str {
        "PodSecurity"
    }

    fn validates(&self) -> bool {
        true
    }

    async fn validate(&self, request: &Admit, object: &Value, review: &mut Review) -> Result<(), ApiError> {
        let t = &request.target;
        let Some(what) = subject(&t.group, &t.resource) else { return Ok(()) };
        if request.operation == Operation::Delete {
            return Ok(());
        }
        let req = Request {
            operation: request.operation,
            subresource: t.subresource.map(|s| s.name()),
            namespace: &t.namespace,
            username: &request.user.name,
        };
        let decision = match what {
            Subject::Namespace => match namespace_decision(&self.config, &req, object, request.old_object.as_deref()) {
                NamespaceDecision::Done(d) => d,
                NamespaceDecision::CheckPods { namespace, enforce } => {
                    let deadline = pod_check_deadline(Instant::now(), review.deadline.instant().map(|i| i.into_std()));
                    let pods = self.objects.list("", "pods", &namespace, "").await;
                    let pods = pods.as_deref().map_err(|_| ());
                    existing_pods_warnings(&self.config, &namespace, enforce, pods, Some(deadline))
                }
            },
            Subject::Pod | Subject::PodController => {
                if let Some(d) = before_namespace_lookup(&self.config, what, &req) {
                    return apply(d, review);
                }
                let namespace = self.namespace(&t.namespace).await;
                let namespace = namespace.as_ref().map_err(String::as_str);
                if what == Subject::Pod {
                    pod_decision(&self.config, &req, namespace, object, request.old_object.as_deref())
                } else {
                    pod_controller_decision(&self.config, &req, namespace, &t.resource, object)
                }
            }
        };
        apply(decision, review)
    }
}
