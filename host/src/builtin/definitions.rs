//! kube's published OpenAPI definitions of every built-in type (`definitions.json`, the
//! `definitions` of kube-apiserver 1.34's `swagger.json`), parsed once on first use.

use std::collections::HashMap;
use std::sync::OnceLock;

use serde_json::{Map, Value};

const DEFINITIONS: &str = include_str!("definitions.json");

/// The definitions, and an index of the kinds by group, version and kind.
pub struct Definitions {
    pub all: Map<String, Value>,
    /// `group/version/kind` -> definition name.
    by_gvk: HashMap<String, String>,
}

impl Definitions {
    /// The definition name (`io.k8s.api.core.v1.Pod`) of a kind.
    pub fn name_of(&self, group: &str, version: &str, kind: &str) -> Option<&str> {
        self.by_gvk
            .get(gvk_key(group, version, kind).as_str())
            .map(String::as_str)
    }

    pub fn get(&self, name: &str) -> Option<&Value> {
        self.all.get(name)
    }

    /// The definition a `$ref` (`#/definitions/NAME`) points at.
    pub fn resolve<'a>(&'a self, schema: &'a Value) -> Option<(&'a str, &'a Value)> {
        let name = schema
            .get("$ref")?
            .as_str()?
            .strip_prefix("#/definitions/")?;
        Some((name, self.all.get(name)?))
    }
}

fn gvk_key(group: &str, version: &str, kind: &str) -> String {
    format!("{group}/{version}/{kind}")
}

/// The definitions of kube 1.34, parsed on first use (about 1.4 MB of JSON).
pub fn get() -> &'static Definitions {
    static DEFS: OnceLock<Definitions> = OnceLock::new();
    DEFS.get_or_init(|| {
        let mut doc: Value = serde_json::from_str(DEFINITIONS).unwrap_or_default();
        let all = match doc.get_mut("definitions").map(Value::take) {
            Some(Value::Object(m)) => m,
            _ => Map::new(),
        };
        let mut by_gvk = HashMap::new();
        for (name, def) in &all {
            let Some(gvks) = def
                .get("x-kubernetes-group-version-kind")
                .and_then(Value::as_array)
            else {
                continue;
            };
            for gvk in gvks {
                let s = |k: &str| gvk.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
                by_gvk
                    .entry(gvk_key(&s("group"), &s("version"), &s("kind")))
                    .or_insert_with(|| name.clone());
            }
        }
        Definitions { all, by_gvk }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_builtin_kind_has_a_definition() {
        let defs = get();
        assert!(defs.all.len() > 500);
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
}
