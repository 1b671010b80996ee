//! The types the OpenAPI document describes. Sessions, messages and events are the host's own
//! types (they derive their JSON Schema). Tool results and process lists are produced by custom
//! serialisers in other crates, so they have documentation twins here: the same JSON shape with a
//! derived schema; the tests at the bottom serialise the real values, read the JSON back through
//! the twins and require the identical JSON, so a field added, renamed or dropped on either side
//! fails them.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

// Sessions, messages and events are the host's own types, which derive their schemas.
pub use hands_agent::event::{Event, EventKind};
pub use hands_agent::host::SessionInfo;
pub use hands_agent::model::{Block, Message, ResultPart, Role};

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
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// Uptime (running) or how long it ran, in milliseconds.
    pub duration_ms: u64,
    /// URL it printed, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Port it listens on, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<u16>,
    /// Output bytes not yet read.
    pub unread_bytes: u64,
    /// Log file with its whole output, relative to the project root.
    #[serde(default, skip_serializing_if = "Option::is_none")]
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
    fn tool_output_twin_matches() {
        same_shape::<CallToolResult>(&ToolOutput::text("ok"));
        same_shape::<CallToolResult>(
            &ToolOutput::error("no").with_structured(json!({"processes": []})),
        );
        same_shape::<CallToolResult>(&ToolOutput::image(vec![1, 2, 3], "image/png"));
    }
}
