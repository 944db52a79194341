//! `ApiError` -> HTTP response: a `Status` body with kube's code, in the media type the
//! request's `Accept` negotiates (kube's `ErrorNegotiated`).

use axum::body::Body;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::Value;

use super::negotiation::{self, Endpoint, Media};
use crate::model::ApiError;

/// The `Status` an error response carries, for [`negotiate_error`] to write again.
#[derive(Debug, Clone)]
pub struct StatusBody(pub Value);

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
        let status = self.to_status();
        let mut body = status.to_string();
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
        // Written again as the request's `Accept` asks by `negotiate_error` (not the timeout
        // filter's answer: kube writes that one itself, unnegotiated).
        if !self.timeout_filter {
            resp.extensions_mut().insert(StatusBody(status));
        }
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

/// An API object written as YAML, with kube's content type.
pub fn yaml_response(code: StatusCode, yaml: String) -> Response {
    let mut resp = Response::new(Body::from(yaml));
    *resp.status_mut() = code;
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/yaml"),
    );
    resp
}

/// An error's answer as kube's `ErrorNegotiated` writes it for the request's `Accept` (no
/// transform, no server version: `DefaultEndpointRestrictions`): JSON as it is, YAML if that
/// is what fits first; when nothing fits, kube's `WriteRawJSON` (the `Status` indented by two
/// spaces, as Go's `json.MarshalIndent` writes it, without a final newline). Responses that
/// are no error `Status` pass as they are.
pub fn negotiate_error(resp: Response, accept: &str) -> Response {
    let Some(StatusBody(status)) = resp.extensions().get::<StatusBody>().cloned() else {
        return resp;
    };
    let body = match negotiation::negotiate(accept, Endpoint::Errors) {
        Some(n) if n.media == Media::Yaml => (super::yaml::to_yaml(&status), "application/yaml"),
        Some(_) => return resp,
        None => (go_indented_json(&status), "application/json"),
    };
    let (mut parts, _) = resp.into_parts();
    parts.headers.remove(header::CONTENT_LENGTH);
    parts
        .headers
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(body.1));
    Response::from_parts(parts, Body::from(body.0))
}

/// Go's `json.MarshalIndent(v, "", "  ")`: two-space indentation, `"key": value`, empty maps
/// and lists as `{}` and `[]`, and Go's escapes of `<`, `>`, `&`, U+2028 and U+2029 (which
/// occur only inside strings).
fn go_indented_json(v: &Value) -> String {
    let pretty = serde_json::to_string_pretty(v).unwrap_or_else(|_| v.to_string());
    let mut out = String::with_capacity(pretty.len());
    for c in pretty.chars() {
        match c {
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => {
                out.push_str(&format!("\\u{:04x}", c as u32));
            }
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;

    async fn answer(accept: &str) -> (StatusCode, String, String, Option<String>) {
        let mut e = ApiError::new(404, "NotFound", "configmaps \"a<b\" not found");
        e.retry_after = Some(3);
        let resp = negotiate_error(e.into_response(), accept);
        let code = resp.status();
        let get = |h: header::HeaderName| {
            resp.headers()
                .get(h)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        let ct = get(header::CONTENT_TYPE).unwrap_or_default();
        let retry = get(header::RETRY_AFTER);
        let bytes = resp.into_body().collect().await.expect("body").to_bytes();
        (
            code,
            ct,
            String::from_utf8(bytes.to_vec()).expect("UTF-8"),
            retry,
        )
    }

    #[tokio::test]
    async fn errors_are_written_as_accept_negotiates() {
        let (code, ct, body, retry) = answer("application/json").await;
        assert_eq!((code.as_u16(), ct.as_str()), (404, "application/json"));
        assert!(
            body.starts_with("{\"kind\":\"Status\"") && body.ends_with("}\n"),
            "{body}"
        );
        assert_eq!(retry.as_deref(), Some("3"));
        let (code, ct, body, retry) = answer("application/yaml").await;
        assert_eq!((code.as_u16(), ct.as_str()), (404, "application/yaml"));
        assert!(
            body.starts_with("apiVersion: v1\ncode: 404\ndetails:\n"),
            "{body}"
        );
        assert!(body.contains("\nkind: Status\nmessage: configmaps \"a<b\" not found\nmetadata: {}\nreason: NotFound\nstatus: Failure\n"), "{body}");
        assert_eq!(retry.as_deref(), Some("3"));
        // A transform is no error's: the next clause, or nothing.
        let (_, ct, _, _) =
            answer("application/json;as=Table;g=meta.k8s.io;v=v1, application/yaml").await;
        assert_eq!(ct, "application/yaml");
        // Nothing fits: the Status indented, as Go's `MarshalIndent` writes it.
        let (code, ct, body, _) = answer("text/html").await;
        assert_eq!((code.as_u16(), ct.as_str()), (404, "application/json"));
        assert!(
            body.starts_with(
                "{\n  \"kind\": \"Status\",\n  \"apiVersion\": \"v1\",\n  \"metadata\": {},\n"
            ),
            "{body}"
        );
        assert!(
            body.contains("\"message\": \"configmaps \\\"a\\u003cb\\\" not found\""),
            "{body}"
        );
        assert!(body.ends_with("\n}"), "{body}");
    }
}
