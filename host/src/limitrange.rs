//! LimitRange as kube's LimitRanger admission plugin applies it
//! (`plugin/pkg/admission/limitranger`): a Pod created in a namespace with LimitRanges gets the
//! `Container` items' `default` limits and `defaultRequest` requests where its containers state
//! none (and kube's `kubernetes.io/limit-ranger` annotation saying so), and is then refused if a
//! container or the whole Pod is outside an item's `min`, `max` or `maxLimitRequestRatio`; a
//! PersistentVolumeClaim's storage request is held to the `PersistentVolumeClaim` items. The
//! LimitRange objects themselves are defaulted as kube stores them (`builtin::defaults`).

use serde_json::{json, Map, Value};

use crate::builtin::quantity::nano_value;
use crate::model::{meta, ApiError, ResourceInfo};
use crate::service::Service;

pub const RESOURCE: &str = "limitranges";
const ANNOTATION: &str = "kubernetes.io/limit-ranger";

/// The items of every LimitRange in `ns`.
fn items(svc: &Service, ns: &str) -> Vec<Value> {
    svc.stored_in(RESOURCE, ns)
        .iter()
        .flat_map(|o| {
            o.parse()
                .pointer("/spec/limits")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default()
        })
        .collect()
}

fn list<'a>(v: &'a Value, field: &str) -> impl Iterator<Item = (&'a String, &'a Value)> {
    v.get(field)
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
}

fn is_pods(ri: &ResourceInfo) -> bool {
    ri.group.is_empty() && ri.resource == "pods"
}

fn is_pvcs(ri: &ResourceInfo) -> bool {
    ri.group.is_empty() && ri.resource == "persistentvolumeclaims"
}

/// kube's `SetDefaults_LimitRangeItem`: a `Container` item's `default` is its `max` where
/// unset, and its `defaultRequest` the `default`, else the `min`.
pub fn default_item(item: &mut Value) {
    if item.get("type").and_then(Value::as_str) != Some("Container") {
        return;
    }
    let Some(o) = item.as_object_mut() else {
        return;
    };
    let get = |o: &Map<String, Value>, f: &str| {
        o.get(f)
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default()
    };
    let (max, min) = (get(o, "max"), get(o, "min"));
    let mut default = get(o, "default");
    for (k, v) in &max {
        default.entry(k.clone()).or_insert_with(|| v.clone());
    }
    let mut request = get(o, "defaultRequest");
    for (k, v) in default.iter().chain(min.iter()) {
        request.entry(k.clone()).or_insert_with(|| v.clone());
    }
    if !default.is_empty() {
        o.insert("default".into(), Value::Object(default));
    }
    if !request.is_empty() {
        o.insert("defaultRequest".into(), Value::Object(request));
    }
}

/// kube's `mergeContainerResources` over a Pod's containers, then its annotation.
pub fn apply_defaults(svc: &Service, ri: &ResourceInfo, ns: &str, pod: &mut Value) {
    if !is_pods(ri) {
        return;
    }
    let items = items(svc, ns);
    let mut limits = Map::new();
    let mut requests = Map::new();
    for item in items
        .iter()
        .filter(|i| i.get("type") == Some(&json!("Container")))
    {
        for (k, v) in list(item, "defaultRequest") {
            requests.insert(k.clone(), v.clone());
        }
        for (k, v) in list(item, "default") {
            limits.insert(k.clone(), v.clone());
        }
    }
    if limits.is_empty() && requests.is_empty() {
        return;
    }
    let mut notes = Vec::new();
    for (field, prefix) in [
        ("containers", "container"),
        ("initContainers", "init container"),
    ] {
        let Some(cs) = pod
            .get_mut("spec")
            .and_then(|s| s.get_mut(field))
            .and_then(Value::as_array_mut)
        else {
            continue;
        };
        for c in cs.iter_mut().filter(|c| c.is_object()) {
            let name = c
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned();
            let res = &mut c["resources"];
            if !res.is_object() {
                *res = json!({});
            }
            for (which, defaults, word) in [
                ("requests", &requests, "request"),
                ("limits", &limits, "limit"),
            ] {
                let m = &mut res[which];
                if !m.is_object() {
                    *m = json!({});
                }
                let Some(m) = m.as_object_mut() else {
                    continue;
                };
                let mut set: Vec<&str> = Vec::new();
                for (k, v) in defaults {
                    if !m.contains_key(k) {
                        m.insert(k.clone(), v.clone());
                        set.push(k);
                    }
                }
                if !set.is_empty() {
                    set.sort_unstable();
                    notes.push(format!("{} {word} for {prefix} {name}", set.join(", ")));
                }
            }
        }
    }
    if notes.is_empty() {
        return;
    }
    let Some(m) = meta::metadata_mut(pod) else {
        return;
    };
    let a = m.entry("annotations").or_insert_with(|| json!({}));
    if !a.is_object() {
        *a = json!({});
    }
    if let Some(a) = a.as_object_mut() {
        a.insert(
            ANNOTATION.into(),
            json!(format!("LimitRanger plugin set: {}", notes.join("; "))),
        );
    }
}

fn amount(v: &Value) -> Option<i128> {
    v.as_str().and_then(|s| nano_value(s).ok()).map(|(n, _)| n)
}

fn shown(v: Option<&Value>) -> String {
    v.and_then(Value::as_str).unwrap_or("").to_owned()
}

/// kube's `minConstraint`, `maxConstraint` and `limitRequestRatioConstraint` of one item over
/// one (request, limit) pair.
fn constraints(
    kind: &str,
    item: &Value,
    requests: &Map<String, Value>,
    limits: &Map<String, Value>,
    errs: &mut Vec<String>,
) {
    for (r, enforced) in list(item, "min") {
        let (req, lim) = (requests.get(r), limits.get(r));
        let e = amount(enforced).unwrap_or(0);
        let want = shown(Some(enforced));
        match req {
            None => errs.push(format!(
                "minimum {r} usage per {kind} is {want}.  No request is specified"
            )),
            Some(q) if amount(q).unwrap_or(0) < e => errs.push(format!(
                "minimum {r} usage per {kind} is {want}, but request is {}",
                shown(Some(q))
            )),
            _ => {
                if let Some(l) = lim.filter(|l| amount(l).unwrap_or(0) < e) {
                    errs.push(format!(
                        "minimum {r} usage per {kind} is {want}, but limit is {}",
                        shown(Some(l))
                    ));
                }
            }
        }
    }
    for (r, enforced) in list(item, "max") {
        let (req, lim) = (requests.get(r), limits.get(r));
        let e = amount(enforced).unwrap_or(0);
        let want = shown(Some(enforced));
        match lim {
            None => errs.push(format!(
                "maximum {r} usage per {kind} is {want}.  No limit is specified"
            )),
            Some(l) if amount(l).unwrap_or(0) > e => errs.push(format!(
                "maximum {r} usage per {kind} is {want}, but limit is {}",
                shown(Some(l))
            )),
            _ => {
                if let Some(q) = req.filter(|q| amount(q).unwrap_or(0) > e) {
                    errs.push(format!(
                        "maximum {r} usage per {kind} is {want}, but request is {}",
                        shown(Some(q))
                    ));
                }
            }
        }
    }
    for (r, enforced) in list(item, "maxLimitRequestRatio") {
        let want = shown(Some(enforced));
        let req = requests.get(r).and_then(amount).unwrap_or(0);
        let lim = limits.get(r).and_then(amount).unwrap_or(0);
        if req == 0 {
            errs.push(format!("{r} max limit to request ratio per {kind} is {want}, but no request is specified or request is 0"));
        } else if lim == 0 {
            errs.push(format!("{r} max limit to request ratio per {kind} is {want}, but no limit is specified or limit is 0"));
        } else {
            let ratio = lim as f64 / req as f64;
            let max = amount(enforced).unwrap_or(0) as f64 / 1e9;
            if ratio > max {
                errs.push(format!("{r} max limit to request ratio per {kind} is {want}, but provided ratio is {ratio:.6}"));
            }
        }
    }
}

/// Sum (or max) of quantities, rendered back in the first one's notation for messages.
fn add_into(total: &mut Map<String, Value>, from: &Map<String, Value>, max: bool) {
    for (k, v) in from {
        let n = amount(v).unwrap_or(0);
        let (cur, binary) = total
            .get(k)
            .and_then(|t| t.as_str())
            .and_then(|s| nano_value(s).ok())
            .unwrap_or((
                0,
                v.as_str()
                    .and_then(|s| nano_value(s).ok())
                    .is_some_and(|(_, b)| b),
            ));
        let next = if max {
            cur.max(n)
        } else {
            cur.saturating_add(n)
        };
        total.insert(
            k.clone(),
            json!(crate::builtin::quantity::from_nano(next, binary)),
        );
    }
}

/// kube's LimitRanger validation of a Pod or PersistentVolumeClaim being created in `ns`.
pub fn validate(svc: &Service, ri: &ResourceInfo, ns: &str, obj: &Value) -> Result<(), ApiError> {
    if !(is_pods(ri) || is_pvcs(ri)) {
        return Ok(());
    }
    let items = items(svc, ns);
    if items.is_empty() {
        return Ok(());
    }
    let mut errs = Vec::new();
    let res = |c: &Value, which: &str| {
        c.pointer(&format!("/resources/{which}"))
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default()
    };
    for item in &items {
        let kind = item.get("type").and_then(Value::as_str).unwrap_or("");
        match (kind, is_pods(ri)) {
            ("Container", true) => {
                for field in ["containers", "initContainers"] {
                    for c in obj
                        .pointer(&format!("/spec/{field}"))
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                    {
                        constraints(
                            kind,
                            item,
                            &res(c, "requests"),
                            &res(c, "limits"),
                            &mut errs,
                        );
                    }
                }
            }
            ("Pod", true) => {
                let (mut req, mut lim) = (Map::new(), Map::new());
                let containers = |f: &str| {
                    obj.pointer(&format!("/spec/{f}"))
                        .and_then(Value::as_array)
                        .cloned()
                        .unwrap_or_default()
                };
                for c in containers("containers") {
                    add_into(&mut req, &res(&c, "requests"), false);
                    add_into(&mut lim, &res(&c, "limits"), false);
                }
                // Sidecars add up; other init containers count as the largest (kube's
                // `PodRequests`, sidecar arithmetic simplified to a sum).
                for c in containers("initContainers") {
                    let sidecar = c.get("restartPolicy").and_then(Value::as_str) == Some("Always");
                    add_into(&mut req, &res(&c, "requests"), !sidecar);
                    add_into(&mut lim, &res(&c, "limits"), !sidecar);
                }
                if let Some(o) = obj.pointer("/spec/overhead").and_then(Value::as_object) {
                    add_into(&mut req, o, false);
                    add_into(&mut lim, o, false);
                }
                constraints(kind, item, &req, &lim, &mut errs);
            }
            ("PersistentVolumeClaim", false) => {
                // kube's `PersistentVolumeClaimValidateLimitFunc`: `min` as for containers
                // (with no limits), `max` against the request only, and only when there is one.
                let requests = obj
                    .pointer("/spec/resources/requests")
                    .and_then(Value::as_object)
                    .cloned()
                    .unwrap_or_default();
                let only_min = json!({"min": item.get("min").cloned().unwrap_or(json!({}))});
                constraints(kind, &only_min, &requests, &Map::new(), &mut errs);
                for (r, enforced) in list(item, "max") {
                    if let Some(q) = requests.get(r) {
                        if amount(q).unwrap_or(0) > amount(enforced).unwrap_or(0) {
                            errs.push(format!(
                                "maximum {r} usage per {kind} is {}, but request is {}",
                                shown(Some(enforced)),
                                shown(Some(q))
                            ));
                        }
                    }
                }
            }
            _ => {}
        }
    }
    if errs.is_empty() {
        return Ok(());
    }
    let why = if errs.len() == 1 {
        errs.remove(0)
    } else {
        format!("[{}]", errs.join(", "))
    };
    let gr = ri.resource.clone();
    Err(
        ApiError::forbidden(format!("{gr} \"{}\" is forbidden: {why}", meta::name(obj)))
            .with_details("", &ri.resource, meta::name(obj)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn container_items_are_defaulted_as_kube_stores_them() {
        let mut item = json!({"type": "Container", "max": {"cpu": "2"}, "min": {"memory": "64Mi"},
            "default": {"memory": "256Mi"}});
        default_item(&mut item);
        assert_eq!(item["default"], json!({"memory": "256Mi", "cpu": "2"}));
        assert_eq!(
            item["defaultRequest"],
            json!({"memory": "256Mi", "cpu": "2"})
        );
        let mut pod_item = json!({"type": "Pod", "max": {"cpu": "2"}});
        default_item(&mut pod_item);
        assert!(pod_item.get("default").is_none());
    }

    #[test]
    fn constraints_speak_kubes_words() {
        let item = json!({"type": "Container", "min": {"cpu": "100m"}, "max": {"memory": "1Gi"},
            "maxLimitRequestRatio": {"cpu": "2"}});
        let m = |v: Value| v.as_object().cloned().unwrap_or_default();
        let mut errs = Vec::new();
        constraints(
            "Container",
            &item,
            &m(json!({"cpu": "50m"})),
            &m(json!({"cpu": "200m", "memory": "2Gi"})),
            &mut errs,
        );
        assert_eq!(
            errs,
            vec![
                "minimum cpu usage per Container is 100m, but request is 50m",
                "maximum memory usage per Container is 1Gi, but limit is 2Gi",
                "cpu max limit to request ratio per Container is 2, but provided ratio is 4.000000",
            ]
        );
        let mut errs = Vec::new();
        constraints("Container", &item, &m(json!({})), &m(json!({})), &mut errs);
        assert_eq!(
            errs[0],
            "minimum cpu usage per Container is 100m.  No request is specified"
        );
        assert_eq!(
            errs[1],
            "maximum memory usage per Container is 1Gi.  No limit is specified"
        );
    }
}
