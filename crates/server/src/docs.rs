//! Documentation twins of the types the host returns (sessions, messages, events, tool results,
//! processes): the same JSON shape, with a derived JSON Schema for the OpenAPI document. The host's
//! types carry no schema of their own; the tests at the bottom serialise the real types, read the
//! JSON back through these twins and require the identical JSON, so a field added, renamed or
//! dropped on either side fails them.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A session (`hands_agent::host::SessionInfo`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SessionInfo {
    /// Id.
    pub id: String,
    /// Project.
    pub project_id: String,
    /// Root folder.
    pub root: String,
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

/// Who said it (`hands_agent::model::Role`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// The user, and tool results.
    User,
    /// The model.
    Assistant,
}

/// One part of a message (`hands_agent::model::Block`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Block {
    /// Plain text.
    Text {
        /// The text.
        text: String,
    },
    /// An image the user attached.
    Image {
        /// `image/png`, `image/jpeg`, `image/gif`, `image/webp`.
        media_type: String,
        /// Base64 of the bytes.
        data: String,
    },
    /// The model asks for a tool call.
    ToolUse {
        /// The provider's id for the call.
        id: String,
        /// The tool's name.
        name: String,
        /// The arguments.
        input: Value,
    },
    /// The result of a tool call, sent back to the model.
    ToolResult {
        /// The id of the `tool_use` it answers.
        tool_use_id: String,
        /// Text and images.
        content: Vec<ResultPart>,
        /// The call failed.
        is_error: bool,
    },
}

/// Part of a tool result (`hands_agent::model::ResultPart`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ResultPart {
    /// Text.
    Text {
        /// The text.
        text: String,
    },
    /// An image.
    Image {
        /// `image/png`, …
        media_type: String,
        /// Base64 of the bytes.
        data: String,
    },
}

/// One message of the conversation (`hands_agent::model::Message`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Message {
    /// Who said it.
    pub role: Role,
    /// What was said.
    pub content: Vec<Block>,
}

/// One event of a session (`hands_agent::event::Event`): the `data:` of an SSE message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Event {
    /// Increasing per session, from 1; the SSE `id:`.
    pub id: u64,
    /// The session.
    pub session_id: String,
    /// Milliseconds since the Unix epoch.
    pub at_ms: i64,
    /// What happened; `type` is also the SSE `event:` name.
    #[serde(flatten)]
    pub kind: EventKind,
}

/// What happened (`hands_agent::event::EventKind`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
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
        /// Wall time of the call.
        duration_ms: u64,
        /// The result is an error.
        is_error: bool,
        /// The first line(s) of the result, at most 300 characters.
        summary: String,
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
    /// A call waits for the user's approval.
    ApprovalRequested {
        /// Grant or deny with this id.
        approval_id: String,
        /// The tool.
        tool: String,
        /// One line: the command, the path.
        summary: String,
    },
    /// The approval was decided.
    ApprovalDecided {
        /// The approval.
        approval_id: String,
        /// Granted.
        approved: bool,
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
        /// `build` or `plan`.
        mode: String,
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
    /// Something failed.
    Error {
        /// The turn, when it happened in one.
        turn_id: Option<String>,
        /// What went wrong and what to do.
        message: String,
    },
}

/// A tool's result in MCP's `CallToolResult` shape (`hands_core::ToolOutput`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CallToolResult {
    /// Text and image blocks, in order.
    pub content: Vec<Content>,
    /// Machine-readable result, for tools with a natural structure.
    #[serde(rename = "structuredContent", default, skip_serializing_if = "Option::is_none")]
    pub structured: Option<Value>,
    /// True when the call failed in a way the model can act on (the text says why).
    pub is_error: bool,
}

/// One block of a tool result (`hands_core::Content`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum Content {
    /// Text.
    Text {
        /// The text.
        text: String,
    },
    /// An image.
    Image {
        /// Base64 of the bytes.
        data: String,
        /// Its MIME type, e.g. `image/png`.
        #[serde(rename = "mimeType")]
        mime_type: String,
    },
}

/// The session's background processes (list_processes' structured result).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ProcessList {
    /// Oldest first.
    pub processes: Vec<ProcessRow>,
}

/// One background process.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ProcessRow {
    /// Id for process_output and stop.
    pub id: String,
    /// `daemon` or `long-run`.
    #[serde(rename = "type")]
    pub kind: String,
    /// Name given at spawn (or the command).
    pub name: String,
    /// The command line.
    pub command: String,
    /// Process id of its shell.
    pub pid: u32,
    /// `running`, `exited` or `stopped`.
    pub status: String,
    /// The status in words.
    pub detail: String,
    /// Exit code, when it exited by itself.
    pub exit_code: Option<i32>,
    /// Uptime (running) or how long it ran, in milliseconds.
    pub duration_ms: u64,
    /// URL it printed, if any.
    pub url: Option<String>,
    /// Port it listens on, if known.
    pub port: Option<u16>,
    /// Output bytes not yet read.
    pub unread_bytes: u64,
    /// Log file with its whole output, relative to the project root.
    pub log: Option<String>,
}

/// What stopping a background process did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ProcessStopped {
    /// The process.
    pub id: String,
    /// What happened, as the stop_process tool says it (signals sent, status, last lines).
    pub text: String,
    /// The tool's structured result, when it has one.
    pub structured: Option<Value>,
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use hands_agent::event::{Event as RealEvent, EventKind as RealKind};
    use hands_agent::host::SessionInfo as RealSession;
    use hands_agent::model::{Block as RealBlock, Message as RealMessage, ResultPart, Role as R};
    use hands_core::ToolOutput;
    use serde::de::DeserializeOwned;
    use serde_json::json;

    /// `real` serialised, read through `Twin` and serialised again, must be the same JSON.
    pub(crate) fn same_shape<Twin: DeserializeOwned + Serialize>(real: &impl Serialize) {
        let json = serde_json::to_value(real).unwrap();
        let twin: Twin = serde_json::from_value(json.clone())
            .unwrap_or_else(|e| panic!("{e}: the twin cannot read {json}"));
        assert_eq!(serde_json::to_value(&twin).unwrap(), json, "the twin loses or changes fields");
    }

    #[test]
    fn session_info_twin_matches() {
        same_shape::<SessionInfo>(&RealSession {
            id: "s".into(),
            project_id: "p".into(),
            root: "/r".into(),
            mode: "build".into(),
            title: Some("t".into()),
            running_turn: None,
            pending_questions: vec![json!({"question_id": "q"})],
            pending_approvals: vec![],
            created_at_ms: 1,
            updated_at_ms: 2,
        });
    }

    #[test]
    fn message_twin_matches() {
        same_shape::<Message>(&RealMessage {
            role: R::Assistant,
            content: vec![
                RealBlock::Text { text: "hi".into() },
                RealBlock::Image { media_type: "image/png".into(), data: "AA==".into() },
                RealBlock::ToolUse { id: "c".into(), name: "grep".into(), input: json!({"a": 1}) },
                RealBlock::ToolResult {
                    tool_use_id: "c".into(),
                    content: vec![
                        ResultPart::Text { text: "x".into() },
                        ResultPart::Image { media_type: "image/png".into(), data: "AA==".into() },
                    ],
                    is_error: false,
                },
            ],
        });
        same_shape::<Message>(&RealMessage::user("hello"));
    }

    #[test]
    fn every_event_twin_matches() {
        let t = || "t".to_owned();
        let kinds = vec![
            RealKind::TurnStarted { turn_id: t(), message: "m".into() },
            RealKind::TextDelta { turn_id: t(), text: "x".into() },
            RealKind::ToolCallStarted {
                turn_id: None,
                call_id: "c".into(),
                name: "bash".into(),
                args: json!({"command": "ls"}),
            },
            RealKind::ToolCallFinished {
                turn_id: Some(t()),
                call_id: "c".into(),
                name: "bash".into(),
                duration_ms: 3,
                is_error: true,
                summary: "s".into(),
            },
            RealKind::Question {
                question_id: "q".into(),
                question: "?".into(),
                options: vec!["a".into()],
            },
            RealKind::QuestionAnswered { question_id: "q".into() },
            RealKind::ApprovalRequested {
                approval_id: "a".into(),
                tool: "bash".into(),
                summary: "rm".into(),
            },
            RealKind::ApprovalDecided { approval_id: "a".into(), approved: false },
            RealKind::ProcessNotice { text: "done".into() },
            RealKind::TodosChanged { todos: json!([]) },
            RealKind::ModeChanged { mode: "plan".into() },
            RealKind::TurnEnded { turn_id: t(), reason: "completed".into(), text: None },
            RealKind::Error { turn_id: None, message: "boom".into() },
        ];
        for kind in kinds {
            same_shape::<Event>(&RealEvent { id: 7, session_id: "s".into(), at_ms: 9, kind });
        }
    }

    #[test]
    fn tool_output_twin_matches() {
        same_shape::<CallToolResult>(&ToolOutput::text("ok"));
        same_shape::<CallToolResult>(
            &ToolOutput::error("no").with_structured(json!({"processes": []})),
        );
        same_shape::<CallToolResult>(&ToolOutput::image(vec![1, 2, 3], "image/png"));
    }
}
