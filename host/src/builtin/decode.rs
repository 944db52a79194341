//! Decoding a built-in kind as kube-apiserver decodes it into its Go type, driven by the published
//! definitions instead of Go structs:
//!
//! - a value of the wrong JSON type fails the whole request with the error Go's `encoding/json`
//!   gives (`json: cannot unmarshal number into Go struct field ConfigMap.data of type string`),
//!   the first one in document order, as the decoder reports only its first;
//! - fields the type does not have are dropped and reported (kube's paths:
//!   `spec.containers[0].bogus`), for the caller to refuse or warn per `fieldValidation`;
//! - `null` for a field leaves it unset, as it leaves the Go field at its zero value, which is
//!   then omitted;
//! - `null` for an element of a map or a list is the element type's zero value, as Go's decoder
//!   makes a new element for each and leaves it as it is for a `null`: `""` in a
//!   `map[string]string` (labels, annotations, a ConfigMap's `data`, `matchLabels`) or a
//!   `[]string`, `0`, `false`, a `Quantity`'s `"0"` (its `UnmarshalJSON` reads `null` as zero), a
//!   struct's `{}`; an element that is a map, a list, a `Time` (zero is `null`) or a value Go
//!   decodes itself (`RawExtension`) stays `null`;
//! - a `Quantity` (a string, or a number as `Quantity`'s JSON decoding accepts them) is stored in
//!   kube's canonical form (`0.5` -> `500m`), a malformed one refused with kube's message.
//! - a `Time` or `MicroTime` is parsed as kube's `UnmarshalJSON` parses it (Go's `time.Parse`,
//!   [`super::time`]) and stored as kube writes it back: in UTC, a `Time` with whole seconds, a
//!   `MicroTime` with six fraction digits; Go's zero time is unset (kube writes `null`). One that
//!   does not parse is Go's error (`parsing time "x" as "2006-01-02T15:04:05Z07:00": cannot parse
//!   "x" as "2006"`), another JSON type Go's error of decoding it into a `string`.
//! - as in Go's decoder, a value of the wrong type is reported only if nothing that decodes itself
//!   (a `Quantity`, `IntOrString`, `Time`) fails later in the document: those errors end the
//!   decoding at once, type errors are kept and decoding goes on (`saveError`).
//! - a Secret's write-only `stringData` is folded into `data`, and an empty `type` is `Opaque`
//!   ([`secret_on_decode`]), as kube's defaulting and conversion to its internal type do.
//!
//! Kinds turtles serves without a definition (its own `Controller`) are left as they are.

use base64::Engine;
use serde_json::Value;

use super::definitions::{self, Definitions};
use super::time::Precision;
use crate::model::json::{DuplicateField, PathSegment};
use crate::schema::objectmeta::go_type_name;

const QUANTITY: &str = "io.k8s.apimachinery.pkg.api.resource.Quantity";
const INT_OR_STRING: &str = "io.k8s.apimachinery.pkg.util.intstr.IntOrString";
const TIME: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.Time";
const MICRO_TIME: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime";
const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";
const MANAGED_FIELDS_ENTRY: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ManagedFieldsEntry";

/// Why a body cannot be decoded: the text of Go's error, without kube's prefix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct DecodeError(pub String);

/// Decode `obj` as the built-in kind `group/version, Kind=kind`. Returns the unknown fields that
/// were dropped (empty when the kind has no definition).
pub fn decode(
    group: &str,
    version: &str,
    kind: &str,
    obj: &mut Value,
) -> Result<Vec<String>, DecodeError> {
    decode_noting_changes(group, version, kind, obj).map(|d| d.unknown)
}

/// What [`decode_noting_changes`] did to an object.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Decoded {
    /// The unknown fields it dropped, with kube's paths.
    pub unknown: Vec<String>,
    /// Whether it changed the object at all: dropped a field or a `null`, made a `null` element
    /// its type's zero value, or rewrote a quantity or a time in its canonical form. An object it
    /// did not change is as the decoder leaves it: decoding it again finds and changes nothing.
    pub changed: bool,
}

#[cfg(test)]
thread_local! {
    /// How many objects this thread decoded: a test's way to count the decodes of one write
    /// (`tokio::test` runs a write on the test's thread).
    pub static DECODES: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// [`decode`], also telling whether the object changed.
pub fn decode_noting_changes(
    group: &str,
    version: &str,
    kind: &str,
    obj: &mut Value,
) -> Result<Decoded, DecodeError> {
    #[cfg(test)]
    DECODES.with(|n| n.set(n.get() + 1));
    let defs = definitions::get();
    let Some(name) = defs.name_of(group, version, kind) else {
        return Ok(Decoded::default());
    };
    let Some(def) = defs.get(name) else {
        return Ok(Decoded::default());
    };
    let mut d = Decoder::new(defs, false);
    d.structs.push(short_name(name));
    d.value(def, obj)?;
    if let Some(e) = d.saved {
        return Err(e);
    }
    let mut changed = d.changed;
    if (group, version, kind) == SECRET {
        changed |= secret_on_decode(obj)?;
    }
    Ok(Decoded {
        unknown: d.unknown,
        changed,
    })
}

/// The time fields of an object's `metadata` (`creationTimestamp`, `deletionTimestamp`, each
/// `managedFields[].time`) decoded as kube decodes them ([`super::time`]), for any kind, before
/// anything else reads the body: a built-in kind's as part of its body (a type error names
/// `ObjectMeta.metadata.creationTimestamp`), any other's (a custom resource) as kube's
/// `GetObjectMeta` reads its metadata alone into the typed `ObjectMeta`
/// (`ObjectMeta.creationTimestamp`). Rewritten in place in kube's form; returns whether anything
/// changed. The write path takes `managedFields` out of the body and overwrites the timestamps
/// before the object's own decode, which would then never see them.
pub fn decode_metadata_times(
    group: &str,
    version: &str,
    kind: &str,
    obj: &mut Value,
) -> Result<bool, DecodeError> {
    let defs = definitions::get();
    let Some(meta) = obj.get_mut("metadata").filter(|m| m.is_object()) else {
        return Ok(false);
    };
    let mut d = Decoder::new(defs, true);
    if let Some(name) = defs
        .name_of(group, version, kind)
        .filter(|n| defs.get(n).is_some())
    {
        d.path.push_str("metadata");
        d.fields.push("metadata");
        d.structs.push(short_name(name));
    }
    d.value(schema_ref(OBJECT_META), meta)?;
    Ok(d.changed)
}

/// A `metadata.managedFields` list a write took out of its object, its entries' `time` in kube's
/// form. A time that does not parse is left as it is: the body's decode reported it already
/// ([`decode_metadata_times`], a patch's decode).
pub fn normalize_managed_fields_times(list: &mut Value) {
    let Some(entries) = list.as_array_mut() else {
        return;
    };
    let defs = definitions::get();
    for entry in entries {
        let _ = Decoder::new(defs, true).value(schema_ref(MANAGED_FIELDS_ENTRY), entry);
    }
}

/// Every `Time` and `MicroTime` of an object of a built-in kind decoded as [`decode`] decodes
/// them, and nothing else looked at: rewritten in place in kube's form, or the first that does
/// not parse (document order) is Go's error. What kube's unstructured converter finds converting
/// a server-side apply's result to the kind's type. Returns whether anything changed; a kind
/// without a definition has none.
pub fn decode_times(
    group: &str,
    version: &str,
    kind: &str,
    obj: &mut Value,
) -> Result<bool, DecodeError> {
    let defs = definitions::get();
    let Some(name) = defs.name_of(group, version, kind) else {
        return Ok(false);
    };
    let Some(def) = defs.get(name) else {
        return Ok(false);
    };
    let mut d = Decoder::new(defs, true);
    d.structs.push(short_name(name));
    d.value(def, obj)?;
    Ok(d.changed)
}

/// The core v1 Secret.
const SECRET: (&str, &str, &str) = ("", "v1", "Secret");

/// What kube's decoding of a v1 Secret does past its fields' types, on every write (a create's
/// or update's body, a patched object, a server-side apply's result, a mutating webhook's
/// answer): `SetDefaults_Secret` (an empty `type` is `Opaque`), then the conversion to kube's
/// internal type (`Convert_v1_Secret_To_core_Secret`, pkg/apis/core/v1/conversion.go): each
/// key of a non-empty `stringData` overwrites `data[key]` with its bytes (base64 here), and
/// `stringData`, which the internal type does not have, is gone: never stored nor returned. A
/// `null` value is the empty string (Go's zero value in a `map[string]string`); a value of
/// another type, or a `stringData` that is not a map, is Go's decoding error (`json: cannot
/// unmarshal number into Go struct field Secret.stringData of type string`), and then the
/// object is left as it was. Returns whether the object changed.
pub fn secret_on_decode(obj: &mut Value) -> Result<bool, DecodeError> {
    let Some(map) = obj.as_object_mut() else {
        return Ok(false);
    };
    // The values first, so that an error leaves the object untouched.
    let folded: Option<Vec<(String, String)>> = match map.get("stringData") {
        None | Some(Value::Null) => None,
        Some(Value::Object(sd)) => {
            let mut out = Vec::with_capacity(sd.len());
            for (k, v) in sd {
                let text = match v {
                    Value::String(s) => s.as_str(),
                    Value::Null => "",
                    other => {
                        return Err(DecodeError(format!(
                            "json: cannot unmarshal {} into Go struct field Secret.stringData of type string",
                            go_type_name(other)
                        )))
                    }
                };
                out.push((
                    k.clone(),
                    base64::engine::general_purpose::STANDARD.encode(text),
                ));
            }
            Some(out)
        }
        Some(other) => {
            return Err(DecodeError(format!(
                "json: cannot unmarshal {} into Go struct field Secret.stringData of type map[string]string",
                go_type_name(other)
            )))
        }
    };
    let data_ok = matches!(
        map.get("data"),
        None | Some(Value::Null) | Some(Value::Object(_))
    );
    if folded.as_ref().is_some_and(|f| !f.is_empty()) && !data_ok {
        let found = map.get("data").map_or("null", go_type_name);
        return Err(DecodeError(format!(
            "json: cannot unmarshal {found} into Go struct field Secret.data of type map[string][]uint8"
        )));
    }
    let mut changed = false;
    let untyped = match map.get("type") {
        None | Some(Value::Null) => true,
        Some(Value::String(s)) => s.is_empty(),
        Some(_) => false,
    };
    if untyped {
        map.insert("type".into(), Value::String("Opaque".into()));
        changed = true;
    }
    if map.shift_remove("stringData").is_some() {
        changed = true;
    }
    if let Some(folded) = folded.filter(|f| !f.is_empty()) {
        let data = map
            .entry("data")
            .or_insert_with(|| Value::Object(serde_json::Map::new()));
        if data.is_null() {
            *data = Value::Object(serde_json::Map::new());
        }
        if let Some(d) = data.as_object_mut() {
            for (k, v) in folded {
                d.insert(k, Value::String(v));
            }
        }
    }
    Ok(changed)
}

/// kube's unstructured converter's error for a Secret's `stringData` (`FromUnstructured` in
/// apimachinery's runtime/converter.go, which the result of a strategic merge patch goes through
/// instead of Go's JSON decoder): `cannot restore map from string` for a `stringData` that is
/// not a map (Go's kind of the value: `string`, `int64`, `float64`, `bool`, `slice`), `cannot
/// convert int64 to string` for an integer value, `unrecognized type: string` for another value
/// that is not a string. `None`: its `stringData` converts (absent, `null`, strings and `null`s).
pub fn secret_unstructured_error(obj: &Value) -> Option<String> {
    match obj.get("stringData")? {
        Value::Null => None,
        Value::Object(sd) => sd.values().find_map(|v| match v {
            Value::String(_) | Value::Null => None,
            Value::Number(n) if n.is_i64() => Some("cannot convert int64 to string".to_owned()),
            _ => Some("unrecognized type: string".to_owned()),
        }),
        other => {
            let kind = match other {
                Value::Number(n) if n.is_i64() => "int64",
                Value::Number(_) => "float64",
                Value::Bool(_) => "bool",
                Value::Array(_) => "slice",
                _ => "string",
            };
            Some(format!("cannot restore map from {kind}"))
        }
    }
}

/// The keys a body repeated (`model::json::from_slice`) that kube's strict decoder reports for
/// the kind (sigs.k8s.io/json's `DisallowDuplicateFields`, as `duplicate field "PATH"`): a
/// field of a struct or a key of a map, as the type is walked. Not a key the struct does not
/// have (reported once, as unknown), nor anything inside such a field or inside a value its Go
/// type decodes itself (`RawExtension`, `FieldsV1`, a CRD schema's `default` and the other
/// `JSON` values: their `UnmarshalJSON` does not look). A kind without a definition is decoded
/// as unstructured: every repeated key.
pub fn duplicates(group: &str, version: &str, kind: &str, found: &[DuplicateField]) -> Vec<String> {
    if found.is_empty() {
        return Vec::new();
    }
    let defs = definitions::get();
    let Some(def) = defs.name_of(group, version, kind).and_then(|n| defs.get(n)) else {
        return found.iter().map(|d| d.path.clone()).collect();
    };
    found
        .iter()
        .filter(|d| checked(defs, def, &d.segments))
        .map(|d| d.path.clone())
        .collect()
}

/// Whether kube's typed decoder checks the key at the end of `segments` for repeats.
fn checked(defs: &Definitions, root: &Value, segments: &[PathSegment]) -> bool {
    let Some((last, parents)) = segments.split_last() else {
        return false;
    };
    let mut schema = root;
    for seg in parents {
        match typed_child(defs, schema, seg) {
            Some(s) => schema = s,
            None => return false,
        }
    }
    typed_child(defs, schema, last).is_some()
}

/// The schema of a struct's field, a map's value or a list's item; `None` where the type has no
/// such step it decodes field by field (an unknown field, a scalar, a type that decodes itself:
/// an object without properties, or no type at all).
fn typed_child<'a>(
    defs: &'a Definitions,
    schema: &'a Value,
    seg: &PathSegment,
) -> Option<&'a Value> {
    let schema = defs.resolve(schema).map_or(schema, |(_, def)| def);
    let ty = schema.get("type").and_then(Value::as_str);
    match seg {
        PathSegment::Key(key) if ty == Some("object") => {
            match schema.get("properties").and_then(Value::as_object) {
                Some(props) => props.get(key.as_str()),
                None => schema
                    .get("additionalProperties")
                    .filter(|ap| ap.is_object()),
            }
        }
        PathSegment::Index(_) if ty == Some("array") => schema.get("items"),
        _ => None,
    }
}

struct Decoder<'a> {
    defs: &'a Definitions,
    /// kube's path of the current value, with list indices (`spec.containers[0]`).
    path: String,
    /// The Go struct field names from the root (`encoding/json`'s field stack).
    fields: Vec<&'a str>,
    /// The Go struct types entered; the last is the one whose field is being decoded.
    structs: Vec<&'a str>,
    unknown: Vec<String>,
    /// Whether a field or a `null` was dropped, a `null` element zeroed or a quantity or time
    /// rewritten.
    changed: bool,
    /// The first type error, reported once the whole value is decoded unless an error that ends
    /// the decoding comes first (Go's `saveError`, and the errors a value's own `UnmarshalJSON`
    /// returns).
    saved: Option<DecodeError>,
    /// Only `Time` and `MicroTime` values are looked at (and rewritten, or refused): nothing is
    /// dropped, zeroed or reported as the wrong type.
    times_only: bool,
}

/// `io.k8s.api.core.v1.PodSpec` -> `PodSpec`.
fn short_name(def: &str) -> &str {
    def.rsplit('.').next().unwrap_or(def)
}

/// `io.k8s.api.core.v1.PodSpec` -> `v1.PodSpec`, as Go prints a type.
fn go_name(def: &str) -> String {
    let mut parts = def.rsplit('.');
    let ty = parts.next().unwrap_or(def);
    match parts.next() {
        Some(pkg) => format!("{pkg}.{ty}"),
        None => ty.to_owned(),
    }
}

impl<'a> Decoder<'a> {
    fn new(defs: &'a Definitions, times_only: bool) -> Self {
        Decoder {
            defs,
            path: String::new(),
            fields: Vec::new(),
            structs: Vec::new(),
            unknown: Vec::new(),
            changed: false,
            saved: None,
            times_only,
        }
    }

    /// Keeps the first type error (Go's `saveError`): decoding goes on.
    fn save(&mut self, e: DecodeError) {
        if self.saved.is_none() {
            self.saved = Some(e);
        }
    }

    /// A `Time` (`Seconds`) or `MicroTime` (`Micros`) value, as its `UnmarshalJSON` reads it
    /// and kube writes it back: rewritten in kube's form (`null` for Go's zero time, which the
    /// caller drops from a struct). Its errors end the decoding: a text that does not parse is
    /// Go's `time.ParseError`, another JSON type the error of `json.Unmarshal` into the
    /// `string` it decodes first, to which the decoder adds the field (`json: cannot unmarshal
    /// number into Go struct field LeaseSpec.spec.renewTime of type string`).
    fn time(&mut self, precision: Precision, v: &mut Value) -> Result<(), DecodeError> {
        if v.is_null() {
            return Ok(());
        }
        let Value::String(text) = &*v else {
            return Err(self.type_error_of(go_type_name(v), "string"));
        };
        let canonical = super::time::canonical(precision, text).map_err(DecodeError)?;
        if canonical.as_deref() == Some(text.as_str()) {
            return Ok(());
        }
        *v = canonical.map_or(Value::Null, Value::String);
        self.changed = true;
        Ok(())
    }

    /// What Go's decoder leaves in a map's or a list's element of this schema's type for a JSON
    /// `null`: the element starts as the type's zero value and `null` leaves a string, number,
    /// bool or struct as it is (`literalStore`), which kube then writes out; `Quantity` reads
    /// `null` as zero (`"0"`), `IntOrString` as the integer 0. `None`: the element is a map, a
    /// list, a pointer-like value that writes its zero as `null` (`Time`, `MicroTime`) or a value
    /// that decodes itself (`RawExtension`, `FieldsV1`, untyped JSON): it stays `null`.
    fn zero_element(&self, schema: &Value) -> Option<Value> {
        let (schema, def_name) = match self.defs.resolve(schema) {
            Some((name, def)) => (def, Some(name)),
            None => (schema, None),
        };
        match def_name {
            Some(QUANTITY) => return Some(Value::String("0".to_owned())),
            Some(INT_OR_STRING) => return Some(Value::from(0)),
            Some(TIME) | Some(MICRO_TIME) => return None,
            _ => {}
        }
        match schema.get("type").and_then(Value::as_str) {
            // `[]byte` too: kube stores built-in kinds as protobuf, which reads an absent
            // `bytes` map value back as empty, written `""`.
            Some("string") => Some(Value::String(String::new())),
            Some("integer") | Some("number") => Some(Value::from(0)),
            Some("boolean") => Some(Value::Bool(false)),
            Some("object") if schema.get("properties").is_some() => {
                Some(Value::Object(serde_json::Map::new()))
            }
            _ => None,
        }
    }

    /// Whether kube's stored object lacks this field with this value: an empty map or list (kube
    /// stores built-in kinds as protobuf, which reads an empty repeated or map field back as
    /// nil, then omitted or written `null`), or the zero value of a non-pointer `omitempty`
    /// scalar (`hostNetwork: false`, `hostPort: 0`, `workingDir: ""`, from the json tags of
    /// kube's types, `omitempty.json`). A struct's `{}`, a pointer's zero (`replicas: 0`,
    /// `automountServiceAccountToken: false`) and values that decode themselves stay.
    fn omitted(&self, def_name: Option<&str>, field: &str, sub: &Value, v: &Value) -> bool {
        let schema = self.defs.resolve(sub).map_or(sub, |(_, def)| def);
        match v {
            Value::Object(m) if m.is_empty() => {
                schema.get("type").and_then(Value::as_str) == Some("object")
                    && schema.get("properties").is_none()
                    && schema.get("additionalProperties").is_some()
            }
            Value::Array(a) if a.is_empty() => {
                schema.get("type").and_then(Value::as_str) == Some("array")
            }
            Value::Bool(false) | Value::String(_) | Value::Number(_) => {
                let zero = match v {
                    Value::String(s) => s.is_empty(),
                    Value::Number(n) => n.as_f64() == Some(0.0),
                    _ => true,
                };
                zero && def_name.is_some_and(|d| super::omitempty::omits(d, field))
            }
            _ => false,
        }
    }

    /// A `null` element of a map or list made its type's zero value ([`Self::zero_element`]).
    fn zero_null_element(&mut self, schema: &Value, v: &mut Value) {
        if let Some(zero) = self.zero_element(schema) {
            *v = zero;
            self.changed = true;
        }
    }

    /// The Go type of a schema, as `encoding/json` names it in errors.
    fn go_type(&self, schema: &Value) -> String {
        if let Some((name, _)) = self.defs.resolve(schema) {
            return go_name(name);
        }
        let format = schema.get("format").and_then(Value::as_str).unwrap_or("");
        match schema.get("type").and_then(Value::as_str) {
            Some("string") if format == "byte" => "[]uint8".to_owned(),
            Some("string") => "string".to_owned(),
            Some("integer") if format == "int32" => "int32".to_owned(),
            Some("integer") => "int64".to_owned(),
            Some("number") => "float64".to_owned(),
            Some("boolean") => "bool".to_owned(),
            Some("array") => match schema.get("items") {
                Some(items) => format!("[]{}", self.go_type(items)),
                None => "[]interface {}".to_owned(),
            },
            Some("object") => match schema.get("additionalProperties") {
                Some(ap) if ap.is_object() => format!("map[string]{}", self.go_type(ap)),
                _ => "map[string]interface {}".to_owned(),
            },
            _ => "interface {}".to_owned(),
        }
    }

    fn type_error(&self, found: &str, schema: &Value) -> DecodeError {
        self.type_error_of(found, &self.go_type(schema))
    }

    /// Go's `UnmarshalTypeError` with the decoder's context: the struct being decoded and the
    /// path of field names to the value, else none.
    fn type_error_of(&self, found: &str, ty: &str) -> DecodeError {
        match self.structs.last() {
            Some(st) if !self.fields.is_empty() => DecodeError(format!(
                "json: cannot unmarshal {found} into Go struct field {st}.{} of type {ty}",
                self.fields.join(".")
            )),
            _ => DecodeError(format!(
                "json: cannot unmarshal {found} into Go value of type {ty}"
            )),
        }
    }

    fn value(&mut self, schema: &'a Value, v: &mut Value) -> Result<(), DecodeError> {
        let (schema, def_name) = match self.defs.resolve(schema) {
            Some((name, def)) => (def, Some(name)),
            None => (schema, None),
        };
        match def_name {
            Some(TIME) => return self.time(Precision::Seconds, v),
            Some(MICRO_TIME) => return self.time(Precision::Micros, v),
            Some(QUANTITY) | Some(INT_OR_STRING) if self.times_only => return Ok(()),
            Some(QUANTITY) => {
                // Stored in kube's canonical form (`0.5` -> `500m`), numbers included.
                let text = match v {
                    Value::String(s) => s.clone(),
                    Value::Number(n) => n.to_string(),
                    other => return Err(self.type_error(go_type_name(other), schema_ref(QUANTITY))),
                };
                let canonical =
                    super::quantity::canonical(&text).map_err(|e| DecodeError(e.to_string()))?;
                if !matches!(&*v, Value::String(s) if *s == canonical) {
                    *v = Value::String(canonical);
                    self.changed = true;
                }
                return Ok(());
            }
            Some(INT_OR_STRING) => {
                return match v {
                    Value::String(_) => Ok(()),
                    Value::Number(n) if n.as_i64().is_some_and(|i| i32::try_from(i).is_ok()) => {
                        Ok(())
                    }
                    Value::Number(n) => Err(DecodeError(format!(
                        "json: cannot unmarshal number {n} into Go value of type int32"
                    ))),
                    other => Err(self.type_error(go_type_name(other), schema_ref(INT_OR_STRING))),
                };
            }
            _ => {}
        }
        let ty = schema.get("type").and_then(Value::as_str);
        let reported = match def_name {
            Some(name) => schema_ref(name),
            None => schema,
        };
        match (ty, &mut *v) {
            (None, _) => Ok(()),
            (Some("object"), Value::Object(map)) => {
                if let Some(props) = schema.get("properties").and_then(Value::as_object) {
                    if let Some(name) = def_name {
                        self.structs.push(short_name(name));
                    }
                    let keys: Vec<String> = map.keys().cloned().collect();
                    for key in keys {
                        let base = self.path.len();
                        if !self.path.is_empty() {
                            self.path.push('.');
                        }
                        self.path.push_str(&key);
                        match props.get_key_value(key.as_str()) {
                            None if self.times_only => {}
                            None => {
                                self.unknown.push(self.path.clone());
                                map.remove(&key);
                                self.changed = true;
                            }
                            Some((_, _)) if map.get(&key).is_some_and(Value::is_null) => {
                                if !self.times_only {
                                    map.remove(&key);
                                    self.changed = true;
                                }
                            }
                            Some((field, sub)) => {
                                self.fields.push(field.as_str());
                                if let Some(child) = map.get_mut(&key) {
                                    self.value(sub, child)?;
                                }
                                self.fields.pop();
                                // Go's zero time, which kube writes `null`: unset.
                                if map.get(&key).is_some_and(Value::is_null) {
                                    map.shift_remove(&key);
                                } else if !self.times_only
                                    && map
                                        .get(&key)
                                        .is_some_and(|v| self.omitted(def_name, field, sub, v))
                                {
                                    map.shift_remove(&key);
                                    self.changed = true;
                                }
                            }
                        }
                        self.path.truncate(base);
                    }
                    if def_name.is_some() {
                        self.structs.pop();
                    }
                } else if let Some(ap) = schema.get("additionalProperties") {
                    if ap.is_object() {
                        for (key, child) in map.iter_mut() {
                            if child.is_null() {
                                if !self.times_only {
                                    self.zero_null_element(ap, child);
                                }
                                continue;
                            }
                            let base = self.path.len();
                            self.path.push('[');
                            self.path.push_str(key);
                            self.path.push(']');
                            self.value(ap, child)?;
                            self.path.truncate(base);
                        }
                    }
                }
                Ok(())
            }
            (Some("array"), Value::Array(items)) => {
                if let Some(item_schema) = schema.get("items") {
                    for (i, item) in items.iter_mut().enumerate() {
                        if item.is_null() {
                            if !self.times_only {
                                self.zero_null_element(item_schema, item);
                            }
                            continue;
                        }
                        let base = self.path.len();
                        self.path.push_str(&format!("[{i}]"));
                        self.value(item_schema, item)?;
                        self.path.truncate(base);
                    }
                }
                Ok(())
            }
            _ if self.times_only => Ok(()),
            (Some("string"), Value::String(s)) => {
                if schema.get("format").and_then(Value::as_str) == Some("byte") {
                    if let Err(e) = check_base64(s) {
                        self.save(e);
                    }
                }
                Ok(())
            }
            (Some("integer"), Value::Number(n)) => {
                let fits = match schema.get("format").and_then(Value::as_str) {
                    Some("int32") => n.as_i64().is_some_and(|i| i32::try_from(i).is_ok()),
                    _ => n.as_i64().is_some(),
                };
                if !fits {
                    let e = self.type_error(&format!("number {n}"), reported);
                    self.save(e);
                }
                Ok(())
            }
            (Some("number"), Value::Number(_)) | (Some("boolean"), Value::Bool(_)) => Ok(()),
            (Some(_), Value::Null) => Ok(()),
            (Some(_), other) => {
                let e = self.type_error(go_type_name(other), reported);
                self.save(e);
                Ok(())
            }
        }
    }
}

/// A stand-in schema that names a definition, for error messages.
fn schema_ref(name: &str) -> &'static Value {
    use std::collections::HashMap;
    use std::sync::{Mutex, OnceLock};
    static REFS: OnceLock<Mutex<HashMap<String, &'static Value>>> = OnceLock::new();
    let refs = REFS.get_or_init(Default::default);
    let mut refs = refs.lock().unwrap_or_else(|e| e.into_inner());
    refs.entry(name.to_owned()).or_insert_with(|| {
        Box::leak(Box::new(
            serde_json::json!({"$ref": format!("#/definitions/{name}")}),
        ))
    })
}

/// `[]byte` fields take standard base64, as Go's decoder does.
fn check_base64(s: &str) -> Result<(), DecodeError> {
    match base64::engine::general_purpose::STANDARD.decode(s) {
        Ok(_) => Ok(()),
        Err(base64::DecodeError::InvalidByte(at, _))
        | Err(base64::DecodeError::InvalidLastSymbol(at, _)) => Err(DecodeError(format!(
            "illegal base64 data at input byte {at}"
        ))),
        Err(_) => Err(DecodeError(format!(
            "illegal base64 data at input byte {}",
            s.len()
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn dec(kind: (&str, &str, &str), mut v: Value) -> (Result<Vec<String>, DecodeError>, Value) {
        let r = decode(kind.0, kind.1, kind.2, &mut v);
        (r, v)
    }

    const CM: (&str, &str, &str) = ("", "v1", "ConfigMap");
    const POD: (&str, &str, &str) = ("", "v1", "Pod");

    /// What kube's stored object would not have: empty maps and lists, and the zero of a
    /// non-pointer `omitempty` scalar. A pointer's zero, a struct's `{}` and fields without
    /// `omitempty` stay.
    #[test]
    fn empty_values_go_as_from_kubes_stored_objects() {
        let (r, v) = dec(
            POD,
            json!({"metadata": {"name": "p", "labels": {}, "generateName": "", "finalizers": []},
                "spec": {"hostNetwork": false, "hostname": "", "nodeSelector": {},
                    "shareProcessNamespace": false, "securityContext": {},
                    "activeDeadlineSeconds": 0,
                    "containers": [{"name": "c", "image": "i", "args": [], "env": [],
                        "workingDir": "", "tty": false, "resources": {},
                        "ports": [{"containerPort": 80, "hostPort": 0, "name": ""}]}]}}),
        );
        assert_eq!(r, Ok(vec![]));
        assert_eq!(
            v,
            json!({"metadata": {"name": "p"},
                "spec": {"shareProcessNamespace": false, "securityContext": {},
                    "activeDeadlineSeconds": 0,
                    "containers": [{"name": "c", "image": "i", "resources": {},
                        "ports": [{"containerPort": 80}]}]}})
        );
        // A pointer's `false` stays (ConfigMap `immutable`); a map's `""` value is no field.
        let (_, v) = dec(CM, json!({"immutable": false, "data": {"k": ""}}));
        assert_eq!(v, json!({"immutable": false, "data": {"k": ""}}));
        let (_, v) = dec(
            ("", "v1", "Service"),
            json!({"spec": {"publishNotReadyAddresses": false, "type": "", "ports": []}}),
        );
        assert_eq!(v, json!({"spec": {}}));
        // Nothing left to drop: decoding again changes nothing.
        let mut again = v.clone();
        let d = decode_noting_changes("", "v1", "Service", &mut again).unwrap();
        assert!(!d.changed);
        // A `*string`'s `""` stays (a claim that asks for no StorageClass), a `string`'s goes.
        let (_, v) = dec(
            ("", "v1", "PersistentVolumeClaim"),
            json!({"spec": {"storageClassName": "", "volumeName": ""}}),
        );
        assert_eq!(v, json!({"spec": {"storageClassName": ""}}));
    }

    #[test]
    fn wrong_types_fail_with_gos_message() {
        let (r, _) = dec(CM, json!({"metadata": {"name": "a"}, "data": {"x": 5}}));
        assert_eq!(
            r.unwrap_err().0,
            "json: cannot unmarshal number into Go struct field ConfigMap.data of type string"
        );
        let (r, _) = dec(
            POD,
            json!({"spec": {"containers": [{"name": "a", "ports": [{"containerPort": "abc"}]}]}}),
        );
        assert_eq!(
            r.unwrap_err().0,
            "json: cannot unmarshal string into Go struct field ContainerPort.spec.containers.ports.containerPort of type int32"
        );
        let (r, _) = dec(POD, json!({"spec": "x"}));
        assert_eq!(
            r.unwrap_err().0,
            "json: cannot unmarshal string into Go struct field Pod.spec of type v1.PodSpec"
        );
        let (r, _) = dec(
            POD,
            json!({"spec": {"containers": [{"name": "a", "ports": [{"containerPort": 99999999999i64}]}]}}),
        );
        assert!(r.unwrap_err().0.contains("number 99999999999 into"));
        let (r, _) = dec(CM, json!({"metadata": {"labels": {"a": true}}}));
        assert_eq!(
            r.unwrap_err().0,
            "json: cannot unmarshal bool into Go struct field ObjectMeta.metadata.labels of type string"
        );
        let (r, _) = dec(("", "v1", "Secret"), json!({"data": {"k": "no*base64"}}));
        assert_eq!(r.unwrap_err().0, "illegal base64 data at input byte 2");
    }

    #[test]
    fn unknown_fields_are_dropped_and_reported_and_nulls_unset() {
        let (r, v) = dec(
            POD,
            json!({"bogus": 1, "metadata": {"name": "a", "labels": null},
                   "spec": {"containers": [{"name": "a", "x": {"y": 1}}], "nodeName": null}}),
        );
        assert_eq!(r.unwrap(), vec!["bogus", "spec.containers[0].x"]);
        assert_eq!(
            v,
            json!({"metadata": {"name": "a"}, "spec": {"containers": [{"name": "a"}]}})
        );
    }

    /// Go's decoder makes each map or list element anew and leaves it at its zero value for a
    /// `null` (`literalStore`), so kube stores `""` for a `null` label value (`-l a=` then
    /// selects it) and a Deployment whose selector and template both say `v: null` matches.
    #[test]
    fn null_elements_are_their_types_zero_value() {
        let (r, v) = dec(
            CM,
            json!({"metadata": {"name": "a", "labels": {"a": null, "b": "x"},
                                "annotations": {"n": null}, "finalizers": ["f", null]},
                   "data": {"k": null}, "binaryData": {"b": null}}),
        );
        assert_eq!(r.unwrap(), Vec::<String>::new());
        assert_eq!(
            v,
            json!({"metadata": {"name": "a", "labels": {"a": "", "b": "x"},
                                "annotations": {"n": ""}, "finalizers": ["f", ""]},
                   "data": {"k": ""}, "binaryData": {"b": ""}})
        );
        let (r, v) = dec(
            ("apps", "v1", "Deployment"),
            json!({"spec": {"selector": {"matchLabels": {"app": "d", "v": null},
                                         "matchExpressions": [{"key": "k", "operator": "In", "values": [null]}]},
                            "template": {"metadata": {"labels": {"app": "d", "v": null}},
                                         "spec": {"nodeSelector": {"n": null},
                                                  "containers": [{"name": "c",
                                                      "args": ["a", null],
                                                      "resources": {"limits": {"cpu": null}}}],
                                                  "tolerations": [null]}}}}),
        );
        assert_eq!(r.unwrap(), Vec::<String>::new());
        assert_eq!(
            v,
            json!({"spec": {"selector": {"matchLabels": {"app": "d", "v": ""},
                                         "matchExpressions": [{"key": "k", "operator": "In", "values": [""]}]},
                            "template": {"metadata": {"labels": {"app": "d", "v": ""}},
                                         "spec": {"nodeSelector": {"n": ""},
                                                  "containers": [{"name": "c",
                                                      "args": ["a", ""],
                                                      "resources": {"limits": {"cpu": "0"}}}],
                                                  "tolerations": [{}]}}}})
        );
        // A struct's field that is `null` is left unset (dropped); an element that is a list
        // stays `null` (Go's zero slice writes `null`).
        let (r, v) = dec(
            POD,
            json!({"metadata": {"name": "a", "labels": null},
                   "spec": {"nodeName": null, "containers": [{"name": "c", "image": null}]},
                   "status": {"conditions": [{"type": "Ready", "status": "True",
                                               "lastProbeTime": null}]}}),
        );
        assert_eq!(r.unwrap(), Vec::<String>::new());
        assert_eq!(
            v,
            json!({"metadata": {"name": "a"}, "spec": {"containers": [{"name": "c"}]},
                   "status": {"conditions": [{"type": "Ready", "status": "True"}]}})
        );
        let (r, v) = dec(
            ("certificates.k8s.io", "v1", "CertificateSigningRequest"),
            json!({"spec": {"extra": {"e": null}}}),
        );
        assert_eq!(r.unwrap(), Vec::<String>::new());
        assert_eq!(v, json!({"spec": {"extra": {"e": null}}}));
        // A custom resource is unstructured: nothing is rewritten.
        let (r, v) = dec(
            ("example.com", "v1", "Widget"),
            json!({"metadata": {"name": "w"}, "spec": {"labels": {"a": null}, "list": [null]}}),
        );
        assert_eq!(r.unwrap(), Vec::<String>::new());
        assert_eq!(
            v,
            json!({"metadata": {"name": "w"}, "spec": {"labels": {"a": null}, "list": [null]}})
        );
    }

    /// A `null` made `""` is a change: the object is not as the decoder leaves it until then.
    #[test]
    fn zeroed_null_elements_count_as_changes() {
        let mut v = json!({"metadata": {"name": "a", "labels": {"a": null}}, "data": {"k": "v"}});
        let d = decode_noting_changes("", "v1", "ConfigMap", &mut v).unwrap();
        assert!(d.changed && d.unknown.is_empty());
        assert_eq!(v["metadata"]["labels"]["a"], "");
        let d = decode_noting_changes("", "v1", "ConfigMap", &mut v).unwrap();
        assert!(!d.changed);
        let mut v = json!({"metadata": {"name": "a", "labels": {"a": ""}}, "data": {"k": "v"}});
        let d = decode_noting_changes("", "v1", "ConfigMap", &mut v).unwrap();
        assert!(!d.changed);
    }

    /// kube's typed decoder reports a repeated field of a struct or key of a map; not a
    /// repeated unknown field (reported as unknown), nor repeats inside one or inside a value
    /// Go decodes itself (`FieldsV1`, a CRD schema's `default`).
    #[test]
    fn repeated_keys_are_reported_where_the_typed_decoder_looks() {
        let body = br#"{"kind": "Pod", "kind": "Pod", "bogus": {"a": 1, "a": 2}, "bogus": 1,
            "metadata": {"name": "a", "name": "b", "labels": {"x": "1", "x": "2"},
                "managedFields": [{"manager": "m", "fieldsV1": {"f:a": {}, "f:a": {}}}]},
            "spec": {"containers": [{"name": "c", "image": "i", "image": "j",
                "resources": {"limits": {"cpu": "1", "cpu": "2"}}}]}}"#;
        let (_, found) = crate::model::json::from_slice(body).expect("JSON");
        assert_eq!(found.len(), 8);
        assert_eq!(
            duplicates("", "v1", "Pod", &found),
            vec![
                "kind",
                "metadata.name",
                "metadata.labels.x",
                "spec.containers[0].image",
                "spec.containers[0].resources.limits.cpu",
            ]
        );
        let body = br#"{"spec": {"versions": [{"name": "v1", "schema": {"openAPIV3Schema": {
            "properties": {"a": {"type": "string"}, "a": {"type": "string"}},
            "default": {"x": 1, "x": 2}}}}]}}"#;
        let (_, found) = crate::model::json::from_slice(body).expect("JSON");
        assert_eq!(found.len(), 2);
        assert_eq!(
            duplicates(
                "apiextensions.k8s.io",
                "v1",
                "CustomResourceDefinition",
                &found
            ),
            vec!["spec.versions[0].schema.openAPIV3Schema.properties.a"]
        );
        // A kind without a definition is decoded as unstructured.
        let (_, found) =
            crate::model::json::from_slice(br#"{"a": {"b": 1, "b": 1}}"#).expect("JSON");
        assert_eq!(
            duplicates("turtles.dev", "v1", "Controller", &found),
            vec!["a.b"]
        );
    }

    #[test]
    fn quantities_take_numbers_and_int_or_string_both() {
        let (r, v) = dec(
            POD,
            json!({"spec": {"containers": [{"name": "a",
                "resources": {"limits": {"cpu": 1, "memory": "1Gi"}},
                "livenessProbe": {"httpGet": {"port": 8080}}}]}}),
        );
        assert_eq!(r.unwrap(), Vec::<String>::new());
        assert_eq!(
            v.pointer("/spec/containers/0/resources/limits/cpu"),
            Some(&json!("1"))
        );
        let (r, _) = dec(
            POD,
            json!({"spec": {"containers": [{"name": "a", "livenessProbe": {"httpGet": {"port": true}}}]}}),
        );
        assert!(r.unwrap_err().0.contains("of type intstr.IntOrString"));
    }

    const LEASE: (&str, &str, &str) = ("coordination.k8s.io", "v1", "Lease");

    /// A `MicroTime` takes exactly six fraction digits and is written in UTC with six; a `Time`
    /// takes any fraction and is written in UTC with whole seconds; Go's zero time is unset
    /// (a `null` element of a map); a bad one is Go's `time.ParseError`, another JSON type the
    /// error of decoding it into a string, with the field.
    #[test]
    fn times_are_parsed_and_written_as_kube_writes_them() {
        let mut v = json!({"metadata": {"name": "l"}, "spec": {"holderIdentity": "a",
            "acquireTime": "2026-12-06T21:00:00.123456+02:00",
            "renewTime": "2026-12-06T19:00:00.000001Z"}});
        let d = decode_noting_changes(LEASE.0, LEASE.1, LEASE.2, &mut v).unwrap();
        assert!(d.changed && d.unknown.is_empty());
        assert_eq!(v["spec"]["acquireTime"], "2026-12-06T19:00:00.123456Z");
        assert_eq!(v["spec"]["renewTime"], "2026-12-06T19:00:00.000001Z");
        let d = decode_noting_changes(LEASE.0, LEASE.1, LEASE.2, &mut v).unwrap();
        assert!(!d.changed);
        let micro = "\"2006-01-02T15:04:05.000000Z07:00\"";
        for (t, rest, elem) in [
            ("garbage", "garbage", "2006"),
            ("2026-12-06T21:00:00Z", "Z", ".000000"),
            ("2026-12-06T21:00:00.123+02:00", ".123+02:00", ".000000"),
            ("2026-12-06T21:00:00.123456789Z", "789Z", "Z07:00"),
        ] {
            let (r, _) = dec(LEASE, json!({"spec": {"renewTime": t}}));
            assert_eq!(
                r.unwrap_err().0,
                format!("parsing time \"{t}\" as {micro}: cannot parse \"{rest}\" as \"{elem}\"")
            );
        }
        let (r, _) = dec(LEASE, json!({"spec": {"renewTime": 5}}));
        assert_eq!(
            r.unwrap_err().0,
            "json: cannot unmarshal number into Go struct field LeaseSpec.spec.renewTime of type string"
        );
        // Conditions and the other `Time`s: whole seconds, UTC; the zero time unset.
        let (r, v) = dec(
            POD,
            json!({"status": {"startTime": "2026-12-06T10:00:00.999-01:00",
                "conditions": [{"type": "Ready", "status": "True",
                    "lastTransitionTime": "2026-12-06T10:00:00.5Z",
                    "lastProbeTime": "0001-01-01T00:00:00Z"}],
                "containerStatuses": [{"name": "c", "ready": true, "restartCount": 0,
                    "image": "i", "imageID": "",
                    "state": {"terminated": {"exitCode": 0,
                        "startedAt": "2026-12-06T10:00:00+00:00",
                        "finishedAt": "2026-12-06T10:00:01,25Z"}}}]}}),
        );
        assert_eq!(r.unwrap(), Vec::<String>::new());
        assert_eq!(v["status"]["startTime"], "2026-12-06T11:00:00Z");
        assert_eq!(
            v["status"]["conditions"],
            json!([{"type": "Ready", "status": "True",
                "lastTransitionTime": "2026-12-06T10:00:00Z"}])
        );
        assert_eq!(
            v["status"]["containerStatuses"][0]["state"]["terminated"],
            json!({"exitCode": 0, "startedAt": "2026-12-06T10:00:00Z",
                "finishedAt": "2026-12-06T10:00:01Z"})
        );
        let (r, _) = dec(
            POD,
            json!({"status": {"conditions": [{"type": "Ready", "lastTransitionTime": "notatime"}]}}),
        );
        assert_eq!(
            r.unwrap_err().0,
            "parsing time \"notatime\" as \"2006-01-02T15:04:05Z07:00\": cannot parse \"notatime\" as \"2006\""
        );
        // Events: both kinds of time, and the series' MicroTime.
        let (r, v) = dec(
            ("", "v1", "Event"),
            json!({"firstTimestamp": "2026-12-06T10:00:00.5+01:00",
                "eventTime": "2026-12-06T10:00:00.500000+01:00",
                "series": {"count": 2, "lastObservedTime": "2026-12-06T10:00:01,000002Z"}}),
        );
        assert_eq!(r.unwrap(), Vec::<String>::new());
        assert_eq!(v["firstTimestamp"], "2026-12-06T09:00:00Z");
        assert_eq!(v["eventTime"], "2026-12-06T09:00:00.500000Z");
        assert_eq!(
            v["series"]["lastObservedTime"],
            "2026-12-06T10:00:01.000002Z"
        );
        // A map of times: the zero time is a `null` element, as Go writes it.
        let (r, v) = dec(
            ("policy", "v1", "PodDisruptionBudget"),
            json!({"status": {"disruptedPods": {"p": "2026-12-06T10:00:00+01:00",
                "q": "0001-01-01T00:00:00Z", "r": null}}}),
        );
        assert_eq!(r.unwrap(), Vec::<String>::new());
        assert_eq!(
            v["status"]["disruptedPods"],
            json!({"p": "2026-12-06T09:00:00Z", "q": null, "r": null})
        );
        // Every kind's `managedFields`.
        let (r, v) = dec(
            CM,
            json!({"metadata": {"name": "a", "managedFields": [{"manager": "m",
                "operation": "Update", "time": "2026-12-06T22:02:18+00:00"}]}}),
        );
        assert_eq!(r.unwrap(), Vec::<String>::new());
        assert_eq!(
            v["metadata"]["managedFields"][0]["time"],
            "2026-12-06T22:02:18Z"
        );
        let (r, _) = dec(
            CM,
            json!({"metadata": {"managedFields": [{"time": "garbage"}]}}),
        );
        assert_eq!(
            r.unwrap_err().0,
            "parsing time \"garbage\" as \"2006-01-02T15:04:05Z07:00\": cannot parse \"garbage\" as \"2006\""
        );
        let (r, _) = dec(CM, json!({"metadata": {"managedFields": [{"time": {}}]}}));
        assert_eq!(
            r.unwrap_err().0,
            "json: cannot unmarshal object into Go struct field ManagedFieldsEntry.metadata.managedFields.time of type string"
        );
    }

    /// Go's decoder keeps the first type error and goes on; an error a value's own
    /// `UnmarshalJSON` returns (a time, a quantity) ends it and is the one reported.
    #[test]
    fn errors_that_end_decoding_win_over_type_errors() {
        let (r, _) = dec(
            CM,
            json!({"data": {"x": 5}, "metadata": {"managedFields": [{"time": "garbage"}]}}),
        );
        assert!(r.unwrap_err().0.starts_with("parsing time \"garbage\""));
        let (r, _) = dec(
            POD,
            json!({"spec": {"containers": [{"name": 5,
                "resources": {"limits": {"cpu": "bogus"}}}]}}),
        );
        assert!(r.unwrap_err().0.starts_with("quantities must match"));
        let (r, _) = dec(
            ("", "v1", "Secret"),
            json!({"data": {"k": "no*base64"}, "type": 5}),
        );
        assert_eq!(r.unwrap_err().0, "illegal base64 data at input byte 2");
        let (r, _) = dec(CM, json!({"data": {"x": 5}, "binaryData": {"y": 6}}));
        assert_eq!(
            r.unwrap_err().0,
            "json: cannot unmarshal number into Go struct field ConfigMap.data of type string"
        );
    }

    /// A body's metadata times, decoded before the write takes `managedFields` out and
    /// overwrites the timestamps: nothing else is looked at. A custom resource's metadata is
    /// read alone into the typed ObjectMeta, as kube's `GetObjectMeta` reads it.
    #[test]
    fn metadata_times_are_decoded_for_every_kind() {
        let mut v = json!({"metadata": {"name": "a", "labels": {"l": null},
                "creationTimestamp": "2026-12-06T10:00:00+01:00",
                "managedFields": [{"manager": "m", "time": "2026-12-06T10:00:00.5Z", "x": 1}]},
            "data": {"x": 5}, "bogus": 1});
        assert_eq!(
            decode_metadata_times("", "v1", "ConfigMap", &mut v),
            Ok(true)
        );
        assert_eq!(
            v,
            json!({"metadata": {"name": "a", "labels": {"l": null},
                    "creationTimestamp": "2026-12-06T09:00:00Z",
                    "managedFields": [{"manager": "m", "time": "2026-12-06T10:00:00Z", "x": 1}]},
                "data": {"x": 5}, "bogus": 1})
        );
        assert_eq!(
            decode_metadata_times("", "v1", "ConfigMap", &mut v),
            Ok(false)
        );
        let mut v = json!({"metadata": {"creationTimestamp": 5}});
        assert_eq!(
            decode_metadata_times("", "v1", "ConfigMap", &mut v)
                .unwrap_err()
                .0,
            "json: cannot unmarshal number into Go struct field ObjectMeta.metadata.creationTimestamp of type string"
        );
        let mut v = json!({"metadata": {"managedFields": [{"time": true}]}});
        assert_eq!(
            decode_metadata_times("example.com", "v1", "Widget", &mut v)
                .unwrap_err()
                .0,
            "json: cannot unmarshal bool into Go struct field ManagedFieldsEntry.managedFields.time of type string"
        );
        let mut v = json!({"metadata": {"deletionTimestamp": "2026-13-01T00:00:00Z"}});
        assert_eq!(
            decode_metadata_times("example.com", "v1", "Widget", &mut v)
                .unwrap_err()
                .0,
            "parsing time \"2026-13-01T00:00:00Z\": month out of range"
        );
        let mut v = json!({"metadata": {"name": "w", "creationTimestamp": null,
            "managedFields": [{"manager": "m", "time": "2026-12-06T22:02:18+00:00"}]},
            "spec": {"at": "2026-12-06T22:02:18+00:00"}});
        assert_eq!(
            decode_metadata_times("example.com", "v1", "Widget", &mut v),
            Ok(true)
        );
        assert_eq!(
            v,
            json!({"metadata": {"name": "w", "creationTimestamp": null,
                "managedFields": [{"manager": "m", "time": "2026-12-06T22:02:18Z"}]},
                "spec": {"at": "2026-12-06T22:02:18+00:00"}})
        );
        // What a write took out of its body: each entry on its own, bad ones left.
        let mut list = json!([{"manager": "n", "time": "garbage"},
            {"manager": "m", "time": "2026-12-06T22:02:18+00:00"},
            {"manager": "z", "time": "0001-01-01T00:00:00Z"}]);
        normalize_managed_fields_times(&mut list);
        assert_eq!(
            list,
            json!([{"manager": "n", "time": "garbage"},
                {"manager": "m", "time": "2026-12-06T22:02:18Z"}, {"manager": "z"}])
        );
    }

    /// A server-side apply's result: its times only, nothing else dropped or checked.
    #[test]
    fn times_only_decoding_leaves_everything_else() {
        let mut v = json!({"metadata": {"name": "l", "labels": {"a": null}},
            "spec": {"renewTime": "2026-12-06T21:00:00.123456+02:00",
                "leaseDurationSeconds": "x", "bogus": null}});
        assert_eq!(decode_times(LEASE.0, LEASE.1, LEASE.2, &mut v), Ok(true));
        assert_eq!(
            v,
            json!({"metadata": {"name": "l", "labels": {"a": null}},
                "spec": {"renewTime": "2026-12-06T19:00:00.123456Z",
                    "leaseDurationSeconds": "x", "bogus": null}})
        );
        let mut v = json!({"spec": {"renewTime": "garbage"}});
        assert!(decode_times(LEASE.0, LEASE.1, LEASE.2, &mut v)
            .unwrap_err()
            .0
            .starts_with("parsing time \"garbage\" as"));
        let mut v = json!({"spec": {"at": "garbage"}});
        assert_eq!(
            decode_times("example.com", "v1", "Widget", &mut v),
            Ok(false)
        );
    }

    #[test]
    fn recursive_and_untyped_definitions_decode() {
        let (r, _) = dec(
            ("apiextensions.k8s.io", "v1", "CustomResourceDefinition"),
            json!({"spec": {"group": "g", "names": {"plural": "fs", "kind": "F"}, "scope": "Namespaced",
                "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {
                    "type": "object", "x-kubernetes-preserve-unknown-fields": true,
                    "properties": {"spec": {"type": "object", "default": {"a": 1},
                        "properties": {"n": {"type": "integer", "enum": [1, "x"]}}}}}}}]}}),
        );
        assert_eq!(r.unwrap(), Vec::<String>::new());
        let (r, _) = dec(("turtles.dev", "v1", "Controller"), json!({"spec": 1}));
        assert_eq!(r.unwrap(), Vec::<String>::new());
    }
}
