//! Defaults and validation of the workload kinds the API server stores: `v1 Pod`,
//! `apps/v1 Deployment` and `apps/v1 ReplicaSet`, as kube's `SetDefaults_*` and
//! `Validate*` functions do them for the fields that matter to clients (kubectl, controllers).
//! Nothing here makes a workload *run*: that is the controllers' job.

use serde_json::{json, Map, Value};

use super::Cause;
use crate::builtin::validation::pod;
use crate::selector::{label_selector_string, LabelSelector};

/// Apply kube's defaults to an object of a workload kind (`group`, `resource`); other kinds are
/// left alone.
pub fn apply_defaults(group: &str, resource: &str, obj: &mut Value) {
    match (group, resource) {
        ("", "pods") => {
            if let Some(spec) = obj.get_mut("spec") {
                default_pod_spec(spec);
                default_pod_only(spec);
                requests_from_limits(spec);
            }
        }
        ("apps", "deployments") => {
            let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else {
                return;
            };
            spec.entry("replicas").or_insert(json!(1));
            let strategy = spec.entry("strategy").or_insert_with(|| json!({}));
            if let Some(st) = strategy.as_object_mut() {
                let kind = st
                    .entry("type")
                    .or_insert_with(|| json!("RollingUpdate"))
                    .clone();
                if kind == "RollingUpdate" {
                    let ru = st.entry("rollingUpdate").or_insert_with(|| json!({}));
                    if let Some(ru) = ru.as_object_mut() {
                        ru.entry("maxUnavailable").or_insert(json!("25%"));
                        ru.entry("maxSurge").or_insert(json!("25%"));
                    }
                }
            }
            spec.entry("revisionHistoryLimit").or_insert(json!(10));
            spec.entry("progressDeadlineSeconds").or_insert(json!(600));
            default_template(spec);
        }
        ("apps", "replicasets") => {
            let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else {
                return;
            };
            spec.entry("replicas").or_insert(json!(1));
            default_template(spec);
        }
        _ => {}
    }
}

fn default_template(spec: &mut Map<String, Value>) {
    if let Some(pod_spec) = spec
        .get_mut("template")
        .and_then(|t| t.get_mut("spec"))
        .filter(|s| s.is_object())
    {
        default_pod_spec(pod_spec);
    }
}

/// kube's `SetDefaults_PodSpec` and `SetDefaults_Container` for the scalar fields.
/// kube's `GetPodQOS`: `BestEffort` without cpu or memory requests and limits, `Guaranteed`
/// when every container limits both and each request equals its limit, else `Burstable`.
pub fn qos_class(spec: Option<&Value>) -> &'static str {
    use std::collections::BTreeMap;
    let amount = |v: &Value| {
        v.as_str()
            .and_then(|s| crate::builtin::quantity::nano_value(s).ok())
            .map_or(0, |(n, _)| n)
    };
    let (mut requests, mut limits) = (BTreeMap::new(), BTreeMap::new());
    let mut guaranteed = true;
    for field in ["containers", "initContainers"] {
        for c in spec
            .and_then(|s| s.get(field))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let res = |which: &str| {
                c.pointer(&format!("/resources/{which}"))
                    .and_then(Value::as_object)
                    .cloned()
                    .unwrap_or_default()
            };
            // As after `SetDefaults_Pod`: a limit stands for a missing request.
            let mut reqs = res("requests");
            for (k, v) in res("limits") {
                reqs.entry(k).or_insert(v);
            }
            for (k, v) in reqs {
                let n = amount(&v);
                if matches!(k.as_str(), "cpu" | "memory") && n > 0 {
                    *requests.entry(k).or_insert(0i128) += n;
                }
            }
            let mut found = 0;
            for (k, v) in res("limits") {
                let n = amount(&v);
                if matches!(k.as_str(), "cpu" | "memory") && n > 0 {
                    found += 1;
                    *limits.entry(k).or_insert(0i128) += n;
                }
            }
            if found < 2 {
                guaranteed = false;
            }
        }
    }
    if requests.is_empty() && limits.is_empty() {
        return "BestEffort";
    }
    if guaranteed
        && requests.iter().all(|(k, v)| limits.get(k) == Some(v))
        && requests.len() == limits.len()
    {
        return "Guaranteed";
    }
    "Burstable"
}

/// The first step of kube's ServiceAccount admission on a Pod's create (the rest is
/// `pod_admission`): a Pod without `serviceAccountName` runs as `default` (its deprecated
/// `serviceAccount` taken first, as the v1 conversion does), and the deprecated field mirrors
/// the name, as kube's v1 output does. A mirror Pod is left alone.
pub(crate) fn default_service_account(pod: &mut Value) {
    if pod
        .pointer("/metadata/annotations/kubernetes.io~1config.mirror")
        .is_some()
    {
        return;
    }
    let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    let named = |k: &str| {
        spec.get(k)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
    };
    let name = named("serviceAccountName")
        .or_else(|| named("serviceAccount"))
        .unwrap_or_else(|| "default".to_owned());
    spec.insert("serviceAccountName".into(), json!(name));
    spec.insert("serviceAccount".into(), json!(name));
}

/// kube's `SetDefaults_Pod` (a Pod's, not a template's): a container with a limit but no
/// request for a resource requests its limit.
pub(crate) fn requests_from_limits(spec: &mut Value) {
    for field in ["containers", "initContainers"] {
        for c in spec
            .get_mut(field)
            .and_then(Value::as_array_mut)
            .into_iter()
            .flatten()
        {
            let Some(res) = c.get_mut("resources").and_then(Value::as_object_mut) else {
                continue;
            };
            let Some(limits) = res.get("limits").and_then(Value::as_object).cloned() else {
                continue;
            };
            if limits.is_empty() {
                continue;
            }
            let requests = res.entry("requests").or_insert_with(|| json!({}));
            if !requests.is_object() {
                *requests = json!({});
            }
            if let Some(r) = requests.as_object_mut() {
                for (k, v) in limits {
                    r.entry(k).or_insert(v);
                }
            }
        }
    }
}

pub(crate) fn default_pod_spec(spec: &mut Value) {
    let Some(spec) = spec.as_object_mut() else {
        return;
    };
    spec.entry("restartPolicy").or_insert(json!("Always"));
    spec.entry("terminationGracePeriodSeconds")
        .or_insert(json!(30));
    spec.entry("dnsPolicy").or_insert(json!("ClusterFirst"));
    spec.entry("securityContext").or_insert(json!({}));
    spec.entry("schedulerName")
        .or_insert(json!("default-scheduler"));
    for v in spec
        .get_mut("volumes")
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
    {
        default_volume(v);
    }
    for field in ["containers", "initContainers", "ephemeralContainers"] {
        for c in spec
            .get_mut(field)
            .and_then(Value::as_array_mut)
            .into_iter()
            .flatten()
        {
            let Some(c) = c.as_object_mut() else { continue };
            let latest = c
                .get("image")
                .and_then(Value::as_str)
                .is_some_and(|i| image_tag(i).is_none_or(|t| t == "latest"));
            c.entry("imagePullPolicy").or_insert(json!(if latest {
                "Always"
            } else {
                "IfNotPresent"
            }));
            c.entry("terminationMessagePath")
                .or_insert(json!("/dev/termination-log"));
            c.entry("terminationMessagePolicy").or_insert(json!("File"));
            if c.get("resources").is_none() {
                c.insert("resources".into(), json!({}));
            }
            for port in c
                .get_mut("ports")
                .and_then(Value::as_array_mut)
                .into_iter()
                .flatten()
            {
                if let Some(p) = port.as_object_mut() {
                    p.entry("protocol").or_insert(json!("TCP"));
                }
            }
            for probe in ["livenessProbe", "readinessProbe", "startupProbe"] {
                if let Some(p) = c.get_mut(probe).and_then(Value::as_object_mut) {
                    default_probe(p);
                }
            }
            for hook in ["postStart", "preStop"] {
                if let Some(h) = c
                    .get_mut("lifecycle")
                    .and_then(|l| l.get_mut(hook))
                    .and_then(|h| h.get_mut("httpGet"))
                {
                    default_http_get(h);
                }
            }
            for env in c
                .get_mut("env")
                .and_then(Value::as_array_mut)
                .into_iter()
                .flatten()
            {
                if let Some(f) = env.pointer_mut("/valueFrom/fieldRef") {
                    default_field_ref(f);
                }
            }
        }
    }
}

/// kube's `SetDefaults_Pod` beyond the spec's defaults (a Pod's, never a template's, so that
/// templates and their hashes stay as written): `enableServiceLinks`, and a host-network Pod's
/// container ports are the host's.
fn default_pod_only(spec: &mut Value) {
    let Some(spec) = spec.as_object_mut() else {
        return;
    };
    spec.entry("enableServiceLinks").or_insert(json!(true));
    if spec.get("hostNetwork").and_then(Value::as_bool) != Some(true) {
        return;
    }
    for field in ["containers", "initContainers"] {
        let ports = spec
            .get_mut(field)
            .and_then(Value::as_array_mut)
            .into_iter()
            .flatten()
            .filter_map(|c| c.get_mut("ports").and_then(Value::as_array_mut))
            .flatten();
        for p in ports.filter_map(Value::as_object_mut) {
            let unset = p.get("hostPort").and_then(Value::as_i64).unwrap_or(0) == 0;
            if unset {
                if let Some(cp) = p.get("containerPort").cloned() {
                    p.insert("hostPort".into(), cp);
                }
            }
        }
    }
}

/// kube's `SetDefaults_Probe` (and its handler's `SetDefaults_HTTPGetAction`).
fn default_probe(p: &mut Map<String, Value>) {
    for (k, v) in [
        ("timeoutSeconds", 1),
        ("periodSeconds", 10),
        ("successThreshold", 1),
        ("failureThreshold", 3),
    ] {
        let unset = p.get(k).and_then(Value::as_i64).unwrap_or(0) == 0;
        if unset {
            p.insert(k.into(), json!(v));
        }
    }
    if let Some(h) = p.get_mut("httpGet") {
        default_http_get(h);
    }
    // `GRPCAction.service`'s `+default=""` (kube's generated defaulter); `kubectl describe`
    // reads it without a nil check.
    if let Some(g) = p.get_mut("grpc").and_then(Value::as_object_mut) {
        if g.get("service").is_none_or(Value::is_null) {
            g.insert("service".into(), json!(""));
        }
    }
}

/// kube's `SetDefaults_HTTPGetAction`: path `/`, scheme `HTTP`.
fn default_http_get(h: &mut Value) {
    let Some(h) = h.as_object_mut() else { return };
    for (k, v) in [("path", "/"), ("scheme", "HTTP")] {
        if h.get(k).and_then(Value::as_str).is_none_or(str::is_empty) {
            h.insert(k.into(), json!(v));
        }
    }
}

/// kube's `SetDefaults_ObjectFieldSelector`: `apiVersion: v1`.
fn default_field_ref(f: &mut Value) {
    if let Some(f) = f.as_object_mut() {
        if f.get("apiVersion")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
        {
            f.insert("apiVersion".into(), json!("v1"));
        }
    }
}

/// The volume sources kube knows (`VolumeSource`'s fields).
const VOLUME_SOURCES: &[&str] = &[
    "hostPath",
    "emptyDir",
    "gcePersistentDisk",
    "awsElasticBlockStore",
    "gitRepo",
    "secret",
    "nfs",
    "iscsi",
    "glusterfs",
    "persistentVolumeClaim",
    "rbd",
    "flexVolume",
    "cinder",
    "cephfs",
    "flocker",
    "downwardAPI",
    "fc",
    "azureFile",
    "configMap",
    "vsphereVolume",
    "quobyte",
    "azureDisk",
    "photonPersistentDisk",
    "projected",
    "portworxVolume",
    "scaleIO",
    "storageos",
    "csi",
    "ephemeral",
    "image",
];

/// kube's volume defaults (`SetDefaults_Volume` and the sources' own): a volume naming no
/// source is an `emptyDir`; secret, configMap, downwardAPI and projected files are mode 0644;
/// a projected token lasts an hour; a hostPath's type is unset (`""`).
fn default_volume(v: &mut Value) {
    let Some(v) = v.as_object_mut() else { return };
    if !VOLUME_SOURCES
        .iter()
        .any(|s| v.get(*s).is_some_and(|x| !x.is_null()))
    {
        v.insert("emptyDir".into(), json!({}));
    }
    for source in ["secret", "configMap", "downwardAPI", "projected"] {
        if let Some(s) = v.get_mut(source).and_then(Value::as_object_mut) {
            if s.get("defaultMode").is_none_or(Value::is_null) {
                s.insert("defaultMode".into(), json!(420));
            }
        }
    }
    if let Some(h) = v.get_mut("hostPath").and_then(Value::as_object_mut) {
        h.entry("type").or_insert(json!(""));
    }
    if let Some(d) = v.get_mut("downwardAPI") {
        for item in d
            .get_mut("items")
            .and_then(Value::as_array_mut)
            .into_iter()
            .flatten()
        {
            if let Some(f) = item.get_mut("fieldRef") {
                default_field_ref(f);
            }
        }
    }
    let sources = v
        .get_mut("projected")
        .and_then(|p| p.get_mut("sources"))
        .and_then(Value::as_array_mut);
    for src in sources.into_iter().flatten() {
        if let Some(t) = src
            .get_mut("serviceAccountToken")
            .and_then(Value::as_object_mut)
        {
            t.entry("expirationSeconds").or_insert(json!(3600));
        }
        if let Some(items) = src
            .get_mut("downwardAPI")
            .and_then(|d| d.get_mut("items"))
            .and_then(Value::as_array_mut)
        {
            for item in items {
                if let Some(f) = item.get_mut("fieldRef") {
                    default_field_ref(f);
                }
            }
        }
    }
}

/// The tag of an image reference (`nginx:1.27` -> `1.27`); none when it has no tag or is pinned
/// by digest only.
fn image_tag(image: &str) -> Option<&str> {
    if image.contains('@') {
        return Some("digest");
    }
    let last = image.rsplit('/').next().unwrap_or(image);
    last.split_once(':').map(|(_, t)| t)
}

/// Validate a workload object (`old` is the stored version on update). Empty when valid.
pub fn validate(group: &str, resource: &str, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    match (group, resource) {
        ("", "pods") => {
            let mut causes = match old {
                None => pod::pod_create(obj),
                Some(old) => pod::pod(obj, Some(old)),
            };
            if let Some(old) = old {
                causes.extend(validate_pod_update(obj, old));
            }
            causes
        }
        ("apps", "deployments") => crate::builtin::validation::apps::deployment(obj, old),
        ("apps", "replicasets") => crate::builtin::validation::apps::replica_set(obj, old),
        ("apps", "statefulsets") => validate_stateful_set(obj, old),
        ("apps", "daemonsets") => crate::builtin::validation::apps::daemon_set(obj, old),
        ("batch", "jobs") => crate::builtin::validation::batch::job(obj, old),
        ("batch", "cronjobs") => crate::builtin::validation::batch::cron_job(obj, old),
        _ => crate::builtin::validation::validate(group, resource, obj, old),
    }
}

/// kube's `ValidateStatefulSetSpec` (and `ValidateStatefulSetUpdate`). Unlike a Deployment's,
/// the Pod template's spec is not validated beyond its restart policy and deadline: its volume
/// mounts may name `volumeClaimTemplates`, which become volumes only in the Pods (kube leaves
/// this as a TODO; the Pods are validated when the controller creates them).
fn validate_stateful_set(obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    use crate::builtin::validation::field;
    let mut out = Vec::new();
    let null = Value::Null;
    let spec = obj.get("spec").unwrap_or(&null);
    let str_of = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
    match str_of(spec, "podManagementPolicy").as_deref() {
        None | Some("") => out.push(field::required("spec.podManagementPolicy", "")),
        Some("OrderedReady" | "Parallel") => {}
        Some(p) => out.push(field::invalid_str(
            "spec.podManagementPolicy",
            p,
            "must be 'OrderedReady' or 'Parallel'",
        )),
    }
    let strategy = spec.get("updateStrategy").unwrap_or(&null);
    let rolling = strategy.get("rollingUpdate").filter(|r| !r.is_null());
    match str_of(strategy, "type").as_deref() {
        None | Some("") => out.push(field::required("spec.updateStrategy", "")),
        Some("OnDelete") => {
            if let Some(r) = rolling {
                // kube reports the internal `*apps.RollingUpdateStatefulSetStrategy`.
                out.push(field::invalid(
                    "spec.updateStrategy.rollingUpdate",
                    &field::go_struct(Some(r), ROLLING_UPDATE_STATEFUL_SET),
                    "only allowed for updateStrategy 'RollingUpdate'",
                ));
            }
        }
        Some("RollingUpdate") => {
            if let Some(r) = rolling {
                nonnegative(
                    r,
                    "partition",
                    "spec.updateStrategy.rollingUpdate.partition",
                    &mut out,
                );
                if let Some(mu) = r.get("maxUnavailable").filter(|m| !m.is_null()) {
                    max_unavailable(mu, &mut out);
                }
            }
        }
        // kube reports the internal `apps.StatefulSetUpdateStrategy`.
        Some(_) => out.push(field::invalid(
            "spec.updateStrategy",
            &field::go_struct(
                Some(strategy),
                &[
                    ("Type", "type", field::Go::Str),
                    (
                        "RollingUpdate",
                        "rollingUpdate",
                        field::Go::Ptr(ROLLING_UPDATE_STATEFUL_SET),
                    ),
                ],
            ),
            "must be 'RollingUpdate' or 'OnDelete'",
        )),
    }
    if let Some(policy) = spec
        .get("persistentVolumeClaimRetentionPolicy")
        .filter(|p| !p.is_null())
    {
        for k in ["whenDeleted", "whenScaled"] {
            let v = policy.get(k).unwrap_or(&null);
            if !matches!(v.as_str(), Some("Retain" | "Delete")) {
                let shown = if v.is_null() { json!("") } else { v.clone() };
                out.push(field::not_supported(
                    &format!("spec.persistentVolumeClaimRetentionPolicy.{k}"),
                    &shown,
                    &["Retain", "Delete"],
                ));
            }
        }
    }
    nonnegative(spec, "replicas", "spec.replicas", &mut out);
    nonnegative(spec, "minReadySeconds", "spec.minReadySeconds", &mut out);
    if let Some(ordinals) = spec.get("ordinals").filter(|o| !o.is_null()) {
        nonnegative(ordinals, "start", "spec.ordinals.start", &mut out);
    }
    let selector = match spec.get("selector").filter(|s| !s.is_null()) {
        None => {
            out.push(field::required("spec.selector", ""));
            None
        }
        Some(sel) => {
            let before = out.len();
            crate::builtin::disruption::validate_label_selector(
                sel,
                "spec.selector",
                false,
                &mut out,
            );
            let text = label_selector_string(sel);
            if text.is_empty() {
                // kube reports the `*metav1.LabelSelector` (JSON tags, empty parts left out).
                out.push(field::invalid_shown(
                    "spec.selector",
                    &crate::builtin::validation::apps::selector_json(Some(sel)),
                    "empty selector is invalid for statefulset",
                ));
            }
            if out.len() == before {
                LabelSelector::parse(&text).ok()
            } else {
                None
            }
        }
    };
    let template = spec.get("template").unwrap_or(&null);
    let labels = template.pointer("/metadata/labels");
    if let Some(sel) = &selector {
        if !sel.matches_json(labels.and_then(Value::as_object)) {
            out.push(template_labels_mismatch(labels.and_then(Value::as_object)));
        }
    }
    field::labels(labels, "spec.template.labels", &mut out);
    template_annotations(
        template.pointer("/metadata/annotations"),
        "spec.template.annotations",
        &mut out,
    );
    let restart = template
        .pointer("/spec/restartPolicy")
        .and_then(Value::as_str)
        .unwrap_or("");
    if restart != "Always" {
        out.push(field::not_supported(
            "spec.template.spec.restartPolicy",
            &json!(restart),
            &["Always"],
        ));
    }
    if template
        .pointer("/spec/activeDeadlineSeconds")
        .is_some_and(|d| !d.is_null())
    {
        out.push(field::forbidden(
            "spec.template.spec.activeDeadlineSeconds",
            "activeDeadlineSeconds in StatefulSet is not Supported",
        ));
    }
    if let Some(old_spec) = old.and_then(|o| o.get("spec")) {
        const MUTABLE: [&str; 6] = [
            "replicas",
            "ordinals",
            "template",
            "updateStrategy",
            "persistentVolumeClaimRetentionPolicy",
            "minReadySeconds",
        ];
        let rest = |s: &Value| -> Map<String, Value> {
            s.as_object()
                .into_iter()
                .flatten()
                .filter(|(k, v)| !MUTABLE.contains(&k.as_str()) && !v.is_null())
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        };
        if semantic(&Value::Object(rest(spec))) != semantic(&Value::Object(rest(old_spec))) {
            out.push(field::forbidden(
                "spec",
                "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden",
            ));
        }
    }
    out
}

/// `spec.template.metadata.labels: Invalid value: {"app":"web"}: `selector` does not match
/// template `labels``: kube reports the `map[string]string`, which it prints as its JSON (keys
/// sorted; `null` when the template has no labels).
fn template_labels_mismatch(labels: Option<&Map<String, Value>>) -> Cause {
    use crate::builtin::validation::field;
    let labels = labels.map(|l| Value::Object(l.clone()));
    field::invalid_json(
        "spec.template.metadata.labels",
        labels.as_ref(),
        "`selector` does not match template `labels`",
    )
}

/// kube's `ValidateAnnotations` of a template's annotations: qualified-name keys, at most
/// 256 KiB in all.
pub(crate) fn template_annotations(map: Option<&Value>, path: &str, out: &mut Vec<Cause>) {
    use crate::builtin::validation::field;
    let Some(map) = map.and_then(Value::as_object) else {
        return;
    };
    let mut total = 0usize;
    for (k, v) in map {
        total += k.len() + v.as_str().map_or(0, str::len);
        for msg in field::qualified_name(&k.to_lowercase()) {
            out.push(field::invalid_str(path, k, &msg));
        }
    }
    if total > 256 * 1024 {
        out.push(Cause::new(
            "FieldValueTooLong",
            path,
            "Too long: must have at most 262144 bytes",
        ));
    }
}

/// A spec as kube's `Semantic.DeepEqual` compares typed structs: a field that is null, empty or
/// zero is the same as one that is absent (empty objects too: the fields compared here are maps
/// or optional structs that kube defaults).
pub(crate) fn semantic(v: &Value) -> Value {
    crate::builtin::validation::field::zero_dropped(v, true)
}

/// kube's `ValidateNonnegativeField` of `obj[key]`, when it is there.
fn nonnegative(obj: &Value, key: &str, path: &str, out: &mut Vec<Cause>) {
    if let Some(v) = obj.get(key).filter(|v| !v.is_null()) {
        if v.as_i64().is_none_or(|n| n < 0) {
            out.push(crate::builtin::validation::field::invalid(
                path,
                v,
                "must be greater than or equal to 0",
            ));
        }
    }
}

/// kube's internal `apps.RollingUpdateStatefulSetStrategy`, for a bad value's JSON.
const ROLLING_UPDATE_STATEFUL_SET: &[crate::builtin::validation::field::GoField<'static>] = &[
    (
        "Partition",
        "partition",
        crate::builtin::validation::field::Go::Int,
    ),
    (
        "MaxUnavailable",
        "maxUnavailable",
        crate::builtin::validation::field::Go::Nil,
    ),
];

/// kube's `validateRollingUpdateStatefulSet` of `maxUnavailable`: a positive count or a
/// percentage of at most 100%, never 0 (the `intstr.IntOrString` printed as its JSON).
fn max_unavailable(v: &Value, out: &mut Vec<Cause>) {
    use crate::builtin::validation::field;
    let path = "spec.updateStrategy.rollingUpdate.maxUnavailable";
    let shown = field::json_value(v);
    let invalid = |detail: &str| field::invalid_shown(path, &shown, detail);
    let value = match v {
        Value::Number(n) => n.as_i64(),
        Value::String(s) => match s.strip_suffix('%').map(str::parse::<i64>) {
            Some(Ok(p)) => {
                if p > 100 {
                    out.push(invalid("must not be greater than 100%"));
                }
                Some(p)
            }
            _ => {
                out.push(invalid(
                    "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')",
                ));
                return;
            }
        },
        _ => None,
    };
    match value {
        Some(n) if n < 0 => out.push(invalid("must be greater than or equal to 0")),
        Some(0) => out.push(invalid("cannot be 0")),
        _ => {}
    }
}

/// kube's `ValidatePodUpdate`: a Pod's spec is immutable except for container images,
/// `activeDeadlineSeconds`, `tolerations` and `terminationGracePeriodSeconds`, and scheduling
/// gates can only be removed (`spec.nodeName` is set through the `binding` subresource).
fn validate_pod_update(new: &Value, old: &Value) -> Vec<Cause> {
    let causes = pod_status_update(new, old);
    if !causes.is_empty() {
        return causes;
    }
    let (Some(new_spec), Some(old_spec)) = (new.get("spec"), old.get("spec")) else {
        return Vec::new();
    };
    validate_pod_spec_update(new_spec, old_spec)
}

/// kube's `ValidatePodStatusUpdate` as far as turtles checks a Pod's status: the QoS class set
/// at create never changes (the main resource keeps the stored status; `/status` writes are
/// checked here, and only this: a status write does not validate the spec again).
pub fn pod_status_update(new: &Value, old: &Value) -> Vec<Cause> {
    use crate::builtin::validation::field;
    let qos = |p: &Value| {
        p.pointer("/status/qosClass")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned()
    };
    // (A Pod stored before turtles set the class at create may get one.)
    if qos(new) != qos(old) && !qos(old).is_empty() {
        return vec![Cause::new(
            "FieldValueInvalid",
            "status.qosClass",
            format!(
                "Invalid value: {}: field is immutable",
                field::json_value(&Value::String(qos(new)))
            ),
        )];
    }
    Vec::new()
}

/// The spec part of kube's `ValidatePodUpdate`.
fn validate_pod_spec_update(new_spec: &Value, old_spec: &Value) -> Vec<Cause> {
    // kube: `activeDeadlineSeconds` may be set or lowered, never removed or raised (a Pod
    // charged to a `Terminating` quota stays there).
    let deadline = |s: &Value| s.get("activeDeadlineSeconds").and_then(Value::as_i64);
    match (deadline(old_spec), deadline(new_spec)) {
        (Some(_), None) => {
            return vec![Cause::new(
                "FieldValueInvalid",
                "spec.activeDeadlineSeconds",
                "Invalid value: null: must not update from a positive integer to nil value",
            )]
        }
        (Some(was), Some(now)) if now > was => {
            return vec![Cause::new(
                "FieldValueInvalid",
                "spec.activeDeadlineSeconds",
                format!("Invalid value: {now}: must be less than or equal to previous value"),
            )]
        }
        _ => {}
    }
    let mut mutated = new_spec.clone();
    let Some(m) = mutated.as_object_mut() else {
        return Vec::new();
    };
    for field in ["containers", "initContainers"] {
        let old_images: Vec<Value> = old_spec
            .get(field)
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .map(|c| c.get("image").cloned().unwrap_or(Value::Null))
                    .collect()
            })
            .unwrap_or_default();
        if let Some(list) = m.get_mut(field).and_then(Value::as_array_mut) {
            if list.len() == old_images.len() {
                for (c, image) in list.iter_mut().zip(old_images) {
                    if let Some(c) = c.as_object_mut() {
                        c.insert("image".into(), image);
                    }
                }
            }
        }
    }
    for field in [
        "activeDeadlineSeconds",
        "tolerations",
        "terminationGracePeriodSeconds",
        "schedulingGates",
    ] {
        match old_spec.get(field) {
            Some(v) => {
                m.insert(field.into(), v.clone());
            }
            None => {
                m.remove(field);
            }
        }
    }
    if &mutated == old_spec {
        return Vec::new();
    }
    let changed: Vec<&str> = new_spec
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(k, v)| old_spec.get(k.as_str()) != Some(*v))
        .map(|(k, _)| k.as_str())
        .chain(
            old_spec
                .as_object()
                .into_iter()
                .flatten()
                .filter(|(k, _)| new_spec.get(k.as_str()).is_none())
                .map(|(k, _)| k.as_str()),
        )
        .collect();
    vec![Cause::new(
        "FieldValueForbidden",
        "spec",
        format!(
            "Forbidden: pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative) (changed: {})",
            changed.join(", ")
        ),
    )]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stateful_set(extra: Value) -> Value {
        let mut s = json!({
            "apiVersion": "apps/v1", "kind": "StatefulSet",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {
                "replicas": 2,
                "podManagementPolicy": "OrderedReady",
                "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}},
                "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Retain", "whenScaled": "Retain"},
                "selector": {"matchLabels": {"app": "web"}},
                "serviceName": "web",
                "template": {
                    "metadata": {"labels": {"app": "web"}},
                    "spec": {
                        "restartPolicy": "Always",
                        "containers": [{"name": "c", "image": "nginx",
                            "volumeMounts": [{"name": "www", "mountPath": "/www"}]}],
                    },
                },
                "volumeClaimTemplates": [{"metadata": {"name": "www"}, "spec": {}}],
            },
        });
        if let (Some(spec), Value::Object(extra)) = (s["spec"].as_object_mut(), extra) {
            spec.extend(extra);
        }
        s
    }

    fn messages(causes: Vec<Cause>) -> Vec<String> {
        causes.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn a_stateful_set_may_mount_its_claim_templates_as_kube_allows() {
        // kube validates no more of the template's spec than its restart policy and deadline.
        let s = stateful_set(json!({}));
        assert_eq!(
            messages(validate("apps", "statefulsets", &s, None)),
            Vec::<String>::new()
        );
    }

    #[test]
    fn a_stateful_set_is_validated_as_kube_validates_it() {
        let bad = stateful_set(json!({
            "podManagementPolicy": "Random",
            "updateStrategy": {"type": "OnDelete", "rollingUpdate": {"partition": 1}},
            "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Keep", "whenScaled": "Delete"},
            "ordinals": {"start": -1},
            "minReadySeconds": -2,
        }));
        let got = messages(validate("apps", "statefulsets", &bad, None));
        for want in [
            "spec.podManagementPolicy: Invalid value: \"Random\": must be 'OrderedReady' or 'Parallel'",
            "spec.updateStrategy.rollingUpdate: Invalid value: {\"Partition\":1,\"MaxUnavailable\":null}: only allowed for updateStrategy 'RollingUpdate'",
            "spec.persistentVolumeClaimRetentionPolicy.whenDeleted: Unsupported value: \"Keep\": supported values: \"Retain\", \"Delete\"",
            "spec.ordinals.start: Invalid value: -1: must be greater than or equal to 0",
            "spec.minReadySeconds: Invalid value: -2: must be greater than or equal to 0",
        ] {
            assert!(got.iter().any(|g| g == want), "{want}\nnot in {got:#?}");
        }
        let mut t = stateful_set(json!({"updateStrategy": {"type": "RollingUpdate",
            "rollingUpdate": {"partition": -1, "maxUnavailable": 0}}}));
        t["spec"]["template"]["spec"]["restartPolicy"] = json!("Never");
        t["spec"]["template"]["spec"]["activeDeadlineSeconds"] = json!(5);
        let got = messages(validate("apps", "statefulsets", &t, None));
        for want in [
            "spec.updateStrategy.rollingUpdate.partition: Invalid value: -1: must be greater than or equal to 0",
            "spec.updateStrategy.rollingUpdate.maxUnavailable: Invalid value: 0: cannot be 0",
            "spec.template.spec.restartPolicy: Unsupported value: \"Never\": supported values: \"Always\"",
            "spec.template.spec.activeDeadlineSeconds: Forbidden: activeDeadlineSeconds in StatefulSet is not Supported",
        ] {
            assert!(got.iter().any(|g| g == want), "{want}\nnot in {got:#?}");
        }
        // The selector is validated strictly: a label value with a comma is no label value.
        let commas = stateful_set(json!({"selector": {"matchLabels": {"app": "a,b"}}}));
        assert!(messages(validate("apps", "statefulsets", &commas, None))
            .iter()
            .any(|m| m.starts_with("spec.selector.matchLabels: Invalid value: \"a,b\"")));
        let mut annotated = stateful_set(json!({}));
        annotated["spec"]["template"]["metadata"]["annotations"] = json!({"bad key!": "x"});
        assert!(messages(validate("apps", "statefulsets", &annotated, None))
            .iter()
            .any(|m| m.starts_with("spec.template.annotations: Invalid value: \"bad key!\"")));
        // Bad values print as kube 1.34 prints them: the labels map and the internal structs
        // as their JSON.
        let mut other = stateful_set(json!({}));
        other["spec"]["template"]["metadata"]["labels"] = json!({"z": "1", "app": "db"});
        let got = messages(validate("apps", "statefulsets", &other, None));
        assert!(
            got.iter().any(|m| m
                == "spec.template.metadata.labels: Invalid value: {\"app\":\"db\",\"z\":\"1\"}: `selector` does not match template `labels`"),
            "{got:#?}"
        );
        let odd = stateful_set(json!({"updateStrategy": {"type": "Sometimes",
            "rollingUpdate": {"maxUnavailable": "50%"}}, "selector": {}}));
        let got = messages(validate("apps", "statefulsets", &odd, None));
        for want in [
            "spec.updateStrategy: Invalid value: {\"Type\":\"Sometimes\",\"RollingUpdate\":{\"Partition\":0,\"MaxUnavailable\":\"50%\"}}: must be 'RollingUpdate' or 'OnDelete'",
            "spec.selector: Invalid value: {}: empty selector is invalid for statefulset",
        ] {
            assert!(got.iter().any(|g| g == want), "{want}\nnot in {got:#?}");
        }
    }

    #[test]
    fn a_stateful_set_update_changes_only_what_kube_lets_change() {
        let old = stateful_set(json!({}));
        let scaled = stateful_set(json!({"replicas": 5, "minReadySeconds": 3,
            "updateStrategy": {"type": "OnDelete"}}));
        assert!(validate("apps", "statefulsets", &scaled, Some(&old)).is_empty());
        // Empty and absent are the same to kube (Semantic.DeepEqual of the typed spec).
        let mut same = stateful_set(json!({"serviceName": "", "volumeClaimTemplates": []}));
        same["spec"]["serviceName"] = json!("web");
        let old_empty = stateful_set(json!({"volumeClaimTemplates": []}));
        let mut new_absent = old_empty.clone();
        new_absent["spec"]
            .as_object_mut()
            .unwrap()
            .remove("volumeClaimTemplates");
        assert!(validate("apps", "statefulsets", &new_absent, Some(&old_empty)).is_empty());
        let renamed = stateful_set(json!({"serviceName": "other"}));
        assert_eq!(
            messages(validate("apps", "statefulsets", &renamed, Some(&old))),
            ["spec: Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden"]
        );
    }

    fn deployment() -> Value {
        json!({
            "metadata": {"name": "web"},
            "spec": {
                "selector": {"matchLabels": {"app": "web"}},
                "template": {
                    "metadata": {"labels": {"app": "web"}},
                    "spec": {"containers": [{"name": "nginx", "image": "nginx:1.27"}]}
                }
            }
        })
    }

    #[test]
    fn deployment_defaults_like_kube() {
        let mut d = deployment();
        apply_defaults("apps", "deployments", &mut d);
        assert_eq!(d["spec"]["replicas"], 1);
        assert_eq!(d["spec"]["strategy"]["type"], "RollingUpdate");
        assert_eq!(d["spec"]["strategy"]["rollingUpdate"]["maxSurge"], "25%");
        assert_eq!(d["spec"]["revisionHistoryLimit"], 10);
        assert_eq!(d["spec"]["progressDeadlineSeconds"], 600);
        let c = &d["spec"]["template"]["spec"]["containers"][0];
        assert_eq!(c["imagePullPolicy"], "IfNotPresent");
        let mut p = json!({"spec": {"containers": [{"name": "a", "image": "x:1", "ports": [{"containerPort": 80}]}]}});
        apply_defaults("", "pods", &mut p);
        assert_eq!(p["spec"]["containers"][0]["ports"][0]["protocol"], "TCP");
        assert_eq!(d["spec"]["template"]["spec"]["restartPolicy"], "Always");
        assert!(validate("apps", "deployments", &d, None).is_empty());
    }

    #[test]
    fn latest_images_are_always_pulled() {
        let mut p = json!({"spec": {"containers": [{"name": "a", "image": "nginx"}, {"name": "b", "image": "reg:5000/x:latest"}]}});
        apply_defaults("", "pods", &mut p);
        assert_eq!(p["spec"]["containers"][0]["imagePullPolicy"], "Always");
        assert_eq!(p["spec"]["containers"][1]["imagePullPolicy"], "Always");
    }

    #[test]
    fn selector_must_match_template_labels() {
        let mut d = deployment();
        d["spec"]["template"]["metadata"]["labels"] = json!({"app": "other"});
        let causes = validate("apps", "deployments", &d, None);
        assert_eq!(causes.len(), 1);
        assert_eq!(causes[0].field, "spec.template.metadata.labels");
    }

    #[test]
    fn selector_is_required_and_immutable() {
        let mut d = deployment();
        let old = d.clone();
        d["spec"]["selector"] = json!({"matchLabels": {"app": "web", "x": "y"}});
        d["spec"]["template"]["metadata"]["labels"]["x"] = json!("y");
        let causes = validate("apps", "deployments", &d, Some(&old));
        assert!(
            causes[0].message.contains("field is immutable"),
            "{causes:?}"
        );
        d["spec"].as_object_mut().unwrap().remove("selector");
        let causes = validate("apps", "replicasets", &d, None);
        assert_eq!(causes[0].field, "spec.selector");
    }

    #[test]
    fn pod_spec_is_immutable_but_images() {
        let mut old = json!({"spec": {"containers": [{"name": "a", "image": "x:1"}]}});
        apply_defaults("", "pods", &mut old);
        let mut new = old.clone();
        new["spec"]["containers"][0]["image"] = json!("x:2");
        new["spec"]["activeDeadlineSeconds"] = json!(30);
        assert!(validate("", "pods", &new, Some(&old)).is_empty());
        new["spec"]["nodeName"] = json!("n1");
        let causes = validate("", "pods", &new, Some(&old));
        assert_eq!(causes.len(), 1);
        assert!(causes[0]
            .message
            .contains("pod updates may not change fields"));
        assert!(
            causes[0].message.contains("nodeName"),
            "{}",
            causes[0].message
        );
    }

    #[test]
    fn containers_need_names_and_images() {
        let p = json!({"spec": {"containers": [{"name": "a"}, {"image": "x"}]}});
        let fields: Vec<String> = validate("", "pods", &p, None)
            .into_iter()
            .map(|c| c.field)
            .collect();
        assert_eq!(
            fields,
            ["spec.containers[0].image", "spec.containers[1].name"]
        );
        assert!(!validate("", "pods", &json!({}), None).is_empty());
    }
}
