//! What a session tells its watchers: the events the session API streams over SSE and the
//! terminal front end prints. Every event is stored with a per-session increasing id, so a client
//! that reconnects with `Last-Event-ID` gets exactly what it missed.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One event of a session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Event {
    /// Increasing per session, from 1; the SSE `id:`.
    pub id: u64,
    /// The session.
    pub session_id: String,
    /// Milliseconds since the Unix epoch.
    pub at_ms: i64,
    /// What happened.
    #[serde(flatten)]
    pub kind: EventKind,
}

/// What happened. Serialised with a `type` tag (the SSE `event:` name is the same string).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum EventKind {
    /// A turn began with this user message.
    TurnStarted {
        /// The turn.
        turn_id: String,
        /// The user's message.
        message: String,
    },
    /// The model streamed text.
    TextDelta {
        /// The turn.
        turn_id: String,
        /// The new text.
        text: String,
    },
    /// A tool call began.
    ToolCallStarted {
        /// The turn (absent for direct calls without one).
        turn_id: Option<String>,
        /// The call's id.
        call_id: String,
        /// The tool.
        name: String,
        /// Its arguments.
        args: Value,
    },
    /// A tool call ended.
    ToolCallFinished {
        /// The turn.
        turn_id: Option<String>,
        /// The call's id.
        call_id: String,
        /// The tool.
        name: String,
        /// How long the call ran: its wall time less the time it waited for the user's
        /// approval.
        duration_ms: u64,
        /// The result is an error.
        is_error: bool,
        /// The first line(s) of the result, at most 300 characters.
        summary: String,
        /// Why a shell command (bash) failed, though its result may read as a success to the
        /// model: `exit 1`, `timed out`, `killed by signal 9 (SIGKILL)`. Absent when it did not
        /// fail.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        failure: Option<String>,
        /// A failed command's exit code, when it exited.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        exit_code: Option<i32>,
        /// The last lines (at most 5) of a failed command's output, when it printed any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        output_tail: Option<String>,
    },
    /// ask_user is waiting for an answer.
    Question {
        /// Answer with this id.
        question_id: String,
        /// The question.
        question: String,
        /// Offered answers (may be empty: free text).
        options: Vec<String>,
    },
    /// The question got its answer.
    QuestionAnswered {
        /// The question.
        question_id: String,
    },
    /// The secrets tool waits for a secret: answer with
    /// `POST /v1/sessions/{id}/secrets/{request_id}` (the value never appears in an event).
    SecretRequested {
        /// Answer with this id.
        request_id: String,
        /// The variable the value is stored as.
        name: String,
        /// What the value is and where the user finds it.
        description: String,
    },
    /// The secret was given (the tool stores it; its result says so).
    SecretAnswered {
        /// The request.
        request_id: String,
    },
    /// The secret request ended without a value: declined, timed out or aborted.
    SecretDeclined {
        /// The request.
        request_id: String,
    },
    /// A call waits for the user's approval.
    ApprovalRequested {
        /// Grant or deny with this id.
        approval_id: String,
        /// The tool.
        tool: String,
        /// One line: the command, the path.
        summary: String,
        /// What the call will actually do, when its arguments do not say it: the resolved argv
        /// and the program's origin, the target, a write's content or diff. Several lines.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        details: Option<String>,
        /// The user may allow the tool for the rest of the session (`scope: "session"`); false
        /// where each call is theirs to decide (a plan).
        #[serde(default = "yes")]
        session_allowable: bool,
    },
    /// The approval was decided.
    ApprovalDecided {
        /// The approval.
        approval_id: String,
        /// Granted.
        approved: bool,
        /// Granted for the rest of the session: later calls of the tool do not ask.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        for_session: bool,
    },
    /// A long-run process finished (or another notice for the model).
    ProcessNotice {
        /// The notice as the model will see it.
        text: String,
    },
    /// todo_write replaced the list.
    TodosChanged {
        /// The list: `[{id, content, status}]`.
        todos: Value,
    },
    /// The session's mode changed (plan ↔ build).
    ModeChanged {
        /// The new mode.
        mode: hands_core::Mode,
    },
    /// The tools the session offers changed while it ran (a configured MCP server changed its
    /// list, the project gained a preview, a condition of a gated tool changed).
    ToolsChanged {
        /// The registry's version of the list (increasing).
        version: u64,
        /// The names of the tools the session's mode offers now.
        tools: Vec<String>,
    },
    /// A checkpoint of the project's working tree was taken: before a turn's first change, at
    /// its end, or just before a restore (restoring it undoes the restore). The counts are of
    /// the changes since the project's previous checkpoint.
    CheckpointCreated {
        /// Its number (`GET /v1/sessions/{id}/checkpoints/{n}/diff`).
        n: u64,
        /// The turn it belongs to (none for a restore's).
        turn: Option<String>,
        /// `turn_start`, `turn_end` or `restore`.
        kind: hands_checkpoint::Kind,
        /// Paths changed.
        files_changed: usize,
        /// Lines added.
        additions: usize,
        /// Lines removed.
        deletions: usize,
        /// What it found but could not capture (a socket, a FIFO, an unreadable file), by name.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        uncaptured: Vec<hands_checkpoint::Uncaptured>,
    },
    /// The conversation was rewound to a checkpoint: the messages after it are gone (from the
    /// store too) and are no longer sent to the model.
    ConversationRestored {
        /// The checkpoint whose conversation it is now.
        checkpoint: u64,
        /// How many messages the conversation has now.
        messages: usize,
    },
    /// The turn is over.
    TurnEnded {
        /// The turn.
        turn_id: String,
        /// `completed`, `max_steps`, `aborted`, `error`.
        reason: String,
        /// The model's final text, when there is one.
        text: Option<String>,
    },
    /// Something failed (a provider error that ended the turn, a store failure).
    Error {
        /// The turn, when it happened in one.
        turn_id: Option<String>,
        /// What went wrong and what to do.
        message: String,
    },
}

impl EventKind {
    /// The `checkpoint_created` event of `checkpoint`.
    pub fn checkpoint_created(checkpoint: &hands_checkpoint::Checkpoint) -> Self {
        Self::CheckpointCreated {
            n: checkpoint.id,
            turn: checkpoint.turn.clone(),
            kind: checkpoint.kind,
            files_changed: checkpoint.changes.files,
            additions: checkpoint.changes.added,
            deletions: checkpoint.changes.removed,
            uncaptured: checkpoint.uncaptured.clone(),
        }
    }

    /// The `type` tag: the SSE event name.
    pub fn name(&self) -> &'static str {
        match self {
            Self::TurnStarted { .. } => "turn_started",
            Self::TextDelta { .. } => "text_delta",
            Self::ToolCallStarted { .. } => "tool_call_started",
            Self::ToolCallFinished { .. } => "tool_call_finished",
            Self::Question { .. } => "question",
            Self::QuestionAnswered { .. } => "question_answered",
            Self::SecretRequested { .. } => "secret_requested",
            Self::SecretAnswered { .. } => "secret_answered",
            Self::SecretDeclined { .. } => "secret_declined",
            Self::ApprovalRequested { .. } => "approval_requested",
            Self::ApprovalDecided { .. } => "approval_decided",
            Self::ProcessNotice { .. } => "process_notice",
            Self::TodosChanged { .. } => "todos_changed",
            Self::ModeChanged { .. } => "mode_changed",
            Self::ToolsChanged { .. } => "tools_changed",
            Self::CheckpointCreated { .. } => "checkpoint_created",
            Self::ConversationRestored { .. } => "conversation_restored",
            Self::TurnEnded { .. } => "turn_ended",
            Self::Error { .. } => "error",
        }
    }
}

/// `true`, the default of a flag that older events lack.
fn yes() -> bool {
    true
}
