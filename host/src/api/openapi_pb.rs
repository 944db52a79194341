//! The OpenAPI v2 document as gnostic's protobuf (`openapi.v2.Document`, the message
//! kube-apiserver serves at `/openapi/v2` to a client that accepts
//! `application/com.github.proto-openapi.spec.v2@v1.0+protobuf`).
//!
//! client-go's `OpenAPISchema` asks only for that encoding, and kubectl uses it where the v3
//! documents do not serve: client-side validation of a `kind: List` (what `kubectl get -o yaml`
//! of several objects writes), which fails outright when the document cannot be read.
//!
//! The message is written from the JSON document (`openapi::document_v2`) field by field, with
//! gnostic's field numbers; values gnostic keeps as `Any` (defaults, enums, examples, vendor
//! extensions) carry their JSON text in `Any.yaml`, which kube-openapi reads back with a YAML
//! parser (JSON is YAML). Keys Swagger 2.0 does not have are left out, as gnostic's compiler
//! leaves them out.

use prost::encoding::{encode_key, encode_varint, WireType};
use serde_json::{Map, Value};

/// `openapi.v2.Document` from a Swagger 2.0 JSON document.
pub fn document(doc: &Value) -> Vec<u8> {
    let mut m = Msg::default();
    m.string(1, str_of(doc, "swagger"));
    if let Some(info) = doc.get("info") {
        let mut i = Msg::default();
        i.string(1, str_of(info, "title"));
        i.string(2, str_of(info, "version"));
        i.string(3, str_of(info, "description"));
        m.message(2, i);
    }
    if let Some(paths) = doc.get("paths").and_then(Value::as_object) {
        m.message(8, named_map(paths, 2, Some(1), path_item));
    }
    if let Some(defs) = doc.get("definitions").and_then(Value::as_object) {
        m.message(9, named_map(defs, 1, None, schema));
    }
    extensions(&mut m, 16, doc);
    m.0
}

/// One message being written: fields in the order they are added.
#[derive(Default)]
struct Msg(Vec<u8>);

impl Msg {
    /// A string field (proto3 leaves out the empty string).
    fn string(&mut self, field: u32, s: &str) {
        if !s.is_empty() {
            self.bytes(field, s.as_bytes());
        }
    }

    fn bytes(&mut self, field: u32, b: &[u8]) {
        encode_key(field, WireType::LengthDelimited, &mut self.0);
        encode_varint(b.len() as u64, &mut self.0);
        self.0.extend_from_slice(b);
    }

    fn message(&mut self, field: u32, m: Msg) {
        self.bytes(field, &m.0);
    }

    /// A bool field; `oneof` members are written even when false.
    fn boolean(&mut self, field: u32, b: bool, always: bool) {
        if b || always {
            encode_key(field, WireType::Varint, &mut self.0);
            encode_varint(u64::from(b), &mut self.0);
        }
    }

    fn int(&mut self, field: u32, n: i64) {
        if n != 0 {
            encode_key(field, WireType::Varint, &mut self.0);
            // int64: two's complement as a varint.
            encode_varint(n as u64, &mut self.0);
        }
    }

    fn double(&mut self, field: u32, f: f64) {
        if f != 0.0 {
            encode_key(field, WireType::SixtyFourBit, &mut self.0);
            self.0.extend_from_slice(&f.to_le_bytes());
        }
    }

    /// `field` of `v` by its JSON type: a string, a bool, a number (as a double or an int64).
    fn string_of(&mut self, field: u32, v: &Value, key: &str) {
        self.string(field, str_of(v, key));
    }

    fn bool_of(&mut self, field: u32, v: &Value, key: &str) {
        self.boolean(
            field,
            v.get(key).and_then(Value::as_bool) == Some(true),
            false,
        );
    }

    fn int_of(&mut self, field: u32, v: &Value, key: &str) {
        if let Some(n) = v.get(key).and_then(Value::as_i64) {
            self.int(field, n);
        }
    }

    fn double_of(&mut self, field: u32, v: &Value, key: &str) {
        if let Some(f) = v.get(key).and_then(Value::as_f64) {
            self.double(field, f);
        }
    }

    fn strings_of(&mut self, field: u32, v: &Value, key: &str) {
        for s in v.get(key).and_then(Value::as_array).into_iter().flatten() {
            if let Some(s) = s.as_str() {
                // Repeated strings keep their empty members.
                self.bytes(field, s.as_bytes());
            }
        }
    }

    fn any_of(&mut self, field: u32, v: &Value, key: &str) {
        if let Some(x) = v.get(key) {
            self.message(field, any(x));
        }
    }

    fn anys_of(&mut self, field: u32, v: &Value, key: &str) {
        self.messages_of(field, v, key, any);
    }

    /// A repeated message field: `encode` of each item of the array `v[key]`.
    fn messages_of(&mut self, field: u32, v: &Value, key: &str, encode: impl Fn(&Value) -> Msg) {
        for x in v.get(key).and_then(Value::as_array).into_iter().flatten() {
            self.message(field, encode(x));
        }
    }
}

fn str_of<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

/// `Any { yaml }`: the value's JSON text.
fn any(v: &Value) -> Msg {
    let mut a = Msg::default();
    a.bytes(2, v.to_string().as_bytes());
    a
}

/// A `Named*` pair: `name = 1`, `value = 2`.
fn named(name: &str, value: Msg) -> Msg {
    let mut n = Msg::default();
    n.bytes(1, name.as_bytes());
    n.message(2, value);
    n
}

fn named_any(name: &str, v: &Value) -> Msg {
    named(name, any(v))
}

/// The `x-` keys of `v` as `NamedAny`s in `field`.
fn extensions(m: &mut Msg, field: u32, v: &Value) {
    for (k, x) in v.as_object().into_iter().flatten() {
        if k.starts_with("x-") {
            m.message(field, named_any(k, x));
        }
    }
}

fn schema(v: &Value) -> Msg {
    let mut m = Msg::default();
    let Some(o) = v.as_object() else {
        return m;
    };
    m.string_of(1, v, "$ref");
    m.string_of(2, v, "format");
    m.string_of(3, v, "title");
    m.string_of(4, v, "description");
    m.any_of(5, v, "default");
    m.double_of(6, v, "multipleOf");
    m.double_of(7, v, "maximum");
    m.bool_of(8, v, "exclusiveMaximum");
    m.double_of(9, v, "minimum");
    m.bool_of(10, v, "exclusiveMinimum");
    m.int_of(11, v, "maxLength");
    m.int_of(12, v, "minLength");
    m.string_of(13, v, "pattern");
    m.int_of(14, v, "maxItems");
    m.int_of(15, v, "minItems");
    m.bool_of(16, v, "uniqueItems");
    m.int_of(17, v, "maxProperties");
    m.int_of(18, v, "minProperties");
    m.strings_of(19, v, "required");
    m.anys_of(20, v, "enum");
    match o.get("additionalProperties") {
        Some(Value::Bool(b)) => {
            let mut a = Msg::default();
            a.boolean(2, *b, true);
            m.message(21, a);
        }
        Some(s @ Value::Object(_)) => {
            let mut a = Msg::default();
            a.message(1, schema(s));
            m.message(21, a);
        }
        _ => {}
    }
    match o.get("type") {
        Some(Value::String(t)) => {
            let mut t_ = Msg::default();
            t_.bytes(1, t.as_bytes());
            m.message(22, t_);
        }
        Some(Value::Array(ts)) => {
            let mut t_ = Msg::default();
            for t in ts.iter().filter_map(Value::as_str) {
                t_.bytes(1, t.as_bytes());
            }
            m.message(22, t_);
        }
        _ => {}
    }
    match o.get("items") {
        Some(s @ Value::Object(_)) => {
            let mut i = Msg::default();
            i.message(1, schema(s));
            m.message(23, i);
        }
        Some(Value::Array(ss)) => {
            let mut i = Msg::default();
            for s in ss {
                i.message(1, schema(s));
            }
            m.message(23, i);
        }
        _ => {}
    }
    m.messages_of(24, v, "allOf", schema);
    if let Some(props) = o.get("properties").and_then(Value::as_object) {
        m.message(25, named_map(props, 1, None, schema));
    }
    m.string_of(26, v, "discriminator");
    m.bool_of(27, v, "readOnly");
    if let Some(d) = o.get("externalDocs") {
        m.message(29, external_docs(d));
    }
    m.any_of(30, v, "example");
    extensions(&mut m, 31, v);
    m
}

/// A map as gnostic writes one: each entry a `Named*` pair of `entry(value)` in field `pairs`;
/// with `extensions`, the `x-` keys are vendor extensions (`NamedAny`) in that field instead
/// (where they are not: a property or definition may be named `x-…`).
fn named_map(
    map: &Map<String, Value>,
    pairs: u32,
    extensions: Option<u32>,
    entry: fn(&Value) -> Msg,
) -> Msg {
    let mut m = Msg::default();
    for (name, v) in map {
        match extensions.filter(|_| name.starts_with("x-")) {
            Some(field) => m.message(field, named_any(name, v)),
            None => m.message(pairs, named(name, entry(v))),
        }
    }
    m
}

fn external_docs(v: &Value) -> Msg {
    let mut m = Msg::default();
    m.string_of(1, v, "description");
    m.string_of(2, v, "url");
    extensions(&mut m, 3, v);
    m
}

fn path_item(v: &Value) -> Msg {
    let mut m = Msg::default();
    m.string_of(1, v, "$ref");
    for (field, verb) in [
        (2, "get"),
        (3, "put"),
        (4, "post"),
        (5, "delete"),
        (6, "options"),
        (7, "head"),
        (8, "patch"),
    ] {
        if let Some(op) = v.get(verb) {
            m.message(field, operation(op));
        }
    }
    m.messages_of(9, v, "parameters", parameters_item);
    extensions(&mut m, 10, v);
    m
}

fn operation(v: &Value) -> Msg {
    let mut m = Msg::default();
    m.strings_of(1, v, "tags");
    m.string_of(2, v, "summary");
    m.string_of(3, v, "description");
    if let Some(d) = v.get("externalDocs") {
        m.message(4, external_docs(d));
    }
    m.string_of(5, v, "operationId");
    m.strings_of(6, v, "produces");
    m.strings_of(7, v, "consumes");
    m.messages_of(8, v, "parameters", parameters_item);
    if let Some(rs) = v.get("responses").and_then(Value::as_object) {
        m.message(9, named_map(rs, 1, Some(2), response_value));
    }
    m.strings_of(10, v, "schemes");
    m.bool_of(11, v, "deprecated");
    extensions(&mut m, 13, v);
    m
}

fn json_reference(v: &Value) -> Msg {
    let mut r = Msg::default();
    r.string_of(1, v, "$ref");
    r.string_of(2, v, "description");
    r
}

fn response_value(v: &Value) -> Msg {
    let mut m = Msg::default();
    if v.get("$ref").is_some() {
        m.message(2, json_reference(v));
        return m;
    }
    let mut r = Msg::default();
    r.string_of(1, v, "description");
    if let Some(s) = v.get("schema") {
        let mut item = Msg::default();
        item.message(1, schema(s));
        r.message(2, item);
    }
    extensions(&mut r, 5, v);
    m.message(1, r);
    m
}

fn parameters_item(v: &Value) -> Msg {
    let mut m = Msg::default();
    if v.get("$ref").is_some() {
        m.message(2, json_reference(v));
        return m;
    }
    let mut param = Msg::default();
    let location = str_of(v, "in");
    if location == "body" {
        let mut b = Msg::default();
        b.string_of(1, v, "description");
        b.string_of(2, v, "name");
        b.string_of(3, v, "in");
        b.bool_of(4, v, "required");
        if let Some(s) = v.get("schema") {
            b.message(5, schema(s));
        }
        extensions(&mut b, 6, v);
        param.message(1, b);
    } else {
        // Header and path sub-schemas have no `allowEmptyValue`; query and formData have it as
        // field 5, and every later field one number up.
        let (which, allow_empty) = match location {
            "header" => (1, false),
            "formData" => (2, true),
            "path" => (4, false),
            _ => (3, true),
        };
        let mut s = Msg::default();
        s.bool_of(1, v, "required");
        s.string_of(2, v, "in");
        s.string_of(3, v, "description");
        s.string_of(4, v, "name");
        let up = if allow_empty {
            s.bool_of(5, v, "allowEmptyValue");
            1
        } else {
            0
        };
        primitive_fields(&mut s, 5 + up, v);
        let mut nb = Msg::default();
        nb.message(which, s);
        param.message(2, nb);
    }
    m.message(1, param);
    m
}

/// The fields a non-body parameter and `PrimitivesItems` share, numbered from `first` (`type`)
/// in gnostic's order, up to the vendor extensions.
fn primitive_fields(m: &mut Msg, first: u32, v: &Value) {
    m.string_of(first, v, "type");
    m.string_of(first + 1, v, "format");
    if let Some(items) = v.get("items") {
        m.message(first + 2, primitives_items(items));
    }
    m.string_of(first + 3, v, "collectionFormat");
    m.any_of(first + 4, v, "default");
    m.double_of(first + 5, v, "maximum");
    m.bool_of(first + 6, v, "exclusiveMaximum");
    m.double_of(first + 7, v, "minimum");
    m.bool_of(first + 8, v, "exclusiveMinimum");
    m.int_of(first + 9, v, "maxLength");
    m.int_of(first + 10, v, "minLength");
    m.string_of(first + 11, v, "pattern");
    m.int_of(first + 12, v, "maxItems");
    m.int_of(first + 13, v, "minItems");
    m.bool_of(first + 14, v, "uniqueItems");
    m.anys_of(first + 15, v, "enum");
    m.double_of(first + 16, v, "multipleOf");
    extensions(m, first + 17, v);
}

fn primitives_items(v: &Value) -> Msg {
    let mut m = Msg::default();
    primitive_fields(&mut m, 1, v);
    m
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A minimal reader of the wire format: (field, wire type, bytes or varint) in order.
    fn fields(mut b: &[u8]) -> Vec<(u32, u8, Vec<u8>, u64)> {
        let mut out = Vec::new();
        while !b.is_empty() {
            let key = prost::encoding::decode_varint(&mut b).unwrap();
            let (field, wt) = ((key >> 3) as u32, (key & 7) as u8);
            match wt {
                0 => out.push((
                    field,
                    wt,
                    vec![],
                    prost::encoding::decode_varint(&mut b).unwrap(),
                )),
                1 => {
                    out.push((field, wt, b[..8].to_vec(), 0));
                    b = &b[8..];
                }
                2 => {
                    let n = prost::encoding::decode_varint(&mut b).unwrap() as usize;
                    out.push((field, wt, b[..n].to_vec(), 0));
                    b = &b[n..];
                }
                _ => panic!("wire type {wt}"),
            }
        }
        out
    }

    fn field(b: &[u8], n: u32) -> Vec<Vec<u8>> {
        fields(b)
            .into_iter()
            .filter(|f| f.0 == n)
            .map(|f| f.2)
            .collect()
    }

    #[test]
    fn definitions_carry_gnostics_field_numbers() {
        let doc = json!({
            "swagger": "2.0",
            "info": {"title": "Kubernetes", "version": "v1.36.0"},
            "paths": {"/api/v1/namespaces/{namespace}/configmaps": {
                "post": {"operationId": "create", "parameters": [
                    {"name": "body", "in": "body", "required": true, "schema": {"$ref": "#/definitions/cm"}},
                    {"name": "dryRun", "in": "query", "type": "string", "uniqueItems": true}],
                    "responses": {"201": {"description": "Created", "schema": {"$ref": "#/definitions/cm"}}}},
                "parameters": [{"name": "namespace", "in": "path", "required": true, "type": "string"}]}},
            "definitions": {"cm": {
                "type": "object", "required": ["data"],
                "properties": {"data": {"type": "object", "additionalProperties": {"type": "string"}},
                               "n": {"type": "integer", "format": "int32", "minimum": 1.5}},
                "additionalProperties": false,
                "x-kubernetes-group-version-kind": [{"group": "", "kind": "ConfigMap", "version": "v1"}]}},
        });
        let b = document(&doc);
        assert_eq!(field(&b, 1), vec![b"2.0".to_vec()]);
        let info = &field(&b, 2)[0];
        assert_eq!(field(info, 2), vec![b"v1.36.0".to_vec()]);
        // definitions -> NamedSchema -> Schema
        let defs = &field(&b, 9)[0];
        let named = &field(defs, 1)[0];
        assert_eq!(field(named, 1), vec![b"cm".to_vec()]);
        let s = &field(named, 2)[0];
        assert_eq!(field(&field(s, 22)[0], 1), vec![b"object".to_vec()]);
        assert_eq!(field(s, 19), vec![b"data".to_vec()]);
        // additionalProperties: false is the oneof's boolean, written although false.
        let ap = fields(&field(s, 21)[0]);
        assert_eq!((ap[0].0, ap[0].1, ap[0].3), (2, 0, 0));
        // properties -> NamedSchema "data" -> additionalProperties schema of type string.
        let props = &field(s, 25)[0];
        let data = &field(props, 1)[0];
        let data_schema = &field(data, 2)[0];
        let ap_schema = &field(&field(data_schema, 21)[0], 1)[0];
        assert_eq!(field(&field(ap_schema, 22)[0], 1), vec![b"string".to_vec()]);
        let n = &field(&field(props, 1)[1], 2)[0];
        assert_eq!(field(n, 9), vec![1.5f64.to_le_bytes().to_vec()]);
        // x-kubernetes-group-version-kind as a NamedAny with the JSON text as yaml.
        let ext = &field(s, 31)[0];
        assert_eq!(
            field(ext, 1),
            vec![b"x-kubernetes-group-version-kind".to_vec()]
        );
        let yaml = &field(&field(ext, 2)[0], 2)[0];
        let back: Value = serde_json::from_slice(yaml).unwrap();
        assert_eq!(
            back,
            doc["definitions"]["cm"]["x-kubernetes-group-version-kind"]
        );
        // paths -> NamedPathItem -> PathItem: post (4) and the path parameter (9).
        let paths = &field(&b, 8)[0];
        let item = &field(&field(paths, 2)[0], 2)[0];
        let post = &field(item, 4)[0];
        assert_eq!(field(post, 5), vec![b"create".to_vec()]);
        let params = field(post, 8);
        // body: ParametersItem.parameter(1) -> Parameter.body_parameter(1) -> schema (5).
        let body = &field(&field(&params[0], 1)[0], 1)[0];
        assert_eq!(
            field(&field(body, 5)[0], 1),
            vec![b"#/definitions/cm".to_vec()]
        );
        // query: Parameter.non_body_parameter(2) -> query(3) -> type (6), uniqueItems (20).
        let query = &field(&field(&field(&params[1], 1)[0], 2)[0], 3)[0];
        assert_eq!(field(query, 6), vec![b"string".to_vec()]);
        assert!(fields(query).iter().any(|f| f.0 == 20 && f.3 == 1));
        // path: non_body_parameter -> path(4) -> type (5), required (1).
        let path = &field(&field(&field(&field(item, 9)[0], 1)[0], 2)[0], 4)[0];
        assert_eq!(field(path, 5), vec![b"string".to_vec()]);
        // responses -> NamedResponseValue "201" -> ResponseValue.response -> schema item.
        let resp = &field(&field(post, 9)[0], 1)[0];
        assert_eq!(field(resp, 1), vec![b"201".to_vec()]);
        let r = &field(&field(resp, 2)[0], 1)[0];
        assert_eq!(field(r, 1), vec![b"Created".to_vec()]);
    }
}
