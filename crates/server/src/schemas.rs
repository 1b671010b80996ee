//! The bodies of the session API. Requests are parsed into the types here (unknown fields refused,
//! so a typo is an error rather than a silently ignored field). Responses that the handlers build
//! themselves are here too; the host's own types (sessions, messages, events, tool results) are
//! described by the documentation twins in [`crate::docs`], whose fidelity a test checks.

use std::path::PathBuf;

use hands_agent::host::{CheckpointInfo, RestoreScope, SessionInfo};
use hands_agent::model::Message;
use hands_core::Mode;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::docs;

/// What a client-chosen id may look like: it travels in URL paths and logs.
pub const ID_PATTERN: &str = "^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$";

/// Whether `id` matches [`ID_PATTERN`].
pub fn valid_id(id: &str) -> bool {
    let mut bytes = id.bytes();
    let Some(first) = bytes.next() else { return false };
    id.len() <= 128
        && first.is_ascii_alphanumeric()
        && bytes.all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b':' | b'-'))
}

/// The mode a session starts in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum SessionMode {
    /// Every tool.
    #[default]
    Build,
    /// Read-only research and planning until exit_plan_mode is approved.
    Plan,
}

impl From<SessionMode> for Mode {
    fn from(mode: SessionMode) -> Self {
        match mode {
            SessionMode::Build => Mode::Build,
            SessionMode::Plan => Mode::Plan,
        }
    }
}

/// `POST /v1/sessions`.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateSession {
    /// The project's root folder on the server (must exist).
    pub root: PathBuf,
    /// The project; defaults to the root's folder name. Aborting a project aborts all of its
    /// sessions.
    #[serde(default)]
    #[schemars(pattern(ID_PATTERN))]
    pub project_id: Option<String>,
    /// `build` (default) or `plan`.
    #[serde(default)]
    pub mode: Option<SessionMode>,
    /// A title for lists.
    #[serde(default)]
    pub title: Option<String>,
    /// The session id; generated when absent. 409 when taken.
    #[serde(default)]
    #[schemars(pattern(ID_PATTERN))]
    pub id: Option<String>,
}

/// `PATCH /v1/sessions/{id}`: rename and/or switch mode.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateSession {
    /// A new title (1 to 200 characters).
    #[serde(default)]
    #[schemars(length(min = 1, max = 200))]
    pub title: Option<String>,
    /// `build` or `plan`; 409 while a turn runs.
    #[serde(default)]
    pub mode: Option<SessionMode>,
}

/// `POST /v1/sessions/{id}/messages`.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PostMessage {
    /// The user's message; starts a turn.
    #[schemars(length(min = 1))]
    pub text: String,
}

/// `POST /v1/sessions/{id}/tools/{name}`.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CallTool {
    /// The tool's arguments (see `hands tools --json` for each schema); `{}` when absent.
    #[serde(default)]
    pub args: Map<String, Value>,
    /// Calls with the same turn id share a de-duplication cache of read-only results.
    #[serde(default)]
    pub turn_id: Option<String>,
}

/// `POST /v1/sessions/{id}/answer`.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Answer {
    /// The user's answer.
    pub answer: String,
    /// The question; may be omitted when the session has exactly one pending.
    #[serde(default)]
    pub question_id: Option<String>,
}

/// `POST /v1/sessions/{id}/approvals/{approval_id}`.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Decision {
    /// Grant (`true`) or deny (`false`) the call.
    pub approve: bool,
    /// The user's words, passed to the model on a denial.
    #[serde(default)]
    pub reason: Option<String>,
    /// With `approve`: `once` (the default) grants this call; `session` also grants every later
    /// call of the same tool in this session without asking (never `exit_plan_mode`: a plan
    /// is approved each time).
    #[serde(default)]
    pub scope: Scope,
}

/// How far a grant reaches.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    /// This call.
    #[default]
    Once,
    /// This call and the tool's later calls in the session.
    Session,
}

/// `POST /vibe/answer`: the compatibility form of an answer. Unknown fields are ignored here, as
/// older clients may send more.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
pub struct VibeAnswer {
    /// The user's answer.
    pub answer: String,
    /// The session the question belongs to.
    #[serde(default, rename = "sessionId", alias = "session_id")]
    pub session_id: Option<String>,
    /// The question.
    #[serde(default, rename = "questionId", alias = "question_id")]
    pub question_id: Option<String>,
    /// The project, when the session is not named: its one session waiting for an answer gets it.
    #[serde(default, rename = "projectId", alias = "project_id")]
    pub project_id: Option<String>,
}

/// `GET /v1/sessions/{id}/checkpoints`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CheckpointList {
    /// The session's checkpoints, oldest first.
    pub checkpoints: Vec<CheckpointInfo>,
}

/// `POST /v1/sessions/{id}/checkpoints/{n}/restore` (the body may be omitted).
#[derive(Debug, Clone, Default, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RestoreCheckpoint {
    /// `code` (the project's files), `conversation` (the session's messages) or `both`
    /// (default).
    #[serde(default)]
    pub scope: Option<RestoreScope>,
}

/// `GET /v1/sessions`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SessionList {
    /// Most recent first.
    pub sessions: Vec<SessionInfo>,
    /// The folder `hands serve` was started on (`--root`), absolute: the root a client offers
    /// first for a new session.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default_root: Option<PathBuf>,
}

/// `GET /v1/sessions/{id}/messages`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Transcript {
    /// The conversation, oldest first.
    pub messages: Vec<Message>,
}

/// `202` of `POST /v1/sessions/{id}/messages`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TurnAccepted {
    /// The turn that started; its events carry this id.
    pub turn_id: String,
}

/// `POST /vibe/abort/{projectId}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Aborted {
    /// Sessions of the project that were aborted (0: the project was idle or unknown).
    pub aborted_sessions: usize,
}

/// `POST /vibe/answer`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Answered {
    /// Always `true`: the answer reached its question.
    pub ok: bool,
}

/// The documentation twin of [`SessionList`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(rename = "SessionList")]
pub struct SessionListDoc {
    /// Most recent first.
    pub sessions: Vec<docs::SessionInfo>,
    /// The folder `hands serve` was started on (`--root`), absolute: the root a client offers
    /// first for a new session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_root: Option<PathBuf>,
}

/// The documentation twin of [`Transcript`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(rename = "Transcript")]
pub struct TranscriptDoc {
    /// The conversation, oldest first.
    pub messages: Vec<docs::Message>,
}

/// `POST /v1/sessions/{id}/secrets/{request_id}`: the secret's value, or a refusal. (The bare
/// value as `text/plain` is accepted too.) Never stored, logged or echoed; no `Debug`, so that it
/// cannot be printed by mistake.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SecretAnswer {
    /// The value (surrounding whitespace is dropped; at least 8 characters).
    #[serde(default)]
    pub value: Option<String>,
    /// `true` to refuse: the tool tells the model the user declined.
    #[serde(default)]
    pub decline: bool,
}

/// The answer to a secret: its name and masked hint, never its value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SecretReceipt {
    /// The secret's name.
    pub name: String,
    /// A masked hint such as `sk_t…4f2a` (absent when declined).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
    /// `stored as NAME (hint)` or `NAME declined`.
    pub message: String,
}

/// `POST /v1/signin`: the code of a one-time sign-in link (`#signin=CODE`).
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SignInRequest {
    /// The code, as the link's fragment gives it.
    pub code: String,
}

/// The answer to a good sign-in code: the bearer token, for the `Authorization` header of every
/// later request. No `Debug`, so that it cannot be printed by mistake.
#[derive(Serialize, Deserialize, JsonSchema)]
pub struct SignedIn {
    /// The bearer token (absent when the server requires none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_follow_the_pattern() {
        for ok in ["a", "s-1", "proj.x_y:z", &"a".repeat(128)] {
            assert!(valid_id(ok), "{ok}");
        }
        for bad in ["", "-a", "a/b", "a b", "é", &"a".repeat(129), "a\n"] {
            assert!(!valid_id(bad), "{bad:?}");
        }
    }

    #[test]
    fn vibe_answer_takes_camel_and_snake_case() {
        let a: VibeAnswer =
            serde_json::from_str(r#"{"answer":"yes","sessionId":"s","questionId":"q","x":1}"#)
                .unwrap();
        assert_eq!(a.session_id.as_deref(), Some("s"));
        assert_eq!(a.question_id.as_deref(), Some("q"));
        let a: VibeAnswer = serde_json::from_str(r#"{"answer":"yes","project_id":"p"}"#).unwrap();
        assert_eq!(a.project_id.as_deref(), Some("p"));
    }

    #[test]
    fn requests_refuse_unknown_fields_and_wrong_types() {
        let err = serde_json::from_str::<PostMessage>(r#"{"txt":"hi"}"#).unwrap_err();
        assert!(err.to_string().contains("unknown field `txt`"), "{err}");
        let err = serde_json::from_str::<Decision>(r#"{"approve":"yes"}"#).unwrap_err();
        assert!(err.to_string().contains("invalid type"), "{err}");
    }
}

/// `GET /v1/sessions/{id}/processes/{process_id}/output`.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct ProcessOutput {
    /// The process.
    pub process_id: String,
    /// Its last lines of output (stdout and stderr as it printed them), redacted.
    pub output: String,
}
