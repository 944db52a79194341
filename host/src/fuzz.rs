//! A coverage-free mutational fuzzer for every parser that takes untrusted bytes (issue 11,
//! "Hardening"). `cargo fuzz` needs a nightly toolchain; this is the stable, property-based
//! equivalent and runs as ordinary unit tests, one test per target:
//!
//! ```sh
//! cargo test -p turtles --lib fuzz                                   # the bounded run (seconds)
//! TURTLES_FUZZ_ITERS=2000000 cargo test -p turtles --release --lib fuzz -- --nocapture
//! TURTLES_FUZZ_REPRO=target/fuzz-failures/FILE cargo test -p turtles --lib fuzz::repro -- --nocapture
//! ```
//!
//! Each target starts from a corpus of valid inputs (real objects, patches, selectors, CEL
//! rules), runs them and a set of deep-nesting inputs, then mutates: bit flips, byte inserts and
//! deletes, duplicated ranges, splices of two inputs, dictionary tokens, nesting bursts and, for
//! JSON inputs, mutations of the parsed tree (replace, delete, insert, splice, deepen). Inputs a
//! target accepts join the pool that later mutations start from. The checks on every input:
//!
//! * no panic: each input runs under `catch_unwind`; a panic is a finding;
//! * no stack overflow: the fuzz thread has the stack of a tokio worker (2 MiB), where the real
//!   handlers run; an overflow aborts the test process, which fails the run;
//! * a time bound: an input taking longer than `TURTLES_FUZZ_SLOW_MS` (1,000 ms) plus 20 µs per
//!   byte in each of three runs is reported (linear work passes at any size, super-linear work
//!   does not), one over ten times the bound fails the run (a busy machine does not make work ten
//!   times slower; a quadratic parser does), and a watchdog fails the test when one input runs
//!   ten times the bound without returning.
//!
//! Findings are written to `target/fuzz-failures/` (`$CARGO_TARGET_DIR` if set): the raw input
//! (`<target>-s<seed>-i<iteration>.<kind>`) and a `.txt` beside it with the message and the
//! command that replays it. Runs are deterministic: the seed (`TURTLES_FUZZ_SEED`, printed) and
//! the iteration number reproduce an input exactly; `TURTLES_FUZZ_TRACE=1` writes every input to
//! `<target>.current` before running it, for crashes that kill the process (stack overflows).
//!
//! Environment: `TURTLES_FUZZ_ITERS` (mutated inputs per target; the default is per target,
//! sized for a few seconds in a debug build), `TURTLES_FUZZ_SEED` (decimal or `0x` hex),
//! `TURTLES_FUZZ_SLOW_MS`, `TURTLES_FUZZ_STACK_KB`, `TURTLES_FUZZ_TRACE`, `TURTLES_FUZZ_REPRO`,
//! `TURTLES_FUZZ_STRICT` (also fail on slow inputs and on *contained* panics: panics the code
//! under test catches itself, like the `cel` crate's parser panics that the schema code turns into
//! errors; without it they are saved and listed as notes).

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Once};
use std::time::{Duration, Instant};

use base64::Engine as _;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};

use crate::api::handlers;
use crate::api::protobuf;
use crate::model::{meta, workloads, Registry, ResourceInfo};
use crate::patch::{self, PatchType};
use crate::schema::Schema;
use crate::selector::{FieldSelector, LabelSelector};
use crate::service::{self, Filter, Service};

// ---------------------------------------------------------------------------------------------
// Configuration
// ---------------------------------------------------------------------------------------------

/// The seed used when `TURTLES_FUZZ_SEED` is unset (fixed, so the bounded run is reproducible).
const DEFAULT_SEED: u64 = 0x7475_7274_6c65_7331;

struct Config {
    iters: Option<u64>,
    seed: u64,
    slow: Duration,
    stack: usize,
    trace: bool,
    strict: bool,
}

fn env_u64(name: &str) -> Option<u64> {
    let raw = std::env::var(name).ok()?;
    let raw = raw.trim().replace('_', "");
    let parsed = match raw.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => raw.parse(),
    };
    match parsed {
        Ok(n) => Some(n),
        Err(_) => panic!("{name}={raw:?} is not a number"),
    }
}

fn config() -> Config {
    Config {
        iters: env_u64("TURTLES_FUZZ_ITERS"),
        seed: env_u64("TURTLES_FUZZ_SEED").unwrap_or(DEFAULT_SEED),
        slow: Duration::from_millis(env_u64("TURTLES_FUZZ_SLOW_MS").unwrap_or(1000)),
        stack: env_u64("TURTLES_FUZZ_STACK_KB").unwrap_or(2048) as usize * 1024,
        trace: std::env::var("TURTLES_FUZZ_TRACE").is_ok_and(|v| !v.is_empty() && v != "0"),
        strict: std::env::var("TURTLES_FUZZ_STRICT").is_ok_and(|v| !v.is_empty() && v != "0"),
    }
}

/// How long one input may take: the configured bound plus 20 µs per byte, so that parsers
/// linear in their input pass with inputs of any size and super-linear ones do not.
fn time_bound(cfg: &Config, len: usize) -> Duration {
    cfg.slow + Duration::from_micros(20) * u32::try_from(len).unwrap_or(u32::MAX)
}

/// `target/fuzz-failures` of this workspace (or of `$CARGO_TARGET_DIR`).
fn failure_dir() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target"));
    target.join("fuzz-failures")
}

fn name_hash(s: &str) -> u64 {
    // FNV-1a: a stable per-target stream from one seed.
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

// ---------------------------------------------------------------------------------------------
// Panic capture
// ---------------------------------------------------------------------------------------------

thread_local! {
    /// Set on fuzz threads: panics are recorded here instead of printed.
    static QUIET: Cell<bool> = const { Cell::new(false) };
    static LAST_PANIC: RefCell<Option<String>> = const { RefCell::new(None) };
    /// Messages of panics the code under test caught itself (see [`check_contained`]).
    static CONTAINED: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
}

/// The last panic on a `cel` helper thread (message and location), for contained findings.
static CEL_PANIC: Mutex<Option<String>> = Mutex::new(None);

/// At most 300 characters of `s` (messages can quote a whole input).
fn short(s: &str) -> String {
    match s.char_indices().nth(300) {
        Some((i, _)) => format!("{}...", &s[..i]),
        None => s.to_string(),
    }
}

/// Fuzz runs in progress (panics on the `cel` helper threads are printed once per location
/// while any runs).
static ACTIVE: AtomicUsize = AtomicUsize::new(0);

fn panic_text(payload: &dyn std::any::Any) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "<non-string panic payload>".to_string()
    }
}

fn install_panic_hook() {
    static ONCE: Once = Once::new();
    static SEEN: Mutex<Vec<String>> = Mutex::new(Vec::new());
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let location = info
                .location()
                .map(|l| format!("{}:{}:{}", l.file(), l.line(), l.column()))
                .unwrap_or_default();
            let text = format!("{} (at {location})", panic_text(info.payload()));
            if QUIET.get() {
                LAST_PANIC.set(Some(text));
                return;
            }
            let helper = std::thread::current().name() == Some("cel");
            if helper && ACTIVE.load(Ordering::Relaxed) > 0 {
                // Contained by the CEL code's own catch_unwind; the target reports the input.
                *CEL_PANIC.lock().unwrap_or_else(|p| p.into_inner()) = Some(short(&text));
                let mut seen = SEEN.lock().unwrap_or_else(|p| p.into_inner());
                if !seen.contains(&location) {
                    seen.push(location);
                    eprintln!("fuzz: contained panic on a CEL thread: {text}");
                }
                return;
            }
            previous(info);
        }));
    });
}

// ---------------------------------------------------------------------------------------------
// Targets
// ---------------------------------------------------------------------------------------------

/// Runs one input; `true` when the input was accepted (it then joins the mutation pool).
type Runner = Box<dyn FnMut(&[u8]) -> bool>;

/// How structured mutations read and write a target's inputs as JSON.
struct JsonCodec {
    decode: fn(&[u8]) -> Option<Value>,
    encode: fn(&Value) -> Option<Vec<u8>>,
}

const JSON: JsonCodec = JsonCodec {
    decode: |b| serde_json::from_slice(b).ok(),
    encode: |v| serde_json::to_vec(v).ok(),
};

struct Target {
    name: &'static str,
    /// Mutated inputs when `TURTLES_FUZZ_ITERS` is unset (the bounded run).
    default_iters: u64,
    seeds: fn() -> Vec<Vec<u8>>,
    /// Tokens inserted by mutations, in addition to [`DICT`].
    dict: &'static [&'static str],
    json: Option<JsonCodec>,
    runner: fn() -> Runner,
}

/// Tokens every target's mutations insert.
const DICT: &[&str] = &[
    "{",
    "}",
    "[",
    "]",
    "\"",
    "\\",
    "\\u0000",
    "\\ud800",
    "\\udfff",
    "\\\"",
    ",",
    ":",
    "(",
    ")",
    "!",
    "=",
    "==",
    "!=",
    "in",
    "notin",
    "/",
    "~0",
    "~1",
    "$patch",
    "$retainKeys",
    "1e999",
    "-1e999",
    "-0",
    "0",
    "-1",
    "1.5e308",
    "9223372036854775807",
    "-9223372036854775808",
    "18446744073709551615",
    "18446744073709551616",
    "null",
    "true",
    "false",
    "\"\"",
    "{}",
    "[]",
    "\u{0}",
    "\u{7f}",
    "\u{80}",
    "\u{ff}",
    "é",
    "İ",
    "ß",
    "K",
    "日本",
    "\u{200b}",
    "\u{10ffff}",
    "\u{fffd}",
    "\r\n",
    "\t",
    " ",
    "'",
    "%",
    "%00",
    "%ff",
    "..",
    "*",
    "?",
    "@",
    "#",
    "&",
    "|",
];

/// Openers that nesting bursts repeat (hundreds to thousands of times).
const NESTERS: &[&str] = &[
    "[",
    "{\"a\":",
    "{\"spec\":",
    "[{\"name\":\"x\",\"c\":",
    "(",
    "!",
    "-",
    "[[",
    "a in (",
    "self.a.all(x, ",
    "!(",
    "[0][",
];

fn str_input(b: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(b)
}

fn strings(v: &[&str]) -> Vec<Vec<u8>> {
    v.iter().map(|s| s.as_bytes().to_vec()).collect()
}

fn values(v: Vec<Value>) -> Vec<Vec<u8>> {
    v.iter().map(|v| serde_json::to_vec(v).unwrap()).collect()
}

// --- Seed objects -----------------------------------------------------------------------------

fn pod() -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {
            "name": "web-1", "namespace": "default", "uid": "0b1c6f5e-5c9a-4f55-9d0e-3f1b7c7d2a10",
            "resourceVersion": "42", "generation": 1,
            "creationTimestamp": "2024-01-01T00:00:00Z",
            "labels": {"app": "web", "tier": "frontend", "example.com/part-of": "shop"},
            "annotations": {"a/b": "c", "kubectl.kubernetes.io/last-applied-configuration": "{}"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-5d4c",
                "uid": "11111111-2222-3333-4444-555555555555", "controller": true, "blockOwnerDeletion": true}],
            "finalizers": ["example.com/cleanup"]
        },
        "spec": {
            "nodeName": "node-1", "restartPolicy": "Always", "serviceAccountName": "default",
            "terminationGracePeriodSeconds": 30, "dnsPolicy": "ClusterFirst",
            "containers": [{
                "name": "nginx", "image": "nginx:1.27", "imagePullPolicy": "IfNotPresent",
                "args": ["--port", "80"],
                "ports": [{"containerPort": 80, "protocol": "TCP", "name": "http"}],
                "env": [{"name": "A", "value": "1"},
                        {"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
                "resources": {"limits": {"cpu": "500m", "memory": "128Mi"}, "requests": {"cpu": "100m"}},
                "volumeMounts": [{"name": "data", "mountPath": "/data"}],
                "readinessProbe": {"httpGet": {"path": "/", "port": 80}, "periodSeconds": 5}
            }, {
                "name": "sidecar", "image": "busybox", "command": ["sleep", "3600"]
            }],
            "volumes": [{"name": "data", "emptyDir": {}},
                        {"name": "cfg", "configMap": {"name": "web-config", "items": [{"key": "a", "path": "a"}]}}],
            "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}],
            "nodeSelector": {"kubernetes.io/os": "linux"}
        },
        "status": {
            "phase": "Running", "podIP": "10.0.0.5", "hostIP": "192.168.1.10",
            "startTime": "2024-01-01T00:00:00Z",
            "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2024-01-01T00:00:05Z"}],
            "containerStatuses": [{"name": "nginx", "ready": true, "restartCount": 0, "image": "nginx:1.27",
                "imageID": "", "started": true, "state": {"running": {"startedAt": "2024-01-01T00:00:04Z"}}}]
        }
    })
}

fn pod_template() -> Value {
    let p = pod();
    json!({"metadata": {"labels": {"app": "web"}}, "spec": p["spec"]})
}

fn deployment() -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"}, "generation": 3},
        "spec": {
            "replicas": 3, "revisionHistoryLimit": 10, "progressDeadlineSeconds": 600,
            "selector": {"matchLabels": {"app": "web"},
                "matchExpressions": [{"key": "tier", "operator": "In", "values": ["frontend", "edge"]}]},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 1}},
            "template": pod_template()
        },
        "status": {"replicas": 3, "readyReplicas": 2, "observedGeneration": 3,
            "conditions": [{"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable"}]}
    })
}

fn replicaset() -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "ReplicaSet",
        "metadata": {"name": "web-5d4c", "namespace": "default",
            "annotations": {"deployment.kubernetes.io/revision": "2"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web",
                "uid": "22222222-2222-3333-4444-555555555555", "controller": true}]},
        "spec": {"replicas": 2, "minReadySeconds": 0, "selector": {"matchLabels": {"app": "web"}},
            "template": pod_template()},
        "status": {"replicas": 2, "fullyLabeledReplicas": 2}
    })
}

fn configmap() -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "web-config", "namespace": "default", "labels": {"app": "web"}},
        "data": {"a": "1", "config.yaml": "key: value\n"}, "binaryData": {"b": "AAEC"}, "immutable": false})
}

fn secret() -> Value {
    json!({"apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "tls", "namespace": "default"}, "type": "kubernetes.io/tls",
        "data": {"tls.crt": "LS0tLS1CRUdJTg==", "tls.key": ""}, "stringData": {"x": "y"}})
}

fn node() -> Value {
    json!({"apiVersion": "v1", "kind": "Node",
        "metadata": {"name": "node-1", "labels": {"kubernetes.io/hostname": "node-1"}},
        "spec": {"podCIDR": "10.0.0.0/24", "taints": [{"key": "k", "value": "v", "effect": "NoSchedule"}],
            "unschedulable": false},
        "status": {"capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"},
            "allocatable": {"cpu": "3800m", "memory": "7Gi", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True", "lastHeartbeatTime": "2024-01-01T00:00:00Z"}],
            "addresses": [{"type": "InternalIP", "address": "192.168.1.10"}],
            "nodeInfo": {"kubeletVersion": "v1.31.0", "osImage": "turtles", "architecture": "amd64",
                "operatingSystem": "linux", "machineID": "", "systemUUID": "", "bootID": "",
                "kernelVersion": "", "containerRuntimeVersion": "", "kubeProxyVersion": ""}}})
}

fn lease() -> Value {
    json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": "leader", "namespace": "kube-system"},
        "spec": {"holderIdentity": "a", "leaseDurationSeconds": 15,
            "acquireTime": "2024-01-01T00:00:00.000000Z", "renewTime": "2024-01-01T00:00:10.123456Z",
            "leaseTransitions": 2}})
}

fn role() -> Value {
    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
        "metadata": {"name": "reader", "namespace": "default"},
        "rules": [{"apiGroups": [""], "resources": ["pods", "pods/log"], "verbs": ["get", "list", "watch"]},
                  {"apiGroups": ["apps"], "resources": ["deployments"], "resourceNames": ["web"], "verbs": ["*"]}]})
}

fn rolebinding() -> Value {
    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": "reader", "namespace": "default"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "reader"},
        "subjects": [{"kind": "User", "name": "alice", "apiGroup": "rbac.authorization.k8s.io"},
                     {"kind": "ServiceAccount", "name": "default", "namespace": "default"}]})
}

fn namespace() -> Value {
    json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"},
        "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}})
}

fn event() -> Value {
    json!({"apiVersion": "v1", "kind": "Event",
        "metadata": {"name": "web-1.17a", "namespace": "default"},
        "involvedObject": {"kind": "Pod", "name": "web-1", "namespace": "default", "apiVersion": "v1"},
        "reason": "Scheduled", "message": "Successfully assigned default/web-1 to node-1",
        "type": "Normal", "count": 1, "firstTimestamp": "2024-01-01T00:00:00Z",
        "source": {"component": "scheduler"}})
}

fn access_review() -> Value {
    json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
        "spec": {"user": "alice", "groups": ["devs"], "extra": {"scopes": ["a"]},
            "resourceAttributes": {"namespace": "default", "verb": "get", "group": "", "resource": "pods", "name": "web-1"}}})
}

fn scale() -> Value {
    json!({"apiVersion": "autoscaling/v1", "kind": "Scale",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"replicas": 5}, "status": {"replicas": 3, "selector": "app=web"}})
}

/// Objects of the kinds with kube's validation beyond pods and workloads (`builtin::validation`).
fn validated() -> Vec<Value> {
    vec![
        json!({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": "web"},
            "spec": {"ingressClassName": "nginx", "tls": [{"hosts": ["*.example.com"], "secretName": "tls"}],
                "rules": [{"host": "shop.example.com", "http": {"paths": [{"path": "/api", "pathType": "Prefix",
                    "backend": {"service": {"name": "api", "port": {"number": 80}}}}]}}]},
            "status": {"loadBalancer": {"ingress": [{"ip": "10.0.0.1", "ports": [{"port": 80, "protocol": "TCP"}]}]}}}),
        json!({"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": {"name": "np"},
            "spec": {"podSelector": {"matchLabels": {"app": "web"}}, "policyTypes": ["Ingress", "Egress"],
                "ingress": [{"from": [{"ipBlock": {"cidr": "10.0.0.0/8", "except": ["10.1.0.0/16"]}},
                    {"namespaceSelector": {"matchExpressions": [{"key": "team", "operator": "In", "values": ["a"]}]}}],
                    "ports": [{"protocol": "TCP", "port": 80, "endPort": 90}]}],
                "egress": [{"to": [{"podSelector": {}}], "ports": [{"port": "dns"}]}]}}),
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
            "spec": {"type": "LoadBalancer", "selector": {"app": "web"}, "clusterIP": "10.96.0.10",
                "clusterIPs": ["10.96.0.10", "fd00::10"], "ipFamilies": ["IPv4", "IPv6"],
                "ipFamilyPolicy": "PreferDualStack", "externalTrafficPolicy": "Local", "healthCheckNodePort": 30100,
                "sessionAffinity": "ClientIP", "sessionAffinityConfig": {"clientIP": {"timeoutSeconds": 60}},
                "loadBalancerSourceRanges": ["10.0.0.0/8"], "externalIPs": ["1.2.3.4"],
                "ports": [{"name": "http", "port": 80, "targetPort": "web", "nodePort": 30080, "protocol": "TCP"},
                    {"name": "dns", "port": 53, "targetPort": 53, "protocol": "UDP"}]},
            "status": {"loadBalancer": {"ingress": [{"ip": "1.2.3.4", "ipMode": "VIP"}]}}}),
        json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice", "metadata": {"name": "web-x"},
            "addressType": "IPv4", "endpoints": [{"addresses": ["10.0.0.5"], "conditions": {"ready": true},
                "hostname": "web-0", "nodeName": "node-1", "zone": "a", "hints": {"forZones": [{"name": "a"}]}}],
            "ports": [{"name": "http", "port": 80, "protocol": "TCP", "appProtocol": "http"}]}),
        json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data"},
            "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "fast", "volumeMode": "Filesystem",
                "resources": {"requests": {"storage": "1Gi"}, "limits": {"storage": "2Gi"}},
                "selector": {"matchLabels": {"tier": "db"}},
                "dataSourceRef": {"kind": "VolumeSnapshot", "apiGroup": "snapshot.storage.k8s.io", "name": "snap"}},
            "status": {"phase": "Bound", "capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"]}}),
        json!({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pv"},
            "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                "persistentVolumeReclaimPolicy": "Retain", "local": {"path": "/mnt/d"},
                "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions":
                    [{"key": "kubernetes.io/hostname", "operator": "In", "values": ["node-1"]}]}]}}}}),
        json!({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "web"},
            "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                "minReplicas": 1, "maxReplicas": 5,
                "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}},
                    {"type": "Pods", "pods": {"metric": {"name": "qps"}, "target": {"type": "AverageValue", "averageValue": "10"}}}],
                "behavior": {"scaleDown": {"stabilizationWindowSeconds": 300, "selectPolicy": "Max",
                    "policies": [{"type": "Percent", "value": 10, "periodSeconds": 60}]}}}}),
        json!({"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "q"},
            "spec": {"hard": {"pods": "10", "requests.cpu": "4", "count/deployments.apps": "3"},
                "scopeSelector": {"matchExpressions": [{"scopeName": "PriorityClass", "operator": "In", "values": ["high"]}]}}}),
        json!({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "fast"},
            "provisioner": "example.com/csi", "parameters": {"type": "ssd"}, "reclaimPolicy": "Delete",
            "volumeBindingMode": "WaitForFirstConsumer",
            "allowedTopologies": [{"matchLabelExpressions": [{"key": "zone", "values": ["a"]}]}]}),
    ]
}

fn objects() -> Vec<Value> {
    vec![
        pod(),
        deployment(),
        replicaset(),
        configmap(),
        secret(),
        node(),
        lease(),
        role(),
        rolebinding(),
        namespace(),
        event(),
        access_review(),
        scale(),
    ]
}

/// Every kind with a validation of its own (`model::workloads`, `builtin::validation`).
const WORKLOADS: &[(&str, &str)] = &[
    ("", "pods"),
    ("apps", "deployments"),
    ("apps", "replicasets"),
    ("apps", "statefulsets"),
    ("batch", "jobs"),
    ("", "nodes"),
    ("", "configmaps"),
    ("", "secrets"),
    ("", "services"),
    ("", "endpoints"),
    ("", "persistentvolumeclaims"),
    ("", "persistentvolumes"),
    ("", "replicationcontrollers"),
    ("", "podtemplates"),
    ("", "resourcequotas"),
    ("discovery.k8s.io", "endpointslices"),
    ("networking.k8s.io", "ingresses"),
    ("networking.k8s.io", "ingressclasses"),
    ("networking.k8s.io", "networkpolicies"),
    ("storage.k8s.io", "storageclasses"),
    ("storage.k8s.io", "csidrivers"),
    ("storage.k8s.io", "volumeattachments"),
    ("autoscaling", "horizontalpodautoscalers"),
    ("coordination.k8s.io", "leases"),
    ("rbac.authorization.k8s.io", "roles"),
    ("rbac.authorization.k8s.io", "clusterrolebindings"),
];

fn registry() -> &'static Registry {
    static REGISTRY: std::sync::OnceLock<Registry> = std::sync::OnceLock::new();
    REGISTRY.get_or_init(Registry::with_builtins)
}

fn builtin(group: &str, version: &str, resource: &str) -> Arc<ResourceInfo> {
    registry()
        .lookup(group, version, resource)
        .unwrap_or_else(|| panic!("{group}/{version} {resource} is not registered"))
}

// --- JSON bodies --------------------------------------------------------------------------------

fn json_body_runner() -> Runner {
    let pods = builtin("", "v1", "pods");
    Box::new(move |b| {
        let Ok(mut obj) = handlers::decode_json(b) else {
            return false;
        };
        let _ = meta::validate_common(&obj);
        let _ = meta::name(&obj);
        let _ = meta::finalizers(&obj);
        for (group, resource) in WORKLOADS {
            let mut o = obj.clone();
            workloads::apply_defaults(group, resource, &mut o);
            let _ = workloads::validate(group, resource, &o, None);
            let _ = workloads::validate(group, resource, &o, Some(&obj));
        }
        if let Ok(f) = Filter::for_resource(
            &pods,
            Some("default"),
            Some("app in (web,db),!canary"),
            Some("spec.nodeName=node-1,status.phase!=Failed"),
        ) {
            let _ = f.matches_value(&obj);
        }
        workloads::apply_defaults("", "pods", &mut obj);
        true
    })
}

fn delete_options_runner() -> Runner {
    Box::new(|b| {
        let q = handlers::Query::new();
        handlers::delete_options(&q, &[], b).is_ok()
    })
}

// --- Protobuf -----------------------------------------------------------------------------------

fn protobuf_seeds() -> Vec<Vec<u8>> {
    objects()
        .iter()
        .map(|o| {
            let mut o = o.clone();
            // The codec does not convert every field of the richest seeds; keep what it takes.
            for _ in 0..8 {
                match protobuf::encode(&o) {
                    Ok(b) => return b,
                    Err(protobuf::ProtobufError::Encode(e)) => {
                        if !drop_field_named_in(&mut o, &e) {
                            break;
                        }
                    }
                    Err(_) => break,
                }
            }
            protobuf::encode(&o).unwrap_or_else(|e| panic!("seed {o}: {e}"))
        })
        .collect()
}

/// Drops the field an encode error names (`... spec.foo ...`); false when none is found.
fn drop_field_named_in(obj: &mut Value, error: &str) -> bool {
    for word in error.split(|c: char| c.is_whitespace() || c == '"' || c == ':') {
        let ptr: String = word
            .split('.')
            .map(|p| format!("/{}", p.split('[').next().unwrap_or(p)))
            .collect();
        if word.contains('.') || obj.get(word).is_some() {
            if let Some((parent, last)) = ptr.rsplit_once('/') {
                if let Some(m) = obj.pointer_mut(parent).and_then(Value::as_object_mut) {
                    if m.remove(last).is_some() {
                        return true;
                    }
                }
            }
        }
    }
    false
}

fn protobuf_runner() -> Runner {
    Box::new(|b| {
        let Ok(obj) = protobuf::decode(b) else {
            return false;
        };
        // What decodes must encode again and decode to the same JSON.
        let encoded = protobuf::encode(&obj)
            .unwrap_or_else(|e| panic!("decoded object does not encode again: {e}: {obj}"));
        let again = protobuf::decode(&encoded)
            .unwrap_or_else(|e| panic!("re-encoded object does not decode: {e}: {obj}"));
        // A zero timestamp decodes to `null` (as metav1.Time does in kube) and `null` encodes as
        // an absent field: equal up to null members.
        assert_eq!(
            without_nulls(again),
            without_nulls(obj.clone()),
            "protobuf round trip changed the object"
        );
        for (group, resource) in WORKLOADS {
            let _ = workloads::validate(group, resource, &obj, None);
        }
        true
    })
}

fn without_nulls(mut v: Value) -> Value {
    match &mut v {
        Value::Object(m) => {
            m.retain(|_, x| !x.is_null());
            for x in m.values_mut() {
                *x = without_nulls(x.take());
            }
        }
        Value::Array(a) => {
            for x in a.iter_mut() {
                *x = without_nulls(x.take());
            }
        }
        _ => {}
    }
    v
}

const PROTOBUF: JsonCodec = JsonCodec {
    decode: |b| protobuf::decode(b).ok(),
    encode: |v| protobuf::encode(v).ok(),
};

// --- Patches ------------------------------------------------------------------------------------

fn json_patch_seeds() -> Vec<Vec<u8>> {
    values(vec![
        json!([{"op": "add", "path": "/metadata/labels/env", "value": "prod"}]),
        json!([{"op": "replace", "path": "/spec/containers/0/image", "value": "nginx:1.28"},
               {"op": "test", "path": "/metadata/name", "value": "web-1"}]),
        json!([{"op": "remove", "path": "/metadata/annotations/a~1b"}]),
        json!([{"op": "move", "from": "/metadata/labels/tier", "path": "/metadata/labels/role"},
               {"op": "copy", "from": "/spec/containers/0/ports", "path": "/spec/containers/1/ports"}]),
        json!([{"op": "add", "path": "/spec/containers/0/env/1", "value": {"name": "C", "value": "3"}},
               {"op": "add", "path": "/spec/containers/0/env/-", "value": {"name": "D", "value": "4"}}]),
        json!([{"op": "replace", "path": "/spec/replicas", "value": 5},
               {"op": "remove", "path": "/status"}]),
        json!([{"op": "test", "path": "/metadata/finalizers/0", "value": "example.com/cleanup"},
               {"op": "remove", "path": "/metadata/finalizers/0"}]),
        json!([]),
    ])
}

const PATCH_DICT: &[&str] = &[
    "\"op\"",
    "\"add\"",
    "\"remove\"",
    "\"replace\"",
    "\"move\"",
    "\"copy\"",
    "\"test\"",
    "\"path\"",
    "\"from\"",
    "\"value\"",
    "/-",
    "/0",
    "/spec/containers/0",
    "/metadata/labels",
    "/metadata",
    "\"\"",
    "\"$patch\"",
    "\"delete\"",
    "\"merge\"",
    "\"replace\"",
    "\"$retainKeys\"",
    "\"$setElementOrder/containers\"",
    "\"$deleteFromPrimitiveList/finalizers\"",
    "\"$setElementOrder/finalizers\"",
    "\"name\"",
    "\"containers\"",
    "\"containerPort\"",
    "\"env\"",
    "\"volumes\"",
    "\"finalizers\"",
];

/// The objects patches are applied to, with the resource they are.
fn patch_targets() -> Vec<(Arc<ResourceInfo>, Value)> {
    vec![
        (builtin("", "v1", "pods"), pod()),
        (builtin("apps", "v1", "deployments"), deployment()),
        (builtin("", "v1", "configmaps"), configmap()),
        (builtin("", "v1", "nodes"), node()),
    ]
}

fn patch_runner(t: PatchType) -> Runner {
    let targets = patch_targets();
    Box::new(move |b| {
        let Ok(p) = patch::parse(t, b) else {
            return false;
        };
        let mut accepted = false;
        for (ri, current) in &targets {
            if let Ok(out) = patch::apply(t, current, &p, ri) {
                accepted = true;
                // Patching the result again exercises the patch on its own output.
                let _ = patch::apply(t, &out, &p, ri);
            }
        }
        accepted
    })
}

fn merge_patch_seeds() -> Vec<Vec<u8>> {
    values(vec![
        json!({"metadata": {"labels": {"app": null, "new": "x"}}, "spec": {"replicas": 3}}),
        json!({"data": {"a": null, "b": "2"}}),
        json!({"spec": {"containers": [{"name": "n", "image": "i"}]}}),
        json!({"metadata": {"annotations": {"a/b": {"nested": [1, 2, {"x": null}]}}}}),
        json!({}),
    ])
}

fn strategic_patch_seeds() -> Vec<Vec<u8>> {
    values(vec![
        json!({"spec": {"containers": [{"name": "nginx", "image": "nginx:1.28"}]}}),
        json!({"spec": {"containers": [{"name": "sidecar", "$patch": "delete"}]}}),
        json!({"metadata": {"finalizers": ["b"], "$deleteFromPrimitiveList/finalizers": ["example.com/cleanup"]}}),
        json!({"spec": {"$setElementOrder/containers": [{"name": "sidecar"}, {"name": "nginx"}],
                        "containers": [{"name": "sidecar", "image": "busybox:2"}]}}),
        json!({"spec": {"template": {"spec": {"containers": [{"name": "nginx",
                "env": [{"name": "A", "$patch": "delete"}, {"name": "B", "value": "2"}]}]}},
              "strategy": {"$retainKeys": ["type"], "type": "Recreate"}}}),
        json!({"spec": {"volumes": [{"name": "data", "$patch": "replace", "hostPath": {"path": "/x"}}]}}),
        json!({"metadata": {"labels": {"$patch": "replace", "a": "b"}}}),
        json!({"spec": {"containers": [{"$patch": "replace"}, {"name": "x", "image": "y"}]}}),
        json!({"spec": {"containers": [{"name": "nginx", "ports": [{"containerPort": 80, "$patch": "delete"},
                {"containerPort": 443, "protocol": "TCP"}]}]}}),
        json!({"status": {"conditions": [{"type": "Ready", "status": "False"}]}}),
        json!({"spec": {"taints": [{"key": "k", "effect": "NoSchedule", "$patch": "delete"}]}}),
        json!({"data": {"a": null}, "$patch": "merge"}),
        json!({"$patch": "replace", "metadata": {"name": "web-1"}}),
    ])
}

// --- Selectors, continue tokens, resourceVersion -----------------------------------------------

const SELECTOR_DICT: &[&str] = &[
    " in ",
    " notin ",
    "in (",
    "notin (",
    "()",
    "(,)",
    "(a,,b)",
    "!",
    "=",
    "==",
    "!=",
    ">",
    "<",
    ",",
    "example.com/",
    "a.b.c/",
    "-",
    "_",
    ".",
    "app",
    "tier",
    "web",
    "\\",
    "\\,",
    "\\=",
    "\\\\",
    "metadata.name",
    "metadata.namespace",
    "spec.nodeName",
    "status.phase",
    "spec.restartPolicy",
    "status.podIP",
    "spec.schedulerName",
    "spec.serviceAccountName",
    "status.nominatedNodeName",
];

fn label_selector_runner() -> Runner {
    let sets: Vec<HashMap<&str, &str>> = vec![
        HashMap::new(),
        HashMap::from([("app", "web"), ("tier", "frontend"), ("x", "7")]),
        HashMap::from([("env", "prod"), ("example.com/part-of", ""), ("y", "-3")]),
    ];
    Box::new(move |b| {
        let Ok(sel) = LabelSelector::parse(&str_input(b)) else {
            return false;
        };
        for set in &sets {
            let _ = sel.matches(|k| set.get(k).copied());
        }
        let _ = sel.matches_json(pod()["metadata"]["labels"].as_object());
        true
    })
}

fn field_selector_runner() -> Runner {
    let pods = builtin("", "v1", "pods");
    let nodes = builtin("", "v1", "nodes");
    let objs = vec![pod(), node(), configmap()];
    Box::new(move |b| {
        let s = str_input(b);
        let mut accepted = false;
        if let Ok(sel) = FieldSelector::parse(&s, &["metadata.name", "metadata.namespace"]) {
            accepted = true;
            let _ = sel.exact("metadata.name");
            let _ = sel.matches(|f| (f == "metadata.name").then_some("web-1"));
        }
        for ri in [&pods, &nodes] {
            for ns in [None, Some("default")] {
                if let Ok(f) = Filter::for_resource(ri, ns, None, Some(&s)) {
                    accepted = true;
                    for o in &objs {
                        let _ = f.matches_value(o);
                    }
                }
            }
        }
        accepted
    })
}

/// A continue token as kube writes it (the key relative to the list's prefix).
fn make_token(rv: Value, start: &str) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .encode(json!({"v": "meta.k8s.io/v1", "rv": rv, "start": start}).to_string())
}

/// A continue token as turtles wrote it before it wrote kube's (the whole key).
fn make_legacy_token(rv: Value, start: &str) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .encode(json!({"v": "turtles/1", "rv": rv, "start": start}).to_string())
}

fn continue_seeds() -> Vec<Vec<u8>> {
    let mut out: Vec<String> = vec![
        make_token(json!(3), "web-1\u{0}"),
        make_token(json!(3), "default/web-1\u{0}"),
        make_legacy_token(json!(3), "default/web-1"),
        make_token(json!(0), ""),
        make_token(json!(u64::MAX), "zzz/x"),
        make_token(json!(-1), "default/"),
        make_token(json!(5), "../x"),
        make_token(json!(1.5), "a"),
        make_token(json!("7"), "b"),
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode("{}"),
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode("[1]"),
    ];
    out.push(base64::engine::general_purpose::STANDARD.encode("{\"rv\":1,\"start\":\"x\"}"));
    out.iter().map(|s| s.as_bytes().to_vec()).collect()
}

/// Continue tokens are mutated as bytes and, through this codec, as the JSON inside.
const CONTINUE: JsonCodec = JsonCodec {
    decode: |b| {
        let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(b)
            .ok()?;
        serde_json::from_slice(&raw).ok()
    },
    encode: |v| {
        Some(
            base64::engine::general_purpose::URL_SAFE_NO_PAD
                .encode(v.to_string())
                .into_bytes(),
        )
    },
};

fn continue_runner() -> Runner {
    Box::new(|b| service::decode_continue(&str_input(b)).is_ok())
}

fn resource_version_runner() -> Runner {
    Box::new(|b| service::parse_rv(&str_input(b)).is_ok())
}

// --- List requests (query string -> list options -> Service::list on a small store) -----------

struct ListFixture {
    rt: tokio::runtime::Runtime,
    service: Service,
    store: Arc<crate::store::SledStore>,
    dir: PathBuf,
    resources: Vec<Arc<ResourceInfo>>,
}

impl Drop for ListFixture {
    fn drop(&mut self) {
        use crate::store::Store as _;
        let _ = self.store.shutdown();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn list_fixture() -> ListFixture {
    use crate::service::WriteOptions;
    use crate::store::{SledStore, StoreOptions};
    // Paused time: a resourceVersion in the future waits 3 s for it, which the clock skips.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .expect("runtime");
    let dir = std::env::temp_dir().join(format!(
        "turtles-fuzz-list-{}-{}",
        std::process::id(),
        uuid::Uuid::new_v4()
    ));
    let store = Arc::new(
        SledStore::open(StoreOptions {
            watch_history: 16,
            fsync: false,
            ..StoreOptions::in_dir(dir.clone())
        })
        .expect("store"),
    );
    let registry = Arc::new(Registry::with_builtins());
    let service = Service::new(store.clone(), registry.clone());
    let cms = builtin("", "v1", "configmaps");
    let pods = builtin("", "v1", "pods");
    let nss = builtin("", "v1", "namespaces");
    rt.block_on(async {
        service.bootstrap().await.expect("bootstrap");
        let w = WriteOptions::default();
        for ns in ["default", "kube-system", "shop", "default0"] {
            let _ = service
                .create(&nss, "", json!({"metadata": {"name": ns}}), &w)
                .await;
            // What the service account controller makes (Pods need their account).
            let _ = service
                .create(
                    &builtin("", "v1", "serviceaccounts"),
                    ns,
                    json!({"metadata": {"name": "default"}}),
                    &w,
                )
                .await;
            for (i, name) in ["a", "b", "c", "web-1"].iter().enumerate() {
                let labels = json!({"app": if i % 2 == 0 { "web" } else { "db" }, "n": i.to_string()});
                let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": name, "namespace": ns, "labels": labels}, "data": {"i": i.to_string()}});
                service.create(&cms, ns, cm, &w).await.expect("configmap");
            }
            let mut p = pod();
            p["metadata"] = json!({"name": "web-1", "namespace": ns, "labels": {"app": "web"}});
            service.create(&pods, ns, p, &w).await.expect("pod");
        }
        // Updates and deletes put history behind the snapshot (for Exact and continue reads).
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "b", "namespace": "default"}, "data": {"i": "changed"}});
        service
            .update(&cms, "default", "b", cm, crate::service::Subresource::Main, &w)
            .await
            .expect("update");
        service
            .delete(&cms, "shop", "c", &Default::default())
            .await
            .expect("delete");
    });
    ListFixture {
        rt,
        service,
        store,
        dir,
        resources: vec![cms, pods, nss],
    }
}

fn list_seeds() -> Vec<Vec<u8>> {
    let q = |pairs: &[(&str, &str)]| -> Vec<u8> {
        form_urlencoded::Serializer::new(String::new())
            .extend_pairs(pairs)
            .finish()
            .into_bytes()
    };
    vec![
        q(&[]),
        q(&[("limit", "1")]),
        q(&[
            ("limit", "2"),
            ("labelSelector", "app=web"),
            ("ns", "default"),
        ]),
        q(&[
            ("limit", "1"),
            ("continue", &make_token(json!(5), "a\u{0}")),
            ("ns", "default"),
        ]),
        q(&[
            ("continue", &make_token(json!(5), "zzz/x")),
            ("ns", "default"),
        ]),
        q(&[
            ("continue", &make_legacy_token(json!(5), "zzz/x")),
            ("ns", "default"),
        ]),
        q(&[
            ("limit", "1"),
            ("continue", &make_token(json!(-1), "a\u{0}")),
            ("ns", "default"),
        ]),
        q(&[
            ("continue", &make_token(json!(5), "default0/a")),
            ("ns", "default"),
            ("limit", "2"),
        ]),
        q(&[
            ("continue", &make_token(json!(1), "")),
            ("fieldSelector", "metadata.name!=a"),
        ]),
        q(&[("resourceVersion", "0")]),
        q(&[
            ("resourceVersion", "3"),
            ("resourceVersionMatch", "Exact"),
            ("ns", "shop"),
        ]),
        q(&[
            ("resourceVersion", "999999"),
            ("resourceVersionMatch", "NotOlderThan"),
        ]),
        q(&[
            ("fieldSelector", "metadata.name=a"),
            ("ns", "kube-system"),
            ("limit", "-1"),
        ]),
        q(&[
            ("labelSelector", "app in (web,db),!n"),
            ("limit", "3"),
            ("resourceVersion", ""),
        ]),
    ]
}

const LIST_DICT: &[&str] = &[
    "&",
    "=",
    "limit=",
    "continue=",
    "resourceVersion=",
    "resourceVersionMatch=Exact",
    "resourceVersionMatch=NotOlderThan",
    "labelSelector=",
    "fieldSelector=",
    "ns=",
    "ns=default",
    "ns=default0",
    "ns=",
    "%2F",
    "%3D",
    "%2C",
    "%00",
    "%FF",
    "+",
    "eyJydiI6",
    "0",
    "1",
    "18446744073709551615",
    "-1",
    "9999999999999999999999",
];

fn list_runner() -> Runner {
    let fx = list_fixture();
    Box::new(move |b| {
        let q: handlers::Query = form_urlencoded::parse(b)
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect();
        let Ok(opts) = handlers::list_options(&q) else {
            return false;
        };
        let ns = q.get("ns").map(String::as_str);
        let mut accepted = false;
        fx.rt.block_on(async {
            for ri in &fx.resources {
                let ns = if ri.namespaced() { ns } else { None };
                if let Ok(page) = fx.service.list(ri, ns, &opts).await {
                    accepted = true;
                    // Follow the continue token once, as a client paging through would.
                    if let Some(token) = page.continue_token {
                        let next = crate::service::ListOptions {
                            continue_token: Some(token),
                            ..opts.clone()
                        };
                        let next = crate::service::ListOptions {
                            resource_version: None,
                            resource_version_match: None,
                            ..next
                        };
                        let _ = fx.service.list(ri, ns, &next).await;
                    }
                }
            }
        });
        accepted
    })
}

// --- CRDs and CEL -------------------------------------------------------------------------------

/// A CRD version schema with rules, defaults, list types, formats and an embedded resource.
fn widget_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "required": ["name"],
                "properties": {
                    "name": {"type": "string", "minLength": 1, "maxLength": 63, "pattern": "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"},
                    "replicas": {"type": "integer", "format": "int32", "default": 1, "minimum": 0},
                    "minReplicas": {"type": "integer", "default": 0},
                    "maxReplicas": {"type": "integer", "default": 10, "maximum": 1000},
                    "ratio": {"type": "number", "exclusiveMinimum": true, "minimum": 0},
                    "mode": {"type": "string", "enum": ["Auto", "Manual"], "default": "Auto"},
                    "url": {"type": "string", "format": "uri", "maxLength": 256},
                    "email": {"type": "string", "format": "email", "maxLength": 256},
                    "ip": {"type": "string", "maxLength": 64},
                    "at": {"type": "string", "format": "date-time"},
                    "timeout": {"type": "string", "maxLength": 32},
                    "memory": {"x-kubernetes-int-or-string": true,
                        "anyOf": [{"type": "integer"}, {"type": "string"}]},
                    "tags": {"type": "array", "maxItems": 16, "x-kubernetes-list-type": "set",
                        "items": {"type": "string", "maxLength": 32}},
                    "labels": {"type": "object", "maxProperties": 16,
                        "additionalProperties": {"type": "string", "maxLength": 63}},
                    "items": {"type": "array", "maxItems": 16,
                        "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                        "items": {"type": "object", "required": ["name"], "properties": {
                            "name": {"type": "string", "maxLength": 32},
                            "weight": {"type": "integer", "default": 1}},
                            "x-kubernetes-validations": [{"rule": "self.weight >= 0", "message": "weight must not be negative"}]}},
                    "template": {"type": "object", "x-kubernetes-embedded-resource": true,
                        "x-kubernetes-preserve-unknown-fields": true},
                    "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
                },
                "x-kubernetes-validations": [
                    {"rule": "self.replicas <= self.maxReplicas", "message": "replicas must not exceed maxReplicas"},
                    {"rule": "self.minReplicas <= self.replicas", "messageExpression": "'replicas ' + string(self.replicas) + ' below ' + string(self.minReplicas)", "reason": "FieldValueForbidden", "fieldPath": ".replicas"},
                    {"rule": "self.name == oldSelf.name", "message": "name is immutable"}
                ]
            },
            "status": {"type": "object", "properties": {
                "replicas": {"type": "integer"},
                "conditions": {"type": "array", "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["type"], "maxItems": 8,
                    "items": {"type": "object", "required": ["type", "status"], "properties": {
                        "type": {"type": "string", "maxLength": 64},
                        "status": {"type": "string", "enum": ["True", "False", "Unknown"]},
                        "lastTransitionTime": {"type": "string", "format": "date-time"}}}}}}
        }
    })
}

fn crd_object(schema: Value) -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com", "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget",
                "shortNames": ["wd"], "categories": ["all"]},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": schema},
                "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.replicas",
                    "statusReplicasPath": ".status.replicas", "labelSelectorPath": ".status.selector"}},
                "additionalPrinterColumns": [
                    {"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"},
                    {"name": "Ready", "type": "string", "jsonPath": ".status.conditions[?(@.type==\"Ready\")].status"},
                    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}]
            }, {
                "name": "v1beta1", "served": true, "storage": false,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}
            }]
        }
    })
}

fn widgets() -> Vec<Value> {
    vec![
        json!({"apiVersion": "example.com/v1", "kind": "Widget",
            "metadata": {"name": "w", "namespace": "default", "creationTimestamp": "2024-01-01T00:00:00Z"},
            "spec": {"name": "web", "replicas": 3, "maxReplicas": 5, "ratio": 0.5, "mode": "Manual",
                "url": "https://example.com/a?b=c", "email": "a@example.com", "ip": "10.0.0.1",
                "at": "2024-01-01T00:00:00Z", "timeout": "30s", "memory": "128Mi",
                "tags": ["a", "b"], "labels": {"app": "web"},
                "items": [{"name": "x", "weight": 2}, {"name": "y"}],
                "template": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "t"}},
                "extra": {"anything": [1, {"deep": null}]}},
            "status": {"replicas": 3, "conditions": [{"type": "Ready", "status": "True"}]}}),
        json!({"apiVersion": "example.com/v1", "kind": "Widget",
            "metadata": {"name": "edge"},
            "spec": {"name": "İstanbul-日本", "replicas": 9_223_372_036_854_775_807_i64, "minReplicas": -1,
                "maxReplicas": -9_223_372_036_854_775_807_i64, "ratio": 1e308, "url": "::", "ip": "::1",
                "at": "not a time", "timeout": "-1h", "memory": -5, "tags": ["", ""],
                "labels": {"": "\u{0}"}, "items": [{"name": "x"}, {"name": "x", "weight": -1}],
                "template": {"kind": 5}, "bogus": true},
            "status": {"conditions": [{"type": "Ready"}]}}),
        json!({"spec": null, "status": []}),
    ]
}

/// The admission pipeline of a custom resource (prune, default, validate, CEL) as
/// `Service::admit` runs it, on create and on update.
fn admit(schema: &Schema, obj: &Value, old: Option<&Value>) {
    let mut o = obj.clone();
    let _ = schema.prune(&mut o);
    schema.apply_defaults(&mut o);
    let violations = schema.validate(&o);
    let _ = crate::schema::blocking_violation(&violations);
    if violations.is_empty() {
        check_contained(schema.validate_cel(&o, old).iter().map(|v| &v.message));
    }
}

/// A panic the schema code caught itself (on its CEL thread) and turned into a message: the
/// engine reports it as a `contained` finding.
fn check_contained<'a>(messages: impl IntoIterator<Item = &'a String>) {
    for m in messages {
        if m.contains("panicked") {
            CONTAINED.with_borrow_mut(|c| c.push(short(m)));
        }
    }
}

fn crd_runner() -> Runner {
    let instances = widgets();
    let other = crd_object(json!({"type": "object"}));
    Box::new(move |b| {
        let Ok(mut crd) = handlers::decode_json(b) else {
            return false;
        };
        crate::crd::apply_defaults(&mut crd);
        let causes = crate::crd::validate(&crd);
        check_contained(causes.iter().map(|c| &c.message));
        let _ = crate::crd::check_names(&crd, &[&other]);
        for ri in crate::crd::resources(&crd) {
            let Some(custom) = &ri.custom else { continue };
            for col in &custom.printer_columns {
                for obj in &instances {
                    let _ = crate::crd::eval_json_path(obj, &col.json_path);
                }
            }
            let Some(schema) = &custom.schema else {
                continue;
            };
            for col in &custom.printer_columns {
                let _ = schema.at_path(&col.json_path);
            }
            for (i, obj) in instances.iter().enumerate() {
                admit(schema, obj, None);
                admit(schema, obj, instances.get(i + 1));
            }
        }
        causes.is_empty()
    })
}

fn crd_seeds() -> Vec<Vec<u8>> {
    let mut small = widget_schema();
    small["properties"]["spec"]["x-kubernetes-validations"] = json!([
        {"rule": "self.tags.all(t, t.size() < 10) && self.items.exists(i, i.name == 'x')"},
        {"rule": "!has(self.url) || isURL(self.url)"},
        {"rule": "self.labels.all(k, k.matches('^[a-z]+$'))"}
    ]);
    values(vec![
        crd_object(widget_schema()),
        crd_object(small),
        crd_object(json!({"type": "object", "properties": {
            "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true,
                "x-kubernetes-validations": [{"rule": "has(self.a) == has(self.b)"}]},
            "status": {"type": "object", "additionalProperties": {"type": "integer"}}}})),
        crd_object(
            json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "list": {"type": "array", "items": {"type": "array", "items": {"type": "object",
                "properties": {"a": {"type": "string", "default": "x"}}}}},
            "not": {"type": "string", "not": {"pattern": "^x"}},
            "oneOf": {"type": "integer", "oneOf": [{"minimum": 1}, {"maximum": 0}]},
            "allOf": {"type": "string", "allOf": [{"minLength": 1}, {"maxLength": 3}]}}}}}),
        ),
    ])
}

const CEL_DICT: &[&str] = &[
    "self",
    "oldSelf",
    "self.",
    "oldSelf.",
    ".all(x, ",
    ".exists(x, ",
    ".exists_one(x, ",
    ".map(x, ",
    ".filter(x, ",
    "has(",
    "size(",
    ".size()",
    ".matches(",
    ".startsWith(",
    ".endsWith(",
    ".contains(",
    ".lowerAscii()",
    ".upperAscii()",
    ".split(",
    ".join(",
    ".trim()",
    ".substring(",
    ".charAt(",
    ".indexOf(",
    ".lastIndexOf(",
    ".replace(",
    ".format(",
    "int(",
    "uint(",
    "double(",
    "string(",
    "bytes(",
    "bool(",
    "duration(",
    "timestamp(",
    "dyn(",
    "type(",
    "quantity(",
    "isQuantity(",
    "url(",
    "isURL(",
    "ip(",
    "isIP(",
    "cidr(",
    "isCIDR(",
    "semver(",
    ".isSorted()",
    ".sum()",
    ".min()",
    ".max()",
    ".getHost()",
    ".getPort()",
    ".getScheme()",
    ".family()",
    ".containsIP(",
    ".prefixLength()",
    ".compareTo(",
    ".add(",
    ".sub(",
    ".isLessThan(",
    ".asInteger()",
    ".getSeconds()",
    ".getFullYear()",
    "sets.contains(",
    "sets.intersects(",
    "lists.range(",
    "optional.of(",
    "optional.none()",
    ".orValue(",
    ".?",
    "[?",
    ".hasValue()",
    ".value()",
    "? ",
    " : ",
    " && ",
    " || ",
    "!",
    " == ",
    " != ",
    " < ",
    " <= ",
    " > ",
    " >= ",
    " + ",
    " - ",
    " * ",
    " / ",
    " % ",
    " in ",
    "[",
    "]",
    "{",
    "}",
    "'",
    "\"",
    "'''",
    "r'",
    "b'",
    "\\u",
    "\\x",
    "\\",
    "0u",
    "1.0",
    "-0.0",
    "1e308",
    "1e309",
    "9223372036854775807",
    "-9223372036854775808",
    "18446744073709551615u",
    "18446744073709551616u",
    "0x",
    "null",
    "true",
    "false",
    "self.replicas",
    "self.name",
    "self.tags",
    "self.items",
    "self.labels",
    "self.memory",
    "self.url",
    "self.ip",
    "self.at",
    "self.timeout",
    "self.ratio",
    "__",
    "__dot__",
    "__dash__",
    "__slash__",
    "x",
    "(",
    ")",
    ",",
];

/// The schema a fuzzed rule runs in (the `spec` of [`widget_schema`]).
fn rule_schema(rule: Value) -> Value {
    let mut s = widget_schema();
    s["properties"]["spec"]["x-kubernetes-validations"] = json!([rule]);
    s
}

fn cel_runner() -> Runner {
    let instances = widgets();
    Box::new(move |b| {
        let text = str_input(b).into_owned();
        let mut accepted = false;
        let optional_old_self = b.len() % 2 == 1;
        for rule in [
            json!({"rule": text, "optionalOldSelf": optional_old_self}),
            json!({"rule": "self.replicas < 0", "messageExpression": text}),
            json!({"rule": "self.replicas < 0", "fieldPath": text}),
        ] {
            match Schema::from_crd_schema(
                &rule_schema(rule),
                "spec.versions[0].schema.openAPIV3Schema",
            ) {
                Ok(schema) => {
                    accepted = true;
                    for (i, obj) in instances.iter().enumerate() {
                        admit(&schema, obj, None);
                        admit(&schema, obj, instances.get((i + 1) % instances.len()));
                    }
                }
                Err(violations) => check_contained(violations.iter().map(|v| &v.message)),
            }
        }
        accepted
    })
}

fn cel_seeds() -> Vec<Vec<u8>> {
    strings(&[
        "self.replicas <= self.maxReplicas",
        "self.minReplicas <= self.replicas && self.replicas <= self.maxReplicas",
        "has(self.url) ? self.url.startsWith('https://') : true",
        "self.items.all(x, x.name.size() < 10)",
        "self.items.exists(x, x.name == 'x') || self.items.size() == 0",
        "self.items.map(x, x.weight).sum() <= 100",
        "self.tags.filter(t, t.startsWith('a')).size() <= 3",
        "self.labels.all(k, k.matches('^[a-z]+$') && self.labels[k].size() < 10)",
        "!has(self.url) || isURL(self.url) && url(self.url).getHost() != ''",
        "self.name.lowerAscii().contains('web')",
        "self.name.substring(1, 3) == 'eb' && self.name.charAt(0) == 'w'",
        "self.name.indexOf('e') >= 0 && self.name.lastIndexOf('b', 2) <= 2",
        "self.name.split('-').size() > 0 && self.tags.join(',') != ''",
        "self.name.replace('w', 'W', 1).upperAscii() == 'WEB'",
        "'%s has %d replicas'.format([self.name, self.replicas]) != ''",
        "isQuantity(string(self.memory)) && quantity(string(self.memory)).isLessThan(quantity('1Gi'))",
        "duration(self.timeout) < duration('1h')",
        "timestamp(self.at) > timestamp('2020-01-01T00:00:00Z')",
        "isIP(self.ip) && ip(self.ip).family() == 4 && cidr('10.0.0.0/8').containsIP(ip(self.ip))",
        "self.replicas == oldSelf.replicas",
        "!has(oldSelf.name) || self.name == oldSelf.name",
        "oldSelf.hasValue() ? oldSelf.value().replicas <= self.replicas : true",
        "self.ratio * 2.0 < 10.0 && int(self.ratio) >= 0",
        "size(self.tags) == size(self.tags.map(t, t + t)) && self.tags.all(t, t in self.tags)",
        "[1, 2, 3].isSorted() && self.tags.isSorted()",
        "sets.contains(self.tags, ['a']) && lists.range(3).size() == 3",
        "self.?extra.orValue({}) == {}",
        "{'a': 1}['a'] == 1 && [[1], [2]][1][0] == 2",
        "self.replicas / (self.maxReplicas - self.maxReplicas) == 0",
        "self.replicas % 0 == 0",
        "9223372036854775807 + self.replicas > 0",
        "-9223372036854775808 / -1 < 0",
        "'\\u00e9\\U0001F600\\x41' != '' && b'\\xff' != b''",
        "''' multi\nline ''' != r'raw\\n'",
        "self.items.exists_one(x, x.name == 'y')",
        "type(self) == map && dyn(self.replicas) == 3",
        "self.name.matches('(a+)+$')",
        ".replicas",
        "spec.replicas",
    ])
}

fn json_path_runner() -> Runner {
    let objs = vec![pod(), deployment(), widgets().remove(0)];
    let schema = Schema::from_crd_schema(&widget_schema(), "").expect("seed schema");
    Box::new(move |b| {
        let path = str_input(b);
        let mut found = false;
        for o in &objs {
            found |= crate::crd::eval_json_path(o, &path).is_some();
        }
        found |= schema.at_path(&path).is_some();
        found
    })
}

fn json_path_seeds() -> Vec<Vec<u8>> {
    strings(&[
        ".metadata.name",
        ".spec.containers[0].image",
        ".spec.containers[*].name",
        ".status.conditions[?(@.type==\"Ready\")].status",
        ".status.conditions[?(@.type=='Ready')].lastTransitionTime",
        ".metadata.labels['app']",
        ".metadata.annotations[\"a/b\"]",
        "{.spec.replicas}",
        ".spec.items[0].name",
        ".spec.labels.app",
        "..",
        "[",
        ".a[",
    ])
}

const JSON_PATH_DICT: &[&str] = &[
    ".",
    "[",
    "]",
    "[*]",
    "[0]",
    "[-1]",
    "[18446744073709551616]",
    "[?(@.",
    "==",
    ")]",
    "'",
    "\"",
    "{",
    "}",
    "metadata",
    "spec",
    "status",
    "containers",
    "conditions",
    "items",
    "labels",
];

fn targets() -> Vec<Target> {
    vec![
        Target {
            name: "json_body",
            default_iters: 2000,
            seeds: || values(objects().into_iter().chain(validated()).collect()),
            dict: PATCH_DICT,
            json: Some(JSON),
            runner: json_body_runner,
        },
        Target {
            name: "delete_options",
            default_iters: 2500,
            seeds: || {
                values(vec![
                    json!({"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Foreground",
                        "preconditions": {"uid": "x", "resourceVersion": "7"}, "dryRun": ["All"],
                        "gracePeriodSeconds": 0}),
                    json!({"orphanDependents": true}),
                    json!({"propagationPolicy": "Orphan", "orphanDependents": false}),
                ])
            },
            dict: &["\"Foreground\"", "\"Background\"", "\"Orphan\"", "\"All\""],
            json: Some(JSON),
            runner: delete_options_runner,
        },
        Target {
            name: "protobuf",
            default_iters: 2500,
            seeds: protobuf_seeds,
            dict: &[
                "k8s\0",
                "\u{8}",
                "\u{10}",
                "\u{12}",
                "\u{1a}",
                "\u{22}",
                "\u{ff}\u{ff}\u{ff}\u{ff}\u{f}",
            ],
            json: Some(PROTOBUF),
            runner: protobuf_runner,
        },
        Target {
            name: "json_patch",
            default_iters: 2000,
            seeds: json_patch_seeds,
            dict: PATCH_DICT,
            json: Some(JSON),
            runner: || patch_runner(PatchType::Json),
        },
        Target {
            name: "merge_patch",
            default_iters: 2000,
            seeds: merge_patch_seeds,
            dict: PATCH_DICT,
            json: Some(JSON),
            runner: || patch_runner(PatchType::Merge),
        },
        Target {
            name: "strategic_patch",
            default_iters: 2000,
            seeds: strategic_patch_seeds,
            dict: PATCH_DICT,
            json: Some(JSON),
            runner: || patch_runner(PatchType::Strategic),
        },
        Target {
            name: "label_selector",
            default_iters: 10000,
            seeds: || {
                strings(&[
                    "app in (a,b),!tier,env!=prod",
                    "app=web",
                    "app==web,tier!=db",
                    "environment in (production, qa)",
                    "tier notin (frontend,backend)",
                    "partition",
                    "!partition",
                    "example.com/part-of=shop",
                    "x>5,y<10",
                    "a in (),b in (,),c in (x,,y)",
                    "  app = web ,  tier  ",
                    "",
                ])
            },
            dict: SELECTOR_DICT,
            json: None,
            runner: label_selector_runner,
        },
        Target {
            name: "field_selector",
            default_iters: 2500,
            seeds: || {
                strings(&[
                    "metadata.name=web-1",
                    "metadata.namespace!=default",
                    "spec.nodeName=node-1,status.phase!=Running",
                    "metadata.name=a\\,b",
                    "metadata.name==x\\=y\\\\",
                    "spec.nodeName=",
                    "status.podIP=10.0.0.5,spec.restartPolicy=Always",
                    "spec.unschedulable=false",
                    "",
                ])
            },
            dict: SELECTOR_DICT,
            json: None,
            runner: field_selector_runner,
        },
        Target {
            name: "continue_token",
            default_iters: 5000,
            seeds: continue_seeds,
            dict: &["=", "-", "_", "+", "/", "eyJ", "AAAA"],
            json: Some(CONTINUE),
            runner: continue_runner,
        },
        Target {
            name: "resource_version",
            default_iters: 10000,
            seeds: || {
                strings(&[
                    "0",
                    "1",
                    "42",
                    "18446744073709551615",
                    "18446744073709551616",
                    "-1",
                    "+1",
                    " 1",
                    "01",
                    "1e3",
                    "",
                ])
            },
            dict: &["+", "-", "0", "9", "٣"],
            json: None,
            runner: resource_version_runner,
        },
        Target {
            name: "list_query",
            default_iters: 1500,
            seeds: list_seeds,
            dict: LIST_DICT,
            json: None,
            runner: list_runner,
        },
        Target {
            name: "crd",
            default_iters: 200,
            seeds: crd_seeds,
            dict: CEL_DICT,
            json: Some(JSON),
            runner: crd_runner,
        },
        Target {
            name: "cel_rule",
            default_iters: 100,
            seeds: cel_seeds,
            dict: CEL_DICT,
            json: None,
            runner: cel_runner,
        },
        Target {
            name: "printer_json_path",
            default_iters: 4000,
            seeds: json_path_seeds,
            dict: JSON_PATH_DICT,
            json: None,
            runner: json_path_runner,
        },
    ]
}

// ---------------------------------------------------------------------------------------------
// Mutations
// ---------------------------------------------------------------------------------------------

/// Largest mutated input (the API reads bodies up to 3 MiB; small inputs find more per second).
const MAX_LEN: usize = 64 * 1024;
/// Largest accepted input that joins the mutation pool.
const POOL_MAX_LEN: usize = 8 * 1024;

fn pick<'a, T>(rng: &mut StdRng, items: &'a [T]) -> &'a T {
    &items[rng.random_range(0..items.len())]
}

fn token<'a>(rng: &mut StdRng, t: &'a Target) -> &'a str {
    let tokens = if !t.dict.is_empty() && rng.random_bool(0.5) {
        t.dict
    } else {
        DICT
    };
    pick::<&str>(rng, tokens)
}

const INTERESTING_BYTES: &[u8] = &[
    0, 1, 0x7f, 0x80, 0xff, 0xc0, 0xe0, 0xf0, 0xf8, b'"', b'\\', b'{', b'}', b'[', b']', b',',
    b':', b'(', b')', b'!', b'=', b'/', b'~', b'.', b'\'', b' ', b'\n', b'-', b'0', b'9',
];

const INTERESTING_NUMBERS: &[&str] = &[
    "0",
    "-0",
    "1",
    "-1",
    "127",
    "128",
    "255",
    "256",
    "65535",
    "2147483647",
    "2147483648",
    "-2147483649",
    "4294967296",
    "9223372036854775807",
    "9223372036854775808",
    "-9223372036854775809",
    "18446744073709551615",
    "18446744073709551616",
    "1e308",
    "1e309",
    "-1e309",
    "5e-324",
    "0.1",
    "1.0",
];

fn mutate_bytes(rng: &mut StdRng, t: &Target, pool: &[Vec<u8>], data: &mut Vec<u8>) {
    let rounds = 1 + rng.random_range(0..4);
    for _ in 0..rounds {
        let len = data.len();
        let pos = rng.random_range(0..=len);
        // Nesting bursts are rare (they make big inputs, which are slow for every later step).
        let op = if rng.random_bool(0.03) {
            9
        } else {
            // Anything but 9.
            let op = rng.random_range(0..12);
            op + usize::from(op >= 9)
        };
        match op {
            0 if len > 0 => {
                let i = rng.random_range(0..len);
                data[i] ^= 1 << rng.random_range(0..8);
            }
            1 if len > 0 => {
                let i = rng.random_range(0..len);
                data[i] = rng.random();
            }
            2 if len > 0 => {
                let i = rng.random_range(0..len);
                data[i] = *pick(rng, INTERESTING_BYTES);
            }
            3 => {
                let n = rng.random_range(1..=8);
                let bytes: Vec<u8> = (0..n).map(|_| rng.random()).collect();
                data.splice(pos..pos, bytes);
            }
            4 if len > 0 => {
                let start = rng.random_range(0..len);
                let end = (start + rng.random_range(1..=16.min(len - start).max(1))).min(len);
                data.drain(start..end);
            }
            5 if len > 0 => {
                // Duplicate a range, sometimes many times.
                let start = rng.random_range(0..len);
                let end = (start + rng.random_range(1..=64)).min(len);
                let chunk = data[start..end].to_vec();
                let times = if rng.random_bool(0.1) {
                    rng.random_range(2..200)
                } else {
                    1
                };
                let at = rng.random_range(0..=len);
                let copies: Vec<u8> = chunk
                    .iter()
                    .copied()
                    .cycle()
                    .take(chunk.len() * times)
                    .collect();
                data.splice(at..at, copies);
            }
            6 => {
                let tok = token(rng, t).as_bytes().to_vec();
                data.splice(pos..pos, tok);
            }
            7 if len > 0 => {
                let tok = token(rng, t).as_bytes();
                let end = (pos + tok.len()).min(len);
                data.splice(pos.min(len)..end, tok.iter().copied());
            }
            8 => {
                // Splice: a prefix of this input and a suffix of another.
                let other = pick(rng, pool);
                let cut = rng.random_range(0..=len);
                let from = rng.random_range(0..=other.len());
                data.truncate(cut);
                data.extend_from_slice(&other[from..]);
            }
            9 => {
                // Nesting burst: an opener repeated tens to thousands of times, sometimes closed.
                let opener = pick(rng, NESTERS).as_bytes();
                let n = 1usize << rng.random_range(4..12);
                let n = rng.random_range(n..=2 * n);
                let mut burst: Vec<u8> = opener
                    .iter()
                    .copied()
                    .cycle()
                    .take(opener.len() * n)
                    .collect();
                if rng.random_bool(0.5) {
                    let closer = match opener.first() {
                        Some(b'[') => b"]".as_slice(),
                        Some(b'{') => b"}".as_slice(),
                        Some(b'(') | Some(b'a') | Some(b's') => b")".as_slice(),
                        _ => b"".as_slice(),
                    };
                    burst.extend(closer.iter().copied().cycle().take(closer.len() * n));
                }
                data.splice(pos..pos, burst);
            }
            10 => {
                // Replace a run of digits with an interesting number.
                let digits: Vec<usize> = (0..len).filter(|&i| data[i].is_ascii_digit()).collect();
                let num = pick(rng, INTERESTING_NUMBERS).as_bytes().to_vec();
                if let Some(&start) = digits.get(rng.random_range(0..digits.len().max(1))) {
                    let mut end = start;
                    while end < len && (data[end].is_ascii_digit() || data[end] == b'.') {
                        end += 1;
                    }
                    data.splice(start..end, num);
                } else {
                    data.splice(pos..pos, num);
                }
            }
            11 if len > 0 => {
                data.truncate(rng.random_range(0..len));
            }
            _ => {
                // Swap two ranges' bytes (shuffles structure).
                if len > 2 {
                    let a = rng.random_range(0..len);
                    let b = rng.random_range(0..len);
                    data.swap(a, b);
                }
            }
        }
    }
    data.truncate(MAX_LEN);
}

/// JSON pointers of (up to `limit`) nodes of `v`, the root first.
fn json_paths(v: &Value, limit: usize) -> Vec<String> {
    fn walk(v: &Value, at: &mut String, out: &mut Vec<String>, limit: usize) {
        if out.len() >= limit {
            return;
        }
        out.push(at.clone());
        let len = at.len();
        match v {
            Value::Object(m) => {
                for (k, child) in m {
                    at.push('/');
                    at.push_str(&k.replace('~', "~0").replace('/', "~1"));
                    walk(child, at, out, limit);
                    at.truncate(len);
                }
            }
            Value::Array(a) => {
                for (i, child) in a.iter().enumerate() {
                    at.push('/');
                    at.push_str(&i.to_string());
                    walk(child, at, out, limit);
                    at.truncate(len);
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(v, &mut String::new(), &mut out, limit);
    out
}

fn interesting_value(rng: &mut StdRng, t: &Target) -> Value {
    match rng.random_range(0..16) {
        0 => Value::Null,
        1 => json!(rng.random_bool(0.5)),
        2 => json!(*pick(
            rng,
            &[
                0i64,
                -1,
                1,
                i64::MAX,
                i64::MIN,
                i32::MAX as i64,
                i32::MIN as i64 - 1
            ]
        )),
        3 => json!(*pick(rng, &[u64::MAX, u32::MAX as u64 + 1, 1 << 53])),
        4 => json!(*pick(rng, &[1e308, -1e308, 0.5, -0.0, 5e-324, 1.5])),
        5 => json!(""),
        6 => json!(token(rng, t).trim_matches('"')),
        7 => json!("a".repeat(rng.random_range(1..5000))),
        8 => json!({}),
        9 => json!([]),
        10 => json!([null, "", 0]),
        11 => json!({"": "", "name": "x", "$patch": "delete"}),
        12 => {
            let n = rng.random_range(1..20);
            let s: String = (0..n)
                .map(|_| char::from_u32(rng.random_range(0..0x11000)).unwrap_or('\u{fffd}'))
                .collect();
            json!(s)
        }
        13 => json!(pick(rng, INTERESTING_NUMBERS).to_string()),
        14 => json!(["a", "a", "b"]),
        _ => {
            json!({"name": "nginx", "image": "x", "containerPort": 80, "type": "Ready", "key": "k"})
        }
    }
}

fn mutate_json(rng: &mut StdRng, t: &Target, donors: &[Value], v: &mut Value) {
    let rounds = 1 + rng.random_range(0..3);
    for _ in 0..rounds {
        let paths = json_paths(v, 1000);
        let path = pick(rng, &paths).clone();
        let action = rng.random_range(0..9);
        if action == 1 && !path.is_empty() {
            // Delete the node from its parent.
            let (parent, last) = path.rsplit_once('/').unwrap_or(("", path.as_str()));
            let last = last.replace("~1", "/").replace("~0", "~");
            match v.pointer_mut(parent) {
                Some(Value::Object(m)) => {
                    m.remove(&last);
                }
                Some(Value::Array(a)) => {
                    if let Ok(i) = last.parse::<usize>() {
                        if i < a.len() {
                            a.remove(i);
                        }
                    }
                }
                _ => {}
            }
            continue;
        }
        let donor_node = {
            let d = pick(rng, donors);
            let dp = json_paths(d, 1000);
            d.pointer(pick(rng, &dp).as_str())
                .cloned()
                .unwrap_or(Value::Null)
        };
        let Some(node) = v.pointer_mut(&path) else {
            continue;
        };
        match action {
            0 | 1 => *node = interesting_value(rng, t),
            2 => match node {
                Value::Object(m) => {
                    let key = if rng.random_bool(0.7) {
                        token(rng, t).trim_matches('"').to_string()
                    } else {
                        format!("k{}", rng.random_range(0..10))
                    };
                    let val = if rng.random_bool(0.5) {
                        interesting_value(rng, t)
                    } else {
                        donor_node
                    };
                    m.insert(key, val);
                }
                Value::Array(a) => {
                    let i = rng.random_range(0..=a.len());
                    a.insert(i, donor_node);
                }
                other => *other = donor_node,
            },
            3 => *node = donor_node,
            4 => {
                // Deepen: wrap the node in up to ~130 levels (serde_json's limit is 128).
                let depth = if rng.random_bool(0.3) {
                    rng.random_range(100..140)
                } else {
                    rng.random_range(1..20)
                };
                let mut inner = node.take();
                for _ in 0..depth {
                    inner = if rng.random_bool(0.5) {
                        json!([inner])
                    } else {
                        json!({"a": inner})
                    };
                }
                *node = inner;
            }
            5 => {
                // Duplicate: arrays grow by copies of their elements; objects gain a copy.
                match node {
                    Value::Array(a) if !a.is_empty() => {
                        let n = rng.random_range(1..=a.len().min(64));
                        for _ in 0..n {
                            let e = a[rng.random_range(0..a.len())].clone();
                            a.push(e);
                        }
                    }
                    other => {
                        let copy = other.clone();
                        *other = json!([copy.clone(), copy]);
                    }
                }
            }
            6 => {
                // Change the type, keeping the content.
                *node = match node.take() {
                    Value::String(s) => s
                        .parse::<i64>()
                        .map(Value::from)
                        .unwrap_or_else(|_| json!([s])),
                    Value::Number(n) => json!(n.to_string()),
                    Value::Bool(b) => json!(b.to_string()),
                    Value::Null => json!({}),
                    Value::Array(a) => a.into_iter().next().unwrap_or(Value::Null),
                    Value::Object(m) => Value::Array(m.into_iter().map(|(_, v)| v).collect()),
                };
            }
            7 => {
                if let Value::String(s) = node {
                    let mut bytes = s.clone().into_bytes();
                    mutate_bytes(rng, t, &[s.clone().into_bytes()], &mut bytes);
                    bytes.truncate(4096);
                    *s = String::from_utf8_lossy(&bytes).into_owned();
                } else {
                    *node = interesting_value(rng, t);
                }
            }
            _ => {
                // Swap with a sibling position: move this node into a random other node of the tree.
                let copy = node.clone();
                let other = pick(rng, &paths).clone();
                if let Some(dst) = v.pointer_mut(&other) {
                    *dst = copy;
                }
            }
        }
    }
}

/// Inputs every target runs before mutating: deep nesting of every shape, and the extremes.
fn special_inputs() -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for opener in NESTERS {
        for n in [129, 1000, 10_000] {
            out.push(opener.repeat(n).into_bytes());
        }
    }
    out.push(format!("{}{}", "[".repeat(5000), "]".repeat(5000)).into_bytes());
    out.push(format!("{}1{}", "{\"a\":".repeat(127), "}".repeat(127)).into_bytes());
    out.push(format!("{}{}", "(".repeat(5000), ")".repeat(5000)).into_bytes());
    out.push(format!("{}true{}", "[".repeat(127), "]".repeat(127)).into_bytes());
    // Long flat chains (no brackets): operators, selections, ternaries, lists.
    for unit in ["1+", "a.", "!", "-", "x?y:", "a,", "1&&", "a==", "~1/"] {
        out.push(format!("{}1", unit.repeat(2_000)).into_bytes());
    }
    out.push(format!("{}1", "1+".repeat(30_000)).into_bytes());
    out.push(format!("{}1", "~1/".repeat(30_000)).into_bytes());
    out.push(b"".to_vec());
    out.push(b"\0".to_vec());
    out.push(vec![0xff; 64]);
    out.push("a".repeat(100_000).into_bytes());
    out.push("a,".repeat(20_000).into_bytes());
    out.push("\"\\u0000\"".repeat(1000).into_bytes());
    out
}

// ---------------------------------------------------------------------------------------------
// The engine
// ---------------------------------------------------------------------------------------------

#[derive(Default)]
struct Current {
    started: Option<Instant>,
    iteration: u64,
    input: Vec<u8>,
}

#[derive(Default)]
struct Report {
    runs: u64,
    accepted: u64,
    findings: Vec<String>,
    /// Panics the code under test caught itself, and inputs over the time bound but within ten
    /// times it (failures only with `TURTLES_FUZZ_STRICT`).
    notes: Vec<String>,
    slowest: Duration,
}

struct Finding<'a> {
    target: &'a str,
    seed: u64,
    iteration: u64,
    kind: &'a str,
    message: &'a str,
    input: &'a [u8],
}

fn save(f: &Finding<'_>) -> String {
    let dir = failure_dir();
    let _ = std::fs::create_dir_all(&dir);
    let file = dir.join(format!(
        "{}-s{:x}-i{}.{}",
        f.target, f.seed, f.iteration, f.kind
    ));
    let written = std::fs::write(&file, f.input).is_ok();
    let repro = format!(
        "TURTLES_FUZZ_REPRO={} cargo test -p turtles --lib fuzz::repro -- --nocapture",
        file.display()
    );
    let _ = std::fs::write(
        file.with_extension(format!("{}.txt", f.kind)),
        format!(
            "target: {}\nseed: {:#x}\niteration: {}\nkind: {}\nmessage: {}\ninput ({} bytes): {:?}\nreplay: {repro}\n",
            f.target,
            f.seed,
            f.iteration,
            f.kind,
            f.message,
            f.input.len(),
            String::from_utf8_lossy(&f.input[..f.input.len().min(2000)])
        ),
    );
    if written {
        format!("{}", file.display())
    } else {
        "<could not write the input>".to_string()
    }
}

fn fuzz_loop(t: &Target, cfg: &Config, current: &Mutex<Current>) -> Report {
    QUIET.set(true);
    let seed = cfg.seed ^ name_hash(t.name);
    let mut rng = StdRng::seed_from_u64(seed);
    let mut runner = (t.runner)();
    let seeds = (t.seeds)();
    assert!(!seeds.is_empty(), "{}: no seeds", t.name);
    let mut fixed: Vec<Vec<u8>> = seeds.clone();
    fixed.extend(special_inputs());
    let json_seeds: Vec<Value> = match &t.json {
        Some(codec) => seeds.iter().filter_map(|s| (codec.decode)(s)).collect(),
        None => Vec::new(),
    };
    let iters = cfg.iters.unwrap_or(t.default_iters);
    let total = fixed.len() as u64 + iters;
    let mut accepted_pool: Vec<Vec<u8>> = Vec::new();
    let mut next_slot = 0usize;
    let mut report = Report::default();
    let mut signatures: HashMap<String, u64> = HashMap::new();
    let trace_file = failure_dir().join(format!("{}.current", t.name));
    if cfg.trace {
        let _ = std::fs::create_dir_all(failure_dir());
    }
    for i in 0..total {
        let input = if let Some(f) = fixed.get(i as usize) {
            f.clone()
        } else {
            let base = if accepted_pool.is_empty() || rng.random_bool(0.4) {
                pick(&mut rng, &seeds)
            } else {
                pick(&mut rng, &accepted_pool)
            }
            .clone();
            let mut structured = None;
            if let Some(codec) = &t.json {
                if !json_seeds.is_empty() && rng.random_bool(0.5) {
                    let mut v = (codec.decode)(&base)
                        .unwrap_or_else(|| pick(&mut rng, &json_seeds).clone());
                    mutate_json(&mut rng, t, &json_seeds, &mut v);
                    structured = (codec.encode)(&v).filter(|b| b.len() <= MAX_LEN);
                }
            }
            structured.unwrap_or_else(|| {
                let mut b = base;
                let pool = if accepted_pool.is_empty() {
                    &seeds
                } else {
                    &accepted_pool
                };
                mutate_bytes(&mut rng, t, pool, &mut b);
                b
            })
        };
        if cfg.trace {
            let _ = std::fs::write(&trace_file, &input);
        }
        {
            let mut c = current.lock().unwrap_or_else(|p| p.into_inner());
            c.started = Some(Instant::now());
            c.iteration = i;
            c.input.clone_from(&input);
        }
        LAST_PANIC.set(None);
        CONTAINED.take();
        let start = Instant::now();
        let outcome = catch_unwind(AssertUnwindSafe(|| runner(&input)));
        let elapsed = start.elapsed();
        current.lock().unwrap_or_else(|p| p.into_inner()).started = None;
        report.runs += 1;
        report.slowest = report.slowest.max(elapsed);
        let problem = match outcome {
            Ok(true) => {
                report.accepted += 1;
                if input.len() > POOL_MAX_LEN {
                    // Tested, but not mutated further: big inputs slow every later step.
                } else if accepted_pool.len() < 256 {
                    accepted_pool.push(input.clone());
                } else {
                    accepted_pool[next_slot] = input.clone();
                    next_slot = (next_slot + 1) % 256;
                }
                None
            }
            Ok(false) => None,
            Err(payload) => Some((
                "panic",
                LAST_PANIC
                    .take()
                    .unwrap_or_else(|| panic_text(payload.as_ref())),
            )),
        };
        // A slow input is timed twice more (the machine may just have been busy): it is a
        // finding only if every run exceeds the bound.
        let bound = time_bound(cfg, input.len());
        let mut fastest = elapsed;
        for _ in 0..2 {
            if fastest <= bound {
                break;
            }
            let again = Instant::now();
            let _ = catch_unwind(AssertUnwindSafe(|| runner(&input)));
            fastest = fastest.min(again.elapsed());
        }
        let contained = CONTAINED.take();
        let contained = (!contained.is_empty()).then(|| {
            let at = CEL_PANIC.lock().unwrap_or_else(|p| p.into_inner()).take();
            (
                "contained",
                format!(
                    "{} (caught by the code under test: {})",
                    at.unwrap_or_else(|| "a panic".into()),
                    contained[0]
                ),
            )
        });
        // Over the bound: reported; over ten times the bound (super-linear work, whatever the
        // load of the machine): a failure.
        let slow = (fastest > bound).then(|| {
            (
                if fastest > bound * 10 {
                    "very-slow"
                } else {
                    "slow"
                },
                format!("took {fastest:?} at best of 3 runs (bound {bound:?})"),
            )
        });
        for (kind, message) in problem.into_iter().chain(contained).chain(slow) {
            // Three saved inputs per distinct message (for contained panics: per location),
            // counted after that.
            let first = message.lines().next().unwrap_or("");
            let signature = match kind {
                "contained" => format!(
                    "{kind}: {}",
                    first.split(" (caught by").next().unwrap_or(first)
                ),
                "slow" | "very-slow" => format!("{kind}: inputs over the time bound"),
                _ => format!("{kind}: {}", short(first)),
            };
            let seen = signatures.entry(signature.clone()).or_insert(0);
            *seen += 1;
            if *seen <= 3 {
                let file = save(&Finding {
                    target: t.name,
                    seed: cfg.seed,
                    iteration: i,
                    kind,
                    message: &message,
                    input: &input,
                });
                eprintln!(
                    "fuzz {}: {kind} at iteration {i} (seed {:#x}): {}\n  input ({} bytes) saved to {file}",
                    t.name,
                    cfg.seed,
                    short(&message),
                    input.len()
                );
            }
        }
    }
    for (signature, count) in signatures {
        let line = format!("{signature} ({count}x)");
        let note = signature.starts_with("contained") || signature.starts_with("slow");
        if note && !cfg.strict {
            report.notes.push(line);
        } else {
            report.findings.push(line);
        }
    }
    report.findings.sort();
    report.notes.sort();
    QUIET.set(false);
    report
}

/// Runs a target on a thread with a tokio worker's stack, under a watchdog.
fn fuzz(name: &str) {
    install_panic_hook();
    let cfg = config();
    let target = targets()
        .into_iter()
        .find(|t| t.name == name)
        .unwrap_or_else(|| panic!("no fuzz target {name}"));
    let current = Arc::new(Mutex::new(Current::default()));
    let started = Instant::now();
    ACTIVE.fetch_add(1, Ordering::SeqCst);
    let worker = {
        let current = current.clone();
        let cfg = config();
        std::thread::Builder::new()
            .name(format!("fuzz-{name}"))
            .stack_size(cfg.stack)
            .spawn(move || fuzz_loop(&target, &cfg, &current))
            .expect("spawn fuzz thread")
    };
    while !worker.is_finished() {
        std::thread::sleep(Duration::from_millis(20));
        let c = current.lock().unwrap_or_else(|p| p.into_inner());
        let hang = time_bound(&cfg, c.input.len()) * 10;
        if let Some(at) = c.started.filter(|at| at.elapsed() > hang) {
            let file = save(&Finding {
                target: name,
                seed: cfg.seed,
                iteration: c.iteration,
                kind: "hang",
                message: &format!("still running after {:?}", at.elapsed()),
                input: &c.input,
            });
            ACTIVE.fetch_sub(1, Ordering::SeqCst);
            panic!(
                "fuzz {name}: input {} (seed {:#x}) still running after {hang:?}; saved to {file}",
                c.iteration, cfg.seed
            );
        }
    }
    ACTIVE.fetch_sub(1, Ordering::SeqCst);
    let report = match worker.join() {
        Ok(r) => r,
        Err(p) => panic!(
            "fuzz {name}: the engine panicked: {}",
            panic_text(p.as_ref())
        ),
    };
    println!(
        "fuzz {name}: seed {:#x}, {} inputs ({} accepted) in {:.2?}, slowest {:.2?}, {} findings",
        cfg.seed,
        report.runs,
        report.accepted,
        started.elapsed(),
        report.slowest,
        report.findings.len()
    );
    for c in &report.notes {
        println!("fuzz {name}: note: {c}");
    }
    assert!(
        report.findings.is_empty(),
        "fuzz {name} (seed {:#x}) found problems; inputs in {}:\n  {}",
        cfg.seed,
        failure_dir().display(),
        report.findings.join("\n  ")
    );
}

macro_rules! fuzz_tests {
    ($($name:ident),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                fuzz(stringify!($name));
            }
        )*
    };
}

fuzz_tests!(
    json_body,
    delete_options,
    protobuf,
    json_patch,
    merge_patch,
    strategic_patch,
    label_selector,
    field_selector,
    continue_token,
    resource_version,
    list_query,
    crd,
    cel_rule,
    printer_json_path,
);

/// Replays one saved input (`TURTLES_FUZZ_REPRO=path`, the target from the file name) without
/// catching its panic, so the backtrace shows. Does nothing when the variable is unset.
#[test]
fn repro() {
    let Some(path) = std::env::var_os("TURTLES_FUZZ_REPRO") else {
        return;
    };
    let path = PathBuf::from(path);
    let input = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let file = path
        .file_name()
        .and_then(|f| f.to_str())
        .unwrap_or_default()
        .to_string();
    let target = targets()
        .into_iter()
        .filter(|t| {
            file.starts_with(&format!("{}-", t.name)) || file.starts_with(&format!("{}.", t.name))
        })
        .max_by_key(|t| t.name.len())
        .unwrap_or_else(|| panic!("{file}: the name does not start with a target's name"));
    let stack = config().stack;
    println!(
        "replaying {} ({} bytes) on {}",
        path.display(),
        input.len(),
        target.name
    );
    let result = std::thread::Builder::new()
        .stack_size(stack)
        .spawn(move || {
            let mut run = (target.runner)();
            let start = Instant::now();
            let accepted = run(&input);
            (accepted, start.elapsed())
        })
        .expect("spawn")
        .join();
    match result {
        Ok((accepted, took)) => println!("accepted: {accepted}, took {took:?}"),
        Err(p) => panic!("the input panicked: {}", panic_text(p.as_ref())),
    }
}
