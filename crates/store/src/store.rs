//! The [`Store`] trait every backend implements, its error and its boxed future.

use std::future::Future;
use std::pin::Pin;

use serde_json::Value;

use crate::records::{
    EventRecord, MessageRecord, ProjectRecord, SessionRecord, ToolCallRecord, TurnRecord,
};

/// A boxed future, as the trait returns.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

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
    /// A write under a session's lease was refused: another node holds the lease now.
    #[error("{0}")]
    Fenced(String),
}

/// Result of a store call.
pub type StoreResult<T> = Result<T, StoreError>;

/// Where sessions live. All methods are safe to call concurrently, and a write is visible to every
/// read that starts after it returned.
///
/// Every method that names a session fails with `NotFound` when it does not exist. Turn ids and
/// tool-call ids are unique across sessions; `turn_id` fields are not checked against the turns
/// (a direct tool call may carry a client's own turn id).
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
    /// Delete a session and everything of it (its project stays).
    fn delete_session<'a>(&'a self, id: &'a str) -> BoxFuture<'a, StoreResult<()>>;
    /// All projects, most recently seen first.
    fn list_projects(&self) -> BoxFuture<'_, StoreResult<Vec<ProjectRecord>>>;

    /// Record a new turn (status `running`); `Exists` if the id is taken.
    fn start_turn(&self, turn: TurnRecord) -> BoxFuture<'_, StoreResult<()>>;
    /// Set a turn's final status and end time; `NotFound` for an unknown turn.
    fn end_turn<'a>(
        &'a self,
        id: &'a str,
        status: &'a str,
        ended_at_ms: i64,
    ) -> BoxFuture<'a, StoreResult<()>>;
    /// A session's turns, oldest first (by `started_at_ms`, then as recorded).
    fn turns<'a>(&'a self, session_id: &'a str) -> BoxFuture<'a, StoreResult<Vec<TurnRecord>>>;
    /// Turns left `running` (by a hands that stopped): marked `aborted` at start-up. Returns them
    /// as updated, oldest first. Does not change the sessions' `updated_at_ms`.
    fn abandon_running_turns(
        &self,
        ended_at_ms: i64,
    ) -> BoxFuture<'_, StoreResult<Vec<TurnRecord>>>;

    /// Append a message; returns its `seq` (the highest seq the session ever gave + 1, from 1:
    /// numbers of truncated messages are not given again).
    fn append_message<'a>(
        &'a self,
        session_id: &'a str,
        turn_id: Option<&'a str>,
        message: Value,
    ) -> BoxFuture<'a, StoreResult<u64>>;
    /// A session's messages, by `seq`.
    fn messages<'a>(
        &'a self,
        session_id: &'a str,
    ) -> BoxFuture<'a, StoreResult<Vec<MessageRecord>>>;
    /// Delete the session's messages with a seq above `after_seq` (a conversation rewound to an
    /// earlier point); returns how many were deleted.
    fn truncate_messages<'a>(
        &'a self,
        session_id: &'a str,
        after_seq: u64,
    ) -> BoxFuture<'a, StoreResult<u64>>;

    /// Record a call as started; `Exists` if the id is taken.
    fn start_tool_call(&self, call: ToolCallRecord) -> BoxFuture<'_, StoreResult<()>>;
    /// Record its result; `NotFound` for an unknown call.
    fn finish_tool_call<'a>(
        &'a self,
        id: &'a str,
        result: Value,
        is_error: bool,
        duration_ms: u64,
    ) -> BoxFuture<'a, StoreResult<()>>;
    /// A session's calls, oldest first (by `started_at_ms`, then as recorded).
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
