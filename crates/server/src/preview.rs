//! The handlers of `/v1/sessions/{id}/preview…`: the preview's state, a fresh screenshot and the
//! runtime errors it collected, each one call of the host (which reads them through the preview
//! service, never through a tool, so the model's read cursor does not move).

use axum::Json;
use axum::extract::{Path, State};
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use hands_core::preview::{PreviewState, RuntimeErrors};

use crate::error::ApiError;
use crate::state::AppState;

/// `GET /v1/sessions/{id}/preview`.
pub async fn state(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<PreviewState>, ApiError> {
    Ok(Json(state.host.preview_state(&id).await?))
}

/// `GET /v1/sessions/{id}/preview/screenshot` → `image/png`, never cached.
pub async fn screenshot(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let png = state.host.preview_screenshot(&id).await?;
    let mut response = png.into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("image/png"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    Ok(response)
}

/// `GET /v1/sessions/{id}/preview/errors`.
pub async fn errors(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<RuntimeErrors>, ApiError> {
    Ok(Json(state.host.preview_errors(&id).await?))
}
