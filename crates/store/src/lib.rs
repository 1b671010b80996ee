//! The session store: everything a session needs to survive a restart of hands — projects,
//! sessions, turns, messages, tool calls and their results, todos and the event log — behind the
//! [`Store`] trait. [`SqliteStore`] (WAL, one file) is the default; the trait is shaped so that a
//! PostgreSQL store can back several hands instances later (ids are strings chosen by the caller,
//! event ids are per-session sequence numbers assigned by the store, all methods are async).

use std::future::Future;
use std::pin::Pin;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A boxed future, as the trait returns.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A session as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionRecord {
    /// Chosen by the caller (unique).
    pub id: String,
    /// The project it works on (several sessions may share one).
    pub project_id: String,
    /// The project's root folder.
    pub root: String,
    /// `build` or `plan`.
    pub mode: String,
    /// A title for lists (the first user message, cut), when there is one.
    pub title: Option<String>,
    /// Milliseconds since the Unix epoch.
    pub created_at_ms: i64,
    /// Last change.
    pub updated_at_ms: i64,
}

/// A turn: one user message and everything the agent did for it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TurnRecord {
    /// Chosen by the caller.
    pub id: String,
    /// Its session.
    pub session_id: String,
    /// `running`, `completed`, `max_steps`, `aborted`, `error`.
    pub status: String,
    /// The user's message.
    pub user_message: String,
    /// Start.
    pub started_at_ms: i64,
    /// End, once it ended.
    pub ended_at_ms: Option<i64>,
}

/// One message of the conversation, stored as the agent's JSON form of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MessageRecord {
    /// Increasing per session, from 1, assigned by the store.
    pub seq: u64,
    /// Its session.
    pub session_id: String,
    /// The turn it belongs to.
    pub turn_id: Option<String>,
    /// The message (role and content blocks) as JSON.
    pub message: Value,
}

/// A tool call and, once finished, its result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCallRecord {
    /// The call's id (unique).
    pub id: String,
    /// Its session.
    pub session_id: String,
    /// Its turn, if any.
    pub turn_id: Option<String>,
    /// The tool.
    pub name: String,
    /// The arguments.
    pub args: Value,
    /// The result (a CallToolResult JSON), once finished.
    pub result: Option<Value>,
    /// The result is an error.
    pub is_error: Option<bool>,
    /// Start.
    pub started_at_ms: i64,
    /// Wall time, once finished.
    pub duration_ms: Option<u64>,
}

/// One stored event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EventRecord {
    /// Increasing per session, from 1, assigned by the store; no gaps.
    pub id: u64,
    /// Its session.
    pub session_id: String,
    /// Milliseconds since the Unix epoch.
    pub at_ms: i64,
    /// The event as JSON (the agent's `EventKind`, with its `type` tag).
    pub data: Value,
}

/// What went wrong.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// No such session (or turn, or call).
    #[error("{0} not found")]
    NotFound(String),
    /// The id is taken.
    #[error("{0} already exists")]
    Exists(String),
    /// The database failed.
    #[error("session store: {0}")]
    Backend(String),
}

/// Result of a store call.
pub type StoreResult<T> = Result<T, StoreError>;

/// Where sessions live. All methods are safe to call concurrently.
pub trait Store: Send + Sync {
    /// Create a session; `Exists` if the id is taken.
    fn create_session(&self, session: SessionRecord) -> BoxFuture<'_, StoreResult<()>>;
    /// One session.
    fn get_session<'a>(&'a self, id: &'a str) -> BoxFuture<'a, StoreResult<SessionRecord>>;
    /// All sessions, most recently updated first.
    fn list_sessions(&self) -> BoxFuture<'_, StoreResult<Vec<SessionRecord>>>;
    /// Change mode and/or title (and `updated_at_ms`).
    fn update_session<'a>(
        &'a self,
        id: &'a str,
        mode: Option<&'a str>,
        title: Option<&'a str>,
    ) -> BoxFuture<'a, StoreResult<()>>;
    /// Delete a session and everything of it.
    fn delete_session<'a>(&'a self, id: &'a str) -> BoxFuture<'a, StoreResult<()>>;

    /// Record a new turn (status `running`).
    fn start_turn(&self, turn: TurnRecord) -> BoxFuture<'_, StoreResult<()>>;
    /// Set a turn's final status and end time.
    fn end_turn<'a>(
        &'a self,
        id: &'a str,
        status: &'a str,
        ended_at_ms: i64,
    ) -> BoxFuture<'a, StoreResult<()>>;
    /// A session's turns, oldest first.
    fn turns<'a>(&'a self, session_id: &'a str) -> BoxFuture<'a, StoreResult<Vec<TurnRecord>>>;
    /// Turns left `running` (by a hands that stopped): marked `aborted` at start-up. Returns them.
    fn abandon_running_turns(
        &self,
        ended_at_ms: i64,
    ) -> BoxFuture<'_, StoreResult<Vec<TurnRecord>>>;

    /// Append a message; returns its `seq`.
    fn append_message<'a>(
        &'a self,
        session_id: &'a str,
        turn_id: Option<&'a str>,
        message: Value,
    ) -> BoxFuture<'a, StoreResult<u64>>;
    /// A session's messages, oldest first.
    fn messages<'a>(
        &'a self,
        session_id: &'a str,
    ) -> BoxFuture<'a, StoreResult<Vec<MessageRecord>>>;

    /// Record a call as started.
    fn start_tool_call(&self, call: ToolCallRecord) -> BoxFuture<'_, StoreResult<()>>;
    /// Record its result.
    fn finish_tool_call<'a>(
        &'a self,
        id: &'a str,
        result: Value,
        is_error: bool,
        duration_ms: u64,
    ) -> BoxFuture<'a, StoreResult<()>>;
    /// A session's calls, oldest first.
    fn tool_calls<'a>(
        &'a self,
        session_id: &'a str,
    ) -> BoxFuture<'a, StoreResult<Vec<ToolCallRecord>>>;

    /// Replace the session's todo list.
    fn set_todos<'a>(&'a self, session_id: &'a str, todos: Value)
    -> BoxFuture<'a, StoreResult<()>>;
    /// The session's todo list (`[]` when never set).
    fn todos<'a>(&'a self, session_id: &'a str) -> BoxFuture<'a, StoreResult<Value>>;

    /// Append an event; the store assigns and returns its id (previous id + 1, from 1).
    fn append_event<'a>(
        &'a self,
        session_id: &'a str,
        at_ms: i64,
        data: Value,
    ) -> BoxFuture<'a, StoreResult<u64>>;
    /// Events with id > `after`, oldest first, at most `limit`.
    fn events_after<'a>(
        &'a self,
        session_id: &'a str,
        after: u64,
        limit: usize,
    ) -> BoxFuture<'a, StoreResult<Vec<EventRecord>>>;
}
