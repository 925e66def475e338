//! The signatures of the functions the environment evaluates, for the checker: CEL's standard
//! library as the `cel` crate implements it, and the strings, lists and math extensions. The
//! operators (`_+_`, `_[_]`, `@in`, ...) have rules of their own in the checker.
//!
//! The table is what [`super::ENV`] can run, not what kube declares: a function kube has and
//! the crate lacks (`quantity`, `url`, `ip`, the authorizer's, kube's list functions `sum` or
//! `isSorted`) is an undeclared reference here, so it is refused at create instead of failing
//! every request. A test evaluates an example of each entry, so the table cannot promise what
//! the environment does not have.

use std::collections::HashMap;
use std::sync::LazyLock;

use super::types::Type;

/// One parameter or result of a signature.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Slot {
    Int,
    Uint,
    Double,
    String,
    Bytes,
    Bool,
    Timestamp,
    Duration,
    List,
    ListOfString,
    Map,
    Optional,
    /// Anything.
    Any,
    /// Results only: `dyn`.
    Dyn,
    /// Results only: a type value.
    TypeValue,
    /// Results only: the receiver's (or first argument's) type.
    Same,
    /// Results only: not typed here.
    Untyped,
}

impl Slot {
    fn parse(s: &str) -> Slot {
        match s {
            "int" => Slot::Int,
            "uint" => Slot::Uint,
            "double" => Slot::Double,
            "string" => Slot::String,
            "bytes" => Slot::Bytes,
            "bool" => Slot::Bool,
            "timestamp" => Slot::Timestamp,
            "duration" => Slot::Duration,
            "list" => Slot::List,
            "list(string)" => Slot::ListOfString,
            "map" => Slot::Map,
            "optional" => Slot::Optional,
            "any" => Slot::Any,
            "dyn" => Slot::Dyn,
            "type" => Slot::TypeValue,
            "$0" => Slot::Same,
            "?" => Slot::Untyped,
            other => panic!("signature table: unknown type {other}"),
        }
    }

    /// Whether an argument of type `t` may be passed here.
    fn accepts(self, t: &Type) -> bool {
        if t.is_open() {
            return true;
        }
        match self {
            Slot::Int => matches!(t, Type::Int),
            Slot::Uint => matches!(t, Type::Uint),
            Slot::Double => matches!(t, Type::Double),
            Slot::String => matches!(t, Type::String),
            Slot::Bytes => matches!(t, Type::Bytes),
            Slot::Bool => matches!(t, Type::Bool),
            Slot::Timestamp => matches!(t, Type::Timestamp),
            Slot::Duration => matches!(t, Type::Duration),
            Slot::List | Slot::ListOfString => matches!(t, Type::List(_)),
            // Schema objects are taken for maps: this checker does not tell them apart.
            Slot::Map => matches!(t, Type::Map(..) | Type::Object(_)),
            Slot::Optional => false,
            Slot::Any | Slot::Dyn | Slot::TypeValue | Slot::Same | Slot::Untyped => true,
        }
    }

    fn result(self, args: &[Type]) -> Type {
        match self {
            Slot::Int => Type::Int,
            Slot::Uint => Type::Uint,
            Slot::Double => Type::Double,
            Slot::String => Type::String,
            Slot::Bytes => Type::Bytes,
            Slot::Bool => Type::Bool,
            Slot::Timestamp => Type::Timestamp,
            Slot::Duration => Type::Duration,
            Slot::List => Type::list(Type::Unknown),
            Slot::ListOfString => Type::list(Type::String),
            Slot::Map => Type::map(Type::Unknown, Type::Unknown),
            Slot::Dyn => Type::Dyn,
            Slot::TypeValue => Type::Type,
            Slot::Same => args.first().cloned().unwrap_or(Type::Unknown),
            Slot::Optional | Slot::Any | Slot::Untyped => Type::Unknown,
        }
    }
}

/// One overload: `receiver.name(params) result` or `name(params) result`.
#[derive(Debug)]
struct Overload {
    /// Called on a receiver, which is `params[0]`.
    member: bool,
    params: Vec<Slot>,
    result: Slot,
}

/// The signatures, one per line: `name(params) result` for a global function (`math.abs` and
/// `optional.of` are global functions with dotted names), `(receiver).name(params) result`
/// for a member function.
const SIGNATURES: &str = "
size(string) int
size(bytes) int
size(list) int
size(map) int
(string).size() int
(bytes).size() int
(list).size() int
(map).size() int
int(int) int
int(uint) int
int(double) int
int(string) int
int(timestamp) int
uint(uint) uint
uint(int) uint
uint(double) uint
uint(string) uint
double(double) double
double(int) double
double(uint) double
double(string) double
string(string) string
string(bool) string
string(int) string
string(uint) string
string(double) string
string(bytes) string
string(timestamp) string
string(duration) string
bytes(string) bytes
bytes(bytes) bytes
bool(bool) bool
bool(string) bool
duration(string) duration
duration(duration) duration
timestamp(string) timestamp
timestamp(timestamp) timestamp
timestamp(int) timestamp
dyn(any) dyn
type(any) type
matches(string,string) bool
(string).matches(string) bool
(string).contains(string) bool
(string).startsWith(string) bool
(string).endsWith(string) bool
(duration).getHours() int
(duration).getMinutes() int
(duration).getSeconds() int
(duration).getMilliseconds() int
(timestamp).getFullYear() int
(timestamp).getMonth() int
(timestamp).getDayOfYear() int
(timestamp).getDayOfMonth() int
(timestamp).getDate() int
(timestamp).getDayOfWeek() int
(timestamp).getHours() int
(timestamp).getMinutes() int
(timestamp).getSeconds() int
(timestamp).getMilliseconds() int
(timestamp).getFullYear(string) int
(timestamp).getMonth(string) int
(timestamp).getDayOfYear(string) int
(timestamp).getDayOfMonth(string) int
(timestamp).getDate(string) int
(timestamp).getDayOfWeek(string) int
(timestamp).getHours(string) int
(timestamp).getMinutes(string) int
(timestamp).getSeconds(string) int
(timestamp).getMilliseconds(string) int
optional.of(any) ?
optional.ofNonZeroValue(any) ?
optional.none() ?
(optional).value() ?
(optional).hasValue() bool
(optional).or(optional) ?
(optional).orValue(any) ?
(string).charAt(int) string
(string).indexOf(string) int
(string).indexOf(string,int) int
(string).lastIndexOf(string) int
(string).lastIndexOf(string,int) int
(string).lowerAscii() string
(string).upperAscii() string
(string).trim() string
(string).replace(string,string) string
(string).replace(string,string,int) string
(string).split(string) list(string)
(string).split(string,int) list(string)
(string).substring(int) string
(string).substring(int,int) string
(string).format(list) string
(string).reverse() string
strings.quote(string) string
(list).join() string
(list).join(string) string
(list).slice(int,int) $0
(list).flatten() list
(list).flatten(int) list
(list).distinct() $0
(list).reverse() $0
(list).sort() $0
(list).@sortByAssociatedKeys(list) $0
lists.range(int) list
math.ceil(double) double
math.floor(double) double
math.round(double) double
math.trunc(double) double
math.isInf(double) bool
math.isNaN(double) bool
math.isFinite(double) bool
math.abs(double) double
math.abs(int) int
math.abs(uint) uint
math.sign(double) double
math.sign(int) int
math.sign(uint) uint
math.bitAnd(int,int) int
math.bitAnd(uint,uint) uint
math.bitOr(int,int) int
math.bitOr(uint,uint) uint
math.bitXor(int,int) int
math.bitXor(uint,uint) uint
math.bitNot(int) int
math.bitNot(uint) uint
math.bitShiftLeft(int,int) int
math.bitShiftLeft(uint,int) uint
math.bitShiftRight(int,int) int
math.bitShiftRight(uint,int) uint
math.sqrt(double) double
math.sqrt(int) double
math.sqrt(uint) double
math.@max(int) int
math.@max(uint) uint
math.@max(double) double
math.@max(any,any) ?
math.@max(list) ?
math.@min(int) int
math.@min(uint) uint
math.@min(double) double
math.@min(any,any) ?
math.@min(list) ?
";

static TABLE: LazyLock<HashMap<String, Vec<Overload>>> = LazyLock::new(|| {
    let mut table: HashMap<String, Vec<Overload>> = HashMap::new();
    for line in SIGNATURES.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let (receiver, line) = match line.strip_prefix('(') {
            Some(rest) => {
                let (recv, rest) = rest.split_once(").").expect("a member signature names its receiver");
                (Some(Slot::parse(recv)), rest)
            }
            None => (None, line),
        };
        let (name, rest) = line.split_once('(').expect("signature has parameters");
        let (params, result) = rest.split_once(") ").expect("signature has a result");
        let member = receiver.is_some();
        let params: Vec<Slot> =
            receiver.into_iter().chain(params.split(',').filter(|p| !p.is_empty()).map(Slot::parse)).collect();
        table.entry(name.to_string()).or_default().push(Overload { member, params, result: Slot::parse(result) });
    }
    table
});

/// How a call resolves.
#[derive(Debug)]
pub enum Resolution {
    /// No function of that name.
    Undeclared,
    /// The function exists, but no overload takes these arguments.
    NoOverload,
    /// The result type.
    Resolved(Type),
}

/// Whether `name` is a global function of the table (`math.abs`, `size`).
pub fn is_global(name: &str) -> bool {
    TABLE.get(name).is_some_and(|o| o.iter().any(|o| !o.member))
}

/// Resolves a call of `name` with `args` (the receiver first for a member call).
pub fn resolve(name: &str, member: bool, args: &[Type]) -> Resolution {
    let Some(overloads) = TABLE.get(name) else { return Resolution::Undeclared };
    let mut result: Option<Type> = None;
    for o in overloads.iter().filter(|o| o.member == member && o.params.len() == args.len()) {
        if o.params.iter().zip(args).all(|(p, a)| p.accepts(a)) {
            let t = o.result.result(args);
            result = Some(match result {
                None => t,
                Some(prev) if prev.same_kind(&t) && !matches!(t, Type::List(_) | Type::Map(..)) => prev,
                Some(_) => Type::Unknown,
            });
        }
    }
    result.map_or(Resolution::NoOverload, Resolution::Resolved)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_resolve_by_argument_types() {
        assert!(matches!(resolve("size", false, &[Type::String]), Resolution::Resolved(Type::Int)));
        assert!(matches!(resolve("size", false, &[Type::Int]), Resolution::NoOverload));
        assert!(matches!(resolve("startsWith", true, &[Type::String, Type::String]), Resolution::Resolved(Type::Bool)));
        assert!(matches!(resolve("startsWith", true, &[Type::Int, Type::String]), Resolution::NoOverload));
        assert!(matches!(resolve("quantity", false, &[Type::String]), Resolution::Undeclared));
        assert!(
            matches!(resolve("int", false, &[Type::Dyn]), Resolution::Resolved(Type::Int)),
            "every int() gives int"
        );
        assert!(matches!(resolve("math.abs", false, &[Type::Dyn]), Resolution::Resolved(Type::Unknown)));
        assert!(is_global("math.abs") && !is_global("startsWith"));
    }

    /// Every entry is something the environment evaluates: one example call per function name
    /// and receiver.
    #[test]
    fn the_environment_runs_every_function_of_the_table() {
        let examples = [
            "size('ab') == 2 && 'ab'.size() == 2 && size(b'a') == 1 && b'a'.size() == 1",
            "size([1]) == 1 && [1].size() == 1 && size({'a': 1}) == 1 && {'a': 1}.size() == 1",
            "int('3') == 3 && uint(3) == 3u && double(1) == 1.0 && string(1) == '1' && bytes('a') == b'a'",
            "bool('true') && duration('1s').getSeconds() == 1 && timestamp('2024-01-02T03:04:05Z').getFullYear() == 2024",
            "int(timestamp('1970-01-01T00:00:10Z')) == 10 && timestamp(0) == timestamp('1970-01-01T00:00:00Z')",
            "type(dyn(1)) == int && matches('ab', 'a') && 'ab'.matches('^a') && 'ab'.contains('b')",
            "'ab'.startsWith('a') && 'ab'.endsWith('b') && duration('1h').getHours() == 1",
            "duration('1m').getMinutes() == 1 && duration('1ms').getMilliseconds() == 1",
            "timestamp('2024-01-02T03:04:05Z').getMonth() == 0 && timestamp('2024-01-02T03:04:05Z').getDayOfYear() == 1",
            "timestamp('2024-01-02T03:04:05Z').getDayOfMonth() == 1 && timestamp('2024-01-02T03:04:05Z').getDate() == 2",
            "timestamp('2024-01-02T03:04:05Z').getDayOfWeek() == 2 && timestamp('2024-01-02T03:04:05Z').getHours() == 3",
            "timestamp('2024-01-02T03:04:05Z').getMinutes() == 4 && timestamp('2024-01-02T03:04:05Z').getSeconds() == 5",
            "timestamp('2024-01-02T03:04:05Z').getMilliseconds() == 0 && timestamp('2024-01-02T03:04:05Z').getHours('UTC') == 3",
            "optional.of(1).value() == 1 && optional.ofNonZeroValue(1).hasValue() && !optional.none().hasValue()",
            "optional.none().or(optional.of(2)).value() == 2 && optional.none().orValue(3) == 3",
            "'abc'.charAt(1) == 'b' && 'abc'.indexOf('c') == 2 && 'abcc'.indexOf('c', 3) == 3 && 'acc'.lastIndexOf('c') == 2",
            "'acc'.lastIndexOf('c', 1) == 1 && 'A'.lowerAscii() == 'a' && 'a'.upperAscii() == 'A' && ' a '.trim() == 'a'",
            "'aa'.replace('a', 'b') == 'bb' && 'aa'.replace('a', 'b', 1) == 'ba' && 'a,b'.split(',') == ['a', 'b']",
            "'a,b'.split(',', 1) == ['a,b'] && 'abc'.substring(1) == 'bc' && 'abc'.substring(1, 2) == 'b'",
            "'%s'.format(['x']) == 'x' && 'ab'.reverse() == 'ba' && strings.quote('a') == '\"a\"'",
            "['a', 'b'].join() == 'ab' && ['a', 'b'].join(',') == 'a,b' && [1, 2, 3].slice(1, 2) == [2]",
            "[[1], [2]].flatten() == [1, 2] && [[[1]]].flatten(2) == [1] && [1, 1].distinct() == [1]",
            "[1, 2].reverse() == [2, 1] && [2, 1].sort() == [1, 2] && [2, 1].sortBy(x, x) == [1, 2]",
            "lists.range(2) == [0, 1] && math.ceil(1.2) == 2.0 && math.floor(1.2) == 1.0 && math.round(1.5) == 2.0",
            "math.trunc(1.5) == 1.0 && !math.isInf(1.0) && !math.isNaN(1.0) && math.isFinite(1.0)",
            "math.abs(-1) == 1 && math.abs(-1.0) == 1.0 && math.abs(1u) == 1u && math.sign(-2) == -1",
            "math.sign(-2.0) == -1.0 && math.sign(2u) == 1u && math.bitAnd(3, 1) == 1 && math.bitAnd(3u, 1u) == 1u",
            "math.bitOr(2, 1) == 3 && math.bitOr(2u, 1u) == 3u && math.bitXor(3, 1) == 2 && math.bitXor(3u, 1u) == 2u",
            "math.bitNot(0) == -1 && math.bitNot(0u) > 0u && math.bitShiftLeft(1, 2) == 4 && math.bitShiftLeft(1u, 2) == 4u",
            "math.bitShiftRight(4, 2) == 1 && math.bitShiftRight(4u, 2) == 1u && math.sqrt(4.0) == 2.0",
            "math.sqrt(4) == 2.0 && math.sqrt(4u) == 2.0 && math.greatest(1, 2) == 2 && math.least([1, 2, 3]) == 1",
            "math.greatest(1u) == 1u && math.least(1.0, 2.0) == 1.0",
        ];
        for e in examples {
            let p = super::super::Program::compile(e).unwrap_or_else(|err| panic!("{e}: {err}"));
            assert_eq!(p.eval_bool(&[]), Ok(true), "{e}");
            let checked = super::super::check(&p, &super::super::Declarations::new());
            assert!(checked.issues.is_empty(), "the checker agrees: {e}: {:?}", checked.issues);
            assert!(matches!(checked.output, Type::Bool | Type::Unknown), "{e}: {}", checked.output);
        }
    }
}
