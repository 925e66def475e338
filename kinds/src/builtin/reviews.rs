//! The review resources of `authentication.k8s.io/v1` and `authorization.k8s.io/v1`: created
//! only, stored nowhere; the gateway answers them from the authenticator and authorizer
//! (kube: `pkg/registry/authentication`, `pkg/registry/authorization`).

use k8s_openapi::api::authentication::v1::{SelfSubjectReview, TokenReview};
use k8s_openapi::api::authorization::v1::{
    LocalSubjectAccessReview, SelfSubjectAccessReview, SelfSubjectRulesReview, SubjectAccessReview,
};

use apimachinery::catalogue::{DefaultStrategy, ResourceDef};

fn review(group: &str, resource: &str, kind: &str) -> ResourceDef {
    ResourceDef::new(group, "v1", resource, kind, DefaultStrategy).cluster_scoped().by_gateway(&["create"])
}

/// `authentication.k8s.io/v1`, in kube's discovery order.
pub(super) fn authentication() -> Vec<ResourceDef> {
    vec![
        review("authentication.k8s.io", "selfsubjectreviews", "SelfSubjectReview").schema::<SelfSubjectReview>(),
        review("authentication.k8s.io", "tokenreviews", "TokenReview").schema::<TokenReview>(),
    ]
}

/// `authorization.k8s.io/v1`, in kube's discovery order.
pub(super) fn authorization() -> Vec<ResourceDef> {
    let mut local = review("authorization.k8s.io", "localsubjectaccessreviews", "LocalSubjectAccessReview");
    local.namespaced = true;
    vec![
        local.schema::<LocalSubjectAccessReview>(),
        review("authorization.k8s.io", "selfsubjectaccessreviews", "SelfSubjectAccessReview")
            .schema::<SelfSubjectAccessReview>(),
        review("authorization.k8s.io", "selfsubjectrulesreviews", "SelfSubjectRulesReview")
            .schema::<SelfSubjectRulesReview>(),
        review("authorization.k8s.io", "subjectaccessreviews", "SubjectAccessReview").schema::<SubjectAccessReview>(),
    ]
}
