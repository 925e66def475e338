//! `pattern`: Go (RE2) regular expressions run with the `regex` crate, compiled once per
//! pattern and cached (schemas are reused for every object of a kind; kube-openapi caches too).
//!
//! The two syntaxes are close; the translation covers what differs in meaning:
//! - Go's `\d`, `\w`, `\s`, `\b` (and negations) are ASCII-only; the crate's are Unicode, so
//!   they are rewritten to ASCII classes (`\s` is Go's `[\t\n\f\r ]`).
//! - Go's `\Q...\E` literal spans are escaped.
//! - Octal escapes (`\123`) are allowed as in Go.
//!
//! Known divergences: Go's `\C` and a few rarely used escapes are rejected here, and the text
//! of a compile error only follows Go's for the common cases (`missing argument to repetition
//! operator`, `missing closing )`, `unexpected )`, `missing closing ]`).

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};

use regex::{Regex, RegexBuilder};

/// A compiled pattern, or Go's compile error text.
type Compiled = Result<Arc<Regex>, String>;

/// Beyond this many distinct patterns the cache starts over (a bound, not an LRU: schemas
/// rarely carry that many).
const CACHE_MAX: usize = 4096;

static CACHE: LazyLock<Mutex<HashMap<String, Compiled>>> = LazyLock::new(|| Mutex::new(HashMap::new()));

/// The compiled pattern, or `error parsing regexp: ...` worded as Go's `regexp.Compile`.
pub(crate) fn compile(pattern: &str) -> Compiled {
    if let Some(hit) = CACHE.lock().unwrap_or_else(|e| e.into_inner()).get(pattern) {
        return hit.clone();
    }
    let compiled = RegexBuilder::new(&translate(pattern))
        .octal(true)
        .size_limit(1 << 22)
        .build()
        .map(Arc::new)
        .map_err(|_| go_error(pattern));
    let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    if cache.len() >= CACHE_MAX {
        cache.clear();
    }
    cache.insert(pattern.to_string(), compiled.clone());
    compiled
}

/// Rewrites the Go-only or differently-meant escapes (see the module docs).
fn translate(p: &str) -> String {
    let mut out = String::with_capacity(p.len() + 8);
    let mut chars = p.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let Some(e) = chars.next() else {
            out.push('\\');
            break;
        };
        match e {
            'd' => out.push_str("[0-9]"),
            'D' => out.push_str("[^0-9]"),
            'w' => out.push_str("[0-9A-Za-z_]"),
            'W' => out.push_str("[^0-9A-Za-z_]"),
            's' => out.push_str("[\\t\\n\\f\\r ]"),
            'S' => out.push_str("[^\\t\\n\\f\\r ]"),
            'b' => out.push_str("(?-u:\\b)"),
            'B' => out.push_str("(?-u:\\B)"),
            'Q' => {
                let mut literal = String::new();
                while let Some(l) = chars.next() {
                    if l == '\\' && chars.peek() == Some(&'E') {
                        chars.next();
                        break;
                    }
                    literal.push(l);
                }
                out.push_str(&regex::escape(&literal));
            }
            other => {
                out.push('\\');
                out.push(other);
            }
        }
    }
    out
}

/// Go's wording for the compile errors users most often make.
fn go_error(p: &str) -> String {
    let code = if let Some(op) = leading_repetition(p) {
        format!("missing argument to repetition operator: `{op}`")
    } else {
        match paren_balance(p) {
            Some(Paren::Unclosed) => format!("missing closing ): `{p}`"),
            Some(Paren::Unopened) => format!("unexpected ): `{p}`"),
            Some(Paren::Bracket(at)) => format!("missing closing ]: `{}`", &p[at..]),
            None => format!("invalid or unsupported Perl syntax: `{p}`"),
        }
    };
    format!("error parsing regexp: {code}")
}

/// A repetition operator with nothing before it (`+a`, `a|*b`, `(?:+)`).
fn leading_repetition(p: &str) -> Option<char> {
    let mut prev: Option<char> = None;
    let mut escaped = false;
    for c in p.chars() {
        if escaped {
            escaped = false;
            prev = Some('a');
            continue;
        }
        if c == '\\' {
            escaped = true;
            continue;
        }
        if matches!(c, '*' | '+' | '?') && matches!(prev, None | Some('(') | Some('|')) {
            return Some(c);
        }
        prev = Some(c);
    }
    None
}

enum Paren {
    Unclosed,
    Unopened,
    Bracket(usize),
}

fn paren_balance(p: &str) -> Option<Paren> {
    let mut depth = 0i32;
    let mut escaped = false;
    let mut class_start: Option<usize> = None;
    for (i, c) in p.char_indices() {
        if escaped {
            escaped = false;
            continue;
        }
        match c {
            '\\' => escaped = true,
            '[' if class_start.is_none() => class_start = Some(i),
            ']' if class_start.is_some_and(|s| i > s + 1) => class_start = None,
            '(' if class_start.is_none() => depth += 1,
            ')' if class_start.is_none() => {
                depth -= 1;
                if depth < 0 {
                    return Some(Paren::Unopened);
                }
            }
            _ => {}
        }
    }
    if let Some(at) = class_start {
        return Some(Paren::Bracket(at));
    }
    (depth > 0).then_some(Paren::Unclosed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_semantics() {
        let digits = compile(r"^\d+$").unwrap();
        assert!(digits.is_match("123"));
        assert!(!digits.is_match("١٢٣"), "Go's \\d is ASCII");
        assert!(compile(r"^\w\b").unwrap().is_match("a b"));
        assert!(compile(r"^\Qa.b\E$").unwrap().is_match("a.b"));
        assert!(!compile(r"^\Qa.b\E$").unwrap().is_match("axb"));
        assert!(compile(r"[\d]x").unwrap().is_match("1x"));
        assert!(compile("b").unwrap().is_match("abc"), "unanchored, as Go's MatchString");
    }

    #[test]
    fn go_error_texts() {
        assert_eq!(compile("+").unwrap_err(), "error parsing regexp: missing argument to repetition operator: `+`");
        assert_eq!(compile("(a").unwrap_err(), "error parsing regexp: missing closing ): `(a`");
        assert_eq!(compile("a)").unwrap_err(), "error parsing regexp: unexpected ): `a)`");
        assert_eq!(compile("x[a-").unwrap_err(), "error parsing regexp: missing closing ]: `[a-`");
    }
}
