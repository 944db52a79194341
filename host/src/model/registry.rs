//! What the server serves: one [`ResourceInfo`] per resource, looked up by group, version and
//! plural. Built-in kinds are registered at start; custom resources will be added at runtime.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    Namespaced,
    Cluster,
}

/// What a valid `metadata.name` looks like for a resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameRule {
    /// RFC 1123 subdomain (most kinds).
    DnsSubdomain,
    /// RFC 1123 label (namespaces).
    DnsLabel,
    /// Anything usable as one URL path segment (RBAC kinds: `system:discovery`).
    PathSegment,
    /// An IP address in canonical form (IPAddresses, kube's `ValidateIPAddressName`).
    Ip,
}

/// A column of a custom resource's Table (`additionalPrinterColumns`).
#[derive(Debug, Clone)]
pub struct PrinterColumn {
    pub name: String,
    /// integer, number, boolean, string or date.
    pub kind: String,
    pub format: String,
    pub description: String,
    pub priority: u8,
    pub json_path: String,
}

/// A custom resource's `scale` subresource paths.
#[derive(Debug, Clone)]
pub struct ScaleSubresource {
    pub spec_replicas_path: String,
    pub status_replicas_path: String,
    pub label_selector_path: Option<String>,
}

/// What a CustomResourceDefinition adds to a served version.
#[derive(Clone)]
pub struct CustomResource {
    /// `plural.group`: the CRD object this version comes from.
    pub crd_name: String,
    /// The version objects are stored in (`apiVersion` is rewritten on the way in and out).
    pub storage_version: String,
    /// This version's structural schema (none only if it failed to parse, which validation
    /// prevents).
    pub schema: Option<Arc<crate::schema::Schema>>,
    /// Every version's structural schema by version name, served or not (kube's
    /// `structuralSchemas`, shared by the CRD's versions): an object read is pruned and
    /// defaulted by the schema of the version it is stored in, an object written through
    /// another version than the storage version is pruned by the storage version's.
    pub schemas: Arc<BTreeMap<String, Arc<crate::schema::Schema>>>,
    /// The `Warning` every request to this version gets when the CRD marks it `deprecated`:
    /// its `deprecationWarning`, else kube's default text (`crd::deprecation_warning`).
    pub deprecation_warning: Option<String>,
    pub printer_columns: Vec<PrinterColumn>,
    /// This version's `selectableFields`, as field selectors name them (`spec.color`).
    pub selectable_fields: Vec<String>,
    /// The CRD's conversion webhook (`strategy: Webhook`): objects stored in another version
    /// are converted through it (`crd::conversion`); `None`: only `apiVersion` is rewritten.
    pub webhook: Option<Arc<crate::crd::conversion::Webhook>>,
    /// The CRD's resourceVersion when this version's schema became what it is (when this was
    /// built, unless the same schema was served before: [`Registry::set_custom`] keeps the
    /// earlier one, so a label or status write on the CRD does not make its objects stale):
    /// objects stored at or before it may predate the schema and are pruned and defaulted when
    /// read (kube's decoder does it on every read); later ones were written through this schema
    /// already. After a restart, the CRD's resourceVersion then.
    pub schema_rv: u64,
    /// A hash of this version's `openAPIV3Schema` as written, to tell whether it changed.
    pub schema_hash: u64,
}

impl std::fmt::Debug for CustomResource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CustomResource")
            .field("crd_name", &self.crd_name)
            .field("storage_version", &self.storage_version)
            .field("printer_columns", &self.printer_columns)
            .finish_non_exhaustive()
    }
}

/// A served resource: everything discovery, routing and validation need to know about it.
#[derive(Debug, Clone)]
pub struct ResourceInfo {
    /// "" for the core group.
    pub group: String,
    pub version: String,
    /// Plural, lower case: `configmaps`.
    pub resource: String,
    pub singular: String,
    pub kind: String,
    pub list_kind: String,
    pub scope: Scope,
    pub short_names: Vec<String>,
    pub categories: Vec<String>,
    /// Has a `/status` subresource: the main endpoint ignores `status`, `/status` ignores the rest.
    pub status_subresource: bool,
    /// Has a `scale` subresource (autoscaling/v1 Scale) reading and writing these paths.
    pub scale: Option<ScaleSubresource>,
    /// How names are validated.
    pub name_rule: NameRule,
    /// Set for custom resources (served because of a CRD).
    pub custom: Option<Arc<CustomResource>>,
    /// A virtual, create-only resource (access reviews): nothing is stored.
    pub create_only: bool,
    /// Read only, computed when read (ComponentStatuses): nothing is stored.
    pub computed: bool,
    /// Keeps `metadata.generation` (1 on create, bumped when anything but metadata and status
    /// changes), as kube's strategy for the kind does; custom resources always do.
    pub generation: bool,
    /// A DELETE that removes the object at once answers with it instead of a `Status`.
    pub delete_returns_object: bool,
    /// Stored as another group-version's resource, converted on the way in and out.
    pub conversion: Option<&'static crate::builtin::conversion::Conversion>,
    /// An update may leave out `metadata.resourceVersion` (kube's `AllowUnconditionalUpdate`;
    /// false for custom resources and some built-in kinds).
    pub unconditional_update: bool,
    /// A PUT to a name that does not exist creates the object (kube's `AllowCreateOnUpdate`).
    pub create_on_update: bool,
}

impl ResourceInfo {
    /// The `group/version` string as it appears in `apiVersion`.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// The storage key prefix: `configmaps` or `leases.coordination.k8s.io`.
    pub fn group_resource(&self) -> String {
        if let Some(c) = self.conversion {
            return c.stored_group_resource.to_owned();
        }
        if self.group.is_empty() {
            self.resource.clone()
        } else {
            format!("{}.{}", self.resource, self.group)
        }
    }

    /// turtles' `Controller` kind (`turtles.dev/v1 controllers`), read-only to clients, with
    /// its `log` subresource.
    pub fn is_controllers(&self) -> bool {
        self.group == crate::runtime::controller::GROUP
            && self.resource == crate::runtime::controller::RESOURCE
    }

    pub fn namespaced(&self) -> bool {
        self.scope == Scope::Namespaced
    }

    pub fn is_custom(&self) -> bool {
        self.custom.is_some()
    }

    /// Whether objects of it are stored (not a review, not computed when read).
    pub fn stored(&self) -> bool {
        !self.create_only && !self.computed
    }

    pub fn verbs(&self) -> &'static [&'static str] {
        if self.create_only {
            return &["create"];
        }
        if self.computed {
            return &["get", "list"];
        }
        // Controllers are managed by the host: read only.
        if self.is_controllers() {
            return &["get", "list", "watch"];
        }
        // kube's namespace storage has no DeleteCollection.
        if self.group.is_empty() && self.resource == "namespaces" {
            return &[
                "create", "delete", "get", "list", "patch", "update", "watch",
            ];
        }
        &[
            "create",
            "delete",
            "deletecollection",
            "get",
            "list",
            "patch",
            "update",
            "watch",
        ]
    }
}

/// All served resources. Readers take a cheap snapshot; writers (CRDs) replace entries and bump
/// a change counter that [`Registry::changes`] subscribers see.
#[derive(Debug)]
pub struct Registry {
    inner: RwLock<Arc<Vec<Arc<ResourceInfo>>>>,
    changed: tokio::sync::watch::Sender<u64>,
}

impl Default for Registry {
    fn default() -> Self {
        Self {
            inner: RwLock::default(),
            changed: tokio::sync::watch::Sender::new(0),
        }
    }
}

impl Registry {
    /// A registry with the built-in kinds.
    pub fn with_builtins() -> Self {
        let list = crate::builtin::RESOURCES
            .iter()
            .map(|b| {
                Arc::new(ResourceInfo {
                    group: b.group.into(),
                    version: b.version.into(),
                    resource: b.resource.into(),
                    singular: b.kind.to_lowercase(),
                    kind: b.kind.into(),
                    list_kind: format!("{}List", b.kind),
                    scope: if b.namespaced {
                        Scope::Namespaced
                    } else {
                        Scope::Cluster
                    },
                    short_names: b.short.iter().map(|s| (*s).into()).collect(),
                    categories: b.categories.iter().map(|s| (*s).into()).collect(),
                    status_subresource: b.status,
                    scale: b.scale.then(|| ScaleSubresource {
                        spec_replicas_path: ".spec.replicas".into(),
                        status_replicas_path: ".status.replicas".into(),
                        label_selector_path: Some(".spec.selector".into()),
                    }),
                    name_rule: match (b.group, b.resource) {
                        // kube's ValidateStatefulSetName: a Pod's hostname is `NAME-N`.
                        ("", "namespaces") | ("apps", "statefulsets") => NameRule::DnsLabel,
                        ("rbac.authorization.k8s.io", _) => NameRule::PathSegment,
                        // An APIService is named `version.group`, checked by its own validation.
                        ("apiregistration.k8s.io", _) => NameRule::PathSegment,
                        ("networking.k8s.io", "ipaddresses") => NameRule::Ip,
                        _ => NameRule::DnsSubdomain,
                    },
                    custom: None,
                    create_only: b.create_only,
                    computed: b.computed,
                    generation: b.generation,
                    delete_returns_object: b.delete_returns_object,
                    unconditional_update: !b.conditional_update,
                    create_on_update: b.create_on_update,
                    conversion: b.conversion,
                })
            })
            .collect();
        Self {
            inner: RwLock::new(Arc::new(list)),
            changed: tokio::sync::watch::Sender::new(0),
        }
    }

    pub fn snapshot(&self) -> Arc<Vec<Arc<ResourceInfo>>> {
        match self.inner.read() {
            Ok(g) => g.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// Serve exactly `resources` for the CRD named `crd_name` (replacing what it served before).
    pub fn set_custom(&self, crd_name: &str, resources: Vec<Arc<ResourceInfo>>) {
        let mut g = match self.inner.write() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        };
        let (mut list, before): (Vec<Arc<ResourceInfo>>, Vec<Arc<ResourceInfo>>) = g
            .iter()
            .cloned()
            .partition(|r| r.custom.as_ref().is_none_or(|c| c.crd_name != crd_name));
        // A version whose schema did not change keeps the revision it changed at.
        list.extend(resources.into_iter().map(|r| {
            let Some(c) = &r.custom else { return r };
            let same = before.iter().find_map(|b| {
                b.custom.as_ref().filter(|o| {
                    b.version == r.version
                        && o.schema_hash == c.schema_hash
                        && o.schema_rv < c.schema_rv
                })
            });
            let Some(old) = same else { return r };
            let mut kept = (*r).clone();
            kept.custom = Some(Arc::new(CustomResource {
                schema_rv: old.schema_rv,
                ..(**c).clone()
            }));
            Arc::new(kept)
        }));
        *g = Arc::new(list);
        drop(g);
        self.changed.send_modify(|n| *n += 1);
    }

    /// How many times the set of served resources has changed (what a cached lookup is valid
    /// for).
    pub fn revision(&self) -> u64 {
        *self.changed.borrow()
    }

    /// Notified whenever the set of served resources changes.
    pub fn changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.changed.subscribe()
    }

    /// The resource serving `kind` of `group` (an owner reference's target), preferring
    /// `version`, else any served version of that group and kind.
    pub fn lookup_kind(&self, group: &str, version: &str, kind: &str) -> Option<Arc<ResourceInfo>> {
        let snap = self.snapshot();
        let mut candidates = snap
            .iter()
            .filter(|r| r.group == group && r.kind == kind && r.stored());
        let first = candidates.next()?;
        if first.version == version {
            return Some(first.clone());
        }
        Some(
            candidates
                .find(|r| r.version == version)
                .unwrap_or(first)
                .clone(),
        )
    }

    /// One resource per stored kind (the storage version of custom resources), for controllers
    /// that follow every kind.
    pub fn stored_resources(&self) -> Vec<Arc<ResourceInfo>> {
        let mut seen = std::collections::HashSet::new();
        let mut out = Vec::new();
        for r in self.snapshot().iter().filter(|r| r.stored()) {
            let storage = r
                .custom
                .as_ref()
                .is_none_or(|c| c.storage_version == r.version);
            if storage && seen.insert(r.group_resource()) {
                out.push(r.clone());
            }
        }
        out
    }

    /// Stop serving what the CRD named `crd_name` served.
    pub fn remove_custom(&self, crd_name: &str) {
        self.set_custom(crd_name, Vec::new());
    }

    /// The storage version's resource of a CRD, if served.
    pub fn custom_resources(&self, crd_name: &str) -> Vec<Arc<ResourceInfo>> {
        self.snapshot()
            .iter()
            .filter(|r| r.custom.as_ref().is_some_and(|c| c.crd_name == crd_name))
            .cloned()
            .collect()
    }

    /// kube's `EquivalentResourcesFor`: the other group-versions serving the same stored objects
    /// as `ri` (HPAs at autoscaling/v1 and v2, core and events.k8s.io Events, every served
    /// version of a CRD) that serve `subresource` too, in registration order. What admission's
    /// `matchPolicy: Equivalent` matches.
    pub fn equivalents(&self, ri: &ResourceInfo, subresource: &str) -> Vec<Arc<ResourceInfo>> {
        let own = ri.group_resource();
        self.snapshot()
            .iter()
            .filter(|r| {
                let same =
                    r.group == ri.group && r.version == ri.version && r.resource == ri.resource;
                if same || !r.stored() {
                    return false;
                }
                r.group_resource() == own
                    && match subresource {
                        "" => true,
                        "status" => r.status_subresource,
                        "scale" => r.scale.is_some(),
                        _ => false,
                    }
            })
            .cloned()
            .collect()
    }

    pub fn lookup(&self, group: &str, version: &str, resource: &str) -> Option<Arc<ResourceInfo>> {
        self.snapshot()
            .iter()
            .find(|r| r.group == group && r.version == version && r.resource == resource)
            .cloned()
    }

    /// Does any resource live in this group/version?
    pub fn has_group_version(&self, group: &str, version: &str) -> bool {
        self.snapshot()
            .iter()
            .any(|r| r.group == group && r.version == version)
    }

    /// Named groups (not core) with their versions, in registration order.
    pub fn groups(&self) -> BTreeMap<String, Vec<String>> {
        let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for r in self.snapshot().iter().filter(|r| !r.group.is_empty()) {
            let versions = out.entry(r.group.clone()).or_default();
            if !versions.contains(&r.version) {
                versions.push(r.version.clone());
            }
        }
        out
    }

    pub fn in_group_version(&self, group: &str, version: &str) -> Vec<Arc<ResourceInfo>> {
        self.snapshot()
            .iter()
            .filter(|r| r.group == group && r.version == version)
            .cloned()
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtins_are_served() {
        let r = Registry::with_builtins();
        let cm = r.lookup("", "v1", "configmaps").expect("configmaps");
        assert_eq!(cm.kind, "ConfigMap");
        assert_eq!(cm.list_kind, "ConfigMapList");
        assert!(cm.namespaced());
        let lease = r
            .lookup("coordination.k8s.io", "v1", "leases")
            .expect("leases");
        assert_eq!(lease.api_version(), "coordination.k8s.io/v1");
        assert_eq!(lease.group_resource(), "leases.coordination.k8s.io");
        assert!(r.lookup("", "v1", "nope").is_none());
        let hpa = r
            .lookup("autoscaling", "v2", "horizontalpodautoscalers")
            .expect("hpa");
        let eq = r.equivalents(&hpa, "status");
        assert_eq!(eq.len(), 1);
        assert_eq!(eq[0].version, "v1");
        let events = r.lookup("", "v1", "events").expect("events");
        let eq = r.equivalents(&events, "");
        assert_eq!(eq.len(), 1);
        assert_eq!(eq[0].group, "events.k8s.io");
        assert!(r.equivalents(&cm, "").is_empty());
        assert_eq!(
            r.groups().get("coordination.k8s.io"),
            Some(&vec!["v1".to_owned()])
        );
    }
}
