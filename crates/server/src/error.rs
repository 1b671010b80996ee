//! Every error of the session API is `{"error": {"code", "message"}}` with a status that says who
//! must act: [`ApiError`] maps the host's errors and the request's own faults, and [`json_errors`]
//! rewrites the few plain-text errors produced below the handlers (the request guard's 401/403,
//! axum's path and method rejections) into the same shape.

use axum::body::Body;
use axum::extract::Request;
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use hands_agent::host::HostError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The body of every error response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ErrorBody {
    /// What went wrong.
    pub error: ErrorDetail,
}

/// What went wrong, for programs (`code`) and people (`message`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ErrorDetail {
    /// `not_found`, `conflict`, `bad_request`, `invalid_body`, `payload_too_large`,
    /// `unsupported_media_type`, `unauthorized`, `forbidden`, `method_not_allowed`, `no_model`,
    /// `store`, `internal`, `signin_refused` (a one-time sign-in code that is used, expired or
    /// unknown).
    pub code: String,
    /// What happened and what to do next.
    pub message: String,
}

/// An error response of the session API.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    /// The HTTP status.
    pub status: StatusCode,
    /// [`ErrorDetail::code`].
    pub code: &'static str,
    /// [`ErrorDetail::message`].
    pub message: String,
}

impl ApiError {
    /// 400 `bad_request`.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self { status: StatusCode::BAD_REQUEST, code: "bad_request", message: message.into() }
    }

    /// 404 `not_found`.
    pub fn not_found(message: impl Into<String>) -> Self {
        Self { status: StatusCode::NOT_FOUND, code: "not_found", message: message.into() }
    }

    /// 409 `conflict`.
    pub fn conflict(message: impl Into<String>) -> Self {
        Self { status: StatusCode::CONFLICT, code: "conflict", message: message.into() }
    }
}

impl From<HostError> for ApiError {
    fn from(err: HostError) -> Self {
        let message = err.to_string();
        let (status, code) = match err {
            HostError::NotFound(_) => (StatusCode::NOT_FOUND, "not_found"),
            HostError::Conflict(_) => (StatusCode::CONFLICT, "conflict"),
            HostError::BadRequest(_) => (StatusCode::BAD_REQUEST, "bad_request"),
            HostError::NoModel => (StatusCode::SERVICE_UNAVAILABLE, "no_model"),
            HostError::Draining => (StatusCode::SERVICE_UNAVAILABLE, "draining"),
            // The forwarding layer sends the request to the lease holder on this status.
            HostError::Elsewhere(_) => (StatusCode::MISDIRECTED_REQUEST, "elsewhere"),
            HostError::Store(_) => (StatusCode::INTERNAL_SERVER_ERROR, "store"),
        };
        // A missing model is the operator's choice, not a fault of hands.
        if status == StatusCode::INTERNAL_SERVER_ERROR {
            tracing::error!(%message, "session API request failed");
        }
        Self { status, code, message }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body =
            ErrorBody { error: ErrorDetail { code: self.code.into(), message: self.message } };
        (self.status, axum::Json(body)).into_response()
    }
}

/// The `code` for an error status that carries no code of its own.
fn code_of(status: StatusCode) -> &'static str {
    match status {
        StatusCode::BAD_REQUEST => "bad_request",
        StatusCode::UNAUTHORIZED => "unauthorized",
        StatusCode::FORBIDDEN => "forbidden",
        StatusCode::NOT_FOUND => "not_found",
        StatusCode::METHOD_NOT_ALLOWED => "method_not_allowed",
        StatusCode::CONFLICT => "conflict",
        StatusCode::PAYLOAD_TOO_LARGE => "payload_too_large",
        StatusCode::UNSUPPORTED_MEDIA_TYPE => "unsupported_media_type",
        s if s.is_server_error() => "internal",
        _ => "bad_request",
    }
}

/// A handler that panicked (a bug): 500 `internal` instead of a dropped connection.
pub fn panic_response(panic: Box<dyn std::any::Any + Send + 'static>) -> Response {
    let what = panic
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| panic.downcast_ref::<&str>().copied())
        .unwrap_or("a panic");
    tracing::error!(panic = what, "a session API handler panicked");
    ApiError {
        status: StatusCode::INTERNAL_SERVER_ERROR,
        code: "internal",
        message: format!("hands failed inside this request ({what}); the log has the details"),
    }
    .into_response()
}

/// Largest plain-text error body carried over into a JSON error's message.
const MAX_PLAIN_ERROR: usize = 16 * 1024;

/// Middleware: an error response that is not JSON yet (the guard's 401/403, axum's rejections of
/// a path or a method) becomes `{"error": {code, message}}`, keeping its status and headers
/// (`WWW-Authenticate`, `Allow`).
pub async fn json_errors(request: Request, next: Next) -> Response {
    let response = next.run(request).await;
    let status = response.status();
    let is_json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if !(status.is_client_error() || status.is_server_error()) || is_json {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let text = match axum::body::to_bytes(body, MAX_PLAIN_ERROR).await {
        Ok(bytes) => String::from_utf8_lossy(&bytes).trim().to_owned(),
        Err(_) => String::new(),
    };
    let message = if text.is_empty() {
        status.canonical_reason().unwrap_or("error").to_owned()
    } else {
        text
    };
    let body = ErrorBody { error: ErrorDetail { code: code_of(status).into(), message } };
    // Serialising two strings cannot fail; the status is kept either way.
    let bytes = serde_json::to_vec(&body).unwrap_or_default();
    parts.headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    parts.headers.remove(header::CONTENT_LENGTH);
    Response::from_parts(parts, Body::from(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use hands_store::StoreError;

    #[test]
    fn host_errors_map_to_their_statuses() {
        let cases = [
            (HostError::NotFound("session x".into()), 404, "not_found"),
            (HostError::Conflict("a turn is running".into()), 409, "conflict"),
            (HostError::BadRequest("no such root".into()), 400, "bad_request"),
            (HostError::NoModel, 503, "no_model"),
            (HostError::Store(StoreError::Backend("disk full".into())), 500, "store"),
            // A session deleted while another request loaded it: gone, not a server error (the
            // session API fuzzer found it as a 500).
            (HostError::from(StoreError::NotFound("session x".into())), 404, "not_found"),
        ];
        for (err, status, code) in cases {
            let api = ApiError::from(err);
            assert_eq!(api.status.as_u16(), status);
            assert_eq!(api.code, code);
            assert!(!api.message.is_empty());
        }
    }
}
