//! OpenAPI v3 documents, one per group-version: every served kind's paths and operations (PATCH
//! carries `fieldValidation`, which is how kubectl decides to validate on the server), and each
//! custom resource's schema from its CRD so `kubectl explain` can walk it.

use serde_json::{json, Value};

use super::AppState;
use crate::model::{ObjectKey, ResourceInfo};

const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";

fn object_meta_schema() -> Value {
    let s = |d: &str| json!({"type": "string", "description": d});
    json!({
        "type": "object",
        "description": "Standard object metadata.",
        "properties": {
            "name": s("Name must be unique within a namespace."),
            "generateName": s("Prefix the server uses to generate a unique name."),
            "namespace": s("The namespace the object lives in."),
            "uid": s("Unique identifier set by the server."),
            "resourceVersion": s("Opaque version of this object, for optimistic concurrency and watches."),
            "generation": {"type": "integer", "format": "int64", "description": "Sequence number of the desired state."},
            "creationTimestamp": {"type": "string", "format": "date-time", "description": "When the object was created."},
            "deletionTimestamp": {"type": "string", "format": "date-time", "description": "When deletion was requested."},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}, "description": "Map of string keys and values for selecting objects."},
            "annotations": {"type": "object", "additionalProperties": {"type": "string"}, "description": "Unstructured key value map for tools."},
            "finalizers": {"type": "array", "items": {"type": "string"}, "description": "Must be empty before the object is deleted."},
            "ownerReferences": {"type": "array", "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}, "description": "Objects this object depends on."},
        },
    })
}

/// kube's schema names: `io.k8s.api.core.v1.ConfigMap`, `io.cert-manager.v1.Certificate`.
fn schema_name(r: &ResourceInfo) -> String {
    if r.is_custom() {
        let reversed: Vec<&str> = r.group.split('.').rev().collect();
        return format!("{}.{}.{}", reversed.join("."), r.version, r.kind);
    }
    let g = if r.group.is_empty() {
        "core".to_owned()
    } else {
        r.group.split('.').next().unwrap_or(&r.group).to_owned()
    };
    format!("io.k8s.api.{g}.{}.{}", r.version, r.kind)
}

/// The schema of a custom resource's version, from its stored CRD.
fn custom_schema(state: &AppState, r: &ResourceInfo) -> Option<Value> {
    let c = r.custom.as_ref()?;
    let crd = state.service.store.get(&ObjectKey::new(
        &format!("{}.{}", crate::crd::RESOURCE, crate::crd::GROUP),
        "",
        &c.crd_name,
    ))?;
    crd.value
        .pointer("/spec/versions")?
        .as_array()?
        .iter()
        .find(|v| v.get("name").and_then(Value::as_str) == Some(r.version.as_str()))?
        .pointer("/schema/openAPIV3Schema")
        .cloned()
}

pub fn document(state: &AppState, group: &str, version: &str) -> Value {
    let mut paths = serde_json::Map::new();
    let mut schemas = serde_json::Map::new();
    schemas.insert(OBJECT_META.into(), object_meta_schema());
    let prefix = if group.is_empty() {
        format!("/api/{version}")
    } else {
        format!("/apis/{group}/{version}")
    };
    let meta_ref = json!({"$ref": format!("#/components/schemas/{OBJECT_META}")});
    for r in state.registry.in_group_version(group, version) {
        let gvk = json!({"group": r.group, "version": r.version, "kind": r.kind});
        let name = schema_name(&r);
        let reference = json!({"$ref": format!("#/components/schemas/{name}")});
        let body = json!({"content": {"application/json": {"schema": reference}}});
        let params = json!([
            {"name": "dryRun", "in": "query", "schema": {"type": "string", "uniqueItems": true}},
            {"name": "fieldManager", "in": "query", "schema": {"type": "string", "uniqueItems": true}},
            {"name": "fieldValidation", "in": "query", "schema": {"type": "string", "uniqueItems": true}},
        ]);
        let op = |verb: &str| {
            json!({
                "operationId": format!("{verb}{}", r.kind),
                "x-kubernetes-action": verb,
                "x-kubernetes-group-version-kind": gvk,
                "parameters": params,
                "requestBody": body,
                "responses": {"200": {"description": "OK", "content": {"application/json": {"schema": reference}}}},
            })
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
        paths.insert(
            item.clone(),
            json!({"get": op("get"), "put": op("put"), "patch": op("patch"), "delete": op("delete")}),
        );
        paths.insert(coll, json!({"get": op("list"), "post": op("post")}));
        if r.status_subresource {
            paths.insert(
                format!("{item}/status"),
                json!({"get": op("get"), "put": op("put"), "patch": op("patch")}),
            );
        }
        let mut schema = match custom_schema(state, &r) {
            Some(s) => s,
            None => json!({
                "type": "object",
                "description": format!("{} ({}). turtles publishes no field schema for built-in kinds yet.", r.kind, r.api_version()),
                "x-kubernetes-preserve-unknown-fields": true,
                "properties": {"apiVersion": {"type": "string"}, "kind": {"type": "string"}},
            }),
        };
        if let Some(props) = schema.get_mut("properties").and_then(Value::as_object_mut) {
            props.insert(
                "metadata".into(),
                json!({"allOf": [meta_ref], "description": "Standard object's metadata."}),
            );
        }
        schema["x-kubernetes-group-version-kind"] = json!([gvk]);
        schemas.insert(name, schema);
    }
    json!({
        "openapi": "3.0.0",
        "info": {"title": "turtles", "version": env!("CARGO_PKG_VERSION")},
        "paths": paths,
        "components": {"schemas": schemas},
    })
}
