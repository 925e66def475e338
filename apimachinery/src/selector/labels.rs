//! Label selectors as `k8s.io/apimachinery/pkg/labels` (v1.30) parses, matches and prints them.
//!
//! Grammar of the `labelSelector` query parameter:
//!
//! ```text
//! <selector>    ::= <requirement> | <requirement> "," <selector>
//! <requirement> ::= [!] KEY [ <set-based> | <exact> | <numeric> ]
//! <set-based>   ::= ("in" | "notin") "(" VALUE ["," VALUE]* ")"
//! <exact>       ::= ("=" | "==" | "!=") VALUE
//! <numeric>     ::= (">" | "<") INTEGER
//! ```
//!
//! Tokens are separated by `' '`, `'\t'`, `'\r'`, `'\n'`; `in`/`notin` are keywords only in
//! operator position (`in in (in)` is a valid requirement). Keys must be qualified names
//! (`[prefix/]name`), values valid label values; violations are reported with kube's exact
//! wording, e.g. `unable to parse requirement: found '', expected: ',', ')' or identifier` for
//! `a in (`. Requirements are sorted by key after parsing, set values are sorted and
//! deduplicated, which is what makes [`LabelSelector`]'s `Display` canonical.

use std::fmt;

use serde_json::{Map, Value};

use crate::ApiError;

/// `selection.Operator`: how a requirement relates a key to its values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Operator {
    /// `key in (a,b)`: the label exists and has one of the values.
    In,
    /// `key notin (a,b)`: the label is absent or has none of the values.
    NotIn,
    /// `key=a`.
    Equals,
    /// `key==a` (kept apart from `=` only so it prints back the same way).
    DoubleEquals,
    /// `key!=a`: the label is absent or differs.
    NotEquals,
    /// `key`: the label exists.
    Exists,
    /// `!key`: the label is absent.
    DoesNotExist,
    /// `key>1`: the label is an integer greater than the value.
    GreaterThan,
    /// `key<1`: the label is an integer less than the value.
    LessThan,
}

impl Operator {
    /// kube's spelling (`in`, `notin`, `=`, `==`, `!=`, `exists`, `!`, `gt`, `lt`).
    pub fn as_str(self) -> &'static str {
        match self {
            Operator::In => "in",
            Operator::NotIn => "notin",
            Operator::Equals => "=",
            Operator::DoubleEquals => "==",
            Operator::NotEquals => "!=",
            Operator::Exists => "exists",
            Operator::DoesNotExist => "!",
            Operator::GreaterThan => "gt",
            Operator::LessThan => "lt",
        }
    }
}

/// One condition of a selector (`labels.Requirement`): a key, an operator and its values.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Requirement {
    key: String,
    operator: Operator,
    values: Vec<String>,
}

impl Requirement {
    /// Builds a requirement, validating it as `labels.NewRequirement` does; the error is kube's
    /// message (an aggregate of field errors).
    pub fn new(key: &str, operator: Operator, values: Vec<String>) -> Result<Requirement, String> {
        let mut errs: Vec<String> = Vec::new();
        if let Some(e) = validate_label_key(key, "key") {
            errs.push(e);
        }
        match operator {
            Operator::In | Operator::NotIn if values.is_empty() => errs.push(format!(
                "values: Invalid value: {}: for 'in', 'notin' operators, values set can't be empty",
                crate::gofmt::string_slice(&values)
            )),
            Operator::Equals | Operator::DoubleEquals | Operator::NotEquals if values.len() != 1 => errs.push(format!(
                "values: Invalid value: {}: exact-match compatibility requires one single value",
                crate::gofmt::string_slice(&values)
            )),
            Operator::Exists | Operator::DoesNotExist if !values.is_empty() => errs.push(format!(
                "values: Invalid value: {}: values set must be empty for exists and does not exist",
                crate::gofmt::string_slice(&values)
            )),
            Operator::GreaterThan | Operator::LessThan => {
                if values.len() != 1 {
                    errs.push(format!(
                        "values: Invalid value: {}: for 'Gt', 'Lt' operators, exactly one value is required",
                        crate::gofmt::string_slice(&values)
                    ));
                }
                for (i, v) in values.iter().enumerate() {
                    if v.parse::<i64>().is_err() {
                        errs.push(format!(
                            "values[{i}]: Invalid value: {}: for 'Gt', 'Lt' operators, the value must be an integer",
                            crate::gofmt::quote(v)
                        ));
                    }
                }
            }
            _ => {}
        }
        for (i, v) in values.iter().enumerate() {
            let problems = label_value_errors(v);
            if !problems.is_empty() {
                errs.push(format!(
                    "values[{i}][{key}]: Invalid value: {}: {}",
                    crate::gofmt::quote(v),
                    problems.join("; ")
                ));
            }
        }
        if errs.is_empty() {
            Ok(Requirement { key: key.to_string(), operator, values })
        } else {
            Err(crate::gofmt::aggregate(&errs))
        }
    }

    /// The label key.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The operator.
    pub fn operator(&self) -> Operator {
        self.operator
    }

    /// The values (sorted and deduplicated when parsed from a string; as given when built from a
    /// `metav1.LabelSelector`).
    pub fn values(&self) -> &[String] {
        &self.values
    }

    /// Whether `labels` satisfy this requirement (`Requirement.Matches`).
    pub fn matches(&self, labels: Option<&Map<String, Value>>) -> bool {
        self.matches_value(labels.and_then(|l| l.get(&self.key)).and_then(Value::as_str))
    }

    /// Whether an object whose label under this requirement's key is `value` satisfies it.
    pub fn matches_value(&self, value: Option<&str>) -> bool {
        match self.operator {
            Operator::In | Operator::Equals | Operator::DoubleEquals => {
                value.is_some_and(|v| self.values.iter().any(|x| x == v))
            }
            Operator::NotIn | Operator::NotEquals => value.is_none_or(|v| !self.values.iter().any(|x| x == v)),
            Operator::Exists => value.is_some(),
            Operator::DoesNotExist => value.is_none(),
            Operator::GreaterThan | Operator::LessThan => {
                let Some(have) = value.and_then(|v| v.parse::<i64>().ok()) else { return false };
                let [want] = self.values.as_slice() else { return false };
                let Ok(want) = want.parse::<i64>() else { return false };
                if self.operator == Operator::GreaterThan { have > want } else { have < want }
            }
        }
    }
}

impl fmt::Display for Requirement {
    /// `Requirement.String()`: `!key`, `key`, `key=v`, `key in (a,b)`; several values are
    /// printed sorted.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.operator == Operator::DoesNotExist {
            f.write_str("!")?;
        }
        f.write_str(&self.key)?;
        let op = match self.operator {
            Operator::Equals => "=",
            Operator::DoubleEquals => "==",
            Operator::NotEquals => "!=",
            Operator::In => " in ",
            Operator::NotIn => " notin ",
            Operator::GreaterThan => ">",
            Operator::LessThan => "<",
            Operator::Exists | Operator::DoesNotExist => return Ok(()),
        };
        f.write_str(op)?;
        let set = matches!(self.operator, Operator::In | Operator::NotIn);
        if set {
            f.write_str("(")?;
        }
        if self.values.len() == 1 {
            f.write_str(&self.values[0])?;
        } else {
            let mut sorted: Vec<&str> = self.values.iter().map(String::as_str).collect();
            sorted.sort_unstable();
            f.write_str(&sorted.join(","))?;
        }
        if set {
            f.write_str(")")?;
        }
        Ok(())
    }
}

/// A parsed label selector: the AND of its requirements, or the selector that matches nothing
/// (what a missing `metav1.LabelSelector` converts to).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct LabelSelector {
    requirements: Vec<Requirement>,
    nothing: bool,
}

impl LabelSelector {
    /// The selector that matches every object (`labels.Everything()`).
    pub fn everything() -> LabelSelector {
        LabelSelector::default()
    }

    /// The selector that matches no object (`labels.Nothing()`): what a nil
    /// `metav1.LabelSelector` becomes, so a Deployment without a selector owns no pods.
    pub fn nothing() -> LabelSelector {
        LabelSelector { requirements: Vec::new(), nothing: true }
    }

    /// Parses the `labelSelector` query parameter (`labels.Parse`). Errors are 400 BadRequest
    /// with kube's exact message, as the list and watch handlers return them.
    pub fn parse(selector: &str) -> Result<LabelSelector, ApiError> {
        Self::parse_message(selector).map_err(ApiError::bad_request)
    }

    /// [`LabelSelector::parse`] with the bare message, for callers that word the error
    /// themselves.
    pub fn parse_message(selector: &str) -> Result<LabelSelector, String> {
        let mut requirements = Parser::new(selector).parse()?;
        requirements.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(LabelSelector { requirements, nothing: false })
    }

    /// Converts a `metav1.LabelSelector` JSON object (`matchLabels`, `matchExpressions`) as
    /// `metav1.LabelSelectorAsSelector` does: `None`/`null` matches nothing, an empty selector
    /// matches everything. Used for workload selectors (the `/scale` subresource's
    /// `status.selector`, printing, validation). Errors are 400 BadRequest with kube's message.
    pub fn from_label_selector(selector: Option<&Value>) -> Result<LabelSelector, ApiError> {
        Self::from_label_selector_message(selector).map_err(ApiError::bad_request)
    }

    /// [`LabelSelector::from_label_selector`] with the bare message.
    pub fn from_label_selector_message(selector: Option<&Value>) -> Result<LabelSelector, String> {
        let Some(sel) = selector.filter(|v| !v.is_null()) else { return Ok(LabelSelector::nothing()) };
        let Some(sel) = sel.as_object() else { return Err("label selector must be an object".to_string()) };
        let match_labels = sel.get("matchLabels").and_then(Value::as_object);
        let expressions = sel.get("matchExpressions").and_then(Value::as_array);
        let mut requirements = Vec::new();
        if let Some(labels) = match_labels {
            // Go iterates the map in random order and stops at the first error; sorting makes
            // the reported error deterministic.
            let mut pairs: Vec<(&String, &Value)> = labels.iter().collect();
            pairs.sort_by(|a, b| a.0.cmp(b.0));
            for (k, v) in pairs {
                let v = v.as_str().ok_or_else(|| format!("matchLabels[{k}] must be a string"))?;
                requirements.push(Requirement::new(k, Operator::Equals, vec![v.to_string()])?);
            }
        }
        for expr in expressions.into_iter().flatten() {
            let key = expr.get("key").and_then(Value::as_str).unwrap_or("");
            let op_name = expr.get("operator").and_then(Value::as_str).unwrap_or("");
            let op = match op_name {
                "In" => Operator::In,
                "NotIn" => Operator::NotIn,
                "Exists" => Operator::Exists,
                "DoesNotExist" => Operator::DoesNotExist,
                other => return Err(format!("{} is not a valid label selector operator", crate::gofmt::quote(other))),
            };
            let values: Vec<String> = expr
                .get("values")
                .and_then(Value::as_array)
                .map(|a| a.iter().map(|v| v.as_str().unwrap_or_default().to_string()).collect())
                .unwrap_or_default();
            requirements.push(Requirement::new(key, op, values)?);
        }
        requirements.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(LabelSelector { requirements, nothing: false })
    }

    /// A selector requiring exactly these labels (`labels.SelectorFromValidatedSet`), e.g. a
    /// Service's `spec.selector`. Values are not validated; non-string values are skipped.
    pub fn from_set(labels: &Map<String, Value>) -> LabelSelector {
        let mut requirements: Vec<Requirement> = labels
            .iter()
            .filter_map(|(k, v)| {
                v.as_str().map(|v| Requirement {
                    key: k.clone(),
                    operator: Operator::Equals,
                    values: vec![v.to_string()],
                })
            })
            .collect();
        requirements.sort_by(|a, b| a.key.cmp(&b.key));
        LabelSelector { requirements, nothing: false }
    }

    /// Whether the selector places no restriction (`Selector.Empty()`); the nothing-selector is
    /// not empty.
    pub fn is_empty(&self) -> bool {
        !self.nothing && self.requirements.is_empty()
    }

    /// Whether this is the selector that matches nothing.
    pub fn matches_nothing(&self) -> bool {
        self.nothing
    }

    /// The requirements, sorted by key.
    pub fn requirements(&self) -> &[Requirement] {
        &self.requirements
    }

    /// `RequiresExactMatch`: the single value the selector demands for `label` (`=`, `==`, or
    /// `in` with one value), looking only at the first requirement on that key.
    pub fn exact_match(&self, label: &str) -> Option<&str> {
        let r = self.requirements.iter().find(|r| r.key == label)?;
        match (r.operator, r.values.as_slice()) {
            (Operator::Equals | Operator::DoubleEquals | Operator::In, [v]) => Some(v),
            _ => None,
        }
    }

    /// Whether an object with these `metadata.labels` is selected.
    pub fn matches(&self, labels: Option<&Map<String, Value>>) -> bool {
        !self.nothing && self.requirements.iter().all(|r| r.matches(labels))
    }

    /// Whether an object whose labels `label` looks up is selected; for callers that keep
    /// labels in another form than a JSON map.
    pub fn matches_with<'a>(&self, label: impl Fn(&str) -> Option<&'a str>) -> bool {
        !self.nothing && self.requirements.iter().all(|r| r.matches_value(label(&r.key)))
    }
}

impl fmt::Display for LabelSelector {
    /// kube's canonical form (`Selector.String()`): requirements sorted by key, joined by `,`
    /// (`app=web,tier in (a,b)`); the nothing- and everything-selectors print as `""`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, r) in self.requirements.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{r}")?;
        }
        Ok(())
    }
}

/// `labels.FormatLabels`: a label map as `k=v,...` sorted, or `<none>` when empty, as printed
/// in table cells.
pub fn format_labels(labels: Option<&Map<String, Value>>) -> String {
    let mut pairs: Vec<String> =
        labels.into_iter().flatten().map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default())).collect();
    pairs.sort();
    if pairs.is_empty() { "<none>".to_string() } else { pairs.join(",") }
}

// ---------------------------------------------------------------------------------------------
// Validation (k8s.io/apimachinery/pkg/util/validation).

const QUALIFIED_NAME_MSG: &str =
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const QUALIFIED_NAME_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const LABEL_VALUE_MSG: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const LABEL_VALUE_FMT: &str = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";
const DNS1123_SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
const DNS1123_SUBDOMAIN_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";

/// `validation.RegexError`.
fn regex_error(msg: &str, fmt: &str, examples: &[&str]) -> String {
    let mut out = format!("{msg} (e.g. ");
    for (i, e) in examples.iter().enumerate() {
        if i > 0 {
            out.push_str(" or ");
        }
        out.push_str(&format!("'{e}', "));
    }
    out.push_str(&format!("regex used for validation is '{fmt}')"));
    out
}

/// `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`.
fn is_qualified_name_part(s: &str) -> bool {
    let b = s.as_bytes();
    match (b.first(), b.last()) {
        (Some(f), Some(l)) => {
            f.is_ascii_alphanumeric()
                && l.is_ascii_alphanumeric()
                && b.iter().all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
        }
        _ => false,
    }
}

/// `[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*`.
fn is_dns1123_subdomain(s: &str) -> bool {
    !s.is_empty()
        && s.split('.').all(|label| {
            let b = label.as_bytes();
            match (b.first(), b.last()) {
                (Some(f), Some(l)) => {
                    (f.is_ascii_lowercase() || f.is_ascii_digit())
                        && (l.is_ascii_lowercase() || l.is_ascii_digit())
                        && b.iter().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
                }
                _ => false,
            }
        })
}

/// `validation.IsQualifiedName`.
pub(crate) fn qualified_name_errors(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let parts: Vec<&str> = value.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errs.push("prefix part must be non-empty".to_string());
            } else {
                if prefix.len() > 253 {
                    errs.push("prefix part must be no more than 253 characters".to_string());
                }
                if !is_dns1123_subdomain(prefix) {
                    errs.push(format!(
                        "prefix part {}",
                        regex_error(DNS1123_SUBDOMAIN_MSG, DNS1123_SUBDOMAIN_FMT, &["example.com"])
                    ));
                }
            }
            *name
        }
        _ => {
            errs.push(format!(
                "a qualified name {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                regex_error(QUALIFIED_NAME_MSG, QUALIFIED_NAME_FMT, &["MyName", "my.name", "123-abc"])
            ));
            return errs;
        }
    };
    if name.is_empty() {
        errs.push("name part must be non-empty".to_string());
    } else if name.len() > 63 {
        errs.push("name part must be no more than 63 characters".to_string());
    }
    if !is_qualified_name_part(name) {
        errs.push(format!(
            "name part {}",
            regex_error(QUALIFIED_NAME_MSG, QUALIFIED_NAME_FMT, &["MyName", "my.name", "123-abc"])
        ));
    }
    errs
}

/// `validation.IsValidLabelValue`.
pub(crate) fn label_value_errors(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > 63 {
        errs.push("must be no more than 63 characters".to_string());
    }
    if !value.is_empty() && !is_qualified_name_part(value) {
        errs.push(regex_error(LABEL_VALUE_MSG, LABEL_VALUE_FMT, &["MyValue", "my_value", "12345"]));
    }
    errs
}

/// `validateLabelKey`: a field error for an invalid key at `path` (kube prints a nil path as
/// `<nil>`, which is what the query-parameter parser reports).
fn validate_label_key(key: &str, path: &str) -> Option<String> {
    let errs = qualified_name_errors(key);
    (!errs.is_empty()).then(|| format!("{path}: Invalid value: {}: {}", crate::gofmt::quote(key), errs.join("; ")))
}

// ---------------------------------------------------------------------------------------------
// Lexer and parser (behaviour of labels.Lexer / labels.Parser, our own implementation).

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Token {
    Error,
    EndOfString,
    ClosedPar,
    Comma,
    DoesNotExist,
    DoubleEquals,
    Equals,
    GreaterThan,
    Identifier,
    In,
    LessThan,
    NotEquals,
    NotIn,
    OpenPar,
}

fn keyword(s: &[u8]) -> Option<Token> {
    Some(match s {
        b")" => Token::ClosedPar,
        b"," => Token::Comma,
        b"!" => Token::DoesNotExist,
        b"==" => Token::DoubleEquals,
        b"=" => Token::Equals,
        b">" => Token::GreaterThan,
        b"in" => Token::In,
        b"<" => Token::LessThan,
        b"!=" => Token::NotEquals,
        b"notin" => Token::NotIn,
        b"(" => Token::OpenPar,
        _ => return None,
    })
}

fn is_whitespace(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\r' | b'\n')
}

fn is_special(c: u8) -> bool {
    matches!(c, b'=' | b'!' | b'(' | b')' | b',' | b'>' | b'<')
}

/// Splits the input into tokens. A NUL byte reads like the end of input, as in kube's lexer.
struct Lexer<'a> {
    s: &'a [u8],
    pos: usize,
}

impl Lexer<'_> {
    /// The next byte, `0` past the end (without advancing then).
    fn read(&mut self) -> u8 {
        match self.s.get(self.pos) {
            Some(&b) => {
                self.pos += 1;
                b
            }
            None => 0,
        }
    }

    fn unread(&mut self) {
        self.pos -= 1;
    }

    fn text(bytes: &[u8]) -> String {
        // Tokens split the input only at ASCII bytes, so every token is valid UTF-8.
        String::from_utf8_lossy(bytes).into_owned()
    }

    fn lex(&mut self) -> (Token, String) {
        let mut ch = self.read();
        while is_whitespace(ch) {
            ch = self.read();
        }
        if ch == 0 {
            return (Token::EndOfString, String::new());
        }
        self.unread();
        if is_special(ch) { self.special() } else { self.identifier_or_keyword() }
    }

    fn identifier_or_keyword(&mut self) -> (Token, String) {
        let start = self.pos;
        let mut end;
        loop {
            end = self.pos;
            let ch = self.read();
            if ch == 0 {
                break;
            }
            if is_special(ch) || is_whitespace(ch) {
                self.unread();
                break;
            }
        }
        let word = &self.s[start..end];
        (keyword(word).unwrap_or(Token::Identifier), Self::text(word))
    }

    fn special(&mut self) -> (Token, String) {
        let start = self.pos;
        let mut last: Option<(Token, usize)> = None;
        loop {
            let ch = self.read();
            if ch == 0 {
                break;
            }
            if !is_special(ch) {
                self.unread();
                break;
            }
            if let Some(tok) = keyword(&self.s[start..self.pos]) {
                last = Some((tok, self.pos));
            } else if last.is_some() {
                self.unread();
                break;
            }
        }
        match last {
            Some((tok, end)) => (tok, Self::text(&self.s[start..end])),
            None => (Token::Error, format!("error expected: keyword found '{}'", Self::text(&self.s[start..self.pos]))),
        }
    }
}

/// Whether a token is read as a key/operator or as a value (`in`/`notin` are values there).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Context {
    KeyAndOperator,
    Values,
}

struct Parser {
    items: Vec<(Token, String)>,
    position: usize,
}

impl Parser {
    fn new(selector: &str) -> Parser {
        let mut lexer = Lexer { s: selector.as_bytes(), pos: 0 };
        let mut items = Vec::new();
        loop {
            let item = lexer.lex();
            let end = item.0 == Token::EndOfString;
            items.push(item);
            if end {
                break;
            }
        }
        Parser { items, position: 0 }
    }

    fn token(&self, index: usize, ctx: Context) -> (Token, String) {
        let (tok, lit) = self.items[index.min(self.items.len() - 1)].clone();
        let tok = match tok {
            Token::In | Token::NotIn if ctx == Context::Values => Token::Identifier,
            t => t,
        };
        (tok, lit)
    }

    fn lookahead(&self, ctx: Context) -> (Token, String) {
        self.token(self.position, ctx)
    }

    fn consume(&mut self, ctx: Context) -> (Token, String) {
        let item = self.token(self.position, ctx);
        self.position += 1;
        item
    }

    fn parse(&mut self) -> Result<Vec<Requirement>, String> {
        let mut requirements = Vec::new();
        loop {
            let (tok, lit) = self.lookahead(Context::Values);
            match tok {
                Token::Identifier | Token::DoesNotExist => {
                    let r = self.requirement().map_err(|e| format!("unable to parse requirement: {e}"))?;
                    requirements.push(r);
                    let (t, l) = self.consume(Context::Values);
                    match t {
                        Token::EndOfString => return Ok(requirements),
                        Token::Comma => {
                            let (t2, l2) = self.lookahead(Context::Values);
                            if t2 != Token::Identifier && t2 != Token::DoesNotExist {
                                return Err(format!("found '{l2}', expected: identifier after ','"));
                            }
                        }
                        _ => return Err(format!("found '{l}', expected: ',' or 'end of string'")),
                    }
                }
                Token::EndOfString => return Ok(requirements),
                _ => return Err(format!("found '{lit}', expected: !, identifier, or 'end of string'")),
            }
        }
    }

    fn requirement(&mut self) -> Result<Requirement, String> {
        let (key, inferred) = self.key_and_inferred_operator()?;
        if let Some(op) = inferred {
            return Requirement::new(&key, op, Vec::new());
        }
        let op = self.operator()?;
        let values = match op {
            Operator::In | Operator::NotIn => self.set_values()?,
            _ => self.exact_value()?,
        };
        Requirement::new(&key, op, values)
    }

    /// The key, and `Exists`/`DoesNotExist` when no binary operator follows.
    fn key_and_inferred_operator(&mut self) -> Result<(String, Option<Operator>), String> {
        let mut op = None;
        let (mut tok, mut lit) = self.consume(Context::Values);
        if tok == Token::DoesNotExist {
            op = Some(Operator::DoesNotExist);
            (tok, lit) = self.consume(Context::Values);
        }
        if tok != Token::Identifier {
            return Err(format!("found '{lit}', expected: identifier"));
        }
        if let Some(e) = validate_label_key(&lit, "<nil>") {
            return Err(e);
        }
        let (next, _) = self.lookahead(Context::Values);
        if (next == Token::EndOfString || next == Token::Comma) && op.is_none() {
            op = Some(Operator::Exists);
        }
        Ok((lit, op))
    }

    fn operator(&mut self) -> Result<Operator, String> {
        let (tok, lit) = self.consume(Context::KeyAndOperator);
        Ok(match tok {
            Token::In => Operator::In,
            Token::Equals => Operator::Equals,
            Token::DoubleEquals => Operator::DoubleEquals,
            Token::GreaterThan => Operator::GreaterThan,
            Token::LessThan => Operator::LessThan,
            Token::NotIn => Operator::NotIn,
            Token::NotEquals => Operator::NotEquals,
            _ => return Err(format!("found '{lit}', expected: in, notin, =, ==, !=, gt, lt")),
        })
    }

    /// `(a,b,...)`, sorted and deduplicated; empty entries (`(,a)`, `()`) are the empty value.
    fn set_values(&mut self) -> Result<Vec<String>, String> {
        let (tok, lit) = self.consume(Context::Values);
        if tok != Token::OpenPar {
            return Err(format!("found '{lit}' expected: '('"));
        }
        let (tok, lit) = self.lookahead(Context::Values);
        match tok {
            Token::Identifier | Token::Comma => {
                let values = self.identifiers()?;
                let (close, _) = self.consume(Context::Values);
                if close != Token::ClosedPar {
                    return Err(format!("found '{lit}', expected: ')'"));
                }
                Ok(values)
            }
            Token::ClosedPar => {
                self.consume(Context::Values);
                Ok(vec![String::new()])
            }
            _ => Err(format!("found '{lit}', expected: ',', ')' or identifier")),
        }
    }

    fn identifiers(&mut self) -> Result<Vec<String>, String> {
        let mut set: Vec<String> = Vec::new();
        let insert = |set: &mut Vec<String>, v: String| {
            if let Err(i) = set.binary_search(&v) {
                set.insert(i, v);
            }
        };
        loop {
            let (tok, lit) = self.consume(Context::Values);
            match tok {
                Token::Identifier => {
                    insert(&mut set, lit);
                    let (next, next_lit) = self.lookahead(Context::Values);
                    match next {
                        Token::Comma => continue,
                        Token::ClosedPar => return Ok(set),
                        _ => return Err(format!("found '{next_lit}', expected: ',' or ')'")),
                    }
                }
                Token::Comma => {
                    if set.is_empty() {
                        insert(&mut set, String::new());
                    }
                    let (next, _) = self.lookahead(Context::Values);
                    if next == Token::ClosedPar {
                        insert(&mut set, String::new());
                        return Ok(set);
                    }
                    if next == Token::Comma {
                        self.consume(Context::Values);
                        insert(&mut set, String::new());
                    }
                }
                _ => return Err(format!("found '{lit}', expected: ',', or identifier")),
            }
        }
    }

    fn exact_value(&mut self) -> Result<Vec<String>, String> {
        let (tok, _) = self.lookahead(Context::Values);
        if tok == Token::EndOfString || tok == Token::Comma {
            return Ok(vec![String::new()]);
        }
        let (tok, lit) = self.consume(Context::Values);
        if tok == Token::Identifier { Ok(vec![lit]) } else { Err(format!("found '{lit}', expected: identifier")) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Reason;
    use serde_json::json;

    fn labels(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    fn parse_err(s: &str) -> String {
        LabelSelector::parse_message(s).unwrap_err()
    }

    #[test]
    fn a_lookup_function_selects_as_the_json_map_does() {
        let objects =
            [json!({}), json!({"app": "web", "tier": "a"}), json!({"app": "db", "n": "7"}), json!({"tier": "b"})];
        let selectors = [
            "",
            "app=web",
            "app!=web",
            "tier in (a,b)",
            "tier notin (a)",
            "app",
            "!app",
            "n>5",
            "n<5",
            "app=web,tier=a",
        ];
        for sel in selectors {
            let selector = LabelSelector::parse(sel).unwrap();
            for obj in &objects {
                let map = labels(obj.clone());
                let by_map = selector.matches(Some(&map));
                let by_lookup = selector.matches_with(|k| map.get(k).and_then(Value::as_str));
                assert_eq!(by_map, by_lookup, "{sel:?} on {obj}");
            }
        }
    }

    fn canonical(s: &str) -> String {
        LabelSelector::parse(s).unwrap().to_string()
    }

    const KEY_NAME_RULE: &str = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
    const VALUE_RULE: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

    #[test]
    fn empty_selector_matches_everything() {
        for s in ["", "  ", "\t\n"] {
            let sel = LabelSelector::parse(s).unwrap();
            assert!(sel.is_empty());
            assert!(sel.matches(None));
            assert_eq!(sel.to_string(), "");
        }
    }

    #[test]
    fn equality_forms_parse_and_print_back() {
        assert_eq!(canonical("a=b"), "a=b");
        assert_eq!(canonical("a==b"), "a==b");
        assert_eq!(canonical("a!=b"), "a!=b");
        assert_eq!(canonical("a="), "a=");
        assert_eq!(canonical("a = b"), "a=b");
        assert_eq!(canonical("x=a,y!=b"), "x=a,y!=b");
    }

    #[test]
    fn set_forms_sort_and_dedup_values() {
        assert_eq!(canonical("tier in (b,a,b)"), "tier in (a,b)");
        assert_eq!(canonical("tier notin ( x )"), "tier notin (x)");
        assert_eq!(canonical("a in ()"), "a in ()");
        assert_eq!(canonical("a in (,b)"), "a in (,b)");
        assert_eq!(canonical("a in (b,)"), "a in (,b)");
        assert_eq!(canonical("a in (b,,c)"), "a in (,b,c)");
        assert_eq!(canonical("x in (foo,,baz),y,z notin ()"), "x in (,baz,foo),y,z notin ()");
    }

    #[test]
    fn keywords_are_values_in_value_position() {
        assert_eq!(canonical("in in (in,notin)"), "in in (in,notin)");
        assert_eq!(canonical("a=in"), "a=in");
        assert_eq!(canonical("notin"), "notin");
    }

    #[test]
    fn existence_forms() {
        assert_eq!(canonical("a"), "a");
        assert_eq!(canonical("!a"), "!a");
        assert_eq!(canonical("! a"), "!a");
        assert_eq!(canonical("a,!b"), "a,!b");
        let sel = LabelSelector::parse("a,!b").unwrap();
        assert!(sel.matches(Some(&labels(json!({"a": "1"})))));
        assert!(!sel.matches(Some(&labels(json!({"a": "1", "b": ""})))));
        assert!(!sel.matches(None));
    }

    #[test]
    fn numeric_comparisons() {
        assert_eq!(canonical("a>1,b<2"), "a>1,b<2");
        let sel = LabelSelector::parse("a>1").unwrap();
        assert!(sel.matches(Some(&labels(json!({"a": "2"})))));
        assert!(!sel.matches(Some(&labels(json!({"a": "1"})))));
        assert!(!sel.matches(Some(&labels(json!({"a": "x"})))));
        assert!(!sel.matches(None));
        assert!(LabelSelector::parse("a<3").unwrap().matches(Some(&labels(json!({"a": "-5"})))));
        assert_eq!(
            parse_err("a>b"),
            "unable to parse requirement: values[0]: Invalid value: \"b\": for 'Gt', 'Lt' operators, the value must be an integer"
        );
    }

    #[test]
    fn requirements_are_sorted_by_key() {
        assert_eq!(canonical("z=1,a in (x),m"), "a in (x),m,z=1");
        let sel = LabelSelector::parse("b=1,a=2").unwrap();
        let keys: Vec<&str> = sel.requirements().iter().map(Requirement::key).collect();
        assert_eq!(keys, ["a", "b"]);
    }

    #[test]
    fn matching_follows_kube_semantics() {
        let l = labels(json!({"app": "web", "tier": "fe"}));
        let m = |s: &str| LabelSelector::parse(s).unwrap().matches(Some(&l));
        assert!(m("app=web"));
        assert!(m("app==web"));
        assert!(!m("app=db"));
        assert!(m("app!=db"));
        assert!(m("missing!=x"));
        assert!(m("tier in (fe,be)"));
        assert!(!m("missing in (x)"));
        assert!(m("tier notin (be)"));
        assert!(m("missing notin (be)"));
        assert!(!m("tier notin (fe)"));
        assert!(m("app,tier"));
        assert!(!m("app,!tier"));
        assert!(m("app=web,tier=fe"));
        assert!(!m("app=web,tier=be"));
        assert!(!m("missing="), "an absent label is not the empty value");
    }

    #[test]
    fn exact_match_introspection() {
        let sel = LabelSelector::parse("a=1,b in (2),c in (3,4),d!=5").unwrap();
        assert_eq!(sel.exact_match("a"), Some("1"));
        assert_eq!(sel.exact_match("b"), Some("2"));
        assert_eq!(sel.exact_match("c"), None);
        assert_eq!(sel.exact_match("d"), None);
        assert_eq!(sel.exact_match("e"), None);
    }

    #[test]
    fn syntax_errors_use_kube_wording() {
        let cases = [
            ("a in (", "unable to parse requirement: found '', expected: ',', ')' or identifier"),
            ("a in", "unable to parse requirement: found '' expected: '('"),
            ("a in x", "unable to parse requirement: found 'x' expected: '('"),
            ("a in (b", "unable to parse requirement: found '', expected: ',' or ')'"),
            ("a in (b c)", "unable to parse requirement: found 'c', expected: ',' or ')'"),
            ("a in (b,=)", "unable to parse requirement: found '=', expected: ',', or identifier"),
            ("a in (=)", "unable to parse requirement: found '=', expected: ',', ')' or identifier"),
            ("a b", "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt"),
            ("a=(b)", "unable to parse requirement: found '(', expected: identifier"),
            ("a=!", "unable to parse requirement: found '!', expected: identifier"),
            ("!", "unable to parse requirement: found '', expected: identifier"),
            ("!=a", "found '!=', expected: !, identifier, or 'end of string'"),
            ("a,", "found '', expected: identifier after ','"),
            ("a,,b", "found ',', expected: identifier after ','"),
            (",a", "found ',', expected: !, identifier, or 'end of string'"),
            ("=a", "found '=', expected: !, identifier, or 'end of string'"),
            ("(a)", "found '(', expected: !, identifier, or 'end of string'"),
            ("a=b c", "found 'c', expected: ',' or 'end of string'"),
            ("!a=b", "found '=', expected: ',' or 'end of string'"),
            ("a in (b))", "found ')', expected: ',' or 'end of string'"),
        ];
        for (input, want) in cases {
            assert_eq!(parse_err(input), want, "input {input:?}");
        }
    }

    #[test]
    fn parse_error_is_bad_request() {
        let e = LabelSelector::parse("a in (").unwrap_err();
        assert_eq!(e.code, 400);
        assert_eq!(e.reason, Reason::BadRequest);
        assert_eq!(e.to_status()["message"], "unable to parse requirement: found '', expected: ',', ')' or identifier");
    }

    #[test]
    fn invalid_keys_are_reported_with_nil_path() {
        assert_eq!(
            parse_err("a_=b"),
            format!("unable to parse requirement: <nil>: Invalid value: \"a_\": {KEY_NAME_RULE}")
        );
        assert_eq!(
            parse_err("Example.com/a=b"),
            "unable to parse requirement: <nil>: Invalid value: \"Example.com/a\": prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
        );
        assert_eq!(
            parse_err("a/"),
            format!(
                "unable to parse requirement: <nil>: Invalid value: \"a/\": name part must be non-empty; {KEY_NAME_RULE}"
            )
        );
        assert_eq!(
            parse_err("/a"),
            "unable to parse requirement: <nil>: Invalid value: \"/a\": prefix part must be non-empty"
        );
        assert!(parse_err("a/b/c").starts_with(
            "unable to parse requirement: <nil>: Invalid value: \"a/b/c\": a qualified name must consist of"
        ));
        assert!(
            parse_err("a/b/c").ends_with(" with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')")
        );
        let long = "k".repeat(64);
        assert_eq!(
            parse_err(&long),
            format!(
                "unable to parse requirement: <nil>: Invalid value: \"{long}\": name part must be no more than 63 characters"
            )
        );
        assert!(LabelSelector::parse("app.kubernetes.io/name=web").is_ok());
    }

    #[test]
    fn invalid_values_are_reported_per_index() {
        assert_eq!(
            parse_err("a=b/c"),
            format!("unable to parse requirement: values[0][a]: Invalid value: \"b/c\": {VALUE_RULE}")
        );
        assert_eq!(
            parse_err("a in (x,-y,z_)"),
            format!(
                "unable to parse requirement: [values[0][a]: Invalid value: \"-y\": {VALUE_RULE}, values[2][a]: Invalid value: \"z_\": {VALUE_RULE}]"
            )
        );
        let long = "v".repeat(64);
        assert_eq!(
            parse_err(&format!("a={long}")),
            format!(
                "unable to parse requirement: values[0][a]: Invalid value: \"{long}\": must be no more than 63 characters"
            )
        );
    }

    #[test]
    fn nul_byte_behaves_like_kube() {
        // kube's lexer reads NUL as end of input at a token start, and as a terminator (which it
        // consumes) inside an identifier or operator.
        assert_eq!(canonical("a=b\0,c=d"), "a=b,c=d");
        assert_eq!(canonical("a\0"), "a");
        assert_eq!(canonical("a=b,\0c=d"), "a=b,c=d");
        assert_eq!(parse_err("a=b, \0c=d"), "found '', expected: identifier after ','");
    }

    #[test]
    fn from_label_selector_converts_match_labels_and_expressions() {
        let sel = LabelSelector::from_label_selector(Some(&json!({
            "matchLabels": {"app": "web"},
            "matchExpressions": [
                {"key": "tier", "operator": "In", "values": ["b", "a"]},
                {"key": "env", "operator": "NotIn", "values": ["prod"]},
                {"key": "canary", "operator": "DoesNotExist"},
                {"key": "zone", "operator": "Exists"}
            ]
        })))
        .unwrap();
        assert_eq!(sel.to_string(), "app=web,!canary,env notin (prod),tier in (a,b),zone");
        assert!(sel.matches(Some(&labels(json!({"app": "web", "tier": "a", "zone": "z"})))));
        assert!(!sel.matches(Some(&labels(json!({"app": "web", "tier": "c", "zone": "z"})))));
    }

    #[test]
    fn from_label_selector_nil_matches_nothing_and_empty_everything() {
        let nothing = LabelSelector::from_label_selector(None).unwrap();
        assert!(!nothing.matches(None));
        assert!(!nothing.is_empty());
        assert_eq!(nothing.to_string(), "");
        assert!(LabelSelector::from_label_selector(Some(&Value::Null)).unwrap().matches_nothing());
        let everything = LabelSelector::from_label_selector(Some(&json!({}))).unwrap();
        assert!(everything.is_empty());
        assert!(everything.matches(None));
    }

    #[test]
    fn from_label_selector_errors_use_kube_wording() {
        let err = |v: Value| LabelSelector::from_label_selector_message(Some(&v)).unwrap_err();
        assert_eq!(
            err(json!({"matchExpressions": [{"key": "a", "operator": "Foo"}]})),
            "\"Foo\" is not a valid label selector operator"
        );
        assert_eq!(
            err(json!({"matchExpressions": [{"key": "a", "operator": "In", "values": []}]})),
            "values: Invalid value: []string(nil): for 'in', 'notin' operators, values set can't be empty"
        );
        assert_eq!(
            err(json!({"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x", "y"]}]})),
            "values: Invalid value: []string{\"x\", \"y\"}: values set must be empty for exists and does not exist"
        );
        assert_eq!(err(json!({"matchLabels": {"a_": "x"}})), format!("key: Invalid value: \"a_\": {KEY_NAME_RULE}"));
        assert_eq!(
            err(json!({"matchLabels": {"a": "x/"}})),
            format!("values[0][a]: Invalid value: \"x/\": {VALUE_RULE}")
        );
        let e = LabelSelector::from_label_selector(Some(&json!({"matchLabels": {"a": "x/"}}))).unwrap_err();
        assert_eq!(e.code, 400);
    }

    #[test]
    fn from_set_builds_equality_selector() {
        let sel = LabelSelector::from_set(&labels(json!({"b": "2", "a": "1"})));
        assert_eq!(sel.to_string(), "a=1,b=2");
        assert!(sel.matches(Some(&labels(json!({"a": "1", "b": "2", "c": "3"})))));
        assert!(LabelSelector::from_set(&Map::new()).is_empty());
    }

    #[test]
    fn format_labels_sorts_pairs() {
        assert_eq!(format_labels(None), "<none>");
        assert_eq!(format_labels(Some(&labels(json!({"b": "2", "a.b": "1", "a": "0"})))), "a.b=1,a=0,b=2");
    }
}
