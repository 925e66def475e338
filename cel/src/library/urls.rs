//! kube's URLs library (`library.URLs`): `url(s)` accepts what Go's `url.ParseRequestURI`
//! accepts (an absolute URL or an absolute path) and then reads it as `url.Parse` does, and its
//! accessors give what Go's `url.URL` gives. The parser here follows Go's `net/url` closely
//! enough to accept and refuse the same strings and to report Go's errors.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::error::{EvalError, EvalResult};
pub use crate::ext::Url;
use crate::golang::quote;
use crate::library::Ext;
use crate::value::{Key, Map, Value};

#[derive(Clone, Copy, PartialEq, Eq)]
enum Encoding {
    Path,
    Host,
    Zone,
    QueryComponent,
    Fragment,
}

/// Go's `shouldEscape`.
fn should_escape(c: u8, mode: Encoding) -> bool {
    if c.is_ascii_alphanumeric() {
        return false;
    }
    if (mode == Encoding::Host || mode == Encoding::Zone)
        && matches!(
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
    {
        return false;
    }
    match c {
        b'-' | b'_' | b'.' | b'~' => return false,
        b'$' | b'&' | b'+' | b',' | b'/' | b':' | b';' | b'=' | b'?' | b'@' => {
            return match mode {
                Encoding::Path => c == b'?',
                Encoding::QueryComponent => true,
                Encoding::Fragment => false,
                _ => true,
            };
        }
        _ => {}
    }
    if mode == Encoding::Fragment && matches!(c, b'!' | b'(' | b')' | b'*') {
        return false;
    }
    true
}

fn unhex(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

/// Go's `unescape`.
fn unescape(s: &str, mode: Encoding) -> Result<String, String> {
    let b = s.as_bytes();
    let mut i = 0;
    let mut has_plus = false;
    while i < b.len() {
        match b[i] {
            b'%' => {
                if i + 2 >= b.len() || unhex(b[i + 1]).is_none() || unhex(b[i + 2]).is_none() {
                    let end = (i + 3).min(b.len());
                    return Err(format!("invalid URL escape {}", quote(&s[i..end])));
                }
                if mode == Encoding::Host && unhex(b[i + 1]).unwrap_or(0) < 8 && &s[i..i + 3] != "%25" {
                    return Err(format!("invalid URL escape {}", quote(&s[i..i + 3])));
                }
                if mode == Encoding::Zone {
                    let v = unhex(b[i + 1]).unwrap_or(0) << 4 | unhex(b[i + 2]).unwrap_or(0);
                    if &s[i..i + 3] != "%25" && v != b' ' && should_escape(v, Encoding::Host) {
                        return Err(format!("invalid URL escape {}", quote(&s[i..i + 3])));
                    }
                }
                i += 3;
            }
            b'+' => {
                has_plus = mode == Encoding::QueryComponent;
                i += 1;
            }
            c => {
                if (mode == Encoding::Host || mode == Encoding::Zone) && c < 0x80 && should_escape(c, mode) {
                    return Err(format!("invalid character {} in host name", quote(&s[i..i + 1])));
                }
                i += 1;
            }
        }
    }
    let _ = has_plus;
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' => {
                out.push(unhex(b[i + 1]).unwrap_or(0) << 4 | unhex(b[i + 2]).unwrap_or(0));
                i += 3;
            }
            b'+' if mode == Encoding::QueryComponent => {
                out.push(b' ');
                i += 1;
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// Go's `escape`.
fn escape(s: &str, mode: Encoding) -> String {
    let mut out = String::with_capacity(s.len());
    for &c in s.as_bytes() {
        if should_escape(c, mode) {
            if c == b' ' && mode == Encoding::QueryComponent {
                out.push('+');
            } else {
                out.push_str(&format!("%{c:02X}"));
            }
        } else {
            out.push(c as char);
        }
    }
    out
}

/// Go's `getScheme`.
fn get_scheme(raw: &str) -> Result<(String, &str), String> {
    for (i, c) in raw.bytes().enumerate() {
        match c {
            b'a'..=b'z' | b'A'..=b'Z' => {}
            b'0'..=b'9' | b'+' | b'-' | b'.' => {
                if i == 0 {
                    return Ok((String::new(), raw));
                }
            }
            b':' => {
                if i == 0 {
                    return Err("missing protocol scheme".into());
                }
                return Ok((raw[..i].to_string(), &raw[i + 1..]));
            }
            _ => return Ok((String::new(), raw)),
        }
    }
    Ok((String::new(), raw))
}

/// Go's `validOptionalPort`.
fn valid_optional_port(port: &str) -> bool {
    port.is_empty() || port.strip_prefix(':').is_some_and(|p| p.bytes().all(|b| b.is_ascii_digit()))
}

/// Go's `parseHost`.
fn parse_host(host: &str) -> Result<String, String> {
    if host.starts_with('[') {
        let Some(i) = host.rfind(']') else { return Err("missing ']' in host".into()) };
        let colon_port = &host[i + 1..];
        if !valid_optional_port(colon_port) {
            return Err(format!("invalid port {} after host", quote(colon_port)));
        }
        if let Some(zone) = host[..i].find("%25") {
            let host1 = unescape(&host[..zone], Encoding::Host)?;
            let host2 = unescape(&host[zone..i], Encoding::Zone)?;
            let host3 = unescape(&host[i..], Encoding::Host)?;
            return Ok(host1 + &host2 + &host3);
        }
    } else if let Some(i) = host.rfind(':') {
        let colon_port = &host[i..];
        if !valid_optional_port(colon_port) {
            return Err(format!("invalid port {} after host", quote(colon_port)));
        }
    }
    unescape(host, Encoding::Host)
}

/// Go's `validUserinfo`.
fn valid_userinfo(s: &str) -> bool {
    s.chars().all(|r| {
        r.is_ascii_alphanumeric()
            || matches!(
                r,
                '-' | '.'
                    | '_'
                    | ':'
                    | '~'
                    | '!'
                    | '$'
                    | '&'
                    | '\''
                    | '('
                    | ')'
                    | '*'
                    | '+'
                    | ','
                    | ';'
                    | '='
                    | '%'
                    | '@'
            )
    })
}

impl Url {
    /// Go's `parse(rawURL, viaRequest)`.
    fn parse_inner(raw: &str, via_request: bool) -> Result<Url, String> {
        if raw.bytes().any(|b| b < 0x20 || b == 0x7f) {
            return Err("net/url: invalid control character in URL".into());
        }
        if raw.is_empty() && via_request {
            return Err("empty url".into());
        }
        let mut u = Url::default();
        if raw == "*" {
            u.path = "*".into();
            return Ok(u);
        }
        let (scheme, mut rest) = get_scheme(raw)?;
        u.scheme = scheme.to_ascii_lowercase();
        if rest.ends_with('?') && rest.matches('?').count() == 1 {
            u.force_query = true;
            rest = &rest[..rest.len() - 1];
        } else if let Some((r, q)) = rest.split_once('?') {
            u.raw_query = q.to_string();
            rest = r;
        }
        if !rest.starts_with('/') {
            if !u.scheme.is_empty() {
                u.opaque = rest.to_string();
                return Ok(u);
            }
            if via_request {
                return Err("invalid URI for request".into());
            }
            let segment = rest.split('/').next().unwrap_or("");
            if segment.contains(':') {
                return Err("first path segment in URL cannot contain colon".into());
            }
        }
        if (!u.scheme.is_empty() || !via_request && !rest.starts_with("///")) && rest.starts_with("//") {
            let authority_and_rest = &rest[2..];
            let (authority, r) = match authority_and_rest.find('/') {
                Some(i) => (&authority_and_rest[..i], &authority_and_rest[i..]),
                None => (authority_and_rest, ""),
            };
            rest = r;
            // Go's `parseAuthority`: the host first, then the user information, whose parts
            // must unescape (it is kept as written, as `Userinfo.String()` prints it).
            let at = authority.rfind('@');
            u.host = parse_host(at.map_or(authority, |i| &authority[i + 1..]))?;
            if let Some(i) = at {
                let userinfo = &authority[..i];
                if !valid_userinfo(userinfo) {
                    return Err("net/url: invalid userinfo".into());
                }
                let (user, password) = userinfo.split_once(':').unwrap_or((userinfo, ""));
                unescape(user, Encoding::Path)?;
                unescape(password, Encoding::Path)?;
                u.user = Some(userinfo.to_string());
            }
        } else if !u.scheme.is_empty() && rest.starts_with('/') {
            u.omit_host = true;
        }
        u.path = unescape(rest, Encoding::Path)?;
        let escaped = escape(&u.path, Encoding::Path);
        u.raw_path = if escaped == rest { String::new() } else { rest.to_string() };
        Ok(u)
    }

    /// Go's `url.Parse`.
    pub fn parse(raw: &str) -> Result<Url, String> {
        let (u, frag) = match raw.split_once('#') {
            Some((u, f)) => (u, Some(f)),
            None => (raw, None),
        };
        let mut url = Url::parse_inner(u, false).map_err(|e| format!("parse {}: {e}", quote(u)))?;
        if let Some(frag) = frag.filter(|f| !f.is_empty()) {
            url.fragment = Some(unescape(frag, Encoding::Fragment).map_err(|e| format!("parse {}: {e}", quote(raw)))?);
        }
        Ok(url)
    }

    /// `URL.Scheme`, lower-cased.
    pub fn scheme(&self) -> &str {
        &self.scheme
    }

    /// `URL.Host` (unescaped), empty for an opaque or relative URL.
    pub fn host(&self) -> &str {
        &self.host
    }

    /// `URL.User.String()`, `None` when the authority has no `@`.
    pub fn user(&self) -> Option<&str> {
        self.user.as_deref()
    }

    /// `URL.RawQuery`.
    pub fn raw_query(&self) -> &str {
        &self.raw_query
    }

    /// `URL.Fragment` (unescaped), empty when there is none.
    pub fn fragment(&self) -> &str {
        self.fragment.as_deref().unwrap_or_default()
    }

    /// Go's `url.ParseRequestURI`.
    pub fn parse_request_uri(raw: &str) -> Result<Url, String> {
        Url::parse_inner(raw, true).map_err(|e| format!("parse {}: {e}", quote(raw)))
    }

    /// Go's `Hostname`: the host without port and brackets.
    fn hostname(&self) -> &str {
        let (host, _) = split_host_port(&self.host);
        host
    }

    /// Go's `Port`.
    fn port(&self) -> &str {
        split_host_port(&self.host).1
    }

    /// Go's `EscapedPath`.
    fn escaped_path(&self) -> String {
        if !self.raw_path.is_empty()
            && valid_encoded(&self.raw_path)
            && unescape(&self.raw_path, Encoding::Path).is_ok_and(|p| p == self.path)
        {
            return self.raw_path.clone();
        }
        if self.path == "*" {
            return "*".into();
        }
        escape(&self.path, Encoding::Path)
    }

    /// Go's `Query`: `url.ParseQuery`, dropping what does not parse.
    fn query(&self) -> BTreeMap<String, Vec<String>> {
        let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for part in self.raw_query.split('&') {
            if part.is_empty() || part.contains(';') {
                continue;
            }
            let (k, v) = part.split_once('=').unwrap_or((part, ""));
            let (Ok(k), Ok(v)) = (unescape(k, Encoding::QueryComponent), unescape(v, Encoding::QueryComponent)) else {
                continue;
            };
            out.entry(k).or_default().push(v);
        }
        out
    }
}

/// Go's `validEncoded` for paths.
fn valid_encoded(s: &str) -> bool {
    s.bytes().all(|c| {
        matches!(
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
                | b'@'
                | b'['
                | b']'
                | b'%'
        ) || !should_escape(c, Encoding::Path)
    })
}

/// Go's `splitHostPort` of `url`.
fn split_host_port(hostport: &str) -> (&str, &str) {
    let (mut host, mut port) = (hostport, "");
    if let Some(colon) = hostport.rfind(':')
        && valid_optional_port(&hostport[colon..])
    {
        host = &hostport[..colon];
        port = &hostport[colon + 1..];
    }
    if host.starts_with('[') && host.ends_with(']') {
        host = &host[1..host.len() - 1];
    }
    (host, port)
}

impl std::fmt::Display for Url {
    /// Go's `URL.String`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut out = String::new();
        if !self.scheme.is_empty() {
            out.push_str(&self.scheme);
            out.push(':');
        }
        if !self.opaque.is_empty() {
            out.push_str(&self.opaque);
        } else {
            if !self.scheme.is_empty() || !self.host.is_empty() || self.user.is_some() {
                if self.omit_host && self.host.is_empty() && self.user.is_none() {
                    // "scheme:/path"
                } else {
                    if !self.host.is_empty() || !self.path.is_empty() || self.user.is_some() {
                        out.push_str("//");
                    }
                    if let Some(u) = &self.user {
                        out.push_str(u);
                        out.push('@');
                    }
                    out.push_str(&escape(&self.host, Encoding::Host));
                }
            }
            let path = self.escaped_path();
            if !path.is_empty() && !path.starts_with('/') && !self.host.is_empty() {
                out.push('/');
            }
            out.push_str(&path);
        }
        if self.force_query || !self.raw_query.is_empty() {
            out.push('?');
            out.push_str(&self.raw_query);
        }
        if let Some(frag) = &self.fragment {
            out.push('#');
            out.push_str(&escape(frag, Encoding::Fragment));
        }
        f.write_str(&out)
    }
}

fn url(v: &Value) -> Option<&Url> {
    match v {
        Value::Ext(Ext::Url(u)) => Some(u),
        _ => None,
    }
}

/// The URL functions.
pub fn call(name: &str, args: &[Value]) -> Option<EvalResult> {
    use Value as V;
    let s = |x: &str| Some(Ok(V::string(x)));
    match (name, args) {
        ("url", [V::String(raw)]) => Some(
            Url::parse_request_uri(raw)
                .and_then(|_| Url::parse(raw))
                .map(|u| V::Ext(Ext::Url(Arc::new(u))))
                .map_err(|e| EvalError::msg(format!("URL parse error during conversion from string: {e}"))),
        ),
        ("isURL", [V::String(raw)]) => Some(Ok(V::Bool(Url::parse_request_uri(raw).is_ok()))),
        ("getScheme", [u]) => s(&url(u)?.scheme),
        ("getHost", [u]) => s(&url(u)?.host),
        ("getHostname", [u]) => s(url(u)?.hostname()),
        ("getPort", [u]) => s(url(u)?.port()),
        ("getEscapedPath", [u]) => s(&url(u)?.escaped_path()),
        ("getQuery", [u]) => {
            let entries = url(u)?
                .query()
                .into_iter()
                .map(|(k, v)| (Key::String(Arc::from(k.as_str())), V::list(v.into_iter().map(V::string).collect())))
                .collect();
            Some(Ok(V::Map(Map::new(entries))))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn u(s: &str) -> Value {
        call("url", &[Value::string(s)]).unwrap().unwrap()
    }

    fn get(name: &str, s: &str) -> Value {
        call(name, &[u(s)]).unwrap().unwrap()
    }

    #[test]
    fn urls_follow_kubes_documented_examples() {
        assert_eq!(get("getScheme", "https://example.com/path"), Value::string("https"));
        assert_eq!(get("getHost", "https://example.com:80/"), Value::string("example.com:80"));
        assert_eq!(get("getHost", "https://[::1]:80/"), Value::string("[::1]:80"));
        assert_eq!(get("getHostname", "https://[::1]:80/"), Value::string("::1"));
        assert_eq!(get("getHostname", "https://127.0.0.1:80/"), Value::string("127.0.0.1"));
        assert_eq!(get("getPort", "https://example.com:80/"), Value::string("80"));
        assert_eq!(get("getPort", "https://example.com/"), Value::string(""));
        assert_eq!(get("getEscapedPath", "https://example.com/path"), Value::string("/path"));
        assert_eq!(
            get("getEscapedPath", "https://example.com/path with spaces/"),
            Value::string("/path%20with%20spaces/")
        );
        assert_eq!(get("getEscapedPath", "https://example.com"), Value::string(""));
        let q = get("getQuery", "https://example.com/path?k1=a&k2=b&k2=c");
        assert_eq!(q.to_string(), "{k1: [a], k2: [b, c]}");
        let is = |s: &str| call("isURL", &[Value::string(s)]).unwrap().unwrap();
        assert_eq!(is("https://example.com:80/path?query=val#fragment"), Value::Bool(true));
        assert_eq!(is("/absolute-path"), Value::Bool(true));
        assert_eq!(is("../relative-path"), Value::Bool(false));
        assert_eq!(is("https://a:b:c/"), Value::Bool(false), "a port that is not one");
        assert_eq!(
            call("url", &[Value::string("../relative")]).unwrap(),
            Err(EvalError::msg(
                "URL parse error during conversion from string: parse \"../relative\": invalid URI for request"
            ))
        );
    }

    #[test]
    fn urls_print_back_as_go_prints_them() {
        for raw in ["https://example.com/a%20b?x=1#f", "mailto:someone@example.com", "/just/a/path", "http://u@h:1/p"] {
            assert_eq!(Url::parse(raw).unwrap().to_string(), raw);
        }
    }
}
