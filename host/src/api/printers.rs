//! kube's printers (`pkg/printers/internalversion/printers.go`): the Table columns of every
//! built-in kind kube prints specially, one const table per kind, looked up by group and
//! resource. Each column carries kube's name, type, priority (1 = shown by `-o wide`) and a
//! function from the object to the cell kube prints. Kinds kube has no printer for get Name and
//! Age; Roles, ClusterRoles, LimitRanges and CRDs get kube's default Name and Created At.

use serde_json::{json, Value};

use super::table::{age, human_duration};

/// One Table column: its definition and how a row's cell is read from the object.
pub struct Column {
    pub name: &'static str,
    pub kind: &'static str,
    pub format: &'static str,
    pub priority: u8,
    pub description: &'static str,
    pub cell: fn(&Value) -> Value,
}

const fn col(
    name: &'static str,
    kind: &'static str,
    description: &'static str,
    cell: fn(&Value) -> Value,
) -> Column {
    Column {
        name,
        kind,
        format: "",
        priority: 0,
        description,
        cell,
    }
}

/// A priority-1 column: shown by `kubectl get -o wide`.
const fn wide(
    name: &'static str,
    kind: &'static str,
    description: &'static str,
    cell: fn(&Value) -> Value,
) -> Column {
    Column {
        priority: 1,
        ..col(name, kind, description, cell)
    }
}

const NAME_DOC: &str = "Name must be unique within a namespace. Is required when \
         creating resources, although some resources may allow a \
         client to request the generation of an appropriate name \
         automatically. Name is primarily intended for creation \
         idempotence and configuration definition. Cannot be updated. \
         More info: \
         https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names";
const AGE_DOC: &str = "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";

pub const NAME: Column = Column {
    format: "name",
    ..col("Name", "string", NAME_DOC, |o| {
        json!(crate::model::meta::name(o))
    })
};
pub const AGE: Column = col("Age", "string", AGE_DOC, |o| {
    json!(age(crate::model::meta::meta_str(o, "creationTimestamp")))
});
/// kube's default table convertor's second column (kinds without a printer of their own).
const CREATED_AT: Column = Column {
    format: "date-time",
    ..col("Created At", "date", AGE_DOC, |o| {
        json!(crate::model::meta::meta_str(o, "creationTimestamp").unwrap_or(""))
    })
};

const NODE_ADDRESSES_DOC: &str =
    "List of addresses reachable to the node. Queried from cloud provider, if available.";
const CONTAINERS_DOC: &str = "Names of each container in the template.";
const IMAGES_DOC: &str = "Images referenced by each container in the template.";

/// The `-o wide` Containers and Images of a kind with a pod template at `spec.template`.
const TEMPLATE_CONTAINERS: Column = wide("Containers", "string", CONTAINERS_DOC, |o| {
    containers(o, "/spec/template/spec/containers", "name")
});
const TEMPLATE_IMAGES: Column = wide("Images", "string", IMAGES_DOC, |o| {
    containers(o, "/spec/template/spec/containers", "image")
});
const DESIRED_REPLICAS: Column = col(
    "Desired",
    "integer",
    "Replicas is the number of desired replicas.",
    |o| json!(int(o, "/spec/replicas")),
);
const CURRENT_REPLICAS: Column = col(
    "Current",
    "integer",
    "Replicas is the most recently observed number of replicas.",
    |o| json!(int(o, "/status/replicas")),
);
/// Deployments' and StatefulSets' READY: `ready/desired`.
const READY_OF_DESIRED: Column = col(
    "Ready",
    "string",
    "Number of the pod with ready state",
    |o| {
        json!(format!(
            "{}/{}",
            int(o, "/status/readyReplicas"),
            int(o, "/spec/replicas")
        ))
    },
);

const DEFAULT: &[Column] = &[NAME, AGE];
const NAME_CREATED_AT: &[Column] = &[NAME, CREATED_AT];

/// The columns of `group`/`resource` in kube's order, Name and Age included.
pub fn columns(group: &str, resource: &str) -> &'static [Column] {
    PRINTERS
        .iter()
        .find(|(g, r, _)| *g == group && *r == resource)
        .map(|(_, _, cols)| *cols)
        .unwrap_or(DEFAULT)
}

/// A Scale (`kubectl get deploy web --subresource=scale`): kube's `scaleColumnDefinitions`.
const SCALE: &[Column] = &[
    NAME,
    col(
        "Desired",
        "integer",
        "replicas is the desired number of instances for the scaled object.",
        |o| json!(int(o, "/spec/replicas")),
    ),
    col(
        "Available",
        "integer",
        "replicas is the actual number of observed instances of the scaled object.",
        |o| json!(int(o, "/status/replicas")),
    ),
    AGE,
];

/// The columns of an autoscaling/v1 Scale.
pub fn scale_columns() -> &'static [Column] {
    SCALE
}

/// Every kind with columns of its own, by group and resource.
const PRINTERS: &[(&str, &str, &[Column])] = &[
    ("", "pods", PODS),
    ("", "podtemplates", POD_TEMPLATES),
    ("", "replicationcontrollers", REPLICATION_CONTROLLERS),
    ("", "services", SERVICES),
    ("", "endpoints", ENDPOINTS),
    ("", "componentstatuses", COMPONENT_STATUSES),
    ("", "nodes", NODES),
    ("", "events", EVENTS),
    ("", "namespaces", NAMESPACES),
    ("", "secrets", SECRETS),
    ("", "serviceaccounts", SERVICE_ACCOUNTS),
    ("", "persistentvolumes", PERSISTENT_VOLUMES),
    ("", "persistentvolumeclaims", PERSISTENT_VOLUME_CLAIMS),
    ("", "configmaps", CONFIG_MAPS),
    ("", "resourcequotas", RESOURCE_QUOTAS),
    ("", "limitranges", NAME_CREATED_AT),
    ("apps", "deployments", DEPLOYMENTS),
    ("apps", "replicasets", REPLICA_SETS),
    ("apps", "statefulsets", STATEFUL_SETS),
    ("apps", "daemonsets", DAEMON_SETS),
    ("apps", "controllerrevisions", CONTROLLER_REVISIONS),
    ("batch", "jobs", JOBS),
    ("batch", "cronjobs", CRON_JOBS),
    ("autoscaling", "horizontalpodautoscalers", HPAS),
    ("policy", "poddisruptionbudgets", PDBS),
    ("networking.k8s.io", "ingresses", INGRESSES),
    ("networking.k8s.io", "ingressclasses", INGRESS_CLASSES),
    ("networking.k8s.io", "networkpolicies", NETWORK_POLICIES),
    ("networking.k8s.io", "servicecidrs", SERVICE_CIDRS),
    ("networking.k8s.io", "ipaddresses", IP_ADDRESSES),
    ("discovery.k8s.io", "endpointslices", ENDPOINT_SLICES),
    ("storage.k8s.io", "storageclasses", STORAGE_CLASSES),
    ("storage.k8s.io", "volumeattachments", VOLUME_ATTACHMENTS),
    ("storage.k8s.io", "csinodes", CSI_NODES),
    (
        "storage.k8s.io",
        "csistoragecapacities",
        CSI_STORAGE_CAPACITIES,
    ),
    (
        "storage.k8s.io",
        "volumeattributesclasses",
        VOLUME_ATTRIBUTES_CLASSES,
    ),
    ("scheduling.k8s.io", "priorityclasses", PRIORITY_CLASSES),
    ("node.k8s.io", "runtimeclasses", RUNTIME_CLASSES),
    ("coordination.k8s.io", "leases", LEASES),
    ("certificates.k8s.io", "certificatesigningrequests", CSRS),
    (
        "admissionregistration.k8s.io",
        "mutatingwebhookconfigurations",
        WEBHOOK_CONFIGURATIONS,
    ),
    (
        "admissionregistration.k8s.io",
        "validatingwebhookconfigurations",
        WEBHOOK_CONFIGURATIONS,
    ),
    ("apiregistration.k8s.io", "apiservices", API_SERVICES),
    (
        "admissionregistration.k8s.io",
        "validatingadmissionpolicies",
        ADMISSION_POLICIES,
    ),
    (
        "admissionregistration.k8s.io",
        "validatingadmissionpolicybindings",
        ADMISSION_POLICY_BINDINGS,
    ),
    (
        "admissionregistration.k8s.io",
        "mutatingadmissionpolicies",
        MUTATING_ADMISSION_POLICIES,
    ),
    (
        "admissionregistration.k8s.io",
        "mutatingadmissionpolicybindings",
        ADMISSION_POLICY_BINDINGS,
    ),
    ("storage.k8s.io", "csidrivers", CSI_DRIVERS),
    ("resource.k8s.io", "resourceclaims", RESOURCE_CLAIMS),
    ("flowcontrol.apiserver.k8s.io", "flowschemas", FLOW_SCHEMAS),
    (
        "flowcontrol.apiserver.k8s.io",
        "prioritylevelconfigurations",
        PRIORITY_LEVELS,
    ),
    ("resource.k8s.io", "resourceslices", RESOURCE_SLICES),
    (
        "apiextensions.k8s.io",
        "customresourcedefinitions",
        NAME_CREATED_AT,
    ),
    ("rbac.authorization.k8s.io", "roles", NAME_CREATED_AT),
    ("rbac.authorization.k8s.io", "clusterroles", NAME_CREATED_AT),
    ("rbac.authorization.k8s.io", "rolebindings", ROLE_BINDINGS),
    (
        "rbac.authorization.k8s.io",
        "clusterrolebindings",
        ROLE_BINDINGS,
    ),
    ("turtles.dev", "controllers", CONTROLLERS),
];

// ---------------------------------------------------------------------------------------------
// Reading the object
// ---------------------------------------------------------------------------------------------

fn s<'a>(o: &'a Value, pointer: &str) -> &'a str {
    o.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

fn int(o: &Value, pointer: &str) -> i64 {
    o.pointer(pointer).and_then(Value::as_i64).unwrap_or(0)
}

fn list<'a>(o: &'a Value, pointer: &str) -> &'a [Value] {
    o.pointer(pointer)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

fn none_if_empty(s: &str) -> &str {
    if s.is_empty() {
        "<none>"
    } else {
        s
    }
}

/// `<none>` when the field is absent, else its value (kube's `*string` cells).
fn or_unset<'a>(o: &'a Value, pointer: &str, unset: &'a str) -> Value {
    match o.pointer(pointer) {
        Some(Value::String(v)) => json!(v),
        Some(v @ (Value::Number(_) | Value::Bool(_))) => v.clone(),
        _ => json!(unset),
    }
}

/// A boolean field, `default` when unset.
fn flag(o: &Value, pointer: &str, default: bool) -> Value {
    json!(o
        .pointer(pointer)
        .and_then(Value::as_bool)
        .unwrap_or(default))
}

/// kube's `printBoolPtr`: True, False or `<unset>`.
fn bool_ptr(o: &Value, pointer: &str) -> Value {
    json!(match o.pointer(pointer).and_then(Value::as_bool) {
        Some(true) => "True",
        Some(false) => "False",
        None => "<unset>",
    })
}

/// kube's `labels.FormatLabels`: `k=v` sorted by key, comma separated, or `<none>`.
fn format_labels(v: Option<&Value>) -> String {
    let mut pairs: Vec<String> = v
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or("")))
        .collect();
    if pairs.is_empty() {
        return "<none>".into();
    }
    pairs.sort_unstable();
    pairs.join(",")
}

/// kube's `metav1.FormatLabelSelector`, `<none>` for an empty or absent selector.
fn format_selector(v: Option<&Value>) -> String {
    let s = v
        .map(crate::selector::label_selector_string)
        .unwrap_or_default();
    if s.is_empty() {
        "<none>".into()
    } else {
        s
    }
}

/// The names (or images) of a pod template's containers, comma separated.
fn containers(o: &Value, pointer: &str, field: &str) -> Value {
    let names: Vec<&str> = list(o, pointer)
        .iter()
        .filter_map(|c| c.get(field)?.as_str())
        .collect();
    json!(names.join(","))
}

/// The age of a timestamp field, or `<unknown>` when unset (kube's `translateTimestampSince`).
fn since(o: &Value, pointer: &str) -> String {
    age(o.pointer(pointer).and_then(Value::as_str))
}

/// kube's `IntOrString.String()`.
fn int_or_string(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Up to three entries, then ` + N more...` (kube's endpoint and host lists).
fn at_most_three(items: &[String], total: usize) -> String {
    let shown: Vec<&str> = items.iter().take(3).map(String::as_str).collect();
    let mut out = shown.join(",");
    if total > 3 {
        out.push_str(&format!(" + {} more...", total - 3));
    }
    out
}

/// kube's load-balancer ingress points: IPs (else hostnames), deduplicated and sorted.
fn load_balancer(o: &Value, pointer: &str) -> String {
    let mut points: Vec<&str> = list(o, pointer)
        .iter()
        .filter_map(|i| {
            i.get("ip")
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .or_else(|| i.get("hostname").and_then(Value::as_str))
        })
        .filter(|s| !s.is_empty())
        .collect();
    points.sort_unstable();
    points.dedup();
    points.join(",")
}

/// kube's `GetAccessModesAsString`.
fn access_modes(o: &Value, pointer: &str) -> Value {
    let modes: Vec<&str> = list(o, pointer).iter().filter_map(Value::as_str).collect();
    let short: Vec<&str> = [
        ("ReadWriteOnce", "RWO"),
        ("ReadOnlyMany", "ROX"),
        ("ReadWriteMany", "RWX"),
        ("ReadWriteOncePod", "RWOP"),
    ]
    .iter()
    .filter(|(m, _)| modes.contains(m))
    .map(|(_, s)| *s)
    .collect();
    json!(short.join(","))
}

fn terminating_or(o: &Value, phase: &str) -> Value {
    if crate::model::meta::meta_str(o, "deletionTimestamp").is_some() {
        json!("Terminating")
    } else {
        json!(phase)
    }
}

fn annotation<'a>(o: &'a Value, key: &str) -> Option<&'a str> {
    o.pointer("/metadata/annotations")
        .and_then(|a| a.get(key))
        .and_then(Value::as_str)
}

// ---------------------------------------------------------------------------------------------
// core/v1
// ---------------------------------------------------------------------------------------------

const PODS: &[Column] = &[
    NAME,
    col(
        "Ready",
        "string",
        "The aggregate readiness state of this pod for accepting \
         traffic.",
        pod_ready,
    ),
    col(
        "Status",
        "string",
        "The aggregate status of the containers in this pod.",
        pod_status,
    ),
    col(
        "Restarts",
        "string",
        "The number of times the containers in this pod have been \
         restarted and when the last container in this pod has \
         restarted.",
        |o| {
            let p = PodSummary::of(o);
            json!(match p.last_restart.filter(|_| p.restarts != 0) {
                Some(at) => format!("{} ({} ago)", p.restarts, age(Some(at))),
                None => p.restarts.to_string(),
            })
        },
    ),
    AGE,
    wide(
        "IP",
        "string",
        "podIP address allocated to the pod. Routable at least within \
         the cluster. Empty if not yet allocated.",
        |o| {
            let ip = list(o, "/status/podIPs")
                .first()
                .map(|i| s(i, "/ip"))
                .unwrap_or("");
            json!(none_if_empty(ip))
        },
    ),
    wide(
        "Node",
        "string",
        "NodeName indicates in which node this pod is scheduled.",
        |o| json!(none_if_empty(s(o, "/spec/nodeName"))),
    ),
    wide(
        "Nominated Node",
        "string",
        "nominatedNodeName is set only when this pod preempts other \
         pods on the node.",
        |o| json!(none_if_empty(s(o, "/status/nominatedNodeName"))),
    ),
    wide(
        "Readiness Gates",
        "string",
        "If specified, all readiness gates will be evaluated for pod \
         readiness.",
        pod_readiness_gates,
    ),
];

fn pod_ready(o: &Value) -> Value {
    let p = PodSummary::of(o);
    json!(format!("{}/{}", p.ready, p.total))
}

/// kubectl's pod STATUS (see [`PodSummary`]).
pub fn pod_status(o: &Value) -> Value {
    json!(PodSummary::of(o).reason)
}

/// What kube's `printPod` computes from the container statuses: READY, STATUS and RESTARTS.
struct PodSummary<'a> {
    ready: usize,
    total: usize,
    reason: String,
    restarts: i64,
    /// When a counted container last terminated (RFC 3339, which orders as text).
    last_restart: Option<&'a str>,
}

impl<'a> PodSummary<'a> {
    fn of(o: &'a Value) -> Self {
        let phase = s(o, "/status/phase");
        let mut reason = match s(o, "/status/reason") {
            "" => phase.to_owned(),
            r => r.to_owned(),
        };
        let conditions = list(o, "/status/conditions");
        if conditions
            .iter()
            .any(|c| s(c, "/type") == "PodScheduled" && s(c, "/reason") == "SchedulingGated")
        {
            reason = "SchedulingGated".into();
        }
        let init_specs = list(o, "/spec/initContainers");
        let sidecar = |name: &str| {
            init_specs
                .iter()
                .any(|c| s(c, "/name") == name && s(c, "/restartPolicy") == "Always")
        };
        let mut p = Self {
            ready: 0,
            total: list(o, "/spec/containers").len()
                + init_specs
                    .iter()
                    .filter(|c| s(c, "/restartPolicy") == "Always")
                    .count(),
            reason,
            restarts: 0,
            last_restart: None,
        };
        let mut sidecar_restarts = 0;
        let mut sidecar_last: Option<&str> = None;
        let mut initializing = false;
        let inits = list(o, "/status/initContainerStatuses");
        for (i, c) in inits.iter().enumerate() {
            p.restarts += int(c, "/restartCount");
            let finished = c
                .pointer("/lastState/terminated/finishedAt")
                .and_then(Value::as_str);
            p.last_restart = p.last_restart.max(finished);
            if sidecar(s(c, "/name")) {
                sidecar_restarts += int(c, "/restartCount");
                sidecar_last = sidecar_last.max(finished);
            }
            let terminated = c.pointer("/state/terminated");
            let waiting_reason = s(c, "/state/waiting/reason");
            match terminated {
                Some(t) if int(t, "/exitCode") == 0 => continue,
                _ if sidecar(s(c, "/name")) && c.get("started") == Some(&Value::Bool(true)) => {
                    if c.get("ready") == Some(&Value::Bool(true)) {
                        p.ready += 1;
                    }
                    continue;
                }
                Some(t) => {
                    p.reason = match (s(t, "/reason"), int(t, "/signal")) {
                        ("", 0) => format!("Init:ExitCode:{}", int(t, "/exitCode")),
                        ("", signal) => format!("Init:Signal:{signal}"),
                        (r, _) => format!("Init:{r}"),
                    };
                }
                None if !waiting_reason.is_empty() && waiting_reason != "PodInitializing" => {
                    p.reason = format!("Init:{waiting_reason}");
                }
                None => p.reason = format!("Init:{i}/{}", init_specs.len()),
            }
            initializing = true;
            break;
        }
        let initialized = conditions
            .iter()
            .any(|c| s(c, "/type") == "Initialized" && s(c, "/status") == "True");
        if !initializing || initialized {
            p.restarts = sidecar_restarts;
            p.last_restart = sidecar_last;
            let mut running = false;
            for c in list(o, "/status/containerStatuses").iter().rev() {
                p.restarts += int(c, "/restartCount");
                p.last_restart = p.last_restart.max(
                    c.pointer("/lastState/terminated/finishedAt")
                        .and_then(Value::as_str),
                );
                let waiting = s(c, "/state/waiting/reason");
                let terminated = c.pointer("/state/terminated");
                if !waiting.is_empty() {
                    p.reason = waiting.to_owned();
                } else if let Some(t) = terminated {
                    p.reason = match (s(t, "/reason"), int(t, "/signal")) {
                        ("", 0) => format!("ExitCode:{}", int(t, "/exitCode")),
                        ("", signal) => format!("Signal:{signal}"),
                        (r, _) => r.to_owned(),
                    };
                } else if c.get("ready") == Some(&Value::Bool(true))
                    && c.pointer("/state/running").is_some()
                {
                    running = true;
                    p.ready += 1;
                }
            }
            if p.reason == "Completed" && running {
                let ready = conditions
                    .iter()
                    .any(|c| s(c, "/type") == "Ready" && s(c, "/status") == "True");
                p.reason = if ready { "Running" } else { "NotReady" }.into();
            }
        }
        if crate::model::meta::meta_str(o, "deletionTimestamp").is_some() {
            if s(o, "/status/reason") == "NodeLost" {
                p.reason = "Unknown".into();
            } else if !matches!(phase, "Succeeded" | "Failed") {
                p.reason = "Terminating".into();
            }
        }
        p
    }
}

/// kubectl's READINESS GATES: `<ready>/<total>` of `spec.readinessGates`, or `<none>`.
pub fn pod_readiness_gates(o: &Value) -> Value {
    let gates: Vec<&str> = list(o, "/spec/readinessGates")
        .iter()
        .filter_map(|g| g.get("conditionType").and_then(Value::as_str))
        .collect();
    if gates.is_empty() {
        return json!("<none>");
    }
    let conditions = list(o, "/status/conditions");
    let ready = gates
        .iter()
        .filter(|g| {
            conditions.iter().any(|c| {
                c.get("type").and_then(Value::as_str) == Some(**g)
                    && c.get("status").and_then(Value::as_str) == Some("True")
            })
        })
        .count();
    json!(format!("{ready}/{}", gates.len()))
}

const POD_TEMPLATES: &[Column] = &[
    NAME,
    col("Containers", "string", CONTAINERS_DOC, |o| {
        containers(o, "/template/spec/containers", "name")
    }),
    col("Images", "string", IMAGES_DOC, |o| {
        containers(o, "/template/spec/containers", "image")
    }),
    col(
        "Pod Labels",
        "string",
        "The labels for the pod template.",
        |o| json!(format_labels(o.pointer("/template/metadata/labels"))),
    ),
];

const REPLICATION_CONTROLLERS: &[Column] = &[
    NAME,
    DESIRED_REPLICAS,
    CURRENT_REPLICAS,
    col(
        "Ready",
        "integer",
        "The number of ready replicas for this replication \
         controller.",
        |o| json!(int(o, "/status/readyReplicas")),
    ),
    AGE,
    TEMPLATE_CONTAINERS,
    TEMPLATE_IMAGES,
    wide(
        "Selector",
        "string",
        "Selector is a label query over pods that should match the \
         Replicas count.",
        |o| json!(format_labels(o.pointer("/spec/selector"))),
    ),
];

const SERVICES: &[Column] = &[
    NAME,
    col(
        "Type",
        "string",
        "type determines how the Service is exposed.",
        |o| json!(s(o, "/spec/type")),
    ),
    col(
        "Cluster-IP",
        "string",
        "clusterIP is the IP address of the service and is usually \
         assigned randomly.",
        |o| {
            let ip = list(o, "/spec/clusterIPs")
                .first()
                .and_then(Value::as_str)
                .unwrap_or_else(|| s(o, "/spec/clusterIP"));
            json!(none_if_empty(ip))
        },
    ),
    col(
        "External-IP",
        "string",
        "externalIPs is a list of IP addresses for which nodes in the \
         cluster will also accept traffic for this service.",
        service_external_ip,
    ),
    col(
        "Port(s)",
        "string",
        "The list of ports that are exposed by this service.",
        service_ports,
    ),
    AGE,
    wide(
        "Selector",
        "string",
        "Route service traffic to pods with label keys and values \
         matching this selector.",
        |o| json!(format_labels(o.pointer("/spec/selector"))),
    ),
];

/// kube's `getServiceExternalIP` (wide, as server-side tables are).
fn service_external_ip(o: &Value) -> Value {
    let external: Vec<&str> = list(o, "/spec/externalIPs")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let cell = match s(o, "/spec/type") {
        "ClusterIP" | "NodePort" if !external.is_empty() => external.join(","),
        "ClusterIP" | "NodePort" => "<none>".into(),
        "LoadBalancer" => {
            let lb = load_balancer(o, "/status/loadBalancer/ingress");
            let mut all: Vec<&str> = lb.split(',').filter(|s| !s.is_empty()).collect();
            all.extend(&external);
            if all.is_empty() {
                "<pending>".into()
            } else {
                all.join(",")
            }
        }
        "ExternalName" => s(o, "/spec/externalName").to_owned(),
        _ => "<unknown>".into(),
    };
    json!(cell)
}

/// kube's `makePortString`: `80/TCP`, `80:30080/TCP`, or `<none>`.
fn service_ports(o: &Value) -> Value {
    let ports: Vec<String> = list(o, "/spec/ports")
        .iter()
        .map(|p| {
            let port = p.get("port").and_then(Value::as_i64).unwrap_or(0);
            let proto = p.get("protocol").and_then(Value::as_str).unwrap_or("TCP");
            match p.get("nodePort").and_then(Value::as_i64).filter(|n| *n > 0) {
                Some(node) => format!("{port}:{node}/{proto}"),
                None => format!("{port}/{proto}"),
            }
        })
        .collect();
    json!(if ports.is_empty() {
        "<none>".to_owned()
    } else {
        ports.join(",")
    })
}

/// kube's `printComponentStatus`: the `Healthy` condition's status (`Unknown` without one),
/// message and error.
const COMPONENT_STATUSES: &[Column] = &[
    NAME,
    col(
        "Status",
        "string",
        "Status of the component conditions",
        |o| component_condition(o, "status"),
    ),
    col(
        "Message",
        "string",
        "Message of the component conditions",
        |o| component_condition(o, "message"),
    ),
    col(
        "Error",
        "string",
        "Error of the component conditions",
        |o| component_condition(o, "error"),
    ),
];

fn component_condition(o: &Value, field: &str) -> Value {
    let healthy = list(o, "/conditions")
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some("Healthy"));
    let Some(c) = healthy else {
        return json!(if field == "status" { "Unknown" } else { "" });
    };
    if field == "status" {
        let status = c.get("status").and_then(Value::as_str) == Some("True");
        return json!(if status { "Healthy" } else { "Unhealthy" });
    }
    json!(c.get(field).and_then(Value::as_str).unwrap_or(""))
}

const ENDPOINTS: &[Column] = &[
    NAME,
    col(
        "Endpoints",
        "string",
        "The set of all endpoints is the union of all subsets.",
        endpoints,
    ),
    AGE,
];

/// kube's `formatEndpoints`: `ip:port` per address and port, three at most.
fn endpoints(o: &Value) -> Value {
    let subsets = list(o, "/subsets");
    if subsets.is_empty() {
        return json!("<none>");
    }
    let mut shown = Vec::new();
    let mut count = 0;
    for ss in subsets {
        let addrs: Vec<&str> = list(ss, "/addresses")
            .iter()
            .filter_map(|a| a.get("ip").and_then(Value::as_str))
            .collect();
        let ports = list(ss, "/ports");
        if ports.is_empty() {
            count += addrs.len();
            shown.extend(addrs.iter().map(|a| a.to_string()));
            continue;
        }
        for p in ports {
            let port = p.get("port").and_then(Value::as_i64).unwrap_or(0);
            count += addrs.len();
            shown.extend(addrs.iter().map(|a| {
                if a.contains(':') {
                    format!("[{a}]:{port}")
                } else {
                    format!("{a}:{port}")
                }
            }));
        }
    }
    json!(at_most_three(&shown, count))
}

const NODES: &[Column] = &[
    NAME,
    col("Status", "string", "The status of the node", node_status),
    col("Roles", "string", "The roles of the node", node_roles),
    AGE,
    col(
        "Version",
        "string",
        "Kubelet Version reported by the node.",
        |o| json!(s(o, "/status/nodeInfo/kubeletVersion")),
    ),
    wide("Internal-IP", "string", NODE_ADDRESSES_DOC, |o| {
        json!(node_address(o, "InternalIP"))
    }),
    wide("External-IP", "string", NODE_ADDRESSES_DOC, |o| {
        json!(node_address(o, "ExternalIP"))
    }),
    wide(
        "OS-Image",
        "string",
        "OS Image reported by the node from /etc/os-release (e.g. \
         Debian GNU/Linux 7 (wheezy)).",
        |o| json!(unknown_if_empty(s(o, "/status/nodeInfo/osImage"))),
    ),
    wide(
        "Kernel-Version",
        "string",
        "Kernel Version reported by the node from 'uname -r' (e.g. \
         3.16.0-0.bpo.4-amd64).",
        |o| json!(unknown_if_empty(s(o, "/status/nodeInfo/kernelVersion"))),
    ),
    wide(
        "Container-Runtime",
        "string",
        "ContainerRuntime Version reported by the node through \
         runtime remote API (e.g. containerd://1.4.2).",
        |o| {
            json!(unknown_if_empty(s(
                o,
                "/status/nodeInfo/containerRuntimeVersion"
            )))
        },
    ),
];

fn node_status(o: &Value) -> Value {
    let ready = list(o, "/status/conditions")
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some("Ready"))
        .and_then(|c| c.get("status").and_then(Value::as_str))
        .map(|s| if s == "True" { "Ready" } else { "NotReady" })
        .unwrap_or("Unknown");
    let mut out = ready.to_owned();
    if o.pointer("/spec/unschedulable") == Some(&Value::Bool(true)) {
        out.push_str(",SchedulingDisabled");
    }
    json!(out)
}

/// kubectl's node ROLES: the `node-role.kubernetes.io/<role>` labels (and the legacy
/// `kubernetes.io/role` label), or `<none>`.
fn node_roles(o: &Value) -> Value {
    let mut roles: Vec<&str> = crate::model::meta::labels(o)
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| {
            if let Some(role) = k.strip_prefix("node-role.kubernetes.io/") {
                return (!role.is_empty()).then_some(role);
            }
            (k == "kubernetes.io/role").then(|| v.as_str().unwrap_or(""))
        })
        .filter(|r| !r.is_empty())
        .collect();
    roles.sort_unstable();
    roles.dedup();
    json!(if roles.is_empty() {
        "<none>".to_owned()
    } else {
        roles.join(",")
    })
}

/// The node's first address of one type, or `<none>`.
fn node_address(o: &Value, kind: &str) -> String {
    list(o, "/status/addresses")
        .iter()
        .find(|a| a.get("type").and_then(Value::as_str) == Some(kind))
        .and_then(|a| a.get("address").and_then(Value::as_str))
        .unwrap_or("<none>")
        .to_owned()
}

fn unknown_if_empty(s: &str) -> &str {
    if s.is_empty() {
        "<unknown>"
    } else {
        s
    }
}

const EVENTS: &[Column] = &[
    col(
        "Last Seen",
        "string",
        "The time at which the most recent occurrence of this event \
         was recorded.",
        |o| json!(event_times(o).1),
    ),
    col(
        "Type",
        "string",
        "Type of this event (Normal, Warning), new types could be \
         added in the future",
        |o| json!(s(o, "/type")),
    ),
    col(
        "Reason",
        "string",
        "This should be a short, machine understandable string that \
         gives the reason for the transition into the object's \
         current status.",
        |o| json!(s(o, "/reason")),
    ),
    col(
        "Object",
        "string",
        "The object that this event is about.",
        |o| {
            let kind = s(o, "/involvedObject/kind").to_lowercase();
            json!(match s(o, "/involvedObject/name") {
                "" => kind,
                name => format!("{kind}/{name}"),
            })
        },
    ),
    wide(
        "Subobject",
        "string",
        "If referring to a piece of an object instead of an entire \
         object, this string should contain a valid JSON/Go field \
         access statement.",
        |o| json!(s(o, "/involvedObject/fieldPath")),
    ),
    wide(
        "Source",
        "string",
        "The component reporting this event. Should be a short \
         machine understandable string.",
        |o| {
            let component = match s(o, "/source/component") {
                "" => s(o, "/reportingComponent"),
                c => c,
            };
            let host = match s(o, "/source/host") {
                "" => s(o, "/reportingInstance"),
                h => h,
            };
            json!(if host.is_empty() {
                component.to_owned()
            } else {
                format!("{component}, {host}")
            })
        },
    ),
    col(
        "Message",
        "string",
        "A human-readable description of the status of this \
         operation.",
        |o| json!(s(o, "/message").trim()),
    ),
    wide(
        "First Seen",
        "string",
        "The time at which the event was first recorded. (Time of \
         server receipt is in TypeMeta.)",
        |o| json!(event_times(o).0),
    ),
    wide(
        "Count",
        "string",
        "The number of times this event has occurred.",
        |o| {
            let count = match o.pointer("/series/count").and_then(Value::as_i64) {
                Some(n) => n,
                None => match int(o, "/count") {
                    0 => 1,
                    n => n,
                },
            };
            json!(count)
        },
    ),
    Column {
        priority: 1,
        ..NAME
    },
];

/// kube's `printEvent` first and last seen: firstTimestamp (else eventTime), lastTimestamp
/// (else the first), or the series' last observation.
fn event_times(o: &Value) -> (String, String) {
    let first = match o.pointer("/firstTimestamp").and_then(Value::as_str) {
        Some(t) => age(Some(t)),
        None => since(o, "/eventTime"),
    };
    let last = if let Some(t) = o
        .pointer("/series/lastObservedTime")
        .and_then(Value::as_str)
    {
        age(Some(t))
    } else {
        match o.pointer("/lastTimestamp").and_then(Value::as_str) {
            Some(t) => age(Some(t)),
            None => first.clone(),
        }
    };
    (first, last)
}

const NAMESPACES: &[Column] = &[
    NAME,
    col("Status", "string", "The status of the namespace", |o| {
        json!(s(o, "/status/phase"))
    }),
    AGE,
];

fn count(v: Option<&Value>) -> usize {
    v.and_then(Value::as_object).map(|m| m.len()).unwrap_or(0)
}

const SECRETS: &[Column] = &[
    NAME,
    col(
        "Type",
        "string",
        "Used to facilitate programmatic handling of secret data.",
        |o| json!(s(o, "/type")),
    ),
    col("Data", "string", "Data contains the secret data.", |o| {
        json!(count(o.get("data")))
    }),
    AGE,
];

const SERVICE_ACCOUNTS: &[Column] = &[
    NAME,
    col(
        "Secrets",
        "string",
        "Secrets is a list of the secrets in the same namespace that \
         pods running using this ServiceAccount are allowed to use.",
        |o| json!(list(o, "/secrets").len()),
    ),
    AGE,
];

const PERSISTENT_VOLUMES: &[Column] = &[
    NAME,
    col(
        "Capacity",
        "string",
        "capacity is the description of the persistent volume's \
         resources and capacity.",
        |o| json!(quantity(o, "/spec/capacity/storage")),
    ),
    col(
        "Access Modes",
        "string",
        "accessModes contains all ways the volume can be mounted.",
        |o| access_modes(o, "/spec/accessModes"),
    ),
    col(
        "Reclaim Policy",
        "string",
        "persistentVolumeReclaimPolicy defines what happens to a \
         persistent volume when released from its claim.",
        |o| json!(s(o, "/spec/persistentVolumeReclaimPolicy")),
    ),
    col(
        "Status",
        "string",
        "phase indicates if a volume is available, bound to a claim, \
         or released by a claim.",
        |o| terminating_or(o, s(o, "/status/phase")),
    ),
    col(
        "Claim",
        "string",
        "claimRef is part of a bi-directional binding between \
         PersistentVolume and PersistentVolumeClaim.",
        |o| {
            json!(match o.pointer("/spec/claimRef") {
                Some(r) => format!("{}/{}", s(r, "/namespace"), s(r, "/name")),
                None => String::new(),
            })
        },
    ),
    col("StorageClass", "string", "StorageClass of the pv", |o| {
        json!(annotation(o, "volume.beta.kubernetes.io/storage-class")
            .unwrap_or_else(|| s(o, "/spec/storageClassName")))
    }),
    col(
        "VolumeAttributesClass",
        "string",
        "VolumeAttributesClass of the pv",
        |o| or_unset(o, "/spec/volumeAttributesClassName", "<unset>"),
    ),
    col(
        "Reason",
        "string",
        "reason is a brief CamelCase string that describes any \
         failure and is meant for machine parsing and tidy display in \
         the CLI.",
        |o| json!(s(o, "/status/reason")),
    ),
    AGE,
    wide(
        "VolumeMode",
        "string",
        "volumeMode defines if a volume is intended to be used with a \
         formatted filesystem or to remain in raw block state.",
        |o| or_unset(o, "/spec/volumeMode", "<unset>"),
    ),
];

/// A resource quantity as kube prints it (the canonical form turtles stores).
fn quantity(o: &Value, pointer: &str) -> String {
    match o.pointer(pointer) {
        Some(Value::String(q)) => q.clone(),
        Some(Value::Number(n)) => n.to_string(),
        _ => String::new(),
    }
}

const PERSISTENT_VOLUME_CLAIMS: &[Column] = &[
    NAME,
    col(
        "Status",
        "string",
        "phase represents the current phase of PersistentVolumeClaim.",
        |o| terminating_or(o, s(o, "/status/phase")),
    ),
    col(
        "Volume",
        "string",
        "volumeName is the binding reference to the PersistentVolume \
         backing this claim.",
        |o| json!(s(o, "/spec/volumeName")),
    ),
    col(
        "Capacity",
        "string",
        "capacity represents the actual resources of the underlying \
         volume.",
        |o| {
            json!(if s(o, "/spec/volumeName").is_empty() {
                String::new()
            } else {
                quantity(o, "/status/capacity/storage")
            })
        },
    ),
    col(
        "Access Modes",
        "string",
        "accessModes contains the actual access modes the volume \
         backing the PVC has.",
        |o| {
            if s(o, "/spec/volumeName").is_empty() {
                json!("")
            } else {
                access_modes(o, "/status/accessModes")
            }
        },
    ),
    col("StorageClass", "string", "StorageClass of the pvc", |o| {
        json!(annotation(o, "volume.beta.kubernetes.io/storage-class")
            .unwrap_or_else(|| s(o, "/spec/storageClassName")))
    }),
    col(
        "VolumeAttributesClass",
        "string",
        "VolumeAttributesClass of the pvc",
        |o| or_unset(o, "/spec/volumeAttributesClassName", "<unset>"),
    ),
    AGE,
    wide(
        "VolumeMode",
        "string",
        "volumeMode defines what type of volume is required by the \
         claim.",
        |o| or_unset(o, "/spec/volumeMode", "<unset>"),
    ),
];

const CONFIG_MAPS: &[Column] = &[
    NAME,
    col(
        "Data",
        "string",
        "Data contains the configuration data.",
        |o| json!(count(o.get("data")) + count(o.get("binaryData"))),
    ),
    AGE,
];

const RESOURCE_QUOTAS: &[Column] = &[
    NAME,
    col(
        "Request",
        "string",
        "Request represents a minimum amount of cpu/memory that a \
         container may consume.",
        |o| json!(quota_usage(o, false)),
    ),
    col(
        "Limit",
        "string",
        "Limits control the maximum amount of cpu/memory that a \
         container may use independent of contention on the node.",
        |o| json!(quota_usage(o, true)),
    ),
    AGE,
];

/// kube's `printResourceQuota`: `resource: used/hard` for each hard limit, sorted, the
/// `limits.*` ones in the Limit column.
fn quota_usage(o: &Value, limits: bool) -> String {
    let Some(hard) = o.pointer("/status/hard").and_then(Value::as_object) else {
        return String::new();
    };
    let mut names: Vec<&String> = hard.keys().collect();
    names.sort_unstable();
    let parts: Vec<String> = names
        .into_iter()
        .filter(|n| n.starts_with("limits.") == limits)
        .map(|n| {
            let used = o
                .pointer("/status/used")
                .and_then(|u| u.get(n.as_str()))
                .map(int_or_string)
                .unwrap_or_else(|| "0".into());
            format!("{n}: {used}/{}", int_or_string(&hard[n.as_str()]))
        })
        .collect();
    parts.join(", ")
}

// ---------------------------------------------------------------------------------------------
// apps/v1, batch/v1, autoscaling/v2, policy/v1
// ---------------------------------------------------------------------------------------------

const DEPLOYMENTS: &[Column] = &[
    NAME,
    READY_OF_DESIRED,
    col(
        "Up-to-date",
        "string",
        "Total number of non-terminated pods targeted by this \
         deployment that have the desired template spec.",
        |o| json!(int(o, "/status/updatedReplicas")),
    ),
    col(
        "Available",
        "string",
        "Total number of available pods (ready for at least \
         minReadySeconds) targeted by this deployment.",
        |o| json!(int(o, "/status/availableReplicas")),
    ),
    AGE,
    TEMPLATE_CONTAINERS,
    TEMPLATE_IMAGES,
    // printDeployment prints the selector as is (empty, not `<none>`).
    wide("Selector", "string", "Label selector for pods.", |o| {
        json!(o
            .pointer("/spec/selector")
            .map(crate::selector::label_selector_string)
            .unwrap_or_default())
    }),
];

const REPLICA_SETS: &[Column] = &[
    NAME,
    DESIRED_REPLICAS,
    CURRENT_REPLICAS,
    col(
        "Ready",
        "integer",
        "The number of ready replicas for this replica set.",
        |o| json!(int(o, "/status/readyReplicas")),
    ),
    AGE,
    TEMPLATE_CONTAINERS,
    TEMPLATE_IMAGES,
    wide(
        "Selector",
        "string",
        "Selector is a label query over pods that should match the \
         replica count.",
        |o| json!(format_selector(o.pointer("/spec/selector"))),
    ),
];

const STATEFUL_SETS: &[Column] = &[
    NAME,
    READY_OF_DESIRED,
    AGE,
    TEMPLATE_CONTAINERS,
    TEMPLATE_IMAGES,
];

const DAEMON_SETS: &[Column] = &[
    NAME,
    col(
        "Desired",
        "integer",
        "The total number of nodes that should be running the daemon \
         pod (including nodes correctly running the daemon pod).",
        |o| json!(int(o, "/status/desiredNumberScheduled")),
    ),
    col(
        "Current",
        "integer",
        "The number of nodes that are running at least 1 daemon pod \
         and are supposed to run the daemon pod.",
        |o| json!(int(o, "/status/currentNumberScheduled")),
    ),
    col(
        "Ready",
        "integer",
        "The number of nodes that should be running the daemon pod \
         and have one or more of the daemon pod running and ready.",
        |o| json!(int(o, "/status/numberReady")),
    ),
    col(
        "Up-to-date",
        "integer",
        "The total number of nodes that are running updated daemon \
         pod",
        |o| json!(int(o, "/status/updatedNumberScheduled")),
    ),
    col(
        "Available",
        "integer",
        "The number of nodes that should be running the daemon pod \
         and have one or more of the daemon pod running and available \
         (ready for at least spec.minReadySeconds)",
        |o| json!(int(o, "/status/numberAvailable")),
    ),
    col(
        "Node Selector",
        "string",
        "NodeSelector is a selector which must be true for the pod to \
         fit on a node.",
        |o| json!(format_labels(o.pointer("/spec/template/spec/nodeSelector"))),
    ),
    AGE,
    TEMPLATE_CONTAINERS,
    TEMPLATE_IMAGES,
    wide(
        "Selector",
        "string",
        "A label query over pods that are managed by the daemon set.",
        |o| json!(format_selector(o.pointer("/spec/selector"))),
    ),
];

const CONTROLLER_REVISIONS: &[Column] = &[
    NAME,
    col("Controller", "string", "Controller of the object", |o| {
        let owner = list(o, "/metadata/ownerReferences")
            .iter()
            .find(|r| r.get("controller") == Some(&Value::Bool(true)));
        json!(match owner {
            None => "<none>".to_owned(),
            Some(r) => {
                let group = s(r, "/apiVersion")
                    .rsplit_once('/')
                    .map(|(g, _)| g)
                    .unwrap_or("");
                let kind = s(r, "/kind");
                let gk = if group.is_empty() {
                    kind.to_owned()
                } else {
                    format!("{kind}.{group}")
                };
                format!("{}/{}", gk.to_lowercase(), s(r, "/name"))
            }
        })
    }),
    col(
        "Revision",
        "string",
        "Revision indicates the revision of the state represented by \
         Data.",
        |o| json!(int(o, "/revision")),
    ),
    AGE,
];

const JOBS: &[Column] = &[
    NAME,
    col("Status", "string", "Status of the job.", job_status),
    col(
        "Completions",
        "string",
        "The number of pods which reached phase Succeeded.",
        job_completions,
    ),
    col(
        "Duration",
        "string",
        "Time required to complete the job.",
        job_duration,
    ),
    AGE,
    TEMPLATE_CONTAINERS,
    TEMPLATE_IMAGES,
    wide(
        "Selector",
        "string",
        "A label query over pods that should match the pod count.",
        |o| json!(format_selector(o.pointer("/spec/selector"))),
    ),
];

fn has_condition(o: &Value, kind: &str) -> bool {
    list(o, "/status/conditions").iter().any(|c| {
        c.get("type").and_then(Value::as_str) == Some(kind)
            && c.get("status").and_then(Value::as_str) == Some("True")
    })
}

/// kube's `printJob` status: Complete, Failed, Terminating, Suspended, FailureTarget or
/// Running.
fn job_status(o: &Value) -> Value {
    let status = if has_condition(o, "Complete") {
        "Complete"
    } else if has_condition(o, "Failed") {
        "Failed"
    } else if crate::model::meta::meta_str(o, "deletionTimestamp").is_some() {
        "Terminating"
    } else if has_condition(o, "Suspended") {
        "Suspended"
    } else if has_condition(o, "FailureTarget") {
        "FailureTarget"
    } else {
        "Running"
    };
    json!(status)
}

/// `succeeded/completions`, or `succeeded/1 of parallelism` for a work queue.
fn job_completions(o: &Value) -> Value {
    let succeeded = int(o, "/status/succeeded");
    let parallelism = o.pointer("/spec/parallelism").and_then(Value::as_i64);
    json!(
        match o.pointer("/spec/completions").and_then(Value::as_i64) {
            Some(c) => format!("{succeeded}/{c}"),
            None => match parallelism {
                Some(p) if p > 1 => format!("{succeeded}/1 of {p}"),
                _ => format!("{succeeded}/1"),
            },
        }
    )
}

fn timestamp(o: &Value, pointer: &str) -> Option<chrono::DateTime<chrono::Utc>> {
    let t = o.pointer(pointer)?.as_str()?;
    chrono::DateTime::parse_from_rfc3339(t)
        .ok()
        .map(|t| t.with_timezone(&chrono::Utc))
}

/// From startTime to completionTime (or now); empty before the job started.
fn job_duration(o: &Value) -> Value {
    let Some(start) = timestamp(o, "/status/startTime") else {
        return json!("");
    };
    let end = timestamp(o, "/status/completionTime").unwrap_or_else(chrono::Utc::now);
    json!(human_duration((end - start).num_seconds()))
}

const CRON_JOBS: &[Column] = &[
    NAME,
    col(
        "Schedule",
        "string",
        "The schedule in Cron format, see \
         https://en.wikipedia.org/wiki/Cron.",
        |o| json!(s(o, "/spec/schedule")),
    ),
    col(
        "Timezone",
        "string",
        "The time zone name for the given schedule, see \
         https://en.wikipedia.org/wiki/List_of_tz_database_time_zones.",
        |o| or_unset(o, "/spec/timeZone", "<none>"),
    ),
    col(
        "Suspend",
        "boolean",
        "This flag tells the controller to suspend subsequent \
         executions, it does not apply to already started executions.",
        |o| bool_ptr(o, "/spec/suspend"),
    ),
    col(
        "Active",
        "integer",
        "A list of pointers to currently running jobs.",
        |o| json!(list(o, "/status/active").len()),
    ),
    col(
        "Last Schedule",
        "string",
        "Information when was the last time the job was successfully \
         scheduled.",
        |o| {
            json!(match o.pointer("/status/lastScheduleTime") {
                Some(_) => since(o, "/status/lastScheduleTime"),
                None => "<none>".into(),
            })
        },
    ),
    AGE,
    wide("Containers", "string", CONTAINERS_DOC, |o| {
        containers(o, "/spec/jobTemplate/spec/template/spec/containers", "name")
    }),
    wide("Images", "string", IMAGES_DOC, |o| {
        containers(
            o,
            "/spec/jobTemplate/spec/template/spec/containers",
            "image",
        )
    }),
    wide(
        "Selector",
        "string",
        "A label query over pods that should match the pod count.",
        |o| {
            json!(format_selector(
                o.pointer("/spec/jobTemplate/spec/selector")
            ))
        },
    ),
];

const HPAS: &[Column] = &[
    NAME,
    col(
        "Reference",
        "string",
        "scaleTargetRef points to the target resource to scale.",
        |o| {
            json!(format!(
                "{}/{}",
                s(o, "/spec/scaleTargetRef/kind"),
                s(o, "/spec/scaleTargetRef/name")
            ))
        },
    ),
    col(
        "Targets",
        "string",
        "metrics contains the specifications for which to use to \
         calculate the desired replica count.",
        hpa_targets,
    ),
    col(
        "MinPods",
        "string",
        "minReplicas is the lower limit for the number of replicas to \
         which the autoscaler can scale down.",
        |o| or_unset(o, "/spec/minReplicas", "<unset>"),
    ),
    col(
        "MaxPods",
        "string",
        "maxReplicas is the upper limit for the number of replicas to \
         which the autoscaler can scale up.",
        |o| json!(int(o, "/spec/maxReplicas")),
    ),
    col(
        "Replicas",
        "string",
        "currentReplicas is current number of replicas of pods \
         managed by this autoscaler.",
        |o| json!(int(o, "/status/currentReplicas")),
    ),
    AGE,
];

/// kube's `formatHPAMetrics`: `current/target` per metric (`cpu: 40%/80%`), two at most.
fn hpa_targets(o: &Value) -> Value {
    let specs = list(o, "/spec/metrics");
    if specs.is_empty() {
        return json!("<none>");
    }
    let statuses = list(o, "/status/currentMetrics");
    let shown: Vec<String> = specs
        .iter()
        .enumerate()
        .map(|(i, spec)| hpa_metric(spec, statuses.get(i)))
        .collect();
    let mut out = shown.iter().take(2).cloned().collect::<Vec<_>>().join(", ");
    if specs.len() > 2 {
        out.push_str(&format!(" + {} more...", specs.len() - 2));
    }
    json!(out)
}

fn hpa_metric(spec: &Value, status: Option<&Value>) -> String {
    let kind = s(spec, "/type");
    let field = match kind {
        "Resource" => "resource",
        "ContainerResource" => "containerResource",
        "Pods" => "pods",
        "Object" => "object",
        "External" => "external",
        _ => return "<unknown type>".into(),
    };
    let target = spec.get(field).and_then(|m| m.get("target"));
    let current = status
        .filter(|st| s(st, "/type") == kind)
        .and_then(|st| st.get(field))
        .and_then(|m| m.get("current"));
    // The target's form decides which of the current values is shown.
    let form = if target.is_some_and(|t| t.get("averageValue").is_some()) {
        "averageValue"
    } else if matches!(kind, "Resource" | "ContainerResource") {
        "averageUtilization"
    } else {
        "value"
    };
    let read = |v: Option<&Value>, missing: &str| -> String {
        match v.and_then(|v| v.get(form)) {
            Some(Value::Number(n)) if form == "averageUtilization" => format!("{n}%"),
            Some(v) => int_or_string(v),
            None => missing.to_owned(),
        }
    };
    let target_missing = if form == "averageUtilization" {
        "<auto>"
    } else {
        "<unknown>"
    };
    let pair = format!(
        "{}/{}",
        read(current, "<unknown>"),
        read(target, target_missing)
    );
    match kind {
        "Resource" | "ContainerResource" => {
            format!("{}: {pair}", s(spec, &format!("/{field}/name")))
        }
        "Object" | "External" if form == "averageValue" => format!("{pair} (avg)"),
        _ => pair,
    }
}

const PDBS: &[Column] = &[
    NAME,
    col(
        "Min Available",
        "string",
        "The minimum number of pods that must be available.",
        |o| {
            json!(o
                .pointer("/spec/minAvailable")
                .map(int_or_string)
                .unwrap_or_else(|| "N/A".into()))
        },
    ),
    col(
        "Max Unavailable",
        "string",
        "The maximum number of pods that may be unavailable.",
        |o| {
            json!(o
                .pointer("/spec/maxUnavailable")
                .map(int_or_string)
                .unwrap_or_else(|| "N/A".into()))
        },
    ),
    col(
        "Allowed Disruptions",
        "integer",
        "Calculated number of pods that may be disrupted at this \
         time.",
        |o| json!(int(o, "/status/disruptionsAllowed")),
    ),
    AGE,
];

// ---------------------------------------------------------------------------------------------
// networking.k8s.io/v1, discovery.k8s.io/v1
// ---------------------------------------------------------------------------------------------

const INGRESSES: &[Column] = &[
    NAME,
    col(
        "Class",
        "string",
        "The name of the IngressClass resource that should be used \
         for additional configuration",
        |o| or_unset(o, "/spec/ingressClassName", "<none>"),
    ),
    col(
        "Hosts",
        "string",
        "Hosts that incoming requests are matched against before the \
         ingress rule",
        ingress_hosts,
    ),
    col(
        "Address",
        "string",
        "Address is a list containing ingress points for the \
         load-balancer",
        |o| json!(load_balancer(o, "/status/loadBalancer/ingress")),
    ),
    col(
        "Ports",
        "string",
        "Ports of TLS configurations that open",
        |o| {
            json!(if list(o, "/spec/tls").is_empty() {
                "80"
            } else {
                "80, 443"
            })
        },
    ),
    AGE,
];

/// kube's `formatHosts`: the rules' hosts (three at most), or `*`.
fn ingress_hosts(o: &Value) -> Value {
    let rules = list(o, "/spec/rules");
    let hosts: Vec<String> = rules
        .iter()
        .take(3)
        .map(|r| s(r, "/host"))
        .filter(|h| !h.is_empty())
        .map(str::to_owned)
        .collect();
    if hosts.is_empty() {
        return json!("*");
    }
    let mut out = hosts.join(",");
    if rules.len() > 3 {
        out.push_str(&format!(" + {} more...", rules.len() - 3));
    }
    json!(out)
}

const INGRESS_CLASSES: &[Column] = &[
    NAME,
    col(
        "Controller",
        "string",
        "Controller that is responsible for handling this class",
        |o| json!(s(o, "/spec/controller")),
    ),
    col(
        "Parameters",
        "string",
        "A reference to a resource with additional parameters",
        |o| {
            json!(match o.pointer("/spec/parameters") {
                None => "<none>".to_owned(),
                Some(p) => {
                    let mut out = s(p, "/kind").to_owned();
                    if let Some(g) = p.get("apiGroup").and_then(Value::as_str) {
                        out = format!("{out}.{g}");
                    }
                    format!("{out}/{}", s(p, "/name"))
                }
            })
        },
    ),
    AGE,
];

const NETWORK_POLICIES: &[Column] = &[
    NAME,
    col(
        "Pod-Selector",
        "string",
        "Selects the pods to which this NetworkPolicy object applies.",
        |o| json!(format_selector(o.pointer("/spec/podSelector"))),
    ),
    AGE,
];

const SERVICE_CIDRS: &[Column] = &[
    NAME,
    col(
        "CIDRs",
        "string",
        "CIDRs defines the IP blocks in CIDR notation from which to \
         assign service cluster IPs.",
        |o| {
            let cidrs: Vec<&str> = list(o, "/spec/cidrs")
                .iter()
                .filter_map(Value::as_str)
                .collect();
            json!(cidrs.join(","))
        },
    ),
    AGE,
];

const IP_ADDRESSES: &[Column] = &[
    NAME,
    col(
        "ParentRef",
        "string",
        "ParentRef references the resource that an IPAddress is \
         attached to.",
        |o| {
            json!(match o.pointer("/spec/parentRef") {
                None => "<none>".to_owned(),
                Some(r) => {
                    let mut out = match s(r, "/group") {
                        "" => s(r, "/resource").to_lowercase(),
                        g => format!("{}.{g}", s(r, "/resource")).to_lowercase(),
                    };
                    let ns = s(r, "/namespace");
                    if !ns.is_empty() {
                        out = format!("{out}/{ns}");
                    }
                    format!("{out}/{}", s(r, "/name"))
                }
            })
        },
    ),
];

const ENDPOINT_SLICES: &[Column] = &[
    NAME,
    col(
        "AddressType",
        "string",
        "addressType specifies the type of address carried by this \
         EndpointSlice.",
        |o| json!(s(o, "/addressType")),
    ),
    col(
        "Ports",
        "string",
        "ports specifies the list of network ports exposed by each \
         endpoint in this slice.",
        |o| {
            let ports: Vec<String> = list(o, "/ports")
                .iter()
                .map(|p| {
                    match (
                        p.get("port").and_then(Value::as_i64),
                        p.get("name").and_then(Value::as_str),
                    ) {
                        (Some(n), _) => n.to_string(),
                        (None, Some(name)) => name.to_owned(),
                        (None, None) => "*".to_owned(),
                    }
                })
                .collect();
            json!(unset_if_empty(at_most_three(&ports, ports.len())))
        },
    ),
    col(
        "Endpoints",
        "string",
        "endpoints is a list of unique endpoints in this slice.",
        |o| {
            let addrs: Vec<String> = list(o, "/endpoints")
                .iter()
                .flat_map(|e| list(e, "/addresses").iter().filter_map(Value::as_str))
                .map(str::to_owned)
                .collect();
            json!(unset_if_empty(at_most_three(&addrs, addrs.len())))
        },
    ),
    AGE,
];

fn unset_if_empty(s: String) -> String {
    if s.is_empty() {
        "<unset>".into()
    } else {
        s
    }
}

// ---------------------------------------------------------------------------------------------
// storage, scheduling, node, coordination, certificates
// ---------------------------------------------------------------------------------------------

const STORAGE_CLASSES: &[Column] = &[
    Column {
        cell: |o| {
            let name = crate::model::meta::name(o);
            let default = [
                "storageclass.kubernetes.io/is-default-class",
                "storageclass.beta.kubernetes.io/is-default-class",
            ]
            .iter()
            .any(|k| annotation(o, k) == Some("true"));
            json!(if default {
                format!("{name} (default)")
            } else {
                name.to_owned()
            })
        },
        ..NAME
    },
    col(
        "Provisioner",
        "string",
        "provisioner indicates the type of the provisioner.",
        |o| json!(s(o, "/provisioner")),
    ),
    col(
        "ReclaimPolicy",
        "string",
        "reclaimPolicy controls the reclaimPolicy for dynamically \
         provisioned PersistentVolumes of this storage class.",
        |o| {
            json!(match s(o, "/reclaimPolicy") {
                "" => "Delete",
                p => p,
            })
        },
    ),
    col(
        "VolumeBindingMode",
        "string",
        "volumeBindingMode indicates how PersistentVolumeClaims \
         should be provisioned and bound.",
        |o| {
            json!(match s(o, "/volumeBindingMode") {
                "" => "Immediate",
                m => m,
            })
        },
    ),
    col(
        "AllowVolumeExpansion",
        "string",
        "allowVolumeExpansion shows whether the storage class allow \
         volume expand.",
        |o| flag(o, "/allowVolumeExpansion", false),
    ),
    AGE,
];

const VOLUME_ATTACHMENTS: &[Column] = &[
    NAME,
    Column {
        format: "name",
        ..col(
            "Attacher",
            "string",
            "attacher indicates the name of the volume driver that MUST \
         handle this request.",
            |o| json!(s(o, "/spec/attacher")),
        )
    },
    col(
        "PV",
        "string",
        "persistentVolumeName represents the name of the persistent \
         volume to attach.",
        |o| json!(s(o, "/spec/source/persistentVolumeName")),
    ),
    col(
        "Node",
        "string",
        "nodeName represents the node that the volume should be \
         attached to.",
        |o| json!(s(o, "/spec/nodeName")),
    ),
    col(
        "Attached",
        "boolean",
        "attached indicates the volume is successfully attached.",
        |o| flag(o, "/status/attached", false),
    ),
    AGE,
];

const CSI_NODES: &[Column] = &[
    NAME,
    col(
        "Drivers",
        "integer",
        "Drivers indicates the number of CSI drivers registered on \
         the node",
        |o| json!(list(o, "/spec/drivers").len()),
    ),
    AGE,
];

const CSI_STORAGE_CAPACITIES: &[Column] = &[
    NAME,
    col(
        "StorageClassName",
        "string",
        "storageClassName represents the name of the StorageClass \
         that the reported capacity applies to.",
        |o| json!(s(o, "/storageClassName")),
    ),
    col(
        "Capacity",
        "string",
        "capacity is the value reported by the CSI driver in its \
         GetCapacityResponse for a GetCapacityRequest with topology \
         and parameters that match the previous fields.",
        |o| or_unset(o, "/capacity", "<unset>"),
    ),
];

const VOLUME_ATTRIBUTES_CLASSES: &[Column] = &[
    NAME,
    col("DriverName", "string", "Name of the CSI driver", |o| {
        json!(s(o, "/driverName"))
    }),
    AGE,
];

const PRIORITY_CLASSES: &[Column] = &[
    NAME,
    col(
        "Value",
        "integer",
        "value represents the integer value of this priority class.",
        |o| json!(int(o, "/value")),
    ),
    col(
        "Global-Default",
        "boolean",
        "globalDefault specifies whether this PriorityClass should be \
         considered as the default priority for pods that do not have \
         any priority class.",
        |o| flag(o, "/globalDefault", false),
    ),
    AGE,
    col(
        "PreemptionPolicy",
        "string",
        "preemptionPolicy is the Policy for preempting pods with \
         lower priority.",
        |o| or_unset(o, "/preemptionPolicy", ""),
    ),
];

const RUNTIME_CLASSES: &[Column] = &[
    NAME,
    col(
        "Handler",
        "string",
        "handler specifies the underlying runtime and configuration \
         that the CRI implementation will use to handle pods of this \
         class.",
        |o| json!(s(o, "/handler")),
    ),
    AGE,
];

const LEASES: &[Column] = &[
    NAME,
    col(
        "Holder",
        "string",
        "holderIdentity contains the identity of the holder of a \
         current lease.",
        |o| json!(s(o, "/spec/holderIdentity")),
    ),
    AGE,
];

const CSRS: &[Column] = &[
    NAME,
    AGE,
    col(
        "SignerName",
        "string",
        "Requested signer for the request.",
        |o| json!(none_if_empty(s(o, "/spec/signerName"))),
    ),
    col(
        "Requestor",
        "string",
        "Base64-encoded PKCS#10 CSR data",
        |o| json!(s(o, "/spec/username")),
    ),
    col(
        "RequestedDuration",
        "string",
        "expirationSeconds is the requested duration of validity of \
         the issued certificate.",
        |o| {
            json!(
                match o.pointer("/spec/expirationSeconds").and_then(Value::as_i64) {
                    Some(secs) => human_duration(secs),
                    None => "<none>".into(),
                }
            )
        },
    ),
    col(
        "Condition",
        "string",
        "Conditions applied to the request, such as approval or \
         denial.",
        csr_condition,
    ),
];

/// kube's `extractCSRStatus`: Denied, Approved or Pending, then `,Failed` and `,Issued`.
fn csr_condition(o: &Value) -> Value {
    let has = |kind: &str| {
        list(o, "/status/conditions")
            .iter()
            .any(|c| c.get("type").and_then(Value::as_str) == Some(kind))
    };
    let mut status = if has("Denied") {
        "Denied".to_owned()
    } else if has("Approved") {
        "Approved".to_owned()
    } else {
        "Pending".to_owned()
    };
    if has("Failed") {
        status.push_str(",Failed");
    }
    if !s(o, "/status/certificate").is_empty() {
        status.push_str(",Issued");
    }
    json!(status)
}

// ---------------------------------------------------------------------------------------------
// admission, aggregation, flow control, DRA, RBAC, turtles
// ---------------------------------------------------------------------------------------------

const WEBHOOK_CONFIGURATIONS: &[Column] = &[
    NAME,
    col(
        "Webhooks",
        "integer",
        "Webhooks indicates the number of webhooks registered in this \
         configuration",
        |o| json!(list(o, "/webhooks").len()),
    ),
    AGE,
];

const ADMISSION_POLICIES: &[Column] = &[
    NAME,
    col(
        "Validations",
        "integer",
        "Validations indicates the number of validation rules defined \
         in this configuration",
        |o| json!(list(o, "/spec/validations").len()),
    ),
    col(
        "ParamKind",
        "string",
        "ParamKind specifies the kind of resources used to \
         parameterize this policy",
        |o| {
            json!(match o.pointer("/spec/paramKind") {
                Some(k) => format!("{}/{}", s(k, "/apiVersion"), s(k, "/kind")),
                None => "<unset>".to_owned(),
            })
        },
    ),
    AGE,
];

const MUTATING_ADMISSION_POLICIES: &[Column] = &[
    NAME,
    col(
        "Mutations",
        "integer",
        "Mutations indicates the number of mutations rules defined \
         in this configuration",
        |o| json!(list(o, "/spec/mutations").len()),
    ),
    col(
        "ParamKind",
        "string",
        "ParamKind specifies the kind of resources used to \
         parameterize this policy",
        |o| {
            json!(match o.pointer("/spec/paramKind") {
                Some(k) => format!("{}/{}", s(k, "/apiVersion"), s(k, "/kind")),
                None => "<unset>".to_owned(),
            })
        },
    ),
    AGE,
];

const ADMISSION_POLICY_BINDINGS: &[Column] = &[
    NAME,
    col(
        "PolicyName",
        "string",
        "PolicyName indicates the policy definition which the policy \
         binding binded to",
        |o| json!(s(o, "/spec/policyName")),
    ),
    col(
        "ParamRef",
        "string",
        "ParamRef indicates the param resource which sets the \
         configration param",
        |o| {
            let Some(r) = o.pointer("/spec/paramRef") else {
                return json!("<unset>");
            };
            json!(
                match (s(r, "/name"), s(r, "/namespace"), r.get("selector")) {
                    ("", _, Some(sel)) => crate::selector::label_selector_string(sel),
                    ("", _, None) => "<unset>".to_owned(),
                    (name, "", _) => format!("*/{name}"),
                    (name, ns, _) => format!("{ns}/{name}"),
                }
            )
        },
    ),
    AGE,
];

const CSI_DRIVERS: &[Column] = &[
    NAME,
    col(
        "AttachRequired",
        "boolean",
        "attachRequired indicates this CSI volume driver requires an \
         attach operation.",
        |o| flag(o, "/spec/attachRequired", true),
    ),
    col(
        "PodInfoOnMount",
        "boolean",
        "podInfoOnMount indicates this CSI volume driver requires \
         additional pod information (like podName, podUID, etc.) \
         during mount operations.",
        |o| flag(o, "/spec/podInfoOnMount", false),
    ),
    col(
        "StorageCapacity",
        "boolean",
        "storageCapacity indicates that the CSI volume driver wants \
         pod scheduling to consider the storage capacity that the \
         driver deployment will report.",
        |o| flag(o, "/spec/storageCapacity", false),
    ),
    col(
        "TokenRequests",
        "string",
        "tokenRequests indicates the CSI driver needs pods' service \
         account tokens it is mounting volume for to do necessary \
         authentication.",
        |o| {
            json!(
                match o.pointer("/spec/tokenRequests").and_then(Value::as_array) {
                    Some(reqs) => reqs
                        .iter()
                        .map(|r| s(r, "/audience"))
                        .collect::<Vec<_>>()
                        .join(","),
                    None => "<unset>".to_owned(),
                }
            )
        },
    ),
    col(
        "RequiresRepublish",
        "boolean",
        "requiresRepublish indicates the CSI driver wants \
         `NodePublishVolume` being periodically called to reflect any \
         possible change in the mounted volume.",
        |o| flag(o, "/spec/requiresRepublish", false),
    ),
    col(
        "Modes",
        "string",
        "volumeLifecycleModes defines what kind of volumes this CSI \
         volume driver supports.",
        |o| {
            let modes: Vec<&str> = list(o, "/spec/volumeLifecycleModes")
                .iter()
                .filter_map(Value::as_str)
                .collect();
            json!(none_if_empty(&modes.join(",")))
        },
    ),
    AGE,
];

const RESOURCE_CLAIMS: &[Column] = &[
    NAME,
    col(
        "State",
        "string",
        "A summary of the current state (allocated, pending, \
         reserved, etc.).",
        |o| {
            let deleted = crate::model::meta::meta_str(o, "deletionTimestamp").is_some();
            let mut states = Vec::new();
            if deleted {
                states.push("deleted");
            }
            if o.pointer("/status/allocation").is_none() {
                if !deleted {
                    states.push("pending");
                }
            } else {
                states.push("allocated");
                if !list(o, "/status/reservedFor").is_empty() {
                    states.push("reserved");
                }
            }
            json!(states.join(","))
        },
    ),
    AGE,
];

const API_SERVICES: &[Column] = &[
    NAME,
    col(
        "Service",
        "string",
        "The reference to the service that hosts this API endpoint.",
        |o| {
            json!(match o.pointer("/spec/service") {
                Some(svc) if !svc.is_null() =>
                    format!("{}/{}", s(svc, "/namespace"), s(svc, "/name")),
                _ => "Local".to_owned(),
            })
        },
    ),
    col(
        "Available",
        "string",
        "Whether this service is available.",
        |o| {
            let cond = list(o, "/status/conditions")
                .iter()
                .find(|c| c.get("type").and_then(Value::as_str) == Some("Available"));
            json!(match cond {
                None => "Unknown".to_owned(),
                Some(c) => match (s(c, "/status"), s(c, "/reason")) {
                    ("True", _) => "True".to_owned(),
                    (status, "") => status.to_owned(),
                    (status, reason) => format!("{status} ({reason})"),
                },
            })
        },
    ),
    AGE,
];

const FLOW_SCHEMAS: &[Column] = &[
    NAME,
    col(
        "PriorityLevel",
        "string",
        "`name` is the name of the priority level configuration being \
         referenced Required.",
        |o| json!(s(o, "/spec/priorityLevelConfiguration/name")),
    ),
    col(
        "MatchingPrecedence",
        "string",
        "`matchingPrecedence` is used to choose among the FlowSchemas \
         that match a given request.",
        |o| json!(int(o, "/spec/matchingPrecedence")),
    ),
    col(
        "DistinguisherMethod",
        "string",
        "`distinguisherMethod` defines how to compute the flow \
         distinguisher for requests that match this schema.",
        |o| json!(none_if_empty(s(o, "/spec/distinguisherMethod/type"))),
    ),
    AGE,
    col(
        "MissingPL",
        "string",
        "references a broken or non-existent \
         PriorityLevelConfiguration",
        |o| {
            let dangling = list(o, "/status/conditions")
                .iter()
                .find(|c| c.get("type").and_then(Value::as_str) == Some("Dangling"));
            json!(dangling.map(|c| s(c, "/status")).unwrap_or("?"))
        },
    ),
];

const PRIORITY_LEVELS: &[Column] = &[
    NAME,
    col(
        "Type",
        "string",
        "`type` indicates whether this priority level is subject to \
         limitation on request execution.",
        |o| json!(s(o, "/spec/type")),
    ),
    col(
        "NominalConcurrencyShares",
        "string",
        "`nominalConcurrencyShares` (NCS) contributes to the \
         computation of the NominalConcurrencyLimit (NominalCL) of \
         this level.",
        |o| or_unset(o, "/spec/limited/nominalConcurrencyShares", "<none>"),
    ),
    col(
        "Queues",
        "string",
        "`queues` is the number of queues for this priority level.",
        |o| or_unset(o, "/spec/limited/limitResponse/queuing/queues", "<none>"),
    ),
    col(
        "HandSize",
        "string",
        "`handSize` is a small positive number that configures the \
         shuffle sharding of requests into queues.",
        |o| or_unset(o, "/spec/limited/limitResponse/queuing/handSize", "<none>"),
    ),
    col(
        "QueueLengthLimit",
        "string",
        "`queueLengthLimit` is the maximum number of requests allowed \
         to be waiting in a given queue of this priority level at a \
         time.",
        |o| {
            or_unset(
                o,
                "/spec/limited/limitResponse/queuing/queueLengthLimit",
                "<none>",
            )
        },
    ),
    AGE,
];

const RESOURCE_SLICES: &[Column] = &[
    NAME,
    col(
        "Node",
        "string",
        "NodeName identifies the node which provides the resources in \
         this pool.",
        |o| json!(s(o, "/spec/nodeName")),
    ),
    col(
        "Driver",
        "string",
        "Driver identifies the DRA driver providing the capacity \
         information.",
        |o| json!(s(o, "/spec/driver")),
    ),
    col(
        "Pool",
        "string",
        "Name is used to identify the pool.",
        |o| json!(s(o, "/spec/pool/name")),
    ),
    AGE,
];

const ROLE_BINDINGS: &[Column] = &[
    NAME,
    col(
        "Role",
        "string",
        "RoleRef can reference a Role in the current namespace or a \
         ClusterRole in the global namespace.",
        |o| {
            json!(format!(
                "{}/{}",
                s(o, "/roleRef/kind"),
                s(o, "/roleRef/name")
            ))
        },
    ),
    AGE,
    wide("Users", "string", "Users in the roleBinding", |o| {
        subjects(o, "User")
    }),
    wide("Groups", "string", "Groups in the roleBinding", |o| {
        subjects(o, "Group")
    }),
    wide(
        "ServiceAccounts",
        "string",
        "ServiceAccounts in the roleBinding",
        |o| subjects(o, "ServiceAccount"),
    ),
];

/// kube's `SubjectsStrings`: the subjects of one kind, service accounts as `namespace/name`.
fn subjects(o: &Value, kind: &str) -> Value {
    let names: Vec<String> = list(o, "/subjects")
        .iter()
        .filter(|sub| s(sub, "/kind") == kind)
        .map(|sub| match (kind, s(sub, "/namespace")) {
            ("ServiceAccount", ns) if !ns.is_empty() => format!("{ns}/{}", s(sub, "/name")),
            _ => s(sub, "/name").to_owned(),
        })
        .collect();
    json!(names.join(", "))
}

const CONTROLLERS: &[Column] = &[
    NAME,
    col(
        "Phase",
        "string",
        "Loading, Running, Failed or CrashLoop.",
        |o| json!(s(o, "/status/phase")),
    ),
    col(
        "Reconciles",
        "integer",
        "Reconcile calls since the controller was loaded.",
        |o| o.pointer("/status/reconciles").cloned().unwrap_or(json!(0)),
    ),
    col(
        "Errors",
        "integer",
        "Failed reconciles (errors and traps).",
        |o| o.pointer("/status/errors").cloned().unwrap_or(json!(0)),
    ),
    col("Queue", "integer", "Keys waiting to be reconciled.", |o| {
        o.pointer("/status/queueDepth").cloned().unwrap_or(json!(0))
    }),
    AGE,
    wide("Last Error", "string", "The most recent failure.", |o| {
        json!(s(o, "/status/lastError/message"))
    }),
];

#[cfg(test)]
mod tests {
    use super::*;

    /// The column names, `-o wide` ones marked with `*`.
    fn header(group: &str, resource: &str) -> Vec<String> {
        columns(group, resource)
            .iter()
            .map(|c| match c.priority {
                0 => c.name.to_owned(),
                _ => format!("{}*", c.name),
            })
            .collect()
    }

    /// The cells as kubectl shows them; Age (which moves with the clock) as `AGE`.
    fn row(group: &str, resource: &str, obj: &Value) -> Vec<String> {
        columns(group, resource)
            .iter()
            .map(|c| match (c.name, (c.cell)(obj)) {
                ("Age", _) => "AGE".to_owned(),
                (_, Value::String(s)) => s,
                (_, other) => other.to_string(),
            })
            .collect()
    }

    #[test]
    fn every_printer_is_for_a_served_kind_and_names_its_rows() {
        for (group, resource, cols) in PRINTERS {
            assert!(
                crate::builtin::find(group, resource).is_some(),
                "{group}/{resource} is not served"
            );
            assert_eq!(
                cols.iter().filter(|c| c.format == "name").count(),
                1 + usize::from(*resource == "volumeattachments"),
                "{group}/{resource}"
            );
        }
    }

    #[test]
    fn unknown_kinds_print_name_and_age() {
        assert_eq!(header("example.com", "widgets"), ["Name", "Age"]);
        assert_eq!(
            header("rbac.authorization.k8s.io", "roles"),
            ["Name", "Created At"]
        );
        let role = json!({"metadata": {"name": "r", "creationTimestamp": "2026-01-01T00:00:00Z"}});
        assert_eq!(
            row("rbac.authorization.k8s.io", "clusterroles", &role),
            ["r", "2026-01-01T00:00:00Z"]
        );
        assert_eq!(header("", "limitranges"), ["Name", "Created At"]);
    }

    #[test]
    fn nodes_print_like_kubectl() {
        let node = json!({"metadata": {"name": "n1", "labels": {"node-role.kubernetes.io/control-plane": ""}},
                          "status": {"conditions": [{"type": "Ready", "status": "True"}],
                                     "addresses": [{"type": "InternalIP", "address": "10.0.0.1"}],
                                     "nodeInfo": {"kubeletVersion": "v1.34.0"}}});
        assert_eq!(
            header("", "nodes"),
            [
                "Name",
                "Status",
                "Roles",
                "Age",
                "Version",
                "Internal-IP*",
                "External-IP*",
                "OS-Image*",
                "Kernel-Version*",
                "Container-Runtime*"
            ]
        );
        assert_eq!(
            row("", "nodes", &node),
            [
                "n1",
                "Ready",
                "control-plane",
                "AGE",
                "v1.34.0",
                "10.0.0.1",
                "<none>",
                "<unknown>",
                "<unknown>",
                "<unknown>"
            ]
        );
    }

    #[test]
    fn pods_show_their_status_like_kubectl() {
        assert_eq!(
            header("", "pods"),
            [
                "Name",
                "Ready",
                "Status",
                "Restarts",
                "Age",
                "IP*",
                "Node*",
                "Nominated Node*",
                "Readiness Gates*"
            ]
        );
        let creating = json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c"}]},
                              "status": {"phase": "Pending", "containerStatuses": [
                                  {"ready": false, "restartCount": 2, "state": {"waiting": {"reason": "ContainerCreating"}}}]}});
        assert_eq!(
            row("", "pods", &creating),
            [
                "p",
                "0/1",
                "ContainerCreating",
                "2",
                "AGE",
                "<none>",
                "<none>",
                "<none>",
                "<none>"
            ]
        );
        let mut deleting = creating.clone();
        deleting["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
        assert_eq!(pod_status(&deleting), "Terminating");
        assert_eq!(pod_readiness_gates(&creating), "<none>");
    }

    #[test]
    fn pod_status_follows_kubes_print_pod() {
        let status = |st: Value| {
            let pod = json!({"metadata": {"name": "p"},
                "spec": {"initContainers": [{"name": "init"}], "containers": [{"name": "a"}, {"name": "b"}]},
                "status": st});
            (pod_ready(&pod), pod_status(&pod))
        };
        let init_waiting = json!({"phase": "Pending", "initContainerStatuses": [
            {"name": "init", "state": {"waiting": {"reason": "PodInitializing"}}}]});
        assert_eq!(status(init_waiting), (json!("0/2"), json!("Init:0/1")));
        let init_crash = json!({"phase": "Pending", "initContainerStatuses": [
            {"name": "init", "state": {"waiting": {"reason": "CrashLoopBackOff"}}}]});
        assert_eq!(status(init_crash).1, "Init:CrashLoopBackOff");
        let init_failed = json!({"phase": "Pending", "initContainerStatuses": [
            {"name": "init", "state": {"terminated": {"exitCode": 3}}}]});
        assert_eq!(status(init_failed).1, "Init:ExitCode:3");
        let running = json!({"phase": "Running", "initContainerStatuses": [
                {"name": "init", "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}],
            "containerStatuses": [
                {"name": "a", "ready": true, "restartCount": 1, "state": {"running": {}},
                 "lastState": {"terminated": {"finishedAt": "2026-01-01T00:00:00Z"}}},
                {"name": "b", "ready": true, "state": {"running": {}}}]});
        assert_eq!(status(running.clone()), (json!("2/2"), json!("Running")));
        let pod = json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "a"}]}, "status": running});
        let restarts = row("", "pods", &pod)[3].clone();
        assert!(
            restarts.starts_with("1 (") && restarts.ends_with(" ago)"),
            "{restarts}"
        );
        let done = json!({"phase": "Succeeded", "containerStatuses": [
            {"name": "a", "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}},
            {"name": "b", "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}]});
        assert_eq!(status(done.clone()), (json!("0/2"), json!("Completed")));
        let mut deleted = json!({"metadata": {"name": "p", "deletionTimestamp": "2026-01-01T00:00:00Z"},
            "spec": {"containers": [{"name": "a"}]}, "status": done});
        assert_eq!(pod_status(&deleted), "Completed");
        deleted["status"] = json!({"phase": "Running", "reason": "NodeLost"});
        assert_eq!(pod_status(&deleted), "Unknown");
        let oom = json!({"phase": "Running", "containerStatuses": [
            {"name": "a", "state": {"terminated": {"exitCode": 137, "reason": "OOMKilled"}}},
            {"name": "b", "state": {"terminated": {"exitCode": 1, "signal": 9}}}]});
        assert_eq!(status(oom).1, "OOMKilled");
        let gated = json!({"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"}]});
        assert_eq!(status(gated).1, "SchedulingGated");
    }

    #[test]
    fn services_print_type_ips_and_ports() {
        assert_eq!(
            header("", "services"),
            [
                "Name",
                "Type",
                "Cluster-IP",
                "External-IP",
                "Port(s)",
                "Age",
                "Selector*"
            ]
        );
        let cluster_ip = json!({"metadata": {"name": "web"}, "spec": {"type": "ClusterIP",
            "clusterIP": "10.96.0.10", "clusterIPs": ["10.96.0.10"], "selector": {"tier": "fe", "app": "web"},
            "ports": [{"port": 80, "protocol": "TCP"}, {"port": 53, "protocol": "UDP"}]}});
        assert_eq!(
            row("", "services", &cluster_ip),
            [
                "web",
                "ClusterIP",
                "10.96.0.10",
                "<none>",
                "80/TCP,53/UDP",
                "AGE",
                "app=web,tier=fe"
            ]
        );
        let node_port = json!({"metadata": {"name": "np"}, "spec": {"type": "NodePort", "clusterIPs": ["10.96.0.11"],
            "externalIPs": ["1.2.3.4"], "ports": [{"port": 80, "nodePort": 30080, "protocol": "TCP"}]}});
        assert_eq!(
            row("", "services", &node_port),
            [
                "np",
                "NodePort",
                "10.96.0.11",
                "1.2.3.4",
                "80:30080/TCP",
                "AGE",
                "<none>"
            ]
        );
        let lb = json!({"metadata": {"name": "lb"}, "spec": {"type": "LoadBalancer", "clusterIPs": ["10.96.0.12"],
            "ports": [{"port": 443, "nodePort": 31443, "protocol": "TCP"}]}});
        assert_eq!(row("", "services", &lb)[3], "<pending>");
        let mut served = lb.clone();
        served["status"] = json!({"loadBalancer": {"ingress": [{"ip": "5.6.7.8"}, {"hostname": "lb.example.com"}]}});
        assert_eq!(row("", "services", &served)[3], "5.6.7.8,lb.example.com");
        let external = json!({"metadata": {"name": "ext"}, "spec": {"type": "ExternalName", "externalName": "db.example.com"}});
        assert_eq!(
            row("", "services", &external),
            [
                "ext",
                "ExternalName",
                "<none>",
                "db.example.com",
                "<none>",
                "AGE",
                "<none>"
            ]
        );
        let headless = json!({"metadata": {"name": "h"}, "spec": {"type": "ClusterIP", "clusterIP": "None", "clusterIPs": ["None"]}});
        assert_eq!(row("", "services", &headless)[2], "None");
    }

    #[test]
    fn jobs_print_status_completions_and_duration() {
        assert_eq!(
            header("batch", "jobs"),
            [
                "Name",
                "Status",
                "Completions",
                "Duration",
                "Age",
                "Containers*",
                "Images*",
                "Selector*"
            ]
        );
        let done = json!({"metadata": {"name": "pi"},
            "spec": {"completions": 1, "parallelism": 1,
                     "selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": "u1"}},
                     "template": {"spec": {"containers": [{"name": "pi", "image": "perl:5.34"}]}}},
            "status": {"succeeded": 1, "startTime": "2026-01-01T00:00:00Z", "completionTime": "2026-01-01T00:00:09Z",
                       "conditions": [{"type": "SuccessCriteriaMet", "status": "True"}, {"type": "Complete", "status": "True"}]}});
        assert_eq!(
            row("batch", "jobs", &done),
            [
                "pi",
                "Complete",
                "1/1",
                "9s",
                "AGE",
                "pi",
                "perl:5.34",
                "batch.kubernetes.io/controller-uid=u1"
            ]
        );
        let queue = json!({"metadata": {"name": "q"}, "spec": {"parallelism": 3}, "status": {"succeeded": 0}});
        assert_eq!(
            &row("batch", "jobs", &queue)[1..4],
            ["Running", "0/1 of 3", ""]
        );
        let failed = json!({"metadata": {"name": "f"}, "spec": {"completions": 2},
            "status": {"conditions": [{"type": "Failed", "status": "True"}]}});
        assert_eq!(&row("batch", "jobs", &failed)[1..3], ["Failed", "0/2"]);
        let suspended = json!({"metadata": {"name": "s"}, "status": {"conditions": [{"type": "Suspended", "status": "True"}]}});
        assert_eq!(
            &row("batch", "jobs", &suspended)[1..3],
            ["Suspended", "0/1"]
        );
    }

    #[test]
    fn cronjobs_print_schedule_and_last_run() {
        assert_eq!(
            header("batch", "cronjobs"),
            [
                "Name",
                "Schedule",
                "Timezone",
                "Suspend",
                "Active",
                "Last Schedule",
                "Age",
                "Containers*",
                "Images*",
                "Selector*"
            ]
        );
        let cj = json!({"metadata": {"name": "hello"}, "spec": {"schedule": "*/5 * * * *", "suspend": false,
            "jobTemplate": {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}}}}});
        assert_eq!(
            row("batch", "cronjobs", &cj),
            [
                "hello",
                "*/5 * * * *",
                "<none>",
                "False",
                "0",
                "<none>",
                "AGE",
                "c",
                "busybox",
                "<none>"
            ]
        );
        let zoned = json!({"metadata": {"name": "z"}, "spec": {"schedule": "0 0 * * *", "timeZone": "Etc/UTC"},
            "status": {"active": [{"name": "z-1"}]}});
        assert_eq!(
            &row("batch", "cronjobs", &zoned)[2..5],
            ["Etc/UTC", "<unset>", "1"]
        );
    }

    #[test]
    fn apps_workloads_print_replica_counts() {
        assert_eq!(
            header("apps", "statefulsets"),
            ["Name", "Ready", "Age", "Containers*", "Images*"]
        );
        let sts = json!({"metadata": {"name": "db"}, "spec": {"replicas": 3,
            "template": {"spec": {"containers": [{"name": "pg", "image": "postgres:16"}]}}}, "status": {"readyReplicas": 2}});
        assert_eq!(
            row("apps", "statefulsets", &sts),
            ["db", "2/3", "AGE", "pg", "postgres:16"]
        );
        assert_eq!(
            header("apps", "daemonsets"),
            [
                "Name",
                "Desired",
                "Current",
                "Ready",
                "Up-to-date",
                "Available",
                "Node Selector",
                "Age",
                "Containers*",
                "Images*",
                "Selector*"
            ]
        );
        let ds = json!({"metadata": {"name": "agent"}, "spec": {"selector": {"matchLabels": {"app": "agent"}},
            "template": {"spec": {"nodeSelector": {"kubernetes.io/os": "linux"}, "containers": [{"name": "a", "image": "agent:1"}]}}},
            "status": {"desiredNumberScheduled": 2, "currentNumberScheduled": 2, "numberReady": 1, "updatedNumberScheduled": 2, "numberAvailable": 1}});
        assert_eq!(
            row("apps", "daemonsets", &ds),
            [
                "agent",
                "2",
                "2",
                "1",
                "2",
                "1",
                "kubernetes.io/os=linux",
                "AGE",
                "a",
                "agent:1",
                "app=agent"
            ]
        );
        let rc = json!({"metadata": {"name": "rc"}, "spec": {"replicas": 2, "selector": {"app": "x"},
            "template": {"spec": {"containers": [{"name": "x", "image": "x:1"}]}}}, "status": {"replicas": 2, "readyReplicas": 1}});
        assert_eq!(
            row("", "replicationcontrollers", &rc),
            ["rc", "2", "2", "1", "AGE", "x", "x:1", "app=x"]
        );
        let rev = json!({"metadata": {"name": "db-7d9", "ownerReferences": [
            {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "db", "controller": true}]}, "revision": 2});
        assert_eq!(
            row("apps", "controllerrevisions", &rev),
            ["db-7d9", "statefulset.apps/db", "2", "AGE"]
        );
    }

    #[test]
    fn volumes_and_claims_print_like_kubectl() {
        assert_eq!(
            header("", "persistentvolumeclaims"),
            [
                "Name",
                "Status",
                "Volume",
                "Capacity",
                "Access Modes",
                "StorageClass",
                "VolumeAttributesClass",
                "Age",
                "VolumeMode*"
            ]
        );
        let bound = json!({"metadata": {"name": "data"}, "spec": {"volumeName": "pv1", "storageClassName": "standard",
            "volumeMode": "Filesystem", "accessModes": ["ReadWriteOnce"]},
            "status": {"phase": "Bound", "capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteMany", "ReadWriteOnce"]}});
        assert_eq!(
            row("", "persistentvolumeclaims", &bound),
            [
                "data",
                "Bound",
                "pv1",
                "1Gi",
                "RWO,RWX",
                "standard",
                "<unset>",
                "AGE",
                "Filesystem"
            ]
        );
        let pending =
            json!({"metadata": {"name": "p"}, "spec": {}, "status": {"phase": "Pending"}});
        assert_eq!(
            row("", "persistentvolumeclaims", &pending),
            ["p", "Pending", "", "", "", "", "<unset>", "AGE", "<unset>"]
        );
        assert_eq!(
            header("", "persistentvolumes"),
            [
                "Name",
                "Capacity",
                "Access Modes",
                "Reclaim Policy",
                "Status",
                "Claim",
                "StorageClass",
                "VolumeAttributesClass",
                "Reason",
                "Age",
                "VolumeMode*"
            ]
        );
        let pv = json!({"metadata": {"name": "pv1"}, "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOncePod"],
            "persistentVolumeReclaimPolicy": "Retain", "claimRef": {"namespace": "default", "name": "data"},
            "storageClassName": "standard", "volumeMode": "Filesystem"}, "status": {"phase": "Bound"}});
        assert_eq!(
            row("", "persistentvolumes", &pv),
            [
                "pv1",
                "1Gi",
                "RWOP",
                "Retain",
                "Bound",
                "default/data",
                "standard",
                "<unset>",
                "",
                "AGE",
                "Filesystem"
            ]
        );
    }

    #[test]
    fn networking_kinds_print_like_kubectl() {
        assert_eq!(
            header("networking.k8s.io", "ingresses"),
            ["Name", "Class", "Hosts", "Address", "Ports", "Age"]
        );
        let ing = json!({"metadata": {"name": "web"}, "spec": {"ingressClassName": "nginx",
            "rules": [{"host": "a.example.com"}, {"host": "b.example.com"}], "tls": [{"hosts": ["a.example.com"]}]},
            "status": {"loadBalancer": {"ingress": [{"ip": "10.0.0.5"}]}}});
        assert_eq!(
            row("networking.k8s.io", "ingresses", &ing),
            [
                "web",
                "nginx",
                "a.example.com,b.example.com",
                "10.0.0.5",
                "80, 443",
                "AGE"
            ]
        );
        let bare = json!({"metadata": {"name": "any"}, "spec": {"defaultBackend": {"service": {"name": "s"}}}});
        assert_eq!(
            row("networking.k8s.io", "ingresses", &bare),
            ["any", "<none>", "*", "", "80", "AGE"]
        );
        let many = json!({"metadata": {"name": "m"}, "spec": {"rules": [{"host": "a"}, {"host": "b"}, {"host": "c"}, {"host": "d"}]}});
        assert_eq!(
            row("networking.k8s.io", "ingresses", &many)[2],
            "a,b,c + 1 more..."
        );
        let class = json!({"metadata": {"name": "nginx"}, "spec": {"controller": "k8s.io/ingress-nginx",
            "parameters": {"apiGroup": "k8s.example.com", "kind": "IngressParameters", "name": "p"}}});
        assert_eq!(
            row("networking.k8s.io", "ingressclasses", &class),
            [
                "nginx",
                "k8s.io/ingress-nginx",
                "IngressParameters.k8s.example.com/p",
                "AGE"
            ]
        );
        let np = json!({"metadata": {"name": "deny"}, "spec": {"podSelector": {}}});
        assert_eq!(
            row("networking.k8s.io", "networkpolicies", &np),
            ["deny", "<none>", "AGE"]
        );
        let np = json!({"metadata": {"name": "db"}, "spec": {"podSelector": {"matchLabels": {"app": "db"}}}});
        assert_eq!(
            row("networking.k8s.io", "networkpolicies", &np)[1],
            "app=db"
        );
        let ep = json!({"metadata": {"name": "web"}, "subsets": [{"addresses": [{"ip": "10.1.0.1"}, {"ip": "10.1.0.2"}],
            "ports": [{"port": 8080}, {"port": 9090}]}]});
        assert_eq!(
            row("", "endpoints", &ep),
            [
                "web",
                "10.1.0.1:8080,10.1.0.2:8080,10.1.0.1:9090 + 1 more...",
                "AGE"
            ]
        );
        assert_eq!(
            row("", "endpoints", &json!({"metadata": {"name": "e"}}))[1],
            "<none>"
        );
        let slice = json!({"metadata": {"name": "web-abc"}, "addressType": "IPv4", "ports": [{"port": 8080}],
            "endpoints": [{"addresses": ["10.1.0.1"]}, {"addresses": ["10.1.0.2"]}]});
        assert_eq!(
            row("discovery.k8s.io", "endpointslices", &slice),
            ["web-abc", "IPv4", "8080", "10.1.0.1,10.1.0.2", "AGE"]
        );
        let empty = json!({"metadata": {"name": "e"}, "addressType": "IPv6"});
        assert_eq!(
            row("discovery.k8s.io", "endpointslices", &empty),
            ["e", "IPv6", "<unset>", "<unset>", "AGE"]
        );
        let named = json!({"metadata": {"name": "n"}, "addressType": "FQDN", "ports": [{"name": "http"}, {}]});
        assert_eq!(
            row("discovery.k8s.io", "endpointslices", &named)[2],
            "http,*"
        );
    }

    #[test]
    fn autoscaling_and_disruption_budgets_print_like_kubectl() {
        assert_eq!(
            header("autoscaling", "horizontalpodautoscalers"),
            [
                "Name",
                "Reference",
                "Targets",
                "MinPods",
                "MaxPods",
                "Replicas",
                "Age"
            ]
        );
        let hpa = json!({"metadata": {"name": "web"}, "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"},
            "minReplicas": 1, "maxReplicas": 10,
            "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}},
                        {"type": "Resource", "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "500Mi"}}}]},
            "status": {"currentReplicas": 2, "currentMetrics": [
                {"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": 40, "averageValue": "100m"}}}]}});
        assert_eq!(
            row("autoscaling", "horizontalpodautoscalers", &hpa),
            [
                "web",
                "Deployment/web",
                "cpu: 40%/80%, memory: <unknown>/500Mi",
                "1",
                "10",
                "2",
                "AGE"
            ]
        );
        let none = json!({"metadata": {"name": "n"}, "spec": {"scaleTargetRef": {"kind": "StatefulSet", "name": "db"}, "maxReplicas": 3}});
        assert_eq!(
            row("autoscaling", "horizontalpodautoscalers", &none),
            ["n", "StatefulSet/db", "<none>", "<unset>", "3", "0", "AGE"]
        );
        let external = json!({"type": "External", "external": {"metric": {"name": "q"}, "target": {"type": "AverageValue", "averageValue": "30"}}});
        assert_eq!(hpa_metric(&external, None), "<unknown>/30 (avg)");
        assert_eq!(
            header("policy", "poddisruptionbudgets"),
            [
                "Name",
                "Min Available",
                "Max Unavailable",
                "Allowed Disruptions",
                "Age"
            ]
        );
        let pdb = json!({"metadata": {"name": "web"}, "spec": {"minAvailable": "50%"}, "status": {"disruptionsAllowed": 1}});
        assert_eq!(
            row("policy", "poddisruptionbudgets", &pdb),
            ["web", "50%", "N/A", "1", "AGE"]
        );
        let pdb = json!({"metadata": {"name": "db"}, "spec": {"maxUnavailable": 1}});
        assert_eq!(
            row("policy", "poddisruptionbudgets", &pdb)[1..4],
            ["N/A", "1", "0"]
        );
    }

    #[test]
    fn cluster_scoped_classes_print_like_kubectl() {
        assert_eq!(
            header("storage.k8s.io", "storageclasses"),
            [
                "Name",
                "Provisioner",
                "ReclaimPolicy",
                "VolumeBindingMode",
                "AllowVolumeExpansion",
                "Age"
            ]
        );
        let sc = json!({"metadata": {"name": "standard", "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}},
            "provisioner": "rancher.io/local-path", "volumeBindingMode": "WaitForFirstConsumer"});
        assert_eq!(
            row("storage.k8s.io", "storageclasses", &sc),
            [
                "standard (default)",
                "rancher.io/local-path",
                "Delete",
                "WaitForFirstConsumer",
                "false",
                "AGE"
            ]
        );
        assert_eq!(
            header("scheduling.k8s.io", "priorityclasses"),
            ["Name", "Value", "Global-Default", "Age", "PreemptionPolicy"]
        );
        let pc = json!({"metadata": {"name": "high"}, "value": 1000000, "globalDefault": false, "preemptionPolicy": "PreemptLowerPriority"});
        assert_eq!(
            row("scheduling.k8s.io", "priorityclasses", &pc),
            ["high", "1000000", "false", "AGE", "PreemptLowerPriority"]
        );
        let vap = json!({"metadata": {"name": "v"}, "spec": {"validations": [{"expression": "true"}],
            "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"}}});
        assert_eq!(
            row(
                "admissionregistration.k8s.io",
                "validatingadmissionpolicies",
                &vap
            ),
            ["v", "1", "v1/ConfigMap", "AGE"]
        );
        let binding = json!({"metadata": {"name": "b"}, "spec": {"policyName": "v", "paramRef": {"name": "cfg"}}});
        assert_eq!(
            row(
                "admissionregistration.k8s.io",
                "validatingadmissionpolicybindings",
                &binding
            ),
            ["b", "v", "*/cfg", "AGE"]
        );
        let driver = json!({"metadata": {"name": "csi.example.com"}, "spec": {"volumeLifecycleModes": ["Persistent"]}});
        assert_eq!(
            row("storage.k8s.io", "csidrivers", &driver),
            [
                "csi.example.com",
                "true",
                "false",
                "false",
                "<unset>",
                "false",
                "Persistent",
                "AGE"
            ]
        );
        let claim = json!({"metadata": {"name": "gpu"}, "status": {"allocation": {}, "reservedFor": [{"name": "p"}]}});
        assert_eq!(
            row("resource.k8s.io", "resourceclaims", &claim),
            ["gpu", "allocated,reserved", "AGE"]
        );
        let rc = json!({"metadata": {"name": "gvisor"}, "handler": "runsc"});
        assert_eq!(
            row("node.k8s.io", "runtimeclasses", &rc),
            ["gvisor", "runsc", "AGE"]
        );
        let lease = json!({"metadata": {"name": "l"}, "spec": {"holderIdentity": "node-1"}});
        assert_eq!(
            row("coordination.k8s.io", "leases", &lease),
            ["l", "node-1", "AGE"]
        );
        let wh = json!({"metadata": {"name": "w"}, "webhooks": [{"name": "a.example.com"}, {"name": "b.example.com"}]});
        assert_eq!(
            row(
                "admissionregistration.k8s.io",
                "validatingwebhookconfigurations",
                &wh
            ),
            ["w", "2", "AGE"]
        );
        let api = json!({"metadata": {"name": "v1beta1.metrics.k8s.io"}, "spec": {"service": {"namespace": "kube-system", "name": "metrics-server"}},
            "status": {"conditions": [{"type": "Available", "status": "False", "reason": "MissingEndpoints"}]}});
        assert_eq!(
            row("apiregistration.k8s.io", "apiservices", &api),
            [
                "v1beta1.metrics.k8s.io",
                "kube-system/metrics-server",
                "False (MissingEndpoints)",
                "AGE"
            ]
        );
        let local = json!({"metadata": {"name": "v1.apps"}, "status": {"conditions": [{"type": "Available", "status": "True"}]}});
        assert_eq!(
            row("apiregistration.k8s.io", "apiservices", &local)[1..3],
            ["Local", "True"]
        );
    }

    #[test]
    fn csrs_print_their_condition() {
        assert_eq!(
            header("certificates.k8s.io", "certificatesigningrequests"),
            [
                "Name",
                "Age",
                "SignerName",
                "Requestor",
                "RequestedDuration",
                "Condition"
            ]
        );
        let csr = json!({"metadata": {"name": "c"}, "spec": {"signerName": "kubernetes.io/kube-apiserver-client",
            "username": "alice", "expirationSeconds": 86400},
            "status": {"conditions": [{"type": "Approved", "status": "True"}], "certificate": "LS0t"}});
        assert_eq!(
            row("certificates.k8s.io", "certificatesigningrequests", &csr),
            [
                "c",
                "AGE",
                "kubernetes.io/kube-apiserver-client",
                "alice",
                "24h",
                "Approved,Issued"
            ]
        );
        let pending = json!({"metadata": {"name": "p"}, "spec": {"username": "bob"}});
        assert_eq!(
            row(
                "certificates.k8s.io",
                "certificatesigningrequests",
                &pending
            )[2..],
            ["<none>", "bob", "<none>", "Pending"]
        );
    }

    #[test]
    fn rbac_bindings_print_role_and_subjects() {
        assert_eq!(
            header("rbac.authorization.k8s.io", "rolebindings"),
            [
                "Name",
                "Role",
                "Age",
                "Users*",
                "Groups*",
                "ServiceAccounts*"
            ]
        );
        let rb = json!({"metadata": {"name": "rb"}, "roleRef": {"kind": "ClusterRole", "name": "view"},
            "subjects": [{"kind": "User", "name": "alice"}, {"kind": "User", "name": "bob"},
                         {"kind": "Group", "name": "devs"}, {"kind": "ServiceAccount", "namespace": "ci", "name": "runner"}]});
        assert_eq!(
            row("rbac.authorization.k8s.io", "clusterrolebindings", &rb),
            [
                "rb",
                "ClusterRole/view",
                "AGE",
                "alice, bob",
                "devs",
                "ci/runner"
            ]
        );
    }

    #[test]
    fn quotas_print_used_over_hard() {
        assert_eq!(
            header("", "resourcequotas"),
            ["Name", "Request", "Limit", "Age"]
        );
        let q = json!({"metadata": {"name": "q"}, "status": {
            "hard": {"pods": "10", "requests.cpu": "2", "limits.memory": "2Gi"},
            "used": {"pods": "3", "limits.memory": "512Mi"}}});
        assert_eq!(
            row("", "resourcequotas", &q),
            [
                "q",
                "pods: 3/10, requests.cpu: 0/2",
                "limits.memory: 512Mi/2Gi",
                "AGE"
            ]
        );
    }

    #[test]
    fn events_print_like_kubectl() {
        assert_eq!(
            header("", "events"),
            [
                "Last Seen",
                "Type",
                "Reason",
                "Object",
                "Subobject*",
                "Source*",
                "Message",
                "First Seen*",
                "Count*",
                "Name*"
            ]
        );
        let ev = json!({"metadata": {"name": "web.1"}, "type": "Normal", "reason": "Scheduled",
            "involvedObject": {"kind": "Pod", "name": "web"}, "source": {"component": "scheduler"},
            "message": "assigned\n", "count": 0});
        let cells = row("", "events", &ev);
        assert_eq!(
            cells[1..8],
            [
                "Normal",
                "Scheduled",
                "pod/web",
                "",
                "scheduler",
                "assigned",
                "<unknown>"
            ]
        );
        assert_eq!(cells[8..], ["1", "web.1"]);
    }
}
