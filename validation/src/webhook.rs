//! Where a webhook is reached: `k8s.io/apiserver/pkg/util/webhook`'s `ValidateWebhookURL` and
//! `ValidateWebhookService`, which admission webhooks (and, later, CRD conversion webhooks)
//! share.
//!
//! kube parses the URL with Go's `net/url.Parse`; [`parse_url`] is kube-cel's reproduction of
//! it, which reports Go's errors as Go words them (`parse "https://[::1": missing ']' in host`).

use kube_cel::ext::Url;

use super::field::{self, Bad, Path};
use super::names;
use apimachinery::error::Cause;

/// Go's `url.Parse`, as kube-cel's URLs library has it (one parser of Go's URLs for the
/// server); the error is the text of the `*url.Error` it returns.
pub fn parse_url(raw: &str) -> Result<Url, String> {
    Url::parse(raw)
}

/// `webhook.ValidateWebhookURL`: a parseable URL; with `force_https`, the `https` scheme; a
/// host; no user information, fragment or query.
pub fn validate_webhook_url(path: &Path, raw: &str, force_https: bool) -> Vec<Cause> {
    const FORM: &str = "; desired format: https://host[/path]";
    let mut out = Vec::new();
    match parse_url(raw) {
        Err(e) => out.push(field::required(path, &format!("url must be a valid URL: {e}{FORM}"))),
        Ok(u) => {
            if force_https && u.scheme() != "https" {
                out.push(field::invalid(
                    path,
                    Bad::s(u.scheme()),
                    &format!("'https' is the only allowed URL scheme{FORM}"),
                ));
            }
            if u.host().is_empty() {
                out.push(field::invalid(path, Bad::s(u.host()), &format!("host must be provided{FORM}")));
            }
            if let Some(user) = u.user() {
                out.push(field::invalid(path, Bad::s(user), "user information is not permitted in the URL"));
            }
            if !u.fragment().is_empty() {
                out.push(field::invalid(path, Bad::s(u.fragment()), "fragments are not permitted in the URL"));
            }
            if !u.raw_query().is_empty() {
                out.push(field::invalid(path, Bad::s(u.raw_query()), "query parameters are not permitted in the URL"));
            }
        }
    }
    out
}

/// `webhook.ValidateWebhookService(path, namespace, name, servicePath, port)`.
///
/// kube's admission validation passes the service's `name` where this function takes the
/// namespace and the other way round, so a missing name is reported at `service.namespace`
/// ("service namespace is required"); callers reproduce that by passing the arguments in
/// kube's order.
pub fn validate_webhook_service(
    path: &Path,
    namespace: &str,
    name: &str,
    service_path: Option<&str>,
    port: i64,
) -> Vec<Cause> {
    let mut out = Vec::new();
    if name.is_empty() {
        out.push(field::required(&path.child("name"), "service name is required"));
    }
    if namespace.is_empty() {
        out.push(field::required(&path.child("namespace"), "service namespace is required"));
    }
    let port_errors = names::port_num(port);
    if !port_errors.is_empty() {
        out.push(field::invalid(
            &path.child("port"),
            Bad::Int(port),
            &format!("port is not valid: {}", port_errors.join(", ")),
        ));
    }
    let Some(url_path) = service_path else { return out };
    if url_path == "/" || url_path.is_empty() {
        return out;
    }
    let pp = path.child("path");
    if url_path == "//" {
        out.push(field::invalid(&pp, Bad::s(url_path), "segment[0] may not be empty"));
        return out;
    }
    if !url_path.starts_with('/') {
        out.push(field::invalid(&pp, Bad::s(url_path), "must start with a '/'"));
    }
    // Go slices off the first byte whatever it is.
    let mut to_check = url_path.get(1..).unwrap_or("");
    if let Some(s) = to_check.strip_suffix('/') {
        to_check = s;
    }
    for (i, step) in to_check.split('/').enumerate() {
        if step.is_empty() {
            out.push(field::invalid(&pp, Bad::s(url_path), &format!("segment[{i}] may not be empty")));
            continue;
        }
        for failure in names::dns1123_subdomain(step) {
            out.push(field::invalid(&pp, Bad::s(url_path), &format!("segment[{i}]: {failure}")));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url_messages(raw: &str) -> Vec<String> {
        validate_webhook_url(&Path::new("u"), raw, true).into_iter().map(|c| c.message).collect()
    }

    #[test]
    fn urls_parse_as_go_parses_them() {
        let u = parse_url("HTTPS://user:pw@example.com:8443/a/b?x=1#frag").unwrap();
        assert_eq!(u.scheme(), "https");
        assert_eq!(u.host(), "example.com:8443");
        assert_eq!(u.user(), Some("user:pw"));
        assert_eq!(u.raw_query(), "x=1");
        assert_eq!(u.fragment(), "frag");
        assert_eq!(parse_url("https:opaque").unwrap().host(), "");
        assert_eq!(parse_url("//h/p").unwrap().host(), "h");
        let err = |raw: &str| parse_url(raw).map(|u| u.to_string());
        assert_eq!(err(":x"), Err("parse \":x\": missing protocol scheme".to_string()));
        assert_eq!(err("https://[::1"), Err("parse \"https://[::1\": missing ']' in host".to_string()));
        assert_eq!(
            err("https://us%zzer@h/"),
            Err("parse \"https://us%zzer@h/\": invalid URL escape \"%zz\"".to_string())
        );
        assert_eq!(err("https://usér@h/"), Err("parse \"https://usér@h/\": net/url: invalid userinfo".to_string()));
        assert_eq!(err("https://h:8x/"), Err("parse \"https://h:8x/\": invalid port \":8x\" after host".to_string()));
        assert_eq!(
            err("https://a b/"),
            Err("parse \"https://a b/\": invalid character \" \" in host name".to_string())
        );
        assert_eq!(err("https://h/%zz"), Err("parse \"https://h/%zz\": invalid URL escape \"%zz\"".to_string()));
        assert_eq!(
            parse_url("a:b/c").map(|u| u.scheme().to_string()),
            Ok("a".to_string()),
            "a scheme followed by an opaque part"
        );
        assert_eq!(err("1a:b"), Err("parse \"1a:b\": first path segment in URL cannot contain colon".to_string()));
    }

    #[test]
    fn webhook_urls_are_https_with_a_host_only() {
        assert!(url_messages("https://example.com/hook").is_empty());
        assert_eq!(
            url_messages("http://example.com"),
            vec![
                "Invalid value: \"http\": 'https' is the only allowed URL scheme; desired format: https://host[/path]"
            ]
        );
        assert_eq!(
            url_messages("https:///p"),
            vec!["Invalid value: \"\": host must be provided; desired format: https://host[/path]"]
        );
        assert_eq!(
            url_messages("https://u@h?q=1#f"),
            vec![
                "Invalid value: \"u\": user information is not permitted in the URL",
                "Invalid value: \"f\": fragments are not permitted in the URL",
                "Invalid value: \"q=1\": query parameters are not permitted in the URL",
            ]
        );
        assert_eq!(
            url_messages("https://h\n"),
            vec![
                "Required value: url must be a valid URL: parse \"https://h\\n\": net/url: invalid control character in URL; desired format: https://host[/path]"
            ]
        );
    }

    #[test]
    fn service_paths_are_subdomain_segments() {
        let p = Path::new("s");
        let m = |path: Option<&str>, port: i64| -> Vec<(String, String)> {
            validate_webhook_service(&p, "ns", "svc", path, port).into_iter().map(|c| (c.field, c.message)).collect()
        };
        assert!(m(Some("/"), 443).is_empty());
        assert!(m(Some("/a/b.c/"), 443).is_empty());
        assert_eq!(
            m(Some("//"), 443),
            vec![("s.path".into(), "Invalid value: \"//\": segment[0] may not be empty".into())]
        );
        assert_eq!(
            m(Some("a//"), 0),
            vec![
                ("s.port".into(), "Invalid value: 0: port is not valid: must be between 1 and 65535, inclusive".into()),
                ("s.path".into(), "Invalid value: \"a//\": must start with a '/'".into()),
                ("s.path".into(), "Invalid value: \"a//\": segment[0] may not be empty".into()),
                ("s.path".into(), "Invalid value: \"a//\": segment[1] may not be empty".into()),
            ]
        );
        let upper = m(Some("/A"), 443);
        assert_eq!(upper.len(), 1);
        assert!(
            upper[0].1.starts_with("Invalid value: \"/A\": segment[0]: a lowercase RFC 1123 subdomain"),
            "{upper:?}"
        );
    }
}
