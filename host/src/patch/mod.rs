//! PATCH bodies: JSON patch (RFC 6902), JSON merge patch (RFC 7386) and Kubernetes strategic
//! merge patch for built-in kinds. Pure functions over JSON values.

pub mod strategic;

use serde_json::{Map, Value};

use crate::model::{limits, ApiError, ResourceInfo};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatchType {
    Json,
    Merge,
    Strategic,
    /// Server-side apply (`application/apply-patch+yaml`): handled by `apply`, not here.
    Apply,
}

pub const ACCEPTED: &str = "application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json, application/apply-patch+yaml";

impl PatchType {
    /// From a request's Content-Type (parameters ignored).
    pub fn from_content_type(ct: &str) -> Result<Self, ApiError> {
        let essence = ct
            .split(';')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase();
        match essence.as_str() {
            "application/json-patch+json" => Ok(Self::Json),
            "application/merge-patch+json" => Ok(Self::Merge),
            "application/strategic-merge-patch+json" => Ok(Self::Strategic),
            "application/apply-patch+yaml" => Ok(Self::Apply),
            _ => Err(ApiError::unsupported_media_type(format!(
                "the body of the request was in an unknown format - accepted media types include: {ACCEPTED}"
            ))),
        }
    }
}

/// Decode a patch body (`-0` an integer, as Go reads it: `model::json::negative_zero_as_zero`).
pub fn parse(t: PatchType, body: &[u8]) -> Result<Value, ApiError> {
    go_decoding(t, body, false)?;
    let body = crate::model::json::negative_zero_as_zero(body);
    let v: Value = serde_json::from_slice(&body).map_err(decoding_error)?;
    shaped(t, v, false)
}

/// What Go's decoding of a patch body refuses first, in kube's words per patch type: a body that
/// is no JSON is Go's scanner's error (`unexpected end of JSON input`, `invalid character ...`),
/// `error decoding patch: ...` under `fieldValidation` `Strict` or `Warn` for a JSON or merge
/// patch (`kjson.UnmarshalStrict`), alone for a JSON patch under `Ignore` (`DecodePatch`) and
/// a strategic merge patch (`strategicPatchObject`), and json-patch's `Invalid JSON Patch` for a
/// merge patch under `Ignore` (`MergePatch`). A merge or strategic merge patch is decoded into
/// a map: one that is no object is Go's `json: cannot unmarshal array into Go value of type
/// map[string]interface {}` (prefixed as above; a merge patch under `Ignore` is left to
/// [`shaped`]), and a merge patch of `null` is `Invalid JSON Patch`.
fn go_decoding(t: PatchType, body: &[u8], strict: bool) -> Result<(), ApiError> {
    use crate::model::gojson::{self, UnmarshalError};
    let refused = |e: UnmarshalError| {
        let words = e.to_string();
        ApiError::bad_request(match (t, strict, e) {
            (PatchType::Json | PatchType::Merge, true, _) => {
                format!("error decoding patch: {words}")
            }
            (PatchType::Merge, false, UnmarshalError::Syntax { .. }) => BAD_MERGE_PATCH.to_owned(),
            _ => words,
        })
    };
    match t {
        PatchType::Json => gojson::check_syntax(body).map_err(refused),
        PatchType::Merge | PatchType::Strategic => match gojson::unmarshal_into_map(body) {
            Err(UnmarshalError::Type { .. }) if t == PatchType::Merge && !strict => Ok(()),
            Err(e) => Err(refused(e)),
            Ok(()) if t == PatchType::Merge && is_null(body) => {
                Err(ApiError::bad_request(BAD_MERGE_PATCH))
            }
            Ok(()) => Ok(()),
        },
        PatchType::Apply => Ok(()),
    }
}

/// json-patch's `ErrBadJSONPatch`, which kube answers a merge patch it cannot merge with.
const BAD_MERGE_PATCH: &str = "Invalid JSON Patch";

/// Whether a (valid JSON) body is `null`.
fn is_null(body: &[u8]) -> bool {
    body.trim_ascii() == b"null"
}

/// [`parse`], with kube's strict decoding errors of the patch itself when `strict`
/// (`fieldValidation` `Strict` or `Warn`; kube's `Ignore` decodes it without them). kube's
/// patcher decodes a merge or strategic merge patch into a map, so a key repeated at any depth
/// is `duplicate field "data.a"`, and a JSON patch into its operations (`json patch duplicate
/// field "[1].path"`, `json patch unknown field "[0].foo"`: `model::json::json_patch_strict`).
/// Read in the same pass as the patch (`model::json`).
pub fn parse_strict(
    t: PatchType,
    body: &[u8],
    strict: bool,
) -> Result<(Value, Vec<String>), ApiError> {
    if !strict {
        return parse(t, body).map(|v| (v, Vec::new()));
    }
    go_decoding(t, body, true)?;
    let body = crate::model::json::negative_zero_as_zero(body);
    let decoded = match t {
        PatchType::Json => crate::model::json::json_patch_strict(&body),
        _ => crate::model::json::from_slice(&body).map(|(v, found)| {
            let errors: Vec<String> = found
                .iter()
                .map(|d| format!("duplicate field {}", crate::auth::rbac::go_quote(&d.path)))
                .collect();
            (v, errors)
        }),
    };
    let (v, errors) = decoded.map_err(decoding_error)?;
    Ok((shaped(t, v, true)?, errors))
}

fn decoding_error(e: serde_json::Error) -> ApiError {
    ApiError::bad_request(format!("error decoding patch: {e}"))
}

/// Go's `fmt.Sprintf("%+v", patchMap)` of a patch decoded into a `map[string]interface{}`,
/// which kube shows as the invalid value of a strategic merge patch's strict decoding error:
/// maps `map[k:v ...]` with their keys sorted, lists `[a b]`, strings as they are, `<nil>`,
/// integers as int64 and other numbers as float64 (`%v`: `1.5`, `1e+06`).
pub fn go_plus_v(v: &Value) -> String {
    let mut out = String::new();
    go_plus_v_into(v, &mut out);
    out
}

/// [`go_plus_v`] of a map (`map[k:v ...]`).
pub fn go_plus_v_map(m: &Map<String, Value>) -> String {
    let mut out = String::new();
    go_map_into(m, &mut out, go_plus_v_into);
    out
}

/// [`go_plus_v`] of a list (`[a b]`).
pub fn go_plus_v_slice(items: &[Value]) -> String {
    let mut out = String::new();
    go_slice_into(items, &mut out, go_plus_v_into);
    out
}

/// Go's `fmt.Sprintf("%s", v)` of a decoded JSON value: strings as they are, maps and lists
/// element by element, and what `%s` does not print as Go shows a wrong verb: `%!s(int64=5)`,
/// `%!s(float64=1.5)`, `%!s(bool=true)`, `%!s(<nil>)`.
pub fn go_s(v: &Value) -> String {
    let mut out = String::new();
    go_s_into(v, &mut out);
    out
}

fn go_s_into(v: &Value, out: &mut String) {
    match v {
        Value::Null => out.push_str("%!s(<nil>)"),
        Value::Bool(b) => out.push_str(if *b {
            "%!s(bool=true)"
        } else {
            "%!s(bool=false)"
        }),
        Value::Number(n) => match n.as_i64() {
            Some(i) => {
                out.push_str("%!s(int64=");
                out.push_str(&i.to_string());
                out.push(')');
            }
            None => {
                out.push_str("%!s(float64=");
                out.push_str(&crate::schema::go_format_float(
                    n.as_f64().unwrap_or(f64::NAN),
                ));
                out.push(')');
            }
        },
        Value::String(s) => out.push_str(s),
        Value::Array(items) => go_slice_into(items, out, go_s_into),
        Value::Object(m) => go_map_into(m, out, go_s_into),
    }
}

fn go_plus_v_into(v: &Value, out: &mut String) {
    match v {
        Value::Null => out.push_str("<nil>"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => match n.as_i64() {
            Some(i) => out.push_str(&i.to_string()),
            None => out.push_str(&crate::schema::go_format_float(
                n.as_f64().unwrap_or(f64::NAN),
            )),
        },
        Value::String(s) => out.push_str(s),
        Value::Array(items) => go_slice_into(items, out, go_plus_v_into),
        Value::Object(m) => go_map_into(m, out, go_plus_v_into),
    }
}

/// A list as Go's `fmt` prints a slice: `[a b]`, each item by `item`.
fn go_slice_into(items: &[Value], out: &mut String, item: fn(&Value, &mut String)) {
    out.push('[');
    for (i, v) in items.iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        item(v, out);
    }
    out.push(']');
}

/// A map as Go's `fmt` prints one: `map[k:v ...]`, keys sorted, each value by `item`.
fn go_map_into(m: &Map<String, Value>, out: &mut String, item: fn(&Value, &mut String)) {
    out.push_str("map[");
    let mut keys: Vec<&String> = m.keys().collect();
    keys.sort();
    for (i, k) in keys.into_iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        out.push_str(k);
        out.push(':');
        if let Some(v) = m.get(k) {
            item(v, out);
        }
    }
    out.push(']');
}

/// The shape kube's patcher needs of each patch type (a JSON patch's operations as
/// [`json_patch_operations`] reads them, `strict` as [`parse_strict`] takes it).
fn shaped(t: PatchType, v: Value, strict: bool) -> Result<Value, ApiError> {
    match t {
        PatchType::Json => json_patch_operations(v, strict),
        // Go's nil map: nothing to merge.
        PatchType::Strategic if v.is_null() => Ok(Value::Object(Map::new())),
        PatchType::Merge | PatchType::Strategic | PatchType::Apply if !v.is_object() => {
            Err(ApiError::bad_request("merge patch must be a JSON object"))
        }
        _ => Ok(v),
    }
}

/// A JSON patch's operations as kube's `jsonPatcher.applyJSPatch` decodes them before applying
/// any, a 400 in Go's words for the first in the document that does not decode: under
/// `fieldValidation` `Strict` or `Warn` `kjson.UnmarshalStrict` into
/// `[]jsonPatchOp{Op, Path, From string; Value interface{}}` (`error decoding patch: json:
/// cannot unmarshal number into Go value of type handlers.jsonPatchOp`, and an `op`, `path` or
/// `from` that is no string `... into Go struct field jsonPatchOp.path of type string`), then
/// json-patch's `DecodePatch` into `[]map[string]*json.RawMessage` (`json: cannot unmarshal
/// number into Go value of type jsonpatch.Operation`), which is all there is under `Ignore`.
/// `null` is no operations at all (Go's nil slice), and an operation that is `null` one of no
/// kind (an empty map: `Unexpected kind: unknown` when it is reached).
fn json_patch_operations(v: Value, strict: bool) -> Result<Value, ApiError> {
    let refused = |found: &Value, into: &str| {
        let e = format!(
            "json: cannot unmarshal {} into {into}",
            crate::schema::objectmeta::go_type_name(found)
        );
        ApiError::bad_request(if strict {
            format!("error decoding patch: {e}")
        } else {
            e
        })
    };
    let ops = match v {
        Value::Array(ops) => ops,
        Value::Null => return Ok(Value::Array(Vec::new())),
        other => {
            let into = if strict {
                "Go value of type []handlers.jsonPatchOp"
            } else {
                "Go value of type jsonpatch.Patch"
            };
            return Err(refused(&other, into));
        }
    };
    for op in &ops {
        match op {
            Value::Null => {}
            Value::Object(fields) => {
                if !strict {
                    continue;
                }
                for (name, field) in fields {
                    if matches!(name.as_str(), "op" | "path" | "from")
                        && !(field.is_string() || field.is_null())
                    {
                        let into = format!("Go struct field jsonPatchOp.{name} of type string");
                        return Err(refused(field, &into));
                    }
                }
            }
            other => {
                let into = if strict {
                    "Go value of type handlers.jsonPatchOp"
                } else {
                    "Go value of type jsonpatch.Operation"
                };
                return Err(refused(other, into));
            }
        }
    }
    Ok(Value::Array(ops))
}

/// Apply a decoded patch to the current object, a JSON patch's failures in json-patch's words
/// (what admission's patches report: a webhook's, a policy's).
pub fn apply(
    t: PatchType,
    current: &Value,
    patch: &Value,
    ri: &ResourceInfo,
) -> Result<Value, ApiError> {
    match t {
        PatchType::Json => apply_json(current, patch).map_err(JsonPatchFailure::described),
        _ => apply_other(t, current, patch, ri),
    }
}

/// [`apply`] for a PATCH request, its failures answered as kube's patcher answers them: a JSON
/// patch that does not apply is `NewGenericServerResponse(422)`, which says nothing of why
/// (`jsonPatcher.applyJSPatch`); a strategic merge patch's errors as
/// `interpretStrategicMergePatchError` sorts them (`strategic_error`).
pub fn apply_request(
    t: PatchType,
    current: &Value,
    patch: &Value,
    ri: &ResourceInfo,
) -> Result<Value, ApiError> {
    match t {
        PatchType::Json => apply_json(current, patch).map_err(JsonPatchFailure::answered),
        _ => apply_other(t, current, patch, ri),
    }
}

fn apply_other(
    t: PatchType,
    current: &Value,
    patch: &Value,
    ri: &ResourceInfo,
) -> Result<Value, ApiError> {
    match t {
        PatchType::Merge => {
            let mut doc = current.clone();
            json_patch::merge(&mut doc, patch);
            Ok(doc)
        }
        PatchType::Strategic => {
            let schema = strategic::PatchSchema::for_kind(&ri.group, &ri.kind);
            strategic::apply(current, patch, &schema).map_err(strategic_error)
        }
        PatchType::Json | PatchType::Apply => Err(ApiError::unsupported_media_type(
            "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json",
        )),
    }
}

/// Why a JSON patch was not applied.
enum JsonPatchFailure {
    /// Refused beside applying it (its operations do not decode, too many of them, a value
    /// nested too deep): the answer as it is.
    Refused(ApiError),
    /// An operation that does not apply, in json-patch's words (kube's `patchObj.Apply`
    /// failing: a failed `test`, a missing path, an unknown `op`, copies past their bound).
    Failed(String),
}

impl JsonPatchFailure {
    /// A 422 with json-patch's words.
    fn described(self) -> ApiError {
        match self {
            Self::Refused(e) => e,
            Self::Failed(why) => invalid_patch(why),
        }
    }

    /// kube's patcher's answer: `NewGenericServerResponse(http.StatusUnprocessableEntity, "",
    /// schema.GroupResource{}, "", err.Error(), 0, false)`, json-patch's words dropped.
    fn answered(self) -> ApiError {
        match self {
            Self::Refused(e) => e,
            Self::Failed(_) => ApiError::unprocessable(),
        }
    }
}

/// A JSON patch applied as json-patch v4 (`gopkg.in/evanphx/json-patch.v4`, kube's) applies
/// it: all its operations counted first (kube's bound on them), then each read when it is
/// reached (`Patch.ApplyIndent`), so that one json-patch cannot read ([`go_operation`]: an
/// unknown `op`, no `path`) fails there, after the ones before it ran.
fn apply_json(current: &Value, patch: &Value) -> Result<Value, JsonPatchFailure> {
    let ops: &[Value] = match patch {
        Value::Array(ops) => ops.as_slice(),
        Value::Null => &[],
        other => {
            return Err(JsonPatchFailure::Refused(ApiError::bad_request(format!(
                "json: cannot unmarshal {} into Go value of type jsonpatch.Patch",
                crate::schema::objectmeta::go_type_name(other)
            ))))
        }
    };
    if ops.len() > limits::JSON_PATCH_MAX_OPERATIONS {
        return Err(JsonPatchFailure::Refused(too_many_operations(ops.len())));
    }
    let mut read = Vec::with_capacity(ops.len());
    let mut unreadable = None;
    for op in ops {
        match go_operation(op) {
            Ok(op) => read.push(op),
            Err(why) => {
                unreadable = Some(why);
                break;
            }
        }
    }
    let patched = apply_json_ops(current, &read, &mut false)?;
    match unreadable {
        Some(why) => Err(JsonPatchFailure::Failed(why)),
        None => Ok(patched),
    }
}

/// kube's answer to more operations than it takes (`NewRequestEntityTooLargeError` puts its
/// words before the message).
fn too_many_operations(n: usize) -> ApiError {
    ApiError::too_large(format!(
        "Request entity too large: The allowed maximum operations in a JSON patch is {}, got {n}",
        limits::JSON_PATCH_MAX_OPERATIONS
    ))
}

/// What json-patch v4 says when an operation has no `path` (`Operation.Path`).
const NO_PATH: &str = "operation missing path field";
/// What json-patch v4 says when an operation has no `from` (`Operation.From`).
const NO_FROM: &str = "operation, missing from field";

/// One operation as json-patch v4 reads it when it is reached (`patch.go`): its kind from `op`
/// (`unknown` when that is missing or no string: `Unexpected kind: unknown`), its `path` and
/// `from` as `Operation.Path` and `Operation.From` read them and `findObject` follows them
/// ([`go_pointer`]; `""` is the whole document for a `replace` or a `test` only), and a missing
/// `value` as `null` (json-patch puts a nil node there, which it writes as `null`). `Err` has
/// json-patch's words for an operation it fails on before it looks at the document (a field
/// missing, or not a string: `add operation failed to decode path: missing value`).
fn go_operation(op: &Value) -> Result<json_patch::PatchOperation, String> {
    use json_patch::jsonptr::PointerBuf;
    use json_patch::{
        AddOperation, CopyOperation, MoveOperation, PatchOperation as Op, RemoveOperation,
        ReplaceOperation, TestOperation,
    };
    let kind = match go_field(op, "op") {
        Some(Value::String(kind)) => kind.as_str(),
        _ => "unknown",
    };
    let value = || go_field(op, "value").cloned().unwrap_or(Value::Null);
    Ok(match kind {
        "add" => {
            let path = go_string(op, "path", NO_PATH)
                .map_err(|_| "add operation failed to decode path: missing value".to_owned())?;
            let at = go_pointer(path).ok_or_else(|| {
                format!(
                    "add operation does not apply: doc is missing path: \"{path}\": missing value"
                )
            })?;
            Op::Add(AddOperation {
                path: at,
                value: value(),
            })
        }
        "remove" => {
            let path = go_string(op, "path", NO_PATH)
                .map_err(|_| "remove operation failed to decode path: missing value".to_owned())?;
            let at = go_pointer(path).ok_or_else(|| {
                format!("remove operation does not apply: doc is missing path: \"{path}\": missing value")
            })?;
            Op::Remove(RemoveOperation { path: at })
        }
        "replace" => {
            let path = go_string(op, "path", NO_PATH)
                .map_err(|e| format!("replace operation failed to decode path: {e}"))?;
            let value = value();
            let at = if path.is_empty() {
                // The whole document, which must stay an object or an array (json-patch wraps
                // no error there: Go prints the nil it was given).
                if !(value.is_object() || value.is_array()) {
                    return Err(
                        "replace operation value must be object or array: %!w(<nil>)".to_owned(),
                    );
                }
                PointerBuf::root()
            } else {
                go_pointer(path).ok_or_else(|| {
                    format!("replace operation does not apply: doc is missing path: {path}: missing value")
                })?
            };
            Op::Replace(ReplaceOperation { path: at, value })
        }
        "move" => {
            let from = go_string(op, "from", NO_FROM)
                .map_err(|e| format!("move operation failed to decode from: {e}"))?;
            let from_at = go_pointer(from).ok_or_else(|| {
                format!("move operation does not apply: doc is missing from path: {from}: missing value")
            })?;
            let path = go_string(op, "path", NO_PATH)
                .map_err(|e| format!("move operation failed to decode path: {e}"))?;
            let at = go_pointer(path).ok_or_else(|| {
                format!("move operation does not apply: doc is missing destination path: {path}: missing value")
            })?;
            Op::Move(MoveOperation {
                from: from_at,
                path: at,
            })
        }
        "test" => {
            let path = go_string(op, "path", NO_PATH)
                .map_err(|e| format!("test operation failed to decode path: {e}"))?;
            let at = if path.is_empty() {
                PointerBuf::root()
            } else {
                go_pointer(path).ok_or_else(|| {
                    format!("test operation does not apply: is missing path: {path}: missing value")
                })?
            };
            Op::Test(TestOperation {
                path: at,
                value: value(),
            })
        }
        "copy" => {
            let from = go_string(op, "from", NO_FROM)
                .map_err(|e| format!("copy operation failed to decode from: {e}"))?;
            let from_at = go_pointer(from).ok_or_else(|| {
                format!("copy operation does not apply: doc is missing from path: {from}: missing value")
            })?;
            let path = go_string(op, "path", NO_PATH)
                .map_err(|_| "copy operation failed to decode path: missing value".to_owned())?;
            let at = go_pointer(path).ok_or_else(|| {
                format!("copy operation does not apply: doc is missing destination path: {path}: missing value")
            })?;
            Op::Copy(CopyOperation {
                from: from_at,
                path: at,
            })
        }
        other => return Err(format!("Unexpected kind: {other}")),
    })
}

/// A field of an operation as json-patch v4 finds it in its `map[string]*json.RawMessage`:
/// `null` is a nil message, as good as none.
fn go_field<'a>(op: &'a Value, name: &str) -> Option<&'a Value> {
    op.get(name).filter(|v| !v.is_null())
}

/// A string field of an operation (`Operation.Path`, `Operation.From`), or why not: `missing`
/// with json-patch's `ErrMissing`, or Go's error decoding a value of another type.
fn go_string<'a>(op: &'a Value, name: &str, missing: &str) -> Result<&'a str, String> {
    match go_field(op, name) {
        None => Err(format!("{missing}: missing value")),
        Some(Value::String(s)) => Ok(s.as_str()),
        Some(other) => Err(format!(
            "json: cannot unmarshal {} into Go value of type string",
            crate::schema::objectmeta::go_type_name(other)
        )),
    }
}

/// A path as json-patch v4's `findObject` follows it: split at `/`, the piece before the first
/// `/` not looked at (`a/b` is `/b`), each other piece a key with `~1` and `~0` decoded as its
/// `decodePatchKey` decodes them (any other `~` is kept as it is). A path without `/` (`""`
/// among them) names nothing.
fn go_pointer(path: &str) -> Option<json_patch::jsonptr::PointerBuf> {
    let (_, keys) = path.split_once('/')?;
    Some(json_patch::jsonptr::PointerBuf::from_tokens(
        keys.split('/')
            .map(|key| key.replace("~1", "/").replace("~0", "~")),
    ))
}

/// How json-patch v4 reads the last index of a pointer into an array: an `add`'s may be one past
/// the end (and counts from there when negative), the others' must name an element.
#[derive(Clone, Copy, PartialEq)]
enum Place {
    Add,
    Existing,
}

/// `op` with its pointers' array indices as json-patch v4 reads them ([`go_indices`]), when any
/// is written differently from RFC 6901's way.
fn go_canonical(
    doc: &Value,
    op: &json_patch::PatchOperation,
) -> Option<json_patch::PatchOperation> {
    use json_patch::PatchOperation as Op;
    let existing = |at| go_indices(doc, at, Place::Existing, None);
    // (the new `path`, the new `from`): read before the operation is copied, which is only when
    // one is written differently (its value may be large).
    let (path, from) = match op {
        Op::Add(o) => (go_indices(doc, &o.path, Place::Add, None), None),
        Op::Remove(o) => (existing(&o.path), None),
        Op::Replace(o) => (existing(&o.path), None),
        Op::Test(o) => (existing(&o.path), None),
        Op::Copy(o) => (
            go_indices(doc, &o.path, Place::Add, None),
            existing(&o.from),
        ),
        // The value is taken out first: its array is one shorter when `path` is read.
        Op::Move(o) => (
            go_indices(doc, &o.path, Place::Add, o.from.parent()),
            existing(&o.from),
        ),
    };
    if path.is_none() && from.is_none() {
        return None;
    }
    let mut op = op.clone();
    let (at, source) = match &mut op {
        Op::Add(o) => (&mut o.path, None),
        Op::Remove(o) => (&mut o.path, None),
        Op::Replace(o) => (&mut o.path, None),
        Op::Test(o) => (&mut o.path, None),
        Op::Copy(o) => (&mut o.path, Some(&mut o.from)),
        Op::Move(o) => (&mut o.path, Some(&mut o.from)),
    };
    if let Some(p) = path {
        *at = p;
    }
    if let (Some(source), Some(f)) = (source, from) {
        *source = f;
    }
    Some(op)
}

/// `at` with each array index written as json-patch v4 (kube's library) reads it, as RFC 6901
/// writes it: Go's `strconv.Atoi` takes a sign and leading zeros (`+1`, `01`), and a negative
/// index counts from the end (`-1` is the last element; an `add`'s, one past it). `None` when
/// nothing is written differently. An index out of range is left for the patch to refuse.
/// `shrunk`: an array that is one element shorter when `at` is read (a move's source).
fn go_indices(
    doc: &Value,
    at: &json_patch::jsonptr::Pointer,
    last: Place,
    shrunk: Option<&json_patch::jsonptr::Pointer>,
) -> Option<json_patch::jsonptr::PointerBuf> {
    let count = at.count();
    let mut cur = Some(doc);
    let mut out = json_patch::jsonptr::PointerBuf::root();
    let mut changed = false;
    for (i, token) in at.tokens().enumerate() {
        let decoded = token.decoded().into_owned();
        let mut written = decoded.clone();
        if let Some(Value::Array(items)) = cur {
            let mut len = items.len() as i64;
            if shrunk.is_some_and(|s| s == &*out) {
                len -= 1;
            }
            if last == Place::Add && i + 1 == count {
                len += 1;
            }
            if let Ok(n) = decoded.parse::<i64>() {
                let index = if n < 0 { n + len } else { n };
                if index >= 0 {
                    written = index.to_string();
                }
            }
        }
        changed |= written != decoded;
        cur = match cur {
            Some(Value::Array(items)) => written.parse::<usize>().ok().and_then(|n| items.get(n)),
            Some(Value::Object(m)) => m.get(&written),
            _ => None,
        };
        out.push_back(written);
    }
    changed.then_some(out)
}

/// Whether json-patch v4 reads `at` as a nil value where RFC 6902 finds nothing: a key that the
/// object holding it lacks (its `partialDoc.get` answers a missing key with nil, no error).
fn go_nil_at(doc: &Value, at: &json_patch::jsonptr::Pointer) -> bool {
    at.split_back().is_some_and(|(parent, key)| {
        doc.pointer(parent.as_str())
            .and_then(Value::as_object)
            .is_some_and(|o| !o.contains_key(&*key.decoded()))
    })
}

/// kube's `interpretStrategicMergePatchError`: mergepatch's format errors are a 400 with their
/// words, lists of lists kube's generic 422, and every other error (an unknown `$patch`, an
/// item without its merge key, ...) is no `Status` at all, which kube answers as a 500 with the
/// error's words and no reason.
fn strategic_error(e: strategic::StrategicPatchError) -> ApiError {
    use strategic::StrategicPatchError as E;
    match e {
        E::NotAnObject { .. }
        | E::InvalidRetainKeys
        | E::InvalidSetElementOrder
        | E::InvalidDeleteFromPrimitiveList => ApiError::bad_request(e.to_string()),
        E::ListOfLists => ApiError::unprocessable(),
        _ => ApiError::new(500, "", e.to_string()),
    }
}

fn invalid_patch(message: impl std::fmt::Display) -> ApiError {
    ApiError::new(
        422,
        "Invalid",
        format!("the server rejected our request due to an error in our request: {message}"),
    )
}

/// RFC 6902, one operation at a time, with kube's bounds on the work a patch may do: at most
/// [`limits::JSON_PATCH_MAX_OPERATIONS`] operations, `copy` operations adding at most
/// [`limits::JSON_PATCH_MAX_COPY_BYTES`] in all, and no operation nesting the document deeper
/// than [`limits::MAX_DEPTH`] (checked before the operation runs, so nothing recursive ever walks
/// a deeper value).
#[cfg(test)]
fn apply_json_patch(
    current: &Value,
    ops: &[json_patch::PatchOperation],
) -> Result<Value, ApiError> {
    apply_json_ops(current, ops, &mut false).map_err(JsonPatchFailure::described)
}

/// Apply JSON Patch operations as a MutatingAdmissionPolicy's `JSONPatch` mutation does:
/// `Ok(None)` when a `test` operation fails (kube then leaves the object as it was).
pub fn apply_json_patch_tested(current: &Value, ops: &Value) -> Result<Option<Value>, ApiError> {
    let ops: json_patch::Patch = serde_json::from_value(ops.clone())
        .map_err(|e| ApiError::bad_request(format!("error decoding json patch: {e}")))?;
    let mut test_failed = false;
    match apply_json_ops(current, &ops.0, &mut test_failed) {
        Ok(v) => Ok(Some(v)),
        Err(_) if test_failed => Ok(None),
        Err(e) => Err(e.described()),
    }
}

fn apply_json_ops(
    current: &Value,
    ops: &[json_patch::PatchOperation],
    test_failed: &mut bool,
) -> Result<Value, JsonPatchFailure> {
    use json_patch::PatchOperation as Op;
    if ops.len() > limits::JSON_PATCH_MAX_OPERATIONS {
        return Err(JsonPatchFailure::Refused(too_many_operations(ops.len())));
    }
    let mut doc = current.clone();
    let mut copied = 0usize;
    for (i, op) in ops.iter().enumerate() {
        // Array indices as json-patch v4 reads them ([`go_indices`]), written as RFC 6902's.
        let canonical;
        let op = match go_canonical(&doc, op) {
            Some(c) => {
                canonical = c;
                &canonical
            }
            None => op,
        };
        // json-patch v4 reads a key an object lacks as a nil value, not as an error
        // ([`go_nil_at`]): a `replace` of it adds it, a `copy` from it adds `null` (a nil node,
        // 0 bytes copied), and a `test` that it is `null` passes.
        let as_add;
        let op = match op {
            Op::Test(o) if o.value.is_null() && go_nil_at(&doc, &o.path) => continue,
            Op::Replace(o) if go_nil_at(&doc, &o.path) => {
                as_add = Op::Add(json_patch::AddOperation {
                    path: o.path.clone(),
                    value: o.value.clone(),
                });
                &as_add
            }
            Op::Copy(o) if go_nil_at(&doc, &o.from) => {
                as_add = Op::Add(json_patch::AddOperation {
                    path: o.path.clone(),
                    value: Value::Null,
                });
                &as_add
            }
            op => op,
        };
        // The depth a value lands at is its path's length plus its own depth; the rest of the
        // document is within the limit already.
        let (at, value_depth) = match op {
            Op::Add(o) => (&o.path, limits::depth(&o.value, limits::MAX_DEPTH)),
            Op::Replace(o) => (&o.path, limits::depth(&o.value, limits::MAX_DEPTH)),
            // A value moved no deeper than it was stays within the limit the document is
            // within: no walk of it (a walk per move made many moves of a big subtree slow).
            Op::Move(o) if o.path.count() <= o.from.count() => {
                apply_one(&mut doc, op, i)?;
                continue;
            }
            Op::Move(o) => (&o.path, source_depth(&doc, &o.from)),
            Op::Copy(o) => {
                if let Ok(src) = o.from.resolve(&doc) {
                    copied += limits::json_len(src);
                    if copied > limits::JSON_PATCH_MAX_COPY_BYTES {
                        return Err(JsonPatchFailure::Failed(format!(
                            "Unable to complete the copy, the accumulated size increase of copy is {copied}, exceeding the limit {}",
                            limits::JSON_PATCH_MAX_COPY_BYTES
                        )));
                    }
                }
                (&o.path, source_depth(&doc, &o.from))
            }
            Op::Remove(_) => {
                apply_one(&mut doc, op, i)?;
                continue;
            }
            Op::Test(_) => {
                if let Err(e) = apply_one(&mut doc, op, i) {
                    *test_failed = true;
                    return Err(e);
                }
                continue;
            }
        };
        match value_depth {
            Some(d) if at.count() + d <= limits::MAX_DEPTH => {}
            _ => {
                return Err(JsonPatchFailure::Refused(invalid_patch(
                    limits::too_deep_message(),
                )))
            }
        }
        apply_one(&mut doc, op, i)?;
    }
    Ok(doc)
}

/// The depth of the value at `from` (0 when it does not exist: the operation then fails).
fn source_depth(doc: &Value, from: &json_patch::jsonptr::Pointer) -> Option<usize> {
    match from.resolve(doc) {
        Ok(v) => limits::depth(v, limits::MAX_DEPTH),
        Err(_) => Some(0),
    }
}

fn apply_one(
    doc: &mut Value,
    op: &json_patch::PatchOperation,
    index: usize,
) -> Result<(), JsonPatchFailure> {
    // The document is a copy that is dropped on error, so no undo log is needed.
    json_patch::patch_unsafe(doc, std::slice::from_ref(op)).map_err(|mut e| {
        e.operation = index;
        JsonPatchFailure::Failed(e.to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn json_patch(doc: &Value, ops: Value) -> Result<Value, ApiError> {
        let ops: json_patch::Patch = serde_json::from_value(ops).unwrap();
        apply_json_patch(doc, &ops.0)
    }

    /// Array indices as json-patch v4 (kube's library) reads them: Go's `Atoi` forms (`+1`,
    /// `01`) and negative indices from the end (an `add`'s from one past it); out of range, the
    /// generic 422.
    #[test]
    fn array_indices_are_read_as_json_patch_v4_reads_them() {
        let doc = json!({"l": ["a", "b", "c"], "m": {"-1": "key"}});
        let ok = |ops: Value| json_patch(&doc, ops).unwrap()["l"].clone();
        assert_eq!(
            ok(json!([{"op": "remove", "path": "/l/-1"}])),
            json!(["a", "b"])
        );
        assert_eq!(
            ok(json!([{"op": "remove", "path": "/l/-3"}])),
            json!(["b", "c"])
        );
        assert_eq!(
            ok(json!([{"op": "remove", "path": "/l/00"}])),
            json!(["b", "c"])
        );
        assert_eq!(
            ok(json!([{"op": "add", "path": "/l/-1", "value": "x"}])),
            json!(["a", "b", "c", "x"])
        );
        assert_eq!(
            ok(json!([{"op": "add", "path": "/l/-4", "value": "x"}])),
            json!(["x", "a", "b", "c"])
        );
        assert_eq!(
            ok(json!([{"op": "add", "path": "/l/01", "value": "x"}])),
            json!(["a", "x", "b", "c"])
        );
        assert_eq!(
            ok(json!([{"op": "replace", "path": "/l/+1", "value": "x"}])),
            json!(["a", "x", "c"])
        );
        assert_eq!(
            ok(
                json!([{"op": "test", "path": "/l/-1", "value": "c"}, {"op": "remove", "path": "/l/0"}])
            ),
            json!(["b", "c"])
        );
        // A move takes its value out first: an add's `-1` is then one past the shorter list.
        assert_eq!(
            ok(json!([{"op": "move", "from": "/l/0", "path": "/l/-1"}])),
            json!(["b", "c", "a"])
        );
        assert_eq!(
            ok(json!([{"op": "move", "from": "/l/0", "path": "/l/-2"}])),
            json!(["b", "a", "c"])
        );
        assert_eq!(
            ok(json!([{"op": "copy", "from": "/l/-1", "path": "/l/0"}])),
            json!(["c", "a", "b", "c"])
        );
        // An object's key is a key, whatever it looks like.
        assert_eq!(
            json_patch(&doc, json!([{"op": "remove", "path": "/m/-1"}])).unwrap()["m"],
            json!({})
        );
        for ops in [
            json!([{"op": "remove", "path": "/l/-4"}]),
            json!([{"op": "add", "path": "/l/-5", "value": "x"}]),
            json!([{"op": "remove", "path": "/l/3"}]),
            json!([{"op": "remove", "path": "/l/1_0"}]),
            json!([{"op": "remove", "path": "/l/-"}]),
        ] {
            let e = json_patch(&doc, ops.clone()).unwrap_err();
            assert_eq!((e.code, e.reason), (422, "Invalid"), "{ops}: {e:?}");
        }
    }

    /// An operation of an unknown kind is found when reached (the ones before it run), and is
    /// kube's 422 (evanphx/json-patch's `Unexpected kind`), not a decoding 400.
    #[test]
    fn an_unknown_operation_is_a_422_when_reached() {
        let ri = crate::model::Registry::with_builtins()
            .lookup("", "v1", "configmaps")
            .unwrap();
        let doc = json!({"data": {"a": "1"}});
        let e = apply(
            PatchType::Json,
            &doc,
            &json!([{"op": "add", "path": "/data/b", "value": "2"}, {"op": "bogus", "path": "/x"}]),
            &ri,
        )
        .unwrap_err();
        assert_eq!(e.code, 422);
        assert!(
            e.message.ends_with("Unexpected kind: bogus"),
            "{}",
            e.message
        );
        // A failing operation before it is what is reported.
        let e = apply(
            PatchType::Json,
            &doc,
            &json!([{"op": "test", "path": "/data/a", "value": "9"}, {"op": "bogus"}]),
            &ri,
        )
        .unwrap_err();
        assert!(!e.message.contains("Unexpected kind"), "{}", e.message);
    }

    /// The `Status` a PATCH request is answered with, as kube serializes it.
    fn answered(t: PatchType, resource: (&str, &str), current: &Value, patch: Value) -> String {
        let ri = crate::model::Registry::with_builtins()
            .lookup(resource.0, "v1", resource.1)
            .unwrap();
        let e = apply_request(t, current, &patch, &ri).unwrap_err();
        serde_json::to_string(&e.to_status()).unwrap()
    }

    /// A JSON patch that does not apply is kube's `NewGenericServerResponse(422)`
    /// (`jsonPatcher.applyJSPatch`): its fixed message, `Invalid`, empty details, and none of
    /// json-patch's words; whatever fails (a `test`, a missing path, an unknown `op`, copies
    /// past their bound). Admission's patches keep json-patch's words.
    #[test]
    fn a_json_patch_that_does_not_apply_is_kubes_generic_422() {
        let generic = r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"the server rejected our request due to an error in our request","reason":"Invalid","details":{},"code":422}"#;
        let deploy = json!({"spec": {"replicas": 1, "s": "x".repeat(1024)}});
        let copies: Vec<Value> = (0..20)
            .map(|i| json!({"op": "copy", "from": "/spec", "path": format!("/spec/c{i}")}))
            .collect();
        for ops in [
            json!([{"op": "test", "path": "/spec/replicas", "value": 99}]),
            json!([{"op": "remove", "path": "/spec/nope"}]),
            json!([{"op": "replace", "path": "/spec/replicas", "value": 2}, {"op": "bogus", "path": "/x"}]),
            json!(copies),
            // Operations json-patch cannot read, found when reached: no `path` (or `from`), one
            // that is no string, no `op`, an `op` that is `null`, a path naming nothing.
            json!([{"op": "add", "value": 1}]),
            json!([{"op": "replace", "path": "/spec/replicas", "value": 2}, {"op": "remove"}]),
            json!([{"op": "replace", "value": 2}]),
            json!([{"op": "test", "path": null, "value": 1}]),
            json!([{"op": "move", "path": "/spec/x"}]),
            json!([{"op": "copy", "from": "/spec/replicas"}]),
            json!([{"op": "add", "path": 5, "value": 1}]),
            json!([{"path": "/spec/replicas", "value": 2}]),
            json!([null]),
            json!([{"op": "add", "path": "", "value": {}}]),
            json!([{"op": "remove", "path": "spec"}]),
            json!([{"op": "replace", "path": "", "value": 3}]),
        ] {
            assert_eq!(
                answered(
                    PatchType::Json,
                    ("apps", "deployments"),
                    &deploy,
                    ops.clone()
                ),
                generic,
                "{ops}"
            );
        }
        // What is refused beside applying it is answered as before.
        let ops: Vec<Value> = (0..=limits::JSON_PATCH_MAX_OPERATIONS)
            .map(|_| json!({"op": "test", "path": "/spec/replicas", "value": 1}))
            .collect();
        assert_eq!(
            answered(
                PatchType::Json,
                ("apps", "deployments"),
                &deploy,
                json!(ops)
            ),
            r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Request entity too large: The allowed maximum operations in a JSON patch is 10000, got 10001","reason":"RequestEntityTooLarge","code":413}"#
        );
        // kube counts the operations before it applies any.
        let ops: Vec<Value> = std::iter::once(json!({"op": "bogus"}))
            .chain(
                (0..limits::JSON_PATCH_MAX_OPERATIONS)
                    .map(|_| json!({"op": "test", "path": "/spec/replicas", "value": 1})),
            )
            .collect();
        assert!(answered(
            PatchType::Json,
            ("apps", "deployments"),
            &deploy,
            json!(ops)
        )
        .contains("\"code\":413"));
        let ri = crate::model::Registry::with_builtins()
            .lookup("apps", "v1", "deployments")
            .unwrap();
        let e = apply(
            PatchType::Json,
            &deploy,
            &json!([{"op": "test", "path": "/spec/replicas", "value": 99}]),
            &ri,
        )
        .unwrap_err();
        assert!(e.message.contains("value did not match"), "{}", e.message);
        // Admission's patches: json-patch's words for an operation it cannot read.
        for (ops, words) in [
            (
                json!([{"op": "add", "value": 1}]),
                "add operation failed to decode path: missing value",
            ),
            (
                json!([{"op": "move", "path": "/spec/x"}]),
                "move operation failed to decode from: operation, missing from field: missing value",
            ),
            (
                json!([{"op": "test", "path": 5, "value": 1}]),
                "test operation failed to decode path: json: cannot unmarshal number into Go value of type string",
            ),
            (
                json!([{"op": "remove", "path": "spec"}]),
                "remove operation does not apply: doc is missing path: \"spec\": missing value",
            ),
            (json!([null]), "Unexpected kind: unknown"),
        ] {
            let e = apply(PatchType::Json, &deploy, &ops, &ri).unwrap_err();
            assert_eq!(e.code, 422, "{ops}");
            assert_eq!(
                e.message,
                format!("the server rejected our request due to an error in our request: {words}")
            );
        }
    }

    /// What json-patch v4 applies where RFC 6902 (and the `json_patch` crate) would fail, as
    /// kube does: an operation without `value` puts `null` there; a key an object lacks reads
    /// as a nil value, so a `replace` of it adds it, a `copy` from it copies `null` and a
    /// `test` that it is `null` passes; a path's piece before its first `/` is not looked at,
    /// and a `~` that escapes nothing is kept.
    #[test]
    fn json_patch_operations_are_applied_as_json_patch_v4_applies_them() {
        let ri = crate::model::Registry::with_builtins()
            .lookup("", "v1", "configmaps")
            .unwrap();
        let cm = json!({"metadata": {"name": "c"}, "data": {"a": "1"}});
        let applied = |ops: Value| apply_request(PatchType::Json, &cm, &ops, &ri);
        for (ops, data) in [
            (
                json!([{"op": "add", "path": "/data/b"}]),
                json!({"a": "1", "b": null}),
            ),
            (
                json!([{"op": "replace", "path": "/data/a"}]),
                json!({"a": null}),
            ),
            (
                json!([{"op": "replace", "path": "/data/b", "value": "2"}]),
                json!({"a": "1", "b": "2"}),
            ),
            (
                json!([{"op": "copy", "from": "/data/nope", "path": "/data/b"}]),
                json!({"a": "1", "b": null}),
            ),
            (
                json!([{"op": "test", "path": "/data/nope", "value": null},
                       {"op": "test", "path": "/data/nope"},
                       {"op": "add", "path": "/data/b", "value": "2"}]),
                json!({"a": "1", "b": "2"}),
            ),
            (
                json!([{"op": "add", "path": "/data/x~2y", "value": "2"},
                       {"op": "add", "path": "/data/p~1q", "value": "3"},
                       {"op": "add", "path": "/data/~01", "value": "4"}]),
                json!({"a": "1", "x~2y": "2", "p/q": "3", "~1": "4"}),
            ),
        ] {
            let out = applied(ops.clone()).unwrap_or_else(|e| panic!("{ops}: {e:?}"));
            assert_eq!(out["data"], data, "{ops}");
        }
        // `data/b` is `/b`: a key at the top.
        let out = applied(json!([{"op": "add", "path": "data/b", "value": "2"}])).unwrap();
        assert_eq!(out["b"], "2");
        assert_eq!(out["data"], cm["data"]);
        // The whole document, by `replace` and `test` only.
        let whole = json!({"metadata": {"name": "c"}});
        let out = applied(json!([{"op": "test", "path": "", "value": cm},
                                 {"op": "replace", "path": "", "value": whole}]))
        .unwrap();
        assert_eq!(out, whole);
        // A `test` for anything else there fails, as a `remove` of it does.
        for ops in [
            json!([{"op": "test", "path": "/data/nope", "value": "x"}]),
            json!([{"op": "remove", "path": "/data/nope"}]),
        ] {
            assert_eq!(applied(ops.clone()).unwrap_err().code, 422, "{ops}");
        }
    }

    /// A JSON patch's body decoded as kube's patcher decodes it, before any operation is
    /// applied: operations that are no objects, and (strictly, as `fieldValidation` `Strict`
    /// and `Warn` decode) an `op`, `path` or `from` that is no string, are a 400 in Go's words,
    /// the first in the document; `null` is no operations, an operation that is `null` one of
    /// no kind.
    #[test]
    fn json_patch_bodies_are_decoded_as_kube_decodes_them() {
        let refused = |body: &[u8], strict: bool| {
            let e = parse_strict(PatchType::Json, body, strict).unwrap_err();
            assert_eq!((e.code, e.reason), (400, "BadRequest"), "{e:?}");
            e.message
        };
        for (body, strict, message) in [
            (
                &b"[1]"[..],
                true,
                "error decoding patch: json: cannot unmarshal number into Go value of type handlers.jsonPatchOp",
            ),
            (
                &b"[1]"[..],
                false,
                "json: cannot unmarshal number into Go value of type jsonpatch.Operation",
            ),
            (
                &b"{\"op\": \"add\"}"[..],
                true,
                "error decoding patch: json: cannot unmarshal object into Go value of type []handlers.jsonPatchOp",
            ),
            (
                &b"{\"op\": \"add\"}"[..],
                false,
                "json: cannot unmarshal object into Go value of type jsonpatch.Patch",
            ),
            (
                &b"\"x\""[..],
                false,
                "json: cannot unmarshal string into Go value of type jsonpatch.Patch",
            ),
            (
                &br#"[{"op": "add", "path": "/a", "value": 1}, null, true, {"op": 1}]"#[..],
                true,
                "error decoding patch: json: cannot unmarshal bool into Go value of type handlers.jsonPatchOp",
            ),
            (
                &br#"[{"op": "add", "path": 5, "from": [], "value": 1}]"#[..],
                true,
                "error decoding patch: json: cannot unmarshal number into Go struct field jsonPatchOp.path of type string",
            ),
            (
                &br#"[{"op": "move", "from": {}, "path": "/a"}]"#[..],
                true,
                "error decoding patch: json: cannot unmarshal object into Go struct field jsonPatchOp.from of type string",
            ),
        ] {
            assert_eq!(refused(body, strict), message, "{}", String::from_utf8_lossy(body));
        }
        // Fields of any type under `Ignore`: json-patch fails on them when it reaches them.
        let (ops, _) = parse_strict(
            PatchType::Json,
            br#"[{"op": "add", "path": 5, "value": 1}]"#,
            false,
        )
        .unwrap();
        let ri = crate::model::Registry::with_builtins()
            .lookup("", "v1", "configmaps")
            .unwrap();
        let cm = json!({"metadata": {"name": "c"}, "data": {"a": "1"}});
        let e = apply_request(PatchType::Json, &cm, &ops, &ri).unwrap_err();
        assert_eq!((e.code, e.reason), (422, "Invalid"), "{e:?}");
        // `null`: nothing to do; `[null]`: an operation of no kind.
        for strict in [true, false] {
            let (ops, _) = parse_strict(PatchType::Json, b"null", strict).unwrap();
            assert_eq!(ops, json!([]));
            assert_eq!(apply_request(PatchType::Json, &cm, &ops, &ri).unwrap(), cm);
            let (ops, _) = parse_strict(PatchType::Json, b"[null]", strict).unwrap();
            let e = apply_request(PatchType::Json, &cm, &ops, &ri).unwrap_err();
            assert_eq!((e.code, e.reason), (422, "Invalid"), "{e:?}");
        }
    }

    /// A strategic merge patch's errors as kube's `interpretStrategicMergePatchError` sorts
    /// them: mergepatch's format errors a 400, lists of lists the generic 422, and the others
    /// (an unknown `$patch`, an item without its merge key, a `$setElementOrder` out of
    /// order, ...) no `Status`, which kube answers as a 500 with their words and no reason;
    /// maps and lists shown as Go's `fmt` shows them.
    #[test]
    fn strategic_patch_errors_are_answered_as_kube_answers_them() {
        let deploy = json!({"metadata": {"finalizers": ["x"]},
            "spec": {"replicas": 1, "template": {"spec": {"containers": [
            {"name": "c", "image": "nginx"}]}}}});
        let deployments = ("apps", "deployments");
        let cases = [
            (
                json!({"spec": {"template": {"spec": {"containers": [{"image": "x"}]}}}}),
                r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"map: map[image:x] does not contain declared merge key: name","code":500}"#,
            ),
            (
                json!({"spec": {"$patch": "bogus"}}),
                r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"unknown patch type: bogus in map: map[$patch:bogus]","code":500}"#,
            ),
            (
                json!({"spec": {"template": {"spec": {"containers": [
                    {"name": "c", "$patch": 3, "ports": [{"containerPort": 80}]}]}}}}),
                r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"unknown patch type: %!s(int64=3) in map: map[$patch:3 name:c ports:[map[containerPort:80]]]","code":500}"#,
            ),
            (
                json!({"spec": {"template": {"spec": {
                    "$setElementOrder/containers": [{"name": "a"}, {"name": "b"}],
                    "containers": [{"name": "b"}, {"name": "a"}]}}}}),
                "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\",\"message\":\"The order in patch list:\\n[map[name:b] map[name:a]]\\n doesn't match $setElementOrder list:\\n[map[name:a] map[name:b]]\\n\",\"code\":500}",
            ),
            (
                json!({"spec": {"template": {"spec": {
                    "$setElementOrder/containers": "c"}}}}),
                r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"expected a []interface {}, but received a string","code":500}"#,
            ),
            (
                json!({"spec": {"$retainKeys": ["replicas"], "paused": true}}),
                r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"invalid patch format of retainKeys","reason":"BadRequest","code":400}"#,
            ),
            (
                json!({"spec": {"template": {"spec": {"$setElementOrder": []}}}}),
                r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"invalid patch format of setElementOrder list","reason":"BadRequest","code":400}"#,
            ),
            (
                json!({"metadata": {"finalizers": ["a", {"b": 1}]}}),
                r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"list element types are not identical: [[x] [a map[b:1]]]","code":500}"#,
            ),
        ];
        for (patch, want) in cases {
            assert_eq!(
                answered(PatchType::Strategic, deployments, &deploy, patch.clone()),
                want,
                "{patch}"
            );
        }
        assert_eq!(
            serde_json::to_string(
                &strategic_error(strategic::StrategicPatchError::ListOfLists).to_status()
            )
            .unwrap(),
            r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"the server rejected our request due to an error in our request","reason":"Invalid","details":{},"code":422}"#
        );
    }

    /// The patch's own strict decoding errors, as kube's patcher words them, unless Ignore.
    #[test]
    fn a_patch_repeating_keys_is_reported_as_kube_decodes_it() {
        let body = br#"{"data": {"a": "1", "a": "2", "b": {"c": 1, "c": -0}}, "data": {"a": "3", "a": "4"}}"#;
        for t in [PatchType::Merge, PatchType::Strategic] {
            let (v, errors) = parse_strict(t, body, true).unwrap();
            assert_eq!(
                errors,
                [
                    "duplicate field \"data.a\"",
                    "duplicate field \"data.b.c\"",
                    "duplicate field \"data\""
                ]
            );
            assert_eq!(v, json!({"data": {"a": "4"}}));
            let (_, errors) = parse_strict(t, body, false).unwrap();
            assert!(errors.is_empty());
        }
        let ops =
            br#"[{"op": "replace", "op": "replace", "path": "/data/a", "value": "6", "x": 1}]"#;
        let (v, errors) = parse_strict(PatchType::Json, ops, true).unwrap();
        assert_eq!(
            errors,
            [
                "json patch duplicate field \"[0].op\"",
                "json patch unknown field \"[0].x\""
            ]
        );
        assert_eq!(v, parse(PatchType::Json, ops).unwrap());
        // Bodies that are not patches, in kube's words per patch type and validation (Go's
        // decoder's; `kjson.UnmarshalStrict` prefixed for JSON and merge patches, json-patch's
        // `MergePatch` under `Ignore`, `strategicPatchObject`'s alone).
        let refused = |t, body: &[u8], strict| {
            let e = parse_strict(t, body, strict).unwrap_err();
            assert_eq!(e.code, 400, "{e:?}");
            e.message
        };
        let not_a_map =
            "json: cannot unmarshal array into Go value of type map[string]interface {}";
        assert_eq!(
            refused(PatchType::Merge, b"[1]", true),
            format!("error decoding patch: {not_a_map}")
        );
        assert_eq!(refused(PatchType::Strategic, b"[1]", true), not_a_map);
        assert_eq!(refused(PatchType::Strategic, b"[1]", false), not_a_map);
        let trailing = "invalid character '}' looking for beginning of object key string";
        assert_eq!(
            refused(PatchType::Json, b"{\"a\": 1,}", true),
            format!("error decoding patch: {trailing}")
        );
        assert_eq!(refused(PatchType::Json, b"{\"a\": 1,}", false), trailing);
        assert_eq!(
            refused(PatchType::Merge, b"", true),
            "error decoding patch: unexpected end of JSON input"
        );
        assert_eq!(refused(PatchType::Merge, b"{", false), "Invalid JSON Patch");
        assert_eq!(
            refused(PatchType::Strategic, b"[{]", true),
            "invalid character ']' looking for beginning of object key string"
        );
        // `null`: no merge patch at all; a strategic one of nothing to merge.
        assert_eq!(
            refused(PatchType::Merge, b"null", true),
            "Invalid JSON Patch"
        );
        assert_eq!(
            parse_strict(PatchType::Strategic, b"null", true).unwrap().0,
            json!({})
        );
    }

    /// Go's `%+v` of the patch's map, which kube shows in a strategic merge patch's 422.
    #[test]
    fn a_strategic_patch_is_shown_as_go_prints_its_map() {
        let patch = json!({"spec": {"replicas": 3, "paused": true, "x": null},
            "metadata": {"labels": {"b": "two words", "a": "1"}},
            "f": [1.5, 1e6, 0.0001, 0.00001, -0.0, 18446744073709551615u64, [], {}]});
        assert_eq!(
            go_plus_v(&patch),
            "map[f:[1.5 1e+06 0.0001 1e-05 -0 1.8446744073709552e+19 [] map[]] \
             metadata:map[labels:map[a:1 b:two words]] spec:map[paused:true replicas:3 x:<nil>]]"
        );
    }

    #[test]
    fn copies_are_bounded_in_bytes_as_kube_bounds_them() {
        let doc = json!({"spec": {"s": "x".repeat(1024)}});
        let ops: Vec<Value> = (0..20)
            .map(|i| json!({"op": "copy", "from": "/spec", "path": format!("/spec/c{i}")}))
            .collect();
        let e = json_patch(&doc, json!(ops)).unwrap_err();
        assert_eq!(e.code, 422);
        assert!(
            e.message.contains("accumulated size increase of copy"),
            "{}",
            e.message
        );
        // A few copies are fine.
        let ok = json_patch(
            &doc,
            json!([{"op": "copy", "from": "/spec/s", "path": "/spec/t"}]),
        )
        .unwrap();
        assert_eq!(ok["spec"]["t"], doc["spec"]["s"]);
    }

    #[test]
    fn no_operation_nests_the_document_past_the_limit() {
        let mut deep = json!(1);
        for _ in 0..100 {
            deep = json!({"d": deep});
        }
        let doc = json!({"spec": {}});
        let ok = json_patch(
            &doc,
            json!([{"op": "add", "path": "/spec/a", "value": deep}]),
        )
        .unwrap();
        assert_eq!(limits::depth(&ok, 1000), Some(102));
        // The same value added again at its own deepest point: 202 levels.
        let path = format!("/spec/a{}", "/d".repeat(99));
        for op in [
            json!({"op": "add", "path": path, "value": deep}),
            json!({"op": "replace", "path": path, "value": deep}),
            json!({"op": "copy", "from": "/spec/a", "path": path}),
        ] {
            let e = json_patch(&ok, json!([op])).unwrap_err();
            assert_eq!(e.code, 422, "{op}");
            assert!(e.message.contains("nested deeper"), "{}", e.message);
        }
        // Moving a deep value under another deep one is refused as well.
        let two = json_patch(
            &ok,
            json!([{"op": "copy", "from": "/spec/a", "path": "/spec/b"}]),
        );
        let e = json_patch(
            &two.unwrap(),
            json!([{"op": "move", "from": "/spec/b", "path": path}]),
        )
        .unwrap_err();
        assert_eq!(e.code, 422);
        // Copying an object into itself level by level stops at the limit, never crashes.
        let ops: Vec<Value> = (0..500)
            .map(|_| json!({"op": "copy", "from": "/spec/a", "path": "/spec/a/d"}))
            .collect();
        assert_eq!(json_patch(&ok, json!(ops)).unwrap_err().code, 422);
    }

    #[test]
    fn a_failing_operation_after_a_move_to_the_root_is_an_error_not_a_panic() {
        // Found by fuzzing: json-patch's own undo log hits `unreachable!` on this one; applied
        // an operation at a time on a copy, it is a plain 422.
        let pod = json!({"metadata": {"labels": {"tier": "web"}},
                         "spec": {"containers": [{"name": "a", "ports": [{"containerPort": 80}]}]}});
        let e = json_patch(
            &pod,
            json!([{"op": "move", "from": "/metadata/labels/tier", "path": ""},
                   {"op": "copy", "from": "/spec/containers/0/ports", "path": "/spec/containers/1/ports"}]),
        )
        .unwrap_err();
        assert_eq!(e.code, 422);
    }

    #[test]
    fn operation_count_is_capped_and_errors_name_the_operation() {
        let doc = json!({"a": 1});
        let ops: Vec<Value> = (0..=limits::JSON_PATCH_MAX_OPERATIONS)
            .map(|_| json!({"op": "test", "path": "/a", "value": 1}))
            .collect();
        let e = json_patch(&doc, json!(ops)).unwrap_err();
        assert_eq!(e.code, 413);
        let e = json_patch(
            &doc,
            json!([{"op": "test", "path": "/a", "value": 1}, {"op": "remove", "path": "/nope"}]),
        )
        .unwrap_err();
        assert_eq!(e.code, 422);
        assert!(e.message.contains("operation '/1'"), "{}", e.message);
    }
}
