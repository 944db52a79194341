//! Discovery (`/api`, `/apis`, `/api/v1`, `/apis/G/V`), `/version`, health, OpenAPI.

use std::sync::Arc;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};

use super::error::json_response;
use super::AppState;
use crate::model::{ApiError, ResourceInfo};

/// The Kubernetes API level this server speaks, as semver with our own build metadata.
pub const KUBE_MAJOR: &str = "1";
pub const KUBE_MINOR: &str = "34";

pub async fn version() -> Response {
    let body = json!({
        "major": KUBE_MAJOR,
        "minor": KUBE_MINOR,
        "gitVersion": format!("v{KUBE_MAJOR}.{KUBE_MINOR}.0+turtles.{}", env!("CARGO_PKG_VERSION")),
        "gitCommit": "",
        "gitTreeState": "clean",
        "buildDate": "1970-01-01T00:00:00Z",
        "goVersion": "n/a (rust)",
        "compiler": "rustc",
        "platform": format!("{}/{}", std::env::consts::OS, std::env::consts::ARCH),
    });
    json_response(StatusCode::OK, body.to_string())
}

pub async fn healthy() -> &'static str {
    "ok"
}

pub async fn core_versions() -> Response {
    let body = json!({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": ""}],
    });
    json_response(StatusCode::OK, body.to_string())
}

pub async fn group_list(State(state): State<Arc<AppState>>) -> Response {
    let groups: Vec<Value> = state
        .registry
        .groups()
        .into_iter()
        .map(|(name, versions)| {
            let vs: Vec<Value> = versions
                .iter()
                .map(|v| json!({"groupVersion": format!("{name}/{v}"), "version": v}))
                .collect();
            let preferred = vs.first().cloned().unwrap_or(Value::Null);
            json!({"name": name, "versions": vs, "preferredVersion": preferred})
        })
        .collect();
    let body = json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups});
    json_response(StatusCode::OK, body.to_string())
}

fn resource_entry(r: &ResourceInfo) -> Value {
    let mut e = json!({
        "name": r.resource,
        "singularName": r.singular,
        "namespaced": r.namespaced(),
        "kind": r.kind,
        "verbs": r.verbs(),
        "storageVersionHash": "",
    });
    if !r.short_names.is_empty() {
        e["shortNames"] = json!(r.short_names);
    }
    if !r.categories.is_empty() {
        e["categories"] = json!(r.categories);
    }
    e
}

/// `APIResourceList` for one group/version, or 404.
pub fn resource_list(state: &AppState, group: &str, version: &str) -> Result<Response, ApiError> {
    let resources = state.registry.in_group_version(group, version);
    if resources.is_empty() {
        return Err(ApiError::path_not_found());
    }
    let mut list = Vec::new();
    for r in &resources {
        list.push(resource_entry(r));
        if r.status_subresource {
            list.push(json!({
                "name": format!("{}/status", r.resource),
                "singularName": "",
                "namespaced": r.namespaced(),
                "kind": r.kind,
                "verbs": ["get", "patch", "update"],
            }));
        }
    }
    let gv = if group.is_empty() {
        version.to_owned()
    } else {
        format!("{group}/{version}")
    };
    let body = json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": list});
    Ok(json_response(StatusCode::OK, body.to_string()))
}

/// A named group's `APIGroup` (`/apis/G`).
pub fn group(state: &AppState, group: &str) -> Result<Response, ApiError> {
    let groups = state.registry.groups();
    let versions = groups.get(group).ok_or_else(ApiError::path_not_found)?;
    let vs: Vec<Value> = versions
        .iter()
        .map(|v| json!({"groupVersion": format!("{group}/{v}"), "version": v}))
        .collect();
    let preferred = vs.first().cloned().unwrap_or(Value::Null);
    let body = json!({"kind": "APIGroup", "apiVersion": "v1", "name": group, "versions": vs, "preferredVersion": preferred});
    Ok(json_response(StatusCode::OK, body.to_string()))
}

pub async fn openapi_v2() -> Response {
    ApiError::path_not_found().into_response()
}

/// OpenAPI v3 index: one document per group-version, addressed with a content hash.
pub async fn openapi_v3_root(State(state): State<Arc<AppState>>) -> Response {
    let mut paths = serde_json::Map::new();
    let mut gvs: Vec<(String, String)> = vec![(String::new(), "v1".into())];
    for (g, vs) in state.registry.groups() {
        for v in vs {
            gvs.push((g.clone(), v));
        }
    }
    for (g, v) in gvs {
        let doc = super::openapi::document(&state, &g, &v);
        let hash = fnv_hex(doc.to_string().as_bytes());
        let key = if g.is_empty() {
            format!("api/{v}")
        } else {
            format!("apis/{g}/{v}")
        };
        paths.insert(
            key.clone(),
            json!({"serverRelativeURL": format!("/openapi/v3/{key}?hash={hash}")}),
        );
    }
    json_response(StatusCode::OK, json!({"paths": paths}).to_string())
}

pub async fn openapi_v3_doc(
    State(state): State<Arc<AppState>>,
    axum::extract::Path(path): axum::extract::Path<String>,
) -> Response {
    let parts: Vec<&str> = path.split('/').collect();
    let (g, v) = match parts.as_slice() {
        ["api", v] => ("", *v),
        ["apis", g, v] => (*g, *v),
        _ => return ApiError::path_not_found().into_response(),
    };
    let core_v1 = g.is_empty() && v == "v1";
    if !core_v1 && !state.registry.has_group_version(g, v) {
        return ApiError::path_not_found().into_response();
    }
    let doc = super::openapi::document(&state, g, v);
    json_response(StatusCode::OK, doc.to_string())
}

fn fnv_hex(data: &[u8]) -> String {
    let mut h: u64 = 0xcbf29ce484222325;
    for b in data {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x100000001b3);
    }
    format!("{h:016X}")
}
