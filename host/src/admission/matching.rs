//! Which requests a policy, binding or webhook applies to (kube's
//! `admission/plugin/policy/matching` and `webhook/predicates`): rules, namespace and object
//! selectors, exclusions.

use serde_json::{Map, Value};

use super::{Context, Request};
use crate::selector::{label_selector_string, LabelSelector};

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

/// A `MatchResources` (a policy's `matchConstraints`, a binding's `matchResources`); `None`
/// matches everything. Empty `resourceRules` match every resource.
pub(crate) fn resources_match(
    ctx: &Context<'_>,
    mr: Option<&Value>,
    req: &Request<'_>,
    object: Option<&Value>,
) -> Result<bool, String> {
    let Some(mr) = mr.filter(|m| !m.is_null()) else {
        return Ok(true);
    };
    if !namespace_matches(ctx, mr.get("namespaceSelector"), req, object)? {
        return Ok(false);
    }
    if !object_matches(mr.get("objectSelector"), req, object)? {
        return Ok(false);
    }
    let rules = mr.get("resourceRules").and_then(Value::as_array);
    if let Some(rules) = rules.filter(|r| !r.is_empty()) {
        if !rules.iter().any(|r| rule_matches(r, req)) {
            return Ok(false);
        }
    }
    let excluded = mr
        .get("excludeResourceRules")
        .and_then(Value::as_array)
        .is_some_and(|rs| rs.iter().any(|r| rule_matches(r, req)));
    Ok(!excluded)
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
            kind: None,
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
            kind: None,
        };
        let sel = json!({"matchLabels": {"team": "a"}});
        let new = json!({"metadata": {"labels": {"team": "b"}}});
        assert_eq!(object_matches(Some(&sel), &req, Some(&new)), Ok(true));
        let sel = json!({"matchExpressions": [{"key": "team", "operator": "In", "values": ["c"]}]});
        assert_eq!(object_matches(Some(&sel), &req, Some(&new)), Ok(false));
        assert_eq!(object_matches(None, &req, Some(&new)), Ok(true));
    }
}
