//! CEL's regular expressions (`matches`, and the Kubernetes library's `find` and `findAll`) as
//! cel-go runs them, in place of the interpreter's own:
//!
//! - **RE2's classes**: `\d`, `\w`, `\s` and `\b` are ASCII in RE2 (and Go), Unicode in Rust's
//!   `regex`; patterns are rewritten so `"é٣".matches('^\\w+$')` is false, as in kube.
//! - **Compiled once**: cel-go compiles a constant pattern once per program; the interpreter
//!   compiled it on every call (40 ms for `^\w{1,100}$` in a debug build, inside a loop over a
//!   list). Patterns are kept in a bounded cache (least recently used out), compile errors too.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use kube_cel::cel::extractors::{Arguments, This};
use kube_cel::cel::objects::Value as CelValue;
use kube_cel::cel::{Context, ExecutionError, FunctionContext, ResolveResult};
use regex::Regex;

/// Patterns kept compiled.
const MAX_ENTRIES: usize = 512;
/// Longer patterns are compiled each time rather than kept.
const MAX_CACHED_LEN: usize = 4096;

pub(crate) fn register(ctx: &mut Context<'_>) {
    ctx.add_function("matches", matches);
    ctx.add_function("find", find);
    ctx.add_function("findAll", find_all);
}

/// A compiled pattern, or why it does not compile.
type Compiled = Result<Arc<Regex>, String>;

struct Cache {
    /// Each pattern's regex and when it was last used (by `clock`).
    entries: HashMap<Arc<str>, (Compiled, u64)>,
    clock: u64,
}

/// `pattern` compiled with RE2's ASCII classes, from the cache when it is there.
pub(crate) fn compile(pattern: &str) -> Result<Arc<Regex>, String> {
    static CACHE: OnceLock<Mutex<Cache>> = OnceLock::new();
    let cache = CACHE.get_or_init(|| {
        Mutex::new(Cache {
            entries: HashMap::new(),
            clock: 0,
        })
    });
    {
        let mut c = cache.lock().unwrap_or_else(|e| e.into_inner());
        c.clock += 1;
        let now = c.clock;
        if let Some((re, used)) = c.entries.get_mut(pattern) {
            *used = now;
            return re.clone();
        }
    }
    // Compiled outside the lock.
    let re = Regex::new(&re2_classes(pattern))
        .map(Arc::new)
        .map_err(|e| e.to_string());
    if pattern.len() <= MAX_CACHED_LEN {
        let mut c = cache.lock().unwrap_or_else(|e| e.into_inner());
        if c.entries.len() >= MAX_ENTRIES {
            if let Some(oldest) = c
                .entries
                .iter()
                .min_by_key(|(_, (_, used))| *used)
                .map(|(k, _)| k.clone())
            {
                c.entries.remove(&oldest);
            }
        }
        let now = c.clock;
        c.entries.insert(pattern.into(), (re.clone(), now));
    }
    re
}

/// `pattern` with RE2's ASCII meaning of `\d \w \s \b` (and their negations) spelled out for
/// Rust's Unicode-aware `regex`.
fn re2_classes(pattern: &str) -> String {
    const DIGIT: &str = "0-9";
    const WORD: &str = "0-9A-Za-z_";
    const SPACE: &str = "\\t\\n\\x0C\\r ";
    let mut out = String::with_capacity(pattern.len() + 16);
    let mut chars = pattern.chars().peekable();
    // Inside a bracketed class (depth, for nested `[[:alpha:]]`-style classes).
    let mut class = 0usize;
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                let Some(e) = chars.next() else {
                    out.push('\\');
                    break;
                };
                let inside = class > 0;
                match (e, inside) {
                    ('d', false) => out.push_str(&format!("[{DIGIT}]")),
                    ('w', false) => out.push_str(&format!("[{WORD}]")),
                    ('s', false) => out.push_str(&format!("[{SPACE}]")),
                    ('D', false) => out.push_str(&format!("[^{DIGIT}]")),
                    ('W', false) => out.push_str(&format!("[^{WORD}]")),
                    ('S', false) => out.push_str(&format!("[^{SPACE}]")),
                    ('b', false) => out.push_str("(?-u:\\b)"),
                    ('B', false) => out.push_str("(?-u:\\B)"),
                    ('d', true) => out.push_str(DIGIT),
                    ('w', true) => out.push_str(WORD),
                    ('s', true) => out.push_str(SPACE),
                    // A negated class nests inside a bracket in Rust's syntax.
                    ('D', true) => out.push_str(&format!("[^{DIGIT}]")),
                    ('W', true) => out.push_str(&format!("[^{WORD}]")),
                    ('S', true) => out.push_str(&format!("[^{SPACE}]")),
                    _ => {
                        out.push('\\');
                        out.push(e);
                    }
                }
            }
            '[' => {
                class += 1;
                out.push('[');
                // A `]` or `^]` right after the opening bracket is a literal.
                if chars.peek() == Some(&'^') {
                    out.push('^');
                    chars.next();
                }
                if chars.peek() == Some(&']') {
                    out.push(']');
                    chars.next();
                }
            }
            ']' if class > 0 => {
                class -= 1;
                out.push(']');
            }
            c => out.push(c),
        }
    }
    out
}

fn matches(
    ftx: &FunctionContext,
    This(this): This<Arc<String>>,
    regex: Arc<String>,
) -> ResolveResult {
    match compile(&regex) {
        Ok(re) => Ok(CelValue::Bool(re.is_match(&this))),
        Err(err) => Err(ftx.error(format!("'{regex}' not a valid regex:\n{err}"))),
    }
}

/// `<string>.find(<string>) -> <string>`: the first match, or "".
fn find(This(this): This<Arc<String>>, pattern: Arc<String>) -> ResolveResult {
    let re = compile(&pattern)
        .map_err(|e| ExecutionError::function_error("find", format!("invalid regex: {e}")))?;
    let found = re
        .find(&this)
        .map(|m| m.as_str().to_string())
        .unwrap_or_default();
    Ok(CelValue::String(Arc::new(found)))
}

/// `<string>.findAll(<string>[, <int>]) -> <list<string>>`: the matches (at most the limit; a
/// negative limit is no limit, as cel-go's).
fn find_all(This(this): This<Arc<String>>, Arguments(args): Arguments) -> ResolveResult {
    let pattern = match args.first() {
        Some(CelValue::String(s)) => s.clone(),
        _ => {
            return Err(ExecutionError::function_error(
                "findAll",
                "expected string pattern",
            ))
        }
    };
    let re = compile(&pattern)
        .map_err(|e| ExecutionError::function_error("findAll", format!("invalid regex: {e}")))?;
    let limit = match args.get(1) {
        Some(CelValue::Int(n)) if *n >= 0 => Some(*n as usize),
        _ => None,
    };
    let found = re
        .find_iter(&this)
        .take(limit.unwrap_or(usize::MAX))
        .map(|m| CelValue::String(Arc::new(m.as_str().to_string())))
        .collect::<Vec<_>>();
    Ok(CelValue::List(Arc::new(found)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_are_ascii_as_in_re2() {
        let is = |p: &str, s: &str| compile(p).expect("compiles").is_match(s);
        assert!(is(r"^\w+$", "abc_9"));
        assert!(!is(r"^\w+$", "é٣"));
        assert!(!is(r"^\d+$", "٣"));
        assert!(is(r"^\D+$", "é"));
        assert!(is(r"^[\w-]+$", "a-b"));
        assert!(!is(r"^[\w-]+$", "é"));
        assert!(!is(r"^\s$", "\u{a0}"));
        assert!(is(r"^\s$", "\t"));
        // é is no word character in RE2: a boundary between it and `a`.
        assert!(is(r"\ba", "éa"));
        assert!(is(r"^[\W]$", "é"));
        assert!(!is(r"^[^\D]$", "٣"));
        assert!(is(r"^[]a]+$", "]a"));
        assert!(is(r"^\\w$", "\\w"), "an escaped backslash stays one");
        assert!(compile("(").is_err());
        // And through CEL.
        let run = |src: &str| {
            crate::schema::expr::Expression::compile(src)
                .expect("compiles")
                .eval(&[])
                .expect("evaluates")
        };
        assert_eq!(
            run(r"'é٣'.matches('^\\w+$')"),
            kube_cel::cel::objects::Value::Bool(false)
        );
        assert_eq!(
            run(r"'a1 b2'.findAll('\\w\\d')"),
            kube_cel::cel::objects::Value::List(Arc::new(vec![
                kube_cel::cel::objects::Value::String(Arc::new("a1".into())),
                kube_cel::cel::objects::Value::String(Arc::new("b2".into())),
            ]))
        );
        // The same pattern is one compiled regex.
        assert!(Arc::ptr_eq(
            &compile(r"^\w{1,100}$").expect("compiles"),
            &compile(r"^\w{1,100}$").expect("compiles")
        ));
    }
}
