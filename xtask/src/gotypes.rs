//! `cargo xtask import-gotypes [MIRROR_DIR]`: the fields of kube's API types that Go drops from
//! its JSON when they hold their zero value (`host/src/builtin/omitempty.json`), and those that
//! are pointers to a scalar, whose zero Go keeps when set (`host/src/builtin/pointers.json`).
//!
//! They come from kube's own Go source at the tag below, read with `git show` from local git
//! mirrors (`MIRROR_DIR/OWNER+REPO/repo`, default `/work/.mirror`): `k8s.io/api`, and the API
//! groups of apimachinery (`meta/v1`), apiextensions-apiserver and kube-aggregator. For each Go
//! struct that has any, the file lists, in struct order, the JSON names of its fields that are
//! `omitempty`, not pointers, slices or maps, and of a scalar type (bool, string, a number, or a
//! named type whose underlying type is one, resolved across packages; `types.UID` is a string),
//! keyed by the type's OpenAPI definition name (`io.k8s.api.core.v1.PodSpec`) and keeping only
//! the names `host/src/builtin/definitions.json` has. `pointers.json` is made the same way, of
//! the fields whose Go type is `*` and a scalar (`*string`, `*int32`, `*PersistentVolumeMode`),
//! `omitempty` or not. The source is scanned line by line, as gofmt lays it out:
//! `type NAME struct {` up to the next line that starts with `}`, fields as
//! ``Name Type `...json:"..."...` ``, and `type NAME UNDERLYING` for named types.
//!
//! The same packages make `host/src/builtin/enums.json`, the `enum` and description lines kube's
//! OpenAPI gives the fields of `+enum` types (see `goenums`).

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};
use serde_json::Value;

/// kube 1.34's Go modules.
const TAG: &str = "v0.34.0";

/// The mirrors read: (`OWNER+REPO`, the package folder, or "" for every `GROUP/VERSION` folder,
/// the OpenAPI name of the package, or the prefix of `GROUP.VERSION`, and the Go module).
const SOURCES: &[(&str, &str, &str, &str)] = &[
    ("kubernetes+api", "", "io.k8s.api.", "k8s.io/api"),
    (
        "kubernetes+apimachinery",
        "pkg/apis/meta/v1",
        "io.k8s.apimachinery.pkg.apis.meta.v1",
        "k8s.io/apimachinery",
    ),
    (
        "kubernetes+apiextensions-apiserver",
        "pkg/apis/apiextensions/v1",
        "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1",
        "k8s.io/apiextensions-apiserver",
    ),
    (
        "kubernetes+kube-aggregator",
        "pkg/apis/apiregistration/v1",
        "io.k8s.kube-aggregator.pkg.apis.apiregistration.v1",
        "k8s.io/kube-aggregator",
    ),
];

const SCALARS: &[&str] = &[
    "bool", "string", "int", "int32", "int64", "uint", "uint32", "uint64", "float32", "float64",
    "byte",
];

/// One Go package: its OpenAPI name, its source files joined with their comments removed, and
/// the named types it declares (`type NAME UNDERLYING`).
struct Package {
    name: String,
    text: String,
    named: HashMap<String, String>,
}

pub fn import(args: &[String], root: &Path) -> Result<()> {
    let mirrors = match args {
        [dir] => PathBuf::from(dir),
        [] => PathBuf::from("/work/.mirror"),
        _ => bail!("usage: cargo xtask import-gotypes [MIRROR_DIR]"),
    };
    // Named types by their bare name, over every package (a later package's wins);
    // `k8s.io/apimachinery/pkg/types.UID` is not in the packages read.
    let mut everywhere: HashMap<String, String> = HashMap::new();
    everywhere.insert("UID".to_string(), "string".to_string());
    let mut packages = Vec::new();
    let mut go_sources = Vec::new();
    for &(repo, prefix, def_prefix, module) in SOURCES {
        let repo_dir = mirrors.join(repo).join("repo");
        for (name, dir, sources) in read_packages(&repo_dir, prefix, def_prefix)? {
            let text = strip_comments(&sources.join("\n"));
            let named = named_types(&text);
            for (k, v) in &named {
                everywhere.insert(k.clone(), v.clone());
            }
            go_sources.push(crate::goenums::Source {
                name: name.clone(),
                path: format!("{module}/{dir}"),
                files: sources,
            });
            packages.push(Package { name, text, named });
        }
    }
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut pointers: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for package in &packages {
        for (type_name, body) in structs(&package.text) {
            let mut fields = Vec::new();
            let mut pointer_fields = Vec::new();
            for (go_type, tag) in struct_fields(body) {
                let mut parts = tag.split(',');
                let json_name = parts.next().unwrap_or("");
                let omitempty = parts.any(|p| p == "omitempty");
                if json_name.is_empty() || json_name == "-" {
                    continue;
                }
                if omitempty && is_scalar(go_type, &package.named, &everywhere) {
                    fields.push(json_name.to_string());
                }
                if go_type
                    .strip_prefix('*')
                    .is_some_and(|t| is_scalar(t, &package.named, &everywhere))
                {
                    pointer_fields.push(json_name.to_string());
                }
            }
            let key = format!("{}.{}", package.name, type_name);
            if !pointer_fields.is_empty() {
                pointers.insert(key.clone(), pointer_fields);
            }
            if !fields.is_empty() {
                out.insert(key, fields);
            }
        }
    }
    let defs_path = root.join("host/src/builtin/definitions.json");
    let defs_text = std::fs::read_to_string(&defs_path)
        .with_context(|| format!("reading {}", defs_path.display()))?;
    let defs: Value = serde_json::from_str(&defs_text)
        .with_context(|| format!("parsing {}", defs_path.display()))?;
    let defs = defs["definitions"]
        .as_object()
        .with_context(|| format!("{}: no definitions", defs_path.display()))?;
    for (table, file) in [
        (&mut out, "omitempty.json"),
        (&mut pointers, "pointers.json"),
    ] {
        let found = table.len();
        let field_count: usize = table.values().map(Vec::len).sum();
        table.retain(|k, _| defs.contains_key(k));
        eprintln!(
            "{file}: {found} types, {field_count} fields; {} not in definitions.json",
            found - table.len()
        );
        let path = root.join("host/src/builtin").join(file);
        std::fs::write(&path, render(table)?)
            .with_context(|| format!("writing {}", path.display()))?;
        println!("wrote {} ({} types)", path.display(), table.len());
    }
    crate::goenums::write(go_sources, defs, root)
}

/// The file as Python's `json.dump(out, f, indent=0, separators=(',', ':'))` writes it: every
/// key and every list element on its own line, no indentation, no final newline.
fn render(out: &BTreeMap<String, Vec<String>>) -> Result<String> {
    if out.is_empty() {
        return Ok("{}".to_string());
    }
    let mut entries = Vec::new();
    for (name, fields) in out {
        let mut items = Vec::new();
        for f in fields {
            items.push(serde_json::to_string(f)?);
        }
        entries.push(format!(
            "{}:[\n{}\n]",
            serde_json::to_string(name)?,
            items.join(",\n")
        ));
    }
    Ok(format!("{{\n{}\n}}", entries.join(",\n")))
}

fn git(repo_dir: &Path, args: &[&str]) -> Result<String> {
    let output = Command::new("git")
        .arg("-C")
        .arg(repo_dir)
        .args(args)
        .output()
        .with_context(|| format!("running git {} in {}", args.join(" "), repo_dir.display()))?;
    if !output.status.success() {
        bail!(
            "git {} in {} failed ({}): {}",
            args.join(" "),
            repo_dir.display(),
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    let text = String::from_utf8(output.stdout).with_context(|| {
        format!(
            "git {} in {}: not UTF-8",
            args.join(" "),
            repo_dir.display()
        )
    })?;
    // As Python's text mode reads it.
    Ok(text.replace("\r\n", "\n").replace('\r', "\n"))
}

/// The Go packages of one mirror at `TAG`, in the order `git ls-tree` lists their folders: with
/// `prefix`, that one folder, named `def_prefix`; without, every `GROUP/VERSION` folder, named
/// `def_prefix` + `GROUP.VERSION`. Each comes with its folder and the text of its source files,
/// less tests and generated code.
fn read_packages(
    repo_dir: &Path,
    prefix: &str,
    def_prefix: &str,
) -> Result<Vec<(String, String, Vec<String>)>> {
    let listing = git(repo_dir, &["ls-tree", "-r", TAG, "--name-only"])?;
    // (folder, package name, files), in first-seen order.
    let mut dirs: Vec<(String, String, Vec<String>)> = Vec::new();
    for file in listing.split('\n') {
        if !file.ends_with(".go") || file.ends_with("_test.go") {
            continue;
        }
        let Some((dir, _)) = file.rsplit_once('/') else {
            continue;
        };
        let name = if prefix.is_empty() {
            if !is_group_version(dir) {
                continue;
            }
            format!("{def_prefix}{}", dir.replace('/', "."))
        } else {
            if dir != prefix {
                continue;
            }
            def_prefix.to_string()
        };
        match dirs.iter().position(|e| e.0 == dir && e.1 == name) {
            Some(i) => dirs[i].2.push(file.to_string()),
            None => dirs.push((dir.to_string(), name, vec![file.to_string()])),
        }
    }
    let mut packages = Vec::new();
    for (dir, name, files) in dirs {
        let mut sources = Vec::new();
        for file in files {
            let base = file.rsplit_once('/').map_or(file.as_str(), |(_, b)| b);
            if base.starts_with("zz_generated") || file.ends_with("generated.pb.go") {
                continue;
            }
            let spec = format!("{TAG}:{file}");
            sources.push(git(repo_dir, &["show", spec.as_str()])?);
        }
        packages.push((name, dir, sources));
    }
    Ok(packages)
}

/// `GROUP/VERSION`: `[a-z0-9]+/v[0-9a-z]+`.
fn is_group_version(dir: &str) -> bool {
    fn lower(s: &str) -> bool {
        !s.is_empty()
            && s.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
    }
    match dir.split_once('/') {
        Some((group, version)) => lower(group) && version.strip_prefix('v').is_some_and(lower),
        None => false,
    }
}

/// The text with every `//` comment removed (to the end of its line).
fn strip_comments(text: &str) -> String {
    let lines: Vec<&str> = text
        .split('\n')
        .map(|line| line.split_once("//").map_or(line, |(code, _)| code))
        .collect();
    lines.join("\n")
}

fn is_word(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The leading run of word characters of `s`, and what follows it.
fn split_word(s: &str) -> (&str, &str) {
    let end = s.find(|c: char| !is_word(c)).unwrap_or(s.len());
    s.split_at(end)
}

/// The single-line declarations `type NAME UNDERLYING` (a later one of a name wins).
fn named_types(text: &str) -> HashMap<String, String> {
    let mut named = HashMap::new();
    for line in text.split('\n') {
        let Some(rest) = line.strip_prefix("type ") else {
            continue;
        };
        let (name, rest) = split_word(rest);
        let Some(rest) = rest.strip_prefix(' ') else {
            continue;
        };
        let (underlying, rest) = split_word(rest);
        if name.is_empty() || underlying.is_empty() || !rest.chars().all(char::is_whitespace) {
            continue;
        }
        named.insert(name.to_string(), underlying.to_string());
    }
    named
}

/// The structs of `text`, in order: each `type NAME struct {` line, with the lines after it up
/// to the first that starts with `}` (its body, each line with its newline).
fn structs(text: &str) -> Vec<(&str, &str)> {
    let mut found = Vec::new();
    let mut p = 0;
    while p < text.len() {
        let line_end = text[p..].find('\n').map_or(text.len(), |n| p + n);
        let name = struct_name(&text[p..line_end]).filter(|_| line_end < text.len());
        if let Some(name) = name {
            let start = line_end + 1;
            let close = if text[start..].starts_with('}') {
                Some(start)
            } else {
                text[start..].find("\n}").map(|n| start + n + 1)
            };
            if let Some(close) = close {
                found.push((name, &text[start..close]));
                // On from the line after the closing brace.
                p = text[close..]
                    .find('\n')
                    .map_or(text.len(), |n| close + n + 1);
                continue;
            }
        }
        p = line_end + 1;
    }
    found
}

/// NAME, if `line` is exactly `type NAME struct {`.
fn struct_name(line: &str) -> Option<&str> {
    let (name, rest) = split_word(line.strip_prefix("type ")?);
    if name.is_empty() || rest != " struct {" {
        return None;
    }
    Some(name)
}

/// The fields of a struct body that have a `json:"..."` tag, in order: (Go type, tag value).
fn struct_fields(body: &str) -> Vec<(&str, &str)> {
    let mut fields = Vec::new();
    let mut p = 0;
    while p < body.len() {
        let from = match field_at(body, p) {
            Some((go_type, tag, end)) => {
                fields.push((go_type, tag));
                end
            }
            None => p,
        };
        p = body[from..].find('\n').map_or(body.len(), |n| from + n + 1);
    }
    fields
}

/// The byte offset in `s` after the run of characters from `i` that satisfy `pred`.
fn skip(s: &str, i: usize, pred: impl Fn(char) -> bool) -> usize {
    s[i..].find(|c: char| !pred(c)).map_or(s.len(), |n| i + n)
}

/// A field starting at line start `p`, ``Name Type `...json:"TAG"...` ``, as the Go type, the
/// tag's value, and the offset after the tag's closing quote. Whitespace between the parts may
/// span lines; the `json:"` is the last in the struct tag.
fn field_at(body: &str, p: usize) -> Option<(&str, &str, usize)> {
    let name_start = skip(body, p, char::is_whitespace);
    let name_end = skip(body, name_start, is_word);
    let type_start = skip(body, name_end, char::is_whitespace);
    let type_end = skip(body, type_start, |c| !c.is_whitespace() && c != '`');
    let tag_start = skip(body, type_end, char::is_whitespace);
    if name_end == name_start
        || type_start == name_end
        || type_end == type_start
        || tag_start == type_end
        || !body[tag_start..].starts_with('`')
    {
        return None;
    }
    let start = tag_start + 1;
    let end = body[start..].find('`').map_or(body.len(), |n| start + n);
    for (n, _) in body[start..end].rmatch_indices("json:\"") {
        let value = start + n + "json:\"".len();
        if let Some(q) = body[value..].find('"') {
            return Some((
                &body[type_start..type_end],
                &body[value..value + q],
                value + q + 1,
            ));
        }
    }
    None
}

/// Whether a field's Go type is a scalar: a plain name (no pointer, slice or map) that is one, or
/// names one in at most five steps, through this package's named types and then everyone's
/// (`pkg.Name` by its bare name).
fn is_scalar(
    go_type: &str,
    named: &HashMap<String, String>,
    everywhere: &HashMap<String, String>,
) -> bool {
    if go_type.is_empty() || !go_type.chars().all(|c| is_word(c) || c == '.') {
        return false;
    }
    let mut t = go_type.to_string();
    let mut steps = 0;
    while !SCALARS.contains(&t.as_str()) && steps < 5 {
        let next = match t.rsplit_once('.') {
            Some((_, bare)) => everywhere.get(bare),
            None => named.get(&t).or_else(|| everywhere.get(&t)),
        };
        if let Some(next) = next {
            t = next.clone();
        }
        steps += 1;
    }
    SCALARS.contains(&t.as_str())
}
