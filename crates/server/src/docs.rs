//! The types the OpenAPI document describes. Sessions, messages and events are the host's own
//! types, and process lists core's (they derive their JSON Schema). A tool result is produced by
//! a custom serialiser in core, so it has a documentation twin here: the same JSON shape with a
//! derived schema; the test at the bottom serialises real values, reads the JSON back through the
//! twin and requires the identical JSON, so a field added, renamed or dropped on either side fails
//! it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

// Sessions, messages and events are the host's own types, which derive their schemas.
pub use hands_agent::event::{Event, EventKind};
pub use hands_agent::host::SessionInfo;
pub use hands_agent::model::{Block, Message, ResultPart, Role};
// The one process row, shared with list_processes' structured output.
pub use hands_core::process::{ProcessList, ProcessRow, ProcessStopped};

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
