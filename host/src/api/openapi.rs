//! OpenAPI documents: v3, one per group-version (every served kind's paths and operations, PATCH
//! carrying `fieldValidation`, which is how kubectl decides to validate on the server), and v2,
//! one for everything. Built-in kinds carry kube's own definitions (`builtin/definitions.json`)
//! and everything they reference, so `kubectl explain` and kubectl's client-side validation see
//! every field; custom resources carry their CRD's schema with what kube's CRD OpenAPI builder
//! adds to it (`apiVersion`, `kind`, `metadata`, and the list kind's definition).

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex, OnceLock};

use serde_json::{json, Map, Value};

use super::AppState;
use crate::builtin::definitions;
use crate::model::{ObjectKey, ResourceInfo};

/// The version the documents name: the Kubernetes API they describe.
const KUBE_VERSION: &str = "v1.34.0";

const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";
const LIST_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta";
const INT_OR_STRING: &str = "io.k8s.apimachinery.pkg.util.intstr.IntOrString";
const QUANTITY: &str = "io.k8s.apimachinery.pkg.api.resource.Quantity";

/// `metav1.TypeMeta`'s descriptions of `apiVersion` and `kind`, which kube's CRD OpenAPI builder
/// gives a custom resource and its list.
const API_VERSION_DOC: &str = concat!(
    "APIVersion defines the versioned schema of this representation of an object. ",
    "Servers should convert recognized schemas to the latest internal value, ",
    "and may reject unrecognized values. ",
    "More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources",
);
const KIND_DOC: &str = concat!(
    "Kind is a string value representing the REST resource this object represents. ",
    "Servers may infer this from the endpoint the client submits requests to. ",
    "Cannot be updated. In CamelCase. ",
    "More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds",
);
/// Their descriptions in a resource embedded in a custom resource (`x-kubernetes-embedded-resource`).
const EMBEDDED_API_VERSION_DOC: &str = concat!(
    "apiVersion defines the versioned schema of this representation of an object. ",
    "More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources",
);
const EMBEDDED_KIND_DOC: &str = concat!(
    "kind is a string value representing the type of this object. In CamelCase. ",
    "More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds",
);
/// `metadata` of a custom resource or an embedded one (`PartialObjectMetadata`'s description).
const OBJECT_META_DOC: &str = concat!(
    "Standard object's metadata. ",
    "More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata",
);
/// `metadata` of a custom resource's list (`v1beta1.PartialObjectMetadataList`'s, `#types-kinds`
/// and all).
const LIST_META_DOC: &str = concat!(
    "Standard list metadata. ",
    "More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds",
);
/// The descriptions of IntOrString and Quantity in kube's v3 documents (`definitions.json`, from
/// kubernetes-json-schema, has none for them).
const INT_OR_STRING_DOC: &str = concat!(
    "IntOrString is a type that can hold an int32 or a string.  ",
    "When used in JSON or YAML marshalling and unmarshalling, it produces or consumes the inner type.  ",
    "This allows you to have, for example, a JSON field that can accept a name or number.",
);
const QUANTITY_DOC: &str = concat!(
    "Quantity is a fixed-point representation of a number. ",
    "It provides convenient marshaling/unmarshaling in JSON and YAML, ",
    "in addition to String() and AsInt64() accessors.\n\n",
    "The serialization format is:\n\n",
    "``` <quantity>        ::= <signedNumber><suffix>\n\n",
    "\t(Note that <suffix> may be empty, from the \"\" case in <decimalSI>.)\n\n",
    "<digit>           ::= 0 | 1 | ... | 9 <digits>          ::= <digit> | <digit><digits> ",
    "<number>          ::= <digits> | <digits>.<digits> | <digits>. | .<digits> ",
    "<sign>            ::= \"+\" | \"-\" <signedNumber>    ::= <number> | <sign><number> ",
    "<suffix>          ::= <binarySI> | <decimalExponent> | <decimalSI> ",
    "<binarySI>        ::= Ki | Mi | Gi | Ti | Pi | Ei\n\n",
    "\t(International System of units; See: ",
    "http://physics.nist.gov/cuu/Units/binary.html)\n\n",
    "<decimalSI>       ::= m | \"\" | k | M | G | T | P | E\n\n",
    "\t(Note that 1024 = 1Ki but 1000 = 1k; I didn't choose the capitalization.)\n\n",
    "<decimalExponent> ::= \"e\" <signedNumber> | \"E\" <signedNumber> ```\n\n",
    "No matter which of the three exponent forms is used, ",
    "no quantity may represent a number greater than 2^63-1 in magnitude, ",
    "nor may it have more than 3 decimal places. ",
    "Numbers larger or more precise will be capped or rounded up. ",
    "(E.g.: 0.1m will rounded up to 1m.) This may be extended in the future if we require ",
    "larger or smaller quantities.\n\n",
    "When a Quantity is parsed from a string, it will remember the type of suffix it had, ",
    "and will use the same type again when it is serialized.\n\n",
    "Before serializing, Quantity will be put in \"canonical form\". ",
    "This means that Exponent/suffix will be adjusted up or down (with a corresponding ",
    "increase or decrease in Mantissa) such that:\n\n",
    "- No precision is lost - No fractional digits will be emitted - The exponent (or ",
    "suffix) is as large as possible.\n\n",
    "The sign will be omitted unless the number is negative.\n\n",
    "Examples:\n\n",
    "- 1.5 will be serialized as \"1500m\" - 1.5Gi will be serialized as \"1536Mi\"\n\n",
    "Note that the quantity will NEVER be internally represented by a floating point number. ",
    "That is the whole point of this exercise.\n\n",
    "Non-canonical values will still parse as long as they are well formed, ",
    "but will be re-emitted in their canonical form. (So always use canonical form, ",
    "or don't diff.)\n\n",
    "This format is intended to make it difficult to use these numbers without writing some ",
    "sort of special handling code in the hopes that that will cause implementors to also ",
    "use a fixed point implementation.",
);

/// kube's schema names: `io.k8s.api.core.v1.ConfigMap`, `io.cert-manager.v1.Certificate`.
fn schema_name(r: &ResourceInfo) -> String {
    if !r.is_custom() {
        if let Some(name) = definitions::get().name_of(&r.group, &r.version, &r.kind) {
            return name.to_owned();
        }
    }
    model_name(&r.group, &r.version, &r.kind)
}

/// kube's `gvkToModelName`: the group reversed, the version, the kind.
fn model_name(group: &str, version: &str, kind: &str) -> String {
    let reversed: Vec<&str> = group.split('.').rev().collect();
    format!("{}.{}.{}", reversed.join("."), version, kind)
}

/// A custom resource's list kind (`names.listKind`, which the CRD's defaulting sets).
fn list_kind(r: &ResourceInfo) -> String {
    if r.list_kind.is_empty() {
        format!("{}List", r.kind)
    } else {
        r.list_kind.clone()
    }
}

/// The schema name of a custom resource's list kind: `com.example.v1.WidgetList`.
fn list_schema_name(r: &ResourceInfo) -> String {
    model_name(&r.group, &r.version, &list_kind(r))
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

/// A built-in definition in v3's form. IntOrString and Quantity are kube's exceptions (their
/// `OpenAPIV3OneOfTypes`): where v2 has them as `string`, v3 has the types a value takes as
/// `oneOf`, and `kubectl explain` names them `<IntOrString>` and `<Quantity>` from it.
fn definition_v3(name: &str, def: &Value) -> Value {
    match name {
        INT_OR_STRING => json!({
            "description": INT_OR_STRING_DOC,
            "format": "int-or-string",
            "oneOf": [{"type": "integer"}, {"type": "string"}],
        }),
        QUANTITY => json!({
            "description": QUANTITY_DOC,
            "oneOf": [{"type": "string"}, {"type": "number"}],
        }),
        _ => to_v3(def),
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
    if r.computed {
        return vec![
            (item, json!({"get": op("get")})),
            (coll, json!({"get": op("list")})),
        ];
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

/// A reference to definition `name` with a description beside it: v2's `$ref` with a sibling,
/// v3's `allOf` around the reference (kube-openapi's `WrapRefs`: a `$ref` ignores its siblings in
/// OpenAPI 3).
fn described_ref(name: &str, description: &str, v3: bool) -> Value {
    if v3 {
        json!({"allOf": [{"$ref": format!("#/components/schemas/{name}")}], "description": description})
    } else {
        json!({"$ref": format!("#/definitions/{name}"), "description": description})
    }
}

fn is_true(m: &Map<String, Value>, key: &str) -> bool {
    m.get(key).and_then(Value::as_bool) == Some(true)
}

fn is_nullable(schema: &Value) -> bool {
    schema.get("nullable").and_then(Value::as_bool) == Some(true)
}

/// A custom resource version's definition as kube's CRD OpenAPI builder makes it
/// (`buildKubeNative`): the CRD's schema with `apiVersion`, `kind` and `metadata` (an embedded
/// resource's too), and the group-version-kind. For v2 the schema is first cut to what kubectl's
/// v2 parser copes with (`ToStructuralOpenAPIV2`), and is only `type: object` where it keeps
/// unknown fields at the root: kubectl would reject every field it does not name. For v3
/// `x-kubernetes-int-or-string` is spelled out (`Unfold`). Without a schema, `type: object`.
fn custom_definition(r: &ResourceInfo, schema: Option<Value>, v3: bool) -> Value {
    let mut def = match schema {
        Some(Value::Object(m)) if v3 || !is_true(&m, "x-kubernetes-preserve-unknown-fields") => {
            let mut schema = Value::Object(m);
            if v3 {
                unfold_int_or_string(&mut schema);
            } else {
                to_structural_v2(&mut schema);
            }
            add_type_meta(&mut schema, v3);
            add_embedded_properties(&mut schema, v3);
            schema
        }
        _ => json!({"type": "object"}),
    };
    def["x-kubernetes-group-version-kind"] =
        json!([{"group": r.group, "version": r.version, "kind": r.kind}]);
    add_selectable_fields(r, &mut def);
    def
}

/// The definition of a custom resource's list kind, as kube's CRD OpenAPI builder makes it
/// (`buildListSchema`): `com.example.v1.WidgetList`, whose `items` are the kind's.
fn custom_list_definition(r: &ResourceInfo, v3: bool) -> Value {
    let item_ref = if v3 {
        format!("#/components/schemas/{}", schema_name(r))
    } else {
        format!("#/definitions/{}", schema_name(r))
    };
    let list = list_kind(r);
    let items_doc = format!(
        "List of {}. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md",
        r.resource
    );
    let mut def = json!({
        "description": format!("{list} is a list of {}", r.kind),
        "properties": {
            "apiVersion": {"description": API_VERSION_DOC, "type": "string"},
            "items": {"description": items_doc, "items": {"$ref": item_ref}, "type": "array"},
            "kind": {"description": KIND_DOC, "type": "string"},
            "metadata": described_ref(LIST_META, LIST_META_DOC, v3),
        },
        "required": ["items"],
        "type": "object",
        "x-kubernetes-group-version-kind": [{"group": r.group, "version": r.version, "kind": list}],
    });
    add_selectable_fields(r, &mut def);
    def
}

/// kube's `x-kubernetes-selectable-fields`, on a custom resource's definitions when its version
/// has `selectableFields`.
fn add_selectable_fields(r: &ResourceInfo, def: &mut Value) {
    let Some(c) = &r.custom else {
        return;
    };
    if c.selectable_fields.is_empty() {
        return;
    }
    def["x-kubernetes-selectable-fields"] = c
        .selectable_fields
        .iter()
        .map(|f| json!({"fieldPath": f}))
        .collect();
}

/// kube's `addTypeMetaProperties` and `metadata`: `apiVersion`, `kind` and `metadata` first among
/// the properties, in place of any the CRD's schema has.
fn add_type_meta(schema: &mut Value, v3: bool) {
    let Some(m) = schema.as_object_mut() else {
        return;
    };
    let props = m
        .entry("properties")
        .or_insert_with(|| Value::Object(Map::new()));
    let own = match std::mem::take(props) {
        Value::Object(own) => own,
        _ => Map::new(),
    };
    let mut out = Map::new();
    out.insert(
        "apiVersion".into(),
        json!({"description": API_VERSION_DOC, "type": "string"}),
    );
    out.insert(
        "kind".into(),
        json!({"description": KIND_DOC, "type": "string"}),
    );
    out.insert(
        "metadata".into(),
        described_ref(OBJECT_META, OBJECT_META_DOC, v3),
    );
    for (k, v) in own {
        out.entry(k).or_insert(v);
    }
    *props = Value::Object(out);
}

/// kube's `addEmbeddedProperties`: a resource embedded in a custom resource
/// (`x-kubernetes-embedded-resource`) gets `apiVersion`, `kind` and `metadata` too, and requires
/// the first two; in v2 not where it keeps unknown fields (kubectl would reject the rest).
fn add_embedded_properties(schema: &mut Value, v3: bool) {
    let Some(m) = schema.as_object_mut() else {
        return;
    };
    if let Some(Value::Object(props)) = m.get_mut("properties") {
        for p in props.values_mut() {
            add_embedded_properties(p, v3);
        }
    }
    for key in ["items", "additionalProperties"] {
        if let Some(sub) = m.get_mut(key) {
            add_embedded_properties(sub, v3);
        }
    }
    if !is_true(m, "x-kubernetes-embedded-resource")
        || (!v3 && is_true(m, "x-kubernetes-preserve-unknown-fields"))
    {
        return;
    }
    if let Value::Object(props) = m
        .entry("properties")
        .or_insert_with(|| Value::Object(Map::new()))
    {
        props.insert(
            "apiVersion".into(),
            json!({"description": EMBEDDED_API_VERSION_DOC, "type": "string"}),
        );
        props.insert(
            "kind".into(),
            json!({"description": EMBEDDED_KIND_DOC, "type": "string"}),
        );
        props.insert(
            "metadata".into(),
            described_ref(OBJECT_META, OBJECT_META_DOC, v3),
        );
    }
    if let Value::Array(required) = m.entry("required").or_insert_with(|| json!([])) {
        for name in ["kind", "apiVersion"] {
            if !required.iter().any(|r| r.as_str() == Some(name)) {
                required.push(name.into());
            }
        }
    }
}

/// kube's `ToStructuralOpenAPIV2`: a CRD's schema cut to what kubectl's v2 parser copes with. No
/// `allOf`, `anyOf`, `oneOf` or `not`; a nullable value untyped, without `items` or `properties`,
/// and not required; where unknown fields are kept, no `items` or `properties` and no
/// `type: object`; an array without `items` untyped.
fn to_structural_v2(schema: &mut Value) {
    let Some(m) = schema.as_object_mut() else {
        return;
    };
    let nullable = is_true(m, "nullable");
    let preserve = is_true(m, "x-kubernetes-preserve-unknown-fields");
    m.retain(|k, _| match k.as_str() {
        "allOf" | "anyOf" | "oneOf" | "not" | "nullable" => false,
        "type" => !nullable,
        "items" | "properties" => !nullable && !preserve,
        _ => true,
    });
    let untyped = match m.get("type").and_then(Value::as_str) {
        Some("array") => !m.contains_key("items"),
        Some("object") => preserve,
        _ => false,
    };
    if untyped {
        m.retain(|k, _| k != "type");
    }
    if m.get("additionalProperties").is_some_and(is_nullable) {
        m.retain(|k, _| k != "required");
    } else {
        let nullable_props: Vec<String> = m
            .get("properties")
            .and_then(Value::as_object)
            .map(|props| {
                props
                    .iter()
                    .filter(|(_, p)| is_nullable(p))
                    .map(|(k, _)| k.clone())
                    .collect()
            })
            .unwrap_or_default();
        let mut emptied = false;
        if let Some(Value::Array(required)) = m.get_mut("required") {
            let before = required.len();
            required.retain(|r| {
                !r.as_str()
                    .is_some_and(|name| nullable_props.iter().any(|p| p == name))
            });
            emptied = required.is_empty() && required.len() < before;
        }
        if emptied {
            m.retain(|k, _| k != "required");
        }
    }
    if let Some(Value::Object(props)) = m.get_mut("properties") {
        props.values_mut().for_each(to_structural_v2);
    }
    for key in ["items", "additionalProperties"] {
        if let Some(sub) = m.get_mut(key) {
            to_structural_v2(sub);
        }
    }
}

/// kube's `Unfold`, which its v3 documents show: `x-kubernetes-int-or-string` spelled out as
/// `anyOf: [{type: integer}, {type: string}]` (in an `allOf` ahead, when the schema has another
/// `anyOf`), unless the schema says so already.
fn unfold_int_or_string(schema: &mut Value) {
    let Some(m) = schema.as_object_mut() else {
        return;
    };
    if is_true(m, "x-kubernetes-int-or-string") {
        let int_or_string = json!([{"type": "integer"}, {"type": "string"}]);
        let spelled_out = m.get("anyOf") == Some(&int_or_string)
            || m.get("allOf")
                .and_then(|a| a.get(0))
                .and_then(|a| a.get("anyOf"))
                == Some(&int_or_string);
        if !spelled_out {
            if !m.contains_key("anyOf") {
                m.insert("anyOf".into(), int_or_string);
            } else if let Value::Array(all_of) = m.entry("allOf").or_insert_with(|| json!([])) {
                all_of.insert(0, json!({"anyOf": int_or_string}));
            }
        }
    }
    if let Some(Value::Object(props)) = m.get_mut("properties") {
        props.values_mut().for_each(unfold_int_or_string);
    }
    for key in ["items", "additionalProperties"] {
        if let Some(sub) = m.get_mut(key) {
            unfold_int_or_string(sub);
        }
    }
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
    let mut lists = false;
    for r in resources {
        let name = schema_name(r);
        for (path, item) in resource_paths(r, &prefix, &name, true) {
            paths.insert(path, item);
        }
        if r.is_custom() {
            let list = list_schema_name(r);
            extra.insert(name, custom_definition(r, custom_schema(state, r), true));
            extra.insert(list, custom_list_definition(r, true));
            lists = true;
        } else if defs.get(&name).is_some() {
            roots.push(name);
        } else {
            extra.insert(name, to_v3(&opaque_schema(r)));
        }
    }
    if lists {
        roots.push(LIST_META.to_owned());
    }
    let mut schemas = Map::new();
    for name in closure(roots.iter().map(String::as_str)) {
        if let Some(def) = defs.get(&name) {
            let def = definition_v3(&name, def);
            schemas.insert(name, def);
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
            let list = list_schema_name(r);
            definitions.insert(name, custom_definition(r, custom_schema(state, r), false));
            definitions.insert(list, custom_list_definition(r, false));
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

    /// A custom resource's info, as the builders read it: a built-in's, renamed.
    fn widget() -> ResourceInfo {
        let cm = crate::model::Registry::with_builtins()
            .lookup("", "v1", "configmaps")
            .unwrap();
        let mut r = (*cm).clone();
        r.group = "example.com".into();
        r.version = "v1".into();
        r.resource = "widgets".into();
        r.singular = "widget".into();
        r.kind = "Widget".into();
        r.list_kind = "WidgetList".into();
        r
    }

    #[test]
    fn custom_definitions_carry_type_meta_as_kube_builds_them() {
        let r = widget();
        let schema = json!({
            "type": "object",
            "properties": {
                "apiVersion": {"type": "string", "description": "the CRD's own"},
                "spec": {
                    "type": "object",
                    "required": ["port", "note"],
                    "properties": {
                        "port": {"x-kubernetes-int-or-string": true},
                        "note": {"type": "string", "nullable": true},
                        "choice": {"type": "string", "oneOf": [{"pattern": "a"}, {"pattern": "b"}]},
                        "template": {
                            "type": "object",
                            "x-kubernetes-embedded-resource": true,
                            "properties": {
                                "spec": {
                                    "type": "object",
                                    "x-kubernetes-preserve-unknown-fields": true,
                                    "properties": {"a": {"type": "string"}},
                                },
                            },
                        },
                    },
                },
            },
        });
        let gvk = json!([{"group": "example.com", "version": "v1", "kind": "Widget"}]);

        let v3 = custom_definition(&r, Some(schema.clone()), true);
        let names: Vec<&str> = v3["properties"]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(names, ["apiVersion", "kind", "metadata", "spec"]);
        assert_eq!(
            v3["properties"]["apiVersion"],
            json!({"description": API_VERSION_DOC, "type": "string"})
        );
        assert_eq!(
            v3["properties"]["metadata"],
            json!({"allOf": [{"$ref": format!("#/components/schemas/{OBJECT_META}")}], "description": OBJECT_META_DOC})
        );
        let spec = &v3["properties"]["spec"];
        assert_eq!(
            spec["properties"]["port"]["anyOf"],
            json!([{"type": "integer"}, {"type": "string"}])
        );
        assert_eq!(spec["properties"]["note"]["nullable"], true);
        let template = &spec["properties"]["template"];
        assert_eq!(
            template["properties"]["kind"],
            json!({"description": EMBEDDED_KIND_DOC, "type": "string"})
        );
        assert_eq!(template["required"], json!(["kind", "apiVersion"]));
        assert_eq!(v3["x-kubernetes-group-version-kind"], gvk);

        let v2 = custom_definition(&r, Some(schema), false);
        assert_eq!(
            v2["properties"]["metadata"],
            json!({"$ref": format!("#/definitions/{OBJECT_META}"), "description": OBJECT_META_DOC})
        );
        let spec = &v2["properties"]["spec"];
        assert_eq!(
            spec["properties"]["port"],
            json!({"x-kubernetes-int-or-string": true})
        );
        assert_eq!(spec["properties"]["note"], json!({}));
        assert_eq!(spec["properties"]["choice"], json!({"type": "string"}));
        assert_eq!(spec["required"], json!(["port"]));
        let template = &spec["properties"]["template"];
        assert_eq!(
            template["properties"]["spec"],
            json!({"x-kubernetes-preserve-unknown-fields": true})
        );
        assert_eq!(template["required"], json!(["kind", "apiVersion"]));

        // Unknown fields kept at the root: v2 has only the type, v3 everything.
        let open = json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true});
        assert_eq!(
            custom_definition(&r, Some(open.clone()), false),
            json!({"type": "object", "x-kubernetes-group-version-kind": gvk})
        );
        assert!(custom_definition(&r, Some(open), true)["properties"]["kind"].is_object());
        assert_eq!(
            custom_definition(&r, None, true),
            json!({"type": "object", "x-kubernetes-group-version-kind": gvk})
        );
    }

    #[test]
    fn a_custom_resource_has_a_list_definition() {
        let r = widget();
        assert_eq!(list_schema_name(&r), "com.example.v1.WidgetList");
        let v3 = custom_list_definition(&r, true);
        assert_eq!(v3["description"], "WidgetList is a list of Widget");
        assert_eq!(
            v3["properties"]["items"]["items"],
            json!({"$ref": "#/components/schemas/com.example.v1.Widget"})
        );
        assert_eq!(
            v3["properties"]["metadata"]["allOf"][0]["$ref"],
            format!("#/components/schemas/{LIST_META}")
        );
        assert_eq!(v3["properties"]["kind"]["description"], KIND_DOC);
        assert_eq!(v3["required"], json!(["items"]));
        assert_eq!(
            v3["x-kubernetes-group-version-kind"],
            json!([{"group": "example.com", "version": "v1", "kind": "WidgetList"}])
        );
        let v2 = custom_list_definition(&r, false);
        assert_eq!(
            v2["properties"]["items"]["items"]["$ref"],
            "#/definitions/com.example.v1.Widget"
        );
        assert_eq!(
            v2["properties"]["metadata"],
            json!({"$ref": format!("#/definitions/{LIST_META}"), "description": LIST_META_DOC})
        );
    }

    #[test]
    fn int_or_string_unfolds_as_kube_unfolds_it() {
        let pair = json!([{"type": "integer"}, {"type": "string"}]);
        let mut s = json!({"type": "object", "properties": {
            "bare": {"x-kubernetes-int-or-string": true},
            "bounded": {"x-kubernetes-int-or-string": true, "anyOf": [{"minimum": 42.0}]},
            "spelled": {"x-kubernetes-int-or-string": true, "anyOf": pair},
            "list": {"type": "array", "items": {"x-kubernetes-int-or-string": true}},
        }});
        unfold_int_or_string(&mut s);
        let props = &s["properties"];
        assert_eq!(props["bare"]["anyOf"], pair);
        assert_eq!(props["bounded"]["allOf"], json!([{"anyOf": pair}]));
        assert_eq!(props["bounded"]["anyOf"], json!([{"minimum": 42.0}]));
        assert!(props["spelled"].get("allOf").is_none());
        assert_eq!(props["list"]["items"]["anyOf"], pair);
    }

    #[test]
    fn built_in_enums_are_in_both_documents_forms() {
        let defs = definitions::get();
        let name = "io.k8s.api.core.v1.Container";
        let v2 = defs.get(name).unwrap();
        let v3 = definition_v3(name, v2);
        let last = concat!(
            "\n - `\"Never\"` means that kubelet never pulls an image, but only uses a local ",
            "image. Container will fail if the image isn't present",
        );
        for def in [v2, &v3] {
            let p = &def["properties"]["imagePullPolicy"];
            assert_eq!(p["enum"], json!(["Always", "IfNotPresent", "Never"]), "{p}");
            assert!(p["description"].as_str().unwrap().ends_with(last), "{p}");
        }
        // A list's enum is its items'.
        let name = "io.k8s.api.core.v1.PersistentVolumeClaimSpec";
        let pvc = definition_v3(name, defs.get(name).unwrap());
        assert_eq!(
            pvc["properties"]["accessModes"]["items"]["enum"][0],
            "ReadOnlyMany"
        );
    }

    #[test]
    fn v3_has_int_or_string_and_quantity_as_kube_publishes_them() {
        let defs = definitions::get();
        let ios = definition_v3(INT_OR_STRING, defs.get(INT_OR_STRING).unwrap());
        assert_eq!(
            ios,
            json!({
                "description": INT_OR_STRING_DOC,
                "format": "int-or-string",
                "oneOf": [{"type": "integer"}, {"type": "string"}],
            })
        );
        let q = definition_v3(QUANTITY, defs.get(QUANTITY).unwrap());
        assert_eq!(q["oneOf"], json!([{"type": "string"}, {"type": "number"}]));
        assert!(q.get("type").is_none() && q.get("format").is_none());
        assert!(QUANTITY_DOC.contains(
            "<binarySI>        ::= Ki | Mi | Gi | Ti | Pi | Ei\n\n\t(International System"
        ));
        // v2 keeps them as strings.
        assert_eq!(defs.get(INT_OR_STRING).unwrap()["type"], "string");
        assert_eq!(defs.get(QUANTITY).unwrap()["type"], "string");
    }
}
