//! The session store: everything a session needs to survive a restart of hands — projects,
//! sessions, turns, messages, tool calls and their results, todos and the event log — behind the
//! [`Store`] trait. [`SqliteStore`] (WAL, one file) is the default, [`MemoryStore`] keeps the same
//! contract in memory (tests, `--ephemeral`), and [`open_store`] picks one from `[store]`.
//!
//! ```
//! use hands_store::{SessionRecord, SqliteStore, Store};
//! use serde_json::json;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), hands_store::StoreError> {
//! let store = SqliteStore::in_memory()?; // SqliteStore::open("~/.local/share/…") for a file
//! store
//!     .create_session(SessionRecord {
//!         id: "s1".into(),
//!         project_id: "app".into(),
//!         root: "/work/app".into(),
//!         mode: "build".into(),
//!         title: None,
//!         created_at_ms: 0,
//!         updated_at_ms: 0,
//!     })
//!     .await?;
//! let first = store.append_event("s1", 0, json!({"type": "turn_started"})).await?;
//! let second = store.append_event("s1", 1, json!({"type": "turn_ended"})).await?;
//! assert_eq!((first, second), (1, 2));
//! // A client reconnecting with `Last-Event-ID: 1` gets what it missed.
//! let missed = store.events_after("s1", 1, 100).await?;
//! assert_eq!(missed[0].data["type"], "turn_ended");
//! # Ok(())
//! # }
//! ```
//!
//! The trait is shaped so that a PostgreSQL store can back several hands instances later:
//!
//! - **Ids.** Session, turn and tool-call ids are strings chosen by the caller, so no instance needs
//!   a database round trip to name a thing; `INSERT … ON CONFLICT DO NOTHING` plus the row count
//!   gives `Exists` exactly as here.
//! - **Sequences.** Message `seq` and event `id` are per-session counters kept in the session's row
//!   (`last_message_seq`, `last_event_id` in SQLite) and bumped in the same transaction as the
//!   insert: `UPDATE sessions SET next_event_id = next_event_id + 1 WHERE id = $1 RETURNING
//!   next_event_id` takes the row lock, so concurrent appends from any number of instances queue
//!   on it and get consecutive ids with no gaps (a rolled-back append rolls its bump back too —
//!   unlike a PostgreSQL `SEQUENCE`, which would leave gaps and is therefore not used). No row:
//!   `NotFound`. Appends to different sessions lock different rows and do not wait on each other.
//! - **Live events across instances.** The append's transaction also runs `SELECT pg_notify(
//!   'hands_events', session_id || ':' || id)`, which PostgreSQL delivers at commit, so never for a
//!   rolled-back event. Every instance `LISTEN`s on one dedicated connection and wakes its local
//!   subscribers of that session, which read the bodies with `events_after(last_seen)`: the payload
//!   carries no data (the 8000-byte limit never matters), a missed notification is repaired by the
//!   next one, and after the listening connection drops, a catch-up `events_after` per subscribed
//!   session covers the gap.
//! - **Tables and indexes.** The same tables, `ON DELETE CASCADE` foreign keys and indexes
//!   (`(session_id, seq)`, `(session_id, id)`, …). JSON columns as `json` or `text`, not `jsonb`:
//!   `jsonb` reorders object keys, and the store returns a message exactly as it was given.
//! - **Connections.** A pool of `tokio-postgres` clients (`deadpool-postgres`) replaces the
//!   writer thread and the readers: the database itself serialises what must be serialised. The
//!   schema is migrated the same way, with the version in a `schema_version` table.

use std::future::Future;
use std::pin::Pin;

use serde::{Deserialize, Serialize};
use serde_json::Value;

mod config;
mod memory;
mod sqlite;

pub use config::{StoreBackend, StoreConfig, default_path, open_store};
pub use memory::MemoryStore;
pub use sqlite::SqliteStore;

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
    /// Last change to the session or anything of it (mode, title, turns, messages, calls, todos,
    /// events), by the store's clock; never moves backwards.
    pub updated_at_ms: i64,
}

/// A project: a root folder that sessions work on, as first and last seen by `create_session`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProjectRecord {
    /// The sessions' `project_id`.
    pub id: String,
    /// Its root folder (the latest session's, should it move).
    pub root: String,
    /// `created_at_ms` of its first session.
    pub first_seen_ms: i64,
    /// `created_at_ms` of its latest session.
    pub last_seen_ms: i64,
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

    /// Append a message; returns its `seq` (previous seq + 1, from 1).
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

/// Milliseconds since the Unix epoch, by this machine's clock (0 before 1970).
pub(crate) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}
