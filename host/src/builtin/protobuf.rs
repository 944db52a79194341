//! Protobuf bodies of any built-in kind, decoded generically: kube's `generated.proto` field
//! numbers (`protobuf.json`, imported from the `k8s-pb` crate by `cargo xtask import-protobuf`)
//! say which field each number is, and kube's OpenAPI definitions name them, so no kind needs a
//! table of its own.
//!
//! The JSON is what Go's `encoding/json` writes for the object client-go marshalled, as closely as
//! the published schemas tell: kube's custom types are written as kube writes them (`Time` as
//! RFC 3339, `Quantity` as its string, `IntOrString` as a number or string, `RawExtension`,
//! `FieldsV1` and `JSON` as the embedded JSON, `Duration` as Go prints one, the apiextensions
//! `...OrBool`/`...OrArray`/`...OrStringArray` unions as whichever side is set, single-list
//! wrappers such as `ExtraValue` as their list). client-go writes every non-pointer field, so a
//! zero scalar in the body is either a Go zero value (which `omitempty` drops) or a pointer set to
//! zero (which it keeps: gogo writes a pointer only when it is set). The schemas do not say
//! which; kube's Go types do (`pointers.json`, [`super::omitempty::is_pointer`]): a pointer's
//! zero is kept (`storageClassName: ""` means no dynamic provisioning, `replicas: 0`,
//! `readOnlyRootFilesystem: false`, a deleted object's `deletionGracePeriodSeconds: 0`). Of the
//! other optional fields, `""` is dropped (an empty string would block kube's defaults), a `0` or
//! `false` is kept (the decode that follows drops the zero of a non-pointer `omitempty` field,
//! as for a JSON body) unless the system populates the field (`generation`).

use std::collections::HashMap;
use std::sync::OnceLock;

use base64::Engine;
use serde_json::{Map, Value};

use super::definitions;

const DESCRIPTORS: &str = include_str!("protobuf.json");

/// Why a protobuf body cannot be decoded.
#[derive(Debug, thiserror::Error)]
pub enum ProtoError {
    #[error("no protobuf description of {0}")]
    UnknownMessage(String),
    #[error("truncated or malformed protobuf in {0}")]
    Malformed(String),
    #[error(
        "protobuf nests deeper than {} messages",
        crate::model::limits::MAX_DEPTH
    )]
    TooDeep,
}

type Result<T, E = ProtoError> = std::result::Result<T, E>;

struct FieldDesc {
    json: String,
    kind: Kind,
    repeated: bool,
    type_name: Option<String>,
    optional: bool,
    /// Populated by the system: a client's zero means nothing.
    read_only: bool,
    /// A Go struct embedded inline: its fields are written into the parent's JSON.
    inline: bool,
    /// A pointer to a scalar in kube's Go type: present on the wire only when set, zero or not.
    pointer: bool,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    String,
    Bytes,
    Int32,
    Int64,
    Bool,
    Double,
    Message,
    MapString,
    MapBytes,
    MapMessage,
}

type Messages = HashMap<String, HashMap<u32, FieldDesc>>;

fn messages() -> &'static Messages {
    static M: OnceLock<Messages> = OnceLock::new();
    M.get_or_init(|| {
        let doc: Value = serde_json::from_str(DESCRIPTORS).unwrap_or_default();
        let mut out = HashMap::new();
        for (name, fields) in doc.as_object().into_iter().flatten() {
            let mut by_tag = HashMap::new();
            for f in fields.as_array().into_iter().flatten() {
                let Some(f) = f.as_array() else { continue };
                let s = |i: usize| f.get(i).and_then(Value::as_str).unwrap_or("");
                let kind = match s(2) {
                    "string" => Kind::String,
                    "bytes" => Kind::Bytes,
                    "int32" => Kind::Int32,
                    "int64" => Kind::Int64,
                    "bool" => Kind::Bool,
                    "double" => Kind::Double,
                    "message" => Kind::Message,
                    "map:string" => Kind::MapString,
                    "map:bytes" => Kind::MapBytes,
                    "map:message" => Kind::MapMessage,
                    _ => continue,
                };
                let flags = f.get(5).and_then(Value::as_u64).unwrap_or(0);
                let tag = f.first().and_then(Value::as_u64).unwrap_or(0) as u32;
                by_tag.insert(
                    tag,
                    FieldDesc {
                        json: s(1).to_owned(),
                        kind,
                        repeated: s(3) == "repeated",
                        type_name: f.get(4).and_then(Value::as_str).map(str::to_owned),
                        optional: flags & 1 != 0,
                        read_only: flags & 2 != 0,
                        inline: flags & 4 != 0,
                        pointer: super::omitempty::is_pointer(name, s(1)),
                    },
                );
            }
            out.insert(name.clone(), by_tag);
        }
        out
    })
}

/// Whether a protobuf description of this built-in kind exists.
pub fn supports(group: &str, version: &str, kind: &str) -> bool {
    definitions::get()
        .name_of(group, version, kind)
        .is_some_and(|n| messages().contains_key(n))
}

/// Decode the protobuf encoding of a built-in kind's object (the `raw` of a `runtime.Unknown`)
/// into its JSON fields.
pub fn decode(group: &str, version: &str, kind: &str, raw: &[u8]) -> Result<Map<String, Value>> {
    let name = definitions::get()
        .name_of(group, version, kind)
        .ok_or_else(|| ProtoError::UnknownMessage(format!("{group}/{version} {kind}")))?;
    match message(name, raw, 0)? {
        Value::Object(m) => Ok(m),
        _ => Ok(Map::new()),
    }
}

/// One wire-format field.
enum Wire<'a> {
    Varint(u64),
    Fixed64(u64),
    Fixed32,
    Bytes(&'a [u8]),
}

struct Reader<'a> {
    buf: &'a [u8],
    at: usize,
    what: &'a str,
}

impl<'a> Reader<'a> {
    fn malformed(&self) -> ProtoError {
        ProtoError::Malformed(self.what.to_owned())
    }

    fn varint(&mut self) -> Result<u64> {
        let mut v: u64 = 0;
        for shift in (0..64).step_by(7) {
            let b = *self.buf.get(self.at).ok_or_else(|| self.malformed())?;
            self.at += 1;
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(self.malformed())
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        let end = self.at.checked_add(n).ok_or_else(|| self.malformed())?;
        let s = self.buf.get(self.at..end).ok_or_else(|| self.malformed())?;
        self.at = end;
        Ok(s)
    }

    fn next(&mut self) -> Result<Option<(u32, Wire<'a>)>> {
        if self.at >= self.buf.len() {
            return Ok(None);
        }
        let key = self.varint()?;
        let tag = u32::try_from(key >> 3).map_err(|_| self.malformed())?;
        let wire = match key & 7 {
            0 => Wire::Varint(self.varint()?),
            1 => {
                let b = self.take(8)?;
                Wire::Fixed64(u64::from_le_bytes(
                    b.try_into().map_err(|_| self.malformed())?,
                ))
            }
            2 => {
                let n = usize::try_from(self.varint()?).map_err(|_| self.malformed())?;
                Wire::Bytes(self.take(n)?)
            }
            5 => {
                self.take(4)?;
                Wire::Fixed32
            }
            _ => return Err(self.malformed()),
        };
        Ok(Some((tag, wire)))
    }
}

fn b64(bytes: &[u8]) -> Value {
    Value::String(base64::engine::general_purpose::STANDARD.encode(bytes))
}

fn embedded_json(bytes: &[u8]) -> Value {
    serde_json::from_slice(bytes).unwrap_or_else(|_| b64(bytes))
}

fn message(name: &str, buf: &[u8], depth: usize) -> Result<Value> {
    if depth > crate::model::limits::MAX_DEPTH {
        return Err(ProtoError::TooDeep);
    }
    let fields = messages()
        .get(name)
        .ok_or_else(|| ProtoError::UnknownMessage(name.to_owned()))?;
    // The raw fields first, by tag.
    let mut raw: Vec<(u32, Wire<'_>)> = Vec::new();
    let mut r = Reader {
        buf,
        at: 0,
        what: name,
    };
    while let Some(f) = r.next()? {
        raw.push(f);
    }
    if let Some(v) = special(name, &raw, depth)? {
        return Ok(v);
    }
    let mut out = Map::new();
    for (tag, wire) in raw {
        let Some(f) = fields.get(&tag) else { continue };
        let value = field_value(f, wire, name, depth)?;
        match value {
            // A zero time (above): as if not sent.
            FieldValue::One(Value::Null) if !f.repeated => {}
            FieldValue::One(Value::Object(inner)) if f.inline => out.extend(inner),
            FieldValue::One(v) => {
                if f.repeated {
                    match out
                        .entry(f.json.clone())
                        .or_insert_with(|| Value::Array(Vec::new()))
                    {
                        Value::Array(a) => a.push(v),
                        slot => *slot = Value::Array(vec![v]),
                    }
                } else {
                    out.insert(f.json.clone(), v);
                }
            }
            FieldValue::Many(vs) => {
                if let Value::Array(a) = out
                    .entry(f.json.clone())
                    .or_insert_with(|| Value::Array(Vec::new()))
                {
                    a.extend(vs);
                }
            }
            FieldValue::Entry(k, v) => {
                if let Value::Object(m) = out
                    .entry(f.json.clone())
                    .or_insert_with(|| Value::Object(Map::new()))
                {
                    m.insert(k, v);
                }
            }
        }
    }
    // Zero scalars of optional fields: Go's `omitempty` drops them, a pointer's stay (see the
    // module docs).
    let zero_dropped: Vec<String> = fields
        .values()
        .filter(|f| f.optional && !f.repeated && !f.pointer)
        .filter(|f| match out.get(&f.json) {
            Some(Value::String(s)) => s.is_empty(),
            Some(Value::Bool(false)) => f.read_only,
            Some(Value::Number(n)) => n.as_f64() == Some(0.0) && f.read_only,
            _ => false,
        })
        .map(|f| f.json.clone())
        .collect();
    for k in zero_dropped {
        out.remove(&k);
    }
    Ok(Value::Object(out))
}

enum FieldValue {
    One(Value),
    Many(Vec<Value>),
    Entry(String, Value),
}

fn scalar(kind: Kind, wire: &Wire<'_>) -> Option<Value> {
    match (kind, wire) {
        (Kind::Int32, Wire::Varint(v)) => Some(Value::from(*v as i64 as i32)),
        (Kind::Int64, Wire::Varint(v)) => Some(Value::from(*v as i64)),
        (Kind::Bool, Wire::Varint(v)) => Some(Value::Bool(*v != 0)),
        (Kind::Double, Wire::Fixed64(v)) => {
            serde_json::Number::from_f64(f64::from_bits(*v)).map(Value::Number)
        }
        _ => None,
    }
}

fn field_value(f: &FieldDesc, wire: Wire<'_>, within: &str, depth: usize) -> Result<FieldValue> {
    let bad = || ProtoError::Malformed(format!("{within}.{}", f.json));
    match (f.kind, wire) {
        (Kind::String, Wire::Bytes(b)) => Ok(FieldValue::One(Value::String(
            String::from_utf8_lossy(b).into_owned(),
        ))),
        (Kind::Bytes, Wire::Bytes(b)) => Ok(FieldValue::One(b64(b))),
        (Kind::Message, Wire::Bytes(b)) => {
            let ty = f.type_name.as_deref().ok_or_else(bad)?;
            Ok(FieldValue::One(message(ty, b, depth + 1)?))
        }
        // Packed repeated numbers.
        (Kind::Int32 | Kind::Int64 | Kind::Bool | Kind::Double, Wire::Bytes(b)) => {
            let mut r = Reader {
                buf: b,
                at: 0,
                what: within,
            };
            let mut out = Vec::new();
            while r.at < b.len() {
                let w = if f.kind == Kind::Double {
                    let bytes = r.take(8)?;
                    Wire::Fixed64(u64::from_le_bytes(bytes.try_into().map_err(|_| bad())?))
                } else {
                    Wire::Varint(r.varint()?)
                };
                out.push(scalar(f.kind, &w).ok_or_else(bad)?);
            }
            Ok(FieldValue::Many(out))
        }
        (Kind::MapString | Kind::MapBytes | Kind::MapMessage, Wire::Bytes(b)) => {
            let mut r = Reader {
                buf: b,
                at: 0,
                what: within,
            };
            let (mut key, mut value) = (String::new(), None);
            while let Some((tag, w)) = r.next()? {
                match (tag, w) {
                    (1, Wire::Bytes(k)) => key = String::from_utf8_lossy(k).into_owned(),
                    (2, Wire::Bytes(v)) => {
                        value = Some(match f.kind {
                            Kind::MapString => {
                                Value::String(String::from_utf8_lossy(v).into_owned())
                            }
                            Kind::MapBytes => b64(v),
                            _ => {
                                let ty = f.type_name.as_deref().ok_or_else(bad)?;
                                message(ty, v, depth + 1)?
                            }
                        })
                    }
                    _ => {}
                }
            }
            let value = value.unwrap_or_else(|| match f.kind {
                Kind::MapMessage => Value::Object(Map::new()),
                _ => Value::String(String::new()),
            });
            Ok(FieldValue::Entry(key, value))
        }
        (kind, w) => scalar(kind, &w).map(FieldValue::One).ok_or_else(bad),
    }
}

fn bytes_at<'a>(raw: &'a [(u32, Wire<'a>)], tag: u32) -> Option<&'a [u8]> {
    raw.iter().rev().find_map(|(t, w)| match w {
        Wire::Bytes(b) if *t == tag => Some(*b),
        _ => None,
    })
}

fn varint_at(raw: &[(u32, Wire<'_>)], tag: u32) -> Option<u64> {
    raw.iter().rev().find_map(|(t, w)| match w {
        Wire::Varint(v) if *t == tag => Some(*v),
        _ => None,
    })
}

/// kube's types with their own JSON form.
fn special(name: &str, raw: &[(u32, Wire<'_>)], depth: usize) -> Result<Option<Value>> {
    const META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.";
    const EXT: &str = "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.";
    let short = name.rsplit('.').next().unwrap_or(name);
    let v = match name {
        // Go writes a zero time as an empty message (gogo writes the tag of every embedded
        // message), and reads it back as the zero time: not set (`null`, or left out), never
        // 1970 — a CSR condition's `lastTransitionTime` is filled in, an events.k8s.io Event's
        // deprecated timestamps stay unset, a template's `creationTimestamp` stays out.
        n if (n == format!("{META}Time") || n == format!("{META}MicroTime"))
            && varint_at(raw, 1).is_none()
            && varint_at(raw, 2).is_none() =>
        {
            Value::Null
        }
        n if n == format!("{META}Time") || n == format!("{META}MicroTime") => {
            let secs = varint_at(raw, 1).unwrap_or(0) as i64;
            let nanos = varint_at(raw, 2).unwrap_or(0) as i64 as i32;
            time(secs, nanos, short == "MicroTime")
        }
        "io.k8s.apimachinery.pkg.api.resource.Quantity" => Value::String(
            String::from_utf8_lossy(bytes_at(raw, 1).unwrap_or_default()).into_owned(),
        ),
        "io.k8s.apimachinery.pkg.util.intstr.IntOrString" => {
            if varint_at(raw, 1).unwrap_or(0) == 1 {
                Value::String(
                    String::from_utf8_lossy(bytes_at(raw, 3).unwrap_or_default()).into_owned(),
                )
            } else {
                Value::from(varint_at(raw, 2).unwrap_or(0) as i64 as i32)
            }
        }
        "io.k8s.apimachinery.pkg.runtime.RawExtension" => {
            embedded_json(bytes_at(raw, 1).unwrap_or_default())
        }
        n if n == format!("{META}FieldsV1") || n == format!("{EXT}JSON") => {
            embedded_json(bytes_at(raw, 1).unwrap_or_default())
        }
        n if n == format!("{META}Duration") => {
            Value::String(go_duration(varint_at(raw, 1).unwrap_or(0) as i64))
        }
        n if n == format!("{EXT}JSONSchemaPropsOrBool") => match bytes_at(raw, 2) {
            Some(s) => message(&format!("{EXT}JSONSchemaProps"), s, depth + 1)?,
            None => Value::Bool(varint_at(raw, 1).unwrap_or(0) != 0),
        },
        n if n == format!("{EXT}JSONSchemaPropsOrArray") => {
            let many: Vec<&[u8]> = raw
                .iter()
                .filter_map(|(t, w)| match w {
                    Wire::Bytes(b) if *t == 2 => Some(*b),
                    _ => None,
                })
                .collect();
            if many.is_empty() {
                message(
                    &format!("{EXT}JSONSchemaProps"),
                    bytes_at(raw, 1).unwrap_or_default(),
                    depth + 1,
                )?
            } else {
                let mut out = Vec::new();
                for b in many {
                    out.push(message(&format!("{EXT}JSONSchemaProps"), b, depth + 1)?);
                }
                Value::Array(out)
            }
        }
        n if n == format!("{EXT}JSONSchemaPropsOrStringArray") => {
            let strings: Vec<Value> = raw
                .iter()
                .filter_map(|(t, w)| match w {
                    Wire::Bytes(b) if *t == 2 => {
                        Some(Value::String(String::from_utf8_lossy(b).into_owned()))
                    }
                    _ => None,
                })
                .collect();
            if strings.is_empty() {
                message(
                    &format!("{EXT}JSONSchemaProps"),
                    bytes_at(raw, 1).unwrap_or_default(),
                    depth + 1,
                )?
            } else {
                Value::Array(strings)
            }
        }
        // Single-list wrappers (`ExtraValue`): the list itself.
        _ if short == "ExtraValue" => Value::Array(
            raw.iter()
                .filter_map(|(t, w)| match w {
                    Wire::Bytes(b) if *t == 1 => {
                        Some(Value::String(String::from_utf8_lossy(b).into_owned()))
                    }
                    _ => None,
                })
                .collect(),
        ),
        _ => return Ok(None),
    };
    Ok(Some(v))
}

/// Go's zero time (`0001-01-01T00:00:00Z`), which kube writes as `null`.
const GO_ZERO_TIME_UNIX: i64 = -62_135_596_800;

fn time(secs: i64, nanos: i32, micro: bool) -> Value {
    if secs == GO_ZERO_TIME_UNIX && nanos == 0 {
        return Value::Null;
    }
    let Some(t) = chrono::DateTime::from_timestamp(secs, nanos.max(0) as u32) else {
        return Value::Null;
    };
    let fmt = if micro {
        "%Y-%m-%dT%H:%M:%S%.6fZ"
    } else {
        "%Y-%m-%dT%H:%M:%SZ"
    };
    Value::String(t.format(fmt).to_string())
}

/// A duration in nanoseconds as Go's `time.Duration.String` prints it (`1h0m0s`, `1.5s`).
fn go_duration(ns: i64) -> String {
    if ns == 0 {
        return "0s".to_owned();
    }
    let neg = ns < 0;
    let mut u = ns.unsigned_abs();
    let sign = if neg { "-" } else { "" };
    if u < 1_000_000_000 {
        let (unit, div) = if u < 1_000 {
            ("ns", 1)
        } else if u < 1_000_000 {
            ("µs", 1_000)
        } else {
            ("ms", 1_000_000)
        };
        return format!("{sign}{}{unit}", frac(u, div));
    }
    let h = u / 3_600_000_000_000;
    u -= h * 3_600_000_000_000;
    let m = u / 60_000_000_000;
    u -= m * 60_000_000_000;
    let s = frac(u, 1_000_000_000);
    if h > 0 {
        format!("{sign}{h}h{m}m{s}s")
    } else if m > 0 {
        format!("{sign}{m}m{s}s")
    } else {
        format!("{sign}{s}s")
    }
}

fn frac(v: u64, div: u64) -> String {
    let whole = v / div;
    let rest = v % div;
    if rest == 0 {
        return whole.to_string();
    }
    let width = div.to_string().len() - 1;
    let digits = format!("{rest:0width$}");
    format!("{whole}.{}", digits.trim_end_matches('0'))
}

#[cfg(test)]
mod tests {
    use super::*;
    use prost::Message;

    #[test]
    fn a_service_decodes_like_client_go_sent_it() {
        use k8s_pb::api::core::v1 as core;
        use k8s_pb::apimachinery::pkg::apis::meta::v1 as meta;
        use k8s_pb::apimachinery::pkg::util::intstr::IntOrString;
        let svc = core::Service {
            metadata: Some(meta::ObjectMeta {
                name: Some("web".into()),
                namespace: Some(String::new()),
                labels: [("app".to_owned(), "web".to_owned())].into_iter().collect(),
                creation_timestamp: Some(meta::Time {
                    seconds: Some(GO_ZERO_TIME_UNIX),
                    nanos: Some(0),
                }),
                ..Default::default()
            }),
            spec: Some(core::ServiceSpec {
                ports: vec![core::ServicePort {
                    name: Some("80-8080".into()),
                    protocol: Some("TCP".into()),
                    port: Some(80),
                    target_port: Some(IntOrString {
                        r#type: Some(0),
                        int_val: Some(8080),
                        str_val: Some(String::new()),
                    }),
                    node_port: Some(0),
                    ..Default::default()
                }],
                selector: [("app".to_owned(), "web".to_owned())].into_iter().collect(),
                r#type: Some("ClusterIP".into()),
                cluster_ip: Some(String::new()),
                publish_not_ready_addresses: Some(false),
                ..Default::default()
            }),
            status: Some(core::ServiceStatus::default()),
        };
        let v = decode("", "v1", "Service", &svc.encode_to_vec()).unwrap();
        assert_eq!(
            Value::Object(v),
            serde_json::json!({
                // Go's zero time is not set: left out, as kube 1.34 leaves it out.
                "metadata": {"name": "web", "labels": {"app": "web"}},
                // Non-pointer zeros stay explicit (kube would omit them; the meaning is the same).
                "spec": {
                    "ports": [{"name": "80-8080", "protocol": "TCP", "port": 80, "targetPort": 8080,
                        "nodePort": 0}],
                    "selector": {"app": "web"},
                    "publishNotReadyAddresses": false,
                    "type": "ClusterIP",
                },
                "status": {},
            })
        );
    }

    #[test]
    fn zero_numbers_and_false_are_kept_and_system_fields_zeros_dropped() {
        use k8s_pb::api::batch::v1 as batch;
        let job = batch::Job {
            spec: Some(batch::JobSpec {
                parallelism: Some(0),
                suspend: Some(true),
                ..Default::default()
            }),
            ..Default::default()
        };
        let v = decode("batch", "v1", "Job", &job.encode_to_vec()).unwrap();
        assert_eq!(v["spec"]["parallelism"], 0);
        assert_eq!(v["spec"]["suspend"], true);
        let cm = k8s_pb::api::core::v1::ConfigMap {
            metadata: Some(k8s_pb::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                generation: Some(0),
                ..Default::default()
            }),
            ..Default::default()
        };
        let v = decode("", "v1", "Service", &cm.encode_to_vec()).unwrap();
        assert_eq!(v["metadata"], serde_json::json!({}));
    }

    /// gogo writes a pointer only when it is set, a value always: a pointer's zero is kept, as
    /// Go's JSON keeps it (`storageClassName: ""` is no dynamic provisioning, not the default
    /// StorageClass), a value's `""` dropped as `omitempty` drops it.
    #[test]
    fn a_pointers_zero_is_kept_and_a_values_empty_string_dropped() {
        use k8s_pb::api::apps::v1 as apps;
        use k8s_pb::api::core::v1 as core;
        use k8s_pb::apimachinery::pkg::apis::meta::v1 as meta;
        let pvc = core::PersistentVolumeClaim {
            metadata: Some(meta::ObjectMeta {
                name: Some("data".into()),
                namespace: Some(String::new()),
                generation: Some(0),
                // `*int64`, and populated by the system: a deleted object's, which an update
                // that takes off a finalizer sends back.
                deletion_grace_period_seconds: Some(0),
                ..Default::default()
            }),
            spec: Some(core::PersistentVolumeClaimSpec {
                access_modes: vec!["ReadWriteOnce".into()],
                volume_name: Some(String::new()),
                storage_class_name: Some(String::new()),
                volume_mode: Some("Filesystem".into()),
                ..Default::default()
            }),
            status: Some(core::PersistentVolumeClaimStatus::default()),
        };
        let v = decode("", "v1", "PersistentVolumeClaim", &pvc.encode_to_vec()).unwrap();
        assert_eq!(
            Value::Object(v),
            serde_json::json!({
                "metadata": {"name": "data", "deletionGracePeriodSeconds": 0},
                "spec": {
                    "accessModes": ["ReadWriteOnce"],
                    "storageClassName": "",
                    "volumeMode": "Filesystem",
                },
                "status": {},
            })
        );
        let deployment = apps::Deployment {
            spec: Some(apps::DeploymentSpec {
                replicas: Some(0),
                template: Some(core::PodTemplateSpec {
                    metadata: None,
                    spec: Some(core::PodSpec {
                        containers: vec![core::Container {
                            name: Some("app".into()),
                            image: Some("nginx".into()),
                            working_dir: Some(String::new()),
                            security_context: Some(core::SecurityContext {
                                read_only_root_filesystem: Some(false),
                                ..Default::default()
                            }),
                            ..Default::default()
                        }],
                        ..Default::default()
                    }),
                }),
                ..Default::default()
            }),
            ..Default::default()
        };
        let v = decode("apps", "v1", "Deployment", &deployment.encode_to_vec()).unwrap();
        assert_eq!(v["spec"]["replicas"], 0);
        assert_eq!(
            v["spec"]["template"]["spec"]["containers"][0],
            serde_json::json!({
                "name": "app",
                "image": "nginx",
                "securityContext": {"readOnlyRootFilesystem": false},
            })
        );
    }

    /// Go writes a zero `metav1.Time` as an empty message: it is not set, never 1970 (a
    /// DaemonSet's template, a CSR condition's `lastTransitionTime`).
    #[test]
    fn empty_times_are_not_set() {
        use k8s_pb::api::apps::v1 as apps;
        use k8s_pb::api::core::v1 as core;
        use k8s_pb::apimachinery::pkg::apis::meta::v1 as meta;
        let ds = apps::DaemonSet {
            metadata: Some(meta::ObjectMeta {
                name: Some("agent".into()),
                ..Default::default()
            }),
            spec: Some(apps::DaemonSetSpec {
                template: Some(core::PodTemplateSpec {
                    metadata: Some(meta::ObjectMeta {
                        creation_timestamp: Some(meta::Time::default()),
                        labels: [("app".to_owned(), "agent".to_owned())]
                            .into_iter()
                            .collect(),
                        ..Default::default()
                    }),
                    spec: None,
                }),
                ..Default::default()
            }),
            status: None,
        };
        let v = decode("apps", "v1", "DaemonSet", &ds.encode_to_vec()).unwrap();
        assert_eq!(
            v["spec"]["template"]["metadata"],
            serde_json::json!({"labels": {"app": "agent"}})
        );
        let csr = k8s_pb::api::certificates::v1::CertificateSigningRequest {
            status: Some(
                k8s_pb::api::certificates::v1::CertificateSigningRequestStatus {
                    conditions: vec![
                        k8s_pb::api::certificates::v1::CertificateSigningRequestCondition {
                            r#type: Some("Approved".into()),
                            status: Some("True".into()),
                            last_transition_time: Some(meta::Time::default()),
                            last_update_time: Some(meta::Time::default()),
                            ..Default::default()
                        },
                    ],
                    ..Default::default()
                },
            ),
            ..Default::default()
        };
        let v = decode(
            "certificates.k8s.io",
            "v1",
            "CertificateSigningRequest",
            &csr.encode_to_vec(),
        )
        .unwrap();
        assert_eq!(
            v["status"]["conditions"][0],
            serde_json::json!({"type": "Approved", "status": "True"})
        );
    }

    #[test]
    fn durations_print_like_go() {
        assert_eq!(go_duration(3_600_000_000_000), "1h0m0s");
        assert_eq!(go_duration(1_500_000_000), "1.5s");
        assert_eq!(go_duration(90_000_000_000), "1m30s");
        assert_eq!(go_duration(2_000_000), "2ms");
    }

    #[test]
    fn malformed_bodies_are_errors_not_panics() {
        for body in [&[0x0a, 0xff][..], &[0x0a][..], &[0xff; 11][..], &[0x0f][..]] {
            assert!(decode("", "v1", "Service", body).is_err());
        }
        assert!(supports("batch", "v1", "CronJob"));
        assert!(!supports("turtles.dev", "v1", "Controller"));
    }
}
