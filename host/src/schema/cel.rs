//! `x-kubernetes-validations`: compilation checks, JSON→CEL value mapping and rule evaluation
//! (`apiextensions-apiserver/pkg/apiserver/schema/cel`), on top of the `cel` crate with the
//! Kubernetes CEL libraries from `kube-cel`.
//!
//! # Differences from kube (cel-go)
//!
//! * There is no CEL type checker. Compilation catches syntax errors, references to undeclared
//!   identifiers, selection of fields that the schema does not declare (`undefined field`), and
//!   obviously mistyped results; other type errors surface at evaluation time.
//! * Cost: cel-go meters every operation. Here a rule's cost is **estimated before it runs** by
//!   walking its AST: every node costs 1, and a comprehension (`all`, `exists`, `map`, `filter`, …)
//!   multiplies the cost of its body by the size of the collection it iterates. At CRD time that
//!   size comes from the schema (`maxItems`/`maxProperties`, else kube's estimate from the maximum
//!   request size) and rules above kube's `StaticEstimatedCostLimit` (10,000,000) are rejected; at
//!   runtime it comes from the actual data, and a rule above kube's `PerCallLimit` (1,000,000) is
//!   not run (reported like cel-go's "actual cost limit exceeded"), while the sum over all rules of one
//!   validation is held to kube's `RuntimeCELCostBudget` (10,000,000). String functions are not
//!   charged by length, and the per-rule cardinality multiplier of kube's static estimate is not
//!   applied.
//! * Evaluation runs on a dedicated thread with a large stack (the `cel` crate's ANTLR parser and
//!   interpreter recurse deeply); a panic inside the interpreter becomes an internal error.

use std::collections::HashMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, OnceLock};

use kube_cel::cel::common::ast::{EntryExpr, Expr, IdedExpr, LiteralValue, SourceInfo};
use kube_cel::cel::extractors::This;
use kube_cel::cel::objects::{Key, Map as CelMap, OptionalValue};
use kube_cel::cel::parser::{ParseErrors, Parser};
use kube_cel::cel::{Context, ExecutionError, Value as CelValue};
use kube_cel::KubeCelExt;
use serde_json::Value;

use super::field::{self, Bad};
use super::format;
use super::node::{AdditionalProperties, Node, Rule};
use super::Violation;

/// kube's `celconfig.PerCallLimit`.
pub const PER_CALL_LIMIT: u64 = 1_000_000;
/// kube's `celconfig.RuntimeCELCostBudget` (per validation of one object).
pub const RUNTIME_COST_BUDGET: u64 = 10_000_000;
/// kube's `StaticEstimatedCostLimit` (per expression, at CRD validation).
pub const STATIC_ESTIMATED_COST_LIMIT: u64 = 10_000_000;
const MAX_REQUEST_SIZE_BYTES: u64 = 3 * 1024 * 1024;
const MAX_EVALUATED_MESSAGE_EXPRESSION_SIZE_BYTES: usize = 5 * 1024;
/// Stack for the thread that parses and evaluates CEL (only touched pages are committed).
const CEL_STACK_SIZE: usize = 64 << 20;

/// Identifier prefixes of namespaced functions (`sets.contains(...)` parses as a call on `sets`).
pub(crate) const NAMESPACES: &[&str] = &[
    "base64",
    "format",
    "ip",
    "jsonpatch",
    "lists",
    "math",
    "optional",
    "sets",
    "strings",
];
/// Type identifiers that are valid expressions in cel-go.
pub(crate) const TYPE_NAMES: &[&str] = &[
    "bool",
    "bytes",
    "double",
    "duration",
    "dyn",
    "int",
    "list",
    "map",
    "null_type",
    "string",
    "timestamp",
    "type",
    "uint",
];

/// Functions the interpreter knows (the `cel` crate's built-ins, kube-cel's libraries and `dyn`);
/// calls to anything else are rejected when the rule is compiled rather than failing every
/// evaluation. Operators (`_+_`, `@in`, ...) are always known.
const KNOWN_FUNCTIONS: &[&str] = &[
    "add",
    "asApproximateFloat",
    "asInteger",
    "base64.decode",
    "base64.encode",
    "bytes",
    "charAt",
    "cidr",
    "compareTo",
    "contains",
    "containsCIDR",
    "containsIP",
    "distinct",
    "double",
    "duration",
    "dyn",
    "endsWith",
    "family",
    "find",
    "findAll",
    "first",
    "flatten",
    "format",
    "format.byte",
    "format.date",
    "format.datetime",
    "format.dns1035Label",
    "format.dns1035LabelPrefix",
    "format.dns1123Label",
    "format.dns1123LabelPrefix",
    "format.dns1123Subdomain",
    "format.dns1123SubdomainPrefix",
    "format.labelValue",
    "format.named",
    "format.qualifiedName",
    "format.uri",
    "format.uuid",
    "getDate",
    "getDayOfMonth",
    "getDayOfWeek",
    "getDayOfYear",
    "getEscapedPath",
    "getFullYear",
    "getHost",
    "getHostname",
    "getHours",
    "getMilliseconds",
    "getMinutes",
    "getMonth",
    "getPort",
    "getQuery",
    "getScheme",
    "getSeconds",
    "hasValue",
    "indexOf",
    "int",
    "ip",
    "ip.isCanonical",
    "isCIDR",
    "isCIDRv4",
    "isCIDRv6",
    "isGlobalUnicast",
    "isGreaterThan",
    "isIP",
    "isIPv4",
    "isIPv6",
    "isInteger",
    "isLessThan",
    "isLinkLocalMulticast",
    "isLinkLocalUnicast",
    "isLoopback",
    "isQuantity",
    "isSemver",
    "isSorted",
    "isURL",
    "isUnspecified",
    "join",
    "jsonpatch.escapeKey",
    "last",
    "lastIndexOf",
    "lists.range",
    "lowerAscii",
    "major",
    "masked",
    "matches",
    "math.abs",
    "math.bitAnd",
    "math.bitNot",
    "math.bitOr",
    "math.bitShiftLeft",
    "math.bitShiftRight",
    "math.bitXor",
    "math.ceil",
    "math.floor",
    "math.greatest",
    "math.isFinite",
    "math.isInf",
    "math.isNaN",
    "math.least",
    "math.round",
    "math.sign",
    "math.sqrt",
    "math.trunc",
    "max",
    "min",
    "minor",
    "optional.none",
    "optional.of",
    "optional.ofNonZeroValue",
    "or",
    "orValue",
    "patch",
    "prefixLength",
    "quantity",
    "replace",
    "reverse",
    "semver",
    "sets.contains",
    "sets.equivalent",
    "sets.intersects",
    "sign",
    "size",
    "slice",
    "sort",
    "split",
    "startsWith",
    "string",
    "strings.quote",
    "sub",
    "substring",
    "sum",
    "timestamp",
    "trim",
    "uint",
    "upperAscii",
    "url",
    "validate",
    "value",
];

const RESERVED: &[&str] = &[
    "true",
    "false",
    "null",
    "in",
    "as",
    "break",
    "const",
    "continue",
    "else",
    "for",
    "function",
    "if",
    "import",
    "let",
    "loop",
    "package",
    "namespace",
    "return",
    "var",
    "void",
    "while",
];

/// A successfully compiled rule.
#[derive(Debug)]
pub(crate) struct CompiledRule {
    pub expr: IdedExpr,
    pub message_expr: Option<IdedExpr>,
    /// What runs: `expr` and `message_expr` with their loops bounded in time ([`interruptible`]).
    run: IdedExpr,
    message_run: Option<IdedExpr>,
    pub uses_old_self: bool,
    pub normalized_field_path: Option<String>,
}

/// Compilation diagnostics of one rule.
#[derive(Debug, Clone, Default)]
pub(crate) struct RuleDiag {
    pub error: Option<String>,
    pub message_expression_error: Option<String>,
    pub uses_old_self: bool,
    pub estimated_cost: u64,
    pub message_expression_cost: u64,
}

/// kube's `cel.Escape` for property names: `None` if the name cannot be accessed from CEL.
pub(crate) fn escape(ident: &str) -> Option<String> {
    let first = ident.chars().next()?;
    if first.is_ascii_digit() {
        return None;
    }
    if RESERVED.contains(&ident) {
        return Some(format!("__{ident}__"));
    }
    let mut out = String::with_capacity(ident.len());
    let mut chars = ident.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '_' if chars.peek() == Some(&'_') => {
                chars.next();
                out.push_str("__underscores__");
            }
            '.' => out.push_str("__dot__"),
            '-' => out.push_str("__dash__"),
            '/' => out.push_str("__slash__"),
            c if c.is_ascii_alphanumeric() || c == '_' => out.push(c),
            _ => return None,
        }
    }
    Some(out)
}

// ---------------------------------------------------------------------------------------------
// Running on a big stack
// ---------------------------------------------------------------------------------------------

/// Runs `f`, which may take long (an expression over a big object), without holding up the
/// async workers: on a multi-threaded runtime's worker, inside `block_in_place` (tokio hands
/// the worker's other tasks to another thread meanwhile), so two slow evaluations on a
/// two-core machine cannot stop the server answering. Elsewhere as is. Every evaluation `f`
/// makes shares one [`TIME_LIMIT`].
pub fn off_the_workers<T>(f: impl FnOnce() -> T) -> T {
    match tokio::runtime::Handle::try_current() {
        Ok(h) if h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(|| bounded(f))
        }
        _ => bounded(f),
    }
}

/// Runs `f` on a thread with a large stack (off the async workers: [`off_the_workers`]). `Err`
/// if the thread could not be started or panicked.
pub(crate) fn on_big_stack<T: Send>(f: impl FnOnce() -> T + Send) -> Result<T, String> {
    off_the_workers(|| big_stack(|| bounded(f)))
}

fn big_stack<T: Send>(f: impl FnOnce() -> T + Send) -> Result<T, String> {
    std::thread::scope(|s| {
        let handle = std::thread::Builder::new()
            .name("cel".into())
            .stack_size(CEL_STACK_SIZE)
            .spawn_scoped(s, f)
            .map_err(|e| format!("failed to start CEL thread: {e}"))?;
        handle
            .join()
            .map_err(|_| "CEL evaluation panicked".to_string())
    })
}

/// The `cel` crate parser's recursion limit (the default of `Parser::max_recursion_depth`).
const MAX_PARSE_DEPTH: usize = 96;
/// cel-go's default `expressionSizeCodePointLimit`, which kube keeps.
const MAX_EXPRESSION_CODE_POINTS: usize = 100_000;
/// Deepest AST a rule may have: compiling and evaluating it recurse once per level (cel-go's
/// parser stops at 250 levels of its parse tree; this one only counts what recursion needs).
const MAX_AST_DEPTH: usize = 1_000;

fn parse(src: &str) -> Result<IdedExpr, String> {
    let size = src.chars().count();
    if size > MAX_EXPRESSION_CODE_POINTS {
        return Err(format!(
            "ERROR: <input>: expression code point size exceeds limit: size: {size}, limit {MAX_EXPRESSION_CODE_POINTS}"
        ));
    }
    // The ANTLR parser checks its recursion limit only on the finished parse tree, and building
    // that tree takes super-linear time in the nesting depth (seconds for 1,000 `[`, over ten for
    // 10,000). Brackets nested this deep exceed that limit anyway: reject them before parsing.
    if nested_deeper_than(src, MAX_PARSE_DEPTH) {
        return Err(format!(
            "ERROR: <input>: Recursion limit of {MAX_PARSE_DEPTH} exceeded"
        ));
    }
    let expr = catch_unwind(AssertUnwindSafe(|| {
        Parser::new()
            .enable_optional_syntax(true)
            .parse(src)
            .map_err(|e| parse_errors_text(&e, src))
    }))
    .unwrap_or_else(|_| Err("ERROR: <input>: parser panicked".to_string()))?;
    // The parser's limit counts nested expressions, not operator chains (`1+1+...+1` is one
    // expression 30,000 calls deep), and every later walk of the AST recurses.
    if ast_deeper_than(&expr, MAX_AST_DEPTH) {
        return Err(format!(
            "ERROR: <input>: expression nesting depth exceeds the limit of {MAX_AST_DEPTH}"
        ));
    }
    Ok(expr)
}

/// cel-go's default `errorReportingLimit`.
pub(crate) const MAX_REPORTED_PARSE_ERRORS: usize = 100;
/// Longest source line quoted under an error (with a caret under the position).
pub(crate) const MAX_SNIPPET_CHARS: usize = 1_000;

/// Where each expression of `src`'s parse starts, by id (`SourceInfo::offset_for`): the parser
/// hands its positions out only with errors, so `src` is parsed again with a stray `)` on a
/// line of its own after it, which the parser's recovery drops at the end: the tree before it,
/// and so every id, is that of `src`'s own parse. `None` if that did not work. Call on a big
/// stack, as [`Expression::compile`].
pub fn source_offsets(src: &str) -> Option<Arc<SourceInfo>> {
    let probe = format!("{src}\n)");
    let errors = catch_unwind(AssertUnwindSafe(|| {
        Parser::new()
            .enable_optional_syntax(true)
            .parse(&probe)
            .err()
    }))
    .ok()??;
    errors.errors.into_iter().find_map(|e| e.source_info)
}

/// cel-go's quote of the source `line` under an error at its 0-based character `col`
/// (`common.Error.ToDisplayString`): `\n | ` and the line, tabs shown as spaces, then `\n | `, a
/// dot under each character before the column and a caret under it, both widened (`．`, `＾`)
/// under a character of more than one UTF-8 byte. Nothing for a line longer than
/// [`MAX_SNIPPET_CHARS`].
pub(crate) fn error_snippet(line: &str, col: usize) -> String {
    if line.chars().count() > MAX_SNIPPET_CHARS {
        return String::new();
    }
    let text = line.replace('\t', " ");
    let mut out = String::with_capacity(2 * text.len() + 10);
    out.push_str("\n | ");
    out.push_str(&text);
    out.push_str("\n | ");
    let mut chars = text.chars();
    for _ in 0..col {
        match chars.next() {
            Some(c) if c.len_utf8() > 1 => out.push('\u{ff0e}'),
            Some(_) => out.push('.'),
            None => break,
        }
    }
    out.push(match chars.next() {
        Some(c) if c.len_utf8() > 1 => '\u{ff3e}',
        _ => '^',
    });
    out
}

/// The parse errors as cel-go prints them (`ERROR: <input>:1:5: msg`, the source line, a caret:
/// [`error_snippet`]), with the `cel` crate's messages and positions, but at most
/// [`MAX_REPORTED_PARSE_ERRORS`] of them and without quoting long lines: the crate's own
/// `Display` quotes the whole line under every error, which for a 100,000-character line of junk
/// is gigabytes, and panics on columns beyond 65,535.
fn parse_errors_text(e: &ParseErrors, src: &str) -> String {
    use std::fmt::Write as _;
    let lines: Vec<&str> = src.split('\n').collect();
    let mut out = String::new();
    for (i, err) in e.errors.iter().take(MAX_REPORTED_PARSE_ERRORS).enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let (line, col) = err.pos;
        let _ = write!(out, "ERROR: <input>:{line}:{col}: {}", err.msg);
        if let Some(text) = usize::try_from(line - 1).ok().and_then(|l| lines.get(l)) {
            let before = usize::try_from(col).unwrap_or(0).saturating_sub(1);
            out.push_str(&error_snippet(text, before));
        }
    }
    if e.errors.len() > MAX_REPORTED_PARSE_ERRORS {
        let _ = write!(
            out,
            "\nERROR: <input>: {} more errors",
            e.errors.len() - MAX_REPORTED_PARSE_ERRORS
        );
    }
    out
}

/// Whether the AST is deeper than `max` (walked with an explicit stack: the tree may be far
/// deeper than any recursive walk could go).
fn ast_deeper_than(root: &IdedExpr, max: usize) -> bool {
    let mut stack = vec![(root, 1usize)];
    while let Some((e, depth)) = stack.pop() {
        if depth > max {
            return true;
        }
        let d = depth + 1;
        match &e.expr {
            Expr::Call(c) => {
                stack.extend(c.target.as_deref().map(|t| (t, d)));
                stack.extend(c.args.iter().map(|a| (a, d)));
            }
            Expr::Comprehension(c) => {
                for x in [
                    &c.iter_range,
                    &c.accu_init,
                    &c.loop_cond,
                    &c.loop_step,
                    &c.result,
                ] {
                    stack.push((x, d));
                }
            }
            Expr::List(l) => stack.extend(l.elements.iter().map(|x| (x, d))),
            Expr::Select(s) => stack.push((&s.operand, d)),
            Expr::Map(_) | Expr::Struct(_) => {
                let entries = match &e.expr {
                    Expr::Map(m) => &m.entries,
                    Expr::Struct(s) => &s.entries,
                    _ => continue,
                };
                for en in entries {
                    match &en.expr {
                        EntryExpr::MapEntry(me) => {
                            stack.push((&me.key, d));
                            stack.push((&me.value, d));
                        }
                        EntryExpr::StructField(sf) => stack.push((&sf.value, d)),
                    }
                }
            }
            Expr::Ident(_) | Expr::Literal(_) | Expr::Unspecified => {}
        }
    }
    false
}

/// Whether `(`, `[` and `{` nest deeper than `max`, skipping string literals and `//` comments
/// as CEL's lexer does. A quote without its closing quote (the lexer's error, after which it goes
/// on lexing the rest) counts as an ordinary character, so brackets behind it still count.
fn nested_deeper_than(src: &str, max: usize) -> bool {
    let b = src.as_bytes();
    let mut depth = 0usize;
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'(' | b'[' | b'{' => {
                depth += 1;
                if depth > max {
                    return true;
                }
            }
            b')' | b']' | b'}' => depth = depth.saturating_sub(1),
            b'/' if b.get(i + 1) == Some(&b'/') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            q @ (b'\'' | b'"') => {
                if let Some(end) = string_end(b, i, q) {
                    i = end;
                    continue;
                }
            }
            _ => {}
        }
        i += 1;
    }
    false
}

/// The index after the string literal whose opening quote `q` is at `start`, if the lexer reads
/// one there: a triple-quoted string if it closes, else a single-quoted one (which ends at a line
/// break); escapes must be valid (`\n`, `\x41`, `\u00e9`, `\101`, ...) unless the string is raw.
fn string_end(b: &[u8], start: usize, q: u8) -> Option<usize> {
    let raw = start > 0 && matches!(b[start - 1], b'r' | b'R');
    if b[start..].starts_with(&[q, q, q]) {
        if let Some(end) = string_body_end(b, start + 3, q, raw, true) {
            return Some(end);
        }
    }
    string_body_end(b, start + 1, q, raw, false)
}

fn string_body_end(b: &[u8], mut i: usize, q: u8, raw: bool, triple: bool) -> Option<usize> {
    loop {
        match *b.get(i)? {
            b'\\' if !raw => i += escape_len(&b[i..])?,
            b'\n' | b'\r' if !triple => return None,
            c if c == q && (!triple || b[i..].starts_with(&[q, q, q])) => {
                return Some(i + if triple { 3 } else { 1 });
            }
            _ => i += 1,
        }
    }
}

/// The length of the escape sequence at the start of `s` (which starts with `\`), if valid.
fn escape_len(s: &[u8]) -> Option<usize> {
    let hex = |n: usize| s.len() >= 2 + n && s[2..2 + n].iter().all(u8::is_ascii_hexdigit);
    let oct = |i: usize| s.get(i).is_some_and(|c| (b'0'..=b'7').contains(c));
    match *s.get(1)? {
        b'a' | b'b' | b'f' | b'n' | b'r' | b't' | b'v' | b'"' | b'\'' | b'\\' | b'?' | b'`' => {
            Some(2)
        }
        b'0'..=b'3' if oct(2) && oct(3) => Some(4),
        b'x' | b'X' if hex(2) => Some(4),
        b'u' if hex(4) => Some(6),
        b'U' if hex(8) => Some(10),
        _ => None,
    }
}

// ---------------------------------------------------------------------------------------------
// Compilation
// ---------------------------------------------------------------------------------------------

/// Compiles every rule of the tree (on a big-stack thread) and sets `has_rules`.
pub(crate) fn compile_tree(root: &mut Node) -> Result<(), String> {
    on_big_stack(move || {
        compile_node(root, true);
    })
}

fn compile_node(node: &mut Node, resource_root: bool) -> bool {
    let mut rules = std::mem::take(&mut node.validations);
    for r in &mut rules {
        compile_rule(r, node, resource_root);
    }
    node.validations = rules;
    let mut has = !node.validations.is_empty();
    if let Some(items) = node.items.as_deref_mut() {
        let emb = items.embedded_resource;
        has |= compile_node(items, emb);
    }
    for (_, p) in node.properties.iter_mut() {
        let emb = p.embedded_resource;
        has |= compile_node(p, emb);
    }
    if let Some(AdditionalProperties::Schema(ap)) = node.additional_properties.as_mut() {
        let emb = ap.embedded_resource;
        has |= compile_node(ap, emb);
    }
    node.has_rules = has;
    has
}

fn compile_rule(rule: &mut Rule, node: &Node, resource_root: bool) {
    rule.diag = RuleDiag::default();
    rule.compiled = None;
    if rule.rule.trim().is_empty() {
        return;
    }
    let expr = match parse(&rule.rule) {
        Ok(e) => e,
        Err(e) => {
            rule.diag.error = Some(format!("compilation failed: {e}"));
            return;
        }
    };
    let optional_old_self = rule.optional_old_self == Some(true);
    let mut chk = Checker::new(node, resource_root, optional_old_self, &rule.rule);
    let info = chk.walk(&expr, &mut Vec::new());
    if let Some(e) = chk.errors.first() {
        rule.diag.error = Some(format!("compilation failed: {e}"));
        return;
    }
    if obviously_not(&expr, Kind::Bool) {
        rule.diag.error = Some("cel expression must evaluate to a bool".to_string());
        return;
    }
    rule.diag.uses_old_self = chk.uses_old_self;
    rule.diag.estimated_cost = info.cost;

    let mut message_expr = None;
    if !rule.message_expression.is_empty() {
        match parse(&rule.message_expression) {
            Err(e) => {
                rule.diag.message_expression_error =
                    Some(format!("messageExpression compilation failed: {e}"));
            }
            Ok(m) => {
                let mut mchk = Checker::new(
                    node,
                    resource_root,
                    optional_old_self,
                    &rule.message_expression,
                );
                let minfo = mchk.walk(&m, &mut Vec::new());
                if let Some(e) = mchk.errors.first() {
                    rule.diag.message_expression_error =
                        Some(format!("messageExpression compilation failed: {e}"));
                } else if obviously_not(&m, Kind::String) {
                    rule.diag.message_expression_error =
                        Some("messageExpression must evaluate to a string".to_string());
                } else {
                    rule.diag.message_expression_cost = minfo.cost;
                    message_expr = Some(m);
                }
            }
        }
    }
    let normalized_field_path = if rule.field_path.is_empty() {
        None
    } else {
        valid_field_path(&rule.field_path, node).ok()
    };
    rule.compiled = Some(Arc::new(CompiledRule {
        run: interruptible(&expr),
        message_run: message_expr.as_ref().map(interruptible),
        expr,
        message_expr,
        uses_old_self: chk.uses_old_self,
        normalized_field_path,
    }));
}

#[derive(PartialEq)]
enum Kind {
    Bool,
    String,
}

/// Whether `e` certainly does not produce a value of `kind` (a tiny stand-in for type checking).
fn obviously_not(e: &IdedExpr, kind: Kind) -> bool {
    const ARITH: &[&str] = &["_+_", "_-_", "_*_", "_/_", "_%_", "-_"];
    const LOGIC: &[&str] = &[
        "_==_", "_!=_", "_<_", "_<=_", "_>_", "_>=_", "_&&_", "_||_", "!_", "@in",
    ];
    match &e.expr {
        Expr::Literal(LiteralValue::Boolean(_)) => kind != Kind::Bool,
        Expr::Literal(LiteralValue::String(_)) => kind != Kind::String,
        Expr::Literal(_) | Expr::List(_) | Expr::Map(_) => true,
        Expr::Call(c) if c.target.is_none() && ARITH.contains(&c.func_name.as_str()) => {
            kind == Kind::Bool || c.func_name != "_+_"
        }
        Expr::Call(c) if c.target.is_none() && LOGIC.contains(&c.func_name.as_str()) => {
            kind == Kind::String
        }
        Expr::Comprehension(c) => match &c.accu_init.expr {
            Expr::List(_) => true,
            Expr::Literal(LiteralValue::Boolean(_)) => kind == Kind::String,
            _ => false,
        },
        _ => false,
    }
}

/// The (schema-derived) type of an expression, as far as the checker knows it.
#[derive(Clone, Copy)]
enum Ty<'a> {
    Unknown,
    /// A value described by a schema node; the flag marks resource roots / embedded resources,
    /// which implicitly have `apiVersion`, `kind` and a restricted `metadata`.
    Node(&'a Node, bool),
    /// `metadata` of a resource: only `name` and `generateName` are visible.
    Meta,
}

struct Info<'a> {
    ty: Ty<'a>,
    cost: u64,
    /// Upper bound of the number of elements, for collection-valued expressions.
    size: Option<u64>,
}

impl<'a> Info<'a> {
    fn unknown(cost: u64) -> Self {
        Info {
            ty: Ty::Unknown,
            cost,
            size: None,
        }
    }
}

/// kube's `MinSerializedSize` estimate of a value of this schema.
fn min_serialized_size(n: &Node) -> u64 {
    if n.int_or_string {
        return 1;
    }
    match n.ty.as_str() {
        "string" => 2 + n.min_length.unwrap_or(0).max(0) as u64,
        "boolean" => 4,
        "integer" | "number" => 1,
        "object" | "array" => 2,
        _ => 1,
    }
}

/// The maximum number of elements of a list or map node.
fn max_elements(n: &Node) -> u64 {
    match n.ty.as_str() {
        "array" => match n.max_items {
            Some(m) => m.max(0) as u64,
            None => {
                let item = n.items.as_deref().map_or(1, min_serialized_size);
                (MAX_REQUEST_SIZE_BYTES - 2) / (item + 1)
            }
        },
        "object" => match n.max_properties {
            Some(m) => m.max(0) as u64,
            None => {
                let v = n.additional_schema().map_or(1, min_serialized_size);
                (MAX_REQUEST_SIZE_BYTES - 2) / (v + 4)
            }
        },
        _ => MAX_REQUEST_SIZE_BYTES / 2,
    }
}

struct Checker<'a> {
    node: &'a Node,
    resource_root: bool,
    optional_old_self: bool,
    source: &'a str,
    errors: Vec<String>,
    uses_old_self: bool,
}

impl<'a> Checker<'a> {
    fn new(node: &'a Node, resource_root: bool, optional_old_self: bool, source: &'a str) -> Self {
        Checker {
            node,
            resource_root,
            optional_old_self,
            source,
            errors: Vec::new(),
            uses_old_self: false,
        }
    }

    /// cel-go's error rendering: location plus a source snippet with a caret.
    fn error_at(&mut self, needle: &str, msg: String) {
        let Some(offset) = self.source.find(needle) else {
            self.errors.push(format!("ERROR: <input>: {msg}"));
            return;
        };
        let before = &self.source[..offset];
        let line_no = before.matches('\n').count() + 1;
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        let col = self.source[line_start..offset].chars().count();
        let line = self.source[line_start..].split('\n').next().unwrap_or("");
        self.errors.push(format!(
            "ERROR: <input>:{line_no}:{}: {msg}{}",
            col + 1,
            error_snippet(line, col)
        ));
    }

    fn select(&mut self, t: Ty<'a>, f: &str) -> Ty<'a> {
        match t {
            Ty::Unknown => Ty::Unknown,
            Ty::Meta => {
                if f != "name" && f != "generateName" {
                    self.error_at(&format!(".{f}"), format!("undefined field '{f}'"));
                }
                Ty::Unknown
            }
            Ty::Node(n, resource) => {
                if n.int_or_string || n.ty != "object" {
                    return Ty::Unknown;
                }
                if resource {
                    match f {
                        "apiVersion" | "kind" => return Ty::Unknown,
                        "metadata" => return Ty::Meta,
                        _ => {}
                    }
                }
                if let Some((_, p)) = n
                    .properties
                    .iter()
                    .find(|(k, _)| escape(k).as_deref() == Some(f))
                {
                    return Ty::Node(p, p.embedded_resource);
                }
                match &n.additional_properties {
                    Some(AdditionalProperties::Schema(ap)) => {
                        return Ty::Node(ap, ap.embedded_resource)
                    }
                    Some(AdditionalProperties::Bool(true)) => return Ty::Unknown,
                    _ => {}
                }
                if (n.has_properties() || resource) && !n.preserves_unknown() {
                    self.error_at(&format!(".{f}"), format!("undefined field '{f}'"));
                }
                Ty::Unknown
            }
        }
    }

    fn lookup(
        scope: &[(String, Ty<'a>, Option<u64>)],
        name: &str,
    ) -> Option<(Ty<'a>, Option<u64>)> {
        scope
            .iter()
            .rev()
            .find(|(n, _, _)| n == name)
            .map(|(_, t, s)| (*t, *s))
    }

    fn size_of(t: Ty<'a>) -> Option<u64> {
        match t {
            Ty::Node(n, _) if !n.int_or_string && (n.ty == "array" || n.ty == "object") => {
                Some(max_elements(n))
            }
            _ => None,
        }
    }

    fn walk(&mut self, e: &IdedExpr, scope: &mut Vec<(String, Ty<'a>, Option<u64>)>) -> Info<'a> {
        match &e.expr {
            Expr::Unspecified | Expr::Literal(_) => Info::unknown(0),
            Expr::Ident(name) => {
                if name.starts_with('@') || name == "__result__" {
                    return Info::unknown(1);
                }
                if let Some((ty, size)) = Self::lookup(scope, name) {
                    return Info { ty, cost: 1, size };
                }
                let ty = match name.as_str() {
                    "self" => Ty::Node(self.node, self.resource_root),
                    "oldSelf" => {
                        self.uses_old_self = true;
                        if self.optional_old_self {
                            Ty::Unknown
                        } else {
                            Ty::Node(self.node, self.resource_root)
                        }
                    }
                    n if TYPE_NAMES.contains(&n) => Ty::Unknown,
                    n => {
                        self.error_at(
                            n,
                            format!("undeclared reference to '{n}' (in container '')"),
                        );
                        Ty::Unknown
                    }
                };
                Info {
                    ty,
                    cost: 1,
                    size: Self::size_of(ty),
                }
            }
            Expr::Select(s) => {
                let op = self.walk(&s.operand, scope);
                let ty = self.select(op.ty, &s.field);
                Info {
                    ty,
                    cost: op.cost.saturating_add(1),
                    size: Self::size_of(ty),
                }
            }
            Expr::Call(c) => {
                let mut cost: u64 = 1;
                let namespaced = matches!(
                    c.target.as_deref().map(|t| &t.expr),
                    Some(Expr::Ident(ns)) if NAMESPACES.contains(&ns.as_str())
                        && Self::lookup(scope, ns).is_none()
                );
                let mut target: Option<Info<'a>> = None;
                if let Some(t) = c.target.as_deref() {
                    if !namespaced {
                        let ti = self.walk(t, scope);
                        cost = cost.saturating_add(ti.cost);
                        target = Some(ti);
                    }
                }
                let fname = match c.target.as_deref().map(|t| &t.expr) {
                    Some(Expr::Ident(ns)) if namespaced => format!("{ns}.{}", c.func_name),
                    _ => c.func_name.clone(),
                };
                let operator = fname.starts_with(['_', '@', '!', '-']);
                if !operator && !KNOWN_FUNCTIONS.contains(&fname.as_str()) {
                    let needle = format!("{}(", c.func_name);
                    self.error_at(
                        &needle,
                        format!("undeclared reference to '{fname}' (in container '')"),
                    );
                }
                // Macros the parser does not expand (e.g. `optMap(v, expr)`) look like method
                // calls whose leading arguments are fresh identifiers: treat those as bound.
                let base = scope.len();
                if c.target.is_some() && !namespaced && c.args.len() >= 2 {
                    for a in &c.args[..c.args.len() - 1] {
                        match &a.expr {
                            Expr::Ident(n)
                                if Self::lookup(scope, n).is_none()
                                    && n != "self"
                                    && n != "oldSelf" =>
                            {
                                scope.push((n.clone(), Ty::Unknown, None));
                            }
                            _ => break,
                        }
                    }
                }
                let mut args = Vec::with_capacity(c.args.len());
                for a in &c.args {
                    let ai = self.walk(a, scope);
                    cost = cost.saturating_add(ai.cost);
                    args.push(ai);
                }
                scope.truncate(base);
                match c.func_name.as_str() {
                    // kube's library cost estimates: `split` returns as many items as its
                    // string has characters (at most its `maxLength`, else a request's size)
                    // unless a limit is given; the list functions as many as their list.
                    "split" if target.is_some() => {
                        let limit = match c.args.get(1).map(|a| &a.expr) {
                            Some(Expr::Literal(LiteralValue::Int(i))) => {
                                u64::try_from(*i.inner()).ok()
                            }
                            _ => None,
                        };
                        let chars = match target.as_ref().map(|t| t.ty) {
                            Some(Ty::Node(n, _)) if n.ty == "string" => n
                                .max_length
                                .and_then(|m| u64::try_from(m).ok())
                                .unwrap_or(MAX_REQUEST_SIZE_BYTES),
                            _ => MAX_REQUEST_SIZE_BYTES,
                        };
                        Info {
                            ty: Ty::Unknown,
                            cost,
                            size: Some(limit.unwrap_or(chars)),
                        }
                    }
                    "sort" | "distinct" | "reverse" | "slice" | "flatten" if target.is_some() => {
                        Info {
                            ty: Ty::Unknown,
                            cost,
                            size: target.as_ref().and_then(|t| t.size),
                        }
                    }
                    "_?._" if args.len() == 2 => {
                        if let Some(Expr::Literal(LiteralValue::String(f))) =
                            c.args.get(1).map(|a| &a.expr)
                        {
                            let _ = self.select(args[0].ty, f.inner());
                        }
                        Info::unknown(cost)
                    }
                    "_[_]" if args.len() == 2 => {
                        let ty = match args[0].ty {
                            Ty::Node(n, _) if n.ty == "array" => match n.items.as_deref() {
                                Some(i) => Ty::Node(i, i.embedded_resource),
                                None => Ty::Unknown,
                            },
                            Ty::Node(n, _) if n.ty == "object" => match n.additional_schema() {
                                Some(ap) => Ty::Node(ap, ap.embedded_resource),
                                None => Ty::Unknown,
                            },
                            _ => Ty::Unknown,
                        };
                        Info {
                            ty,
                            cost,
                            size: Self::size_of(ty),
                        }
                    }
                    "_+_" if args.len() == 2 => {
                        let size = match (args[0].size, args[1].size) {
                            (Some(a), Some(b)) => Some(a.saturating_add(b)),
                            _ => None,
                        };
                        Info {
                            ty: Ty::Unknown,
                            cost,
                            size,
                        }
                    }
                    _ => Info::unknown(cost),
                }
            }
            Expr::Comprehension(c) => {
                let range = self.walk(&c.iter_range, scope);
                let n = range.size.unwrap_or(MAX_REQUEST_SIZE_BYTES / 2);
                let elem = match range.ty {
                    Ty::Node(rn, _) if rn.ty == "array" => match rn.items.as_deref() {
                        Some(i) => Ty::Node(i, i.embedded_resource),
                        None => Ty::Unknown,
                    },
                    _ => Ty::Unknown,
                };
                let init = self.walk(&c.accu_init, scope);
                let base = scope.len();
                match &c.iter_var2 {
                    // two-variable comprehensions bind (index or key, value)
                    Some(v2) => {
                        scope.push((c.iter_var.clone(), Ty::Unknown, None));
                        scope.push((v2.clone(), elem, Self::size_of(elem)));
                    }
                    None => scope.push((c.iter_var.clone(), elem, Self::size_of(elem))),
                }
                scope.push((c.accu_var.clone(), Ty::Unknown, None));
                let cond = self.walk(&c.loop_cond, scope);
                let step = self.walk(&c.loop_step, scope);
                let result = self.walk(&c.result, scope);
                scope.truncate(base);
                let body = cond.cost.saturating_add(step.cost);
                Info {
                    ty: Ty::Unknown,
                    cost: range
                        .cost
                        .saturating_add(init.cost)
                        .saturating_add(n.saturating_mul(body))
                        .saturating_add(result.cost),
                    size: Some(n),
                }
            }
            Expr::List(l) => {
                let mut cost: u64 = 1;
                for x in &l.elements {
                    cost = cost.saturating_add(self.walk(x, scope).cost);
                }
                Info {
                    ty: Ty::Unknown,
                    cost,
                    size: Some(l.elements.len() as u64),
                }
            }
            Expr::Map(m) => {
                let mut cost: u64 = 1;
                for en in &m.entries {
                    match &en.expr {
                        EntryExpr::MapEntry(me) => {
                            cost = cost.saturating_add(self.walk(&me.key, scope).cost);
                            cost = cost.saturating_add(self.walk(&me.value, scope).cost);
                        }
                        EntryExpr::StructField(sf) => {
                            cost = cost.saturating_add(self.walk(&sf.value, scope).cost);
                        }
                    }
                }
                Info {
                    ty: Ty::Unknown,
                    cost,
                    size: Some(m.entries.len() as u64),
                }
            }
            Expr::Struct(s) => {
                let mut cost: u64 = 1;
                for en in &s.entries {
                    match &en.expr {
                        EntryExpr::MapEntry(me) => {
                            cost = cost.saturating_add(self.walk(&me.value, scope).cost);
                        }
                        EntryExpr::StructField(sf) => {
                            cost = cost.saturating_add(self.walk(&sf.value, scope).cost);
                        }
                    }
                }
                Info::unknown(cost)
            }
        }
    }
}

/// kube's `ValidFieldPath`: a JSON path of field and map accessors valid for the schema, returned
/// in `field.Path` string form.
pub(crate) fn valid_field_path(path: &str, node: &Node) -> Result<String, String> {
    let mut tokens: Vec<String> = Vec::new();
    let chars: Vec<char> = path.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '\'' {
            let mut j = i + 1;
            while j < chars.len() && !(chars[j] == '\'' && chars[j - 1] != '\\') {
                j += 1;
            }
            let end = (j + 1).min(chars.len());
            tokens.push(chars[i..end].iter().collect());
            i = end;
        } else if c == '.' || c == '[' || c == ']' {
            tokens.push(c.to_string());
            i += 1;
        } else {
            let mut j = i;
            while j < chars.len() && !matches!(chars[j], '.' | '[' | ']') {
                j += 1;
            }
            tokens.push(chars[i..j].iter().collect());
            i = j;
        }
    }
    let mut out = String::new();
    let mut schema = node;
    let mut it = tokens.into_iter();
    let step = |schema: &mut &Node, out: &mut String, name: &str| -> Result<(), String> {
        if schema.has_properties() {
            let p = schema
                .prop(name)
                .ok_or_else(|| "does not refer to a valid field".to_string())?;
            *out = field::child(out, name);
            *schema = p;
            Ok(())
        } else if let Some(ap) = &schema.additional_properties {
            *out = field::key(out, name);
            match ap {
                AdditionalProperties::Schema(s) => {
                    *schema = s;
                    Ok(())
                }
                AdditionalProperties::Bool(_) => Err("does not refer to a valid field".into()),
            }
        } else {
            Err("does not refer to a valid field".into())
        }
    };
    while let Some(tok) = it.next() {
        match tok.as_str() {
            "[" => {
                let t = it.next().ok_or("unexpected end of JSON path")?;
                if t.len() < 2 || !t.starts_with('\'') || !t.ends_with('\'') {
                    return Err(format!("expected single quoted string but got {t}"));
                }
                let unescaped = unescape_single_quote(&t[1..t.len() - 1])?;
                step(&mut schema, &mut out, &unescaped)?;
                let close = it.next().ok_or("unexpected end of JSON path")?;
                if close != "]" {
                    return Err(format!("expected ] but got {close}"));
                }
            }
            "." => {
                let t = it.next().ok_or("unexpected end of JSON path")?;
                step(&mut schema, &mut out, &t)?;
            }
            other => return Err(format!("expected [ or . but got: {other}")),
        }
    }
    Ok(out)
}

fn unescape_single_quote(s: &str) -> Result<String, String> {
    let mut out = String::new();
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('a') => out.push('\u{7}'),
            Some('b') => out.push('\u{8}'),
            Some('f') => out.push('\u{c}'),
            Some('n') => out.push('\n'),
            Some('r') => out.push('\r'),
            Some('t') => out.push('\t'),
            Some('v') => out.push('\u{b}'),
            Some('\'') => out.push('\''),
            Some('\\') => out.push('\\'),
            Some(o) => return Err(format!("invalid string literal: invalid escape char \\{o}")),
            None => out.push('\\'),
        }
    }
    Ok(out)
}

// ---------------------------------------------------------------------------------------------
// JSON -> CEL values
// ---------------------------------------------------------------------------------------------

fn key(s: &str) -> Key {
    Key::String(Arc::new(s.to_string()))
}

fn cel_map(m: HashMap<Key, CelValue>) -> CelValue {
    CelValue::Map(CelMap { map: Arc::new(m) })
}

fn schemaless(v: &Value) -> CelValue {
    match v {
        Value::Null => CelValue::Null,
        Value::Bool(b) => CelValue::Bool(*b),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                CelValue::Int(i)
            } else if let Some(u) = n.as_u64() {
                CelValue::UInt(u)
            } else {
                CelValue::Float(n.as_f64().unwrap_or(f64::NAN))
            }
        }
        Value::String(s) => CelValue::String(Arc::new(s.clone())),
        Value::Array(a) => CelValue::List(Arc::new(a.iter().map(schemaless).collect())),
        Value::Object(m) => cel_map(m.iter().map(|(k, v)| (key(k), schemaless(v))).collect()),
    }
}

fn restricted_metadata(v: &Value) -> CelValue {
    match v {
        Value::Object(m) => cel_map(
            m.iter()
                .filter(|(k, _)| k.as_str() == "name" || k.as_str() == "generateName")
                .map(|(k, v)| (key(k), schemaless(v)))
                .collect(),
        ),
        other => schemaless(other),
    }
}

fn string_value(s: &str, n: &Node) -> CelValue {
    let fallback = || CelValue::String(Arc::new(s.to_string()));
    match n.format.as_str() {
        "duration" => match format::parse_duration_loose(s) {
            Some(ns) => CelValue::Duration(chrono::Duration::nanoseconds(ns)),
            None => fallback(),
        },
        "date" => match format::parse_date(s).and_then(|d| d.and_hms_opt(0, 0, 0)) {
            Some(dt) => CelValue::Timestamp(dt.and_utc().fixed_offset()),
            None => fallback(),
        },
        "date-time" => match format::parse_date_time(s) {
            Some(t) => CelValue::Timestamp(t),
            None => fallback(),
        },
        "byte" => {
            use base64::Engine;
            let engines = [
                &base64::engine::general_purpose::STANDARD,
                &base64::engine::general_purpose::URL_SAFE,
            ];
            engines
                .iter()
                .find_map(|e| e.decode(s).ok())
                .map(|b| CelValue::Bytes(Arc::new(b)))
                .unwrap_or_else(fallback)
        }
        _ => fallback(),
    }
}

/// kube's `UnstructuredToVal`: maps JSON to CEL guided by the schema.
pub(crate) fn to_cel(v: &Value, n: Option<&Node>, resource: bool) -> CelValue {
    let Some(n) = n else {
        return schemaless(v);
    };
    if v.is_null() {
        return CelValue::Null;
    }
    if n.int_or_string {
        return schemaless(v);
    }
    match (n.ty.as_str(), v) {
        ("object", Value::Object(m)) => {
            if resource || n.embedded_resource || n.has_properties() {
                let meta_restricted = resource || n.embedded_resource;
                let mut out = HashMap::with_capacity(m.len());
                for (k, x) in m {
                    let Some(ek) = escape(k) else { continue };
                    let val = if meta_restricted && k == "metadata" {
                        restricted_metadata(x)
                    } else {
                        let p = n.prop(k);
                        to_cel(x, p, p.is_some_and(|p| p.embedded_resource))
                    };
                    out.insert(key(&ek), val);
                }
                cel_map(out)
            } else if let Some(ap) = n.additional_schema() {
                cel_map(
                    m.iter()
                        .map(|(k, x)| (key(k), to_cel(x, Some(ap), ap.embedded_resource)))
                        .collect(),
                )
            } else {
                schemaless(v)
            }
        }
        ("array", Value::Array(a)) => {
            let items = n.items.as_deref();
            let emb = items.is_some_and(|i| i.embedded_resource);
            CelValue::List(Arc::new(a.iter().map(|x| to_cel(x, items, emb)).collect()))
        }
        ("string", Value::String(s)) => string_value(s, n),
        ("number", Value::Number(x)) => CelValue::Float(x.as_f64().unwrap_or(f64::NAN)),
        ("integer", Value::Number(x)) => match x.as_i64() {
            Some(i) => CelValue::Int(i),
            None => match x.as_f64() {
                Some(f) if f.fract() == 0.0 && f.abs() < 9.2e18 => CelValue::Int(f as i64),
                _ => schemaless(v),
            },
        },
        _ => schemaless(v),
    }
}

// ---------------------------------------------------------------------------------------------
// Evaluation
// ---------------------------------------------------------------------------------------------

fn root_context() -> &'static Context<'static> {
    static CTX: OnceLock<Context<'static>> = OnceLock::new();
    CTX.get_or_init(|| {
        let mut ctx = Context::default().with_all();
        ctx.add_function("dyn", dyn_identity);
        ctx.add_function("@tick", tick);
        super::cel_authz::register(&mut ctx);
        super::cel_regex::register(&mut ctx);
        super::cel_charged::register(&mut ctx);
        ctx
    })
}

/// cel-go's `dyn(x)`: the identity (there is no static typing to opt out of here).
fn dyn_identity(This(v): This<CelValue>) -> Result<CelValue, ExecutionError> {
    Ok(v)
}

/// Largest list/map anywhere in `v` (used as the size of collections computed by a rule).
fn max_collection(v: &Value) -> u64 {
    match v {
        Value::Array(a) => a.iter().map(max_collection).fold(a.len() as u64, u64::max),
        Value::Object(m) => m
            .values()
            .map(max_collection)
            .fold(m.len() as u64, u64::max),
        _ => 0,
    }
}

struct RtEnv<'v> {
    this: &'v Value,
    old: Option<&'v Value>,
    max_coll: u64,
}

fn json_field<'v>(v: &'v Value, f: &str) -> Option<&'v Value> {
    let m = v.as_object()?;
    if let Some(x) = m.get(f) {
        return Some(x);
    }
    m.iter()
        .find(|(k, _)| escape(k).as_deref() == Some(f))
        .map(|(_, x)| x)
}

/// Resolves `self.a.b[0]`-style paths against the data.
fn resolve_path<'v>(e: &IdedExpr, env: &RtEnv<'v>) -> Option<&'v Value> {
    match &e.expr {
        Expr::Ident(n) if n == "self" => Some(env.this),
        Expr::Ident(n) if n == "oldSelf" => env.old,
        Expr::Select(s) => json_field(resolve_path(&s.operand, env)?, &s.field),
        Expr::Call(c) if c.func_name == "_[_]" && c.args.len() == 2 => {
            let base = resolve_path(&c.args[0], env)?;
            match &c.args[1].expr {
                Expr::Literal(LiteralValue::String(s)) => json_field(base, s.inner()),
                Expr::Literal(LiteralValue::Int(i)) => {
                    base.as_array()?.get(usize::try_from(*i.inner()).ok()?)
                }
                _ => None,
            }
        }
        _ => None,
    }
}

fn rt_size(e: &IdedExpr, env: &RtEnv) -> u64 {
    if let Some(v) = resolve_path(e, env) {
        return match v {
            Value::Array(a) => a.len() as u64,
            Value::Object(m) => m.len() as u64,
            _ => 0,
        };
    }
    match &e.expr {
        Expr::List(l) => l.elements.len() as u64,
        Expr::Map(m) => m.entries.len() as u64,
        Expr::Comprehension(c) => rt_size(&c.iter_range, env),
        Expr::Call(c) if c.func_name == "_+_" && c.args.len() == 2 => {
            rt_size(&c.args[0], env).saturating_add(rt_size(&c.args[1], env))
        }
        _ => env.max_coll,
    }
}

/// Runtime cost estimate (see the module docs).
fn rt_cost(e: &IdedExpr, env: &RtEnv) -> u64 {
    match &e.expr {
        Expr::Comprehension(c) => {
            let n = rt_size(&c.iter_range, env);
            let body = rt_cost(&c.loop_cond, env).saturating_add(rt_cost(&c.loop_step, env));
            rt_cost(&c.iter_range, env)
                .saturating_add(rt_cost(&c.accu_init, env))
                .saturating_add(n.saturating_mul(body))
                .saturating_add(rt_cost(&c.result, env))
        }
        Expr::Call(c) => {
            let mut cost: u64 = 1;
            if let Some(t) = &c.target {
                cost = cost.saturating_add(rt_cost(t, env));
                // kube's cost of an authorization check (at most two fit in one call's limit).
                if c.func_name == "check" {
                    cost = cost.saturating_add(super::cel_authz::CHECK_COST);
                }
            }
            for a in &c.args {
                cost = cost.saturating_add(rt_cost(a, env));
            }
            cost
        }
        Expr::Select(s) => rt_cost(&s.operand, env).saturating_add(1),
        Expr::List(l) => l
            .elements
            .iter()
            .fold(1u64, |acc, x| acc.saturating_add(rt_cost(x, env))),
        Expr::Map(m) => m.entries.iter().fold(1u64, |acc, en| match &en.expr {
            EntryExpr::MapEntry(me) => acc
                .saturating_add(rt_cost(&me.key, env))
                .saturating_add(rt_cost(&me.value, env)),
            EntryExpr::StructField(sf) => acc.saturating_add(rt_cost(&sf.value, env)),
        }),
        Expr::Struct(s) => s.entries.iter().fold(1u64, |acc, en| match &en.expr {
            EntryExpr::MapEntry(me) => acc.saturating_add(rt_cost(&me.value, env)),
            EntryExpr::StructField(sf) => acc.saturating_add(rt_cost(&sf.value, env)),
        }),
        Expr::Literal(_) | Expr::Unspecified => 0,
        Expr::Ident(_) => 1,
    }
}

/// Renders an interpreter error the way cel-go words it.
fn exec_error(e: &ExecutionError) -> (bool, String) {
    match e {
        ExecutionError::NoSuchOverload
        | ExecutionError::UnsupportedBinaryOperator(..)
        | ExecutionError::UnsupportedUnaryOperator(..)
        | ExecutionError::ValuesNotComparable(..)
        | ExecutionError::UnexpectedType { .. }
        | ExecutionError::NotSupportedAsMethod { .. }
        | ExecutionError::UnsupportedTargetType { .. }
        | ExecutionError::InvalidArgumentCount { .. } => (true, "no such overload".to_string()),
        ExecutionError::NoSuchKey(k) => (false, format!("no such key: {k}")),
        ExecutionError::DivisionByZero(_) => (false, "division by zero".to_string()),
        ExecutionError::RemainderByZero(_) => (false, "modulus by zero".to_string()),
        ExecutionError::Overflow(..) => (false, "integer overflow".to_string()),
        ExecutionError::IndexOutOfBounds(v) => {
            (false, format!("index out of bounds: {}", scalar_text(v)))
        }
        ExecutionError::FunctionError { message, .. } => (false, message.clone()),
        ExecutionError::UndeclaredReference(n) => (false, format!("no such attribute: {n}")),
        other => (false, other.to_string()),
    }
}

fn scalar_text(v: &CelValue) -> String {
    match v {
        CelValue::Int(i) => i.to_string(),
        CelValue::UInt(u) => u.to_string(),
        CelValue::Float(f) => field::go_format_float(*f),
        CelValue::String(s) => s.to_string(),
        other => format!("{other:?}"),
    }
}

/// Where rule evaluation stands within one `validate_cel` call.
pub(crate) struct Evaluation<'a> {
    pub budget: u64,
    pub out: &'a mut Vec<Violation>,
    /// kube ≥ 1.30 `CRDValidationRatcheting`: errors of rules that do not use `oldSelf` are dropped
    /// when the value is unchanged from the (correlated) old value.
    pub ratcheting: bool,
    max_coll: u64,
}

impl<'a> Evaluation<'a> {
    pub(crate) fn new(out: &'a mut Vec<Violation>, obj: &Value, old: Option<&Value>) -> Self {
        let max_coll = max_collection(obj)
            .max(old.map_or(0, max_collection))
            .max(1);
        Evaluation {
            budget: RUNTIME_COST_BUDGET,
            out,
            ratcheting: true,
            max_coll,
        }
    }
}

/// Validates `obj` (and its descendants) against the rules of `node`. Returns `false` once the
/// budget is exhausted (no further rules may run).
pub(crate) fn validate_node(
    ev: &mut Evaluation,
    node: &Node,
    path: &str,
    obj: &Value,
    old: Option<&Value>,
    resource: bool,
) -> bool {
    if !node.has_rules || obj.is_null() {
        return true;
    }
    if !node.validations.is_empty() && !validate_rules(ev, node, path, obj, old, resource) {
        return false;
    }
    match obj {
        Value::Array(a) => {
            if let Some(items) = node.items.as_deref() {
                let olds = correlate_list(node, old);
                for (i, x) in a.iter().enumerate() {
                    let o = olds
                        .as_ref()
                        .and_then(|m| m.get(&map_key(node, x)).copied());
                    if !validate_node(
                        ev,
                        items,
                        &field::index(path, i),
                        x,
                        o,
                        items.embedded_resource,
                    ) {
                        return false;
                    }
                }
            }
        }
        Value::Object(m) => {
            let old_map = old.and_then(Value::as_object);
            if let Some(ap) = node.additional_schema() {
                for (k, x) in m {
                    let o = old_map.and_then(|om| om.get(k));
                    if !validate_node(ev, ap, &field::key(path, k), x, o, ap.embedded_resource) {
                        return false;
                    }
                }
            }
            if node.has_properties() {
                for (k, x) in m {
                    if let Some(p) = node.prop(k) {
                        let o = old_map.and_then(|om| om.get(k));
                        if !validate_node(ev, p, &field::child(path, k), x, o, p.embedded_resource)
                        {
                            return false;
                        }
                    }
                }
            }
        }
        _ => {}
    }
    true
}

/// Key tuple of a `x-kubernetes-list-type: map` element.
pub(crate) fn map_key(node: &Node, x: &Value) -> String {
    let mut parts = Vec::with_capacity(node.list_map_keys.len());
    for k in &node.list_map_keys {
        parts.push(match x.get(k) {
            Some(v) => field::go_json(v),
            None => "<absent>".to_string(),
        });
    }
    parts.join("\u{0}")
}

/// Old elements of a map-list by key; other lists do not correlate.
pub(crate) fn correlate_list<'v>(
    node: &Node,
    old: Option<&'v Value>,
) -> Option<HashMap<String, &'v Value>> {
    if node.list_type.as_deref() != Some("map") || node.list_map_keys.is_empty() {
        return None;
    }
    let arr = old?.as_array()?;
    Some(arr.iter().map(|x| (map_key(node, x), x)).collect())
}

fn validate_rules(
    ev: &mut Evaluation,
    node: &Node,
    path: &str,
    obj: &Value,
    old: Option<&Value>,
    resource: bool,
) -> bool {
    let self_val = to_cel(obj, Some(node), resource);
    let old_val = old.map(|o| to_cel(o, Some(node), resource));
    let unchanged = ev.ratcheting && old.is_some_and(|o| o == obj);
    let ty = if node.int_or_string {
        ""
    } else {
        node.ty.as_str()
    };
    let env = RtEnv {
        this: obj,
        old,
        max_coll: ev.max_coll,
    };
    for rule in &node.validations {
        if let Some(err) = &rule.diag.error {
            ev.out.push(Violation::invalid(
                path,
                Bad::str(ty),
                &format!("rule compile error: {err}"),
            ));
            continue;
        }
        let Some(c) = rule.compiled.as_deref() else {
            continue;
        };
        let optional = rule.optional_old_self == Some(true);
        if c.uses_old_self && old.is_none() && !optional {
            continue;
        }
        let cost = rt_cost(&c.expr, &env);
        if cost > PER_CALL_LIMIT {
            ev.out.push(over_call_limit(path, ty, rule));
            return false;
        }
        if cost > ev.budget {
            ev.out.push(Violation::invalid(
                path,
                Bad::str(ty),
                "validation failed due to running out of cost budget, no further validation rules will be run",
            ));
            return false;
        }
        ev.budget -= cost;

        let old_binding = if optional {
            Some(CelValue::Opaque(Arc::new(match &old_val {
                Some(o) => OptionalValue::of(o.clone()),
                None => OptionalValue::none(),
            })))
        } else {
            old_val.clone()
        };
        let result = eval(&c.run, &self_val, old_binding.as_ref());
        let outcome = match result {
            Ok(CelValue::Bool(true)) => continue,
            Ok(CelValue::Bool(false)) => None,
            Ok(_) => Some(format!(
                "cel expression must evaluate to a bool evaluating rule: {}",
                rule.error_string()
            )),
            Err(EvalError::Exec(e)) => {
                let (overload, text) = exec_error(&e);
                // Out of time: as kube reports a rule over its cost limit mid-run.
                if text == INTERRUPTED {
                    ev.out.push(over_call_limit(path, ty, rule));
                    return false;
                }
                Some(if overload {
                    format!("'{text}': call arguments did not match a supported operator, function or macro signature for rule: {}", rule.error_string())
                } else {
                    format!("{text} evaluating rule: {}", rule.error_string())
                })
            }
            Err(EvalError::Panic) => {
                ev.out.push(Violation::internal(
                    path,
                    &format!(
                        "evaluation of validation rule panicked: {}",
                        rule.error_string()
                    ),
                ));
                continue;
            }
        };
        if let Some(detail) = outcome {
            ev.out.push(Violation::invalid(path, Bad::str(ty), &detail));
            continue;
        }
        // The rule evaluated to false.
        if unchanged && !c.uses_old_self {
            continue;
        }
        let fld = match &c.normalized_field_path {
            Some(p) if !p.is_empty() => field::child(path, p),
            _ => path.to_string(),
        };
        let mut detail = None;
        if let Some(m) = &c.message_expr {
            let mcost = rt_cost(m, &env);
            if mcost > PER_CALL_LIMIT {
                ev.out.push(Violation::invalid(
                    &fld,
                    Bad::str(ty),
                    &format!(
                        "no further validation rules will be run due to call cost exceeds limit for messageExpression: {}",
                        field::go_quote(&rule.message_expression)
                    ),
                ));
                return false;
            }
            if mcost > ev.budget {
                ev.out.push(Violation::invalid(
                    &fld,
                    Bad::str(ty),
                    "messageExpression evaluation failed due to running out of cost budget, no further validation rules will be run",
                ));
                return false;
            }
            ev.budget -= mcost;
            let run = c.message_run.as_ref().unwrap_or(m);
            if let Ok(CelValue::String(s)) = eval(run, &self_val, old_binding.as_ref()) {
                let t = s.trim();
                if !t.is_empty()
                    && t.len() <= MAX_EVALUATED_MESSAGE_EXPRESSION_SIZE_BYTES
                    && !t.contains('\n')
                {
                    detail = Some(t.to_string());
                }
            }
        }
        let detail = detail.unwrap_or_else(|| rule.message_or_default());
        let bad = Bad::str(ty);
        ev.out.push(match rule.reason.as_deref() {
            Some("FieldValueForbidden") => Violation::forbidden(&fld, &detail),
            Some("FieldValueRequired") => Violation::required(&fld, &detail),
            Some("FieldValueDuplicate") => Violation::duplicate(&fld, bad),
            _ => Violation::invalid(&fld, bad, &detail),
        });
    }
    true
}

enum EvalError {
    Exec(ExecutionError),
    Panic,
}

/// kube's violation for a rule over its per-call cost limit (estimated, or stopped mid-run): no
/// further rule runs.
fn over_call_limit(path: &str, ty: &str, rule: &Rule) -> Violation {
    Violation::invalid(
        path,
        Bad::str(ty),
        &format!(
            "'{INTERRUPTED}': no further validation rules will be run due to call cost exceeds limit for rule: {}",
            rule.error_string()
        ),
    )
}

fn eval(expr: &IdedExpr, this: &CelValue, old: Option<&CelValue>) -> Result<CelValue, EvalError> {
    catch_unwind(AssertUnwindSafe(|| {
        time_limited(|| {
            let mut ctx = root_context().new_inner_scope();
            ctx.add_variable_from_value("self", this.clone());
            if let Some(o) = old {
                ctx.add_variable_from_value("oldSelf", o.clone());
            }
            CelValue::resolve(expr, &ctx)
        })
        .map_err(EvalError::Exec)
    }))
    .unwrap_or(Err(EvalError::Panic))
}

// ---------------------------------------------------------------------------------------------
// A bound in time
// ---------------------------------------------------------------------------------------------

/// How much CPU time CEL may take for one object (all of a CRD's rules) or one expression,
/// whichever is met first. kube bounds evaluation by cost alone (cel-go counts it as it runs,
/// and is fast per unit); this interpreter copies values where cel-go shares them, so some
/// expressions within kube's cost limits run for minutes here: past this, an evaluation stops
/// as kube's does over its cost limit. The thread's CPU time, not the clock: a busy neighbour
/// does not make an honest evaluation fail.
pub const TIME_LIMIT: std::time::Duration = std::time::Duration::from_secs(5);

/// The CPU time this thread has used.
fn thread_cpu() -> std::time::Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime only writes the struct passed by pointer.
    let ok = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) } == 0;
    if !ok {
        return std::time::Duration::ZERO;
    }
    std::time::Duration::new(
        ts.tv_sec.max(0) as u64,
        ts.tv_nsec.clamp(0, 999_999_999) as u32,
    )
}

/// cel-go's error for an evaluation stopped over its cost limit.
pub const INTERRUPTED: &str = "operation cancelled: actual cost limit exceeded";

thread_local! {
    /// The thread CPU time at which this thread's CEL evaluations must stop, and whether one
    /// has.
    static DEADLINE: std::cell::Cell<Option<std::time::Duration>> = const { std::cell::Cell::new(None) };
    static EXPIRED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    static TICKS: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
    /// What the running expression has been charged by the functions that charge before they
    /// run (`cel_charged`).
    static CHARGED: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    /// What the thread held (`heap::held`) when the outermost bound began.
    static HELD_AT_START: std::cell::Cell<i64> = const { std::cell::Cell::new(0) };
}

/// The most memory one bound's evaluations may come to hold beyond what their thread held
/// when it began: past it they stop [`INTERRUPTED`]. A loop over a tenant's data can grow
/// memory by the object's size at each step (`self.items.map(x, self.big + self.big)`), which
/// kube's cost count stops early and turtles' estimate does not see. Generous against what
/// kube's per-call limit lets an expression build: its strings cost a tenth of their bytes
/// (10 MB at most), `lists.range` a million items.
pub const MEMORY_LIMIT: i64 = 64 << 20;

/// Whether the running evaluations hold more than [`MEMORY_LIMIT`]; if so they are stopped.
fn over_memory() -> bool {
    if DEADLINE.get().is_some()
        && crate::heap::held().wrapping_sub(HELD_AT_START.get()) > MEMORY_LIMIT
    {
        EXPIRED.set(true);
        return true;
    }
    false
}

/// Charges `cost` to the running expression before `func` does the work it costs; past kube's
/// per-call limit, `Err` (and every later charge of the expression too), and the expression
/// ends [`INTERRUPTED`] whatever absorbs the error.
pub(crate) fn charge(cost: u64, func: &str) -> Result<(), ExecutionError> {
    let total = CHARGED.get().saturating_add(cost);
    CHARGED.set(total);
    if total > PER_CALL_LIMIT || over_memory() {
        return Err(ExecutionError::function_error(func, INTERRUPTED));
    }
    Ok(())
}

/// Runs one evaluation `f` bounded to [`TIME_LIMIT`] from now, or to the bound an enclosing call
/// set if that comes first. An evaluation past it is [`INTERRUPTED`], however an `||` or `&&`
/// around the loop that noticed would have absorbed the error.
fn time_limited<T>(f: impl FnOnce() -> Result<T, ExecutionError>) -> Result<T, ExecutionError> {
    bounded(|| {
        // Each expression's charges are its own (an enclosing one's resume after it).
        let outer = CHARGED.replace(0);
        let out = f();
        let over = CHARGED.replace(outer) > PER_CALL_LIMIT;
        if EXPIRED.get() || over {
            return Err(ExecutionError::function_error("@tick", INTERRUPTED));
        }
        out
    })
}

/// Runs `f` with this thread's CEL evaluations bounded to [`TIME_LIMIT`] from now (or to an
/// enclosing bound, if that comes first): every evaluation `f` makes shares it.
fn bounded<T>(f: impl FnOnce() -> T) -> T {
    bounded_within(TIME_LIMIT, f)
}

fn bounded_within<T>(limit: std::time::Duration, f: impl FnOnce() -> T) -> T {
    struct Restore(Option<std::time::Duration>);
    impl Drop for Restore {
        fn drop(&mut self) {
            DEADLINE.set(self.0);
            if self.0.is_none() {
                EXPIRED.set(false);
            }
        }
    }
    let outer = DEADLINE.get();
    let mine = thread_cpu() + limit;
    if outer.is_none() {
        HELD_AT_START.set(crate::heap::held());
    }
    DEADLINE.set(Some(outer.map_or(mine, |o| o.min(mine))));
    let _restore = Restore(outer);
    f()
}

/// `@tick(cond)`: a comprehension's loop condition, passed through; every iteration it checks
/// what the evaluations hold ([`MEMORY_LIMIT`]), every few the thread's deadline, and past
/// either it fails (and keeps failing) the evaluation.
fn tick(This(cond): This<CelValue>) -> Result<CelValue, ExecutionError> {
    if EXPIRED.get() || over_memory() {
        return Err(ExecutionError::function_error("@tick", INTERRUPTED));
    }
    let n = TICKS.get().wrapping_add(1);
    TICKS.set(n);
    if n.is_multiple_of(64) {
        if let Some(d) = DEADLINE.get() {
            if thread_cpu() > d {
                EXPIRED.set(true);
                return Err(ExecutionError::function_error("@tick", INTERRUPTED));
            }
        }
    }
    Ok(cond)
}

/// Whether `e` has a comprehension anywhere.
fn has_loops(e: &IdedExpr) -> bool {
    let mut stack = vec![e];
    while let Some(n) = stack.pop() {
        if matches!(n.expr, Expr::Comprehension(_)) {
            return true;
        }
        push_children(n, &mut stack);
    }
    false
}

/// `e` with every comprehension's loop condition wrapped in `@tick`: what runs (the static
/// checks and cost estimates read the expression as written).
fn interruptible(e: &IdedExpr) -> IdedExpr {
    let mut out = e.clone();
    let mut stack: Vec<&mut IdedExpr> = vec![&mut out];
    while let Some(n) = stack.pop() {
        if let Expr::Comprehension(c) = &mut n.expr {
            let cond = std::mem::take(&mut c.loop_cond);
            c.loop_cond = IdedExpr {
                id: cond.id,
                expr: Expr::Call(kube_cel::cel::common::ast::CallExpr {
                    func_name: "@tick".into(),
                    target: None,
                    args: vec![cond],
                }),
            };
        }
        push_children_mut(n, &mut stack);
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Expressions outside schemas (admission policies)
// ---------------------------------------------------------------------------------------------

/// A parsed CEL expression evaluated against named variables (admission policies' `object`,
/// `oldObject`, `request`, `params`, ...), with the same parser limits as schema rules.
#[derive(Debug)]
pub struct Expression {
    expr: IdedExpr,
    /// What runs: `expr` with its loops bounded in time ([`interruptible`]).
    run: IdedExpr,
    shallow: bool,
    /// Whether it has a comprehension (`all`, `map`, ...): only such an expression can take
    /// long over a big object, and is worth moving off the async workers.
    loops: bool,
    /// Every identifier the expression names (variables, comprehension variables): only those
    /// of the variables passed to [`Expression::eval`] are bound (each binding converts its
    /// whole value into the interpreter's own representation).
    idents: Vec<String>,
    /// The same expression with each field path from a variable (`object.metadata.labels.app`)
    /// read by the host before the interpreter runs (see [`Expression::eval_lazy`]).
    paths: Option<Paths>,
}

/// An expression whose field paths from variables are bound as variables of their own.
#[derive(Debug)]
struct Paths {
    /// Already [`interruptible`].
    expr: IdedExpr,
    idents: Vec<String>,
    /// `@p<i>` stands for variable `.0`'s field path `.1`.
    paths: Vec<(String, Vec<String>)>,
}

/// The variables whose field paths [`Expression::eval_lazy`] reads itself.
const PATH_ROOTS: &[&str] = &[
    "object",
    "oldObject",
    "params",
    "namespaceObject",
    "request",
];

/// A variable given as JSON, converted for the interpreter only if it is used whole.
pub struct LazyVar<'a> {
    json: Option<&'a Value>,
    cel: std::cell::OnceCell<CelValue>,
}

impl<'a> LazyVar<'a> {
    pub fn new(json: Option<&'a Value>) -> Self {
        Self {
            json,
            cel: std::cell::OnceCell::new(),
        }
    }
}

impl LazyVar<'_> {
    pub fn var(&self) -> Var<'_> {
        Var::Json(self.json, &self.cel)
    }
}

/// One variable for [`Expression::eval_lazy`]: JSON (converted whole into the cell on first
/// need), or a value already converted.
pub enum Var<'a> {
    Json(Option<&'a Value>, &'a std::cell::OnceCell<CelValue>),
    Cel(&'a CelValue),
}

impl Var<'_> {
    fn whole(&self) -> CelValue {
        match self {
            Var::Json(json, cel) => cel
                .get_or_init(|| json.map_or(CelValue::Null, json_to_cel))
                .clone(),
            Var::Cel(c) => (*c).clone(),
        }
    }

    /// The value at field path `fields`, if every step is a map that has the field.
    fn at(&self, fields: &[String]) -> Option<CelValue> {
        match self {
            Var::Json(json, _) => {
                let mut v = (*json)?;
                for f in fields {
                    v = v.as_object()?.get(f.as_str())?;
                }
                Some(json_to_cel(v))
            }
            Var::Cel(c) => {
                let mut v: &CelValue = c;
                for f in fields {
                    let CelValue::Map(m) = v else { return None };
                    v = m.map.get(&Key::String(Arc::new(f.clone())))?;
                }
                Some(v.clone())
            }
        }
    }
}

/// Replace each longest field selection from a [`PATH_ROOTS`] variable by a variable `@p<i>`;
/// `None` if there is none, or a comprehension variable shadows a root.
fn path_variables(expr: &IdedExpr) -> Option<Paths> {
    let mut shadowed = false;
    let mut stack = vec![expr];
    while let Some(e) = stack.pop() {
        if let Expr::Comprehension(c) = &e.expr {
            shadowed |= [Some(&c.iter_var), c.iter_var2.as_ref(), Some(&c.accu_var)]
                .into_iter()
                .flatten()
                .any(|v| PATH_ROOTS.contains(&v.as_str()));
        }
        push_children(e, &mut stack);
    }
    if shadowed {
        return None;
    }
    let mut out = expr.clone();
    let mut paths: Vec<(String, Vec<String>)> = Vec::new();
    let mut stack: Vec<&mut IdedExpr> = vec![&mut out];
    while let Some(e) = stack.pop() {
        if let Some((root, fields)) = select_path(e) {
            let i = match paths.iter().position(|(r, f)| *r == root && *f == fields) {
                Some(i) => i,
                None => {
                    paths.push((root, fields));
                    paths.len() - 1
                }
            };
            e.expr = Expr::Ident(format!("@p{i}"));
            continue;
        }
        push_children_mut(e, &mut stack);
    }
    if paths.is_empty() {
        return None;
    }
    let idents = identifiers(&out);
    Some(Paths {
        expr: out,
        idents,
        paths,
    })
}

/// `root.f1.f2...` (plain selections down to a root variable): the root and the fields.
fn select_path(e: &IdedExpr) -> Option<(String, Vec<String>)> {
    let mut fields = Vec::new();
    let mut cur = e;
    loop {
        match &cur.expr {
            Expr::Select(s) if !s.test => {
                fields.push(s.field.clone());
                cur = &s.operand;
            }
            Expr::Ident(name) if !fields.is_empty() && PATH_ROOTS.contains(&name.as_str()) => {
                fields.reverse();
                return Some((name.clone(), fields));
            }
            _ => return None,
        }
    }
}

/// [`push_children`] for a walk that changes the AST.
fn push_children_mut<'a>(e: &'a mut IdedExpr, stack: &mut Vec<&'a mut IdedExpr>) {
    match &mut e.expr {
        Expr::Call(c) => {
            stack.extend(c.target.as_deref_mut());
            stack.extend(c.args.iter_mut());
        }
        Expr::Select(s) => stack.push(&mut s.operand),
        Expr::List(l) => stack.extend(l.elements.iter_mut()),
        Expr::Map(m) => {
            for en in &mut m.entries {
                if let EntryExpr::MapEntry(me) = &mut en.expr {
                    stack.push(&mut me.key);
                    stack.push(&mut me.value);
                }
            }
        }
        Expr::Struct(st) => {
            for en in &mut st.entries {
                match &mut en.expr {
                    EntryExpr::MapEntry(me) => {
                        stack.push(&mut me.key);
                        stack.push(&mut me.value);
                    }
                    EntryExpr::StructField(f) => stack.push(&mut f.value),
                }
            }
        }
        Expr::Comprehension(c) => {
            let c = &mut **c;
            stack.extend([
                &mut c.iter_range,
                &mut c.accu_init,
                &mut c.loop_cond,
                &mut c.loop_step,
                &mut c.result,
            ]);
        }
        _ => {}
    }
}

/// A CEL value: the input and output of [`Expression::eval`].
pub type CelData = CelValue;

impl Expression {
    /// Parse `src` (kube's size and nesting limits; unknown functions refused). Call on a big
    /// stack ([`run_on_big_stack`]): the parser recurses.
    pub fn compile(src: &str) -> Result<Self, String> {
        Self::compile_with(src, false)
    }

    /// Like [`Expression::compile`], with kube's mutation types (MutatingAdmissionPolicy):
    /// object literals `Object{...}`, `Object.<field path>{...}` and `JSONPatch{...}` evaluate
    /// to maps with their fields as string keys.
    pub fn compile_mutation(src: &str) -> Result<Self, String> {
        Self::compile_with(src, true)
    }

    fn compile_with(src: &str, mutation: bool) -> Result<Self, String> {
        let mut expr = parse(src)?;
        literal_structs(&mut expr, mutation)?;
        request_resource_variable(&mut expr);
        if let Some(f) = unknown_function(&expr) {
            return Err(format!(
                "ERROR: <input>: undeclared reference to '{f}' (in container '')"
            ));
        }
        let shallow = !ast_deeper_than(&expr, SHALLOW_AST_DEPTH);
        let idents = identifiers(&expr);
        let run = interruptible(&expr);
        let paths = path_variables(&run);
        let loops = has_loops(&expr);
        Ok(Self {
            expr,
            run,
            shallow,
            loops,
            idents,
            paths,
        })
    }

    /// The parsed expression (struct literals already rewritten).
    pub fn ast(&self) -> &IdedExpr {
        &self.expr
    }

    /// Whether the expression names the variable `name` (so evaluating it needs `name` bound).
    pub fn references(&self, name: &str) -> bool {
        self.idents.iter().any(|i| i == name)
    }

    /// Whether the expression is shallow enough to evaluate on an ordinary thread's stack
    /// (an async worker's), without [`run_on_big_stack`].
    pub fn shallow(&self) -> bool {
        self.shallow
    }

    /// Whether the expression has a comprehension (only then can it take long).
    pub fn loops(&self) -> bool {
        self.loops
    }

    /// The estimated cost of one evaluation when the largest collection in the input has
    /// `max_collection` elements (see the module docs).
    pub fn cost(&self, max_collection: u64) -> u64 {
        let env = RtEnv {
            this: &Value::Null,
            old: None,
            max_coll: max_collection,
        };
        rt_cost(&self.expr, &env)
    }

    /// Like [`Expression::eval`], with variables that may be given as JSON. Each field path from
    /// `object`, `oldObject`, `params`, `namespaceObject` or `request` is read by the host and
    /// only what it selects is converted for the interpreter (which would convert, and copy at
    /// each selection, the whole object); a variable is converted whole only if the expression
    /// uses it otherwise. If a path does not lead anywhere (a missing field, a selection from
    /// something that is not a map), the expression runs as written, so errors and
    /// short-circuits are the interpreter's own.
    pub fn eval_lazy(&self, vars: &[(&str, Var<'_>)]) -> Result<CelValue, String> {
        let var = |name: &str| vars.iter().find(|(n, _)| *n == name).map(|(_, v)| v);
        if let Some(p) = &self.paths {
            let values: Option<Vec<CelValue>> = p
                .paths
                .iter()
                .map(|(root, fields)| var(root)?.at(fields))
                .collect();
            if let Some(values) = values {
                return catch_unwind(AssertUnwindSafe(|| {
                    time_limited(|| {
                        let mut ctx = root_context().new_inner_scope();
                        for (i, v) in values.into_iter().enumerate() {
                            ctx.add_variable_from_value(format!("@p{i}"), v);
                        }
                        for (name, v) in
                            vars.iter().filter(|(n, _)| p.idents.iter().any(|i| i == n))
                        {
                            ctx.add_variable_from_value(*name, v.whole());
                        }
                        CelValue::resolve(&p.expr, &ctx)
                    })
                    .map_err(|e| exec_error(&e).1)
                }))
                .unwrap_or_else(|_| Err("internal error: CEL evaluation panicked".to_string()));
            }
        }
        catch_unwind(AssertUnwindSafe(|| {
            time_limited(|| {
                let mut ctx = root_context().new_inner_scope();
                for (name, v) in vars.iter().filter(|(n, _)| self.references(n)) {
                    ctx.add_variable_from_value(*name, v.whole());
                }
                CelValue::resolve(&self.run, &ctx)
            })
            .map_err(|e| exec_error(&e).1)
        }))
        .unwrap_or_else(|_| Err("internal error: CEL evaluation panicked".to_string()))
    }

    /// Evaluate with `vars` bound; errors worded as cel-go words them. Call on a big stack.
    pub fn eval(&self, vars: &[(&str, &CelValue)]) -> Result<CelValue, String> {
        catch_unwind(AssertUnwindSafe(|| {
            time_limited(|| {
                let mut ctx = root_context().new_inner_scope();
                for (name, v) in vars.iter().filter(|(n, _)| self.references(n)) {
                    ctx.add_variable_from_value(*name, (*v).clone());
                }
                CelValue::resolve(&self.run, &ctx)
            })
            .map_err(|e| exec_error(&e).1)
        }))
        .unwrap_or_else(|_| Err("internal error: CEL evaluation panicked".to_string()))
    }
}

/// Deepest AST evaluated on the caller's stack: the interpreter recurses once per level (a few
/// KiB each in debug builds), far from the 2 MiB of a tokio worker.
const SHALLOW_AST_DEPTH: usize = 24;

/// The JSONPatch type's fields (kube's `mutation/unstructured` `JSONPatchType`).
const JSON_PATCH_FIELDS: &[&str] = &["op", "path", "from", "value"];

/// Rewrites struct literals as map literals (the interpreter has no struct values): with
/// `mutation`, kube's `Object`, `Object.<path>` and `JSONPatch` types, whose fields become
/// string keys; without, every struct literal is an undeclared type. As kube's
/// `CheckTypeNamesMatchFieldPathNames` does, an `Object` literal nested directly in another's
/// field (or in a list or map there) must be named by that field's path.
fn literal_structs(root: &mut IdedExpr, mutation: bool) -> Result<(), String> {
    let mut stack: Vec<(&mut IdedExpr, Option<String>)> = vec![(root, None)];
    while let Some((e, expected)) = stack.pop() {
        if let Expr::Struct(st) = &mut e.expr {
            let name = std::mem::take(&mut st.type_name);
            let object = name == "Object" || name.starts_with("Object.");
            if !mutation || !(object || name == "JSONPatch") {
                return Err(format!(
                    "ERROR: <input>: undeclared reference to '{name}' (in container '')"
                ));
            }
            if let Some(want) = expected.filter(|_| object) {
                if name != want {
                    return Err(format!(
                        "type mismatch: unexpected type name \"{name}\", expected \"{want}\", which matches field name path from root Object type"
                    ));
                }
            }
            let mut entries = Vec::with_capacity(st.entries.len());
            for en in std::mem::take(&mut st.entries) {
                let EntryExpr::StructField(f) = en.expr else {
                    return Err(format!("ERROR: <input>: invalid entry in '{name}'"));
                };
                if !object && !JSON_PATCH_FIELDS.contains(&f.field.as_str()) {
                    return Err(format!(
                        "ERROR: <input>: undefined field '{}' in type '{name}'",
                        f.field
                    ));
                }
                let key = IdedExpr {
                    id: en.id,
                    expr: Expr::Literal(LiteralValue::String(f.field.clone().into())),
                };
                entries.push((
                    en.id,
                    key,
                    f.value,
                    f.optional,
                    object.then(|| format!("{name}.{}", f.field)),
                ));
            }
            let mut map = kube_cel::cel::common::ast::MapExpr {
                entries: Vec::with_capacity(entries.len()),
            };
            let mut wants = Vec::with_capacity(entries.len());
            for (id, key, value, optional, want) in entries {
                map.entries.push(kube_cel::cel::common::ast::IdedEntryExpr {
                    id,
                    expr: EntryExpr::MapEntry(kube_cel::cel::common::ast::MapEntryExpr {
                        key,
                        value,
                        optional,
                    }),
                });
                wants.push(want);
            }
            e.expr = Expr::Map(map);
            let Expr::Map(m) = &mut e.expr else {
                continue;
            };
            for (en, want) in m.entries.iter_mut().zip(wants) {
                if let EntryExpr::MapEntry(me) = &mut en.expr {
                    stack.push((&mut me.value, want));
                }
            }
            continue;
        }
        match &mut e.expr {
            Expr::Call(c) => {
                if let Some(t) = c.target.as_deref_mut() {
                    stack.push((t, None));
                }
                stack.extend(c.args.iter_mut().map(|a| (a, None)));
            }
            Expr::Select(s) => stack.push((&mut *s.operand, None)),
            // List items and map values keep the type their container's field expects.
            Expr::List(l) => {
                stack.extend(l.elements.iter_mut().map(|x| (x, expected.clone())));
            }
            Expr::Map(m) => {
                for en in &mut m.entries {
                    if let EntryExpr::MapEntry(me) = &mut en.expr {
                        stack.push((&mut me.key, None));
                        stack.push((&mut me.value, expected.clone()));
                    }
                }
            }
            Expr::Comprehension(c) => {
                let c = &mut **c;
                stack.extend([
                    (&mut c.iter_range, None),
                    (&mut c.accu_init, None),
                    (&mut c.loop_cond, None),
                    (&mut c.loop_step, None),
                    (&mut c.result, None),
                ]);
            }
            _ => {}
        }
    }
    Ok(())
}

/// The first called function the interpreter does not know, if any.
fn unknown_function(root: &IdedExpr) -> Option<String> {
    let mut stack = vec![root];
    while let Some(e) = stack.pop() {
        if let Expr::Call(c) = &e.expr {
            let operator = c.func_name.starts_with('_')
                || c.func_name.starts_with('@')
                || c.func_name == "!_"
                || c.func_name == "-_";
            let namespaced = match c.target.as_deref().map(|t| &t.expr) {
                Some(Expr::Ident(ns)) if NAMESPACES.contains(&ns.as_str()) => {
                    Some(format!("{ns}.{}", c.func_name))
                }
                _ => None,
            };
            let known = operator
                || KNOWN_FUNCTIONS.contains(&c.func_name.as_str())
                || (c.target.is_some()
                    && super::cel_authz::FUNCTIONS.contains(&c.func_name.as_str()))
                || namespaced
                    .as_deref()
                    .is_some_and(|n| KNOWN_FUNCTIONS.contains(&n));
            if !known {
                return Some(namespaced.unwrap_or_else(|| c.func_name.clone()));
            }
        }
        push_children(e, &mut stack);
    }
    None
}

/// `authorizer.requestResource` as one variable ([`super::cel_authz::REQUEST_RESOURCE`]): the
/// interpreter selects fields only from maps, and `authorizer` is not one. (A comprehension
/// variable named `authorizer` would shadow it; kube's type checker refuses that name there.)
fn request_resource_variable(root: &mut IdedExpr) {
    let mut stack = vec![root];
    while let Some(e) = stack.pop() {
        let hit = matches!(&e.expr, Expr::Select(s) if !s.test
            && s.field == "requestResource"
            && matches!(&s.operand.expr, Expr::Ident(n) if n == "authorizer"));
        if hit {
            e.expr = Expr::Ident(super::cel_authz::REQUEST_RESOURCE.to_owned());
            continue;
        }
        push_children_mut(e, &mut stack);
    }
}

/// The identifiers `root` names, each once.
fn identifiers(root: &IdedExpr) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut stack = vec![root];
    while let Some(e) = stack.pop() {
        if let Expr::Ident(name) = &e.expr {
            if !out.contains(name) {
                out.push(name.clone());
            }
        }
        push_children(e, &mut stack);
    }
    out
}

/// Push the direct subexpressions of `e` (for the walks over an AST without recursion).
fn push_children<'a>(e: &'a IdedExpr, stack: &mut Vec<&'a IdedExpr>) {
    match &e.expr {
        Expr::Call(c) => {
            stack.extend(c.target.as_deref());
            stack.extend(c.args.iter());
        }
        Expr::Select(s) => stack.push(&s.operand),
        Expr::List(l) => stack.extend(l.elements.iter()),
        Expr::Map(m) => push_entries(&m.entries, stack),
        Expr::Struct(st) => push_entries(&st.entries, stack),
        Expr::Comprehension(c) => {
            stack.extend([
                &c.iter_range,
                &c.accu_init,
                &c.loop_cond,
                &c.loop_step,
                &c.result,
            ]);
        }
        _ => {}
    }
}

fn push_entries<'a>(
    entries: &'a [kube_cel::cel::common::ast::IdedEntryExpr],
    stack: &mut Vec<&'a IdedExpr>,
) {
    for en in entries {
        match &en.expr {
            EntryExpr::MapEntry(me) => {
                stack.push(&me.key);
                stack.push(&me.value);
            }
            EntryExpr::StructField(sf) => stack.push(&sf.value),
        }
    }
}

/// A JSON value as CEL sees an object without a schema.
pub fn json_to_cel(v: &Value) -> CelValue {
    schemaless(v)
}

/// The largest list or map anywhere in `v` (the size used for comprehensions' cost).
pub fn largest_collection(v: &Value) -> u64 {
    max_collection(v)
}

/// The name cel-go gives the type of `v` (`int`, `map`, `google.protobuf.Timestamp`, ...).
pub fn type_name(v: &CelValue) -> &'static str {
    match v {
        CelValue::List(_) => "list",
        CelValue::Map(_) => "map",
        CelValue::Function(..) => "function",
        CelValue::Int(_) => "int",
        CelValue::UInt(_) => "uint",
        CelValue::Float(_) => "double",
        CelValue::String(_) => "string",
        CelValue::Bytes(_) => "bytes",
        CelValue::Bool(_) => "bool",
        CelValue::Duration(_) => "google.protobuf.Duration",
        CelValue::Timestamp(_) => "google.protobuf.Timestamp",
        CelValue::Opaque(_) => "opaque",
        CelValue::Null => "null_type",
    }
}

/// A CEL string result, if it is one.
pub fn as_string(v: &CelValue) -> Option<&str> {
    match v {
        CelValue::String(s) => Some(s.as_str()),
        _ => None,
    }
}

/// A CEL result as JSON (maps with string keys, lists, scalars); `None` for what JSON cannot hold.
pub fn cel_to_json(v: &CelValue, depth: usize) -> Option<Value> {
    if depth > crate::model::limits::MAX_DEPTH {
        return None;
    }
    Some(match v {
        CelValue::Null => Value::Null,
        CelValue::Bool(b) => Value::Bool(*b),
        CelValue::Int(i) => Value::from(*i),
        CelValue::UInt(u) => Value::from(*u),
        CelValue::Float(f) => serde_json::Number::from_f64(*f).map(Value::Number)?,
        CelValue::String(s) => Value::String(s.to_string()),
        CelValue::List(l) => Value::Array(
            l.iter()
                .map(|x| cel_to_json(x, depth + 1))
                .collect::<Option<Vec<_>>>()?,
        ),
        CelValue::Map(m) => {
            let mut out = serde_json::Map::new();
            for (k, x) in m.map.iter() {
                let Key::String(k) = k else { return None };
                out.insert(k.to_string(), cel_to_json(x, depth + 1)?);
            }
            Value::Object(out)
        }
        _ => return None,
    })
}

/// Runs `f` on a thread with a large stack (CEL's parser and interpreter recurse deeply).
pub fn run_on_big_stack<T: Send>(f: impl FnOnce() -> T + Send) -> Result<T, String> {
    on_big_stack(f)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Past its time an evaluation stops, and stays stopped: an `||` around the loop that
    /// noticed does not absorb it, and the next evaluation in the same bound fails at once.
    #[test]
    fn evaluations_stop_at_their_deadline() {
        let xs = CelValue::List(Arc::new((0..3000).map(CelValue::Int).collect()));
        let slow = Expression::compile("xs.all(a, xs.all(b, a >= 0)) || true").unwrap();
        let quick = Expression::compile("1 == 1").unwrap();
        let (first, second) = bounded_within(std::time::Duration::from_millis(50), || {
            (slow.eval(&[("xs", &xs)]), quick.eval(&[]))
        });
        assert_eq!(first.unwrap_err(), INTERRUPTED);
        assert_eq!(second.unwrap_err(), INTERRUPTED);
        // A new bound, a fresh start.
        assert!(matches!(quick.eval(&[]), Ok(CelValue::Bool(true))));
    }

    /// Functions whose cost grows with their arguments are charged before they run: past the
    /// per-call limit nothing is allocated, and no `||` absorbs the stop; each expression's
    /// charges are its own.
    #[test]
    fn sized_functions_are_charged_before_they_run() {
        let eval = |src: &str, n: i64| {
            let e = Expression::compile(src).unwrap();
            e.eval(&[("n", &CelValue::Int(n))])
        };
        let ok = |src: &str, n: i64| matches!(eval(src, n), Ok(CelValue::Bool(true)));
        assert!(ok("lists.range(n).size() == 10", 10));
        assert!(ok("lists.range(n).size() == 999989", 999_989));
        // 10^12 items would be 32 TB: refused before any is made.
        let started = std::time::Instant::now();
        assert_eq!(
            eval("lists.range(n).size() > 0 || true", 1_000_000_000_000).unwrap_err(),
            INTERRUPTED
        );
        assert!(started.elapsed() < std::time::Duration::from_secs(1));
        // Summed over the expression: three of 400,000 are past 1,000,000.
        assert_eq!(
            eval("[1, 2, 3].all(i, lists.range(n).size() == n)", 400_000).unwrap_err(),
            INTERRUPTED
        );
        assert!(ok("[1, 2].all(i, lists.range(n).size() == n)", 400_000));
        assert!(ok("[1, 2, 2, 3, 1].distinct() == [1, 2, 3]", 0));
        assert!(ok("lists.range(n).distinct().size() == n", 700));
        assert_eq!(
            eval("lists.range(n).distinct().size() == n", 800).unwrap_err(),
            INTERRUPTED
        );
        assert!(ok(
            "sets.contains([1, 2, 3], [1, 2]) && !sets.contains([1], [2])",
            0
        ));
        assert!(ok(
            "sets.equivalent([1, 2, 2], [2, 1]) && !sets.equivalent([1], [1, 2])",
            0
        ));
        assert!(ok(
            "sets.intersects([1, 2], [2, 3]) && !sets.intersects([1], [2])",
            0
        ));
        assert_eq!(
            eval("sets.contains(lists.range(n), lists.range(n))", 1_001).unwrap_err(),
            INTERRUPTED
        );
        assert!(eval("lists.range(n).size() == 0", -1).is_err());
    }
    use serde_json::json;

    fn node(v: Value) -> Node {
        let mut errs = vec![];
        let mut n = Node::parse(&v, "", &mut errs);
        assert!(errs.is_empty(), "{errs:?}");
        compile_tree(&mut n).expect("compile");
        n
    }

    #[test]
    fn only_the_variables_an_expression_names_are_bound() {
        let e = Expression::compile(
            "object.a == params.b && [1].all(x, x > 0) && has(oldObject.c) && {'k': variables.v}.k",
        )
        .unwrap();
        for name in ["object", "params", "x", "oldObject", "variables"] {
            assert!(e.references(name), "{name}");
        }
        for name in ["request", "namespaceObject", "a", "b", "k"] {
            assert!(!e.references(name), "{name}");
        }
        // An unnamed variable is not bound (and not needed); a named one still is.
        let e = Expression::compile("object.a == 1").unwrap();
        let obj = json_to_cel(&json!({"a": 1}));
        let big = json_to_cel(&json!({"n": (0..1000).collect::<Vec<_>>()}));
        assert_eq!(
            e.eval(&[("object", &obj), ("request", &big)]).unwrap(),
            CelValue::Bool(true)
        );
        let e = Expression::compile("request.n.size() == 1000").unwrap();
        assert_eq!(
            e.eval(&[("object", &obj), ("request", &big)]).unwrap(),
            CelValue::Bool(true)
        );
    }

    /// The host reads field paths itself; results and errors are the interpreter's.
    #[test]
    fn lazy_paths_evaluate_as_written() {
        let object = json!({"metadata": {"name": "n", "labels": {"app": "web"}},
                            "data": {"a": "1", "b": "2"}, "n": 3});
        let old = json!({"data": {"a": "0"}});
        let run = |src: &str| {
            let e = Expression::compile(src).unwrap();
            let (o, p) = (LazyVar::new(Some(&object)), LazyVar::new(Some(&old)));
            let lazy = e.eval_lazy(&[("object", o.var()), ("oldObject", p.var())]);
            let (oc, pc) = (json_to_cel(&object), json_to_cel(&old));
            let plain = e.eval(&[("object", &oc), ("oldObject", &pc)]);
            assert_eq!(lazy, plain, "{src}");
            lazy
        };
        assert!(Expression::compile("object.metadata.labels.app == 'web'")
            .unwrap()
            .paths
            .is_some());
        assert_eq!(
            run("object.metadata.labels.app == 'web' && size(object.data) < 10"),
            Ok(CelValue::Bool(true))
        );
        assert_eq!(
            run("object.data.a != oldObject.data.a"),
            Ok(CelValue::Bool(true))
        );
        assert_eq!(
            run("has(object.data.c) || object.n == 3"),
            Ok(CelValue::Bool(true))
        );
        assert_eq!(
            run("object.data.all(k, k != 'c')"),
            Ok(CelValue::Bool(true))
        );
        assert_eq!(
            run("object != null && object.metadata.name == 'n'"),
            Ok(CelValue::Bool(true))
        );
        // A missing field: the interpreter's error; a short-circuit still wins over it.
        assert!(run("object.spec.replicas > 1").is_err());
        assert_eq!(
            run("false && object.spec.replicas > 1"),
            Ok(CelValue::Bool(false))
        );
        assert_eq!(run("object.n.x"), run("object.n.x"));
        // A comprehension variable named like a root: the expression runs as written.
        let e = Expression::compile("[{'a': 1}].all(object, object.a == 1)").unwrap();
        assert!(e.paths.is_none());
        assert_eq!(
            run("[{'a': 1}].all(object, object.a == 1)"),
            Ok(CelValue::Bool(true))
        );
    }

    #[test]
    fn deep_nesting_is_rejected_before_parsing() {
        assert!(!nested_deeper_than("self.a[0] == [(1), {'k': 2}]", 3));
        assert!(nested_deeper_than("[[[[1]]]]", 3));
        assert!(!nested_deeper_than(r#"'(((((' + "[[[[[" + '''{{{{'''"#, 3));
        assert!(!nested_deeper_than(r"r'\' + '\'((((('", 3));
        assert!(!nested_deeper_than("1 // (((((\n + 2", 3));
        // An unterminated string does not hide what follows it from the parser.
        assert!(nested_deeper_than("'unterminated ((((((", 3));
        assert!(nested_deeper_than("'line\n' + ((((((", 3));
        // ... nor does a string with an invalid escape (the lexer rejects it and reads on).
        assert!(nested_deeper_than(r"'\z(((((('", 3));
        assert!(!nested_deeper_than(
            r"'\x41\u00e9\U0001F600\101\n\`(((((('",
            3
        ));
        // `'''x` without a closing `'''` is the empty string `''`, then a string from the third.
        assert!(!nested_deeper_than("'''x(((((('", 3));
        assert!(nested_deeper_than("'''x'(((((", 3));
        let deep = "[".repeat(100_000);
        let start = std::time::Instant::now();
        let err = parse(&deep).expect_err("too deep");
        assert!(err.contains("Recursion limit"), "{err}");
        assert!(start.elapsed() < std::time::Duration::from_secs(1));
        // Long operator chains are one expression, but a deep tree.
        let chain = format!("{}1 > 0", "1+".repeat(30_000));
        let err = on_big_stack(|| parse(&chain).map(|_| ()))
            .unwrap()
            .expect_err("too deep");
        assert!(err.contains("nesting depth exceeds"), "{err}");
        let fine = format!("{}1 > 0", "1+".repeat(500));
        assert!(on_big_stack(|| parse(&fine).is_ok()).unwrap());
        // Below the limit the parser has the final word.
        let ok = format!("{}1{}", "(".repeat(20), ")".repeat(20));
        assert!(parse(&ok).is_ok());
    }

    /// A parse error quotes its line as cel-go's `ToDisplayString` does: ` | ` before the line
    /// and before the caret line, tabs as spaces, wide dots and caret under characters of more
    /// than one byte.
    #[test]
    fn errors_quote_their_line_as_cel_go_does() {
        let err = parse("self.foo > ").expect_err("invalid");
        assert!(
            err.starts_with("ERROR: <input>:1:12: ")
                && err.ends_with("\n | self.foo > \n | ...........^"),
            "{err:?}"
        );
        assert_eq!(error_snippet("a\tb == 1", 2), "\n | a b == 1\n | ..^");
        assert_eq!(
            error_snippet("'日本' + x", 1),
            "\n | '日本' + x\n | .\u{ff3e}"
        );
        assert_eq!(
            error_snippet("'日本' + x", 7),
            "\n | '日本' + x\n | .\u{ff0e}\u{ff0e}....^"
        );
        // A column past the line's end: the caret after its last character.
        assert_eq!(error_snippet("ab", 5), "\n | ab\n | ..^");
        assert_eq!(error_snippet(&"x".repeat(MAX_SNIPPET_CHARS + 1), 0), "");
    }

    #[test]
    fn parse_errors_are_bounded() {
        // Short rules: exactly the crate's own text.
        for src in ["self.a <", "1 + + 2 )", "a.b(\n'x' ~ 2"] {
            let crate_text = Parser::new()
                .enable_optional_syntax(true)
                .parse(src)
                .expect_err("invalid")
                .to_string();
            // But for cel-go's space before the bar of each quoted line.
            assert_eq!(
                parse(src).expect_err("invalid"),
                crate_text.replace("\n| ", "\n | "),
                "{src}"
            );
        }
        // A long line of junk: thousands of errors, one long line (columns beyond 65,535).
        let junk = format!("{}1", "~1/".repeat(30_000));
        let start = std::time::Instant::now();
        let err = on_big_stack(|| parse(&junk).map(|_| ()))
            .unwrap()
            .expect_err("junk");
        assert!(err.len() < 20_000, "{} bytes", err.len());
        assert!(err.ends_with("more errors"), "{}", &err[err.len() - 100..]);
        assert!(start.elapsed() < std::time::Duration::from_secs(20));
    }

    #[test]
    fn escaping() {
        assert_eq!(escape("foo").as_deref(), Some("foo"));
        assert_eq!(escape("namespace").as_deref(), Some("__namespace__"));
        assert_eq!(
            escape("a-b.c/d").as_deref(),
            Some("a__dash__b__dot__c__slash__d")
        );
        assert_eq!(escape("a__b").as_deref(), Some("a__underscores__b"));
        assert_eq!(escape("my_field").as_deref(), Some("my_field"));
        assert_eq!(escape("1abc"), None);
        assert_eq!(escape("a b"), None);
    }

    fn diag(schema: Value) -> RuleDiag {
        let n = node(schema);
        n.validations[0].diag.clone()
    }

    #[test]
    fn compile_errors() {
        let d =
            diag(json!({"type": "object", "x-kubernetes-validations": [{"rule": "self.x =="}]}));
        assert!(
            d.error
                .as_deref()
                .is_some_and(|e| e.starts_with("compilation failed: ERROR: <input>:1:")),
            "{d:?}"
        );
        let d = diag(
            json!({"type": "object", "properties": {"a": {"type": "string"}},
            "x-kubernetes-validations": [{"rule": "self.b == 'x'"}]}),
        );
        assert_eq!(
            d.error.as_deref(),
            Some("compilation failed: ERROR: <input>:1:5: undefined field 'b'\n | self.b == 'x'\n | ....^")
        );
        let d = diag(json!({"type": "object", "x-kubernetes-validations": [{"rule": "foo > 1"}]}));
        assert!(d
            .error
            .unwrap_or_default()
            .contains("undeclared reference to 'foo'"));
        let d = diag(json!({"type": "object", "x-kubernetes-validations": [{"rule": "1 + 2"}]}));
        assert_eq!(
            d.error.as_deref(),
            Some("cel expression must evaluate to a bool")
        );
        let d = diag(
            json!({"type": "object", "x-kubernetes-validations": [{"rule": "true", "messageExpression": "1 == 1"}]}),
        );
        assert_eq!(
            d.message_expression_error.as_deref(),
            Some("messageExpression must evaluate to a string")
        );
        // namespaced functions, macros and comprehension variables are fine
        let d = diag(
            json!({"type": "object", "properties": {"l": {"type": "array", "items": {"type": "string"}}},
            "x-kubernetes-validations": [{"rule": "sets.contains(self.l, ['a']) && self.l.all(x, x.size() > 0) && math.greatest(1, 2) == 2"}]}),
        );
        assert!(d.error.is_none(), "{d:?}");
        assert!(!d.uses_old_self);
        let d = diag(
            json!({"type": "object", "x-kubernetes-validations": [{"rule": "self == oldSelf"}]}),
        );
        assert!(d.uses_old_self);
    }

    #[test]
    fn root_metadata_is_restricted() {
        let d = diag(
            json!({"type": "object", "x-kubernetes-validations": [{"rule": "self.metadata.name.size() > 0 && has(self.kind)"}]}),
        );
        assert!(d.error.is_none(), "{d:?}");
        let d = diag(
            json!({"type": "object", "x-kubernetes-validations": [{"rule": "has(self.metadata.labels)"}]}),
        );
        assert!(d
            .error
            .unwrap_or_default()
            .contains("undefined field 'labels'"));
    }

    #[test]
    fn static_costs() {
        let unbounded = json!({"type": "object", "properties": {"l": {"type": "array", "items": {"type": "string"}}},
            "x-kubernetes-validations": [{"rule": "self.l.all(x, self.l.all(y, x == y))"}]});
        assert!(diag(unbounded).estimated_cost > STATIC_ESTIMATED_COST_LIMIT);
        let bounded = json!({"type": "object", "properties": {"l": {"type": "array", "maxItems": 10, "items": {"type": "string"}}},
            "x-kubernetes-validations": [{"rule": "self.l.all(x, self.l.all(y, x == y))"}]});
        assert!(diag(bounded).estimated_cost < 1000);
    }

    #[test]
    fn field_paths() {
        let n = node(json!({"type": "object", "properties": {
            "a": {"type": "object", "properties": {"b.c": {"type": "string"}}},
            "m": {"type": "object", "additionalProperties": {"type": "string"}}}}));
        assert_eq!(valid_field_path(".a", &n).as_deref(), Ok("a"));
        assert_eq!(valid_field_path(".a['b.c']", &n).as_deref(), Ok("a.b.c"));
        assert_eq!(valid_field_path(".m.x", &n).as_deref(), Ok("m[x]"));
        assert!(valid_field_path(".nope", &n).is_err());
        assert!(valid_field_path("a", &n).is_err());
    }

    #[test]
    fn values() {
        let n = node(json!({"type": "object", "properties": {
            "i": {"type": "integer"}, "n": {"type": "number"}, "d": {"type": "string", "format": "duration"},
            "t": {"type": "string", "format": "date-time"}, "b": {"type": "string", "format": "byte"},
            "m": {"type": "object", "additionalProperties": {"type": "string"}},
            "x-y": {"type": "string"}}}));
        let v = to_cel(
            &json!({"i": 1, "n": 2, "d": "1m", "t": "2024-01-01T00:00:00Z", "b": "aGk=", "m": {"a-b": "c"}, "x-y": "z"}),
            Some(&n),
            true,
        );
        let CelValue::Map(m) = v else { panic!("map") };
        assert_eq!(m.map.get(&key("i")), Some(&CelValue::Int(1)));
        assert_eq!(m.map.get(&key("n")), Some(&CelValue::Float(2.0)));
        assert!(matches!(m.map.get(&key("d")), Some(CelValue::Duration(_))));
        assert!(matches!(m.map.get(&key("t")), Some(CelValue::Timestamp(_))));
        assert_eq!(
            m.map.get(&key("b")),
            Some(&CelValue::Bytes(Arc::new(b"hi".to_vec())))
        );
        assert!(m.map.contains_key(&key("x__dash__y")));
        let Some(CelValue::Map(inner)) = m.map.get(&key("m")) else {
            panic!("m")
        };
        assert!(
            inner.map.contains_key(&key("a-b")),
            "map keys are not escaped"
        );
    }

    #[test]
    fn mutation_literals_are_maps() {
        let eval = |src: &str| {
            let src = src.to_owned();
            on_big_stack(move || {
                let e = Expression::compile_mutation(&src)?;
                let obj = json_to_cel(&json!({"metadata": {"name": "n"}}));
                e.eval(&[("object", &obj)])
                    .map(|v| cel_to_json(&v, 0).unwrap_or(Value::Null))
            })
            .unwrap()
        };
        assert_eq!(
            eval("Object{metadata: Object.metadata{labels: {'a': object.metadata.name}}, spec: Object.spec{containers: [Object.spec.containers{name: 'c'}]}}"),
            Ok(json!({"metadata": {"labels": {"a": "n"}}, "spec": {"containers": [{"name": "c"}]}}))
        );
        assert_eq!(
            eval("[JSONPatch{op: 'add', path: '/metadata/labels/' + jsonpatch.escapeKey('a/b~c'), value: Object.spec.x{y: 1}}]"),
            Ok(json!([{"op": "add", "path": "/metadata/labels/a~1b~0c", "value": {"y": 1}}]))
        );
        let err = eval("Object{spec: Object.spec{selector: Object.spec.wrong{}}}").unwrap_err();
        assert!(
            err.contains(
                "unexpected type name \"Object.spec.wrong\", expected \"Object.spec.selector\""
            ),
            "{err}"
        );
        assert!(eval("JSONPatch{nope: 1}")
            .unwrap_err()
            .contains("undefined field 'nope'"));
        assert!(eval("Other{a: 1}")
            .unwrap_err()
            .contains("undeclared reference to 'Other'"));
        // Outside mutations, struct literals are undeclared types (not an interpreter panic).
        let err = on_big_stack(|| Expression::compile("Object{a: 1}").map(|_| ()))
            .unwrap()
            .unwrap_err();
        assert!(err.contains("undeclared reference to 'Object'"), "{err}");
    }

    #[test]
    fn deep_expressions_do_not_overflow() {
        let deep = "(".repeat(90) + "true" + &")".repeat(90);
        let d = diag(json!({"type": "object", "x-kubernetes-validations": [{"rule": deep}]}));
        assert!(d.error.is_none(), "{d:?}");
        let deeper = "(".repeat(500) + "true" + &")".repeat(500);
        let d = diag(json!({"type": "object", "x-kubernetes-validations": [{"rule": deeper}]}));
        assert!(d.error.is_some());
    }
}
