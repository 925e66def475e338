//! String formats kube checks (`k8s.io/apimachinery/pkg/util/validation` at v0.30): each
//! function returns the list of problems, worded as kube words them, empty when valid. The
//! object model validates names with them, and CEL's `format` library exposes them.

use std::sync::LazyLock;

use regex::Regex;

const QUALIFIED_NAME_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const QUALIFIED_NAME_ERR: &str =
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const LABEL_VALUE_FMT: &str = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";
const LABEL_VALUE_ERR: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const DNS1123_LABEL_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS1123_LABEL_ERR: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character";
const DNS1123_SUBDOMAIN_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const DNS1123_SUBDOMAIN_ERR: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
const DNS1035_LABEL_FMT: &str = "[a-z]([-a-z0-9]*[a-z0-9])?";
const DNS1035_LABEL_ERR: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character";
const CONFIG_KEY_FMT: &str = "[-._a-zA-Z0-9]+";
const CONFIG_KEY_ERR: &str = "a valid config key must consist of alphanumeric characters, '-', '_' or '.'";
const ENV_VAR_FMT: &str = "[-._a-zA-Z][-._a-zA-Z0-9]*";
const ENV_VAR_ERR: &str = "a valid environment variable name must consist of alphabetic characters, digits, '_', '-', or '.', and must not start with a digit";
const PERCENT_FMT: &str = "[0-9]+%";
const PERCENT_ERR: &str = "a valid percent string must be a numeric string followed by an ending '%'";
const HTTP_HEADER_FMT: &str = "[-A-Za-z0-9]+";
const HTTP_HEADER_ERR: &str = "a valid HTTP header must consist of alphanumeric characters or '-'";

/// Max length of a DNS-1123 label, a DNS-1035 label, a label value and a qualified name part.
pub const LABEL_MAX: usize = 63;
/// Max length of a DNS-1123 subdomain.
pub const SUBDOMAIN_MAX: usize = 253;

fn anchored(fmt: &str) -> Regex {
    Regex::new(&format!("^(?:{fmt})$")).expect("static regex")
}

static QUALIFIED_NAME: LazyLock<Regex> = LazyLock::new(|| anchored(QUALIFIED_NAME_FMT));
static LABEL_VALUE: LazyLock<Regex> = LazyLock::new(|| anchored(LABEL_VALUE_FMT));
static DNS1123_LABEL: LazyLock<Regex> = LazyLock::new(|| anchored(DNS1123_LABEL_FMT));
static DNS1123_SUBDOMAIN: LazyLock<Regex> = LazyLock::new(|| anchored(DNS1123_SUBDOMAIN_FMT));
static DNS1035_LABEL: LazyLock<Regex> = LazyLock::new(|| anchored(DNS1035_LABEL_FMT));
static CONFIG_KEY: LazyLock<Regex> = LazyLock::new(|| anchored(CONFIG_KEY_FMT));
static ENV_VAR: LazyLock<Regex> = LazyLock::new(|| anchored(ENV_VAR_FMT));
static PERCENT: LazyLock<Regex> = LazyLock::new(|| anchored(PERCENT_FMT));
static HTTP_HEADER: LazyLock<Regex> = LazyLock::new(|| anchored(HTTP_HEADER_FMT));

/// `validation.RegexError`: the message, the examples and the regex kube validated with.
pub fn regex_error(msg: &str, fmt: &str, examples: &[&str]) -> String {
    if examples.is_empty() {
        return format!("{msg} (regex used for validation is '{fmt}')");
    }
    let ex: Vec<String> = examples.iter().map(|e| format!("'{e}', ")).collect();
    format!("{msg} (e.g. {}regex used for validation is '{fmt}')", ex.join(" or "))
}

/// `validation.MaxLenError`.
pub fn max_len_error(n: usize) -> String {
    format!("must be no more than {n} characters")
}

/// `validation.InclusiveRangeError`.
pub fn inclusive_range_error(lo: i64, hi: i64) -> String {
    format!("must be between {lo} and {hi}, inclusive")
}

/// `IsQualifiedName`: label keys, annotation keys, finalizers.
pub fn qualified_name(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let parts: Vec<&str> = value.split('/').collect();
    let name = match parts.len() {
        1 => parts[0],
        2 => {
            let prefix = parts[0];
            if prefix.is_empty() {
                errs.push("prefix part must be non-empty".to_string());
            } else {
                errs.extend(dns1123_subdomain(prefix).into_iter().map(|m| format!("prefix part {m}")));
            }
            parts[1]
        }
        _ => {
            errs.push(format!(
                "a qualified name {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                regex_error(QUALIFIED_NAME_ERR, QUALIFIED_NAME_FMT, &["MyName", "my.name", "123-abc"])
            ));
            return errs;
        }
    };
    if name.is_empty() {
        errs.push("name part must be non-empty".to_string());
    } else if name.len() > LABEL_MAX {
        errs.push(format!("name part {}", max_len_error(LABEL_MAX)));
    }
    if !QUALIFIED_NAME.is_match(name) {
        errs.push(format!(
            "name part {}",
            regex_error(QUALIFIED_NAME_ERR, QUALIFIED_NAME_FMT, &["MyName", "my.name", "123-abc"])
        ));
    }
    errs
}

/// `IsValidLabelValue`.
pub fn label_value(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > LABEL_MAX {
        errs.push(max_len_error(LABEL_MAX));
    }
    if !LABEL_VALUE.is_match(value) {
        errs.push(regex_error(LABEL_VALUE_ERR, LABEL_VALUE_FMT, &["MyValue", "my_value", "12345"]));
    }
    errs
}

/// `IsDNS1123Label`.
pub fn dns1123_label(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > LABEL_MAX {
        errs.push(max_len_error(LABEL_MAX));
    }
    if !DNS1123_LABEL.is_match(value) {
        if DNS1123_SUBDOMAIN.is_match(value) {
            errs.push("must not contain dots".to_string());
        } else {
            errs.push(regex_error(DNS1123_LABEL_ERR, DNS1123_LABEL_FMT, &["my-name", "123-abc"]));
        }
    }
    errs
}

/// `IsDNS1123Subdomain`.
pub fn dns1123_subdomain(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > SUBDOMAIN_MAX {
        errs.push(max_len_error(SUBDOMAIN_MAX));
    }
    if !DNS1123_SUBDOMAIN.is_match(value) {
        errs.push(regex_error(DNS1123_SUBDOMAIN_ERR, DNS1123_SUBDOMAIN_FMT, &["example.com"]));
    }
    errs
}

/// `IsDNS1035Label`.
pub fn dns1035_label(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > LABEL_MAX {
        errs.push(max_len_error(LABEL_MAX));
    }
    if !DNS1035_LABEL.is_match(value) {
        errs.push(regex_error(DNS1035_LABEL_ERR, DNS1035_LABEL_FMT, &["my-name", "abc-123"]));
    }
    errs
}

/// `maskTrailingDash`, bug for bug: a generateName prefix may end in `-`, which kube hides by
/// replacing the last *two* characters with `a`.
fn mask_trailing_dash(name: &str) -> String {
    if name.len() > 1 && name.ends_with('-') {
        let cut = name.len() - 2;
        // Byte slicing as Go does; fall back to the char boundary for non-ASCII input.
        let cut = (0..=cut).rev().find(|i| name.is_char_boundary(*i)).unwrap_or(0);
        format!("{}a", &name[..cut])
    } else {
        name.to_string()
    }
}

/// `NameIsDNSSubdomain`.
pub fn name_is_dns_subdomain(name: &str, prefix: bool) -> Vec<String> {
    if prefix { dns1123_subdomain(&mask_trailing_dash(name)) } else { dns1123_subdomain(name) }
}

/// `NameIsDNSLabel`.
pub fn name_is_dns_label(name: &str, prefix: bool) -> Vec<String> {
    if prefix { dns1123_label(&mask_trailing_dash(name)) } else { dns1123_label(name) }
}

/// `NameIsDNS1035Label`.
pub fn name_is_dns1035_label(name: &str, prefix: bool) -> Vec<String> {
    if prefix { dns1035_label(&mask_trailing_dash(name)) } else { dns1035_label(name) }
}

/// `path.IsValidPathSegmentName` (RBAC names), which ignores the prefix flag.
pub fn path_segment_name(name: &str, _prefix: bool) -> Vec<String> {
    for bad in [".", ".."] {
        if name == bad {
            return vec![format!("may not be '{bad}'")];
        }
    }
    let mut errs = Vec::new();
    for bad in ["/", "%"] {
        if name.contains(bad) {
            errs.push(format!("may not contain '{bad}'"));
        }
    }
    errs
}

fn has_chdir_prefix(value: &str) -> Vec<String> {
    if value == "." {
        vec!["must not be '.'".to_string()]
    } else if value == ".." {
        vec!["must not be '..'".to_string()]
    } else if value.starts_with("..") {
        vec!["must not start with '..'".to_string()]
    } else {
        Vec::new()
    }
}

/// `IsConfigMapKey`: ConfigMap and Secret data keys.
pub fn config_map_key(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > SUBDOMAIN_MAX {
        errs.push(max_len_error(SUBDOMAIN_MAX));
    }
    if !CONFIG_KEY.is_match(value) {
        errs.push(regex_error(CONFIG_KEY_ERR, CONFIG_KEY_FMT, &["key.name", "KEY_NAME", "key-name"]));
    }
    errs.extend(has_chdir_prefix(value));
    errs
}

/// `IsEnvVarName` (strict: RelaxedEnvironmentVariableValidation is off in 1.30).
pub fn env_var_name(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if !ENV_VAR.is_match(value) {
        errs.push(regex_error(ENV_VAR_ERR, ENV_VAR_FMT, &["my.env-name", "MY_ENV.NAME", "MyEnvName1"]));
    }
    errs.extend(has_chdir_prefix(value));
    errs
}

/// `IsValidPercent`.
pub fn percent(value: &str) -> Vec<String> {
    if PERCENT.is_match(value) { Vec::new() } else { vec![regex_error(PERCENT_ERR, PERCENT_FMT, &["1%", "93%"])] }
}

/// `IsHTTPHeaderName`.
pub fn http_header_name(value: &str) -> Vec<String> {
    if HTTP_HEADER.is_match(value) {
        Vec::new()
    } else {
        vec![regex_error(HTTP_HEADER_ERR, HTTP_HEADER_FMT, &["X-Header-Name"])]
    }
}

/// `IsValidPortNum`.
pub fn port_num(port: i64) -> Vec<String> {
    if (1..=65535).contains(&port) { Vec::new() } else { vec![inclusive_range_error(1, 65535)] }
}

/// `IsValidPortName` (IANA service names).
pub fn port_name(port: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if port.len() > 15 {
        errs.push(max_len_error(15));
    }
    if port.is_empty() || !port.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-') {
        errs.push("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)".to_string());
    }
    if !port.bytes().any(|b| b.is_ascii_lowercase()) {
        errs.push("must contain at least one letter (a-z)".to_string());
    }
    if port.contains("--") {
        errs.push("must not contain consecutive hyphens".to_string());
    }
    if !port.is_empty() && (port.starts_with('-') || port.ends_with('-')) {
        errs.push("must not begin or end with a hyphen".to_string());
    }
    errs
}

/// Whether `value` parses as an IP address the way Go's sloppy parser accepts it.
pub fn is_ip(value: &str) -> bool {
    parse_ip(value).is_some()
}

/// Parses an IP address, accepting IPv4 octets with leading zeros as `netutils.ParseIPSloppy` does.
pub fn parse_ip(value: &str) -> Option<std::net::IpAddr> {
    if let Ok(ip) = value.parse::<std::net::IpAddr>() {
        return Some(ip);
    }
    let parts: Vec<&str> = value.split('.').collect();
    if parts.len() == 4 && parts.iter().all(|p| !p.is_empty() && p.len() <= 3 && p.bytes().all(|b| b.is_ascii_digit()))
    {
        let mut octets = [0u8; 4];
        for (i, p) in parts.iter().enumerate() {
            octets[i] = p.parse::<u16>().ok().filter(|v| *v <= 255)? as u8;
        }
        return Some(std::net::IpAddr::from(octets));
    }
    None
}

/// `IsValidIP`'s message.
pub const IP_ERR: &str = "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)";

/// Parses a CIDR (`10.0.0.0/24`, `fd00::/64`).
pub fn is_cidr(value: &str) -> bool {
    let Some((ip, bits)) = value.split_once('/') else { return false };
    let Some(ip) = parse_ip(ip) else { return false };
    let Ok(bits) = bits.parse::<u8>() else { return false };
    if bits.to_string().len() != value.split_once('/').map(|(_, b)| b.len()).unwrap_or(0) {
        return false;
    }
    match ip {
        std::net::IpAddr::V4(_) => bits <= 32,
        std::net::IpAddr::V6(_) => bits <= 128,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subdomain_message_is_kubes() {
        assert_eq!(
            dns1123_subdomain("Bad_Name"),
            vec![
                "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
            ]
        );
        assert!(dns1123_subdomain("a.b-c").is_empty());
    }

    #[test]
    fn label_messages() {
        assert_eq!(dns1123_label("a.b"), vec!["must not contain dots"]);
        assert_eq!(
            dns1123_label("A"),
            vec![
                "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
            ]
        );
        assert_eq!(dns1123_label(&"a".repeat(64)), vec!["must be no more than 63 characters"]);
        assert_eq!(
            dns1035_label("1abc"),
            vec![
                "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
            ]
        );
    }

    #[test]
    fn qualified_names() {
        assert!(qualified_name("app.kubernetes.io/name").is_empty());
        assert_eq!(qualified_name("/a"), vec!["prefix part must be non-empty"]);
        assert_eq!(
            qualified_name("a/b/c"),
            vec![
                "a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
            ]
        );
        assert_eq!(qualified_name("-a").len(), 1);
        assert!(label_value("").is_empty());
    }

    #[test]
    fn generate_name_prefix_masks_trailing_dash() {
        assert!(name_is_dns_subdomain("web-", true).is_empty());
        assert!(!name_is_dns_subdomain("web-", false).is_empty());
    }

    #[test]
    fn config_keys_and_ports() {
        assert!(config_map_key("a.b_c-D").is_empty());
        assert_eq!(config_map_key("..a"), vec!["must not start with '..'"]);
        assert_eq!(port_num(0), vec!["must be between 1 and 65535, inclusive"]);
        assert!(port_name("http").is_empty());
        assert_eq!(port_name("80").len(), 1);
        assert!(is_ip("10.0.0.1") && is_ip("::1") && !is_ip("10.0.0"));
        assert!(is_cidr("10.0.0.0/24") && !is_cidr("10.0.0.0/33"));
    }
}
