//! `application/yaml` answers as kube writes them.
//!
//! kube's YAML serializer (apimachinery `runtime/serializer/json`, `Yaml: true`) encodes an
//! object as JSON and converts it with sigs.k8s.io/yaml's `JSONToYAML`, which reads the JSON
//! into generic values with go-yaml v2 (go.yaml.in/yaml/v2 2.4: numbers typed as go-yaml
//! resolves them) and writes them back with go-yaml's emitter (libyaml's). So an answer here
//! is what that emitter writes for the value:
//!
//! - map keys in go-yaml's "natural" order (`keyList.Less`: runs of digits compared as
//!   numbers, other characters before letters), sorted by Go's `sort.Sort` ([`super::gosort`]);
//! - block style, 2-space indentation, a sequence that is a map's value not indented
//!   (`items:` then `- ...` at the key's column), empty maps and sequences as `{}` and `[]`;
//! - a string plain unless it would read back as another type (`"true"`, `"1"`, `"null"`,
//!   `""`, `"1e3"`, `"0x1F"`, a timestamp such as `"2024-01-02T03:04:05Z"`, a base-60
//!   number such as `"1:20"`: double-quoted), or cannot be written plainly (a leading `-`,
//!   `#`, `&`..., `: ` or ` #` inside, a leading or trailing space: single-quoted; a
//!   character outside the printable set, a tab, an emoji: double-quoted with escapes);
//! - a string with a line break as a literal block (`|`, `|-`, `|+`, with an indentation
//!   indicator when it starts with a space);
//! - long plain and quoted strings folded at the first space past column 80, continued on the
//!   next line indented one step deeper;
//! - a key longer than 128 bytes (or with a line break) written as a complex key (`? key`,
//!   then `: value`);
//! - numbers as kube's JSON writes them and go-yaml reads that back: an integer as it is, a
//!   float with an integral value below 1e21 as an integer (`1.0` is `1`), any other float in
//!   Go's shortest `%g` form (`1.5`, `1e-07`, `1.2345675e+06`).
//!
//! [`Emitter`] keeps the emitter's state between calls, so a list can be written an item at a
//! time (`api::handlers`'s streamed lists).

use serde_json::{Map, Number, Value};

/// The emitter's line width: past this column a space becomes a line break.
const BEST_WIDTH: usize = 80;
/// The indentation step.
const BEST_INDENT: isize = 2;
/// The longest key written as a simple key (`key: value`), in bytes.
const MAX_SIMPLE_KEY: usize = 128;

/// `v` as kube's YAML serializer writes it (the document, ending with a newline).
pub fn to_yaml(v: &Value) -> String {
    let mut e = Emitter::new();
    e.node(v, Ctx::ROOT);
    e.end_document();
    e.out
}

/// Where a node is written: what go-yaml's emitter calls the mapping and simple-key contexts.
#[derive(Clone, Copy)]
struct Ctx {
    /// A map's key or value.
    mapping: bool,
    /// A simple key (`key:`): written on one line, never folded.
    simple_key: bool,
}

impl Ctx {
    const ROOT: Ctx = Ctx {
        mapping: false,
        simple_key: false,
    };
    const ITEM: Ctx = Ctx {
        mapping: false,
        simple_key: false,
    };
    const VALUE: Ctx = Ctx {
        mapping: true,
        simple_key: false,
    };
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Style {
    Plain,
    Single,
    Double,
    Literal,
}

/// go-yaml's emitter, for the documents `JSONToYAML` writes: one root, maps, sequences and
/// untagged scalars.
pub struct Emitter {
    out: String,
    /// Characters written on the current line.
    column: usize,
    /// The current indentation (-1 before the root).
    indent: isize,
    indents: Vec<isize>,
    /// Whether the last thing written was whitespace (no separating space needed).
    whitespace: bool,
    /// Whether only indentation has been written on the current line.
    indention: bool,
}

impl Default for Emitter {
    fn default() -> Self {
        Self::new()
    }
}

impl Emitter {
    pub fn new() -> Self {
        Self {
            out: String::new(),
            column: 0,
            indent: -1,
            indents: Vec::new(),
            whitespace: true,
            indention: true,
        }
    }

    /// What has been written since the last call.
    pub fn take(&mut self) -> String {
        std::mem::take(&mut self.out)
    }

    /// Starts the root map of a document written a piece at a time (it must get a key).
    pub fn begin_mapping(&mut self) {
        self.increase_indent(false, false);
    }

    /// The next key of the current map.
    pub fn key(&mut self, k: &str) {
        self.write_indent();
        let a = analyze(k);
        if !a.multiline && k.len() <= MAX_SIMPLE_KEY {
            self.string(
                k,
                Ctx {
                    mapping: true,
                    simple_key: true,
                },
            );
            self.write_indicator(":", false, false, false);
        } else {
            self.write_indicator("?", true, false, true);
            self.string(k, Ctx::VALUE);
            self.write_indent();
            self.write_indicator(":", true, false, true);
        }
    }

    /// The value of the key just written.
    pub fn value(&mut self, v: &Value) {
        self.node(v, Ctx::VALUE);
    }

    /// Starts a sequence as the value of the key just written; an empty one is written whole
    /// (`[]`) and takes no items.
    pub fn begin_items(&mut self, empty: bool) {
        if empty {
            self.write_indicator("[", true, true, false);
            self.write_indicator("]", false, false, false);
        } else {
            self.increase_indent(false, !self.indention);
        }
    }

    /// The next item of the sequence begun.
    pub fn item(&mut self, v: &Value) {
        self.write_indent();
        self.write_indicator("-", true, false, true);
        self.node(v, Ctx::ITEM);
    }

    /// Ends a non-empty sequence begun with [`Emitter::begin_items`].
    pub fn end_items(&mut self) {
        self.pop_indent();
    }

    /// Ends the map begun with [`Emitter::begin_mapping`].
    pub fn end_mapping(&mut self) {
        self.pop_indent();
    }

    /// Ends the document (its last line break).
    pub fn end_document(&mut self) {
        self.write_indent();
    }

    fn pop_indent(&mut self) {
        self.indent = self.indents.pop().unwrap_or(-1);
    }

    fn increase_indent(&mut self, flow: bool, indentless: bool) {
        self.indents.push(self.indent);
        if self.indent < 0 {
            self.indent = if flow { BEST_INDENT } else { 0 };
        } else if !indentless {
            self.indent += BEST_INDENT;
        }
    }

    fn node(&mut self, v: &Value, ctx: Ctx) {
        match v {
            Value::Object(m) if m.is_empty() => {
                self.write_indicator("{", true, true, false);
                self.write_indicator("}", false, false, false);
            }
            Value::Object(m) => {
                self.increase_indent(false, false);
                for k in sorted_keys(m) {
                    self.key(k);
                    if let Some(v) = m.get(k) {
                        self.value(v);
                    }
                }
                self.pop_indent();
            }
            Value::Array(a) if a.is_empty() => {
                self.write_indicator("[", true, true, false);
                self.write_indicator("]", false, false, false);
            }
            Value::Array(a) => {
                self.increase_indent(false, ctx.mapping && !self.indention);
                for item in a {
                    self.item(item);
                }
                self.pop_indent();
            }
            Value::String(s) => self.string(s, ctx),
            Value::Null => self.plain_scalar("null", ctx),
            Value::Bool(b) => self.plain_scalar(if *b { "true" } else { "false" }, ctx),
            Value::Number(n) => self.plain_scalar(&number(n), ctx),
        }
    }

    /// A scalar go-yaml asks to be written plain (null, a boolean, a number).
    fn plain_scalar(&mut self, text: &str, ctx: Ctx) {
        self.scalar(text, Style::Plain, ctx);
    }

    /// A string, in the style go-yaml's encoder asks for (`encoder.stringv`).
    fn string(&mut self, s: &str, ctx: Ctx) {
        let style = if s.contains('\n') {
            Style::Literal
        } else if resolves_to_string(s) && !is_base60_float(s) {
            Style::Plain
        } else {
            Style::Double
        };
        self.scalar(s, style, ctx);
    }

    /// The emitter's choice of style (`yaml_emitter_select_scalar_style`) and the scalar.
    fn scalar(&mut self, value: &str, mut style: Style, ctx: Ctx) {
        let a = analyze(value);
        if ctx.simple_key && a.multiline {
            style = Style::Double;
        }
        if style == Style::Plain && (!a.block_plain_allowed || (value.is_empty() && ctx.simple_key))
        {
            style = Style::Single;
        }
        if style == Style::Single && !a.single_quoted_allowed {
            style = Style::Double;
        }
        if style == Style::Literal && (!a.block_allowed || ctx.simple_key) {
            style = Style::Double;
        }
        self.increase_indent(true, false);
        let allow_breaks = !ctx.simple_key;
        match style {
            Style::Plain => self.write_plain(value, allow_breaks),
            Style::Single => self.write_single_quoted(value, allow_breaks),
            Style::Double => self.write_double_quoted(value, allow_breaks),
            Style::Literal => self.write_literal(value),
        }
        self.pop_indent();
    }

    fn put(&mut self, c: char) {
        self.out.push(c);
        self.column += 1;
    }

    fn put_break(&mut self) {
        self.out.push('\n');
        self.column = 0;
    }

    /// A line break of the value: `\n` as a newline, the others as themselves.
    fn write_break(&mut self, c: char) {
        if c == '\n' {
            self.put_break();
        } else {
            self.put(c);
            self.column = 0;
        }
    }

    fn write_indent(&mut self) {
        let indent = self.indent.max(0) as usize;
        if !self.indention || self.column > indent || (self.column == indent && !self.whitespace) {
            self.put_break();
        }
        while self.column < indent {
            self.put(' ');
        }
        self.whitespace = true;
        self.indention = true;
    }

    fn write_indicator(
        &mut self,
        indicator: &str,
        need_whitespace: bool,
        is_whitespace: bool,
        is_indention: bool,
    ) {
        if need_whitespace && !self.whitespace {
            self.put(' ');
        }
        for c in indicator.chars() {
            self.put(c);
        }
        self.whitespace = is_whitespace;
        self.indention = self.indention && is_indention;
    }

    fn write_plain(&mut self, value: &str, allow_breaks: bool) {
        if !self.whitespace {
            self.put(' ');
        }
        let chars: Vec<char> = value.chars().collect();
        let (mut spaces, mut breaks) = (false, false);
        for (i, &c) in chars.iter().enumerate() {
            if c == ' ' {
                let next_space = chars.get(i + 1) == Some(&' ');
                if allow_breaks && !spaces && self.column > BEST_WIDTH && !next_space {
                    self.write_indent();
                } else {
                    self.put(c);
                }
                spaces = true;
            } else if is_break(c) {
                if !breaks && c == '\n' {
                    self.put_break();
                }
                self.write_break(c);
                self.indention = true;
                breaks = true;
            } else {
                if breaks {
                    self.write_indent();
                }
                self.put(c);
                self.indention = false;
                spaces = false;
                breaks = false;
            }
        }
        self.whitespace = false;
        self.indention = false;
    }

    fn write_single_quoted(&mut self, value: &str, allow_breaks: bool) {
        self.write_indicator("'", true, false, false);
        let chars: Vec<char> = value.chars().collect();
        let last = chars.len().saturating_sub(1);
        let (mut spaces, mut breaks) = (false, false);
        for (i, &c) in chars.iter().enumerate() {
            if c == ' ' {
                let next_space = chars.get(i + 1) == Some(&' ');
                if allow_breaks
                    && !spaces
                    && self.column > BEST_WIDTH
                    && i > 0
                    && i < last
                    && !next_space
                {
                    self.write_indent();
                } else {
                    self.put(c);
                }
                spaces = true;
            } else if is_break(c) {
                if !breaks && c == '\n' {
                    self.put_break();
                }
                self.write_break(c);
                self.indention = true;
                breaks = true;
            } else {
                if breaks {
                    self.write_indent();
                }
                if c == '\'' {
                    self.put('\'');
                }
                self.put(c);
                self.indention = false;
                spaces = false;
                breaks = false;
            }
        }
        self.write_indicator("'", false, false, false);
        self.whitespace = false;
        self.indention = false;
    }

    fn write_double_quoted(&mut self, value: &str, allow_breaks: bool) {
        self.write_indicator("\"", true, false, false);
        let chars: Vec<char> = value.chars().collect();
        let last = chars.len().saturating_sub(1);
        // go-yaml tests for a byte order mark at the start of the value at every character
        // (`is_bom(value, i)` reads `value[0..3]`): behind one, every character is escaped.
        let bom = value.starts_with('\u{feff}');
        let mut spaces = false;
        for (i, &c) in chars.iter().enumerate() {
            if !is_printable(c) || bom || is_break(c) || c == '"' || c == '\\' {
                self.put('\\');
                match c {
                    '\0' => self.put('0'),
                    '\u{7}' => self.put('a'),
                    '\u{8}' => self.put('b'),
                    '\t' => self.put('t'),
                    '\n' => self.put('n'),
                    '\u{b}' => self.put('v'),
                    '\u{c}' => self.put('f'),
                    '\r' => self.put('r'),
                    '\u{1b}' => self.put('e'),
                    '"' => self.put('"'),
                    '\\' => self.put('\\'),
                    '\u{85}' => self.put('N'),
                    '\u{a0}' => self.put('_'),
                    '\u{2028}' => self.put('L'),
                    '\u{2029}' => self.put('P'),
                    c => {
                        let v = c as u32;
                        let (prefix, digits) = if v <= 0xff {
                            ('x', 2)
                        } else if v <= 0xffff {
                            ('u', 4)
                        } else {
                            ('U', 8)
                        };
                        self.put(prefix);
                        for k in (0..digits).rev() {
                            let d = (v >> (4 * k)) & 0xf;
                            self.put(
                                char::from_digit(d, 16).map_or('0', |h| h.to_ascii_uppercase()),
                            );
                        }
                    }
                }
                spaces = false;
            } else if c == ' ' {
                if allow_breaks && !spaces && self.column > BEST_WIDTH && i > 0 && i < last {
                    self.write_indent();
                    if chars.get(i + 1) == Some(&' ') {
                        self.put('\\');
                    }
                } else {
                    self.put(c);
                }
                spaces = true;
            } else {
                self.put(c);
                spaces = false;
            }
        }
        self.write_indicator("\"", false, false, false);
        self.whitespace = false;
        self.indention = false;
    }

    fn write_literal(&mut self, value: &str) {
        self.write_indicator("|", true, false, false);
        // The block's hints: an indentation indicator for a leading space or break, and the
        // chomping (`-` without a final break, `+` with more than one).
        let chars: Vec<char> = value.chars().collect();
        if chars.first().is_some_and(|&c| c == ' ' || is_break(c)) {
            self.write_indicator("2", false, false, false);
        }
        let chomp = match chars.as_slice() {
            [] => Some("-"),
            [.., last] if !is_break(*last) => Some("-"),
            [_] => Some("+"),
            [.., before, _] if is_break(*before) => Some("+"),
            _ => None,
        };
        if let Some(h) = chomp {
            self.write_indicator(h, false, false, false);
        }
        self.put_break();
        self.indention = true;
        self.whitespace = true;
        let mut breaks = true;
        for &c in &chars {
            if is_break(c) {
                self.write_break(c);
                self.indention = true;
                breaks = true;
            } else {
                if breaks {
                    self.write_indent();
                }
                self.put(c);
                self.indention = false;
                breaks = false;
            }
        }
    }
}

/// What go-yaml's emitter learns of a scalar (`yaml_emitter_analyze_scalar`), for the block
/// context (no flow collection here holds a scalar).
struct Analysis {
    multiline: bool,
    block_plain_allowed: bool,
    single_quoted_allowed: bool,
    block_allowed: bool,
}

fn analyze(value: &str) -> Analysis {
    if value.is_empty() {
        return Analysis {
            multiline: false,
            block_plain_allowed: true,
            single_quoted_allowed: true,
            block_allowed: false,
        };
    }
    let mut block_indicators = value.starts_with("---") || value.starts_with("...");
    let (mut line_breaks, mut special) = (false, false);
    let (mut leading_space, mut leading_break) = (false, false);
    let (mut trailing_space, mut trailing_break) = (false, false);
    let (mut break_space, mut space_break) = (false, false);
    let (mut previous_space, mut previous_break) = (false, false);
    let mut preceded_by_whitespace = true;
    let chars: Vec<char> = value.chars().collect();
    let last = chars.len() - 1;
    for (i, &c) in chars.iter().enumerate() {
        let followed_by_whitespace = chars.get(i + 1).is_none_or(|&n| n == ' ' || n == '\t');
        if i == 0 {
            match c {
                '#' | ',' | '[' | ']' | '{' | '}' | '&' | '*' | '!' | '|' | '>' | '\'' | '"'
                | '%' | '@' | '`' => block_indicators = true,
                '?' | ':' | '-' if followed_by_whitespace => block_indicators = true,
                _ => {}
            }
        } else {
            match c {
                ':' if followed_by_whitespace => block_indicators = true,
                '#' if preceded_by_whitespace => block_indicators = true,
                _ => {}
            }
        }
        if !is_printable(c) {
            special = true;
        }
        if c == ' ' {
            leading_space |= i == 0;
            trailing_space |= i == last;
            break_space |= previous_break;
            previous_space = true;
            previous_break = false;
        } else if is_break(c) {
            line_breaks = true;
            leading_break |= i == 0;
            trailing_break |= i == last;
            space_break |= previous_space;
            previous_space = false;
            previous_break = true;
        } else {
            previous_space = false;
            previous_break = false;
        }
        preceded_by_whitespace = matches!(c, ' ' | '\t' | '\0') || is_break(c);
    }
    let plain = !(leading_space
        || leading_break
        || trailing_space
        || trailing_break
        || break_space
        || space_break
        || special
        || line_breaks
        || block_indicators);
    Analysis {
        multiline: line_breaks,
        block_plain_allowed: plain,
        single_quoted_allowed: !(break_space || space_break || special),
        block_allowed: !(trailing_space || space_break || special),
    }
}

/// YAML 1.1's printable characters as go-yaml's emitter tests them (`is_printable`): no
/// control character but the line feed, nothing above U+FFFD, no byte order mark.
fn is_printable(c: char) -> bool {
    matches!(c, '\n' | '\u{20}'..='\u{7e}' | '\u{a0}'..='\u{d7ff}')
        || (('\u{e000}'..='\u{fffd}').contains(&c) && c != '\u{feff}')
}

fn is_break(c: char) -> bool {
    matches!(c, '\r' | '\n' | '\u{85}' | '\u{2028}' | '\u{2029}')
}

/// A map's keys in go-yaml's order: its `keyList.Less` for string keys, by Go's `sort.Sort`.
pub(crate) fn sorted_keys(m: &Map<String, Value>) -> Vec<&String> {
    let mut keys: Vec<&String> = m.keys().collect();
    super::gosort::sort(&mut keys, |a, b| key_less(a, b));
    keys
}

/// go-yaml's `keyList.Less` for two strings: character by character; at the first difference
/// two letters compare by code point, anything else comes before a letter, and otherwise the
/// runs of digits starting there are compared as numbers (a shorter run first when equal, then
/// the characters).
fn key_less(a: &str, b: &str) -> bool {
    let ar: Vec<char> = a.chars().collect();
    let br: Vec<char> = b.chars().collect();
    let digit = |c: char| c.is_ascii_digit();
    for i in 0..ar.len().min(br.len()) {
        if ar[i] == br[i] {
            continue;
        }
        let al = ar[i].is_alphabetic();
        let bl = br[i].is_alphabetic();
        if al && bl {
            return ar[i] < br[i];
        }
        if al || bl {
            return bl;
        }
        let (mut an, mut bn) = (0i64, 0i64);
        if ar[i] == '0' || br[i] == '0' {
            let mut j = i;
            while j > 0 && digit(ar[j - 1]) {
                j -= 1;
                if ar[j] != '0' {
                    an = 1;
                    bn = 1;
                    break;
                }
            }
        }
        let mut ai = i;
        while ai < ar.len() && digit(ar[ai]) {
            an = an.wrapping_mul(10).wrapping_add(ar[ai] as i64 - '0' as i64);
            ai += 1;
        }
        let mut bi = i;
        while bi < br.len() && digit(br[bi]) {
            bn = bn.wrapping_mul(10).wrapping_add(br[bi] as i64 - '0' as i64);
            bi += 1;
        }
        if an != bn {
            return an < bn;
        }
        if ai != bi {
            return ai < bi;
        }
        return ar[i] < br[i];
    }
    ar.len() < br.len()
}

/// A JSON number as go-yaml writes it after reading kube's JSON of it back: Go's JSON text of
/// the value, resolved as go-yaml resolves a plain scalar (an int64, a uint64, else a float64
/// written with `strconv.FormatFloat(f, 'g', -1, 64)`).
fn number(n: &Number) -> String {
    if let Some(i) = n.as_i64() {
        return i.to_string();
    }
    if let Some(u) = n.as_u64() {
        return u.to_string();
    }
    let f = n.as_f64().unwrap_or(0.0);
    let text = crate::schema::field::go_json_float(f);
    if let Some(i) = go_parse_int(&text, 0) {
        return i.to_string();
    }
    if let Some(u) = go_parse_uint(&text, 0) {
        return u.to_string();
    }
    crate::schema::field::go_format_float(f)
}

/// Whether go-yaml reads `s`, written plainly, back as a string (`resolve("", s)` giving
/// `!!str`): not null, a boolean, a number, a timestamp or the merge key.
fn resolves_to_string(s: &str) -> bool {
    let Some(&first) = s.as_bytes().first() else {
        // The empty string is null.
        return false;
    };
    let hint = match first {
        b'+' | b'-' => b'S',
        b'0'..=b'9' => b'D',
        b'y' | b'Y' | b'n' | b'N' | b't' | b'T' | b'f' | b'F' | b'o' | b'O' | b'~' => b'M',
        b'.' => b'.',
        // No hint, no look-up: a string (go-yaml's table has the merge key `<<`, but `<` has
        // no hint, so `<<` written plainly reads back as a string too).
        _ => return true,
    };
    if RESOLVED.contains(&s) {
        return false;
    }
    match hint {
        b'.' => !go_parse_float_ok(s),
        b'D' | b'S' => {
            if is_timestamp(s) {
                return false;
            }
            let plain: String = s.chars().filter(|c| *c != '_').collect();
            if go_parse_int(&plain, 0).is_some() || go_parse_uint(&plain, 0).is_some() {
                return false;
            }
            if yaml_style_float(&plain) && go_parse_float_ok(&plain) {
                return false;
            }
            if let Some(rest) = plain.strip_prefix("0b") {
                if go_parse_int(rest, 2).is_some() || go_parse_uint(rest, 2).is_some() {
                    return false;
                }
            } else if let Some(rest) = plain.strip_prefix("-0b") {
                if go_parse_int(&format!("-{rest}"), 2).is_some() {
                    return false;
                }
            }
            true
        }
        _ => true,
    }
}

/// The plain scalars go-yaml resolves by table (booleans of YAML 1.1, nulls, the special
/// floats; its merge key `<<` is never looked up, `<` having no hint).
const RESOLVED: &[&str] = &[
    "y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON", "n", "N", "no", "No",
    "NO", "false", "False", "FALSE", "off", "Off", "OFF", "", "~", "null", "Null", "NULL", ".nan",
    ".NaN", ".NAN", ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", "-.inf", "-.Inf", "-.INF",
];

/// go-yaml's `yamlStyleFloat`: `^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`.
fn yaml_style_float(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    if matches!(b.first(), Some(b'-' | b'+')) {
        i += 1;
    }
    let digits = |i: &mut usize| {
        let start = *i;
        while *i < b.len() && b[*i].is_ascii_digit() {
            *i += 1;
        }
        *i - start
    };
    if b.get(i) == Some(&b'.') {
        i += 1;
        if digits(&mut i) == 0 {
            return false;
        }
    } else {
        if digits(&mut i) == 0 {
            return false;
        }
        if b.get(i) == Some(&b'.') {
            i += 1;
            digits(&mut i);
        }
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'-' | b'+')) {
            i += 1;
        }
        if digits(&mut i) == 0 {
            return false;
        }
    }
    i == b.len()
}

/// Whether Go's `strconv.ParseFloat(s, 64)` accepts `s`, for what go-yaml hands it: a decimal
/// float (underscores only between digits), not out of range.
fn go_parse_float_ok(s: &str) -> bool {
    let b = s.as_bytes();
    for (i, &c) in b.iter().enumerate() {
        if c == b'_' {
            let around =
                i > 0 && b[i - 1].is_ascii_digit() && b.get(i + 1).is_some_and(u8::is_ascii_digit);
            if !around {
                return false;
            }
        }
    }
    let plain: String = s.chars().filter(|c| *c != '_').collect();
    yaml_style_float(&plain) && plain.parse::<f64>().is_ok_and(f64::is_finite)
}

/// Go's `strconv.ParseUint(s, base, 64)` (base 0: the prefix decides, `0x`, `0o`, `0b`, or a
/// leading `0` for octal), for strings without underscores.
fn go_parse_uint(s: &str, base: u32) -> Option<u64> {
    if s.is_empty() {
        return None;
    }
    let (mut base, mut digits) = (base, s);
    if base == 0 {
        base = 10;
        let b = s.as_bytes();
        if b[0] == b'0' {
            let prefixed = |p: u8| b.len() >= 3 && b[1].to_ascii_lowercase() == p;
            if prefixed(b'b') {
                (base, digits) = (2, &s[2..]);
            } else if prefixed(b'o') {
                (base, digits) = (8, &s[2..]);
            } else if prefixed(b'x') {
                (base, digits) = (16, &s[2..]);
            } else {
                (base, digits) = (8, &s[1..]);
            }
        }
    }
    let mut n: u64 = 0;
    for c in digits.chars() {
        let d = c.to_digit(36)?;
        if d >= base {
            return None;
        }
        n = n.checked_mul(u64::from(base))?.checked_add(u64::from(d))?;
    }
    Some(n)
}

/// Go's `strconv.ParseInt(s, base, 64)`, for strings without underscores.
fn go_parse_int(s: &str, base: u32) -> Option<i64> {
    let (neg, rest) = match s.as_bytes().first()? {
        b'+' => (false, &s[1..]),
        b'-' => (true, &s[1..]),
        _ => (false, s),
    };
    let un = go_parse_uint(rest, base)?;
    const CUTOFF: u64 = 1 << 63;
    if !neg && un >= CUTOFF {
        return None;
    }
    if neg && un > CUTOFF {
        return None;
    }
    Some(if neg {
        (un as i64).wrapping_neg()
    } else {
        un as i64
    })
}

/// go-yaml 1.1's base-60 floats (`isBase60Float`), which it quotes though it does not read
/// them: `^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?$`.
fn is_base60_float(s: &str) -> bool {
    let b = s.as_bytes();
    match b.first() {
        Some(b'+' | b'-' | b'0'..=b'9') if s.contains(':') => {}
        _ => return false,
    }
    let mut i = 0;
    if matches!(b[0], b'+' | b'-') {
        i = 1;
    }
    if !b.get(i).is_some_and(u8::is_ascii_digit) {
        return false;
    }
    while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'_') {
        i += 1;
    }
    let mut groups = 0;
    while b.get(i) == Some(&b':') {
        i += 1;
        // `[0-5]?[0-9]`: one digit, or two with the first at most 5.
        match (b.get(i), b.get(i + 1)) {
            (Some(b'0'..=b'5'), Some(b'0'..=b'9')) => i += 2,
            (Some(b'0'..=b'9'), _) => i += 1,
            _ => return false,
        }
        groups += 1;
    }
    if groups == 0 {
        return false;
    }
    if b.get(i) == Some(&b'.') {
        i += 1;
        while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'_') {
            i += 1;
        }
    }
    i == b.len()
}

/// Whether go-yaml reads `s` as a timestamp (`parseTimestamp`): four digits and a `-`, then
/// Go's `time.Parse` succeeding with one of `2006-1-2T15:4:5.999999999Z07:00`,
/// `2006-1-2t15:4:5.999999999Z07:00`, `2006-1-2 15:4:5.999999999` or `2006-1-2`.
fn is_timestamp(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() < 5 || !b[..4].iter().all(u8::is_ascii_digit) || b[4] != b'-' {
        return false;
    }
    [
        Layout::Zoned(b'T'),
        Layout::Zoned(b't'),
        Layout::Spaced,
        Layout::Date,
    ]
    .into_iter()
    .any(|l| parses_as(b, l))
}

#[derive(Clone, Copy)]
enum Layout {
    /// `2006-1-2<sep>15:4:5.999999999Z07:00`.
    Zoned(u8),
    /// `2006-1-2 15:4:5.999999999`.
    Spaced,
    /// `2006-1-2`.
    Date,
}

/// Go's `time.Parse` of `b` with `layout`, as far as success goes.
fn parses_as(b: &[u8], layout: Layout) -> bool {
    // Go's `getnum(s, false)`: one digit, or two.
    fn num(b: &[u8], i: &mut usize) -> Option<u32> {
        let d0 = *b.get(*i).filter(|c| c.is_ascii_digit())?;
        *i += 1;
        match b.get(*i).filter(|c| c.is_ascii_digit()) {
            Some(&d1) => {
                *i += 1;
                Some(u32::from(d0 - b'0') * 10 + u32::from(d1 - b'0'))
            }
            None => Some(u32::from(d0 - b'0')),
        }
    }
    fn lit(b: &[u8], i: &mut usize, c: u8) -> Option<()> {
        (b.get(*i) == Some(&c)).then(|| *i += 1)
    }
    let parse = || -> Option<()> {
        let year: u32 = std::str::from_utf8(&b[..4]).ok()?.parse().ok()?;
        let mut i = 5;
        let month = num(b, &mut i)?;
        if !(1..=12).contains(&month) {
            return None;
        }
        lit(b, &mut i, b'-')?;
        let day = num(b, &mut i)?;
        if !matches!(layout, Layout::Date) {
            match layout {
                Layout::Zoned(sep) => lit(b, &mut i, sep)?,
                // A space of the layout takes one or more (or none at the end).
                _ => {
                    if i < b.len() && b[i] != b' ' {
                        return None;
                    }
                    while b.get(i) == Some(&b' ') {
                        i += 1;
                    }
                }
            }
            if num(b, &mut i)? >= 24 {
                return None;
            }
            lit(b, &mut i, b':')?;
            if num(b, &mut i)? >= 60 {
                return None;
            }
            lit(b, &mut i, b':')?;
            if num(b, &mut i)? >= 60 {
                return None;
            }
            // `.999999999`: a `.` or `,` and digits, or nothing.
            if matches!(b.get(i), Some(b'.' | b',')) && b.get(i + 1).is_some_and(u8::is_ascii_digit)
            {
                i += 1;
                while b.get(i).is_some_and(u8::is_ascii_digit) {
                    i += 1;
                }
            }
            if let Layout::Zoned(_) = layout {
                // `Z07:00`: `Z`, or `±hh:mm`.
                if b.get(i) == Some(&b'Z') {
                    i += 1;
                } else {
                    let z = b.get(i..i + 6)?;
                    if z[3] != b':' || !matches!(z[0], b'+' | b'-') {
                        return None;
                    }
                    let two = |x: &[u8]| {
                        (x[0].is_ascii_digit() && x[1].is_ascii_digit())
                            .then(|| u32::from(x[0] - b'0') * 10 + u32::from(x[1] - b'0'))
                    };
                    if two(&z[1..3])? > 24 || two(&z[4..6])? > 60 {
                        return None;
                    }
                    i += 6;
                }
            }
        }
        if i != b.len() {
            return None;
        }
        let days = crate::builtin::time::days_in(i64::from(month), i64::from(year));
        (1..=days).contains(&i64::from(day)).then_some(())
    };
    parse().is_some()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn y(v: Value) -> String {
        to_yaml(&v)
    }

    #[test]
    fn an_object_as_kubectl_shows_it() {
        let cm = json!({
            "kind": "ConfigMap",
            "apiVersion": "v1",
            "metadata": {
                "name": "a",
                "namespace": "default",
                "uid": "0b5f9c1e-1111-2222-3333-444455556666",
                "resourceVersion": "12",
                "creationTimestamp": "2024-01-02T03:04:05Z",
                "labels": {"app": "web", "tier": ""},
                "annotations": {},
                "finalizers": ["a/b", "c"],
            },
            "data": {"k": "v", "n": "1", "t": "true", "multi": "one\ntwo\n"},
        });
        assert_eq!(
            y(cm),
            "apiVersion: v1\n\
             data:\n  \
               k: v\n  \
               multi: |\n    one\n    two\n  \
               \"n\": \"1\"\n  \
               t: \"true\"\n\
             kind: ConfigMap\n\
             metadata:\n  \
               annotations: {}\n  \
               creationTimestamp: \"2024-01-02T03:04:05Z\"\n  \
               finalizers:\n  \
               - a/b\n  \
               - c\n  \
               labels:\n    \
                 app: web\n    \
                 tier: \"\"\n  \
               name: a\n  \
               namespace: default\n  \
               resourceVersion: \"12\"\n  \
               uid: 0b5f9c1e-1111-2222-3333-444455556666\n"
        );
    }

    #[test]
    fn strings_are_quoted_only_where_go_yaml_quotes_them() {
        let cases: &[(&str, &str)] = &[
            // Read back as something else: double-quoted.
            ("", "\"\""),
            ("true", "\"true\""),
            ("True", "\"True\""),
            ("yes", "\"yes\""),
            ("on", "\"on\""),
            ("n", "\"n\""),
            ("null", "\"null\""),
            ("~", "\"~\""),
            ("1", "\"1\""),
            ("-1", "\"-1\""),
            ("+1", "\"+1\""),
            ("1.5", "\"1.5\""),
            (".5", "\".5\""),
            ("1e3", "\"1e3\""),
            ("1_000", "\"1_000\""),
            ("0x1F", "\"0x1F\""),
            ("0o17", "\"0o17\""),
            ("0b101", "\"0b101\""),
            ("012", "\"012\""),
            ("1:20", "\"1:20\""),
            ("12:30:45", "\"12:30:45\""),
            (".inf", "\".inf\""),
            ("-.Inf", "\"-.Inf\""),
            ("<<", "<<"),
            ("2024-01-02", "\"2024-01-02\""),
            ("2024-1-2", "\"2024-1-2\""),
            ("2024-01-02T03:04:05Z", "\"2024-01-02T03:04:05Z\""),
            (
                "2024-01-02T03:04:05.123456Z",
                "\"2024-01-02T03:04:05.123456Z\"",
            ),
            ("2024-01-02t03:04:05+02:00", "\"2024-01-02t03:04:05+02:00\""),
            ("2024-01-02 03:04:05", "\"2024-01-02 03:04:05\""),
            ("9999999999999999999", "\"9999999999999999999\""),
            // Not what they look like: plain.
            ("2024-01-02T03:04:05", "2024-01-02T03:04:05"),
            ("2023-02-30", "2023-02-30"),
            ("2024-13-01", "2024-13-01"),
            ("08", "\"08\""),
            ("0x", "0x"),
            ("1e400", "1e400"),
            ("1.2.3", "1.2.3"),
            ("yesterday", "yesterday"),
            ("nil", "nil"),
            ("1:60", "1:60"),
            ("10.0.0.1", "10.0.0.1"),
            ("v1", "v1"),
            ("a/b", "a/b"),
            ("key:value", "key:value"),
            ("a#b", "a#b"),
            ("?x", "?x"),
            ("-x", "-x"),
            ("héllo wörld", "héllo wörld"),
            // Not writable plainly: single-quoted.
            ("-", "'-'"),
            ("- x", "'- x'"),
            ("a: b", "'a: b'"),
            ("a:", "'a:'"),
            ("a #b", "'a #b'"),
            ("#x", "'#x'"),
            ("*", "'*'"),
            ("&a", "'&a'"),
            ("!x", "'!x'"),
            ("@x", "'@x'"),
            ("`x", "'`x'"),
            ("%x", "'%x'"),
            ("[x]", "'[x]'"),
            ("{x}", "'{x}'"),
            ("'q'", "'''q'''"),
            ("\"q\"", "'\"q\"'"),
            ("---", "'---'"),
            ("...x", "'...x'"),
            (" lead", "' lead'"),
            ("trail ", "'trail '"),
            ("? x", "'? x'"),
            // Not printable: double-quoted with escapes.
            ("tab\there", "\"tab\\there\""),
            ("bell\u{7}", "\"bell\\a\""),
            ("del\u{7f}", "\"del\\x7F\""),
            ("\u{85}", "\"\\N\""),
            ("nul\0", "\"nul\\0\""),
            ("emoji 😀", "\"emoji \\U0001F600\""),
            ("\u{feff}ab", "\"\\uFEFF\\x61\\x62\""),
            ("cr\r", "\"cr\\r\""),
        ];
        for (s, want) in cases {
            assert_eq!(y(json!({ "k": s })), format!("k: {want}\n"), "{s:?}");
        }
    }

    #[test]
    fn multi_line_strings_are_literal_blocks() {
        assert_eq!(y(json!({"k": "a\nb"})), "k: |-\n  a\n  b\n");
        assert_eq!(y(json!({"k": "a\nb\n"})), "k: |\n  a\n  b\n");
        assert_eq!(y(json!({"k": "a\nb\n\n"})), "k: |+\n  a\n  b\n\n");
        assert_eq!(y(json!({"k": "\n"})), "k: |2+\n\n");
        assert_eq!(y(json!({"k": "a\n\nb"})), "k: |-\n  a\n\n  b\n");
        assert_eq!(y(json!({"k": " a\nb"})), "k: |2-\n   a\n  b\n");
        // A trailing space, a space before a break or a tab: double-quoted.
        assert_eq!(y(json!({"k": "a \nb"})), "k: \"a \\nb\"\n");
        assert_eq!(y(json!({"k": "a\nb "})), "k: \"a\\nb \"\n");
        assert_eq!(y(json!({"k": "a\n\tb"})), "k: \"a\\n\\tb\"\n");
        // Nested: the block is indented one step past its key.
        assert_eq!(
            y(json!({"a": {"b": "x\ny\n"}, "c": ["p\nq"]})),
            "a:\n  b: |\n    x\n    y\nc:\n- |-\n  p\n  q\n"
        );
    }

    #[test]
    fn collections_take_go_yaml_layout() {
        assert_eq!(y(json!({})), "{}\n");
        assert_eq!(
            y(json!({"a": [], "b": {}, "c": null, "d": [1, [2, 3], {"e": 4, "f": [5]}]})),
            "a: []\nb: {}\nc: null\nd:\n- 1\n- - 2\n  - 3\n- e: 4\n  f:\n  - 5\n"
        );
        assert_eq!(
            y(json!({"a": [{"b": {"c": [{}]}}]})),
            "a:\n- b:\n    c:\n    - {}\n"
        );
    }

    #[test]
    fn numbers_are_what_go_yaml_reads_back_from_kubes_json() {
        let cases: &[(Value, &str)] = &[
            (json!(0), "0"),
            (json!(-5), "-5"),
            (json!(u64::MAX), "18446744073709551615"),
            (json!(1.0), "1"),
            (json!(-0.0), "0"),
            (json!(1.5), "1.5"),
            (json!(1.5e10), "15000000000"),
            (json!(1e20), "1e+20"),
            (json!(1e21), "1e+21"),
            (json!(1e-7), "1e-07"),
            (json!(0.000001), "1e-06"),
            (json!(0.0001), "0.0001"),
            (json!(1234567.5), "1.2345675e+06"),
            (json!(123456.5), "123456.5"),
            (json!(true), "true"),
        ];
        for (v, want) in cases {
            assert_eq!(y(json!({ "n": v })), format!("\"n\": {want}\n"), "{v}");
        }
    }

    #[test]
    fn keys_sort_in_go_yamls_natural_order() {
        let v = json!({"b": 1, "a10": 1, "a2": 1, "a": 1, "B": 1, "_x": 1, "1": 1, "a-b": 1, "a01": 1, "a1": 1});
        let keys: Vec<String> = y(v)
            .lines()
            .map(|l| l.split(':').next().unwrap_or("").to_owned())
            .collect();
        assert_eq!(
            keys,
            ["_x", "\"1\"", "B", "a", "a-b", "a1", "a01", "a2", "a10", "b"]
        );
    }

    #[test]
    fn long_strings_fold_past_column_80() {
        let text = "APIVersion defines the versioned schema of this representation of an object. Servers should convert recognized schemas to the latest internal value.";
        assert_eq!(
            y(json!({"description": text})),
            "description: APIVersion defines the versioned schema of this representation of an\n  \
             object. Servers should convert recognized schemas to the latest internal value.\n"
        );
        // A word is never split; a quoted string folds with the quotes kept.
        let quoted = format!("{text}: tail");
        assert_eq!(
            y(json!({"d": quoted})),
            "d: 'APIVersion defines the versioned schema of this representation of an object. Servers\n  \
             should convert recognized schemas to the latest internal value.: tail'\n"
        );
        // A simple key is never folded.
        let key = "k ".repeat(50);
        let key = key.trim_end();
        assert_eq!(y(json!({ key: 1 })), format!("{key}: 1\n"));
    }

    #[test]
    fn long_keys_are_complex_keys() {
        let key = "k".repeat(129);
        assert_eq!(y(json!({ &key: "v" })), format!("? {key}\n: v\n"));
        assert_eq!(y(json!({ &key: {"a": 1} })), format!("? {key}\n: a: 1\n"));
        let key = "k".repeat(128);
        assert_eq!(y(json!({ &key: "v" })), format!("{key}: v\n"));
        assert_eq!(y(json!({"a\nb": 1})), "? |-\n  a\n  b\n: 1\n");
    }

    #[test]
    fn a_list_written_an_item_at_a_time_is_the_whole_list() {
        let items = vec![json!({"a": 1, "b": ["x"]}), json!({"c": "d\ne"})];
        let whole = y(
            json!({"apiVersion": "v1", "items": items, "kind": "List", "metadata": {"resourceVersion": "3"}}),
        );
        let mut e = Emitter::new();
        e.begin_mapping();
        e.key("apiVersion");
        e.value(&json!("v1"));
        e.key("items");
        e.begin_items(false);
        let mut pieces = e.take();
        for item in &items {
            e.item(item);
            pieces.push_str(&e.take());
        }
        e.end_items();
        e.key("kind");
        e.value(&json!("List"));
        e.key("metadata");
        e.value(&json!({"resourceVersion": "3"}));
        e.end_mapping();
        e.end_document();
        pieces.push_str(&e.take());
        assert_eq!(pieces, whole);
        let mut e = Emitter::new();
        e.begin_mapping();
        e.key("items");
        e.begin_items(true);
        e.key("kind");
        e.value(&json!("List"));
        e.end_mapping();
        e.end_document();
        assert_eq!(e.take(), "items: []\nkind: List\n");
    }
}
