//! The handlers of `/v1/sessions…` except the event stream: each parses its input once, calls one
//! [`hands_agent::host::Host`] method and shapes its answer; the host does the work.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use hands_agent::host::NewSession;
use hands_core::process::{ProcessList, ProcessStopped};
use serde_json::Value;

use crate::body::JsonBody;
use crate::error::ApiError;
use crate::schemas::{
    Answer, CallTool, CreateSession, Decision, PostMessage, ProcessOutput, Scope, SessionList,
    Transcript, TurnAccepted, UpdateSession, valid_id,
};
use crate::state::AppState;

/// `POST /v1/sessions` → 201 with the session.
pub async fn create(
    State(state): State<AppState>,
    JsonBody(body): JsonBody<CreateSession>,
) -> Result<Response, ApiError> {
    for (field, value) in [("id", &body.id), ("project_id", &body.project_id)] {
        if let Some(value) = value
            && !valid_id(value)
        {
            return Err(ApiError::bad_request(format!(
                "{field} {value:?} is not a valid id: use 1 to 128 letters, digits, `.`, `_`, `:` \
                 or `-`, starting with a letter or digit"
            )));
        }
    }
    if !body.root.is_absolute() {
        return Err(ApiError::bad_request(format!(
            "root {:?} must be an absolute path to a folder on the server",
            body.root
        )));
    }
    if !body.root.is_dir() {
        return Err(ApiError::bad_request(format!(
            "root {:?} is not a folder on the server: create it first or pass another",
            body.root
        )));
    }
    let new = NewSession {
        id: body.id,
        project_id: body.project_id,
        root: body.root,
        mode: body.mode.unwrap_or_default().into(),
        title: body.title,
    };
    let info = state.host.create_session(new).await?;
    Ok((StatusCode::CREATED, Json(info)).into_response())
}

/// `GET /v1/sessions`.
pub async fn list(State(state): State<AppState>) -> Result<Json<SessionList>, ApiError> {
    let sessions = state.host.list_sessions().await?;
    Ok(Json(SessionList {
        sessions,
        default_root: state.root.as_deref().map(std::path::Path::to_path_buf),
    }))
}

/// `GET /v1/sessions/{id}`.
pub async fn get(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    Ok(Json(state.host.get_session(&id).await?).into_response())
}

/// `PATCH /v1/sessions/{id}` → the session, renamed and/or in its new mode.
pub async fn update(
    State(state): State<AppState>,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<UpdateSession>,
) -> Result<Response, ApiError> {
    if body.title.is_none() && body.mode.is_none() {
        return Err(ApiError::bad_request("nothing to change: send `title`, `mode` or both"));
    }
    let info = state.host.update_session(&id, body.title, body.mode.map(Into::into)).await?;
    Ok(Json(info).into_response())
}

/// `DELETE /v1/sessions/{id}` → 204.
pub async fn delete(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    state.host.delete_session(&id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// `?offset=N` of the transcript.
#[derive(Debug, serde::Deserialize)]
pub struct TranscriptQuery {
    /// Messages to leave out from the start.
    #[serde(default)]
    pub offset: Option<u64>,
}

/// `GET /v1/sessions/{id}/messages?offset=N`.
pub async fn transcript(
    State(state): State<AppState>,
    Path(id): Path<String>,
    axum::extract::Query(query): axum::extract::Query<TranscriptQuery>,
) -> Result<Json<Transcript>, ApiError> {
    let mut messages = state.host.transcript(&id).await?;
    let skip = usize::try_from(query.offset.unwrap_or(0)).unwrap_or(usize::MAX);
    messages.drain(..skip.min(messages.len()));
    Ok(Json(Transcript { messages }))
}

/// `POST /v1/sessions/{id}/messages` → 202 with the turn id; the turn runs on.
pub async fn post_message(
    State(state): State<AppState>,
    Path(id): Path<String>,
    headers: axum::http::HeaderMap,
    JsonBody(body): JsonBody<PostMessage>,
) -> Result<Response, ApiError> {
    if body.text.trim().is_empty() {
        return Err(ApiError::bad_request("text is empty: send the user's message"));
    }
    // The client's trace goes on into the turn (a malformed `traceparent` is ignored).
    let post = state.host.post_message(&id, body.text);
    let turn_id = hands_core::telemetry::with_remote_parent(trace_parent(&headers), post).await?;
    Ok((StatusCode::ACCEPTED, Json(TurnAccepted { turn_id })).into_response())
}

/// `POST /v1/sessions/{id}/abort` → 204.
pub async fn abort(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    state.host.abort_session(&id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// `POST /v1/sessions/{id}/tools/{name}` → the tool's `CallToolResult` (200 even when the result
/// is an error: `isError` says so, as over MCP).
pub async fn call_tool(
    State(state): State<AppState>,
    Path((id, name)): Path<(String, String)>,
    headers: axum::http::HeaderMap,
    JsonBody(body): JsonBody<CallTool>,
) -> Result<Response, ApiError> {
    let call = state.host.call_tool(&id, body.turn_id, &name, Value::Object(body.args));
    let output = hands_core::telemetry::with_remote_parent(trace_parent(&headers), call).await?;
    // As over MCP: the session's notices follow the result as `[notice] …` text (they are also
    // announced as `process_notice` events).
    Ok(Json(output.notices_as_text()).into_response())
}

/// `POST /v1/sessions/{id}/answer` → 204.
pub async fn answer(
    State(state): State<AppState>,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<Answer>,
) -> Result<StatusCode, ApiError> {
    state.host.answer(Some(&id), body.question_id.as_deref(), body.answer)?;
    Ok(StatusCode::NO_CONTENT)
}

/// `POST /v1/sessions/{id}/approvals/{approval_id}` → 204.
pub async fn decide(
    State(state): State<AppState>,
    Path((id, approval_id)): Path<(String, String)>,
    JsonBody(body): JsonBody<Decision>,
) -> Result<StatusCode, ApiError> {
    let decision = match (body.approve, body.scope) {
        (true, Scope::Once) => hands_core::approval::Decision::Approve,
        (true, Scope::Session) => hands_core::approval::Decision::ApproveForSession,
        (false, _) => hands_core::approval::Decision::Deny(body.reason),
    };
    state.host.decide_with(&id, &approval_id, decision)?;
    Ok(StatusCode::NO_CONTENT)
}

/// `GET /v1/sessions/{id}/processes`.
pub async fn processes(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<ProcessList>, ApiError> {
    Ok(Json(state.host.list_processes(&id).await?))
}

/// `POST /v1/sessions/{id}/processes/{process_id}/stop`.
pub async fn stop_process(
    State(state): State<AppState>,
    Path((id, process_id)): Path<(String, String)>,
) -> Result<Json<ProcessStopped>, ApiError> {
    Ok(Json(state.host.stop_process(&id, &process_id).await?))
}

/// `?lines=N` of a process's output.
#[derive(Debug, serde::Deserialize)]
pub struct OutputQuery {
    /// How many of the last lines (default 100, at most 2,000).
    #[serde(default)]
    pub lines: Option<u64>,
}

/// `GET /v1/sessions/{id}/processes/{process_id}/output?lines=N`.
pub async fn process_output(
    State(state): State<AppState>,
    Path((id, process_id)): Path<(String, String)>,
    axum::extract::Query(query): axum::extract::Query<OutputQuery>,
) -> Result<Json<ProcessOutput>, ApiError> {
    let lines = query.lines.unwrap_or(100).clamp(1, 2_000) as usize;
    let output = state.host.process_output(&id, &process_id, lines).await?;
    Ok(Json(ProcessOutput { process_id, output }))
}

/// The W3C trace context of a request (`traceparent`, `tracestate` headers), when well formed.
fn trace_parent(headers: &axum::http::HeaderMap) -> Option<hands_core::telemetry::TraceParent> {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    hands_core::telemetry::TraceParent::parse(header("traceparent")?, header("tracestate"))
}
