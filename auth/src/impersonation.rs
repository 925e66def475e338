//! kube's impersonation filter: `Impersonate-User`, `Impersonate-Group`, `Impersonate-Uid` and
//! `Impersonate-Extra-*` headers, each checked against the `impersonate` verb, replace the
//! authenticated user for the rest of the chain. A pass-through for now, in its place between
//! audit and flow control: the request keeps the identity it authenticated with (so the headers
//! never grant anything), until the auth work checks and applies them.

use apimachinery::error::ApiError;
use apimachinery::request::UserInfo;

/// What a request asks to be treated as, from its `Impersonate-*` headers.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ImpersonationRequest {
    /// `Impersonate-User`.
    pub user: Option<String>,
    /// `Impersonate-Group`, repeated.
    pub groups: Vec<String>,
    /// `Impersonate-Uid`.
    pub uid: Option<String>,
}

/// The user the rest of the chain acts for: for now always the authenticated one.
pub fn impersonate(authenticated: UserInfo, _request: &ImpersonationRequest) -> Result<UserInfo, ApiError> {
    Ok(authenticated)
}
