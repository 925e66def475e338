//! The functions of kube's CEL environment, declared as cel-go declares them: each overload
//! with cel-go's (or kube's) overload id, its parameter types and result type, type
//! parameters written as single capital letters. The checker resolves calls against these, the
//! cost model recognises overloads by their ids, and the evaluator dispatches by function name
//! and run-time types ([`crate::stdlib`], [`crate::library`]).
//!
//! Which libraries an environment has is [`crate::env::Version`]'s business; this module only
//! lists them.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock};

use crate::types::Type;

/// One overload of a function.
#[derive(Clone, Debug)]
pub struct Overload {
    /// cel-go's overload id (`add_int64`, `string_to_quantity`).
    pub id: &'static str,
    /// Called on a receiver, which is `params[0]`.
    pub member: bool,
    /// The parameter types, the receiver first.
    pub params: Vec<Type>,
    /// The result type.
    pub result: Type,
    /// The type parameters the signature names.
    pub type_params: Vec<String>,
}

/// A library: a named set of overloads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Library {
    /// CEL's standard library (with kube's `DefaultUTCTimeZone`).
    Standard,
    /// `cel.OptionalTypes()`.
    Optional,
    /// `ext.Strings(ext.StringsVersion(2))`.
    StringsV2,
    /// `ext.Sets()`.
    Sets,
    /// `ext.TwoVarComprehensions()`'s map insertion (its macros are the parser's).
    TwoVarComprehensions,
    /// kube's `library.URLs`.
    Urls,
    /// kube's `library.Regex`.
    Regex,
    /// kube's `library.Lists`.
    Lists,
    /// kube's `library.Authz`.
    Authz,
    /// kube's `library.AuthzSelectors`.
    AuthzSelectors,
    /// kube's `library.Quantity`.
    Quantity,
    /// kube's `library.IP`.
    Ip,
    /// kube's `library.CIDR`.
    Cidr,
    /// kube's `library.Format`.
    Format,
}

/// The declarations of every library, one per line: `id: name(params) -> result` for a
/// global function, `id: (receiver).name(params) -> result` for a member one.
const DECLARATIONS: &[(Library, &str)] = &[
    (
        Library::Standard,
        "
conditional: _?_:_(bool, A, A) -> A
logical_and: _&&_(bool, bool) -> bool
logical_or: _||_(bool, bool) -> bool
logical_not: !_(bool) -> bool
not_strictly_false: @not_strictly_false(bool) -> bool
equals: _==_(A, A) -> bool
not_equals: _!=_(A, A) -> bool
add_bytes: _+_(bytes, bytes) -> bytes
add_double: _+_(double, double) -> double
add_duration_duration: _+_(duration, duration) -> duration
add_duration_timestamp: _+_(duration, timestamp) -> timestamp
add_timestamp_duration: _+_(timestamp, duration) -> timestamp
add_int64: _+_(int, int) -> int
add_list: _+_(list(A), list(A)) -> list(A)
add_string: _+_(string, string) -> string
add_uint64: _+_(uint, uint) -> uint
divide_double: _/_(double, double) -> double
divide_int64: _/_(int, int) -> int
divide_uint64: _/_(uint, uint) -> uint
modulo_int64: _%_(int, int) -> int
modulo_uint64: _%_(uint, uint) -> uint
multiply_double: _*_(double, double) -> double
multiply_int64: _*_(int, int) -> int
multiply_uint64: _*_(uint, uint) -> uint
negate_double: -_(double) -> double
negate_int64: -_(int) -> int
subtract_double: _-_(double, double) -> double
subtract_duration_duration: _-_(duration, duration) -> duration
subtract_int64: _-_(int, int) -> int
subtract_timestamp_duration: _-_(timestamp, duration) -> timestamp
subtract_timestamp_timestamp: _-_(timestamp, timestamp) -> duration
subtract_uint64: _-_(uint, uint) -> uint
index_list: _[_](list(A), int) -> A
index_map: _[_](map(A, B), A) -> B
in_list: @in(A, list(A)) -> bool
in_map: @in(A, map(A, B)) -> bool
size_bytes: size(bytes) -> int
bytes_size: (bytes).size() -> int
size_list: size(list(A)) -> int
list_size: (list(A)).size() -> int
size_map: size(map(A, B)) -> int
map_size: (map(A, B)).size() -> int
size_string: size(string) -> int
string_size: (string).size() -> int
type: type(A) -> type(A)
bool_to_bool: bool(bool) -> bool
string_to_bool: bool(string) -> bool
bytes_to_bytes: bytes(bytes) -> bytes
string_to_bytes: bytes(string) -> bytes
double_to_double: double(double) -> double
int64_to_double: double(int) -> double
string_to_double: double(string) -> double
uint64_to_double: double(uint) -> double
duration_to_duration: duration(duration) -> duration
int64_to_duration: duration(int) -> duration
string_to_duration: duration(string) -> duration
to_dyn: dyn(A) -> dyn
int64_to_int64: int(int) -> int
double_to_int64: int(double) -> int
duration_to_int64: int(duration) -> int
string_to_int64: int(string) -> int
timestamp_to_int64: int(timestamp) -> int
uint64_to_int64: int(uint) -> int
string_to_string: string(string) -> string
bool_to_string: string(bool) -> string
bytes_to_string: string(bytes) -> string
double_to_string: string(double) -> string
duration_to_string: string(duration) -> string
int64_to_string: string(int) -> string
timestamp_to_string: string(timestamp) -> string
uint64_to_string: string(uint) -> string
timestamp_to_timestamp: timestamp(timestamp) -> timestamp
int64_to_timestamp: timestamp(int) -> timestamp
string_to_timestamp: timestamp(string) -> timestamp
uint64_to_uint64: uint(uint) -> uint
double_to_uint64: uint(double) -> uint
int64_to_uint64: uint(int) -> uint
string_to_uint64: uint(string) -> uint
contains_string: (string).contains(string) -> bool
ends_with_string: (string).endsWith(string) -> bool
starts_with_string: (string).startsWith(string) -> bool
matches: matches(string, string) -> bool
matches_string: (string).matches(string) -> bool
timestamp_to_year: (timestamp).getFullYear() -> int
timestamp_to_year_with_tz: (timestamp).getFullYear(string) -> int
timestamp_to_month: (timestamp).getMonth() -> int
timestamp_to_month_with_tz: (timestamp).getMonth(string) -> int
timestamp_to_day_of_year: (timestamp).getDayOfYear() -> int
timestamp_to_day_of_year_with_tz: (timestamp).getDayOfYear(string) -> int
timestamp_to_day_of_month: (timestamp).getDayOfMonth() -> int
timestamp_to_day_of_month_with_tz: (timestamp).getDayOfMonth(string) -> int
timestamp_to_day_of_month_1_based: (timestamp).getDate() -> int
timestamp_to_day_of_month_1_based_with_tz: (timestamp).getDate(string) -> int
timestamp_to_day_of_week: (timestamp).getDayOfWeek() -> int
timestamp_to_day_of_week_with_tz: (timestamp).getDayOfWeek(string) -> int
timestamp_to_hours: (timestamp).getHours() -> int
timestamp_to_hours_with_tz: (timestamp).getHours(string) -> int
duration_to_hours: (duration).getHours() -> int
timestamp_to_minutes: (timestamp).getMinutes() -> int
timestamp_to_minutes_with_tz: (timestamp).getMinutes(string) -> int
duration_to_minutes: (duration).getMinutes() -> int
timestamp_to_seconds: (timestamp).getSeconds() -> int
timestamp_to_seconds_tz: (timestamp).getSeconds(string) -> int
duration_to_seconds: (duration).getSeconds() -> int
timestamp_to_milliseconds: (timestamp).getMilliseconds() -> int
timestamp_to_milliseconds_with_tz: (timestamp).getMilliseconds(string) -> int
duration_to_milliseconds: (duration).getMilliseconds() -> int
",
    ),
    (
        Library::Optional,
        "
optional_of: optional.of(V) -> optional(V)
optional_ofNonZeroValue: optional.ofNonZeroValue(V) -> optional(V)
optional_none: optional.none() -> optional(V)
optional_value: (optional(V)).value() -> V
optional_hasValue: (optional(V)).hasValue() -> bool
optional_or_optional: (optional(V)).or(optional(V)) -> optional(V)
optional_orValue_value: (optional(V)).orValue(V) -> V
select_optional_field: _?._(dyn, string) -> optional(V)
list_optindex_optional_int: _[?_](list(V), int) -> optional(V)
optional_list_optindex_optional_int: _[?_](optional(list(V)), int) -> optional(V)
map_optindex_optional_value: _[?_](map(K, V), K) -> optional(V)
optional_map_optindex_optional_value: _[?_](optional(map(K, V)), K) -> optional(V)
optional_list_index_int: _[_](optional(list(V)), int) -> optional(V)
optional_map_index_value: _[_](optional(map(K, V)), K) -> optional(V)
",
    ),
    (
        Library::StringsV2,
        "
string_char_at_int: (string).charAt(int) -> string
string_index_of_string: (string).indexOf(string) -> int
string_index_of_string_int: (string).indexOf(string, int) -> int
string_last_index_of_string: (string).lastIndexOf(string) -> int
string_last_index_of_string_int: (string).lastIndexOf(string, int) -> int
string_lower_ascii: (string).lowerAscii() -> string
string_replace_string_string: (string).replace(string, string) -> string
string_replace_string_string_int: (string).replace(string, string, int) -> string
string_split_string: (string).split(string) -> list(string)
string_split_string_int: (string).split(string, int) -> list(string)
string_substring_int: (string).substring(int) -> string
string_substring_int_int: (string).substring(int, int) -> string
string_trim: (string).trim() -> string
string_upper_ascii: (string).upperAscii() -> string
string_format: (string).format(list(dyn)) -> string
strings_quote: strings.quote(string) -> string
list_join: (list(string)).join() -> string
list_join_string: (list(string)).join(string) -> string
",
    ),
    (
        Library::Sets,
        "
list_sets_contains_list: sets.contains(list(T), list(T)) -> bool
list_sets_equivalent_list: sets.equivalent(list(T), list(T)) -> bool
list_sets_intersects_list: sets.intersects(list(T), list(T)) -> bool
",
    ),
    (
        Library::TwoVarComprehensions,
        "
@mapInsert_map_key_value: cel.@mapInsert(map(K, V), K, V) -> map(K, V)
@mapInsert_map_map: cel.@mapInsert(map(K, V), map(K, V)) -> map(K, V)
",
    ),
    (
        Library::Urls,
        "
string_to_url: url(string) -> kubernetes.URL
url_get_scheme: (kubernetes.URL).getScheme() -> string
url_get_host: (kubernetes.URL).getHost() -> string
url_get_hostname: (kubernetes.URL).getHostname() -> string
url_get_port: (kubernetes.URL).getPort() -> string
url_get_escaped_path: (kubernetes.URL).getEscapedPath() -> string
url_get_query: (kubernetes.URL).getQuery() -> map(string, list(string))
is_url_string: isURL(string) -> bool
",
    ),
    (
        Library::Regex,
        "
string_find_string: (string).find(string) -> string
string_find_all_string: (string).findAll(string) -> list(string)
string_find_all_string_int: (string).findAll(string, int) -> list(string)
",
    ),
    (
        Library::Lists,
        "
list_int_is_sorted_bool: (list(int)).isSorted() -> bool
list_uint_is_sorted_bool: (list(uint)).isSorted() -> bool
list_double_is_sorted_bool: (list(double)).isSorted() -> bool
list_bool_is_sorted_bool: (list(bool)).isSorted() -> bool
list_duration_is_sorted_bool: (list(duration)).isSorted() -> bool
list_timestamp_is_sorted_bool: (list(timestamp)).isSorted() -> bool
list_string_is_sorted_bool: (list(string)).isSorted() -> bool
list_bytes_is_sorted_bool: (list(bytes)).isSorted() -> bool
list_int_sum_int: (list(int)).sum() -> int
list_uint_sum_uint: (list(uint)).sum() -> uint
list_double_sum_double: (list(double)).sum() -> double
list_duration_sum_duration: (list(duration)).sum() -> duration
list_int_max_int: (list(int)).max() -> int
list_uint_max_uint: (list(uint)).max() -> uint
list_double_max_double: (list(double)).max() -> double
list_bool_max_bool: (list(bool)).max() -> bool
list_duration_max_duration: (list(duration)).max() -> duration
list_timestamp_max_timestamp: (list(timestamp)).max() -> timestamp
list_string_max_string: (list(string)).max() -> string
list_bytes_max_bytes: (list(bytes)).max() -> bytes
list_int_min_int: (list(int)).min() -> int
list_uint_min_uint: (list(uint)).min() -> uint
list_double_min_double: (list(double)).min() -> double
list_bool_min_bool: (list(bool)).min() -> bool
list_duration_min_duration: (list(duration)).min() -> duration
list_timestamp_min_timestamp: (list(timestamp)).min() -> timestamp
list_string_min_string: (list(string)).min() -> string
list_bytes_min_bytes: (list(bytes)).min() -> bytes
list_a_index_of_int: (list(A)).indexOf(A) -> int
list_a_last_index_of_int: (list(A)).lastIndexOf(A) -> int
",
    ),
    (
        Library::Authz,
        "
authorizer_path: (kubernetes.authorization.Authorizer).path(string) -> kubernetes.authorization.PathCheck
authorizer_group: (kubernetes.authorization.Authorizer).group(string) -> kubernetes.authorization.GroupCheck
authorizer_serviceaccount: (kubernetes.authorization.Authorizer).serviceAccount(string, string) -> kubernetes.authorization.Authorizer
groupcheck_resource: (kubernetes.authorization.GroupCheck).resource(string) -> kubernetes.authorization.ResourceCheck
resourcecheck_subresource: (kubernetes.authorization.ResourceCheck).subresource(string) -> kubernetes.authorization.ResourceCheck
resourcecheck_namespace: (kubernetes.authorization.ResourceCheck).namespace(string) -> kubernetes.authorization.ResourceCheck
resourcecheck_name: (kubernetes.authorization.ResourceCheck).name(string) -> kubernetes.authorization.ResourceCheck
pathcheck_check: (kubernetes.authorization.PathCheck).check(string) -> kubernetes.authorization.Decision
resourcecheck_check: (kubernetes.authorization.ResourceCheck).check(string) -> kubernetes.authorization.Decision
decision_errored: (kubernetes.authorization.Decision).errored() -> bool
decision_error: (kubernetes.authorization.Decision).error() -> string
decision_allowed: (kubernetes.authorization.Decision).allowed() -> bool
decision_reason: (kubernetes.authorization.Decision).reason() -> string
",
    ),
    (
        Library::AuthzSelectors,
        "
authorizer_fieldselector: (kubernetes.authorization.ResourceCheck).fieldSelector(string) -> kubernetes.authorization.ResourceCheck
authorizer_labelselector: (kubernetes.authorization.ResourceCheck).labelSelector(string) -> kubernetes.authorization.ResourceCheck
",
    ),
    (
        Library::Quantity,
        "
string_to_quantity: quantity(string) -> kubernetes.Quantity
is_quantity_string: isQuantity(string) -> bool
quantity_sign: sign(kubernetes.Quantity) -> int
quantity_is_greater_than: (kubernetes.Quantity).isGreaterThan(kubernetes.Quantity) -> bool
quantity_is_less_than: (kubernetes.Quantity).isLessThan(kubernetes.Quantity) -> bool
quantity_compare_to: (kubernetes.Quantity).compareTo(kubernetes.Quantity) -> int
quantity_get_float: (kubernetes.Quantity).asApproximateFloat() -> double
quantity_get_int: (kubernetes.Quantity).asInteger() -> int
quantity_is_integer: (kubernetes.Quantity).isInteger() -> bool
quantity_add: (kubernetes.Quantity).add(kubernetes.Quantity) -> kubernetes.Quantity
quantity_add_int: (kubernetes.Quantity).add(int) -> kubernetes.Quantity
quantity_sub: (kubernetes.Quantity).sub(kubernetes.Quantity) -> kubernetes.Quantity
quantity_sub_int: (kubernetes.Quantity).sub(int) -> kubernetes.Quantity
",
    ),
    (
        Library::Ip,
        "
string_to_ip: ip(string) -> net.IP
ip_family: (net.IP).family() -> int
ip_is_canonical: ip.isCanonical(string) -> bool
ip_is_unspecified: (net.IP).isUnspecified() -> bool
ip_is_loopback: (net.IP).isLoopback() -> bool
ip_is_link_local_multicast: (net.IP).isLinkLocalMulticast() -> bool
ip_is_link_local_unicast: (net.IP).isLinkLocalUnicast() -> bool
ip_is_global_unicast: (net.IP).isGlobalUnicast() -> bool
is_ip: isIP(string) -> bool
ip_to_string: string(net.IP) -> string
",
    ),
    (
        Library::Cidr,
        "
string_to_cidr: cidr(string) -> net.CIDR
cidr_contains_ip_string: (net.CIDR).containsIP(string) -> bool
cidr_contains_ip_ip: (net.CIDR).containsIP(net.IP) -> bool
cidr_contains_cidr_string: (net.CIDR).containsCIDR(string) -> bool
cidr_contains_cidr: (net.CIDR).containsCIDR(net.CIDR) -> bool
cidr_ip: (net.CIDR).ip() -> net.IP
cidr_prefix_length: (net.CIDR).prefixLength() -> int
cidr_masked: (net.CIDR).masked() -> net.CIDR
is_cidr: isCIDR(string) -> bool
cidr_to_string: string(net.CIDR) -> string
",
    ),
    (
        Library::Format,
        "
format.dns1123Label: format.dns1123Label() -> kubernetes.NamedFormat
format.dns1123Subdomain: format.dns1123Subdomain() -> kubernetes.NamedFormat
format.dns1035Label: format.dns1035Label() -> kubernetes.NamedFormat
format.qualifiedName: format.qualifiedName() -> kubernetes.NamedFormat
format.dns1123LabelPrefix: format.dns1123LabelPrefix() -> kubernetes.NamedFormat
format.dns1123SubdomainPrefix: format.dns1123SubdomainPrefix() -> kubernetes.NamedFormat
format.dns1035LabelPrefix: format.dns1035LabelPrefix() -> kubernetes.NamedFormat
format.labelValue: format.labelValue() -> kubernetes.NamedFormat
format.uri: format.uri() -> kubernetes.NamedFormat
format.uuid: format.uuid() -> kubernetes.NamedFormat
format.byte: format.byte() -> kubernetes.NamedFormat
format.date: format.date() -> kubernetes.NamedFormat
format.datetime: format.datetime() -> kubernetes.NamedFormat
format-validate: (kubernetes.NamedFormat).validate(string) -> optional(list(string))
format-named: format.named(string) -> optional(kubernetes.NamedFormat)
",
    ),
];

/// The comparison operators' overloads, generated: every ordered pair cel-go declares.
fn comparisons() -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (op, id) in [("_<_", "less"), ("_<=_", "less_equals"), ("_>_", "greater"), ("_>=_", "greater_equals")] {
        for (suffix, a, b) in [
            ("bool", "bool", "bool"),
            ("int64", "int", "int"),
            ("int64_double", "int", "double"),
            ("int64_uint64", "int", "uint"),
            ("uint64", "uint", "uint"),
            ("uint64_double", "uint", "double"),
            ("uint64_int64", "uint", "int"),
            ("double", "double", "double"),
            ("double_int64", "double", "int"),
            ("double_uint64", "double", "uint"),
            ("string", "string", "string"),
            ("bytes", "bytes", "bytes"),
            ("timestamp", "timestamp", "timestamp"),
            ("duration", "duration", "duration"),
        ] {
            out.push((format!("{id}_{suffix}"), format!("{op}({a}, {b}) -> bool")));
        }
    }
    out
}

/// Splits `s` on top-level commas (not inside parentheses).
fn split_top(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut start) = (0, 0);
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                out.push(s[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    let last = s[start..].trim();
    if !last.is_empty() {
        out.push(last);
    }
    out
}

/// A type as the table writes it.
fn parse_type(s: &str, params: &mut Vec<String>) -> Type {
    let s = s.trim();
    if let Some((name, rest)) = s.split_once('(') {
        let inner: Vec<Type> = split_top(rest.strip_suffix(')').expect("closing parenthesis"))
            .iter()
            .map(|t| parse_type(t, params))
            .collect();
        let mut it = inner.into_iter();
        return match name {
            "list" => Type::list(it.next().expect("element type")),
            "map" => Type::map(it.next().expect("key type"), it.next().expect("value type")),
            "optional" => Type::optional(it.next().expect("value type")),
            "type" => Type::Type(it.next().map(Arc::new)),
            other => panic!("declarations: unknown parameterized type {other}"),
        };
    }
    match s {
        "int" => Type::Int,
        "uint" => Type::Uint,
        "double" => Type::Double,
        "bool" => Type::Bool,
        "string" => Type::String,
        "bytes" => Type::Bytes,
        "null" => Type::Null,
        "dyn" => Type::Dyn,
        "timestamp" => Type::Timestamp,
        "duration" => Type::Duration,
        "type" => Type::Type(None),
        "net.IP" | "net.CIDR" => Type::opaque(s),
        p if p.len() == 1 && p.chars().all(|c| c.is_ascii_uppercase()) => {
            if !params.iter().any(|x| x == p) {
                params.push(p.to_string());
            }
            Type::param(p)
        }
        named if named.starts_with("kubernetes.") => Type::named(named),
        other => panic!("declarations: unknown type {other}"),
    }
}

/// Parses one declaration: (function name, overload).
fn parse_line(id: &'static str, signature: &str) -> (String, Overload) {
    let (call, result) = signature.split_once(" -> ").expect("a result type");
    let mut type_params = Vec::new();
    let (receiver, call) = match call.strip_prefix('(') {
        Some(rest) => {
            let (recv, rest) = rest.split_once(").").expect("a receiver");
            (Some(parse_type(recv, &mut type_params)), rest)
        }
        None => (None, call),
    };
    let open = call.find('(').expect("parameters");
    let name = &call[..open];
    let inner = call[open + 1..].strip_suffix(')').expect("closing parenthesis");
    let member = receiver.is_some();
    let mut params: Vec<Type> = receiver.into_iter().collect();
    params.extend(split_top(inner).iter().map(|t| parse_type(t, &mut type_params)));
    let result = parse_type(result, &mut type_params);
    (name.to_string(), Overload { id, member, params, result, type_params })
}

/// Every library's functions: library to function name to overloads.
static TABLE: LazyLock<HashMap<Library, Vec<(String, Overload)>>> = LazyLock::new(|| {
    let mut table: HashMap<Library, Vec<(String, Overload)>> = HashMap::new();
    for (library, text) in DECLARATIONS {
        let entries = table.entry(*library).or_default();
        for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
            let (id, signature) = line.split_once(": ").expect("an overload id");
            entries.push(parse_line(id, signature));
        }
    }
    let standard = table.entry(Library::Standard).or_default();
    for (id, signature) in comparisons() {
        let id: &'static str = Box::leak(id.into_boxed_str());
        standard.push(parse_line(id, &signature));
    }
    table
});

/// The functions of `libraries`, by name, their overloads in declaration order.
pub fn functions(libraries: &[Library]) -> HashMap<String, Vec<Overload>> {
    let mut out: HashMap<String, Vec<Overload>> = HashMap::new();
    for library in libraries {
        for (name, overload) in TABLE.get(library).into_iter().flatten() {
            out.entry(name.clone()).or_default().push(overload.clone());
        }
    }
    out
}

/// The type names an identifier may be, with the type each denotes: `int` is `type(int)`.
pub fn type_identifiers() -> Vec<(&'static str, Type)> {
    vec![
        ("bool", Type::Bool),
        ("bytes", Type::Bytes),
        ("double", Type::Double),
        ("google.protobuf.Duration", Type::Duration),
        ("int", Type::Int),
        ("list", Type::list(Type::param("A"))),
        ("map", Type::map(Type::param("A"), Type::param("B"))),
        ("null_type", Type::Null),
        ("string", Type::String),
        ("google.protobuf.Timestamp", Type::Timestamp),
        ("type", Type::Type(None)),
        ("uint", Type::Uint),
        ("optional_type", Type::optional(Type::param("A"))),
        ("net.IP", Type::opaque("net.IP")),
        ("net.CIDR", Type::opaque("net.CIDR")),
        ("kubernetes.Quantity", Type::named("kubernetes.Quantity")),
        ("kubernetes.URL", Type::named("kubernetes.URL")),
        ("kubernetes.NamedFormat", Type::named("kubernetes.NamedFormat")),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_declaration_parses_with_its_type_parameters() {
        let all = functions(&[
            Library::Standard,
            Library::Optional,
            Library::StringsV2,
            Library::Sets,
            Library::TwoVarComprehensions,
            Library::Urls,
            Library::Regex,
            Library::Lists,
            Library::Authz,
            Library::AuthzSelectors,
            Library::Quantity,
            Library::Ip,
            Library::Cidr,
            Library::Format,
        ]);
        let index = &all["_[_]"];
        assert_eq!(index[1].id, "index_map");
        assert_eq!(index[1].type_params, ["A", "B"]);
        assert_eq!(all["_<_"].len(), 14);
        let ip = &all["ip"];
        assert!(ip.iter().any(|o| o.id == "string_to_ip" && !o.member));
        assert!(ip.iter().any(|o| o.id == "cidr_ip" && o.member));
        assert_eq!(all["optional.none"][0].result.to_string(), "optional_type(V)");
        assert!(!all.contains_key("reverse") && !all.contains_key("math.abs"), "kube has neither");
    }
}
