//! cel-go's strings extension at version 2, kube's: `charAt`, `indexOf`, `lastIndexOf`,
//! `lowerAscii`, `upperAscii`, `replace`, `split`, `substring`, `trim`, `join`, `format` and
//! `strings.quote`, indexing by code point as cel-go does. Version 3's `reverse` is not kube's.

use crate::error::{EvalError, EvalResult};
use crate::stdlib::{convert, time};
use crate::value::Value;

/// Calls the strings extension's function `name`, if it is one of its functions.
pub fn call(name: &str, args: &[Value]) -> Option<EvalResult> {
    use Value as V;
    let out = match (name, args) {
        ("charAt", [V::String(s), V::Int(i)]) => char_at(s, *i),
        ("indexOf", [V::String(s), V::String(sub)]) => index_of(s, sub, 0),
        ("indexOf", [V::String(s), V::String(sub), V::Int(off)]) => index_of(s, sub, *off),
        ("lastIndexOf", [V::String(s), V::String(sub)]) => {
            let n = s.chars().count() as i64;
            if sub.is_empty() { Ok(V::Int(n)) } else { last_index_of(s, sub, n - 1) }
        }
        ("lastIndexOf", [V::String(s), V::String(sub), V::Int(off)]) => last_index_of(s, sub, *off),
        ("lowerAscii", [V::String(s)]) => Ok(V::string(s.to_ascii_lowercase())),
        ("upperAscii", [V::String(s)]) => Ok(V::string(s.to_ascii_uppercase())),
        ("replace", [V::String(s), V::String(old), V::String(new)]) => Ok(V::string(replace(s, old, new, -1))),
        ("replace", [V::String(s), V::String(old), V::String(new), V::Int(n)]) => {
            Ok(V::string(replace(s, old, new, *n)))
        }
        ("split", [V::String(s), V::String(sep)]) => Ok(strings(split(s, sep, -1))),
        ("split", [V::String(s), V::String(sep), V::Int(n)]) => Ok(strings(split(s, sep, *n))),
        ("substring", [V::String(s), V::Int(start)]) => {
            let chars: Vec<char> = s.chars().collect();
            match usize::try_from(*start).ok().filter(|i| *i <= chars.len()) {
                Some(i) => Ok(V::string(chars[i..].iter().collect::<String>())),
                None => Err(EvalError::msg(format!("index out of range: {start}"))),
            }
        }
        ("substring", [V::String(s), V::Int(start), V::Int(end)]) => substring(s, *start, *end),
        ("trim", [V::String(s)]) => Ok(V::string(s.trim())),
        ("join", [V::List(l)]) => join(l.items.iter(), ""),
        ("join", [V::List(l), V::String(sep)]) => join(l.items.iter(), sep),
        ("format", [V::String(f), V::List(l)]) => format(f, &l.items).map(V::string).map_err(EvalError::msg),
        ("strings.quote", [V::String(s)]) => Ok(V::string(quote(s))),
        _ => return None,
    };
    Some(out)
}

fn strings(items: Vec<String>) -> Value {
    Value::list(items.into_iter().map(Value::string).collect())
}

fn char_at(s: &str, i: i64) -> EvalResult {
    let n = s.chars().count() as i64;
    if i < 0 || i > n {
        return Err(EvalError::msg(format!("index out of range: {i}")));
    }
    Ok(Value::string(s.chars().nth(i as usize).map(String::from).unwrap_or_default()))
}

fn index_of(s: &str, sub: &str, offset: i64) -> EvalResult {
    if sub.is_empty() {
        return Ok(Value::Int(offset));
    }
    if offset < 0 {
        return Err(EvalError::msg(format!("index out of range: {offset}")));
    }
    let runes: Vec<char> = s.chars().collect();
    let subs: Vec<char> = sub.chars().collect();
    let off = offset as usize;
    if off >= runes.len() {
        return Ok(Value::Int(-1));
    }
    let last = runes.len().saturating_sub(subs.len() - 1);
    Ok(Value::Int((off..last).find(|&i| runes[i..i + subs.len()] == subs[..]).map_or(-1, |i| i as i64)))
}

fn last_index_of(s: &str, sub: &str, offset: i64) -> EvalResult {
    if sub.is_empty() {
        return Ok(Value::Int(offset));
    }
    if offset < 0 {
        return Err(EvalError::msg(format!("index out of range: {offset}")));
    }
    let runes: Vec<char> = s.chars().collect();
    let subs: Vec<char> = sub.chars().collect();
    let mut off = offset;
    if off >= runes.len() as i64 {
        return Ok(Value::Int(-1));
    }
    if off > runes.len() as i64 - subs.len() as i64 {
        off = runes.len() as i64 - subs.len() as i64;
    }
    let mut i = off;
    while i >= 0 {
        let start = i as usize;
        if runes[start..start + subs.len()] == subs[..] {
            return Ok(Value::Int(i));
        }
        i -= 1;
    }
    Ok(Value::Int(-1))
}

fn substring(s: &str, start: i64, end: i64) -> EvalResult {
    let chars: Vec<char> = s.chars().collect();
    let l = chars.len() as i64;
    if start > end {
        return Err(EvalError::msg(format!("invalid substring range. start: {start}, end: {end}")));
    }
    if start < 0 || start > l {
        return Err(EvalError::msg(format!("index out of range: {start}")));
    }
    if end < 0 || end > l {
        return Err(EvalError::msg(format!("index out of range: {end}")));
    }
    Ok(Value::string(chars[start as usize..end as usize].iter().collect::<String>()))
}

/// Go's `strings.Replace`: `n < 0` replaces all; an empty `old` matches before every rune and
/// at the end.
fn replace(s: &str, old: &str, new: &str, n: i64) -> String {
    if n == 0 || (old == new) {
        return s.to_string();
    }
    let limit = if n < 0 { usize::MAX } else { n as usize };
    if old.is_empty() {
        let mut out = String::new();
        let mut done = 0;
        for c in s.chars() {
            if done < limit {
                out.push_str(new);
                done += 1;
            }
            out.push(c);
        }
        if done < limit {
            out.push_str(new);
        }
        return out;
    }
    s.replacen(old, new, limit)
}

/// Go's `strings.SplitN`: `n == 0` gives none, `n < 0` all; an empty separator splits into
/// runes.
fn split(s: &str, sep: &str, n: i64) -> Vec<String> {
    if n == 0 {
        return Vec::new();
    }
    if sep.is_empty() {
        let chars: Vec<String> = s.chars().map(String::from).collect();
        if n < 0 || chars.len() <= n as usize {
            return chars;
        }
        let k = n as usize;
        let mut out: Vec<String> = chars[..k - 1].to_vec();
        out.push(chars[k - 1..].concat());
        return out;
    }
    if n < 0 {
        return s.split(sep).map(String::from).collect();
    }
    s.splitn(n as usize, sep).map(String::from).collect()
}

fn join<'v>(items: impl Iterator<Item = &'v Value>, sep: &str) -> EvalResult {
    let mut out = String::new();
    for (i, v) in items.enumerate() {
        if i > 0 {
            out.push_str(sep);
        }
        match v {
            Value::String(s) => out.push_str(s),
            other => return Err(EvalError::msg(format!("join: invalid input: {other}"))),
        }
    }
    Ok(Value::string(out))
}

/// cel-go's `strings.quote`.
pub fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// cel-go's `string.format`, with its error messages.
pub fn format(f: &str, args: &[Value]) -> Result<String, String> {
    let bytes = f.as_bytes();
    let mut out = String::new();
    let (mut i, mut arg) = (0, 0);
    while i < bytes.len() {
        if bytes[i] != b'%' {
            let c = f[i..].chars().next().expect("a character");
            out.push(c);
            i += c.len_utf8();
            continue;
        }
        if bytes.get(i + 1) == Some(&b'%') {
            out.push('%');
            i += 2;
            continue;
        }
        let Some(value) = args.get(arg) else { return Err(format!("index {arg} out of range")) };
        if i + 1 >= bytes.len() {
            return Err("unexpected end of string".into());
        }
        let (read, clause) =
            parse_clause(&f[i + 1..]).map_err(|e| format!("could not parse formatting clause: {e}"))?;
        let text = clause.apply(value).map_err(|e| format!("error during formatting: {e}"))?;
        out.push_str(&text);
        i += 1 + read;
        arg += 1;
    }
    Ok(out)
}

/// A formatting clause: its verb and precision.
pub struct Clause {
    verb: char,
    precision: Option<usize>,
}

/// Parses a clause after `%`: (bytes read, the clause).
pub fn parse_clause(s: &str) -> Result<(usize, Clause), String> {
    let b = s.as_bytes();
    let mut i = 0;
    let mut precision = None;
    if b.first() == Some(&b'.') {
        i = 1;
        let start = i;
        loop {
            if i >= b.len() {
                return Err("error while parsing precision: could not find end of precision specifier".into());
            }
            if !b[i].is_ascii_digit() {
                break;
            }
            i += 1;
        }
        precision =
            Some(s[start..i].parse::<usize>().map_err(|e| {
                format!("error while parsing precision: error while converting precision to integer: {e}")
            })?);
    }
    let verb = s[i..].chars().next().ok_or("unexpected end of string")?;
    if !"sdfebxXo".contains(verb) {
        return Err(format!("unrecognized formatting clause \"{verb}\""));
    }
    Ok((i + verb.len_utf8(), Clause { verb, precision }))
}

impl Clause {
    /// Formats `v`.
    pub fn apply(&self, v: &Value) -> Result<String, String> {
        let type_name = v.type_name();
        match self.verb {
            's' => format_string(v),
            'd' => match v {
                Value::Int(i) => Ok(i.to_string()),
                Value::Uint(u) => Ok(u.to_string()),
                _ => Err(format!("decimal clause can only be used on integers, was given {type_name}")),
            },
            'f' | 'e' => {
                let d = match v {
                    Value::Double(d) => *d,
                    Value::String(s) if matches!(&**s, "NaN" | "Infinity" | "-Infinity") => match &**s {
                        "NaN" => f64::NAN,
                        "Infinity" => f64::INFINITY,
                        _ => f64::NEG_INFINITY,
                    },
                    _ if self.verb == 'f' => {
                        return Err(format!("fixed-point clause can only be used on doubles, was given {type_name}"));
                    }
                    _ => return Err(format!("scientific clause can only be used on doubles, was given {type_name}")),
                };
                let p = self.precision.unwrap_or(6);
                Ok(if self.verb == 'f' { fixed(d, p) } else { scientific(d, p) })
            }
            'b' => match v {
                Value::Int(i) => Ok(if *i < 0 { format!("-{:b}", i.unsigned_abs()) } else { format!("{i:b}") }),
                Value::Uint(u) => Ok(format!("{u:b}")),
                Value::Bool(b) => Ok(if *b { "1" } else { "0" }.into()),
                _ => Err(format!("only integers and bools can be formatted as binary, was given {type_name}")),
            },
            'o' => match v {
                Value::Int(i) => Ok(if *i < 0 { format!("-{:o}", i.unsigned_abs()) } else { format!("{i:o}") }),
                Value::Uint(u) => Ok(format!("{u:o}")),
                _ => Err(format!("octal clause can only be used on integers, was given {type_name}")),
            },
            _ => {
                let upper = self.verb == 'X';
                let hex = match v {
                    Value::Int(i) => {
                        if *i < 0 {
                            format!("-{:x}", i.unsigned_abs())
                        } else {
                            format!("{i:x}")
                        }
                    }
                    Value::Uint(u) => format!("{u:x}"),
                    Value::String(s) => s.bytes().map(|b| format!("{b:02x}")).collect(),
                    Value::Bytes(b) => b.iter().map(|b| format!("{b:02x}")).collect(),
                    _ => {
                        return Err(format!(
                            "only integers, byte buffers, and strings can be formatted as hex, was given {type_name}"
                        ));
                    }
                };
                Ok(if upper { hex.to_uppercase() } else { hex })
            }
        }
    }
}

/// `%s`.
fn format_string(v: &Value) -> Result<String, String> {
    match v {
        Value::List(l) => {
            let parts: Result<Vec<String>, String> = l.items.iter().map(format_element).collect();
            Ok(format!("[{}]", parts?.join(", ")))
        }
        Value::Map(m) => {
            let mut parts = Vec::new();
            for (k, v) in m.entries.iter() {
                parts.push(format!("{}: {}", format_element(&k.to_value())?, format_element(v)?));
            }
            parts.sort();
            Ok(format!("{{{}}}", parts.join(", ")))
        }
        Value::Null => Ok("null".into()),
        Value::Type(t) => Ok(t.0.to_string()),
        Value::Int(_)
        | Value::Uint(_)
        | Value::Double(_)
        | Value::Bool(_)
        | Value::String(_)
        | Value::Timestamp(_)
        | Value::Bytes(_)
        | Value::Duration(_) => match convert::convert("string", v) {
            Ok(Value::String(s)) => Ok(s.to_string()),
            _ => Err(format!("could not convert argument {v} to string")),
        },
        other => Err(format!(
            "string clause can only be used on strings, bools, bytes, ints, doubles, maps, lists, types, durations, and timestamps, was given {}",
            other.type_name()
        )),
    }
}

/// An element of a list or map under `%s`: as a CEL literal.
fn format_element(v: &Value) -> Result<String, String> {
    match v {
        Value::String(s) => Ok(crate::golang::quote(s)),
        Value::Bytes(b) => Ok(format!("b{}", crate::golang::quote(&String::from_utf8_lossy(b)))),
        Value::Double(d) if d.is_nan() || d.is_infinite() => Ok(crate::golang::quote(&convert::format_double(*d))),
        Value::Double(d) => Ok(format!("{d:.6}")),
        Value::Timestamp(t) => Ok(format!("timestamp({})", crate::golang::quote(&time::format_timestamp(t)))),
        Value::Duration(d) => Ok(format!("duration({})", crate::golang::quote(&time::format_duration(*d)))),
        Value::Type(t) => Ok(format!("type({})", t.0)),
        Value::Int(_) | Value::Uint(_) => Ok(v.to_string()),
        other => format_string(other),
    }
}

/// `%.Nf` as Go's `message` printer prints it in `en`: thousands separated by commas.
fn fixed(d: f64, precision: usize) -> String {
    if d.is_nan() {
        return "NaN".into();
    }
    if d.is_infinite() {
        return if d > 0.0 { "+Inf".into() } else { "-Inf".into() };
    }
    let s = format!("{:.*}", precision, d.abs());
    let (int, frac) = s.split_once('.').map_or((s.as_str(), None), |(a, b)| (a, Some(b)));
    let mut grouped = String::new();
    for (i, c) in int.chars().enumerate() {
        if i > 0 && (int.len() - i) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(c);
    }
    let sign = if d.is_sign_negative() && d != 0.0 { "-" } else { "" };
    match frac {
        Some(f) => format!("{sign}{grouped}.{f}"),
        None => format!("{sign}{grouped}"),
    }
}

/// `%.Ne`: `1.234500e+03`.
fn scientific(d: f64, precision: usize) -> String {
    if d.is_nan() {
        return "NaN".into();
    }
    if d.is_infinite() {
        return if d > 0.0 { "+Inf".into() } else { "-Inf".into() };
    }
    let s = format!("{:.*e}", precision, d);
    let (m, e) = s.split_once('e').expect("exponent form");
    let e: i32 = e.parse().expect("exponent");
    format!("{m}e{}{:02}", if e < 0 { '-' } else { '+' }, e.abs())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &str) -> Value {
        Value::string(v)
    }

    #[test]
    fn the_extension_behaves_as_its_documentation_says() {
        assert_eq!(call("charAt", &[s("hello"), Value::Int(4)]), Some(Ok(s("o"))));
        assert_eq!(call("charAt", &[s("hello"), Value::Int(5)]), Some(Ok(s(""))));
        assert_eq!(call("charAt", &[s("hello"), Value::Int(-1)]), Some(Err(EvalError::msg("index out of range: -1"))));
        assert_eq!(call("indexOf", &[s("hello mellow"), s("ello")]), Some(Ok(Value::Int(1))));
        assert_eq!(call("indexOf", &[s("hello mellow"), s("ello"), Value::Int(2)]), Some(Ok(Value::Int(7))));
        assert_eq!(call("indexOf", &[s("hello mellow"), s("")]), Some(Ok(Value::Int(0))));
        assert_eq!(call("lastIndexOf", &[s("hello mellow"), s("ello")]), Some(Ok(Value::Int(7))));
        assert_eq!(call("lastIndexOf", &[s("hello mellow"), s("ello"), Value::Int(6)]), Some(Ok(Value::Int(1))));
        assert_eq!(call("lastIndexOf", &[s("hello mellow"), s("")]), Some(Ok(Value::Int(12))));
        assert_eq!(call("replace", &[s("hello hello"), s("he"), s("we")]), Some(Ok(s("wello wello"))));
        assert_eq!(call("replace", &[s("hello hello"), s("he"), s("we"), Value::Int(1)]), Some(Ok(s("wello hello"))));
        let split = call("split", &[s("hello hello hello"), s(" "), Value::Int(2)]).unwrap().unwrap();
        assert_eq!(split, Value::list(vec![s("hello"), s("hello hello")]));
        assert_eq!(call("split", &[s("hello"), s(" "), Value::Int(0)]), Some(Ok(Value::list(vec![]))));
        assert_eq!(call("substring", &[s("tacocat"), Value::Int(4)]), Some(Ok(s("cat"))));
        assert_eq!(call("substring", &[s("tacocat"), Value::Int(0), Value::Int(4)]), Some(Ok(s("taco"))));
        assert_eq!(
            call("substring", &[s("tacocat"), Value::Int(4), Value::Int(2)]),
            Some(Err(EvalError::msg("invalid substring range. start: 4, end: 2")))
        );
        assert_eq!(call("trim", &[s("  \ttrim\n    ")]), Some(Ok(s("trim"))));
        assert_eq!(call("lowerAscii", &[s("TacoCÆt Xii")]), Some(Ok(s("tacocÆt xii"))));
        assert_eq!(call("strings.quote", &[s("first\nsecond")]), Some(Ok(s("\"first\\nsecond\""))));
        assert_eq!(call("reverse", &[s("abc")]), None, "version 3 only");
    }

    #[test]
    fn format_follows_cel_go() {
        assert_eq!(format("%s, %d", &[s("a"), Value::Int(2)]), Ok("a, 2".into()));
        assert_eq!(format("%.2f", &[Value::Double(1234.567)]), Ok("1,234.57".into()));
        assert_eq!(format("%e", &[Value::Double(1234.5)]), Ok("1.234500e+03".into()));
        assert_eq!(
            format("%x %X %o %b", &[Value::Int(255), Value::Int(255), Value::Int(8), Value::Int(5)]),
            Ok("ff FF 10 101".into())
        );
        assert_eq!(format("%s", &[Value::list(vec![s("a"), Value::Int(1)])]), Ok("[\"a\", 1]".into()));
        assert_eq!(
            format("%d", &[s("a")]),
            Err("error during formatting: decimal clause can only be used on integers, was given string".into())
        );
        assert_eq!(
            format("%q", &[s("a")]),
            Err("could not parse formatting clause: unrecognized formatting clause \"q\"".into())
        );
        assert_eq!(format("%s %s", &[s("a")]), Err("index 1 out of range".into()));
    }
}
