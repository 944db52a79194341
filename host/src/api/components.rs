//! `componentstatuses` (core v1 ComponentStatus, deprecated in kube 1.19 and still served): the
//! health of the control plane's parts, probed when read, as kube's
//! `pkg/registry/core/componentstatus` answers `kubectl get componentstatuses`. Nothing is
//! stored; only `get` and `list`.
//!
//! turtles' parts are in one process: `etcd-0` is the store (healthy while it takes writes, as
//! the `etcd` health check), `controller-manager` the built-in controllers, which run as long
//! as the host answers. turtles has no kube-scheduler (Pods are placed by controllers), so none
//! is listed.

use std::sync::Arc;

use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::Response;
use serde_json::{json, Value};

use super::handlers::{object_response, Query, Target};
use super::AppState;
use crate::model::{ApiError, ResourceInfo};
use crate::selector::{FieldSelector, LabelSelector};
use crate::service::{ListResult, FIELD_SELECTORS};
use crate::store::StoredObject;

/// The parts, by name, in the order listed.
fn components(state: &AppState) -> Vec<(&'static str, Result<(), String>)> {
    let store = match state.service.store.health().unavailable {
        None => Ok(()),
        Some(why) => Err(why),
    };
    vec![("controller-manager", Ok(())), ("etcd-0", store)]
}

/// kube's `getComponentStatus`: one `Healthy` condition, `True` with the probe's `ok`, or
/// `False` with its error.
fn status(name: &str, health: &Result<(), String>) -> Value {
    let condition = match health {
        Ok(()) => json!({"type": "Healthy", "status": "True", "message": "ok"}),
        Err(why) => json!({"type": "Healthy", "status": "False", "error": why}),
    };
    json!({
        "kind": "ComponentStatus",
        "apiVersion": "v1",
        "metadata": {"name": name, "creationTimestamp": null},
        "conditions": [condition],
    })
}

fn unstored(v: &Value) -> Result<Arc<StoredObject>, ApiError> {
    StoredObject::unstored(v.clone())
        .map(Arc::new)
        .map_err(|e| ApiError::internal(format!("component status does not serialize: {e}")))
}

/// `GET /api/v1/componentstatuses[/NAME]`; any other method is kube's 405, a watch its
/// `watch is not supported`.
pub(super) fn serve(
    state: &AppState,
    target: &Target,
    method: &Method,
    headers: &HeaderMap,
    query: &Query,
    watch: bool,
) -> Result<Response, ApiError> {
    let ri: &ResourceInfo = &target.ri;
    if method != Method::GET {
        return Err(ApiError::method_not_allowed(
            "the server does not allow this method on the requested resource",
        ));
    }
    // kube's get and list handlers negotiate the answer first.
    super::handlers::output(headers, ri)?;
    if watch {
        return Err(ApiError::method_not_allowed(format!(
            "watch is not supported on resources of kind \"{}\"",
            ri.resource
        )));
    }
    let all = components(state);
    if let Some(name) = &target.name {
        // kube's REST answers an unknown name with a plain error: 500, no reason.
        let (name, health) = all
            .iter()
            .find(|(n, _)| n == name)
            .ok_or_else(|| ApiError::new(500, "", format!("Component not found: {name}")))?;
        let obj = unstored(&status(name, health))?;
        return Ok(object_response(ri, headers, query, StatusCode::OK, obj));
    }
    // Selectors are applied (kube's `componentStatusPredicate`): the parts have no labels.
    let labels = LabelSelector::parse(query.get("labelSelector").map_or("", String::as_str))
        .map_err(|e| ApiError::bad_request(e.to_string()))?;
    let fields = FieldSelector::parse(
        query.get("fieldSelector").map_or("", String::as_str),
        FIELD_SELECTORS,
    )
    .map_err(|e| ApiError::bad_request(e.to_string()))?;
    let mut items = Vec::new();
    for (name, health) in &all {
        let selected = labels.matches(|_| None)
            && fields.matches(|f| match f {
                "metadata.name" => Some(*name),
                "metadata.namespace" => Some(""),
                _ => None,
            });
        if selected {
            items.push(unstored(&status(name, health))?);
        }
    }
    super::handlers::list_response(
        ri,
        headers,
        query,
        ListResult {
            rv: 0,
            items,
            continue_token: None,
            remaining: None,
        },
        // A few small computed objects: rendered on the workers.
        None,
    )
}
