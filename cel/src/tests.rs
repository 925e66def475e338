//! Evaluation as cel-go and kube evaluate: results and errors from the documented behaviour of
//! CEL and kube's libraries, and costs (estimated and counted) from kube's own cost tables
//! (`library/cost_test.go`), which evaluate without cel-go's optimizations.

use crate::cost::{Estimate, SizeEstimator};
use crate::library::authz::{self, Authorizer, AuthzRequest, Decision};
use crate::types::Type;
use crate::{Activation, Env, EvalError, Program, Value, Version};

fn env() -> Env {
    Env::new(Version::V1_32).declare("authorizer", Type::named("kubernetes.authorization.Authorizer"))
}

struct AllowAll;

impl Authorizer for AllowAll {
    fn decide(&self, _: &AuthzRequest) -> Option<Decision> {
        Some(Decision { allowed: true, reason: String::new(), error: None })
    }
}

fn run(source: &str, optimize: bool) -> (Result<Value, EvalError>, u64) {
    let p = Program::compile_with(&env(), source, optimize).unwrap_or_else(|e| panic!("{source}: {e}"));
    let activation = Activation::new().bind("authorizer", authz::authorizer_value()).with_authorizer(&AllowAll);
    let e = p.evaluate(&activation, None);
    (e.result, e.cost)
}

fn eval(source: &str) -> Result<Value, String> {
    run(source, true).0.map_err(|e| e.to_string())
}

fn yes(source: &str) {
    assert_eq!(eval(source), Ok(Value::Bool(true)), "{source}");
}

fn fails(source: &str, message: &str) {
    assert_eq!(eval(source), Err(message.to_string()), "{source}");
}

/// kube's test size estimator: strings and bytes of at most 12.
struct TwelveChars;

impl SizeEstimator for TwelveChars {
    fn estimate_size(&self, _: Option<&[String]>, t: &Type) -> Option<Estimate> {
        matches!(t, Type::String | Type::Bytes).then_some(Estimate { min: 0, max: 12 })
    }
}

/// Expression, estimated min and max, cost counted: kube's tables.
const COSTS: &[(&str, u64, u64, u64)] = &[
    ("[1, 2, 3, 4, 5].sum()", 15, 15, 15),
    ("[uint(1), uint(2), uint(3), uint(4), uint(5)].sum()", 20, 20, 20),
    ("[1.0, 2.0, 3.0, 4.0, 5.0].isSorted()", 15, 15, 15),
    ("['012345678901', '012345678901', '012345678901', '012345678901', '012345678901'].max()", 15, 25, 15),
    ("[duration('1s'), duration('2s'), duration('3s'), duration('4s'), duration('5s')].min()", 20, 20, 20),
    ("[1, 2, 3, 4, 5].indexOf(3)", 15, 15, 15),
    ("url('https:://kubernetes.io/').getScheme()", 4, 4, 4),
    ("url('https:://kubernetes.io/').getQuery()", 4, 4, 4),
    ("url('https:://kubernetes.io/') == url('https:://kubernetes.io/')", 7, 9, 7),
    ("url('https:://kubernetes.io/') == url('http://x.b')", 5, 5, 5),
    ("ip('192.168.0.1')", 2, 2, 2),
    ("ip('2001:db8:3333:4444:5555:6666:7777:8888').family()", 5, 5, 5),
    ("ip('192.168.0.1') == ip('192.168.0.1')", 5, 5, 5),
    ("ip.isCanonical('2001:db8:3333:4444:5555:6666:7777:8888')", 8, 8, 8),
    ("cidr('192.168.0.0/16').containsIP(ip('192.169.0.1'))", 5, 8, 5),
    ("cidr('192.168.0.0/16').containsCIDR('192.0.0.0/30')", 7, 11, 7),
    ("cidr('2001:db8::/32').containsIP(ip('2001:db8:3333:4444:5555:6666:7777:8888'))", 7, 10, 7),
    ("cidr('192.168.0.0/16').masked()", 3, 3, 3),
    ("'ABCDEFGHIJ abcdefghij'.lowerAscii() == 'abcdefghij ABCDEFGHIJ'.lowerAscii()", 7, 9, 9),
    ("strings.quote('ABCDEFGHIJ abcdefghij') == strings.quote('ABCDEFGHIJ abcdefghij')", 7, 11, 9),
    ("'abc 123 def 123'.replace('123', '456')", 3, 3, 3),
    ("'abc 123 def 123'.split(' ', 1)", 3, 3, 3),
    ("'  abc 123 def 123  '.trim()", 2, 2, 2),
    ("['aa', 'bb', 'cc', 'd', 'e', 'f', 'g', 'h', 'i', 'j'].join(' ')", 11, 23, 15),
    ("['aa', 'bb', 'cc', 'd', 'e', 'f', 'g', 'h', 'i', 'j'].join()", 10, 22, 13),
    ("'abc 123 def 123'.findAll('123', 1)", 2, 2, 2),
    ("authorizer.path('/healthz')", 2, 2, 2),
    (
        "authorizer.group('apps').resource('deployments').subresource('status').namespace('test').name('backend')",
        6,
        6,
        6,
    ),
    (
        "authorizer.group('').resource('pods').fieldSelector('spec.nodeName=example-node-name.fully.qualified.domain.name.example.com')",
        1821,
        1821,
        1821,
    ),
    ("authorizer.path('/healthz').check('get').allowed()", 350003, 350003, 350003),
    (
        "authorizer.group('apps').resource('deployments').subresource('status').namespace('test').name('backend').check('create').errored()",
        350007,
        350007,
        350007,
    ),
    ("quantity(\"12Mi\")", 1, 1, 1),
    ("quantity(\"200M\") == quantity(\"0.2G\") && quantity(\"0.2G\") == quantity(\"200M\")", 3, 6, 6),
    ("quantity(\"200M\").compareTo(quantity(\"0.2G\")) > 0", 4, 4, 4),
    ("format.named(\"dns1123Subdomain\").value().validate(\"my-name\")", 34, 34, 17),
    ("format.named(\"dns1123Label\").value() == format.named(\"dns1123Label\").value()", 5, 11, 5),
    ("sets.contains([1, 2, 3, 4], [2, 3])", 29, 29, 29),
    ("sets.contains([1, 1], [1])", 23, 23, 23),
    ("!sets.contains([1], [2])", 23, 23, 23),
    ("sets.equivalent([1], [1, 1])", 25, 25, 25),
    ("!sets.equivalent([2, 1], [1])", 26, 26, 26),
    ("sets.intersects([2, 1], [1])", 23, 23, 23),
    ("{'a': 1, 'b': 2}.all(k, v, v > 0)", 37, 41, 41),
    ("{'a': 1, 'b': 2}.exists(k, v, v > 0)", 39, 43, 40),
    ("{'a': 1, 'b': 2}.existsOne(k, v, v > 0)", 38, 40, 40),
    ("{'a': 1, 'b': 2}.transformMap(k, v, v + 1)", 71, 71, 71),
    ("{'a': 1, 'b': 2}.transformMapEntry(k, v, v < 5, {k: v + 1})", 67, 135, 135),
    ("[1, 2].exists(i, v, v > 0)", 19, 23, 20),
    ("[1, 2].transformList(i, v, v < 5, v + 1)", 27, 53, 53),
];

#[test]
fn costs_are_kubes() {
    for (source, min, max, runtime) in COSTS {
        let p = Program::compile_with(&env(), source, false).unwrap_or_else(|e| panic!("{source}: {e}"));
        assert_eq!(p.estimate(&TwelveChars), Estimate { min: *min, max: *max }, "estimate of {source}");
        let (result, cost) = run(source, false);
        assert!(result.is_ok(), "{source}: {result:?}");
        assert_eq!(cost, *runtime, "cost of {source}");
    }
}

#[test]
fn constants_cost_nothing_once_optimized() {
    // The list literal is computed at plan time, its `all` iterates: 3 × (2 + 3) + 1.
    assert_eq!(run("[1, 2, 3].all(x, x > 0)", true).1, 16);
    assert_eq!(run("[1, 2, 3].all(x, x > 0)", false).1, 26);
    // `in` a constant list is a set lookup, and `duration('1h')` a constant.
    assert_eq!(run("2 in [1, 2, 3]", true).1, 0);
    assert_eq!(run("duration('1h') > duration('1m')", true).1, 1);
}

#[test]
fn attributes_cost_one_plus_one_per_qualifier() {
    let p = Program::compile(
        &Env::new(Version::V1_32).declare("self", Type::map(Type::String, Type::map(Type::String, Type::Int))),
        "self.a.b == 1 && has(self.a.c)",
    )
    .unwrap();
    let inner = Value::Map(crate::value::Map::new(
        [(crate::value::Key::String("b".into()), Value::Int(1))].into_iter().collect(),
    ));
    let obj =
        Value::Map(crate::value::Map::new([(crate::value::Key::String("a".into()), inner)].into_iter().collect()));
    let e = p.evaluate(&Activation::new().bind("self", obj), None);
    assert_eq!(e.result, Ok(Value::Bool(false)));
    // self.a.b: 3, == 1: 1; has(self.a.c): a 1, c 1.
    assert_eq!(e.cost, 6);
}

#[test]
fn the_limit_stops_evaluation_with_cel_gos_error() {
    let p = Program::compile(
        &env(),
        "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(x, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(y, x != y || x == y))",
    )
    .unwrap();
    let e = p.evaluate(&Activation::new(), Some(100));
    assert_eq!(e.result, Err(EvalError::CostLimitExceeded));
    assert_eq!(e.result.unwrap_err().to_string(), "operation cancelled: actual cost limit exceeded");
    assert!(e.cost > 100 && e.cost < 110, "stops right after the limit: {}", e.cost);
}

#[test]
fn logic_absorbs_errors_as_cel_go_does() {
    yes("false || 1 / 0 == 0 || true");
    assert_eq!(eval("false && 1 / 0 == 0"), Ok(Value::Bool(false)));
    assert_eq!(eval("1 / 0 == 0 && false"), Ok(Value::Bool(false)));
    fails("1 / 0 == 0 && true", "division by zero");
    fails("1 / 0 == 0 || false", "division by zero");
    yes("[1, 0].exists(x, 1 / x == 1)");
    fails("[0, 1].all(x, 1 / x == 1)", "division by zero");
    assert_eq!(eval("[0, 2].all(x, 1 / x == 1)"), Ok(Value::Bool(false)), "false wins over an error");
    yes("true ? true : 1 / 0 == 0");
}

#[test]
fn equality_is_heterogeneous() {
    yes("dyn(1) == 1u && dyn(1) == 1.0 && dyn(1u) == 1.0");
    yes("dyn(1) != 'a'");
    yes("[dyn(1), dyn(2)] == [dyn(1.0), dyn(2u)]");
    yes("{'a': dyn(1)} == {'a': 1.0}");
    yes("null == null");
    yes("dyn({1: 'a'})[1u] == 'a'");
    yes("1 < 1.5 && 2u > 1 && -1 < 0u");
    fails("dyn(1) < 'a'", "no such overload");
}

#[test]
fn arithmetic_errors_are_cel_gos() {
    fails("9223372036854775807 + 1 > 0", "integer overflow");
    fails("0u - 1u > 0u", "unsigned integer overflow");
    fails("1 % 0 == 0", "modulus by zero");
    yes("1.0 / 0.0 > 1e308");
    fails("['x'].map(s, int(s)) == [0]", "type conversion error from 'string' to 'int'");
    fails("{'a': 1}['b'] == 1", "no such key: b");
    fails("[1][2] == 1", "index out of bounds: 2");
}

#[test]
fn macros_expand_as_cel_go_expands_them() {
    yes("[1, 2, 3].map(x, x * 2) == [2, 4, 6]");
    yes("[1, 2, 3].map(x, x > 1, x * 2) == [4, 6]");
    yes("[1, 2, 3].filter(x, x > 1) == [2, 3]");
    yes("[1, 2, 3].exists_one(x, x > 2)");
    yes("{'a': 1, 'b': 2}.all(k, k.size() == 1)");
    yes("[1, 2, 3].all(i, v, v == i + 1)");
    yes("{'a': 'b'}.transformMapEntry(k, v, {v: k}) == {'b': 'a'}");
    fails("[1, 1].transformMapEntry(i, v, {v: i}) == {}", "insert failed: key 1 already exists");
    yes("has({'a': 1}.a) && !has({'a': 1}.b)");
}

#[test]
fn optionals_follow_cel_go() {
    yes("optional.of(1).value() == 1");
    yes("optional.none().orValue(2) == 2");
    yes("{'a': 1}.?a.orValue(0) == 1 && {'a': 1}.?b.orValue(0) == 0");
    yes("[1, 2][?5].hasValue() == false");
    yes("[?optional.none(), ?optional.of(1)] == [1]");
    yes("optional.of(2).optMap(x, x * 2) == optional.of(4)");
    yes("optional.none().optMap(x, x * 2) == optional.none()");
    yes("optional.of(2).optFlatMap(x, optional.of(x + 1)).value() == 3");
    yes("optional.ofNonZeroValue('') == optional.none()");
    fails("optional.none().value() == 1", "optional.none() dereference");
}

#[test]
fn strings_and_time_follow_cel_go() {
    yes("'hello'.charAt(1) == 'e' && 'a,b'.split(',') == ['a', 'b']");
    yes("'%s is %d'.format(['x', 1]) == 'x is 1'");
    yes("timestamp('2024-01-02T03:04:05Z').getDayOfWeek() == 2");
    yes("timestamp('2024-01-02T03:04:05Z') + duration('1h') == timestamp('2024-01-02T04:04:05Z')");
    yes("string(duration('1h30m')) == '5400s'");
    yes("string(timestamp('2024-01-02T03:04:05.5Z')) == '2024-01-02T03:04:05.5Z'");
    yes("string(1.5) == '1.5' && string(1e6) == '1e+06'");
    yes("'abc'.matches('^a') && !'abc'.matches('^b')");
    yes("type(1) == int && type('a') == string && type([1]) == list");
}

#[test]
fn kube_libraries_run() {
    yes("isIP('10.0.0.1') && cidr('10.0.0.0/8').containsIP('10.1.2.3')");
    yes("url('https://example.com:8443/a').getHostname() == 'example.com'");
    yes("quantity('1Gi').isGreaterThan(quantity('1G'))");
    yes("format.dns1123Label().validate('Not_OK').hasValue()");
    yes("[3, 1, 2].max() == 3 && ['b', 'a'].isSorted() == false");
    yes("'abc 123'.find('[0-9]+') == '123'");
    yes("authorizer.group('').resource('pods').check('get').allowed()");
}

#[test]
fn compile_errors_read_as_cel_gos() {
    let err = |s: &str| Program::compile(&Env::new(Version::V1_31), s).unwrap_err().to_string();
    assert!(
        err("[1].all(i, v, true)").contains("undeclared reference to 'all' (in container '')"),
        "1.31 has no two-variable comprehensions"
    );
    assert!(err("'a'.reverse() == 'a'").contains("undeclared reference to 'reverse'"));
    assert!(err("isIP(1)").contains("found no matching overload for 'isIP' applied to '(int)'"));
    assert!(err("[1, 'a'].size() == 2").contains("expected type 'int' but found 'string'"));
    assert!(err("'a'.matches('(')").contains("invalid matches argument"));
    assert!(err("duration('1x') > duration('1s')").contains("invalid duration argument"));
    assert_eq!(
        err("'a'.find('(') == ''"),
        "program instantiation failed: error parsing regexp: missing closing ): `(`"
    );
    assert_eq!(err("int('abc') == 1"), "program instantiation failed: type conversion error from 'string' to 'int'");
}

#[test]
fn library_values_compare_as_kubes_equal() {
    // As the reference kube-apiserver 1.32 evaluated these rules on a custom resource.
    yes("quantity('1') == quantity('1')");
    yes("quantity('1').add(1) == quantity('2')");
    fails("quantity('2') == quantity('1').add(1)", "no such overload");
    fails("dyn(ip('1.2.3.4')) == 1", "no such overload");
    yes("!(1 == dyn(ip('1.2.3.4')))");
    yes("[dyn(ip('1.2.3.4'))] == [1]");
    yes("dyn(quantity('1')) != 1");
}
