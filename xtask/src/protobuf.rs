//! `cargo xtask import-protobuf [K8S_PB_SRC]`: the protobuf field numbers of every Kubernetes
//! message, as the host's generic protobuf decoder needs them (`host/src/builtin/protobuf.json`).
//!
//! They come from the `k8s-pb` crate (kube-rs's prost code generated from kube's
//! `generated.proto` files), which the host already depends on: each `#[prost(..., tag = "N")]`
//! field is recorded with its JSON name (matched against kube's OpenAPI definitions in
//! `host/src/builtin/definitions.json`), its wire kind, and two facts from its doc comment:
//! `+optional`, and whether the system populates it (read-only to clients); a message field
//! the JSON lacks is marked as a Go struct embedded inline.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use serde_json::{json, Value};

pub fn import(args: &[String], root: &Path) -> Result<()> {
    let src = match args {
        [dir] => PathBuf::from(dir),
        [] => find_k8s_pb()?,
        _ => bail!("usage: cargo xtask import-protobuf [PATH/TO/k8s-pb-X.Y.Z/src]"),
    };
    let defs_path = root.join("host/src/builtin/definitions.json");
    let defs: Value = serde_json::from_str(&std::fs::read_to_string(&defs_path)?)?;
    let defs = defs["definitions"].as_object().context("definitions")?;
    let mut messages = BTreeMap::new();
    let mut files = Vec::new();
    collect(&src, &mut files)?;
    for file in files {
        let rel = file.strip_prefix(&src)?.parent().context("module dir")?;
        let parts: Vec<String> = rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        if parts.is_empty() || parts[0] == "metrics" {
            continue;
        }
        let text = std::fs::read_to_string(&file)?;
        parse_file(&parts, &text, &mut messages);
    }
    // Name messages and fields as kube's OpenAPI does (`APIService`, `clusterIP`).
    let mut out = serde_json::Map::new();
    for ((package, rust_name), fields) in &messages {
        let name = openapi_name(defs, package, rust_name);
        let props = defs
            .get(&name)
            .and_then(|d| d.get("properties"))
            .and_then(Value::as_object);
        let mut list = Vec::new();
        for f in fields {
            let matched = props.and_then(|p| {
                p.keys()
                    .find(|k| squash(k) == squash(&f.rust_name))
                    .cloned()
            });
            // A message field the JSON does not have is a Go struct embedded inline
            // (`IngressRule.IngressRuleValue`, `Volume.VolumeSource`): its fields are the
            // parent's.
            let inline = matched.is_none()
                && f.kind == "message"
                && props.is_some_and(|p| embeds(&messages, f, p));
            let json_name = matched.unwrap_or_else(|| lower_camel(&f.rust_name));
            let type_name = f
                .type_ref
                .as_ref()
                .map(|(pkg, ty)| Value::String(openapi_name(defs, pkg, ty)))
                .unwrap_or(Value::Null);
            list.push(json!([
                f.tag,
                json_name,
                f.kind,
                f.label,
                type_name,
                u8::from(f.optional) | (u8::from(f.read_only) << 1) | (u8::from(inline) << 2)
            ]));
        }
        out.insert(name, Value::Array(list));
    }
    // Every message a field names must be described.
    for fields in out.values() {
        for f in fields.as_array().into_iter().flatten() {
            if let Some(ty) = f.get(4).and_then(Value::as_str) {
                if !out.contains_key(ty) {
                    bail!("a field names {ty}, which was not found");
                }
            }
        }
    }
    let path = root.join("host/src/builtin/protobuf.json");
    let mut text = serde_json::to_string(&Value::Object(out))?;
    text.push('\n');
    std::fs::write(&path, text)?;
    println!("wrote {} ({} messages)", path.display(), messages.len());
    Ok(())
}

/// Whether message field `f` is a Go struct embedded inline in a parent with JSON properties
/// `parent`: each of its scalar fields is one of the parent's (newer fields kube added after
/// this API version are not).
fn embeds(
    messages: &BTreeMap<(String, String), Vec<Field>>,
    f: &Field,
    parent: &serde_json::Map<String, Value>,
) -> bool {
    let Some(sub) = f.type_ref.as_ref().and_then(|t| messages.get(t)) else {
        return false;
    };
    let known = |name: &str| parent.keys().any(|k| squash(k) == squash(name));
    !sub.is_empty()
        && sub
            .iter()
            .all(|g| known(&g.rust_name) || (g.kind == "message" && embeds(messages, g, parent)))
}

fn find_k8s_pb() -> Result<PathBuf> {
    let home = std::env::var("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|_| std::env::var("HOME").map(|h| PathBuf::from(h).join(".cargo")))?;
    for index in std::fs::read_dir(home.join("registry/src"))? {
        let index = index?.path();
        for entry in std::fs::read_dir(&index)? {
            let p = entry?.path();
            if p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("k8s-pb-"))
            {
                return Ok(p.join("src"));
            }
        }
    }
    bail!("k8s-pb is not in the cargo registry: run `cargo fetch` first or pass its src folder")
}

fn collect(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let p = entry?.path();
        if p.is_dir() {
            collect(&p, out)?;
        } else if p.file_name().is_some_and(|n| n == "mod.rs") {
            out.push(p);
        }
    }
    Ok(())
}

/// `apiextensions_apiserver/pkg/...` -> `io.k8s.apiextensions-apiserver.pkg...`.
fn package_of(parts: &[String]) -> String {
    let mut p = vec!["io".to_owned(), "k8s".to_owned()];
    for (i, part) in parts.iter().enumerate() {
        p.push(if i == 0 {
            part.replace('_', "-")
        } else {
            part.clone()
        });
    }
    p.join(".")
}

struct Field {
    tag: u32,
    rust_name: String,
    kind: String,
    label: &'static str,
    type_ref: Option<(String, String)>,
    optional: bool,
    read_only: bool,
}

fn parse_file(parts: &[String], text: &str, out: &mut BTreeMap<(String, String), Vec<Field>>) {
    let package = package_of(parts);
    let mut current: Option<String> = None;
    let mut docs = String::new();
    let mut attr: Option<String> = None;
    let mut decl = String::new();
    for line in text.lines() {
        let t = line.trim();
        if let Some(doc) = t.strip_prefix("///") {
            docs.push_str(doc);
            docs.push('\n');
            continue;
        }
        if let Some(name) = t
            .strip_prefix("pub struct ")
            .and_then(|r| r.strip_suffix(" {}"))
        {
            out.entry((package.clone(), name.to_owned())).or_default();
            docs.clear();
            continue;
        }
        if let Some(name) = t
            .strip_prefix("pub struct ")
            .and_then(|r| r.strip_suffix(" {"))
        {
            current = Some(name.to_owned());
            out.entry((package.clone(), name.to_owned())).or_default();
            docs.clear();
            continue;
        }
        if t == "}" {
            current = None;
            docs.clear();
            continue;
        }
        let Some(msg) = &current else {
            if !t.starts_with("#[") {
                docs.clear();
            }
            continue;
        };
        if t.starts_with("#[prost(") {
            attr = Some(t.to_owned());
            continue;
        }
        if attr.is_some() {
            decl.push_str(t);
            let open = decl.matches('<').count();
            if !t.ends_with(',') || open != decl.matches('>').count() {
                continue;
            }
            let a = attr.take().unwrap_or_default();
            let field = parse_field(parts, &a, &decl, &docs);
            decl.clear();
            docs.clear();
            if let Some(f) = field {
                if let Some(v) = out.get_mut(&(package.clone(), msg.clone())) {
                    v.push(f);
                }
            }
        }
    }
}

fn parse_field(parts: &[String], attr: &str, decl: &str, docs: &str) -> Option<Field> {
    let tag: u32 = attr
        .split("tag = \"")
        .nth(1)?
        .split('"')
        .next()?
        .parse()
        .ok()?;
    let body = attr.strip_prefix("#[prost(")?;
    let (kind, label) = if let Some(rest) = body.strip_prefix("btree_map = \"") {
        let spec = rest.split('"').next()?;
        let value = spec.split(", ").nth(1)?;
        (format!("map:{value}"), "map")
    } else if let Some(rest) = body.strip_prefix("bytes = \"vec\"") {
        let label = if rest.contains("repeated") {
            "repeated"
        } else {
            "optional"
        };
        ("bytes".to_owned(), label)
    } else {
        let kind = body.split(',').next()?.trim().to_owned();
        let label = if body.contains(" repeated") {
            "repeated"
        } else {
            "optional"
        };
        (kind, label)
    };
    let (name, ty) = decl.strip_prefix("pub ")?.split_once(':')?;
    let needs_type = kind == "message" || kind == "map:message";
    let type_ref = needs_type.then(|| type_ref(parts, ty)).flatten();
    Some(Field {
        tag,
        rust_name: name.trim().trim_start_matches("r#").to_owned(),
        kind,
        label,
        type_ref,
        optional: docs.contains("+optional"),
        read_only: {
            let d = docs.to_lowercase();
            d.contains("read-only") || d.contains("populated by the system")
        },
    })
}

/// The package and name of the message a Rust field type names, e.g.
/// `Option<super::super::super::apimachinery::pkg::apis::meta::v1::ObjectMeta>`.
fn type_ref(parts: &[String], ty: &str) -> Option<(String, String)> {
    let mut inner = ty.trim().trim_end_matches(',').to_owned();
    for wrapper in [
        "::core::option::Option<",
        "::prost::alloc::vec::Vec<",
        "::prost::alloc::boxed::Box<",
    ] {
        while let Some(rest) = inner.strip_prefix(wrapper) {
            let rest = rest.strip_suffix('>').unwrap_or(rest);
            inner = rest.trim_end_matches(',').to_owned();
        }
    }
    for map in [
        "::std::collections::BTreeMap<",
        "::prost::alloc::collections::BTreeMap<",
    ] {
        if let Some(rest) = inner.strip_prefix(map) {
            let rest = rest.strip_suffix('>').unwrap_or(rest);
            inner = rest
                .split_once(',')?
                .1
                .trim()
                .trim_end_matches(',')
                .to_owned();
        }
    }
    let segs: Vec<&str> = inner.split("::").collect();
    let (name, path) = segs.split_last()?;
    let supers = path.iter().take_while(|s| **s == "super").count();
    let mut module: Vec<String> = parts[..parts.len().checked_sub(supers)?].to_vec();
    module.extend(path[supers..].iter().map(|s| (*s).to_owned()));
    Some((package_of(&module), (*name).to_owned()))
}

/// A name with only its letters and digits, lower-cased: `x-kubernetes-list-type`,
/// `$ref` and `clusterIP` meet `x_kubernetes_list_type`, `ref` and `cluster_ip`.
fn squash(s: &str) -> String {
    s.chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

fn lower_camel(s: &str) -> String {
    let mut out = String::new();
    let mut up = false;
    for c in s.chars() {
        if c == '_' {
            up = true;
        } else if up {
            out.extend(c.to_uppercase());
            up = false;
        } else {
            out.push(c);
        }
    }
    out
}

/// kube's OpenAPI name of a message: prost writes `ApiService` for `APIService`.
fn openapi_name(defs: &serde_json::Map<String, Value>, package: &str, rust_name: &str) -> String {
    let exact = format!("{package}.{rust_name}");
    if defs.contains_key(&exact) {
        return exact;
    }
    let prefix = format!("{package}.");
    defs.keys()
        .find(|k| {
            k.strip_prefix(&prefix)
                .is_some_and(|n| !n.contains('.') && n.eq_ignore_ascii_case(rust_name))
        })
        .cloned()
        .unwrap_or(exact)
}
