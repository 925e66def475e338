//! Go's wording, so error messages read as kube-apiserver's do.
//!
//! kube-apiserver decodes patch bodies with Go's `encoding/json` (or its `sigs.k8s.io/json`
//! fork, which words errors the same) and builds strategic-merge errors with `fmt`'s `%v` and
//! `%s` of `map[string]interface{}` values. Clients print these messages verbatim
//! (`Error from server (BadRequest): invalid character 'x' looking for beginning of value`),
//! so we reproduce them: a JSON syntax checker that stops at the same byte with the same words
//! as Go's scanner, and formatters for decoded values the way `fmt` prints them.

use crate::gofmt::json_kind;
use serde_json::Value;

/// Go's `maxNestingDepth` for JSON documents.
const MAX_DEPTH: usize = 10_000;

/// What the scanner is inside of, one entry per open object or array.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Container {
    ObjectKey,
    ObjectValue,
    ArrayValue,
}

/// The scanner's position within one value.
#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    BeginValue,
    BeginValueOrEmpty,
    BeginStringOrEmpty,
    BeginString,
    EndValue,
    EndTop,
    InString,
    InStringEsc,
    /// Inside `\u`, with this many hex digits read.
    InStringEscU(u8),
    Neg,
    One,
    Zero,
    Dot,
    Dot0,
    E,
    ESign,
    E0,
    /// Inside a literal: the bytes still expected and the literal's name.
    Literal(&'static [u8], &'static str),
}

fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\r' | b'\n')
}

/// Go's `quoteChar`: the offending byte as Go's scanner shows it, quotes included.
fn quote_char(c: u8) -> String {
    match c {
        b'\'' => r"'\''".to_string(),
        b'"' => "'\"'".to_string(),
        b'\\' => r"'\\'".to_string(),
        0x07 => r"'\a'".to_string(),
        0x08 => r"'\b'".to_string(),
        0x0c => r"'\f'".to_string(),
        b'\n' => r"'\n'".to_string(),
        b'\r' => r"'\r'".to_string(),
        b'\t' => r"'\t'".to_string(),
        0x0b => r"'\v'".to_string(),
        // Go converts the byte to a rune (Latin-1) before quoting it.
        c if c < 0x20 || c == 0x7f => format!(r"'\x{c:02x}'"),
        c if (0x80..=0xa0).contains(&c) || c == 0xad => format!(r"'\u{c:04x}'"),
        c => format!("'{}'", c as char),
    }
}

struct Scanner {
    state: State,
    stack: Vec<Container>,
}

impl Scanner {
    fn error(c: u8, context: &str) -> String {
        format!("invalid character {} {context}", quote_char(c))
    }

    fn push(&mut self, container: Container) -> Result<(), String> {
        self.stack.push(container);
        if self.stack.len() > MAX_DEPTH {
            return Err("exceeded max depth".to_string());
        }
        Ok(())
    }

    fn begin_value(&mut self, c: u8) -> Result<(), String> {
        if is_space(c) {
            return Ok(());
        }
        self.state = match c {
            b'{' => {
                self.push(Container::ObjectKey)?;
                State::BeginStringOrEmpty
            }
            b'[' => {
                self.push(Container::ArrayValue)?;
                State::BeginValueOrEmpty
            }
            b'"' => State::InString,
            b'-' => State::Neg,
            b'0' => State::Zero,
            b'1'..=b'9' => State::One,
            b't' => State::Literal(b"rue", "true"),
            b'f' => State::Literal(b"alse", "false"),
            b'n' => State::Literal(b"ull", "null"),
            _ => return Err(Self::error(c, "looking for beginning of value")),
        };
        Ok(())
    }

    fn end_value(&mut self, c: u8) -> Result<(), String> {
        let Some(&top) = self.stack.last() else {
            self.state = State::EndTop;
            return self.end_top(c);
        };
        if is_space(c) {
            self.state = State::EndValue;
            return Ok(());
        }
        match (top, c) {
            (Container::ObjectKey, b':') => {
                *self.stack.last_mut().expect("checked above") = Container::ObjectValue;
                self.state = State::BeginValue;
            }
            (Container::ObjectKey, _) => return Err(Self::error(c, "after object key")),
            (Container::ObjectValue, b',') => {
                *self.stack.last_mut().expect("checked above") = Container::ObjectKey;
                self.state = State::BeginString;
            }
            (Container::ObjectValue, b'}') => self.pop(),
            (Container::ObjectValue, _) => return Err(Self::error(c, "after object key:value pair")),
            (Container::ArrayValue, b',') => self.state = State::BeginValue,
            (Container::ArrayValue, b']') => self.pop(),
            (Container::ArrayValue, _) => return Err(Self::error(c, "after array element")),
        }
        Ok(())
    }

    fn pop(&mut self) {
        self.stack.pop();
        self.state = if self.stack.is_empty() { State::EndTop } else { State::EndValue };
    }

    fn end_top(&mut self, c: u8) -> Result<(), String> {
        if is_space(c) { Ok(()) } else { Err(Self::error(c, "after top-level value")) }
    }

    fn step(&mut self, c: u8) -> Result<(), String> {
        match self.state {
            State::BeginValue => self.begin_value(c),
            State::BeginValueOrEmpty => {
                if is_space(c) {
                    Ok(())
                } else if c == b']' {
                    self.end_value(c)
                } else {
                    self.begin_value(c)
                }
            }
            State::BeginStringOrEmpty => {
                if is_space(c) {
                    Ok(())
                } else if c == b'}' {
                    *self.stack.last_mut().expect("inside an object") = Container::ObjectValue;
                    self.end_value(c)
                } else {
                    self.begin_string(c)
                }
            }
            State::BeginString => self.begin_string(c),
            State::EndValue => self.end_value(c),
            State::EndTop => self.end_top(c),
            State::InString => {
                match c {
                    b'"' => self.state = State::EndValue,
                    b'\\' => self.state = State::InStringEsc,
                    c if c < 0x20 => return Err(Self::error(c, "in string literal")),
                    _ => {}
                }
                Ok(())
            }
            State::InStringEsc => match c {
                b'b' | b'f' | b'n' | b'r' | b't' | b'\\' | b'/' | b'"' => {
                    self.state = State::InString;
                    Ok(())
                }
                b'u' => {
                    self.state = State::InStringEscU(0);
                    Ok(())
                }
                _ => Err(Self::error(c, "in string escape code")),
            },
            State::InStringEscU(n) => {
                if !c.is_ascii_hexdigit() {
                    return Err(Self::error(c, r"in \u hexadecimal character escape"));
                }
                self.state = if n == 3 { State::InString } else { State::InStringEscU(n + 1) };
                Ok(())
            }
            State::Neg => match c {
                b'0' => {
                    self.state = State::Zero;
                    Ok(())
                }
                b'1'..=b'9' => {
                    self.state = State::One;
                    Ok(())
                }
                _ => Err(Self::error(c, "in numeric literal")),
            },
            State::One => {
                if c.is_ascii_digit() {
                    Ok(())
                } else {
                    self.zero(c)
                }
            }
            State::Zero => self.zero(c),
            State::Dot => {
                if c.is_ascii_digit() {
                    self.state = State::Dot0;
                    Ok(())
                } else {
                    Err(Self::error(c, "after decimal point in numeric literal"))
                }
            }
            State::Dot0 => match c {
                b'0'..=b'9' => Ok(()),
                b'e' | b'E' => {
                    self.state = State::E;
                    Ok(())
                }
                _ => self.end_value(c),
            },
            State::E => {
                if c == b'+' || c == b'-' {
                    self.state = State::ESign;
                    Ok(())
                } else {
                    self.e_sign(c)
                }
            }
            State::ESign => self.e_sign(c),
            State::E0 => {
                if c.is_ascii_digit() {
                    Ok(())
                } else {
                    self.end_value(c)
                }
            }
            State::Literal(rest, name) => {
                if c != rest[0] {
                    return Err(Self::error(c, &format!("in literal {name} (expecting {})", quote_char(rest[0]))));
                }
                self.state = if rest.len() == 1 { State::EndValue } else { State::Literal(&rest[1..], name) };
                Ok(())
            }
        }
    }

    fn begin_string(&mut self, c: u8) -> Result<(), String> {
        if is_space(c) {
            return Ok(());
        }
        if c == b'"' {
            self.state = State::InString;
            return Ok(());
        }
        Err(Self::error(c, "looking for beginning of object key string"))
    }

    fn zero(&mut self, c: u8) -> Result<(), String> {
        match c {
            b'.' => {
                self.state = State::Dot;
                Ok(())
            }
            b'e' | b'E' => {
                self.state = State::E;
                Ok(())
            }
            _ => self.end_value(c),
        }
    }

    fn e_sign(&mut self, c: u8) -> Result<(), String> {
        if c.is_ascii_digit() {
            self.state = State::E0;
            Ok(())
        } else {
            Err(Self::error(c, "in exponent of numeric literal"))
        }
    }
}

/// Checks `data` is one JSON value the way Go's `json.Unmarshal` does before decoding, and
/// returns Go's message for the first syntax error (`invalid character '}' after array
/// element`, `unexpected end of JSON input`).
pub(crate) fn check_syntax(data: &[u8]) -> Result<(), String> {
    let mut scanner = Scanner { state: State::BeginValue, stack: Vec::new() };
    for &c in data {
        scanner.step(c)?;
    }
    if scanner.state == State::EndTop {
        return Ok(());
    }
    // Go's scanner.eof(): a trailing space ends a number at the top level.
    scanner.step(b' ')?;
    if scanner.state == State::EndTop { Ok(()) } else { Err("unexpected end of JSON input".to_string()) }
}

/// Go's `json: cannot unmarshal <kind> into Go value of type <go_type>`.
pub(crate) fn type_error(value: &Value, go_type: &str) -> String {
    format!("json: cannot unmarshal {} into Go value of type {go_type}", json_kind(value))
}

/// `fmt.Sprintf("%s", reflect.TypeOf(v))` for a decoded JSON value (integers decode as
/// `int64` because kube decodes patches with `UnmarshalCaseSensitivePreserveInts`).
pub(crate) fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "%!s(<nil>)",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "float64",
        Value::Number(_) => "int64",
        Value::String(_) => "string",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
    }
}

/// Go's `%v` of a float64 (`strconv`'s `'g'` with the shortest precision): shortest digits,
/// exponent form (`1e+06`, `1e-05`) when the decimal exponent is below -4 or at least 6.
fn go_float(f: f64) -> String {
    if f == 0.0 {
        return if f.is_sign_negative() { "-0".into() } else { "0".into() };
    }
    let sci = format!("{f:e}"); // shortest digits: "1.5e7", "-1e-5"
    let (mantissa, exp) = sci.split_once('e').expect("{:e} always has an exponent");
    let exp: i32 = exp.parse().expect("{:e} exponent is an integer");
    if !(-4..6).contains(&exp) {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{mantissa}e{sign}{:02}", exp.abs())
    } else {
        format!("{f}")
    }
}

fn go_number(n: &serde_json::Number) -> String {
    if let Some(i) = n.as_i64() {
        i.to_string()
    } else if let Some(u) = n.as_u64() {
        u.to_string()
    } else {
        go_float(n.as_f64().unwrap_or_default())
    }
}

/// Go's `%v` of a decoded JSON value: `map[image:nginx name:web]`, `[a b]`, `<nil>`.
pub(crate) fn fmt_v(value: &Value) -> String {
    match value {
        Value::Null => "<nil>".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => go_number(n),
        Value::String(s) => s.clone(),
        Value::Array(a) => format!("[{}]", a.iter().map(fmt_v).collect::<Vec<_>>().join(" ")),
        Value::Object(m) => fmt_map(m, fmt_v),
    }
}

/// Go's `%s` of a decoded JSON value: strings as they are, other scalars as `%!s(int64=1)`.
pub(crate) fn fmt_s(value: &Value) -> String {
    match value {
        Value::Null => "%!s(<nil>)".into(),
        Value::Bool(b) => format!("%!s(bool={b})"),
        Value::Number(n) => format!("%!s({}={})", type_name(value), go_number(n)),
        Value::String(s) => s.clone(),
        Value::Array(a) => format!("[{}]", a.iter().map(fmt_s).collect::<Vec<_>>().join(" ")),
        Value::Object(m) => fmt_map(m, fmt_s),
    }
}

/// Go prints maps with their keys sorted.
fn fmt_map(map: &serde_json::Map<String, Value>, fmt: fn(&Value) -> String) -> String {
    let mut keys: Vec<&String> = map.keys().collect();
    keys.sort();
    let entries: Vec<String> = keys.into_iter().map(|k| format!("{k}:{}", fmt(&map[k]))).collect();
    format!("map[{}]", entries.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn syntax(s: &str) -> String {
        check_syntax(s.as_bytes()).expect_err(s)
    }

    #[test]
    fn valid_documents_pass() {
        for doc in
            ["{}", " [ ] ", r#"{"a":[1,-2.5e+3,0,true,false,null,"x\u00e9\n"],"b":{}}"#, "0", "-0.1E5", "\"s\"", "null"]
        {
            assert_eq!(check_syntax(doc.as_bytes()), Ok(()), "{doc}");
        }
    }

    #[test]
    fn syntax_errors_are_worded_as_go_does() {
        assert_eq!(syntax(""), "unexpected end of JSON input");
        assert_eq!(syntax("   "), "unexpected end of JSON input");
        assert_eq!(syntax("{\"a\":1"), "unexpected end of JSON input");
        assert_eq!(syntax("x"), "invalid character 'x' looking for beginning of value");
        assert_eq!(syntax("{a:1}"), "invalid character 'a' looking for beginning of object key string");
        assert_eq!(syntax("{\"a\" 1}"), "invalid character '1' after object key");
        assert_eq!(syntax("{\"a\":1 \"b\":2}"), "invalid character '\"' after object key:value pair");
        assert_eq!(syntax("[1 2]"), "invalid character '2' after array element");
        assert_eq!(syntax("[1,]"), "invalid character ']' looking for beginning of value");
        assert_eq!(syntax("{} {}"), "invalid character '{' after top-level value");
        assert_eq!(syntax("01"), "invalid character '1' after top-level value");
        assert_eq!(syntax("1."), "invalid character ' ' after decimal point in numeric literal");
        assert_eq!(syntax("1.x"), "invalid character 'x' after decimal point in numeric literal");
        assert_eq!(syntax("1ex"), "invalid character 'x' in exponent of numeric literal");
        assert_eq!(syntax("-x"), "invalid character 'x' in numeric literal");
        assert_eq!(syntax("tru "), "invalid character ' ' in literal true (expecting 'e')");
        // At the end of input Go feeds the scanner one space, which a literal rejects.
        assert_eq!(syntax("nul"), "invalid character ' ' in literal null (expecting 'l')");
        assert_eq!(syntax("\"abc"), "unexpected end of JSON input");
        assert_eq!(syntax("fals!"), "invalid character '!' in literal false (expecting 'e')");
        assert_eq!(syntax("\"a\tb\""), r"invalid character '\t' in string literal");
        assert_eq!(syntax(r#""\q""#), "invalid character 'q' in string escape code");
        assert_eq!(syntax(r#""\u12g4""#), r"invalid character 'g' in \u hexadecimal character escape");
        assert_eq!(syntax("'a'"), r"invalid character '\'' looking for beginning of value");
        assert_eq!(syntax("\u{1}"), r"invalid character '\x01' looking for beginning of value");
        // Go quotes the first byte of a multi-byte character as a Latin-1 rune.
        assert_eq!(syntax("é"), "invalid character 'Ã' looking for beginning of value");
    }

    #[test]
    fn values_format_as_go_fmt_does() {
        let v = json!({"name": "web", "ports": [80, 1.5], "env": null, "ok": true, "m": {"b": 1, "a": "x"}});
        assert_eq!(fmt_v(&v), "map[env:<nil> m:map[a:x b:1] name:web ok:true ports:[80 1.5]]");
        assert_eq!(fmt_s(&json!(5)), "%!s(int64=5)");
        assert_eq!(fmt_s(&json!("merge")), "merge");
        assert_eq!(fmt_s(&json!({"$patch": 1})), "map[$patch:%!s(int64=1)]");
        assert_eq!(fmt_v(&json!(1_000_000.0)), "1e+06");
        assert_eq!(fmt_v(&json!(100_000.0)), "100000");
        assert_eq!(fmt_v(&json!(0.0001)), "0.0001");
        assert_eq!(fmt_v(&json!(0.00001)), "1e-05");
        assert_eq!(fmt_v(&json!(1.7976931348623157e308)), "1.7976931348623157e+308");
        assert_eq!(type_name(&json!([])), "[]interface {}");
        assert_eq!(
            type_error(&json!([]), "map[string]interface {}"),
            "json: cannot unmarshal array into Go value of type map[string]interface {}"
        );
    }
}
