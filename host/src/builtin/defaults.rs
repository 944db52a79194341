//! kube's defaults (`SetDefaults_*` of each API group, and the create-time parts of its
//! strategies that clients see) for the built-in kinds beyond Pods, Deployments and ReplicaSets
//! (those are in `model::workloads`). Applied after decoding, on every write, as kube applies
//! defaults on every decode; `creating` adds what kube's `PrepareForCreate` does once.

use serde_json::{json, Map, Value};

use crate::model::workloads::default_pod_spec;

/// Apply kube's defaults to an object of `group`/`resource` (decoded already).
pub fn apply(group: &str, resource: &str, obj: &mut Value, creating: bool) {
    match (group, resource) {
        ("", "namespaces") => namespace_name_label(obj),
        ("", "services") => service(obj),
        ("", "replicationcontrollers") => replication_controller(obj),
        ("", "limitranges") => {
            if let Some(items) = obj
                .get_mut("spec")
                .and_then(|s| s.get_mut("limits"))
                .and_then(Value::as_array_mut)
            {
                for item in items {
                    crate::limitrange::default_item(item);
                }
            }
        }
        ("", "podtemplates") => {
            if let Some(t) = obj.get_mut("template") {
                template(t);
            }
        }
        // kube's `SetDefaults_RoleBinding`/`ClusterRoleBinding` and `SetDefaults_Subject`.
        ("rbac.authorization.k8s.io", "rolebindings" | "clusterrolebindings") => {
            if let Some(r) = obj.get_mut("roleRef").and_then(Value::as_object_mut) {
                let empty = r
                    .get("apiGroup")
                    .and_then(Value::as_str)
                    .is_none_or(str::is_empty);
                if empty {
                    r.insert("apiGroup".into(), json!("rbac.authorization.k8s.io"));
                }
            }
            for subject in array_mut(obj, "subjects") {
                let Some(m) = subject.as_object_mut() else {
                    continue;
                };
                let empty = m
                    .get("apiGroup")
                    .and_then(Value::as_str)
                    .is_none_or(str::is_empty);
                let user_or_group = matches!(
                    m.get("kind").and_then(Value::as_str),
                    Some("User" | "Group")
                );
                if empty && user_or_group {
                    m.insert("apiGroup".into(), json!("rbac.authorization.k8s.io"));
                }
            }
        }
        // kube's `SetDefaults_IngressClass`: parameters without a scope are cluster-scoped.
        // kube's `SetDefaults_CSIDriver`.
        ("storage.k8s.io", "csidrivers") => {
            if let Some(o) = obj.as_object_mut() {
                let spec = o.entry("spec").or_insert_with(|| json!({}));
                if let Some(spec) = spec.as_object_mut() {
                    for (k, v) in [
                        ("attachRequired", json!(true)),
                        ("podInfoOnMount", json!(false)),
                        ("storageCapacity", json!(false)),
                        ("fsGroupPolicy", json!("ReadWriteOnceWithFSType")),
                        ("requiresRepublish", json!(false)),
                        ("volumeLifecycleModes", json!(["Persistent"])),
                        ("seLinuxMount", json!(false)),
                    ] {
                        let unset = spec.get(k).is_none_or(Value::is_null);
                        if unset {
                            spec.insert(k.into(), v);
                        }
                    }
                }
            }
        }
        ("networking.k8s.io", "ingressclasses") => {
            if let Some(p) = spec_of(obj)
                .and_then(|s| s.get_mut("parameters"))
                .and_then(Value::as_object_mut)
            {
                p.entry("scope").or_insert(json!("Cluster"));
            }
        }
        ("", "persistentvolumeclaims") => {
            if let Some(spec) = spec_of(obj) {
                spec.entry("volumeMode").or_insert(json!("Filesystem"));
            }
        }
        ("", "persistentvolumes") => {
            if let Some(spec) = spec_of(obj) {
                spec.entry("persistentVolumeReclaimPolicy")
                    .or_insert(json!("Retain"));
                spec.entry("volumeMode").or_insert(json!("Filesystem"));
                // `SetDefaults_HostPathVolumeSource`, for a volume's source as for a Pod's.
                if let Some(h) = spec.get_mut("hostPath").and_then(Value::as_object_mut) {
                    h.entry("type").or_insert(json!(""));
                }
            }
        }
        ("", "endpoints") => {
            for subset in array_mut(obj, "subsets") {
                for port in array_mut(subset, "ports") {
                    protocol_tcp(port);
                }
            }
        }
        ("discovery.k8s.io", "endpointslices") => {
            for port in array_mut(obj, "ports") {
                protocol_tcp(port);
            }
        }
        ("apps", "statefulsets") => stateful_set(obj),
        ("apps", "daemonsets") => daemon_set(obj),
        ("batch", "jobs") => job(obj, creating),
        ("batch", "cronjobs") => cron_job(obj),
        ("autoscaling", "horizontalpodautoscalers") => {
            // autoscaling/v1 has only `minReplicas` to default; the rest is v2's.
            if obj.get("apiVersion").and_then(Value::as_str) == Some("autoscaling/v1") {
                if let Some(spec) = spec_of(obj) {
                    spec.entry("minReplicas").or_insert(json!(1));
                }
            } else {
                hpa(obj);
            }
        }
        ("networking.k8s.io", "networkpolicies") => network_policy(obj),
        ("storage.k8s.io", "storageclasses") => {
            if let Some(m) = obj.as_object_mut() {
                m.entry("reclaimPolicy").or_insert(json!("Delete"));
                m.entry("volumeBindingMode").or_insert(json!("Immediate"));
            }
        }
        ("scheduling.k8s.io", "priorityclasses") => {
            if let Some(m) = obj.as_object_mut() {
                m.entry("preemptionPolicy")
                    .or_insert(json!("PreemptLowerPriority"));
            }
        }
        ("flowcontrol.apiserver.k8s.io", "flowschemas") => {
            if let Some(m) = obj.as_object_mut() {
                flow_schema_spec(m.entry("spec").or_insert(Value::Null));
            }
        }
        ("flowcontrol.apiserver.k8s.io", "prioritylevelconfigurations") => {
            if let Some(spec) = obj.get_mut("spec") {
                priority_level_spec(spec);
            }
        }
        ("admissionregistration.k8s.io", "validatingwebhookconfigurations") => {
            for w in array_mut(obj, "webhooks") {
                webhook(w, false);
            }
        }
        ("admissionregistration.k8s.io", "mutatingwebhookconfigurations") => {
            for w in array_mut(obj, "webhooks") {
                webhook(w, true);
            }
        }
        ("admissionregistration.k8s.io", "validatingadmissionpolicies") => {
            if let Some(spec) = spec_of(obj) {
                spec.entry("failurePolicy").or_insert(json!("Fail"));
                if let Some(mc) = spec
                    .get_mut("matchConstraints")
                    .and_then(Value::as_object_mut)
                {
                    match_resources(mc);
                }
            }
        }
        ("admissionregistration.k8s.io", "mutatingadmissionpolicies") => {
            if let Some(spec) = spec_of(obj) {
                spec.entry("failurePolicy").or_insert(json!("Fail"));
                if let Some(mc) = spec
                    .get_mut("matchConstraints")
                    .and_then(Value::as_object_mut)
                {
                    match_resources(mc);
                }
            }
        }
        ("admissionregistration.k8s.io", "mutatingadmissionpolicybindings") => {
            if let Some(mr) = spec_of(obj)
                .and_then(|s| s.get_mut("matchResources"))
                .and_then(Value::as_object_mut)
            {
                match_resources(mr);
            }
        }
        ("admissionregistration.k8s.io", "validatingadmissionpolicybindings") => {
            if let Some(mr) = spec_of(obj)
                .and_then(|s| s.get_mut("matchResources"))
                .and_then(Value::as_object_mut)
            {
                match_resources(mr);
            }
        }
        _ => {}
    }
}

/// flowcontrol/v1's `FlowSchemaDefaultMatchingPrecedence`.
pub(crate) const DEFAULT_MATCHING_PRECEDENCE: i64 = 1000;
/// flowcontrol/v1's `PriorityLevelConfigurationDefaultNominalConcurrencyShares`.
pub(crate) const DEFAULT_NOMINAL_SHARES: i64 = 30;
/// flowcontrol/v1's `PriorityLevelConfigurationDefault{Queues,HandSize,QueueLengthLimit}`.
pub(crate) const DEFAULT_QUEUES: i64 = 64;
pub(crate) const DEFAULT_HAND_SIZE: i64 = 8;
pub(crate) const DEFAULT_QUEUE_LENGTH_LIMIT: i64 = 50;

/// kube's `SetObjectDefaults_FlowSchema` (`pkg/apis/flowcontrol/v1`): `SetDefaults_FlowSchemaSpec`
/// on the spec (a struct, so always there: an absent one becomes `{}`), whose `matchingPrecedence`
/// (an `int32`) is 1000 when absent, `null` or 0. Also what `validation::admission`'s
/// `flow_schema_canonical` compares.
pub(crate) fn flow_schema_spec(spec: &mut Value) {
    if spec.is_null() {
        *spec = json!({});
    }
    if let Some(s) = spec.as_object_mut() {
        zero_to(s, "matchingPrecedence", DEFAULT_MATCHING_PRECEDENCE);
    }
}

/// kube's `SetObjectDefaults_PriorityLevelConfiguration` (`pkg/apis/flowcontrol/v1`), on the
/// spec. A `limited` level (`SetDefaults_LimitedPriorityLevelConfiguration`): its
/// `nominalConcurrencyShares`, a pointer in v1, is 30 only when nil (absent or `null`; an
/// explicit 0 is kept: v1 allows zero shares), its `lendablePercent` 0 when nil; its
/// `limitResponse.queuing`, when set (`SetDefaults_QueuingConfiguration`: `int32`s), `handSize`
/// 8, `queues` 64, `queueLengthLimit` 50 when 0. An `exempt` one
/// (`SetDefaults_ExemptPriorityLevelConfiguration`): both pointers 0 when nil. Also what
/// `validation::admission`'s `priority_level_canonical` compares.
pub(crate) fn priority_level_spec(spec: &mut Value) {
    let Some(s) = spec.as_object_mut() else {
        return;
    };
    if let Some(l) = s.get_mut("limited").and_then(Value::as_object_mut) {
        nil_to(l, "nominalConcurrencyShares", DEFAULT_NOMINAL_SHARES);
        nil_to(l, "lendablePercent", 0);
        if let Some(q) = l
            .get_mut("limitResponse")
            .and_then(|r| r.get_mut("queuing"))
            .and_then(Value::as_object_mut)
        {
            zero_to(q, "handSize", DEFAULT_HAND_SIZE);
            zero_to(q, "queues", DEFAULT_QUEUES);
            zero_to(q, "queueLengthLimit", DEFAULT_QUEUE_LENGTH_LIMIT);
        }
    }
    if let Some(e) = s.get_mut("exempt").and_then(Value::as_object_mut) {
        nil_to(e, "nominalConcurrencyShares", 0);
        nil_to(e, "lendablePercent", 0);
    }
}

/// A Go pointer's default: `field` is `value` when absent or `null`.
fn nil_to(m: &mut Map<String, Value>, field: &str, value: i64) {
    if m.get(field).is_none_or(Value::is_null) {
        m.insert(field.into(), json!(value));
    }
}

/// A Go integer's default: `field` is `value` when absent, `null` or 0.
fn zero_to(m: &mut Map<String, Value>, field: &str, value: i64) {
    if m.get(field)
        .is_none_or(|v| v.is_null() || v.as_i64() == Some(0))
    {
        m.insert(field.into(), json!(value));
    }
}

/// The label kube puts on every Namespace (`SetDefaults_Namespace` and the strategy's
/// `Canonicalize`): `kubernetes.io/metadata.name` is the namespace's name, whatever was sent, so
/// selectors can pick namespaces by name. A namespace without a name yet (generateName) gets it
/// once its name is generated.
pub fn namespace_name_label(obj: &mut Value) {
    const LABEL: &str = "kubernetes.io/metadata.name";
    let name = obj
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) else {
        return;
    };
    if name.is_empty() {
        // Not named yet (mutating admission of a generateName create): no label a client
        // chose may pass for the name meanwhile.
        if let Some(l) = meta.get_mut("labels").and_then(Value::as_object_mut) {
            l.remove(LABEL);
        }
        return;
    }
    // Labels that are not an object are left for decoding to refuse.
    match meta.entry("labels").or_insert_with(|| json!({})) {
        Value::Object(l) => {
            l.insert(LABEL.into(), Value::String(name));
        }
        Value::Null => {
            meta.insert("labels".into(), json!({ LABEL: name }));
        }
        _ => {}
    }
}

fn spec_of(obj: &mut Value) -> Option<&mut Map<String, Value>> {
    obj.get_mut("spec").and_then(Value::as_object_mut)
}

fn array_mut<'a>(v: &'a mut Value, field: &str) -> impl Iterator<Item = &'a mut Value> {
    v.get_mut(field)
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
}

fn protocol_tcp(port: &mut Value) {
    if let Some(p) = port.as_object_mut() {
        if p.get("protocol").is_none_or(Value::is_null) {
            p.insert("protocol".into(), json!("TCP"));
        }
    }
}

/// A pod template's spec gets the pod-spec defaults.
fn template(t: &mut Value) {
    if let Some(spec) = t.get_mut("spec").filter(|s| s.is_object()) {
        default_pod_spec(spec);
    }
}

fn spec_template(spec: &mut Map<String, Value>) {
    if let Some(t) = spec.get_mut("template") {
        template(t);
    }
}

/// `SetDefaults_Service` (IP families and addresses are the allocator's, not defaults).
fn service(obj: &mut Value) {
    if let Some(o) = obj.as_object_mut() {
        let spec = o.entry("spec").or_insert_with(|| json!({}));
        if spec.is_null() {
            *spec = json!({});
        }
    }
    let lb_ingress_ip_mode = |obj: &mut Value| {
        let ingress = obj
            .pointer_mut("/status/loadBalancer/ingress")
            .and_then(Value::as_array_mut);
        for ing in ingress.into_iter().flatten() {
            if let Some(m) = ing.as_object_mut() {
                let has_ip = m
                    .get("ip")
                    .and_then(Value::as_str)
                    .is_some_and(|s| !s.is_empty());
                if has_ip && m.get("ipMode").is_none_or(Value::is_null) {
                    m.insert("ipMode".into(), json!("VIP"));
                }
            }
        }
    };
    let load_balancer = obj.pointer("/spec/type").and_then(Value::as_str) == Some("LoadBalancer");
    if load_balancer {
        lb_ingress_ip_mode(obj);
    }
    let Some(spec) = spec_of(obj) else { return };
    spec.entry("sessionAffinity").or_insert(json!("None"));
    if spec.get("sessionAffinity").and_then(Value::as_str) == Some("None") {
        spec.remove("sessionAffinityConfig");
    }
    let ty = spec
        .entry("type")
        .or_insert(json!("ClusterIP"))
        .as_str()
        .unwrap_or("")
        .to_owned();
    if spec.get("sessionAffinity").and_then(Value::as_str) == Some("ClientIP") {
        let cfg = spec
            .entry("sessionAffinityConfig")
            .or_insert_with(|| json!({}));
        if let Some(cfg) = cfg.as_object_mut() {
            let ip = cfg.entry("clientIP").or_insert_with(|| json!({}));
            if let Some(ip) = ip.as_object_mut() {
                ip.entry("timeoutSeconds").or_insert(json!(10800));
            }
        }
    }
    if matches!(ty.as_str(), "ClusterIP" | "NodePort" | "LoadBalancer") {
        spec.entry("internalTrafficPolicy")
            .or_insert(json!("Cluster"));
    }
    // kube's `ExternallyAccessible`: node ports, load balancers, external IPs.
    let external_ips = spec
        .get("externalIPs")
        .and_then(Value::as_array)
        .is_some_and(|a| !a.is_empty());
    if matches!(ty.as_str(), "NodePort" | "LoadBalancer") || (ty == "ClusterIP" && external_ips) {
        let unset = spec
            .get("externalTrafficPolicy")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty);
        if unset {
            spec.insert("externalTrafficPolicy".into(), json!("Cluster"));
        }
    }
    if ty == "LoadBalancer" {
        spec.entry("allocateLoadBalancerNodePorts")
            .or_insert(json!(true));
    }
    for port in spec
        .get_mut("ports")
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
    {
        let Some(p) = port.as_object_mut() else {
            continue;
        };
        p.entry("protocol").or_insert(json!("TCP"));
        let target_unset = match p.get("targetPort") {
            None | Some(Value::Null) => true,
            Some(Value::Number(n)) => n.as_i64() == Some(0),
            Some(Value::String(s)) => s.is_empty(),
            _ => false,
        };
        if target_unset {
            if let Some(port) = p.get("port").cloned() {
                p.insert("targetPort".into(), port);
            }
        }
    }
}

/// `SetDefaults_ReplicationController`: selector and labels from the template's labels.
fn replication_controller(obj: &mut Value) {
    let template_labels = obj
        .pointer("/spec/template/metadata/labels")
        .filter(|l| l.as_object().is_some_and(|m| !m.is_empty()))
        .cloned();
    if let Some(labels) = &template_labels {
        let empty = |v: Option<&Value>| v.and_then(Value::as_object).is_none_or(Map::is_empty);
        if empty(obj.pointer("/spec/selector")) {
            if let Some(spec) = spec_of(obj) {
                spec.insert("selector".into(), labels.clone());
            }
        }
        if empty(obj.pointer("/metadata/labels")) {
            if let Some(m) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
                m.insert("labels".into(), labels.clone());
            }
        }
    }
    if let Some(spec) = spec_of(obj) {
        spec.entry("replicas").or_insert(json!(1));
        spec_template(spec);
    }
}

fn stateful_set(obj: &mut Value) {
    let Some(spec) = spec_of(obj) else { return };
    spec.entry("replicas").or_insert(json!(1));
    spec.entry("podManagementPolicy")
        .or_insert(json!("OrderedReady"));
    let strategy = spec.entry("updateStrategy").or_insert_with(|| json!({}));
    if let Some(st) = strategy.as_object_mut() {
        // kube's SetDefaults_StatefulSet: `rollingUpdate` is made only with a defaulted type; an
        // explicit `type: RollingUpdate` without it keeps none (kubectl rollout status then
        // waits for the revisions, not a partition). A given `rollingUpdate` gets partition 0.
        let untyped = st
            .get("type")
            .is_none_or(|t| t.is_null() || t.as_str() == Some(""));
        if untyped {
            st.insert("type".into(), json!("RollingUpdate"));
            let ru = st.entry("rollingUpdate").or_insert(Value::Null);
            if ru.is_null() {
                *ru = json!({});
            }
        }
        if st.get("type") == Some(&json!("RollingUpdate")) {
            if let Some(ru) = st.get_mut("rollingUpdate").and_then(Value::as_object_mut) {
                ru.entry("partition").or_insert(json!(0));
            }
        }
    }
    spec.entry("revisionHistoryLimit").or_insert(json!(10));
    let retention = spec
        .entry("persistentVolumeClaimRetentionPolicy")
        .or_insert_with(|| json!({}));
    if let Some(r) = retention.as_object_mut() {
        r.entry("whenDeleted").or_insert(json!("Retain"));
        r.entry("whenScaled").or_insert(json!("Retain"));
    }
    for pvc in spec
        .get_mut("volumeClaimTemplates")
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
    {
        let Some(p) = pvc.as_object_mut() else {
            continue;
        };
        p.entry("apiVersion").or_insert(json!("v1"));
        p.entry("kind").or_insert(json!("PersistentVolumeClaim"));
        if let Some(s) = p.get_mut("spec").and_then(Value::as_object_mut) {
            s.entry("volumeMode").or_insert(json!("Filesystem"));
        }
        p.entry("status").or_insert(json!({"phase": "Pending"}));
    }
    spec_template(spec);
}

fn daemon_set(obj: &mut Value) {
    let Some(spec) = spec_of(obj) else { return };
    let strategy = spec.entry("updateStrategy").or_insert_with(|| json!({}));
    if let Some(st) = strategy.as_object_mut() {
        let ty = st.entry("type").or_insert(json!("RollingUpdate")).clone();
        if ty == "RollingUpdate" {
            let ru = st.entry("rollingUpdate").or_insert_with(|| json!({}));
            if let Some(ru) = ru.as_object_mut() {
                ru.entry("maxUnavailable").or_insert(json!(1));
                ru.entry("maxSurge").or_insert(json!(0));
            }
        }
    }
    spec.entry("revisionHistoryLimit").or_insert(json!(10));
    spec_template(spec);
}

/// `SetDefaults_Job`, and on create the job strategy's generated selector: the template (and
/// the Job, when it had no labels of its own) is labelled with the Job's uid and name.
fn job(obj: &mut Value, creating: bool) {
    let job_labels_empty = obj
        .pointer("/metadata/labels")
        .and_then(Value::as_object)
        .is_none_or(Map::is_empty);
    let uid = obj
        .pointer("/metadata/uid")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    let name = obj
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    let Some(spec) = spec_of(obj) else { return };
    job_spec(spec);
    let manual = spec.get("manualSelector").and_then(Value::as_bool) == Some(true);
    if creating && !manual && !uid.is_empty() {
        spec.insert(
            "selector".into(),
            json!({"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}),
        );
        let t = spec.entry("template").or_insert_with(|| json!({}));
        if let Some(t) = t.as_object_mut() {
            let meta = t.entry("metadata").or_insert_with(|| json!({}));
            if let Some(meta) = meta.as_object_mut() {
                let labels = meta.entry("labels").or_insert_with(|| json!({}));
                if let Some(labels) = labels.as_object_mut() {
                    labels.insert("batch.kubernetes.io/controller-uid".into(), json!(uid));
                    labels.insert("batch.kubernetes.io/job-name".into(), json!(name));
                    labels.insert("controller-uid".into(), json!(uid));
                    labels.insert("job-name".into(), json!(name));
                }
            }
        }
    }
    // kube's Job takes its template's labels when it has none (after the selector labels were
    // added: kube's defaulting shares the map).
    if job_labels_empty {
        let labels = obj.pointer("/spec/template/metadata/labels").cloned();
        if let (Some(labels), Some(m)) = (
            labels.filter(|l| l.as_object().is_some_and(|m| !m.is_empty())),
            obj.get_mut("metadata").and_then(Value::as_object_mut),
        ) {
            m.insert("labels".into(), labels);
        }
    }
}

fn job_spec(spec: &mut Map<String, Value>) {
    if spec.get("completions").is_none() && spec.get("parallelism").is_none() {
        spec.insert("completions".into(), json!(1));
    }
    spec.entry("parallelism").or_insert(json!(1));
    let per_index = spec.get("backoffLimitPerIndex").is_some();
    spec.entry("backoffLimit")
        .or_insert(json!(if per_index { i32::MAX } else { 6 }));
    spec.entry("completionMode").or_insert(json!("NonIndexed"));
    spec.entry("suspend").or_insert(json!(false));
    let failure_policy = spec.get("podFailurePolicy").is_some();
    spec.entry("podReplacementPolicy")
        .or_insert(json!(if failure_policy {
            "Failed"
        } else {
            "TerminatingOrFailed"
        }));
    spec_template(spec);
}

fn cron_job(obj: &mut Value) {
    let Some(spec) = spec_of(obj) else { return };
    spec.entry("concurrencyPolicy").or_insert(json!("Allow"));
    spec.entry("suspend").or_insert(json!(false));
    spec.entry("successfulJobsHistoryLimit").or_insert(json!(3));
    spec.entry("failedJobsHistoryLimit").or_insert(json!(1));
    if let Some(t) = spec
        .get_mut("jobTemplate")
        .and_then(|t| t.get_mut("spec"))
        .and_then(Value::as_object_mut)
    {
        spec_template(t);
    }
}

/// autoscaling/v2 `SetDefaults_HorizontalPodAutoscaler` and its behavior defaults.
fn hpa(obj: &mut Value) {
    let Some(spec) = spec_of(obj) else { return };
    spec.entry("minReplicas").or_insert(json!(1));
    let no_metrics = spec
        .get("metrics")
        .and_then(Value::as_array)
        .is_none_or(Vec::is_empty);
    if no_metrics {
        spec.insert(
            "metrics".into(),
            json!([{"type": "Resource", "resource": {"name": "cpu",
                "target": {"type": "Utilization", "averageUtilization": 80}}}]),
        );
    }
    if let Some(b) = spec.get_mut("behavior").and_then(Value::as_object_mut) {
        // kube leaves scaleDown's window unset: the controller's
        // `--horizontal-pod-autoscaler-downscale-stabilization` stands in for it.
        let rules =
            |b: &mut Map<String, Value>, key: &str, window: Option<i64>, policies: Value| {
                let r = b.entry(key).or_insert_with(|| json!({}));
                if let Some(r) = r.as_object_mut() {
                    if let Some(window) = window {
                        r.entry("stabilizationWindowSeconds")
                            .or_insert(json!(window));
                    }
                    r.entry("selectPolicy").or_insert(json!("Max"));
                    r.entry("policies").or_insert(policies);
                }
            };
        rules(
            b,
            "scaleUp",
            Some(0),
            json!([{"type": "Pods", "value": 4, "periodSeconds": 15},
                   {"type": "Percent", "value": 100, "periodSeconds": 15}]),
        );
        rules(
            b,
            "scaleDown",
            None,
            json!([{"type": "Percent", "value": 100, "periodSeconds": 15}]),
        );
    }
}

/// `SetDefaults_NetworkPolicy`: policy types from the rules present; ports TCP.
fn network_policy(obj: &mut Value) {
    let Some(spec) = spec_of(obj) else { return };
    for dir in ["ingress", "egress"] {
        for rule in spec
            .get_mut(dir)
            .and_then(Value::as_array_mut)
            .into_iter()
            .flatten()
        {
            for port in array_mut(rule, "ports") {
                protocol_tcp(port);
            }
        }
    }
    let no_types = spec
        .get("policyTypes")
        .and_then(Value::as_array)
        .is_none_or(Vec::is_empty);
    if no_types {
        let egress = spec
            .get("egress")
            .and_then(Value::as_array)
            .is_some_and(|a| !a.is_empty());
        let types = if egress {
            json!(["Ingress", "Egress"])
        } else {
            json!(["Ingress"])
        };
        spec.insert("policyTypes".into(), types);
    }
}

/// admissionregistration/v1 webhook defaults.
fn webhook(w: &mut Value, mutating: bool) {
    let Some(w) = w.as_object_mut() else { return };
    w.entry("failurePolicy").or_insert(json!("Fail"));
    w.entry("matchPolicy").or_insert(json!("Equivalent"));
    w.entry("namespaceSelector").or_insert(json!({}));
    w.entry("objectSelector").or_insert(json!({}));
    w.entry("timeoutSeconds").or_insert(json!(10));
    if mutating {
        w.entry("reinvocationPolicy").or_insert(json!("Never"));
    }
    for rule in w
        .get_mut("rules")
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
    {
        if let Some(r) = rule.as_object_mut() {
            r.entry("scope").or_insert(json!("*"));
        }
    }
    if let Some(cfg) = w.get_mut("clientConfig").and_then(Value::as_object_mut) {
        if let Some(svc) = cfg.get_mut("service").and_then(Value::as_object_mut) {
            svc.entry("port").or_insert(json!(443));
        }
    }
}

/// `SetDefaults_MatchResources`, and `SetDefaults_Rule` on each of its (excluded) resource rules:
/// `scope: "*"`, as on a webhook's rules.
fn match_resources(m: &mut Map<String, Value>) {
    m.entry("matchPolicy").or_insert(json!("Equivalent"));
    m.entry("namespaceSelector").or_insert(json!({}));
    m.entry("objectSelector").or_insert(json!({}));
    for list in ["resourceRules", "excludeResourceRules"] {
        for rule in m
            .get_mut(list)
            .and_then(Value::as_array_mut)
            .into_iter()
            .flatten()
            .filter_map(Value::as_object_mut)
        {
            if rule.get("scope").is_none_or(Value::is_null) {
                rule.insert("scope".into(), json!("*"));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn admission_policies_resource_rules_get_every_scope() {
        const AR: &str = "admissionregistration.k8s.io";
        let rules = json!({"resourceRules": [{"apiGroups": ["apps"], "apiVersions": ["v1"],
            "operations": ["CREATE"], "resources": ["deployments"]},
            {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
             "resources": ["pods"], "scope": "Namespaced"}],
            "excludeResourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
             "resources": ["pods"]}]});
        let mut policy = json!({"spec": {"matchConstraints": rules.clone()}});
        apply(AR, "validatingadmissionpolicies", &mut policy, true);
        let mc = &policy["spec"]["matchConstraints"];
        assert_eq!(mc["resourceRules"][0]["scope"], "*");
        assert_eq!(mc["resourceRules"][1]["scope"], "Namespaced");
        assert_eq!(mc["excludeResourceRules"][0]["scope"], "*");
        let mut binding = json!({"spec": {"policyName": "p", "matchResources": rules}});
        apply(AR, "validatingadmissionpolicybindings", &mut binding, true);
        assert_eq!(
            binding["spec"]["matchResources"]["resourceRules"][0]["scope"],
            "*"
        );
    }

    /// flowcontrol/v1's defaults, as kube's `defaults_test.go` has them: a zero precedence or
    /// queuing parameter is defaulted, a limited level's explicit zero shares are not.
    #[test]
    fn flow_control_objects_get_v1_defaults() {
        const FC: &str = "flowcontrol.apiserver.k8s.io";
        let mut fs = json!({"spec": {"priorityLevelConfiguration": {"name": "p"}}});
        apply(FC, "flowschemas", &mut fs, true);
        assert_eq!(fs["spec"]["matchingPrecedence"], 1000);
        let mut fs = json!({"spec": {"matchingPrecedence": 0}});
        apply(FC, "flowschemas", &mut fs, false);
        assert_eq!(
            fs["spec"]["matchingPrecedence"], 1000,
            "an int32's 0 is unset"
        );
        let mut fs = json!({"spec": {"matchingPrecedence": 200}});
        apply(FC, "flowschemas", &mut fs, false);
        assert_eq!(fs["spec"]["matchingPrecedence"], 200);
        let mut fs = json!({"metadata": {"name": "no-spec"}});
        apply(FC, "flowschemas", &mut fs, true);
        assert_eq!(fs["spec"], json!({"matchingPrecedence": 1000}));

        let level = |spec: Value| {
            let mut o = json!({"spec": spec});
            apply(FC, "prioritylevelconfigurations", &mut o, true);
            o["spec"].clone()
        };
        assert_eq!(
            level(
                json!({"type": "Limited", "limited": {"limitResponse": {"type": "Queue",
                "queuing": {"queues": 0, "handSize": null}}}})
            ),
            json!({"type": "Limited", "limited": {"nominalConcurrencyShares": 30,
                "lendablePercent": 0, "limitResponse": {"type": "Queue",
                "queuing": {"queues": 64, "handSize": 8, "queueLengthLimit": 50}}}})
        );
        // v1's shares are a pointer: an explicit 0 stays 0; `null` is nil.
        assert_eq!(
            level(
                json!({"type": "Limited", "limited": {"nominalConcurrencyShares": 0,
                "lendablePercent": 10, "borrowingLimitPercent": 5,
                "limitResponse": {"type": "Reject"}}})
            ),
            json!({"type": "Limited", "limited": {"nominalConcurrencyShares": 0,
                "lendablePercent": 10, "borrowingLimitPercent": 5,
                "limitResponse": {"type": "Reject"}}})
        );
        assert_eq!(
            level(
                json!({"type": "Limited", "limited": {"nominalConcurrencyShares": null,
                "limitResponse": {"type": "Queue", "queuing": {"queues": 7, "handSize": 3,
                    "queueLengthLimit": 9}}}})
            )["limited"],
            json!({"nominalConcurrencyShares": 30, "lendablePercent": 0,
                "limitResponse": {"type": "Queue", "queuing": {"queues": 7, "handSize": 3,
                    "queueLengthLimit": 9}}})
        );
        assert_eq!(
            level(json!({"type": "Exempt", "exempt": {}})),
            json!({"type": "Exempt", "exempt": {"nominalConcurrencyShares": 0,
                "lendablePercent": 0}})
        );
        assert_eq!(
            level(json!({"type": "Exempt", "exempt": {"nominalConcurrencyShares": 4}}))["exempt"],
            json!({"nominalConcurrencyShares": 4, "lendablePercent": 0})
        );
        // Nothing is made up for a level without `limited` or `exempt`.
        assert_eq!(level(json!({"type": "Exempt"})), json!({"type": "Exempt"}));
    }

    #[test]
    fn a_persistent_volumes_host_path_gets_an_unset_type() {
        let mut pv = json!({"spec": {"hostPath": {"path": "/tmp/x"}}});
        apply("", "persistentvolumes", &mut pv, true);
        assert_eq!(
            pv["spec"]["hostPath"],
            json!({"path": "/tmp/x", "type": ""})
        );
        assert_eq!(pv["spec"]["persistentVolumeReclaimPolicy"], "Retain");
        let mut set = json!({"spec": {"hostPath": {"path": "/d", "type": "Directory"}}});
        apply("", "persistentvolumes", &mut set, true);
        assert_eq!(set["spec"]["hostPath"]["type"], "Directory");
    }

    #[test]
    fn services_get_kubes_defaults() {
        let mut s = json!({"spec": {"ports": [{"port": 80}, {"port": 81, "targetPort": "http"}]}});
        apply("", "services", &mut s, true);
        assert_eq!(
            s["spec"],
            json!({"ports": [{"port": 80, "protocol": "TCP", "targetPort": 80},
                             {"port": 81, "targetPort": "http", "protocol": "TCP"}],
                   "sessionAffinity": "None", "type": "ClusterIP",
                   "internalTrafficPolicy": "Cluster"})
        );
    }

    #[test]
    fn jobs_get_defaults_and_a_generated_selector_on_create() {
        let mut j = json!({"metadata": {"name": "pi", "uid": "u-1"},
            "spec": {"template": {"spec": {"restartPolicy": "Never",
                "containers": [{"name": "c", "image": "perl:5"}]}}}});
        apply("batch", "jobs", &mut j, true);
        assert_eq!(j["spec"]["completions"], 1);
        assert_eq!(j["spec"]["parallelism"], 1);
        assert_eq!(j["spec"]["backoffLimit"], 6);
        assert_eq!(j["spec"]["completionMode"], "NonIndexed");
        assert_eq!(
            j["spec"]["selector"],
            json!({"matchLabels": {"batch.kubernetes.io/controller-uid": "u-1"}})
        );
        assert_eq!(
            j["spec"]["template"]["metadata"]["labels"]["job-name"],
            "pi"
        );
        assert_eq!(
            j["metadata"]["labels"]["batch.kubernetes.io/job-name"],
            "pi"
        );
        assert_eq!(
            j["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"],
            "IfNotPresent"
        );
        // An update does not regenerate anything.
        let before = j.clone();
        apply("batch", "jobs", &mut j, false);
        assert_eq!(j, before);
    }

    #[test]
    fn workload_and_policy_kinds_get_defaults() {
        let mut s = json!({"spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {"spec": {"containers": []}}}});
        apply("apps", "statefulsets", &mut s, true);
        assert_eq!(s["spec"]["podManagementPolicy"], "OrderedReady");
        assert_eq!(s["spec"]["updateStrategy"]["rollingUpdate"]["partition"], 0);
        // An explicit RollingUpdate without rollingUpdate keeps none, as kube; a given one gets
        // its partition; OnDelete gets nothing.
        for (strategy, want) in [
            (
                json!({"type": "RollingUpdate"}),
                json!({"type": "RollingUpdate"}),
            ),
            (
                json!({"type": "RollingUpdate", "rollingUpdate": {}}),
                json!({"type": "RollingUpdate", "rollingUpdate": {"partition": 0}}),
            ),
            (json!({"type": "OnDelete"}), json!({"type": "OnDelete"})),
        ] {
            let mut s = json!({"spec": {"updateStrategy": strategy}});
            apply("apps", "statefulsets", &mut s, true);
            assert_eq!(s["spec"]["updateStrategy"], want);
        }
        let mut d = json!({"spec": {}});
        apply("apps", "daemonsets", &mut d, true);
        assert_eq!(
            d["spec"]["updateStrategy"]["rollingUpdate"]["maxUnavailable"],
            1
        );
        let mut h = json!({"spec": {"maxReplicas": 3}});
        apply("autoscaling", "horizontalpodautoscalers", &mut h, true);
        assert_eq!(h["spec"]["minReplicas"], 1);
        assert_eq!(
            h["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"],
            80
        );
        let mut h = json!({"spec": {"maxReplicas": 3, "behavior": {}}});
        apply("autoscaling", "horizontalpodautoscalers", &mut h, true);
        assert_eq!(
            h["spec"]["behavior"]["scaleUp"]["stabilizationWindowSeconds"],
            0
        );
        // kube leaves the scale-down window to the controller's flag.
        assert!(h["spec"]["behavior"]["scaleDown"]
            .get("stabilizationWindowSeconds")
            .is_none());
        assert_eq!(h["spec"]["behavior"]["scaleDown"]["selectPolicy"], "Max");
        let mut n = json!({"spec": {"podSelector": {}, "egress": [{"ports": [{"port": 53}]}]}});
        apply("networking.k8s.io", "networkpolicies", &mut n, true);
        assert_eq!(n["spec"]["policyTypes"], json!(["Ingress", "Egress"]));
        assert_eq!(n["spec"]["egress"][0]["ports"][0]["protocol"], "TCP");
        let mut rc =
            json!({"metadata": {}, "spec": {"template": {"metadata": {"labels": {"app": "x"}}}}});
        apply("", "replicationcontrollers", &mut rc, true);
        assert_eq!(rc["spec"]["selector"], json!({"app": "x"}));
        assert_eq!(rc["metadata"]["labels"], json!({"app": "x"}));
    }
}
