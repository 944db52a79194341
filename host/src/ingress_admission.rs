//! kube-apiserver's `DefaultIngressClass` admission plugin
//! (`plugin/pkg/admission/network/defaultingressclass`): an Ingress created without
//! `spec.ingressClassName` and without the legacy `kubernetes.io/ingress.class` annotation gets
//! the default IngressClass's name (the class annotated `ingressclass.kubernetes.io/
//! is-default-class: "true"`; of several, the newest, then the first by name). Without a default
//! class the Ingress is left as it is.

use serde_json::{json, Value};

use crate::model::{meta, ResourceInfo};
use crate::service::Service;

/// The storage key of IngressClasses.
const INGRESS_CLASSES: &str = "ingressclasses.networking.k8s.io";
const DEFAULT_CLASS_ANNOTATION: &str = "ingressclass.kubernetes.io/is-default-class";
/// `networkingv1beta1.AnnotationIngressClass`.
const CLASS_ANNOTATION: &str = "kubernetes.io/ingress.class";

/// The plugin on a create (kube's handles creates only, never a subresource).
pub fn admit_create(svc: &Service, ri: &ResourceInfo, obj: &mut Value) {
    if !(ri.group == "networking.k8s.io" && ri.resource == "ingresses") {
        return;
    }
    // A pointer in kube: "" is a class named, as any other.
    let named = obj
        .pointer("/spec/ingressClassName")
        .is_some_and(|v| !v.is_null());
    let annotated = obj
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(CLASS_ANNOTATION))
        .is_some();
    if named || annotated {
        return;
    }
    let classes: Vec<Value> = svc
        .stored_in(INGRESS_CLASSES, "")
        .iter()
        .map(|o| o.parse().into_owned())
        .collect();
    let Some(class) = default_class(classes) else {
        return;
    };
    if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
        spec.insert("ingressClassName".into(), json!(meta::name(&class)));
    }
}

/// kube's `getDefaultClass`: of the classes annotated default, the newest (RFC 3339 timestamps
/// of one width compare as strings), then the first by name.
fn default_class(classes: Vec<Value>) -> Option<Value> {
    crate::volume_admission::newest(classes.into_iter().filter(|c| {
        c.pointer("/metadata/annotations")
            .and_then(|a| a.get(DEFAULT_CLASS_ANNOTATION))
            .and_then(Value::as_str)
            == Some("true")
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn class(name: &str, created: &str, default: Option<&str>) -> Value {
        let mut c = json!({"metadata": {"name": name, "creationTimestamp": created}});
        if let Some(d) = default {
            c["metadata"]["annotations"] = json!({DEFAULT_CLASS_ANNOTATION: d});
        }
        c
    }

    #[test]
    fn the_newest_default_class_then_the_first_by_name() {
        let pick = |cs: Vec<Value>| default_class(cs).map(|c| meta::name(&c).to_owned());
        assert_eq!(pick(vec![class("a", "2026-01-01T00:00:00Z", None)]), None);
        assert_eq!(
            pick(vec![class("a", "2026-01-01T00:00:00Z", Some("false"))]),
            None
        );
        assert_eq!(
            pick(vec![
                class("old", "2026-01-01T00:00:00Z", Some("true")),
                class("new", "2026-02-01T00:00:00Z", Some("true")),
                class("newer", "2026-03-01T00:00:00Z", None),
            ]),
            Some("new".into())
        );
        assert_eq!(
            pick(vec![
                class("b", "2026-01-01T00:00:00Z", Some("true")),
                class("a", "2026-01-01T00:00:00Z", Some("true")),
            ]),
            Some("a".into())
        );
    }
}
