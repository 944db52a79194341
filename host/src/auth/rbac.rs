//! Kubernetes RBAC authorization over stored `rbac.authorization.k8s.io/v1`
//! objects (Role, ClusterRole, RoleBinding, ClusterRoleBinding) given as JSON.
//!
//! This is a port of kube's RBAC authorizer
//! (`k8s.io/kubernetes/plugin/pkg/auth/authorizer/rbac`), its rule resolver
//! (`pkg/registry/rbac/validation/rule.go`), the forbidden message of
//! `k8s.io/apiserver/pkg/endpoints/handlers/responsewriters/errors.go` and a
//! copy of kube 1.34's bootstrap policy
//! (`plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy.go` and
//! `namespace_policy.go`, less the controllers' `system:controller:*` roles)
//! with kube's reconciliation of stored copies with it ([`reconcile`],
//! `component-helpers/auth/rbac/reconciliation`; the writes are
//! `Service::reconcile_bootstrap_policy`'s, at every start).
//!
//! The module is pure: it never performs I/O, it only reads through the
//! [`RbacObjects`] trait that the host implements over its storage.
//!
//! Semantics (all as in kube):
//! * Every ClusterRoleBinding is visited first (in the order the host lists
//!   them), then, for namespaced requests, the RoleBindings of the request's
//!   namespace. The first rule that allows the request wins and its source is
//!   reported as the reason (`RBAC: allowed by ClusterRoleBinding "x" of
//!   ClusterRole "y" to User "alice"`).
//! * Resource rules match on verb (`*` = any), API group (`*` = any), resource
//!   (`*` = any resource *and* subresource, `res/sub` exact, `*/sub` any
//!   resource with that subresource) and resourceNames (empty = any name;
//!   otherwise the request's name must be listed, so unnamed requests such as
//!   `list` or `create` never match a rule with resourceNames).
//!   kube does **not** support `res/*`: such an entry only matches a request
//!   whose subresource is literally `*`. This module keeps that behaviour
//!   (granting more than kube would be a security difference).
//! * Non-resource rules match on verb and nonResourceURLs (`*` = any, exact
//!   match, or a trailing `*` as a prefix match).
//! * Subjects: `User` (name), `Group` (membership), `ServiceAccount` (user
//!   `system:serviceaccount:NS:NAME`; an empty subject namespace defaults to
//!   the RoleBinding's namespace and never matches in a ClusterRoleBinding).
//! * A RoleBinding may reference a ClusterRole; its rules then apply only in
//!   the binding's namespace.
//! * Unresolvable role references are errors; they don't stop evaluation, and
//!   when nothing allows the request they make up the deny reason
//!   (`RBAC: clusterrole.rbac.authorization.k8s.io "x" not found`). Without
//!   errors the deny reason is empty, exactly like kube's `NoOpinion`.
//! * No group or user is special-cased (`system:masters` is cluster-admin only
//!   through the bootstrap binding; `system:authenticated` must be added to
//!   [`UserInfo::groups`] by the host).
//!
//! Aggregated ClusterRoles: in kube a controller rewrites the `rules` of every
//! ClusterRole with an `aggregationRule` to the union of the rules of the
//! ClusterRoles selected by its `clusterRoleSelectors`. Here the effective
//! rules of such a role are its stored `rules` plus, computed live, the rules
//! of the selected roles (sorted by name, itself excluded, duplicates dropped,
//! applied transitively with cycle protection). Live aggregation needs
//! [`RbacObjects::cluster_roles`], which has a default returning nothing: a
//! host that doesn't implement it gets the stored rules only (which the
//! bootstrap objects already carry pre-aggregated). Selectors support
//! `matchLabels` and `matchExpressions` (`In`, `NotIn`, `Exists`,
//! `DoesNotExist`); an empty selector matches every ClusterRole, an invalid
//! one matches none. The built-in `clusterrole-aggregation` controller
//! (`controllers::clusterroleaggregation`) writes the union into `rules`, as
//! kube's does (replacing hand-written ones), so what a role grants shows;
//! the live computation covers the moment before it has.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde_json::{json, Map, Value};

/// The RBAC API group.
pub const RBAC_GROUP: &str = "rbac.authorization.k8s.io";
/// `apiVersion` of the RBAC objects.
pub const RBAC_API_VERSION: &str = "rbac.authorization.k8s.io/v1";
/// Label put on every bootstrap object (key).
pub const BOOTSTRAPPING_LABEL_KEY: &str = "kubernetes.io/bootstrapping";
/// Label put on every bootstrap object (value).
pub const BOOTSTRAPPING_LABEL_VALUE: &str = "rbac-defaults";
/// Annotation telling the reconciler that a bootstrap object may be updated.
pub const AUTOUPDATE_ANNOTATION_KEY: &str = "rbac.authorization.kubernetes.io/autoupdate";
/// Prefix of service account user names.
pub const SERVICE_ACCOUNT_USERNAME_PREFIX: &str = "system:serviceaccount:";

const ALL: &str = "*";

/// Who is asking.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct UserInfo {
    pub name: String,
    pub uid: String,
    pub groups: Vec<String>,
    /// kube's `user.Info` extra: e.g. the Pod a service account token is bound to
    /// (`authentication.kubernetes.io/pod-name`) and the token's `credential-id`.
    pub extra: std::collections::BTreeMap<String, Vec<String>>,
}

impl UserInfo {
    /// kube's JSON of a `UserInfo` (TokenReview, SelfSubjectReview, AdmissionReview), in its
    /// field order; uid, groups and extra only when set (`omitempty`).
    pub fn to_json(&self) -> serde_json::Value {
        let mut info = serde_json::json!({"username": self.name});
        if !self.uid.is_empty() {
            info["uid"] = serde_json::json!(self.uid);
        }
        if !self.groups.is_empty() {
            info["groups"] = serde_json::json!(self.groups);
        }
        if !self.extra.is_empty() {
            info["extra"] = serde_json::json!(self.extra);
        }
        info
    }
}

/// What is asked (kube's `authorizer.Attributes`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Attributes {
    /// get list watch create update patch delete deletecollection impersonate
    /// bind escalate ...; for non-resource requests the lower-case HTTP
    /// method verb (get, post, put, ...).
    pub verb: String,
    pub resource_request: bool,
    /// `""` for core.
    pub api_group: String,
    /// Plural.
    pub resource: String,
    /// `""` or `status`, `scale`, ...
    pub subresource: String,
    /// `""` for cluster scope.
    pub namespace: String,
    /// `""` when not named.
    pub name: String,
    /// For non-resource requests, e.g. `/healthz`, `/api`, `/version`.
    pub path: String,
}

impl Attributes {
    /// A resource request (no subresource).
    pub fn resource(
        verb: &str,
        api_group: &str,
        resource: &str,
        namespace: &str,
        name: &str,
    ) -> Self {
        Attributes {
            verb: verb.to_owned(),
            resource_request: true,
            api_group: api_group.to_owned(),
            resource: resource.to_owned(),
            namespace: namespace.to_owned(),
            name: name.to_owned(),
            ..Attributes::default()
        }
    }

    /// A non-resource request.
    pub fn non_resource(verb: &str, path: &str) -> Self {
        Attributes {
            verb: verb.to_owned(),
            resource_request: false,
            path: path.to_owned(),
            ..Attributes::default()
        }
    }

    /// The same request aimed at `subresource`.
    pub fn with_subresource(mut self, subresource: &str) -> Self {
        self.subresource = subresource.to_owned();
        self
    }
}

/// The authorizer's answer. kube's `NoOpinion` is `Deny` here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Allow { reason: String },
    Deny { reason: String },
}

impl Decision {
    /// Whether the request is allowed.
    pub fn is_allowed(&self) -> bool {
        matches!(self, Decision::Allow { .. })
    }

    /// The reason (may be empty for a deny, as in kube).
    pub fn reason(&self) -> &str {
        match self {
            Decision::Allow { reason } | Decision::Deny { reason } => reason,
        }
    }
}

/// Read-only view of the RBAC objects (whatever the host stores).
pub trait RbacObjects {
    /// The ClusterRole `name`, if it exists.
    fn cluster_role(&self, name: &str) -> Option<Value>;
    /// The Role `namespace/name`, if it exists.
    fn role(&self, namespace: &str, name: &str) -> Option<Value>;
    /// Every ClusterRoleBinding.
    fn cluster_role_bindings(&self) -> Vec<Value>;
    /// The RoleBindings of `namespace`.
    fn role_bindings(&self, namespace: &str) -> Vec<Value>;
    /// Every ClusterRole; only used to aggregate ClusterRoles that carry an
    /// `aggregationRule`. The default lists nothing, which makes aggregated
    /// roles use their stored `rules` only.
    fn cluster_roles(&self) -> Vec<Value> {
        Vec::new()
    }
}

/// Why a role reference could not be resolved (messages as in kube).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResolveError {
    #[error("role.rbac.authorization.k8s.io {} not found", go_quote(.name))]
    RoleNotFound { name: String },
    #[error("clusterrole.rbac.authorization.k8s.io {} not found", go_quote(.name))]
    ClusterRoleNotFound { name: String },
    #[error("unsupported role reference kind: {}", go_quote(.kind))]
    UnsupportedRoleRefKind { kind: String },
}

/// One `rules[]` entry of a Role or ClusterRole.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PolicyRule {
    pub verbs: Vec<String>,
    pub api_groups: Vec<String>,
    pub resources: Vec<String>,
    pub resource_names: Vec<String>,
    pub non_resource_urls: Vec<String>,
}

impl PolicyRule {
    /// Reads a rule leniently: missing or malformed fields are empty, non-string
    /// list items are skipped.
    pub fn from_json(value: &Value) -> PolicyRule {
        PolicyRule {
            verbs: str_list(value.get("verbs")),
            api_groups: str_list(value.get("apiGroups")),
            resources: str_list(value.get("resources")),
            resource_names: str_list(value.get("resourceNames")),
            non_resource_urls: str_list(value.get("nonResourceURLs")),
        }
    }

    /// The rule as stored (`verbs` always present, other fields omitted when empty).
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("verbs".into(), json!(self.verbs));
        put_nonempty(&mut m, "apiGroups", &self.api_groups);
        put_nonempty(&mut m, "resources", &self.resources);
        put_nonempty(&mut m, "resourceNames", &self.resource_names);
        put_nonempty(&mut m, "nonResourceURLs", &self.non_resource_urls);
        Value::Object(m)
    }

    /// SelfSubjectRulesReview `ResourceRule` JSON.
    pub fn to_resource_rule_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("verbs".into(), json!(self.verbs));
        put_nonempty(&mut m, "apiGroups", &self.api_groups);
        put_nonempty(&mut m, "resources", &self.resources);
        put_nonempty(&mut m, "resourceNames", &self.resource_names);
        Value::Object(m)
    }

    /// SelfSubjectRulesReview `NonResourceRule` JSON.
    pub fn to_non_resource_rule_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("verbs".into(), json!(self.verbs));
        put_nonempty(&mut m, "nonResourceURLs", &self.non_resource_urls);
        Value::Object(m)
    }
}

fn put_nonempty(m: &mut Map<String, Value>, key: &str, list: &[String]) {
    if !list.is_empty() {
        m.insert(key.into(), json!(list));
    }
}

fn str_list(value: Option<&Value>) -> Vec<String> {
    value
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

fn str_at<'a>(value: &'a Value, path: &[&str]) -> &'a str {
    let mut cur = value;
    for key in path {
        match cur.get(key) {
            Some(v) => cur = v,
            None => return "",
        }
    }
    cur.as_str().unwrap_or("")
}

pub fn parse_rules(role: &Value) -> Vec<PolicyRule> {
    role.get("rules")
        .and_then(Value::as_array)
        .map(|a| a.iter().map(PolicyRule::from_json).collect())
        .unwrap_or_default()
}

// ---------------------------------------------------------------------------
// Rule matching (rbac.go RuleAllows and pkg/apis/rbac/v1 helpers)
// ---------------------------------------------------------------------------

/// Whether `rule` allows the request described by `attrs` (kube's `RuleAllows`).
pub fn rule_allows(attrs: &Attributes, rule: &PolicyRule) -> bool {
    if attrs.resource_request {
        let combined = if attrs.subresource.is_empty() {
            attrs.resource.clone()
        } else {
            format!("{}/{}", attrs.resource, attrs.subresource)
        };
        return verb_matches(rule, &attrs.verb)
            && api_group_matches(rule, &attrs.api_group)
            && resource_matches(rule, &combined, &attrs.subresource)
            && resource_name_matches(rule, &attrs.name);
    }
    verb_matches(rule, &attrs.verb) && non_resource_url_matches(rule, &attrs.path)
}

fn verb_matches(rule: &PolicyRule, verb: &str) -> bool {
    rule.verbs.iter().any(|v| v == ALL || v == verb)
}

fn api_group_matches(rule: &PolicyRule, group: &str) -> bool {
    rule.api_groups.iter().any(|g| g == ALL || g == group)
}

fn resource_matches(rule: &PolicyRule, combined: &str, subresource: &str) -> bool {
    rule.resources.iter().any(|r| {
        if r == ALL || r == combined {
            return true;
        }
        // `*/subresource` matches that subresource of any resource.
        !subresource.is_empty()
            && r.len() == subresource.len() + 2
            && r.starts_with("*/")
            && r.ends_with(subresource)
    })
}

fn resource_name_matches(rule: &PolicyRule, name: &str) -> bool {
    rule.resource_names.is_empty() || rule.resource_names.iter().any(|n| n == name)
}

fn non_resource_url_matches(rule: &PolicyRule, path: &str) -> bool {
    rule.non_resource_urls.iter().any(|u| {
        u == ALL || u == path || (u.ends_with('*') && path.starts_with(u.trim_end_matches('*')))
    })
}

// ---------------------------------------------------------------------------
// Bindings and subjects (validation/rule.go)
// ---------------------------------------------------------------------------

#[derive(Debug, Clone, PartialEq, Eq, Default)]
struct Subject {
    kind: String,
    name: String,
    namespace: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
struct RoleRef {
    kind: String,
    name: String,
}

fn parse_subjects(binding: &Value) -> Vec<Subject> {
    binding
        .get("subjects")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .map(|s| Subject {
                    kind: str_at(s, &["kind"]).to_owned(),
                    name: str_at(s, &["name"]).to_owned(),
                    namespace: str_at(s, &["namespace"]).to_owned(),
                })
                .collect()
        })
        .unwrap_or_default()
}

fn parse_role_ref(binding: &Value) -> RoleRef {
    RoleRef {
        kind: str_at(binding, &["roleRef", "kind"]).to_owned(),
        name: str_at(binding, &["roleRef", "name"]).to_owned(),
    }
}

/// Index of the first subject of the binding that applies to `user`.
fn applies_to(user: &UserInfo, subjects: &[Subject], namespace: &str) -> Option<usize> {
    subjects
        .iter()
        .position(|s| applies_to_user(user, s, namespace))
}

fn applies_to_user(user: &UserInfo, subject: &Subject, namespace: &str) -> bool {
    match subject.kind.as_str() {
        "User" => user.name == subject.name,
        "Group" => user.groups.contains(&subject.name),
        "ServiceAccount" => {
            let sa_namespace = if subject.namespace.is_empty() {
                namespace
            } else {
                subject.namespace.as_str()
            };
            if sa_namespace.is_empty() {
                return false;
            }
            service_account_matches(sa_namespace, &subject.name, &user.name)
        }
        _ => false,
    }
}

fn service_account_matches(namespace: &str, name: &str, username: &str) -> bool {
    username
        .strip_prefix(SERVICE_ACCOUNT_USERNAME_PREFIX)
        .and_then(|rest| rest.strip_prefix(namespace))
        .and_then(|rest| rest.strip_prefix(':'))
        .is_some_and(|rest| rest == name)
}

fn describe_subject(subject: &Subject, binding_namespace: &str) -> String {
    if subject.kind == "ServiceAccount" {
        let ns = if subject.namespace.is_empty() {
            binding_namespace
        } else {
            subject.namespace.as_str()
        };
        return format!(
            "{} {}",
            subject.kind,
            go_quote(&format!("{}/{}", subject.name, ns))
        );
    }
    format!("{} {}", subject.kind, go_quote(&subject.name))
}

/// Where a rule came from (kube's clusterRoleBindingDescriber / roleBindingDescriber).
struct Source<'a> {
    cluster: bool,
    binding_name: &'a str,
    binding_namespace: &'a str,
    role_ref: &'a RoleRef,
    subject: &'a Subject,
}

impl Source<'_> {
    fn describe(&self) -> String {
        if self.cluster {
            format!(
                "ClusterRoleBinding {} of {} {} to {}",
                go_quote(self.binding_name),
                self.role_ref.kind,
                go_quote(&self.role_ref.name),
                describe_subject(self.subject, "")
            )
        } else {
            format!(
                "RoleBinding {} of {} {} to {}",
                go_quote(&format!("{}/{}", self.binding_name, self.binding_namespace)),
                self.role_ref.kind,
                go_quote(&self.role_ref.name),
                describe_subject(self.subject, self.binding_namespace)
            )
        }
    }
}

enum Visit<'a> {
    Rule(&'a Source<'a>, &'a PolicyRule),
    Error(ResolveError),
}

struct Resolver<'o> {
    objects: &'o dyn RbacObjects,
    all_cluster_roles: Option<Vec<Value>>,
}

impl<'o> Resolver<'o> {
    fn new(objects: &'o dyn RbacObjects) -> Self {
        Resolver {
            objects,
            all_cluster_roles: None,
        }
    }

    fn cluster_role_rules(&mut self, name: &str) -> Result<Vec<PolicyRule>, ResolveError> {
        let role =
            self.objects
                .cluster_role(name)
                .ok_or_else(|| ResolveError::ClusterRoleNotFound {
                    name: name.to_owned(),
                })?;
        if !has_aggregation_rule(&role) {
            return Ok(parse_rules(&role));
        }
        let objects = self.objects;
        let all = self
            .all_cluster_roles
            .get_or_insert_with(|| objects.cluster_roles());
        Ok(effective_rules(&role, all, &mut Vec::new()))
    }

    fn role_reference_rules(
        &mut self,
        role_ref: &RoleRef,
        namespace: &str,
    ) -> Result<Vec<PolicyRule>, ResolveError> {
        match role_ref.kind.as_str() {
            "Role" => {
                let not_found = || ResolveError::RoleNotFound {
                    name: role_ref.name.clone(),
                };
                if namespace.is_empty() {
                    // kube looks the Role up in namespace "" and never finds it.
                    return Err(not_found());
                }
                self.objects
                    .role(namespace, &role_ref.name)
                    .map(|r| parse_rules(&r))
                    .ok_or_else(not_found)
            }
            "ClusterRole" => self.cluster_role_rules(&role_ref.name),
            other => Err(ResolveError::UnsupportedRoleRefKind {
                kind: other.to_owned(),
            }),
        }
    }

    /// kube's `VisitRulesFor`: the visitor returns false to stop.
    fn visit_rules_for(
        &mut self,
        user: &UserInfo,
        namespace: &str,
        visitor: &mut dyn FnMut(Visit<'_>) -> bool,
    ) {
        for binding in self.objects.cluster_role_bindings() {
            let subjects = parse_subjects(&binding);
            let Some(index) = applies_to(user, &subjects, "") else {
                continue;
            };
            let role_ref = parse_role_ref(&binding);
            match self.role_reference_rules(&role_ref, "") {
                Err(e) => {
                    if !visitor(Visit::Error(e)) {
                        return;
                    }
                }
                Ok(rules) => {
                    let source = Source {
                        cluster: true,
                        binding_name: str_at(&binding, &["metadata", "name"]),
                        binding_namespace: "",
                        role_ref: &role_ref,
                        subject: &subjects[index],
                    };
                    for rule in &rules {
                        if !visitor(Visit::Rule(&source, rule)) {
                            return;
                        }
                    }
                }
            }
        }

        if namespace.is_empty() {
            return;
        }
        for binding in self.objects.role_bindings(namespace) {
            let subjects = parse_subjects(&binding);
            let Some(index) = applies_to(user, &subjects, namespace) else {
                continue;
            };
            let role_ref = parse_role_ref(&binding);
            match self.role_reference_rules(&role_ref, namespace) {
                Err(e) => {
                    if !visitor(Visit::Error(e)) {
                        return;
                    }
                }
                Ok(rules) => {
                    let stored_ns = str_at(&binding, &["metadata", "namespace"]);
                    let source = Source {
                        cluster: false,
                        binding_name: str_at(&binding, &["metadata", "name"]),
                        binding_namespace: if stored_ns.is_empty() {
                            namespace
                        } else {
                            stored_ns
                        },
                        role_ref: &role_ref,
                        subject: &subjects[index],
                    };
                    for rule in &rules {
                        if !visitor(Visit::Rule(&source, rule)) {
                            return;
                        }
                    }
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------
// Aggregation (clusterroleaggregation controller, computed live)
// ---------------------------------------------------------------------------

fn has_aggregation_rule(role: &Value) -> bool {
    role.get("aggregationRule").is_some_and(Value::is_object)
}

/// Stored rules of `role` plus, if it has an `aggregationRule`, the effective
/// rules of every selected ClusterRole in `all` (per selector, sorted by name,
/// itself excluded, duplicates dropped). `stack` holds the roles being
/// aggregated, to cut cycles.
fn effective_rules(role: &Value, all: &[Value], stack: &mut Vec<String>) -> Vec<PolicyRule> {
    let mut rules = parse_rules(role);
    let Some(selectors) = role
        .get("aggregationRule")
        .and_then(|a| a.get("clusterRoleSelectors"))
        .and_then(Value::as_array)
    else {
        return rules;
    };
    let name = str_at(role, &["metadata", "name"]).to_owned();
    stack.push(name.clone());
    for selector in selectors {
        let mut selected: Vec<&Value> = all
            .iter()
            .filter(|r| str_at(r, &["metadata", "name"]) != name)
            .filter(|r| selector_matches(selector, r.get("metadata").and_then(|m| m.get("labels"))))
            .collect();
        selected
            .sort_by(|a, b| str_at(a, &["metadata", "name"]).cmp(str_at(b, &["metadata", "name"])));
        for other in selected {
            let other_name = str_at(other, &["metadata", "name"]);
            let other_rules = if stack.iter().any(|s| s == other_name) {
                parse_rules(other)
            } else {
                effective_rules(other, all, stack)
            };
            for rule in other_rules {
                if !rules.contains(&rule) {
                    rules.push(rule);
                }
            }
        }
    }
    stack.pop();
    rules
}

/// metav1.LabelSelector semantics: empty selects everything, invalid selects nothing.
pub(crate) fn selector_matches(selector: &Value, labels: Option<&Value>) -> bool {
    let Some(selector) = selector.as_object() else {
        return false;
    };
    let empty = Map::new();
    let labels = labels.and_then(Value::as_object).unwrap_or(&empty);
    let label = |key: &str| labels.get(key).and_then(Value::as_str);

    if let Some(match_labels) = selector.get("matchLabels") {
        let Some(match_labels) = match_labels.as_object() else {
            return match_labels.is_null();
        };
        for (key, want) in match_labels {
            let Some(want) = want.as_str() else {
                return false;
            };
            if label(key) != Some(want) {
                return false;
            }
        }
    }
    if let Some(exprs) = selector.get("matchExpressions") {
        let Some(exprs) = exprs.as_array() else {
            return exprs.is_null();
        };
        for expr in exprs {
            let key = str_at(expr, &["key"]);
            let values = str_list(expr.get("values"));
            let value = label(key);
            let ok = match str_at(expr, &["operator"]) {
                "In" if !values.is_empty() => value.is_some_and(|v| values.iter().any(|x| x == v)),
                "NotIn" if !values.is_empty() => {
                    !value.is_some_and(|v| values.iter().any(|x| x == v))
                }
                "Exists" if values.is_empty() => value.is_some(),
                "DoesNotExist" if values.is_empty() => value.is_none(),
                _ => false,
            };
            if !ok {
                return false;
            }
        }
    }
    true
}

// ---------------------------------------------------------------------------
// Public entry points
// ---------------------------------------------------------------------------

/// kube's `utilerrors.NewAggregate(errs).Error()`: one message as is, several
/// deduplicated, comma separated and bracketed.
pub fn aggregate_errors(errors: &[ResolveError]) -> String {
    let mut seen: Vec<String> = Vec::new();
    for e in errors {
        let msg = e.to_string();
        if !seen.contains(&msg) {
            seen.push(msg);
        }
    }
    match seen.len() {
        0 => String::new(),
        1 => seen.remove(0),
        _ => format!("[{}]", seen.join(", ")),
    }
}

/// Authorizes a request like kube's RBAC authorizer.
pub fn authorize(objects: &dyn RbacObjects, user: &UserInfo, attrs: &Attributes) -> Decision {
    let mut resolver = Resolver::new(objects);
    let mut allowed_by: Option<String> = None;
    let mut errors: Vec<ResolveError> = Vec::new();
    resolver.visit_rules_for(user, &attrs.namespace, &mut |visit| match visit {
        Visit::Rule(source, rule) => {
            if rule_allows(attrs, rule) {
                allowed_by = Some(source.describe());
                false
            } else {
                true
            }
        }
        Visit::Error(e) => {
            errors.push(e);
            true
        }
    });
    if let Some(source) = allowed_by {
        return Decision::Allow {
            reason: format!("RBAC: allowed by {source}"),
        };
    }
    let reason = if errors.is_empty() {
        String::new()
    } else {
        format!("RBAC: {}", aggregate_errors(&errors))
    };
    Decision::Deny { reason }
}

/// The SelfSubjectRulesReview status as kube's RBAC authorizer computes it.
#[derive(Debug, Clone, PartialEq)]
pub struct RulesReview {
    /// `[{verbs, apiGroups, resources, resourceNames}]` (empty lists omitted but `verbs`).
    pub resource_rules: Vec<Value>,
    /// `[{verbs, nonResourceURLs}]`.
    pub non_resource_rules: Vec<Value>,
    /// Always false from RBAC itself (kube reports resolution problems in
    /// `evaluation_error` instead).
    pub incomplete: bool,
    /// Aggregated resolution errors (missing roles, ...), empty if none.
    pub evaluation_error: String,
}

impl RulesReview {
    /// The `status` object of a SelfSubjectRulesReview.
    pub fn to_status_json(&self) -> Value {
        let mut m = Map::new();
        m.insert(
            "resourceRules".into(),
            Value::Array(self.resource_rules.clone()),
        );
        m.insert(
            "nonResourceRules".into(),
            Value::Array(self.non_resource_rules.clone()),
        );
        m.insert("incomplete".into(), Value::Bool(self.incomplete));
        if !self.evaluation_error.is_empty() {
            m.insert(
                "evaluationError".into(),
                Value::String(self.evaluation_error.clone()),
            );
        }
        Value::Object(m)
    }
}

/// Every rule that applies to `user` in `namespace` (cluster-wide plus that namespace's) and
/// the errors met resolving role references: kube's `RulesFor`, which the escalation checks
/// compare against.
pub fn rules_and_errors(
    objects: &dyn RbacObjects,
    user: &UserInfo,
    namespace: &str,
) -> (Vec<PolicyRule>, Vec<ResolveError>) {
    let mut resolver = Resolver::new(objects);
    let mut rules: Vec<PolicyRule> = Vec::new();
    let mut errors: Vec<ResolveError> = Vec::new();
    resolver.visit_rules_for(user, namespace, &mut |visit| {
        match visit {
            Visit::Rule(_, rule) => rules.push(rule.clone()),
            Visit::Error(e) => errors.push(e),
        }
        true
    });
    (rules, errors)
}

/// The rules a binding's `roleRef` grants in `namespace` (`""` for a ClusterRoleBinding):
/// kube's `GetRoleReferenceRules` (aggregated ClusterRoles computed live, as the authorizer
/// does).
pub fn role_reference_rules(
    objects: &dyn RbacObjects,
    kind: &str,
    name: &str,
    namespace: &str,
) -> Result<Vec<PolicyRule>, ResolveError> {
    let role_ref = RoleRef {
        kind: kind.to_owned(),
        name: name.to_owned(),
    };
    Resolver::new(objects).role_reference_rules(&role_ref, namespace)
}

/// The rules that apply to `user` in `namespace`, kube's exact shape (see [`RulesReview`]).
pub fn rules_review(objects: &dyn RbacObjects, user: &UserInfo, namespace: &str) -> RulesReview {
    let (rules, errors) = rules_and_errors(objects, user, namespace);
    let mut review = RulesReview {
        resource_rules: Vec::new(),
        non_resource_rules: Vec::new(),
        incomplete: false,
        evaluation_error: aggregate_errors(&errors),
    };
    for rule in &rules {
        if !rule.resources.is_empty() {
            review.resource_rules.push(rule.to_resource_rule_json());
        }
        if !rule.non_resource_urls.is_empty() {
            review
                .non_resource_rules
                .push(rule.to_non_resource_rule_json());
        }
    }
    review
}

/// The rules that apply to `user` in `namespace` (cluster-wide rules plus that
/// namespace's), for SelfSubjectRulesReview: (resourceRules, nonResourceRules,
/// incomplete). `incomplete` is true when some binding's role could not be
/// resolved (kube would report that as `evaluationError`; see [`rules_review`]).
pub fn rules_for(
    objects: &dyn RbacObjects,
    user: &UserInfo,
    namespace: &str,
) -> (Vec<Value>, Vec<Value>, bool) {
    let review = rules_review(objects, user, namespace);
    let incomplete = review.incomplete || !review.evaluation_error.is_empty();
    (review.resource_rules, review.non_resource_rules, incomplete)
}

// ---------------------------------------------------------------------------
// Forbidden message (responsewriters/errors.go + apierrors.NewForbidden)
// ---------------------------------------------------------------------------

/// Go's `strconv.Quote` (`%q`). Exact for ASCII; for other characters Go's
/// `unicode.IsPrint` is approximated (controls, non-ASCII spaces, common
/// format characters and private use are escaped).
pub fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            c if is_go_printable(c) => out.push(c),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if (c as u32) < 0x10000 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => {
                let _ = write!(out, "\\U{:08x}", c as u32);
            }
        }
    }
    out.push('"');
    out
}

fn is_go_printable(c: char) -> bool {
    if c == ' ' {
        return true;
    }
    if c.is_control() || c.is_whitespace() {
        return false;
    }
    !matches!(
        c as u32,
        0xAD | 0x600..=0x605
            | 0x61C
            | 0x6DD
            | 0x70F
            | 0x180E
            | 0x200B..=0x200F
            | 0x202A..=0x202E
            | 0x2060..=0x206F
            | 0xFEFF
            | 0xFFF9..=0xFFFB
            | 0xE000..=0xF8FF
            | 0xF0000..
    )
}

/// `strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")`.
fn sanitize(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            c => out.push(c),
        }
    }
    out
}

/// responsewriters' `forbiddenMessage`: the part after `is forbidden: `.
fn authorizer_message(user: &UserInfo, attrs: &Attributes) -> String {
    let username = go_quote(&user.name);
    if !attrs.resource_request {
        return format!(
            "User {username} cannot {} path {}",
            attrs.verb,
            go_quote(&attrs.path)
        );
    }
    let mut resource = attrs.resource.clone();
    if !attrs.subresource.is_empty() {
        resource = format!("{resource}/{}", attrs.subresource);
    }
    if !attrs.namespace.is_empty() {
        return format!(
            "User {username} cannot {} resource {} in API group {} in the namespace {}",
            attrs.verb,
            go_quote(&resource),
            go_quote(&attrs.api_group),
            go_quote(&attrs.namespace)
        );
    }
    format!(
        "User {username} cannot {} resource {} in API group {} at the cluster scope",
        attrs.verb,
        go_quote(&resource),
        go_quote(&attrs.api_group)
    )
}

/// kube's 403 message (the `message` of the Forbidden Status), e.g.
/// `configmaps "cm1" is forbidden: User "alice" cannot get resource "configmaps" in API group "" in the namespace "foo"`.
pub fn forbidden_message(user: &UserInfo, attrs: &Attributes) -> String {
    forbidden_message_with_reason(user, attrs, "")
}

/// [`forbidden_message`] with the authorizer's reason appended as kube does
/// (`...: RBAC: clusterrole.rbac.authorization.k8s.io "x" not found`) when
/// `reason` is not empty.
pub fn forbidden_message_with_reason(user: &UserInfo, attrs: &Attributes, reason: &str) -> String {
    let msg = sanitize(&authorizer_message(user, attrs));
    let err = if reason.is_empty() {
        msg
    } else {
        format!("{msg}: {reason}")
    };
    // Non-resource requests carry no group, resource or name in kube.
    let (group, resource, name) = if attrs.resource_request {
        (
            attrs.api_group.as_str(),
            attrs.resource.as_str(),
            attrs.name.as_str(),
        )
    } else {
        ("", "", "")
    };
    if group.is_empty() && resource.is_empty() {
        return format!("forbidden: {err}");
    }
    let qualified = if group.is_empty() {
        resource.to_owned()
    } else {
        format!("{resource}.{group}")
    };
    if name.is_empty() {
        format!("{qualified} is forbidden: {err}")
    } else {
        format!("{qualified} {} is forbidden: {err}", go_quote(name))
    }
}

// ---------------------------------------------------------------------------
// Bootstrap policy (bootstrappolicy/policy.go)
// ---------------------------------------------------------------------------

const READ: &[&str] = &["get", "list", "watch"];
const WRITE: &[&str] = &["create", "update", "patch", "delete", "deletecollection"];
const READ_WRITE: &[&str] = &[
    "get",
    "list",
    "watch",
    "create",
    "update",
    "patch",
    "delete",
    "deletecollection",
];
const READ_UPDATE: &[&str] = &["get", "list", "watch", "update", "patch"];

const LEGACY: &str = "";
const AUTHENTICATION: &str = "authentication.k8s.io";
const AUTHORIZATION: &str = "authorization.k8s.io";
const CERTIFICATES: &str = "certificates.k8s.io";
const COORDINATION: &str = "coordination.k8s.io";
const EVENTS: &str = "events.k8s.io";
const RESOURCE: &str = "resource.k8s.io";
const STORAGE: &str = "storage.k8s.io";
const TURTLES: &str = "turtles.dev";

const AGGREGATE_TO_ADMIN: &str = "rbac.authorization.k8s.io/aggregate-to-admin";
const AGGREGATE_TO_EDIT: &str = "rbac.authorization.k8s.io/aggregate-to-edit";
const AGGREGATE_TO_VIEW: &str = "rbac.authorization.k8s.io/aggregate-to-view";

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| (*s).to_owned()).collect()
}

/// A rule as kube's `NewRule(..).RuleOrDie()` makes one: its lists sorted.
fn rule(verbs: &[&str], groups: &[&str], resources: &[&str]) -> PolicyRule {
    let sorted = |items: &[&str]| {
        let mut v = strings(items);
        v.sort();
        v
    };
    PolicyRule {
        verbs: sorted(verbs),
        api_groups: sorted(groups),
        resources: sorted(resources),
        ..PolicyRule::default()
    }
}

/// `rule` for the named objects only (kube's `.Names(..)`).
fn named(names: &[&str], rule: PolicyRule) -> PolicyRule {
    let mut resource_names = strings(names);
    resource_names.sort();
    PolicyRule {
        resource_names,
        ..rule
    }
}

/// kube's `eventsRule()`: writing Events of either API group.
fn events_rule() -> PolicyRule {
    rule(
        &["create", "update", "patch"],
        &[LEGACY, EVENTS],
        &["events"],
    )
}

/// `approve` on one signer (kube's `system:certificates.k8s.io:*-approver` roles).
fn approver(signer: &str) -> Vec<PolicyRule> {
    vec![named(
        &[signer],
        rule(&["approve"], &[CERTIFICATES], &["signers"]),
    )]
}

fn url_rule(verbs: &[&str], urls: &[&str]) -> PolicyRule {
    let mut urls = strings(urls);
    urls.sort();
    let mut verbs = strings(verbs);
    verbs.sort();
    PolicyRule {
        verbs,
        non_resource_urls: urls,
        ..PolicyRule::default()
    }
}

fn bootstrap_metadata(name: &str, extra_labels: &[(&str, &str)]) -> Value {
    // Go marshals maps with sorted keys.
    let mut labels: BTreeMap<&str, &str> = extra_labels.iter().copied().collect();
    labels.insert(BOOTSTRAPPING_LABEL_KEY, BOOTSTRAPPING_LABEL_VALUE);
    let labels: Map<String, Value> = labels
        .into_iter()
        .map(|(k, v)| (k.to_owned(), Value::String(v.to_owned())))
        .collect();
    json!({
        "name": name,
        "labels": labels,
        "annotations": { AUTOUPDATE_ANNOTATION_KEY: "true" },
    })
}

struct BootstrapRole {
    name: &'static str,
    labels: &'static [(&'static str, &'static str)],
    aggregate_from: Option<&'static str>,
    rules: Vec<PolicyRule>,
}

fn bootstrap_roles() -> Vec<BootstrapRole> {
    let role = |name, rules| BootstrapRole {
        name,
        labels: &[],
        aggregate_from: None,
        rules,
    };
    vec![
        // A "root" role which can do absolutely anything.
        role(
            "cluster-admin",
            vec![rule(&["*"], &["*"], &["*"]), url_rule(&["*"], &["*"])],
        ),
        // Just enough to tell whether the server is ready and discover APIs.
        role(
            "system:discovery",
            vec![url_rule(
                &["get"],
                &[
                    "/livez",
                    "/readyz",
                    "/healthz",
                    "/version",
                    "/version/",
                    "/openapi",
                    "/openapi/*",
                    "/api",
                    "/api/*",
                    "/apis",
                    "/apis/*",
                ],
            )],
        ),
        // Read access to the monitoring endpoints.
        role(
            "system:monitoring",
            vec![url_rule(
                &["get"],
                &[
                    "/metrics",
                    "/metrics/slis",
                    "/livez",
                    "/readyz",
                    "/healthz",
                    "/livez/*",
                    "/readyz/*",
                    "/healthz/*",
                ],
            )],
        ),
        // Lets a "normal" user learn about themselves.
        role(
            "system:basic-user",
            vec![
                rule(
                    &["create"],
                    &[AUTHORIZATION],
                    &["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
                ),
                rule(&["create"], &[AUTHENTICATION], &["selfsubjectreviews"]),
            ],
        ),
        // Insensitive cluster information, also for unauthenticated users.
        role(
            "system:public-info-viewer",
            vec![url_rule(
                &["get"],
                &["/livez", "/readyz", "/healthz", "/version", "/version/"],
            )],
        ),
        // The service account issuer's discovery documents, for service accounts.
        role(
            "system:service-account-issuer-discovery",
            vec![url_rule(
                &["get"],
                &[
                    "/.well-known/openid-configuration",
                    "/.well-known/openid-configuration/",
                    "/openid/v1/jwks",
                    "/openid/v1/jwks/",
                ],
            )],
        ),
        // Namespace admin: edit plus granting permissions to others.
        BootstrapRole {
            name: "admin",
            labels: &[],
            aggregate_from: Some(AGGREGATE_TO_ADMIN),
            rules: Vec::new(),
        },
        // Namespace editor: all user level actions in a namespace.
        BootstrapRole {
            name: "edit",
            labels: &[(AGGREGATE_TO_ADMIN, "true")],
            aggregate_from: Some(AGGREGATE_TO_EDIT),
            rules: Vec::new(),
        },
        // Namespace viewer: read-only on non-escalating resources (no secrets).
        BootstrapRole {
            name: "view",
            labels: &[(AGGREGATE_TO_EDIT, "true")],
            aggregate_from: Some(AGGREGATE_TO_VIEW),
            rules: Vec::new(),
        },
        BootstrapRole {
            name: "system:aggregate-to-admin",
            labels: &[(AGGREGATE_TO_ADMIN, "true")],
            aggregate_from: None,
            rules: vec![
                rule(
                    &["create"],
                    &[AUTHORIZATION],
                    &["localsubjectaccessreviews"],
                ),
                rule(READ_WRITE, &[RBAC_GROUP], &["roles", "rolebindings"]),
            ],
        },
        // kube's, rule for rule; turtles adds its Controllers (written by the host, so `edit`
        // grants nothing a tenant can use but `get`).
        BootstrapRole {
            name: "system:aggregate-to-edit",
            labels: &[(AGGREGATE_TO_EDIT, "true")],
            aggregate_from: None,
            rules: vec![
                // Read on escalating resources.
                rule(
                    READ,
                    &[LEGACY],
                    &[
                        "pods/attach",
                        "pods/proxy",
                        "pods/exec",
                        "pods/portforward",
                        "secrets",
                        "services/proxy",
                    ],
                ),
                rule(&["impersonate"], &[LEGACY], &["serviceaccounts"]),
                rule(
                    WRITE,
                    &[LEGACY],
                    &[
                        "pods",
                        "pods/attach",
                        "pods/proxy",
                        "pods/exec",
                        "pods/portforward",
                    ],
                ),
                rule(&["create"], &[LEGACY], &["pods/eviction"]),
                rule(
                    WRITE,
                    &[LEGACY],
                    &[
                        "replicationcontrollers",
                        "replicationcontrollers/scale",
                        "serviceaccounts",
                        "services",
                        "services/proxy",
                        "persistentvolumeclaims",
                        "configmaps",
                        "secrets",
                        "events",
                    ],
                ),
                rule(&["create"], &[LEGACY], &["serviceaccounts/token"]),
                rule(
                    WRITE,
                    &["apps"],
                    &[
                        "statefulsets",
                        "statefulsets/scale",
                        "daemonsets",
                        "deployments",
                        "deployments/scale",
                        "deployments/rollback",
                        "replicasets",
                        "replicasets/scale",
                    ],
                ),
                rule(WRITE, &["autoscaling"], &["horizontalpodautoscalers"]),
                rule(WRITE, &["batch"], &["jobs", "cronjobs"]),
                rule(
                    WRITE,
                    &["extensions"],
                    &[
                        "daemonsets",
                        "deployments",
                        "deployments/scale",
                        "deployments/rollback",
                        "ingresses",
                        "replicasets",
                        "replicasets/scale",
                        "replicationcontrollers/scale",
                        "networkpolicies",
                    ],
                ),
                rule(WRITE, &["policy"], &["poddisruptionbudgets"]),
                rule(
                    WRITE,
                    &["networking.k8s.io"],
                    &["networkpolicies", "ingresses"],
                ),
                rule(READ_WRITE, &[COORDINATION], &["leases"]),
                // kube's while DynamicResourceAllocation is on (its default since 1.34).
                rule(
                    WRITE,
                    &[RESOURCE],
                    &["resourceclaims", "resourceclaimtemplates"],
                ),
                rule(WRITE, &[TURTLES], &["controllers"]),
            ],
        },
        BootstrapRole {
            name: "system:aggregate-to-view",
            labels: &[(AGGREGATE_TO_VIEW, "true")],
            aggregate_from: None,
            rules: vec![
                rule(
                    READ,
                    &[LEGACY],
                    &[
                        "pods",
                        "replicationcontrollers",
                        "replicationcontrollers/scale",
                        "serviceaccounts",
                        "services",
                        "services/status",
                        "endpoints",
                        "persistentvolumeclaims",
                        "persistentvolumeclaims/status",
                        "configmaps",
                    ],
                ),
                rule(
                    READ,
                    &[LEGACY],
                    &[
                        "limitranges",
                        "resourcequotas",
                        "bindings",
                        "events",
                        "pods/status",
                        "resourcequotas/status",
                        "namespaces/status",
                        "replicationcontrollers/status",
                        "pods/log",
                    ],
                ),
                // Reading namespaces at namespace scope means reading *this* namespace.
                rule(READ, &[LEGACY], &["namespaces"]),
                rule(READ, &["discovery.k8s.io"], &["endpointslices"]),
                rule(
                    READ,
                    &["apps"],
                    &[
                        "controllerrevisions",
                        "statefulsets",
                        "statefulsets/status",
                        "statefulsets/scale",
                        "daemonsets",
                        "daemonsets/status",
                        "deployments",
                        "deployments/status",
                        "deployments/scale",
                        "replicasets",
                        "replicasets/status",
                        "replicasets/scale",
                    ],
                ),
                rule(
                    READ,
                    &["autoscaling"],
                    &[
                        "horizontalpodautoscalers",
                        "horizontalpodautoscalers/status",
                    ],
                ),
                rule(
                    READ,
                    &["batch"],
                    &["jobs", "cronjobs", "cronjobs/status", "jobs/status"],
                ),
                rule(
                    READ,
                    &["extensions"],
                    &[
                        "daemonsets",
                        "daemonsets/status",
                        "deployments",
                        "deployments/scale",
                        "deployments/status",
                        "ingresses",
                        "ingresses/status",
                        "replicasets",
                        "replicasets/scale",
                        "replicasets/status",
                        "replicationcontrollers/scale",
                        "networkpolicies",
                    ],
                ),
                rule(
                    READ,
                    &["policy"],
                    &["poddisruptionbudgets", "poddisruptionbudgets/status"],
                ),
                rule(
                    READ,
                    &["networking.k8s.io"],
                    &["networkpolicies", "ingresses", "ingresses/status"],
                ),
                // kube's while DynamicResourceAllocation is on (its default since 1.34).
                rule(
                    READ,
                    &[RESOURCE],
                    &[
                        "resourceclaims",
                        "resourceclaims/status",
                        "resourceclaimtemplates",
                    ],
                ),
                rule(READ, &[TURTLES], &["controllers", "controllers/log"]),
            ],
        },
        // The rest in kube's order (policy.go), each rule as kube lists it, with its rules for
        // features on by default in 1.34 (DynamicResourceAllocation, KubeletFineGrainedAuthz,
        // KubeletServiceAccountTokenForCredentialProviders, MultiCIDRServiceAllocator) and none
        // for those off.
        role(
            "system:heapster",
            vec![
                rule(READ, &[LEGACY], &["events", "pods", "nodes", "namespaces"]),
                rule(READ, &["extensions"], &["deployments"]),
            ],
        ),
        // What a kubelet needs; bound to nobody (kube's Node authorizer grants it).
        role("system:node", node_rules()),
        // Bound to nobody: deployment locations vary.
        role(
            "system:node-problem-detector",
            vec![
                rule(&["get"], &[LEGACY], &["nodes"]),
                rule(&["patch"], &[LEGACY], &["nodes/status"]),
                events_rule(),
            ],
        ),
        // Bootstrapping a node's client certificate.
        role(
            "system:node-bootstrapper",
            vec![rule(
                &["create", "get", "list", "watch"],
                &[CERTIFICATES],
                &["certificatesigningrequests"],
            )],
        ),
        // Authentication/authorization delegation.
        role(
            "system:auth-delegator",
            vec![
                rule(&["create"], &[AUTHENTICATION], &["tokenreviews"]),
                rule(&["create"], &[AUTHORIZATION], &["subjectaccessreviews"]),
            ],
        ),
        // The API registry, summarization and proxy handling.
        role(
            "system:kube-aggregator",
            vec![rule(READ, &[LEGACY], &["services", "endpoints"])],
        ),
        // A kube-controller-manager's own identity (shared informers, service accounts and
        // their tokens); its controllers' `system:controller:*` roles are not bootstrapped.
        role(
            "system:kube-controller-manager",
            vec![
                events_rule(),
                rule(&["create"], &[COORDINATION], &["leases"]),
                named(
                    &["kube-controller-manager"],
                    rule(&["get", "update"], &[COORDINATION], &["leases"]),
                ),
                rule(&["create"], &[LEGACY], &["secrets", "serviceaccounts"]),
                rule(&["delete"], &[LEGACY], &["secrets"]),
                rule(
                    &["get"],
                    &[LEGACY],
                    &["namespaces", "secrets", "serviceaccounts", "configmaps"],
                ),
                rule(&["update"], &[LEGACY], &["secrets", "serviceaccounts"]),
                rule(&["create"], &[AUTHENTICATION], &["tokenreviews"]),
                rule(&["create"], &[AUTHORIZATION], &["subjectaccessreviews"]),
                rule(&["list", "watch"], &["*"], &["*"]),
                rule(&["create"], &[LEGACY], &["serviceaccounts/token"]),
            ],
        ),
        // The DNS pod.
        role(
            "system:kube-dns",
            vec![rule(
                &["list", "watch"],
                &[LEGACY],
                &["endpoints", "services"],
            )],
        ),
        // An external volume provisioner (bound to nobody: deployments bind their service
        // accounts to it).
        role(
            "system:persistent-volume-provisioner",
            vec![
                rule(
                    &["get", "list", "watch", "create", "delete"],
                    &[LEGACY],
                    &["persistentvolumes"],
                ),
                rule(
                    &["get", "list", "watch", "update"],
                    &[LEGACY],
                    &["persistentvolumeclaims"],
                ),
                rule(READ, &[STORAGE], &["storageclasses"]),
                rule(&["watch"], &[LEGACY], &["events"]),
                events_rule(),
            ],
        ),
        // Who may ask for a node client certificate, for another node or for itself.
        role(
            "system:certificates.k8s.io:certificatesigningrequests:nodeclient",
            vec![rule(
                &["create"],
                &[CERTIFICATES],
                &["certificatesigningrequests/nodeclient"],
            )],
        ),
        role(
            "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient",
            vec![rule(
                &["create"],
                &[CERTIFICATES],
                &["certificatesigningrequests/selfnodeclient"],
            )],
        ),
        // The scheduler's volume binding.
        role(
            "system:volume-scheduler",
            vec![
                rule(READ_UPDATE, &[LEGACY], &["persistentvolumes"]),
                rule(READ, &[STORAGE], &["storageclasses"]),
                rule(READ_UPDATE, &[LEGACY], &["persistentvolumeclaims"]),
            ],
        ),
        // Who may approve requests for each of kube's signers (bound to nobody, as in kube).
        role(
            "system:certificates.k8s.io:legacy-unknown-approver",
            approver("kubernetes.io/legacy-unknown"),
        ),
        role(
            "system:certificates.k8s.io:kubelet-serving-approver",
            approver("kubernetes.io/kubelet-serving"),
        ),
        role(
            "system:certificates.k8s.io:kube-apiserver-client-approver",
            approver("kubernetes.io/kube-apiserver-client"),
        ),
        role(
            "system:certificates.k8s.io:kube-apiserver-client-kubelet-approver",
            approver("kubernetes.io/kube-apiserver-client-kubelet"),
        ),
        // Full access to the kubelet API.
        role(
            "system:kubelet-api-admin",
            vec![
                rule(READ, &[LEGACY], &["nodes"]),
                rule(&["proxy"], &[LEGACY], &["nodes"]),
                rule(
                    &["*"],
                    &[LEGACY],
                    &["nodes/proxy", "nodes/metrics", "nodes/stats", "nodes/log"],
                ),
                // KubeletFineGrainedAuthz.
                rule(
                    &["*"],
                    &[LEGACY],
                    &["nodes/pods", "nodes/healthz", "nodes/configz"],
                ),
            ],
        ),
        // kube-proxy.
        role(
            "system:node-proxier",
            vec![
                rule(&["list", "watch"], &[LEGACY], &["services", "endpoints"]),
                rule(READ, &[LEGACY], &["nodes"]),
                events_rule(),
                // MultiCIDRServiceAllocator.
                rule(
                    &["list", "watch"],
                    &["networking.k8s.io"],
                    &["servicecidrs"],
                ),
                rule(
                    &["list", "watch"],
                    &["discovery.k8s.io"],
                    &["endpointslices"],
                ),
            ],
        ),
        // The scheduler (turtles runs none; a scheduler a user deploys binds to this).
        role("system:kube-scheduler", kube_scheduler_rules()),
    ]
}

/// kube's `NodeRules()` with 1.34's default feature gates.
fn node_rules() -> Vec<PolicyRule> {
    vec![
        rule(&["create"], &[AUTHENTICATION], &["tokenreviews"]),
        rule(
            &["create"],
            &[AUTHORIZATION],
            &["subjectaccessreviews", "localsubjectaccessreviews"],
        ),
        rule(READ, &[LEGACY], &["services"]),
        rule(&["create", "get", "list", "watch"], &[LEGACY], &["nodes"]),
        rule(&["update", "patch"], &[LEGACY], &["nodes/status"]),
        rule(&["update", "patch"], &[LEGACY], &["nodes"]),
        rule(&["create", "update", "patch"], &[LEGACY], &["events"]),
        rule(READ, &[LEGACY], &["pods"]),
        rule(&["create", "delete"], &[LEGACY], &["pods"]),
        rule(&["update", "patch"], &[LEGACY], &["pods/status"]),
        rule(&["create"], &[LEGACY], &["pods/eviction"]),
        rule(READ, &[LEGACY], &["secrets", "configmaps"]),
        rule(
            &["get"],
            &[LEGACY],
            &["persistentvolumeclaims", "persistentvolumes"],
        ),
        rule(&["get"], &[LEGACY], &["endpoints"]),
        rule(
            &["create", "get", "list", "watch"],
            &[CERTIFICATES],
            &["certificatesigningrequests"],
        ),
        rule(
            &["get", "create", "update", "patch", "delete"],
            &[COORDINATION],
            &["leases"],
        ),
        rule(&["get"], &[STORAGE], &["volumeattachments"]),
        rule(&["create"], &[LEGACY], &["serviceaccounts/token"]),
        rule(
            &["get", "update", "patch"],
            &[LEGACY],
            &["persistentvolumeclaims/status"],
        ),
        rule(READ, &[STORAGE], &["csidrivers"]),
        rule(
            &["get", "create", "update", "patch", "delete"],
            &[STORAGE],
            &["csinodes"],
        ),
        rule(READ, &["node.k8s.io"], &["runtimeclasses"]),
        // DynamicResourceAllocation.
        rule(&["get"], &[RESOURCE], &["resourceclaims"]),
        rule(&["deletecollection"], &[RESOURCE], &["resourceslices"]),
        // KubeletServiceAccountTokenForCredentialProviders.
        rule(&["get"], &[LEGACY], &["serviceaccounts"]),
    ]
}

/// kube's `system:kube-scheduler` with 1.34's default feature gates.
fn kube_scheduler_rules() -> Vec<PolicyRule> {
    vec![
        events_rule(),
        // Leader election.
        rule(&["create"], &[COORDINATION], &["leases"]),
        named(
            &["kube-scheduler"],
            rule(
                &["get", "update", "list", "watch"],
                &[COORDINATION],
                &["leases"],
            ),
        ),
        rule(READ_WRITE, &[COORDINATION], &["leasecandidates"]),
        rule(READ, &[LEGACY], &["nodes"]),
        rule(&["get", "list", "watch", "delete"], &[LEGACY], &["pods"]),
        rule(&["create"], &[LEGACY], &["pods/binding", "bindings"]),
        rule(&["patch", "update"], &[LEGACY], &["pods/status"]),
        rule(READ, &[LEGACY], &["services", "replicationcontrollers"]),
        rule(READ, &["apps", "extensions"], &["replicasets"]),
        rule(READ, &["apps"], &["statefulsets"]),
        rule(READ, &["policy"], &["poddisruptionbudgets"]),
        rule(
            READ,
            &[LEGACY],
            &["persistentvolumeclaims", "persistentvolumes"],
        ),
        rule(&["create"], &[AUTHENTICATION], &["tokenreviews"]),
        rule(&["create"], &[AUTHORIZATION], &["subjectaccessreviews"]),
        rule(READ, &[STORAGE], &["csinodes"]),
        rule(READ, &[STORAGE], &["volumeattachments"]),
        rule(READ, &[LEGACY], &["namespaces"]),
        rule(READ, &[STORAGE], &["csidrivers"]),
        rule(READ, &[STORAGE], &["csistoragecapacities"]),
        // DynamicResourceAllocation.
        rule(READ, &[RESOURCE], &["deviceclasses"]),
        rule(READ_UPDATE, &[RESOURCE], &["resourceclaims"]),
        rule(READ_UPDATE, &[RESOURCE], &["resourceclaims/status"]),
        rule(READ_UPDATE, &[LEGACY], &["pods/finalizers"]),
        rule(READ, &[RESOURCE], &["resourceslices"]),
    ]
}

fn cluster_role_json(role: &BootstrapRole, rules: &[PolicyRule]) -> Value {
    let mut m = Map::new();
    m.insert("apiVersion".into(), json!(RBAC_API_VERSION));
    m.insert("kind".into(), json!("ClusterRole"));
    m.insert(
        "metadata".into(),
        bootstrap_metadata(role.name, role.labels),
    );
    m.insert(
        "rules".into(),
        Value::Array(rules.iter().map(PolicyRule::to_json).collect()),
    );
    if let Some(label) = role.aggregate_from {
        m.insert(
            "aggregationRule".into(),
            json!({ "clusterRoleSelectors": [ { "matchLabels": { label: "true" } } ] }),
        );
    }
    Value::Object(m)
}

fn group_subject(name: &str) -> Value {
    json!({ "kind": "Group", "apiGroup": RBAC_GROUP, "name": name })
}

fn user_subject(name: &str) -> Value {
    json!({ "kind": "User", "apiGroup": RBAC_GROUP, "name": name })
}

fn service_account_subject(namespace: &str, name: &str) -> Value {
    json!({ "kind": "ServiceAccount", "name": name, "namespace": namespace })
}

fn cluster_binding_json(role_name: &str, subjects: Vec<Value>) -> Value {
    let mut m = Map::new();
    m.insert("apiVersion".into(), json!(RBAC_API_VERSION));
    m.insert("kind".into(), json!("ClusterRoleBinding"));
    m.insert("metadata".into(), bootstrap_metadata(role_name, &[]));
    if !subjects.is_empty() {
        m.insert("subjects".into(), Value::Array(subjects));
    }
    m.insert(
        "roleRef".into(),
        json!({ "apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": role_name }),
    );
    Value::Object(m)
}

fn namespaced_metadata(namespace: &str, name: &str) -> Value {
    let mut meta = bootstrap_metadata(name, &[]);
    meta["namespace"] = json!(namespace);
    meta
}

fn role_json(namespace: &str, name: &str, rules: &[PolicyRule]) -> Value {
    let rules: Vec<Value> = rules.iter().map(PolicyRule::to_json).collect();
    json!({"apiVersion": RBAC_API_VERSION, "kind": "Role",
        "metadata": namespaced_metadata(namespace, name), "rules": rules})
}

/// A RoleBinding of the Role `role_name` in `namespace`.
fn role_binding_json(namespace: &str, name: &str, role_name: &str, subjects: Vec<Value>) -> Value {
    json!({"apiVersion": RBAC_API_VERSION, "kind": "RoleBinding",
        "metadata": namespaced_metadata(namespace, name),
        "roleRef": {"apiGroup": RBAC_GROUP, "kind": "Role", "name": role_name},
        "subjects": subjects})
}

/// kube's `system::leader-locking-COMPONENT` Role in kube-system: its lock (the ConfigMap of old,
/// the Lease) and the LeaseCandidates of coordinated leader election.
fn leader_locking_rules(component: &str) -> Vec<PolicyRule> {
    let lock = &["get", "watch", "list", "create", "update"];
    vec![
        rule(&["watch"], &[LEGACY], &["configmaps"]),
        named(
            &[component],
            rule(&["get", "update"], &[LEGACY], &["configmaps"]),
        ),
        rule(lock, &[COORDINATION], &["leases"]),
        rule(lock, &[COORDINATION], &["leasecandidates"]),
    ]
}

/// The bootstrap ClusterRoles, the bootstrap ClusterRoleBindings, then the
/// bootstrap Roles and RoleBindings of `kube-system`, as complete JSON objects:
/// kube's policy (`bootstrappolicy/policy.go`, `namespace_policy.go`) less its
/// controllers' `system:controller:*` roles and bindings (kube-controller-manager's
/// controllers do not run here, and `system:controller:NAME` is what turtles
/// names its Wasm controllers' roles). Aggregated roles (`admin`, `edit`,
/// `view`) carry both their `aggregationRule` and their pre-aggregated `rules`,
/// as a real cluster shows them once the aggregation controller ran.
pub fn bootstrap_objects() -> Vec<Value> {
    let roles = bootstrap_roles();
    let plain: Vec<Value> = roles
        .iter()
        .map(|r| cluster_role_json(r, &r.rules))
        .collect();
    let mut objects: Vec<Value> = roles
        .iter()
        .zip(&plain)
        .map(|(role, json)| {
            if role.aggregate_from.is_some() {
                cluster_role_json(role, &effective_rules(json, &plain, &mut Vec::new()))
            } else {
                json.clone()
            }
        })
        .collect();

    let authenticated = "system:authenticated";
    let scheduler = "system:kube-scheduler";
    let controller_manager = "system:kube-controller-manager";
    // In kube's order.
    objects.extend([
        cluster_binding_json("cluster-admin", vec![group_subject("system:masters")]),
        cluster_binding_json(
            "system:monitoring",
            vec![group_subject("system:monitoring")],
        ),
        cluster_binding_json("system:discovery", vec![group_subject(authenticated)]),
        cluster_binding_json("system:basic-user", vec![group_subject(authenticated)]),
        cluster_binding_json(
            "system:public-info-viewer",
            vec![
                group_subject(authenticated),
                group_subject("system:unauthenticated"),
            ],
        ),
        cluster_binding_json(
            "system:node-proxier",
            vec![user_subject("system:kube-proxy")],
        ),
        cluster_binding_json(controller_manager, vec![user_subject(controller_manager)]),
        cluster_binding_json(
            "system:kube-dns",
            vec![service_account_subject("kube-system", "kube-dns")],
        ),
        cluster_binding_json(scheduler, vec![user_subject(scheduler)]),
        cluster_binding_json("system:volume-scheduler", vec![user_subject(scheduler)]),
        // kube keeps this binding without subjects (the Node authorizer took over).
        cluster_binding_json("system:node", Vec::new()),
        cluster_binding_json(
            "system:service-account-issuer-discovery",
            vec![group_subject("system:serviceaccounts")],
        ),
    ]);

    // kube's namespaced bootstrap policy in kube-system: who may read the ConfigMap extension
    // API servers trust the front proxy by (`aggregator::authentication`), and the control
    // plane's leader election locks.
    let system = "kube-system";
    let reader = "extension-apiserver-authentication-reader";
    let kcm_lock = "system::leader-locking-kube-controller-manager";
    let scheduler_lock = "system::leader-locking-kube-scheduler";
    objects.extend([
        role_json(
            system,
            reader,
            &[named(
                &["extension-apiserver-authentication"],
                rule(READ, &[LEGACY], &["configmaps"]),
            )],
        ),
        role_json(
            system,
            kcm_lock,
            &leader_locking_rules("kube-controller-manager"),
        ),
        role_json(
            system,
            scheduler_lock,
            &leader_locking_rules("kube-scheduler"),
        ),
        role_binding_json(
            system,
            &format!("system::{reader}"),
            reader,
            vec![user_subject(controller_manager), user_subject(scheduler)],
        ),
        role_binding_json(
            system,
            kcm_lock,
            kcm_lock,
            vec![
                user_subject(controller_manager),
                service_account_subject(system, "kube-controller-manager"),
                service_account_subject(system, "leader-election-controller"),
            ],
        ),
        role_binding_json(
            system,
            scheduler_lock,
            scheduler_lock,
            vec![
                user_subject(scheduler),
                service_account_subject(system, "kube-scheduler"),
            ],
        ),
    ]);
    objects
}

// ---------------------------------------------------------------------------
// Reconciling the bootstrap policy (component-helpers/auth/rbac/reconciliation)
// ---------------------------------------------------------------------------

/// What a stored bootstrap object needs to hold the policy again ([`reconcile`]): kube's
/// `ReconcileOperation`, less `create` (a missing object is created as the policy has it) and
/// `none` ([`reconcile`] answers `None`).
#[derive(Debug, Clone, PartialEq)]
pub enum Reconciled {
    /// Store this over the stored object: the stored object (its metadata, `resourceVersion`
    /// included, so the update is conditional) with what the policy adds.
    Update(Value),
    /// Delete the stored binding and create this one, the policy's: their `roleRef`s differ, and
    /// no update may change a `roleRef` (kube's `ReconcileRecreate`).
    Recreate(Value),
    /// The stored object lacks part of the policy but opted out of reconciliation
    /// (`rbac.authorization.kubernetes.io/autoupdate: "false"`): left as it is.
    Protected,
}

/// kube's `computeReconciledRole` and `computeReconciledRoleBinding` as kube-apiserver's
/// `rbac/bootstrap-roles` post-start hook runs them (`RemoveExtraPermissions` and
/// `RemoveExtraSubjects` off): what the stored `existing` needs to hold all of `expected`, a
/// Role, ClusterRole, RoleBinding or ClusterRoleBinding of [`bootstrap_objects`], while keeping
/// everything it has; `None` when it holds it already (nothing to write).
///
/// * Labels and annotations: the policy's keys the stored object lacks are added; the stored
///   values win.
/// * Roles: the policy's rules the stored ones do not cover (kube's `Covers`:
///   [`super::escalation::uncovered`], one rule per group, resource, verb and name, appended as
///   kube appends them); the stored rules all stay. A ClusterRole the policy aggregates keeps its
///   rules (the aggregation controller writes them) and gets the policy's
///   `clusterRoleSelectors` it lacks; one the policy does not aggregate loses a stored
///   `aggregationRule`.
/// * Bindings: the policy's subjects the stored binding lacks (kube compares them field for
///   field, after kube's defaults) are appended; a binding of another role is
///   [`Reconciled::Recreate`].
/// * An object annotated `autoupdate: "false"` that would change is [`Reconciled::Protected`].
pub fn reconcile(existing: &Value, expected: &Value) -> Option<Reconciled> {
    let binding = match str_at(expected, &["kind"]) {
        "ClusterRole" | "Role" => false,
        "ClusterRoleBinding" | "RoleBinding" => true,
        _ => return None,
    };
    let protected = str_at(
        existing,
        &["metadata", "annotations", AUTOUPDATE_ANNOTATION_KEY],
    ) == "false";
    if binding && role_ref_key(existing) != role_ref_key(expected) {
        return Some(if protected {
            Reconciled::Protected
        } else {
            Reconciled::Recreate(expected.clone())
        });
    }
    let mut out = existing.clone();
    let mut changed = add_missing_keys(&mut out, expected, "labels");
    changed |= add_missing_keys(&mut out, expected, "annotations");
    if binding {
        changed |= add_missing_subjects(&mut out, expected);
    } else {
        changed |= add_missing_rules(&mut out, expected);
        changed |= reconcile_aggregation(&mut out, expected);
    }
    match (changed, protected) {
        (false, _) => None,
        (true, true) => Some(Reconciled::Protected),
        (true, false) => Some(Reconciled::Update(out)),
    }
}

/// Adds to `metadata.FIELD` (labels, annotations) of `out` the keys of `expected`'s it lacks
/// (kube's `merge(expected, existing)`: the existing values win); whether it added any.
fn add_missing_keys(out: &mut Value, expected: &Value, field: &str) -> bool {
    let Some(wanted) = expected
        .get("metadata")
        .and_then(|m| m.get(field))
        .and_then(Value::as_object)
    else {
        return false;
    };
    let Some(meta) = out.get("metadata").and_then(Value::as_object) else {
        return false;
    };
    let have = meta.get(field).and_then(Value::as_object);
    let missing: Vec<(String, Value)> = wanted
        .iter()
        .filter(|(k, _)| !have.is_some_and(|h| h.contains_key(k.as_str())))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if missing.is_empty() {
        return false;
    }
    let Some(meta) = out.get_mut("metadata").and_then(Value::as_object_mut) else {
        return false;
    };
    let map = meta
        .entry(field)
        .or_insert_with(|| Value::Object(Map::new()));
    if !map.is_object() {
        *map = Value::Object(Map::new());
    }
    let Some(map) = map.as_object_mut() else {
        return false;
    };
    map.extend(missing);
    true
}

/// Appends to `out`'s rules those of `expected` they do not cover; whether there were any.
fn add_missing_rules(out: &mut Value, expected: &Value) -> bool {
    // The policy's aggregated roles carry the rules aggregation gives them; the stored ones are
    // the aggregation controller's to write (kube's bootstrap copies have none).
    if has_aggregation_rule(expected) {
        return false;
    }
    let missing = super::escalation::uncovered(&parse_rules(out), &parse_rules(expected));
    if missing.is_empty() {
        return false;
    }
    let Some(obj) = out.as_object_mut() else {
        return false;
    };
    let rules = obj
        .entry("rules")
        .or_insert_with(|| Value::Array(Vec::new()));
    if !rules.is_array() {
        *rules = Value::Array(Vec::new());
    }
    let Some(rules) = rules.as_array_mut() else {
        return false;
    };
    rules.extend(missing.iter().map(PolicyRule::to_json));
    true
}

/// kube's aggregation rule reconciliation: the policy's `clusterRoleSelectors` the stored
/// `aggregationRule` lacks are appended (semantically equal selectors are the same); a stored
/// `aggregationRule` the policy does not have is removed. Whether `out` changed.
fn reconcile_aggregation(out: &mut Value, expected: &Value) -> bool {
    let Some(obj) = out.as_object_mut() else {
        return false;
    };
    if !has_aggregation_rule(expected) {
        return obj.remove("aggregationRule").is_some_and(|r| r.is_object());
    }
    let selectors = |rule: Option<&Value>| -> Vec<Value> {
        rule.and_then(|r| r.get("clusterRoleSelectors"))
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let mut all = selectors(obj.get("aggregationRule"));
    let have: Vec<Value> = all.iter().map(semantic).collect();
    let missing: Vec<Value> = selectors(expected.get("aggregationRule"))
        .into_iter()
        .filter(|s| !have.contains(&semantic(s)))
        .collect();
    if missing.is_empty() {
        return false;
    }
    all.extend(missing);
    let rule = obj
        .entry("aggregationRule")
        .or_insert_with(|| Value::Object(Map::new()));
    if !rule.is_object() {
        *rule = Value::Object(Map::new());
    }
    let Some(rule) = rule.as_object_mut() else {
        return false;
    };
    rule.insert("clusterRoleSelectors".into(), Value::Array(all));
    true
}

/// A value as apimachinery's `equality.Semantic` compares it: nulls, empty lists and empty
/// objects are the same as absent fields.
fn semantic(v: &Value) -> Value {
    let empty = |v: &Value| match v {
        Value::Null => true,
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
        _ => false,
    };
    match v {
        Value::Object(o) => Value::Object(
            o.iter()
                .map(|(k, v)| (k.clone(), semantic(v)))
                .filter(|(_, v)| !empty(v))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(semantic).collect()),
        other => other.clone(),
    }
}

/// Appends to `out`'s subjects those of `expected` it lacks; whether there were any.
fn add_missing_subjects(out: &mut Value, expected: &Value) -> bool {
    let list = |v: &Value| -> Vec<Value> {
        v.get("subjects")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let mut have: Vec<[String; 4]> = list(&*out).iter().map(subject_key).collect();
    let mut missing = Vec::new();
    for subject in list(expected) {
        let key = subject_key(&subject);
        if !have.contains(&key) {
            have.push(key);
            missing.push(subject);
        }
    }
    if missing.is_empty() {
        return false;
    }
    let Some(obj) = out.as_object_mut() else {
        return false;
    };
    let subjects = obj
        .entry("subjects")
        .or_insert_with(|| Value::Array(Vec::new()));
    if !subjects.is_array() {
        *subjects = Value::Array(Vec::new());
    }
    let Some(subjects) = subjects.as_array_mut() else {
        return false;
    };
    subjects.extend(missing);
    true
}

/// A subject as kube compares them (`rbacv1.Subject` equality) once defaulted: a User or
/// Group without an `apiGroup` is in RBAC's group.
fn subject_key(subject: &Value) -> [String; 4] {
    let kind = str_at(subject, &["kind"]);
    let group = match str_at(subject, &["apiGroup"]) {
        "" if matches!(kind, "User" | "Group") => RBAC_GROUP,
        group => group,
    };
    [
        kind,
        group,
        str_at(subject, &["name"]),
        str_at(subject, &["namespace"]),
    ]
    .map(str::to_owned)
}

/// A binding's `roleRef` as kube compares them once defaulted (no `apiGroup`: RBAC's).
fn role_ref_key(binding: &Value) -> (&str, &str, &str) {
    let group = match str_at(binding, &["roleRef", "apiGroup"]) {
        "" => RBAC_GROUP,
        group => group,
    };
    (
        group,
        str_at(binding, &["roleRef", "kind"]),
        str_at(binding, &["roleRef", "name"]),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    // -- fixtures ------------------------------------------------------------

    #[derive(Default)]
    struct Store {
        cluster_roles: Vec<Value>,
        roles: Vec<Value>,
        cluster_role_bindings: Vec<Value>,
        role_bindings: Vec<Value>,
        list_cluster_roles: bool,
    }

    fn name_of(v: &Value) -> &str {
        str_at(v, &["metadata", "name"])
    }

    fn ns_of(v: &Value) -> &str {
        str_at(v, &["metadata", "namespace"])
    }

    impl RbacObjects for Store {
        fn cluster_role(&self, name: &str) -> Option<Value> {
            self.cluster_roles
                .iter()
                .find(|r| name_of(r) == name)
                .cloned()
        }
        fn role(&self, namespace: &str, name: &str) -> Option<Value> {
            self.roles
                .iter()
                .find(|r| ns_of(r) == namespace && name_of(r) == name)
                .cloned()
        }
        fn cluster_role_bindings(&self) -> Vec<Value> {
            self.cluster_role_bindings.clone()
        }
        fn role_bindings(&self, namespace: &str) -> Vec<Value> {
            self.role_bindings
                .iter()
                .filter(|b| ns_of(b) == namespace)
                .cloned()
                .collect()
        }
        fn cluster_roles(&self) -> Vec<Value> {
            if self.list_cluster_roles {
                self.cluster_roles.clone()
            } else {
                Vec::new()
            }
        }
    }

    impl Store {
        fn bootstrap() -> Store {
            let mut s = Store::default();
            for o in bootstrap_objects() {
                match o["kind"].as_str() {
                    Some("ClusterRole") => s.cluster_roles.push(o),
                    Some("ClusterRoleBinding") => s.cluster_role_bindings.push(o),
                    Some("Role") => s.roles.push(o),
                    Some("RoleBinding") => s.role_bindings.push(o),
                    other => panic!("unexpected kind {other:?}"),
                }
            }
            s
        }
        fn with(mut self, o: Value) -> Store {
            match o["kind"].as_str() {
                Some("ClusterRole") => self.cluster_roles.push(o),
                Some("Role") => self.roles.push(o),
                Some("ClusterRoleBinding") => self.cluster_role_bindings.push(o),
                Some("RoleBinding") => self.role_bindings.push(o),
                other => panic!("unexpected kind {other:?}"),
            }
            self
        }
    }

    fn user(name: &str, groups: &[&str]) -> UserInfo {
        UserInfo {
            name: name.to_owned(),
            uid: format!("uid-{name}"),
            groups: groups.iter().map(|g| (*g).to_owned()).collect(),
            extra: Default::default(),
        }
    }

    fn alice() -> UserInfo {
        user("alice", &["system:authenticated"])
    }

    fn res(verb: &str, group: &str, resource: &str, ns: &str, name: &str) -> Attributes {
        Attributes::resource(verb, group, resource, ns, name)
    }

    fn cluster_role(name: &str, rules: Value) -> Value {
        json!({"apiVersion": RBAC_API_VERSION, "kind": "ClusterRole",
               "metadata": {"name": name}, "rules": rules})
    }

    fn role(ns: &str, name: &str, rules: Value) -> Value {
        json!({"apiVersion": RBAC_API_VERSION, "kind": "Role",
               "metadata": {"name": name, "namespace": ns}, "rules": rules})
    }

    fn crb(name: &str, role_name: &str, subjects: Value) -> Value {
        json!({"apiVersion": RBAC_API_VERSION, "kind": "ClusterRoleBinding",
               "metadata": {"name": name}, "subjects": subjects,
               "roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": role_name}})
    }

    fn rb(ns: &str, name: &str, kind: &str, role_name: &str, subjects: Value) -> Value {
        json!({"apiVersion": RBAC_API_VERSION, "kind": "RoleBinding",
               "metadata": {"name": name, "namespace": ns}, "subjects": subjects,
               "roleRef": {"apiGroup": RBAC_GROUP, "kind": kind, "name": role_name}})
    }

    fn user_subject(name: &str) -> Value {
        json!([{"kind": "User", "apiGroup": RBAC_GROUP, "name": name}])
    }

    /// A store where alice is bound cluster-wide to a ClusterRole with `rules`.
    fn alice_with_rules(rules: Value) -> Store {
        Store::default()
            .with(cluster_role("r", rules))
            .with(crb("b", "r", user_subject("alice")))
    }

    fn allowed(store: &Store, u: &UserInfo, a: &Attributes) -> bool {
        authorize(store, u, a).is_allowed()
    }

    // -- rule forms ------------------------------------------------------------

    #[test]
    fn exact_verb_group_resource() {
        let s =
            alice_with_rules(json!([{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}]));
        assert!(allowed(&s, &alice(), &res("get", "", "pods", "ns", "p")));
        assert!(!allowed(&s, &alice(), &res("list", "", "pods", "ns", "")));
        assert!(!allowed(
            &s,
            &alice(),
            &res("get", "apps", "pods", "ns", "p")
        ));
        assert!(!allowed(
            &s,
            &alice(),
            &res("get", "", "configmaps", "ns", "p")
        ));
    }

    #[test]
    fn verb_wildcard() {
        let s =
            alice_with_rules(json!([{"verbs": ["*"], "apiGroups": [""], "resources": ["pods"]}]));
        for verb in ["get", "list", "create", "deletecollection", "escalate"] {
            assert!(
                allowed(&s, &alice(), &res(verb, "", "pods", "ns", "")),
                "{verb}"
            );
        }
    }

    #[test]
    fn group_wildcard() {
        let s = alice_with_rules(
            json!([{"verbs": ["list"], "apiGroups": ["*"], "resources": ["leases"]}]),
        );
        assert!(allowed(
            &s,
            &alice(),
            &res("list", "coordination.k8s.io", "leases", "", "")
        ));
        assert!(allowed(&s, &alice(), &res("list", "", "leases", "", "")));
        assert!(!allowed(&s, &alice(), &res("list", "", "pods", "", "")));
    }

    #[test]
    fn resource_wildcard_covers_subresources() {
        let s =
            alice_with_rules(json!([{"verbs": ["get"], "apiGroups": [""], "resources": ["*"]}]));
        assert!(allowed(&s, &alice(), &res("get", "", "secrets", "ns", "s")));
        assert!(allowed(
            &s,
            &alice(),
            &res("get", "", "pods", "ns", "p").with_subresource("log")
        ));
    }

    #[test]
    fn plain_resource_does_not_cover_subresource() {
        let s =
            alice_with_rules(json!([{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}]));
        assert!(!allowed(
            &s,
            &alice(),
            &res("get", "", "pods", "ns", "p").with_subresource("status")
        ));
    }

    #[test]
    fn resource_slash_subresource_exact() {
        let s = alice_with_rules(
            json!([{"verbs": ["update"], "apiGroups": [""], "resources": ["pods/status"]}]),
        );
        assert!(allowed(
            &s,
            &alice(),
            &res("update", "", "pods", "ns", "p").with_subresource("status")
        ));
        assert!(!allowed(
            &s,
            &alice(),
            &res("update", "", "pods", "ns", "p")
        ));
        assert!(!allowed(
            &s,
            &alice(),
            &res("update", "", "nodes", "", "n").with_subresource("status")
        ));
        assert!(!allowed(
            &s,
            &alice(),
            &res("update", "", "pods", "ns", "p").with_subresource("log")
        ));
    }

    #[test]
    fn star_slash_subresource() {
        let s = alice_with_rules(
            json!([{"verbs": ["patch"], "apiGroups": ["*"], "resources": ["*/status"]}]),
        );
        assert!(allowed(
            &s,
            &alice(),
            &res("patch", "", "pods", "ns", "p").with_subresource("status")
        ));
        assert!(allowed(
            &s,
            &alice(),
            &res("patch", "", "nodes", "", "n").with_subresource("status")
        ));
        assert!(!allowed(&s, &alice(), &res("patch", "", "pods", "ns", "p")));
        assert!(!allowed(
            &s,
            &alice(),
            &res("patch", "", "pods", "ns", "p").with_subresource("scale")
        ));
        // `*/status` must not match a longer subresource ending in "status".
        assert!(!allowed(
            &s,
            &alice(),
            &res("patch", "", "pods", "ns", "p").with_subresource("xstatus")
        ));
    }

    #[test]
    fn resource_slash_star_is_literal_like_kube() {
        // kube has no `resource/*` wildcard: it only matches subresource "*".
        let s = alice_with_rules(
            json!([{"verbs": ["get"], "apiGroups": [""], "resources": ["pods/*"]}]),
        );
        assert!(!allowed(
            &s,
            &alice(),
            &res("get", "", "pods", "ns", "p").with_subresource("log")
        ));
        assert!(!allowed(&s, &alice(), &res("get", "", "pods", "ns", "p")));
        assert!(allowed(
            &s,
            &alice(),
            &res("get", "", "pods", "ns", "p").with_subresource("*")
        ));
    }

    #[test]
    fn resource_names() {
        let s = alice_with_rules(
            json!([{"verbs": ["*"], "apiGroups": [""], "resources": ["configmaps"],
                                         "resourceNames": ["cm1", "cm2"]}]),
        );
        let a = alice();
        assert!(allowed(&s, &a, &res("get", "", "configmaps", "ns", "cm1")));
        assert!(allowed(
            &s,
            &a,
            &res("update", "", "configmaps", "ns", "cm2")
        ));
        assert!(!allowed(&s, &a, &res("get", "", "configmaps", "ns", "cm3")));
        // Unnamed requests never match a rule with resourceNames.
        assert!(!allowed(&s, &a, &res("list", "", "configmaps", "ns", "")));
        assert!(!allowed(&s, &a, &res("watch", "", "configmaps", "ns", "")));
        assert!(!allowed(&s, &a, &res("create", "", "configmaps", "ns", "")));
        assert!(!allowed(
            &s,
            &a,
            &res("deletecollection", "", "configmaps", "ns", "")
        ));
    }

    #[test]
    fn resource_names_with_subresource() {
        let s = alice_with_rules(
            json!([{"verbs": ["get"], "apiGroups": [""], "resources": ["pods/log"],
                                         "resourceNames": ["web"]}]),
        );
        assert!(allowed(
            &s,
            &alice(),
            &res("get", "", "pods", "ns", "web").with_subresource("log")
        ));
        assert!(!allowed(
            &s,
            &alice(),
            &res("get", "", "pods", "ns", "db").with_subresource("log")
        ));
    }

    #[test]
    fn empty_verbs_or_groups_never_match() {
        let s = alice_with_rules(json!([
            {"verbs": [], "apiGroups": ["*"], "resources": ["*"]},
            {"verbs": ["*"], "resources": ["*"]},
        ]));
        assert!(!allowed(&s, &alice(), &res("get", "", "pods", "ns", "p")));
    }

    #[test]
    fn non_resource_urls() {
        let s = alice_with_rules(json!([
            {"verbs": ["get"], "nonResourceURLs": ["/healthz", "/apis/*"]},
            {"verbs": ["post"], "nonResourceURLs": ["/logs*"]},
        ]));
        let a = alice();
        assert!(allowed(
            &s,
            &a,
            &Attributes::non_resource("get", "/healthz")
        ));
        assert!(!allowed(
            &s,
            &a,
            &Attributes::non_resource("get", "/healthz/ping")
        ));
        assert!(allowed(
            &s,
            &a,
            &Attributes::non_resource("get", "/apis/apps/v1")
        ));
        assert!(allowed(&s, &a, &Attributes::non_resource("get", "/apis/")));
        assert!(!allowed(&s, &a, &Attributes::non_resource("get", "/apis")));
        assert!(!allowed(
            &s,
            &a,
            &Attributes::non_resource("post", "/healthz")
        ));
        assert!(allowed(
            &s,
            &a,
            &Attributes::non_resource("post", "/logsfoo/bar")
        ));
        assert!(!allowed(
            &s,
            &a,
            &Attributes::non_resource("get", "/metrics")
        ));
    }

    #[test]
    fn non_resource_star_and_kind_separation() {
        let s = alice_with_rules(json!([
            {"verbs": ["*"], "nonResourceURLs": ["*"]},
        ]));
        assert!(allowed(
            &s,
            &alice(),
            &Attributes::non_resource("delete", "/anything/at/all")
        ));
        // A non-resource rule never grants resources...
        assert!(!allowed(&s, &alice(), &res("get", "", "pods", "ns", "p")));
        // ...and a resource rule never grants paths.
        let s = alice_with_rules(json!([{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}]));
        assert!(!allowed(
            &s,
            &alice(),
            &Attributes::non_resource("get", "/healthz")
        ));
        assert!(allowed(&s, &alice(), &res("get", "", "pods", "ns", "p")));
    }

    // -- bindings and subjects ---------------------------------------------------

    #[test]
    fn cluster_role_binding_grants_everywhere() {
        let s = alice_with_rules(
            json!([{"verbs": ["list"], "apiGroups": [""], "resources": ["pods", "nodes"]}]),
        );
        assert!(allowed(&s, &alice(), &res("list", "", "pods", "a", "")));
        assert!(allowed(&s, &alice(), &res("list", "", "pods", "b", "")));
        assert!(allowed(&s, &alice(), &res("list", "", "pods", "", "")));
        assert!(allowed(&s, &alice(), &res("list", "", "nodes", "", "")));
        assert!(!allowed(
            &s,
            &user("bob", &[]),
            &res("list", "", "pods", "a", "")
        ));
    }

    #[test]
    fn role_binding_to_role_is_namespaced() {
        let s = Store::default()
            .with(role(
                "foo",
                "cm-editor",
                json!([{"verbs": ["create"], "apiGroups": [""], "resources": ["configmaps"]}]),
            ))
            .with(rb("foo", "b", "Role", "cm-editor", user_subject("alice")));
        assert!(allowed(
            &s,
            &alice(),
            &res("create", "", "configmaps", "foo", "")
        ));
        assert!(!allowed(
            &s,
            &alice(),
            &res("create", "", "configmaps", "bar", "")
        ));
        assert!(!allowed(
            &s,
            &alice(),
            &res("create", "", "configmaps", "", "")
        ));
    }

    #[test]
    fn role_binding_resolves_role_in_its_own_namespace() {
        // A Role of the same name in another namespace must not be used.
        let s = Store::default()
            .with(role(
                "other",
                "r",
                json!([{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}]),
            ))
            .with(rb("foo", "b", "Role", "r", user_subject("alice")));
        let d = authorize(&s, &alice(), &res("get", "", "pods", "foo", "p"));
        assert_eq!(
            d,
            Decision::Deny {
                reason: r#"RBAC: role.rbac.authorization.k8s.io "r" not found"#.into()
            }
        );
    }

    #[test]
    fn role_binding_to_cluster_role_grants_only_in_binding_namespace() {
        let s = Store::default()
            .with(cluster_role("reader", json!([{"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods", "nodes"]}])))
            .with(rb("foo", "read", "ClusterRole", "reader", user_subject("alice")));
        assert!(allowed(&s, &alice(), &res("list", "", "pods", "foo", "")));
        assert!(!allowed(&s, &alice(), &res("list", "", "pods", "bar", "")));
        // Cluster-scoped resources are never reachable through a RoleBinding.
        assert!(!allowed(&s, &alice(), &res("get", "", "nodes", "", "n1")));
        assert_eq!(
            authorize(&s, &alice(), &res("list", "", "pods", "foo", "")).reason(),
            r#"RBAC: allowed by RoleBinding "read/foo" of ClusterRole "reader" to User "alice""#
        );
    }

    #[test]
    fn group_subject_and_reason() {
        let s = Store::default()
            .with(role(
                "ns",
                "r",
                json!([{"verbs": ["get"], "apiGroups": [""], "resources": ["secrets"]}]),
            ))
            .with(rb(
                "ns",
                "b",
                "Role",
                "r",
                json!([{"kind": "Group", "apiGroup": RBAC_GROUP, "name": "g"}]),
            ));
        let d = authorize(
            &s,
            &user("carol", &["g"]),
            &res("get", "", "secrets", "ns", "s"),
        );
        assert_eq!(
            d,
            Decision::Allow {
                reason: r#"RBAC: allowed by RoleBinding "b/ns" of Role "r" to Group "g""#.into()
            }
        );
        assert!(!allowed(
            &s,
            &user("dave", &["h"]),
            &res("get", "", "secrets", "ns", "s")
        ));
    }

    #[test]
    fn cluster_role_binding_reason_names_first_matching_subject() {
        let s = Store::default()
            .with(cluster_role(
                "y",
                json!([{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}]),
            ))
            .with(crb(
                "x",
                "y",
                json!([
                    {"kind": "Group", "apiGroup": RBAC_GROUP, "name": "nobody"},
                    {"kind": "User", "apiGroup": RBAC_GROUP, "name": "alice"},
                    {"kind": "Group", "apiGroup": RBAC_GROUP, "name": "system:authenticated"},
                ]),
            ));
        assert_eq!(
            authorize(&s, &alice(), &res("get", "", "pods", "ns", "p")),
            Decision::Allow {
                reason:
                    r#"RBAC: allowed by ClusterRoleBinding "x" of ClusterRole "y" to User "alice""#
                        .into()
            }
        );
    }

    #[test]
    fn unknown_subject_kind_is_ignored() {
        let s = Store::default()
            .with(cluster_role(
                "y",
                json!([{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}]),
            ))
            .with(crb(
                "x",
                "y",
                json!([{"kind": "Robot", "name": "alice"}, {"kind": "user", "name": "alice"}]),
            ));
        assert!(!allowed(&s, &alice(), &res("get", "", "pods", "ns", "p")));
    }

    #[test]
    fn service_account_subjects() {
        let sa = user(
            "system:serviceaccount:foo:builder",
            &["system:serviceaccounts", "system:serviceaccounts:foo"],
        );
        let rules = json!([{"verbs": ["get"], "apiGroups": [""], "resources": ["configmaps"]}]);
        // Namespace defaulted to the RoleBinding's.
        let s = Store::default()
            .with(cluster_role("r", rules.clone()))
            .with(rb(
                "foo",
                "b",
                "ClusterRole",
                "r",
                json!([{"kind": "ServiceAccount", "name": "builder"}]),
            ));
        assert_eq!(
            authorize(&s, &sa, &res("get", "", "configmaps", "foo", "c")).reason(),
            r#"RBAC: allowed by RoleBinding "b/foo" of ClusterRole "r" to ServiceAccount "builder/foo""#
        );
        // Same defaulting in another namespace does not match that SA.
        let s2 = Store::default()
            .with(cluster_role("r", rules.clone()))
            .with(rb(
                "bar",
                "b",
                "ClusterRole",
                "r",
                json!([{"kind": "ServiceAccount", "name": "builder"}]),
            ));
        assert!(!allowed(
            &s2,
            &sa,
            &res("get", "", "configmaps", "bar", "c")
        ));
        // Explicit namespace in a ClusterRoleBinding.
        let s3 = Store::default()
            .with(cluster_role("r", rules.clone()))
            .with(crb(
                "c",
                "r",
                json!([{"kind": "ServiceAccount", "name": "builder", "namespace": "foo"}]),
            ));
        assert_eq!(
            authorize(&s3, &sa, &res("get", "", "configmaps", "zzz", "c")).reason(),
            r#"RBAC: allowed by ClusterRoleBinding "c" of ClusterRole "r" to ServiceAccount "builder/foo""#
        );
        // No namespace in a ClusterRoleBinding never matches.
        let s4 = Store::default().with(cluster_role("r", rules)).with(crb(
            "c",
            "r",
            json!([{"kind": "ServiceAccount", "name": "builder"}]),
        ));
        assert!(!allowed(
            &s4,
            &sa,
            &res("get", "", "configmaps", "foo", "c")
        ));
        // A user whose name merely resembles the SA does not match.
        assert!(!allowed(
            &s3,
            &user("system:serviceaccount:foo:builderx", &[]),
            &res("get", "", "configmaps", "foo", "c")
        ));
        assert!(!allowed(
            &s3,
            &user("builder", &[]),
            &res("get", "", "configmaps", "foo", "c")
        ));
    }

    #[test]
    fn service_account_subject_explicit_namespace_in_role_binding() {
        let s = Store::default()
            .with(role(
                "foo",
                "r",
                json!([{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}]),
            ))
            .with(rb(
                "foo",
                "b",
                "Role",
                "r",
                json!([{"kind": "ServiceAccount", "name": "ci", "namespace": "tools"}]),
            ));
        let d = authorize(
            &s,
            &user("system:serviceaccount:tools:ci", &[]),
            &res("get", "", "pods", "foo", "p"),
        );
        assert_eq!(
            d.reason(),
            r#"RBAC: allowed by RoleBinding "b/foo" of Role "r" to ServiceAccount "ci/tools""#
        );
        assert!(!allowed(
            &s,
            &user("system:serviceaccount:foo:ci", &[]),
            &res("get", "", "pods", "foo", "p")
        ));
    }

    #[test]
    fn no_special_groups() {
        let s = Store::default();
        assert_eq!(
            authorize(
                &s,
                &user("root", &["system:masters"]),
                &res("get", "", "pods", "ns", "p")
            ),
            Decision::Deny {
                reason: String::new()
            }
        );
    }

    // -- resolution errors --------------------------------------------------------

    #[test]
    fn missing_roles_make_the_deny_reason() {
        let s = Store::default()
            .with(crb("b1", "gone", user_subject("alice")))
            .with(crb("b2", "gone", user_subject("alice")))
            .with(rb("ns", "b3", "Role", "missing", user_subject("alice")));
        assert_eq!(
            authorize(&s, &alice(), &res("get", "", "pods", "", "p")).reason(),
            r#"RBAC: clusterrole.rbac.authorization.k8s.io "gone" not found"#
        );
        assert_eq!(
            authorize(&s, &alice(), &res("get", "", "pods", "ns", "p")).reason(),
            r#"RBAC: [clusterrole.rbac.authorization.k8s.io "gone" not found, role.rbac.authorization.k8s.io "missing" not found]"#
        );
    }

    #[test]
    fn errors_do_not_block_other_bindings() {
        let s = Store::default()
            .with(crb("broken", "gone", user_subject("alice")))
            .with(cluster_role(
                "r",
                json!([{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}]),
            ))
            .with(crb("ok", "r", user_subject("alice")));
        assert!(allowed(&s, &alice(), &res("get", "", "pods", "ns", "p")));
    }

    #[test]
    fn bad_role_ref_kinds() {
        let mut binding = crb("b", "r", user_subject("alice"));
        binding["roleRef"]["kind"] = json!("Role");
        let s = Store::default()
            .with(role(
                "",
                "r",
                json!([{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}]),
            ))
            .with(binding);
        assert_eq!(
            authorize(&s, &alice(), &res("get", "", "pods", "ns", "p")).reason(),
            r#"RBAC: role.rbac.authorization.k8s.io "r" not found"#
        );
        let mut binding = crb("b", "r", user_subject("alice"));
        binding["roleRef"]["kind"] = json!("Policy");
        let s = Store::default().with(binding);
        assert_eq!(
            authorize(&s, &alice(), &res("get", "", "pods", "ns", "p")).reason(),
            r#"RBAC: unsupported role reference kind: "Policy""#
        );
    }

    #[test]
    fn malformed_objects_do_not_panic() {
        let s = Store {
            cluster_roles: vec![
                json!({"metadata": {"name": "r"}, "rules": "nope"}),
                json!(null),
            ],
            cluster_role_bindings: vec![
                json!(42),
                json!({"metadata": {"name": "x"}, "subjects": {"kind": "User"}}),
                json!({"subjects": [{"kind": "User", "name": "alice"}], "roleRef": {"kind": "ClusterRole", "name": "r"}}),
                json!({"subjects": [{"kind": "User", "name": "alice"}, 7], "roleRef": null}),
            ],
            role_bindings: vec![
                json!({"metadata": {"namespace": "ns"}, "subjects": [{"kind": "User", "name": "alice"}]}),
            ],
            ..Store::default()
        };
        let d = authorize(&s, &alice(), &res("get", "", "pods", "ns", "p"));
        assert!(!d.is_allowed());
        assert_eq!(d.reason(), r#"RBAC: unsupported role reference kind: """#);
        let (r, n, incomplete) = rules_for(&s, &alice(), "ns");
        assert!(r.is_empty() && n.is_empty() && incomplete);
    }

    // -- aggregation ----------------------------------------------------------------

    fn aggregated(name: &str, label: &str) -> Value {
        json!({"apiVersion": RBAC_API_VERSION, "kind": "ClusterRole", "metadata": {"name": name},
               "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {label: "true"}}]},
               "rules": []})
    }

    fn labelled(name: &str, labels: Value, rules: Value) -> Value {
        json!({"apiVersion": RBAC_API_VERSION, "kind": "ClusterRole",
               "metadata": {"name": name, "labels": labels}, "rules": rules})
    }

    #[test]
    fn aggregation_by_match_labels() {
        let mut s = Store::default()
            .with(aggregated(
                "monitoring",
                "example.com/aggregate-to-monitoring",
            ))
            .with(labelled(
                "mon-pods",
                json!({"example.com/aggregate-to-monitoring": "true"}),
                json!([{"verbs": ["list"], "apiGroups": [""], "resources": ["pods"]}]),
            ))
            .with(labelled(
                "mon-other",
                json!({"example.com/aggregate-to-monitoring": "false"}),
                json!([{"verbs": ["list"], "apiGroups": [""], "resources": ["secrets"]}]),
            ))
            .with(crb("b", "monitoring", user_subject("alice")));
        // Without listing the host only has the stored (empty) rules.
        assert!(!allowed(&s, &alice(), &res("list", "", "pods", "ns", "")));
        s.list_cluster_roles = true;
        assert!(allowed(&s, &alice(), &res("list", "", "pods", "ns", "")));
        assert!(!allowed(
            &s,
            &alice(),
            &res("list", "", "secrets", "ns", "")
        ));
        assert_eq!(
            authorize(&s, &alice(), &res("list", "", "pods", "ns", "")).reason(),
            r#"RBAC: allowed by ClusterRoleBinding "b" of ClusterRole "monitoring" to User "alice""#
        );
    }

    #[test]
    fn aggregation_is_transitive_into_bootstrap_roles() {
        // A CRD's role labelled aggregate-to-view reaches view, edit and admin.
        let mut s = Store::bootstrap()
            .with(labelled("widgets-view", json!({AGGREGATE_TO_VIEW: "true"}),
                           json!([{"verbs": ["get", "list"], "apiGroups": ["example.com"], "resources": ["widgets"]}])))
            .with(rb("ns", "v", "ClusterRole", "view", user_subject("v")))
            .with(rb("ns", "a", "ClusterRole", "admin", user_subject("a")));
        s.list_cluster_roles = true;
        let list_widgets = res("list", "example.com", "widgets", "ns", "");
        assert!(allowed(&s, &user("v", &[]), &list_widgets));
        assert!(allowed(&s, &user("a", &[]), &list_widgets));
        assert!(!allowed(
            &s,
            &user("v", &[]),
            &res("delete", "example.com", "widgets", "ns", "w")
        ));
        // Bootstrap content still works with live aggregation.
        assert!(allowed(
            &s,
            &user("a", &[]),
            &res(
                "create",
                "rbac.authorization.k8s.io",
                "rolebindings",
                "ns",
                ""
            )
        ));
        assert!(!allowed(
            &s,
            &user("v", &[]),
            &res("get", "", "secrets", "ns", "s")
        ));
    }

    #[test]
    fn aggregation_match_expressions_and_cycles() {
        let selector_role = json!({"apiVersion": RBAC_API_VERSION, "kind": "ClusterRole",
            "metadata": {"name": "agg", "labels": {"tier": "b"}},
            "aggregationRule": {"clusterRoleSelectors": [{"matchExpressions": [
                {"key": "tier", "operator": "In", "values": ["a", "b"]},
                {"key": "skip", "operator": "DoesNotExist"}]}]},
            "rules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["own"]}]});
        // `loop` selects `agg`, which selects `loop` back (tier b).
        let loop_role = json!({"apiVersion": RBAC_API_VERSION, "kind": "ClusterRole",
            "metadata": {"name": "loop", "labels": {"tier": "b"}},
            "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"tier": "b"}}]},
            "rules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["looped"]}]});
        let mut s = Store::default()
            .with(selector_role)
            .with(loop_role)
            .with(labelled(
                "a1",
                json!({"tier": "a"}),
                json!([{"verbs": ["get"], "apiGroups": [""], "resources": ["a1"]}]),
            ))
            .with(labelled(
                "a2",
                json!({"tier": "a", "skip": "1"}),
                json!([{"verbs": ["get"], "apiGroups": [""], "resources": ["a2"]}]),
            ))
            .with(labelled(
                "c",
                json!({"tier": "c"}),
                json!([{"verbs": ["get"], "apiGroups": [""], "resources": ["c"]}]),
            ))
            .with(crb("b", "agg", user_subject("alice")));
        s.list_cluster_roles = true;
        let can = |r: &str| allowed(&s, &alice(), &res("get", "", r, "ns", "x"));
        assert!(can("own"), "stored rules are kept");
        assert!(can("a1"));
        assert!(!can("a2"), "DoesNotExist excludes a2");
        assert!(!can("c"));
        assert!(can("looped"));
    }

    #[test]
    fn selector_semantics() {
        let labels = json!({"a": "1", "b": "2"});
        let m = |sel: Value| selector_matches(&sel, Some(&labels));
        assert!(m(json!({})));
        assert!(!m(json!(null)));
        assert!(m(json!({"matchLabels": {"a": "1"}})));
        assert!(!m(json!({"matchLabels": {"a": "1", "c": "3"}})));
        assert!(m(
            json!({"matchExpressions": [{"key": "c", "operator": "NotIn", "values": ["x"]}]})
        ));
        assert!(!m(
            json!({"matchExpressions": [{"key": "a", "operator": "NotIn", "values": ["1"]}]})
        ));
        assert!(m(
            json!({"matchExpressions": [{"key": "b", "operator": "Exists"}]})
        ));
        assert!(!m(
            json!({"matchExpressions": [{"key": "b", "operator": "In", "values": []}]})
        ));
        assert!(!m(
            json!({"matchExpressions": [{"key": "b", "operator": "Gt", "values": ["1"]}]})
        ));
        assert!(!selector_matches(&json!({"matchLabels": {"a": "1"}}), None));
    }

    // -- bootstrap policy ------------------------------------------------------------

    fn bootstrap_with_namespace_binding(role_name: &str, who: &str) -> Store {
        Store::bootstrap().with(rb("foo", "rb", "ClusterRole", role_name, user_subject(who)))
    }

    #[test]
    fn view_cannot_read_secrets() {
        let s = bootstrap_with_namespace_binding("view", "alice");
        let a = alice();
        assert!(!allowed(&s, &a, &res("get", "", "secrets", "foo", "s")));
        assert!(!allowed(&s, &a, &res("list", "", "secrets", "foo", "")));
        assert!(allowed(&s, &a, &res("list", "", "configmaps", "foo", "")));
        assert!(allowed(&s, &a, &res("watch", "", "pods", "foo", "")));
        assert!(allowed(
            &s,
            &a,
            &res("get", "", "pods", "foo", "p").with_subresource("status")
        ));
        assert!(allowed(&s, &a, &res("get", "", "namespaces", "foo", "foo")));
        assert!(allowed(
            &s,
            &a,
            &res("list", "turtles.dev", "controllers", "foo", "")
        ));
        assert!(!allowed(
            &s,
            &a,
            &res("create", "", "configmaps", "foo", "")
        ));
        assert!(!allowed(
            &s,
            &a,
            &res("list", "rbac.authorization.k8s.io", "roles", "foo", "")
        ));
    }

    #[test]
    fn edit_can_create_configmaps_and_read_secrets() {
        let s = bootstrap_with_namespace_binding("edit", "alice");
        let a = alice();
        assert!(allowed(&s, &a, &res("create", "", "configmaps", "foo", "")));
        assert!(allowed(
            &s,
            &a,
            &res("delete", "", "configmaps", "foo", "cm")
        ));
        assert!(allowed(&s, &a, &res("get", "", "secrets", "foo", "s")));
        assert!(allowed(&s, &a, &res("create", "", "secrets", "foo", "")));
        assert!(allowed(
            &s,
            &a,
            &res("impersonate", "", "serviceaccounts", "foo", "sa")
        ));
        assert!(allowed(
            &s,
            &a,
            &res("create", "turtles.dev", "controllers", "foo", "")
        ));
        assert!(!allowed(
            &s,
            &a,
            &res("create", "", "configmaps", "bar", "")
        ));
        assert!(!allowed(
            &s,
            &a,
            &res(
                "create",
                "rbac.authorization.k8s.io",
                "rolebindings",
                "foo",
                ""
            )
        ));
        assert!(!allowed(
            &s,
            &a,
            &res("update", "", "pods", "foo", "p").with_subresource("status")
        ));
    }

    #[test]
    fn admin_can_manage_namespace_rbac_only() {
        let s = bootstrap_with_namespace_binding("admin", "alice");
        let a = alice();
        assert!(allowed(
            &s,
            &a,
            &res("create", "rbac.authorization.k8s.io", "roles", "foo", "")
        ));
        assert!(allowed(
            &s,
            &a,
            &res(
                "delete",
                "rbac.authorization.k8s.io",
                "rolebindings",
                "foo",
                "x"
            )
        ));
        assert!(allowed(&s, &a, &res("get", "", "secrets", "foo", "s")));
        assert!(allowed(&s, &a, &res("list", "", "configmaps", "foo", "")));
        assert!(!allowed(
            &s,
            &a,
            &res(
                "create",
                "rbac.authorization.k8s.io",
                "clusterroles",
                "",
                ""
            )
        ));
        assert!(!allowed(&s, &a, &res("list", "", "nodes", "", "")));
        assert!(!allowed(
            &s,
            &a,
            &res("create", "", "configmaps", "bar", "")
        ));
    }

    #[test]
    fn system_masters_is_cluster_admin_through_bootstrap_binding() {
        let s = Store::bootstrap();
        let root = user("root", &["system:masters", "system:authenticated"]);
        let d = authorize(
            &s,
            &root,
            &res(
                "delete",
                "apiextensions.k8s.io",
                "customresourcedefinitions",
                "",
                "x",
            ),
        );
        assert_eq!(
            d.reason(),
            r#"RBAC: allowed by ClusterRoleBinding "cluster-admin" of ClusterRole "cluster-admin" to Group "system:masters""#
        );
        assert!(allowed(
            &s,
            &root,
            &Attributes::non_resource("get", "/metrics")
        ));
        assert!(allowed(
            &s,
            &root,
            &res("update", "", "nodes", "", "n").with_subresource("status")
        ));
    }

    #[test]
    fn authenticated_basics() {
        let s = Store::bootstrap();
        let a = alice();
        for (group, resource) in [
            ("authorization.k8s.io", "selfsubjectaccessreviews"),
            ("authorization.k8s.io", "selfsubjectrulesreviews"),
            ("authentication.k8s.io", "selfsubjectreviews"),
        ] {
            assert!(
                allowed(&s, &a, &res("create", group, resource, "", "")),
                "{resource}"
            );
        }
        assert!(!allowed(
            &s,
            &a,
            &res(
                "create",
                "authorization.k8s.io",
                "subjectaccessreviews",
                "",
                ""
            )
        ));
        for path in [
            "/api",
            "/api/v1",
            "/apis",
            "/apis/apps/v1",
            "/version",
            "/healthz",
            "/readyz",
            "/openapi/v2",
        ] {
            assert!(
                allowed(&s, &a, &Attributes::non_resource("get", path)),
                "{path}"
            );
        }
        assert!(!allowed(
            &s,
            &a,
            &Attributes::non_resource("get", "/metrics")
        ));
        assert!(!allowed(&s, &a, &Attributes::non_resource("post", "/api")));
        assert!(!allowed(&s, &a, &res("list", "", "pods", "default", "")));
        assert_eq!(
            authorize(&s, &a, &Attributes::non_resource("get", "/api")).reason(),
            r#"RBAC: allowed by ClusterRoleBinding "system:discovery" of ClusterRole "system:discovery" to Group "system:authenticated""#
        );
    }

    #[test]
    fn unauthenticated_only_public_info() {
        let s = Store::bootstrap();
        let anon = user("system:anonymous", &["system:unauthenticated"]);
        assert!(allowed(
            &s,
            &anon,
            &Attributes::non_resource("get", "/healthz")
        ));
        assert!(allowed(
            &s,
            &anon,
            &Attributes::non_resource("get", "/version")
        ));
        assert!(!allowed(
            &s,
            &anon,
            &Attributes::non_resource("get", "/api")
        ));
        assert!(!allowed(
            &s,
            &anon,
            &res(
                "create",
                "authorization.k8s.io",
                "selfsubjectaccessreviews",
                "",
                ""
            )
        ));
    }

    #[test]
    fn monitoring_group_reads_metrics() {
        let s = Store::bootstrap();
        let m = user("prom", &["system:monitoring"]);
        assert!(allowed(
            &s,
            &m,
            &Attributes::non_resource("get", "/metrics")
        ));
        assert!(allowed(
            &s,
            &m,
            &Attributes::non_resource("get", "/readyz/etcd")
        ));
    }

    #[test]
    fn bootstrap_object_shapes() {
        let objects = bootstrap_objects();
        for o in &objects {
            assert_eq!(o["apiVersion"], RBAC_API_VERSION);
            assert_eq!(
                o["metadata"]["labels"][BOOTSTRAPPING_LABEL_KEY],
                BOOTSTRAPPING_LABEL_VALUE
            );
            assert_eq!(
                o["metadata"]["annotations"][AUTOUPDATE_ANNOTATION_KEY],
                "true"
            );
            let namespaced = o["kind"] == "Role" || o["kind"] == "RoleBinding";
            assert_eq!(o["metadata"].get("namespace").is_some(), namespaced);
        }
        let find = |kind: &str, name: &str| {
            objects
                .iter()
                .find(|o| o["kind"] == kind && o["metadata"]["name"] == name)
                .cloned()
                .unwrap_or_else(|| panic!("{kind} {name} missing"))
        };
        for name in [
            "cluster-admin",
            "admin",
            "edit",
            "view",
            "system:discovery",
            "system:basic-user",
            "system:public-info-viewer",
        ] {
            find("ClusterRole", name);
        }
        assert_eq!(
            find("ClusterRole", "cluster-admin")["rules"],
            json!([{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]},
                   {"verbs": ["*"], "nonResourceURLs": ["*"]}])
        );
        assert_eq!(
            find("ClusterRoleBinding", "cluster-admin"),
            json!({"apiVersion": RBAC_API_VERSION, "kind": "ClusterRoleBinding",
                   "metadata": {"name": "cluster-admin",
                                "labels": {BOOTSTRAPPING_LABEL_KEY: BOOTSTRAPPING_LABEL_VALUE},
                                "annotations": {AUTOUPDATE_ANNOTATION_KEY: "true"}},
                   "subjects": [{"kind": "Group", "apiGroup": RBAC_GROUP, "name": "system:masters"}],
                   "roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": "cluster-admin"}})
        );
        assert_eq!(
            find("ClusterRoleBinding", "system:public-info-viewer")["subjects"],
            json!([{"kind": "Group", "apiGroup": RBAC_GROUP, "name": "system:authenticated"},
                   {"kind": "Group", "apiGroup": RBAC_GROUP, "name": "system:unauthenticated"}])
        );
        assert!(find("ClusterRoleBinding", "system:node")
            .get("subjects")
            .is_none());
        let edit = find("ClusterRole", "edit");
        assert_eq!(edit["metadata"]["labels"][AGGREGATE_TO_ADMIN], "true");
        assert_eq!(
            edit["aggregationRule"],
            json!({"clusterRoleSelectors": [{"matchLabels": {AGGREGATE_TO_EDIT: "true"}}]})
        );
        // Every binding points at an existing role.
        for b in objects.iter().filter(|o| o["kind"] == "ClusterRoleBinding") {
            find(
                "ClusterRole",
                b["roleRef"]["name"].as_str().unwrap_or_default(),
            );
        }
    }

    #[test]
    fn bootstrap_aggregated_rules_are_prefilled_and_nested() {
        let objects = bootstrap_objects();
        let rules = |name: &str| -> Vec<Value> {
            objects
                .iter()
                .find(|o| o["kind"] == "ClusterRole" && o["metadata"]["name"] == name)
                .and_then(|o| o["rules"].as_array().cloned())
                .unwrap_or_default()
        };
        let (view, edit, admin) = (rules("view"), rules("edit"), rules("admin"));
        assert_eq!(view, rules("system:aggregate-to-view"));
        assert!(!view.is_empty());
        assert!(view.iter().all(|r| edit.contains(r)));
        assert!(edit.iter().all(|r| admin.contains(r)));
        assert!(rules("system:aggregate-to-admin")
            .iter()
            .all(|r| admin.contains(r)));
        assert!(edit.len() > view.len() && admin.len() > edit.len());
        // Order as kube's controller builds it: edit's rules, then aggregate-to-admin's.
        assert_eq!(admin[..edit.len()], edit[..]);
    }

    fn bootstrap_find(kind: &str, name: &str) -> Value {
        bootstrap_objects()
            .into_iter()
            .find(|o| o["kind"] == kind && o["metadata"]["name"] == name)
            .unwrap_or_else(|| panic!("{kind} {name} missing"))
    }

    /// kube 1.34's bootstrap policy (`cluster-roles.yaml`, `cluster-role-bindings.yaml`,
    /// `namespace-roles.yaml`, `namespace-role-bindings.yaml`) less the controllers'
    /// `system:controller:*` roles and bindings, name for name.
    #[test]
    fn bootstrap_names_are_kubes_without_controller_roles() {
        let objects = bootstrap_objects();
        let names = |kind: &str| -> Vec<String> {
            objects
                .iter()
                .filter(|o| o["kind"] == kind)
                .map(|o| match o["metadata"]["namespace"].as_str() {
                    Some(ns) => format!("{ns}/{}", name_of(o)),
                    None => name_of(o).to_owned(),
                })
                .collect()
        };
        let set = |names: &[&str]| -> std::collections::BTreeSet<String> {
            names.iter().map(|n| (*n).to_owned()).collect()
        };
        let cluster_roles = names("ClusterRole");
        let expected = set(&[
            "admin",
            "cluster-admin",
            "edit",
            "view",
            "system:aggregate-to-admin",
            "system:aggregate-to-edit",
            "system:aggregate-to-view",
            "system:auth-delegator",
            "system:basic-user",
            "system:certificates.k8s.io:certificatesigningrequests:nodeclient",
            "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient",
            "system:certificates.k8s.io:kube-apiserver-client-approver",
            "system:certificates.k8s.io:kube-apiserver-client-kubelet-approver",
            "system:certificates.k8s.io:kubelet-serving-approver",
            "system:certificates.k8s.io:legacy-unknown-approver",
            "system:discovery",
            "system:heapster",
            "system:kube-aggregator",
            "system:kube-controller-manager",
            "system:kube-dns",
            "system:kube-scheduler",
            "system:kubelet-api-admin",
            "system:monitoring",
            "system:node",
            "system:node-bootstrapper",
            "system:node-problem-detector",
            "system:node-proxier",
            "system:persistent-volume-provisioner",
            "system:public-info-viewer",
            "system:service-account-issuer-discovery",
            "system:volume-scheduler",
        ]);
        assert_eq!(cluster_roles.len(), expected.len(), "{cluster_roles:?}");
        assert_eq!(set_of(&cluster_roles), expected);
        let bindings = names("ClusterRoleBinding");
        let expected = set(&[
            "cluster-admin",
            "system:basic-user",
            "system:discovery",
            "system:kube-controller-manager",
            "system:kube-dns",
            "system:kube-scheduler",
            "system:monitoring",
            "system:node",
            "system:node-proxier",
            "system:public-info-viewer",
            "system:service-account-issuer-discovery",
            "system:volume-scheduler",
        ]);
        assert_eq!(bindings.len(), expected.len(), "{bindings:?}");
        assert_eq!(set_of(&bindings), expected);
        assert_eq!(
            names("Role"),
            [
                "kube-system/extension-apiserver-authentication-reader",
                "kube-system/system::leader-locking-kube-controller-manager",
                "kube-system/system::leader-locking-kube-scheduler",
            ]
        );
        assert_eq!(
            names("RoleBinding"),
            [
                "kube-system/system::extension-apiserver-authentication-reader",
                "kube-system/system::leader-locking-kube-controller-manager",
                "kube-system/system::leader-locking-kube-scheduler",
            ]
        );
        // Each RoleBinding's Role is beside it.
        for b in objects.iter().filter(|o| o["kind"] == "RoleBinding") {
            assert_eq!(b["roleRef"]["kind"], "Role");
            assert!(objects.iter().any(|r| r["kind"] == "Role"
                && r["metadata"]["namespace"] == b["metadata"]["namespace"]
                && r["metadata"]["name"] == b["roleRef"]["name"]));
        }
        // turtles names its Wasm controllers' roles so: none is bootstrapped.
        assert!(objects
            .iter()
            .all(|o| !name_of(o).starts_with("system:controller:")));
    }

    fn set_of(names: &[String]) -> std::collections::BTreeSet<String> {
        names.iter().cloned().collect()
    }

    /// Rule for rule as kube's `cluster-roles.yaml` lists them (1.34's default feature gates).
    #[test]
    fn bootstrap_scheduler_proxier_and_certificate_rules_are_kubes() {
        let rules = |name: &str| bootstrap_find("ClusterRole", name)["rules"].clone();
        let read = json!(["get", "list", "watch"]);
        let read_update = json!(["get", "list", "patch", "update", "watch"]);
        assert_eq!(
            rules("system:kube-scheduler"),
            json!([
                {"verbs": ["create", "patch", "update"], "apiGroups": ["", "events.k8s.io"], "resources": ["events"]},
                {"verbs": ["create"], "apiGroups": ["coordination.k8s.io"], "resources": ["leases"]},
                {"verbs": ["get", "list", "update", "watch"], "apiGroups": ["coordination.k8s.io"],
                 "resources": ["leases"], "resourceNames": ["kube-scheduler"]},
                {"verbs": ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"],
                 "apiGroups": ["coordination.k8s.io"], "resources": ["leasecandidates"]},
                {"verbs": read, "apiGroups": [""], "resources": ["nodes"]},
                {"verbs": ["delete", "get", "list", "watch"], "apiGroups": [""], "resources": ["pods"]},
                {"verbs": ["create"], "apiGroups": [""], "resources": ["bindings", "pods/binding"]},
                {"verbs": ["patch", "update"], "apiGroups": [""], "resources": ["pods/status"]},
                {"verbs": read, "apiGroups": [""], "resources": ["replicationcontrollers", "services"]},
                {"verbs": read, "apiGroups": ["apps", "extensions"], "resources": ["replicasets"]},
                {"verbs": read, "apiGroups": ["apps"], "resources": ["statefulsets"]},
                {"verbs": read, "apiGroups": ["policy"], "resources": ["poddisruptionbudgets"]},
                {"verbs": read, "apiGroups": [""], "resources": ["persistentvolumeclaims", "persistentvolumes"]},
                {"verbs": ["create"], "apiGroups": ["authentication.k8s.io"], "resources": ["tokenreviews"]},
                {"verbs": ["create"], "apiGroups": ["authorization.k8s.io"], "resources": ["subjectaccessreviews"]},
                {"verbs": read, "apiGroups": ["storage.k8s.io"], "resources": ["csinodes"]},
                {"verbs": read, "apiGroups": ["storage.k8s.io"], "resources": ["volumeattachments"]},
                {"verbs": read, "apiGroups": [""], "resources": ["namespaces"]},
                {"verbs": read, "apiGroups": ["storage.k8s.io"], "resources": ["csidrivers"]},
                {"verbs": read, "apiGroups": ["storage.k8s.io"], "resources": ["csistoragecapacities"]},
                {"verbs": read, "apiGroups": ["resource.k8s.io"], "resources": ["deviceclasses"]},
                {"verbs": read_update, "apiGroups": ["resource.k8s.io"], "resources": ["resourceclaims"]},
                {"verbs": read_update, "apiGroups": ["resource.k8s.io"], "resources": ["resourceclaims/status"]},
                {"verbs": read_update, "apiGroups": [""], "resources": ["pods/finalizers"]},
                {"verbs": read, "apiGroups": ["resource.k8s.io"], "resources": ["resourceslices"]},
            ])
        );
        assert_eq!(
            rules("system:volume-scheduler"),
            json!([
                {"verbs": read_update, "apiGroups": [""], "resources": ["persistentvolumes"]},
                {"verbs": read, "apiGroups": ["storage.k8s.io"], "resources": ["storageclasses"]},
                {"verbs": read_update, "apiGroups": [""], "resources": ["persistentvolumeclaims"]},
            ])
        );
        assert_eq!(
            rules("system:node-proxier"),
            json!([
                {"verbs": ["list", "watch"], "apiGroups": [""], "resources": ["endpoints", "services"]},
                {"verbs": read, "apiGroups": [""], "resources": ["nodes"]},
                {"verbs": ["create", "patch", "update"], "apiGroups": ["", "events.k8s.io"], "resources": ["events"]},
                {"verbs": ["list", "watch"], "apiGroups": ["networking.k8s.io"], "resources": ["servicecidrs"]},
                {"verbs": ["list", "watch"], "apiGroups": ["discovery.k8s.io"], "resources": ["endpointslices"]},
            ])
        );
        assert_eq!(
            rules("system:certificates.k8s.io:legacy-unknown-approver"),
            json!([{"verbs": ["approve"], "apiGroups": ["certificates.k8s.io"], "resources": ["signers"],
                    "resourceNames": ["kubernetes.io/legacy-unknown"]}])
        );
        assert_eq!(
            rules("system:certificates.k8s.io:certificatesigningrequests:selfnodeclient"),
            json!([{"verbs": ["create"], "apiGroups": ["certificates.k8s.io"],
                    "resources": ["certificatesigningrequests/selfnodeclient"]}])
        );
        assert_eq!(
            rules("system:auth-delegator"),
            json!([
                {"verbs": ["create"], "apiGroups": ["authentication.k8s.io"], "resources": ["tokenreviews"]},
                {"verbs": ["create"], "apiGroups": ["authorization.k8s.io"], "resources": ["subjectaccessreviews"]},
            ])
        );
        let role = bootstrap_find("Role", "system::leader-locking-kube-scheduler");
        let lock = json!(["create", "get", "list", "update", "watch"]);
        assert_eq!(
            role["rules"],
            json!([
                {"verbs": ["watch"], "apiGroups": [""], "resources": ["configmaps"]},
                {"verbs": ["get", "update"], "apiGroups": [""], "resources": ["configmaps"],
                 "resourceNames": ["kube-scheduler"]},
                {"verbs": lock, "apiGroups": ["coordination.k8s.io"], "resources": ["leases"]},
                {"verbs": lock, "apiGroups": ["coordination.k8s.io"], "resources": ["leasecandidates"]},
            ])
        );
        for o in [bootstrap_find("ClusterRole", "system:kube-scheduler"), role] {
            assert_eq!(
                o["metadata"]["labels"],
                json!({BOOTSTRAPPING_LABEL_KEY: BOOTSTRAPPING_LABEL_VALUE})
            );
            assert_eq!(
                o["metadata"]["annotations"],
                json!({AUTOUPDATE_ANNOTATION_KEY: "true"})
            );
        }
    }

    #[test]
    fn bootstrap_binding_subjects_are_kubes() {
        let subjects = |kind: &str, name: &str| bootstrap_find(kind, name)["subjects"].clone();
        let user = |n: &str| json!({"kind": "User", "apiGroup": RBAC_GROUP, "name": n});
        let sa = |n: &str| json!({"kind": "ServiceAccount", "name": n, "namespace": "kube-system"});
        for name in ["system:kube-scheduler", "system:volume-scheduler"] {
            assert_eq!(
                subjects("ClusterRoleBinding", name),
                json!([user("system:kube-scheduler")]),
                "{name}"
            );
        }
        assert_eq!(
            subjects("ClusterRoleBinding", "system:node-proxier"),
            json!([user("system:kube-proxy")])
        );
        assert_eq!(
            subjects("ClusterRoleBinding", "system:kube-controller-manager"),
            json!([user("system:kube-controller-manager")])
        );
        assert_eq!(
            subjects("ClusterRoleBinding", "system:kube-dns"),
            json!([sa("kube-dns")])
        );
        assert_eq!(
            subjects(
                "ClusterRoleBinding",
                "system:service-account-issuer-discovery"
            ),
            json!([{"kind": "Group", "apiGroup": RBAC_GROUP, "name": "system:serviceaccounts"}])
        );
        let kcm_lock = bootstrap_find(
            "RoleBinding",
            "system::leader-locking-kube-controller-manager",
        );
        assert_eq!(kcm_lock["metadata"]["namespace"], "kube-system");
        assert_eq!(
            kcm_lock["roleRef"],
            json!({"apiGroup": RBAC_GROUP, "kind": "Role",
                   "name": "system::leader-locking-kube-controller-manager"})
        );
        assert_eq!(
            kcm_lock["subjects"],
            json!([
                user("system:kube-controller-manager"),
                sa("kube-controller-manager"),
                sa("leader-election-controller")
            ])
        );
    }

    /// A second scheduler a user deploys, bound as kube's manifests bind one, may do what kube's
    /// roles let it and no more.
    #[test]
    fn a_scheduler_bound_to_the_scheduler_roles_may_bind_pods() {
        let s = Store::bootstrap()
            .with(crb(
                "my-scheduler",
                "system:kube-scheduler",
                user_subject("my-scheduler"),
            ))
            .with(crb(
                "my-scheduler-volumes",
                "system:volume-scheduler",
                user_subject("my-scheduler"),
            ));
        let u = user("my-scheduler", &["system:authenticated"]);
        let binding = res("create", "", "pods", "foo", "p").with_subresource("binding");
        assert_eq!(
            authorize(&s, &u, &binding).reason(),
            r#"RBAC: allowed by ClusterRoleBinding "my-scheduler" of ClusterRole "system:kube-scheduler" to User "my-scheduler""#
        );
        for a in [
            res("create", "", "bindings", "foo", ""),
            res("patch", "", "pods", "foo", "p").with_subresource("status"),
            res("watch", "", "pods", "", ""),
            res("list", "", "nodes", "", ""),
            res(
                "get",
                "coordination.k8s.io",
                "leases",
                "kube-system",
                "kube-scheduler",
            ),
            res(
                "update",
                "coordination.k8s.io",
                "leases",
                "kube-system",
                "kube-scheduler",
            ),
            res("list", "storage.k8s.io", "csinodes", "", ""),
            res("update", "resource.k8s.io", "resourceclaims", "foo", "c")
                .with_subresource("status"),
            // Preemption: kube's scheduler deletes the Pods it evicts.
            res("delete", "", "pods", "foo", "p"),
            // system:volume-scheduler.
            res("update", "", "persistentvolumeclaims", "foo", "c"),
            res("patch", "", "persistentvolumes", "", "pv"),
        ] {
            assert!(allowed(&s, &u, &a), "{a:?}");
        }
        for a in [
            res("create", "", "pods", "foo", ""),
            res("update", "", "pods", "foo", "p"),
            res("patch", "", "pods", "foo", "p"),
            res("get", "", "secrets", "foo", "s"),
            res("delete", "", "nodes", "", "n"),
            res("update", "", "nodes", "", "n").with_subresource("status"),
            res(
                "update",
                "coordination.k8s.io",
                "leases",
                "kube-system",
                "kube-controller-manager",
            ),
            res("delete", "", "persistentvolumes", "", "pv"),
            res("create", "", "pods", "foo", "p").with_subresource("eviction"),
        ] {
            assert!(!allowed(&s, &u, &a), "{a:?}");
        }
        // Unbound, the same user may do none of it.
        assert!(!allowed(
            &Store::bootstrap(),
            &u,
            &res("create", "", "pods", "foo", "p").with_subresource("binding")
        ));
    }

    /// kube's own users: the scheduler and kube-proxy through the bootstrap bindings, the
    /// scheduler's lock through its kube-system RoleBinding.
    #[test]
    fn kube_component_users_get_their_roles_through_bootstrap_bindings() {
        let s = Store::bootstrap();
        let scheduler = user("system:kube-scheduler", &["system:authenticated"]);
        assert!(allowed(
            &s,
            &scheduler,
            &res("create", "", "pods", "foo", "p").with_subresource("binding")
        ));
        assert!(allowed(
            &s,
            &scheduler,
            &res("update", "", "persistentvolumeclaims", "foo", "c")
        ));
        let lock = res("get", "", "configmaps", "kube-system", "kube-scheduler");
        assert_eq!(
            authorize(&s, &scheduler, &lock).reason(),
            r#"RBAC: allowed by RoleBinding "system::leader-locking-kube-scheduler/kube-system" of Role "system::leader-locking-kube-scheduler" to User "system:kube-scheduler""#
        );
        assert!(!allowed(
            &s,
            &scheduler,
            &res("get", "", "configmaps", "default", "kube-scheduler")
        ));
        let proxy = user("system:kube-proxy", &["system:authenticated"]);
        assert!(allowed(
            &s,
            &proxy,
            &res("watch", "discovery.k8s.io", "endpointslices", "", "")
        ));
        assert!(allowed(
            &s,
            &proxy,
            &res("create", "events.k8s.io", "events", "default", "")
        ));
        assert!(!allowed(&s, &proxy, &res("list", "", "pods", "", "")));
        let dns = user(
            "system:serviceaccount:kube-system:kube-dns",
            &["system:serviceaccounts", "system:authenticated"],
        );
        assert!(allowed(&s, &dns, &res("watch", "", "services", "", "")));
        assert!(!allowed(
            &s,
            &dns,
            &res("get", "", "services", "default", "x")
        ));
    }

    // -- forbidden messages ----------------------------------------------------------

    #[test]
    fn forbidden_namespaced_unnamed() {
        assert_eq!(
            forbidden_message(&alice(), &res("create", "", "configmaps", "foo", "")),
            r#"configmaps is forbidden: User "alice" cannot create resource "configmaps" in API group "" in the namespace "foo""#
        );
    }

    #[test]
    fn forbidden_named() {
        assert_eq!(
            forbidden_message(&alice(), &res("get", "", "configmaps", "foo", "cm1")),
            r#"configmaps "cm1" is forbidden: User "alice" cannot get resource "configmaps" in API group "" in the namespace "foo""#
        );
    }

    #[test]
    fn forbidden_subresource() {
        assert_eq!(
            forbidden_message(
                &user("bob", &[]),
                &res("get", "", "pods", "ns", "x").with_subresource("log")
            ),
            r#"pods "x" is forbidden: User "bob" cannot get resource "pods/log" in API group "" in the namespace "ns""#
        );
    }

    #[test]
    fn forbidden_cluster_scope_and_group() {
        assert_eq!(
            forbidden_message(&alice(), &res("list", "", "nodes", "", "")),
            r#"nodes is forbidden: User "alice" cannot list resource "nodes" in API group "" at the cluster scope"#
        );
        assert_eq!(
            forbidden_message(
                &alice(),
                &res(
                    "delete",
                    "rbac.authorization.k8s.io",
                    "clusterroles",
                    "",
                    "admin"
                )
            ),
            r#"clusterroles.rbac.authorization.k8s.io "admin" is forbidden: User "alice" cannot delete resource "clusterroles" in API group "rbac.authorization.k8s.io" at the cluster scope"#
        );
    }

    #[test]
    fn forbidden_non_resource() {
        assert_eq!(
            forbidden_message(&alice(), &Attributes::non_resource("get", "/metrics")),
            r#"forbidden: User "alice" cannot get path "/metrics""#
        );
    }

    #[test]
    fn forbidden_quoting_sanitizing_and_reason() {
        let u = user("ev\"il<b>&", &[]);
        assert_eq!(
            forbidden_message(&u, &res("get", "", "pods", "ns", "a\"b")),
            r#"pods "a\"b" is forbidden: User "ev\"il&lt;b&gt;&amp;" cannot get resource "pods" in API group "" in the namespace "ns""#
        );
        assert_eq!(
            forbidden_message_with_reason(
                &alice(),
                &res("list", "", "pods", "ns", ""),
                r#"RBAC: clusterrole.rbac.authorization.k8s.io "x" not found"#
            ),
            r#"pods is forbidden: User "alice" cannot list resource "pods" in API group "" in the namespace "ns": RBAC: clusterrole.rbac.authorization.k8s.io "x" not found"#
        );
    }

    #[test]
    fn go_quote_matches_strconv_quote() {
        assert_eq!(go_quote(""), r#""""#);
        assert_eq!(go_quote("a b"), r#""a b""#);
        assert_eq!(go_quote("q\"\\"), r#""q\"\\""#);
        assert_eq!(
            go_quote("\n\t\r\u{7}\u{8}\u{b}\u{c}"),
            r#""\n\t\r\a\b\v\f""#
        );
        assert_eq!(go_quote("\u{1}\u{7f}"), r#""\x01\x7f""#);
        assert_eq!(go_quote("héllo 世界"), "\"héllo 世界\"");
        assert_eq!(go_quote("\u{a0}\u{feff}"), r#""\u00a0\ufeff""#);
        assert_eq!(go_quote("\u{10ffff}"), r#""\U0010ffff""#);
    }

    // -- rules_for ----------------------------------------------------------------------

    #[test]
    fn rules_for_lists_cluster_and_namespace_rules() {
        let s = Store::default()
            .with(cluster_role("cr", json!([
                {"verbs": ["get"], "apiGroups": [""], "resources": ["nodes"]},
                {"verbs": ["get"], "nonResourceURLs": ["/healthz", "/api/*"]},
            ])))
            .with(crb("b", "cr", json!([{"kind": "Group", "name": "system:authenticated"}])))
            .with(role("foo", "r", json!([
                {"verbs": ["get", "update"], "apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["cm1"]},
            ])))
            .with(rb("foo", "rb", "Role", "r", user_subject("alice")))
            .with(role("bar", "r", json!([{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}])))
            .with(rb("bar", "rb", "Role", "r", user_subject("alice")));
        let (resource_rules, non_resource_rules, incomplete) = rules_for(&s, &alice(), "foo");
        assert_eq!(
            resource_rules,
            vec![
                json!({"verbs": ["get"], "apiGroups": [""], "resources": ["nodes"]}),
                json!({"verbs": ["get", "update"], "apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["cm1"]}),
            ]
        );
        assert_eq!(
            non_resource_rules,
            vec![json!({"verbs": ["get"], "nonResourceURLs": ["/healthz", "/api/*"]})]
        );
        assert!(!incomplete);

        // Cluster scope only sees ClusterRoleBindings.
        let (resource_rules, _, _) = rules_for(&s, &alice(), "");
        assert_eq!(resource_rules.len(), 1);
        // Someone else only gets the group rules.
        let (resource_rules, _, _) = rules_for(&s, &user("bob", &["system:authenticated"]), "foo");
        assert_eq!(resource_rules.len(), 1);
    }

    #[test]
    fn rules_for_bootstrap_basic_user() {
        let s = Store::bootstrap();
        let (resource_rules, non_resource_rules, incomplete) = rules_for(&s, &alice(), "default");
        assert!(!incomplete);
        assert!(resource_rules.contains(&json!({"verbs": ["create"], "apiGroups": ["authorization.k8s.io"],
                                                "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"]})));
        assert!(resource_rules.contains(
            &json!({"verbs": ["create"], "apiGroups": ["authentication.k8s.io"],
                                                "resources": ["selfsubjectreviews"]})
        ));
        assert!(non_resource_rules.iter().any(|r| r["nonResourceURLs"]
            .as_array()
            .is_some_and(|u| u.contains(&json!("/apis/*")))));
        assert!(resource_rules
            .iter()
            .all(|r| r.get("nonResourceURLs").is_none()));
    }

    #[test]
    fn rules_review_reports_errors() {
        let s = Store::default()
            .with(cluster_role(
                "cr",
                json!([{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}]),
            ))
            .with(crb("ok", "cr", user_subject("alice")))
            .with(crb("bad", "missing", user_subject("alice")));
        let review = rules_review(&s, &alice(), "ns");
        assert!(!review.incomplete);
        assert_eq!(
            review.evaluation_error,
            r#"clusterrole.rbac.authorization.k8s.io "missing" not found"#
        );
        assert_eq!(
            review.to_status_json(),
            json!({"resourceRules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}],
                   "nonResourceRules": [], "incomplete": false,
                   "evaluationError": "clusterrole.rbac.authorization.k8s.io \"missing\" not found"})
        );
        let (r, _, incomplete) = rules_for(&s, &alice(), "ns");
        assert_eq!(r.len(), 1);
        assert!(incomplete);
    }

    #[test]
    fn policy_rule_json_round_trip() {
        let v = json!({"verbs": ["get"], "apiGroups": [""], "resources": ["pods"], "resourceNames": ["a"]});
        assert_eq!(PolicyRule::from_json(&v).to_json(), v);
        let v = json!({"verbs": ["get"], "nonResourceURLs": ["/x"]});
        assert_eq!(PolicyRule::from_json(&v).to_json(), v);
        assert_eq!(
            PolicyRule::from_json(&json!({})).to_json(),
            json!({"verbs": []})
        );
    }

    #[test]
    fn decision_helpers() {
        let d = Decision::Allow { reason: "r".into() };
        assert!(d.is_allowed());
        assert_eq!(d.reason(), "r");
        assert!(!Decision::Deny {
            reason: String::new()
        }
        .is_allowed());
    }

    // -- reconciling the bootstrap policy -------------------------------------

    /// A bootstrap object as the store holds it: with the metadata the server adds.
    fn stored(mut obj: Value) -> Value {
        obj["metadata"]["uid"] = json!("u-1");
        obj["metadata"]["resourceVersion"] = json!("7");
        obj["metadata"]["creationTimestamp"] = json!("2026-01-01T00:00:00Z");
        obj
    }

    fn updated(r: Option<Reconciled>) -> Value {
        match r {
            Some(Reconciled::Update(v)) => v,
            other => panic!("expected an update, got {other:?}"),
        }
    }

    #[test]
    fn reconcile_of_the_stored_policy_is_none() {
        for obj in bootstrap_objects() {
            assert_eq!(reconcile(&stored(obj.clone()), &obj), None, "{obj}");
        }
    }

    #[test]
    fn reconcile_adds_a_missing_rule_and_keeps_extra_ones() {
        let expected = bootstrap_find("ClusterRole", "system:basic-user");
        let mut existing = stored(expected.clone());
        let extra = json!({"verbs": ["get"], "apiGroups": [""], "resources": ["configmaps"]});
        // `selfsubjectrulesreviews` and the whole `selfsubjectreviews` rule gone; one of the
        // user's own added.
        existing["rules"] = json!([
            {"verbs": ["create"], "apiGroups": [AUTHORIZATION],
             "resources": ["selfsubjectaccessreviews"]},
            extra,
        ]);
        let got = updated(reconcile(&existing, &expected));
        assert_eq!(
            got["rules"],
            json!([
                {"verbs": ["create"], "apiGroups": [AUTHORIZATION],
                 "resources": ["selfsubjectaccessreviews"]},
                extra,
                {"verbs": ["create"], "apiGroups": [AUTHORIZATION],
                 "resources": ["selfsubjectrulesreviews"]},
                {"verbs": ["create"], "apiGroups": [AUTHENTICATION],
                 "resources": ["selfsubjectreviews"]},
            ])
        );
        // The stored metadata stays: the update is conditional on the version read.
        assert_eq!(got["metadata"], existing["metadata"]);
        // Once the rules are back, nothing more.
        assert_eq!(reconcile(&got, &expected), None);
        // A wider rule covers the policy's: nothing to add.
        existing["rules"] = json!([{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}]);
        assert_eq!(reconcile(&existing, &expected), None);
    }

    #[test]
    fn reconcile_leaves_autoupdate_false_alone() {
        let expected = bootstrap_find("ClusterRole", "cluster-admin");
        let mut existing = stored(expected.clone());
        existing["metadata"]["annotations"][AUTOUPDATE_ANNOTATION_KEY] = json!("false");
        // Nothing missing: nothing to say.
        assert_eq!(reconcile(&existing, &expected), None);
        existing["rules"] = json!([{"verbs": ["get"], "apiGroups": ["*"], "resources": ["*"]}]);
        assert_eq!(reconcile(&existing, &expected), Some(Reconciled::Protected));
        // Bindings too, a changed roleRef included.
        let expected = bootstrap_find("ClusterRoleBinding", "system:basic-user");
        let mut existing = stored(expected.clone());
        existing["metadata"]["annotations"][AUTOUPDATE_ANNOTATION_KEY] = json!("false");
        existing["subjects"] = json!([]);
        assert_eq!(reconcile(&existing, &expected), Some(Reconciled::Protected));
        existing["roleRef"]["name"] = json!("view");
        assert_eq!(reconcile(&existing, &expected), Some(Reconciled::Protected));
        // "true", or anything but "false", is reconciled.
        existing["metadata"]["annotations"][AUTOUPDATE_ANNOTATION_KEY] = json!("no");
        assert!(matches!(
            reconcile(&existing, &expected),
            Some(Reconciled::Recreate(_))
        ));
    }

    #[test]
    fn reconcile_adds_aggregation_selectors_and_leaves_aggregated_rules() {
        let expected = bootstrap_find("ClusterRole", "edit");
        let mut existing = stored(expected.clone());
        let own = json!({"matchLabels": {"example.com/aggregate-to-edit": "true"}});
        existing["aggregationRule"] = json!({"clusterRoleSelectors": [own]});
        // What the aggregation controller wrote: not the policy's to change.
        existing["rules"] = json!([{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}]);
        let got = updated(reconcile(&existing, &expected));
        assert_eq!(
            got["aggregationRule"]["clusterRoleSelectors"],
            json!([own, {"matchLabels": {AGGREGATE_TO_EDIT: "true"}}])
        );
        assert_eq!(got["rules"], existing["rules"]);
        assert_eq!(reconcile(&got, &expected), None);
        // A semantically equal selector is the same one.
        existing["aggregationRule"] = json!({"clusterRoleSelectors": [
            {"matchLabels": {AGGREGATE_TO_EDIT: "true"}, "matchExpressions": []}]});
        assert_eq!(reconcile(&existing, &expected), None);
        // Without any aggregationRule: one is made.
        existing.as_object_mut().unwrap().remove("aggregationRule");
        let got = updated(reconcile(&existing, &expected));
        assert_eq!(got["aggregationRule"], expected["aggregationRule"]);
        assert_eq!(got["rules"], existing["rules"]);
    }

    #[test]
    fn reconcile_removes_an_aggregation_rule_the_policy_lacks() {
        let expected = bootstrap_find("ClusterRole", "system:basic-user");
        let mut existing = stored(expected.clone());
        existing["aggregationRule"] =
            json!({"clusterRoleSelectors": [{"matchLabels": {"a": "b"}}]});
        let got = updated(reconcile(&existing, &expected));
        assert!(got.get("aggregationRule").is_none(), "{got}");
        assert_eq!(got["rules"], expected["rules"]);
    }

    #[test]
    fn reconcile_merges_labels_and_annotations_the_stored_values_winning() {
        let expected = bootstrap_find("ClusterRole", "view");
        let mut existing = stored(expected.clone());
        existing["metadata"]["labels"] = json!({
            AGGREGATE_TO_EDIT: "false",
            "team": "a",
        });
        existing["metadata"]["annotations"] = json!({"note": "mine"});
        let got = updated(reconcile(&existing, &expected));
        assert_eq!(
            got["metadata"]["labels"],
            json!({
                AGGREGATE_TO_EDIT: "false",
                "team": "a",
                BOOTSTRAPPING_LABEL_KEY: BOOTSTRAPPING_LABEL_VALUE,
            })
        );
        assert_eq!(
            got["metadata"]["annotations"],
            json!({"note": "mine", AUTOUPDATE_ANNOTATION_KEY: "true"})
        );
        // Without any labels or annotations at all.
        let meta = existing["metadata"].as_object_mut().unwrap();
        meta.remove("labels");
        meta.remove("annotations");
        let got = updated(reconcile(&existing, &expected));
        assert_eq!(got["metadata"]["labels"], expected["metadata"]["labels"]);
        assert_eq!(
            got["metadata"]["annotations"],
            expected["metadata"]["annotations"]
        );
    }

    #[test]
    fn reconcile_adds_missing_binding_subjects_and_keeps_extra_ones() {
        let expected = bootstrap_find("ClusterRoleBinding", "system:public-info-viewer");
        let mut existing = stored(expected.clone());
        let extra = json!({"kind": "User", "apiGroup": RBAC_GROUP, "name": "alice"});
        // `system:authenticated` without its (defaulted) apiGroup is the same subject.
        existing["subjects"] = json!([
            {"kind": "Group", "name": "system:authenticated"},
            extra,
        ]);
        let got = updated(reconcile(&existing, &expected));
        assert_eq!(
            got["subjects"],
            json!([
                {"kind": "Group", "name": "system:authenticated"},
                extra,
                {"kind": "Group", "apiGroup": RBAC_GROUP, "name": "system:unauthenticated"},
            ])
        );
        assert_eq!(got["roleRef"], existing["roleRef"]);
        assert_eq!(reconcile(&got, &expected), None);
        // `system:node` has no subjects in the policy: any stored ones stay.
        let expected = bootstrap_find("ClusterRoleBinding", "system:node");
        let mut existing = stored(expected.clone());
        existing["subjects"] =
            json!([{"kind": "Group", "apiGroup": RBAC_GROUP, "name": "system:nodes"}]);
        assert_eq!(reconcile(&existing, &expected), None);
        // A ServiceAccount subject of another namespace is another subject.
        let expected = bootstrap_find("ClusterRoleBinding", "system:kube-dns");
        let mut existing = stored(expected.clone());
        existing["subjects"][0]["namespace"] = json!("dns");
        let got = updated(reconcile(&existing, &expected));
        assert_eq!(got["subjects"].as_array().map(Vec::len), Some(2));
    }

    #[test]
    fn reconcile_recreates_a_binding_of_another_role() {
        let expected = bootstrap_find("RoleBinding", "system::leader-locking-kube-scheduler");
        let mut existing = stored(expected.clone());
        existing["roleRef"] = json!({"apiGroup": RBAC_GROUP, "kind": "ClusterRole",
            "name": "system::leader-locking-kube-scheduler"});
        assert_eq!(
            reconcile(&existing, &expected),
            Some(Reconciled::Recreate(expected.clone()))
        );
        // A roleRef without its (defaulted) apiGroup is the same one.
        let mut existing = stored(expected.clone());
        existing["roleRef"]
            .as_object_mut()
            .unwrap()
            .remove("apiGroup");
        assert_eq!(reconcile(&existing, &expected), None);
    }

    #[test]
    fn reconcile_adds_a_missing_rule_to_a_namespaced_role() {
        let expected = bootstrap_find("Role", "extension-apiserver-authentication-reader");
        let mut existing = stored(expected.clone());
        existing["rules"] = json!([{"verbs": ["get"], "apiGroups": [""], "resources": ["configmaps"],
            "resourceNames": ["extension-apiserver-authentication"]}]);
        let got = updated(reconcile(&existing, &expected));
        let names = json!(["extension-apiserver-authentication"]);
        assert_eq!(
            got["rules"],
            json!([
                existing["rules"][0],
                {"verbs": ["list"], "apiGroups": [""], "resources": ["configmaps"], "resourceNames": names},
                {"verbs": ["watch"], "apiGroups": [""], "resources": ["configmaps"], "resourceNames": names},
            ])
        );
    }
}
