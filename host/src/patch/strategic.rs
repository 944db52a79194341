//! Kubernetes strategic merge patch (SMP) applied to `serde_json::Value`.
//!
//! This mirrors the apply side of `k8s.io/apimachinery/pkg/util/strategicpatch`
//! (`StrategicMergeMapPatchUsingLookupPatchMeta`, i.e. what the API server does
//! for `application/strategic-merge-patch+json` and what `kubectl apply`'s
//! three-way patches rely on):
//!
//! * maps merge recursively, `null` deletes a key;
//! * lists merge according to [`PatchSchema`] (the `patchStrategy` /
//!   `patchMergeKey` Go struct tags); lists without metadata are replaced;
//! * directives: `$patch: replace|delete|merge`, `$retainKeys`,
//!   `$setElementOrder/<field>`, `$deleteFromPrimitiveList/<field>`.
//!   Directive keys never appear in the result.
//!
//! Ordering of merged lists follows upstream exactly (see
//! `normalizeElementOrder` / `mergeSortedSlice` in `patch.go`): items named in
//! the patch keep the patch's relative order, items only present on the server
//! keep their live relative order, and the two are interleaved using the live
//! order.  A consequence (also true of the Go implementation) is that a *new*
//! element is placed before server-only elements that follow the last patched
//! live element, e.g. patching `finalizers: [c]` onto `[a, b]` yields
//! `[c, a, b]`, while `[b, c]` onto `[a, b]` yields `[a, b, c]`.
//! `$setElementOrder` (sent by `kubectl apply`) gives full control of the
//! order.
//!
//! Deliberate differences from Go, all in corner cases where Go leaks
//! directives or relies on slice aliasing:
//! * values copied wholesale (new keys, replaced lists, type changes) are
//!   cleaned: nested directives are interpreted and `null`s dropped;
//! * `$patch: merge` is accepted (as a no-op) on maps and list elements;
//! * with `$setElementOrder`, server-only items are interleaved using the
//!   pre-patch live order (Go sometimes sees a partially mutated slice).

use std::collections::{BTreeSet, HashMap, HashSet};
use std::fmt::Write as _;

use serde_json::{Map, Number, Value};

const DIRECTIVE_MARKER: &str = "$patch";
const DELETE_DIRECTIVE: &str = "delete";
const REPLACE_DIRECTIVE: &str = "replace";
const MERGE_DIRECTIVE: &str = "merge";
const RETAIN_KEYS_DIRECTIVE: &str = "$retainKeys";
const SET_ELEMENT_ORDER_PREFIX: &str = "$setElementOrder";
const DELETE_FROM_PRIMITIVE_LIST_PREFIX: &str = "$deleteFromPrimitiveList";

/// Errors raised while applying a strategic merge patch. Messages are the Go
/// implementation's (`k8s.io/apimachinery/pkg/util/strategicpatch` and
/// `mergepatch`), values shown as Go's `fmt` shows the decoded maps and lists,
/// where one exists.
#[derive(Debug, thiserror::Error)]
pub enum StrategicPatchError {
    /// The patch (or the original document) is not a JSON object
    /// (`mergepatch.ErrBadJSONDoc`).
    #[error("invalid JSON document")]
    NotAnObject {
        what: &'static str,
        actual: &'static str,
    },
    /// A `$patch` directive with a value other than `replace`, `delete`, `merge`
    /// (`mergepatch.ErrBadPatchType`: the directive as `%s`, the map as `%v`).
    #[error("unknown patch type: {directive} in map: {map}")]
    UnknownPatchType { directive: String, map: String },
    /// A list element lacks the merge key declared for its list
    /// (`mergepatch.ErrNoMergeKey`, the map as `%v`).
    #[error("map: {map} does not contain declared merge key: {key}")]
    MissingMergeKey { map: String, key: String },
    /// A list of maps is merged but the schema declares no merge key for it: a
    /// merging list of strings (finalizers, a Node's `podCIDRs`) given maps.
    #[error("cannot merge lists without merge key for type string")]
    NoMergeKey { path: String },
    /// Merging lists whose elements are lists (`mergepatch.ErrNoListOfLists`).
    #[error("lists of lists are not supported")]
    ListOfLists,
    /// A merging list mixes element types (e.g. maps and strings): `lists` is
    /// `fmt.Sprint` of the original and patch lists.
    #[error("list element types are not identical: {lists}")]
    MixedListElements { path: String, lists: String },
    /// A value that must be a list is not (`mergepatch.ErrBadArgType`: `actual`
    /// is the Go type the value decodes to).
    #[error("expected a []interface {{}}, but received a {actual}")]
    NotAList { actual: &'static str },
    /// A value has the wrong JSON type for where it appears.
    #[error("expected a {expected}, but received a {actual} at {path}")]
    TypeMismatch {
        path: String,
        expected: &'static str,
        actual: &'static str,
    },
    /// `$retainKeys` is not a list, or the patch sets a key it does not retain.
    #[error("invalid patch format of retainKeys")]
    InvalidRetainKeys,
    /// `$setElementOrder/...` is malformed.
    #[error("invalid patch format of setElementOrder list")]
    InvalidSetElementOrder,
    /// The patch list's order contradicts its `$setElementOrder` list.
    #[error("The order in patch list:\n{patch}\n doesn't match $setElementOrder list:\n{order}\n")]
    SetElementOrderMismatch { patch: String, order: String },
    /// `$deleteFromPrimitiveList/...` is malformed.
    #[error("invalid patch format of primitive list")]
    InvalidDeleteFromPrimitiveList,
}

/// Result alias for this module.
pub type Result<T, E = StrategicPatchError> = std::result::Result<T, E>;

/// How a list at a given path merges.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListStrategy {
    /// List of maps merged element-wise by the named key (`patchStrategy:"merge"`
    /// with `patchMergeKey`).
    MergeByKey(&'static str),
    /// Primitive list merged as a set (`patchStrategy:"merge"` without a key).
    MergeSet,
    /// The patch list replaces the original (no patch strategy; the default).
    Replace,
}

/// Patch metadata for one kind: which list fields merge and how.
///
/// Paths are dot-separated field names from the object root; `[]` marks "each
/// element of a list", e.g. `spec.containers`, `spec.containers[].ports`,
/// `metadata.ownerReferences`.
#[derive(Debug, Clone, Default)]
pub struct PatchSchema {
    lists: HashMap<String, ListStrategy>,
    retain_keys: HashSet<String>,
    replace_maps: HashSet<String>,
}

impl PatchSchema {
    /// An empty schema: every list is replaced, every map merged.
    pub fn new() -> Self {
        Self::default()
    }

    /// Rules shared by every kind: `metadata.ownerReferences` by `uid`,
    /// `metadata.finalizers` as a set.
    pub fn common() -> Self {
        let mut schema = Self::default();
        schema.add_object_meta("metadata");
        schema
    }

    /// Schema for a built-in kind by (group, kind). Unknown kinds get the
    /// common metadata rules only. The core group is `""` (`"core"` is
    /// accepted too).
    pub fn for_kind(group: &str, kind: &str) -> PatchSchema {
        let mut s = Self::common();
        let group = if group == "core" { "" } else { group };
        match (group, kind) {
            ("", "Pod") => {
                s.add_pod_spec("spec");
                s.add_pod_status("status");
            }
            ("", "PodTemplate") => s.add_pod_template("template"),
            ("", "ReplicationController") => {
                s.add_pod_template("spec.template");
                s.add_conditions("status.conditions");
            }
            ("", "Service") => {
                s.set("spec.ports", ListStrategy::MergeByKey("port"));
                s.add_conditions("status.conditions");
            }
            ("", "ServiceAccount") => s.set("secrets", ListStrategy::MergeByKey("name")),
            ("", "Node") => {
                // spec.taints has no patch strategy upstream: replaced.
                s.set("spec.podCIDRs", ListStrategy::MergeSet);
                s.add_conditions("status.conditions");
                s.set("status.addresses", ListStrategy::MergeByKey("type"));
            }
            ("", "Namespace") | ("", "PersistentVolumeClaim") => {
                s.add_conditions("status.conditions");
            }
            ("", "ComponentStatus") => s.add_conditions("conditions"),
            ("apps", "Deployment") => {
                s.add_pod_template("spec.template");
                s.retain_keys.insert("spec.strategy".to_owned());
                s.add_conditions("status.conditions");
            }
            ("apps", "ReplicaSet") | ("apps", "StatefulSet") | ("apps", "DaemonSet") => {
                s.add_pod_template("spec.template");
                s.add_conditions("status.conditions");
            }
            ("batch", "Job") => {
                s.add_pod_template("spec.template");
                s.add_conditions("status.conditions");
            }
            ("batch", "CronJob") => {
                s.add_object_meta("spec.jobTemplate.metadata");
                s.add_pod_template("spec.jobTemplate.spec.template");
            }
            ("autoscaling", "HorizontalPodAutoscaler")
            | ("flowcontrol.apiserver.k8s.io", "FlowSchema")
            | ("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration")
            | ("networking.k8s.io", "ServiceCIDR")
            | ("storagemigration.k8s.io", "StorageVersionMigration") => {
                s.add_conditions("status.conditions");
            }
            ("policy", "PodDisruptionBudget") => {
                s.replace_maps.insert("spec.selector".to_owned());
                s.add_conditions("status.conditions");
            }
            (
                "admissionregistration.k8s.io",
                "ValidatingWebhookConfiguration" | "MutatingWebhookConfiguration",
            ) => {
                s.set("webhooks", ListStrategy::MergeByKey("name"));
                s.set(
                    "webhooks[].matchConditions",
                    ListStrategy::MergeByKey("name"),
                );
            }
            ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy") => {
                s.set("spec.matchConditions", ListStrategy::MergeByKey("name"));
                s.set("spec.variables", ListStrategy::MergeByKey("name"));
            }
            ("admissionregistration.k8s.io", "MutatingAdmissionPolicy") => {
                s.set("spec.matchConditions", ListStrategy::MergeByKey("name"));
            }
            ("storage.k8s.io", "CSINode") => {
                s.set("spec.drivers", ListStrategy::MergeByKey("name"));
            }
            ("resource.k8s.io", "ResourceClaim") => {
                s.set("status.reservedFor", ListStrategy::MergeByKey("uid"));
            }
            _ => {}
        }
        s
    }

    /// Builder: declare the strategy of the list at `path`.
    pub fn with_list(mut self, path: impl Into<String>, strategy: ListStrategy) -> Self {
        self.lists.insert(path.into(), strategy);
        self
    }

    /// Builder: mark the field at `path` as `patchStrategy:"retainKeys"`.
    /// This is metadata only: `apply` honours `$retainKeys` directives wherever
    /// they appear, exactly like the Go implementation.
    pub fn with_retain_keys(mut self, path: impl Into<String>) -> Self {
        self.retain_keys.insert(path.into());
        self
    }

    /// Builder: mark the map at `path` as `patchStrategy:"replace"` (the patch
    /// value replaces the whole map instead of being merged into it).
    pub fn with_replace_map(mut self, path: impl Into<String>) -> Self {
        self.replace_maps.insert(path.into());
        self
    }

    /// Declare the strategy of the list at `path`.
    pub fn set_list_strategy(&mut self, path: impl Into<String>, strategy: ListStrategy) {
        self.lists.insert(path.into(), strategy);
    }

    /// Strategy of the list at `path` (`Replace` when undeclared).
    pub fn list_strategy(&self, path: &str) -> ListStrategy {
        self.lists
            .get(path)
            .copied()
            .unwrap_or(ListStrategy::Replace)
    }

    /// Whether the field at `path` carries `patchStrategy:"retainKeys"`.
    pub fn has_retain_keys(&self, path: &str) -> bool {
        self.retain_keys.contains(path)
    }

    /// Whether the map at `path` is replaced rather than merged.
    pub fn replaces_map(&self, path: &str) -> bool {
        self.replace_maps.contains(path)
    }

    fn set(&mut self, path: impl Into<String>, strategy: ListStrategy) {
        self.lists.insert(path.into(), strategy);
    }

    fn add_object_meta(&mut self, prefix: &str) {
        self.set(
            format!("{prefix}.ownerReferences"),
            ListStrategy::MergeByKey("uid"),
        );
        self.set(format!("{prefix}.finalizers"), ListStrategy::MergeSet);
    }

    fn add_conditions(&mut self, path: &str) {
        self.set(path, ListStrategy::MergeByKey("type"));
    }

    fn add_pod_template(&mut self, prefix: &str) {
        self.add_object_meta(&format!("{prefix}.metadata"));
        self.add_pod_spec(&format!("{prefix}.spec"));
    }

    fn add_pod_spec(&mut self, p: &str) {
        for c in ["containers", "initContainers", "ephemeralContainers"] {
            let cp = format!("{p}.{c}");
            self.set(cp.clone(), ListStrategy::MergeByKey("name"));
            self.set(
                format!("{cp}[].ports"),
                ListStrategy::MergeByKey("containerPort"),
            );
            self.set(format!("{cp}[].env"), ListStrategy::MergeByKey("name"));
            self.set(
                format!("{cp}[].volumeMounts"),
                ListStrategy::MergeByKey("mountPath"),
            );
            self.set(
                format!("{cp}[].volumeDevices"),
                ListStrategy::MergeByKey("devicePath"),
            );
        }
        self.set(format!("{p}.volumes"), ListStrategy::MergeByKey("name"));
        self.retain_keys.insert(format!("{p}.volumes"));
        self.set(
            format!("{p}.imagePullSecrets"),
            ListStrategy::MergeByKey("name"),
        );
        self.set(format!("{p}.hostAliases"), ListStrategy::MergeByKey("ip"));
        self.set(
            format!("{p}.topologySpreadConstraints"),
            ListStrategy::MergeByKey("topologyKey"),
        );
        self.set(
            format!("{p}.schedulingGates"),
            ListStrategy::MergeByKey("name"),
        );
        self.set(
            format!("{p}.resourceClaims"),
            ListStrategy::MergeByKey("name"),
        );
        self.retain_keys.insert(format!("{p}.resourceClaims"));
    }

    fn add_pod_status(&mut self, p: &str) {
        self.add_conditions(&format!("{p}.conditions"));
        self.set(format!("{p}.podIPs"), ListStrategy::MergeByKey("ip"));
        self.set(format!("{p}.hostIPs"), ListStrategy::MergeByKey("ip"));
        self.set(
            format!("{p}.resourceClaimStatuses"),
            ListStrategy::MergeByKey("name"),
        );
        self.retain_keys
            .insert(format!("{p}.resourceClaimStatuses"));
    }
}

/// Apply the strategic merge patch `patch` to `original` using `schema`.
///
/// `original` must be an object (or `null`, treated as `{}`); `patch` must be
/// an object. Neither input is modified.
pub fn apply(original: &Value, patch: &Value, schema: &PatchSchema) -> Result<Value> {
    let patch = match patch {
        Value::Object(m) => m,
        other => {
            return Err(StrategicPatchError::NotAnObject {
                what: "patch",
                actual: kind_name(other),
            })
        }
    };
    let original = match original {
        Value::Object(m) => m.clone(),
        Value::Null => Map::new(),
        other => {
            return Err(StrategicPatchError::NotAnObject {
                what: "original document",
                actual: kind_name(other),
            })
        }
    };
    let merger = Merger { schema };
    Ok(Value::Object(merger.merge_map(original, patch, "")?))
}

struct Merger<'a> {
    schema: &'a PatchSchema,
}

impl Merger<'_> {
    /// Merge `patch` into `original` (the map found at `path`).
    fn merge_map(
        &self,
        original: Map<String, Value>,
        patch: &Map<String, Value>,
        path: &str,
    ) -> Result<Map<String, Value>> {
        if let Some(directive) = patch.get(DIRECTIVE_MARKER) {
            match directive.as_str() {
                // Replace: the patch (without the directive) becomes the map.
                Some(REPLACE_DIRECTIVE) => return self.merge_fields(Map::new(), patch, path),
                // Delete: like upstream, the map becomes empty.
                Some(DELETE_DIRECTIVE) => return Ok(Map::new()),
                Some(MERGE_DIRECTIVE) => {}
                _ => return Err(unknown_patch_type(directive, patch)),
            }
        }
        let original = if self.schema.replaces_map(path) {
            Map::new()
        } else {
            original
        };
        self.merge_fields(original, patch, path)
    }

    /// Merge the fields of `patch` into `original`, ignoring any `$patch` key.
    fn merge_fields(
        &self,
        mut original: Map<String, Value>,
        patch: &Map<String, Value>,
        path: &str,
    ) -> Result<Map<String, Value>> {
        if let Some(retain) = patch.get(RETAIN_KEYS_DIRECTIVE) {
            apply_retain_keys(&mut original, patch, retain)?;
        }

        // Lists reordered by `$setElementOrder` are fully handled here.
        let mut handled: HashSet<&str> = HashSet::new();
        for (key, order) in patch {
            if key.starts_with(SET_ELEMENT_ORDER_PREFIX) {
                if let Some(field) =
                    self.set_element_order(&mut original, patch, key, order, path)?
                {
                    handled.insert(field);
                }
            }
        }

        for (key, value) in patch {
            if key.starts_with(DELETE_FROM_PRIMITIVE_LIST_PREFIX) {
                let field = directive_field(key, DELETE_FROM_PRIMITIVE_LIST_PREFIX)
                    .ok_or(StrategicPatchError::InvalidDeleteFromPrimitiveList)?;
                // Like upstream, a deletion list only affects an existing list.
                if let (Some(Value::Array(list)), Value::Array(to_delete)) =
                    (original.get_mut(field), value)
                {
                    // Hashed, not a scan of `to_delete` per item (quadratic).
                    let deleted = Positions::new(to_delete);
                    list.retain(|v| deleted.get(v, None).is_none());
                }
            }
        }

        // Keys to remove, dropped in one `retain` pass at the end: `shift_remove` shifts
        // every later entry, so removing keys one at a time is quadratic in the map's size
        // (40k `null`s took 48 s). Deferring is invisible: the keys of a JSON object are
        // unique, so the loop visits each key of `original` at most once and never reads a
        // key after marking it, and `retain` keeps the order of the remaining entries.
        let mut gone: HashSet<&str> = HashSet::new();
        for (key, patch_value) in patch {
            if is_directive_key(key) || handled.contains(key.as_str()) {
                continue;
            }
            if patch_value.is_null() {
                gone.insert(key.as_str());
                continue;
            }
            let field_path = child_path(path, key);
            let new_value = match original.get_mut(key) {
                Some(slot) => match (std::mem::take(slot), patch_value) {
                    (Value::Object(o), Value::Object(p)) => {
                        Some(Value::Object(self.merge_map(o, p, &field_path)?))
                    }
                    (Value::Array(o), Value::Array(p)) => {
                        Some(Value::Array(self.merge_list(o, p, &field_path)?))
                    }
                    _ => self.fresh_value(patch_value, &field_path)?,
                },
                None => self.fresh_value(patch_value, &field_path)?,
            };
            match new_value {
                Some(v) => {
                    original.insert(key.clone(), v);
                }
                None => {
                    gone.insert(key.as_str());
                }
            }
        }
        if !gone.is_empty() {
            original.retain(|k, _| !gone.contains(k.as_str()));
        }
        Ok(original)
    }

    /// A patch value that does not merge with anything (new key, or a value of
    /// a different type): cleaned of directives and nulls. `None` means the
    /// key must not be present (`$patch: delete`).
    fn fresh_value(&self, patch_value: &Value, path: &str) -> Result<Option<Value>> {
        Ok(match patch_value {
            Value::Object(p) => {
                if directive_of(p) == Some(DELETE_DIRECTIVE) {
                    None
                } else {
                    Some(Value::Object(self.merge_map(Map::new(), p, path)?))
                }
            }
            Value::Array(p) => Some(Value::Array(self.merge_list(Vec::new(), p, path)?)),
            other => Some(other.clone()),
        })
    }

    /// Merge the list `patch` into the list `original` found at `path`.
    fn merge_list(&self, original: Vec<Value>, patch: &[Value], path: &str) -> Result<Vec<Value>> {
        let strategy = self.schema.list_strategy(path);
        if strategy == ListStrategy::Replace {
            return self.replaced_list(patch, path);
        }
        if original.is_empty() && patch.is_empty() {
            return Ok(original);
        }
        match element_kind(&original, patch, path)? {
            ElemKind::Object => match strategy {
                ListStrategy::MergeByKey(key) => self.merge_keyed_list(original, patch, key, path),
                _ => Err(StrategicPatchError::NoMergeKey {
                    path: display_path(path),
                }),
            },
            ElemKind::Scalar => Ok(merge_scalar_list(original, patch)),
        }
    }

    /// A list with replace semantics: the patch list, cleaned.
    fn replaced_list(&self, patch: &[Value], path: &str) -> Result<Vec<Value>> {
        let elem_path = element_path(path);
        let mut out = Vec::with_capacity(patch.len());
        for item in patch {
            match item {
                Value::Object(p) => {
                    match p.get(DIRECTIVE_MARKER) {
                        None => {}
                        Some(d) => match d.as_str() {
                            Some(DELETE_DIRECTIVE) => continue,
                            // A bare `{"$patch": "replace"}` marker: the list is
                            // replaced anyway.
                            Some(REPLACE_DIRECTIVE) if p.len() == 1 => continue,
                            Some(REPLACE_DIRECTIVE | MERGE_DIRECTIVE) => {}
                            _ => return Err(unknown_patch_type(d, p)),
                        },
                    }
                    out.push(Value::Object(self.merge_map(Map::new(), p, &elem_path)?));
                }
                Value::Array(inner) => {
                    out.push(Value::Array(self.merge_list(
                        Vec::new(),
                        inner,
                        &elem_path,
                    )?));
                }
                other => out.push(other.clone()),
            }
        }
        Ok(out)
    }

    /// Merge a list of maps by `key`.
    fn merge_keyed_list(
        &self,
        original: Vec<Value>,
        patch: &[Value],
        key: &'static str,
        path: &str,
    ) -> Result<Vec<Value>> {
        let elem_path = element_path(path);
        let mut server = original;
        let mut plain: Vec<&Map<String, Value>> = Vec::with_capacity(patch.len());
        let mut deletes: Vec<&Value> = Vec::new();
        let mut replace = false;
        for item in patch {
            let p = expect_object(item, &elem_path)?;
            match p.get(DIRECTIVE_MARKER) {
                None => plain.push(p),
                Some(d) => match d.as_str() {
                    Some(DELETE_DIRECTIVE) => {
                        let value = p.get(key).ok_or_else(|| missing_merge_key(p, key))?;
                        deletes.push(value);
                    }
                    Some(REPLACE_DIRECTIVE) => replace = true,
                    Some(MERGE_DIRECTIVE) => plain.push(p),
                    _ => return Err(unknown_patch_type(d, p)),
                },
            }
        }
        if !deletes.is_empty() {
            let gone = Positions::new(deletes);
            server.retain(|o| o.get(key).is_none_or(|v| gone.get(v, None).is_none()));
        }
        if replace {
            return plain
                .into_iter()
                .map(|p| Ok(Value::Object(self.merge_map(Map::new(), p, &elem_path)?)))
                .collect();
        }

        for item in &server {
            let o = expect_object(item, &elem_path)?;
            if !o.contains_key(key) {
                return Err(missing_merge_key(o, key));
            }
        }

        let mut merged = server.clone();
        // The merged items by their current merge-key value, so each patch item finds the
        // first item a scan of `merged` would find, in O(1). Merging can change an item's
        // key (`80` becomes `80.0`, `null`s inside an object key are dropped), and later
        // patch items must see the new key just as a scan would, so a changed key is
        // re-filed after each merge.
        let mut by_key = ValueIndex::default();
        for (i, m) in merged.iter().enumerate() {
            if let Some(v) = m.get(key) {
                by_key.insert(v, i);
            }
        }
        for p in &plain {
            let value = p.get(key).ok_or_else(|| missing_merge_key(p, key))?;
            match by_key.first(value) {
                Some(pos) => {
                    let existing = match std::mem::take(&mut merged[pos]) {
                        Value::Object(m) => m,
                        _ => Map::new(),
                    };
                    let before = existing.get(key).map(homes);
                    let item = self.merge_map(existing, p, &elem_path)?;
                    let after = item.get(key).map(homes);
                    if before != after {
                        if let Some(keys) = &before {
                            by_key.remove_keys(keys, pos);
                        }
                        if let Some(keys) = after {
                            by_key.insert_keys(keys, pos);
                        }
                    }
                    merged[pos] = Value::Object(item);
                }
                None => {
                    let item = self.merge_map(Map::new(), p, &elem_path)?;
                    if let Some(v) = item.get(key) {
                        by_key.insert(v, merged.len());
                    }
                    merged.push(Value::Object(item));
                }
            }
        }

        let mk = Some(key);
        let patch_order = Positions::new(plain.iter().filter_map(|p| p.get(key)));
        let server_order = Positions::new(server.iter().filter_map(|o| o.get(key)));
        let (patch_items, server_only): (Vec<Value>, Vec<Value>) = merged
            .into_iter()
            .partition(|v| patch_order.get(v, mk).is_some());
        Ok(normalize_order(
            patch_items,
            server_only,
            &patch_order,
            &server_order,
            mk,
        ))
    }

    /// Handle `$setElementOrder/<field>`: merge `<field>` and order the result.
    /// Returns the field name when the field was written.
    fn set_element_order<'p>(
        &self,
        original: &mut Map<String, Value>,
        patch: &'p Map<String, Value>,
        directive_key: &'p str,
        order: &Value,
        path: &str,
    ) -> Result<Option<&'p str>> {
        // kube's `mergePatchIntoOriginal`: the order must be a list, the key name a field,
        // and the field a list in the original and in the patch, in that order.
        let order = order
            .as_array()
            .ok_or_else(|| StrategicPatchError::NotAList {
                actual: go_type(order),
            })?;
        let field = directive_field(directive_key, SET_ELEMENT_ORDER_PREFIX)
            .ok_or(StrategicPatchError::InvalidSetElementOrder)?;
        let field_path = child_path(path, field);
        let mk = match self.schema.list_strategy(&field_path) {
            ListStrategy::MergeByKey(k) => Some(k),
            _ => None,
        };

        let original_list = match original.get(field) {
            None | Some(Value::Null) => None,
            Some(Value::Array(a)) => Some(a.clone()),
            Some(other) => {
                return Err(StrategicPatchError::NotAList {
                    actual: go_type(other),
                })
            }
        };
        let patch_list = match patch.get(field) {
            None => None,
            Some(Value::Array(a)) => Some(a.as_slice()),
            Some(other) => {
                return Err(StrategicPatchError::NotAList {
                    actual: go_type(other),
                })
            }
        };
        if let Some(p) = patch_list {
            validate_set_element_order(p, order, mk)?;
        }

        let merged = match (&original_list, patch_list) {
            (Some(o), None) => o.clone(),
            (None, Some(p)) => self.merge_list(Vec::new(), p, &field_path)?,
            (Some(o), Some(p)) => self.merge_list(o.clone(), p, &field_path)?,
            (None, None) => return Ok(None),
        };

        let order_keys = Positions::new(order.iter().filter_map(|o| order_key(o, mk)));
        let server_vals = original_list.unwrap_or_default();
        let server_keys = Positions::new(server_vals.iter().filter_map(|o| order_key(o, mk)));
        let (patch_items, server_only): (Vec<Value>, Vec<Value>) = merged
            .into_iter()
            .partition(|v| order_keys.get(v, mk).is_some());
        let result = normalize_order(patch_items, server_only, &order_keys, &server_keys, mk);
        original.insert(field.to_owned(), Value::Array(result));
        Ok(Some(field))
    }
}

/// Apply `$retainKeys`: validate the patch against it, then drop the keys of
/// `original` it does not list.
fn apply_retain_keys(
    original: &mut Map<String, Value>,
    patch: &Map<String, Value>,
    retain: &Value,
) -> Result<()> {
    let list = retain
        .as_array()
        .ok_or(StrategicPatchError::InvalidRetainKeys)?;
    let retained: HashSet<&str> = list.iter().filter_map(Value::as_str).collect();
    for (k, v) in patch {
        if v.is_null() || is_directive_key(k) {
            continue;
        }
        if !retained.contains(k.as_str()) {
            return Err(StrategicPatchError::InvalidRetainKeys);
        }
    }
    original.retain(|k, _| retained.contains(k.as_str()));
    Ok(())
}

/// Upstream `validatePatchWithSetOrderList`: the (non-deleted) patch items must
/// appear in the `$setElementOrder` list, in the same relative order.
fn validate_set_element_order(patch: &[Value], order: &[Value], mk: Option<&str>) -> Result<()> {
    if order.is_empty() || patch.is_empty() {
        return Ok(());
    }
    let items: Vec<&Value> = patch
        .iter()
        .filter(|p| {
            p.as_object()
                .is_none_or(|m| !m.contains_key(DIRECTIVE_MARKER))
        })
        .collect();
    let (mut pi, mut si) = (0, 0);
    while pi < items.len() && si < order.len() {
        let same = match (order_key(items[pi], mk), order_key(&order[si], mk)) {
            (Some(a), Some(b)) => values_equal(a, b),
            _ => false,
        };
        if same {
            pi += 1;
        }
        si += 1;
    }
    if pi < items.len() {
        return Err(StrategicPatchError::SetElementOrderMismatch {
            patch: super::go_plus_v_slice(patch),
            order: super::go_plus_v_slice(order),
        });
    }
    Ok(())
}

/// Merge two primitive lists as a set.
fn merge_scalar_list(original: Vec<Value>, patch: &[Value]) -> Vec<Value> {
    let mut merged: Vec<Value> = Vec::with_capacity(original.len() + patch.len());
    let mut seen = ValueIndex::default();
    for v in original.iter().chain(patch) {
        if seen.first(v).is_none() {
            seen.insert(v, merged.len());
            merged.push(v.clone());
        }
    }
    let patch_order = Positions::new(patch);
    let server_order = Positions::new(&original);
    let (patch_items, server_only): (Vec<Value>, Vec<Value>) = merged
        .into_iter()
        .partition(|v| patch_order.get(v, None).is_some());
    normalize_order(patch_items, server_only, &patch_order, &server_order, None)
}

/// Upstream `normalizeElementOrder`: sort patch items by `patch_order`,
/// server-only items by `server_order`, then interleave them.
fn normalize_order(
    mut patch_items: Vec<Value>,
    mut server_only: Vec<Value>,
    patch_order: &Positions,
    server_order: &Positions,
    mk: Option<&str>,
) -> Vec<Value> {
    patch_items.sort_by_cached_key(|v| patch_order.get(v, mk).unwrap_or(usize::MAX));
    server_only.sort_by_cached_key(|v| server_order.get(v, mk).unwrap_or(usize::MAX));
    merge_sorted(server_only, patch_items, server_order, mk)
}

/// Upstream `mergeSortedSlice`: insert the server-only items (`left`) into the
/// patch items (`right`); a left item goes first only when both items are in
/// the live list and it comes earlier there.
fn merge_sorted(
    left: Vec<Value>,
    right: Vec<Value>,
    server_order: &Positions,
    mk: Option<&str>,
) -> Vec<Value> {
    let mut out = Vec::with_capacity(left.len() + right.len());
    let mut left = left.into_iter().peekable();
    let mut right = right.into_iter().peekable();
    loop {
        let take_left = match (left.peek(), right.peek()) {
            (None, None) => break,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (Some(l), Some(r)) => matches!(
                (server_order.get(l, mk), server_order.get(r, mk)),
                (Some(li), Some(ri)) if li < ri
            ),
        };
        let next = if take_left { left.next() } else { right.next() };
        if let Some(v) = next {
            out.push(v);
        }
    }
    out
}

/// The hash keys under which a value is filed (`homes`) or searched for (`probes`) in a
/// [`ValueIndex`]. They are chosen so that `values_equal(a, b)` holds exactly when a home
/// of `a` is a probe of `b`, for every pair of JSON values, so a lookup never scans.
///
/// One key per value cannot do this, because [`values_equal`] is not transitive: integers
/// compare exactly, but an integer and a float compare as f64, so `2^53` and `2^53 + 1`
/// differ while both equal `9007199254740992.0`. Hence, with `b` the f64 bits of the value
/// (`-0.0` read as `0.0`):
/// * an integer lives at `i<decimal>` and `g<b>`, and is searched at `i<decimal>` (equal
///   integers) and `f<b>` (floats of the same value);
/// * a float lives at `f<b>`, and is searched at `f<b>` (equal floats) and `g<b>` (every
///   integer that rounds to it);
/// * any other value lives and is searched at `c<canonical text>` (see
///   [`write_canonical`]).
#[derive(Debug, PartialEq, Eq)]
struct HashKeys(String, Option<String>);

impl HashKeys {
    fn iter(&self) -> impl Iterator<Item = &str> {
        std::iter::once(self.0.as_str()).chain(self.1.as_deref())
    }

    fn into_keys(self) -> impl Iterator<Item = String> {
        std::iter::once(self.0).chain(self.1)
    }
}

/// The keys `v` is filed under (see [`HashKeys`]).
fn homes(v: &Value) -> HashKeys {
    hash_keys(v, false)
}

/// The keys searched for values equal to `v` (see [`HashKeys`]).
fn probes(v: &Value) -> HashKeys {
    hash_keys(v, true)
}

fn hash_keys(v: &Value, probe: bool) -> HashKeys {
    let Value::Number(n) = v else {
        let mut text = String::from("c");
        write_canonical(v, &mut text);
        return HashKeys(text, None);
    };
    let bits = f64_bits(n);
    match exact_integer(n) {
        Some(int) => {
            let by_f64 = if probe { 'f' } else { 'g' };
            HashKeys(format!("i{int}"), Some(format!("{by_f64}{bits}")))
        }
        None => HashKeys(format!("f{bits}"), probe.then(|| format!("g{bits}"))),
    }
}

/// The exact decimal text of an integer (`None` for floats), read the way
/// [`values_equal`] reads numbers.
fn exact_integer(n: &Number) -> Option<String> {
    n.as_u64()
        .map(|u| u.to_string())
        .or_else(|| n.as_i64().map(|i| i.to_string()))
}

/// The bits of a number's f64 value, with `-0.0` read as `0.0` (they compare equal).
fn f64_bits(n: &Number) -> u64 {
    // Always `Some` without serde_json's `arbitrary_precision`; `values_equal` treats two
    // `None`s as equal, and so do equal bits.
    let f = n.as_f64().unwrap_or(f64::NAN);
    let f = if f == 0.0 { 0.0 } else { f };
    f.to_bits()
}

/// Appends to `out` a text that is the same for two values exactly when they are `==`
/// (serde_json's equality, which [`values_equal`] uses below the top level): numbers are
/// equal only within one representation (`1` != `1.0`, but `-0.0` == `0.0`), and objects
/// are equal whatever the order of their keys (`IndexMap`'s equality ignores order), so
/// keys are written sorted. Every part is self-delimiting (strings carry their length,
/// numbers end with `;`), so different values cannot concatenate to the same text.
fn write_canonical(v: &Value, out: &mut String) {
    match v {
        Value::Null => out.push('n'),
        Value::Bool(true) => out.push('t'),
        Value::Bool(false) => out.push('f'),
        Value::Number(n) => {
            match exact_integer(n) {
                Some(int) => {
                    out.push('i');
                    out.push_str(&int);
                }
                None => {
                    let _ = write!(out, "d{}", f64_bits(n));
                }
            }
            out.push(';');
        }
        Value::String(s) => write_canonical_str(s, out),
        Value::Array(items) => {
            out.push('[');
            for item in items {
                write_canonical(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
            out.push('{');
            for (k, item) in entries {
                write_canonical_str(k, out);
                write_canonical(item, out);
            }
            out.push('}');
        }
    }
}

fn write_canonical_str(s: &str, out: &mut String) {
    // Writing to a `String` cannot fail.
    let _ = write!(out, "s{}:", s.len());
    out.push_str(s);
}

/// Positions of values, looked up under [`values_equal`] in O(1) (plus the length of the
/// value): `first` answers what `position(|x| values_equal(x, v))` over the indexed list
/// would, where scans made merging long lists quadratic. Buckets are ordered sets, so an
/// entry can be re-filed when the value at a position changes.
#[derive(Default)]
struct ValueIndex {
    buckets: HashMap<String, BTreeSet<usize>>,
}

impl ValueIndex {
    /// File position `at` as holding `v`.
    fn insert(&mut self, v: &Value, at: usize) {
        self.insert_keys(homes(v), at);
    }

    /// File position `at` under `keys` (the [`homes`] of its value).
    fn insert_keys(&mut self, keys: HashKeys, at: usize) {
        for k in keys.into_keys() {
            self.buckets.entry(k).or_default().insert(at);
        }
    }

    /// Unfile position `at` from `keys` (the [`homes`] of its old value).
    fn remove_keys(&mut self, keys: &HashKeys, at: usize) {
        for k in keys.iter() {
            if let Some(bucket) = self.buckets.get_mut(k) {
                bucket.remove(&at);
            }
        }
    }

    /// The lowest position holding a value equal to `v`.
    fn first(&self, v: &Value) -> Option<usize> {
        probes(v)
            .iter()
            .filter_map(|k| self.buckets.get(k)?.first().copied())
            .min()
    }
}

/// A list of order keys with the first index of each: `get` is O(1) where a scan made the
/// ordering steps of a long list quadratic.
struct Positions {
    index: ValueIndex,
}

impl Positions {
    fn new<'v>(order: impl IntoIterator<Item = &'v Value>) -> Self {
        let mut index = ValueIndex::default();
        for (i, o) in order.into_iter().enumerate() {
            index.insert(o, i);
        }
        Self { index }
    }

    /// Index of `item` (by its order key) in the list.
    fn get(&self, item: &Value, mk: Option<&str>) -> Option<usize> {
        self.index.first(order_key(item, mk)?)
    }
}

/// The value identifying a list item for ordering: its merge key for maps,
/// the item itself otherwise.
fn order_key<'v>(item: &'v Value, mk: Option<&str>) -> Option<&'v Value> {
    match (mk, item) {
        (Some(k), Value::Object(m)) => m.get(k),
        _ => Some(item),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ElemKind {
    Object,
    Scalar,
}

/// Upstream `sliceElementType`: all elements of a merging list share a type, and the first
/// is no list.
fn element_kind(original: &[Value], patch: &[Value], path: &str) -> Result<ElemKind> {
    let mut seen: Option<&'static str> = None;
    for v in original.iter().chain(patch) {
        let name = match v {
            Value::Null => continue,
            other => kind_name(other),
        };
        match seen {
            None if v.is_array() => return Err(StrategicPatchError::ListOfLists),
            None => seen = Some(name),
            Some(prev) if prev != name => {
                return Err(StrategicPatchError::MixedListElements {
                    path: display_path(path),
                    lists: format!(
                        "[{} {}]",
                        super::go_plus_v_slice(original),
                        super::go_plus_v_slice(patch)
                    ),
                })
            }
            Some(_) => {}
        }
    }
    Ok(if seen == Some("map") {
        ElemKind::Object
    } else {
        ElemKind::Scalar
    })
}

/// JSON equality where numbers compare by value (`80` == `80.0`).
fn values_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            if let (Some(i), Some(j)) = (x.as_i64(), y.as_i64()) {
                i == j
            } else if let (Some(i), Some(j)) = (x.as_u64(), y.as_u64()) {
                i == j
            } else {
                x.as_f64() == y.as_f64()
            }
        }
        _ => a == b,
    }
}

fn expect_object<'v>(item: &'v Value, path: &str) -> Result<&'v Map<String, Value>> {
    item.as_object()
        .ok_or_else(|| StrategicPatchError::TypeMismatch {
            path: display_path(path),
            expected: "map",
            actual: kind_name(item),
        })
}

fn directive_of(map: &Map<String, Value>) -> Option<&str> {
    map.get(DIRECTIVE_MARKER).and_then(Value::as_str)
}

fn is_directive_key(key: &str) -> bool {
    key == DIRECTIVE_MARKER
        || key == RETAIN_KEYS_DIRECTIVE
        || key.starts_with(SET_ELEMENT_ORDER_PREFIX)
        || key.starts_with(DELETE_FROM_PRIMITIVE_LIST_PREFIX)
}

/// `"$prefix/field"` -> `"field"`.
fn directive_field<'k>(key: &'k str, prefix: &str) -> Option<&'k str> {
    match key.split_once('/') {
        Some((p, field)) if p == prefix => Some(field),
        _ => None,
    }
}

fn child_path(parent: &str, key: &str) -> String {
    if parent.is_empty() {
        key.to_owned()
    } else {
        format!("{parent}.{key}")
    }
}

fn element_path(list_path: &str) -> String {
    format!("{list_path}[]")
}

fn display_path(path: &str) -> String {
    if path.is_empty() {
        "<root>".to_owned()
    } else {
        path.to_owned()
    }
}

fn kind_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "list",
        Value::Object(_) => "map",
    }
}

fn unknown_patch_type(directive: &Value, map: &Map<String, Value>) -> StrategicPatchError {
    StrategicPatchError::UnknownPatchType {
        directive: super::go_s(directive),
        map: super::go_plus_v_map(map),
    }
}

fn missing_merge_key(map: &Map<String, Value>, key: &str) -> StrategicPatchError {
    StrategicPatchError::MissingMergeKey {
        map: super::go_plus_v_map(map),
        key: key.to_owned(),
    }
}

/// The Go type a decoded JSON value has (`reflect.TypeOf`, as `%s` shows it): integers that
/// fit are `int64` (kube decodes patches preserving them), other numbers `float64`.
fn go_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "%!s(<nil>)",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_i64() => "int64",
        Value::Number(_) => "float64",
        Value::String(_) => "string",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod_schema() -> PatchSchema {
        PatchSchema::for_kind("", "Pod")
    }

    fn apply_ok(original: Value, patch: Value, schema: &PatchSchema) -> Value {
        let out = apply(&original, &patch, schema).expect("patch applies");
        assert_no_directives(&out);
        out
    }

    /// Long lists (20,000 finalizers, containers by name, numbers equal by value) merge by
    /// hashed keys: the same union and order as the pairwise comparison kube makes.
    #[test]
    fn long_lists_merge_by_hashed_keys() {
        let schema = PatchSchema::for_kind("", "ConfigMap");
        let server: Vec<String> = (0..10_000).map(|i| format!("s{i}")).collect();
        let mut patch: Vec<String> = (0..10_000).map(|i| format!("p{i}")).collect();
        patch.push("s5000".into());
        patch.push("p1".into());
        let out = apply_ok(
            json!({"metadata": {"finalizers": server}}),
            json!({"metadata": {"finalizers": patch}}),
            &schema,
        );
        let got: Vec<&str> = out["metadata"]["finalizers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        assert_eq!(got.len(), 20_000);
        let unique: HashSet<&str> = got.iter().copied().collect();
        assert_eq!(unique.len(), 20_000);
        let at = |x: &str| got.iter().position(|g| *g == x).unwrap();
        // Server items keep their order, patch items theirs.
        assert!(at("s1") < at("s2") && at("s4999") < at("s5000") && at("s5000") < at("s5001"));
        assert!(at("p0") < at("p1") && at("p9998") < at("p9999"));
        // Numbers equal by value are one item.
        let out = apply_ok(
            json!({"metadata": {"finalizers": [1, 2.0, 3]}}),
            json!({"metadata": {"finalizers": [2, 1.0, 4]}}),
            &schema,
        );
        assert_eq!(out["metadata"]["finalizers"].as_array().unwrap().len(), 4);
        // Containers by name, with deletes.
        let containers: Vec<Value> = (0..5_000)
            .map(|i| json!({"name": format!("c{i}"), "image": "a"}))
            .collect();
        let mut patch: Vec<Value> = (0..5_000)
            .step_by(2)
            .map(|i| json!({"name": format!("c{i}"), "image": "b"}))
            .collect();
        patch.push(json!({"name": "c1", "$patch": "delete"}));
        let out = apply_ok(
            json!({"spec": {"containers": containers}}),
            json!({"spec": {"containers": patch}}),
            &pod_schema(),
        );
        let cs = out["spec"]["containers"].as_array().unwrap();
        assert_eq!(cs.len(), 4_999);
        assert_eq!(cs[0], json!({"name": "c0", "image": "b"}));
        assert!(cs.iter().all(|c| c["name"] != "c1"));
        assert_eq!(cs.iter().filter(|c| c["image"] == "b").count(), 2_500);
    }

    fn apply_err(original: Value, patch: Value, schema: &PatchSchema) -> StrategicPatchError {
        apply(&original, &patch, schema).expect_err("patch must fail")
    }

    fn assert_no_directives(v: &Value) {
        match v {
            Value::Object(m) => {
                for (k, v) in m {
                    assert!(!is_directive_key(k), "directive {k} leaked");
                    assert_no_directives(v);
                }
            }
            Value::Array(a) => a.iter().for_each(assert_no_directives),
            _ => {}
        }
    }

    fn merging_list_schema() -> PatchSchema {
        PatchSchema::new()
            .with_list("mergingList", ListStrategy::MergeByKey("name"))
            .with_list("mergingIntList", ListStrategy::MergeSet)
    }

    #[test]
    fn containers_merge_by_name_keeping_other_fields() {
        let original = json!({"spec": {"containers": [
            {"name": "app", "image": "app:1", "ports": [{"containerPort": 80}]},
            {"name": "sidecar", "image": "side:1"}
        ]}});
        let patch = json!({"spec": {"containers": [{"name": "app", "image": "app:2"}]}});
        let out = apply_ok(original, patch, &pod_schema());
        assert_eq!(
            out,
            json!({"spec": {"containers": [
                {"name": "app", "image": "app:2", "ports": [{"containerPort": 80}]},
                {"name": "sidecar", "image": "side:1"}
            ]}})
        );
    }

    #[test]
    fn env_merges_by_name_and_null_removes_field() {
        let original = json!({"spec": {"containers": [{"name": "app", "env": [
            {"name": "A", "value": "1"},
            {"name": "B", "value": "2"}
        ]}]}});
        let patch = json!({"spec": {"containers": [{"name": "app", "env": [
            {"name": "B", "value": null, "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
            {"name": "C", "value": "3"}
        ]}]}});
        let out = apply_ok(original, patch, &pod_schema());
        assert_eq!(
            out["spec"]["containers"][0]["env"],
            json!([
                {"name": "A", "value": "1"},
                {"name": "B", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                {"name": "C", "value": "3"}
            ])
        );
    }

    #[test]
    fn ports_merge_by_container_port_with_numeric_equality() {
        let original = json!({"spec": {"containers": [{"name": "app", "ports": [
            {"containerPort": 80, "name": "http"}
        ]}]}});
        let patch = json!({"spec": {"containers": [{"name": "app", "ports": [
            {"containerPort": 80.0, "protocol": "TCP"}
        ]}]}});
        let out = apply_ok(original, patch, &pod_schema());
        // One element: 80 and 80.0 name the same port (the patch's spelling wins).
        assert_eq!(
            out["spec"]["containers"][0]["ports"],
            json!([{"containerPort": 80.0, "name": "http", "protocol": "TCP"}])
        );
    }

    #[test]
    fn volume_mounts_and_volumes_merge() {
        let original = json!({"spec": {
            "volumes": [{"name": "data", "emptyDir": {}}],
            "containers": [{"name": "app", "volumeMounts": [{"mountPath": "/data", "name": "data"}]}]
        }});
        let patch = json!({"spec": {
            "volumes": [{"name": "data", "emptyDir": {"medium": "Memory"}}],
            "containers": [{"name": "app", "volumeMounts": [{"mountPath": "/data", "readOnly": true}]}]
        }});
        let out = apply_ok(original, patch, &pod_schema());
        assert_eq!(
            out,
            json!({"spec": {
                "volumes": [{"name": "data", "emptyDir": {"medium": "Memory"}}],
                "containers": [{"name": "app", "volumeMounts": [
                    {"mountPath": "/data", "name": "data", "readOnly": true}
                ]}]
            }})
        );
    }

    #[test]
    fn finalizers_set_union() {
        let schema = PatchSchema::for_kind("", "ConfigMap");
        let original = json!({"metadata": {"finalizers": ["a", "b"]}});
        let out = apply_ok(
            original.clone(),
            json!({"metadata": {"finalizers": ["b", "c"]}}),
            &schema,
        );
        assert_eq!(out, json!({"metadata": {"finalizers": ["a", "b", "c"]}}));
        // Duplicates in the patch collapse; an empty patch list changes nothing.
        let out = apply_ok(
            original,
            json!({"metadata": {"finalizers": ["a", "a"]}}),
            &schema,
        );
        assert_eq!(out, json!({"metadata": {"finalizers": ["a", "b"]}}));
    }

    #[test]
    fn new_set_member_is_ordered_like_upstream() {
        // Upstream puts new items ahead of live items that follow the last
        // patched live item: `[c]` onto `[a, b]` gives `[c, a, b]`.
        let schema = PatchSchema::common();
        let out = apply_ok(
            json!({"metadata": {"finalizers": ["a", "b"]}}),
            json!({"metadata": {"finalizers": ["c"]}}),
            &schema,
        );
        assert_eq!(out, json!({"metadata": {"finalizers": ["c", "a", "b"]}}));
    }

    #[test]
    fn delete_from_primitive_list() {
        let schema = PatchSchema::common();
        let out = apply_ok(
            json!({"metadata": {"finalizers": ["a", "b", "c"]}}),
            json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["b", "zz"]}}),
            &schema,
        );
        assert_eq!(out, json!({"metadata": {"finalizers": ["a", "c"]}}));
        // A deletion list never creates the list.
        let out = apply_ok(
            json!({"metadata": {"name": "x"}}),
            json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["b"]}}),
            &schema,
        );
        assert_eq!(out, json!({"metadata": {"name": "x"}}));
        // Malformed directive key.
        let err = apply_err(
            json!({}),
            json!({"$deleteFromPrimitiveList": ["b"]}),
            &schema,
        );
        assert!(matches!(
            err,
            StrategicPatchError::InvalidDeleteFromPrimitiveList
        ));
    }

    #[test]
    fn patch_delete_removes_container() {
        let original = json!({"spec": {"containers": [
            {"name": "app", "image": "app:1"},
            {"name": "sidecar", "image": "side:1"}
        ]}});
        let patch = json!({"spec": {"containers": [{"name": "sidecar", "$patch": "delete"}]}});
        let out = apply_ok(original, patch, &pod_schema());
        assert_eq!(
            out,
            json!({"spec": {"containers": [{"name": "app", "image": "app:1"}]}})
        );
    }

    #[test]
    fn patch_delete_removes_all_duplicates() {
        let out = apply_ok(
            json!({"mergingList": [
                {"name": 1}, {"name": 1}, {"name": 2, "value": "a"}, {"name": 3}, {"name": 3}
            ]}),
            json!({"mergingList": [
                {"name": 1, "$patch": "delete"}, {"name": 3, "$patch": "delete"}
            ]}),
            &merging_list_schema(),
        );
        assert_eq!(out, json!({"mergingList": [{"name": 2, "value": "a"}]}));
    }

    #[test]
    fn missing_merge_key_is_an_error() {
        let original = json!({"spec": {"containers": [{"name": "app"}]}});
        let err = apply_err(
            original.clone(),
            json!({"spec": {"containers": [{"$patch": "delete", "image": "x"}]}}),
            &pod_schema(),
        );
        assert!(
            matches!(err, StrategicPatchError::MissingMergeKey { ref key, .. } if key == "name")
        );
        assert!(err
            .to_string()
            .contains("does not contain declared merge key: name"));
        let err = apply_err(
            original,
            json!({"spec": {"containers": [{"image": "x"}]}}),
            &pod_schema(),
        );
        assert!(matches!(err, StrategicPatchError::MissingMergeKey { .. }));
    }

    #[test]
    fn patch_replace_on_list() {
        let original = json!({"spec": {"containers": [
            {"name": "app", "image": "app:1"},
            {"name": "sidecar", "image": "side:1"}
        ]}});
        let out = apply_ok(
            original.clone(),
            json!({"spec": {"containers": [
                {"$patch": "replace"},
                {"name": "new", "image": "new:1"}
            ]}}),
            &pod_schema(),
        );
        assert_eq!(
            out,
            json!({"spec": {"containers": [{"name": "new", "image": "new:1"}]}})
        );
        let out = apply_ok(
            original,
            json!({"spec": {"containers": [{"$patch": "replace"}]}}),
            &pod_schema(),
        );
        assert_eq!(out, json!({"spec": {"containers": []}}));
    }

    #[test]
    fn patch_replace_on_map() {
        let original = json!({"metadata": {"name": "x", "labels": {"a": "1", "b": "2"}}});
        let patch = json!({"metadata": {"labels": {"$patch": "replace", "c": "3"}}});
        let out = apply_ok(original, patch, &pod_schema());
        assert_eq!(
            out,
            json!({"metadata": {"name": "x", "labels": {"c": "3"}}})
        );
    }

    #[test]
    fn patch_replace_at_root() {
        let original = json!({"name": 1, "value": 1});
        let out = apply_ok(
            original.clone(),
            json!({"$patch": "replace", "other": "a"}),
            &PatchSchema::new(),
        );
        assert_eq!(out, json!({"other": "a"}));
        let out = apply_ok(original, json!({"$patch": "replace"}), &PatchSchema::new());
        assert_eq!(out, json!({}));
    }

    #[test]
    fn patch_delete_on_map() {
        let schema = PatchSchema::new();
        // Existing map: emptied, as upstream does.
        let out = apply_ok(
            json!({"simpleMap": {"key1": 1, "key2": 1}, "other": 1}),
            json!({"simpleMap": {"$patch": "delete"}}),
            &schema,
        );
        assert_eq!(out, json!({"simpleMap": {}, "other": 1}));
        // Absent key: not created.
        let out = apply_ok(
            json!({"other": 1}),
            json!({"simpleMap": {"$patch": "delete"}}),
            &schema,
        );
        assert_eq!(out, json!({"other": 1}));
        // Value of another type: removed.
        let out = apply_ok(
            json!({"simpleMap": "scalar", "other": 1}),
            json!({"simpleMap": {"$patch": "delete"}}),
            &schema,
        );
        assert_eq!(out, json!({"other": 1}));
        // Root: empty document.
        let out = apply_ok(json!({"a": 1}), json!({"$patch": "delete"}), &schema);
        assert_eq!(out, json!({}));
    }

    #[test]
    fn patch_merge_directive_is_default() {
        let out = apply_ok(
            json!({"metadata": {"labels": {"a": "1"}}}),
            json!({"metadata": {"labels": {"$patch": "merge", "b": "2"}}}),
            &PatchSchema::common(),
        );
        assert_eq!(out, json!({"metadata": {"labels": {"a": "1", "b": "2"}}}));
    }

    #[test]
    fn unknown_patch_directive_is_an_error() {
        let err = apply_err(
            json!({"metadata": {"labels": {}}}),
            json!({"metadata": {"labels": {"$patch": "explode"}}}),
            &pod_schema(),
        );
        assert!(matches!(
            err,
            StrategicPatchError::UnknownPatchType { ref directive, .. } if directive == "explode"
        ));
        assert!(err
            .to_string()
            .starts_with("unknown patch type: explode in map:"));
        let err = apply_err(
            json!({"spec": {"containers": [{"name": "a"}]}}),
            json!({"spec": {"containers": [{"name": "a", "$patch": 3}]}}),
            &pod_schema(),
        );
        assert!(matches!(err, StrategicPatchError::UnknownPatchType { .. }));
        // Also inside values that are copied wholesale.
        let err = apply_err(
            json!({}),
            json!({"new": {"$patch": "bogus"}}),
            &pod_schema(),
        );
        assert!(matches!(err, StrategicPatchError::UnknownPatchType { .. }));
    }

    #[test]
    fn set_element_order_reorders_containers() {
        let original = json!({"spec": {"containers": [
            {"name": "a", "image": "a"},
            {"name": "b", "image": "b"},
            {"name": "c", "image": "c"}
        ]}});
        let patch = json!({"spec": {
            "$setElementOrder/containers": [{"name": "c"}, {"name": "a"}, {"name": "b"}],
            "containers": [{"name": "a", "image": "a2"}]
        }});
        let out = apply_ok(original, patch, &pod_schema());
        assert_eq!(
            out,
            json!({"spec": {"containers": [
                {"name": "c", "image": "c"},
                {"name": "a", "image": "a2"},
                {"name": "b", "image": "b"}
            ]}})
        );
    }

    #[test]
    fn set_element_order_interleaves_server_only_items() {
        // Upstream test "set elements order in a list with server-only items 3".
        let original = json!({"mergingList": [
            {"name": 1, "other": "a"}, {"name": 2, "value": 2}, {"name": 7}, {"name": 9},
            {"name": 8}, {"name": 3, "value": 3}, {"name": 4, "value": 4}
        ]});
        let patch = json!({"$setElementOrder/mergingList": [
            {"name": 2}, {"name": 1}, {"name": 4}, {"name": 3}
        ]});
        let out = apply_ok(original, patch, &merging_list_schema());
        assert_eq!(
            out,
            json!({"mergingList": [
                {"name": 2, "value": 2}, {"name": 1, "other": "a"}, {"name": 7}, {"name": 9},
                {"name": 8}, {"name": 4, "value": 4}, {"name": 3, "value": 3}
            ]})
        );
    }

    #[test]
    fn set_element_order_adds_item_before_server_only() {
        // Upstream test "add map to merging list by pointer".
        let out = apply_ok(
            json!({"mergingList": [{"name": 1, "other": "a"}, {"name": 3}]}),
            json!({
                "$setElementOrder/mergingList": [{"name": 1}, {"name": 2}],
                "mergingList": [{"name": 2}]
            }),
            &merging_list_schema(),
        );
        assert_eq!(
            out,
            json!({"mergingList": [{"name": 1, "other": "a"}, {"name": 2}, {"name": 3}]})
        );
    }

    #[test]
    fn set_element_order_mismatch_is_an_error() {
        let err = apply_err(
            json!({"mergingList": [{"name": 1}, {"name": 3}, {"name": 2}]}),
            json!({
                "$setElementOrder/mergingList": [{"name": 1}, {"name": 2}, {"name": 3}],
                "mergingList": [{"name": 3, "value": 3}, {"name": 1, "value": 1}]
            }),
            &merging_list_schema(),
        );
        assert!(matches!(
            err,
            StrategicPatchError::SetElementOrderMismatch { .. }
        ));
        assert!(err.to_string().contains("doesn't match"));
        // kube's `mergepatch.ErrBadArgType` for an order that is no list; its 400 for a
        // directive that names no field.
        let err = apply_err(
            json!({}),
            json!({"$setElementOrder/mergingList": {"name": 1}}),
            &merging_list_schema(),
        );
        assert_eq!(
            err.to_string(),
            "expected a []interface {}, but received a map[string]interface {}"
        );
        let err = apply_err(
            json!({}),
            json!({"$setElementOrder": [{"name": 1}]}),
            &merging_list_schema(),
        );
        assert!(matches!(err, StrategicPatchError::InvalidSetElementOrder));
    }

    #[test]
    fn set_element_order_on_primitive_list_with_deletions() {
        // What `kubectl apply` sends when finalizers go from [a, b] to [b, d]
        // while the server also added c.
        let out = apply_ok(
            json!({"metadata": {"finalizers": ["a", "b", "c"]}}),
            json!({"metadata": {
                "$setElementOrder/finalizers": ["b", "d"],
                "$deleteFromPrimitiveList/finalizers": ["a"],
                "finalizers": ["d"]
            }}),
            &PatchSchema::common(),
        );
        assert_eq!(out, json!({"metadata": {"finalizers": ["b", "d", "c"]}}));
        // Order list naming an item that does not exist is fine.
        let out = apply_ok(
            json!({"mergingIntList": [1, 3]}),
            json!({"$setElementOrder/mergingIntList": [3, 2, 1]}),
            &merging_list_schema(),
        );
        assert_eq!(out, json!({"mergingIntList": [3, 1]}));
    }

    #[test]
    fn kubectl_apply_style_patch_on_deployment() {
        let schema = PatchSchema::for_kind("apps", "Deployment");
        let original = json!({"spec": {"replicas": 1, "template": {"spec": {"containers": [
            {"name": "nginx", "image": "nginx:1.14", "ports": [{"containerPort": 80}]},
            {"name": "injected", "image": "proxy"}
        ]}}}});
        let patch = json!({"spec": {"template": {"spec": {
            "$setElementOrder/containers": [{"name": "nginx"}, {"name": "log"}],
            "containers": [
                {"name": "nginx", "image": "nginx:1.16"},
                {"name": "log", "image": "busybox"}
            ]
        }}}});
        let out = apply_ok(original, patch, &schema);
        assert_eq!(
            out,
            json!({"spec": {"replicas": 1, "template": {"spec": {"containers": [
                {"name": "nginx", "image": "nginx:1.16", "ports": [{"containerPort": 80}]},
                {"name": "log", "image": "busybox"},
                {"name": "injected", "image": "proxy"}
            ]}}}})
        );
    }

    #[test]
    fn null_deletes_a_label() {
        let out = apply_ok(
            json!({"metadata": {"labels": {"a": "1", "b": "2"}}}),
            json!({"metadata": {"labels": {"a": null, "missing": null}}}),
            &pod_schema(),
        );
        assert_eq!(out, json!({"metadata": {"labels": {"b": "2"}}}));
    }

    #[test]
    fn configmap_data_merged_preserving_key_order() {
        let schema = PatchSchema::for_kind("", "ConfigMap");
        let out = apply_ok(
            json!({"kind": "ConfigMap", "data": {"z": "1", "a": "2", "m": "3"}}),
            json!({"data": {"a": "20", "b": "4", "m": null}}),
            &schema,
        );
        assert_eq!(
            out.to_string(),
            r#"{"kind":"ConfigMap","data":{"z":"1","a":"20","b":"4"}}"#
        );
    }

    #[test]
    fn lists_in_unknown_kinds_are_replaced() {
        let schema = PatchSchema::for_kind("example.com", "Widget");
        let out = apply_ok(
            json!({"spec": {"items": [1, 2], "objs": [{"name": "a", "x": 1}]}}),
            json!({"spec": {"items": [3], "objs": [{"name": "a", "y": 2}]}}),
            &schema,
        );
        assert_eq!(
            out,
            json!({"spec": {"items": [3], "objs": [{"name": "a", "y": 2}]}})
        );
        // Lists without a strategy in known kinds too (Pod tolerations).
        let out = apply_ok(
            json!({"spec": {"tolerations": [{"key": "a"}]}}),
            json!({"spec": {"tolerations": [{"key": "b"}]}}),
            &pod_schema(),
        );
        assert_eq!(out, json!({"spec": {"tolerations": [{"key": "b"}]}}));
    }

    #[test]
    fn owner_references_merge_by_uid() {
        let schema = PatchSchema::for_kind("", "ConfigMap");
        let out = apply_ok(
            json!({"metadata": {"ownerReferences": [
                {"uid": "u1", "name": "a", "controller": true}
            ]}}),
            json!({"metadata": {"ownerReferences": [
                {"uid": "u1", "blockOwnerDeletion": true},
                {"uid": "u2", "name": "b"}
            ]}}),
            &schema,
        );
        assert_eq!(
            out,
            json!({"metadata": {"ownerReferences": [
                {"uid": "u1", "name": "a", "controller": true, "blockOwnerDeletion": true},
                {"uid": "u2", "name": "b"}
            ]}})
        );
    }

    #[test]
    fn merging_list_order_matches_upstream() {
        let schema = merging_list_schema();
        let original = json!({"mergingList": [
            {"name": 1}, {"name": 2, "value": "b"}, {"name": 3}
        ]});
        // "preserve the order from the patch in a merging list"
        let out = apply_ok(
            original.clone(),
            json!({"mergingList": [
                {"name": 3, "value": "c"}, {"name": 1, "value": "a"}, {"name": 2, "other": "x"}
            ]}),
            &schema,
        );
        assert_eq!(
            out,
            json!({"mergingList": [
                {"name": 3, "value": "c"}, {"name": 1, "value": "a"},
                {"name": 2, "value": "b", "other": "x"}
            ]})
        );
        // "... 2"
        let out = apply_ok(
            original,
            json!({"mergingList": [{"name": 3, "value": "c"}, {"name": 1, "value": "a"}]}),
            &schema,
        );
        assert_eq!(
            out,
            json!({"mergingList": [
                {"name": 2, "value": "b"}, {"name": 3, "value": "c"}, {"name": 1, "value": "a"}
            ]})
        );
        // int lists
        let out = apply_ok(
            json!({"mergingIntList": [1, 2, 3]}),
            json!({"mergingIntList": [3, 1]}),
            &schema,
        );
        assert_eq!(out, json!({"mergingIntList": [2, 3, 1]}));
    }

    #[test]
    fn retain_keys_drops_unlisted_fields() {
        let schema = PatchSchema::for_kind("apps", "Deployment");
        assert!(schema.has_retain_keys("spec.strategy"));
        let out = apply_ok(
            json!({"spec": {"strategy": {
                "type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}
            }}}),
            json!({"spec": {"strategy": {
                "$retainKeys": ["type"], "type": "Recreate", "rollingUpdate": null
            }}}),
            &schema,
        );
        assert_eq!(out, json!({"spec": {"strategy": {"type": "Recreate"}}}));
    }

    #[test]
    fn retain_keys_rejects_unlisted_patch_fields() {
        let err = apply_err(
            json!({"spec": {"strategy": {"type": "RollingUpdate"}}}),
            json!({"spec": {"strategy": {"$retainKeys": ["type"], "rollingUpdate": {}}}}),
            &PatchSchema::for_kind("apps", "Deployment"),
        );
        assert!(matches!(err, StrategicPatchError::InvalidRetainKeys));
        let err = apply_err(
            json!({}),
            json!({"$retainKeys": "type"}),
            &PatchSchema::new(),
        );
        assert!(matches!(err, StrategicPatchError::InvalidRetainKeys));
    }

    #[test]
    fn patch_must_be_an_object() {
        let err = apply_err(json!({}), json!([1, 2]), &PatchSchema::new());
        assert!(matches!(
            err,
            StrategicPatchError::NotAnObject {
                what: "patch",
                actual: "list"
            }
        ));
        let err = apply_err(json!("x"), json!({}), &PatchSchema::new());
        assert!(matches!(err, StrategicPatchError::NotAnObject { .. }));
        // A null original is treated as an empty document.
        let out = apply_ok(
            Value::Null,
            json!({"a": {"b": null, "c": 1}}),
            &PatchSchema::new(),
        );
        assert_eq!(out, json!({"a": {"c": 1}}));
    }

    #[test]
    fn directives_never_leak_into_new_subtrees() {
        let schema = PatchSchema::for_kind("apps", "Deployment");
        let out = apply_ok(
            json!({"metadata": {"name": "d"}}),
            json!({"spec": {"template": {
                "metadata": {"labels": {"$patch": "replace", "app": "x"}},
                "spec": {
                    "$setElementOrder/containers": [{"name": "a"}],
                    "containers": [{"name": "a", "image": "x", "env": [
                        {"name": "E", "$patch": "delete"}
                    ]}],
                    "volumes": [{"$patch": "replace"}],
                    "tolerations": [{"key": "k", "$patch": "merge"}, {"$patch": "delete"}]
                }
            }}}),
            &schema,
        );
        assert_eq!(
            out,
            json!({"metadata": {"name": "d"}, "spec": {"template": {
                "metadata": {"labels": {"app": "x"}},
                "spec": {
                    "containers": [{"name": "a", "image": "x", "env": []}],
                    "volumes": [],
                    "tolerations": [{"key": "k"}]
                }
            }}})
        );
    }

    #[test]
    fn type_changes_take_the_cleaned_patch_value() {
        let out = apply_ok(
            json!({"a": "scalar", "b": {"x": 1}, "c": [1]}),
            json!({"a": {"k": 1, "n": null}, "b": [1, 2], "c": "now a string"}),
            &PatchSchema::new(),
        );
        assert_eq!(
            out,
            json!({"a": {"k": 1}, "b": [1, 2], "c": "now a string"})
        );
    }

    #[test]
    fn node_taints_replaced_conditions_and_addresses_merged() {
        let schema = PatchSchema::for_kind("", "Node");
        assert_eq!(schema.list_strategy("spec.taints"), ListStrategy::Replace);
        let out = apply_ok(
            json!({
                "spec": {"taints": [{"key": "a", "effect": "NoSchedule"}]},
                "status": {
                    "conditions": [
                        {"type": "Ready", "status": "False"},
                        {"type": "MemoryPressure", "status": "False"}
                    ],
                    "addresses": [{"type": "InternalIP", "address": "10.0.0.1"}]
                }
            }),
            json!({
                "spec": {"taints": [{"key": "b", "effect": "NoExecute"}]},
                "status": {
                    "conditions": [{"type": "Ready", "status": "True"}],
                    "addresses": [{"type": "Hostname", "address": "n1"}]
                }
            }),
            &schema,
        );
        assert_eq!(
            out,
            json!({
                "spec": {"taints": [{"key": "b", "effect": "NoExecute"}]},
                "status": {
                    "conditions": [
                        {"type": "Ready", "status": "True"},
                        {"type": "MemoryPressure", "status": "False"}
                    ],
                    "addresses": [
                        {"type": "Hostname", "address": "n1"},
                        {"type": "InternalIP", "address": "10.0.0.1"}
                    ]
                }
            })
        );
    }

    #[test]
    fn pod_status_conditions_and_pod_ips_merge() {
        let out = apply_ok(
            json!({"status": {
                "conditions": [{"type": "Ready", "status": "False"}],
                "podIPs": [{"ip": "10.0.0.1"}]
            }}),
            json!({"status": {
                "conditions": [{"type": "Ready", "status": "True"}],
                "podIPs": [{"ip": "fd00::1"}]
            }}),
            &pod_schema(),
        );
        assert_eq!(
            out["status"]["conditions"],
            json!([{"type": "Ready", "status": "True"}])
        );
        assert_eq!(
            out["status"]["podIPs"],
            json!([{"ip": "fd00::1"}, {"ip": "10.0.0.1"}])
        );
    }

    #[test]
    fn replace_strategy_map_is_replaced() {
        let schema = PatchSchema::for_kind("policy", "PodDisruptionBudget");
        let out = apply_ok(
            json!({"spec": {"minAvailable": 1, "selector": {"matchLabels": {"a": "1"}}}}),
            json!({"spec": {"selector": {"matchLabels": {"b": "2"}}}}),
            &schema,
        );
        assert_eq!(
            out,
            json!({"spec": {"minAvailable": 1, "selector": {"matchLabels": {"b": "2"}}}})
        );
    }

    #[test]
    fn malformed_merging_lists_are_errors() {
        let schema = merging_list_schema()
            .with_list("set", ListStrategy::MergeSet)
            .with_list("nested", ListStrategy::MergeSet);
        let err = apply_err(
            json!({"set": [{"a": 1}]}),
            json!({"set": [{"a": 2}]}),
            &schema,
        );
        assert!(matches!(err, StrategicPatchError::NoMergeKey { ref path } if path == "set"));
        let err = apply_err(
            json!({"mergingList": [{"name": 1}]}),
            json!({"mergingList": ["x"]}),
            &schema,
        );
        assert!(matches!(err, StrategicPatchError::MixedListElements { .. }));
        let err = apply_err(json!({"nested": [[1]]}), json!({"nested": [[2]]}), &schema);
        assert!(matches!(err, StrategicPatchError::ListOfLists));
    }

    #[test]
    fn schema_tables() {
        let unknown = PatchSchema::for_kind("example.com", "Widget");
        assert_eq!(
            unknown.list_strategy("metadata.ownerReferences"),
            ListStrategy::MergeByKey("uid")
        );
        assert_eq!(
            unknown.list_strategy("metadata.finalizers"),
            ListStrategy::MergeSet
        );
        assert_eq!(
            unknown.list_strategy("spec.containers"),
            ListStrategy::Replace
        );

        let pod = pod_schema();
        for (path, strategy) in [
            ("spec.containers", ListStrategy::MergeByKey("name")),
            (
                "spec.initContainers[].env",
                ListStrategy::MergeByKey("name"),
            ),
            (
                "spec.ephemeralContainers[].volumeDevices",
                ListStrategy::MergeByKey("devicePath"),
            ),
            ("spec.imagePullSecrets", ListStrategy::MergeByKey("name")),
            ("spec.hostAliases", ListStrategy::MergeByKey("ip")),
            ("status.podIPs", ListStrategy::MergeByKey("ip")),
            ("spec.tolerations", ListStrategy::Replace),
        ] {
            assert_eq!(pod.list_strategy(path), strategy, "{path}");
        }
        assert!(pod.has_retain_keys("spec.volumes"));

        for kind in ["Deployment", "ReplicaSet", "StatefulSet", "DaemonSet"] {
            let s = PatchSchema::for_kind("apps", kind);
            assert_eq!(
                s.list_strategy("spec.template.spec.containers[].ports"),
                ListStrategy::MergeByKey("containerPort"),
                "{kind}"
            );
            assert_eq!(
                s.list_strategy("status.conditions"),
                ListStrategy::MergeByKey("type"),
                "{kind}"
            );
        }
        let cron = PatchSchema::for_kind("batch", "CronJob");
        assert_eq!(
            cron.list_strategy("spec.jobTemplate.spec.template.spec.volumes"),
            ListStrategy::MergeByKey("name")
        );
        let custom = PatchSchema::new().with_list("spec.ports", ListStrategy::MergeByKey("port"));
        assert_eq!(
            custom.list_strategy("metadata.finalizers"),
            ListStrategy::Replace
        );
        assert_eq!(
            custom.list_strategy("spec.ports"),
            ListStrategy::MergeByKey("port")
        );
    }

    #[test]
    fn inputs_are_not_modified() {
        let original = json!({"spec": {"containers": [{"name": "a"}]}});
        let patch = json!({"spec": {"containers": [{"name": "a", "$patch": "delete"}]}});
        let (o, p) = (original.clone(), patch.clone());
        let out = apply_ok(original.clone(), patch.clone(), &pod_schema());
        assert_eq!(out, json!({"spec": {"containers": []}}));
        assert_eq!((original, patch), (o, p));
    }

    /// Removing most of a big map's keys (`null`s and `$patch: delete`) is one pass, and
    /// the surviving keys keep their order, whatever the order of the patch.
    #[test]
    fn deleting_many_keys_keeps_the_order_of_the_rest() {
        let n = 20_000;
        // Neither sorted nor in index order: 7919 is prime to 20,000.
        let keys: Vec<String> = (0..n).map(|i| format!("k{}", i * 7_919 % n)).collect();
        let data: Map<String, Value> = keys.iter().map(|k| (k.clone(), json!("v"))).collect();
        let mut changes: Vec<(String, Value)> = Vec::new();
        let mut expected: Vec<(String, Value)> = Vec::new();
        for (i, k) in keys.iter().enumerate() {
            match i % 4 {
                0 | 1 => changes.push((k.clone(), Value::Null)),
                // A scalar meeting a deleted map is removed.
                2 if i % 400 == 2 => changes.push((k.clone(), json!({"$patch": "delete"}))),
                2 => {
                    changes.push((k.clone(), json!("w")));
                    expected.push((k.clone(), json!("w")));
                }
                _ => expected.push((k.clone(), json!("v"))),
            }
        }
        changes.push(("absent".to_owned(), Value::Null));
        changes.push(("new".to_owned(), json!("x")));
        expected.push(("new".to_owned(), json!("x")));
        // The patch lists the keys backwards.
        let patch: Map<String, Value> = changes.into_iter().rev().collect();
        let out = apply_ok(
            json!({"data": data}),
            json!({"data": patch}),
            &PatchSchema::for_kind("", "ConfigMap"),
        );
        let got: Vec<(String, Value)> = out["data"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        assert_eq!(got.len(), n / 4 + n / 4 - n / 400 + 1);
        assert_eq!(got, expected);
    }

    /// Merges one keyed-list patch (merges, new items, a duplicate, deletes, optionally
    /// `$setElementOrder`) whose merge keys are made by `make`, and returns the result as
    /// (the index each key was made from, the item's other fields).
    const TWO_POW_53: u64 = 1 << 53;

    fn keyed_merge_shape(
        make: &dyn Fn(usize) -> Value,
        n: usize,
        with_order: bool,
    ) -> Vec<(usize, Value)> {
        let server: Vec<Value> = (0..n).map(|i| json!({"name": make(i), "s": i})).collect();
        let mut patch: Vec<Value> = Vec::new();
        for j in (0..n / 3).rev() {
            patch.push(json!({"name": make(3 * j), "p": j}));
            if j % 2 == 0 {
                patch.push(json!({"name": make(n + j), "p": j}));
            }
        }
        patch.push(json!({"name": make(0), "q": 1}));
        for i in (1..n).step_by(7) {
            patch.push(json!({"name": make(i), "$patch": "delete"}));
        }
        let mut order: Vec<Value> = patch
            .iter()
            .filter(|p| p.get("$patch").is_none())
            .map(|p| json!({"name": p["name"]}))
            .collect();
        order.extend((0..n).rev().step_by(5).map(|i| json!({"name": make(i)})));
        let mut body = json!({"mergingList": patch});
        if with_order {
            body["$setElementOrder/mergingList"] = Value::Array(order);
        }
        let ids: HashMap<String, usize> = (0..2 * n).map(|i| (make(i).to_string(), i)).collect();
        let out = apply_ok(json!({"mergingList": server}), body, &merging_list_schema());
        out["mergingList"]
            .as_array()
            .unwrap()
            .iter()
            .map(|item| {
                let mut rest = item.as_object().unwrap().clone();
                let name = rest.shift_remove("name").unwrap();
                (ids[&name.to_string()], Value::Object(rest))
            })
            .collect()
    }

    /// Merge keys that are lists, maps, floats or integers beyond 2^53 are hashed like
    /// strings, and the merge comes out exactly as with string keys (which a scan gave).
    #[test]
    fn keyed_lists_with_any_key_type_merge_like_string_keys() {
        let n = 3_000;
        let makes: [&dyn Fn(usize) -> Value; 4] = [
            &|i: usize| json!([i, "x"]),
            &|i: usize| json!({"id": i, "tags": [i, {"a": "b"}]}),
            &|i: usize| json!(i as f64 + 0.5),
            &|i: usize| json!((1_u64 << 63) + i as u64),
        ];
        for with_order in [false, true] {
            let expected = keyed_merge_shape(&|i: usize| json!(format!("k{i}")), n, with_order);
            assert!(expected
                .iter()
                .any(|(_, r)| r.get("s").is_some() && r.get("p").is_some()));
            assert!(expected.iter().any(|(i, _)| *i >= n));
            for make in makes {
                assert_eq!(keyed_merge_shape(make, n, with_order), expected);
            }
        }
    }

    /// Non-scalar merge keys compare like `values_equal` (maps regardless of key order,
    /// `1` != `1.0` inside a list), and a key changed by a merge (a `null` dropped from a
    /// map key) is what later patch items match, as a scan of the list would see it.
    #[test]
    fn keyed_lists_with_non_scalar_keys() {
        let out = apply_ok(
            json!({"mergingList": [
                {"name": {"a": 1, "b": [1]}, "v": 1},
                {"name": [1], "v": 2},
                {"name": {"a": 1, "n": null}, "v": 3}
            ]}),
            json!({"mergingList": [
                {"name": {"b": [1], "a": 1}, "w": 1},
                {"name": [1.0], "w": 2},
                {"name": {"a": 1, "n": null}, "w": 3},
                {"name": {"a": 1}, "x": 3}
            ]}),
            &merging_list_schema(),
        );
        assert_eq!(
            out,
            json!({"mergingList": [
                {"name": {"a": 1, "b": [1]}, "v": 1, "w": 1},
                {"name": [1.0], "w": 2},
                {"name": {"a": 1}, "v": 3, "w": 3, "x": 3},
                {"name": [1], "v": 2}
            ]})
        );
        // A number key respelled by a merge: 2^53 + 1 matches 2^53 as a float, takes that
        // spelling, and then matches the integer 2^53.
        let out = apply_ok(
            json!({"mergingList": [{"name": TWO_POW_53 + 1, "v": 1}]}),
            json!({"mergingList": [
                {"name": 9_007_199_254_740_992.0_f64, "a": 1},
                {"name": TWO_POW_53, "b": 1}
            ]}),
            &merging_list_schema(),
        );
        assert_eq!(
            out,
            json!({"mergingList": [{"name": TWO_POW_53, "v": 1, "a": 1, "b": 1}]})
        );
    }

    /// Integers beyond 2^53 that share an f64 are distinct keys, as `values_equal` says,
    /// while a float still equals every integer that rounds to it.
    #[test]
    fn big_integers_sharing_an_f64_are_distinct_keys() {
        let base = 1_u64 << 63;
        let out = apply_ok(
            json!({"mergingIntList": [base + 1, base + 2]}),
            json!({"mergingIntList": [base + 2, base + 3]}),
            &merging_list_schema(),
        );
        assert_eq!(
            out,
            json!({"mergingIntList": [base + 1, base + 2, base + 3]})
        );
        let out = apply_ok(
            json!({"mergingIntList": [base + 1, base + 2]}),
            json!({"mergingIntList": [9_223_372_036_854_775_808.0_f64, base + 3]}),
            &merging_list_schema(),
        );
        assert_eq!(
            out,
            json!({"mergingIntList": [base + 1, base + 2, base + 3]})
        );

        // Keyed: 2,000 even offsets on the server, offsets 0..2,000 in the patch.
        let server: Vec<Value> = (0..2_000_u64)
            .map(|i| json!({"name": base + 2 * i, "s": 1}))
            .collect();
        let patch: Vec<Value> = (0..2_000_u64)
            .map(|i| json!({"name": base + i, "p": 1}))
            .collect();
        let out = apply_ok(
            json!({"mergingList": server}),
            json!({"mergingList": patch}),
            &merging_list_schema(),
        );
        let items = out["mergingList"].as_array().unwrap();
        assert_eq!(items.len(), 3_000);
        let names: HashSet<u64> = items.iter().filter_map(|m| m["name"].as_u64()).collect();
        assert_eq!(names.len(), 3_000);
        let both = items
            .iter()
            .filter(|m| m.get("s").is_some() && m.get("p").is_some())
            .count();
        assert_eq!(both, 1_000);

        let mut index = ValueIndex::default();
        index.insert(&json!(TWO_POW_53 + 1), 0);
        assert_eq!(index.first(&json!(TWO_POW_53)), None);
        assert_eq!(index.first(&json!(TWO_POW_53 + 1)), Some(0));
        assert_eq!(index.first(&json!(9_007_199_254_740_992.0_f64)), Some(0));
        index.insert(&json!(TWO_POW_53), 1);
        assert_eq!(index.first(&json!(TWO_POW_53)), Some(1));
    }

    /// The hash keys agree with `values_equal` on every pair: a home of `a` is a probe of
    /// `b` exactly when the two are equal.
    #[test]
    fn hash_keys_agree_with_values_equal() {
        let samples = [
            json!(null),
            json!(true),
            json!(false),
            json!(0),
            json!(0.0),
            json!(-0.0),
            json!(1),
            json!(1.0),
            json!(-1),
            json!(-1.0),
            json!(1.5),
            json!(TWO_POW_53),
            json!(TWO_POW_53 + 1),
            json!(9_007_199_254_740_992.0_f64),
            json!(i64::MAX),
            json!(i64::MAX as u64 + 1),
            json!(9_223_372_036_854_775_808.0_f64),
            json!(u64::MAX),
            json!(18_446_744_073_709_551_616.0_f64),
            json!(i64::MIN),
            json!(-9_223_372_036_854_775_808.0_f64),
            json!(""),
            json!("a"),
            json!("1"),
            json!("s1:a"),
            json!("n"),
            json!([]),
            json!([1]),
            json!([1.0]),
            json!([0]),
            json!([0.0]),
            json!([-0.0]),
            json!([[]]),
            json!([[1]]),
            json!(["a", "b"]),
            json!(["ab"]),
            json!(["a", ["b"]]),
            json!({}),
            json!({"a": 1}),
            json!({"a": 1.0}),
            json!({"a": 1, "b": 2}),
            json!({"b": 2, "a": 1}),
            json!({"a": null}),
            json!({"a": "b"}),
            json!({"ab": ""}),
            json!({"a": [1, {"x": "y"}]}),
            json!({"a": [1, {"x": "y"}], "b": false}),
        ];
        for a in &samples {
            for b in &samples {
                let wanted = probes(b);
                let hit = homes(a).iter().any(|h| wanted.iter().any(|p| p == h));
                assert_eq!(hit, values_equal(a, b), "{a} vs {b}");
            }
        }
    }
}
