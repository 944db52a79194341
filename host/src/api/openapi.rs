//! OpenAPI documents: v3, one per group-version (every served kind's paths and operations, PATCH
//! carrying `fieldValidation`, which is how kubectl decides to validate on the server), and v2,
//! one for everything. Built-in kinds carry kube's own definitions (`builtin/definitions.json`)
//! and everything they reference, so `kubectl explain` and kubectl's client-side validation see
//! every field; custom resources carry their CRD's schema.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex, OnceLock};

use serde_json::{json, Map, Value};

use super::AppState;
use crate::builtin::definitions;
use crate::model::{ObjectKey, ResourceInfo};

/// The version the documents name: the Kubernetes API they describe.
const KUBE_VERSION: &str = "v1.34.0";

const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";

/// kube's schema names: `io.k8s.api.core.v1.ConfigMap`, `io.cert-manager.v1.Certificate`.
fn schema_name(r: &ResourceInfo) -> String {
    if !r.is_custom() {
        if let Some(name) = definitions::get().name_of(&r.group, &r.version, &r.kind) {
            return name.to_owned();
        }
    }
    let reversed: Vec<&str> = r.group.split('.').rev().collect();
    format!("{}.{}.{}", reversed.join("."), r.version, r.kind)
}

/// The schema of a custom resource's version, from its stored CRD.
fn custom_schema(state: &AppState, r: &ResourceInfo) -> Option<Value> {
    let c = r.custom.as_ref()?;
    let crd = state.service.store.get(&ObjectKey::new(
        &format!("{}.{}", crate::crd::RESOURCE, crate::crd::GROUP),
        "",
        &c.crd_name,
    ))?;
    crd.value()
        .pointer("/spec/versions")?
        .as_array()?
        .iter()
        .find(|v| v.get("name").and_then(Value::as_str) == Some(r.version.as_str()))?
        .pointer("/schema/openAPIV3Schema")
        .cloned()
}

/// The definition names `roots` reference, directly or not, themselves included.
fn closure<'a>(roots: impl IntoIterator<Item = &'a str>) -> BTreeSet<String> {
    let defs = definitions::get();
    let mut seen = BTreeSet::new();
    let mut todo: Vec<String> = roots.into_iter().map(str::to_owned).collect();
    while let Some(name) = todo.pop() {
        if !seen.insert(name.clone()) {
            continue;
        }
        if let Some(def) = defs.get(&name) {
            collect_refs(def, &mut todo);
        }
    }
    seen
}

fn collect_refs(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            if let Some(r) = m.get("$ref").and_then(Value::as_str) {
                if let Some(name) = r.strip_prefix("#/definitions/") {
                    out.push(name.to_owned());
                }
            }
            m.values().for_each(|v| collect_refs(v, out));
        }
        Value::Array(a) => a.iter().for_each(|v| collect_refs(v, out)),
        _ => {}
    }
}

/// A v2 definition in v3's form, as kube publishes it: references point at
/// `#/components/schemas/`, and a reference with a description beside it is wrapped in `allOf`
/// (a `$ref` ignores its siblings in OpenAPI 3).
fn to_v3(v: &Value) -> Value {
    match v {
        Value::Object(m) => {
            if let Some(r) = m.get("$ref").and_then(Value::as_str) {
                let target =
                    Value::String(r.replacen("#/definitions/", "#/components/schemas/", 1));
                if m.len() == 1 {
                    return json!({"$ref": target});
                }
                let mut out = Map::new();
                out.insert("allOf".into(), json!([{"$ref": target}]));
                for (k, v) in m {
                    if k != "$ref" {
                        out.insert(k.clone(), to_v3(v));
                    }
                }
                return Value::Object(out);
            }
            Value::Object(m.iter().map(|(k, v)| (k.clone(), to_v3(v))).collect())
        }
        Value::Array(a) => Value::Array(a.iter().map(to_v3).collect()),
        other => other.clone(),
    }
}

fn resource_paths(r: &ResourceInfo, prefix: &str, name: &str, v3: bool) -> Vec<(String, Value)> {
    let gvk = json!({"group": r.group, "version": r.version, "kind": r.kind});
    let reference = if v3 {
        json!({"$ref": format!("#/components/schemas/{name}")})
    } else {
        json!({"$ref": format!("#/definitions/{name}")})
    };
    let query = |n: &str| {
        if v3 {
            json!({"name": n, "in": "query", "schema": {"type": "string", "uniqueItems": true}})
        } else {
            json!({"name": n, "in": "query", "type": "string", "uniqueItems": true})
        }
    };
    let op = |verb: &str| {
        let mut params = vec![
            query("dryRun"),
            query("fieldManager"),
            query("fieldValidation"),
        ];
        let mut op = json!({
            "operationId": format!("{verb}{}", r.kind),
            "x-kubernetes-action": verb,
            "x-kubernetes-group-version-kind": gvk,
        });
        if v3 && verb == "patch" {
            // kubectl reads the patch types a kind takes from here: custom resources take no
            // strategic merge patch.
            let patch = json!({"schema": {"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.Patch"}});
            let mut content = Map::new();
            content.insert("application/apply-patch+yaml".into(), patch.clone());
            content.insert("application/json-patch+json".into(), patch.clone());
            content.insert("application/merge-patch+json".into(), patch.clone());
            if !r.is_custom() {
                content.insert("application/strategic-merge-patch+json".into(), patch);
            }
            op["requestBody"] = json!({"content": content});
            op["responses"] = json!({"200": {"description": "OK", "content": {"application/json": {"schema": reference}}}});
        } else if v3 {
            op["requestBody"] = json!({"content": {"application/json": {"schema": reference}}});
            op["responses"] = json!({"200": {"description": "OK", "content": {"application/json": {"schema": reference}}}});
        } else {
            params
                .push(json!({"name": "body", "in": "body", "required": true, "schema": reference}));
            op["responses"] = json!({"200": {"description": "OK", "schema": reference}});
        }
        op["parameters"] = Value::Array(params);
        op
    };
    let (item, coll) = if r.namespaced() {
        (
            format!("{prefix}/namespaces/{{namespace}}/{}/{{name}}", r.resource),
            format!("{prefix}/namespaces/{{namespace}}/{}", r.resource),
        )
    } else {
        (
            format!("{prefix}/{}/{{name}}", r.resource),
            format!("{prefix}/{}", r.resource),
        )
    };
    if r.create_only {
        return vec![(coll, json!({"post": op("post")}))];
    }
    let mut out = vec![
        (
            item.clone(),
            json!({"get": op("get"), "put": op("put"), "patch": op("patch"), "delete": op("delete")}),
        ),
        (coll, json!({"get": op("list"), "post": op("post")})),
    ];
    if r.status_subresource {
        out.push((
            format!("{item}/status"),
            json!({"get": op("get"), "put": op("put"), "patch": op("patch")}),
        ));
    }
    // Subresources that take and answer the kind itself.
    if r.group.is_empty() && r.resource == "namespaces" {
        out.push((format!("{item}/finalize"), json!({"put": op("put")})));
    }
    if r.group.is_empty() && r.resource == "pods" {
        out.push((
            format!("{item}/ephemeralcontainers"),
            json!({"get": op("get"), "put": op("put"), "patch": op("patch")}),
        ));
    }
    if crate::builtin::csr::is_csrs(r) {
        out.push((
            format!("{item}/approval"),
            json!({"get": op("get"), "put": op("put"), "patch": op("patch")}),
        ));
    }
    out
}

fn gv_prefix(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("/api/{version}")
    } else {
        format!("/apis/{group}/{version}")
    }
}

/// The schema published for a kind turtles serves without a definition or CRD schema.
fn opaque_schema(r: &ResourceInfo) -> Value {
    json!({
        "type": "object",
        "description": format!("{} ({}).", r.kind, r.api_version()),
        "x-kubernetes-preserve-unknown-fields": true,
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"$ref": format!("#/definitions/{OBJECT_META}"), "description": "Standard object's metadata."},
        },
    })
}

/// A custom resource's schema with kube's `metadata` reference and its group-version-kind.
fn custom_with_meta(r: &ResourceInfo, mut schema: Value, meta_ref: &str) -> Value {
    if let Some(props) = schema.get_mut("properties").and_then(Value::as_object_mut) {
        props.insert(
            "metadata".into(),
            json!({"allOf": [{"$ref": meta_ref}], "description": "Standard object's metadata."}),
        );
    }
    schema["x-kubernetes-group-version-kind"] =
        json!([{"group": r.group, "version": r.version, "kind": r.kind}]);
    schema
}

/// A served v3 document: its JSON and the hash the index addresses it with.
pub struct Document {
    pub json: String,
    pub hash: String,
}

/// Documents of built-in group-versions by group and version.
type BuiltDocuments = HashMap<(String, String), Arc<Document>>;

/// The v3 document of a group-version. Documents of built-in group-versions never change and are
/// built once; those with custom resources follow their CRDs.
pub fn document(state: &AppState, group: &str, version: &str) -> Arc<Document> {
    let resources = state.registry.in_group_version(group, version);
    let any_custom = resources.iter().any(|r| r.is_custom());
    let build = || {
        let doc = build_v3(state, group, version, &resources);
        let json = doc.to_string();
        let hash = fnv_hex(json.as_bytes());
        Arc::new(Document { json, hash })
    };
    if any_custom {
        return build();
    }
    static CACHE: OnceLock<Mutex<BuiltDocuments>> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    let key = (group.to_owned(), version.to_owned());
    if let Some(doc) = cache.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
        return doc.clone();
    }
    let doc = build();
    cache
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(key, doc.clone());
    doc
}

fn build_v3(
    state: &AppState,
    group: &str,
    version: &str,
    resources: &[Arc<ResourceInfo>],
) -> Value {
    let defs = definitions::get();
    let prefix = gv_prefix(group, version);
    let mut paths = Map::new();
    let mut roots = vec![
        OBJECT_META.to_owned(),
        "io.k8s.apimachinery.pkg.apis.meta.v1.Patch".to_owned(),
    ];
    let mut extra = Map::new();
    for r in resources {
        let name = schema_name(r);
        for (path, item) in resource_paths(r, &prefix, &name, true) {
            paths.insert(path, item);
        }
        if r.is_custom() {
            let meta_ref = format!("#/components/schemas/{OBJECT_META}");
            let schema = custom_schema(state, r).unwrap_or_else(|| to_v3(&opaque_schema(r)));
            extra.insert(name, custom_with_meta(r, schema, &meta_ref));
        } else if defs.get(&name).is_some() {
            roots.push(name);
        } else {
            extra.insert(name, to_v3(&opaque_schema(r)));
        }
    }
    let mut schemas = Map::new();
    for name in closure(roots.iter().map(String::as_str)) {
        if let Some(def) = defs.get(&name) {
            schemas.insert(name, to_v3(def));
        }
    }
    schemas.extend(extra);
    json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": KUBE_VERSION},
        "paths": paths,
        "components": {"schemas": schemas},
    })
}

/// The v2 document serialized, built once per state of what is served: kept until a resource
/// is added or removed or a CRD changes (its key names every resource and each CRD's
/// resourceVersion), so a request costs a reference count, not 1.4 MB of definitions cloned and
/// serialized.
pub fn document_v2_bytes(state: &AppState) -> bytes::Bytes {
    static CACHE: OnceLock<Mutex<Option<(String, bytes::Bytes)>>> = OnceLock::new();
    cached_v2(&CACHE, state, |doc| doc.to_string().into_bytes())
}

/// The v2 document as gnostic's protobuf (see `openapi_pb`), kept as the JSON is.
pub fn document_v2_protobuf(state: &AppState) -> bytes::Bytes {
    static CACHE: OnceLock<Mutex<Option<(String, bytes::Bytes)>>> = OnceLock::new();
    cached_v2(&CACHE, state, super::openapi_pb::document)
}

/// The v2 document encoded by `encode`, from `cache` while what is served is unchanged.
fn cached_v2(
    cache: &'static OnceLock<Mutex<Option<(String, bytes::Bytes)>>>,
    state: &AppState,
    encode: fn(&Value) -> Vec<u8>,
) -> bytes::Bytes {
    let resources = state.registry.snapshot();
    let mut key = String::new();
    for r in resources.iter() {
        key.push_str(&r.group);
        key.push('/');
        key.push_str(&r.version);
        key.push('/');
        key.push_str(&r.resource);
        if let Some(c) = &r.custom {
            let crd = state.service.store.get(&ObjectKey::new(
                &format!("{}.{}", crate::crd::RESOURCE, crate::crd::GROUP),
                "",
                &c.crd_name,
            ));
            key.push('@');
            key.push_str(&crd.map(|o| o.rv.to_string()).unwrap_or_default());
        }
        key.push(' ');
    }
    let cache = cache.get_or_init(Default::default);
    if let Some((k, doc)) = cache.lock().unwrap_or_else(|e| e.into_inner()).as_ref() {
        if *k == key {
            return doc.clone();
        }
    }
    let doc = bytes::Bytes::from(encode(&document_v2(state)));
    *cache.lock().unwrap_or_else(|e| e.into_inner()) = Some((key, doc.clone()));
    doc
}

/// The v2 (swagger) document: every definition kube publishes, each custom resource's schema,
/// and the paths of everything served.
pub fn document_v2(state: &AppState) -> Value {
    let defs = definitions::get();
    let mut definitions = defs.to_map();
    let mut paths = Map::new();
    for r in state.registry.snapshot().iter() {
        let name = schema_name(r);
        let prefix = gv_prefix(&r.group, &r.version);
        for (path, item) in resource_paths(r, &prefix, &name, false) {
            paths.insert(path, item);
        }
        if r.is_custom() {
            let meta_ref = format!("#/definitions/{OBJECT_META}");
            let schema = custom_schema(state, r).unwrap_or_else(|| opaque_schema(r));
            definitions.insert(name, custom_with_meta(r, schema, &meta_ref));
        } else if !definitions.contains_key(&name) {
            definitions.insert(name, opaque_schema(r));
        }
    }
    json!({
        "swagger": "2.0",
        "info": {"title": "Kubernetes", "version": KUBE_VERSION},
        "paths": paths,
        "definitions": definitions,
    })
}

pub fn fnv_hex(data: &[u8]) -> String {
    let mut h: u64 = 0xcbf29ce484222325;
    for b in data {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x100000001b3);
    }
    format!("{h:016X}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn closure_reaches_nested_definitions_and_v3_wraps_described_refs() {
        let names = closure(["io.k8s.api.apps.v1.Deployment"]);
        assert!(names.contains("io.k8s.api.core.v1.Container"));
        assert!(names.contains(OBJECT_META));
        assert!(!names.contains("io.k8s.api.core.v1.Service"));
        let dep = to_v3(
            definitions::get()
                .get("io.k8s.api.apps.v1.Deployment")
                .unwrap(),
        );
        assert_eq!(
            dep.pointer("/properties/spec/allOf/0/$ref"),
            Some(&json!(
                "#/components/schemas/io.k8s.api.apps.v1.DeploymentSpec"
            ))
        );
    }
}
