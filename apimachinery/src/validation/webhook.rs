//! Where a webhook is reached: `k8s.io/apiserver/pkg/util/webhook`'s `ValidateWebhookURL` and
//! `ValidateWebhookService`, which admission webhooks (and, later, CRD conversion webhooks)
//! share.
//!
//! kube parses the URL with Go's `net/url.Parse`; [`parse_url`] reproduces the part of it those
//! rules read (scheme, host, user information, query, fragment) and the errors it reports, worded
//! as Go words them (`parse "https://[::1": missing ']' in host`).

use super::field::{self, Bad, Path};
use super::names;
use crate::error::Cause;

/// What `net/url.Parse` makes of a URL, as far as the webhook rules look.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct GoUrl {
    /// `URL.Scheme`, lower-cased.
    pub scheme: String,
    /// `URL.Host` (unescaped), `""` for an opaque or relative URL.
    pub host: String,
    /// `URL.User.String()`, `None` when the URL has no `@` in its authority.
    pub user: Option<String>,
    /// `URL.RawQuery`.
    pub raw_query: String,
    /// `URL.Fragment` (unescaped).
    pub fragment: String,
}

/// Go's `url.Error` text for a failed parse: `parse "<url>": <reason>`.
fn parse_error(url: &str, reason: &str) -> String {
    format!("parse {}: {reason}", field::go_quote(url))
}

fn is_hex(b: u8) -> bool {
    b.is_ascii_hexdigit()
}

fn hex_value(b: u8) -> u8 {
    match b {
        b'0'..=b'9' => b - b'0',
        b'a'..=b'f' => b - b'a' + 10,
        _ => b - b'A' + 10,
    }
}

/// Which part of a URL is unescaped: Go's `encodeHost`, `encodeFragment`, ... modes, as far
/// as their unescaping differs.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Part {
    Host,
    Other,
}

/// Whether Go's `shouldEscape(c, encodeHost)` holds for an ASCII byte: such a byte is an
/// invalid character in a host name.
fn host_needs_escape(c: u8) -> bool {
    if c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.' | b'~') {
        return false;
    }
    !matches!(
        c,
        b'!' | b'$'
            | b'&'
            | b'\''
            | b'('
            | b')'
            | b'*'
            | b'+'
            | b','
            | b';'
            | b'='
            | b':'
            | b'['
            | b']'
            | b'<'
            | b'>'
            | b'"'
    )
}

/// Go's `unescape`: `%XX` decoded; a bad escape (or, in a host, a character that must be
/// escaped) is an error worded as Go's `EscapeError` / `InvalidHostError`.
fn unescape(s: &str, part: Part) -> Result<String, String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                if i + 2 >= bytes.len() || !is_hex(bytes[i + 1]) || !is_hex(bytes[i + 2]) {
                    let end = (i + 3).min(bytes.len());
                    let bad = String::from_utf8_lossy(&bytes[i..end]).into_owned();
                    return Err(format!("invalid URL escape {}", field::go_quote(&bad)));
                }
                // In a host, %-escapes may only encode non-ASCII bytes (and %25 in a zone).
                if part == Part::Host && hex_value(bytes[i + 1]) < 8 && &s[i..i + 3] != "%25" {
                    return Err(format!("invalid URL escape {}", field::go_quote(&s[i..i + 3])));
                }
                out.push(hex_value(bytes[i + 1]) << 4 | hex_value(bytes[i + 2]));
                i += 3;
            }
            c => {
                if part == Part::Host && c < 0x80 && host_needs_escape(c) {
                    let bad = (c as char).to_string();
                    return Err(format!("invalid character {} in host name", field::go_quote(&bad)));
                }
                out.push(c);
                i += 1;
            }
        }
    }
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// Go's `getScheme`.
fn split_scheme(raw: &str) -> Result<(&str, &str), String> {
    for (i, c) in raw.bytes().enumerate() {
        match c {
            b'a'..=b'z' | b'A'..=b'Z' => {}
            b'0'..=b'9' | b'+' | b'-' | b'.' if i == 0 => return Ok(("", raw)),
            b'0'..=b'9' | b'+' | b'-' | b'.' => {}
            b':' if i == 0 => return Err("missing protocol scheme".to_string()),
            b':' => return Ok((&raw[..i], &raw[i + 1..])),
            _ => return Ok(("", raw)),
        }
    }
    Ok(("", raw))
}

/// Go's `validOptionalPort`.
fn valid_optional_port(port: &str) -> bool {
    port.is_empty() || (port.starts_with(':') && port[1..].bytes().all(|b| b.is_ascii_digit()))
}

/// Go's `parseHost`.
fn parse_host(host: &str) -> Result<String, String> {
    if host.starts_with('[') {
        let Some(i) = host.rfind(']') else { return Err("missing ']' in host".to_string()) };
        let colon_port = &host[i + 1..];
        if !valid_optional_port(colon_port) {
            return Err(format!("invalid port {} after host", field::go_quote(colon_port)));
        }
    } else if let Some(i) = host.rfind(':') {
        let colon_port = &host[i..];
        if !valid_optional_port(colon_port) {
            return Err(format!("invalid port {} after host", field::go_quote(colon_port)));
        }
    }
    unescape(host, Part::Host)
}

/// Go's `validUserinfo`.
fn valid_userinfo(s: &str) -> bool {
    s.bytes().all(|c| {
        c.is_ascii_alphanumeric()
            || matches!(
                c,
                b'-' | b'.'
                    | b'_'
                    | b':'
                    | b'~'
                    | b'!'
                    | b'$'
                    | b'&'
                    | b'\''
                    | b'('
                    | b')'
                    | b'*'
                    | b'+'
                    | b','
                    | b';'
                    | b'='
                    | b'%'
                    | b'@'
            )
    })
}

/// Go's `parseAuthority`: the user information (as `Userinfo.String()` prints it, escapes kept)
/// and the host.
fn parse_authority(authority: &str) -> Result<(Option<String>, String), String> {
    let at = authority.rfind('@');
    let host = parse_host(at.map_or(authority, |i| &authority[i + 1..]))?;
    let Some(i) = at else { return Ok((None, host)) };
    let userinfo = &authority[..i];
    if !valid_userinfo(userinfo) {
        return Err("net/url: invalid userinfo".to_string());
    }
    match userinfo.split_once(':') {
        None => unescape(userinfo, Part::Other)?,
        Some((user, password)) => {
            unescape(user, Part::Other)?;
            unescape(password, Part::Other)?
        }
    };
    Ok((Some(userinfo.to_string()), host))
}

/// Go's `url.Parse`, as far as the webhook rules read its result; the error is the text of
/// the `*url.Error` it returns.
pub fn parse_url(raw: &str) -> Result<GoUrl, String> {
    let (rest_of_url, fragment) = match raw.split_once('#') {
        Some((u, f)) => (u, Some(f)),
        None => (raw, None),
    };
    let mut url = parse_without_fragment(rest_of_url).map_err(|e| parse_error(rest_of_url, &e))?;
    if let Some(f) = fragment.filter(|f| !f.is_empty()) {
        url.fragment = unescape(f, Part::Other).map_err(|e| parse_error(raw, &e))?;
    }
    Ok(url)
}

/// Go's `parse(rawURL, viaRequest=false)`.
fn parse_without_fragment(raw: &str) -> Result<GoUrl, String> {
    if raw.bytes().any(|b| b < 0x20 || b == 0x7f) {
        return Err("net/url: invalid control character in URL".to_string());
    }
    let mut url = GoUrl::default();
    if raw == "*" {
        return Ok(url);
    }
    let (scheme, mut rest) = split_scheme(raw)?;
    url.scheme = scheme.to_lowercase();
    if rest.ends_with('?') && rest.matches('?').count() == 1 {
        rest = &rest[..rest.len() - 1];
    } else if let Some((r, q)) = rest.split_once('?') {
        url.raw_query = q.to_string();
        rest = r;
    }
    if !rest.starts_with('/') {
        if !url.scheme.is_empty() {
            // A rootless path is opaque: no host.
            return Ok(url);
        }
        if rest.split('/').next().unwrap_or("").contains(':') {
            return Err("first path segment in URL cannot contain colon".to_string());
        }
    }
    if rest.starts_with("//") && (!url.scheme.is_empty() || !rest.starts_with("///")) {
        let authority = &rest[2..];
        let (authority, path) = match authority.find('/') {
            Some(i) => (&authority[..i], &authority[i..]),
            None => (authority, ""),
        };
        let (user, host) = parse_authority(authority)?;
        url.user = user;
        url.host = host;
        rest = path;
    }
    unescape(rest, Part::Other)?;
    Ok(url)
}

/// `webhook.ValidateWebhookURL`: a parseable URL; with `force_https`, the `https` scheme; a
/// host; no user information, fragment or query.
pub fn validate_webhook_url(path: &Path, raw: &str, force_https: bool) -> Vec<Cause> {
    const FORM: &str = "; desired format: https://host[/path]";
    let mut out = Vec::new();
    match parse_url(raw) {
        Err(e) => out.push(field::required(path, &format!("url must be a valid URL: {e}{FORM}"))),
        Ok(u) => {
            if force_https && u.scheme != "https" {
                out.push(field::invalid(
                    path,
                    Bad::s(&u.scheme),
                    &format!("'https' is the only allowed URL scheme{FORM}"),
                ));
            }
            if u.host.is_empty() {
                out.push(field::invalid(path, Bad::s(&u.host), &format!("host must be provided{FORM}")));
            }
            if let Some(user) = &u.user {
                out.push(field::invalid(path, Bad::s(user), "user information is not permitted in the URL"));
            }
            if !u.fragment.is_empty() {
                out.push(field::invalid(path, Bad::s(&u.fragment), "fragments are not permitted in the URL"));
            }
            if !u.raw_query.is_empty() {
                out.push(field::invalid(path, Bad::s(&u.raw_query), "query parameters are not permitted in the URL"));
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
        assert_eq!(u.scheme, "https");
        assert_eq!(u.host, "example.com:8443");
        assert_eq!(u.user.as_deref(), Some("user:pw"));
        assert_eq!(u.raw_query, "x=1");
        assert_eq!(u.fragment, "frag");
        assert_eq!(parse_url("https:opaque").unwrap().host, "");
        assert_eq!(parse_url("//h/p").unwrap().host, "h");
        assert_eq!(parse_url(":x"), Err("parse \":x\": missing protocol scheme".to_string()));
        assert_eq!(parse_url("https://[::1"), Err("parse \"https://[::1\": missing ']' in host".to_string()));
        assert_eq!(
            parse_url("https://h:8x/"),
            Err("parse \"https://h:8x/\": invalid port \":8x\" after host".to_string())
        );
        assert_eq!(
            parse_url("https://a b/"),
            Err("parse \"https://a b/\": invalid character \" \" in host name".to_string())
        );
        assert_eq!(parse_url("https://h/%zz"), Err("parse \"https://h/%zz\": invalid URL escape \"%zz\"".to_string()));
        assert_eq!(parse_url("a:b/c").map(|u| u.scheme), Ok("a".to_string()), "a scheme followed by an opaque part");
        assert_eq!(
            parse_url("1a:b"),
            Err("parse \"1a:b\": first path segment in URL cannot contain colon".to_string())
        );
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
