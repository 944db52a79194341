//! `ApiError` -> HTTP response: a `Status` JSON body with kube's code.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

use crate::model::ApiError;

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        // kube's JSON encoder ends every body with a newline.
        let mut body = self.to_status().to_string();
        body.push('\n');
        let code = StatusCode::from_u16(self.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let mut resp = (code, body).into_response();
        resp.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        if let Some(s) = self.retry_after {
            if let Ok(v) = HeaderValue::from_str(&s.to_string()) {
                resp.headers_mut().insert(header::RETRY_AFTER, v);
            }
        }
        resp
    }
}

/// An API object (object, list, Table, Status-like review answer) as kube's JSON serializer
/// writes it: the bytes followed by a newline (Go's `json.Encoder`), with kube's content type.
pub fn object_json_response(code: StatusCode, json: &[u8]) -> Response {
    let mut body = Vec::with_capacity(json.len() + 1);
    body.extend_from_slice(json);
    body.push(b'\n');
    json_response(code, body)
}

/// A JSON response with kube's content type.
pub fn json_response(code: StatusCode, body: impl Into<axum::body::Body>) -> Response {
    let mut resp = Response::new(body.into());
    *resp.status_mut() = code;
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    resp
}
