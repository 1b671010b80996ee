//! A tool's output as MCP's `CallToolResult`, for a call answered directly and for a task's
//! result alike.

use rmcp::model::{CallToolResult, ContentBlock};

/// A tool's output as MCP's result, field by field: no trip through a JSON value and back (which
/// allocated the whole result twice and re-parsed it on every call).
pub(crate) fn to_call_tool_result(output: hands_core::ToolOutput) -> CallToolResult {
    use base64::Engine as _;
    use hands_core::Content;
    let content = output
        .content
        .into_iter()
        .map(|block| match block {
            Content::Text { text } => ContentBlock::text(text),
            Content::Image { data, mime_type } => ContentBlock::image(
                base64::engine::general_purpose::STANDARD.encode(data),
                mime_type,
            ),
        })
        .collect();
    let mut result = match output.is_error {
        true => CallToolResult::error(content),
        false => CallToolResult::success(content),
    };
    result.structured_content = output.structured;
    result
}
