//! `meta.k8s.io/v1` Table responses for `kubectl get`: kube's columns for the built-in kinds,
//! Name and Age otherwise, and each row's `object` as PartialObjectMetadata (or the full object
//! with `includeObject=Object`).

use std::sync::Arc;

use serde_json::{json, Value};

use super::handlers::Query;
use crate::model::registry::PrinterColumn;
use crate::model::ResourceInfo;
use crate::store::StoredObject;

struct Column {
    name: &'static str,
    kind: &'static str,
    format: &'static str,
    priority: u8,
    description: &'static str,
    cell: fn(&Value) -> Value,
}

const NAME: Column = Column {
    name: "Name",
    kind: "string",
    format: "name",
    priority: 0,
    description: "Name must be unique within a namespace.",
    cell: |o| json!(crate::model::meta::name(o)),
};

const AGE: Column = Column {
    name: "Age",
    kind: "string",
    format: "",
    priority: 0,
    description: "CreationTimestamp is a timestamp representing the server time when this object was created.",
    cell: |o| json!(age(crate::model::meta::meta_str(o, "creationTimestamp"))),
};

fn count(v: Option<&Value>) -> usize {
    v.and_then(Value::as_object).map(|m| m.len()).unwrap_or(0)
}

fn str_at<'a>(o: &'a Value, path: &[&str]) -> &'a str {
    let mut cur = o;
    for p in path {
        match cur.get(p) {
            Some(v) => cur = v,
            None => return "",
        }
    }
    cur.as_str().unwrap_or("")
}

fn columns(ri: &ResourceInfo) -> Vec<Column> {
    let extra: Vec<Column> = match (ri.group.as_str(), ri.resource.as_str()) {
        ("", "configmaps") => vec![Column {
            name: "Data",
            kind: "integer",
            format: "",
            priority: 0,
            description: "Data contains the configuration data.",
            cell: |o| json!(count(o.get("data")) + count(o.get("binaryData"))),
        }],
        ("", "secrets") => vec![
            Column {
                name: "Type",
                kind: "string",
                format: "",
                priority: 0,
                description: "Used to facilitate programmatic handling of secret data.",
                cell: |o| json!(str_at(o, &["type"])),
            },
            Column {
                name: "Data",
                kind: "integer",
                format: "",
                priority: 0,
                description: "Data contains the secret data.",
                cell: |o| json!(count(o.get("data"))),
            },
        ],
        ("", "namespaces") => vec![Column {
            name: "Status",
            kind: "string",
            format: "",
            priority: 0,
            description: "The status of the namespace",
            cell: |o| json!(str_at(o, &["status", "phase"])),
        }],
        ("", "serviceaccounts") => vec![Column {
            name: "Secrets",
            kind: "string",
            format: "",
            priority: 0,
            description: "Secrets is the list of secrets allowed to be used by pods running using this ServiceAccount.",
            cell: |o| json!(o.get("secrets").and_then(Value::as_array).map(Vec::len).unwrap_or(0)),
        }],
        ("", "pods") => vec![
            Column {
                name: "Ready",
                kind: "string",
                format: "",
                priority: 0,
                description: "The aggregate readiness state of this pod for accepting traffic.",
                cell: pod_ready,
            },
            Column {
                name: "Status",
                kind: "string",
                format: "",
                priority: 0,
                description: "The aggregate status of the containers in this pod.",
                cell: pod_status,
            },
            Column {
                name: "Restarts",
                kind: "string",
                format: "",
                priority: 0,
                description: "The number of times the containers in this pod have been restarted.",
                cell: |o| {
                    let n: i64 = o
                        .pointer("/status/containerStatuses")
                        .and_then(Value::as_array)
                        .map(|a| a.iter().filter_map(|c| c.get("restartCount").and_then(Value::as_i64)).sum())
                        .unwrap_or(0);
                    json!(n.to_string())
                },
            },
            Column {
                name: "IP",
                kind: "string",
                format: "",
                priority: 1,
                description: "IP address allocated to the pod.",
                cell: |o| json!(none_if_empty(str_at(o, &["status", "podIP"]))),
            },
            Column {
                name: "Node",
                kind: "string",
                format: "",
                priority: 1,
                description: "Name of the Node this pod is scheduled onto.",
                cell: |o| json!(none_if_empty(str_at(o, &["spec", "nodeName"]))),
            },
            Column {
                name: "Nominated Node",
                kind: "string",
                format: "",
                priority: 1,
                description: "Name of the node where the pod was nominated to be scheduled.",
                cell: |o| json!(none_if_empty(str_at(o, &["status", "nominatedNodeName"]))),
            },
            Column {
                name: "Readiness Gates",
                kind: "string",
                format: "",
                priority: 1,
                description: "The readiness gates of the pod and how many of them are ready.",
                cell: pod_readiness_gates,
            },
        ],
        // kube's order puts Version after Age: the list places AGE itself.
        ("", "nodes") => vec![
            Column {
                name: "Status",
                kind: "string",
                format: "",
                priority: 0,
                description: "The status of the node",
                cell: node_status,
            },
            Column {
                name: "Roles",
                kind: "string",
                format: "",
                priority: 0,
                description: "The roles of the node",
                cell: node_roles,
            },
            AGE,
            Column {
                name: "Version",
                kind: "string",
                format: "",
                priority: 0,
                description: "Kubelet Version reported by the node.",
                cell: |o| json!(str_at(o, &["status", "nodeInfo", "kubeletVersion"])),
            },
            Column {
                name: "Internal-IP",
                kind: "string",
                format: "",
                priority: 1,
                description: "List of addresses reachable to the node. Queried from cloud provider, if available.",
                cell: |o| json!(node_address(o, "InternalIP")),
            },
            Column {
                name: "External-IP",
                kind: "string",
                format: "",
                priority: 1,
                description: "List of addresses reachable to the node. Queried from cloud provider, if available.",
                cell: |o| json!(node_address(o, "ExternalIP")),
            },
            Column {
                name: "OS-Image",
                kind: "string",
                format: "",
                priority: 1,
                description: "OS Image reported by the node from /etc/os-release (e.g. Debian GNU/Linux 7 (wheezy)).",
                cell: |o| json!(none_if_empty(str_at(o, &["status", "nodeInfo", "osImage"]))),
            },
            Column {
                name: "Kernel-Version",
                kind: "string",
                format: "",
                priority: 1,
                description: "Kernel Version reported by the node from 'uname -r' (e.g. 3.16.0-0.bpo.4-amd64).",
                cell: |o| json!(none_if_empty(str_at(o, &["status", "nodeInfo", "kernelVersion"]))),
            },
            Column {
                name: "Container-Runtime",
                kind: "string",
                format: "",
                priority: 1,
                description: "ContainerRuntime Version reported by the node through runtime remote API (e.g. containerd://1.4.2).",
                cell: |o| {
                    json!(none_if_empty(str_at(
                        o,
                        &["status", "nodeInfo", "containerRuntimeVersion"]
                    )))
                },
            },
        ],
        ("apps", "deployments") => {
            let mut cols = vec![
                Column {
                    name: "Ready",
                    kind: "string",
                    format: "",
                    priority: 0,
                    description: "Number of the pod with ready state",
                    cell: |o| {
                        json!(format!(
                            "{}/{}",
                            int_at(o, "/status/readyReplicas"),
                            int_at(o, "/spec/replicas")
                        ))
                    },
                },
                Column {
                    name: "Up-to-date",
                    kind: "string",
                    format: "",
                    priority: 0,
                    description: "Total number of non-terminated pods targeted by this deployment that have the desired template spec.",
                    cell: |o| json!(int_at(o, "/status/updatedReplicas")),
                },
                Column {
                    name: "Available",
                    kind: "string",
                    format: "",
                    priority: 0,
                    description: "Total number of available pods (ready for at least minReadySeconds) targeted by this deployment.",
                    cell: |o| json!(int_at(o, "/status/availableReplicas")),
                },
            ];
            cols.extend(workload_wide_columns());
            cols
        }
        ("apps", "replicasets") => {
            let mut cols = vec![
                Column {
                    name: "Desired",
                    kind: "integer",
                    format: "",
                    priority: 0,
                    description: "Replicas is the number of desired replicas.",
                    cell: |o| json!(int_at(o, "/spec/replicas")),
                },
                Column {
                    name: "Current",
                    kind: "integer",
                    format: "",
                    priority: 0,
                    description: "Replicas is the most recently observed number of replicas.",
                    cell: |o| json!(int_at(o, "/status/replicas")),
                },
                Column {
                    name: "Ready",
                    kind: "integer",
                    format: "",
                    priority: 0,
                    description: "The number of ready replicas for this replica set.",
                    cell: |o| json!(int_at(o, "/status/readyReplicas")),
                },
            ];
            cols.extend(workload_wide_columns());
            cols
        }
        ("turtles.dev", "controllers") => vec![
            Column {
                name: "Phase",
                kind: "string",
                format: "",
                priority: 0,
                description: "Loading, Running, Failed or CrashLoop.",
                cell: |o| json!(str_at(o, &["status", "phase"])),
            },
            Column {
                name: "Reconciles",
                kind: "integer",
                format: "",
                priority: 0,
                description: "Reconcile calls since the controller was loaded.",
                cell: |o| o.pointer("/status/reconciles").cloned().unwrap_or(json!(0)),
            },
            Column {
                name: "Errors",
                kind: "integer",
                format: "",
                priority: 0,
                description: "Failed reconciles (errors and traps).",
                cell: |o| o.pointer("/status/errors").cloned().unwrap_or(json!(0)),
            },
            Column {
                name: "Queue",
                kind: "integer",
                format: "",
                priority: 0,
                description: "Keys waiting to be reconciled.",
                cell: |o| o.pointer("/status/queueDepth").cloned().unwrap_or(json!(0)),
            },
            Column {
                name: "Last Error",
                kind: "string",
                format: "",
                priority: 1,
                description: "The most recent failure.",
                cell: |o| json!(str_at(o, &["status", "lastError", "message"])),
            },
        ],
        ("coordination.k8s.io", "leases") => vec![Column {
            name: "Holder",
            kind: "string",
            format: "",
            priority: 0,
            description: "The holder of the lease.",
            cell: |o| json!(str_at(o, &["spec", "holderIdentity"])),
        }],
        ("", "events") => vec![
            Column {
                name: "Type",
                kind: "string",
                format: "",
                priority: 0,
                description: "Type of this event (Normal, Warning).",
                cell: |o| json!(str_at(o, &["type"])),
            },
            Column {
                name: "Reason",
                kind: "string",
                format: "",
                priority: 0,
                description: "Why the action was taken.",
                cell: |o| json!(str_at(o, &["reason"])),
            },
            Column {
                name: "Object",
                kind: "string",
                format: "",
                priority: 0,
                description: "The object this event is about.",
                cell: |o| {
                    json!(format!(
                        "{}/{}",
                        str_at(o, &["involvedObject", "kind"]).to_lowercase(),
                        str_at(o, &["involvedObject", "name"])
                    ))
                },
            },
            Column {
                name: "Message",
                kind: "string",
                format: "",
                priority: 0,
                description: "A human-readable description of the status of this operation.",
                cell: |o| json!(str_at(o, &["message"])),
            },
        ],
        _ => Vec::new(),
    };
    let mut cols = vec![NAME];
    if extra.iter().any(|c| c.name == AGE.name) {
        // The kind's list places Age itself.
        cols.extend(extra);
        return cols;
    }
    let (before_age, after_age): (Vec<Column>, Vec<Column>) =
        extra.into_iter().partition(|c| c.priority == 0);
    cols.extend(before_age);
    cols.push(AGE);
    cols.extend(after_age);
    cols
}

fn int_at(o: &Value, pointer: &str) -> i64 {
    o.pointer(pointer).and_then(Value::as_i64).unwrap_or(0)
}

/// The `-o wide` columns of Deployments and ReplicaSets.
fn template_containers(o: &Value, field: &str) -> Value {
    let names: Vec<&str> = o
        .pointer("/spec/template/spec/containers")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(|c| c.get(field)?.as_str()).collect())
        .unwrap_or_default();
    json!(names.join(","))
}

fn workload_wide_columns() -> Vec<Column> {
    vec![
        Column {
            name: "Containers",
            kind: "string",
            format: "",
            priority: 1,
            description: "Names of each container in the template.",
            cell: |o| template_containers(o, "name"),
        },
        Column {
            name: "Images",
            kind: "string",
            format: "",
            priority: 1,
            description: "Images referenced by each container in the template.",
            cell: |o| template_containers(o, "image"),
        },
        Column {
            name: "Selector",
            kind: "string",
            format: "",
            priority: 1,
            description: "Label selector for pods.",
            cell: |o| {
                json!(o
                    .pointer("/spec/selector")
                    .map(crate::selector::label_selector_string)
                    .filter(|s| !s.is_empty())
                    .unwrap_or_else(|| "<none>".into()))
            },
        },
    ]
}

/// kubectl's pod STATUS: the phase (or status.reason), overridden by a waiting or terminated
/// container's reason, and `Terminating` once deletion started.
fn pod_status(o: &Value) -> Value {
    let mut reason = match str_at(o, &["status", "reason"]) {
        "" => str_at(o, &["status", "phase"]).to_owned(),
        r => r.to_owned(),
    };
    for c in o
        .pointer("/status/containerStatuses")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if let Some(r) = c
            .pointer("/state/waiting/reason")
            .and_then(Value::as_str)
            .filter(|r| !r.is_empty())
        {
            reason = r.to_owned();
        } else if let Some(r) = c
            .pointer("/state/terminated/reason")
            .and_then(Value::as_str)
            .filter(|r| !r.is_empty())
        {
            reason = r.to_owned();
        }
    }
    if crate::model::meta::meta_str(o, "deletionTimestamp").is_some() && reason != "NodeLost" {
        reason = "Terminating".into();
    }
    json!(reason)
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

/// The node's addresses of one type, comma separated, or `<none>`.
fn node_address(o: &Value, kind: &str) -> String {
    let list: Vec<&str> = o
        .pointer("/status/addresses")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|a| a.get("type").and_then(Value::as_str) == Some(kind))
        .filter_map(|a| a.get("address").and_then(Value::as_str))
        .collect();
    if list.is_empty() {
        "<none>".into()
    } else {
        list.join(",")
    }
}

/// kubectl's READINESS GATES: `<ready>/<total>` of `spec.readinessGates`, or `<none>`.
fn pod_readiness_gates(o: &Value) -> Value {
    let gates: Vec<&str> = o
        .pointer("/spec/readinessGates")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|g| g.get("conditionType").and_then(Value::as_str))
        .collect();
    if gates.is_empty() {
        return json!("<none>");
    }
    let ready = gates
        .iter()
        .filter(|g| {
            o.pointer("/status/conditions")
                .and_then(Value::as_array)
                .is_some_and(|cs| {
                    cs.iter().any(|c| {
                        c.get("type").and_then(Value::as_str) == Some(**g)
                            && c.get("status").and_then(Value::as_str) == Some("True")
                    })
                })
        })
        .count();
    json!(format!("{ready}/{}", gates.len()))
}

fn none_if_empty(s: &str) -> &str {
    if s.is_empty() {
        "<none>"
    } else {
        s
    }
}

fn pod_ready(o: &Value) -> Value {
    let total = o
        .pointer("/spec/containers")
        .and_then(Value::as_array)
        .map(Vec::len)
        .unwrap_or(0);
    let ready = o
        .pointer("/status/containerStatuses")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter(|c| c.get("ready") == Some(&Value::Bool(true)))
                .count()
        })
        .unwrap_or(0);
    json!(format!("{ready}/{total}"))
}

fn node_status(o: &Value) -> Value {
    let ready = o
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .and_then(|a| {
            a.iter()
                .find(|c| c.get("type").and_then(Value::as_str) == Some("Ready"))
        })
        .and_then(|c| c.get("status").and_then(Value::as_str))
        .map(|s| if s == "True" { "Ready" } else { "NotReady" })
        .unwrap_or("Unknown");
    let mut s = ready.to_owned();
    if o.pointer("/spec/unschedulable") == Some(&Value::Bool(true)) {
        s.push_str(",SchedulingDisabled");
    }
    json!(s)
}

/// kube's `duration.HumanDuration` of the time since `ts`.
pub fn age(ts: Option<&str>) -> String {
    let Some(t) = ts.and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok()) else {
        return "<unknown>".into();
    };
    let secs = (chrono::Utc::now() - t.with_timezone(&chrono::Utc)).num_seconds();
    human_duration(secs)
}

pub fn human_duration(secs: i64) -> String {
    if secs < -1 {
        return "<invalid>".into();
    }
    let secs = secs.max(0);
    let (m, h) = (secs / 60, secs / 3600);
    let d = h / 24;
    let y = d / 365;
    if secs < 120 {
        format!("{secs}s")
    } else if m < 10 {
        if secs % 60 == 0 {
            format!("{m}m")
        } else {
            format!("{m}m{}s", secs % 60)
        }
    } else if m < 180 {
        format!("{m}m")
    } else if h < 8 {
        if m % 60 == 0 {
            format!("{h}h")
        } else {
            format!("{h}h{}m", m % 60)
        }
    } else if h < 48 {
        format!("{h}h")
    } else if h < 24 * 8 {
        if h % 24 == 0 {
            format!("{d}d")
        } else {
            format!("{d}d{}h", h % 24)
        }
    } else if h < 24 * 365 * 2 {
        format!("{d}d")
    } else if h < 24 * 365 * 8 {
        if d % 365 == 0 {
            format!("{y}y")
        } else {
            format!("{y}y{}d", d % 365)
        }
    } else {
        format!("{y}y")
    }
}

pub fn render(
    ri: &ResourceInfo,
    items: &[Arc<StoredObject>],
    rv: &str,
    continue_token: Option<&str>,
    query: &Query,
) -> Value {
    if let Some(custom) = &ri.custom {
        return render_custom(&custom.printer_columns, items, rv, continue_token, query);
    }
    let cols = columns(ri);
    let include = query
        .get("includeObject")
        .map(String::as_str)
        .unwrap_or("Metadata");
    let defs: Vec<Value> = cols
        .iter()
        .map(|c| json!({"name": c.name, "type": c.kind, "format": c.format, "description": c.description, "priority": c.priority}))
        .collect();
    let rows: Vec<Value> = items
        .iter()
        .map(|o| {
            let cells: Vec<Value> = cols.iter().map(|c| (c.cell)(&o.value)).collect();
            row(cells, o, include)
        })
        .collect();
    table(defs, rows, rv, continue_token)
}

fn row(cells: Vec<Value>, o: &StoredObject, include: &str) -> Value {
    let mut row = json!({"cells": cells});
    match include {
        "None" => {}
        "Object" => row["object"] = o.value.clone(),
        _ => {
            row["object"] = json!({
                "kind": "PartialObjectMetadata",
                "apiVersion": "meta.k8s.io/v1",
                "metadata": o.value.get("metadata").cloned().unwrap_or_else(|| json!({})),
            })
        }
    }
    row
}

fn table(defs: Vec<Value>, rows: Vec<Value>, rv: &str, continue_token: Option<&str>) -> Value {
    let mut meta = json!({"resourceVersion": rv});
    if let Some(c) = continue_token {
        meta["continue"] = json!(c);
    }
    json!({"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": meta, "columnDefinitions": defs, "rows": rows})
}

/// A custom resource's Table: Name, then its `additionalPrinterColumns` (Age when it has none).
fn render_custom(
    printer: &[PrinterColumn],
    items: &[Arc<StoredObject>],
    rv: &str,
    continue_token: Option<&str>,
    query: &Query,
) -> Value {
    let include = query
        .get("includeObject")
        .map(String::as_str)
        .unwrap_or("Metadata");
    let age = PrinterColumn {
        name: "Age".into(),
        kind: "date".into(),
        format: String::new(),
        description: AGE.description.into(),
        priority: 0,
        json_path: ".metadata.creationTimestamp".into(),
    };
    let cols: Vec<&PrinterColumn> = if printer.is_empty() {
        vec![&age]
    } else {
        printer.iter().collect()
    };
    let mut defs = vec![
        json!({"name": "Name", "type": "string", "format": "name", "description": NAME.description, "priority": 0}),
    ];
    defs.extend(cols.iter().map(|c| {
        json!({"name": c.name, "type": c.kind, "format": c.format, "description": c.description, "priority": c.priority})
    }));
    let rows = items
        .iter()
        .map(|o| {
            let mut cells = vec![json!(crate::model::meta::name(&o.value))];
            cells.extend(cols.iter().map(|c| custom_cell(c, &o.value)));
            row(cells, o, include)
        })
        .collect();
    table(defs, rows, rv, continue_token)
}

fn custom_cell(c: &PrinterColumn, obj: &Value) -> Value {
    let Some(v) = crate::crd::eval_json_path(obj, &c.json_path) else {
        return Value::Null;
    };
    match (c.kind.as_str(), &v) {
        ("date", Value::String(ts)) => json!(age(Some(ts))),
        ("integer" | "number" | "boolean", _) => v,
        (_, Value::String(_)) => v,
        (_, Value::Array(a)) => json!(a
            .iter()
            .map(|e| match e {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            })
            .collect::<Vec<_>>()
            .join(",")),
        (_, other) => json!(other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ri(group: &str, resource: &str) -> ResourceInfo {
        let reg = crate::model::Registry::with_builtins();
        let found = reg
            .snapshot()
            .iter()
            .find(|r| r.group == group && r.resource == resource)
            .cloned();
        (*found.expect("built-in")).clone()
    }

    #[test]
    fn nodes_print_like_kubectl() {
        let node = json!({"metadata": {"name": "n1", "creationTimestamp": "2026-01-01T00:00:00Z",
                                       "labels": {"node-role.kubernetes.io/control-plane": ""}},
                          "status": {"conditions": [{"type": "Ready", "status": "True"}],
                                     "addresses": [{"type": "InternalIP", "address": "10.0.0.1"}],
                                     "nodeInfo": {"kubeletVersion": "v1.33.0"}}});
        let cols = columns(&ri("", "nodes"));
        let names: Vec<&str> = cols.iter().map(|c| c.name).collect();
        assert_eq!(
            names,
            [
                "Name",
                "Status",
                "Roles",
                "Age",
                "Version",
                "Internal-IP",
                "External-IP",
                "OS-Image",
                "Kernel-Version",
                "Container-Runtime"
            ]
        );
        let cells: Vec<Value> = cols.iter().map(|c| (c.cell)(&node)).collect();
        assert_eq!(cells[1], "Ready");
        assert_eq!(cells[2], "control-plane");
        assert_eq!(cells[4], "v1.33.0");
        assert_eq!(cells[5], "10.0.0.1");
        assert_eq!(cells[6], "<none>");
    }

    #[test]
    fn pods_show_their_status_like_kubectl() {
        let cols = columns(&ri("", "pods"));
        let names: Vec<&str> = cols.iter().map(|c| c.name).collect();
        assert_eq!(
            names,
            [
                "Name",
                "Ready",
                "Status",
                "Restarts",
                "Age",
                "IP",
                "Node",
                "Nominated Node",
                "Readiness Gates"
            ]
        );
        let creating = json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c"}]},
                              "status": {"phase": "Pending", "containerStatuses": [
                                  {"ready": false, "state": {"waiting": {"reason": "ContainerCreating"}}}]}});
        assert_eq!(pod_status(&creating), "ContainerCreating");
        let mut deleting = creating.clone();
        deleting["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
        assert_eq!(pod_status(&deleting), "Terminating");
        assert_eq!(pod_readiness_gates(&creating), "<none>");
    }

    #[test]
    fn durations_read_like_kubectl() {
        assert_eq!(human_duration(5), "5s");
        assert_eq!(human_duration(119), "119s");
        assert_eq!(human_duration(150), "2m30s");
        assert_eq!(human_duration(600), "10m");
        assert_eq!(human_duration(3 * 3600 + 60), "3h1m");
        assert_eq!(human_duration(30 * 3600), "30h");
        assert_eq!(human_duration(3 * 86400), "3d");
        assert_eq!(human_duration(-5), "<invalid>");
    }
}
