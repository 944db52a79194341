//! The parsed form of a `JSONSchemaProps` node.
//!
//! Parsing is lenient about unknown keys (kube's decoder drops them) and strict about the JSON type of
//! known keywords (kube's decoder rejects e.g. `"type": 5`); the latter are reported as violations.

use std::collections::HashMap;
use std::sync::Arc;

use regex::Regex;
use serde_json::{Map, Value};

use super::cel::{CompiledRule, RuleDiag};
use super::field::{self, Bad};
use super::Violation;

/// `additionalProperties`: a boolean or a schema.
#[derive(Debug, Clone)]
pub(crate) enum AdditionalProperties {
    Bool(bool),
    Schema(Box<Node>),
}

/// One entry of `x-kubernetes-validations`.
#[derive(Debug, Clone, Default)]
pub(crate) struct Rule {
    pub rule: String,
    pub message: String,
    pub message_expression: String,
    pub reason: Option<String>,
    pub field_path: String,
    pub optional_old_self: Option<bool>,
    /// Set by [`super::cel::compile_tree`] once the schema is structural.
    pub compiled: Option<Arc<CompiledRule>>,
    /// Compilation diagnostics (reported by CRD validation).
    pub diag: RuleDiag,
}

impl Rule {
    /// kube's `ruleErrorString`: the trimmed message, or the trimmed rule.
    pub(crate) fn error_string(&self) -> String {
        if !self.message.is_empty() {
            self.message.trim().to_string()
        } else {
            self.rule.trim().to_string()
        }
    }

    /// kube's `ruleMessageOrDefault`.
    pub(crate) fn message_or_default(&self) -> String {
        if self.message.is_empty() {
            format!("failed rule: {}", self.error_string())
        } else {
            self.message.trim().to_string()
        }
    }

    /// Go's `json.Marshal` of the internal `apiextensions.ValidationRule` struct (no json tags, so
    /// field names are capitalised and appear in declaration order). kube prints this as the bad value
    /// of rule compilation errors.
    pub(crate) fn go_struct_json(&self) -> String {
        let s = |x: &str| field::go_json(&Value::String(x.to_string()));
        let reason = match &self.reason {
            Some(r) => s(r),
            None => "null".to_string(),
        };
        let oos = match self.optional_old_self {
            Some(b) => b.to_string(),
            None => "null".to_string(),
        };
        format!(
            "{{\"Rule\":{},\"Message\":{},\"MessageExpression\":{},\"Reason\":{},\"FieldPath\":{},\"OptionalOldSelf\":{}}}",
            s(&self.rule),
            s(&self.message),
            s(&self.message_expression),
            reason,
            s(&self.field_path),
            oos
        )
    }
}

/// A `JSONSchemaProps` node.
#[derive(Debug, Clone, Default)]
pub(crate) struct Node {
    pub ty: String,
    pub format: String,
    pub title: String,
    pub description: String,
    pub nullable: bool,
    pub default: Option<Value>,
    pub maximum: Option<f64>,
    pub exclusive_maximum: bool,
    pub minimum: Option<f64>,
    pub exclusive_minimum: bool,
    pub max_length: Option<i64>,
    pub min_length: Option<i64>,
    pub pattern: String,
    pub pattern_re: Option<Regex>,
    pub pattern_err: Option<String>,
    pub max_items: Option<i64>,
    pub min_items: Option<i64>,
    pub unique_items: bool,
    pub multiple_of: Option<f64>,
    pub enum_values: Option<Vec<Value>>,
    pub max_properties: Option<i64>,
    pub min_properties: Option<i64>,
    pub required: Vec<String>,
    pub items: Option<Box<Node>>,
    pub items_array: Option<Vec<Node>>,
    pub all_of: Vec<Node>,
    pub one_of: Vec<Node>,
    pub any_of: Vec<Node>,
    pub not: Option<Box<Node>>,
    pub properties: Vec<(String, Node)>,
    prop_index: HashMap<String, usize>,
    pub additional_properties: Option<AdditionalProperties>,
    pub preserve_unknown_fields: Option<bool>,
    pub embedded_resource: bool,
    pub int_or_string: bool,
    pub list_map_keys: Vec<String>,
    pub list_type: Option<String>,
    pub map_type: Option<String>,
    pub validations: Vec<Rule>,
    pub has_id: bool,
    pub has_schema: bool,
    pub has_ref: bool,
    pub has_pattern_properties: bool,
    pub has_dependencies: bool,
    pub has_additional_items: bool,
    pub has_definitions: bool,
    pub has_example: bool,
    pub has_external_docs: bool,
    /// Whether this node or any structural descendant has `x-kubernetes-validations` (set by
    /// [`super::cel::compile_tree`]).
    pub has_rules: bool,
}

impl Node {
    /// The schema of property `k`, if declared.
    pub(crate) fn prop(&self, k: &str) -> Option<&Node> {
        self.prop_index.get(k).map(|i| &self.properties[*i].1)
    }

    pub(crate) fn has_properties(&self) -> bool {
        !self.properties.is_empty()
    }

    pub(crate) fn preserves_unknown(&self) -> bool {
        self.preserve_unknown_fields == Some(true)
    }

    /// The `additionalProperties` schema, if it is a schema.
    pub(crate) fn additional_schema(&self) -> Option<&Node> {
        match &self.additional_properties {
            Some(AdditionalProperties::Schema(s)) => Some(s),
            _ => None,
        }
    }

    /// Parses a node; decode problems are appended to `errs`.
    pub(crate) fn parse(v: &Value, path: &str, errs: &mut Vec<Violation>) -> Node {
        let mut n = Node::default();
        let obj = match v {
            Value::Object(m) => m,
            other => {
                errs.push(decode_err(path, other, "object"));
                return n;
            }
        };
        let p = Parser { obj, path, errs };
        p.run(&mut n);
        n
    }

    pub(crate) fn set_properties(&mut self, props: Vec<(String, Node)>) {
        self.prop_index = props
            .iter()
            .enumerate()
            .map(|(i, (k, _))| (k.clone(), i))
            .collect();
        self.properties = props;
    }
}

fn decode_err(path: &str, v: &Value, want: &str) -> Violation {
    Violation::type_invalid(path, Bad::of(v), &format!("must be of type {want}"))
}

struct Parser<'a> {
    obj: &'a Map<String, Value>,
    path: &'a str,
    errs: &'a mut Vec<Violation>,
}

impl Parser<'_> {
    fn p(&self, k: &str) -> String {
        field::child(self.path, k)
    }

    fn string(&mut self, k: &str) -> String {
        match self.obj.get(k) {
            None | Some(Value::Null) => String::new(),
            Some(Value::String(s)) => s.clone(),
            Some(other) => {
                let p = self.p(k);
                self.errs.push(decode_err(&p, other, "string"));
                String::new()
            }
        }
    }

    fn opt_string(&mut self, k: &str) -> Option<String> {
        match self.obj.get(k) {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(other) => {
                let p = self.p(k);
                self.errs.push(decode_err(&p, other, "string"));
                None
            }
        }
    }

    fn opt_bool(&mut self, k: &str) -> Option<bool> {
        match self.obj.get(k) {
            None | Some(Value::Null) => None,
            Some(Value::Bool(b)) => Some(*b),
            Some(other) => {
                let p = self.p(k);
                self.errs.push(decode_err(&p, other, "boolean"));
                None
            }
        }
    }

    fn boolean(&mut self, k: &str) -> bool {
        self.opt_bool(k).unwrap_or(false)
    }

    fn number(&mut self, k: &str) -> Option<f64> {
        match self.obj.get(k) {
            None | Some(Value::Null) => None,
            Some(Value::Number(n)) => n.as_f64(),
            Some(other) => {
                let p = self.p(k);
                self.errs.push(decode_err(&p, other, "number"));
                None
            }
        }
    }

    fn integer(&mut self, k: &str) -> Option<i64> {
        match self.obj.get(k) {
            None | Some(Value::Null) => None,
            Some(Value::Number(n)) => {
                if let Some(i) = n.as_i64() {
                    Some(i)
                } else {
                    match n.as_f64() {
                        Some(f) if f.fract() == 0.0 && f.abs() < 9.0e18 => Some(f as i64),
                        _ => {
                            let p = self.p(k);
                            let v = Value::Number(n.clone());
                            self.errs.push(decode_err(&p, &v, "integer"));
                            None
                        }
                    }
                }
            }
            Some(other) => {
                let p = self.p(k);
                self.errs.push(decode_err(&p, other, "integer"));
                None
            }
        }
    }

    fn strings(&mut self, k: &str) -> Vec<String> {
        match self.obj.get(k) {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(a)) => {
                let mut out = Vec::with_capacity(a.len());
                for (i, x) in a.iter().enumerate() {
                    match x {
                        Value::String(s) => out.push(s.clone()),
                        other => {
                            let p = field::index(&self.p(k), i);
                            self.errs.push(decode_err(&p, other, "string"));
                        }
                    }
                }
                out
            }
            Some(other) => {
                let p = self.p(k);
                self.errs.push(decode_err(&p, other, "array"));
                Vec::new()
            }
        }
    }

    fn schema(&mut self, k: &str) -> Option<Box<Node>> {
        match self.obj.get(k) {
            None | Some(Value::Null) => None,
            Some(v) => {
                let p = self.p(k);
                Some(Box::new(Node::parse(v, &p, self.errs)))
            }
        }
    }

    fn schemas(&mut self, k: &str) -> Vec<Node> {
        match self.obj.get(k) {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(a)) => {
                let base = self.p(k);
                a.iter()
                    .enumerate()
                    .map(|(i, x)| Node::parse(x, &field::index(&base, i), self.errs))
                    .collect()
            }
            Some(other) => {
                let p = self.p(k);
                self.errs.push(decode_err(&p, other, "array"));
                Vec::new()
            }
        }
    }

    fn present(&self, k: &str) -> bool {
        !matches!(self.obj.get(k), None | Some(Value::Null))
    }

    fn non_empty(&self, k: &str) -> bool {
        match self.obj.get(k) {
            None | Some(Value::Null) => false,
            Some(Value::Object(m)) => !m.is_empty(),
            Some(Value::Array(a)) => !a.is_empty(),
            Some(Value::String(s)) => !s.is_empty(),
            Some(_) => true,
        }
    }

    fn run(mut self, n: &mut Node) {
        n.ty = self.string("type");
        n.format = self.string("format");
        n.title = self.string("title");
        n.description = self.string("description");
        n.nullable = self.boolean("nullable");
        n.default = match self.obj.get("default") {
            None | Some(Value::Null) => None,
            Some(v) => Some(v.clone()),
        };
        n.maximum = self.number("maximum");
        n.exclusive_maximum = self.boolean("exclusiveMaximum");
        n.minimum = self.number("minimum");
        n.exclusive_minimum = self.boolean("exclusiveMinimum");
        n.max_length = self.integer("maxLength");
        n.min_length = self.integer("minLength");
        n.pattern = self.string("pattern");
        if !n.pattern.is_empty() {
            match compile_go_regex(&n.pattern) {
                Ok(re) => n.pattern_re = Some(re),
                Err(e) => n.pattern_err = Some(e),
            }
        }
        n.max_items = self.integer("maxItems");
        n.min_items = self.integer("minItems");
        n.unique_items = self.boolean("uniqueItems");
        n.multiple_of = self.number("multipleOf");
        n.enum_values = match self.obj.get("enum") {
            None | Some(Value::Null) => None,
            Some(Value::Array(a)) => Some(a.clone()),
            Some(other) => {
                let p = self.p("enum");
                self.errs.push(decode_err(&p, other, "array"));
                None
            }
        };
        n.max_properties = self.integer("maxProperties");
        n.min_properties = self.integer("minProperties");
        n.required = self.strings("required");
        match self.obj.get("items") {
            None | Some(Value::Null) => {}
            Some(Value::Array(a)) => {
                let base = self.p("items");
                n.items_array = Some(
                    a.iter()
                        .enumerate()
                        .map(|(i, x)| Node::parse(x, &field::index(&base, i), self.errs))
                        .collect(),
                );
            }
            Some(v) => {
                let p = self.p("items");
                n.items = Some(Box::new(Node::parse(v, &p, self.errs)));
            }
        }
        n.all_of = self.schemas("allOf");
        n.one_of = self.schemas("oneOf");
        n.any_of = self.schemas("anyOf");
        n.not = self.schema("not");
        match self.obj.get("properties") {
            None | Some(Value::Null) => {}
            Some(Value::Object(m)) => {
                let base = self.p("properties");
                let props = m
                    .iter()
                    .map(|(k, v)| {
                        let p = field::key(&base, k);
                        (k.clone(), Node::parse(v, &p, self.errs))
                    })
                    .collect();
                n.set_properties(props);
            }
            Some(other) => {
                let p = self.p("properties");
                self.errs.push(decode_err(&p, other, "object"));
            }
        }
        n.additional_properties = match self.obj.get("additionalProperties") {
            None | Some(Value::Null) => None,
            Some(Value::Bool(b)) => Some(AdditionalProperties::Bool(*b)),
            Some(v) => {
                let p = self.p("additionalProperties");
                Some(AdditionalProperties::Schema(Box::new(Node::parse(
                    v, &p, self.errs,
                ))))
            }
        };
        n.preserve_unknown_fields = self.opt_bool("x-kubernetes-preserve-unknown-fields");
        n.embedded_resource = self.boolean("x-kubernetes-embedded-resource");
        n.int_or_string = self.boolean("x-kubernetes-int-or-string");
        n.list_map_keys = self.strings("x-kubernetes-list-map-keys");
        n.list_type = self.opt_string("x-kubernetes-list-type");
        n.map_type = self.opt_string("x-kubernetes-map-type");
        n.validations = self.rules();
        n.has_id = self.non_empty("id");
        n.has_schema = self.non_empty("$schema");
        n.has_ref = self.present("$ref");
        n.has_pattern_properties = self.non_empty("patternProperties");
        n.has_dependencies = self.present("dependencies");
        n.has_additional_items = self.present("additionalItems");
        n.has_definitions = self.non_empty("definitions");
        n.has_example = self.present("example");
        n.has_external_docs = self.present("externalDocs");
    }

    fn rules(&mut self) -> Vec<Rule> {
        let k = "x-kubernetes-validations";
        let arr = match self.obj.get(k) {
            None | Some(Value::Null) => return Vec::new(),
            Some(Value::Array(a)) => a,
            Some(other) => {
                let p = self.p(k);
                self.errs.push(decode_err(&p, other, "array"));
                return Vec::new();
            }
        };
        let base = self.p(k);
        let mut out = Vec::with_capacity(arr.len());
        for (i, r) in arr.iter().enumerate() {
            let rp = field::index(&base, i);
            let m = match r {
                Value::Object(m) => m,
                other => {
                    self.errs.push(decode_err(&rp, other, "object"));
                    continue;
                }
            };
            let mut sub = Parser {
                obj: m,
                path: &rp,
                errs: self.errs,
            };
            out.push(Rule {
                rule: sub.string("rule"),
                message: sub.string("message"),
                message_expression: sub.string("messageExpression"),
                reason: sub.opt_string("reason"),
                field_path: sub.string("fieldPath"),
                optional_old_self: sub.opt_bool("optionalOldSelf"),
                compiled: None,
                diag: RuleDiag::default(),
            });
        }
        out
    }
}

/// Compiles a pattern with Go (RE2) semantics using the `regex` crate: `\d`, `\w`, `\s` and `\b` are
/// ASCII-only in Go, so they are rewritten to their ASCII forms.
pub(crate) fn compile_go_regex(pattern: &str) -> Result<Regex, String> {
    let mut out = String::with_capacity(pattern.len() + 8);
    let mut chars = pattern.chars().peekable();
    let mut class_depth = 0usize;
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some('d') => out.push_str("[0-9]"),
                Some('D') => out.push_str("[^0-9]"),
                Some('w') => out.push_str("[0-9A-Za-z_]"),
                Some('W') => out.push_str("[^0-9A-Za-z_]"),
                Some('s') => out.push_str("[\\t\\n\\f\\r ]"),
                Some('S') => out.push_str("[^\\t\\n\\f\\r ]"),
                Some('b') if class_depth == 0 => out.push_str("(?-u:\\b)"),
                Some('B') if class_depth == 0 => out.push_str("(?-u:\\B)"),
                Some(o) => {
                    out.push('\\');
                    out.push(o);
                }
                None => out.push('\\'),
            },
            '[' if class_depth > 0 => {
                if chars.peek() == Some(&':') {
                    // POSIX class such as [:alpha:] inside a bracket expression
                    out.push('[');
                    for d in chars.by_ref() {
                        out.push(d);
                        if d == ']' {
                            break;
                        }
                    }
                } else {
                    // a nested '[' is a literal in Go
                    out.push_str("\\[");
                }
            }
            '&' | '~' if class_depth > 0 => {
                // set operators in the regex crate, literals in Go
                out.push('\\');
                out.push(c);
            }
            '[' => {
                class_depth += 1;
                out.push(c);
                // a leading ']' (or '^]') is a literal in both dialects
                if chars.peek() == Some(&'^') {
                    out.push('^');
                    chars.next();
                }
                if chars.peek() == Some(&']') {
                    out.push_str("\\]");
                    chars.next();
                }
            }
            ']' if class_depth > 0 => {
                class_depth -= 1;
                out.push(c);
            }
            _ => out.push(c),
        }
    }
    regex::RegexBuilder::new(&out)
        .size_limit(1 << 22)
        .build()
        .map_err(|e| {
            let msg = e.to_string();
            let last = msg
                .lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("")
                .trim()
                .trim_start_matches("error: ")
                .to_string();
            format!("error parsing regexp: {last}: `{pattern}`")
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parses_keywords() {
        let mut errs = vec![];
        let n = Node::parse(
            &json!({
                "type": "object",
                "required": ["a"],
                "properties": {"a": {"type": "string", "maxLength": 3, "pattern": "^a"}},
                "x-kubernetes-validations": [{"rule": "true", "reason": "FieldValueForbidden"}]
            }),
            "root",
            &mut errs,
        );
        assert!(errs.is_empty(), "{errs:?}");
        assert_eq!(n.ty, "object");
        assert_eq!(n.required, vec!["a".to_string()]);
        let a = n.prop("a").expect("a");
        assert_eq!(a.max_length, Some(3));
        assert!(a.pattern_re.is_some());
        assert_eq!(
            n.validations[0].reason.as_deref(),
            Some("FieldValueForbidden")
        );
    }

    #[test]
    fn decode_errors() {
        let mut errs = vec![];
        Node::parse(
            &json!({"type": 5, "properties": {"x": {"maxLength": "a"}}}),
            "s",
            &mut errs,
        );
        assert_eq!(errs.len(), 2);
        assert_eq!(errs[0].field, "s.type");
        assert_eq!(errs[1].field, "s.properties[x].maxLength");
    }

    #[test]
    fn go_regex_is_ascii() {
        let re = compile_go_regex(r"^\d+$").expect("re");
        assert!(re.is_match("123"));
        assert!(!re.is_match("١٢٣"));
        let re = compile_go_regex(r"^[\w-]+$").expect("re");
        assert!(re.is_match("a_b-c"));
        assert!(compile_go_regex("(").is_err());
        let re = compile_go_regex(r"^[]a]+$").expect("re");
        assert!(re.is_match("]a"));
        let re = compile_go_regex(r"^[[a&&~]+$").expect("re");
        assert!(re.is_match("[a&~"));
        let re = compile_go_regex(r"^[[:alpha:]0-9]+$").expect("re");
        assert!(re.is_match("ab1"));
    }

    #[test]
    fn rule_struct_json() {
        let r = Rule {
            rule: "self.x > 0".into(),
            ..Default::default()
        };
        assert_eq!(
            r.go_struct_json(),
            r#"{"Rule":"self.x \u003e 0","Message":"","MessageExpression":"","Reason":null,"FieldPath":"","OptionalOldSelf":null}"#
        );
    }
}
