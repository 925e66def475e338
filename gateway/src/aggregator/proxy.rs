//! Passing a request for a remote group version on to its extension server (kube-aggregator's
//! `proxyHandler`).
//!
//! The request goes to an endpoint of the APIService's Service, over TLS trusting its
//! `caBundle` for `<service>.<namespace>.svc` (or trusting anything with
//! `insecureSkipTLSVerify`), presenting `--proxy-client-cert-file`. It keeps its method, path
//! and body; its query is re-encoded as Go's `url.Values.Encode` does (keys sorted); its
//! credentials (`Authorization`) and any `X-Remote-*` or `Impersonate-*` header it came with
//! are dropped, and the identity the chain settled on is sent as `X-Remote-User`,
//! `X-Remote-Group` (one per group) and `X-Remote-Extra-<key>` (one per value, the key
//! escaped as client-go escapes it). The answer is streamed back as it comes (watches
//! included); a redirect is refused with 502, as kube's
//! `--aggregator-reject-forwarding-redirects` does.
//!
//! Upgrades (exec, attach, port-forward on aggregated resources) are not passed on: the
//! backend gets the request without its `Upgrade` header and answers it as a plain request.

use std::time::Duration;

use actix_web::body::SizedStream;
use actix_web::http::StatusCode;
use actix_web::http::header::{HeaderMap, HeaderName, HeaderValue};
use actix_web::{HttpRequest, HttpResponse, web};
use actors::Deadline;
use apimachinery::error::{ApiError, Reason};
use apimachinery::lookup::EndpointError;
use apimachinery::request::UserInfo;
use kinds::apiregistration::GROUP;
use webhook_client::CallError;

use super::{Aggregator, ApiService};

/// How long a legacy discovery document of a remote group version may take (kube's
/// `aggregatedDiscoveryTimeout`).
const DISCOVERY_TIMEOUT: Duration = Duration::from_secs(5);

/// Why a request was not passed on, or got no answer. Mapped to a `Status` once, naming the
/// APIService (kube answers these with plain text; a Status says which layer failed).
#[derive(Debug, thiserror::Error)]
pub enum ProxyError {
    /// The APIService's `Available` condition is not `True`.
    #[error("service unavailable: APIService {name:?} is not available{}", why(condition))]
    Unavailable {
        /// The APIService.
        name: String,
        /// Its condition's reason and message, if it has one yet.
        condition: Option<(String, String)>,
    },
    /// Its Service has no endpoint to send the request to.
    #[error("service unavailable: APIService {name:?}: {why}")]
    NoEndpoint {
        /// The APIService.
        name: String,
        /// Why.
        why: EndpointError,
    },
    /// The TLS client for its backend could not be built (a bad `caBundle`, a missing one).
    #[error("APIService {name:?}: {why}")]
    Client {
        /// The APIService.
        name: String,
        /// Why.
        why: String,
    },
    /// The backend could not be reached, or did not answer in time.
    #[error("APIService {name:?}: error trying to reach service: {why}")]
    Unreachable {
        /// The APIService.
        name: String,
        /// Why, in Go's words where kube quotes them.
        why: String,
    },
    /// The backend answered with a redirect, which is not followed.
    #[error("the backend attempted to redirect this request, which is not permitted")]
    Redirect,
}

fn why(condition: &Option<(String, String)>) -> String {
    match condition {
        Some((reason, message)) if !message.is_empty() => format!(" ({reason}): {message}"),
        Some((reason, _)) => format!(" ({reason})"),
        None => ": not checked yet".into(),
    }
}

impl From<ProxyError> for ApiError {
    fn from(e: ProxyError) -> Self {
        let name = match &e {
            ProxyError::Unavailable { name, .. }
            | ProxyError::NoEndpoint { name, .. }
            | ProxyError::Client { name, .. }
            | ProxyError::Unreachable { name, .. } => Some(name.clone()),
            ProxyError::Redirect => None,
        };
        let mut status = match e {
            ProxyError::Client { .. } => ApiError::internal(&e),
            ProxyError::Redirect => {
                // No StatusReason is 502: a Status without a reason, as kube's plain errors.
                let mut bad_gateway = ApiError::new(Reason::Unknown, e.to_string());
                bad_gateway.code = 502;
                bad_gateway
            }
            _ => ApiError::unavailable(e.to_string()),
        };
        if let Some(name) = name {
            (status.group, status.kind, status.name) = (Some(GROUP.into()), Some("apiservices".into()), Some(name));
        }
        status
    }
}

/// Headers a proxy does not pass on (Go's `httputil` hop-by-hop list).
const HOP_BY_HOP: &[&str] = &[
    "connection",
    "proxy-connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
];

/// Whether a request header stays behind: hop-by-hop, the body's framing (the client sets
/// it again), the host (the endpoint's), the credentials, and every identity header a caller
/// could forge.
fn dropped_from_request(name: &str) -> bool {
    HOP_BY_HOP.contains(&name)
        || matches!(name, "host" | "content-length" | "authorization")
        || name.starts_with("x-remote-")
        || name.starts_with("impersonate-")
}

/// Passes `req` on to `service`'s backend as `user`, its answer streamed back.
pub async fn forward(
    aggregator: &Aggregator,
    service: &ApiService,
    req: &HttpRequest,
    payload: web::Payload,
    user: &UserInfo,
    deadline: Deadline,
    audit_id: &str,
) -> Result<HttpResponse, ProxyError> {
    let name = &service.spec.name;
    if !service.available {
        return Err(ProxyError::Unavailable { name: name.clone(), condition: service.condition.clone() });
    }
    let client = service.client.as_ref().map_err(|why| ProxyError::Client { name: name.clone(), why: why.clone() })?;
    let endpoint =
        aggregator.endpoint(service).await.map_err(|why| ProxyError::NoEndpoint { name: name.clone(), why })?;
    let query = go_query_encode(req.query_string());
    let url = format!("https://{endpoint}{}{}{query}", req.path(), if query.is_empty() { "" } else { "?" });

    let mut outgoing = client.http().request(req.method().clone(), &url);
    let headers = outgoing.headers_mut();
    let connection_named: Vec<String> = req
        .headers()
        .get_all("connection")
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(',').map(|t| t.trim().to_ascii_lowercase()))
        .collect();
    for (k, v) in req.headers() {
        if !dropped_from_request(k.as_str()) && !connection_named.iter().any(|c| c == k.as_str()) {
            headers.append(k.clone(), v.clone());
        }
    }
    set_identity(headers, user);
    if let Ok(id) = HeaderValue::from_str(audit_id) {
        headers.insert(HeaderName::from_static("audit-id"), id);
    }
    if let Some(peer) = req.peer_addr() {
        let forwarded = match req.headers().get("x-forwarded-for").and_then(|v| v.to_str().ok()) {
            Some(prior) => format!("{prior}, {}", peer.ip()),
            None => peer.ip().to_string(),
        };
        if let Ok(v) = HeaderValue::from_str(&forwarded) {
            headers.insert(HeaderName::from_static("x-forwarded-for"), v);
        }
    }
    // The response head must come within what is left of the request's time (a watch's: its
    // setup's); a discovery document within kube's 5 s.
    let is_discovery = req.path().trim_end_matches('/').matches('/').count() == 3;
    let left = deadline.remaining().unwrap_or(Duration::from_secs(60));
    outgoing = outgoing.timeout(if is_discovery { left.min(DISCOVERY_TIMEOUT) } else { left });

    let length = req.headers().get("content-length").and_then(|v| v.to_str().ok()).and_then(|v| v.parse::<u64>().ok());
    let chunked = req.headers().contains_key("transfer-encoding");
    let sent = match (length, chunked) {
        (Some(0), _) | (None, false) => outgoing.send().await,
        (Some(len), _) => outgoing.send_body(SizedStream::new(len, payload)).await,
        (None, true) => outgoing.send_stream(payload).await,
    };
    let response = sent.map_err(|e| {
        aggregator.recheck(name);
        let why = match webhook_client::send_error(&url, &e) {
            CallError::DeadlineExceeded => "context deadline exceeded".to_string(),
            CallError::Failed(why) => why,
        };
        ProxyError::Unreachable { name: name.clone(), why }
    })?;

    let status = response.status();
    if aggregator.options.reject_redirects && status.is_redirection() && response.headers().contains_key("location") {
        return Err(ProxyError::Redirect);
    }
    let mut answer = HttpResponse::build(status);
    for (k, v) in response.headers() {
        if !HOP_BY_HOP.contains(&k.as_str()) && k.as_str() != "content-length" {
            answer.append_header((k.clone(), v.clone()));
        }
    }
    let length =
        response.headers().get("content-length").and_then(|v| v.to_str().ok()).and_then(|v| v.parse::<u64>().ok());
    let bodiless = req.method() == actix_web::http::Method::HEAD
        || matches!(status, StatusCode::NO_CONTENT | StatusCode::NOT_MODIFIED);
    Ok(match length {
        _ if bodiless => answer.finish(),
        // Streamed as it comes: a watch's events reach the client as the backend writes them.
        Some(len) => answer.body(SizedStream::new(len, response)),
        None => answer.streaming(response),
    })
}

/// The caller's identity as client-go's `SetAuthProxyHeaders` sends it.
fn set_identity(headers: &mut HeaderMap, user: &UserInfo) {
    let mut add = |name: &str, value: &str| {
        if let (Ok(n), Ok(v)) = (HeaderName::try_from(name), HeaderValue::from_str(value)) {
            headers.append(n, v);
        }
    };
    add("x-remote-user", &user.name);
    for group in &user.groups {
        add("x-remote-group", group);
    }
    for (key, values) in &user.extra {
        let name = format!("x-remote-extra-{}", header_key_escape(key));
        for value in values {
            add(&name, value);
        }
    }
}

/// client-go's `headerKeyEscape`: every byte that is not an HTTP token character, and `%`
/// itself, as `%XX` (the receiver lower-cases the key and path-unescapes it).
pub fn header_key_escape(key: &str) -> String {
    let token = |b: u8| b.is_ascii_alphanumeric() || b"!#$&'*+-.^_`|~".contains(&b);
    let mut out = String::with_capacity(key.len());
    for b in key.bytes() {
        if token(b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// A query re-encoded as Go's `url.Values.Encode` encodes what `URL.Query()` parsed: pairs
/// sorted by key (a key's values in their order), each escaped by `url.QueryEscape`.
pub fn go_query_encode(raw: &str) -> String {
    let mut pairs: Vec<(String, String)> =
        web::Query::<Vec<(String, String)>>::from_query(raw).map(|q| q.into_inner()).unwrap_or_default();
    pairs.sort_by(|a, b| a.0.cmp(&b.0));
    let pairs: Vec<String> = pairs.iter().map(|(k, v)| format!("{}={}", query_escape(k), query_escape(v))).collect();
    pairs.join("&")
}

/// Go's `url.QueryEscape`: unreserved characters kept, space as `+`, the rest `%XX`.
fn query_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => out.push(b as char),
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extra_keys_are_escaped_as_client_go_escapes_them() {
        assert_eq!(
            header_key_escape("authentication.kubernetes.io/pod-name"),
            "authentication.kubernetes.io%2Fpod-name"
        );
        assert_eq!(header_key_escape("scopes"), "scopes");
        assert_eq!(header_key_escape("100%"), "100%25");
        assert_eq!(header_key_escape("a b=c"), "a%20b%3Dc");
        assert_eq!(header_key_escape("ü"), "%C3%BC");
    }

    #[test]
    fn identity_headers_carry_user_groups_and_extras() {
        let user = UserInfo {
            name: "alice".into(),
            groups: vec!["devs".into(), "system:authenticated".into()],
            extra: [("authentication.kubernetes.io/pod-name".to_string(), vec!["p1".to_string(), "p2".to_string()])]
                .into(),
            ..Default::default()
        };
        let mut headers = HeaderMap::new();
        set_identity(&mut headers, &user);
        let all = |n: &str| headers.get_all(n).map(|v| v.to_str().unwrap().to_string()).collect::<Vec<_>>();
        assert_eq!(all("x-remote-user"), ["alice"]);
        assert_eq!(all("x-remote-group"), ["devs", "system:authenticated"]);
        assert_eq!(all("x-remote-extra-authentication.kubernetes.io%2fpod-name"), ["p1", "p2"]);
    }

    #[test]
    fn forged_identity_and_credentials_stay_behind() {
        for h in ["authorization", "x-remote-user", "x-remote-extra-scopes", "impersonate-user", "connection", "host"] {
            assert!(dropped_from_request(h), "{h}");
        }
        for h in ["accept", "content-type", "user-agent", "x-forwarded-for"] {
            assert!(!dropped_from_request(h), "{h}");
        }
    }

    #[test]
    fn queries_are_re_encoded_sorted_as_go_encodes_them() {
        assert_eq!(
            go_query_encode("watch=true&labelSelector=a%3Db,c&limit=5"),
            "labelSelector=a%3Db%2Cc&limit=5&watch=true"
        );
        assert_eq!(go_query_encode("b=2&a=x+y&b=1"), "a=x+y&b=2&b=1");
        assert_eq!(go_query_encode(""), "");
    }

    #[test]
    fn errors_name_the_apiservice_and_their_layer() {
        let unavailable = ApiError::from(ProxyError::Unavailable {
            name: "v1.example.com".into(),
            condition: Some(("FailedDiscoveryCheck".into(), "no answer".into())),
        });
        assert_eq!((unavailable.code, unavailable.reason), (503, Reason::ServiceUnavailable));
        assert_eq!(
            unavailable.message,
            "service unavailable: APIService \"v1.example.com\" is not available (FailedDiscoveryCheck): no answer"
        );
        assert_eq!(unavailable.name.as_deref(), Some("v1.example.com"));
        let redirect = ApiError::from(ProxyError::Redirect);
        assert_eq!(redirect.code, 502);
        assert_eq!(redirect.to_status()["code"], 502);
        let client = ApiError::from(ProxyError::Client { name: "v1.x".into(), why: "bad caBundle".into() });
        assert_eq!(client.code, 500);
    }
}
