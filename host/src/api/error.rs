//! `ApiError` -> HTTP response: a `Status` JSON body with kube's code.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

use crate::model::ApiError;

/// What kube answers when Go's `WriteHeader` panics (a code of more than three digits, which
/// only a passed-through Status can carry): its panic recovery's `http.Error`.
const PANICKED: &str = "This request caused apiserver to panic. Look in the logs for details.\n";

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        if self.passed.as_ref().is_some_and(|p| p.code > 999) {
            let mut resp = (StatusCode::INTERNAL_SERVER_ERROR, PANICKED).into_response();
            let headers = resp.headers_mut();
            headers.insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/plain; charset=utf-8"),
            );
            headers.insert(
                header::X_CONTENT_TYPE_OPTIONS,
                HeaderValue::from_static("nosniff"),
            );
            return resp;
        }
        // kube's JSON encoder ends every body with a newline.
        let mut body = self.to_status().to_string();
        body.push('\n');
        let code = StatusCode::from_u16(self.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let mut resp = (code, body).into_response();
        // kube's timeout filter sets no content type: Go's server sniffs the JSON as text.
        let content_type = if self.timeout_filter {
            "text/plain; charset=utf-8"
        } else {
            "application/json"
        };
        resp.headers_mut()
            .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
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
