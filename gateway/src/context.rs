//! What a handler knows about its request, once the handler chain has let it through.

use actix_web::HttpRequest;
use actors::Deadline;
use apimachinery::options::Params;
use apimachinery::request::{RequestInfo, UserInfo};

use crate::state::ServerState;

/// A request on its way through the handlers.
pub struct RequestContext<'a> {
    /// The HTTP request.
    pub req: &'a HttpRequest,
    /// Parsed request info.
    pub info: &'a RequestInfo,
    /// Query parameters.
    pub query: Params,
    /// The user the request acts for.
    pub user: UserInfo,
    /// When the request's work stops being worth doing (`--request-timeout`, `?timeout=`); for a
    /// watch, when its setup must be done by.
    pub deadline: Deadline,
    /// Shared server state.
    pub server: &'a ServerState,
}

impl RequestContext<'_> {
    /// A request header.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.req.headers().get(name).and_then(|v| v.to_str().ok())
    }

    /// Whether responses should be indented (`?pretty=true`, or curl/wget as kube guesses).
    pub fn pretty(&self) -> bool {
        match self.query.get("pretty") {
            Some(p) => p == "true" || p == "1",
            None => self.header("User-Agent").is_some_and(|ua| ua.starts_with("curl") || ua.starts_with("Wget")),
        }
    }
}
