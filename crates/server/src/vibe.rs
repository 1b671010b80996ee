//! The compatibility routes of the source system: `POST /vibe/answer` answers the question a
//! session's ask_user waits on, `POST /vibe/abort/{projectId}` aborts every turn and call of a
//! project and stops their processes.

use axum::Json;
use axum::extract::{Path, State};

use crate::body::JsonBody;
use crate::error::ApiError;
use crate::schemas::{Aborted, Answered, VibeAnswer};
use crate::state::AppState;

/// `POST /vibe/answer` {answer, sessionId?, questionId?, projectId?}. Without `sessionId`, a
/// `projectId` picks the project's one session with a question pending (or the one holding
/// `questionId`); with neither, the host's one pending question gets the answer.
pub async fn answer(
    State(state): State<AppState>,
    JsonBody(body): JsonBody<VibeAnswer>,
) -> Result<Json<Answered>, ApiError> {
    let session = match (&body.session_id, &body.project_id) {
        (Some(session), _) => Some(session.clone()),
        (None, Some(project)) => {
            Some(waiting_session(&state, project, body.question_id.as_deref()).await?)
        }
        (None, None) => None,
    };
    state.host.answer(session.as_deref(), body.question_id.as_deref(), body.answer)?;
    Ok(Json(Answered { ok: true }))
}

/// The session of `project` that waits for an answer (to `question`, when given).
async fn waiting_session(
    state: &AppState,
    project: &str,
    question: Option<&str>,
) -> Result<String, ApiError> {
    let waiting: Vec<_> = state
        .host
        .list_sessions()
        .await?
        .into_iter()
        .filter(|s| s.project_id == project && !s.pending_questions.is_empty())
        .filter(|s| {
            question.is_none_or(|q| {
                s.pending_questions
                    .iter()
                    .any(|p| p.get("question_id").and_then(|v| v.as_str()) == Some(q))
            })
        })
        .collect();
    match waiting.as_slice() {
        [one] => Ok(one.id.clone()),
        [] => Err(ApiError::conflict(match question {
            Some(q) => format!("no session of project {project:?} waits on question {q:?}"),
            None => format!("no session of project {project:?} waits for an answer"),
        })),
        several => Err(ApiError::conflict(format!(
            "{} sessions of project {project:?} wait for an answer: pass sessionId or questionId",
            several.len()
        ))),
    }
}

/// `POST /vibe/abort/{projectId}` → `{aborted_sessions: N}`; an idle or unknown project is 0.
pub async fn abort(
    State(state): State<AppState>,
    Path(project): Path<String>,
) -> Result<Json<Aborted>, ApiError> {
    let aborted_sessions = state.host.abort_project(&project).await?;
    Ok(Json(Aborted { aborted_sessions }))
}
