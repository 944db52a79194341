//! `service-controller`: kube's service controller (the cloud provider's load-balancer
//! controller, `k8s.io/cloud-provider/controllers/service`, kube 1.34) with a built-in "cloud"
//! shaped as k3s's ServiceLB: a Service's load balancer is its nodes' own addresses.
//!
//! - A Service of type `LoadBalancer` with no `loadBalancerClass` gets kube's finalizer
//!   `service.kubernetes.io/load-balancer-cleanup`, the Events `EnsuringLoadBalancer` and
//!   `EnsuredLoadBalancer`, and `status.loadBalancer.ingress`: one entry per eligible Node (not
//!   being deleted, not labelled `node.kubernetes.io/exclude-from-external-load-balancers`, not
//!   tainted `ToBeDeletedByClusterAutoscaler`), its ExternalIP when any eligible Node has one,
//!   else its InternalIP, as k3s's ServiceLB picks them. With no eligible Node: the Warning
//!   `UnAvailableLoadBalancer` and no ingress (`EXTERNAL-IP <pending>`).
//! - Nodes coming and going update every ensured load balancer (`UpdatedLoadBalancer`).
//! - A Service that leaves type `LoadBalancer`, or is deleted, has its load balancer deleted
//!   (`DeletingLoadBalancer`, `DeletedLoadBalancer`), its status cleared and the finalizer
//!   removed.
//! - A Service with a `loadBalancerClass` is another implementation's, left alone.
//!
//! Nothing listens on those addresses (the fake kubelet runs no process); the status is what
//! clients and tools read (`kubectl get svc`, `helm install --wait`).
//!
//! Watches: Services (the primary) and Nodes (cluster-scoped, key `("", NODE)`: every ensured
//! load balancer is updated).

pub mod plan;

use turtles_controller::{
    api, events, export, json, meta, ApiError, Controller, Gvr, Object, ObjectKey, Outcome,
    Permission, Registration, Value, Watch,
};

use plan::{desired_ingress, needs_cleanup, wants_load_balancer, FINALIZER};

const SERVICES: Gvr<'static> = Gvr::core("services");
const NODES: Gvr<'static> = Gvr::core("nodes");

struct ServiceController;

impl Controller for ServiceController {
    fn register() -> Registration {
        Registration::new(Watch::of(SERVICES))
            .watch(Watch::of(NODES))
            .permission(Permission::core(&["services"], &["get", "patch", "update"]))
            .permission(Permission::core(&["services/status"], &["patch", "update"]))
            .permission(Permission::core(&["events"], &["create", "patch"]))
            // One at a time: a Node's key and a Service's key may sync the same Service.
            .max_concurrent_reconciles(1)
    }

    fn reconcile(key: ObjectKey, service: Option<Object>) -> Outcome {
        let result = if key.namespace.is_empty() {
            // A Node changed: every ensured load balancer follows the Nodes.
            let nodes = turtles_controller::cache::list(NODES, None);
            let mut all = Ok(());
            for svc in turtles_controller::cache::list(SERVICES, None) {
                if wants_load_balancer(&svc) && plan::has_finalizer(&svc) {
                    if let Err(e) = update_hosts(&svc, &nodes) {
                        all = Err(e);
                    }
                }
            }
            all
        } else {
            match service {
                Some(svc) => sync(svc.value()),
                None => Ok(()),
            }
        };
        match result {
            Ok(()) => Outcome::Done,
            Err(e) => Outcome::TransientError(e),
        }
    }
}

export!(ServiceController);

fn path(svc: &Value) -> String {
    SERVICES.object_path(
        meta::namespace(svc).unwrap_or_default(),
        meta::name(svc).unwrap_or_default(),
    )
}

fn record(svc: &Value, warning: bool, reason: &str, note: &str) {
    events::best_effort(svc, warning, reason, note);
}

fn failed(svc: &Value, e: &ApiError) -> String {
    record(
        svc,
        true,
        "SyncLoadBalancerFailed",
        &format!("Error syncing load balancer: {}", e.message),
    );
    e.to_string()
}

/// Write `status.loadBalancer` when it differs (kube's `LoadBalancerStatusEqual`); the
/// Service as it is then.
fn write_status(svc: &Value, ingress: &[Value]) -> Result<Value, ApiError> {
    let current = svc
        .pointer("/status/loadBalancer/ingress")
        .and_then(Value::as_array)
        .map_or(&[][..], |v| v);
    if plan::same_ingress(current, ingress) {
        return Ok(svc.clone());
    }
    // A merge patch: `null` removes the list.
    let load_balancer = if ingress.is_empty() {
        json!({"ingress": null})
    } else {
        json!({"ingress": ingress})
    };
    api::patch_merge(
        &format!("{}/status", path(svc)),
        &json!({"status": {"loadBalancer": load_balancer}}),
    )
}

/// Add or remove the finalizer with a strategic merge patch, as kube's controller does: the
/// other finalizers are left as they are, whoever wrote them meanwhile.
fn set_finalizer(svc: &Value, present: bool) -> Result<Value, ApiError> {
    let patch = if present {
        json!({"metadata": {"finalizers": [FINALIZER]}})
    } else {
        json!({"metadata": {"$deleteFromPrimitiveList/finalizers": [FINALIZER]}})
    };
    api::request(
        "PATCH",
        &path(svc),
        "application/strategic-merge-patch+json",
        Some(&patch),
    )
}

fn sync(svc: &Value) -> Result<(), String> {
    if needs_cleanup(svc) {
        // kube: Deleting only when a load balancer exists; Deleted always.
        let exists = svc
            .pointer("/status/loadBalancer/ingress")
            .and_then(Value::as_array)
            .is_some_and(|l| !l.is_empty());
        if exists {
            record(svc, false, "DeletingLoadBalancer", "Deleting load balancer");
        }
        let svc = write_status(svc, &[]).map_err(|e| failed(svc, &e))?;
        return match set_finalizer(&svc, false) {
            Ok(_) | Err(ApiError { code: 404, .. }) => {
                record(&svc, false, "DeletedLoadBalancer", "Deleted load balancer");
                Ok(())
            }
            Err(e) => Err(failed(&svc, &e)),
        };
    }
    if !wants_load_balancer(svc) || meta::is_deleting(svc) {
        return Ok(());
    }
    let nodes = turtles_controller::cache::list(NODES, None);
    let ingress = desired_ingress(&nodes);
    let current = svc
        .pointer("/status/loadBalancer/ingress")
        .and_then(Value::as_array)
        .map_or(&[][..], |v| v);
    // Ensured already, and nothing changed: no Events (kube syncs on changes that matter).
    if plan::has_finalizer(svc) && plan::same_ingress(current, &ingress) {
        return Ok(());
    }
    record(svc, false, "EnsuringLoadBalancer", "Ensuring load balancer");
    let svc = if plan::has_finalizer(svc) {
        svc.clone()
    } else {
        set_finalizer(svc, true).map_err(|e| failed(svc, &e))?
    };
    if ingress.is_empty() {
        record(
            &svc,
            true,
            "UnAvailableLoadBalancer",
            "There are no available nodes for LoadBalancer",
        );
    }
    record(&svc, false, "EnsuredLoadBalancer", "Ensured load balancer");
    write_status(&svc, &ingress)
        .map(|_| ())
        .map_err(|e| failed(&svc, &e))
}

/// kube's node sync: an ensured load balancer follows the eligible Nodes.
fn update_hosts(svc: &Value, nodes: &[Value]) -> Result<(), String> {
    let ingress = desired_ingress(nodes);
    let current = svc
        .pointer("/status/loadBalancer/ingress")
        .and_then(Value::as_array)
        .map_or(&[][..], |v| v);
    if plan::same_ingress(current, &ingress) {
        return Ok(());
    }
    if ingress.is_empty() {
        record(
            svc,
            true,
            "UnAvailableLoadBalancer",
            "There are no available nodes for LoadBalancer",
        );
    }
    match write_status(svc, &ingress) {
        Ok(_) => {
            record(
                svc,
                false,
                "UpdatedLoadBalancer",
                "Updated load balancer with new hosts",
            );
            Ok(())
        }
        Err(e) => {
            let names: Vec<&str> = nodes.iter().filter_map(meta::name).collect();
            record(
                svc,
                true,
                "UpdateLoadBalancerFailed",
                &format!(
                    "Error updating load balancer with new hosts {names:?} [node names limited, total number of nodes: {}], error: {}",
                    names.len(),
                    e.message
                ),
            );
            Err(e.to_string())
        }
    }
}
