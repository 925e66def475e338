//! kube's audit filter, which records each request at its stages (`RequestReceived`,
//! `ResponseStarted`, `ResponseComplete`, `Panic`) under an audit policy. A pass-through for
//! now: it holds its place in the handler chain, between authentication and impersonation, so
//! the auth work can fill it in without moving anything; no audit policy or backend exists yet.

use apimachinery::request::{RequestInfo, UserInfo};

/// Records that `request`, from `user`, was received (audit stage `RequestReceived`). Records
/// nothing yet.
pub fn request_received(_audit_id: &str, _user: &UserInfo, _request: &RequestInfo) {}
