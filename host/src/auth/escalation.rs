//! RBAC's own write rules, as kube enforces them in `pkg/registry/rbac`: nobody grants what
//! they do not hold.
//!
//! * **Roles and ClusterRoles** (create, update, every patch): allowed if the user is in
//!   `system:masters`, or may `escalate` roles/clusterroles (in that namespace, for that name on
//!   an update), or already holds every rule of the new role (in the role's namespace for a
//!   Role, cluster-wide for a ClusterRole). Setting, changing or dropping an `aggregationRule`
//!   needs `*` on everything (an aggregated role can gather any rule).
//! * **RoleBindings and ClusterRoleBindings**: allowed if the user is in `system:masters`, or may
//!   `bind` the referenced role (resourceName = the role's name, in the binding's namespace; `""`
//!   for a ClusterRoleBinding), or already holds every rule of the referenced role (in the
//!   binding's namespace).
//! * An update that only changes `ownerReferences`/`finalizers` (the garbage collector's fields)
//!   is not checked.
//! * A binding's `roleRef` cannot change ([`role_ref_causes`], for every writer).
//!
//! Refusals are 403 Forbidden with kube's message:
//!
//! ```text
//! rolebindings.rbac.authorization.k8s.io "x" is forbidden: user "me" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:
//! {APIGroups:["*"], Resources:["*"], Verbs:["*"]}
//! {NonResourceURLs:["*"], Verbs:["*"]}
//! ```
//!
//! The pure part (coverage, compaction, messages) follows kube's
//! `component-helpers/auth/rbac/validation/policy_comparator.go`,
//! `pkg/registry/rbac/validation/{rule.go,policy_compact.go}` and
//! `pkg/apis/rbac/v1/evaluation_helpers.go`; [`EscalationGuard`] is the service hook the API
//! layer installs for each write of an RBAC object, with the requesting user (after
//! impersonation). The host's own writes (bootstrap policy, controllers' identities) carry no
//! guard.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use serde_json::Value;

use super::rbac::{self, go_quote, Attributes, PolicyRule, ResolveError, UserInfo, RBAC_GROUP};
use super::{Authorizer, StoreObjects, MASTERS};
use crate::model::{meta, ApiError, Cause, ResourceInfo};
use crate::service::WriteGuard;

const ALL: &str = "*";

// ---------------------------------------------------------------------------
// Coverage (policy_comparator.go)
// ---------------------------------------------------------------------------

/// One rule per (group, resource, verb, resourceName) and per (nonResourceURL, verb): kube's
/// `BreakdownRule`.
pub fn breakdown_rule(rule: &PolicyRule) -> Vec<PolicyRule> {
    let one = |s: &String| vec![s.clone()];
    let rule = &deduplicated(rule);
    let mut out = Vec::new();
    for group in &rule.api_groups {
        for resource in &rule.resources {
            for verb in &rule.verbs {
                let base = PolicyRule {
                    verbs: one(verb),
                    api_groups: one(group),
                    resources: one(resource),
                    ..PolicyRule::default()
                };
                if rule.resource_names.is_empty() {
                    out.push(base);
                } else {
                    for name in &rule.resource_names {
                        out.push(PolicyRule {
                            resource_names: one(name),
                            ..base.clone()
                        });
                    }
                }
            }
        }
    }
    for url in &rule.non_resource_urls {
        for verb in &rule.verbs {
            out.push(PolicyRule {
                verbs: one(verb),
                non_resource_urls: one(url),
                ..PolicyRule::default()
            });
        }
    }
    out
}

/// The rule with each list's repeats dropped (first occurrence kept): the same rule, and a
/// breakdown of it no larger than its distinct entries make.
fn deduplicated(rule: &PolicyRule) -> PolicyRule {
    let dedup = |v: &[String]| {
        let mut seen = BTreeSet::new();
        v.iter()
            .filter(|s| seen.insert(s.as_str()))
            .cloned()
            .collect::<Vec<_>>()
    };
    PolicyRule {
        verbs: dedup(&rule.verbs),
        api_groups: dedup(&rule.api_groups),
        resources: dedup(&rule.resources),
        resource_names: dedup(&rule.resource_names),
        non_resource_urls: dedup(&rule.non_resource_urls),
    }
}

/// Single rules a breakdown of `rules` makes (saturating).
fn breakdown_size(rules: &[PolicyRule]) -> usize {
    rules
        .iter()
        .map(|r| {
            let r = deduplicated(r);
            let names = r.resource_names.len().max(1);
            r.api_groups
                .len()
                .saturating_mul(r.resources.len())
                .saturating_mul(r.verbs.len())
                .saturating_mul(names)
                .saturating_add(r.non_resource_urls.len().saturating_mul(r.verbs.len()))
        })
        .fold(0usize, usize::saturating_add)
}

/// Most single rules an escalation check breaks a role's rules into: kube breaks down any
/// number (a 20 KB rule of 1,000 groups, resources and verbs is 10⁹ rules, enough to run any
/// machine out of memory); turtles refuses more than this.
pub const MAX_BREAKDOWN: usize = 100_000;

fn has(set: &[String], item: &str) -> bool {
    set.iter().any(|s| s == item)
}

fn has_all(set: &[String], items: &[String]) -> bool {
    items.iter().all(|i| has(set, i))
}

fn resource_covers_all(set: &[String], covers: &[String]) -> bool {
    if has(set, ALL) || has_all(set, covers) {
        return true;
    }
    covers.iter().all(|path| {
        if has(set, path) {
            return true;
        }
        // `*/subresource` covers that subresource of any resource.
        match path.split_once('/') {
            Some((_, sub)) => has(set, &format!("*/{sub}")),
            None => false,
        }
    })
}

fn non_resource_url_covers(owner: &str, path: &str) -> bool {
    owner == path || (owner.ends_with('*') && path.starts_with(owner.trim_end_matches('*')))
}

/// Whether `owner` covers `sub` (a rule of [`breakdown_rule`]): kube's `ruleCovers`.
fn rule_covers(owner: &PolicyRule, sub: &PolicyRule) -> bool {
    let verbs = has(&owner.verbs, ALL) || has_all(&owner.verbs, &sub.verbs);
    let groups = has(&owner.api_groups, ALL) || has_all(&owner.api_groups, &sub.api_groups);
    let resources = resource_covers_all(&owner.resources, &sub.resources);
    let urls = sub.non_resource_urls.iter().all(|path| {
        owner
            .non_resource_urls
            .iter()
            .any(|o| non_resource_url_covers(o, path))
    });
    let names = if sub.resource_names.is_empty() {
        owner.resource_names.is_empty()
    } else {
        owner.resource_names.is_empty() || has_all(&owner.resource_names, &sub.resource_names)
    };
    verbs && groups && resources && names && urls
}

/// The parts of `servant` that `owner` does not cover (empty: covered), as single-verb rules:
/// kube's `Covers`.
pub fn uncovered(owner: &[PolicyRule], servant: &[PolicyRule]) -> Vec<PolicyRule> {
    servant
        .iter()
        .flat_map(breakdown_rule)
        .filter(|sub| !owner.iter().any(|o| rule_covers(o, sub)))
        .collect()
}

/// Merges rules that name one API group and one resource and nothing else, differing only in
/// their verbs: kube's `CompactRules` (used on [`uncovered`]'s output).
pub fn compact_rules(rules: Vec<PolicyRule>) -> Vec<PolicyRule> {
    let mut simple: BTreeMap<(String, String), PolicyRule> = BTreeMap::new();
    let mut out = Vec::new();
    for rule in rules {
        let is_simple = rule.resource_names.is_empty()
            && rule.non_resource_urls.is_empty()
            && rule.api_groups.len() == 1
            && rule.resources.len() == 1;
        if !is_simple {
            out.push(rule);
            continue;
        }
        let key = (rule.api_groups[0].clone(), rule.resources[0].clone());
        match simple.get_mut(&key) {
            Some(existing) => existing.verbs.extend(rule.verbs),
            None => {
                simple.insert(key, rule);
            }
        }
    }
    out.extend(simple.into_values());
    out
}

/// Go's `%q` of a `[]string`: `["a" "b"]`.
fn go_quote_list(items: &[String]) -> String {
    let quoted: Vec<String> = items.iter().map(|s| go_quote(s)).collect();
    format!("[{}]", quoted.join(" "))
}

/// A rule as kube's escalation messages show it (`rbacv1helpers.CompactString`), e.g.
/// `{APIGroups:[""], Resources:["secrets"], Verbs:["get" "list"]}`.
pub fn compact_string(rule: &PolicyRule) -> String {
    let mut parts = Vec::new();
    for (label, list) in [
        ("APIGroups", &rule.api_groups),
        ("Resources", &rule.resources),
        ("NonResourceURLs", &rule.non_resource_urls),
        ("ResourceNames", &rule.resource_names),
        ("Verbs", &rule.verbs),
    ] {
        if !list.is_empty() {
            parts.push(format!("{label}:{}", go_quote_list(list)));
        }
    }
    format!("{{{}}}", parts.join(", "))
}

/// kube's `ConfirmNoEscalation`: `Ok` if `owner_rules` (the user's own, met with
/// `resolution_errors`) cover `rules`, else the reason, word for word as kube words it.
pub fn confirm_no_escalation(
    user: &UserInfo,
    owner_rules: &[PolicyRule],
    resolution_errors: &[ResolveError],
    rules: &[PolicyRule],
) -> Result<(), String> {
    let size = breakdown_size(rules);
    if size > MAX_BREAKDOWN {
        return Err(format!(
            "user {} (groups={}) is attempting to grant RBAC permissions that cannot be checked: the rules name {size} combinations of API groups, resources, verbs and names, more than {MAX_BREAKDOWN}",
            go_quote(&user.name),
            go_quote_list(&user.groups),
        ));
    }
    let missing = uncovered(owner_rules, rules);
    if missing.is_empty() {
        return Ok(());
    }
    // kube collects the descriptions in a sorted set.
    let descriptions: BTreeSet<String> =
        compact_rules(missing).iter().map(compact_string).collect();
    let mut msg = format!(
        "user {} (groups={}) is attempting to grant RBAC permissions not currently held:\n{}",
        go_quote(&user.name),
        go_quote_list(&user.groups),
        descriptions.into_iter().collect::<Vec<_>>().join("\n")
    );
    if !resolution_errors.is_empty() {
        msg.push_str(&format!(
            "; resolution errors: [{}]",
            rbac::aggregate_errors(resolution_errors)
        ));
    }
    Err(msg)
}

/// `*` on every resource and every non-resource URL (cluster-admin).
pub fn full_authority() -> Vec<PolicyRule> {
    let all = || vec![ALL.to_owned()];
    vec![
        PolicyRule {
            verbs: all(),
            api_groups: all(),
            resources: all(),
            ..PolicyRule::default()
        },
        PolicyRule {
            verbs: all(),
            non_resource_urls: all(),
            ..PolicyRule::default()
        },
    ]
}

/// kube's `hasAggregationRule`: an aggregationRule with at least one selector.
fn has_aggregation_rule(role: &Value) -> bool {
    role.get("aggregationRule")
        .and_then(|a| a.get("clusterRoleSelectors"))
        .and_then(Value::as_array)
        .is_some_and(|s| !s.is_empty())
}

/// kube's `IsOnlyMutatingGCFields`: the update changes nothing but `ownerReferences` and
/// `finalizers` (or nothing at all).
pub fn only_gc_fields_change(old: &Value, new: &Value) -> bool {
    let strip = |v: &Value| {
        let mut v = v.clone();
        if let Some(m) = meta::metadata_mut(&mut v) {
            for f in [
                "ownerReferences",
                "finalizers",
                "selfLink",
                "resourceVersion",
                "managedFields",
            ] {
                m.remove(f);
            }
        }
        v
    };
    strip(old) == strip(new)
}

fn str_at<'a>(v: &'a Value, path: &[&str]) -> &'a str {
    path.iter()
        .try_fold(v, |cur, k| cur.get(k))
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// Go's `json.Marshal` of a string.
fn go_str(s: &str) -> String {
    crate::builtin::validation::field::json_value(&Value::String(s.to_owned()))
}

/// The 422 cause of a binding update that changes its `roleRef` (kube's
/// `ValidateRoleBindingUpdate`), for every writer. Empty for anything else.
pub fn role_ref_causes(ri: &ResourceInfo, new: &Value, old: Option<&Value>) -> Vec<Cause> {
    let (Some(old), true) = (
        old,
        ri.group == RBAC_GROUP
            && matches!(ri.resource.as_str(), "rolebindings" | "clusterrolebindings"),
    ) else {
        return Vec::new();
    };
    let role_ref = |v: &Value| {
        (
            str_at(v, &["roleRef", "apiGroup"]).to_owned(),
            str_at(v, &["roleRef", "kind"]).to_owned(),
            str_at(v, &["roleRef", "name"]).to_owned(),
        )
    };
    let (group, kind, name) = role_ref(new);
    if role_ref(old) == (group.clone(), kind.clone(), name.clone()) {
        return Vec::new();
    }
    // kube reports the internal `rbac.RoleRef`: its JSON, Go field names in order.
    let shown = crate::builtin::validation::field::struct_json(&[
        ("APIGroup", go_str(&group)),
        ("Kind", go_str(&kind)),
        ("Name", go_str(&name)),
    ]);
    vec![Cause::new(
        "FieldValueInvalid",
        "roleRef",
        format!("Invalid value: {shown}: cannot change roleRef"),
    )]
}

// ---------------------------------------------------------------------------
// The write hook
// ---------------------------------------------------------------------------

impl Authorizer {
    /// The rules `user` holds in `namespace` and the errors met resolving them (no
    /// `system:masters` shortcut: callers check that first, as kube's `EscalationAllowed`).
    pub fn rules_held(
        &self,
        user: &UserInfo,
        namespace: &str,
    ) -> (Vec<PolicyRule>, Vec<ResolveError>) {
        rbac::rules_and_errors(
            &StoreObjects {
                store: self.store.as_ref(),
            },
            user,
            namespace,
        )
    }

    /// The rules a binding in `namespace` referencing `kind`/`name` grants.
    pub fn role_reference_rules(
        &self,
        kind: &str,
        name: &str,
        namespace: &str,
    ) -> Result<Vec<PolicyRule>, ResolveError> {
        rbac::role_reference_rules(
            &StoreObjects {
                store: self.store.as_ref(),
            },
            kind,
            name,
            namespace,
        )
    }
}

/// The escalation and bind checks of one request, installed by the API layer in the write's
/// `WriteOptions` and run by the service on the object it is about to store.
pub struct EscalationGuard {
    authz: Arc<Authorizer>,
    /// The requesting user after impersonation; `None` is refused as kube refuses a request
    /// without a user.
    user: Option<UserInfo>,
}

impl std::fmt::Debug for EscalationGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EscalationGuard")
            .field("user", &self.user)
            .finish_non_exhaustive()
    }
}

/// The guard for a write of `ri` by `user`: some for the four RBAC kinds, none otherwise.
pub fn guard(
    authz: &Arc<Authorizer>,
    ri: &ResourceInfo,
    user: Option<UserInfo>,
) -> Option<Arc<dyn WriteGuard>> {
    let rbac_kind = ri.group == RBAC_GROUP
        && matches!(
            ri.resource.as_str(),
            "roles" | "clusterroles" | "rolebindings" | "clusterrolebindings"
        );
    rbac_kind.then(|| {
        Arc::new(EscalationGuard {
            authz: authz.clone(),
            user,
        }) as Arc<dyn WriteGuard>
    })
}

/// kube's `NewForbidden(groupResource, name, err)`.
fn forbidden(ri: &ResourceInfo, name: &str, reason: &str) -> ApiError {
    let qualified = format!("{}.{}", ri.resource, ri.group);
    let message = if name.is_empty() {
        format!("{qualified} is forbidden: {reason}")
    } else {
        format!("{qualified} {} is forbidden: {reason}", go_quote(name))
    };
    ApiError::forbidden(message).with_details(&ri.group, &ri.resource, name)
}

impl EscalationGuard {
    fn confirm(
        &self,
        ri: &ResourceInfo,
        ns: &str,
        name: &str,
        user: &UserInfo,
        rules: &[PolicyRule],
    ) -> Result<(), ApiError> {
        let (held, errors) = self.authz.rules_held(user, ns);
        confirm_no_escalation(user, &held, &errors, rules).map_err(|m| forbidden(ri, name, &m))
    }

    fn check_role(
        &self,
        ri: &ResourceInfo,
        ns: &str,
        old: Option<&Value>,
        new: &Value,
        user: &UserInfo,
    ) -> Result<(), ApiError> {
        let name = meta::name(new);
        // kube's RoleEscalationAuthorized: the request's name, none on a create.
        let request_name = old.map(meta::name).unwrap_or("");
        let escalate = Attributes::resource("escalate", RBAC_GROUP, &ri.resource, ns, request_name);
        if self.authz.authorize(user, &escalate).is_allowed() {
            return Ok(());
        }
        self.confirm(ri, ns, name, user, &rbac::parse_rules(new))?;
        let aggregated = has_aggregation_rule(new) || old.is_some_and(has_aggregation_rule);
        if ri.resource == "clusterroles" && aggregated {
            let (held, errors) = self.authz.rules_held(user, ns);
            if confirm_no_escalation(user, &held, &errors, &full_authority()).is_err() {
                return Err(forbidden(
                    ri,
                    name,
                    "must have cluster-admin privileges to use the aggregationRule",
                ));
            }
        }
        Ok(())
    }

    fn check_binding(
        &self,
        ri: &ResourceInfo,
        ns: &str,
        new: &Value,
        user: &UserInfo,
    ) -> Result<(), ApiError> {
        let name = meta::name(new);
        let kind = str_at(new, &["roleRef", "kind"]);
        let role_name = str_at(new, &["roleRef", "name"]);
        let role_resource = match kind {
            "ClusterRole" => "clusterroles",
            "Role" => "roles",
            other => {
                // kube's validation would refuse it; say so instead of an internal error.
                return Err(ApiError::invalid(
                    &ri.group,
                    &ri.kind,
                    name,
                    vec![Cause::new(
                        "FieldValueNotSupported",
                        "roleRef.kind",
                        format!(
                            "Unsupported value: {}: supported values: \"Role\", \"ClusterRole\"",
                            go_quote(other)
                        ),
                    )],
                ));
            }
        };
        // kube's BindingAuthorized: `bind` on the role, in the binding's namespace.
        let bind = Attributes::resource(
            "bind",
            str_at(new, &["roleRef", "apiGroup"]),
            role_resource,
            ns,
            role_name,
        );
        if self.authz.authorize(user, &bind).is_allowed() {
            return Ok(());
        }
        let rules = self
            .authz
            .role_reference_rules(kind, role_name, ns)
            .map_err(|_| ApiError::not_found(RBAC_GROUP, role_resource, role_name))?;
        self.confirm(ri, ns, name, user, &rules)
    }
}

impl WriteGuard for EscalationGuard {
    fn check(
        &self,
        ri: &ResourceInfo,
        ns: &str,
        old: Option<&Value>,
        new: &Value,
    ) -> Result<(), ApiError> {
        let Some(user) = &self.user else {
            return Err(forbidden(ri, meta::name(new), "no user on context"));
        };
        // kube's EscalationAllowed: system:masters may do anything.
        if user.groups.iter().any(|g| g == MASTERS) {
            return Ok(());
        }
        if old.is_some_and(|o| only_gc_fields_change(o, new)) {
            return Ok(());
        }
        match ri.resource.as_str() {
            "roles" | "clusterroles" => self.check_role(ri, ns, old, new, user),
            "rolebindings" | "clusterrolebindings" => self.check_binding(ri, ns, new, user),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests;
