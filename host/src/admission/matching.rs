//! Which requests a policy, binding or webhook applies to (kube's
//! `admission/plugin/policy/matching` and `webhook/predicates`): rules, namespace and object
//! selectors, exclusions.

use std::sync::Arc;

use serde_json::{Map, Value};

use super::{Context, Request};
use crate::model::ResourceInfo;
use crate::selector::{label_selector_string, LabelSelector};

/// What a webhook's or policy's rules matched the request as (kube's `matchesResourceRules`).
#[derive(Debug, Clone)]
pub(crate) enum Matched {
    /// The resource the client wrote.
    Own,
    /// An equivalent resource (`matchPolicy: Equivalent`): the same objects served at another
    /// version or group, which the invocation sees the request and its objects as.
    Equivalent(Arc<ResourceInfo>),
}

/// kube's `matchesResourceRules`: a rule of `rules` against the request's own resource; then,
/// unless `matchPolicy` is `Exact` (or unset, as kube reads it), rule by rule against each
/// equivalent resource, in registration order.
pub(crate) fn rules_match(
    ctx: &Context<'_>,
    rules: &[Value],
    match_policy: Option<&Value>,
    req: &Request<'_>,
) -> Option<Matched> {
    if rules.iter().any(|r| rule_matches(r, req)) {
        return Some(Matched::Own);
    }
    if match_policy
        .and_then(Value::as_str)
        .is_none_or(|p| p == "Exact")
    {
        return None;
    }
    let equivalents = ctx.registry.equivalents(req.ri, req.subresource);
    for rule in rules {
        for eq in &equivalents {
            let as_eq = Request { ri: eq, ..*req };
            if rule_matches(rule, &as_eq) {
                return Some(Matched::Equivalent(eq.clone()));
            }
        }
    }
    None
}

/// Whether `rule` (a `RuleWithOperations` / `NamedRuleWithOperations`) covers the request.
pub(crate) fn rule_matches(rule: &Value, req: &Request<'_>) -> bool {
    let list = |f: &str| -> Vec<&str> {
        rule.get(f)
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default()
    };
    let has = |f: &str, want: &str| list(f).iter().any(|x| *x == "*" || *x == want);
    if !has("operations", req.operation.as_str())
        || !has("apiGroups", &req.ri.group)
        || !has("apiVersions", &req.ri.version)
    {
        return false;
    }
    let resource = &req.ri.resource;
    let sub = req.subresource;
    let resource_ok = list("resources").iter().any(|r| {
        let (res, s) = r.split_once('/').unwrap_or((r, ""));
        let res_ok = res == "*" || res == resource;
        let sub_ok = if s.is_empty() {
            sub.is_empty()
        } else {
            s == "*" || s == sub
        };
        res_ok && sub_ok
    });
    if !resource_ok {
        return false;
    }
    let names = list("resourceNames");
    if !names.is_empty() && !names.contains(&req.name) {
        return false;
    }
    match rule.get("scope").and_then(Value::as_str).unwrap_or("*") {
        "Cluster" => !req.ri.namespaced(),
        "Namespaced" => req.ri.namespaced(),
        _ => true,
    }
}

/// A `metav1.LabelSelector` as a matcher (`Err`: the selector is not valid).
pub(crate) fn selector(v: Option<&Value>) -> Result<LabelSelector, String> {
    match v {
        None | Some(Value::Null) => Ok(LabelSelector::default()),
        Some(s) => LabelSelector::parse(&label_selector_string(s)).map_err(|e| e.to_string()),
    }
}

fn labels(v: Option<&Value>) -> Option<&Map<String, Value>> {
    v?.get("metadata")?.get("labels")?.as_object()
}

/// kube's namespace selector: cluster-scoped objects (other than Namespaces) always match; a
/// Namespace is matched by its own labels; a namespaced object by its namespace's.
pub(crate) fn namespace_matches(
    ctx: &Context<'_>,
    sel: Option<&Value>,
    req: &Request<'_>,
    object: Option<&Value>,
) -> Result<bool, String> {
    Ok(namespace_matches_with(ctx, &selector(sel)?, req, object))
}

/// [`namespace_matches`] with a parsed selector.
pub(crate) fn namespace_matches_with(
    ctx: &Context<'_>,
    sel: &LabelSelector,
    req: &Request<'_>,
    object: Option<&Value>,
) -> bool {
    if sel.is_empty() {
        return true;
    }
    let is_namespace = req.ri.group.is_empty() && req.ri.resource == "namespaces";
    if is_namespace {
        let l = labels(object).or_else(|| labels(req.old_object));
        return sel.matches_json(l);
    }
    if req.namespace.is_empty() {
        return true;
    }
    let ns = ctx.namespace(req.namespace);
    match ns {
        Some(n) => sel.matches(|k| crate::model::meta::Meta::label(n.head(), k)),
        None => sel.matches_json(None),
    }
}

/// kube's object selector: the new or the old object's labels match.
pub(crate) fn object_matches(
    sel: Option<&Value>,
    req: &Request<'_>,
    object: Option<&Value>,
) -> Result<bool, String> {
    Ok(object_matches_with(&selector(sel)?, req, object))
}

/// [`object_matches`] with a parsed selector.
pub(crate) fn object_matches_with(
    sel: &LabelSelector,
    req: &Request<'_>,
    object: Option<&Value>,
) -> bool {
    if sel.is_empty() {
        return true;
    }
    object.is_some_and(|o| sel.matches_json(labels(Some(o))))
        || req
            .old_object
            .is_some_and(|o| sel.matches_json(labels(Some(o))))
}

/// A `MatchResources` (a policy's `matchConstraints`, a binding's `matchResources`): what it
/// matched the request as, or `None`. An absent one matches everything; empty `resourceRules`
/// match every resource. Exclusions follow `matchPolicy` too, as kube's `Matches`.
pub(crate) fn resources_match(
    ctx: &Context<'_>,
    mr: Option<&Value>,
    req: &Request<'_>,
    object: Option<&Value>,
) -> Result<Option<Matched>, String> {
    let Some(mr) = mr.filter(|m| !m.is_null()) else {
        return Ok(Some(Matched::Own));
    };
    if !namespace_matches(ctx, mr.get("namespaceSelector"), req, object)? {
        return Ok(None);
    }
    if !object_matches(mr.get("objectSelector"), req, object)? {
        return Ok(None);
    }
    let policy = mr.get("matchPolicy");
    let rules = |field: &str| {
        mr.get(field)
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default()
    };
    if rules_match(ctx, rules("excludeResourceRules"), policy, req).is_some() {
        return Ok(None);
    }
    let include = rules("resourceRules");
    if include.is_empty() {
        return Ok(Some(Matched::Own));
    }
    Ok(rules_match(ctx, include, policy, req))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::admission::Operation;
    use crate::auth::rbac::UserInfo;
    use serde_json::json;

    fn ri(
        group: &str,
        version: &str,
        resource: &str,
        namespaced: bool,
    ) -> crate::model::ResourceInfo {
        let reg = crate::model::Registry::with_builtins();
        let mut r = (*reg.lookup(group, version, resource).expect("served")).clone();
        if !namespaced {
            assert!(!r.namespaced());
        }
        r.version = version.into();
        r
    }

    #[test]
    fn rules_match_like_kube() {
        let pods = ri("", "v1", "pods", true);
        let user = UserInfo::default();
        let mut req = Request {
            ri: &pods,
            operation: Operation::Create,
            namespace: "default",
            name: "web",
            subresource: "",
            user: &user,
            dry_run: false,
            old_object: None,
            requested: None,
            delete_options: None,
            kind: None,
            deadline: None,
        };
        let rule = |ops: &str, res: &str| json!({"operations": [ops], "apiGroups": [""], "apiVersions": ["v1"], "resources": [res]});
        assert!(rule_matches(&rule("CREATE", "pods"), &req));
        assert!(rule_matches(&rule("*", "*"), &req));
        assert!(!rule_matches(&rule("UPDATE", "pods"), &req));
        assert!(!rule_matches(&rule("CREATE", "configmaps"), &req));
        assert!(!rule_matches(&rule("CREATE", "pods/status"), &req));
        req.subresource = "status";
        assert!(!rule_matches(&rule("CREATE", "pods"), &req));
        assert!(!rule_matches(&rule("CREATE", "*"), &req));
        assert!(rule_matches(&rule("CREATE", "pods/status"), &req));
        assert!(rule_matches(&rule("CREATE", "*/*"), &req));
        assert!(rule_matches(&rule("CREATE", "pods/*"), &req));
        req.subresource = "";
        let mut named = rule("CREATE", "pods");
        named["resourceNames"] = json!(["other"]);
        assert!(!rule_matches(&named, &req));
        named["resourceNames"] = json!(["web"]);
        assert!(rule_matches(&named, &req));
        let mut scoped = rule("CREATE", "pods");
        scoped["scope"] = json!("Cluster");
        assert!(!rule_matches(&scoped, &req));
        scoped["scope"] = json!("Namespaced");
        assert!(rule_matches(&scoped, &req));
    }

    #[test]
    fn object_selector_sees_new_or_old_labels() {
        let pods = ri("", "v1", "pods", true);
        let user = UserInfo::default();
        let old = json!({"metadata": {"labels": {"team": "a"}}});
        let req = Request {
            ri: &pods,
            operation: Operation::Update,
            namespace: "default",
            name: "web",
            subresource: "",
            user: &user,
            dry_run: false,
            old_object: Some(&old),
            requested: None,
            delete_options: None,
            kind: None,
            deadline: None,
        };
        let sel = json!({"matchLabels": {"team": "a"}});
        let new = json!({"metadata": {"labels": {"team": "b"}}});
        assert_eq!(object_matches(Some(&sel), &req, Some(&new)), Ok(true));
        let sel = json!({"matchExpressions": [{"key": "team", "operator": "In", "values": ["c"]}]});
        assert_eq!(object_matches(Some(&sel), &req, Some(&new)), Ok(false));
        assert_eq!(object_matches(None, &req, Some(&new)), Ok(true));
    }
}
