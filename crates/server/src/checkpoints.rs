//! The handlers of `/v1/sessions/{id}/checkpoints…`: a session's checkpoints listed, one
//! compared with the project's checkpoint before it, one restored (code, conversation or both).
//! Each parses its input once and calls one [`hands_agent::host::Host`] method.

use axum::Json;
use axum::extract::{Path, State};
use hands_agent::host::{CheckpointDiff, RestoreOutcome};

use crate::body::OptionalJsonBody;
use crate::error::ApiError;
use crate::schemas::{CheckpointList, RestoreCheckpoint};
use crate::state::AppState;

/// `n` of a path, or a 400 that says what it must be.
fn number(n: &str) -> Result<u64, ApiError> {
    n.parse().map_err(|_| {
        ApiError::bad_request(format!(
            "checkpoint {n:?} is not a number: use the `n` of GET /v1/sessions/{{id}}/checkpoints"
        ))
    })
}

/// `GET /v1/sessions/{id}/checkpoints`.
pub async fn list(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<CheckpointList>, ApiError> {
    Ok(Json(CheckpointList { checkpoints: state.host.checkpoints(&id).await? }))
}

/// `GET /v1/sessions/{id}/checkpoints/{n}/diff`.
pub async fn diff(
    State(state): State<AppState>,
    Path((id, n)): Path<(String, String)>,
) -> Result<Json<CheckpointDiff>, ApiError> {
    Ok(Json(state.host.checkpoint_diff(&id, number(&n)?).await?))
}

/// `POST /v1/sessions/{id}/checkpoints/{n}/restore`.
pub async fn restore(
    State(state): State<AppState>,
    Path((id, n)): Path<(String, String)>,
    OptionalJsonBody(body): OptionalJsonBody<RestoreCheckpoint>,
) -> Result<Json<RestoreOutcome>, ApiError> {
    let scope = body.scope.unwrap_or_default();
    Ok(Json(state.host.restore_checkpoint(&id, number(&n)?, scope).await?))
}
