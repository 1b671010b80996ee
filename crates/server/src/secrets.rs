//! `POST /v1/sessions/{id}/secrets/{request_id}`: the user's answer to a `secret_requested`
//! event. The body is the value (`{"value": "…"}`, or the bare value as `text/plain`) or a
//! refusal (`{"decline": true}`); it goes to the waiting secrets tool alone. Nothing here stores,
//! logs, traces or echoes it: a body that cannot be read is refused with a fixed message (never
//! serde's, which quotes what it could not parse), and the response names only the secret and
//! its masked hint.

use axum::Json;
use axum::body::Bytes;
use axum::extract::{FromRequest, Path, Request, State};
use axum::http::{StatusCode, header};
use hands_core::secret::SecretValue;

use crate::error::ApiError;
use crate::schemas::{SecretAnswer, SecretReceipt};
use crate::state::AppState;

/// What the body must look like, for every unreadable one.
const SHAPE: &str = "the body must be JSON {\"value\": \"…\"} (or {\"decline\": true}) with \
                     Content-Type: application/json, or the bare value with Content-Type: \
                     text/plain";

/// `POST /v1/sessions/{id}/secrets/{request_id}` → 200 with the name and hint.
pub async fn answer(
    State(state): State<AppState>,
    Path((id, request_id)): Path<(String, String)>,
    request: Request,
) -> Result<Json<SecretReceipt>, ApiError> {
    match read(request, &state).await? {
        None => {
            let name = state.host.decline_secret(&id, &request_id)?;
            Ok(Json(SecretReceipt { message: format!("{name} declined"), name, hint: None }))
        }
        Some(value) => {
            let hint = hands_agent::secret_hint(&SecretValue::new(value.expose().trim()));
            let name = state.host.give_secret(&id, &request_id, value)?;
            Ok(Json(SecretReceipt {
                message: format!("stored as {name} ({hint})"),
                name,
                hint: Some(hint),
            }))
        }
    }
}

/// The value, or `None` for a refusal.
async fn read(request: Request, state: &AppState) -> Result<Option<SecretValue>, ApiError> {
    let essence = request
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .map(|v| v.trim().to_ascii_lowercase());
    let json = match essence.as_deref() {
        Some("application/json") => true,
        Some("text/plain") => false,
        _ => {
            return Err(ApiError {
                status: StatusCode::UNSUPPORTED_MEDIA_TYPE,
                code: "unsupported_media_type",
                message: SHAPE.to_owned(),
            });
        }
    };
    let bytes = Bytes::from_request(request, state).await.map_err(|rejection| {
        if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ApiError {
                status: StatusCode::PAYLOAD_TOO_LARGE,
                code: "payload_too_large",
                message: format!("the body is larger than {} bytes", state.max_body_bytes),
            }
        } else {
            ApiError::bad_request(SHAPE)
        }
    })?;
    let text = String::from_utf8(bytes.to_vec()).map_err(|_| ApiError::bad_request(SHAPE))?;
    if !json {
        return Ok(Some(SecretValue::new(text)));
    }
    let body: SecretAnswer =
        serde_json::from_str(&text).map_err(|_| ApiError::bad_request(SHAPE))?;
    // The body is no type of ours until checked: make sure nothing keeps the text.
    drop(text);
    match (body.value, body.decline) {
        (Some(_), true) => Err(ApiError::bad_request(format!(
            "give either `value` or `decline`, not both; {SHAPE}"
        ))),
        (Some(value), false) => Ok(Some(SecretValue::new(value))),
        (None, true) => Ok(None),
        (None, false) => Err(ApiError::bad_request(format!("`value` is missing; {SHAPE}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_documented_body_parses() {
        let doc: SecretAnswer = serde_json::from_str(r#"{"value":"sk_test_123456789"}"#).unwrap();
        assert_eq!(doc.value.as_deref(), Some("sk_test_123456789"));
        let doc: SecretAnswer = serde_json::from_str(r#"{"decline":true}"#).unwrap();
        assert!(doc.decline);
    }
}
