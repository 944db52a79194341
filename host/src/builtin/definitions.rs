//! kube's published OpenAPI definitions of every built-in type (`definitions.json`, the
//! `definitions` of kube-apiserver 1.34's `swagger.json`), parsed once on first use, with the
//! enums kube serves and the imported copy lacks put back ([`super::enums`]).

use std::collections::HashMap;
use std::sync::OnceLock;

use serde_json::value::RawValue;
use serde_json::{Map, Value};

const DEFINITIONS: &str = include_str!("definitions.json");

/// The definitions, each parsed on first use, and an index of the kinds by group, version and
/// kind. Parsed whole, the 1.4 MB of JSON is ~7 MiB of heap, most of it descriptions no request
/// reads; a host that only serves ConfigMaps parses the few definitions they reach.
pub struct Definitions {
    /// Name -> the definition's text in `DEFINITIONS` and its tree once parsed; in the file's
    /// order (`order`), which the OpenAPI document keeps.
    by_name: HashMap<&'static str, Lazy>,
    order: Vec<&'static str>,
    /// `group/version/kind` -> definition name.
    by_gvk: HashMap<String, &'static str>,
}

struct Lazy {
    name: &'static str,
    raw: &'static RawValue,
    parsed: OnceLock<Value>,
}

impl Lazy {
    fn value(&self) -> &Value {
        self.parsed.get_or_init(|| {
            let mut def = serde_json::from_str(self.raw.get()).unwrap_or_default();
            super::enums::apply(self.name, &mut def);
            def
        })
    }
}

impl Definitions {
    /// The definition name (`io.k8s.api.core.v1.Pod`) of a kind.
    pub fn name_of(&self, group: &str, version: &str, kind: &str) -> Option<&'static str> {
        self.by_gvk
            .get(gvk_key(group, version, kind).as_str())
            .copied()
    }

    pub fn get(&self, name: &str) -> Option<&Value> {
        self.by_name.get(name).map(Lazy::value)
    }

    /// The definition a `$ref` (`#/definitions/NAME`) points at.
    pub fn resolve<'a>(&'a self, schema: &'a Value) -> Option<(&'a str, &'a Value)> {
        let name = schema
            .get("$ref")?
            .as_str()?
            .strip_prefix("#/definitions/")?;
        Some((name, self.get(name)?))
    }

    /// How many definitions there are.
    pub fn len(&self) -> usize {
        self.order.len()
    }

    pub fn is_empty(&self) -> bool {
        self.order.is_empty()
    }

    #[cfg(test)]
    fn parsed(&self) -> usize {
        self.by_name
            .values()
            .filter(|l| l.parsed.get().is_some())
            .count()
    }

    /// Every definition, in kube's order, each parsed (all of them stay parsed afterwards).
    pub fn to_map(&self) -> Map<String, Value> {
        self.order
            .iter()
            .filter_map(|n| Some(((*n).to_owned(), self.get(n)?.clone())))
            .collect()
    }
}

fn gvk_key(group: &str, version: &str, kind: &str) -> String {
    format!("{group}/{version}/{kind}")
}

/// The top of `definitions.json`: each definition kept as its text.
#[derive(serde::Deserialize)]
struct Document<'a> {
    #[serde(borrow)]
    definitions: Entries<'a>,
}

/// A JSON object's members in their order, each value as its text.
struct Entries<'a>(Vec<(&'a str, &'a RawValue)>);

impl<'de: 'a, 'a> serde::Deserialize<'de> for Entries<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> serde::de::Visitor<'de> for Visit<'a> {
            type Value = Entries<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an object of definitions")
            }
            fn visit_map<M: serde::de::MapAccess<'de>>(
                self,
                mut m: M,
            ) -> Result<Self::Value, M::Error> {
                let mut out = Vec::with_capacity(m.size_hint().unwrap_or(0));
                while let Some(entry) = m.next_entry::<&'a str, &'a RawValue>()? {
                    out.push(entry);
                }
                Ok(Entries(out))
            }
        }
        d.deserialize_map(Visit(std::marker::PhantomData))
    }
}

/// Only the group-version-kind list of a definition, read from its text without the rest.
#[derive(serde::Deserialize)]
struct Head {
    #[serde(rename = "x-kubernetes-group-version-kind", default)]
    gvks: Vec<Gvk>,
}

#[derive(serde::Deserialize)]
struct Gvk {
    #[serde(default)]
    group: String,
    #[serde(default)]
    version: String,
    #[serde(default)]
    kind: String,
}

/// The definitions of kube 1.34, indexed on first use (about 1.4 MB of JSON); each definition is
/// parsed when first asked for.
pub fn get() -> &'static Definitions {
    static DEFS: OnceLock<Definitions> = OnceLock::new();
    DEFS.get_or_init(|| index(DEFINITIONS))
}

/// Index the definitions of a swagger document's text, parsing none of them.
fn index(text: &'static str) -> Definitions {
    let entries = serde_json::from_str::<Document<'static>>(text)
        .map(|d| d.definitions.0)
        .unwrap_or_default();
    let mut defs = Definitions {
        by_name: HashMap::with_capacity(entries.len()),
        order: Vec::with_capacity(entries.len()),
        by_gvk: HashMap::new(),
    };
    for (name, raw) in entries {
        if let Ok(head) = serde_json::from_str::<Head>(raw.get()) {
            for g in head.gvks {
                defs.by_gvk
                    .entry(gvk_key(&g.group, &g.version, &g.kind))
                    .or_insert(name);
            }
        }
        if defs
            .by_name
            .insert(
                name,
                Lazy {
                    name,
                    raw,
                    parsed: OnceLock::new(),
                },
            )
            .is_none()
        {
            defs.order.push(name);
        }
    }
    defs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_builtin_kind_has_a_definition() {
        let defs = get();
        assert!(defs.len() > 500);
        for b in crate::builtin::RESOURCES {
            if b.group == "turtles.dev" {
                continue;
            }
            assert!(
                defs.name_of(b.group, b.version, b.kind).is_some(),
                "{}/{} {}",
                b.group,
                b.version,
                b.kind
            );
        }
        assert_eq!(
            defs.name_of("", "v1", "Pod"),
            Some("io.k8s.api.core.v1.Pod")
        );
    }

    #[test]
    fn definitions_are_parsed_when_asked_for_and_keep_kube_order() {
        let defs = index(DEFINITIONS);
        assert_eq!(defs.parsed(), 0);
        let name = defs.name_of("", "v1", "ConfigMap").unwrap();
        let cm = defs.get(name).unwrap();
        assert_eq!(cm["properties"]["data"]["type"], "object");
        assert_eq!(defs.parsed(), 1);
        assert!(defs.get("no.such.Definition").is_none());
        // Parsed whole (with the enums), the same definitions in the same order as the file.
        let mut whole: Value = serde_json::from_str(DEFINITIONS).unwrap();
        for (name, def) in whole["definitions"].as_object_mut().unwrap().iter_mut() {
            crate::builtin::enums::apply(name, def);
        }
        let whole = whole["definitions"].as_object().unwrap();
        let all = defs.to_map();
        assert_eq!(all.len(), whole.len());
        assert!(all.keys().eq(whole.keys()));
        assert_eq!(&all, whole);
        assert_eq!(defs.parsed(), whole.len());
    }
}
