//! kube's validation of the storage kinds (kube 1.34): core `persistentvolumeclaims` and
//! `persistentvolumes` (`pkg/apis/core/validation`), and storage.k8s.io `storageclasses`,
//! `csidrivers`, `volumeattachments` and `volumeattributesclasses` (`pkg/apis/storage/validation`),
//! run as each kind's registry strategy runs them on create, update and status update, with kube's
//! field paths and messages.
//!
//! Feature gates as kube 1.34 sets them by default: `RecoverVolumeExpansionFailure` (GA, locked
//! on), `VolumeAttributesClass` (GA), `AnyVolumeDataSource` (on), `SELinuxMountReadWriteOncePod`
//! (on); `CrossNamespaceVolumeDataSource` is alpha (off).
//!
//! Where a strategy validates the object twice (its `ValidateUpdate` runs `ValidateX`, then
//! `ValidateXUpdate`, which runs `ValidateX` again: PersistentVolumeClaims, PersistentVolumes,
//! VolumeAttachments), the causes repeat as kube's do; kube's message (`errs.ToAggregate()`) lists
//! each distinct one once.
//!
//! Object equality follows kube's `apiequality.Semantic.DeepEqual` on the Go types: a field left
//! at its zero value (`""`, `false`, `0`, `[]`, `null`) equals an absent one; quantities compare
//! by value. A complex bad value is printed as kube 1.34 prints it (`json.Marshal`, `field.rs`):
//! an internal struct as the JSON of its Go field names in declaration order (the tables below);
//! where kube appends a `cmp.Diff` (whose output go-cmp deliberately keeps unstable), a short
//! diff of the changed fields is appended instead.

use std::collections::{BTreeMap, BTreeSet, HashSet};

use serde_json::{json, Map, Value};

use super::field::{
    child, dns1123_label, dns1123_subdomain, duplicate, forbidden, go_struct, immutable, index,
    invalid, invalid_shown, invalid_str, items, json_opt, key, label_value, not_supported,
    not_supported_shown, qualified_name, required, str_of, too_long, Go, GoField,
};
use crate::builtin::quantity;
use crate::model::status::Cause;

const STORAGE: &str = "storage.k8s.io";

static NULL: Value = Value::Null;

// ---- kube's internal structs, as `json.Marshal` prints a bad value of them ----

/// `core.NodeSelectorRequirement`.
const NODE_SELECTOR_REQUIREMENT: &[GoField<'static>] = &[
    ("Key", "key", Go::Str),
    ("Operator", "operator", Go::Str),
    ("Values", "values", Go::Nil),
];
/// `core.NodeSelectorTerm`.
const NODE_SELECTOR_TERM: &[GoField<'static>] = &[
    (
        "MatchExpressions",
        "matchExpressions",
        Go::List(NODE_SELECTOR_REQUIREMENT),
    ),
    (
        "MatchFields",
        "matchFields",
        Go::List(NODE_SELECTOR_REQUIREMENT),
    ),
];
/// `core.NodeSelector`.
const NODE_SELECTOR: &[GoField<'static>] = &[(
    "NodeSelectorTerms",
    "nodeSelectorTerms",
    Go::List(NODE_SELECTOR_TERM),
)];
/// `core.VolumeNodeAffinity`.
const VOLUME_NODE_AFFINITY: &[GoField<'static>] =
    &[("Required", "required", Go::Ptr(NODE_SELECTOR))];
/// `core.ObjectReference`.
const OBJECT_REFERENCE: &[GoField<'static>] = &[
    ("Kind", "kind", Go::Str),
    ("Namespace", "namespace", Go::Str),
    ("Name", "name", Go::Str),
    ("UID", "uid", Go::Str),
    ("APIVersion", "apiVersion", Go::Str),
    ("ResourceVersion", "resourceVersion", Go::Str),
    ("FieldPath", "fieldPath", Go::Str),
];
/// `core.PersistentVolumeSpec`, its embedded `PersistentVolumeSource` in the internal type's
/// order (each source's own struct is printed with the API's field names: a difference).
const PERSISTENT_VOLUME_SPEC: &[GoField<'static>] = &[
    ("Capacity", "capacity", Go::Nil),
    ("GCEPersistentDisk", "gcePersistentDisk", Go::Nil),
    ("AWSElasticBlockStore", "awsElasticBlockStore", Go::Nil),
    ("HostPath", "hostPath", Go::Nil),
    ("Glusterfs", "glusterfs", Go::Nil),
    ("NFS", "nfs", Go::Nil),
    ("RBD", "rbd", Go::Nil),
    ("Quobyte", "quobyte", Go::Nil),
    ("ISCSI", "iscsi", Go::Nil),
    ("FlexVolume", "flexVolume", Go::Nil),
    ("Cinder", "cinder", Go::Nil),
    ("CephFS", "cephfs", Go::Nil),
    ("FC", "fc", Go::Nil),
    ("Flocker", "flocker", Go::Nil),
    ("AzureFile", "azureFile", Go::Nil),
    ("VsphereVolume", "vsphereVolume", Go::Nil),
    ("AzureDisk", "azureDisk", Go::Nil),
    ("PhotonPersistentDisk", "photonPersistentDisk", Go::Nil),
    ("PortworxVolume", "portworxVolume", Go::Nil),
    ("ScaleIO", "scaleIO", Go::Nil),
    ("Local", "local", Go::Nil),
    ("StorageOS", "storageos", Go::Nil),
    ("CSI", "csi", Go::Nil),
    ("AccessModes", "accessModes", Go::Nil),
    ("ClaimRef", "claimRef", Go::Ptr(OBJECT_REFERENCE)),
    (
        "PersistentVolumeReclaimPolicy",
        "persistentVolumeReclaimPolicy",
        Go::Str,
    ),
    ("StorageClassName", "storageClassName", Go::Str),
    ("MountOptions", "mountOptions", Go::Nil),
    ("VolumeMode", "volumeMode", Go::Nil),
    (
        "NodeAffinity",
        "nodeAffinity",
        Go::Ptr(VOLUME_NODE_AFFINITY),
    ),
    (
        "VolumeAttributesClassName",
        "volumeAttributesClassName",
        Go::Nil,
    ),
];
/// `storage.VolumeAttachmentSource`.
const VOLUME_ATTACHMENT_SOURCE: &[GoField<'static>] = &[
    ("PersistentVolumeName", "persistentVolumeName", Go::Nil),
    (
        "InlineVolumeSpec",
        "inlineVolumeSpec",
        Go::Ptr(PERSISTENT_VOLUME_SPEC),
    ),
];
/// `storage.VolumeAttachmentSpec`.
const VOLUME_ATTACHMENT_SPEC: &[GoField<'static>] = &[
    ("Attacher", "attacher", Go::Str),
    ("Source", "source", Go::Struct(VOLUME_ATTACHMENT_SOURCE)),
    ("NodeName", "nodeName", Go::Str),
];
/// `storage.CSINodeDriver`.
const CSI_NODE_DRIVER: &[GoField<'static>] = &[
    ("Name", "name", Go::Str),
    ("NodeID", "nodeID", Go::Str),
    ("TopologyKeys", "topologyKeys", Go::Nil),
    (
        "Allocatable",
        "allocatable",
        Go::Ptr(&[("Count", "count", Go::Nil)]),
    ),
];

/// Causes for a create (`old` None) or an update (`old` the stored object) of the storage kinds:
/// kube's `ValidateX` / `ValidateXUpdate` as each strategy runs them.
pub fn validate(group: &str, resource: &str, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    match (group, resource) {
        ("", "persistentvolumeclaims") => persistent_volume_claim(obj, old),
        ("", "persistentvolumes") => persistent_volume(obj, old),
        (STORAGE, "storageclasses") => storage_class(obj, old),
        (STORAGE, "csidrivers") => csi_driver(obj, old),
        (STORAGE, "volumeattachments") => volume_attachment(obj, old),
        (STORAGE, "volumeattributesclasses") => volume_attributes_class(obj, old),
        (STORAGE, "csinodes") => csi_node(obj, old),
        (STORAGE, "csistoragecapacities") => csi_storage_capacity(obj, old),
        _ => Vec::new(),
    }
}

// ---- CSINode (kube's ValidateCSINode, ValidateCSINodeUpdate) ----

/// kube's node ID limit for CSINodes as its strategy validates them (`AllowLongNodeID`).
const CSI_NODE_ID_MAX: usize = 256;

/// A CSINode's drivers: each name a CSI driver name (no two the same), a node ID, a
/// non-negative allocatable count, topology keys qualified names (no two the same, reported at
/// the driver as kube does). On update a driver of the same name may not change (kube's
/// `MutableCSINodeAllocatableCount` is off in 1.34). kube's strategy validates an update as a
/// create too, so its field errors come twice.
fn csi_node(obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    let spec = obj.get("spec").unwrap_or(&NULL);
    let mut out = Vec::new();
    let mut names: HashSet<&str> = HashSet::new();
    for (i, d) in items(spec, "drivers").iter().enumerate() {
        let p = index("spec.drivers", i);
        let name = str_of(d, "name");
        csi_driver_name(name, &child(&p, "name"), &mut out);
        let node_id = str_of(d, "nodeID");
        let idp = child(&p, "nodeID");
        if node_id.is_empty() {
            out.push(required(&idp, ""));
        } else if node_id.len() > CSI_NODE_ID_MAX {
            out.push(invalid_str(
                &idp,
                node_id,
                &format!("must be {CSI_NODE_ID_MAX} characters or less"),
            ));
        }
        if let Some(count) = opt(d, "allocatable").and_then(|a| opt(a, "count")) {
            let n = count.as_i64().unwrap_or(0);
            if n < 0 {
                out.push(invalid(
                    &child(&child(&p, "allocatable"), "count"),
                    count,
                    "must be greater than or equal to 0",
                ));
            }
        }
        if !names.insert(name) {
            out.push(duplicate(&child(&p, "name"), &s(name)));
        }
        let mut keys: HashSet<&str> = HashSet::new();
        for k in items(d, "topologyKeys") {
            let k = k.as_str().unwrap_or("");
            if k.is_empty() {
                out.push(required(&p, k));
            }
            if !keys.insert(k) {
                out.push(duplicate(&p, &s(k)));
            }
            for msg in qualified_name(k) {
                out.push(invalid_str(&p, k, &msg));
            }
        }
    }
    let Some(old) = old else {
        return out;
    };
    let first = out.clone();
    out.extend(first);
    let old_drivers = items(old.get("spec").unwrap_or(&NULL), "drivers");
    for was in old_drivers {
        for new in items(spec, "drivers") {
            if str_of(new, "name") == str_of(was, "name") && !sem_eq(Some(new), Some(was)) {
                // kube reports the internal `storage.CSINodeDriver`.
                let driver = go_struct(Some(new), CSI_NODE_DRIVER);
                out.push(invalid("spec.drivers", &driver, "field is immutable"));
            }
        }
    }
    out
}

// ---- CSIStorageCapacity (kube's ValidateCSIStorageCapacity, ValidateCSIStorageCapacityUpdate) ----

/// A CSIStorageCapacity: its node topology a label selector, its class name a DNS subdomain
/// (empty included), its capacity not negative (kube does not check `maximumVolumeSize`); on
/// update the topology and class are immutable.
fn csi_storage_capacity(obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    let mut out = Vec::new();
    // kube lets invalid label values stored before stay (AllowInvalidLabelValueInSelector).
    let ratchet = old.and_then(|o| opt(o, "nodeTopology")).is_some_and(|sel| {
        let mut errs = Vec::new();
        label_selector(sel, false, "", &mut errs);
        !errs.is_empty()
    });
    if let Some(sel) = opt(obj, "nodeTopology") {
        label_selector(sel, ratchet, "nodeTopology", &mut out);
    }
    let class = str_of(obj, "storageClassName");
    for msg in dns1123_subdomain(class) {
        out.push(invalid_str("storageClassName", class, &msg));
    }
    if let Some(q) = opt(obj, "capacity").and_then(qty) {
        nonnegative_quantity(&q, "capacity", &mut out);
    }
    if let Some(old) = old {
        if !sem_eq(opt(obj, "nodeTopology"), opt(old, "nodeTopology")) {
            // kube reports the `*metav1.LabelSelector` (JSON tags, empty parts left out).
            out.push(invalid_shown(
                "nodeTopology",
                &super::apps::selector_json(opt(obj, "nodeTopology")),
                "field is immutable",
            ));
        }
        let was = str_of(old, "storageClassName");
        if class != was {
            out.push(invalid_str("storageClassName", class, "field is immutable"));
        }
    }
    out
}

/// Causes for an update through `/status`: kube's `ValidateXStatusUpdate` (PersistentVolumes have
/// nothing beyond metadata and `resourceVersion`, which are checked elsewhere).
pub fn validate_status(group: &str, resource: &str, obj: &Value, old: &Value) -> Vec<Cause> {
    match (group, resource) {
        ("", "persistentvolumeclaims") => persistent_volume_claim_status(obj, old),
        (STORAGE, "volumeattachments") => volume_attachment_status(obj, old),
        _ => Vec::new(),
    }
}

// ---- small accessors ----

/// `v[name]` unless absent or `null`: a Go pointer, slice or map that is set.
fn opt<'a>(v: &'a Value, name: &str) -> Option<&'a Value> {
    v.get(name).filter(|x| !x.is_null())
}

fn s(v: &str) -> Value {
    Value::String(v.to_owned())
}

fn int_of(v: &Value, name: &str) -> i64 {
    v.get(name).and_then(Value::as_i64).unwrap_or(0)
}

fn bool_of(v: &Value, name: &str) -> bool {
    v.get(name).and_then(Value::as_bool).unwrap_or(false)
}

fn map_len(v: Option<&Value>) -> usize {
    v.and_then(Value::as_object).map_or(0, Map::len)
}

/// A map's entries in key order (kube walks Go maps in random order).
fn sorted(v: Option<&Value>) -> Vec<(&String, &Value)> {
    let mut entries: Vec<(&String, &Value)> = v
        .and_then(Value::as_object)
        .map(|m| m.iter().collect())
        .unwrap_or_default();
    entries.sort_by(|a, b| a.0.cmp(b.0));
    entries
}

/// The annotation `k` of `obj`.
fn annotation<'a>(obj: &'a Value, k: &str) -> Option<&'a str> {
    obj.pointer("/metadata/annotations")
        .and_then(|a| a.get(k))
        .and_then(Value::as_str)
}

fn set_or_remove(target: &mut Value, k: &str, v: Option<&Value>) {
    if let Some(m) = target.as_object_mut() {
        match v {
            Some(v) => {
                m.insert(k.to_owned(), v.clone());
            }
            None => {
                m.remove(k);
            }
        }
    }
}

// ---- quantities ----

/// A quantity: its value in nano units and its canonical text (`Quantity.String()`).
struct Qty {
    nano: i128,
    text: String,
}

fn qty(v: &Value) -> Option<Qty> {
    let text = match v {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        _ => return None,
    };
    let (nano, _) = quantity::nano_value(&text).ok()?;
    let text = quantity::canonical(&text).unwrap_or(text);
    Some(Qty { nano, text })
}

/// The quantity at `pointer`, zero when absent (a Go map's missing key).
fn nano_at(v: &Value, pointer: &str) -> i128 {
    v.pointer(pointer).and_then(qty).map_or(0, |q| q.nano)
}

/// `Quantity.Value()`: whole units, rounded away from zero.
fn whole_units(nano: i128) -> i64 {
    const UNIT: i128 = 1_000_000_000;
    let v = if nano >= 0 {
        (nano + UNIT - 1) / UNIT
    } else {
        -((-nano + UNIT - 1) / UNIT)
    };
    i64::try_from(v).unwrap_or(if v < 0 { i64::MIN } else { i64::MAX })
}

/// kube's `validateBasicResource`.
fn basic_resource(q: &Qty, path: &str, out: &mut Vec<Cause>) {
    let v = whole_units(q.nano);
    if v < 0 {
        out.push(invalid(
            path,
            &json!(v),
            "must be a valid resource quantity",
        ));
    }
}

/// kube's `ValidatePositiveQuantityValue`.
fn positive_quantity(q: &Qty, path: &str, out: &mut Vec<Cause>) {
    if q.nano <= 0 {
        out.push(invalid_str(path, &q.text, "must be greater than zero"));
    }
}

/// kube's `ValidateNonnegativeQuantity`.
fn nonnegative_quantity(q: &Qty, path: &str, out: &mut Vec<Cause>) {
    if q.nano < 0 {
        out.push(invalid_str(
            path,
            &q.text,
            "must be greater than or equal to 0",
        ));
    }
}

// ---- semantic equality ----

/// `v` with every field at its Go zero value dropped (empty objects kept: pointer structs), so
/// that equality is kube's semantic one.
fn norm(v: &Value) -> Value {
    super::field::zero_dropped(v, false)
}

fn is_zero(v: &Value) -> bool {
    super::field::is_go_zero(v, false)
}

/// `apiequality.Semantic.DeepEqual` of two optional values (`nil` equals empty for slices).
fn sem_eq(a: Option<&Value>, b: Option<&Value>) -> bool {
    let top = |v: Option<&Value>| {
        let n = v.map_or(Value::Null, norm);
        if is_zero(&n) && !n.is_boolean() && !n.is_string() && !n.is_number() {
            Value::Null
        } else {
            n
        }
    };
    top(a) == top(b)
}

/// A short rendering of what changed between two objects, in the spirit of the `cmp.Diff` kube
/// appends to its "immutable" messages.
fn go_diff(type_name: &str, old: &Value, new: &Value) -> String {
    let empty = Map::new();
    let o = old.as_object().unwrap_or(&empty);
    let n = new.as_object().unwrap_or(&empty);
    let mut keys: Vec<&String> = o.keys().chain(n.keys()).collect();
    keys.sort();
    keys.dedup();
    let mut lines = vec![format!("  {type_name}{{")];
    for k in keys {
        let (a, b) = (o.get(k), n.get(k));
        if a == b {
            continue;
        }
        let name = go_field(k);
        if let Some(a) = a {
            lines.push(format!("- \t{name}: {a},"));
        }
        if let Some(b) = b {
            lines.push(format!("+ \t{name}: {b},"));
        }
    }
    lines.push("  }".to_owned());
    lines.join("\n")
}

/// The Go field name of a JSON field.
fn go_field(k: &str) -> String {
    let special = match k {
        "gcePersistentDisk" => "GCEPersistentDisk",
        "awsElasticBlockStore" => "AWSElasticBlockStore",
        "nfs" => "NFS",
        "rbd" => "RBD",
        "iscsi" => "ISCSI",
        "cephfs" => "CephFS",
        "fc" => "FC",
        "storageos" => "StorageOS",
        "csi" => "CSI",
        _ => "",
    };
    if !special.is_empty() {
        return special.to_owned();
    }
    let mut c = k.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

// ---- shared format checks ----

/// `ValidateClassName` (`NameIsDNSSubdomain`) of a set class name.
fn class_name(name: &str, path: &str, out: &mut Vec<Cause>) {
    for msg in dns1123_subdomain(name) {
        out.push(invalid_str(path, name, &msg));
    }
}

/// `ValidateDNS1123Label`.
fn dns_label(v: &str, path: &str, out: &mut Vec<Cause>) {
    for msg in dns1123_label(v) {
        out.push(invalid_str(path, v, &msg));
    }
}

/// `ValidateDNS1123Subdomain`.
fn dns_subdomain(v: &str, path: &str, out: &mut Vec<Cause>) {
    for msg in dns1123_subdomain(v) {
        out.push(invalid_str(path, v, &msg));
    }
}

/// `ValidateLabelName` (`IsQualifiedName`).
fn label_name(v: &str, path: &str, out: &mut Vec<Cause>) {
    for msg in qualified_name(v) {
        out.push(invalid_str(path, v, &msg));
    }
}

/// `ValidateCSIDriverName`.
fn csi_driver_name(name: &str, path: &str, out: &mut Vec<Cause>) {
    if name.is_empty() {
        out.push(required(path, ""));
    }
    if name.len() > 63 {
        out.push(too_long(path, 63));
    }
    for msg in dns1123_subdomain(&name.to_lowercase()) {
        out.push(invalid_str(path, name, &msg));
    }
}

/// `validatePathNoBacksteps`.
fn no_backsteps(target: &str, path: &str, out: &mut Vec<Cause>) {
    if target.split('/').any(|p| p == "..") {
        out.push(invalid_str(path, target, "must not contain '..'"));
    }
}

/// `unversionedvalidation.ValidateLabels`: kube reports a bad key and a bad value at the map
/// itself (`spec.selector.matchLabels`), not at the key.
fn match_labels(map: Option<&Value>, path: &str, out: &mut Vec<Cause>) {
    for (k, v) in sorted(map) {
        label_name(k, path, out);
        let v = v.as_str().unwrap_or("");
        for msg in label_value(v) {
            out.push(invalid_str(path, v, &msg));
        }
    }
}

/// `unversionedvalidation.ValidateLabelSelector` with `AllowInvalidLabelValueInSelector`.
fn label_selector(sel: &Value, allow_invalid_values: bool, path: &str, out: &mut Vec<Cause>) {
    match_labels(sel.get("matchLabels"), &child(path, "matchLabels"), out);
    let exprs = child(path, "matchExpressions");
    for (i, e) in items(sel, "matchExpressions").iter().enumerate() {
        let p = index(&exprs, i);
        let values = items(e, "values");
        let vp = child(&p, "values");
        match str_of(e, "operator") {
            "In" | "NotIn" => {
                if values.is_empty() {
                    out.push(required(
                        &vp,
                        "must be specified when `operator` is 'In' or 'NotIn'",
                    ));
                }
            }
            "Exists" | "DoesNotExist" => {
                if !values.is_empty() {
                    out.push(forbidden(
                        &vp,
                        "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                    ));
                }
            }
            op => out.push(invalid_str(
                &child(&p, "operator"),
                op,
                "not a valid selector operator",
            )),
        }
        label_name(str_of(e, "key"), &child(&p, "key"), out);
        if !allow_invalid_values {
            for (j, v) in values.iter().enumerate() {
                let v = v.as_str().unwrap_or("");
                for msg in label_value(v) {
                    out.push(invalid_str(&index(&vp, j), v, &msg));
                }
            }
        }
    }
}

/// `ValidateNodeSelector` (a PersistentVolume's `nodeAffinity.required`).
fn node_selector(ns: &Value, allow_invalid_values: bool, path: &str, out: &mut Vec<Cause>) {
    let terms_path = child(path, "nodeSelectorTerms");
    let terms = items(ns, "nodeSelectorTerms");
    if terms.is_empty() {
        out.push(required(
            &terms_path,
            "must have at least one node selector term",
        ));
        return;
    }
    for (i, term) in terms.iter().enumerate() {
        let tp = index(&terms_path, i);
        let exprs = child(&tp, "matchExpressions");
        for (j, rq) in items(term, "matchExpressions").iter().enumerate() {
            node_selector_requirement(rq, allow_invalid_values, &index(&exprs, j), out);
        }
        let fields = child(&tp, "matchFields");
        for (j, rq) in items(term, "matchFields").iter().enumerate() {
            node_field_requirement(rq, &index(&fields, j), out);
        }
    }
}

/// `ValidateNodeSelectorRequirement`.
fn node_selector_requirement(rq: &Value, allow_invalid: bool, p: &str, out: &mut Vec<Cause>) {
    let values = items(rq, "values");
    let vp = child(p, "values");
    match str_of(rq, "operator") {
        "In" | "NotIn" => {
            if values.is_empty() {
                out.push(required(
                    &vp,
                    "must be specified when `operator` is 'In' or 'NotIn'",
                ));
            }
        }
        "Exists" | "DoesNotExist" => {
            if !values.is_empty() {
                out.push(forbidden(
                    &vp,
                    "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                ));
            }
        }
        "Gt" | "Lt" => {
            if values.len() != 1 {
                out.push(required(
                    &vp,
                    "must be specified single value when `operator` is 'Lt' or 'Gt'",
                ));
            }
        }
        op => out.push(invalid_str(
            &child(p, "operator"),
            op,
            "not a valid selector operator",
        )),
    }
    label_name(str_of(rq, "key"), &child(p, "key"), out);
    if !allow_invalid {
        for (i, v) in values.iter().enumerate() {
            let v = v.as_str().unwrap_or("");
            for msg in label_value(v) {
                out.push(invalid_str(&index(&vp, i), v, &msg));
            }
        }
    }
}

/// `ValidateNodeFieldSelectorRequirement`.
fn node_field_requirement(rq: &Value, p: &str, out: &mut Vec<Cause>) {
    let values = items(rq, "values");
    let vp = child(p, "values");
    match str_of(rq, "operator") {
        "In" | "NotIn" => {
            if values.len() != 1 {
                out.push(required(
                    &vp,
                    "must be only one value when `operator` is 'In' or 'NotIn' for node field selector",
                ));
            }
        }
        op => out.push(invalid_str(
            &child(p, "operator"),
            op,
            "not a valid selector operator",
        )),
    }
    let k = str_of(rq, "key");
    if k != "metadata.name" {
        out.push(invalid_str(
            &child(p, "key"),
            k,
            "not a valid field selector key",
        ));
    } else {
        for (i, v) in values.iter().enumerate() {
            dns_subdomain(v.as_str().unwrap_or(""), &index(&vp, i), out);
        }
    }
}

/// `helper.HasInvalidLabelValueInNodeSelectorTerms` of a `nodeAffinity.required`.
fn has_invalid_label_value(required: Option<&Value>) -> bool {
    let Some(required) = required else {
        return false;
    };
    items(required, "nodeSelectorTerms").iter().any(|term| {
        items(term, "matchExpressions").iter().any(|e| {
            items(e, "values")
                .iter()
                .any(|v| !label_value(v.as_str().unwrap_or("")).is_empty())
        })
    })
}

const ACCESS_MODES: &[&str] = &[
    "ReadOnlyMany",
    "ReadWriteMany",
    "ReadWriteOnce",
    "ReadWriteOncePod",
];
const VOLUME_MODES: &[&str] = &["Block", "Filesystem"];
const VAC: &str = "volumeAttributesClassName";

/// The access-mode checks of `ValidatePersistentVolumeSpec` and `ValidatePersistentVolumeClaimSpec`.
fn access_modes(modes: &[Value], path: &str, out: &mut Vec<Cause>) {
    let (mut rwop, mut other) = (false, false);
    for m in modes {
        let mode = m.as_str().unwrap_or("");
        if !ACCESS_MODES.contains(&mode) {
            out.push(not_supported(path, m, ACCESS_MODES));
        }
        if mode == "ReadWriteOncePod" {
            rwop = true;
        } else if ACCESS_MODES.contains(&mode) {
            other = true;
        }
    }
    if rwop && other {
        out.push(forbidden(
            path,
            "may not use ReadWriteOncePod with other access modes",
        ));
    }
}

// ---- PersistentVolumeClaims ----

const BETA_STORAGE_CLASS: &str = "volume.beta.kubernetes.io/storage-class";

/// `PersistentVolumeClaimSpecValidationOptions` (the two that depend on the stored object; the
/// expansion-recovery and volume-attributes-class options are on in 1.34).
struct ClaimOpts {
    allow_invalid_label_value: bool,
    allow_invalid_api_group: bool,
}

/// kube's `ValidationOptionsForPersistentVolumeClaim`.
fn claim_opts(old_spec: Option<&Value>) -> ClaimOpts {
    let Some(old) = old_spec else {
        return ClaimOpts {
            allow_invalid_label_value: false,
            allow_invalid_api_group: false,
        };
    };
    let group = |name: &str| opt(old, name).is_some_and(|r| opt(r, "apiGroup").is_some());
    let allow_invalid_label_value = opt(old, "selector").is_some_and(|sel| {
        let mut errs = Vec::new();
        label_selector(sel, false, "", &mut errs);
        !errs.is_empty()
    });
    ClaimOpts {
        allow_invalid_label_value,
        allow_invalid_api_group: group("dataSource") || group("dataSourceRef"),
    }
}

/// What kube's PersistentVolumeClaim strategy does to a claim's spec before validating it, on
/// create (`old_spec` None) and update: `DropDisabledFields` (a cross-namespace `dataSourceRef`
/// is dropped, `CrossNamespaceVolumeDataSource` being off, unless the stored claim has a
/// `dataSourceRef`), `EnforceDataSourceBackwardsCompatibility` (a `dataSource` that is neither a
/// PersistentVolumeClaim nor a VolumeSnapshot is dropped when nothing else names a source) and
/// `NormalizeDataSources` (`dataSource` and `dataSourceRef` filled in from each other). The
/// validation here applies it to a copy; the write path should apply it to the object it stores.
pub fn prepare_pvc_spec(spec: &mut Value, old_spec: Option<&Value>) {
    let old_ref_in_use = old_spec.is_some_and(|o| opt(o, "dataSourceRef").is_some());
    let old_source_in_use = old_spec
        .is_some_and(|o| opt(o, "dataSource").is_some() || opt(o, "dataSourceRef").is_some());
    let Some(m) = spec.as_object_mut() else {
        return;
    };
    let cross_namespace = m
        .get("dataSourceRef")
        .filter(|r| !r.is_null())
        .is_some_and(|r| !str_of(r, "namespace").is_empty());
    if cross_namespace && !old_ref_in_use {
        m.shift_remove("dataSourceRef");
    }
    if !old_source_in_use
        && m.get("dataSourceRef").is_none_or(Value::is_null)
        && !pvc_or_snapshot(m.get("dataSource"))
    {
        m.shift_remove("dataSource");
    }
    normalize_data_sources(m);
}

/// `dataSourceIsPvcOrSnapshot`.
fn pvc_or_snapshot(ds: Option<&Value>) -> bool {
    let Some(ds) = ds.filter(|d| !d.is_null()) else {
        return false;
    };
    let group = str_of(ds, "apiGroup");
    match str_of(ds, "kind") {
        "PersistentVolumeClaim" => group.is_empty(),
        "VolumeSnapshot" => group == "snapshot.storage.k8s.io",
        _ => false,
    }
}

/// `NormalizeDataSources`.
fn normalize_data_sources(m: &mut Map<String, Value>) {
    let ds = m.get("dataSource").filter(|v| !v.is_null()).cloned();
    let r = m.get("dataSourceRef").filter(|v| !v.is_null()).cloned();
    match (ds, r) {
        (Some(ds), None) => {
            m.insert("dataSourceRef".into(), typed_ref(&ds));
        }
        (None, Some(r)) if str_of(&r, "namespace").is_empty() => {
            m.insert("dataSource".into(), typed_ref(&r));
        }
        _ => {}
    }
}

fn typed_ref(from: &Value) -> Value {
    let mut r = Map::new();
    if let Some(g) = opt(from, "apiGroup") {
        r.insert("apiGroup".into(), g.clone());
    }
    r.insert("kind".into(), s(str_of(from, "kind")));
    r.insert("name".into(), s(str_of(from, "name")));
    Value::Object(r)
}

/// `ValidatePersistentVolumeClaim` on create; on update what the strategy runs:
/// `ValidatePersistentVolumeClaim` then `ValidatePersistentVolumeClaimUpdate`.
fn persistent_volume_claim(obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    let raw_old_spec = old.and_then(|o| o.get("spec"));
    let old_spec = raw_old_spec.map(|s| {
        let mut s = s.clone();
        if let Some(m) = s.as_object_mut() {
            normalize_data_sources(m);
        }
        s
    });
    let mut spec = obj.get("spec").cloned().unwrap_or_else(|| json!({}));
    prepare_pvc_spec(&mut spec, raw_old_spec);
    let opts = claim_opts(old_spec.as_ref());
    let mut out = Vec::new();
    claim_spec(&spec, "spec", &opts, &mut out);
    if let (Some(old), Some(old_spec)) = (old, old_spec.as_ref()) {
        // ValidatePersistentVolumeClaimUpdate validates the claim again.
        claim_spec(&spec, "spec", &opts, &mut out);
        claim_update(obj, &spec, old, old_spec, &mut out);
    }
    out
}

/// `ValidatePersistentVolumeClaimSpec`.
fn claim_spec(spec: &Value, path: &str, opts: &ClaimOpts, out: &mut Vec<Cause>) {
    let modes = items(spec, "accessModes");
    let modes_path = child(path, "accessModes");
    if modes.is_empty() {
        out.push(required(&modes_path, "at least 1 access mode is required"));
    }
    if let Some(sel) = opt(spec, "selector") {
        label_selector(
            sel,
            opts.allow_invalid_label_value,
            &child(path, "selector"),
            out,
        );
    }
    access_modes(modes, &modes_path, out);
    let storage_path = key(&child(path, "resources"), "storage");
    match spec
        .pointer("/resources/requests/storage")
        .filter(|v| !v.is_null())
    {
        None => out.push(required(&storage_path, "")),
        Some(v) => {
            if let Some(q) = qty(v) {
                // ValidateResourceQuantityValue adds nothing for a positive storage quantity.
                positive_quantity(&q, &storage_path, out);
            }
        }
    }
    if let Some(sc) = opt(spec, "storageClassName")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
    {
        class_name(sc, &child(path, "storageClassName"), out);
    }
    if let Some(m) = opt(spec, "volumeMode") {
        if !VOLUME_MODES.contains(&m.as_str().unwrap_or("")) {
            out.push(not_supported(&child(path, "volumeMode"), m, VOLUME_MODES));
        }
    }
    let ds = opt(spec, "dataSource");
    let dsr = opt(spec, "dataSourceRef");
    if let Some(ds) = ds {
        data_source(
            ds,
            &child(path, "dataSource"),
            opts.allow_invalid_api_group,
            false,
            out,
        );
    }
    if let Some(r) = dsr {
        data_source(
            r,
            &child(path, "dataSourceRef"),
            opts.allow_invalid_api_group,
            true,
            out,
        );
    }
    // kube's value here is the `*field.Path` of `dataSource`, whose fields are all unexported:
    // `json.Marshal` prints it as `{}`.
    if dsr.is_some_and(|r| !str_of(r, "namespace").is_empty()) {
        if ds.is_some() {
            out.push(invalid_shown(
                path,
                "{}",
                "may not be specified when dataSourceRef.namespace is specified",
            ));
        }
    } else if let (Some(ds), Some(r)) = (ds, dsr) {
        let same = opt(ds, "apiGroup") == opt(r, "apiGroup")
            && str_of(ds, "kind") == str_of(r, "kind")
            && str_of(ds, "name") == str_of(r, "name");
        if !same {
            out.push(invalid_shown(path, "{}", "must match dataSourceRef"));
        }
    }
    if let Some(vac) = opt(spec, VAC)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
    {
        class_name(vac, &child(path, VAC), out);
    }
}

/// `validateDataSource` / `validateDataSourceRef`.
fn data_source(
    ds: &Value,
    path: &str,
    allow_invalid_group: bool,
    is_ref: bool,
    out: &mut Vec<Cause>,
) {
    if str_of(ds, "name").is_empty() {
        out.push(required(&child(path, "name"), ""));
    }
    let kind = str_of(ds, "kind");
    if kind.is_empty() {
        out.push(required(&child(path, "kind"), ""));
    }
    let group = str_of(ds, "apiGroup");
    if group.is_empty() && kind != "PersistentVolumeClaim" {
        out.push(invalid_str(
            path,
            kind,
            "must be 'PersistentVolumeClaim' when referencing the default apiGroup",
        ));
    }
    if !group.is_empty() && !allow_invalid_group {
        dns_subdomain(group, &child(path, "apiGroup"), out);
    }
    if is_ref {
        let ns = str_of(ds, "namespace");
        if !ns.is_empty() {
            dns_label(ns, &child(path, "namespace"), out);
        }
    }
}

/// A claim spec as kube's semantic equality sees it: pointer fields set to `""` stay set,
/// quantities compare by value, empty resource lists equal absent ones.
fn claim_spec_norm(spec: &Value) -> Value {
    let mut v = norm(spec);
    if let Some(m) = v.as_object_mut() {
        for k in ["storageClassName", VAC, "volumeMode"] {
            if let Some(x) = opt(spec, k) {
                m.insert(k.to_owned(), x.clone());
            }
        }
        let mut drop_resources = false;
        if let Some(res) = m.get_mut("resources").and_then(Value::as_object_mut) {
            for list in ["limits", "requests"] {
                let mut empty = false;
                if let Some(q) = res.get_mut(list).and_then(Value::as_object_mut) {
                    for x in q.values_mut() {
                        if let Some(n) = qty(x) {
                            *x = Value::String(n.nano.to_string());
                        }
                    }
                    empty = q.is_empty();
                }
                if empty {
                    res.remove(list);
                }
            }
            drop_resources = res.is_empty();
        }
        if drop_resources {
            m.remove("resources");
        }
    }
    v
}

/// The update checks of `ValidatePersistentVolumeClaimUpdate` (after its own
/// `ValidatePersistentVolumeClaim`). `spec` and `old_spec` are as the strategy prepared them.
fn claim_update(obj: &Value, spec: &Value, old: &Value, old_spec: &Value, out: &mut Vec<Cause>) {
    let mut n = spec.clone();
    let mut o = old_spec.clone();
    // The volume binder sets volumeName once.
    if str_of(old_spec, "volumeName").is_empty() {
        set_or_remove(&mut o, "volumeName", spec.get("volumeName"));
    }
    let old_ann = annotation(old, BETA_STORAGE_CLASS);
    let new_ann = annotation(obj, BETA_STORAGE_CLASS);
    let old_sc = opt(old_spec, "storageClassName").map(|v| v.as_str().unwrap_or(""));
    let new_sc = opt(spec, "storageClassName").map(|v| v.as_str().unwrap_or(""));
    // validateStorageClassUpgradeFromAnnotation
    let from_annotation = old_ann.is_some()
        && old_sc.is_none()
        && new_sc.is_some_and(|n| Some(n) == old_ann)
        && new_ann.is_none_or(|a| Some(a) == old_ann);
    if from_annotation {
        set_or_remove(&mut n, "storageClassName", None);
    } else {
        let (nv, ov) = (new_ann.unwrap_or(""), old_ann.unwrap_or(""));
        if nv != ov {
            out.push(invalid_str(
                &format!("metadata.annotations.{BETA_STORAGE_CLASS}"),
                nv,
                "field is immutable",
            ));
        }
        // validateStorageClassUpgradeFromNil
        let from_nil =
            new_sc.is_some() && old_sc.is_none() && old_ann.is_none_or(|a| new_sc == Some(a));
        if from_nil {
            set_or_remove(&mut n, "storageClassName", None);
        }
    }
    // The strategy keeps the stored status, so the stored phase decides.
    let bound = old.pointer("/status/phase").and_then(Value::as_str) == Some("Bound");
    if bound {
        let old_storage = old_spec
            .pointer("/resources/requests/storage")
            .cloned()
            .unwrap_or_else(|| s("0"));
        if let Some(m) = n
            .pointer_mut("/resources/requests")
            .and_then(Value::as_object_mut)
        {
            m.insert("storage".into(), old_storage);
        }
        if opt(&n, VAC).is_some() {
            set_or_remove(&mut n, VAC, o.get(VAC));
        }
    }
    let (nn, on) = (claim_spec_norm(&n), claim_spec_norm(&o));
    if nn != on {
        out.push(forbidden(
            "spec",
            &format!(
                "spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims\n{}",
                go_diff("core.PersistentVolumeClaimSpec", &on, &nn)
            ),
        ));
    }
    let new_size = nano_at(spec, "/resources/requests/storage");
    let old_size = nano_at(old_spec, "/resources/requests/storage");
    let status_size = nano_at(old, "/status/capacity/storage");
    // RecoverVolumeExpansionFailure (GA in 1.34): a request may shrink, but not to the capacity
    // the claim already has.
    if new_size < old_size && new_size <= status_size {
        out.push(forbidden(
            "spec.resources.requests.storage",
            "field can not be less than status.capacity",
        ));
    }
    immutable(
        opt(spec, "volumeMode"),
        opt(old_spec, "volumeMode"),
        "volumeMode",
        out,
    );
    let (ov, nv) = (opt(old_spec, VAC), opt(spec, VAC));
    if ov.is_some() && ov != nv {
        match nv {
            None => out.push(forbidden(
                "spec.volumeAttributesClassName",
                "update from non-nil value to nil is forbidden",
            )),
            Some(v) if v.as_str() == Some("") => out.push(forbidden(
                "spec.volumeAttributesClassName",
                "update from non-nil value to an empty string is forbidden",
            )),
            Some(_) => {}
        }
    }
}

const RESIZE_STATUSES: &[&str] = &[
    "ControllerResizeInProgress",
    "ControllerResizeInfeasible",
    "NodeResizeInProgress",
    "NodeResizeInfeasible",
    "NodeResizePending",
];

/// `ValidatePersistentVolumeClaimStatusUpdate` (the status strategy keeps the stored spec).
fn persistent_volume_claim_status(obj: &Value, old: &Value) -> Vec<Cause> {
    let mut out = Vec::new();
    let spec = old.get("spec").unwrap_or(&NULL);
    if items(spec, "accessModes").is_empty() {
        out.push(required("Spec.accessModes", ""));
    }
    let status = obj.get("status").unwrap_or(&NULL);
    for (r, q) in sorted(status.get("capacity")) {
        if let Some(q) = qty(q) {
            basic_resource(&q, &key("status.capacity", r), &mut out);
        }
    }
    // RecoverVolumeExpansionFailure is GA (locked on) in 1.34.
    let rs_path = "status.allocatedResourceStatus";
    for (k, v) in sorted(status.get("allocatedResourceStatuses")) {
        claim_resource_key(k, rs_path, &mut out);
        if !RESIZE_STATUSES.contains(&v.as_str().unwrap_or("")) {
            out.push(not_supported(rs_path, &s(k), RESIZE_STATUSES));
        }
    }
    let alloc = "status.allocatedResources";
    for (r, q) in sorted(status.get("allocatedResources")) {
        let mut errs = Vec::new();
        claim_resource_key(r, alloc, &mut errs);
        if !errs.is_empty() {
            out.extend(errs);
            continue;
        }
        let Some(q) = qty(q) else {
            continue;
        };
        let p = key(alloc, r);
        let mut errs = Vec::new();
        basic_resource(&q, &p, &mut errs);
        if errs.is_empty() {
            nonnegative_quantity(&q, &p, &mut out);
        } else {
            out.extend(errs);
        }
    }
    out
}

/// `validatePersistentVolumeClaimResourceKey`.
fn claim_resource_key(value: &str, path: &str, out: &mut Vec<Cause>) {
    let msgs = qualified_name(value);
    if !msgs.is_empty() {
        for msg in msgs {
            out.push(invalid_str(path, value, &msg));
        }
        return;
    }
    let native = !value.contains('/') || value.contains("kubernetes.io/");
    if native && value != "storage" {
        out.push(not_supported(path, &s(value), &["storage"]));
    }
}

// ---- PersistentVolumes ----

/// `PersistentVolumeSpecValidationOptions`.
struct PvOpts {
    enable_volume_attributes_class: bool,
    allow_invalid_label_value: bool,
}

const RECLAIM_POLICIES: &[&str] = &["Delete", "Recycle", "Retain"];
const MOUNT_OPTIONS: &str = "volume.beta.kubernetes.io/mount-options";

/// The `PersistentVolumeSource` fields of a PersistentVolume's spec.
const PV_SOURCES: &[&str] = &[
    "gcePersistentDisk",
    "awsElasticBlockStore",
    "hostPath",
    "glusterfs",
    "nfs",
    "rbd",
    "iscsi",
    "cinder",
    "cephfs",
    "fc",
    "flocker",
    "flexVolume",
    "azureFile",
    "vsphereVolume",
    "quobyte",
    "azureDisk",
    "photonPersistentDisk",
    "portworxVolume",
    "scaleIO",
    "local",
    "storageos",
    "csi",
];

/// The sources that take mount options (`checkMountOption` of `pkg/volume/validation`).
const MOUNT_OPTION_SOURCES: &[&str] = &[
    "gcePersistentDisk",
    "awsElasticBlockStore",
    "glusterfs",
    "nfs",
    "rbd",
    "quobyte",
    "iscsi",
    "cinder",
    "cephfs",
    "azureFile",
    "vsphereVolume",
    "azureDisk",
    "photonPersistentDisk",
];

/// The strategy's PersistentVolume validation: `ValidatePersistentVolume` and
/// `volumevalidation.ValidatePersistentVolume` on create; on update those, then
/// `ValidatePersistentVolumeUpdate`.
fn persistent_volume(obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    // ValidationOptionsForPersistentVolume: VolumeAttributesClass is on; an invalid label value
    // already stored in the required node affinity may stay.
    let opts = PvOpts {
        enable_volume_attributes_class: true,
        allow_invalid_label_value: old
            .is_some_and(|o| has_invalid_label_value(o.pointer("/spec/nodeAffinity/required"))),
    };
    let name = obj
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    let spec = obj.get("spec").unwrap_or(&NULL);
    let mut out = Vec::new();
    pv_spec(spec, name, false, "spec", &opts, &mut out);
    mount_options(obj, spec, &mut out);
    if let Some(old) = old {
        // ValidatePersistentVolumeUpdate validates the volume again.
        pv_spec(spec, name, false, "spec", &opts, &mut out);
        pv_update(spec, old.get("spec").unwrap_or(&NULL), &mut out);
    }
    out
}

/// `volumevalidation.ValidatePersistentVolume` (`checkMountOption`).
fn mount_options(obj: &Value, spec: &Value, out: &mut Vec<Cause>) {
    if MOUNT_OPTION_SOURCES.iter().any(|k| opt(spec, k).is_some()) {
        return;
    }
    let set = obj
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(MOUNT_OPTIONS))
        .is_some();
    if set {
        out.push(forbidden(
            &format!("metadata.annotations.{MOUNT_OPTIONS}"),
            "may not specify mount options for this volume type",
        ));
    }
}

/// The source `key` of `spec` when set, counted as kube counts volume types: a second one is
/// refused (`forbid` is the name kube gives it then).
fn take<'a>(
    spec: &'a Value,
    key: &str,
    forbid: &str,
    path: &str,
    n: &mut usize,
    out: &mut Vec<Cause>,
) -> Option<&'a Value> {
    let v = opt(spec, key)?;
    if *n > 0 {
        out.push(forbidden(
            &child(path, forbid),
            "may not specify more than 1 volume type",
        ));
        return None;
    }
    *n += 1;
    Some(v)
}

/// `path.Clean(p) == "/"`.
fn is_root(p: &str) -> bool {
    p.starts_with('/') && p.split('/').all(|s| matches!(s, "" | "." | ".."))
}

/// `ValidatePersistentVolumeSpec` (`inline` for a VolumeAttachment's `inlineVolumeSpec`).
fn pv_spec(
    spec: &Value,
    pv_name: &str,
    inline: bool,
    path: &str,
    opts: &PvOpts,
    out: &mut Vec<Cause>,
) {
    const INLINE: &str = "may not be specified in the context of inline volumes";
    let p = |name: &str| child(path, name);
    if inline {
        if opt(spec, "claimRef").is_some() {
            out.push(forbidden(&p("claimRef"), INLINE));
        }
        if map_len(spec.get("capacity")) != 0 {
            out.push(forbidden(&p("capacity"), INLINE));
        }
        if opt(spec, "csi").is_none() {
            out.push(required(
                &p("csi"),
                "has to be specified in the context of inline volumes",
            ));
        }
    }
    let modes = items(spec, "accessModes");
    if modes.is_empty() {
        out.push(required(&p("accessModes"), ""));
    }
    access_modes(modes, &p("accessModes"), out);
    if !inline {
        let cap = opt(spec, "capacity");
        let count = map_len(cap);
        if count == 0 {
            out.push(required(&p("capacity"), ""));
        }
        let has_storage = cap.and_then(|c| c.get("storage")).is_some();
        if !has_storage || count > 1 {
            // kube reports the `ResourceList`: a map, its keys sorted (`null` when nil).
            out.push(not_supported_shown(
                &p("capacity"),
                &json_opt(cap),
                &["storage"],
            ));
        }
        let cap_path = p("capacity");
        for (r, q) in sorted(cap) {
            if let Some(q) = qty(q) {
                let kp = key(&cap_path, r);
                basic_resource(&q, &kp, out);
                positive_quantity(&q, &kp, out);
            }
        }
    }
    let policy = str_of(spec, "persistentVolumeReclaimPolicy");
    if !policy.is_empty() {
        if inline {
            if policy != "Retain" {
                out.push(forbidden(
                    &p("persistentVolumeReclaimPolicy"),
                    "may only be Retain in the context of inline volumes",
                ));
            }
        } else if !RECLAIM_POLICIES.contains(&policy) {
            out.push(not_supported(
                &p("persistentVolumeReclaimPolicy"),
                &s(policy),
                RECLAIM_POLICIES,
            ));
        }
    }
    let mut affinity = false;
    if let Some(na) = opt(spec, "nodeAffinity") {
        if inline {
            out.push(forbidden(&p("nodeAffinity"), INLINE));
        } else {
            // validateVolumeNodeAffinity
            affinity = true;
            let rp = child(&p("nodeAffinity"), "required");
            match opt(na, "required") {
                Some(r) => node_selector(r, opts.allow_invalid_label_value, &rp, out),
                None => out.push(required(&rp, "must specify required node constraints")),
            }
        }
    }
    let mut n = 0usize;
    if let Some(v) = take(spec, "hostPath", "hostPath", path, &mut n, out) {
        host_path(v, &p("hostPath"), out);
    }
    if let Some(v) = take(
        spec,
        "gcePersistentDisk",
        "gcePersistentDisk",
        path,
        &mut n,
        out,
    ) {
        // kube names this source `persistentDisk` in its paths.
        partitioned(v, "pdName", &p("persistentDisk"), out);
    }
    if let Some(v) = take(
        spec,
        "awsElasticBlockStore",
        "awsElasticBlockStore",
        path,
        &mut n,
        out,
    ) {
        partitioned(v, "volumeID", &p("awsElasticBlockStore"), out);
    }
    if let Some(v) = take(spec, "glusterfs", "glusterfs", path, &mut n, out) {
        glusterfs(v, &p("glusterfs"), out);
    }
    if let Some(v) = take(spec, "flocker", "flocker", path, &mut n, out) {
        flocker(v, &p("flocker"), out);
    }
    if let Some(v) = take(spec, "nfs", "nfs", path, &mut n, out) {
        nfs(v, &p("nfs"), out);
    }
    if let Some(v) = take(spec, "rbd", "rbd", path, &mut n, out) {
        let rp = p("rbd");
        if items(v, "monitors").is_empty() {
            out.push(required(&child(&rp, "monitors"), ""));
        }
        need(v, "image", &rp, out);
    }
    if let Some(v) = take(spec, "quobyte", "quobyte", path, &mut n, out) {
        quobyte(v, &p("quobyte"), out);
    }
    if let Some(v) = take(spec, "cephfs", "cephFS", path, &mut n, out) {
        if items(v, "monitors").is_empty() {
            out.push(required(&child(&p("cephfs"), "monitors"), ""));
        }
    }
    if let Some(v) = take(spec, "iscsi", "iscsi", path, &mut n, out) {
        iscsi(v, pv_name, &p("iscsi"), out);
    }
    if let Some(v) = take(spec, "cinder", "cinder", path, &mut n, out) {
        let cp = p("cinder");
        need(v, "volumeID", &cp, out);
        secret_ref_fields(v, &cp, true, out);
    }
    if let Some(v) = take(spec, "fc", "fc", path, &mut n, out) {
        fc(v, &p("fc"), out);
    }
    // kube counts a flexVolume without refusing a second source for it.
    if let Some(v) = opt(spec, "flexVolume") {
        n += 1;
        flex(v, &p("flexVolume"), out);
    }
    if let Some(v) = take(spec, "azureFile", "azureFile", path, &mut n, out) {
        let ap = p("azureFile");
        need(v, "secretName", &ap, out);
        need(v, "shareName", &ap, out);
        if opt(v, "secretNamespace").is_some() && str_of(v, "secretNamespace").is_empty() {
            out.push(required(&child(&ap, "secretNamespace"), ""));
        }
    }
    if let Some(v) = take(spec, "vsphereVolume", "vsphereVolume", path, &mut n, out) {
        need(v, "volumePath", &p("vsphereVolume"), out);
    }
    if let Some(v) = take(
        spec,
        "photonPersistentDisk",
        "photonPersistentDisk",
        path,
        &mut n,
        out,
    ) {
        need(v, "pdID", &p("photonPersistentDisk"), out);
    }
    if let Some(v) = take(spec, "portworxVolume", "portworxVolume", path, &mut n, out) {
        need(v, "volumeID", &p("portworxVolume"), out);
    }
    if let Some(v) = take(spec, "azureDisk", "azureDisk", path, &mut n, out) {
        azure_disk(v, &p("azureDisk"), out);
    }
    if let Some(v) = take(spec, "scaleIO", "scaleIO", path, &mut n, out) {
        let sp = p("scaleIO");
        for f in ["gateway", "system", "volumeName"] {
            need(v, f, &sp, out);
        }
    }
    if let Some(v) = take(spec, "local", "local", path, &mut n, out) {
        let lp = p("local");
        let local_path = str_of(v, "path");
        if local_path.is_empty() {
            out.push(required(&child(&lp, "path"), ""));
        } else {
            no_backsteps(local_path, &child(&lp, "path"), out);
        }
        if !affinity {
            out.push(required(
                &p("nodeAffinity"),
                "Local volume requires node affinity",
            ));
        }
    }
    if let Some(v) = take(spec, "storageos", "storageos", path, &mut n, out) {
        storageos(v, &p("storageos"), out);
    }
    if let Some(v) = take(spec, "csi", "csi", path, &mut n, out) {
        csi(v, &p("csi"), out);
    }
    if n == 0 {
        out.push(required(path, "must specify a volume type"));
    }
    if let Some(hp) = opt(spec, "hostPath") {
        if is_root(str_of(hp, "path")) && policy == "Recycle" {
            out.push(forbidden(
                &p("persistentVolumeReclaimPolicy"),
                "may not be 'recycle' for a hostPath mount of '/'",
            ));
        }
    }
    let sc = str_of(spec, "storageClassName");
    if !sc.is_empty() {
        if inline {
            out.push(forbidden(&p("storageClassName"), INLINE));
        } else {
            class_name(sc, &p("storageClassName"), out);
        }
    }
    if let Some(m) = opt(spec, "volumeMode") {
        let mode = m.as_str().unwrap_or("");
        if inline {
            if mode != "Filesystem" {
                out.push(forbidden(
                    &p("volumeMode"),
                    "may not specify volumeMode other than Filesystem in the context of inline volumes",
                ));
            }
        } else if !VOLUME_MODES.contains(&mode) {
            out.push(not_supported(&p("volumeMode"), m, VOLUME_MODES));
        }
    }
    if opts.enable_volume_attributes_class {
        if let Some(vac) = opt(spec, VAC) {
            let v = vac.as_str().unwrap_or("");
            if v.is_empty() {
                out.push(required(&p(VAC), "an empty string is disallowed"));
            } else {
                class_name(v, &p(VAC), out);
            }
            if opt(spec, "csi").is_none() {
                out.push(required(
                    &p("csi"),
                    "has to be specified when using volumeAttributesClassName",
                ));
            }
        }
    }
}

/// `Required` for the string field `name` of `v` when empty.
fn need(v: &Value, name: &str, path: &str, out: &mut Vec<Cause>) {
    if str_of(v, name).is_empty() {
        out.push(required(&child(path, name), ""));
    }
}

/// `validateHostPathVolumeSource`.
fn host_path(v: &Value, p: &str, out: &mut Vec<Cause>) {
    const TYPES: &[&str] = &[
        "",
        "BlockDevice",
        "CharDevice",
        "Directory",
        "DirectoryOrCreate",
        "File",
        "FileOrCreate",
        "Socket",
    ];
    let path = str_of(v, "path");
    let pp = child(p, "path");
    if path.is_empty() {
        out.push(required(&pp, ""));
        return;
    }
    no_backsteps(path, &pp, out);
    if let Some(t) = opt(v, "type") {
        if !TYPES.contains(&t.as_str().unwrap_or("")) {
            out.push(not_supported(&child(p, "type"), t, TYPES));
        }
    }
}

/// `validateGCEPersistentDiskVolumeSource` / `validateAWSElasticBlockStoreVolumeSource`.
fn partitioned(v: &Value, id: &str, p: &str, out: &mut Vec<Cause>) {
    need(v, id, p, out);
    let partition = int_of(v, "partition");
    if !(0..=255).contains(&partition) {
        out.push(invalid(
            &child(p, "partition"),
            &json!(partition),
            "must be between 1 and 255, inclusive",
        ));
    }
}

/// `validateGlusterfsPersistentVolumeSource`.
fn glusterfs(v: &Value, p: &str, out: &mut Vec<Cause>) {
    need(v, "endpoints", p, out);
    need(v, "path", p, out);
    if let Some(ns) = opt(v, "endpointsNamespace") {
        let ns = ns.as_str().unwrap_or("");
        let np = child(p, "endpointsNamespace");
        if ns.is_empty() {
            out.push(invalid_str(
                &np,
                ns,
                "if the endpointnamespace is set, it must be a valid namespace name",
            ));
        } else {
            dns_label(ns, &np, out);
        }
    }
}

/// `validateFlockerVolumeSource`.
fn flocker(v: &Value, p: &str, out: &mut Vec<Cause>) {
    let (name, uuid) = (str_of(v, "datasetName"), str_of(v, "datasetUUID"));
    if name.is_empty() && uuid.is_empty() {
        out.push(required(
            p,
            "one of datasetName and datasetUUID is required",
        ));
    }
    if !name.is_empty() && !uuid.is_empty() {
        out.push(invalid_str(
            p,
            "resource",
            "datasetName and datasetUUID can not be specified simultaneously",
        ));
    }
    if name.contains('/') {
        out.push(invalid_str(
            &child(p, "datasetName"),
            name,
            "must not contain '/'",
        ));
    }
}

/// `validateNFSVolumeSource`.
fn nfs(v: &Value, p: &str, out: &mut Vec<Cause>) {
    need(v, "server", p, out);
    need(v, "path", p, out);
    let path = str_of(v, "path");
    if !path.starts_with('/') {
        out.push(invalid_str(
            &child(p, "path"),
            path,
            "must be an absolute path",
        ));
    }
}

/// `validateQuobyteVolumeSource`.
fn quobyte(v: &Value, p: &str, out: &mut Vec<Cause>) {
    const PAIRS: &str = "must be a host:port pair or multiple pairs separated by commas";
    let registry = str_of(v, "registry");
    if registry.is_empty() {
        out.push(required(&child(p, "registry"), PAIRS));
    } else if str_of(v, "tenant").len() >= 65 {
        out.push(required(
            &child(p, "tenant"),
            "must be a UUID and may not exceed a length of 64 characters",
        ));
    } else {
        for pair in registry.split(',') {
            if !split_host_port_ok(pair) {
                out.push(invalid_str(&child(p, "registry"), registry, PAIRS));
            }
        }
    }
    need(v, "volume", p, out);
}

/// Whether Go's `net.SplitHostPort` accepts `hp`.
fn split_host_port_ok(hp: &str) -> bool {
    let Some(i) = hp.rfind(':') else {
        return false;
    };
    let (j, k) = if hp.starts_with('[') {
        let Some(end) = hp.find(']') else {
            return false;
        };
        // The first ']' must come just before the last ':'.
        if end + 1 != i {
            return false;
        }
        (1, end + 1)
    } else {
        if hp[..i].contains(':') {
            return false;
        }
        (0, 0)
    };
    !hp[j..].contains('[') && !hp[k..].contains(']')
}

/// `validateISCSIPersistentVolumeSource`.
fn iscsi(v: &Value, pv_name: &str, p: &str, out: &mut Vec<Cause>) {
    let portal = str_of(v, "targetPortal");
    if portal.is_empty() {
        out.push(required(&child(p, "targetPortal"), ""));
    }
    let initiator = opt(v, "initiatorName");
    if initiator.is_some() && pv_name.len() + 1 + portal.len() > 64 {
        out.push(invalid_str(
            &child(p, "targetportal"),
            portal,
            "Total length of <volume name>:<iscsi.targetPortal> must be under 64 characters if iscsi.initiatorName is specified.",
        ));
    }
    let iqn = str_of(v, "iqn");
    if iqn.is_empty() {
        out.push(required(&child(p, "iqn"), ""));
    } else if !super::pod::iscsi_known(iqn) || !super::pod::iscsi_format_ok(iqn) {
        out.push(invalid_str(&child(p, "iqn"), iqn, "must be valid format"));
    }
    let lun = int_of(v, "lun");
    if !(0..=255).contains(&lun) {
        out.push(invalid(
            &child(p, "lun"),
            &json!(lun),
            "must be between 0 and 255, inclusive",
        ));
    }
    if (bool_of(v, "chapAuthDiscovery") || bool_of(v, "chapAuthSession"))
        && opt(v, "secretRef").is_none()
    {
        out.push(required(&child(p, "secretRef"), ""));
    }
    if let Some(sr) = opt(v, "secretRef") {
        if str_of(sr, "name").is_empty() {
            out.push(required(&child(&child(p, "secretRef"), "name"), ""));
        }
    }
    if let Some(init) = initiator {
        super::pod::iscsi_initiator(init.as_str().unwrap_or(""), p, out);
    }
}

/// The `secretRef` name (and, for PersistentVolume sources, namespace) a source requires when set.
fn secret_ref_fields(v: &Value, p: &str, namespace: bool, out: &mut Vec<Cause>) {
    if let Some(sr) = opt(v, "secretRef") {
        let sp = child(p, "secretRef");
        need(sr, "name", &sp, out);
        if namespace {
            need(sr, "namespace", &sp, out);
        }
    }
}

/// `validateFCVolumeSource`.
fn fc(v: &Value, p: &str, out: &mut Vec<Cause>) {
    let wwns = items(v, "targetWWNs");
    let wwids = items(v, "wwids");
    let wp = child(p, "targetWWNs");
    if wwns.is_empty() && wwids.is_empty() {
        out.push(required(
            &wp,
            "must specify either targetWWNs or wwids, but not both",
        ));
    }
    if !wwns.is_empty() && !wwids.is_empty() {
        out.push(invalid(
            &wp,
            &Value::Array(wwns.to_vec()),
            "targetWWNs and wwids can not be specified simultaneously",
        ));
    }
    if !wwns.is_empty() {
        match opt(v, "lun") {
            None => out.push(required(
                &child(p, "lun"),
                "lun is required if targetWWNs is specified",
            )),
            Some(l) => {
                let l = l.as_i64().unwrap_or(0);
                if !(0..=255).contains(&l) {
                    out.push(invalid(
                        &child(p, "lun"),
                        &json!(l),
                        "must be between 0 and 255, inclusive",
                    ));
                }
            }
        }
    }
}

/// `validateFlexPersistentVolumeSource`.
fn flex(v: &Value, p: &str, out: &mut Vec<Cause>) {
    need(v, "driver", p, out);
    let op = child(p, "options");
    for (k, _) in sorted(v.get("options")) {
        let namespace = k.split_once('/').map_or(k.as_str(), |(ns, _)| ns);
        let normalized = format!(".{}", namespace.to_lowercase());
        if normalized.ends_with(".kubernetes.io") || normalized.ends_with(".k8s.io") {
            out.push(invalid_str(
                &key(&op, k),
                k,
                "kubernetes.io and k8s.io namespaces are reserved",
            ));
        }
    }
}

/// `validateAzureDisk`.
fn azure_disk(v: &Value, p: &str, out: &mut Vec<Cause>) {
    const CACHING: &[&str] = &["None", "ReadOnly", "ReadWrite"];
    const KINDS: &[&str] = &["Dedicated", "Managed", "Shared"];
    need(v, "diskName", p, out);
    need(v, "diskURI", p, out);
    if let Some(c) = opt(v, "cachingMode") {
        if !CACHING.contains(&c.as_str().unwrap_or("")) {
            out.push(not_supported(&child(p, "cachingMode"), c, CACHING));
        }
    }
    // kube's defaulting (SetDefaults_AzureDiskVolumeSource) sets an absent kind to Shared.
    let kind = opt(v, "kind").map_or("Shared", |k| k.as_str().unwrap_or(""));
    if !KINDS.contains(&kind) {
        out.push(not_supported(&child(p, "kind"), &s(kind), KINDS));
    }
    let uri = str_of(v, "diskURI");
    let up = child(p, "diskURI");
    if kind == "Managed" && !uri.starts_with("/subscriptions/") {
        out.push(not_supported(
            &up,
            &s(uri),
            &["/subscriptions/{sub-id}/resourcegroups/{group-name}/providers/microsoft.compute/disks/{disk-id}"],
        ));
    }
    if kind != "Managed" && !uri.starts_with("https://") {
        out.push(not_supported(
            &up,
            &s(uri),
            &["https://{account-name}.blob.core.windows.net/{container-name}/{disk-name}.vhd"],
        ));
    }
}

/// `validateStorageOSPersistentVolumeSource`.
fn storageos(v: &Value, p: &str, out: &mut Vec<Cause>) {
    let name = str_of(v, "volumeName");
    if name.is_empty() {
        out.push(required(&child(p, "volumeName"), ""));
    } else {
        dns_label(name, &child(p, "volumeName"), out);
    }
    let ns = str_of(v, "volumeNamespace");
    if !ns.is_empty() {
        dns_label(ns, &child(p, "volumeNamespace"), out);
    }
    secret_ref_fields(v, p, true, out);
}

/// `validateCSIPersistentVolumeSource`.
fn csi(v: &Value, p: &str, out: &mut Vec<Cause>) {
    csi_driver_name(str_of(v, "driver"), &child(p, "driver"), out);
    need(v, "volumeHandle", p, out);
    for r in [
        "controllerPublishSecretRef",
        "controllerExpandSecretRef",
        "nodePublishSecretRef",
        "nodeExpandSecretRef",
    ] {
        if let Some(sr) = opt(v, r) {
            pv_secret_ref(sr, &child(p, r), out);
        }
    }
}

/// `validatePVSecretReference`.
fn pv_secret_ref(sr: &Value, p: &str, out: &mut Vec<Cause>) {
    let name = str_of(sr, "name");
    if name.is_empty() {
        out.push(required(&child(p, "name"), ""));
    } else {
        dns_subdomain(name, &child(p, "name"), out);
    }
    let ns = str_of(sr, "namespace");
    if ns.is_empty() {
        out.push(required(&child(p, "namespace"), ""));
    } else {
        dns_label(ns, &child(p, "namespace"), out);
    }
}

/// kube's `betaToGALabel`: a node-affinity key that may move to its GA name.
fn beta_to_ga(k: &str) -> Option<&'static str> {
    match k {
        "failure-domain.beta.kubernetes.io/zone" => Some("topology.kubernetes.io/zone"),
        "failure-domain.beta.kubernetes.io/region" => Some("topology.kubernetes.io/region"),
        "beta.kubernetes.io/os" => Some("kubernetes.io/os"),
        "beta.kubernetes.io/arch" => Some("kubernetes.io/arch"),
        "beta.kubernetes.io/instance-type" => Some("node.kubernetes.io/instance-type"),
        _ => None,
    }
}

/// `validatePvNodeAffinity`'s equality: the stored node affinity, with any requirement key the
/// update moves from its beta name to its GA name taken as moved.
fn node_affinity_eq(new: Option<&Value>, old: &Value) -> bool {
    let Some(new) = new else {
        return false;
    };
    let mut masked = old.clone();
    let new_terms = new
        .pointer("/required/nodeSelectorTerms")
        .and_then(Value::as_array);
    let old_terms = masked
        .pointer_mut("/required/nodeSelectorTerms")
        .and_then(Value::as_array_mut);
    if let (Some(nt), Some(ot)) = (new_terms, old_terms) {
        for (o_term, n_term) in ot.iter_mut().zip(nt) {
            for list in ["matchExpressions", "matchFields"] {
                let n_reqs = items(n_term, list);
                if let Some(o_reqs) = o_term.get_mut(list).and_then(Value::as_array_mut) {
                    for (o_req, n_req) in o_reqs.iter_mut().zip(n_reqs) {
                        let new_key = str_of(n_req, "key");
                        let old_key = str_of(o_req, "key").to_owned();
                        if old_key != new_key && beta_to_ga(&old_key) == Some(new_key) {
                            if let Some(m) = o_req.as_object_mut() {
                                m.insert("key".into(), s(new_key));
                            }
                        }
                    }
                }
            }
        }
    }
    norm(new) == norm(&masked)
}

/// The update checks of `ValidatePersistentVolumeUpdate` (after its own
/// `ValidatePersistentVolume`).
fn pv_update(spec: &Value, old_spec: &Value, out: &mut Vec<Cause>) {
    let source = |spec: &Value| -> Value {
        Value::Object(
            PV_SOURCES
                .iter()
                .filter_map(|k| opt(spec, k).map(|v| ((*k).to_owned(), v.clone())))
                .collect(),
        )
    };
    let mut new_src = source(spec);
    let old_src = source(old_spec);
    // A controllerExpandSecretRef may be added to a CSI volume that has none.
    let old_has_no_expand_ref =
        opt(old_spec, "csi").is_some_and(|c| opt(c, "controllerExpandSecretRef").is_none());
    if old_has_no_expand_ref {
        if let Some(c) = new_src.get_mut("csi").and_then(Value::as_object_mut) {
            c.remove("controllerExpandSecretRef");
        }
    }
    let (nn, on) = (norm(&new_src), norm(&old_src));
    if nn != on {
        out.push(forbidden(
            "spec.persistentvolumesource",
            &format!(
                "spec.persistentvolumesource is immutable after creation\n{}",
                go_diff("core.PersistentVolumeSource", &on, &nn)
            ),
        ));
    }
    immutable(
        opt(spec, "volumeMode"),
        opt(old_spec, "volumeMode"),
        "volumeMode",
        out,
    );
    if let Some(old_na) = opt(old_spec, "nodeAffinity") {
        let new_na = opt(spec, "nodeAffinity");
        if !node_affinity_eq(new_na, old_na) {
            // kube reports the `*core.VolumeNodeAffinity` (`null` when removed).
            let shown = new_na.map(|na| go_struct(Some(na), VOLUME_NODE_AFFINITY));
            out.push(invalid(
                "nodeAffinity",
                shown.as_ref().unwrap_or(&NULL),
                "field is immutable, except for updating from beta label to GA",
            ));
        }
    }
    if opt(old_spec, VAC).is_some() && opt(spec, VAC).is_none() {
        out.push(forbidden(
            "spec.volumeAttributesClassName",
            "update from non-nil value to nil is forbidden",
        ));
    }
}

// ---- StorageClasses ----

const SC_RECLAIM_POLICIES: &[&str] = &["Delete", "Retain"];
const BINDING_MODES: &[&str] = &["Immediate", "WaitForFirstConsumer"];

/// `ValidateStorageClass`; on update, then `ValidateStorageClassUpdate`.
fn storage_class(obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    let mut out = Vec::new();
    provisioner(str_of(obj, "provisioner"), "provisioner", &mut out);
    parameters(obj.get("parameters"), true, "parameters", &mut out);
    let policy = str_of(obj, "reclaimPolicy");
    if !policy.is_empty() && !SC_RECLAIM_POLICIES.contains(&policy) {
        out.push(not_supported(
            "reclaimPolicy",
            &s(policy),
            SC_RECLAIM_POLICIES,
        ));
    }
    match opt(obj, "volumeBindingMode") {
        None => out.push(required("volumeBindingMode", "")),
        Some(m) => {
            if !BINDING_MODES.contains(&m.as_str().unwrap_or("")) {
                out.push(not_supported("volumeBindingMode", m, BINDING_MODES));
            }
        }
    }
    allowed_topologies(
        items(obj, "allowedTopologies"),
        "allowedTopologies",
        &mut out,
    );
    if let Some(old) = old {
        if !params_eq(obj.get("parameters"), old.get("parameters")) {
            out.push(forbidden(
                "parameters",
                "updates to parameters are forbidden.",
            ));
        }
        if str_of(obj, "provisioner") != str_of(old, "provisioner") {
            out.push(forbidden(
                "provisioner",
                "updates to provisioner are forbidden.",
            ));
        }
        if str_of(obj, "reclaimPolicy") != str_of(old, "reclaimPolicy") {
            out.push(forbidden(
                "reclaimPolicy",
                "updates to reclaimPolicy are forbidden.",
            ));
        }
        immutable(
            opt(obj, "volumeBindingMode"),
            opt(old, "volumeBindingMode"),
            "volumeBindingMode",
            &mut out,
        );
    }
    out
}

/// `validateProvisioner` (a StorageClass's provisioner, a VolumeAttributesClass's driverName).
fn provisioner(p: &str, path: &str, out: &mut Vec<Cause>) {
    if p.is_empty() {
        out.push(required(path, ""));
    } else {
        // kube checks (and prints) the lower-cased name.
        label_name(&p.to_lowercase(), path, out);
    }
}

/// `validateParameters`.
fn parameters(params: Option<&Value>, allow_empty: bool, path: &str, out: &mut Vec<Cause>) {
    const MAX_LEN: usize = 512;
    const MAX_SIZE: usize = 256 * (1 << 10);
    let entries = sorted(params);
    if entries.len() > MAX_LEN {
        out.push(too_long(path, MAX_LEN));
        return;
    }
    let mut size = 0usize;
    for (k, v) in &entries {
        if k.is_empty() {
            out.push(invalid_str(path, k, "field can not be empty."));
        }
        size += k.len() + v.as_str().map_or(0, str::len);
    }
    if size > MAX_SIZE {
        out.push(too_long(path, MAX_SIZE));
    }
    if !allow_empty && entries.is_empty() {
        out.push(required(path, "must contain at least one key/value pair"));
    }
}

/// `reflect.DeepEqual` of two `map[string]string` parameters: a map sent empty is set, while a
/// stored one never is (kube's storage omits an empty map).
fn params_eq(new: Option<&Value>, old: Option<&Value>) -> bool {
    let n = new.filter(|v| !v.is_null());
    let o = old.filter(|v| !v.is_null() && v.as_object().is_none_or(|m| !m.is_empty()));
    n == o
}

/// `validateAllowedTopologies`.
fn allowed_topologies(terms: &[Value], path: &str, out: &mut Vec<Cause>) {
    if terms.is_empty() {
        return;
    }
    // kube's list starts with one nil map per term, which an empty term equals, and kube
    // reports a term once per equal term before it; turtles once per term (n² causes for n
    // equal terms would be a hostile list's size squared).
    let mut raw: std::collections::HashSet<BTreeMap<String, BTreeSet<String>>> =
        std::collections::HashSet::new();
    raw.insert(BTreeMap::new());
    for (i, term) in terms.iter().enumerate() {
        let ip = index(path, i);
        let expr_map = topology_selector_term(term, &ip, out);
        if !raw.insert(expr_map) {
            out.push(duplicate(&child(&ip, "matchLabelExpressions"), &s("")));
        }
    }
}

/// `ValidateTopologySelectorTerm`: the term's key -> values map, and its causes.
fn topology_selector_term(
    term: &Value,
    p: &str,
    out: &mut Vec<Cause>,
) -> BTreeMap<String, BTreeSet<String>> {
    let mut exprs = BTreeMap::new();
    let ep = child(p, "matchLabelExpressions");
    for (j, rq) in items(term, "matchLabelExpressions").iter().enumerate() {
        let ip = index(&ep, j);
        let vp = child(&ip, "values");
        let values = items(rq, "values");
        if values.is_empty() {
            out.push(required(&vp, ""));
        }
        let mut set = BTreeSet::new();
        for (k, v) in values.iter().enumerate() {
            let v = v.as_str().unwrap_or("");
            if set.contains(v) {
                out.push(duplicate(&index(&vp, k), &s(v)));
            }
            set.insert(v.to_owned());
        }
        let k = str_of(rq, "key");
        label_name(k, &child(&ip, "key"), out);
        if exprs.contains_key(k) {
            out.push(duplicate(&child(&ip, "key"), &s(k)));
        }
        exprs.insert(k.to_owned(), set);
    }
    exprs
}

// ---- CSIDrivers ----

/// `ValidateCSIDriver` on create, `ValidateCSIDriverUpdate` on update.
fn csi_driver(obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    let spec = obj.get("spec").unwrap_or(&NULL);
    let mut out = Vec::new();
    csi_driver_spec(spec, "spec", &mut out);
    if let Some(old) = old {
        let os = old.get("spec").unwrap_or(&NULL);
        immutable(
            opt(spec, "attachRequired"),
            opt(os, "attachRequired"),
            "spec.attachedRequired",
            &mut out,
        );
        if !sem_eq(
            spec.get("volumeLifecycleModes"),
            os.get("volumeLifecycleModes"),
        ) {
            // kube reports the `[]storage.VolumeLifecycleMode` (`null` when nil).
            out.push(invalid(
                "spec.volumeLifecycleModes",
                opt(spec, "volumeLifecycleModes").unwrap_or(&NULL),
                "field is immutable",
            ));
        }
    }
    out
}

/// `validateCSIDriverSpec`.
fn csi_driver_spec(spec: &Value, p: &str, out: &mut Vec<Cause>) {
    const FS_GROUP_POLICIES: &[&str] = &["File", "None", "ReadWriteOnceWithFSType"];
    const LIFECYCLE_MODES: &[&str] = &["Persistent", "Ephemeral"];
    // kube's path says `attachedRequired`.
    for (field, path) in [
        ("attachRequired", "attachedRequired"),
        ("podInfoOnMount", "podInfoOnMount"),
        ("storageCapacity", "storageCapacity"),
    ] {
        if opt(spec, field).is_none() {
            out.push(required(&child(p, path), ""));
        }
    }
    if let Some(f) = opt(spec, "fsGroupPolicy") {
        if !FS_GROUP_POLICIES.contains(&f.as_str().unwrap_or("")) {
            out.push(not_supported(
                &child(p, "fsGroupPolicy"),
                f,
                FS_GROUP_POLICIES,
            ));
        }
    }
    let tp = child(p, "tokenRequests");
    let mut audiences = BTreeSet::new();
    for (i, tr) in items(spec, "tokenRequests").iter().enumerate() {
        let ip = index(&tp, i);
        let audience = str_of(tr, "audience");
        if !audiences.insert(audience) {
            out.push(duplicate(&child(&ip, "audience"), &s(audience)));
            continue;
        }
        if let Some(e) = opt(tr, "expirationSeconds").and_then(Value::as_i64) {
            let ep = child(&ip, "expirationSeconds");
            if e < 600 {
                out.push(invalid(
                    &ep,
                    &json!(e),
                    "may not specify a duration less than 10 minutes",
                ));
            }
            if e > 1 << 32 {
                out.push(invalid(
                    &ep,
                    &json!(e),
                    "may not specify a duration larger than 2^32 seconds",
                ));
            }
        }
    }
    for m in items(spec, "volumeLifecycleModes") {
        if !LIFECYCLE_MODES.contains(&m.as_str().unwrap_or("")) {
            out.push(not_supported(
                &child(p, "volumeLifecycleModes"),
                m,
                LIFECYCLE_MODES,
            ));
        }
    }
    // SELinuxMountReadWriteOncePod is on.
    if opt(spec, "seLinuxMount").is_none() {
        out.push(required(&child(p, "seLinuxMount"), ""));
    }
    if let Some(n) = opt(spec, "nodeAllocatableUpdatePeriodSeconds").and_then(Value::as_i64) {
        if n < 10 {
            out.push(invalid(
                &child(p, "nodeAllocatableUpdatePeriodSeconds"),
                &json!(n),
                "must be greater than or equal to 10 seconds",
            ));
        }
    }
}

// ---- VolumeAttachments ----

/// `ValidateVolumeAttachment` and `ValidateVolumeAttachmentV1` on create (whose status the
/// strategy clears); on update `ValidateVolumeAttachment` then `ValidateVolumeAttachmentUpdate`
/// (the strategy keeps the stored status).
fn volume_attachment(obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    let spec = obj.get("spec").unwrap_or(&NULL);
    let mut out = Vec::new();
    match old {
        None => {
            volume_attachment_object(spec, &NULL, &mut out);
            volume_attachment_v1(spec, &mut out);
        }
        Some(old) => {
            let status = old.get("status").unwrap_or(&NULL);
            volume_attachment_object(spec, status, &mut out);
            volume_attachment_object(spec, status, &mut out);
            let old_spec = old.get("spec").unwrap_or(&NULL);
            if norm(spec) != norm(old_spec) {
                // kube reports the internal `storage.VolumeAttachmentSpec`.
                let shown = go_struct(Some(spec), VOLUME_ATTACHMENT_SPEC);
                out.push(invalid("spec", &shown, "field is immutable"));
            }
        }
    }
    out
}

/// A `/status` update: the status strategy restores the stored spec and runs the main
/// strategy's `ValidateUpdate` (`ValidateVolumeAttachment`, then `ValidateVolumeAttachmentUpdate`).
fn volume_attachment_status(obj: &Value, old: &Value) -> Vec<Cause> {
    let spec = old.get("spec").unwrap_or(&NULL);
    let status = obj.get("status").unwrap_or(&NULL);
    let mut out = Vec::new();
    volume_attachment_object(spec, status, &mut out);
    volume_attachment_object(spec, status, &mut out);
    out
}

/// `ValidateVolumeAttachment` (without metadata).
fn volume_attachment_object(spec: &Value, status: &Value, out: &mut Vec<Cause>) {
    const ONE_SOURCE: &str =
        "must specify exactly one of inlineVolumeSpec and persistentVolumeName";
    if str_of(spec, "attacher").is_empty() {
        out.push(required("spec.attacher", ""));
    }
    let src = spec.get("source").unwrap_or(&NULL);
    match (
        opt(src, "inlineVolumeSpec"),
        opt(src, "persistentVolumeName"),
    ) {
        (None, None) => out.push(required("spec.source", ONE_SOURCE)),
        (Some(_), Some(_)) => out.push(forbidden("spec.source", ONE_SOURCE)),
        (None, Some(name)) => {
            if name.as_str().unwrap_or("").is_empty() {
                out.push(required(
                    "spec.source.persistentVolumeName",
                    "must specify non empty persistentVolumeName",
                ));
            }
        }
        (Some(inline), None) => {
            let opts = PvOpts {
                enable_volume_attributes_class: false,
                allow_invalid_label_value: false,
            };
            pv_spec(inline, "", true, "spec.source.inlineVolumeSpec", &opts, out);
        }
    }
    dns_subdomain(str_of(spec, "nodeName"), "spec.nodeName", out);
    // validateVolumeAttachmentStatus
    const MAX_METADATA: usize = 256 * (1 << 10);
    let size: usize = sorted(status.get("attachmentMetadata"))
        .iter()
        .map(|(k, v)| k.len() + v.as_str().map_or(0, str::len))
        .sum();
    if size > MAX_METADATA {
        out.push(too_long("status.attachmentMetadata", MAX_METADATA));
    }
    for name in ["attachError", "detachError"] {
        if let Some(e) = opt(status, name) {
            let ep = child("status", name);
            if str_of(e, "message").len() > 1024 {
                // kube reports the metadata limit here.
                out.push(too_long(&child(&ep, "message"), MAX_METADATA));
            }
            if let Some(code) = opt(e, "errorCode").and_then(Value::as_i64) {
                if code < 0 {
                    out.push(invalid(
                        &child(&ep, "errorCode"),
                        &json!(code),
                        "must be between 0 and 2147483647, inclusive",
                    ));
                }
            }
        }
    }
}

/// `ValidateVolumeAttachmentV1`.
fn volume_attachment_v1(spec: &Value, out: &mut Vec<Cause>) {
    csi_driver_name(str_of(spec, "attacher"), "spec.attacher", out);
    if let Some(name) = spec
        .pointer("/source/persistentVolumeName")
        .filter(|v| !v.is_null())
    {
        dns_subdomain(
            name.as_str().unwrap_or(""),
            "spec.source.persistentVolumeName",
            out,
        );
    }
}

// ---- VolumeAttributesClasses ----

/// `ValidateVolumeAttributesClass`; on update `ValidateVolumeAttributesClassUpdate`.
fn volume_attributes_class(obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    let mut out = Vec::new();
    if let Some(old) = old {
        if str_of(obj, "driverName") != str_of(old, "driverName") {
            out.push(forbidden(
                "driverName",
                "updates to driverName are forbidden.",
            ));
        }
        if !params_eq(obj.get("parameters"), old.get("parameters")) {
            out.push(forbidden(
                "parameters",
                "updates to parameters are forbidden.",
            ));
        }
    }
    provisioner(str_of(obj, "driverName"), "driverName", &mut out);
    parameters(obj.get("parameters"), false, "parameters", &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::meta::{DNS1123_LABEL_MSG, DNS1123_SUBDOMAIN_MSG};

    fn strings(causes: &[Cause]) -> Vec<String> {
        causes.iter().map(ToString::to_string).collect()
    }

    fn create(group: &str, resource: &str, obj: &Value) -> Vec<String> {
        strings(&validate(group, resource, obj, None))
    }

    #[test]
    fn csi_nodes_as_kube_validates_them() {
        let node = |drivers: Value| json!({"spec": {"drivers": drivers}});
        let ok = node(json!([{"name": "ebs.csi.aws.com", "nodeID": "i-1",
            "topologyKeys": ["topology.ebs.csi.aws.com/zone"], "allocatable": {"count": 25}}]));
        assert!(create(STORAGE, "csinodes", &ok).is_empty());
        let bad = node(json!([
            {"name": "", "nodeID": "", "allocatable": {"count": -1}},
            {"name": "d", "nodeID": "n", "topologyKeys": ["a", "a", "b/c/d"]},
            {"name": "d", "nodeID": "x".repeat(257)}
        ]));
        let got = create(STORAGE, "csinodes", &bad);
        assert_eq!(got[0], "spec.drivers[0].name: Required value");
        assert_eq!(got[2], "spec.drivers[0].nodeID: Required value");
        assert_eq!(
            got[3],
            "spec.drivers[0].allocatable.count: Invalid value: -1: must be greater than or equal to 0"
        );
        assert!(got.contains(&"spec.drivers[1]: Duplicate value: \"a\"".to_owned()));
        assert!(got
            .iter()
            .any(|g| g.starts_with("spec.drivers[1]: Invalid value: \"b/c/d\": a qualified name")));
        assert!(got.contains(&"spec.drivers[2].name: Duplicate value: \"d\"".to_owned()));
        assert!(got
            .iter()
            .any(|g| g.starts_with("spec.drivers[2].nodeID: Invalid value:")
                && g.ends_with("must be 256 characters or less")));
        // A driver may not change; one may be added.
        let changed = node(json!([{"name": "ebs.csi.aws.com", "nodeID": "i-2",
            "topologyKeys": ["topology.ebs.csi.aws.com/zone"], "allocatable": {"count": 25}},
            {"name": "other", "nodeID": "n"}]));
        let got = update(STORAGE, "csinodes", &changed, &ok);
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!(
            got[0],
            "spec.drivers: Invalid value: {\"Name\":\"ebs.csi.aws.com\",\"NodeID\":\"i-2\",\"TopologyKeys\":[\"topology.ebs.csi.aws.com/zone\"],\"Allocatable\":{\"Count\":25}}: field is immutable"
        );
    }

    #[test]
    fn csi_storage_capacities_as_kube_validates_them() {
        let cap = json!({"storageClassName": "fast", "capacity": "10Gi",
            "nodeTopology": {"matchLabels": {"topology.kubernetes.io/zone": "a"}}});
        assert!(create(STORAGE, "csistoragecapacities", &cap).is_empty());
        let bad = json!({"storageClassName": "", "capacity": "-1", "maximumVolumeSize": "-5"});
        assert_eq!(
            create(STORAGE, "csistoragecapacities", &bad),
            [
                format!("storageClassName: Invalid value: \"\": {DNS1123_SUBDOMAIN_MSG}"),
                "capacity: Invalid value: \"-1\": must be greater than or equal to 0".to_owned()
            ]
        );
        let mut moved = cap.clone();
        moved["storageClassName"] = json!("slow");
        moved["capacity"] = json!("20Gi");
        assert_eq!(
            update(STORAGE, "csistoragecapacities", &moved, &cap),
            ["storageClassName: Invalid value: \"slow\": field is immutable"]
        );
    }

    fn update(group: &str, resource: &str, obj: &Value, old: &Value) -> Vec<String> {
        strings(&validate(group, resource, obj, Some(old)))
    }

    fn pvc() -> Value {
        json!({
            "metadata": {"name": "data", "namespace": "default"},
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": "1Gi"}},
                "volumeMode": "Filesystem"
            },
            "status": {"phase": "Pending"}
        })
    }

    fn bound_pvc() -> Value {
        let mut c = pvc();
        c["spec"]["volumeName"] = json!("pv-1");
        c["spec"]["storageClassName"] = json!("standard");
        c["status"] = json!({"phase": "Bound", "capacity": {"storage": "1Gi"}});
        c
    }

    #[test]
    fn claim_create_valid_and_required_fields() {
        assert!(create("", "persistentvolumeclaims", &pvc()).is_empty());
        assert_eq!(
            create("", "persistentvolumeclaims", &json!({"spec": {}})),
            vec![
                "spec.accessModes: Required value: at least 1 access mode is required",
                "spec.resources[storage]: Required value",
            ]
        );
    }

    #[test]
    fn claim_spec_values() {
        let mut c = pvc();
        c["spec"]["accessModes"] = json!(["ReadWriteOncePod", "ReadWriteOnce", "Bad"]);
        c["spec"]["resources"]["requests"]["storage"] = json!("0");
        c["spec"]["storageClassName"] = json!("Fast");
        c["spec"]["volumeMode"] = json!("Raw");
        assert_eq!(
            create("", "persistentvolumeclaims", &c),
            vec![
                "spec.accessModes: Unsupported value: \"Bad\": supported values: \"ReadOnlyMany\", \"ReadWriteMany\", \"ReadWriteOnce\", \"ReadWriteOncePod\"".to_owned(),
                "spec.accessModes: Forbidden: may not use ReadWriteOncePod with other access modes".to_owned(),
                "spec.resources[storage]: Invalid value: \"0\": must be greater than zero".to_owned(),
                format!("spec.storageClassName: Invalid value: \"Fast\": {DNS1123_SUBDOMAIN_MSG}"),
                "spec.volumeMode: Unsupported value: \"Raw\": supported values: \"Block\", \"Filesystem\"".to_owned(),
            ]
        );
    }

    #[test]
    fn claim_data_sources_are_normalized_before_validation() {
        // A dataSource is copied to dataSourceRef, so both report.
        let mut c = pvc();
        c["spec"]["dataSource"] = json!({"kind": "PersistentVolumeClaim"});
        assert_eq!(
            create("", "persistentvolumeclaims", &c),
            vec![
                "spec.dataSource.name: Required value",
                "spec.dataSourceRef.name: Required value",
            ]
        );
        // A dataSource of another kind is dropped when nothing else names a source.
        c["spec"]["dataSource"] = json!({"kind": "Foo", "name": "x"});
        assert!(create("", "persistentvolumeclaims", &c).is_empty());
        // Through dataSourceRef it is kept and copied back.
        let mut c = pvc();
        c["spec"]["dataSourceRef"] = json!({"kind": "Foo", "name": "x"});
        assert_eq!(
            create("", "persistentvolumeclaims", &c),
            vec![
                "spec.dataSource: Invalid value: \"Foo\": must be 'PersistentVolumeClaim' when referencing the default apiGroup",
                "spec.dataSourceRef: Invalid value: \"Foo\": must be 'PersistentVolumeClaim' when referencing the default apiGroup",
            ]
        );
        // Both set and different.
        let mut c = pvc();
        c["spec"]["dataSource"] = json!({"kind": "PersistentVolumeClaim", "name": "a"});
        c["spec"]["dataSourceRef"] = json!({"kind": "PersistentVolumeClaim", "name": "b"});
        assert_eq!(
            create("", "persistentvolumeclaims", &c),
            vec!["spec: Invalid value: {}: must match dataSourceRef"]
        );
        let mut spec = json!({"dataSource": {"apiGroup": "snapshot.storage.k8s.io", "kind": "VolumeSnapshot", "name": "s"}});
        prepare_pvc_spec(&mut spec, None);
        assert_eq!(
            spec["dataSourceRef"],
            json!({"apiGroup": "snapshot.storage.k8s.io", "kind": "VolumeSnapshot", "name": "s"})
        );
    }

    #[test]
    fn claim_update_immutability_and_expansion() {
        let old = bound_pvc();
        // Growing a bound claim is allowed.
        let mut grow = old.clone();
        grow["spec"]["resources"]["requests"]["storage"] = json!("2Gi");
        assert!(update("", "persistentvolumeclaims", &grow, &old).is_empty());
        // Shrinking to the capacity it has is not (a failed expansion may be undone above it).
        let mut old_expanding = old.clone();
        old_expanding["spec"]["resources"]["requests"]["storage"] = json!("3Gi");
        let mut shrink = old_expanding.clone();
        shrink["spec"]["resources"]["requests"]["storage"] = json!("1Gi");
        assert_eq!(
            update("", "persistentvolumeclaims", &shrink, &old_expanding),
            vec!["spec.resources.requests.storage: Forbidden: field can not be less than status.capacity"]
        );
        shrink["spec"]["resources"]["requests"]["storage"] = json!("2Gi");
        assert!(update("", "persistentvolumeclaims", &shrink, &old_expanding).is_empty());
        // Anything else in the spec is immutable.
        let mut modes = old.clone();
        modes["spec"]["accessModes"] = json!(["ReadWriteMany"]);
        let got = update("", "persistentvolumeclaims", &modes, &old);
        assert_eq!(got.len(), 1, "{got:?}");
        assert!(
            got[0].starts_with("spec: Forbidden: spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims\n"),
            "{got:?}"
        );
        // volumeName may be set once; the same quantity written differently is no change.
        let pending = pvc();
        let mut bind = pending.clone();
        bind["spec"]["volumeName"] = json!("pv-9");
        bind["spec"]["resources"]["requests"]["storage"] = json!("1024Mi");
        assert!(update("", "persistentvolumeclaims", &bind, &pending).is_empty());
        // A spec error is reported twice, as kube's strategy validates twice.
        let mut bad = old.clone();
        bad["spec"]["volumeMode"] = json!("Raw");
        assert_eq!(
            update("", "persistentvolumeclaims", &bad, &old)
                .into_iter()
                .filter(|m| !m.starts_with("spec: Forbidden"))
                .collect::<Vec<_>>(),
            vec![
                "spec.volumeMode: Unsupported value: \"Raw\": supported values: \"Block\", \"Filesystem\"",
                "spec.volumeMode: Unsupported value: \"Raw\": supported values: \"Block\", \"Filesystem\"",
                "volumeMode: Invalid value: \"Raw\": field is immutable",
            ]
        );
    }

    #[test]
    fn claim_storage_class_and_attributes_class_updates() {
        let old = pvc();
        // A class may be set on a claim that has none.
        let mut set = old.clone();
        set["spec"]["storageClassName"] = json!("fast");
        assert!(update("", "persistentvolumeclaims", &set, &old).is_empty());
        // The beta annotation cannot change.
        let mut ann = old.clone();
        ann["metadata"]["annotations"] = json!({BETA_STORAGE_CLASS: "slow"});
        assert_eq!(
            update("", "persistentvolumeclaims", &ann, &old),
            vec!["metadata.annotations.volume.beta.kubernetes.io/storage-class: Invalid value: \"slow\": field is immutable"]
        );
        // A bound claim's volumeAttributesClassName may change, not be unset or emptied.
        let mut with_vac = bound_pvc();
        with_vac["spec"][VAC] = json!("gold");
        let mut change = with_vac.clone();
        change["spec"][VAC] = json!("silver");
        assert!(update("", "persistentvolumeclaims", &change, &with_vac).is_empty());
        // Unsetting it also changes the spec (kube masks only a set name), so both report.
        let mut unset = with_vac.clone();
        if let Some(m) = unset["spec"].as_object_mut() {
            m.remove(VAC);
        }
        let got = update("", "persistentvolumeclaims", &unset, &with_vac);
        assert_eq!(got.len(), 2, "{got:?}");
        assert!(
            got[0].starts_with("spec: Forbidden: spec is immutable"),
            "{got:?}"
        );
        assert_eq!(
            got[1],
            "spec.volumeAttributesClassName: Forbidden: update from non-nil value to nil is forbidden"
        );
        let mut empty = with_vac.clone();
        empty["spec"][VAC] = json!("");
        assert_eq!(
            update("", "persistentvolumeclaims", &empty, &with_vac),
            vec!["spec.volumeAttributesClassName: Forbidden: update from non-nil value to an empty string is forbidden"]
        );
    }

    #[test]
    fn claim_selector_ratchets_invalid_label_values() {
        let mut c = pvc();
        c["spec"]["selector"] =
            json!({"matchExpressions": [{"key": "tier", "operator": "In", "values": ["-bad-"]}]});
        let msg = label_value("-bad-").remove(0);
        assert_eq!(
            create("", "persistentvolumeclaims", &c),
            vec![format!(
                "spec.selector.matchExpressions[0].values[0]: Invalid value: \"-bad-\": {msg}"
            )]
        );
        assert!(update("", "persistentvolumeclaims", &c, &c).is_empty());
        let mut ml = pvc();
        ml["spec"]["selector"] = json!({"matchLabels": {"app": "-x-"}});
        let msg = label_value("-x-").remove(0);
        assert_eq!(
            create("", "persistentvolumeclaims", &ml),
            vec![format!(
                "spec.selector.matchLabels: Invalid value: \"-x-\": {msg}"
            )]
        );
        let mut op = pvc();
        op["spec"]["selector"] = json!({"matchExpressions": [{"key": "tier", "operator": "Is"}]});
        assert_eq!(
            create("", "persistentvolumeclaims", &op),
            vec!["spec.selector.matchExpressions[0].operator: Invalid value: \"Is\": not a valid selector operator"]
        );
    }

    #[test]
    fn claim_status_update() {
        let old = bound_pvc();
        let mut new = old.clone();
        new["status"] = json!({
            "phase": "Bound",
            "capacity": {"storage": "-1"},
            "allocatedResourceStatuses": {"storage": "Bogus", "cpu": "NodeResizePending"},
            "allocatedResources": {"storage": "2Gi", "example.com/x": "1"}
        });
        assert_eq!(
            strings(&validate_status("", "persistentvolumeclaims", &new, &old)),
            vec![
                "status.capacity[storage]: Invalid value: -1: must be a valid resource quantity",
                "status.allocatedResourceStatus: Unsupported value: \"cpu\": supported values: \"storage\"",
                "status.allocatedResourceStatus: Unsupported value: \"storage\": supported values: \"ControllerResizeInProgress\", \"ControllerResizeInfeasible\", \"NodeResizeInProgress\", \"NodeResizeInfeasible\", \"NodeResizePending\"",
            ]
        );
        let mut ok = old.clone();
        ok["status"]["allocatedResources"] = json!({"storage": "2Gi"});
        assert!(validate_status("", "persistentvolumeclaims", &ok, &old).is_empty());
    }

    fn pv() -> Value {
        json!({
            "metadata": {"name": "pv-1"},
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "capacity": {"storage": "10Gi"},
                "hostPath": {"path": "/data"},
                "persistentVolumeReclaimPolicy": "Retain",
                "volumeMode": "Filesystem"
            }
        })
    }

    #[test]
    fn volume_create_valid_and_required_fields() {
        assert!(create("", "persistentvolumes", &pv()).is_empty());
        assert_eq!(
            create("", "persistentvolumes", &json!({"spec": {}})),
            vec![
                "spec.accessModes: Required value",
                "spec.capacity: Required value",
                "spec.capacity: Unsupported value: null: supported values: \"storage\"",
                "spec: Required value: must specify a volume type",
            ]
        );
    }

    #[test]
    fn volume_sources() {
        let mut v = pv();
        v["spec"]["nfs"] = json!({"server": "s", "path": "x"});
        v["spec"]["capacity"] = json!({"storage": "0"});
        v["spec"]["persistentVolumeReclaimPolicy"] = json!("Keep");
        assert_eq!(
            create("", "persistentvolumes", &v),
            vec![
                "spec.capacity[storage]: Invalid value: \"0\": must be greater than zero",
                "spec.persistentVolumeReclaimPolicy: Unsupported value: \"Keep\": supported values: \"Delete\", \"Recycle\", \"Retain\"",
                "spec.nfs: Forbidden: may not specify more than 1 volume type",
            ]
        );
        let mut local = pv();
        local["spec"] = json!({
            "accessModes": ["ReadWriteOnce"], "capacity": {"storage": "1Gi"},
            "local": {"path": "/mnt/../disk"}
        });
        assert_eq!(
            create("", "persistentvolumes", &local),
            vec![
                "spec.local.path: Invalid value: \"/mnt/../disk\": must not contain '..'",
                "spec.nodeAffinity: Required value: Local volume requires node affinity",
            ]
        );
        let mut csi = pv();
        csi["spec"] = json!({
            "accessModes": ["ReadWriteOnce"], "capacity": {"storage": "1Gi"},
            "csi": {"driver": "", "nodePublishSecretRef": {"name": "s"}}
        });
        assert_eq!(
            create("", "persistentvolumes", &csi),
            vec![
                "spec.csi.driver: Required value".to_owned(),
                format!("spec.csi.driver: Invalid value: \"\": {DNS1123_SUBDOMAIN_MSG}"),
                "spec.csi.volumeHandle: Required value".to_owned(),
                "spec.csi.nodePublishSecretRef.namespace: Required value".to_owned(),
            ]
        );
        let mut nfs = pv();
        nfs["spec"] = json!({
            "accessModes": ["ReadWriteOnce"], "capacity": {"storage": "1Gi"},
            "nfs": {"server": "", "path": "export"}
        });
        assert_eq!(
            create("", "persistentvolumes", &nfs),
            vec![
                "spec.nfs.server: Required value",
                "spec.nfs.path: Invalid value: \"export\": must be an absolute path",
            ]
        );
        let mut iscsi = pv();
        iscsi["spec"] = json!({
            "accessModes": ["ReadWriteOnce"], "capacity": {"storage": "1Gi"},
            "iscsi": {"targetPortal": "10.0.0.1:3260", "iqn": "iqn.2001-04.com.example:storage", "lun": 256,
                      "chapAuthSession": true, "initiatorName": "eui.0123456789ABCDEF"}
        });
        assert_eq!(
            create("", "persistentvolumes", &iscsi),
            vec![
                "spec.iscsi.lun: Invalid value: 256: must be between 0 and 255, inclusive",
                "spec.iscsi.secretRef: Required value",
            ]
        );
        iscsi["spec"]["iscsi"]["iqn"] = json!("iqn.2001-04.com.example");
        iscsi["spec"]["iscsi"]["lun"] = json!(0);
        iscsi["spec"]["iscsi"]["chapAuthSession"] = json!(false);
        assert_eq!(
            create("", "persistentvolumes", &iscsi),
            vec![
                "spec.iscsi.iqn: Invalid value: \"iqn.2001-04.com.example\": must be valid format"
            ]
        );
    }

    #[test]
    fn volume_node_affinity_and_recycle_of_root() {
        let mut v = pv();
        v["spec"]["nodeAffinity"] = json!({"required": {"nodeSelectorTerms": []}});
        assert_eq!(
            create("", "persistentvolumes", &v),
            vec!["spec.nodeAffinity.required.nodeSelectorTerms: Required value: must have at least one node selector term"]
        );
        v["spec"]["nodeAffinity"] = json!({"required": {"nodeSelectorTerms": [{
            "matchExpressions": [{"key": "zone", "operator": "Gt", "values": ["1", "2"]}],
            "matchFields": [{"key": "metadata.uid", "operator": "In", "values": ["x"]}]
        }]}});
        assert_eq!(
            create("", "persistentvolumes", &v),
            vec![
                "spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[0].values: Required value: must be specified single value when `operator` is 'Lt' or 'Gt'",
                "spec.nodeAffinity.required.nodeSelectorTerms[0].matchFields[0].key: Invalid value: \"metadata.uid\": not a valid field selector key",
            ]
        );
        let mut root = pv();
        root["spec"]["hostPath"]["path"] = json!("/");
        root["spec"]["persistentVolumeReclaimPolicy"] = json!("Recycle");
        assert_eq!(
            create("", "persistentvolumes", &root),
            vec!["spec.persistentVolumeReclaimPolicy: Forbidden: may not be 'recycle' for a hostPath mount of '/'"]
        );
        let mut opts = pv();
        opts["metadata"]["annotations"] = json!({MOUNT_OPTIONS: "ro"});
        assert_eq!(
            create("", "persistentvolumes", &opts),
            vec!["metadata.annotations.volume.beta.kubernetes.io/mount-options: Forbidden: may not specify mount options for this volume type"]
        );
    }

    #[test]
    fn volume_update_rules() {
        let mut old = pv();
        old["spec"]["nodeAffinity"] = json!({"required": {"nodeSelectorTerms": [{
            "matchExpressions": [{"key": "failure-domain.beta.kubernetes.io/zone", "operator": "In", "values": ["a"]}]
        }]}});
        // Moving a beta node label to its GA name is allowed; other changes are not.
        let mut ga = old.clone();
        ga["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"][0]["matchExpressions"][0]
            ["key"] = json!("topology.kubernetes.io/zone");
        assert!(update("", "persistentvolumes", &ga, &old).is_empty());
        let mut other = old.clone();
        other["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"][0]["matchExpressions"][0]
            ["values"] = json!(["b"]);
        assert_eq!(
            update("", "persistentvolumes", &other, &old),
            vec!["nodeAffinity: Invalid value: {\"Required\":{\"NodeSelectorTerms\":[{\"MatchExpressions\":[{\"Key\":\"failure-domain.beta.kubernetes.io/zone\",\"Operator\":\"In\",\"Values\":[\"b\"]}],\"MatchFields\":null}]}}: field is immutable, except for updating from beta label to GA"]
        );
        // The source is immutable; claimRef, capacity and the reclaim policy are not.
        let base = pv();
        let mut src = base.clone();
        src["spec"]["hostPath"]["path"] = json!("/other");
        let got = update("", "persistentvolumes", &src, &base);
        assert_eq!(got.len(), 1, "{got:?}");
        assert!(
            got[0].starts_with("spec.persistentvolumesource: Forbidden: spec.persistentvolumesource is immutable after creation\n"),
            "{got:?}"
        );
        let mut fine = base.clone();
        fine["spec"]["capacity"]["storage"] = json!("20Gi");
        fine["spec"]["persistentVolumeReclaimPolicy"] = json!("Delete");
        fine["spec"]["claimRef"] = json!({"namespace": "default", "name": "data"});
        fine["spec"]["hostPath"]["type"] = json!("");
        assert!(update("", "persistentvolumes", &fine, &base).is_empty());
        let mut mode = base.clone();
        mode["spec"]["volumeMode"] = json!("Block");
        assert_eq!(
            update("", "persistentvolumes", &mode, &base),
            vec!["volumeMode: Invalid value: \"Block\": field is immutable"]
        );
    }

    #[test]
    fn volume_node_affinity_label_values_ratchet() {
        let mut v = pv();
        v["spec"]["nodeAffinity"] = json!({"required": {"nodeSelectorTerms": [{
            "matchExpressions": [{"key": "zone", "operator": "In", "values": ["-a-"]}]
        }]}});
        let msg = label_value("-a-").remove(0);
        let want = format!("spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[0].values[0]: Invalid value: \"-a-\": {msg}");
        assert_eq!(create("", "persistentvolumes", &v), vec![want]);
        assert!(update("", "persistentvolumes", &v, &v).is_empty());
    }

    fn storage_class_obj() -> Value {
        json!({
            "metadata": {"name": "fast"},
            "provisioner": "example.com/fast",
            "parameters": {"type": "ssd"},
            "reclaimPolicy": "Delete",
            "volumeBindingMode": "Immediate"
        })
    }

    #[test]
    fn storage_class_create() {
        assert!(create(STORAGE, "storageclasses", &storage_class_obj()).is_empty());
        let sc = json!({"provisioner": "", "parameters": {"": "x"}, "reclaimPolicy": "Recycle"});
        assert_eq!(
            create(STORAGE, "storageclasses", &sc),
            vec![
                "provisioner: Required value",
                "parameters: Invalid value: \"\": field can not be empty.",
                "reclaimPolicy: Unsupported value: \"Recycle\": supported values: \"Delete\", \"Retain\"",
                "volumeBindingMode: Required value",
            ]
        );
        let mut topo = storage_class_obj();
        topo["allowedTopologies"] = json!([
            {"matchLabelExpressions": [{"key": "zone", "values": ["a", "a"]}]},
            {"matchLabelExpressions": [{"key": "zone", "values": ["a"]}, {"key": "zone", "values": []}]},
            {"matchLabelExpressions": [{"key": "zone", "values": ["a"]}]}
        ]);
        assert_eq!(
            create(STORAGE, "storageclasses", &topo),
            vec![
                "allowedTopologies[0].matchLabelExpressions[0].values[1]: Duplicate value: \"a\"",
                "allowedTopologies[1].matchLabelExpressions[1].values: Required value",
                "allowedTopologies[1].matchLabelExpressions[1].key: Duplicate value: \"zone\"",
                "allowedTopologies[2].matchLabelExpressions: Duplicate value: \"\"",
            ]
        );
    }

    #[test]
    fn storage_class_update() {
        let old = storage_class_obj();
        let mut labels_only = old.clone();
        labels_only["metadata"]["labels"] = json!({"a": "b"});
        assert!(update(STORAGE, "storageclasses", &labels_only, &old).is_empty());
        let mut new = old.clone();
        new["parameters"] = json!({"type": "hdd"});
        new["provisioner"] = json!("example.com/slow");
        new["reclaimPolicy"] = json!("Retain");
        new["volumeBindingMode"] = json!("WaitForFirstConsumer");
        assert_eq!(
            update(STORAGE, "storageclasses", &new, &old),
            vec![
                "parameters: Forbidden: updates to parameters are forbidden.",
                "provisioner: Forbidden: updates to provisioner are forbidden.",
                "reclaimPolicy: Forbidden: updates to reclaimPolicy are forbidden.",
                "volumeBindingMode: Invalid value: \"WaitForFirstConsumer\": field is immutable",
            ]
        );
    }

    fn csi_driver_obj() -> Value {
        json!({
            "metadata": {"name": "csi.example.com"},
            "spec": {
                "attachRequired": true, "podInfoOnMount": false, "storageCapacity": false,
                "fsGroupPolicy": "ReadWriteOnceWithFSType", "volumeLifecycleModes": ["Persistent"],
                "requiresRepublish": false, "seLinuxMount": false
            }
        })
    }

    #[test]
    fn csi_driver_rules() {
        assert!(create(STORAGE, "csidrivers", &csi_driver_obj()).is_empty());
        let bad = json!({"spec": {
            "fsGroupPolicy": "Any",
            "tokenRequests": [{"audience": "a", "expirationSeconds": 60}, {"audience": "a"}],
            "volumeLifecycleModes": ["Temporary"],
            "nodeAllocatableUpdatePeriodSeconds": 5
        }});
        assert_eq!(
            create(STORAGE, "csidrivers", &bad),
            vec![
                "spec.attachedRequired: Required value",
                "spec.podInfoOnMount: Required value",
                "spec.storageCapacity: Required value",
                "spec.fsGroupPolicy: Unsupported value: \"Any\": supported values: \"File\", \"None\", \"ReadWriteOnceWithFSType\"",
                "spec.tokenRequests[0].expirationSeconds: Invalid value: 60: may not specify a duration less than 10 minutes",
                "spec.tokenRequests[1].audience: Duplicate value: \"a\"",
                "spec.volumeLifecycleModes: Unsupported value: \"Temporary\": supported values: \"Persistent\", \"Ephemeral\"",
                "spec.seLinuxMount: Required value",
                "spec.nodeAllocatableUpdatePeriodSeconds: Invalid value: 5: must be greater than or equal to 10 seconds",
            ]
        );
        let old = csi_driver_obj();
        let mut new = old.clone();
        new["spec"]["attachRequired"] = json!(false);
        new["spec"]["volumeLifecycleModes"] = json!(["Persistent", "Ephemeral"]);
        new["spec"]["podInfoOnMount"] = json!(true);
        assert_eq!(
            update(STORAGE, "csidrivers", &new, &old),
            vec![
                "spec.attachedRequired: Invalid value: false: field is immutable",
                "spec.volumeLifecycleModes: Invalid value: [\"Persistent\",\"Ephemeral\"]: field is immutable",
            ]
        );
    }

    fn attachment() -> Value {
        json!({
            "metadata": {"name": "va"},
            "spec": {"attacher": "csi.example.com", "nodeName": "node-1", "source": {"persistentVolumeName": "pv-1"}}
        })
    }

    #[test]
    fn volume_attachment_rules() {
        assert!(create(STORAGE, "volumeattachments", &attachment()).is_empty());
        let bad = json!({"spec": {"attacher": "", "nodeName": "node-1", "source": {}}});
        assert_eq!(
            create(STORAGE, "volumeattachments", &bad),
            vec![
                "spec.attacher: Required value".to_owned(),
                "spec.source: Required value: must specify exactly one of inlineVolumeSpec and persistentVolumeName".to_owned(),
                "spec.attacher: Required value".to_owned(),
                format!("spec.attacher: Invalid value: \"\": {DNS1123_SUBDOMAIN_MSG}"),
            ]
        );
        let inline = json!({"spec": {"attacher": "csi.example.com", "nodeName": "node-1", "source": {
            "inlineVolumeSpec": {"accessModes": ["ReadWriteOnce"], "capacity": {"storage": "1Gi"},
                                 "csi": {"driver": "csi.example.com", "volumeHandle": "h"},
                                 "persistentVolumeReclaimPolicy": "Delete"}
        }}});
        assert_eq!(
            create(STORAGE, "volumeattachments", &inline),
            vec![
                "spec.source.inlineVolumeSpec.capacity: Forbidden: may not be specified in the context of inline volumes",
                "spec.source.inlineVolumeSpec.persistentVolumeReclaimPolicy: Forbidden: may only be Retain in the context of inline volumes",
            ]
        );
        let old = attachment();
        let mut moved = old.clone();
        moved["spec"]["nodeName"] = json!("node-2");
        assert_eq!(
            update(STORAGE, "volumeattachments", &moved, &old),
            vec!["spec: Invalid value: {\"Attacher\":\"csi.example.com\",\"Source\":{\"PersistentVolumeName\":\"pv-1\",\"InlineVolumeSpec\":null},\"NodeName\":\"node-2\"}: field is immutable"]
        );
        let mut status = old.clone();
        status["status"] =
            json!({"attached": false, "attachError": {"message": "m", "errorCode": -1}});
        assert_eq!(
            strings(&validate_status(STORAGE, "volumeattachments", &status, &old)),
            vec![
                "status.attachError.errorCode: Invalid value: -1: must be between 0 and 2147483647, inclusive",
                "status.attachError.errorCode: Invalid value: -1: must be between 0 and 2147483647, inclusive",
            ]
        );
    }

    #[test]
    fn volume_attributes_class_rules() {
        let vac = json!({"metadata": {"name": "gold"}, "driverName": "csi.example.com", "parameters": {"iops": "100"}});
        assert!(create(STORAGE, "volumeattributesclasses", &vac).is_empty());
        assert_eq!(
            create(
                STORAGE,
                "volumeattributesclasses",
                &json!({"driverName": ""})
            ),
            vec![
                "driverName: Required value",
                "parameters: Required value: must contain at least one key/value pair",
            ]
        );
        let mut new = vac.clone();
        new["driverName"] = json!("other.example.com");
        new["parameters"] = json!({"iops": "200"});
        assert_eq!(
            update(STORAGE, "volumeattributesclasses", &new, &vac),
            vec![
                "driverName: Forbidden: updates to driverName are forbidden.",
                "parameters: Forbidden: updates to parameters are forbidden.",
            ]
        );
    }

    #[test]
    fn formats() {
        assert!(split_host_port_ok("host:7861"));
        assert!(split_host_port_ok("[::1]:7861"));
        assert!(!split_host_port_ok("host"));
        assert!(!split_host_port_ok("a:b:c"));
        let ok =
            |s: &str| super::super::pod::iscsi_known(s) && super::super::pod::iscsi_format_ok(s);
        assert!(ok("iqn.2001-04.com.example:storage.disk1"));
        assert!(ok("eui.02004567A425678D"));
        assert!(ok("naa.52004567BA64678D52004567BA64678D"));
        assert!(!ok("iqn.2001-04.com.example:bad;name"));
        assert!(!ok("eui.0123"));
        assert!(!ok("target"));
        assert!(is_root("/") && is_root("//./..") && !is_root("/data") && !is_root(""));
        let mut out = Vec::new();
        dns_label("Bad", "x", &mut out);
        assert_eq!(
            strings(&out),
            vec![format!("x: Invalid value: \"Bad\": {DNS1123_LABEL_MSG}")]
        );
    }
}
