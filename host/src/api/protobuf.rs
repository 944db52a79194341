//! Kubernetes protobuf (`application/vnd.kubernetes.protobuf`) request bodies.
//!
//! Since client-go 1.32, typed Go clients (`kubectl create configmap`, `kubectl create
//! namespace`, `kubectl create secret generic`, `kubectl create serviceaccount`, the kubelet,
//! controllers, ...) send request bodies as protobuf: the 4 magic bytes `k8s\0` followed by a
//! `runtime.Unknown` message (`typeMeta{apiVersion=1, kind=2}=1, raw=2, contentEncoding=3,
//! contentType=4`) whose `raw` is the protobuf encoding of the typed object.
//!
//! [`decode`] turns such a body into exactly the JSON that the same Go object would have been
//! marshalled to by `encoding/json`, and [`encode`] does the reverse (mirroring what the Go
//! marshaller writes, so tests can produce bodies like client-go does).
//!
//! # JSON fidelity
//!
//! Every converted field follows the Go struct's `json` tag:
//!
//! * `omitempty` strings, numbers, booleans, lists and maps are left out when empty/zero;
//! * fields without `omitempty` are always written (`""`, `0`, `false`, and `null` for an
//!   empty list or map, as Go writes a nil slice/map);
//! * pointers (`*string`, `*int32`, `*bool`, `*T`) are written whenever they are set, even
//!   to a zero value;
//! * struct-valued fields (`spec`, `status`, `metadata`, `resources`, `source`,
//!   `involvedObject`, `state`, `nodeInfo`, ...) are always written, as Go does;
//! * `metav1.Time` values are RFC 3339 with seconds (`2006-01-02T15:04:05Z`),
//!   `metav1.MicroTime` values carry microseconds (`2006-01-02T15:04:05.000000Z`). A zero
//!   non-pointer time is written as `null` (like Go), except `metadata.creationTimestamp`,
//!   which is omitted (like Kubernetes >= 1.33, which tags it `omitzero`);
//! * `resource.Quantity` values are their canonical strings; `[]byte` values are base64;
//! * `map[string]ExtraValue` values (`extra` of user info and access reviews) are always
//!   arrays, `[]` when empty (Go reads every protobuf entry into a non-nil slice).
//!
//! Output object keys follow the Go struct field order, after `apiVersion` and `kind`.
//!
//! # Supported kinds
//!
//! With every field of the type (both directions): `v1 ConfigMap`, `v1 Secret`,
//! `v1 Namespace`, `v1 ServiceAccount`, `v1 Event`, `coordination.k8s.io/v1 Lease`;
//! `rbac.authorization.k8s.io/v1`: `Role`, `ClusterRole` (with its `aggregationRule` label
//! selectors), `RoleBinding` and `ClusterRoleBinding`; `authorization.k8s.io/v1`:
//! `SubjectAccessReview`, `SelfSubjectAccessReview`, `LocalSubjectAccessReview` (resource
//! attributes with field and label selectors, non-resource attributes) and
//! `SelfSubjectRulesReview`; `authentication.k8s.io/v1`: `SelfSubjectReview` and
//! `TokenReview`; `apps/v1` `Deployment` and `ReplicaSet` (their pod templates as far as `v1 Pod`
//! goes, below) and `autoscaling/v1` `Scale`.
//! `metadata` (`ObjectMeta`) is complete, including `ownerReferences` and `managedFields`
//! (whose `fieldsV1` is embedded as JSON).
//!
//! `v1 Pod` and `v1 Node` cover what is commonly used: Pod containers (init and regular) with
//! ports, env/envFrom, resources, volume mounts/devices, probes, lifecycle hooks and security
//! contexts; volumes of type configMap, secret, emptyDir, hostPath, persistentVolumeClaim,
//! downwardAPI, projected (secret, configMap, downwardAPI, serviceAccountToken), nfs, csi and
//! image; every scalar field of the pod spec, tolerations, host aliases, DNS config, the pod
//! security context, readiness and scheduling gates, and the pod status (conditions, IPs,
//! container statuses). Node spec (podCIDR(s), providerID, unschedulable, taints, externalID)
//! and status (capacity, allocatable, phase, conditions, addresses, daemon endpoints, node
//! info, images, volumes in use/attached, runtime handlers, features, declared features).
//!
//! # Limits
//!
//! Prost keeps no unknown fields, and some Pod/Node fields are not converted: `affinity`,
//! `topologySpreadConstraints`, `ephemeralContainers`, `resourceClaims`, `workloadRef`,
//! the other volume types (gitRepo, iscsi, rbd, cephfs, ephemeral, ...), projected
//! clusterTrustBundle/podCertificate sources, status `resourceClaimStatuses` and
//! `extendedResourceClaimStatus`, container status `user` and `allocatedResourcesStatus`,
//! and node `configSource`/`status.config`. When one of those is set in a body, [`decode`]
//! fails with [`ProtobufError::UnsupportedField`] rather than dropping it silently (and
//! [`encode`] refuses JSON that sets them), so the client can fall back to JSON.
//! Fields that are newer than the `k8s-pb` protobuf definitions (and so unknown to prost)
//! cannot be detected and are lost. Any other kind fails with
//! [`ProtobufError::Unsupported`]. Bodies with a `contentEncoding` (none is used by client-go)
//! are refused.

use std::collections::BTreeMap;

use base64::Engine as _;
use k8s_pb::api::apps::v1 as apps;
use k8s_pb::api::authentication::v1 as authn;
use k8s_pb::api::authorization::v1 as authz;
use k8s_pb::api::autoscaling::v1 as autoscaling;
use k8s_pb::api::coordination::v1 as coord;
use k8s_pb::api::core::v1 as core;
use k8s_pb::api::rbac::v1 as rbac;
use k8s_pb::apimachinery::pkg::api::resource::Quantity;
use k8s_pb::apimachinery::pkg::apis::meta::v1 as meta;
use k8s_pb::apimachinery::pkg::runtime::{TypeMeta as EnvelopeTypeMeta, Unknown};
use k8s_pb::apimachinery::pkg::util::intstr::IntOrString;
use prost::Message;
use serde_json::{Map, Value};

/// Errors from decoding or encoding protobuf bodies.
#[derive(Debug, thiserror::Error)]
pub enum ProtobufError {
    /// The body does not start with the `k8s\0` magic bytes.
    #[error(
        "the request body is not a kubernetes protobuf envelope (missing the k8s\\0 magic prefix)"
    )]
    MissingMagic,
    /// The body is not valid protobuf for its envelope or kind.
    #[error("invalid protobuf body: {0}")]
    Decode(String),
    /// The envelope names a kind this server cannot convert.
    #[error("the protobuf body for {api_version} {kind} cannot be decoded by this server; send application/json")]
    Unsupported {
        /// The envelope's apiVersion.
        api_version: String,
        /// The envelope's kind.
        kind: String,
    },
    /// The object sets a field this server does not convert.
    #[error("the protobuf body for {api_version} {kind} sets {field}, which this server cannot decode; send application/json")]
    UnsupportedField {
        /// The envelope's apiVersion.
        api_version: String,
        /// The envelope's kind.
        kind: String,
        /// JSON path of the field, e.g. `spec.affinity`.
        field: String,
    },
    /// The JSON object cannot be encoded as protobuf.
    #[error("cannot encode the object as protobuf: {0}")]
    Encode(String),
}

impl ProtobufError {
    fn with_type(self, api_version: &str, kind: &str) -> Self {
        match self {
            ProtobufError::UnsupportedField { field, .. } => ProtobufError::UnsupportedField {
                api_version: api_version.to_string(),
                kind: kind.to_string(),
                field,
            },
            other => other,
        }
    }
}

/// Result type of this module.
pub type Result<T, E = ProtobufError> = std::result::Result<T, E>;

/// The magic prefix of kubernetes protobuf bodies.
pub const MAGIC: &[u8; 4] = b"k8s\0";

/// The protobuf media type.
pub const CONTENT_TYPE: &str = "application/vnd.kubernetes.protobuf";

/// Decode a k8s protobuf envelope into JSON (with apiVersion and kind set from the envelope's
/// typeMeta).
pub fn decode(body: &[u8]) -> Result<Value> {
    let rest = body
        .strip_prefix(MAGIC.as_slice())
        .ok_or(ProtobufError::MissingMagic)?;
    let unknown = Unknown::decode(rest)
        .map_err(|e| ProtobufError::Decode(format!("runtime.Unknown envelope: {e}")))?;
    if let Some(enc) = unknown
        .content_encoding
        .as_deref()
        .filter(|s| !s.is_empty())
    {
        return Err(ProtobufError::Decode(format!(
            "unsupported content encoding {enc:?}"
        )));
    }
    if let Some(ct) = unknown
        .content_type
        .as_deref()
        .filter(|s| !s.is_empty() && *s != CONTENT_TYPE)
    {
        return Err(ProtobufError::Decode(format!(
            "unsupported content type {ct:?} in the envelope"
        )));
    }
    let type_meta = unknown.type_meta.unwrap_or_default();
    let api_version = type_meta.api_version.unwrap_or_default();
    let kind = type_meta.kind.unwrap_or_default();
    if api_version.is_empty() || kind.is_empty() {
        return Err(ProtobufError::Decode(
            "the envelope has no apiVersion or kind".to_string(),
        ));
    }
    let raw = unknown.raw.as_deref().unwrap_or_default();
    // The generated structs are large (a Pod's Container holds its probes, lifecycle and
    // security context inline, ~3 KB): a body of 2-byte empty messages would decode to ~1,000
    // times its size (a 400 KB body took 1.1 GB). A body big enough for that is first decoded
    // generically, straight into JSON (what `{}` in a JSON body costs), and its messages
    // counted; past [`MAX_MESSAGES`] it is refused before the typed decode.
    let typed = codec(&api_version, &kind);
    if typed.is_some() && raw.len() > 4096 {
        let (group, version) = api_version.rsplit_once('/').unwrap_or(("", &api_version));
        if crate::builtin::protobuf::supports(group, version, &kind) {
            let fields = crate::builtin::protobuf::decode(group, version, &kind, raw)
                .map_err(|e| ProtobufError::Decode(e.to_string()))?;
            let messages = count_objects(&Value::Object(fields));
            if messages > MAX_MESSAGES {
                return Err(ProtobufError::Decode(format!(
                    "{messages} embedded messages, more than the {MAX_MESSAGES} a {kind} may have"
                )));
            }
        }
    }
    let fields = match typed {
        Some(codec) => (codec.decode)(raw).map_err(|e| e.with_type(&api_version, &kind))?,
        None => {
            // Every other built-in kind: decoded generically from kube's proto field numbers.
            let (group, version) = api_version.rsplit_once('/').unwrap_or(("", &api_version));
            if !crate::builtin::protobuf::supports(group, version, &kind) {
                return Err(ProtobufError::Unsupported { api_version, kind });
            }
            crate::builtin::protobuf::decode(group, version, &kind, raw)
                .map_err(|e| ProtobufError::Decode(e.to_string()))?
        }
    };
    let mut out = Map::new();
    out.insert("apiVersion".to_string(), Value::String(api_version));
    out.insert("kind".to_string(), Value::String(kind));
    out.extend(fields);
    Ok(Value::Object(out))
}

/// Most embedded messages a protobuf body of a kind with an exact codec may hold (see
/// [`decode`]): far above any real object's, and a bound on what the typed decode allocates.
const MAX_MESSAGES: usize = 50_000;

/// JSON objects in `v`, counted without recursion.
fn count_objects(v: &Value) -> usize {
    let mut n = 0;
    let mut stack = vec![v];
    while let Some(v) = stack.pop() {
        match v {
            Value::Object(m) => {
                n += 1;
                stack.extend(m.values());
            }
            Value::Array(a) => stack.extend(a.iter()),
            _ => {}
        }
    }
    n
}

/// Encode JSON of a supported kind as a k8s protobuf envelope (used by tests to produce
/// bodies exactly like client-go does).
pub fn encode(obj: &Value) -> Result<Vec<u8>> {
    let map = obj
        .as_object()
        .ok_or_else(|| ProtobufError::Encode("expected a JSON object".to_string()))?;
    let mut input = In::new(map, String::new());
    let api_version = input.string("apiVersion")?.unwrap_or_default();
    let kind = input.string("kind")?.unwrap_or_default();
    let Some(codec) = codec(&api_version, &kind) else {
        return Err(ProtobufError::Encode(format!(
            "{api_version} {kind} is not supported by the protobuf codec"
        )));
    };
    let raw = (codec.encode)(&mut input)?;
    input.finish()?;
    let unknown = Unknown {
        type_meta: Some(EnvelopeTypeMeta {
            api_version: Some(api_version),
            kind: Some(kind),
        }),
        raw: Some(raw),
        content_encoding: Some(String::new()),
        content_type: Some(String::new()),
    };
    let mut out = MAGIC.to_vec();
    out.extend(unknown.encode_to_vec());
    Ok(out)
}

// ---------------------------------------------------------------------------------------------
// Dispatch

type DecodeFn = fn(&[u8]) -> Result<Map<String, Value>>;
type EncodeFn = fn(&mut In<'_>) -> Result<Vec<u8>>;

struct Codec {
    decode: DecodeFn,
    encode: EncodeFn,
}

fn codec_for<T: Message + Default + Conv>() -> Codec {
    Codec {
        decode: decode_as::<T>,
        encode: encode_as::<T>,
    }
}

fn codec(api_version: &str, kind: &str) -> Option<Codec> {
    Some(match (api_version, kind) {
        ("v1", "ConfigMap") => codec_for::<core::ConfigMap>(),
        ("v1", "Secret") => codec_for::<core::Secret>(),
        ("v1", "Namespace") => codec_for::<core::Namespace>(),
        ("v1", "ServiceAccount") => codec_for::<core::ServiceAccount>(),
        ("v1", "Event") => codec_for::<core::Event>(),
        ("v1", "Pod") => codec_for::<core::Pod>(),
        ("v1", "Node") => codec_for::<core::Node>(),
        ("v1", "Binding") => codec_for::<core::Binding>(),
        ("apps/v1", "Deployment") => codec_for::<apps::Deployment>(),
        ("apps/v1", "ReplicaSet") => codec_for::<apps::ReplicaSet>(),
        ("autoscaling/v1", "Scale") => codec_for::<autoscaling::Scale>(),
        ("coordination.k8s.io/v1", "Lease") => codec_for::<coord::Lease>(),
        ("rbac.authorization.k8s.io/v1", "Role") => codec_for::<rbac::Role>(),
        ("rbac.authorization.k8s.io/v1", "ClusterRole") => codec_for::<rbac::ClusterRole>(),
        ("rbac.authorization.k8s.io/v1", "RoleBinding") => codec_for::<rbac::RoleBinding>(),
        ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding") => {
            codec_for::<rbac::ClusterRoleBinding>()
        }
        ("authorization.k8s.io/v1", "SubjectAccessReview") => {
            codec_for::<authz::SubjectAccessReview>()
        }
        ("authorization.k8s.io/v1", "SelfSubjectAccessReview") => {
            codec_for::<authz::SelfSubjectAccessReview>()
        }
        ("authorization.k8s.io/v1", "LocalSubjectAccessReview") => {
            codec_for::<authz::LocalSubjectAccessReview>()
        }
        ("authorization.k8s.io/v1", "SelfSubjectRulesReview") => {
            codec_for::<authz::SelfSubjectRulesReview>()
        }
        ("authentication.k8s.io/v1", "SelfSubjectReview") => {
            codec_for::<authn::SelfSubjectReview>()
        }
        ("authentication.k8s.io/v1", "TokenReview") => codec_for::<authn::TokenReview>(),
        _ => return None,
    })
}

fn decode_as<T: Message + Default + Conv>(raw: &[u8]) -> Result<Map<String, Value>> {
    let obj = T::decode(raw).map_err(|e| ProtobufError::Decode(e.to_string()))?;
    let mut out = Out::new(String::new());
    obj.put(&mut out)?;
    Ok(out.map)
}

fn encode_as<T: Message + Conv>(input: &mut In<'_>) -> Result<Vec<u8>> {
    Ok(T::get(input)?.encode_to_vec())
}

// ---------------------------------------------------------------------------------------------
// JSON building (protobuf -> JSON) and reading (JSON -> protobuf)

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

/// A JSON object being built from a protobuf message.
struct Out {
    map: Map<String, Value>,
    path: String,
}

impl Out {
    fn new(path: String) -> Self {
        Out {
            map: Map::new(),
            path,
        }
    }

    fn set(&mut self, key: &str, value: Value) {
        self.map.insert(key.to_string(), value);
    }

    fn path(&self, key: &str) -> String {
        join(&self.path, key)
    }

    fn unsupported(&self, key: &str) -> ProtobufError {
        ProtobufError::UnsupportedField {
            api_version: String::new(),
            kind: String::new(),
            field: self.path(key),
        }
    }
}

fn put_nested<T: Conv>(value: &T, path: String) -> Result<Value> {
    let mut out = Out::new(path);
    value.put(&mut out)?;
    Ok(Value::Object(out.map))
}

/// A JSON object being read into a protobuf message; remembers which keys were read so that
/// unknown keys can be refused.
struct In<'a> {
    map: &'a Map<String, Value>,
    path: String,
    used: Vec<&'static str>,
}

impl<'a> In<'a> {
    fn new(map: &'a Map<String, Value>, path: String) -> Self {
        In {
            map,
            path,
            used: Vec::new(),
        }
    }

    fn path(&self, key: &str) -> String {
        join(&self.path, key)
    }

    /// The value of `key`, `None` when absent or null.
    fn raw(&mut self, key: &'static str) -> Option<&'a Value> {
        self.used.push(key);
        self.map.get(key).filter(|v| !v.is_null())
    }

    fn type_error(&self, key: &str, expected: &str) -> ProtobufError {
        ProtobufError::Encode(format!("{}: expected {expected}", self.path(key)))
    }

    fn string(&mut self, key: &'static str) -> Result<Option<String>> {
        match self.raw(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(self.type_error(key, "a string")),
        }
    }

    fn int(&mut self, key: &'static str) -> Result<Option<i64>> {
        match self.raw(key) {
            None => Ok(None),
            Some(v) => v
                .as_i64()
                .map(Some)
                .ok_or_else(|| self.type_error(key, "an integer")),
        }
    }

    fn boolean(&mut self, key: &'static str) -> Result<Option<bool>> {
        match self.raw(key) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(_) => Err(self.type_error(key, "a boolean")),
        }
    }

    fn array(&mut self, key: &'static str) -> Result<&'a [Value]> {
        match self.raw(key) {
            None => Ok(&[]),
            Some(Value::Array(items)) => Ok(items),
            Some(_) => Err(self.type_error(key, "an array")),
        }
    }

    fn object(&mut self, key: &'static str) -> Result<Option<&'a Map<String, Value>>> {
        match self.raw(key) {
            None => Ok(None),
            Some(Value::Object(map)) => Ok(Some(map)),
            Some(_) => Err(self.type_error(key, "an object")),
        }
    }

    fn finish(&self) -> Result<()> {
        for (key, value) in self.map {
            if !value.is_null() && !self.used.contains(&key.as_str()) {
                return Err(ProtobufError::Encode(format!(
                    "field {} is not supported by the protobuf codec",
                    self.path(key)
                )));
            }
        }
        Ok(())
    }
}

fn get_nested<T: Conv>(map: &Map<String, Value>, path: String) -> Result<T> {
    let mut input = In::new(map, path);
    let value = T::get(&mut input)?;
    input.finish()?;
    Ok(value)
}

fn get_object<T: Conv>(value: &Value, path: String) -> Result<T> {
    match value {
        Value::Object(map) => get_nested(map, path),
        _ => Err(ProtobufError::Encode(format!("{path}: expected an object"))),
    }
}

/// Conversion of one protobuf message type to and from JSON object fields.
trait Conv: Sized {
    fn put(&self, out: &mut Out) -> Result<()>;
    fn get(input: &mut In<'_>) -> Result<Self>;
}

/// How one field is converted; implemented by marker types named after the Go field shape.
trait Kind<T> {
    fn put(out: &mut Out, key: &'static str, value: &T) -> Result<()>;
    fn get(input: &mut In<'_>, key: &'static str) -> Result<T>;
}

/// Declares `Conv` for a message, listing every protobuf field (the struct literal makes the
/// compiler check that none is forgotten) in Go struct order.
macro_rules! conv {
    ($($ty:ty { $($json:literal => $field:ident : $kind:ident),* $(,)? })*) => {$(
        impl Conv for $ty {
            fn put(&self, out: &mut Out) -> Result<()> {
                $( <$kind as Kind<_>>::put(out, $json, &self.$field)?; )*
                Ok(())
            }
            fn get(input: &mut In<'_>) -> Result<Self> {
                Ok(Self { $( $field: <$kind as Kind<_>>::get(input, $json)?, )* })
            }
        }
    )*};
}

// --- strings

/// Go `string` with `omitempty`.
struct Str;
/// Go `string` without `omitempty`.
struct StrReq;
/// Go `*string` with `omitempty`.
struct StrPtr;
/// Go `*string` without `omitempty` (nil is `null`).
struct StrPtrReq;

impl Kind<Option<String>> for Str {
    fn put(out: &mut Out, key: &'static str, value: &Option<String>) -> Result<()> {
        if let Some(s) = value.as_ref().filter(|s| !s.is_empty()) {
            out.set(key, Value::String(s.clone()));
        }
        Ok(())
    }
    fn get(input: &mut In<'_>, key: &'static str) -> Result<Option<String>> {
        Ok(Some(input.string(key)?.unwrap_or_default()))
    }
}

impl Kind<Option<String>> for StrReq {
    fn put(out: &mut Out, key: &'static str, value: &Option<String>) -> Result<()> {
        out.set(key, Value::String(value.clone().unwrap_or_default()));
        Ok(())
    }
    fn get(input: &mut In<'_>, key: &'static str) -> Result<Option<String>> {
        Ok(Some(input.string(key)?.unwrap_or_default()))
    }
}

impl Kind<Option<String>> for StrPtr {
    fn put(out: &mut Out, key: &'static str, value: &Option<String>) -> Result<()> {
        if let Some(s) = value {
            out.set(key, Value::String(s.clone()));
        }
        Ok(())
    }
    fn get(input: &mut In<'_>, key: &'static str) -> Result<Option<String>> {
        input.string(key)
    }
}

impl Kind<Option<String>> for StrPtrReq {
    fn put(out: &mut Out, key: &'static str, value: &Option<String>) -> Result<()> {
        out.set(key, value.clone().map_or(Value::Null, Value::String));
        Ok(())
    }
    fn get(input: &mut In<'_>, key: &'static str) -> Result<Option<String>> {
        input.string(key)
    }
}

// --- integers

trait IntTy: Copy + Default + PartialEq + Into<i64> + TryFrom<i64> {}
impl IntTy for i32 {}
impl IntTy for i64 {}

fn to_int<N: IntTy>(input: &In<'_>, key: &str, value: i64) -> Result<N> {
    N::try_from(value)
        .map_err(|_| ProtobufError::Encode(format!("{}: {value} is out of range", input.path(key))))
}

/// Go `int32`/`int64` with `omitempty`.
struct Int;
/// Go `int32`/`int64` without `omitempty`.
struct IntReq;
/// Go `*int32`/`*int64`.
struct IntPtr;

impl<N: IntTy> Kind<Option<N>> for Int {
    fn put(out: &mut Out, key: &'static str, value: &Option<N>) -> Result<()> {
        if let Some(n) = value.filter(|n| *n != N::default()) {
            out.set(key, Value::from(n.into()));
        }
        Ok(())
    }
    fn get(input: &mut In<'_>, key: &'static str) -> Result<Option<N>> {
        let value = input.int(key)?.unwrap_or_default();
        Ok(Some(to_int(input, key, value)?))
    }
}

impl<N: IntTy> Kind<Option<N>> for IntReq {
    fn put(out: &mut Out, key: &'static str, value: &Option<N>) -> Result<()> {
        out.set(key, Value::from(value.unwrap_or_default().into()));
        Ok(())
    }
    fn get(input: &mut In<'_>, key: &'static str) -> Result<Option<N>> {
        <Int as Kind<Option<N>>>::get(input, key)
    }
}

impl<N: IntTy> Kind<Option<N>> for IntPtr {
    fn put(out: &mut Out, key: &'static str, value: &Option<N>) -> Result<()> {
        if let Some(n) = value {
            out.set(key, Value::from((*n).into()));
        }
        Ok(())
    }
    fn get(input: &mut In<'_>, key: &'static str) -> Result<Option<N>> {
        match input.int(key)? {
            Some(value) => Ok(Some(to_int(input, key, value)?)),
            None => Ok(None),
        }
    }
}

/// Go `[]int32`/`[]int64` with `omitempty`.
struct Ints;

impl<N: IntTy> Kind<Vec<N>> for Ints {
    fn put(out: &mut Out, key: &'static str, value: &Vec<N>) -> Result<()> {
        if !value.is_empty() {
            let items = value.iter().map(|n| Value::from((*n).into())).collect();
            out.set(key, Value::Array(items));
        }
        Ok(())
    }
    fn get(input: &mut In<'_>, key: &'static str) -> Result<Vec<N>> {
        let items = input.array(key)?;
        items
            .iter()
            .map(|item| {
                let value = item
                    .as_i64()
                    .ok_or_else(|| input.type_error(key, "an array of integers"))?;
                to_int(input, key, value)
            })
            .collect()
    }
}

// --- booleans

/// Go `bool` with `omitempty`.
struct Bool;
/// Go `bool` without `omitempty`.
struct BoolReq;
/// Go `*bool`.
struct BoolPtr;

impl Kind<Option<bool>> for Bool {
    fn put(out: &mut Out, key: &'static str, value: &Option<bool>) -> Result<()> {
        if *value == Some(true) {
            out.set(key, Value::Bool(true));
        }
        Ok(())
    }
    fn get(input: &mut In<'_>, key: &'static str) -> Result<Option<bool>> {
        Ok(Some(input.boolean(key)?.unwrap_or_default()))
    }
}

impl Kind<Option<bool>> for BoolReq {
    fn put(out: &mut Out, key: &'static str, value: &Option<bool>) -> Result<()> {
        out.set(key, Value::Bool(value.unwrap_or_default()));
        Ok(())
    }
    fn get(input: &mut In<'_>, key: &'static str) -> Result<Option<bool>> {
        Ok(Some(input.boolean(key)?.unwrap_or_default()))
    }
}

impl Kind<Option<bool>> for BoolPtr {
    fn put(out: &mut Out, key: &'static str, value: &Option<bool>) -> Result<()> {
        if let Some(b) = value {
            out.set(key, Value::Bool(*b));
        }
        Ok(())
    }
    fn get(input: &mut In<'_>, key: &'static str) -> Result<Option<bool>> {
        input.boolean(key)
    }
}

// --- times

/// `time.Time{}.Unix()`: what a zero Go time would carry if it were ever encoded.
const GO_ZERO_TIME_UNIX: i64 = -62_135_596_800;

/// `metav1.Time` (seconds precision) and `metav1.MicroTime` (microseconds precision).
trait Timestamp: Default {
    const MICRO: bool;
    fn parts(&self) -> (Option<i64>, Option<i32>);
    fn from_parts(seconds: i64, nanos: i32) -> Self;
}

impl Timestamp for meta::Time {
    const MICRO: bool = false;
    fn parts(&self) -> (Option<i64>, Option<i32>) {
        (self.seconds, self.nanos)
    }
    fn from_parts(seconds: i64, nanos: i32) -> Self {
        meta::Time {
            seconds: Some(seconds),
            nanos: Some(nanos),
        }
    }
}

impl Timestamp for meta::MicroTime {
    const MICRO: bool = true;
    fn parts(&self) -> (Option<i64>, Option<i32>) {
        (self.seconds, self.nanos)
    }
    fn from_parts(seconds: i64, nanos: i32) -> Self {
        meta::MicroTime {
            seconds: Some(seconds),
            nanos: Some(nanos),
        }
    }
}

/// Formats a timestamp like Go's JSON marshalling; `None` for the zero time (Go encodes a zero
/// `metav1.Time` as an empty message).
fn format_time<T: Timestamp>(value: &T, path: &str) -> Result<Option<String>> {
    let (seconds, nanos) = value.parts();
    let Some(seconds) = seconds else {
        return Ok(None);
    };
    let nanos = nanos.unwrap_or_default();
    if seconds == GO_ZERO_TIME_UNIX && nanos == 0 {
        return Ok(None);
    }
    // Go drops the nanoseconds of a metav1.Time when reading protobuf.
    let nanos = if T::MICRO { nanos } else { 0 };
    let time = u32::try_from(nanos)
        .ok()
        .filter(|n| *n < 1_000_000_000)
        .and_then(|n| chrono::DateTime::from_timestamp(seconds, n))
        .filter(|t| (0..=9999).contains(&chrono::Datelike::year(t)))
        .ok_or_else(|| {
            ProtobufError::Decode(format!(
                "{path}: timestamp {seconds}s {nanos}ns is out of range"
            ))
        })?;
    let format = if T::MICRO {
        "%Y-%m-%dT%H:%M:%S%.6fZ"
    } else {
        "%Y-%m-%dT%H:%M:%SZ"
    };
    Ok(Some(time.format(format).to_string()))
}

fn parse_time<T: Timestamp>(input: &mut In<'_>, key: &'static str) -> Result<Option<T>> {
    let Some(text) = input.string(key)? else {
        return Ok(None);
    };
    let invalid = || {
        ProtobufError::Encode(format!(
            "{}: {text:?} is not an RFC 3339 time",
            input.path(key)
        ))
    };
    let time = chrono::DateTime::parse_from_rfc3339(&text).map_err(|_| invalid())?;
    let nanos = i32::try_from(time.timestamp_subsec_nanos())
        .ok()
        .filter(|n| *n < 1_000_000_000)
        .ok_or_else(invalid)?;
    Ok(Some(T::from_parts(time.timestamp(), nanos)))
}

/// Go `metav1.Time`/`metav1.MicroTime` value: a zero time is `null`.
struct Time;
/// Go `metav1.Time` value tagged `omitzero`: a zero time is omitted.
struct TimeOmit;
/// Go `*metav1.Time`/`*metav1.MicroTime`.
struct TimePtr;

impl<T: Timestamp> Kind<Option<T>> for Time {
    fn put(out: &mut Out, key: &'static str, value: &Option<T>) -> Result<()> {
        let text = match value {
            Some(t) => format_time(t, &out.path(key))?,
            None => None,
        };
        out.set(key, text.map_or(Value::Null, Value::String));
        Ok(())
    }
    fn get(input: &mut In<'_>, key: &'static str) -> Result<Option<T>> {
        Ok(Some(parse_time(input, key)?.unwrap_or_default()))
    }
}

impl<T: Timestamp> Kind<Option<T>> for TimeOmit {
    fn put(out: &mut Out, key: &'static str, value: &Option<T>) -> Result<()> {
        if let Some(t) = value {
            if let Some(text) = format_time(t, &out.path(key))? {
                out.set(key, Value::String(text));
            }
        }
        Ok(())
    }
    fn get(input: &mut In<'_>, key: &'static str) -> Result<Option<T>> {
        Ok(Some(parse_time(input, key)?.unwrap_or_default()))
    }
}

impl<T: Timestamp> Kind<Option<T>> for TimePtr {
    fn put(out: &mut Out, key: &'static str, value: &Option<T>) -> Result<()> {
        if let Some(t) = value {
            let text = format_time(t, &out.path(key))?;
            out.set(key, text.map_or(Value::Null, Value::String));
        }
        Ok(())
    }
    fn get(input: &mut In<'_>, key: &'static str) -> Result<Option<T>> {
        parse_time(input, key)
    }
}

// --- messages

/// Go `*T` (struct pointer) with `omitempty`.
struct Msg;
/// Go struct value: always written.
struct MsgReq;
/// Go embedded struct (`json:",inline"`): its fields are written into the parent object.
struct Inline;

impl<T: Conv + Default> Kind<Option<T>> for Msg {
    fn put(out: &mut Out, key: &'static str, value: &Option<T>) -> Result<()> {
        if let Some(m) = value {
            let nested = put_nested(m, out.path(key))?;
            out.set(key, nested);
        }
        Ok(())
    }
    fn get(input: &mut In<'_>, key: &'static str) -> Result<Option<T>> {
        match input.object(key)? {
            Some(map) => Ok(Some(get_nested(map, input.path(key))?)),
            None => Ok(None),
        }
    }
}

impl<T: Conv + Default> Kind<Option<T>> for MsgReq {
    fn put(out: &mut Out, key: &'static str, value: &Option<T>) -> Result<()> {
        let nested = match value {
            Some(m) => put_nested(m, out.path(key))?,
            None => put_nested(&T::default(), out.path(key))?,
        };
        out.set(key, nested);
        Ok(())
    }
    fn get(input: &mut In<'_>, key: &'static str) -> Result<Option<T>> {
        let empty = Map::new();
        let map = input.object(key)?.unwrap_or(&empty);
        Ok(Some(get_nested(map, input.path(key))?))
    }
}

impl<T: Conv + Default> Kind<Option<T>> for Inline {
    fn put(out: &mut Out, _key: &'static str, value: &Option<T>) -> Result<()> {
        match value {
            Some(m) => m.put(out),
            None => T::default().put(out),
        }
    }
    fn get(input: &mut In<'_>, _key: &'static str) -> Result<Option<T>> {
        Ok(Some(T::get(input)?))
    }
}

/// Go `[]T` with `omitempty`.
struct List;
/// Go `[]T` without `omitempty` (empty is `null`).
struct ListReq;

fn put_list<T: Conv>(out: &Out, key: &str, value: &[T]) -> Result<Value> {
    let path = out.path(key);
    let items = value
        .iter()
        .enumerate()
        .map(|(n, item)| put_nested(item, format!("{path}[{n}]")))
        .collect::<Result<Vec<_>>>()?;
    Ok(Value::Array(items))
}

fn get_list<T: Conv>(input: &mut In<'_>, key: &'static str) -> Result<Vec<T>> {
    let path = input.path(key);
    input
        .array(key)?
        .iter()
        .enumerate()
        .map(|(n, item)| get_object(item, format!("{path}[{n}]")))
        .collect()
}

impl<T: Conv> Kind<Vec<T>> for List {
    fn put(out: &mut Out, key: &'static str, value: &Vec<T>) -> Result<()> {
        if !value.is_empty() {
            let list = put_list(out, key, value)?;
            out.set(key, list);
        }
        Ok(())
    }
    fn get(input: &mut In<'_>, key: &'static str) -> Result<Vec<T>> {
        get_list(input, key)
    }
}

impl<T: Conv> Kind<Vec<T>> for ListReq {
    fn put(out: &mut Out, key: &'static str, value: &Vec<T>) -> Result<()> {
        let list = if value.is_empty() {
            Value::Null
        } else {
            put_list(out, key, value)?
        };
        out.set(key, list);
        Ok(())
    }
    fn get(input: &mut In<'_>, key: &'static str) -> Result<Vec<T>> {
        get_list(input, key)
    }
}

/// Go `[]string` with `omitempty`.
struct Strs;
/// Go `[]string` without `omitempty` (empty is `null`).
struct StrsReq;

fn get_strings(input: &mut In<'_>, key: &'static str) -> Result<Vec<String>> {
    let items = input.array(key)?;
    items
        .iter()
        .map(|item| match item {
            Value::String(s) => Ok(s.clone()),
            _ => Err(input.type_error(key, "an array of strings")),
        })
        .collect()
}

fn string_list(value: &[String]) -> Value {
    Value::Array(value.iter().cloned().map(Value::String).collect())
}

impl Kind<Vec<String>> for Strs {
    fn put(out: &mut Out, key: &'static str, value: &Vec<String>) -> Result<()> {
        if !value.is_empty() {
            out.set(key, string_list(value));
        }
        Ok(())
    }
    fn get(input: &mut In<'_>, key: &'static str) -> Result<Vec<String>> {
        get_strings(input, key)
    }
}

impl Kind<Vec<String>> for StrsReq {
    fn put(out: &mut Out, key: &'static str, value: &Vec<String>) -> Result<()> {
        let list = if value.is_empty() {
            Value::Null
        } else {
            string_list(value)
        };
        out.set(key, list);
        Ok(())
    }
    fn get(input: &mut In<'_>, key: &'static str) -> Result<Vec<String>> {
        get_strings(input, key)
    }
}

// --- maps

/// Go `map[string]string` with `omitempty`.
struct StrMap;
/// Go `map[string][]byte` with `omitempty` (values are base64 in JSON).
struct BytesMap;
/// Go `ResourceList` (`map[ResourceName]resource.Quantity`) with `omitempty`.
struct QtyMap;

fn get_map<V>(
    input: &mut In<'_>,
    key: &'static str,
    mut convert: impl FnMut(&str, &Value) -> Result<V>,
) -> Result<BTreeMap<String, V>> {
    let path = input.path(key);
    let Some(map) = input.object(key)? else {
        return Ok(BTreeMap::new());
    };
    map.iter()
        .map(|(k, v)| Ok((k.clone(), convert(&join(&path, k), v)?)))
        .collect()
}

impl Kind<BTreeMap<String, String>> for StrMap {
    fn put(out: &mut Out, key: &'static str, value: &BTreeMap<String, String>) -> Result<()> {
        if !value.is_empty() {
            let map = value
                .iter()
                .map(|(k, v)| (k.clone(), Value::String(v.clone())))
                .collect();
            out.set(key, Value::Object(map));
        }
        Ok(())
    }
    fn get(input: &mut In<'_>, key: &'static str) -> Result<BTreeMap<String, String>> {
        get_map(input, key, |path, v| match v {
            Value::String(s) => Ok(s.clone()),
            _ => Err(ProtobufError::Encode(format!("{path}: expected a string"))),
        })
    }
}

impl Kind<BTreeMap<String, Vec<u8>>> for BytesMap {
    fn put(out: &mut Out, key: &'static str, value: &BTreeMap<String, Vec<u8>>) -> Result<()> {
        if !value.is_empty() {
            let engine = base64::engine::general_purpose::STANDARD;
            let map = value
                .iter()
                .map(|(k, v)| (k.clone(), Value::String(engine.encode(v))))
                .collect();
            out.set(key, Value::Object(map));
        }
        Ok(())
    }
    fn get(input: &mut In<'_>, key: &'static str) -> Result<BTreeMap<String, Vec<u8>>> {
        get_map(input, key, |path, v| {
            let invalid = || ProtobufError::Encode(format!("{path}: expected base64 data"));
            let text = v.as_str().ok_or_else(invalid)?;
            base64::engine::general_purpose::STANDARD
                .decode(text)
                .map_err(|_| invalid())
        })
    }
}

fn quantity_json(value: &Quantity) -> Value {
    Value::String(value.string.clone().unwrap_or_default())
}

fn quantity_from_json(path: &str, value: &Value) -> Result<Quantity> {
    let text = match value {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        _ => {
            return Err(ProtobufError::Encode(format!(
                "{path}: expected a quantity"
            )))
        }
    };
    Ok(Quantity { string: Some(text) })
}

impl Kind<BTreeMap<String, Quantity>> for QtyMap {
    fn put(out: &mut Out, key: &'static str, value: &BTreeMap<String, Quantity>) -> Result<()> {
        if !value.is_empty() {
            let map = value
                .iter()
                .map(|(k, v)| (k.clone(), quantity_json(v)))
                .collect();
            out.set(key, Value::Object(map));
        }
        Ok(())
    }
    fn get(input: &mut In<'_>, key: &'static str) -> Result<BTreeMap<String, Quantity>> {
        get_map(input, key, quantity_from_json)
    }
}

/// Go `map[string]ExtraValue` (`ExtraValue` is a `[]string`) with `omitempty`.
struct ExtraMap;

/// The `ExtraValue` messages of `authorization.k8s.io` and `authentication.k8s.io`.
trait ExtraItems {
    fn items(&self) -> &[String];
    fn from_items(items: Vec<String>) -> Self;
}

impl ExtraItems for authz::ExtraValue {
    fn items(&self) -> &[String] {
        &self.items
    }
    fn from_items(items: Vec<String>) -> Self {
        authz::ExtraValue { items }
    }
}

impl ExtraItems for authn::ExtraValue {
    fn items(&self) -> &[String] {
        &self.items
    }
    fn from_items(items: Vec<String>) -> Self {
        authn::ExtraValue { items }
    }
}

impl<V: ExtraItems> Kind<BTreeMap<String, V>> for ExtraMap {
    fn put(out: &mut Out, key: &'static str, value: &BTreeMap<String, V>) -> Result<()> {
        if !value.is_empty() {
            // Go unmarshals every entry into a non-nil slice: an empty value is `[]`.
            let map = value
                .iter()
                .map(|(k, v)| (k.clone(), string_list(v.items())))
                .collect();
            out.set(key, Value::Object(map));
        }
        Ok(())
    }
    fn get(input: &mut In<'_>, key: &'static str) -> Result<BTreeMap<String, V>> {
        get_map(input, key, |path, v| {
            let invalid = || ProtobufError::Encode(format!("{path}: expected an array of strings"));
            let items = match v {
                Value::Null => Vec::new(),
                Value::Array(items) => items
                    .iter()
                    .map(|item| item.as_str().map(str::to_string).ok_or_else(invalid))
                    .collect::<Result<_>>()?,
                _ => return Err(invalid()),
            };
            Ok(V::from_items(items))
        })
    }
}

// --- quantities, int-or-string, raw JSON

/// Go `*resource.Quantity` with `omitempty`.
struct Qty;
/// Go `resource.Quantity` value: always written (`"0"` when zero).
struct QtyReq;

impl Kind<Option<Quantity>> for Qty {
    fn put(out: &mut Out, key: &'static str, value: &Option<Quantity>) -> Result<()> {
        if let Some(q) = value {
            out.set(key, quantity_json(q));
        }
        Ok(())
    }
    fn get(input: &mut In<'_>, key: &'static str) -> Result<Option<Quantity>> {
        let path = input.path(key);
        input
            .raw(key)
            .map(|v| quantity_from_json(&path, v))
            .transpose()
    }
}

impl Kind<Option<Quantity>> for QtyReq {
    fn put(out: &mut Out, key: &'static str, value: &Option<Quantity>) -> Result<()> {
        let text = value
            .as_ref()
            .and_then(|q| q.string.clone())
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| "0".to_string());
        out.set(key, Value::String(text));
        Ok(())
    }
    fn get(input: &mut In<'_>, key: &'static str) -> Result<Option<Quantity>> {
        let value = <Qty as Kind<Option<Quantity>>>::get(input, key)?;
        Ok(Some(value.unwrap_or_else(|| Quantity {
            string: Some("0".to_string()),
        })))
    }
}

/// Go `intstr.IntOrString` value: always written.
struct IntStr;

impl Kind<Option<IntOrString>> for IntStr {
    fn put(out: &mut Out, key: &'static str, value: &Option<IntOrString>) -> Result<()> {
        let value = value.clone().unwrap_or_default();
        let json = if value.r#type == Some(1) {
            Value::String(value.str_val.unwrap_or_default())
        } else {
            Value::from(value.int_val.unwrap_or_default())
        };
        out.set(key, json);
        Ok(())
    }
    fn get(input: &mut In<'_>, key: &'static str) -> Result<Option<IntOrString>> {
        let (r#type, int_val, str_val) = match input.raw(key) {
            None => (0, 0, String::new()),
            Some(Value::String(s)) => (1, 0, s.clone()),
            Some(Value::Number(n)) => {
                let n = n
                    .as_i64()
                    .ok_or_else(|| input.type_error(key, "an integer or a string"))?;
                (0, to_int(input, key, n)?, String::new())
            }
            Some(_) => return Err(input.type_error(key, "an integer or a string")),
        };
        Ok(Some(IntOrString {
            r#type: Some(r#type),
            int_val: Some(int_val),
            str_val: Some(str_val),
        }))
    }
}

/// Go `*intstr.IntOrString`: written when set.
struct IntStrPtr;

impl Kind<Option<IntOrString>> for IntStrPtr {
    fn put(out: &mut Out, key: &'static str, value: &Option<IntOrString>) -> Result<()> {
        if value.is_some() {
            IntStr::put(out, key, value)?;
        }
        Ok(())
    }
    fn get(input: &mut In<'_>, key: &'static str) -> Result<Option<IntOrString>> {
        if input.raw(key).is_none() {
            return Ok(None);
        }
        IntStr::get(input, key)
    }
}

/// Go `*metav1.FieldsV1`: raw JSON.
struct RawJson;

impl Kind<Option<meta::FieldsV1>> for RawJson {
    fn put(out: &mut Out, key: &'static str, value: &Option<meta::FieldsV1>) -> Result<()> {
        if let Some(fields) = value {
            let raw = fields.raw.as_deref().unwrap_or_default();
            let json = if raw.is_empty() {
                Value::Null
            } else {
                serde_json::from_slice(raw).map_err(|e| {
                    ProtobufError::Decode(format!("{}: invalid JSON: {e}", out.path(key)))
                })?
            };
            out.set(key, json);
        }
        Ok(())
    }
    fn get(input: &mut In<'_>, key: &'static str) -> Result<Option<meta::FieldsV1>> {
        let Some(value) = input.raw(key) else {
            return Ok(None);
        };
        let raw = serde_json::to_vec(value)
            .map_err(|e| ProtobufError::Encode(format!("{}: {e}", input.path(key))))?;
        Ok(Some(meta::FieldsV1 { raw: Some(raw) }))
    }
}

/// A field this module does not convert: decoding fails when it is set, encoding fails when
/// the JSON sets it.
struct Unsup;

trait IsSet {
    fn is_set(&self) -> bool;
}

impl<T: Default + PartialEq> IsSet for Option<T> {
    fn is_set(&self) -> bool {
        self.as_ref().is_some_and(|v| *v != T::default())
    }
}

impl<T> IsSet for Vec<T> {
    fn is_set(&self) -> bool {
        !self.is_empty()
    }
}

impl<T: IsSet + Default> Kind<T> for Unsup {
    fn put(out: &mut Out, key: &'static str, value: &T) -> Result<()> {
        if value.is_set() {
            return Err(out.unsupported(key));
        }
        Ok(())
    }
    fn get(input: &mut In<'_>, key: &'static str) -> Result<T> {
        if input.raw(key).is_some() {
            return Err(ProtobufError::Encode(format!(
                "field {} is not supported by the protobuf codec",
                input.path(key)
            )));
        }
        Ok(T::default())
    }
}

// ---------------------------------------------------------------------------------------------
// Field tables, in Go struct order with the Go JSON names.

conv! {
    meta::ObjectMeta {
        "name" => name: Str,
        "generateName" => generate_name: Str,
        "namespace" => namespace: Str,
        "selfLink" => self_link: Str,
        "uid" => uid: Str,
        "resourceVersion" => resource_version: Str,
        "generation" => generation: Int,
        "creationTimestamp" => creation_timestamp: TimeOmit,
        "deletionTimestamp" => deletion_timestamp: TimePtr,
        "deletionGracePeriodSeconds" => deletion_grace_period_seconds: IntPtr,
        "labels" => labels: StrMap,
        "annotations" => annotations: StrMap,
        "ownerReferences" => owner_references: List,
        "finalizers" => finalizers: Strs,
        "managedFields" => managed_fields: List,
    }
    meta::OwnerReference {
        "apiVersion" => api_version: StrReq,
        "kind" => kind: StrReq,
        "name" => name: StrReq,
        "uid" => uid: StrReq,
        "controller" => controller: BoolPtr,
        "blockOwnerDeletion" => block_owner_deletion: BoolPtr,
    }
    meta::ManagedFieldsEntry {
        "manager" => manager: Str,
        "operation" => operation: Str,
        "apiVersion" => api_version: Str,
        "time" => time: TimePtr,
        "fieldsType" => fields_type: Str,
        "fieldsV1" => fields_v1: RawJson,
        "subresource" => subresource: Str,
    }
    meta::LabelSelector {
        "matchLabels" => match_labels: StrMap,
        "matchExpressions" => match_expressions: List,
    }
    meta::LabelSelectorRequirement {
        "key" => key: StrReq,
        "operator" => operator: StrReq,
        "values" => values: Strs,
    }
    meta::FieldSelectorRequirement {
        "key" => key: StrReq,
        "operator" => operator: StrReq,
        "values" => values: Strs,
    }

    // ConfigMap, Secret, Namespace, ServiceAccount
    core::ConfigMap {
        "metadata" => metadata: MsgReq,
        "immutable" => immutable: BoolPtr,
        "data" => data: StrMap,
        "binaryData" => binary_data: BytesMap,
    }
    core::Secret {
        "metadata" => metadata: MsgReq,
        "immutable" => immutable: BoolPtr,
        "data" => data: BytesMap,
        "stringData" => string_data: StrMap,
        "type" => r#type: Str,
    }
    core::Namespace {
        "metadata" => metadata: MsgReq,
        "spec" => spec: MsgReq,
        "status" => status: MsgReq,
    }
    core::NamespaceSpec {
        "finalizers" => finalizers: Strs,
    }
    core::NamespaceStatus {
        "phase" => phase: Str,
        "conditions" => conditions: List,
    }
    core::NamespaceCondition {
        "type" => r#type: StrReq,
        "status" => status: StrReq,
        "lastTransitionTime" => last_transition_time: Time,
        "reason" => reason: Str,
        "message" => message: Str,
    }
    core::ServiceAccount {
        "metadata" => metadata: MsgReq,
        "secrets" => secrets: List,
        "imagePullSecrets" => image_pull_secrets: List,
        "automountServiceAccountToken" => automount_service_account_token: BoolPtr,
    }
    core::ObjectReference {
        "kind" => kind: Str,
        "namespace" => namespace: Str,
        "name" => name: Str,
        "uid" => uid: Str,
        "apiVersion" => api_version: Str,
        "resourceVersion" => resource_version: Str,
        "fieldPath" => field_path: Str,
    }
    core::LocalObjectReference {
        "name" => name: Str,
    }

    // Event
    core::Event {
        "metadata" => metadata: MsgReq,
        "involvedObject" => involved_object: MsgReq,
        "reason" => reason: Str,
        "message" => message: Str,
        "source" => source: MsgReq,
        "firstTimestamp" => first_timestamp: Time,
        "lastTimestamp" => last_timestamp: Time,
        "count" => count: Int,
        "type" => r#type: Str,
        "eventTime" => event_time: Time,
        "series" => series: Msg,
        "action" => action: Str,
        "related" => related: Msg,
        "reportingComponent" => reporting_component: StrReq,
        "reportingInstance" => reporting_instance: StrReq,
    }
    core::EventSource {
        "component" => component: Str,
        "host" => host: Str,
    }
    core::EventSeries {
        "count" => count: Int,
        "lastObservedTime" => last_observed_time: Time,
    }

    // Lease
    coord::Lease {
        "metadata" => metadata: MsgReq,
        "spec" => spec: MsgReq,
    }
    coord::LeaseSpec {
        "holderIdentity" => holder_identity: StrPtr,
        "leaseDurationSeconds" => lease_duration_seconds: IntPtr,
        "acquireTime" => acquire_time: TimePtr,
        "renewTime" => renew_time: TimePtr,
        "leaseTransitions" => lease_transitions: IntPtr,
        "strategy" => strategy: StrPtr,
        "preferredHolder" => preferred_holder: StrPtr,
    }

    // Binding (pods/binding)
    core::Binding {
        "metadata" => metadata: MsgReq,
        "target" => target: MsgReq,
    }

    // Deployment, ReplicaSet, Scale
    apps::Deployment {
        "metadata" => metadata: MsgReq,
        "spec" => spec: MsgReq,
        "status" => status: MsgReq,
    }
    apps::DeploymentSpec {
        "replicas" => replicas: IntPtr,
        "selector" => selector: Msg,
        "template" => template: MsgReq,
        "strategy" => strategy: MsgReq,
        "minReadySeconds" => min_ready_seconds: Int,
        "revisionHistoryLimit" => revision_history_limit: IntPtr,
        "paused" => paused: Bool,
        "progressDeadlineSeconds" => progress_deadline_seconds: IntPtr,
    }
    apps::DeploymentStrategy {
        "type" => r#type: Str,
        "rollingUpdate" => rolling_update: Msg,
    }
    apps::RollingUpdateDeployment {
        "maxUnavailable" => max_unavailable: IntStrPtr,
        "maxSurge" => max_surge: IntStrPtr,
    }
    apps::DeploymentStatus {
        "observedGeneration" => observed_generation: Int,
        "replicas" => replicas: Int,
        "updatedReplicas" => updated_replicas: Int,
        "readyReplicas" => ready_replicas: Int,
        "availableReplicas" => available_replicas: Int,
        "unavailableReplicas" => unavailable_replicas: Int,
        "terminatingReplicas" => terminating_replicas: IntPtr,
        "conditions" => conditions: List,
        "collisionCount" => collision_count: IntPtr,
    }
    apps::DeploymentCondition {
        "type" => r#type: StrReq,
        "status" => status: StrReq,
        "lastUpdateTime" => last_update_time: Time,
        "lastTransitionTime" => last_transition_time: Time,
        "reason" => reason: Str,
        "message" => message: Str,
    }
    apps::ReplicaSet {
        "metadata" => metadata: MsgReq,
        "spec" => spec: MsgReq,
        "status" => status: MsgReq,
    }
    apps::ReplicaSetSpec {
        "replicas" => replicas: IntPtr,
        "minReadySeconds" => min_ready_seconds: Int,
        "selector" => selector: Msg,
        "template" => template: MsgReq,
    }
    apps::ReplicaSetStatus {
        "replicas" => replicas: IntReq,
        "fullyLabeledReplicas" => fully_labeled_replicas: Int,
        "readyReplicas" => ready_replicas: Int,
        "availableReplicas" => available_replicas: Int,
        "terminatingReplicas" => terminating_replicas: IntPtr,
        "observedGeneration" => observed_generation: Int,
        "conditions" => conditions: List,
    }
    apps::ReplicaSetCondition {
        "type" => r#type: StrReq,
        "status" => status: StrReq,
        "lastTransitionTime" => last_transition_time: Time,
        "reason" => reason: Str,
        "message" => message: Str,
    }
    core::PodTemplateSpec {
        "metadata" => metadata: MsgReq,
        "spec" => spec: MsgReq,
    }
    autoscaling::Scale {
        "metadata" => metadata: MsgReq,
        "spec" => spec: MsgReq,
        "status" => status: MsgReq,
    }
    autoscaling::ScaleSpec {
        "replicas" => replicas: Int,
    }
    autoscaling::ScaleStatus {
        "replicas" => replicas: IntReq,
        "selector" => selector: Str,
    }

    // Pod
    core::Pod {
        "metadata" => metadata: MsgReq,
        "spec" => spec: MsgReq,
        "status" => status: MsgReq,
    }
    core::PodSpec {
        "volumes" => volumes: List,
        "initContainers" => init_containers: List,
        "containers" => containers: ListReq,
        "ephemeralContainers" => ephemeral_containers: Unsup,
        "restartPolicy" => restart_policy: Str,
        "terminationGracePeriodSeconds" => termination_grace_period_seconds: IntPtr,
        "activeDeadlineSeconds" => active_deadline_seconds: IntPtr,
        "dnsPolicy" => dns_policy: Str,
        "nodeSelector" => node_selector: StrMap,
        "serviceAccountName" => service_account_name: Str,
        "serviceAccount" => service_account: Str,
        "automountServiceAccountToken" => automount_service_account_token: BoolPtr,
        "nodeName" => node_name: Str,
        "hostNetwork" => host_network: Bool,
        "hostPID" => host_pid: Bool,
        "hostIPC" => host_ipc: Bool,
        "shareProcessNamespace" => share_process_namespace: BoolPtr,
        "securityContext" => security_context: Msg,
        "imagePullSecrets" => image_pull_secrets: List,
        "hostname" => hostname: Str,
        "subdomain" => subdomain: Str,
        "affinity" => affinity: Unsup,
        "schedulerName" => scheduler_name: Str,
        "tolerations" => tolerations: List,
        "hostAliases" => host_aliases: List,
        "priorityClassName" => priority_class_name: Str,
        "priority" => priority: IntPtr,
        "dnsConfig" => dns_config: Msg,
        "readinessGates" => readiness_gates: List,
        "runtimeClassName" => runtime_class_name: StrPtr,
        "enableServiceLinks" => enable_service_links: BoolPtr,
        "preemptionPolicy" => preemption_policy: StrPtr,
        "overhead" => overhead: QtyMap,
        "topologySpreadConstraints" => topology_spread_constraints: Unsup,
        "setHostnameAsFQDN" => set_hostname_as_fqdn: BoolPtr,
        "os" => os: Msg,
        "hostUsers" => host_users: BoolPtr,
        "schedulingGates" => scheduling_gates: List,
        "resourceClaims" => resource_claims: Unsup,
        "resources" => resources: Msg,
        "hostnameOverride" => hostname_override: StrPtr,
        "workloadRef" => workload_ref: Unsup,
    }
    core::Container {
        "name" => name: StrReq,
        "image" => image: Str,
        "command" => command: Strs,
        "args" => args: Strs,
        "workingDir" => working_dir: Str,
        "ports" => ports: List,
        "envFrom" => env_from: List,
        "env" => env: List,
        "resources" => resources: MsgReq,
        "resizePolicy" => resize_policy: List,
        "restartPolicy" => restart_policy: StrPtr,
        "restartPolicyRules" => restart_policy_rules: List,
        "volumeMounts" => volume_mounts: List,
        "volumeDevices" => volume_devices: List,
        "livenessProbe" => liveness_probe: Msg,
        "readinessProbe" => readiness_probe: Msg,
        "startupProbe" => startup_probe: Msg,
        "lifecycle" => lifecycle: Msg,
        "terminationMessagePath" => termination_message_path: Str,
        "terminationMessagePolicy" => termination_message_policy: Str,
        "imagePullPolicy" => image_pull_policy: Str,
        "securityContext" => security_context: Msg,
        "stdin" => stdin: Bool,
        "stdinOnce" => stdin_once: Bool,
        "tty" => tty: Bool,
    }
    core::ContainerPort {
        "name" => name: Str,
        "hostPort" => host_port: Int,
        "containerPort" => container_port: IntReq,
        "protocol" => protocol: Str,
        "hostIP" => host_ip: Str,
    }
    core::EnvFromSource {
        "prefix" => prefix: Str,
        "configMapRef" => config_map_ref: Msg,
        "secretRef" => secret_ref: Msg,
    }
    core::ConfigMapEnvSource {
        "" => local_object_reference: Inline,
        "optional" => optional: BoolPtr,
    }
    core::SecretEnvSource {
        "" => local_object_reference: Inline,
        "optional" => optional: BoolPtr,
    }
    core::EnvVar {
        "name" => name: StrReq,
        "value" => value: Str,
        "valueFrom" => value_from: Msg,
    }
    core::EnvVarSource {
        "fieldRef" => field_ref: Msg,
        "resourceFieldRef" => resource_field_ref: Msg,
        "configMapKeyRef" => config_map_key_ref: Msg,
        "secretKeyRef" => secret_key_ref: Msg,
        "fileKeyRef" => file_key_ref: Msg,
    }
    core::ObjectFieldSelector {
        "apiVersion" => api_version: Str,
        "fieldPath" => field_path: StrReq,
    }
    core::ResourceFieldSelector {
        "containerName" => container_name: Str,
        "resource" => resource: StrReq,
        "divisor" => divisor: QtyReq,
    }
    core::ConfigMapKeySelector {
        "" => local_object_reference: Inline,
        "key" => key: StrReq,
        "optional" => optional: BoolPtr,
    }
    core::SecretKeySelector {
        "" => local_object_reference: Inline,
        "key" => key: StrReq,
        "optional" => optional: BoolPtr,
    }
    core::FileKeySelector {
        "volumeName" => volume_name: StrReq,
        "path" => path: StrReq,
        "key" => key: StrReq,
        "optional" => optional: BoolPtr,
    }
    core::ResourceRequirements {
        "limits" => limits: QtyMap,
        "requests" => requests: QtyMap,
        "claims" => claims: List,
    }
    core::ResourceClaim {
        "name" => name: StrReq,
        "request" => request: Str,
    }
    core::ContainerResizePolicy {
        "resourceName" => resource_name: StrReq,
        "restartPolicy" => restart_policy: StrReq,
    }
    core::ContainerRestartRule {
        "action" => action: Str,
        "exitCodes" => exit_codes: Msg,
    }
    core::ContainerRestartRuleOnExitCodes {
        "operator" => operator: Str,
        "values" => values: Ints,
    }
    core::VolumeMount {
        "name" => name: StrReq,
        "readOnly" => read_only: Bool,
        "recursiveReadOnly" => recursive_read_only: StrPtr,
        "mountPath" => mount_path: StrReq,
        "subPath" => sub_path: Str,
        "mountPropagation" => mount_propagation: StrPtr,
        "subPathExpr" => sub_path_expr: Str,
    }
    core::VolumeDevice {
        "name" => name: StrReq,
        "devicePath" => device_path: StrReq,
    }
    core::Probe {
        "" => handler: Inline,
        "initialDelaySeconds" => initial_delay_seconds: Int,
        "timeoutSeconds" => timeout_seconds: Int,
        "periodSeconds" => period_seconds: Int,
        "successThreshold" => success_threshold: Int,
        "failureThreshold" => failure_threshold: Int,
        "terminationGracePeriodSeconds" => termination_grace_period_seconds: IntPtr,
    }
    core::ProbeHandler {
        "exec" => exec: Msg,
        "httpGet" => http_get: Msg,
        "tcpSocket" => tcp_socket: Msg,
        "grpc" => grpc: Msg,
    }
    core::ExecAction {
        "command" => command: Strs,
    }
    core::HttpGetAction {
        "path" => path: Str,
        "port" => port: IntStr,
        "host" => host: Str,
        "scheme" => scheme: Str,
        "httpHeaders" => http_headers: List,
    }
    core::HttpHeader {
        "name" => name: StrReq,
        "value" => value: StrReq,
    }
    core::TcpSocketAction {
        "port" => port: IntStr,
        "host" => host: Str,
    }
    core::GrpcAction {
        "port" => port: IntReq,
        "service" => service: StrPtrReq,
    }
    core::Lifecycle {
        "postStart" => post_start: Msg,
        "preStop" => pre_stop: Msg,
        "stopSignal" => stop_signal: StrPtr,
    }
    core::LifecycleHandler {
        "exec" => exec: Msg,
        "httpGet" => http_get: Msg,
        "tcpSocket" => tcp_socket: Msg,
        "sleep" => sleep: Msg,
    }
    core::SleepAction {
        "seconds" => seconds: IntReq,
    }
    core::SecurityContext {
        "capabilities" => capabilities: Msg,
        "privileged" => privileged: BoolPtr,
        "seLinuxOptions" => se_linux_options: Msg,
        "windowsOptions" => windows_options: Msg,
        "runAsUser" => run_as_user: IntPtr,
        "runAsGroup" => run_as_group: IntPtr,
        "runAsNonRoot" => run_as_non_root: BoolPtr,
        "readOnlyRootFilesystem" => read_only_root_filesystem: BoolPtr,
        "allowPrivilegeEscalation" => allow_privilege_escalation: BoolPtr,
        "procMount" => proc_mount: StrPtr,
        "seccompProfile" => seccomp_profile: Msg,
        "appArmorProfile" => app_armor_profile: Msg,
    }
    core::PodSecurityContext {
        "seLinuxOptions" => se_linux_options: Msg,
        "windowsOptions" => windows_options: Msg,
        "runAsUser" => run_as_user: IntPtr,
        "runAsGroup" => run_as_group: IntPtr,
        "runAsNonRoot" => run_as_non_root: BoolPtr,
        "supplementalGroups" => supplemental_groups: Ints,
        "supplementalGroupsPolicy" => supplemental_groups_policy: StrPtr,
        "fsGroup" => fs_group: IntPtr,
        "sysctls" => sysctls: List,
        "fsGroupChangePolicy" => fs_group_change_policy: StrPtr,
        "seccompProfile" => seccomp_profile: Msg,
        "appArmorProfile" => app_armor_profile: Msg,
        "seLinuxChangePolicy" => se_linux_change_policy: StrPtr,
    }
    core::Capabilities {
        "add" => add: Strs,
        "drop" => drop: Strs,
    }
    core::SeLinuxOptions {
        "user" => user: Str,
        "role" => role: Str,
        "type" => r#type: Str,
        "level" => level: Str,
    }
    core::WindowsSecurityContextOptions {
        "gmsaCredentialSpecName" => gmsa_credential_spec_name: StrPtr,
        "gmsaCredentialSpec" => gmsa_credential_spec: StrPtr,
        "runAsUserName" => run_as_user_name: StrPtr,
        "hostProcess" => host_process: BoolPtr,
    }
    core::SeccompProfile {
        "type" => r#type: StrReq,
        "localhostProfile" => localhost_profile: StrPtr,
    }
    core::AppArmorProfile {
        "type" => r#type: StrReq,
        "localhostProfile" => localhost_profile: StrPtr,
    }
    core::Sysctl {
        "name" => name: StrReq,
        "value" => value: StrReq,
    }
    core::Toleration {
        "key" => key: Str,
        "operator" => operator: Str,
        "value" => value: Str,
        "effect" => effect: Str,
        "tolerationSeconds" => toleration_seconds: IntPtr,
    }
    core::HostAlias {
        "ip" => ip: StrReq,
        "hostnames" => hostnames: Strs,
    }
    core::PodDnsConfig {
        "nameservers" => nameservers: Strs,
        "searches" => searches: Strs,
        "options" => options: List,
    }
    core::PodDnsConfigOption {
        "name" => name: Str,
        "value" => value: StrPtr,
    }
    core::PodReadinessGate {
        "conditionType" => condition_type: StrReq,
    }
    core::PodSchedulingGate {
        "name" => name: StrReq,
    }
    core::PodOs {
        "name" => name: StrReq,
    }
    core::Volume {
        "name" => name: StrReq,
        "" => volume_source: Inline,
    }
    core::VolumeSource {
        "hostPath" => host_path: Msg,
        "emptyDir" => empty_dir: Msg,
        "gcePersistentDisk" => gce_persistent_disk: Unsup,
        "awsElasticBlockStore" => aws_elastic_block_store: Unsup,
        "gitRepo" => git_repo: Unsup,
        "secret" => secret: Msg,
        "nfs" => nfs: Msg,
        "iscsi" => iscsi: Unsup,
        "glusterfs" => glusterfs: Unsup,
        "persistentVolumeClaim" => persistent_volume_claim: Msg,
        "rbd" => rbd: Unsup,
        "flexVolume" => flex_volume: Unsup,
        "cinder" => cinder: Unsup,
        "cephfs" => cephfs: Unsup,
        "flocker" => flocker: Unsup,
        "downwardAPI" => downward_api: Msg,
        "fc" => fc: Unsup,
        "azureFile" => azure_file: Unsup,
        "configMap" => config_map: Msg,
        "vsphereVolume" => vsphere_volume: Unsup,
        "quobyte" => quobyte: Unsup,
        "azureDisk" => azure_disk: Unsup,
        "photonPersistentDisk" => photon_persistent_disk: Unsup,
        "projected" => projected: Msg,
        "portworxVolume" => portworx_volume: Unsup,
        "scaleIO" => scale_io: Unsup,
        "storageos" => storageos: Unsup,
        "csi" => csi: Msg,
        "ephemeral" => ephemeral: Unsup,
        "image" => image: Msg,
    }
    core::HostPathVolumeSource {
        "path" => path: StrReq,
        "type" => r#type: StrPtr,
    }
    core::EmptyDirVolumeSource {
        "medium" => medium: Str,
        "sizeLimit" => size_limit: Qty,
    }
    core::SecretVolumeSource {
        "secretName" => secret_name: Str,
        "items" => items: List,
        "defaultMode" => default_mode: IntPtr,
        "optional" => optional: BoolPtr,
    }
    core::ConfigMapVolumeSource {
        "" => local_object_reference: Inline,
        "items" => items: List,
        "defaultMode" => default_mode: IntPtr,
        "optional" => optional: BoolPtr,
    }
    core::KeyToPath {
        "key" => key: StrReq,
        "path" => path: StrReq,
        "mode" => mode: IntPtr,
    }
    core::PersistentVolumeClaimVolumeSource {
        "claimName" => claim_name: StrReq,
        "readOnly" => read_only: Bool,
    }
    core::NfsVolumeSource {
        "server" => server: StrReq,
        "path" => path: StrReq,
        "readOnly" => read_only: Bool,
    }
    core::CSIVolumeSource {
        "driver" => driver: StrReq,
        "readOnly" => read_only: BoolPtr,
        "fsType" => fs_type: StrPtr,
        "volumeAttributes" => volume_attributes: StrMap,
        "nodePublishSecretRef" => node_publish_secret_ref: Msg,
    }
    core::ImageVolumeSource {
        "reference" => reference: Str,
        "pullPolicy" => pull_policy: Str,
    }
    core::DownwardAPIVolumeSource {
        "items" => items: List,
        "defaultMode" => default_mode: IntPtr,
    }
    core::DownwardAPIVolumeFile {
        "path" => path: StrReq,
        "fieldRef" => field_ref: Msg,
        "resourceFieldRef" => resource_field_ref: Msg,
        "mode" => mode: IntPtr,
    }
    core::ProjectedVolumeSource {
        "sources" => sources: ListReq,
        "defaultMode" => default_mode: IntPtr,
    }
    core::VolumeProjection {
        "secret" => secret: Msg,
        "downwardAPI" => downward_api: Msg,
        "configMap" => config_map: Msg,
        "serviceAccountToken" => service_account_token: Msg,
        "clusterTrustBundle" => cluster_trust_bundle: Unsup,
        "podCertificate" => pod_certificate: Unsup,
    }
    core::SecretProjection {
        "" => local_object_reference: Inline,
        "items" => items: List,
        "optional" => optional: BoolPtr,
    }
    core::ConfigMapProjection {
        "" => local_object_reference: Inline,
        "items" => items: List,
        "optional" => optional: BoolPtr,
    }
    core::DownwardAPIProjection {
        "items" => items: List,
    }
    core::ServiceAccountTokenProjection {
        "audience" => audience: Str,
        "expirationSeconds" => expiration_seconds: IntPtr,
        "path" => path: StrReq,
    }
    core::PodStatus {
        "observedGeneration" => observed_generation: Int,
        "phase" => phase: Str,
        "conditions" => conditions: List,
        "message" => message: Str,
        "reason" => reason: Str,
        "nominatedNodeName" => nominated_node_name: Str,
        "hostIP" => host_ip: Str,
        "hostIPs" => host_ips: List,
        "podIP" => pod_ip: Str,
        "podIPs" => pod_ips: List,
        "startTime" => start_time: TimePtr,
        "initContainerStatuses" => init_container_statuses: List,
        "containerStatuses" => container_statuses: List,
        "qosClass" => qos_class: Str,
        "ephemeralContainerStatuses" => ephemeral_container_statuses: List,
        "resize" => resize: Str,
        "resourceClaimStatuses" => resource_claim_statuses: Unsup,
        "extendedResourceClaimStatus" => extended_resource_claim_status: Unsup,
        "allocatedResources" => allocated_resources: QtyMap,
        "resources" => resources: Msg,
    }
    core::PodCondition {
        "type" => r#type: StrReq,
        "observedGeneration" => observed_generation: Int,
        "status" => status: StrReq,
        "lastProbeTime" => last_probe_time: Time,
        "lastTransitionTime" => last_transition_time: Time,
        "reason" => reason: Str,
        "message" => message: Str,
    }
    core::HostIp {
        "ip" => ip: StrReq,
    }
    core::PodIp {
        "ip" => ip: StrReq,
    }
    core::ContainerStatus {
        "name" => name: StrReq,
        "state" => state: MsgReq,
        "lastState" => last_state: MsgReq,
        "ready" => ready: BoolReq,
        "restartCount" => restart_count: IntReq,
        "image" => image: StrReq,
        "imageID" => image_id: StrReq,
        "containerID" => container_id: Str,
        "started" => started: BoolPtr,
        "allocatedResources" => allocated_resources: QtyMap,
        "resources" => resources: Msg,
        "volumeMounts" => volume_mounts: List,
        "user" => user: Unsup,
        "allocatedResourcesStatus" => allocated_resources_status: Unsup,
        "stopSignal" => stop_signal: StrPtr,
    }
    core::ContainerState {
        "waiting" => waiting: Msg,
        "running" => running: Msg,
        "terminated" => terminated: Msg,
    }
    core::ContainerStateWaiting {
        "reason" => reason: Str,
        "message" => message: Str,
    }
    core::ContainerStateRunning {
        "startedAt" => started_at: Time,
    }
    core::ContainerStateTerminated {
        "exitCode" => exit_code: IntReq,
        "signal" => signal: Int,
        "reason" => reason: Str,
        "message" => message: Str,
        "startedAt" => started_at: Time,
        "finishedAt" => finished_at: Time,
        "containerID" => container_id: Str,
    }
    core::VolumeMountStatus {
        "name" => name: StrReq,
        "mountPath" => mount_path: StrReq,
        "readOnly" => read_only: Bool,
        "recursiveReadOnly" => recursive_read_only: StrPtr,
    }

    // Node
    core::Node {
        "metadata" => metadata: MsgReq,
        "spec" => spec: MsgReq,
        "status" => status: MsgReq,
    }
    core::NodeSpec {
        "podCIDR" => pod_cidr: Str,
        "podCIDRs" => pod_cid_rs: Strs,
        "providerID" => provider_id: Str,
        "unschedulable" => unschedulable: Bool,
        "taints" => taints: List,
        "configSource" => config_source: Unsup,
        "externalID" => external_id: Str,
    }
    core::Taint {
        "key" => key: StrReq,
        "value" => value: Str,
        "effect" => effect: StrReq,
        "timeAdded" => time_added: TimePtr,
    }
    core::NodeStatus {
        "capacity" => capacity: QtyMap,
        "allocatable" => allocatable: QtyMap,
        "phase" => phase: Str,
        "conditions" => conditions: List,
        "addresses" => addresses: List,
        "daemonEndpoints" => daemon_endpoints: MsgReq,
        "nodeInfo" => node_info: MsgReq,
        "images" => images: List,
        "volumesInUse" => volumes_in_use: Strs,
        "volumesAttached" => volumes_attached: List,
        "config" => config: Unsup,
        "runtimeHandlers" => runtime_handlers: List,
        "features" => features: Msg,
        "declaredFeatures" => declared_features: Strs,
    }
    core::NodeCondition {
        "type" => r#type: StrReq,
        "status" => status: StrReq,
        "lastHeartbeatTime" => last_heartbeat_time: Time,
        "lastTransitionTime" => last_transition_time: Time,
        "reason" => reason: Str,
        "message" => message: Str,
    }
    core::NodeAddress {
        "type" => r#type: StrReq,
        "address" => address: StrReq,
    }
    core::NodeDaemonEndpoints {
        "kubeletEndpoint" => kubelet_endpoint: MsgReq,
    }
    core::DaemonEndpoint {
        "Port" => port: IntReq,
    }
    core::NodeSystemInfo {
        "machineID" => machine_id: StrReq,
        "systemUUID" => system_uuid: StrReq,
        "bootID" => boot_id: StrReq,
        "kernelVersion" => kernel_version: StrReq,
        "osImage" => os_image: StrReq,
        "containerRuntimeVersion" => container_runtime_version: StrReq,
        "kubeletVersion" => kubelet_version: StrReq,
        "kubeProxyVersion" => kube_proxy_version: StrReq,
        "operatingSystem" => operating_system: StrReq,
        "architecture" => architecture: StrReq,
        "swap" => swap: Msg,
    }
    core::NodeSwapStatus {
        "capacity" => capacity: IntPtr,
    }
    core::ContainerImage {
        "names" => names: StrsReq,
        "sizeBytes" => size_bytes: Int,
    }
    core::AttachedVolume {
        "name" => name: StrReq,
        "devicePath" => device_path: StrReq,
    }
    core::NodeRuntimeHandler {
        "name" => name: StrReq,
        "features" => features: Msg,
    }
    core::NodeRuntimeHandlerFeatures {
        "recursiveReadOnlyMounts" => recursive_read_only_mounts: BoolPtr,
        "userNamespaces" => user_namespaces: BoolPtr,
    }
    core::NodeFeatures {
        "supplementalGroupsPolicy" => supplemental_groups_policy: BoolPtr,
    }

    // RBAC: Role, ClusterRole, RoleBinding, ClusterRoleBinding
    rbac::Role {
        "metadata" => metadata: MsgReq,
        "rules" => rules: ListReq,
    }
    rbac::ClusterRole {
        "metadata" => metadata: MsgReq,
        "rules" => rules: ListReq,
        "aggregationRule" => aggregation_rule: Msg,
    }
    rbac::PolicyRule {
        "verbs" => verbs: StrsReq,
        "apiGroups" => api_groups: Strs,
        "resources" => resources: Strs,
        "resourceNames" => resource_names: Strs,
        "nonResourceURLs" => non_resource_ur_ls: Strs,
    }
    rbac::AggregationRule {
        "clusterRoleSelectors" => cluster_role_selectors: List,
    }
    rbac::RoleBinding {
        "metadata" => metadata: MsgReq,
        "subjects" => subjects: List,
        "roleRef" => role_ref: MsgReq,
    }
    rbac::ClusterRoleBinding {
        "metadata" => metadata: MsgReq,
        "subjects" => subjects: List,
        "roleRef" => role_ref: MsgReq,
    }
    rbac::Subject {
        "kind" => kind: StrReq,
        "apiGroup" => api_group: Str,
        "name" => name: StrReq,
        "namespace" => namespace: Str,
    }
    rbac::RoleRef {
        "apiGroup" => api_group: StrReq,
        "kind" => kind: StrReq,
        "name" => name: StrReq,
    }

    // Authorization: (Self|Local)SubjectAccessReview, SelfSubjectRulesReview
    authz::SubjectAccessReview {
        "metadata" => metadata: MsgReq,
        "spec" => spec: MsgReq,
        "status" => status: MsgReq,
    }
    authz::SelfSubjectAccessReview {
        "metadata" => metadata: MsgReq,
        "spec" => spec: MsgReq,
        "status" => status: MsgReq,
    }
    authz::LocalSubjectAccessReview {
        "metadata" => metadata: MsgReq,
        "spec" => spec: MsgReq,
        "status" => status: MsgReq,
    }
    authz::SubjectAccessReviewSpec {
        "resourceAttributes" => resource_attributes: Msg,
        "nonResourceAttributes" => non_resource_attributes: Msg,
        "user" => user: Str,
        "groups" => groups: Strs,
        "extra" => extra: ExtraMap,
        "uid" => uid: Str,
    }
    authz::SelfSubjectAccessReviewSpec {
        "resourceAttributes" => resource_attributes: Msg,
        "nonResourceAttributes" => non_resource_attributes: Msg,
    }
    authz::ResourceAttributes {
        "namespace" => namespace: Str,
        "verb" => verb: Str,
        "group" => group: Str,
        "version" => version: Str,
        "resource" => resource: Str,
        "subresource" => subresource: Str,
        "name" => name: Str,
        "fieldSelector" => field_selector: Msg,
        "labelSelector" => label_selector: Msg,
    }
    authz::LabelSelectorAttributes {
        "rawSelector" => raw_selector: Str,
        "requirements" => requirements: List,
    }
    authz::FieldSelectorAttributes {
        "rawSelector" => raw_selector: Str,
        "requirements" => requirements: List,
    }
    authz::NonResourceAttributes {
        "path" => path: Str,
        "verb" => verb: Str,
    }
    authz::SubjectAccessReviewStatus {
        "allowed" => allowed: BoolReq,
        "denied" => denied: Bool,
        "reason" => reason: Str,
        "evaluationError" => evaluation_error: Str,
    }
    authz::SelfSubjectRulesReview {
        "metadata" => metadata: MsgReq,
        "spec" => spec: MsgReq,
        "status" => status: MsgReq,
    }
    authz::SelfSubjectRulesReviewSpec {
        "namespace" => namespace: Str,
    }
    authz::SubjectRulesReviewStatus {
        "resourceRules" => resource_rules: ListReq,
        "nonResourceRules" => non_resource_rules: ListReq,
        "incomplete" => incomplete: BoolReq,
        "evaluationError" => evaluation_error: Str,
    }
    authz::ResourceRule {
        "verbs" => verbs: StrsReq,
        "apiGroups" => api_groups: Strs,
        "resources" => resources: Strs,
        "resourceNames" => resource_names: Strs,
    }
    authz::NonResourceRule {
        "verbs" => verbs: StrsReq,
        "nonResourceURLs" => non_resource_ur_ls: Strs,
    }

    // Authentication: SelfSubjectReview, TokenReview
    authn::SelfSubjectReview {
        "metadata" => metadata: MsgReq,
        "status" => status: MsgReq,
    }
    authn::SelfSubjectReviewStatus {
        "userInfo" => user_info: MsgReq,
    }
    authn::UserInfo {
        "username" => username: Str,
        "uid" => uid: Str,
        "groups" => groups: Strs,
        "extra" => extra: ExtraMap,
    }
    authn::TokenReview {
        "metadata" => metadata: MsgReq,
        "spec" => spec: MsgReq,
        "status" => status: MsgReq,
    }
    authn::TokenReviewSpec {
        "token" => token: Str,
        "audiences" => audiences: Strs,
    }
    authn::TokenReviewStatus {
        "authenticated" => authenticated: Bool,
        "user" => user: MsgReq,
        "audiences" => audiences: Strs,
        "error" => error: Str,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn round_trip(value: Value) {
        let body = encode(&value).unwrap();
        assert!(body.starts_with(MAGIC));
        let decoded = decode(&body).unwrap();
        assert_eq!(
            decoded,
            value,
            "\n got: {}\nwant: {}",
            serde_json::to_string_pretty(&decoded).unwrap(),
            serde_json::to_string_pretty(&value).unwrap()
        );
        // Key order follows the Go struct order too.
        assert_eq!(
            serde_json::to_string(&decoded).unwrap(),
            serde_json::to_string(&value).unwrap()
        );
    }

    fn envelope(api_version: &str, kind: &str, raw: Vec<u8>) -> Vec<u8> {
        let unknown = Unknown {
            type_meta: Some(EnvelopeTypeMeta {
                api_version: Some(api_version.to_string()),
                kind: Some(kind.to_string()),
            }),
            raw: Some(raw),
            content_encoding: None,
            content_type: None,
        };
        let mut body = MAGIC.to_vec();
        body.extend(unknown.encode_to_vec());
        body
    }

    fn unwrap_envelope(body: &[u8]) -> Unknown {
        Unknown::decode(&body[4..]).unwrap()
    }

    fn full_metadata() -> Value {
        json!({
            "name": "demo",
            "generateName": "demo-",
            "namespace": "default",
            "selfLink": "/api/v1/namespaces/default/things/demo",
            "uid": "0b9d3d8e-3c5d-4a0e-9a41-7a9e6b8d2f10",
            "resourceVersion": "42",
            "generation": 3,
            "creationTimestamp": "2024-05-06T07:08:09Z",
            "deletionTimestamp": "2024-05-07T00:00:00Z",
            "deletionGracePeriodSeconds": 0,
            "labels": {"app": "demo", "tier": "backend"},
            "annotations": {"example.com/note": "hello"},
            "ownerReferences": [{
                "apiVersion": "apps/v1",
                "kind": "ReplicaSet",
                "name": "demo-abc",
                "uid": "11111111-2222-3333-4444-555555555555",
                "controller": true,
                "blockOwnerDeletion": false
            }],
            "finalizers": ["example.com/cleanup"],
            "managedFields": [{
                "manager": "kubectl-create",
                "operation": "Update",
                "apiVersion": "v1",
                "time": "2024-05-06T07:08:09Z",
                "fieldsType": "FieldsV1",
                "fieldsV1": {"f:data": {".": {}, "f:a": {}}}
            }]
        })
    }

    #[test]
    fn configmap_round_trip() {
        round_trip(json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": full_metadata(),
            "immutable": false,
            "data": {"a": "1", "b": ""},
            "binaryData": {"bin": "AAEC/w=="}
        }));
        // What `kubectl create configmap` sends.
        round_trip(json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "cm", "namespace": "default"},
            "data": {"key": "value"}
        }));
    }

    #[test]
    fn secret_round_trip() {
        round_trip(json!({
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": full_metadata(),
            "immutable": true,
            "data": {"empty": "", "password": "aHVudGVyMg=="},
            "stringData": {"user": "admin"},
            "type": "Opaque"
        }));
        round_trip(json!({
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "s"}
        }));
    }

    #[test]
    fn namespace_round_trip() {
        // What `kubectl create namespace` sends.
        round_trip(json!({
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": "team-a"},
            "spec": {},
            "status": {}
        }));
        round_trip(json!({
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": full_metadata(),
            "spec": {"finalizers": ["kubernetes"]},
            "status": {
                "phase": "Terminating",
                "conditions": [
                    {
                        "type": "NamespaceDeletionContentFailure",
                        "status": "False",
                        "lastTransitionTime": "2024-05-06T07:08:09Z",
                        "reason": "ContentDeleted",
                        "message": "All content successfully deleted"
                    },
                    {"type": "Other", "status": "", "lastTransitionTime": null}
                ]
            }
        }));
    }

    #[test]
    fn serviceaccount_round_trip() {
        round_trip(json!({
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": full_metadata(),
            "secrets": [
                {"kind": "Secret", "namespace": "default", "name": "tok", "uid": "u1",
                 "apiVersion": "v1", "resourceVersion": "7", "fieldPath": "data"},
                {"name": "other"}
            ],
            "imagePullSecrets": [{"name": "regcred"}, {}],
            "automountServiceAccountToken": false
        }));
        round_trip(json!({
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": "builder", "namespace": "ci"}
        }));
    }

    #[test]
    fn lease_round_trip() {
        round_trip(json!({
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": full_metadata(),
            "spec": {
                "holderIdentity": "node-1_abcd",
                "leaseDurationSeconds": 15,
                "acquireTime": "2024-05-06T07:08:09.123456Z",
                "renewTime": "2024-05-06T07:08:24.000001Z",
                "leaseTransitions": 0,
                "strategy": "OldestEmulationVersion",
                "preferredHolder": ""
            }
        }));
        round_trip(json!({
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": "l"},
            "spec": {}
        }));
    }

    #[test]
    fn event_round_trip() {
        round_trip(json!({
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": full_metadata(),
            "involvedObject": {
                "kind": "Pod", "namespace": "default", "name": "web-0", "uid": "p1",
                "apiVersion": "v1", "resourceVersion": "9", "fieldPath": "spec.containers{web}"
            },
            "reason": "Pulled",
            "message": "Container image pulled",
            "source": {"component": "kubelet", "host": "node-1"},
            "firstTimestamp": "2024-05-06T07:08:09Z",
            "lastTimestamp": "2024-05-06T07:09:09Z",
            "count": 2,
            "type": "Normal",
            "eventTime": "2024-05-06T07:08:09.500000Z",
            "series": {"count": 2, "lastObservedTime": "2024-05-06T07:09:09.000000Z"},
            "action": "Pulling",
            "related": {"kind": "Node", "name": "node-1"},
            "reportingComponent": "kubelet",
            "reportingInstance": "node-1"
        }));
        // A minimal core event as Go marshals it.
        round_trip(json!({
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": "e", "namespace": "default"},
            "involvedObject": {},
            "source": {},
            "firstTimestamp": null,
            "lastTimestamp": null,
            "eventTime": null,
            "reportingComponent": "",
            "reportingInstance": ""
        }));
    }

    fn full_pod() -> Value {
        json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": full_metadata(),
            "spec": {
                "volumes": [
                    {"name": "cfg", "configMap": {"name": "app-config", "items": [{"key": "a", "path": "a.txt", "mode": 420}], "defaultMode": 420, "optional": true}},
                    {"name": "sec", "secret": {"secretName": "app-secret", "defaultMode": 256}},
                    {"name": "scratch", "emptyDir": {"medium": "Memory", "sizeLimit": "64Mi"}},
                    {"name": "host", "hostPath": {"path": "/var/log", "type": "Directory"}},
                    {"name": "data", "persistentVolumeClaim": {"claimName": "data-pvc", "readOnly": true}},
                    {"name": "info", "downwardAPI": {"items": [{"path": "labels", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.labels"}}]}},
                    {"name": "kube-api-access", "projected": {"sources": [
                        {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                        {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                        {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}
                    ], "defaultMode": 420}},
                    {"name": "share", "nfs": {"server": "10.0.0.1", "path": "/exports"}},
                    {"name": "inline", "csi": {"driver": "csi.example.com", "readOnly": true, "volumeAttributes": {"a": "b"}, "nodePublishSecretRef": {"name": "creds"}}},
                    {"name": "img", "image": {"reference": "registry.example/data:1", "pullPolicy": "IfNotPresent"}}
                ],
                "initContainers": [{
                    "name": "init",
                    "image": "busybox:1.36",
                    "command": ["sh", "-c"],
                    "args": ["echo hi"],
                    "resources": {},
                    "restartPolicy": "Always",
                    "terminationMessagePath": "/dev/termination-log",
                    "terminationMessagePolicy": "File",
                    "imagePullPolicy": "IfNotPresent"
                }],
                "containers": [{
                    "name": "web",
                    "image": "nginx:1.27",
                    "workingDir": "/srv",
                    "ports": [{"name": "http", "containerPort": 80, "protocol": "TCP"}, {"hostPort": 8443, "containerPort": 0, "hostIP": "127.0.0.1"}],
                    "envFrom": [{"prefix": "CM_", "configMapRef": {"name": "app-config"}}, {"secretRef": {"name": "app-secret", "optional": false}}],
                    "env": [
                        {"name": "PLAIN", "value": "x"},
                        {"name": "EMPTY"},
                        {"name": "POD_NAME", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}},
                        {"name": "CM", "valueFrom": {"configMapKeyRef": {"name": "app-config", "key": "a", "optional": true}}},
                        {"name": "SEC", "valueFrom": {"secretKeyRef": {"name": "app-secret", "key": "password"}}},
                        {"name": "MEM", "valueFrom": {"resourceFieldRef": {"containerName": "web", "resource": "limits.memory", "divisor": "0"}}}
                    ],
                    "resources": {
                        "limits": {"cpu": "500m", "memory": "128Mi"},
                        "requests": {"cpu": "250m", "memory": "64Mi"}
                    },
                    "volumeMounts": [
                        {"name": "cfg", "readOnly": true, "mountPath": "/etc/app"},
                        {"name": "scratch", "mountPath": "/tmp", "subPath": "t", "mountPropagation": "None"}
                    ],
                    "livenessProbe": {"httpGet": {"path": "/healthz", "port": 80, "scheme": "HTTP", "httpHeaders": [{"name": "X", "value": "y"}]}, "initialDelaySeconds": 5, "timeoutSeconds": 1, "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3},
                    "readinessProbe": {"tcpSocket": {"port": "http"}, "periodSeconds": 5},
                    "startupProbe": {"exec": {"command": ["true"]}, "terminationGracePeriodSeconds": 10},
                    "lifecycle": {"postStart": {"exec": {"command": ["sh"]}}, "preStop": {"sleep": {"seconds": 5}}},
                    "terminationMessagePath": "/dev/termination-log",
                    "terminationMessagePolicy": "File",
                    "imagePullPolicy": "Always",
                    "securityContext": {
                        "capabilities": {"drop": ["ALL"]},
                        "runAsUser": 1000,
                        "runAsNonRoot": true,
                        "readOnlyRootFilesystem": true,
                        "allowPrivilegeEscalation": false,
                        "seccompProfile": {"type": "RuntimeDefault"}
                    },
                    "stdin": true,
                    "tty": true
                }],
                "restartPolicy": "Always",
                "terminationGracePeriodSeconds": 30,
                "dnsPolicy": "ClusterFirst",
                "nodeSelector": {"kubernetes.io/os": "linux"},
                "serviceAccountName": "default",
                "serviceAccount": "default",
                "automountServiceAccountToken": true,
                "nodeName": "node-1",
                "hostNetwork": true,
                "securityContext": {"runAsGroup": 2000, "supplementalGroups": [3000, 4000], "fsGroup": 2000, "sysctls": [{"name": "net.core.somaxconn", "value": "1024"}]},
                "imagePullSecrets": [{"name": "regcred"}],
                "hostname": "web",
                "subdomain": "svc",
                "schedulerName": "default-scheduler",
                "tolerations": [
                    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
                    {"operator": "Exists"}
                ],
                "hostAliases": [{"ip": "127.0.0.1", "hostnames": ["foo.local"]}],
                "priorityClassName": "high",
                "priority": 0,
                "dnsConfig": {"nameservers": ["1.1.1.1"], "options": [{"name": "ndots", "value": "2"}]},
                "readinessGates": [{"conditionType": "example.com/ready"}],
                "enableServiceLinks": true,
                "preemptionPolicy": "PreemptLowerPriority",
                "overhead": {"cpu": "10m"},
                "os": {"name": "linux"},
                "schedulingGates": [{"name": "example.com/gate"}]
            },
            "status": {
                "observedGeneration": 3,
                "phase": "Running",
                "conditions": [
                    {"type": "Ready", "status": "True", "lastProbeTime": null, "lastTransitionTime": "2024-05-06T07:08:19Z"},
                    {"type": "PodScheduled", "status": "True", "lastProbeTime": null, "lastTransitionTime": null, "reason": "r", "message": "m"}
                ],
                "hostIP": "10.0.0.2",
                "hostIPs": [{"ip": "10.0.0.2"}],
                "podIP": "10.244.0.5",
                "podIPs": [{"ip": "10.244.0.5"}, {"ip": "fd00::5"}],
                "startTime": "2024-05-06T07:08:10Z",
                "initContainerStatuses": [{
                    "name": "init",
                    "state": {"terminated": {"exitCode": 0, "reason": "Completed", "startedAt": "2024-05-06T07:08:11Z", "finishedAt": "2024-05-06T07:08:12Z", "containerID": "containerd://aaa"}},
                    "lastState": {},
                    "ready": true,
                    "restartCount": 0,
                    "image": "docker.io/library/busybox:1.36",
                    "imageID": "docker.io/library/busybox@sha256:abc",
                    "containerID": "containerd://aaa",
                    "started": false
                }],
                "containerStatuses": [{
                    "name": "web",
                    "state": {"running": {"startedAt": "2024-05-06T07:08:13Z"}},
                    "lastState": {"waiting": {"reason": "ContainerCreating"}},
                    "ready": false,
                    "restartCount": 1,
                    "image": "docker.io/library/nginx:1.27",
                    "imageID": "",
                    "started": true,
                    "volumeMounts": [{"name": "cfg", "mountPath": "/etc/app", "readOnly": true, "recursiveReadOnly": "Disabled"}]
                }],
                "qosClass": "Burstable"
            }
        })
    }

    #[test]
    fn pod_round_trip() {
        round_trip(full_pod());
        // What `kubectl run web --image=nginx` sends.
        round_trip(json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "web", "labels": {"run": "web"}},
            "spec": {
                "containers": [{"name": "web", "image": "nginx", "resources": {}}],
                "restartPolicy": "Always",
                "dnsPolicy": "ClusterFirst"
            },
            "status": {}
        }));
    }

    #[test]
    fn node_round_trip() {
        round_trip(json!({
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": full_metadata(),
            "spec": {
                "podCIDR": "10.244.0.0/24",
                "podCIDRs": ["10.244.0.0/24", "fd00::/64"],
                "providerID": "kind://docker/kind/node-1",
                "unschedulable": true,
                "taints": [
                    {"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"},
                    {"key": "k", "value": "v", "effect": "NoExecute", "timeAdded": "2024-05-06T07:08:09Z"}
                ]
            },
            "status": {
                "capacity": {"cpu": "2", "memory": "8Gi", "pods": "110"},
                "allocatable": {"cpu": "1900m", "memory": "7Gi", "pods": "110"},
                "phase": "Running",
                "conditions": [{
                    "type": "Ready",
                    "status": "True",
                    "lastHeartbeatTime": "2024-05-06T07:08:09Z",
                    "lastTransitionTime": "2024-05-06T07:00:00Z",
                    "reason": "KubeletReady",
                    "message": "kubelet is posting ready status"
                }],
                "addresses": [{"type": "InternalIP", "address": "10.0.0.2"}, {"type": "Hostname", "address": "node-1"}],
                "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
                "nodeInfo": {
                    "machineID": "m", "systemUUID": "s", "bootID": "b",
                    "kernelVersion": "6.1.0", "osImage": "Debian GNU/Linux 12",
                    "containerRuntimeVersion": "containerd://1.7.0", "kubeletVersion": "v1.33.0",
                    "kubeProxyVersion": "", "operatingSystem": "linux", "architecture": "amd64",
                    "swap": {"capacity": 0}
                },
                "images": [{"names": ["docker.io/library/nginx:1.27"], "sizeBytes": 1234}, {"names": null}],
                "volumesInUse": ["kubernetes.io/csi/x"],
                "volumesAttached": [{"name": "kubernetes.io/csi/x", "devicePath": ""}],
                "runtimeHandlers": [{"name": "runc", "features": {"recursiveReadOnlyMounts": true, "userNamespaces": false}}, {"name": ""}],
                "features": {"supplementalGroupsPolicy": true},
                "declaredFeatures": ["Foo"]
            }
        }));
        // A zero node as Go marshals it.
        round_trip(json!({
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": "n"},
            "spec": {},
            "status": {
                "daemonEndpoints": {"kubeletEndpoint": {"Port": 0}},
                "nodeInfo": {
                    "machineID": "", "systemUUID": "", "bootID": "", "kernelVersion": "",
                    "osImage": "", "containerRuntimeVersion": "", "kubeletVersion": "",
                    "kubeProxyVersion": "", "operatingSystem": "", "architecture": ""
                }
            }
        }));
    }

    #[test]
    fn role_round_trip() {
        round_trip(json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": full_metadata(),
            "rules": [
                {
                    "verbs": ["get", "list", "watch"],
                    "apiGroups": ["", "apps"],
                    "resources": ["pods", "deployments/scale"],
                    "resourceNames": ["web"]
                },
                {"verbs": null},
                {"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}
            ]
        }));
        // What `kubectl create role` sends, and a role without rules (`rules` has no
        // omitempty).
        round_trip(json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": {"name": "pod-reader", "namespace": "default"},
            "rules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}]
        }));
        round_trip(json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": {"name": "empty"},
            "rules": null
        }));
    }

    #[test]
    fn cluster_role_round_trip() {
        round_trip(json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": full_metadata(),
            "rules": [
                {"verbs": ["get"], "nonResourceURLs": ["/healthz", "/metrics/*"]},
                {"verbs": ["create"], "apiGroups": ["authorization.k8s.io"], "resources": ["selfsubjectaccessreviews"]}
            ]
        }));
        // An aggregated ClusterRole: the controller fills `rules` in.
        round_trip(json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": "monitoring"},
            "rules": null,
            "aggregationRule": {
                "clusterRoleSelectors": [
                    {"matchLabels": {"rbac.example.com/aggregate-to-monitoring": "true"}},
                    {
                        "matchLabels": {"a": "b"},
                        "matchExpressions": [
                            {"key": "tier", "operator": "In", "values": ["backend", "db"]},
                            {"key": "legacy", "operator": "DoesNotExist"},
                            {"key": "", "operator": ""}
                        ]
                    },
                    {}
                ]
            }
        }));
        round_trip(json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": "agg"},
            "rules": null,
            "aggregationRule": {}
        }));
    }

    #[test]
    fn role_binding_round_trip() {
        round_trip(json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": full_metadata(),
            "subjects": [
                {"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "alice"},
                {"kind": "Group", "apiGroup": "rbac.authorization.k8s.io", "name": "devs"},
                {"kind": "ServiceAccount", "name": "builder", "namespace": "ci"}
            ],
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "edit"}
        }));
        // `subjects` is omitempty, `roleRef` is a struct and its fields have no omitempty.
        round_trip(json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": "nobody"},
            "roleRef": {"apiGroup": "", "kind": "", "name": ""}
        }));
        round_trip(json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": "odd"},
            "subjects": [{"kind": "", "name": ""}],
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r"}
        }));
    }

    #[test]
    fn cluster_role_binding_round_trip() {
        round_trip(json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": full_metadata(),
            "subjects": [
                {"kind": "Group", "apiGroup": "rbac.authorization.k8s.io", "name": "system:masters"},
                {"kind": "ServiceAccount", "name": "default", "namespace": "kube-system"}
            ],
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"}
        }));
        round_trip(json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": "crb"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"}
        }));
    }

    #[test]
    fn self_subject_access_review_round_trip() {
        // What `kubectl auth can-i list pods -n default` sends.
        round_trip(json!({
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SelfSubjectAccessReview",
            "metadata": {},
            "spec": {
                "resourceAttributes": {"namespace": "default", "verb": "list", "resource": "pods"}
            },
            "status": {"allowed": false}
        }));
        round_trip(json!({
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SelfSubjectAccessReview",
            "metadata": full_metadata(),
            "spec": {
                "resourceAttributes": {
                    "namespace": "default",
                    "verb": "get",
                    "group": "apps",
                    "version": "v1",
                    "resource": "deployments",
                    "subresource": "scale",
                    "name": "web",
                    "fieldSelector": {
                        "rawSelector": "spec.nodeName=node-1",
                        "requirements": [
                            {"key": "spec.nodeName", "operator": "In", "values": ["node-1"]},
                            {"key": "status.phase", "operator": "Exists"}
                        ]
                    },
                    "labelSelector": {
                        "requirements": [{"key": "app", "operator": "NotIn", "values": ["a", "b"]}]
                    }
                }
            },
            "status": {
                "allowed": true,
                "denied": true,
                "reason": "RBAC: allowed by RoleBinding",
                "evaluationError": "webhook timed out"
            }
        }));
        // `kubectl auth can-i get /healthz`.
        round_trip(json!({
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SelfSubjectAccessReview",
            "metadata": {},
            "spec": {"nonResourceAttributes": {"path": "/healthz", "verb": "get"}},
            "status": {"allowed": true, "reason": "ok"}
        }));
        round_trip(json!({
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SelfSubjectAccessReview",
            "metadata": {},
            "spec": {
                "resourceAttributes": {"fieldSelector": {}, "labelSelector": {"rawSelector": "a=b"}},
                "nonResourceAttributes": {}
            },
            "status": {"allowed": false}
        }));
    }

    #[test]
    fn subject_access_review_round_trip() {
        round_trip(json!({
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SubjectAccessReview",
            "metadata": full_metadata(),
            "spec": {
                "resourceAttributes": {"namespace": "ci", "verb": "create", "resource": "pods"},
                "user": "system:serviceaccount:ci:builder",
                "groups": ["system:serviceaccounts", "system:authenticated"],
                "extra": {
                    "authentication.kubernetes.io/credential-id": ["JTI=abc"],
                    "empty": [],
                    "scopes": ["a", "b"]
                },
                "uid": "u-1"
            },
            "status": {"allowed": false, "denied": true, "reason": "no"}
        }));
        round_trip(json!({
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SubjectAccessReview",
            "metadata": {},
            "spec": {"nonResourceAttributes": {"path": "/api", "verb": "get"}, "user": "bob"},
            "status": {"allowed": true}
        }));
        round_trip(json!({
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "LocalSubjectAccessReview",
            "metadata": {"namespace": "team-a"},
            "spec": {
                "resourceAttributes": {"namespace": "team-a", "verb": "delete", "group": "batch", "resource": "jobs", "name": "nightly"},
                "groups": ["devs"],
                "extra": {"k": ["v"]}
            },
            "status": {"allowed": false, "evaluationError": "e"}
        }));
        // Go reads a nil extra value back as an empty (non-nil) slice.
        let body = encode(&json!({
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SubjectAccessReview",
            "spec": {"user": "u", "extra": {"nil": null}}
        }))
        .unwrap();
        assert_eq!(
            decode(&body).unwrap(),
            json!({
                "apiVersion": "authorization.k8s.io/v1",
                "kind": "SubjectAccessReview",
                "metadata": {},
                "spec": {"user": "u", "extra": {"nil": []}},
                "status": {"allowed": false}
            })
        );
        for bad in [json!({"k": "v"}), json!({"k": [1]}), json!(["k"])] {
            let obj = json!({
                "apiVersion": "authorization.k8s.io/v1",
                "kind": "SubjectAccessReview",
                "spec": {"extra": bad}
            });
            assert!(
                matches!(encode(&obj), Err(ProtobufError::Encode(_))),
                "{obj}"
            );
        }
    }

    #[test]
    fn self_subject_rules_review_round_trip() {
        // What `kubectl auth can-i --list -n default` sends.
        round_trip(json!({
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SelfSubjectRulesReview",
            "metadata": {},
            "spec": {"namespace": "default"},
            "status": {"resourceRules": null, "nonResourceRules": null, "incomplete": false}
        }));
        round_trip(json!({
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SelfSubjectRulesReview",
            "metadata": full_metadata(),
            "spec": {},
            "status": {
                "resourceRules": [
                    {"verbs": ["create"], "apiGroups": ["authorization.k8s.io"], "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"]},
                    {"verbs": ["get"], "apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["cfg"]},
                    {"verbs": null}
                ],
                "nonResourceRules": [
                    {"verbs": ["get"], "nonResourceURLs": ["/api", "/api/*", "/healthz"]},
                    {"verbs": null}
                ],
                "incomplete": true,
                "evaluationError": "webhook authorizer does not support rules"
            }
        }));
    }

    #[test]
    fn self_subject_review_round_trip() {
        // What `kubectl auth whoami` sends.
        round_trip(json!({
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "SelfSubjectReview",
            "metadata": {},
            "status": {"userInfo": {}}
        }));
        round_trip(json!({
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "SelfSubjectReview",
            "metadata": full_metadata(),
            "status": {
                "userInfo": {
                    "username": "system:serviceaccount:ci:builder",
                    "uid": "6a8b1c2d",
                    "groups": ["system:serviceaccounts", "system:serviceaccounts:ci", "system:authenticated"],
                    "extra": {
                        "authentication.kubernetes.io/pod-name": ["runner-0"],
                        "authentication.kubernetes.io/pod-uid": ["p-1"],
                        "none": []
                    }
                }
            }
        }));
    }

    #[test]
    fn token_review_round_trip() {
        round_trip(json!({
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenReview",
            "metadata": {},
            "spec": {"token": "eyJhbGciOi...", "audiences": ["https://kubernetes.default.svc"]},
            "status": {"user": {}}
        }));
        round_trip(json!({
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenReview",
            "metadata": full_metadata(),
            "spec": {},
            "status": {
                "authenticated": true,
                "user": {"username": "alice", "uid": "1", "groups": ["devs"], "extra": {"k": ["v"]}},
                "audiences": ["api"],
                "error": "partial"
            }
        }));
    }

    #[test]
    fn decode_role_binding_from_go_like_bytes() {
        // Exactly what client-go writes for `kubectl create rolebinding edit-team -n team-a
        // --clusterrole=edit --user=alice --group=devs --serviceaccount=ci:builder`: every
        // value field present, empty strings included.
        let go_meta = meta::ObjectMeta {
            name: Some("edit-team".to_string()),
            generate_name: Some(String::new()),
            namespace: Some("team-a".to_string()),
            self_link: Some(String::new()),
            uid: Some(String::new()),
            resource_version: Some(String::new()),
            generation: Some(0),
            creation_timestamp: Some(meta::Time::default()),
            ..Default::default()
        };
        let subject = |kind: &str, api_group: &str, name: &str, namespace: &str| rbac::Subject {
            kind: Some(kind.to_string()),
            api_group: Some(api_group.to_string()),
            name: Some(name.to_string()),
            namespace: Some(namespace.to_string()),
        };
        let binding = rbac::RoleBinding {
            metadata: Some(go_meta),
            subjects: vec![
                subject("User", "rbac.authorization.k8s.io", "alice", ""),
                subject("Group", "rbac.authorization.k8s.io", "devs", ""),
                subject("ServiceAccount", "", "builder", "ci"),
            ],
            role_ref: Some(rbac::RoleRef {
                api_group: Some("rbac.authorization.k8s.io".to_string()),
                kind: Some("ClusterRole".to_string()),
                name: Some("edit".to_string()),
            }),
        };
        let body = envelope(
            "rbac.authorization.k8s.io/v1",
            "RoleBinding",
            binding.encode_to_vec(),
        );
        let json = decode(&body).unwrap();
        assert_eq!(
            serde_json::to_string(&json).unwrap(),
            concat!(
                r#"{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"RoleBinding","#,
                r#""metadata":{"name":"edit-team","namespace":"team-a"},"subjects":["#,
                r#"{"kind":"User","apiGroup":"rbac.authorization.k8s.io","name":"alice"},"#,
                r#"{"kind":"Group","apiGroup":"rbac.authorization.k8s.io","name":"devs"},"#,
                r#"{"kind":"ServiceAccount","name":"builder","namespace":"ci"}],"#,
                r#""roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"edit"}}"#
            )
        );
        // Our encoder writes the same bytes as Go for this object.
        assert_eq!(encode(&json).unwrap(), {
            let mut unknown = unwrap_envelope(&body);
            unknown.content_encoding = Some(String::new());
            unknown.content_type = Some(String::new());
            let mut expected = MAGIC.to_vec();
            expected.extend(unknown.encode_to_vec());
            expected
        });

        // A binding without subjects or roleRef still gets `roleRef` (a Go struct value).
        let bare = rbac::ClusterRoleBinding {
            metadata: None,
            subjects: vec![],
            role_ref: None,
        };
        let body = envelope(
            "rbac.authorization.k8s.io/v1",
            "ClusterRoleBinding",
            bare.encode_to_vec(),
        );
        assert_eq!(
            decode(&body).unwrap(),
            json!({
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRoleBinding",
                "metadata": {},
                "roleRef": {"apiGroup": "", "kind": "", "name": ""}
            })
        );
    }

    #[test]
    fn encode_writes_value_fields_like_go() {
        let body = encode(&json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "cm"},
            "data": {"k": "v"}
        }))
        .unwrap();
        let unknown = unwrap_envelope(&body);
        let type_meta = unknown.type_meta.clone().unwrap();
        assert_eq!(type_meta.api_version.as_deref(), Some("v1"));
        assert_eq!(type_meta.kind.as_deref(), Some("ConfigMap"));
        assert_eq!(unknown.content_encoding.as_deref(), Some(""));
        assert_eq!(unknown.content_type.as_deref(), Some(""));
        let cm = core::ConfigMap::decode(unknown.raw.unwrap().as_slice()).unwrap();
        let meta = cm.metadata.unwrap();
        assert_eq!(meta.name.as_deref(), Some("cm"));
        // Go writes every non-pointer field, including empty strings and zero times.
        assert_eq!(meta.namespace.as_deref(), Some(""));
        assert_eq!(meta.generation, Some(0));
        assert_eq!(meta.creation_timestamp, Some(meta::Time::default()));
        assert_eq!(meta.deletion_timestamp, None);
        assert_eq!(meta.deletion_grace_period_seconds, None);
        assert_eq!(cm.immutable, None);
        assert_eq!(cm.data.get("k").map(String::as_str), Some("v"));
    }

    #[test]
    fn decode_hand_built_envelope() {
        let cm = core::ConfigMap {
            metadata: Some(meta::ObjectMeta {
                name: Some("settings".to_string()),
                namespace: Some("kube-system".to_string()),
                uid: Some(String::new()),
                generation: Some(0),
                creation_timestamp: Some(meta::Time {
                    seconds: Some(1_700_000_000),
                    nanos: Some(999_999_999),
                }),
                labels: BTreeMap::from([("a".to_string(), "b".to_string())]),
                owner_references: vec![meta::OwnerReference {
                    name: Some("owner".to_string()),
                    ..Default::default()
                }],
                ..Default::default()
            }),
            immutable: Some(true),
            data: BTreeMap::from([("x".to_string(), "y".to_string())]),
            binary_data: BTreeMap::from([("b".to_string(), b"hi\0".to_vec())]),
        };
        let body = envelope("v1", "ConfigMap", cm.encode_to_vec());
        assert_eq!(
            decode(&body).unwrap(),
            json!({
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {
                    "name": "settings",
                    "namespace": "kube-system",
                    "creationTimestamp": "2023-11-14T22:13:20Z",
                    "labels": {"a": "b"},
                    "ownerReferences": [{"apiVersion": "", "kind": "", "name": "owner", "uid": ""}]
                },
                "immutable": true,
                "data": {"x": "y"},
                "binaryData": {"b": "aGkA"}
            })
        );

        let lease = coord::Lease {
            metadata: None,
            spec: Some(coord::LeaseSpec {
                holder_identity: Some("me".to_string()),
                renew_time: Some(meta::MicroTime {
                    seconds: Some(0),
                    nanos: Some(123_456_789),
                }),
                acquire_time: Some(meta::MicroTime::default()),
                ..Default::default()
            }),
        };
        let body = envelope("coordination.k8s.io/v1", "Lease", lease.encode_to_vec());
        assert_eq!(
            decode(&body).unwrap(),
            json!({
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {},
                "spec": {
                    "holderIdentity": "me",
                    "acquireTime": null,
                    "renewTime": "1970-01-01T00:00:00.123456Z"
                }
            })
        );
    }

    #[test]
    fn decode_namespace_from_go_like_bytes() {
        // Exactly what client-go writes for `kubectl create namespace demo`: every value field
        // present, zero time as an empty message.
        let ns = core::Namespace {
            metadata: Some(meta::ObjectMeta {
                name: Some("demo".to_string()),
                generate_name: Some(String::new()),
                namespace: Some(String::new()),
                self_link: Some(String::new()),
                uid: Some(String::new()),
                resource_version: Some(String::new()),
                generation: Some(0),
                creation_timestamp: Some(meta::Time::default()),
                ..Default::default()
            }),
            spec: Some(core::NamespaceSpec::default()),
            status: Some(core::NamespaceStatus {
                phase: Some(String::new()),
                conditions: vec![],
            }),
        };
        let body = envelope("v1", "Namespace", ns.encode_to_vec());
        let json = decode(&body).unwrap();
        assert_eq!(
            serde_json::to_string(&json).unwrap(),
            r#"{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"demo"},"spec":{},"status":{}}"#
        );
    }

    #[test]
    fn missing_magic_is_an_error() {
        let body =
            encode(&json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "x"}}))
                .unwrap();
        assert!(matches!(
            decode(&body[4..]),
            Err(ProtobufError::MissingMagic)
        ));
        assert!(matches!(decode(b""), Err(ProtobufError::MissingMagic)));
        assert!(matches!(
            decode(br#"{"kind":"Namespace"}"#),
            Err(ProtobufError::MissingMagic)
        ));
    }

    #[test]
    fn garbage_after_magic_is_an_error() {
        for garbage in [
            &b"\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff"[..],
            b"not protobuf at all",
            b"\x0a\x05ab",
            b"",
        ] {
            let mut body = MAGIC.to_vec();
            body.extend_from_slice(garbage);
            assert!(
                matches!(decode(&body), Err(ProtobufError::Decode(_))),
                "{garbage:?}"
            );
        }
        // A valid envelope whose raw object is garbage.
        let body = envelope("v1", "ConfigMap", b"\xff\xff\xff".to_vec());
        assert!(matches!(decode(&body), Err(ProtobufError::Decode(_))));
        // Content encodings are refused.
        let mut unknown = unwrap_envelope(&envelope("v1", "ConfigMap", vec![]));
        unknown.content_encoding = Some("gzip".to_string());
        let mut body = MAGIC.to_vec();
        body.extend(unknown.encode_to_vec());
        assert!(matches!(decode(&body), Err(ProtobufError::Decode(_))));
    }

    /// A body of tiny embedded messages (empty containers, 2 bytes each, ~3 KB each decoded)
    /// past the cap is refused before the typed decode; a Pod of ordinary size is not.
    #[test]
    fn a_body_of_tiny_embedded_messages_is_refused() {
        fn varint(mut n: usize, out: &mut Vec<u8>) {
            while n >= 0x80 {
                out.push((n as u8) | 0x80);
                n >>= 7;
            }
            out.push(n as u8);
        }
        let pod = |containers: usize| {
            let spec: Vec<u8> = [0x12u8, 0x00].repeat(containers);
            let mut raw = vec![0x12u8];
            varint(spec.len(), &mut raw);
            raw.extend(spec);
            raw
        };
        let err = decode(&envelope("v1", "Pod", pod(60_000))).unwrap_err();
        assert!(
            err.to_string()
                .contains("embedded messages, more than the 50000"),
            "{err}"
        );
        let ok = decode(&envelope("v1", "Pod", pod(3_000))).unwrap();
        assert_eq!(ok["spec"]["containers"].as_array().unwrap().len(), 3_000);
    }

    #[test]
    fn unsupported_kind_is_an_error() {
        // Built-in kinds without a table of their own are decoded generically; other kinds are
        // refused.
        let body = envelope("apps/v1", "DaemonSet", vec![]);
        assert_eq!(
            decode(&body).unwrap(),
            json!({"apiVersion": "apps/v1", "kind": "DaemonSet"})
        );
        let body = envelope("example.com/v1", "Widget", vec![]);
        let err = decode(&body).unwrap_err();
        assert!(matches!(
            &err,
            ProtobufError::Unsupported { api_version, kind }
                if api_version == "example.com/v1" && kind == "Widget"
        ));
        assert_eq!(
            err.to_string(),
            "the protobuf body for example.com/v1 Widget cannot be decoded by this server; send application/json"
        );
        assert!(matches!(
            encode(&json!({"apiVersion": "apps/v1", "kind": "DaemonSet"})),
            Err(ProtobufError::Encode(_))
        ));
    }

    #[test]
    fn deployment_and_scale_round_trip() {
        let d = json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"}},
            "spec": {
                "replicas": 3,
                "selector": {"matchLabels": {"app": "web"}},
                "template": {
                    "metadata": {"labels": {"app": "web"}},
                    "spec": {"containers": [{"name": "nginx", "image": "nginx:1.27", "resources": {}}]}
                },
                "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": 1}},
                "revisionHistoryLimit": 10,
                "progressDeadlineSeconds": 600
            },
            "status": {"observedGeneration": 2, "replicas": 3, "updatedReplicas": 3, "readyReplicas": 3,
                       "availableReplicas": 3,
                       "conditions": [{"type": "Available", "status": "True",
                                       "lastUpdateTime": "2026-01-01T00:00:00Z",
                                       "lastTransitionTime": "2026-01-01T00:00:00Z",
                                       "reason": "MinimumReplicasAvailable", "message": "ok"}]}
        });
        let back = decode(&encode(&d).unwrap()).unwrap();
        assert_eq!(back["spec"]["strategy"], d["spec"]["strategy"]);
        assert_eq!(back["spec"]["replicas"], 3);
        assert_eq!(
            back["spec"]["template"]["spec"]["containers"][0]["image"],
            "nginx:1.27"
        );
        assert_eq!(back["status"], d["status"]);
        let rs = json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "web-1"},
                        "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "web"}},
                                 "template": {"metadata": {}, "spec": {"containers": null}}},
                        "status": {"replicas": 0}});
        let back = decode(&encode(&rs).unwrap()).unwrap();
        assert_eq!(back["status"], json!({"replicas": 0}));
        assert_eq!(back["spec"]["replicas"], 0);
        let scale = json!({"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": {"name": "web"},
                           "spec": {"replicas": 1}, "status": {"replicas": 3, "selector": "app=web"}});
        let back = decode(&encode(&scale).unwrap()).unwrap();
        assert_eq!(back["spec"], scale["spec"]);
        assert_eq!(back["status"], scale["status"]);
    }

    #[test]
    fn unconverted_pod_fields_are_refused() {
        let pod = core::Pod {
            spec: Some(core::PodSpec {
                affinity: Some(core::Affinity {
                    node_affinity: Some(core::NodeAffinity::default()),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        };
        let err = decode(&envelope("v1", "Pod", pod.encode_to_vec())).unwrap_err();
        assert!(
            matches!(
                &err,
                ProtobufError::UnsupportedField { api_version, kind, field }
                    if api_version == "v1" && kind == "Pod" && field == "spec.affinity"
            ),
            "{err}"
        );

        let pod = core::Pod {
            spec: Some(core::PodSpec {
                volumes: vec![core::Volume {
                    name: Some("repo".to_string()),
                    volume_source: Some(core::VolumeSource {
                        git_repo: Some(core::GitRepoVolumeSource {
                            repository: Some("https://example.com/r.git".to_string()),
                            ..Default::default()
                        }),
                        ..Default::default()
                    }),
                }],
                ..Default::default()
            }),
            ..Default::default()
        };
        let err = decode(&envelope("v1", "Pod", pod.encode_to_vec())).unwrap_err();
        assert!(
            matches!(&err, ProtobufError::UnsupportedField { field, .. } if field == "spec.volumes[0].gitRepo"),
            "{err}"
        );

        let node = core::Node {
            spec: Some(core::NodeSpec {
                config_source: Some(core::NodeConfigSource {
                    config_map: Some(core::ConfigMapNodeConfigSource::default()),
                }),
                ..Default::default()
            }),
            ..Default::default()
        };
        let err = decode(&envelope("v1", "Node", node.encode_to_vec())).unwrap_err();
        assert!(
            matches!(&err, ProtobufError::UnsupportedField { field, .. } if field == "spec.configSource"),
            "{err}"
        );

        // Encoding refuses what it cannot convert, and unknown fields.
        let mut pod = full_pod();
        pod["spec"]["affinity"] = json!({"nodeAffinity": {}});
        assert!(matches!(encode(&pod), Err(ProtobufError::Encode(_))));
        let mut pod = full_pod();
        pod["spec"]["containers"][0]["bogus"] = json!(1);
        assert!(matches!(encode(&pod), Err(ProtobufError::Encode(_))));
    }

    #[test]
    fn invalid_json_values_are_refused_by_encode() {
        for bad in [
            json!({"apiVersion": "v1", "kind": "ConfigMap", "data": {"a": 1}}),
            json!({"apiVersion": "v1", "kind": "ConfigMap", "binaryData": {"a": "!!"}}),
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"creationTimestamp": "yesterday"}}),
            json!({"apiVersion": "v1", "kind": "Event", "count": 1u64 << 40}),
            json!({"apiVersion": "v1", "kind": "Secret", "metadata": []}),
            json!(["not", "an", "object"]),
        ] {
            assert!(
                matches!(encode(&bad), Err(ProtobufError::Encode(_))),
                "{bad}"
            );
        }
    }

    #[test]
    fn times_are_formatted_like_go() {
        let t = meta::Time {
            seconds: Some(1_136_214_245),
            nanos: Some(123_000_000),
        };
        assert_eq!(
            format_time(&t, "t").unwrap().as_deref(),
            Some("2006-01-02T15:04:05Z")
        );
        let t = meta::MicroTime {
            seconds: Some(1_136_214_245),
            nanos: Some(123_000_999),
        };
        assert_eq!(
            format_time(&t, "t").unwrap().as_deref(),
            Some("2006-01-02T15:04:05.123000Z")
        );
        assert_eq!(format_time(&meta::Time::default(), "t").unwrap(), None);
        let go_zero = meta::Time {
            seconds: Some(GO_ZERO_TIME_UNIX),
            nanos: Some(0),
        };
        assert_eq!(format_time(&go_zero, "t").unwrap(), None);
        let epoch = meta::Time {
            seconds: Some(0),
            nanos: None,
        };
        assert_eq!(
            format_time(&epoch, "t").unwrap().as_deref(),
            Some("1970-01-01T00:00:00Z")
        );
        let far = meta::Time {
            seconds: Some(i64::MAX),
            nanos: Some(0),
        };
        assert!(matches!(
            format_time(&far, "t"),
            Err(ProtobufError::Decode(_))
        ));
        // Offsets are normalised to UTC.
        let body = encode(&json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"creationTimestamp": "2024-01-01T02:00:00+02:00"}
        }))
        .unwrap();
        assert_eq!(
            decode(&body).unwrap()["metadata"]["creationTimestamp"],
            json!("2024-01-01T00:00:00Z")
        );
    }
}
