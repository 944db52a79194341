//! The one path every read and mutation takes, whoever sends it: decode -> validate -> admit ->
//! store -> (the store publishes). It knows objects and kube semantics, not HTTP.

use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use serde_json::{json, Value};

use crate::admission::Operation;
use crate::builtin::graceful::{self, Graceful};
use crate::model::meta::{self, metadata, metadata_mut, Meta};
use crate::model::{ApiError, Cause, ObjectKey, ResourceInfo, Scope};
use crate::patch::{self, PatchType};
use crate::selector::{FieldSelector, LabelSelector, SelectorError};
use crate::store::{Precondition, Snapshot, Store, StoreError, StoredObject, WriteOp};

pub type Result<T, E = ApiError> = std::result::Result<T, E>;

/// How long a read waits for a resourceVersion newer than the latest before answering 504.
const TOO_NEW_WAIT: Duration = Duration::from_secs(3);
/// Retries of a write whose precondition lost a race with another writer: a patch or an
/// unconditional update is read and built again (kube's `GuaranteedUpdate` retries without
/// limit, so a client never sees a 409 from concurrency alone). Each lost race is another
/// writer's stored write, so the retries are bounded by the others' progress; the bound only
/// ends a pathological run.
const CONFLICT_RETRIES: usize = 1_000;
/// kube-apiserver's `rbac/bootstrap-roles` hook polls every second for up to 30 s
/// (`wait.Poll(1s, 30s)`) until the store answers; here, the bootstrap objects whose failure may
/// pass are tried again so ([`Service::reconcile_bootstrap_policy`]).
const BOOTSTRAP_RETRY_INTERVAL: Duration = Duration::from_secs(1);
const BOOTSTRAP_RETRY_BUDGET: Duration = Duration::from_secs(30);
/// client-go's `retry.DefaultBackoff`, which the hook's `RetryOnConflict` uses for each object:
/// four tries, the first wait 10 ms, each wait five times the one before (its 10% jitter left
/// out).
const BOOTSTRAP_CONFLICT_TRIES: usize = 4;
const BOOTSTRAP_CONFLICT_BACKOFF: Duration = Duration::from_millis(10);

/// Why a bootstrap RBAC object was not reconciled ([`Service::reconcile_bootstrap_policy`]).
#[derive(Debug, thiserror::Error)]
pub enum BootstrapError {
    /// The policy has an object of a kind this server does not serve.
    #[error("bootstrap object of unserved kind {0}")]
    Unserved(String),
    /// Another writer changed the object before every try.
    #[error("gave up after {0} tries: the object kept changing")]
    KeptChanging(usize),
    /// A read or write of the object failed.
    #[error("{0}")]
    Write(ApiError),
}

impl BootstrapError {
    /// Whether a later try may succeed: a conflict that outlasted the backoff, or a store that
    /// failed, was unavailable or timed out (etcd away, a full disk), which kube's hook waits out
    /// by polling; not a kind that is not served nor an object the API refuses.
    fn may_pass(&self) -> bool {
        match self {
            Self::Unserved(_) => false,
            Self::KeptChanging(_) => true,
            Self::Write(e) => matches!(e.code, 409 | 429 | 500 | 503 | 504),
        }
    }
}

pub const NAMESPACES: &str = "namespaces";
/// Namespaces that exist from the first start.
pub const INITIAL_NAMESPACES: &[&str] = &["default", "kube-system", "kube-public"];
/// The namespaces kube-apiserver keeps (its `system-namespaces` controller): the initial ones
/// and `kube-node-lease` (where kubelets renew their Leases), which may be deleted and is
/// created again at the next start.
pub const SYSTEM_NAMESPACES: &[&str] =
    &["default", "kube-system", "kube-public", "kube-node-lease"];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Subresource {
    Main,
    Status,
    /// `scale`: a write of the object's replicas through its Scale (written like the main
    /// resource; recorded in managedFields and passed to admission as `scale`).
    Scale,
    /// A CertificateSigningRequest's `approval`: only its conditions change
    /// (`builtin::csr`).
    Approval,
    /// A Namespace's `finalize`: the one way to change its `spec.finalizers` (kube's
    /// `FinalizeREST`); its status stays.
    Finalize,
    /// A Pod's `ephemeralcontainers`: only `spec.ephemeralContainers` change, and only by
    /// additions (kube's `EphemeralContainersREST`, what `kubectl debug` writes).
    EphemeralContainers,
    /// A Pod's `resize`: only its containers' `resources` and `resizePolicy` change (kube's
    /// `ResizeREST`, in-place Pod resize).
    Resize,
}

impl Subresource {
    /// The name kube gives it in managedFields and admission (`""` for the main resource).
    pub fn name(self) -> &'static str {
        match self {
            Subresource::Main => "",
            Subresource::Status => "status",
            Subresource::Scale => "scale",
            Subresource::Approval => "approval",
            Subresource::Finalize => "finalize",
            Subresource::EphemeralContainers => "ephemeralcontainers",
            Subresource::Resize => "resize",
        }
    }
}

/// `fieldValidation`: what to do with fields the schema does not know, and with keys a JSON
/// body repeats (kube's strict decoding errors: `unknown field "..."`, `duplicate field "..."`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum FieldValidation {
    Ignore,
    /// kube's server default: accept, with a `Warning` header per unknown or repeated field.
    #[default]
    Warn,
    Strict,
}

#[derive(Debug, Clone, Default)]
pub struct WriteOptions {
    pub dry_run: bool,
    pub field_validation: FieldValidation,
    /// A check of the requesting user's rights on the object about to be stored (RBAC's
    /// escalation rules, `auth::escalation`; who may approve and sign CertificateSigningRequests,
    /// `auth::csr`); the host's own writes carry none.
    pub guard: Option<Arc<dyn WriteGuard>>,
    /// Who asks, for API requests: their writes pass the admission chain (`admission`); the
    /// host's own writes carry none.
    pub user: Option<crate::auth::rbac::UserInfo>,
    /// Who the write's fields are recorded for in `metadata.managedFields` (`fieldManager`, else
    /// derived from the User-Agent); `None`: the host's own write.
    pub manager: Option<String>,
    /// `force` of a server-side apply: take fields other managers own.
    pub force: bool,
    /// Set by the apply path: `metadata.managedFields` of the built object are final.
    pub(crate) applied: bool,
    /// Set by the (JSON, merge, strategic) patch path: with `fieldValidation=Strict` the
    /// patched object was checked as kube's patcher checks it (`decode_patched`, a 422
    /// naming the `patch`), not as a create's or update's body ("cannot be handled as").
    pub(crate) patched: bool,
    /// Set by the patch path unless `fieldValidation=Ignore`: kube's strict decoding errors of
    /// the patch body itself (`duplicate field "data.a"`, `json patch duplicate field
    /// "[1].path"`), reported before the patched object's unknown fields.
    pub(crate) patch_strict: Vec<String>,
    /// The keys a create's or update's JSON body repeated (`model::json::from_slice`, read
    /// unless `fieldValidation=Ignore`), reported with its unknown fields: refused, warned
    /// about or dropped as they are.
    pub duplicates: Vec<crate::model::json::DuplicateField>,
    /// For API requests: the authorizer that decides whether `user` may also `create` the
    /// object, asked when an update or a server-side apply would create it (kube's
    /// `withAuthorization` around create-on-update); the host's own writes carry none.
    pub authorizer: Option<Arc<crate::auth::Authorizer>>,
    /// For API requests: when the request must be answered (`?timeout=`, at most
    /// `--request-timeout`: `api::access::RequestDeadline`), which bounds its admission
    /// webhooks' calls; the host's own writes carry none.
    pub deadline: Option<tokio::time::Instant>,
    /// Set by the create and update handlers, which read the body as kube's handlers do
    /// (`api::body`): a custom resource's body of another `kind` than the resource's is not
    /// refused at the start but decoded without its schema (kube's coercer prunes only its own
    /// kind) and refused when it is validated, after mutating admission, as kube's strategy
    /// refuses it ([`custom_kind_error`]: 422 `Other.example.com "w" is invalid: kind:
    /// Invalid value: "Other": must be Widget`).
    pub custom_kind_validated: bool,
}

/// kube's `customResourceValidator.ValidateTypeMeta` of a custom resource whose `kind` is not
/// its resource's: the 422 its strategy answers (`kind: Invalid value: "Other": must be
/// Widget`), named by the object's own kind, as kube's strategy names it. `None` for the
/// resource's kind.
fn custom_kind_error(ri: &ResourceInfo, obj: &Value) -> Option<ApiError> {
    let kind = obj.get("kind").and_then(Value::as_str).unwrap_or("");
    if !ri.is_custom() || kind == ri.kind {
        return None;
    }
    let mut causes = vec![crate::builtin::validation::field::invalid(
        "kind",
        &Value::String(kind.to_owned()),
        &format!("must be {}", ri.kind),
    )];
    let api_version = obj.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let want = format!("{}/{}", ri.group, ri.version);
    if api_version != want {
        causes.push(crate::builtin::validation::field::invalid(
            "apiVersion",
            &Value::String(api_version.to_owned()),
            &format!("must be {want}"),
        ));
    }
    Some(ApiError::invalid(&ri.group, kind, meta::name(obj), causes))
}

/// A last check on the object a write would store, given the stored object it replaces (`None`
/// on create); runs for dry runs too.
pub trait WriteGuard: Send + Sync + std::fmt::Debug {
    fn check(&self, ri: &ResourceInfo, ns: &str, old: Option<&Value>, new: &Value) -> Result<()>;

    /// When it runs: before admission on what the client sent (kube's RBAC storage checks), or
    /// as validating admission does, after mutation, the kind's strategy and validation.
    fn after_admission(&self) -> bool {
        false
    }
}

/// The result of a write: the object as stored (or as it would be, for a dry run) and any
/// warnings for the client.
#[derive(Debug)]
pub struct Written {
    pub object: Arc<StoredObject>,
    pub warnings: Vec<String>,
    /// A PATCH (server-side apply) that created the object (kube answers 201).
    pub created: bool,
}

impl Written {
    fn new(object: Arc<StoredObject>, warnings: Vec<String>) -> Self {
        Self {
            object,
            warnings,
            created: false,
        }
    }
}

/// What an update's `build` hands [`Service::update_with`]: the new object, the warnings found
/// building it (a `scale` write's strict decoding of its Scale under `Warn`), reported before
/// the write's others, and, when the patch path decoded the object as its kind and the
/// decoder found nothing to drop or rewrite, that decoded copy ([`Service::decode_patched`]):
/// while the object stays equal to it, decoding it again in the pipeline (`decode_custom`'s
/// pruning of a custom resource, `admit`'s decoding of a built-in kind) would find and change
/// nothing, and is skipped. The comparison is what makes the skip sound: whatever changed the
/// object since (mutating admission, what the update strategy puts back from the stored
/// object) makes it unequal, and it is decoded as every write's is.
struct Built {
    value: Value,
    warnings: Vec<String>,
    decoded: Option<Value>,
}

impl From<Value> for Built {
    fn from(value: Value) -> Self {
        Self {
            value,
            warnings: Vec::new(),
            decoded: None,
        }
    }
}

/// The autoscaling/v1 `Scale` of every `scale` subresource (its group, version and kind).
const SCALE: [&str; 3] = ["autoscaling", "v1", "Scale"];

/// kube's refusal of a body it cannot decode into its type (`transformDecodeError`): a 400
/// `ConfigMap in version "v1" cannot be handled as a ConfigMap: ...`.
fn cannot_handle(kind: &str, version: &str, error: impl std::fmt::Display) -> ApiError {
    ApiError::bad_request(format!(
        "{kind} in version \"{version}\" cannot be handled as a {kind}: {error}"
    ))
}

/// kube's patcher's refusal of a patched object (`jsonPatcher.applyPatchToCurrentObject`,
/// `applyPatchToObject`): a 422 `Invalid` with an empty kind and name and one cause naming the
/// `patch`, `"" is invalid: patch: Invalid value: "...": ERROR`. The value shown is the patched
/// object's JSON for a JSON or merge patch (here Go's `json.Marshal` of it, keys sorted
/// throughout; kube re-sorts only the levels the patch touched), the patch as Go prints its map
/// (`%+v`) for a strategic one.
fn patch_refused(patch_type: PatchType, patch: &Value, patched: &Value, error: &str) -> ApiError {
    let shown = if patch_type == PatchType::Strategic {
        patch::go_plus_v(patch)
    } else {
        crate::schema::go_json(patched)
    };
    ApiError::invalid(
        "",
        "",
        "",
        vec![Cause::new(
            "FieldValueInvalid",
            "patch",
            format!(
                "Invalid value: {}: {error}",
                crate::auth::rbac::go_quote(&shown)
            ),
        )],
    )
}

#[derive(Debug, Clone, Default)]
pub struct DeleteOptions {
    pub dry_run: bool,
    pub precondition_uid: Option<String>,
    pub precondition_rv: Option<String>,
    /// How dependents are treated (`propagationPolicy`; none: the default, background).
    pub propagation: Option<Propagation>,
    /// `gracePeriodSeconds`: how long a Pod's containers get to stop (none: the Pod's own
    /// `terminationGracePeriodSeconds`). Other kinds have no graceful deletion and ignore it.
    pub grace_period: Option<i64>,
    /// Who asks (API requests): the delete passes validating admission.
    pub user: Option<crate::auth::rbac::UserInfo>,
    /// When the API request must be answered (see [`WriteOptions::deadline`]).
    pub deadline: Option<tokio::time::Instant>,
}

impl DeleteOptions {
    /// The options as a DELETE's admission request names them (kube's `DeleteOptions` fields
    /// the client set, in its field order; `dryRun` is added with the request's).
    fn admission_options(&self) -> serde_json::Map<String, Value> {
        let mut o = serde_json::Map::new();
        if let Some(g) = self.grace_period {
            o.insert("gracePeriodSeconds".into(), json!(g));
        }
        if self.precondition_uid.is_some() || self.precondition_rv.is_some() {
            let mut p = serde_json::Map::new();
            if let Some(u) = &self.precondition_uid {
                p.insert("uid".into(), json!(u));
            }
            if let Some(rv) = &self.precondition_rv {
                p.insert("resourceVersion".into(), json!(rv));
            }
            o.insert("preconditions".into(), Value::Object(p));
        }
        if let Some(p) = self.propagation {
            let policy = match p {
                Propagation::Background => "Background",
                Propagation::Foreground => "Foreground",
                Propagation::Orphan => "Orphan",
            };
            o.insert("propagationPolicy".into(), json!(policy));
        }
        o
    }
}

/// `DeleteOptions.propagationPolicy`: what happens to an object's dependents (objects whose
/// `ownerReferences` name it). The garbage collector does the work; the delete only records the
/// choice as a finalizer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Propagation {
    /// The object goes now; the garbage collector deletes its dependents after.
    Background,
    /// The object stays (finalizer `foregroundDeletion`) until its blocking dependents are gone.
    Foreground,
    /// The object stays (finalizer `orphan`) until its dependents no longer reference it.
    Orphan,
}

/// Finalizer of an object deleted with [`Propagation::Foreground`].
pub const FOREGROUND_FINALIZER: &str = "foregroundDeletion";
/// Finalizer of an object deleted with [`Propagation::Orphan`].
pub const ORPHAN_FINALIZER: &str = "orphan";
/// The namespace controller's finalizer in a namespace's `spec.finalizers`.
pub const NAMESPACE_FINALIZER: &str = "kubernetes";

/// kube's answer to DeleteOptions that fail `ValidateDeleteOptions`.
pub(crate) fn invalid_delete_options(cause: crate::model::Cause) -> ApiError {
    ApiError::invalid("meta.k8s.io", "DeleteOptions", "", vec![cause])
}

impl Propagation {
    pub fn parse(s: &str) -> Result<Self> {
        match s {
            "Background" => Ok(Self::Background),
            "Foreground" => Ok(Self::Foreground),
            "Orphan" => Ok(Self::Orphan),
            // kube's `ValidateDeleteOptions`: a 422 on DeleteOptions, the values in its order
            // (the `*DeletionPropagation` printed as its JSON).
            other => Err(invalid_delete_options(crate::model::Cause::new(
                "FieldValueNotSupported",
                "propagationPolicy",
                format!(
                    "Unsupported value: {}: supported values: \"Foreground\", \"Background\", \"Orphan\", \"nil\"",
                    crate::builtin::validation::field::json_value(&Value::String(other.to_owned()))
                ),
            ))),
        }
    }

    fn finalizer(self) -> Option<&'static str> {
        match self {
            Self::Background => None,
            Self::Foreground => Some(FOREGROUND_FINALIZER),
            Self::Orphan => Some(ORPHAN_FINALIZER),
        }
    }
}

#[derive(Debug, Clone, Default)]
pub struct ListOptions {
    pub label_selector: Option<String>,
    pub field_selector: Option<String>,
    pub limit: Option<usize>,
    pub continue_token: Option<String>,
    pub resource_version: Option<String>,
    pub resource_version_match: Option<String>,
}

/// A page of a list, all read from one snapshot.
#[derive(Debug)]
pub struct ListResult {
    pub rv: u64,
    pub items: Vec<Arc<StoredObject>>,
    pub continue_token: Option<String>,
    pub remaining: Option<usize>,
}

/// What a delete did.
#[derive(Debug)]
pub enum Deleted {
    /// The object is gone; this is its last state.
    Gone(Arc<StoredObject>),
    /// Finalizers remain: the object is marked for deletion and returned.
    Pending(Arc<StoredObject>),
}

/// Field selectors every resource supports.
pub const FIELD_SELECTORS: &[&str] = &["metadata.name", "metadata.namespace"];

/// Filters parsed once per request, shared by list and watch.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    pub labels: LabelSelector,
    pub fields: FieldSelector,
    pub namespace: Option<String>,
    /// The kind's own field labels (beyond `metadata.name` and `metadata.namespace`).
    field_labels: &'static [crate::model::fields::FieldLabel],
    /// A custom resource's `selectableFields`.
    custom_fields: Arc<[String]>,
    /// Which set of fields `field_labels` and `custom_fields` are (a hash of their names): the
    /// key of the values each stored object keeps ([`StoredObject::field_values`]).
    field_set: u64,
}

impl Filter {
    pub fn new(
        namespace: Option<&str>,
        label_selector: Option<&str>,
        field_selector: Option<&str>,
    ) -> Result<Self> {
        let labels = LabelSelector::parse(label_selector.unwrap_or(""))
            .map_err(|e| ApiError::bad_request(e.to_string()))?;
        let fields = FieldSelector::parse(field_selector.unwrap_or(""), FIELD_SELECTORS)
            .map_err(|e| ApiError::bad_request(e.to_string()))?;
        Ok(Self {
            labels,
            fields,
            namespace: namespace.map(str::to_owned),
            field_labels: &[],
            custom_fields: Arc::from([]),
            field_set: 0,
        })
    }

    /// A filter for lists and watches of `ri`, whose field selector may also use the kind's own
    /// field labels (`spec.nodeName` and `status.phase` of Pods, `involvedObject.*` of Events,
    /// ...), as kube's field label conversions allow.
    pub fn for_resource(
        ri: &ResourceInfo,
        namespace: Option<&str>,
        label_selector: Option<&str>,
        field_selector: Option<&str>,
    ) -> Result<Self> {
        use crate::model::fields;
        let labels = LabelSelector::parse(label_selector.unwrap_or(""))
            .map_err(|e| ApiError::bad_request(e.to_string()))?;
        let selector = field_selector.unwrap_or("");
        let refused = |field: &str| match &ri.custom {
            Some(_) => fields::custom_refusal(field),
            None => fields::selectable(&ri.group, &ri.resource).refusal(field),
        };
        let (supported, field_labels, custom_fields): (Vec<&str>, _, Arc<[String]>) =
            match &ri.custom {
                Some(c) => (
                    fields::custom_names(ri.scope == Scope::Namespaced, &c.selectable_fields),
                    &[][..],
                    Arc::from(c.selectable_fields.as_slice()),
                ),
                None => {
                    let s = fields::selectable(&ri.group, &ri.resource);
                    (s.names().collect(), s.labels, Arc::from([]))
                }
            };
        let fields = FieldSelector::parse(selector, &supported).map_err(|e| match e {
            SelectorError::UnsupportedField(field) => ApiError::bad_request(refused(&field)),
            e => ApiError::bad_request(e.to_string()),
        })?;
        // Objects are judged as stored: a selectable field of a version a webhook converts to
        // would be read from the stored version's shape (kube judges the converted object).
        let converted = ri
            .custom
            .as_ref()
            .is_some_and(|c| c.webhook.is_some() && c.storage_version != ri.version);
        if converted && !fields.only_name_and_namespace() {
            return Err(ApiError::bad_request(format!(
                "field selectors on the selectable fields of {}/{} are not supported: it is converted from its stored version by a webhook",
                ri.group, ri.version
            )));
        }
        let field_set = {
            use std::hash::{Hash, Hasher};
            let mut h = std::collections::hash_map::DefaultHasher::new();
            for f in field_labels.iter().map(|f| f.name) {
                f.hash(&mut h);
            }
            for f in custom_fields.iter() {
                f.hash(&mut h);
            }
            h.finish()
        };
        Ok(Self {
            labels,
            fields,
            namespace: namespace.map(str::to_owned),
            field_labels,
            custom_fields,
            field_set,
        })
    }

    /// The values of the kind's selectable fields in `obj`, in the order of their names
    /// ([`Filter::field_names`]).
    fn field_values_of(&self, obj: &Value) -> Box<[Box<str>]> {
        self.field_labels
            .iter()
            .map(|f| f.value(obj).into_boxed_str())
            .chain(
                self.custom_fields
                    .iter()
                    .map(|f| crate::model::fields::custom_value(obj, f).into_boxed_str()),
            )
            .collect()
    }

    /// The kind's selectable fields beyond name and namespace, in order.
    fn field_names(&self) -> impl Iterator<Item = &str> {
        self.field_labels
            .iter()
            .map(|f| f.name)
            .chain(self.custom_fields.iter().map(String::as_str))
    }

    /// Whether a stored object passes: judged on its head (see [`StoredObject::head`]) unless
    /// a field selector names a field only the whole object has (then it is parsed, not kept).
    pub fn matches(&self, obj: &StoredObject) -> bool {
        if self.needs_whole() {
            // The namespace and labels first, from the head: an object of another namespace
            // is never parsed (a tenant's field selector would otherwise parse the cluster's).
            let head = obj.head();
            if self
                .namespace
                .as_deref()
                .is_some_and(|want| meta::namespace(head) != want)
                || !self.labels.matches(|k| head.label(k))
            {
                return false;
            }
            let values = obj.field_values(self.field_set, |v| self.field_values_of(v));
            let (name, ns) = (meta::name(head), meta::namespace(head));
            return self.fields.matches(|f| match f {
                "metadata.name" => Some(name),
                "metadata.namespace" => Some(ns),
                other => self
                    .field_names()
                    .position(|n| n == other)
                    .and_then(|i| values.get(i))
                    .map(|v| &**v),
            });
        }
        self.matches_meta(obj.head())
    }

    /// The namespace the filter keeps to, if any.
    pub fn namespace(&self) -> Option<&str> {
        self.namespace.as_deref()
    }

    /// Whether judging an object takes more than its name, namespace and labels.
    fn needs_whole(&self) -> bool {
        !((self.field_labels.is_empty() && self.custom_fields.is_empty())
            || self.fields.only_name_and_namespace())
    }

    /// Whether an object passes on its name, namespace and labels (all a filter reads unless
    /// [`Filter::needs_whole`]).
    fn matches_meta(&self, obj: &impl Meta) -> bool {
        let ns = meta::namespace(obj);
        if self.namespace.as_deref().is_some_and(|want| ns != want) {
            return false;
        }
        let name = meta::name(obj);
        self.fields.matches(|f| match f {
            "metadata.name" => Some(name),
            "metadata.namespace" => Some(ns),
            _ => None,
        }) && self.labels.matches(|k| obj.label(k))
    }

    /// Whether an object passes.
    pub fn matches_value(&self, obj: &Value) -> bool {
        if !self.needs_whole() {
            return self.matches_meta(obj);
        }
        let ns = meta::namespace(obj);
        if self.namespace.as_deref().is_some_and(|want| ns != want) {
            return false;
        }
        let name = meta::name(obj);
        let values: Vec<(&str, String)> = self
            .field_labels
            .iter()
            .map(|f| (f.name, f.value(obj)))
            .chain(
                self.custom_fields
                    .iter()
                    .map(|f| (f.as_str(), crate::model::fields::custom_value(obj, f))),
            )
            .collect();
        self.fields.matches(|f| match f {
            "metadata.name" => Some(name),
            "metadata.namespace" => Some(ns),
            other => values
                .iter()
                .find(|(n, _)| *n == other)
                .map(|(_, v)| v.as_str()),
        }) && self.labels.matches_json(meta::labels(obj))
    }
}

/// The object an update replaces, parsed once for the request: as served in the request's
/// version (`view`) and as stored (`current`; the same when no conversion applies).
#[derive(Clone, Copy)]
struct Versions<'a> {
    view: &'a Value,
    current: &'a Value,
}

pub struct Service {
    pub store: Arc<dyn Store>,
    pub registry: Arc<crate::model::Registry>,
    /// Service cluster IPs and node ports (`allocator`), loaded from the stored Services.
    pub allocators: crate::allocator::Allocators,
    /// The admission chain API writes pass.
    pub admission: Arc<crate::admission::Admission>,
    /// Whether this host runs the controllers now (`leader`): always with one host; with
    /// several on one etcd, only the one holding the Lease.
    pub leadership: crate::leader::Leadership,
}

pub const SERVICES: &str = "services";

/// A read at a revision the store has not reached in time: kube's 504, worded as its
/// `NewTooLargeResourceVersionError` (with the cause clients look for).
pub(crate) fn too_large_rv(requested: u64, current: u64) -> ApiError {
    ApiError::timeout(format!(
        "Timeout: Too large resource version: {requested}, current: {current}"
    ))
    .with_causes(vec![crate::model::Cause::new(
        "ResourceVersionTooLarge",
        "",
        "Too large resource version",
    )])
}

pub(crate) fn store_error(ri: &ResourceInfo, name: &str, e: StoreError) -> ApiError {
    match e {
        StoreError::AlreadyExists => ApiError::already_exists(&ri.group, &ri.resource, name),
        StoreError::NotFound => ApiError::not_found(&ri.group, &ri.resource, name),
        StoreError::Conflict { .. } => ApiError::conflict(&ri.group, &ri.resource, name),
        StoreError::TooOld { requested, oldest } => {
            ApiError::expired(format!("too old resource version: {requested} ({oldest})"))
        }
        StoreError::Closed => {
            ApiError::new(503, "ServiceUnavailable", "the server is shutting down")
        }
        StoreError::Unavailable(why) => {
            let mut e = ApiError::new(
                503,
                "ServiceUnavailable",
                format!("storage is unavailable, writes resume when it recovers: {why}"),
            );
            e.retry_after = Some(1);
            e
        }
        StoreError::TooLarge { size, limit } => ApiError::too_large(format!(
            "Request entity too large: limit is {limit} (the object is {size} bytes)"
        )),
        StoreError::TooDeep(_) => {
            ApiError::new(422, "Invalid", crate::model::limits::too_deep_message())
        }
        other => {
            tracing::error!(error = %other, "storage failure");
            ApiError::internal("storage failure; see the server log")
        }
    }
}

/// Whether `ri` is the core Namespaces.
fn is_namespaces(ri: &ResourceInfo) -> bool {
    ri.group.is_empty() && ri.resource == NAMESPACES
}

/// Whether `ri` is the core Secrets.
fn is_secrets(ri: &ResourceInfo) -> bool {
    ri.group.is_empty() && ri.resource == "secrets" && ri.custom.is_none()
}

/// A Namespace's `spec.finalizers`.
fn spec_finalizers(v: &Value) -> Vec<&str> {
    v.pointer("/spec/finalizers")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

pub(crate) fn parse_rv(s: &str) -> Result<u64> {
    s.parse::<u64>().map_err(|_| {
        ApiError::bad_request(format!(
            "resourceVersion: Invalid value: \"{s}\": must be a decimal integer"
        ))
    })
}

/// kube's `APIObjectVersioner.ParseResourceVersion`: `""` and `"0"` are 0, anything else is
/// `strconv.ParseUint(rv, 10, 64)`, whose refusal is its storage `InvalidError` on the field,
/// worded here: `resourceVersion: Invalid value: "abc": strconv.ParseUint: parsing "abc":
/// invalid syntax` (or `value out of range`: the first bad byte or the overflow, whichever
/// comes first, as Go's loop finds them).
fn go_parse_rv(rv: &str) -> Result<u64, String> {
    let refused = |why: &str| {
        let quoted = crate::auth::rbac::go_quote(rv);
        format!(
            "resourceVersion: Invalid value: {quoted}: strconv.ParseUint: parsing {quoted}: {why}"
        )
    };
    if rv.is_empty() {
        return Ok(0);
    }
    let mut n: u64 = 0;
    for b in rv.bytes() {
        if !b.is_ascii_digit() {
            return Err(refused("invalid syntax"));
        }
        n = n
            .checked_mul(10)
            .and_then(|n| n.checked_add(u64::from(b - b'0')))
            .ok_or_else(|| refused("value out of range"))?;
    }
    Ok(n)
}

/// A get's or a watch's `resourceVersion` as kube's storage reads it ([`go_parse_rv`]): a value
/// it refuses is its storage `InvalidError`, which kube's get handler (`InterpretGetError`
/// keeps it) and watch handler (the cacher's `Watch` returns it as it is) answer as a 500
/// without a reason (`ErrorToAPIStatus`).
pub(crate) fn parse_get_rv(rv: &str) -> Result<u64> {
    go_parse_rv(rv).map_err(|e| ApiError::new(500, "", e))
}

/// A list's `resourceVersion` as kube's storage `ValidateListOptions` reads it
/// ([`go_parse_rv`]): a value it refuses is a 400, `invalid resource version: resourceVersion:
/// Invalid value: "abc": strconv.ParseUint: parsing "abc": invalid syntax`.
pub(crate) fn parse_list_rv(rv: &str) -> Result<u64> {
    go_parse_rv(rv).map_err(|e| ApiError::bad_request(format!("invalid resource version: {e}")))
}

/// kube's continue token version (`storage.continueToken`'s `v`).
const CONTINUE_VERSION: &str = "meta.k8s.io/v1";

/// The version of the continue tokens turtles wrote before it wrote kube's: the last key
/// returned whole (`NS/NAME`, `/NAME`), not relative to the list's prefix. Still read, for a
/// list that began before an upgrade ([`Continue::in_list`]).
const LEGACY_CONTINUE_VERSION: &str = "turtles/1";

/// Where a list's keys start in its resource's map (`NS/NAME`, `/NAME` when cluster-scoped), as
/// kube's key prefix does in etcd (`/registry/configmaps/NS/`, `/registry/configmaps/`,
/// `/registry/namespaces/`): a continue token's key is relative to it, so that a token never
/// goes on outside the list it is used on.
fn list_prefix(ri: &ResourceInfo, ns: Option<&str>) -> String {
    match ns {
        Some(ns) => format!("{ns}/"),
        None if ri.namespaced() => String::new(),
        None => "/".to_owned(),
    }
}

/// A continue token as kube's `storage.EncodeContinue` writes it: base64url (unpadded) of
/// `{"v":"meta.k8s.io/v1","rv":N,"start":KEY}`, where `KEY` is the key the next page starts at,
/// relative to the list's prefix ([`list_prefix`]): the last key returned with a NUL after it
/// (`PrepareContinueToken`), or, at `rv` -1 (the latest revision), the key an expired token
/// went on from. For a list without selectors turtles adds how many items follow `start` in
/// that snapshot and the scope (resource and namespace) they were counted in, so the next
/// page's `remainingItemCount` is a subtraction rather than a count of everything after it
/// (which made walking a million objects in pages quadratic); kube's decoder ignores fields it
/// does not know.
fn encode_continue(rv: i64, start: &str, left: Option<(usize, &str)>) -> String {
    let mut t = json!({"v": CONTINUE_VERSION, "rv": rv, "start": start});
    if let Some((n, scope)) = left {
        t["left"] = json!(n);
        t["scope"] = json!(scope);
    }
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(t.to_string())
}

/// A decoded continue token.
#[derive(Debug)]
pub(crate) struct Continue {
    /// The revision the list is read at; below 0, the latest one (kube's token after a 410).
    rv: i64,
    /// Where the page starts, relative to the list's prefix; in a legacy token, the last key
    /// the previous page returned, whole.
    start: String,
    /// Whether the token is a [`LEGACY_CONTINUE_VERSION`] one.
    legacy: bool,
    /// How many items followed `start` in the snapshot, and the scope they were counted in.
    left: Option<(usize, String)>,
}

impl Continue {
    /// The count of items after `start`, if it was counted for `scope`.
    fn left_in(&self, scope: &str) -> Option<usize> {
        self.left
            .as_ref()
            .filter(|(_, s)| s == scope)
            .map(|(n, _)| *n)
    }

    /// The token for a list whose keys start with `prefix`: a legacy token made kube's (the
    /// page goes on after its key), if its key is in the list; one whose key is not is refused
    /// as kube refuses a token of a version it does not know.
    fn in_list(self, prefix: &str) -> Result<Self> {
        if !self.legacy {
            return Ok(self);
        }
        let Some(rest) = self.start.strip_prefix(prefix) else {
            return Err(invalid_continue(&format!(
                "server does not recognize this encoded version {LEGACY_CONTINUE_VERSION}"
            )));
        };
        let start = format!("{rest}\0");
        Ok(Self {
            start,
            legacy: false,
            ..self
        })
    }
}

/// kube's refusal of a continue token, as its storage's `ValidateListOptions` answers
/// `DecodeContinue`'s error: a 400 `invalid continue token: continue key is not valid: ...`.
fn invalid_continue(why: &str) -> ApiError {
    ApiError::bad_request(format!(
        "invalid continue token: continue key is not valid: {why}"
    ))
}

/// kube's `storage.DecodeContinue` (`continue.go`), its errors as [`invalid_continue`] answers
/// them: a token that is not base64url ([`go_base64_url`]: `illegal base64 data at input byte
/// 4`), that Go's `json.Unmarshal` does not take as its token ([`go_continue_token`]), of
/// another version (`server does not recognize this encoded version v2`), at revision 0
/// (`incorrect encoded start resourceVersion (version meta.k8s.io/v1)`), with no key (`encoded
/// start key empty (version meta.k8s.io/v1)`), or with a key that is not what Go's `path.Clean`
/// makes of it with a `/` in front (the key as given: one that climbs out of the list, `../x`,
/// or has an empty or `.` piece or a `/` at its end). A revision below 0 is the latest. A
/// legacy token is read as it was written, for [`Continue::in_list`] to check.
pub(crate) fn decode_continue(token: &str) -> Result<Continue> {
    let raw = go_base64_url(token)
        .map_err(|at| invalid_continue(&format!("illegal base64 data at input byte {at}")))?;
    let t = go_continue_token(&raw).map_err(|e| invalid_continue(&e))?;
    let legacy = match t.v.as_str() {
        CONTINUE_VERSION => false,
        LEGACY_CONTINUE_VERSION => true,
        other => {
            return Err(invalid_continue(&format!(
                "server does not recognize this encoded version {other}"
            )))
        }
    };
    if t.rv == 0 {
        return Err(invalid_continue(
            "incorrect encoded start resourceVersion (version meta.k8s.io/v1)",
        ));
    }
    if t.start.is_empty() {
        return Err(invalid_continue(
            "encoded start key empty (version meta.k8s.io/v1)",
        ));
    }
    let start = if legacy {
        t.start
    } else {
        let key = if t.start.starts_with('/') {
            t.start.clone()
        } else {
            format!("/{}", t.start)
        };
        if !go_path_is_clean(&key) {
            return Err(invalid_continue(&t.start));
        }
        key.strip_prefix('/').unwrap_or(&key).to_owned()
    };
    let left = t.left.and_then(|n| usize::try_from(n).ok()).zip(t.scope);
    Ok(Continue {
        rv: t.rv,
        start,
        legacy,
        left,
    })
}

/// Whether Go's `path.Clean` leaves a path that starts with `/` as it is: `/` itself, or no
/// piece after the first `/` empty, `.` or `..` (and so no `/` at the end either).
fn go_path_is_clean(path: &str) -> bool {
    path == "/"
        || path.strip_prefix('/').is_some_and(|rest| {
            rest.split('/')
                .all(|piece| !piece.is_empty() && piece != "." && piece != "..")
        })
}

/// Go's `base64.RawURLEncoding.DecodeString`: the URL-safe alphabet, no padding, `\r` and `\n`
/// skipped, the bits past the last whole byte dropped (the encoding is not strict), and a
/// single character left at the end refused. `Err` is the offset Go reports in its `illegal
/// base64 data at input byte N`.
fn go_base64_url(s: &str) -> Result<Vec<u8>, usize> {
    let src = s.as_bytes();
    let mut out = Vec::with_capacity(src.len() / 4 * 3 + 3);
    let mut si = 0;
    loop {
        let mut quantum = [0u8; 4];
        let mut n = 0;
        while n < 4 {
            let Some(&c) = src.get(si) else {
                break;
            };
            si += 1;
            quantum[n] = match c {
                b'A'..=b'Z' => c - b'A',
                b'a'..=b'z' => c - b'a' + 26,
                b'0'..=b'9' => c - b'0' + 52,
                b'-' => 62,
                b'_' => 63,
                b'\r' | b'\n' => continue,
                _ => return Err(si - 1),
            };
            n += 1;
        }
        match n {
            0 => return Ok(out),
            1 => return Err(si - 1),
            _ => {}
        }
        let bits = quantum
            .iter()
            .fold(0u32, |bits, &v| (bits << 6) | u32::from(v));
        out.extend_from_slice(&bits.to_be_bytes()[1..n]);
        if n < 4 {
            return Ok(out);
        }
    }
}

/// kube's `continueToken` as Go's `json.Unmarshal` fills it, and turtles' own count.
#[derive(Debug, Default)]
struct GoContinueToken {
    v: String,
    rv: i64,
    start: String,
    left: Option<u64>,
    scope: Option<String>,
}

/// The fields of a JSON object in the document's order, each value as it is written.
struct RawFields(Vec<(String, Box<serde_json::value::RawValue>)>);

impl<'de> serde::Deserialize<'de> for RawFields {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(RawFieldsVisitor)
    }
}

struct RawFieldsVisitor;

impl<'de> serde::de::Visitor<'de> for RawFieldsVisitor {
    type Value = RawFields;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<RawFields, A::Error> {
        let mut fields = Vec::new();
        while let Some(field) = map.next_entry::<String, Box<serde_json::value::RawValue>>()? {
            fields.push(field);
        }
        Ok(RawFields(fields))
    }
}

/// Go's `json.Unmarshal(data, &continueToken{})` (`{"v": string, "rv": int64, "start":
/// string}`), its error's words: a syntax error as Go's scanner words it
/// (`model::gojson::check_syntax`), a document that is no object `json: cannot unmarshal array
/// into Go value of type storage.continueToken` (`null` fills nothing), and the first field
/// whose value Go cannot put in it `json: cannot unmarshal string into Go struct field
/// continueToken.rv of type int64` (`number 1.5` for a number that is no int64). Fields are
/// matched whatever their case, a `null` leaves one as it was, and the last of a repeated one
/// wins; other fields are not looked at, but turtles' own `left` and `scope`.
fn go_continue_token(data: &[u8]) -> Result<GoContinueToken, String> {
    crate::model::gojson::check_syntax(data).map_err(|e| e.to_string())?;
    let mut token = GoContinueToken::default();
    let first = data
        .iter()
        .find(|&&b| !matches!(b, b' ' | b'\t' | b'\r' | b'\n'));
    let kind = match first {
        Some(b'{') => None,
        Some(b'n') => return Ok(token),
        Some(b'[') => Some("array"),
        Some(b'"') => Some("string"),
        Some(b't' | b'f') => Some("bool"),
        _ => Some("number"),
    };
    if let Some(kind) = kind {
        return Err(format!(
            "json: cannot unmarshal {kind} into Go value of type storage.continueToken"
        ));
    }
    // Go's decoder reads bytes that are no UTF-8 inside strings as U+FFFD (the scanner has
    // refused them anywhere else).
    let text = String::from_utf8_lossy(data);
    let fields: RawFields = serde_json::from_str(&text).map_err(|e| e.to_string())?;
    let mut first_error = None;
    for (name, raw) in fields.0 {
        let raw = raw.get().trim();
        if raw == "null" {
            continue;
        }
        let kind = match raw.as_bytes().first() {
            Some(b'"') => "string",
            Some(b'{') => "object",
            Some(b'[') => "array",
            Some(b't' | b'f') => "bool",
            _ => "number",
        };
        let field = if name.eq_ignore_ascii_case("v") {
            "v"
        } else if name.eq_ignore_ascii_case("rv") {
            "rv"
        } else if name.eq_ignore_ascii_case("start") {
            "start"
        } else {
            match name.as_str() {
                "left" => token.left = raw.parse().ok(),
                "scope" => token.scope = serde_json::from_str(raw).ok(),
                _ => {}
            }
            continue;
        };
        let refused = match (field, kind) {
            ("rv", "number") => match raw.parse::<i64>() {
                Ok(rv) => {
                    token.rv = rv;
                    None
                }
                Err(_) => Some(format!("number {raw}")),
            },
            ("v" | "start", "string") => {
                let s: String = serde_json::from_str(raw).unwrap_or_default();
                if field == "v" {
                    token.v = s;
                } else {
                    token.start = s;
                }
                None
            }
            (_, kind) => Some(kind.to_owned()),
        };
        if let Some(value) = refused {
            if first_error.is_none() {
                let go_type = if field == "rv" { "int64" } else { "string" };
                first_error = Some(format!(
                    "json: cannot unmarshal {value} into Go struct field continueToken.{field} of type {go_type}"
                ));
            }
        }
    }
    match first_error {
        Some(e) => Err(e),
        None => Ok(token),
    }
}

/// kube's etcd3 `interpretListError` for a list at a compacted revision (`errors.go`, `expired`).
const LIST_EXPIRED: &str = "The resourceVersion for the provided list is too old.";
const CONTINUE_EXPIRED: &str = "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.";

/// `.spec.replicas` -> `/spec/replicas`.
/// A decoded Scale's `spec.replicas`: absent is 0 (a non-pointer `omitempty` int32, which the
/// decoder drops at zero, as Go's zero value), below zero kube's `ValidateScale` 422.
fn scale_replicas(v: Option<&Value>, name: &str) -> Result<i64> {
    let replicas = match v {
        None | Some(Value::Null) => Some(0),
        Some(v) => v.as_i64(),
    };
    replicas.filter(|r| *r >= 0).ok_or_else(|| {
        let shown = v.map_or_else(|| "null".to_owned(), Value::to_string);
        ApiError::invalid(
            "autoscaling",
            "Scale",
            name,
            vec![Cause::new(
                "FieldValueInvalid",
                "spec.replicas",
                format!("Invalid value: {shown}: must be greater than or equal to 0"),
            )],
        )
    })
}

fn json_pointer(path: &str) -> String {
    path.split('.')
        .filter(|p| !p.is_empty())
        .map(|p| format!("/{}", p.replace('~', "~0").replace('/', "~1")))
        .collect()
}

/// Set a value at a JSON pointer, creating objects along the way.
fn set_pointer(v: &mut Value, pointer: &str, new: Value) {
    let mut cur = v;
    let parts: Vec<&str> = pointer.split('/').skip(1).collect();
    for (i, p) in parts.iter().enumerate() {
        let key = p.replace("~1", "/").replace("~0", "~");
        if !cur.is_object() {
            *cur = json!({});
        }
        let Some(map) = cur.as_object_mut() else {
            return;
        };
        if i + 1 == parts.len() {
            map.insert(key, new);
            return;
        }
        cur = map.entry(key).or_insert_with(|| json!({}));
    }
}

/// The admission request of an API write by `user`.
#[allow(clippy::too_many_arguments)]
fn admission_request<'a>(
    ri: &'a ResourceInfo,
    ns: &'a str,
    operation: Operation,
    name: &'a str,
    subresource: &'a str,
    user: &'a crate::auth::rbac::UserInfo,
    opts: &WriteOptions,
    old: Option<&'a Value>,
    kind: Option<[&'a str; 3]>,
) -> crate::admission::Request<'a> {
    crate::admission::Request {
        ri,
        operation,
        namespace: if ri.namespaced() { ns } else { "" },
        name,
        subresource,
        user,
        dry_run: opts.dry_run,
        old_object: old,
        requested: None,
        delete_options: None,
        kind,
        deadline: opts.deadline,
    }
}

/// Go's `%v` of a `*user.DefaultInfo`: `&{NAME UID [GROUPS] map[KEY:[VALUES]]}`.
fn go_user(u: &crate::auth::rbac::UserInfo) -> String {
    let extra: Vec<String> = u
        .extra
        .iter()
        .map(|(k, v)| format!("{k}:[{}]", v.join(" ")))
        .collect();
    format!(
        "&{{{} {} [{}] map[{}]}}",
        u.name,
        u.uid,
        u.groups.join(" "),
        extra.join(" ")
    )
}

/// kube's `ValidateScaleSpec` (unless `spec` is false: a `/status` write) and
/// `ValidateScaleStatus` of a custom resource with a scale subresource: the replicas found at
/// their paths are integers in `0..=MaxInt32`, the label selector a string. The field is the
/// path as the CRD spells it (`.spec.replicas`), as kube names it.
fn scale_causes(
    obj: &Value,
    scale: &crate::model::registry::ScaleSubresource,
    spec: bool,
) -> Vec<Cause> {
    /// Go's `%v` and `%T` of an unstructured value.
    fn go_v(v: &Value) -> String {
        match v {
            Value::Null => "<nil>".into(),
            Value::String(s) => s.clone(),
            Value::Array(a) => format!("[{}]", a.iter().map(go_v).collect::<Vec<_>>().join(" ")),
            Value::Object(m) => format!(
                "map[{}]",
                m.iter()
                    .map(|(k, v)| format!("{k}:{}", go_v(v)))
                    .collect::<Vec<_>>()
                    .join(" ")
            ),
            other => other.to_string(),
        }
    }
    fn go_t(v: &Value) -> &'static str {
        match v {
            Value::Null => "<nil>",
            Value::Bool(_) => "bool",
            Value::Number(n) if n.is_i64() || n.is_u64() => "int64",
            Value::Number(_) => "float64",
            Value::String(_) => "string",
            Value::Array(_) => "[]interface {}",
            Value::Object(_) => "map[string]interface {}",
        }
    }
    /// apimachinery's `NestedFieldNoCopy`: the value if found, or its accessor error.
    fn nested<'a>(obj: &'a Value, path: &str) -> Result<Option<&'a Value>, String> {
        let fields: Vec<&str> = path.trim_start_matches('.').split('.').collect();
        let mut val = obj;
        for (i, f) in fields.iter().enumerate() {
            match val {
                Value::Null => return Ok(None),
                Value::Object(m) => match m.get(*f) {
                    Some(v) => val = v,
                    None => return Ok(None),
                },
                other => {
                    return Err(format!(
                    ".{} accessor error: {} is of the type {}, expected map[string]interface {{}}",
                    fields[..=i].join("."),
                    go_v(other),
                    go_t(other)
                ))
                }
            }
        }
        Ok(Some(val))
    }
    let typed = |path: &str, want: &str, ok: fn(&Value) -> bool| -> Result<Option<Value>, String> {
        match nested(obj, path)? {
            None => Ok(None),
            Some(v) if ok(v) => Ok(Some(v.clone())),
            Some(v) => Err(format!(
                ".{} accessor error: {} is of the type {}, expected {want}",
                path.trim_start_matches('.'),
                go_v(v),
                go_t(v)
            )),
        }
    };
    let replicas = |path: &str, out: &mut Vec<Cause>| {
        let invalid = |v: i64, msg: &str| {
            Cause::new(
                "FieldValueInvalid",
                path,
                format!("Invalid value: {v}: {msg}"),
            )
        };
        match typed(path, "int64", |v| v.as_i64().is_some()) {
            Err(e) => out.push(invalid(0, &e)),
            Ok(Some(v)) => {
                let n = v.as_i64().unwrap_or(0);
                if n < 0 {
                    out.push(invalid(n, "should be a non-negative integer"));
                } else if n > i64::from(i32::MAX) {
                    out.push(invalid(
                        n,
                        &format!("should be less than or equal to {}", i32::MAX),
                    ));
                }
            }
            Ok(None) => {}
        }
    };
    let mut out = Vec::new();
    if spec {
        replicas(&scale.spec_replicas_path, &mut out);
    }
    replicas(&scale.status_replicas_path, &mut out);
    if let Some(path) = &scale.label_selector_path {
        if let Err(e) = typed(path, "string", Value::is_string) {
            out.push(Cause::new(
                "FieldValueInvalid",
                path,
                format!("Invalid value: \"\": {e}"),
            ));
        }
    }
    out
}

/// Everything outside metadata and (where `with_status` is false) status: a change here bumps
/// `generation`.
fn spec_part(obj: &Value, with_status: bool) -> Value {
    let mut o = obj.clone();
    if let Some(m) = o.as_object_mut() {
        m.remove("metadata");
        if !with_status {
            m.remove("status");
        }
    }
    o
}

/// Equal apart from resourceVersion (which a client may omit or leave stale in a no-op PUT).
fn same_object(a: &Value, b: &Value) -> bool {
    let strip = |v: &Value| {
        let mut v = v.clone();
        if let Some(m) = metadata_mut(&mut v) {
            m.remove("resourceVersion");
        }
        v
    };
    strip(a) == strip(b)
}

impl Service {
    pub fn new(store: Arc<dyn Store>, registry: Arc<crate::model::Registry>) -> Self {
        Self::with_service_ranges(store, registry, Default::default(), Default::default())
    }

    /// A service whose Services get cluster IPs from `ips` and node ports from `ports`; what
    /// the stored Services hold is reserved from the start.
    pub fn with_service_ranges(
        store: Arc<dyn Store>,
        registry: Arc<crate::model::Registry>,
        ips: crate::allocator::IpRange,
        ports: crate::allocator::PortRange,
    ) -> Self {
        let allocators = crate::allocator::Allocators::new(ips, ports);
        if let Ok(snapshot) = store.list(SERVICES, None) {
            let services: Vec<_> = snapshot.items.values().map(|o| o.parse()).collect();
            allocators.load(services.iter().map(|v| &**v));
        }
        // What other hosts' Services (or IPAddresses made by hand) claimed.
        for item in crate::claims::claimed(&*store) {
            allocators.taken_elsewhere(item);
        }
        let admission = Arc::new(crate::admission::Admission::new(
            store.clone(),
            registry.clone(),
        ));
        Self {
            store,
            registry,
            allocators,
            admission,
            leadership: crate::leader::Leadership::always(),
        }
    }

    fn is_services(ri: &ResourceInfo) -> bool {
        ri.group.is_empty() && ri.resource == SERVICES
    }

    /// Reserve a Service's IPs and node ports for a write about to be stored, and claim the new
    /// ones in the store (`crate::claims`; not for a dry run). A value another host's Service
    /// claimed meanwhile is marked held and the allocation starts again from the object as it
    /// was asked for: a requested value is then refused as allocated, a drawn one drawn again.
    async fn allocate(
        &self,
        ri: &ResourceInfo,
        obj: &mut Value,
        old: Option<&Value>,
        dry_run: bool,
    ) -> Result<Option<crate::allocator::Txn>> {
        /// Each attempt learns one value held elsewhere; give up after this many.
        const ATTEMPTS: usize = 16;
        if !Self::is_services(ri) {
            return Ok(None);
        }
        let asked = obj.clone();
        for _ in 0..ATTEMPTS {
            let mut txn = self.allocators.allocate(obj, old)?;
            if dry_run || txn.taken().is_empty() {
                return Ok(Some(txn));
            }
            match crate::claims::claim(&*self.store, &txn, obj).await {
                Ok(()) => {
                    txn.claimed = true;
                    return Ok(Some(txn));
                }
                Err(crate::claims::ClaimError::Taken(item)) => {
                    self.allocators.revert(txn);
                    self.allocators.taken_elsewhere(item);
                    *obj = asked.clone();
                }
                Err(crate::claims::ClaimError::Store(e)) => {
                    self.allocators.revert(txn);
                    return Err(store_error(ri, meta::name(&asked), e));
                }
            }
        }
        Err(ApiError::internal(format!(
            "failed to allocate the Service's cluster IP and node ports: {ATTEMPTS} values in a row were claimed by other hosts"
        )))
    }

    /// The write reserved for by `txn` (for Service `svc`) happened (`written`) or did not. When
    /// it failed in a way that leaves its outcome unknown (`known` false: the store timed out or
    /// lost its connection, so the write may yet have committed), its claims stay: a claim left
    /// behind costs a value until a start-up repair, a claim removed under a stored Service
    /// would let another host hand its value out again.
    async fn settle(
        &self,
        txn: Option<crate::allocator::Txn>,
        svc: &Value,
        written: bool,
        known: bool,
    ) {
        let Some(t) = txn else { return };
        if written {
            crate::claims::release(&*self.store, t.given_up(), svc).await;
        } else if t.claimed && known {
            crate::claims::release(&*self.store, t.taken(), svc).await;
        }
        if written {
            self.allocators.commit(t);
        } else {
            self.allocators.revert(t);
        }
    }

    /// An object was removed from the store: a Service's IPs and node ports are free again,
    /// and their claims go.
    async fn removed(&self, ri: &ResourceInfo, obj: &StoredObject) {
        if Self::is_services(ri) {
            let svc = obj.parse();
            crate::claims::release(&*self.store, &self.allocators.items_of(&svc), &svc).await;
            self.allocators.release_service(&svc);
        }
    }

    fn key(ri: &ResourceInfo, ns: &str, name: &str) -> ObjectKey {
        ObjectKey::new(
            &ri.group_resource(),
            if ri.namespaced() { ns } else { "" },
            name,
        )
    }

    /// kube's built-in mutating admission plugins on a create, in kube's order and before the
    /// configured ones: LimitRanger (a Pod's default requests and limits, after kube's own Pod
    /// defaults, which decoding applies there: a limit is the request it lacks), ServiceAccount
    /// (the account, its token volume), Priority (a Pod's priority from its class), then
    /// DefaultTolerationSeconds, DefaultStorageClass, StorageObjectInUseProtection and
    /// DefaultIngressClass.
    async fn builtin_mutation(&self, ri: &ResourceInfo, ns: &str, obj: &mut Value) -> Result<()> {
        let pod = ri.group.is_empty() && ri.resource == "pods";
        if pod {
            if let Some(spec) = obj.get_mut("spec") {
                crate::model::workloads::requests_from_limits(spec);
            }
        }
        crate::limitrange::apply_defaults(self, ri, ns, obj);
        if pod {
            crate::pod_admission::service_account(self, ri, ns, obj).await?;
        }
        crate::priority::admit(self, ri, obj, None).await?;
        if pod {
            crate::pod_admission::default_tolerations(obj);
        }
        crate::volume_admission::admit_create(self, ri, obj);
        crate::ingress_admission::admit_create(self, ri, obj);
        Ok(())
    }

    /// A new Pod's QoS class (kube's PrepareForCreate), from its decoded quantities.
    fn qos_on_create(ri: &ResourceInfo, obj: &mut Value) {
        if !(ri.group.is_empty() && ri.resource == "pods") {
            return;
        }
        let qos = crate::model::workloads::qos_class(obj.get("spec"));
        if let Some(status) = obj.get_mut("status").and_then(Value::as_object_mut) {
            status.insert("qosClass".into(), json!(qos));
        }
    }

    /// Every stored object of `resource` (its storage key) in namespace `ns`, straight from the
    /// store's index: one range of an ordered map, so a namespace with none pays a lookup.
    pub fn stored_in(&self, resource: &str, ns: &str) -> Vec<Arc<StoredObject>> {
        let Ok(snap) = self.store.list(resource, None) else {
            return Vec::new();
        };
        let prefix = crate::model::item_key(ns, "");
        snap.items
            .range(prefix.clone()..)
            .take_while(|(k, _)| k.starts_with(&prefix))
            .map(|(_, v)| v.clone())
            .collect()
    }

    /// Create the namespaces that exist from the first start.
    pub async fn bootstrap(&self) -> Result<()> {
        let ri = self
            .registry
            .lookup("", "v1", NAMESPACES)
            .ok_or_else(|| ApiError::internal("namespaces are not registered"))?;
        // kube's system PriorityClasses, then its namespaces.
        if let Some(pcs) =
            self.registry
                .lookup(crate::priority::GROUP, "v1", crate::priority::RESOURCE)
        {
            for pc in crate::priority::system_classes() {
                if self
                    .store
                    .get(&Self::key(&pcs, "", meta::name(&pc)))
                    .is_none()
                {
                    match self.create(&pcs, "", pc, &WriteOptions::default()).await {
                        Ok(_) => {}
                        Err(e) if e.code == 409 => {}
                        Err(e) => return Err(e),
                    }
                }
            }
        }
        for ns in SYSTEM_NAMESPACES {
            if self.store.get(&Self::key(&ri, "", ns)).is_none() {
                let obj =
                    json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}});
                match self.create(&ri, "", obj, &WriteOptions::default()).await {
                    Ok(_) => {}
                    Err(e) if e.code == 409 => {}
                    Err(e) => return Err(e),
                }
            }
        }
        // Namespaces stored before turtles set `kubernetes.io/metadata.name` get it now (kube
        // applies it whenever it decodes one; turtles, on writes).
        let stored = self
            .store
            .list(NAMESPACES, None)
            .map_err(|e| ApiError::internal(e.to_string()))?;
        for ns in stored.items.values() {
            let name = meta::name(ns.head());
            let label = ns.head().label("kubernetes.io/metadata.name");
            if name.is_empty() || label == Some(name) {
                continue;
            }
            let mut obj = ns.parse().into_owned();
            crate::builtin::defaults::namespace_name_label(&mut obj);
            let name = name.to_owned();
            match self
                .update(
                    &ri,
                    "",
                    &name,
                    obj,
                    Subresource::Main,
                    &WriteOptions::default(),
                )
                .await
            {
                Ok(_) => {}
                Err(e) if matches!(e.code, 404 | 409) => {}
                Err(e) => {
                    tracing::warn!(namespace = %name, error = %e.message, "could not label the namespace with its name")
                }
            }
        }
        Ok(())
    }

    /// kube-apiserver's `rbac/bootstrap-roles` post-start hook (`EnsureRBACPolicy`), run at every
    /// start: each bootstrap object (`auth::rbac::bootstrap_objects`) is created when missing and
    /// otherwise reconciled with the stored one (`auth::rbac::reconcile`: what the policy adds,
    /// nothing taken away; a binding of another role deleted and created again; an object
    /// annotated `rbac.authorization.kubernetes.io/autoupdate: "false"` left alone). An object
    /// that holds the policy already is not written. A write that meets a conflict is tried
    /// again with client-go's `retry.DefaultBackoff`, as the hook's `RetryOnConflict` does; an
    /// object whose failure may pass (conflicts through every try, a store that failed or was
    /// unavailable) is tried again every second for up to 30 s, as the hook polls a store that
    /// does not answer yet (`wait.Poll(1s, 30s)`); any other failure is logged and the next
    /// object goes on, as in kube's hook. Returns how many objects failed in the end.
    pub async fn reconcile_bootstrap_policy(&self, objects: Vec<Value>) -> usize {
        self.reconcile_bootstrap_policy_within(
            objects,
            BOOTSTRAP_RETRY_INTERVAL,
            BOOTSTRAP_RETRY_BUDGET,
        )
        .await
    }

    /// [`Service::reconcile_bootstrap_policy`], the objects that may succeed later tried again
    /// every `interval` until `budget` has passed.
    pub(crate) async fn reconcile_bootstrap_policy_within(
        &self,
        objects: Vec<Value>,
        interval: Duration,
        budget: Duration,
    ) -> usize {
        let give_up = tokio::time::Instant::now() + budget;
        let mut pending: Vec<&Value> = objects.iter().collect();
        let mut failed = 0;
        for pass in 1.. {
            let mut again = Vec::new();
            for expected in pending {
                let Err(e) = self.reconcile_bootstrap_object(expected).await else {
                    continue;
                };
                let kind = expected.get("kind").and_then(Value::as_str).unwrap_or("");
                let (ns, name) = (meta::namespace(expected), meta::name(expected));
                if e.may_pass() && tokio::time::Instant::now() + interval <= give_up {
                    tracing::warn!(
                        kind = %kind,
                        namespace = %ns,
                        name = %name,
                        error = %e,
                        pass,
                        "could not reconcile a bootstrap RBAC object with the policy yet; trying again"
                    );
                    again.push(expected);
                } else {
                    failed += 1;
                    tracing::error!(
                        kind = %kind,
                        namespace = %ns,
                        name = %name,
                        error = %e,
                        pass,
                        "could not reconcile a bootstrap RBAC object with the policy"
                    );
                }
            }
            if again.is_empty() {
                break;
            }
            tokio::time::sleep(interval).await;
            pending = again;
        }
        failed
    }

    /// One object of [`Service::reconcile_bootstrap_policy`], read again and tried again when
    /// another writer got there first (kube's `RetryOnConflict` with `retry.DefaultBackoff`:
    /// four tries, 10 ms apart and five times longer each time).
    async fn reconcile_bootstrap_object(&self, expected: &Value) -> Result<(), BootstrapError> {
        let av = expected
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or("");
        let kind = expected.get("kind").and_then(Value::as_str).unwrap_or("");
        let (group, version) = av.rsplit_once('/').unwrap_or(("", av));
        let Some(ri) = self
            .registry
            .in_group_version(group, version)
            .into_iter()
            .find(|r| r.kind == kind)
        else {
            return Err(BootstrapError::Unserved(format!("{av} {kind}")));
        };
        let mut delay = BOOTSTRAP_CONFLICT_BACKOFF;
        for attempt in 1..=BOOTSTRAP_CONFLICT_TRIES {
            if self
                .reconcile_bootstrap_try(&ri, expected)
                .await
                .map_err(BootstrapError::Write)?
            {
                return Ok(());
            }
            if attempt < BOOTSTRAP_CONFLICT_TRIES {
                tokio::time::sleep(delay).await;
                delay *= 5;
            }
        }
        Err(BootstrapError::KeptChanging(BOOTSTRAP_CONFLICT_TRIES))
    }

    /// One try of [`Service::reconcile_bootstrap_object`]: `true` once the stored object holds
    /// the policy (or is protected from it), `false` when another writer got there first.
    async fn reconcile_bootstrap_try(&self, ri: &ResourceInfo, expected: &Value) -> Result<bool> {
        use crate::auth::rbac::{self, Reconciled};
        let kind = ri.kind.as_str();
        let ns = meta::namespace(expected);
        let name = meta::name(expected);
        let opts = WriteOptions::default();
        let Some(stored) = self.store.get(&Self::key(ri, ns, name)) else {
            return match self.create(ri, ns, expected.clone(), &opts).await {
                Ok(_) => {
                    tracing::debug!(
                        kind = %kind,
                        namespace = %ns,
                        name = %name,
                        "created the bootstrap RBAC object"
                    );
                    Ok(true)
                }
                // Made meanwhile: reconcile that one.
                Err(e) if e.code == 409 => Ok(false),
                Err(e) => Err(e),
            };
        };
        let reconciled = rbac::reconcile(&stored.parse(), expected);
        match reconciled {
            None => Ok(true),
            Some(Reconciled::Protected) => {
                tracing::warn!(
                    kind = %kind,
                    namespace = %ns,
                    name = %name,
                    "left the bootstrap RBAC object as it is (rbac.authorization.kubernetes.io/autoupdate: \"false\"), though it lacks part of the policy"
                );
                Ok(true)
            }
            Some(Reconciled::Update(obj)) => {
                match self
                    .update(ri, ns, name, obj, Subresource::Main, &opts)
                    .await
                {
                    Ok(_) => {
                        tracing::info!(
                            kind = %kind,
                            namespace = %ns,
                            name = %name,
                            "added what the bootstrap RBAC policy has to the stored object"
                        );
                        Ok(true)
                    }
                    // Changed or deleted meanwhile: read it again.
                    Err(e) if matches!(e.code, 404 | 409) => Ok(false),
                    Err(e) => Err(e),
                }
            }
            Some(Reconciled::Recreate(obj)) => {
                let uid = meta::meta_str(stored.head(), "uid")
                    .unwrap_or("")
                    .to_owned();
                let delete = DeleteOptions {
                    precondition_uid: Some(uid),
                    ..DeleteOptions::default()
                };
                match self.delete(ri, ns, name, &delete).await {
                    Ok(_) => {}
                    Err(e) if e.code == 404 => {}
                    // Another object of that name now: read it again.
                    Err(e) if e.code == 409 => return Ok(false),
                    Err(e) => return Err(e),
                }
                match self.create(ri, ns, obj, &opts).await {
                    Ok(_) => {
                        tracing::info!(
                            kind = %kind,
                            namespace = %ns,
                            name = %name,
                            "created the bootstrap RBAC binding again with the policy's roleRef"
                        );
                        Ok(true)
                    }
                    Err(e) if e.code == 409 => Ok(false),
                    Err(e) => Err(e),
                }
            }
        }
    }

    /// Before a read of one object with a `resourceVersion` (kube's watch cache `Get`, through
    /// `waitUntilFreshAndBlock`): once the store has reached that revision, after waiting for it
    /// as long as a list does (`TOO_NEW_WAIT`, kube's 3 s), else kube's 504 `Too large resource
    /// version` with `Retry-After: 1`. `0` reads whatever is there. Not a decimal uint64: kube's
    /// `ParseResourceVersion` error, a storage error its get handler answers as a plain 500.
    pub async fn await_get_revision(&self, rv: &str) -> Result<()> {
        let n = parse_get_rv(rv)?;
        if n > self.store.revision() && !self.store.wait_for_revision(n, TOO_NEW_WAIT).await {
            return Err(too_large_rv(n, self.store.revision()));
        }
        Ok(())
    }

    pub fn get(&self, ri: &ResourceInfo, ns: &str, name: &str) -> Result<Arc<StoredObject>> {
        self.store
            .get(&Self::key(ri, ns, name))
            .ok_or_else(|| ApiError::not_found(&ri.group, &ri.resource, name))
    }

    /// The latest snapshot of `ri`'s objects, read consistently (after the store's pending
    /// writes are visible).
    async fn consistent_snapshot(&self, ri: &ResourceInfo) -> Result<Snapshot> {
        self.store
            .sync()
            .await
            .map_err(|e| store_error(ri, "", e))?;
        self.store
            .list(&ri.group_resource(), None)
            .map_err(|e| store_error(ri, "", e))
    }

    /// Resolve list resourceVersion semantics to the snapshot to read (the request's options
    /// were checked already: `api::handlers::validate_list_options`).
    ///
    /// A continue token is decoded first, as kube's storage `ValidateListOptions` does (a 400
    /// for one it cannot honour, [`decode_continue`]), and made the list's ([`Continue::in_list`]:
    /// `prefix` is the list's [`list_prefix`]); then a `resourceVersion` with it is refused.
    async fn list_snapshot(
        &self,
        ri: &ResourceInfo,
        opts: &ListOptions,
        prefix: &str,
    ) -> Result<(Snapshot, Option<Continue>)> {
        let resource = ri.group_resource();
        if let Some(token) = opts.continue_token.as_deref().filter(|t| !t.is_empty()) {
            let cont = decode_continue(token)?.in_list(prefix)?;
            // "0" is allowed (and ignored: the token names its revision), as kube's storage.
            if opts
                .resource_version
                .as_deref()
                .is_some_and(|rv| !rv.is_empty() && rv != "0")
            {
                return Err(ApiError::bad_request(
                    "specifying resource version is not allowed when using continue",
                ));
            }
            // A revision below 0 (kube's token after a 410): the latest, read consistently.
            let Ok(at) = u64::try_from(cont.rv) else {
                return Ok((self.consistent_snapshot(ri).await?, Some(cont)));
            };
            // A token of a revision the store has not reached (never one it handed out, unless
            // another host wrote it): kube's cacher serves a continue at its revision as an
            // exact read, waiting for it as for a `resourceVersion`, then its 504.
            if at > self.store.revision() && !self.store.wait_for_revision(at, TOO_NEW_WAIT).await {
                return Err(too_large_rv(at, self.store.revision()));
            }
            let snap = self.store.list(&resource, Some(at)).map_err(|e| match e {
                // kube's `handleCompactedErrorForPaging`: with a token that goes on from the
                // same key at the latest revision (`rv` -1), which the message offers.
                StoreError::TooOld { .. } => {
                    let mut e = ApiError::expired(CONTINUE_EXPIRED);
                    e.continue_token = Some(encode_continue(-1, &cont.start, None));
                    e
                }
                other => store_error(ri, "", other),
            })?;
            return Ok((snap, Some(cont)));
        }
        let rv = opts.resource_version.as_deref().filter(|s| !s.is_empty());
        let exact = match opts.resource_version_match.as_deref().filter(|s| !s.is_empty()) {
            None | Some("NotOlderThan") => false,
            Some("Exact") => true,
            Some(other) => {
                return Err(ApiError::bad_request(format!(
                    "resourceVersionMatch: Unsupported value: \"{other}\": supported values: \"Exact\", \"NotOlderThan\""
                )))
            }
        };
        if opts
            .resource_version_match
            .as_deref()
            .is_some_and(|s| !s.is_empty())
            && rv.is_none()
        {
            return Err(ApiError::bad_request(
                "resourceVersionMatch is forbidden unless resourceVersion is provided",
            ));
        }
        let Some(rv) = rv else {
            // Unset: a consistent read.
            return Ok((self.consistent_snapshot(ri).await?, None));
        };
        let n = parse_list_rv(rv)?;
        if exact && n == 0 {
            return Err(ApiError::bad_request(
                "resourceVersionMatch \"Exact\" is forbidden for resourceVersion \"0\"",
            ));
        }
        if n > self.store.revision() && !self.store.wait_for_revision(n, TOO_NEW_WAIT).await {
            return Err(too_large_rv(n, self.store.revision()));
        }
        let at = if exact { Some(n) } else { None };
        let snap = self.store.list(&resource, at).map_err(|e| match e {
            // kube serves an exact list from etcd (or falls back to it when its cache has no
            // snapshot), whose compacted revision is `interpretListError`'s text.
            StoreError::TooOld { .. } => ApiError::expired(LIST_EXPIRED),
            other => store_error(ri, "", other),
        })?;
        Ok((snap, None))
    }

    pub async fn list(
        &self,
        ri: &ResourceInfo,
        ns: Option<&str>,
        opts: &ListOptions,
    ) -> Result<ListResult> {
        let filter = Filter::for_resource(
            ri,
            ns,
            opts.label_selector.as_deref(),
            opts.field_selector.as_deref(),
        )?;
        let prefix = list_prefix(ri, ns);
        let (snap, cont) = self.list_snapshot(ri, opts, &prefix).await?;
        let limit = opts.limit.filter(|l| *l > 0);
        let mut items = Vec::new();
        let mut continue_token = None;
        let mut remaining = None;
        // Narrow the scan: a namespace is one contiguous key range. A continue token's key is
        // relative to the list's prefix (kube's `keyPrefix + start`), so the page starts inside
        // the list, wherever the token came from.
        let lower = match (&cont, ns) {
            (Some(c), _) => std::ops::Bound::Included(format!("{prefix}{}", c.start)),
            (None, Some(ns)) => std::ops::Bound::Included(format!("{ns}/")),
            (None, None) => std::ops::Bound::Unbounded,
        };
        let upper = match ns {
            Some(ns) => std::ops::Bound::Excluded(format!("{ns}0")),
            None => std::ops::Bound::Unbounded,
        };
        let unfiltered = filter.labels.is_empty() && filter.fields.is_empty();
        // Where a count of what follows a page is kept, for a paged list without selectors.
        let scope = (unfiltered && limit.is_some())
            .then(|| format!("{}/{}", ri.group_resource(), ns.unwrap_or("")));
        // What the previous page counted after its last key (same snapshot, same scope).
        let left = cont
            .as_ref()
            .zip(scope.as_deref())
            .and_then(|(c, scope)| c.left_in(scope));
        // Without selectors the filter is the namespace, which an item's key starts with
        // (`NS/NAME`): no object needs looking at. (The key is checked, not only the range: a
        // continue token's start is the client's to forge.)
        let key_prefix = ns.map(|ns| format!("{ns}/"));
        let shown = |key: &str, obj: &StoredObject| {
            if unfiltered {
                key_prefix.as_deref().is_none_or(|p| key.starts_with(p))
            } else {
                filter.matches(obj)
            }
        };
        // Judging objects against selectors is the request's own work, however long: it gives
        // the worker back every millisecond (`pace`).
        let mut pacer = crate::pace::Pacer::new();
        let mut iter = snap.items.range((lower, upper));
        while let Some((key, obj)) = iter.next() {
            if !unfiltered {
                pacer.tick().await;
            }
            if !shown(key, obj) {
                continue;
            }
            items.push(obj.clone());
            if limit.is_some_and(|l| items.len() >= l) {
                let more = if unfiltered {
                    let n = match left {
                        Some(left) => left.saturating_sub(items.len()),
                        None => iter.clone().count(),
                    };
                    remaining = (n > 0).then_some(n);
                    n > 0
                } else {
                    let mut any = false;
                    for (k, o) in iter.clone() {
                        pacer.tick().await;
                        if shown(k, o) {
                            any = true;
                            break;
                        }
                    }
                    any
                };
                if more {
                    let left = remaining.zip(scope.as_deref());
                    // kube's `PrepareContinueToken`: the next page starts right after this key.
                    let next = format!("{}\0", key.strip_prefix(&prefix).unwrap_or(key));
                    let rv = i64::try_from(snap.rv).unwrap_or(i64::MAX);
                    continue_token = Some(encode_continue(rv, &next, left));
                }
                break;
            }
        }
        Ok(ListResult {
            rv: snap.rv,
            items,
            continue_token,
            remaining,
        })
    }

    /// Before the `attempt`th try of a write that lost a race ([`CONFLICT_RETRIES`]): from the
    /// second retry on, the other writers get the worker first, and a view kept from a shared
    /// database (etcd) catches up with the write that won, so the next read sees it.
    async fn before_retry(&self, attempt: usize) -> Result<()> {
        if attempt >= 2 {
            tokio::task::yield_now().await;
            self.store
                .sync()
                .await
                .map_err(|e| ApiError::internal(e.to_string()))?;
        }
        Ok(())
    }

    fn check_namespace_usable(&self, ri: &ResourceInfo, ns: &str, name: &str) -> Result<()> {
        if !ri.namespaced() {
            return Ok(());
        }
        let key = ObjectKey::new(NAMESPACES, "", ns);
        let Some(nso) = self.store.get(&key) else {
            return Err(ApiError::not_found("", NAMESPACES, ns));
        };
        if meta::meta_str(nso.head(), "deletionTimestamp").is_some() {
            return Err(ApiError::forbidden(format!(
                "{} \"{name}\" is forbidden: unable to create new content in namespace {ns} because it is being terminated",
                ri.resource,
            ))
            .with_details(&ri.group, &ri.resource, name)
            .with_causes(vec![Cause::new(
                "NamespaceTerminating",
                "metadata.namespace",
                format!("namespace {ns} is being terminated"),
            )]));
        }
        Ok(())
    }

    /// Check apiVersion/kind of a body against the endpoint, filling them in when absent.
    fn check_type(ri: &ResourceInfo, obj: &mut Value) -> Result<()> {
        Self::check_type_as(ri, obj, false)
    }

    /// [`Service::check_type`]; with `custom_kind_later`, a custom resource's other `kind` is
    /// left for validation to refuse ([`WriteOptions::custom_kind_validated`]).
    fn check_type_as(ri: &ResourceInfo, obj: &mut Value, custom_kind_later: bool) -> Result<()> {
        let Some(map) = obj.as_object_mut() else {
            return Err(ApiError::bad_request(
                "the body of the request must be a JSON object",
            ));
        };
        let want_av = ri.api_version();
        match map.get("apiVersion").and_then(Value::as_str) {
            None | Some("") => {
                map.insert("apiVersion".into(), Value::String(want_av));
            }
            Some(av) if av == want_av => {}
            Some(av) => {
                return Err(ApiError::bad_request(format!(
                    "the API version in the data ({av}) does not match the expected API version ({want_av})"
                )))
            }
        }
        match map.get("kind").and_then(Value::as_str) {
            None | Some("") => {
                map.insert("kind".into(), Value::String(ri.kind.clone()));
            }
            Some(k) if k == ri.kind => {}
            Some(_) if custom_kind_later && ri.is_custom() => {}
            Some(k) => {
                return Err(ApiError::bad_request(format!(
                    "the kind in the data ({k}) does not match the expected kind ({})",
                    ri.kind
                )))
            }
        }
        if !map
            .get("metadata")
            .is_none_or(|m| m.is_object() || m.is_null())
        {
            return Err(ApiError::bad_request("metadata must be a JSON object"));
        }
        Ok(())
    }

    fn check_scope(ri: &ResourceInfo, ns: &str, obj: &mut Value) -> Result<()> {
        let Some(m) = metadata_mut(obj) else {
            return Err(ApiError::bad_request(
                "the body of the request must be a JSON object",
            ));
        };
        if ri.namespaced() {
            match m.get("namespace").and_then(Value::as_str) {
                None | Some("") => {
                    m.insert("namespace".into(), Value::String(ns.to_owned()));
                }
                Some(n) if n == ns => {}
                Some(_) => {
                    return Err(ApiError::bad_request(
                        "the namespace of the provided object does not match the namespace sent on the request",
                    ))
                }
            }
        } else {
            m.remove("namespace");
        }
        Ok(())
    }

    /// Mutating admission of an API write (`opts.user` set); returns warnings.
    #[allow(clippy::too_many_arguments)]
    async fn admission(
        &self,
        ri: &ResourceInfo,
        ns: &str,
        operation: Operation,
        old: Option<&Value>,
        obj: &mut Value,
        subresource: &str,
        opts: &WriteOptions,
    ) -> Result<Vec<String>> {
        self.mutated_as(ri, ns, operation, old, obj, subresource, opts, None)
            .await
    }

    /// [`Service::admission`] of an object of another kind than the resource's (a Scale).
    #[allow(clippy::too_many_arguments)]
    async fn mutated_as(
        &self,
        ri: &ResourceInfo,
        ns: &str,
        operation: Operation,
        old: Option<&Value>,
        obj: &mut Value,
        subresource: &str,
        opts: &WriteOptions,
        kind: Option<[&str; 3]>,
    ) -> Result<Vec<String>> {
        let Some(user) = &opts.user else {
            return Ok(Vec::new());
        };
        let name = meta::name(obj).to_owned();
        let req = admission_request(ri, ns, operation, &name, subresource, user, opts, old, kind);
        self.admission.mutate(&req, obj).await
    }

    /// Validating admission of an API write (`opts.user` set); returns warnings.
    #[allow(clippy::too_many_arguments)]
    async fn admitted(
        &self,
        ri: &ResourceInfo,
        ns: &str,
        operation: Operation,
        old: Option<&Value>,
        obj: Option<&Value>,
        subresource: &str,
        opts: &WriteOptions,
    ) -> Result<Vec<String>> {
        self.admitted_as(ri, ns, operation, old, obj, subresource, opts, None)
            .await
    }

    /// [`Service::admitted`] of an object of another kind than the resource's (a Scale).
    #[allow(clippy::too_many_arguments)]
    async fn admitted_as(
        &self,
        ri: &ResourceInfo,
        ns: &str,
        operation: Operation,
        old: Option<&Value>,
        obj: Option<&Value>,
        subresource: &str,
        opts: &WriteOptions,
        kind: Option<[&str; 3]>,
    ) -> Result<Vec<String>> {
        let Some(user) = &opts.user else {
            return Ok(Vec::new());
        };
        let name = obj.map(meta::name).unwrap_or("");
        let req = admission_request(ri, ns, operation, name, subresource, user, opts, old, kind);
        self.admission.validate(&req, obj).await
    }

    fn validate(ri: &ResourceInfo, obj: &Value) -> Result<()> {
        let causes = Self::meta_causes(ri, obj);
        if !causes.is_empty() {
            return Err(ApiError::invalid(
                &ri.group,
                &ri.kind,
                meta::name(obj),
                causes,
            ));
        }
        Ok(())
    }

    /// kube's `ValidateObjectMeta` of a write: `generateName` first, with the kind's name
    /// function (prefix allowed), then the name, then labels, annotations and the rest.
    fn meta_causes(ri: &ResourceInfo, obj: &Value) -> Vec<Cause> {
        let generate = obj
            .pointer("/metadata/generateName")
            .and_then(Value::as_str)
            .unwrap_or("");
        let mut causes = meta::validate_generate_name(generate, ri.name_rule);
        causes.extend(meta::validate_name(meta::name(obj), ri.name_rule));
        causes.extend(meta::validate_common(obj));
        causes
    }

    /// The 422 of a write whose kind's validation found `causes`: kube's strategies validate
    /// the object's metadata first and report its errors in the same answer
    /// ([`Service::meta_causes`], each field once), so a client sees every error at once.
    fn invalid_with_meta(ri: &ResourceInfo, obj: &Value, causes: Vec<Cause>) -> ApiError {
        let mut all: Vec<Cause> = Self::meta_causes(ri, obj)
            .into_iter()
            .filter(|m| !causes.iter().any(|c| c.field == m.field))
            .collect();
        all.extend(causes);
        ApiError::invalid(&ri.group, &ri.kind, meta::name(obj), all)
    }

    /// Kind-specific admission: CRD validation, and for custom resources kube's pipeline of
    /// pruning, defaulting, schema validation and CEL rules. Returns warnings. `decoded`: `obj`
    /// is already as the decoder leaves a built-in kind (the patch path decoded it and nothing
    /// changed it since, see [`Built`]), so it is not decoded again.
    fn admit(
        ri: &ResourceInfo,
        obj: &mut Value,
        old: Option<&Value>,
        sub: Subresource,
        opts: &WriteOptions,
        decoded: bool,
    ) -> Result<Vec<String>> {
        // Built-in kinds: decoded as kube decodes them into their types, then CRDs, and kube's
        // defaults and validation of the workload kinds.
        if ri.custom.is_none() {
            let unknown = if decoded {
                Vec::new()
            } else {
                crate::builtin::decode::decode(&ri.group, &ri.version, &ri.kind, obj)
                    .map_err(|e| cannot_handle(&ri.kind, &ri.version, e))?
            };
            let duplicates = crate::builtin::decode::duplicates(
                &ri.group,
                &ri.version,
                &ri.kind,
                &opts.duplicates,
            );
            let warnings = Self::strict_fields(&ri.kind, &ri.version, duplicates, unknown, opts)?;
            let mut causes = if ri.group == crate::crd::GROUP && ri.resource == crate::crd::RESOURCE
            {
                crate::crd::apply_defaults(obj);
                let mut causes = crate::crd::validate(obj);
                if let Some(old) = old {
                    causes.extend(crate::crd::validate_update(obj, old));
                }
                causes.extend(crate::crd::validate_api_approval(obj, old));
                causes
            } else {
                crate::model::workloads::apply_defaults(&ri.group, &ri.resource, obj);
                crate::builtin::defaults::apply(&ri.group, &ri.resource, obj, old.is_none());
                crate::builtin::zero::fill(&ri.group, &ri.version, &ri.kind, obj);
                if sub == Subresource::Main {
                    crate::builtin::validation::prepare(&ri.group, &ri.resource, obj, old);
                } else if sub == Subresource::Status {
                    crate::builtin::validation::prepare_status(&ri.group, &ri.resource, obj, old);
                }
                crate::builtin::validation::for_write(&ri.group, &ri.resource, obj, old, sub)
            };
            if opts.user.is_none() {
                causes.retain(|c| !crate::builtin::validation::host_may_store(&ri.resource, c));
            }
            causes.extend(crate::auth::escalation::role_ref_causes(ri, obj, old));
            if !causes.is_empty() {
                return Err(Self::invalid_with_meta(ri, obj, causes));
            }
            return Ok(warnings);
        }
        if let Some(e) = custom_kind_error(ri, obj) {
            return Err(e);
        }
        let Some(schema) = ri.custom.as_ref().and_then(|c| c.schema.clone()) else {
            return Ok(Vec::new());
        };
        // Again after admission: what a mutating webhook or policy added that the schema does
        // not know is pruned silently, as kube's decoder of their patches prunes it (the
        // client's own unknown fields were reported by `decode_custom`).
        schema.prune(obj);
        let warnings = Vec::new();
        schema.apply_defaults(obj);
        let to_cause = |v: crate::schema::Violation| Cause::new(&v.reason, &v.field, v.message);
        // kube's custom resource strategies: a create validates the object; an update is
        // ratcheted; a `/status` write validates `status` only. CEL rules run unless a
        // blocking violation (type, required, enum, sizes) is there, which adds kube's note.
        let violations = match old {
            Some(old) if sub == Subresource::Status && ri.status_subresource => {
                schema.validate_status(obj, old)
            }
            Some(old) => schema.validate_update(obj, old),
            None => schema.validate(obj),
        };
        let scale = ri
            .scale
            .as_ref()
            .map(|sc| scale_causes(obj, sc, sub != Subresource::Status))
            .unwrap_or_default();
        let blocking = crate::schema::blocking_violation(&violations);
        let mut causes: Vec<Cause> = violations.into_iter().map(to_cause).collect();
        causes.extend(scale);
        // kube notes the rules it skipped only where the version has rules to skip.
        match blocking {
            Some(v) if schema.has_rules() => causes.push(to_cause(v)),
            Some(_) => {}
            None => causes.extend(schema.validate_cel(obj, old).into_iter().map(to_cause)),
        }
        if !causes.is_empty() {
            return Err(Self::invalid_with_meta(ri, obj, causes));
        }
        Ok(warnings)
    }

    /// A custom resource as kube's decoder hands it to admission: pruned to the schema (the
    /// client's unknown fields refused, warned about or dropped per `fieldValidation`) and
    /// defaulted, so mutating webhooks and policies see what will be stored. Decoded as
    /// unstructured first, every key its body repeated is reported, before the unknown fields
    /// (kube's `schemaCoercingDecoder` appends those to the JSON decoder's strict errors).
    /// `pruned`: `obj` is already as pruning leaves it (the patch path pruned it and nothing
    /// changed it since, see [`Built`]), so it is not pruned again here.
    fn decode_custom(
        ri: &ResourceInfo,
        obj: &mut Value,
        opts: &WriteOptions,
        pruned: bool,
    ) -> Result<Vec<String>> {
        if ri.custom.is_none() {
            return Ok(Vec::new());
        }
        let duplicates: Vec<String> = opts.duplicates.iter().map(|d| d.path.clone()).collect();
        // kube's coercer prunes and defaults only its own kind; another is refused later.
        let schema = ri
            .custom
            .as_ref()
            .and_then(|c| c.schema.as_ref())
            .filter(|_| custom_kind_error(ri, obj).is_none());
        let Some(schema) = schema else {
            return Self::strict_fields(&ri.kind, &ri.version, duplicates, Vec::new(), opts);
        };
        let unknown = if pruned {
            Vec::new()
        } else {
            schema.prune(obj)
        };
        let warnings = Self::strict_fields(&ri.kind, &ri.version, duplicates, unknown, opts)?;
        schema.apply_defaults(obj);
        Ok(warnings)
    }

    /// The stored object as an update starts from: with the defaults of its kind applied, as
    /// kube applies them whenever it reads an object from storage. An object stored before a
    /// default existed is then compared, validated and patched as kube would see it (a Pod
    /// stored without `enableServiceLinks` stays updatable; a status write does not bump its
    /// generation for a default).
    ///
    /// `converted`: `obj` is a custom resource stored in another version than `ri`'s, which
    /// [`Self::served`] has read as kube's storage decoder does already (pruned and defaulted by
    /// its stored version's schema, converted, pruned by `ri`'s): kube does not default it by
    /// the requested version's schema.
    fn defaults_on_read(ri: &ResourceInfo, obj: &mut Value, converted: bool) {
        if let Some(custom) = &ri.custom {
            // kube's storage decoder prunes and defaults every custom resource it reads.
            if let (Some(schema), false) = (&custom.schema, converted) {
                schema.prune(obj);
                schema.apply_defaults(obj);
            }
            return;
        }
        if ri.group == crate::crd::GROUP && ri.resource == crate::crd::RESOURCE {
            crate::crd::apply_defaults(obj);
        } else {
            crate::model::workloads::apply_defaults(&ri.group, &ri.resource, obj);
            crate::builtin::defaults::apply(&ri.group, &ri.resource, obj, false);
            crate::builtin::zero::fill(&ri.group, &ri.version, &ri.kind, obj);
        }
        // A Secret stored with `stringData` (by a turtles before every write folded it) is
        // read as kube's storage decoder reads it, folded into `data`; a value that is not a
        // string, which kube could not read at all, is dropped.
        if is_secrets(ri) && crate::builtin::decode::secret_on_decode(obj).is_err() {
            if let Some(m) = obj.as_object_mut() {
                m.shift_remove("stringData");
            }
            let _ = crate::builtin::decode::secret_on_decode(obj);
        }
    }

    /// Keys a body repeated and fields it had that its type does not: refused, warned about or
    /// dropped silently, per the request's `fieldValidation` (kube's messages: sigs.k8s.io/json's
    /// `duplicate field "PATH"` with Go's quoting, `unknown field "PATH"`, one strict decoding
    /// error joined by `, `). kube lists a built-in kind's in document order, one decoder
    /// finding both; here the repeated keys come first (a custom resource's order). `kind` and
    /// `version` are the body's (a resource's, or a `scale` write's `Scale`, `v1`).
    fn strict_fields(
        kind: &str,
        version: &str,
        duplicates: Vec<String>,
        unknown: Vec<String>,
        opts: &WriteOptions,
    ) -> Result<Vec<String>> {
        if duplicates.is_empty() && unknown.is_empty() && opts.patch_strict.is_empty() {
            return Ok(Vec::new());
        }
        // A patch's own errors first, as kube's patcher appends the patched object's to them.
        let msgs: Vec<String> = opts
            .patch_strict
            .iter()
            .cloned()
            .chain(
                duplicates
                    .iter()
                    .map(|f| format!("duplicate field {}", crate::auth::rbac::go_quote(f))),
            )
            .chain(
                unknown
                    .iter()
                    .map(|f| format!("unknown field {}", crate::auth::rbac::go_quote(f))),
            )
            .collect();
        let strict = format!("strict decoding error: {}", msgs.join(", "));
        match opts.field_validation {
            // The patched object was refused (or passed) as kube's patcher checks it, before
            // anything else looked at it (`decode_patched`); what admission added since
            // that its type does not have is dropped silently, as kube drops it.
            FieldValidation::Strict if opts.patched => Ok(Vec::new()),
            // A create's or update's body is decoded by kube's handler, which words it as any
            // body it cannot decode.
            FieldValidation::Strict => Err(cannot_handle(kind, version, strict)),
            FieldValidation::Warn => Ok(msgs),
            FieldValidation::Ignore => Ok(Vec::new()),
        }
    }

    /// An object as the requested version shows it. A custom resource is read as kube's storage
    /// decoder reads it (`crdConversionRESTOptionsGetter` in kube's `customresource_handler.go`):
    /// pruned and defaulted by the schema of the version it is stored in, then, stored in
    /// another version, converted (`conversion: None` only rewrites apiVersion) and pruned by
    /// the requested version's schema (`schemaCoercingConverter`), which does not default it.
    /// Stored as its version reads it (every write stores that: [`Self::to_storage`]), an
    /// object in the requested version is answered as stored unless it was stored before that
    /// version's schema last changed.
    /// Whether [`Service::present`] hands `obj` back as it is: no conversion of a built-in
    /// kind's storage version, and a custom resource stored in this version since its CRD's
    /// current schema.
    pub fn presents_as_stored(ri: &ResourceInfo, obj: &StoredObject) -> bool {
        if ri.conversion.is_some() {
            return false;
        }
        let Some(custom) = &ri.custom else {
            return true;
        };
        let stale = obj.rv <= custom.schema_rv && custom.schema.is_some();
        !stale && obj.head().api_version() == ri.api_version()
    }

    pub fn present(ri: &ResourceInfo, obj: Arc<StoredObject>) -> Arc<StoredObject> {
        if Self::presents_as_stored(ri, &obj) {
            return obj;
        }
        if let Some(c) = ri.conversion {
            let mut v = obj.parse().into_owned();
            if let Some(m) = v.as_object_mut() {
                (c.from_storage)(m);
                m.insert("apiVersion".into(), Value::String(ri.api_version()));
            }
            return match StoredObject::unstored(v) {
                Ok(mut o) => {
                    o.rv = obj.rv;
                    Arc::new(o)
                }
                Err(_) => obj,
            };
        }
        let Some(custom) = &ri.custom else {
            return obj;
        };
        let want = ri.api_version();
        let relabel = obj.head().api_version() != want;
        // A webhook converts (`served`, before this): what reaches here unconverted stays as
        // stored rather than be relabelled as a version it is not.
        if relabel && custom.webhook.is_some() {
            return obj;
        }
        // Stored in another version, or before the CRD's current schema (what
        // `presents_as_stored` ruled out): pruned and defaulted as kube's decoder reads it (a
        // field the schema dropped is gone, a default it added is there).
        let mut v = obj.parse().into_owned();
        if relabel {
            Self::decode_stored(custom, &mut v);
            if let Some(m) = v.as_object_mut() {
                m.insert("apiVersion".into(), Value::String(want));
            }
            if let Some(schema) = &custom.schema {
                schema.coerce(&mut v);
            }
        } else {
            let before = v.clone();
            if let Some(schema) = &custom.schema {
                schema.prune(&mut v);
                schema.apply_defaults(&mut v);
            }
            if before == v {
                return obj;
            }
        }
        match StoredObject::unstored(v) {
            Ok(mut o) => {
                o.rv = obj.rv;
                Arc::new(o)
            }
            Err(_) => obj,
        }
    }

    /// kube's storage decoder on a custom resource as stored: pruned and defaulted by the schema
    /// of the version its apiVersion names (kube's `schemaCoercingDecoder` and
    /// `unstructuredDefaulter`, with the CRD's `structuralSchemas` by version).
    fn decode_stored(custom: &crate::model::registry::CustomResource, obj: &mut Value) {
        let version = obj
            .get("apiVersion")
            .and_then(Value::as_str)
            .and_then(|a| a.rsplit_once('/'))
            .map(|(_, v)| v);
        let schema = version.and_then(|v| custom.schemas.get(v)).cloned();
        if let Some(schema) = schema {
            schema.prune(obj);
            schema.apply_defaults(obj);
        }
    }

    /// Objects as the version `ri` serves them: those of a custom resource stored in another
    /// version by a CRD with a conversion webhook go through the webhook (one ConversionReview
    /// for them all, `crd::conversion`); the rest through [`Self::present`].
    pub async fn served(
        &self,
        ri: &ResourceInfo,
        mut objs: Vec<Arc<StoredObject>>,
    ) -> Result<Vec<Arc<StoredObject>>> {
        let Some(hook) = ri.custom.as_ref().and_then(|c| c.webhook.clone()) else {
            return Ok(objs.into_iter().map(|o| Self::present(ri, o)).collect());
        };
        let Some(custom) = ri.custom.clone() else {
            return Ok(objs);
        };
        let want = ri.api_version();
        let stale: Vec<usize> = (0..objs.len())
            .filter(|&i| objs[i].head().api_version() != want)
            .collect();
        // Those stored in the requested version need no conversion.
        if stale.len() < objs.len() {
            objs = objs.into_iter().map(|o| Self::present(ri, o)).collect();
        }
        if stale.is_empty() {
            return Ok(objs);
        }
        // Reviews of at most `REVIEW_CHUNK` objects: a long list is several bounded answers.
        for chunk in stale.chunks(crate::crd::conversion::REVIEW_CHUNK) {
            // The webhook is sent what kube's storage decoder reads: pruned and defaulted by
            // the stored version's schema.
            let values = chunk
                .iter()
                .map(|&i| {
                    let mut v = objs[i].parse().into_owned();
                    Self::decode_stored(&custom, &mut v);
                    v
                })
                .collect();
            let converted =
                crate::crd::conversion::convert(&*self.store, &hook, &want, &ri.kind, values)
                    .await?;
            for (&i, mut v) in chunk.iter().zip(converted) {
                // As kube's coercer does with what a webhook answers: pruned to the served
                // version's schema (`schemaCoercingConverter`); not defaulted by it.
                if let Some(schema) = &custom.schema {
                    schema.coerce(&mut v);
                }
                let mut o = StoredObject::unstored(v).map_err(|e| {
                    ApiError::internal(format!("converted object does not serialize: {e}"))
                })?;
                o.rv = objs[i].rv;
                objs[i] = Arc::new(o);
            }
        }
        Ok(objs)
    }

    /// One object as the version `ri` serves it (see [`Self::served`]).
    pub async fn served_one(
        &self,
        ri: &ResourceInfo,
        obj: Arc<StoredObject>,
    ) -> Result<Arc<StoredObject>> {
        let mut v = self.served(ri, vec![obj]).await?;
        v.pop()
            .ok_or_else(|| ApiError::internal("conversion returned no object"))
    }

    /// An object written in `ri`'s version, in its storage version: through the CRD's
    /// conversion webhook when it has one and the versions differ, else [`Self::to_storage`].
    async fn stored_version(&self, ri: &ResourceInfo, obj: &mut Value) -> Result<()> {
        let hook = ri.custom.as_ref().and_then(|c| {
            (c.storage_version != ri.version)
                .then(|| c.webhook.clone())
                .flatten()
                .map(|h| (h, format!("{}/{}", ri.group, c.storage_version)))
        });
        let Some((hook, storage)) = hook else {
            Self::to_storage(ri, obj);
            return Ok(());
        };
        let mut converted = crate::crd::conversion::convert(
            &*self.store,
            &hook,
            &storage,
            &ri.kind,
            vec![std::mem::take(obj)],
        )
        .await?;
        *obj = converted
            .pop()
            .ok_or_else(|| ApiError::internal("conversion returned no object"))?;
        // Pruned to the storage version's schema: nothing the webhook adds is stored unchecked.
        if let Some(c) = &ri.custom {
            Self::conform_to_storage(c, obj);
        }
        Ok(())
    }

    /// The object as stored: custom resources are kept in their CRD's storage version, built-in
    /// kinds served in another version than stored are converted.
    fn to_storage(ri: &ResourceInfo, obj: &mut Value) {
        if let (Some(c), Some(m)) = (ri.conversion, obj.as_object_mut()) {
            (c.to_storage)(m);
            m.insert("apiVersion".into(), c.stored_api_version.into());
            return;
        }
        if let Some(c) = &ri.custom {
            if c.storage_version != ri.version {
                if let Some(m) = obj.as_object_mut() {
                    m.insert(
                        "apiVersion".into(),
                        Value::String(format!("{}/{}", ri.group, c.storage_version)),
                    );
                }
                Self::conform_to_storage(c, obj);
            }
        }
    }

    /// A custom resource written through another version than its storage version, converted
    /// to it: pruned by the storage version's schema, as kube's storage encoder does
    /// (`schemaCoercingConverter` in `customresource_handler.go`: the conversion, then
    /// `unstructuredSchemaCoercer`, pruning and dropping non-nullable `null`s without a
    /// default), and defaulted by it, as kube's storage decoder does every time the object is
    /// read: what is stored is what every read of it decodes, whatever the version written
    /// through and before or after a restart. (A write through the storage version was pruned
    /// and defaulted by the same schema as the request was decoded.)
    fn conform_to_storage(custom: &crate::model::registry::CustomResource, obj: &mut Value) {
        if let Some(schema) = custom.schemas.get(&custom.storage_version) {
            schema.prune(obj);
            schema.apply_defaults(obj);
        }
    }

    /// The store's 413 for an object far too big to store (twice the limit), answered as soon
    /// as the object is decoded and defaulted rather than after validation, admission and
    /// field management have worked on it (a 3 MB Pod of 100,000 containers, 60 MB once
    /// defaulted, took 35 s to be refused), and for dry runs too, which store nothing (kube
    /// lets those through: only etcd's limit stops it). An object just over the limit goes on,
    /// so that an invalid one gets its 422 first, as in kube.
    fn check_size(&self, ri: &ResourceInfo, obj: &Value) -> Result<()> {
        let limit = self.store.max_object_bytes();
        let size = crate::model::limits::json_len(obj);
        if size > limit.saturating_mul(2) {
            return Err(store_error(
                ri,
                meta::name(obj),
                StoreError::TooLarge { size, limit },
            ));
        }
        Ok(())
    }

    /// New custom resources are refused while their CRD is being deleted.
    fn check_crd_active(&self, ri: &ResourceInfo) -> Result<()> {
        let Some(c) = &ri.custom else { return Ok(()) };
        let key = ObjectKey::new(
            &format!("{}.{}", crate::crd::RESOURCE, crate::crd::GROUP),
            "",
            &c.crd_name,
        );
        match self.store.get(&key) {
            Some(crd) if meta::meta_str(crd.head(), "deletionTimestamp").is_none() => Ok(()),
            _ => Err(ApiError::method_not_allowed(
                "create not allowed while custom resource definition is terminating",
            )),
        }
    }

    /// Kind-specific defaults on create, as kube's strategies set them.
    /// kube's `FillObjectMetaSystemFields` and the fields `BeforeCreate` clears.
    fn system_fields_on_create(ri: &ResourceInfo, obj: &mut Value) -> Result<()> {
        let m = metadata_mut(obj)
            .ok_or_else(|| ApiError::bad_request("metadata must be a JSON object"))?;
        m.insert(
            "uid".into(),
            Value::String(uuid::Uuid::new_v4().to_string()),
        );
        m.insert(
            "creationTimestamp".into(),
            Value::String(meta::now_rfc3339()),
        );
        if ri.generation {
            m.insert("generation".into(), json!(1));
        }
        for field in [
            "resourceVersion",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "managedFields",
            "selfLink",
        ] {
            m.remove(field);
        }
        Ok(())
    }

    fn defaults_on_create(ri: &ResourceInfo, obj: &mut Value) {
        let Some(map) = obj.as_object_mut() else {
            return;
        };
        // A custom resource with a status subresource cannot set status on create.
        if ri.is_custom() && ri.status_subresource {
            map.remove("status");
        }
        // Built-in kinds with a status subresource start with a zero status (kube's
        // PrepareForCreate): only controllers write it, through `/status`. Nodes keep theirs
        // (kubelets register with it); Namespaces and Pods get their first phase below. The
        // zero status's fields (`{}`, a ReplicaSet's `{"replicas": 0}`, a Service's
        // `{"loadBalancer": {}}`) are added by `admit` (`builtin::zero::fill`), as to every
        // write.
        let keeps_status = matches!(
            (ri.group.as_str(), ri.resource.as_str()),
            ("", "nodes" | "pods" | "namespaces")
                | ("apiextensions.k8s.io", _)
                | ("turtles.dev", _)
        );
        if ri.status_subresource && !ri.is_custom() && !keeps_status {
            map.remove("status");
        }
        match (ri.group.as_str(), ri.resource.as_str()) {
            ("", "namespaces") => {
                map.insert("status".into(), json!({"phase": "Active"}));
                // The namespace controller's finalizer (it empties the namespace before it
                // goes), after any others, as kube's PrepareForCreate appends it.
                let spec = map.entry("spec").or_insert_with(|| json!({}));
                if !spec.is_object() {
                    *spec = json!({});
                }
                let list = &mut spec["finalizers"];
                if !list.is_array() {
                    *list = json!([]);
                }
                if let Some(l) = list.as_array_mut() {
                    if !l.iter().any(|f| f == NAMESPACE_FINALIZER) {
                        l.push(json!(NAMESPACE_FINALIZER));
                    }
                }
            }
            ("", "pods") => {
                // kube's PrepareForCreate: whatever status was sent, a Pod starts Pending (its
                // QoS class is added once its quantities are decoded; its kubelet, or a
                // scheduler, reports the rest through /status).
                map.insert("status".into(), json!({"phase": "Pending"}));
            }
            ("", "persistentvolumeclaims") => {
                map.insert("status".into(), json!({"phase": "Pending"}));
            }
            ("", "persistentvolumes") => {
                map.insert(
                    "status".into(),
                    json!({"phase": "Pending", "lastPhaseTransitionTime": meta::now_rfc3339()}),
                );
            }
            _ => {}
        }
    }

    /// What kube does when it decodes a created object, before admission sees it: a Namespace's
    /// name label, and a Secret's conversion ([`Service::convert_on_decode`]).
    fn defaults_on_decode(ri: &ResourceInfo, obj: &mut Value) -> Result<()> {
        if is_namespaces(ri) {
            crate::builtin::defaults::namespace_name_label(obj);
            return Ok(());
        }
        Self::convert_on_decode(ri, obj)
    }

    /// What kube's decoding of a write's object into its internal type changes, before
    /// admission sees it, on every way in (a create's or update's body, a patched object, a
    /// server-side apply's result): a Secret's default type and its write-only `stringData`
    /// folded into `data` (`builtin::decode::secret_on_decode`). The decoder after admission
    /// (`admit`) does it again, for what a mutating webhook or policy sent. A `stringData` of
    /// the wrong type is the decoder's 400, `Secret in version "v1" cannot be handled as a
    /// Secret: json: cannot unmarshal number into Go struct field Secret.stringData of type
    /// string`, naming the first error of the whole object in document order, as Go's decoder
    /// reports its first.
    fn convert_on_decode(ri: &ResourceInfo, obj: &mut Value) -> Result<()> {
        if !is_secrets(ri) {
            return Ok(());
        }
        match crate::builtin::decode::secret_on_decode(obj) {
            Ok(_) => Ok(()),
            Err(e) => {
                let mut copy = obj.clone();
                let first =
                    crate::builtin::decode::decode(&ri.group, &ri.version, &ri.kind, &mut copy)
                        .err()
                        .unwrap_or(e);
                Err(cannot_handle(&ri.kind, &ri.version, first))
            }
        }
    }

    /// The time fields of a body's `metadata` as kube's decoder reads them
    /// (`builtin::decode::decode_metadata_times`), before anything else looks at the body: a
    /// bad one is the decoder's 400 (`Lease in version "v1" cannot be handled as a Lease: parsing
    /// time "garbage" as "2006-01-02T15:04:05Z07:00": cannot parse "garbage" as "2006"`), a good
    /// one rewritten as kube writes it. The write takes `managedFields` out and overwrites the
    /// timestamps before the object's own decode (`admit`), which would never see them; for a
    /// custom resource this is kube's typed read of its metadata (`GetObjectMeta`).
    fn decode_metadata_times(ri: &ResourceInfo, obj: &mut Value) -> Result<()> {
        crate::builtin::decode::decode_metadata_times(&ri.group, &ri.version, &ri.kind, obj)
            .map(|_| ())
            .map_err(|e| cannot_handle(&ri.kind, &ri.version, e))
    }

    pub async fn create(
        &self,
        ri: &ResourceInfo,
        ns: &str,
        mut obj: Value,
        opts: &WriteOptions,
    ) -> Result<Written> {
        Self::check_type_as(ri, &mut obj, opts.custom_kind_validated)?;
        Self::check_scope(ri, ns, &mut obj)?;
        Self::decode_metadata_times(ri, &mut obj)?;
        let m = metadata_mut(&mut obj)
            .ok_or_else(|| ApiError::bad_request("metadata must be a JSON object"))?;
        if m.get("resourceVersion")
            .and_then(Value::as_str)
            .is_some_and(|s| !s.is_empty())
        {
            return Err(ApiError::bad_request(
                "resourceVersion should not be set on objects to be created",
            ));
        }
        m.remove("resourceVersion");
        let supplied = m.remove("managedFields");
        m.remove("selfLink");
        Self::defaults_on_decode(ri, &mut obj)?;
        if ri.namespaced()
            && self
                .store
                .get(&ObjectKey::new(NAMESPACES, "", ns))
                .is_none()
        {
            // Not in this host's view: on a store shared by several hosts it may have been
            // created through another a moment ago (kube's NamespaceLifecycle looks it up live
            // on a miss the same way).
            self.store
                .sync()
                .await
                .map_err(|e| store_error(ri, meta::name(&obj), e))?;
        }
        self.check_namespace_usable(ri, ns, meta::name(&obj))?;
        self.check_crd_active(ri)?;
        if let Some(guard) = opts.guard.as_ref().filter(|g| !g.after_admission()) {
            guard.check(ri, ns, None, &obj)?;
        }
        let view = if ri.custom.is_none() {
            self.field_manager_view(ri, &obj, None, opts)
        } else {
            None
        };
        self.builtin_mutation(ri, ns, &mut obj).await?;
        self.check_size(ri, &obj)?;
        let mut warnings = Self::decode_custom(ri, &mut obj, opts, false)?;
        let view = match view {
            None if ri.custom.is_some() => self.field_manager_view(ri, &obj, None, opts),
            v => v,
        };
        warnings.extend(
            self.admission(ri, ns, Operation::Create, None, &mut obj, "", opts)
                .await?,
        );
        // kube's `BeforeCreate`, after mutating admission: what admission set there does not
        // stick (the system fields, the kind's start state).
        Self::system_fields_on_create(ri, &mut obj)?;
        Self::defaults_on_create(ri, &mut obj);
        if crate::builtin::csr::is_csrs(ri) {
            crate::builtin::csr::prepare_create(&mut obj, opts.user.as_ref());
        }
        // A name is generated only if the object still has none after admission.
        let generate = meta::meta_str(&obj, "generateName")
            .filter(|g| !g.is_empty())
            .map(str::to_owned);
        let named = !meta::name(&obj).is_empty();
        // kube's `BeforeCreate` generates the name before validating admission, so validating
        // policies and webhooks see it. (A name that collides is replaced by another without
        // running validating admission again, where kube runs it again: see docs/admission.md.)
        if let (false, Some(prefix)) = (named, &generate) {
            Self::generate_name(ri, &mut obj, prefix);
        }
        warnings.extend(Self::admit(
            ri,
            &mut obj,
            None,
            Subresource::Main,
            opts,
            false,
        )?);
        self.check_param_access(ri, &obj, None, opts)?;
        crate::priority::check_default(self, ri, &obj, None)?;
        Self::qos_on_create(ri, &mut obj);
        Self::validate_sub(ri, &obj, None, Subresource::Main)?;
        Self::guard_after_admission(ri, ns, None, &obj, opts)?;
        Self::track_fields(ri, None, &mut obj, view, supplied, Subresource::Main, opts);
        // kube's LimitRanger validation comes before the validating webhooks and policies;
        // ResourceQuota last. The quota's charge is held until the object is stored.
        crate::limitrange::validate(self, ri, ns, &obj)?;
        if ri.group.is_empty() && ri.resource == "pods" {
            crate::pod_admission::validate_create(self, ri, ns, &obj).await?;
        }
        warnings.extend(
            self.admitted(ri, ns, Operation::Create, None, Some(&obj), "", opts)
                .await?,
        );
        // Converted (a webhook call, maybe slow) before the quota charge holds its lock.
        self.stored_version(ri, &mut obj).await?;
        let _charged = match opts.user {
            Some(_) => crate::quota::admit(self, ri, ns, None, &obj, opts.dry_run).await?,
            None => None,
        };
        let txn = self.allocate(ri, &mut obj, None, opts.dry_run).await?;
        let svc = txn.as_ref().map(|_| obj.clone());
        let result = self
            .create_stored(ri, ns, obj, opts, named, generate, warnings)
            .await;
        if let Some(mut svc) = svc {
            if let (Ok(w), Some(t)) = (&result, &txn) {
                // A generated name that collided was replaced: the claims follow the name.
                let stored = meta::name(w.object.head());
                if t.claimed && stored != meta::name(&svc) {
                    let from = (
                        meta::namespace(&svc).to_owned(),
                        meta::name(&svc).to_owned(),
                    );
                    if let Some(m) = metadata_mut(&mut svc) {
                        m.insert("name".into(), Value::String(stored.to_owned()));
                    }
                    crate::claims::adopt(&*self.store, t.taken(), (&from.0, &from.1), &svc).await;
                }
            }
            let known = result.as_ref().map_or_else(|e| e.code < 500, |_| true);
            self.settle(txn, &svc, result.is_ok() && !opts.dry_run, known)
                .await;
        }
        result
    }

    /// `metadata.name` from `generateName` (cut to 58 bytes) and a random suffix, as kube's
    /// `SimpleNameGenerator`; a Namespace gets its name label with it.
    fn generate_name(ri: &ResourceInfo, obj: &mut Value, prefix: &str) {
        let Some(m) = metadata_mut(obj) else { return };
        let mut p = prefix.to_owned();
        let mut cut = p.len().min(58);
        while !p.is_char_boundary(cut) {
            cut -= 1;
        }
        p.truncate(cut);
        m.insert(
            "name".into(),
            Value::String(format!("{p}{}", meta::random_suffix())),
        );
        if (ri.group.as_str(), ri.resource.as_str()) == ("", "namespaces") {
            crate::builtin::defaults::namespace_name_label(obj);
        }
    }

    /// Store a created object, generating its name if asked (a generated name can collide;
    /// kube retries too).
    #[allow(clippy::too_many_arguments)]
    async fn create_stored(
        &self,
        ri: &ResourceInfo,
        ns: &str,
        mut obj: Value,
        opts: &WriteOptions,
        named: bool,
        generate: Option<String>,
        warnings: Vec<String>,
    ) -> Result<Written> {
        let attempts = if named || generate.is_none() { 1 } else { 8 };
        let mut last_err = None;
        for attempt in 1..=attempts {
            // The first generated name was set before validating admission.
            if let (false, true, Some(prefix)) = (named, attempt > 1, &generate) {
                Self::generate_name(ri, &mut obj, prefix);
            }
            Self::validate(ri, &obj)?;
            let name = meta::name(&obj).to_owned();
            if opts.dry_run {
                if self.store.get(&Self::key(ri, ns, &name)).is_some() {
                    last_err = Some(ApiError::already_exists(&ri.group, &ri.resource, &name));
                    // A generated name taken: another one, as for a real create.
                    if !named {
                        continue;
                    }
                    break;
                }
                return StoredObject::unstored(obj)
                    .map(|o| Written::new(Arc::new(o), warnings))
                    .map_err(|e| store_error(ri, &name, e));
            }
            let key = Self::key(ri, ns, &name);
            if named || attempt == attempts {
                // No retry after this write: the store takes the object (and frees it once
                // serialized).
                let op = WriteOp::Put {
                    key,
                    value: obj,
                    precondition: Precondition::MustNotExist,
                };
                return match self.store.write(op).await {
                    Ok(o) => Ok(Written::new(o, warnings)),
                    Err(e) => Err(store_error(ri, &name, e)),
                };
            }
            // A generated name already taken: kube retries with another name (up to 8
            // attempts). The store hands the object back with its refusal, for the next one.
            match self.store.create(key, obj).await {
                Ok(o) => return Ok(Written::new(o, warnings)),
                Err((StoreError::AlreadyExists, back)) => {
                    last_err = Some(ApiError::already_exists(&ri.group, &ri.resource, &name));
                    obj = back;
                }
                Err((e, _)) => return Err(store_error(ri, &name, e)),
            }
        }
        Err(last_err.unwrap_or_else(|| ApiError::internal("could not generate a unique name")))
    }

    /// PUT: replace the object (or only its status).
    pub async fn update(
        &self,
        ri: &ResourceInfo,
        ns: &str,
        name: &str,
        mut obj: Value,
        sub: Subresource,
        opts: &WriteOptions,
    ) -> Result<Written> {
        Self::check_type_as(ri, &mut obj, opts.custom_kind_validated)?;
        Self::check_scope(ri, ns, &mut obj)?;
        // kube decodes the body before it looks for the object.
        Self::decode_metadata_times(ri, &mut obj)?;
        Self::convert_on_decode(ri, &mut obj)?;
        let body_name = meta::name(&obj);
        if body_name.is_empty() {
            if let Some(m) = metadata_mut(&mut obj) {
                m.insert("name".into(), Value::String(name.to_owned()));
            }
        } else if body_name != name {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({body_name}) does not match the name on the URL ({name})"
            )));
        }
        let wanted_rv = match meta::meta_str(&obj, "resourceVersion").filter(|s| !s.is_empty()) {
            Some(s) => {
                Some(parse_rv(s).map_err(|_| ApiError::conflict(&ri.group, &ri.resource, name))?)
            }
            None => None,
        };
        for attempt in 0..CONFLICT_RETRIES {
            self.before_retry(attempt).await?;
            if self.store.get(&Self::key(ri, ns, name)).is_none() {
                if !(ri.create_on_update && sub == Subresource::Main) {
                    return Err(ApiError::not_found(&ri.group, &ri.resource, name));
                }
                // kube's create-on-update: a create in every way (strategy, admission as
                // CREATE, 201), which the user must be allowed too; the body's
                // resourceVersion is dropped as a create drops it.
                Self::authorize_create(ri, ns, name, opts)?;
                let mut fresh = obj.clone();
                if let Some(m) = metadata_mut(&mut fresh) {
                    m.remove("resourceVersion");
                }
                match self.create(ri, ns, fresh, opts).await {
                    Err(e) if e.code == 409 && e.reason == "AlreadyExists" => continue,
                    r => {
                        return r.map(|mut w| {
                            w.created = true;
                            w
                        })
                    }
                }
            }
            if !ri.unconditional_update && wanted_rv.is_none() {
                // kube's store names the resource where `Invalid` names a kind (its TODO); the
                // value is the `uint64` 0, which kube 1.34 prints as its JSON (1.33: `0x0`).
                return Err(ApiError::invalid(
                    &ri.group,
                    &ri.resource,
                    name,
                    vec![Cause::new(
                        "FieldValueInvalid",
                        "metadata.resourceVersion",
                        "Invalid value: 0: must be specified for an update",
                    )],
                ));
            }
            match self
                .update_with(ri, ns, name, wanted_rv, opts, sub, |_, _| Ok(obj.clone()))
                .await
            {
                // Deleted between the look and the write: look again (it may be created).
                Err(e) if e.code == 404 && ri.create_on_update && sub == Subresource::Main => {
                    continue
                }
                r => return r,
            }
        }
        Err(ApiError::conflict(&ri.group, &ri.resource, name))
    }

    /// kube's admission policy strategies' authorization of parameters: who writes a
    /// Validating- or MutatingAdmissionPolicy with a `paramKind` must be allowed `get` on all
    /// objects of that kind, and who writes a binding with a `paramRef` `get` on the object it
    /// names (of its policy's `paramKind`), unless nothing about them changed; the cluster admin
    /// is not checked. A 422 with a `Forbidden` cause, as kube's `Validate` reports it.
    fn check_param_access(
        &self,
        ri: &ResourceInfo,
        obj: &Value,
        old: Option<&Value>,
        opts: &WriteOptions,
    ) -> Result<()> {
        const POLICIES: [&str; 2] = ["validatingadmissionpolicies", "mutatingadmissionpolicies"];
        const BINDINGS: [&str; 2] = [
            "validatingadmissionpolicybindings",
            "mutatingadmissionpolicybindings",
        ];
        if ri.group != "admissionregistration.k8s.io" {
            return Ok(());
        }
        let (Some(authz), Some(user)) = (&opts.authorizer, &opts.user) else {
            return Ok(());
        };
        if user.groups.iter().any(|g| g == "system:masters") {
            return Ok(());
        }
        let spec_of = |v: &Value, k: &str| {
            v.pointer(&format!("/spec/{k}"))
                .filter(|x| !x.is_null())
                .cloned()
        };
        // The resource a paramKind names (`*` where it cannot be resolved), as kube resolves it.
        let resolve = |pk: &Value| -> (String, String) {
            let api_version = pk.get("apiVersion").and_then(Value::as_str).unwrap_or("");
            let kind = pk.get("kind").and_then(Value::as_str).unwrap_or("");
            let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
            match self.registry.lookup_kind(group, version, kind) {
                Some(r) if !api_version.is_empty() => (group.to_owned(), r.resource.clone()),
                _ if !api_version.is_empty() => (group.to_owned(), "*".to_owned()),
                _ => ("*".to_owned(), "*".to_owned()),
            }
        };
        let (field, attrs, message) = if POLICIES.contains(&ri.resource.as_str()) {
            let Some(pk) = spec_of(obj, "paramKind") else {
                return Ok(());
            };
            if old.and_then(|o| spec_of(o, "paramKind")).as_ref() == Some(&pk) {
                return Ok(());
            }
            let (group, resource) = resolve(&pk);
            (
                "spec.paramKind",
                crate::auth::rbac::Attributes::resource("get", &group, &resource, "*", "*"),
                format!(
                    "user {} must have \"get\" permission on all objects of the referenced paramKind (kind={}, apiVersion={})",
                    go_user(user),
                    pk.get("kind").and_then(Value::as_str).unwrap_or(""),
                    pk.get("apiVersion").and_then(Value::as_str).unwrap_or("")
                ),
            )
        } else if BINDINGS.contains(&ri.resource.as_str()) {
            let Some(pr) = spec_of(obj, "paramRef") else {
                return Ok(());
            };
            if let Some(o) = old {
                if spec_of(o, "paramRef").as_ref() == Some(&pr)
                    && spec_of(o, "policyName") == spec_of(obj, "policyName")
                {
                    return Ok(());
                }
            }
            let policies = if ri.resource.starts_with("validating") {
                POLICIES[0]
            } else {
                POLICIES[1]
            };
            let policy_name = obj
                .pointer("/spec/policyName")
                .and_then(Value::as_str)
                .unwrap_or("");
            let paramkind = self
                .store
                .get(&ObjectKey::new(
                    &format!("{policies}.admissionregistration.k8s.io"),
                    "",
                    policy_name,
                ))
                .and_then(|p| spec_of(&p.parse(), "paramKind"));
            let (group, resource) = match &paramkind {
                Some(pk) => resolve(pk),
                None => ("*".to_owned(), "*".to_owned()),
            };
            (
                "spec.paramRef",
                crate::auth::rbac::Attributes::resource(
                    "get",
                    &group,
                    &resource,
                    pr.get("namespace").and_then(Value::as_str).unwrap_or(""),
                    pr.get("name").and_then(Value::as_str).unwrap_or(""),
                ),
                format!(
                    "user {} does not have \"get\" permission on the object referenced by paramRef",
                    go_user(user)
                ),
            )
        } else {
            return Ok(());
        };
        if authz.authorize(user, &attrs).is_allowed() {
            return Ok(());
        }
        Err(ApiError::invalid(
            &ri.group,
            &ri.kind,
            meta::name(obj),
            vec![Cause::new(
                "FieldValueForbidden",
                field,
                format!("Forbidden: {message}"),
            )],
        ))
    }

    /// kube's `withAuthorization` around a create that an update or a server-side apply makes:
    /// the requesting user needs `create` on the object too (403 otherwise, with the
    /// authorizer's reason).
    fn authorize_create(
        ri: &ResourceInfo,
        ns: &str,
        name: &str,
        opts: &WriteOptions,
    ) -> Result<()> {
        let (Some(authz), Some(user)) = (&opts.authorizer, &opts.user) else {
            return Ok(());
        };
        let attrs =
            crate::auth::rbac::Attributes::resource("create", &ri.group, &ri.resource, ns, name);
        let decision = authz.authorize(user, &attrs);
        if decision.is_allowed() {
            return Ok(());
        }
        let qualified = if ri.group.is_empty() {
            ri.resource.clone()
        } else {
            format!("{}.{}", ri.resource, ri.group)
        };
        Err(ApiError::forbidden(format!(
            "{qualified} {} is forbidden: {}",
            crate::auth::rbac::go_quote(name),
            decision.reason()
        ))
        .with_details(&ri.group, &ri.resource, name))
    }

    /// PATCH: apply a patch to the latest state (retrying on write races).
    #[allow(clippy::too_many_arguments)]
    pub async fn patch(
        &self,
        ri: &ResourceInfo,
        ns: &str,
        name: &str,
        patch_type: PatchType,
        body: &[u8],
        sub: Subresource,
        opts: &WriteOptions,
    ) -> Result<Written> {
        if patch_type == PatchType::Apply {
            return self.apply(ri, ns, name, body, sub, opts).await;
        }
        if ri.is_custom() && patch_type == PatchType::Strategic {
            return Err(ApiError::unsupported_media_type(
                "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml",
            ));
        }
        // kube's patcher decodes the patch strictly unless `fieldValidation=Ignore`.
        let (patch_value, patch_strict) = patch::parse_strict(
            patch_type,
            body,
            opts.field_validation != FieldValidation::Ignore,
        )?;
        let opts = &WriteOptions {
            patched: true,
            patch_strict,
            ..opts.clone()
        };
        self.update_with(ri, ns, name, None, opts, sub, |stored, current| {
            let mut out = patch::apply_request(patch_type, current, &patch_value, ri)?;
            // Then it decodes the patched object into its type, before anything else looks at
            // it: the write's one decode of it, unless the decoder changed it or something
            // does later (`Built`).
            let decoded = Self::decode_patched(ri, patch_type, &patch_value, opts, &out)?;
            // As kube's patcher: the patched object's resourceVersion is the precondition. A
            // patch that sets one (a merge patch's `metadata`, a JSON patch `replace`) must name
            // the current version; one that empties it makes the write unconditional.
            if let Some(rv) = out
                .pointer("/metadata/resourceVersion")
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
            {
                if parse_rv(rv).ok() != Some(stored.rv) {
                    return Err(ApiError::conflict(&ri.group, &ri.resource, name));
                }
            }
            // A patch cannot move an object between namespaces or names.
            Self::check_type(ri, &mut out)?;
            if meta::name(&out) != name {
                return Err(ApiError::bad_request(format!(
                    "the name of the object ({}) does not match the name on the URL ({name})",
                    meta::name(&out)
                )));
            }
            Self::check_scope(ri, ns, &mut out)?;
            Ok(Built {
                value: out,
                warnings: Vec::new(),
                decoded,
            })
        })
        .await
    }

    /// kube's patcher's decode of the patched object into its type
    /// (`jsonPatcher.applyPatchToCurrentObject`, `applyPatchToObject`), under every
    /// `fieldValidation`: a built-in kind's value of the wrong type (a Secret's `stringData`
    /// value that is not a string, say) is one 422 ([`patch_refused`]), `"" is invalid: patch:
    /// Invalid value: "...": json: cannot unmarshal number into Go struct field
    /// Secret.stringData of type string`, which trumps strict errors as in kube. Under `Strict`
    /// the patch's own strict errors and the unknown fields of the patched object are that 422
    /// too, `strict decoding error: duplicate field "data.a", unknown field "bogus"`; under
    /// `Warn` they are reported by the pipeline's decode. The decode is of a copy, which is
    /// handed back when the decoder found nothing to drop or rewrite in it (then it equals
    /// `patched`, and the pipeline need not decode the object again while it stays so, see
    /// [`Built`]); otherwise (an unknown field dropped, a quantity made canonical, a Secret's
    /// `stringData` folded into `data`) the pipeline decodes the object as it decodes any
    /// other write's, after admission. A custom resource is pruned here under `Strict` only
    /// (it has no types to get wrong).
    fn decode_patched(
        ri: &ResourceInfo,
        patch_type: PatchType,
        patch: &Value,
        opts: &WriteOptions,
        patched: &Value,
    ) -> Result<Option<Value>> {
        let strict = opts.field_validation == FieldValidation::Strict;
        // A custom resource's metadata is read into the typed ObjectMeta (kube's
        // `GetObjectMeta`): a time there that does not parse fails the decode.
        if let (Some(_), Some(meta)) = (&ri.custom, patched.get("metadata")) {
            let mut only = json!({ "metadata": meta.clone() });
            if let Err(e) = crate::builtin::decode::decode_metadata_times(
                &ri.group,
                &ri.version,
                &ri.kind,
                &mut only,
            ) {
                return Err(patch_refused(patch_type, patch, patched, &e.0));
            }
        }
        let (unknown, copy) = if ri.custom.is_none() {
            let mut copy = patched.clone();
            match crate::builtin::decode::decode_noting_changes(
                &ri.group,
                &ri.version,
                &ri.kind,
                &mut copy,
            ) {
                Ok(d) => (d.unknown, (!d.changed).then_some(copy)),
                Err(e) => {
                    // A strategic merge patch's result goes through kube's unstructured
                    // converter rather than Go's JSON decoder, which words a Secret's bad
                    // `stringData` its own way; other fields' errors come first (its walk
                    // follows the Go struct: `data` before `stringData`).
                    let converter = match patch_type {
                        PatchType::Strategic if is_secrets(ri) => {
                            crate::builtin::decode::secret_unstructured_error(patched).filter(
                                |_| {
                                    let mut rest = patched.clone();
                                    if let Some(m) = rest.as_object_mut() {
                                        m.shift_remove("stringData");
                                    }
                                    crate::builtin::decode::decode(
                                        &ri.group,
                                        &ri.version,
                                        &ri.kind,
                                        &mut rest,
                                    )
                                    .is_ok()
                                },
                            )
                        }
                        _ => None,
                    };
                    let error = converter.unwrap_or(e.0);
                    return Err(patch_refused(patch_type, patch, patched, &error));
                }
            }
        } else if !strict {
            return Ok(None);
        } else {
            match ri.custom.as_ref().and_then(|c| c.schema.as_ref()) {
                // Pruning only drops fields, and reports each (`Schema::prune`): none
                // reported, nothing changed.
                Some(schema) => {
                    let mut copy = patched.clone();
                    let unknown = schema.prune(&mut copy);
                    let copy = unknown.is_empty().then_some(copy);
                    (unknown, copy)
                }
                None => (Vec::new(), None),
            }
        };
        let patch_strict = &opts.patch_strict;
        if !strict || (patch_strict.is_empty() && unknown.is_empty()) {
            return Ok(copy);
        }
        let msgs: Vec<String> = patch_strict
            .iter()
            .cloned()
            .chain(
                unknown
                    .iter()
                    .map(|f| format!("unknown field {}", crate::auth::rbac::go_quote(f))),
            )
            .collect();
        Err(patch_refused(
            patch_type,
            patch,
            patched,
            &format!("strict decoding error: {}", msgs.join(", ")),
        ))
    }

    /// Server-side apply (`application/apply-patch+yaml`): merge the applied configuration into
    /// the live object as its manager (`crate::apply`), creating the object if it does not exist.
    async fn apply(
        &self,
        ri: &ResourceInfo,
        ns: &str,
        name: &str,
        body: &[u8],
        sub: Subresource,
        opts: &WriteOptions,
    ) -> Result<Written> {
        // kube decodes the configuration again with go-yaml's strict decoder, unless Ignore.
        let (config, repeated) = crate::apply::parse_config_strict(
            ri,
            body,
            opts.field_validation != FieldValidation::Ignore,
        )?;
        self.apply_config(ri, ns, name, config, &repeated, sub, opts)
            .await
    }

    /// [`Service::apply`] of a parsed configuration, with what go-yaml's strict decoder found
    /// repeated in it (`line 3: key "a" already set in map`), which kube's `applyPatcher`
    /// reports once the apply itself succeeded (a conflict comes first): with
    /// `fieldValidation=Strict` a 400 `error strict decoding patch: ...`, with `Warn` a warning
    /// each, before any other.
    #[allow(clippy::too_many_arguments)]
    async fn apply_config(
        &self,
        ri: &ResourceInfo,
        ns: &str,
        name: &str,
        config: Value,
        repeated: &[String],
        sub: Subresource,
        opts: &WriteOptions,
    ) -> Result<Written> {
        let refuse_repeated = || -> Result<()> {
            match opts.field_validation {
                FieldValidation::Strict if !repeated.is_empty() => {
                    Err(crate::apply::strict_decoding_error(repeated))
                }
                _ => Ok(()),
            }
        };
        let warned = |mut w: Written| -> Written {
            if opts.field_validation == FieldValidation::Warn && !repeated.is_empty() {
                let rest = std::mem::take(&mut w.warnings);
                w.warnings = repeated.iter().cloned().chain(rest).collect();
            }
            w
        };
        let manager = opts.manager.clone().unwrap_or_default();
        let who = crate::apply::Manager {
            name: &manager,
            sub,
        };
        let opts = WriteOptions {
            applied: true,
            ..opts.clone()
        };
        let wanted_rv = config
            .pointer("/metadata/resourceVersion")
            .and_then(Value::as_str)
            .map(|s| parse_rv(s).map_err(|_| ApiError::conflict(&ri.group, &ri.resource, name)))
            .transpose()?;
        let check = |mut out: Value| -> Result<Value> {
            Self::check_type(ri, &mut out)?;
            if meta::name(&out) != name {
                return Err(ApiError::bad_request(format!(
                    "the name of the object ({}) does not match the name on the URL ({name})",
                    meta::name(&out)
                )));
            }
            Self::check_scope(ri, ns, &mut out)?;
            Ok(out)
        };
        for attempt in 0..CONFLICT_RETRIES {
            self.before_retry(attempt).await?;
            if sub == Subresource::Main && self.store.get(&Self::key(ri, ns, name)).is_none() {
                if wanted_rv.is_some() {
                    return Err(ApiError::not_found(&ri.group, &ri.resource, name));
                }
                let mut obj = crate::apply::apply(ri, None, &config, &who, opts.force)?;
                refuse_repeated()?;
                if let Some(m) = metadata_mut(&mut obj) {
                    m.entry("name")
                        .or_insert_with(|| Value::String(name.to_owned()));
                }
                let obj = check(obj)?;
                Self::authorize_create(ri, ns, name, &opts)?;
                match self.create(ri, ns, obj, &opts).await {
                    Err(e) if e.code == 409 && e.reason == "AlreadyExists" => continue,
                    r => {
                        return r.map(|w| {
                            let mut w = warned(w);
                            w.created = true;
                            w
                        })
                    }
                }
            }
            let r = self
                .update_with(ri, ns, name, wanted_rv, &opts, sub, |_, current| {
                    let out = crate::apply::apply(ri, Some(current), &config, &who, opts.force)?;
                    refuse_repeated()?;
                    check(out)
                })
                .await;
            match r {
                Err(e) if e.code == 404 && sub == Subresource::Main => continue,
                r => return r.map(warned),
            }
        }
        Err(ApiError::conflict(&ri.group, &ri.resource, name))
    }

    /// The object of a create or update as kube's field manager records it: as the decoder
    /// leaves it (defaulted), before admission and the kind's strategy change it. kube's
    /// handlers call the field manager before mutating admission, `PrepareForCreate` /
    /// `PrepareForUpdate` and validation, so what those add (a Pod's service-account token
    /// volume, a claim's default StorageClass, a Job's generated selector, a DaemonSet's
    /// template generation, a webhook's patch) is owned by no manager: a client that later
    /// moves to server-side apply does not own, and so does not remove, fields it never sent.
    /// `None` when nothing on the way can add a field (the write is recorded on the object as
    /// stored), for server-side apply (which records its own), and for the host's own writes.
    fn field_manager_view(
        &self,
        ri: &ResourceInfo,
        obj: &Value,
        old: Option<&Value>,
        opts: &WriteOptions,
    ) -> Option<Value> {
        if opts.applied || opts.user.is_none() {
            return None;
        }
        let changed_on_the_way = matches!(
            (ri.group.as_str(), ri.resource.as_str()),
            ("", "pods" | "persistentvolumeclaims" | "namespaces")
                | ("batch", "jobs")
                | ("apps", "daemonsets")
                | ("certificates.k8s.io", "certificatesigningrequests")
                | ("networking.k8s.io", "ingresses")
        );
        if !changed_on_the_way && !self.admission.may_mutate() {
            return None;
        }
        let mut view = obj.clone();
        if ri.custom.is_some() {
            // A custom resource's `view` is taken after its decode (pruned and defaulted).
            return Some(view);
        }
        if ri.group == crate::crd::GROUP && ri.resource == crate::crd::RESOURCE {
            crate::crd::apply_defaults(&mut view);
            return Some(view);
        }
        crate::builtin::decode::decode(&ri.group, &ri.version, &ri.kind, &mut view).ok()?;
        if ri.group.is_empty() && ri.resource == "pods" {
            if let Some(spec) = view.get_mut("spec") {
                crate::model::workloads::requests_from_limits(spec);
            }
        }
        crate::model::workloads::apply_defaults(&ri.group, &ri.resource, &mut view);
        crate::builtin::defaults::apply(&ri.group, &ri.resource, &mut view, old.is_none());
        crate::builtin::zero::fill(&ri.group, &ri.version, &ri.kind, &mut view);
        Some(view)
    }

    /// Records the write in `metadata.managedFields` (`crate::apply::track`), unless the apply
    /// path already did. `view`: the object as the field manager records it
    /// ([`Service::field_manager_view`]), when it differs from `new`.
    fn track_fields(
        ri: &ResourceInfo,
        live: Option<&Value>,
        new: &mut Value,
        view: Option<Value>,
        supplied: Option<Value>,
        sub: Subresource,
        opts: &WriteOptions,
    ) {
        if opts.applied {
            if let (Some(m), Some(v)) = (metadata_mut(new), supplied) {
                m.insert("managedFields".into(), v);
            }
            return;
        }
        let name = opts
            .manager
            .as_deref()
            .unwrap_or(crate::apply::HOST_MANAGER);
        let who = crate::apply::Manager { name, sub };
        let Some(mut view) = view else {
            crate::apply::track(ri, live, new, supplied, &who);
            return;
        };
        crate::apply::track(ri, live, &mut view, supplied, &who);
        let managed = metadata_mut(&mut view).and_then(|m| m.remove("managedFields"));
        if let Some(m) = metadata_mut(new) {
            match managed {
                Some(v) => m.insert("managedFields".into(), v),
                None => m.remove("managedFields"),
            };
        }
    }

    /// The autoscaling/v1 `Scale` of an object whose resource has a scale subresource.
    pub fn scale_of(ri: &ResourceInfo, obj: &StoredObject) -> Result<Value> {
        Self::scale_of_value(ri, &obj.parse())
    }

    /// [`Service::scale_of`] of an object's value.
    pub fn scale_of_value(ri: &ResourceInfo, whole: &Value) -> Result<Value> {
        let sc = ri.scale.as_ref().ok_or_else(ApiError::path_not_found)?;
        let at = |path: &str| whole.pointer(&json_pointer(path)).cloned();
        let m = metadata(whole).cloned().unwrap_or_default();
        let mut meta_out = serde_json::Map::new();
        for f in [
            "name",
            "namespace",
            "uid",
            "resourceVersion",
            "creationTimestamp",
        ] {
            if let Some(v) = m.get(f) {
                meta_out.insert(f.into(), v.clone());
            }
        }
        let mut status =
            json!({"replicas": at(&sc.status_replicas_path).and_then(|v| v.as_i64()).unwrap_or(0)});
        match sc.label_selector_path.as_deref().and_then(at) {
            Some(Value::String(sel)) => status["selector"] = Value::String(sel),
            // Built-in kinds point at their LabelSelector: Scale carries its string form.
            Some(sel @ Value::Object(_)) => {
                status["selector"] = Value::String(crate::selector::label_selector_string(&sel))
            }
            _ => {}
        }
        // `ScaleSpec.replicas` is an `omitempty` int32: kube writes `"spec": {}` at zero
        // (`ScaleStatus.replicas` has no `omitempty`: always written).
        let replicas = at(&sc.spec_replicas_path)
            .and_then(|v| v.as_i64())
            .unwrap_or(0);
        let spec = if replicas == 0 {
            json!({})
        } else {
            json!({ "replicas": replicas })
        };
        Ok(json!({
            "kind": "Scale",
            "apiVersion": "autoscaling/v1",
            "metadata": meta_out,
            "spec": spec,
            "status": status,
        }))
    }

    /// Change an object through its `scale` subresource: `build` turns the current Scale into
    /// the wanted one, with the warnings found on the way (the wanted Scale's strict decoding
    /// under `fieldValidation=Warn`: [`Service::decode_scale`]), reported before the write's
    /// others; its `spec.replicas` is written to the replicas path (a CRD's specReplicasPath).
    pub async fn update_scale(
        &self,
        ri: &ResourceInfo,
        ns: &str,
        name: &str,
        opts: &WriteOptions,
        build: impl Fn(&Value) -> Result<(Value, Vec<String>)>,
    ) -> Result<Written> {
        let spec_path = ri
            .scale
            .as_ref()
            .map(|sc| json_pointer(&sc.spec_replicas_path))
            .ok_or_else(ApiError::path_not_found)?;
        self.update_with(
            ri,
            ns,
            name,
            None,
            opts,
            Subresource::Scale,
            |current, value| {
                let scale = Self::scale_of(ri, current)?;
                let (wanted, warnings) = build(&scale)?;
                if let Some(rv) = wanted
                    .pointer("/metadata/resourceVersion")
                    .and_then(Value::as_str)
                {
                    if !rv.is_empty() && rv != current.rv.to_string() {
                        return Err(ApiError::conflict(&ri.group, &ri.resource, name));
                    }
                }
                let replicas = scale_replicas(wanted.pointer("/spec/replicas"), name)?;
                let mut v = value.clone();
                set_pointer(&mut v, &spec_path, json!(replicas));
                Ok(Built {
                    value: v,
                    warnings,
                    decoded: None,
                })
            },
        )
        .await
    }

    /// The body of a PUT of an object's `scale` subresource, decoded as kube's update handler
    /// decodes it, before anything else is checked: into an autoscaling/v1 `Scale` (a value of
    /// the wrong type is a 400, `Scale in version "v1" cannot be handled as a Scale: json:
    /// cannot unmarshal string into Go struct field ScaleSpec.spec.replicas of type int32`),
    /// its unknown fields and the keys it repeated (`duplicates`, read unless
    /// `fieldValidation=Ignore`) refused, warned about or dropped as a create's or update's
    /// body's are (`strict_fields`: `Scale in version "v1" cannot be handled as a Scale:
    /// strict decoding error: unknown field "spec.replica"` under Strict). Returns the
    /// warnings, for [`Service::update_scale`].
    pub fn decode_scale(
        scale: &mut Value,
        duplicates: &[crate::model::json::DuplicateField],
        opts: &WriteOptions,
    ) -> Result<Vec<String>> {
        let [group, version, kind] = SCALE;
        let unknown = crate::builtin::decode::decode(group, version, kind, scale)
            .map_err(|e| cannot_handle(kind, version, e))?;
        let duplicates = crate::builtin::decode::duplicates(group, version, kind, duplicates);
        Self::strict_fields(kind, version, duplicates, unknown, opts)
    }

    /// PATCH of an object's `scale` subresource with a JSON, merge or strategic merge patch
    /// (a Scale has no lists to merge by key: a strategic merge patch merges as a merge patch):
    /// the patch is decoded strictly unless `fieldValidation=Ignore`, applied to the current
    /// Scale, and the patched Scale decoded as kube's patcher decodes it
    /// (`decode_patched_scale`); then as [`Service::update_scale`].
    pub async fn patch_scale(
        &self,
        ri: &ResourceInfo,
        ns: &str,
        name: &str,
        patch_type: PatchType,
        body: &[u8],
        opts: &WriteOptions,
    ) -> Result<Written> {
        let (patch_value, patch_strict) = patch::parse_strict(
            patch_type,
            body,
            opts.field_validation != FieldValidation::Ignore,
        )?;
        let merged_as = if patch_type == PatchType::Strategic {
            PatchType::Merge
        } else {
            patch_type
        };
        self.update_scale(ri, ns, name, opts, |current| {
            let wanted = patch::apply_request(merged_as, current, &patch_value, ri)?;
            let warnings =
                Self::decode_patched_scale(patch_type, &patch_value, &patch_strict, &wanted, opts)?;
            Ok((wanted, warnings))
        })
        .await
    }

    /// kube's patcher on a Scale: the patched Scale decoded into its type. A value of the wrong
    /// type is kube's 422 naming the `patch` under every `fieldValidation` ([`patch_refused`]:
    /// `Invalid value: "...": json: cannot unmarshal string into Go struct field
    /// ScaleSpec.spec.replicas of type int32`); the patch's own strict errors (`patch_strict`)
    /// and the Scale's unknown fields are that 422 under Strict (`strict decoding error:
    /// unknown field "spec.replica"`), a warning each under Warn, nothing under Ignore. Returns
    /// the warnings.
    fn decode_patched_scale(
        patch_type: PatchType,
        patch: &Value,
        patch_strict: &[String],
        patched: &Value,
        opts: &WriteOptions,
    ) -> Result<Vec<String>> {
        let [group, version, kind] = SCALE;
        let unknown = crate::builtin::decode::decode(group, version, kind, &mut patched.clone())
            .map_err(|e| patch_refused(patch_type, patch, patched, &e.to_string()))?;
        let msgs: Vec<String> = patch_strict
            .iter()
            .cloned()
            .chain(
                unknown
                    .iter()
                    .map(|f| format!("unknown field {}", crate::auth::rbac::go_quote(f))),
            )
            .collect();
        match opts.field_validation {
            FieldValidation::Strict if !msgs.is_empty() => Err(patch_refused(
                patch_type,
                patch,
                patched,
                &format!("strict decoding error: {}", msgs.join(", ")),
            )),
            FieldValidation::Strict | FieldValidation::Ignore => Ok(Vec::new()),
            FieldValidation::Warn => Ok(msgs),
        }
    }

    /// Server-side apply of an object's `scale` subresource: the applied autoscaling/v1 Scale's
    /// `spec.replicas` applied to the object's replicas path by the same manager, recorded as a
    /// `scale` entry in its managedFields (kube's ScaleHandler keeps the same ownership: a
    /// manager that applies replicas through the Scale owns the object's replicas field, and
    /// conflicts with whoever else does). Answers the object; the caller presents its Scale.
    pub async fn apply_scale(
        &self,
        ri: &ResourceInfo,
        ns: &str,
        name: &str,
        body: &[u8],
        opts: &WriteOptions,
    ) -> Result<Written> {
        let spec_path = ri
            .scale
            .as_ref()
            .map(|sc| json_pointer(&sc.spec_replicas_path))
            .ok_or_else(ApiError::path_not_found)?;
        let (scale, repeated) = crate::apply::parse_config_as_strict(
            "autoscaling/v1",
            body,
            opts.field_validation != FieldValidation::Ignore,
        )?;
        // A built-in kind's `scale` has a field manager of the Scale's own type, which checks
        // the applied Scale against its definition (undeclared fields: kube's 500).
        if ri.custom.is_none() {
            crate::apply::validate_builtin(&scale, "autoscaling", "v1", "Scale")?;
        }
        let mut parent = json!({
            "apiVersion": if ri.group.is_empty() { ri.version.clone() } else { format!("{}/{}", ri.group, ri.version) },
            "kind": ri.kind,
            "metadata": {"name": name},
        });
        if let Some(rv) = scale.pointer("/metadata/resourceVersion") {
            parent["metadata"]["resourceVersion"] = rv.clone();
        }
        match scale.pointer("/spec/replicas") {
            None | Some(Value::Null) => {}
            r => {
                let replicas = scale_replicas(r, name)?;
                set_pointer(&mut parent, &spec_path, json!(replicas));
            }
        }
        let body = serde_json::to_vec(&parent)
            .map_err(|e| ApiError::internal(format!("encoding the applied object: {e}")))?;
        let config = crate::apply::parse_config(ri, &body)?;
        self.apply_config(ri, ns, name, config, &repeated, Subresource::Scale, opts)
            .await
    }

    /// `POST pods/NAME/binding`: assign a Pod to a node (what a scheduler does). Sets
    /// `spec.nodeName` — otherwise immutable — and the `PodScheduled` condition, once: a bound
    /// or terminating Pod is 409.
    pub async fn bind_pod(
        &self,
        ns: &str,
        name: &str,
        binding: &Value,
        dry_run: bool,
    ) -> Result<Written> {
        let pods = self
            .registry
            .lookup("", "v1", "pods")
            .ok_or_else(ApiError::path_not_found)?;
        if let Some(n) = binding
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .filter(|n| !n.is_empty() && *n != name)
        {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({n}) does not match the name on the URL ({name})"
            )));
        }
        let node = binding
            .pointer("/target/name")
            .and_then(Value::as_str)
            .unwrap_or("");
        let kind = binding
            .pointer("/target/kind")
            .and_then(Value::as_str)
            .unwrap_or("Node");
        if node.is_empty() || !(kind.is_empty() || kind == "Node") {
            return Err(ApiError::invalid(
                "",
                "Binding",
                name,
                vec![Cause::new(
                    "FieldValueNotSupported",
                    "target",
                    "Unsupported value: a binding's target must be a Node with a name",
                )],
            ));
        }
        let key = Self::key(&pods, ns, name);
        for attempt in 0..CONFLICT_RETRIES {
            self.before_retry(attempt).await?;
            let current = self
                .store
                .get(&key)
                .ok_or_else(|| ApiError::not_found("", "pods", name))?;
            let whole = current.parse().into_owned();
            let already = whole
                .pointer("/spec/nodeName")
                .and_then(Value::as_str)
                .filter(|n| !n.is_empty());
            if let Some(assigned) = already {
                return Err(ApiError::conflict_message(
                    "",
                    "pods/binding",
                    name,
                    &format!("pod {name} is already assigned to node \"{assigned}\""),
                ));
            }
            if meta::meta_str(current.head(), "deletionTimestamp").is_some() {
                return Err(ApiError::conflict_message(
                    "",
                    "pods/binding",
                    name,
                    &format!("pod {name} is being deleted, cannot be assigned to a host"),
                ));
            }
            let mut v = whole;
            v["spec"]["nodeName"] = json!(node);
            let status = v
                .as_object_mut()
                .map(|o| o.entry("status").or_insert_with(|| json!({})));
            if let Some(st) = status.and_then(Value::as_object_mut) {
                let conds = st.entry("conditions").or_insert_with(|| json!([]));
                if let Some(list) = conds.as_array_mut() {
                    list.retain(|c| c.get("type").and_then(Value::as_str) != Some("PodScheduled"));
                    list.push(json!({"type": "PodScheduled", "status": "True",
                                     "lastProbeTime": null,
                                     "lastTransitionTime": meta::now_rfc3339()}));
                }
            }
            if dry_run {
                let mut o = v;
                if let Some(m) = metadata_mut(&mut o) {
                    m.insert("resourceVersion".into(), json!(current.rv.to_string()));
                }
                return StoredObject::unstored(o)
                    .map(|o| Written::new(Arc::new(o), Vec::new()))
                    .map_err(|e| store_error(&pods, name, e));
            }
            let op = WriteOp::Put {
                key: key.clone(),
                value: v,
                precondition: Precondition::ResourceVersion(current.rv),
            };
            match self.store.write(op).await {
                Ok(o) => return Ok(Written::new(o, Vec::new())),
                Err(StoreError::Conflict { .. }) => continue,
                Err(e) => return Err(store_error(&pods, name, e)),
            }
        }
        Err(ApiError::conflict("", "pods", name))
    }

    /// The shared update pipeline: read the latest, build the new object, keep what clients may
    /// not change, validate, detect no-ops, commit with the read revision as precondition.
    /// `build` hands the new object, or a [`Built`] with what it found on the way.
    #[allow(clippy::too_many_arguments)]
    async fn update_with<B: Into<Built>>(
        &self,
        ri: &ResourceInfo,
        ns: &str,
        name: &str,
        wanted_rv: Option<u64>,
        opts: &WriteOptions,
        sub: Subresource,
        build: impl Fn(&StoredObject, &Value) -> Result<B>,
    ) -> Result<Written> {
        let key = Self::key(ri, ns, name);
        for attempt in 0..CONFLICT_RETRIES {
            self.before_retry(attempt).await?;
            let current = self
                .store
                .get(&key)
                .ok_or_else(|| ApiError::not_found(&ri.group, &ri.resource, name))?;
            if wanted_rv.is_some_and(|rv| rv != current.rv) {
                return Err(ApiError::conflict(&ri.group, &ri.resource, name));
            }
            // Work in the requested version; store in the storage version.
            let view = self.served_one(ri, current.clone()).await?;
            // Parsed for this request and not kept with the stored version (which history may
            // hold for a long time as an event's `prev`).
            let mut view_value = view.parse().into_owned();
            let converted = current.head().api_version() != ri.api_version();
            Self::defaults_on_read(ri, &mut view_value, converted);
            let current_value =
                (!Arc::ptr_eq(&view, &current)).then(|| current.parse().into_owned());
            let built: Built = build(&view, &view_value)?.into();
            let Built {
                value: mut body,
                warnings: built_warnings,
                mut decoded,
            } = built;
            let mut supplied = crate::apply::take(&mut body);
            // Its times as kube writes them: the body's decode (a PUT's in `update`, a patch's in
            // `decode_patched`) refused bad ones, but the object's own decode after admission
            // does not see `managedFields`.
            if let Some(s) = supplied.as_mut() {
                crate::builtin::decode::normalize_managed_fields_times(s);
            }
            // The decoded copy is compared with the object as the pipeline goes on: the same
            // `managedFields` taken out of both.
            if let Some(d) = decoded.as_mut() {
                crate::apply::take(d);
            }
            // Whatever built it (a patch, say), nothing recursive walks a value nested deeper
            // than the limit; it is taken apart without recursion.
            if !crate::model::limits::within_depth(&body) {
                crate::model::limits::dispose(body);
                if let Some(d) = decoded {
                    crate::model::limits::dispose(d);
                }
                return Err(ApiError::new(
                    422,
                    "Invalid",
                    crate::model::limits::too_deep_message(),
                ));
            }
            let mut new = Self::merge_update(ri, &view_value, body, sub)?;
            // As kube's decoder leaves it before admission: a patched Secret's or a server-side
            // apply's `stringData` folded into `data` (a PUT's body was, in `update`).
            Self::convert_on_decode(ri, &mut new)?;
            self.check_size(ri, &new)?;
            if let Some(guard) = opts.guard.as_ref().filter(|g| !g.after_admission()) {
                guard.check(ri, ns, Some(&view_value), &new)?;
            }
            let sub_name = sub.name();
            let old = Some(&view_value);
            let tracked = if ri.custom.is_none() {
                self.field_manager_view(ri, &new, old, opts)
            } else {
                None
            };
            // kube's built-in mutating plugins run before the configured ones (webhooks see
            // their result): Priority, then DefaultTolerationSeconds.
            let pod = ri.group.is_empty() && ri.resource == "pods";
            if sub == Subresource::Main {
                crate::priority::admit(self, ri, &mut new, old).await?;
                if pod {
                    crate::pod_admission::default_tolerations(&mut new);
                }
            }
            // Decoded (or pruned) already, and nothing changed it since: no second decode.
            let as_decoded = |v: &Value| decoded.as_ref().is_some_and(|d| d == v);
            let pruned = ri.custom.is_some() && as_decoded(&new);
            let mut warnings = built_warnings;
            warnings.extend(Self::decode_custom(ri, &mut new, opts, pruned)?);
            let tracked = match tracked {
                None if ri.custom.is_some() => self.field_manager_view(ri, &new, old, opts),
                v => v,
            };
            // A `scale` write is admitted as kube admits it: as an autoscaling/v1 Scale. Mutating
            // admission sees (new Scale, old Scale), and only its `spec.replicas` is carried back
            // to the object (kube's `scaleUpdatedObjectInfo`); validating admission is below.
            if sub == Subresource::Scale && opts.user.is_some() {
                let old_scale = Self::scale_of_value(ri, &view_value)?;
                let mut scale = Self::scale_of_value(ri, &new)?;
                let before = scale.clone();
                warnings.extend(
                    self.mutated_as(
                        ri,
                        ns,
                        Operation::Update,
                        Some(&old_scale),
                        &mut scale,
                        sub_name,
                        opts,
                        Some(["autoscaling", "v1", "Scale"]),
                    )
                    .await?,
                );
                if scale != before {
                    let uid = |v: &Value| {
                        v.pointer("/metadata/uid")
                            .and_then(Value::as_str)
                            .unwrap_or("")
                            .to_owned()
                    };
                    if uid(&scale) != uid(&before) {
                        return Err(ApiError::conflict_message(
                            &ri.group,
                            &ri.resource,
                            name,
                            &format!(
                                "Precondition failed: UID in precondition: {}, UID in object meta: {}",
                                uid(&scale),
                                uid(&before)
                            ),
                        ));
                    }
                    let replicas = scale_replicas(scale.pointer("/spec/replicas"), name)?;
                    if let Some(sc) = &ri.scale {
                        set_pointer(
                            &mut new,
                            &json_pointer(&sc.spec_replicas_path),
                            json!(replicas),
                        );
                    }
                }
            }
            if sub != Subresource::Scale {
                warnings.extend(
                    self.admission(ri, ns, Operation::Update, old, &mut new, sub_name, opts)
                        .await?,
                );
            }
            let mut new = Self::restore_after_admission(ri, &view_value, new, sub)?;
            if pod && sub == Subresource::EphemeralContainers {
                crate::pod_admission::ephemeral_containers(self, ri, ns, &new).await?;
            }
            let unchanged = ri.custom.is_none() && as_decoded(&new);
            warnings.extend(Self::admit(ri, &mut new, old, sub, opts, unchanged)?);
            if sub == Subresource::Main {
                self.check_param_access(ri, &new, old, opts)?;
            }
            if sub == Subresource::Main {
                crate::priority::check_default(self, ri, &new, old)?;
            }
            Self::validate_sub(ri, &new, old, sub)?;
            Self::guard_after_admission(ri, ns, old, &new, opts)?;
            Self::track_fields(ri, old, &mut new, tracked, supplied, sub, opts);
            // kube's PrepareForUpdate bumps the generation before validating admission, which
            // then sees `object.metadata.generation` past `oldObject`'s on a spec change.
            Self::bump_generation(ri, &view_value, &mut new);
            if sub == Subresource::Scale {
                let (old_scale, new_scale) = (
                    Self::scale_of_value(ri, &view_value)?,
                    Self::scale_of_value(ri, &new)?,
                );
                warnings.extend(
                    self.admitted_as(
                        ri,
                        ns,
                        Operation::Update,
                        Some(&old_scale),
                        Some(&new_scale),
                        sub_name,
                        opts,
                        Some(["autoscaling", "v1", "Scale"]),
                    )
                    .await?,
                );
            } else {
                warnings.extend(
                    self.admitted(ri, ns, Operation::Update, old, Some(&new), sub_name, opts)
                        .await?,
                );
            }
            if sub == Subresource::Main
                && ri.group.is_empty()
                && ri.resource == "persistentvolumeclaims"
            {
                crate::limitrange::validate(self, ri, ns, &new)?;
                crate::volume_admission::check_resize(self, ri, &new, &view_value)?;
            }
            // kube's LimitRanger validates a Pod's resize as it validates a new Pod.
            if sub == Subresource::Resize {
                crate::limitrange::validate(self, ri, ns, &new)?;
            }
            let _charged = match opts.user {
                Some(_) if sub == Subresource::Main => {
                    crate::quota::admit(self, ri, ns, old, &new, opts.dry_run).await?
                }
                Some(_) if sub == Subresource::Resize => {
                    crate::quota::charge(self, ri, ns, old, &new, opts.dry_run, true).await?
                }
                _ => None,
            };
            // An update that removes a terminating object's last finalizer deletes it
            // (`store_update`): it takes no new values, as kube decides ShouldDeleteDuringUpdate
            // before BeginUpdate allocates (a Service turned NodePort on its way out kept its
            // ports for nobody).
            let deletes = meta::meta_str(&new, "deletionTimestamp").is_some()
                && meta::finalizers(&new).is_empty();
            let txn = if sub == Subresource::Main && !deletes {
                self.allocate(ri, &mut new, Some(&view_value), opts.dry_run)
                    .await?
            } else {
                None
            };
            let svc = txn.as_ref().map(|_| new.clone());
            let result = self
                .store_update(
                    ri,
                    name,
                    opts,
                    &key,
                    current,
                    Versions {
                        view: &view_value,
                        current: current_value.as_ref().unwrap_or(&view_value),
                    },
                    new,
                    warnings,
                    wanted_rv,
                )
                .await;
            let written = matches!(result, Ok(Some(_))) && !opts.dry_run;
            if let Some(svc) = svc {
                let known = result.as_ref().map_or_else(|e| e.code < 500, |_| true);
                self.settle(txn, &svc, written, known).await;
            }
            match result {
                Ok(Some(w)) => return Ok(w),
                Ok(None) => continue,
                Err(e) => return Err(e),
            }
        }
        Err(ApiError::conflict(&ri.group, &ri.resource, name))
    }

    /// The end of an update: validate and store `new` in place of `current` (`None`: lost a
    /// race with another writer, to retry).
    #[allow(clippy::too_many_arguments)]
    async fn store_update(
        &self,
        ri: &ResourceInfo,
        name: &str,
        opts: &WriteOptions,
        key: &ObjectKey,
        current: Arc<StoredObject>,
        old: Versions<'_>,
        mut new: Value,
        warnings: Vec<String>,
        wanted_rv: Option<u64>,
    ) -> Result<Option<Written>> {
        Self::bump_generation(ri, old.view, &mut new);
        Self::validate(ri, &new)?;
        Self::check_finalizers(ri, old.view, &new)?;
        self.stored_version(ri, &mut new).await?;
        if same_object(&new, old.current) {
            return Ok(Some(Written::new(current, warnings)));
        }
        let terminating = meta::meta_str(&new, "deletionTimestamp").is_some();
        if opts.dry_run {
            let mut v = new;
            if let Some(m) = metadata_mut(&mut v) {
                m.insert(
                    "resourceVersion".into(),
                    Value::String(current.rv.to_string()),
                );
            }
            return StoredObject::unstored(v)
                .map(|o| Some(Written::new(Arc::new(o), warnings)))
                .map_err(|e| store_error(ri, name, e));
        }
        // A terminating object goes once its last finalizer does, unless a graceful deletion
        // is under way (kube's `ShouldDeleteDuringUpdate`: a Pod marked with a grace period
        // waits for its kubelet, whatever else writes it meanwhile); a namespace once its
        // `spec.finalizers` are gone too (kube's `ShouldDeleteNamespaceDuringUpdate`): the
        // namespace controller's `finalize` once it emptied it, or an operator's.
        let is_namespace = is_namespaces(ri);
        let graceless = old
            .current
            .pointer("/metadata/deletionGracePeriodSeconds")
            .and_then(Value::as_i64)
            .is_none_or(|g| g == 0);
        let op = if terminating
            && graceless
            && meta::finalizers(&new).is_empty()
            && (!is_namespace || spec_finalizers(&new).is_empty())
        {
            WriteOp::Delete {
                key: key.clone(),
                precondition: Precondition::ResourceVersion(current.rv),
            }
        } else {
            WriteOp::Put {
                key: key.clone(),
                value: new,
                precondition: Precondition::ResourceVersion(current.rv),
            }
        };
        let deleting = matches!(op, WriteOp::Delete { .. });
        match self.store.write(op).await {
            Ok(o) => {
                if deleting {
                    self.removed(ri, &o).await;
                }
                Ok(Some(Written::new(o, warnings)))
            }
            Err(StoreError::Conflict { .. }) if wanted_rv.is_none() => Ok(None),
            Err(StoreError::Conflict { .. }) => {
                Err(ApiError::conflict(&ri.group, &ri.resource, name))
            }
            Err(e) => Err(store_error(ri, name, e)),
        }
    }

    /// Combine the stored object and a client's new version per kube's update strategy.
    /// kube's `BeforeUpdate` runs after mutating admission: what a mutation changed of the
    /// fields an update may not change is put back as [`Service::merge_update`] leaves them.
    fn restore_after_admission(
        ri: &ResourceInfo,
        current: &Value,
        new: Value,
        sub: Subresource,
    ) -> Result<Value> {
        let untouched = if matches!(sub, Subresource::Status | Subresource::Approval) {
            match (current.as_object(), new.as_object()) {
                (Some(c), Some(n)) => {
                    c.iter()
                        .filter(|(k, _)| *k != "status")
                        .all(|(k, v)| n.get(k) == Some(v))
                        && n.keys().all(|k| k == "status" || c.contains_key(k))
                }
                _ => false,
            }
        } else {
            let (cm, nm) = (metadata(current), metadata(&new));
            [
                "uid",
                "creationTimestamp",
                "deletionTimestamp",
                "deletionGracePeriodSeconds",
                "generateName",
                "generation",
                "resourceVersion",
            ]
            .iter()
            .all(|f| cm.and_then(|m| m.get(*f)) == nm.and_then(|m| m.get(*f)))
                && ["managedFields", "selfLink"]
                    .iter()
                    .all(|f| nm.is_none_or(|m| !m.contains_key(*f)))
                && (!ri.status_subresource || current.get("status") == new.get("status"))
                // A CertificateSigningRequest's spec is fixed after create.
                && (!crate::builtin::csr::is_csrs(ri) || current.get("spec") == new.get("spec"))
                // A Namespace's finalizers change only through `finalize`.
                && (!is_namespaces(ri)
                    || sub == Subresource::Finalize
                    || spec_finalizers(current) == spec_finalizers(&new))
        };
        if untouched {
            return Ok(new);
        }
        // kube's ValidateObjectMetaUpdate: a mutation may not change the uid (a status
        // strategy that puts the stored metadata back puts the uid back too).
        let uid = |v: &Value| meta::meta_str(v, "uid").unwrap_or("").to_owned();
        let (was, now) = (uid(current), uid(&new));
        if (!matches!(sub, Subresource::Status | Subresource::Approval)
            || Self::status_takes_metadata(ri).is_some())
            && !now.is_empty()
            && now != was
        {
            return Err(ApiError::invalid(
                &ri.group,
                &ri.kind,
                meta::name(current),
                vec![Cause::new(
                    "FieldValueInvalid",
                    "metadata.uid",
                    format!("Invalid value: \"{now}\": field is immutable"),
                )],
            ));
        }
        Self::merge_update(ri, current, new, sub)
    }

    /// Validation that depends on the way in (`/status`, `/approval`): CertificateSigningRequests.
    fn validate_sub(
        ri: &ResourceInfo,
        obj: &Value,
        old: Option<&Value>,
        sub: Subresource,
    ) -> Result<()> {
        let causes = if sub == Subresource::EphemeralContainers {
            crate::builtin::validation::ephemeral_containers_update(obj, old)
        } else if sub == Subresource::Resize {
            crate::builtin::validation::pod_resize(obj, old)
        } else if crate::builtin::csr::is_csrs(ri) {
            crate::builtin::csr::validate(obj, old, sub)
        } else {
            return Ok(());
        };
        if causes.is_empty() {
            return Ok(());
        }
        Err(ApiError::invalid(
            &ri.group,
            &ri.kind,
            meta::name(obj),
            causes,
        ))
    }

    /// A guard that runs as validating admission does (see [`WriteGuard::after_admission`]).
    fn guard_after_admission(
        ri: &ResourceInfo,
        ns: &str,
        old: Option<&Value>,
        new: &Value,
        opts: &WriteOptions,
    ) -> Result<()> {
        match &opts.guard {
            Some(guard) if guard.after_admission() => guard.check(ri, ns, old, new),
            _ => Ok(()),
        }
    }

    fn merge_update(
        ri: &ResourceInfo,
        current: &Value,
        mut new: Value,
        sub: Subresource,
    ) -> Result<Value> {
        let csr = crate::builtin::csr::is_csrs(ri);
        if sub == Subresource::Resize {
            // kube's `dropNonResizeUpdates`: the stored Pod with the request's containers'
            // `resources` and `resizePolicy`, matched by name.
            let mut out = current.clone();
            for list in ["containers", "initContainers"] {
                let wanted: Vec<Value> = new
                    .pointer(&format!("/spec/{list}"))
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default();
                let Some(stored) = out
                    .pointer_mut(&format!("/spec/{list}"))
                    .and_then(Value::as_array_mut)
                else {
                    continue;
                };
                for w in &wanted {
                    let Some(c) = stored.iter_mut().find(|c| c["name"] == w["name"]) else {
                        continue;
                    };
                    let Some(c) = c.as_object_mut() else { continue };
                    for field in ["resources", "resizePolicy"] {
                        match w.get(field).filter(|v| !v.is_null()) {
                            Some(v) => {
                                c.insert(field.into(), v.clone());
                            }
                            None => {
                                c.remove(field);
                            }
                        }
                    }
                }
            }
            return Ok(out);
        }
        if sub == Subresource::EphemeralContainers {
            // kube's `dropNonEphemeralContainerUpdates`: the stored Pod with the request's
            // ephemeral containers.
            let mut out = current.clone();
            let wanted = new
                .pointer("/spec/ephemeralContainers")
                .filter(|v| !v.is_null())
                .cloned();
            if let Some(o) = out.as_object_mut() {
                let spec = o.entry("spec").or_insert_with(|| json!({}));
                if let Some(spec) = spec.as_object_mut() {
                    match wanted {
                        Some(e) => {
                            spec.insert("ephemeralContainers".into(), e);
                        }
                        None => {
                            spec.remove("ephemeralContainers");
                        }
                    }
                }
            }
            return Ok(out);
        }
        if matches!(sub, Subresource::Status | Subresource::Approval) {
            // /status: everything but status and the metadata the kind's status strategy
            // takes from the request stays as stored (/approval: but the conditions).
            let mut out = current.clone();
            if let (Some(o), Some(status)) = (out.as_object_mut(), new.get("status")) {
                o.insert("status".into(), status.clone());
            } else if let Some(o) = out.as_object_mut() {
                o.remove("status");
            }
            if let Some(reset) = Self::status_takes_metadata(ri) {
                let mut m = match new.as_object_mut().and_then(|o| o.remove("metadata")) {
                    Some(Value::Object(m)) => m,
                    _ => serde_json::Map::new(),
                };
                let stored = metadata(current);
                for field in reset {
                    match stored.and_then(|c| c.get(*field)) {
                        Some(v) => {
                            m.insert((*field).into(), v.clone());
                        }
                        None => {
                            m.remove(*field);
                        }
                    }
                }
                if let Some(o) = out.as_object_mut() {
                    o.insert("metadata".into(), Value::Object(m));
                }
                Self::keep_system_metadata(ri, current, &mut out)?;
            }
            if csr {
                crate::builtin::csr::prepare_update(sub, current, &mut out);
            }
            return Ok(out);
        }
        if csr {
            crate::builtin::csr::prepare_update(sub, current, &mut new);
        }
        // kube's namespace strategy: an update keeps `spec.finalizers` as stored; only
        // `finalize` changes them.
        if is_namespaces(ri) && sub == Subresource::Main {
            let kept = current.pointer("/spec/finalizers").cloned();
            if let Some(n) = new.as_object_mut() {
                let spec = n.entry("spec").or_insert_with(|| json!({}));
                if !spec.is_object() {
                    *spec = json!({});
                }
                if let Some(spec) = spec.as_object_mut() {
                    match kept {
                        Some(f) => {
                            spec.insert("finalizers".into(), f);
                        }
                        None => {
                            spec.remove("finalizers");
                        }
                    }
                }
            }
        }
        if ri.status_subresource {
            match (new.as_object_mut(), current.get("status")) {
                (Some(n), Some(s)) => {
                    n.insert("status".into(), s.clone());
                }
                (Some(n), None) => {
                    n.remove("status");
                }
                _ => {}
            }
        }
        Self::keep_system_metadata(ri, current, &mut new)?;
        Ok(new)
    }

    /// The metadata fields a `/status` write of `ri` keeps as stored while it takes the rest of
    /// the request's metadata (`None`: it keeps all of the stored metadata), as the kind's
    /// status strategy in kube ([`crate::builtin::status_metadata`]; a custom resource's takes
    /// none).
    fn status_takes_metadata(ri: &ResourceInfo) -> Option<&'static [&'static str]> {
        if ri.is_custom() {
            return None;
        }
        crate::builtin::status_metadata(&ri.group, &ri.resource)
    }

    /// What no update changes of an object's metadata, put back from `current` into `new`
    /// (kube's `BeforeUpdate` and object meta update validation): `uid` (another one is a
    /// conflict), `creationTimestamp`, `deletionTimestamp`, `deletionGracePeriodSeconds`,
    /// `generateName`, `generation`, `resourceVersion`; `managedFields` and `selfLink` out;
    /// empty labels, annotations, finalizers and owner references dropped as kube omits them.
    fn keep_system_metadata(ri: &ResourceInfo, current: &Value, new: &mut Value) -> Result<()> {
        let cur_meta = metadata(current).cloned().unwrap_or_default();
        let m = metadata_mut(new)
            .ok_or_else(|| ApiError::bad_request("metadata must be a JSON object"))?;
        if let Some(uid) = m.get("uid").and_then(Value::as_str) {
            if Some(uid) != cur_meta.get("uid").and_then(Value::as_str) && !uid.is_empty() {
                // kube's conflict on the object (its storage adds the etcd key's words).
                let name = cur_meta.get("name").and_then(Value::as_str).unwrap_or("");
                return Err(ApiError::conflict_message(
                    &ri.group,
                    &ri.resource,
                    name,
                    &format!(
                        "Precondition failed: UID in precondition: {uid}, UID in object meta: {}",
                        cur_meta.get("uid").and_then(Value::as_str).unwrap_or("")
                    ),
                ));
            }
        }
        for field in [
            "uid",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "generateName",
        ] {
            match cur_meta.get(field) {
                Some(v) => {
                    m.insert(field.into(), v.clone());
                }
                None => {
                    m.remove(field);
                }
            }
        }
        // Requests cannot set generation; kinds that keep one bump it on a spec change, once
        // the result is decoded and defaulted (`bump_generation`).
        match cur_meta.get("generation").and_then(Value::as_i64) {
            Some(gen) => {
                m.insert("generation".into(), json!(gen));
            }
            None if ri.generation => {
                m.insert("generation".into(), json!(1));
            }
            None => {
                m.remove("generation");
            }
        }
        m.remove("managedFields");
        m.remove("selfLink");
        if let Some(rv) = cur_meta.get("resourceVersion") {
            m.insert("resourceVersion".into(), rv.clone());
        }
        // Drop empty maps kube would omit, so a no-op stays a no-op.
        for field in ["labels", "annotations", "finalizers", "ownerReferences"] {
            let empty = match m.get(field) {
                Some(Value::Null) => true,
                Some(Value::Object(o)) => o.is_empty(),
                Some(Value::Array(a)) => a.is_empty(),
                _ => false,
            };
            if empty {
                m.remove(field);
            }
        }
        Ok(())
    }

    /// Kinds that keep `generation` bump it when anything but metadata and status changed
    /// (compared after decoding and defaults, so a patch that drops a defaulted field is no
    /// change).
    fn bump_generation(ri: &ResourceInfo, current: &Value, new: &mut Value) {
        // kube's custom resource strategy counts `status` as part of the spec when the CRD
        // has no status subresource.
        let with_status = ri.is_custom() && !ri.status_subresource;
        if !ri.generation || spec_part(current, with_status) == spec_part(new, with_status) {
            return;
        }
        let gen = metadata(current)
            .and_then(|m| m.get("generation"))
            .and_then(Value::as_i64)
            .unwrap_or(0);
        if let Some(m) = metadata_mut(new) {
            m.insert("generation".into(), json!(gen + 1));
        }
    }

    fn check_finalizers(ri: &ResourceInfo, current: &Value, new: &Value) -> Result<()> {
        if meta::meta_str(current, "deletionTimestamp").is_none() {
            return Ok(());
        }
        let old = meta::finalizers(current);
        if meta::finalizers(new).iter().any(|f| !old.contains(f)) {
            return Err(ApiError::invalid(
                &ri.group,
                &ri.kind,
                meta::name(new),
                vec![Cause::new(
                    "FieldValueForbidden",
                    "metadata.finalizers",
                    "Forbidden: no new finalizers can be added if the object is being deleted",
                )],
            ));
        }
        Ok(())
    }

    pub async fn delete(
        &self,
        ri: &ResourceInfo,
        ns: &str,
        name: &str,
        opts: &DeleteOptions,
    ) -> Result<Deleted> {
        Ok(self.delete_warned(ri, ns, name, opts).await?.0)
    }

    /// [`Service::delete`], with the warnings validating admission gave.
    pub async fn delete_warned(
        &self,
        ri: &ResourceInfo,
        ns: &str,
        name: &str,
        opts: &DeleteOptions,
    ) -> Result<(Deleted, Vec<String>)> {
        crate::priority::check_delete(ri, name)?;
        let Some(user) = &opts.user else {
            return Ok((
                self.delete_unadmitted(ri, ns, name, opts).await?,
                Vec::new(),
            ));
        };
        for attempt in 0..CONFLICT_RETRIES {
            self.before_retry(attempt).await?;
            // In the request's version, as kube decodes it (an autoscaling/v1 HPA, a CRD's
            // served version), not the stored one.
            let current = self.served_one(ri, self.get(ri, ns, name)?).await?;
            // A client's UID precondition that fails is its answer, not a reason to retry (the
            // retries below are for this host's own pin on the admitted version).
            Self::check_uid_precondition(ri, name, &current, opts)?;
            let old = current.parse();
            let options = opts.admission_options();
            let req = crate::admission::Request {
                ri,
                operation: Operation::Delete,
                namespace: if ri.namespaced() { ns } else { "" },
                name,
                subresource: "",
                user,
                dry_run: opts.dry_run,
                old_object: Some(&old),
                requested: None,
                delete_options: Some(&options),
                kind: None,
                deadline: opts.deadline,
            };
            let warnings = self.admission.validate(&req, None).await?;
            // What goes is what admission saw: the delete is conditional on that version, and
            // a change in between admits the new version again (kube runs its delete
            // validation inside the storage delete's retries).
            let pinned = DeleteOptions {
                precondition_rv: opts
                    .precondition_rv
                    .clone()
                    .or_else(|| Some(current.rv.to_string())),
                ..opts.clone()
            };
            match self.delete_unadmitted(ri, ns, name, &pinned).await {
                // Our own pin failed: the object changed after admission; admit it again (and
                // after the last try, say so without naming a precondition the client never set).
                Err(e) if e.code == 409 && opts.precondition_rv.is_none() => {
                    if attempt + 1 < CONFLICT_RETRIES {
                        continue;
                    }
                    return Err(ApiError::conflict(&ri.group, &ri.resource, name));
                }
                r => return r.map(|d| (d, warnings)),
            }
        }
        Err(ApiError::conflict(&ri.group, &ri.resource, name))
    }

    /// The delete itself, once admitted (or for the host's own deletes).
    async fn delete_unadmitted(
        &self,
        ri: &ResourceInfo,
        ns: &str,
        name: &str,
        opts: &DeleteOptions,
    ) -> Result<Deleted> {
        if ri.resource == NAMESPACES && ri.group.is_empty() {
            let current = self.get(ri, "", name)?;
            Self::check_delete_preconditions(ri, name, &current, opts)?;
            self.delete_namespace(ri, name, current, opts).await
        } else {
            self.delete_object(ri, ns, name, opts).await
        }
    }

    /// A DELETE's `preconditions.uid` against the object (kube's 409).
    fn check_uid_precondition(
        ri: &ResourceInfo,
        name: &str,
        current: &StoredObject,
        opts: &DeleteOptions,
    ) -> Result<()> {
        let uid = meta::meta_str(current.head(), "uid").unwrap_or("");
        if let Some(want) = opts.precondition_uid.as_deref().filter(|u| !u.is_empty()) {
            if want != uid {
                return Err(ApiError::conflict_message(
                    &ri.group,
                    &ri.resource,
                    name,
                    &format!("Precondition failed: UID in precondition: {want}, UID in object meta: {uid}"),
                ));
            }
        }
        Ok(())
    }

    fn check_delete_preconditions(
        ri: &ResourceInfo,
        name: &str,
        current: &StoredObject,
        opts: &DeleteOptions,
    ) -> Result<()> {
        Self::check_uid_precondition(ri, name, current, opts)?;
        if let Some(want) = opts.precondition_rv.as_deref().filter(|u| !u.is_empty()) {
            if want != current.rv.to_string() {
                return Err(ApiError::conflict_message(
                    &ri.group,
                    &ri.resource,
                    name,
                    &format!(
                        "Precondition failed: ResourceVersion in precondition: {want}, ResourceVersion in object meta: {}",
                        current.rv
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Delete one object that is not a namespace: mark it while finalizers remain (including the
    /// garbage collector's, when the propagation policy asks for one), else remove it.
    async fn delete_object(
        &self,
        ri: &ResourceInfo,
        ns: &str,
        name: &str,
        opts: &DeleteOptions,
    ) -> Result<Deleted> {
        let key = Self::key(ri, ns, name);
        let gc_finalizer = opts.propagation.and_then(Propagation::finalizer);
        for attempt in 0..CONFLICT_RETRIES {
            self.before_retry(attempt).await?;
            let current = self
                .store
                .get(&key)
                .ok_or_else(|| ApiError::not_found(&ri.group, &ri.resource, name))?;
            Self::check_delete_preconditions(ri, name, &current, opts)?;
            // Pods are deleted gracefully (kube's BeforeDelete): marked, and removed by their
            // kubelet once their containers stopped.
            let mut pod = (ri.group.is_empty() && ri.resource == "pods")
                .then(|| current.parse().into_owned());
            let graceful = match &pod {
                Some(p) => graceful::before_delete(p, opts.grace_period, chrono::Utc::now()),
                None => Graceful::No,
            };
            if graceful == Graceful::Pending {
                return Ok(Deleted::Pending(current));
            }
            let lingers = matches!(graceful, Graceful::Mark { period, .. } if period > 0);
            let mut finalizers = meta::finalizers(current.head());
            let terminating = meta::meta_str(current.head(), "deletionTimestamp").is_some();
            // A later delete may switch an object's propagation (kube updates the GC finalizers).
            let mut changed = false;
            if let Some(f) = gc_finalizer {
                let other = if f == ORPHAN_FINALIZER {
                    FOREGROUND_FINALIZER
                } else {
                    ORPHAN_FINALIZER
                };
                if !finalizers.iter().any(|x| x == f) {
                    finalizers.retain(|x| x != other);
                    finalizers.push(f.to_owned());
                    changed = true;
                }
            } else if opts.propagation == Some(Propagation::Background) && terminating {
                let before = finalizers.len();
                finalizers.retain(|x| x != ORPHAN_FINALIZER && x != FOREGROUND_FINALIZER);
                changed = finalizers.len() != before;
            }
            if !finalizers.is_empty() || lingers {
                let marks = matches!(graceful, Graceful::Mark { .. });
                if terminating && !changed && !marks {
                    return Ok(Deleted::Pending(current));
                }
                // A Pod was parsed above: not twice.
                let mut v = pod.take().unwrap_or_else(|| current.parse().into_owned());
                if let Some(m) = metadata_mut(&mut v) {
                    match &graceful {
                        Graceful::Mark {
                            timestamp,
                            period,
                            first,
                        } => graceful::mark(m, timestamp, *period, *first),
                        _ if !terminating => {
                            // kube's `markAsDeleting`: the generation moves on (controllers
                            // watching for generation changes see the deletion).
                            let generation = m.get("generation").and_then(Value::as_i64);
                            if let Some(g) = generation.filter(|g| *g > 0) {
                                m.insert("generation".into(), json!(g.saturating_add(1)));
                            }
                            m.insert(
                                "deletionTimestamp".into(),
                                Value::String(meta::now_rfc3339()),
                            );
                            m.insert("deletionGracePeriodSeconds".into(), json!(0));
                        }
                        _ => {}
                    }
                    if finalizers.is_empty() {
                        m.remove("finalizers");
                    } else {
                        m.insert("finalizers".into(), json!(finalizers));
                    }
                }
                if opts.dry_run {
                    return StoredObject::unstored(v)
                        .map(|o| Deleted::Pending(Arc::new(o)))
                        .map_err(|e| store_error(ri, name, e));
                }
                let op = WriteOp::Put {
                    key: key.clone(),
                    value: v,
                    precondition: Precondition::ResourceVersion(current.rv),
                };
                match self.store.write(op).await {
                    Ok(o) => return Ok(Deleted::Pending(o)),
                    Err(StoreError::Conflict { .. }) => continue,
                    Err(e) => return Err(store_error(ri, name, e)),
                }
            }
            if opts.dry_run {
                return Ok(Deleted::Gone(current));
            }
            let op = WriteOp::Delete {
                key: key.clone(),
                precondition: Precondition::ResourceVersion(current.rv),
            };
            match self.store.write(op).await {
                Ok(o) => {
                    self.removed(ri, &o).await;
                    return Ok(Deleted::Gone(o));
                }
                Err(StoreError::Conflict { .. }) => continue,
                Err(e) => return Err(store_error(ri, name, e)),
            }
        }
        Err(ApiError::conflict(&ri.group, &ri.resource, name))
    }

    /// Namespace deletion: the namespace is marked (deletionTimestamp, phase Terminating) and
    /// returned; the namespace controller deletes its contents and then the namespace.
    async fn delete_namespace(
        &self,
        ri: &ResourceInfo,
        name: &str,
        current: Arc<StoredObject>,
        opts: &DeleteOptions,
    ) -> Result<Deleted> {
        if INITIAL_NAMESPACES.contains(&name) {
            return Err(ApiError::forbidden(format!(
                "namespaces \"{name}\" is forbidden: this namespace may not be deleted"
            ))
            .with_details("", NAMESPACES, name));
        }
        let mut v = current.value().clone();
        if let Some(m) = metadata_mut(&mut v) {
            m.entry("deletionTimestamp")
                .or_insert_with(|| Value::String(meta::now_rfc3339()));
            m.entry("deletionGracePeriodSeconds").or_insert(json!(0));
        }
        if let Some(o) = v.as_object_mut() {
            let status = o.entry("status").or_insert_with(|| json!({}));
            if let Some(st) = status.as_object_mut() {
                st.insert("phase".into(), json!("Terminating"));
            }
        }
        if opts.dry_run {
            return StoredObject::unstored(v)
                .map(|o| Deleted::Pending(Arc::new(o)))
                .map_err(|e| store_error(ri, name, e));
        }
        if same_object(&v, current.value()) {
            return Ok(Deleted::Pending(current));
        }
        self.store
            .write(WriteOp::Put {
                key: Self::key(ri, "", name),
                value: v,
                precondition: Precondition::ResourceVersion(current.rv),
            })
            .await
            .map(Deleted::Pending)
            .map_err(|e| match e {
                StoreError::Conflict { .. } => ApiError::conflict(&ri.group, &ri.resource, name),
                e => store_error(ri, name, e),
            })
    }

    /// Remove a namespace for good (the namespace controller's last step): only once it is
    /// terminating and has no finalizers left, in `metadata` or `spec`.
    pub async fn remove_namespace(&self, name: &str) -> Result<bool> {
        let key = ObjectKey::new(NAMESPACES, "", name);
        let Some(current) = self.store.get(&key) else {
            return Ok(true);
        };
        let spec_finalizers = current
            .value()
            .pointer("/spec/finalizers")
            .and_then(Value::as_array)
            .is_some_and(|a| !a.is_empty());
        if meta::meta_str(current.head(), "deletionTimestamp").is_none()
            || !meta::finalizers(current.head()).is_empty()
            || spec_finalizers
        {
            return Ok(false);
        }
        match self
            .store
            .write(WriteOp::Delete {
                key,
                precondition: Precondition::ResourceVersion(current.rv),
            })
            .await
        {
            Ok(_) | Err(StoreError::NotFound) => Ok(true),
            Err(StoreError::Conflict { .. }) => Ok(false),
            Err(e) => Err(ApiError::internal(e.to_string())),
        }
    }

    /// DELETE on a collection: every matching object, each as a single delete would.
    pub async fn delete_collection(
        &self,
        ri: &ResourceInfo,
        ns: Option<&str>,
        list: &ListOptions,
        opts: &DeleteOptions,
    ) -> Result<ListResult> {
        let mut page = self
            .list(
                ri,
                ns,
                &ListOptions {
                    limit: None,
                    continue_token: None,
                    ..list.clone()
                },
            )
            .await?;
        let mut out = Vec::with_capacity(page.items.len());
        for obj in page.items.drain(..) {
            let n = meta::name(obj.head()).to_owned();
            let o_ns = meta::namespace(obj.head()).to_owned();
            match self.delete(ri, &o_ns, &n, opts).await {
                Ok(Deleted::Gone(o) | Deleted::Pending(o)) => out.push(o),
                Err(e) if e.code == 404 => {}
                Err(e) => return Err(e),
            }
        }
        Ok(ListResult {
            rv: self.store.revision(),
            items: out,
            continue_token: None,
            remaining: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{FieldValidation, ListOptions, Service, WriteOptions};
    use crate::model::meta::NEXT_SUFFIXES;

    /// A service over a fresh sled store in a temporary directory, bootstrapped.
    async fn bootstrapped(name: &str) -> (Service, std::path::PathBuf) {
        let (store, dir) = crate::store::sled_store::temp_store(name);
        let svc = Service::new(
            store,
            std::sync::Arc::new(crate::model::Registry::with_builtins()),
        );
        svc.bootstrap().await.unwrap();
        (svc, dir)
    }

    /// A Pod stored before a default existed (here: without `enableServiceLinks`, the probe's
    /// thresholds and a volume's mode) stays updatable, and a status write does not bump its
    /// generation: an update starts from the stored object with its defaults applied.
    #[tokio::test]
    async fn objects_stored_before_a_default_stay_writable() {
        let (svc, dir) = bootstrapped("defaults-on-read").await;
        let pods = svc.registry.lookup("", "v1", "pods").unwrap();
        let old = json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "old", "namespace": "default", "uid": "u-1", "generation": 1,
                "creationTimestamp": "2026-11-01T00:00:00Z"},
            "spec": {"containers": [{"name": "c", "image": "nginx:1.27",
                    "imagePullPolicy": "IfNotPresent", "resources": {},
                    "terminationMessagePath": "/dev/termination-log",
                    "terminationMessagePolicy": "File",
                    "readinessProbe": {"httpGet": {"port": 80}},
                    "volumeMounts": [{"name": "cfg", "mountPath": "/cfg"}]}],
                "volumes": [{"name": "cfg", "configMap": {"name": "cfg"}}],
                "restartPolicy": "Always", "terminationGracePeriodSeconds": 30,
                "dnsPolicy": "ClusterFirst", "securityContext": {},
                "schedulerName": "default-scheduler",
                // What DefaultTolerationSeconds admission adds on every write (not a default).
                "tolerations": [
                    {"key": "node.kubernetes.io/not-ready", "operator": "Exists",
                     "effect": "NoExecute", "tolerationSeconds": 300},
                    {"key": "node.kubernetes.io/unreachable", "operator": "Exists",
                     "effect": "NoExecute", "tolerationSeconds": 300}]},
            "status": {"phase": "Pending", "qosClass": "BestEffort"}});
        svc.store
            .write(crate::store::WriteOp::Put {
                key: crate::model::ObjectKey::new("pods", "default", "old"),
                value: old,
                precondition: crate::store::Precondition::MustNotExist,
            })
            .await
            .unwrap();
        let opts = WriteOptions::default();
        let w = svc
            .patch(
                &pods,
                "default",
                "old",
                crate::patch::PatchType::Merge,
                br#"{"metadata":{"labels":{"x":"y"}}}"#,
                super::Subresource::Main,
                &opts,
            )
            .await
            .unwrap();
        let got = w.object.value();
        assert_eq!(got["metadata"]["labels"]["x"], "y");
        assert_eq!(got["metadata"]["generation"], 1, "{got}");
        assert_eq!(got["spec"]["enableServiceLinks"], true);
        assert_eq!(
            got["spec"]["containers"][0]["readinessProbe"]["periodSeconds"],
            10
        );
        let w = svc
            .patch(
                &pods,
                "default",
                "old",
                crate::patch::PatchType::Merge,
                br#"{"status":{"phase":"Running"}}"#,
                super::Subresource::Status,
                &opts,
            )
            .await
            .unwrap();
        assert_eq!(w.object.value()["metadata"]["generation"], 1);
        drop(svc);
        let _ = std::fs::remove_dir_all(dir);
    }

    /// The bootstrap RBAC policy at start (kube's `rbac/bootstrap-roles` hook): created on a new
    /// store; on one changed since (or left by an older turtles) what the policy adds is put back
    /// and nothing taken away, a binding of another role is made again, an object annotated
    /// `autoupdate: "false"` is left alone, a deleted one is created; and a start with nothing
    /// to do writes nothing.
    #[tokio::test]
    async fn the_bootstrap_rbac_policy_is_reconciled_at_every_start() {
        use crate::auth::rbac::{self, AUTOUPDATE_ANNOTATION_KEY, RBAC_GROUP};
        let (svc, dir) = bootstrapped("rbac-reconcile").await;
        assert_eq!(
            svc.reconcile_bootstrap_policy(rbac::bootstrap_objects())
                .await,
            0
        );
        let before = svc.store.revision();
        assert_eq!(
            svc.reconcile_bootstrap_policy(rbac::bootstrap_objects())
                .await,
            0
        );
        assert_eq!(
            svc.store.revision(),
            before,
            "nothing to do, nothing written"
        );

        let roles = svc
            .registry
            .lookup(RBAC_GROUP, "v1", "clusterroles")
            .unwrap();
        let bindings = svc
            .registry
            .lookup(RBAC_GROUP, "v1", "clusterrolebindings")
            .unwrap();
        let opts = WriteOptions::default();
        let main = super::Subresource::Main;
        // A rule taken from `system:basic-user`.
        let mut basic = svc
            .get(&roles, "", "system:basic-user")
            .unwrap()
            .value()
            .clone();
        let full_rules = basic["rules"].clone();
        basic["rules"] = json!([full_rules[0]]);
        svc.update(&roles, "", "system:basic-user", basic, main, &opts)
            .await
            .unwrap();
        // `system:public-info-viewer` emptied and opted out.
        let mut public = svc
            .get(&roles, "", "system:public-info-viewer")
            .unwrap()
            .value()
            .clone();
        public["metadata"]["annotations"][AUTOUPDATE_ANNOTATION_KEY] = json!("false");
        public["rules"] = json!([]);
        svc.update(&roles, "", "system:public-info-viewer", public, main, &opts)
            .await
            .unwrap();
        // The `system:basic-user` binding's group replaced by a user.
        let alice = json!({"kind": "User", "apiGroup": RBAC_GROUP, "name": "alice"});
        let mut basic_binding = svc
            .get(&bindings, "", "system:basic-user")
            .unwrap()
            .value()
            .clone();
        basic_binding["subjects"] = json!([alice]);
        svc.update(
            &bindings,
            "",
            "system:basic-user",
            basic_binding,
            main,
            &opts,
        )
        .await
        .unwrap();
        // `system:monitoring` bound to another role; `system:kube-dns`'s binding gone.
        let delete_opts = super::DeleteOptions::default();
        let old_uid =
            svc.get(&bindings, "", "system:monitoring").unwrap().value()["metadata"]["uid"].clone();
        svc.delete(&bindings, "", "system:monitoring", &delete_opts)
            .await
            .unwrap();
        svc.create(
            &bindings,
            "",
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                "metadata": {"name": "system:monitoring"},
                "roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": "view"},
                "subjects": [{"kind": "Group", "apiGroup": RBAC_GROUP, "name": "system:monitoring"}]}),
            &opts,
        )
        .await
        .unwrap();
        svc.delete(&bindings, "", "system:kube-dns", &delete_opts)
            .await
            .unwrap();

        assert_eq!(
            svc.reconcile_bootstrap_policy(rbac::bootstrap_objects())
                .await,
            0
        );
        let basic = svc.get(&roles, "", "system:basic-user").unwrap();
        assert_eq!(basic.value()["rules"], full_rules);
        let public = svc.get(&roles, "", "system:public-info-viewer").unwrap();
        assert!(
            public.value()["rules"].as_array().is_none_or(Vec::is_empty),
            "{}",
            public.value()
        );
        let basic_binding = svc.get(&bindings, "", "system:basic-user").unwrap();
        assert_eq!(
            basic_binding.value()["subjects"],
            json!([alice, {"kind": "Group", "apiGroup": RBAC_GROUP, "name": "system:authenticated"}])
        );
        let monitoring = svc.get(&bindings, "", "system:monitoring").unwrap();
        assert_eq!(monitoring.value()["roleRef"]["name"], "system:monitoring");
        assert_ne!(monitoring.value()["metadata"]["uid"], old_uid);
        assert!(svc.get(&bindings, "", "system:kube-dns").is_ok());

        let before = svc.store.revision();
        assert_eq!(
            svc.reconcile_bootstrap_policy(rbac::bootstrap_objects())
                .await,
            0
        );
        assert_eq!(svc.store.revision(), before, "reconciled once, then left");
        drop(svc);
        let _ = std::fs::remove_dir_all(dir);
    }

    /// The real store with another writer beside it: before each of the next `races` writes of
    /// `key`, that object is changed (its `racer` annotation set to how many races there were)
    /// straight in the store, so the write meets a real conflict; and each of the next
    /// `outages` writes of `key` fails as a store that is unavailable fails it.
    struct Contended {
        inner: std::sync::Arc<dyn crate::store::Store>,
        key: crate::model::ObjectKey,
        races: std::sync::atomic::AtomicUsize,
        outages: std::sync::atomic::AtomicUsize,
        raced: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    }

    /// One of `counter` taken, if there is one left.
    fn take(counter: &std::sync::atomic::AtomicUsize) -> bool {
        use std::sync::atomic::Ordering::SeqCst;
        counter
            .try_update(SeqCst, SeqCst, |n| n.checked_sub(1))
            .is_ok()
    }

    impl crate::store::Store for Contended {
        fn revision(&self) -> u64 {
            self.inner.revision()
        }

        fn max_object_bytes(&self) -> usize {
            self.inner.max_object_bytes()
        }

        fn get(
            &self,
            key: &crate::model::ObjectKey,
        ) -> Option<std::sync::Arc<crate::store::StoredObject>> {
            self.inner.get(key)
        }

        fn list(
            &self,
            resource: &str,
            at: Option<u64>,
        ) -> crate::store::Result<crate::store::Snapshot> {
            self.inner.list(resource, at)
        }

        fn write_prepared(
            &self,
            op: crate::store::WriteOp,
            prepared: Option<crate::store::Prepared>,
        ) -> crate::store::BoxFuture<crate::store::Result<std::sync::Arc<crate::store::StoredObject>>>
        {
            use crate::store::{Precondition, StoreError, WriteOp};
            let ours = op.key() == &self.key;
            let outage = ours && take(&self.outages);
            let race = ours && !outage && take(&self.races);
            let (inner, raced) = (self.inner.clone(), self.raced.clone());
            Box::pin(async move {
                if outage {
                    return Err(StoreError::Unavailable("an outage for the test".into()));
                }
                if race {
                    if let Some(current) = inner.get(op.key()) {
                        let n = raced.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
                        let mut value = current.value().clone();
                        value["metadata"]["annotations"]["racer"] = json!(n.to_string());
                        inner
                            .write(WriteOp::Put {
                                key: op.key().clone(),
                                value,
                                precondition: Precondition::Exists,
                            })
                            .await?;
                    }
                }
                inner.write_prepared(op, prepared).await
            })
        }

        fn watch(
            &self,
            resource: &str,
            from: crate::store::WatchFrom,
        ) -> crate::store::Result<crate::store::WatchStart> {
            self.inner.watch(resource, from)
        }

        fn watch_in(
            &self,
            resource: &str,
            namespace: Option<&str>,
            from: crate::store::WatchFrom,
        ) -> crate::store::Result<crate::store::WatchStart> {
            self.inner.watch_in(resource, namespace, from)
        }

        fn wait_for_revision(
            &self,
            rv: u64,
            timeout: std::time::Duration,
        ) -> crate::store::BoxFuture<bool> {
            self.inner.wait_for_revision(rv, timeout)
        }

        fn sync(&self) -> crate::store::BoxFuture<crate::store::Result<()>> {
            self.inner.sync()
        }

        fn shutdown(&self) -> crate::store::Result<()> {
            self.inner.shutdown()
        }

        fn health(&self) -> crate::store::Health {
            self.inner.health()
        }

        fn render_metrics(&self, out: &mut String) {
            self.inner.render_metrics(out)
        }
    }

    /// kube's `rbac/bootstrap-roles` hook retries: a conflict is tried again at once (client-go's
    /// `RetryOnConflict`), an object still contended after those tries or whose store is
    /// unavailable is tried again in the next pass, within a bounded time; a failure that cannot
    /// pass (a kind not served) is not waited on.
    #[tokio::test]
    async fn the_bootstrap_rbac_policy_is_tried_again_after_conflicts_and_outages() {
        use std::sync::atomic::Ordering::SeqCst;
        use std::sync::Arc;
        use std::time::{Duration, Instant};

        use crate::auth::rbac::{self, RBAC_GROUP};
        let (real, dir) = crate::store::sled_store::temp_store("rbac-contended");
        let registry = Arc::new(crate::model::Registry::with_builtins());
        let roles = registry.lookup(RBAC_GROUP, "v1", "clusterroles").unwrap();
        let store = Arc::new(Contended {
            inner: real,
            key: Service::key(&roles, "", "system:basic-user"),
            races: 0.into(),
            outages: 0.into(),
            raced: Arc::default(),
        });
        let svc = Service::new(store.clone(), registry);
        svc.bootstrap().await.unwrap();
        let policy = rbac::bootstrap_objects;
        assert_eq!(svc.reconcile_bootstrap_policy(policy()).await, 0);
        let full = svc.get(&roles, "", "system:basic-user").unwrap().value()["rules"].clone();
        // A rule taken from `system:basic-user`, for the reconcile to put back.
        async fn narrow(
            svc: &Service,
            roles: &crate::model::ResourceInfo,
            rule: &serde_json::Value,
        ) {
            let mut basic = svc
                .get(roles, "", "system:basic-user")
                .unwrap()
                .value()
                .clone();
            basic["rules"] = json!([rule]);
            svc.update(
                roles,
                "",
                "system:basic-user",
                basic,
                super::Subresource::Main,
                &WriteOptions::default(),
            )
            .await
            .unwrap();
        }
        /// The policy reconciled, tried again every 10 ms for up to 20 s.
        async fn quick(svc: &Service) -> usize {
            svc.reconcile_bootstrap_policy_within(
                crate::auth::rbac::bootstrap_objects(),
                std::time::Duration::from_millis(10),
                std::time::Duration::from_secs(20),
            )
            .await
        }
        let basic = || svc.get(&roles, "", "system:basic-user").unwrap();

        // Two conflicts: the object is read again each time and reconciled in the first pass.
        narrow(&svc, &roles, &full[0]).await;
        store.races.store(2, SeqCst);
        assert_eq!(quick(&svc).await, 0);
        assert_eq!(store.races.load(SeqCst), 0);
        let b = basic();
        assert_eq!(b.value()["rules"], full, "the policy is back");
        assert_eq!(
            b.value()["metadata"]["annotations"]["racer"],
            "2",
            "the other writer's change is kept"
        );
        // More conflicts than one pass tries (client-go's four): the next pass gets it.
        narrow(&svc, &roles, &full[0]).await;
        store.races.store(6, SeqCst);
        assert_eq!(quick(&svc).await, 0);
        assert_eq!(store.races.load(SeqCst), 0);
        let b = basic();
        assert_eq!(b.value()["rules"], full);
        assert_eq!(b.value()["metadata"]["annotations"]["racer"], "8");
        // A store that is unavailable for two passes: the third gets it.
        narrow(&svc, &roles, &full[0]).await;
        store.outages.store(2, SeqCst);
        assert_eq!(quick(&svc).await, 0);
        assert_eq!(store.outages.load(SeqCst), 0);
        assert_eq!(basic().value()["rules"], full);
        // A store that stays unavailable: given up on within the budget, the object counted.
        narrow(&svc, &roles, &full[0]).await;
        store.outages.store(usize::MAX, SeqCst);
        let started = Instant::now();
        let failed = svc
            .reconcile_bootstrap_policy_within(
                policy(),
                Duration::from_millis(10),
                Duration::from_millis(300),
            )
            .await;
        assert_eq!(failed, 1);
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{:?}",
            started.elapsed()
        );
        assert!(
            store.outages.load(SeqCst) < usize::MAX - 1,
            "tried more than once"
        );
        assert_eq!(basic().value()["rules"], json!([full[0]]));
        store.outages.store(0, SeqCst);
        assert_eq!(quick(&svc).await, 0);
        assert_eq!(basic().value()["rules"], full);
        // A kind that is not served cannot come to be: reported at once, not retried.
        let started = Instant::now();
        let unserved = json!({"apiVersion": "example.com/v1", "kind": "Widget",
                              "metadata": {"name": "w"}});
        let failed = svc
            .reconcile_bootstrap_policy_within(
                vec![unserved],
                Duration::from_secs(30),
                Duration::from_secs(60),
            )
            .await;
        assert_eq!(failed, 1);
        assert!(started.elapsed() < Duration::from_secs(10));
        drop(svc);
        let _ = std::fs::remove_dir_all(dir);
    }

    /// Keys a body repeats are kube's strict decoding errors, with its unknown fields: a 400
    /// with `fieldValidation=Strict`, a warning each with `Warn` (the last value kept), nothing
    /// with `Ignore`.
    #[tokio::test]
    async fn repeated_keys_follow_field_validation() {
        let (svc, dir) = bootstrapped("duplicates").await;
        let cms = svc.registry.lookup("", "v1", "configmaps").unwrap();
        let body = br#"{"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "a", "name": "dup"}, "data": {"k": "1", "k": "2"}, "bogus": 1}"#;
        let (obj, duplicates) = crate::model::json::from_slice(body).unwrap();
        let opts = |field_validation| WriteOptions {
            field_validation,
            duplicates: duplicates.clone(),
            dry_run: true,
            ..Default::default()
        };
        let e = svc
            .create(&cms, "default", obj.clone(), &opts(FieldValidation::Strict))
            .await
            .unwrap_err();
        assert_eq!(e.code, 400, "{e:?}");
        assert_eq!(
            e.message,
            "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: strict decoding error: duplicate field \"metadata.name\", duplicate field \"data.k\", unknown field \"bogus\""
        );
        let w = svc
            .create(&cms, "default", obj.clone(), &opts(FieldValidation::Warn))
            .await
            .unwrap();
        assert_eq!(
            w.warnings,
            [
                "duplicate field \"metadata.name\"",
                "duplicate field \"data.k\"",
                "unknown field \"bogus\""
            ]
        );
        let got = w.object.value();
        assert_eq!(got["metadata"]["name"], "dup", "{got}");
        assert_eq!(got["data"]["k"], "2", "{got}");
        let w = svc
            .create(&cms, "default", obj, &opts(FieldValidation::Ignore))
            .await
            .unwrap();
        assert!(w.warnings.is_empty(), "{:?}", w.warnings);
        // Paths are quoted as Go's strconv.Quote quotes them, unknown fields too.
        let odd = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "odd"}, "a\"b\\c": 1});
        let w = svc
            .create(&cms, "default", odd, &opts(FieldValidation::Warn))
            .await
            .unwrap();
        let dups = w.warnings.len() - 1;
        assert_eq!(
            w.warnings[dups], r#"unknown field "a\"b\\c""#,
            "{:?}",
            w.warnings
        );
        drop(svc);
        let _ = std::fs::remove_dir_all(dir);
    }

    /// A patch's own repeated keys (and a JSON patch's unknown operation fields) are kube's
    /// strict decoding errors, listed before the patched object's unknown fields: under Strict
    /// one 422 naming the `patch` (showing the patched object's JSON, or a strategic patch as
    /// Go prints its map), found before the patched object's name is checked; under Warn a
    /// warning each; nothing under Ignore. An applied configuration's are go-yaml's, after the
    /// apply: a 400 under Strict, a warning each under Warn.
    #[tokio::test]
    async fn patches_and_applies_report_repeated_keys() {
        use super::Subresource::Main;
        use crate::patch::PatchType;
        let (svc, dir) = bootstrapped("patch-duplicates").await;
        let cms = svc.registry.lookup("", "v1", "configmaps").unwrap();
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "pc"}, "data": {"a": "1"}});
        svc.create(&cms, "default", cm, &WriteOptions::default())
            .await
            .unwrap();
        let opts = |field_validation| WriteOptions {
            field_validation,
            dry_run: true,
            manager: Some("t".into()),
            ..Default::default()
        };
        let (strict, warn, ignore) = (
            opts(FieldValidation::Strict),
            opts(FieldValidation::Warn),
            opts(FieldValidation::Ignore),
        );

        // Merge patch: the patched object is shown.
        let merge = br#"{"data": {"a": "2", "a": "3"}, "bogus": 1}"#;
        let e = svc
            .patch(
                &cms,
                "default",
                "pc",
                PatchType::Merge,
                merge,
                Main,
                &strict,
            )
            .await
            .unwrap_err();
        assert_eq!((e.code, e.reason), (422, "Invalid"), "{e:?}");
        assert_eq!(e.causes.len(), 1, "{e:?}");
        assert_eq!(
            (e.causes[0].reason.as_str(), e.causes[0].field.as_str()),
            ("FieldValueInvalid", "patch")
        );
        let cause = &e.causes[0].message;
        assert!(
            cause.starts_with(
                r#"Invalid value: "{\"apiVersion\":\"v1\",\"bogus\":1,\"data\":{\"a\":\"3\"},\"kind\":\"ConfigMap\",\"metadata\":{"#
            ),
            "{cause}"
        );
        assert!(
            cause.ends_with(
                r#"}": strict decoding error: duplicate field "data.a", unknown field "bogus""#
            ),
            "{cause}"
        );
        assert_eq!(e.message, format!(" \"\" is invalid: patch: {cause}"));
        // kube's `NewInvalid` of an empty GroupKind and name: details hold the cause alone.
        let status = e.to_status();
        assert_eq!(
            status["details"].as_object().map(|d| d.len()),
            Some(1),
            "{status}"
        );
        let w = svc
            .patch(&cms, "default", "pc", PatchType::Merge, merge, Main, &warn)
            .await
            .unwrap();
        assert_eq!(
            w.warnings,
            ["duplicate field \"data.a\"", "unknown field \"bogus\""]
        );
        assert_eq!(w.object.value()["data"]["a"], "3");
        let w = svc
            .patch(
                &cms,
                "default",
                "pc",
                PatchType::Merge,
                merge,
                Main,
                &ignore,
            )
            .await
            .unwrap();
        assert!(w.warnings.is_empty(), "{:?}", w.warnings);

        // Strategic merge patch: the patch is shown as Go prints its map.
        let smp = br#"{"data": {"a": "4", "a": "5"}, "metadata": {"labels": {"x": "1"}}}"#;
        let e = svc
            .patch(
                &cms,
                "default",
                "pc",
                PatchType::Strategic,
                smp,
                Main,
                &strict,
            )
            .await
            .unwrap_err();
        assert_eq!(
            e.message,
            r#" "" is invalid: patch: Invalid value: "map[data:map[a:5] metadata:map[labels:map[x:1]]]": strict decoding error: duplicate field "data.a""#
        );
        let w = svc
            .patch(
                &cms,
                "default",
                "pc",
                PatchType::Strategic,
                smp,
                Main,
                &warn,
            )
            .await
            .unwrap();
        assert_eq!(w.warnings, ["duplicate field \"data.a\""]);

        // JSON patch: the operations' fields, with kube's prefix.
        let ops =
            br#"[{"op": "replace", "op": "replace", "path": "/data/a", "value": "6", "x": 1}]"#;
        let e = svc
            .patch(&cms, "default", "pc", PatchType::Json, ops, Main, &strict)
            .await
            .unwrap_err();
        assert_eq!(e.code, 422, "{e:?}");
        assert!(
            e.message.ends_with(
                r#": strict decoding error: json patch duplicate field "[0].op", json patch unknown field "[0].x""#
            ),
            "{}",
            e.message
        );
        let w = svc
            .patch(&cms, "default", "pc", PatchType::Json, ops, Main, &warn)
            .await
            .unwrap();
        assert_eq!(
            w.warnings,
            [
                "json patch duplicate field \"[0].op\"",
                "json patch unknown field \"[0].x\""
            ]
        );
        assert_eq!(w.object.value()["data"]["a"], "6");

        // Where kube finds them: after the patch applies (a failing operation wins), before
        // the patched object's name is checked.
        let failing = br#"[{"op": "test", "path": "/data/a", "value": "9", "value": "9"}]"#;
        let e = svc
            .patch(
                &cms,
                "default",
                "pc",
                PatchType::Json,
                failing,
                Main,
                &strict,
            )
            .await
            .unwrap_err();
        assert_eq!(e.code, 422, "{e:?}");
        assert!(!e.message.contains("strict decoding"), "{}", e.message);
        let renamed = br#"{"metadata": {"name": "other"}, "data": {"a": "1", "a": "2"}}"#;
        let e = svc
            .patch(
                &cms,
                "default",
                "pc",
                PatchType::Merge,
                renamed,
                Main,
                &strict,
            )
            .await
            .unwrap_err();
        assert_eq!(e.code, 422, "{e:?}");
        let e = svc
            .patch(
                &cms,
                "default",
                "pc",
                PatchType::Merge,
                renamed,
                Main,
                &warn,
            )
            .await
            .unwrap_err();
        assert_eq!(e.code, 400, "{e:?}");
        assert!(
            e.message.contains("does not match the name on the URL"),
            "{e:?}"
        );

        // Server-side apply: go-yaml's report, with the line of the repeated key's value.
        let applied = br#"{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "pa"},
            "data": {"a": "1", "a": "2"}}"#;
        let e = svc
            .patch(
                &cms,
                "default",
                "pa",
                PatchType::Apply,
                applied,
                Main,
                &strict,
            )
            .await
            .unwrap_err();
        assert_eq!(e.code, 400, "{e:?}");
        assert_eq!(
            e.message,
            "error strict decoding patch: error converting YAML to JSON: yaml: unmarshal errors:\n  line 2: key \"a\" already set in map"
        );
        let w = svc
            .patch(
                &cms,
                "default",
                "pa",
                PatchType::Apply,
                applied,
                Main,
                &warn,
            )
            .await
            .unwrap();
        assert!(w.created);
        assert_eq!(w.warnings, ["line 2: key \"a\" already set in map"]);
        assert_eq!(w.object.value()["data"]["a"], "2");
        let w = svc
            .patch(
                &cms,
                "default",
                "pa",
                PatchType::Apply,
                applied,
                Main,
                &ignore,
            )
            .await
            .unwrap();
        assert!(w.warnings.is_empty(), "{:?}", w.warnings);
        drop(svc);
        let _ = std::fs::remove_dir_all(dir);
    }

    /// kube's patcher's decode of the patched object (which reports a value of the wrong type,
    /// and under Strict its unknown fields, as a 422 naming the `patch`) is the write's only
    /// decode of it when the decoder finds nothing to drop or rewrite and nothing changes the
    /// object after it, whatever the validation. When the decoder does change it (a quantity
    /// rewritten, a `null` dropped), the pipeline decodes it again as it decodes any write's.
    #[tokio::test]
    async fn a_strict_patch_decodes_the_patched_object_once() {
        use super::Subresource::Main;
        use crate::builtin::decode::DECODES;
        use crate::patch::PatchType;
        let (svc, dir) = bootstrapped("patch-decoded-once").await;
        let cms = svc.registry.lookup("", "v1", "configmaps").unwrap();
        let quotas = svc.registry.lookup("", "v1", "resourcequotas").unwrap();
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "once"}, "data": {"a": "1"}});
        svc.create(&cms, "default", cm, &WriteOptions::default())
            .await
            .unwrap();
        let quota = json!({"apiVersion": "v1", "kind": "ResourceQuota",
            "metadata": {"name": "q"}, "spec": {"hard": {"pods": "10"}}});
        svc.create(&quotas, "default", quota, &WriteOptions::default())
            .await
            .unwrap();
        let opts = |field_validation| WriteOptions {
            field_validation,
            dry_run: true,
            manager: Some("t".into()),
            ..Default::default()
        };
        let decodes = || DECODES.with(|n| n.replace(0));
        for fv in [
            FieldValidation::Strict,
            FieldValidation::Warn,
            FieldValidation::Ignore,
        ] {
            // Nothing for the decoder to change: one decode, whatever the validation.
            decodes();
            let w = svc
                .patch(
                    &cms,
                    "default",
                    "once",
                    PatchType::Merge,
                    br#"{"data": {"a": "2"}}"#,
                    Main,
                    &opts(fv),
                )
                .await
                .unwrap();
            assert_eq!(decodes(), 1, "{fv:?}");
            assert_eq!(w.object.value()["data"]["a"], "2");
            assert!(w.warnings.is_empty(), "{fv:?}: {:?}", w.warnings);
            // A quantity the decoder rewrites: decoded again after admission under Strict.
            let w = svc
                .patch(
                    &quotas,
                    "default",
                    "q",
                    PatchType::Merge,
                    br#"{"spec": {"hard": {"cpu": "0.5"}}}"#,
                    Main,
                    &opts(fv),
                )
                .await
                .unwrap();
            assert_eq!(decodes(), 2, "{fv:?}");
            assert_eq!(w.object.value()["spec"]["hard"]["cpu"], "500m", "{fv:?}");
            // A `null` the decoder drops: likewise.
            let w = svc
                .patch(
                    &cms,
                    "default",
                    "once",
                    PatchType::Json,
                    br#"[{"op": "add", "path": "/immutable", "value": null}]"#,
                    Main,
                    &opts(fv),
                )
                .await
                .unwrap();
            assert_eq!(decodes(), 2, "{fv:?}");
            let got = w.object.value();
            assert!(got.get("immutable").is_none(), "{fv:?}: {got}");
        }
        drop(svc);
        let _ = std::fs::remove_dir_all(dir);
    }

    /// The decoded copy of a patch's result stands for the object only while they are equal:
    /// what the pipeline puts back after the patcher's decode (here a Deployment's stored
    /// `status`, holding a `null` the decoder drops, in place of the patch's) is decoded again.
    #[tokio::test]
    async fn what_changes_after_a_strict_patchs_decode_is_decoded_again() {
        use super::Subresource::Main;
        use crate::builtin::decode::DECODES;
        use crate::patch::PatchType;
        let (svc, dir) = bootstrapped("patch-decoded-again").await;
        let deploys = svc.registry.lookup("apps", "v1", "deployments").unwrap();
        svc.create(
            &deploys,
            "default",
            web_deployment(),
            &WriteOptions::default(),
        )
        .await
        .unwrap();
        let strict = WriteOptions {
            field_validation: FieldValidation::Strict,
            dry_run: true,
            ..Default::default()
        };
        // The Deployment as stored: what kubectl patches is decoded once.
        let annotate = br#"[{"op": "add", "path": "/metadata/annotations", "value": {"x": "1"}}]"#;
        DECODES.with(|n| n.set(0));
        svc.patch(
            &deploys,
            "default",
            "web",
            PatchType::Json,
            annotate,
            Main,
            &strict,
        )
        .await
        .unwrap();
        assert_eq!(DECODES.with(|n| n.get()), 1);
        let key = Service::key(&deploys, "default", "web");
        let stored = svc.store.get(&key).unwrap();
        let mut v = stored.parse().into_owned();
        v["status"] = json!({"replicas": 0, "observedGeneration": null});
        svc.store
            .write(crate::store::WriteOp::Put {
                key,
                value: v,
                precondition: crate::store::Precondition::ResourceVersion(stored.rv),
            })
            .await
            .unwrap();
        let ops = br#"[{"op": "replace", "path": "/status", "value": {}},
            {"op": "add", "path": "/metadata/annotations", "value": {"x": "1"}}]"#;
        for (fv, want) in [(FieldValidation::Strict, 2), (FieldValidation::Warn, 2)] {
            let opts = WriteOptions {
                field_validation: fv,
                dry_run: true,
                ..Default::default()
            };
            DECODES.with(|n| n.set(0));
            let w = svc
                .patch(
                    &deploys,
                    "default",
                    "web",
                    PatchType::Json,
                    ops,
                    Main,
                    &opts,
                )
                .await
                .unwrap();
            assert_eq!(DECODES.with(|n| n.get()), want, "{fv:?}");
            let got = w.object.value();
            assert_eq!(got["metadata"]["annotations"]["x"], "1", "{got}");
            // The stored status the strategy put back is decoded again: its `null` and its
            // `omitempty` zero (`replicas: 0`) are gone, as from kube's.
            assert_eq!(got["status"], json!({}), "{fv:?}: {got}");
        }
        drop(svc);
        let _ = std::fs::remove_dir_all(dir);
    }

    /// A Deployment `web` (one replica) for the `scale` tests.
    fn web_deployment() -> serde_json::Value {
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                "template": {"metadata": {"labels": {"app": "web"}},
                    "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}})
    }

    /// A Scale PUT as the handler makes it: the body decoded as an autoscaling/v1 Scale
    /// (`Service::decode_scale`, its repeated keys read unless Ignore), then the write.
    async fn put_scale(
        svc: &Service,
        ri: &crate::model::ResourceInfo,
        body: &[u8],
        field_validation: FieldValidation,
    ) -> super::Result<super::Written> {
        let opts = WriteOptions {
            field_validation,
            dry_run: true,
            ..Default::default()
        };
        let (mut scale, mut found) = crate::model::json::from_slice(body).unwrap();
        if field_validation == FieldValidation::Ignore {
            found.clear();
        }
        let warnings = Service::decode_scale(&mut scale, &found, &opts)?;
        svc.update_scale(ri, "default", "web", &opts, |_| {
            Ok((scale.clone(), warnings.clone()))
        })
        .await
    }

    /// A Scale written with PUT is decoded as kube's update handler decodes it: its unknown
    /// fields and repeated keys are a 400 under Strict, a warning each under Warn (the last
    /// value kept), nothing under Ignore; a value of the wrong type is a 400 under each.
    #[tokio::test]
    async fn scale_puts_report_unknown_and_repeated_fields() {
        let (svc, dir) = bootstrapped("scale-put-strict").await;
        let deploys = svc.registry.lookup("apps", "v1", "deployments").unwrap();
        svc.create(
            &deploys,
            "default",
            web_deployment(),
            &WriteOptions::default(),
        )
        .await
        .unwrap();
        let body = br#"{"apiVersion": "autoscaling/v1", "kind": "Scale",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {"replicas": 2, "replica": 3, "replicas": 4}}"#;
        let e = put_scale(&svc, &deploys, body, FieldValidation::Strict)
            .await
            .unwrap_err();
        assert_eq!(e.code, 400, "{e:?}");
        assert_eq!(
            e.message,
            r#"Scale in version "v1" cannot be handled as a Scale: strict decoding error: duplicate field "spec.replicas", unknown field "spec.replica""#
        );
        let w = put_scale(&svc, &deploys, body, FieldValidation::Warn)
            .await
            .unwrap();
        assert_eq!(
            w.warnings,
            [
                "duplicate field \"spec.replicas\"",
                "unknown field \"spec.replica\""
            ]
        );
        assert_eq!(w.object.value()["spec"]["replicas"], 4);
        let w = put_scale(&svc, &deploys, body, FieldValidation::Ignore)
            .await
            .unwrap();
        assert!(w.warnings.is_empty(), "{:?}", w.warnings);
        assert_eq!(w.object.value()["spec"]["replicas"], 4);
        // Scaled to zero: `replicas: 0` is decoded away (an `omitempty` int32) and read as 0.
        let zero = br#"{"metadata": {"name": "web"}, "spec": {"replicas": 0}}"#;
        let w = put_scale(&svc, &deploys, zero, FieldValidation::Strict)
            .await
            .unwrap();
        assert_eq!(w.object.value()["spec"]["replicas"], 0);
        // Below zero: kube's `ValidateScale` message, with the value.
        let e = put_scale(
            &svc,
            &deploys,
            br#"{"metadata": {"name": "web"}, "spec": {"replicas": -1}}"#,
            FieldValidation::Strict,
        )
        .await
        .unwrap_err();
        assert_eq!(e.code, 422, "{e:?}");
        assert_eq!(
            e.message,
            "Scale.autoscaling \"web\" is invalid: spec.replicas: Invalid value: -1: must be greater than or equal to 0"
        );
        let typed = br#"{"metadata": {"name": "web"}, "spec": {"replicas": "3"}}"#;
        for fv in [
            FieldValidation::Strict,
            FieldValidation::Warn,
            FieldValidation::Ignore,
        ] {
            let e = put_scale(&svc, &deploys, typed, fv).await.unwrap_err();
            assert_eq!(e.code, 400, "{fv:?}: {e:?}");
            assert_eq!(
                e.message,
                "Scale in version \"v1\" cannot be handled as a Scale: json: cannot unmarshal string into Go struct field ScaleSpec.spec.replicas of type int32"
            );
        }
        drop(svc);
        let _ = std::fs::remove_dir_all(dir);
    }

    /// A Scale patched is decoded as kube's patcher decodes any patched object: under Strict
    /// the patch's repeated keys and the patched Scale's unknown fields are one 422 naming the
    /// `patch` (the patched Scale's JSON shown, or a strategic patch as Go prints its map);
    /// under Warn a warning each; nothing under Ignore.
    #[tokio::test]
    async fn scale_patches_report_strict_errors_as_kubes_patcher() {
        use crate::patch::PatchType;
        let (svc, dir) = bootstrapped("scale-patch-strict").await;
        let deploys = svc.registry.lookup("apps", "v1", "deployments").unwrap();
        svc.create(
            &deploys,
            "default",
            web_deployment(),
            &WriteOptions::default(),
        )
        .await
        .unwrap();
        let opts = |field_validation| WriteOptions {
            field_validation,
            dry_run: true,
            ..Default::default()
        };
        let unknown = br#"{"spec": {"replica": 3}}"#;
        let e = svc
            .patch_scale(
                &deploys,
                "default",
                "web",
                PatchType::Merge,
                unknown,
                &opts(FieldValidation::Strict),
            )
            .await
            .unwrap_err();
        assert_eq!((e.code, e.reason), (422, "Invalid"), "{e:?}");
        assert_eq!(e.causes.len(), 1, "{e:?}");
        assert_eq!(
            (e.causes[0].reason.as_str(), e.causes[0].field.as_str()),
            ("FieldValueInvalid", "patch")
        );
        let cause = &e.causes[0].message;
        assert!(
            cause.starts_with(
                r#"Invalid value: "{\"apiVersion\":\"autoscaling/v1\",\"kind\":\"Scale\",\"metadata\":{"#
            ),
            "{cause}"
        );
        assert!(
            cause.contains(r#"\"spec\":{\"replica\":3,\"replicas\":1}"#),
            "{cause}"
        );
        assert!(
            cause.ends_with(r#"}": strict decoding error: unknown field "spec.replica""#),
            "{cause}"
        );
        assert_eq!(e.message, format!(" \"\" is invalid: patch: {cause}"));
        let e = svc
            .patch_scale(
                &deploys,
                "default",
                "web",
                PatchType::Strategic,
                unknown,
                &opts(FieldValidation::Strict),
            )
            .await
            .unwrap_err();
        assert_eq!(
            e.message,
            r#" "" is invalid: patch: Invalid value: "map[spec:map[replica:3]]": strict decoding error: unknown field "spec.replica""#
        );
        // The patch's own repeated keys come first.
        let both = br#"{"spec": {"replicas": 2, "replicas": 3, "replica": 1}}"#;
        let e = svc
            .patch_scale(
                &deploys,
                "default",
                "web",
                PatchType::Merge,
                both,
                &opts(FieldValidation::Strict),
            )
            .await
            .unwrap_err();
        assert!(
            e.message.ends_with(
                r#": strict decoding error: duplicate field "spec.replicas", unknown field "spec.replica""#
            ),
            "{}",
            e.message
        );
        let w = svc
            .patch_scale(
                &deploys,
                "default",
                "web",
                PatchType::Merge,
                both,
                &opts(FieldValidation::Warn),
            )
            .await
            .unwrap();
        assert_eq!(
            w.warnings,
            [
                "duplicate field \"spec.replicas\"",
                "unknown field \"spec.replica\""
            ]
        );
        assert_eq!(w.object.value()["spec"]["replicas"], 3);
        let w = svc
            .patch_scale(
                &deploys,
                "default",
                "web",
                PatchType::Merge,
                both,
                &opts(FieldValidation::Ignore),
            )
            .await
            .unwrap();
        assert!(w.warnings.is_empty(), "{:?}", w.warnings);
        assert_eq!(w.object.value()["spec"]["replicas"], 3);
        // A value of the wrong type is the patcher's 422 under every validation.
        let e = svc
            .patch_scale(
                &deploys,
                "default",
                "web",
                PatchType::Merge,
                br#"{"spec": {"replicas": "3"}}"#,
                &opts(FieldValidation::Ignore),
            )
            .await
            .unwrap_err();
        assert_eq!(e.code, 422, "{e:?}");
        assert!(
            e.message.ends_with(
                r#"}": json: cannot unmarshal string into Go struct field ScaleSpec.spec.replicas of type int32"#
            ),
            "{}",
            e.message
        );
        drop(svc);
        let _ = std::fs::remove_dir_all(dir);
    }

    /// An exact list at a revision the history no longer has: kube's 410 from etcd
    /// (`interpretListError`), not the watch cache's `too old resource version` text.
    #[tokio::test]
    async fn an_exact_list_below_the_history_is_expired_in_etcds_words() {
        let dir = std::env::temp_dir().join(format!(
            "turtles-exact-expired-{}-{}",
            std::process::id(),
            uuid::Uuid::new_v4()
        ));
        let store = crate::store::SledStore::open(crate::store::StoreOptions {
            fsync: false,
            watch_history: 2,
            ..crate::store::StoreOptions::in_dir(dir.clone())
        })
        .expect("a store in a temporary directory");
        let svc = Service::new(
            std::sync::Arc::new(store),
            std::sync::Arc::new(crate::model::Registry::with_builtins()),
        );
        svc.bootstrap().await.unwrap();
        let cms = svc.registry.lookup("", "v1", "configmaps").unwrap();
        let e = svc
            .list(
                &cms,
                Some("default"),
                &ListOptions {
                    resource_version: Some("1".to_owned()),
                    resource_version_match: Some("Exact".to_owned()),
                    ..Default::default()
                },
            )
            .await
            .unwrap_err();
        assert_eq!((e.code, e.reason), (410, "Expired"), "{e:?}");
        assert_eq!(
            e.message,
            "The resourceVersion for the provided list is too old."
        );
        drop(svc);
        let _ = std::fs::remove_dir_all(dir);
    }

    /// A continue token of a revision the store has not reached is kube's 504 (`Too large
    /// resource version`) once the wait for it is over, not a page of the current state.
    /// (Paused time: the clock skips the 3 s wait, as in the list fuzzer's fixture.)
    #[tokio::test(start_paused = true)]
    async fn a_continue_token_beyond_the_store_is_too_large() {
        use base64::Engine;
        let (svc, dir) = bootstrapped("continue-beyond").await;
        let cms = svc.registry.lookup("", "v1", "configmaps").unwrap();
        let list = |rv: i64| ListOptions {
            continue_token: Some(super::encode_continue(rv, "a\0", None)),
            limit: Some(10),
            ..Default::default()
        };
        let e = svc
            .list(&cms, Some("default"), &list(i64::MAX))
            .await
            .unwrap_err();
        assert_eq!((e.code, e.reason), (504, "Timeout"), "{e:?}");
        let want = format!(
            "Timeout: Too large resource version: {}, current: ",
            i64::MAX
        );
        assert!(e.message.starts_with(&want), "{e:?}");
        assert_eq!(e.causes.len(), 1, "{e:?}");
        assert_eq!(e.retry_after, Some(1));
        // Not an int64, or 0: kube's token is refused as it decodes (400).
        let beyond = ListOptions {
            continue_token: Some(
                base64::engine::general_purpose::URL_SAFE_NO_PAD
                    .encode(r#"{"v":"meta.k8s.io/v1","rv":18446744073709551615,"start":"a"}"#),
            ),
            ..list(1)
        };
        for (opts, words) in [
            (
                beyond,
                "json: cannot unmarshal number 18446744073709551615 into Go struct field continueToken.rv of type int64",
            ),
            (
                list(0),
                "incorrect encoded start resourceVersion (version meta.k8s.io/v1)",
            ),
        ] {
            let e = svc
                .list(&cms, Some("default"), &opts)
                .await
                .unwrap_err();
            assert_eq!(e.code, 400, "{e:?}");
            assert_eq!(
                e.message,
                format!("invalid continue token: continue key is not valid: {words}")
            );
        }
        // At a revision the store has: a page.
        let rv = i64::try_from(svc.store.revision()).unwrap();
        svc.list(&cms, Some("default"), &list(rv)).await.unwrap();
        drop(svc);
        let _ = std::fs::remove_dir_all(dir);
    }

    /// What turtles writes is kube's continue token (`storage.EncodeContinue`), and a token is
    /// read as kube's `storage.DecodeContinue` reads it: each one kube refuses is its 400 with
    /// its words (Go's, for base64 and JSON), the ones it takes are taken.
    #[test]
    fn continue_tokens_are_decoded_as_kube_decodes_them() {
        use base64::Engine;
        let b64 = |s: &str| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(s);
        let t = super::encode_continue(42, "a\0", None);
        assert_eq!(
            base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(&t)
                .unwrap(),
            br#"{"v":"meta.k8s.io/v1","rv":42,"start":"a\u0000"}"#
        );
        let c = super::decode_continue(&t).unwrap();
        assert_eq!((c.rv, c.start.as_str(), c.legacy), (42, "a\0", false));
        for (token, why) in [
            ("a*b".to_owned(), "illegal base64 data at input byte 1"),
            ("YWJj=".to_owned(), "illegal base64 data at input byte 4"),
            ("YWJjZ".to_owned(), "illegal base64 data at input byte 4"),
            (
                b64("nope"),
                "invalid character 'o' in literal null (expecting 'u')",
            ),
            (
                b64("[1]"),
                "json: cannot unmarshal array into Go value of type storage.continueToken",
            ),
            (
                b64(r#"{"v":"meta.k8s.io/v1","rv":"5","start":"a"}"#),
                "json: cannot unmarshal string into Go struct field continueToken.rv of type int64",
            ),
            (
                b64(r#"{"v":1,"rv":1.5,"start":"a"}"#),
                "json: cannot unmarshal number into Go struct field continueToken.v of type string",
            ),
            (
                b64(r#"{"v":"meta.k8s.io/v1","rv":1e3,"start":"a"}"#),
                "json: cannot unmarshal number 1e3 into Go struct field continueToken.rv of type int64",
            ),
            (
                b64(r#"{"v":"meta.k8s.io/v2","rv":5,"start":"a"}"#),
                "server does not recognize this encoded version meta.k8s.io/v2",
            ),
            (
                b64(r#"{"rv":5,"start":"a"}"#),
                "server does not recognize this encoded version ",
            ),
            (b64("null"), "server does not recognize this encoded version "),
            (
                b64(r#"{"v":"meta.k8s.io/v1","start":"a"}"#),
                "incorrect encoded start resourceVersion (version meta.k8s.io/v1)",
            ),
            (
                b64(r#"{"v":"meta.k8s.io/v1","rv":5,"start":null}"#),
                "encoded start key empty (version meta.k8s.io/v1)",
            ),
            (
                b64(r#"{"v":"meta.k8s.io/v1","rv":5,"start":"../kube-system/x"}"#),
                "../kube-system/x",
            ),
            (b64(r#"{"v":"meta.k8s.io/v1","rv":5,"start":"a//b"}"#), "a//b"),
            (b64(r#"{"v":"meta.k8s.io/v1","rv":5,"start":"a/"}"#), "a/"),
            (b64(r#"{"v":"meta.k8s.io/v1","rv":5,"start":"./a"}"#), "./a"),
        ] {
            let e = super::decode_continue(&token).unwrap_err();
            assert_eq!((e.code, e.reason), (400, "BadRequest"), "{token}");
            assert_eq!(
                e.message,
                format!("invalid continue token: continue key is not valid: {why}"),
                "{token}"
            );
        }
        // Taken as kube takes them: a key with a `/` in front, fields in any case, a revision
        // below 0 (the latest), newlines in the base64, fields kube does not know.
        let token = b64(r#"{"V":"meta.k8s.io/v1","Rv":-1,"START":"/default/a\u0000","x":[1e400]}"#);
        let token = format!("{}\n{}", &token[..4], &token[4..]);
        let c = super::decode_continue(&token).unwrap();
        assert_eq!((c.rv, c.start.as_str()), (-1, "default/a\0"));
        // A token turtles wrote before it wrote kube's goes on in its own list only.
        let legacy = |start: &str| {
            b64(&format!(
                r#"{{"v":"turtles/1","rv":7,"start":"{start}","left":3,"scope":"configmaps/default"}}"#
            ))
        };
        let c = super::decode_continue(&legacy("default/a"))
            .unwrap()
            .in_list("default/")
            .unwrap();
        assert_eq!(
            (c.rv, c.start.as_str(), c.left_in("configmaps/default")),
            (7, "a\0", Some(3))
        );
        let e = super::decode_continue(&legacy("kube-system/a"))
            .unwrap()
            .in_list("default/")
            .unwrap_err();
        assert_eq!((e.code, e.reason), (400, "BadRequest"));
        assert_eq!(
            e.message,
            "invalid continue token: continue key is not valid: server does not recognize this encoded version turtles/1"
        );
    }

    /// Every page of a list, `limit` items at a time: the items' keys (`NS/NAME`, `/NAME`)
    /// and the tokens between the pages.
    async fn pages(
        svc: &Service,
        ri: &crate::model::ResourceInfo,
        ns: Option<&str>,
        limit: usize,
    ) -> (Vec<String>, Vec<String>) {
        let mut keys = Vec::new();
        let mut tokens: Vec<String> = Vec::new();
        loop {
            let opts = ListOptions {
                limit: Some(limit),
                continue_token: tokens.last().cloned(),
                ..Default::default()
            };
            let page = svc.list(ri, ns, &opts).await.unwrap();
            keys.extend(page.items.iter().map(|o| {
                let meta = &o.value()["metadata"];
                format!(
                    "{}/{}",
                    meta["namespace"].as_str().unwrap_or_default(),
                    meta["name"].as_str().unwrap_or_default()
                )
            }));
            match page.continue_token {
                Some(t) => tokens.push(t),
                None => return (keys, tokens),
            }
            assert!(tokens.len() < 1000, "no last page");
        }
    }

    /// A continue token's key is relative to the list's prefix, as kube's: the pages of a
    /// namespace's list, of every namespace's and of a cluster-scoped list are the list; a
    /// token used on another list goes on inside that one, from the same key; one that would
    /// climb out of it, or that goes with a `resourceVersion`, is refused (the token first, as
    /// kube's storage checks it); a token at revision -1 reads the latest state.
    #[tokio::test]
    async fn a_continue_token_pages_inside_the_list_it_is_used_on() {
        use base64::Engine;
        let (svc, dir) = bootstrapped("continue-scope").await;
        let cms = svc.registry.lookup("", "v1", "configmaps").unwrap();
        let namespaces = svc.registry.lookup("", "v1", "namespaces").unwrap();
        let opts = WriteOptions::default();
        let cm = |name: &str| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}});
        for (ns, name) in [
            ("default", "a"),
            ("default", "b"),
            ("kube-system", "a"),
            ("kube-system", "c"),
        ] {
            svc.create(&cms, ns, cm(name), &opts).await.unwrap();
        }
        for (ri, ns, prefix) in [
            (&cms, Some("default"), "default/"),
            (&cms, None, ""),
            (&namespaces, None, "/"),
        ] {
            let (all, _) = pages(&svc, ri, ns, 1000).await;
            let (paged, tokens) = pages(&svc, ri, ns, 1).await;
            assert_eq!(paged, all, "{ns:?}");
            assert_eq!(tokens.len() + 1, all.len(), "{ns:?}");
            for (token, key) in tokens.iter().zip(&all) {
                let c = super::decode_continue(token).unwrap();
                assert_eq!(
                    c.start,
                    format!("{}\0", key.strip_prefix(prefix).unwrap()),
                    "{ns:?}"
                );
            }
        }
        let page = |ns: &'static str, token: String| {
            let svc = &svc;
            let cms = &cms;
            async move {
                let opts = ListOptions {
                    continue_token: Some(token),
                    ..Default::default()
                };
                svc.list(cms, Some(ns), &opts).await
            }
        };
        let keys = |list: &super::ListResult| -> Vec<String> {
            list.items
                .iter()
                .map(|o| {
                    let meta = &o.value()["metadata"];
                    format!(
                        "{}/{}",
                        meta["namespace"].as_str().unwrap_or_default(),
                        meta["name"].as_str().unwrap_or_default()
                    )
                })
                .collect()
        };
        // kube-system's token after `a`, in default: default's items after `a`.
        let (_, tokens) = pages(&svc, &cms, Some("kube-system"), 1).await;
        let listed = page("default", tokens[0].clone()).await.unwrap();
        let (all, _) = pages(&svc, &cms, Some("default"), 1000).await;
        let after_a: Vec<String> = all
            .into_iter()
            .filter(|k| k.as_str() > "default/a")
            .collect();
        assert_eq!(keys(&listed), after_a);
        // Every namespace's token (after `default/a`), in kube-system: kube-system's items
        // after that key taken as a name.
        let (_, tokens) = pages(&svc, &cms, None, 1).await;
        let start = super::decode_continue(&tokens[0]).unwrap().start;
        let listed = page("kube-system", tokens[0].clone()).await.unwrap();
        let beyond = format!("kube-system/{start}");
        assert!(
            keys(&listed).iter().all(|k| *k > beyond),
            "{start:?}: {:?}",
            keys(&listed)
        );
        let rv = svc.store.revision();
        let forged = |start: &str| {
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(format!(
                r#"{{"v":"meta.k8s.io/v1","rv":{rv},"start":"{start}"}}"#
            ))
        };
        let e = page("default", forged("../kube-system/c"))
            .await
            .unwrap_err();
        assert_eq!((e.code, e.reason), (400, "BadRequest"));
        assert_eq!(
            e.message,
            "invalid continue token: continue key is not valid: ../kube-system/c"
        );
        // A `resourceVersion` with a token: the token is read first.
        let with_rv = |token: String| ListOptions {
            continue_token: Some(token),
            resource_version: Some("5".to_owned()),
            ..Default::default()
        };
        let e = svc
            .list(&cms, Some("default"), &with_rv(forged("a/")))
            .await
            .unwrap_err();
        assert_eq!(
            e.message,
            "invalid continue token: continue key is not valid: a/"
        );
        let e = svc
            .list(&cms, Some("default"), &with_rv(forged("a")))
            .await
            .unwrap_err();
        assert_eq!((e.code, e.reason), (400, "BadRequest"));
        assert_eq!(
            e.message,
            "specifying resource version is not allowed when using continue"
        );
        // Revision -1 (kube's token after a 410): the latest state.
        svc.create(&cms, "default", cm("b2"), &opts).await.unwrap();
        let latest = page("default", super::encode_continue(-1, "a\0", None))
            .await
            .unwrap();
        assert!(
            keys(&latest).contains(&"default/b2".to_owned()),
            "{:?}",
            keys(&latest)
        );
        assert!(!keys(&latest).contains(&"default/a".to_owned()));
        drop(svc);
        let _ = std::fs::remove_dir_all(dir);
    }

    /// A get with a `resourceVersion` the store has not reached is kube's 504 (`Too large
    /// resource version`, `Retry-After: 1`) once the wait for it is over, as a list's; at a
    /// revision the store has (or `0`) it reads. (Paused time: the clock skips the 3 s wait.)
    #[tokio::test(start_paused = true)]
    async fn a_get_beyond_the_store_is_too_large() {
        let (svc, dir) = bootstrapped("get-beyond").await;
        let current = svc.store.revision();
        let far = current + 1000;
        let e = svc.await_get_revision(&far.to_string()).await.unwrap_err();
        assert_eq!((e.code, e.reason), (504, "Timeout"), "{e:?}");
        let want = format!("Timeout: Too large resource version: {far}, current: ");
        assert!(e.message.starts_with(&want), "{e:?}");
        assert_eq!(e.causes.len(), 1, "{e:?}");
        assert_eq!(e.causes[0].reason, "ResourceVersionTooLarge");
        assert_eq!(e.retry_after, Some(1));
        // The same answer as a list's at that revision.
        let cms = svc.registry.lookup("", "v1", "configmaps").unwrap();
        let listed = svc
            .list(
                &cms,
                Some("default"),
                &ListOptions {
                    resource_version: Some(far.to_string()),
                    ..Default::default()
                },
            )
            .await
            .unwrap_err();
        assert_eq!(listed.to_status(), e.to_status());
        let at = current.to_string();
        for rv in ["0", "00", "1", at.as_str()] {
            svc.await_get_revision(rv).await.unwrap();
        }
        drop(svc);
        let _ = std::fs::remove_dir_all(dir);
    }

    /// A `resourceVersion` kube's versioner cannot parse (`strconv.ParseUint`): its storage
    /// error, a get's (and a watch's) answered as a 500 without a reason, a list's as its
    /// storage's 400; the first bad byte or the overflow, whichever comes first, as Go's loop
    /// finds them.
    #[test]
    fn a_get_resource_version_is_a_go_uint64() {
        assert_eq!(super::parse_get_rv("").unwrap(), 0);
        assert_eq!(super::parse_get_rv("0").unwrap(), 0);
        assert_eq!(
            super::parse_get_rv("18446744073709551615").unwrap(),
            u64::MAX
        );
        for (rv, why) in [
            ("abc", "invalid syntax"),
            ("-1", "invalid syntax"),
            ("+5", "invalid syntax"),
            ("1_000", "invalid syntax"),
            ("18446744073709551616", "value out of range"),
            ("99999999999999999999x", "value out of range"),
            ("9x9999999999999999999", "invalid syntax"),
        ] {
            let e = super::parse_get_rv(rv).unwrap_err();
            assert_eq!((e.code, e.reason), (500, ""), "{rv}");
            assert_eq!(
                e.message,
                format!(
                    "resourceVersion: Invalid value: \"{rv}\": strconv.ParseUint: parsing \"{rv}\": {why}"
                )
            );
            let status = e.to_status();
            assert!(status.get("reason").is_none(), "{status}");
            assert!(status.get("details").is_none(), "{status}");
            // A list's: kube's storage `ValidateListOptions` makes it a 400.
            let e = super::parse_list_rv(rv).unwrap_err();
            assert_eq!((e.code, e.reason), (400, "BadRequest"), "{rv}");
            assert_eq!(
                e.message,
                format!(
                    "invalid resource version: resourceVersion: Invalid value: \"{rv}\": strconv.ParseUint: parsing \"{rv}\": {why}"
                )
            );
        }
        assert_eq!(super::parse_list_rv("0").unwrap(), 0);
        assert_eq!(super::parse_list_rv("12").unwrap(), 12);
    }

    /// The review's `Database` CRD (s40 report, section 4), cut to what the case needs: v1
    /// stored, with defaults; v1alpha1 served, deprecated, keeping unknown fields.
    fn databases_crd() -> serde_json::Value {
        json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "databases.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                "names": {"plural": "databases", "singular": "database", "kind": "Database",
                    "listKind": "DatabaseList", "shortNames": ["db"]},
                "versions": [
                    {"name": "v1alpha1", "served": true, "storage": false, "deprecated": true,
                     "deprecationWarning": "example.com/v1alpha1 Database is deprecated; use v1",
                     "schema": {"openAPIV3Schema": {"type": "object",
                        "x-kubernetes-preserve-unknown-fields": true}}},
                    {"name": "v1", "served": true, "storage": true,
                     "schema": {"openAPIV3Schema": {"type": "object", "required": ["spec"],
                        "properties": {
                            "spec": {"type": "object", "required": ["engine"], "properties": {
                                "engine": {"type": "string",
                                    "enum": ["postgres", "mysql", "mariadb"]},
                                "version": {"type": "string", "default": "16"},
                                "replicas": {"type": "integer", "default": 1},
                                "minReplicas": {"type": "integer", "default": 0},
                                "port": {"x-kubernetes-int-or-string": true, "default": 5432}}},
                            "status": {"type": "object",
                                "properties": {"phase": {"type": "string"}}}}}}}]}})
    }

    /// An object of a custom resource as the API answers a GET of it through `ri`'s version.
    async fn read_as(
        svc: &Service,
        ri: &crate::model::ResourceInfo,
        name: &str,
    ) -> serde_json::Value {
        let stored = svc.get(ri, "default", name).unwrap();
        svc.served_one(ri, stored).await.unwrap().value().clone()
    }

    /// A custom resource written through a version other than the storage version
    /// (`conversion: None`) is stored as kube's storage codecs leave it: pruned by the storage
    /// version's schema, and read with its defaults, through either version, before and after
    /// a restart (the report's case; its `kube:` lines are the expected answers).
    #[tokio::test]
    async fn writes_through_another_version_store_what_the_storage_version_reads() {
        use crate::crd::controller::CrdController;
        use std::sync::Arc;
        let (svc, dir) = bootstrapped("crd-none-conversion").await;
        let svc = Arc::new(svc);
        let crds = svc
            .registry
            .lookup(crate::crd::GROUP, "v1", crate::crd::RESOURCE)
            .unwrap();
        let opts = WriteOptions::default();
        let main = super::Subresource::Main;
        let name = "databases.example.com";
        svc.create(&crds, "", databases_crd(), &opts).await.unwrap();
        CrdController::new(svc.clone())
            .reconcile(name)
            .await
            .unwrap();
        let alpha = svc
            .registry
            .lookup("example.com", "v1alpha1", "databases")
            .unwrap();
        let v1 = svc
            .registry
            .lookup("example.com", "v1", "databases")
            .unwrap();
        assert_eq!(
            alpha
                .custom
                .as_ref()
                .and_then(|c| c.deprecation_warning.as_deref()),
            Some("example.com/v1alpha1 Database is deprecated; use v1")
        );
        assert_eq!(
            v1.custom
                .as_ref()
                .and_then(|c| c.deprecation_warning.as_deref()),
            None
        );

        let written = svc
            .create(
                &alpha,
                "default",
                json!({"apiVersion": "example.com/v1alpha1", "kind": "Database",
                    "metadata": {"name": "legacy", "namespace": "default"},
                    "spec": {"engine": "oracle", "extra": 1}, "somethingElse": true}),
                &opts,
            )
            .await
            .unwrap();
        // kube's answers through either version (`jq -c '{somethingElse, spec}'`).
        let kube_spec = json!({"engine": "oracle", "minReplicas": 0, "port": 5432,
            "replicas": 1, "version": "16"});
        let check = |got: &serde_json::Value, version: &str| {
            assert_eq!(got["apiVersion"], format!("example.com/{version}"), "{got}");
            assert_eq!(got["spec"], kube_spec, "{got}");
            assert!(got.get("somethingElse").is_none(), "{got}");
        };
        // The create's answer is read back from what is stored, as kube's.
        let answer = svc
            .served_one(&alpha, written.object.clone())
            .await
            .unwrap();
        check(answer.value(), "v1alpha1");
        // Stored so: the storage version's reads need no conforming.
        check(svc.get(&v1, "default", "legacy").unwrap().value(), "v1");
        check(&read_as(&svc, &v1, "legacy").await, "v1");
        check(&read_as(&svc, &alpha, "legacy").await, "v1alpha1");

        // A label through v1alpha1: the spec as it was, no new generation.
        let labelled = svc
            .patch(
                &alpha,
                "default",
                "legacy",
                crate::patch::PatchType::Merge,
                br#"{"metadata":{"labels":{"tier":"gold"}}}"#,
                main,
                &opts,
            )
            .await
            .unwrap();
        let labelled = svc.served_one(&alpha, labelled.object).await.unwrap();
        check(labelled.value(), "v1alpha1");
        assert_eq!(
            labelled.value()["metadata"]["generation"],
            1,
            "{}",
            labelled.value()
        );
        // What a read through v1alpha1 answers, put back through it, is what is stored.
        let body = read_as(&svc, &alpha, "legacy").await;
        let stored_rv = svc.get(&v1, "default", "legacy").unwrap().rv;
        let put = svc
            .update(&alpha, "default", "legacy", body, main, &opts)
            .await
            .unwrap();
        assert_eq!(put.object.rv, stored_rv, "a no-op");

        // A write to the CRD (a label) takes its resourceVersion past the object's; its schema
        // is the same, so until a restart the object is still read as stored.
        svc.patch(
            &crds,
            "",
            name,
            crate::patch::PatchType::Merge,
            br#"{"metadata":{"labels":{"touched":"yes"}}}"#,
            main,
            &opts,
        )
        .await
        .unwrap();
        CrdController::new(svc.clone())
            .reconcile(name)
            .await
            .unwrap();
        let before = (
            read_as(&svc, &v1, "legacy").await,
            read_as(&svc, &alpha, "legacy").await,
        );
        check(&before.0, "v1");
        check(&before.1, "v1alpha1");
        // A restart: a new registry and service over the same store, the CRD served again. Its
        // resourceVersion now stands for the schema's, so the object is read as stored before
        // the schema (pruned and defaulted again): the same answers.
        let restarted = Arc::new(Service::new(
            svc.store.clone(),
            Arc::new(crate::model::Registry::with_builtins()),
        ));
        CrdController::new(restarted.clone())
            .reconcile(name)
            .await
            .unwrap();
        let alpha = restarted
            .registry
            .lookup("example.com", "v1alpha1", "databases")
            .unwrap();
        let v1 = restarted
            .registry
            .lookup("example.com", "v1", "databases")
            .unwrap();
        let schema_rv = v1.custom.as_ref().map_or(0, |c| c.schema_rv);
        assert!(stored_rv <= schema_rv, "{stored_rv} > {schema_rv}");
        assert_eq!(read_as(&restarted, &v1, "legacy").await, before.0);
        assert_eq!(read_as(&restarted, &alpha, "legacy").await, before.1);
        drop(restarted);
        drop(svc);
        let _ = std::fs::remove_dir_all(dir);
    }

    /// A generated name that is taken is replaced by another, up to 8 attempts, as kube's
    /// `RetryGenerateName`; the store hands the object back with each refusal. (`NEXT_SUFFIXES`
    /// is per thread: this runs on `tokio::test`'s single-threaded runtime.)
    #[tokio::test]
    async fn a_generated_name_that_is_taken_is_replaced() {
        let (svc, dir) = bootstrapped("generate-retry").await;
        let cms = svc.registry.lookup("", "v1", "configmaps").unwrap();
        let opts = WriteOptions::default();
        let cm = |meta: serde_json::Value| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {"k": "v"}});
        for taken in ["gen-bbbbb", "gen-ccccc"] {
            svc.create(&cms, "default", cm(json!({"name": taken})), &opts)
                .await
                .unwrap();
        }
        let queue = |names: &[&str]| {
            NEXT_SUFFIXES.with(|q| q.borrow_mut().extend(names.iter().map(|s| s.to_string())))
        };
        queue(&["bbbbb", "ccccc", "ddddd"]);
        let w = svc
            .create(&cms, "default", cm(json!({"generateName": "gen-"})), &opts)
            .await
            .unwrap();
        let got = w.object.value();
        assert_eq!(got["metadata"]["name"], "gen-ddddd", "{got}");
        assert_eq!(got["metadata"]["generateName"], "gen-", "{got}");
        assert_eq!(got["data"]["k"], "v", "{got}");
        assert_eq!(
            got["metadata"]["managedFields"].as_array().map(Vec::len),
            Some(1),
            "the retried object is the whole object: {got}"
        );
        // Eight taken names in a row: kube's AlreadyExists for the last one.
        queue(&["bbbbb"; 8]);
        let e = svc
            .create(&cms, "default", cm(json!({"generateName": "gen-"})), &opts)
            .await
            .unwrap_err();
        assert_eq!(e.code, 409, "{e:?}");
        assert!(e.message.contains("\"gen-bbbbb\" already exists"), "{e:?}");
        assert_eq!(NEXT_SUFFIXES.with(|q| q.borrow().len()), 0);
        drop(svc);
        let _ = std::fs::remove_dir_all(dir);
    }

    /// kube folds a Secret's write-only `stringData` into `data` whenever it decodes a v1
    /// Secret (`Convert_v1_Secret_To_core_Secret`): on create, on update, on the result of every
    /// patch type under every field validation, and on a server-side apply's result. A key
    /// `data` has too takes the `stringData` value, a `null` is the empty string, the other
    /// keys stay, and `stringData` itself is neither stored nor answered.
    #[tokio::test]
    async fn secret_string_data_is_folded_into_data_on_every_write() {
        use super::Subresource::Main;
        use crate::patch::PatchType;
        use base64::Engine;
        let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
        let (svc, dir) = bootstrapped("secret-string-data").await;
        let secrets = svc.registry.lookup("", "v1", "secrets").unwrap();
        let opts = WriteOptions::default();

        let w = svc
            .create(
                &secrets,
                "default",
                json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"},
                    "data": {"a": b64("b"), "k": b64("old")},
                    "stringData": {"k": "new", "e": null}}),
                &opts,
            )
            .await
            .unwrap();
        let got = w.object.value();
        assert_eq!(
            got["data"],
            json!({"a": b64("b"), "k": b64("new"), "e": ""}),
            "{got}"
        );
        assert!(got.get("stringData").is_none(), "{got}");
        assert_eq!(got["type"], "Opaque", "{got}");

        // PUT (without a type: kube defaults every decoded Secret's, so it stays `Opaque`).
        let mut put = svc.get(&secrets, "default", "s").unwrap().value().clone();
        put["stringData"] = json!({"a": "x", "c": "d"});
        if let Some(m) = put.as_object_mut() {
            m.remove("type");
        }
        let w = svc
            .update(&secrets, "default", "s", put, Main, &opts)
            .await
            .unwrap();
        let got = w.object.value();
        assert_eq!(
            got["data"],
            json!({"a": b64("x"), "k": b64("new"), "e": "", "c": b64("d")}),
            "{got}"
        );
        assert!(got.get("stringData").is_none(), "{got}");
        assert_eq!(got["type"], "Opaque", "{got}");
        let stored = svc.get(&secrets, "default", "s").unwrap();
        assert!(
            stored.value().get("stringData").is_none(),
            "{}",
            stored.value()
        );

        // Every patch type, under every validation (under Strict the patcher's decoded copy
        // must not stand for the object: the fold changed it).
        let mut n = 0;
        for fv in [
            FieldValidation::Strict,
            FieldValidation::Warn,
            FieldValidation::Ignore,
        ] {
            let opts = WriteOptions {
                field_validation: fv,
                ..Default::default()
            };
            for ty in [PatchType::Merge, PatchType::Strategic, PatchType::Json] {
                n += 1;
                let key = format!("p{n}");
                let mut sd = serde_json::Map::new();
                sd.insert(key.clone(), json!("v"));
                let sd = serde_json::Value::Object(sd);
                let body = match ty {
                    PatchType::Json => {
                        json!([{"op": "add", "path": "/stringData", "value": sd}])
                    }
                    _ => json!({"stringData": sd}),
                };
                let bytes = serde_json::to_vec(&body).unwrap();
                let w = svc
                    .patch(&secrets, "default", "s", ty, &bytes, Main, &opts)
                    .await
                    .unwrap();
                let got = w.object.value();
                assert!(got.get("stringData").is_none(), "{fv:?} {ty:?}: {got}");
                assert_eq!(got["data"][&key], b64("v"), "{fv:?} {ty:?}: {got}");
                assert_eq!(got["data"]["c"], b64("d"), "{fv:?} {ty:?}: {got}");
                let stored = svc.get(&secrets, "default", "s").unwrap();
                assert_eq!(stored.value()["data"][&key], b64("v"), "{fv:?} {ty:?}");
                assert!(stored.value().get("stringData").is_none(), "{fv:?} {ty:?}");
            }
        }

        // Server-side apply after a client-side apply (kubectl's migration): kubectl's
        // client-side apply creates the Secret with its last-applied configuration...
        let manifest = json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "db-creds", "namespace": "default"}, "type": "Opaque",
            "stringData": {"password": "hunter2"}, "data": {"user": b64("admin")}});
        let both = |password: &str| json!({"user": b64("admin"), "password": b64(password)});
        let mut created = manifest.clone();
        created["metadata"]["annotations"][crate::apply::LAST_APPLIED] =
            json!(format!("{manifest}\n"));
        let csa = WriteOptions {
            manager: Some("kubectl-client-side-apply".into()),
            ..Default::default()
        };
        let w = svc
            .create(&secrets, "default", created, &csa)
            .await
            .unwrap();
        assert_eq!(w.object.value()["data"], both("hunter2"));
        // ...`kubectl apply --server-side` makes the client-side applier's fields (which hold
        // `data.password`) its own Apply entry's (csaupgrade's JSON patch of managedFields)...
        let ssa = WriteOptions {
            manager: Some("kubectl".into()),
            ..Default::default()
        };
        let mut mf = w.object.value()["metadata"]["managedFields"].clone();
        mf[0]["manager"] = json!("kubectl");
        mf[0]["operation"] = json!("Apply");
        let migrate = serde_json::to_vec(
            &json!([{"op": "replace", "path": "/metadata/managedFields", "value": mf}]),
        )
        .unwrap();
        svc.patch(
            &secrets,
            "default",
            "db-creds",
            PatchType::Json,
            &migrate,
            Main,
            &ssa,
        )
        .await
        .unwrap();
        // ...and applies the same manifest: `data.password`, pruned as the applier's field it
        // no longer applies, comes back from `stringData`, and `data.user` stays.
        let body = serde_json::to_vec(&manifest).unwrap();
        let w = svc
            .patch(
                &secrets,
                "default",
                "db-creds",
                PatchType::Apply,
                &body,
                Main,
                &ssa,
            )
            .await
            .unwrap();
        let got = w.object.value();
        assert_eq!(got["data"], both("hunter2"), "{got}");
        assert!(got.get("stringData").is_none(), "{got}");
        // kube's field manager records the applied configuration, `stringData` included,
        // though the object does not keep it.
        let entries = got["metadata"]["managedFields"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        assert_eq!(entries.len(), 1, "{got}");
        assert_eq!(entries[0]["manager"], "kubectl", "{got}");
        assert_eq!(entries[0]["operation"], "Apply", "{got}");
        assert_eq!(
            entries[0]["fieldsV1"]["f:stringData"],
            json!({"f:password": {}}),
            "{got}"
        );
        assert_eq!(
            entries[0]["fieldsV1"]["f:data"],
            json!({"f:user": {}}),
            "{got}"
        );
        let stored = svc.get(&secrets, "default", "db-creds").unwrap();
        assert_eq!(stored.value()["data"], both("hunter2"));
        assert!(stored.value().get("stringData").is_none());
        // A value rotated through `stringData` changes `data`.
        let mut rotated = manifest.clone();
        rotated["stringData"]["password"] = json!("hunter3");
        let body = serde_json::to_vec(&rotated).unwrap();
        let w = svc
            .patch(
                &secrets,
                "default",
                "db-creds",
                PatchType::Apply,
                &body,
                Main,
                &ssa,
            )
            .await
            .unwrap();
        let got = w.object.value();
        assert_eq!(got["data"], both("hunter3"), "{got}");
        assert!(got.get("stringData").is_none(), "{got}");

        // A Secret created by server-side apply, then rotated the same way.
        let mut fresh = manifest.clone();
        fresh["metadata"]["name"] = json!("db2");
        let body = serde_json::to_vec(&fresh).unwrap();
        let w = svc
            .patch(
                &secrets,
                "default",
                "db2",
                PatchType::Apply,
                &body,
                Main,
                &ssa,
            )
            .await
            .unwrap();
        assert!(w.created);
        assert_eq!(w.object.value()["data"], both("hunter2"));
        fresh["stringData"]["password"] = json!("hunter3");
        let body = serde_json::to_vec(&fresh).unwrap();
        let w = svc
            .patch(
                &secrets,
                "default",
                "db2",
                PatchType::Apply,
                &body,
                Main,
                &ssa,
            )
            .await
            .unwrap();
        let got = w.object.value();
        assert_eq!(got["data"], both("hunter3"), "{got}");
        assert!(got.get("stringData").is_none(), "{got}");
        let stored = svc.get(&secrets, "default", "db2").unwrap();
        assert_eq!(stored.value()["data"], both("hunter3"));
        drop(svc);
        let _ = std::fs::remove_dir_all(dir);
    }

    /// A `stringData` that is not a map of strings is kube's decoding error on every way in:
    /// the handler's 400 `cannot be handled as a Secret` for a create's or an update's body
    /// (the first error of the body in document order), the patcher's 422 naming the `patch`
    /// for a patch under every field validation (Go's JSON wording for JSON and merge patches,
    /// the unstructured converter's for a strategic one). Nothing is stored.
    #[tokio::test]
    async fn secret_string_data_of_the_wrong_type_is_refused() {
        use super::Subresource::Main;
        use crate::patch::PatchType;
        let (svc, dir) = bootstrapped("secret-string-data-types").await;
        let secrets = svc.registry.lookup("", "v1", "secrets").unwrap();
        let opts = WriteOptions::default();
        let secret = |name: &str, sd: serde_json::Value| {
            json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name},
                "stringData": sd})
        };
        let cases = [
            (json!({"a": 1}), "number", "string"),
            (json!({"a": true}), "bool", "string"),
            (json!({"a": {"b": "c"}}), "object", "string"),
            (json!("x"), "string", "map[string]string"),
            (json!(["x"]), "array", "map[string]string"),
        ];
        for (sd, found, ty) in &cases {
            let want = format!(
                "Secret in version \"v1\" cannot be handled as a Secret: json: cannot unmarshal {found} into Go struct field Secret.stringData of type {ty}"
            );
            let e = svc
                .create(&secrets, "default", secret("bad", sd.clone()), &opts)
                .await
                .unwrap_err();
            assert_eq!(e.code, 400, "{sd}: {e:?}");
            assert_eq!(e.message, want, "{sd}");
            assert!(svc.get(&secrets, "default", "bad").is_err());
        }
        // Go's decoder reports the first error in document order.
        let e = svc
            .create(
                &secrets,
                "default",
                json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "bad"},
                    "data": {"k": "no*base64"}, "stringData": {"a": 1}}),
                &opts,
            )
            .await
            .unwrap_err();
        assert_eq!(e.code, 400, "{e:?}");
        assert_eq!(
            e.message,
            "Secret in version \"v1\" cannot be handled as a Secret: illegal base64 data at input byte 2"
        );

        let good = svc
            .create(
                &secrets,
                "default",
                json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "good"},
                    "data": {"k": "dg=="}}),
                &opts,
            )
            .await
            .unwrap();
        let before = good.object.rv;
        for (sd, found, ty) in &cases {
            let mut put = good.object.value().clone();
            put["stringData"] = sd.clone();
            let e = svc
                .update(&secrets, "default", "good", put, Main, &opts)
                .await
                .unwrap_err();
            assert_eq!(e.code, 400, "{sd}: {e:?}");
            assert_eq!(
                e.message,
                format!(
                    "Secret in version \"v1\" cannot be handled as a Secret: json: cannot unmarshal {found} into Go struct field Secret.stringData of type {ty}"
                ),
                "{sd}"
            );
        }

        for fv in [
            FieldValidation::Strict,
            FieldValidation::Warn,
            FieldValidation::Ignore,
        ] {
            let opts = WriteOptions {
                field_validation: fv,
                ..Default::default()
            };
            for (sd, found, ty) in &cases {
                let decoded = format!(
                    "\": json: cannot unmarshal {found} into Go struct field Secret.stringData of type {ty}"
                );
                let merge = serde_json::to_vec(&json!({"stringData": sd})).unwrap();
                let json_patch =
                    serde_json::to_vec(&json!([{"op": "add", "path": "/stringData", "value": sd}]))
                        .unwrap();
                for (pt, body) in [(PatchType::Merge, &merge), (PatchType::Json, &json_patch)] {
                    let e = svc
                        .patch(&secrets, "default", "good", pt, body, Main, &opts)
                        .await
                        .unwrap_err();
                    assert_eq!(e.code, 422, "{fv:?} {pt:?} {sd}: {e:?}");
                    assert_eq!(e.reason, "Invalid", "{e:?}");
                    assert!(
                        e.message.ends_with(&decoded),
                        "{fv:?} {pt:?} {sd}: {}",
                        e.message
                    );
                    assert!(
                        e.message.contains("patch: Invalid value: "),
                        "{}",
                        e.message
                    );
                }
            }
            // A strategic merge patch's result is converted from unstructured, not decoded
            // from JSON: the converter's wording, and the patch as Go prints it.
            for (patch, want) in [
                (
                    br#"{"stringData": {"a": 1}}"#.as_slice(),
                    r#"Invalid value: "map[stringData:map[a:1]]": cannot convert int64 to string"#,
                ),
                (
                    br#"{"stringData": {"a": true}}"#.as_slice(),
                    r#"Invalid value: "map[stringData:map[a:true]]": unrecognized type: string"#,
                ),
                (
                    br#"{"stringData": {"a": 1.5}}"#.as_slice(),
                    r#"Invalid value: "map[stringData:map[a:1.5]]": unrecognized type: string"#,
                ),
            ] {
                let e = svc
                    .patch(
                        &secrets,
                        "default",
                        "good",
                        PatchType::Strategic,
                        patch,
                        Main,
                        &opts,
                    )
                    .await
                    .unwrap_err();
                assert_eq!(e.code, 422, "{fv:?}: {e:?}");
                assert!(e.message.ends_with(want), "{fv:?}: {}", e.message);
            }
        }
        let stored = svc.get(&secrets, "default", "good").unwrap();
        assert_eq!(stored.rv, before, "nothing was written");
        assert_eq!(stored.value()["data"], json!({"k": "dg=="}));
        assert!(stored.value().get("stringData").is_none());
        drop(svc);
        let _ = std::fs::remove_dir_all(dir);
    }

    /// A Pod's `/status` write takes the request's labels and annotations but keeps the stored
    /// owner references (kube's `podStatusStrategy.PrepareForUpdate` resets only `spec`,
    /// `deletionTimestamp` and `ownerReferences`); the status manager owns what it set.
    #[tokio::test]
    async fn a_pod_status_write_keeps_its_labels_and_annotations() {
        let (svc, dir) = bootstrapped("pod-status-metadata").await;
        let pods = svc.registry.lookup("", "v1", "pods").unwrap();
        let pod = json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "ps", "namespace": "default", "uid": "u-ps", "generation": 1,
                "creationTimestamp": "2026-11-01T00:00:00Z", "labels": {"app": "ps"},
                "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                    "name": "rs", "uid": "u-rs", "controller": true}]},
            "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]},
            "status": {"phase": "Pending", "qosClass": "BestEffort"}});
        svc.store
            .write(crate::store::WriteOp::Put {
                key: crate::model::ObjectKey::new("pods", "default", "ps"),
                value: pod,
                precondition: crate::store::Precondition::MustNotExist,
            })
            .await
            .unwrap();
        let body = br#"{"metadata": {"labels": {"viastatus": "yes"}, "annotations": {"st": "1"},
            "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "other",
                "uid": "u-other"}]},
            "spec": {"nodeName": "elsewhere"},
            "status": {"phase": "Running"}}"#;
        let w = svc
            .patch(
                &pods,
                "default",
                "ps",
                crate::patch::PatchType::Merge,
                body,
                super::Subresource::Status,
                &WriteOptions::default(),
            )
            .await
            .unwrap();
        let got = w.object.value();
        assert_eq!(
            got["metadata"]["labels"],
            json!({"app": "ps", "viastatus": "yes"}),
            "{got}"
        );
        assert_eq!(got["metadata"]["annotations"], json!({"st": "1"}), "{got}");
        assert_eq!(
            got["metadata"]["ownerReferences"],
            json!([{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs",
                "uid": "u-rs", "controller": true}]),
            "{got}"
        );
        assert!(got.pointer("/spec/nodeName").is_none(), "{got}");
        assert_eq!(got["status"]["phase"], "Running", "{got}");
        assert_eq!(got["metadata"]["generation"], 1, "{got}");
        assert_eq!(got["metadata"]["uid"], "u-ps", "{got}");
        let entries = got["metadata"]["managedFields"].as_array().cloned();
        let status = entries
            .unwrap_or_default()
            .into_iter()
            .find(|e| e["subresource"] == "status")
            .unwrap_or_else(|| panic!("no status manager: {got}"));
        let fields = &status["fieldsV1"];
        assert_eq!(
            fields["f:metadata"]["f:labels"]["f:viastatus"],
            json!({}),
            "{status}"
        );
        assert_eq!(
            fields["f:metadata"]["f:annotations"]["f:st"],
            json!({}),
            "{status}"
        );
        assert!(
            fields["f:metadata"].get("f:ownerReferences").is_none(),
            "{status}"
        );
        assert!(fields.get("f:spec").is_none(), "{status}");
        drop(svc);
        let _ = std::fs::remove_dir_all(dir);
    }

    /// A Deployment's `/status` write keeps the stored labels (kube's
    /// `deploymentStatusStrategy.PrepareForUpdate` resets `spec` and `labels`) and takes the
    /// request's annotations.
    #[tokio::test]
    async fn a_deployment_status_write_keeps_the_stored_labels() {
        let (svc, dir) = bootstrapped("deployment-status-metadata").await;
        let deploys = svc.registry.lookup("apps", "v1", "deployments").unwrap();
        let mut web = web_deployment();
        web["metadata"]["labels"] = json!({"app": "web"});
        svc.create(&deploys, "default", web, &WriteOptions::default())
            .await
            .unwrap();
        let body = br#"{"metadata": {"labels": {"app": "other", "viastatus": "yes"},
            "annotations": {"st": "1"}},
            "spec": {"replicas": 5},
            "status": {"observedGeneration": 1}}"#;
        let w = svc
            .patch(
                &deploys,
                "default",
                "web",
                crate::patch::PatchType::Merge,
                body,
                super::Subresource::Status,
                &WriteOptions::default(),
            )
            .await
            .unwrap();
        let got = w.object.value();
        assert_eq!(got["metadata"]["labels"], json!({"app": "web"}), "{got}");
        assert_eq!(got["metadata"]["annotations"], json!({"st": "1"}), "{got}");
        assert_eq!(got["spec"]["replicas"], 1, "{got}");
        assert_eq!(got["status"]["observedGeneration"], 1, "{got}");
        assert_eq!(got["metadata"]["generation"], 1, "{got}");
        drop(svc);
        let _ = std::fs::remove_dir_all(dir);
    }

    /// Time fields are read as kube's `metav1.Time` and `MicroTime` read them and stored as kube
    /// writes them back, wherever they come from: a body's fields, its `managedFields` (taken
    /// out before the object's own decode), a patch's result, a server-side apply's result. A bad
    /// one is the decoder's 400, the patcher's 422 naming the patch, or the apply's conversion
    /// error (500, no reason).
    #[tokio::test]
    async fn times_are_refused_or_stored_as_kube_writes_them() {
        use super::Subresource::Main;
        use crate::patch::PatchType;
        let (svc, dir) = bootstrapped("times").await;
        let leases = svc
            .registry
            .lookup("coordination.k8s.io", "v1", "leases")
            .unwrap();
        let cms = svc.registry.lookup("", "v1", "configmaps").unwrap();
        let opts = WriteOptions::default();
        let micro = "\"2006-01-02T15:04:05.000000Z07:00\"";
        let lease = |name: &str, renew: &str| {
            json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                "metadata": {"name": name}, "spec": {"holderIdentity": "a", "renewTime": renew}})
        };
        let w = svc
            .create(
                &leases,
                "default",
                lease("l1", "2026-12-06T21:00:00.123456+02:00"),
                &opts,
            )
            .await
            .unwrap();
        assert_eq!(
            w.object.value()["spec"]["renewTime"],
            "2026-12-06T19:00:00.123456Z"
        );
        for (renew, rest, elem) in [
            ("garbage", "garbage", "2006"),
            ("2026-12-06T21:00:00Z", "Z", ".000000"),
            ("2026-12-06T21:00:00.123+02:00", ".123+02:00", ".000000"),
        ] {
            let e = svc
                .create(&leases, "default", lease("l2", renew), &opts)
                .await
                .unwrap_err();
            assert_eq!(e.code, 400, "{e:?}");
            assert_eq!(
                e.message,
                format!(
                    "Lease in version \"v1\" cannot be handled as a Lease: parsing time \"{renew}\" as {micro}: cannot parse \"{rest}\" as \"{elem}\""
                )
            );
        }
        // A timestamp the create overwrites is still decoded first, as kube decodes the body.
        let mut bad = lease("l2", "2026-12-06T21:00:00.000000Z");
        bad["metadata"]["creationTimestamp"] = json!("yesterday");
        let e = svc
            .create(&leases, "default", bad, &opts)
            .await
            .unwrap_err();
        assert_eq!(
            e.message,
            "Lease in version \"v1\" cannot be handled as a Lease: parsing time \"yesterday\" as \"2006-01-02T15:04:05Z07:00\": cannot parse \"yesterday\" as \"2006\""
        );
        // A patch's result: the patcher's 422 naming the patch; a good time rewritten.
        let e = svc
            .patch(
                &leases,
                "default",
                "l1",
                PatchType::Merge,
                br#"{"spec": {"renewTime": "garbage"}}"#,
                Main,
                &opts,
            )
            .await
            .unwrap_err();
        assert_eq!((e.code, e.reason), (422, "Invalid"), "{e:?}");
        assert_eq!(e.causes.len(), 1, "{e:?}");
        assert_eq!(e.causes[0].field, "patch");
        assert!(
            e.causes[0].message.ends_with(&format!(
                ": parsing time \"garbage\" as {micro}: cannot parse \"garbage\" as \"2006\""
            )),
            "{e:?}"
        );
        let w = svc
            .patch(
                &leases,
                "default",
                "l1",
                PatchType::Merge,
                br#"{"spec": {"acquireTime": "2026-12-06T21:00:00.000001-01:00"}}"#,
                Main,
                &opts,
            )
            .await
            .unwrap();
        assert_eq!(
            w.object.value()["spec"]["acquireTime"],
            "2026-12-06T22:00:00.000001Z"
        );
        // Server-side apply: the result converted to the kind's type.
        let applier = WriteOptions {
            manager: Some("applier".into()),
            ..Default::default()
        };
        let config = |renew: &str| {
            json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                "metadata": {"name": "l3"}, "spec": {"renewTime": renew}})
            .to_string()
        };
        let e = svc
            .patch(
                &leases,
                "default",
                "l3",
                PatchType::Apply,
                config("garbage").as_bytes(),
                Main,
                &applier,
            )
            .await
            .unwrap_err();
        assert_eq!((e.code, e.reason), (500, ""), "{e:?}");
        assert_eq!(
            e.message,
            format!(
                "failed to convert new object (/l3; coordination.k8s.io/v1, Kind=Lease) to proper version: parsing time \"garbage\" as {micro}: cannot parse \"garbage\" as \"2006\""
            )
        );
        let w = svc
            .patch(
                &leases,
                "default",
                "l3",
                PatchType::Apply,
                config("2026-12-06T21:00:00.500000+02:00").as_bytes(),
                Main,
                &applier,
            )
            .await
            .unwrap();
        assert_eq!(
            w.object.value()["spec"]["renewTime"],
            "2026-12-06T19:00:00.500000Z"
        );
        // `managedFields` a PUT carries: read as kube reads them, though taken out of the body.
        svc.create(
            &cms,
            "default",
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "mf"}, "data": {"a": "b"}}),
            &opts,
        )
        .await
        .unwrap();
        let key = Service::key(&cms, "default", "mf");
        let mut cm = svc.store.get(&key).unwrap().parse().into_owned();
        let entry = |time: &str| {
            json!([{"manager": "m", "operation": "Update", "apiVersion": "v1", "time": time,
                "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:a": {}}}}])
        };
        cm["metadata"]["managedFields"] = entry("2026-12-06T22:02:18+00:00");
        let w = svc
            .update(&cms, "default", "mf", cm.clone(), Main, &opts)
            .await
            .unwrap();
        let got = w.object.value();
        assert_eq!(got["metadata"]["managedFields"][0]["manager"], "m", "{got}");
        assert_eq!(
            got["metadata"]["managedFields"][0]["time"], "2026-12-06T22:02:18Z",
            "{got}"
        );
        cm["metadata"]["managedFields"] = entry("garbage");
        let e = svc
            .update(&cms, "default", "mf", cm, Main, &opts)
            .await
            .unwrap_err();
        assert_eq!(e.code, 400, "{e:?}");
        assert_eq!(
            e.message,
            "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: parsing time \"garbage\" as \"2006-01-02T15:04:05Z07:00\": cannot parse \"garbage\" as \"2006\""
        );
        drop(svc);
        let _ = std::fs::remove_dir_all(dir);
    }

    /// A pod template for the workload kinds, labelled `app: web`.
    fn web_template(restart_policy: &str) -> serde_json::Value {
        json!({"metadata": {"labels": {"app": "web"}},
            "spec": {"restartPolicy": restart_policy,
                "containers": [{"name": "c", "image": "nginx"}]}})
    }

    /// kube answers with its Go structs, which always carry their non-pointer `status` and, in
    /// it, the counters without `omitempty`: a create's answer and every read have them before
    /// any controller wrote a status (whatever status the create sent is reset to them).
    #[tokio::test]
    async fn created_workloads_answer_kubes_zero_status() {
        let (svc, dir) = bootstrapped("zero-status").await;
        let opts = WriteOptions::default();
        let selector = json!({"matchLabels": {"app": "web"}});
        let cases = [
            (
                ("apps", "v1", "deployments"),
                json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
                    "spec": {"selector": selector, "template": web_template("Always")}}),
                json!({}),
            ),
            (
                ("apps", "v1", "replicasets"),
                json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "web"},
                    "spec": {"selector": selector, "template": web_template("Always")},
                    "status": {"replicas": 5, "readyReplicas": 5}}),
                json!({"replicas": 0}),
            ),
            (
                ("apps", "v1", "statefulsets"),
                json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "web"},
                    "spec": {"selector": selector, "template": web_template("Always")}}),
                json!({"replicas": 0, "availableReplicas": 0}),
            ),
            (
                ("apps", "v1", "daemonsets"),
                json!({"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "web"},
                    "spec": {"selector": selector, "template": web_template("Always")}}),
                json!({"currentNumberScheduled": 0, "numberMisscheduled": 0,
                    "desiredNumberScheduled": 0, "numberReady": 0}),
            ),
            (
                ("", "v1", "replicationcontrollers"),
                json!({"apiVersion": "v1", "kind": "ReplicationController",
                    "metadata": {"name": "web"},
                    "spec": {"selector": {"app": "web"}, "template": web_template("Always")}}),
                json!({"replicas": 0}),
            ),
            (
                ("batch", "v1", "jobs"),
                json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "web"},
                    "spec": {"template": web_template("Never")}}),
                json!({}),
            ),
            (
                ("policy", "v1", "poddisruptionbudgets"),
                json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                    "metadata": {"name": "web"}}),
                json!({"disruptionsAllowed": 0, "currentHealthy": 0, "desiredHealthy": 0,
                    "expectedPods": 0}),
            ),
        ];
        for ((group, version, resource), obj, want) in cases {
            let ri = svc.registry.lookup(group, version, resource).unwrap();
            let w = svc.create(&ri, "default", obj, &opts).await.unwrap();
            let got = w.object.value();
            assert_eq!(got["status"], want, "{resource}: {got}");
            let read = svc.get(&ri, "default", "web").unwrap();
            assert_eq!(read.value()["status"], want, "{resource}");
        }
        // A StatefulSet's `spec.serviceName` has no `omitempty` either; a PDB's `spec` is a
        // struct.
        let sets = svc.registry.lookup("apps", "v1", "statefulsets").unwrap();
        let set = svc.get(&sets, "default", "web").unwrap();
        assert_eq!(set.value()["spec"]["serviceName"], "");
        let pdbs = svc
            .registry
            .lookup("policy", "v1", "poddisruptionbudgets")
            .unwrap();
        assert_eq!(
            svc.get(&pdbs, "default", "web").unwrap().value()["spec"],
            json!({})
        );
        drop(svc);
        let _ = std::fs::remove_dir_all(dir);
    }

    /// A Node's status keeps what its kubelet registered with and has kube's zero values for the
    /// rest: `daemonEndpoints.kubeletEndpoint.Port` and every `nodeInfo` string.
    #[tokio::test]
    async fn a_created_node_has_its_zero_daemon_endpoints_and_node_info() {
        let (svc, dir) = bootstrapped("zero-node").await;
        let opts = WriteOptions::default();
        let nodes = svc.registry.lookup("", "v1", "nodes").unwrap();
        let bare = json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}});
        let w = svc.create(&nodes, "", bare, &opts).await.unwrap();
        let got = w.object.value();
        assert_eq!(got["spec"], json!({}), "{got}");
        assert_eq!(
            got["status"],
            json!({"daemonEndpoints": {"kubeletEndpoint": {"Port": 0}},
                "nodeInfo": {"machineID": "", "systemUUID": "", "bootID": "", "kernelVersion": "",
                    "osImage": "", "containerRuntimeVersion": "", "kubeletVersion": "",
                    "kubeProxyVersion": "", "operatingSystem": "", "architecture": ""}}),
            "{got}"
        );
        let registered = json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n2"},
            "status": {"daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
                "nodeInfo": {"kubeletVersion": "v1.34.0", "architecture": "amd64"}}});
        let w = svc.create(&nodes, "", registered, &opts).await.unwrap();
        let status = &w.object.value()["status"];
        assert_eq!(status["daemonEndpoints"]["kubeletEndpoint"]["Port"], 10250);
        let info = status["nodeInfo"].as_object().unwrap();
        assert_eq!(info.len(), 10, "{status}");
        assert_eq!(info["kubeletVersion"], "v1.34.0");
        assert_eq!(info["architecture"], "amd64");
        assert_eq!(info["machineID"], "");
        drop(svc);
        let _ = std::fs::remove_dir_all(dir);
    }

    /// A controller's status write sets what it sends; what it leaves out of a struct kube
    /// always writes reads as its zero value, as after Go's decoding.
    #[tokio::test]
    async fn a_status_write_over_the_zero_status() {
        let (svc, dir) = bootstrapped("zero-status-write").await;
        let opts = WriteOptions::default();
        let sets = svc.registry.lookup("apps", "v1", "daemonsets").unwrap();
        let ds = json!({"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "web"},
            "spec": {"selector": {"matchLabels": {"app": "web"}},
                "template": web_template("Always")}});
        svc.create(&sets, "default", ds, &opts).await.unwrap();
        let body = br#"{"status": {"observedGeneration": 1, "desiredNumberScheduled": 2,
            "currentNumberScheduled": 2, "numberReady": 1, "numberAvailable": 1}}"#;
        let w = svc
            .patch(
                &sets,
                "default",
                "web",
                crate::patch::PatchType::Merge,
                body,
                super::Subresource::Status,
                &opts,
            )
            .await
            .unwrap();
        assert_eq!(
            w.object.value()["status"],
            json!({"currentNumberScheduled": 2, "numberMisscheduled": 0,
                "desiredNumberScheduled": 2, "numberReady": 1, "observedGeneration": 1,
                "numberAvailable": 1})
        );
        // A field the patch removes is its zero value again.
        let w = svc
            .patch(
                &sets,
                "default",
                "web",
                crate::patch::PatchType::Merge,
                br#"{"status": {"numberReady": null}}"#,
                super::Subresource::Status,
                &opts,
            )
            .await
            .unwrap();
        assert_eq!(w.object.value()["status"]["numberReady"], 0);
        assert_eq!(w.object.value()["status"]["currentNumberScheduled"], 2);
        drop(svc);
        let _ = std::fs::remove_dir_all(dir);
    }

    /// The zero fields are the server's: a create's managed fields own none of them (kube's
    /// zero object of the kind has them, as the created object), and a PUT of what a read
    /// answers is a no-op.
    #[tokio::test]
    async fn zero_fields_are_nobodys_and_a_put_back_is_a_no_op() {
        let (svc, dir) = bootstrapped("zero-fields-managed").await;
        let opts = WriteOptions {
            manager: Some("creator".into()),
            ..Default::default()
        };
        let sets = svc.registry.lookup("apps", "v1", "statefulsets").unwrap();
        let set = json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db"},
            "spec": {"selector": {"matchLabels": {"app": "web"}},
                "template": web_template("Always")}});
        let w = svc.create(&sets, "default", set, &opts).await.unwrap();
        let got = w.object.value().clone();
        assert_eq!(
            got["status"],
            json!({"replicas": 0, "availableReplicas": 0})
        );
        let managed = got["metadata"]["managedFields"].to_string();
        assert!(managed.contains("f:selector"), "{managed}");
        assert!(!managed.contains("f:status"), "{managed}");
        assert!(!managed.contains("f:serviceName"), "{managed}");
        let policies = svc
            .registry
            .lookup("networking.k8s.io", "v1", "networkpolicies")
            .unwrap();
        let np = json!({"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
            "metadata": {"name": "np"}, "spec": {"ingress": [{}]}});
        let w = svc.create(&policies, "default", np, &opts).await.unwrap();
        let np = w.object.value();
        assert_eq!(np["spec"]["podSelector"], json!({}), "{np}");
        let managed = np["metadata"]["managedFields"].to_string();
        assert!(managed.contains("f:ingress"), "{managed}");
        assert!(!managed.contains("f:podSelector"), "{managed}");

        // What a read answers, put back: nothing to store.
        let stored = svc.get(&sets, "default", "db").unwrap();
        let put = svc
            .update(
                &sets,
                "default",
                "db",
                stored.value().clone(),
                super::Subresource::Main,
                &opts,
            )
            .await
            .unwrap();
        assert_eq!(put.object.rv, stored.rv, "a no-op");
        drop(svc);
        let _ = std::fs::remove_dir_all(dir);
    }

    /// An HPA: v2 writes `desiredReplicas: 0` (its `currentReplicas` has `omitempty`), v1 both;
    /// a v1 status write stores no zero `currentReplicas` in the stored v2.
    #[tokio::test]
    async fn hpa_zero_status_in_each_version() {
        let (svc, dir) = bootstrapped("zero-hpa").await;
        let opts = WriteOptions::default();
        let v2 = svc
            .registry
            .lookup("autoscaling", "v2", "horizontalpodautoscalers")
            .unwrap();
        let v1 = svc
            .registry
            .lookup("autoscaling", "v1", "horizontalpodautoscalers")
            .unwrap();
        let hpa = json!({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "h"},
            "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment",
                "name": "web"}, "maxReplicas": 3}});
        let w = svc.create(&v2, "default", hpa, &opts).await.unwrap();
        assert_eq!(w.object.value()["status"], json!({"desiredReplicas": 0}));
        assert_eq!(
            read_as(&svc, &v1, "h").await["status"],
            json!({"currentReplicas": 0, "desiredReplicas": 0})
        );
        svc.patch(
            &v1,
            "default",
            "h",
            crate::patch::PatchType::Merge,
            br#"{"status": {"desiredReplicas": 2}}"#,
            super::Subresource::Status,
            &opts,
        )
        .await
        .unwrap();
        let stored = svc.get(&v2, "default", "h").unwrap();
        assert_eq!(stored.value()["status"], json!({"desiredReplicas": 2}));
        assert_eq!(
            read_as(&svc, &v1, "h").await["status"],
            json!({"currentReplicas": 0, "desiredReplicas": 2})
        );
        drop(svc);
        let _ = std::fs::remove_dir_all(dir);
    }
}
