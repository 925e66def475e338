//! Regular expressions as Go's `regexp` (RE2) reads them, on the `regex` crate: the same
//! syntax, with `\d`, `\w`, `\s` and `\b` meaning their ASCII classes as in Go (the crate's are
//! Unicode-aware), and Go's wording for the errors kube shows (`error parsing regexp: missing
//! closing ): ...`).

use std::collections::HashMap;
use std::sync::{LazyLock, Mutex};

use regex::Regex;

use crate::error::{EvalError, EvalResult};
use crate::value::Value;

/// Why a pattern does not compile, in Go's words.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("error parsing regexp: {0}")]
pub struct RegexError(pub String);

/// Rewrites Go's ASCII-only Perl classes into explicit ASCII classes.
fn translate(pattern: &str) -> String {
    let mut out = String::with_capacity(pattern.len() + 8);
    let mut chars = pattern.chars().peekable();
    let mut in_class = false;
    while let Some(c) = chars.next() {
        if c == '\\' {
            let Some(&next) = chars.peek() else {
                out.push(c);
                break;
            };
            chars.next();
            let replacement = match (next, in_class) {
                ('d', false) => Some("[0-9]"),
                ('D', false) => Some("[^0-9]"),
                ('w', false) => Some("[0-9A-Za-z_]"),
                ('W', false) => Some("[^0-9A-Za-z_]"),
                ('s', false) => Some("[\\t\\n\\f\\r ]"),
                ('S', false) => Some("[^\\t\\n\\f\\r ]"),
                ('d', true) => Some("0-9"),
                ('w', true) => Some("0-9A-Za-z_"),
                ('s', true) => Some("\\t\\n\\f\\r "),
                ('b', false) => Some("(?-u:\\b)"),
                ('B', false) => Some("(?-u:\\B)"),
                _ => None,
            };
            match replacement {
                Some(r) => out.push_str(r),
                None => {
                    out.push('\\');
                    out.push(next);
                }
            }
            continue;
        }
        if c == '[' && !in_class {
            in_class = true;
            out.push(c);
            // A `]` or `^]` right after the opening bracket is a literal.
            if chars.peek() == Some(&'^') {
                out.push(chars.next().expect("peeked"));
            }
            if chars.peek() == Some(&']') {
                out.push(chars.next().expect("peeked"));
            }
            continue;
        }
        if c == '[' && in_class && chars.peek() == Some(&':') {
            // A POSIX class inside a class: copy it whole.
            out.push(c);
            for d in chars.by_ref() {
                out.push(d);
                if d == ']' {
                    break;
                }
            }
            continue;
        }
        if c == ']' && in_class {
            in_class = false;
        }
        out.push(c);
    }
    out
}

/// Go's message for a pattern the crate refuses, as near as the crate's error allows.
fn go_message(pattern: &str, err: &regex::Error) -> String {
    let text = err.to_string();
    if text.contains("unclosed group") {
        format!("missing closing ): `{pattern}`")
    } else if text.contains("unopened group") {
        format!("unexpected ): `{pattern}`")
    } else if text.contains("unclosed character class") {
        let at = pattern.rfind('[').unwrap_or(0);
        format!("missing closing ]: `{}`", &pattern[at..])
    } else if text.contains("repetition operator missing expression") {
        format!("missing argument to repetition operator: `{pattern}`")
    } else if text.contains("unrecognized escape") || text.contains("incomplete escape") {
        format!("invalid escape sequence: `{pattern}`")
    } else if text.contains("invalid character class range") || text.contains("invalid range") {
        format!("invalid character class range: `{pattern}`")
    } else {
        format!("invalid syntax: `{pattern}`")
    }
}

/// Compiles `pattern` as Go would, cached: patterns read from objects repeat.
pub fn compile(pattern: &str) -> Result<Regex, RegexError> {
    static CACHE: LazyLock<Mutex<HashMap<String, Result<Regex, RegexError>>>> =
        LazyLock::new(|| Mutex::new(HashMap::new()));
    let mut cache = CACHE.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(r) = cache.get(pattern) {
        return r.clone();
    }
    let compiled = Regex::new(&translate(pattern)).map_err(|e| RegexError(go_message(pattern, &e)));
    // A bound on what a stream of distinct patterns can hold.
    if cache.len() > 1024 {
        cache.clear();
    }
    cache.insert(pattern.to_string(), compiled.clone());
    compiled
}

/// `s.matches(pattern)`: an unanchored search.
pub fn matches(s: &str, pattern: &str, compiled: Option<&Regex>) -> EvalResult {
    let re = match compiled {
        Some(re) => re.clone(),
        None => compile(pattern).map_err(|e| EvalError::msg(e.to_string()))?,
    };
    Ok(Value::Bool(re.is_match(s)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn perl_classes_are_ascii_as_in_go() {
        assert!(compile(r"^\d+$").unwrap().is_match("123"));
        assert!(!compile(r"^\d+$").unwrap().is_match("١٢٣"), "Arabic-Indic digits are not Go's \\d");
        assert!(compile(r"^[\w.-]+$").unwrap().is_match("a_b.c-d"));
        assert!(compile(r"^[]a]+$").unwrap().is_match("]a"));
        assert!(compile(r"^[[:alpha:]]+$").unwrap().is_match("abc"));
    }

    #[test]
    fn errors_read_as_go_reports_them() {
        assert_eq!(compile("(").unwrap_err().to_string(), "error parsing regexp: missing closing ): `(`");
        assert_eq!(compile("[a").unwrap_err().to_string(), "error parsing regexp: missing closing ]: `[a`");
    }
}
