//! The session host: the live sessions of one hands process, their turns, their event streams,
//! and the questions and approvals waiting on a user. `hands serve`'s session API, `hands run` and
//! `hands chat` are thin front ends over it. Everything it does is written to the [`Store`] first,
//! so a restarted hands resumes sessions with their transcript intact.
//!
//! SKELETON: the signatures are the contract between the host and its front ends (crate
//! `server`, the CLI); the bodies are being written.

use std::path::PathBuf;
use std::sync::Arc;

use hands_core::{Mode, Registry, ToolOutput};
use hands_store::{Store, StoreError};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::broadcast;

use crate::event::Event;
use crate::model::{Message, Provider};

/// What a host is built from.
#[derive(Clone)]
pub struct HostParts {
    /// Where sessions are kept.
    pub store: Arc<dyn Store>,
    /// The tools.
    pub registry: Arc<Registry>,
    /// The model; `None` when no `[model]` is configured (turns then fail with `NoModel`, direct
    /// tool calls still work).
    pub provider: Option<Arc<dyn Provider>>,
    /// `[agent]`.
    pub config: AgentConfig,
}

/// `[agent]`: the loop's limits.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AgentConfig {
    /// Model calls per turn before the turn ends with `max_steps`.
    pub max_steps: u32,
    /// Output tokens per model response.
    pub max_tokens: u32,
    /// Steps of a sub-agent.
    pub subagent_max_steps: u32,
    /// Fraction of the context window at which the oldest tool results are elided.
    pub elide_at: f64,
}

impl Default for AgentConfig {
    fn default() -> Self {
        Self { max_steps: 50, max_tokens: 8192, subagent_max_steps: 20, elide_at: 0.8 }
    }
}

/// A session to create.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NewSession {
    /// The session id; generated when absent.
    pub id: Option<String>,
    /// The project; defaults to the root's folder name.
    pub project_id: Option<String>,
    /// The project's root folder (must exist).
    pub root: PathBuf,
    /// Start in build or plan mode.
    pub mode: Mode,
    /// A title for lists.
    pub title: Option<String>,
}

/// A session as front ends show it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionInfo {
    /// Id.
    pub id: String,
    /// Project.
    pub project_id: String,
    /// Root folder.
    pub root: PathBuf,
    /// `build` or `plan`.
    pub mode: String,
    /// Title.
    pub title: Option<String>,
    /// The turn running now, if any.
    pub running_turn: Option<String>,
    /// Questions waiting for an answer: `[{question_id, question, options}]`.
    pub pending_questions: Vec<Value>,
    /// Approvals waiting: `[{approval_id, tool, summary}]`.
    pub pending_approvals: Vec<Value>,
    /// Created, ms since the epoch.
    pub created_at_ms: i64,
    /// Last change.
    pub updated_at_ms: i64,
}

/// What went wrong, shaped for HTTP status codes.
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    /// 404.
    #[error("{0}")]
    NotFound(String),
    /// 409: a turn is already running, no question pending, …
    #[error("{0}")]
    Conflict(String),
    /// 400.
    #[error("{0}")]
    BadRequest(String),
    /// 503: no `[model]` configured.
    #[error("no model is configured: set [model] provider, model and api_key_env in the config")]
    NoModel,
    /// 500.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Result of a host call.
pub type HostResult<T> = Result<T, HostError>;

/// Events of one session: first the stored ones after the requested id, then live ones. Live
/// events with an id ≤ the last replayed one are skipped by [`Subscription::next`].
pub struct Subscription {
    /// Stored events after the requested id, oldest first.
    pub replay: Vec<Event>,
    /// Live events.
    pub live: broadcast::Receiver<Event>,
}

/// The live sessions of one hands process.
pub struct Host {
    #[allow(dead_code)]
    parts: HostParts,
}

impl Host {
    /// Open the host: marks turns left running by a previous process as aborted.
    pub async fn open(parts: HostParts) -> HostResult<Arc<Self>> {
        Ok(Arc::new(Self { parts }))
    }

    /// Create a session.
    pub async fn create_session(&self, _new: NewSession) -> HostResult<SessionInfo> {
        todo!()
    }

    /// All sessions (stored ones included), most recent first.
    pub async fn list_sessions(&self) -> HostResult<Vec<SessionInfo>> {
        todo!()
    }

    /// One session; loads it from the store when not live (resume).
    pub async fn get_session(&self, _id: &str) -> HostResult<SessionInfo> {
        todo!()
    }

    /// The session's conversation, oldest first.
    pub async fn transcript(&self, _id: &str) -> HostResult<Vec<Message>> {
        todo!()
    }

    /// Abort, stop its processes, forget it, delete it from the store.
    pub async fn delete_session(&self, _id: &str) -> HostResult<()> {
        todo!()
    }

    /// Start a turn with this user message; returns the turn id at once. `Conflict` when a turn
    /// is running, `NoModel` without a provider.
    pub async fn post_message(&self, _id: &str, _text: String) -> HostResult<String> {
        todo!()
    }

    /// Wait until the session's running turn (if any) ends; returns its final status.
    pub async fn wait_turn(&self, _id: &str) -> HostResult<Option<String>> {
        todo!()
    }

    /// Events after `after` (0: from the start), then live ones.
    pub async fn subscribe(&self, _id: &str, _after: u64) -> HostResult<Subscription> {
        todo!()
    }

    /// A direct tool call for clients that run their own loop; `turn_id` scopes de-duplication.
    pub async fn call_tool(
        &self,
        _id: &str,
        _turn_id: Option<String>,
        _name: &str,
        _args: Value,
    ) -> HostResult<ToolOutput> {
        todo!()
    }

    /// Answer a pending question. `session` and `question_id` may be omitted when exactly one
    /// question is pending (in that session, or in the whole host). `Conflict` when none is.
    pub fn answer(
        &self,
        _session: Option<&str>,
        _question_id: Option<&str>,
        _text: String,
    ) -> HostResult<()> {
        todo!()
    }

    /// Grant or deny a pending approval.
    pub fn decide(
        &self,
        _session: &str,
        _approval_id: &str,
        _approve: bool,
        _reason: Option<String>,
    ) -> HostResult<()> {
        todo!()
    }

    /// Abort the session's turn and calls in flight and stop its processes.
    pub async fn abort_session(&self, _id: &str) -> HostResult<()> {
        todo!()
    }

    /// Abort every session of a project; returns how many sessions were touched (0 is fine: an
    /// idle project).
    pub async fn abort_project(&self, _project_id: &str) -> HostResult<usize> {
        todo!()
    }

    /// The session's background processes (the list_processes tool's structured output).
    pub async fn list_processes(&self, _id: &str) -> HostResult<Value> {
        todo!()
    }

    /// Stop one of them.
    pub async fn stop_process(&self, _id: &str, _process_id: &str) -> HostResult<Value> {
        todo!()
    }

    /// Close every live session (processes stopped); for shutdown.
    pub async fn close(&self) {}
}
