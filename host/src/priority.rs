//! Pod priority as kube-apiserver gives it (`plugin/pkg/admission/priority`,
//! `pkg/apis/scheduling`): the system PriorityClasses `system-node-critical` and
//! `system-cluster-critical` exist from the first start; a Pod created with a
//! `priorityClassName` gets that class's `priority` and `preemptionPolicy` (an unknown class is
//! refused), one without gets the `globalDefault` class's, else priority 0; an update keeps
//! them; PriorityClasses are validated as kube does (system names reserved, user values at most
//! a billion, value and policy immutable, one `globalDefault`).

use serde_json::{json, Value};

use crate::model::{meta, ApiError, Cause, ResourceInfo};
use crate::service::Service;

pub const GROUP: &str = "scheduling.k8s.io";
pub const RESOURCE: &str = "priorityclasses";
/// The storage key of PriorityClasses.
const STORED: &str = "priorityclasses.scheduling.k8s.io";
/// kube's `HighestUserDefinablePriority`.
const HIGHEST_USER: i64 = 1_000_000_000;
const PREEMPT_LOWER: &str = "PreemptLowerPriority";

/// kube's `SystemPriorityClasses`: (name, value, description).
pub const SYSTEM: &[(&str, i64, &str)] = &[
    (
        "system-node-critical",
        2_000_001_000,
        "Used for system critical pods that must not be moved from their current node.",
    ),
    (
        "system-cluster-critical",
        2_000_000_000,
        "Used for system critical pods that must run in the cluster, but can be moved to another node if necessary.",
    ),
];

pub fn is_priority_classes(ri: &ResourceInfo) -> bool {
    ri.group == GROUP && ri.resource == RESOURCE
}

fn is_pods(ri: &ResourceInfo) -> bool {
    ri.group.is_empty() && ri.resource == "pods"
}

/// The system classes as stored at start.
pub fn system_classes() -> Vec<Value> {
    SYSTEM
        .iter()
        .map(|(name, value, description)| {
            json!({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                "metadata": {"name": name}, "value": value, "description": description,
                "preemptionPolicy": PREEMPT_LOWER})
        })
        .collect()
}

fn classes(svc: &Service) -> Vec<Value> {
    svc.stored_in(STORED, "")
        .iter()
        .map(|o| o.parse().into_owned())
        .collect()
}

/// kube's `getDefaultPriorityClass`: the `globalDefault` class with the lowest value.
fn default_class(svc: &Service) -> Option<Value> {
    classes(svc)
        .into_iter()
        .filter(|c| c.get("globalDefault") == Some(&json!(true)))
        .min_by_key(|c| c.get("value").and_then(Value::as_i64).unwrap_or(0))
}

/// kube's `admission.NewForbidden` for a write of `obj`.
pub(crate) fn forbidden(ri: &ResourceInfo, obj: &Value, why: String) -> ApiError {
    let gr = if ri.group.is_empty() {
        ri.resource.clone()
    } else {
        format!("{}.{}", ri.resource, ri.group)
    };
    // Before its name is generated, kube names an object by its `generateName`.
    let name = match meta::name(obj) {
        "" => meta::meta_str(obj, "generateName").unwrap_or(""),
        n => n,
    };
    ApiError::forbidden(format!("{gr} \"{name}\" is forbidden: {why}")).with_details(
        &ri.group,
        &ri.resource,
        name,
    )
}

/// kube's PriorityClass storage: the system classes cannot be deleted.
pub fn check_delete(ri: &ResourceInfo, name: &str) -> Result<(), ApiError> {
    if is_priority_classes(ri) && SYSTEM.iter().any(|(n, _, _)| *n == name) {
        return Err(ApiError::forbidden(format!(
            "priorityclasses.scheduling.k8s.io \"{name}\" is forbidden: this is a system priority class and cannot be deleted"
        ))
        .with_details(GROUP, RESOURCE, name));
    }
    Ok(())
}

/// kube's Priority plugin on a PriorityClass write (validating phase): one `globalDefault`.
pub fn check_default(
    svc: &Service,
    ri: &ResourceInfo,
    obj: &Value,
    old: Option<&Value>,
) -> Result<(), ApiError> {
    if !is_priority_classes(ri) || obj.get("globalDefault") != Some(&json!(true)) {
        return Ok(());
    }
    if let Some(d) = default_class(svc) {
        if old.is_none() || meta::name(&d) != meta::name(obj) {
            return Err(forbidden(
                ri,
                obj,
                format!(
                    "PriorityClass {} is already marked as default. Only one default can exist",
                    meta::name(&d)
                ),
            ));
        }
    }
    Ok(())
}

/// kube's Priority admission of a Pod create (`old` none) or update (mutating phase).
pub async fn admit(
    svc: &Service,
    ri: &ResourceInfo,
    obj: &mut Value,
    old: Option<&Value>,
) -> Result<(), ApiError> {
    if !is_pods(ri) {
        return Ok(());
    }
    let spec_of = |v: &Value, f: &str| {
        v.pointer(&format!("/spec/{f}"))
            .filter(|x| !x.is_null())
            .cloned()
    };
    if let Some(old) = old {
        // What admission set at create stays (validation refuses any change).
        for f in ["priority", "preemptionPolicy"] {
            if spec_of(obj, f).is_none() {
                if let (Some(was), Some(spec)) = (
                    spec_of(old, f),
                    obj.get_mut("spec").and_then(Value::as_object_mut),
                ) {
                    spec.insert(f.into(), was);
                }
            }
        }
        return Ok(());
    }
    let name = obj
        .pointer("/spec/priorityClassName")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    let (class_name, priority, policy) = if name.is_empty() {
        match default_class(svc) {
            Some(d) => (
                meta::name(&d).to_owned(),
                d.get("value").and_then(Value::as_i64).unwrap_or(0),
                d.get("preemptionPolicy")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
            ),
            None => (String::new(), 0, Some(PREEMPT_LOWER.to_owned())),
        }
    } else {
        let mut found = classes(svc).into_iter().find(|c| meta::name(c) == name);
        if found.is_none() {
            // Not in this host's view: on a store shared by several hosts it may have been
            // created through another a moment ago.
            if svc.store.sync().await.is_ok() {
                found = classes(svc).into_iter().find(|c| meta::name(c) == name);
            }
        }
        let Some(c) = found else {
            return Err(forbidden(
                ri,
                obj,
                format!("no PriorityClass with name {name} was found"),
            ));
        };
        (
            name,
            c.get("value").and_then(Value::as_i64).unwrap_or(0),
            c.get("preemptionPolicy")
                .and_then(Value::as_str)
                .map(str::to_owned),
        )
    };
    // kube decodes the Pod before admission: a `priority` that is not an int32 is the decoder's
    // 400, not "not given".
    let given = match obj.pointer("/spec/priority") {
        None | Some(Value::Null) => None,
        Some(v) => match v.as_i64().filter(|n| i32::try_from(*n).is_ok()) {
            Some(n) => Some(n),
            None => {
                let what = match v {
                    Value::Number(n) => format!("number {n}"),
                    Value::String(_) => "string".into(),
                    Value::Bool(_) => "bool".into(),
                    Value::Array(_) => "array".into(),
                    _ => "object".into(),
                };
                return Err(ApiError::bad_request(format!(
                    "Pod in version \"{}\" cannot be handled as a Pod: json: cannot unmarshal {what} into Go struct field PodSpec.spec.priority of type int32",
                    ri.version
                )));
            }
        },
    };
    if let Some(given) = given {
        if given != priority {
            return Err(forbidden(ri, obj, format!("the integer value of priority ({given}) must not be provided in pod spec; priority admission controller computed {priority} from the given PriorityClass name")));
        }
    }
    if let (Some(given), Some(p)) = (
        obj.pointer("/spec/preemptionPolicy")
            .and_then(Value::as_str),
        &policy,
    ) {
        if given != p {
            return Err(forbidden(ri, obj, format!("the string value of PreemptionPolicy ({given}) must not be provided in pod spec; priority admission controller computed {p} from the given PriorityClass name")));
        }
    }
    if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
        if !class_name.is_empty() {
            spec.insert("priorityClassName".into(), json!(class_name));
        }
        spec.insert("priority".into(), json!(priority));
        if let Some(p) = policy {
            spec.insert("preemptionPolicy".into(), json!(p));
        }
    }
    Ok(())
}

/// kube's `ValidatePriorityClass` and `ValidatePriorityClassUpdate`.
pub fn validate(obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    let mut causes = Vec::new();
    let name = meta::name(obj);
    let value = obj.get("value").and_then(Value::as_i64).unwrap_or(0);
    let global = obj.get("globalDefault") == Some(&json!(true));
    // The name and value rules are the create's (kube's update validation checks only what
    // may not change), so a class stored before them stays writable.
    let reserved = match SYSTEM.iter().find(|(n, _, _)| *n == name) {
        _ if !name.starts_with("system-") => None,
        None => Some(format!("{name} is not a known system priority class")),
        Some((_, v, _)) if *v != value => {
            Some(format!("value of {name} PriorityClass must be {v}"))
        }
        Some(_) if global => Some(format!(
            "globalDefault of {name} PriorityClass must be false"
        )),
        Some(_) => None,
    };
    if old.is_none() {
        if let Some(why) = reserved {
            causes.push(Cause::new(
                "FieldValueForbidden",
                "metadata.name",
                format!("Forbidden: priority class names with 'system-' prefix are reserved for system use only. error: {why}"),
            ));
        } else if value > HIGHEST_USER && !name.starts_with("system-") {
            causes.push(Cause::new(
                "FieldValueForbidden",
                "value",
                format!(
                    "Forbidden: maximum allowed value of a user defined priority is {HIGHEST_USER}"
                ),
            ));
        }
    }
    if let Some(p) = obj.get("preemptionPolicy").and_then(Value::as_str) {
        if !matches!(p, "PreemptLowerPriority" | "Never") {
            causes.push(Cause::new(
                "FieldValueNotSupported",
                "preemptionPolicy",
                format!("Unsupported value: \"{p}\": supported values: \"Never\", \"PreemptLowerPriority\""),
            ));
        }
    }
    if let Some(old) = old {
        if old.get("value") != obj.get("value") {
            causes.push(Cause::new(
                "FieldValueForbidden",
                "value",
                "Forbidden: may not be changed in an update.",
            ));
        }
        if old.get("preemptionPolicy") != obj.get("preemptionPolicy") {
            causes.push(Cause::new(
                "FieldValueInvalid",
                "preemptionPolicy",
                format!(
                    "Invalid value: {}: field is immutable",
                    crate::builtin::validation::field::json_opt(
                        obj.get("preemptionPolicy").filter(|v| !v.is_null())
                    )
                ),
            ));
        }
    }
    causes
}

#[cfg(test)]
mod tests {
    use super::*;

    fn messages(obj: Value, old: Option<Value>) -> Vec<String> {
        validate(&obj, old.as_ref())
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn priority_classes_are_validated_as_kube_does() {
        assert!(messages(json!({"metadata": {"name": "high"}, "value": 1000}), None).is_empty());
        assert_eq!(
            messages(
                json!({"metadata": {"name": "huge"}, "value": 2000000000}),
                None
            ),
            vec![
                "value: Forbidden: maximum allowed value of a user defined priority is 1000000000"
            ]
        );
        assert_eq!(
            messages(json!({"metadata": {"name": "system-mine"}, "value": 1}), None),
            vec!["metadata.name: Forbidden: priority class names with 'system-' prefix are reserved for system use only. error: system-mine is not a known system priority class"]
        );
        for c in system_classes() {
            assert!(messages(c, None).is_empty());
        }
        assert_eq!(
            messages(
                json!({"metadata": {"name": "high"}, "value": 2, "preemptionPolicy": "Never"}),
                Some(
                    json!({"metadata": {"name": "high"}, "value": 1, "preemptionPolicy": "Never"})
                )
            ),
            vec!["value: Forbidden: may not be changed in an update."]
        );
    }
}
