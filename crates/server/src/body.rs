//! [`JsonBody`]: a request body parsed once into its typed form ([`OptionalJsonBody`]: one that
//! may be left out). Every fault is the client's and says so: a body that is not JSON by its
//! `Content-Type` is 415, a body over `[server] max_body_bytes` is 413, malformed JSON or a wrong
//! type is 400 with serde's message (line, column, the field).

use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use axum::http::{StatusCode, header};
use serde::de::DeserializeOwned;

use crate::error::ApiError;
use crate::state::AppState;

/// A JSON request body of type `T`.
#[derive(Debug, Clone)]
pub struct JsonBody<T>(pub T);

/// A JSON request body of type `T` that may be left out (no body, or only white space): then
/// `T::default()`.
#[derive(Debug, Clone)]
pub struct OptionalJsonBody<T>(pub T);

/// The body's `Content-Type` and bytes.
async fn read(request: Request, state: &AppState) -> Result<(Option<String>, Bytes), ApiError> {
    let content_type = request
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let bytes = Bytes::from_request(request, state).await.map_err(|rejection| {
        if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ApiError {
                status: StatusCode::PAYLOAD_TOO_LARGE,
                code: "payload_too_large",
                message: format!(
                    "the body is larger than {} bytes: send less, or raise [server] \
                     max_body_bytes on the server",
                    state.max_body_bytes
                ),
            }
        } else {
            ApiError::bad_request(format!("cannot read the body: {}", rejection.body_text()))
        }
    })?;
    Ok((content_type, bytes))
}

/// `bytes` as `T`, when `content_type` says JSON.
fn parse<T: DeserializeOwned>(content_type: Option<&str>, bytes: &[u8]) -> Result<T, ApiError> {
    if !content_type.is_some_and(is_json) {
        return Err(ApiError {
            status: StatusCode::UNSUPPORTED_MEDIA_TYPE,
            code: "unsupported_media_type",
            message: format!(
                "the body must be JSON sent with Content-Type: application/json (got {})",
                content_type.map_or("no Content-Type".to_owned(), |t| format!("{t:?}"))
            ),
        });
    }
    serde_json::from_slice(bytes).map_err(|err| ApiError {
        status: StatusCode::BAD_REQUEST,
        code: "invalid_body",
        message: format!("invalid JSON body: {err}"),
    })
}

impl<T: DeserializeOwned> FromRequest<AppState> for JsonBody<T> {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &AppState) -> Result<Self, ApiError> {
        // The type is checked before the body is read: a wrong one is refused at once.
        let content_type =
            request.headers().get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok());
        if !content_type.is_some_and(is_json) {
            return parse::<T>(content_type, b"").map(JsonBody);
        }
        let (content_type, bytes) = read(request, state).await?;
        parse(content_type.as_deref(), &bytes).map(JsonBody)
    }
}

impl<T: DeserializeOwned + Default> FromRequest<AppState> for OptionalJsonBody<T> {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &AppState) -> Result<Self, ApiError> {
        let (content_type, bytes) = read(request, state).await?;
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Ok(Self(T::default()));
        }
        parse(content_type.as_deref(), &bytes).map(OptionalJsonBody)
    }
}

/// `application/json`, or any `+json` type, with or without parameters.
fn is_json(content_type: &str) -> bool {
    let essence = content_type.split(';').next().unwrap_or("").trim().to_ascii_lowercase();
    essence == "application/json"
        || (essence.starts_with("application/") && essence.ends_with("+json"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_content_types() {
        for ok in ["application/json", "application/json; charset=utf-8", "Application/JSON"] {
            assert!(is_json(ok), "{ok}");
        }
        assert!(is_json("application/merge-patch+json"));
        for bad in ["text/plain", "application/x-www-form-urlencoded", "", "json"] {
            assert!(!is_json(bad), "{bad}");
        }
    }
}
