//! What an authorization check asks and what it is answered: the data kube's authorizer
//! library and the evaluator share (a pending check stops an evaluation with its request).

/// What a check asks.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct AuthzRequest {
    /// The service account whose permission is checked (`serviceAccount(ns, name)`), instead
    /// of the requesting user.
    pub service_account: Option<(String, String)>,
    /// The verb (`get`, `create`, or an HTTP verb for paths).
    pub verb: String,
    /// A non-resource path, or a resource.
    pub target: AuthzTarget,
}

/// A check's target.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum AuthzTarget {
    /// A non-resource URL path.
    Path(String),
    /// A resource, in any version (kube asks with `apiVersion: *`).
    Resource {
        /// The API group.
        group: String,
        /// The resource.
        resource: String,
        /// The subresource.
        subresource: String,
        /// The namespace.
        namespace: String,
        /// The name.
        name: String,
        /// A field selector the request is limited by.
        field_selector: String,
        /// A label selector the request is limited by.
        label_selector: String,
    },
}

/// What the authorizer decided.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Decision {
    /// Allowed.
    pub allowed: bool,
    /// Why.
    pub reason: String,
    /// The authorizer's error, if it failed.
    pub error: Option<String>,
}

/// Answers authorization checks from decisions at hand.
pub trait Authorizer: Send + Sync {
    /// The decision for `request`, or `None` if the caller has yet to obtain it.
    fn decide(&self, request: &AuthzRequest) -> Option<Decision>;
}
