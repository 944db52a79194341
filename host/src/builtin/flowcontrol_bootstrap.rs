//! API Priority and Fairness' bootstrap configuration, as kube-apiserver 1.34's
//! `priority-and-fairness-config-producer` post-start hook keeps it
//! (`pkg/registry/flowcontrol/rest/storage_flowcontrol.go` with the ensurer of
//! `pkg/registry/flowcontrol/ensurer`): the FlowSchemas and PriorityLevelConfigurations of
//! `k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap/default.go`, written through the
//! [`Service`] as `flowcontrol.apiserver.k8s.io/v1` objects (the only version kube 1.34 serves).
//! turtles does not enforce them: no request is classified or queued by them (its in-flight
//! limits are its own, `api/inflight.rs`); they are there for the tools and operators that read
//! them.
//!
//! - **Mandatory** objects (FlowSchemas `exempt`, `catch-all`; levels `exempt`, `catch-all`)
//!   are created when missing and always brought back to kube's spec, with their
//!   `apf.kubernetes.io/autoupdate-spec` annotation set to `"true"`. The one part an operator
//!   may change is the `exempt` level's `spec.exempt` (`nominalConcurrencyShares`,
//!   `lendablePercent`), kube's `plcSpecEqualish`: it is kept as long as the rest is kube's.
//! - **Suggested** objects are created when missing, with the annotation `"true"`; an existing
//!   one is updated only while its annotation reads true (Go's `strconv.ParseBool`), or, without
//!   a readable annotation, while its `metadata.generation` is 1 (nobody changed its spec); the
//!   annotation is then set to what was decided (`"true"` or `"false"`), so an operator's edit is
//!   kept from then on.
//! - An object of either kind that is not in the bootstrap set and whose annotation reads true
//!   is deleted (an object an older version bootstrapped and a newer one dropped, as kube 1.34
//!   dropped `endpoint-controller` and `workload-leader-election`).
//!
//! Specs are compared as kube compares them: v1's defaults applied to both sides, lists in
//! order (`validation::admission::{flow_schema_canonical, priority_level_canonical}`). An
//! object that holds its spec and annotation already is not written. Writes carry kube's field
//! manager, `api-priority-and-fairness-config-producer-v1`. A write that lost a race (a
//! conflict) is left for the next pass, as kube does.
//!
//! When: kube's hook polls every second until one pass succeeds (up to 5 minutes, and the
//! server fails to start without it), then runs a pass every minute. Here one pass runs at
//! every start, tried again every second for up to 30 s when it failed on something that may
//! pass (a conflict, a store that is unavailable; [`ensure_at_start`]), and a failure is logged,
//! not fatal, as for the RBAC bootstrap policy; then [`keep`] runs a pass every minute.
//!
//! kube-apiserver's APF controller also writes each FlowSchema's `Dangling` condition: that is
//! `controllers::apfstatus`.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Map, Value};

use crate::builtin::validation::admission::{flow_schema_canonical, priority_level_canonical};
use crate::model::{meta, ApiError, ObjectKey, ResourceInfo};
use crate::service::{DeleteOptions, Service, Subresource, WriteOptions};
use crate::store::StoreError;

pub const GROUP: &str = "flowcontrol.apiserver.k8s.io";
pub const VERSION: &str = "v1";
pub const API_VERSION: &str = "flowcontrol.apiserver.k8s.io/v1";
pub const FLOW_SCHEMAS: &str = "flowschemas";
pub const PRIORITY_LEVELS: &str = "prioritylevelconfigurations";
/// kube's `AutoUpdateAnnotationKey`.
pub const AUTOUPDATE_ANNOTATION_KEY: &str = "apf.kubernetes.io/autoupdate-spec";
/// The field manager of the ensurer's writes (kube's `fieldManager` in the ensurer).
pub const FIELD_MANAGER: &str = "api-priority-and-fairness-config-producer-v1";
/// How often [`keep`] runs a pass (kube's `wait.PollImmediateUntil(time.Minute, ...)`).
pub const INTERVAL: Duration = Duration::from_secs(60);
/// At start: a failed pass is tried again this often (kube polls every second) ...
const START_RETRY_INTERVAL: Duration = Duration::from_secs(1);
/// ... for this long (kube's hook waits up to 5 minutes, holding the server back; the RBAC
/// bootstrap's 30 s here).
const START_BUDGET: Duration = Duration::from_secs(30);
/// Creates of one object that may meet `AlreadyExists` before it is read again and reconciled
/// (kube loops until one of the two succeeds).
const CREATE_TRIES: usize = 4;

/// Why a pass of the ensurer stopped (kube stops at the first error, as here).
#[derive(Debug, thiserror::Error)]
pub enum EnsureError {
    #[error("flowcontrol.apiserver.k8s.io/v1 {0} is not served")]
    Unserved(&'static str),
    #[error("cannot create {kind} type={strategy} name={name:?}: {source}")]
    Create {
        kind: &'static str,
        strategy: &'static str,
        name: String,
        source: Box<ApiError>,
    },
    #[error(
        "failed to update the {kind}, will retry later type={strategy} name={name:?}: {source}"
    )]
    Update {
        kind: &'static str,
        strategy: &'static str,
        name: String,
        source: Box<ApiError>,
    },
    #[error("gave up on the {kind} {name:?} after {tries} tries: another writer kept creating and deleting it")]
    KeptChanging {
        kind: &'static str,
        name: String,
        tries: usize,
    },
    #[error("failed to list {0}: {1}")]
    List(&'static str, StoreError),
    #[error("failed to delete unwanted APF object {name:?}: {source}")]
    Delete { name: String, source: Box<ApiError> },
}

impl EnsureError {
    /// Whether a later pass may succeed: a race or a store that failed, was unavailable or timed
    /// out; not a kind that is not served nor an object the API refuses.
    pub fn may_pass(&self) -> bool {
        match self {
            Self::Unserved(_) => false,
            Self::KeptChanging { .. } | Self::List(..) => true,
            Self::Create { source, .. }
            | Self::Update { source, .. }
            | Self::Delete { source, .. } => {
                matches!(source.code, 404 | 409 | 429 | 500 | 503 | 504)
            }
        }
    }
}

/// The two kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    FlowSchema,
    PriorityLevelConfiguration,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::FlowSchema => "FlowSchema",
            Kind::PriorityLevelConfiguration => "PriorityLevelConfiguration",
        }
    }

    pub fn resource(self) -> &'static str {
        match self {
            Kind::FlowSchema => FLOW_SCHEMAS,
            Kind::PriorityLevelConfiguration => PRIORITY_LEVELS,
        }
    }
}

/// How a bootstrap object is kept (kube's ensure strategies).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strategy {
    /// Always made to match.
    Mandatory,
    /// Made to match while `apf.kubernetes.io/autoupdate-spec` allows it.
    Suggested,
}

impl Strategy {
    pub fn name(self) -> &'static str {
        match self {
            Strategy::Mandatory => "mandatory",
            Strategy::Suggested => "suggested",
        }
    }
}

/// One bootstrap object and how it is kept.
#[derive(Debug, Clone)]
pub struct Bootstrap {
    pub kind: Kind,
    pub strategy: Strategy,
    pub object: Value,
}

impl Bootstrap {
    pub fn name(&self) -> &str {
        meta::name(&self.object)
    }
}

// ---------------------------------------------------------------------------------------------
// The configuration (default.go, kube 1.34)
// ---------------------------------------------------------------------------------------------

/// A FlowSchema subject.
#[derive(Clone, Copy)]
enum Subject {
    Group(&'static str),
    User(&'static str),
    /// A ServiceAccount of `kube-system` (`*`: any).
    KubeSystemAccount(&'static str),
}

/// A FlowSchema resource rule.
struct ResourceRule {
    verbs: &'static [&'static str],
    api_groups: &'static [&'static str],
    resources: &'static [&'static str],
    cluster_scope: bool,
    namespaces: &'static [&'static str],
}

/// A FlowSchema non-resource rule.
struct UrlRule {
    verbs: &'static [&'static str],
    urls: &'static [&'static str],
}

/// A FlowSchema: one rule (`PolicyRulesWithSubjects`), as each of kube's has.
struct Schema {
    name: &'static str,
    level: &'static str,
    precedence: u32,
    /// `ByUser`, `ByNamespace`, or no distinguisher.
    distinguisher: Option<&'static str>,
    subjects: &'static [Subject],
    resource_rules: &'static [ResourceRule],
    url_rules: &'static [UrlRule],
}

/// A limited level's queuing (`limitResponse` `Queue`; without it, `Reject`).
struct Queuing {
    queues: u32,
    hand_size: u32,
    queue_length_limit: u32,
}

/// A PriorityLevelConfiguration.
enum Level {
    Exempt {
        name: &'static str,
        shares: u32,
        lendable: u32,
    },
    Limited {
        name: &'static str,
        shares: u32,
        lendable: u32,
        queuing: Option<Queuing>,
    },
}

const ANY: &[&str] = &["*"];
const MASTERS: &str = "system:masters";
const NODES: &str = "system:nodes";
const SERVICE_ACCOUNTS: &str = "system:serviceaccounts";
const CONTROLLER_MANAGER: &str = "system:kube-controller-manager";
const SCHEDULER: &str = "system:kube-scheduler";
const EVERYONE: &[Subject] = &[
    Subject::Group("system:unauthenticated"),
    Subject::Group("system:authenticated"),
];
/// Every resource, cluster-scoped or in any namespace.
const EVERY_RESOURCE: &[ResourceRule] = &[ResourceRule {
    verbs: ANY,
    api_groups: ANY,
    resources: ANY,
    cluster_scope: true,
    namespaces: ANY,
}];
const EVERY_URL: &[UrlRule] = &[UrlRule {
    verbs: ANY,
    urls: ANY,
}];
const LEASES: ResourceRule = ResourceRule {
    verbs: ANY,
    api_groups: &["coordination.k8s.io"],
    resources: &["leases"],
    cluster_scope: false,
    namespaces: ANY,
};

const MANDATORY_SCHEMAS: &[Schema] = &[
    Schema {
        name: "exempt",
        level: "exempt",
        precedence: 1,
        distinguisher: None,
        subjects: &[Subject::Group(MASTERS)],
        resource_rules: EVERY_RESOURCE,
        url_rules: EVERY_URL,
    },
    Schema {
        name: "catch-all",
        level: "catch-all",
        precedence: 10000,
        distinguisher: Some("ByUser"),
        subjects: EVERYONE,
        resource_rules: EVERY_RESOURCE,
        url_rules: EVERY_URL,
    },
];

/// In kube's order (`SuggestedFlowSchemas`).
const SUGGESTED_SCHEMAS: &[Schema] = &[
    Schema {
        name: "system-nodes",
        level: "system",
        precedence: 500,
        distinguisher: Some("ByUser"),
        subjects: &[Subject::Group(NODES)],
        resource_rules: EVERY_RESOURCE,
        url_rules: EVERY_URL,
    },
    Schema {
        name: "system-node-high",
        level: "node-high",
        precedence: 400,
        distinguisher: Some("ByUser"),
        subjects: &[Subject::Group(NODES)],
        resource_rules: &[
            ResourceRule {
                verbs: ANY,
                api_groups: &[""],
                resources: &["nodes", "nodes/status"],
                cluster_scope: true,
                namespaces: ANY,
            },
            LEASES,
        ],
        url_rules: &[],
    },
    Schema {
        name: "probes",
        level: "exempt",
        precedence: 2,
        distinguisher: None,
        subjects: EVERYONE,
        resource_rules: &[],
        url_rules: &[UrlRule {
            verbs: &["get"],
            urls: &["/healthz", "/readyz", "/livez"],
        }],
    },
    Schema {
        name: "system-leader-election",
        level: "leader-election",
        precedence: 100,
        distinguisher: Some("ByUser"),
        subjects: &[
            Subject::User(CONTROLLER_MANAGER),
            Subject::User(SCHEDULER),
            Subject::KubeSystemAccount("*"),
        ],
        resource_rules: &[ResourceRule {
            verbs: &["get", "create", "update"],
            ..LEASES
        }],
        url_rules: &[],
    },
    Schema {
        name: "kube-controller-manager",
        level: "workload-high",
        precedence: 800,
        distinguisher: Some("ByNamespace"),
        subjects: &[Subject::User(CONTROLLER_MANAGER)],
        resource_rules: EVERY_RESOURCE,
        url_rules: EVERY_URL,
    },
    Schema {
        name: "kube-scheduler",
        level: "workload-high",
        precedence: 800,
        distinguisher: Some("ByNamespace"),
        subjects: &[Subject::User(SCHEDULER)],
        resource_rules: EVERY_RESOURCE,
        url_rules: EVERY_URL,
    },
    Schema {
        name: "kube-system-service-accounts",
        level: "workload-high",
        precedence: 900,
        distinguisher: Some("ByNamespace"),
        subjects: &[Subject::KubeSystemAccount("*")],
        resource_rules: EVERY_RESOURCE,
        url_rules: EVERY_URL,
    },
    Schema {
        name: "service-accounts",
        level: "workload-low",
        precedence: 9000,
        distinguisher: Some("ByUser"),
        subjects: &[Subject::Group(SERVICE_ACCOUNTS)],
        resource_rules: EVERY_RESOURCE,
        url_rules: EVERY_URL,
    },
    Schema {
        name: "global-default",
        level: "global-default",
        precedence: 9900,
        distinguisher: Some("ByUser"),
        subjects: EVERYONE,
        resource_rules: EVERY_RESOURCE,
        url_rules: EVERY_URL,
    },
];

/// In kube's order (`MandatoryPriorityLevelConfigurations`: `exempt` last, so a start that
/// stops half way leaves the whole set to be made at the next).
const MANDATORY_LEVELS: &[Level] = &[
    Level::Limited {
        name: "catch-all",
        shares: 5,
        lendable: 0,
        queuing: None,
    },
    Level::Exempt {
        name: "exempt",
        shares: 0,
        lendable: 0,
    },
];

/// `queues`, `handSize` 6, `queueLengthLimit` 50: what kube's suggested levels queue with.
const fn queue(queues: u32) -> Option<Queuing> {
    Some(Queuing {
        queues,
        hand_size: 6,
        queue_length_limit: 50,
    })
}

/// In kube's order (`SuggestedPriorityLevelConfigurations`).
const SUGGESTED_LEVELS: &[Level] = &[
    Level::Limited {
        name: "system",
        shares: 30,
        lendable: 33,
        queuing: queue(64),
    },
    Level::Limited {
        name: "node-high",
        shares: 40,
        lendable: 25,
        queuing: queue(64),
    },
    Level::Limited {
        name: "leader-election",
        shares: 10,
        lendable: 0,
        queuing: Some(Queuing {
            queues: 16,
            hand_size: 4,
            queue_length_limit: 50,
        }),
    },
    Level::Limited {
        name: "workload-high",
        shares: 40,
        lendable: 50,
        queuing: queue(128),
    },
    Level::Limited {
        name: "workload-low",
        shares: 100,
        lendable: 90,
        queuing: queue(128),
    },
    Level::Limited {
        name: "global-default",
        shares: 20,
        lendable: 50,
        queuing: queue(128),
    },
];

/// The metadata kube's bootstrap objects carry: the name and the autoupdate annotation.
fn bootstrap_metadata(name: &str) -> Value {
    json!({"name": name, "annotations": {AUTOUPDATE_ANNOTATION_KEY: "true"}})
}

/// The object (fields in the order kube's v1 types write them).
fn schema_object(s: &Schema) -> Value {
    let subjects: Vec<Value> = s
        .subjects
        .iter()
        .map(|subject| match *subject {
            Subject::Group(name) => json!({"kind": "Group", "group": {"name": name}}),
            Subject::User(name) => json!({"kind": "User", "user": {"name": name}}),
            Subject::KubeSystemAccount(name) => json!({"kind": "ServiceAccount",
                "serviceAccount": {"namespace": "kube-system", "name": name}}),
        })
        .collect();
    let mut rule = Map::new();
    rule.insert("subjects".into(), json!(subjects));
    if !s.resource_rules.is_empty() {
        let rules: Vec<Value> = s
            .resource_rules
            .iter()
            .map(|r| {
                let mut o = Map::new();
                o.insert("verbs".into(), json!(r.verbs));
                o.insert("apiGroups".into(), json!(r.api_groups));
                o.insert("resources".into(), json!(r.resources));
                if r.cluster_scope {
                    o.insert("clusterScope".into(), json!(true));
                }
                o.insert("namespaces".into(), json!(r.namespaces));
                Value::Object(o)
            })
            .collect();
        rule.insert("resourceRules".into(), json!(rules));
    }
    if !s.url_rules.is_empty() {
        let rules: Vec<Value> = s
            .url_rules
            .iter()
            .map(|r| json!({"verbs": r.verbs, "nonResourceURLs": r.urls}))
            .collect();
        rule.insert("nonResourceRules".into(), json!(rules));
    }
    let mut spec = Map::new();
    spec.insert(
        "priorityLevelConfiguration".into(),
        json!({"name": s.level}),
    );
    spec.insert("matchingPrecedence".into(), json!(s.precedence));
    if let Some(d) = s.distinguisher {
        spec.insert("distinguisherMethod".into(), json!({"type": d}));
    }
    spec.insert("rules".into(), json!([rule]));
    json!({"apiVersion": API_VERSION, "kind": "FlowSchema",
        "metadata": bootstrap_metadata(s.name), "spec": spec})
}

/// The object (fields in the order kube's v1 types write them).
fn level_object(l: &Level) -> Value {
    let (name, spec) = match l {
        Level::Exempt {
            name,
            shares,
            lendable,
        } => (
            name,
            json!({"type": "Exempt",
                "exempt": {"nominalConcurrencyShares": shares, "lendablePercent": lendable}}),
        ),
        Level::Limited {
            name,
            shares,
            lendable,
            queuing,
        } => {
            let response = match queuing {
                Some(q) => json!({"type": "Queue", "queuing": {"queues": q.queues,
                    "handSize": q.hand_size, "queueLengthLimit": q.queue_length_limit}}),
                None => json!({"type": "Reject"}),
            };
            (
                name,
                json!({"type": "Limited", "limited": {"nominalConcurrencyShares": shares,
                    "limitResponse": response, "lendablePercent": lendable}}),
            )
        }
    };
    json!({"apiVersion": API_VERSION, "kind": "PriorityLevelConfiguration",
        "metadata": bootstrap_metadata(name), "spec": spec})
}

/// kube 1.34's bootstrap configuration in the order its hook ensures it: the suggested levels,
/// the suggested FlowSchemas, the mandatory levels, the mandatory FlowSchemas.
pub fn bootstrap_objects() -> Vec<Bootstrap> {
    let levels = |set: &[Level], strategy| -> Vec<Bootstrap> {
        set.iter()
            .map(|l| Bootstrap {
                kind: Kind::PriorityLevelConfiguration,
                strategy,
                object: level_object(l),
            })
            .collect()
    };
    let schemas = |set: &[Schema], strategy| -> Vec<Bootstrap> {
        set.iter()
            .map(|s| Bootstrap {
                kind: Kind::FlowSchema,
                strategy,
                object: schema_object(s),
            })
            .collect()
    };
    let mut out = levels(SUGGESTED_LEVELS, Strategy::Suggested);
    out.extend(schemas(SUGGESTED_SCHEMAS, Strategy::Suggested));
    out.extend(levels(MANDATORY_LEVELS, Strategy::Mandatory));
    out.extend(schemas(MANDATORY_SCHEMAS, Strategy::Mandatory));
    out
}

// ---------------------------------------------------------------------------------------------
// What to write (kube's ensurer, pure)
// ---------------------------------------------------------------------------------------------

/// Go's `strconv.ParseBool`.
fn parse_bool(s: &str) -> Option<bool> {
    match s {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

/// The object's `apf.kubernetes.io/autoupdate-spec` annotation, if it has one.
fn autoupdate_annotation(obj: &Value) -> Option<&str> {
    obj.pointer("/metadata/annotations")
        .and_then(|a| a.get(AUTOUPDATE_ANNOTATION_KEY))
        .and_then(Value::as_str)
}

/// kube's `shouldUpdateSpec`: the annotation when it reads as a boolean; else whether nobody
/// changed the spec (`metadata.generation` still 1).
fn should_update_spec(current: &Value) -> bool {
    if let Some(b) = autoupdate_annotation(current).and_then(parse_bool) {
        return b;
    }
    current
        .pointer("/metadata/generation")
        .and_then(Value::as_i64)
        == Some(1)
}

/// kube's `flowSchemaSpecEqual` and `plcSpecEqualish`: whether the stored spec is the bootstrap
/// one, defaults applied to both; the `exempt` level's `spec.exempt` is the operator's.
fn spec_equalish(b: &Bootstrap, current: &Value) -> bool {
    let null = Value::Null;
    let want = b.object.get("spec").unwrap_or(&null);
    let have = current.get("spec").unwrap_or(&null);
    match b.kind {
        Kind::FlowSchema => flow_schema_canonical(want) == flow_schema_canonical(have),
        Kind::PriorityLevelConfiguration => {
            let mut want = priority_level_canonical(want);
            let have = priority_level_canonical(have);
            if b.name() == "exempt" {
                if have["exempt"].is_null() {
                    return false;
                }
                want["exempt"] = have["exempt"].clone();
            }
            want == have
        }
    }
}

/// kube's `ReviseIfNeeded`: the object to write in place of `current` (its spec replaced by the
/// bootstrap one, its annotation set), or `None` when it holds what its strategy asks for.
pub fn revise(b: &Bootstrap, current: &Value) -> Option<Value> {
    let auto = match b.strategy {
        Strategy::Mandatory => true,
        Strategy::Suggested => should_update_spec(current),
    };
    let update_annotation = autoupdate_annotation(current).and_then(parse_bool) != Some(auto);
    let spec_changed = auto && !spec_equalish(b, current);
    if !update_annotation && !spec_changed {
        return None;
    }
    let mut out = current.clone();
    let obj = out.as_object_mut()?;
    if spec_changed {
        obj.insert(
            "spec".into(),
            b.object.get("spec").cloned().unwrap_or(Value::Null),
        );
    }
    if update_annotation {
        let m = obj
            .entry("metadata")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Some(m) = m.as_object_mut() {
            let a = m
                .entry("annotations")
                .or_insert_with(|| Value::Object(Map::new()));
            if !a.is_object() {
                *a = Value::Object(Map::new());
            }
            if let Some(a) = a.as_object_mut() {
                a.insert(AUTOUPDATE_ANNOTATION_KEY.into(), json!(auto.to_string()));
            }
        }
    }
    Some(out)
}

/// kube's `RemoveUnwantedObjects` test: an object not in the bootstrap set whose annotation
/// reads true (one without it is someone's own; one that does not read as a boolean is left
/// for an operator).
pub fn unwanted(obj: &Value, wanted: &[&str]) -> bool {
    !wanted.contains(&meta::name(obj))
        && autoupdate_annotation(obj).and_then(parse_bool) == Some(true)
}

// ---------------------------------------------------------------------------------------------
// The writes
// ---------------------------------------------------------------------------------------------

/// What one pass wrote.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Ensured {
    pub created: usize,
    pub updated: usize,
    pub deleted: usize,
    /// Updates that lost a race with another writer, left for the next pass.
    pub raced: usize,
}

impl Ensured {
    pub fn wrote(&self) -> bool {
        self.created + self.updated + self.deleted > 0
    }
}

enum Outcome {
    Created,
    Updated,
    Unchanged,
    Raced,
}

fn write_options() -> WriteOptions {
    WriteOptions {
        manager: Some(FIELD_MANAGER.to_owned()),
        ..WriteOptions::default()
    }
}

/// kube's `EnsureConfiguration` of one object.
async fn ensure_one(
    service: &Service,
    ri: &ResourceInfo,
    b: &Bootstrap,
) -> Result<Outcome, EnsureError> {
    let name = b.name();
    let (kind, strategy) = (b.kind.name(), b.strategy.name());
    let key = ObjectKey::new(&ri.group_resource(), "", name);
    let opts = write_options();
    for _ in 0..CREATE_TRIES {
        let Some(current) = service.store.get(&key) else {
            match service.create(ri, "", b.object.clone(), &opts).await {
                Ok(_) => {
                    tracing::debug!(kind, strategy, name, "created the APF bootstrap object");
                    return Ok(Outcome::Created);
                }
                // Made meanwhile: look at that one.
                Err(e) if e.code == 409 && e.reason == "AlreadyExists" => continue,
                Err(source) => {
                    return Err(EnsureError::Create {
                        kind,
                        strategy,
                        name: name.to_owned(),
                        source: Box::new(source),
                    })
                }
            }
        };
        let Some(revised) = revise(b, &current.parse()) else {
            return Ok(Outcome::Unchanged);
        };
        return match service
            .update(ri, "", name, revised, Subresource::Main, &opts)
            .await
        {
            Ok(_) => {
                tracing::info!(kind, strategy, name, "updated the APF bootstrap object");
                Ok(Outcome::Updated)
            }
            Err(e) if e.code == 409 && e.reason == "Conflict" => {
                tracing::debug!(
                    kind,
                    strategy,
                    name,
                    "the APF bootstrap object was updated concurrently; it is looked at again at the next pass"
                );
                Ok(Outcome::Raced)
            }
            Err(source) => Err(EnsureError::Update {
                kind,
                strategy,
                name: name.to_owned(),
                source: Box::new(source),
            }),
        };
    }
    Err(EnsureError::KeptChanging {
        kind,
        name: name.to_owned(),
        tries: CREATE_TRIES,
    })
}

/// kube's `RemoveUnwantedObjects` for one kind.
async fn remove_unwanted(
    service: &Service,
    ri: &ResourceInfo,
    kind: Kind,
    wanted: &[&str],
) -> Result<usize, EnsureError> {
    let doomed: Vec<String> = service
        .store
        .list(&ri.group_resource(), None)
        .map_err(|e| EnsureError::List(kind.resource(), e))?
        .items
        .values()
        .filter_map(|o| {
            let v = o.parse();
            unwanted(&v, wanted).then(|| meta::name(&*v).to_owned())
        })
        .collect();
    let mut deleted = 0;
    for name in doomed {
        match service
            .delete(ri, "", &name, &DeleteOptions::default())
            .await
        {
            Ok(_) => {
                tracing::info!(kind = kind.name(), name = %name, "deleted an APF object no longer in the bootstrap configuration");
                deleted += 1;
            }
            Err(e) if e.code == 404 => {}
            Err(source) => {
                return Err(EnsureError::Delete {
                    name,
                    source: Box::new(source),
                })
            }
        }
    }
    Ok(deleted)
}

/// One pass of kube's ensurer (`ensure` in `storage_flowcontrol.go`): every bootstrap object in
/// [`bootstrap_objects`]' order, then the unwanted FlowSchemas and levels deleted; stops at the
/// first error.
pub async fn ensure(service: &Service) -> Result<Ensured, EnsureError> {
    let lookup = |kind: Kind| {
        service
            .registry
            .lookup(GROUP, VERSION, kind.resource())
            .ok_or(EnsureError::Unserved(kind.resource()))
    };
    let schemas = lookup(Kind::FlowSchema)?;
    let levels = lookup(Kind::PriorityLevelConfiguration)?;
    let objects = bootstrap_objects();
    let mut done = Ensured::default();
    for b in &objects {
        let ri = match b.kind {
            Kind::FlowSchema => &schemas,
            Kind::PriorityLevelConfiguration => &levels,
        };
        match ensure_one(service, ri, b).await? {
            Outcome::Created => done.created += 1,
            Outcome::Updated => done.updated += 1,
            Outcome::Raced => done.raced += 1,
            Outcome::Unchanged => {}
        }
    }
    let names = |kind: Kind| {
        objects
            .iter()
            .filter(|b| b.kind == kind)
            .map(Bootstrap::name)
            .collect::<Vec<_>>()
    };
    done.deleted += remove_unwanted(
        service,
        &schemas,
        Kind::FlowSchema,
        &names(Kind::FlowSchema),
    )
    .await?;
    done.deleted += remove_unwanted(
        service,
        &levels,
        Kind::PriorityLevelConfiguration,
        &names(Kind::PriorityLevelConfiguration),
    )
    .await?;
    Ok(done)
}

/// The pass at start: [`ensure`], tried again every second for up to 30 s while it fails on
/// something that may pass.
pub async fn ensure_at_start(service: &Service) -> Result<Ensured, EnsureError> {
    ensure_within(service, START_RETRY_INTERVAL, START_BUDGET).await
}

/// [`ensure_at_start`] with its interval and budget.
pub(crate) async fn ensure_within(
    service: &Service,
    interval: Duration,
    budget: Duration,
) -> Result<Ensured, EnsureError> {
    let give_up = tokio::time::Instant::now() + budget;
    loop {
        match ensure(service).await {
            Err(e) if e.may_pass() && tokio::time::Instant::now() + interval <= give_up => {
                tracing::warn!(error = %e, "APF bootstrap ensurer ran into error, will retry");
                tokio::time::sleep(interval).await;
            }
            r => return r,
        }
    }
}

/// A pass every [`INTERVAL`] until the host stops (kube's hook after its first pass).
pub async fn keep(service: Arc<Service>, mut shutdown: tokio::sync::watch::Receiver<bool>) {
    loop {
        tokio::select! {
            () = tokio::time::sleep(INTERVAL) => {}
            _ = shutdown.changed() => return,
        }
        match ensure(&service).await {
            Ok(done) if done.wrote() => {
                tracing::info!(
                    created = done.created,
                    updated = done.updated,
                    deleted = done.deleted,
                    "APF bootstrap configuration restored"
                );
            }
            Ok(_) => {}
            Err(e) => {
                tracing::error!(error = %e, "APF bootstrap ensurer ran into error, will retry later")
            }
        }
    }
}

#[cfg(test)]
mod tests;
