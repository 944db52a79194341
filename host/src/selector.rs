//! Label and field selectors, compatible with Kubernetes apimachinery
//! (`labels.Parse` and `fields.ParseSelector`).
//!
//! Label selector grammar (whitespace allowed between tokens):
//!
//! ```text
//! <selector>    ::= <requirement> | <requirement> "," <selector>
//! <requirement> ::= [!] KEY [ ("in" | "notin") "(" <values> ")"
//!                           | ("=" | "==" | "!=" | ">" | "<") VALUE ]
//! ```
//!
//! Field selector grammar: comma-separated `field=value`, `field==value` or
//! `field!=value` terms, where `\` escapes `\`, `,`, `=` (and `!`) in values.
//!
//! Error texts mirror kube-apiserver's so clients see familiar messages.

use serde_json::{Map, Value};

/// Errors produced while parsing label or field selectors.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum SelectorError {
    /// A single label requirement is malformed or fails key/value validation.
    #[error("unable to parse requirement: {0}")]
    Requirement(String),
    /// The label selector is malformed between requirements.
    #[error("{0}")]
    Syntax(String),
    /// A field selector term has no `=`, `==` or `!=` operator.
    #[error("invalid selector: '{selector}'; can't understand '{term}'")]
    FieldTerm { selector: String, term: String },
    /// A field selector value contains an unknown or dangling `\` escape.
    #[error("invalid field selector: invalid escape sequence: {0}")]
    InvalidEscape(String),
    /// A field selector value contains an unescaped `,` or `=`.
    #[error("invalid field selector: unescaped character in value: {0}")]
    UnescapedCharacter(char),
    /// The field selector names a field that is not selectable.
    #[error("field label not supported: {0}")]
    UnsupportedField(String),
}

pub type Result<T, E = SelectorError> = std::result::Result<T, E>;

// ---------------------------------------------------------------------------
// Validation (k8s.io/apimachinery/pkg/util/validation)
// ---------------------------------------------------------------------------

const QUALIFIED_NAME_MAX_LEN: usize = 63;
const LABEL_VALUE_MAX_LEN: usize = 63;
const DNS1123_SUBDOMAIN_MAX_LEN: usize = 253;

const QUALIFIED_NAME_ERR: &str = r#"must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"#;
const DNS1123_SUBDOMAIN_ERR: &str = r#"a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"#;
const LABEL_VALUE_ERR: &str = r#"a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"#;

/// `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`
fn is_qualified_name_part(s: &str) -> bool {
    let b = s.as_bytes();
    match (b.first(), b.last()) {
        (Some(f), Some(l)) => {
            f.is_ascii_alphanumeric()
                && l.is_ascii_alphanumeric()
                && b.iter()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
        }
        _ => false,
    }
}

/// `[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*`
fn is_dns1123_subdomain_format(s: &str) -> bool {
    let lower_alnum = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    s.split('.').all(|label| {
        let b = label.as_bytes();
        match (b.first(), b.last()) {
            (Some(f), Some(l)) => {
                lower_alnum(f) && lower_alnum(l) && b.iter().all(|c| lower_alnum(c) || *c == b'-')
            }
            _ => false,
        }
    })
}

/// Mirrors `validation.IsQualifiedName`; returns the list of problems.
fn qualified_name_errors(key: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let parts: Vec<&str> = key.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errs.push("prefix part must be non-empty".to_string());
            } else {
                if prefix.len() > DNS1123_SUBDOMAIN_MAX_LEN {
                    errs.push(format!(
                        "prefix part must be no more than {DNS1123_SUBDOMAIN_MAX_LEN} characters"
                    ));
                }
                if !is_dns1123_subdomain_format(prefix) {
                    errs.push(format!("prefix part {DNS1123_SUBDOMAIN_ERR}"));
                }
            }
            *name
        }
        _ => {
            return vec![format!(
                "a qualified name {QUALIFIED_NAME_ERR} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
            )]
        }
    };
    if name.is_empty() {
        errs.push("name part must be non-empty".to_string());
    } else if name.len() > QUALIFIED_NAME_MAX_LEN {
        errs.push(format!(
            "name part must be no more than {QUALIFIED_NAME_MAX_LEN} characters"
        ));
    }
    if !is_qualified_name_part(name) {
        errs.push(format!("name part {QUALIFIED_NAME_ERR}"));
    }
    errs
}

/// Mirrors `validation.IsValidLabelValue`; returns the list of problems.
fn label_value_errors(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > LABEL_VALUE_MAX_LEN {
        errs.push(format!(
            "must be no more than {LABEL_VALUE_MAX_LEN} characters"
        ));
    }
    if !value.is_empty() && !is_qualified_name_part(value) {
        errs.push(LABEL_VALUE_ERR.to_string());
    }
    errs
}

/// Formats like `field.Invalid(path, value, detail).Error()` (a string value: Go's `%q`).
fn invalid(path: &str, value: &str, detail: &str) -> String {
    format!(
        "{path}: Invalid value: {}: {detail}",
        crate::auth::rbac::go_quote(value)
    )
}

/// Formats like `field.ErrorList.ToAggregate().Error()`: one message as-is,
/// several (deduplicated) as `[a, b]`.
fn aggregate(errs: Vec<String>) -> Option<String> {
    // In order, each once (hashed: a selector of thousands of bad values is not quadratic).
    let mut seen = std::collections::HashSet::with_capacity(errs.len());
    let mut unique: Vec<String> = Vec::with_capacity(errs.len());
    for e in errs {
        if seen.insert(e.clone()) {
            unique.push(e);
        }
    }
    match unique.len() {
        0 => None,
        1 => unique.pop(),
        _ => Some(format!("[{}]", unique.join(", "))),
    }
}

// ---------------------------------------------------------------------------
// Label selector
// ---------------------------------------------------------------------------

#[derive(Debug, Clone, PartialEq)]
enum LabelOp {
    /// `=`, `==` and `in`: label present with one of the (sorted, unique) values.
    In(Vec<String>),
    /// `!=` and `notin`: label absent or not one of the values.
    NotIn(Vec<String>),
    Exists,
    DoesNotExist,
    GreaterThan(i64),
    LessThan(i64),
}

#[derive(Debug, Clone, PartialEq)]
struct Requirement {
    key: String,
    op: LabelOp,
}

impl Requirement {
    fn matches(&self, value: Option<&str>) -> bool {
        match (&self.op, value) {
            // The values are sorted (and unique): a binary search, however many there are.
            (LabelOp::In(vals), Some(v)) => vals.binary_search_by(|x| x.as_str().cmp(v)).is_ok(),
            (LabelOp::In(_), None) => false,
            (LabelOp::NotIn(vals), Some(v)) => {
                vals.binary_search_by(|x| x.as_str().cmp(v)).is_err()
            }
            (LabelOp::NotIn(_), None) => true,
            (LabelOp::Exists, v) => v.is_some(),
            (LabelOp::DoesNotExist, v) => v.is_none(),
            (LabelOp::GreaterThan(n), Some(v)) => v.parse::<i64>().is_ok_and(|x| x > *n),
            (LabelOp::LessThan(n), Some(v)) => v.parse::<i64>().is_ok_and(|x| x < *n),
            (LabelOp::GreaterThan(_) | LabelOp::LessThan(_), None) => false,
        }
    }
}

/// A parsed label selector: the AND of its requirements.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LabelSelector {
    requirements: Vec<Requirement>,
}

impl LabelSelector {
    /// Parses a label selector string like kube's `labels.Parse`.
    /// An empty (or all-whitespace) string yields a selector matching everything.
    pub fn parse(s: &str) -> Result<Self> {
        let mut parser = Parser {
            tokens: lex(s),
            pos: 0,
        };
        let mut requirements = parser.parse()?;
        requirements.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(Self { requirements })
    }

    /// True if the selector has no requirements (matches everything).
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// Matches against labels exposed through a lookup closure
    /// (`None` means the label is absent).
    pub fn matches<'a>(&self, labels: impl Fn(&str) -> Option<&'a str>) -> bool {
        self.requirements.iter().all(|r| r.matches(labels(&r.key)))
    }

    /// Matches against an object's `metadata.labels` map. A missing map means
    /// no labels; non-string values are treated as absent labels.
    pub fn matches_json(&self, labels: Option<&Map<String, Value>>) -> bool {
        self.matches(|k| labels.and_then(|m| m.get(k)).and_then(Value::as_str))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tok {
    End,
    OpenPar,
    ClosedPar,
    Comma,
    /// `!`
    Not,
    Equals,
    DoubleEquals,
    NotEquals,
    GreaterThan,
    LessThan,
    In,
    NotIn,
    Identifier,
}

fn is_whitespace(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\n')
}

fn is_special(b: u8) -> bool {
    matches!(b, b'=' | b'!' | b'(' | b')' | b',' | b'>' | b'<')
}

/// Tokenizes like apimachinery's label `Lexer`; always ends with `Tok::End`.
fn lex(s: &str) -> Vec<(Tok, &str)> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    loop {
        while i < b.len() && is_whitespace(b[i]) {
            i += 1;
        }
        let Some(&c) = b.get(i) else {
            out.push((Tok::End, ""));
            return out;
        };
        let start = i;
        let tok = if is_special(c) {
            let double = b.get(i + 1) == Some(&b'=') && matches!(c, b'=' | b'!');
            i += if double { 2 } else { 1 };
            match (c, double) {
                (b'=', true) => Tok::DoubleEquals,
                (b'!', true) => Tok::NotEquals,
                (b'=', _) => Tok::Equals,
                (b'!', _) => Tok::Not,
                (b'(', _) => Tok::OpenPar,
                (b')', _) => Tok::ClosedPar,
                (b',', _) => Tok::Comma,
                (b'>', _) => Tok::GreaterThan,
                _ => Tok::LessThan,
            }
        } else {
            // Whitespace and special symbols are ASCII, so stopping at them
            // always lands on a char boundary.
            while i < b.len() && !is_whitespace(b[i]) && !is_special(b[i]) {
                i += 1;
            }
            match &s[start..i] {
                "in" => Tok::In,
                "notin" => Tok::NotIn,
                _ => Tok::Identifier,
            }
        };
        out.push((tok, &s[start..i]));
    }
}

const BINARY_OPERATORS: &str = "in, notin, =, ==, !=, gt, lt";

struct Parser<'s> {
    tokens: Vec<(Tok, &'s str)>,
    pos: usize,
}

impl<'s> Parser<'s> {
    fn raw(&self, pos: usize) -> (Tok, &'s str) {
        self.tokens
            .get(pos)
            .or(self.tokens.last())
            .copied()
            .unwrap_or((Tok::End, ""))
    }

    /// Lookahead in "values" context, where `in`/`notin` are plain identifiers.
    fn peek(&self) -> (Tok, &'s str) {
        as_value(self.raw(self.pos))
    }

    /// Consume in "values" context.
    fn next(&mut self) -> (Tok, &'s str) {
        let t = self.peek();
        self.pos += 1;
        t
    }

    /// Consume in "key and operator" context.
    fn next_operator(&mut self) -> (Tok, &'s str) {
        let t = self.raw(self.pos);
        self.pos += 1;
        t
    }

    fn parse(&mut self) -> Result<Vec<Requirement>> {
        let mut reqs = Vec::new();
        loop {
            let (tok, lit) = self.peek();
            match tok {
                Tok::Identifier | Tok::Not => {
                    reqs.push(self.requirement().map_err(SelectorError::Requirement)?);
                    let (t, l) = self.next();
                    match t {
                        Tok::End => return Ok(reqs),
                        Tok::Comma => {
                            let (t2, l2) = self.peek();
                            if t2 != Tok::Identifier && t2 != Tok::Not {
                                return Err(SelectorError::Syntax(format!(
                                    "found '{l2}', expected: identifier after ','"
                                )));
                            }
                        }
                        _ => {
                            return Err(SelectorError::Syntax(format!(
                                "found '{l}', expected: ',' or 'end of string'"
                            )))
                        }
                    }
                }
                Tok::End => return Ok(reqs),
                _ => {
                    return Err(SelectorError::Syntax(format!(
                        "found '{lit}', expected: !, identifier, or 'end of string'"
                    )))
                }
            }
        }
    }

    fn requirement(&mut self) -> std::result::Result<Requirement, String> {
        let (mut tok, mut key) = self.next();
        let negated = tok == Tok::Not;
        if negated {
            (tok, key) = self.next();
        }
        if tok != Tok::Identifier {
            return Err(format!("found '{key}', expected: identifier"));
        }
        let key_errs = qualified_name_errors(key);
        if !key_errs.is_empty() {
            return Err(invalid("<nil>", key, &key_errs.join("; ")));
        }
        let key = key.to_string();
        if negated {
            // Anything after `!key` other than ',' / end is reported by the caller.
            return Ok(Requirement {
                key,
                op: LabelOp::DoesNotExist,
            });
        }
        if matches!(self.peek().0, Tok::End | Tok::Comma) {
            return Ok(Requirement {
                key,
                op: LabelOp::Exists,
            });
        }

        let (op, lit) = self.next_operator();
        let values = match op {
            Tok::In | Tok::NotIn => self.value_set()?,
            Tok::Equals | Tok::DoubleEquals | Tok::NotEquals | Tok::GreaterThan | Tok::LessThan => {
                vec![self.exact_value()?]
            }
            _ => return Err(format!("found '{lit}', expected: {BINARY_OPERATORS}")),
        };

        // Validation as in labels.NewRequirement (values are sorted here).
        let mut errs = Vec::new();
        let mut number = None;
        if matches!(op, Tok::GreaterThan | Tok::LessThan) {
            for (i, v) in values.iter().enumerate() {
                match v.parse::<i64>() {
                    Ok(n) => number = Some(n),
                    Err(_) => errs.push(invalid(
                        &format!("values[{i}]"),
                        v,
                        "for 'Gt', 'Lt' operators, the value must be an integer",
                    )),
                }
            }
        }
        for (i, v) in values.iter().enumerate() {
            let value_errs = label_value_errors(v);
            if !value_errs.is_empty() {
                errs.push(invalid(
                    &format!("values[{i}][{key}]"),
                    v,
                    &value_errs.join("; "),
                ));
            }
        }
        if let Some(e) = aggregate(errs) {
            return Err(e);
        }

        let op = match (op, number) {
            (Tok::In | Tok::Equals | Tok::DoubleEquals, _) => LabelOp::In(values),
            (Tok::NotIn | Tok::NotEquals, _) => LabelOp::NotIn(values),
            (Tok::GreaterThan, Some(n)) => LabelOp::GreaterThan(n),
            (Tok::LessThan, Some(n)) => LabelOp::LessThan(n),
            _ => return Err(format!("found '{lit}', expected: {BINARY_OPERATORS}")),
        };
        Ok(Requirement { key, op })
    }

    /// `( v1, v2, ... )`; returns the sorted, de-duplicated set. As in kube,
    /// `()` and empty list elements denote the empty-string value.
    fn value_set(&mut self) -> std::result::Result<Vec<String>, String> {
        let (tok, lit) = self.next();
        if tok != Tok::OpenPar {
            return Err(format!("found '{lit}' expected: '('"));
        }
        let mut set: Vec<String> = Vec::new();
        let (tok, lit) = self.peek();
        match tok {
            Tok::ClosedPar => {
                self.next();
                set.push(String::new());
            }
            Tok::Identifier | Tok::Comma => loop {
                let (tok, lit) = self.next();
                match tok {
                    Tok::Identifier => {
                        set.push(lit.to_string());
                        let (t2, l2) = self.peek();
                        match t2 {
                            Tok::Comma => continue,
                            Tok::ClosedPar => {
                                self.next();
                                break;
                            }
                            _ => return Err(format!("found '{l2}', expected: ',' or ')'")),
                        }
                    }
                    Tok::Comma => {
                        if set.is_empty() {
                            set.push(String::new()); // "(,"
                        }
                        match self.peek().0 {
                            Tok::ClosedPar => {
                                self.next();
                                set.push(String::new()); // ",)"
                                break;
                            }
                            Tok::Comma => {
                                self.next();
                                set.push(String::new()); // ",,"
                            }
                            _ => {}
                        }
                    }
                    _ => return Err(format!("found '{lit}', expected: ',', or identifier")),
                }
            },
            _ => return Err(format!("found '{lit}', expected: ',', ')' or identifier")),
        }
        set.sort();
        set.dedup();
        Ok(set)
    }

    /// The single value after `=`, `==`, `!=`, `>` or `<` (may be empty).
    fn exact_value(&mut self) -> std::result::Result<String, String> {
        if matches!(self.peek().0, Tok::End | Tok::Comma) {
            return Ok(String::new());
        }
        match self.next() {
            (Tok::Identifier, lit) => Ok(lit.to_string()),
            (_, lit) => Err(format!("found '{lit}', expected: identifier")),
        }
    }
}

fn as_value((tok, lit): (Tok, &str)) -> (Tok, &str) {
    match tok {
        Tok::In | Tok::NotIn => (Tok::Identifier, lit),
        _ => (tok, lit),
    }
}

// ---------------------------------------------------------------------------
// Field selector
// ---------------------------------------------------------------------------

#[derive(Debug, Clone, PartialEq)]
struct FieldTerm {
    field: String,
    value: String,
    /// `=`/`==` when true, `!=` when false.
    equal: bool,
}

/// A parsed field selector: the AND of `field=value` / `field!=value` terms.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FieldSelector {
    terms: Vec<FieldTerm>,
}

impl FieldSelector {
    /// Parses like kube's `fields.ParseSelector`, then rejects fields not in
    /// `supported` (e.g. `metadata.name`, `metadata.namespace`) with
    /// `field label not supported: <field>`. Whitespace is not trimmed, as in kube.
    pub fn parse(s: &str, supported: &[&str]) -> Result<Self> {
        let sel = Self::parse_any(s)?;
        if let Some(t) = sel
            .terms
            .iter()
            .find(|t| !supported.contains(&t.field.as_str()))
        {
            return Err(SelectorError::UnsupportedField(t.field.clone()));
        }
        Ok(sel)
    }

    /// Parses like kube's `fields.ParseSelector`, whatever the fields.
    pub fn parse_any(s: &str) -> Result<Self> {
        let mut parts = split_terms(s);
        parts.sort_unstable();
        let mut terms = Vec::with_capacity(parts.len());
        for part in parts.into_iter().filter(|p| !p.is_empty()) {
            let (field, equal, raw) = split_term(part).ok_or_else(|| SelectorError::FieldTerm {
                selector: s.to_string(),
                term: part.to_string(),
            })?;
            terms.push(FieldTerm {
                field: field.to_string(),
                value: unescape_value(raw)?,
                equal,
            });
        }
        Ok(Self { terms })
    }

    /// True if the selector has no terms (matches everything).
    pub fn is_empty(&self) -> bool {
        self.terms.is_empty()
    }

    /// Matches against fields exposed through a lookup closure; a missing
    /// field compares as the empty string.
    pub fn matches<'a>(&self, field: impl Fn(&str) -> Option<&'a str>) -> bool {
        self.terms
            .iter()
            .all(|t| (field(&t.field).unwrap_or("") == t.value) == t.equal)
    }

    /// Whether every term is on `metadata.name` or `metadata.namespace`.
    pub fn only_name_and_namespace(&self) -> bool {
        self.terms
            .iter()
            .all(|t| t.field == "metadata.name" || t.field == "metadata.namespace")
    }

    /// If the selector pins `field` with `=` or `==`, return that value (used to
    /// narrow a list to one name/namespace).
    pub fn exact(&self, field: &str) -> Option<&str> {
        self.terms
            .iter()
            .find(|t| t.equal && t.field == field)
            .map(|t| t.value.as_str())
    }
}

/// Splits on commas not preceded by a backslash escape.
fn split_terms(s: &str) -> Vec<&str> {
    if s.is_empty() {
        return Vec::new();
    }
    let mut terms = Vec::new();
    let mut start = 0;
    let mut in_slash = false;
    for (i, c) in s.char_indices() {
        if in_slash {
            in_slash = false;
        } else if c == '\\' {
            in_slash = true;
        } else if c == ',' {
            terms.push(&s[start..i]);
            start = i + 1;
        }
    }
    terms.push(&s[start..]);
    terms
}

/// Splits a term at its leftmost operator; returns (field, is_equality, raw value).
fn split_term(term: &str) -> Option<(&str, bool, &str)> {
    term.char_indices().find_map(|(i, _)| {
        let rest = &term[i..];
        [("!=", false), ("==", true), ("=", true)]
            .into_iter()
            .find(|(op, _)| rest.starts_with(op))
            .map(|(op, equal)| (&term[..i], equal, &rest[op.len()..]))
    })
}

fn unescape_value(s: &str) -> Result<String> {
    let mut out = String::with_capacity(s.len());
    let mut in_slash = false;
    for c in s.chars() {
        if in_slash {
            match c {
                '\\' | ',' | '=' | '!' => out.push(c),
                _ => return Err(SelectorError::InvalidEscape(format!("\\{c}"))),
            }
            in_slash = false;
            continue;
        }
        match c {
            '\\' => in_slash = true,
            ',' | '=' => return Err(SelectorError::UnescapedCharacter(c)),
            _ => out.push(c),
        }
    }
    if in_slash {
        return Err(SelectorError::InvalidEscape("\\".to_string()));
    }
    Ok(out)
}

/// A `metav1.LabelSelector` in the label-selector syntax (`app=web,tier in (a,b)`), as kube's
/// `LabelSelectorAsSelector(..).String()` writes it; empty for a selector that matches everything.
pub fn label_selector_string(sel: &Value) -> String {
    let mut parts: Vec<String> = sel
        .get("matchLabels")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or("")))
                .collect()
        })
        .unwrap_or_default();
    for e in sel
        .get("matchExpressions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let key = e.get("key").and_then(Value::as_str).unwrap_or("");
        let values: Vec<&str> = e
            .get("values")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        parts.push(
            match e.get("operator").and_then(Value::as_str).unwrap_or("") {
                "In" => format!("{key} in ({})", values.join(",")),
                "NotIn" => format!("{key} notin ({})", values.join(",")),
                "Exists" => key.to_owned(),
                "DoesNotExist" => format!("!{key}"),
                op => format!("{key} {op} ({})", values.join(",")),
            },
        );
    }
    parts.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::collections::HashMap;

    fn set<'a>(pairs: &'a [(&'a str, &'a str)]) -> HashMap<&'a str, &'a str> {
        pairs.iter().copied().collect()
    }

    fn sel(s: &str) -> LabelSelector {
        LabelSelector::parse(s).unwrap_or_else(|e| panic!("parse {s:?}: {e}"))
    }

    fn lmatch(s: &str, pairs: &[(&str, &str)]) -> bool {
        let m = set(pairs);
        sel(s).matches(|k| m.get(k).copied())
    }

    fn lerr(s: &str) -> String {
        match LabelSelector::parse(s) {
            Ok(v) => panic!("expected error for {s:?}, got {v:?}"),
            Err(e) => e.to_string(),
        }
    }

    const NAMES: &[&str] = &["metadata.name", "metadata.namespace"];

    fn fsel(s: &str) -> FieldSelector {
        FieldSelector::parse(s, NAMES).unwrap_or_else(|e| panic!("parse {s:?}: {e}"))
    }

    fn ferr(s: &str) -> SelectorError {
        match FieldSelector::parse(s, NAMES) {
            Ok(v) => panic!("expected error for {s:?}, got {v:?}"),
            Err(e) => e,
        }
    }

    #[test]
    fn empty_selector_matches_everything() {
        for s in ["", "   ", "\t\n"] {
            let sel = sel(s);
            assert!(sel.is_empty());
            assert!(sel.matches(|_| None));
            assert!(sel.matches_json(None));
        }
        assert_eq!(sel(""), LabelSelector::default());
        assert!(!sel("a").is_empty());
    }

    #[test]
    fn equality_operators() {
        for s in ["app=web", "app==web", " app = web ", "app\t==\tweb"] {
            assert!(lmatch(s, &[("app", "web")]), "{s}");
            assert!(!lmatch(s, &[("app", "db")]), "{s}");
            assert!(!lmatch(s, &[]), "{s}");
        }
        assert_eq!(sel("app=web"), sel("app == web"));
    }

    #[test]
    fn not_equals_matches_absent_label() {
        assert!(lmatch("app!=web", &[]));
        assert!(lmatch("app!=web", &[("app", "db")]));
        assert!(!lmatch("app!=web", &[("app", "web")]));
    }

    #[test]
    fn empty_value() {
        assert!(lmatch("app=", &[("app", "")]));
        assert!(!lmatch("app=", &[("app", "x")]));
        assert!(!lmatch("app=", &[]));
        assert!(lmatch("app=,tier=x", &[("app", ""), ("tier", "x")]));
        assert!(lmatch("app!=", &[("app", "x")]));
        assert!(!lmatch("app!=", &[("app", "")]));
    }

    #[test]
    fn set_based_operators() {
        assert!(lmatch("env in (prod, dev)", &[("env", "dev")]));
        assert!(!lmatch("env in (prod,dev)", &[("env", "qa")]));
        assert!(!lmatch("env in (prod,dev)", &[]));
        assert!(lmatch("env notin (prod,dev)", &[("env", "qa")]));
        assert!(lmatch("env notin (prod,dev)", &[]));
        assert!(!lmatch("env notin(prod,dev)", &[("env", "prod")]));
        // duplicates and order do not matter
        assert_eq!(sel("e in (b,a,b)"), sel("e in (a,b)"));
    }

    #[test]
    fn empty_elements_in_value_sets_mean_empty_string() {
        // kube: "(,", ",)" and ",," insert "", and "()" is the set {""}.
        for s in ["e in (,a)", "e in (a,)", "e in (a,,b)", "e in (,)"] {
            assert!(lmatch(s, &[("e", "")]), "{s}");
        }
        assert!(lmatch("e in ()", &[("e", "")]));
        assert!(!lmatch("e in ()", &[("e", "x")]));
        assert!(lmatch("e notin ()", &[("e", "x")]));
        assert_eq!(sel("e in ()"), sel("e="));
    }

    #[test]
    fn exists_and_does_not_exist() {
        assert!(lmatch("app", &[("app", "")]));
        assert!(!lmatch("app", &[]));
        assert!(lmatch("!app", &[]));
        assert!(lmatch(" ! app ", &[]));
        assert!(!lmatch("!app", &[("app", "x")]));
        assert!(lmatch("a,!b", &[("a", "1")]));
        assert!(!lmatch("a,!b", &[("a", "1"), ("b", "2")]));
    }

    #[test]
    fn greater_and_less_than() {
        assert!(lmatch("n>5", &[("n", "6")]));
        assert!(!lmatch("n>5", &[("n", "5")]));
        assert!(lmatch("n<5", &[("n", "-3")]));
        assert!(!lmatch("n<5", &[("n", "5")]));
        assert!(lmatch("n > 0 , n < 10", &[("n", "9")]));
        // non-integer or absent labels never match
        assert!(!lmatch("n>5", &[("n", "abc")]));
        assert!(!lmatch("n<5", &[("n", "")]));
        assert!(!lmatch("n>5", &[]));
        assert!(!lmatch("n<5", &[]));
    }

    #[test]
    fn keywords_are_identifiers_in_value_position() {
        assert!(lmatch("in=notin", &[("in", "notin")]));
        assert!(lmatch("x in (in,notin)", &[("x", "notin")]));
        assert!(lmatch("notin notin (in)", &[("notin", "x")]));
        assert!(lmatch("in", &[("in", "")]));
    }

    #[test]
    fn multiple_requirements_are_anded() {
        let s = "app=web,env in (prod),!legacy,tier!=db";
        assert!(lmatch(s, &[("app", "web"), ("env", "prod")]));
        assert!(!lmatch(
            s,
            &[("app", "web"), ("env", "prod"), ("legacy", "1")]
        ));
        assert!(!lmatch(
            s,
            &[("app", "web"), ("env", "prod"), ("tier", "db")]
        ));
        assert!(!lmatch(s, &[("app", "web")]));
        // requirement order is normalised
        assert_eq!(sel("b=1,a=2"), sel("a=2,b=1"));
    }

    #[test]
    fn prefixed_keys_and_value_charset() {
        assert!(lmatch(
            "app.kubernetes.io/name=my_app-1.2",
            &[("app.kubernetes.io/name", "my_app-1.2")]
        ));
        assert!(lmatch("example.com/Foo", &[("example.com/Foo", "x")]));
        let key63 = "a".repeat(63);
        let prefix253 = format!("{}.com", "a".repeat(249));
        assert!(LabelSelector::parse(&format!("{prefix253}/{key63}={key63}")).is_ok());
    }

    #[test]
    fn matches_json_labels() {
        let obj = json!({"metadata": {"labels": {"app": "web", "n": "7", "odd": 3}}});
        let labels = obj["metadata"]["labels"].as_object();
        assert!(sel("app=web,n>6").matches_json(labels));
        assert!(!sel("app=db").matches_json(labels));
        assert!(sel("!missing").matches_json(labels));
        // non-string values are treated as absent
        assert!(sel("!odd").matches_json(labels));
        assert!(sel("app!=web").matches_json(None));
        assert!(!sel("app").matches_json(None));
    }

    #[test]
    fn syntax_errors() {
        assert_eq!(
            lerr("=a"),
            "found '=', expected: !, identifier, or 'end of string'"
        );
        assert_eq!(lerr("a=b,,c"), "found ',', expected: identifier after ','");
        assert_eq!(lerr("a=b,"), "found '', expected: identifier after ','");
        assert_eq!(lerr("a=b c"), "found 'c', expected: ',' or 'end of string'");
        assert_eq!(
            lerr("x==a==b"),
            "found '==', expected: ',' or 'end of string'"
        );
        assert_eq!(lerr("!x=a"), "found '=', expected: ',' or 'end of string'");
    }

    #[test]
    fn requirement_syntax_errors() {
        assert_eq!(
            lerr("!"),
            "unable to parse requirement: found '', expected: identifier"
        );
        assert_eq!(
            lerr("a b"),
            "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt"
        );
        assert_eq!(
            lerr("a=(b)"),
            "unable to parse requirement: found '(', expected: identifier"
        );
        assert_eq!(
            lerr("a in b"),
            "unable to parse requirement: found 'b' expected: '('"
        );
        assert_eq!(
            lerr("a in"),
            "unable to parse requirement: found '' expected: '('"
        );
        assert_eq!(
            lerr("a in (b c)"),
            "unable to parse requirement: found 'c', expected: ',' or ')'"
        );
        assert_eq!(
            lerr("a in (b"),
            "unable to parse requirement: found '', expected: ',' or ')'"
        );
        assert_eq!(
            lerr("a in (=)"),
            "unable to parse requirement: found '=', expected: ',', ')' or identifier"
        );
        assert_eq!(
            lerr("a in (b,=)"),
            "unable to parse requirement: found '=', expected: ',', or identifier"
        );
        assert_eq!(
            lerr("a!"),
            "unable to parse requirement: found '!', expected: in, notin, =, ==, !=, gt, lt"
        );
    }

    #[test]
    fn invalid_keys() {
        let name_msg = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
        assert_eq!(
            lerr("-app=x"),
            format!("unable to parse requirement: <nil>: Invalid value: \"-app\": {name_msg}")
        );
        assert_eq!(
            lerr("example.com/=x"),
            format!(
                "unable to parse requirement: <nil>: Invalid value: \"example.com/\": name part must be non-empty; {name_msg}"
            )
        );
        let long = "a".repeat(64);
        assert_eq!(
            lerr(&long),
            format!(
                "unable to parse requirement: <nil>: Invalid value: \"{long}\": name part must be no more than 63 characters"
            )
        );
        assert!(lerr("/a").contains("prefix part must be non-empty"));
        assert!(lerr("Example.com/a").contains("prefix part a lowercase RFC 1123 subdomain"));
        let long_prefix = format!("{}.com/a", "a".repeat(250));
        assert!(lerr(&long_prefix).contains("prefix part must be no more than 253 characters"));
        assert!(lerr("a/b/c").contains(
            "Invalid value: \"a/b/c\": a qualified name must consist of alphanumeric characters"
        ));
        assert!(lerr("ключ").contains("Invalid value: \"ключ\""));
    }

    #[test]
    fn invalid_values() {
        let value_msg = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";
        assert_eq!(
            lerr("app=-web"),
            format!(
                "unable to parse requirement: values[0][app]: Invalid value: \"-web\": {value_msg}"
            )
        );
        assert_eq!(
            lerr("app in (zz_, ok)"),
            format!(
                "unable to parse requirement: values[1][app]: Invalid value: \"zz_\": {value_msg}"
            )
        );
        let long = "v".repeat(64);
        assert_eq!(
            lerr(&format!("app={long}")),
            format!(
                "unable to parse requirement: values[0][app]: Invalid value: \"{long}\": must be no more than 63 characters"
            )
        );
    }

    #[test]
    fn gt_lt_require_integers() {
        assert_eq!(
            lerr("n>abc"),
            "unable to parse requirement: values[0]: Invalid value: \"abc\": for 'Gt', 'Lt' operators, the value must be an integer"
        );
        assert_eq!(
            lerr("n<"),
            "unable to parse requirement: values[0]: Invalid value: \"\": for 'Gt', 'Lt' operators, the value must be an integer"
        );
        // both the integer and the label-value check fail: aggregated
        let e = lerr("n>1.5.");
        assert!(
            e.starts_with("unable to parse requirement: [values[0]: Invalid value: \"1.5.\": for 'Gt', 'Lt' operators, the value must be an integer, values[0][n]: Invalid value: \"1.5.\": a valid label"),
            "{e}"
        );
        // "-5" is an integer but not a valid label value
        assert!(lerr("n>-5").contains("values[0][n]: Invalid value: \"-5\""));
    }

    #[test]
    fn error_variants() {
        assert!(matches!(
            LabelSelector::parse("a in ("),
            Err(SelectorError::Requirement(_))
        ));
        assert!(matches!(
            LabelSelector::parse("a,="),
            Err(SelectorError::Syntax(_))
        ));
    }

    #[test]
    fn field_selector_basic() {
        let f = fsel("metadata.name=foo,metadata.namespace!=kube-system");
        assert!(!f.is_empty());
        let fields = set(&[("metadata.name", "foo"), ("metadata.namespace", "default")]);
        assert!(f.matches(|k| fields.get(k).copied()));
        let fields = set(&[
            ("metadata.name", "foo"),
            ("metadata.namespace", "kube-system"),
        ]);
        assert!(!f.matches(|k| fields.get(k).copied()));
        assert!(fsel("metadata.name==foo").matches(|_| Some("foo")));
    }

    #[test]
    fn field_selector_empty() {
        for s in ["", ",", ",,"] {
            let f = fsel(s);
            assert!(f.is_empty());
            assert!(f.matches(|_| None));
            assert_eq!(f, FieldSelector::default());
        }
    }

    #[test]
    fn field_selector_missing_field_is_empty_string() {
        assert!(fsel("metadata.name=").matches(|_| None));
        assert!(!fsel("metadata.name!=").matches(|_| None));
        assert!(fsel("metadata.name!=x").matches(|_| None));
        assert!(!fsel("metadata.name=x").matches(|_| None));
    }

    #[test]
    fn field_selector_escaping() {
        let f = fsel(r"metadata.name=a\,b\=c\\d\!e");
        assert!(f.matches(|_| Some(r"a,b=c\d!e")));
        assert_eq!(f.exact("metadata.name"), Some(r"a,b=c\d!e"));
        // unescaped '!' inside a value is fine; leftmost operator splits
        assert_eq!(fsel("metadata.name=!x").exact("metadata.name"), Some("!x"));
    }

    #[test]
    fn field_selector_escape_errors() {
        assert_eq!(
            ferr(r"metadata.name=a\x").to_string(),
            r"invalid field selector: invalid escape sequence: \x"
        );
        assert_eq!(
            ferr(r"metadata.name=a\").to_string(),
            r"invalid field selector: invalid escape sequence: \"
        );
        assert_eq!(
            ferr("metadata.name=a=b").to_string(),
            "invalid field selector: unescaped character in value: ="
        );
        assert_eq!(
            ferr("metadata.name!==b"),
            SelectorError::UnescapedCharacter('=')
        );
    }

    #[test]
    fn field_selector_term_errors() {
        assert_eq!(
            ferr("metadata.name=a,foo").to_string(),
            "invalid selector: 'metadata.name=a,foo'; can't understand 'foo'"
        );
        assert_eq!(
            ferr("metadata.name").to_string(),
            "invalid selector: 'metadata.name'; can't understand 'metadata.name'"
        );
    }

    #[test]
    fn field_selector_unsupported_fields() {
        assert_eq!(
            ferr("spec.foo=bar").to_string(),
            "field label not supported: spec.foo"
        );
        assert_eq!(
            ferr("metadata.name=a,status.phase!=Running"),
            SelectorError::UnsupportedField("status.phase".into())
        );
        // whitespace is significant, as in kube
        assert_eq!(
            ferr("metadata.name = a").to_string(),
            "field label not supported: metadata.name "
        );
        assert_eq!(ferr("=a").to_string(), "field label not supported: ");
        assert!(FieldSelector::parse("metadata.name=a", &[]).is_err());
    }

    #[test]
    fn field_selector_exact() {
        let f = fsel("metadata.namespace=ns1,metadata.name!=skip");
        assert_eq!(f.exact("metadata.namespace"), Some("ns1"));
        assert_eq!(f.exact("metadata.name"), None);
        assert_eq!(fsel("metadata.name==x").exact("metadata.name"), Some("x"));
        assert_eq!(fsel("").exact("metadata.name"), None);
        assert_eq!(fsel("metadata.name=").exact("metadata.name"), Some(""));
    }

    #[test]
    fn field_selector_terms_are_normalised() {
        assert_eq!(
            fsel("metadata.namespace=b,metadata.name=a"),
            fsel("metadata.name=a,metadata.namespace=b")
        );
    }
}
