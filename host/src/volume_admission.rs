//! kube-apiserver's storage admission plugins:
//! - `DefaultStorageClass` (`plugin/pkg/admission/storage/storageclass/setdefault`): a
//!   PersistentVolumeClaim created without `spec.storageClassName` gets the default
//!   StorageClass's name (the class annotated `storageclass.kubernetes.io/is-default-class:
//!   "true"`, or the beta annotation; of several, the newest, then the first by name). An empty
//!   name (`""`) asks for no class and is kept.
//! - `StorageObjectInUseProtection`: a claim created gets the finalizer
//!   `kubernetes.io/pvc-protection`, a volume `kubernetes.io/pv-protection`, which the
//!   `pvc-protection` and `pv-protection` controllers remove once nothing uses them
//!   ([`crate::controllers::volumeprotection`]).
//! - `PersistentVolumeClaimResize`: a bound claim's storage request may grow only when its
//!   StorageClass allows volume expansion.

use serde_json::{json, Value};

use crate::model::{meta, ApiError, ResourceInfo};
use crate::service::Service;

/// The storage key of StorageClasses.
const STORAGE_CLASSES: &str = "storageclasses.storage.k8s.io";
pub const DEFAULT_CLASS_ANNOTATION: &str = "storageclass.kubernetes.io/is-default-class";
pub const BETA_DEFAULT_CLASS_ANNOTATION: &str = "storageclass.beta.kubernetes.io/is-default-class";
pub const PVC_PROTECTION: &str = "kubernetes.io/pvc-protection";
pub const PV_PROTECTION: &str = "kubernetes.io/pv-protection";
const BETA_CLASS_ANNOTATION: &str = "volume.beta.kubernetes.io/storage-class";

/// kube's `GetPersistentVolumeClaimClass`: the beta annotation first, then the field.
fn claim_class(claim: &Value) -> &str {
    claim
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(BETA_CLASS_ANNOTATION))
        .or_else(|| claim.pointer("/spec/storageClassName"))
        .and_then(Value::as_str)
        .unwrap_or("")
}

fn is_core(ri: &ResourceInfo, resource: &str) -> bool {
    ri.group.is_empty() && ri.resource == resource
}

/// kube's `IsDefaultAnnotation`.
pub fn is_default_class(class: &Value) -> bool {
    let annotations = class.pointer("/metadata/annotations");
    [DEFAULT_CLASS_ANNOTATION, BETA_DEFAULT_CLASS_ANNOTATION]
        .iter()
        .any(|a| annotations.and_then(|m| m.get(*a)).and_then(Value::as_str) == Some("true"))
}

/// kube's `GetDefaultClass`: of the classes marked default, the newest (RFC 3339 timestamps of
/// one width compare as strings), then the first by name.
pub fn default_class(classes: impl IntoIterator<Item = Value>) -> Option<Value> {
    newest(classes.into_iter().filter(is_default_class))
}

/// Of several classes marked default, the one kube's plugins pick (DefaultStorageClass,
/// DefaultIngressClass): the newest (RFC 3339 timestamps of one width compare as strings), then
/// the first by name.
pub(crate) fn newest(classes: impl IntoIterator<Item = Value>) -> Option<Value> {
    classes.into_iter().min_by(|a, b| {
        let created = |v: &Value| {
            meta::meta_str(v, "creationTimestamp")
                .unwrap_or("")
                .to_owned()
        };
        created(b)
            .cmp(&created(a))
            .then_with(|| meta::name(a).cmp(meta::name(b)))
    })
}

fn classes(svc: &Service) -> Vec<Value> {
    svc.stored_in(STORAGE_CLASSES, "")
        .iter()
        .map(|o| o.parse().into_owned())
        .collect()
}

/// The mutating plugins on a create: the default class, then the protection finalizer.
pub fn admit_create(svc: &Service, ri: &ResourceInfo, obj: &mut Value) {
    if is_core(ri, "persistentvolumeclaims") {
        // kube's `PersistentVolumeClaimHasClass`: the field (even "") or the beta annotation.
        let unset = obj
            .pointer("/spec/storageClassName")
            .is_none_or(Value::is_null)
            && obj
                .pointer("/metadata/annotations")
                .and_then(|a| a.get(BETA_CLASS_ANNOTATION))
                .is_none();
        if unset {
            if let (Some(class), Some(spec)) = (
                default_class(classes(svc)),
                obj.get_mut("spec").and_then(Value::as_object_mut),
            ) {
                spec.insert("storageClassName".into(), json!(meta::name(&class)));
            }
        }
        add_finalizer(obj, PVC_PROTECTION);
    } else if is_core(ri, "persistentvolumes") {
        add_finalizer(obj, PV_PROTECTION);
    }
}

fn add_finalizer(obj: &mut Value, finalizer: &str) {
    let Some(m) = obj.get_mut("metadata").and_then(Value::as_object_mut) else {
        return;
    };
    let list = m.entry("finalizers").or_insert_with(|| json!([]));
    if !list.is_array() {
        *list = json!([]);
    }
    if let Some(list) = list.as_array_mut() {
        if !list.iter().any(|f| f == finalizer) {
            list.push(json!(finalizer));
        }
    }
}

/// kube's `PersistentVolumeClaimResize` (validating, on an update of a claim's spec): a larger
/// storage request needs a bound claim whose class allows expansion.
pub fn check_resize(
    svc: &Service,
    ri: &ResourceInfo,
    obj: &Value,
    old: &Value,
) -> Result<(), ApiError> {
    if !is_core(ri, "persistentvolumeclaims") {
        return Ok(());
    }
    let storage = |v: &Value| {
        v.pointer("/spec/resources/requests/storage")
            .and_then(Value::as_str)
            .and_then(|q| crate::builtin::quantity::nano_value(q).ok())
            .map(|(n, _)| n)
    };
    let (Some(new), Some(was)) = (storage(obj), storage(old)) else {
        return Ok(());
    };
    if new <= was {
        return Ok(());
    }
    if old.pointer("/status/phase").and_then(Value::as_str) != Some("Bound") {
        return Err(crate::priority::forbidden(
            ri,
            obj,
            "Only bound persistent volume claims can be expanded".into(),
        ));
    }
    // kube's `allowResize`: the same class before and after, one that allows expansion.
    let class = claim_class(obj);
    let allows = !class.is_empty()
        && class == claim_class(old)
        && classes(svc)
            .iter()
            .any(|c| meta::name(c) == class && c.get("allowVolumeExpansion") == Some(&json!(true)));
    if !allows {
        return Err(crate::priority::forbidden(
            ri,
            obj,
            "only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must support resize".into(),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn class(name: &str, created: &str, default: Option<&str>) -> Value {
        let mut c = json!({"metadata": {"name": name, "creationTimestamp": created}});
        if let Some(a) = default {
            c["metadata"]["annotations"] = json!({a: "true"});
        }
        c
    }

    #[test]
    fn the_newest_default_class_wins_then_the_first_by_name() {
        let none = default_class(vec![class("a", "2026-01-01T00:00:00Z", None)]);
        assert!(none.is_none());
        let picked = default_class(vec![
            class(
                "old",
                "2026-01-01T00:00:00Z",
                Some(DEFAULT_CLASS_ANNOTATION),
            ),
            class(
                "new",
                "2026-02-01T00:00:00Z",
                Some(BETA_DEFAULT_CLASS_ANNOTATION),
            ),
            class("plain", "2026-03-01T00:00:00Z", None),
        ]);
        assert_eq!(picked.as_ref().map(meta::name), Some("new"));
        let tie = default_class(vec![
            class(
                "zeta",
                "2026-01-01T00:00:00Z",
                Some(DEFAULT_CLASS_ANNOTATION),
            ),
            class(
                "alpha",
                "2026-01-01T00:00:00Z",
                Some(DEFAULT_CLASS_ANNOTATION),
            ),
        ]);
        assert_eq!(tie.as_ref().map(meta::name), Some("alpha"));
        let not_true =
            json!({"metadata": {"name": "x", "annotations": {DEFAULT_CLASS_ANNOTATION: "yes"}}});
        assert!(!is_default_class(&not_true));
    }

    #[test]
    fn finalizers_are_added_once() {
        let mut v = json!({"metadata": {"finalizers": [PVC_PROTECTION]}});
        add_finalizer(&mut v, PVC_PROTECTION);
        assert_eq!(v["metadata"]["finalizers"], json!([PVC_PROTECTION]));
        let mut v = json!({"metadata": {}});
        add_finalizer(&mut v, PV_PROTECTION);
        assert_eq!(v["metadata"]["finalizers"], json!([PV_PROTECTION]));
    }
}
