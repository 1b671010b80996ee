//! A tool's result in MCP's shape: text and image blocks, optional structured JSON, an error flag.

use serde::Serialize;
use serde_json::Value;

use crate::Notice;

/// One block of a result. Serialises as MCP content (`{"type":"image","data":<base64>,
/// "mimeType":…}`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum Content {
    /// Text for the model.
    Text {
        /// The text.
        text: String,
    },
    /// An image (raw bytes here; base64 when serialised).
    Image {
        /// The image's bytes.
        #[serde(serialize_with = "base64_bytes")]
        data: Vec<u8>,
        /// Its MIME type, e.g. `image/png`.
        #[serde(rename = "mimeType")]
        mime_type: String,
    },
}

fn base64_bytes<S: serde::Serializer>(data: &[u8], serializer: S) -> Result<S::Ok, S::Error> {
    use base64::Engine as _;
    serializer.serialize_str(&base64::engine::general_purpose::STANDARD.encode(data))
}

/// What a tool call produced. Serialises as MCP's `CallToolResult` (`content`,
/// `structuredContent`, `isError`).
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolOutput {
    /// Text and image blocks, in order.
    pub content: Vec<Content>,
    /// Machine-readable result, for tools with a natural structure.
    #[serde(rename = "structuredContent", skip_serializing_if = "Option::is_none")]
    pub structured: Option<Value>,
    /// True when the call failed in a way the model can act on.
    pub is_error: bool,
    /// News that rides on this result (a background process finished, …): data, not part of
    /// MCP's shape; front ends render it where a model reads it ([`ToolOutput::notices_as_text`]).
    #[serde(skip)]
    pub notices: Vec<Notice>,
    /// How long the call waited for the user's approval (set by the approval step): a front end
    /// that times the call subtracts it, so that a call's duration is its running time, not the
    /// time a person took to decide.
    #[serde(skip)]
    pub approval_wait: std::time::Duration,
}

impl ToolOutput {
    /// A successful text result.
    pub fn text(text: impl Into<String>) -> Self {
        Self { content: vec![Content::Text { text: text.into() }], ..Self::default() }
    }

    /// An error result the model can act on.
    pub fn error(text: impl Into<String>) -> Self {
        Self { is_error: true, ..Self::text(text) }
    }

    /// A successful image result.
    pub fn image(data: Vec<u8>, mime_type: impl Into<String>) -> Self {
        Self {
            content: vec![Content::Image { data, mime_type: mime_type.into() }],
            ..Self::default()
        }
    }

    /// Attach structured JSON.
    #[must_use]
    pub fn with_structured(mut self, value: Value) -> Self {
        self.structured = Some(value);
        self
    }

    /// Append a text block.
    #[must_use]
    pub fn with_text(mut self, text: impl Into<String>) -> Self {
        self.content.push(Content::Text { text: text.into() });
        self
    }

    /// The notices moved into text blocks (`[notice] …`) after the result's own, for a reader
    /// that sees only text: a model over MCP, `hands call`'s output. A structured result (an
    /// object) gets them too, as `notices`, the same lines: clients that show the model only the
    /// structured content when there is one (Claude Code, Codex) would drop them otherwise. The
    /// key is not in the output schemas, which leave other properties open; no tool's own result
    /// has it.
    #[must_use]
    pub fn notices_as_text(mut self) -> Self {
        let notices = std::mem::take(&mut self.notices);
        if notices.is_empty() {
            return self;
        }
        let lines: Vec<String> = notices.iter().map(Notice::render).collect();
        if let Some(serde_json::Value::Object(map)) = &mut self.structured {
            map.insert("notices".to_owned(), serde_json::json!(lines));
        }
        for text in lines {
            self.content.push(Content::Text { text });
        }
        self
    }

    /// All text blocks joined by newlines.
    pub fn joined_text(&self) -> String {
        let texts: Vec<&str> = self
            .content
            .iter()
            .filter_map(|c| match c {
                Content::Text { text } => Some(text.as_str()),
                Content::Image { .. } => None,
            })
            .collect();
        texts.join("\n")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serialises_as_mcp_call_tool_result() {
        let out = ToolOutput::image(vec![1, 2, 3], "image/png")
            .with_text("hi")
            .with_structured(serde_json::json!({"n": 1}));
        let value = serde_json::to_value(&out).unwrap();
        assert_eq!(
            value,
            serde_json::json!({
                "content": [
                    {"type": "image", "data": "AQID", "mimeType": "image/png"},
                    {"type": "text", "text": "hi"}
                ],
                "structuredContent": {"n": 1},
                "isError": false
            })
        );
    }

    #[test]
    fn notices_are_data_until_rendered_as_text() {
        let mut out = ToolOutput::text("ok");
        out.notices.push(Notice::new(crate::NoticeKind::ProcessExited, "p1 exited"));
        let value = serde_json::to_value(&out).unwrap();
        assert_eq!(value["content"].as_array().map(Vec::len), Some(1), "{value}");
        assert!(value.get("notices").is_none(), "{value}");
        let rendered = out.notices_as_text();
        assert!(rendered.notices.is_empty());
        assert_eq!(rendered.joined_text(), "ok\n[notice] p1 exited");
        assert_eq!(rendered.structured, None, "no structured result is made up");
    }

    #[test]
    fn a_structured_result_carries_its_notices_too() {
        let mut out = ToolOutput::text("ok").with_structured(serde_json::json!({"path": "a.ts"}));
        out.notices.push(Notice::new(crate::NoticeKind::Diagnostics, "1 new error"));
        let rendered = out.notices_as_text();
        assert_eq!(
            rendered.structured,
            Some(serde_json::json!({"path": "a.ts", "notices": ["[notice] 1 new error"]}))
        );
        assert_eq!(rendered.joined_text(), "ok\n[notice] 1 new error");
        let quiet = ToolOutput::text("ok").with_structured(serde_json::json!({"path": "a.ts"}));
        assert_eq!(quiet.notices_as_text().structured, Some(serde_json::json!({"path": "a.ts"})));
    }
}
