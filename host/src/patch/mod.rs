//! PATCH bodies: JSON patch (RFC 6902), JSON merge patch (RFC 7386) and Kubernetes strategic
//! merge patch for built-in kinds. Pure functions over JSON values.

pub mod strategic;

use serde_json::Value;

use crate::model::{ApiError, ResourceInfo};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatchType {
    Json,
    Merge,
    Strategic,
}

pub const ACCEPTED: &str = "application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json";

impl PatchType {
    /// From a request's Content-Type (parameters ignored).
    pub fn from_content_type(ct: &str) -> Result<Self, ApiError> {
        let essence = ct
            .split(';')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase();
        match essence.as_str() {
            "application/json-patch+json" => Ok(Self::Json),
            "application/merge-patch+json" => Ok(Self::Merge),
            "application/strategic-merge-patch+json" => Ok(Self::Strategic),
            "application/apply-patch+yaml" | "application/apply-patch+cbor" => {
                Err(ApiError::unsupported_media_type(format!(
                    "the body of the request was in an unknown format - accepted media types include: {ACCEPTED} (server-side apply is not supported yet; use client-side kubectl apply)"
                )))
            }
            _ => Err(ApiError::unsupported_media_type(format!(
                "the body of the request was in an unknown format - accepted media types include: {ACCEPTED}"
            ))),
        }
    }
}

/// Decode a patch body.
pub fn parse(t: PatchType, body: &[u8]) -> Result<Value, ApiError> {
    let v: Value = serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))?;
    match t {
        PatchType::Json if !v.is_array() => Err(ApiError::bad_request(
            "json patch must be an array of operations",
        )),
        PatchType::Merge | PatchType::Strategic if !v.is_object() => {
            Err(ApiError::bad_request("merge patch must be a JSON object"))
        }
        _ => Ok(v),
    }
}

/// Apply a decoded patch to the current object.
pub fn apply(
    t: PatchType,
    current: &Value,
    patch: &Value,
    ri: &ResourceInfo,
) -> Result<Value, ApiError> {
    match t {
        PatchType::Json => {
            let ops: json_patch::Patch = serde_json::from_value(patch.clone())
                .map_err(|e| ApiError::bad_request(format!("error decoding json patch: {e}")))?;
            let mut doc = current.clone();
            json_patch::patch(&mut doc, &ops).map_err(|e| {
                ApiError::new(
                    422,
                    "Invalid",
                    format!("the server rejected our request due to an error in our request: {e}"),
                )
            })?;
            Ok(doc)
        }
        PatchType::Merge => {
            let mut doc = current.clone();
            json_patch::merge(&mut doc, patch);
            Ok(doc)
        }
        PatchType::Strategic => {
            let schema = strategic::PatchSchema::for_kind(&ri.group, &ri.kind);
            strategic::apply(current, patch, &schema).map_err(|e| {
                ApiError::new(
                    422,
                    "Invalid",
                    format!("the server rejected our request due to an error in our request: {e}"),
                )
            })
        }
    }
}
