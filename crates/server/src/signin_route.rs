//! `POST /v1/signin`: a one-time code of [`crate::signin`] traded for the bearer token. The one
//! operation of `/v1` the guard lets through without the token (the Host/Origin checks apply).

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use crate::body::JsonBody;
use crate::error::ApiError;
use crate::schemas::{SignInRequest, SignedIn};
use crate::state::AppState;

/// `POST /v1/signin` → 200 with the token, once per code; 401 `signin_refused` otherwise.
pub async fn exchange(
    State(state): State<AppState>,
    JsonBody(body): JsonBody<SignInRequest>,
) -> Result<Response, ApiError> {
    let token = state.signin.redeem(&body.code).map_err(|refused| ApiError {
        status: StatusCode::UNAUTHORIZED,
        code: "signin_refused",
        message: refused.to_string(),
    })?;
    let mut response = Json(SignedIn { token }).into_response();
    // The token is this response's whole point: the egress pass must not mask it (a token of the
    // user's choosing may look like a key), and nothing may keep a copy.
    response.extensions_mut().insert(crate::egress::Unredacted);
    response.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    Ok(response)
}
