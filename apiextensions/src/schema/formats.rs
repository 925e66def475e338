//! The string formats CRD validation checks: kube-openapi's `strfmt.Default` registry, limited
//! to apiextensions' `supportedFormats` list (every other format is stripped from the schema
//! before validating, so it is ignored).
//!
//! kube 1.30 lists no numeric formats there: `int32`, `int64`, `float`, `double` are stripped
//! and never checked, so neither are they here.

use std::sync::LazyLock;

use kube_cel::strfmt::{is_base64, is_date, is_date_time, is_uuid};
use regex::Regex;

/// go-openapi's name normalization: dashes removed (`date-time` is `datetime`).
fn normalize(format: &str) -> String {
    format.replace('-', "")
}

/// Whether `format` survives `StripUnsupportedFormatsPostProcess` (and so is validated).
pub(crate) fn is_supported(format: &str) -> bool {
    matches!(
        normalize(format).as_str(),
        "bsonobjectid"
            | "uri"
            | "email"
            | "hostname"
            | "ipv4"
            | "ipv6"
            | "cidr"
            | "mac"
            | "uuid"
            | "uuid3"
            | "uuid4"
            | "uuid5"
            | "isbn"
            | "isbn10"
            | "isbn13"
            | "creditcard"
            | "ssn"
            | "hexcolor"
            | "rgbcolor"
            | "byte"
            | "password"
            | "date"
            | "duration"
            | "datetime"
    )
}

fn re(p: &str) -> Regex {
    Regex::new(p).expect("built-in format pattern")
}

static HOSTNAME: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"^([a-zA-Z0-9\p{S}\p{L}]((-?[a-zA-Z0-9\p{S}\p{L}]{0,62})?)|([a-zA-Z0-9\p{S}\p{L}](([a-zA-Z0-9-\p{S}\p{L}]{0,61}[a-zA-Z0-9\p{S}\p{L}])?)(\.)){1,}([a-zA-Z\p{L}]){2,63})$",
    )
});
static UUID3: LazyLock<Regex> =
    LazyLock::new(|| re(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?3[0-9a-f]{3}-?[0-9a-f]{4}-?[0-9a-f]{12}$"));
static UUID4: LazyLock<Regex> =
    LazyLock::new(|| re(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?4[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$"));
static UUID5: LazyLock<Regex> =
    LazyLock::new(|| re(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?5[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$"));
static CREDIT_CARD: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"^(?:4[0-9]{12}(?:[0-9]{3})?|5[1-5][0-9]{14}|6(?:011|5[0-9][0-9])[0-9]{12}|3[47][0-9]{13}|3(?:0[0-5]|[68][0-9])[0-9]{11}|(?:2131|1800|35[0-9]{3})[0-9]{11})$",
    )
});
static SSN: LazyLock<Regex> = LazyLock::new(|| re(r"^[0-9]{3}[- ]?[0-9]{2}[- ]?[0-9]{4}$"));
static HEX_COLOR: LazyLock<Regex> = LazyLock::new(|| re(r"^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$"));
static RGB_COLOR: LazyLock<Regex> = LazyLock::new(|| {
    let c = r"(0|[1-9][0-9]?|1[0-9][0-9]?|2[0-4][0-9]|25[0-5])";
    let s = r"[\t\n\f\r ]*";
    re(&format!(r"^rgb\({s}{c}{s},{s}{c}{s},{s}{c}{s}\)$"))
});
static DURATION_PART: LazyLock<Regex> = LazyLock::new(|| re(r"(\d+)\s*([A-Za-zµ]+)"));

/// Whether `value` is valid for the (supported) `format`, as strfmt's validator decides.
pub(crate) fn validates(format: &str, value: &str) -> bool {
    match normalize(format).as_str() {
        "bsonobjectid" => value.len() == 24 && value.bytes().all(|b| b.is_ascii_hexdigit()),
        "uri" => is_request_uri(value),
        "email" => is_email(value),
        "hostname" => is_hostname(value),
        "ipv4" => apimachinery::validation::names::parse_ip(value).is_some() && value.contains('.'),
        "ipv6" => value.parse::<std::net::IpAddr>().is_ok() && value.contains(':'),
        "cidr" => is_cidr(value),
        "mac" => is_mac(value),
        "uuid" => is_uuid(value),
        "uuid3" => UUID3.is_match(value),
        "uuid4" => UUID4.is_match(value),
        "uuid5" => UUID5.is_match(value),
        "isbn" => is_isbn10(value) || is_isbn13(value),
        "isbn10" => is_isbn10(value),
        "isbn13" => is_isbn13(value),
        "creditcard" => is_credit_card(value),
        // govalidator checks the length before the pattern.
        "ssn" => value.len() == 11 && SSN.is_match(value),
        "hexcolor" => HEX_COLOR.is_match(value),
        "rgbcolor" => RGB_COLOR.is_match(value),
        "byte" => is_base64(value),
        "password" => true,
        "date" => is_date(value),
        "duration" => is_duration(value),
        "datetime" => is_date_time(value),
        _ => true,
    }
}

/// strfmt's `IsHostname`: the pattern, at most 255 bytes, no label over 63 bytes.
fn is_hostname(s: &str) -> bool {
    HOSTNAME.is_match(s) && s.len() <= 255 && s.split('.').all(|p| p.len() <= 63)
}

/// strfmt's `ParseDuration`: Go's `time.ParseDuration`, else `<n> <unit>` pairs with units
/// like `ns`, `ms`, `sec`, `min`, `hour`, `day`, `week` (any case, prefix of the long name).
fn is_duration(s: &str) -> bool {
    if apimachinery::gofmt::parse_duration(s).is_ok() {
        return true;
    }
    const UNITS: &[&[&str]] = &[
        &["ns", "nano"],
        &["us", "µs", "micro"],
        &["ms", "milli"],
        &["s", "sec"],
        &["m", "min"],
        &["h", "hr", "hour"],
        &["d", "day"],
        &["w", "wk", "week"],
    ];
    let mut ok = false;
    for m in DURATION_PART.captures_iter(s) {
        if m[1].parse::<i64>().is_err() {
            return false;
        }
        let unit = m[2].trim().to_lowercase();
        for variants in UNITS {
            let last = variants.len() - 1;
            for (i, v) in variants.iter().enumerate() {
                if (i == last && unit.starts_with(v)) || v.eq_ignore_ascii_case(&unit) {
                    ok = true;
                }
            }
        }
    }
    ok
}

/// `netutils.ParseCIDRSloppy`: an address (IPv4 octets may have leading zeros), `/`, a
/// decimal prefix length within the address family's bits.
fn is_cidr(s: &str) -> bool {
    let Some((addr, bits)) = s.split_once('/') else { return false };
    if bits.is_empty() || bits.len() > 3 || !bits.bytes().all(|b| b.is_ascii_digit()) {
        return false;
    }
    let Ok(bits) = bits.parse::<u32>() else { return false };
    let v4 = addr.contains('.') && !addr.contains(':');
    match apimachinery::validation::names::parse_ip(addr) {
        Some(_) if v4 => bits <= 32,
        Some(_) => bits <= 128,
        None => false,
    }
}

/// Go's `net.ParseMAC`: 6, 8 or 20 octets as `xx:xx:..`, `xx-xx-..` or `xxxx.xxxx.xxxx`.
fn is_mac(s: &str) -> bool {
    let hex = |p: &str, n: usize| p.len() == n && p.bytes().all(|b| b.is_ascii_hexdigit());
    if s.len() < 14 {
        return false;
    }
    let b = s.as_bytes();
    let octets = if b[2] == b':' || b[2] == b'-' {
        let parts: Vec<&str> = s.split(b[2] as char).collect();
        if !parts.iter().all(|p| hex(p, 2)) {
            return false;
        }
        parts.len()
    } else if b[4] == b'.' {
        let parts: Vec<&str> = s.split('.').collect();
        if !parts.iter().all(|p| hex(p, 4)) {
            return false;
        }
        parts.len() * 2
    } else {
        return false;
    };
    matches!(octets, 6 | 8 | 20)
}

fn isbn_digits(s: &str) -> String {
    s.chars().filter(|c| !c.is_whitespace() && *c != '-').collect()
}

/// govalidator's `IsISBN10`: 9 digits and a digit or `X`, weighted sum divisible by 11.
fn is_isbn10(s: &str) -> bool {
    let d = isbn_digits(s);
    let b = d.as_bytes();
    if b.len() != 10 || !b[..9].iter().all(u8::is_ascii_digit) || !(b[9].is_ascii_digit() || b[9] == b'X') {
        return false;
    }
    let mut sum: u32 = (0..9).map(|i| (i as u32 + 1) * u32::from(b[i] - b'0')).sum();
    sum += 10 * if b[9] == b'X' { 10 } else { u32::from(b[9] - b'0') };
    sum.is_multiple_of(11)
}

/// govalidator's `IsISBN13`: 13 digits, weights 1 and 3, check digit.
fn is_isbn13(s: &str) -> bool {
    let d = isbn_digits(s);
    let b = d.as_bytes();
    if b.len() != 13 || !b.iter().all(u8::is_ascii_digit) {
        return false;
    }
    let sum: u32 = (0..12).map(|i| [1, 3][i % 2] * u32::from(b[i] - b'0')).sum();
    u32::from(b[12] - b'0') == (10 - sum % 10) % 10
}

/// govalidator's `IsCreditCard`: non-digits dropped, a card-number pattern, the Luhn sum.
fn is_credit_card(s: &str) -> bool {
    let d: String = s.chars().filter(char::is_ascii_digit).collect();
    if !CREDIT_CARD.is_match(&d) {
        return false;
    }
    let mut sum = 0;
    for (i, c) in d.bytes().rev().enumerate() {
        let mut n = u32::from(c - b'0');
        if i % 2 == 1 {
            n *= 2;
            if n >= 10 {
                n = n % 10 + 1;
            }
        }
        sum += n;
    }
    sum % 10 == 0
}

/// `net/mail.ParseAddress` with a non-empty address, approximated: `addr-spec` or
/// `display name <addr-spec>`, a dot-atom or quoted local part, a dot-atom or bracketed domain.
fn is_email(s: &str) -> bool {
    let s = s.trim();
    let addr = match (s.rfind('<'), s.ends_with('>')) {
        (Some(open), true) => &s[open + 1..s.len() - 1],
        _ => s,
    };
    let Some(at) = addr.rfind('@') else { return false };
    let (local, domain) = (&addr[..at], &addr[at + 1..]);
    let atext = |c: char| c.is_alphanumeric() || "!#$%&'*+-/=?^_`{|}~".contains(c) || !c.is_ascii();
    let dot_atom = |p: &str| !p.is_empty() && p.split('.').all(|a| !a.is_empty() && a.chars().all(atext));
    let local_ok = dot_atom(local) || (local.len() >= 2 && local.starts_with('"') && local.ends_with('"'));
    let domain_ok = dot_atom(domain) || (domain.starts_with('[') && domain.ends_with(']'));
    local_ok && domain_ok
}

/// Go's `url.ParseRequestURI` succeeding, approximated: no control characters; an absolute
/// URI (`scheme:...`; with `//`, an authority whose port is numeric) or an absolute path;
/// every `%` followed by two hex digits.
fn is_request_uri(s: &str) -> bool {
    if s.is_empty() || s.bytes().any(|b| b < 0x20 || b == 0x7f) {
        return false;
    }
    if s == "*" {
        return true;
    }
    let (scheme, rest) = match split_scheme(s) {
        Ok(parts) => parts,
        Err(()) => return false,
    };
    let rest = rest.split_once('?').map(|(p, _)| p).unwrap_or(rest);
    if !rest.starts_with('/') {
        return scheme.is_some();
    }
    let mut path = rest;
    if scheme.is_some() && rest.starts_with("//") {
        let authority_and_path = &rest[2..];
        let (authority, p) = match authority_and_path.find('/') {
            Some(i) => (&authority_and_path[..i], &authority_and_path[i..]),
            None => (authority_and_path, ""),
        };
        if !authority_ok(authority) {
            return false;
        }
        path = p;
    }
    escapes_ok(path)
}

/// `getScheme`: a letter, then letters, digits, `+`, `-`, `.`, up to `:`.
fn split_scheme(s: &str) -> Result<(Option<&str>, &str), ()> {
    for (i, c) in s.char_indices() {
        match c {
            'a'..='z' | 'A'..='Z' => {}
            '0'..='9' | '+' | '-' | '.' if i > 0 => {}
            ':' if i == 0 => return Err(()),
            ':' => return Ok((Some(&s[..i]), &s[i + 1..])),
            _ => return Ok((None, s)),
        }
    }
    Ok((None, s))
}

fn authority_ok(authority: &str) -> bool {
    let host = authority.rsplit_once('@').map(|(_, h)| h).unwrap_or(authority);
    let port = if let Some(v6) = host.strip_prefix('[') {
        let Some(end) = v6.find(']') else { return false };
        &v6[end + 1..]
    } else {
        host.rfind(':').map(|i| &host[i..]).unwrap_or("")
    };
    let port_ok = port.is_empty() || port.strip_prefix(':').is_some_and(|p| p.bytes().all(|b| b.is_ascii_digit()));
    port_ok && escapes_ok(host)
}

fn escapes_ok(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            if !(b.get(i + 1).is_some_and(u8::is_ascii_hexdigit) && b.get(i + 2).is_some_and(u8::is_ascii_hexdigit)) {
                return false;
            }
            i += 3;
        } else {
            i += 1;
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn supported_formats_are_kubes_list() {
        assert!(is_supported("date-time"));
        assert!(is_supported("uuid"));
        for stripped in ["int32", "int64", "float", "double", "quantity", "foo"] {
            assert!(!is_supported(stripped), "{stripped}");
        }
    }

    #[test]
    fn format_checks() {
        let ok = [
            ("date", "2024-02-29"),
            ("date-time", "2024-01-02T15:04:05Z"),
            ("date-time", "2024-01-02t15:04:05.123+01:00"),
            ("uuid", "123e4567-e89b-12d3-a456-426614174000"),
            ("uuid4", "123e4567-e89b-42d3-a456-426614174000"),
            ("email", "a.b@example.com"),
            ("email", "Jane <jane@example.com>"),
            ("hostname", "example.com"),
            ("ipv4", "10.0.0.1"),
            ("ipv6", "fd00::1"),
            ("cidr", "10.0.0.0/8"),
            ("cidr", "fd00::/64"),
            ("mac", "01:23:45:67:89:ab"),
            ("mac", "0123.4567.89ab"),
            ("byte", "aGVsbG8="),
            ("duration", "1h30m"),
            ("duration", "3 days"),
            ("uri", "https://example.com:8443/a%20b?x=1"),
            ("uri", "/relative/path"),
            ("uri", "mailto:a@b"),
            ("isbn10", "0-321-75104-3"),
            ("isbn13", "978-0321751041"),
            ("creditcard", "4111 1111 1111 1111"),
            ("ssn", "123-45-6789"),
            ("hexcolor", "#ffF"),
            ("rgbcolor", "rgb(255, 0, 12)"),
            ("bsonobjectid", "507f1f77bcf86cd799439011"),
            ("password", ""),
        ];
        for (f, v) in ok {
            assert!(validates(f, v), "{f} {v:?} should be valid");
        }
        let bad = [
            ("date", "2023-02-29"),
            ("date", "2024-1-02"),
            ("date-time", "2024-01-02 15:04:05Z"),
            ("date-time", "2024-01-02T25:04:05Z"),
            ("uuid", "not-a-uuid"),
            ("email", "nobody"),
            ("hostname", "-bad-"),
            ("ipv4", "fd00::1"),
            ("ipv6", "10.0.0.1"),
            ("cidr", "10.0.0.0/33"),
            ("mac", "01:23:45"),
            ("byte", ""),
            ("byte", "abc"),
            ("duration", "soon"),
            ("uri", "relative/path"),
            ("uri", "http://host:port/"),
            ("uri", "/a%zz"),
            ("isbn10", "0-321-75104-4"),
            ("creditcard", "4111 1111 1111 1112"),
            ("ssn", "123456789"),
            ("rgbcolor", "rgb(256,0,0)"),
        ];
        for (f, v) in bad {
            assert!(!validates(f, v), "{f} {v:?} should be invalid");
        }
    }
}
