//! The enums of kube's built-in types (`host/src/builtin/enums.json`), written by `cargo xtask
//! import-gotypes` from the Go packages it reads: what kube-openapi's generator
//! (`pkg/generators/enum.go` and `openapi.go` at kube 1.34's f3f2b991) gives a field whose type
//! is an enum, and that kubernetes-json-schema's definitions lack.
//!
//! - An enum type is a named type whose underlying type is `string` with `+enum` in its doc
//!   comment (`isEnumType`). Its values are the string constants of that type, in any package
//!   read, one per value: of two, the longer comment wins, then the smaller (`addIfNotPresent`).
//! - Its `enum` is the values quoted as Go does (`%q`), sorted, and unquoted (`ValueStrings`).
//! - Its description lines (`DescriptionLines`) are, per value, `` - `"VALUE"` COMMENT``, the
//!   comment being the constant's comment lines joined with spaces, trimmed, the constant's name
//!   cut off its front, trimmed, each run of whitespace one space; sorted; after an empty line
//!   and `Possible enum values:`; none when the type has no constants (and no `enum` either).
//! - A field of the type, or a pointer to it, gets both: the lines are appended to the field's
//!   comment lines and the whole run through `generateDescription` (text after a `---` line
//!   dropped, `TODO` and `+` lines skipped, an empty line a paragraph break, an indented line
//!   kept on its own line, others joined with spaces, then trimmed). What the table keeps is
//!   the text that follows the field's own description: `\n\nPossible enum values:\n - ...`,
//!   `\n\n\n...` when the comment ends with an empty line before its tags, all of it when the
//!   field has no comment. A field with `json:",string"` gets the lines but no `enum`.
//! - A list of it (`[]T`, `[]*T`) or a map to it (`map[K]T`) gets the `enum` on its `items` or
//!   `additionalProperties` (the table's `path`), and no lines; through named list and map types.
//! - A struct's `json:",inline"` fields stand for the fields of their type, as kube's
//!   definitions have them (`RuleWithOperations` has `Rule`'s).
//!
//! The Go source is read as gengo (kube-openapi's parser, `k8s.io/gengo/v2` at 85fd79db) sees
//! it. A doc comment is the comment group that ends on the line before the name it documents
//! (go/parser's groups, go/ast's `CommentGroup.Text`). A Go type alias (`type A = v1.B`) is the
//! type it names, and its doc comment replaces that type's: gengo adds packages to its universe
//! by sorted import path (each followed, depth first, by the packages it imports that are read
//! and not yet added; Go visits those in random order, here sorted) and a package's names
//! sorted, each declaration overwriting the comment, so the last alias decides whether the type
//! is `+enum` (kube 1.34's `admissionregistration` v1 `ScopeType` and `ReinvocationPolicyType`
//! are not: `v1beta1` aliases them without the marker). Constants are evaluated when they are
//! string literals, constants, conversions (`T("x")`, `T(v1.X)`), parenthesized or joined with
//! `+`; a constant's type is the one it declares, or that of its conversion or constant.
//! The code is scanned line by line, as gofmt lays it out: `type NAME ...` and `const` at the
//! start of a line, `type (` and `const (` blocks, a struct's fields one to a line up to the
//! `}` at its indentation.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;

use anyhow::{Context, Result};
use serde_json::{Map, Value};

const HEADER: &str = "Possible enum values:";

/// Go's predeclared types: no package's.
const BUILTIN: &[&str] = &[
    "bool",
    "string",
    "int",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "uintptr",
    "float32",
    "float64",
    "complex64",
    "complex128",
    "byte",
    "rune",
    "error",
    "any",
];

/// One Go package as read: the OpenAPI name of its definitions' package
/// (`io.k8s.api.core.v1`), its import path, and its source files.
pub struct Source {
    pub name: String,
    pub path: String,
    pub files: Vec<String>,
}

/// Write `host/src/builtin/enums.json` from the packages, keeping the definitions and fields
/// that `defs` (`definitions.json`'s) has.
pub fn write(sources: Vec<Source>, defs: &Map<String, Value>, root: &Path) -> Result<()> {
    let mut pkgs = Vec::new();
    for s in sources {
        let mut p = Package {
            name: s.name,
            path: s.path,
            imports: Vec::new(),
            types: HashMap::new(),
            structs: HashMap::new(),
            struct_order: Vec::new(),
            consts: Vec::new(),
        };
        for (file, text) in s.files.iter().enumerate() {
            parse_file(&mut p, file, text);
        }
        pkgs.push(p);
    }
    let u = Universe::new(&pkgs);

    // Each enum type's values: (constant name, value, comment).
    let mut enums: HashMap<Ref, Vec<(String, String, String)>> = HashMap::new();
    for p in &pkgs {
        for name in p.types.keys() {
            let r = (p.path.clone(), name.clone());
            if u.is_enum(Some(&r)) {
                enums.insert(r, Vec::new());
            }
        }
    }
    for p in &pkgs {
        for c in &p.consts {
            let (value, typ) = u.const_value(&p.path, &c.name);
            let (Some(value), Some(typ)) = (value, typ) else {
                continue;
            };
            let Some(values) = enums.get_mut(&typ) else {
                continue;
            };
            let comment = c.doc.join(" ");
            match values.iter().position(|v| v.1 == value) {
                Some(k) => {
                    let v = &mut values[k];
                    if v.2.len() < comment.len() || (v.2.len() == comment.len() && v.2 > comment) {
                        *v = (c.name.clone(), value, comment);
                    }
                }
                None => values.push((c.name.clone(), value, comment)),
            }
        }
    }

    let mut table: BTreeMap<String, BTreeMap<String, Entry>> = BTreeMap::new();
    let mut found = 0;
    let mut differ = 0;
    for p in &pkgs {
        for sname in &p.struct_order {
            let key = format!("{}.{}", p.name, sname);
            let props = defs
                .get(&key)
                .and_then(|d| d.get("properties"))
                .and_then(Value::as_object);
            for (f, fp) in u.members(p, sname, 0) {
                if f.json.is_empty() || f.json == "-" {
                    continue;
                }
                let Some((r, path)) = u.field_enum(fp, f.file, &f.go_type) else {
                    continue;
                };
                let values = enums.get(&r).map_or(&[][..], Vec::as_slice);
                let mut entry = Entry {
                    description: None,
                    values: Vec::new(),
                    path: Vec::new(),
                };
                if path.is_empty() {
                    let mut lines = f.doc.clone();
                    if !values.is_empty() {
                        let mut described: Vec<String> = values
                            .iter()
                            .map(|(n, v, c)| description_line(n, v, c))
                            .collect();
                        described.sort();
                        lines.push(String::new());
                        lines.push(HEADER.to_string());
                        lines.extend(described);
                    }
                    let full = generate_description(&lines);
                    if let Some(at) = full.find(HEADER) {
                        // The field's own description, as kube's spec has it with the enum
                        // pruned (and so kubernetes-json-schema's), then what follows it.
                        let own = full[..at].trim();
                        entry.description = Some(full[own.len()..].to_string());
                        if let Some(have) = props.and_then(|ps| ps.get(&f.json)) {
                            let have = have
                                .get("description")
                                .and_then(Value::as_str)
                                .unwrap_or("");
                            if own != have {
                                differ += 1;
                                eprintln!(
                                    "enums.json: {key}.{}: the Go comment makes another description than definitions.json's",
                                    f.json
                                );
                            }
                        }
                    }
                    if f.opts.first().map(String::as_str) != Some("string") && !values.is_empty() {
                        entry.values = sorted_values(values);
                    }
                } else if !values.is_empty() {
                    entry.values = sorted_values(values);
                    entry.path = path;
                }
                if entry.description.is_none() && entry.values.is_empty() {
                    continue;
                }
                found += 1;
                if !props.is_some_and(|ps| ps.contains_key(&f.json)) {
                    continue;
                }
                table
                    .entry(key.clone())
                    .or_default()
                    .insert(f.json.clone(), entry);
            }
        }
    }
    let fields: usize = table.values().map(BTreeMap::len).sum();
    eprintln!(
        "enums.json: {} enum types ({} without constants), {found} fields; {} not in definitions.json, {differ} with another description",
        enums.len(),
        enums.values().filter(|v| v.is_empty()).count(),
        found - fields
    );
    let path = root.join("host/src/builtin/enums.json");
    std::fs::write(&path, render(&table)?)
        .with_context(|| format!("writing {}", path.display()))?;
    println!(
        "wrote {} ({} types, {fields} fields)",
        path.display(),
        table.len()
    );
    Ok(())
}

/// What a field gets: the text appended to its description, its `enum`, and the path from the
/// property to the schema the `enum` is on (empty: the property's own).
struct Entry {
    description: Option<String>,
    values: Vec<String>,
    path: Vec<&'static str>,
}

/// The table as Python's `json.dump(table, f, indent=0, separators=(',', ':'),
/// sort_keys=True, ensure_ascii=False)` writes it, as the other tables are.
fn render(table: &BTreeMap<String, BTreeMap<String, Entry>>) -> Result<String> {
    if table.is_empty() {
        return Ok("{}".to_string());
    }
    let mut types = Vec::new();
    for (name, fields) in table {
        let mut members = Vec::new();
        for (field, e) in fields {
            let mut keys = Vec::new();
            if let Some(d) = &e.description {
                keys.push(format!("\"description\":{}", serde_json::to_string(d)?));
            }
            if !e.values.is_empty() {
                keys.push(format!("\"enum\":{}", render_list(&e.values)?));
            }
            if !e.path.is_empty() {
                keys.push(format!("\"path\":{}", render_list(&e.path)?));
            }
            members.push(format!(
                "{}:{{\n{}\n}}",
                serde_json::to_string(field)?,
                keys.join(",\n")
            ));
        }
        types.push(format!(
            "{}:{{\n{}\n}}",
            serde_json::to_string(name)?,
            members.join(",\n")
        ));
    }
    Ok(format!("{{\n{}\n}}", types.join(",\n")))
}

fn render_list<S: AsRef<str>>(items: &[S]) -> Result<String> {
    let mut out = Vec::new();
    for i in items {
        out.push(serde_json::to_string(i.as_ref())?);
    }
    Ok(format!("[\n{}\n]", out.join(",\n")))
}

/// `ValueStrings`: sorted as Go quotes them.
fn sorted_values(values: &[(String, String, String)]) -> Vec<String> {
    let mut quoted: Vec<(String, String)> = values
        .iter()
        .map(|(_, v, _)| (go_quote(v), v.clone()))
        .collect();
    quoted.sort();
    quoted.into_iter().map(|(_, v)| v).collect()
}

// ---- lexing: the code without comments, and the comments with their lines ----

struct Comment {
    first: usize,
    last: usize,
    /// With its markers (`// ...`, `/* ... */`).
    text: String,
    /// Code before it on its first line, after it on its last.
    code_before: bool,
    code_after: bool,
}

/// The text's lines with every comment removed (literals kept), and its comments; lines are
/// counted from 0.
fn lex(text: &str) -> (Vec<String>, Vec<Comment>) {
    let chars: Vec<char> = text.chars().collect();
    let n = chars.len();
    let mut code = Vec::new();
    let mut cur = String::new();
    let mut comments: Vec<Comment> = Vec::new();
    let mut line = 0;
    let mut has_code = false;
    let mut i = 0;
    while i < n {
        let c = chars[i];
        if c == '\n' {
            code.push(std::mem::take(&mut cur));
            line += 1;
            has_code = false;
            i += 1;
        } else if c == '/' && chars.get(i + 1) == Some(&'/') {
            let j = find(&chars, i, &['\n']).unwrap_or(n);
            comments.push(Comment {
                first: line,
                last: line,
                text: chars[i..j].iter().collect(),
                code_before: has_code,
                code_after: false,
            });
            i = j;
        } else if c == '/' && chars.get(i + 1) == Some(&'*') {
            let j = find(&chars, i + 2, &['*', '/']).map_or(n, |j| j + 2);
            let body: String = chars[i..j].iter().collect();
            let lines = body.matches('\n').count();
            comments.push(Comment {
                first: line,
                last: line + lines,
                text: body,
                code_before: has_code,
                code_after: false,
            });
            for _ in 0..lines {
                code.push(std::mem::take(&mut cur));
                line += 1;
                has_code = false;
            }
            i = j;
        } else if c == '"' || c == '\'' {
            let mut j = i + 1;
            while j < n && chars[j] != c && chars[j] != '\n' {
                j += if chars[j] == '\\' { 2 } else { 1 };
            }
            j = j.min(n);
            if j < n && chars[j] == c {
                j += 1;
            }
            cur.extend(&chars[i..j]);
            saw_code(&mut has_code, &mut comments, line);
            i = j;
        } else if c == '`' {
            let j = find(&chars, i + 1, &['`']).map_or(n, |j| j + 1);
            let raw: String = chars[i..j].iter().collect();
            let parts: Vec<&str> = raw.split('\n').collect();
            for (k, part) in parts.iter().enumerate() {
                cur.push_str(part);
                if k + 1 < parts.len() {
                    code.push(std::mem::take(&mut cur));
                    line += 1;
                }
            }
            saw_code(&mut has_code, &mut comments, line);
            i = j;
        } else {
            if !c.is_whitespace() {
                saw_code(&mut has_code, &mut comments, line);
            }
            cur.push(c);
            i += 1;
        }
    }
    code.push(cur);
    (code, comments)
}

/// Where `pat` next starts in `chars`, from `from`.
fn find(chars: &[char], from: usize, pat: &[char]) -> Option<usize> {
    (from..chars.len()).find(|&k| chars[k..].starts_with(pat))
}

fn saw_code(has_code: &mut bool, comments: &mut [Comment], line: usize) {
    *has_code = true;
    if let Some(c) = comments.last_mut() {
        if c.last == line {
            c.code_after = true;
        }
    }
}

/// go/parser's comment groups, by the line each ends on: a comment after code on its line
/// starts a group of the comments on that line; any other joins the comment before it when it
/// starts at most a line after that one ends, with no code between.
fn comment_groups(comments: &[Comment]) -> HashMap<usize, Vec<String>> {
    let mut by_end = HashMap::new();
    let mut i = 0;
    while i < comments.len() {
        let first = &comments[i];
        let mut group = vec![first.text.clone()];
        let mut end = first.last;
        let slack = if first.code_before { 0 } else { 1 };
        let mut followed = first.code_after;
        i += 1;
        while i < comments.len() {
            let c = &comments[i];
            if followed || c.code_before || c.first > end + slack {
                break;
            }
            group.push(c.text.clone());
            end = c.last;
            followed = c.code_after;
            i += 1;
        }
        by_end.insert(end, group);
    }
    by_end
}

/// go/ast's `CommentGroup.Text()`, split into lines as gengo's `splitLines` does: markers
/// removed (and a `//`'s first space; directives like `//go:build` dropped), trailing
/// whitespace trimmed, leading empty lines dropped, runs of empty lines one, trailing ones none.
fn text_lines(group: Option<&Vec<String>>) -> Vec<String> {
    let Some(group) = group else {
        return Vec::new();
    };
    let mut lines: Vec<String> = Vec::new();
    for c in group {
        let body = if let Some(rest) = c.strip_prefix("//") {
            match rest.strip_prefix(' ') {
                Some(r) => r,
                None if is_directive(rest) => continue,
                None => rest,
            }
        } else {
            let inner = c.strip_prefix("/*").unwrap_or(c);
            inner.strip_suffix("*/").unwrap_or(inner)
        };
        for l in body.split('\n') {
            lines.push(l.trim_end_matches([' ', '\t', '\n', '\r']).to_string());
        }
    }
    let mut out: Vec<String> = Vec::new();
    for l in lines {
        if !l.is_empty() || out.last().is_some_and(|p| !p.is_empty()) {
            out.push(l);
        }
    }
    if out.last().is_some_and(|p| !p.is_empty()) {
        out.push(String::new());
    }
    let text = out.join("\n");
    let split: Vec<String> = text
        .trim_end_matches('\n')
        .split('\n')
        .map(str::to_string)
        .collect();
    if split.len() == 1 && split[0].is_empty() {
        return Vec::new();
    }
    split
}

/// go/ast's `isDirective`, of a `//` comment less its `//`.
fn is_directive(c: &str) -> bool {
    if c.starts_with("line ") || c.starts_with("extern ") || c.starts_with("export ") {
        return true;
    }
    let Some(colon) = c.find(':') else {
        return false;
    };
    if colon == 0 || colon + 1 >= c.len() {
        return false;
    }
    c.bytes()
        .take(colon + 2)
        .enumerate()
        .all(|(k, b)| k == colon || b.is_ascii_lowercase() || b.is_ascii_digit())
}

// ---- declarations ----

type Ref = (String, String);

struct TypeDecl {
    /// The underlying type as written (`string`, `struct {`, `[]Foo`), or an alias's target.
    under: String,
    alias: bool,
    doc: Vec<String>,
    file: usize,
}

struct Field {
    /// The json tag's name, or without one the field's name (an embedded field's: its type's).
    json: String,
    /// The json tag's options (`omitempty`, `inline`, `string`).
    opts: Vec<String>,
    go_type: String,
    doc: Vec<String>,
    file: usize,
}

struct Const {
    name: String,
    typ: Option<String>,
    expr: Option<String>,
    doc: Vec<String>,
    file: usize,
}

struct Package {
    name: String,
    path: String,
    /// Per file: import name -> import path.
    imports: Vec<HashMap<String, String>>,
    types: HashMap<String, TypeDecl>,
    structs: HashMap<String, Vec<Field>>,
    struct_order: Vec<String>,
    consts: Vec<Const>,
}

/// The length of the identifier `s` starts with (ASCII), or 0.
fn ident_len(s: &str) -> usize {
    match s.chars().next() {
        Some(c) if c.is_ascii_alphabetic() || c == '_' => {}
        _ => return 0,
    }
    s.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(s.len())
}

/// The length of the `Name` or `pkg.Name` `s` starts with, or 0.
fn qualified_len(s: &str) -> usize {
    let a = ident_len(s);
    if a == 0 {
        return 0;
    }
    match s[a..].strip_prefix('.') {
        Some(rest) if ident_len(rest) > 0 => a + 1 + ident_len(rest),
        _ => a,
    }
}

/// Whether `s` is a type name, `Name` or `pkg.Name`.
fn is_named(s: &str) -> bool {
    !s.is_empty() && qualified_len(s) == s.len()
}

fn parse_imports(code: &[String]) -> HashMap<String, String> {
    let mut imports = HashMap::new();
    let mut in_block = false;
    for l in code {
        let s = l.trim();
        let spec = if in_block {
            if s == ")" {
                in_block = false;
                continue;
            }
            import_spec(s)
        } else if l.starts_with("import (") {
            in_block = true;
            None
        } else if l.starts_with("import ") {
            import_spec(s["import".len()..].trim_start())
        } else {
            None
        };
        if let Some((name, path)) = spec {
            imports.insert(name, path);
        }
    }
    imports
}

/// `[NAME] "PATH"`: (the name, or the path's last element; the path).
fn import_spec(s: &str) -> Option<(String, String)> {
    let (name, rest) = if s.starts_with('"') {
        (None, s)
    } else {
        let end = s.find(char::is_whitespace)?;
        let name = &s[..end];
        if !(name == "." || ident_len(name) == name.len()) {
            return None;
        }
        (Some(name), s[end..].trim_start())
    };
    let path = rest.strip_prefix('"')?.strip_suffix('"')?;
    if path.is_empty() || path.contains('"') {
        return None;
    }
    let name = match name {
        Some(n) => n.to_string(),
        None => path.rsplit('/').next().unwrap_or(path).to_string(),
    };
    Some((name, path.to_string()))
}

/// A spec that goes on after a line ending in `+`, `(` or `,`: its text and its last line.
fn continued(code: &[String], mut i: usize, first: &str) -> (String, usize) {
    let mut s = first.to_string();
    while (s.ends_with('+') || s.ends_with('(') || s.ends_with(',')) && i + 1 < code.len() {
        i += 1;
        s = format!("{s} {}", code[i].trim());
    }
    (s, i)
}

fn parse_file(pkg: &mut Package, file: usize, text: &str) {
    let (code, comments) = lex(text);
    let groups = comment_groups(&comments);
    let doc = |line: usize| -> Vec<String> {
        match line.checked_sub(1) {
            Some(before) => text_lines(groups.get(&before)),
            None => Vec::new(),
        }
    };
    pkg.imports.push(parse_imports(&code));
    let n = code.len();
    let mut i = 0;
    while i < n {
        let l = code[i].trim_end();
        if l == "type (" {
            i += 1;
            while i < n && code[i].trim() != ")" {
                let line = code[i].trim_end();
                let body = line.trim_start();
                if body.len() < line.len() {
                    if let Some((name, under, alias)) = type_spec(body) {
                        i = type_decl(pkg, file, &code, i, name, under, alias, &doc);
                    }
                }
                i += 1;
            }
        } else if let Some(rest) = l.strip_prefix("type ") {
            if let Some((name, under, alias)) = type_spec(rest) {
                i = type_decl(pkg, file, &code, i, name, under, alias, &doc);
            }
        } else if l == "const (" {
            i += 1;
            let mut prev = None;
            while i < n && code[i].trim() != ")" {
                let first = i;
                let (s, last) = continued(&code, i, code[i].trim());
                i = last;
                if !s.is_empty() {
                    prev = const_spec(pkg, file, &s, doc(first), prev);
                }
                i += 1;
            }
        } else if let Some(rest) = l.strip_prefix("const ") {
            let first = i;
            let (s, last) = continued(&code, i, rest.trim());
            i = last;
            const_spec(pkg, file, &s, doc(first), None);
        }
        i += 1;
    }
}

/// `NAME[TYPEPARAMS] UNDERLYING` or `NAME = TARGET`: (name, underlying or target, alias).
fn type_spec(s: &str) -> Option<(String, String, bool)> {
    let n = ident_len(s);
    if n == 0 {
        return None;
    }
    let mut rest = &s[n..];
    if let Some(r) = rest.strip_prefix('[') {
        rest = &r[r.find(']')? + 1..];
    }
    let after = rest.trim_start();
    if after.len() == rest.len() {
        return None;
    }
    let (alias, under) = match after.strip_prefix('=') {
        Some(target) => (true, target.trim_start()),
        None => (false, after),
    };
    Some((s[..n].to_string(), under.trim().to_string(), alias))
}

/// Record a type; a struct's fields run to the `}` at its declaration's indentation. The
/// declaration's last line.
#[allow(clippy::too_many_arguments)]
fn type_decl(
    pkg: &mut Package,
    file: usize,
    code: &[String],
    i: usize,
    name: String,
    under: String,
    alias: bool,
    doc: &dyn Fn(usize) -> Vec<String>,
) -> usize {
    let is_struct = !alias && under == "struct {";
    pkg.types.insert(
        name.clone(),
        TypeDecl {
            under,
            alias,
            doc: doc(i),
            file,
        },
    );
    if !is_struct {
        return i;
    }
    let line = &code[i];
    let indent = &line[..line.len() - line.trim_start().len()];
    let close = format!("{indent}}}");
    let mut j = i + 1;
    while j < code.len() && code[j].trim_end() != close {
        j += 1;
    }
    let fields = struct_fields(code, i + 1, j, file, doc);
    pkg.structs.insert(name.clone(), fields);
    pkg.struct_order.push(name);
    j
}

fn struct_fields(
    code: &[String],
    start: usize,
    end: usize,
    file: usize,
    doc: &dyn Fn(usize) -> Vec<String>,
) -> Vec<Field> {
    let mut fields = Vec::new();
    for (k, line) in code.iter().enumerate().take(end).skip(start) {
        let Some((name, go_type, tag)) = field_line(line) else {
            continue;
        };
        let (json, opts): (String, Vec<String>) = match last_json_tag(tag) {
            Some(v) => {
                let mut parts = v.split(',');
                let first = parts.next().unwrap_or("").to_string();
                (first, parts.map(str::to_string).collect())
            }
            None => {
                let name = match name {
                    Some(n) => n.to_string(),
                    None => go_type
                        .trim_start_matches('*')
                        .rsplit('.')
                        .next()
                        .unwrap_or("")
                        .to_string(),
                };
                (name, Vec::new())
            }
        };
        fields.push(Field {
            json,
            opts,
            go_type: go_type.to_string(),
            doc: doc(k),
            file,
        });
    }
    fields
}

/// An indented field line, ``Name Type `tag` `` or an embedded ``*pkg.Type `tag` `` (the tag
/// optional): (its name, or none when embedded; its type; its tag without the backquotes).
fn field_line(l: &str) -> Option<(Option<&str>, &str, &str)> {
    let s = l.trim_start();
    if s.len() == l.len() {
        return None;
    }
    let n = ident_len(s);
    if n > 0 {
        let after = &s[n..];
        let t = after.trim_start();
        if t.len() < after.len() {
            let len = t
                .find(|c: char| c.is_whitespace() || c == '`')
                .unwrap_or(t.len());
            if len > 0 {
                if let Some(tag) = tag_rest(&t[len..]) {
                    return Some((Some(&s[..n]), &t[..len], tag));
                }
            }
        }
    }
    let star = usize::from(s.starts_with('*'));
    let q = qualified_len(&s[star..]);
    if q == 0 {
        return None;
    }
    let tag = tag_rest(&s[star + q..])?;
    Some((None, &s[..star + q], tag))
}

/// What ends a field line: nothing, or a tag in backquotes; the tag's text.
fn tag_rest(s: &str) -> Option<&str> {
    let s = s.trim();
    if s.is_empty() {
        return Some("");
    }
    let inner = s.strip_prefix('`')?.strip_suffix('`')?;
    if inner.contains('`') {
        return None;
    }
    Some(inner)
}

/// The value of the last `json:"..."` in a struct tag.
fn last_json_tag(tag: &str) -> Option<&str> {
    let mut found = None;
    let mut from = 0;
    while let Some(at) = tag[from..].find("json:\"") {
        let start = from + at + "json:\"".len();
        match tag[start..].find('"') {
            Some(q) => {
                found = Some(&tag[start..start + q]);
                from = start + q + 1;
            }
            None => from = from + at + 1,
        }
    }
    found
}

/// What a bare spec in a `const (` block repeats: the previous spec's type and expressions.
type Repeat = Option<(Option<String>, Vec<String>)>;

/// One const spec: `A T = X`, `A = X`, `A, B T = X, Y`, or `A` repeating the one before.
fn const_spec(pkg: &mut Package, file: usize, s: &str, doc: Vec<String>, prev: Repeat) -> Repeat {
    let Some((names, typ, expr)) = parse_const(s) else {
        eprintln!(
            "enums.json: a const spec not understood in {}: {s}",
            pkg.path
        );
        return prev;
    };
    let (typ, exprs) = match expr {
        Some(e) => (
            typ,
            split_top(&e, ',')
                .into_iter()
                .map(|x| x.trim().to_string())
                .collect::<Vec<_>>(),
        ),
        None => prev?,
    };
    for (k, name) in names.into_iter().enumerate() {
        pkg.consts.push(Const {
            name,
            typ: typ.clone(),
            expr: exprs.get(k).cloned(),
            doc: doc.clone(),
            file,
        });
    }
    Some((typ, exprs))
}

/// `NAME[, NAME...] [TYPE] [= EXPRS]`: (names, type, the expressions' text).
fn parse_const(s: &str) -> Option<(Vec<String>, Option<String>, Option<String>)> {
    let n = ident_len(s);
    if n == 0 {
        return None;
    }
    let mut names = vec![s[..n].to_string()];
    let mut p = n;
    while let Some(after) = s[p..].trim_start().strip_prefix(',') {
        let next = after.trim_start();
        let m = ident_len(next);
        if m == 0 {
            break;
        }
        names.push(next[..m].to_string());
        p = s.len() - next.len() + m;
    }
    let rest = &s[p..];
    let t = rest.trim_start();
    if t.len() < rest.len() {
        let q = qualified_len(t);
        if q > 0 {
            if let Some(expr) = const_value_part(&t[q..]) {
                return Some((names, Some(t[..q].to_string()), expr));
            }
        }
    }
    let expr = const_value_part(rest)?;
    Some((names, None, expr))
}

/// The end of a const spec: nothing (`Some(None)`), or `= EXPRS` (`Some(Some(EXPRS))`).
fn const_value_part(s: &str) -> Option<Option<String>> {
    let s = s.trim_start();
    if s.is_empty() {
        return Some(None);
    }
    Some(Some(s.strip_prefix('=')?.trim_start().to_string()))
}

/// `s` split at `sep` outside brackets and literals.
fn split_top(s: &str, sep: char) -> Vec<String> {
    let chars: Vec<char> = s.chars().collect();
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut depth = 0i32;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '"' || c == '\'' || c == '`' {
            let mut j = i + 1;
            while j < chars.len() && chars[j] != c {
                j += if chars[j] == '\\' && c != '`' { 2 } else { 1 };
            }
            cur.extend(&chars[i..(j + 1).min(chars.len())]);
            i = j + 1;
            continue;
        }
        if c == '(' || c == '[' || c == '{' {
            depth += 1;
        } else if c == ')' || c == ']' || c == '}' {
            depth -= 1;
        }
        if depth == 0 && c == sep {
            out.push(std::mem::take(&mut cur));
            i += 1;
            continue;
        }
        cur.push(c);
        i += 1;
    }
    out.push(cur);
    out
}

// ---- the universe: the types as gengo sees them ----

struct Universe<'a> {
    by_path: HashMap<&'a str, &'a Package>,
    consts: HashMap<Ref, (&'a Package, &'a Const)>,
    /// Each type's doc comment, its aliases' considered.
    docs: HashMap<Ref, Vec<String>>,
    values: RefCell<HashMap<Ref, ConstValue>>,
}

/// A constant's value as far as it is known, and the type it was converted to.
type ConstValue = (Option<String>, Option<Ref>);

impl<'a> Universe<'a> {
    fn new(pkgs: &'a [Package]) -> Self {
        let mut consts = HashMap::new();
        for p in pkgs {
            for c in &p.consts {
                consts.insert((p.path.clone(), c.name.clone()), (p, c));
            }
        }
        let mut u = Universe {
            by_path: pkgs.iter().map(|p| (p.path.as_str(), p)).collect(),
            consts,
            docs: HashMap::new(),
            values: RefCell::new(HashMap::new()),
        };
        u.docs = u.final_docs();
        u
    }

    /// The type written `Name` or `pkg.Name` in a file of `pkg`, aliases followed; none for a
    /// builtin or an unknown import.
    fn type_ref(&self, pkg: &Package, file: usize, text: &str) -> Option<Ref> {
        if let Some((import, name)) = text.split_once('.') {
            let path = pkg.imports.get(file)?.get(import)?;
            return self.canon((path.clone(), name.to_string()));
        }
        if BUILTIN.contains(&text) {
            return None;
        }
        self.canon((pkg.path.clone(), text.to_string()))
    }

    /// The type an alias (`type A = pkg.B`) stands for, through at most ten aliases.
    fn canon(&self, mut r: Ref) -> Option<Ref> {
        for _ in 0..10 {
            let Some(p) = self.by_path.get(r.0.as_str()) else {
                return Some(r);
            };
            let Some(decl) = p.types.get(&r.1) else {
                return Some(r);
            };
            if !decl.alias || !is_named(&decl.under) {
                return Some(r);
            }
            r = if let Some((import, name)) = decl.under.split_once('.') {
                let path = p.imports.get(decl.file).and_then(|m| m.get(import))?;
                (path.clone(), name.to_string())
            } else if BUILTIN.contains(&decl.under.as_str()) {
                return None;
            } else {
                (p.path.clone(), decl.under.clone())
            };
        }
        Some(r)
    }

    /// Each type's doc comment as gengo leaves it: each declaration of it or of an alias of it
    /// overwrites it, packages in the order gengo adds them, names sorted.
    fn final_docs(&self) -> HashMap<Ref, Vec<String>> {
        let mut paths: Vec<&'a str> = self.by_path.keys().copied().collect();
        paths.sort_unstable();
        let mut seen = HashSet::new();
        let mut order = Vec::new();
        for path in paths {
            self.visit(path, &mut seen, &mut order);
        }
        let mut docs = HashMap::new();
        for path in order {
            let p = self.by_path[path];
            let mut names: Vec<&String> = p.types.keys().collect();
            names.sort_unstable();
            for name in names {
                if let Some(r) = self.canon((p.path.clone(), name.clone())) {
                    docs.insert(r, p.types[name].doc.clone());
                }
            }
        }
        docs
    }

    /// A package, then depth first the packages it imports (sorted) not yet visited.
    fn visit(&self, path: &'a str, seen: &mut HashSet<&'a str>, order: &mut Vec<&'a str>) {
        let Some(p) = self.by_path.get(path).copied() else {
            return;
        };
        if !seen.insert(path) {
            return;
        }
        order.push(path);
        let mut imports: Vec<&'a str> = p
            .imports
            .iter()
            .flat_map(|m| m.values())
            .map(String::as_str)
            .collect();
        imports.sort_unstable();
        imports.dedup();
        for import in imports {
            self.visit(import, seen, order);
        }
    }

    fn underlying_is_string(&self, r: &Ref, steps: usize) -> bool {
        if steps > 10 {
            return false;
        }
        let Some(p) = self.by_path.get(r.0.as_str()) else {
            return false;
        };
        let Some(decl) = p.types.get(&r.1) else {
            return false;
        };
        if decl.under == "string" {
            return true;
        }
        if is_named(&decl.under) {
            if let Some(next) = self.type_ref(p, decl.file, &decl.under) {
                return self.underlying_is_string(&next, steps + 1);
            }
        }
        false
    }

    /// kube-openapi's `isEnumType`.
    fn is_enum(&self, r: Option<&Ref>) -> bool {
        let Some(r) = r else {
            return false;
        };
        let Some(p) = self.by_path.get(r.0.as_str()) else {
            return false;
        };
        match p.types.get(&r.1) {
            Some(d) if !d.alias => {}
            _ => return false,
        }
        self.underlying_is_string(r, 0)
            && has_enum_tag(self.docs.get(r).map_or(&[][..], Vec::as_slice))
    }

    /// A constant's string value and type, when known.
    fn const_value(&self, path: &str, name: &str) -> (Option<String>, Option<Ref>) {
        let key = (path.to_string(), name.to_string());
        if let Some(v) = self.values.borrow().get(&key) {
            return v.clone();
        }
        self.values.borrow_mut().insert(key.clone(), (None, None));
        let Some(&(p, c)) = self.consts.get(&key) else {
            return (None, None);
        };
        let (value, mut typ) = match &c.expr {
            Some(e) => self.eval(p, c.file, e),
            None => (None, None),
        };
        if let Some(t) = &c.typ {
            typ = self.type_ref(p, c.file, t);
        }
        self.values
            .borrow_mut()
            .insert(key, (value.clone(), typ.clone()));
        (value, typ)
    }

    /// A constant expression's string value and type: string literals, constants, conversions
    /// `T(x)`, parentheses and `+`.
    fn eval(&self, pkg: &Package, file: usize, expr: &str) -> (Option<String>, Option<Ref>) {
        let expr = expr.trim();
        let terms = split_top(expr, '+');
        if terms.len() > 1 {
            let mut value = String::new();
            let mut typ = None;
            for t in &terms {
                let (v, ty) = self.eval(pkg, file, t);
                let Some(v) = v else {
                    return (None, None);
                };
                value.push_str(&v);
                if typ.is_none() {
                    typ = ty;
                }
            }
            return (Some(value), typ);
        }
        if expr.starts_with('"') || expr.starts_with('`') {
            return (go_unquote(expr), None);
        }
        if let Some(inner) = expr.strip_prefix('(').and_then(|e| e.strip_suffix(')')) {
            return self.eval(pkg, file, inner);
        }
        let q = qualified_len(expr);
        if q > 0 {
            if let Some(inner) = expr[q..]
                .strip_prefix('(')
                .and_then(|e| e.strip_suffix(')'))
            {
                let (v, _) = self.eval(pkg, file, inner);
                return (v, self.type_ref(pkg, file, &expr[..q]));
            }
            if q == expr.len() {
                return match expr.split_once('.') {
                    Some((import, name)) => match pkg.imports.get(file).and_then(|m| m.get(import))
                    {
                        Some(path) => self.const_value(path, name),
                        None => (None, None),
                    },
                    None => self.const_value(&pkg.path, expr),
                };
            }
        }
        (None, None)
    }

    /// A struct's properties as kube-openapi makes them: its fields, those of its
    /// `json:",inline"` fields' types in their place; each with its package.
    fn members(
        &self,
        pkg: &'a Package,
        sname: &str,
        steps: usize,
    ) -> Vec<(&'a Field, &'a Package)> {
        let mut out = Vec::new();
        let Some(fields) = pkg.structs.get(sname) else {
            return out;
        };
        for f in fields {
            if f.opts.first().map(String::as_str) == Some("inline") && steps < 10 {
                if let Some(r) = self.type_ref(pkg, f.file, f.go_type.trim_start_matches('*')) {
                    if let Some(p2) = self.by_path.get(r.0.as_str()).copied() {
                        if p2.structs.contains_key(&r.1) {
                            out.extend(self.members(p2, &r.1, steps + 1));
                        }
                    }
                }
                continue;
            }
            out.push((f, pkg));
        }
        out
    }

    /// The enum type of a property of Go type `go_type`, and where its `enum` goes: on the
    /// property (`T`, `*T`), or down `items` and `additionalProperties`.
    fn field_enum(
        &self,
        pkg: &Package,
        file: usize,
        go_type: &str,
    ) -> Option<(Ref, Vec<&'static str>)> {
        let bare = go_type.strip_prefix('*').unwrap_or(go_type);
        if is_named(bare) {
            let r = self.type_ref(pkg, file, bare);
            if self.is_enum(r.as_ref()) {
                return r.map(|r| (r, Vec::new()));
            }
        }
        self.container_enum(pkg, file, go_type, Vec::new(), 0)
    }

    /// `resolveAliasAndPtrType`, then a list's or map's element: its enum if the element (or
    /// what it points at) is one, else on down.
    fn container_enum(
        &self,
        pkg: &Package,
        file: usize,
        t: &str,
        mut path: Vec<&'static str>,
        steps: usize,
    ) -> Option<(Ref, Vec<&'static str>)> {
        if steps > 10 {
            return None;
        }
        let t = t.trim_start_matches('*');
        if t.starts_with('[') || t.starts_with("map[") {
            let mut depth = 0i32;
            let mut close = t.len();
            for (k, c) in t.char_indices() {
                if c == '[' {
                    depth += 1;
                } else if c == ']' {
                    depth -= 1;
                    if depth == 0 {
                        close = k;
                        break;
                    }
                }
            }
            let elem = if close < t.len() { &t[close + 1..] } else { "" };
            path.push(if t.starts_with("map[") {
                "additionalProperties"
            } else {
                "items"
            });
            let bare = elem.strip_prefix('*').unwrap_or(elem);
            if is_named(bare) {
                let r = self.type_ref(pkg, file, bare);
                if self.is_enum(r.as_ref()) {
                    return r.map(|r| (r, path));
                }
            }
            return self.container_enum(pkg, file, elem, path, steps + 1);
        }
        if is_named(t) {
            let r = self.type_ref(pkg, file, t)?;
            let p2 = self.by_path.get(r.0.as_str()).copied()?;
            let decl = p2.types.get(&r.1)?;
            let u = decl.under.as_str();
            if u.starts_with('[')
                || u.starts_with("map[")
                || u.starts_with('*')
                || (is_named(u) && !BUILTIN.contains(&u))
            {
                return self.container_enum(p2, decl.file, u, path, steps + 1);
            }
        }
        None
    }
}

// ---- kube-openapi's text ----

/// gengo's `ExtractCommentTags("+", lines)` has `enum`.
fn has_enum_tag(lines: &[String]) -> bool {
    lines.iter().any(|l| {
        l.trim_matches(' ')
            .strip_prefix('+')
            .is_some_and(|t| t.split('=').next() == Some("enum"))
    })
}

/// `enumValue.Description`.
fn description_line(name: &str, value: &str, comment: &str) -> String {
    let c = comment.trim();
    let c = c.strip_prefix(name).unwrap_or(c).trim();
    let mut collapsed = String::new();
    let mut in_space = false;
    for ch in c.chars() {
        if matches!(ch, '\t' | '\n' | '\u{c}' | '\r' | ' ') {
            if !in_space {
                collapsed.push(' ');
            }
            in_space = true;
        } else {
            collapsed.push(ch);
            in_space = false;
        }
    }
    format!(" - `{}` {collapsed}", go_quote(value))
}

/// kube-openapi's `generateDescription`, less its quoting.
fn generate_description(lines: &[String]) -> String {
    let mut buf = String::new();
    for line in lines {
        if line == "---" {
            break;
        }
        let line = line.trim_end_matches(' ');
        let leading = line.trim_start_matches(' ');
        if line.is_empty() {
            buf.pop();
            buf.push_str("\n\n");
        } else if leading.starts_with("TODO") || leading.starts_with('+') {
        } else if line.starts_with(' ') || line.starts_with('\t') {
            buf.pop();
            buf.push('\n');
            buf.push_str(line);
            buf.push('\n');
        } else {
            buf.push_str(line);
            buf.push(' ');
        }
    }
    buf.trim().to_string()
}

/// `strconv.Quote`, for ASCII (Go also escapes the non-ASCII characters it cannot print).
fn go_quote(s: &str) -> String {
    let mut out = String::from("\"");
    for ch in s.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A Go string literal's value.
fn go_unquote(lit: &str) -> Option<String> {
    if let Some(raw) = lit.strip_prefix('`') {
        return Some(raw.strip_suffix('`')?.replace('\r', ""));
    }
    let body = lit.strip_prefix('"')?.strip_suffix('"')?;
    let b = body.as_bytes();
    let mut out: Vec<u8> = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'\\' {
            out.push(b[i]);
            i += 1;
            continue;
        }
        let e = *b.get(i + 1)?;
        let simple = match e {
            b'a' => Some(7),
            b'b' => Some(8),
            b'f' => Some(12),
            b'n' => Some(b'\n'),
            b'r' => Some(b'\r'),
            b't' => Some(b'\t'),
            b'v' => Some(11),
            b'\\' | b'\'' | b'"' => Some(e),
            _ => None,
        };
        if let Some(c) = simple {
            out.push(c);
            i += 2;
            continue;
        }
        match e {
            b'x' => {
                out.push(u8::from_str_radix(body.get(i + 2..i + 4)?, 16).ok()?);
                i += 4;
            }
            b'0'..=b'7' => {
                out.push(u8::from_str_radix(body.get(i + 1..i + 4)?, 8).ok()?);
                i += 4;
            }
            b'u' | b'U' => {
                let len = if e == b'u' { 4 } else { 8 };
                let code = u32::from_str_radix(body.get(i + 2..i + 2 + len)?, 16).ok()?;
                let mut utf8 = [0u8; 4];
                out.extend_from_slice(char::from_u32(code)?.encode_utf8(&mut utf8).as_bytes());
                i += 2 + len;
            }
            _ => return None,
        }
    }
    String::from_utf8(out).ok()
}
