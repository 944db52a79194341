//! Server-side apply and field management, after kube's `fieldmanager` and
//! structured-merge-diff: who owns which fields of an object (`metadata.managedFields`, one
//! entry per manager, operation, API version (for updates) and subresource, in `FieldsV1`),
//! updated on every write, and `PATCH` with `application/apply-patch+yaml`: merge an applied
//! configuration into the live object by the schema's merge rules, remove what the applier
//! stopped applying and nobody else owns, and refuse to change fields another manager owns
//! (409) unless forced.
//!
//! Pure functions over JSON values; `service.rs` calls [`apply`] from its PATCH path and
//! [`track`] on every create and update.

pub mod fieldpath;
pub mod typed;
pub mod validate;

use std::collections::HashMap;

use serde_json::{json, Map, Value};

use crate::model::{ApiError, Cause, ResourceInfo};
use fieldpath::{Path, Pe, Set};
use typed::{Ty, Typer};

/// kube's `DefaultMaxUpdateManagers`: beyond this many `Update` entries the oldest are merged
/// into one `ancient-changes` entry.
pub const MAX_UPDATE_MANAGERS: usize = 10;
/// kube's `FieldManagerMaxLength`.
pub const MAX_MANAGER_LENGTH: usize = 128;
/// At most this many conflicts are listed in a 409 (kube lists all; a bound keeps a hostile
/// object from making a huge answer).
const MAX_CONFLICTS: usize = 1000;
/// The manager of the host's own writes (its controllers), where kube's would be named after
/// kube-controller-manager's user agent.
pub const HOST_MANAGER: &str = "turtles";

#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    /// A value that does not fit its schema's merge rules (a list item without its keys...).
    #[error("{0}")]
    Typed(String),
    /// `metadata.managedFields` that cannot be read.
    #[error("{0}")]
    ManagedFields(String),
}

impl ApplyError {
    fn at(self, path: &str) -> Self {
        match self {
            ApplyError::Typed(m) if !path.is_empty() => ApplyError::Typed(format!("{path}: {m}")),
            e => e,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Operation {
    Apply,
    Update,
}

impl Operation {
    fn as_str(self) -> &'static str {
        match self {
            Operation::Apply => "Apply",
            Operation::Update => "Update",
        }
    }
}

/// One `managedFields` entry.
#[derive(Debug, Clone)]
pub struct Entry {
    pub manager: String,
    pub operation: Operation,
    pub api_version: String,
    pub time: Option<String>,
    pub subresource: String,
    pub set: Set,
}

impl Entry {
    /// kube's manager identifier: manager, operation, subresource, and the API version of
    /// updates (an applier is one manager whatever version it applies in).
    fn same_manager(&self, other: &Entry) -> bool {
        self.identity() == other.identity()
    }

    /// The identifier [`Self::same_manager`] compares, as a key.
    fn identity(&self) -> (&str, Operation, &str, &str) {
        let version = match self.operation {
            Operation::Apply => "",
            Operation::Update => self.api_version.as_str(),
        };
        (&self.manager, self.operation, &self.subresource, version)
    }

    fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("manager".into(), self.manager.clone().into());
        m.insert("operation".into(), self.operation.as_str().into());
        m.insert("apiVersion".into(), self.api_version.clone().into());
        if let Some(t) = &self.time {
            m.insert("time".into(), t.clone().into());
        }
        m.insert("fieldsType".into(), "FieldsV1".into());
        m.insert("fieldsV1".into(), self.set.to_fields_v1());
        if !self.subresource.is_empty() {
            m.insert("subresource".into(), self.subresource.clone().into());
        }
        Value::Object(m)
    }

    /// kube's `printManager`, for conflict messages.
    fn describe(&self) -> String {
        let mut s = format!("{:?}", self.manager);
        if !self.subresource.is_empty() {
            s = format!("{s} with subresource {:?}", self.subresource);
        }
        if self.operation == Operation::Update {
            s = format!("{s} using {}", self.api_version);
        }
        s
    }
}

/// Reads `metadata.managedFields` as kube's `DecodeManagedFields` does.
pub fn decode(v: &Value) -> Result<Vec<Entry>, ApplyError> {
    let Some(list) = v.as_array() else {
        return Err(ApplyError::ManagedFields(
            "managedFields must be a list".into(),
        ));
    };
    let mut out: Vec<Option<Entry>> = Vec::with_capacity(list.len());
    // Where each manager's entry is in `out` (a client may send thousands).
    let mut at: HashMap<(String, Operation, String, String), usize> = HashMap::new();
    for (i, e) in list.iter().enumerate() {
        let s = |k: &str| e.get(k).and_then(Value::as_str).unwrap_or("");
        let operation = match s("operation") {
            "Apply" => Operation::Apply,
            "Update" => Operation::Update,
            _ => {
                return Err(ApplyError::ManagedFields(
                    "operation must be `Apply` or `Update`".into(),
                ))
            }
        };
        if s("apiVersion").is_empty() {
            return Err(ApplyError::ManagedFields(
                "apiVersion must not be empty".into(),
            ));
        }
        match s("fieldsType") {
            "FieldsV1" => {}
            "" => {
                return Err(ApplyError::ManagedFields(format!(
                    "missing fieldsType in managed fields entry {i}"
                )))
            }
            t => {
                return Err(ApplyError::ManagedFields(format!(
                    "invalid fieldsType {t:?} in managed fields entry {i}"
                )))
            }
        }
        let set = match e.get("fieldsV1") {
            Some(f) => Set::from_fields_v1(f)?,
            None => Set::new(),
        };
        let entry = Entry {
            manager: s("manager").to_owned(),
            operation,
            api_version: s("apiVersion").to_owned(),
            time: e.get("time").and_then(Value::as_str).map(str::to_owned),
            subresource: s("subresource").to_owned(),
            set,
        };
        // Duplicate identifiers: the last one wins, as in kube's map.
        let (m, op, sub, version) = entry.identity();
        let key = (m.to_owned(), op, sub.to_owned(), version.to_owned());
        if let Some(earlier) = at.insert(key, out.len()) {
            out[earlier] = None;
        }
        out.push(Some(entry));
    }
    Ok(out.into_iter().flatten().collect())
}

/// kube's `sortEncodedManagedFields`: Apply before Update, then by time, manager, API version
/// and subresource.
fn encode(mut entries: Vec<Entry>) -> Option<Value> {
    entries.retain(|e| !e.set.is_empty());
    if entries.is_empty() {
        return None;
    }
    entries.sort_by(|p, q| {
        p.operation
            .as_str()
            .cmp(q.operation.as_str())
            .then_with(|| seconds(&p.time).cmp(&seconds(&q.time)))
            .then_with(|| p.manager.cmp(&q.manager))
            .then_with(|| p.api_version.cmp(&q.api_version))
            .then_with(|| p.subresource.cmp(&q.subresource))
    });
    Some(Value::Array(entries.iter().map(Entry::to_json).collect()))
}

fn seconds(t: &Option<String>) -> i64 {
    t.as_deref()
        .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
        .map(|d| d.timestamp())
        .unwrap_or(0)
}

/// The server-owned metadata kube strips from every manager's set (`stripmeta`).
fn strip_meta(set: &mut Set) {
    static PATHS: std::sync::OnceLock<Vec<Path>> = std::sync::OnceLock::new();
    let paths = PATHS.get_or_init(|| {
        [
            &["apiVersion"][..],
            &["kind"],
            &["metadata"],
            &["metadata", "name"],
            &["metadata", "namespace"],
            &["metadata", "creationTimestamp"],
            &["metadata", "selfLink"],
            &["metadata", "uid"],
            &["metadata", "clusterName"],
            &["metadata", "generation"],
            &["metadata", "managedFields"],
            &["metadata", "resourceVersion"],
        ]
        .iter()
        .map(|p| p.iter().map(|s| Pe::Field((*s).to_owned())).collect())
        .collect()
    });
    for path in paths {
        set.remove_member(path);
    }
}

/// The fields a write through `sub` cannot change (kube's reset fields): `status` for the main
/// resource of kinds with a status subresource (and a Namespace's `spec.finalizers`, which only
/// `finalize` changes); everything but `status` for `/status`, and but the metadata the kind's
/// status strategy takes from the request ([`crate::builtin::status_metadata`]).
fn filter_reset(ri: &ResourceInfo, subresource: &str, set: Set) -> Set {
    let mut set = match subresource {
        // `/approval` of a CertificateSigningRequest changes its conditions (kube resets
        // `spec` and `status.certificate`; the strategy keeps the certificate).
        "status" | "approval" => match status_metadata(ri) {
            Some(reset) => {
                let (status, metadata) = (
                    Pe::Field("status".to_owned()),
                    Pe::Field("metadata".to_owned()),
                );
                let mut set = set.keep_top(|pe| *pe == status || *pe == metadata);
                for field in reset {
                    set.remove_tree(&[metadata.clone(), Pe::Field((*field).to_owned())]);
                }
                set
            }
            None => set.filter_top("status", true),
        },
        _ if ri.status_subresource => set.filter_top("status", false),
        _ => set,
    };
    if subresource.is_empty() && ri.group.is_empty() && ri.resource == "namespaces" {
        set.remove_member(&[
            Pe::Field("spec".to_owned()),
            Pe::Field("finalizers".to_owned()),
        ]);
    }
    set
}

/// The metadata fields a `/status` write of `ri` takes from the request but resets (kube's
/// status strategies' reset fields under `metadata`), if it takes any. A CRD's status strategy
/// takes the request's metadata but lists all of `metadata` as reset.
fn status_metadata(ri: &ResourceInfo) -> Option<&'static [&'static str]> {
    if ri.is_custom() || (ri.group == crate::crd::GROUP && ri.resource == crate::crd::RESOURCE) {
        return None;
    }
    // A Pod's strategy also lists `metadata.deletionTimestamp`, which no update changes.
    const POD: &[&str] = &["deletionTimestamp", "ownerReferences"];
    let reset = crate::builtin::status_metadata(&ri.group, &ri.resource)?;
    if ri.group.is_empty() && ri.resource == "pods" {
        return Some(POD);
    }
    Some(reset)
}

/// The schema walks for a resource: its built-in definition, its CRD schema, or none.
pub fn typer(ri: &ResourceInfo) -> Typer<'_> {
    if let Some(cr) = &ri.custom {
        if let Some(s) = &cr.schema {
            return Typer {
                root: Ty::Root(s.raw()),
                builtin: false,
            };
        }
        return Typer {
            root: Ty::Deduced,
            builtin: false,
        };
    }
    let defs = crate::builtin::definitions::get();
    match defs
        .name_of(&ri.group, &ri.version, &ri.kind)
        .and_then(|n| defs.get(n))
    {
        Some(d) => Typer {
            root: Ty::Root(d),
            builtin: true,
        },
        None => Typer {
            root: Ty::Deduced,
            builtin: true,
        },
    }
}

fn group_version(ri: &ResourceInfo) -> String {
    if ri.group.is_empty() {
        ri.version.clone()
    } else {
        format!("{}/{}", ri.group, ri.version)
    }
}

fn subresource_name(sub: crate::service::Subresource) -> &'static str {
    sub.name()
}

/// Takes `metadata.managedFields` out of an object.
pub fn take(obj: &mut Value) -> Option<Value> {
    crate::model::meta::metadata_mut(obj).and_then(|m| m.remove("managedFields"))
}

fn set_managed(obj: &mut Value, managed: Option<Value>) {
    if let Some(m) = crate::model::meta::metadata_mut(obj) {
        m.remove("managedFields");
        if let Some(v) = managed {
            m.insert("managedFields".into(), v);
        }
    }
}

/// kube's `isResetManagedFields`: `[]` or `[{}]`.
fn is_reset(v: &Value) -> bool {
    match v.as_array().map(Vec::as_slice) {
        Some([]) => true,
        Some([Value::Object(o)]) => o.is_empty(),
        _ => false,
    }
}

/// The managed fields an update starts from (kube's `decodeManagedFields`): those the request
/// carries if it resets them or they are valid and not empty (never through a subresource),
/// else the live object's.
fn base_entries(live: Option<&Value>, supplied: Option<&Value>, sub: &str) -> Vec<Entry> {
    let from_live = || {
        live.and_then(|l| l.pointer("/metadata/managedFields"))
            .and_then(|v| decode(v).ok())
            .unwrap_or_default()
    };
    if !sub.is_empty() {
        return from_live();
    }
    match supplied {
        Some(v) if is_reset(v) => Vec::new(),
        Some(v) => match decode(v) {
            Ok(e) if !e.is_empty() => e,
            _ => from_live(),
        },
        None => from_live(),
    }
}

/// How a write is attributed.
#[derive(Debug, Clone)]
pub struct Manager<'a> {
    pub name: &'a str,
    pub sub: crate::service::Subresource,
}

/// Records an update (create, update, non-apply patch) in `new`'s managed fields, as kube's
/// `FieldManager.UpdateNoErrors`: fields the write added or changed become the manager's (and
/// no longer anyone else's), fields it removed no longer anyone's. `live` is `None` on create.
/// `supplied` is what the request carried in `metadata.managedFields`. Never fails: managed
/// fields that cannot be computed are dropped, as kube drops them.
pub fn track(
    ri: &ResourceInfo,
    live: Option<&Value>,
    new: &mut Value,
    supplied: Option<Value>,
    who: &Manager<'_>,
) {
    let sub = subresource_name(who.sub);
    // The result replaces whatever managed fields `new` carries: out with them first, so the
    // comparison reads `new` as it is (no copy of the whole object without them).
    take(new);
    match track_update(ri, live, new, supplied.as_ref(), who.name, sub) {
        Ok(v) => set_managed(new, v),
        Err(e) => {
            tracing::debug!(error = %e, "managed fields dropped");
            set_managed(new, None);
        }
    }
}

/// `new` carries no managed fields.
fn track_update(
    ri: &ResourceInfo,
    live: Option<&Value>,
    new: &Value,
    supplied: Option<&Value>,
    manager: &str,
    sub: &str,
) -> Result<Option<Value>, ApplyError> {
    let mut entries = base_entries(live, supplied, sub);
    let t = typer(ri);
    let stripped_live = match live {
        Some(l) => std::borrow::Cow::Owned(without_managed(l)),
        None => typed::zero(&t),
    };
    let lhs: &Value = &stripped_live;
    let c = t.compare(lhs, new)?;
    let mut changed = c.added;
    changed.union_in(&c.modified);
    let changed = filter_reset(ri, sub, changed);
    let removed = filter_reset(ri, sub, c.removed);
    for e in entries.iter_mut() {
        e.set = e.set.difference(&changed);
        if !removed.is_empty() {
            e.set = e.set.difference(&removed);
        }
    }
    let mut mine = changed;
    strip_meta(&mut mine);
    let gv = group_version(ri);
    if !mine.is_empty() {
        let me = Entry {
            manager: manager.to_owned(),
            operation: Operation::Update,
            api_version: gv,
            time: Some(crate::model::meta::now_rfc3339()),
            subresource: sub.to_owned(),
            set: mine,
        };
        match entries.iter_mut().find(|e| e.same_manager(&me)) {
            Some(prev) => {
                prev.set = prev.set.union(&me.set);
                prev.time = me.time;
            }
            None => entries.push(me),
        }
    }
    cap_managers(&mut entries);
    Ok(encode(entries))
}

/// kube's `capManagers`: at most [`MAX_UPDATE_MANAGERS`] `Update` entries; the oldest are
/// merged into `ancient-changes` (created, at the end, from the oldest one if there is none).
/// The entries to merge are picked by one stable sort on time (the earlier entry first among
/// equal times) and merged in place: a client may send thousands of entries, and picking and
/// copying them one at a time was quadratic (20,000 took 68 s).
fn cap_managers(entries: &mut Vec<Entry>) {
    const ANCIENT: &str = "ancient-changes";
    let is_bucket = |e: &Entry| e.manager == ANCIENT && e.operation == Operation::Update;
    let updates = entries
        .iter()
        .filter(|e| e.operation == Operation::Update)
        .count();
    if updates <= MAX_UPDATE_MANAGERS {
        return;
    }
    let has_bucket = entries.iter().any(is_bucket);
    // A new bucket is itself an update.
    let excess = updates - MAX_UPDATE_MANAGERS + usize::from(!has_bucket);
    let mut oldest: Vec<(i64, usize)> = entries
        .iter()
        .enumerate()
        .filter(|(_, e)| e.operation == Operation::Update && e.manager != ANCIENT)
        .map(|(i, e)| (seconds(&e.time), i))
        .collect();
    oldest.sort_by_key(|&(t, i)| (t, i));
    oldest.truncate(excess);
    let Some(&(_, first)) = oldest.first() else {
        return;
    };
    let gone: std::collections::HashSet<usize> = oldest.iter().map(|&(_, i)| i).collect();
    let mut merged = fieldpath::Set::new();
    for &(_, i) in &oldest {
        merged.union_in(&entries[i].set);
    }
    let template = (
        entries[first].api_version.clone(),
        entries[first].time.clone(),
    );
    let mut index = 0;
    entries.retain(|_| {
        index += 1;
        !gone.contains(&(index - 1))
    });
    match entries.iter_mut().find(|e| is_bucket(e)) {
        Some(b) => b.set.union_in(&merged),
        None => entries.push(Entry {
            manager: ANCIENT.into(),
            operation: Operation::Update,
            api_version: template.0,
            time: template.1,
            subresource: String::new(),
            set: merged,
        }),
    }
}

fn without_managed(v: &Value) -> Value {
    let mut v = v.clone();
    take(&mut v);
    v
}

/// The applied configuration of a `PATCH` with `application/apply-patch+yaml`: JSON (what
/// kubectl, client-go, kube-rs and the Python client send) or YAML; checked as kube checks it.
pub fn parse_config(ri: &ResourceInfo, body: &[u8]) -> Result<Value, ApiError> {
    parse_config_as(&group_version(ri), body)
}

/// [`parse_config`] for an applied object of the group/version `gv` (a Scale's `autoscaling/v1`).
pub fn parse_config_as(gv: &str, body: &[u8]) -> Result<Value, ApiError> {
    parse_config_as_strict(gv, body, false).map(|(v, _)| v)
}

/// [`parse_config`], with (when `strict`: `fieldValidation` `Strict` or `Warn`) what kube's
/// second, strict decoding of the configuration finds (`applyPatcher`, sigs.k8s.io/yaml's
/// `UnmarshalStrict`, go-yaml's report of each key an object repeats: `line 3: key "a" already
/// set in map`; `model::json::yaml_strict`). For a JSON body, read in the same pass; a YAML
/// body repeating a key is refused by the YAML parser, under every `fieldValidation`.
pub fn parse_config_strict(
    ri: &ResourceInfo,
    body: &[u8],
    strict: bool,
) -> Result<(Value, Vec<String>), ApiError> {
    parse_config_as_strict(&group_version(ri), body, strict)
}

/// [`parse_config_strict`] for an applied object of the group/version `gv`.
pub fn parse_config_as_strict(
    gv: &str,
    body: &[u8],
    strict: bool,
) -> Result<(Value, Vec<String>), ApiError> {
    // `-0` is the integer 0, as sigs.k8s.io/yaml reads it.
    let json = crate::model::json::negative_zero_as_zero(body);
    let parsed = if strict {
        crate::model::json::yaml_strict(&json)
    } else {
        serde_json::from_slice::<Value>(&json).map(|v| (v, Vec::new()))
    };
    let (v, repeated) = match parsed {
        Ok(parsed) => parsed,
        // Not JSON: YAML, converted to JSON as kube's `yaml.Unmarshal` does (sigs.k8s.io/yaml).
        Err(_) => (
            yaml_to_json(body).map_err(|e| {
                ApiError::bad_request(format!(
                    "error decoding YAML: error converting YAML to JSON: yaml: {e}"
                ))
            })?,
            Vec::new(),
        ),
    };
    if !v.is_object() {
        return Err(ApiError::bad_request(
            "error decoding YAML: json: cannot unmarshal into Go value of type map[string]interface {}",
        ));
    }
    let pv = v.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    if pv != gv {
        return Err(ApiError::bad_request(format!(
            "Incorrect version specified in apply patch. Specified patch version: {pv}, expected: {gv}"
        )));
    }
    if v.pointer("/metadata/managedFields")
        .is_some_and(|m| !m.is_null())
    {
        return Err(ApiError::bad_request("metadata.managedFields must be nil"));
    }
    Ok((v, repeated))
}

/// kube's `applyPatcher` with `fieldValidation=Strict`, when go-yaml's strict decoding of the
/// configuration reported `repeated` (`line 3: key "a" already set in map`, ...): a 400.
pub fn strict_decoding_error(repeated: &[String]) -> ApiError {
    ApiError::bad_request(format!(
        "error strict decoding patch: error converting YAML to JSON: yaml: unmarshal errors:\n  {}",
        repeated.join("\n  ")
    ))
}

/// A YAML document as JSON: mapping keys that are numbers or booleans become strings (as
/// sigs.k8s.io/yaml converts them), tags are dropped, and values JSON cannot hold (NaN, infinity,
/// a collection as a key) are errors. serde_yaml bounds nesting (128) and nested alias expansion
/// (the "billion laughs" document), and the request body is bounded before this.
///
/// serde_yaml does not bound a wide expansion: one anchor of K items named by K aliases is K²
/// nodes from a body of a few K bytes (40 KB would fill the machine). So the document is first
/// walked without keeping anything, counting nodes as aliases expand, and refused with go-yaml's
/// `document contains excessive aliasing` (kube's answer) past [`YAML_NODE_SLACK`] nodes more
/// than the body has bytes: a document without aliases never has more nodes than bytes. Nor
/// does it bound what an alias of a long string costs: each reference is a copy (a 1 MB string
/// named 4,000 times took 8 GB), so the bytes of the strings are counted too, and refused the
/// same way past twice the body's size and [`YAML_BYTE_SLACK`]: no object that can be stored is
/// bigger.
pub(crate) fn yaml_to_json(body: &[u8]) -> Result<Value, String> {
    count_yaml_nodes(
        body,
        body.len().saturating_add(YAML_NODE_SLACK),
        body.len().saturating_mul(2).saturating_add(YAML_BYTE_SLACK),
    )?;
    let y: serde_yaml::Value = serde_yaml::from_slice(body).map_err(|e| e.to_string())?;
    convert_yaml(y)
}

/// Nodes a YAML document may have beyond its size in bytes (what its aliases may add).
const YAML_NODE_SLACK: usize = 100_000;
/// Bytes of strings a YAML document may have beyond twice its size (what its aliases may add):
/// more than any object stored (`--max-object-bytes`, 1.5 MiB by default) or any request
/// (3 MiB).
const YAML_BYTE_SLACK: usize = 4 << 20;

/// Walk a YAML document, aliases expanded, counting its nodes and the bytes of its strings;
/// Err past `budget` nodes or `byte_budget` bytes.
fn count_yaml_nodes(body: &[u8], budget: usize, byte_budget: usize) -> Result<(), String> {
    use serde::de::{self, DeserializeSeed, Deserializer, EnumAccess, VariantAccess, Visitor};
    use std::cell::Cell;

    const EXCESSIVE: &str = "document contains excessive aliasing";

    #[derive(Clone, Copy)]
    struct Count<'a> {
        seen: &'a Cell<usize>,
        budget: usize,
        bytes: &'a Cell<usize>,
        byte_budget: usize,
    }
    impl Count<'_> {
        fn bump<E: de::Error>(&self) -> Result<(), E> {
            let n = self.seen.get() + 1;
            self.seen.set(n);
            if n > self.budget {
                return Err(E::custom(EXCESSIVE));
            }
            Ok(())
        }
        /// A string of `len` bytes (a key or a value).
        fn text<E: de::Error>(&self, len: usize) -> Result<(), E> {
            let n = self.bytes.get().saturating_add(len);
            self.bytes.set(n);
            if n > self.byte_budget {
                return Err(E::custom(EXCESSIVE));
            }
            self.bump()
        }
    }
    impl<'de> DeserializeSeed<'de> for Count<'_> {
        type Value = ();
        fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
            d.deserialize_any(self)
        }
    }
    impl<'de> Visitor<'de> for Count<'_> {
        type Value = ();
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("any YAML value")
        }
        fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
            self.bump()
        }
        fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
            self.bump()
        }
        fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
            self.bump()
        }
        fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
            self.bump()
        }
        fn visit_str<E: de::Error>(self, s: &str) -> Result<(), E> {
            self.text(s.len())
        }
        fn visit_bytes<E: de::Error>(self, b: &[u8]) -> Result<(), E> {
            self.text(b.len())
        }
        fn visit_unit<E: de::Error>(self) -> Result<(), E> {
            self.bump()
        }
        fn visit_none<E: de::Error>(self) -> Result<(), E> {
            self.bump()
        }
        fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
            d.deserialize_any(self)
        }
        fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
            self.bump()?;
            while seq.next_element_seed(self)?.is_some() {}
            Ok(())
        }
        fn visit_map<A: de::MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
            self.bump()?;
            while map.next_key_seed(self)?.is_some() {
                map.next_value_seed(self)?;
            }
            Ok(())
        }
        fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<(), A::Error> {
            // A tagged value (`!tag value`): the tag, then its value.
            self.bump()?;
            let (_, variant) = data.variant_seed(std::marker::PhantomData::<de::IgnoredAny>)?;
            variant.newtype_variant_seed(self)
        }
    }

    let bytes = Cell::new(0);
    let seen = Cell::new(0);
    let count = Count {
        seen: &seen,
        budget,
        bytes: &bytes,
        byte_budget,
    };
    match count.deserialize(serde_yaml::Deserializer::from_slice(body)) {
        Ok(()) => Ok(()),
        // serde_yaml puts the path where it stopped first.
        Err(e) if e.to_string().contains(EXCESSIVE) => Err(EXCESSIVE.to_owned()),
        // Anything else is for the real parse to report.
        Err(_) => Ok(()),
    }
}

fn convert_yaml(y: serde_yaml::Value) -> Result<Value, String> {
    use serde_yaml::Value as Y;
    Ok(match y {
        Y::Null => Value::Null,
        Y::Bool(b) => Value::Bool(b),
        Y::Number(n) => {
            if let Some(i) = n.as_i64() {
                Value::from(i)
            } else if let Some(u) = n.as_u64() {
                Value::from(u)
            } else {
                let f = n.as_f64().unwrap_or(f64::NAN);
                serde_json::Number::from_f64(f)
                    .map(Value::Number)
                    .ok_or_else(|| format!("json: unsupported value: {f}"))?
            }
        }
        Y::String(s) => Value::String(s),
        Y::Sequence(items) => Value::Array(
            items
                .into_iter()
                .map(convert_yaml)
                .collect::<Result<_, _>>()?,
        ),
        Y::Mapping(m) => {
            let mut out = serde_json::Map::with_capacity(m.len());
            for (k, v) in m {
                let key = match k {
                    Y::String(s) => s,
                    Y::Bool(b) => b.to_string(),
                    Y::Number(n) => n.to_string(),
                    Y::Null => "null".to_owned(),
                    _ => return Err("invalid map key: a collection".to_owned()),
                };
                out.insert(key, convert_yaml(v)?);
            }
            Value::Object(out)
        }
        Y::Tagged(t) => convert_yaml(t.value)?,
    })
}

/// Apply `config` as `manager` to `live` (`None`: the object does not exist, create it):
/// kube's `structuredMergeManager.Apply` and structured-merge-diff's `Updater.Apply`. Returns
/// the new object with its managed fields.
pub fn apply(
    ri: &ResourceInfo,
    live: Option<&Value>,
    config: &Value,
    who: &Manager<'_>,
    force: bool,
) -> Result<Value, ApiError> {
    let sub = subresource_name(who.sub);
    let t = typer(ri);
    let mut entries = match live.and_then(|l| l.pointer("/metadata/managedFields")) {
        Some(m) => decode(m)
            .map_err(|e| ApiError::new(500, "", format!("failed to decode managed fields: {e}")))?,
        None => Vec::new(),
    };
    let live_value = match live {
        Some(l) => without_managed(l),
        None => {
            let mut z = typed::zero_object(&t);
            if let (Some(o), Some(c)) = (z.as_object_mut(), config.as_object()) {
                for k in ["apiVersion", "kind"] {
                    if let Some(v) = c.get(k) {
                        o.insert(k.into(), v.clone());
                    }
                }
                let name = config.pointer("/metadata/name").cloned();
                let ns = config.pointer("/metadata/namespace").cloned();
                let m = o.entry("metadata").or_insert_with(|| json!({}));
                if let Some(m) = m.as_object_mut() {
                    if let Some(n) = name {
                        m.insert("name".into(), n);
                    }
                    if let Some(n) = ns {
                        m.insert("namespace".into(), n);
                    }
                }
            }
            z
        }
    };
    let typed_err =
        |what: &str, e: ApplyError| typed_error(what, config, &ri.group, &ri.version, &ri.kind, e);
    // kube's `ObjectToTyped(patchObj)`: the configuration checked against the schema
    // (undeclared fields, wrong types, list keys), whatever `fieldValidation` says.
    validate::validate(&t, config).map_err(|e| typed_err("patch", e))?;
    let mut applied = t.to_set(config).map_err(|e| typed_err("patch", e))?;
    strip_meta(&mut applied);
    let applied = filter_reset(ri, sub, applied);
    let merged = t
        .merge(&live_value, config)
        .map_err(|e| typed_err("patch", e))?;
    let me = Entry {
        manager: who.name.to_owned(),
        operation: Operation::Apply,
        api_version: group_version(ri),
        time: None,
        subresource: sub.to_owned(),
        set: applied,
    };
    // Prune: what the applier applied last time and no manager (the applier included, with
    // its new configuration) owns any more goes.
    let last = entries
        .iter()
        .position(|e| e.same_manager(&me))
        .map(|i| entries.remove(i));
    let mut merged = merged;
    if let Some(last) = last.as_ref().filter(|l| !l.set.is_empty()) {
        merged =
            prune(&t, merged, &last.set, &me.set, &entries).map_err(|e| typed_err("merged", e))?;
    }
    // Conflicts: fields this apply changes that another manager owns.
    let c = t
        .compare(&live_value, &merged)
        .map_err(|e| typed_err("merged", e))?;
    let mut changed = c.added;
    changed.union_in(&c.modified);
    let changed = filter_reset(ri, sub, changed);
    let removed = filter_reset(ri, sub, c.removed);
    let mut conflicts: Vec<(String, Path)> = Vec::new();
    for e in &entries {
        let overlap = e.set.intersection(&changed);
        if !overlap.is_empty() {
            let left = MAX_CONFLICTS.saturating_sub(conflicts.len());
            for p in overlap.paths(left) {
                conflicts.push((e.describe(), p));
            }
        }
    }
    if !conflicts.is_empty() && !force {
        // kube's lastAppliedManager: kubectl moving an object from client-side apply may take
        // the fields its last-applied configuration set, as long as they still hold that value.
        let allowed = if who.name == "kubectl" {
            live.and_then(|l| allowed_from_last_applied(&t, l))
        } else {
            None
        };
        let all_allowed = allowed
            .as_ref()
            .is_some_and(|a| conflicts.iter().all(|(_, p)| a.has(p)));
        if !all_allowed {
            if let Some(a) = &allowed {
                conflicts.retain(|(_, p)| !a.has(p));
            }
            return Err(conflict_error(conflicts));
        }
    }
    for e in entries.iter_mut() {
        e.set = e.set.difference(&changed).difference(&removed);
    }
    let unchanged = live.is_some() && merged == live_value;
    let mut me = me;
    me.time = match (&last, unchanged) {
        (Some(l), true) => l.time.clone(),
        _ => Some(crate::model::meta::now_rfc3339()),
    };
    entries.push(me);
    let mut out = merged;
    // kube's conversion of the result to the kind's type (`toVersioned`, the unstructured
    // converter reading each `Time` with its `UnmarshalJSON`): a time that does not parse is a
    // plain error, 500 without a reason. Good ones are written as kube writes them.
    if ri.custom.is_none() {
        crate::builtin::decode::decode_times(&ri.group, &ri.version, &ri.kind, &mut out).map_err(
            |e| {
                ApiError::new(
                    500,
                    "",
                    format!(
                        "failed to convert new object ({}/{}; {}/{}, Kind={}) to proper version: {e}",
                        crate::model::meta::namespace(config),
                        crate::model::meta::name(config),
                        ri.group,
                        ri.version,
                        ri.kind,
                    ),
                )
            },
        )?;
    }
    // kube's lastAppliedUpdater: kubectl's applies keep an existing client-side apply
    // annotation in step, so `kubectl apply` (client-side) still works after.
    if who.name == "kubectl" && live.is_some_and(|l| last_applied(l).is_some()) {
        let mut cfg = config.clone();
        if let Some(a) = cfg
            .pointer_mut("/metadata/annotations")
            .and_then(Value::as_object_mut)
        {
            a.remove(LAST_APPLIED);
        }
        // As kube encodes it (`runtime.Encode` of the unstructured object: Go's `json` with
        // sorted keys, then a newline), which is also what client-side apply writes.
        let text = crate::builtin::validation::apps::go_json(&cfg) + "\n";
        if let Some(m) = crate::model::meta::metadata_mut(&mut out) {
            let a = m.entry("annotations").or_insert_with(|| json!({}));
            if let Some(a) = a.as_object_mut() {
                if text.len() <= MAX_LAST_APPLIED_BYTES {
                    a.insert(LAST_APPLIED.into(), Value::String(text));
                } else {
                    a.remove(LAST_APPLIED);
                }
            }
        }
    }
    set_managed(&mut out, encode(entries));
    Ok(out)
}

/// kube's `failed to create typed patch object (...)` and its kin: `objectGVKNN` is
/// `namespace/name; group/version, Kind=Kind` of the applied configuration. A plain Go error in
/// kube: 500 without a reason.
fn typed_error(
    what: &str,
    config: &Value,
    group: &str,
    version: &str,
    kind: &str,
    e: ApplyError,
) -> ApiError {
    ApiError::new(
        500,
        "",
        format!(
            "failed to create typed {what} object ({}/{}; {group}/{version}, Kind={kind}): {e}",
            crate::model::meta::namespace(config),
            crate::model::meta::name(config),
        ),
    )
}

/// kube's check of an applied configuration of the built-in kind `group/version, Kind=kind`
/// against its definition ([`validate::validate`]), for a configuration applied through a
/// subresource of another kind (a `Scale`, whose field manager is the Scale's); a kind without
/// a definition takes anything.
pub fn validate_builtin(
    config: &Value,
    group: &str,
    version: &str,
    kind: &str,
) -> Result<(), ApiError> {
    let defs = crate::builtin::definitions::get();
    let Some(def) = defs.name_of(group, version, kind).and_then(|n| defs.get(n)) else {
        return Ok(());
    };
    let t = Typer {
        root: Ty::Root(def),
        builtin: true,
    };
    validate::validate(&t, config)
        .map_err(|e| typed_error("patch", config, group, version, kind, e))
}

/// kubectl's client-side apply annotation.
pub const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";
/// kube drops the annotation rather than keep one this large (`totalAnnotationSizeLimitB`).
const MAX_LAST_APPLIED_BYTES: usize = 256 * 1024;

fn last_applied(live: &Value) -> Option<&str> {
    live.pointer("/metadata/annotations")
        .and_then(|a| a.get(LAST_APPLIED))
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
}

/// kube's `allowedConflictsFromLastApplied`: the fields of the last-applied configuration whose
/// value the live object still has.
fn allowed_from_last_applied(t: &Typer<'_>, live: &Value) -> Option<Set> {
    let text = last_applied(live)?;
    let last: Value = serde_json::from_str(text).ok()?;
    if !last.is_object() || !crate::model::limits::within_depth(&last) {
        return None;
    }
    let set = t.to_set(&last).ok()?;
    let c = t.compare(&last, &without_managed(live)).ok()?;
    Some(set.difference(&c.modified))
}

/// structured-merge-diff's `prune`: remove from `merged` what the applier applied last time
/// (`last`) unless a manager (the applier with its new configuration `mine` included) still
/// owns it; struct fields count as owned when something below them is (`addBackOwnedItems`),
/// and only what was in `last` goes (`addBackDanglingItems`).
fn prune(
    t: &Typer<'_>,
    merged: Value,
    last: &Set,
    mine: &Set,
    others: &[Entry],
) -> Result<Value, ApplyError> {
    let remove = |v: &Value, s: &Set| -> Result<Value, ApplyError> {
        Ok(t.remove(v, s)?.unwrap_or_else(|| json!({})))
    };
    // The object's identity is never pruned (kube's applied sets never hold it: stripmeta).
    let mut last = t.named(last);
    strip_meta(&mut last);
    let mut owned = mine.clone();
    for e in others {
        owned.union_in(&e.set);
    }
    let owned = t.named(&owned);
    let merged_set = t.named(&t.to_set(&merged)?);
    let pruned = remove(&merged, &last)?;
    let pruned_set = t.named(&t.to_set(&pruned)?);
    let pruned = remove(&merged, &merged_set.difference(&pruned_set.union(&owned)))?;
    let pruned_set = t.named(&t.to_set(&pruned)?);
    remove(
        &merged,
        &merged_set.difference(&pruned_set).intersection(&last),
    )
}

/// kube's `NewConflictError`: 409 Conflict, a cause per conflicting field, and the message of
/// `getConflictMessage`.
fn conflict_error(conflicts: Vec<(String, Path)>) -> ApiError {
    let causes: Vec<Cause> = conflicts
        .iter()
        .map(|(m, p)| {
            Cause::new(
                "FieldManagerConflict",
                &fieldpath::path_string(p),
                format!("conflict with {m}"),
            )
        })
        .collect();
    let message = if conflicts.len() == 1 {
        format!(
            "Apply failed with 1 conflict: conflict with {}: {}",
            conflicts[0].0,
            fieldpath::path_string(&conflicts[0].1)
        )
    } else {
        let mut managers: Vec<&String> = conflicts.iter().map(|(m, _)| m).collect();
        managers.sort();
        managers.dedup();
        let mut lines = Vec::new();
        for m in managers {
            lines.push(format!("conflicts with {m}:"));
            for (_, p) in conflicts.iter().filter(|(n, _)| n == m) {
                lines.push(format!("- {}", fieldpath::path_string(p)));
            }
        }
        format!(
            "Apply failed with {} conflicts: {}",
            conflicts.len(),
            lines.join("\n")
        )
    };
    ApiError::new(409, "Conflict", message).with_causes(causes)
}

/// kube's `managerOrUserAgent`: the `fieldManager` parameter, else the user agent up to its
/// first `/`, printable characters only, at most 128 bytes.
pub fn manager_name(field_manager: Option<&str>, user_agent: &str) -> String {
    if let Some(m) = field_manager.filter(|m| !m.is_empty()) {
        return m.to_owned();
    }
    let prefix = user_agent.split('/').next().unwrap_or("");
    let mut out = String::new();
    for c in prefix.chars() {
        if c.is_control() {
            continue;
        }
        if out.len() + c.len_utf8() > MAX_MANAGER_LENGTH {
            break;
        }
        out.push(c);
    }
    out
}

/// kube's `ValidateFieldManager` (and, for apply, that one is given), as a 422 on
/// `PatchOptions`/`CreateOptions`/`UpdateOptions`.
pub fn validate_options(
    kind: &str,
    field_manager: Option<&str>,
    apply: bool,
    force: Option<bool>,
) -> Result<(), ApiError> {
    let causes = option_causes(kind, field_manager, apply, force);
    if causes.is_empty() {
        return Ok(());
    }
    Err(ApiError::invalid("meta.k8s.io", kind, "", causes))
}

/// The causes [`validate_options`] refuses, for the write's handler to add its other options'
/// (`dryRun`, `fieldValidation`) to, in kube's order.
pub fn option_causes(
    kind: &str,
    field_manager: Option<&str>,
    apply: bool,
    force: Option<bool>,
) -> Vec<Cause> {
    let mut causes = Vec::new();
    if kind == "PatchOptions" {
        if !apply && force.is_some() {
            causes.push(Cause::new(
                "FieldValueForbidden",
                "force",
                "Forbidden: may not be specified for non-apply patch",
            ));
        }
        if apply && field_manager.unwrap_or("").is_empty() {
            causes.push(Cause::new(
                "FieldValueRequired",
                "fieldManager",
                "Required value: is required for apply patch",
            ));
        }
    }
    if let Some(m) = field_manager {
        if m.len() > MAX_MANAGER_LENGTH {
            causes.push(Cause::new(
                "FieldValueTooLong",
                "fieldManager",
                format!("Too long: may not be more than {MAX_MANAGER_LENGTH} bytes"),
            ));
        }
        if m.chars().any(char::is_control) {
            causes.push(Cause::new(
                "FieldValueInvalid",
                "fieldManager",
                format!(
                    "Invalid value: {}: must only contain printable characters",
                    crate::auth::rbac::go_quote(m)
                ),
            ));
        }
    }
    causes
}

#[cfg(test)]
mod tests;
