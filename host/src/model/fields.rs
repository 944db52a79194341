//! Field selectors per kind, as kube's field label conversions (`AddFieldLabelConversionFunc` in
//! `pkg/apis/*/v1/conversion.go`) accept them and each strategy's selectable fields give their
//! values: one table, looked up by group and resource. A kind without a conversion of its own
//! takes `metadata.name` and `metadata.namespace` only, refused with kube's default wording.

use serde_json::Value;

/// A field a kind selects on beyond `metadata.*`, and where its value is read from.
#[derive(Debug)]
pub struct FieldLabel {
    pub name: &'static str,
    /// JSON pointer of the value; `None` for a field kube accepts but never sets (it compares
    /// as the empty string).
    pointer: Option<&'static str>,
    /// The value when the field is absent (kube compares Go zero values).
    default: &'static str,
}

impl FieldLabel {
    const fn new(name: &'static str, pointer: &'static str, default: &'static str) -> Self {
        Self {
            name,
            pointer: Some(pointer),
            default,
        }
    }

    /// Accepted by the conversion, absent from the selectable fields.
    const fn unset(name: &'static str) -> Self {
        Self {
            name,
            pointer: None,
            default: "",
        }
    }

    /// The field's value as a field selector compares it.
    pub fn value(&self, obj: &Value) -> String {
        match self.pointer.and_then(|p| obj.pointer(p)) {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Bool(b)) => b.to_string(),
            Some(Value::Number(n)) => n.to_string(),
            _ => self.default.to_owned(),
        }
    }
}

/// How kube words a refused field label.
#[derive(Debug, Clone, Copy)]
enum Refusal {
    /// `runtime.DefaultMetaV1FieldSelectorConversion`, for kinds without a conversion.
    Default,
    /// `field label not supported: <field>` (core/v1, certificates/v1).
    NotSupported,
    /// `field label "<field>" not supported for <kind>` (batch/v1 Jobs).
    NotSupportedFor(&'static str),
}

/// What one kind's field selectors accept.
#[derive(Debug)]
pub struct Selectable {
    /// Of `metadata.name` and `metadata.namespace`, those the kind's conversion accepts.
    pub meta: &'static [&'static str],
    pub labels: &'static [FieldLabel],
    refusal: Refusal,
}

impl Selectable {
    /// Every field label accepted.
    pub fn names(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.meta
            .iter()
            .copied()
            .chain(self.labels.iter().map(|f| f.name))
    }

    /// kube's message for a field selector on `field`, which the kind does not accept.
    pub fn refusal(&self, field: &str) -> String {
        match self.refusal {
            Refusal::Default => format!(
                "{field:?} is not a known field selector: only \"metadata.name\", \"metadata.namespace\""
            ),
            Refusal::NotSupported => format!("field label not supported: {field}"),
            Refusal::NotSupportedFor(kind) => {
                format!("field label {field:?} not supported for {kind}")
            }
        }
    }
}

const NAME_NS: &[&str] = &["metadata.name", "metadata.namespace"];
const NAME_ONLY: &[&str] = &["metadata.name"];

const fn core(meta: &'static [&'static str], labels: &'static [FieldLabel]) -> Selectable {
    Selectable {
        meta,
        labels,
        refusal: Refusal::NotSupported,
    }
}

/// A kind with no field label conversion of its own.
pub const DEFAULT: Selectable = Selectable {
    meta: NAME_NS,
    labels: &[],
    refusal: Refusal::Default,
};

const PODS: Selectable = core(
    NAME_NS,
    &[
        FieldLabel::new("spec.nodeName", "/spec/nodeName", ""),
        FieldLabel::new("spec.restartPolicy", "/spec/restartPolicy", ""),
        FieldLabel::new("spec.schedulerName", "/spec/schedulerName", ""),
        FieldLabel::new("spec.serviceAccountName", "/spec/serviceAccountName", ""),
        FieldLabel::new("spec.hostNetwork", "/spec/hostNetwork", "false"),
        FieldLabel::new("status.phase", "/status/phase", ""),
        FieldLabel::new("status.podIP", "/status/podIP", ""),
        FieldLabel::unset("status.podIPs"),
        FieldLabel::new("status.nominatedNodeName", "/status/nominatedNodeName", ""),
        // Old v1 clients' name for spec.nodeName.
        FieldLabel::new("spec.host", "/spec/nodeName", ""),
    ],
);

const EVENTS: Selectable = core(
    NAME_NS,
    &[
        FieldLabel::new("involvedObject.kind", "/involvedObject/kind", ""),
        FieldLabel::new("involvedObject.namespace", "/involvedObject/namespace", ""),
        FieldLabel::new("involvedObject.name", "/involvedObject/name", ""),
        FieldLabel::new("involvedObject.uid", "/involvedObject/uid", ""),
        FieldLabel::new(
            "involvedObject.apiVersion",
            "/involvedObject/apiVersion",
            "",
        ),
        FieldLabel::new(
            "involvedObject.resourceVersion",
            "/involvedObject/resourceVersion",
            "",
        ),
        FieldLabel::new("involvedObject.fieldPath", "/involvedObject/fieldPath", ""),
        FieldLabel::new("reason", "/reason", ""),
        FieldLabel::new("reportingComponent", "/reportingComponent", ""),
        FieldLabel::new("source", "/source/component", ""),
        FieldLabel::new("type", "/type", ""),
    ],
);

/// events.k8s.io/v1 Events (kube's `AddFieldLabelConversionsForEvent`): their names, mapped onto
/// the core Events they are stored as (and judged in that shape).
const EVENTS_V1: Selectable = core(
    NAME_NS,
    &[
        FieldLabel::new("reason", "/reason", ""),
        FieldLabel::new("regarding.kind", "/involvedObject/kind", ""),
        FieldLabel::new("regarding.namespace", "/involvedObject/namespace", ""),
        FieldLabel::new("regarding.name", "/involvedObject/name", ""),
        FieldLabel::new("regarding.uid", "/involvedObject/uid", ""),
        FieldLabel::new("regarding.apiVersion", "/involvedObject/apiVersion", ""),
        FieldLabel::new(
            "regarding.resourceVersion",
            "/involvedObject/resourceVersion",
            "",
        ),
        FieldLabel::new("regarding.fieldPath", "/involvedObject/fieldPath", ""),
        FieldLabel::new("reportingController", "/reportingComponent", ""),
        FieldLabel::new("type", "/type", ""),
    ],
);

/// Every kind with a field label conversion of its own, by group and resource.
const KINDS: &[(&str, &str, Selectable)] = &[
    ("", "pods", PODS),
    ("", "events", EVENTS),
    ("events.k8s.io", "events", EVENTS_V1),
    (
        "",
        "nodes",
        core(
            NAME_ONLY,
            &[FieldLabel::new(
                "spec.unschedulable",
                "/spec/unschedulable",
                "false",
            )],
        ),
    ),
    (
        "",
        "namespaces",
        core(
            NAME_ONLY,
            &[FieldLabel::new("status.phase", "/status/phase", "")],
        ),
    ),
    (
        "",
        "secrets",
        core(NAME_NS, &[FieldLabel::new("type", "/type", "")]),
    ),
    (
        "",
        "services",
        core(
            NAME_NS,
            &[
                FieldLabel::new("spec.clusterIP", "/spec/clusterIP", ""),
                FieldLabel::new("spec.type", "/spec/type", ""),
            ],
        ),
    ),
    (
        "",
        "replicationcontrollers",
        core(
            NAME_NS,
            &[FieldLabel::new("status.replicas", "/status/replicas", "0")],
        ),
    ),
    (
        "apps",
        "replicasets",
        core(
            NAME_NS,
            &[FieldLabel::new("status.replicas", "/status/replicas", "0")],
        ),
    ),
    (
        "batch",
        "jobs",
        Selectable {
            meta: NAME_NS,
            labels: &[FieldLabel::new(
                "status.successful",
                "/status/succeeded",
                "0",
            )],
            refusal: Refusal::NotSupportedFor("batchv1.Job"),
        },
    ),
    (
        "certificates.k8s.io",
        "certificatesigningrequests",
        core(
            NAME_ONLY,
            &[FieldLabel::new("spec.signerName", "/spec/signerName", "")],
        ),
    ),
];

/// A custom resource's field selectors, as kube's CR converter takes them: `metadata.name`,
/// `metadata.namespace` when namespaced, and the CRD version's `selectableFields`; anything
/// else is `field label not supported: <field>`.
pub fn custom_names(namespaced: bool, selectable: &[String]) -> Vec<&str> {
    let meta: &[&str] = if namespaced { NAME_NS } else { NAME_ONLY };
    meta.iter()
        .copied()
        .chain(selectable.iter().map(String::as_str))
        .collect()
}

/// kube's wording for a refused field label of a custom resource.
pub fn custom_refusal(field: &str) -> String {
    format!("field label not supported: {field}")
}

/// A selectable field's value (`spec.color` read at `.spec.color`): strings as they are,
/// numbers and booleans printed, anything else or nothing as the empty string.
pub fn custom_value(obj: &Value, field: &str) -> String {
    match crate::crd::eval_json_path(obj, &format!(".{field}")) {
        Some(Value::String(s)) => s,
        Some(v @ (Value::Number(_) | Value::Bool(_))) => v.to_string(),
        _ => String::new(),
    }
}

/// What field selectors on `group`/`resource` accept.
pub fn selectable(group: &str, resource: &str) -> &'static Selectable {
    KINDS
        .iter()
        .find(|(g, r, _)| *g == group && *r == resource)
        .map(|(_, _, s)| s)
        .unwrap_or(&DEFAULT)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn value(group: &str, resource: &str, field: &str, obj: &Value) -> Option<String> {
        selectable(group, resource)
            .labels
            .iter()
            .find(|f| f.name == field)
            .map(|f| f.value(obj))
    }

    #[test]
    fn field_labels_read_values_and_defaults() {
        let pod = json!({"spec": {"nodeName": "n1"}, "status": {"phase": "Running", "podIPs": [{"ip": "10.0.0.1"}]}});
        let get = |f: &str| value("", "pods", f, &pod);
        assert_eq!(get("spec.nodeName").as_deref(), Some("n1"));
        assert_eq!(get("spec.host").as_deref(), Some("n1"));
        assert_eq!(get("status.phase").as_deref(), Some("Running"));
        assert_eq!(get("spec.hostNetwork").as_deref(), Some("false"));
        assert_eq!(get("status.podIP").as_deref(), Some(""));
        assert_eq!(get("status.podIPs").as_deref(), Some(""));
        let job = json!({"status": {"succeeded": 1}});
        assert_eq!(
            value("batch", "jobs", "status.successful", &job).as_deref(),
            Some("1")
        );
        assert_eq!(
            value("batch", "jobs", "status.successful", &json!({})).as_deref(),
            Some("0")
        );
        let svc = json!({"spec": {"type": "ClusterIP", "clusterIP": "None"}});
        assert_eq!(
            value("", "services", "spec.clusterIP", &svc).as_deref(),
            Some("None")
        );
        let csr = json!({"spec": {"signerName": "example.com/x"}});
        assert_eq!(
            value(
                "certificates.k8s.io",
                "certificatesigningrequests",
                "spec.signerName",
                &csr
            )
            .as_deref(),
            Some("example.com/x")
        );
        let rc = json!({"status": {"replicas": 2}});
        assert_eq!(
            value("", "replicationcontrollers", "status.replicas", &rc).as_deref(),
            Some("2")
        );
    }

    #[test]
    fn every_entry_is_a_served_kind() {
        for (group, resource, _) in KINDS {
            assert!(
                crate::builtin::find(group, resource).is_some(),
                "{group}/{resource} is not served"
            );
        }
    }

    #[test]
    fn each_kind_accepts_what_its_conversion_accepts() {
        let names = |g: &str, r: &str| selectable(g, r).names().collect::<Vec<_>>();
        assert_eq!(
            names("", "configmaps"),
            ["metadata.name", "metadata.namespace"]
        );
        assert_eq!(
            names("", "services"),
            [
                "metadata.name",
                "metadata.namespace",
                "spec.clusterIP",
                "spec.type"
            ]
        );
        assert_eq!(names("", "nodes"), ["metadata.name", "spec.unschedulable"]);
        assert_eq!(names("", "namespaces"), ["metadata.name", "status.phase"]);
        assert_eq!(
            names("certificates.k8s.io", "certificatesigningrequests"),
            ["metadata.name", "spec.signerName"]
        );
        assert!(names("", "secrets").contains(&"type"));
    }

    #[test]
    fn custom_resources_select_on_their_selectable_fields() {
        let fields = vec!["spec.color".to_owned(), "spec.size".to_owned()];
        assert_eq!(
            custom_names(true, &fields),
            [
                "metadata.name",
                "metadata.namespace",
                "spec.color",
                "spec.size"
            ]
        );
        assert_eq!(custom_names(false, &[]), ["metadata.name"]);
        let obj = json!({"spec": {"color": "blue", "size": 3}});
        assert_eq!(custom_value(&obj, "spec.color"), "blue");
        assert_eq!(custom_value(&obj, "spec.size"), "3");
        assert_eq!(custom_value(&obj, "spec.missing"), "");
        assert_eq!(
            custom_refusal("spec.x"),
            "field label not supported: spec.x"
        );
    }

    #[test]
    fn refusals_are_worded_as_kube_words_them() {
        assert_eq!(
            selectable("", "configmaps").refusal("data.x"),
            r#""data.x" is not a known field selector: only "metadata.name", "metadata.namespace""#
        );
        assert_eq!(
            selectable("", "pods").refusal("spec.foo"),
            "field label not supported: spec.foo"
        );
        assert_eq!(
            selectable("batch", "jobs").refusal("status.succeeded"),
            r#"field label "status.succeeded" not supported for batchv1.Job"#
        );
    }
}
