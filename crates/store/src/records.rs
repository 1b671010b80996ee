//! The records the store keeps: sessions, projects, turns, messages, tool calls, events.

use serde::{Deserialize, Serialize};
use serde_json::Value;

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
